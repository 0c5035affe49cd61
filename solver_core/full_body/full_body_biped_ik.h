// Full-body biped IK: FinalIK's FullBodyBipedIK (IKSolverFullBodyBiped) as a
// stateless job over a skeleton and a local pose.
//
// Algorithm: FinalIK's FullBodyBipedIK walked through line by line (Pärtel
// Lang's node-based FABRIK variant for bipeds; docs/REFERENCES.md). The body is
// a tree of 13 nodes: one root node (the spine bone where the hip and chest
// triangles meet) with four three-node limb chains below it (upper arm /
// thigh, forearm / calf, hand / foot). Nine effectors pull on nodes: body
// (the root node, carrying the thighs with it), shoulders, thighs, hands and
// feet. One solve, in FinalIK's order:
//  ReadPose
//   - LimitBend: each limb's lower bone is clamped (ClampDirection, weight
//     0.505 * master weight) to within ~90 degrees of where a right-angled
//     bend in the set-up bend plane would put it, so no limb starts
//     inverted; with a hand / foot effector the bend plane is also turned
//     toward the set-up one; the hand / foot keeps its rotation;
//   - node offsets from effector positionOffset (times the master weight;
//     the body's offset also moves the thighs), effective weights
//     (effector weights times the master weight), animated plane rotations
//     for maintainRelativePositionWeight;
//   - node positions from the bones, bone lengths, child constraints'
//     nominal distances and cross-fades from pull, crossFades and
//     pullParentSum, reachForce = reach * end effector weight; the spine,
//     head and limb mappings read what WritePose needs (plane-relative
//     rotations, swing and twist axes).
//  Solve: up to `iterations` times (with `converge`, until every active hand
//  and foot can reach its goal; see below):
//   - end effectors (hands, feet) move their nodes to lerp(animated
//     position, or with maintainRelativePositionWeight the position carried
//     by the torso triangle, target, weight);
//   - Push (push, pushParent, pushSmoothing) and Reach (reach,
//     reachSmoothing) on the limb chains;
//   - non-end effectors (body, shoulders, thighs) move their nodes;
//   - SolveTrigonometric: each limb's middle node by the law of cosines
//     (limb at most 0.99999 of its length), bend plane as it is;
//   - Stage1: forward reach of every limb toward its end node, then the
//     child constraints on the four limb roots (shoulders and thighs keep
//     their distances; upper arm to opposite thigh only pushes) with push
//     and pull elasticity, and the root node moved to the pull-weighted
//     centroid of where the limbs want it (unless pinned);
//   - non-end effectors again; Stage2: backward reach from the root node,
//     then 2 to 4 passes (clamp(iterations, 2, 4)) of the constraint systems
//     (child constraints and root-to-limb distances weighted by crossFades),
//     then the limbs' backward reach.
//  Then the final end-effector pass and ApplyBendConstraints: a last
//  trigonometric pass whose bend direction blends the animated bend plane
//  carried along with the limb, the one implied by the hand / foot effector
//  rotation, the torso's rotation offset (maintainRelativePositionWeight)
//  and the bend goal (weight). With iterations = 0 the loop is skipped: four
//  independent limb solves, the body effector shifting the pelvis.
//  WritePose
//   - spine mapping: pelvis placed and turned by the hip triangle, the last
//     spine bone turned by the chest triangle, the bones between swung along
//     a FABRIK solve of the spine (its own iteration count) and twisted
//     gradually toward the shoulders' line;
//   - head: keeps its animated model rotation by
//     head_maintain_rotation_weight (0: it follows the neck);
//   - clavicles swung toward the solved shoulders;
//   - with `converge`, the closing step (not in FinalIK, see below);
//   - limbs: upper and lower bone turned by their limb-plane rotations,
//     hand / foot back to its animated model rotation by
//     maintain_rotation_weight, then to the effector rotation by its
//     weight.
//
// Convergence (`converge`, the default). FinalIK runs a fixed count of
// iterations (4 by default), and a goal the body has to move toward (a
// hand or foot target a step or a leap away) is missed by as much as a
// fifth of the limb: FBBIK drags the body a fraction of the way per
// iteration. Here, from FinalIK's 4 on, the iterations stop as soon as
// every active hand and foot goal (where the end-effector pass puts its
// node) lies within its limb's reach of the solved limb root; the final
// trigonometric pass and WriteLimb's exact re-solve then put those hands
// and feet on their goals. Then, once the spine and clavicles are written,
// the closing step moves the whole body (the pelvis, hence every bone above
// the limbs, and every node) by the shortest translation that brings every
// active goal within reach of its limb's actual upper bone: the spine and
// clavicle mapping put that bone up to about 1% of the limb off its node,
// so the step matters even after the iterations converged, and more when
// `iterations` runs out first. The translation is the point nearest the
// origin of the intersection of one ball per limb, found by Dykstra's
// alternating projections (Boyle & Dykstra 1986). No translation does that
// when the goals are out of reach together (two feet further apart than
// the legs span), and the body is then left where the iterations put it. A
// goal carried by the torso (maintain_relative_position_weight) moves with
// the translation by that share, which the balls account for. `converge` =
// false: FinalIK's fixed count and no closing step.
//
// Stateless: no FixTransforms. FinalIK writes positions into the bones (the
// pelvis, the last spine bone, the upper arms and thighs) and needs
// FixTransforms to undo that drift next frame. This job writes only
// rotations, plus the pelvis's translation: the last spine bone and the limb
// roots are reached by rotation (the bone below it swung toward the solved
// point), and each limb's triangle is re-solved from where its upper bone
// actually ended up, with the solver's bend direction, so hands and feet land
// on their nodes without translating the upper bone. Every bone length is
// kept; the pelvis is the only joint whose local translation changes.
//
// Other differences from FinalIK, each deliberate:
//  - IKConstraintBend.GetDir blends raw vectors whose lengths are bone
//    lengths, so its blends depend on the rig's units; here each direction
//    is normalised before blending. A bend goal on the upper joint itself
//    has no direction and is ignored.
//  - With no effector weight, offset or bend goal, the input is returned bit
//    for bit (FinalIK would still apply LimitBend to limbs straighter than
//    its clamp allows).
//  - Later FinalIK versions' pullBodyVertical / pullBodyHorizontal and
//    spineStiffness (not in the version followed here) are not modelled: the
//    diagonal child constraints only push, as that version does.
//  - Model space is the skeleton's root space; targets and rotations are
//    given there (FinalIK's are world space).
//  - LookRotation (the plane rotations that carry the limbs) takes its side
//    axis from a cross product and its up axis again from that: Unity's
//    Gram-Schmidt alone leaves the up axis off the perpendicular by the
//    rounding error over the sine between up and forward, which put hands
//    of nearly straight limbs ~1e-4 of the limb off their goals.
//
// Degenerate input has a defined result: coincident nodes leave the plane or
// bone they define as it is (FinalIK's identity plane rotation); a straight
// limb bends in its set-up bend direction; targets anywhere (on the root,
// on each other, far out of reach) give a finite pose with unchanged bone
// lengths. Non-finite or out-of-range input is INVALID_ARGUMENT naming the
// effector or setting and the field.
#ifndef POSEWIRE_SOLVER_CORE_FULL_BODY_FULL_BODY_BIPED_IK_H_
#define POSEWIRE_SOLVER_CORE_FULL_BODY_FULL_BODY_BIPED_IK_H_

#include <Eigen/Geometry>
#include <array>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "solver_core/chain_ik/ik_chain.h"
#include "solver_core/full_body/biped_mapping.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"

namespace posewire {

// FinalIK's effector order.
enum class BipedEffectorId : int {
  kBody = 0,
  kLeftShoulder = 1,
  kRightShoulder = 2,
  kLeftThigh = 3,
  kRightThigh = 4,
  kLeftHand = 5,
  kRightHand = 6,
  kLeftFoot = 7,
  kRightFoot = 8,
};
inline constexpr int kNumBipedEffectors = 9;

// "body", "left_shoulder", ..., "right_foot".
const char* BipedEffectorName(BipedEffectorId effector);

// The limb whose hand / foot is `effector`, or whose upper bone it moves.
// Not for kBody.
BipedLimb BipedEffectorLimb(BipedEffectorId effector);

// Iteration caps (FinalIK's inspector allows 0..10 and 1..3).
inline constexpr int kMaxFullBodyBipedIterations = 64;
// The default iteration cap with `converge`: enough for the body to turn
// with the limbs on real motion (hand and foot goals 0.5 s ahead, a
// pirouette among them); what it leaves untravelled the closing step moves.
inline constexpr int kDefaultFullBodyBipedIterations = 32;
// FinalIK's fixed count, the default before `converge`.
inline constexpr int kFinalIkFullBodyBipedIterations = 4;
inline constexpr int kMaxSpineMappingIterations = 16;
// Targets, offsets and bend goals must lie within this distance of the
// origin on every axis, so squared distances stay finite in float.
inline constexpr float kMaxFullBodyCoordinate = 1e9f;

struct BipedEffector {
  // Model space (the skeleton's root space).
  Eigen::Vector3f position = Eigen::Vector3f::Zero();
  float position_weight = 0.0f;  // clamped to [0, 1]
  // Model-space rotation of the bone (hands and feet; the body, shoulders
  // and thighs have no rotation in FBBIK).
  Eigen::Quaternionf rotation = Eigen::Quaternionf::Identity();
  float rotation_weight = 0.0f;  // clamped to [0, 1]
  // Model-space offset added to the animated position for this solve,
  // scaled by the master weight (a hit reaction on top of the animation).
  Eigen::Vector3f position_offset = Eigen::Vector3f::Zero();
  // Hands and feet only: how much the animated hand / foot is carried along
  // by the solved torso triangle instead of staying where the animation put
  // it in model space. Clamped to [0, 1].
  float maintain_relative_position_weight = 0.0f;
};

// FinalIK's FBIKChain.Smoothing.
enum class FbikSmoothing { kNone, kExponential, kCubic };

struct BipedLimbSettings {
  // FBIKChain (weights in [0, 1] are clamped; push_parent in [-1, 1]).
  float pull = 1.0f;         // how much the limb drags the body
  float reach = 0.1f;        // extra outward pull toward a weighted end
  float push = 0.0f;         // how much a compressed limb pushes its root
  float push_parent = 0.0f;  // how much that push moves the body
  FbikSmoothing reach_smoothing = FbikSmoothing::kExponential;
  FbikSmoothing push_smoothing = FbikSmoothing::kExponential;
  // IKConstraintBend: a model-space point the elbow / knee bends toward,
  // blended in by bend_goal_weight times the master weight.
  Eigen::Vector3f bend_goal = Eigen::Vector3f::Zero();
  float bend_goal_weight = 0.0f;
  // IKMappingLimb: how much of the solve is written to this limb, and how
  // much the hand / foot keeps its animated model rotation.
  float mapping_weight = 1.0f;
  float maintain_rotation_weight = 0.0f;
};

// FinalIK's defaults: arms keep no hand rotation, legs keep the foot's
// (maintain_rotation_weight 0 and 1); everything else as above.
std::array<BipedLimbSettings, kNumBipedLimbs> DefaultBipedLimbSettings();

struct BipedEffectorResult {
  // position_weight * master weight > 0.
  bool active = false;
  // Distance from the effector's bone (or end point) to its position in the
  // output, model units; 0 when not active.
  float error = 0.0f;
  // Active and within the tolerance.
  bool reached = false;
  // The tolerance it was judged by, model units (the job's tolerance
  // resolved for this effector's limb); 0 when not active.
  float tolerance = 0.0f;
};

struct FullBodyBipedIkResult {
  std::array<BipedEffectorResult, kNumBipedEffectors> effectors;
  // Every active effector reached (vacuously true with none).
  bool reached = true;
  // Largest error over the active effectors.
  float max_error = 0.0f;
  // Solver iterations run (0 when nothing was solved); with `converge`, at
  // most the job's `iterations`.
  int iterations = 0;
  // Length of the closing step's translation of the body (0 when the
  // iterations brought every goal within reach, or without `converge`).
  float closing_translation = 0.0f;
  // The mapping's set-up warnings, then this solve's (a rotation asked of a
  // foot that is only an end point, coincident plane nodes).
  std::vector<std::string> warnings;
};

struct FullBodyBipedIkJob {
  // Inputs.
  const Skeleton* skeleton = nullptr;
  // Local pose, one transform per joint.
  absl::Span<const Transform> input;
  // Set when `input` is known valid (every transform finite with a unit
  // rotation: CheckPose passed, as a service checks each frame's pose once):
  // Validate() then checks only its size.
  bool input_validated = false;
  // Built for `skeleton` (same joint count; indices are checked).
  const BipedMapping* mapping = nullptr;
  std::array<BipedEffector, kNumBipedEffectors> effectors{};
  std::array<BipedLimbSettings, kNumBipedLimbs> limbs =
      DefaultBipedLimbSettings();

  // Parameters.
  // FinalIK's IKPositionWeight, the master weight, clamped to [0, 1]. 0
  // returns the input bit for bit.
  float ik_position_weight = 1.0f;
  // Solver iterations, [0, kMaxFullBodyBipedIterations]: with `converge`
  // the cap, else the count. 0: four independent limb solves (no closing
  // step either).
  int iterations = kDefaultFullBodyBipedIterations;
  // Stop once every active hand and foot goal is within reach, and close
  // what the cap leaves by moving the body (see the file comment). false:
  // FinalIK's fixed count of iterations, as before this field.
  bool converge = true;
  // Spine mapping: FABRIK iterations [1, kMaxSpineMappingIterations] and the
  // weight of twisting the spine toward the shoulders ([0, 1]).
  int spine_iterations = 3;
  float spine_twist_weight = 1.0f;
  // How much the head keeps its animated model rotation ([0, 1]).
  float head_maintain_rotation_weight = 0.0f;
  // For FullBodyBipedIkResult::reached. relative_to_chain (the default,
  // 1e-4): a fraction of each effector's limb length (upper plus lower bone
  // in the input pose; the body effector's: the longest limb), the same
  // precision on a rig in metres and one in centimetres.
  IkTolerance tolerance = kDefaultChainTolerance;

  // Outputs.
  // One transform per joint; may be the same span as `input`.
  absl::Span<Transform> output;
  // Optional.
  FullBodyBipedIkResult* result = nullptr;

  BipedEffector& effector(BipedEffectorId id) {
    return effectors[static_cast<int>(id)];
  }
  BipedLimbSettings& limb(BipedLimb l) { return limbs[static_cast<int>(l)]; }

  absl::Status Validate() const;
  absl::Status Run() const;
};

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_FULL_BODY_FULL_BODY_BIPED_IK_H_
