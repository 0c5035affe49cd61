// Full-body multi-effector CCD: one CCD over the whole skeleton with several
// end effectors, the "Fullbody IK mode" of the Blade engine's IK notes (
// "the entire skeleton is a unique IK chain that contains multiple end
// effectors ... many papers say CCD can only solve a single effector chain;
// in fact it is possible"), as opposed to solving each limb on its own
// (ccd_ik.h). A second full-body solver next to full_body_biped_ik.h: it
// needs no biped mapping, works on any hierarchy (quadrupeds, tails) and
// honours per-joint limits, but knows nothing of bodies (no pull, no bend
// planes).
//
// Algorithm. The moving joints are the ancestors of the effector joints
// (and an effector joint itself when its effector point is offset from it),
// minus joints with weight 0. One iteration is one sweep over them from the
// leaves to the root (reverse joint order, so a joint is visited after all
// its descendants and before any ancestor). At joint j with pivot p and the
// effectors below it (current points e_k, targets t_k, weights w_k), j turns
// by the rotation R that minimises sum_k w_k |p + R (e_k - p) - t_k|^2: the
// exact coordinate-descent step on the total weighted squared error.
//  - One effector below: R is the smallest rotation taking e - p onto
//    t - p, the classic CCD step (Welman 1993).
//  - Several: R is the weighted least-squares rotation of the point set
//    about p (Wahba's problem, solved with Horn's quaternion method: the
//    eigenvector of the largest eigenvalue of a symmetric 4x4 matrix). A
//    small bias toward the identity picks the smallest rotation when the
//    points leave a twist undetermined (effectors in line with the pivot);
//    it never makes the step worse than not moving.
// Per-joint weights scale the step (slerp from identity). Joint limits
// (joint_limits.h) are applied to the joint's local rotation after its step,
// as the Blade engine's IK notes prescribe ("the constraint angle bounds
// the state, not the
// step"), with its optional nudge heuristic; limited moving joints are first
// brought inside their limits. Without limits and with unit joint weights the
// total error never increases from one iteration to the next.
//
// Optional translational root (the same notes: "set the node as a
// displacement-type
// joint, rather than a rotational joint, to reposition the entire body"):
// after each sweep `translation_joint` moves by the weighted mean of
// (t_k - e_k) over the effectors below it, the exact least-squares
// translation. Its local translation is the only one that changes; every
// bone keeps its length.
//
// Stops when every effector is within the tolerance (default 1e-4 of the
// skeleton's size, IkTolerance::relative_to_skeleton: the same precision on
// a rig in metres and one in centimetres), when a sweep lowers the total
// weighted squared error by less than a millionth of itself (stalled:
// conflicting or unreachable targets), or after max_iterations sweeps
// (default kDefaultFullBodyCcdIterations). Degenerate input has a defined
// result: targets on a pivot, effectors on their joint, collinear points and
// zero scales leave the affected joint as it is. Non-finite input is
// INVALID_ARGUMENT naming the effector and field.
#ifndef POSEWIRE_SOLVER_CORE_FULL_BODY_FULL_BODY_CCD_H_
#define POSEWIRE_SOLVER_CORE_FULL_BODY_FULL_BODY_CCD_H_

#include <Eigen/Geometry>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "solver_core/chain_ik/ik_chain.h"
#include "solver_core/chain_ik/joint_limits.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"

namespace posewire {

inline constexpr int kMaxFullBodyCcdEffectors = 64;
// Targets and offsets must lie within this distance of the origin on every
// axis, so squared distances stay finite in float.
inline constexpr float kMaxFullBodyCcdCoordinate = 1e9f;
// FullBodyCcdJob's defaults: 1e-4 of the skeleton's size, 100 sweeps.
inline constexpr IkTolerance kDefaultFullBodyCcdTolerance = {
    .value = 1e-4f,
    .relative_to_skeleton = true,
    .skeleton_size = 0.0f,
    .relative_to_chain = false};
inline constexpr int kDefaultFullBodyCcdIterations = 100;

struct FullBodyCcdEffector {
  // The joint carrying the effector point.
  int joint = -1;
  // The effector point in the joint's space (a BVH End Site, a fingertip);
  // zero: the joint's own position.
  Eigen::Vector3f offset = Eigen::Vector3f::Zero();
  // Where the point should go, in model space.
  Eigen::Vector3f target = Eigen::Vector3f::Zero();
  // Share of this effector in the least-squares objective, >= 0 (0: only
  // measured).
  float weight = 1.0f;
};

// The rotation R minimising sum_k weights[k] |R from[k] - to[k]|^2 (from and
// to relative to a common pivot), with the identity bias described above;
// for one pair the smallest rotation from from[0] to to[0]. Identity when
// the weighted vectors are all (nearly) zero. Exposed for tests.
Eigen::Quaternionf WeightedPointRotation(absl::Span<const Eigen::Vector3f> from,
                                         absl::Span<const Eigen::Vector3f> to,
                                         absl::Span<const float> weights);

struct FullBodyCcdJob {
  // Inputs.
  const Skeleton* skeleton = nullptr;
  // Local pose, one transform per joint.
  absl::Span<const Transform> input;
  // Set when `input` is known valid (every transform finite with a unit
  // rotation: CheckPose passed, as a service checks each frame's pose once):
  // Validate() then checks only its size.
  bool input_validated = false;
  // 1 to kMaxFullBodyCcdEffectors effectors; several may share a joint.
  absl::Span<const FullBodyCcdEffector> effectors;

  // Parameters.
  // Sweeps at most, [0, kMaxIkIterations]; 0 only measures.
  int max_iterations = kDefaultFullBodyCcdIterations;
  IkTolerance tolerance = kDefaultFullBodyCcdTolerance;
  // Blend of the solved pose over the input (rotations slerped, the
  // translation lerped); 0 returns the input bit for bit. Clamped to [0, 1].
  float weight = 1.0f;
  // Empty, or one weight in [0, 1] per skeleton joint scaling its step; 0
  // locks the joint (e.g. fingers, or the root to keep the figure upright).
  absl::Span<const float> joint_weights;
  // Empty, or one limit per skeleton joint (entries of moving joints are
  // used).
  absl::Span<const JointLimit> limits;
  // The nudge away from limits stuck near zero (joint_limits.h).
  bool nudge = false;
  LimitNudge nudge_params;
  // -1, or the joint that also translates (usually the hips / root).
  int translation_joint = -1;

  // Outputs.
  // One transform per joint; may be the same span as `input`.
  absl::Span<Transform> output;
  // Optional: reached (every effector within tolerance), the largest
  // error, sweeps run.
  IkResult* result = nullptr;
  // Optional: empty, or one entry per effector receiving its final error.
  absl::Span<float> effector_errors;

  absl::Status Validate() const;
  absl::Status Run() const;
};

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_FULL_BODY_FULL_BODY_CCD_H_
