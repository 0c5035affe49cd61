#include "solver_core/two_bone_ik.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "solver_core/clamp_direction.h"
#include "solver_core/pose.h"
#include "solver_core/quaternion_math.h"

namespace posewire {
namespace {

std::string JointRef(const Skeleton& skeleton, int joint) {
  return absl::StrCat("joint ", joint, " '", skeleton.joint_name(joint), "'");
}

absl::Status CheckVector(const Eigen::Vector3f& v, absl::string_view field) {
  if (v.allFinite()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("two_bone_ik.", field, ": NaN or infinite component"));
}

absl::Status CheckScalar(float x, absl::string_view field) {
  if (std::isfinite(x)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("two_bone_ik.", field, ": ", x, " is not finite"));
}

// Calls fn(joint) for the joints strictly below `top` down to `bottom`
// (inclusive), parents first. `bottom` must be a descendant of `top`. Chains
// are short (usually one joint per bone), so the path lives on the stack.
template <typename Fn>
void ForEachBelowOnPath(const Skeleton& skeleton, int top, int bottom, Fn fn) {
  const int hops = skeleton.Depth(bottom) - skeleton.Depth(top);
  constexpr int kInline = 16;
  auto walk = [&](int* path) {
    int joint = bottom;
    for (int i = hops - 1; i >= 0; --i) {
      path[i] = joint;
      joint = skeleton.parent(joint);
    }
    for (int i = 0; i < hops; ++i) fn(path[i]);
  };
  if (hops <= kInline) {
    int path[kInline];
    walk(path);
  } else {
    std::vector<int> path(hops);
    walk(path.data());
  }
}

absl::Status CheckChainLink(const Skeleton& skeleton, int parent, int child,
                            absl::string_view parent_field,
                            absl::string_view child_field) {
  if (child == parent || !skeleton.IsInSubtree(parent, child)) {
    return absl::InvalidArgumentError(
        absl::StrCat("two_bone_ik.", child_field, ": ",
                     JointRef(skeleton, child), " is not a descendant of ",
                     parent_field, " ", JointRef(skeleton, parent)));
  }
  return absl::OkStatus();
}

// Shortest-path slerp from identity to q by t in (0, 1).
Eigen::Quaternionf PartialRotation(const Eigen::Quaternionf& q, float t) {
  return Eigen::Quaternionf::Identity().slerp(t, q);
}

// Bounds on a quaternion's squared norm slightly inside ValidateTransform's
// |norm - 1| <= kUnitQuaternionTolerance.
constexpr float kMinUnitNorm2 =
    (1.0f - kUnitQuaternionTolerance) * (1.0f - kUnitQuaternionTolerance) +
    1e-6f;
constexpr float kMaxUnitNorm2 =
    (1.0f + kUnitQuaternionTolerance) * (1.0f + kUnitQuaternionTolerance) -
    1e-6f;

// ValidateTransform's conditions as one branch-free test: quaternion_math.h's
// SSE screen (three row loads), never laxer than ValidateTransform.
inline bool LooksLikeValidTransform(const Transform& t) {
  return TransformLooksValid(t);
}

// The detailed check, with the messages. Validate() runs it only when the
// quick screen below finds a problem (or a value on a boundary).
absl::Status Diagnose(const TwoBoneIkJob& job) {
  if (job.skeleton == nullptr) {
    return absl::InvalidArgumentError("two_bone_ik.skeleton: not set");
  }
  const Skeleton& skel = *job.skeleton;
  const size_t n = static_cast<size_t>(skel.num_joints());
  if (job.local.size() != n || job.model.size() != n ||
      job.output.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "two_bone_ik: local, model and output need one transform per joint (",
        n, "); got ", job.local.size(), ", ", job.model.size(), " and ",
        job.output.size()));
  }
  if (job.output.data() != job.local.data() &&
      job.output.data() < job.local.data() + n &&
      job.local.data() < job.output.data() + n) {
    return absl::InvalidArgumentError(
        "two_bone_ik.output: overlaps `local` without being the same span");
  }
  const struct {
    int joint;
    const char* field;
  } chain[] = {{job.start_joint, "start_joint"},
               {job.mid_joint, "mid_joint"},
               {job.end_joint, "end_joint"}};
  for (const auto& c : chain) {
    if (c.joint < 0 || c.joint >= skel.num_joints()) {
      return absl::InvalidArgumentError(
          absl::StrCat("two_bone_ik.", c.field, ": joint ", c.joint,
                       " is out of range [0, ", n, ")"));
    }
  }
  if (absl::Status s = CheckChainLink(skel, job.start_joint, job.mid_joint,
                                      "start_joint", "mid_joint");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckChainLink(skel, job.mid_joint, job.end_joint,
                                      "mid_joint", "end_joint");
      !s.ok()) {
    return s;
  }

  if (absl::Status s = CheckVector(job.target, "target"); !s.ok()) return s;
  if (absl::Status s = CheckVector(job.pole_vector, "pole_vector"); !s.ok()) {
    return s;
  }
  if (job.bend_goal.has_value()) {
    if (absl::Status s = CheckVector(*job.bend_goal, "bend_goal"); !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = CheckVector(job.mid_axis, "mid_axis"); !s.ok()) return s;
  if (!(job.mid_axis.squaredNorm() > 1e-12f)) {
    return absl::InvalidArgumentError(
        absl::StrCat("two_bone_ik.mid_axis: zero length; give the hinge axis "
                     "of mid_joint ",
                     JointRef(skel, job.mid_joint), " in its own space"));
  }
  if (absl::Status s = CheckScalar(job.twist_angle, "twist_angle"); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckScalar(job.weight, "weight"); !s.ok()) return s;
  if (absl::Status s =
          CheckScalar(job.end_rotation_weight, "end_rotation_weight");
      !s.ok()) {
    return s;
  }
  if (!(job.soften >= 0.0f && job.soften <= 1.0f)) {
    return absl::InvalidArgumentError(
        absl::StrCat("two_bone_ik.soften: ", job.soften, " is not in [0, 1]"));
  }
  if (!(job.max_stretch >= 1.0f) || !std::isfinite(job.max_stretch)) {
    return absl::InvalidArgumentError(
        absl::StrCat("two_bone_ik.max_stretch: ", job.max_stretch,
                     " is not a finite ratio >= 1"));
  }
  if (!(job.reach_tolerance >= 0.0f) || !std::isfinite(job.reach_tolerance)) {
    return absl::InvalidArgumentError(
        absl::StrCat("two_bone_ik.reach_tolerance: ", job.reach_tolerance,
                     " is not finite and >= 0"));
  }
  if (job.end_rotation.has_value()) {
    const Eigen::Quaternionf& q = *job.end_rotation;
    if (!q.coeffs().allFinite()) {
      return absl::InvalidArgumentError(
          "two_bone_ik.end_rotation: NaN or infinite component");
    }
    if (!(std::fabs(q.norm() - 1.0f) <= kUnitQuaternionTolerance)) {
      return absl::InvalidArgumentError(
          absl::StrCat("two_bone_ik.end_rotation: norm ", q.norm(),
                       " is not 1 (tolerance ", kUnitQuaternionTolerance, ")"));
    }
  }

  const int parent = skel.parent(job.start_joint);
  if (parent == kNoParent) {
    if (absl::Status s =
            ValidateTransform(job.root, "two_bone_ik.root", 0, "root space");
        !s.ok()) {
      return s;
    }
  } else if (absl::Status s =
                 ValidateTransform(job.model[parent], "two_bone_ik.model",
                                   parent, skel.joint_name(parent));
             !s.ok()) {
    return s;
  }
  absl::Status status =
      ValidateTransform(job.local[job.start_joint], "two_bone_ik.local",
                        job.start_joint, skel.joint_name(job.start_joint));
  ForEachBelowOnPath(skel, job.start_joint, job.end_joint, [&](int j) {
    if (status.ok()) {
      status = ValidateTransform(job.local[j], "two_bone_ik.local", j,
                                 skel.joint_name(j));
    }
  });
  return status;
}

// Quick screen: the same conditions as Diagnose without building statuses,
// made slightly stricter where Diagnose compares floats against a bound, so
// that it never accepts what Diagnose would reject.
bool LooksValid(const TwoBoneIkJob& job) {
  if (job.skeleton == nullptr) return false;
  const Skeleton& skel = *job.skeleton;
  const size_t n = static_cast<size_t>(skel.num_joints());
  if (job.local.size() != n || job.model.size() != n ||
      job.output.size() != n) {
    return false;
  }
  if (job.output.data() != job.local.data() &&
      job.output.data() < job.local.data() + n &&
      job.local.data() < job.output.data() + n) {
    return false;
  }
  if (static_cast<size_t>(job.start_joint) >= n ||
      static_cast<size_t>(job.mid_joint) >= n ||
      static_cast<size_t>(job.end_joint) >= n ||
      job.mid_joint == job.start_joint || job.end_joint == job.mid_joint ||
      !skel.IsInSubtree(job.start_joint, job.mid_joint) ||
      !skel.IsInSubtree(job.mid_joint, job.end_joint)) {
    return false;
  }
  // x - x is 0 for finite x and NaN otherwise; the sum keeps any NaN.
  float finite = (job.target - job.target).sum() +
                 (job.pole_vector - job.pole_vector).sum() +
                 (job.mid_axis - job.mid_axis).sum() +
                 (job.twist_angle - job.twist_angle) +
                 (job.weight - job.weight) +
                 (job.end_rotation_weight - job.end_rotation_weight) +
                 (job.max_stretch - job.max_stretch) +
                 (job.reach_tolerance - job.reach_tolerance);
  if (job.bend_goal.has_value()) {
    finite += (*job.bend_goal - *job.bend_goal).sum();
  }
  if (job.end_rotation.has_value()) {
    const Eigen::Vector4f& q = job.end_rotation->coeffs();
    finite += (q - q).sum();
    const float n2 = q.squaredNorm();
    if (!(n2 >= kMinUnitNorm2 && n2 <= kMaxUnitNorm2)) return false;
  }
  if (finite != 0.0f) return false;
  if (!(job.mid_axis.squaredNorm() > 1e-12f) || !(job.soften >= 0.0f) ||
      !(job.soften <= 1.0f) || !(job.max_stretch >= 1.0f) ||
      !(job.reach_tolerance >= 0.0f)) {
    return false;
  }
  const int parent = skel.parent(job.start_joint);
  if (!LooksLikeValidTransform(parent == kNoParent ? job.root
                                                   : job.model[parent]) ||
      !LooksLikeValidTransform(job.local[job.start_joint])) {
    return false;
  }
  bool ok = true;
  ForEachBelowOnPath(skel, job.start_joint, job.end_joint, [&](int j) {
    ok = ok && LooksLikeValidTransform(job.local[j]);
  });
  return ok;
}

}  // namespace

absl::Status TwoBoneIkJob::Validate() const {
  if (LooksValid(*this)) return absl::OkStatus();
  return Diagnose(*this);
}

absl::Status TwoBoneIkJob::Run() const {
  if (absl::Status s = Validate(); !s.ok()) return s;

  const Skeleton& skel = *skeleton;
  // Read everything from `local` before writing: `output` may alias it.
  const Eigen::Quaternionf start_local = local[start_joint].rotation;
  const Eigen::Quaternionf mid_local = local[mid_joint].rotation;
  const Eigen::Quaternionf end_local = local[end_joint].rotation;

  // The start joint's model position and rotation, from its parent's.
  const int parent = skel.parent(start_joint);
  const Transform& parent_model = parent == kNoParent ? root : model[parent];
  const Transform& start_tf = local[start_joint];
  const Eigen::Vector3f a_pos =
      parent_model.TransformPoint(start_tf.translation);
  const Eigen::Quaternionf start_rotation =
      parent_model.rotation * start_tf.rotation;

  // Everything below is expressed in the start joint's rotation frame
  // (model-space vectors rotated by the inverse of its model rotation, origin
  // on the start joint), where the start joint's local correction is a plain
  // left-multiplied rotation. The chain below the start joint is composed
  // directly in that frame: from a transform with no rotation and the start
  // joint's model scale, Combine yields each joint's position and rotation
  // relative to the start joint's. They do not depend on the start joint's
  // rotation, which is what the solve changes.
  Transform cursor;
  cursor.scale = parent_model.scale.cwiseProduct(start_tf.scale);
  Transform mid_frame;
  ForEachBelowOnPath(skel, start_joint, end_joint, [&](int j) {
    cursor = Combine(cursor, local[j]);
    if (j == mid_joint) mid_frame = cursor;
  });
  const Transform& end_frame = cursor;

  if (output.data() != local.data()) {
    std::copy(local.begin(), local.end(), output.begin());
  }

  const float w = std::clamp(weight, 0.0f, 1.0f);
  const Eigen::Quaternionf inv_start = start_rotation.conjugate();
  // The mid joint's rotation relative to the start joint's.
  const Eigen::Quaternionf& start_to_mid = mid_frame.rotation;
  const Eigen::Vector3f& bone1 = mid_frame.translation;
  const Eigen::Vector3f bone2 = end_frame.translation - mid_frame.translation;
  const Eigen::Vector3f to_target = inv_start * (target - a_pos);
  const float l1 = bone1.norm();
  const float l2 = bone2.norm();
  const float chain_length = l1 + l2;

  TwoBoneIkResult res;
  if (w == 0.0f) {
    // Nothing to blend in: the output is the input copy, bit for bit.
    res.error = (to_target - bone1 - bone2).norm();
    res.reached = res.error <= reach_tolerance * chain_length;
    if (result != nullptr) *result = res;
    return absl::OkStatus();
  }

  // 1. How far the limb must reach: the target distance, softened, then
  // possibly met by stretching.
  const float d = to_target.norm();
  float reach = d;
  if (soften < 1.0f && d > 0.0f) {
    const float da = soften * chain_length;
    const float ds = chain_length - da;
    if (ds > 0.0f && d > da) {
      const float x = (d - da) / ds + 3.0f;
      const float x2 = x * x;
      const float ratio = 81.0f / (x2 * x2);
      reach = da + ds * (1.0f - ratio);
    }
  }
  float stretch_ratio = 1.0f;
  if (stretch && chain_length > 0.0f) {
    const float available = std::min(reach, chain_length);
    if (available > 0.0f && d > available) {
      stretch_ratio = std::min(d / available, max_stretch);
      reach = std::min(d, available * stretch_ratio);
    }
  }
  const Eigen::Vector3f b1 = bone1 * stretch_ratio;
  const Eigen::Vector3f b2 = bone2 * stretch_ratio;

  // 2. Mid joint: turn bone 2 about the hinge axis u until the start-to-end
  // distance is `reach`. With a = start - mid and p(phi) bone 2 turned by
  // phi, |a - p|^2 = reach^2 means a.p(phi) = K, and a.p(phi) = c0 +
  // R cos(phi - phi0): the law of cosines, generalised to an axis that need
  // not be perpendicular to the limb. Of the two solutions, phi0 + delta is
  // the one where turning further about u opens the limb (ozz's convention
  // for mid_axis). Out-of-range K (unreachable, or closer than the bones
  // allow) clamps to straight or folded.
  const float axis_len2 = mid_axis.squaredNorm();
  const Eigen::Vector3f axis =
      axis_len2 == 1.0f ? mid_axis
                        : Eigen::Vector3f(mid_axis / std::sqrt(axis_len2));
  const Eigen::Vector3f u = start_to_mid * axis;
  const Eigen::Vector3f a = -b1;
  const float k_target =
      0.5f * (b1.squaredNorm() + b2.squaredNorm() - reach * reach);
  const Eigen::Vector3f p_par = b2.dot(u) * u;
  const Eigen::Vector3f p_perp = b2 - p_par;
  const Eigen::Vector3f u_x_p = u.cross(p_perp);
  const float c0 = a.dot(p_par);
  const float x = a.dot(p_perp);
  const float y = a.dot(u_x_p);
  const float r = std::sqrt(x * x + y * y);
  Eigen::Quaternionf hinge = Eigen::Quaternionf::Identity();
  Eigen::Vector3f p = b2;
  // r vanishes when a bone has no length or lies along the axis: the hinge
  // then cannot change the reach, so it stays as it is.
  if (r > 1e-6f * (l1 * l2 * stretch_ratio * stretch_ratio)) {
    const float inv_r = 1.0f / r;
    const float cos_delta = std::clamp((k_target - c0) * inv_r, -1.0f, 1.0f);
    const float sin_delta = std::sqrt(1.0f - cos_delta * cos_delta);
    // cos(phi0 + delta) and sin(phi0 + delta), with cos(phi0) = x / r and
    // sin(phi0) = y / r.
    const float cos_phi = (x * cos_delta - y * sin_delta) * inv_r;
    const float sin_phi = (y * cos_delta + x * sin_delta) * inv_r;
    hinge = AxisRotationFromUnitCosSin(axis, cos_phi, sin_phi);
    p = p_par + cos_phi * p_perp + sin_phi * u_x_p;
  }
  const Eigen::Vector3f start_to_end = b1 + p;

  // 3. Start joint: swing the limb onto the target line and roll it about
  // that line to put the mid joint on the pole's side (one frame-to-frame
  // rotation), then twist.
  Eigen::Quaternionf correction = Eigen::Quaternionf::Identity();
  if (d > 0.0f) {
    // A (nearly) straight limb has no mid joint offset to roll toward the
    // pole; the plane perpendicular to the hinge axis stands in for it, the
    // limit of the offset's direction as the limb straightens.
    const float v2 = start_to_end.squaredNorm();
    const Eigen::Vector3f mid_off =
        v2 > 0.0f
            ? Eigen::Vector3f(b1 - (b1.dot(start_to_end) / v2) * start_to_end)
            : b1;
    const Eigen::Vector3f bend_ref =
        mid_off.squaredNorm() > 1e-6f * b1.squaredNorm()
            ? mid_off
            : Eigen::Vector3f(u.cross(start_to_end));
    const Eigen::Vector3f pole_dir =
        inv_start * (bend_goal.has_value() ? Eigen::Vector3f(*bend_goal - a_pos)
                                           : pole_vector);
    correction =
        RotationBetweenFrames(start_to_end, bend_ref, to_target, pole_dir);
    if (twist_angle != 0.0f) {
      const Eigen::Vector3f t_hat = to_target * (1.0f / d);
      correction = Eigen::Quaternionf(Eigen::AngleAxisf(twist_angle, t_hat)) *
                   correction;
    }
  }

  // 4. Weight, then write.
  float applied_stretch = stretch_ratio;
  if (w < 1.0f) {
    correction = PartialRotation(correction, w);
    hinge = PartialRotation(hinge, w);
    applied_stretch = 1.0f + (stretch_ratio - 1.0f) * w;
  }
  output[start_joint].rotation = start_local * correction;
  output[mid_joint].rotation = mid_local * hinge;
  if (applied_stretch != 1.0f) {
    ForEachBelowOnPath(skel, start_joint, end_joint, [&](int j) {
      output[j].translation = local[j].translation * applied_stretch;
    });
  }
  if (end_rotation.has_value()) {
    const float ew = w * std::clamp(end_rotation_weight, 0.0f, 1.0f);
    if (ew > 0.0f) {
      // End's model rotation after the solve: its rotation relative to the
      // mid joint is unchanged.
      const Eigen::Quaternionf mid_to_end =
          mid_frame.rotation.conjugate() * end_frame.rotation;
      const Eigen::Quaternionf end_solved =
          start_rotation * correction * start_to_mid * hinge * mid_to_end;
      const Eigen::Quaternionf delta =
          end_solved.conjugate() * end_rotation->normalized();
      output[end_joint].rotation =
          end_local * (ew < 1.0f ? PartialRotation(delta, ew) : delta);
    }
  }

  // 5. Where the end joint landed, for the result (skipped when nobody asks).
  if (result == nullptr) return absl::OkStatus();
  Eigen::Vector3f end_s;
  if (w == 1.0f) {
    end_s = correction * start_to_end;
  } else {
    const Eigen::Quaternionf hinge_s =
        start_to_mid * hinge * start_to_mid.conjugate();
    end_s = correction * ((bone1 + hinge_s * bone2) * applied_stretch);
  }
  res.error = (to_target - end_s).norm();
  res.reached = res.error <= reach_tolerance * chain_length * applied_stretch;
  res.iterations = 1;
  res.stretch = applied_stretch;
  *result = res;
  return absl::OkStatus();
}

}  // namespace posewire
