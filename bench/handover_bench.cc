// How long a session is without answers when its replica drains: from the
// SIGTERM sent to a real posewire-server process to the first answer the
// C++ client (SessionOptions::auto_resume) gets from the other replica,
// which it reaches through a channel listing both. One hand-over per
// repetition, each on a new first replica; the session runs a crossfade
// player, two-bone IK and spring bones on the CMU walk rig and sends
// frames back to back. Report medians, p99 and max over the repetitions:
//
//   ./build/bench/posewire-handover-bench --benchmark_repetitions=50
//       --benchmark_report_aggregates_only=true  (one line)
#include <benchmark/benchmark.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/bench_data.h"
#include "clients/cpp/posewire_client.h"
#include "tests/service/server_process.h"

namespace posewire {
namespace {

using ::posewire::testing::ServerProcess;

google::protobuf::RepeatedPtrField<v1::Operation> Pipeline() {
  google::protobuf::RepeatedPtrField<v1::Operation> ops;
  ops.Add()->mutable_crossfade()->add_commands()->set_play("walk");
  v1::TwoBoneIkOp* leg = ops.Add()->mutable_two_bone_ik();
  leg->set_start_joint("LeftHip");
  leg->set_mid_joint("LeftKnee");
  leg->set_end_joint("LeftAnkle");
  leg->mutable_target()->set_x(5.0f);
  leg->mutable_target()->set_y(2.0f);
  ops.Add()->mutable_spring_bones()->mutable_rig()->add_root_joints(
      "LeftShoulder");
  return ops;
}

v1::Frame FrameNumber(uint64_t f) {
  v1::Frame frame;
  frame.set_sequence(f);
  frame.set_dt(1.0f / 60.0f);
  frame.add_characters()->set_character_id("hero");
  return frame;
}

void Check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "handover bench: %s\n", what.c_str());
    std::exit(1);
  }
}

double P99(const std::vector<double>& v) {
  std::vector<double> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  return sorted[static_cast<size_t>(0.99 * (sorted.size() - 1) + 0.5)];
}

double Max(const std::vector<double>& v) {
  return *std::max_element(v.begin(), v.end());
}

void BM_SessionHandover(benchmark::State& state) {
  const std::string dir = "/tmp";
  static ServerProcess* other =
      new ServerProcess(POSEWIRE_SERVER_BINARY, dir + "/handover_b.log");
  Check(other->port() > 0, "the second replica did not start");
  const ImportedAsset& walk = bench::LoadAsset("cmu_131_01_walk.bvh");
  for (auto _ : state) {
    ServerProcess first(POSEWIRE_SERVER_BINARY, dir + "/handover_a.log");
    Check(first.port() > 0, "the first replica did not start");
    client::Client client(
        grpc::CreateChannel(absl::StrCat("ipv4:127.0.0.1:", first.port(),
                                         ",127.0.0.1:", other->port()),
                            grpc::InsecureChannelCredentials()),
        client::ClientOptions{});
    client::SessionOptions options;
    options.auto_resume = true;
    auto session = client.OpenSession(options);
    Check(session.ok(), "open");
    Check((*session)->RegisterSkeleton("cmu", walk.skeleton).ok(), "skeleton");
    Check((*session)->RegisterClip("walk", "cmu", walk.clips.at(0)).ok(),
          "clip");
    Check((*session)->RegisterRig("rig", "cmu", Pipeline()).ok(), "rig");
    Check((*session)->RegisterCharacter("hero", "rig").ok(), "character");
    uint64_t f = 0;
    for (int i = 0; i < 10; ++i) {
      auto answer = (*session)->SendFrame(FrameNumber(++f));
      Check(answer.ok() && answer->characters(0).status().code() == 0,
            absl::StrCat("frame: ",
                         answer.ok() ? answer->characters(0).status().message()
                                     : answer.status().ToString()));
    }
    const auto sigterm = std::chrono::steady_clock::now();
    first.Signal(SIGTERM);
    // Frames the first replica still answers, until the one the other
    // replica answers after the resume.
    while ((*session)->resume_counters().resumes == 0) {
      auto answer = (*session)->SendFrame(FrameNumber(++f));
      Check(answer.ok(),
            absl::StrCat("frame after SIGTERM: ", answer.status().ToString()));
    }
    const auto answered = std::chrono::steady_clock::now();
    state.SetIterationTime(
        std::chrono::duration<double>(answered - sigterm).count());
    Check((*session)->resume_counters().handovers == 1, "not a hand-over");
    Check(first.Wait() == 0, "the drained replica did not exit 0");
    Check((*session)->Close().ok(), "close");
  }
}
BENCHMARK(BM_SessionHandover)
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->ComputeStatistics("p99", P99)
    ->ComputeStatistics("max", Max);

}  // namespace
}  // namespace posewire

BENCHMARK_MAIN();
