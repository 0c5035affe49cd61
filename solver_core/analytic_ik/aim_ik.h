// Aim (look-at) IK: turns one joint (head, eye, gun, spotlight) so a forward
// axis fixed in the joint points at a model-space target, with an up axis
// rolled toward a pole vector.
//
// Algorithm and parameters follow ozz-animation's IKAimJob: the forward axis
// may start from an offset point in the joint's space (an eye above the neck
// joint, a muzzle beside the wrist); the forward direction is then corrected
// so that the ray from the offset point, not from the joint, passes through
// the target (it meets the sphere through the target centred on the joint).
// The joint swings the corrected forward onto the target direction, rolls
// about the joint-to-target line until the up axis lies in the plane of that
// line and the pole vector (on the pole's side), then twists by twist_angle.
// The result is slerped from the input rotation by `weight`.
//
// Cone clamp (FinalIK AimIK's V3Tools.ClampDirection): with clamp_weight >
// 0 the target direction, seen from the joint, is first clamped into the cone
// of half-angle (1 - clamp_weight) * 180 degrees around the joint's input
// forward axis, with `clamp_smoothing` sine passes. With no offset the solved
// forward axis stays in that cone exactly; with an offset it is the clamped
// target the offset ray aims at.
//
// Degenerate input: a target on the joint, or inside the circle the offset
// sweeps (no ray from the offset can reach it), leaves the joint unchanged
// and reports not reached (as ozz). An up axis parallel to the target
// direction, or a pole parallel to it, skips the roll. A zero scale that
// collapses the forward axis leaves the joint unchanged.
//
// Vectors in joint space (forward, up, offset) are mapped to model space as
// the joint's transform maps its children: rotated and scaled.
#ifndef POSEWIRE_SOLVER_CORE_ANALYTIC_IK_AIM_IK_H_
#define POSEWIRE_SOLVER_CORE_ANALYTIC_IK_AIM_IK_H_

#include <Eigen/Geometry>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"

namespace posewire {

struct AimIkResult {
  // The forward ray passes within reach_tolerance * (distance from the joint
  // to the target) of the target.
  bool reached = false;
  // Distance from the target to the forward ray (from the aim origin, along
  // forward) after the solve, in model units.
  float error = 0.0f;
  // The cone clamp changed the target direction.
  bool clamped = false;
  // 1 for a solve, 0 when weight 0 or degenerate input skipped it.
  int iterations = 0;
};

struct AimIkJob {
  // Inputs.
  const Skeleton* skeleton = nullptr;
  // The current local pose, one transform per joint.
  absl::Span<const Transform> input = {};
  // The model-space transform of `joint`'s parent, as LocalToModelJob
  // computes it (ParentModelTransformOrRoot in local_to_model.h computes just
  // this one), or the skeleton's root space when `joint` is a root.
  Transform parent_model = Transform::Identity();

  // The joint to turn.
  int joint = -1;

  // Model space.
  Eigen::Vector3f target = Eigen::Vector3f::Zero();
  // Direction the up axis should lean toward. Zero: no roll alignment.
  Eigen::Vector3f pole_vector = Eigen::Vector3f::UnitY();

  // Joint space.
  // Axis to aim at the target; must not be zero (need not be unit).
  Eigen::Vector3f forward = Eigen::Vector3f::UnitX();
  // Axis rolled toward the pole. Zero, or parallel to forward: no roll.
  Eigen::Vector3f up = Eigen::Vector3f::UnitY();
  // Origin of the aim ray.
  Eigen::Vector3f offset = Eigen::Vector3f::Zero();

  // Parameters.
  // Roll about the joint-to-target line, radians, after the pole alignment.
  float twist_angle = 0.0f;
  // Blend from the input pose (0) to the solved pose (1). Finite; values
  // outside [0, 1] are clamped to it.
  float weight = 1.0f;
  // Cone clamp, see the file comment. Finite; clamped to [0, 1]; 0 = off.
  float clamp_weight = 0.0f;
  // In [0, kMaxClampSmoothingIterations].
  int clamp_smoothing = 0;
  // `reached` tolerance as a fraction of the joint-to-target distance (>= 0).
  float reach_tolerance = 1e-4f;

  // Outputs.
  // The corrected local pose: a copy of `input` with the joint's rotation
  // replaced. May be the same memory as `input`, but must not otherwise
  // overlap it.
  absl::Span<Transform> output = {};
  // Optional.
  AimIkResult* result = nullptr;

  // Checks the skeleton, sizes, the joint index, that every vector and scalar
  // is finite, forward non-zero, clamp_smoothing in range, and the transforms
  // the solve reads (the joint's local transform and parent_model). Errors
  // name the field and the joint.
  absl::Status Validate() const;
  // Validates, then solves.
  absl::Status Run() const;
};

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_ANALYTIC_IK_AIM_IK_H_
