#include "server/posewire_service.h"

#include <utility>

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
class RejectedSession final
    : public grpc::ServerBidiReactor<v1::SessionRequest, v1::SessionResponse> {
 public:
  explicit RejectedSession(int limit) {
    Finish(grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        absl::StrCat("this server already runs its limit of ", limit,
                     " sessions (GetInfo limits.max_sessions); retry later "
                     "or on another replica")));
  }
  void OnDone() override { delete this; }
};

}  // namespace

// One reactor per stream. Strictly one message in flight: read, solve on
// the pool, write, and only then read again. The session therefore never
// buffers more than one request and one response, whatever the client
// sends; HTTP/2 flow control pushes back on a client that runs ahead.
class PoseWireService::SessionReactor final
    : public grpc::ServerBidiReactor<v1::SessionRequest, v1::SessionResponse> {
 public:
  SessionReactor(PoseWireService* service, uint64_t id)
      : service_(service), id_(id), session_(service->config_) {
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
      StartWrite(&response_);
    });
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED,
                          "the stream closed before a response was sent"));
      return;
    }
    StartRead(&request_);
  }

  void OnDone() override {
    const SessionStats& stats = session_.stats();
    spdlog::info(
        "session {} ended after {}: {} messages, {} frames, {} character "
        "frames, {} errors",
        id_, absl::FormatDuration(absl::Now() - started_), stats.messages,
        stats.frames, stats.character_frames, stats.errors);
    service_->active_sessions_.fetch_sub(1);
    delete this;
  }

 private:
  PoseWireService* service_;
  const uint64_t id_;
  const absl::Time started_ = absl::Now();
  server::Session session_;
  v1::SessionRequest request_;
  v1::SessionResponse response_;
};

PoseWireService::PoseWireService(const ServerConfig& config)
    : config_(config),
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

grpc::ServerUnaryReactor* PoseWireService::GetInfo(
    grpc::CallbackServerContext* context,
    const v1::GetInfoRequest* /*request*/, v1::GetInfoResponse* response) {
  *response = info_;
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* PoseWireService::Solve(
    grpc::CallbackServerContext* context, const v1::SolveRequest* request,
    v1::SolveResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  pool_->Submit([this, context, request, response, reactor] {
    const absl::Status status =
        server::Solve(*request, config_, skeletons_,
                      [context] { return CheckStop(context); }, response);
    if (!status.ok()) {
      response->Clear();
      spdlog::info("Solve from {} failed: {}", context->peer(),
                   status.ToString());
    }
    reactor->Finish(ToGrpcStatus(status));
  });
  return reactor;
}

grpc::ServerBidiReactor<v1::SessionRequest, v1::SessionResponse>*
PoseWireService::Session(grpc::CallbackServerContext* context) {
  if (active_sessions_.fetch_add(1) >= config_.max_sessions) {
    active_sessions_.fetch_sub(1);
    spdlog::warn("session from {} refused: {} sessions is the limit",
                 context->peer(), config_.max_sessions);
    return new RejectedSession(config_.max_sessions);
  }
  const uint64_t id = next_session_id_.fetch_add(1);
  spdlog::debug("session {} from {} started", id, context->peer());
  return new SessionReactor(this, id);
}

}  // namespace posewire::server
