// Full-body multi-effector CCD on the CMU walk. Checks use forward kinematics
// computed here in double precision with 4x4 matrices; the least-squares
// rotation is checked against a brute-force search and against point sets
// rotated by a known rotation.
#include "solver_core/full_body/full_body_ccd.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "solver_core/chain_ik/joint_limits.h"
#include "solver_core/io/bvh_reader.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/pose_ops/sampling_job.h"

namespace posewire {
namespace full_body_ccd_test {

using ::testing::HasSubstr;

Eigen::Matrix4d LocalMatrix(const Transform& t) {
  Eigen::Matrix4d m = Eigen::Matrix4d::Identity();
  m.topLeftCorner<3, 3>() =
      t.rotation.cast<double>().normalized().toRotationMatrix() *
      t.scale.cast<double>().asDiagonal();
  m.topRightCorner<3, 1>() = t.translation.cast<double>();
  return m;
}

std::vector<Eigen::Matrix4d> Fk(const Skeleton& s,
                                const std::vector<Transform>& local) {
  std::vector<Eigen::Matrix4d> m(local.size());
  for (int j = 0; j < s.num_joints(); ++j) {
    const int p = s.parent(j);
    m[j] = (p == kNoParent ? Eigen::Matrix4d::Identity() : m[p]) *
           LocalMatrix(local[j]);
  }
  return m;
}

Eigen::Vector3d Pos(const Eigen::Matrix4d& m) {
  return m.topRightCorner<3, 1>();
}

bool BitEqual(const Transform& a, const Transform& b) {
  return std::memcmp(a.translation.data(), b.translation.data(),
                     3 * sizeof(float)) == 0 &&
         std::memcmp(a.rotation.coeffs().data(), b.rotation.coeffs().data(),
                     4 * sizeof(float)) == 0 &&
         std::memcmp(a.scale.data(), b.scale.data(), 3 * sizeof(float)) == 0;
}

bool BitEqual(const std::vector<Transform>& a,
              const std::vector<Transform>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!BitEqual(a[i], b[i])) return false;
  }
  return true;
}

class WalkCcdTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<ImportedAsset> a = ReadBvhFile(
        std::string(POSEWIRE_TEST_DATA_DIR) + "/cmu_131_01_walk.bvh");
    ASSERT_TRUE(a.ok()) << a.status();
    asset_ = new ImportedAsset(*std::move(a));
  }
  static void TearDownTestSuite() {
    delete asset_;
    asset_ = nullptr;
  }

  const Skeleton& skeleton() const { return asset_->skeleton; }
  int Joint(const char* name) const { return skeleton().FindJoint(name); }

  std::vector<Transform> Frame(float time) const {
    std::vector<Transform> pose(skeleton().num_joints());
    SamplingJob job;
    job.skeleton = &skeleton();
    job.clip = &asset_->clips[0];
    job.time = time;
    job.mode = PlaybackMode::kClamp;
    job.output = absl::MakeSpan(pose);
    EXPECT_TRUE(job.Run().ok());
    return pose;
  }

  // Hands and feet of frame `other`, its hips moved onto those of `base`:
  // reachable targets from another moment of the walk.
  std::vector<FullBodyCcdEffector> LimbTargets(
      const std::vector<Transform>& base,
      const std::vector<Transform>& other) const {
    const int hips = Joint("Hips");
    const std::vector<Eigen::Matrix4d> mb = Fk(skeleton(), base);
    const std::vector<Eigen::Matrix4d> mo = Fk(skeleton(), other);
    const Eigen::Matrix4d align = mb[hips] * mo[hips].inverse();
    std::vector<FullBodyCcdEffector> out;
    for (const char* name :
         {"LeftWrist", "RightWrist", "LeftAnkle", "RightAnkle"}) {
      FullBodyCcdEffector e;
      e.joint = Joint(name);
      e.target = Pos(align * mo[e.joint]).cast<float>();
      out.push_back(e);
    }
    return out;
  }

  double TotalSquaredError(
      const std::vector<Transform>& pose,
      const std::vector<FullBodyCcdEffector>& effectors) const {
    const std::vector<Eigen::Matrix4d> m = Fk(skeleton(), pose);
    double sum = 0.0;
    for (const FullBodyCcdEffector& e : effectors) {
      const Eigen::Vector4d p =
          m[e.joint] * e.offset.cast<double>().homogeneous();
      sum += e.weight * (p.head<3>() - e.target.cast<double>()).squaredNorm();
    }
    return sum;
  }

  static ImportedAsset* asset_;
};
ImportedAsset* WalkCcdTest::asset_ = nullptr;

FullBodyCcdJob MakeJob(const Skeleton& s, const std::vector<Transform>& in,
                       const std::vector<FullBodyCcdEffector>& effectors,
                       std::vector<Transform>& out) {
  FullBodyCcdJob job;
  job.skeleton = &s;
  job.input = in;
  job.effectors = effectors;
  out.assign(in.size(), Transform());
  job.output = absl::MakeSpan(out);
  return job;
}

TEST_F(WalkCcdTest, FullBodyCcd_FourEffectorsReachTargetsFromAnotherFrame) {
  const std::vector<Transform> in = Frame(2.0f);
  const std::vector<FullBodyCcdEffector> effectors =
      LimbTargets(in, Frame(2.4f));
  std::vector<Transform> out;
  FullBodyCcdJob job = MakeJob(skeleton(), in, effectors, out);
  job.max_iterations = 400;
  job.translation_joint = Joint("Hips");
  IkResult result;
  std::vector<float> errors(effectors.size());
  job.result = &result;
  job.effector_errors = absl::MakeSpan(errors);
  ASSERT_TRUE(job.Run().ok());
  const std::vector<Eigen::Matrix4d> m = Fk(skeleton(), out);
  double worst = 0.0;
  for (size_t k = 0; k < effectors.size(); ++k) {
    const double e =
        (Pos(m[effectors[k].joint]) - effectors[k].target.cast<double>())
            .norm();
    EXPECT_NEAR(errors[k], e, 1e-3);
    worst = std::max(worst, e);
  }
  // The legs are about 14 units long; 1e-3 of that.
  EXPECT_LT(worst, 0.014) << "after " << result.iterations << " sweeps";
  EXPECT_TRUE(result.reached);
  EXPECT_NEAR(result.error, worst, 1e-3);
}

TEST_F(WalkCcdTest, FullBodyCcd_TotalErrorNeverIncreases) {
  const std::vector<Transform> in = Frame(1.0f);
  std::vector<FullBodyCcdEffector> effectors = LimbTargets(in, Frame(1.7f));
  effectors[0].weight = 2.0f;
  effectors[3].weight = 0.5f;
  // Also an offset effector (the right toe's end site) and a head target.
  FullBodyCcdEffector toe;
  toe.joint = Joint("RightToe");
  toe.offset = Eigen::Vector3f(0.0f, 0.0f, 1.05f);
  toe.target = Eigen::Vector3f(-3.0f, -14.0f, 6.0f);
  effectors.push_back(toe);
  double previous = TotalSquaredError(in, effectors);
  for (int iterations = 1; iterations <= 25; ++iterations) {
    std::vector<Transform> out;
    FullBodyCcdJob job = MakeJob(skeleton(), in, effectors, out);
    job.max_iterations = iterations;
    job.tolerance = AbsoluteTolerance(0.0f);
    ASSERT_TRUE(job.Run().ok());
    const double total = TotalSquaredError(out, effectors);
    EXPECT_LE(total, previous * (1.0 + 1e-5) + 1e-6) << iterations;
    previous = total;
  }
}

TEST_F(WalkCcdTest, FullBodyCcd_BoneLengthsKeptForRandomTargets) {
  const std::vector<Transform> in = Frame(3.0f);
  const std::vector<Eigen::Matrix4d> mi = Fk(skeleton(), in);
  std::mt19937 rng(99);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int hips = Joint("Hips");
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<FullBodyCcdEffector> effectors;
    for (const char* name :
         {"LeftWrist", "RightWrist", "LeftAnkle", "RightAnkle", "Head"}) {
      FullBodyCcdEffector e;
      e.joint = Joint(name);
      switch (trial % 5) {
        case 0:
          e.target = Pos(mi[hips]).cast<float>();  // on the root
          break;
        case 1:
          e.target = Pos(mi[e.joint]).cast<float>();  // where it is
          break;
        case 2:
          e.target = Eigen::Vector3f(u(rng), u(rng), u(rng)) * 1e6f;
          break;
        default:
          e.target = Pos(mi[hips]).cast<float>() +
                     Eigen::Vector3f(u(rng), u(rng), u(rng)) * 30.0f;
      }
      e.weight = trial % 3 == 0 ? 0.0f : 1.0f;
      effectors.push_back(e);
    }
    std::vector<Transform> out;
    FullBodyCcdJob job = MakeJob(skeleton(), in, effectors, out);
    job.max_iterations = 10;
    job.translation_joint = trial % 2 == 0 ? hips : -1;
    ASSERT_TRUE(job.Run().ok());
    const std::vector<Eigen::Matrix4d> mo = Fk(skeleton(), out);
    for (int j = 0; j < skeleton().num_joints(); ++j) {
      ASSERT_TRUE(out[j].translation.allFinite() &&
                  out[j].rotation.coeffs().allFinite())
          << trial;
      EXPECT_NEAR(out[j].rotation.norm(), 1.0f, 1e-5f);
      const int p = skeleton().parent(j);
      if (p == kNoParent) continue;
      EXPECT_TRUE(std::memcmp(out[j].translation.data(),
                              in[j].translation.data(),
                              3 * sizeof(float)) == 0);
      EXPECT_NEAR((Pos(mo[j]) - Pos(mo[p])).norm(),
                  (Pos(mi[j]) - Pos(mi[p])).norm(), 1e-4);
    }
    if (HasFailure()) break;
  }
}

// Angle of a hinge rotation about `axis`, and how far it strays from being
// one: measured with Eigen's AngleAxis, independently of joint_limits.cc.
void HingeAngle(const Eigen::Quaternionf& q, const Eigen::Vector3f& axis,
                double* angle, double* off_axis) {
  const Eigen::AngleAxisd aa(q.cast<double>().normalized());
  const double signed_angle =
      aa.angle() * (aa.axis().dot(axis.cast<double>()) >= 0 ? 1.0 : -1.0);
  *angle = std::remainder(signed_angle, 2.0 * M_PI);
  *off_axis = aa.angle() < 1e-6 ? 0.0
                                : aa.axis().cross(axis.cast<double>()).norm() *
                                      std::sin(aa.angle() / 2.0);
}

TEST_F(WalkCcdTest, FullBodyCcd_HingeLimitsHoldOnKneesAndElbows) {
  const std::vector<Transform> in = Frame(2.5f);
  const std::vector<FullBodyCcdEffector> effectors =
      LimbTargets(in, Frame(3.5f));
  std::vector<JointLimit> limits(skeleton().num_joints());
  // CMU knees and elbows bend about their local x axis.
  const std::vector<int> hinges = {Joint("LeftKnee"), Joint("RightKnee"),
                                   Joint("LeftElbow"), Joint("RightElbow")};
  for (int j : hinges) {
    limits[j] = HingeLimit(Eigen::Vector3f::UnitX(), 0.0f, 2.4f);
  }
  for (bool nudge : {false, true}) {
    std::vector<Transform> out;
    FullBodyCcdJob job = MakeJob(skeleton(), in, effectors, out);
    job.limits = limits;
    job.nudge = nudge;
    job.max_iterations = 30;
    job.translation_joint = Joint("Hips");
    ASSERT_TRUE(job.Run().ok());
    for (int j : hinges) {
      double angle, off_axis;
      HingeAngle(out[j].rotation, Eigen::Vector3f::UnitX(), &angle, &off_axis);
      EXPECT_LT(off_axis, 1e-5) << skeleton().joint_name(j);
      EXPECT_GE(angle, -1e-5) << skeleton().joint_name(j);
      EXPECT_LE(angle, 2.4 + 1e-5) << skeleton().joint_name(j);
    }
  }
}

TEST_F(WalkCcdTest, FullBodyCcd_ZeroWeightAndLockedJointsAreUntouched) {
  const std::vector<Transform> in = Frame(1.2f);
  const std::vector<FullBodyCcdEffector> effectors =
      LimbTargets(in, Frame(2.2f));
  std::vector<Transform> out;
  FullBodyCcdJob job = MakeJob(skeleton(), in, effectors, out);
  job.weight = 0.0f;
  job.translation_joint = Joint("Hips");
  ASSERT_TRUE(job.Run().ok());
  EXPECT_TRUE(BitEqual(out, in));

  std::vector<float> joint_weights(skeleton().num_joints(), 1.0f);
  joint_weights[Joint("Hips")] = 0.0f;
  joint_weights[Joint("Chest")] = 0.0f;
  FullBodyCcdJob locked = MakeJob(skeleton(), in, effectors, out);
  locked.joint_weights = joint_weights;
  ASSERT_TRUE(locked.Run().ok());
  EXPECT_TRUE(BitEqual(out[Joint("Hips")], in[Joint("Hips")]));
  EXPECT_TRUE(BitEqual(out[Joint("Chest")], in[Joint("Chest")]));
  EXPECT_FALSE(BitEqual(out, in));
}

TEST_F(WalkCcdTest, FullBodyCcd_TranslationalRootMovesTheBodyExactly) {
  // An effector on the root itself: no rotation can move it, the
  // translation does in one sweep, and nothing else changes.
  const std::vector<Transform> in = Frame(0.5f);
  const int hips = Joint("Hips");
  const std::vector<Eigen::Matrix4d> mi = Fk(skeleton(), in);
  FullBodyCcdEffector e;
  e.joint = hips;
  e.target = (Pos(mi[hips]) + Eigen::Vector3d(1.0, 2.0, -3.0)).cast<float>();
  const std::vector<FullBodyCcdEffector> effectors = {e};
  std::vector<Transform> out;
  FullBodyCcdJob job = MakeJob(skeleton(), in, effectors, out);
  job.translation_joint = hips;
  IkResult result;
  job.result = &result;
  ASSERT_TRUE(job.Run().ok());
  EXPECT_EQ(result.iterations, 1);
  EXPECT_TRUE(result.reached);
  EXPECT_LT((Pos(Fk(skeleton(), out)[hips]) - e.target.cast<double>()).norm(),
            1e-5);
  for (int j = 0; j < skeleton().num_joints(); ++j) {
    if (j == hips) continue;
    EXPECT_TRUE(BitEqual(out[j], in[j])) << skeleton().joint_name(j);
  }
  EXPECT_TRUE(BitEqual(
      Transform{in[hips].translation, out[hips].rotation, out[hips].scale},
      in[hips]));
}

TEST_F(WalkCcdTest, FullBodyCcd_RerunsAreBitIdentical) {
  const std::vector<Transform> in = Frame(4.0f);
  const std::vector<FullBodyCcdEffector> effectors =
      LimbTargets(in, Frame(4.4f));
  auto run = [&](bool in_place) {
    std::vector<Transform> out;
    std::vector<Transform> copy = in;
    FullBodyCcdJob job = MakeJob(skeleton(), in, effectors, out);
    job.translation_joint = Joint("Hips");
    job.weight = 0.8f;
    if (in_place) {
      job.input = copy;
      job.output = absl::MakeSpan(copy);
    }
    EXPECT_TRUE(job.Run().ok());
    return in_place ? copy : out;
  };
  const std::vector<Transform> a = run(false);
  EXPECT_TRUE(BitEqual(a, run(false)));
  EXPECT_TRUE(BitEqual(a, run(true)));
  EXPECT_FALSE(BitEqual(a, in));
}

TEST_F(WalkCcdTest, FullBodyCcd_InvalidInputNamesTheField) {
  const std::vector<Transform> in = Frame(1.0f);
  std::vector<FullBodyCcdEffector> effectors = LimbTargets(in, Frame(1.5f));
  std::vector<Transform> out;
  auto expect_error = [&](auto mutate, const std::string& text) {
    std::vector<FullBodyCcdEffector> e = effectors;
    FullBodyCcdJob job = MakeJob(skeleton(), in, e, out);
    mutate(job, e);
    const absl::Status s = job.Run();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(s.message(), HasSubstr(text));
  };
  const float nan = std::nanf("");
  expect_error(
      [&](FullBodyCcdJob&, std::vector<FullBodyCcdEffector>& e) {
        e[2].target.x() = nan;
      },
      "full_body_ccd.effectors[2].target: NaN");
  expect_error(
      [&](FullBodyCcdJob&, std::vector<FullBodyCcdEffector>& e) {
        e[1].weight = -1.0f;
      },
      "effectors[1].weight");
  expect_error([&](FullBodyCcdJob&,
                   std::vector<FullBodyCcdEffector>& e) { e[0].joint = 99; },
               "effectors[0].joint: 99 is out of range");
  expect_error(
      [&](FullBodyCcdJob&, std::vector<FullBodyCcdEffector>& e) {
        e[3].offset.y() = std::numeric_limits<float>::infinity();
      },
      "effectors[3].offset");
  expect_error([&](FullBodyCcdJob& j,
                   std::vector<FullBodyCcdEffector>&) { j.effectors = {}; },
               "full_body_ccd.effectors: 0 effectors");
  expect_error(
      [&](FullBodyCcdJob& j, std::vector<FullBodyCcdEffector>&) {
        j.max_iterations = kMaxIkIterations + 1;
      },
      "max_iterations");
  expect_error(
      [&](FullBodyCcdJob& j, std::vector<FullBodyCcdEffector>&) {
        j.translation_joint = 31;
      },
      "translation_joint");
  std::vector<float> short_weights(3, 1.0f);
  expect_error(
      [&](FullBodyCcdJob& j, std::vector<FullBodyCcdEffector>&) {
        j.joint_weights = short_weights;
      },
      "joint_weights");
  std::vector<JointLimit> limits(skeleton().num_joints());
  limits[Joint("LeftKnee")] = HingeLimit(Eigen::Vector3f(0, 0, 2), 0.0f, 1.0f);
  expect_error([&](FullBodyCcdJob& j,
                   std::vector<FullBodyCcdEffector>&) { j.limits = limits; },
               "LeftKnee");
}

// ---------------------------------------------------------------------------
// The least-squares rotation.

double Objective(const Eigen::Quaternionf& q,
                 const std::vector<Eigen::Vector3f>& from,
                 const std::vector<Eigen::Vector3f>& to,
                 const std::vector<float>& w) {
  double sum = 0.0;
  for (size_t k = 0; k < from.size(); ++k) {
    sum += w[k] *
           (q.cast<double>() * from[k].cast<double>() - to[k].cast<double>())
               .squaredNorm();
  }
  return sum;
}

TEST(WeightedPointRotationTest, FullBodyCcd_RecoversAKnownRotation) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int trial = 0; trial < 200; ++trial) {
    const Eigen::Quaternionf r =
        Eigen::Quaternionf(u(rng), u(rng), u(rng), u(rng)).normalized();
    std::vector<Eigen::Vector3f> from, to;
    std::vector<float> w;
    for (int k = 0; k < 2 + trial % 4; ++k) {
      from.push_back(Eigen::Vector3f(u(rng), u(rng), u(rng)) * 10.0f);
      to.push_back(r * from.back());
      w.push_back(0.5f + 0.5f * (u(rng) + 1.0f));
    }
    const Eigen::Quaternionf q = WeightedPointRotation(from, to, w);
    EXPECT_LT(q.angularDistance(r), 2e-3) << trial;
  }
}

TEST(WeightedPointRotationTest, FullBodyCcd_BeatsEveryOtherRotationTried) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<Eigen::Vector3f> from, to;
    std::vector<float> w;
    for (int k = 0; k < 3 + trial % 3; ++k) {
      from.push_back(Eigen::Vector3f(u(rng), u(rng), u(rng)) * 5.0f);
      to.push_back(Eigen::Vector3f(u(rng), u(rng), u(rng)) * 5.0f);
      w.push_back(u(rng) + 1.0f);
    }
    const double best =
        Objective(WeightedPointRotation(from, to, w), from, to, w);
    EXPECT_LE(best,
              Objective(Eigen::Quaternionf::Identity(), from, to, w) + 1e-4);
    for (int k = 0; k < 2000; ++k) {
      const Eigen::Quaternionf q =
          Eigen::Quaternionf(u(rng), u(rng), u(rng), u(rng)).normalized();
      ASSERT_LE(best, Objective(q, from, to, w) * (1.0 + 1e-3) + 1e-3) << trial;
    }
  }
  // One pair: the smallest rotation between the vectors.
  const Eigen::Vector3f a(1, 0, 0), b(0, 1, 0);
  const Eigen::Quaternionf q = WeightedPointRotation({a}, {b}, {1.0f});
  EXPECT_NEAR(q.angularDistance(Eigen::Quaternionf::Identity()), M_PI / 2,
              1e-5);
  EXPECT_LT((q * a - b).norm(), 1e-6);
  // Two points in line with the pivot leave the twist free: the smallest
  // rotation is chosen.
  const Eigen::Quaternionf line =
      WeightedPointRotation({a, Eigen::Vector3f(2, 0, 0)},
                            {b, Eigen::Vector3f(0, 2, 0)}, {1.0f, 1.0f});
  EXPECT_NEAR(line.angularDistance(Eigen::Quaternionf::Identity()), M_PI / 2,
              1e-3);
}

}  // namespace full_body_ccd_test
}  // namespace posewire
