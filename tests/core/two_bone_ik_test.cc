// Two-bone IK: every result is checked by forward kinematics computed here in
// double precision with 4x4 matrices (not the library's Combine), against
// geometry derived independently: distances, planes, the soften curve
// evaluated in double, rotations built with Eigen::AngleAxisd. The ozz-
// animation IKTwoBoneJob cases (pole, soften, twist, weight clamping, zero
// scale, negative mid axis, aligned joints, zero-length start-to-target,
// all-zero chain) are here as properties, plus degenerate geometry, input
// validation, determinism and a solve-rate test on the CMU walk.
#include "solver_core/analytic_ik/two_bone_ik.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "solver_core/io/bvh_reader.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/skeleton.h"

namespace posewire {
namespace two_bone_ik_test {

using ::testing::HasSubstr;

constexpr double kPi = std::numbers::pi;

// ---------------------------------------------------------------------------
// Independent forward kinematics.

Eigen::Matrix4d LocalMatrix(const Transform& t) {
  Eigen::Matrix4d m = Eigen::Matrix4d::Identity();
  m.topLeftCorner<3, 3>() =
      t.rotation.cast<double>().normalized().toRotationMatrix() *
      t.scale.cast<double>().asDiagonal();
  m.topRightCorner<3, 1>() = t.translation.cast<double>();
  return m;
}

std::vector<Eigen::Matrix4d> Fk(const Skeleton& skeleton,
                                const std::vector<Transform>& local) {
  std::vector<Eigen::Matrix4d> model(local.size());
  for (int j = 0; j < skeleton.num_joints(); ++j) {
    const int p = skeleton.parent(j);
    model[j] = (p == kNoParent ? Eigen::Matrix4d::Identity() : model[p]) *
               LocalMatrix(local[j]);
  }
  return model;
}

Eigen::Vector3d Pos(const Eigen::Matrix4d& m) {
  return m.topRightCorner<3, 1>();
}

Eigen::Quaterniond ModelRotation(const Eigen::Matrix4d& m) {
  Eigen::Matrix3d r = m.topLeftCorner<3, 3>();
  for (int c = 0; c < 3; ++c) r.col(c).normalize();
  return Eigen::Quaterniond(r);
}

double AngleBetween(const Eigen::Quaterniond& a, const Eigen::Quaterniond& b) {
  return a.angularDistance(b);
}

bool BitEqual(const std::vector<Transform>& a,
              const std::vector<Transform>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(a[i].translation.data(), b[i].translation.data(),
                    3 * sizeof(float)) != 0 ||
        std::memcmp(a[i].rotation.coeffs().data(),
                    b[i].rotation.coeffs().data(), 4 * sizeof(float)) != 0 ||
        std::memcmp(a[i].scale.data(), b[i].scale.data(), 3 * sizeof(float)) !=
            0) {
      return false;
    }
  }
  return true;
}

Transform Trs(const Eigen::Vector3f& t,
              const Eigen::Quaternionf& r = Eigen::Quaternionf::Identity(),
              const Eigen::Vector3f& s = Eigen::Vector3f::Ones()) {
  Transform x;
  x.translation = t;
  x.rotation = r;
  x.scale = s;
  return x;
}

Eigen::Quaternionf AxisAngle(float angle, const Eigen::Vector3f& axis) {
  return Eigen::Quaternionf(Eigen::AngleAxisf(angle, axis.normalized()));
}

// ---------------------------------------------------------------------------
// A limb: root -> upper (start) -> lower (mid) -> hand (end) -> finger, and a
// sibling "other" under the root that the solve must leave alone. The base
// layout is ozz's test limb: start at the origin, mid at +y with a quarter
// turn about z, end at (1, 1, 0); the mid joint's hinge axis is z.

constexpr int kRoot = 0;
constexpr int kStart = 1;
constexpr int kMid = 2;
constexpr int kEnd = 3;
constexpr int kFinger = 4;
constexpr int kOther = 5;

struct Limb {
  Skeleton skeleton;
  std::vector<Transform> local;
};

Limb MakeLimb(const Transform& root = Transform::Identity(),
              const Transform& mid = Trs({0, 1, 0},
                                         AxisAngle(kPi / 2, {0, 0, 1})),
              const Transform& end = Trs({0, -1, 0})) {
  SkeletonDesc desc;
  desc.joint_names = {"root", "upper", "lower", "hand", "finger", "other"};
  desc.parents = {kNoParent, kRoot, kStart, kMid, kEnd, kRoot};
  desc.rest_pose = {
      root, Trs({0, 0, 0}),     mid,
      end,  Trs({0.25f, 0, 0}), Trs({3, 2, 1}, AxisAngle(0.3f, {1, 2, 3}))};
  absl::StatusOr<Skeleton> skeleton = Skeleton::Create(std::move(desc));
  EXPECT_TRUE(skeleton.ok()) << skeleton.status();
  Limb limb{*std::move(skeleton), {}};
  limb.local = RestPose(limb.skeleton);
  return limb;
}

// Straight limb along +x: start at the origin, mid at x = 1, end at x = 2.
Limb MakeStraightLimb() {
  return MakeLimb(Transform::Identity(), Trs({1, 0, 0}), Trs({1, 0, 0}));
}

struct Solved {
  absl::Status status;
  std::vector<Transform> pose;
  TwoBoneIkResult result;
};

// Runs the job on `limb` with the given settings; start/mid/end and the spans
// are filled in here.
Solved Solve(const Limb& limb, TwoBoneIkJob job) {
  Solved out;
  out.pose.assign(limb.local.size(), Transform());
  job.skeleton = &limb.skeleton;
  job.input = limb.local;
  if (job.start_joint < 0) job.start_joint = kStart;
  if (job.mid_joint < 0) job.mid_joint = kMid;
  if (job.end_joint < 0) job.end_joint = kEnd;
  if (job.start_joint < limb.skeleton.num_joints()) {
    job.parent_model =
        ParentModelTransformOrRoot(limb.skeleton, limb.local, job.start_joint);
  }
  job.output = absl::MakeSpan(out.pose);
  job.result = &out.result;
  out.status = job.Run();
  return out;
}

// Model-space positions of the input pose, from the independent FK.
Eigen::Vector3d InputPos(const Limb& limb, int joint) {
  return Pos(Fk(limb.skeleton, limb.local)[joint]);
}

Eigen::Vector3f ToF(const Eigen::Vector3d& v) { return v.cast<float>(); }

// The parent transforms ozz's tests run under, plus a mirror and a non-unit
// uniform scale (TRS composition and 4x4 matrices agree for uniform scale).
std::vector<Transform> Parents() {
  return {
      Transform::Identity(),
      Trs({0, 1, 0}),
      Trs({0, 0, 0}, AxisAngle(kPi / 3, {1, 0, 0})),
      Trs({0, 0, 0}, Eigen::Quaternionf::Identity(), {2, 2, 2}),
      Trs({-0.5f, 2, 3}, AxisAngle(1.1f, {1, -2, 0.5f}), {0.3f, 0.3f, 0.3f}),
      Trs({1, 0, 0}, Eigen::Quaternionf::Identity(), {-3, -3, -3})};
}

// ---------------------------------------------------------------------------
// Reaching.

TEST(TwoBoneIkTest, TwoBoneIk_ReachableTargetsReachedWithBoneLengthsPreserved) {
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  for (const Transform& parent : Parents()) {
    SCOPED_TRACE(testing::Message() << "parent scale " << parent.scale.x());
    const Limb limb = MakeLimb(parent);
    const auto in = Fk(limb.skeleton, limb.local);
    const double l1 = (Pos(in[kMid]) - Pos(in[kStart])).norm();
    const double l2 = (Pos(in[kEnd]) - Pos(in[kMid])).norm();
    const double chain = l1 + l2;
    for (int i = 0; i < 50; ++i) {
      Eigen::Vector3d dir(unit(rng), unit(rng), unit(rng));
      if (dir.norm() < 0.1) continue;
      dir.normalize();
      // Strictly inside the reachable shell [|l1 - l2|, l1 + l2].
      const double dist =
          std::abs(l1 - l2) + 0.01 * chain + (0.98 * chain) * (i + 0.5) / 50.0;
      const Eigen::Vector3d target = Pos(in[kStart]) + dir * dist;
      Eigen::Vector3d pole(unit(rng), unit(rng), unit(rng));
      Solved s = Solve(limb, {.target = ToF(target), .pole_vector = ToF(pole)});
      ASSERT_TRUE(s.status.ok()) << s.status;
      const auto out = Fk(limb.skeleton, s.pose);
      const double err = (Pos(out[kEnd]) - target).norm();
      EXPECT_LE(err, 1e-4 * chain) << "target " << target.transpose();
      EXPECT_TRUE(s.result.reached);
      EXPECT_EQ(s.result.iterations, 1);
      EXPECT_NEAR(s.result.error, err, 1e-5 * chain);
      EXPECT_NEAR((Pos(out[kMid]) - Pos(out[kStart])).norm(), l1, 1e-5 * l1);
      EXPECT_NEAR((Pos(out[kEnd]) - Pos(out[kMid])).norm(), l2, 1e-5 * l2);
      EXPECT_NEAR((Pos(out[kFinger]) - Pos(out[kEnd])).norm(),
                  (Pos(in[kFinger]) - Pos(in[kEnd])).norm(), 1e-5);
      // Only the two rotations change; everything else is copied bit for bit.
      for (int j = 0; j < limb.skeleton.num_joints(); ++j) {
        EXPECT_TRUE(s.pose[j].translation == limb.local[j].translation);
        EXPECT_TRUE(s.pose[j].scale == limb.local[j].scale);
        if (j != kStart && j != kMid) {
          EXPECT_TRUE(s.pose[j] == limb.local[j]) << "joint " << j;
        }
      }
    }
  }
}

TEST(TwoBoneIkTest, TwoBoneIk_UnreachableTargetStraightensTowardTarget) {
  for (const Transform& parent : Parents()) {
    const Limb limb = MakeLimb(parent);
    const auto in = Fk(limb.skeleton, limb.local);
    const Eigen::Vector3d a = Pos(in[kStart]);
    const double l1 = (Pos(in[kMid]) - a).norm();
    const double l2 = (Pos(in[kEnd]) - Pos(in[kMid])).norm();
    for (const Eigen::Vector3d& dir :
         {Eigen::Vector3d(1, 0, 0), Eigen::Vector3d(0, -1, 0),
          Eigen::Vector3d(1, 2, 3).normalized(),
          Eigen::Vector3d(-1, 1, 0).normalized()}) {
      const Eigen::Vector3d target = a + dir * (l1 + l2) * 1.7;
      Solved s = Solve(limb, {.target = ToF(target)});
      ASSERT_TRUE(s.status.ok()) << s.status;
      const auto out = Fk(limb.skeleton, s.pose);
      EXPECT_LE((Pos(out[kMid]) - (a + dir * l1)).norm(), 1e-4 * (l1 + l2));
      EXPECT_LE((Pos(out[kEnd]) - (a + dir * (l1 + l2))).norm(),
                1e-4 * (l1 + l2));
      EXPECT_FALSE(s.result.reached);
      EXPECT_NEAR(s.result.error, 0.7 * (l1 + l2), 1e-4 * (l1 + l2));
    }
  }
}

TEST(TwoBoneIkTest, TwoBoneIk_ResultErrorMatchesForwardKinematics) {
  const Limb limb = MakeLimb();
  for (float x : {0.3f, 1.0f, 1.9f, 2.5f, 7.0f}) {
    Solved s = Solve(limb, {.target = {x, 0.4f, -0.2f}});
    ASSERT_TRUE(s.status.ok());
    const auto out = Fk(limb.skeleton, s.pose);
    EXPECT_NEAR(s.result.error,
                (Pos(out[kEnd]) - Eigen::Vector3d(x, 0.4, -0.2)).norm(), 1e-5);
  }
}

// ---------------------------------------------------------------------------
// Pole and bend goal.

// The mid joint lies in the plane through start, target and pole, on the
// pole's side of the start-to-target line.
void ExpectMidInPolePlane(const Eigen::Vector3d& a, const Eigen::Vector3d& t,
                          const Eigen::Vector3d& pole,
                          const Eigen::Vector3d& mid) {
  const Eigen::Vector3d axis = (t - a).normalized();
  const Eigen::Vector3d normal = axis.cross(pole).normalized();
  EXPECT_NEAR((mid - a).dot(normal), 0.0, 1e-4);
  const Eigen::Vector3d mid_off = (mid - a) - (mid - a).dot(axis) * axis;
  const Eigen::Vector3d pole_off = pole - pole.dot(axis) * axis;
  EXPECT_GT(mid_off.dot(pole_off), 0.0);
}

TEST(TwoBoneIkTest, TwoBoneIk_MidJointPointsAtPole) {
  std::mt19937 rng(99);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  for (const Transform& parent : Parents()) {
    const Limb limb = MakeLimb(parent);
    const Eigen::Vector3d a = InputPos(limb, kStart);
    const double scale = std::abs(parent.scale.x());
    for (int i = 0; i < 40; ++i) {
      const Eigen::Vector3d dir =
          Eigen::Vector3d(unit(rng), unit(rng), unit(rng)).normalized();
      const Eigen::Vector3d t = a + dir * (0.3 + 1.5 * (i % 10) / 10.0) * scale;
      const Eigen::Vector3d pole(unit(rng), unit(rng), unit(rng));
      if (pole.normalized().cross(dir).norm() < 0.1) continue;
      Solved s = Solve(limb, {.target = ToF(t), .pole_vector = ToF(pole)});
      ASSERT_TRUE(s.status.ok());
      const auto out = Fk(limb.skeleton, s.pose);
      ExpectMidInPolePlane(a, t, pole, Pos(out[kMid]));
    }
  }
}

TEST(TwoBoneIkTest, TwoBoneIk_OzzPoleCasesTurnTheStartJointAsExpected) {
  // ozz's Pole test: with target (1, 0, 1) and pole z the limb turns a
  // quarter turn about x, and so on; here checked on positions.
  const Limb limb = MakeLimb();
  struct Case {
    Eigen::Vector3f pole, target, mid;
  } cases[] = {
      {{0, 1, 0}, {1, 1, 0}, {0, 1, 0}},    {{0, 0, 1}, {1, 0, 1}, {0, 0, 1}},
      {{0, 0, -1}, {1, 0, -1}, {0, 0, -1}}, {{1, 0, 0}, {1, -1, 0}, {1, 0, 0}},
      {{-1, 0, 0}, {-1, 1, 0}, {-1, 0, 0}},
  };
  for (const Case& c : cases) {
    Solved s = Solve(limb, {.target = c.target, .pole_vector = c.pole});
    ASSERT_TRUE(s.status.ok());
    const auto out = Fk(limb.skeleton, s.pose);
    EXPECT_LE((Pos(out[kMid]) - c.mid.cast<double>()).norm(), 1e-5)
        << "pole " << c.pole.transpose();
    EXPECT_LE((Pos(out[kEnd]) - c.target.cast<double>()).norm(), 1e-5);
    // The mid joint keeps its bend: no hinge correction for these targets.
    EXPECT_LE(AngleBetween(s.pose[kMid].rotation.cast<double>(),
                           limb.local[kMid].rotation.cast<double>()),
              1e-3);
  }
}

TEST(TwoBoneIkTest, TwoBoneIk_BendGoalActsAsPoleFromStartJoint) {
  const Limb limb = MakeLimb(Trs({0.5f, -1, 2}, AxisAngle(0.7f, {0, 1, 1})));
  const Eigen::Vector3d a = InputPos(limb, kStart);
  const Eigen::Vector3d t = a + Eigen::Vector3d(0.8, 0.9, -0.3);
  const Eigen::Vector3d goal = a + Eigen::Vector3d(-2, 0.5, 4);
  Solved s = Solve(limb, {.target = ToF(t),
                          .pole_vector = {0, -1, 0},  // ignored
                          .bend_goal = ToF(goal)});
  ASSERT_TRUE(s.status.ok());
  const auto out = Fk(limb.skeleton, s.pose);
  EXPECT_LE((Pos(out[kEnd]) - t).norm(), 2e-4);
  ExpectMidInPolePlane(a, t, goal - a, Pos(out[kMid]));
}

TEST(TwoBoneIkTest, TwoBoneIk_PoleAlongTargetLineLeavesRollFree) {
  // ozz's PoleTargetAlignment: target straight along the pole; any roll is
  // a solution. The target is still reached and nothing is NaN.
  const Limb limb = MakeLimb();
  Solved s = Solve(
      limb, {.target = {0, std::sqrt(2.0f), 0}, .pole_vector = {0, 1, 0}});
  ASSERT_TRUE(s.status.ok());
  const auto out = Fk(limb.skeleton, s.pose);
  EXPECT_LE((Pos(out[kEnd]) - Eigen::Vector3d(0, std::sqrt(2.0), 0)).norm(),
            1e-5);
  EXPECT_TRUE(s.result.reached);
  // A zero pole vector is allowed too.
  s = Solve(limb, {.target = {0.5f, 1, 0.5f}, .pole_vector = {0, 0, 0}});
  ASSERT_TRUE(s.status.ok());
  EXPECT_TRUE(s.result.reached);
}

// ---------------------------------------------------------------------------
// Soften.

// ozz's soften curve, evaluated in double.
double SoftenedReach(double d, double chain, double soften) {
  const double da = soften * chain;
  const double ds = chain - da;
  if (!(ds > 0) || !(d > da)) return d;
  const double alpha = (d - da) / ds;
  return da + ds * (1.0 - std::pow(3.0, 4) / std::pow(alpha + 3.0, 4));
}

TEST(TwoBoneIkTest, TwoBoneIk_SoftenEasesTheReachAsOzzDefines) {
  const Limb limb = MakeLimb();  // chain length 2
  struct Case {
    float distance, soften;
    bool reached;
  } cases[] = {
      {2.0f, 1.0f, true},  {1.0f, 0.5f, true},  {0.8f, 0.5f, true},
      {1.2f, 0.5f, false}, {1.2f, 0.0f, false}, {2.0f, 0.5f, false},
      {3.0f, 1.0f, false}, {1.9f, 0.9f, false}, {5.0f, 0.5f, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::Message()
                 << "distance " << c.distance << " soften " << c.soften);
    const Eigen::Vector3d t(c.distance, 0, 0);
    Solved s = Solve(limb, {.target = ToF(t), .soften = c.soften});
    ASSERT_TRUE(s.status.ok());
    const auto out = Fk(limb.skeleton, s.pose);
    const Eigen::Vector3d end = Pos(out[kEnd]);
    // The end lies on the start-to-target line at the softened distance.
    const double expected =
        std::min(SoftenedReach(c.distance, 2.0, c.soften), 2.0);
    EXPECT_NEAR(end.norm(), expected, 1e-5);
    EXPECT_LE(end.normalized().cross(Eigen::Vector3d::UnitX()).norm(), 1e-5);
    EXPECT_EQ(s.result.reached, c.reached);
    if (c.soften < 1.0f) {
      EXPECT_LT(end.norm(), 2.0 - 1e-4);
    }
  }
}

TEST(TwoBoneIkTest, TwoBoneIk_SoftenedReachGrowsWithDistanceAndNeverSnaps) {
  const Limb limb = MakeLimb();
  double previous = 0.0;
  for (int i = 1; i <= 60; ++i) {
    const float d = 0.05f * i;
    Solved s = Solve(limb, {.target = {0, d, 0}, .soften = 0.7f});
    ASSERT_TRUE(s.status.ok());
    const double reach = Pos(Fk(limb.skeleton, s.pose)[kEnd]).norm();
    EXPECT_GT(reach, previous);
    EXPECT_LT(reach, 2.0);
    previous = reach;
  }
}

// ---------------------------------------------------------------------------
// Twist.

TEST(TwoBoneIkTest, TwoBoneIk_TwistRollsTheLimbAboutStartToTarget) {
  const Limb limb = MakeLimb(Trs({1, 2, 3}, AxisAngle(0.4f, {1, 1, 0})));
  const Eigen::Vector3d a = InputPos(limb, kStart);
  const Eigen::Vector3d t = a + Eigen::Vector3d(0.6, 1.0, 0.4);
  Solved base = Solve(limb, {.target = ToF(t), .pole_vector = {0, 0, 1}});
  ASSERT_TRUE(base.status.ok());
  const Eigen::Vector3d mid0 = Pos(Fk(limb.skeleton, base.pose)[kMid]);
  for (double twist : {kPi / 2, kPi, -kPi / 3, 2 * kPi}) {
    Solved s = Solve(limb, {.target = ToF(t),
                            .pole_vector = {0, 0, 1},
                            .twist_angle = static_cast<float>(twist)});
    ASSERT_TRUE(s.status.ok());
    const auto out = Fk(limb.skeleton, s.pose);
    EXPECT_LE((Pos(out[kEnd]) - t).norm(), 1e-4);
    const Eigen::Vector3d expected =
        a + Eigen::AngleAxisd(twist, (t - a).normalized()) * (mid0 - a);
    EXPECT_LE((Pos(out[kMid]) - expected).norm(), 1e-4) << "twist " << twist;
  }
}

// ---------------------------------------------------------------------------
// Weight.

TEST(TwoBoneIkTest, TwoBoneIk_WeightZeroReturnsInputBitForBit) {
  const Limb limb = MakeLimb(Trs({1, 0, 0}, AxisAngle(0.3f, {0, 1, 0})));
  Solved s = Solve(limb, {.target = {2, 0, 0}, .weight = 0.0f});
  ASSERT_TRUE(s.status.ok());
  EXPECT_TRUE(BitEqual(s.pose, limb.local));
  EXPECT_EQ(s.result.iterations, 0);
  EXPECT_FALSE(s.result.reached);
  // Also in place, with stretch and an end rotation that weight 0 disables.
  std::vector<Transform> pose = limb.local;
  TwoBoneIkJob job{
      .skeleton = &limb.skeleton,
      .input = pose,
      .parent_model = ParentModelTransformOrRoot(limb.skeleton, pose, kStart),
      .start_joint = kStart,
      .mid_joint = kMid,
      .end_joint = kEnd,
      .target = {5, 5, 5},
      .end_rotation = AxisAngle(1.0f, {1, 0, 0}),
      .weight = 0.0f,
      .stretch = true,
      .max_stretch = 3.0f,
      .output = absl::MakeSpan(pose)};
  ASSERT_TRUE(job.Run().ok());
  EXPECT_TRUE(BitEqual(pose, limb.local));
}

TEST(TwoBoneIkTest, TwoBoneIk_WeightIsClampedToZeroOne) {
  const Limb limb = MakeLimb();
  const Eigen::Vector3f t(2, 0, 0);
  Solved one = Solve(limb, {.target = t, .weight = 1.0f});
  Solved more = Solve(limb, {.target = t, .weight = 1.1f});
  Solved zero = Solve(limb, {.target = t, .weight = 0.0f});
  Solved less = Solve(limb, {.target = t, .weight = -0.1f});
  ASSERT_TRUE(one.status.ok() && more.status.ok() && zero.status.ok() &&
              less.status.ok());
  EXPECT_TRUE(BitEqual(one.pose, more.pose));
  EXPECT_TRUE(BitEqual(zero.pose, less.pose));
  EXPECT_TRUE(BitEqual(less.pose, limb.local));
  EXPECT_TRUE(one.result.reached);
  EXPECT_FALSE(less.result.reached);
}

TEST(TwoBoneIkTest, TwoBoneIk_HalfWeightTurnsHalfway) {
  // ozz's Weight case: target (2, 0, 0) needs -90 degrees about z at the
  // start and +90 at the mid joint; half weight gives half of each.
  const Limb limb = MakeLimb();
  Solved s = Solve(limb, {.target = {2, 0, 0}, .weight = 0.5f});
  ASSERT_TRUE(s.status.ok());
  const Eigen::Quaterniond start_expected(
      Eigen::AngleAxisd(-kPi / 4, Eigen::Vector3d::UnitZ()));
  const Eigen::Quaterniond mid_expected =
      limb.local[kMid].rotation.cast<double>() *
      Eigen::Quaterniond(Eigen::AngleAxisd(kPi / 4, Eigen::Vector3d::UnitZ()));
  EXPECT_LE(
      AngleBetween(s.pose[kStart].rotation.cast<double>(), start_expected),
      1e-5);
  EXPECT_LE(AngleBetween(s.pose[kMid].rotation.cast<double>(), mid_expected),
            1e-5);
  EXPECT_FALSE(s.result.reached);
  const auto out = Fk(limb.skeleton, s.pose);
  EXPECT_NEAR(s.result.error,
              (Pos(out[kEnd]) - Eigen::Vector3d(2, 0, 0)).norm(), 1e-5);
}

// ---------------------------------------------------------------------------
// Mid axis.

TEST(TwoBoneIkTest, TwoBoneIk_NegativeMidAxisBendsTheJointTheOtherWay) {
  const Limb limb = MakeLimb();
  const Eigen::Vector3d t(1, 1, 0);
  for (float sign : {1.0f, -1.0f}) {
    SCOPED_TRACE(testing::Message() << "sign " << sign);
    const Eigen::Vector3f axis(0, 0, sign);
    Solved s = Solve(limb, {.target = ToF(t), .mid_axis = axis});
    ASSERT_TRUE(s.status.ok());
    const auto out = Fk(limb.skeleton, s.pose);
    // Same positions either way: the pole decides where the mid joint goes.
    EXPECT_LE((Pos(out[kEnd]) - t).norm(), 1e-5);
    EXPECT_LE((Pos(out[kMid]) - Eigen::Vector3d(0, 1, 0)).norm(), 1e-5);
    // ...but a small positive turn about mid_axis must open the limb.
    std::vector<Transform> nudged = s.pose;
    nudged[kMid].rotation = s.pose[kMid].rotation * AxisAngle(0.01f, axis);
    const auto after = Fk(limb.skeleton, nudged);
    EXPECT_GT((Pos(after[kEnd]) - Pos(after[kStart])).norm(),
              (Pos(out[kEnd]) - Pos(out[kStart])).norm());
  }
  // ozz's exact answer for the negative axis: a half turn about y at the
  // start and about z at the mid joint.
  Solved neg = Solve(limb, {.target = ToF(t), .mid_axis = {{0, 0, -1}}});
  EXPECT_LE(AngleBetween(neg.pose[kStart].rotation.cast<double>(),
                         Eigen::Quaterniond(
                             Eigen::AngleAxisd(kPi, Eigen::Vector3d::UnitY()))),
            1e-3);
  EXPECT_LE(AngleBetween(neg.pose[kMid].rotation.cast<double>(),
                         limb.local[kMid].rotation.cast<double>() *
                             Eigen::Quaterniond(Eigen::AngleAxisd(
                                 kPi, Eigen::Vector3d::UnitZ()))),
            1e-3);
}

TEST(TwoBoneIkTest, TwoBoneIk_TiltedMidAxisStillReachesExactly) {
  // The hinge equation is solved for the axis as given, so an axis that is
  // not perpendicular to the limb's plane still reaches every distance the
  // hinge can produce. Here the axis (sin t, 0, cos t) in the mid joint's
  // space is (0, sin t, cos t) in model space; bone 2 = (1, 0, 0) sweeps a
  // circle about it, and start-to-mid = (0, 1, 0) gives |start - end|^2 =
  // 2 + 2 cos t cos(phi'): reachable distances are [sqrt(2 - 2 cos t),
  // sqrt(2 + 2 cos t)]. Beyond them the end stops at the nearest one.
  const Limb limb = MakeLimb();
  for (double tilt : {0.2, 0.6, 1.0}) {
    const Eigen::Vector3f axis(std::sin(tilt), 0, std::cos(tilt));
    const double d_min = std::sqrt(2 - 2 * std::cos(tilt));
    const double d_max = std::sqrt(2 + 2 * std::cos(tilt));
    for (const Eigen::Vector3d& dir :
         {Eigen::Vector3d(1, 0.2, 0).normalized(),
          Eigen::Vector3d(0.3, 0.4, 0.2).normalized(),
          Eigen::Vector3d(-1, 0.5, 2).normalized()}) {
      for (double f : {0.05, 0.5, 0.95}) {
        const Eigen::Vector3d t = dir * (d_min + f * (d_max - d_min));
        Solved s = Solve(limb, {.target = ToF(t), .mid_axis = axis});
        ASSERT_TRUE(s.status.ok());
        const auto out = Fk(limb.skeleton, s.pose);
        EXPECT_LE((Pos(out[kEnd]) - t).norm(), 1e-4) << "tilt " << tilt;
        EXPECT_TRUE(s.result.reached);
        EXPECT_NEAR((Pos(out[kMid]) - Pos(out[kStart])).norm(), 1.0, 1e-5);
        EXPECT_NEAR((Pos(out[kEnd]) - Pos(out[kMid])).norm(), 1.0, 1e-5);
        // The mid joint turned about the given axis only.
        const Eigen::Quaterniond delta =
            limb.local[kMid].rotation.cast<double>().conjugate() *
            s.pose[kMid].rotation.cast<double>();
        if (delta.vec().norm() > 1e-4) {
          EXPECT_LE(delta.vec().normalized().cross(axis.cast<double>()).norm(),
                    1e-3);
        }
      }
      // Too close for this hinge: the end stops at the nearest distance.
      const Eigen::Vector3d t = dir * (0.5 * d_min);
      Solved s = Solve(limb, {.target = ToF(t), .mid_axis = axis});
      ASSERT_TRUE(s.status.ok());
      const auto out = Fk(limb.skeleton, s.pose);
      EXPECT_FALSE(s.result.reached);
      EXPECT_NEAR(Pos(out[kEnd]).norm(), d_min, 1e-4);
      EXPECT_NEAR(s.result.error, 0.5 * d_min, 1e-4);
    }
  }
}

// ---------------------------------------------------------------------------
// Mid axis unset: the hinge from the pose.

// The opening hinge of the input pose's bend in the mid joint's space, by the
// independent FK: (end - mid) x (mid - start), in the mid joint's frame.
Eigen::Vector3f PoseHinge(const Limb& limb) {
  const auto in = Fk(limb.skeleton, limb.local);
  const Eigen::Vector3d n = (Pos(in[kEnd]) - Pos(in[kMid]))
                                .cross(Pos(in[kMid]) - Pos(in[kStart]))
                                .normalized();
  return (ModelRotation(in[kMid]).conjugate() * n).cast<float>();
}

// Solved twice, with mid_axis unset and set to `axis`: the same pose up to
// rounding.
void ExpectSameAsExplicit(const Limb& limb, TwoBoneIkJob job,
                          const Eigen::Vector3f& axis) {
  Solved derived = Solve(limb, job);
  job.mid_axis = axis;
  Solved given = Solve(limb, job);
  ASSERT_TRUE(derived.status.ok() && given.status.ok());
  EXPECT_EQ(given.result.hinge, TwoBoneIkHinge::kMidAxis);
  for (int j : {kStart, kMid}) {
    EXPECT_LE(AngleBetween(derived.pose[j].rotation.cast<double>(),
                           given.pose[j].rotation.cast<double>()),
              1e-5)
        << "joint " << j;
  }
}

// A limb bent 5 degrees about an axis that is neither of the mid joint's
// frame axes, and whose mid frame is turned: (0, 0, 1) is far from its
// hinge.
Limb MakeNearlyStraightTiltedLimb() {
  // The mid frame turned about 80 degrees about x: its z nearly along the
  // bones.
  const Eigen::Quaternionf turn = AxisAngle(1.4f, {1, 0.1f, 0.2f});
  const Eigen::Vector3f hinge = Eigen::Vector3f(0.3f, 0.1f, 1).normalized();
  // Bone 2, (0, 1.2, 0) in the start frame, bent 5 degrees about `hinge`
  // (perpendicular to it after the bend), expressed in the turned mid frame.
  const Eigen::Vector3f along(0, 1, 0);
  const Eigen::Vector3f perp = (along - hinge * hinge.dot(along)).normalized();
  const Eigen::Vector3f bone2 = AxisAngle(-0.087f, hinge) * perp * 1.2f;
  return MakeLimb(Trs({0.5f, 1, -2}, AxisAngle(-0.4f, {0, 1, 1})),
                  Trs(perp, turn), Trs(turn.conjugate() * bone2));
}

TEST(TwoBoneIkTest, TwoBoneIk_UnsetMidAxisIsTheNormalOfTheBendPlane) {
  for (const Limb& limb : {MakeLimb(), MakeNearlyStraightTiltedLimb()}) {
    const Eigen::Vector3f hinge = PoseHinge(limb);
    const Eigen::Vector3d a = InputPos(limb, kStart);
    for (const Eigen::Vector3d& dir :
         {Eigen::Vector3d(1, 0.2, 0).normalized(),
          Eigen::Vector3d(-0.3, 0.4, 2).normalized(),
          Eigen::Vector3d(0, -1, 0)}) {
      for (double f : {0.2, 0.6, 0.95, 0.9999, 1.0}) {
        const double length = 1.0 + limb.local[kEnd].translation.norm();
        const Eigen::Vector3d t = a + dir * (f * length);
        Solved s = Solve(limb, {.target = ToF(t)});
        ASSERT_TRUE(s.status.ok());
        EXPECT_EQ(s.result.hinge, TwoBoneIkHinge::kPoseBend);
        EXPECT_TRUE(s.result.reached) << f;
        const auto out = Fk(limb.skeleton, s.pose);
        EXPECT_LE((Pos(out[kEnd]) - t).norm(), 1e-4 * length) << f;
        // Still bent the way it was: the opening axis the mid joint carries
        // is the new bend's normal, not its opposite.
        const Eigen::Vector3d b1 = Pos(out[kMid]) - Pos(out[kStart]);
        const Eigen::Vector3d b2 = Pos(out[kEnd]) - Pos(out[kMid]);
        if (f < 0.99) {
          EXPECT_GT(b2.cross(b1).normalized().dot(ModelRotation(out[kMid]) *
                                                  hinge.cast<double>()),
                    0.999)
              << f;
        }
        ExpectSameAsExplicit(limb, {.target = ToF(t)}, hinge);
      }
    }
  }
}

TEST(TwoBoneIkTest, TwoBoneIk_OldDefaultAxisLeavesNearlyStraightLimbsBent) {
  // What the derived hinge fixes: with (0, 0, 1), which is not this limb's
  // hinge, the limb cannot straighten, and a target near full reach is
  // missed.
  const Limb limb = MakeNearlyStraightTiltedLimb();
  const Eigen::Vector3d a = InputPos(limb, kStart);
  const Eigen::Vector3d t = a + Eigen::Vector3d(0, -1, 0) * 2.2;  // straight
  Solved old = Solve(limb, {.target = ToF(t), .mid_axis = {{0, 0, 1}}});
  EXPECT_FALSE(old.result.reached);
  EXPECT_GT(old.result.error, 1e-3);
  Solved now = Solve(limb, {.target = ToF(t)});
  EXPECT_TRUE(now.result.reached);
  EXPECT_LE(now.result.error, 1e-5);
}

TEST(TwoBoneIkTest, TwoBoneIk_UnsetMidAxisOfAStraightLimbBendsTowardThePole) {
  const Limb limb = MakeStraightLimb();  // along +x
  for (const Eigen::Vector3f& pole :
       {Eigen::Vector3f(0, 0, 1), Eigen::Vector3f(0.5f, -1, 0)}) {
    Solved s = Solve(limb, {.target = {1.2f, 0, 0}, .pole_vector = pole});
    ASSERT_TRUE(s.status.ok());
    EXPECT_EQ(s.result.hinge, TwoBoneIkHinge::kPole);
    const auto out = Fk(limb.skeleton, s.pose);
    const Eigen::Vector3d side =
        Eigen::Vector3d(0, pole.y(), pole.z()).normalized();
    EXPECT_LE((Pos(out[kEnd]) - Eigen::Vector3d(1.2, 0, 0)).norm(), 1e-5);
    EXPECT_LE(
        (Pos(out[kMid]) - (Eigen::Vector3d(0.6, 0, 0) + 0.8 * side)).norm(),
        1e-5);
  }
  // A bend goal is a pole from the start joint.
  Solved s = Solve(limb, {.target = {1.2f, 0, 0}, .bend_goal = {{5, 0, -3}}});
  EXPECT_EQ(s.result.hinge, TwoBoneIkHinge::kPole);
  const auto out = Fk(limb.skeleton, s.pose);
  EXPECT_NEAR(Pos(out[kMid]).z(), -0.8, 1e-5);
}

TEST(TwoBoneIkTest, TwoBoneIk_UnsetMidAxisOfAStraightLimbFallsBackToRestPose) {
  // Rest pose bent a quarter turn about the mid joint's x; the current pose
  // straight along +y, so the default pole (0, 1, 0) lies along the limb and
  // gives no plane.
  Limb limb = MakeLimb(Transform::Identity(),
                       Trs({0, 1, 0}, AxisAngle(kPi / 2, {1, 0, 0})));
  limb.local[kMid].rotation = AxisAngle(kPi, {1, 0, 0});
  ASSERT_LE((InputPos(limb, kEnd) - Eigen::Vector3d(0, 2, 0)).norm(), 1e-6);
  Solved s = Solve(limb, {.target = {0, 1.2f, 0}});
  ASSERT_TRUE(s.status.ok());
  EXPECT_EQ(s.result.hinge, TwoBoneIkHinge::kRestPose);
  const auto out = Fk(limb.skeleton, s.pose);
  EXPECT_LE((Pos(out[kEnd]) - Eigen::Vector3d(0, 1.2, 0)).norm(), 1e-5);
  // The rest pose's knee points to +z; so does the solved one.
  EXPECT_NEAR(Pos(out[kMid]).z(), 0.8, 1e-5);
  ExpectSameAsExplicit(limb, {.target = {0, 1.2f, 0}}, {1, 0, 0});
}

TEST(TwoBoneIkTest, TwoBoneIk_UnsetMidAxisWithNoPlaneAnywhereIsTheOldDefault) {
  // Straight now, straight at rest, the pole along the limb: (0, 0, 1), bit
  // for bit, and the result says so.
  const Limb limb = MakeStraightLimb();
  for (const Eigen::Vector3f& pole :
       {Eigen::Vector3f(1, 0, 0), Eigen::Vector3f(0, 0, 0)}) {
    Solved derived =
        Solve(limb, {.target = {1.2f, 0.3f, 0.1f}, .pole_vector = pole});
    Solved given = Solve(limb, {.target = {1.2f, 0.3f, 0.1f},
                                .pole_vector = pole,
                                .mid_axis = {{0, 0, 1}}});
    ASSERT_TRUE(derived.status.ok());
    EXPECT_EQ(derived.result.hinge, TwoBoneIkHinge::kDefault);
    EXPECT_TRUE(BitEqual(derived.pose, given.pose));
    EXPECT_TRUE(derived.result.reached);
  }
  // Nothing solved at weight 0.
  Solved none = Solve(limb, {.target = {1.2f, 0, 0}, .weight = 0.0f});
  EXPECT_EQ(none.result.hinge, TwoBoneIkHinge::kNotSolved);
}

// ---------------------------------------------------------------------------
// Degenerate geometry.

TEST(TwoBoneIkTest, TwoBoneIk_AlignedJointsAndTarget) {
  const Limb limb = MakeStraightLimb();
  // Reachable at full extension: nothing to change.
  Solved s = Solve(limb, {.target = {2, 0, 0}});
  ASSERT_TRUE(s.status.ok());
  EXPECT_TRUE(s.result.reached);
  EXPECT_LE(AngleBetween(s.pose[kStart].rotation.cast<double>(),
                         Eigen::Quaterniond::Identity()),
            1e-6);
  EXPECT_LE(AngleBetween(s.pose[kMid].rotation.cast<double>(),
                         Eigen::Quaterniond::Identity()),
            1e-6);
  // Unreachable along the limb: still straight, not reached.
  s = Solve(limb, {.target = {3, 0, 0}});
  ASSERT_TRUE(s.status.ok());
  EXPECT_FALSE(s.result.reached);
  EXPECT_NEAR(s.result.error, 1.0, 1e-6);
  EXPECT_LE(AngleBetween(s.pose[kMid].rotation.cast<double>(),
                         Eigen::Quaterniond::Identity()),
            1e-6);
  // A closer target on the line bends the straight limb about the mid axis,
  // toward the pole.
  s = Solve(limb, {.target = {1.2f, 0, 0}, .pole_vector = {0, 1, 0}});
  ASSERT_TRUE(s.status.ok());
  const auto out = Fk(limb.skeleton, s.pose);
  EXPECT_LE((Pos(out[kEnd]) - Eigen::Vector3d(1.2, 0, 0)).norm(), 1e-5);
  EXPECT_NEAR(Pos(out[kMid]).x(), 0.6, 1e-5);
  EXPECT_NEAR(Pos(out[kMid]).y(), 0.8, 1e-5);
}

TEST(TwoBoneIkTest, TwoBoneIk_ReachableMidAxisCaseOfAlignedJoints) {
  // ozz's MidAxis "aligned joints": start (0,0,0), mid (0,1,0), end (0,2,0)
  // with mid rotated a quarter turn about z; target (1,1,0): start stays,
  // mid turns -90 degrees about z.
  const Limb limb =
      MakeLimb(Transform::Identity(),
               Trs({0, 1, 0}, AxisAngle(kPi / 2, {0, 0, 1})), Trs({1, 0, 0}));
  Solved s = Solve(limb, {.target = {1, 1, 0}});
  ASSERT_TRUE(s.status.ok());
  EXPECT_TRUE(s.result.reached);
  EXPECT_LE(AngleBetween(s.pose[kStart].rotation.cast<double>(),
                         Eigen::Quaterniond::Identity()),
            1e-5);
  EXPECT_LE(AngleBetween(s.pose[kMid].rotation.cast<double>(),
                         limb.local[kMid].rotation.cast<double>() *
                             Eigen::Quaterniond(Eigen::AngleAxisd(
                                 -kPi / 2, Eigen::Vector3d::UnitZ()))),
            1e-5);
}

TEST(TwoBoneIkTest, TwoBoneIk_CollinearChainWithTargetBehind) {
  // The swing is a from-to rotation between opposite directions.
  const Limb limb = MakeStraightLimb();
  for (float x : {-2.0f, -3.0f, -1.0f}) {
    Solved s = Solve(limb, {.target = {x, 0, 0}, .pole_vector = {0, 1, 0}});
    ASSERT_TRUE(s.status.ok());
    const auto out = Fk(limb.skeleton, s.pose);
    for (const auto& m : out) ASSERT_TRUE(m.allFinite());
    EXPECT_NEAR((Pos(out[kMid]) - Pos(out[kStart])).norm(), 1.0, 1e-5);
    EXPECT_NEAR((Pos(out[kEnd]) - Pos(out[kMid])).norm(), 1.0, 1e-5);
    if (x >= -2.0f) {
      EXPECT_LE((Pos(out[kEnd]) - Eigen::Vector3d(x, 0, 0)).norm(), 1e-5);
      EXPECT_TRUE(s.result.reached);
    } else {
      EXPECT_LE((Pos(out[kEnd]) - Eigen::Vector3d(-2, 0, 0)).norm(), 1e-5);
    }
    if (x == -1.0f) {
      EXPECT_GT(Pos(out[kMid]).y(), 0.5);  // toward the pole
    }
  }
}

TEST(TwoBoneIkTest, TwoBoneIk_TargetOnStartJointFoldsTheLimb) {
  // Zero-length start-to-target (the target on the chain's root): the start
  // joint keeps its rotation, the mid joint folds as far as the bones allow.
  const Limb equal = MakeLimb();
  Solved s = Solve(equal, {.target = {0, 0, 0}});
  ASSERT_TRUE(s.status.ok());
  EXPECT_TRUE(s.pose[kStart] == equal.local[kStart]);
  auto out = Fk(equal.skeleton, s.pose);
  EXPECT_LE(Pos(out[kEnd]).norm(), 1e-5);
  EXPECT_TRUE(s.result.reached);
  // ozz: the mid joint is bent -90 degrees about z to reach the start.
  EXPECT_LE(AngleBetween(s.pose[kMid].rotation.cast<double>(),
                         equal.local[kMid].rotation.cast<double>() *
                             Eigen::Quaterniond(Eigen::AngleAxisd(
                                 -kPi / 2, Eigen::Vector3d::UnitZ()))),
            1e-5);

  const Limb unequal = MakeLimb(Transform::Identity(),
                                Trs({0, 1, 0}, AxisAngle(kPi / 2, {0, 0, 1})),
                                Trs({0, -0.4f, 0}));
  s = Solve(unequal, {.target = {0, 0, 0}});
  ASSERT_TRUE(s.status.ok());
  out = Fk(unequal.skeleton, s.pose);
  EXPECT_NEAR(Pos(out[kEnd]).norm(), 0.6, 1e-5);
  EXPECT_FALSE(s.result.reached);
  EXPECT_NEAR(s.result.error, 0.6, 1e-5);
}

TEST(TwoBoneIkTest, TwoBoneIk_TargetOnSkeletonRootIsReached) {
  // The skeleton's root joint sits 0.5 from the start joint, well inside the
  // limb's reach: an ordinary target, reached with the bones intact.
  Limb limb = MakeLimb(Trs({1, 2, 3}, AxisAngle(0.5f, {0, 1, 0})));
  limb.local[kStart].translation = {0.3f, 0.4f, 0};
  const Eigen::Vector3d root = InputPos(limb, kRoot);
  Solved s = Solve(limb, {.target = ToF(root)});
  ASSERT_TRUE(s.status.ok());
  const auto out = Fk(limb.skeleton, s.pose);
  EXPECT_LE((Pos(out[kEnd]) - root).norm(), 2e-4);
  EXPECT_TRUE(s.result.reached);
  EXPECT_NEAR((Pos(out[kMid]) - Pos(out[kStart])).norm(), 1.0, 1e-5);
  EXPECT_NEAR((Pos(out[kEnd]) - Pos(out[kMid])).norm(), 1.0, 1e-5);
}

TEST(TwoBoneIkTest, TwoBoneIk_AllZeroLengthChainIsLeftAlone) {
  const Limb limb =
      MakeLimb(Transform::Identity(), Trs({0, 0, 0}), Trs({0, 0, 0}));
  Solved s = Solve(limb, {.target = {1, 0, 0}});
  ASSERT_TRUE(s.status.ok());
  // Nothing is defined: the rotations stay (equal, up to the sign of zero).
  EXPECT_TRUE(s.pose[kStart] == limb.local[kStart]);
  EXPECT_TRUE(s.pose[kMid] == limb.local[kMid]);
  for (const Transform& t : s.pose) EXPECT_TRUE(IsFinite(t));
  EXPECT_FALSE(s.result.reached);
  EXPECT_NEAR(s.result.error, 1.0, 1e-6);
}

TEST(TwoBoneIkTest, TwoBoneIk_ZeroScaleIsFiniteAndLeavesTheChain) {
  // A zero scale on the start joint collapses the limb onto it: nothing can
  // be solved, the rotations stay and the output is finite.
  Limb limb = MakeLimb();
  limb.local[kStart].scale = Eigen::Vector3f::Zero();
  Solved s = Solve(limb, {.target = {1, 1, 0}});
  ASSERT_TRUE(s.status.ok()) << s.status;
  for (const Transform& t : s.pose) EXPECT_TRUE(IsFinite(t));
  EXPECT_LE(AngleBetween(s.pose[kStart].rotation.cast<double>(),
                         limb.local[kStart].rotation.cast<double>()),
            1e-6);
  EXPECT_LE(AngleBetween(s.pose[kMid].rotation.cast<double>(),
                         limb.local[kMid].rotation.cast<double>()),
            1e-6);
  EXPECT_FALSE(s.result.reached);

  // A zero scale on the mid joint collapses bone 2: the start joint still
  // points bone 1 at the target.
  limb = MakeLimb();
  limb.local[kMid].scale = Eigen::Vector3f::Zero();
  s = Solve(limb, {.target = {3, 4, 0}});
  ASSERT_TRUE(s.status.ok()) << s.status;
  const auto out = Fk(limb.skeleton, s.pose);
  EXPECT_LE((Pos(out[kMid]) - Eigen::Vector3d(0.6, 0.8, 0)).norm(), 1e-5);
  for (const Transform& t : s.pose) EXPECT_TRUE(IsFinite(t));
}

// Bones near float's limit: the distance to the target overflows, and so
// may the chain's length times the tolerance; such an error (inf) is never
// "reached", whatever the weight or stretch. The pose stays finite.
TEST(TwoBoneIkTest, TwoBoneIk_AnErrorThatOverflowsIsNeverReached) {
  Limb limb = MakeLimb();
  // Both bones 3e38 long: the chain's length itself overflows.
  limb.local[kMid].translation = Eigen::Vector3f(0, 3e38f, 0);
  limb.local[kEnd].translation = Eigen::Vector3f(3e38f, 0, 0);
  for (float weight : {0.0f, 1.0f}) {
    for (bool stretch : {false, true}) {
      SCOPED_TRACE(absl::StrCat("weight ", weight, " stretch ", stretch));
      const Solved s = Solve(limb, {.target = {3e38f, 3e38f, 0},
                                    .weight = weight,
                                    .stretch = stretch,
                                    .max_stretch = 4.0f});
      ASSERT_TRUE(s.status.ok()) << s.status;
      EXPECT_FALSE(std::isfinite(s.result.error)) << s.result.error;
      EXPECT_FALSE(s.result.reached);
    }
  }
}

// ---------------------------------------------------------------------------
// Stretch, end rotation, intermediate joints.

TEST(TwoBoneIkTest, TwoBoneIk_StretchLengthensBonesUpToTheLimit) {
  const Limb limb = MakeLimb(Trs({0, 0, 0}, AxisAngle(0.5f, {0, 0, 1})));
  const Eigen::Vector3d a = InputPos(limb, kStart);
  const Eigen::Vector3d dir = Eigen::Vector3d(1, 2, 2).normalized();
  const Eigen::Vector3d t = a + dir * 3.0;  // 1.5 x the chain length
  Solved s =
      Solve(limb, {.target = ToF(t), .stretch = true, .max_stretch = 2.0f});
  ASSERT_TRUE(s.status.ok());
  auto out = Fk(limb.skeleton, s.pose);
  EXPECT_LE((Pos(out[kEnd]) - t).norm(), 1e-4);
  EXPECT_TRUE(s.result.reached);
  EXPECT_NEAR(s.result.stretch, 1.5, 1e-5);
  EXPECT_NEAR((Pos(out[kMid]) - Pos(out[kStart])).norm(), 1.5, 1e-5);
  EXPECT_NEAR((Pos(out[kEnd]) - Pos(out[kMid])).norm(), 1.5, 1e-5);
  // The finger below the end joint is not part of the chain: not stretched.
  EXPECT_TRUE(s.pose[kFinger] == limb.local[kFinger]);

  s = Solve(limb, {.target = ToF(t), .stretch = true, .max_stretch = 1.2f});
  ASSERT_TRUE(s.status.ok());
  out = Fk(limb.skeleton, s.pose);
  EXPECT_FALSE(s.result.reached);
  EXPECT_NEAR(s.result.error, 3.0 - 2.4, 1e-5);
  EXPECT_LE((Pos(out[kEnd]) - (a + dir * 2.4)).norm(), 1e-4);

  // Within reach no stretching happens.
  s = Solve(limb,
            {.target = ToF(a + dir), .stretch = true, .max_stretch = 2.0f});
  ASSERT_TRUE(s.status.ok());
  EXPECT_EQ(s.result.stretch, 1.0f);
  EXPECT_TRUE(s.pose[kMid].translation == limb.local[kMid].translation);
}

TEST(TwoBoneIkTest, TwoBoneIk_EndRotationTargetIsMetAndBlended) {
  const Limb limb = MakeLimb(Trs({0, 0, 1}, AxisAngle(0.9f, {1, 1, 1})));
  const Eigen::Vector3d t = InputPos(limb, kStart) + Eigen::Vector3d(1, 0.5, 0);
  const Eigen::Quaternionf goal = AxisAngle(2.0f, {0.3f, -1, 0.2f});
  Solved s = Solve(limb, {.target = ToF(t), .end_rotation = goal});
  ASSERT_TRUE(s.status.ok());
  auto out = Fk(limb.skeleton, s.pose);
  EXPECT_LE(AngleBetween(ModelRotation(out[kEnd]), goal.cast<double>()), 1e-5);
  EXPECT_LE((Pos(out[kEnd]) - t).norm(), 1e-4);

  // Half weight: halfway between the solved-only rotation and the goal.
  Solved plain = Solve(limb, {.target = ToF(t)});
  const Eigen::Quaterniond free =
      ModelRotation(Fk(limb.skeleton, plain.pose)[kEnd]);
  s = Solve(
      limb,
      {.target = ToF(t), .end_rotation = goal, .end_rotation_weight = 0.5f});
  out = Fk(limb.skeleton, s.pose);
  const double full = AngleBetween(free, goal.cast<double>());
  EXPECT_NEAR(AngleBetween(ModelRotation(out[kEnd]), free), full / 2, 1e-4);
  EXPECT_NEAR(AngleBetween(ModelRotation(out[kEnd]), goal.cast<double>()),
              full / 2, 1e-4);
}

TEST(TwoBoneIkTest, TwoBoneIk_IntermediateTwistJointIsCarriedAlong) {
  // upper -> twist -> lower -> hand: the twist joint sits between start and
  // mid and keeps its local transform.
  SkeletonDesc desc;
  desc.joint_names = {"upper", "twist", "lower", "hand"};
  desc.parents = {kNoParent, 0, 1, 2};
  desc.rest_pose = {
      Trs({0, 0, 0}), Trs({0, 0.5f, 0}, AxisAngle(0.7f, {0, 1, 0})),
      Trs({0, 0.5f, 0}, AxisAngle(0.4f, {0, 0, 1})), Trs({0, 0.8f, 0})};
  absl::StatusOr<Skeleton> skel = Skeleton::Create(desc);
  ASSERT_TRUE(skel.ok());
  Limb limb{*skel, RestPose(*skel)};
  const Eigen::Vector3d t(0.9, 0.7, 0.3);
  Solved s = Solve(limb, {.start_joint = 0,
                          .mid_joint = 2,
                          .end_joint = 3,
                          .target = ToF(t),
                          .mid_axis = {{1, 0, 0}}});
  ASSERT_TRUE(s.status.ok()) << s.status;
  const auto out = Fk(limb.skeleton, s.pose);
  EXPECT_LE((Pos(out[3]) - t).norm(), 1e-4);
  EXPECT_TRUE(s.pose[1] == limb.local[1]);
  EXPECT_NEAR((Pos(out[2]) - Pos(out[0])).norm(), 1.0, 1e-5);
}

// ---------------------------------------------------------------------------
// Validation and determinism.

TEST(TwoBoneIkTest, TwoBoneIk_InvalidInputIsRejectedNamingTheField) {
  const Limb limb = MakeLimb();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  struct Case {
    TwoBoneIkJob job;
    const char* message;
  } cases[] = {
      {{.target = {nan, 0, 0}}, "two_bone_ik.target: NaN"},
      {{.target = {0, inf, 0}}, "two_bone_ik.target"},
      {{.pole_vector = {0, nan, 0}}, "two_bone_ik.pole_vector"},
      {{.bend_goal = Eigen::Vector3f(inf, 0, 0)}, "two_bone_ik.bend_goal"},
      {{.mid_axis = {{0, 0, 0}}}, "two_bone_ik.mid_axis: zero length"},
      {{.mid_axis = {{nan, 0, 1}}}, "two_bone_ik.mid_axis"},
      {{.twist_angle = inf}, "two_bone_ik.twist_angle"},
      {{.soften = 1.5f}, "two_bone_ik.soften"},
      {{.soften = -0.1f}, "two_bone_ik.soften"},
      {{.soften = nan}, "two_bone_ik.soften"},
      {{.weight = nan}, "two_bone_ik.weight"},
      {{.end_rotation_weight = inf}, "two_bone_ik.end_rotation_weight"},
      {{.max_stretch = 0.5f}, "two_bone_ik.max_stretch"},
      {{.reach_tolerance = -1.0f}, "two_bone_ik.reach_tolerance"},
      {{.end_rotation = Eigen::Quaternionf(2, 0, 0, 0)},
       "two_bone_ik.end_rotation: norm"},
      {{.start_joint = kMid, .mid_joint = kStart},
       "two_bone_ik.mid_joint: joint 1 'upper' is not a descendant of "
       "start_joint joint 2 'lower'"},
      {{.mid_joint = kOther}, "two_bone_ik.mid_joint: joint 5 'other'"},
      {{.end_joint = kMid}, "two_bone_ik.end_joint"},
      {{.end_joint = 17}, "two_bone_ik.end_joint: joint 17 is out of range"},
  };
  for (const Case& c : cases) {
    Solved s = Solve(limb, c.job);
    EXPECT_EQ(s.status.code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(std::string(s.status.message()), HasSubstr(c.message));
  }

  // A NaN in a chain joint's local transform names the joint.
  Limb bad = MakeLimb();
  bad.local[kMid].translation.x() = nan;
  std::vector<Transform> out(bad.local.size());
  TwoBoneIkJob job{.skeleton = &bad.skeleton,
                   .input = bad.local,
                   .start_joint = kStart,
                   .mid_joint = kMid,
                   .end_joint = kEnd,
                   .output = absl::MakeSpan(out)};
  absl::Status status = job.Run();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("two_bone_ik.input[2] 'lower'"));
  // Size mismatch.
  job.input = absl::MakeConstSpan(bad.local).subspan(0, 3);
  EXPECT_EQ(job.Run().code(), absl::StatusCode::kInvalidArgument);
  job.skeleton = nullptr;
  EXPECT_EQ(job.Run().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TwoBoneIkTest, TwoBoneIk_InvalidTransformsTheSolveReadsAreNamed) {
  // The quick screen covers every transform the solve reads: the start
  // joint's parent (model space), the chain's joints and, on a chain with a
  // twist bone, the joints in between; the detailed check names the one.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Limb limb = MakeLimb();
  std::vector<Transform> model(limb.local.size());
  LocalToModelJob fk{.skeleton = &limb.skeleton,
                     .input = limb.local,
                     .output = absl::MakeSpan(model)};
  ASSERT_TRUE(fk.Run().ok());
  std::vector<Transform> out(limb.local.size());
  TwoBoneIkJob job{.skeleton = &limb.skeleton,
                   .input = limb.local,
                   .parent_model = model[kRoot],
                   .start_joint = kStart,
                   .mid_joint = kMid,
                   .end_joint = kEnd,
                   .target = {1, 0.5f, 0},
                   .output = absl::MakeSpan(out)};
  ASSERT_TRUE(job.Run().ok());

  job.parent_model.scale.y() = nan;
  absl::Status status = job.Run();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("two_bone_ik.parent_model[0] 'root'"));
  job.parent_model = model[kRoot];

  std::vector<Transform> bad_local = limb.local;
  bad_local[kEnd].rotation.coeffs() *= 1.01f;  // not a unit quaternion
  job.input = bad_local;
  status = job.Run();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("two_bone_ik.input[3] 'hand'"));

  // Chain upper -> hand with `lower` in between as a twist bone: its
  // transform is read too.
  bad_local = limb.local;
  bad_local[kMid].translation.z() = nan;
  job.input = bad_local;
  job.mid_joint = kEnd;
  job.end_joint = kFinger;
  status = job.Run();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("two_bone_ik.input[2] 'lower'"));
  job.input = limb.local;
  EXPECT_TRUE(job.Run().ok());
}

TEST(TwoBoneIkTest, TwoBoneIk_RerunsAreBitIdenticalInPlaceOrNot) {
  const Limb limb = MakeLimb(
      Trs({0.1f, 0.2f, 0.3f}, AxisAngle(0.8f, {3, 1, 2}), {1.5f, 1.5f, 1.5f}));
  const TwoBoneIkJob params{.target = {0.7f, 1.9f, -0.4f},
                            .pole_vector = {0.2f, 0.1f, 1},
                            .end_rotation = AxisAngle(0.5f, {1, 0, 0}),
                            .twist_angle = 0.3f,
                            .soften = 0.8f,
                            .weight = 0.75f,
                            .stretch = true,
                            .max_stretch = 1.3f};
  Solved first = Solve(limb, params);
  ASSERT_TRUE(first.status.ok());
  for (int i = 0; i < 5; ++i) {
    Solved again = Solve(limb, params);
    EXPECT_TRUE(BitEqual(first.pose, again.pose));
    EXPECT_EQ(
        std::memcmp(&first.result.error, &again.result.error, sizeof(float)),
        0);
  }
  // In place.
  std::vector<Transform> pose = limb.local;
  TwoBoneIkJob job = params;
  job.skeleton = &limb.skeleton;
  job.input = pose;
  job.parent_model = ParentModelTransformOrRoot(limb.skeleton, pose, kStart);
  job.start_joint = kStart;
  job.mid_joint = kMid;
  job.end_joint = kEnd;
  job.output = absl::MakeSpan(pose);
  ASSERT_TRUE(job.Run().ok());
  EXPECT_TRUE(BitEqual(first.pose, pose));
}

// ---------------------------------------------------------------------------
// Real data: the CMU walk. For every 10th frame, each limb starts from its
// rest rotations (the rest of the body posed as in that frame) and is solved
// toward the hand or foot position of the frame, with the frame's elbow or
// knee as the bend goal. A success puts the end joint within 1e-4 of the
// chain length of the target and the mid joint within 1e-3 of it of the
// frame's elbow or knee.

std::vector<Transform> FramePose(const ImportedAsset& asset, int frame) {
  const Skeleton& skeleton = asset.skeleton;
  const Clip& clip = asset.clips.front();
  std::vector<Transform> pose = RestPose(skeleton);
  for (int j = 0; j < skeleton.num_joints(); ++j) {
    const JointTracks& tracks = clip.tracks[j];
    if (!tracks.translation.empty()) {
      pose[j].translation = tracks.translation.key_value(frame);
    }
    if (!tracks.rotation.empty()) {
      pose[j].rotation = tracks.rotation.key_value(frame);
    }
  }
  return pose;
}

TEST(TwoBoneIkTest, TwoBoneIk_CmuWalkLimbsSolveFromRestPose) {
  absl::StatusOr<ImportedAsset> asset =
      ReadBvhFile(absl::StrCat(POSEWIRE_TEST_DATA_DIR, "/cmu_131_01_walk.bvh"));
  ASSERT_TRUE(asset.ok()) << asset.status();
  ASSERT_FALSE(asset->clips.empty());
  const Skeleton& skeleton = asset->skeleton;
  const int frames =
      static_cast<int>(asset->clips.front().tracks[0].rotation.times.size());
  ASSERT_GT(frames, 100);
  const char* limbs[][3] = {{"LeftShoulder", "LeftElbow", "LeftWrist"},
                            {"RightShoulder", "RightElbow", "RightWrist"},
                            {"LeftHip", "LeftKnee", "LeftAnkle"},
                            {"RightHip", "RightKnee", "RightAnkle"}};
  int solves = 0;
  int successes = 0;
  double worst_end = 0.0;
  double worst_mid = 0.0;
  for (const auto& names : limbs) {
    const int start = skeleton.FindJoint(names[0]);
    const int mid = skeleton.FindJoint(names[1]);
    const int end = skeleton.FindJoint(names[2]);
    ASSERT_GE(start, 0);
    ASSERT_GE(mid, 0);
    ASSERT_GE(end, 0);
    // A hinge axis perpendicular to the rest forearm / shin, fixed per limb
    // as a rig would configure it.
    const Eigen::Vector3f bone2 = skeleton.rest_pose()[end].translation;
    Eigen::Vector3f axis = bone2.cross(Eigen::Vector3f::UnitZ());
    if (axis.norm() < 1e-3f * bone2.norm()) {
      axis = bone2.cross(Eigen::Vector3f::UnitX());
    }
    for (int f = 0; f < frames; f += 10) {
      const std::vector<Transform> frame = FramePose(*asset, f);
      const auto frame_model = Fk(skeleton, frame);
      const Eigen::Vector3d target = Pos(frame_model[end]);
      const Eigen::Vector3d elbow = Pos(frame_model[mid]);
      std::vector<Transform> input = frame;
      for (int j : {start, mid, end}) {
        input[j].rotation = skeleton.rest_pose()[j].rotation;
      }
      std::vector<Transform> model(input.size());
      ASSERT_TRUE((LocalToModelJob{.skeleton = &skeleton,
                                   .input = input,
                                   .output = absl::MakeSpan(model)})
                      .Run()
                      .ok());
      std::vector<Transform> output(input.size());
      TwoBoneIkResult result;
      TwoBoneIkJob job{.skeleton = &skeleton,
                       .input = input,
                       .parent_model = model[skeleton.parent(start)],
                       .start_joint = start,
                       .mid_joint = mid,
                       .end_joint = end,
                       .target = ToF(target),
                       .bend_goal = ToF(elbow),
                       .mid_axis = axis,
                       .output = absl::MakeSpan(output),
                       .result = &result};
      ASSERT_TRUE(job.Run().ok());
      const auto out = Fk(skeleton, output);
      const double chain = (Pos(out[mid]) - Pos(out[start])).norm() +
                           (Pos(out[end]) - Pos(out[mid])).norm();
      const double end_err = (Pos(out[end]) - target).norm() / chain;
      const double mid_err = (Pos(out[mid]) - elbow).norm() / chain;
      worst_end = std::max(worst_end, end_err);
      worst_mid = std::max(worst_mid, mid_err);
      ++solves;
      if (end_err <= 1e-4 && mid_err <= 1e-3 && result.reached) ++successes;
    }
  }
  const double rate = static_cast<double>(successes) / solves;
  std::cout << "[ two-bone CMU walk ] " << successes << "/" << solves
            << " solves succeeded (" << 100.0 * rate << "%), worst end error "
            << worst_end << " and worst mid error " << worst_mid
            << " of the chain length, 1 iteration each\n";
  RecordProperty("success_rate", std::to_string(rate));
  EXPECT_GE(rate, 0.99);
}

}  // namespace two_bone_ik_test
}  // namespace posewire
