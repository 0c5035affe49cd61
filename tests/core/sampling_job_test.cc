// SamplingJob: key times return keys bit for bit; linear, slerp, step and
// cubic-spline interpolation against closed forms computed in the test
// (rotations about one axis, where nlerp's and slerp's angles are known;
// cubic polynomials, which Hermite splines reproduce exactly); looping and
// clamping; the cursor as a pure hint; validation; and the CMU walk clip
// sampled at its frame times against the BVH text parsed independently here.

#include "solver_core/pose_ops/sampling_job.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "solver_core/io/bvh_reader.h"
#include "solver_core/model/clip.h"
#include "solver_core/model/pose.h"
#include "tests/core/pose_ops_test_util.h"

namespace posewire {
namespace sampling_job_test {

using ::posewire::testing::AngleBetween;
using ::posewire::testing::Rng;
using ::posewire::testing::SameBits;
using ::posewire::testing::TreeSkeleton;
using ::testing::HasSubstr;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr double kPi = 3.14159265358979323846;

Eigen::Quaternionf AboutZ(float angle) {
  return Eigen::Quaternionf(Eigen::AngleAxisf(angle, Eigen::Vector3f::UnitZ()));
}

float AngleAboutZ(const Eigen::Quaternionf& q) {
  // Rotation about +z by angle a is (w, z) = (cos a/2, sin a/2) up to sign.
  const float sign = q.w() < 0.0f ? -1.0f : 1.0f;
  return 2.0f * std::atan2(sign * q.z(), sign * q.w());
}

template <typename T>
Track<T> MakeTrack(std::vector<float> times, std::vector<T> values,
                   Interpolation interpolation) {
  Track<T> track;
  track.times = std::move(times);
  track.values = std::move(values);
  track.interpolation = interpolation;
  return track;
}

// A 3-joint clip of duration 2: joint 0 has linear translation and rotation
// and step scale; joint 1 has no tracks; joint 2 has only a rotation track.
Clip MixedClip() {
  Clip clip;
  clip.name = "mixed";
  clip.duration = 2.0f;
  clip.tracks.resize(3);
  clip.tracks[0].translation = MakeTrack<Eigen::Vector3f>(
      {0.0f, 0.5f, 1.25f},
      {Eigen::Vector3f(0, 0, 0), Eigen::Vector3f(1, 2, 3),
       Eigen::Vector3f(-1, 0.5f, 4)},
      Interpolation::kLinear);
  clip.tracks[0].rotation = MakeTrack<Eigen::Quaternionf>(
      {0.0f, 1.0f}, {AboutZ(0.2f), AboutZ(2.2f)}, Interpolation::kLinear);
  clip.tracks[0].scale = MakeTrack<Eigen::Vector3f>(
      {0.25f, 1.0f}, {Eigen::Vector3f(1, 1, 1), Eigen::Vector3f(2, 3, 4)},
      Interpolation::kStep);
  clip.tracks[2].rotation = MakeTrack<Eigen::Quaternionf>(
      {0.5f, 1.5f}, {AboutZ(-1.0f), AboutZ(1.0f)}, Interpolation::kLinear);
  return clip;
}

class SamplingTest : public ::testing::Test {
 protected:
  SamplingTest() : skeleton_(TreeSkeleton(3)), clip_(MixedClip()) {
    EXPECT_TRUE(clip_.Validate(skeleton_).ok());
  }

  LocalPose Sample(float time, PlaybackMode mode = PlaybackMode::kClamp,
                   RotationInterpolation ri = RotationInterpolation::kNlerp,
                   SamplingCursor* cursor = nullptr) {
    LocalPose pose(skeleton_.num_joints());
    SamplingJob job;
    job.skeleton = &skeleton_;
    job.clip = &clip_;
    job.time = time;
    job.mode = mode;
    job.rotation_interpolation = ri;
    job.cursor = cursor;
    job.output = absl::MakeSpan(pose);
    absl::Status s = job.Run();
    EXPECT_TRUE(s.ok()) << s;
    return pose;
  }

  Skeleton skeleton_;
  Clip clip_;
};

TEST_F(SamplingTest, SamplingJob_KeyTimesReturnKeysBitForBit) {
  for (RotationInterpolation ri :
       {RotationInterpolation::kNlerp, RotationInterpolation::kSlerp}) {
    const Track<Eigen::Vector3f>& tr = clip_.tracks[0].translation;
    for (size_t k = 0; k < tr.times.size(); ++k) {
      const LocalPose pose = Sample(tr.times[k], PlaybackMode::kClamp, ri);
      EXPECT_EQ(pose[0].translation, tr.values[k]) << "key " << k;
    }
    const Track<Eigen::Quaternionf>& rt = clip_.tracks[0].rotation;
    for (size_t k = 0; k < rt.times.size(); ++k) {
      const LocalPose pose = Sample(rt.times[k], PlaybackMode::kClamp, ri);
      EXPECT_EQ(pose[0].rotation.coeffs(), rt.values[k].coeffs())
          << "key " << k;
    }
    const Track<Eigen::Vector3f>& st = clip_.tracks[0].scale;
    for (size_t k = 0; k < st.times.size(); ++k) {
      const LocalPose pose = Sample(st.times[k], PlaybackMode::kClamp, ri);
      EXPECT_EQ(pose[0].scale, st.values[k]) << "key " << k;
    }
  }
}

TEST_F(SamplingTest, SamplingJob_LinearTranslationMatchesLerp) {
  // Between keys 1 (t = 0.5) and 2 (t = 1.25).
  for (float t : {0.6f, 0.875f, 1.2f}) {
    const double s = (t - 0.5) / 0.75;
    const Eigen::Vector3d a(1, 2, 3), b(-1, 0.5, 4);
    const Eigen::Vector3d expected = a * (1 - s) + b * s;
    const LocalPose pose = Sample(t);
    EXPECT_TRUE(pose[0].translation.cast<double>().isApprox(expected, 1e-6))
        << "t " << t << ": " << pose[0].translation.transpose();
    // The documented float formula, a + (b - a) * s, bit for bit (the SSE
    // path must not differ from it).
    const float sf = (t - 0.5f) / (1.25f - 0.5f);
    const Eigen::Vector3f af(1, 2, 3), bf(-1, 0.5f, 4);
    EXPECT_EQ(pose[0].translation, Eigen::Vector3f(af + (bf - af) * sf));
  }
}

TEST_F(SamplingTest, SamplingJob_NlerpAndSlerpFollowTheirClosedForms) {
  // Keys 0.2 and 2.2 rad about z, 2 rad apart, so their quaternions are
  // phi = 1 rad apart on the 4-sphere: slerp's angle is linear in s;
  // nlerp's is 2 atan2(s sin(phi), 1 - s + s cos(phi)).
  const double theta = 2.0;
  const double phi = theta / 2;
  for (float t : {0.1f, 0.3f, 0.5f, 0.9f}) {
    const double s = t;
    const LocalPose slerp =
        Sample(t, PlaybackMode::kClamp, RotationInterpolation::kSlerp);
    EXPECT_NEAR(AngleAboutZ(slerp[0].rotation), 0.2 + s * theta, 1e-5)
        << "t " << t;
    const LocalPose nlerp = Sample(t);
    const double nlerp_angle =
        2 * std::atan2(s * std::sin(phi), 1 - s + s * std::cos(phi));
    EXPECT_NEAR(AngleAboutZ(nlerp[0].rotation), 0.2 + nlerp_angle, 1e-5)
        << "t " << t;
    EXPECT_NEAR(nlerp[0].rotation.norm(), 1.0f, 1e-6f);
  }
}

TEST_F(SamplingTest, SamplingJob_RotationTakesTheShortestPath) {
  // Keys 10 degrees apart, the second stored with the opposite sign: the
  // long way round would pass through 180 degrees.
  Clip clip = MixedClip();
  const Eigen::Quaternionf a = AboutZ(0.1f);
  const Eigen::Quaternionf b(-AboutZ(0.1f + 0.1745f).coeffs());
  clip.tracks[0].rotation = MakeTrack<Eigen::Quaternionf>(
      {0.0f, 1.0f}, {a, b}, Interpolation::kLinear);
  for (RotationInterpolation ri :
       {RotationInterpolation::kNlerp, RotationInterpolation::kSlerp}) {
    LocalPose pose(3);
    SamplingJob job{.skeleton = &skeleton_,
                    .clip = &clip,
                    .time = 0.5f,
                    .rotation_interpolation = ri,
                    .output = absl::MakeSpan(pose)};
    ASSERT_TRUE(job.Run().ok());
    EXPECT_NEAR(AngleBetween(pose[0].rotation, a), 0.1745f / 2, 1e-4f);
    EXPECT_NEAR(AngleBetween(pose[0].rotation, b), 0.1745f / 2, 1e-4f);
  }
}

TEST_F(SamplingTest, SamplingJob_StepHoldsTheEarlierKey) {
  const Track<Eigen::Vector3f>& st = clip_.tracks[0].scale;
  EXPECT_EQ(Sample(0.3f)[0].scale, st.values[0]);
  EXPECT_EQ(Sample(0.999f)[0].scale, st.values[0]);
  EXPECT_EQ(Sample(1.0f)[0].scale, st.values[1]);
}

TEST_F(SamplingTest, SamplingJob_OutsideTheKeysHoldsTheEndKeys) {
  // Joint 2's rotation keys span [0.5, 1.5] in a clip of duration 2.
  const Track<Eigen::Quaternionf>& rt = clip_.tracks[2].rotation;
  EXPECT_EQ(Sample(0.1f)[2].rotation.coeffs(), rt.values[0].coeffs());
  EXPECT_EQ(Sample(1.9f)[2].rotation.coeffs(), rt.values[1].coeffs());
  // Joint 0's scale starts at 0.25.
  EXPECT_EQ(Sample(0.0f)[0].scale, clip_.tracks[0].scale.values[0]);
}

TEST_F(SamplingTest, SamplingJob_MissingTracksTakeTheRestPose) {
  const LocalPose pose = Sample(0.7f);
  EXPECT_TRUE(SameBits(pose[1], skeleton_.rest_pose()[1]));
  EXPECT_EQ(pose[2].translation, skeleton_.rest_pose()[2].translation);
  EXPECT_EQ(pose[2].scale, skeleton_.rest_pose()[2].scale);
}

TEST_F(SamplingTest, SamplingJob_LoopingWrapsByTheDuration) {
  // Times chosen so that t + k * duration is exact in float.
  const LocalPose ref = Sample(0.375f, PlaybackMode::kLoop);
  for (float t : {2.375f, 4.375f, -1.625f, -3.625f, 200.375f}) {
    const LocalPose pose = Sample(t, PlaybackMode::kLoop);
    for (int j = 0; j < 3; ++j) {
      EXPECT_TRUE(SameBits(pose[j], ref[j])) << "t " << t << " joint " << j;
    }
  }
  // The end of a loop is its start.
  const LocalPose start = Sample(0.0f, PlaybackMode::kLoop);
  const LocalPose end = Sample(2.0f, PlaybackMode::kLoop);
  for (int j = 0; j < 3; ++j) EXPECT_TRUE(SameBits(start[j], end[j]));
}

TEST_F(SamplingTest, SamplingJob_ClampHoldsTheEnds) {
  const LocalPose before = Sample(-5.0f);
  const LocalPose first = Sample(0.0f);
  const LocalPose after = Sample(7.0f);
  const LocalPose last = Sample(2.0f);
  for (int j = 0; j < 3; ++j) {
    EXPECT_TRUE(SameBits(before[j], first[j]));
    EXPECT_TRUE(SameBits(after[j], last[j]));
  }
  EXPECT_EQ(last[0].translation, Eigen::Vector3f(-1, 0.5f, 4));
}

TEST(PlaybackTimeTest, PlaybackTime_WrapsAndClamps) {
  EXPECT_EQ(PlaybackTime(2.5f, 2.0f, PlaybackMode::kLoop), 0.5f);
  EXPECT_EQ(PlaybackTime(-0.5f, 2.0f, PlaybackMode::kLoop), 1.5f);
  EXPECT_EQ(PlaybackTime(4.0f, 2.0f, PlaybackMode::kLoop), 0.0f);
  EXPECT_EQ(PlaybackTime(-4.0f, 2.0f, PlaybackMode::kLoop), 0.0f);
  // -tiny wraps to just below the end, which rounds to the end: 0 instead.
  EXPECT_EQ(PlaybackTime(-1e-12f, 2.0f, PlaybackMode::kLoop), 0.0f);
  EXPECT_FALSE(std::signbit(PlaybackTime(-0.0f, 2.0f, PlaybackMode::kLoop)));
  EXPECT_EQ(PlaybackTime(2.5f, 2.0f, PlaybackMode::kClamp), 2.0f);
  EXPECT_EQ(PlaybackTime(-2.5f, 2.0f, PlaybackMode::kClamp), 0.0f);
  EXPECT_EQ(PlaybackTime(7.0f, 0.0f, PlaybackMode::kLoop), 0.0f);
}

TEST(SamplingCubicTest, SamplingJob_CubicSplineReproducesACubicPolynomial) {
  // Hermite interpolation with exact derivatives as tangents reproduces any
  // cubic: p(t) = c0 + c1 t + c2 t^2 + c3 t^3, per component.
  const Skeleton skeleton = TreeSkeleton(1);
  const Eigen::Vector3d c0(1, -2, 0.5), c1(0.3, 2, -1), c2(-1, 0.5, 2),
      c3(0.7, -0.4, 1.5);
  auto p = [&](double t) { return c0 + c1 * t + c2 * t * t + c3 * t * t * t; };
  auto dp = [&](double t) { return c1 + c2 * 2 * t + c3 * 3 * t * t; };
  const std::vector<float> times = {0.0f, 0.4f, 1.0f, 1.75f};
  Clip clip;
  clip.name = "cubic";
  clip.duration = 1.75f;
  clip.tracks.resize(1);
  Track<Eigen::Vector3f>& tr = clip.tracks[0].translation;
  tr.interpolation = Interpolation::kCubicSpline;
  tr.times = times;
  for (float t : times) {
    const Eigen::Vector3f d = dp(t).cast<float>();
    tr.values.push_back(d);  // in-tangent
    tr.values.push_back(p(t).cast<float>());
    tr.values.push_back(d);  // out-tangent
  }
  ASSERT_TRUE(clip.Validate(skeleton).ok());
  LocalPose pose(1);
  SamplingJob job{
      .skeleton = &skeleton, .clip = &clip, .output = absl::MakeSpan(pose)};
  for (float t : {0.1f, 0.2f, 0.55f, 0.9f, 1.3f, 1.7f}) {
    job.time = t;
    ASSERT_TRUE(job.Run().ok());
    EXPECT_TRUE(pose[0].translation.cast<double>().isApprox(p(t), 1e-5))
        << "t " << t << ": " << pose[0].translation.transpose() << " vs "
        << p(t).transpose();
  }
}

TEST(SamplingCubicTest, SamplingJob_CubicRotationWithFlatTangentsEasesInOut) {
  // Zero tangents leave h01(s) = 3s^2 - 2s^3 as the blend factor between
  // the keys, then normalisation: the nlerp angle at that factor (the keys'
  // quaternions are half the rotation angle apart on the 4-sphere).
  const Skeleton skeleton = TreeSkeleton(1);
  const Eigen::Quaternionf zero(0, 0, 0, 0);
  Clip clip;
  clip.name = "cubic_rotation";
  clip.duration = 1.0f;
  clip.tracks.resize(1);
  Track<Eigen::Quaternionf>& rt = clip.tracks[0].rotation;
  rt.interpolation = Interpolation::kCubicSpline;
  rt.times = {0.0f, 1.0f};
  rt.values = {zero, AboutZ(0.0f), zero, zero, AboutZ(1.5f), zero};
  ASSERT_TRUE(clip.Validate(skeleton).ok());
  LocalPose pose(1);
  SamplingJob job{
      .skeleton = &skeleton, .clip = &clip, .output = absl::MakeSpan(pose)};
  const double theta = 1.5;
  for (float t : {0.2f, 0.5f, 0.8f}) {
    job.time = t;
    ASSERT_TRUE(job.Run().ok());
    const double h = 3.0 * t * t - 2.0 * t * t * t;
    const double phi = theta / 2;
    const double expected =
        2 * std::atan2(h * std::sin(phi), 1 - h + h * std::cos(phi));
    EXPECT_NEAR(AngleAboutZ(pose[0].rotation), expected, 1e-5) << "t " << t;
  }
}

TEST_F(SamplingTest, SamplingJob_CursorIsOnlyAHint) {
  // Forward, backward and jumping playback with a cursor, with a corrupted
  // cursor and without one: the same bits every time.
  std::vector<float> times;
  for (int i = 0; i < 300; ++i) times.push_back(i * (1.0f / 60.0f));
  for (int i = 0; i < 100; ++i) times.push_back(3.0f - i * 0.013f);
  Rng rng(5);
  for (int i = 0; i < 100; ++i) times.push_back(rng.Uniform(-3, 5));
  SamplingCursor cursor;
  for (float t : times) {
    const LocalPose with =
        Sample(t, PlaybackMode::kLoop, RotationInterpolation::kNlerp, &cursor);
    const LocalPose without = Sample(t, PlaybackMode::kLoop);
    SamplingCursor garbage{
        {-7, 1 << 30, 2, 99, -1, 3, 1, 0, std::numeric_limits<int32_t>::min()}};
    const LocalPose corrupted =
        Sample(t, PlaybackMode::kLoop, RotationInterpolation::kNlerp, &garbage);
    for (int j = 0; j < 3; ++j) {
      ASSERT_TRUE(SameBits(with[j], without[j])) << "t " << t;
      ASSERT_TRUE(SameBits(corrupted[j], without[j])) << "t " << t;
    }
  }
}

TEST_F(SamplingTest, SamplingJob_CursorRemembersTheInterval) {
  SamplingCursor cursor;
  Sample(0.7f, PlaybackMode::kClamp, RotationInterpolation::kNlerp, &cursor);
  ASSERT_EQ(cursor.keys.size(), 9u);
  EXPECT_EQ(cursor.keys[0], 1);  // translation keys 0, 0.5, 1.25
  EXPECT_EQ(cursor.keys[1], 0);  // rotation keys 0, 1
  EXPECT_EQ(cursor.keys[2], 0);  // scale keys 0.25, 1
  EXPECT_EQ(cursor.keys[7], 0);  // joint 2 rotation keys 0.5, 1.5
}

TEST_F(SamplingTest, SamplingJob_ZeroLengthClipAlwaysSamplesItsKeys) {
  Clip clip;
  clip.name = "pose";
  clip.duration = 0.0f;
  clip.tracks.resize(3);
  clip.tracks[1].translation = MakeTrack<Eigen::Vector3f>(
      {0.0f}, {Eigen::Vector3f(4, 5, 6)}, Interpolation::kLinear);
  LocalPose pose(3);
  for (float t : {-1.0f, 0.0f, 3.0f}) {
    for (PlaybackMode mode : {PlaybackMode::kLoop, PlaybackMode::kClamp}) {
      SamplingJob job{.skeleton = &skeleton_,
                      .clip = &clip,
                      .time = t,
                      .mode = mode,
                      .output = absl::MakeSpan(pose)};
      ASSERT_TRUE(job.Run().ok());
      EXPECT_EQ(pose[1].translation, Eigen::Vector3f(4, 5, 6));
    }
  }
}

TEST_F(SamplingTest, SamplingJob_RejectsBadInputsNamingTheField) {
  LocalPose pose(3);
  SamplingJob job{
      .skeleton = &skeleton_, .clip = &clip_, .output = absl::MakeSpan(pose)};
  ASSERT_TRUE(job.Validate().ok());

  SamplingJob bad = job;
  bad.time = kNaN;
  EXPECT_THAT(bad.Run().message(), HasSubstr("sampling.time"));
  bad = job;
  bad.time = std::numeric_limits<float>::infinity();
  EXPECT_EQ(bad.Run().code(), absl::StatusCode::kInvalidArgument);

  bad = job;
  bad.skeleton = nullptr;
  EXPECT_THAT(bad.Run().message(), HasSubstr("sampling.skeleton"));
  bad = job;
  bad.clip = nullptr;
  EXPECT_THAT(bad.Run().message(), HasSubstr("sampling.clip"));

  LocalPose short_pose(2);
  bad = job;
  bad.output = absl::MakeSpan(short_pose);
  EXPECT_THAT(bad.Run().message(), HasSubstr("sampling.output"));

  SamplingCursor cursor{{0, 0, 0}};
  bad = job;
  bad.cursor = &cursor;
  EXPECT_THAT(bad.Run().message(), HasSubstr("sampling.cursor"));

  bad = job;
  bad.mode = static_cast<PlaybackMode>(7);
  EXPECT_THAT(bad.Run().message(), HasSubstr("sampling.mode"));
}

TEST_F(SamplingTest, SamplingJob_RejectsInvalidClipDataNamingTheJoint) {
  Clip clip = MixedClip();
  clip.tracks[2].rotation.values[1] = Eigen::Quaternionf(kNaN, 0, 0, 1);
  LocalPose pose(3);
  SamplingJob job{
      .skeleton = &skeleton_, .clip = &clip, .output = absl::MakeSpan(pose)};
  const absl::Status s = job.Run();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("joint 2 'j2'"));
  EXPECT_THAT(s.message(), HasSubstr("rotation"));
}

TEST_F(SamplingTest, SamplingJob_ValidatedClipStillGetsItsShapeChecked) {
  // clip_validated skips the per-key checks, never the bounds.
  Clip clip = MixedClip();
  clip.tracks[0].translation.values.pop_back();
  LocalPose pose(3);
  SamplingJob job{.skeleton = &skeleton_,
                  .clip = &clip,
                  .clip_validated = true,
                  .output = absl::MakeSpan(pose)};
  absl::Status s = job.Run();
  EXPECT_THAT(s.message(), HasSubstr("joint 0 'j0' translation track"));

  clip = MixedClip();
  clip.tracks.pop_back();
  s = job.Run();
  EXPECT_THAT(s.message(), HasSubstr("2 joint tracks for a skeleton of 3"));

  clip = MixedClip();
  clip.tracks[0].scale.interpolation = Interpolation::kCubicSpline;
  s = job.Run();
  EXPECT_THAT(s.message(), HasSubstr("joint 0 'j0' scale track"));
}

TEST_F(SamplingTest, SamplingJob_UnsortedKeysInAClipClaimedValidStayInBounds) {
  // A caller that wrongly sets clip_validated gets garbage values, but
  // sampling must not read outside the track (checked under ASan in CI).
  Clip clip = MixedClip();
  clip.tracks[0].translation.times = {1.0f, 0.1f, 0.5f};
  LocalPose pose(3);
  SamplingJob job{.skeleton = &skeleton_,
                  .clip = &clip,
                  .clip_validated = true,
                  .output = absl::MakeSpan(pose)};
  for (float t : {0.05f, 0.3f, 0.7f, 1.1f}) {
    job.time = t;
    EXPECT_TRUE(job.Run().ok());
  }
  // Without the claim, the clip is rejected.
  job.clip_validated = false;
  EXPECT_EQ(job.Run().code(), absl::StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------
// Real data: the CMU walk, against its BVH text parsed here.

struct BvhText {
  std::vector<std::string> joints;
  std::vector<Eigen::Vector3f> offsets;
  std::vector<std::vector<std::string>> channels;
  int frames = 0;
  double frame_time = 0;
  std::vector<std::vector<double>> motion;  // [frame][channel]
};

// A minimal reader for well-formed BVH files: enough to cross-check.
BvhText ParseBvhText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  BvhText bvh;
  std::string token;
  std::vector<int> stack;  // joint per open brace, -1 for End Site
  int pending = -1;
  bool pending_end_site = false;
  size_t total_channels = 0;
  while (text >> token) {
    if (token == "ROOT" || token == "JOINT") {
      text >> token;
      bvh.joints.push_back(token);
      bvh.offsets.push_back(Eigen::Vector3f::Zero());
      bvh.channels.emplace_back();
      pending = static_cast<int>(bvh.joints.size()) - 1;
      pending_end_site = false;
    } else if (token == "End") {
      text >> token;  // Site
      pending_end_site = true;
    } else if (token == "{") {
      stack.push_back(pending_end_site ? -1 : pending);
      pending_end_site = false;
    } else if (token == "}") {
      stack.pop_back();
    } else if (token == "OFFSET") {
      float x, y, z;
      text >> x >> y >> z;
      if (stack.back() >= 0) bvh.offsets[stack.back()] = {x, y, z};
    } else if (token == "CHANNELS") {
      int n;
      text >> n;
      for (int i = 0; i < n; ++i) {
        text >> token;
        bvh.channels[stack.back()].push_back(token);
      }
      total_channels += n;
    } else if (token == "MOTION") {
      text >> token >> bvh.frames;               // Frames:
      text >> token >> token >> bvh.frame_time;  // Frame Time:
      bvh.motion.assign(bvh.frames, std::vector<double>(total_channels));
      for (auto& frame : bvh.motion) {
        for (double& v : frame) text >> v;
      }
      break;
    }
  }
  return bvh;
}

TEST(SamplingRealDataTest, SamplingJob_CmuWalkAtFrameTimesReproducesTheBvh) {
  const std::string path =
      std::string(POSEWIRE_TEST_DATA_DIR) + "/cmu_131_01_walk.bvh";
  absl::StatusOr<ImportedAsset> asset = ReadBvhFile(path);
  ASSERT_TRUE(asset.ok()) << asset.status();
  const Skeleton& skeleton = asset->skeleton;
  const Clip& clip = asset->clips.at(0);
  const BvhText bvh = ParseBvhText(path);
  ASSERT_EQ(static_cast<int>(bvh.joints.size()), skeleton.num_joints());
  ASSERT_GT(bvh.frames, 100);

  LocalPose pose(skeleton.num_joints());
  SamplingCursor cursor;
  SamplingJob job{.skeleton = &skeleton,
                  .clip = &clip,
                  .mode = PlaybackMode::kClamp,
                  .cursor = &cursor,
                  .output = absl::MakeSpan(pose)};
  float worst_angle = 0.0f;
  float worst_offset = 0.0f;
  for (int f = 0; f < bvh.frames; ++f) {
    job.time = static_cast<float>(bvh.frame_time * f);
    ASSERT_TRUE(job.Run().ok()) << "frame " << f;
    size_t c = 0;
    for (int i = 0; i < skeleton.num_joints(); ++i) {
      const int j = skeleton.FindJoint(bvh.joints[i]);
      ASSERT_GE(j, 0) << bvh.joints[i];
      Eigen::Vector3f translation = bvh.offsets[i];
      Eigen::Quaterniond rotation = Eigen::Quaterniond::Identity();
      for (const std::string& ch : bvh.channels[i]) {
        const double v = bvh.motion[f][c++];
        if (ch == "Xposition") translation.x() = static_cast<float>(v);
        if (ch == "Yposition") translation.y() = static_cast<float>(v);
        if (ch == "Zposition") translation.z() = static_cast<float>(v);
        const double rad = v * kPi / 180.0;
        if (ch == "Xrotation") {
          rotation =
              rotation * Eigen::AngleAxisd(rad, Eigen::Vector3d::UnitX());
        }
        if (ch == "Yrotation") {
          rotation =
              rotation * Eigen::AngleAxisd(rad, Eigen::Vector3d::UnitY());
        }
        if (ch == "Zrotation") {
          rotation =
              rotation * Eigen::AngleAxisd(rad, Eigen::Vector3d::UnitZ());
        }
      }
      worst_angle = std::max(
          worst_angle, AngleBetween(pose[j].rotation, rotation.cast<float>()));
      worst_offset =
          std::max(worst_offset, (pose[j].translation - translation).norm());
      EXPECT_EQ(pose[j].scale, Eigen::Vector3f::Ones());
    }
  }
  EXPECT_LT(worst_angle, 1e-4f);
  EXPECT_LT(worst_offset, 1e-4f);
}

}  // namespace sampling_job_test
}  // namespace posewire
