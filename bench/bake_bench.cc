// A 1,000-frame bake of the CMU walk through the Bake RPC on loopback,
// against the same bake run in process by the service's own BakeRun (the
// frames solved and packed into the same response messages, without gRPC).
// items_per_second is frames per second; the ratio of the two is what the
// wire costs a pipeline. Two pipelines: the clip sampled alone (the wire's
// share at its largest) and sampled, a two-bone leg solve and spring bones
// on the left arm.
//
//   ./build/bench/posewire-bake-bench --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true
//       --benchmark_enable_random_interleaving=true
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "bench/bench_data.h"
#include "bench/loopback_server.h"
#include "clients/cpp/posewire_client.h"
#include "server/service/bake.h"
#include "server/transport/server.h"
#include "server/wire/wire_convert.h"

namespace posewire {
namespace {

constexpr int kFrames = 1000;

// 0: the clip alone; 1: with a two-bone leg solve and spring bones.
v1::BakeRequest WalkBake(int pipeline) {
  const ImportedAsset& walk = bench::LoadAsset("cmu_131_01_walk.bvh");
  v1::BakeRequest request;
  server::SkeletonToProto(walk.skeleton,
                          request.mutable_skeleton()->mutable_skeleton());
  server::ClipToProto(walk.clips.at(0), request.add_clips());
  request.mutable_source()->set_clip(walk.clips.at(0).name);
  request.mutable_source()->set_loop(true);
  request.set_frame_rate(60.0f);
  request.set_frame_count(kFrames);
  if (pipeline == 1) {
    v1::TwoBoneIkOp* leg = request.add_ops()->mutable_two_bone_ik();
    leg->set_start_joint("LeftHip");
    leg->set_mid_joint("LeftKnee");
    leg->set_end_joint("LeftAnkle");
    leg->mutable_target()->set_x(5.0f);
    leg->mutable_target()->set_y(2.0f);
    request.add_ops()->mutable_spring_bones()->mutable_rig()->add_root_joints(
        "LeftShoulder");
  }
  return request;
}

void Check(const absl::Status& status, benchmark::State& state) {
  if (!status.ok()) state.SkipWithError(std::string(status.message()).c_str());
}

void BM_BakeInProcess(benchmark::State& state) {
  const v1::BakeRequest request = WalkBake(static_cast<int>(state.range(0)));
  const server::ServerConfig config;
  server::SkeletonCache skeletons(config.skeleton_cache_size);
  v1::BakeResponse response;
  for (auto _ : state) {
    auto run = server::BakeRun::Start(request, config, skeletons);
    if (!run.ok()) {
      Check(run.status(), state);
      break;
    }
    while (!(*run)->done()) {
      response.Clear();
      if (absl::Status s = (*run)->Next(&response); !s.ok()) {
        Check(s, state);
        break;
      }
      benchmark::DoNotOptimize(response.frames_size());
    }
  }
  state.SetItemsProcessed(state.iterations() * kFrames);
}

server::PosewireServer& Server() {
  return bench::LoopbackServer("posewire-bake-bench");
}

// Args: the pipeline (as WalkBake), frames per message (0: the server's
// choice), and whether the client gathers every frame (Client::Bake) or
// handles each message as it comes (Client::BakeEach).
void BM_BakeOverGrpc(benchmark::State& state) {
  v1::BakeRequest request = WalkBake(static_cast<int>(state.range(0)));
  request.set_frames_per_message(static_cast<uint32_t>(state.range(1)));
  client::Client client(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", Server().port()),
                          grpc::InsecureChannelCredentials()),
      client::ClientOptions{});
  const bool gather = state.range(2) != 0;
  for (auto _ : state) {
    if (gather) {
      auto baked = client.Bake(request);
      if (!baked.ok()) {
        Check(baked.status(), state);
        break;
      }
      benchmark::DoNotOptimize(baked->frames_size());
      continue;
    }
    // A consumer that handles each message as it comes (writes it out).
    int frames = 0;
    const absl::Status status =
        client.BakeEach(request, [&frames](v1::BakeResponse& m) {
          frames += m.frames_size();
          return true;
        });
    if (!status.ok()) {
      Check(status, state);
      break;
    }
    benchmark::DoNotOptimize(frames);
  }
  state.SetItemsProcessed(state.iterations() * kFrames);
}

BENCHMARK(BM_BakeInProcess)
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_BakeOverGrpc)
    ->Args({0, 0, 0})
    ->Args({1, 0, 0})
    ->Args({0, 0, 1})
    ->Args({1, 0, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace posewire

BENCHMARK_MAIN();
