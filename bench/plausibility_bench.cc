// The plausibility check of one 31-joint character (the CMU jumps rig),
// every check on: Euler limits learnt from the clip on every joint, and the
// two previous frames (60 Hz: frames 100, 102 and 104 of the clip). The
// pose is honest, so the report is empty: the cost of the common case.
//
// ./build/bench/posewire-bench
//     --benchmark_filter='BM_Plausibility|BM_LocalToModel$'
//     --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <iostream>
#include <vector>

#include "bench/bench_data.h"
#include "solver_core/chain_ik/learned_limits.h"
#include "solver_core/pose_ops/sampling_job.h"
#include "solver_core/referee/plausibility.h"

namespace posewire {
namespace {

struct PlausibilityScene {
  const Skeleton* skeleton = nullptr;
  std::vector<Transform> frames[3];  // 104, 102, 100
  std::vector<JointLimit> limits;
  float rig_size = 1.0f;
};

const PlausibilityScene& Scene() {
  static const PlausibilityScene* scene = [] {
    const ImportedAsset& jumps = bench::LoadAsset("cmu_01_01_jumps.bvh");
    auto* s = new PlausibilityScene;
    s->skeleton = &jumps.skeleton;
    for (int i = 0; i < 3; ++i) {
      s->frames[i].resize(jumps.skeleton.num_joints());
      SamplingJob sample;
      sample.skeleton = &jumps.skeleton;
      sample.clip = &jumps.clips[0];
      sample.time = static_cast<float>(104 - 2 * i) / 120.0f;
      sample.output = absl::MakeSpan(s->frames[i]);
      if (!sample.Run().ok()) std::exit(1);
    }
    LearnLimitsOptions options;
    options.margin = 0.5236f;
    absl::StatusOr<LearnedLimits> learnt =
        LearnJointLimits(jumps.skeleton, jumps.clips, options);
    if (!learnt.ok()) {
      std::cerr << learnt.status() << "\n";
      std::exit(1);
    }
    s->limits = learnt->limits;
    s->rig_size = RigSize(jumps.skeleton);
    return s;
  }();
  return *scene;
}

// state.range(0) 1: limits checked once and screened (the screens also
// laid out in groups of four), poses checked before
// the job (what the service's plausibility op does), 0: the job as a
// first-time caller sets it up.
void BM_Plausibility(benchmark::State& state) {
  const PlausibilityScene& s = Scene();
  const bool prepared = state.range(0) == 1;
  std::vector<EulerRangeScreen> screens;
  for (const JointLimit& limit : s.limits) {
    screens.push_back(MakeEulerRangeScreen(limit));
  }
  const std::vector<EulerRangeScreenGroup> groups =
      MakeEulerRangeScreenGroups(s.limits, screens);
  PlausibilityResult result;
  result.violations.reserve(8 * s.skeleton->num_joints());
  PlausibilityJob job;
  job.skeleton = s.skeleton;
  job.input = s.frames[0];
  job.previous = s.frames[1];
  job.dt = 1.0f / 60.0f;
  job.previous2 = s.frames[2];
  job.previous_dt = 1.0f / 60.0f;
  job.limits = s.limits;
  if (prepared) {
    job.limits_validated = true;
    job.range_screens = screens;
    job.range_screen_groups = groups;
    // The op's poses are checked before the job: the frame's on the way
    // in, the kept frames by the op (HistoryFits).
    job.input_validated = true;
    job.previous_validated = true;
  }
  job.rig_size = s.rig_size;
  job.result = &result;
  for (auto _ : state) {
    if (!job.Run().ok()) state.SkipWithError("plausibility failed");
    benchmark::DoNotOptimize(result);
  }
  state.counters["violations"] = static_cast<double>(result.violations.size());
}
BENCHMARK(BM_Plausibility)->Arg(0)->Arg(1);

}  // namespace
}  // namespace posewire
