// Joint limits for the chain IK solvers (CCD, FABRIK): the local rotations a
// joint may take, and the projection of any rotation onto that set.
//
// Three kinds, all applied to a joint's local rotation (relative to its
// parent), as the Blade engine's IK notes define them (docs/REFERENCES.md):
//  - Euler: min/max per axis for the angles of a stated rotation order
//    (the limit bounds the joint's state, not the step a solver takes).
//    Each angle is clamped independently, as the Blade notes do.
//  - Swing-twist (ball and socket, Hands-on C++ Game Animation Programming
//    ch. 13): a cone of half-angle max_swing around a twist axis, plus a twist
//    range about that axis.
//  - Hinge: one rotational degree of freedom about an axis, with a min/max
//    angle; any off-axis part of the rotation is removed.
// Every limit is expressed relative to a `reference` rotation: the limited
// quantity is conj(reference) * local. Identity means "the raw local
// rotation" (the Blade notes, and BVH rigs whose rest rotations are identity);
// the rest rotation means "relative to the bind pose" (glTF rigs).
//
// Also here: signed 2D angle limits for planar follow chains (the angle
// from one segment to the next, measured about the plane normal), which act
// on directions rather than on local rotations; FABRIK uses them in its
// position passes.
#ifndef POSEWIRE_SOLVER_CORE_CHAIN_IK_JOINT_LIMITS_H_
#define POSEWIRE_SOLVER_CORE_CHAIN_IK_JOINT_LIMITS_H_

#include <Eigen/Geometry>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "solver_core/model/skeleton.h"

namespace posewire {

// Order of the elementary rotations of an Euler triple. kXYZ means
// q = Rx(x) * Ry(y) * Rz(z): the product of the axis rotations in the order
// listed, the same convention as BVH CHANNELS lines (intrinsic X, then Y,
// then Z).
enum class EulerOrder { kXYZ, kXZY, kYXZ, kYZX, kZXY, kZYX };

const char* EulerOrderName(EulerOrder order);

// Euler angles of `q` in radians, indexed by axis (x, y, z), not by position
// in the order. Canonical range: the middle axis of the order in
// [-pi/2, pi/2], the other two in [-pi, pi]. At gimbal lock (middle angle
// +-pi/2) the last axis gets 0 and the first takes the whole remaining
// rotation.
Eigen::Vector3f ToEuler(const Eigen::Quaternionf& q, EulerOrder order);

// The rotation with Euler angles `angles` (indexed by axis) in `order`.
Eigen::Quaternionf FromEuler(const Eigen::Vector3f& angles, EulerOrder order);

// Index (0 = x, 1 = y, 2 = z) of the axis at `position` (0..2) in `order`.
int EulerAxisAt(EulerOrder order, int position);

// q = swing * twist, where twist is a rotation about `axis` (unit) and swing
// a rotation about an axis perpendicular to it.
struct SwingTwistParts {
  Eigen::Quaternionf swing = Eigen::Quaternionf::Identity();
  Eigen::Quaternionf twist = Eigen::Quaternionf::Identity();
  float swing_angle = 0.0f;  // in [0, pi]
  float twist_angle = 0.0f;  // signed, in [-pi, pi], right-handed about axis
};

// Splits `q`. When q swings the axis by exactly pi the twist is undefined and
// reported as zero.
SwingTwistParts DecomposeSwingTwist(const Eigen::Quaternionf& q,
                                    const Eigen::Vector3f& axis);

enum class JointLimitType { kNone, kEuler, kSwingTwist, kHinge };

struct JointLimit {
  JointLimitType type = JointLimitType::kNone;
  // The limited rotation is conj(reference) * local (see file comment).
  Eigen::Quaternionf reference = Eigen::Quaternionf::Identity();

  // kEuler: angle ranges in radians, indexed by axis (x, y, z). Outer axes
  // within [-pi, pi], the middle axis of `euler_order` within [-pi/2, pi/2].
  EulerOrder euler_order = EulerOrder::kXYZ;
  Eigen::Vector3f euler_min = Eigen::Vector3f::Constant(-EIGEN_PI);
  Eigen::Vector3f euler_max = Eigen::Vector3f::Constant(EIGEN_PI);

  // kSwingTwist: twist axis; kHinge: hinge axis. Unit length, in the
  // reference frame (the joint's own frame when reference is identity).
  Eigen::Vector3f axis = Eigen::Vector3f::UnitY();
  // kSwingTwist: cone half-angle in [0, pi].
  float max_swing = EIGEN_PI;
  // kSwingTwist: twist range; kHinge: hinge angle range. Radians, within
  // [-pi, pi], min <= max.
  float min_angle = -EIGEN_PI;
  float max_angle = EIGEN_PI;
};

JointLimit EulerLimit(EulerOrder order, const Eigen::Vector3f& min,
                      const Eigen::Vector3f& max);
JointLimit SwingTwistLimit(const Eigen::Vector3f& twist_axis, float max_swing,
                           float min_twist, float max_twist);
JointLimit HingeLimit(const Eigen::Vector3f& axis, float min_angle,
                      float max_angle);

// A quick test that a rotation lies within an Euler limit, for a caller
// that checks many rotations against one limit (a referee): no arctangent.
// Each axis's range is an arc, tested as the angle's direction against the
// arc's middle direction and the cosine of its half-width, the arc shrunk
// by kEulerScreenMargin on each side so that float rounding never admits an
// angle ToEuler would put outside. So it is conservative: "surely within"
// or "unsure" (near a bound, at gimbal lock, or a range too narrow to
// shrink), where the caller computes the angles; a check that uses it
// reports exactly what one without it reports.
inline constexpr float kEulerScreenMargin = 1e-2f;

struct EulerRangeScreen {
  // False: every rotation is "unsure" (not an Euler limit, or its ranges
  // too narrow).
  bool usable = false;
  EulerOrder order = EulerOrder::kXYZ;
  // The order's axes, first to last (ToEuler's i, j, k), and whether they
  // are a cyclic (even) permutation of x, y, z: kept so that a screen
  // needs no lookup.
  int first = 0, middle = 1, last = 2;
  bool even = true;
  // Per axis (x, y, z): the range's middle direction and the cosine of its
  // shrunk half-width (-2 when the range is the whole circle).
  Eigen::Vector3f cos_mid = Eigen::Vector3f::Zero();
  Eigen::Vector3f sin_mid = Eigen::Vector3f::Zero();
  Eigen::Vector3f cos_half = Eigen::Vector3f::Zero();
};

// Built once per limit (a valid one, ValidateJointLimit).
EulerRangeScreen MakeEulerRangeScreen(const JointLimit& limit);

// True when every Euler angle of `q` (relative to the limit's reference, as
// ToEuler takes it) lies within the screened limit's ranges.
bool SurelyWithinEulerRanges(const EulerRangeScreen& screen,
                             const Eigen::Quaternionf& q);

// Checks finiteness, ranges (min <= max, within the canonical intervals
// above), unit axis (within 1e-3) and unit reference. Errors read
// "<field>[<joint>] '<name>': ...".
absl::Status ValidateJointLimit(const JointLimit& limit,
                                absl::string_view field, int joint,
                                absl::string_view joint_name);

// Checks a per-joint limit table: empty, or one entry per skeleton joint;
// the entries of `used` joints must pass ValidateJointLimit.
absl::Status ValidateJointLimits(const Skeleton& skeleton,
                                 absl::Span<const JointLimit> limits,
                                 absl::Span<const int> used,
                                 absl::string_view field);

// The limit of `joint` in a per-joint table, or nullptr when the table is
// empty or the joint's entry is kNone.
inline const JointLimit* FindJointLimit(absl::Span<const JointLimit> limits,
                                        int joint) {
  if (limits.empty() || limits[joint].type == JointLimitType::kNone) {
    return nullptr;
  }
  return &limits[joint];
}

// The Blade notes' heuristic against joints stuck at a limit (a straight knee
// that CCD keeps trying to bend the wrong way): when an angle is clamped to its
// lower bound and that bound is above -threshold, or to its upper bound and
// that bound is below +threshold, it is pushed `fraction` of its range into
// the allowed interval instead, so the next step starts bent the way the
// joint can bend. The notes hard-code threshold 5e-2 and write
// `pitch = max * 1e-2`, which is what min + fraction * (max - min) gives for
// a bound at zero; for other bounds this form stays inside the range.
struct LimitNudge {
  float threshold = 0.05f;
  float fraction = 0.01f;
};

// The rotation inside `limit` for `local` (a unit quaternion): unchanged when
// already inside; otherwise each limited parameter (Euler angle, twist,
// swing, hinge angle) is clamped to its nearest bound (circularly for angles
// that wrap at pi). With `nudge`, the nudge heuristic above applies to
// Euler, twist and hinge angles. The result is a unit quaternion.
Eigen::Quaternionf ApplyJointLimit(const JointLimit& limit,
                                   const Eigen::Quaternionf& local,
                                   const LimitNudge* nudge = nullptr);

// The local rotation inside `limit` that best turns `bone` (a vector in the
// joint's own frame) toward `want` (a direction in the parent's frame),
// starting from `local`. What FABRIK needs when it re-aims a limited joint:
// clamping the free aim (ApplyJointLimit after a minimal swing) can land far
// from the best reachable direction, e.g. when the swing is mostly off a
// hinge's plane. Hinge: the exact best angle about the axis, clamped.
// Euler: coordinate descent, each axis in turn set to its exact best angle
// and clamped, four sweeps, starting from the clamped minimal swing.
// Swing-twist: up to four rounds of minimal swing then ApplyJointLimit,
// until the clamp changes nothing (clamping the twist turns an off-axis
// bone away again). kNone: the minimal swing.
// The Euler and swing-twist answers are close, not exact projections.
Eigen::Quaternionf AimWithinJointLimit(const JointLimit& limit,
                                       const Eigen::Quaternionf& local,
                                       const Eigen::Vector3f& bone,
                                       const Eigen::Vector3f& want);

// A planar follow chain's per-segment limit: the signed angle (radians,
// right-handed about the plane normal) from the previous segment's direction to
// this one's, within [min, max] subset of [-pi, pi]. The default (-180, 180)
// means unlimited.
struct SignedAngleRange {
  float min = -EIGEN_PI;
  float max = EIGEN_PI;
};

absl::Status ValidateSignedAngleRange(const SignedAngleRange& range,
                                      absl::string_view field, int index);

// Signed angle from `from` to `to` about `normal` (unit), both projected onto
// the plane perpendicular to it; 0 when either projection vanishes.
float SignedAngle(const Eigen::Vector3f& from, const Eigen::Vector3f& to,
                  const Eigen::Vector3f& normal);

// `dir` projected onto the plane perpendicular to `normal` (unit) and turned
// within it so that SignedAngle(reference, result, normal) lies in `range`.
// Returns a unit vector, or the unit projection of `dir` unchanged when
// `reference` has no in-plane component. `dir`'s projection must be nonzero.
Eigen::Vector3f ClampSignedAngle(const Eigen::Vector3f& reference,
                                 const Eigen::Vector3f& dir,
                                 const Eigen::Vector3f& normal,
                                 const SignedAngleRange& range);

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_CHAIN_IK_JOINT_LIMITS_H_
