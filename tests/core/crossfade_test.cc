// Crossfade: Szauer 2020's CrossFadeTaskManager semantics as a state value and
// a step function. Poses are checked against SamplingJob output of the clips
// involved and against weighted averages computed in the test; the state
// against the documented rules (queue, promotion, dt edge cases); and, on
// real mocap, that a fade reaches its target and moves no joint further per
// frame than the two clips and the changing weight account for.

#include "solver_core/pose_ops/crossfade.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "solver_core/io/bvh_reader.h"
#include "solver_core/model/pose.h"
#include "solver_core/pose_ops/sampling_job.h"
#include "tests/core/pose_ops_test_util.h"

namespace posewire {
namespace crossfade_test {

using ::posewire::testing::AngleBetween;
using ::posewire::testing::SameBits;
using ::posewire::testing::TreeSkeleton;
using ::testing::HasSubstr;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kPi = 3.14159265f;
constexpr int kJoints = 5;

// Joint j's translation x goes linearly from x0 + j to x0 + j + slope *
// duration; its rotation about z from 0 to `turn`.
Clip RampClip(const std::string& name, float duration, float x0, float slope,
              float turn) {
  Clip clip;
  clip.name = name;
  clip.duration = duration;
  clip.tracks.resize(kJoints);
  for (int j = 0; j < kJoints; ++j) {
    Track<Eigen::Vector3f>& t = clip.tracks[j].translation;
    t.times = {0.0f, duration};
    t.values = {Eigen::Vector3f(x0 + j, 0, 0),
                Eigen::Vector3f(x0 + j + slope * duration, 0, 0)};
    Track<Eigen::Quaternionf>& r = clip.tracks[j].rotation;
    r.times = {0.0f, duration};
    r.values = {
        Eigen::Quaternionf::Identity(),
        Eigen::Quaternionf(Eigen::AngleAxisf(turn, Eigen::Vector3f::UnitZ()))};
  }
  return clip;
}

class CrossfadeTest : public ::testing::Test {
 protected:
  CrossfadeTest() : skeleton_(TreeSkeleton(kJoints)) {
    clips_.push_back(RampClip("a", 2.0f, 0.0f, 1.0f, 0.5f));
    clips_.push_back(RampClip("b", 4.0f, 10.0f, -1.0f, -0.5f));
    clips_.push_back(RampClip("c", 1.0f, -5.0f, 2.0f, 1.0f));
    for (const Clip& clip : clips_) clip_pointers_.push_back(&clip);
  }

  // One step; expects success.
  CrossfadeState Step(const CrossfadeState& state, float dt, LocalPose* pose) {
    pose->resize(kJoints);
    absl::StatusOr<CrossfadeState> next =
        StepCrossfade(skeleton_, clips_, state, dt, absl::MakeSpan(*pose));
    EXPECT_TRUE(next.ok()) << next.status();
    return next.ok() ? *next : state;
  }

  LocalPose Sample(int clip, float time, PlaybackMode mode) {
    LocalPose pose(kJoints);
    SamplingJob job{.skeleton = &skeleton_,
                    .clip = &clips_[clip],
                    .time = time,
                    .mode = mode,
                    .output = absl::MakeSpan(pose)};
    EXPECT_TRUE(job.Run().ok());
    return pose;
  }

  static CrossfadeState FadeOrDie(const CrossfadeState& s,
                                  const FadeRequest& r) {
    absl::StatusOr<CrossfadeState> next = FadeTo(s, r);
    EXPECT_TRUE(next.ok()) << next.status();
    return *next;
  }

  Skeleton skeleton_;
  std::vector<Clip> clips_;
  // CrossfadeJob::clips: clips_, which the fixture never resizes.
  std::vector<const Clip*> clip_pointers_;
};

TEST_F(CrossfadeTest, FadeTo_WithNothingPlayingStartsTheClipAtOnce) {
  const CrossfadeState s = FadeOrDie(
      CrossfadeState{}, {.clip = 1, .duration = 0.5f, .start_time = 0.25f});
  EXPECT_EQ(s.current.clip, 1);
  EXPECT_EQ(s.current.time, 0.25f);
  EXPECT_TRUE(s.fades.empty());
}

TEST_F(CrossfadeTest, FadeTo_TheLastQueuedOrThePlayingClipAddsNothing) {
  CrossfadeState s = Play(0);
  s = FadeOrDie(s, {.clip = 0});  // playing, empty queue: nothing
  EXPECT_TRUE(s.fades.empty());
  s = FadeOrDie(s, {.clip = 1});
  ASSERT_EQ(s.fades.size(), 1u);
  s = FadeOrDie(s, {.clip = 1});  // last in the queue: nothing
  EXPECT_EQ(s.fades.size(), 1u);
  s = FadeOrDie(s, {.clip = 0});  // back to the playing clip: a fade
  ASSERT_EQ(s.fades.size(), 2u);
  EXPECT_EQ(s.fades[1].target.clip, 0);
  EXPECT_EQ(s.fades[1].elapsed, 0.0f);
}

TEST_F(CrossfadeTest, FadeTo_RejectsBadRequestsAndAFullQueue) {
  const CrossfadeState s = Play(0);
  EXPECT_THAT(FadeTo(s, {.clip = -1}).status().message(),
              HasSubstr("fade_to.clip"));
  EXPECT_THAT(FadeTo(s, {.clip = 1, .duration = -1}).status().message(),
              HasSubstr("fade_to.duration"));
  EXPECT_THAT(FadeTo(s, {.clip = 1, .duration = kNaN}).status().message(),
              HasSubstr("fade_to.duration"));
  EXPECT_THAT(FadeTo(s, {.clip = 1, .start_time = kNaN}).status().message(),
              HasSubstr("fade_to.start_time"));
  CrossfadeState full = s;
  for (int i = 0; i < kMaxQueuedFades; ++i) {
    full = FadeOrDie(full, {.clip = 1 + i % 2});
  }
  EXPECT_EQ(FadeTo(full, {.clip = 0}).status().code(),
            absl::StatusCode::kResourceExhausted);
}

TEST_F(CrossfadeTest, Step_WithoutFadesPlaysTheCurrentClip) {
  CrossfadeState s = Play(0, 0.5f);
  LocalPose pose;
  s = Step(s, 0.25f, &pose);
  EXPECT_EQ(s.current.time, 0.75f);
  const LocalPose expected = Sample(0, 0.75f, PlaybackMode::kLoop);
  for (int j = 0; j < kJoints; ++j) EXPECT_TRUE(SameBits(pose[j], expected[j]));
  // Looping wraps the stored time.
  s = Step(s, 1.5f, &pose);
  EXPECT_EQ(s.current.time, 0.25f);
  // Clamped playback holds the end.
  CrossfadeState clamped = Play(0, 1.5f, PlaybackMode::kClamp);
  clamped = Step(clamped, 3.0f, &pose);
  EXPECT_EQ(clamped.current.time, 2.0f);
}

TEST_F(CrossfadeTest, Step_MidFadeBlendsBothClipsByTheCurveWeight) {
  for (FadeCurve curve : {FadeCurve::kLinear, FadeCurve::kSmoothstep}) {
    CrossfadeState s =
        FadeOrDie(Play(0, 0.5f), {.clip = 1, .duration = 1.0f, .curve = curve});
    LocalPose pose;
    s = Step(s, 0.25f, &pose);
    ASSERT_EQ(s.fades.size(), 1u);
    EXPECT_EQ(s.fades[0].elapsed, 0.25f);
    EXPECT_EQ(s.fades[0].target.time, 0.25f);
    const double x = 0.25;
    const double w = curve == FadeCurve::kLinear ? x : x * x * (3 - 2 * x);
    EXPECT_FLOAT_EQ(FadeWeight(curve, 0.25f, 1.0f), static_cast<float>(w));
    const LocalPose a = Sample(0, 0.75f, PlaybackMode::kLoop);
    const LocalPose b = Sample(1, 0.25f, PlaybackMode::kLoop);
    for (int j = 0; j < kJoints; ++j) {
      const Eigen::Vector3d expected =
          a[j].translation.cast<double>() * (1 - w) +
          b[j].translation.cast<double>() * w;
      EXPECT_TRUE(pose[j].translation.cast<double>().isApprox(expected, 1e-6))
          << j << ": " << pose[j].translation.transpose();
    }
  }
}

TEST_F(CrossfadeTest, Step_AFadeReachesItsTargetAtItsDuration) {
  CrossfadeState s =
      FadeOrDie(Play(0), {.clip = 2, .duration = 0.5f, .start_time = 0.0f});
  LocalPose pose;
  for (int i = 0; i < 3; ++i) {
    s = Step(s, 0.125f, &pose);
    ASSERT_EQ(s.fades.size(), 1u) << i;
  }
  s = Step(s, 0.125f, &pose);  // elapsed reaches 0.5
  EXPECT_EQ(s.current.clip, 2);
  EXPECT_EQ(s.current.time, 0.5f);
  EXPECT_TRUE(s.fades.empty());
  const LocalPose target = Sample(2, 0.5f, PlaybackMode::kLoop);
  for (int j = 0; j < kJoints; ++j) EXPECT_TRUE(SameBits(pose[j], target[j]));
}

TEST_F(CrossfadeTest, Step_ZeroDtChangesNothingButCutsZeroLengthFades) {
  const CrossfadeState s0 =
      FadeOrDie(Play(0, 0.3f), {.clip = 1, .duration = 1.0f});
  LocalPose pose;
  CrossfadeState s = Step(s0, 0.1f, &pose);
  const CrossfadeState before = s;
  LocalPose again;
  s = Step(s, 0.0f, &again);
  EXPECT_EQ(s.current.time, before.current.time);
  ASSERT_EQ(s.fades.size(), 1u);
  EXPECT_EQ(s.fades[0].elapsed, before.fades[0].elapsed);
  EXPECT_EQ(s.fades[0].target.time, before.fades[0].target.time);
  for (int j = 0; j < kJoints; ++j) EXPECT_TRUE(SameBits(pose[j], again[j]));

  // A zero-length fade is a cut, even with dt = 0.
  CrossfadeState cut = FadeOrDie(
      Play(0, 0.3f), {.clip = 2, .duration = 0.0f, .start_time = 0.5f});
  cut = Step(cut, 0.0f, &pose);
  EXPECT_EQ(cut.current.clip, 2);
  EXPECT_TRUE(cut.fades.empty());
  const LocalPose target = Sample(2, 0.5f, PlaybackMode::kLoop);
  for (int j = 0; j < kJoints; ++j) EXPECT_TRUE(SameBits(pose[j], target[j]));
}

TEST_F(CrossfadeTest, Step_DtLongerThanTheFadeFinishesItInOneStep) {
  CrossfadeState s =
      FadeOrDie(Play(0), {.clip = 1, .duration = 0.2f, .start_time = 1.0f});
  LocalPose pose;
  s = Step(s, 0.75f, &pose);
  EXPECT_EQ(s.current.clip, 1);
  EXPECT_EQ(s.current.time, 1.75f);  // the whole dt, not just the fade
  EXPECT_TRUE(s.fades.empty());
  const LocalPose target = Sample(1, 1.75f, PlaybackMode::kLoop);
  for (int j = 0; j < kJoints; ++j) EXPECT_TRUE(SameBits(pose[j], target[j]));
}

TEST_F(CrossfadeTest, Step_AFinishedFadeDropsTheFadesBeforeIt) {
  CrossfadeState s = FadeOrDie(Play(0), {.clip = 1, .duration = 1.0f});
  LocalPose pose;
  s = Step(s, 0.25f, &pose);
  s = FadeOrDie(s, {.clip = 2, .duration = 0.25f});
  ASSERT_EQ(s.fades.size(), 2u);
  s = Step(s, 0.125f, &pose);
  ASSERT_EQ(s.fades.size(), 2u);
  EXPECT_EQ(s.current.clip, 0);
  s = Step(s, 0.125f, &pose);  // the fade to c finishes; b is hidden by it
  EXPECT_EQ(s.current.clip, 2);
  EXPECT_EQ(s.current.time, 0.25f);
  EXPECT_TRUE(s.fades.empty());
}

TEST_F(CrossfadeTest, Cancel_DropsTheFadesAndPlaysTheCurrentClip) {
  CrossfadeState s = FadeOrDie(Play(0, 0.5f), {.clip = 1, .duration = 1.0f});
  LocalPose pose;
  s = Step(s, 0.25f, &pose);
  s = Cancel(s);
  EXPECT_TRUE(s.fades.empty());
  EXPECT_EQ(s.current.clip, 0);
  s = Step(s, 0.25f, &pose);
  const LocalPose expected = Sample(0, 1.0f, PlaybackMode::kLoop);
  for (int j = 0; j < kJoints; ++j) EXPECT_TRUE(SameBits(pose[j], expected[j]));
}

TEST_F(CrossfadeTest, Step_NothingPlayingGivesTheRestPose) {
  LocalPose pose;
  const CrossfadeState s = Step(CrossfadeState{}, 0.5f, &pose);
  EXPECT_EQ(s.current.clip, -1);
  for (int j = 0; j < kJoints; ++j) {
    EXPECT_TRUE(SameBits(pose[j], skeleton_.rest_pose()[j]));
  }
}

TEST_F(CrossfadeTest, Step_SameStateSameBitsWithOrWithoutWorkspace) {
  CrossfadeState s = FadeOrDie(Play(0, 0.1f), {.clip = 1, .duration = 2.0f});
  s = FadeOrDie(s,
                {.clip = 2, .duration = 3.0f, .curve = FadeCurve::kSmoothstep});
  CrossfadeWorkspace workspace;
  CrossfadeState with = s;
  for (int i = 0; i < 60; ++i) {
    LocalPose a(kJoints), b(kJoints);
    CrossfadeState next_with;
    CrossfadeJob job{.skeleton = &skeleton_,
                     .clips = clip_pointers_,
                     .state = &with,
                     .dt = 0.05f + 0.01f * (i % 3),
                     .workspace = &workspace,
                     .output = absl::MakeSpan(a),
                     .next_state = &next_with};
    ASSERT_TRUE(job.Run().ok());
    // The same step from a copy of the state, without a workspace, and with
    // next_state aliasing state.
    CrossfadeState copy = with;
    job.state = &copy;
    job.next_state = &copy;
    job.workspace = nullptr;
    job.output = absl::MakeSpan(b);
    ASSERT_TRUE(job.Run().ok());
    for (int j = 0; j < kJoints; ++j) ASSERT_TRUE(SameBits(a[j], b[j])) << i;
    ASSERT_EQ(copy.fades.size(), next_with.fades.size());
    ASSERT_EQ(copy.current.time, next_with.current.time);
    with = next_with;
  }
  EXPECT_EQ(with.current.clip, 2);
}

TEST_F(CrossfadeTest, Step_RejectsBadInputsAndLeavesTheStateAlone) {
  const CrossfadeState good =
      FadeOrDie(Play(0, 0.1f), {.clip = 1, .duration = 2.0f});
  LocalPose pose(kJoints);
  auto run = [&](const CrossfadeState& s, float dt) {
    return StepCrossfade(skeleton_, clips_, s, dt, absl::MakeSpan(pose))
        .status();
  };
  EXPECT_THAT(run(good, -0.01f).message(), HasSubstr("crossfade.dt"));
  EXPECT_THAT(run(good, kNaN).message(), HasSubstr("crossfade.dt"));

  CrossfadeState bad = good;
  bad.current.clip = 7;
  EXPECT_THAT(run(bad, 0.1f).message(),
              HasSubstr("crossfade.state.current.clip"));
  bad = good;
  bad.fades[0].elapsed = 3.0f;
  EXPECT_THAT(run(bad, 0.1f).message(),
              HasSubstr("crossfade.state.fades[0].elapsed"));
  bad = good;
  bad.fades[0].target.time = kNaN;
  EXPECT_THAT(run(bad, 0.1f).message(),
              HasSubstr("crossfade.state.fades[0].target.time"));
  bad = good;
  bad.fades[0].curve = static_cast<FadeCurve>(9);
  EXPECT_THAT(run(bad, 0.1f).message(), HasSubstr("fades[0].curve"));
  bad = CrossfadeState{};
  bad.fades = good.fades;
  EXPECT_THAT(run(bad, 0.1f).message(), HasSubstr("no clip is playing"));

  // A job stepping `state` in place over `clips`.
  auto in_place = [&](absl::Span<const Clip* const> clips,
                      CrossfadeState& state) {
    return CrossfadeJob{.skeleton = &skeleton_,
                        .clips = clips,
                        .state = &state,
                        .dt = 0.1f,
                        .output = absl::MakeSpan(pose),
                        .next_state = &state};
  };
  // A null entry in the job's clip list, where the state plays or fades to
  // it: refused before anything is read.
  for (int null_clip : {0, 1}) {
    std::vector<const Clip*> with_null = clip_pointers_;
    with_null[null_clip] = nullptr;
    CrossfadeState state = good;
    EXPECT_THAT(in_place(with_null, state).Run().message(),
                HasSubstr("names a null clip"))
        << null_clip;
    EXPECT_EQ(state.current.time, good.current.time);
  }

  // A broken clip is reported with the playback that names it, and the
  // state is not advanced.
  clips_[1].tracks[2].rotation.values.pop_back();
  CrossfadeState state = good;
  CrossfadeJob job = in_place(clip_pointers_, state);
  const absl::Status s = job.Run();
  EXPECT_THAT(s.message(), HasSubstr("crossfade.state.fades[0].target"));
  EXPECT_THAT(s.message(), HasSubstr("joint 2 'j2'"));
  EXPECT_EQ(state.current.time, good.current.time);
  EXPECT_EQ(state.fades[0].elapsed, 0.0f);
  job.clips_validated = true;  // the shape is still checked
  EXPECT_THAT(job.Run().message(), HasSubstr("joint 2 'j2' rotation track"));
  EXPECT_EQ(state.fades[0].elapsed, 0.0f);
  EXPECT_FALSE(job.Validate().ok());
}

// ---------------------------------------------------------------------------
// Real data: CMU subject 01's jumps and climb/reach share one skeleton.

TEST(CrossfadeRealDataTest, Crossfade_CmuClipsReachTheTargetAndStayContinuous) {
  const std::string dir = POSEWIRE_TEST_DATA_DIR;
  absl::StatusOr<ImportedAsset> jumps =
      ReadBvhFile(dir + "/cmu_01_01_jumps.bvh");
  absl::StatusOr<ImportedAsset> climb =
      ReadBvhFile(dir + "/cmu_01_03_climb_reach.bvh");
  ASSERT_TRUE(jumps.ok()) << jumps.status();
  ASSERT_TRUE(climb.ok()) << climb.status();
  const Skeleton& skeleton = jumps->skeleton;
  ASSERT_EQ(skeleton.num_joints(), climb->skeleton.num_joints());
  for (int j = 0; j < skeleton.num_joints(); ++j) {
    ASSERT_EQ(skeleton.joint_name(j), climb->skeleton.joint_name(j));
    ASSERT_EQ(skeleton.parent(j), climb->skeleton.parent(j));
  }
  const std::vector<Clip> clips = {jumps->clips[0], climb->clips[0]};
  const std::vector<const Clip*> clip_pointers = {&clips[0], &clips[1]};
  const int n = skeleton.num_joints();

  // 64 Hz: elapsed times are exact in float, so the fade ends on a step.
  const float dt = 1.0f / 64.0f;
  const float fade = 0.5f;
  absl::StatusOr<CrossfadeState> faded =
      FadeTo(Play(0, 3.0f), {.clip = 1, .duration = fade, .start_time = 10.0f});
  ASSERT_TRUE(faded.ok());
  CrossfadeState state = *faded;

  auto sample = [&](int clip, float time) {
    LocalPose pose(n);
    SamplingJob job{.skeleton = &skeleton,
                    .clip = &clips[clip],
                    .time = time,
                    .output = absl::MakeSpan(pose)};
    EXPECT_TRUE(job.Run().ok());
    return pose;
  };

  // The bound on how far a joint may move between frames, in local space
  // where the blend happens. Translations lerp: the change is at most what
  // either clip moves plus the weight change times the gap between them.
  // Rotations nlerp (shortest path, so at most 90 degrees apart on the
  // 4-sphere): nlerp's sensitivity to its endpoints is at most
  // 1 / cos(45 deg) = 1.42 and its angular speed in w at most twice slerp's,
  // hence the factors 1.5 and 2.
  CrossfadeWorkspace workspace;
  LocalPose pose(n), prev_pose, prev_a, prev_b;
  float prev_w = 0.0f;
  int steps = 0;
  int switches = 0;
  std::vector<Eigen::Vector4f> follow_a(n), follow_b(n);
  while (!state.fades.empty()) {
    const float time_a = PlaybackTime(state.current.time + dt,
                                      clips[0].duration, PlaybackMode::kLoop);
    const float time_b = PlaybackTime(state.fades[0].target.time + dt,
                                      clips[1].duration, PlaybackMode::kLoop);
    CrossfadeState next;
    CrossfadeJob job{.skeleton = &skeleton,
                     .clips = clip_pointers,
                     .clips_validated = true,
                     .state = &state,
                     .dt = dt,
                     .workspace = &workspace,
                     .output = absl::MakeSpan(pose),
                     .next_state = &next};
    ASSERT_TRUE(job.Run().ok());
    ++steps;
    const float w =
        next.fades.empty()
            ? 1.0f
            : FadeWeight(FadeCurve::kLinear, next.fades[0].elapsed, fade);
    const LocalPose a = sample(0, time_a);
    const LocalPose b = sample(1, time_b);
    const float dw = w - prev_w;
    if (steps > 1) {
      for (int j = 0; j < n; ++j) {
        const float moved =
            (pose[j].translation - prev_pose[j].translation).norm();
        const float clips_moved =
            std::max((a[j].translation - prev_a[j].translation).norm(),
                     (b[j].translation - prev_b[j].translation).norm());
        const float gap = (a[j].translation - b[j].translation).norm();
        EXPECT_LE(moved, clips_moved + dw * gap + 1e-4f)
            << "step " << steps << " joint " << j;
        // Where the two clips' rotations cross 180 degrees apart, the
        // shortest path switches sides: the one discontinuity of any
        // stateless quaternion blend (the book's and ozz's alike). To see
        // it, follow each clip's quaternion continuously (q and -q are one
        // rotation, and sampled keys carry either sign) and watch the sign
        // of their dot product. At a switch the gap must have passed 180
        // degrees: previous gap + gap >= 360 degrees - both clips' motion.
        const float turned_a = AngleBetween(a[j].rotation, prev_a[j].rotation);
        const float turned_b = AngleBetween(b[j].rotation, prev_b[j].rotation);
        const float angle_gap = AngleBetween(a[j].rotation, b[j].rotation);
        const float prev_gap =
            AngleBetween(prev_a[j].rotation, prev_b[j].rotation);
        Eigen::Vector4f qa = a[j].rotation.coeffs();
        Eigen::Vector4f qb = b[j].rotation.coeffs();
        if (qa.dot(follow_a[j]) < 0) qa = -qa;
        if (qb.dot(follow_b[j]) < 0) qb = -qb;
        const bool side_switch =
            (qa.dot(qb) < 0) != (follow_a[j].dot(follow_b[j]) < 0);
        follow_a[j] = qa;
        follow_b[j] = qb;
        if (side_switch) {
          ++switches;
          EXPECT_GE(prev_gap + angle_gap, 2 * kPi - turned_a - turned_b - 1e-3f)
              << "step " << steps << " joint " << j;
          continue;
        }
        const float turned =
            AngleBetween(pose[j].rotation, prev_pose[j].rotation);
        EXPECT_LE(turned, 1.5f * std::max(turned_a, turned_b) +
                              2.0f * dw * angle_gap + 1e-4f)
            << "step " << steps << " joint " << j << " '"
            << skeleton.joint_name(j) << "'";
      }
    }
    if (steps == 1) {
      for (int j = 0; j < n; ++j) {
        follow_a[j] = a[j].rotation.coeffs();
        follow_b[j] = b[j].rotation.coeffs();
      }
    }
    prev_pose = pose;
    prev_a = a;
    prev_b = b;
    prev_w = w;
    state = next;
    ASSERT_LT(steps, 100);
  }
  // Side switches are rare events at glitchy joints (CMU fingers), not the
  // norm.
  RecordProperty("side_switches", switches);
  EXPECT_LT(switches, n * steps / 50);
  // The fade ends at its duration, on the target clip exactly.
  EXPECT_EQ(steps, 32);
  EXPECT_EQ(state.current.clip, 1);
  const LocalPose target = sample(1, state.current.time);
  for (int j = 0; j < n; ++j) EXPECT_TRUE(SameBits(pose[j], target[j])) << j;
}

}  // namespace crossfade_test
}  // namespace posewire
