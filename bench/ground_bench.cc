// Grounding (GroundJob) on the CMU walk rig, a biped with client-given
// samples: the walk's pose at 1 s, the left foot's ground 3 units (17 cm)
// up a 15 degree slope, the right foot's 2 units (11 cm) down, so the
// pelvis is lowered and both legs are solved with a tilted foot. Each
// iteration restores the pelvis and the legs' input and runs the validated
// job in place, with its result requested. BM_TwoBoneIk (one leg's solve)
// in the same run is the anchor: a biped grounding is two of those plus
// the offsets, the pelvis and the input pose's validation.
//
// ./build/bench/posewire-bench --benchmark_filter='BM_Ground|BM_TwoBoneIk$'
//     --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <vector>

#include "bench/bench_data.h"
#include "solver_core/analytic_ik/ground.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/model/pose.h"
#include "solver_core/pose_ops/sampling_job.h"

namespace posewire {
namespace {

void BM_Ground(benchmark::State& state) {
  const ImportedAsset& walk = bench::LoadAsset("cmu_131_01_walk.bvh");
  const Skeleton& s = walk.skeleton;
  std::vector<Transform> local = RestPose(s);
  SamplingJob sample;
  sample.skeleton = &s;
  sample.clip = &walk.clips[0];
  sample.time = 1.0f;
  sample.output = absl::MakeSpan(local);
  if (!sample.Run().ok()) std::exit(1);
  std::vector<GroundLeg> legs;
  for (const char* side : {"Left", "Right"}) {
    const std::string p(side);
    legs.push_back({.hip = s.FindJoint(p + "Hip"),
                    .knee = s.FindJoint(p + "Knee"),
                    .ankle = s.FindJoint(p + "Ankle"),
                    .toe = s.FindJoint(p + "Toe")});
  }
  const int pelvis = s.FindJoint("Hips");
  for (const GroundLeg& leg : legs) {
    if (leg.hip < 0 || leg.knee < 0 || leg.ankle < 0 || pelvis < 0) {
      std::cerr << "CMU walk rig lacks a leg joint\n";
      std::exit(1);
    }
  }
  const float slope = std::tan(15.0f * 3.14159265f / 180.0f);
  std::vector<GroundSample> samples(2);
  for (int i = 0; i < 2; ++i) {
    const Eigen::Vector3f a =
        JointModelTransform(s, local, legs[i].ankle).translation;
    samples[i].hit = true;
    samples[i].point = Eigen::Vector3f(a.x(), i == 0 ? 3.0f : -2.0f, a.z());
    samples[i].normal =
        i == 0 ? Eigen::Vector3f(0.0f, 1.0f, -slope) : Eigen::Vector3f::UnitY();
  }
  GroundResult result;
  GroundJob job;
  job.skeleton = &s;
  job.input = local;
  job.parent_model = ParentModelTransformOrRoot(s, local, pelvis);
  job.pelvis = pelvis;
  job.legs = legs;
  job.samples = samples;
  job.max_step_height = 6.0f;
  job.output = absl::MakeSpan(local);
  job.result = &result;
  const std::vector<Transform> input = local;
  for (auto _ : state) {
    local[pelvis].translation = input[pelvis].translation;
    for (const GroundLeg& leg : legs) {
      for (int j : {leg.hip, leg.knee, leg.ankle}) {
        local[j].rotation = input[j].rotation;
      }
    }
    benchmark::DoNotOptimize(job.Run().ok());
    benchmark::ClobberMemory();
  }
  if (result.grounded_legs != 2 || !(result.pelvis_offset < 0.0f)) {
    state.SkipWithError("both legs should be grounded, the pelvis lowered");
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Ground);

}  // namespace
}  // namespace posewire
