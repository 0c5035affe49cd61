// Aim IK and the direction helpers it shares with the chain solvers
// (ClampDirection, RotationBetween). Results are checked by forward
// kinematics computed here in double precision with 4x4 matrices: the
// forward ray through the target, the up axis in the pole's plane, the cone
// angle measured directly, rotations built with Eigen::AngleAxisd.
#include "solver_core/analytic_ik/aim_ik.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "solver_core/analytic_ik/clamp_direction.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/skeleton.h"

namespace posewire {
namespace aim_ik_test {

using ::testing::HasSubstr;

constexpr double kPi = std::numbers::pi;

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

// A joint-space direction mapped to model space as the joint maps children.
Eigen::Vector3d Dir(const Eigen::Matrix4d& m, const Eigen::Vector3f& v) {
  return (m.topLeftCorner<3, 3>() * v.cast<double>()).normalized();
}

Eigen::Vector3d Point(const Eigen::Matrix4d& m, const Eigen::Vector3f& p) {
  return (m * p.cast<double>().homogeneous()).head<3>();
}

double Angle(const Eigen::Vector3d& a, const Eigen::Vector3d& b) {
  return std::atan2(a.cross(b).norm(), a.dot(b));
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

// root -> head (aimed) -> eye (joint 2), and a sibling under the root.
constexpr int kHead = 1;

struct Rig {
  Skeleton skeleton;
  std::vector<Transform> local;
};

Rig MakeRig(const Transform& root = Transform::Identity(),
            const Transform& head = Transform::Identity()) {
  SkeletonDesc desc;
  desc.joint_names = {"root", "head", "eye", "other"};
  desc.parents = {kNoParent, 0, 1, 0};
  desc.rest_pose = {root, head, Trs({0.1f, 0.2f, 0}),
                    Trs({1, 1, 1}, AxisAngle(0.2f, {0, 1, 0}))};
  absl::StatusOr<Skeleton> skeleton = Skeleton::Create(std::move(desc));
  EXPECT_TRUE(skeleton.ok()) << skeleton.status();
  Rig rig{*std::move(skeleton), {}};
  rig.local = RestPose(rig.skeleton);
  return rig;
}

struct Solved {
  absl::Status status;
  std::vector<Transform> pose;
  AimIkResult result;
};

Solved Solve(const Rig& rig, AimIkJob job) {
  Solved out;
  out.pose.assign(rig.local.size(), Transform());
  job.skeleton = &rig.skeleton;
  job.input = rig.local;
  if (job.joint < 0) job.joint = kHead;
  if (job.joint < rig.skeleton.num_joints()) {
    job.parent_model =
        ParentModelTransformOrRoot(rig.skeleton, rig.local, job.joint);
  }
  job.output = absl::MakeSpan(out.pose);
  job.result = &out.result;
  out.status = job.Run();
  return out;
}

std::vector<Transform> Parents() {
  return {Transform::Identity(),
          Trs({0, 1, 0}),
          Trs({0, 0, 0}, AxisAngle(kPi / 3, {1, 0, 0})),
          Trs({0, 0, 0}, Eigen::Quaternionf::Identity(), {2, 2, 2}),
          Trs({1, -2, 0.5f}, AxisAngle(2.0f, {1, 1, -1}), {0.5f, 0.5f, 0.5f}),
          Trs({0, 0, 0}, Eigen::Quaternionf::Identity(), {-3, -3, -3})};
}

Eigen::Vector3f ToF(const Eigen::Vector3d& v) { return v.cast<float>(); }

// ---------------------------------------------------------------------------
// Aiming.

TEST(AimIkTest, AimIk_ForwardAxisPointsExactlyAtTarget) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  const Eigen::Vector3f forwards[] = {
      {1, 0, 0}, {0, 0, -1}, {2, 2, 0}, {0.3f, -0.5f, 0.8f}};
  for (const Transform& parent : Parents()) {
    const Rig rig =
        MakeRig(parent, Trs({0, 1, 0}, AxisAngle(0.6f, {0.2f, 1, 0.3f})));
    const Eigen::Vector3d p = Pos(Fk(rig.skeleton, rig.local)[kHead]);
    for (const Eigen::Vector3f& forward : forwards) {
      for (int i = 0; i < 20; ++i) {
        const Eigen::Vector3d target =
            p + Eigen::Vector3d(unit(rng), unit(rng), unit(rng)) * 5.0;
        Solved s = Solve(rig, {.target = ToF(target), .forward = forward});
        ASSERT_TRUE(s.status.ok()) << s.status;
        const Eigen::Matrix4d m = Fk(rig.skeleton, s.pose)[kHead];
        EXPECT_LE(Angle(Dir(m, forward), target - p), 1e-5)
            << "forward " << forward.transpose();
        EXPECT_TRUE(s.result.reached);
        EXPECT_EQ(s.result.iterations, 1);
        // Only the aimed joint's rotation changed.
        for (int j = 0; j < rig.skeleton.num_joints(); ++j) {
          if (j == kHead) {
            EXPECT_TRUE(s.pose[j].translation == rig.local[j].translation);
            EXPECT_TRUE(s.pose[j].scale == rig.local[j].scale);
          } else {
            EXPECT_TRUE(s.pose[j] == rig.local[j]);
          }
        }
      }
    }
  }
}

TEST(AimIkTest, AimIk_UpAxisLiesInThePlaneOfThePole) {
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  for (const Transform& parent : Parents()) {
    const Rig rig = MakeRig(parent, Trs({0, 1, 0}, AxisAngle(1.3f, {1, 0, 1})));
    const Eigen::Vector3d p = Pos(Fk(rig.skeleton, rig.local)[kHead]);
    for (int i = 0; i < 30; ++i) {
      const Eigen::Vector3d to_target =
          Eigen::Vector3d(unit(rng), unit(rng), unit(rng)) * 4.0;
      const Eigen::Vector3d pole(unit(rng), unit(rng), unit(rng));
      if (to_target.normalized().cross(pole.normalized()).norm() < 0.1) {
        continue;
      }
      const Eigen::Vector3f up(0, 0.5f, 0.5f);
      Solved s = Solve(rig, {.target = ToF(p + to_target),
                             .pole_vector = ToF(pole),
                             .forward = {1, 0, 0},
                             .up = up});
      ASSERT_TRUE(s.status.ok());
      const Eigen::Matrix4d m = Fk(rig.skeleton, s.pose)[kHead];
      const Eigen::Vector3d up_model = Dir(m, up);
      const Eigen::Vector3d normal = to_target.cross(pole).normalized();
      const Eigen::Vector3d axis = to_target.normalized();
      // Up, orthogonal to forward here, lies in the plane (target line,
      // pole), on the pole's side of the target line.
      EXPECT_NEAR(up_model.dot(normal), 0.0, 1e-5);
      EXPECT_GT((up_model - up_model.dot(axis) * axis)
                    .dot(pole - pole.dot(axis) * axis),
                0.0);
    }
  }
}

TEST(AimIkTest, AimIk_OffsetRayPassesThroughTarget) {
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  const Eigen::Vector3f offsets[] = {
      {0, 0.3f, 0}, {0.2f, 0, 0.1f}, {-0.5f, 0.5f, 0.2f}, {1, 0, 0}};
  for (const Transform& parent : Parents()) {
    const Rig rig = MakeRig(parent, Trs({0, 1, 0}, AxisAngle(0.3f, {0, 0, 1})));
    const Eigen::Vector3d p = Pos(Fk(rig.skeleton, rig.local)[kHead]);
    const double scale = std::abs(parent.scale.x());
    for (const Eigen::Vector3f& offset : offsets) {
      for (int i = 0; i < 15; ++i) {
        const Eigen::Vector3d target =
            p + Eigen::Vector3d(unit(rng), unit(rng), unit(rng)).normalized() *
                    (2.0 + i) * scale;
        const Eigen::Vector3f forward(0, 0, 1);
        Solved s = Solve(
            rig, {.target = ToF(target), .forward = forward, .offset = offset});
        ASSERT_TRUE(s.status.ok());
        const Eigen::Matrix4d m = Fk(rig.skeleton, s.pose)[kHead];
        const Eigen::Vector3d origin = Point(m, offset);
        const Eigen::Vector3d dir = Dir(m, forward);
        const Eigen::Vector3d rel = target - origin;
        EXPECT_GT(rel.dot(dir), 0.0);  // in front
        EXPECT_LE((rel - rel.dot(dir) * dir).norm(), 1e-4 * rel.norm())
            << "offset " << offset.transpose();
        EXPECT_TRUE(s.result.reached);
        EXPECT_NEAR(s.result.error, (rel - rel.dot(dir) * dir).norm(), 1e-4);
      }
    }
  }
}

TEST(AimIkTest, AimIk_OzzAimAndUpCases) {
  // ozz's IKAimJob tests, identity joint, target +x, pole +y: aiming -x
  // needs a half turn about y, aiming z a quarter turn about y; up -y needs
  // a half turn about x, up z a quarter turn about -x.
  const Rig rig = MakeRig();
  struct Case {
    Eigen::Vector3f forward, up;
    Eigen::Quaterniond expected;
  } cases[] = {
      {{1, 0, 0}, {0, 1, 0}, Eigen::Quaterniond::Identity()},
      {{-1, 0, 0},
       {0, 1, 0},
       Eigen::Quaterniond(Eigen::AngleAxisd(kPi, Eigen::Vector3d::UnitY()))},
      {{0, 0, 1},
       {0, 1, 0},
       Eigen::Quaterniond(
           Eigen::AngleAxisd(kPi / 2, Eigen::Vector3d::UnitY()))},
      {{1, 0, 0},
       {0, -1, 0},
       Eigen::Quaterniond(Eigen::AngleAxisd(kPi, Eigen::Vector3d::UnitX()))},
      {{1, 0, 0},
       {0, 0, 1},
       Eigen::Quaterniond(
           Eigen::AngleAxisd(-kPi / 2, Eigen::Vector3d::UnitX()))},
  };
  for (const Case& c : cases) {
    Solved s = Solve(rig, {.target = {1, 0, 0},
                           .pole_vector = {0, 1, 0},
                           .forward = c.forward,
                           .up = c.up});
    ASSERT_TRUE(s.status.ok());
    EXPECT_LE(s.pose[kHead].rotation.cast<double>().angularDistance(c.expected),
              1e-5)
        << "forward " << c.forward.transpose() << " up " << c.up.transpose();
  }
}

TEST(AimIkTest, AimIk_TwistRollsUpAboutTheAimLine) {
  const Rig rig = MakeRig(Trs({0, 0, 0}, AxisAngle(0.5f, {1, 2, 3})));
  const Eigen::Vector3d p = Pos(Fk(rig.skeleton, rig.local)[kHead]);
  const Eigen::Vector3d target = p + Eigen::Vector3d(1, 2, -1);
  Solved base = Solve(rig, {.target = ToF(target)});
  const Eigen::Vector3d up0 =
      Dir(Fk(rig.skeleton, base.pose)[kHead], {0, 1, 0});
  for (double twist : {kPi / 2, -kPi / 4, kPi}) {
    Solved s = Solve(
        rig, {.target = ToF(target), .twist_angle = static_cast<float>(twist)});
    ASSERT_TRUE(s.status.ok());
    const Eigen::Matrix4d m = Fk(rig.skeleton, s.pose)[kHead];
    EXPECT_LE(Angle(Dir(m, {1, 0, 0}), target - p), 1e-5);
    const Eigen::Vector3d expected =
        Eigen::AngleAxisd(twist, (target - p).normalized()) * up0;
    EXPECT_LE((Dir(m, {0, 1, 0}) - expected).norm(), 1e-5);
  }
}

TEST(AimIkTest, AimIk_WeightZeroAndClamping) {
  const Rig rig = MakeRig(Trs({0, 0, 0}, AxisAngle(0.4f, {0, 1, 1})));
  Solved zero = Solve(rig, {.target = {0, 0, 5}, .weight = 0.0f});
  Solved negative = Solve(rig, {.target = {0, 0, 5}, .weight = -1.0f});
  Solved one = Solve(rig, {.target = {0, 0, 5}, .weight = 1.0f});
  Solved more = Solve(rig, {.target = {0, 0, 5}, .weight = 2.0f});
  ASSERT_TRUE(zero.status.ok() && negative.status.ok() && one.status.ok() &&
              more.status.ok());
  EXPECT_TRUE(BitEqual(zero.pose, rig.local));
  EXPECT_TRUE(BitEqual(negative.pose, rig.local));
  EXPECT_TRUE(BitEqual(one.pose, more.pose));
  EXPECT_EQ(zero.result.iterations, 0);
}

TEST(AimIkTest, AimIk_HalfWeightTurnsHalfway) {
  // ozz: identity joint aiming x at target z needs -90 degrees about y.
  const Rig rig = MakeRig();
  Solved s = Solve(rig, {.target = {0, 0, 1}, .weight = 0.5f});
  ASSERT_TRUE(s.status.ok());
  EXPECT_LE(
      s.pose[kHead].rotation.cast<double>().angularDistance(Eigen::Quaterniond(
          Eigen::AngleAxisd(-kPi / 4, Eigen::Vector3d::UnitY()))),
      1e-5);
  EXPECT_FALSE(s.result.reached);
}

TEST(AimIkTest, AimIk_UnaimableTargetsLeaveTheJoint) {
  const Rig rig = MakeRig(Trs({1, 2, 3}));
  // Target on the joint.
  Solved s = Solve(rig, {.target = {1, 2, 3}});
  ASSERT_TRUE(s.status.ok());
  EXPECT_TRUE(BitEqual(s.pose, rig.local));
  EXPECT_EQ(s.result.iterations, 0);
  // Target closer to the joint than the offset ray ever passes.
  s = Solve(rig, {.target = {1.5f, 2, 3}, .offset = {0, 2, 0}});
  ASSERT_TRUE(s.status.ok());
  EXPECT_TRUE(BitEqual(s.pose, rig.local));
  EXPECT_FALSE(s.result.reached);
  // A target along the up axis and a zero pole: aimed, no roll, finite.
  s = Solve(rig, {.target = {1, 7, 3}, .pole_vector = {0, 0, 0}});
  ASSERT_TRUE(s.status.ok());
  EXPECT_TRUE(s.result.reached);
  EXPECT_TRUE(IsFinite(s.pose[kHead]));
}

// ---------------------------------------------------------------------------
// Cone clamp.

TEST(AimIkTest, AimIk_ClampKeepsForwardInsideTheCone) {
  const Rig rig = MakeRig(Trs({0, 0, 0}, AxisAngle(0.7f, {1, 1, 0})));
  const auto in = Fk(rig.skeleton, rig.local);
  const Eigen::Vector3d p = Pos(in[kHead]);
  const Eigen::Vector3d input_forward = Dir(in[kHead], {1, 0, 0});
  for (float clamp : {0.25f, 0.5f, 0.75f, 0.9f}) {
    const double cone = (1.0 - clamp) * kPi;
    for (int smoothing : {0, 1, 2}) {
      for (int i = 0; i <= 36; ++i) {
        // Targets sweeping a full turn from the input forward, through the
        // exact opposite direction at i = 18.
        const double a = kPi * i / 18.0;
        const Eigen::Vector3d side =
            input_forward.cross(Eigen::Vector3d(0.3, -0.2, 1)).normalized();
        const Eigen::Vector3d dir =
            std::cos(a) * input_forward + std::sin(a) * side;
        Solved s = Solve(rig, {.target = ToF(p + 3.0 * dir),
                               .clamp_weight = clamp,
                               .clamp_smoothing = smoothing});
        ASSERT_TRUE(s.status.ok());
        const Eigen::Vector3d out =
            Dir(Fk(rig.skeleton, s.pose)[kHead], {1, 0, 0});
        const double angle = Angle(out, input_forward);
        EXPECT_LE(angle, cone + 1e-4)
            << "clamp " << clamp << " smoothing " << smoothing << " i " << i;
        const double target_angle = Angle(dir, input_forward);
        if (target_angle < cone - 1e-3) {
          EXPECT_FALSE(s.result.clamped);
          EXPECT_TRUE(s.result.reached);
          EXPECT_LE(Angle(out, dir), 1e-5);
        } else if (target_angle > cone + 1e-3) {
          EXPECT_TRUE(s.result.clamped);
          EXPECT_FALSE(s.result.reached);
        }
        if (i == 18) {
          EXPECT_LE(angle, 1e-4);  // opposite: stays on the axis
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------
// ClampDirection and the rotation helpers.

TEST(ClampDirectionTest, ClampDirection_ResultStaysInConeAndKeepsLength) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  for (int i = 0; i < 500; ++i) {
    const Eigen::Vector3f dir(unit(rng), unit(rng), unit(rng));
    const Eigen::Vector3f axis(unit(rng), unit(rng), unit(rng));
    if (dir.norm() < 0.05f || axis.norm() < 0.05f) continue;
    const float w = 0.05f + 0.9f * (i % 19) / 18.0f;
    const int smoothing = i % 3;
    const ClampedDirection c = ClampDirection(dir, axis, w, smoothing);
    const double before = Angle(dir.cast<double>(), axis.cast<double>());
    const double after = Angle(c.direction.cast<double>(), axis.cast<double>());
    const double cone = (1.0 - w) * kPi;
    EXPECT_LE(after, cone + 1e-5);
    EXPECT_NEAR(c.direction.norm(), dir.norm(), 1e-5 * dir.norm());
    EXPECT_EQ(c.changed, before >= cone);
    if (!c.changed) {
      EXPECT_TRUE(c.direction == dir);
    } else {
      // Clamping moves the direction toward the axis within their plane.
      EXPECT_LE(after, before + 1e-6);
      EXPECT_NEAR(c.direction.normalized().cast<double>().dot(
                      dir.cross(axis).normalized().cast<double>()),
                  0.0, 1e-4);
    }
  }
}

TEST(ClampDirectionTest, ClampDirection_EdgeCases) {
  const Eigen::Vector3f axis(0, 0, 2);
  const Eigen::Vector3f dir(3, 0, 0);  // 90 degrees off
  EXPECT_TRUE(ClampDirection(dir, axis, 0.0f, 0).direction == dir);
  EXPECT_FALSE(ClampDirection(dir, axis, 0.0f, 0).changed);
  EXPECT_TRUE(ClampDirection(dir, axis, -1.0f, 0).direction == dir);
  const ClampedDirection full = ClampDirection(dir, axis, 1.0f, 0);
  EXPECT_TRUE(full.changed);
  EXPECT_LE((full.direction - Eigen::Vector3f(0, 0, 3)).norm(), 1e-6);
  // Exactly opposite: lands on the axis (FinalIK's stability rule).
  const ClampedDirection opposite =
      ClampDirection(Eigen::Vector3f(0, 0, -1), axis, 0.5f, 2);
  EXPECT_LE((opposite.direction - Eigen::Vector3f(0, 0, 1)).norm(), 1e-6);
  // Zero vectors pass through.
  EXPECT_TRUE(ClampDirection(Eigen::Vector3f::Zero(), axis, 0.5f, 0)
                  .direction.isZero());
  EXPECT_TRUE(ClampDirection(dir, Eigen::Vector3f::Zero(), 0.5f, 0).direction ==
              dir);
  // Smoothing moves a clamped direction toward the cone's edge.
  const Eigen::Vector3f far(0, 1, -1);  // 135 degrees off, cone 45
  double previous = 0.0;
  for (int smoothing = 0; smoothing <= 3; ++smoothing) {
    const double angle = Angle(
        ClampDirection(far, axis, 0.75f, smoothing).direction.cast<double>(),
        axis.cast<double>());
    EXPECT_GE(angle, previous);
    EXPECT_LE(angle, kPi / 4 + 1e-6);
    previous = angle;
  }
  // Without smoothing, FinalIK's formula: angle = cone * dot / w, where
  // dot = 1 - 135 / 180.
  EXPECT_NEAR(
      Angle(ClampDirection(far, axis, 0.75f, 0).direction.cast<double>(),
            axis.cast<double>()),
      (kPi / 4) * (0.25 / 0.75), 1e-5);
}

TEST(ClampDirectionTest, RotationBetween_MapsFromOntoToIncludingOpposites) {
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  for (int i = 0; i < 300; ++i) {
    Eigen::Vector3f a(unit(rng), unit(rng), unit(rng));
    if (a.norm() < 0.05f) continue;
    Eigen::Vector3f b(unit(rng), unit(rng), unit(rng));
    if (i % 3 == 0) b = -a * 2.0f;  // exactly opposite
    if (i % 3 == 1) {
      // Nearly opposite: 1e-4 radians off.
      b = Eigen::AngleAxisf(kPi - 1e-4, a.unitOrthogonal()) * a;
    }
    if (b.norm() < 0.05f) continue;
    const Eigen::Quaternionf q = RotationBetween(a, b);
    EXPECT_NEAR(q.norm(), 1.0f, 1e-6);
    const Eigen::Vector3d mapped = (q.cast<double>() * a.cast<double>());
    EXPECT_LE((mapped.normalized() - b.cast<double>().normalized()).norm(),
              2e-6)
        << "i " << i;
  }
  EXPECT_TRUE(RotationBetween(Eigen::Vector3f::Zero(), Eigen::Vector3f::UnitX())
                  .coeffs() == Eigen::Quaternionf::Identity().coeffs());
}

TEST(ClampDirectionTest, RotationBetweenFrames_MapsFrameOntoFrameAtAnyAngle) {
  // Random frames at every angle between them, including beyond 120 degrees
  // (where the quaternion comes from R's largest diagonal entry rather than
  // from its trace) and within 1e-3 radians of a half turn.
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  int beyond_120 = 0;
  for (int i = 0; i < 400; ++i) {
    const Eigen::Vector3f from(unit(rng), unit(rng), unit(rng));
    const Eigen::Vector3f from_ref(unit(rng), unit(rng), unit(rng));
    Eigen::Vector3f to(unit(rng), unit(rng), unit(rng));
    const Eigen::Vector3f to_ref(unit(rng), unit(rng), unit(rng));
    if (i % 4 == 0) {
      to = Eigen::AngleAxisf(kPi - 1e-3, from.unitOrthogonal()) * from * 3.0f;
    }
    const auto perp = [](const Eigen::Vector3d& v, const Eigen::Vector3d& d) {
      return Eigen::Vector3d(v - v.dot(d.normalized()) * d.normalized());
    };
    const Eigen::Vector3d f = from.cast<double>();
    const Eigen::Vector3d t = to.cast<double>();
    const Eigen::Vector3d fr = perp(from_ref.cast<double>(), f);
    const Eigen::Vector3d tr = perp(to_ref.cast<double>(), t);
    if (f.norm() < 0.05 || t.norm() < 0.05 || fr.norm() < 0.05 ||
        tr.norm() < 0.05) {
      continue;
    }
    const Eigen::Quaternionf q =
        RotationBetweenFrames(from, from_ref, to, to_ref);
    EXPECT_NEAR(q.norm(), 1.0f, 1e-6) << "i " << i;
    const Eigen::Quaterniond qd = q.cast<double>();
    EXPECT_LE(((qd * f).normalized() - t.normalized()).norm(), 2e-6)
        << "i " << i;
    EXPECT_LE(((qd * fr).normalized() - tr.normalized()).norm(), 2e-6)
        << "i " << i;
    if (std::fabs(q.w()) < 0.5f) ++beyond_120;
    // The overload on Vec3 values is the same function.
    const Eigen::Quaternionf q3 = RotationBetweenFrames(
        Vec3(from), Vec3(from_ref), Vec3(to), Vec3(to_ref));
    EXPECT_EQ(
        std::memcmp(q.coeffs().data(), q3.coeffs().data(), 4 * sizeof(float)),
        0);
  }
  EXPECT_GT(beyond_120, 50);
  // A reference along its direction leaves the roll undefined: the shortest
  // arc.
  const Eigen::Vector3f x = Eigen::Vector3f::UnitX();
  const Eigen::Vector3f y = Eigen::Vector3f::UnitY();
  EXPECT_TRUE(RotationBetweenFrames(x, 2.0f * x, y, Eigen::Vector3f::UnitZ())
                  .isApprox(RotationBetween(x, y)));
  EXPECT_TRUE(
      RotationBetweenFrames(Eigen::Vector3f::Zero(), y, x, y).coeffs() ==
      Eigen::Quaternionf::Identity().coeffs());
}

// ---------------------------------------------------------------------------
// Validation and determinism.

TEST(AimIkTest, AimIk_InvalidInputIsRejectedNamingTheField) {
  const Rig rig = MakeRig();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  struct Case {
    AimIkJob job;
    const char* message;
  } cases[] = {
      {{.target = {nan, 0, 0}}, "aim_ik.target: NaN"},
      {{.pole_vector = {0, 0, inf}}, "aim_ik.pole_vector"},
      {{.forward = {0, 0, 0}}, "aim_ik.forward: zero length"},
      {{.forward = {nan, 1, 0}}, "aim_ik.forward"},
      {{.up = {0, inf, 0}}, "aim_ik.up"},
      {{.offset = {0, nan, 0}}, "aim_ik.offset"},
      {{.twist_angle = nan}, "aim_ik.twist_angle"},
      {{.weight = inf}, "aim_ik.weight"},
      {{.clamp_weight = nan}, "aim_ik.clamp_weight"},
      {{.clamp_smoothing = -1}, "aim_ik.clamp_smoothing"},
      {{.clamp_smoothing = 99}, "aim_ik.clamp_smoothing"},
      {{.reach_tolerance = nan}, "aim_ik.reach_tolerance"},
      {{.joint = 9}, "aim_ik.joint: joint 9 is out of range"},
  };
  for (const Case& c : cases) {
    Solved s = Solve(rig, c.job);
    EXPECT_EQ(s.status.code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(std::string(s.status.message()), HasSubstr(c.message));
  }
  Rig bad = MakeRig();
  bad.local[kHead].rotation = Eigen::Quaternionf(0.5f, 0, 0, 0);
  std::vector<Transform> out(bad.local.size());
  AimIkJob job{.skeleton = &bad.skeleton,
               .input = bad.local,
               .joint = kHead,
               .output = absl::MakeSpan(out)};
  EXPECT_THAT(std::string(job.Run().message()),
              HasSubstr("aim_ik.input[1] 'head': rotation norm"));
}

TEST(AimIkTest, AimIk_RerunsAreBitIdenticalInPlaceOrNot) {
  const Rig rig = MakeRig(
      Trs({0.3f, 0.1f, -2}, AxisAngle(1.2f, {2, 1, 3}), {1.3f, 1.3f, 1.3f}));
  const AimIkJob params{.target = {2, -1, 0.5f},
                        .pole_vector = {0.1f, 1, 0.2f},
                        .forward = {0, 0, 1},
                        .up = {0, 1, 0},
                        .offset = {0.1f, 0.2f, 0},
                        .twist_angle = 0.2f,
                        .weight = 0.8f,
                        .clamp_weight = 0.4f,
                        .clamp_smoothing = 1};
  Solved first = Solve(rig, params);
  ASSERT_TRUE(first.status.ok());
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(BitEqual(first.pose, Solve(rig, params).pose));
  }
  std::vector<Transform> pose = rig.local;
  AimIkJob job = params;
  job.skeleton = &rig.skeleton;
  job.input = pose;
  job.parent_model = ParentModelTransformOrRoot(rig.skeleton, pose, kHead);
  job.joint = kHead;
  job.output = absl::MakeSpan(pose);
  ASSERT_TRUE(job.Run().ok());
  EXPECT_TRUE(BitEqual(first.pose, pose));
}

}  // namespace aim_ik_test
}  // namespace posewire
