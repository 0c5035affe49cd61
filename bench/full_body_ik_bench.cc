// Full-body IK on the CMU 31-joint walk: FullBodyBipedIkJob (FinalIK's FBBIK)
// with the four limb effectors and the body effector at weight 1, and
// FullBodyCcdJob with the four limb effectors. Inputs are 16 frames of the
// walk; targets are the hands, feet and body of the frame 0.4 s later, its
// pelvis moved onto the input's (reachable, a realistic amount of work).
// BM_FullBodyBipedDefaults_CmuWalkAhead instead sends only the hands and
// feet of the frame 0.5 s later where it is (a step ahead, as the solve-rate
// test does), so the body has to travel. Each benchmark iteration is one
// validated solve of the next case into a separate output pose.
//
// ./build/bench/posewire-bench --benchmark_filter='BM_FullBody'
//     --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <array>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "bench/bench_data.h"
#include "solver_core/full_body/biped_mapping.h"
#include "solver_core/full_body/full_body_biped_ik.h"
#include "solver_core/full_body/full_body_ccd.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/pose_ops/sampling_job.h"

namespace posewire {
namespace {

constexpr int kCases = 16;

struct Case {
  std::vector<Transform> input;
  // Hands and feet (limb order), then the body (root node).
  std::array<Eigen::Vector3f, 5> targets;
};

struct Setup {
  const ImportedAsset* asset = nullptr;
  BipedMapping mapping;
  std::vector<Case> cases;
};

void Check(const absl::Status& s, const char* what) {
  if (!s.ok()) {
    std::cerr << what << ": " << s << "\n";
    std::exit(1);
  }
}

std::vector<Transform> Sample(const ImportedAsset& asset, int clip,
                              float time) {
  std::vector<Transform> pose(asset.skeleton.num_joints());
  SamplingJob job;
  job.skeleton = &asset.skeleton;
  job.clip = &asset.clips[clip];
  job.time = time;
  job.mode = PlaybackMode::kClamp;
  job.output = absl::MakeSpan(pose);
  Check(job.Run(), "sampling");
  return pose;
}

std::vector<Transform> Model(const Skeleton& skeleton,
                             const std::vector<Transform>& local) {
  std::vector<Transform> model(local.size());
  LocalToModelJob fk{
      .skeleton = &skeleton, .input = local, .output = absl::MakeSpan(model)};
  Check(fk.Run(), "forward kinematics");
  return model;
}

Eigen::Vector3f EndPosition(const BipedMapping& mapping, int limb,
                            const std::vector<Transform>& model) {
  const BipedLimbReferences& r = mapping.references().limbs[limb];
  return r.end >= 0 ? model[r.end].translation
                    : model[r.lower].TransformPoint(r.end_point_offset);
}

Setup MakeSetup(const std::string& file, int clip, float start, float step,
                float ahead = 0.4f, bool align = true) {
  Setup setup;
  setup.asset = &bench::LoadAsset(file);
  const Skeleton& skeleton = setup.asset->skeleton;
  std::vector<BipedTip> tips;
  for (const EndSite& e : setup.asset->end_sites) {
    tips.push_back({e.joint, e.offset});
  }
  absl::StatusOr<BipedMapping> mapping = MapBipedByName(skeleton, tips);
  Check(mapping.status(), "biped mapping");
  setup.mapping = *std::move(mapping);
  const int pelvis = setup.mapping.references().pelvis;
  for (int i = 0; i < kCases; ++i) {
    const float t = start + step * static_cast<float>(i);
    Case c;
    c.input = Sample(*setup.asset, clip, t);
    const std::vector<Transform> in_model = Model(skeleton, c.input);
    std::vector<Transform> other =
        Model(skeleton, Sample(*setup.asset, clip, t + ahead));
    if (align) {
      // Move the other frame's pelvis onto this one's.
      const Transform to_input =
          Combine(in_model[pelvis],
                  LocalFromModel(other[pelvis], Transform::Identity()));
      for (Transform& m : other) m = Combine(to_input, m);
    }
    for (int l = 0; l < kNumBipedLimbs; ++l) {
      c.targets[l] = EndPosition(setup.mapping, l, other);
    }
    c.targets[4] = other[setup.mapping.references().root_node].translation;
    setup.cases.push_back(std::move(c));
  }
  return setup;
}

const Setup& Walk() {
  static const Setup* setup =
      new Setup(MakeSetup("cmu_131_01_walk.bvh", 0, 1.0f, 0.3f));
  return *setup;
}

const Setup& WalkAhead() {
  static const Setup* setup = new Setup(
      MakeSetup("cmu_131_01_walk.bvh", 0, 1.0f, 0.3f, 0.5f, /*align=*/false));
  return *setup;
}

const Setup& Robot() {
  static const Setup* setup =
      new Setup(MakeSetup("RobotExpressive.glb", 10, 0.0f, 0.05f));
  return *setup;
}

// `iterations` < 0: the job's defaults (converge, the default cap);
// otherwise FinalIK's fixed count (converge off). `body`: the body effector
// too.
void RunBiped(benchmark::State& state, const Setup& setup, int iterations,
              bool body = true) {
  std::vector<Transform> output(setup.asset->skeleton.num_joints());
  std::vector<FullBodyBipedIkJob> jobs;
  for (const Case& c : setup.cases) {
    FullBodyBipedIkJob job;
    job.skeleton = &setup.asset->skeleton;
    job.mapping = &setup.mapping;
    job.input = c.input;
    job.output = absl::MakeSpan(output);
    if (iterations >= 0) {
      job.converge = false;
      job.iterations = iterations;
    }
    for (int l = 0; l < kNumBipedLimbs; ++l) {
      BipedEffector& e = job.effectors[5 + l];
      e.position = c.targets[l];
      e.position_weight = 1.0f;
    }
    if (body) {
      job.effector(BipedEffectorId::kBody).position = c.targets[4];
      job.effector(BipedEffectorId::kBody).position_weight = 1.0f;
    }
    jobs.push_back(job);
  }
  size_t i = 0;
  for (auto _ : state) {
    const absl::Status s = jobs[i].Run();
    benchmark::DoNotOptimize(s);
    benchmark::DoNotOptimize(output.data());
    benchmark::ClobberMemory();
    i = (i + 1) % jobs.size();
  }
  state.SetItemsProcessed(state.iterations());
}

// FinalIK's fixed count (converge off). The argument is the iteration
// count; 4 was the default before converge.
void BM_FullBodyBiped_CmuWalk(benchmark::State& state) {
  RunBiped(state, Walk(), static_cast<int>(state.range(0)));
}
BENCHMARK(BM_FullBodyBiped_CmuWalk)
    ->Arg(4)
    ->Arg(0)
    ->Arg(1)
    ->Arg(10)
    ->Unit(benchmark::kMicrosecond);

// Default settings (converge, up to 32 iterations, the closing step): /0;
// in the same run, the defaults before converge (FinalIK's 4 iterations,
// no closing step): /1.
void BM_FullBodyBipedDefaults_CmuWalk(benchmark::State& state) {
  RunBiped(state, Walk(), state.range(0) == 0 ? -1 : 4);
}
BENCHMARK(BM_FullBodyBipedDefaults_CmuWalk)
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMicrosecond);

// Hands and feet only, 0.5 s ahead: /0 defaults, /1 FinalIK's 4 iterations.
void BM_FullBodyBipedDefaults_CmuWalkAhead(benchmark::State& state) {
  RunBiped(state, WalkAhead(), state.range(0) == 0 ? -1 : 4, /*body=*/false);
}
BENCHMARK(BM_FullBodyBipedDefaults_CmuWalkAhead)
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMicrosecond);

void BM_FullBodyBiped_RobotExpressive(benchmark::State& state) {
  RunBiped(state, Robot(), 4);
}
BENCHMARK(BM_FullBodyBiped_RobotExpressive)->Unit(benchmark::kMicrosecond);

// Mapping detection and set-up, done once per skeleton.
void BM_FullBodyBiped_MapByName(benchmark::State& state) {
  const Skeleton& skeleton = Walk().asset->skeleton;
  for (auto _ : state) {
    absl::StatusOr<BipedMapping> m = MapBipedByName(skeleton);
    benchmark::DoNotOptimize(m);
  }
}
BENCHMARK(BM_FullBodyBiped_MapByName)->Unit(benchmark::kMicrosecond);

// Full-body CCD, four limb effectors, the hips translating. The argument is
// the sweep count, run to the end (tolerance 0), as the 20-iteration figure
// of the Blade engine's IK notes.
void BM_FullBodyCcd_CmuWalk(benchmark::State& state) {
  const Setup& setup = Walk();
  const Skeleton& skeleton = setup.asset->skeleton;
  std::vector<Transform> output(skeleton.num_joints());
  std::vector<std::vector<FullBodyCcdEffector>> effectors;
  for (const Case& c : setup.cases) {
    std::vector<FullBodyCcdEffector> e;
    for (int l = 0; l < kNumBipedLimbs; ++l) {
      const BipedLimbReferences& r = setup.mapping.references().limbs[l];
      e.push_back({.joint = r.end, .target = c.targets[l]});
    }
    effectors.push_back(std::move(e));
  }
  size_t i = 0;
  for (auto _ : state) {
    FullBodyCcdJob job;
    job.skeleton = &skeleton;
    job.input = setup.cases[i].input;
    job.effectors = effectors[i];
    job.max_iterations = static_cast<int>(state.range(0));
    job.tolerance = AbsoluteTolerance(0.0f);
    job.translation_joint = setup.mapping.references().pelvis;
    job.output = absl::MakeSpan(output);
    const absl::Status s = job.Run();
    benchmark::DoNotOptimize(s);
    benchmark::ClobberMemory();
    i = (i + 1) % setup.cases.size();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FullBodyCcd_CmuWalk)
    ->Arg(20)
    ->Arg(4)
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace posewire
