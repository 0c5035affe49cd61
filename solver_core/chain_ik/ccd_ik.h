// CCD (Cyclic Coordinate Descent) IK on a joint chain.
//
// Algorithm: Welman, "Inverse Kinematics and Geometric Constraints for
// Articulated Figure Manipulation" (1993), as in Hands-on C++ Game Animation
// Programming ch. 13 (Szauer 2020) and Unity/FinalIK's IKSolverCCD: walk the
// chain from the joint before the tip back to the root, turning each joint by
// the smallest rotation that points its joint-to-effector direction at its
// joint-to-target direction; repeat until the effector is within tolerance
// or the iteration cap is hit. One iteration is one such sweep (or one step
// of the closing step below).
//
// Defaults: the tolerance is 1e-4 of the chain's length (the same precision
// on a rig in metres and one in centimetres), the cap kDefaultCcdIterations;
// a solve stops as soon as it is within the tolerance or stalls, so easy
// targets never pay for the cap.
//
// Closing step (on by default, `polish`): textbook CCD crawls when the
// target is near the chain's full reach, since every sweep turns a nearly
// straight chain a little further the same way (thousands of sweeps at 0.96
// to 1.0 of the reach). When a sweep leaves more than half of the previous
// sweep's error, the solve hands over to damped least squares over the
// chain's joint rotations (Buss 2004, with Levenberg-Marquardt damping;
// ik_chain.h's PolishChain), which converges there in a few steps. It
// honours what the sweeps do: joint weights (weight 0 never moves, lower
// weights move less), limits (every step's local rotation is limited, a
// hinge turns about its axis only), the step cap. The hinge fallback
// belongs to the sweeps: the polish bends no collinear joint on its own
// (its gradient is zero there) and a round that gains nothing hands back to
// sweeps, whose fixed-axis step bends it. Rounds of sweeps and polish
// repeat until within tolerance, at the cap, or a round gains under 1% of
// the error. On the CMU limb targets (docs/PERFORMANCE.md) it takes CCD at
// defaults from 88% to 100% of reachable targets within 1e-4 of the chain.
// false: sweeps only, as before.
//
// Options, each off by default unless noted:
//  - per-joint weights: a joint turns by slerp(identity, step, weight);
//    FinalIK recommends lower weights toward the tip, since plain CCD
//    over-uses the joints nearest the effector.
//  - Unity's incremental variant: iteration k only turns the k + 2 joints
//    nearest the tip (the whole chain from then on), so early passes bend
//    the end of the chain first.
//  - max_step_angle caps the angle a joint turns in one step.
//  - over-relaxation (on by default; plain solves only: full joint weights,
//    no limit, step cap or fallback): CCD converges slowly, each sweep
//    turning the joints a little further the same way. From the second
//    sweep on, every joint's turn in the sweep is extended by b times
//    itself before the next sweep, b = rho / (1 - rho) with rho the ratio
//    of the effector's error to the previous sweep's (Aitken's estimate of
//    the turns still to come), capped at over_relaxation. On 10-joint
//    chains this halves the sweeps to a tolerance and reaches nearly every
//    target classic CCD leaves short after 50 sweeps (docs/PERFORMANCE.md);
//    the poses it finds differ from classic CCD's (about 5% of the chain's
//    length per joint on average there; both are CCD solutions). 0, with
//    polish off, is classic CCD, bit for bit.
//  - joint limits (joint_limits.h), applied to the joint's local rotation
//    after every step (the limit bounds the state, not the step, as the
//    Blade engine's IK notes put it).
//    Limited chain joints are first brought inside their limits.
//  - two singularity heuristics from the Blade engine's IK notes, for a
//    joint whose effector and target directions are collinear (a straight leg
//    reaching for a point on its own line: CCD's free rotation axis is
//    undefined and every joint is at a stationary point, so plain CCD never
//    bends): (1) hinge_fallback: Welman's fixed-axis CCD for that step. The
//    joint
//        turns about a fixed axis (its hinge limit's axis, else
//        `fallback_axis`, both in the joint's own frame) by the angle that
//        puts the effector at the target's distance from the previous chain
//        joint (law of cosines), so the parent's next step can reach it.
//        Of the two such angles the smaller is used, the positive one on a
//        tie (flip the axis to bend the other way). The chain root has no
//        previous joint and keeps the plain step.
//    (2) nudge: when a limit clamps an angle at a bound near zero, push it
//        slightly into the allowed range (LimitNudge), so a joint stuck
//        straight against its limit bends the way it can.
//
// Unreachable targets (farther from the chain root than the chain's length)
// are answered in one pass when no limit, step cap or zero joint weight is
// set: the chain is laid straight toward the target (iterations = 1).
// Otherwise the sweeps run as usual and converge toward the straight pose.
//
// Degenerate input is answered, never rejected: zero-length bones and
// targets on a joint leave that joint's rotation as it is (FromToRotation of
// a zero vector is identity); a target behind a straight chain is a half turn
// about a deterministic perpendicular (or the hinge axis with the fallback).
// Non-finite input is INVALID_ARGUMENT.
#ifndef POSEWIRE_SOLVER_CORE_CHAIN_IK_CCD_IK_H_
#define POSEWIRE_SOLVER_CORE_CHAIN_IK_CCD_IK_H_

#include <Eigen/Core>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "solver_core/chain_ik/ik_chain.h"
#include "solver_core/chain_ik/joint_limits.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"

namespace posewire {

// CcdIkJob::over_relaxation's default and largest value. The cap binds
// only when a sweep cut the error by less than 1 / (1 + cap) (11% for 8):
// slow sweeps, whose turns are small. Raising it from 2 to 4 to 8 kept
// saving sweeps and misses (docs/PERFORMANCE.md); 16 barely more.
inline constexpr float kDefaultCcdOverRelaxation = 8.0f;
inline constexpr float kMaxCcdOverRelaxation = 16.0f;

// CcdIkJob::max_iterations' default.
inline constexpr int kDefaultCcdIterations = 200;

struct CcdIkJob {
  // Inputs.
  const Skeleton* skeleton = nullptr;
  // Local pose, one transform per skeleton joint.
  absl::Span<const Transform> input;
  // Set when `input` is known valid (every transform finite with a unit
  // rotation: CheckPose passed, as a service checks each frame's pose once):
  // Validate() then checks only its size.
  bool input_validated = false;
  // Joint indices root to tip, each the parent of the next (at least 2).
  // The tip is the end effector; its own rotation is left as it is.
  absl::Span<const int> chain;
  // Where the tip should go, in model space (the skeleton's root space).
  Eigen::Vector3f target = Eigen::Vector3f::Zero();

  // Parameters.
  // Sweeps and polish steps at most; 0 only measures. Up to
  // kMaxIkIterations. The solve stops as soon as it is within the tolerance
  // or stalls, so the default cap costs nothing on easy targets.
  int max_iterations = kDefaultCcdIterations;
  // Default: 1e-4 of the chain's length.
  IkTolerance tolerance = kDefaultChainTolerance;
  // Blend of the solved rotations over the input ones; 0 returns the input
  // bit for bit. Clamped to [0, 1].
  float weight = 1.0f;
  // Empty, or one weight per chain joint (the tip's is unused). Clamped to
  // [0, 1].
  absl::Span<const float> joint_weights;
  bool incremental = false;
  // Radians; 0 means no cap.
  float max_step_angle = 0.0f;
  // The cap on the over-relaxation (see above), in [0,
  // kMaxCcdOverRelaxation]; 0: classic CCD.
  float over_relaxation = kDefaultCcdOverRelaxation;
  // Empty, or one limit per skeleton joint (only chain joints are used).
  absl::Span<const JointLimit> limits;
  // The singularity heuristics (see the file comment).
  bool hinge_fallback = false;
  Eigen::Vector3f fallback_axis = Eigen::Vector3f::UnitX();
  bool nudge = false;
  LimitNudge nudge_params;
  // The closing step (see above): when sweeps slow down, damped least
  // squares over the chain's rotations. false: sweeps only.
  bool polish = true;

  // Outputs.
  // One transform per skeleton joint; may be the same span as `input`.
  // Joints outside the chain (and the tip) are copied from the input.
  absl::Span<Transform> output;
  // Optional.
  IkResult* result = nullptr;

  absl::Status Validate() const;
  absl::Status Run() const;
};

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_CHAIN_IK_CCD_IK_H_
