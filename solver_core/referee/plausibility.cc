#include "solver_core/referee/plausibility.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "solver_core/model/deterministic_math.h"
#include "solver_core/model/internal/simd_lanes.h"
#include "solver_core/model/pose.h"

namespace posewire {
namespace {

using transform_internal::Multiply;

constexpr float kPi = static_cast<float>(EIGEN_PI);
// Bones shorter than this fraction of the rig size compare their change
// against it instead of their own length.
constexpr float kMinBoneFraction = 0.02f;
// The screens in lanes read a pose's transforms as 16-byte rows
// (translation, rotation, scale, each padded); without that layout every
// joint takes the scalar path.
constexpr bool kLanes = kSimdTransformLayout;

Eigen::Quaternionf Conjugate(const Eigen::Quaternionf& q) {
  return Eigen::Quaternionf(q.w(), -q.x(), -q.y(), -q.z());
}

// The rotation vector (axis times angle, angle in [0, pi]) of unit `q`.
Eigen::Vector3f RotationVector(const Eigen::Quaternionf& q) {
  const float sign = q.w() < 0.0f ? -1.0f : 1.0f;
  const Eigen::Vector3f v = q.vec() * sign;
  const float s = std::sqrt(v.squaredNorm());
  if (s == 0.0f) return Eigen::Vector3f::Zero();
  const float angle = 2.0f * std::atan2(s, q.w() * sign);
  return v * (angle / s);
}

// The angle in [0, pi] of unit `q`.
float RotationAngle(const Eigen::Quaternionf& q) {
  const float s = std::sqrt(q.vec().squaredNorm());
  return 2.0f * std::atan2(s, std::fabs(q.w()));
}

// Joint j's rotation, the placement's included for a root.
Eigen::Quaternionf JointRotation(const Skeleton& skeleton,
                                 absl::Span<const Transform> pose,
                                 const Transform& placement, int j) {
  return skeleton.parent(j) == kNoParent
             ? Multiply(placement.rotation, pose[j].rotation)
             : pose[j].rotation;
}

absl::Status CheckThreshold(float value, const char* name) {
  if (!std::isfinite(value) || value <= 0.0f) {
    return absl::InvalidArgumentError(
        absl::StrCat("plausibility.thresholds.", name, ": ", value,
                     " must be finite and positive"));
  }
  return absl::OkStatus();
}

absl::Status CheckPlacement(const Transform& t, const char* field) {
  if (TransformLooksValid(t)) return absl::OkStatus();
  if (!IsFinite(t)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "plausibility.", field, ": has a NaN or infinite component"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("plausibility.", field, ": rotation norm ",
                   t.rotation.norm(), " is not 1; send a unit quaternion"));
}

absl::Status CheckDt(float dt, const char* field) {
  if (!std::isfinite(dt) || dt <= 0.0f) {
    return absl::InvalidArgumentError(
        absl::StrCat("plausibility.", field, ": ", dt,
                     " seconds; a later frame needs a positive, finite time "
                     "step (time never goes backwards)"));
  }
  return absl::OkStatus();
}

// conj(p) q for four pairs of quaternions at once (in lanes: x, y, z, w),
// with the operations Multiply performs on Conjugate(p), in its order.
inline void MultiplyConjugate(const lanes::F4 p[4], const lanes::F4 q[4],
                              lanes::F4 out[4]) {
  using lanes::F4;
  const F4 pw = p[3], px = -p[0], py = -p[1], pz = -p[2];
  const F4 qx = q[0], qy = q[1], qz = q[2], qw = q[3];
  out[0] = (pw * qx + px * qw) + (py * qz - pz * qy);
  out[1] = (pw * qy - px * qz) + (py * qw + pz * qx);
  out[2] = (pw * qz + px * qy) + (pz * qw - py * qx);
  out[3] = (pw * qw - px * qx) - (py * qy + pz * qz);
}

// The vector part's squared norm of conj(q1) q0, as Eigen's squaredNorm
// sums it.
inline lanes::F4 StepSquaredSine(const lanes::F4 q1[4], const lanes::F4 q0[4]) {
  lanes::F4 step[4];
  MultiplyConjugate(q1, q0, step);
  return lanes::SquaredNorm(lanes::V4{step[0], step[1], step[2]});
}

// Joint j's rotation row (x, y, z, w).
const float* RotationRow(absl::Span<const Transform> pose, int j) {
  return pose[j].rotation.coeffs().data();
}

// The first joint of group g of EulerRangeScreenGroupCount(n): 4g, and for
// the last group of a count that is no multiple of four, n - 4.
int RangeScreenGroupStart(int n, int g) {
  return std::min(g * lanes::kWidth, n - lanes::kWidth);
}

// The group that starts at joint j (RangeScreenGroupStart's inverse).
int RangeScreenGroupIndex(int j) {
  return (j + lanes::kWidth - 1) / lanes::kWidth;
}

// Bit k set: joint j + k's motion is surely within the velocity screen
// and, with `previous2`, the acceleration screen of PlausibilityJob::Run
// (the same quantities, four joints at once); the caller measures the
// others exactly. The placement is not applied: roots are for the caller.
int MotionSurelyWithin(absl::Span<const Transform> input,
                       absl::Span<const Transform> previous,
                       absl::Span<const Transform> previous2, int j,
                       float max_step_sin, float dt, float previous_dt,
                       float max_accel_sum) {
  using lanes::F4;
  F4 q0[4], q1[4];
  lanes::LoadColumns(RotationRow(input, j), RotationRow(input, j + 1),
                     RotationRow(input, j + 2), RotationRow(input, j + 3), q0);
  lanes::LoadColumns(RotationRow(previous, j), RotationRow(previous, j + 1),
                     RotationRow(previous, j + 2), RotationRow(previous, j + 3),
                     q1);
  const F4 s0 = lanes::Sqrt(StepSquaredSine(q1, q0));
  lanes::M4 unsure = lanes::NotLe(s0, lanes::Splat(max_step_sin));
  if (!previous2.empty()) {
    F4 q2[4];
    lanes::LoadColumns(RotationRow(previous2, j), RotationRow(previous2, j + 1),
                       RotationRow(previous2, j + 2),
                       RotationRow(previous2, j + 3), q2);
    const F4 s1 = lanes::Sqrt(StepSquaredSine(q2, q1));
    unsure = unsure | lanes::NotLe(s0 / lanes::Splat(dt) +
                                       s1 / lanes::Splat(previous_dt),
                                   lanes::Splat(max_accel_sum));
  }
  return ~lanes::Bits(unsure) & 0xF;
}

// The group of joints j .. j + 3 (MakeEulerRangeScreenGroups' layout).
EulerRangeScreenGroup MakeGroup(absl::Span<const JointLimit> limits,
                                absl::Span<const EulerRangeScreen> screens,
                                int j) {
  EulerRangeScreenGroup group;
  const EulerRangeScreen* order = nullptr;
  for (int k = 0; k < lanes::kWidth; ++k) {
    group.reference[3][k] = 1.0f;  // the identity, unless computed
    const EulerRangeScreen& screen = screens[j + k];
    if (limits[j + k].type == JointLimitType::kNone) {
      group.free |= 1 << k;
      continue;
    }
    if (!screen.usable) continue;
    if (order == nullptr) order = &screen;
    if (screen.order != order->order) continue;
    group.computed |= 1 << k;
    const Eigen::Vector4f& reference = limits[j + k].reference.coeffs();
    for (int r = 0; r < 4; ++r) group.reference[r][k] = reference[r];
    for (int axis = 0; axis < 3; ++axis) {
      group.cos_mid[axis][k] = screen.cos_mid[axis];
      group.sin_mid[axis][k] = screen.sin_mid[axis];
      group.cos_half[axis][k] = screen.cos_half[axis];
    }
  }
  if (order != nullptr) {
    group.first = order->first;
    group.middle = order->middle;
    group.last = order->last;
    group.sigma = order->even ? 1.0f : -1.0f;
  }
  return group;
}

// Bit k set: joint j + k surely passes its range check: no limit, or an
// Euler limit whose screen (SurelyWithinEulerRanges) is sure, computed for
// the four joints of `group` at once. The same quantities as the scalar
// screen, summed in another order where that is simpler: the screen's
// margin (kEulerScreenMargin) is far above rounding, and an unsure joint
// is measured exactly.
int RangesSurelyWithin(const EulerRangeScreenGroup& group,
                       absl::Span<const Transform> input, int j) {
  using lanes::F4;
  if (group.computed == 0) return group.free;
  F4 local[4], reference[4], q[4];
  lanes::LoadColumns(RotationRow(input, j), RotationRow(input, j + 1),
                     RotationRow(input, j + 2), RotationRow(input, j + 3),
                     local);
  for (int r = 0; r < 4; ++r) reference[r] = lanes::Load(group.reference[r]);
  MultiplyConjugate(reference, local, q);
  const F4 norm =
      lanes::Sqrt((q[0] * q[0] + q[2] * q[2]) + (q[1] * q[1] + q[3] * q[3]));
  // The order's axes: a, b, c are the vector components along its first,
  // middle and last axes; sigma flips the off-diagonal signs of an odd
  // order (as ToEuler's s does).
  const F4 a = q[group.first] / norm, b = q[group.middle] / norm,
           c = q[group.last] / norm, w = q[3] / norm;
  const F4 sigma = lanes::Splat(group.sigma);
  const F4 one = lanes::Splat(1.0f), two = lanes::Splat(2.0f);
  const F4 ta = two * a, tb = two * b, tc = two * c;
  // The rotation matrix's entries ToEuler reads, m(row, column) over the
  // order's axes.
  const F4 m_ii = one - (tb * b + tc * c);
  const F4 m_kk = one - (ta * a + tb * b);
  const F4 m_ij = tb * a - sigma * (tc * w);
  const F4 m_ik = tc * a + sigma * (tb * w);
  const F4 m_jk = tc * b - sigma * (ta * w);
  const F4 cos_b = lanes::Sqrt(m_ii * m_ii + m_ij * m_ij);
  const F4 yb = sigma * m_ik;
  const F4 rb = lanes::Sqrt(yb * yb + cos_b * cos_b);
  // An angle atan2(y, x) in its arc: x cos_mid + y sin_mid >= r cos_half,
  // with each lane's constants for that axis (a lane outside `computed`
  // holds zeros and is masked out).
  auto within = [&group](int axis, F4 y, F4 x, F4 r) {
    const F4 lhs = x * lanes::Load(group.cos_mid[axis]) +
                   y * lanes::Load(group.sin_mid[axis]);
    return lhs >= r * lanes::Load(group.cos_half[axis]);
  };
  const lanes::M4 sure = (cos_b > lanes::Splat(0.1f)) &
                         within(group.middle, yb, cos_b, rb) &
                         within(group.first, -(sigma * m_jk), m_kk, cos_b) &
                         within(group.last, -(sigma * m_ij), m_ii, cos_b);
  return group.free | (group.computed & lanes::Bits(sure));
}

// Bit k set: joint j + k surely passes the bone checks: its length
// (a joint with a parent) and its scale change within the thresholds, the
// scalar loop's quantities for four joints at once.
int BonesSurelyWithin(const Skeleton& skeleton,
                      absl::Span<const Transform> input, int j, float min_bone,
                      float max_length_change, float max_scale_change) {
  using lanes::F4;
  absl::Span<const Transform> rest = skeleton.rest_pose();
  auto row = [](absl::Span<const Transform> pose, int joint, bool scale) {
    const Transform& t = pose[joint];
    return scale ? t.scale.data() : t.translation.data();
  };
  F4 in[4], at_rest[4], in_scale[4], rest_scale[4];
  for (auto [pose, scale, out] :
       {std::tuple{input, false, in}, std::tuple{rest, false, at_rest},
        std::tuple{input, true, in_scale},
        std::tuple{rest, true, rest_scale}}) {
    lanes::LoadColumns(row(pose, j, scale), row(pose, j + 1, scale),
                       row(pose, j + 2, scale), row(pose, j + 3, scale), out);
  }
  const F4 length = lanes::Norm(lanes::V4{in[0], in[1], in[2]});
  const F4 rest_length =
      lanes::Norm(lanes::V4{at_rest[0], at_rest[1], at_rest[2]});
  const F4 change = lanes::Abs(length - rest_length) /
                    lanes::Max(rest_length, lanes::Splat(min_bone));
  const F4 scale_change =
      lanes::Max(lanes::Max(lanes::Abs(in_scale[0] - rest_scale[0]),
                            lanes::Abs(in_scale[1] - rest_scale[1])),
                 lanes::Abs(in_scale[2] - rest_scale[2]));
  const lanes::M4 sure = (change <= lanes::Splat(max_length_change)) &
                         (scale_change <= lanes::Splat(max_scale_change));
  return lanes::Bits(sure);
}

// Calls `check(j)` for every joint j < n, in joint order, except those a
// screen in lanes is sure of: `sure(j)` screens joints j .. j + 3 and sets
// bit k when joint j + k surely passes. Without lanes, every joint is
// checked.
template <typename Sure, typename Check>
void CheckUnlessSure(int n, const Sure& sure, const Check& check) {
  if (!kLanes || n < lanes::kWidth) {
    for (int j = 0; j < n; ++j) check(j);
    return;
  }
  int j = 0;
  for (; j + lanes::kWidth <= n; j += lanes::kWidth) {
    const int bits = sure(j);
    for (int k = 0; k < lanes::kWidth; ++k) {
      if ((bits >> k & 1) == 0) check(j + k);
    }
  }
  if (j == n) return;
  // The joints past the last multiple of four: screened as the last four
  // joints, of which the first ones were checked above.
  const int start = n - lanes::kWidth;
  const int bits = sure(start);
  for (; j < n; ++j) {
    if ((bits >> (j - start) & 1) == 0) check(j);
  }
}

// Bit k set: joint j + k is a root (its placement, not a parent, holds it).
int RootBits(const Skeleton& skeleton, int j) {
  int bits = 0;
  for (int k = 0; k < lanes::kWidth; ++k) {
    if (skeleton.parent(j + k) == kNoParent) bits |= 1 << k;
  }
  return bits;
}

class Reporter {
 public:
  Reporter(PlausibilityResult* result, int64_t frame)
      : result_(result), frame_(frame) {}
  void Add(PlausibilityCheck check, int joint, int axis, float measured,
           float bound) {
    result_->violations.push_back({.check = check,
                                   .joint = joint,
                                   .axis = axis,
                                   .frame = frame_,
                                   .measured = measured,
                                   .bound = bound});
  }

 private:
  PlausibilityResult* result_;
  int64_t frame_;
};

// Range of motion of one joint.
void CheckRange(const JointLimit& limit, const EulerRangeScreen* screen,
                const Eigen::Quaternionf& local, float tolerance, int joint,
                Reporter& report) {
  const Eigen::Quaternionf q = Multiply(Conjugate(limit.reference), local);
  switch (limit.type) {
    case JointLimitType::kNone:
      return;
    case JointLimitType::kEuler: {
      if (screen != nullptr && SurelyWithinEulerRanges(*screen, q)) return;
      const Eigen::Vector3f e = ToEuler(q, limit.euler_order);
      for (int axis = 0; axis < 3; ++axis) {
        if (e[axis] < limit.euler_min[axis] - tolerance) {
          report.Add(PlausibilityCheck::kRangeOfMotion, joint, axis, e[axis],
                     limit.euler_min[axis]);
        } else if (e[axis] > limit.euler_max[axis] + tolerance) {
          report.Add(PlausibilityCheck::kRangeOfMotion, joint, axis, e[axis],
                     limit.euler_max[axis]);
        }
      }
      return;
    }
    case JointLimitType::kSwingTwist:
    case JointLimitType::kHinge: {
      const SwingTwistParts p = DecomposeSwingTwist(q, limit.axis);
      if (p.twist_angle < limit.min_angle - tolerance) {
        report.Add(PlausibilityCheck::kRangeOfMotion, joint, 0, p.twist_angle,
                   limit.min_angle);
      } else if (p.twist_angle > limit.max_angle + tolerance) {
        report.Add(PlausibilityCheck::kRangeOfMotion, joint, 0, p.twist_angle,
                   limit.max_angle);
      }
      // A hinge allows no swing off its axis beyond the tolerance.
      const float max_swing =
          limit.type == JointLimitType::kHinge ? 0.0f : limit.max_swing;
      if (p.swing_angle > max_swing + tolerance) {
        report.Add(PlausibilityCheck::kRangeOfMotion, joint, 1, p.swing_angle,
                   max_swing);
      }
      return;
    }
  }
}

}  // namespace

const char* PlausibilityCheckName(PlausibilityCheck check) {
  switch (check) {
    case PlausibilityCheck::kRangeOfMotion:
      return "range_of_motion";
    case PlausibilityCheck::kAngularVelocity:
      return "angular_velocity";
    case PlausibilityCheck::kAngularAcceleration:
      return "angular_acceleration";
    case PlausibilityCheck::kBoneLength:
      return "bone_length";
    case PlausibilityCheck::kScale:
      return "scale";
    case PlausibilityCheck::kRootSpeed:
      return "root_speed";
    case PlausibilityCheck::kRootAcceleration:
      return "root_acceleration";
    case PlausibilityCheck::kRootTeleport:
      return "root_teleport";
  }
  return "unknown";
}

float RigSize(const Skeleton& skeleton) {
  const int n = skeleton.num_joints();
  if (n == 0) return 1.0f;
  std::vector<Transform> model(n);
  for (int j = 0; j < n; ++j) {
    const int p = skeleton.parent(j);
    model[j] = p == kNoParent ? skeleton.rest_pose()[j]
                              : Combine(model[p], skeleton.rest_pose()[j]);
  }
  Eigen::Vector3f lo = model[0].translation, hi = lo;
  for (const Transform& t : model) {
    lo = lo.cwiseMin(t.translation);
    hi = hi.cwiseMax(t.translation);
  }
  const float size = (hi - lo).maxCoeff();
  return std::isfinite(size) && size > 0.0f ? size : 1.0f;
}

absl::Status PlausibilityJob::Validate() const {
  if (skeleton == nullptr) {
    return absl::InvalidArgumentError("plausibility.skeleton: null");
  }
  if (result == nullptr) {
    return absl::InvalidArgumentError("plausibility.result: null");
  }
  if (absl::Status s = CheckInputPose(*skeleton, input, "plausibility.input",
                                      input_validated);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckPlacement(placement, "placement"); !s.ok()) {
    return s;
  }
  if (!previous.empty()) {
    if (absl::Status s = CheckInputPose(
            *skeleton, previous, "plausibility.previous", previous_validated);
        !s.ok()) {
      return s;
    }
    if (absl::Status s =
            CheckPlacement(previous_placement, "previous_placement");
        !s.ok()) {
      return s;
    }
    if (absl::Status s = CheckDt(dt, "dt"); !s.ok()) return s;
  }
  if (!previous2.empty()) {
    if (previous.empty()) {
      return absl::InvalidArgumentError(
          "plausibility.previous2: given without plausibility.previous");
    }
    if (absl::Status s = CheckInputPose(
            *skeleton, previous2, "plausibility.previous2", previous_validated);
        !s.ok()) {
      return s;
    }
    if (absl::Status s =
            CheckPlacement(previous2_placement, "previous2_placement");
        !s.ok()) {
      return s;
    }
    if (absl::Status s = CheckDt(previous_dt, "previous_dt"); !s.ok()) {
      return s;
    }
  }
  if (!limits.empty()) {
    if (static_cast<int>(limits.size()) != skeleton->num_joints()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "plausibility.limits: ", limits.size(), " limits for a skeleton of ",
          skeleton->num_joints(), " joints (give none, or one per joint)"));
    }
    for (int j = 0; !limits_validated && j < skeleton->num_joints(); ++j) {
      if (limits[j].type == JointLimitType::kNone) continue;
      if (absl::Status s = ValidateJointLimit(limits[j], "plausibility.limits",
                                              j, skeleton->joint_name(j));
          !s.ok()) {
        return s;
      }
    }
  }
  if (!range_screens.empty() && range_screens.size() != limits.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("plausibility.range_screens: ", range_screens.size(),
                     " screens for ", limits.size(),
                     " limits (give none, or one per "
                     "limit)"));
  }
  if (!range_screen_groups.empty() &&
      (range_screens.empty() ||
       static_cast<int>(range_screen_groups.size()) !=
           EulerRangeScreenGroupCount(static_cast<int>(limits.size())))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "plausibility.range_screen_groups: ", range_screen_groups.size(),
        " groups for ", limits.size(), " limits and ", range_screens.size(),
        " screens (give none, or MakeEulerRangeScreenGroups of the limits "
        "and their screens)"));
  }
  const PlausibilityThresholds& t = thresholds;
  for (const auto& [value, name] :
       {std::pair<float, const char*>{t.range_tolerance, "range_tolerance"},
        {t.rotation_jitter, "rotation_jitter"},
        {t.position_jitter, "position_jitter"}}) {
    if (!std::isfinite(value) || value < 0.0f) {
      return absl::InvalidArgumentError(
          absl::StrCat("plausibility.thresholds.", name, ": ", value,
                       " must be finite and not negative"));
    }
  }
  if (!joint_checks.empty() &&
      static_cast<int>(joint_checks.size()) != skeleton->num_joints()) {
    return absl::InvalidArgumentError(
        absl::StrCat("plausibility.joint_checks: ", joint_checks.size(),
                     " entries for a skeleton of ", skeleton->num_joints(),
                     " joints (give none, or one per joint)"));
  }
  for (const auto& [value, name] :
       {std::pair<float, const char*>{t.max_angular_velocity,
                                      "max_angular_velocity"},
        {t.max_angular_acceleration, "max_angular_acceleration"},
        {t.max_bone_length_change, "max_bone_length_change"},
        {t.max_scale_change, "max_scale_change"},
        {t.max_root_speed, "max_root_speed"},
        {t.max_root_acceleration, "max_root_acceleration"},
        {t.teleport_distance, "teleport_distance"}}) {
    if (absl::Status s = CheckThreshold(value, name); !s.ok()) return s;
  }
  if (!std::isfinite(rig_size) || rig_size <= 0.0f) {
    return absl::InvalidArgumentError(absl::StrCat(
        "plausibility.rig_size: ", rig_size, " must be finite and positive"));
  }
  return absl::OkStatus();
}

absl::Status PlausibilityJob::Run() const {
  if (absl::Status s = Validate(); !s.ok()) return s;
  result->violations.clear();
  Reporter report(result, frame);
  const Skeleton& s = *skeleton;
  const int n = s.num_joints();
  const PlausibilityThresholds& t = thresholds;
  absl::Span<const Transform> rest = s.rest_pose();

  auto checks = [this](int j) {
    return joint_checks.empty() ? uint8_t{kCheckAll} : joint_checks[j];
  };

  // Range of motion.
  if (!limits.empty()) {
    // With screens, four joints at a time through the screen in lanes; a
    // joint it is unsure of is checked alone, in joint order.
    CheckUnlessSure(
        n,
        [&](int j) {
          if (range_screens.empty()) return 0;
          // Laid out once by the caller, or here, for this group alone.
          if (!range_screen_groups.empty()) {
            return RangesSurelyWithin(
                range_screen_groups[RangeScreenGroupIndex(j)], input, j);
          }
          return RangesSurelyWithin(MakeGroup(limits, range_screens, j), input,
                                    j);
        },
        [&](int j) {
          if ((checks(j) & kCheckRange) == 0) return;
          CheckRange(limits[j],
                     range_screens.empty() ? nullptr : &range_screens[j],
                     input[j].rotation, t.range_tolerance, j, report);
        });
  }

  // Bone lengths and scales: four joints at a time through the bounds in
  // lanes; a joint they are unsure of is measured alone, in joint order.
  const float min_bone = kMinBoneFraction * rig_size;
  auto check_bone = [&](int j) {
    if ((checks(j) & kCheckBone) == 0) return;
    if (s.parent(j) != kNoParent) {
      const float rest_length = std::sqrt(rest[j].translation.squaredNorm());
      const float length = std::sqrt(input[j].translation.squaredNorm());
      const float change =
          std::fabs(length - rest_length) / std::max(rest_length, min_bone);
      if (change > t.max_bone_length_change) {
        report.Add(PlausibilityCheck::kBoneLength, j, -1, change,
                   t.max_bone_length_change);
      }
    }
    const float scale_change =
        (input[j].scale - rest[j].scale).cwiseAbs().maxCoeff();
    if (scale_change > t.max_scale_change) {
      report.Add(PlausibilityCheck::kScale, j, -1, scale_change,
                 t.max_scale_change);
    }
  };
  // A root's translation is no bone: its lanes' length means nothing.
  CheckUnlessSure(
      n,
      [&](int j) {
        return BonesSurelyWithin(s, input, j, min_bone,
                                 t.max_bone_length_change, t.max_scale_change) &
               ~RootBits(s, j);
      },
      check_bone);

  if (!previous.empty()) {
    // Angular velocity, and acceleration with a second previous frame. The
    // rotation from one frame to the next is in the earlier frame's joint
    // space; the axis of a rotation is the same in the frame before and
    // after it, so both steps around `previous` are in its joint space.
    const bool accel = !previous2.empty();
    const float mean_dt = 0.5f * (dt + previous_dt);
    const float max_accel =
        t.max_angular_acceleration + t.rotation_jitter / (dt * dt);
    // Trigonometry only near a bound: a step's angle is 2 asin(s), s the
    // norm of its quaternion's vector part, so it passes the velocity bound
    // when s <= sin(max * dt / 2); and since 2 asin(s) <= pi s, the
    // acceleration passes when pi (s0 / dt + s1 / previous_dt) stays within
    // max_accel * mean_dt. Slightly inside both (kScreen), so that every
    // step near a bound is measured exactly.
    constexpr float kScreen = 0.9999f;
    const float half_step = 0.5f * t.max_angular_velocity * dt;
    const float max_step_sin =
        half_step >= 0.5f * kPi ? 2.0f : kScreen * dmath::Sin(half_step);
    const float max_accel_sum = kScreen * max_accel * mean_dt / kPi;
    // One joint, scalar: the screens, then the exact measures where a
    // screen is unsure.
    auto check_motion = [&](int j) {
      if ((checks(j) & kCheckMotion) == 0) return;
      const Eigen::Quaternionf q0 = JointRotation(s, input, placement, j);
      const Eigen::Quaternionf q1 =
          JointRotation(s, previous, previous_placement, j);
      const Eigen::Quaternionf step = Multiply(Conjugate(q1), q0);
      const float s0 = std::sqrt(step.vec().squaredNorm());
      if (s0 > max_step_sin) {
        const float velocity = RotationAngle(step) / dt;
        if (velocity > t.max_angular_velocity) {
          report.Add(PlausibilityCheck::kAngularVelocity, j, -1, velocity,
                     t.max_angular_velocity);
        }
      }
      if (!accel) return;
      const Eigen::Quaternionf q2 =
          JointRotation(s, previous2, previous2_placement, j);
      const Eigen::Quaternionf step1 = Multiply(Conjugate(q2), q1);
      const float s1 = std::sqrt(step1.vec().squaredNorm());
      if (s0 / dt + s1 / previous_dt <= max_accel_sum) return;
      const Eigen::Vector3f w0 = RotationVector(step) / dt;
      const Eigen::Vector3f w1 = RotationVector(step1) / previous_dt;
      const float a = std::sqrt((w0 - w1).squaredNorm()) / mean_dt;
      if (a > max_accel) {
        report.Add(PlausibilityCheck::kAngularAcceleration, j, -1, a,
                   max_accel);
      }
    };
    // Four joints at a time through the screens in lanes (honest motion
    // passes them almost everywhere); a joint they are unsure of, and a
    // root (its placement turns it), goes through check_motion, in joint
    // order, so the report is the scalar loop's.
    CheckUnlessSure(
        n,
        [&](int j) {
          return MotionSurelyWithin(input, previous, previous2, j, max_step_sin,
                                    dt, previous_dt, max_accel_sum) &
                 ~RootBits(s, j);
        },
        check_motion);

    // The root joint's world position.
    const Eigen::Vector3f p0 = placement.TransformPoint(input[0].translation);
    const Eigen::Vector3f p1 =
        previous_placement.TransformPoint(previous[0].translation);
    const float moved = std::sqrt((p0 - p1).squaredNorm()) / rig_size;
    const float speed = moved / dt;
    if (speed > t.max_root_speed) {
      report.Add(PlausibilityCheck::kRootSpeed, 0, -1, speed, t.max_root_speed);
    }
    const float teleport = t.max_root_speed * dt + t.teleport_distance;
    if (moved > teleport) {
      report.Add(PlausibilityCheck::kRootTeleport, 0, -1, moved, teleport);
    }
    if (accel) {
      const Eigen::Vector3f p2 =
          previous2_placement.TransformPoint(previous2[0].translation);
      const Eigen::Vector3f v0 = (p0 - p1) / dt;
      const Eigen::Vector3f v1 = (p1 - p2) / previous_dt;
      const float a = std::sqrt((v0 - v1).squaredNorm()) / mean_dt / rig_size;
      const float max_root_accel =
          t.max_root_acceleration + t.position_jitter / (dt * dt);
      if (a > max_root_accel) {
        report.Add(PlausibilityCheck::kRootAcceleration, 0, -1, a,
                   max_root_accel);
      }
    }
  }
  result->plausible = result->violations.empty();
  return absl::OkStatus();
}

void UseHistory(const PlausibilityHistory& history, float dt,
                PlausibilityJob& job) {
  job.previous = {};
  job.previous2 = {};
  if (history.frames < 1 || !(dt > 0.0f)) return;
  job.previous = history.poses[0];
  job.previous_placement = history.placements[0];
  job.dt = dt;
  if (history.frames < 2 || !(history.dts[0] > 0.0f)) return;
  job.previous2 = history.poses[1];
  job.previous2_placement = history.placements[1];
  job.previous_dt = history.dts[0];
}

void AdvanceHistory(const PlausibilityHistory& history,
                    absl::Span<const Transform> input,
                    const Transform& placement, float dt,
                    PlausibilityHistory& next) {
  next.poses[1].assign(history.poses[0].begin(), history.poses[0].end());
  next.placements[1] = history.placements[0];
  next.dts[1] = history.dts[0];
  next.poses[0].assign(input.begin(), input.end());
  next.placements[0] = placement;
  next.dts[0] = dt;
  next.frames = std::min(history.frames + 1, 2);
}

int EulerRangeScreenGroupCount(int joints) {
  return joints < lanes::kWidth ? 0
                                : (joints + lanes::kWidth - 1) / lanes::kWidth;
}

std::vector<EulerRangeScreenGroup> MakeEulerRangeScreenGroups(
    absl::Span<const JointLimit> limits,
    absl::Span<const EulerRangeScreen> screens) {
  std::vector<EulerRangeScreenGroup> groups;
  if (screens.size() != limits.size()) return groups;
  const int n = static_cast<int>(limits.size());
  for (int g = 0; g < EulerRangeScreenGroupCount(n); ++g) {
    groups.push_back(MakeGroup(limits, screens, RangeScreenGroupStart(n, g)));
  }
  return groups;
}

}  // namespace posewire
