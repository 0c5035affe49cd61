// The posewire.v1.PoseWire service on gRPC's callback API. Reactor methods
// only move messages; solving runs on a WorkerPool so gRPC's threads stay
// free to do I/O.
#ifndef POSEWIRE_SERVER_TRANSPORT_POSEWIRE_SERVICE_H_
#define POSEWIRE_SERVER_TRANSPORT_POSEWIRE_SERVICE_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "posewire/v1/posewire.grpc.pb.h"
#include "server/service/server_config.h"
#include "server/service/session.h"
#include "server/service/skeleton_cache.h"
#include "server/transport/metrics.h"
#include "server/transport/request_placement.h"
#include "server/transport/worker_pool.h"

namespace posewire::server {

// Solve, Session, LearnLimits, Bake and Query are "raw" methods: gRPC hands
// over the request bytes and the service parses them itself, into a protobuf
// Arena. gRPC's own parsing answers unparseable bytes with a bare UNIMPLEMENTED
// (unary) or ends a stream as if the client had closed it; ours answers
// INVALID_ARGUMENT saying what was wrong, and a session goes on.
using PoseWireCallbackBase = v1::PoseWire::WithCallbackMethod_GetInfo<
    v1::PoseWire::WithRawCallbackMethod_Solve<
        v1::PoseWire::WithRawCallbackMethod_Session<
            v1::PoseWire::WithRawCallbackMethod_LearnLimits<
                v1::PoseWire::WithRawCallbackMethod_Bake<
                    v1::PoseWire::WithRawCallbackMethod_Query<
                        v1::PoseWire::Service>>>>>>;

class PoseWireService final : public PoseWireCallbackBase {
 public:
  // `metrics` must outlive the service. `auth_tokens` empty: no
  // authentication.
  PoseWireService(const ServerConfig& config, Metrics* metrics,
                  absl::flat_hash_set<std::string> auth_tokens);
  ~PoseWireService() override;

  grpc::ServerUnaryReactor* GetInfo(grpc::CallbackServerContext* context,
                                    const v1::GetInfoRequest* request,
                                    v1::GetInfoResponse* response) override;

  // `request` holds a serialised posewire.v1.SolveRequest, `response`
  // receives a serialised posewire.v1.SolveResponse.
  grpc::ServerUnaryReactor* Solve(grpc::CallbackServerContext* context,
                                  const grpc::ByteBuffer* request,
                                  grpc::ByteBuffer* response) override;

  // Serialised posewire.v1.LearnLimitsRequest in, LearnLimitsResponse out.
  // Runs on the worker pool: learning reads every key of every clip. The
  // messages live in the task, so no thread but the worker touches them.
  grpc::ServerUnaryReactor* LearnLimits(grpc::CallbackServerContext* context,
                                        const grpc::ByteBuffer* request,
                                        grpc::ByteBuffer* response) override;

  // Serialised posewire.v1.QueryRequest in, QueryResult out, on the worker
  // pool (a query over many characters converts their frames and hitboxes).
  grpc::ServerUnaryReactor* Query(grpc::CallbackServerContext* context,
                                  const grpc::ByteBuffer* request,
                                  grpc::ByteBuffer* response) override;

  // A serialised posewire.v1.BakeRequest in, BakeResponse messages out, one
  // at a time: a worker solves the next message's frames only once gRPC has
  // sent the last, so a slow reader holds no solver thread and the call
  // never buffers more than one message.
  grpc::ServerWriteReactor<grpc::ByteBuffer>* Bake(
      grpc::CallbackServerContext* context,
      const grpc::ByteBuffer* request) override;

  // Carries serialised SessionRequest and SessionResponse messages.
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Session(
      grpc::CallbackServerContext* context) override;

  int active_sessions() const { return active_sessions_.load(); }

  // Before the server shuts down: refuses new sessions (UNAVAILABLE) and
  // has every open one hand over (SessionSnapshot.handover, then
  // UNAVAILABLE) once its current message is answered. Returns how many
  // sessions were open.
  int DrainSessions();

 private:
  class SessionReactor;
  class BakeReactor;

  // A unary raw method answered on the worker pool: the messages live in
  // the task (so no thread but the worker touches them), parsed and
  // serialised there; `answer(request, response)` fills the response.
  // `rpc` names the method in metrics and logs.
  template <typename Request, typename Response, typename Answer>
  grpc::ServerUnaryReactor* ServeOnPool(const char* rpc,
                                        grpc::CallbackServerContext* context,
                                        const grpc::ByteBuffer* request_bytes,
                                        grpc::ByteBuffer* response_bytes,
                                        Answer answer);

  // OK, or UNAUTHENTICATED when tokens are configured and the call's
  // "authorization: Bearer <token>" metadata is missing or wrong. `rpc`
  // names the method in the log line of a refusal, which never holds the
  // token.
  grpc::Status Authorize(grpc::CallbackServerContext* context,
                         const char* rpc) const;

  // Takes a session slot for `peer` (see PeerKey), or RESOURCE_EXHAUSTED
  // naming the limit (--max_sessions or --max_sessions_per_peer) that is
  // full. Every OK is paired with one ReleaseSession.
  grpc::Status AdmitSession(const std::string& peer);
  void ReleaseSession(const std::string& peer);
  // The open sessions, for DrainSessions.
  void TrackSession(SessionReactor* session);
  void UntrackSession(SessionReactor* session);

  const ServerConfig config_;
  Metrics* metrics_;
  const absl::flat_hash_set<std::string> auth_tokens_;
  // Built once: GetInfo's answer never changes while the server runs.
  v1::GetInfoResponse info_;
  SkeletonCache skeletons_;
  // What sessions share by content (skeletons, rigs, clips).
  SessionShared session_shared_;
  // Sessions are admitted and released under the mutex, so the global and
  // per-peer counts can never disagree; the atomic lets active_sessions()
  // read without it.
  std::mutex sessions_mutex_;
  absl::flat_hash_map<std::string, int> sessions_by_peer_;
  absl::flat_hash_set<SessionReactor*> live_sessions_;
  bool draining_ = false;
  std::atomic<int> active_sessions_{0};
  // Bake calls running (--max_concurrent_bakes).
  std::atomic<int> active_bakes_{0};
  std::atomic<uint64_t> next_session_id_{1};
  std::atomic<uint64_t> next_request_id_{1};
  // Declared last so it is destroyed first: its threads finish their tasks
  // while everything those tasks touch still exists.
  std::unique_ptr<WorkerPool> pool_;
  RequestPlacement placement_;
};

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_TRANSPORT_POSEWIRE_SERVICE_H_
