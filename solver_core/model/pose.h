// Poses: one Transform per skeleton joint, in the skeleton's joint order.
//
// A local pose holds each joint relative to its parent; a model-space pose
// holds each joint relative to the skeleton's root space. Both are plain
// vectors so jobs can take them as spans; the names only document intent.
//
// Also the input checks every job shares: ValidatePose (exact, with the
// message), and CheckPose and the screens in front of it, which decide the
// common valid case cheaply.
#ifndef POSEWIRE_SOLVER_CORE_MODEL_POSE_H_
#define POSEWIRE_SOLVER_CORE_MODEL_POSE_H_

#include <cstddef>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "solver_core/model/internal/simd_lanes.h"
#include "solver_core/model/quaternion_math.h"
#include "solver_core/model/simd_level.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"

namespace posewire {

// The SIMD kernels read a Transform as three 16-byte rows (transform.h).
inline constexpr bool kSimdTransformLayout = transform_internal::kRowLayout;

using LocalPose = std::vector<Transform>;
using ModelPose = std::vector<Transform>;

// A copy of the skeleton's rest pose.
LocalPose RestPose(const Skeleton& skeleton);

// Checks a pose against a skeleton: one transform per joint, each valid as
// ValidateTransform defines.
absl::Status ValidatePose(const Skeleton& skeleton,
                          absl::Span<const Transform> pose,
                          absl::string_view field);

// True when the two spans share memory.
inline bool Overlap(absl::Span<const Transform> a,
                    absl::Span<const Transform> b) {
  const std::less<const Transform*> before;
  return !a.empty() && !b.empty() && before(a.data(), b.data() + b.size()) &&
         before(b.data(), a.data() + a.size());
}

// True when `output` shares memory with `input` without starting where it
// starts. Jobs solve in place when the output is exactly an input, and
// otherwise need the two apart: with a shifted overlap a joint's result
// would overwrite another joint's input before it is read, a silently wrong
// pose. (Sizes are checked separately, against the skeleton.)
inline bool OverlapsWithoutAliasing(absl::Span<const Transform> output,
                                    absl::Span<const Transform> input) {
  return output.data() != input.data() && Overlap(output, input);
}

// OkStatus, or INVALID_ARGUMENT naming both fields when
// OverlapsWithoutAliasing, e.g. "blending.output: overlaps
// blending.layers[1].transform without being the same span (pass the same span
// to work in place, or separate memory)".
namespace pose_internal {
// CheckNoPartialOverlap's error, out of line (only bad input reaches it).
absl::Status PartialOverlapError(absl::string_view output_field,
                                 absl::string_view input_field);
}  // namespace pose_internal

inline absl::Status CheckNoPartialOverlap(absl::Span<const Transform> output,
                                          absl::string_view output_field,
                                          absl::Span<const Transform> input,
                                          absl::string_view input_field) {
  if (!OverlapsWithoutAliasing(output, input)) return absl::OkStatus();
  return pose_internal::PartialOverlapError(output_field, input_field);
}

// Squared-norm bounds strictly inside ValidateTransform's unit-rotation
// tolerance, so a rotation the screen below accepts is one ValidateTransform
// accepts too, whatever the rounding of its square root.
inline constexpr float kScreenMinSquaredNorm =
    (1.0f - kUnitQuaternionTolerance) * (1.0f - kUnitQuaternionTolerance) *
    1.0001f;
inline constexpr float kScreenMaxSquaredNorm =
    (1.0f + kUnitQuaternionTolerance) * (1.0f + kUnitQuaternionTolerance) *
    0.9999f;

// Cheap screen for ValidateTransform's conditions (finite components, unit
// rotation within kUnitQuaternionTolerance): x - x is NaN exactly when x is
// NaN or infinite. Callers run ValidateTransform when it fails, to decide
// near the tolerance's edge and to produce the message.
inline bool TransformLooksValid(const Transform& t) {
#if defined(__SSE2__)
  if constexpr (kSimdTransformLayout) {
    const float* p = reinterpret_cast<const float*>(&t);
    const lanes::F4 tr = lanes::LoadXyz(p);
    const lanes::F4 q = lanes::LoadU(p + 4);
    const lanes::F4 sc = lanes::LoadXyz(p + 8);
    const lanes::F4 z = ((tr - tr) + (q - q)) + (sc - sc);
    const float n2 = lanes::First(lanes::Dot4(q, q));
    return lanes::Bits(z == lanes::Zero()) == 0xF &&
           n2 >= kScreenMinSquaredNorm && n2 <= kScreenMaxSquaredNorm;
  }
#endif
  const Eigen::Vector4f& q = t.rotation.coeffs();
  const float finite = (t.translation - t.translation).sum() + (q - q).sum() +
                       (t.scale - t.scale).sum();
  const float n2 = Dot4(q, q);
  return finite == 0.0f && n2 >= kScreenMinSquaredNorm &&
         n2 <= kScreenMaxSquaredNorm;
}

#if defined(__SSE2__)
namespace pose_internal {
// The screen PoseLooksValid and TransformsLookValid run, one transform (or
// four rotation norms) at a time. Translations and scales are summed: a NaN
// or infinity anywhere leaves the sum non-finite (a sum that overflows only
// sends the pose to the detailed check, which decides). Only lanes x, y, z
// of the sum are read, so the padding lanes need no masking on the way.
// Squared rotation norms are compared with "not within bounds", which a NaN
// also satisfies.
class TransformScreen {
 public:
  // Adds the translation and scale rows of the transform at `p`.
  void AddTranslationAndScale(const float* p) {
    sum_ = sum_ + (lanes::LoadU(p) + lanes::LoadU(p + 8));
  }
  // Checks squared rotation norms, one per lane.
  void AddSquaredNorms(lanes::F4 n2) {
    bad_ = bad_ | (lanes::NotGe(n2, lanes::Splat(kScreenMinSquaredNorm)) |
                   lanes::NotLe(n2, lanes::Splat(kScreenMaxSquaredNorm)));
  }
  // The whole transform at `p`.
  void Add(const float* p) {
    AddTranslationAndScale(p);
    const lanes::F4 q = lanes::LoadU(p + 4);
    AddSquaredNorms(lanes::Dot4(q, q));
  }
  bool Passed() const {
    // The padding lane is cleared here (it summed whatever the padding
    // held; tools that track uninitialised bytes then see defined lanes).
    const lanes::F4 sum = lanes::KeepXyz(sum_);
    return lanes::Bits((sum - sum) == lanes::Zero()) == 0xF &&
           lanes::Bits(bad_) == 0;
  }

 private:
  lanes::F4 sum_ = lanes::Zero();
  lanes::M4 bad_ = lanes::NoLanes();
};

// The screen over `n` transforms, `row(i)` the i-th one's floats: rotation
// norms four at a time (lanes::FourDots), the last few one at a time.
template <typename Row>
inline bool ScreenInFours(size_t n, const Row& row) {
  TransformScreen screen;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    lanes::F4 q[4];
    for (size_t k = 0; k < 4; ++k) {
      const float* t = row(i + k);
      screen.AddTranslationAndScale(t);
      q[k] = lanes::LoadU(t + 4);
    }
    screen.AddSquaredNorms(lanes::FourDots(q, q));
  }
  for (; i < n; ++i) screen.Add(row(i));
  return screen.Passed();
}
}  // namespace pose_internal
#endif

#if POSEWIRE_AVX2_KERNELS
// PoseLooksValid with AVX2, eight transforms at a time (pose.cc).
// Call only when ActiveSimdLevel() is kAvx2.
bool PoseLooksValidAvx2(absl::Span<const Transform> pose);
#endif

// TransformLooksValid for a whole pose, without a branch per transform
// (pose_internal::TransformScreen); squared rotation norms are computed
// four at a time (lanes::FourDots), or eight at a time with AVX2.
inline bool PoseLooksValid(absl::Span<const Transform> pose) {
#if defined(__SSE2__)
  if constexpr (kSimdTransformLayout) {
#if POSEWIRE_AVX2_KERNELS
    if (pose.size() >= 16 && ActiveSimdLevel() == SimdLevel::kAvx2) {
      return PoseLooksValidAvx2(pose);
    }
#endif
    const float* p = reinterpret_cast<const float*>(pose.data());
    return pose_internal::ScreenInFours(pose.size(),
                                        [p](size_t i) { return p + 12 * i; });
  }
#endif
  for (const Transform& t : pose) {
    if (!TransformLooksValid(t)) return false;
  }
  return true;
}

// ValidatePose with the fast screen above in front: the same checks and
// messages, at a fraction of the cost when the pose is valid (the common
// case, checked every frame).
inline absl::Status CheckPose(const Skeleton& skeleton,
                              absl::Span<const Transform> pose,
                              absl::string_view field) {
  if (static_cast<int>(pose.size()) != skeleton.num_joints()) {
    return ValidatePose(skeleton, pose, field);
  }
  if (PoseLooksValid(pose)) return absl::OkStatus();
  for (int j = 0; j < skeleton.num_joints(); ++j) {
    if (TransformLooksValid(pose[j])) continue;
    absl::Status s =
        ValidateTransform(pose[j], field, j, skeleton.joint_name(j));
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

// CheckPose for a job's input pose, which its caller may already know to be
// valid (every transform finite with a unit rotation): a service screens a
// frame's pose once and each solver's changes to it after the solver, then
// tells the next job. With `validated` only the size is checked.
inline absl::Status CheckInputPose(const Skeleton& skeleton,
                                   absl::Span<const Transform> pose,
                                   absl::string_view field, bool validated) {
  if (validated && static_cast<int>(pose.size()) == skeleton.num_joints()) {
    return absl::OkStatus();
  }
  return CheckPose(skeleton, pose, field);
}

// TransformLooksValid for several transforms at once (the few a solver reads,
// wherever they are), with one branch: PoseLooksValid's test on a list of
// pointers.
template <size_t N>
inline bool TransformsLookValid(const Transform* const (&t)[N]) {
#if defined(__SSE2__)
  if constexpr (kSimdTransformLayout) {
    pose_internal::TransformScreen screen;
    for (size_t i = 0; i < N; ++i) {
      screen.Add(reinterpret_cast<const float*>(t[i]));
    }
    return screen.Passed();
  }
#endif
  for (const Transform* x : t) {
    if (!TransformLooksValid(*x)) return false;
  }
  return true;
}

// PoseLooksValid on `joints` of `pose` only (the few a solver wrote), with
// one branch. Indices must be within the pose.
inline bool TransformsLookValid(absl::Span<const Transform> pose,
                                absl::Span<const int> joints) {
#if defined(__SSE2__)
  if constexpr (kSimdTransformLayout) {
    return pose_internal::ScreenInFours(joints.size(), [&](size_t i) {
      return reinterpret_cast<const float*>(&pose[joints[i]]);
    });
  }
#endif
  for (const int j : joints) {
    if (!TransformLooksValid(pose[j])) return false;
  }
  return true;
}

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_MODEL_POSE_H_
