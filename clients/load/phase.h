// posewire-load's phases: what a run is configured with, what each sender
// counts, how a phase is paced, run and reported. The senders themselves
// are in network_senders.h (over gRPC) and local_senders.h (in process).
#ifndef POSEWIRE_CLIENTS_LOAD_PHASE_H_
#define POSEWIRE_CLIENTS_LOAD_PHASE_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "clients/load/answer_receipt.h"
#include "clients/load/workload.h"
#include "posewire/v1/posewire.pb.h"

namespace posewire::load {

using Clock = std::chrono::steady_clock;

struct Config {
  bool stream = true;
  int senders = 1;
  int characters = 1;
  double rate = 0;
  double duration = 10;
  int channels = 1;
  // Streams go on when their server drains or goes away, resumed from a
  // hand-over or the newest snapshot, taken every resume_snapshot_every
  // frames.
  bool resume = false;
  int resume_snapshot_every = 30;
  // Seconds at the start of each phase (each capacity window) whose
  // messages count for throughput and errors but not for latency: every
  // stream opens and registers at once there, a burst a long-lived
  // deployment sees once, not every few seconds.
  double warmup = 0;
};

// Live counters for the progress line, and when latency starts to count.
struct Live {
  // Messages sent before this (the warm-up) have no latency recorded.
  Clock::time_point measure_from{};
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
  // Streams a draining server handed over (SessionSnapshot.handover); their
  // end is not an error, and the message in flight was not read.
  int64_t handovers = 0;
  // Of those, hand-overs whose snapshot message never reached the read
  // (the stream ended with the drain's status first).
  int64_t handover_snapshots_lost = 0;
  // Streams resumed in a new call (--resume): after a hand-over or a
  // server lost; and the answered frames they replayed to rebuild state.
  int64_t resumes = 0;
  int64_t replayed = 0;
};

struct PhaseResult {
  std::string name;
  double seconds = 0;
  int64_t sent = 0;
  int64_t answered = 0;
  int64_t character_frames = 0;
  std::map<int, int64_t> errors;
  int64_t handovers = 0;
  int64_t handover_snapshots_lost = 0;
  int64_t resumes = 0;
  int64_t replayed = 0;
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
// per-sender phase so senders do not fire together. Never blocks: Next()
// says when the next message is due and the caller waits for it.
class Pacer {
 public:
  Pacer(double rate, int index, int senders) : rate_(rate) {
    if (rate_ > 0) {
      period_ = std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(1.0 / rate_));
      next_ = Clock::now() + period_ * index / std::max(1, senders);
    }
  }

  // When the next message goes out, given that the sender is ready `now`
  // (its previous answer is in): never before `now`. A sender that falls
  // more than one period behind restarts its schedule rather than bursting.
  Clock::time_point Next(Clock::time_point now) {
    if (rate_ <= 0) return now;
    const Clock::time_point send = std::max(now, next_);
    next_ += period_;
    if (next_ + period_ < send) next_ = send;
    return send;
  }

 private:
  double rate_;
  Clock::duration period_{};
  Clock::time_point next_{};
};

// The first non-OK code of a frame result (0 if all OK); counts OK
// characters into `ok_characters`. An OK character without a pose is
// INTERNAL, as in AnswerReceipt.
int FrameCode(const v1::SessionResponse& response, int64_t* ok_characters);
// The same for an answer the stream senders read as an AnswerReceipt.
int FrameCode(const AnswerReceipt& receipt, int64_t* ok_characters);
// How the workload's session frames carry their per-frame inputs.
const char* FrameForm(const Workload& w);
int RegisteredCode(const AnswerReceipt& receipt);
int RegisteredCode(const v1::SessionResponse& response);
// A hit query's status code; INTERNAL for an answer that is not a query's.
int QueryCode(const AnswerReceipt& receipt);
int QueryCode(const v1::SessionResponse& response);
// Moves each character's state from `response` into `next` (spring state in
// unary calls travels through the client).
void CarryState(v1::SolveResponse& response, v1::SolveRequest& next);
// One answer, `code` its first non-OK status (0 when OK); its latency is
// recorded if it was sent after the warm-up.
void Record(SenderResult& r, Live& live, Clock::time_point start,
            Clock::time_point answered, int code, int64_t ok_characters);
void Sent(SenderResult& r, Live& live);
void CountError(SenderResult& r, Live& live, int code);

// What every sender of a phase shares.
struct Phase {
  const Workload& workload;
  const Config& config;
  Clock::time_point end;
  Live& live;
};

// Runs `body` (which drives every sender until the phase ends) with a
// progress line each second, and merges the senders' results.
PhaseResult RunPhase(
    const std::string& name, const Workload& w, const Config& c,
    const std::function<void(const Phase&, std::vector<SenderResult>&)>& body);

// The phase's figures on stdout, and as a JSON object.
void Print(const PhaseResult& p);
std::string Json(const PhaseResult& p);

}  // namespace posewire::load

#endif  // POSEWIRE_CLIENTS_LOAD_PHASE_H_
