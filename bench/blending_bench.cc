// N-layer blending (BlendingJob) and additive layers (MakeAdditiveJob,
// AdditiveJob) on 64-joint poses.
//
// Blend items are joints x layers, so items_per_second reads as
// joint-layers per second (ozz-animation reports ns per joint per layer);
// additive items are joints.
//
// ./build/bench/posewire-bench --benchmark_filter='BM_(Blend|Additive)'
//     --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// BM_Blend* time the kernels ActiveSimdLevel picks (AVX2 where the CPU has
// it); BM_Blend*Sse2 cap them at the SSE2 baseline for comparison. The
// label names the level used.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "solver_core/model/pose.h"
#include "solver_core/model/simd_level.h"
#include "solver_core/pose_ops/additive_job.h"
#include "solver_core/pose_ops/blending_job.h"

namespace posewire {
namespace {

constexpr int kJoints = 64;

const Skeleton& Skeleton64() {
  static const Skeleton* skeleton = [] {
    SkeletonDesc desc;
    for (int j = 0; j < kJoints; ++j) {
      desc.joint_names.push_back("joint" + std::to_string(j));
      desc.parents.push_back(j == 0 ? kNoParent : (j - 1) / 2);
      desc.rest_pose.push_back(Transform());
    }
    return new Skeleton(*Skeleton::Create(std::move(desc)));
  }();
  return *skeleton;
}

// A deterministic random local pose.
LocalPose RandomPose(uint32_t seed) {
  std::mt19937 engine(seed);
  auto uniform = [&engine](float lo, float hi) {
    return lo +
           (hi - lo) * static_cast<float>(engine() >> 8) * (1.0f / 16777216.0f);
  };
  LocalPose pose(kJoints);
  for (Transform& t : pose) {
    t.translation =
        Eigen::Vector3f(uniform(-1, 1), uniform(-1, 1), uniform(-1, 1));
    t.rotation = Eigen::Quaternionf(uniform(-1, 1), uniform(-1, 1),
                                    uniform(-1, 1), uniform(-1, 1))
                     .normalized();
    t.scale = Eigen::Vector3f::Constant(uniform(0.5f, 2.0f));
  }
  return pose;
}

// Caps the kernels at SSE2 for one benchmark (SetMaxSimdLevel), so the
// baseline and the detected (AVX2 where available) paths read off one run.
class ScopedSimdCap {
 public:
  explicit ScopedSimdCap(bool sse2) : previous_(ActiveSimdLevel()) {
    if (sse2) SetMaxSimdLevel(SimdLevel::kSse2);
  }
  ~ScopedSimdCap() { SetMaxSimdLevel(previous_); }
  ScopedSimdCap(const ScopedSimdCap&) = delete;
  ScopedSimdCap& operator=(const ScopedSimdCap&) = delete;

 private:
  SimdLevel previous_;
};

// What Run() checks before blending.
enum class Checks {
  // Validate() in full: sizes, weights and every input transform (finite,
  // unit rotation).
  kAll,
  // layers_validated: sizes, indices and weights only, as ozz-animation's
  // BlendingJob::Validate does (its inputs are not screened).
  kStructure,
  // RunUnchecked(): nothing.
  kNone,
};

void Blend(benchmark::State& state, Checks checks, bool masked,
           bool sse2 = false) {
  const ScopedSimdCap cap(sse2);
  const int num_layers = static_cast<int>(state.range(0));
  const Skeleton& skeleton = Skeleton64();
  std::vector<LocalPose> poses;
  std::vector<std::vector<float>> masks;
  std::vector<BlendLayer> layers(num_layers);
  for (int l = 0; l < num_layers; ++l) {
    poses.push_back(RandomPose(100 + l));
    masks.emplace_back(kJoints, l == 0 ? 1.0f : 0.5f);
  }
  for (int l = 0; l < num_layers; ++l) {
    layers[l].transform = poses[l];
    layers[l].weight = 1.0f / static_cast<float>(l + 1);
    if (masked) layers[l].joint_weights = masks[l];
  }
  LocalPose out(kJoints);
  BlendingJob job;
  job.skeleton = &skeleton;
  job.layers = layers;
  job.output = absl::MakeSpan(out);
  if (!job.Run().ok()) state.SkipWithError("invalid blend");
  job.layers_validated = checks == Checks::kStructure;
  for (auto _ : state) {
    if (checks == Checks::kNone) {
      job.RunUnchecked();
    } else {
      benchmark::DoNotOptimize(job.Run().ok());
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * kJoints * num_layers);
  state.SetLabel(std::string(SimdLevelName(ActiveSimdLevel())));
}

// Validation included: sizes, weights, every input transform finite with a
// unit rotation (more than ozz-animation's BlendingJob checks).
void BM_Blend(benchmark::State& state) { Blend(state, Checks::kAll, false); }
BENCHMARK(BM_Blend)->Arg(2)->Arg(4);

// The ozz comparison: the structural checks ozz's Validate makes, then the
// blend.
void BM_BlendLayersValidated(benchmark::State& state) {
  Blend(state, Checks::kStructure, false);
}
BENCHMARK(BM_BlendLayersValidated)->Arg(2)->Arg(4);

void BM_BlendUnchecked(benchmark::State& state) {
  Blend(state, Checks::kNone, false);
}
BENCHMARK(BM_BlendUnchecked)->Arg(2)->Arg(4);

// Per-joint masks on every layer: weights gathered per joint.
void BM_BlendMasked(benchmark::State& state) {
  Blend(state, Checks::kAll, true);
}
BENCHMARK(BM_BlendMasked)->Arg(2)->Arg(4);

// The same capped at SSE2 (the baseline x86-64 kernels; on a CPU without
// AVX2 they time the same code as the above).
void BM_BlendSse2(benchmark::State& state) {
  Blend(state, Checks::kAll, false, true);
}
BENCHMARK(BM_BlendSse2)->Arg(2)->Arg(4);

void BM_BlendLayersValidatedSse2(benchmark::State& state) {
  Blend(state, Checks::kStructure, false, true);
}
BENCHMARK(BM_BlendLayersValidatedSse2)->Arg(2)->Arg(4);

void BM_BlendUncheckedSse2(benchmark::State& state) {
  Blend(state, Checks::kNone, false, true);
}
BENCHMARK(BM_BlendUncheckedSse2)->Arg(2)->Arg(4);

void BM_BlendMaskedSse2(benchmark::State& state) {
  Blend(state, Checks::kAll, true, true);
}
BENCHMARK(BM_BlendMaskedSse2)->Arg(2)->Arg(4);

void BM_AdditiveApply(benchmark::State& state) {
  const Skeleton& skeleton = Skeleton64();
  const LocalPose input = RandomPose(1);
  const LocalPose base = RandomPose(2);
  const LocalPose additive = RandomPose(3);
  LocalPose delta(kJoints);
  if (!MakeAdditiveJob{.skeleton = &skeleton,
                       .base = base,
                       .additive = additive,
                       .delta = absl::MakeSpan(delta)}
           .Run()
           .ok()) {
    state.SkipWithError("invalid delta");
  }
  LocalPose out(kJoints);
  AdditiveJob job;
  job.skeleton = &skeleton;
  job.input = input;
  job.delta = delta;
  job.weight = static_cast<float>(state.range(0)) / 100.0f;
  job.output = absl::MakeSpan(out);
  for (auto _ : state) {
    benchmark::DoNotOptimize(job.Run().ok());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * kJoints);
}
// Weight 1 (the delta as is), 0.5 (partial) and -0.5 (inverse).
BENCHMARK(BM_AdditiveApply)->Arg(100)->Arg(50)->Arg(-50);

void BM_AdditiveMake(benchmark::State& state) {
  const Skeleton& skeleton = Skeleton64();
  const LocalPose base = RandomPose(2);
  const LocalPose additive = RandomPose(3);
  LocalPose delta(kJoints);
  MakeAdditiveJob job{.skeleton = &skeleton,
                      .base = base,
                      .additive = additive,
                      .delta = absl::MakeSpan(delta)};
  for (auto _ : state) {
    benchmark::DoNotOptimize(job.Run().ok());
    benchmark::DoNotOptimize(delta.data());
  }
  state.SetItemsProcessed(state.iterations() * kJoints);
}
BENCHMARK(BM_AdditiveMake);

}  // namespace
}  // namespace posewire
