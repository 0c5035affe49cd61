// Look-at IK: turns a character's spine, head and eyes toward a model-space
// target, as FinalIK's LookAtIK (IKSolverLookAt, docs/REFERENCES.md) does.
//
// Bones and their forward axes. The spine is a list of joints from the
// hips up (each a proper ancestor of the next, the last an ancestor of the
// head; it may be empty); the eyes (optional) are joints under the head,
// none under another. Each bone has a forward axis in its own space
// (rotation only: scale does not tilt it). When `axes` is empty they are
// derived from the rest pose as FinalIK's LookAtBone.Initiate derives them
// from the character's root: the axis that the rest pose turns onto
// `character_forward` (model space, +z by default, the direction a rig in
// its rest pose faces). FinalIK's LookAtBone.LookAt turns a bone in world
// space; here the same turn is applied to the bone's local rotation.
//
// Solve, in FinalIK's order:
// - Spine. With `base` the first spine bone's forward and `to_target` the
//   direction from the last spine bone (input pose) to the target, spine
//   bone i of n is turned so that its forward points along
//   slerp(base, to_target, falloff(i) * clamp), falloff(i) = s + (1 - s) *
//   i / (n - 1) with s = `spine_weight_start` (a single bone: 1), the turn
//   blended by weight * body_weight as FinalIK's Quaternion.Lerp does (a
//   normalised lerp from no turn). FinalIK's spineWeightCurve
//   defaults to a curve from 0.3 to 1; this is the linear curve between
//   the same ends. Each bone is turned after its parents, so its share of
//   the turn is its own direction's, not the sum of its parents'.
// - Head. Its `base` is the last spine bone's forward after the spine's
//   turn (or its own forward without a spine); it is turned along
//   slerp(base, to_target, clamp) from its position after the spine's turn,
//   blended by weight * head_weight.
// - Eyes. Each eye likewise, from the head's forward after its turn,
//   blended by weight * eyes_weight.
//
// Clamp (FinalIK's GetForwards, the formula of ClampDirection in
// clamp_direction.h): `clamp` is 1 while the target lies within the cone of
// half-angle (1 - clamp_weight) * 180 degrees around `base`, and falls to 0
// as it goes behind, so a target passing behind the character never flips
// the head: it fades back to `base`. clamp_weight 0 is no clamp (a target
// straight behind then turns the bones a half turn about an arbitrary but
// deterministic axis); 1 keeps the bones still. `clamp_smoothing` sine
// passes make the fade smoother near the cone's edge.
//
// Turn speed (FinalIK's LookAtController's maxRadiansDelta, as explicit
// state): with max_turn_speed > 0 and a previous look direction in `state`,
// the direction from the head (input pose) to the target turns toward the
// new target by at most max_turn_speed * dt radians a frame, and the bones
// aim at the point at the target's distance along it. The direction used is
// written to `next_state`.
//
// Degenerate input: a target on a bone (no direction) leaves that bone's
// part of the solve undone; weight 0 returns the input.
#ifndef POSEWIRE_SOLVER_CORE_ANALYTIC_IK_LOOK_AT_H_
#define POSEWIRE_SOLVER_CORE_ANALYTIC_IK_LOOK_AT_H_

#include <Eigen/Geometry>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"

namespace posewire {

// What lasts from frame to frame when the turn speed is limited.
struct LookAtState {
  // Model-space unit direction from the head to where it looked last
  // frame; zero when there is none yet (the first frame is not limited).
  Eigen::Vector3f direction = Eigen::Vector3f::Zero();
};

struct LookAtResult {
  // Angle in radians between the head's forward axis after the solve and
  // the direction from the head to the target.
  float head_angle_error = 0.0f;
  // Distance from the target to the head's forward ray, in model units.
  float error = 0.0f;
  // The head's forward passes within 1e-4 * (distance to the target) of it.
  bool reached = false;
  // The share of the turn the head's clamp let through: 1 inside its cone,
  // down to 0 for a target straight behind.
  float head_clamp = 1.0f;
  // A clamp held back some bone (spine, head or eye).
  bool clamped = false;
  // The turn speed limit held the look direction back.
  bool turn_limited = false;
  // 1 for a solve, 0 when weight 0 skipped it.
  int iterations = 0;
};

struct LookAtJob {
  // Inputs.
  const Skeleton* skeleton = nullptr;
  // The current local pose, one transform per joint.
  absl::Span<const Transform> input = {};
  // Set when `input` is known valid (every transform finite with a unit
  // rotation: CheckPose passed, as a service checks each frame's pose once):
  // Validate() then checks only its size.
  bool input_validated = false;
  // The model-space transform of the parent of the first bone (spine[0],
  // or the head without a spine), as ParentModelTransformOrRoot computes
  // it, or the skeleton's root space when that bone is a root.
  Transform parent_model = Transform::Identity();

  // Joints, see the file comment.
  absl::Span<const int> spine = {};
  int head = -1;
  absl::Span<const int> eyes = {};

  // Model space.
  Eigen::Vector3f target = Eigen::Vector3f::Zero();
  // The direction the rest pose faces; used only when `axes` is empty. Must
  // not be zero.
  Eigen::Vector3f character_forward = Eigen::Vector3f::UnitZ();

  // Joint space: empty, or one forward axis per bone in the order spine,
  // head, eyes; none zero (need not be unit).
  absl::Span<const Eigen::Vector3f> axes = {};

  // Parameters: finite; weights are clamped to [0, 1].
  // Of the whole solve (FinalIK's IKPositionWeight).
  float weight = 1.0f;
  // Of the spine, the head and the eyes.
  float body_weight = 0.5f;
  float head_weight = 1.0f;
  float eyes_weight = 1.0f;
  // The first spine bone's share of the spine's turn (the last's is 1).
  float spine_weight_start = 0.3f;
  // Cone clamps, see the file comment: 0 = off, 1 = no turn.
  float clamp_weight = 0.5f;
  float clamp_weight_head = 0.5f;
  float clamp_weight_eyes = 0.5f;
  // In [0, kMaxClampSmoothingIterations].
  int clamp_smoothing = 2;
  // Radians per second (>= 0); 0 = no limit.
  float max_turn_speed = 0.0f;
  // Seconds since the previous frame (>= 0), for the turn speed limit.
  float dt = 0.0f;
  // The previous frame's state; null or zero direction: none.
  const LookAtState* state = nullptr;

  // Outputs.
  // The corrected local pose: a copy of `input` with the bones' rotations
  // replaced. May be the same memory as `input`, but must not otherwise
  // overlap it.
  absl::Span<Transform> output = {};
  // Optional; may be `state`.
  LookAtState* next_state = nullptr;
  // Optional.
  LookAtResult* result = nullptr;

  // Checks the skeleton, sizes, joint indices and the ancestor path, the
  // axes, that every vector and scalar is finite, the ranges, the state and
  // the input pose. Errors name the field and the joint.
  absl::Status Validate() const;
  // Validates, then solves.
  absl::Status Run() const;
};

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_ANALYTIC_IK_LOOK_AT_H_
