// Biped mapping for the full-body biped IK (full_body_biped_ik.h): which
// joints play the roles of FinalIK's BipedReferences (pelvis, spine, head,
// and per limb clavicle, upper arm / thigh, forearm / calf, hand / foot),
// found from joint names or given explicitly, validated the way FinalIK
// validates them, plus the set-up data FinalIK computes once when its solver
// initiates (IKConstraintBend.Initiate: the default bend direction of each
// limb). Source: FinalIK's FullBodyBipedIK
// (SetToReferences, DetectRootNodeBone, BipedReferences.SetupError and
// SetupWarning, IKConstraintBend.Initiate).
//
// Detection by name (DetectBipedReferences) follows FinalIK's
// DetectReferencesByNaming once the twelve limb bones are found:
//  - limb bones by naming convention, tried in this order (names compared
//    case-insensitively, after dropping a namespace prefix such as
//    "mixamorig:" or "mixamorig1_"):
//      MotionBuilder / Mixamo: LeftArm LeftForeArm LeftHand, LeftUpLeg
//        LeftLeg LeftFoot (cmu_49_04_run_leap.bvh, cmu_01_*.bvh,
//        "mixamorig:LeftArm");
//      CMU 3ds Max style: LeftShoulder LeftElbow LeftWrist, LeftHip LeftKnee
//        LeftAnkle (cmu_131_01_walk.bvh);
//      Daz: lShldr lForeArm lHand, lThigh lShin lFoot (also the Genesis
//        "Bend" names; cmu_02_03_run_daz.bvh, threejs_pirouette_cmu.bvh);
//      Blender .L/.R as in RobotExpressive.glb: UpperArm.L LowerArm.L
//        Palm2.L, UpperLeg.L LowerLeg.L Foot.L;
//      Fox.glb: b_LeftUpperArm_09 b_LeftForeArm_010 b_LeftHand_011,
//        b_LeftLeg01_015 b_LeftLeg02_016 b_LeftFoot01_017 (and Right...).
//  - pelvis: the convention's pelvis name when it is an ancestor of the left
//    thigh, else the left thigh's parent (RobotExpressive's thighs hang off
//    "Body", not "Hips");
//  - spine: the ancestors of the upper arms' first common ancestor, up to but
//    not including the pelvis, bottom to top; the thigh's parent is left out
//    (FinalIK's AddBoneToSpine), and so is a bone that sits exactly on the
//    previous spine bone or the pelvis in the set-up pose (FinalIK rejects
//    those with "Please remove this bone from the spine"; CMU's zero-offset
//    "lowerback" is one);
//  - clavicle: the upper arm's parent unless that is a spine bone (FinalIK's
//    GetLeftClavicle);
//  - head: the convention's head name, else the first child of the upper
//    arms' common ancestor that contains neither arm;
//  - hand / foot: when the named end bone is not below the forearm / calf
//    (RobotExpressive's Foot.L is an IK control parented to the root) and a
//    tip point hangs off the calf (a BVH End Site, a glTF "_end" leaf), that
//    point is the foot: its position is solved, its rotation cannot be
//    written. A note says so.
//
// Validation (BipedMapping::Create), as BipedReferences.SetupError: every
// role filled (FBBIK's chains have 1, 3, 3, 3, 3 nodes: the root node and
// three bones per limb), indices in range, no joint in two roles, each limb
// bone an ancestor of the next, the spine an ancestry chain above the pelvis,
// no limb or spine bone on the same point as the previous one in the set-up
// pose, the root node one of the pelvis and spine bones, a clavicle an
// ancestor of its upper arm outside the spine. As SetupWarning, a limb that
// is straight in the set-up pose is not an error: FinalIK cannot tell its
// bend direction from the bones, so the mapping defaults it from the torso
// (knees bend forward, elbows backward; forward is (left - right) x up with
// up from the hips to the shoulders, right-handed axes) and records a
// warning, e.g. "left_arm straight at set-up: bend direction defaulted
// (elbow backward)".
#ifndef POSEWIRE_SOLVER_CORE_FULL_BODY_BIPED_MAPPING_H_
#define POSEWIRE_SOLVER_CORE_FULL_BODY_BIPED_MAPPING_H_

#include <Eigen/Geometry>
#include <array>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"

namespace posewire {

// FinalIK's chain order: chains 1..4 of the solver are these limbs.
enum class BipedLimb : int {
  kLeftArm = 0,
  kRightArm = 1,
  kLeftLeg = 2,
  kRightLeg = 3,
};
inline constexpr int kNumBipedLimbs = 4;

// "left_arm", "right_arm", "left_leg", "right_leg".
const char* BipedLimbName(BipedLimb limb);
inline bool IsArm(BipedLimb limb) {
  return limb == BipedLimb::kLeftArm || limb == BipedLimb::kRightArm;
}

struct BipedLimbReferences {
  // Arms only, optional (-1): the bone above the upper arm that FinalIK
  // swings toward the solved shoulder.
  int clavicle = -1;
  int upper = -1;  // upper arm or thigh
  int lower = -1;  // forearm or calf
  int end = -1;    // hand or foot; -1 when has_end_point
  // With end == -1: the hand / foot is the point end_point_offset in
  // lower's space (a tip below the calf). Solved as a position only.
  bool has_end_point = false;
  Eigen::Vector3f end_point_offset = Eigen::Vector3f::Zero();
};

struct BipedReferences {
  int pelvis = -1;
  // Spine bones above the pelvis, bottom to top; at least one.
  std::vector<int> spine;
  // Optional (-1).
  int head = -1;
  // The spine bone where the hip and chest triangles meet (FBBIK's only
  // body node); the pelvis or one of `spine`. -1: detected as FinalIK's
  // DetectRootNodeBone does (the highest spine bone below the middle of the
  // hips-to-shoulders line).
  int root_node = -1;
  std::array<BipedLimbReferences, kNumBipedLimbs> limbs;
};

// An explicit mapping by joint names (empty string: not set).
struct BipedJointNames {
  std::string pelvis;
  std::vector<std::string> spine;
  std::string head;
  std::string root_node;
  struct Limb {
    std::string clavicle;
    std::string upper;
    std::string lower;
    std::string end;
  };
  std::array<Limb, kNumBipedLimbs> limbs;
};

// Indices for `names`; NOT_FOUND naming the role and the name when a given
// name is not a joint of `skeleton`.
absl::StatusOr<BipedReferences> ResolveBipedJointNames(
    const Skeleton& skeleton, const BipedJointNames& names);

// A point below a joint that is not itself a joint (a BVH End Site, a glTF
// leaf such as "LowerLeg.L_end"); ImportedAsset::end_sites converts 1:1.
struct BipedTip {
  int joint = -1;
  Eigen::Vector3f offset = Eigen::Vector3f::Zero();  // in the joint's space
};

enum class BipedNamingConvention {
  kMotionBuilder,  // and Mixamo
  kCmu3dsMax,
  kDaz,
  kBlenderRobot,  // RobotExpressive.glb
  kFox,           // Fox.glb
};
const char* BipedNamingConventionName(BipedNamingConvention convention);

struct DetectedBiped {
  BipedReferences references;
  BipedNamingConvention convention = BipedNamingConvention::kMotionBuilder;
  // What detection decided that a user may want to know (spine bones left
  // out, a foot taken from a tip point).
  std::vector<std::string> notes;
};

// Finds the biped roles from joint names (see the file comment). Positions
// (spine bones on the same point, the head fallback) are read from the rest
// pose. NOT_FOUND when no convention names all twelve limb bones (the error
// lists, per convention, the first name missing); INVALID_ARGUMENT when the
// names are found but the hierarchy cannot be a biped (no pelvis above the
// arms, an empty spine).
absl::StatusOr<DetectedBiped> DetectBipedReferences(
    const Skeleton& skeleton, absl::Span<const BipedTip> tips = {});

// Set-up data of one limb (FinalIK's IKConstraintBend.Initiate).
struct BipedLimbSetup {
  // Unit direction from the upper-to-end line toward the elbow / knee,
  // perpendicular to the upper bone, in the upper bone's frame.
  Eigen::Vector3f default_local_direction = Eigen::Vector3f::UnitX();
  // Unit normal of the limb plane, (end - upper) x direction, in the end
  // bone's frame (the forearm / calf frame for an end point).
  Eigen::Vector3f default_child_direction = Eigen::Vector3f::UnitZ();
  // True when the limb was straight in the set-up pose and the directions
  // above were defaulted from the torso.
  bool straight_at_setup = false;
};

class BipedMapping;

// DetectBipedReferences, then BipedMapping::Create on the rest pose. The
// detection notes are prepended to the mapping's warnings.
absl::StatusOr<BipedMapping> MapBipedByName(
    const Skeleton& skeleton, absl::Span<const BipedTip> tips = {});

// Validated references plus set-up data; immutable, shared by every solve
// on the skeleton it was built for.
class BipedMapping {
 public:
  // Validates `references` against `skeleton` (see the file comment) in the
  // set-up pose `setup_pose` (a local pose; empty: the rest pose), detects
  // the root node when it is -1, and computes each limb's default bend
  // direction. Errors are INVALID_ARGUMENT naming the role and the joint.
  static absl::StatusOr<BipedMapping> Create(
      const Skeleton& skeleton, BipedReferences references,
      absl::Span<const Transform> setup_pose = {});

  BipedMapping() = default;

  const BipedReferences& references() const { return references_; }
  int num_joints() const { return num_joints_; }
  // FinalIK's spine mapping bones: the pelvis, then the spine.
  absl::Span<const int> spine_bones() const { return spine_bones_; }
  // Index of the root node in spine_bones().
  int root_node_index() const { return root_node_index_; }
  const BipedLimbReferences& limb(BipedLimb l) const {
    return references_.limbs[static_cast<int>(l)];
  }
  const BipedLimbSetup& limb_setup(BipedLimb l) const {
    return setups_[static_cast<int>(l)];
  }
  // Set-up warnings (straight limbs), in limb order.
  absl::Span<const std::string> warnings() const { return warnings_; }

 private:
  friend absl::StatusOr<BipedMapping> MapBipedByName(
      const Skeleton& skeleton, absl::Span<const BipedTip> tips);

  BipedReferences references_;
  int num_joints_ = 0;
  std::vector<int> spine_bones_;
  int root_node_index_ = 0;
  std::array<BipedLimbSetup, kNumBipedLimbs> setups_;
  std::vector<std::string> warnings_;
};

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_FULL_BODY_BIPED_MAPPING_H_
