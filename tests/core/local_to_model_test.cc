// LocalToModelJob (forward kinematics) and ModelToLocalJob (its inverse):
// validation errors, FK against 4x4 matrix products computed in the test,
// hand-built hierarchies with known joint positions, partial updates compared
// bit for bit with full recomputes, round trips and determinism.

#include "solver_core/model/local_to_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/simd_level.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"

namespace posewire {
namespace local_to_model_test {

using ::testing::HasSubstr;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Seeded generator producing the same floats on every standard library.
class Rng {
 public:
  explicit Rng(uint32_t seed) : engine_(seed) {}

  uint32_t Next() { return engine_(); }

  float Uniform(float lo, float hi) {
    const float unit =
        static_cast<float>(engine_() >> 8) * (1.0f / 16777216.0f);
    return lo + (hi - lo) * unit;
  }

  Eigen::Vector3f Vector(float lo, float hi) {
    const float x = Uniform(lo, hi);
    const float y = Uniform(lo, hi);
    const float z = Uniform(lo, hi);
    return Eigen::Vector3f(x, y, z);
  }

  Eigen::Quaternionf Rotation() {
    while (true) {
      const float w = Uniform(-1, 1);
      const float x = Uniform(-1, 1);
      const float y = Uniform(-1, 1);
      const float z = Uniform(-1, 1);
      Eigen::Quaternionf q(w, x, y, z);
      const float n = q.norm();
      if (n > 0.2f && n <= 1.0f) return q.normalized();
    }
  }

  // Uniform scale per joint, different from joint to joint, never 1.
  Transform UniformScaleTransform(float min_scale, float max_scale) {
    Transform t;
    t.translation = Vector(-1, 1);
    t.rotation = Rotation();
    t.scale = Eigen::Vector3f::Constant(Uniform(min_scale, max_scale));
    return t;
  }

 private:
  std::mt19937 engine_;
};

// Parents drawn among earlier joints (non-DFS topological order) with a few
// extra roots; names "j0", "j1", ...
Skeleton RandomSkeleton(int n, uint32_t seed) {
  Rng rng(seed);
  SkeletonDesc desc;
  for (int i = 0; i < n; ++i) {
    desc.joint_names.push_back(absl::StrCat("j", i));
    desc.parents.push_back(i == 0 || rng.Next() % 20 == 0
                               ? kNoParent
                               : static_cast<int>(rng.Next() % i));
    desc.rest_pose.push_back(rng.UniformScaleTransform(0.8f, 1.25f));
  }
  absl::StatusOr<Skeleton> s = Skeleton::Create(std::move(desc));
  EXPECT_TRUE(s.ok()) << s.status();
  return *std::move(s);
}

Skeleton ChainSkeleton(std::vector<int> parents) {
  SkeletonDesc desc;
  for (size_t i = 0; i < parents.size(); ++i) {
    desc.joint_names.push_back(absl::StrCat("j", i));
  }
  desc.rest_pose.assign(parents.size(), Transform::Identity());
  desc.parents = std::move(parents);
  absl::StatusOr<Skeleton> s = Skeleton::Create(std::move(desc));
  EXPECT_TRUE(s.ok()) << s.status();
  return *std::move(s);
}

LocalPose RandomPose(int n, Rng& rng, float min_scale, float max_scale) {
  LocalPose pose;
  for (int i = 0; i < n; ++i) {
    pose.push_back(rng.UniformScaleTransform(min_scale, max_scale));
  }
  return pose;
}

Eigen::Matrix4f Matrix(const Transform& t) {
  Eigen::Affine3f a = Eigen::Translation3f(t.translation) * t.rotation *
                      Eigen::Scaling(t.scale);
  return a.matrix();
}

// Forward kinematics by 4x4 matrix products, from the parent array alone.
std::vector<Eigen::Matrix4f> ReferenceFk(const Skeleton& skeleton,
                                         const LocalPose& local,
                                         const Transform& root) {
  std::vector<Eigen::Matrix4f> m(skeleton.num_joints());
  for (int j = 0; j < skeleton.num_joints(); ++j) {
    const int p = skeleton.parents()[j];
    m[j] = (p == kNoParent ? Matrix(root) : m[p]) * Matrix(local[j]);
  }
  return m;
}

ModelPose Fk(const Skeleton& skeleton, const LocalPose& local,
             const Transform& root = Transform::Identity()) {
  ModelPose model(skeleton.num_joints());
  LocalToModelJob job{.skeleton = &skeleton,
                      .input = local,
                      .root = root,
                      .output = absl::MakeSpan(model)};
  absl::Status s = job.Run();
  EXPECT_TRUE(s.ok()) << s;
  return model;
}

bool BitEqual(const Transform& a, const Transform& b) {
  return std::memcmp(a.translation.data(), b.translation.data(),
                     3 * sizeof(float)) == 0 &&
         std::memcmp(a.rotation.coeffs().data(), b.rotation.coeffs().data(),
                     4 * sizeof(float)) == 0 &&
         std::memcmp(a.scale.data(), b.scale.data(), 3 * sizeof(float)) == 0;
}

void ExpectBitEqual(const ModelPose& a, const ModelPose& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t j = 0; j < a.size(); ++j) {
    EXPECT_TRUE(BitEqual(a[j], b[j])) << "joint " << j;
  }
}

void ExpectInvalid(const absl::Status& status,
                   std::initializer_list<std::string> fragments) {
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  const std::string message(status.message());
  for (const std::string& fragment : fragments) {
    EXPECT_THAT(message, HasSubstr(fragment));
  }
}

// A sentinel output a failed Run must leave untouched.
Transform Sentinel() {
  Transform t;
  t.translation = Eigen::Vector3f(123, 456, 789);
  return t;
}

// ---------------------------------------------------------------------------
// LocalToModelJob::Validate.

TEST(LocalToModel, MissingSkeletonIsRejected) {
  ModelPose model(1);
  LocalPose local(1);
  LocalToModelJob job{.input = local, .output = absl::MakeSpan(model)};
  ExpectInvalid(job.Validate(), {"local_to_model.skeleton", "not set"});
  ExpectInvalid(job.Run(), {"local_to_model.skeleton"});
}

TEST(LocalToModel, OutputSizeMismatchIsRejected) {
  const Skeleton skeleton = ChainSkeleton({-1, 0, 1});
  const LocalPose local = RestPose(skeleton);
  for (size_t size : {0u, 2u, 4u}) {
    ModelPose model(size, Sentinel());
    LocalToModelJob job{
        .skeleton = &skeleton, .input = local, .output = absl::MakeSpan(model)};
    ExpectInvalid(job.Run(), {"local_to_model.output",
                              absl::StrCat(size, " transforms"), "3 joints"});
    for (const Transform& t : model) EXPECT_TRUE(BitEqual(t, Sentinel()));
  }
}

TEST(LocalToModel, LocalSizeMismatchIsRejected) {
  const Skeleton skeleton = ChainSkeleton({-1, 0, 1});
  const LocalPose local(2);
  ModelPose model(3, Sentinel());
  LocalToModelJob job{
      .skeleton = &skeleton, .input = local, .output = absl::MakeSpan(model)};
  ExpectInvalid(job.Run(),
                {"local_to_model.input", "2 transforms", "3 joints"});
  for (const Transform& t : model) EXPECT_TRUE(BitEqual(t, Sentinel()));
}

TEST(LocalToModel, FromOutOfRangeIsRejected) {
  const Skeleton skeleton = ChainSkeleton({-1, 0, 1});
  const LocalPose local = RestPose(skeleton);
  for (int from : {-2, -100, 3, 1000}) {
    ModelPose model(3, Sentinel());
    LocalToModelJob job{.skeleton = &skeleton,
                        .input = local,
                        .from = from,
                        .output = absl::MakeSpan(model)};
    ExpectInvalid(job.Run(), {"local_to_model.from",
                              absl::StrCat("joint ", from), "out of range"});
    for (const Transform& t : model) EXPECT_TRUE(BitEqual(t, Sentinel()));
  }
}

TEST(LocalToModel, NonFiniteOrNonUnitLocalTransformIsRejectedNamingJoint) {
  const Skeleton skeleton = ChainSkeleton({-1, 0, 1});
  for (int kind = 0; kind < 4; ++kind) {
    LocalPose local = RestPose(skeleton);
    std::string what;
    switch (kind) {
      case 0:
        local[1].translation.x() = kNaN;
        what = "translation";
        break;
      case 1:
        local[1].rotation.y() = kInf;
        what = "rotation";
        break;
      case 2:
        local[1].scale.z() = -kInf;
        what = "scale";
        break;
      case 3:
        local[1].rotation.coeffs() *= 1.5f;
        what = "rotation norm";
        break;
    }
    ModelPose model(3, Sentinel());
    LocalToModelJob job{
        .skeleton = &skeleton, .input = local, .output = absl::MakeSpan(model)};
    ExpectInvalid(job.Run(), {"local_to_model.input[1] 'j1'", what});
    for (const Transform& t : model) EXPECT_TRUE(BitEqual(t, Sentinel()));
  }
}

// Validation screens whole poses four joints at a time with a separate path
// for the remainder, and never reads the padding lanes' contents into its
// verdict: every component of every joint, for pose sizes covering full
// blocks and tails, with NaN in every padding lane.
TEST(LocalToModel, EveryBadComponentOfEveryJointIsFoundWhateverThePadding) {
  const float bad_values[] = {kNaN, kInf, -kInf};
  for (int n = 1; n <= 9; ++n) {
    std::vector<int> parents(n);
    for (int i = 0; i < n; ++i) parents[i] = i - 1;
    const Skeleton skeleton = ChainSkeleton(parents);
    LocalPose valid = RestPose(skeleton);
    for (Transform& t : valid) {
      // Bytes 12..15 and 44..47 of a Transform are padding.
      float* f = reinterpret_cast<float*>(&t);
      f[3] = kNaN;
      f[11] = kNaN;
    }
    ModelPose model(n);
    LocalToModelJob ok_job{
        .skeleton = &skeleton, .input = valid, .output = absl::MakeSpan(model)};
    EXPECT_TRUE(ok_job.Run().ok()) << n;
    for (int j = 0; j < n; ++j) {
      // Components: translation 0-2, rotation 4-7, scale 8-10.
      for (int c : {0, 1, 2, 4, 5, 6, 7, 8, 9, 10}) {
        for (float bad : bad_values) {
          LocalPose local = valid;
          reinterpret_cast<float*>(&local[j])[c] = bad;
          LocalToModelJob job{.skeleton = &skeleton,
                              .input = local,
                              .output = absl::MakeSpan(model)};
          ExpectInvalid(job.Run(), {absl::StrCat("local_to_model.input[", j,
                                                 "] 'j", j, "'")});
        }
      }
      // Rotation norms just outside and just inside the 1e-3 tolerance.
      LocalPose local = valid;
      local[j].rotation.coeffs() *= 1.0015f;
      LocalToModelJob job{.skeleton = &skeleton,
                          .input = local,
                          .output = absl::MakeSpan(model)};
      ExpectInvalid(job.Run(), {absl::StrCat("local_to_model.input[", j, "]"),
                                "rotation norm"});
      local[j].rotation.coeffs() = valid[j].rotation.coeffs() * 0.9985f;
      ExpectInvalid(job.Run(), {absl::StrCat("local_to_model.input[", j, "]"),
                                "rotation norm"});
      local[j].rotation.coeffs() = valid[j].rotation.coeffs() * 1.0005f;
      EXPECT_TRUE(job.Run().ok()) << n << " " << j;
    }
  }
}

TEST(LocalToModel, NonFiniteOrNonUnitRootTransformIsRejected) {
  const Skeleton skeleton = ChainSkeleton({-1, 0});
  const LocalPose local = RestPose(skeleton);
  Transform bad_roots[4];
  bad_roots[0].translation.y() = kNaN;
  bad_roots[1].rotation.w() = kNaN;
  bad_roots[2].scale.x() = kInf;
  bad_roots[3].rotation.coeffs() *= 0.9f;
  for (const Transform& root : bad_roots) {
    ModelPose model(2, Sentinel());
    LocalToModelJob job{.skeleton = &skeleton,
                        .input = local,
                        .root = root,
                        .output = absl::MakeSpan(model)};
    ExpectInvalid(job.Run(), {"local_to_model.root"});
    for (const Transform& t : model) EXPECT_TRUE(BitEqual(t, Sentinel()));
  }
}

// A partial update reads the parent's model transform from the output span,
// so garbage there must be an error, not a silently poisoned subtree.
TEST(LocalToModel, PartialUpdateRejectsInvalidParentModelTransform) {
  const Skeleton skeleton = ChainSkeleton({-1, 0, 1, 2});
  const LocalPose local = RestPose(skeleton);
  ModelPose model = Fk(skeleton, local);
  model[1].translation.x() = kNaN;
  const ModelPose before = model;
  LocalToModelJob job{.skeleton = &skeleton,
                      .input = local,
                      .from = 2,
                      .output = absl::MakeSpan(model)};
  ExpectInvalid(job.Run(), {"local_to_model.output[1] 'j1'", "translation"});
  for (int j = 0; j < 4; ++j) EXPECT_TRUE(BitEqual(model[j], before[j])) << j;
  // Entries the update neither reads nor writes may hold anything.
  model = Fk(skeleton, local);
  job.output = absl::MakeSpan(model);
  model[0].rotation.coeffs().setZero();
  model[3].translation.x() = kNaN;
  EXPECT_TRUE(job.Run().ok());
}

TEST(LocalToModel, FromRangeEndpointsAreAccepted) {
  const Skeleton skeleton = ChainSkeleton({-1, 0, 1});
  const LocalPose local = RestPose(skeleton);
  ModelPose model(3);
  for (int from : {-1, 0, 2}) {
    LocalToModelJob job{.skeleton = &skeleton,
                        .input = local,
                        .from = from,
                        .output = absl::MakeSpan(model)};
    EXPECT_TRUE(job.Run().ok()) << from;
  }
}

// ---------------------------------------------------------------------------
// Forward kinematics results.

// Joint 0 turns 90 degrees about Z and scales by 2; joint 1 turns another 90
// degrees; bones are one unit long along local X.
TEST(LocalToModel, HandBuiltArmReachesKnownPositions) {
  const Skeleton skeleton = ChainSkeleton({-1, 0, 1});
  const Eigen::Quaternionf quarter(std::sqrt(0.5f), 0, 0, std::sqrt(0.5f));
  LocalPose local(3);
  local[0].rotation = quarter;
  local[0].scale = Eigen::Vector3f::Constant(2);
  local[1].translation = Eigen::Vector3f(1, 0, 0);
  local[1].rotation = quarter;
  local[2].translation = Eigen::Vector3f(1, 0, 0);

  const ModelPose model = Fk(skeleton, local);
  EXPECT_LT((model[0].translation - Eigen::Vector3f(0, 0, 0)).norm(), 1e-5f);
  EXPECT_LT((model[1].translation - Eigen::Vector3f(0, 2, 0)).norm(), 1e-5f);
  EXPECT_LT((model[2].translation - Eigen::Vector3f(-2, 2, 0)).norm(), 1e-5f);
  // Joint 2 inherits both quarter turns: its local X points along model -X.
  EXPECT_LT(
      (model[2].rotation * Eigen::Vector3f::UnitX() - Eigen::Vector3f(-1, 0, 0))
          .norm(),
      1e-5f);
  EXPECT_EQ(model[2].scale, Eigen::Vector3f::Constant(2));

  // The character placed at x = 10 and turned -90 degrees about Z:
  // (x, y) -> (y, -x), then shifted.
  Transform root;
  root.translation = Eigen::Vector3f(10, 0, 0);
  root.rotation = Eigen::Quaternionf(std::sqrt(0.5f), 0, 0, -std::sqrt(0.5f));
  const ModelPose placed = Fk(skeleton, local, root);
  EXPECT_LT((placed[0].translation - Eigen::Vector3f(10, 0, 0)).norm(), 1e-5f);
  EXPECT_LT((placed[1].translation - Eigen::Vector3f(12, 0, 0)).norm(), 1e-5f);
  EXPECT_LT((placed[2].translation - Eigen::Vector3f(12, 2, 0)).norm(), 1e-5f);
}

TEST(LocalToModel, MatchesMatrixProductsOnRandomHierarchy) {
  const Skeleton skeleton = RandomSkeleton(80, 5);
  Rng rng(6);
  for (int trial = 0; trial < 20; ++trial) {
    const LocalPose local = RandomPose(80, rng, 0.7f, 1.4f);
    const Transform root = rng.UniformScaleTransform(0.5f, 2.0f);
    const std::vector<Eigen::Matrix4f> expected =
        ReferenceFk(skeleton, local, root);
    const ModelPose model = Fk(skeleton, local, root);
    for (int j = 0; j < skeleton.num_joints(); ++j) {
      const float magnitude = expected[j].cwiseAbs().maxCoeff();
      EXPECT_LT((Matrix(model[j]) - expected[j]).cwiseAbs().maxCoeff(),
                2e-6f * (1.0f + magnitude) * skeleton.Depth(j))
          << "trial " << trial << " joint " << j;
    }
  }
}

// The job runs level by level (Skeleton::level_order); each joint's
// arithmetic is the same as in the joints' index order, so the bits are too.
TEST(LocalToModel, LevelOrderGivesTheBitsOfIndexOrder) {
  const Skeleton skeleton = RandomSkeleton(120, 41);
  Rng rng(42);
  const LocalPose local = RandomPose(120, rng, 0.5f, 2.0f);
  const Transform root = rng.UniformScaleTransform(0.5f, 2.0f);
  ModelPose in_index_order(120);
  for (int j = 0; j < skeleton.num_joints(); ++j) {
    const int p = skeleton.parent(j);
    CombineTo(p == kNoParent ? root : in_index_order[p], local[j],
              &in_index_order[j]);
  }
  ExpectBitEqual(Fk(skeleton, local, root), in_index_order);
}

// With AVX2 the whole-pose pass does two joints of a level at once; it must
// give the bits of the SSE pass, so machines with and without AVX2 agree.
// Several roots, levels of odd and even sizes, non-uniform scales.
TEST(LocalToModel, TwoJointsAtATimeGiveTheBitsOfOneAtATime) {
  if (DetectedSimdLevel() != SimdLevel::kAvx2) {
    GTEST_SKIP() << "this CPU has no AVX2: only the SSE pass runs here";
  }
  const Skeleton skeleton = RandomSkeleton(121, 77);
  Rng rng(78);
  LocalPose local = RandomPose(121, rng, 0.5f, 2.0f);
  for (int j = 0; j < 121; j += 3) local[j].scale = rng.Vector(0.25f, 3.0f);
  const Transform root = rng.UniformScaleTransform(0.5f, 2.0f);
  const SimdLevel saved = ActiveSimdLevel();
  SetMaxSimdLevel(SimdLevel::kSse2);
  const ModelPose one_at_a_time = Fk(skeleton, local, root);
  SetMaxSimdLevel(DetectedSimdLevel());
  const ModelPose two_at_a_time = Fk(skeleton, local, root);
  SetMaxSimdLevel(saved);
  ExpectBitEqual(two_at_a_time, one_at_a_time);
  // The pass did pair joints: some level holds two or more.
  int widest = 0;
  std::vector<int> per_depth(skeleton.num_joints() + 1, 0);
  for (int j = 0; j < skeleton.num_joints(); ++j) {
    widest = std::max(widest, ++per_depth[skeleton.Depth(j)]);
  }
  EXPECT_GE(widest, 2);
}

// One joint's model transform by its ancestors alone (what the analytic IK
// solvers take as parent_model) is the entry the whole-pose job writes, bit
// for bit, with the SSE and (where the CPU has it) the AVX2 pass; signed
// zeros included, so a root's local transform goes through CombineTo with
// the root space like every other joint.
TEST(LocalToModel, OneJointByItsAncestorsGivesTheBitsOfTheJob) {
  const Skeleton skeleton = RandomSkeleton(121, 91);
  Rng rng(92);
  LocalPose local = RandomPose(121, rng, 0.5f, 2.0f);
  for (int j = 0; j < 121; j += 3) local[j].scale = rng.Vector(0.25f, 3.0f);
  local[0].translation = Eigen::Vector3f(-0.0f, 0.0f, -0.0f);
  for (const Transform& root :
       {Transform::Identity(), rng.UniformScaleTransform(0.5f, 2.0f)}) {
    const SimdLevel saved = ActiveSimdLevel();
    for (const SimdLevel level : {SimdLevel::kSse2, DetectedSimdLevel()}) {
      SetMaxSimdLevel(level);
      const ModelPose model = Fk(skeleton, local, root);
      for (int j = 0; j < skeleton.num_joints(); ++j) {
        const int p = skeleton.parent(j);
        EXPECT_TRUE(
            BitEqual(JointModelTransform(skeleton, local, j, root), model[j]))
            << "joint " << j;
        EXPECT_TRUE(
            BitEqual(ParentModelTransformOrRoot(skeleton, local, j, root),
                     p == kNoParent ? root : model[p]))
            << "joint " << j;
      }
    }
    SetMaxSimdLevel(saved);
  }
  // The default root space is the identity.
  EXPECT_TRUE(BitEqual(JointModelTransform(skeleton, local, 0),
                       Fk(skeleton, local)[0]));
  EXPECT_TRUE(BitEqual(ParentModelTransformOrRoot(skeleton, local, 0),
                       Transform::Identity()));
}

TEST(LocalToModel, ValidateParentModelNamesTheParentOrTheRootSpace) {
  const Skeleton skeleton = ChainSkeleton({kNoParent, 0, 1});
  EXPECT_TRUE(ValidateParentModel(skeleton, Transform::Identity(), 2,
                                  "two_bone_ik.parent_model")
                  .ok());
  Transform bad = Transform::Identity();
  bad.translation.y() = kNaN;
  ExpectInvalid(
      ValidateParentModel(skeleton, bad, 2, "two_bone_ik.parent_model"),
      {"two_bone_ik.parent_model[1] 'j1': translation"});
  bad = Transform::Identity();
  bad.rotation.coeffs() *= 2.0f;
  ExpectInvalid(ValidateParentModel(skeleton, bad, 0, "aim_ik.parent_model"),
                {"aim_ik.parent_model[0] 'root space': rotation norm 2"});
}

TEST(LocalToModel, RootTransformPlacesEveryJoint) {
  const Skeleton skeleton = RandomSkeleton(50, 7);
  Rng rng(8);
  const LocalPose local = RandomPose(50, rng, 0.7f, 1.4f);
  const Transform root = rng.UniformScaleTransform(0.5f, 2.0f);
  const ModelPose unplaced = Fk(skeleton, local);
  const ModelPose placed = Fk(skeleton, local, root);
  for (int j = 0; j < 50; ++j) {
    const Eigen::Matrix4f expected = Matrix(root) * Matrix(unplaced[j]);
    EXPECT_LT((Matrix(placed[j]) - expected).cwiseAbs().maxCoeff(),
              1e-4f * (1.0f + expected.cwiseAbs().maxCoeff()))
        << j;
  }
}

TEST(LocalToModel, SixtyThousandJointChainAccumulatesExactly) {
  constexpr int kN = 60000;
  std::vector<int> parents(kN);
  for (int i = 0; i < kN; ++i) parents[i] = i - 1;
  const Skeleton skeleton = ChainSkeleton(parents);
  LocalPose local(kN);
  for (Transform& t : local) t.translation = Eigen::Vector3f(1, 0, 0);
  const ModelPose model = Fk(skeleton, local);
  // Integer sums below 2^24 are exact in float.
  for (int j : {0, 1, 999, 30000, kN - 1}) {
    EXPECT_EQ(model[j].translation,
              Eigen::Vector3f(static_cast<float>(j + 1), 0, 0))
        << j;
  }
  LocalPose back(kN);
  ModelToLocalJob inverse{
      .skeleton = &skeleton, .input = model, .output = absl::MakeSpan(back)};
  ASSERT_TRUE(inverse.Run().ok());
  for (int j = 0; j < kN; ++j) {
    ASSERT_EQ(back[j], local[j]) << j;
  }
}

// ---------------------------------------------------------------------------
// Partial update.

TEST(LocalToModel, PartialUpdateRecomputesExactlyTheSubtreeBitForBit) {
  constexpr int kN = 200;
  const Skeleton skeleton = RandomSkeleton(kN, 11);
  Rng rng(12);
  const LocalPose before = RandomPose(kN, rng, 0.7f, 1.4f);
  const Transform root = rng.UniformScaleTransform(0.5f, 2.0f);
  const ModelPose model_before = Fk(skeleton, before, root);

  int tested = 0;
  for (int from = 0; from < kN; ++from) {
    // Change every local transform inside the subtree of `from`.
    LocalPose after = before;
    for (int j = 0; j < kN; ++j) {
      if (skeleton.IsInSubtree(from, j)) {
        after[j] = rng.UniformScaleTransform(0.7f, 1.4f);
      }
    }
    ModelPose partial = model_before;
    LocalToModelJob job{.skeleton = &skeleton,
                        .input = after,
                        .root = root,
                        .from = from,
                        .output = absl::MakeSpan(partial)};
    ASSERT_TRUE(job.Run().ok());
    // Equal, bit for bit, to a full recompute of the changed pose.
    const ModelPose full = Fk(skeleton, after, root);
    for (int j = 0; j < kN; ++j) {
      ASSERT_TRUE(BitEqual(partial[j], full[j]))
          << "from " << from << " joint " << j;
    }
    // And only the subtree moved: every other entry is the old one, bit for
    // bit, and every subtree entry changed.
    for (int j = 0; j < kN; ++j) {
      const bool in_subtree = skeleton.IsInSubtree(from, j);
      EXPECT_EQ(!BitEqual(partial[j], model_before[j]), in_subtree)
          << "from " << from << " joint " << j;
    }
    ++tested;
  }
  EXPECT_EQ(tested, kN);
}

// Joints outside the subtree are not recomputed even if their local
// transform changed: the update covers `from` and its descendants only.
TEST(LocalToModel, PartialUpdateLeavesJointsOutsideSubtreeUntouched) {
  //   0
  //  / \.
  // 1   3
  // |   |
  // 2   4
  const Skeleton skeleton = ChainSkeleton({-1, 0, 1, 0, 3});
  Rng rng(13);
  const LocalPose before = RandomPose(5, rng, 0.7f, 1.4f);
  const ModelPose model_before = Fk(skeleton, before);
  LocalPose after = before;
  after[2] = rng.UniformScaleTransform(0.7f, 1.4f);  // inside subtree of 1
  after[4] = rng.UniformScaleTransform(0.7f, 1.4f);  // sibling branch
  after[0] = rng.UniformScaleTransform(0.7f, 1.4f);  // ancestor
  ModelPose partial = model_before;
  LocalToModelJob job{.skeleton = &skeleton,
                      .input = after,
                      .from = 1,
                      .output = absl::MakeSpan(partial)};
  ASSERT_TRUE(job.Run().ok());
  for (int j : {0, 3, 4}) {
    EXPECT_TRUE(BitEqual(partial[j], model_before[j])) << j;
  }
  // Joints 1 and 2 use the stored model transform of joint 0 and the new
  // locals of 1 and 2, exactly as matrices say.
  const Eigen::Matrix4f m1 = Matrix(model_before[0]) * Matrix(after[1]);
  const Eigen::Matrix4f m2 = m1 * Matrix(after[2]);
  EXPECT_LT((Matrix(partial[1]) - m1).cwiseAbs().maxCoeff(), 1e-5f);
  EXPECT_LT((Matrix(partial[2]) - m2).cwiseAbs().maxCoeff(), 1e-5f);
}

TEST(LocalToModel, PartialUpdateFromRootsEqualsFullRecompute) {
  const Skeleton skeleton = RandomSkeleton(100, 21);
  Rng rng(22);
  const LocalPose local = RandomPose(100, rng, 0.7f, 1.4f);
  const ModelPose full = Fk(skeleton, local);
  // Updating every root in turn, starting from garbage, must rebuild the
  // whole pose.
  ModelPose partial(100, Sentinel());
  for (int j = 0; j < 100; ++j) {
    if (skeleton.parent(j) != kNoParent) continue;
    LocalToModelJob job{.skeleton = &skeleton,
                        .input = local,
                        .from = j,
                        .output = absl::MakeSpan(partial)};
    ASSERT_TRUE(job.Run().ok());
  }
  ExpectBitEqual(partial, full);
}

// ---------------------------------------------------------------------------
// Determinism.

TEST(LocalToModel, TwoRunsAreBitIdentical) {
  const Skeleton skeleton = RandomSkeleton(150, 31);
  Rng rng(32);
  const LocalPose local = RandomPose(150, rng, 0.5f, 2.0f);
  const Transform root = rng.UniformScaleTransform(0.5f, 2.0f);
  const ModelPose first = Fk(skeleton, local, root);
  const ModelPose second = Fk(skeleton, local, root);
  ExpectBitEqual(first, second);
  // RunUnchecked and a copied skeleton give the same bits as Run.
  const Skeleton copy = skeleton;
  ModelPose third(150);
  LocalToModelJob{.skeleton = &copy,
                  .input = local,
                  .root = root,
                  .output = absl::MakeSpan(third)}
      .RunUnchecked();
  ExpectBitEqual(first, third);

  LocalPose back1(150), back2(150);
  ModelToLocalJob inverse{.skeleton = &skeleton,
                          .input = first,
                          .root = root,
                          .output = absl::MakeSpan(back1)};
  ASSERT_TRUE(inverse.Run().ok());
  inverse.output = absl::MakeSpan(back2);
  ASSERT_TRUE(inverse.Run().ok());
  ExpectBitEqual(back1, back2);
}

// ---------------------------------------------------------------------------
// ModelToLocalJob.

TEST(ModelToLocal, MissingSkeletonIsRejected) {
  ModelPose model(1);
  LocalPose local(1);
  ModelToLocalJob job{.input = model, .output = absl::MakeSpan(local)};
  ExpectInvalid(job.Validate(), {"model_to_local.skeleton", "not set"});
  ExpectInvalid(job.Run(), {"model_to_local.skeleton"});
}

TEST(ModelToLocal, OutputSizeMismatchIsRejected) {
  const Skeleton skeleton = ChainSkeleton({-1, 0, 1});
  const ModelPose model(3);
  for (size_t size : {0u, 2u, 4u}) {
    LocalPose local(size, Sentinel());
    ModelToLocalJob job{
        .skeleton = &skeleton, .input = model, .output = absl::MakeSpan(local)};
    ExpectInvalid(job.Run(), {"model_to_local.output",
                              absl::StrCat(size, " transforms"), "3 joints"});
    for (const Transform& t : local) EXPECT_TRUE(BitEqual(t, Sentinel()));
  }
}

TEST(ModelToLocal, ModelSizeMismatchIsRejected) {
  const Skeleton skeleton = ChainSkeleton({-1, 0, 1});
  const ModelPose model(4);
  LocalPose local(3, Sentinel());
  ModelToLocalJob job{
      .skeleton = &skeleton, .input = model, .output = absl::MakeSpan(local)};
  ExpectInvalid(job.Run(),
                {"model_to_local.input", "4 transforms", "3 joints"});
  for (const Transform& t : local) EXPECT_TRUE(BitEqual(t, Sentinel()));
}

TEST(ModelToLocal, NonFiniteOrNonUnitModelTransformIsRejectedNamingJoint) {
  const Skeleton skeleton = ChainSkeleton({-1, 0, 1});
  for (int kind = 0; kind < 4; ++kind) {
    ModelPose model(3);
    std::string what;
    switch (kind) {
      case 0:
        model[2].translation.z() = kInf;
        what = "translation";
        break;
      case 1:
        model[2].rotation.x() = kNaN;
        what = "rotation";
        break;
      case 2:
        model[2].scale.y() = kNaN;
        what = "scale";
        break;
      case 3:
        model[2].rotation.coeffs() *= 2.0f;
        what = "rotation norm";
        break;
    }
    LocalPose local(3, Sentinel());
    ModelToLocalJob job{
        .skeleton = &skeleton, .input = model, .output = absl::MakeSpan(local)};
    ExpectInvalid(job.Run(), {"model_to_local.input[2] 'j2'", what});
    for (const Transform& t : local) EXPECT_TRUE(BitEqual(t, Sentinel()));
  }
}

TEST(ModelToLocal, BadRootTransformIsRejected) {
  const Skeleton skeleton = ChainSkeleton({-1, 0});
  const ModelPose model(2);
  Transform bad_roots[5];
  bad_roots[0].translation.x() = kNaN;
  bad_roots[1].rotation.coeffs() *= 1.1f;
  bad_roots[2].scale.z() = kInf;
  bad_roots[3].scale.y() = 0.0f;
  bad_roots[4].scale.x() = -0.0f;
  for (const Transform& root : bad_roots) {
    LocalPose local(2, Sentinel());
    ModelToLocalJob job{.skeleton = &skeleton,
                        .input = model,
                        .root = root,
                        .output = absl::MakeSpan(local)};
    ExpectInvalid(job.Run(), {"model_to_local.root"});
    for (const Transform& t : local) EXPECT_TRUE(BitEqual(t, Sentinel()));
  }
}

TEST(ModelToLocal, ZeroScaleOnParentJointIsRejected) {
  const Skeleton skeleton = ChainSkeleton({-1, 0, 1, 0});
  for (int axis = 0; axis < 3; ++axis) {
    for (const float zero : {0.0f, -0.0f}) {
      ModelPose model(4);
      model[1].scale[axis] = zero;
      LocalPose local(4, Sentinel());
      ModelToLocalJob job{.skeleton = &skeleton,
                          .input = model,
                          .output = absl::MakeSpan(local)};
      ExpectInvalid(job.Run(),
                    {"model_to_local.input[1] 'j1'", "zero component"});
      for (const Transform& t : local) EXPECT_TRUE(BitEqual(t, Sentinel()));
    }
  }
}

TEST(ModelToLocal, ZeroScaleOnLeafJointIsAllowed) {
  const Skeleton skeleton = ChainSkeleton({-1, 0, 1, 0});
  ModelPose model(4);
  model[0].scale = Eigen::Vector3f::Constant(2);
  model[1].translation = Eigen::Vector3f(0, 2, 0);
  model[1].scale = Eigen::Vector3f::Constant(2);
  model[2].translation = Eigen::Vector3f(0, 4, 0);
  model[2].scale = Eigen::Vector3f::Zero();  // leaf
  model[3].translation = Eigen::Vector3f(4, 0, 0);
  model[3].scale = Eigen::Vector3f(0, 2, 0);  // leaf
  LocalPose local(4);
  ModelToLocalJob job{
      .skeleton = &skeleton, .input = model, .output = absl::MakeSpan(local)};
  ASSERT_TRUE(job.Run().ok());
  EXPECT_EQ(local[2].scale, Eigen::Vector3f::Zero());
  EXPECT_EQ(local[2].translation, Eigen::Vector3f(0, 1, 0));
  EXPECT_EQ(local[3].scale, Eigen::Vector3f(0, 1, 0));
  EXPECT_EQ(local[3].translation, Eigen::Vector3f(2, 0, 0));
  for (const Transform& t : local) EXPECT_TRUE(IsFinite(t));
}

TEST(ModelToLocal, InvertsLocalToModelOnRandomPosesWithUniformScales) {
  const Skeleton skeleton = RandomSkeleton(120, 41);
  Rng rng(42);
  for (int trial = 0; trial < 30; ++trial) {
    const LocalPose local = RandomPose(120, rng, 0.5f, 2.0f);
    const Transform root = rng.UniformScaleTransform(0.5f, 2.0f);
    const ModelPose model = Fk(skeleton, local, root);
    LocalPose back(120);
    ModelToLocalJob job{.skeleton = &skeleton,
                        .input = model,
                        .root = root,
                        .output = absl::MakeSpan(back)};
    ASSERT_TRUE(job.Run().ok()) << job.Validate();
    for (int j = 0; j < 120; ++j) {
      EXPECT_LT(
          (back[j].translation - local[j].translation).cwiseAbs().maxCoeff(),
          1e-5f)
          << "trial " << trial << " joint " << j;
      EXPECT_LT((back[j].rotation.coeffs() - local[j].rotation.coeffs())
                    .cwiseAbs()
                    .maxCoeff(),
                1e-5f)
          << "trial " << trial << " joint " << j;
      EXPECT_LT((back[j].scale - local[j].scale).cwiseAbs().maxCoeff(), 1e-5f)
          << "trial " << trial << " joint " << j;
    }
  }
}

// Composition in TRS form never shears, so the round trip also holds for
// non-uniform (and mirrored) scales.
TEST(ModelToLocal, InvertsLocalToModelUnderNonUniformScale) {
  const Skeleton skeleton = RandomSkeleton(60, 51);
  Rng rng(52);
  LocalPose local = RandomPose(60, rng, 0.7f, 1.4f);
  for (Transform& t : local) {
    t.scale = rng.Vector(0.7f, 1.4f);
    if (rng.Uniform(0, 1) < 0.2f) t.scale.x() = -t.scale.x();
  }
  const ModelPose model = Fk(skeleton, local);
  LocalPose back(60);
  ModelToLocalJob job{
      .skeleton = &skeleton, .input = model, .output = absl::MakeSpan(back)};
  ASSERT_TRUE(job.Run().ok());
  for (int j = 0; j < 60; ++j) {
    EXPECT_LT(
        (back[j].translation - local[j].translation).cwiseAbs().maxCoeff(),
        1e-5f)
        << j;
    EXPECT_LT((back[j].rotation.coeffs() - local[j].rotation.coeffs())
                  .cwiseAbs()
                  .maxCoeff(),
              1e-5f)
        << j;
    EXPECT_LT((back[j].scale - local[j].scale).cwiseAbs().maxCoeff(), 1e-5f)
        << j;
  }
}

// Model transforms written by hand (not produced by our FK): the local ones
// must satisfy parent_matrix * local_matrix == model_matrix.
TEST(ModelToLocal, LocalTimesParentMatrixGivesBackModelMatrix) {
  const Skeleton skeleton = RandomSkeleton(40, 61);
  Rng rng(62);
  ModelPose model;
  for (int j = 0; j < 40; ++j) {
    model.push_back(rng.UniformScaleTransform(0.5f, 2.0f));
  }
  const Transform root = rng.UniformScaleTransform(0.5f, 2.0f);
  LocalPose local(40);
  ModelToLocalJob job{.skeleton = &skeleton,
                      .input = model,
                      .root = root,
                      .output = absl::MakeSpan(local)};
  ASSERT_TRUE(job.Run().ok());
  for (int j = 0; j < 40; ++j) {
    const int p = skeleton.parent(j);
    const Eigen::Matrix4f parent = Matrix(p == kNoParent ? root : model[p]);
    EXPECT_LT(
        (parent * Matrix(local[j]) - Matrix(model[j])).cwiseAbs().maxCoeff(),
        1e-5f)
        << j;
  }
}

}  // namespace local_to_model_test
}  // namespace posewire
