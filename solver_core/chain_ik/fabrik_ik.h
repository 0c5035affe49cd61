// FABRIK (Forward And Backward Reaching Inverse Kinematics) on a joint chain,
// and on a tree of chains with several tips (sub-bases).
//
// Algorithm: Aristidou and Lasenby, "FABRIK: A fast, iterative solver for
// the Inverse Kinematics problem", Graphical Models 73(5), 2011; as in
// Hands-on C++ Game Animation Programming ch. 13 (Szauer 2020) and
// RootMotion's FinalIK IKSolverFABRIK / FBIKChain. Each iteration works on
// joint positions: the forward pass puts the tip on the target and walks to the
// root, sliding each joint along the line to its moved child until the bone
// has its length again; the backward pass pins the root back and walks out
// to the tip the same way. Positions are mapped back to local rotations by
// the smallest rotation per bone, root first (ik_chain.h explains why this
// preserves twist, and why a published "fix" to the book's WorldToIKChain is
// not one).
//
// - Unreachable target (farther from the root than the chain's length), no
//   limits: one pass lays the chain straight toward it (iterations = 1).
// - Over-relaxation (chains without limits, not planar): from the second
//   iteration on, each iteration's move is extended before the next
//   starts, x <- T(x) + b (T(x) - x) with T one forward and one backward
//   pass, the classic acceleration of a slowly converging fixed-point
//   iteration. FABRIK's late iterations creep along the set of poses that
//   reach the target by ever smaller steps in a steady direction. b is
//   Aitken's estimate of the moves still to come, rho / (1 - rho) with rho
//   the ratio of the tip's error to the previous iteration's, capped at
//   over_relaxation: slow solves are extended by the cap, fast ones barely
//   (a fixed b overshoots them). This halves the iterations to a tolerance
//   on 10-joint chains (docs/PERFORMANCE.md). The first iteration is left
//   alone: it is the large jump from the input pose, and extending it
//   lands in a different, farther solution. The answer is always an
//   un-extended iterate (exact bone lengths), within about 1% of the
//   chain's length of classic FABRIK's; over_relaxation 0 is classic
//   FABRIK, bit for bit.
// - Straight chain with the target on its line (FABRIK cannot leave the
//   line): the first iteration aims at the target moved sideways by half the
//   last bone's length (FinalIK's singularity offset), perpendicular to the
//   line (in the plane for planar chains).
// - Joint limits (joint_limits.h: Euler, swing-twist, hinge) are enforced
//   inside the passes, which then carry rotations as well as positions:
//   * backward (root first): each joint swings toward its child's
//     forward-pass position, turns about its own bone so a limited child's
//     bend plane contains the grandchild's position (positions leave that
//     twist free, and a hinge child could otherwise never turn its plane),
//     its local rotation is limited, and the child goes where the limited
//     rotation puts it (FinalIK's BackwardReachLimited, plus the twist);
//   * forward (tip first): each joint's frame follows from its child's
//     through the child's local rotation, re-aimed within the child's limit
//     (AimWithinJointLimit) so the bone points back toward the joint's last
//     position; only the tip's frame is free;
//   * after each iteration the whole chain turns about its root toward the
//     target within the root's limit (a CCD step at the root), which keeps
//     the passes from settling with the chain aimed past the target.
//   The output satisfies every limit. Passes that each respect the limits
//   need not agree, so the best pose seen is returned (measured on CMU data
//   in docs/PERFORMANCE.md: limits cost FABRIK some solve rate; CCD is the
//   steadier choice for tightly limited chains).
// - Planar chains (2D FABRIK with signed bend ranges): with a plane normal, the
// target is projected
//   onto the plane through the chain root and every direction onto the
//   plane; optional signed angle ranges bound the bend at each interior
//   joint. They are applied in the backward pass only (clamping in the
//   forward pass too, as a tip-first follow with bend limits does, lets
//   one-sided ranges collapse the chain onto a line through the target),
//   followed by the root turn above, which leaves every bend as it is.
// - Trees (FabrikTreeIkJob): several tips under one root. In the forward
//   pass each branch proposes a position for its sub-base (the joint where
//   branches meet) and the sub-base moves to their centroid weighted by the
//   branches' pull (FinalIK's FBIKChain.Stage1); the backward pass turns the
//   sub-base so its children best match their proposed directions (weighted
//   least squares, the Kabsch solution) since one rotation moves all of
//   them. Trees take the plain forward pass, the rotational backward pass
//   and the best-pose rule (best: smallest pull-weighted sum of squared
//   effector errors).
//
// Degenerate input is answered, never rejected: zero-length bones keep their
// rotation; a joint that lands on its neighbour keeps its previous
// direction; a target on the root folds the chain as far as it goes.
// Non-finite input is INVALID_ARGUMENT.
#ifndef POSEWIRE_SOLVER_CORE_CHAIN_IK_FABRIK_IK_H_
#define POSEWIRE_SOLVER_CORE_CHAIN_IK_FABRIK_IK_H_

#include <Eigen/Core>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "solver_core/chain_ik/ik_chain.h"
#include "solver_core/chain_ik/joint_limits.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"

namespace posewire {

// FabrikIkJob::over_relaxation's default: near the fastest on slow solves
// (a fixed extension of 1 is the edge of stability, where some solves
// start to diverge), with solutions close to classic FABRIK's.
inline constexpr float kDefaultFabrikOverRelaxation = 0.8f;

// FabrikIkJob's and FabrikTreeIkJob's max_iterations default.
inline constexpr int kDefaultFabrikIterations = 200;

struct FabrikIkJob {
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
  // Where the tip should go, in model space.
  Eigen::Vector3f target = Eigen::Vector3f::Zero();

  // Parameters.
  // Forward-and-backward iterations at most; 0 only measures. Up to
  // kMaxIkIterations. The solve stops as soon as it is within the tolerance
  // or stalls, so the default cap costs nothing on easy targets.
  int max_iterations = kDefaultFabrikIterations;
  // Default: 1e-4 of the chain's length.
  IkTolerance tolerance = kDefaultChainTolerance;
  // Blend of the solved rotations over the input ones; 0 returns the input
  // bit for bit. Clamped to [0, 1].
  float weight = 1.0f;
  // Empty, or one limit per skeleton joint (only chain joints are used).
  absl::Span<const JointLimit> limits;
  // The cap on the over-relaxation (see above), in [0, 1); used by chains
  // without limits or plane. 0: classic FABRIK.
  float over_relaxation = kDefaultFabrikOverRelaxation;
  // The closing step (see above; chains without limits or plane): when
  // iterations slow down, damped least squares over the chain's rotations.
  // false: FABRIK iterations only.
  bool polish = true;
  // Planar mode when nonzero: the plane's normal in model space.
  Eigen::Vector3f plane_normal = Eigen::Vector3f::Zero();
  // Planar mode only: empty, or chain.size() - 2 ranges; entry k bounds the
  // signed angle (about plane_normal) from segment k (chain[k] to
  // chain[k+1]) to segment k + 1 (the bend at chain[k+1]).
  absl::Span<const SignedAngleRange> planar_limits;

  // Outputs.
  // One transform per skeleton joint; may be the same span as `input`.
  absl::Span<Transform> output;
  // Optional.
  IkResult* result = nullptr;

  absl::Status Validate() const;
  absl::Status Run() const;
};

struct FabrikEffector {
  // A descendant of the tree's root; no effector may be an ancestor of
  // another.
  int joint = -1;
  // Model-space target.
  Eigen::Vector3f target = Eigen::Vector3f::Zero();
  // Weight of this tip's branch where it meets other branches (> 0).
  float pull = 1.0f;
};

struct FabrikTreeIkJob {
  // Inputs.
  const Skeleton* skeleton = nullptr;
  absl::Span<const Transform> input;
  // Set when `input` is known valid (every transform finite with a unit
  // rotation: CheckPose passed, as a service checks each frame's pose once):
  // Validate() then checks only its size.
  bool input_validated = false;
  // The fixed base: every effector is below it. Its position stays, its
  // rotation is solved.
  int root = -1;
  // The tree is the union of the paths from `root` to each effector.
  absl::Span<const FabrikEffector> effectors;

  // Parameters.
  int max_iterations = kDefaultFabrikIterations;
  // Reached when every effector is within it. Default: 1e-4 of the tree's
  // longest path from the root to an effector.
  IkTolerance tolerance = kDefaultChainTolerance;
  float weight = 1.0f;
  // Empty, or one limit per skeleton joint (only tree joints are used).
  absl::Span<const JointLimit> limits;

  // Outputs.
  absl::Span<Transform> output;
  // Optional; error is the largest effector distance.
  IkResult* result = nullptr;

  absl::Status Validate() const;
  absl::Status Run() const;
};

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_CHAIN_IK_FABRIK_IK_H_
