// Retargeting (RetargetJob) of the CMU walk (31 joints) onto the Daz rig of
// cmu_02_03_run_daz.bvh (43 joints): the walk's pose at 1 s, the map
// compiled once before the loop (as a registered rig has it), each
// iteration the validated job in place on the Daz rest pose.
// BM_LocalToModel (forward kinematics of the 31-joint walk) in the same run
// is the anchor: a retarget is forward kinematics of the source plus one
// model-to-local pass over the target.
//
// ./build/bench/posewire-bench
//     --benchmark_filter='BM_Retarget|BM_LocalToModel$'
//     --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <iostream>
#include <vector>

#include "bench/bench_data.h"
#include "solver_core/model/pose.h"
#include "solver_core/pose_ops/sampling_job.h"
#include "solver_core/retarget/retarget.h"

namespace posewire {
namespace {

void BM_Retarget(benchmark::State& state) {
  const ImportedAsset& walk = bench::LoadAsset("cmu_131_01_walk.bvh");
  const ImportedAsset& daz = bench::LoadAsset("cmu_02_03_run_daz.bvh");
  std::vector<Transform> source = RestPose(walk.skeleton);
  SamplingJob sample;
  sample.skeleton = &walk.skeleton;
  sample.clip = &walk.clips[0];
  sample.time = 1.0f;
  sample.output = absl::MakeSpan(source);
  if (!sample.Run().ok()) std::exit(1);
  absl::StatusOr<RetargetMap> map =
      RetargetMap::Create(walk.skeleton, daz.skeleton);
  if (!map.ok()) {
    std::cerr << map.status() << "\n";
    std::exit(1);
  }
  std::vector<Transform> target = RestPose(daz.skeleton);
  RetargetJob job;
  job.map = &*map;
  job.source_skeleton = &walk.skeleton;
  job.target_skeleton = &daz.skeleton;
  job.source = source;
  job.input = target;
  job.output = absl::MakeSpan(target);
  for (auto _ : state) {
    benchmark::DoNotOptimize(job.Run().ok());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Retarget);

}  // namespace
}  // namespace posewire
