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
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "solver_core/dynamics_state.h"
#include "solver_core/pose.h"
#include "solver_core/simd_level.h"
#include "solver_core/skeleton.h"
#include "solver_core/spring_bones.h"

namespace posewire {
namespace {

constexpr int kChains = 8;  // the rig; RunOptions::chains varies it
constexpr int kBonesPerChain = 8;

struct Setup {
  Skeleton skeleton;
  SpringRig rig;
  LocalPose input;
  LocalPose output;
  std::vector<SpringCollider> colliders;
  SpringForces forces;
};

template <typename T>
T OrDie(absl::StatusOr<T> value) {
  if (!value.ok()) {
    std::cerr << "benchmark setup failed: " << value.status() << "\n";
    std::exit(1);
  }
  return *std::move(value);
}

Setup MakeSetup(SimulationSpace space, int chains = kChains) {
  // "body" at the origin; each chain root on a circle of radius 10 at
  // shoulder height, bones of 4 units hanging down and slightly out.
  SkeletonDesc d;
  d.joint_names.push_back("body");
  d.parents.push_back(kNoParent);
  d.rest_pose.push_back(Transform::Identity());
  std::vector<std::string> roots;
  for (int c = 0; c < chains; ++c) {
    const float angle = 2.0f * 3.14159265f * c / chains;
    const Eigen::Vector3f out(std::cos(angle), 0.0f, std::sin(angle));
    for (int b = 0; b <= kBonesPerChain; ++b) {
      const std::string name = absl::StrCat("hair", c, "_", b);
      if (b == 0) roots.push_back(name);
      d.joint_names.push_back(name);
      d.parents.push_back(b == 0 ? 0 : static_cast<int>(d.parents.size()) - 1);
      Transform t;
      if (b == 0) {
        t.translation = out * 10.0f + Eigen::Vector3f(0, 30, 0);
      } else {
        t.translation = out * 0.8f + Eigen::Vector3f(0, -4, 0);
      }
      d.rest_pose.push_back(t);
    }
  }
  Setup s;
  s.skeleton = OrDie(Skeleton::Create(std::move(d)));
  SpringRigDesc desc;
  desc.root_joints = roots;
  desc.space = space;
  desc.settings.radius = 1.0f;
  desc.settings.limit_angle_degrees = 60.0f;
  s.rig = OrDie(SpringRig::Create(s.skeleton, desc));
  s.input = RestPose(s.skeleton);
  s.output.resize(s.skeleton.num_joints());

  SpringCollider body;  // sphere
  body.offset.translation = Eigen::Vector3f(0, 20, 0);
  body.radius = 9.0f;
  SpringCollider hips;
  hips.shape = ColliderShape::kCapsule;
  hips.offset.translation = Eigen::Vector3f(0, 8, 0);
  hips.axis = Eigen::Vector3f::UnitX();
  hips.radius = 6.0f;
  hips.length = 10.0f;
  SpringCollider pack;
  pack.shape = ColliderShape::kBox;
  pack.attachment = ColliderAttachment::kBone;
  pack.bone = 0;
  pack.offset.translation = Eigen::Vector3f(0, 20, -10);
  pack.half_extents = Eigen::Vector3f(6, 8, 3);
  SpringCollider floor;
  floor.shape = ColliderShape::kPlane;
  floor.attachment = ColliderAttachment::kWorld;
  floor.axis = Eigen::Vector3f::UnitY();
  s.colliders = {body, hips, pack, floor};
  s.forces.gravity = Eigen::Vector3f(0, -980, 0);
  return s;
}

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
  Setup s = MakeSetup(options.space, options.chains);
  DynamicsState dynamics;
  SpringBonesScratch scratch;
  SpringBonesJob job;
  job.skeleton = &s.skeleton;
  job.rig = &s.rig;
  job.input = s.input;
  job.dt = options.dt;
  job.forces = s.forces;
  if (options.colliders) job.colliders = s.colliders;
  job.state_in = &dynamics;
  job.scratch = &scratch;
  job.output = absl::MakeSpan(s.output);
  job.state_out = &dynamics;
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
  Setup s = MakeSetup(SimulationSpace::kComponent);
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
