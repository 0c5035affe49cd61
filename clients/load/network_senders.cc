#include "clients/load/network_senders.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/proto_buffer_reader.h>

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <queue>
#include <thread>

#include "absl/strings/str_cat.h"
#include "clients/load/answer_receipt.h"
#include "clients/load/frame_encoder.h"
#include "google/protobuf/arena.h"
#include "proto/grpc_handoff.h"

namespace posewire::load {
namespace {

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
  explicit EncodedSession(const load::Workload& workload)
      : queries(workload.queries) {
    for (const v1::SessionRequest& r : workload.registrations) {
      registrations.push_back(r.SerializeAsString());
    }
    for (const v1::SessionRequest& r : workload.frames) {
      frames.emplace_back(r, workload.seconds_per_frame);
    }
  }
  std::vector<std::string> registrations;
  std::vector<load::FrameEncoder> frames;
  // The referee's hit queries, serialised per send with their time (a few
  // hundred a second, against thousands of frames in the other mixes).
  std::vector<v1::SessionRequest> queries;
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
    // Set before Send hands this sender to gRPC's threads, whose callback
    // reads it.
    tick_start_ = Clock::now();
    Send(frame_bytes_);
  }

  void OnWriteDone(bool ok) override {
    posewire::TakeBackFromGrpc(this);
    Step(ok);
  }
  void OnReadDone(bool ok) override {
    posewire::TakeBackFromGrpc(this);
    answered_ = Clock::now();
    read_ok_ = ok;
    Step(ok);
  }
  void OnDone(const grpc::Status& status) override {
    posewire::TakeBackFromGrpc(this);
    // A handed-over stream ends UNAVAILABLE by design.
    if (broken_ && !handed_over_) {
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
    const bool parsed = read_ok_ && ParseAnswer();
    if (parsed && receipt_.kind == AnswerReceipt::Kind::kHandover) {
      // The server drains: the message in flight was not read (its write
      // may even have failed, the stream being closed), and the stream
      // ends UNAVAILABLE. Counted, not an error; this stream sends no more.
      handed_over_ = true;
      ++r_.handovers;
      RemoveHold();  // OnDone follows with the status
      return;
    }
    if (broken_) {
      RemoveHold();  // OnDone follows with the status
      return;
    }
    if (!parsed) {
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
    if (querying_) {
      // The tick's second message: it counts when its query is answered.
      querying_ = false;
      const int code = QueryCode(receipt_);
      Record(r_, phase_.live, tick_start_, answered_, code,
             code == 0 ? tick_characters_ : 0);
      ScheduleNext();
      return;
    }
    int64_t ok_characters = 0;
    const int code = FrameCode(receipt_, &ok_characters);
    if (code == 0 && !encoded_.queries.empty()) {
      const size_t v = (sequence_ - 1) % encoded_.queries.size();
      query_ = encoded_.queries[v];
      query_.mutable_query()->set_time(phase_.workload.QueryTime(sequence_));
      query_.SerializeToString(&query_bytes_);
      tick_characters_ = ok_characters;
      querying_ = true;
      Send(query_bytes_);
      return;
    }
    Record(r_, phase_.live, tick_start_, answered_, code, ok_characters);
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
  // Set before RemoveHold, which OnDone waits for.
  bool handed_over_ = false;
  // The last read's outcome, set before its Step.
  bool read_ok_ = false;
  Clock::time_point answered_;
  // A message's send, or a referee tick's (its frame's, until its query's
  // answer).
  Clock::time_point tick_start_;
  bool querying_ = false;
  int64_t tick_characters_ = 0;
  v1::SessionRequest query_;
  std::string query_bytes_;
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

}  // namespace

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

}  // namespace posewire::load
