// MakeAdditiveJob and AdditiveJob: the delta of a pose with itself is the
// identity; applying a delta follows the documented convention
// (out = in * inverse(base) * additive for rotations, translations add,
// scales multiply), checked with Eigen's own quaternion algebra in the test;
// partial and negative weights, masks, blend root and validation.

#include "solver_core/pose_ops/additive_job.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <cmath>
#include <limits>
#include <vector>

#include "solver_core/model/pose.h"
#include "solver_core/pose_ops/sampling_job.h"
#include "tests/core/pose_ops_test_util.h"

namespace posewire {
namespace additive_job_test {

using ::posewire::testing::AngleBetween;
using ::posewire::testing::RandomPose;
using ::posewire::testing::Rng;
using ::posewire::testing::SameBits;
using ::posewire::testing::TreeSkeleton;
using ::testing::HasSubstr;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr int kJoints = 9;

class AdditiveTest : public ::testing::Test {
 protected:
  AdditiveTest()
      : skeleton_(TreeSkeleton(kJoints)),
        rng_(3),
        input_(RandomPose(kJoints, rng_)),
        base_(RandomPose(kJoints, rng_)),
        additive_(RandomPose(kJoints, rng_)) {}

  LocalPose MakeDelta(const LocalPose& base, const LocalPose& additive) {
    LocalPose delta(kJoints);
    MakeAdditiveJob job{.skeleton = &skeleton_,
                        .base = base,
                        .additive = additive,
                        .delta = absl::MakeSpan(delta)};
    const absl::Status s = job.Run();
    EXPECT_TRUE(s.ok()) << s;
    return delta;
  }

  LocalPose Apply(const LocalPose& input, const LocalPose& delta, float weight,
                  absl::Span<const float> joint_weights = {},
                  int blend_root = -1) {
    LocalPose out(kJoints);
    AdditiveJob job{.skeleton = &skeleton_,
                    .input = input,
                    .delta = delta,
                    .weight = weight,
                    .joint_weights = joint_weights,
                    .blend_root = blend_root,
                    .output = absl::MakeSpan(out)};
    const absl::Status s = job.Run();
    EXPECT_TRUE(s.ok()) << s;
    return out;
  }

  Skeleton skeleton_;
  Rng rng_;
  LocalPose input_, base_, additive_;
};

TEST_F(AdditiveTest, MakeAdditive_DeltaOfAPoseWithItselfIsTheIdentity) {
  const LocalPose delta = MakeDelta(base_, base_);
  for (int j = 0; j < kJoints; ++j) {
    EXPECT_EQ(delta[j].translation, Eigen::Vector3f::Zero()) << j;
    EXPECT_EQ(delta[j].rotation.coeffs(),
              Eigen::Quaternionf::Identity().coeffs())
        << j;
    EXPECT_EQ(delta[j].scale, Eigen::Vector3f::Ones()) << j;
  }
  // Applied at any weight, the identity changes nothing.
  for (float w : {1.0f, 0.4f, -0.7f, -1.0f}) {
    const LocalPose out = Apply(input_, delta, w);
    for (int j = 0; j < kJoints; ++j) {
      EXPECT_EQ(out[j].translation, input_[j].translation) << j;
      EXPECT_EQ(out[j].scale, input_[j].scale) << j;
      EXPECT_TRUE(
          out[j].rotation.coeffs().isApprox(input_[j].rotation.coeffs(), 1e-7f))
          << j;
    }
  }
}

TEST_F(AdditiveTest, Additive_FullWeightFollowsTheSeedsFormula) {
  // out = in + (add - base), in * inverse(base) * add, in * add / base,
  // computed with Eigen's quaternion algebra.
  const LocalPose delta = MakeDelta(base_, additive_);
  const LocalPose out = Apply(input_, delta, 1.0f);
  for (int j = 0; j < kJoints; ++j) {
    const Eigen::Vector3f t = input_[j].translation +
                              (additive_[j].translation - base_[j].translation);
    const Eigen::Quaternionf r = input_[j].rotation *
                                 base_[j].rotation.inverse() *
                                 additive_[j].rotation;
    const Eigen::Vector3f s = input_[j].scale.cwiseProduct(
        additive_[j].scale.cwiseQuotient(base_[j].scale));
    EXPECT_TRUE(out[j].translation.isApprox(t, 1e-5f)) << j;
    EXPECT_LT(AngleBetween(out[j].rotation, r), 1e-3f) << j;
    EXPECT_TRUE(out[j].scale.isApprox(s, 1e-5f)) << j;
  }
}

TEST_F(AdditiveTest, Additive_ApplyingTheDeltaToItsBaseGivesTheAdditivePose) {
  const LocalPose delta = MakeDelta(base_, additive_);
  const LocalPose out = Apply(base_, delta, 1.0f);
  for (int j = 0; j < kJoints; ++j) {
    EXPECT_TRUE(out[j].translation.isApprox(additive_[j].translation, 1e-5f));
    EXPECT_LT(AngleBetween(out[j].rotation, additive_[j].rotation), 1e-3f);
    EXPECT_TRUE(out[j].scale.isApprox(additive_[j].scale, 1e-5f));
  }
  // And weight -1 on the additive pose takes it back to the base.
  const LocalPose back = Apply(additive_, delta, -1.0f);
  for (int j = 0; j < kJoints; ++j) {
    EXPECT_TRUE(back[j].translation.isApprox(base_[j].translation, 1e-5f));
    EXPECT_LT(AngleBetween(back[j].rotation, base_[j].rotation), 1e-3f);
    EXPECT_TRUE(back[j].scale.isApprox(base_[j].scale, 1e-5f));
  }
}

TEST_F(AdditiveTest, Additive_ScaleMultipliesRatherThanAdds) {
  // Base 2, additive 3 ("1.5 times bigger") on an input of 4 gives 6 (the
  // seed's subtraction would give 5).
  LocalPose base = base_, add = additive_, in = input_;
  base[0].scale = Eigen::Vector3f::Constant(2.0f);
  add[0].scale = Eigen::Vector3f::Constant(3.0f);
  in[0].scale = Eigen::Vector3f::Constant(4.0f);
  const LocalPose out = Apply(in, MakeDelta(base, add), 1.0f);
  EXPECT_EQ(out[0].scale, Eigen::Vector3f::Constant(6.0f));
}

TEST_F(AdditiveTest, Additive_HalfWeightAppliesHalfTheRotationAngle) {
  // nlerp(identity, d, 0.5) is exactly the half-angle rotation.
  LocalPose base(kJoints), add(kJoints);
  const Eigen::Vector3f axis = Eigen::Vector3f(1, 2, -0.5f).normalized();
  for (int j = 0; j < kJoints; ++j) {
    add[j].rotation = Eigen::AngleAxisf(0.2f * (j + 1), axis);
    add[j].translation = Eigen::Vector3f(j, 1, 2);
  }
  const LocalPose delta = MakeDelta(base, add);
  const LocalPose out = Apply(input_, delta, 0.5f);
  for (int j = 0; j < kJoints; ++j) {
    const Eigen::Quaternionf half =
        input_[j].rotation *
        Eigen::Quaternionf(Eigen::AngleAxisf(0.1f * (j + 1), axis));
    EXPECT_LT(AngleBetween(out[j].rotation, half), 1e-5f) << j;
    EXPECT_TRUE(out[j].translation.isApprox(
        input_[j].translation + Eigen::Vector3f(j, 1, 2) * 0.5f, 1e-6f));
  }
}

TEST_F(AdditiveTest, Additive_NegativeWeightUndoesThePositiveOne) {
  const LocalPose delta = MakeDelta(base_, additive_);
  for (float w : {0.3f, 0.75f, 1.0f}) {
    const LocalPose there = Apply(input_, delta, w);
    const LocalPose back = Apply(there, delta, -w);
    for (int j = 0; j < kJoints; ++j) {
      EXPECT_TRUE(back[j].translation.isApprox(input_[j].translation, 1e-5f));
      EXPECT_LT(AngleBetween(back[j].rotation, input_[j].rotation), 1e-3f);
      EXPECT_TRUE(back[j].scale.isApprox(input_[j].scale, 1e-5f));
    }
  }
}

TEST_F(AdditiveTest, Additive_ZeroWeightMaskAndBlendRootLeaveJointsBitForBit) {
  const LocalPose delta = MakeDelta(base_, additive_);
  const LocalPose zero = Apply(input_, delta, 0.0f);
  for (int j = 0; j < kJoints; ++j) EXPECT_TRUE(SameBits(zero[j], input_[j]));

  std::vector<float> mask(kJoints, 1.0f);
  mask[2] = 0.0f;
  mask[5] = -1.0f;  // clamped to 0
  const LocalPose masked = Apply(input_, delta, 1.0f, mask);
  const LocalPose full = Apply(input_, delta, 1.0f);
  for (int j = 0; j < kJoints; ++j) {
    if (j == 2 || j == 5) {
      EXPECT_TRUE(SameBits(masked[j], input_[j])) << j;
    } else {
      EXPECT_TRUE(SameBits(masked[j], full[j])) << j;
    }
  }

  const int root = 1;  // joints 1, 3, 4, 7, 8 in a 9-joint binary tree
  const LocalPose rooted = Apply(input_, delta, 1.0f, {}, root);
  for (int j = 0; j < kJoints; ++j) {
    const bool inside = j == 1 || j == 3 || j == 4 || j == 7 || j == 8;
    EXPECT_EQ(SameBits(rooted[j], input_[j]), !inside) << j;
    if (inside) {
      EXPECT_TRUE(SameBits(rooted[j], full[j])) << j;
    }
  }
}

TEST_F(AdditiveTest, Additive_JointWeightScalesTheWeight) {
  const LocalPose delta = MakeDelta(base_, additive_);
  std::vector<float> mask(kJoints, 0.5f);
  const LocalPose masked = Apply(input_, delta, 0.8f, mask);
  const LocalPose scaled = Apply(input_, delta, 0.4f);
  for (int j = 0; j < kJoints; ++j) {
    EXPECT_TRUE(SameBits(masked[j], scaled[j])) << j;
  }
}

TEST_F(AdditiveTest, Additive_OutputMayAliasTheInput) {
  const LocalPose delta = MakeDelta(base_, additive_);
  const LocalPose expected = Apply(input_, delta, 0.6f);
  LocalPose in_place = input_;
  AdditiveJob job{.skeleton = &skeleton_,
                  .input = in_place,
                  .delta = delta,
                  .weight = 0.6f,
                  .output = absl::MakeSpan(in_place)};
  ASSERT_TRUE(job.Run().ok());
  for (int j = 0; j < kJoints; ++j) {
    EXPECT_TRUE(SameBits(in_place[j], expected[j]));
  }
}

TEST_F(AdditiveTest, Additive_RejectsBadInputsNamingTheField) {
  const LocalPose delta = MakeDelta(base_, additive_);
  LocalPose out(kJoints);
  AdditiveJob job{.skeleton = &skeleton_,
                  .input = input_,
                  .delta = delta,
                  .output = absl::MakeSpan(out)};
  for (float w : {1.5f, -1.01f, kNaN}) {
    AdditiveJob bad = job;
    bad.weight = w;
    EXPECT_THAT(bad.Run().message(), HasSubstr("additive.weight")) << w;
  }
  std::vector<float> mask(kJoints, 1.0f);
  mask[6] = kNaN;
  AdditiveJob bad = job;
  bad.joint_weights = mask;
  EXPECT_THAT(bad.Run().message(), HasSubstr("joint_weights[6] 'j6'"));
  bad = job;
  bad.blend_root = -2;
  EXPECT_THAT(bad.Run().message(), HasSubstr("additive.blend_root"));

  LocalPose bad_delta = delta;
  bad_delta[4].translation.y() = kNaN;
  bad = job;
  bad.delta = bad_delta;
  EXPECT_THAT(bad.Run().message(), HasSubstr("additive.delta[4] 'j4'"));

  // A delta scale of 0 cannot be undone by a negative weight.
  bad_delta = delta;
  bad_delta[3].scale = Eigen::Vector3f(1, 0, 1);
  bad = job;
  bad.delta = bad_delta;
  EXPECT_TRUE(bad.Run().ok());
  bad.weight = -1.0f;
  EXPECT_THAT(bad.Run().message(), HasSubstr("additive.delta[3] 'j3'"));

  // A base scale of 0 maps to no factor.
  LocalPose zero_base = base_;
  zero_base[8].scale.z() = 0.0f;
  LocalPose d(kJoints);
  MakeAdditiveJob make{.skeleton = &skeleton_,
                       .base = zero_base,
                       .additive = additive_,
                       .delta = absl::MakeSpan(d)};
  EXPECT_THAT(make.Run().message(), HasSubstr("make_additive.base[8] 'j8'"));
}

TEST(AdditiveBaseTest, SampleAdditiveBase_IsTheClipSampledAtTheTime) {
  const Skeleton skeleton = TreeSkeleton(2);
  Clip clip;
  clip.name = "lean";
  clip.duration = 1.0f;
  clip.tracks.resize(2);
  clip.tracks[1].rotation.times = {0.0f, 1.0f};
  clip.tracks[1].rotation.values = {
      Eigen::Quaternionf(Eigen::AngleAxisf(0.1f, Eigen::Vector3f::UnitX())),
      Eigen::Quaternionf(Eigen::AngleAxisf(0.9f, Eigen::Vector3f::UnitX()))};
  absl::StatusOr<LocalPose> base = SampleAdditiveBase(skeleton, clip);
  ASSERT_TRUE(base.ok()) << base.status();
  EXPECT_TRUE(SameBits((*base)[0], skeleton.rest_pose()[0]));
  EXPECT_EQ((*base)[1].rotation.coeffs(),
            clip.tracks[1].rotation.values[0].coeffs());
  EXPECT_EQ((*base)[1].translation, skeleton.rest_pose()[1].translation);
  // Past the end: clamped to the last key.
  base = SampleAdditiveBase(skeleton, clip, 5.0f);
  ASSERT_TRUE(base.ok());
  EXPECT_EQ((*base)[1].rotation.coeffs(),
            clip.tracks[1].rotation.values[1].coeffs());
  clip.tracks.pop_back();
  EXPECT_FALSE(SampleAdditiveBase(skeleton, clip).ok());
}

}  // namespace additive_job_test
}  // namespace posewire
