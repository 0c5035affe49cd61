// A game server's tick over loopback gRPC: 64 characters walking (the CMU
// walk sampled, spring bones on the left arm), each submitted on its own.
// Three ways to send a tick, timed in one run:
//   BM_TickOneFramePerCharacter: a Session frame per character (64 round
//     trips per tick);
//   BM_TickFrameBatcher: client::FrameBatcher with expected_characters 64
//     (one frame per tick, gathered by the library);
//   BM_TickOneFrameByHand: the caller builds the one frame itself (what the
//     batcher saves the caller from writing; its own cost is the gap).
// items_per_second is character frames per second.
//
//   ./build/bench/posewire-batcher-bench --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true
//       --benchmark_enable_random_interleaving=true
#include <benchmark/benchmark.h>

#include <future>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/bench_data.h"
#include "bench/loopback_server.h"
#include "clients/cpp/frame_batcher.h"
#include "clients/cpp/posewire_client.h"
#include "server/transport/server.h"

namespace posewire {
namespace {

constexpr int kCharacters = 64;
constexpr float kDt = 1.0f / 60.0f;

server::PosewireServer& Server() {
  return bench::LoopbackServer("posewire-batcher-bench");
}

struct Walkers {
  std::unique_ptr<client::Client> client;
  std::unique_ptr<client::Session> session;
};

// A session with kCharacters walkers registered; null session on error.
Walkers OpenWalkers(benchmark::State& state) {
  Walkers w;
  w.client = std::make_unique<client::Client>(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", Server().port()),
                          grpc::InsecureChannelCredentials()),
      client::ClientOptions{});
  auto session = w.client->OpenSession();
  absl::Status status = session.status();
  const ImportedAsset& walk = bench::LoadAsset("cmu_131_01_walk.bvh");
  if (status.ok()) status = (*session)->RegisterSkeleton("cmu", walk.skeleton);
  if (status.ok()) {
    status = (*session)->RegisterClip("walk", "cmu", walk.clips.at(0));
  }
  google::protobuf::RepeatedPtrField<v1::Operation> ops;
  ops.Add()->mutable_sample_clip()->mutable_sample()->set_clip("walk");
  ops.Add()->mutable_spring_bones()->mutable_rig()->add_root_joints(
      "LeftShoulder");
  if (status.ok()) status = (*session)->RegisterRig("walker", "cmu", ops);
  for (int i = 0; i < kCharacters && status.ok(); ++i) {
    status = (*session)->RegisterCharacter(absl::StrCat("npc", i), "walker");
  }
  if (!status.ok()) {
    state.SkipWithError(std::string(status.message()).c_str());
    return w;
  }
  w.session = std::move(*session);
  return w;
}

v1::CharacterFrame FrameOf(int i, int64_t tick) {
  v1::CharacterFrame c;
  c.set_character_id(absl::StrCat("npc", i));
  v1::OpUpdate* update = c.add_op_updates();
  update->set_op(0);
  update->set_time(0.05f * static_cast<float>(i) +
                   static_cast<float>(tick % 600) * kDt);
  return c;
}

// Sends `frame`; false (and the benchmark skipped) on an error.
bool Send(client::Session& session, const v1::Frame& frame,
          benchmark::State& state) {
  auto result = session.SendFrame(frame);
  if (!result.ok()) {
    state.SkipWithError(std::string(result.status().message()).c_str());
    return false;
  }
  benchmark::DoNotOptimize(result->characters_size());
  return true;
}

void BM_TickOneFramePerCharacter(benchmark::State& state) {
  Walkers w = OpenWalkers(state);
  if (w.session == nullptr) return;
  int64_t tick = 0;
  for (auto _ : state) {
    for (int i = 0; i < kCharacters; ++i) {
      v1::Frame frame;
      frame.set_sequence(w.session->last_sequence() + 1);
      frame.set_dt(kDt);
      *frame.add_characters() = FrameOf(i, tick);
      if (!Send(*w.session, frame, state)) return;
    }
    ++tick;
  }
  state.SetItemsProcessed(state.iterations() * kCharacters);
}

void BM_TickFrameBatcher(benchmark::State& state) {
  Walkers w = OpenWalkers(state);
  if (w.session == nullptr) return;
  client::FrameBatcher batcher(
      *w.session,
      client::FrameBatcherOptions{.expected_characters = kCharacters});
  std::vector<std::future<absl::StatusOr<v1::CharacterResult>>> futures(
      kCharacters);
  int64_t tick = 0;
  for (auto _ : state) {
    for (int i = 0; i < kCharacters; ++i) {
      futures[i] = batcher.Submit(FrameOf(i, tick), kDt);
    }
    for (auto& future : futures) {
      absl::StatusOr<v1::CharacterResult> result = future.get();
      if (!result.ok()) {
        state.SkipWithError(std::string(result.status().message()).c_str());
        return;
      }
      benchmark::DoNotOptimize(result->pose().transforms_size());
    }
    ++tick;
  }
  state.SetItemsProcessed(state.iterations() * kCharacters);
}

void BM_TickOneFrameByHand(benchmark::State& state) {
  Walkers w = OpenWalkers(state);
  if (w.session == nullptr) return;
  int64_t tick = 0;
  for (auto _ : state) {
    v1::Frame frame;
    frame.set_sequence(w.session->last_sequence() + 1);
    frame.set_dt(kDt);
    for (int i = 0; i < kCharacters; ++i) {
      *frame.add_characters() = FrameOf(i, tick);
    }
    if (!Send(*w.session, frame, state)) return;
    ++tick;
  }
  state.SetItemsProcessed(state.iterations() * kCharacters);
}

BENCHMARK(BM_TickOneFramePerCharacter)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_TickFrameBatcher)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_TickOneFrameByHand)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace posewire

BENCHMARK_MAIN();
