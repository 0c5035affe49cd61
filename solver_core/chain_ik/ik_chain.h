// Chain IK shared math: what the iterative solvers (ccd_ik.h, fabrik_ik.h)
// have in common, so each rule lives in one place.
//
// - A chain is a list of joint indices from root to tip where each joint is
//   the parent of the next (validated). Trees (FABRIK sub-bases) are sets of
//   such paths sharing a root.
// - Solvers work on a working copy (IkChain): the chain's local transforms
//   and their model-space transforms, computed from the fixed model-space
//   transform of the chain root's parent. Only rotations change; bone
//   vectors keep their length because model-space offsets are
//   rotation * (scale . translation) with scales composed componentwise
//   (transform.h), so a rotation never stretches a bone.
// - Rotations found in model space go back to local space as
//   local = conj(parent model rotation) * model rotation (Szauer 2020,
//   Hands-On C++ Game Animation Programming).
//   Positions found by FABRIK go back as the smallest rotation that turns
//   each bone onto its new direction, root first, with each joint's frame
//   taken after its parent has moved; a swing-only delta leaves the twist
//   about the bone as it was. About a remark on that book's WorldToIKChain:
//   the book's version is right in the book's own quaternion product order (its
//   combine() writes b.rotation * a.rotation, so its `delta * local` is
//   local * delta in Eigen's order, a delta measured in the joint's frame).
//   The remark's "fix" is the bug: reading the old direction from the solved
//   positions too makes old and new direction equal, so nothing rotates.
//   Likewise the remark's "normal" CCD update (world delta pre-multiplied onto
//   the local rotation) is only right when the parent's model rotation is
//   identity; here a model-space delta D gives local = conj(P) * D * P * local
//   through the model rotation, never D * local.
// - Tolerances are absolute, relative to the skeleton's size (the Blade
//   engine's IK notes use 0.001 at a 2 m reference figure, which scales with
//   the rig), or relative to the chain's length: the chain solvers' default,
//   1e-4 of the chain, means the same precision on every rig.
#ifndef POSEWIRE_SOLVER_CORE_CHAIN_IK_IK_CHAIN_H_
#define POSEWIRE_SOLVER_CORE_CHAIN_IK_IK_CHAIN_H_

#include <Eigen/Geometry>
#include <cmath>

#include "absl/base/optimization.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "solver_core/chain_ik/joint_limits.h"
#include "solver_core/model/internal/simd_lanes.h"
#include "solver_core/model/quaternion_math.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"

namespace posewire {

// Iteration cap every iterative IK solver accepts; larger requests are
// INVALID_ARGUMENT (a service must bound the work one request can ask for).
inline constexpr int kMaxIkIterations = 10000;

// Outcome of an IK solve.
struct IkResult {
  // True when the final error is within the tolerance.
  bool reached = false;
  // Model-space distance from the effector to its target in the output pose
  // (for several effectors, the largest).
  float error = 0.0f;
  // Iterations (full solver passes) used.
  int iterations = 0;
};

// The over-relaxation shared by FABRIK's iterations and CCD's sweeps
// (fabrik_ik.h, ccd_ik.h): how far to extend the move just made, from the
// ratio rho of the effector's error to the one before. Aitken's estimate of
// the rest of a geometric series of moves, rho / (1 - rho), capped; 0 when
// the error did not fall. The extension feeds the next iteration, so the
// factor is on the solve's chain of dependent steps: the cap applies
// exactly when rho >= knee = cap / (1 + cap), which is tested on the
// squared errors, and the usual slow solve pays no square root or division.
class OverRelaxation {
 public:
  explicit OverRelaxation(float cap)
      : cap_(cap), knee2_((cap / (1.0f + cap)) * (cap / (1.0f + cap))) {}

  // e2, last_e2: the squared errors after this iteration and the one before.
  float Factor(float e2, float last_e2) const {
    if (!(e2 < last_e2)) return 0.0f;
    if (e2 >= knee2_ * last_e2) return cap_;
    const float rho = std::sqrt(e2 / last_e2);
    return rho / (1.0f - rho);
  }

 private:
  float cap_;
  float knee2_;
};

// The chain solvers' default tolerance (ccd_ik.h, fabrik_ik.h): this
// fraction of the chain's length.
inline constexpr float kDefaultChainRelativeTolerance = 1e-4f;

struct IkTolerance {
  // Distance under which a target counts as reached. Absolute (model-space
  // units), or a fraction of a length of the rig: of SkeletonSize() when
  // relative_to_skeleton, of the chain's length when relative_to_chain (at
  // most one of the two).
  float value = 1e-3f;
  bool relative_to_skeleton = false;
  // SkeletonSize() computed once by the caller; 0 computes it per solve
  // (one forward-kinematics pass over the rest pose).
  float skeleton_size = 0.0f;
  // The chain's length: the sum of its bones' lengths in the input pose (for
  // a tree, its longest root-to-effector path). The same figure means the
  // same precision on a rig in metres and one in centimetres.
  bool relative_to_chain = false;
};

// The chain solvers' default (ccd_ik.h, fabrik_ik.h).
inline constexpr IkTolerance kDefaultChainTolerance = {
    .value = kDefaultChainRelativeTolerance,
    .relative_to_skeleton = false,
    .skeleton_size = 0.0f,
    .relative_to_chain = true};

// An absolute tolerance of `value` model-space units.
inline IkTolerance AbsoluteTolerance(float value) {
  IkTolerance t;
  t.value = value;
  return t;
}

// Diagonal of the axis-aligned box around the rest pose's model-space joint
// positions (the Blade engine's IK notes use the bounding box as the
// figure's size).
float SkeletonSize(const Skeleton& skeleton);

namespace ik_internal {
// The error halves of the checks below, out of line: only bad input reaches
// them, and the checks inline to a few compares on the good path.
absl::Status ToleranceError(const IkTolerance& tolerance,
                            absl::string_view field);
absl::Status IterationsError(int iterations, absl::string_view field);
absl::Status FiniteVectorError(absl::string_view field);
absl::Status WeightError(absl::string_view field);
}  // namespace ik_internal

// Checks `tolerance`: value and skeleton_size finite and >= 0, at most one
// of relative_to_skeleton and relative_to_chain.
inline absl::Status ValidateTolerance(const IkTolerance& tolerance,
                                      absl::string_view field) {
  if (ABSL_PREDICT_TRUE(
          std::isfinite(tolerance.value) && tolerance.value >= 0.0f &&
          std::isfinite(tolerance.skeleton_size) &&
          tolerance.skeleton_size >= 0.0f &&
          !(tolerance.relative_to_skeleton && tolerance.relative_to_chain))) {
    return absl::OkStatus();
  }
  return ik_internal::ToleranceError(tolerance, field);
}

// The distance tolerance `tolerance` stands for on `skeleton`, for a chain
// (or tree) of length `chain_length` (read only when relative_to_chain).
float ResolveTolerance(const IkTolerance& tolerance, const Skeleton& skeleton,
                       float chain_length = 0.0f);

// Checks a chain: at least two joints, each index in range, each joint the
// parent of the next. Errors name the field, the position in the chain and
// the joint, e.g. "ccd_ik.chain[2]: joint 7 'LeftHand' is not a child of
// chain[1] (joint 5 'LeftArm')".
absl::Status ValidateChain(const Skeleton& skeleton,
                           absl::Span<const int> chain,
                           absl::string_view field);

// Checks an iteration cap: within [0, kMaxIkIterations].
inline absl::Status ValidateIterations(int iterations,
                                       absl::string_view field) {
  if (ABSL_PREDICT_TRUE(iterations >= 0 && iterations <= kMaxIkIterations)) {
    return absl::OkStatus();
  }
  return ik_internal::IterationsError(iterations, field);
}

// Checks a point or direction: every component finite.
inline absl::Status ValidateFiniteVector(const Eigen::Vector3f& v,
                                         absl::string_view field) {
  if (ABSL_PREDICT_TRUE(v.allFinite())) return absl::OkStatus();
  return ik_internal::FiniteVectorError(field);
}

// Checks a weight: not NaN (values outside [0, 1] are clamped, as
// ozz-animation does).
inline absl::Status ValidateWeight(float weight, absl::string_view field) {
  if (ABSL_PREDICT_TRUE(!std::isnan(weight))) return absl::OkStatus();
  return ik_internal::WeightError(field);
}

inline float ClampWeight(float w) {
  return w < 0.0f ? 0.0f : (w > 1.0f ? 1.0f : w);
}

// A unit vector perpendicular to `v` (nonzero), chosen deterministically:
// v crossed with the coordinate axis it is least aligned with.
Eigen::Vector3f AnyPerpendicular(const Eigen::Vector3f& v);

// FromToRotation before its normalisation: (|f||t| + f.t, f x t), a
// quaternion of length sqrt(2 |f||t| (|f||t| + f.t)) for everyday magnitudes
// (exact unit quaternions in the degenerate and antiparallel cases). For
// callers that normalise a product with it anyway.
Eigen::Quaternionf HalfwayRotation(const Eigen::Vector3f& from,
                                   const Eigen::Vector3f& to);

#if defined(__SSE2__)
// TurnedLocalRotation on quaternions held as rows (x, y, z, w), for loops
// that keep their rotations in registers.
inline lanes::F4 TurnedLocalRotationRow(lanes::F4 parent, lanes::F4 delta,
                                        lanes::F4 model) {
  const lanes::F4 parent_conj =
      lanes::Xor(parent, lanes::SetLanes(-0.0f, -0.0f, -0.0f, 0.0f));
  const lanes::F4 l =
      lanes::MultiplyRows(parent_conj, lanes::MultiplyRows(delta, model));
  return l * lanes::Splat(InverseLength(lanes::First(lanes::Dot4(l, l))));
}
#endif

// The local rotation of a joint with model rotation `model`, under a parent
// with model rotation `parent`, after a model-space turn `delta` (any
// nonzero length, e.g. a HalfwayRotation): normalised conj(parent) *
// (delta * model). One normalisation for the whole product; transform.h's
// Hamilton product and quaternion_math.h's dot product, so the SSE and scalar
// forms give the same bits.
inline Eigen::Quaternionf TurnedLocalRotation(const Eigen::Quaternionf& parent,
                                              const Eigen::Quaternionf& delta,
                                              const Eigen::Quaternionf& model) {
#if defined(__SSE2__)
  Eigen::Quaternionf out;
  lanes::StoreU(out.coeffs().data(),
                TurnedLocalRotationRow(lanes::LoadU(parent.coeffs().data()),
                                       lanes::LoadU(delta.coeffs().data()),
                                       lanes::LoadU(model.coeffs().data())));
  return out;
#else
  const Eigen::Quaternionf l = transform_internal::Multiply(
      parent.conjugate(), transform_internal::Multiply(delta, model));
  return Eigen::Quaternionf(l.coeffs() *
                            InverseLength(Dot4(l.coeffs(), l.coeffs())));
#endif
}

// The smallest rotation taking the direction of `from` to the direction of
// `to`. Identity when either is (almost) zero. For antiparallel vectors, a
// half turn about AnyPerpendicular(from), so the answer is deterministic.
Eigen::Quaternionf FromToRotation(const Eigen::Vector3f& from,
                                  const Eigen::Vector3f& to);

// `q` (unit) with its rotation angle capped at `max_angle` radians, same
// axis.
Eigen::Quaternionf ClampRotationAngle(const Eigen::Quaternionf& q,
                                      float max_angle);

// Model-space transform of `joint`'s parent (identity for a root): forward
// kinematics along its ancestors only.
Transform ParentModelTransform(const Skeleton& skeleton,
                               absl::Span<const Transform> local, int joint);

// The working copy of a chain or tree during a solve. Nodes are joints in
// skeleton (topological) order; node 0 is the root, every other node's
// parent node comes before it. For a chain node i's parent is i - 1.
class IkChain {
 public:
  // A chain validated by ValidateChain.
  void GatherChain(const Skeleton& skeleton, absl::Span<const Transform> pose,
                   absl::Span<const int> chain);
  // `joints` sorted ascending; joints[0] is an ancestor of every other, and
  // every other joint's skeleton parent is in the set.
  void GatherTree(const Skeleton& skeleton, absl::Span<const Transform> pose,
                  absl::Span<const int> joints);

  int size() const { return static_cast<int>(joints_.size()); }
  int joint(int i) const { return joints_[i]; }
  // Parent node of node i, -1 for node 0.
  int parent(int i) const { return parents_[i]; }
  // Model-space transform of node 0's parent: fixed during a solve.
  const Transform& base() const { return base_; }

  // The nodes' transforms as plain arrays (size() entries), for solvers'
  // inner loops.
  const Transform* models() const { return model_.data(); }
  Transform* mutable_locals() { return local_.data(); }

  const Transform& local(int i) const { return local_[i]; }
  const Transform& model(int i) const { return model_[i]; }
  const Eigen::Vector3f& position(int i) const { return model_[i].translation; }
  const Eigen::Quaternionf& rotation(int i) const { return model_[i].rotation; }
  const Eigen::Quaternionf& parent_rotation(int i) const {
    return i == 0 ? base_.rotation : model_[parents_[i]].rotation;
  }
  // Node i's offset from its parent node, in the parent's rotated frame
  // (parent model scale times local translation): the parent's model
  // rotation times this is the model-space bone vector. Zero for node 0.
  const Eigen::Vector3f& offset(int i) const { return offsets_[i]; }
  float length(int i) const { return lengths_[i]; }
  // All of them, for hot loops (InlinedVector's operator[] tests where its
  // storage lives on every access).
  const float* lengths() const { return lengths_.data(); }
  // Sum of all bone lengths.
  float total_length() const { return total_length_; }

  // Sets node i's local rotation (its model transform is stale until
  // UpdateModel).
  void set_local_rotation(int i, const Eigen::Quaternionf& r) {
    local_[i].rotation = r;
  }
  // Sets node i's model rotation only (the caller keeps the local one
  // consistent).
  void set_model_rotation(int i, const Eigen::Quaternionf& r) {
    model_[i].rotation = r;
  }
  // Sets node i's model rotation and derives its local one from the current
  // parent rotation. Descendants are stale until UpdateModel.
  void SetModelRotation(int i, const Eigen::Quaternionf& r);
  // Sets node i's model position directly (for solvers that move nodes as
  // points and rebuild rotations afterwards).
  void set_position(int i, const Eigen::Vector3f& p) {
    model_[i].translation = p;
  }

  // Forward kinematics for nodes from..size()-1.
  void UpdateModel(int from = 0);

  // Chain only: turns each bone, root first, by the smallest rotation onto
  // the direction from its (moved) joint to targets[i + 1], then refreshes
  // the model transforms. targets[0] is ignored (the root does not move).
  // Bones of zero length, or targets on their joint, keep their rotation.
  void AlignChainTo(absl::Span<const Eigen::Vector3f> targets);

  // Writes the nodes' local rotations into `pose` (indexed by joint).
  void ScatterRotations(absl::Span<Transform> pose) const;

 private:
  void Finish(const Skeleton& skeleton, absl::Span<const Transform> pose);

  Transform base_;
  absl::InlinedVector<int, 16> joints_;
  absl::InlinedVector<int, 16> parents_;
  absl::InlinedVector<Transform, 16> local_;
  absl::InlinedVector<Transform, 16> model_;
  absl::InlinedVector<Eigen::Vector3f, 16> offsets_;
  absl::InlinedVector<float, 16> lengths_;
  float total_length_ = 0.0f;
};

// Blends the rotations of `joints` in `output` back toward `from` (their
// rotations before the solve, one per joint; a copy, since output may alias
// the input) for a weight below 1: shortest-path slerp from `from` at 0 to
// the solved rotation at 1.
void BlendIkRotations(absl::Span<const Eigen::Quaternionf> from,
                      absl::Span<const int> joints, float weight,
                      absl::Span<Transform> output);

// The chain solvers' closing step (ccd_ik.h, fabrik_ik.h): damped least
// squares over the chain's joint rotations (Buss, "Introduction to Inverse
// Kinematics with Jacobian Transpose, Pseudoinverse and Damped Least
// Squares methods", 2004) with Levenberg-Marquardt's adaptive damping
// (Levenberg 1944, Marquardt 1963): a step that lowers the effector's error
// is kept and the damping eased, one that does not is undone and the damping
// raised. Each joint turns about its pivot (three degrees of freedom; one,
// about the axis, for a hinge limit), scaled by its weight squared (a
// weighted pseudoinverse: weight 0 never moves); its new local rotation is
// limited, so no limit is ever left; the largest turn in a step is capped
// at `max_step_angle` (0: half a radian). Near a straight chain, where
// rotations barely move the tip along the chain, the damping keeps the
// steps short and then lets them lengthen as the error falls: the solve
// converges where sweeps crawl.
//
// `weights` and `limits` are empty or one entry per node (the tip's
// unused). Expects the chain's model transforms fresh and `*err2` the tip's
// squared error; leaves both fresh. Every trial step counts as an
// iteration. Stops within `tol2`, after `max_iterations`, or stalled (no
// better pose however damped). Returns the iterations used.
int PolishChain(IkChain& c, absl::Span<const float> weights,
                absl::Span<const JointLimit* const> limits,
                float max_step_angle, const Eigen::Vector3f& target, float tol2,
                int max_iterations, float* err2);

// Copies `input` to `output` unless they are the same span.
void CopyPose(absl::Span<const Transform> input, absl::Span<Transform> output);

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_CHAIN_IK_IK_CHAIN_H_
