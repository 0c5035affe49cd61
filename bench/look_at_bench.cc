// Look-at (LookAtJob) on the CMU walk rig: a 5-bone chain (Chest, Chest2,
// lowerneck and Neck as the spine, then the Head) turned toward a point ahead
// and to the side, with the default weights, clamps and smoothing and the
// forward axes derived from the rest pose. Each iteration restores the
// bones' input rotations and runs the validated job in place, with its
// result requested.
//
// ./build/bench/posewire-bench --benchmark_filter='BM_LookAt|BM_AimIk$'
//     --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <iostream>
#include <vector>

#include "bench/bench_data.h"
#include "solver_core/analytic_ik/look_at.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/model/pose.h"

namespace posewire {
namespace {

struct LookAtSetup {
  const Skeleton* skeleton = nullptr;
  std::vector<Transform> local;
  std::vector<int> spine;
  int head = -1;
  Eigen::Vector3f target;
  LookAtResult result;
};

LookAtSetup MakeSetup() {
  const ImportedAsset& walk = bench::LoadAsset("cmu_131_01_walk.bvh");
  LookAtSetup s;
  s.skeleton = &walk.skeleton;
  s.local = RestPose(walk.skeleton);
  for (const char* name : {"Chest", "Chest2", "lowerneck", "Neck"}) {
    s.spine.push_back(walk.skeleton.FindJoint(name));
  }
  s.head = walk.skeleton.FindJoint("Head");
  for (int j : s.spine) {
    if (j < 0 || s.head < 0) {
      std::cerr << "CMU walk rig lacks a spine or head joint\n";
      std::exit(1);
    }
  }
  s.target = JointModelTransform(walk.skeleton, s.local, s.head).translation +
             Eigen::Vector3f(15, 3, 20);
  return s;
}

void BM_LookAt(benchmark::State& state) {
  LookAtSetup s = MakeSetup();
  LookAtJob job;
  job.skeleton = s.skeleton;
  job.input = s.local;
  job.parent_model =
      ParentModelTransformOrRoot(*s.skeleton, s.local, s.spine[0]);
  job.spine = s.spine;
  job.head = s.head;
  job.target = s.target;
  job.output = absl::MakeSpan(s.local);
  job.result = &s.result;
  const std::vector<Transform> input = s.local;
  for (auto _ : state) {
    for (int j : s.spine) s.local[j].rotation = input[j].rotation;
    s.local[s.head].rotation = input[s.head].rotation;
    benchmark::DoNotOptimize(job.Run().ok());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_LookAt);

}  // namespace
}  // namespace posewire
