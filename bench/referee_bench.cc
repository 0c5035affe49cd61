// Hit registration on the CMU walk rig (31 joints) with 15 capsules on its
// limbs and spine, posed at frame 100: the cost of one ray, through the
// validated RayCastJob (placing each hitbox per ray) and through what a
// HitQuery does per ray (FirstRayHit on hitboxes placed once per query);
// and BM_Rewind, one rewind of the 31-joint model pose between two frames
// (InterpolatePosesJob). The rays are 256 fixed ones from 40-120 units
// (inches: 1-3 m) around the hips toward points near the body; about a
// quarter hit (the `hit_fraction` counter).
//
// ./build/bench/posewire-bench
//     --benchmark_filter='BM_RayCast|BM_Rewind|BM_LocalToModel$'
//     --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <iostream>
#include <random>
#include <vector>

#include "bench/bench_data.h"
#include "bench/referee_scene.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/pose_ops/sampling_job.h"
#include "solver_core/referee/hitboxes.h"
#include "solver_core/referee/rewind.h"

namespace posewire {
namespace {

std::vector<Transform> ModelAt(const ImportedAsset& walk, float time) {
  std::vector<Transform> local(walk.skeleton.num_joints());
  SamplingJob sample;
  sample.skeleton = &walk.skeleton;
  sample.clip = &walk.clips[0];
  sample.time = time;
  sample.output = absl::MakeSpan(local);
  std::vector<Transform> model(local.size());
  if (!sample.Run().ok() || !LocalToModelJob{.skeleton = &walk.skeleton,
                                             .input = local,
                                             .output = absl::MakeSpan(model)}
                                 .Run()
                                 .ok()) {
    std::cerr << "cannot pose the CMU walk\n";
    std::exit(1);
  }
  return model;
}

void BM_RayCast(benchmark::State& state) {
  const bench::RefereeScene& s = bench::Scene();
  RayHit hit;
  RayCastJob job{.skeleton = s.skeleton,
                 .hitboxes = s.hitboxes,
                 .model_pose = s.model,
                 .hit = &hit};
  if (absl::Status status = job.Run(); !status.ok()) {
    state.SkipWithError(std::string(status.message()).c_str());
    return;
  }
  size_t i = 0;
  int64_t hits = 0;
  for (auto _ : state) {
    job.origin = s.rays[i].origin;
    job.direction = s.rays[i].direction;
    benchmark::DoNotOptimize(job.Run().ok());
    hits += hit.hitbox >= 0;
    i = (i + 1) % s.rays.size();
  }
  state.counters["hit_fraction"] =
      static_cast<double>(hits) / static_cast<double>(state.iterations());
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RayCast);

// Per ray of a HitQuery: hitboxes placed once (not timed), then each ray.
void BM_RayCastPlaced(benchmark::State& state) {
  const bench::RefereeScene& s = bench::Scene();
  std::vector<PlacedHitbox> placed(s.hitboxes.size());
  PlaceHitboxes(s.hitboxes, s.model, absl::MakeSpan(placed));
  size_t i = 0;
  int64_t hits = 0;
  const float inf = std::numeric_limits<float>::infinity();
  for (auto _ : state) {
    const RayHit hit = FirstRayHit(s.hitboxes, placed, s.rays[i].origin,
                                   s.rays[i].direction, inf);
    benchmark::DoNotOptimize(hit);
    hits += hit.hitbox >= 0;
    i = (i + 1) % s.rays.size();
  }
  state.counters["hit_fraction"] =
      static_cast<double>(hits) / static_cast<double>(state.iterations());
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RayCastPlaced);

// One character's rewind between two recorded model poses.
void BM_Rewind(benchmark::State& state) {
  const bench::RefereeScene& s = bench::Scene();
  std::vector<Transform> out(s.model.size());
  const InterpolatePosesJob job{
      .before = s.model,
      .after = s.model_next,
      .alpha = RewindAlpha(10.0, 10.0 + 1.0 / 60.0, 10.0 + 0.37 / 60.0),
      .output = absl::MakeSpan(out)};
  for (auto _ : state) {
    benchmark::DoNotOptimize(job.Run().ok());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Rewind);

}  // namespace

namespace bench {

const RefereeScene& Scene() {
  static const RefereeScene* scene = [] {
    const ImportedAsset& walk = bench::LoadAsset("cmu_131_01_walk.bvh");
    auto* s = new RefereeScene;
    s->skeleton = &walk.skeleton;
    s->model = ModelAt(walk, 100.0f / 120.0f);
    s->model_next = ModelAt(walk, 101.0f / 120.0f);
    // A capsule from each joint toward a child (the segment's middle at
    // half the child's offset, its Y axis along the bone).
    for (const char* name :
         {"LeftHip", "LeftKnee", "LeftAnkle", "RightHip", "RightKnee",
          "RightAnkle", "lowerback", "Chest", "LHipJoint", "lowerneck", "Neck",
          "LeftShoulder", "LeftElbow", "RightShoulder", "RightElbow"}) {
      const int joint = walk.skeleton.FindJoint(name);
      const absl::Span<const int> children =
          joint < 0 ? absl::Span<const int>() : walk.skeleton.children(joint);
      if (joint < 0 || children.empty()) {
        std::cerr << "CMU walk rig lacks joint " << name << "\n";
        std::exit(1);
      }
      // Toward the farthest child (some children sit on their parent).
      Eigen::Vector3f bone = Eigen::Vector3f::Zero();
      for (const int child : children) {
        const Eigen::Vector3f t = walk.skeleton.rest_pose()[child].translation;
        if (t.norm() > bone.norm()) bone = t;
      }
      if (!(bone.norm() > 0.0f)) {
        std::cerr << "CMU walk joint " << name << " has no bone\n";
        std::exit(1);
      }
      Hitbox h;
      h.joint = joint;
      h.shape = HitboxShape::kCapsule;
      h.offset_translation = bone * 0.5f;
      h.offset_rotation =
          Eigen::Quaternionf::FromTwoVectors(Eigen::Vector3f::UnitY(), bone);
      h.radius = 0.6f;
      h.half_height = bone.norm() * 0.5f;
      s->hitboxes.push_back(h);
    }
    const Eigen::Vector3f center = s->model[0].translation;
    std::mt19937 rng(131);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (int i = 0; i < 256; ++i) {
      const float x = u(rng);
      const float y = u(rng);
      const float z = u(rng);
      const float d = 40.0f + 40.0f * (u(rng) + 1.0f);
      const Eigen::Vector3f from =
          center + Eigen::Vector3f(x, y, z).normalized() * d;
      const float tx = u(rng);
      const float ty = u(rng);
      const float tz = u(rng);
      const Eigen::Vector3f toward =
          center + Eigen::Vector3f(tx * 4, ty * 12, tz * 4);
      s->rays.push_back({from, toward - from});
    }
    return s;
  }();
  return *scene;
}

}  // namespace bench
}  // namespace posewire
