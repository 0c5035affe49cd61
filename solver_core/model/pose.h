// Poses: one Transform per skeleton joint, in the skeleton's joint order.
//
// A local pose holds each joint relative to its parent; a model-space pose
// holds each joint relative to the skeleton's root space. Both are plain
// vectors so jobs can take them as spans; the names only document intent.
#ifndef POSEWIRE_SOLVER_CORE_MODEL_POSE_H_
#define POSEWIRE_SOLVER_CORE_MODEL_POSE_H_

#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"

namespace posewire {

using LocalPose = std::vector<Transform>;
using ModelPose = std::vector<Transform>;

// How far a rotation's norm may stray from 1 before it is rejected. Loose
// enough for float data that went through text or half precision, tight
// enough that a non-normalised input cannot silently skew a solve.
inline constexpr float kUnitQuaternionTolerance = 1e-3f;

// A copy of the skeleton's rest pose.
LocalPose RestPose(const Skeleton& skeleton);

// Checks one transform: every component finite, rotation of unit norm within
// kUnitQuaternionTolerance. `field` and the joint name appear in the error,
// e.g. "pose[3] 'LeftKnee': rotation norm 1.5 is not 1 (tolerance 0.001)".
absl::Status ValidateTransform(const Transform& transform,
                               absl::string_view field, int joint,
                               absl::string_view joint_name);

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

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_MODEL_POSE_H_
