// Two-bone IK at default settings on real motion (chain_ik_real_data.h):
// every arm (upper arm, forearm, wrist or hand) and leg (thigh, shin, ankle
// or foot) of the CMU clips, one of them on a non-uniformly scaled root,
// solved with only the joints and the target toward where the end joint is
// 30 frames later. Checked with forward kinematics by LocalToModelJob: every
// reachable target reached within 1e-4 of the limb's length, unreachable ones
// answered with a straight (or fully folded) limb, no NaN, bone lengths kept,
// every joint but the start and mid joints' rotations untouched, the same
// bits on a rerun. The old default hinge, (0, 0, 1), is measured on the same
// cases for docs/PERFORMANCE.md.

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "solver_core/analytic_ik/two_bone_ik.h"
#include "tests/core/chain_ik_real_data.h"
#include "tests/core/chain_ik_test_util.h"

namespace posewire {
namespace two_bone_ik_defaults_test {

using testing_util::DefaultTwoBoneJob;
using testing_util::ModelOf;
using testing_util::RealCase;
using testing_util::TwoBoneGeometry;
using testing_util::TwoBoneGeometryOf;
using testing_util::TwoBoneReach;

// About 240 cases per clip, 1,812 in all (the same cases
// chain_defaults_service_test sends through the service).
const std::vector<RealCase>& Cases() {
  return testing_util::CachedSolveRateCases(60, 3);
}

struct Tally {
  int reachable = 0;
  int reached = 0;
  int unreachable = 0;
  std::array<int, 6> hinge = {};
  double Rate() const { return reachable ? double(reached) / reachable : 0.0; }
};

// The default tolerance, 1e-4 of the limb's length, with room for the
// rounding between the job's positions and LocalToModelJob's.
float Tolerance(const RealCase& c) { return 1e-4f * c.length * 1.001f; }

// Checks one solved case; counts it in `tally`.
void CheckCase(const RealCase& c, const std::vector<Transform>& out,
               const TwoBoneIkResult& r, Tally& tally) {
  const Skeleton& s = c.skeleton();
  const std::vector<Transform>& in = c.input();
  for (int j = 0; j < s.num_joints(); ++j) {
    ASSERT_TRUE(out[j].rotation.coeffs().allFinite()) << c.Where();
    // Only the start and mid joints' rotations change, and nothing else does
    // by a bit.
    if (j != c.chain[0] && j != c.chain[1]) {
      ASSERT_EQ(out[j].rotation.coeffs(), in[j].rotation.coeffs())
          << c.Where() << " joint " << s.joint_name(j);
    }
    ASSERT_EQ(out[j].translation, in[j].translation) << c.Where();
    ASSERT_EQ(out[j].scale, in[j].scale) << c.Where();
  }
  const std::vector<Transform> after = ModelOf(s, out);
  const Eigen::Vector3f a = after[c.chain[0]].translation;
  const Eigen::Vector3f m = after[c.chain[1]].translation;
  const Eigen::Vector3f e = after[c.chain[2]].translation;
  const TwoBoneGeometry g = TwoBoneGeometryOf(c);
  ASSERT_NEAR((m - a).norm(), g.l1, 2e-6f * c.length) << c.Where();
  ASSERT_NEAR((e - m).norm(), g.l2, 2e-6f * c.length) << c.Where();
  const float error = (e - c.target).norm();
  ASSERT_TRUE(std::isfinite(r.error)) << c.Where();
  EXPECT_NEAR(r.error, error, 1e-5f * c.length) << c.Where();
  ++tally.hinge[static_cast<int>(r.hinge)];
  switch (g.reach) {
    case TwoBoneReach::kReachable:
      ++tally.reachable;
      if (error <= Tolerance(c)) {
        ++tally.reached;
        EXPECT_TRUE(r.reached) << c.Where();
      } else {
        std::printf("  miss %s distance %.4f of %.4f error %.3g\n",
                    c.Where().c_str(), g.d, c.length, error);
      }
      break;
    case TwoBoneReach::kBeyond: {
      ++tally.unreachable;
      EXPECT_FALSE(r.reached) << c.Where();
      // Straight toward the target.
      const Eigen::Vector3f dir = (c.target - a).normalized();
      for (const Eigen::Vector3f& p : {m, e}) {
        const Eigen::Vector3f v = p - a;
        EXPECT_LE((v - dir * dir.dot(v)).norm(), 1e-4f * c.length) << c.Where();
        EXPECT_GT(dir.dot(v), 0.0f) << c.Where();
      }
      break;
    }
    case TwoBoneReach::kTooClose:
      // Folded as far as the bones allow.
      ++tally.unreachable;
      EXPECT_NEAR((e - a).norm(), std::fabs(g.l1 - g.l2), 1e-4f * c.length)
          << c.Where();
      break;
    case TwoBoneReach::kBoundary:
      EXPECT_LE(error, Tolerance(c)) << c.Where();
      break;
  }
}

void Report(const char* what, const Tally& t) {
  std::printf(
      "[ defaults ] two-bone %-18s reachable %5d reached %5d (%.2f%%) "
      "unreachable %4d hinge from: pose %d, pole %d, rest pose %d, default "
      "%d, mid_axis %d\n",
      what, t.reachable, t.reached, 100.0 * t.Rate(), t.unreachable,
      t.hinge[static_cast<int>(TwoBoneIkHinge::kPoseBend)],
      t.hinge[static_cast<int>(TwoBoneIkHinge::kPole)],
      t.hinge[static_cast<int>(TwoBoneIkHinge::kRestPose)],
      t.hinge[static_cast<int>(TwoBoneIkHinge::kDefault)],
      t.hinge[static_cast<int>(TwoBoneIkHinge::kMidAxis)]);
}

TEST(TwoBoneIkDefaults, ReachesEveryReachableRealLimbTargetAtDefaults) {
  ASSERT_GE(Cases().size(), 1000u);
  Tally tally;
  std::vector<Transform> out, again;
  for (const RealCase& c : Cases()) {
    TwoBoneIkResult r, r_again;
    const absl::Status status = DefaultTwoBoneJob(c, out, &r).Run();
    ASSERT_TRUE(status.ok()) << c.Where() << ": " << status;
    CheckCase(c, out, r, tally);
    if (HasFatalFailure()) return;
    // A rerun gives the same bits.
    ASSERT_TRUE(DefaultTwoBoneJob(c, again, &r_again).Run().ok());
    ASSERT_TRUE(testing_util::BitEqual(out, again)) << c.Where();
    ASSERT_EQ(r.error, r_again.error) << c.Where();
  }
  Report("defaults", tally);
  RecordProperty("two_bone_rate_per_10000",
                 static_cast<int>(10000.0 * tally.Rate()));
  EXPECT_GE(tally.reachable, 1000);
  EXPECT_EQ(tally.reached, tally.reachable);
  // Limbs are bent in mocap: the hinge comes from the pose.
  EXPECT_GT(tally.hinge[static_cast<int>(TwoBoneIkHinge::kPoseBend)],
            static_cast<int>(Cases().size() * 9 / 10));
}

// The same cases at the old default hinge, (0, 0, 1) in the mid joint's
// space: printed for docs/PERFORMANCE.md, and below the new rate.
TEST(TwoBoneIkDefaults, DoesBetterThanTheOldDefaultHinge) {
  Tally now, old;
  std::vector<Transform> out;
  for (const RealCase& c : Cases()) {
    if (TwoBoneGeometryOf(c).reach != TwoBoneReach::kReachable) continue;
    for (int o = 0; o < 2; ++o) {
      TwoBoneIkResult r;
      TwoBoneIkJob job = DefaultTwoBoneJob(c, out, &r);
      if (o == 1) job.mid_axis = Eigen::Vector3f::UnitZ();
      ASSERT_TRUE(job.Run().ok()) << c.Where();
      const std::vector<Transform> after = ModelOf(c.skeleton(), out);
      Tally& t = o ? old : now;
      ++t.reachable;
      t.reached +=
          (after[c.chain[2]].translation - c.target).norm() <= Tolerance(c);
      ++t.hinge[static_cast<int>(r.hinge)];
    }
  }
  Report("new defaults", now);
  Report("old mid_axis (0,0,1)", old);
  EXPECT_GT(now.Rate(), old.Rate());
}

// Soften keeps its meaning with the derived hinge: beyond soften * length
// the start-to-end distance follows ozz's curve, and never reaches the full
// length.
TEST(TwoBoneIkDefaults, SoftenStillEasesTheReach) {
  int eased = 0;
  std::vector<Transform> out;
  for (const RealCase& c : Cases()) {
    const TwoBoneGeometry g = TwoBoneGeometryOf(c);
    const double length = double(g.l1) + g.l2;
    const double da = 0.97 * length;
    if (g.d <= da || g.reach == TwoBoneReach::kTooClose) continue;
    TwoBoneIkResult r;
    TwoBoneIkJob job = DefaultTwoBoneJob(c, out, &r);
    job.soften = 0.97f;
    ASSERT_TRUE(job.Run().ok()) << c.Where();
    const double ds = length - da;
    const double alpha = (g.d - da) / ds;
    const double expected = da + ds * (1.0 - 81.0 / std::pow(alpha + 3.0, 4.0));
    const std::vector<Transform> after = ModelOf(c.skeleton(), out);
    const double reach =
        (after[c.chain[2]].translation - after[c.chain[0]].translation).norm();
    EXPECT_NEAR(reach, expected, 1e-4 * length) << c.Where();
    EXPECT_LT(reach, length) << c.Where();
    ++eased;
  }
  std::printf("[ defaults ] two-bone soften 0.97: %d cases eased\n", eased);
  EXPECT_GT(eased, 50);
}

}  // namespace two_bone_ik_defaults_test
}  // namespace posewire
