// posewire-load: drives a posewire server with concurrent streams or unary
// callers, then runs the identical requests in process (server::Solve or
// server::Session::Handle, no gRPC) with the same thread count and duration,
// so the cost of the wire shows in one run on a noisy machine.
//
//   posewire-load --server=127.0.0.1:50051 --mode=stream --streams=8
//     --characters=100 --op_mix=fk_ik --rate=0 --duration=10 --json=out.json
//
// Latency is per message, from just before the send to the answer, on the
// steady clock. With --rate each sender keeps an absolute schedule; a sender
// that falls more than one period behind restarts its schedule (no burst).
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "clients/cpp/posewire_client.h"
#include "clients/load/workload.h"
#include "posewire/v1/posewire.grpc.pb.h"
#include "server/server_config.h"
#include "server/session.h"
#include "server/skeleton_cache.h"
#include "server/solve.h"
#include "solver_core/io/bvh_reader.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "Server address host:port.");
ABSL_FLAG(std::string, mode, "stream",
          "stream (Session RPC) or unary (Solve).");
ABSL_FLAG(int, streams, 0, "Concurrent streams (stream mode).");
ABSL_FLAG(int, callers, 0, "Concurrent unary callers (unary mode).");
ABSL_FLAG(int, characters, 1, "Characters per message.");
ABSL_FLAG(std::string, op_mix, "fk_ik", "fk_ik, spring, blend3 or fullbody.");
ABSL_FLAG(double, rate, 0,
          "Messages per second per stream/caller; 0: open loop.");
ABSL_FLAG(double, duration, 10, "Seconds of each phase.");
ABSL_FLAG(std::string, skeleton, POSEWIRE_LOAD_DATA_DIR "/cmu_131_01_walk.bvh",
          "BVH file whose skeleton and first clip make the workload.");
ABSL_FLAG(
    float, clip_seconds, 0.5f,
    "Seconds of the clip used (0: whole clip); unary sends it every call.");
ABSL_FLAG(int, channels, 1,
          "Separate connections the senders are spread over.");
ABSL_FLAG(bool, baseline, true, "Also run the identical work in process.");
ABSL_FLAG(std::string, json, "", "Also write the report as JSON to this file.");

namespace posewire::load {
namespace {

using Clock = std::chrono::steady_clock;

struct Config {
  bool stream = true;
  int senders = 1;
  int characters = 1;
  double rate = 0;
  double duration = 10;
  int channels = 1;
};

// Live counters for the progress line.
struct Live {
  std::atomic<int64_t> sent{0};
  std::atomic<int64_t> answered{0};
  std::atomic<int64_t> errors{0};
};

struct SenderResult {
  std::vector<int64_t> latency_ns;
  int64_t sent = 0;
  int64_t answered = 0;
  int64_t character_frames = 0;
  std::map<int, int64_t> errors;  // by status code
};

struct PhaseResult {
  std::string name;
  double seconds = 0;
  int64_t sent = 0;
  int64_t answered = 0;
  int64_t character_frames = 0;
  std::map<int, int64_t> errors;
  std::vector<int64_t> latency_ns;  // sorted

  double Percentile(double p) const {
    if (latency_ns.empty()) return 0;
    size_t i = static_cast<size_t>(
        p / 100.0 * static_cast<double>(latency_ns.size() - 1) + 0.5);
    return static_cast<double>(latency_ns[std::min(i, latency_ns.size() - 1)]) /
           1000.0;
  }
  double MessagesPerSecond() const { return answered / seconds; }
  double CharacterFramesPerSecond() const { return character_frames / seconds; }
  int64_t TotalErrors() const {
    int64_t n = 0;
    for (const auto& [code, count] : errors) n += count;
    return n;
  }
};

// Paces one sender: open loop, or an absolute schedule at `rate` Hz with a
// per-sender phase so senders do not fire together.
class Pacer {
 public:
  Pacer(double rate, int index, int senders) : rate_(rate) {
    if (rate_ > 0) {
      period_ = std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(1.0 / rate_));
      next_ = Clock::now() + period_ * index / std::max(1, senders);
    }
  }
  void Wait() {
    if (rate_ <= 0) return;
    std::this_thread::sleep_until(next_);
    next_ += period_;
    const Clock::time_point now = Clock::now();
    if (next_ + period_ < now) next_ = now;
  }

 private:
  double rate_;
  Clock::duration period_{};
  Clock::time_point next_{};
};

// The first non-OK code of a frame result (0 if all OK); counts OK
// characters into `ok_characters`.
int FrameCode(const v1::SessionResponse& response, int64_t* ok_characters) {
  if (!response.has_frame()) return grpc::StatusCode::INTERNAL;
  const v1::FrameResult& frame = response.frame();
  if (frame.status().code() != 0) return frame.status().code();
  int code = 0;
  for (const v1::CharacterResult& c : frame.characters()) {
    if (c.status().code() == 0) {
      ++*ok_characters;
    } else if (code == 0) {
      code = c.status().code();
    }
  }
  return code;
}

int RegisteredCode(const v1::SessionResponse& response) {
  return response.has_registered() ? response.registered().status().code()
                                   : grpc::StatusCode::INTERNAL;
}

// Moves each character's state from `response` into `next` (spring state in
// unary calls travels through the client).
void CarryState(v1::SolveResponse& response, v1::SolveRequest& next) {
  const int n = std::min(response.characters_size(), next.characters_size());
  for (int i = 0; i < n; ++i) {
    next.mutable_characters(i)->mutable_state()->swap(
        *response.mutable_characters(i)->mutable_state());
  }
}

void Record(SenderResult& r, Live& live, Clock::time_point start, int code,
            int64_t ok_characters) {
  r.latency_ns.push_back(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start)
          .count());
  ++r.answered;
  live.answered.fetch_add(1, std::memory_order_relaxed);
  r.character_frames += ok_characters;
  if (code != 0) {
    ++r.errors[code];
    live.errors.fetch_add(1, std::memory_order_relaxed);
  }
}

void Sent(SenderResult& r, Live& live) {
  ++r.sent;
  live.sent.fetch_add(1, std::memory_order_relaxed);
}

// --------------------------------------------------------------- senders --

void NetworkStream(v1::PoseWire::Stub& stub, const Workload& w, const Config& c,
                   int index, Clock::time_point end, Live& live,
                   SenderResult& r) {
  grpc::ClientContext context;
  auto stream = stub.Session(&context);
  v1::SessionResponse response;
  for (const v1::SessionRequest& reg : w.registrations) {
    if (!stream->Write(reg) || !stream->Read(&response)) break;
    if (RegisteredCode(response) != 0) {
      ++r.errors[RegisteredCode(response)];
      live.errors.fetch_add(1);
      stream->WritesDone();
      (void)stream->Finish();
      return;
    }
  }
  std::vector<v1::SessionRequest> frames = w.frames;
  Pacer pacer(c.rate, index, c.senders);
  uint64_t sequence = 0;
  bool broken = false;
  while (Clock::now() < end) {
    pacer.Wait();
    if (Clock::now() >= end) break;
    v1::SessionRequest& request = frames[sequence % frames.size()];
    request.mutable_frame()->set_sequence(++sequence);
    const Clock::time_point start = Clock::now();
    Sent(r, live);
    if (!stream->Write(request) || !stream->Read(&response)) {
      broken = true;
      break;
    }
    int64_t ok = 0;
    const int code = FrameCode(response, &ok);
    Record(r, live, start, code, ok);
  }
  stream->WritesDone();
  grpc::Status status = stream->Finish();
  if (broken) {
    const int code = status.ok() ? grpc::StatusCode::UNKNOWN
                                 : static_cast<int>(status.error_code());
    ++r.errors[code];
    live.errors.fetch_add(1);
  }
}

void NetworkUnary(v1::PoseWire::Stub& stub, const Workload& w, const Config& c,
                  int index, Clock::time_point end, Live& live,
                  SenderResult& r) {
  std::vector<v1::SolveRequest> by_hash = w.solve_by_hash;
  std::vector<v1::SolveRequest> inline_requests = w.solve_inline;
  bool known = false;  // the server has the skeleton (by hash)
  Pacer pacer(c.rate, index, c.senders);
  v1::SolveResponse response;
  for (uint64_t n = 0; Clock::now() < end; ++n) {
    pacer.Wait();
    if (Clock::now() >= end) break;
    const size_t v = n % by_hash.size();
    const Clock::time_point start = Clock::now();
    Sent(r, live);
    grpc::Status status;
    for (int attempt = 0; attempt < 2; ++attempt) {
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() +
                           std::chrono::seconds(10));
      response.Clear();
      status = stub.Solve(&context, known ? by_hash[v] : inline_requests[v],
                          &response);
      // NOT_FOUND by hash: the server evicted the skeleton; resend inline.
      if (known && status.error_code() == grpc::StatusCode::NOT_FOUND) {
        known = false;
        continue;
      }
      break;
    }
    if (status.ok()) known = true;
    Record(r, live, start, status.ok() ? 0 : status.error_code(),
           status.ok() ? response.characters_size() : 0);
    const size_t next = (n + 1) % by_hash.size();
    CarryState(response, known ? by_hash[next] : inline_requests[next]);
  }
}

void InProcessStream(const server::ServerConfig& config, const Workload& w,
                     const Config& c, int index, Clock::time_point end,
                     Live& live, SenderResult& r) {
  server::Session session(config);
  v1::SessionResponse response;
  for (const v1::SessionRequest& reg : w.registrations) {
    response.Clear();
    session.Handle(reg, &response);
    if (RegisteredCode(response) != 0) {
      ++r.errors[RegisteredCode(response)];
      return;
    }
  }
  std::vector<v1::SessionRequest> frames = w.frames;
  Pacer pacer(c.rate, index, c.senders);
  uint64_t sequence = 0;
  while (Clock::now() < end) {
    pacer.Wait();
    if (Clock::now() >= end) break;
    v1::SessionRequest& request = frames[sequence % frames.size()];
    request.mutable_frame()->set_sequence(++sequence);
    const Clock::time_point start = Clock::now();
    Sent(r, live);
    response.Clear();
    session.Handle(request, &response);
    int64_t ok = 0;
    const int code = FrameCode(response, &ok);
    Record(r, live, start, code, ok);
  }
}

void InProcessUnary(const server::ServerConfig& config,
                    server::SkeletonCache& cache, const Workload& w,
                    const Config& c, int index, Clock::time_point end,
                    Live& live, SenderResult& r) {
  std::vector<v1::SolveRequest> by_hash = w.solve_by_hash;
  std::vector<v1::SolveRequest> inline_requests = w.solve_inline;
  bool known = false;
  const server::StopCheck never_stop = [] { return absl::OkStatus(); };
  Pacer pacer(c.rate, index, c.senders);
  v1::SolveResponse response;
  for (uint64_t n = 0; Clock::now() < end; ++n) {
    pacer.Wait();
    if (Clock::now() >= end) break;
    const size_t v = n % by_hash.size();
    const Clock::time_point start = Clock::now();
    Sent(r, live);
    absl::Status status;
    for (int attempt = 0; attempt < 2; ++attempt) {
      response.Clear();
      status = server::Solve(known ? by_hash[v] : inline_requests[v], config,
                             cache, never_stop, &response);
      if (known && absl::IsNotFound(status)) {
        known = false;
        continue;
      }
      break;
    }
    if (status.ok()) known = true;
    Record(r, live, start, static_cast<int>(status.code()),
           status.ok() ? response.characters_size() : 0);
    const size_t next = (n + 1) % by_hash.size();
    CarryState(response, known ? by_hash[next] : inline_requests[next]);
  }
}

// Runs `senders` threads of `body` for the configured duration with a
// progress line each second, and merges their results.
template <typename Body>
PhaseResult RunPhase(const std::string& name, const Config& c, Body body) {
  Live live;
  std::vector<SenderResult> results(c.senders);
  const Clock::time_point start = Clock::now();
  const Clock::time_point end =
      start + std::chrono::duration_cast<Clock::duration>(
                  std::chrono::duration<double>(c.duration));
  std::vector<std::thread> threads;
  threads.reserve(c.senders);
  for (int i = 0; i < c.senders; ++i) {
    threads.emplace_back([&, i] { body(i, end, live, results[i]); });
  }
  std::atomic<bool> done{false};
  std::thread progress([&] {
    int64_t last = 0;
    for (int second = 1; !done.load(); ++second) {
      const Clock::time_point tick = start + std::chrono::seconds(second);
      while (Clock::now() < tick && !done.load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      if (done.load()) break;
      const int64_t answered = live.answered.load();
      std::printf(
          "[%s %3ds] sent %lld answered %lld (%lld msg/s) errors %lld\n",
          name.c_str(), second, static_cast<long long>(live.sent.load()),
          static_cast<long long>(answered),
          static_cast<long long>(answered - last),
          static_cast<long long>(live.errors.load()));
      std::fflush(stdout);
      last = answered;
    }
  });
  for (std::thread& t : threads) t.join();
  const Clock::time_point stop = Clock::now();
  done = true;
  progress.join();

  PhaseResult p;
  p.name = name;
  // Senders stop at `end`; a call in flight then finishes a little later.
  p.seconds =
      std::chrono::duration<double>(std::max(stop, end) - start).count();
  for (SenderResult& r : results) {
    p.sent += r.sent;
    p.answered += r.answered;
    p.character_frames += r.character_frames;
    for (const auto& [code, count] : r.errors) p.errors[code] += count;
    p.latency_ns.insert(p.latency_ns.end(), r.latency_ns.begin(),
                        r.latency_ns.end());
  }
  std::sort(p.latency_ns.begin(), p.latency_ns.end());
  return p;
}

void Print(const PhaseResult& p) {
  std::printf(
      "%-10s %.2f s: %.0f character-frames/s, %.0f messages/s, sent %lld, "
      "answered %lld\n"
      "%-10s latency us: p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f\n",
      p.name.c_str(), p.seconds, p.CharacterFramesPerSecond(),
      p.MessagesPerSecond(), static_cast<long long>(p.sent),
      static_cast<long long>(p.answered), "", p.Percentile(50),
      p.Percentile(90), p.Percentile(99), p.Percentile(99.9),
      p.latency_ns.empty() ? 0.0 : p.latency_ns.back() / 1000.0);
  std::vector<std::string> errors;
  for (const auto& [code, count] : p.errors) {
    errors.push_back(absl::StrCat("code ", code, ": ", count));
  }
  std::printf("%-10s errors: %s\n", "",
              errors.empty() ? "none" : absl::StrJoin(errors, ", ").c_str());
}

std::string Json(const PhaseResult& p) {
  std::vector<std::string> errors;
  for (const auto& [code, count] : p.errors) {
    errors.push_back(absl::StrCat("\"", code, "\": ", count));
  }
  // The latency distribution at 200 quantiles (plus the max) for plots.
  std::vector<std::string> cdf;
  if (!p.latency_ns.empty()) {
    for (int i = 0; i <= 200; ++i) {
      // Denser toward the tail: q = 1 - 10^(-4 i / 200).
      const double q = 1.0 - std::pow(10.0, -4.0 * i / 200.0);
      cdf.push_back(absl::StrFormat("[%.6f, %.1f]", q, p.Percentile(q * 100)));
    }
  }
  return absl::StrFormat(
      "{\"seconds\": %.3f, \"sent\": %d, \"answered\": %d, "
      "\"character_frames\": %d, \"character_frames_per_second\": %.1f, "
      "\"messages_per_second\": %.1f, \"latency_us\": {\"p50\": %.1f, "
      "\"p90\": %.1f, \"p99\": %.1f, \"p99_9\": %.1f, \"max\": %.1f}, "
      "\"errors\": {%s}, \"error_count\": %d, \"latency_cdf_us\": [%s]}",
      p.seconds, p.sent, p.answered, p.character_frames,
      p.CharacterFramesPerSecond(), p.MessagesPerSecond(), p.Percentile(50),
      p.Percentile(90), p.Percentile(99), p.Percentile(99.9),
      p.latency_ns.empty() ? 0.0 : p.latency_ns.back() / 1000.0,
      absl::StrJoin(errors, ", "), p.TotalErrors(), absl::StrJoin(cdf, ", "));
}

int Main() {
  Config c;
  const std::string mode = absl::GetFlag(FLAGS_mode);
  if (mode != "stream" && mode != "unary") {
    std::fprintf(stderr, "--mode must be stream or unary, not '%s'\n",
                 mode.c_str());
    return 2;
  }
  c.stream = mode == "stream";
  c.senders =
      std::max(absl::GetFlag(FLAGS_streams), absl::GetFlag(FLAGS_callers));
  if (c.senders <= 0) c.senders = 1;
  c.characters = absl::GetFlag(FLAGS_characters);
  c.rate = absl::GetFlag(FLAGS_rate);
  c.duration = absl::GetFlag(FLAGS_duration);
  c.channels = std::max(1, absl::GetFlag(FLAGS_channels));
  const std::string op_mix = absl::GetFlag(FLAGS_op_mix);
  if (c.duration <= 0 || c.rate < 0 || c.characters < 1) {
    std::fprintf(stderr,
                 "--duration must be > 0, --rate >= 0, --characters >= 1\n");
    return 2;
  }

  const std::string address = absl::GetFlag(FLAGS_server);
  client::ClientOptions client_options;
  auto info = client::Client::Connect(address, client_options)->GetInfo();
  if (!info.ok()) {
    std::fprintf(stderr, "GetInfo on %s failed: %s\n", address.c_str(),
                 std::string(info.status().message()).c_str());
    return 1;
  }

  auto asset = ReadBvhFile(absl::GetFlag(FLAGS_skeleton));
  if (!asset.ok()) {
    std::fprintf(stderr, "--skeleton: %s\n",
                 std::string(asset.status().message()).c_str());
    return 1;
  }
  WorkloadOptions wo;
  wo.op_mix = op_mix;
  wo.characters = c.characters;
  wo.clip_seconds = absl::GetFlag(FLAGS_clip_seconds);
  auto workload = BuildWorkload(*asset, wo);
  if (!workload.ok()) {
    std::fprintf(stderr, "%s\n",
                 std::string(workload.status().message()).c_str());
    return 1;
  }
  const Workload& w = *workload;
  for (const std::string& op : w.required_ops) {
    if (std::find(info->operations().begin(), info->operations().end(), op) ==
        info->operations().end()) {
      std::fprintf(stderr,
                   "--op_mix=%s needs operation '%s', which server %s does not "
                   "offer (it has: %s)\n",
                   op_mix.c_str(), op.c_str(), address.c_str(),
                   absl::StrJoin(info->operations(), ", ").c_str());
      return 1;
    }
  }
  std::printf(
      "posewire-load: %s, %s mode, %d %s, %d characters/message, op_mix %s, "
      "rate %s, %.1f s; server %s (version %s, %u solver threads), "
      "%d joints\n",
      address.c_str(), mode.c_str(), c.senders,
      c.stream ? "streams" : "callers", c.characters, op_mix.c_str(),
      c.rate > 0 ? absl::StrCat(c.rate, " Hz").c_str() : "open loop",
      c.duration, address.c_str(), info->version().c_str(),
      info->solver_threads(), w.joints);

  // Channels: separate connections (a local subchannel pool each).
  std::vector<std::unique_ptr<v1::PoseWire::Stub>> stubs;
  for (int i = 0; i < c.channels; ++i) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetMaxReceiveMessageSize(-1);
    args.SetMaxSendMessageSize(-1);
    args.SetInt("posewire.load.channel", i);
    stubs.push_back(v1::PoseWire::NewStub(grpc::CreateCustomChannel(
        address, grpc::InsecureChannelCredentials(), args)));
  }

  const PhaseResult network =
      RunPhase("service", c,
               [&](int i, Clock::time_point end, Live& live, SenderResult& r) {
                 v1::PoseWire::Stub& stub = *stubs[i % stubs.size()];
                 if (c.stream) {
                   NetworkStream(stub, w, c, i, end, live, r);
                 } else {
                   NetworkUnary(stub, w, c, i, end, live, r);
                 }
               });
  Print(network);

  PhaseResult local;
  const bool baseline = absl::GetFlag(FLAGS_baseline);
  if (baseline) {
    // The server's defaults: the same limits the service enforces.
    server::ServerConfig config;
    server::SkeletonCache cache(config.skeleton_cache_size);
    local = RunPhase(
        "in-process", c,
        [&](int i, Clock::time_point end, Live& live, SenderResult& r) {
          if (c.stream) {
            InProcessStream(config, w, c, i, end, live, r);
          } else {
            InProcessUnary(config, cache, w, c, i, end, live, r);
          }
        });
    Print(local);
    std::printf("ratio service/in-process: %.3f (character-frames/s)\n",
                network.CharacterFramesPerSecond() /
                    std::max(1e-9, local.CharacterFramesPerSecond()));
  }

  const std::string json_path = absl::GetFlag(FLAGS_json);
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << absl::StrFormat(
        "{\"server\": \"%s\", \"mode\": \"%s\", \"senders\": %d, "
        "\"characters\": %d, \"op_mix\": \"%s\", \"rate\": %.3f, "
        "\"duration\": %.3f, \"joints\": %d, \"service\": %s",
        address, mode, c.senders, c.characters, op_mix, c.rate, c.duration,
        w.joints, Json(network));
    if (baseline) {
      out << ", \"in_process\": " << Json(local)
          << absl::StrFormat(
                 ", \"ratio\": %.4f",
                 network.CharacterFramesPerSecond() /
                     std::max(1e-9, local.CharacterFramesPerSecond()));
    }
    out << "}\n";
    if (!out) {
      std::fprintf(stderr, "--json: cannot write %s\n", json_path.c_str());
      return 1;
    }
  }
  return network.TotalErrors() == 0 && network.sent == network.answered ? 0 : 3;
}

}  // namespace
}  // namespace posewire::load

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Load generator for a posewire server, with an in-process baseline.");
  absl::ParseCommandLine(argc, argv);
  return posewire::load::Main();
}
