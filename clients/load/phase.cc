#include "clients/load/phase.h"

#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace posewire::load {

// The first non-OK code of a frame result (0 if all OK); counts OK
// characters into `ok_characters`. An OK character without a pose is
// INTERNAL, as in AnswerReceipt.
int FrameCode(const v1::SessionResponse& response, int64_t* ok_characters) {
  if (!response.has_frame()) return grpc::StatusCode::INTERNAL;
  const v1::FrameResult& frame = response.frame();
  if (frame.status().code() != 0) return frame.status().code();
  int code = 0;
  for (const v1::CharacterResult& c : frame.characters()) {
    int character_code = c.status().code();
    if (character_code == 0 && !c.has_pose()) {
      character_code = grpc::StatusCode::INTERNAL;
    }
    if (character_code == 0) {
      ++*ok_characters;
    } else if (code == 0) {
      code = character_code;
    }
  }
  return code;
}

// The same for an answer the stream senders read as an AnswerReceipt.
int FrameCode(const AnswerReceipt& receipt, int64_t* ok_characters) {
  if (receipt.kind != AnswerReceipt::Kind::kFrame) {
    return grpc::StatusCode::INTERNAL;
  }
  if (receipt.code != 0) return receipt.code;
  *ok_characters += receipt.ok_characters;
  return receipt.character_code;
}

// How the workload's session frames carry their per-frame inputs.
const char* FrameForm(const Workload& w) {
  return w.frames_send_op_updates ? "op_updates" : "ops";
}

int RegisteredCode(const AnswerReceipt& receipt) {
  return receipt.kind == AnswerReceipt::Kind::kRegistered
             ? receipt.code
             : grpc::StatusCode::INTERNAL;
}

int RegisteredCode(const v1::SessionResponse& response) {
  return response.has_registered() ? response.registered().status().code()
                                   : grpc::StatusCode::INTERNAL;
}

int QueryCode(const AnswerReceipt& receipt) {
  return receipt.kind == AnswerReceipt::Kind::kQuery
             ? receipt.code
             : grpc::StatusCode::INTERNAL;
}

int QueryCode(const v1::SessionResponse& response) {
  return response.has_query() ? response.query().status().code()
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

void Record(SenderResult& r, Live& live, Clock::time_point start,
            Clock::time_point answered, int code, int64_t ok_characters) {
  if (start >= live.measure_from) {
    r.latency_ns.push_back(
        std::chrono::duration_cast<std::chrono::nanoseconds>(answered - start)
            .count());
  }
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

void CountError(SenderResult& r, Live& live, int code) {
  ++r.errors[code];
  live.errors.fetch_add(1, std::memory_order_relaxed);
}

// Runs `body` (which drives every sender until the phase ends) with a
// progress line each second, and merges the senders' results.
PhaseResult RunPhase(
    const std::string& name, const Workload& w, const Config& c,
    const std::function<void(const Phase&, std::vector<SenderResult>&)>& body) {
  Live live;
  std::vector<SenderResult> results(c.senders);
  const Clock::time_point start = Clock::now();
  live.measure_from = start + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(c.warmup));
  const Phase phase{w, c,
                    start + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(c.duration)),
                    live};
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
  body(phase, results);
  const Clock::time_point stop = Clock::now();
  done = true;
  progress.join();

  PhaseResult p;
  p.name = name;
  // Senders stop at `end`; a call in flight then finishes a little later.
  p.seconds =
      std::chrono::duration<double>(std::max(stop, phase.end) - start).count();
  for (SenderResult& r : results) {
    p.sent += r.sent;
    p.answered += r.answered;
    p.character_frames += r.character_frames;
    p.handovers += r.handovers;
    p.handover_snapshots_lost += r.handover_snapshots_lost;
    p.resumes += r.resumes;
    p.replayed += r.replayed;
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
  if (p.handovers > 0) {
    std::printf(
        "%-10s streams handed over by a draining server: %lld (snapshot "
        "not read: %lld)\n",
        "", static_cast<long long>(p.handovers),
        static_cast<long long>(p.handover_snapshots_lost));
  }
  if (p.resumes > 0) {
    std::printf(
        "%-10s streams resumed in a new call: %lld (answered frames "
        "replayed: %lld)\n",
        "", static_cast<long long>(p.resumes),
        static_cast<long long>(p.replayed));
  }
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
      "\"errors\": {%s}, \"error_count\": %d, \"handovers\": %d, "
      "\"handover_snapshots_lost\": %d, \"resumes\": %d, \"replayed\": %d, "
      "\"latency_cdf_us\": [%s]}",
      p.seconds, p.sent, p.answered, p.character_frames,
      p.CharacterFramesPerSecond(), p.MessagesPerSecond(), p.Percentile(50),
      p.Percentile(90), p.Percentile(99), p.Percentile(99.9),
      p.latency_ns.empty() ? 0.0 : p.latency_ns.back() / 1000.0,
      absl::StrJoin(errors, ", "), p.TotalErrors(), p.handovers,
      p.handover_snapshots_lost, p.resumes, p.replayed,
      absl::StrJoin(cdf, ", "));
}

}  // namespace posewire::load
