// Two-bone analytic IK: turns the start and mid joints of a limb (shoulder and
// elbow, hip and knee) so the end joint (wrist, ankle) reaches a model-space
// target, in one closed-form step.
//
// Algorithm: the law of cosines gives the distance the mid joint must open or
// close the limb to (FinalIK's IKSolverTrigonometric, GetBendDirection); the
// mid joint turns about its hinge axis to get there, then the start joint
// swings the limb onto the start-to-target line and rolls it about that line
// until the mid joint points at the pole. Behaviour follows ozz-animation's
// IKTwoBoneJob (mid_axis, pole_vector, soften, twist_angle, weight), with
// these additions and differences:
// - Mid joint: the hinge equation is solved exactly for any mid_axis, so the
//   target is reached even when the axis is not perpendicular to the limb's
//   plane (ozz's solve is exact only for a perpendicular axis).
// - Hinge axis from the pose (mid_axis unset, the default): ozz needs the
//   rig's hinge axis, and no one axis fits every rig (BVH joints carry no
//   orientation, so a knee's hinge is wherever the rest offsets put it). As
//   FinalIK's SetBendPlaneToCurrent, the hinge is then the normal of the
//   plane of the start, mid and end joints in the current pose, oriented so
//   the limb bends the way it is already bent; being perpendicular to both
//   bones, it reaches every distance in [|l1 - l2|, l1 + l2], straight
//   included. A limb that is straight (or folded flat: the sine of the angle
//   between its bones at most kTwoBoneIkStraightSine, about 0.06 degrees)
//   has no such plane; the hinge is then taken, in this order, from the plane
//   of the limb and the pole (bend_goal or pole_vector; the mid joint then
//   bends toward it), from the limb's plane in the skeleton's rest pose (the
//   rest local transforms of start, mid, end and any joint between them,
//   under the current parent_model's scale), and otherwise it is the old
//   default (0, 0, 1), which the result reports (`hinge`). The derived axis
//   is fixed in the mid joint's own space, as an explicit one.
// - Pole: the mid joint is placed in the plane of start, target and pole, on
//   the pole's side (as ozz). With a straight limb there is no mid joint
//   offset to align, so the limb's plane is taken as the one perpendicular to
//   the hinge axis, which keeps the roll continuous as the limb straightens.
//   `bend_goal` (FinalIK's bend goal) is a model-space point instead: the pole
//   is the direction from the start joint to it.
// - Soften (ozz's meaning): once the start-to-target distance passes
//   soften * chain length, the reach eases toward full extension as
//   da + ds * (1 - 3^4 / (alpha + 3)^4), alpha = (d - da) / ds, da = soften *
//   L, ds = L - da, so the limb never snaps straight; soften = 1 disables it.
//   Beyond the (softened) reach the limb straightens toward the target.
// - Stretch (optional): when the target is beyond the (softened) reach, the
//   bones lengthen by up to `max_stretch` times. The translations of the
//   joints below the start joint on the chain (mid, end and any joint between
//   them) are then scaled, so bone lengths are no longer preserved.
// - Weight: each changed rotation is slerped from its input value; weight 0
//   returns the input pose bit for bit.
// - End rotation (optional): a model-space rotation for the end joint, blended
//   in with weight * end_rotation_weight.
//
// Chain: mid_joint must be a descendant of start_joint and end_joint a
// descendant of mid_joint. Joints in between (twist bones) are allowed and
// keep their local transforms; only start's and mid's rotations change (and
// end's with an end rotation target).
//
// Degenerate input has a defined result (see the tests): a target on the start
// joint folds the limb as far as the bone lengths allow and leaves the start
// joint's rotation alone; a zero-length bone, a zero scale or an all-zero
// chain leaves the rotations the solve cannot define unchanged; a target
// straight behind a straight limb swings the limb a half turn about an axis
// chosen deterministically (then rolled to the pole).
#ifndef POSEWIRE_SOLVER_CORE_ANALYTIC_IK_TWO_BONE_IK_H_
#define POSEWIRE_SOLVER_CORE_ANALYTIC_IK_TWO_BONE_IK_H_

#include <Eigen/Geometry>
#include <optional>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"

namespace posewire {

// A limb whose bones make an angle with a sine at most this (about 0.06
// degrees, straight or folded flat) has no bend plane of its own: rounding,
// not the rig, would decide it. The same bound as the biped mapping's
// straight limbs (biped_mapping.cc).
inline constexpr float kTwoBoneIkStraightSine = 1e-3f;

// Where the solve's hinge axis came from (see the file comment).
enum class TwoBoneIkHinge {
  kNotSolved,  // weight 0: nothing solved
  kMidAxis,    // the job's mid_axis
  kPoseBend,   // the plane of the limb's joints in the input pose
  kPole,       // a straight limb: the plane of the limb and the pole
  kRestPose,   // a straight limb: the limb's plane in the rest pose
  kDefault,    // no plane anywhere: (0, 0, 1), the old default
};

struct TwoBoneIkResult {
  // The end joint lies within reach_tolerance * chain length of the target.
  bool reached = false;
  // Distance from the end joint to the target after the solve, in model units.
  float error = 0.0f;
  // 1 for a solve (analytic: one step), 0 when weight 0 skipped it.
  int iterations = 0;
  // Factor applied to the bone lengths (1 unless stretch is enabled).
  float stretch = 1.0f;
  // Where the hinge axis came from; kDefault deserves a warning.
  TwoBoneIkHinge hinge = TwoBoneIkHinge::kNotSolved;
};

struct TwoBoneIkJob {
  // Inputs.
  const Skeleton* skeleton = nullptr;
  // The current local pose, one transform per joint.
  absl::Span<const Transform> input = {};
  // The model-space transform of start_joint's parent, as LocalToModelJob
  // computes it (ParentModelTransformOrRoot in local_to_model.h computes just
  // this one), or the skeleton's root space when start_joint is a root. The
  // chain's own model transforms are recomputed from `input`, so they always
  // match it.
  Transform parent_model = Transform::Identity();

  int start_joint = -1;
  int mid_joint = -1;
  int end_joint = -1;

  // Targets, in model space.
  Eigen::Vector3f target = Eigen::Vector3f::Zero();
  // Direction the mid joint should point to, seen from the start-to-target
  // line. Zero, or parallel to that line: no roll alignment.
  Eigen::Vector3f pole_vector = Eigen::Vector3f::UnitY();
  // When set, replaces pole_vector by (bend_goal - start joint position).
  std::optional<Eigen::Vector3f> bend_goal = std::nullopt;
  // When set, the end joint's model-space rotation is blended toward it.
  std::optional<Eigen::Quaternionf> end_rotation = std::nullopt;

  // Parameters.
  // The mid joint's hinge axis, in the mid joint's space (need not be unit,
  // must not be zero). A positive rotation about it opens the limb, which
  // decides which way the limb bends; negate it to bend the other way.
  // Unset: derived from the pose (see the file comment).
  std::optional<Eigen::Vector3f> mid_axis = std::nullopt;
  // Roll of the whole limb about the start-to-target line, radians, applied
  // after the pole alignment.
  float twist_angle = 0.0f;
  // In [0, 1]; 1 = no softening. See the file comment.
  float soften = 1.0f;
  // Blend from the input pose (0) to the solved pose (1). Finite; values
  // outside [0, 1] are clamped to it (as ozz does).
  float weight = 1.0f;
  // Blend toward end_rotation, multiplied by `weight`. Finite; clamped to
  // [0, 1].
  float end_rotation_weight = 1.0f;
  // Let the bones lengthen, up to max_stretch (>= 1) times their length.
  bool stretch = false;
  float max_stretch = 1.0f;
  // `reached` tolerance as a fraction of the chain length (>= 0).
  float reach_tolerance = 1e-4f;

  // Outputs.
  // The corrected local pose, one transform per joint: a copy of `input` with
  // the chain's rotations (and, when stretching, translations) replaced. May
  // be the same memory as `input` (solving in place skips the copy), but must
  // not otherwise overlap it.
  absl::Span<Transform> output = {};
  // Optional.
  TwoBoneIkResult* result = nullptr;

  // Checks the skeleton, sizes, the chain (indices in range, each joint a
  // descendant of the previous), that every input the solve reads is finite
  // (target, pole, bend goal, mid axis if set non-zero, angles, weights),
  // soften in [0, 1], max_stretch >= 1, a unit end rotation, and the transforms
  // the solve reads: the chain's local transforms and parent_model. Other
  // joints are copied, not read, and not checked. Errors name the field and the
  // joint, e.g. "two_bone_ik.target: NaN or infinite component".
  absl::Status Validate() const;
  // Validates, then solves.
  absl::Status Run() const;
};

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_ANALYTIC_IK_TWO_BONE_IK_H_
