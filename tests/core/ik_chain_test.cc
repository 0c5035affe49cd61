// Shared chain IK math (ik_chain.h): from-to rotations including the
// antiparallel case, chain validation messages, skeleton size and relative
// tolerance, gathering a chain against independent matrix FK, and mapping
// positions back to rotations (the corrected WorldToIKChain of Szauer 2020, ch.
// 13): positions reproduced, twist about each bone preserved.

#include "solver_core/chain_ik/ik_chain.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "solver_core/io/bvh_reader.h"
#include "solver_core/model/pose.h"
#include "tests/core/chain_ik_test_util.h"

namespace posewire {
namespace ik_chain_test {

using ::testing::HasSubstr;
using testing_util::AngleBetween;
using testing_util::AngleOf;
using testing_util::ChainIndices;
using testing_util::FkPositions;
using testing_util::FkRotations;
using testing_util::kPi;
using testing_util::MakeChainSkeleton;
using testing_util::MatrixFk;
using testing_util::RandomRotation;

std::vector<Eigen::Vector3f> Bones() {
  return {{0.0f, 1.0f, 0.0f},
          {0.2f, 0.8f, 0.1f},
          {0.0f, 0.0f, 0.7f},
          {-0.3f, 0.5f, 0.0f}};
}

TEST(FromToRotation, MapsFromOntoToWithTheSmallestAngle) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  for (int i = 0; i < 200; ++i) {
    const Eigen::Vector3f a(u(rng), u(rng), u(rng));
    const Eigen::Vector3f b(u(rng), u(rng), u(rng));
    const Eigen::Quaternionf q = FromToRotation(a, b);
    EXPECT_NEAR(q.norm(), 1.0f, 1e-6f);
    EXPECT_LT((q * a.normalized() - b.normalized()).norm(), 2e-5f) << i;
    // The smallest rotation turns by exactly the angle between them.
    const float angle =
        std::acos(std::clamp(a.normalized().dot(b.normalized()), -1.0f, 1.0f));
    EXPECT_NEAR(AngleOf(q), angle, 2e-3f) << i;
  }
}

TEST(FromToRotation, AntiparallelIsAHalfTurnAboutAPerpendicularAxis) {
  const Eigen::Vector3f from(1.0f, 2.0f, 3.0f);
  const Eigen::Vector3f to = -2.5f * from;
  const Eigen::Quaternionf q = FromToRotation(from, to);
  EXPECT_LT((q * from.normalized() - to.normalized()).norm(), 1e-6f);
  EXPECT_NEAR(AngleOf(q), kPi, 1e-5f);
  EXPECT_NEAR(q.vec().normalized().dot(from.normalized()), 0.0f, 1e-6f);
  // Deterministic: the same axis every time.
  const Eigen::Quaternionf again = FromToRotation(from, to);
  EXPECT_EQ(q.coeffs(), again.coeffs());
  // Along coordinate axes too.
  for (int axis = 0; axis < 3; ++axis) {
    const Eigen::Vector3f e = Eigen::Vector3f::Unit(axis);
    const Eigen::Quaternionf h = FromToRotation(e, -e);
    EXPECT_LT((h * e + e).norm(), 1e-6f);
  }
}

TEST(FromToRotation, NearlyAntiparallelStillMapsFromOntoTo) {
  const Eigen::Vector3f from(0.0f, 1.0f, 0.0f);
  for (float eps : {1e-2f, 1e-3f, 1e-4f, 1e-5f}) {
    const Eigen::Vector3f to = Eigen::Vector3f(eps, -1.0f, 0.0f).normalized();
    const Eigen::Quaternionf q = FromToRotation(from, to);
    EXPECT_LT((q * from - to).norm(), 2e-3f) << eps;
    EXPECT_TRUE(q.coeffs().allFinite());
  }
}

TEST(FromToRotation, ZeroVectorGivesIdentity) {
  EXPECT_TRUE(FromToRotation(Eigen::Vector3f::Zero(), Eigen::Vector3f::UnitX())
                  .coeffs()
                  .isApprox(Eigen::Quaternionf::Identity().coeffs()));
  EXPECT_TRUE(FromToRotation(Eigen::Vector3f::UnitX(), Eigen::Vector3f::Zero())
                  .coeffs()
                  .isApprox(Eigen::Quaternionf::Identity().coeffs()));
}

TEST(ClampRotationAngle, CapsTheAngleKeepingTheAxis) {
  const Eigen::Vector3f axis = Eigen::Vector3f(1, -1, 2).normalized();
  const Eigen::Quaternionf q(Eigen::AngleAxisf(1.2f, axis));
  const Eigen::Quaternionf c = ClampRotationAngle(q, 0.5f);
  EXPECT_NEAR(AngleOf(c), 0.5f, 1e-5f);
  EXPECT_LT((c.vec().normalized() - axis).norm(), 1e-5f);
  EXPECT_EQ(ClampRotationAngle(q, 2.0f).coeffs(), q.coeffs());
}

TEST(ValidateChain, RejectsShortOutOfRangeAndBrokenChainsNamingTheJoint) {
  const Skeleton s = MakeChainSkeleton(Bones());
  EXPECT_TRUE(ValidateChain(s, std::vector<int>{1, 2, 3}, "c").ok());
  absl::Status st = ValidateChain(s, std::vector<int>{1}, "ccd_ik.chain");
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("ccd_ik.chain"));
  st = ValidateChain(s, std::vector<int>{1, 99}, "ccd_ik.chain");
  EXPECT_THAT(st.message(),
              HasSubstr("ccd_ik.chain[1]: joint 99 is out of range"));
  st = ValidateChain(s, std::vector<int>{1, 3}, "ccd_ik.chain");
  EXPECT_THAT(st.message(), HasSubstr("joint 3 'j3' is not a child of"));
  EXPECT_THAT(st.message(), HasSubstr("joint 1 'j1'"));
  // Tip to root is the wrong direction.
  st = ValidateChain(s, std::vector<int>{3, 2, 1}, "ccd_ik.chain");
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  st = ValidateChain(s, std::vector<int>{-1, 0}, "ccd_ik.chain");
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
}

TEST(ValidateIterations, BoundsTheIterationCap) {
  EXPECT_TRUE(ValidateIterations(0, "x").ok());
  EXPECT_TRUE(ValidateIterations(kMaxIkIterations, "x").ok());
  EXPECT_EQ(
      ValidateIterations(kMaxIkIterations + 1, "ccd_ik.max_iterations").code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateIterations(-1, "x").code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SkeletonSize, IsTheRestPoseBoundingBoxDiagonal) {
  absl::StatusOr<ImportedAsset> walk =
      ReadBvhFile(std::string(POSEWIRE_TEST_DATA_DIR) + "/cmu_131_01_walk.bvh");
  ASSERT_TRUE(walk.ok()) << walk.status();
  const Skeleton& s = walk->skeleton;
  const std::vector<Eigen::Vector3f> p = FkPositions(s, RestPose(s));
  Eigen::Vector3f lo = p[0], hi = p[0];
  for (const auto& v : p) {
    lo = lo.cwiseMin(v);
    hi = hi.cwiseMax(v);
  }
  EXPECT_NEAR(SkeletonSize(s), (hi - lo).norm(), 1e-4f * (hi - lo).norm());

  IkTolerance t;
  t.value = 0.001f;
  EXPECT_EQ(ResolveTolerance(t, s), 0.001f);
  t.relative_to_skeleton = true;
  EXPECT_NEAR(ResolveTolerance(t, s), 0.001f * (hi - lo).norm(), 1e-6f);
  t.skeleton_size = 2.0f;
  EXPECT_EQ(ResolveTolerance(t, s), 0.002f);
  t.value = -1.0f;
  EXPECT_EQ(ValidateTolerance(t, "tol").code(),
            absl::StatusCode::kInvalidArgument);
  t.value = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(ValidateTolerance(t, "tol").code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(IkChain, GatherMatchesIndependentForwardKinematics) {
  const Skeleton s = MakeChainSkeleton(Bones(), true, 1.5f);
  std::vector<Transform> pose = RestPose(s);
  std::mt19937 rng(3);
  for (auto& t : pose) t.rotation = RandomRotation(rng, 1.5f);
  const std::vector<int> chain = ChainIndices(5);
  IkChain c;
  c.GatherChain(s, pose, chain);
  const std::vector<Eigen::Vector3f> p = FkPositions(s, pose);
  const std::vector<Eigen::Quaternionf> r = FkRotations(s, pose);
  ASSERT_EQ(c.size(), 5);
  float total = 0.0f;
  for (int i = 0; i < 5; ++i) {
    EXPECT_LT((c.position(i) - p[chain[i]]).norm(), 1e-5f) << i;
    EXPECT_LT(AngleBetween(c.rotation(i), r[chain[i]]), 1e-4f) << i;
    if (i > 0) {
      const float len = (p[chain[i]] - p[chain[i - 1]]).norm();
      EXPECT_NEAR(c.length(i), len, 1e-5f);
      total += len;
    }
  }
  EXPECT_NEAR(c.total_length(), total, 1e-5f);
  // Scale 1.5 on the base scales every bone.
  EXPECT_NEAR(c.length(1), 1.5f * Bones()[0].norm(), 1e-5f);
  const Eigen::Matrix4f parent = MatrixFk(s, pose)[0];
  EXPECT_LT((c.base().translation - parent.topRightCorner<3, 1>()).norm(),
            1e-6f);
}

// Positions found in model space go back to local rotations so that FK of
// the result reproduces them, and each joint turns by a pure swing (no
// twist about its bone). The chain hangs under a rotated parent and has
// rotated joint frames: the book's "fixed" WorldToIKChain (delta always
// identity) and a joint-frame delta pre-multiplied onto the local rotation
// both fail this.
TEST(IkChain, AlignChainToReproducesPositionsAndPreservesTwist) {
  const Skeleton s = MakeChainSkeleton(Bones());
  const std::vector<Transform> input = RestPose(s);
  const std::vector<int> chain = ChainIndices(5);
  // Targets: FK of another pose of the same chain (so lengths agree).
  std::vector<Transform> other = input;
  std::mt19937 rng(5);
  for (int j : chain) other[j].rotation = RandomRotation(rng, 1.2f);
  const std::vector<Eigen::Vector3f> want = FkPositions(s, other);
  std::vector<Eigen::Vector3f> targets;
  for (int j : chain) targets.push_back(want[j]);

  IkChain c;
  c.GatherChain(s, input, chain);
  c.AlignChainTo(targets);
  std::vector<Transform> out = input;
  c.ScatterRotations(absl::MakeSpan(out));

  const std::vector<Eigen::Vector3f> got = FkPositions(s, out);
  const std::vector<Eigen::Vector3f> before = FkPositions(s, input);
  const std::vector<Eigen::Quaternionf> r0 = FkRotations(s, input);
  const std::vector<Eigen::Quaternionf> r1 = FkRotations(s, out);
  for (size_t i = 0; i < chain.size(); ++i) {
    EXPECT_LT((got[chain[i]] - want[chain[i]]).norm(), 2e-5f) << i;
  }
  for (size_t i = 0; i + 1 < chain.size(); ++i) {
    // Joint i's model rotation changes by its parent's change, then by the
    // swing from its bone's direction after the parent moved to the new
    // direction, and by nothing more (no twist about the bone).
    const Eigen::Quaternionf parent_delta =
        i == 0 ? Eigen::Quaternionf::Identity()
               : Eigen::Quaternionf(r1[chain[i - 1]] *
                                    r0[chain[i - 1]].conjugate());
    const Eigen::Vector3f d0 =
        parent_delta * (before[chain[i + 1]] - before[chain[i]]).normalized();
    const Eigen::Vector3f d1 = (got[chain[i + 1]] - got[chain[i]]).normalized();
    const Eigen::Quaternionf own =
        r1[chain[i]] * (parent_delta * r0[chain[i]]).conjugate();
    const float swing = std::acos(std::clamp(d0.dot(d1), -1.0f, 1.0f));
    EXPECT_NEAR(AngleOf(own), swing, 2e-3f) << i;
    EXPECT_LT((own * d0 - d1).norm(), 1e-4f) << i;
  }
  // The tip's local rotation is untouched.
  EXPECT_EQ(out[chain.back()].rotation.coeffs(),
            input[chain.back()].rotation.coeffs());
}

TEST(IkChain, ParentModelTransformMatchesMatrixFk) {
  const Skeleton s = MakeChainSkeleton(Bones(), true, 2.0f);
  std::vector<Transform> pose = RestPose(s);
  std::mt19937 rng(9);
  for (auto& t : pose) t.rotation = RandomRotation(rng, 2.0f);
  const std::vector<Eigen::Matrix4f> m = MatrixFk(s, pose);
  for (int j = 1; j < s.num_joints(); ++j) {
    const Transform p = ParentModelTransform(s, pose, j);
    EXPECT_LT((p.translation - m[j - 1].topRightCorner<3, 1>()).norm(), 1e-5f);
  }
  const Transform root = ParentModelTransform(s, pose, 0);
  EXPECT_EQ(root, Transform::Identity());
}

}  // namespace ik_chain_test
}  // namespace posewire
