#include "server/posewire_service.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/pipeline.h"
#include "server/session.h"
#include "server/solve.h"
#include "server/version.h"
#include "spdlog/spdlog.h"

namespace posewire::server {
namespace {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

// Why a call should stop early, checked between units of work.
absl::Status CheckStop(grpc::CallbackServerContext* context) {
  if (context->IsCancelled()) {
    return absl::CancelledError("the client cancelled the call");
  }
  if (context->deadline() <= std::chrono::system_clock::now()) {
    return absl::DeadlineExceededError(
        "the call's deadline passed before the solve finished");
  }
  return absl::OkStatus();
}

// Answers a session that would exceed --max_sessions, then goes away.
// Answers a session that is refused (over --max_sessions, or not
// authorised) with `status`, then goes away.
class RejectedSession final
    : public grpc::ServerBidiReactor<v1::SessionRequest, v1::SessionResponse> {
 public:
  explicit RejectedSession(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
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
class PoseWireService::SessionReactor final
    : public grpc::ServerBidiReactor<v1::SessionRequest, v1::SessionResponse> {
 public:
  SessionReactor(PoseWireService* service, uint64_t id)
      : service_(service),
        id_(id),
        session_(service->config_, service->metrics_) {
    service_->metrics_->SessionStarted();
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      // The client closed its side (or the stream broke): nothing is
      // pending, every message read has been answered.
      Finish(grpc::Status::OK);
      return;
    }
    service_->pool_->Submit([this] {
      response_.Clear();
      session_.Handle(request_, &response_);
      if (response_.has_frame() && response_.frame().status().code() == 0) {
        int errors = 0;
        for (const auto& c : response_.frame().characters()) {
          errors += c.status().code() != 0;
        }
        service_->metrics_->CountFrame(response_.frame().characters_size(),
                                       errors);
      }
      StartWrite(&response_);
    });
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      final_code_ = absl::StatusCode::kCancelled;
      Finish(grpc::Status(grpc::StatusCode::CANCELLED,
                          "the stream closed before a response was sent"));
      return;
    }
    StartRead(&request_);
  }

  void OnCancel() override { final_code_ = absl::StatusCode::kCancelled; }

  void OnDone() override {
    const SessionStats& stats = session_.stats();
    spdlog::info(
        "session {} ended after {}: {} messages, {} frames, {} character "
        "frames, {} errors",
        id_, absl::FormatDuration(absl::Now() - started_), stats.messages,
        stats.frames, stats.character_frames, stats.errors);
    service_->metrics_->SessionEnded();
    service_->metrics_->CountCall("Session", final_code_);
    service_->active_sessions_.fetch_sub(1);
    delete this;
  }

 private:
  PoseWireService* service_;
  const uint64_t id_;
  const absl::Time started_ = absl::Now();
  // Written by gRPC callbacks that never run concurrently with OnDone.
  std::atomic<absl::StatusCode> final_code_{absl::StatusCode::kOk};
  server::Session session_;
  v1::SessionRequest request_;
  v1::SessionResponse response_;
};

PoseWireService::PoseWireService(const ServerConfig& config, Metrics* metrics,
                                 absl::flat_hash_set<std::string> auth_tokens)
    : config_(config),
      metrics_(metrics),
      auth_tokens_(std::move(auth_tokens)),
      skeletons_(config.skeleton_cache_size),
      pool_(std::make_unique<WorkerPool>(config.EffectiveThreads())) {
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
  // Exactly what the pipeline dispatches; nothing that would answer
  // UNIMPLEMENTED.
  for (const std::string& op : SupportedOperations()) info_.add_operations(op);
}

PoseWireService::~PoseWireService() = default;

grpc::Status PoseWireService::Authorize(
    grpc::CallbackServerContext* context) const {
  if (auth_tokens_.empty()) return grpc::Status::OK;
  const auto& metadata = context->client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) {
    return grpc::Status(
        grpc::StatusCode::UNAUTHENTICATED,
        "this server requires \"authorization: Bearer <token>\" "
        "metadata");
  }
  const absl::string_view value(it->second.data(), it->second.size());
  constexpr absl::string_view kPrefix = "Bearer ";
  bool accepted = false;
  if (absl::StartsWith(value, kPrefix)) {
    const absl::string_view token = value.substr(kPrefix.size());
    // Check every token, so timing does not tell which one nearly matched.
    for (const std::string& known : auth_tokens_) {
      accepted |= ConstantTimeEquals(token, known);
    }
  }
  if (!accepted) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "the bearer token is not accepted by this server");
  }
  return grpc::Status::OK;
}

grpc::ServerUnaryReactor* PoseWireService::GetInfo(
    grpc::CallbackServerContext* context, const v1::GetInfoRequest* /*request*/,
    v1::GetInfoResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const grpc::Status auth = Authorize(context);
  if (auth.ok()) *response = info_;
  metrics_->CountCall("GetInfo",
                      static_cast<absl::StatusCode>(auth.error_code()));
  reactor->Finish(auth);
  return reactor;
}

grpc::ServerUnaryReactor* PoseWireService::Solve(
    grpc::CallbackServerContext* context, const v1::SolveRequest* request,
    v1::SolveResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (grpc::Status auth = Authorize(context); !auth.ok()) {
    metrics_->CountCall("Solve", absl::StatusCode::kUnauthenticated);
    reactor->Finish(auth);
    return reactor;
  }
  // Echoed in trailing metadata and in the log, so a client's error report
  // can be matched with the server's line.
  const uint64_t request_id = next_request_id_.fetch_add(1);
  context->AddTrailingMetadata("posewire-request-id", absl::StrCat(request_id));
  pool_->Submit([this, context, request, response, reactor, request_id] {
    const absl::Status status = server::Solve(
        *request, config_, skeletons_, [context] { return CheckStop(context); },
        response, metrics_);
    metrics_->CountCall("Solve", status.code());
    if (!status.ok()) {
      response->Clear();
      spdlog::info("Solve request {} from {} failed: {}", request_id,
                   context->peer(), status.ToString());
    }
    reactor->Finish(ToGrpcStatus(status));
  });
  return reactor;
}

grpc::ServerBidiReactor<v1::SessionRequest, v1::SessionResponse>*
PoseWireService::Session(grpc::CallbackServerContext* context) {
  if (grpc::Status auth = Authorize(context); !auth.ok()) {
    metrics_->CountCall("Session", absl::StatusCode::kUnauthenticated);
    return new RejectedSession(auth);
  }
  if (active_sessions_.fetch_add(1) >= config_.max_sessions) {
    active_sessions_.fetch_sub(1);
    spdlog::warn("session from {} refused: {} sessions is the limit",
                 context->peer(), config_.max_sessions);
    metrics_->CountCall("Session", absl::StatusCode::kResourceExhausted);
    return new RejectedSession(grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        absl::StrCat("this server already runs its limit of ",
                     config_.max_sessions,
                     " sessions (GetInfo limits.max_sessions); retry later "
                     "or on another replica")));
  }
  const uint64_t id = next_session_id_.fetch_add(1);
  spdlog::debug("session {} from {} started", id, context->peer());
  return new SessionReactor(this, id);
}

}  // namespace posewire::server
