// Spring-bone dynamics (SpringBonesJob): 8 chains of 8 simulated bones hung
// around a body, 4 colliders (sphere, capsule, box, floor plane), gravity,
// the component walking in a circle so the world-motion terms run. One
// iteration is one frame: the validated job, state in and out in place,
// reusable scratch. dt = 1/60 s gives exactly one 60 Hz substep per frame.
//
// The names ending in Sse2 run the same frames with the solver capped at
// SSE2 (SetMaxSimdLevel); the others use the detected level.
//
// ./build/bench/posewire-bench --benchmark_filter=BM_SpringBones
//     --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cmath>
#include <string>

#include "bench/spring_scene.h"
#include "solver_core/dynamics/dynamics_state.h"
#include "solver_core/dynamics/spring_bones.h"
#include "solver_core/model/simd_level.h"

namespace posewire {
namespace {

// The rig; RunOptions::chains varies it.
constexpr int kChains = kSpringSceneChains;

// Caps the solver's SIMD level for one benchmark and restores the level
// that was active.
class SimdCap {
 public:
  explicit SimdCap(bool sse2) : saved_(ActiveSimdLevel()) {
    if (sse2) SetMaxSimdLevel(SimdLevel::kSse2);
  }
  ~SimdCap() { SetMaxSimdLevel(saved_); }

 private:
  SimdLevel saved_;
};

struct RunOptions {
  SimulationSpace space = SimulationSpace::kComponent;
  float dt = 1.0f / 60.0f;
  bool walk = true;
  bool colliders = true;
  // Cap the solver at SSE2 (else the detected level).
  bool sse2 = false;
  int chains = kChains;
};

void RunFrames(benchmark::State& state, const RunOptions& options) {
  SimdCap cap(options.sse2);
  SpringScene s = MakeSpringScene(options.space, options.chains);
  DynamicsState dynamics;
  SpringBonesScratch scratch;
  SpringBonesJob job = SceneJob(s, dynamics, scratch, options.dt);
  if (!options.colliders) job.colliders = {};
  int frame = 0;
  for (auto _ : state) {
    // Walk in a circle of radius 100 once every 4 s: the chains trail at
    // their angle limits and press on the colliders, the expensive case.
    const float t = static_cast<float>(frame++ % 240) / 60.0f;
    const float a = options.walk ? 2.0f * 3.14159265f * t / 4.0f : 0.0f;
    job.component_to_world.translation =
        Eigen::Vector3f(100.0f * std::cos(a), 0.0f, 100.0f * std::sin(a));
    job.component_to_world.rotation =
        Eigen::AngleAxisf(-a, Eigen::Vector3f::UnitY());
    if (!job.Run().ok()) {
      state.SkipWithError("SpringBonesJob failed");
      break;
    }
    benchmark::DoNotOptimize(s.output.data());
    benchmark::DoNotOptimize(dynamics.positions.data());
  }
  state.SetItemsProcessed(state.iterations() * s.rig.num_particles());
  state.SetLabel(s.rig.prefers_wide_lanes() && !options.sse2 &&
                         ActiveSimdLevel() == SimdLevel::kAvx2
                     ? "8 lanes (avx2)"
                     : "4 lanes");
}

// The reference figure: 8 x 8 bones, 4 colliders, 1 substep.
void BM_SpringBones8x8Colliders4(benchmark::State& state) {
  RunFrames(state, {});
}
BENCHMARK(BM_SpringBones8x8Colliders4);

// Standing still: the chains hang at rest, a few resting on colliders.
void BM_SpringBones8x8Colliders4Idle(benchmark::State& state) {
  RunFrames(state, {.walk = false});
}
BENCHMARK(BM_SpringBones8x8Colliders4Idle);

// The same walk without colliders: what the 4 colliders cost.
void BM_SpringBones8x8NoColliders(benchmark::State& state) {
  RunFrames(state, {.colliders = false});
}
BENCHMARK(BM_SpringBones8x8NoColliders);

void BM_SpringBones8x8Colliders4World(benchmark::State& state) {
  RunFrames(state, {.space = SimulationSpace::kWorld});
}
BENCHMARK(BM_SpringBones8x8Colliders4World);

// A 15 fps client: four substeps per frame.
void BM_SpringBones8x8Colliders4Substeps4(benchmark::State& state) {
  RunFrames(state, {.dt = 4.0f / 60.0f});
}
BENCHMARK(BM_SpringBones8x8Colliders4Substeps4);

// 16 chains (a skirt): levels of 16 particles, wide enough for the
// eight-lane AVX2 kernels (SpringRig::prefers_wide_lanes).
void BM_SpringBones16x8Colliders4(benchmark::State& state) {
  RunFrames(state, {.chains = 16});
}
BENCHMARK(BM_SpringBones16x8Colliders4);

// The same frames with the solver capped at SSE2 (the baseline x86-64
// kernels; the names above run the detected level), so one run gives both
// and their ratio. The label says which kernels ran.
void BM_SpringBones8x8Colliders4Sse2(benchmark::State& state) {
  RunFrames(state, {.sse2 = true});
}
BENCHMARK(BM_SpringBones8x8Colliders4Sse2);

void BM_SpringBones8x8Colliders4IdleSse2(benchmark::State& state) {
  RunFrames(state, {.walk = false, .sse2 = true});
}
BENCHMARK(BM_SpringBones8x8Colliders4IdleSse2);

void BM_SpringBones8x8NoCollidersSse2(benchmark::State& state) {
  RunFrames(state, {.colliders = false, .sse2 = true});
}
BENCHMARK(BM_SpringBones8x8NoCollidersSse2);

void BM_SpringBones8x8Colliders4WorldSse2(benchmark::State& state) {
  RunFrames(state, {.space = SimulationSpace::kWorld, .sse2 = true});
}
BENCHMARK(BM_SpringBones8x8Colliders4WorldSse2);

void BM_SpringBones8x8Colliders4Substeps4Sse2(benchmark::State& state) {
  RunFrames(state, {.dt = 4.0f / 60.0f, .sse2 = true});
}
BENCHMARK(BM_SpringBones8x8Colliders4Substeps4Sse2);

void BM_SpringBones16x8Colliders4Sse2(benchmark::State& state) {
  RunFrames(state, {.sse2 = true, .chains = 16});
}
BENCHMARK(BM_SpringBones16x8Colliders4Sse2);

// The wire form of the state of that rig (72 particles).
void BM_SpringBonesStateRoundTrip(benchmark::State& state) {
  SpringScene s = MakeSpringScene(SimulationSpace::kComponent);
  DynamicsState dynamics;
  SpringBonesJob job;
  job.skeleton = &s.skeleton;
  job.rig = &s.rig;
  job.input = s.input;
  job.dt = 1.0f / 60.0f;
  job.output = absl::MakeSpan(s.output);
  job.state_out = &dynamics;
  if (!job.Run().ok()) {
    state.SkipWithError("SpringBonesJob failed");
    return;
  }
  for (auto _ : state) {
    const std::string bytes = SerializeDynamicsState(dynamics);
    auto parsed = ParseDynamicsState(bytes);
    benchmark::DoNotOptimize(parsed.ok());
  }
}
BENCHMARK(BM_SpringBonesStateRoundTrip);

}  // namespace
}  // namespace posewire
