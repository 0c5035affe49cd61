#include "solver_core/chain_ik/learned_limits.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace posewire {
namespace {

constexpr float kPi = static_cast<float>(EIGEN_PI);
constexpr float kHalfPi = static_cast<float>(EIGEN_PI / 2.0);

absl::Status ValidateOptions(const LearnLimitsOptions& o) {
  if (o.type != JointLimitType::kEuler &&
      o.type != JointLimitType::kSwingTwist) {
    return absl::InvalidArgumentError(
        "learn_limits.type: only kEuler and kSwingTwist can be learnt");
  }
  if (static_cast<int>(o.euler_order) < 0 ||
      static_cast<int>(o.euler_order) > 5) {
    return absl::InvalidArgumentError("learn_limits.euler_order: unknown");
  }
  if (!std::isfinite(o.margin) || o.margin < 0.0f || o.margin > kPi) {
    return absl::InvalidArgumentError(absl::StrCat(
        "learn_limits.margin: ", o.margin, " must be within [0, pi]"));
  }
  if (!std::isfinite(o.min_range) || o.min_range < 0.0f || o.min_range > kPi) {
    return absl::InvalidArgumentError(absl::StrCat(
        "learn_limits.min_range: ", o.min_range, " must be within [0, pi]"));
  }
  return absl::OkStatus();
}

Eigen::Quaternionf Reference(const Skeleton& skeleton, int joint,
                             bool relative_to_rest) {
  return relative_to_rest ? skeleton.rest_pose()[joint].rotation
                          : Eigen::Quaternionf::Identity();
}

// Widens [lo, hi] by the margin and to at least min_range, within
// [-bound, bound]; sets *widened when min_range applied.
void Finish(float& lo, float& hi, float margin, float min_range, float bound,
            bool* widened) {
  lo -= margin;
  hi += margin;
  if (hi - lo < min_range) {
    const float mid = 0.5f * (lo + hi);
    lo = mid - 0.5f * min_range;
    hi = mid + 0.5f * min_range;
    *widened = true;
  }
  // Keep the width when a bound cuts it, by shifting inward.
  if (hi > bound) {
    lo -= hi - bound;
    hi = bound;
  }
  if (lo < -bound) {
    hi += -bound - lo;
    lo = -bound;
  }
  lo = std::max(lo, -bound);
  hi = std::min(hi, bound);
}

}  // namespace

Eigen::Vector3f RestTwistAxis(const Skeleton& skeleton, int joint,
                              bool relative_to_rest) {
  const Transform& rest = skeleton.rest_pose()[joint];
  const Eigen::Quaternionf ref = Reference(skeleton, joint, relative_to_rest);
  Eigen::Vector3f dir = Eigen::Vector3f::Zero();
  absl::Span<const int> children = skeleton.children(joint);
  if (!children.empty()) {
    // The child's offset is in the joint's own frame: rest rotation first.
    dir = ref.conjugate() *
          (rest.rotation * skeleton.rest_pose()[children[0]].translation);
  } else if (skeleton.parent(joint) != kNoParent) {
    // The joint's own offset is already in its parent's frame.
    dir = ref.conjugate() * rest.translation;
  }
  const float n = dir.norm();
  return n > 1e-12f ? Eigen::Vector3f(dir / n) : Eigen::Vector3f::UnitY();
}

absl::StatusOr<ObservedRanges> ObserveClip(const Skeleton& skeleton,
                                           const Clip& clip,
                                           const LearnLimitsOptions& options) {
  if (absl::Status s = ValidateOptions(options); !s.ok()) return s;
  if (absl::Status s = clip.Validate(skeleton); !s.ok()) return s;
  ObservedRanges out;
  out.type = options.type;
  out.euler_order = options.euler_order;
  out.relative_to_rest = options.relative_to_rest;
  out.joints.resize(skeleton.num_joints());
  for (int j = 0; j < skeleton.num_joints(); ++j) {
    const Track<Eigen::Quaternionf>& track = clip.tracks[j].rotation;
    const Eigen::Quaternionf ref_inv =
        Reference(skeleton, j, options.relative_to_rest).conjugate();
    const Eigen::Vector3f axis =
        options.type == JointLimitType::kSwingTwist
            ? RestTwistAxis(skeleton, j, options.relative_to_rest)
            : Eigen::Vector3f::UnitY();
    ObservedRange& r = out.joints[j];
    // The reference pose itself is in range (min = max = 0 to start), and
    // so is the rest pose when limits are on raw local rotations.
    auto observe = [&](const Eigen::Quaternionf& local) {
      const Eigen::Quaternionf q = ref_inv * local.normalized();
      if (options.type == JointLimitType::kEuler) {
        const Eigen::Vector3f e = ToEuler(q, options.euler_order);
        r.min = r.min.cwiseMin(e);
        r.max = r.max.cwiseMax(e);
      } else {
        const SwingTwistParts p = DecomposeSwingTwist(q, axis);
        r.min.x() = std::min(r.min.x(), p.twist_angle);
        r.max.x() = std::max(r.max.x(), p.twist_angle);
        r.max_swing = std::max(r.max_swing, p.swing_angle);
      }
    };
    if (!options.relative_to_rest) observe(skeleton.rest_pose()[j].rotation);
    for (size_t k = 0; k < track.times.size(); ++k) {
      observe(track.key_value(k));
      ++r.samples;
    }
  }
  return out;
}

absl::Status MergeObservedRanges(ObservedRanges& into,
                                 const ObservedRanges& other) {
  if (into.type != other.type || into.euler_order != other.euler_order ||
      into.relative_to_rest != other.relative_to_rest) {
    return absl::InvalidArgumentError(
        "merge_observed_ranges: ranges observed with different options");
  }
  if (into.joints.size() != other.joints.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("merge_observed_ranges: ", into.joints.size(), " vs ",
                     other.joints.size(), " joints (different skeletons)"));
  }
  for (size_t j = 0; j < into.joints.size(); ++j) {
    ObservedRange& a = into.joints[j];
    const ObservedRange& b = other.joints[j];
    a.samples += b.samples;
    a.min = a.min.cwiseMin(b.min);
    a.max = a.max.cwiseMax(b.max);
    a.max_swing = std::max(a.max_swing, b.max_swing);
  }
  return absl::OkStatus();
}

absl::StatusOr<LearnedLimits> FinalizeLimits(
    const Skeleton& skeleton, const ObservedRanges& observed,
    const LearnLimitsOptions& options) {
  if (absl::Status s = ValidateOptions(options); !s.ok()) return s;
  if (static_cast<int>(observed.joints.size()) != skeleton.num_joints()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "finalize_limits: ", observed.joints.size(),
        " observed joints for a skeleton of ", skeleton.num_joints()));
  }
  if (observed.type != options.type ||
      observed.euler_order != options.euler_order ||
      observed.relative_to_rest != options.relative_to_rest) {
    return absl::InvalidArgumentError(
        "finalize_limits: ranges were observed with different options");
  }
  LearnedLimits out;
  out.limits.resize(skeleton.num_joints());
  for (int j = 0; j < skeleton.num_joints(); ++j) {
    const ObservedRange& r = observed.joints[j];
    JointLimit& limit = out.limits[j];
    bool widened = false;
    if (options.type == JointLimitType::kEuler) {
      Eigen::Vector3f lo = r.min, hi = r.max;
      const int middle = EulerAxisAt(options.euler_order, 1);
      for (int axis = 0; axis < 3; ++axis) {
        Finish(lo[axis], hi[axis], options.margin, options.min_range,
               axis == middle ? kHalfPi : kPi, &widened);
      }
      limit = EulerLimit(options.euler_order, lo, hi);
    } else {
      float lo = r.min.x(), hi = r.max.x();
      Finish(lo, hi, options.margin, options.min_range, kPi, &widened);
      float swing = r.max_swing + options.margin;
      if (swing < 0.5f * options.min_range) {
        swing = 0.5f * options.min_range;
        widened = true;
      }
      limit =
          SwingTwistLimit(RestTwistAxis(skeleton, j, options.relative_to_rest),
                          std::min(swing, kPi), lo, hi);
    }
    limit.reference = Reference(skeleton, j, options.relative_to_rest);
    if (widened) out.widened_joints.push_back(j);
  }
  return out;
}

absl::StatusOr<LearnedLimits> LearnJointLimits(
    const Skeleton& skeleton, absl::Span<const Clip> clips,
    const LearnLimitsOptions& options) {
  if (clips.empty()) {
    return absl::InvalidArgumentError("learn_limits.clips: no clip given");
  }
  absl::StatusOr<ObservedRanges> merged =
      ObserveClip(skeleton, clips[0], options);
  if (!merged.ok()) return merged.status();
  for (size_t i = 1; i < clips.size(); ++i) {
    absl::StatusOr<ObservedRanges> next =
        ObserveClip(skeleton, clips[i], options);
    if (!next.ok()) return next.status();
    if (absl::Status s = MergeObservedRanges(*merged, *next); !s.ok()) {
      return s;
    }
  }
  return FinalizeLimits(skeleton, *merged, options);
}

}  // namespace posewire
