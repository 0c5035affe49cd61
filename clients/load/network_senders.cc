#include "clients/load/network_senders.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/proto_buffer_reader.h>

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <queue>
#include <thread>

#include "absl/strings/match.h"
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

// How a call ends when its server goes away rather than refuses:
// UNAVAILABLE (killed, unreachable, draining), CANCELLED (gRPC cuts what is
// left past a shutdown's grace), or a stream reset by a proxy whose
// upstream died (nginx sends RST_STREAM INTERNAL_ERROR, which gRPC reports
// as INTERNAL "Received RST_STREAM with error code 2").
bool ServerWentAway(const grpc::Status& status) {
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::CANCELLED:
      return true;
    case grpc::StatusCode::INTERNAL:
      return absl::StartsWith(status.error_message(), "Received RST_STREAM");
    default:
      return false;
  }
}

// The status a draining server ends a handed-over stream with. A client
// can get it without having read the hand-over: when its next write meets
// the closed stream first, gRPC cancels the call on the failed send (the
// core's FilterStackCall::BatchControl::FinishBatch), and the hand-over
// message it had already received is never delivered to the read.
bool DrainedWithHandover(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE &&
         absl::StrContains(status.error_message(), "SessionSnapshot.handover");
}

// A Session workload as the bytes the streams send.
struct EncodedSession {
  EncodedSession(const load::Workload& workload, const Config& config)
      : queries(workload.queries) {
    for (const v1::SessionRequest& r : workload.registrations) {
      registrations.push_back(r.SerializeAsString());
      // A resume restores characters from the snapshot; the rest is
      // resent when the resume asks for it.
      if (!r.has_register_character()) resends.push_back(registrations.back());
    }
    for (const v1::SessionRequest& r : workload.frames) {
      frames.emplace_back(r, workload.seconds_per_frame);
    }
    v1::SessionRequest snapshot;
    snapshot.mutable_snapshot()->set_every_frames(
        static_cast<uint32_t>(std::max(0, config.resume_snapshot_every)));
    snapshot_request = snapshot.SerializeAsString();
  }
  std::vector<std::string> registrations;
  // SnapshotRequest{every_frames: --resume_snapshot_every}, with --resume.
  std::string snapshot_request;
  // The registrations a resume asks to be resent, in order.
  std::vector<std::string> resends;
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
//
// With --resume a stream survives its server: it asks for a snapshot after
// every --resume_snapshot_every frames, and when its call ends because the
// server drained (a hand-over in place of an answer) or went away
// (UNAVAILABLE or CANCELLED), it goes on in a new call through the same
// channel (another replica behind a balancer): resumed from the hand-over
// or the newest snapshot, the registrations resent, the frames answered
// since that snapshot replayed (their answers are not counted again), and
// the message that was in flight sent again, still timed from its tick's
// start, so its latency includes the outage. Without --resume the stream
// ends there: a hand-over is counted, a broken call is an error.
class StreamSender final : public NetworkSender {
 public:
  StreamSender(grpc::GenericStub& stub, const EncodedSession& encoded,
               const Phase& phase, Scheduler& scheduler, Latch& done, int index,
               SenderResult& r)
      : NetworkSender(phase, scheduler, done, index, r),
        stub_(stub),
        encoded_(encoded) {
    plan_ = encoded_.registrations;
    if (phase_.config.resume) plan_.push_back(encoded_.snapshot_request);
    Open();
  }

  void Fire() override {
    if (reconnect_due_) {
      reconnect_due_ = false;
      Reconnect();
      return;
    }
    const FrameEncoder& frame = FrameFor(++sequence_);
    frame.Encode(sequence_, &frame_bytes_);
    Sent(r_, phase_.live);
    // Set before Send hands the call to gRPC's threads, whose callback
    // reads it.
    tick_start_ = Clock::now();
    SendInFlight(frame_bytes_);
  }

 private:
  // One gRPC call of the stream: the first, or one that resumed it. Kept
  // until the sender is destroyed (gRPC may still be in its OnDone when
  // the next one starts).
  class Call final
      : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
   public:
    Call(StreamSender& owner, grpc::GenericStub& stub) : owner_(owner) {
      stub.PrepareBidiStreamingCall(&context_, "/posewire.v1.PoseWire/Session",
                                    grpc::StubOptions(), this);
      // Held until the stream stops or moves on: between paced messages
      // nothing is in flight, and a status arriving then (a server going
      // away) must not end the reactor while the scheduler still holds
      // the sender.
      AddHold();
    }
    void Start(const std::string& first) {
      Send(first);
      StartCall();
    }
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
    // Reads a second answer to the message just answered (a periodic
    // snapshot after its frame).
    void ReadFollowUp() {
      pending_.store(1, std::memory_order_relaxed);
      response_bytes_.Clear();
      posewire::HandOffToGrpc(this);
      StartRead(&response_bytes_);
    }
    void Stop() {
      posewire::HandOffToGrpc(this);
      StartWritesDone();
      RemoveHold();
    }
    void Release() { RemoveHold(); }  // OnDone follows with the status

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
      owner_.CallDone(*this, status);
    }

    // The answer just read, into `receipt`; false if it is not one.
    bool ParseAnswer(AnswerReceipt* receipt) {
      if (!read_ok_) return false;
      grpc::ProtoBufferReader reader(&response_bytes_);
      return ReadAnswerReceipt(&reader, receipt) && reader.status().ok();
    }
    bool broken() const { return broken_; }
    Clock::time_point answered() const { return answered_; }
    bool handed_over = false;  // set before Release, which OnDone waits for

   private:
    void Step(bool ok) {
      if (!ok) broken_ = true;
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
      owner_.Step(*this);
    }

    StreamSender& owner_;
    grpc::ClientContext context_;
    grpc::ByteBuffer request_bytes_;
    grpc::ByteBuffer response_bytes_;
    std::atomic<int> pending_{0};
    std::atomic<bool> broken_{false};
    bool read_ok_ = false;  // the last read's outcome, set before its Step
    Clock::time_point answered_;
  };

  const FrameEncoder& FrameFor(uint64_t sequence) const {
    return encoded_.frames[(sequence - 1) % encoded_.frames.size()];
  }

  // A new call that first sends plan_ (registrations, or a resume and what
  // it needs), then goes on with frames.
  void Open() {
    calls_.push_back(std::make_unique<Call>(*this, stub_));
    call_ = calls_.back().get();
    planned_ = 0;
    call_->Start(plan_.front());
  }

  void SendInFlight(const std::string& bytes) {
    in_flight_ = &bytes;
    in_flight_pending_ = true;
    call_->Send(bytes);
  }

  // The code of an answer to a planned message; a snapshot's is kept.
  int PlannedCode() {
    switch (receipt_.kind) {
      case AnswerReceipt::Kind::kRegistered:
        return RegisteredCode(receipt_);
      case AnswerReceipt::Kind::kResumed:
        return receipt_.code;
      case AnswerReceipt::Kind::kSnapshot:
        if (receipt_.code == 0) KeepSnapshot();
        return receipt_.code;
      case AnswerReceipt::Kind::kFrame: {
        int64_t ok_characters = 0;
        return FrameCode(receipt_, &ok_characters);
      }
      default:
        return grpc::StatusCode::INTERNAL;
    }
  }

  void KeepSnapshot() {
    snapshot_ = std::move(receipt_.snapshot_data);
    snapshot_after_ = receipt_.snapshot_after;
    frames_since_snapshot_ = 0;
  }

  // Both halves of the call's message are done (or the follow-up read).
  void Step(Call& call) {
    const bool parsed = call.ParseAnswer(&receipt_);
    if (parsed && receipt_.kind == AnswerReceipt::Kind::kHandover) {
      // The server drains: the message in flight was not read (its write
      // may even have failed, the stream being closed), and the call ends
      // UNAVAILABLE. Counted, not an error.
      ++r_.handovers;
      call.handed_over = true;
      if (receipt_.code == 0) KeepSnapshot();
      call.Release();
      return;
    }
    if (call.broken()) {
      call.Release();
      return;
    }
    if (!parsed) {
      // Not a SessionResponse: counted as INTERNAL, and the stream stops.
      CountError(r_, phase_.live, grpc::StatusCode::INTERNAL);
      Stop();
      return;
    }
    if (planned_ < plan_.size()) {
      if (const int code = PlannedCode(); code != 0) {
        CountError(r_, phase_.live, code);
        Stop();
        return;
      }
      if (++planned_ < plan_.size()) {
        call.Send(plan_[planned_]);
        return;
      }
      if (resumed_) {
        resumed_ = false;
        attempts_ = 0;
        ++r_.resumes;
        if (awaiting_snapshot_) {
          // Lost while reading the snapshot after an answered frame: that
          // tick goes on from its answer.
          awaiting_snapshot_ = false;
          AfterFrame(call, frame_code_, frame_characters_);
          return;
        }
        if (in_flight_pending_) {
          // The message the server never answered goes again, timed from
          // its tick's start.
          call.Send(*in_flight_);
          return;
        }
        ScheduleNext();
        return;
      }
      StartPacing();
      ScheduleNext();
      return;
    }
    if (awaiting_snapshot_) {
      // The periodic snapshot that follows a frame's answer.
      awaiting_snapshot_ = false;
      if (receipt_.kind == AnswerReceipt::Kind::kSnapshot &&
          receipt_.code == 0) {
        KeepSnapshot();
      }
      AfterFrame(call, frame_code_, frame_characters_);
      return;
    }
    in_flight_pending_ = false;
    if (querying_) {
      // The tick's second message: it counts when its query is answered.
      querying_ = false;
      const int code = QueryCode(receipt_);
      Record(r_, phase_.live, tick_start_, call.answered(), code,
             code == 0 ? tick_characters_ : 0);
      ScheduleNext();
      return;
    }
    int64_t ok_characters = 0;
    const int code = FrameCode(receipt_, &ok_characters);
    if (code == 0) answered_sequence_ = sequence_;
    frame_answered_ = call.answered();
    if (code == 0 && phase_.config.resume &&
        ++frames_since_snapshot_ >= phase_.config.resume_snapshot_every) {
      awaiting_snapshot_ = true;
      frame_code_ = code;
      frame_characters_ = ok_characters;
      call.ReadFollowUp();
      return;
    }
    AfterFrame(call, code, ok_characters);
  }

  // A frame was answered: its tick's query next (referee), or the tick
  // is done.
  void AfterFrame(Call& call, int code, int64_t ok_characters) {
    if (code == 0 && !encoded_.queries.empty()) {
      const size_t v = (sequence_ - 1) % encoded_.queries.size();
      query_ = encoded_.queries[v];
      query_.mutable_query()->set_time(phase_.workload.QueryTime(sequence_));
      query_.SerializeToString(&query_bytes_);
      tick_characters_ = ok_characters;
      querying_ = true;
      in_flight_ = &query_bytes_;
      in_flight_pending_ = true;
      call.Send(query_bytes_);
      return;
    }
    Record(r_, phase_.live, tick_start_, frame_answered_, code, ok_characters);
    ScheduleNext();
  }

  // A call ended (its OnDone). With --resume, one that a server handed
  // over or lost goes on in a new call; otherwise the stream ends, a
  // broken call counting as its error.
  void CallDone(Call& call, const grpc::Status& status) {
    if (call.broken() && !call.handed_over && DrainedWithHandover(status)) {
      // Handed over, but its snapshot was lost on the way to the read
      // (DrainedWithHandover): a hand-over still, not an error; a resume
      // goes on from the newest snapshot kept.
      ++r_.handovers;
      ++r_.handover_snapshots_lost;
      call.handed_over = true;
    }
    const bool went_away =
        call.handed_over || (call.broken() && ServerWentAway(status));
    if (phase_.config.resume && went_away && !stopped_ &&
        Clock::now() < phase_.end && attempts_ < kMaxAttempts) {
      // The first attempt at once; then after a growing pause, on the
      // scheduler (Fire), so a server still away is not hammered.
      const auto pause = std::chrono::milliseconds(
          attempts_ == 0 ? 0 : 10 << std::min(attempts_ - 1, 7));
      ++attempts_;
      reconnect_due_ = true;
      scheduler_.At(Clock::now() + pause, this);
      return;
    }
    if (call.broken() && !call.handed_over) {
      CountError(r_, phase_.live,
                 status.ok() ? grpc::StatusCode::UNKNOWN
                             : static_cast<int>(status.error_code()));
    }
    done_.CountDown();
  }

  // Opens the next call: a resume from the newest snapshot, what it needs,
  // and the frames answered after it; or, before any snapshot, the
  // registrations again.
  void Reconnect() {
    plan_.clear();
    if (snapshot_.empty()) {
      plan_ = encoded_.registrations;
    } else {
      v1::SessionRequest resume;
      resume.mutable_resume()->set_snapshot(snapshot_);
      plan_.push_back(resume.SerializeAsString());
      plan_.insert(plan_.end(), encoded_.resends.begin(),
                   encoded_.resends.end());
    }
    // Frames after the snapshot (all of them without one) rebuild the state.
    for (uint64_t s = snapshot_.empty() ? 1 : snapshot_after_ + 1;
         s <= answered_sequence_; ++s) {
      FrameFor(s).Encode(s, &plan_.emplace_back());
      ++r_.replayed;
    }
    // Periodic snapshots are per call: asked for again, which also takes
    // one covering the replay.
    plan_.push_back(encoded_.snapshot_request);
    // Lost before its first paced frame, the stream starts as new.
    resumed_ = sequence_ > 0;
    Open();
  }

  void Stop() override {
    stopped_ = true;
    call_->Stop();
  }

  static constexpr int kMaxAttempts = 10;

  grpc::GenericStub& stub_;
  const EncodedSession& encoded_;
  std::vector<std::unique_ptr<Call>> calls_;
  Call* call_ = nullptr;  // the newest
  // What the current call sends before paced frames, and how many of
  // those are answered.
  std::vector<std::string> plan_;
  size_t planned_ = 0;
  // The current call resumes the stream (not its first).
  bool resumed_ = false;
  bool reconnect_due_ = false;
  bool stopped_ = false;
  int attempts_ = 0;
  // The newest snapshot (or hand-over) and the frame it was taken after.
  std::string snapshot_;
  uint64_t snapshot_after_ = 0;
  int frames_since_snapshot_ = 0;
  // A frame's answer whose periodic snapshot is being read.
  bool awaiting_snapshot_ = false;
  int frame_code_ = 0;
  int64_t frame_characters_ = 0;
  Clock::time_point frame_answered_;
  AnswerReceipt receipt_;
  std::string frame_bytes_;
  // The message sent last (a frame or a query), and whether its answer is
  // still to come: what a new call sends again.
  const std::string* in_flight_ = nullptr;
  bool in_flight_pending_ = false;
  uint64_t sequence_ = 0;           // of the frame sent last
  uint64_t answered_sequence_ = 0;  // of the frame answered last
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
  const EncodedSession encoded(phase.workload, phase.config);
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
