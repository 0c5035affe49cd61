// CCD IK (ccd_ik.h), checked against independent matrix FK: reachable
// targets reached, unreachable ones answered with a straight chain pointing
// at them, bone lengths and translations untouched, limits never violated,
// weight 0 bit for bit, the options (joint weights, incremental, step cap,
// relative tolerance, the two singularity heuristics of the Blade engine's
// IK notes, the closing step near full reach) each doing what they claim,
// degenerate geometry answered with finite documented results, invalid input
// rejected, and determinism.

#include "solver_core/chain_ik/ccd_ik.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "solver_core/model/pose.h"
#include "tests/core/chain_ik_test_util.h"

namespace posewire {
namespace ccd_ik_test {

using ::testing::HasSubstr;
using testing_util::AngleBetween;
using testing_util::AngleOf;
using testing_util::BitEqual;
using testing_util::ChainIndices;
using testing_util::ChainJob;
using testing_util::ChainLength;
using testing_util::ClassicAndRelaxed;
using testing_util::ExpectOverRelaxationRejected;
using testing_util::FkPositions;
using testing_util::FkRotations;
using testing_util::kPi;
using testing_util::LongChainCase;
using testing_util::MakeChainSkeleton;
using testing_util::RandomRotation;
using testing_util::SolveClassicAndRelaxed;

struct Fixture : testing_util::TestChain<CcdIkJob> {
  CcdIkJob Job(const Eigen::Vector3f& target, std::vector<Transform>& out,
               IkResult* result) const {
    return MakeJob(target, out, result, 500);
  }
};

float TipError(const Fixture& f, const std::vector<Transform>& pose,
               const Eigen::Vector3f& target) {
  return (FkPositions(f.skeleton, pose)[f.chain.back()] - target).norm();
}

void ExpectRotationOnly(const Fixture& f, const std::vector<Transform>& out) {
  for (int j = 0; j < f.skeleton.num_joints(); ++j) {
    EXPECT_EQ(out[j].translation, f.input[j].translation) << j;
    EXPECT_EQ(out[j].scale, f.input[j].scale) << j;
    EXPECT_NEAR(out[j].rotation.norm(), 1.0f, 1e-5f) << j;
  }
  const std::vector<Eigen::Vector3f> p0 = FkPositions(f.skeleton, f.input);
  const std::vector<Eigen::Vector3f> p1 = FkPositions(f.skeleton, out);
  for (size_t i = 1; i < f.chain.size(); ++i) {
    EXPECT_NEAR((p1[f.chain[i]] - p1[f.chain[i - 1]]).norm(),
                (p0[f.chain[i]] - p0[f.chain[i - 1]]).norm(), 1e-5f);
  }
  // The chain root does not move.
  EXPECT_LT((p1[f.chain[0]] - p0[f.chain[0]]).norm(), 1e-6f);
}

TEST(CcdIk, ReachesReachableTargetsWithinTolerance) {
  Fixture f;
  std::mt19937 rng(21);
  int reached = 0;
  for (int t = 0; t < 40; ++t) {
    const Eigen::Vector3f target = f.RandomReachable(rng);
    std::vector<Transform> out;
    IkResult r;
    ASSERT_TRUE(f.Job(target, out, &r).Run().ok());
    const float err = TipError(f, out, target);
    EXPECT_NEAR(r.error, err, 1e-5f);
    if (r.reached) {
      ++reached;
      EXPECT_LE(err, 1e-4f * f.length);
    }
    ExpectRotationOnly(f, out);
  }
  // Every reachable target of this 5-joint chain is found.
  EXPECT_EQ(reached, 40);
}

// Unconstrained solves take a fast path (the effector moved without a
// rotation, one normalisation per step); a step cap larger than any turn
// sends the same solve through the general step (FromToRotation, the cap,
// the effector rotated). Same sweeps, so the two may differ by rounding only.
TEST(CcdIk, PlainSweepsAgreeWithTheGeneralStepToRounding) {
  Fixture f;
  std::mt19937 rng(77);
  int compared = 0;
  for (int t = 0; t < 40; ++t) {
    const Eigen::Vector3f target = f.RandomReachable(rng);
    std::vector<Transform> plain_out, general_out;
    IkResult plain_r, general_r;
    CcdIkJob plain = f.MakeJob(target, plain_out, &plain_r, 6);
    plain.tolerance = AbsoluteTolerance(0.0f);
    plain.over_relaxation = 0.0f;  // the general step never over-relaxes
    CcdIkJob general = f.MakeJob(target, general_out, &general_r, 6);
    general.tolerance = AbsoluteTolerance(0.0f);
    general.max_step_angle = 10.0f;  // above pi: never clamps
    ASSERT_TRUE(plain.Run().ok());
    ASSERT_TRUE(general.Run().ok());
    // Tolerance 0 still stops a solve whose effector lands exactly on the
    // target; compare poses only after the same number of sweeps.
    if (plain_r.iterations != general_r.iterations) continue;
    ++compared;
    for (int j : f.chain) {
      EXPECT_LT(AngleBetween(plain_out[j].rotation, general_out[j].rotation),
                1e-4f)
          << t << " joint " << j;
    }
    EXPECT_NEAR(plain_r.error, TipError(f, plain_out, target), 1e-5f);
    EXPECT_NEAR(plain_r.error, general_r.error, 1e-4f * f.length) << t;
  }
  EXPECT_GE(compared, 30);
}

// Over-relaxed CCD written out independently: `sweeps` sweeps tip to root
// with the model frames from the test's matrix FK, each joint turned by
// Eigen's FromTwoVectors; from the second sweep on, every joint's local
// rotation moves on from where the sweep found it by b times the sweep's
// change (along the quaternion chord), b = min(relax, rho / (1 - rho)), rho
// the ratio of the effector's last two errors (ccd_ik.h).
std::vector<Transform> ReferenceCcd(const Fixture& f,
                                    const Eigen::Vector3f& target, int sweeps,
                                    float relax) {
  std::vector<Transform> pose = f.input;
  const int tip = f.chain.back();
  float error = 0.0f, last_error = 0.0f;
  for (int sweep = 0; sweep < sweeps; ++sweep) {
    std::vector<Transform> before = pose;
    for (size_t k = f.chain.size() - 1; k-- > 0;) {
      const int j = f.chain[k];
      const std::vector<Eigen::Vector3f> p = FkPositions(f.skeleton, pose);
      const std::vector<Eigen::Quaternionf> r = FkRotations(f.skeleton, pose);
      const Eigen::Quaternionf delta =
          Eigen::Quaternionf::FromTwoVectors(p[tip] - p[j], target - p[j]);
      pose[j].rotation =
          (r[f.skeleton.parent(j)].conjugate() * delta * r[j]).normalized();
    }
    last_error = error;
    error = (FkPositions(f.skeleton, pose)[tip] - target).norm();
    if (sweep >= 1 && sweep + 1 < sweeps && relax > 0.0f &&
        error < last_error) {
      const float rho = error / last_error;
      const float b = std::min(relax, rho / (1.0f - rho));
      for (size_t k = 0; k + 1 < f.chain.size(); ++k) {
        const int j = f.chain[k];
        Eigen::Vector4f from = before[j].rotation.coeffs();
        const Eigen::Vector4f now = pose[j].rotation.coeffs();
        if (from.dot(now) < 0.0f) from = -from;
        pose[j].rotation =
            Eigen::Quaternionf((now + b * (now - from)).normalized());
      }
    }
  }
  return pose;
}

TEST(CcdIk, OverRelaxedSweepsFollowTheReference) {
  Fixture f;
  std::mt19937 rng(78);
  for (int trial = 0; trial < 60; ++trial) {
    const Eigen::Vector3f target = f.RandomReachable(rng);
    const int sweeps = 1 + trial % 6;
    std::vector<Transform> out;
    IkResult r;
    CcdIkJob job = f.MakeJob(target, out, &r, sweeps);
    job.tolerance = AbsoluteTolerance(0.0f);
    job.over_relaxation = kDefaultCcdOverRelaxation;
    job.polish = false;  // the sweeps alone
    ASSERT_TRUE(job.Run().ok());
    if (r.iterations != sweeps) continue;  // landed exactly: rare
    const std::vector<Eigen::Vector3f> got = FkPositions(f.skeleton, out);
    const std::vector<Eigen::Vector3f> want = FkPositions(
        f.skeleton, ReferenceCcd(f, target, sweeps, kDefaultCcdOverRelaxation));
    for (int j : f.chain) {
      EXPECT_LT((got[j] - want[j]).norm(), 1e-3f * f.length)
          << "trial " << trial << " joint " << j;
    }
    ExpectRotationOnly(f, out);
  }
}

// Classic against over-relaxed CCD on random reachable targets, solved to
// 5e-5 of the chain's length in at most 50 sweeps: the total sweeps may be
// at most `max_sweep_ratio` of classic's, and every target classic reaches
// is reached.
void CompareOverRelaxation(const Skeleton& skeleton,
                           const std::vector<Transform>& input,
                           const std::vector<int>& chain,
                           const std::vector<Eigen::Vector3f>& targets,
                           double max_sweep_ratio) {
  int classic_sweeps = 0, relaxed_sweeps = 0;
  int classic_reached = 0, relaxed_reached = 0;
  for (size_t t = 0; t < targets.size(); ++t) {
    CcdIkJob job = ChainJob<CcdIkJob>(skeleton, input, chain, targets[t], 50);
    job.polish = false;  // the sweeps alone
    const ClassicAndRelaxed r =
        SolveClassicAndRelaxed(job, kDefaultCcdOverRelaxation);
    classic_sweeps += r.classic.iterations;
    relaxed_sweeps += r.relaxed.iterations;
    classic_reached += r.classic.reached;
    relaxed_reached += r.relaxed.reached;
    const std::vector<Eigen::Vector3f> p = FkPositions(skeleton, r.relaxed_out);
    EXPECT_NEAR((p[chain.back()] - targets[t]).norm(), r.relaxed.error, 1e-5f);
    for (int j = 0; j < skeleton.num_joints(); ++j) {
      EXPECT_EQ(r.relaxed_out[j].translation, input[j].translation);
      EXPECT_NEAR(r.relaxed_out[j].rotation.norm(), 1.0f, 1e-5f);
    }
  }
  EXPECT_GE(relaxed_reached, classic_reached);
  EXPECT_LE(relaxed_sweeps, max_sweep_ratio * classic_sweeps)
      << classic_sweeps << " classic, " << relaxed_sweeps << " over-relaxed";
}

TEST(CcdIk, OverRelaxationNeverSlowsTheShortTestChain) {
  const Fixture f;
  CompareOverRelaxation(f.skeleton, f.input, f.chain,
                        f.RandomReachableTargets(100, 79), 1.0);
}

TEST(CcdIk, OverRelaxationSavesSweepsOnALongChain) {
  const LongChainCase c(80);
  CompareOverRelaxation(c.skeleton, c.input, c.chain, c.targets, 0.67);
}

TEST(CcdIk, RejectsOverRelaxationOutsideItsRange) {
  const Fixture f;
  std::vector<Transform> out;
  ExpectOverRelaxationRejected(
      f.Job(Eigen::Vector3f(0.5f, 0.5f, 0.0f), out, nullptr),
      {-0.1f, 16.5f, std::numeric_limits<float>::quiet_NaN()},
      "ccd_ik.over_relaxation");
}

TEST(CcdIk, UnreachableTargetLeavesTheChainStraightAndPointingAtIt) {
  Fixture f;
  const Eigen::Vector3f root = FkPositions(f.skeleton, f.input)[f.chain[0]];
  const Eigen::Vector3f dir = Eigen::Vector3f(1.0f, -2.0f, 0.5f).normalized();
  const Eigen::Vector3f target = root + dir * (f.length * 1.5f);
  std::vector<Transform> out;
  IkResult r;
  ASSERT_TRUE(f.Job(target, out, &r).Run().ok());
  EXPECT_FALSE(r.reached);
  EXPECT_EQ(r.iterations, 1);
  const std::vector<Eigen::Vector3f> p = FkPositions(f.skeleton, out);
  for (int j : f.chain) {
    const Eigen::Vector3f v = p[j] - root;
    EXPECT_LT(v.cross(dir).norm(), 1e-4f * f.length) << j;
    EXPECT_GE(v.dot(dir), -1e-5f);
  }
  EXPECT_NEAR((p[f.chain.back()] - root).norm(), f.length, 1e-4f * f.length);
  EXPECT_NEAR(r.error, 0.5f * f.length, 1e-4f * f.length);
  ExpectRotationOnly(f, out);
}

TEST(CcdIk, WeightZeroReturnsTheInputBitForBit) {
  Fixture f;
  std::vector<Transform> out;
  IkResult r;
  CcdIkJob job = f.Job(Eigen::Vector3f(0.5f, 1.0f, 0.2f), out, &r);
  job.weight = 0.0f;
  for (auto& t : out) t.rotation.coeffs() << 9, 9, 9, 9;  // overwritten
  ASSERT_TRUE(job.Run().ok());
  EXPECT_TRUE(BitEqual(out, f.input));
  EXPECT_EQ(r.iterations, 0);
  // Negative weights clamp to 0 (ozz-animation's rule).
  job.weight = -3.0f;
  ASSERT_TRUE(job.Run().ok());
  EXPECT_TRUE(BitEqual(out, f.input));
}

TEST(CcdIk, PartialWeightSlerpsFromInputTowardTheSolve) {
  Fixture f;
  std::mt19937 rng(22);
  const Eigen::Vector3f target = f.RandomReachable(rng);
  std::vector<Transform> full, half;
  ASSERT_TRUE(f.Job(target, full, nullptr).Run().ok());
  CcdIkJob job = f.Job(target, half, nullptr);
  job.weight = 0.5f;
  ASSERT_TRUE(job.Run().ok());
  for (int j : f.chain) {
    const Eigen::Quaternionf want =
        f.input[j].rotation.slerp(0.5f, full[j].rotation);
    EXPECT_LT(AngleBetween(half[j].rotation, want), 1e-5f) << j;
  }
}

TEST(CcdIk, OutputMayAliasTheInput) {
  Fixture f;
  std::mt19937 rng(23);
  const Eigen::Vector3f target = f.RandomReachable(rng);
  for (float weight : {1.0f, 0.3f}) {
    std::vector<Transform> separate;
    CcdIkJob job = f.Job(target, separate, nullptr);
    job.weight = weight;
    ASSERT_TRUE(job.Run().ok());
    std::vector<Transform> in_place = f.input;
    job.input = in_place;
    job.output = absl::MakeSpan(in_place);
    ASSERT_TRUE(job.Run().ok());
    EXPECT_TRUE(BitEqual(separate, in_place)) << weight;
  }
}

TEST(CcdIk, IsDeterministicAndKeepsNoState) {
  Fixture f;
  std::mt19937 rng(24);
  const Eigen::Vector3f a = f.RandomReachable(rng);
  const Eigen::Vector3f b = f.RandomReachable(rng);
  std::vector<Transform> first, second, other;
  IkResult r1, r2;
  ASSERT_TRUE(f.Job(a, first, &r1).Run().ok());
  ASSERT_TRUE(f.Job(b, other, nullptr).Run().ok());
  ASSERT_TRUE(f.Job(a, second, &r2).Run().ok());
  EXPECT_TRUE(BitEqual(first, second));
  EXPECT_EQ(r1.iterations, r2.iterations);
  EXPECT_EQ(r1.error, r2.error);
}

TEST(CcdIk, RejectsInvalidInputNamingTheField) {
  Fixture f;
  std::vector<Transform> out;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  auto expect_invalid = [&](const CcdIkJob& job, const char* text) {
    const absl::Status s = job.Run();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(s.message(), HasSubstr(text));
  };
  CcdIkJob job = f.Job(Eigen::Vector3f(nan, 0, 0), out, nullptr);
  expect_invalid(job, "ccd_ik.target: NaN");
  job.target = Eigen::Vector3f(0, inf, 0);
  expect_invalid(job, "ccd_ik.target");
  job.target = Eigen::Vector3f::Zero();
  job.max_iterations = kMaxIkIterations + 1;
  expect_invalid(job, "ccd_ik.max_iterations");
  job.max_iterations = 10;
  job.weight = nan;
  expect_invalid(job, "ccd_ik.weight");
  job.weight = 1.0f;
  const std::vector<int> broken = {1, 3};
  job.chain = broken;
  expect_invalid(job, "ccd_ik.chain[1]");
  job.chain = f.chain;
  const std::vector<float> weights = {1.0f, 1.0f};
  job.joint_weights = weights;
  expect_invalid(job, "ccd_ik.joint_weights");
  job.joint_weights = {};
  const std::vector<JointLimit> few(2);
  job.limits = few;
  expect_invalid(job, "ccd_ik.limits");
  std::vector<JointLimit> bad(f.skeleton.num_joints());
  bad[2] = HingeLimit(Eigen::Vector3f::UnitX(), 1.0f, 0.0f);
  job.limits = bad;
  expect_invalid(job, "ccd_ik.limits[2] 'j2'");
  job.limits = {};
  job.max_step_angle = -1.0f;
  expect_invalid(job, "ccd_ik.max_step_angle");
  job.max_step_angle = 0.0f;
  job.tolerance = AbsoluteTolerance(nan);
  expect_invalid(job, "ccd_ik.tolerance");
  job.tolerance = AbsoluteTolerance(1e-3f);
  std::vector<Transform> bad_input = f.input;
  bad_input[3].rotation.coeffs() << nan, 0, 0, 1;
  job.input = bad_input;
  expect_invalid(job, "ccd_ik.input[3] 'j3'");
  job.input = f.input;
  std::vector<Transform> short_out(2);
  job.output = absl::MakeSpan(short_out);
  expect_invalid(job, "ccd_ik.output");
  job.output = absl::MakeSpan(out);
  job.skeleton = nullptr;
  expect_invalid(job, "ccd_ik.skeleton");
}

TEST(CcdIk, IterationCapIsHonoured) {
  Fixture f;
  std::mt19937 rng(25);
  const Eigen::Vector3f target = f.RandomReachable(rng);
  std::vector<Transform> out;
  IkResult r;
  CcdIkJob job = f.Job(target, out, &r);
  job.max_iterations = 1;
  job.tolerance = AbsoluteTolerance(0.0f);
  ASSERT_TRUE(job.Run().ok());
  EXPECT_EQ(r.iterations, 1);
  job.max_iterations = 0;
  ASSERT_TRUE(job.Run().ok());
  EXPECT_EQ(r.iterations, 0);
  EXPECT_TRUE(BitEqual(out, f.input));
  EXPECT_NEAR(r.error, TipError(f, f.input, target), 1e-5f);
}

TEST(CcdIk, RelativeToleranceScalesWithTheSkeleton) {
  Fixture f;
  std::mt19937 rng(26);
  const Eigen::Vector3f target = f.RandomReachable(rng);
  const float size = SkeletonSize(f.skeleton);
  std::vector<Transform> rel, abs;
  IkResult rr, ra;
  CcdIkJob job = f.Job(target, rel, &rr);
  job.tolerance = IkTolerance{.value = 0.01f,
                              .relative_to_skeleton = true,
                              .skeleton_size = 0.0f,
                              .relative_to_chain = false};
  ASSERT_TRUE(job.Run().ok());
  EXPECT_TRUE(rr.reached);
  EXPECT_LE(TipError(f, rel, target), 0.01f * size * 1.0001f);
  CcdIkJob job2 = f.Job(target, abs, &ra);
  job2.tolerance = AbsoluteTolerance(0.01f * size);
  ASSERT_TRUE(job2.Run().ok());
  EXPECT_TRUE(BitEqual(rel, abs));
  EXPECT_EQ(rr.iterations, ra.iterations);
}

TEST(CcdIk, ZeroJointWeightFreezesThatJoint) {
  Fixture f;
  std::mt19937 rng(27);
  const Eigen::Vector3f target = f.RandomReachable(rng);
  std::vector<Transform> out;
  CcdIkJob job = f.Job(target, out, nullptr);
  const std::vector<float> weights = {1.0f, 0.0f, 0.7f, 0.4f, 1.0f};
  job.joint_weights = weights;
  job.max_iterations = 50;
  ASSERT_TRUE(job.Run().ok());
  EXPECT_EQ(out[f.chain[1]].rotation.coeffs(),
            f.input[f.chain[1]].rotation.coeffs());
  EXPECT_LT(TipError(f, out, target), TipError(f, f.input, target));
  ExpectRotationOnly(f, out);
}

TEST(CcdIk, ZeroJointWeightStaysFrozenForUnreachableTargets) {
  Fixture f;
  const Eigen::Vector3f root = FkPositions(f.skeleton, f.input)[f.chain[0]];
  std::vector<Transform> out;
  IkResult r;
  CcdIkJob job =
      f.Job(root + Eigen::Vector3f(0.0f, 0.0f, 3.0f * f.length), out, &r);
  const std::vector<float> weights = {1.0f, 0.0f, 1.0f, 1.0f, 1.0f};
  job.joint_weights = weights;
  job.max_iterations = 30;
  ASSERT_TRUE(job.Run().ok());
  EXPECT_EQ(out[f.chain[1]].rotation.coeffs(),
            f.input[f.chain[1]].rotation.coeffs());
  EXPECT_GT(r.iterations, 1);  // no one-pass straightening
  EXPECT_LT(r.error, TipError(f, f.input, job.target));
}

TEST(CcdIk, IncrementalVariantStartsAtTheTipAndStillConverges) {
  Fixture f;
  std::mt19937 rng(28);
  const Eigen::Vector3f target = f.RandomReachable(rng);
  std::vector<Transform> out;
  IkResult r;
  CcdIkJob job = f.Job(target, out, &r);
  job.incremental = true;
  job.max_iterations = 1;
  job.tolerance = AbsoluteTolerance(0.0f);
  ASSERT_TRUE(job.Run().ok());
  // The first pass touches the two joints nearest the tip only.
  EXPECT_EQ(out[f.chain[0]].rotation.coeffs(),
            f.input[f.chain[0]].rotation.coeffs());
  EXPECT_EQ(out[f.chain[1]].rotation.coeffs(),
            f.input[f.chain[1]].rotation.coeffs());
  EXPECT_NE(out[f.chain[3]].rotation.coeffs(),
            f.input[f.chain[3]].rotation.coeffs());
  job.max_iterations = 500;
  job.tolerance = AbsoluteTolerance(5e-5f * f.length);
  ASSERT_TRUE(job.Run().ok());
  EXPECT_TRUE(r.reached);
  EXPECT_LE(TipError(f, out, target), 1e-4f * f.length);
}

TEST(CcdIk, MaxStepAngleCapsEachStep) {
  Fixture f;
  const Eigen::Vector3f target = FkPositions(f.skeleton, f.input)[f.chain[0]] +
                                 Eigen::Vector3f(-1.0f, -1.0f, 0.3f);
  std::vector<Transform> out;
  CcdIkJob job = f.Job(target, out, nullptr);
  job.max_iterations = 1;
  job.max_step_angle = 0.1f;
  ASSERT_TRUE(job.Run().ok());
  for (int j : f.chain) {
    // One sweep turns each joint once: the local change is the step,
    // conjugated by the parent frame, so of the same angle.
    EXPECT_LE(AngleBetween(out[j].rotation, f.input[j].rotation), 0.1f + 1e-5f)
        << j;
  }
  job.max_iterations = 2000;
  ASSERT_TRUE(job.Run().ok());
  EXPECT_LE(TipError(f, out, target), 1e-4f * f.length);
}

// A straight three-joint leg and a target on its own line, closer than the
// foot: every joint sees its effector and target in the same direction, so
// plain CCD never bends (the IK notes' singular case).
struct StraightLeg {
  Skeleton skeleton = MakeChainSkeleton(
      {{0.0f, -1.0f, 0.0f}, {0.0f, -1.0f, 0.0f}}, /*rotated_frames=*/false);
  std::vector<int> chain = ChainIndices(3);
  std::vector<Transform> input = RestPose(skeleton);
  Eigen::Vector3f hip = FkPositions(skeleton, input)[1];
};

TEST(CcdIk, SingularStraightChainStaysStuckWithoutHeuristics) {
  StraightLeg leg;
  std::vector<Transform> out = leg.input;
  IkResult r;
  CcdIkJob job;
  job.skeleton = &leg.skeleton;
  job.input = leg.input;
  job.chain = leg.chain;
  job.target = leg.hip + Eigen::Vector3f(0.0f, -1.5f, 0.0f);
  job.max_iterations = 100;
  job.output = absl::MakeSpan(out);
  job.result = &r;
  ASSERT_TRUE(job.Run().ok());
  // Documented: no progress, finite pose.
  EXPECT_FALSE(r.reached);
  EXPECT_NEAR(r.error, 0.5f, 1e-5f);
  for (const auto& t : out) EXPECT_TRUE(IsFinite(t));
}

TEST(CcdIk, HingeFallbackBendsASingularChainAboutTheFixedAxis) {
  StraightLeg leg;
  std::vector<Transform> out = leg.input;
  IkResult r;
  CcdIkJob job;
  job.skeleton = &leg.skeleton;
  job.input = leg.input;
  job.chain = leg.chain;
  job.target = leg.hip + Eigen::Vector3f(0.0f, -1.5f, 0.0f);
  job.max_iterations = 100;
  job.tolerance = AbsoluteTolerance(1e-5f);
  job.hinge_fallback = true;
  job.fallback_axis = Eigen::Vector3f::UnitX();
  job.output = absl::MakeSpan(out);
  job.result = &r;
  ASSERT_TRUE(job.Run().ok());
  EXPECT_TRUE(r.reached);
  const std::vector<Eigen::Vector3f> p = FkPositions(leg.skeleton, out);
  EXPECT_LT((p[3] - job.target).norm(), 1e-4f);
  // Bent in the plane perpendicular to the hinge axis.
  EXPECT_NEAR(p[2].x() - leg.hip.x(), 0.0f, 1e-5f);
  EXPECT_NEAR(p[3].x() - leg.hip.x(), 0.0f, 1e-5f);
  EXPECT_GT(std::fabs(p[2].z() - leg.hip.z()), 0.1f);
  // With a hinge limit the limit's axis is used, and its range respected:
  // the knee bends the positive way about +X, moving the foot toward -Z.
  std::vector<JointLimit> limits(leg.skeleton.num_joints());
  limits[2] = HingeLimit(Eigen::Vector3f::UnitX(), 0.0f, 2.6f);
  job.limits = limits;
  job.fallback_axis = Eigen::Vector3f::UnitZ();  // ignored for hinges
  ASSERT_TRUE(job.Run().ok());
  EXPECT_TRUE(r.reached);
  const std::vector<Eigen::Vector3f> q = FkPositions(leg.skeleton, out);
  EXPECT_NEAR(q[3].x() - leg.hip.x(), 0.0f, 1e-5f);
  const Eigen::Quaternionf knee = out[2].rotation;
  EXPECT_LT((knee * Eigen::Vector3f::UnitX() - Eigen::Vector3f::UnitX()).norm(),
            1e-5f);
  EXPECT_GT(2.0f * std::atan2(knee.x(), knee.w()), 0.1f);
}

// The IK notes' second case: a knee that may only bend one way, and a target
// in front of a straight leg. CCD's knee step wants the forbidden way, the
// limit clamps it back to straight, and the leg is stuck; the nudge pushes
// the clamped knee slightly into its range and CCD converges.
TEST(CcdIk, NudgeUnsticksAJointClampedStraight) {
  StraightLeg leg;
  std::vector<JointLimit> limits(leg.skeleton.num_joints());
  limits[2] = HingeLimit(Eigen::Vector3f::UnitX(), 0.0f, 2.6f);
  std::vector<Transform> out = leg.input;
  IkResult r;
  CcdIkJob job;
  job.skeleton = &leg.skeleton;
  job.input = leg.input;
  job.chain = leg.chain;
  job.target = leg.hip + Eigen::Vector3f(0.0f, -1.8f, 0.3f);
  job.max_iterations = 200;
  job.tolerance = AbsoluteTolerance(1e-4f);
  job.limits = limits;
  job.output = absl::MakeSpan(out);
  job.result = &r;
  job.polish = false;  // the sweeps alone
  ASSERT_TRUE(job.Run().ok());
  EXPECT_FALSE(r.reached);  // stuck against the limit
  // The closing step bends the knee the way the limit allows on its own.
  job.polish = true;
  ASSERT_TRUE(job.Run().ok());
  EXPECT_TRUE(r.reached);
  job.polish = false;
  job.nudge = true;
  ASSERT_TRUE(job.Run().ok());
  EXPECT_TRUE(r.reached);
  EXPECT_LT((FkPositions(leg.skeleton, out)[3] - job.target).norm(), 2e-4f);
  const Eigen::Quaternionf knee = out[2].rotation;
  const float angle = 2.0f * std::atan2(knee.x(), knee.w());
  EXPECT_GE(angle, 0.0f);
  EXPECT_LE(angle, 2.6f + 1e-5f);
  EXPECT_LT((knee * Eigen::Vector3f::UnitX() - Eigen::Vector3f::UnitX()).norm(),
            1e-5f);
}

TEST(CcdIk, LimitsAreNeverViolatedInTheOutput) {
  Fixture f;
  std::mt19937 rng(29);
  std::vector<JointLimit> limits(f.skeleton.num_joints());
  limits[1] = SwingTwistLimit(Eigen::Vector3f::UnitY(), 0.8f, -0.3f, 0.3f);
  limits[2] = HingeLimit(Eigen::Vector3f::UnitX(), -0.2f, 2.0f);
  limits[3] = EulerLimit(EulerOrder::kZXY, Eigen::Vector3f(-0.5f, -0.4f, -0.9f),
                         Eigen::Vector3f(0.6f, 0.4f, 0.3f));
  limits[4] =
      SwingTwistLimit(Eigen::Vector3f(1, 1, 0).normalized(), 0.5f, -0.1f, 0.2f);
  for (JointLimit& l : limits) {
    if (l.type != JointLimitType::kNone) {
      l.reference = f.input[&l - limits.data()].rotation;
    }
  }
  int reached = 0;
  for (int t = 0; t < 30; ++t) {
    // Targets from poses inside the limits, so they are reachable.
    std::vector<Transform> other = f.input;
    for (int j = 1; j <= 4; ++j) {
      other[j].rotation = ApplyJointLimit(limits[j], RandomRotation(rng, kPi));
    }
    const Eigen::Vector3f target = FkPositions(f.skeleton, other)[5];
    std::vector<Transform> out;
    IkResult r;
    CcdIkJob job = f.Job(target, out, &r);
    job.limits = limits;
    ASSERT_TRUE(job.Run().ok());
    reached += r.reached;
    ExpectRotationOnly(f, out);
    for (int j = 1; j <= 4; ++j) {
      // Inside: applying the limit again changes nothing.
      EXPECT_LT(AngleBetween(ApplyJointLimit(limits[j], out[j].rotation),
                             out[j].rotation),
                2e-4f)
          << "target " << t << " joint " << j;
    }
    const Eigen::Quaternionf rel =
        limits[2].reference.conjugate() * out[2].rotation;
    EXPECT_LT(
        (rel * Eigen::Vector3f::UnitX() - Eigen::Vector3f::UnitX()).norm(),
        1e-4f);
  }
  // Limits make local minima possible; most targets are still found.
  EXPECT_GE(reached, 27);  // measured 30 of 30
}

// Targets at 0.95 to 0.999 of the reach of a nearly straight chain, where
// sweeps crawl (each turns the joints a little further the same way): the
// closing step reaches every one within the default tolerance, in a tenth
// of the iterations sweeps alone use to miss some of them; with limits,
// joint weights (one frozen) and the hinge fallback set as well, no limit is
// violated, the frozen joint never turns, and the hinge stays a hinge.
TEST(CcdIk, ClosingStepReachesTargetsNearFullReach) {
  const LongChainCase c(81);
  const std::vector<Eigen::Vector3f> p0 = FkPositions(c.skeleton, c.input);
  const float length = ChainLength(p0, c.chain);
  const Eigen::Vector3f root = p0[c.chain.front()];
  std::mt19937 rng(82);
  std::uniform_real_distribution<float> fraction(0.95f, 0.999f);
  std::vector<JointLimit> limits(c.skeleton.num_joints());
  limits[3] = HingeLimit(Eigen::Vector3f::UnitX(), -0.3f, 1.5f);
  limits[5] = SwingTwistLimit(Eigen::Vector3f::UnitY(), 0.9f, -0.2f, 0.2f);
  limits[7] = EulerLimit(EulerOrder::kXYZ, Eigen::Vector3f(-0.6f, -0.3f, -0.6f),
                         Eigen::Vector3f(0.6f, 0.3f, 0.6f));
  for (int j : {3, 5, 7}) limits[j].reference = c.input[j].rotation;
  std::vector<float> weights(c.chain.size(), 1.0f);
  weights[1] = 0.0f;
  weights[4] = 0.5f;
  int polished = 0, swept = 0, limited_reached = 0;
  long polished_iterations = 0, swept_iterations = 0;
  for (int t = 0; t < 50; ++t) {
    const Eigen::Vector3f dir =
        RandomRotation(rng, 0.5f) * (p0[c.chain.back()] - root).normalized();
    const Eigen::Vector3f target = root + dir * (fraction(rng) * length);
    std::vector<Transform> out;
    IkResult r;
    CcdIkJob job = testing_util::DefaultJob<CcdIkJob>(c.skeleton, c.input,
                                                      c.chain, target, out, &r);
    ASSERT_TRUE(job.Run().ok());
    polished += r.reached;
    polished_iterations += r.iterations;
    EXPECT_LE((FkPositions(c.skeleton, out)[c.chain.back()] - target).norm(),
              1.001f * kDefaultChainRelativeTolerance * length)
        << t;
    job.polish = false;
    ASSERT_TRUE(job.Run().ok());
    swept += r.reached;
    swept_iterations += r.iterations;

    job.polish = true;
    job.limits = limits;
    job.joint_weights = weights;
    job.hinge_fallback = true;
    ASSERT_TRUE(job.Run().ok());
    limited_reached += r.reached;
    for (int j : {3, 5, 7}) {
      EXPECT_LT(AngleBetween(ApplyJointLimit(limits[j], out[j].rotation),
                             out[j].rotation),
                2e-4f)
          << "target " << t << " joint " << j;
    }
    EXPECT_EQ(out[c.chain[1]].rotation.coeffs(),
              c.input[c.chain[1]].rotation.coeffs());
    const Eigen::Quaternionf hinge =
        limits[3].reference.conjugate() * out[3].rotation;
    EXPECT_LT(
        (hinge * Eigen::Vector3f::UnitX() - Eigen::Vector3f::UnitX()).norm(),
        1e-4f);
    for (int j = 0; j < c.skeleton.num_joints(); ++j) {
      EXPECT_EQ(out[j].translation, c.input[j].translation);
      EXPECT_TRUE(out[j].rotation.coeffs().allFinite());
    }
  }
  // Measured: 50 in 333 iterations; sweeps alone 44 in 3119; limited 50.
  EXPECT_EQ(polished, 50);
  EXPECT_LE(swept, 47) << "sweeps alone reached " << swept;
  EXPECT_LT(polished_iterations * 4, swept_iterations)
      << polished_iterations << " against " << swept_iterations;
  // A frozen joint and limits could make targets unreachable.
  EXPECT_GE(limited_reached, 45) << limited_reached;
}

TEST(CcdIk, DegenerateTargetsGiveFiniteDocumentedResults) {
  Fixture f;
  const std::vector<Eigen::Vector3f> p0 = FkPositions(f.skeleton, f.input);
  // Target on the chain root: the chain folds toward it; finite, lengths
  // kept, the error is what FK says.
  {
    std::vector<Transform> out;
    IkResult r;
    ASSERT_TRUE(f.Job(p0[f.chain[0]], out, &r).Run().ok());
    ExpectRotationOnly(f, out);
    EXPECT_NEAR(r.error, TipError(f, out, p0[f.chain[0]]), 1e-5f);
    EXPECT_LT(r.error, TipError(f, f.input, p0[f.chain[0]]));
  }
  // Target exactly on the tip: reached with no iteration.
  {
    std::vector<Transform> out;
    IkResult r;
    ASSERT_TRUE(f.Job(p0[f.chain.back()], out, &r).Run().ok());
    EXPECT_TRUE(r.reached);
    EXPECT_EQ(r.iterations, 0);
    EXPECT_TRUE(BitEqual(out, f.input));
  }
}

TEST(CcdIk, ZeroLengthBonesAreHandled) {
  const Skeleton s = MakeChainSkeleton(
      {{0.0f, 1.0f, 0.0f}, {0.0f, 0.0f, 0.0f}, {0.5f, 0.5f, 0.0f}});
  const std::vector<int> chain = ChainIndices(4);
  const std::vector<Transform> input = RestPose(s);
  std::vector<Transform> other = input;
  other[1].rotation =
      Eigen::Quaternionf(Eigen::AngleAxisf(0.8f, Eigen::Vector3f::UnitZ()));
  other[3].rotation =
      Eigen::Quaternionf(Eigen::AngleAxisf(-1.1f, Eigen::Vector3f::UnitX()));
  const Eigen::Vector3f target = FkPositions(s, other)[4];
  std::vector<Transform> out = input;
  IkResult r;
  CcdIkJob job;
  job.skeleton = &s;
  job.input = input;
  job.chain = chain;
  job.target = target;
  job.max_iterations = 500;
  job.tolerance = AbsoluteTolerance(1e-5f);
  job.output = absl::MakeSpan(out);
  job.result = &r;
  const absl::Status status = job.Run();
  ASSERT_TRUE(status.ok()) << status;
  for (const auto& t : out) EXPECT_TRUE(IsFinite(t));
  EXPECT_TRUE(r.reached);
  EXPECT_LT((FkPositions(s, out)[4] - target).norm(), 1e-4f);
  // All bones zero: nothing can move; answered with the input.
  const Skeleton z = MakeChainSkeleton({{0, 0, 0}, {0, 0, 0}});
  std::vector<Transform> zin = RestPose(z), zout = zin;
  job.skeleton = &z;
  job.input = zin;
  const std::vector<int> zchain = ChainIndices(3);
  job.chain = zchain;
  job.output = absl::MakeSpan(zout);
  ASSERT_TRUE(job.Run().ok());
  EXPECT_FALSE(r.reached);
  for (const auto& t : zout) EXPECT_TRUE(IsFinite(t));
}

// A straight leg and a target behind the hip on the leg's own line. Plain
// CCD: the knee's step is a half turn about a deterministic perpendicular,
// which folds the foot onto the hip; from there every step is collinear or
// zero and the chain stays folded (documented: finite, error 0.5, the same
// answer every time). With the hinge fallback the knee opens to the right
// angle and the target is reached.
TEST(CcdIk, CollinearChainWithTargetBehindIt) {
  StraightLeg leg;
  std::vector<Transform> out = leg.input;
  IkResult r;
  CcdIkJob job;
  job.skeleton = &leg.skeleton;
  job.input = leg.input;
  job.chain = leg.chain;
  job.target = leg.hip + Eigen::Vector3f(0.0f, 0.5f, 0.0f);
  job.max_iterations = 100;
  job.tolerance = AbsoluteTolerance(1e-5f);
  job.output = absl::MakeSpan(out);
  job.result = &r;
  ASSERT_TRUE(job.Run().ok());
  for (const auto& t : out) EXPECT_TRUE(IsFinite(t));
  const std::vector<Eigen::Vector3f> folded = FkPositions(leg.skeleton, out);
  EXPECT_LT((folded[3] - leg.hip).norm(), 1e-5f);
  EXPECT_NEAR(r.error, 0.5f, 1e-5f);
  std::vector<Transform> again = leg.input;
  job.output = absl::MakeSpan(again);
  ASSERT_TRUE(job.Run().ok());
  EXPECT_TRUE(BitEqual(out, again));

  job.hinge_fallback = true;
  ASSERT_TRUE(job.Run().ok());
  EXPECT_TRUE(r.reached);
  EXPECT_LT((FkPositions(leg.skeleton, again)[3] - job.target).norm(), 1e-4f);
}

}  // namespace ccd_ik_test
}  // namespace posewire
