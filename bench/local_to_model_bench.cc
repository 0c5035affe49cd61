// Forward kinematics (LocalToModelJob) and its inverse on the CMU walk rig,
// full and partial (from the left shoulder down, as an arm IK would refresh).
//
// ./build/bench/posewire-bench
// --benchmark_filter='BM_(LocalToModel|ModelToLocal)'
//     --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include "bench/bench_data.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/model/pose.h"

namespace posewire {
namespace {

const ImportedAsset& Walk() { return bench::LoadAsset("cmu_131_01_walk.bvh"); }

void BM_LocalToModel(benchmark::State& state) {
  const Skeleton& skeleton = Walk().skeleton;
  LocalPose local = RestPose(skeleton);
  ModelPose model(skeleton.num_joints());
  LocalToModelJob job{
      .skeleton = &skeleton, .input = local, .output = absl::MakeSpan(model)};
  for (auto _ : state) {
    job.RunUnchecked();
    benchmark::DoNotOptimize(model.data());
  }
  state.SetItemsProcessed(state.iterations() * skeleton.num_joints());
}
BENCHMARK(BM_LocalToModel);

void BM_LocalToModelValidated(benchmark::State& state) {
  const Skeleton& skeleton = Walk().skeleton;
  LocalPose local = RestPose(skeleton);
  ModelPose model(skeleton.num_joints());
  LocalToModelJob job{
      .skeleton = &skeleton, .input = local, .output = absl::MakeSpan(model)};
  for (auto _ : state) {
    benchmark::DoNotOptimize(job.Run().ok());
  }
  state.SetItemsProcessed(state.iterations() * skeleton.num_joints());
}
BENCHMARK(BM_LocalToModelValidated);

void BM_LocalToModelPartialArm(benchmark::State& state) {
  const Skeleton& skeleton = Walk().skeleton;
  LocalPose local = RestPose(skeleton);
  ModelPose model(skeleton.num_joints());
  LocalToModelJob full{
      .skeleton = &skeleton, .input = local, .output = absl::MakeSpan(model)};
  full.RunUnchecked();
  LocalToModelJob arm = full;
  arm.from = skeleton.FindJoint("LeftShoulder");
  for (auto _ : state) {
    arm.RunUnchecked();
    benchmark::DoNotOptimize(model.data());
  }
}
BENCHMARK(BM_LocalToModelPartialArm);

void BM_ModelToLocal(benchmark::State& state) {
  const Skeleton& skeleton = Walk().skeleton;
  LocalPose local = RestPose(skeleton);
  ModelPose model(skeleton.num_joints());
  LocalToModelJob{
      .skeleton = &skeleton, .input = local, .output = absl::MakeSpan(model)}
      .RunUnchecked();
  ModelToLocalJob job{
      .skeleton = &skeleton, .input = model, .output = absl::MakeSpan(local)};
  for (auto _ : state) {
    job.RunUnchecked();
    benchmark::DoNotOptimize(local.data());
  }
  state.SetItemsProcessed(state.iterations() * skeleton.num_joints());
}
BENCHMARK(BM_ModelToLocal);

}  // namespace
}  // namespace posewire
