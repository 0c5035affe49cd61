// Clip::Validate: a valid clip with step, linear and cubic-spline tracks, and
// every error path with a message naming the clip, the joint (index and
// name) and the track.

#include "solver_core/model/clip.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <initializer_list>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"

namespace posewire {
namespace clip_test {

using ::testing::HasSubstr;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

Skeleton TwoJointSkeleton() {
  SkeletonDesc desc;
  desc.joint_names = {"Hips", "Spine"};
  desc.parents = {kNoParent, 0};
  desc.rest_pose.assign(2, Transform::Identity());
  absl::StatusOr<Skeleton> s = Skeleton::Create(std::move(desc));
  EXPECT_TRUE(s.ok()) << s.status();
  return *std::move(s);
}

Eigen::Quaternionf Turn(float angle) {
  return Eigen::Quaternionf(
      Eigen::AngleAxisf(angle, Eigen::Vector3f(1, 2, 2).normalized()));
}

// Hips: linear translation (3 keys), cubic-spline rotation (2 keys, with
// non-unit tangents as glTF allows), step scale (1 key). Spine: a linear
// rotation only; its other tracks are empty (rest pose).
Clip ValidClip() {
  Clip clip;
  clip.name = "walk";
  clip.duration = 2.0f;
  clip.tracks.resize(2);
  JointTracks& hips = clip.tracks[0];
  hips.translation.interpolation = Interpolation::kLinear;
  hips.translation.times = {0.0f, 1.0f, 2.0f};
  hips.translation.values = {Eigen::Vector3f(0, 1, 0), Eigen::Vector3f(1, 1, 0),
                             Eigen::Vector3f(2, 1, 0)};
  hips.rotation.interpolation = Interpolation::kCubicSpline;
  hips.rotation.times = {0.0f, 2.0f};
  hips.rotation.values = {Eigen::Quaternionf(0, 0, 0, 0),
                          Turn(0.0f),
                          Eigen::Quaternionf(0.3f, 0, 0.1f, 0),
                          Eigen::Quaternionf(2, 1, 0, 0),
                          Turn(1.0f),
                          Eigen::Quaternionf(0, 0, 0, 0)};
  hips.scale.interpolation = Interpolation::kStep;
  hips.scale.times = {0.5f};
  hips.scale.values = {Eigen::Vector3f(1, 1, 1)};
  JointTracks& spine = clip.tracks[1];
  spine.rotation.interpolation = Interpolation::kLinear;
  spine.rotation.times = {0.0f, 0.75f, 2.0f};
  spine.rotation.values = {Turn(0.0f), Turn(0.5f), Turn(-0.5f)};
  return clip;
}

void ExpectInvalid(const absl::Status& status,
                   std::initializer_list<std::string> fragments) {
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  const std::string message(status.message());
  for (const std::string& fragment : fragments) {
    EXPECT_THAT(message, HasSubstr(fragment));
  }
}

// The prefix every track error carries.
constexpr char kHipsTranslation[] =
    "clip 'walk' joint 0 'Hips' translation track";
constexpr char kHipsRotation[] = "clip 'walk' joint 0 'Hips' rotation track";
constexpr char kHipsScale[] = "clip 'walk' joint 0 'Hips' scale track";
constexpr char kSpineRotation[] = "clip 'walk' joint 1 'Spine' rotation track";

TEST(Clip, ValidClipWithStepLinearAndCubicTracksIsAccepted) {
  const Skeleton skeleton = TwoJointSkeleton();
  const absl::Status s = ValidClip().Validate(skeleton);
  EXPECT_TRUE(s.ok()) << s;
}

TEST(Clip, ClipWithOnlyEmptyTracksIsAccepted) {
  const Skeleton skeleton = TwoJointSkeleton();
  Clip clip;
  clip.name = "still";
  clip.tracks.resize(2);
  EXPECT_TRUE(clip.Validate(skeleton).ok());
}

TEST(Clip, KeysAtBothEndsOfDurationAreAccepted) {
  const Skeleton skeleton = TwoJointSkeleton();
  Clip clip = ValidClip();
  clip.duration = 0.0f;
  for (JointTracks& jt : clip.tracks) jt = JointTracks();
  clip.tracks[0].translation.times = {0.0f};
  clip.tracks[0].translation.values = {Eigen::Vector3f::Zero()};
  EXPECT_TRUE(clip.Validate(skeleton).ok());
  clip.duration = 1.0f;
  clip.tracks[0].translation.times = {0.0f, 1.0f};
  clip.tracks[0].translation.values = {Eigen::Vector3f::Zero(),
                                       Eigen::Vector3f::Ones()};
  EXPECT_TRUE(clip.Validate(skeleton).ok());
}

TEST(Clip, KeyRotationJustWithinUnitToleranceIsAccepted) {
  const Skeleton skeleton = TwoJointSkeleton();
  Clip clip = ValidClip();
  clip.tracks[1].rotation.values[1].coeffs() *=
      1.0f + 0.5f * kUnitQuaternionTolerance;
  EXPECT_TRUE(clip.Validate(skeleton).ok());
}

TEST(Clip, NonFiniteOrNegativeDurationIsRejected) {
  const Skeleton skeleton = TwoJointSkeleton();
  for (const float bad : {kNaN, kInf, -kInf, -1.0f, -1e-30f}) {
    Clip clip = ValidClip();
    clip.duration = bad;
    ExpectInvalid(clip.Validate(skeleton),
                  {"clip 'walk'", "duration", "finite and non-negative"});
  }
}

TEST(Clip, TrackCountMismatchIsRejected) {
  const Skeleton skeleton = TwoJointSkeleton();
  Clip clip = ValidClip();
  clip.tracks.pop_back();
  ExpectInvalid(clip.Validate(skeleton),
                {"clip 'walk'", "1 joint tracks", "skeleton of 2 joints"});
  clip = ValidClip();
  clip.tracks.emplace_back();
  ExpectInvalid(clip.Validate(skeleton),
                {"clip 'walk'", "3 joint tracks", "skeleton of 2 joints"});
  clip.tracks.clear();
  ExpectInvalid(clip.Validate(skeleton), {"clip 'walk'", "0 joint tracks"});
}

TEST(Clip, LinearValueCountMismatchIsRejected) {
  const Skeleton skeleton = TwoJointSkeleton();
  Clip clip = ValidClip();
  clip.tracks[0].translation.values.pop_back();
  ExpectInvalid(
      clip.Validate(skeleton),
      {kHipsTranslation, "2 values for 3 linear keys", "(expected 3)"});
}

TEST(Clip, StepValueCountMismatchIsRejected) {
  const Skeleton skeleton = TwoJointSkeleton();
  Clip clip = ValidClip();
  clip.tracks[0].scale.values.push_back(Eigen::Vector3f::Ones());
  ExpectInvalid(clip.Validate(skeleton),
                {kHipsScale, "2 values for 1 step keys", "(expected 1)"});
}

TEST(Clip, CubicSplineNeedsThreeValuesPerKey) {
  const Skeleton skeleton = TwoJointSkeleton();
  Clip clip = ValidClip();
  // One value per key, as a linear track would have: wrong for cubic.
  clip.tracks[0].rotation.values = {Turn(0.0f), Turn(1.0f)};
  ExpectInvalid(
      clip.Validate(skeleton),
      {kHipsRotation, "2 values for 2 cubic-spline keys", "(expected 6)"});
  clip = ValidClip();
  clip.tracks[0].rotation.values.pop_back();
  ExpectInvalid(clip.Validate(skeleton),
                {kHipsRotation, "5 values", "(expected 6)"});
  // A linear track with cubic-spline value layout is also wrong.
  clip = ValidClip();
  clip.tracks[0].rotation.interpolation = Interpolation::kLinear;
  ExpectInvalid(clip.Validate(skeleton),
                {kHipsRotation, "6 values for 2 linear keys", "(expected 2)"});
}

TEST(Clip, ValuesWithoutKeysAreRejected) {
  const Skeleton skeleton = TwoJointSkeleton();
  Clip clip = ValidClip();
  clip.tracks[1].translation.values = {Eigen::Vector3f::Zero()};
  ExpectInvalid(
      clip.Validate(skeleton),
      {"clip 'walk' joint 1 'Spine' translation track", "1 values for 0"});
}

TEST(Clip, UnknownInterpolationIsRejected) {
  const Skeleton skeleton = TwoJointSkeleton();
  Clip clip = ValidClip();
  clip.tracks[0].scale.interpolation = static_cast<Interpolation>(42);
  ExpectInvalid(clip.Validate(skeleton),
                {kHipsScale, "unknown interpolation 42"});
}

TEST(Clip, NegativeKeyTimeIsRejected) {
  const Skeleton skeleton = TwoJointSkeleton();
  Clip clip = ValidClip();
  clip.tracks[0].translation.times[0] = -0.25f;
  ExpectInvalid(clip.Validate(skeleton),
                {kHipsTranslation, "key 0 time -0.25", "outside [0, 2]"});
}

TEST(Clip, KeyTimeBeyondDurationIsRejected) {
  const Skeleton skeleton = TwoJointSkeleton();
  Clip clip = ValidClip();
  clip.tracks[1].rotation.times[2] = 2.5f;
  ExpectInvalid(clip.Validate(skeleton),
                {kSpineRotation, "key 2 time 2.5", "outside [0, 2]"});
}

TEST(Clip, NonFiniteKeyTimeIsRejected) {
  const Skeleton skeleton = TwoJointSkeleton();
  for (const float bad : {kNaN, kInf, -kInf}) {
    Clip clip = ValidClip();
    clip.tracks[0].scale.times[0] = bad;
    ExpectInvalid(clip.Validate(skeleton), {kHipsScale, "key 0 time"});
  }
}

TEST(Clip, EqualKeyTimesAreRejected) {
  const Skeleton skeleton = TwoJointSkeleton();
  Clip clip = ValidClip();
  clip.tracks[0].translation.times = {0.0f, 1.0f, 1.0f};
  ExpectInvalid(clip.Validate(skeleton), {kHipsTranslation, "key 2 time 1",
                                          "does not increase", "previous 1"});
}

TEST(Clip, DecreasingKeyTimesAreRejected) {
  const Skeleton skeleton = TwoJointSkeleton();
  Clip clip = ValidClip();
  clip.tracks[1].rotation.times = {0.0f, 1.5f, 0.5f};
  ExpectInvalid(clip.Validate(skeleton), {kSpineRotation, "key 2 time 0.5",
                                          "does not increase", "previous 1.5"});
}

TEST(Clip, NonFiniteValueIsRejectedInEveryTrackKind) {
  const Skeleton skeleton = TwoJointSkeleton();
  for (const float bad : {kNaN, kInf, -kInf}) {
    Clip clip = ValidClip();
    clip.tracks[0].translation.values[1].z() = bad;
    ExpectInvalid(clip.Validate(skeleton),
                  {kHipsTranslation, "value 1", "NaN or infinite"});

    clip = ValidClip();
    clip.tracks[1].rotation.values[2].w() = bad;
    ExpectInvalid(clip.Validate(skeleton),
                  {kSpineRotation, "value 2", "NaN or infinite"});

    clip = ValidClip();
    clip.tracks[0].scale.values[0].x() = bad;
    ExpectInvalid(clip.Validate(skeleton),
                  {kHipsScale, "value 0", "NaN or infinite"});

    // Tangents of cubic-spline tracks must be finite too.
    clip = ValidClip();
    clip.tracks[0].rotation.values[5].y() = bad;
    ExpectInvalid(clip.Validate(skeleton),
                  {kHipsRotation, "value 5", "NaN or infinite"});
  }
}

TEST(Clip, NonUnitKeyRotationIsRejected) {
  const Skeleton skeleton = TwoJointSkeleton();
  Clip clip = ValidClip();
  clip.tracks[1].rotation.values[1].coeffs() *= 1.01f;
  ExpectInvalid(clip.Validate(skeleton),
                {kSpineRotation, "key 1 rotation norm", "is not 1"});

  // In a cubic-spline track the value (middle of each triple) is checked...
  clip = ValidClip();
  clip.tracks[0].rotation.values[4].coeffs() *= 0.5f;
  ExpectInvalid(clip.Validate(skeleton),
                {kHipsRotation, "key 1 rotation norm 0.5"});

  // ...and so are step tracks.
  clip = ValidClip();
  clip.tracks[1].rotation.interpolation = Interpolation::kStep;
  clip.tracks[1].rotation.values[0] = Eigen::Quaternionf(0, 0, 0, 0);
  ExpectInvalid(clip.Validate(skeleton),
                {kSpineRotation, "key 0 rotation norm 0"});
}

TEST(Clip, NonUnitCubicTangentsAreAccepted) {
  const Skeleton skeleton = TwoJointSkeleton();
  Clip clip = ValidClip();
  clip.tracks[0].rotation.values[0] = Eigen::Quaternionf(5, 5, 5, 5);
  clip.tracks[0].rotation.values[2] = Eigen::Quaternionf(0, 0, 0, 0);
  EXPECT_TRUE(clip.Validate(skeleton).ok());
}

TEST(Clip, FirstErrorInJointThenTrackOrderIsReported) {
  const Skeleton skeleton = TwoJointSkeleton();
  Clip clip = ValidClip();
  clip.tracks[1].rotation.times[0] = -1.0f;
  clip.tracks[0].scale.times[0] = -1.0f;
  clip.tracks[0].rotation.values[1].coeffs() *= 2.0f;
  ExpectInvalid(clip.Validate(skeleton), {kHipsRotation});
  clip.tracks[0].translation.values[0].x() = kNaN;
  ExpectInvalid(clip.Validate(skeleton), {kHipsTranslation});
}

TEST(Clip, InterpolationNamesAreStable) {
  EXPECT_STREQ(InterpolationName(Interpolation::kStep), "step");
  EXPECT_STREQ(InterpolationName(Interpolation::kLinear), "linear");
  EXPECT_STREQ(InterpolationName(Interpolation::kCubicSpline), "cubic-spline");
  EXPECT_STREQ(InterpolationName(static_cast<Interpolation>(42)), "unknown");
}

TEST(Clip, KeyValueSkipsCubicTangents) {
  const Clip clip = ValidClip();
  const Track<Eigen::Quaternionf>& cubic = clip.tracks[0].rotation;
  EXPECT_EQ(cubic.key_value(0).coeffs(), Turn(0.0f).coeffs());
  EXPECT_EQ(cubic.key_value(1).coeffs(), Turn(1.0f).coeffs());
  const Track<Eigen::Vector3f>& linear = clip.tracks[0].translation;
  EXPECT_EQ(linear.key_value(2), Eigen::Vector3f(2, 1, 0));
  EXPECT_TRUE(clip.tracks[1].translation.empty());
  EXPECT_FALSE(linear.empty());
}

}  // namespace clip_test
}  // namespace posewire
