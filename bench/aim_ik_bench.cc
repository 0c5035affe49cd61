// Aim IK (AimIkJob) on the CMU walk rig's head: aim the head's forward axis
// at a point ahead and to the side, rolling its up axis toward +y. Each
// iteration restores the head's input rotation and runs the validated job,
// with its result requested, in place (as ozz's IKAimJob, which writes only
// the correction), unless the name says it copies the whole pose.
//
// ./build/bench/posewire-bench --benchmark_filter=BM_AimIk
//     --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <iostream>
#include <vector>

#include "bench/bench_data.h"
#include "solver_core/analytic_ik/aim_ik.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/model/pose.h"

namespace posewire {
namespace {

struct HeadSetup {
  const Skeleton* skeleton = nullptr;
  std::vector<Transform> local;
  std::vector<Transform> model;
  int head = -1;
  Eigen::Vector3f target;
  AimIkResult result;
};

HeadSetup MakeHead() {
  const ImportedAsset& walk = bench::LoadAsset("cmu_131_01_walk.bvh");
  HeadSetup h;
  h.skeleton = &walk.skeleton;
  h.local = RestPose(walk.skeleton);
  h.model.resize(h.local.size());
  LocalToModelJob fk{.skeleton = h.skeleton,
                     .input = h.local,
                     .output = absl::MakeSpan(h.model)};
  if (!fk.Run().ok()) std::abort();
  h.head = walk.skeleton.FindJoint("Head");
  if (h.head < 0) {
    std::cerr << "CMU walk rig lacks a Head joint\n";
    std::exit(1);
  }
  h.target = h.model[h.head].translation + Eigen::Vector3f(8, 3, 20);
  return h;
}

AimIkJob HeadJob(HeadSetup& h, absl::Span<Transform> output) {
  return AimIkJob{.skeleton = h.skeleton,
                  .input = h.local,
                  .parent_model = h.model[h.skeleton->parent(h.head)],
                  .joint = h.head,
                  .target = h.target,
                  .pole_vector = {0, 1, 0},
                  .forward = {0, 0, 1},
                  .up = {0, 1, 0},
                  .output = output,
                  .result = &h.result};
}

void RunInPlace(benchmark::State& state, HeadSetup& h, const AimIkJob& job) {
  const Transform head = h.local[h.head];
  for (auto _ : state) {
    h.local[h.head] = head;
    benchmark::DoNotOptimize(job.Run().ok());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_AimIk(benchmark::State& state) {
  HeadSetup h = MakeHead();
  RunInPlace(state, h, HeadJob(h, absl::MakeSpan(h.local)));
}
BENCHMARK(BM_AimIk);

// Without the optional result, which the job then skips: the output ozz's
// IKAimJob has (the corrected rotation).
void BM_AimIkNoResult(benchmark::State& state) {
  HeadSetup h = MakeHead();
  AimIkJob job = HeadJob(h, absl::MakeSpan(h.local));
  job.result = nullptr;
  RunInPlace(state, h, job);
}
BENCHMARK(BM_AimIkNoResult);

// Eye offset, twist, partial weight and a cone clamp with smoothing.
void BM_AimIkAllOptions(benchmark::State& state) {
  HeadSetup h = MakeHead();
  AimIkJob job = HeadJob(h, absl::MakeSpan(h.local));
  job.target = h.model[h.head].translation + Eigen::Vector3f(20, 3, 5);
  job.offset = {0.5f, 1.0f, 1.5f};
  job.twist_angle = 0.2f;
  job.weight = 0.8f;
  job.clamp_weight = 0.7f;
  job.clamp_smoothing = 2;
  RunInPlace(state, h, job);
}
BENCHMARK(BM_AimIkAllOptions);

void BM_AimIkCopyPose(benchmark::State& state) {
  HeadSetup h = MakeHead();
  std::vector<Transform> output(h.local.size());
  const AimIkJob job = HeadJob(h, absl::MakeSpan(output));
  for (auto _ : state) {
    benchmark::DoNotOptimize(job.Run().ok());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_AimIkCopyPose);

}  // namespace
}  // namespace posewire
