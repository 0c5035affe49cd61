#include "solver_core/pose_ops/additive_job.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/quaternion_math.h"
#include "solver_core/pose_ops/sampling_job.h"

namespace posewire {
namespace {

// The part of a delta applied at |weight| = aw in (0, 1]: rotation d.r^aw
// and scale factor lerp(1, d.s, aw). At aw = 1 the delta itself, unrounded.
inline Eigen::Quaternionf PartialRotation(const Eigen::Quaternionf& d,
                                          float aw) {
  if (aw == 1.0f) return d;
  return NlerpShortest(Eigen::Quaternionf::Identity(), d, aw);
}

inline Eigen::Vector3f PartialScale(const Eigen::Vector3f& d, float aw) {
  if (aw == 1.0f) return d;
  return Eigen::Vector3f::Ones() + (d - Eigen::Vector3f::Ones()) * aw;
}

// Effective weight at joint j: weight times the joint weight clamped to
// [0, 1].
inline float JointWeight(float weight, absl::Span<const float> joint_weights,
                         int j) {
  if (joint_weights.empty()) return weight;
  return weight * std::clamp(joint_weights[j], 0.0f, 1.0f);
}

}  // namespace

absl::Status MakeAdditiveJob::Validate() const {
  if (skeleton == nullptr) {
    return absl::InvalidArgumentError("make_additive.skeleton: not set");
  }
  const int n = skeleton->num_joints();
  if (static_cast<int>(delta.size()) != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("make_additive.delta: ", delta.size(),
                     " transforms for a skeleton of ", n, " joints"));
  }
  if (absl::Status s = CheckPose(*skeleton, base, "make_additive.base");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckPose(*skeleton, additive, "make_additive.additive");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckNoPartialOverlap(delta, "make_additive.delta", base,
                                             "make_additive.base");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckNoPartialOverlap(
          delta, "make_additive.delta", additive, "make_additive.additive");
      !s.ok()) {
    return s;
  }
  for (int j = 0; j < n; ++j) {
    if (base[j].scale.cwiseAbs().minCoeff() == 0.0f) {
      return absl::InvalidArgumentError(absl::StrCat(
          "make_additive.base[", j, "] '", skeleton->joint_name(j),
          "': scale has a zero component, so no scale factor maps it to the "
          "additive pose"));
    }
  }
  return absl::OkStatus();
}

absl::Status MakeAdditiveJob::Run() const {
  if (absl::Status s = Validate(); !s.ok()) return s;
  RunUnchecked();
  return absl::OkStatus();
}

void MakeAdditiveJob::RunUnchecked() const {
  const int n = skeleton->num_joints();
  for (int j = 0; j < n; ++j) {
    const Transform& b = base[j];
    const Transform& a = additive[j];
    Transform d;
    d.translation = a.translation - b.translation;
    // Equal rotations give the identity exactly rather than a quaternion
    // whose w is |b|^2 rounded.
    d.rotation =
        b.rotation.coeffs() == a.rotation.coeffs()
            ? Eigen::Quaternionf::Identity()
            : NormalizedOr((b.rotation.conjugate() * a.rotation).coeffs(),
                           Eigen::Quaternionf::Identity());
    d.scale = a.scale.cwiseQuotient(b.scale);
    delta[j] = d;  // after every read: delta may alias base or additive
  }
}

absl::Status AdditiveJob::Validate() const {
  if (skeleton == nullptr) {
    return absl::InvalidArgumentError("additive.skeleton: not set");
  }
  const int n = skeleton->num_joints();
  if (static_cast<int>(output.size()) != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("additive.output: ", output.size(),
                     " transforms for a skeleton of ", n, " joints"));
  }
  if (!std::isfinite(weight) || weight < -1.0f || weight > 1.0f) {
    return absl::InvalidArgumentError(
        absl::StrCat("additive.weight: ", weight, " is not in [-1, 1]"));
  }
  if (blend_root < -1 || blend_root >= n) {
    return absl::InvalidArgumentError(
        absl::StrCat("additive.blend_root: joint ", blend_root,
                     " is out of range [-1, ", n, ")"));
  }
  if (!joint_weights.empty()) {
    if (static_cast<int>(joint_weights.size()) != n) {
      return absl::InvalidArgumentError(absl::StrCat(
          "additive.joint_weights: ", joint_weights.size(),
          " weights for a skeleton of ", n, " joints (expected 0 or ", n, ")"));
    }
    for (int j = 0; j < n; ++j) {
      if (!std::isfinite(joint_weights[j])) {
        return absl::InvalidArgumentError(absl::StrCat(
            "additive.joint_weights[", j, "] '", skeleton->joint_name(j),
            "': ", joint_weights[j], " is not finite"));
      }
    }
  }
  if (absl::Status s =
          CheckInputPose(*skeleton, input, "additive.input", input_validated);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckPose(*skeleton, delta, "additive.delta"); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckNoPartialOverlap(output, "additive.output", input,
                                             "additive.input");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckNoPartialOverlap(output, "additive.output", delta,
                                             "additive.delta");
      !s.ok()) {
    return s;
  }
  if (weight < 0.0f) {
    for (int j = 0; j < n; ++j) {
      const float w = JointWeight(weight, joint_weights, j);
      if (w == 0.0f) continue;
      if (blend_root >= 0 && !skeleton->IsInSubtree(blend_root, j)) continue;
      if (PartialScale(delta[j].scale, -w).cwiseAbs().minCoeff() == 0.0f) {
        return absl::InvalidArgumentError(
            absl::StrCat("additive.delta[", j, "] '", skeleton->joint_name(j),
                         "': scale factor at weight ", w,
                         " has a zero component, so its inverse is undefined"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status AdditiveJob::Run() const {
  if (absl::Status s = Validate(); !s.ok()) return s;
  RunUnchecked();
  return absl::OkStatus();
}

void AdditiveJob::RunUnchecked() const {
  const Skeleton& skel = *skeleton;
  const int n = skel.num_joints();
  for (int j = 0; j < n; ++j) {
    const bool outside = blend_root >= 0 && !skel.IsInSubtree(blend_root, j);
    const float w = outside ? 0.0f : JointWeight(weight, joint_weights, j);
    if (w == 0.0f) {
      if (output.data() != input.data()) output[j] = input[j];
      continue;
    }
    const Transform& in = input[j];
    const Transform& d = delta[j];
    const float aw = std::fabs(w);
    Transform r;
    r.translation = in.translation + d.translation * w;
    const Eigen::Quaternionf dr = PartialRotation(d.rotation, aw);
    const Eigen::Vector3f ds = PartialScale(d.scale, aw);
    if (w > 0.0f) {
      r.rotation = in.rotation * dr;
      r.scale = in.scale.cwiseProduct(ds);
    } else {
      r.rotation = in.rotation * dr.conjugate();
      r.scale = in.scale.cwiseQuotient(ds);
    }
    output[j] = r;
  }
}

absl::StatusOr<LocalPose> SampleAdditiveBase(const Skeleton& skeleton,
                                             const Clip& clip, float time) {
  LocalPose pose(skeleton.num_joints());
  SamplingJob job;
  job.skeleton = &skeleton;
  job.clip = &clip;
  job.time = time;
  job.mode = PlaybackMode::kClamp;
  job.output = absl::MakeSpan(pose);
  if (absl::Status s = job.Run(); !s.ok()) return s;
  return pose;
}

}  // namespace posewire
