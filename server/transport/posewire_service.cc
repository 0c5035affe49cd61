#include "server/transport/posewire_service.h"

#include <grpcpp/support/proto_buffer_reader.h>
#include <grpcpp/support/proto_buffer_writer.h>

#include <memory>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "proto/grpc_handoff.h"
#include "proto/version.h"
#include "server/ops/op_table.h"
#include "server/service/bake.h"
#include "server/service/learn_limits.h"
#include "server/service/query.h"
#include "server/service/session.h"
#include "server/service/session_snapshot.h"
#include "server/service/solve.h"
#include "spdlog/spdlog.h"

namespace posewire::server {
namespace {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

// Why a call should stop early, checked between units of work. The deadline
// comes first: gRPC also marks a call whose deadline passed as cancelled,
// and DEADLINE_EXCEEDED is the truer answer (and what the client sees).
absl::Status CheckStop(grpc::CallbackServerContext* context) {
  if (context->deadline() <= std::chrono::system_clock::now()) {
    return absl::DeadlineExceededError(
        "the call's deadline passed before the solve finished");
  }
  if (context->IsCancelled()) {
    return absl::CancelledError("the client cancelled the call");
  }
  return absl::OkStatus();
}

// The address part of gRPC's peer string ("ipv4:10.0.0.7:53211" ->
// "ipv4:10.0.0.7"): a client opening many connections gets a new port for
// each, so the port must not count.
std::string PeerKey(const std::string& peer) {
  if (absl::StartsWith(peer, "ipv4:") || absl::StartsWith(peer, "ipv6:")) {
    const size_t colon = peer.rfind(':');
    if (colon > 5) return peer.substr(0, colon);
  }
  return peer;
}

// Parses the serialised message in `bytes` into `message`; false when the
// bytes are truncated or not that message.
bool ParseFromBytes(const grpc::ByteBuffer& bytes,
                    google::protobuf::MessageLite* message) {
  grpc::ByteBuffer shared(bytes);  // shares the slices; the bytes are not
                                   // copied
  grpc::ProtoBufferReader reader(&shared);
  return message->ParseFromZeroCopyStream(&reader) && reader.status().ok();
}

// Parses a unary request's bytes into `message`; bytes that do not parse
// get an error that names the message type and says what to check.
absl::Status ParseRequest(const grpc::ByteBuffer& bytes,
                          google::protobuf::MessageLite* message) {
  if (ParseFromBytes(bytes, message)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "the request's ", bytes.Length(), " bytes do not parse as ",
      message->GetTypeName(),
      ": they are truncated or not protobuf (is the client built from "
      "proto/posewire/v1/posewire.proto?)"));
}

// Serialises `message` into `bytes`.
grpc::Status SerializeToBytes(const google::protobuf::MessageLite& message,
                              grpc::ByteBuffer* bytes) {
  bool own_buffer = false;
  return grpc::GenericSerialize<grpc::ProtoBufferWriter,
                                google::protobuf::MessageLite>(message, bytes,
                                                               &own_buffer);
}

// Debian's libprotobuf is built without TSan, and protobuf's headers give
// MapFieldBase two extra members when compiled with TSan: the library and a
// TSan build of this file disagree on the layout of every map field, and
// the library walks those fields when it destroys an arena (a crash, seen
// in SolveTest under scripts/sanitize.sh tsan). TSan builds therefore keep
// messages on the heap; every other build uses the arena.
#if POSEWIRE_TSAN
constexpr bool kMessagesOnArena = false;
#else
constexpr bool kMessagesOnArena = true;
#endif

// One request and its response, created together and freed together. On an
// arena a batch's many small sub-messages cost no heap allocation each, and
// freeing is one pass over the arena's blocks. The arena starts in a block
// of its own that Reset keeps: a frame of a few characters (a 31-joint
// pose is 1.2 KB each way) allocates nothing from the heap, where the
// arena's default first blocks (256 bytes, doubling) cost a malloc and a
// free each, every message. Larger messages spill into blocks the arena
// allocates and Reset frees.
inline constexpr size_t kArenaFirstBlockBytes = 16 << 10;

template <typename Request, typename Response>
class MessagePair {
 public:
  MessagePair() { Reset(); }

  // Frees both messages and makes new, empty ones.
  void Reset() {
    if constexpr (kMessagesOnArena) {
      arena_.Reset();
      request_ = google::protobuf::Arena::CreateMessage<Request>(&arena_);
      response_ = google::protobuf::Arena::CreateMessage<Response>(&arena_);
    } else {
      heap_request_ = std::make_unique<Request>();
      heap_response_ = std::make_unique<Response>();
      request_ = heap_request_.get();
      response_ = heap_response_.get();
    }
  }

  Request* request() { return request_; }
  Response* response() { return response_; }

 private:
  // Declared before the arena, which must not outlive it.
  alignas(16) char first_block_[kArenaFirstBlockBytes];
  google::protobuf::Arena arena_{first_block_, sizeof(first_block_)};
  std::unique_ptr<Request> heap_request_;
  std::unique_ptr<Response> heap_response_;
  Request* request_ = nullptr;
  Response* response_ = nullptr;
};

// The Session messages of the thread answering one. A message's request
// and response live only while it is answered (the response is serialized
// before its write starts), so one pair per thread serves every stream.
// With a pair per stream, 200 streams cycled through 200 arena blocks that
// each message found cold in the cache; a thread's own block stays warm.
MessagePair<v1::SessionRequest, v1::SessionResponse>& ThreadSessionMessages() {
  thread_local MessagePair<v1::SessionRequest, v1::SessionResponse> messages;
  return messages;
}

// Answers a session that is refused (over --max_sessions, or not
// authorised) with `status`, then goes away.
class RejectedSession final
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  explicit RejectedSession(const grpc::Status& status) {
    HandOffToGrpc(this);
    Finish(status);
  }
  void OnDone() override {
    TakeBackFromGrpc(this);
    delete this;
  }
};

// Compares without an early exit, so response time does not reveal how much
// of a guessed token was right.
bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= a[i] ^ b[i];
  return diff == 0;
}

}  // namespace

// One reactor per stream. Strictly one message in flight: read, solve on
// the pool, write, and only then read again. The session therefore never
// buffers more than one request and one response, whatever the client
// sends; HTTP/2 flow control pushes back on a client that runs ahead.
// Each message is parsed into the answering thread's MessagePair, reset
// once its answer is serialized.
class PoseWireService::SessionReactor final
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  SessionReactor(PoseWireService* service, uint64_t id, std::string peer)
      : service_(service),
        id_(id),
        peer_(std::move(peer)),
        session_(service->config_, service->metrics_,
                 &service->session_shared_) {
    service_->metrics_->SessionStarted();
    service_->TrackSession(this);
    ReadNext();
  }

  // The server drains (SIGTERM): once the message being answered, if any,
  // is written, the stream's last message is a hand-over snapshot and it
  // ends UNAVAILABLE. A session waiting for its client's next message
  // hands over at once; whatever that client sends meanwhile is not read
  // (it resends it after resuming). Thread-safe; once per reactor.
  void Drain() {
    {
      std::lock_guard<std::mutex> lock(drain_mutex_);
      if (drain_requested_) return;
      drain_requested_ = true;
      if (!awaiting_read_) return;  // the answer path hands over (ReadNext)
      handing_over_ = true;
    }
    // No task of this session runs while it waits for a read, so the
    // snapshot is taken on the pool, as messages are answered.
    service_->pool_->Submit([this] { WriteHandover(); });
  }

  void OnReadDone(bool ok) override {
    TakeBackFromGrpc(this);
    {
      std::lock_guard<std::mutex> lock(drain_mutex_);
      awaiting_read_ = false;
      // The hand-over is on its way and ends the stream: this message (if
      // one came) stays unanswered, and the client resends it elsewhere.
      if (handing_over_) return;
    }
    if (!ok) {
      // The client closed its side (or the stream broke): nothing is
      // pending, every message read has been answered.
      End(grpc::Status::OK);
      return;
    }
    // Small requests (and, under a batch-only load, large ones) are solved
    // right here (see RequestPlacement); either way one task per session
    // runs at a time, since the next read starts after the write.
    if (service_->placement_.SolveInline(request_bytes_.Length())) {
      AnswerMessage();
    } else {
      service_->pool_->Submit([this] { AnswerMessage(); });
    }
  }

  void OnWriteDone(bool ok) override {
    TakeBackFromGrpc(this);
    if (!ok) {
      final_code_ = absl::StatusCode::kCancelled;
      End(grpc::Status(grpc::StatusCode::CANCELLED,
                       "the stream closed before a response was sent"));
      return;
    }
    if (handover_written_) {
      spdlog::info("session {} handed over: the server is draining", id_);
      final_code_ = absl::StatusCode::kUnavailable;
      End(grpc::Status(
          grpc::StatusCode::UNAVAILABLE,
          "this server is shutting down: the session's state came in the "
          "last message (SessionSnapshot.handover); resume from it on "
          "another replica and resend the messages sent after the last "
          "answer"));
      return;
    }
    if (follow_up_pending_) {
      // A periodic snapshot after its frame's answer: written before the
      // next read, so one message is still all a session has in flight.
      follow_up_pending_ = false;
      HandOffToGrpc(this);
      StartWrite(&follow_up_bytes_);
      return;
    }
    ReadNext();
  }

  void OnCancel() override {
    TakeBackFromGrpc(this);
    final_code_ = absl::StatusCode::kCancelled;
  }

  void OnDone() override {
    TakeBackFromGrpc(this);
    const SessionStats& stats = session_.stats();
    spdlog::info(
        "session {} ended after {}: {} messages, {} frames, {} character "
        "frames, {} errors",
        id_, absl::FormatDuration(absl::Now() - started_), stats.messages,
        stats.frames, stats.character_frames, stats.errors);
    service_->metrics_->SessionEnded();
    service_->metrics_->CountCall("Session", final_code_);
    service_->UntrackSession(this);
    service_->ReleaseSession(peer_);
    delete this;
  }

 private:
  // StartRead and Finish, after handing the reactor to gRPC's threads
  // (HandOffToGrpc).
  void ReadNext() {
    bool hand_over = false;
    {
      std::lock_guard<std::mutex> lock(drain_mutex_);
      hand_over = handing_over_ = drain_requested_;
      awaiting_read_ = !hand_over;
    }
    if (hand_over) {
      WriteHandover();
      return;
    }
    HandOffToGrpc(this);
    StartRead(&request_bytes_);
  }

  // Writes the hand-over snapshot; OnWriteDone then ends the stream.
  void WriteHandover() {
    follow_up_.Clear();
    session_.WriteHandover(&follow_up_);
    if (!SerializeFollowUp()) return;
    handover_written_ = true;
    HandOffToGrpc(this);
    StartWrite(&follow_up_bytes_);
  }

  // follow_up_ into follow_up_bytes_; on failure, ends the stream INTERNAL
  // and returns false.
  bool SerializeFollowUp() {
    follow_up_bytes_.Clear();
    if (grpc::Status s = SerializeToBytes(follow_up_, &follow_up_bytes_);
        !s.ok()) {
      final_code_ = absl::StatusCode::kInternal;
      End(s);
      return false;
    }
    return true;
  }
  void End(const grpc::Status& status) {
    HandOffToGrpc(this);
    Finish(status);
  }

  // Parses the message read, answers it, and starts the answer's write.
  void AnswerMessage() {
    // Fresh: made so, and reset once each message's answer is serialized.
    MessagePair<v1::SessionRequest, v1::SessionResponse>& messages =
        ThreadSessionMessages();
    v1::SessionRequest* request = messages.request();
    v1::SessionResponse* response = messages.response();
    ++messages_read_;
    if (ParseFromBytes(request_bytes_, request)) {
      session_.Handle(*request, response);
    } else {
      AnswerUnparseable(response);
    }
    request_bytes_.Clear();
    if (response->has_frame() && response->frame().status().code() == 0) {
      int errors = 0;
      for (const auto& c : response->frame().characters()) {
        errors += c.status().code() != 0;
      }
      service_->metrics_->CountFrame(response->frame().characters_size(),
                                     errors);
    }
    response_bytes_.Clear();  // the last write is done with it
    const grpc::Status serialized =
        SerializeToBytes(*response, &response_bytes_);
    const bool answered_frame = response->has_frame();
    // Frees what this message grew now, rather than holding it on this
    // thread until its next Session message.
    messages.Reset();
    if (!serialized.ok()) {
      final_code_ = absl::StatusCode::kInternal;
      End(serialized);
      return;
    }
    if (answered_frame) {
      follow_up_.Clear();
      if (session_.TakeDueSnapshot(&follow_up_)) {
        if (!SerializeFollowUp()) return;
        follow_up_pending_ = true;
      }
    }
    HandOffToGrpc(this);  // the write's OnWriteDone runs on a gRPC thread
    StartWrite(&response_bytes_);
  }

  // The answer to bytes that do not parse as a SessionRequest: as for an
  // empty request, a Registered carrying the error, so the client still
  // gets one response per message and the session keeps what it holds.
  void AnswerUnparseable(v1::SessionResponse* response) {
    session_.CountUnparseable();
    v1::Registered* registered = response->mutable_registered();
    registered->mutable_status()->set_code(
        static_cast<int>(absl::StatusCode::kInvalidArgument));
    registered->mutable_status()->set_message(absl::StrCat(
        "message ", messages_read_, " of this stream (",
        request_bytes_.Length(),
        " bytes) does not parse as posewire.v1.SessionRequest: it is "
        "truncated or not protobuf; the session and its registrations are "
        "unchanged"));
  }

  PoseWireService* service_;
  const uint64_t id_;
  const std::string peer_;
  // Wire bytes of the registrations this session holds; only the pool
  // task touches it, and one runs at a time per session.
  const absl::Time started_ = absl::Now();
  // Written by gRPC callbacks that never run concurrently with OnDone.
  std::atomic<absl::StatusCode> final_code_{absl::StatusCode::kOk};
  server::Session session_;
  // Messages read so far, counting the current one; only the pool task
  // touches it.
  int64_t messages_read_ = 0;
  grpc::ByteBuffer request_bytes_;
  grpc::ByteBuffer response_bytes_;
  // A second answer to the message just read (a periodic snapshot after
  // its frame), written once the first is done; only the pool task sets
  // it, and OnWriteDone runs after that task.
  v1::SessionResponse follow_up_;
  grpc::ByteBuffer follow_up_bytes_;
  bool follow_up_pending_ = false;
  // Draining (Drain). awaiting_read_: a read is outstanding and no message
  // is being answered; drain_requested_: the server drains; handing_over_:
  // the hand-over write has started (or is about to), so a read that
  // completes is not answered.
  std::mutex drain_mutex_;
  bool awaiting_read_ = false;
  bool drain_requested_ = false;
  bool handing_over_ = false;
  // The write in flight is the hand-over; only the task that starts it
  // sets it, and OnWriteDone runs after that.
  bool handover_written_ = false;
};

PoseWireService::PoseWireService(const ServerConfig& config, Metrics* metrics,
                                 absl::flat_hash_set<std::string> auth_tokens)
    : config_(config),
      metrics_(metrics),
      auth_tokens_(std::move(auth_tokens)),
      skeletons_(config.skeleton_cache_size),
      session_shared_(config.skeleton_cache_size),
      pool_(std::make_unique<WorkerPool>(config.EffectiveThreads())),
      placement_(config.inline_request_bytes, config.batch_inline_quiet) {
  info_.set_version(kVersion);
  info_.set_git_revision(kGitRevision);
  info_.set_solver_threads(pool_->size());
  v1::Limits* limits = info_.mutable_limits();
  limits->set_max_message_bytes(config.max_message_bytes);
  limits->set_max_joints_per_skeleton(config.max_joints_per_skeleton);
  limits->set_max_characters_per_batch(config.max_characters_per_batch);
  limits->set_max_solver_iterations(config.max_solver_iterations);
  limits->set_max_sessions(config.max_sessions);
  limits->set_max_objects_per_session(config.max_session_objects);
  limits->set_skeleton_cache_size(config.skeleton_cache_size);
  limits->set_max_sessions_per_peer(config.max_sessions_per_peer);
  limits->set_max_session_bytes(config.max_session_bytes);
  limits->set_history_frames(config.history_frames);
  limits->set_history_window_seconds(config.history_window_seconds);
  limits->set_max_queries_per_request(config.max_queries_per_request);
  limits->set_max_snapshot_bytes(config.EffectiveSnapshotBytes());
  limits->set_snapshot_version(kSnapshotVersion);
  limits->set_max_bake_frames(config.max_bake_frames);
  limits->set_max_bake_bytes(config.max_bake_bytes);
  limits->set_max_concurrent_bakes(config.max_concurrent_bakes);
  // Exactly the op table; nothing that would answer
  // UNIMPLEMENTED.
  for (const std::string& op : SupportedOperations()) info_.add_operations(op);
  DescribeOperations({.max_solver_iterations = config.max_solver_iterations},
                     info_.mutable_operation_info());
}

PoseWireService::~PoseWireService() {
  // gRPC has run every session's OnDone, which releases its slot under this
  // lock, before the server owning this service is destroyed; taking the
  // lock makes that ordering visible to TSan, which cannot see gRPC's own.
  std::lock_guard<std::mutex> lock(sessions_mutex_);
}

grpc::Status PoseWireService::Authorize(grpc::CallbackServerContext* context,
                                        const char* rpc) const {
  if (auth_tokens_.empty()) return grpc::Status::OK;
  const auto& metadata = context->client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) {
    spdlog::info("{} from {} refused: no authorization metadata", rpc,
                 context->peer());
    return grpc::Status(
        grpc::StatusCode::UNAUTHENTICATED,
        "this server requires \"authorization: Bearer <token>\" "
        "metadata");
  }
  const absl::string_view value(it->second.data(), it->second.size());
  constexpr absl::string_view kPrefix = "Bearer ";
  if (!absl::StartsWith(value, kPrefix)) {
    spdlog::info("{} from {} refused: authorization is not \"Bearer ...\"", rpc,
                 context->peer());
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "the authorization metadata must read "
                        "\"Bearer <token>\"");
  }
  const absl::string_view token = value.substr(kPrefix.size());
  bool accepted = false;
  // Check every token, so timing does not tell which one nearly matched.
  for (const std::string& known : auth_tokens_) {
    accepted |= ConstantTimeEquals(token, known);
  }
  if (!accepted) {
    // Never the token itself, not even a wrong one: a wrong token is often
    // a real token for another server, or a real one with a typo.
    spdlog::info("{} from {} refused: bearer token not accepted", rpc,
                 context->peer());
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "the Bearer token is not accepted by this server");
  }
  return grpc::Status::OK;
}

grpc::ServerUnaryReactor* PoseWireService::GetInfo(
    grpc::CallbackServerContext* context, const v1::GetInfoRequest* /*request*/,
    v1::GetInfoResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const grpc::Status auth = Authorize(context, "GetInfo");
  if (auth.ok()) *response = info_;
  metrics_->CountCall("GetInfo",
                      static_cast<absl::StatusCode>(auth.error_code()));
  reactor->Finish(auth);
  return reactor;
}

grpc::ServerUnaryReactor* PoseWireService::Solve(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request_bytes,
    grpc::ByteBuffer* response_bytes) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (grpc::Status auth = Authorize(context, "Solve"); !auth.ok()) {
    metrics_->CountCall("Solve", absl::StatusCode::kUnauthenticated);
    reactor->Finish(auth);
    return reactor;
  }
  // Echoed in trailing metadata and in the log, so a client's error report
  // can be matched with the server's line.
  const uint64_t request_id = next_request_id_.fetch_add(1);
  context->AddTrailingMetadata("posewire-request-id", absl::StrCat(request_id));
  auto answer = [this, context, request_bytes, response_bytes, reactor,
                 request_id] {
    // Request and response die with this task.
    MessagePair<v1::SolveRequest, v1::SolveResponse> messages;
    v1::SolveRequest* request = messages.request();
    v1::SolveResponse* response = messages.response();
    absl::Status status = ParseRequest(*request_bytes, request);
    if (status.ok()) {
      status = server::Solve(
          *request, config_, skeletons_,
          [context] { return CheckStop(context); }, response, metrics_);
    }
    if (status.ok()) {
      if (grpc::Status s = SerializeToBytes(*response, response_bytes);
          !s.ok()) {
        status = absl::InternalError(s.error_message());
      }
    }
    metrics_->CountCall("Solve", status.code());
    if (!status.ok()) {
      spdlog::info("Solve request {} from {} failed: {}", request_id,
                   context->peer(), status.ToString());
    }
    HandOffToGrpc(reactor);
    reactor->Finish(ToGrpcStatus(status));
  };
  // As for Session messages.
  if (placement_.SolveInline(request_bytes->Length())) {
    answer();
  } else {
    pool_->Submit(std::move(answer));
  }
  return reactor;
}

template <typename Request, typename Response, typename Answer>
grpc::ServerUnaryReactor* PoseWireService::ServeOnPool(
    const char* rpc, grpc::CallbackServerContext* context,
    const grpc::ByteBuffer* request_bytes, grpc::ByteBuffer* response_bytes,
    Answer answer) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (grpc::Status auth = Authorize(context, rpc); !auth.ok()) {
    metrics_->CountCall(rpc, absl::StatusCode::kUnauthenticated);
    reactor->Finish(auth);
    return reactor;
  }
  pool_->Submit([this, rpc, context, request_bytes, response_bytes, reactor,
                 answer = std::move(answer)] {
    MessagePair<Request, Response> messages;
    absl::Status status = CheckStop(context);
    if (status.ok()) status = ParseRequest(*request_bytes, messages.request());
    if (status.ok()) status = answer(*messages.request(), messages.response());
    if (status.ok()) {
      if (grpc::Status s =
              SerializeToBytes(*messages.response(), response_bytes);
          !s.ok()) {
        status = absl::InternalError(s.error_message());
      }
    }
    metrics_->CountCall(rpc, status.code());
    if (!status.ok()) {
      spdlog::info("{} from {} failed: {}", rpc, context->peer(),
                   status.ToString());
    }
    HandOffToGrpc(reactor);
    reactor->Finish(ToGrpcStatus(status));
  });
  return reactor;
}

grpc::ServerUnaryReactor* PoseWireService::LearnLimits(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request_bytes,
    grpc::ByteBuffer* response_bytes) {
  return ServeOnPool<v1::LearnLimitsRequest, v1::LearnLimitsResponse>(
      "LearnLimits", context, request_bytes, response_bytes,
      [this](const v1::LearnLimitsRequest& request,
             v1::LearnLimitsResponse* response) {
        return server::LearnLimits(request, config_, skeletons_, response);
      });
}

// One reactor per Bake call. A worker solves a message's frames while gRPC
// sends the one before, so solving and sending overlap; at most two
// messages exist at once (one being sent, one solved or being solved), so
// a slow reader holds no solver thread and the call's memory stays at two
// messages. The last message goes out with the call's status
// (StartWriteAndFinish).
class PoseWireService::BakeReactor final
    : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  // The slot in active_bakes_ is taken; OnDone gives it back.
  BakeReactor(PoseWireService* service, grpc::CallbackServerContext* context,
              const grpc::ByteBuffer* request_bytes)
      : service_(service), context_(context), request_bytes_(request_bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    SolveNextLocked(0);
  }

  void OnWriteDone(bool ok) override {
    TakeBackFromGrpc(this);
    Perform([&] {
      std::lock_guard<std::mutex> lock(mutex_);
      writing_ = -1;
      if (!ok) {
        // The client cancelled or went away: nothing more can reach it.
        failure_ = absl::CancelledError("the client stopped reading the bake");
      }
      if (!failure_.ok()) {
        // A solve still running touches its slot: it ends the call instead.
        return solving_ < 0 ? GrpcCall::End(failure_) : GrpcCall{};
      }
      if (ready_ < 0) return GrpcCall{};
      const int slot = ready_;
      ready_ = -1;
      return WriteLocked(slot);
    }());
  }

  void OnDone() override {
    TakeBackFromGrpc(this);
    service_->active_bakes_.fetch_sub(1);
    delete this;
  }

 private:
  struct Slot {
    v1::BakeResponse response;
    grpc::ByteBuffer bytes;
    bool last = false;
  };

  // What to ask of gRPC, decided under the lock and asked after it is
  // released: gRPC's calls never run under our lock, so it orders nothing
  // of gRPC's own state (TSan would otherwise tie gRPC's internals to it).
  struct GrpcCall {
    enum Kind { kNone, kWrite, kWriteLast, kEnd } kind = kNone;
    int slot = -1;
    absl::Status status;
    static GrpcCall End(absl::Status status) {
      return {.kind = kEnd, .slot = -1, .status = std::move(status)};
    }
  };

  void Perform(const GrpcCall& call) {
    switch (call.kind) {
      case GrpcCall::kNone:
        return;
      case GrpcCall::kWrite:
        HandOffToGrpc(this);
        StartWrite(&slots_[call.slot].bytes);
        return;
      case GrpcCall::kWriteLast:
        service_->metrics_->CountCall("Bake", absl::StatusCode::kOk);
        HandOffToGrpc(this);
        StartWriteAndFinish(&slots_[call.slot].bytes, grpc::WriteOptions(),
                            grpc::Status::OK);
        return;
      case GrpcCall::kEnd:
        service_->metrics_->CountCall("Bake", call.status.code());
        spdlog::info("Bake from {} ended: {}", context_->peer(),
                     call.status.ToString());
        HandOffToGrpc(this);
        Finish(ToGrpcStatus(call.status));
        return;
    }
  }

  // Queues the solve of the next message into `slot`.
  void SolveNextLocked(int slot) {
    solving_ = slot;
    service_->pool_->Submit([this, slot] { Solve(slot); });
  }

  // On the pool, outside the lock: only this task touches slots_[slot].
  void Solve(int slot) {
    Slot& out = slots_[slot];
    absl::Status status = CheckStop(context_);
    if (status.ok() && run_ == nullptr) status = Begin();
    if (status.ok()) {
      out.response.Clear();
      status = run_->Next(&out.response);
    }
    if (status.ok()) {
      // gRPC is done with the bytes this slot held before (OnWriteDone).
      out.bytes.Clear();
      if (grpc::Status s = SerializeToBytes(out.response, &out.bytes);
          !s.ok()) {
        status = absl::InternalError(s.error_message());
      }
      out.last = run_->done();
    }
    Perform([&] {
      std::lock_guard<std::mutex> lock(mutex_);
      solving_ = -1;
      if (!status.ok() && failure_.ok()) failure_ = status;
      if (!failure_.ok()) {
        // With a write in flight, OnWriteDone ends the call.
        return writing_ < 0 ? GrpcCall::End(failure_) : GrpcCall{};
      }
      if (writing_ >= 0) {
        ready_ = slot;
        return GrpcCall{};
      }
      return WriteLocked(slot);
    }());
  }

  // Marks slots_[slot] as being sent and, unless it is the last, queues the
  // solve of the next message into the other slot; the caller then asks
  // gRPC to send it.
  GrpcCall WriteLocked(int slot) {
    writing_ = slot;
    if (slots_[slot].last) {
      return {.kind = GrpcCall::kWriteLast, .slot = slot, .status = {}};
    }
    if (solving_ < 0 && ready_ < 0) SolveNextLocked(1 - slot);
    return {.kind = GrpcCall::kWrite, .slot = slot, .status = {}};
  }

  // Parses the request (gRPC keeps its bytes until OnDone) and checks it.
  absl::Status Begin() {
    if (absl::Status s = ParseRequest(*request_bytes_, &request_); !s.ok()) {
      return s;
    }
    auto run =
        BakeRun::Start(request_, service_->config_, service_->skeletons_);
    if (!run.ok()) return run.status();
    run_ = *std::move(run);
    return absl::OkStatus();
  }

  PoseWireService* const service_;
  grpc::CallbackServerContext* const context_;
  const grpc::ByteBuffer* const request_bytes_;
  // The run reads the request until it goes, so it is declared after it.
  v1::BakeRequest request_;
  std::unique_ptr<BakeRun> run_;
  std::mutex mutex_;
  Slot slots_[2];
  // Under mutex_: the slot being solved, sent, or solved and waiting to be
  // sent (-1: none), and the error that ends the call.
  int solving_ = -1;
  int writing_ = -1;
  int ready_ = -1;
  absl::Status failure_;
};

grpc::ServerWriteReactor<grpc::ByteBuffer>* PoseWireService::Bake(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request) {
  // Refused calls finish at once on a reactor of their own.
  class Refused final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
   public:
    explicit Refused(const grpc::Status& status) {
      HandOffToGrpc(this);
      Finish(status);
    }
    void OnDone() override {
      TakeBackFromGrpc(this);
      delete this;
    }
  };
  if (grpc::Status auth = Authorize(context, "Bake"); !auth.ok()) {
    metrics_->CountCall("Bake", absl::StatusCode::kUnauthenticated);
    return new Refused(auth);
  }
  if (active_bakes_.fetch_add(1) >= config_.max_concurrent_bakes) {
    active_bakes_.fetch_sub(1);
    metrics_->CountCall("Bake", absl::StatusCode::kResourceExhausted);
    return new Refused(grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        absl::StrCat("this server already runs its limit of ",
                     config_.max_concurrent_bakes,
                     " bakes at once (GetInfo limits.max_concurrent_bakes); "
                     "retry when one ends, or on another replica")));
  }
  return new BakeReactor(this, context, request);
}

grpc::ServerUnaryReactor* PoseWireService::Query(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request_bytes,
    grpc::ByteBuffer* response_bytes) {
  return ServeOnPool<v1::QueryRequest, v1::QueryResult>(
      "Query", context, request_bytes, response_bytes,
      [this](const v1::QueryRequest& request, v1::QueryResult* response) {
        return server::AnswerQuery(request, config_, skeletons_, response);
      });
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>*
PoseWireService::Session(grpc::CallbackServerContext* context) {
  if (grpc::Status auth = Authorize(context, "Session"); !auth.ok()) {
    metrics_->CountCall("Session", absl::StatusCode::kUnauthenticated);
    return new RejectedSession(auth);
  }
  std::string peer = PeerKey(context->peer());
  if (grpc::Status admitted = AdmitSession(peer); !admitted.ok()) {
    spdlog::warn("session from {} refused: {}", context->peer(),
                 admitted.error_message());
    metrics_->CountCall("Session",
                        static_cast<absl::StatusCode>(admitted.error_code()));
    return new RejectedSession(admitted);
  }
  const uint64_t id = next_session_id_.fetch_add(1);
  spdlog::debug("session {} from {} started", id, context->peer());
  return new SessionReactor(this, id, std::move(peer));
}

void PoseWireService::TrackSession(SessionReactor* session) {
  std::lock_guard<std::mutex> lock(sessions_mutex_);
  live_sessions_.insert(session);
  // Admitted just before DrainSessions ran: it hands over at once.
  if (draining_) session->Drain();
}

void PoseWireService::UntrackSession(SessionReactor* session) {
  std::lock_guard<std::mutex> lock(sessions_mutex_);
  live_sessions_.erase(session);
}

int PoseWireService::DrainSessions() {
  std::lock_guard<std::mutex> lock(sessions_mutex_);
  draining_ = true;
  // Under the lock, so no reactor is deleted (OnDone untracks it first)
  // while it is asked to drain.
  for (SessionReactor* session : live_sessions_) session->Drain();
  return static_cast<int>(live_sessions_.size());
}

grpc::Status PoseWireService::AdmitSession(const std::string& peer) {
  std::lock_guard<std::mutex> lock(sessions_mutex_);
  if (draining_) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        "this server is shutting down; open the session on "
                        "another replica");
  }
  if (active_sessions_.load() >= config_.max_sessions) {
    return grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        absl::StrCat("this server already runs its limit of ",
                     config_.max_sessions,
                     " sessions (GetInfo limits.max_sessions); retry later "
                     "or on another replica"));
  }
  // Only peers holding sessions have an entry (ReleaseSession erases at 0),
  // so the map is bounded by --max_sessions.
  auto it = sessions_by_peer_.find(peer);
  const int held = it == sessions_by_peer_.end() ? 0 : it->second;
  if (config_.max_sessions_per_peer > 0 &&
      held >= config_.max_sessions_per_peer) {
    return grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        absl::StrCat("this client address already holds ", held,
                     " sessions, the server's per-peer limit "
                     "(--max_sessions_per_peer); close one first"));
  }
  ++sessions_by_peer_[peer];
  active_sessions_.fetch_add(1);
  return grpc::Status::OK;
}

void PoseWireService::ReleaseSession(const std::string& peer) {
  std::lock_guard<std::mutex> lock(sessions_mutex_);
  auto it = sessions_by_peer_.find(peer);
  if (it != sessions_by_peer_.end() && --it->second <= 0) {
    sessions_by_peer_.erase(it);
  }
  active_sessions_.fetch_sub(1);
}

}  // namespace posewire::server
