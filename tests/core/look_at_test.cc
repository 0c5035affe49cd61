// Look-at IK (FinalIK LookAtIK's model) on the CMU walk rig and on a small
// rig with eyes. Results are checked with forward kinematics by 4x4 matrices
// (chain_ik_test_util.h), independent of the job's transforms: the head's
// forward axis through the target, each spine bone's share of the turn
// against the documented linear falloff, continuity as the target circles
// behind the character.
#include "solver_core/analytic_ik/look_at.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/skeleton.h"
#include "tests/core/chain_ik_real_data.h"
#include "tests/core/chain_ik_test_util.h"

namespace posewire {
namespace look_at_test {

using ::posewire::testing_util::BitEqual;
using ::posewire::testing_util::kPi;
using ::posewire::testing_util::LoadRealClip;
using ::posewire::testing_util::MatrixFk;
using ::posewire::testing_util::RealClip;
using ::testing::HasSubstr;

constexpr float kDegree = kPi / 180.0f;

const RealClip& Walk() {
  static const RealClip* const walk =
      new RealClip(LoadRealClip("cmu_131_01_walk.bvh"));
  return *walk;
}

// The CMU rig's spine (five bones, hips to neck) and head.
struct Rig {
  std::vector<int> spine;
  int head = -1;
};

Rig WalkRig() {
  const Skeleton& s = Walk().skeleton;
  Rig rig;
  for (const char* name :
       {"lowerback", "Chest", "Chest2", "lowerneck", "Neck"}) {
    rig.spine.push_back(s.FindJoint(name));
    EXPECT_GE(rig.spine.back(), 0) << name;
  }
  rig.head = s.FindJoint("Head");
  EXPECT_GE(rig.head, 0);
  return rig;
}

LookAtJob MakeJob(const Skeleton& skeleton, const Rig& rig,
                  const std::vector<Transform>& input,
                  std::vector<Transform>& output,
                  const Eigen::Vector3f& target) {
  LookAtJob job;
  job.skeleton = &skeleton;
  job.input = input;
  const int first = rig.spine.empty() ? rig.head : rig.spine[0];
  job.parent_model = ParentModelTransformOrRoot(skeleton, input, first);
  job.spine = rig.spine;
  job.head = rig.head;
  job.target = target;
  job.output = absl::MakeSpan(output);
  return job;
}

Eigen::Vector3f Position(const Eigen::Matrix4f& m) {
  return m.topRightCorner<3, 1>();
}

// A joint's forward axis in model space: the BVH rig's rest pose has
// identity rotations and faces +z, so every bone's derived axis is +z in its
// own space.
Eigen::Vector3f Forward(const Eigen::Matrix4f& m) {
  return (m.topLeftCorner<3, 3>() * Eigen::Vector3f::UnitZ()).normalized();
}

float Angle(const Eigen::Vector3f& a, const Eigen::Vector3f& b) {
  return std::atan2(a.cross(b).norm(), a.dot(b));
}

Eigen::Vector3f AboutY(float angle, const Eigen::Vector3f& v) {
  return Eigen::AngleAxisf(angle, Eigen::Vector3f::UnitY()) * v;
}

TEST(LookAtTest, LookAt_HeadPointsAtTargetsWithinTheClampOnTheWalk) {
  const RealClip& walk = Walk();
  const Skeleton& s = walk.skeleton;
  const Rig rig = WalkRig();
  int checked = 0;
  for (size_t f = 0; f < walk.frames.size(); f += 37) {
    const std::vector<Transform>& input = walk.frames[f];
    const std::vector<Eigen::Matrix4f> m = MatrixFk(s, input);
    const Eigen::Vector3f chest = Forward(m[rig.spine.back()]);
    for (float yaw : {-60.0f, -25.0f, 0.0f, 20.0f, 55.0f}) {
      for (float up : {-0.4f, 0.0f, 0.5f}) {
        const Eigen::Vector3f dir =
            (AboutY(yaw * kDegree, chest) + Eigen::Vector3f(0, up, 0))
                .normalized();
        const Eigen::Vector3f target = Position(m[rig.head]) + 40.0f * dir;
        std::vector<Transform> out(input.size());
        LookAtJob job = MakeJob(s, rig, input, out, target);
        LookAtResult result;
        job.result = &result;
        ASSERT_TRUE(job.Run().ok()) << job.Validate();
        ASSERT_EQ(result.head_clamp, 1.0f) << "frame " << f << " yaw " << yaw;
        const std::vector<Eigen::Matrix4f> solved = MatrixFk(s, out);
        const float error = Angle(Forward(solved[rig.head]),
                                  target - Position(solved[rig.head]));
        EXPECT_LT(error, 1.0f * kDegree)
            << "frame " << f << " yaw " << yaw << " up " << up;
        EXPECT_NEAR(result.head_angle_error, error, 0.01f * kDegree);
        // Only the spine and the head turn, and only their rotations.
        for (int j = 0; j < s.num_joints(); ++j) {
          const bool bone = j == rig.head ||
                            std::count(rig.spine.begin(), rig.spine.end(), j);
          if (!bone) {
            EXPECT_EQ(out[j], input[j]) << s.joint_name(j);
          }
          EXPECT_EQ(out[j].translation, input[j].translation);
        }
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 100);
}

TEST(LookAtTest, LookAt_SpineSharesFollowTheLinearFalloff) {
  const Skeleton& s = Walk().skeleton;
  const Rig rig = WalkRig();
  const std::vector<Transform> input = RestPose(s);
  const std::vector<Eigen::Matrix4f> m = MatrixFk(s, input);
  const Eigen::Vector3f base = Forward(m[rig.spine[0]]);
  for (float start : {0.3f, 0.0f, 0.6f}) {
    for (float yaw : {30.0f, 75.0f, -120.0f}) {
      // Seen from the last spine bone, as the spine aims.
      const Eigen::Vector3f target =
          Position(m[rig.spine.back()]) +
          AboutY(yaw * kDegree, Eigen::Vector3f(0, 0, 30));
      std::vector<Transform> out(input.size());
      LookAtJob job = MakeJob(s, rig, input, out, target);
      job.body_weight = 1.0f;
      job.head_weight = 0.0f;
      job.clamp_weight = 0.0f;
      job.spine_weight_start = start;
      ASSERT_TRUE(job.Run().ok());
      const std::vector<Eigen::Matrix4f> solved = MatrixFk(s, out);
      const float turn = std::fabs(yaw) * kDegree;
      const size_t n = rig.spine.size();
      for (size_t i = 0; i < n; ++i) {
        const float expected = start + (1.0f - start) * i / (n - 1.0f);
        const float share = Angle(base, Forward(solved[rig.spine[i]])) / turn;
        EXPECT_NEAR(share, expected, 0.01f * std::max(expected, 0.01f))
            << "bone " << i << " start " << start << " yaw " << yaw;
      }
    }
  }
}

// The head's model rotation, from the matrices (unit scale on this rig).
Eigen::Quaternionf Rotation(const Eigen::Matrix4f& m) {
  return Eigen::Quaternionf(Eigen::Matrix3f(m.topLeftCorner<3, 3>()))
      .normalized();
}

TEST(LookAtTest, LookAt_TargetCirclingBehindNeverFlipsTheHead) {
  const RealClip& walk = Walk();
  const Skeleton& s = walk.skeleton;
  const Rig rig = WalkRig();
  for (size_t f : {size_t{0}, walk.frames.size() / 2}) {
    const std::vector<Transform>& input = walk.frames[f];
    const std::vector<Eigen::Matrix4f> m = MatrixFk(s, input);
    // A circle through the first spine bone's forward and straight behind
    // it, about the up direction square to that forward.
    const Eigen::Vector3f ahead = Forward(m[rig.spine[0]]);
    const Eigen::Vector3f up =
        (Eigen::Vector3f::UnitY() - ahead.y() * ahead).normalized();
    const Eigen::Vector3f head_forward = Forward(m[rig.head]);
    for (int smoothing : {0, 2}) {
      Eigen::Quaternionf previous = Eigen::Quaternionf::Identity();
      float largest_step = 0.0f;
      // Both ways round, through straight behind, in 0.25 degree steps.
      for (int step = -1440; step <= 1440; ++step) {
        const float yaw = 0.25f * kDegree * step;
        const Eigen::Vector3f target =
            Position(m[rig.head]) +
            50.0f * (Eigen::AngleAxisf(yaw, up) * ahead);
        std::vector<Transform> out(input.size());
        LookAtJob job = MakeJob(s, rig, input, out, target);
        job.clamp_smoothing = smoothing;
        ASSERT_TRUE(job.Run().ok());
        const Eigen::Matrix4f head = MatrixFk(s, out)[rig.head];
        const Eigen::Quaternionf rotation = Rotation(head);
        if (step > -1440) {
          largest_step =
              std::max(largest_step, rotation.angularDistance(previous));
        }
        previous = rotation;
        if (step == -720 || step == 720) {
          // Straight behind: the clamp has faded the turn to a fraction.
          EXPECT_LT(Angle(Forward(head), head_forward), 20.0f * kDegree)
              << "frame " << f << " smoothing " << smoothing;
        }
      }
      // A flip would be a jump of up to 180 degrees in one step.
      EXPECT_LT(largest_step, 3.0f * kDegree)
          << "frame " << f << " smoothing " << smoothing;
    }
    // Without the clamps the head turns around to face the target.
    std::vector<Transform> out(input.size());
    LookAtJob job =
        MakeJob(s, rig, input, out, Position(m[rig.head]) - 50.0f * ahead);
    job.clamp_weight = job.clamp_weight_head = 0.0f;
    ASSERT_TRUE(job.Run().ok());
    EXPECT_GT(Angle(Forward(MatrixFk(s, out)[rig.head]), head_forward),
              150.0f * kDegree);
  }
}

TEST(LookAtTest, LookAt_RerunsAreBitIdenticalInPlaceOrNot) {
  const RealClip& walk = Walk();
  const Skeleton& s = walk.skeleton;
  const Rig rig = WalkRig();
  const std::vector<Transform>& input = walk.frames[50];
  const Eigen::Vector3f target = Eigen::Vector3f(12.0f, 18.0f, 30.0f);
  std::vector<Transform> a(input.size());
  std::vector<Transform> b(input.size());
  ASSERT_TRUE(MakeJob(s, rig, input, a, target).Run().ok());
  ASSERT_TRUE(MakeJob(s, rig, input, b, target).Run().ok());
  EXPECT_TRUE(BitEqual(a, b));
  std::vector<Transform> in_place = input;
  LookAtJob job = MakeJob(s, rig, in_place, in_place, target);
  ASSERT_TRUE(job.Run().ok());
  EXPECT_TRUE(BitEqual(a, in_place));
  EXPECT_FALSE(BitEqual(a, input));
}

TEST(LookAtTest, LookAt_WeightZeroReturnsTheInputBitForBit) {
  const RealClip& walk = Walk();
  const Rig rig = WalkRig();
  const std::vector<Transform>& input = walk.frames[10];
  std::vector<Transform> out(input.size());
  LookAtJob job =
      MakeJob(walk.skeleton, rig, input, out, Eigen::Vector3f(5, 20, 40));
  job.weight = 0.0f;
  ASSERT_TRUE(job.Run().ok());
  EXPECT_TRUE(BitEqual(out, input));
}

// root -> spine -> neck -> head -> (eye_l, eye_r), facing +z in the rest
// pose, with rotated rest frames (the derived axes are then not +z).
Skeleton EyesSkeleton() {
  SkeletonDesc desc;
  auto add = [&](const char* name, int parent, const Eigen::Vector3f& t,
                 const Eigen::Quaternionf& r) {
    Transform x = Transform::Identity();
    x.translation = t;
    x.rotation = r;
    desc.joint_names.push_back(name);
    desc.parents.push_back(parent);
    desc.rest_pose.push_back(x);
  };
  const Eigen::Quaternionf tilt(
      Eigen::AngleAxisf(0.4f, Eigen::Vector3f(1, 2, 0).normalized()));
  add("root", kNoParent, {0, 1, 0}, Eigen::Quaternionf::Identity());
  add("spine", 0, {0, 0.5f, 0}, tilt);
  add("neck", 1, {0, 0.5f, 0}, tilt.conjugate());
  add("head", 2, {0, 0.2f, 0}, tilt);
  add("eye_l", 3, {0.05f, 0.1f, 0.1f}, tilt);
  add("eye_r", 3, {-0.05f, 0.1f, 0.1f}, Eigen::Quaternionf::Identity());
  return *Skeleton::Create(std::move(desc));
}

TEST(LookAtTest, LookAt_EyesPointAtTheTargetWithAxesFromTheRestPose) {
  const Skeleton s = EyesSkeleton();
  const std::vector<Transform> input = RestPose(s);
  const std::vector<int> spine = {1, 2};
  const std::vector<int> eyes = {4, 5};
  const std::vector<Eigen::Matrix4f> rest = MatrixFk(s, input);
  const Rig rig{spine, 3};
  for (const Eigen::Vector3f& target :
       {Eigen::Vector3f(1, 2.5f, 4), Eigen::Vector3f(-2, 1, 3),
        Eigen::Vector3f(0.3f, 2.3f, 0.8f)}) {
    std::vector<Transform> out(input.size());
    LookAtJob job = MakeJob(s, rig, input, out, target);
    job.eyes = eyes;
    LookAtResult result;
    job.result = &result;
    ASSERT_TRUE(job.Run().ok()) << job.Validate();
    const std::vector<Eigen::Matrix4f> m = MatrixFk(s, out);
    for (int j : {3, 4, 5}) {
      // The axis derived from the rest pose: the one facing +z there.
      const Eigen::Vector3f axis =
          rest[j].topLeftCorner<3, 3>().transpose() * Eigen::Vector3f::UnitZ();
      const Eigen::Vector3f forward =
          (m[j].topLeftCorner<3, 3>() * axis).normalized();
      EXPECT_LT(Angle(forward, target - Position(m[j])), 0.05f * kDegree)
          << s.joint_name(j);
    }
    EXPECT_TRUE(result.reached);
  }
}

// Axes given by the client win over the rest pose: each bone's own +x (a
// rig whose bones face along x) is what points at the target, and giving
// the axes the rest pose would derive gives the derived answer (to float
// rounding).
TEST(LookAtTest, LookAt_GivenAxesPointAtTheTarget) {
  const Skeleton s = EyesSkeleton();
  const std::vector<Transform> input = RestPose(s);
  const std::vector<int> spine = {1, 2};
  const std::vector<int> eyes = {4, 5};
  const std::vector<int> bones = {1, 2, 3, 4, 5};  // spine, head, eyes
  const std::vector<Eigen::Matrix4f> rest = MatrixFk(s, input);
  const Rig rig{spine, 3};
  const std::vector<Eigen::Vector3f> along_x(bones.size(),
                                             Eigen::Vector3f(2, 0, 0));
  std::vector<Eigen::Vector3f> derived;
  for (int j : bones) {
    derived.push_back(rest[j].topLeftCorner<3, 3>().transpose() *
                      Eigen::Vector3f::UnitZ());
  }
  // In front of bones that face +x (the clamp fades targets behind).
  for (const Eigen::Vector3f& target :
       {Eigen::Vector3f(4, 2.5f, 1), Eigen::Vector3f(3, 1, -2)}) {
    std::vector<Transform> out(input.size());
    LookAtJob job = MakeJob(s, rig, input, out, target);
    job.eyes = eyes;
    job.axes = along_x;
    LookAtResult result;
    job.result = &result;
    ASSERT_TRUE(job.Run().ok()) << job.Validate();
    EXPECT_TRUE(result.reached);
    const std::vector<Eigen::Matrix4f> m = MatrixFk(s, out);
    for (int j : {3, 4, 5}) {
      const Eigen::Vector3f forward =
          (m[j].topLeftCorner<3, 3>() * Eigen::Vector3f::UnitX()).normalized();
      EXPECT_LT(Angle(forward, target - Position(m[j])), 0.05f * kDegree)
          << s.joint_name(j);
    }

    std::vector<Transform> from_rest(input.size());
    std::vector<Transform> from_given(input.size());
    LookAtJob rest_job = MakeJob(s, rig, input, from_rest, target);
    rest_job.eyes = eyes;
    ASSERT_TRUE(rest_job.Run().ok());
    LookAtJob given_job = MakeJob(s, rig, input, from_given, target);
    given_job.eyes = eyes;
    given_job.axes = derived;
    ASSERT_TRUE(given_job.Run().ok());
    for (size_t j = 0; j < input.size(); ++j) {
      EXPECT_LT(from_given[j].rotation.angularDistance(from_rest[j].rotation),
                1e-5f)
          << s.joint_name(static_cast<int>(j));
    }
  }
}

TEST(LookAtTest, LookAt_TurnSpeedLimitsTheLookDirectionPerFrame) {
  const Skeleton& s = Walk().skeleton;
  const Rig rig = WalkRig();
  const std::vector<Transform> input = RestPose(s);
  const Eigen::Vector3f head = Position(MatrixFk(s, input)[rig.head]);
  // The head looked ahead; the target is 90 degrees to its left.
  LookAtState state{Eigen::Vector3f::UnitZ()};
  const Eigen::Vector3f target = head + Eigen::Vector3f(20, 0, 0);
  int frames = 0;
  for (; frames < 100; ++frames) {
    std::vector<Transform> out(input.size());
    LookAtJob job = MakeJob(s, rig, input, out, target);
    job.clamp_weight = job.clamp_weight_head = 0.0f;
    job.body_weight = 0.0f;  // the head stays where the limit's pivot is
    job.max_turn_speed = 2.0f;
    job.dt = 1.0f / 30.0f;
    job.state = &state;
    const Eigen::Vector3f before = state.direction;
    job.next_state = &state;
    LookAtResult result;
    job.result = &result;
    ASSERT_TRUE(job.Run().ok());
    const float turned = Angle(before, state.direction);
    EXPECT_LE(turned, 2.0f / 30.0f + 1e-5f);
    if (!result.turn_limited) break;
    EXPECT_NEAR(turned, 2.0f / 30.0f, 1e-4f);
    // The head points along the limited direction.
    const std::vector<Eigen::Matrix4f> m = MatrixFk(s, out);
    EXPECT_LT(Angle(Forward(m[rig.head]), state.direction), 1.0f * kDegree);
  }
  // 90 degrees at 2 rad/s: 0.785 s, 24 frames at 30 Hz.
  EXPECT_EQ(frames, 23);
  EXPECT_LT(Angle(state.direction, Eigen::Vector3f::UnitX()), 1e-4f);
}

TEST(LookAtTest, LookAt_InvalidInputIsRejectedNamingTheField) {
  const Skeleton& s = Walk().skeleton;
  const Rig rig = WalkRig();
  const std::vector<Transform> input = RestPose(s);
  std::vector<Transform> out(input.size());
  auto error = [&](auto edit) {
    LookAtJob job = MakeJob(s, rig, input, out, Eigen::Vector3f(0, 20, 30));
    std::vector<int> spine = rig.spine;
    std::vector<Eigen::Vector3f> axes;
    std::vector<int> eyes;
    edit(job, spine, axes, eyes);
    job.spine = spine;
    job.axes = axes;
    job.eyes = eyes;
    const absl::Status status = job.Run();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(job.Validate(), status);
    return std::string(status.message());
  };
  using Axes = std::vector<Eigen::Vector3f>;
  using Joints = std::vector<int>;
  EXPECT_THAT(error([](LookAtJob&, Joints& spine, Axes&, Joints&) {
                std::swap(spine[1], spine[2]);
              }),
              HasSubstr("look_at.spine[1] 'Chest2': not an ancestor of "
                        "look_at.spine[2] 'Chest'"));
  EXPECT_THAT(error([&](LookAtJob&, Joints& spine, Axes&, Joints&) {
                spine.back() = s.FindJoint("LeftShoulder");
              }),
              HasSubstr("look_at.spine[3] 'lowerneck': not an ancestor of "
                        "look_at.spine[4] 'LeftShoulder'"));
  EXPECT_THAT(error([&](LookAtJob&, Joints& spine, Axes&, Joints&) {
                spine = {s.FindJoint("Chest"), s.FindJoint("LeftShoulder")};
              }),
              HasSubstr("look_at.spine[1] 'LeftShoulder': not an ancestor of "
                        "look_at.head 'Head'"));
  EXPECT_THAT(
      error([](LookAtJob& job, Joints&, Axes&, Joints&) { job.head = 999; }),
      HasSubstr("look_at.head: joint 999 is out of range"));
  EXPECT_THAT(error([](LookAtJob&, Joints& spine, Axes& axes, Joints&) {
                axes.assign(spine.size() + 1, Eigen::Vector3f::UnitZ());
                axes[5] = Eigen::Vector3f::Zero();
              }),
              HasSubstr("look_at.axes[5]: zero length; give the forward axis "
                        "of head (joint"));
  EXPECT_THAT(error([](LookAtJob&, Joints&, Axes& axes, Joints&) {
                axes.assign(2, Eigen::Vector3f::UnitZ());
              }),
              HasSubstr("look_at.axes: 2 axes for 6 bones"));
  EXPECT_THAT(error([](LookAtJob& job, Joints&, Axes&, Joints&) {
                job.character_forward = Eigen::Vector3f::Zero();
              }),
              HasSubstr("look_at.character_forward: zero length"));
  EXPECT_THAT(error([&](LookAtJob&, Joints&, Axes&, Joints& eyes) {
                eyes = {s.FindJoint("LeftWrist")};
              }),
              HasSubstr("look_at.eyes[0] 'LeftWrist': not under "
                        "look_at.head 'Head'"));
  EXPECT_THAT(error([](LookAtJob& job, Joints&, Axes&, Joints&) {
                job.target.x() = NAN;
              }),
              HasSubstr("look_at.target: NaN"));
  EXPECT_THAT(error([](LookAtJob& job, Joints&, Axes&, Joints&) {
                job.body_weight = INFINITY;
              }),
              HasSubstr("look_at.body_weight: inf is not finite"));
  EXPECT_THAT(error([](LookAtJob& job, Joints&, Axes&, Joints&) {
                job.clamp_smoothing = 9;
              }),
              HasSubstr("look_at.clamp_smoothing: 9 is not in [0, 8]"));
  EXPECT_THAT(error([](LookAtJob& job, Joints&, Axes&, Joints&) {
                job.max_turn_speed = -1.0f;
              }),
              HasSubstr("look_at.max_turn_speed: -1 is not finite and >= 0"));
  EXPECT_THAT(error([](LookAtJob& job, Joints&, Axes&, Joints&) {
                job.skeleton = nullptr;
              }),
              HasSubstr("look_at.skeleton: not set"));
}

}  // namespace look_at_test
}  // namespace posewire
