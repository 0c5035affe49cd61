// BlendingJob: N-layer weighted blend with masks, blend root, threshold and
// fallback, each property checked against an independent computation in the
// test: weighted averages in double, nlerp angles about one axis in closed
// form, Szauer 2020's two-pose Blend(a, b, t, root) written out here, and
// bit-for-bit identity where the header promises it.

#include "solver_core/pose_ops/blending_job.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/quaternion_math.h"
#include "solver_core/model/simd_level.h"
#include "tests/core/pose_ops_test_util.h"

namespace posewire {
namespace blending_job_test {

using ::posewire::testing::AngleBetween;
using ::posewire::testing::RandomPose;
using ::posewire::testing::Rng;
using ::posewire::testing::SameBits;
using ::posewire::testing::TreeSkeleton;
using ::testing::HasSubstr;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr int kJoints = 23;  // not a multiple of 4: exercises every path

LocalPose Blend(const Skeleton& skeleton, std::vector<BlendLayer> layers,
                int base_layer = -1, int blend_root = -1,
                float threshold = kDefaultBlendThreshold) {
  LocalPose out(skeleton.num_joints());
  BlendingJob job;
  job.skeleton = &skeleton;
  job.layers = layers;
  job.base_layer = base_layer;
  job.blend_root = blend_root;
  job.threshold = threshold;
  job.output = absl::MakeSpan(out);
  const absl::Status s = job.Run();
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

// The book's IsInHierarchy: walk the parents up from `joint`.
bool InHierarchy(const Skeleton& skeleton, int root, int joint) {
  for (int j = joint; j != kNoParent; j = skeleton.parent(j)) {
    if (j == root) return true;
  }
  return false;
}

class BlendingTest : public ::testing::Test {
 protected:
  BlendingTest()
      : skeleton_(TreeSkeleton(kJoints)),
        rng_(11),
        a_(RandomPose(kJoints, rng_)),
        b_(RandomPose(kJoints, rng_)),
        c_(RandomPose(kJoints, rng_)) {}

  Skeleton skeleton_;
  Rng rng_;
  LocalPose a_, b_, c_;
};

TEST_F(BlendingTest, Blend_IdenticalPosesReturnThem) {
  for (std::vector<float> weights :
       {std::vector<float>{0.3f, 0.7f}, {1.0f, 2.0f, 5.0f}, {0.2f, 0.2f}}) {
    std::vector<BlendLayer> layers;
    for (float w : weights) layers.push_back({a_, w, {}});
    const LocalPose out = Blend(skeleton_, layers);
    for (int j = 0; j < kJoints; ++j) {
      EXPECT_TRUE(out[j].translation.isApprox(a_[j].translation, 1e-6f));
      EXPECT_TRUE(out[j].scale.isApprox(a_[j].scale, 1e-6f));
      EXPECT_LT(AngleBetween(out[j].rotation, a_[j].rotation), 1e-3f);
    }
  }
}

TEST_F(BlendingTest, Blend_WeightsOneAndZeroReturnTheInputsBitForBit) {
  const LocalPose only_a = Blend(skeleton_, {{a_, 1.0f, {}}, {b_, 0.0f, {}}});
  const LocalPose only_b = Blend(skeleton_, {{a_, 0.0f, {}}, {b_, 1.0f, {}}});
  // A negative weight counts as 0.
  const LocalPose negative =
      Blend(skeleton_, {{a_, -3.0f, {}}, {b_, 0.6f, {}}, {c_, 0.0f, {}}});
  for (int j = 0; j < kJoints; ++j) {
    EXPECT_TRUE(SameBits(only_a[j], a_[j])) << j;
    EXPECT_TRUE(SameBits(only_b[j], b_[j])) << j;
    EXPECT_TRUE(SameBits(negative[j], b_[j])) << j;
  }
}

TEST_F(BlendingTest, Blend_TranslationAndScaleAreNormalisedWeightedAverages) {
  const std::vector<float> w = {0.5f, 2.0f, 1.25f};
  const LocalPose out =
      Blend(skeleton_, {{a_, w[0], {}}, {b_, w[1], {}}, {c_, w[2], {}}});
  const double total = w[0] + w[1] + w[2];
  for (int j = 0; j < kJoints; ++j) {
    const Eigen::Vector3d t = (a_[j].translation.cast<double>() * w[0] +
                               b_[j].translation.cast<double>() * w[1] +
                               c_[j].translation.cast<double>() * w[2]) /
                              total;
    const Eigen::Vector3d s =
        (a_[j].scale.cast<double>() * w[0] + b_[j].scale.cast<double>() * w[1] +
         c_[j].scale.cast<double>() * w[2]) /
        total;
    EXPECT_TRUE(out[j].translation.cast<double>().isApprox(t, 1e-6)) << j;
    EXPECT_TRUE(out[j].scale.cast<double>().isApprox(s, 1e-6)) << j;
    EXPECT_NEAR(out[j].rotation.norm(), 1.0f, 1e-6f);
  }
}

TEST_F(BlendingTest, Blend_ScaledWeightsGiveTheSameBits) {
  // Weights are normalised: (2, 6) is (0.25, 0.75) exactly.
  const LocalPose x = Blend(skeleton_, {{a_, 2.0f, {}}, {b_, 6.0f, {}}});
  const LocalPose y = Blend(skeleton_, {{a_, 0.25f, {}}, {b_, 0.75f, {}}});
  for (int j = 0; j < kJoints; ++j) EXPECT_TRUE(SameBits(x[j], y[j])) << j;
}

TEST_F(BlendingTest, Blend_RotationsAboutOneAxisFollowTheNlerpAngle) {
  // Two rotations about z, 1.6 rad apart (0.8 rad on the 4-sphere), blended
  // with weight t: nlerp's angle is 2 atan2(t sin(phi), 1 - t + t cos(phi)).
  LocalPose p(kJoints), q(kJoints);
  for (int j = 0; j < kJoints; ++j) {
    p[j].rotation = Eigen::AngleAxisf(0.3f, Eigen::Vector3f::UnitZ());
    q[j].rotation = Eigen::AngleAxisf(1.9f, Eigen::Vector3f::UnitZ());
    // Store some of them with the opposite sign: the same rotation.
    if (j % 3 == 0) q[j].rotation.coeffs() *= -1.0f;
  }
  const double phi = 0.8;
  for (float t : {0.1f, 0.5f, 0.85f}) {
    const LocalPose out = Blend(skeleton_, {{p, 1 - t, {}}, {q, t, {}}});
    const double expected =
        0.3 + 2 * std::atan2(t * std::sin(phi), 1 - t + t * std::cos(phi));
    for (int j = 0; j < kJoints; ++j) {
      const Eigen::AngleAxisf aa(out[j].rotation);
      const float angle = aa.axis().z() < 0 ? -aa.angle() : aa.angle();
      EXPECT_NEAR(angle, expected, 2e-5) << "t " << t << " joint " << j;
    }
  }
}

TEST_F(BlendingTest, Blend_OppositeSignQuaternionsBlendToTheirRotation) {
  // q and -q are one rotation: their blend must be it, not a zero sum.
  LocalPose neg = a_;
  for (Transform& t : neg) t.rotation.coeffs() *= -1.0f;
  const LocalPose out = Blend(skeleton_, {{a_, 0.5f, {}}, {neg, 0.5f, {}}});
  for (int j = 0; j < kJoints; ++j) {
    EXPECT_LT(AngleBetween(out[j].rotation, a_[j].rotation), 1e-3f) << j;
  }
}

TEST_F(BlendingTest, Blend_MatchesTheSeedsTwoPoseBlendWithBlendRoot) {
  // The book's Blend(a, b, t, root), written out: joints under `root` get
  // mix(a, b, t) (lerp, shortest-path nlerp), the others keep a.
  const int root = 2;
  const float t = 0.35f;
  const LocalPose out =
      Blend(skeleton_, {{a_, 1 - t, {}}, {b_, t, {}}}, /*base_layer=*/0, root);
  int inside = 0;
  for (int j = 0; j < kJoints; ++j) {
    if (!InHierarchy(skeleton_, root, j)) {
      EXPECT_TRUE(SameBits(out[j], a_[j])) << "outside joint " << j;
      continue;
    }
    ++inside;
    const Eigen::Vector3f lerp =
        a_[j].translation + (b_[j].translation - a_[j].translation) * t;
    Eigen::Vector4f bq = b_[j].rotation.coeffs();
    if (a_[j].rotation.coeffs().dot(bq) < 0) bq = -bq;
    const Eigen::Quaternionf nlerp(
        (a_[j].rotation.coeffs() * (1 - t) + bq * t).normalized());
    EXPECT_TRUE(out[j].translation.isApprox(lerp, 1e-5f)) << j;
    EXPECT_LT(AngleBetween(out[j].rotation, nlerp), 1e-3f) << j;
  }
  EXPECT_GT(inside, 3);
  EXPECT_LT(inside, kJoints - 3);
}

TEST_F(BlendingTest, Blend_JointsOutsideTheBlendRootAreTheRestPose) {
  const int root = 1;
  const LocalPose out =
      Blend(skeleton_, {{a_, 0.5f, {}}, {b_, 0.5f, {}}}, -1, root);
  for (int j = 0; j < kJoints; ++j) {
    if (!InHierarchy(skeleton_, root, j)) {
      EXPECT_TRUE(SameBits(out[j], skeleton_.rest_pose()[j])) << j;
    }
  }
}

TEST_F(BlendingTest, Blend_MaskedOutJointsAreUntouchedBitForBit) {
  // Layer b only affects the even joints; elsewhere the output is a.
  std::vector<float> mask(kJoints);
  for (int j = 0; j < kJoints; ++j) mask[j] = j % 2 == 0 ? 1.0f : 0.0f;
  const LocalPose out = Blend(skeleton_, {{a_, 1.0f, {}}, {b_, 1.0f, mask}});
  const LocalPose unmasked = Blend(skeleton_, {{a_, 1.0f, {}}, {b_, 1.0f, {}}});
  for (int j = 0; j < kJoints; ++j) {
    if (j % 2 == 1) {
      EXPECT_TRUE(SameBits(out[j], a_[j])) << j;
    } else {
      // A joint weight of 1 gives the same bits as no mask.
      EXPECT_TRUE(SameBits(out[j], unmasked[j])) << j;
    }
  }
}

TEST_F(BlendingTest, Blend_NegativeJointWeightCountsAsZero) {
  std::vector<float> mask(kJoints, -2.0f);
  const LocalPose out = Blend(skeleton_, {{a_, 1.0f, {}}, {b_, 1.0f, mask}});
  for (int j = 0; j < kJoints; ++j) EXPECT_TRUE(SameBits(out[j], a_[j]));
}

TEST_F(BlendingTest, Blend_ZeroTotalWeightGivesTheFallbackBitForBit) {
  const LocalPose rest = Blend(skeleton_, {{a_, 0.0f, {}}, {b_, 0.0f, {}}});
  const LocalPose base =
      Blend(skeleton_, {{a_, 0.0f, {}}, {b_, 0.0f, {}}}, /*base_layer=*/1);
  const LocalPose none = Blend(skeleton_, {});
  for (int j = 0; j < kJoints; ++j) {
    EXPECT_TRUE(SameBits(rest[j], skeleton_.rest_pose()[j])) << j;
    EXPECT_TRUE(SameBits(base[j], b_[j])) << j;
    EXPECT_TRUE(SameBits(none[j], skeleton_.rest_pose()[j])) << j;
  }
}

TEST_F(BlendingTest, Blend_BelowThresholdTheFallbackFillsIn) {
  // Total weight 0.05 under a threshold of 0.1: the rest pose comes in with
  // weight 0.05, so translations land halfway between the layer and rest.
  const LocalPose out = Blend(skeleton_, {{a_, 0.05f, {}}}, -1, -1, 0.1f);
  for (int j = 0; j < kJoints; ++j) {
    const Eigen::Vector3f half =
        (a_[j].translation + skeleton_.rest_pose()[j].translation) * 0.5f;
    EXPECT_TRUE(out[j].translation.isApprox(half, 1e-5f)) << j;
  }
  // At the threshold, no fill.
  const LocalPose at = Blend(skeleton_, {{a_, 0.1f, {}}}, -1, -1, 0.1f);
  for (int j = 0; j < kJoints; ++j) EXPECT_TRUE(SameBits(at[j], a_[j]));
}

TEST_F(BlendingTest, Blend_OutputMayAliasALayer) {
  const LocalPose expected =
      Blend(skeleton_, {{a_, 0.3f, {}}, {b_, 0.7f, {}}, {c_, 0.2f, {}}});
  LocalPose in_place = a_;
  std::vector<BlendLayer> layers = {
      {in_place, 0.3f, {}}, {b_, 0.7f, {}}, {c_, 0.2f, {}}};
  BlendingJob job;
  job.skeleton = &skeleton_;
  job.layers = layers;
  job.output = absl::MakeSpan(in_place);
  ASSERT_TRUE(job.Run().ok());
  for (int j = 0; j < kJoints; ++j) {
    EXPECT_TRUE(SameBits(in_place[j], expected[j])) << j;
  }
}

TEST_F(BlendingTest, Blend_ManyLayersBeyondTheStackScratch) {
  // 20 layers (more than the job keeps on its stack) of the same pose.
  std::vector<BlendLayer> layers;
  for (int l = 0; l < 20; ++l) layers.push_back({b_, 1.0f + l, {}});
  const LocalPose out = Blend(skeleton_, layers);
  for (int j = 0; j < kJoints; ++j) {
    EXPECT_TRUE(out[j].translation.isApprox(b_[j].translation, 1e-5f));
  }
}

TEST_F(BlendingTest, Blend_RejectsBadInputsNamingLayerAndJoint) {
  LocalPose out(kJoints);
  std::vector<float> mask(kJoints, 1.0f);
  std::vector<BlendLayer> layers = {{a_, 0.5f, {}}, {b_, 0.5f, mask}};
  BlendingJob job;
  job.skeleton = &skeleton_;
  job.layers = layers;
  job.output = absl::MakeSpan(out);
  ASSERT_TRUE(job.Validate().ok());

  layers[1].weight = kNaN;
  EXPECT_THAT(job.Run().message(), HasSubstr("blending.layers[1].weight"));
  layers[1].weight = kInf;
  EXPECT_EQ(job.Run().code(), absl::StatusCode::kInvalidArgument);
  layers[1].weight = 0.5f;

  mask[4] = kInf;
  absl::Status s = job.Run();
  EXPECT_THAT(s.message(), HasSubstr("layers[1].joint_weights[4] 'j4'"));
  mask[4] = 1.0f;

  LocalPose bad = b_;
  bad[7].rotation.coeffs() *= 2.0f;
  layers[1].transform = bad;
  s = job.Run();
  EXPECT_THAT(s.message(), HasSubstr("blending.layers[1].transform[7] 'j7'"));
  bad[7] = b_[7];
  bad[9].translation.x() = kNaN;
  EXPECT_THAT(job.Run().message(), HasSubstr("[9] 'j9'"));
  layers[1].transform = b_;

  BlendingJob wrong = job;
  wrong.base_layer = 2;
  EXPECT_THAT(wrong.Run().message(), HasSubstr("blending.base_layer"));
  wrong = job;
  wrong.blend_root = kJoints;
  EXPECT_THAT(wrong.Run().message(), HasSubstr("blending.blend_root"));
  wrong = job;
  wrong.threshold = -0.1f;
  EXPECT_THAT(wrong.Run().message(), HasSubstr("blending.threshold"));
  LocalPose short_pose(kJoints - 1);
  wrong = job;
  wrong.output = absl::MakeSpan(short_pose);
  EXPECT_THAT(wrong.Run().message(), HasSubstr("blending.output"));
  layers[0].transform = short_pose;
  EXPECT_THAT(job.Run().message(), HasSubstr("blending.layers[0].transform"));
}

TEST_F(BlendingTest, Blend_LayersValidatedSkipsOnlyTheTransformChecks) {
  LocalPose out(kJoints);
  LocalPose bad = b_;
  bad[3].rotation.coeffs() *= 3.0f;
  std::vector<BlendLayer> layers = {{a_, 0.5f, {}}, {bad, 0.5f, {}}};
  BlendingJob job;
  job.skeleton = &skeleton_;
  job.layers = layers;
  job.output = absl::MakeSpan(out);
  EXPECT_FALSE(job.Validate().ok());
  job.layers_validated = true;
  EXPECT_TRUE(job.Validate().ok());
  layers[1].weight = kNaN;
  EXPECT_FALSE(job.Validate().ok());
}

// Restores the SIMD level a test found, however it exits.
class ScopedSimdLevel {
 public:
  ScopedSimdLevel() : saved_(ActiveSimdLevel()) {}
  ~ScopedSimdLevel() { SetMaxSimdLevel(saved_); }
  ScopedSimdLevel(const ScopedSimdLevel&) = delete;
  ScopedSimdLevel& operator=(const ScopedSimdLevel&) = delete;

 private:
  SimdLevel saved_;
};

// One random blend: what BlendingJob reads, plus how to run it.
struct RandomBlend {
  int joints = 0;
  std::vector<LocalPose> poses;
  std::vector<std::vector<float>> masks;
  std::vector<float> weights;
  int base_layer = -1;
  int blend_root = -1;
  float threshold = kDefaultBlendThreshold;
  int aliased_layer = -1;  // the output is this layer's transforms
  bool unchecked = false;  // RunUnchecked on unvalidated rotations
};

RandomBlend MakeRandomBlend(Rng& rng) {
  // Every remainder mod 8 (the AVX2 kernel's step) and mod 4.
  static constexpr int kJointCounts[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,
                                         11, 12, 13, 16, 17, 23, 31, 33, 64};
  RandomBlend b;
  b.joints = kJointCounts[static_cast<int>(
      rng.Uniform(0, std::size(kJointCounts) - 0.01f))];
  // Now and then more layers than the job keeps on its stack.
  const int num_layers = rng.Uniform(0, 1) < 0.05f
                             ? 17 + static_cast<int>(rng.Uniform(0, 3.99f))
                             : 2 + static_cast<int>(rng.Uniform(0, 4.99f));
  for (int l = 0; l < num_layers; ++l) {
    LocalPose pose = RandomPose(b.joints, rng);
    if (l > 0 && rng.Uniform(0, 1) < 0.3f) {
      // The first layer's rotations, half of them negated: flips on
      // purpose, and opposite quaternions of one rotation.
      for (int j = 0; j < b.joints; ++j) {
        pose[j].rotation = b.poses[0][j].rotation;
        if (rng.Uniform(0, 1) < 0.5f) pose[j].rotation.coeffs() *= -1.0f;
      }
    }
    // Garbage in the padding (NaN, denormal): blended joints must not
    // depend on it (copied joints carry it along).
    for (Transform& t : pose) {
      if (sizeof(Transform) != 48) break;
      const float nan = kNaN;
      const float denormal = 1e-40f;
      unsigned char* bytes = reinterpret_cast<unsigned char*>(&t);
      std::memcpy(bytes + 12, &nan, 4);
      std::memcpy(bytes + 44, &denormal, 4);
    }
    b.poses.push_back(std::move(pose));
    const float r = rng.Uniform(0, 1);
    b.weights.push_back(r < 0.15f   ? 0.0f
                        : r < 0.25f ? -0.5f
                        : r < 0.35f ? rng.Uniform(0, 0.05f)  // threshold fill
                                    : rng.Uniform(0, 2));
    std::vector<float> mask;
    if (rng.Uniform(0, 1) < 0.35f) {
      mask.resize(b.joints);
      for (float& m : mask) {
        const float u = rng.Uniform(0, 1);
        m = u < 0.2f ? 0.0f : u < 0.4f ? 1.0f : rng.Uniform(-0.2f, 1.5f);
      }
    }
    b.masks.push_back(std::move(mask));
  }
  if (rng.Uniform(0, 1) < 0.4f) {
    b.base_layer = static_cast<int>(rng.Uniform(0, num_layers - 0.01f));
  }
  if (rng.Uniform(0, 1) < 0.3f) {
    b.blend_root = static_cast<int>(rng.Uniform(0, b.joints - 0.01f));
  }
  static constexpr float kThresholds[] = {0.0f, 0.1f, 0.5f, 2.0f};
  b.threshold = kThresholds[static_cast<int>(rng.Uniform(0, 3.99f))];
  if (rng.Uniform(0, 1) < 0.25f) {
    b.aliased_layer = static_cast<int>(rng.Uniform(0, num_layers - 0.01f));
  }
  if (rng.Uniform(0, 1) < 0.15f) {
    // Degenerate and NaN rotation sums: zero rotations at some joints in
    // every layer, a NaN in others.
    b.unchecked = true;
    for (int j = 0; j < b.joints; ++j) {
      const float u = rng.Uniform(0, 1);
      for (LocalPose& pose : b.poses) {
        if (u < 0.2f) pose[j].rotation.coeffs().setZero();
        if (u > 0.9f) pose[j].rotation.coeffs()[j % 4] = kNaN;
      }
    }
  }
  return b;
}

// The output's bytes (padding included) and the status, under the current
// SIMD level. The output starts as the same garbage for every run.
std::string RunRandomBlend(const Skeleton& skeleton, const RandomBlend& b) {
  // Byte copies: copying Transforms member by member would leave their
  // padding (which in-place blends keep) to whatever the heap held.
  std::vector<LocalPose> poses;
  for (const LocalPose& pose : b.poses) {
    poses.emplace_back(pose.size());
    std::memcpy(static_cast<void*>(poses.back().data()), pose.data(),
                pose.size() * sizeof(Transform));
  }
  LocalPose out(b.joints);
  std::memset(static_cast<void*>(out.data()), 0x5a,
              out.size() * sizeof(Transform));
  LocalPose& target = b.aliased_layer >= 0 ? poses[b.aliased_layer] : out;
  std::vector<BlendLayer> layers;
  for (size_t l = 0; l < poses.size(); ++l) {
    layers.push_back({poses[l], b.weights[l], b.masks[l]});
  }
  BlendingJob job;
  job.skeleton = &skeleton;
  job.layers = layers;
  job.base_layer = b.base_layer;
  job.blend_root = b.blend_root;
  job.threshold = b.threshold;
  job.output = absl::MakeSpan(target);
  std::string result;
  if (b.unchecked) {
    result = job.Validate().ToString();
    job.RunUnchecked();
  } else {
    result = job.Run().ToString();
  }
  result.append(reinterpret_cast<const char*>(target.data()),
                target.size() * sizeof(Transform));
  return result;
}

// The AVX2 kernels' contract (simd_level.h): the SSE2 kernels' bits, on
// every path (same contributors everywhere, masks, blend root, threshold
// fill, joint counts that are not multiples of 2, 4 or 8, in-place output,
// degenerate and NaN sums).
TEST(BlendingSimdTest, Blend_Avx2GivesTheSse2BitsOnRandomBlends) {
  if (DetectedSimdLevel() != SimdLevel::kAvx2) {
    GTEST_SKIP() << "this CPU has no AVX2";
  }
  const ScopedSimdLevel restore;
  Rng rng(2024);
  int blended = 0;
  for (int i = 0; i < 800; ++i) {
    const RandomBlend b = MakeRandomBlend(rng);
    const Skeleton skeleton = TreeSkeleton(b.joints);
    SetMaxSimdLevel(SimdLevel::kSse2);
    ASSERT_EQ(ActiveSimdLevel(), SimdLevel::kSse2);
    const std::string sse2 = RunRandomBlend(skeleton, b);
    SetMaxSimdLevel(SimdLevel::kAvx2);
    ASSERT_EQ(ActiveSimdLevel(), SimdLevel::kAvx2);
    const std::string avx2 = RunRandomBlend(skeleton, b);
    ASSERT_EQ(sse2.size(), avx2.size());
    size_t first_difference = 0;
    while (first_difference < sse2.size() &&
           sse2[first_difference] == avx2[first_difference]) {
      ++first_difference;
    }
    EXPECT_EQ(std::memcmp(sse2.data(), avx2.data(), sse2.size()), 0)
        << "byte " << first_difference << " of " << sse2.size() << ", case "
        << i << ": " << b.joints << " joints, " << b.poses.size()
        << " layers, base " << b.base_layer << ", root " << b.blend_root
        << ", threshold " << b.threshold << ", aliased " << b.aliased_layer
        << (b.unchecked ? ", unchecked" : "");
    blended += sse2.rfind("OK", 0) == 0;
  }
  EXPECT_GT(blended, 400);
}

// Validate's transform scan has an AVX2 version too: same statuses (the
// first bad transform, whatever the level), including a bad transform in
// the tail of a pose whose size is not a multiple of four.

// Spoils `t` in one of six ways: NaN translation, infinite scale, rotation
// 1% off unit length, zero rotation, NaN rotation, or (kind 5) a valid but
// huge translation whose weighted sums overflow.
void MakeBad(int kind, Transform* t) {
  switch (kind) {
    case 0:
      t->translation.y() = kNaN;
      break;
    case 1:
      t->scale.z() = -kInf;
      break;
    case 2:
      t->rotation.coeffs() *= 1.01f;
      break;
    case 3:
      t->rotation.coeffs() *= 0.0f;
      break;
    case 4:
      t->rotation.w() = kNaN;
      break;
    case 5:
      t->translation.x() = 3e38f;
      break;
  }
}

TEST(BlendingSimdTest, Blend_Avx2ValidateGivesTheSse2Statuses) {
  if (DetectedSimdLevel() != SimdLevel::kAvx2) {
    GTEST_SKIP() << "this CPU has no AVX2";
  }
  const ScopedSimdLevel restore;
  Rng rng(77);
  const int n = 23;
  const Skeleton skeleton = TreeSkeleton(n);
  const LocalPose good = RandomPose(n, rng);
  for (int j = 0; j < n; ++j) {
    for (int kind = 0; kind < 6; ++kind) {
      LocalPose bad = RandomPose(n, rng);
      MakeBad(kind, &bad[j]);
      if (kind != 5) bad[(j * 7 + 3) % n].scale.x() = kInf;  // a second one
      std::vector<BlendLayer> layers = {{good, 0.5f, {}}, {bad, 0.5f, {}}};
      LocalPose out(n);
      BlendingJob job;
      job.skeleton = &skeleton;
      job.layers = layers;
      job.output = absl::MakeSpan(out);
      SetMaxSimdLevel(SimdLevel::kSse2);
      const absl::Status sse2 = job.Validate();
      SetMaxSimdLevel(SimdLevel::kAvx2);
      const absl::Status avx2 = job.Validate();
      EXPECT_EQ(sse2, avx2) << "joint " << j << " kind " << kind;
      EXPECT_EQ(avx2.ok(), kind == 5) << avx2;
    }
  }
}

// Run() with AVX2 screens the transforms while it blends them (no masks, no
// blend root), into scratch: a bad transform in a contributing layer (in
// the four-joint groups or the tail, the first, second or third of three),
// in a layer without weight, or in the base layer filling in gives
// Validate()'s status and leaves the output as it was, in place too; a valid
// pose whose sums overflow the screen still blends; the bits are the SSE2
// path's either way.
TEST(BlendingSimdTest, Blend_Avx2CheckedRunScreensWhileBlending) {
  if (DetectedSimdLevel() != SimdLevel::kAvx2) {
    GTEST_SKIP() << "this CPU has no AVX2";
  }
  const ScopedSimdLevel restore;
  Rng rng(99);
  int failed = 0;
  for (const int n : {4, 7, 64, 67}) {
    const Skeleton skeleton = TreeSkeleton(n);
    for (int kind = 0; kind < 6; ++kind) {
      for (int where = 0; where < 4; ++where) {
        for (const bool aliased : {false, true}) {
          std::vector<LocalPose> poses;
          for (int l = 0; l < 3; ++l) poses.push_back(RandomPose(n, rng));
          // Layer 1 contributes, layer 2 has no weight; with where == 2
          // layer 0 is the base layer and also fills in below the
          // threshold.
          std::vector<float> weights = {0.3f, 0.6f, 0.0f};
          int base_layer = -1;
          if (where == 2) {
            weights = {0.01f, 0.02f, 0.0f};
            base_layer = 0;
          }
          // With where == 3, three contributors, the last one bad.
          if (where == 3) weights = {0.3f, 0.6f, 0.4f};
          static constexpr int kBadLayer[] = {1, 2, 0, 2};
          LocalPose& bad = poses[kBadLayer[where]];
          const int j = static_cast<int>(rng.Uniform(0, n - 0.01f));
          MakeBad(kind, &bad[j]);
          if (kind == 5) poses[1][j].translation.x() = 3e38f;
          auto run = [&](SimdLevel level, bool* untouched) {
            SetMaxSimdLevel(level);
            // Byte copies (padding included), as in RunRandomBlend.
            std::vector<LocalPose> copies;
            for (const LocalPose& pose : poses) {
              copies.emplace_back(n);
              std::memcpy(static_cast<void*>(copies.back().data()), pose.data(),
                          n * sizeof(Transform));
            }
            LocalPose out(n);
            std::memset(static_cast<void*>(out.data()), 0x5a,
                        out.size() * sizeof(Transform));
            LocalPose& target = aliased ? copies[1] : out;
            const std::string before(
                reinterpret_cast<const char*>(target.data()),
                n * sizeof(Transform));
            std::vector<BlendLayer> layers;
            for (int l = 0; l < 3; ++l) {
              layers.push_back({copies[l], weights[l], {}});
            }
            BlendingJob job;
            job.skeleton = &skeleton;
            job.layers = layers;
            job.base_layer = base_layer;
            job.output = absl::MakeSpan(target);
            std::string result = job.Run().ToString();
            *untouched =
                std::memcmp(before.data(), target.data(), before.size()) == 0;
            result.append(reinterpret_cast<const char*>(target.data()),
                          n * sizeof(Transform));
            return result;
          };
          bool sse2_untouched = false;
          bool avx2_untouched = false;
          const std::string sse2 = run(SimdLevel::kSse2, &sse2_untouched);
          const std::string avx2 = run(SimdLevel::kAvx2, &avx2_untouched);
          const std::string context =
              absl::StrCat(n, " joints, kind ", kind, ", where ", where,
                           ", joint ", j, aliased ? ", aliased" : "");
          EXPECT_EQ(sse2.size(), avx2.size()) << context;
          EXPECT_EQ(std::memcmp(sse2.data(), avx2.data(),
                                std::min(sse2.size(), avx2.size())),
                    0)
              << context;
          const bool ok = avx2.rfind("OK", 0) == 0;
          EXPECT_EQ(ok, kind == 5) << context << ": " << avx2.substr(0, 80);
          if (!ok) {
            ++failed;
            EXPECT_TRUE(avx2_untouched) << context;
            EXPECT_TRUE(sse2_untouched) << context;
          }
        }
      }
    }
  }
  EXPECT_EQ(failed, 4 * 5 * 4 * 2);
}

// The shared kernels (quaternion_math.h) against the scalar formulas and
// Eigen: the SSE paths must give the scalar bits.
TEST(QuaternionMathTest, QuaternionMath_SimdKernelsMatchScalarFormulas) {
  Rng rng(21);
  for (int i = 0; i < 200; ++i) {
    const Eigen::Vector4f a(rng.Uniform(-2, 2), rng.Uniform(-2, 2),
                            rng.Uniform(-2, 2), rng.Uniform(-2, 2));
    const Eigen::Vector4f b(rng.Uniform(-1, 1), rng.Uniform(-1, 1),
                            rng.Uniform(-1, 1), rng.Uniform(-1, 1));
    const float xz = a.x() * b.x() + a.z() * b.z();
    const float yw = a.y() * b.y() + a.w() * b.w();
    EXPECT_EQ(Dot4(a, b), xz + yw);
    const Eigen::Quaternionf n =
        NormalizedOr(b, Eigen::Quaternionf::Identity());
    EXPECT_TRUE(n.coeffs().isApprox(b.normalized(), 1e-6f));
  }
  // DeferredNormalizer: NormalizedOr's bits, four at a time and for a tail.
  std::vector<Eigen::Quaternionf> q(7), expected(7);
  const Eigen::Quaternionf fallback(0, 1, 0, 0);
  for (int k = 0; k < 7; ++k) {
    q[k] = Eigen::Quaternionf(rng.Uniform(-1, 1), rng.Uniform(-1, 1),
                              rng.Uniform(-1, 1), rng.Uniform(-1, 1));
  }
  q[2] = Eigen::Quaternionf(0, 0, 0, 0);  // degenerate: the fallback
  for (int k = 0; k < 7; ++k)
    expected[k] = NormalizedOr(q[k].coeffs(), fallback);
  DeferredNormalizer normalizer;
  for (int k = 0; k < 7; ++k) normalizer.Add(&q[k], &fallback);
  normalizer.Flush();
  for (int k = 0; k < 7; ++k) {
    EXPECT_EQ(q[k].coeffs(), expected[k].coeffs()) << k;
  }
}

TEST(QuaternionMathTest, QuaternionMath_ScreensAgreeWithValidateTransform) {
  // Every component non-finite in turn, norms around the tolerance, and
  // garbage (NaN bytes) in the padding, which must not matter.
  Rng rng(8);
  std::vector<Transform> cases;
  for (int c = 0; c < 10; ++c) {
    for (float bad : {kNaN, kInf, -kInf}) {
      Transform t = rng.RandomTransform();
      float* f[10] = {&t.translation.x(), &t.translation.y(),
                      &t.translation.z(), &t.rotation.x(),
                      &t.rotation.y(),    &t.rotation.z(),
                      &t.rotation.w(),    &t.scale.x(),
                      &t.scale.y(),       &t.scale.z()};
      *f[c] = bad;
      cases.push_back(t);
    }
  }
  for (float norm :
       {0.9f, 0.998f, 0.9991f, 0.99995f, 1.0f, 1.0009f, 1.0011f, 1.2f}) {
    Transform t = rng.RandomTransform();
    t.rotation.coeffs() *= norm;
    cases.push_back(t);
  }
  for (Transform t : cases) {
    const bool valid = ValidateTransform(t, "t", 0, "j").ok();
    // A screen may send a valid transform to the slow path, never let an
    // invalid one through.
    EXPECT_TRUE(!TransformLooksValid(t) || valid);
    EXPECT_TRUE(!PoseLooksValid(absl::MakeConstSpan(&t, 1)) || valid);
    if (std::fabs(t.rotation.norm() - 1.0f) < 5e-4f && valid) {
      EXPECT_TRUE(TransformLooksValid(t));
    }
  }
  // NaN bytes in the padding after translation and scale.
  std::vector<Transform> pose(3);
  for (Transform& t : pose) t = rng.RandomTransform();
  for (Transform& t : pose) {
    const float nan = kNaN;
    unsigned char* bytes = reinterpret_cast<unsigned char*>(&t);
    if (sizeof(Transform) == 48) {
      std::memcpy(bytes + 12, &nan, 4);
      std::memcpy(bytes + 44, &nan, 4);
    }
    EXPECT_TRUE(TransformLooksValid(t));
  }
  EXPECT_TRUE(PoseLooksValid(pose));
}

// Poses of 16 or more transforms take the AVX2 screen when the CPU has it:
// it must reject every pose the SSE2 screen rejects, wherever the bad
// transform sits (in the eight-at-a-time, four-at-a-time and one-at-a-time
// parts), and pass valid poses whatever their padding holds.
TEST(QuaternionMathTest, PoseScreenRejectsTheSameAtEveryLevel) {
  const SimdLevel saved = ActiveSimdLevel();
  Rng rng(9);
  for (const size_t size : {16, 17, 23, 29, 40}) {
    std::vector<Transform> valid(size);
    for (Transform& t : valid) t = rng.RandomTransform();
    const float nan = kNaN;
    for (Transform& t : valid) {
      if (sizeof(Transform) != 48) break;
      unsigned char* bytes = reinterpret_cast<unsigned char*>(&t);
      std::memcpy(bytes + 12, &nan, 4);
      std::memcpy(bytes + 44, &nan, 4);
    }
    for (const SimdLevel level : {SimdLevel::kSse2, DetectedSimdLevel()}) {
      SetMaxSimdLevel(level);
      EXPECT_TRUE(PoseLooksValid(valid)) << size << " " << SimdLevelName(level);
      for (size_t at = 0; at < size; ++at) {
        for (const float bad : {kNaN, kInf}) {
          std::vector<Transform> pose = valid;
          // A non-finite translation, rotation or scale, or a rotation far
          // from unit length, in turn.
          switch (at % 4) {
            case 0:
              pose[at].translation.y() = bad;
              break;
            case 1:
              pose[at].rotation.w() = bad;
              break;
            case 2:
              pose[at].scale.z() = bad;
              break;
            case 3:
              pose[at].rotation.coeffs() *= 1.2f;
              break;
          }
          EXPECT_FALSE(PoseLooksValid(pose))
              << size << " transforms, bad at " << at << ", "
              << SimdLevelName(level);
        }
      }
    }
  }
  SetMaxSimdLevel(saved);
}

}  // namespace blending_job_test
}  // namespace posewire
