// Full-body biped IK at default settings on real motion
// (full_body_real_data.h): both hands and both feet toward where the same
// clip puts them 0.5 s later, solved from the earlier frame's pose, on the
// six CMU clips (four skeletons, three naming schemes) and the walk again on
// a root scaled by (1, 1.5, 0.75). A case is reached when every one of its
// four effectors is within 1e-4 of its limb's length, measured with forward
// kinematics by LocalToModelJob; at least 99.5% must be. Every answer is
// finite and keeps every bone's length.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "solver_core/full_body/full_body_biped_ik.h"
#include "tests/core/full_body_real_data.h"

namespace posewire {
namespace full_body_solve_rate_test {

using testing_util::BipedClip;
using testing_util::FullBodyCase;
using testing_util::FullBodyCases;
using testing_util::LimbEnd;
using testing_util::LoadBipedClip;
using testing_util::ModelOf;

// Frames sampled per clip: about 1,450 cases over the seven rigs.
constexpr int kFramesPerClip = 200;

const std::vector<BipedClip>& Clips() { return testing_util::FullBodyRigs(); }

struct Tally {
  int reached = 0;
  int total = 0;
  int iterations = 0;
  double worst = 0.0;  // largest error over its limb's length
};

// Solves `c` (at the defaults, or FinalIK's fixed 4 iterations for the
// comparison printed below) and counts it; checks every answer's sanity.
void Solve(const FullBodyCase& c, bool finalik_defaults, Tally& tally) {
  std::vector<Transform> output;
  FullBodyBipedIkResult result;
  FullBodyBipedIkJob job = c.DefaultJob(output, &result);
  if (finalik_defaults) {
    job.converge = false;
    job.iterations = kFinalIkFullBodyBipedIterations;
  }
  ASSERT_TRUE(job.Run().ok()) << c.Where();
  const Skeleton& s = c.skeleton();
  const std::vector<Transform> in_model = ModelOf(s, c.input());
  const std::vector<Transform> solved = ModelOf(s, output);
  for (int j = 0; j < s.num_joints(); ++j) {
    ASSERT_TRUE(solved[j].translation.allFinite() &&
                solved[j].rotation.coeffs().allFinite())
        << c.Where() << " joint " << s.joint_name(j);
    const int p = s.parent(j);
    if (p == kNoParent) continue;
    const float before =
        (in_model[j].translation - in_model[p].translation).norm();
    const float after = (solved[j].translation - solved[p].translation).norm();
    ASSERT_NEAR(after, before, 1e-5f * (1.0f + before))
        << c.Where() << " bone " << s.joint_name(j);
  }
  bool all = true;
  for (int l = 0; l < kNumBipedLimbs; ++l) {
    const float error =
        (LimbEnd(c.rig->mapping.limb(static_cast<BipedLimb>(l)), solved) -
         c.targets[l])
            .norm();
    tally.worst = std::max(tally.worst, double{error / c.limb_lengths[l]});
    if (!(error <= 1e-4f * c.limb_lengths[l])) all = false;
    if (!finalik_defaults) {
      // The result judges by the same measure (its own forward kinematics).
      EXPECT_NEAR(result.effectors[5 + l].error, error,
                  1e-6f * c.limb_lengths[l])
          << c.Where();
      EXPECT_NEAR(result.effectors[5 + l].tolerance, 1e-4f * c.limb_lengths[l],
                  1e-9f * c.limb_lengths[l])
          << c.Where();
    }
  }
  if (!finalik_defaults) {
    EXPECT_EQ(result.reached, all) << c.Where();
    EXPECT_GE(result.iterations, kFinalIkFullBodyBipedIterations);
    EXPECT_LE(result.iterations, kDefaultFullBodyBipedIterations);
  }
  ++tally.total;
  tally.iterations += result.iterations;
  if (all) ++tally.reached;
}

TEST(FullBodySolveRate, DefaultsReachHandsAndFeetHalfASecondAhead) {
  Tally all, all_finalik;
  int clips = 0;
  for (const BipedClip& rig : Clips()) {
    const std::vector<FullBodyCase> cases = FullBodyCases(rig, kFramesPerClip);
    ASSERT_GE(cases.size(), 100u) << rig.clip.name;
    Tally tally, finalik;
    for (const FullBodyCase& c : cases) {
      Solve(c, false, tally);
      Solve(c, true, finalik);
      if (HasFatalFailure()) return;
    }
    std::printf(
        "%s: %d/%d cases reached at defaults (%.2f%%, worst %.3g of the "
        "limb, %.1f iterations on average); FinalIK's 4 iterations: %.2f%% "
        "(worst %.3g)\n",
        rig.clip.name.c_str(), tally.reached, tally.total,
        100.0 * tally.reached / tally.total, tally.worst,
        double{1.0} * tally.iterations / tally.total,
        100.0 * finalik.reached / finalik.total, finalik.worst);
    all.reached += tally.reached;
    all.total += tally.total;
    all_finalik.reached += finalik.reached;
    all_finalik.total += finalik.total;
    ++clips;
  }
  std::printf("all: %d/%d (%.2f%%); FinalIK's 4 iterations: %d/%d (%.2f%%)\n",
              all.reached, all.total, 100.0 * all.reached / all.total,
              all_finalik.reached, all_finalik.total,
              100.0 * all_finalik.reached / all_finalik.total);
  EXPECT_GE(clips, 4);
  EXPECT_GE(all.total, 1000);
  EXPECT_GE(all.reached, 0.995 * all.total);
}

// A second look at the scaled rig alone: it must do as well as the
// unscaled one (the root's non-uniform scale is in the model-space
// positions the solver works with; rotations never stretch a bone).
TEST(FullBodySolveRate, NonUniformRootScaleIsExact) {
  const BipedClip& scaled = Clips().back();
  ASSERT_NE(scaled.clip.skeleton.rest_pose()[0].scale, Eigen::Vector3f::Ones());
  Tally tally;
  for (const FullBodyCase& c : FullBodyCases(scaled, 60)) {
    Solve(c, false, tally);
    if (HasFatalFailure()) return;
  }
  EXPECT_EQ(tally.reached, tally.total);
  EXPECT_LE(tally.worst, 1e-4);
}

}  // namespace full_body_solve_rate_test
}  // namespace posewire
