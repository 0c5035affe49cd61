// Skeleton construction and queries, and pose validation (pose.h): every
// error path of Skeleton::Create, ValidateTransform and ValidatePose with its
// status code and a message naming the field and the joint; the O(1) subtree
// queries checked exhaustively against brute-force ancestor walks.

#include "solver_core/model/skeleton.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/transform.h"

namespace posewire {
namespace skeleton_test {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Names "j0", "j1", ... and an identity rest pose for the given parents.
SkeletonDesc DescFromParents(std::vector<int> parents) {
  SkeletonDesc desc;
  desc.joint_names.reserve(parents.size());
  for (size_t i = 0; i < parents.size(); ++i) {
    desc.joint_names.push_back(absl::StrCat("j", i));
  }
  desc.rest_pose.assign(parents.size(), Transform::Identity());
  desc.parents = std::move(parents);
  return desc;
}

Skeleton MustCreate(SkeletonDesc desc) {
  absl::StatusOr<Skeleton> s = Skeleton::Create(std::move(desc));
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : Skeleton();
}

// Expects an InvalidArgument status whose message contains every fragment.
void ExpectInvalid(const absl::Status& status,
                   std::initializer_list<std::string> fragments) {
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  const std::string message(status.message());
  for (const std::string& fragment : fragments) {
    EXPECT_THAT(message, HasSubstr(fragment));
  }
}

void ExpectCreateFails(SkeletonDesc desc,
                       std::initializer_list<std::string> fragments) {
  absl::StatusOr<Skeleton> s = Skeleton::Create(std::move(desc));
  ASSERT_FALSE(s.ok()) << "Create accepted an invalid skeleton";
  ExpectInvalid(s.status(), fragments);
}

// Brute-force answers computed only from the parent array.
bool IsAncestorOrSelf(const std::vector<int>& parents, int root, int joint) {
  for (int j = joint; j != kNoParent; j = parents[j]) {
    if (j == root) return true;
  }
  return false;
}

int BruteDepth(const std::vector<int>& parents, int joint) {
  int depth = 0;
  for (int j = joint; j != kNoParent; j = parents[j]) ++depth;
  return depth;
}

// A deterministic forest in non-DFS topological order: each joint's parent is
// drawn at random among the joints before it, with a few extra roots.
std::vector<int> RandomParents(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int> parents(n);
  for (int i = 0; i < n; ++i) {
    if (i == 0 || rng() % 25 == 0) {
      parents[i] = kNoParent;
    } else {
      parents[i] = static_cast<int>(rng() % static_cast<uint32_t>(i));
    }
  }
  return parents;
}

// ---------------------------------------------------------------------------
// Valid skeletons.

TEST(Skeleton, SingleJointIsItsOwnWholeSubtree) {
  SkeletonDesc desc;
  desc.joint_names = {"Hips"};
  desc.parents = {kNoParent};
  Transform rest;
  rest.translation = Eigen::Vector3f(0, 1, 0);
  desc.rest_pose = {rest};
  const Skeleton s = MustCreate(desc);
  ASSERT_EQ(s.num_joints(), 1);
  EXPECT_EQ(s.parent(0), kNoParent);
  EXPECT_EQ(s.joint_name(0), "Hips");
  EXPECT_EQ(s.rest_pose()[0], rest);
  EXPECT_EQ(s.FindJoint("Hips"), 0);
  EXPECT_THAT(s.children(0), IsEmpty());
  EXPECT_TRUE(s.IsInSubtree(0, 0));
  EXPECT_EQ(s.SubtreeSize(0), 1);
  EXPECT_EQ(s.Depth(0), 1);
}

TEST(Skeleton, KeepsNamesParentsAndRestPoseInGivenOrder) {
  SkeletonDesc desc;
  desc.joint_names = {"root", "spine", "head"};
  desc.parents = {kNoParent, 0, 1};
  for (int i = 0; i < 3; ++i) {
    Transform t;
    t.translation = Eigen::Vector3f(0, static_cast<float>(i), 0);
    desc.rest_pose.push_back(t);
  }
  const SkeletonDesc copy = desc;
  const Skeleton s = MustCreate(desc);
  ASSERT_EQ(s.num_joints(), 3);
  EXPECT_THAT(s.joint_names(), ElementsAre("root", "spine", "head"));
  EXPECT_THAT(s.parents(), ElementsAre(kNoParent, 0, 1));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(s.rest_pose()[i], copy.rest_pose[i]);
}

TEST(Skeleton, ForestOfSeveralRootsKeepsSubtreesApart) {
  //   0        3       5
  //  / \       |
  // 1   2      4
  const Skeleton s = MustCreate(DescFromParents({-1, 0, 0, -1, 3, -1}));
  EXPECT_EQ(s.SubtreeSize(0), 3);
  EXPECT_EQ(s.SubtreeSize(3), 2);
  EXPECT_EQ(s.SubtreeSize(5), 1);
  for (int j : {0, 1, 2}) {
    EXPECT_TRUE(s.IsInSubtree(0, j));
    EXPECT_FALSE(s.IsInSubtree(3, j));
    EXPECT_FALSE(s.IsInSubtree(5, j));
  }
  EXPECT_TRUE(s.IsInSubtree(3, 4));
  EXPECT_FALSE(s.IsInSubtree(0, 4));
  EXPECT_FALSE(s.IsInSubtree(4, 3));
  EXPECT_FALSE(s.IsInSubtree(0, 5));
  EXPECT_EQ(s.Depth(0), 1);
  EXPECT_EQ(s.Depth(3), 1);
  EXPECT_EQ(s.Depth(5), 1);
  EXPECT_EQ(s.Depth(4), 2);
  EXPECT_THAT(s.children(0), ElementsAre(1, 2));
  EXPECT_THAT(s.children(3), ElementsAre(4));
  EXPECT_THAT(s.children(5), IsEmpty());
}

TEST(Skeleton, LevelOrderListsShallowerJointsFirstThenByIndex) {
  //   0        3       5
  //  / \       |
  // 1   2      4
  //     |
  //     6
  const Skeleton s = MustCreate(DescFromParents({-1, 0, 0, -1, 3, -1, 2}));
  EXPECT_THAT(s.level_order(), ElementsAre(0, 3, 5, 1, 2, 4, 6));
  // Every parent before its children, depths never decreasing.
  std::vector<int> position(s.num_joints());
  for (int k = 0; k < s.num_joints(); ++k) position[s.level_order()[k]] = k;
  for (int j = 0; j < s.num_joints(); ++j) {
    if (s.parent(j) != kNoParent) {
      EXPECT_LT(position[s.parent(j)], position[j]);
    }
  }
  for (int k = 1; k < s.num_joints(); ++k) {
    EXPECT_LE(s.Depth(s.level_order()[k - 1]), s.Depth(s.level_order()[k]));
  }
}

// Depth-first numbering over a 60000-deep chain must not recurse.
TEST(Skeleton, DeepChainOfSixtyThousandJointsBuildsWithoutRecursion) {
  constexpr int kN = 60000;
  std::vector<int> parents(kN);
  for (int i = 0; i < kN; ++i) parents[i] = i - 1;
  const Skeleton s = MustCreate(DescFromParents(parents));
  ASSERT_EQ(s.num_joints(), kN);
  EXPECT_EQ(s.Depth(0), 1);
  EXPECT_EQ(s.Depth(kN - 1), kN);
  EXPECT_EQ(s.SubtreeSize(0), kN);
  EXPECT_EQ(s.SubtreeSize(kN - 1), 1);
  for (int k : {1, 17, 29999, 59998}) {
    EXPECT_EQ(s.SubtreeSize(k), kN - k);
    EXPECT_EQ(s.Depth(k), k + 1);
    EXPECT_THAT(s.children(k), ElementsAre(k + 1));
    EXPECT_TRUE(s.IsInSubtree(k, kN - 1));
    EXPECT_TRUE(s.IsInSubtree(k, k));
    EXPECT_FALSE(s.IsInSubtree(k, k - 1));
    EXPECT_FALSE(s.IsInSubtree(kN - 1, k));
  }
  EXPECT_EQ(s.FindJoint("j59999"), kN - 1);
  // Copying and destroying a deep skeleton must not recurse either.
  const Skeleton copy = s;
  EXPECT_EQ(copy.SubtreeSize(0), kN);
}

TEST(Skeleton, WideStarListsEveryChildInIndexOrder) {
  constexpr int kLeaves = 10000;
  std::vector<int> parents(kLeaves + 1, 0);
  parents[0] = kNoParent;
  const Skeleton s = MustCreate(DescFromParents(parents));
  const absl::Span<const int> children = s.children(0);
  ASSERT_EQ(children.size(), static_cast<size_t>(kLeaves));
  for (int i = 0; i < kLeaves; ++i) EXPECT_EQ(children[i], i + 1);
  EXPECT_EQ(s.SubtreeSize(0), kLeaves + 1);
  for (int leaf : {1, 5000, kLeaves}) {
    EXPECT_EQ(s.Depth(leaf), 2);
    EXPECT_EQ(s.SubtreeSize(leaf), 1);
    EXPECT_THAT(s.children(leaf), IsEmpty());
    EXPECT_TRUE(s.IsInSubtree(0, leaf));
    EXPECT_FALSE(s.IsInSubtree(leaf, 0));
    EXPECT_FALSE(s.IsInSubtree(leaf, leaf == 1 ? 2 : 1));
  }
}

TEST(Skeleton, AcceptsExactlyTheMaximumJointCount) {
  std::vector<int> parents(kMaxSkeletonJoints, 0);
  parents[0] = kNoParent;
  absl::StatusOr<Skeleton> s = Skeleton::Create(DescFromParents(parents));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->num_joints(), kMaxSkeletonJoints);
}

TEST(Skeleton, RestRotationJustWithinUnitToleranceIsAccepted) {
  SkeletonDesc desc = DescFromParents({-1, 0});
  const float factor = 1.0f + 0.5f * kUnitQuaternionTolerance;
  desc.rest_pose[1].rotation = Eigen::Quaternionf(
      Eigen::AngleAxisf(0.7f, Eigen::Vector3f(1, 2, 3).normalized()));
  desc.rest_pose[1].rotation.coeffs() *= factor;
  EXPECT_TRUE(Skeleton::Create(desc).ok());
  desc.rest_pose[1].rotation.coeffs() /= factor * factor;  // now below 1
  EXPECT_TRUE(Skeleton::Create(desc).ok());
}

// A zero scale in the rest pose is legal (rigs hide parts that way); only
// ModelToLocal needs non-zero scale on parents, and it checks per frame.
TEST(Skeleton, ZeroRestScaleIsAccepted) {
  SkeletonDesc desc = DescFromParents({-1, 0, 1});
  desc.rest_pose[1].scale = Eigen::Vector3f::Zero();
  EXPECT_TRUE(Skeleton::Create(desc).ok());
}

// ---------------------------------------------------------------------------
// Every error path of Skeleton::Create.

TEST(Skeleton, EmptyDescriptionIsRejected) {
  ExpectCreateFails(SkeletonDesc(), {"skeleton", "no joints"});
}

TEST(Skeleton, MoreNamesThanParentsIsRejected) {
  SkeletonDesc desc = DescFromParents({-1, 0});
  desc.joint_names.push_back("extra");
  ExpectCreateFails(desc, {"skeleton.joint_names", "3 names", "2 parents"});
}

TEST(Skeleton, FewerNamesThanParentsIsRejected) {
  SkeletonDesc desc = DescFromParents({-1, 0, 1});
  desc.joint_names.pop_back();
  ExpectCreateFails(desc, {"skeleton.joint_names", "2 names", "3 parents"});
}

TEST(Skeleton, NamesWithoutParentsIsASizeMismatchNotAnEmptySkeleton) {
  SkeletonDesc desc = DescFromParents({-1, 0});
  desc.parents.clear();
  ExpectCreateFails(desc, {"skeleton.joint_names", "2 names", "0 parents"});
}

TEST(Skeleton, RestPoseSizeMismatchIsRejected) {
  SkeletonDesc desc = DescFromParents({-1, 0, 1});
  desc.rest_pose.pop_back();
  ExpectCreateFails(desc, {"skeleton.rest_pose", "2 transforms", "3 joints"});
  desc = DescFromParents({-1, 0, 1});
  desc.rest_pose.push_back(Transform::Identity());
  ExpectCreateFails(desc, {"skeleton.rest_pose", "4 transforms", "3 joints"});
}

TEST(Skeleton, EmptyJointNameIsRejected) {
  SkeletonDesc desc = DescFromParents({-1, 0, 1});
  desc.joint_names[1] = "";
  ExpectCreateFails(desc, {"skeleton.joint_names[1]", "empty name"});
}

TEST(Skeleton, DuplicateJointNameIsRejectedNamingBothJoints) {
  SkeletonDesc desc = DescFromParents({-1, 0, 1, 2});
  desc.joint_names[3] = "j1";
  ExpectCreateFails(
      desc, {"skeleton.joint_names[3]", "'j1'", "duplicate of joint 1"});
}

TEST(Skeleton, NegativeParentOtherThanNoParentIsRejected) {
  for (int bad : {-2, -100, std::numeric_limits<int>::min()}) {
    SkeletonDesc desc = DescFromParents({-1, 0, bad});
    ExpectCreateFails(
        desc, {"skeleton.parents[2]", "'j2'", absl::StrCat("parent ", bad),
               "out of range", "[-1, 3)"});
  }
}

TEST(Skeleton, ParentBeyondLastJointIsRejected) {
  for (int bad : {3, 4, std::numeric_limits<int>::max()}) {
    SkeletonDesc desc = DescFromParents({-1, 0, bad});
    ExpectCreateFails(desc, {"skeleton.parents[2]", "'j2'",
                             absl::StrCat("parent ", bad), "out of range"});
  }
}

TEST(Skeleton, ParentAfterChildIsRejected) {
  SkeletonDesc desc = DescFromParents({-1, 2, 0});
  ExpectCreateFails(desc, {"skeleton.parents[1]", "'j1'", "parent 2",
                           "does not come before"});
}

TEST(Skeleton, SelfParentIsRejected) {
  ExpectCreateFails(DescFromParents({0}), {"skeleton.parents[0]", "'j0'",
                                           "parent 0", "does not come before"});
  ExpectCreateFails(DescFromParents({-1, 0, 2}),
                    {"skeleton.parents[2]", "'j2'", "parent 2"});
}

TEST(Skeleton, TwoJointCycleIsRejected) {
  ExpectCreateFails(DescFromParents({1, 0}),
                    {"skeleton.parents[0]", "'j0'", "parent 1"});
}

TEST(Skeleton, NonFiniteRestTranslationIsRejected) {
  for (const float bad : {kNaN, kInf, -kInf}) {
    for (int c = 0; c < 3; ++c) {
      SkeletonDesc desc = DescFromParents({-1, 0, 1});
      desc.rest_pose[2].translation[c] = bad;
      ExpectCreateFails(desc, {"skeleton.rest_pose[2]", "'j2'", "translation",
                               "NaN or infinite"});
    }
  }
}

TEST(Skeleton, NonFiniteRestRotationIsRejected) {
  for (const float bad : {kNaN, kInf, -kInf}) {
    for (int c = 0; c < 4; ++c) {
      SkeletonDesc desc = DescFromParents({-1, 0, 1});
      desc.rest_pose[1].rotation.coeffs()[c] = bad;
      ExpectCreateFails(desc, {"skeleton.rest_pose[1]", "'j1'", "rotation",
                               "NaN or infinite"});
    }
  }
}

TEST(Skeleton, NonFiniteRestScaleIsRejected) {
  for (const float bad : {kNaN, kInf, -kInf}) {
    for (int c = 0; c < 3; ++c) {
      SkeletonDesc desc = DescFromParents({-1, 0, 1});
      desc.rest_pose[0].scale[c] = bad;
      ExpectCreateFails(
          desc, {"skeleton.rest_pose[0]", "'j0'", "scale", "NaN or infinite"});
    }
  }
}

TEST(Skeleton, NonUnitRestRotationBeyondToleranceIsRejected) {
  SkeletonDesc desc = DescFromParents({-1, 0});
  desc.rest_pose[1].rotation.coeffs() *= 1.0f + 2.0f * kUnitQuaternionTolerance;
  ExpectCreateFails(
      desc, {"skeleton.rest_pose[1]", "'j1'", "rotation norm", "is not 1"});
  desc.rest_pose[1].rotation.coeffs().setZero();
  ExpectCreateFails(desc, {"skeleton.rest_pose[1]", "rotation norm 0"});
  desc.rest_pose[1].rotation = Eigen::Quaternionf(0.5f, 0.5f, 0.5f, 0.4f);
  ExpectCreateFails(desc, {"skeleton.rest_pose[1]", "rotation norm"});
}

TEST(Skeleton, MoreThanMaximumJointsIsRejected) {
  std::vector<int> parents(kMaxSkeletonJoints + 1, 0);
  parents[0] = kNoParent;
  ExpectCreateFails(DescFromParents(parents),
                    {"skeleton", absl::StrCat(kMaxSkeletonJoints + 1),
                     absl::StrCat("maximum of ", kMaxSkeletonJoints)});
}

TEST(Skeleton, FirstOffendingJointIsReported) {
  SkeletonDesc desc = DescFromParents({-1, 0, 1, 2});
  desc.rest_pose[3].translation.x() = kNaN;
  desc.rest_pose[2].scale.y() = kInf;
  ExpectCreateFails(desc, {"skeleton.rest_pose[2]", "'j2'", "scale"});
}

// ---------------------------------------------------------------------------
// Queries.

TEST(Skeleton, FindJointReturnsIndexOrMinusOne) {
  SkeletonDesc desc;
  desc.joint_names = {"Hips", "Spine", "LeftUpLeg", "LeftLeg"};
  desc.parents = {-1, 0, 0, 2};
  desc.rest_pose.assign(4, Transform::Identity());
  const Skeleton s = MustCreate(desc);
  EXPECT_EQ(s.FindJoint("Hips"), 0);
  EXPECT_EQ(s.FindJoint("Spine"), 1);
  EXPECT_EQ(s.FindJoint("LeftUpLeg"), 2);
  EXPECT_EQ(s.FindJoint("LeftLeg"), 3);
  EXPECT_EQ(s.FindJoint("RightLeg"), -1);
  EXPECT_EQ(s.FindJoint(""), -1);
  EXPECT_EQ(s.FindJoint("hips"), -1);      // case-sensitive
  EXPECT_EQ(s.FindJoint("Left"), -1);      // no prefix match
  EXPECT_EQ(s.FindJoint("LeftLeg "), -1);  // no trimming
  const std::string owned = "Spine";
  EXPECT_EQ(s.FindJoint(absl::string_view(owned).substr(0, 5)), 1);
}

TEST(Skeleton, ChildrenAreListedInIndexOrder) {
  // 0 has children 1, 3, 6; 1 has children 2, 5; 3 has child 4.
  const Skeleton s = MustCreate(DescFromParents({-1, 0, 1, 0, 3, 1, 0}));
  EXPECT_THAT(s.children(0), ElementsAre(1, 3, 6));
  EXPECT_THAT(s.children(1), ElementsAre(2, 5));
  EXPECT_THAT(s.children(3), ElementsAre(4));
  for (int leaf : {2, 4, 5, 6}) EXPECT_THAT(s.children(leaf), IsEmpty());
  EXPECT_EQ(s.SubtreeSize(1), 3);
  EXPECT_TRUE(s.IsInSubtree(1, 5));
  EXPECT_FALSE(s.IsInSubtree(3, 5));
}

TEST(Skeleton, SubtreeQueriesMatchBruteForceOnRandomHierarchy) {
  constexpr int kN = 300;
  const std::vector<int> parents = RandomParents(kN, 20240601);
  const Skeleton s = MustCreate(DescFromParents(parents));
  ASSERT_EQ(s.num_joints(), kN);
  int roots = 0;
  for (int root = 0; root < kN; ++root) {
    if (parents[root] == kNoParent) ++roots;
    int subtree_size = 0;
    std::vector<int> brute_children;
    for (int joint = 0; joint < kN; ++joint) {
      const bool expected = IsAncestorOrSelf(parents, root, joint);
      ASSERT_EQ(s.IsInSubtree(root, joint), expected)
          << "root " << root << " joint " << joint;
      if (expected) ++subtree_size;
      if (parents[joint] == root) brute_children.push_back(joint);
    }
    EXPECT_EQ(s.SubtreeSize(root), subtree_size) << root;
    EXPECT_EQ(s.Depth(root), BruteDepth(parents, root)) << root;
    EXPECT_THAT(s.children(root), ::testing::ElementsAreArray(brute_children))
        << root;
  }
  // The generator must really produce a forest with depth, or the test
  // would prove little.
  EXPECT_GT(roots, 3);
  int max_depth = 0;
  for (int j = 0; j < kN; ++j) max_depth = std::max(max_depth, s.Depth(j));
  EXPECT_GT(max_depth, 5);
}

TEST(Skeleton, SubtreeQueriesMatchBruteForceOnSeveralSeeds) {
  for (uint32_t seed : {1u, 2u, 3u, 99u}) {
    const std::vector<int> parents = RandomParents(120, seed);
    const Skeleton s = MustCreate(DescFromParents(parents));
    for (int root = 0; root < 120; ++root) {
      for (int joint = 0; joint < 120; ++joint) {
        ASSERT_EQ(s.IsInSubtree(root, joint),
                  IsAncestorOrSelf(parents, root, joint))
            << "seed " << seed << " root " << root << " joint " << joint;
      }
    }
  }
}

// ---------------------------------------------------------------------------
// ValidateTransform and ValidatePose (pose.h).

TEST(Pose, RestPoseCopiesTheSkeletonsRestPose) {
  SkeletonDesc desc = DescFromParents({-1, 0});
  desc.rest_pose[1].translation = Eigen::Vector3f(1, 2, 3);
  const Skeleton s = MustCreate(desc);
  const LocalPose pose = RestPose(s);
  ASSERT_EQ(pose.size(), 2u);
  EXPECT_EQ(pose[0], Transform::Identity());
  EXPECT_EQ(pose[1].translation, Eigen::Vector3f(1, 2, 3));
  EXPECT_TRUE(ValidatePose(s, pose, "pose").ok());
}

TEST(Pose, ValidateTransformAcceptsUnitRotationsAndAnyFiniteScale) {
  Transform t;
  t.translation = Eigen::Vector3f(-1e6f, 0, 1e6f);
  t.rotation =
      Eigen::Quaternionf(Eigen::AngleAxisf(2.0f, Eigen::Vector3f::UnitY()));
  t.scale = Eigen::Vector3f(0, -2, 1e-20f);
  EXPECT_TRUE(ValidateTransform(t, "f", 0, "a").ok());
}

TEST(Pose, ValidateTransformRejectsNonFiniteComponentsByKind) {
  struct Case {
    const char* kind;
    int components;
  };
  for (const Case& c :
       {Case{"translation", 3}, Case{"rotation", 4}, Case{"scale", 3}}) {
    for (int i = 0; i < c.components; ++i) {
      for (const float bad : {kNaN, kInf, -kInf}) {
        Transform t;
        if (std::string(c.kind) == "translation") t.translation[i] = bad;
        if (std::string(c.kind) == "rotation") t.rotation.coeffs()[i] = bad;
        if (std::string(c.kind) == "scale") t.scale[i] = bad;
        ExpectInvalid(ValidateTransform(t, "ik.target", 7, "LeftHand"),
                      {"ik.target[7] 'LeftHand'",
                       absl::StrCat(c.kind, " has a NaN or infinite")});
      }
    }
  }
}

TEST(Pose, ValidateTransformUnitToleranceBoundary) {
  const Eigen::Quaternionf unit(
      Eigen::AngleAxisf(1.1f, Eigen::Vector3f(0, 3, 4).normalized()));
  for (float norm : {1.0f - 0.9f * kUnitQuaternionTolerance,
                     1.0f + 0.9f * kUnitQuaternionTolerance}) {
    Transform t;
    t.rotation.coeffs() = unit.coeffs() * norm;
    EXPECT_TRUE(ValidateTransform(t, "f", 0, "a").ok()) << norm;
  }
  for (float norm : {1.0f - 1.5f * kUnitQuaternionTolerance,
                     1.0f + 1.5f * kUnitQuaternionTolerance, 0.0f, 2.0f}) {
    Transform t;
    t.rotation.coeffs() = unit.coeffs() * norm;
    ExpectInvalid(
        ValidateTransform(t, "pose", 3, "LeftKnee"),
        {"pose[3] 'LeftKnee'", "rotation norm", "is not 1", "tolerance"});
  }
}

TEST(Pose, ValidateTransformRejectsRotationWhoseNormOverflows) {
  Transform t;
  t.rotation.coeffs() = Eigen::Vector4f::Constant(3e38f);
  ExpectInvalid(ValidateTransform(t, "pose", 0, "root"),
                {"pose[0] 'root'", "rotation norm"});
}

TEST(Pose, ValidatePoseRejectsSizeMismatch) {
  const Skeleton s = MustCreate(DescFromParents({-1, 0, 1}));
  for (size_t size : {0u, 2u, 4u}) {
    const LocalPose pose(size, Transform::Identity());
    ExpectInvalid(ValidatePose(s, pose, "blend.input"),
                  {"blend.input", absl::StrCat(size, " transforms"),
                   "skeleton of 3 joints"});
  }
}

TEST(Pose, ValidatePoseNamesFieldIndexAndJointOfNonFiniteComponent) {
  SkeletonDesc desc;
  desc.joint_names = {"Hips", "Spine", "Neck"};
  desc.parents = {-1, 0, 1};
  desc.rest_pose.assign(3, Transform::Identity());
  const Skeleton s = MustCreate(desc);
  for (int joint = 0; joint < 3; ++joint) {
    LocalPose pose = RestPose(s);
    pose[joint].translation.y() = kNaN;
    ExpectInvalid(
        ValidatePose(s, pose, "local"),
        {absl::StrCat("local[", joint, "] '", desc.joint_names[joint], "'"),
         "translation"});
    pose = RestPose(s);
    pose[joint].rotation.w() = kInf;
    ExpectInvalid(
        ValidatePose(s, pose, "local"),
        {absl::StrCat("local[", joint, "] '", desc.joint_names[joint], "'"),
         "rotation"});
    pose = RestPose(s);
    pose[joint].scale.z() = -kInf;
    ExpectInvalid(
        ValidatePose(s, pose, "local"),
        {absl::StrCat("local[", joint, "] '", desc.joint_names[joint], "'"),
         "scale"});
    pose = RestPose(s);
    pose[joint].rotation.coeffs() *= 1.01f;
    ExpectInvalid(
        ValidatePose(s, pose, "local"),
        {absl::StrCat("local[", joint, "] '", desc.joint_names[joint], "'"),
         "rotation norm"});
  }
}

TEST(Pose, ValidatePoseReportsLowestBadJoint) {
  const Skeleton s = MustCreate(DescFromParents({-1, 0, 1, 2}));
  LocalPose pose = RestPose(s);
  pose[3].translation.x() = kNaN;
  pose[1].rotation.coeffs() *= 3.0f;
  ExpectInvalid(ValidatePose(s, pose, "p"), {"p[1] 'j1'", "rotation norm"});
}

}  // namespace skeleton_test
}  // namespace posewire
