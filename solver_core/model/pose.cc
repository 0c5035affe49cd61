#include "solver_core/model/pose.h"

#include "absl/strings/str_cat.h"
#include "solver_core/model/internal/simd_lanes_avx2.h"

namespace posewire {

LocalPose RestPose(const Skeleton& skeleton) {
  return LocalPose(skeleton.rest_pose().begin(), skeleton.rest_pose().end());
}

absl::Status ValidatePose(const Skeleton& skeleton,
                          absl::Span<const Transform> pose,
                          absl::string_view field) {
  if (static_cast<int>(pose.size()) != skeleton.num_joints()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", pose.size(), " transforms for a skeleton of ",
                     skeleton.num_joints(), " joints"));
  }
  for (int j = 0; j < skeleton.num_joints(); ++j) {
    absl::Status status =
        ValidateTransform(pose[j], field, j, skeleton.joint_name(j));
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

#if POSEWIRE_AVX2_KERNELS
namespace {
namespace L8 = lanes_avx2;

// Two consecutive 48-byte transforms are exactly three eight-lane rows,
//   a = (t0 q0), b = (s0 t1), c = (q1 s1)
// (low half first): their rotations, q1 in the low half and q0 in the high.
POSEWIRE_AVX2_INLINE L8::F8 Rotations(L8::F8 a, L8::F8 c) {
  return L8::Blend<0xF0>(c, a);
}

// The squared-norm test of TransformScreen on eight norms.
POSEWIRE_AVX2_INLINE L8::M8 OutOfBounds(L8::F8 n2) {
  return L8::NotGe(n2, L8::Splat(kScreenMinSquaredNorm)) |
         L8::NotLe(n2, L8::Splat(kScreenMaxSquaredNorm));
}
}  // namespace

// PoseLooksValid on the three-row layout: the same squared rotation norms
// (FourDots' order) against the same bounds, and every translation and scale
// component summed (a NaN or infinity leaves the sum non-finite). Like it, a
// screen: a pose it rejects goes to ValidateTransform, which decides, so the
// status is the same either way.
POSEWIRE_AVX2_FUNCTION bool PoseLooksValidAvx2(
    absl::Span<const Transform> pose) {
  const float* p = reinterpret_cast<const float*>(pose.data());
  const size_t n = pose.size();
  // Rows a and c summed together: their rotation halves come along, which
  // is harmless (a rotation that passes the norm test is finite and small).
  L8::F8 sum_ac = L8::Zero();
  L8::F8 sum_b = L8::Zero();
  L8::M8 bad = L8::NoLanes();
  size_t i = 0;
  for (; i + 8 <= n; i += 8, p += 96) {
    // Eight transforms: the sums of the loop below, and the eight squared
    // norms in one register (FourDots' transpose, its final add across the
    // two pairs of rotation registers) for one pair of comparisons.
    L8::F8 m[4];
    for (int k = 0; k < 4; ++k) {
      const float* t = p + 24 * k;
      const L8::F8 a = L8::LoadU(t);
      const L8::F8 b = L8::LoadU(t + 8);
      const L8::F8 c = L8::LoadU(t + 16);
      sum_ac = sum_ac + (a + c);
      sum_b = sum_b + b;
      const L8::F8 q = Rotations(a, c);
      m[k] = q * q;
    }
    const L8::F8 s01 = L8::UnpackLo(m[0], m[1]) + L8::UnpackHi(m[0], m[1]);
    const L8::F8 s23 = L8::UnpackLo(m[2], m[3]) + L8::UnpackHi(m[2], m[3]);
    const L8::F8 n2 =
        L8::Shuffle<0, 1, 0, 1>(s01, s23) + L8::Shuffle<2, 3, 2, 3>(s01, s23);
    bad = bad | OutOfBounds(n2);
  }
  for (; i + 4 <= n; i += 4, p += 48) {
    const L8::F8 a0 = L8::LoadU(p);
    const L8::F8 b0 = L8::LoadU(p + 8);
    const L8::F8 c0 = L8::LoadU(p + 16);
    const L8::F8 a1 = L8::LoadU(p + 24);
    const L8::F8 b1 = L8::LoadU(p + 32);
    const L8::F8 c1 = L8::LoadU(p + 40);
    sum_ac = sum_ac + ((a0 + c0) + (a1 + c1));
    sum_b = sum_b + (b0 + b1);
    // Rotations (q1 | q0) and (q3 | q2); products transposed and added as
    // in FourDots: lanes 0, 1 of each half hold the two norms of that half.
    const L8::F8 q01 = Rotations(a0, c0);
    const L8::F8 q23 = Rotations(a1, c1);
    const L8::F8 m01 = q01 * q01;
    const L8::F8 m23 = q23 * q23;
    const L8::F8 s = L8::UnpackLo(m01, m23) + L8::UnpackHi(m01, m23);
    bad = bad | OutOfBounds(s + L8::Shuffle<2, 3, 0, 1>(s));
  }
  pose_internal::TransformScreen tail;
  for (; i < n; ++i, p += 12) tail.Add(p);
  // Padding lanes (3 and 7) summed whatever the padding held: cleared.
  const L8::F8 sums = L8::KeepXyz(sum_ac + sum_b);
  return L8::Bits((sums - sums) == L8::Zero()) == 0xFF && L8::Bits(bad) == 0 &&
         tail.Passed();
}
#endif  // POSEWIRE_AVX2_KERNELS

namespace pose_internal {

absl::Status PartialOverlapError(absl::string_view output_field,
                                 absl::string_view input_field) {
  return absl::InvalidArgumentError(absl::StrCat(
      output_field, ": overlaps ", input_field,
      " without being the same span (pass the same span to work in place, or "
      "separate memory)"));
}

}  // namespace pose_internal

}  // namespace posewire
