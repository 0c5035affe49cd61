// A 1,000-frame bake of the CMU walk through the Bake RPC on loopback,
// against the same bake run in process by the service's own BakeRun (the
// frames solved and packed into the same response messages, without gRPC).
// items_per_second is frames per second; the ratio of the two is what the
// wire costs a pipeline. Three pipelines (Pipeline below): the clip
// sampled alone (the wire's share at its largest); sampled, a two-bone leg
// solve and spring bones; and the walk retargeted onto another rig with
// its feet and hands kept.
//
// BM_BakeWireOnly is the wire's own floor for the same bake: a gRPC
// callback service that answers the Bake call with the response messages
// the service sent, serialized once beforehand, and does nothing else,
// driven by the same client. Its process CPU per bake (client, server and
// gRPC's threads; cpu_ms) added to the in-process run's bounds what the
// service can reach on this machine's cores.
//
//   ./build/bench/posewire-bake-bench --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true
//       --benchmark_enable_random_interleaving=true
#include <benchmark/benchmark.h>
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_data.h"
#include "bench/loopback_server.h"
#include "clients/cpp/posewire_client.h"
#include "proto/grpc_handoff.h"
#include "server/service/bake.h"
#include "server/transport/server.h"
#include "server/wire/wire_convert.h"

namespace posewire {
namespace {

constexpr int kFrames = 1000;

// The pipelines baked.
enum Pipeline : int {
  // The walk's clip sampled alone.
  kSample = 0,
  // Sampled, then a two-bone leg solve and spring bones on the left arm.
  kIkSprings = 1,
  // The walk retargeted onto the Daz rig of cmu_02_03_run_daz.bvh, its
  // foot contacts locked and its hands kept where the scaled source puts
  // them: a retargeting pipeline's bake.
  kRetarget = 2,
};
constexpr int kPipelines = 3;

v1::BakeRequest WalkBake(int pipeline) {
  const ImportedAsset& walk = bench::LoadAsset("cmu_131_01_walk.bvh");
  v1::BakeRequest request;
  request.set_frame_rate(60.0f);
  request.set_frame_count(kFrames);
  if (pipeline == kRetarget) {
    const ImportedAsset& daz = bench::LoadAsset("cmu_02_03_run_daz.bvh");
    server::SkeletonToProto(daz.skeleton,
                            request.mutable_skeleton()->mutable_skeleton());
    v1::RetargetOp* op = request.add_ops()->mutable_retarget();
    server::SkeletonToProto(walk.skeleton, op->mutable_skeleton());
    server::ClipToProto(walk.clips.at(0), op->mutable_clip()->mutable_clip());
    op->mutable_clip()->set_mode(v1::PLAYBACK_MODE_LOOP);
    op->mutable_feet()->set_lock_contacts(true);
    op->mutable_hands()->set_match_source(true);
    request.add_timed_ops(0);
    return request;
  }
  server::SkeletonToProto(walk.skeleton,
                          request.mutable_skeleton()->mutable_skeleton());
  server::ClipToProto(walk.clips.at(0), request.add_clips());
  request.mutable_source()->set_clip(walk.clips.at(0).name);
  request.mutable_source()->set_loop(true);
  if (pipeline == kIkSprings) {
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

// CPU seconds of the whole process so far: every thread, gRPC's included.
double ProcessCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Reports the process CPU per bake, in milliseconds, as cpu_ms.
void ReportCpu(benchmark::State& state, double cpu_seconds) {
  state.counters["cpu_ms"] = 1e3 * cpu_seconds /
                             static_cast<double>(std::max<int64_t>(
                                 1, static_cast<int64_t>(state.iterations())));
}

// The serialized response messages of a bake, as the service sends them.
std::vector<std::string> RecordedBake(const v1::BakeRequest& request) {
  const server::ServerConfig config;
  server::SkeletonCache skeletons(config.skeleton_cache_size);
  std::vector<std::string> messages;
  auto run = server::BakeRun::Start(request, config, skeletons);
  if (!run.ok()) return messages;
  while (!(*run)->done()) {
    v1::BakeResponse response;
    if (!(*run)->Next(&response).ok()) return {};
    messages.push_back(response.SerializeAsString());
  }
  return messages;
}

// One Bake call on the wire-only service: reads the request (unparsed),
// then writes the recorded messages one at a time, the last with the
// call's status, as the service's reactor does.
class ReplayedBake final : public grpc::ServerGenericBidiReactor {
 public:
  explicit ReplayedBake(const std::vector<std::string>& messages)
      : messages_(messages) {
    HandOffToGrpc(this);
    StartRead(&request_);
  }
  void OnReadDone(bool ok) override {
    TakeBackFromGrpc(this);
    if (!ok || messages_.empty()) {
      HandOffToGrpc(this);
      Finish(grpc::Status(grpc::StatusCode::INTERNAL, "nothing to replay"));
      return;
    }
    WriteNext();
  }
  void OnWriteDone(bool ok) override {
    TakeBackFromGrpc(this);
    if (!ok) {
      HandOffToGrpc(this);
      Finish(grpc::Status::CANCELLED);
      return;
    }
    WriteNext();
  }
  void OnDone() override {
    TakeBackFromGrpc(this);
    delete this;
  }

 private:
  void WriteNext() {
    const std::string& bytes = messages_[next_++];
    grpc::Slice slice(bytes.data(), bytes.size());
    response_ = grpc::ByteBuffer(&slice, 1);
    HandOffToGrpc(this);
    if (next_ == messages_.size()) {
      StartWriteAndFinish(&response_, grpc::WriteOptions(), grpc::Status::OK);
    } else {
      StartWrite(&response_);
    }
  }

  const std::vector<std::string>& messages_;
  size_t next_ = 0;
  grpc::ByteBuffer request_;
  grpc::ByteBuffer response_;
};

// Serves every call as a replay of one pipeline's bake (WalkBake).
class WireOnlyBakeService final : public grpc::CallbackGenericService {
 public:
  WireOnlyBakeService() {
    for (int pipeline = 0; pipeline < kPipelines; ++pipeline) {
      recorded_.push_back(RecordedBake(WalkBake(pipeline)));
    }
  }
  grpc::ServerGenericBidiReactor* CreateReactor(
      grpc::GenericCallbackServerContext* /*context*/) override {
    // Every pipeline's call comes with the same method: the benchmark
    // running says which recording answers.
    return new ReplayedBake(recorded_.at(pipeline_.load()));
  }
  void Answer(int pipeline) { pipeline_ = pipeline; }

 private:
  std::vector<std::vector<std::string>> recorded_;
  std::atomic<int> pipeline_{0};
};

struct WireOnlyServer {
  WireOnlyBakeService service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
};

WireOnlyServer& WireOnly() {
  static WireOnlyServer* wire = [] {
    auto* w = new WireOnlyServer;
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &w->port);
    builder.SetMaxReceiveMessageSize(-1);
    builder.RegisterCallbackGenericService(&w->service);
    w->server = builder.BuildAndStart();
    if (w->server == nullptr || w->port == 0) {
      std::fprintf(stderr, "posewire-bake-bench: cannot listen\n");
      std::exit(1);
    }
    return w;
  }();
  return *wire;
}

void BM_BakeInProcess(benchmark::State& state) {
  const v1::BakeRequest request = WalkBake(static_cast<int>(state.range(0)));
  const server::ServerConfig config;
  server::SkeletonCache skeletons(config.skeleton_cache_size);
  v1::BakeResponse response;
  const double cpu_start = ProcessCpuSeconds();
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
  ReportCpu(state, ProcessCpuSeconds() - cpu_start);
  state.SetItemsProcessed(state.iterations() * kFrames);
}

// Args: the pipeline (as WalkBake), frames per message (0: the server's
// choice), and whether the client gathers every frame (Client::Bake) or
// handles each message as it comes (Client::BakeEach).
void RunBakes(benchmark::State& state, int port) {
  v1::BakeRequest request = WalkBake(static_cast<int>(state.range(0)));
  request.set_frames_per_message(static_cast<uint32_t>(state.range(1)));
  client::Client client(grpc::CreateChannel(absl::StrCat("127.0.0.1:", port),
                                            grpc::InsecureChannelCredentials()),
                        client::ClientOptions{});
  const bool gather = state.range(2) != 0;
  const double cpu_start = ProcessCpuSeconds();
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
  ReportCpu(state, ProcessCpuSeconds() - cpu_start);
  state.SetItemsProcessed(state.iterations() * kFrames);
}

void BM_BakeOverGrpc(benchmark::State& state) {
  RunBakes(state, bench::LoopbackServer("posewire-bake-bench").port());
}

// The server's choice of frames per message only: the recording is the
// service's own messages.
void BM_BakeWireOnly(benchmark::State& state) {
  WireOnlyServer& wire = WireOnly();
  wire.service.Answer(static_cast<int>(state.range(0)));
  RunBakes(state, wire.port);
}

BENCHMARK(BM_BakeInProcess)
    ->Arg(kSample)
    ->Arg(kIkSprings)
    ->Arg(kRetarget)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_BakeOverGrpc)
    ->Args({kSample, 0, 0})
    ->Args({kIkSprings, 0, 0})
    ->Args({kRetarget, 0, 0})
    ->Args({kSample, 0, 1})
    ->Args({kIkSprings, 0, 1})
    ->Args({kRetarget, 0, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_BakeWireOnly)
    ->Args({kSample, 0, 0})
    ->Args({kIkSprings, 0, 0})
    ->Args({kRetarget, 0, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace posewire

BENCHMARK_MAIN();
