// Chain IK at default settings on real motion (chain_ik_real_data.h): CCD
// and FABRIK reach the limb targets of the CMU clips, one of them on a
// non-uniformly scaled character, within their default tolerance (checked
// with forward kinematics by LocalToModelJob), with no NaN, bone lengths
// kept, every joint outside the chain untouched, unreachable targets
// answered with a straight chain pointing at them, and limits learnt from
// the clip never violated in the limited variant.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "solver_core/chain_ik/ccd_ik.h"
#include "solver_core/chain_ik/fabrik_ik.h"
#include "solver_core/chain_ik/learned_limits.h"
#include "tests/core/chain_ik_real_data.h"
#include "tests/core/chain_ik_test_util.h"

namespace posewire {
namespace chain_ik_defaults_test {

using testing_util::AngleBetween;
using testing_util::ModelOf;
using testing_util::RealCase;
using testing_util::RealClip;

// The clips of SolveRateClips(), 60 frames each (the same cases
// chain_defaults_service_test sends through the service).
const std::vector<RealCase>& Cases() {
  return testing_util::CachedSolveRateCases(60);
}

enum class Solver { kCcd, kFabrik };
const char* Name(Solver s) { return s == Solver::kCcd ? "CCD" : "FABRIK"; }

// Solves `c` at default settings (`limits` aside); returns the output pose.
// With `old_defaults`, at the defaults before the relative tolerance and
// the closing step (20 iterations, 1e-3 absolute, no polish), for the
// comparison printed below.
template <typename Job>
std::vector<Transform> Solve(const RealCase& c,
                             absl::Span<const JointLimit> limits,
                             IkResult* result, bool old_defaults) {
  std::vector<Transform> out;
  Job job = testing_util::DefaultJob<Job>(c.skeleton(), c.input(), c.chain,
                                          c.target, out, result);
  job.limits = limits;
  if (old_defaults) {
    job.max_iterations = 20;
    job.tolerance = AbsoluteTolerance(1e-3f);
    job.polish = false;
  }
  const absl::Status status = job.Run();
  EXPECT_TRUE(status.ok()) << status;
  return out;
}

std::vector<Transform> SolveAtDefaults(Solver solver, const RealCase& c,
                                       absl::Span<const JointLimit> limits,
                                       IkResult* result,
                                       bool old_defaults = false) {
  return solver == Solver::kCcd
             ? Solve<CcdIkJob>(c, limits, result, old_defaults)
             : Solve<FabrikIkJob>(c, limits, result, old_defaults);
}

struct Rates {
  int reachable = 0;
  int reached = 0;
  int unreachable = 0;
  long iterations = 0;
  int max_iterations = 0;
  double Rate() const { return reachable ? double(reached) / reachable : 0.0; }
};

// The default tolerance, 1e-4 of the chain's length, with room for the
// rounding between the solver's positions and LocalToModelJob's.
float DefaultTolerance(const RealCase& c) {
  return kDefaultChainRelativeTolerance * c.length * 1.001f;
}

// Checks one solved case; counts it in `rates`.
void CheckCase(const RealCase& c, const std::vector<Transform>& out,
               const IkResult& r, Rates& rates) {
  const Skeleton& s = c.skeleton();
  const std::vector<Transform>& in = c.input();
  for (int j = 0; j < s.num_joints(); ++j) {
    ASSERT_TRUE(out[j].rotation.coeffs().allFinite()) << c.Where();
    const bool moves =
        std::find(c.chain.begin(), c.chain.end() - 1, j) != c.chain.end() - 1;
    // Joints outside the chain (and the tip) are untouched, bit for bit;
    // translations and scales everywhere.
    if (!moves) {
      ASSERT_EQ(out[j].rotation.coeffs(), in[j].rotation.coeffs())
          << c.Where() << " joint " << s.joint_name(j);
    }
    ASSERT_EQ(out[j].translation, in[j].translation) << c.Where();
    ASSERT_EQ(out[j].scale, in[j].scale) << c.Where();
  }
  const std::vector<Transform> before = ModelOf(s, in);
  const std::vector<Transform> after = ModelOf(s, out);
  for (size_t i = 1; i < c.chain.size(); ++i) {
    const float l0 =
        (before[c.chain[i]].translation - before[c.chain[i - 1]].translation)
            .norm();
    const float l1 =
        (after[c.chain[i]].translation - after[c.chain[i - 1]].translation)
            .norm();
    ASSERT_NEAR(l1, l0, 2e-6f * c.length + 1e-6f * l0) << c.Where();
  }
  const float tol = DefaultTolerance(c);
  const Eigen::Vector3f tip = after[c.chain.back()].translation;
  const float error = (tip - c.target).norm();
  ASSERT_TRUE(std::isfinite(r.error)) << c.Where();
  EXPECT_NEAR(r.error, error, 1e-5f * c.length) << c.Where();
  rates.iterations += r.iterations;
  rates.max_iterations = std::max(rates.max_iterations, r.iterations);
  if (c.reachable()) {
    ++rates.reachable;
    if (error <= tol) {
      ++rates.reached;
      EXPECT_TRUE(r.reached) << c.Where();
    } else {
      std::printf("  miss %s reach %.4f error %.3g (tol %.3g) its %d\n",
                  c.Where().c_str(), c.reach, error, tol, r.iterations);
    }
  } else {
    ++rates.unreachable;
    EXPECT_FALSE(r.reached) << c.Where();
    // Straight toward the target: every joint on the root-target line.
    const Eigen::Vector3f root = after[c.chain.front()].translation;
    const Eigen::Vector3f dir = (c.target - root).normalized();
    for (size_t i = 1; i < c.chain.size(); ++i) {
      const Eigen::Vector3f v = after[c.chain[i]].translation - root;
      EXPECT_LE((v - dir * dir.dot(v)).norm(), 1e-4f * c.length)
          << c.Where() << " joint " << i;
      EXPECT_GT(dir.dot(v), 0.0f) << c.Where();
    }
  }
}

void Report(const char* what, const Rates& r) {
  std::printf(
      "[ defaults ] %-22s reachable %5d reached %5d (%.2f%%) unreachable %4d "
      "mean iterations %.2f max %d\n",
      what, r.reachable, r.reached, 100.0 * r.Rate(), r.unreachable,
      r.reachable + r.unreachable
          ? double(r.iterations) / (r.reachable + r.unreachable)
          : 0.0,
      r.max_iterations);
}

class ChainIkDefaults : public ::testing::TestWithParam<Solver> {};

TEST_P(ChainIkDefaults, ReachesRealLimbTargetsAtDefaultSettings) {
  const Solver solver = GetParam();
  ASSERT_GE(Cases().size(), 1000u);
  Rates rates;
  for (const RealCase& c : Cases()) {
    IkResult r;
    const std::vector<Transform> out = SolveAtDefaults(solver, c, {}, &r);
    CheckCase(c, out, r, rates);
    if (::testing::Test::HasFatalFailure()) return;
  }
  Report(Name(solver), rates);
  ::testing::Test::RecordProperty(std::string(Name(solver)) + "_rate_per_10000",
                                  static_cast<int>(10000.0 * rates.Rate()));
  EXPECT_GE(rates.reachable, 1000);
  EXPECT_GE(rates.Rate(), 0.999);
}

TEST_P(ChainIkDefaults, RespectsLimitsLearntFromTheClip) {
  const Solver solver = GetParam();
  Rates rates;
  const RealClip* learnt_for = nullptr;
  std::vector<JointLimit> limits;
  for (const RealCase& c : Cases()) {
    if (c.clip != learnt_for) {
      // Limits that hold every frame of the clip, so each target is
      // reachable within them (the later frame's own pose is).
      std::vector<Clip> clips(1);
      learnt_for = c.clip;
      absl::StatusOr<ImportedAsset> asset =
          ReadBvhFile(std::string(POSEWIRE_TEST_DATA_DIR) + "/" +
                      c.clip->name.substr(0, c.clip->name.find(' ')));
      ASSERT_TRUE(asset.ok());
      absl::StatusOr<LearnedLimits> learnt =
          LearnJointLimits(asset->skeleton, asset->clips, LearnLimitsOptions());
      ASSERT_TRUE(learnt.ok()) << learnt.status();
      limits = learnt->limits;
    }
    IkResult r;
    const std::vector<Transform> out = SolveAtDefaults(solver, c, limits, &r);
    for (int j : c.chain) {
      ASSERT_TRUE(out[j].rotation.coeffs().allFinite()) << c.Where();
      ASSERT_LT(AngleBetween(ApplyJointLimit(limits[j], out[j].rotation),
                             out[j].rotation),
                2e-4f)
          << c.Where() << " " << c.skeleton().joint_name(j);
    }
    const std::vector<Transform> after = ModelOf(c.skeleton(), out);
    const float error = (after[c.chain.back()].translation - c.target).norm();
    EXPECT_NEAR(r.error, error, 1e-5f * c.length) << c.Where();
    rates.iterations += r.iterations;
    rates.max_iterations = std::max(rates.max_iterations, r.iterations);
    if (c.reachable()) {
      ++rates.reachable;
      rates.reached += error <= DefaultTolerance(c);
    } else {
      ++rates.unreachable;
    }
  }
  Report(absl::StrCat(Name(solver), " learnt limits").c_str(), rates);
  ::testing::Test::RecordProperty(
      std::string(Name(solver)) + "_limited_rate_per_10000",
      static_cast<int>(10000.0 * rates.Rate()));
}

// The same cases at the old defaults, measured against the new tolerance:
// printed for docs/PERFORMANCE.md.
TEST_P(ChainIkDefaults, DoesBetterThanTheOldDefaults) {
  const Solver solver = GetParam();
  Rates now, old;
  for (const RealCase& c : Cases()) {
    if (!c.reachable()) continue;
    for (int o = 0; o < 2; ++o) {
      IkResult r;
      const std::vector<Transform> out =
          SolveAtDefaults(solver, c, {}, &r, o == 1);
      const std::vector<Transform> after = ModelOf(c.skeleton(), out);
      Rates& rates = o ? old : now;
      ++rates.reachable;
      rates.reached += (after[c.chain.back()].translation - c.target).norm() <=
                       DefaultTolerance(c);
      rates.iterations += r.iterations;
      rates.max_iterations = std::max(rates.max_iterations, r.iterations);
    }
  }
  Report(absl::StrCat(Name(solver), " new defaults").c_str(), now);
  Report(absl::StrCat(Name(solver), " old defaults").c_str(), old);
  EXPECT_GT(now.Rate(), old.Rate());
}

INSTANTIATE_TEST_SUITE_P(Solvers, ChainIkDefaults,
                         ::testing::Values(Solver::kCcd, Solver::kFabrik),
                         [](const ::testing::TestParamInfo<Solver>& info) {
                           return std::string(Name(info.param));
                         });

}  // namespace chain_ik_defaults_test
}  // namespace posewire
