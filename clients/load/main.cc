// posewire-load: drives a posewire server with concurrent streams or unary
// callers, then runs the identical requests in process (server::Solve or
// server::Session::Handle, no gRPC) on as many threads as the server has
// solver threads, for the same duration, so the cost of the wire shows in
// one run on a noisy machine.
//
//   posewire-load --server=127.0.0.1:50051 --mode=stream --streams=8
//     --characters=100 --op_mix=fk_ik --rate=0 --duration=10 --json=out.json
//
// Latency is per message, from just before the send to the answer, on the
// steady clock. With --rate each sender keeps an absolute schedule; a sender
// that falls more than one period behind restarts its schedule (no burst).
// Senders are gRPC callback-API reactors, not threads: the client's own CPU
// use stays small and flat however many streams it drives.
// `posewire-load --help` lists the flags and the exit codes.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "clients/cpp/posewire_client.h"
#include "clients/load/capacity_search.h"
#include "clients/load/cpu_list.h"
#include "clients/load/echo_server.h"
#include "clients/load/local_senders.h"
#include "clients/load/network_senders.h"
#include "clients/load/phase.h"
#include "clients/load/workload.h"
#include "proto/program.h"
#include "solver_core/io/bvh_reader.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051",
          "Server address, HOST:PORT (plaintext, no token).");
ABSL_FLAG(std::string, mode, "stream",
          "stream (Session RPC) or unary (Solve).");
ABSL_FLAG(int, streams, 0, "Concurrent streams (stream mode).");
ABSL_FLAG(int, callers, 0, "Concurrent unary callers (unary mode).");
ABSL_FLAG(int, characters, 1, "Characters per message.");
ABSL_FLAG(std::string, op_mix, "fk_ik",
          "fk_ik, spring, blend3, fullbody or referee (each character's "
          "claimed pose checked for plausibility and validated; in stream "
          "mode each tick also sends a hit query, and its latency is the "
          "frame's send to the query's answer).");
ABSL_FLAG(int, rays, 32, "referee: rays of each tick's hit query.");
ABSL_FLAG(int, rewind_ms, 100,
          "referee: how far before the tick the hit query looks.");
ABSL_FLAG(bool, op_updates, true,
          "Stream frames send the clip time and IK targets as op updates "
          "(fk_ik, spring); false: the whole pipeline every frame.");
ABSL_FLAG(double, rate, 0,
          "Messages per second per stream/caller; 0: open loop.");
ABSL_FLAG(double, duration, 10, "Seconds of each phase.");
ABSL_FLAG(std::string, skeleton, "",
          "BVH file whose skeleton and first clip make the workload; empty: "
          "the CMU walk of the source tree (tests/data/cmu_131_01_walk.bvh).");
ABSL_FLAG(
    float, clip_seconds, 0.5f,
    "Seconds of the clip used (0: whole clip); unary sends it every call.");
ABSL_FLAG(int, channels, 1,
          "Separate connections the senders are spread over.");
ABSL_FLAG(bool, resume, false,
          "Stream mode: a stream whose server drains or goes away goes on in "
          "a new call, on whatever replica the channel reaches next (behind "
          "a balancer): resumed from the hand-over or the newest snapshot, "
          "replaying the frames answered since and resending the message in "
          "flight. Off: a hand-over ends the stream, a lost server is an "
          "error.");
ABSL_FLAG(int, resume_snapshot_every, 30,
          "With --resume: frames between the snapshots a stream asks for.");
ABSL_FLAG(bool, baseline, true,
          "Also run the identical work in process, and in stream mode the "
          "echo (--echo); false runs the service alone (a drain or soak "
          "test, load through a balancer).");
ABSL_FLAG(int, baseline_threads, 0,
          "Threads of the in-process baseline; 0: the server's solver "
          "threads (GetInfo), so both sides solve on the same threads.");
ABSL_FLAG(std::string, json, "", "Also write the report as JSON to this file.");
ABSL_FLAG(std::string, cpus, "",
          "CPUs the generator's network phase runs on, e.g. 1 or 2-3 (as "
          "taskset -c); empty: every CPU. On a machine shared with the "
          "server, keeps the generator off the server's cores. The "
          "in-process baseline always runs on every CPU.");
ABSL_FLAG(bool, echo, true,
          "Also run the echo baseline (stream mode): a minimal gRPC "
          "callback-API server, posewire-load itself in a child process, "
          "that answers each Session message with the service's own "
          "recorded answer, over as many connections and streams; the "
          "report adds the ratio service/echo. Off with --baseline=false.");
ABSL_FLAG(std::string, echo_cpus, "",
          "CPUs the echo's process runs on (as taskset -c); empty: every "
          "CPU, as bench/load's scripts run the server. Give it the "
          "server's CPUs when the server is confined.");
ABSL_FLAG(bool, echo_serve, false,
          "Run as the echo's child process (posewire-load starts it "
          "itself with this flag).");
ABSL_FLAG(double, warmup, 0.5,
          "Seconds at the start of each phase (and each capacity-search "
          "window) whose messages count for throughput and errors but not "
          "for latency: every stream opens and registers at once there. 0 "
          "counts every message; must be less than --duration and "
          "--search_window.");
ABSL_FLAG(bool, capacity_search, false,
          "Instead of one phase at --rate, search each target (service, "
          "echo, in-process) for the highest rate per sender it holds with "
          "p99 <= --p99_ms, starting at --rate (60 if 0), doubling until a "
          "window fails, then bisecting. The service's and the echo's "
          "windows take turns, so both see the same stretch of the "
          "machine.");
ABSL_FLAG(double, p99_ms, 1.0,
          "Capacity search: the p99 latency a rate must hold, in ms.");
ABSL_FLAG(double, search_window, 2.0,
          "Capacity search: seconds of each window (a CI smoke may use "
          "0.2).");
ABSL_FLAG(int, search_steps, 4,
          "Capacity search: bisection steps after the first failing rate.");
ABSL_FLAG(int, search_tries, 3,
          "Capacity search: windows per rate, at most (odd); a rate holds "
          "when most of them hold.");

namespace posewire::load {
namespace {

constexpr char kUsage[] =
    "drives a posewire server with concurrent streams or unary callers, "
    "then runs\n"
    "the identical requests in process for the same time (--baseline), so "
    "the cost\n"
    "of the wire shows in one run.\n"
    "\n"
    "Usage: posewire-load [--server=HOST:PORT] [--mode=stream|unary] "
    "[--flag=value ...]";

constexpr char kExitCodes[] =
    "Exit codes:\n"
    "  0  every message was answered without error\n"
    "  1  the run could not start (server unreachable, unreadable "
    "--skeleton, an\n"
    "     operation the server lacks); also an unknown flag or a malformed "
    "flag\n"
    "     value (reported by the flag parser)\n"
    "  2  a flag value is invalid (an address without a port, --mode, "
    "--cpus, ...)\n"
    "  3  the run completed with errors or unanswered messages (beyond the "
    "one\n"
    "     message per stream a draining server hands over unread, without "
    "--resume)";

// Confines the calling thread, and so every thread it starts, to --cpus;
// returns the set as the report names it ("all" without the flag).
absl::StatusOr<std::string> ApplyCpusFlag(const cpu_set_t& all_cpus) {
  const std::string flag = absl::GetFlag(FLAGS_cpus);
  if (flag.empty()) return "all";
  absl::StatusOr<cpu_set_t> cpus = ParseCpuList(flag, all_cpus);
  if (!cpus.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--cpus=", flag, ": ", cpus.status().message()));
  }
  if (absl::Status s = SetThreadAffinity(*cpus); !s.ok()) return s;
  return FormatCpuList(*cpus);
}

// The command line posewire-load was started with, for the echo's child.
std::vector<std::string>& OwnArguments() {
  static std::vector<std::string> arguments;
  return arguments;
}

void PrintError(const absl::Status& s) {
  std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
}

// The workload of --skeleton, --op_mix and the rest.
absl::StatusOr<Workload> LoadWorkload(const Config& c) {
  // The default is resolved here, not in the flag's definition, so --help
  // shows no path of the machine that built the binary.
  std::string skeleton = absl::GetFlag(FLAGS_skeleton);
  if (skeleton.empty())
    skeleton = POSEWIRE_LOAD_DATA_DIR "/cmu_131_01_walk.bvh";
  auto asset = ReadBvhFile(skeleton);
  if (!asset.ok()) {
    return absl::NotFoundError(
        absl::StrCat("--skeleton: ", asset.status().message()));
  }
  WorkloadOptions wo;
  wo.op_mix = absl::GetFlag(FLAGS_op_mix);
  wo.characters = c.characters;
  wo.op_updates = absl::GetFlag(FLAGS_op_updates);
  wo.clip_seconds = absl::GetFlag(FLAGS_clip_seconds);
  wo.rays_per_query = absl::GetFlag(FLAGS_rays);
  wo.rewind_seconds = absl::GetFlag(FLAGS_rewind_ms) / 1000.0;
  return BuildWorkload(*asset, wo);
}

// Separate connections (a local subchannel pool each) to `address`.
std::vector<ChannelStubs> Connect(const std::string& address, int channels) {
  std::vector<ChannelStubs> stubs;
  for (int i = 0; i < channels; ++i) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetMaxReceiveMessageSize(-1);
    args.SetMaxSendMessageSize(-1);
    args.SetInt("posewire.load.channel", i);
    std::shared_ptr<grpc::Channel> channel = grpc::CreateCustomChannel(
        address, grpc::InsecureChannelCredentials(), args);
    stubs.push_back({.typed = v1::PoseWire::NewStub(channel),
                     .generic = std::make_unique<grpc::GenericStub>(channel)});
  }
  return stubs;
}

// The echo's child process (--echo_serve): records the service's answers,
// then serves them until the parent closes its stdin.
int EchoServeMain(const Config& c) {
  absl::StatusOr<Workload> w = LoadWorkload(c);
  if (!w.ok()) {
    PrintError(w.status());
    return 1;
  }
  std::vector<ChannelStubs> stubs = Connect(absl::GetFlag(FLAGS_server), 1);
  absl::StatusOr<EchoReplies> replies = RecordReplies(*stubs[0].typed, *w);
  if (!replies.ok()) {
    PrintError(replies.status());
    return 1;
  }
  return ServeEcho(*replies);
}

// The echo's CPUs as a list for --cpus: --echo_cpus, else every CPU
// (where bench/load's scripts run the server).
absl::StatusOr<std::string> EchoCpus(const cpu_set_t& all) {
  const std::string flag = absl::GetFlag(FLAGS_echo_cpus);
  if (!flag.empty()) {
    absl::StatusOr<cpu_set_t> cpus = ParseCpuList(flag, all);
    if (!cpus.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--echo_cpus=", flag, ": ", cpus.status().message()));
    }
    return FormatCpuList(*cpus);
  }
  return FormatCpuList(all);
}

// One way of answering the phase's senders: the service, the echo or the
// in-process baseline.
struct Target {
  std::string name;
  std::function<void(const Phase&, std::vector<SenderResult>&)> run;
};

// What a target measured: the phase at --rate, or its capacity.
struct TargetResult {
  PhaseResult phase;
  Capacity capacity;
};

// One window of a capacity search: a short phase at `rate` per sender.
std::function<PhaseResult(double rate)> SearchWindow(const Target& target,
                                                     const Workload& w,
                                                     const Config& c) {
  return [&target, &w, c](double rate) {
    Config window = c;
    window.rate = rate;
    window.duration = absl::GetFlag(FLAGS_search_window);
    return RunPhase(target.name, w, window, target.run);
  };
}

TargetResult Measure(const Target& target, const Workload& w, const Config& c,
                     const SearchOptions* search) {
  TargetResult result;
  if (search == nullptr) {
    result.phase = RunPhase(target.name, w, c, target.run);
    Print(result.phase);
    return result;
  }
  result.capacity =
      SearchCapacity(target.name, *search, SearchWindow(target, w, c));
  PrintCapacity(result.capacity);
  return result;
}

// The service's and the echo's capacity searches, their windows taking
// turns (SearchCapacitiesInTurn).
std::pair<TargetResult, TargetResult> MeasureInTurn(const Target& service,
                                                    const Target& echo,
                                                    const Workload& w,
                                                    const Config& c,
                                                    const SearchOptions& how) {
  const std::vector<Capacity> found = SearchCapacitiesInTurn(
      {{.name = service.name, .window = SearchWindow(service, w, c)},
       {.name = echo.name, .window = SearchWindow(echo, w, c)}},
      how);
  std::pair<TargetResult, TargetResult> results;
  results.first.capacity = found[0];
  results.second.capacity = found[1];
  PrintCapacity(found[0]);
  PrintCapacity(found[1]);
  return results;
}

// What the report compares: character-frames/s at --rate, or capacities.
double Figure(const TargetResult& r, bool search) {
  return search ? r.capacity.character_frames_per_second
                : r.phase.CharacterFramesPerSecond();
}

double Ratio(double numerator, double denominator) {
  return numerator / std::max(1e-9, denominator);
}

// "ratio service/echo: ..." for the report; the p99 ratio at --rate.
void PrintRatio(const std::string& name, const TargetResult& service,
                const TargetResult& other, bool search) {
  if (search) {
    std::printf("ratio service/%s: %.3f (capacity at p99 <= %.3g ms)\n",
                name.c_str(), Ratio(Figure(service, true), Figure(other, true)),
                absl::GetFlag(FLAGS_p99_ms));
    return;
  }
  std::printf("ratio service/%s: %.3f (character-frames/s), p99 %.2fx\n",
              name.c_str(), Ratio(Figure(service, false), Figure(other, false)),
              Ratio(service.phase.Percentile(99), other.phase.Percentile(99)));
}

std::string TargetJson(const TargetResult& r, bool search) {
  return search ? CapacityJson(r.capacity) : Json(r.phase);
}

int Main() {
  Config c;
  const std::string mode = absl::GetFlag(FLAGS_mode);
  if (mode != "stream" && mode != "unary") {
    std::fprintf(stderr, "--mode must be stream or unary, not '%s'\n",
                 mode.c_str());
    return 2;
  }
  if (absl::Status s = CheckHostPort("server", absl::GetFlag(FLAGS_server),
                                     PortZero::kRefused);
      !s.ok()) {
    PrintError(s);
    return 2;
  }
  c.stream = mode == "stream";
  c.resume = absl::GetFlag(FLAGS_resume);
  c.resume_snapshot_every = absl::GetFlag(FLAGS_resume_snapshot_every);
  if (c.resume && c.resume_snapshot_every <= 0) {
    PrintError(absl::InvalidArgumentError(
        "--resume_snapshot_every must be > 0 with --resume"));
    return 2;
  }
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
  c.warmup = absl::GetFlag(FLAGS_warmup);
  const bool search = absl::GetFlag(FLAGS_capacity_search);
  const int tries = absl::GetFlag(FLAGS_search_tries);
  if (search &&
      (absl::GetFlag(FLAGS_p99_ms) <= 0 ||
       absl::GetFlag(FLAGS_search_window) <= 0 ||
       absl::GetFlag(FLAGS_search_steps) < 0 || tries < 1 || tries % 2 == 0)) {
    std::fprintf(stderr,
                 "--p99_ms and --search_window must be > 0, --search_steps "
                 ">= 0, --search_tries odd and >= 1\n");
    return 2;
  }
  const double shortest_phase =
      search ? std::min(c.duration, absl::GetFlag(FLAGS_search_window))
             : c.duration;
  if (!(c.warmup >= 0) || c.warmup >= shortest_phase) {
    std::fprintf(stderr,
                 "--warmup must be >= 0 and less than --duration%s (it is "
                 "%g s): a phase needs messages whose latency counts\n",
                 search ? " and --search_window" : "", c.warmup);
    return 2;
  }

  // Confined before the first gRPC call, so gRPC's threads inherit it.
  absl::StatusOr<cpu_set_t> all_cpus = ThreadAffinity();
  absl::StatusOr<std::string> generator_cpus =
      all_cpus.ok() ? ApplyCpusFlag(*all_cpus) : all_cpus.status();
  if (!generator_cpus.ok()) {
    PrintError(generator_cpus.status());
    return absl::IsInvalidArgument(generator_cpus.status()) ? 2 : 1;
  }
  if (absl::GetFlag(FLAGS_echo_serve)) return EchoServeMain(c);
  absl::StatusOr<cpu_set_t> generator_set = ThreadAffinity();
  // A run without baselines (--baseline=false) has no echo either.
  const bool echo =
      absl::GetFlag(FLAGS_echo) && absl::GetFlag(FLAGS_baseline) && c.stream;
  absl::StatusOr<std::string> echo_cpus =
      generator_set.ok() ? EchoCpus(*all_cpus) : generator_set.status();
  if (echo && !echo_cpus.ok()) {
    PrintError(echo_cpus.status());
    return absl::IsInvalidArgument(echo_cpus.status()) ? 2 : 1;
  }

  const std::string address = absl::GetFlag(FLAGS_server);
  client::ClientOptions client_options;
  auto info = client::Client::Connect(address, client_options)->GetInfo();
  if (!info.ok()) {
    std::fprintf(stderr, "GetInfo on %s failed: %s\n", address.c_str(),
                 std::string(info.status().message()).c_str());
    return 1;
  }

  auto workload = LoadWorkload(c);
  if (!workload.ok()) {
    PrintError(workload.status());
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
      "posewire-load: %s, %s mode, %d %s, %d characters/message, op_mix %s "
      "(frames send %s), rate %s, %.1f s; server %s (version %s, %u solver "
      "threads), "
      "%d joints; generator on CPUs %s; latency from %g s into each phase "
      "(--warmup)\n",
      address.c_str(), mode.c_str(), c.senders,
      c.stream ? "streams" : "callers", c.characters, op_mix.c_str(),
      FrameForm(w),
      c.rate > 0 ? absl::StrCat(c.rate, " Hz").c_str() : "open loop",
      c.duration, address.c_str(), info->version().c_str(),
      info->solver_threads(), w.joints, generator_cpus->c_str(), c.warmup);

  SearchOptions search_options{
      .start_rate = c.rate > 0 ? c.rate : 60,
      .p99_us = absl::GetFlag(FLAGS_p99_ms) * 1000,
      .refine_steps = absl::GetFlag(FLAGS_search_steps),
      .max_doublings = 8,
      .tries_per_rate = tries,
      .senders = c.senders};
  const SearchOptions* how = search ? &search_options : nullptr;
  if (search) {
    std::printf(
        "capacity search: p99 <= %.3g ms, windows of %.2f s (a rate holds "
        "in most of %d) from %.1f Hz/sender\n",
        absl::GetFlag(FLAGS_p99_ms), absl::GetFlag(FLAGS_search_window), tries,
        search_options.start_rate);
  }

  std::vector<ChannelStubs> stubs = Connect(address, c.channels);
  const Target service_target{
      .name = "service",
      .run = [&](const Phase& phase, std::vector<SenderResult>& results) {
        RunNetwork(phase, stubs, results);
      }};
  TargetResult network;
  // The service phase at --rate runs before the echo starts; a capacity
  // search starts the echo first and takes turns with it.
  if (!echo || !search) network = Measure(service_target, w, c, how);

  TargetResult echoed;
  std::unique_ptr<EchoProcess> echo_process;
  std::vector<ChannelStubs> echo_stubs;
  if (echo) {
    // The child records the service's answers (the server must be up),
    // then confines itself to the echo's CPUs: it starts from every CPU
    // (affinity is inherited), and the generator's set comes back after.
    std::vector<std::string> argv = OwnArguments();
    argv.push_back(absl::StrCat("--cpus=", *echo_cpus));
    argv.push_back("--echo_serve");
    argv.push_back("--capacity_search=false");
    if (absl::Status s = SetThreadAffinity(*all_cpus); !s.ok()) {
      PrintError(s);
      return 1;
    }
    absl::StatusOr<std::unique_ptr<EchoProcess>> launched =
        EchoProcess::Launch(argv);
    if (absl::Status s = SetThreadAffinity(*generator_set); !s.ok()) {
      PrintError(s);
      return 1;
    }
    if (!launched.ok()) {
      PrintError(launched.status());
      return 1;
    }
    echo_process = *std::move(launched);
    const std::string echo_address =
        absl::StrCat("127.0.0.1:", echo_process->port());
    std::printf("echo baseline: gRPC callback echo on %s, CPUs %s\n",
                echo_address.c_str(), echo_cpus->c_str());
    echo_stubs = Connect(echo_address, c.channels);
    const Target echo_target{
        .name = "echo",
        .run = [&](const Phase& phase, std::vector<SenderResult>& results) {
          RunNetwork(phase, echo_stubs, results);
        }};
    if (search) {
      std::tie(network, echoed) =
          MeasureInTurn(service_target, echo_target, w, c, *how);
    } else {
      echoed = Measure(echo_target, w, c, how);
    }
  }
  // A stream a draining server handed over leaves the message it sent
  // after its last answer unread, unless --resume sent it again.
  const int64_t unread_allowed = c.resume ? 0 : network.phase.handovers;
  const bool ok =
      search ||
      (network.phase.TotalErrors() == 0 &&
       network.phase.sent >= network.phase.answered &&
       network.phase.sent - network.phase.answered <= unread_allowed &&
       (!echo || (echoed.phase.TotalErrors() == 0 &&
                  echoed.phase.sent == echoed.phase.answered)));

  TargetResult local;
  const bool baseline = absl::GetFlag(FLAGS_baseline);
  // Behind a load balancer GetInfo reports one replica's threads: set
  // --baseline_threads to the sum.
  const int baseline_threads = absl::GetFlag(FLAGS_baseline_threads) > 0
                                   ? absl::GetFlag(FLAGS_baseline_threads)
                                   : std::max(1u, info->solver_threads());
  if (baseline) {
    // The baseline's threads start from here: every CPU, whatever --cpus.
    if (absl::Status s = SetThreadAffinity(*all_cpus); !s.ok()) {
      PrintError(s);
      return 1;
    }
    std::printf("in-process baseline on %d threads\n",
                std::min(baseline_threads, c.senders));
    local = Measure(
        {.name = "in-process",
         .run =
             [&](const Phase& phase, std::vector<SenderResult>& results) {
               RunInProcess(phase, baseline_threads, results);
             }},
        w, c, how);
  }
  if (echo) PrintRatio("echo", network, echoed, search);
  if (baseline) PrintRatio("in-process", network, local, search);

  const std::string json_path = absl::GetFlag(FLAGS_json);
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << absl::StrFormat(
        "{\"server\": \"%s\", \"mode\": \"%s\", \"senders\": %d, "
        "\"characters\": %d, \"op_mix\": \"%s\", \"frames_send\": \"%s\", "
        "\"rate\": %.3f, \"duration\": %.3f, \"joints\": %d, "
        "\"generator_cpus\": \"%s\", \"warmup\": %.3f, \"capacity_search\": "
        "%s, \"service\": %s",
        address, mode, c.senders, c.characters, op_mix, FrameForm(w), c.rate,
        c.duration, w.joints, *generator_cpus, c.warmup,
        search ? "true" : "false", TargetJson(network, search));
    if (search) {
      out << absl::StrFormat(
          ", \"p99_ms\": %.3f, \"search_window\": %.3f, \"search_tries\": %d",
          absl::GetFlag(FLAGS_p99_ms), absl::GetFlag(FLAGS_search_window),
          tries);
    }
    if (echo) {
      out << ", \"echo\": " << TargetJson(echoed, search)
          << absl::StrFormat(
                 ", \"echo_cpus\": \"%s\", \"ratio_echo\": %.4f", *echo_cpus,
                 Ratio(Figure(network, search), Figure(echoed, search)));
    }
    if (baseline) {
      out << ", \"in_process\": " << TargetJson(local, search)
          << absl::StrFormat(
                 ", \"baseline_threads\": %d, \"ratio\": %.4f",
                 std::min(baseline_threads, c.senders),
                 Ratio(Figure(network, search), Figure(local, search)));
    }
    out << "}\n";
    if (!out) {
      std::fprintf(stderr, "--json: cannot write %s\n", json_path.c_str());
      return 1;
    }
  }
  return ok ? 0 : 3;
}

}  // namespace
}  // namespace posewire::load

int main(int argc, char** argv) {
  posewire::load::OwnArguments().assign(argv, argv + argc);
  const std::vector<char*> args =
      posewire::ParseProgramFlags(argc, argv,
                                  {.name = "posewire-load",
                                   .usage = posewire::load::kUsage,
                                   .flags_folder = "clients/load/",
                                   .exit_codes = posewire::load::kExitCodes});
  if (args.size() > 1) {
    std::fprintf(stderr,
                 "posewire-load: unexpected argument '%s': flags are "
                 "--name=value (posewire-load --help)\n",
                 args[1]);
    return 2;
  }
  // As in posewire-server (server/main.cc): no debug deadlock detection on
  // gRPC's locks, so the generator spends the shared cores on the load.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return posewire::load::Main();
}
