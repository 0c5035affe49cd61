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
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/support/proto_buffer_reader.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <queue>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "clients/cpp/posewire_client.h"
#include "clients/load/answer_receipt.h"
#include "clients/load/cpu_list.h"
#include "clients/load/frame_encoder.h"
#include "clients/load/workload.h"
#include "google/protobuf/arena.h"
#include "posewire/v1/posewire.grpc.pb.h"
#include "proto/grpc_handoff.h"
#include "server/service/server_config.h"
#include "server/service/session.h"
#include "server/service/skeleton_cache.h"
#include "server/service/solve.h"
#include "solver_core/io/bvh_reader.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051", "Server address host:port.");
ABSL_FLAG(std::string, mode, "stream",
          "stream (Session RPC) or unary (Solve).");
ABSL_FLAG(int, streams, 0, "Concurrent streams (stream mode).");
ABSL_FLAG(int, callers, 0, "Concurrent unary callers (unary mode).");
ABSL_FLAG(int, characters, 1, "Characters per message.");
ABSL_FLAG(std::string, op_mix, "fk_ik", "fk_ik, spring, blend3 or fullbody.");
ABSL_FLAG(bool, op_updates, true,
          "Stream frames send the clip time and IK targets as op updates "
          "(fk_ik, spring); false: the whole pipeline every frame.");
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
ABSL_FLAG(int, baseline_threads, 0,
          "Threads of the in-process baseline; 0: the server's solver "
          "threads (GetInfo), so both sides solve on the same threads.");
ABSL_FLAG(std::string, json, "", "Also write the report as JSON to this file.");
ABSL_FLAG(std::string, cpus, "",
          "CPUs the generator's network phase runs on, e.g. 1 or 2-3 (as "
          "taskset -c); empty: every CPU. On a machine shared with the "
          "server, keeps the generator off the server's cores. The "
          "in-process baseline always runs on every CPU.");

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
  r.latency_ns.push_back(
      std::chrono::duration_cast<std::chrono::nanoseconds>(answered - start)
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

void CountError(SenderResult& r, Live& live, int code) {
  ++r.errors[code];
  live.errors.fetch_add(1, std::memory_order_relaxed);
}

// What every sender of a phase shares.
struct Phase {
  const Workload& workload;
  const Config& config;
  Clock::time_point end;
  Live& live;
};

// ------------------------------------------------ senders over the wire --
//
// Every stream and unary caller is a gRPC callback-API reactor: gRPC's own
// few threads run the callbacks, and one scheduler thread starts paced
// messages on time, so 200 paced streams cost 200 small objects, not 200
// threads time-slicing on the cores the server needs.

// Starts tasks at their due time from one thread.
class Scheduler {
 public:
  class Task {
   public:
    virtual void Fire() = 0;

   protected:
    ~Task() = default;
  };

  Scheduler() : thread_([this] { Loop(); }) {}
  ~Scheduler() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }

  // Runs `task->Fire()` on the scheduler thread at `when`.
  void At(Clock::time_point when, Task* task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      due_.push(Entry{when, task});
    }
    wake_.notify_one();
  }

 private:
  struct Entry {
    Clock::time_point when;
    Task* task;
    bool operator>(const Entry& other) const { return when > other.when; }
  };

  void Loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
      if (due_.empty()) {
        wake_.wait(lock);
      } else if (Clock::now() < due_.top().when) {
        // A copy: wait_until reads its deadline after unlocking, when another
        // thread's push may have reallocated the queue under a reference.
        const Clock::time_point when = due_.top().when;
        wake_.wait_until(lock, when);
      } else {
        Task* task = due_.top().task;
        due_.pop();
        lock.unlock();
        task->Fire();
        lock.lock();
      }
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> due_;
  std::thread thread_;  // last: starts after the members it reads
};

// Counts senders down to zero; Wait() returns when all are done.
class Latch {
 public:
  explicit Latch(int count) : count_(count) {}
  void CountDown() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (--count_ == 0) zero_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    zero_.wait(lock, [this] { return count_ == 0; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable zero_;
  int count_;
};

// Base of the network senders: pacing against the phase's end.
class NetworkSender : public Scheduler::Task {
 public:
  NetworkSender(const Phase& phase, Scheduler& scheduler, Latch& done,
                int index, SenderResult& r)
      : phase_(phase),
        scheduler_(scheduler),
        done_(done),
        index_(index),
        r_(r) {}

 protected:
  // Fires the next message when it is due, or calls Stop() once the phase
  // is over. Called when the sender is ready (previous answer in).
  void ScheduleNext() {
    const Clock::time_point now = Clock::now();
    const Clock::time_point send = pacer_.Next(now);
    if (send >= phase_.end) {
      Stop();
    } else if (send <= now) {
      Fire();
    } else {
      scheduler_.At(send, this);
    }
  }
  virtual void Stop() = 0;
  // The schedule starts now (after a stream's registrations).
  void StartPacing() {
    pacer_ = Pacer(phase_.config.rate, index_, phase_.config.senders);
  }

  const Phase& phase_;
  Scheduler& scheduler_;
  Latch& done_;
  const int index_;
  SenderResult& r_;
  Pacer pacer_{phase_.config.rate, index_, phase_.config.senders};
};

// A Session workload as the bytes the streams send.
struct EncodedSession {
  explicit EncodedSession(const load::Workload& workload) {
    for (const v1::SessionRequest& r : workload.registrations) {
      registrations.push_back(r.SerializeAsString());
    }
    for (const v1::SessionRequest& r : workload.frames) frames.emplace_back(r);
  }
  std::vector<std::string> registrations;
  std::vector<load::FrameEncoder> frames;
};

// One Session stream: registrations, then frames, one in flight at a time
// (the server answers each before reading the next). A message is complete
// when both its write and its read have finished, in either order.
//
// Requests go out as bytes encoded ahead of the run (registrations whole,
// frames by FrameEncoder with only the sequence written per send), through
// gRPC's generic stub: a load generator that serialised each message would
// spend the server's cores on its own work. Answers are read only for their
// statuses and the presence of each pose (AnswerReceipt).
class StreamSender final
    : public NetworkSender,
      public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  StreamSender(grpc::GenericStub& stub, const EncodedSession& encoded,
               const Phase& phase, Scheduler& scheduler, Latch& done, int index,
               SenderResult& r)
      : NetworkSender(phase, scheduler, done, index, r), encoded_(encoded) {
    stub.PrepareBidiStreamingCall(&context_, "/posewire.v1.PoseWire/Session",
                                  grpc::StubOptions(), this);
    // Held until the sender stops: between paced messages nothing is in
    // flight, and a status arriving then (a server going away) must not end
    // the reactor while the scheduler still holds it.
    AddHold();
    Send(encoded_.registrations[0]);
    StartCall();
  }

  void Fire() override {
    const FrameEncoder& frame =
        encoded_.frames[sequence_ % encoded_.frames.size()];
    frame.Encode(++sequence_, &frame_bytes_);
    Sent(r_, phase_.live);
    Send(frame_bytes_);
  }

  void OnWriteDone(bool ok) override {
    posewire::TakeBackFromGrpc(this);
    Step(ok);
  }
  void OnReadDone(bool ok) override {
    posewire::TakeBackFromGrpc(this);
    answered_ = Clock::now();
    Step(ok);
  }
  void OnDone(const grpc::Status& status) override {
    posewire::TakeBackFromGrpc(this);
    if (broken_) {
      CountError(r_, phase_.live,
                 status.ok() ? grpc::StatusCode::UNKNOWN
                             : static_cast<int>(status.error_code()));
    }
    done_.CountDown();
  }

 private:
  // Sends `bytes` (copied into gRPC's buffer, so the caller may reuse
  // them) and reads the answer.
  void Send(const std::string& bytes) {
    pending_.store(2, std::memory_order_relaxed);
    grpc::Slice slice(bytes.data(), bytes.size());
    request_bytes_ = grpc::ByteBuffer(&slice, 1);
    response_bytes_.Clear();
    start_ = Clock::now();
    posewire::HandOffToGrpc(this);
    StartRead(&response_bytes_);
    StartWrite(&request_bytes_);
  }

  // Reads the answer just read into `receipt_`.
  bool ParseAnswer() {
    grpc::ProtoBufferReader reader(&response_bytes_);
    return ReadAnswerReceipt(&reader, &receipt_) && reader.status().ok();
  }

  void Step(bool ok) {
    if (!ok) broken_ = true;
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    if (broken_) {
      RemoveHold();  // OnDone follows with the status
      return;
    }
    if (!ParseAnswer()) {
      // Not a SessionResponse: counted as INTERNAL, and the stream stops.
      CountError(r_, phase_.live, grpc::StatusCode::INTERNAL);
      Stop();
      return;
    }
    if (registered_ < encoded_.registrations.size()) {
      if (const int code = RegisteredCode(receipt_); code != 0) {
        CountError(r_, phase_.live, code);
        Stop();
        return;
      }
      if (++registered_ < encoded_.registrations.size()) {
        Send(encoded_.registrations[registered_]);
        return;
      }
      StartPacing();
      ScheduleNext();
      return;
    }
    int64_t ok_characters = 0;
    const int code = FrameCode(receipt_, &ok_characters);
    Record(r_, phase_.live, start_, answered_, code, ok_characters);
    ScheduleNext();
  }

  void Stop() override {
    posewire::HandOffToGrpc(this);
    StartWritesDone();
    RemoveHold();
  }

  grpc::ClientContext context_;
  const EncodedSession& encoded_;
  std::string frame_bytes_;
  grpc::ByteBuffer request_bytes_;
  grpc::ByteBuffer response_bytes_;
  AnswerReceipt receipt_;
  size_t registered_ = 0;
  uint64_t sequence_ = 0;
  std::atomic<int> pending_{0};
  std::atomic<bool> broken_{false};
  Clock::time_point start_, answered_;
};

// One unary caller: a Solve at a time, skeleton by hash once the server
// knows it (resent inline on NOT_FOUND), state carried to the next call.
class UnarySender final : public NetworkSender {
 public:
  UnarySender(v1::PoseWire::Stub& stub, const Phase& phase,
              Scheduler& scheduler, Latch& done, int index, SenderResult& r)
      : NetworkSender(phase, scheduler, done, index, r),
        stub_(stub),
        by_hash_(phase.workload.solve_by_hash),
        inline_(phase.workload.solve_inline) {}

  void Begin() {
    StartPacing();
    ScheduleNext();
  }

  void Fire() override {
    Sent(r_, phase_.live);
    start_ = Clock::now();
    retried_ = false;
    Call();
  }

 private:
  void Call() {
    const size_t v = n_ % by_hash_.size();
    // A context lives until the call after next: never destroyed inside
    // its own call's callback.
    std::unique_ptr<grpc::ClientContext>& context = contexts_[n_calls_++ % 2];
    context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() +
                          std::chrono::seconds(10));
    response_.Clear();
    // Everything the call reads of this sender is read before the hand-off.
    grpc::ClientContext* call_context = context.get();
    const v1::SolveRequest* request = known_ ? &by_hash_[v] : &inline_[v];
    v1::PoseWire::StubInterface::async_interface* async = stub_.async();
    posewire::HandOffToGrpc(this);
    async->Solve(call_context, request, &response_,
                 [this](grpc::Status status) { OnSolved(status); });
  }

  void OnSolved(const grpc::Status& status) {
    posewire::TakeBackFromGrpc(this);
    const Clock::time_point answered = Clock::now();
    // NOT_FOUND by hash: the server evicted the skeleton; resend inline.
    if (known_ && !retried_ &&
        status.error_code() == grpc::StatusCode::NOT_FOUND) {
      known_ = false;
      retried_ = true;
      Call();
      return;
    }
    if (status.ok()) known_ = true;
    Record(r_, phase_.live, start_, answered,
           status.ok() ? 0 : status.error_code(),
           status.ok() ? response_.characters_size() : 0);
    const size_t next = ++n_ % by_hash_.size();
    CarryState(response_, known_ ? by_hash_[next] : inline_[next]);
    ScheduleNext();
  }

  void Stop() override { done_.CountDown(); }

  v1::PoseWire::Stub& stub_;
  std::vector<v1::SolveRequest> by_hash_;
  std::vector<v1::SolveRequest> inline_;
  std::unique_ptr<grpc::ClientContext> contexts_[2];
  uint64_t n_calls_ = 0;
  v1::SolveResponse response_;
  uint64_t n_ = 0;
  bool known_ = false;  // the server has the skeleton (by hash)
  bool retried_ = false;
  Clock::time_point start_;
};

// One stub of each kind per channel: typed for Solve, generic (bytes) for
// Session.
struct ChannelStubs {
  std::unique_ptr<v1::PoseWire::Stub> typed;
  std::unique_ptr<grpc::GenericStub> generic;
};

void RunNetwork(const Phase& phase, std::vector<ChannelStubs>& stubs,
                std::vector<SenderResult>& results) {
  const EncodedSession encoded(phase.workload);
  const int n = phase.config.senders;
  Latch done(n);
  std::vector<std::unique_ptr<StreamSender>> streams;
  std::vector<std::unique_ptr<UnarySender>> callers;
  // Declared after the senders, so it stops (finishing any Fire() under
  // way) before they are destroyed.
  Scheduler scheduler;
  for (int i = 0; i < n; ++i) {
    ChannelStubs& stub = stubs[i % stubs.size()];
    if (phase.config.stream) {
      streams.push_back(std::make_unique<StreamSender>(
          *stub.generic, encoded, phase, scheduler, done, i, results[i]));
    } else {
      callers.push_back(std::make_unique<UnarySender>(
          *stub.typed, phase, scheduler, done, i, results[i]));
      callers.back()->Begin();
    }
  }
  done.Wait();
}

// ------------------------------------------------------------ in process --
//
// The same senders without gRPC, on as many threads as the server has
// solver threads: each thread serves its share of the senders in order of
// when their next message is due, as the server's worker pool would. A
// message counts from when its sender would have sent it (open loop: when
// its previous answer came), so time queued behind another sender's
// message counts, as it does in the server's pool.

class LocalSender {
 public:
  LocalSender(const Phase& phase, int index, SenderResult& r)
      : phase_(phase), r_(r), index_(index) {}
  virtual ~LocalSender() = default;

  // Prepares the first message; false if the sender cannot start.
  virtual bool Begin() {
    pacer_ = Pacer(phase_.config.rate, index_, phase_.config.senders);
    send_ = pacer_.Next(Clock::now());
    return true;
  }
  // Handles one message, due at send_time().
  void HandleNext() {
    Sent(r_, phase_.live);
    int64_t ok_characters = 0;
    const int code = Handle(&ok_characters);
    const Clock::time_point answered = Clock::now();
    Record(r_, phase_.live, send_, answered, code, ok_characters);
    send_ = pacer_.Next(answered);
  }
  Clock::time_point send_time() const { return send_; }

 protected:
  virtual int Handle(int64_t* ok_characters) = 0;

  const Phase& phase_;
  SenderResult& r_;

 private:
  const int index_;
  Pacer pacer_{0, 0, 1};
  Clock::time_point send_;
};

class LocalStream final : public LocalSender {
 public:
  LocalStream(const server::ServerConfig& config, const Phase& phase, int index,
              SenderResult& r)
      : LocalSender(phase, index, r),
        session_(config),
        frames_(phase.workload.frames) {}

  bool Begin() override {
    for (const v1::SessionRequest& reg : phase_.workload.registrations) {
      v1::SessionResponse* response = FreshResponse();
      session_.Handle(reg, response);
      if (const int code = RegisteredCode(*response); code != 0) {
        CountError(r_, phase_.live, code);
        return false;
      }
    }
    return LocalSender::Begin();
  }

 private:
  int Handle(int64_t* ok_characters) override {
    v1::SessionRequest& request = frames_[sequence_ % frames_.size()];
    request.mutable_frame()->set_sequence(++sequence_);
    v1::SessionResponse* response = FreshResponse();
    session_.Handle(request, response);
    return FrameCode(*response, ok_characters);
  }

  // An empty response on an arena reset per message, as the server builds
  // its answers (server/posewire_service.cc, MessagePair), so both sides
  // pay the same for building them.
  v1::SessionResponse* FreshResponse() {
    arena_.Reset();
    return google::protobuf::Arena::CreateMessage<v1::SessionResponse>(&arena_);
  }

  server::Session session_;
  std::vector<v1::SessionRequest> frames_;
  google::protobuf::Arena arena_;
  uint64_t sequence_ = 0;
};

class LocalUnary final : public LocalSender {
 public:
  LocalUnary(const server::ServerConfig& config, server::SkeletonCache& cache,
             const Phase& phase, int index, SenderResult& r)
      : LocalSender(phase, index, r),
        config_(config),
        cache_(cache),
        by_hash_(phase.workload.solve_by_hash),
        inline_(phase.workload.solve_inline) {}

 private:
  int Handle(int64_t* ok_characters) override {
    const size_t v = n_ % by_hash_.size();
    absl::Status status;
    for (int attempt = 0; attempt < 2; ++attempt) {
      response_.Clear();
      status = server::Solve(known_ ? by_hash_[v] : inline_[v], config_, cache_,
                             never_stop_, &response_);
      if (known_ && absl::IsNotFound(status)) {
        known_ = false;
        continue;
      }
      break;
    }
    if (status.ok()) known_ = true;
    *ok_characters = status.ok() ? response_.characters_size() : 0;
    const size_t next = ++n_ % by_hash_.size();
    CarryState(response_, known_ ? by_hash_[next] : inline_[next]);
    return static_cast<int>(status.code());
  }

  const server::ServerConfig& config_;
  server::SkeletonCache& cache_;
  const server::StopCheck never_stop_ = [] { return absl::OkStatus(); };
  std::vector<v1::SolveRequest> by_hash_;
  std::vector<v1::SolveRequest> inline_;
  v1::SolveResponse response_;
  uint64_t n_ = 0;
  bool known_ = false;
};

// One baseline thread: its senders, earliest due first, until every next
// message would go out after the phase's end.
void LocalWorker(const Phase& phase, std::vector<LocalSender*> senders) {
  std::vector<LocalSender*> active;
  for (LocalSender* s : senders) {
    if (s->Begin()) active.push_back(s);
  }
  while (!active.empty()) {
    auto next = std::min_element(active.begin(), active.end(),
                                 [](LocalSender* a, LocalSender* b) {
                                   return a->send_time() < b->send_time();
                                 });
    LocalSender* s = *next;
    if (s->send_time() >= phase.end) {
      active.erase(next);
      continue;
    }
    std::this_thread::sleep_until(s->send_time());
    s->HandleNext();
  }
}

void RunInProcess(const Phase& phase, int threads,
                  std::vector<SenderResult>& results) {
  // The server's defaults: the same limits the service enforces.
  const server::ServerConfig config;
  server::SkeletonCache cache(config.skeleton_cache_size);
  const int n = phase.config.senders;
  std::vector<std::unique_ptr<LocalSender>> senders;
  for (int i = 0; i < n; ++i) {
    if (phase.config.stream) {
      senders.push_back(
          std::make_unique<LocalStream>(config, phase, i, results[i]));
    } else {
      senders.push_back(
          std::make_unique<LocalUnary>(config, cache, phase, i, results[i]));
    }
  }
  threads = std::clamp(threads, 1, n);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    std::vector<LocalSender*> mine;
    for (int i = t; i < n; i += threads) mine.push_back(senders[i].get());
    workers.emplace_back(LocalWorker, std::cref(phase), std::move(mine));
  }
  for (std::thread& t : workers) t.join();
}

// Runs `body` (which drives every sender until the phase ends) with a
// progress line each second, and merges the senders' results.
PhaseResult RunPhase(
    const std::string& name, const Workload& w, const Config& c,
    const std::function<void(const Phase&, std::vector<SenderResult>&)>& body) {
  Live live;
  std::vector<SenderResult> results(c.senders);
  const Clock::time_point start = Clock::now();
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

  // Confined before the first gRPC call, so gRPC's threads inherit it.
  absl::StatusOr<cpu_set_t> all_cpus = ThreadAffinity();
  absl::StatusOr<std::string> generator_cpus =
      all_cpus.ok() ? ApplyCpusFlag(*all_cpus) : all_cpus.status();
  if (!generator_cpus.ok()) {
    std::fprintf(stderr, "%s\n",
                 std::string(generator_cpus.status().message()).c_str());
    return absl::IsInvalidArgument(generator_cpus.status()) ? 2 : 1;
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
  wo.op_updates = absl::GetFlag(FLAGS_op_updates);
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
      "posewire-load: %s, %s mode, %d %s, %d characters/message, op_mix %s "
      "(frames send %s), rate %s, %.1f s; server %s (version %s, %u solver "
      "threads), "
      "%d joints; generator on CPUs %s\n",
      address.c_str(), mode.c_str(), c.senders,
      c.stream ? "streams" : "callers", c.characters, op_mix.c_str(),
      FrameForm(w),
      c.rate > 0 ? absl::StrCat(c.rate, " Hz").c_str() : "open loop",
      c.duration, address.c_str(), info->version().c_str(),
      info->solver_threads(), w.joints, generator_cpus->c_str());

  // Channels: separate connections (a local subchannel pool each).
  std::vector<ChannelStubs> stubs;
  for (int i = 0; i < c.channels; ++i) {
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

  const PhaseResult network =
      RunPhase("service", w, c,
               [&](const Phase& phase, std::vector<SenderResult>& results) {
                 RunNetwork(phase, stubs, results);
               });
  Print(network);

  PhaseResult local;
  const bool baseline = absl::GetFlag(FLAGS_baseline);
  // Behind a load balancer GetInfo reports one replica's threads: set
  // --baseline_threads to the sum.
  const int baseline_threads = absl::GetFlag(FLAGS_baseline_threads) > 0
                                   ? absl::GetFlag(FLAGS_baseline_threads)
                                   : std::max(1u, info->solver_threads());
  if (baseline) {
    // The baseline's threads start from here: every CPU, whatever --cpus.
    if (absl::Status s = SetThreadAffinity(*all_cpus); !s.ok()) {
      std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
      return 1;
    }
    std::printf("in-process baseline on %d threads\n",
                std::min(baseline_threads, c.senders));
    local =
        RunPhase("in-process", w, c,
                 [&](const Phase& phase, std::vector<SenderResult>& results) {
                   RunInProcess(phase, baseline_threads, results);
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
        "\"characters\": %d, \"op_mix\": \"%s\", \"frames_send\": \"%s\", "
        "\"rate\": %.3f, \"duration\": %.3f, \"joints\": %d, "
        "\"generator_cpus\": \"%s\", \"service\": %s",
        address, mode, c.senders, c.characters, op_mix, FrameForm(w), c.rate,
        c.duration, w.joints, *generator_cpus, Json(network));
    if (baseline) {
      out << ", \"in_process\": " << Json(local)
          << absl::StrFormat(
                 ", \"baseline_threads\": %d, \"ratio\": %.4f",
                 std::min(baseline_threads, c.senders),
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
  // As in posewire-server (server/main.cc): no debug deadlock detection on
  // gRPC's locks, so the generator spends the shared cores on the load.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return posewire::load::Main();
}
