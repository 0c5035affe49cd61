// FABRIK IK (fabrik_ik.h), checked against independent matrix FK: reachable
// targets reached, unreachable ones answered in one pass with a straight
// chain pointing at them, rotations only, twist about each bone preserved
// (the corrected WorldToIKChain), joint limits never violated,
// planar chains with signed bend limits, sub-base trees (a hand with
// fingers, a spine with two arms, the pull-weighted centroid), weight 0 bit
// for bit, degenerate geometry, invalid input and determinism.

#include "solver_core/chain_ik/fabrik_ik.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "solver_core/model/pose.h"
#include "tests/core/chain_ik_test_util.h"

namespace posewire {
namespace fabrik_ik_test {

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

struct Fixture : testing_util::TestChain<FabrikIkJob> {
  FabrikIkJob Job(const Eigen::Vector3f& target, std::vector<Transform>& out,
                  IkResult* result) const {
    return MakeJob(target, out, result, 200);
  }
};

float TipError(const Fixture& f, const std::vector<Transform>& pose,
               const Eigen::Vector3f& target) {
  return (FkPositions(f.skeleton, pose)[f.chain.back()] - target).norm();
}

void ExpectRotationOnly(const Skeleton& s, const std::vector<Transform>& in,
                        const std::vector<Transform>& out) {
  for (int j = 0; j < s.num_joints(); ++j) {
    EXPECT_EQ(out[j].translation, in[j].translation) << j;
    EXPECT_EQ(out[j].scale, in[j].scale) << j;
    EXPECT_NEAR(out[j].rotation.norm(), 1.0f, 1e-5f) << j;
  }
  const std::vector<Eigen::Vector3f> p0 = FkPositions(s, in);
  const std::vector<Eigen::Vector3f> p1 = FkPositions(s, out);
  for (int j = 1; j < s.num_joints(); ++j) {
    const int p = s.parent(j);
    EXPECT_NEAR((p1[j] - p1[p]).norm(), (p0[j] - p0[p]).norm(), 1e-5f) << j;
  }
}

TEST(FabrikIk, ReachesReachableTargetsWithinTolerance) {
  Fixture f;
  std::mt19937 rng(31);
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
    ExpectRotationOnly(f.skeleton, f.input, out);
  }
  EXPECT_EQ(reached, 40);
}

// Textbook FABRIK (Aristidou and Lasenby 2011) on positions, in double:
// `iterations` forward-and-backward passes with the root pinned; with
// `relax` r > 0, every iteration from the third on starts from the last
// one's result extended by b times its move, b = min(r, rho / (1 - rho))
// and rho the ratio of the last two tip errors (fabrik_ik.h's
// over-relaxation).
std::vector<Eigen::Vector3d> ReferenceFabrik(std::vector<Eigen::Vector3d> p,
                                             const Eigen::Vector3d& target,
                                             int iterations,
                                             double relax = 0.0) {
  const size_t n = p.size();
  std::vector<double> len(n, 0.0);
  for (size_t i = 1; i < n; ++i) len[i] = (p[i] - p[i - 1]).norm();
  const Eigen::Vector3d root = p[0];
  std::vector<Eigen::Vector3d> start = p;
  double error = 0.0, last_error = 0.0;
  for (int it = 0; it < iterations; ++it) {
    if (it >= 2 && relax > 0.0 && error < last_error) {
      const double rho = error / last_error;
      const double b = std::min(relax, rho / (1.0 - rho));
      for (size_t i = 1; i + 1 < n; ++i) p[i] += b * (p[i] - start[i]);
    }
    start = p;
    p[n - 1] = target;
    for (size_t i = n - 1; i-- > 1;) {
      p[i] = p[i + 1] + (p[i] - p[i + 1]).normalized() * len[i + 1];
    }
    p[0] = root;
    for (size_t i = 1; i < n; ++i) {
      p[i] = p[i - 1] + (p[i] - p[i - 1]).normalized() * len[i];
    }
    last_error = error;
    error = (p[n - 1] - target).norm();
  }
  return p;
}

// Runs `iterations` iterations (tolerance 0) with the given over-relaxation
// from f.input toward `target` and expects every chain joint within
// `tolerance` of ReferenceFabrik's. Returns the output pose.
std::vector<Transform> ExpectFollowsReference(const Fixture& f,
                                              const Eigen::Vector3f& target,
                                              int iterations, float relax,
                                              double tolerance, int trial) {
  const std::vector<Eigen::Vector3f> p0 = FkPositions(f.skeleton, f.input);
  std::vector<Transform> out;
  FabrikIkJob job = f.MakeJob(target, out, nullptr, iterations);
  job.tolerance = AbsoluteTolerance(0.0f);
  job.over_relaxation = relax;
  job.polish = false;  // the iterations alone
  EXPECT_TRUE(job.Run().ok());
  std::vector<Eigen::Vector3d> start;
  for (int j : f.chain) start.push_back(p0[j].cast<double>());
  const std::vector<Eigen::Vector3d> want =
      ReferenceFabrik(start, target.cast<double>(), iterations, relax);
  const std::vector<Eigen::Vector3f> got = FkPositions(f.skeleton, out);
  for (size_t i = 0; i < f.chain.size(); ++i) {
    EXPECT_LT((got[f.chain[i]].cast<double>() - want[i]).norm(),
              tolerance * f.length)
        << "trial " << trial << " node " << i;
  }
  return out;
}

// The chain passes carry each squared distance as a scalar (fabrik_ik.cc's
// ReachPass); they must follow the textbook passes, also on tightly folded
// chains, where joints pass close to their neighbours' old places and the
// carried sum cancels.
TEST(FabrikIk, ChainPassesFollowTextbookFabrikOnFoldedChains) {
  std::mt19937 rng(77);
  for (int trial = 0; trial < 200; ++trial) {
    Fixture f;
    // Folded: large random bends; targets near the root as well as far.
    for (size_t i = 0; i + 1 < f.chain.size(); ++i) {
      f.input[f.chain[i]].rotation =
          RandomRotation(rng, trial % 2 == 0 ? 3.0f : 1.0f);
    }
    const std::vector<Eigen::Vector3f> p0 = FkPositions(f.skeleton, f.input);
    // Within reach (an unreachable target is answered in one straight pass
    // instead).
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    const float reach = (trial % 3 == 0 ? 0.2f : 0.9f) * f.length;
    const Eigen::Vector3f target =
        p0[f.chain[0]] +
        Eigen::Vector3f(u(rng), u(rng), u(rng)).normalized() * reach;
    ExpectFollowsReference(f, target, 1 + trial % 6, 0.0f, 1e-5, trial);
  }
}

// The over-relaxed passes follow the reference's over-relaxed iterations
// (so the extension starts after the second iteration, follows the tip's
// error rate, and the answer is the last un-extended pose, at exact bone
// lengths).
TEST(FabrikIk, OverRelaxedPassesFollowTheReference) {
  std::mt19937 rng(78);
  for (int trial = 0; trial < 100; ++trial) {
    Fixture f;
    for (size_t i = 0; i + 1 < f.chain.size(); ++i) {
      f.input[f.chain[i]].rotation = RandomRotation(rng, 1.0f);
    }
    const Eigen::Vector3f target = f.RandomReachable(rng);
    const std::vector<Transform> out =
        ExpectFollowsReference(f, target, 1 + trial % 8, 0.8f, 1e-4, trial);
    ExpectRotationOnly(f.skeleton, f.input, out);
  }
}

// What over-relaxation buys and costs, on random reachable targets solved
// to 5e-5 of the chain's length. On the short bent test chain, which
// classic FABRIK solves in about 3 iterations, the extension stays small
// (a fixed one overshoots such fast solves): no more iterations than
// classic in total. On a 10-joint chain with a nearly straight start, where
// classic FABRIK creeps, it saves a third of them at least. Either way every
// target is reached and the joints end within 2% of the chain's length of
// classic FABRIK's answer.
void CompareOverRelaxation(const Skeleton& skeleton,
                           const std::vector<Transform>& input,
                           const std::vector<int>& chain,
                           const std::vector<Eigen::Vector3f>& targets,
                           double max_iteration_ratio) {
  const float length = ChainLength(FkPositions(skeleton, input), chain);
  int classic_iterations = 0, relaxed_iterations = 0;
  for (size_t t = 0; t < targets.size(); ++t) {
    FabrikIkJob job =
        ChainJob<FabrikIkJob>(skeleton, input, chain, targets[t], 200);
    job.polish = false;  // the iterations alone
    const ClassicAndRelaxed r =
        SolveClassicAndRelaxed(job, kDefaultFabrikOverRelaxation);
    // Both stop when the tip is within the tolerance on positions; the
    // error reported comes from the final pose's rotations and may exceed
    // it by rounding.
    ASSERT_LE(r.classic.error, 1.01f * job.tolerance.value) << t;
    EXPECT_LE(r.relaxed.error, 1.01f * job.tolerance.value)
        << t << ": " << r.relaxed.iterations << " iterations (classic "
        << r.classic.iterations << ")";
    classic_iterations += r.classic.iterations;
    relaxed_iterations += r.relaxed.iterations;
    const std::vector<Eigen::Vector3f> a = FkPositions(skeleton, r.classic_out);
    const std::vector<Eigen::Vector3f> b = FkPositions(skeleton, r.relaxed_out);
    for (int j : chain) EXPECT_LT((a[j] - b[j]).norm(), 0.02f * length) << t;
    ExpectRotationOnly(skeleton, input, r.relaxed_out);
  }
  EXPECT_LE(relaxed_iterations, max_iteration_ratio * classic_iterations)
      << classic_iterations << " classic, " << relaxed_iterations
      << " over-relaxed";
}

TEST(FabrikIk, OverRelaxationNeverSlowsTheShortTestChain) {
  const Fixture f;
  CompareOverRelaxation(f.skeleton, f.input, f.chain,
                        f.RandomReachableTargets(100, 79), 1.0);
}

TEST(FabrikIk, OverRelaxationSavesIterationsOnALongChain) {
  const LongChainCase c(80);
  CompareOverRelaxation(c.skeleton, c.input, c.chain, c.targets, 0.67);
}

TEST(FabrikIk, RejectsOverRelaxationOutsideItsRange) {
  const Fixture f;
  std::vector<Transform> out;
  ExpectOverRelaxationRejected(
      f.Job(Eigen::Vector3f(0.5f, 0.5f, 0.0f), out, nullptr),
      {-0.1f, 1.0f, 2.0f, std::numeric_limits<float>::quiet_NaN()},
      "fabrik_ik.over_relaxation");
}

TEST(FabrikIk, UnreachableTargetStraightensTheChainTowardItInOnePass) {
  Fixture f;
  const Eigen::Vector3f root = FkPositions(f.skeleton, f.input)[f.chain[0]];
  const Eigen::Vector3f dir = Eigen::Vector3f(-1.0f, 0.3f, 2.0f).normalized();
  const Eigen::Vector3f target = root + dir * (f.length * 3.0f);
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
  EXPECT_NEAR(r.error, 2.0f * f.length, 1e-4f * f.length);
  ExpectRotationOnly(f.skeleton, f.input, out);
}

// The solved pose changes each joint by its parent's change and then a pure
// swing onto its new bone direction: no twist about any bone. Under a
// rotated parent with rotated joint frames, both readings of Szauer's (2020)
// WorldToIKChain that go wrong (an identity delta; a joint-frame delta
// pre-multiplied onto the local rotation) fail this or the reach test.
TEST(FabrikIk, MapsPositionsBackPreservingTwist) {
  Fixture f;
  std::mt19937 rng(32);
  for (int t = 0; t < 10; ++t) {
    const Eigen::Vector3f target = f.RandomReachable(rng);
    std::vector<Transform> out;
    ASSERT_TRUE(f.Job(target, out, nullptr).Run().ok());
    const std::vector<Eigen::Vector3f> p0 = FkPositions(f.skeleton, f.input);
    const std::vector<Eigen::Vector3f> p1 = FkPositions(f.skeleton, out);
    const std::vector<Eigen::Quaternionf> r0 = FkRotations(f.skeleton, f.input);
    const std::vector<Eigen::Quaternionf> r1 = FkRotations(f.skeleton, out);
    for (size_t i = 0; i + 1 < f.chain.size(); ++i) {
      const int j = f.chain[i], k = f.chain[i + 1];
      const Eigen::Quaternionf parent_delta =
          i == 0 ? Eigen::Quaternionf::Identity()
                 : Eigen::Quaternionf(r1[f.chain[i - 1]] *
                                      r0[f.chain[i - 1]].conjugate());
      const Eigen::Vector3f d0 = parent_delta * (p0[k] - p0[j]).normalized();
      const Eigen::Vector3f d1 = (p1[k] - p1[j]).normalized();
      const Eigen::Quaternionf own = r1[j] * (parent_delta * r0[j]).conjugate();
      EXPECT_NEAR(AngleOf(own), std::acos(std::clamp(d0.dot(d1), -1.0f, 1.0f)),
                  3e-3f)
          << t << " " << i;
    }
    EXPECT_EQ(out[f.chain.back()].rotation.coeffs(),
              f.input[f.chain.back()].rotation.coeffs());
  }
}

TEST(FabrikIk, WeightZeroReturnsTheInputBitForBitAndWeightsBlend) {
  Fixture f;
  std::mt19937 rng(33);
  const Eigen::Vector3f target = f.RandomReachable(rng);
  std::vector<Transform> out;
  IkResult r;
  FabrikIkJob job = f.Job(target, out, &r);
  job.weight = 0.0f;
  for (auto& t : out) t.translation.setConstant(7.0f);
  ASSERT_TRUE(job.Run().ok());
  EXPECT_TRUE(BitEqual(out, f.input));
  EXPECT_EQ(r.iterations, 0);
  EXPECT_NEAR(r.error, TipError(f, f.input, target), 1e-5f);

  std::vector<Transform> full, part;
  ASSERT_TRUE(f.Job(target, full, nullptr).Run().ok());
  FabrikIkJob blend = f.Job(target, part, nullptr);
  blend.weight = 0.25f;
  ASSERT_TRUE(blend.Run().ok());
  for (int j : f.chain) {
    EXPECT_LT(AngleBetween(part[j].rotation,
                           f.input[j].rotation.slerp(0.25f, full[j].rotation)),
              1e-5f);
  }
  // In place gives the same answer.
  std::vector<Transform> in_place = f.input;
  blend.input = in_place;
  blend.output = absl::MakeSpan(in_place);
  ASSERT_TRUE(blend.Run().ok());
  EXPECT_TRUE(BitEqual(in_place, part));
}

TEST(FabrikIk, IsDeterministic) {
  Fixture f;
  std::mt19937 rng(34);
  const Eigen::Vector3f a = f.RandomReachable(rng);
  std::vector<Transform> x, y, z;
  ASSERT_TRUE(f.Job(a, x, nullptr).Run().ok());
  ASSERT_TRUE(f.Job(f.RandomReachable(rng), z, nullptr).Run().ok());
  ASSERT_TRUE(f.Job(a, y, nullptr).Run().ok());
  EXPECT_TRUE(BitEqual(x, y));
}

TEST(FabrikIk, RejectsInvalidInputNamingTheField) {
  Fixture f;
  std::vector<Transform> out;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto expect_invalid = [&](const FabrikIkJob& job, const char* text) {
    const absl::Status s = job.Run();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(s.message(), HasSubstr(text));
  };
  FabrikIkJob job = f.Job(Eigen::Vector3f(0, 0, nan), out, nullptr);
  expect_invalid(job, "fabrik_ik.target: NaN");
  job.target = Eigen::Vector3f::Zero();
  job.max_iterations = 20000;
  expect_invalid(job, "fabrik_ik.max_iterations");
  job.max_iterations = 10;
  const std::vector<SignedAngleRange> ranges(3);
  job.planar_limits = ranges;
  expect_invalid(job, "fabrik_ik.planar_limits: set plane_normal");
  job.plane_normal = Eigen::Vector3f::UnitZ();
  const std::vector<SignedAngleRange> wrong(2);
  job.planar_limits = wrong;
  expect_invalid(job, "fabrik_ik.planar_limits");
  job.planar_limits = {};
  job.plane_normal = Eigen::Vector3f(nan, 0, 0);
  expect_invalid(job, "fabrik_ik.plane_normal");
  job.plane_normal = Eigen::Vector3f::Zero();
  const std::vector<int> single = {2};
  job.chain = single;
  expect_invalid(job, "fabrik_ik.chain");
}

TEST(FabrikIk, LimitsAreNeverViolatedAndReachableTargetsAreFound) {
  Fixture f;
  std::mt19937 rng(35);
  std::vector<JointLimit> limits(f.skeleton.num_joints());
  limits[1] = SwingTwistLimit(Eigen::Vector3f::UnitY(), 0.8f, -0.3f, 0.3f);
  limits[2] = HingeLimit(Eigen::Vector3f::UnitX(), -0.2f, 2.0f);
  limits[3] = EulerLimit(EulerOrder::kZXY, Eigen::Vector3f(-0.5f, -0.4f, -0.9f),
                         Eigen::Vector3f(0.6f, 0.4f, 0.3f));
  limits[4] =
      SwingTwistLimit(Eigen::Vector3f(1, 1, 0).normalized(), 0.5f, -0.1f, 0.2f);
  for (int j = 1; j <= 4; ++j) limits[j].reference = f.input[j].rotation;
  int reached = 0;
  for (int t = 0; t < 30; ++t) {
    std::vector<Transform> other = f.input;
    for (int j = 1; j <= 4; ++j) {
      other[j].rotation = ApplyJointLimit(limits[j], RandomRotation(rng, kPi));
    }
    const Eigen::Vector3f target = FkPositions(f.skeleton, other)[5];
    std::vector<Transform> out;
    IkResult r;
    FabrikIkJob job = f.Job(target, out, &r);
    job.limits = limits;
    ASSERT_TRUE(job.Run().ok());
    reached += r.reached;
    EXPECT_NEAR(r.error, TipError(f, out, target), 1e-5f);
    ExpectRotationOnly(f.skeleton, f.input, out);
    for (int j = 1; j <= 4; ++j) {
      EXPECT_LT(AngleBetween(ApplyJointLimit(limits[j], out[j].rotation),
                             out[j].rotation),
                2e-4f)
          << "target " << t << " joint " << j;
    }
  }
  EXPECT_GE(reached, 18);  // measured 22 of 30
}

TEST(FabrikIk, UnreachableTargetWithLimitsStaysInsideThem) {
  Fixture f;
  std::vector<JointLimit> limits(f.skeleton.num_joints());
  for (int j = 1; j <= 4; ++j) {
    limits[j] = SwingTwistLimit(Eigen::Vector3f::UnitY(), 0.3f, -0.1f, 0.1f);
    limits[j].reference = f.input[j].rotation;
  }
  const Eigen::Vector3f root = FkPositions(f.skeleton, f.input)[1];
  std::vector<Transform> out;
  IkResult r;
  FabrikIkJob job = f.Job(root + Eigen::Vector3f(0.0f, -10.0f, 0.0f), out, &r);
  job.limits = limits;
  ASSERT_TRUE(job.Run().ok());
  EXPECT_FALSE(r.reached);
  for (int j = 1; j <= 4; ++j) {
    EXPECT_LT(AngleBetween(ApplyJointLimit(limits[j], out[j].rotation),
                           out[j].rotation),
              2e-4f);
  }
  // It did what it could: closer than the input.
  EXPECT_LT(r.error, TipError(f, f.input, job.target));
}

// A planar chain in the XY plane (a 2D follow solver): the output
// stays in the plane, reaches in-plane targets, and with signed bend limits
// every bend (the angle from one segment to the next about +Z) stays in its
// range.
struct PlanarArm {
  Skeleton skeleton = MakeChainSkeleton({{1.0f, 0.0f, 0.0f},
                                         {0.8f, 0.0f, 0.0f},
                                         {0.6f, 0.0f, 0.0f},
                                         {0.4f, 0.0f, 0.0f}},
                                        /*rotated_frames=*/false);
  std::vector<int> chain = ChainIndices(5);
  std::vector<Transform> input = RestPose(skeleton);
};

float Bend(const Eigen::Vector3f& a, const Eigen::Vector3f& b) {
  return std::atan2(a.x() * b.y() - a.y() * b.x(),
                    a.x() * b.x() + a.y() * b.y());
}

TEST(FabrikIk, PlanarChainStaysInItsPlaneAndRespectsSignedBendLimits) {
  PlanarArm arm;
  const Eigen::Vector3f root = FkPositions(arm.skeleton, arm.input)[1];
  // Bends may only go counter-clockwise, by 0 to 70 degrees.
  const std::vector<SignedAngleRange> bends(3, SignedAngleRange{0.0f, 1.2217f});
  std::mt19937 rng(36);
  std::uniform_real_distribution<float> u(0.0f, 1.2f);
  int reached = 0;
  for (int t = 0; t < 30; ++t) {
    // A target made by bends inside the limits (and a base turn).
    float angle = 2.0f * u(rng) - 1.2f;
    Eigen::Vector3f p = root;
    const float lengths[] = {1.0f, 0.8f, 0.6f, 0.4f};
    for (int s = 0; s < 4; ++s) {
      if (s > 0) angle += u(rng);
      p += lengths[s] * Eigen::Vector3f(std::cos(angle), std::sin(angle), 0.0f);
    }
    std::vector<Transform> out = arm.input;
    IkResult r;
    FabrikIkJob job;
    job.skeleton = &arm.skeleton;
    job.input = arm.input;
    job.chain = arm.chain;
    job.target = p;
    job.max_iterations = 300;
    job.tolerance = AbsoluteTolerance(1e-4f);
    job.plane_normal = Eigen::Vector3f::UnitZ();
    job.planar_limits = bends;
    job.output = absl::MakeSpan(out);
    job.result = &r;
    ASSERT_TRUE(job.Run().ok());
    reached += r.reached;
    const std::vector<Eigen::Vector3f> q = FkPositions(arm.skeleton, out);
    for (int j : arm.chain) EXPECT_NEAR(q[j].z(), root.z(), 1e-5f) << j;
    for (int k = 1; k + 1 < 5; ++k) {
      const float bend = Bend(q[arm.chain[k]] - q[arm.chain[k - 1]],
                              q[arm.chain[k + 1]] - q[arm.chain[k]]);
      EXPECT_GE(bend, -1e-4f) << t << " " << k;
      EXPECT_LE(bend, 1.2217f + 1e-4f) << t << " " << k;
    }
    ExpectRotationOnly(arm.skeleton, arm.input, out);
  }
  // Measured 24 of 30: with one-sided bend ranges FABRIK can settle in a
  // local minimum (fabrik_ik.h); the limits themselves always hold.
  EXPECT_GE(reached, 20);
}

TEST(FabrikIk, PlanarChainProjectsAnOffPlaneTarget) {
  PlanarArm arm;
  const Eigen::Vector3f root = FkPositions(arm.skeleton, arm.input)[1];
  std::vector<Transform> out = arm.input;
  IkResult r;
  FabrikIkJob job;
  job.skeleton = &arm.skeleton;
  job.input = arm.input;
  job.chain = arm.chain;
  job.target = root + Eigen::Vector3f(1.0f, 1.5f, 0.7f);
  job.max_iterations = 100;
  job.tolerance = AbsoluteTolerance(1e-4f);
  job.plane_normal = Eigen::Vector3f(0.0f, 0.0f, 2.0f);  // any length
  job.output = absl::MakeSpan(out);
  job.result = &r;
  ASSERT_TRUE(job.Run().ok());
  const std::vector<Eigen::Vector3f> q = FkPositions(arm.skeleton, out);
  EXPECT_NEAR(q[5].z(), root.z(), 1e-5f);
  // The tip lands on the projection; the error reported is to the target.
  EXPECT_LT((q[5] - (root + Eigen::Vector3f(1.0f, 1.5f, 0.0f))).norm(), 2e-4f);
  EXPECT_NEAR(r.error, 0.7f, 2e-4f);
  EXPECT_FALSE(r.reached);
}

TEST(FabrikIk, DegenerateCasesGiveFiniteDocumentedResults) {
  Fixture f;
  const std::vector<Eigen::Vector3f> p0 = FkPositions(f.skeleton, f.input);
  // Target on the chain root.
  {
    std::vector<Transform> out;
    IkResult r;
    ASSERT_TRUE(f.Job(p0[1], out, &r).Run().ok());
    for (const auto& t : out) EXPECT_TRUE(IsFinite(t));
    ExpectRotationOnly(f.skeleton, f.input, out);
    EXPECT_NEAR(r.error, TipError(f, out, p0[1]), 1e-5f);
    EXPECT_LT(r.error, TipError(f, f.input, p0[1]));
  }
  // Target already on the tip.
  {
    std::vector<Transform> out;
    IkResult r;
    ASSERT_TRUE(f.Job(p0[5], out, &r).Run().ok());
    EXPECT_TRUE(r.reached);
    EXPECT_EQ(r.iterations, 0);
    EXPECT_TRUE(BitEqual(out, f.input));
  }
}

// Straight chains with the target on their own line, behind the root or in
// front of it but closer than the tip: FABRIK alone never leaves the line;
// the singularity offset makes both reachable.
TEST(FabrikIk, CollinearChainWithTargetOnItsLineIsReached) {
  const Skeleton s = MakeChainSkeleton(
      {{0.0f, -1.0f, 0.0f}, {0.0f, -1.0f, 0.0f}, {0.0f, -0.5f, 0.0f}},
      /*rotated_frames=*/false);
  const std::vector<int> chain = ChainIndices(4);
  const std::vector<Transform> input = RestPose(s);
  const Eigen::Vector3f hip = FkPositions(s, input)[1];
  for (float along : {0.4f, -1.2f, -2.0f, 0.0f}) {
    std::vector<Transform> out = input;
    IkResult r;
    FabrikIkJob job;
    job.skeleton = &s;
    job.input = input;
    job.chain = chain;
    job.target = hip + Eigen::Vector3f(0.0f, along, 0.0f);
    job.max_iterations = 200;
    job.tolerance = AbsoluteTolerance(1e-5f);
    job.output = absl::MakeSpan(out);
    job.result = &r;
    ASSERT_TRUE(job.Run().ok());
    for (const auto& t : out) EXPECT_TRUE(IsFinite(t));
    EXPECT_TRUE(r.reached) << along;
    EXPECT_LT((FkPositions(s, out)[4] - job.target).norm(), 1e-4f) << along;
    ExpectRotationOnly(s, input, out);
  }
}

TEST(FabrikIk, ZeroLengthBonesAreHandled) {
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
  FabrikIkJob job;
  job.skeleton = &s;
  job.input = input;
  job.chain = chain;
  job.target = target;
  job.max_iterations = 200;
  job.tolerance = AbsoluteTolerance(1e-5f);
  job.output = absl::MakeSpan(out);
  job.result = &r;
  ASSERT_TRUE(job.Run().ok());
  for (const auto& t : out) EXPECT_TRUE(IsFinite(t));
  EXPECT_TRUE(r.reached);
  // The joint after the zero-length bone keeps its rotation only if it has
  // nothing to aim; here it aims the last bone, so just check the reach.
  EXPECT_LT((FkPositions(s, out)[4] - target).norm(), 1e-4f);
}

// A hand: wrist (sub-base) with three two-bone fingers, under a forearm.
// Targets are fingertips of another pose of the hand (wrist and fingers
// turned), so an exact solution exists.
struct Hand {
  Skeleton skeleton;
  std::vector<Transform> input;
  int forearm = 1, wrist = 2;
  std::vector<int> tips;

  Hand() {
    SkeletonDesc d;
    auto add = [&](const char* name, int parent, Eigen::Vector3f t) {
      Transform x;
      x.translation = t;
      d.joint_names.push_back(name);
      d.parents.push_back(parent);
      d.rest_pose.push_back(x);
      return static_cast<int>(d.parents.size()) - 1;
    };
    add("root", kNoParent, {0, 0, 0});
    add("forearm", 0, {0, 1, 0});
    add("wrist", 1, {0, 1, 0});
    const float xs[] = {-0.2f, 0.0f, 0.2f};
    for (float x : xs) {
      const int a = add(x < 0 ? "a0" : x == 0 ? "a1" : "a2", 2, {x, 0.3f, 0});
      const int b = add(x < 0 ? "b0" : x == 0 ? "b1" : "b2", a, {0, 0.2f, 0});
      tips.push_back(add(x < 0    ? "c0"
                         : x == 0 ? "c1"
                                  : "c2",
                         b, {0, 0.15f, 0}));
    }
    skeleton = *Skeleton::Create(std::move(d));
    input = RestPose(skeleton);
  }
};

TEST(FabrikTreeIk, HandReachesFingertipTargetsOfAnotherHandPose) {
  Hand hand;
  std::mt19937 rng(37);
  int reached = 0;
  for (int t = 0; t < 20; ++t) {
    std::vector<Transform> other = hand.input;
    other[hand.wrist].rotation = RandomRotation(rng, 0.8f);
    for (int j = 3; j < hand.skeleton.num_joints(); ++j) {
      if (std::find(hand.tips.begin(), hand.tips.end(), j) == hand.tips.end()) {
        other[j].rotation = RandomRotation(rng, 0.7f);
      }
    }
    const std::vector<Eigen::Vector3f> p = FkPositions(hand.skeleton, other);
    std::vector<FabrikEffector> effectors;
    for (int tip : hand.tips) effectors.push_back({tip, p[tip], 1.0f});
    std::vector<Transform> out = hand.input;
    IkResult r;
    FabrikTreeIkJob job;
    job.skeleton = &hand.skeleton;
    job.input = hand.input;
    job.root = hand.wrist;
    job.effectors = effectors;
    job.max_iterations = 300;
    job.tolerance = AbsoluteTolerance(1e-3f);
    job.output = absl::MakeSpan(out);
    job.result = &r;
    ASSERT_TRUE(job.Run().ok());
    ExpectRotationOnly(hand.skeleton, hand.input, out);
    const std::vector<Eigen::Vector3f> q = FkPositions(hand.skeleton, out);
    float worst = 0.0f;
    for (const auto& e : effectors) {
      worst = std::max(worst, (q[e.joint] - e.target).norm());
    }
    EXPECT_NEAR(r.error, worst, 1e-5f);
    reached += r.reached;
    // Joints outside the tree are untouched.
    EXPECT_EQ(out[hand.forearm].rotation.coeffs(),
              hand.input[hand.forearm].rotation.coeffs());
  }
  EXPECT_GE(reached, 18);  // measured 20 of 20
}

TEST(FabrikTreeIk, SpineWithTwoArmsReachesBothHands) {
  SkeletonDesc d;
  auto add = [&](const char* name, int parent, Eigen::Vector3f t) {
    Transform x;
    x.translation = t;
    d.joint_names.push_back(name);
    d.parents.push_back(parent);
    d.rest_pose.push_back(x);
    return static_cast<int>(d.parents.size()) - 1;
  };
  const int hips = add("hips", kNoParent, {0, 1, 0});
  const int spine = add("spine", hips, {0, 0.3f, 0});
  const int chest = add("chest", spine, {0, 0.3f, 0});
  const int l_sh = add("l_shoulder", chest, {0.2f, 0.2f, 0});
  const int l_el = add("l_elbow", l_sh, {0.3f, 0, 0});
  const int l_ha = add("l_hand", l_el, {0.3f, 0, 0});
  const int r_sh = add("r_shoulder", chest, {-0.2f, 0.2f, 0});
  const int r_el = add("r_elbow", r_sh, {-0.3f, 0, 0});
  const int r_ha = add("r_hand", r_el, {-0.3f, 0, 0});
  add("head", chest, {0, 0.3f, 0});
  const Skeleton s = *Skeleton::Create(std::move(d));
  const std::vector<Transform> input = RestPose(s);
  std::mt19937 rng(38);
  int reached = 0;
  for (int t = 0; t < 20; ++t) {
    std::vector<Transform> other = input;
    for (int j : {spine, chest}) other[j].rotation = RandomRotation(rng, 0.5f);
    for (int j : {l_sh, l_el, r_sh, r_el}) {
      other[j].rotation = RandomRotation(rng, 1.2f);
    }
    const std::vector<Eigen::Vector3f> p = FkPositions(s, other);
    const std::vector<FabrikEffector> effectors = {{l_ha, p[l_ha], 1.0f},
                                                   {r_ha, p[r_ha], 1.0f}};
    std::vector<Transform> out = input;
    IkResult r;
    FabrikTreeIkJob job;
    job.skeleton = &s;
    job.input = input;
    job.root = hips;
    job.effectors = effectors;
    job.max_iterations = 300;
    job.tolerance = AbsoluteTolerance(1e-3f);
    job.output = absl::MakeSpan(out);
    job.result = &r;
    ASSERT_TRUE(job.Run().ok());
    ExpectRotationOnly(s, input, out);
    reached += r.reached;
  }
  EXPECT_GE(reached, 18);  // measured 20 of 20
}

// Two branches pulling their sub-base toward unreachable targets on
// opposite sides: equal pulls keep it between them, a stronger pull wins
// (FinalIK's FBIKChain.Stage1 weighted centroid).
TEST(FabrikTreeIk, SubBaseFollowsThePullWeightedCentroid) {
  SkeletonDesc d;
  auto add = [&](const char* name, int parent, Eigen::Vector3f t) {
    Transform x;
    x.translation = t;
    d.joint_names.push_back(name);
    d.parents.push_back(parent);
    d.rest_pose.push_back(x);
    return static_cast<int>(d.parents.size()) - 1;
  };
  const int root = add("root", kNoParent, {0, 0, 0});
  const int sub = add("sub", root, {0, 1, 0});
  const int l1 = add("l1", sub, {0, 0.5f, 0});
  const int l2 = add("l2", l1, {-0.5f, 0, 0});
  const int r1 = add("r1", sub, {0, 0.5f, 0});
  const int r2 = add("r2", r1, {0.5f, 0, 0});
  const Skeleton s = *Skeleton::Create(std::move(d));
  const std::vector<Transform> input = RestPose(s);
  auto solve = [&](float left_pull, float right_pull) {
    const std::vector<FabrikEffector> effectors = {
        {l2, Eigen::Vector3f(-5.0f, 1.5f, 0.0f), left_pull},
        {r2, Eigen::Vector3f(5.0f, 1.5f, 0.0f), right_pull}};
    std::vector<Transform> out = input;
    FabrikTreeIkJob job;
    job.skeleton = &s;
    job.input = input;
    job.root = root;
    job.effectors = effectors;
    job.max_iterations = 50;
    job.output = absl::MakeSpan(out);
    EXPECT_TRUE(job.Run().ok());
    return FkPositions(s, out)[sub];
  };
  const Eigen::Vector3f even = solve(1.0f, 1.0f);
  const Eigen::Vector3f left = solve(3.0f, 1.0f);
  const Eigen::Vector3f right = solve(1.0f, 3.0f);
  EXPECT_NEAR(even.x(), 0.0f, 1e-3f);
  EXPECT_LT(left.x(), -0.1f);
  EXPECT_GT(right.x(), 0.1f);
  EXPECT_NEAR(left.x(), -right.x(), 1e-3f);
}

TEST(FabrikTreeIk, SingleEffectorTreeMatchesTheChainSolver) {
  Fixture f;
  std::mt19937 rng(39);
  const Eigen::Vector3f target = f.RandomReachable(rng);
  std::vector<Transform> chain_out, tree_out = f.input;
  IkResult rc, rt;
  // Trees are not over-relaxed: compare with the classic chain solve.
  FabrikIkJob chain_job = f.Job(target, chain_out, &rc);
  chain_job.over_relaxation = 0.0f;
  ASSERT_TRUE(chain_job.Run().ok());
  const std::vector<FabrikEffector> effectors = {{5, target, 1.0f}};
  FabrikTreeIkJob job;
  job.skeleton = &f.skeleton;
  job.input = f.input;
  job.root = 1;
  job.effectors = effectors;
  job.max_iterations = 200;
  job.tolerance = AbsoluteTolerance(5e-5f * f.length);
  job.output = absl::MakeSpan(tree_out);
  job.result = &rt;
  ASSERT_TRUE(job.Run().ok());
  EXPECT_TRUE(BitEqual(chain_out, tree_out));
  EXPECT_EQ(rc.iterations, rt.iterations);
}

TEST(FabrikTreeIk, RejectsBadTrees) {
  Hand hand;
  std::vector<Transform> out = hand.input;
  FabrikTreeIkJob job;
  job.skeleton = &hand.skeleton;
  job.input = hand.input;
  job.root = hand.wrist;
  job.output = absl::MakeSpan(out);
  auto expect_invalid = [&](const char* text) {
    const absl::Status s = job.Run();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(s.message(), HasSubstr(text));
  };
  expect_invalid("fabrik_tree_ik.effectors: at least one");
  std::vector<FabrikEffector> e = {{hand.forearm, {0, 0, 0}, 1.0f}};
  job.effectors = e;
  expect_invalid("is not below the root");
  e = {{hand.tips[0], {0, 0, 0}, 1.0f}, {hand.tips[0] - 1, {0, 0, 0}, 1.0f}};
  job.effectors = e;
  expect_invalid("is an ancestor of effector 0");
  e = {{hand.tips[0], {0, 0, 0}, 1.0f}, {hand.tips[0], {1, 0, 0}, 1.0f}};
  job.effectors = e;
  expect_invalid("is also effector");
  e = {{hand.tips[0], {0, 0, 0}, 0.0f}};
  job.effectors = e;
  expect_invalid("fabrik_tree_ik.effectors[0].pull");
  e = {{hand.tips[0], {0, std::numeric_limits<float>::quiet_NaN(), 0}, 1.0f}};
  job.effectors = e;
  expect_invalid("fabrik_tree_ik.effectors[0].target: NaN");
  e = {{hand.tips[0], {0, 0, 0}, 1.0f}};
  job.effectors = e;
  job.root = 99;
  expect_invalid("fabrik_tree_ik.root");
}

}  // namespace fabrik_ik_test
}  // namespace posewire
