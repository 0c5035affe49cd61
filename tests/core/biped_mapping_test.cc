// Biped mapping: automatic detection on every rig in tests/data (names
// checked against what the files say), FinalIK's root node and spine rules,
// the straight-limb default checked against geometry computed here (the
// toes say where forward is), and every validation error.
#include "solver_core/full_body/biped_mapping.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "solver_core/io/bvh_reader.h"
#include "solver_core/io/gltf_reader.h"
#include "solver_core/model/skeleton.h"
#include "tests/core/rig_assets.h"

namespace posewire {
namespace biped_mapping_test {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using test_rigs::Load;
using test_rigs::Tips;

std::string Name(const Skeleton& s, int j) {
  return j < 0 ? std::string("<none>") : s.joint_name(j);
}

// Role names of a mapping, for readable expectations.
struct Names {
  std::string pelvis, head, root_node;
  std::vector<std::string> spine;
  std::vector<std::string>
      limbs[kNumBipedLimbs];  // clavicle, upper, lower, end
};

Names NamesOf(const Skeleton& s, const BipedMapping& m) {
  Names n;
  const BipedReferences& r = m.references();
  n.pelvis = Name(s, r.pelvis);
  n.head = Name(s, r.head);
  n.root_node = Name(s, r.root_node);
  for (int j : r.spine) n.spine.push_back(Name(s, j));
  for (int l = 0; l < kNumBipedLimbs; ++l) {
    const BipedLimbReferences& limb = r.limbs[l];
    n.limbs[l] = {Name(s, limb.clavicle), Name(s, limb.upper),
                  Name(s, limb.lower),
                  limb.has_end_point ? "<point>" : Name(s, limb.end)};
  }
  return n;
}

// Model-space rest positions by 4x4 matrices (independent of Combine).
std::vector<Eigen::Vector3d> RestPositions(const Skeleton& s) {
  std::vector<Eigen::Matrix4d> m(s.num_joints());
  std::vector<Eigen::Vector3d> out(s.num_joints());
  for (int j = 0; j < s.num_joints(); ++j) {
    const Transform& t = s.rest_pose()[j];
    Eigen::Matrix4d l = Eigen::Matrix4d::Identity();
    l.topLeftCorner<3, 3>() = t.rotation.cast<double>().toRotationMatrix() *
                              t.scale.cast<double>().asDiagonal();
    l.topRightCorner<3, 1>() = t.translation.cast<double>();
    m[j] = s.parent(j) == kNoParent ? l : Eigen::Matrix4d(m[s.parent(j)] * l);
    out[j] = m[j].topRightCorner<3, 1>();
  }
  return out;
}

Eigen::Vector3d RestModelDirection(const Skeleton& s, int joint,
                                   const Eigen::Vector3f& local) {
  Eigen::Quaterniond q = Eigen::Quaterniond::Identity();
  for (int j = joint; j != kNoParent; j = s.parent(j)) {
    q = s.rest_pose()[j].rotation.cast<double>() * q;
  }
  return q * local.cast<double>();
}

TEST(BipedMappingTest, BipedMapping_Cmu3dsMaxNamesMapWithStraightLimbWarnings) {
  const ImportedAsset walk = Load("cmu_131_01_walk.bvh");
  absl::StatusOr<BipedMapping> m = MapBipedByName(walk.skeleton, Tips(walk));
  ASSERT_TRUE(m.ok()) << m.status();
  const Names n = NamesOf(walk.skeleton, *m);
  EXPECT_EQ(n.pelvis, "Hips");
  // "lowerback" has a zero OFFSET: it sits on the hips and is left out.
  EXPECT_THAT(n.spine, ElementsAre("Chest", "Chest2"));
  // Chest is 51% of the way from the hips to the shoulders, Chest2 79%:
  // neither is below half way, so FinalIK's rule keeps spine[0].
  EXPECT_EQ(n.root_node, "Chest");
  EXPECT_EQ(n.head, "Head");
  EXPECT_THAT(n.limbs[0], ElementsAre("LeftCollar", "LeftShoulder", "LeftElbow",
                                      "LeftWrist"));
  EXPECT_THAT(n.limbs[1], ElementsAre("RightCollar", "RightShoulder",
                                      "RightElbow", "RightWrist"));
  EXPECT_THAT(n.limbs[2],
              ElementsAre("<none>", "LeftHip", "LeftKnee", "LeftAnkle"));
  EXPECT_THAT(n.limbs[3],
              ElementsAre("<none>", "RightHip", "RightKnee", "RightAnkle"));
  EXPECT_EQ(m->spine_bones().size(), 3u);
  EXPECT_EQ(m->root_node_index(), 1);
  // The CMU rest pose is a T-pose variant with straight arms and legs.
  for (int l = 0; l < kNumBipedLimbs; ++l) {
    EXPECT_TRUE(m->limb_setup(static_cast<BipedLimb>(l)).straight_at_setup);
  }
  std::vector<std::string> warnings(m->warnings().begin(), m->warnings().end());
  EXPECT_THAT(warnings, ::testing::Contains(HasSubstr("lowerback")));
  EXPECT_THAT(warnings,
              ::testing::Contains(
                  "left_arm straight at set-up: bend direction defaulted "
                  "(elbow backward)"));
  EXPECT_THAT(warnings,
              ::testing::Contains(
                  "right_leg straight at set-up: bend direction defaulted "
                  "(knee forward)"));
}

TEST(BipedMappingTest, BipedMapping_StraightLimbsBendKneesForwardElbowsBack) {
  const ImportedAsset walk = Load("cmu_131_01_walk.bvh");
  absl::StatusOr<BipedMapping> m = MapBipedByName(walk.skeleton, Tips(walk));
  ASSERT_TRUE(m.ok()) << m.status();
  const Skeleton& s = walk.skeleton;
  const std::vector<Eigen::Vector3d> p = RestPositions(s);
  // Forward from the feet: ankle to toe, flattened onto the ground plane
  // (perpendicular to hips-to-neck).
  const Eigen::Vector3d up =
      (p[s.FindJoint("Neck")] - p[s.FindJoint("Hips")]).normalized();
  Eigen::Vector3d toe = p[s.FindJoint("LeftToe")] - p[s.FindJoint("LeftAnkle")];
  toe = (toe - up * up.dot(toe)).normalized();
  for (int l = 0; l < kNumBipedLimbs; ++l) {
    const BipedLimb limb = static_cast<BipedLimb>(l);
    const BipedLimbReferences& r = m->limb(limb);
    const Eigen::Vector3d bend = RestModelDirection(
        s, r.upper, m->limb_setup(limb).default_local_direction);
    const Eigen::Vector3d bone = (p[r.lower] - p[r.upper]).normalized();
    EXPECT_NEAR(bend.norm(), 1.0, 1e-5) << BipedLimbName(limb);
    EXPECT_NEAR(bend.dot(bone), 0.0, 1e-5) << BipedLimbName(limb);
    // Straight down the leg, forward is (nearly) perpendicular to the bone.
    if (IsArm(limb)) {
      EXPECT_LT(bend.dot(toe), -0.95) << BipedLimbName(limb);
    } else {
      EXPECT_GT(bend.dot(toe), 0.9) << BipedLimbName(limb);
    }
  }
}

TEST(BipedMappingTest, BipedMapping_BentLimbTakesItsBendFromTheBones) {
  // The Daz rest pose has bent knees and elbows: the default direction is
  // the knee's offset from the hip-to-foot line, made perpendicular to the
  // thigh.
  const ImportedAsset run = Load("cmu_02_03_run_daz.bvh");
  absl::StatusOr<BipedMapping> m = MapBipedByName(run.skeleton, Tips(run));
  ASSERT_TRUE(m.ok()) << m.status();
  const Skeleton& s = run.skeleton;
  const std::vector<Eigen::Vector3d> p = RestPositions(s);
  for (int l = 0; l < kNumBipedLimbs; ++l) {
    const BipedLimb limb = static_cast<BipedLimb>(l);
    const BipedLimbReferences& r = m->limb(limb);
    ASSERT_FALSE(m->limb_setup(limb).straight_at_setup) << BipedLimbName(limb);
    const Eigen::Vector3d axis = (p[r.end] - p[r.upper]).normalized();
    const Eigen::Vector3d bone = (p[r.lower] - p[r.upper]).normalized();
    Eigen::Vector3d expected = bone - axis * axis.dot(bone);
    expected = (expected - bone * bone.dot(expected)).normalized();
    const Eigen::Vector3d bend = RestModelDirection(
        s, r.upper, m->limb_setup(limb).default_local_direction);
    EXPECT_GT(bend.dot(expected), 0.99999) << BipedLimbName(limb);
    // The plane normal, in the end bone's frame.
    const Eigen::Vector3d normal = RestModelDirection(
        s, r.end, m->limb_setup(limb).default_child_direction);
    EXPECT_GT(normal.dot(axis.cross(expected).normalized()), 0.99999);
  }
  EXPECT_TRUE(m->warnings().empty());
}

TEST(BipedMappingTest, BipedMapping_MotionBuilderNamesMapWithClavicles) {
  const ImportedAsset leap = Load("cmu_49_04_run_leap.bvh");
  absl::StatusOr<DetectedBiped> d = DetectBipedReferences(leap.skeleton);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->convention, BipedNamingConvention::kMotionBuilder);
  absl::StatusOr<BipedMapping> m = MapBipedByName(leap.skeleton, Tips(leap));
  ASSERT_TRUE(m.ok()) << m.status();
  const Names n = NamesOf(leap.skeleton, *m);
  EXPECT_EQ(n.pelvis, "Hips");
  EXPECT_EQ(n.head, "Head");
  EXPECT_THAT(n.limbs[0], ElementsAre("LeftShoulder", "LeftArm", "LeftForeArm",
                                      "LeftHand"));
  EXPECT_THAT(n.limbs[3],
              ElementsAre("<none>", "RightUpLeg", "RightLeg", "RightFoot"));
  EXPECT_EQ(n.spine.back(), "Spine1");
  for (const std::string& bone : n.spine) EXPECT_NE(bone, "LowerBack");
}

TEST(BipedMappingTest, BipedMapping_DazNamesMapPelvisAboveTheButtocks) {
  const ImportedAsset run = Load("cmu_02_03_run_daz.bvh");
  absl::StatusOr<BipedMapping> m = MapBipedByName(run.skeleton, Tips(run));
  ASSERT_TRUE(m.ok()) << m.status();
  const Names n = NamesOf(run.skeleton, *m);
  // lThigh's parent is lButtock; "hip" is named and above it, so it is the
  // pelvis, and the buttocks belong to no role.
  EXPECT_EQ(n.pelvis, "hip");
  EXPECT_THAT(n.spine, ElementsAre("abdomen", "chest"));
  EXPECT_EQ(n.head, "head");
  EXPECT_THAT(n.limbs[1],
              ElementsAre("rCollar", "rShldr", "rForeArm", "rHand"));
  EXPECT_THAT(n.limbs[2], ElementsAre("<none>", "lThigh", "lShin", "lFoot"));
}

TEST(BipedMappingTest, BipedMapping_RobotExpressiveFeetAreCalfEndPoints) {
  const ImportedAsset robot = Load("RobotExpressive.glb");
  absl::StatusOr<DetectedBiped> d =
      DetectBipedReferences(robot.skeleton, Tips(robot));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->convention, BipedNamingConvention::kBlenderRobot);
  absl::StatusOr<BipedMapping> m = MapBipedByName(robot.skeleton, Tips(robot));
  ASSERT_TRUE(m.ok()) << m.status();
  const Names n = NamesOf(robot.skeleton, *m);
  // The thighs hang off "Body", which becomes the pelvis; "Hips" is the
  // first spine bone.
  EXPECT_EQ(n.pelvis, "Body");
  EXPECT_THAT(n.spine, ElementsAre("Hips", "Abdomen", "Torso"));
  EXPECT_THAT(n.limbs[0],
              ElementsAre("Shoulder.L", "UpperArm.L", "LowerArm.L", "Palm2.L"));
  EXPECT_THAT(n.limbs[2],
              ElementsAre("<none>", "UpperLeg.L", "LowerLeg.L", "<point>"));
  std::vector<std::string> warnings(m->warnings().begin(), m->warnings().end());
  EXPECT_THAT(warnings, ::testing::Contains(
                            HasSubstr("'Foot.L' is not below 'LowerLeg.L'")));
  // The end point is LowerLeg.L_end, the calf's glTF tip.
  const BipedLimbReferences& leg = m->limb(BipedLimb::kLeftLeg);
  bool matches_a_tip = false;
  for (const EndSite& e : robot.end_sites) {
    if (e.joint == leg.lower && e.offset == leg.end_point_offset) {
      matches_a_tip = true;
    }
  }
  EXPECT_TRUE(matches_a_tip);
}

TEST(BipedMappingTest, BipedMapping_FoxMapsWithoutClavicles) {
  const ImportedAsset fox = Load("Fox.glb");
  absl::StatusOr<BipedMapping> m = MapBipedByName(fox.skeleton, Tips(fox));
  ASSERT_TRUE(m.ok()) << m.status();
  const Names n = NamesOf(fox.skeleton, *m);
  EXPECT_EQ(n.pelvis, "b_Hip_01");
  EXPECT_THAT(n.spine, ElementsAre("b_Spine01_02", "b_Spine02_03"));
  EXPECT_EQ(n.head, "b_Head_05");
  // The front legs hang straight off the chest: no clavicle.
  EXPECT_THAT(n.limbs[0], ElementsAre("<none>", "b_LeftUpperArm_09",
                                      "b_LeftForeArm_010", "b_LeftHand_011"));
  EXPECT_THAT(n.limbs[3], ElementsAre("<none>", "b_RightLeg01_019",
                                      "b_RightLeg02_020", "b_RightFoot01_021"));
}

// A Mixamo-style rig built here: "mixamorig:" names, bent limbs.
Skeleton MixamoSkeleton(const std::string& prefix) {
  SkeletonDesc d;
  auto add = [&](const std::string& name, int parent, Eigen::Vector3f t) {
    d.joint_names.push_back(prefix + name);
    d.parents.push_back(parent);
    Transform x;
    x.translation = t;
    d.rest_pose.push_back(x);
    return static_cast<int>(d.parents.size()) - 1;
  };
  const int hips = add("Hips", kNoParent, {0, 100, 0});
  const int spine = add("Spine", hips, {0, 10, 0});
  const int spine1 = add("Spine1", spine, {0, 12, 0});
  const int spine2 = add("Spine2", spine1, {0, 14, 0});
  const int neck = add("Neck", spine2, {0, 15, 0});
  add("Head", neck, {0, 10, 0});
  for (float side : {1.0f, -1.0f}) {
    const std::string s = side > 0 ? "Left" : "Right";
    const int sh = add(s + "Shoulder", spine2, {side * 5, 10, 0});
    const int arm = add(s + "Arm", sh, {side * 10, 0, 0});
    const int fore = add(s + "ForeArm", arm, {side * 25, 0, -2});
    add(s + "Hand", fore, {side * 25, 0, 2});
    const int up = add(s + "UpLeg", hips, {side * 9, -5, 0});
    const int leg = add(s + "Leg", up, {0, -40, 2});
    add(s + "Foot", leg, {0, -40, -2});
  }
  absl::StatusOr<Skeleton> s = Skeleton::Create(d);
  EXPECT_TRUE(s.ok()) << s.status();
  return *std::move(s);
}

TEST(BipedMappingTest, BipedMapping_MixamoNamespacesAreIgnored) {
  for (const std::string prefix : {"mixamorig:", "mixamorig1_", "Char:"}) {
    const Skeleton s = MixamoSkeleton(prefix);
    absl::StatusOr<BipedMapping> m = MapBipedByName(s);
    ASSERT_TRUE(m.ok()) << prefix << ": " << m.status();
    const Names n = NamesOf(s, *m);
    EXPECT_EQ(n.pelvis, prefix + "Hips");
    EXPECT_THAT(n.spine, ElementsAre(prefix + "Spine", prefix + "Spine1",
                                     prefix + "Spine2"));
    // Measured from the thighs (5 below the hips) toward the upper arms (46
    // above the hips): Spine1 is at 27/51, Spine2 at 41/51, neither below
    // half way, so FinalIK's rule keeps spine[0].
    EXPECT_EQ(n.root_node, prefix + "Spine");
    EXPECT_THAT(n.limbs[1],
                ElementsAre(prefix + "RightShoulder", prefix + "RightArm",
                            prefix + "RightForeArm", prefix + "RightHand"));
    EXPECT_TRUE(m->warnings().empty());
  }
}

TEST(BipedMappingTest, BipedMapping_UnknownNamingIsNotFound) {
  const ImportedAsset simple = Load("RiggedSimple.glb");
  absl::StatusOr<BipedMapping> m = MapBipedByName(simple.skeleton);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(m.status().message(), HasSubstr("MotionBuilder/Mixamo: no"));
  EXPECT_THAT(m.status().message(), HasSubstr("Daz: no"));
}

// Explicit mappings and FinalIK's validation.
class ExplicitMappingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    skeleton_ = MixamoSkeleton("");
    names_.pelvis = "Hips";
    names_.spine = {"Spine", "Spine1", "Spine2"};
    names_.head = "Head";
    names_.limbs[0] = {"LeftShoulder", "LeftArm", "LeftForeArm", "LeftHand"};
    names_.limbs[1] = {"RightShoulder", "RightArm", "RightForeArm",
                       "RightHand"};
    names_.limbs[2] = {"", "LeftUpLeg", "LeftLeg", "LeftFoot"};
    names_.limbs[3] = {"", "RightUpLeg", "RightLeg", "RightFoot"};
  }

  absl::Status Build() {
    absl::StatusOr<BipedReferences> refs =
        ResolveBipedJointNames(skeleton_, names_);
    if (!refs.ok()) return refs.status();
    return BipedMapping::Create(skeleton_, *refs).status();
  }

  Skeleton skeleton_;
  BipedJointNames names_;
};

TEST_F(ExplicitMappingTest, BipedMapping_ExplicitNamesBuildAMapping) {
  names_.root_node = "Spine1";
  absl::StatusOr<BipedReferences> refs =
      ResolveBipedJointNames(skeleton_, names_);
  ASSERT_TRUE(refs.ok()) << refs.status();
  absl::StatusOr<BipedMapping> m = BipedMapping::Create(skeleton_, *refs);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->references().root_node, skeleton_.FindJoint("Spine1"));
  EXPECT_EQ(m->root_node_index(), 2);  // pelvis, Spine, Spine1
}

TEST_F(ExplicitMappingTest, BipedMapping_UnknownNameIsNotFound) {
  names_.limbs[0].lower = "LeftElbow";
  absl::Status s = Build();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("left_arm.lower"));
  EXPECT_THAT(s.message(), HasSubstr("'LeftElbow'"));
}

TEST_F(ExplicitMappingTest, BipedMapping_MissingBoneIsRejected) {
  names_.limbs[3].end = "";
  absl::Status s = Build();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("right_leg.end: missing"));
}

TEST_F(ExplicitMappingTest, BipedMapping_JointInTwoRolesIsRejected) {
  names_.limbs[1].end = "LeftHand";
  absl::Status s = Build();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("already the left_arm.end"));
}

TEST_F(ExplicitMappingTest, BipedMapping_LimbOutOfHierarchyIsRejected) {
  names_.limbs[2].lower = "RightLeg";
  names_.limbs[3].lower = "LeftLeg";
  absl::Status s = Build();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("left_leg.lower"));
  EXPECT_THAT(s.message(), HasSubstr("is not below the upper bone"));
}

TEST_F(ExplicitMappingTest, BipedMapping_SpineOutOfOrderIsRejected) {
  names_.spine = {"Spine1", "Spine"};
  absl::Status s = Build();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("spine[1]"));
}

TEST_F(ExplicitMappingTest, BipedMapping_RootNodeOutsideTheSpineIsRejected) {
  names_.root_node = "Neck";
  absl::Status s = Build();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("root_node"));
}

TEST_F(ExplicitMappingTest, BipedMapping_LegClavicleIsRejected) {
  names_.limbs[2].clavicle = "Hips";
  names_.pelvis = "Spine";
  names_.spine = {"Spine1", "Spine2"};
  absl::Status s = Build();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("left_leg.clavicle"));
}

TEST_F(ExplicitMappingTest, BipedMapping_EmptySpineIsRejected) {
  names_.spine.clear();
  absl::Status s = Build();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("spine: empty"));
}

TEST(BipedMappingTest, BipedMapping_CoincidentSpineBoneIsRejected) {
  // FinalIK: "spine bone position is the same as its parent ... remove this
  // bone from the spine". CMU's lowerback sits on the hips.
  const ImportedAsset walk = Load("cmu_131_01_walk.bvh");
  absl::StatusOr<DetectedBiped> d = DetectBipedReferences(walk.skeleton);
  ASSERT_TRUE(d.ok()) << d.status();
  BipedReferences refs = d->references;
  refs.spine.insert(refs.spine.begin(), walk.skeleton.FindJoint("lowerback"));
  absl::StatusOr<BipedMapping> m = BipedMapping::Create(walk.skeleton, refs);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("spine[0]"));
  EXPECT_THAT(m.status().message(), HasSubstr("same point"));
}

TEST(BipedMappingTest, BipedMapping_ZeroLengthLimbBoneIsRejected) {
  // lhand has a zero OFFSET below LeftWrist.
  const ImportedAsset walk = Load("cmu_131_01_walk.bvh");
  absl::StatusOr<DetectedBiped> d = DetectBipedReferences(walk.skeleton);
  ASSERT_TRUE(d.ok()) << d.status();
  BipedReferences refs = d->references;
  refs.limbs[0].end = walk.skeleton.FindJoint("lhand");
  refs.limbs[0].lower = walk.skeleton.FindJoint("LeftWrist");
  absl::StatusOr<BipedMapping> m = BipedMapping::Create(walk.skeleton, refs);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("left_arm.end"));
  EXPECT_THAT(m.status().message(), HasSubstr("zero-length"));
}

TEST(BipedMappingTest, BipedMapping_OutOfRangeIndexIsRejected) {
  const ImportedAsset walk = Load("cmu_131_01_walk.bvh");
  absl::StatusOr<DetectedBiped> d = DetectBipedReferences(walk.skeleton);
  ASSERT_TRUE(d.ok()) << d.status();
  BipedReferences refs = d->references;
  refs.head = 1000;
  absl::StatusOr<BipedMapping> m = BipedMapping::Create(walk.skeleton, refs);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("head: joint 1000 is out of"));
}

TEST(BipedMappingTest, BipedMapping_SetupPoseDecidesTheBendDirection) {
  // The same CMU skeleton set up in a walking frame (bent knees) needs no
  // default: no straight-leg warning.
  const ImportedAsset walk = Load("cmu_131_01_walk.bvh");
  absl::StatusOr<DetectedBiped> d = DetectBipedReferences(walk.skeleton);
  ASSERT_TRUE(d.ok()) << d.status();
  std::vector<Transform> pose(walk.skeleton.rest_pose().begin(),
                              walk.skeleton.rest_pose().end());
  const Clip& clip = walk.clips[0];
  for (int j = 0; j < walk.skeleton.num_joints(); ++j) {
    if (!clip.tracks[j].rotation.empty()) {
      pose[j].rotation = clip.tracks[j].rotation.key_value(60);
    }
  }
  absl::StatusOr<BipedMapping> m =
      BipedMapping::Create(walk.skeleton, d->references, pose);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_FALSE(m->limb_setup(BipedLimb::kLeftLeg).straight_at_setup);
  EXPECT_FALSE(m->limb_setup(BipedLimb::kRightLeg).straight_at_setup);
}

}  // namespace biped_mapping_test
}  // namespace posewire
