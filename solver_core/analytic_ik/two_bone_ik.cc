#include "solver_core/analytic_ik/two_bone_ik.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/strings/str_cat.h"
#include "solver_core/analytic_ik/clamp_direction.h"
#include "solver_core/model/internal/simd_lanes.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/quaternion_math.h"

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
  return Slerp(Eigen::Quaternionf::Identity(), q, t);
}

// Bounds on a quaternion's squared norm slightly inside ValidateTransform's
// |norm - 1| <= kUnitQuaternionTolerance.
constexpr float kMinUnitNorm2 =
    (1.0f - kUnitQuaternionTolerance) * (1.0f - kUnitQuaternionTolerance) +
    1e-6f;
constexpr float kMaxUnitNorm2 =
    (1.0f + kUnitQuaternionTolerance) * (1.0f + kUnitQuaternionTolerance) -
    1e-6f;

// The detailed check, with the messages. Validate() runs it only when the
// quick screen below finds a problem (or a value on a boundary).
absl::Status Diagnose(const TwoBoneIkJob& job) {
  if (job.skeleton == nullptr) {
    return absl::InvalidArgumentError("two_bone_ik.skeleton: not set");
  }
  const Skeleton& skel = *job.skeleton;
  const size_t n = static_cast<size_t>(skel.num_joints());
  if (job.input.size() != n || job.output.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "two_bone_ik: input and output need one transform per joint (", n,
        "); got ", job.input.size(), " and ", job.output.size()));
  }
  if (absl::Status s = CheckNoPartialOverlap(job.output, "two_bone_ik.output",
                                             job.input, "two_bone_ik.input");
      !s.ok()) {
    return s;
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
  if (job.mid_axis.has_value()) {
    if (absl::Status s = CheckVector(*job.mid_axis, "mid_axis"); !s.ok()) {
      return s;
    }
    if (!(job.mid_axis->squaredNorm() > 1e-12f)) {
      return absl::InvalidArgumentError(
          absl::StrCat("two_bone_ik.mid_axis: zero length; give the hinge axis "
                       "of mid_joint ",
                       JointRef(skel, job.mid_joint), " in its own space"));
    }
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

  if (absl::Status s = ValidateParentModel(
          skel, job.parent_model, job.start_joint, "two_bone_ik.parent_model");
      !s.ok()) {
    return s;
  }
  absl::Status status =
      ValidateTransform(job.input[job.start_joint], "two_bone_ik.input",
                        job.start_joint, skel.joint_name(job.start_joint));
  ForEachBelowOnPath(skel, job.start_joint, job.end_joint, [&](int j) {
    if (status.ok()) {
      status = ValidateTransform(job.input[j], "two_bone_ik.input", j,
                                 skel.joint_name(j));
    }
  });
  return status;
}

// The chain's joints and the transforms the solve reads. `direct`: each joint
// is the parent of the next (no twist bones in between), the common case,
// which needs no walk along the path.
struct ChainView {
  const Transform* parent_model;
  const Transform* start;
  const Transform* mid;
  const Transform* end;
  bool direct;
};

ChainView ViewChain(const TwoBoneIkJob& job) {
  const Skeleton& skel = *job.skeleton;
  const Transform* input = job.input.data();
  return {&job.parent_model, input + job.start_joint, input + job.mid_joint,
          input + job.end_joint,
          skel.parent(job.mid_joint) == job.start_joint &&
              skel.parent(job.end_joint) == job.mid_joint};
}

// True when every vector and scalar parameter is finite (and the end
// rotation, if any, of unit length within the screen's bounds).
inline bool ParametersLookFinite(const TwoBoneIkJob& job) {
#if defined(__SSE2__)
  // x - x is 0 for finite x and NaN otherwise; the sums keep any NaN. Four
  // lanes at a time.
  using lanes::F4;
  auto nan_if_not_finite = [](F4 v) { return v - v; };
  const F4 mid_axis = job.mid_axis.has_value()
                          ? lanes::LoadVector3(*job.mid_axis)
                          : lanes::Zero();
  F4 finite = (nan_if_not_finite(lanes::LoadVector3(job.target)) +
               nan_if_not_finite(lanes::LoadVector3(job.pole_vector))) +
              (nan_if_not_finite(mid_axis) +
               nan_if_not_finite(lanes::SetLanes(job.twist_angle, job.weight,
                                                 job.end_rotation_weight,
                                                 job.max_stretch)));
  finite = lanes::AddFirst(finite, nan_if_not_finite(lanes::SetLanes(
                                       job.reach_tolerance, 0.0f, 0.0f, 0.0f)));
  if (job.bend_goal.has_value()) {
    finite = finite + nan_if_not_finite(lanes::LoadVector3(*job.bend_goal));
  }
  if (job.end_rotation.has_value()) {
    const F4 q = lanes::LoadU(job.end_rotation->coeffs().data());
    finite = finite + nan_if_not_finite(q);
    const float n2 = lanes::First(lanes::Dot4(q, q));
    if (!(n2 >= kMinUnitNorm2 && n2 <= kMaxUnitNorm2)) return false;
  }
  return lanes::Bits(finite == lanes::Zero()) == 0xF;
#else
  const Eigen::Vector3f mid_axis =
      job.mid_axis.value_or(Eigen::Vector3f::Zero());
  float finite =
      (job.target - job.target).sum() +
      (job.pole_vector - job.pole_vector).sum() + (mid_axis - mid_axis).sum() +
      (job.twist_angle - job.twist_angle) + (job.weight - job.weight) +
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
  return finite == 0.0f;
#endif
}

// Quick screen: the same conditions as Diagnose without building statuses,
// made slightly stricter where Diagnose compares floats against a bound, so
// that it never accepts what Diagnose would reject. Inline: Run inlines it
// and shares its loads with the solve.
inline bool LooksValid(const TwoBoneIkJob& job) {
  if (job.skeleton == nullptr) return false;
  const Skeleton& skel = *job.skeleton;
  const size_t n = static_cast<size_t>(skel.num_joints());
  if (job.input.size() != n || job.output.size() != n) return false;
  if (OverlapsWithoutAliasing(job.output, job.input)) return false;
  if (static_cast<size_t>(job.start_joint) >= n ||
      static_cast<size_t>(job.mid_joint) >= n ||
      static_cast<size_t>(job.end_joint) >= n) {
    return false;
  }
  const ChainView chain = ViewChain(job);
  if (!chain.direct &&
      (job.mid_joint == job.start_joint || job.end_joint == job.mid_joint ||
       !skel.IsInSubtree(job.start_joint, job.mid_joint) ||
       !skel.IsInSubtree(job.mid_joint, job.end_joint))) {
    return false;
  }
  if (!ParametersLookFinite(job)) return false;
  if ((job.mid_axis.has_value() && !(job.mid_axis->squaredNorm() > 1e-12f)) ||
      !(job.soften >= 0.0f) || !(job.soften <= 1.0f) ||
      !(job.max_stretch >= 1.0f) || !(job.reach_tolerance >= 0.0f)) {
    return false;
  }
  if (!TransformsLookValid(
          {chain.parent_model, chain.start, chain.mid, chain.end})) {
    return false;
  }
  if (chain.direct) return true;
  // Twist bones between start and mid or mid and end: they are read too.
  bool ok = true;
  ForEachBelowOnPath(skel, job.start_joint, job.end_joint, [&](int j) {
    ok = ok && TransformLooksValid(job.input[j]);
  });
  return ok;
}

// The limb below the start joint in the start joint's rotation frame (see
// Run): the bones as vectors and the rotations of the mid joint relative to
// the start joint and of the end joint relative to the mid joint. None of it
// depends on the start joint's rotation, which is what the solve changes.
struct LimbFrame {
  Vec3 bone1;  // start to mid
  Vec3 bone2;  // mid to end
  Eigen::Quaternionf start_to_mid;
  Eigen::Quaternionf mid_to_end;
};

// `pose`: the local transforms to compose (the input, or the rest pose);
// `direct` as ChainView's; `start_scale`: the start joint's model-space
// scale. Inlined: on the solve's path it shares loads with Run.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline LimbFrame ComposeLimb(
    const TwoBoneIkJob& job, const Transform* pose, bool direct,
    const Eigen::Vector3f& start_scale) {
  const Transform* mid = pose + job.mid_joint;
  const Transform* end = pose + job.end_joint;
  LimbFrame limb;
  if (direct) {
    // Each joint the child of the previous one: the composition written out,
    // each bone taken straight from its own joint's transform. (Combine from
    // the start frame would rotate by the identity and take bone 2 as a
    // difference of positions: more work on the solve's critical path, and
    // rounding.)
    const Vec3 scale(start_scale);
    limb.bone1 = scale.cwiseProduct(Vec3(mid->translation));
    limb.start_to_mid = mid->rotation;
    const Vec3 mid_scale = scale.cwiseProduct(Vec3(mid->scale));
    limb.bone2 = Rotate(limb.start_to_mid,
                        mid_scale.cwiseProduct(Vec3(end->translation)));
    limb.mid_to_end = end->rotation;
    return limb;
  }
  // Twist bones in between: Combine along the path, from a transform with no
  // rotation and the start joint's scale.
  Transform cursor;
  cursor.scale = start_scale;
  Transform mid_frame;
  ForEachBelowOnPath(*job.skeleton, job.start_joint, job.end_joint, [&](int j) {
    CombineTo(cursor, pose[j], &cursor);
    if (j == job.mid_joint) mid_frame = cursor;
  });
  limb.bone1 = Vec3(mid_frame.translation);
  limb.bone2 = Vec3(cursor.translation) - limb.bone1;
  limb.start_to_mid = mid_frame.rotation;
  limb.mid_to_end = mid_frame.rotation.conjugate() * cursor.rotation;
  return limb;
}

constexpr float kStraightSine2 =
    kTwoBoneIkStraightSine * kTwoBoneIkStraightSine;

// A unit hinge axis in the mid joint's space (`mid`, what the hinge turns
// about) and in the start joint's rotation frame (`start`, what the solve
// works with).
struct HingeAxis {
  Vec3 mid;
  Vec3 start;
};

// From `v` in the start joint's rotation frame, |v|^2 = v_norm2 > 0: one
// rotation, none back.
HingeAxis FromStartFrame(const LimbFrame& limb, Vec3 v, float v_norm2) {
  const Vec3 start = v * (1.0f / std::sqrt(v_norm2));
  return {Rotate(limb.start_to_mid.conjugate(), start), start};
}

HingeAxis FromMidSpace(const LimbFrame& limb, Vec3 mid) {
  return {mid, Rotate(limb.start_to_mid, mid)};
}

// The hinge of a bent limb: the normal of its plane, bone2 x bone1. A
// positive turn about it moves bone 2 toward bone 1's direction, so it opens
// the limb and keeps the bend on its side. False for a straight (or flat
// folded) limb.
bool BendPlaneAxis(const LimbFrame& limb, HingeAxis* axis) {
  const Vec3 normal = limb.bone2.cross(limb.bone1);
  const float n2 = normal.squaredNorm();
  if (!(n2 >
        kStraightSine2 * limb.bone1.squaredNorm() * limb.bone2.squaredNorm())) {
    return false;
  }
  *axis = FromStartFrame(limb, normal, n2);
  return true;
}

// A straight limb with no pole plane: the hinge of the rest pose, under the
// current parent's scale (fixed in the mid joint's space, it carries over to
// the current pose as is), else (0, 0, 1). Rare: kept out of the solve's
// inlined path.
[[gnu::noinline]] HingeAxis RestPoseMidAxis(const TwoBoneIkJob& job,
                                            const ChainView& chain,
                                            const LimbFrame& limb,
                                            TwoBoneIkHinge* source) {
  const Transform* rest = job.skeleton->rest_pose().data();
  const Eigen::Vector3f rest_start_scale =
      chain.parent_model->scale.cwiseProduct(rest[job.start_joint].scale);
  HingeAxis at_rest;
  if (BendPlaneAxis(ComposeLimb(job, rest, chain.direct, rest_start_scale),
                    &at_rest)) {
    *source = TwoBoneIkHinge::kRestPose;
    return FromMidSpace(limb, at_rest.mid);
  }
  *source = TwoBoneIkHinge::kDefault;
  return FromMidSpace(limb, Vec3(Eigen::Vector3f::UnitZ()));
}

// mid_axis unset: the hinge from the input pose's bend, else (a straight
// limb) from the pole, else from the rest pose, else (0, 0, 1). See the
// header. `pole_dir` is the pole in the start joint's rotation frame.
HingeAxis DeriveMidAxis(const TwoBoneIkJob& job, const ChainView& chain,
                        const LimbFrame& limb, Vec3 pole_dir,
                        TwoBoneIkHinge* source) {
  HingeAxis axis;
  if (BendPlaneAxis(limb, &axis)) {
    *source = TwoBoneIkHinge::kPoseBend;
    return axis;
  }
  // The mid joint bends toward the pole: with the limb along s and the mid
  // joint offset toward m, the opening axis is s x m.
  const Vec3 along = limb.bone1 + limb.bone2;
  const Vec3 toward_pole = along.cross(pole_dir);
  const float p2 = toward_pole.squaredNorm();
  if (p2 > kStraightSine2 * along.squaredNorm() * pole_dir.squaredNorm()) {
    *source = TwoBoneIkHinge::kPole;
    return FromStartFrame(limb, toward_pole, p2);
  }
  return RestPoseMidAxis(job, chain, limb, source);
}

}  // namespace

absl::Status TwoBoneIkJob::Validate() const {
  if (LooksValid(*this)) return absl::OkStatus();
  return Diagnose(*this);
}

absl::Status TwoBoneIkJob::Run() const {
  // The screen inlined here (not Validate()): the solve reuses its loads.
  if (!LooksValid(*this)) {
    if (absl::Status s = Diagnose(*this); !s.ok()) return s;
  }

  const Skeleton& skel = *skeleton;
  const ChainView chain = ViewChain(*this);
  // Read everything from `input` before writing: `output` may alias it.
  const Eigen::Quaternionf start_local = chain.start->rotation;
  const Eigen::Quaternionf mid_local = chain.mid->rotation;
  const Eigen::Quaternionf end_local = chain.end->rotation;

  // The start joint's model position and rotation, from its parent's.
  const Transform& parent_model = *chain.parent_model;
  const Transform& start_tf = *chain.start;
  Transform start_model;
  CombineTo(parent_model, start_tf, &start_model);
  const Vec3 a_pos(start_model.translation);
  const Eigen::Quaternionf& start_rotation = start_model.rotation;

  // Everything below is expressed in the start joint's rotation frame
  // (model-space vectors rotated by the inverse of its model rotation, origin
  // on the start joint), where the start joint's local correction is a plain
  // left-multiplied rotation.
  const LimbFrame limb =
      ComposeLimb(*this, input.data(), chain.direct, start_model.scale);

  if (output.data() != input.data()) {
    std::copy(input.begin(), input.end(), output.begin());
  }

  const float w = std::clamp(weight, 0.0f, 1.0f);
  const Eigen::Quaternionf inv_start = start_rotation.conjugate();
  const Eigen::Quaternionf& start_to_mid = limb.start_to_mid;
  const Vec3& bone1 = limb.bone1;
  const Vec3& bone2 = limb.bone2;
  const Vec3 to_target = Rotate(inv_start, Vec3(target) - a_pos);
  const float l1 = bone1.norm();
  const float l2 = bone2.norm();
  const float chain_length = l1 + l2;

  TwoBoneIkResult res;
  if (w == 0.0f) {
    // Nothing to blend in: the output is the input copy, bit for bit.
    res.error = (to_target - bone1 - bone2).norm();
    // A distance that overflows float is never within tolerance, even of a
    // chain whose own length overflowed too.
    res.reached =
        std::isfinite(res.error) && res.error <= reach_tolerance * chain_length;
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
  const Vec3 b1 = bone1 * stretch_ratio;
  const Vec3 b2 = bone2 * stretch_ratio;

  // 2. Mid joint: turn bone 2 about the hinge axis u until the start-to-end
  // distance is `reach`. With a = start - mid and p(phi) bone 2 turned by
  // phi, |a - p|^2 = reach^2 means a.p(phi) = K, and a.p(phi) = c0 +
  // R cos(phi - phi0): the law of cosines, generalised to an axis that need
  // not be perpendicular to the limb. Of the two solutions, phi0 + delta is
  // the one where turning further about u opens the limb (ozz's convention
  // for mid_axis). Out-of-range K (unreachable, or closer than the bones
  // allow) clamps to straight or folded.
  const auto pole_direction = [&] {
    return Rotate(inv_start, bend_goal.has_value() ? Vec3(*bend_goal) - a_pos
                                                   : Vec3(pole_vector));
  };
  HingeAxis hinge_axis;
  TwoBoneIkHinge hinge_source = TwoBoneIkHinge::kMidAxis;
  if (mid_axis.has_value()) {
    const Vec3 mid_axis_v(*mid_axis);
    const float axis_len2 = mid_axis_v.squaredNorm();
    hinge_axis = FromMidSpace(limb, axis_len2 == 1.0f
                                        ? mid_axis_v
                                        : mid_axis_v / std::sqrt(axis_len2));
  } else {
    hinge_axis =
        DeriveMidAxis(*this, chain, limb, pole_direction(), &hinge_source);
  }
  const Vec3& axis = hinge_axis.mid;
  const Vec3& u = hinge_axis.start;
  const Vec3 a = -b1;
  const float k_target =
      0.5f * (b1.squaredNorm() + b2.squaredNorm() - reach * reach);
  const Vec3 p_par = b2.dot(u) * u;
  const Vec3 p_perp = b2 - p_par;
  const Vec3 u_x_p = u.cross(p_perp);
  const float c0 = a.dot(p_par);
  const float x = a.dot(p_perp);
  const float y = a.dot(u_x_p);
  const float r2 = x * x + y * y;
  const float r = std::sqrt(r2);
  Eigen::Quaternionf hinge = Eigen::Quaternionf::Identity();
  Vec3 p = b2;
  // r vanishes when a bone has no length or lies along the axis: the hinge
  // then cannot change the reach, so it stays as it is.
  if (r > 1e-6f * (l1 * l2 * stretch_ratio * stretch_ratio)) {
    // r cos(delta) and r sin(delta), clamped to straight or folded when K is
    // out of range. Not normalised by r first: r sin(delta) needs one square
    // root, of (r - r cos) (r + r cos), which keeps its precision near the
    // limb's full extension, and no division on the way to the end joint.
    float rc = k_target - c0;
    float rs = 0.0f;
    if (rc >= r) {
      rc = r;
    } else if (rc <= -r) {
      rc = -r;
    } else {
      rs = std::sqrt((r - rc) * (r + rc));
    }
    // cos(phi0 + delta) and sin(phi0 + delta), with r cos(phi0) = x and
    // r sin(phi0) = y.
    const float inv_r2 = 1.0f / r2;
    const float cos_phi = (x * rc - y * rs) * inv_r2;
    const float sin_phi = (y * rc + x * rs) * inv_r2;
    hinge = AxisRotationFromUnitCosSin(axis.ToEigen(), cos_phi, sin_phi);
    p = p_par + cos_phi * p_perp + sin_phi * u_x_p;
  }
  const Vec3 start_to_end = b1 + p;

  // 3. Start joint: swing the limb onto the target line and roll it about
  // that line to put the mid joint on the pole's side (one frame-to-frame
  // rotation), then twist.
  Eigen::Quaternionf correction = Eigen::Quaternionf::Identity();
  if (d > 0.0f) {
    // A (nearly) straight limb has no mid joint offset to roll toward the
    // pole; the plane perpendicular to the hinge axis stands in for it, the
    // limit of the offset's direction as the limb straightens. (The offset
    // is projected here although RotationBetweenFrames projects again: one
    // projection of b1, mostly along the limb, leaves a rounding error
    // along it that is large next to a small offset; the second removes it.)
    const float v2 = start_to_end.squaredNorm();
    const Vec3 mid_off =
        v2 > 0.0f ? b1 - (b1.dot(start_to_end) * (1.0f / v2)) * start_to_end
                  : b1;
    const Vec3 bend_ref = mid_off.squaredNorm() > 1e-6f * b1.squaredNorm()
                              ? mid_off
                              : u.cross(start_to_end);
    const Vec3 pole_dir = pole_direction();
    correction =
        RotationBetweenFrames(start_to_end, bend_ref, to_target, pole_dir);
    if (twist_angle != 0.0f) {
      const Eigen::Vector3f t_hat = (to_target * (1.0f / d)).ToEigen();
      correction = QuaternionFromAngleAxis(twist_angle, t_hat) * correction;
    }
  }

  // 4. Weight, then write.
  float applied_stretch = stretch_ratio;
  if (w < 1.0f) {
    correction = PartialRotation(correction, w);
    hinge = PartialRotation(hinge, w);
    applied_stretch = 1.0f + (stretch_ratio - 1.0f) * w;
  }
  Transform* out = output.data();
  out[start_joint].rotation = start_local * correction;
  out[mid_joint].rotation = mid_local * hinge;
  if (applied_stretch != 1.0f) {
    ForEachBelowOnPath(skel, start_joint, end_joint, [&](int j) {
      out[j].translation = input[j].translation * applied_stretch;
    });
  }
  if (end_rotation.has_value()) {
    const float ew = w * std::clamp(end_rotation_weight, 0.0f, 1.0f);
    if (ew > 0.0f) {
      // End's model rotation after the solve: its rotation relative to the
      // mid joint is unchanged.
      const Eigen::Quaternionf end_solved =
          start_rotation * correction * start_to_mid * hinge * limb.mid_to_end;
      const Eigen::Quaternionf delta =
          end_solved.conjugate() * end_rotation->normalized();
      out[end_joint].rotation =
          end_local * (ew < 1.0f ? PartialRotation(delta, ew) : delta);
    }
  }

  // 5. Where the end joint landed, for the result (skipped when nobody asks).
  if (result == nullptr) return absl::OkStatus();
  Vec3 end_s;
  if (w == 1.0f) {
    end_s = Rotate(correction, start_to_end);
  } else {
    const Eigen::Quaternionf hinge_s =
        start_to_mid * hinge * start_to_mid.conjugate();
    end_s =
        Rotate(correction, (bone1 + Rotate(hinge_s, bone2)) * applied_stretch);
  }
  res.error = (to_target - end_s).norm();
  res.reached = std::isfinite(res.error) &&
                res.error <= reach_tolerance * chain_length * applied_stretch;
  res.iterations = 1;
  res.stretch = applied_stretch;
  res.hinge = hinge_source;
  *result = res;
  return absl::OkStatus();
}

}  // namespace posewire
