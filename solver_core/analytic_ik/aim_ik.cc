#include "solver_core/analytic_ik/aim_ik.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "solver_core/analytic_ik/clamp_direction.h"
#include "solver_core/model/internal/simd_lanes.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/quaternion_math.h"

namespace posewire {
namespace {

absl::Status CheckVector(const Eigen::Vector3f& v, absl::string_view field) {
  if (v.allFinite()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("aim_ik.", field, ": NaN or infinite component"));
}

absl::Status CheckScalar(float x, absl::string_view field) {
  if (std::isfinite(x)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("aim_ik.", field, ": ", x, " is not finite"));
}

absl::Status Diagnose(const AimIkJob& job) {
  if (job.skeleton == nullptr) {
    return absl::InvalidArgumentError("aim_ik.skeleton: not set");
  }
  const Skeleton& skel = *job.skeleton;
  const size_t n = static_cast<size_t>(skel.num_joints());
  if (job.input.size() != n || job.output.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "aim_ik: input and output need one transform per joint (", n, "); got ",
        job.input.size(), " and ", job.output.size()));
  }
  if (absl::Status s = CheckNoPartialOverlap(job.output, "aim_ik.output",
                                             job.input, "aim_ik.input");
      !s.ok()) {
    return s;
  }
  if (job.joint < 0 || job.joint >= skel.num_joints()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "aim_ik.joint: joint ", job.joint, " is out of range [0, ", n, ")"));
  }
  if (absl::Status s = CheckVector(job.target, "target"); !s.ok()) return s;
  if (absl::Status s = CheckVector(job.pole_vector, "pole_vector"); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckVector(job.forward, "forward"); !s.ok()) return s;
  if (!(job.forward.squaredNorm() > 1e-12f)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "aim_ik.forward: zero length; give the axis of joint ", job.joint, " '",
        skel.joint_name(job.joint), "' to aim, in its own space"));
  }
  if (absl::Status s = CheckVector(job.up, "up"); !s.ok()) return s;
  if (absl::Status s = CheckVector(job.offset, "offset"); !s.ok()) return s;
  if (absl::Status s = CheckScalar(job.twist_angle, "twist_angle"); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckScalar(job.weight, "weight"); !s.ok()) return s;
  if (absl::Status s = CheckScalar(job.clamp_weight, "clamp_weight"); !s.ok()) {
    return s;
  }
  if (job.clamp_smoothing < 0 ||
      job.clamp_smoothing > kMaxClampSmoothingIterations) {
    return absl::InvalidArgumentError(
        absl::StrCat("aim_ik.clamp_smoothing: ", job.clamp_smoothing,
                     " is not in [0, ", kMaxClampSmoothingIterations, "]"));
  }
  if (!(job.reach_tolerance >= 0.0f) || !std::isfinite(job.reach_tolerance)) {
    return absl::InvalidArgumentError(
        absl::StrCat("aim_ik.reach_tolerance: ", job.reach_tolerance,
                     " is not finite and >= 0"));
  }
  if (absl::Status s = ValidateParentModel(skel, job.parent_model, job.joint,
                                           "aim_ik.parent_model");
      !s.ok()) {
    return s;
  }
  return ValidateTransform(job.input[job.joint], "aim_ik.input", job.joint,
                           skel.joint_name(job.joint));
}

// True when every vector and scalar parameter is finite.
inline bool ParametersLookFinite(const AimIkJob& job) {
#if defined(__SSE2__)
  // x - x is 0 for finite x and NaN otherwise; the sums keep any NaN. Four
  // lanes at a time.
  using lanes::F4;
  auto nan_if_not_finite = [](F4 v) { return v - v; };
  const F4 vectors = (nan_if_not_finite(lanes::LoadVector3(job.target)) +
                      nan_if_not_finite(lanes::LoadVector3(job.pole_vector))) +
                     (nan_if_not_finite(lanes::LoadVector3(job.forward)) +
                      nan_if_not_finite(lanes::LoadVector3(job.up)));
  const F4 finite =
      (vectors + nan_if_not_finite(lanes::LoadVector3(job.offset))) +
      nan_if_not_finite(lanes::SetLanes(job.twist_angle, job.weight,
                                        job.clamp_weight, job.reach_tolerance));
  return lanes::Bits(finite == lanes::Zero()) == 0xF;
#else
  const float finite =
      (job.target - job.target).sum() +
      (job.pole_vector - job.pole_vector).sum() +
      (job.forward - job.forward).sum() + (job.up - job.up).sum() +
      (job.offset - job.offset).sum() + (job.twist_angle - job.twist_angle) +
      (job.weight - job.weight) + (job.clamp_weight - job.clamp_weight) +
      (job.reach_tolerance - job.reach_tolerance);
  return finite == 0.0f;
#endif
}

// Quick screen: Diagnose's conditions without building statuses, never
// laxer than it. Inline: Run inlines it and shares its loads with the solve.
inline bool LooksValid(const AimIkJob& job) {
  if (job.skeleton == nullptr) return false;
  const Skeleton& skel = *job.skeleton;
  const size_t n = static_cast<size_t>(skel.num_joints());
  if (job.input.size() != n || job.output.size() != n ||
      static_cast<size_t>(job.joint) >= n) {
    return false;
  }
  if (OverlapsWithoutAliasing(job.output, job.input)) return false;
  if (!ParametersLookFinite(job) || !(job.forward.squaredNorm() > 1e-12f) ||
      job.clamp_smoothing < 0 ||
      job.clamp_smoothing > kMaxClampSmoothingIterations ||
      !(job.reach_tolerance >= 0.0f)) {
    return false;
  }
  return TransformsLookValid({&job.parent_model, job.input.data() + job.joint});
}

}  // namespace

absl::Status AimIkJob::Validate() const {
  if (LooksValid(*this)) return absl::OkStatus();
  return Diagnose(*this);
}

absl::Status AimIkJob::Run() const {
  // The screen inlined here (not Validate()): the solve reuses its loads.
  if (!LooksValid(*this)) {
    if (absl::Status s = Diagnose(*this); !s.ok()) return s;
  }

  const Transform& joint_tf = input.data()[joint];
  const Eigen::Quaternionf joint_local = joint_tf.rotation;
  const Transform joint_model = Combine(parent_model, joint_tf);
  if (output.data() != input.data()) {
    std::copy(input.begin(), input.end(), output.begin());
  }

  // Work in the joint's rotation frame (model-space vectors relative to the
  // joint, rotated by the inverse of its model rotation): the local
  // correction is then a plain rotation of joint-space vectors, after scale.
  const Eigen::Quaternionf inv = joint_model.rotation.conjugate();
  const Vec3 scale(joint_model.scale);
  const Vec3 to_target =
      Rotate(inv, Vec3(target) - Vec3(joint_model.translation));
  const Vec3 fwd = scale.cwiseProduct(Vec3(forward));
  const Vec3 off = scale.cwiseProduct(Vec3(offset));
  const float fwd_len = fwd.norm();
  // Unit forward axis (zero when a zero scale collapsed it).
  const Vec3 f = fwd_len > 0.0f ? fwd * (1.0f / fwd_len) : Vec3::Zero();

  // Reports the distance from the target to the aim ray once the joint is
  // corrected by c.
  AimIkResult res;
  auto finish = [&](const Eigen::Quaternionf& c) {
    if (result == nullptr) return absl::OkStatus();  // nobody asks
    const Vec3 dir = Rotate(c, f);
    const Vec3 rel = to_target - Rotate(c, off);
    const float along = std::max(0.0f, rel.dot(dir));
    res.error = (rel - along * dir).norm();
    res.reached = res.error <= reach_tolerance * to_target.norm();
    *result = res;
    return absl::OkStatus();
  };

  const float w = std::clamp(weight, 0.0f, 1.0f);
  if (w == 0.0f || !(fwd_len > 0.0f)) {
    return finish(Eigen::Quaternionf::Identity());
  }

  Vec3 aim = to_target;
  if (clamp_weight > 0.0f) {
    const ClampedDirection clamped = ClampDirection(
        to_target.ToEigen(), f.ToEigen(), clamp_weight, clamp_smoothing);
    aim = Vec3(clamped.direction);
    res.clamped = clamped.changed;
  }

  // The forward direction that makes the ray from the offset pass through
  // the aim point: from the joint to the point of the offset ray at the aim
  // point's distance (ozz's ComputeOffsettedForward). Rotations about the
  // joint preserve that distance, so turning this point onto the aim point
  // turns the offset ray through it.
  const float r2 = aim.squaredNorm();
  const float along = f.dot(off);
  const float across2 = std::max(0.0f, off.squaredNorm() - along * along);
  if (!(r2 > 0.0f) || across2 > r2) {
    // Target on the joint, or closer to its axis line than the offset ray
    // ever passes: no rotation aims the ray at it.
    return finish(Eigen::Quaternionf::Identity());
  }
  // RotationBetweenFrames needs only the direction of the aimed point. With
  // no offset (the usual case: along and across2 are 0) that is f, ready
  // long before the point itself (a predictable branch).
  const Vec3 aimed_dir = along == 0.0f && across2 == 0.0f
                             ? f
                             : off + f * (std::sqrt(r2 - across2) - along);
  // Swing the aimed point onto the aim point and roll about the aim line so
  // that up leans toward the pole, in one frame-to-frame rotation.
  const Vec3 up_s = scale.cwiseProduct(Vec3(up));
  Eigen::Quaternionf correction = RotationBetweenFrames(
      aimed_dir, up_s, aim, Rotate(inv, Vec3(pole_vector)));
  if (twist_angle != 0.0f) {
    const Eigen::Vector3f aim_hat = (aim * (1.0f / std::sqrt(r2))).ToEigen();
    correction = QuaternionFromAngleAxis(twist_angle, aim_hat) * correction;
  }
  if (w < 1.0f) {
    correction = Slerp(Eigen::Quaternionf::Identity(), correction, w);
  }
  output.data()[joint].rotation = joint_local * correction;
  res.iterations = 1;
  return finish(correction);
}

}  // namespace posewire
