// A HitQuery as a Session answers it (server::AnswerHitQuery): N
// characters on a square grid 120 units (3 m) apart, each the CMU walk at
// frame 100 with the referee scene's 15 capsules, and 32 rays per query,
// each fired from 60 units in front of one character's hips toward a point
// near its body, as a shooter aims. Time per query, the placing of every
// character's hitboxes included; `hit_fraction` counts the rays that hit.
//
// ./build/bench/posewire-bench --benchmark_filter='BM_HitQuery'
//     --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/referee_scene.h"
#include "posewire/v1/posewire.pb.h"
#include "server/service/hit_query.h"

namespace posewire {
namespace {

void SetVec3(const Eigen::Vector3f& v, v1::Vec3* out) {
  out->set_x(v.x());
  out->set_y(v.y());
  out->set_z(v.z());
}

void BM_HitQuery(benchmark::State& state) {
  const bench::RefereeScene& s = bench::Scene();
  const int characters = static_cast<int>(state.range(0));
  const int side = 8;
  const float spacing = 120.0f;
  std::vector<std::string> ids(characters);
  std::vector<server::HitTargetPose> targets(characters);
  for (int c = 0; c < characters; ++c) {
    ids[c] = absl::StrCat("c", c);
    server::HitTargetPose& t = targets[c];
    t.character_id = &ids[c];
    t.skeleton = s.skeleton;
    t.hitboxes = s.hitboxes;
    t.model = s.model;
    t.root.translation =
        Eigen::Vector3f(static_cast<float>(c % side) * spacing, 0.0f,
                        static_cast<float>(c / side) * spacing);
  }
  v1::HitQuery query;
  std::mt19937 rng(64);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int k = 0; k < 32; ++k) {
    const int c = (7 * k) % characters;
    const Eigen::Vector3f hips =
        targets[c].root.translation + s.model[0].translation;
    const float x = u(rng);
    const float y = u(rng);
    const float z = u(rng);
    const Eigen::Vector3f toward = hips + Eigen::Vector3f(4 * x, 12 * y, 4 * z);
    const Eigen::Vector3f from = hips - Eigen::Vector3f(0.0f, 0.0f, 60.0f);
    v1::Ray* ray = query.add_rays();
    SetVec3(from, ray->mutable_origin());
    SetVec3(toward - from, ray->mutable_direction());
  }
  int64_t hits = 0;
  int64_t rays = 0;
  for (auto _ : state) {
    v1::QueryResult result;
    const absl::Status status =
        server::AnswerHitQuery(query, absl::MakeSpan(targets), &result);
    if (!status.ok()) {
      std::cerr << status << "\n";
      std::exit(1);
    }
    for (const v1::RayHit& hit : result.rays()) hits += hit.hit();
    rays += result.rays_size();
    benchmark::DoNotOptimize(result);
  }
  state.counters["hit_fraction"] =
      static_cast<double>(hits) / static_cast<double>(rays);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_HitQuery)->Arg(64);

}  // namespace
}  // namespace posewire
