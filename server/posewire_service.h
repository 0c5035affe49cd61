// The posewire.v1.PoseWire service on gRPC's callback API. Reactor methods
// only move messages; solving runs on a WorkerPool so gRPC's threads stay
// free to do I/O.
#ifndef POSEWIRE_SERVER_POSEWIRE_SERVICE_H_
#define POSEWIRE_SERVER_POSEWIRE_SERVICE_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>

#include "absl/container/flat_hash_set.h"
#include "posewire/v1/posewire.grpc.pb.h"
#include "server/metrics.h"
#include "server/server_config.h"
#include "server/skeleton_cache.h"
#include "server/worker_pool.h"

namespace posewire::server {

class PoseWireService final : public v1::PoseWire::CallbackService {
 public:
  // `metrics` must outlive the service. `auth_tokens` empty: no
  // authentication.
  PoseWireService(const ServerConfig& config, Metrics* metrics,
                  absl::flat_hash_set<std::string> auth_tokens);
  ~PoseWireService() override;

  grpc::ServerUnaryReactor* GetInfo(grpc::CallbackServerContext* context,
                                    const v1::GetInfoRequest* request,
                                    v1::GetInfoResponse* response) override;

  grpc::ServerUnaryReactor* Solve(grpc::CallbackServerContext* context,
                                  const v1::SolveRequest* request,
                                  v1::SolveResponse* response) override;

  grpc::ServerBidiReactor<v1::SessionRequest, v1::SessionResponse>* Session(
      grpc::CallbackServerContext* context) override;

  int active_sessions() const { return active_sessions_.load(); }

 private:
  class SessionReactor;

  // OK, or UNAUTHENTICATED when tokens are configured and the call's
  // "authorization: Bearer <token>" metadata is missing or wrong.
  grpc::Status Authorize(grpc::CallbackServerContext* context) const;

  const ServerConfig config_;
  Metrics* metrics_;
  const absl::flat_hash_set<std::string> auth_tokens_;
  // Built once: GetInfo's answer never changes while the server runs.
  v1::GetInfoResponse info_;
  SkeletonCache skeletons_;
  std::atomic<int> active_sessions_{0};
  std::atomic<uint64_t> next_session_id_{1};
  std::atomic<uint64_t> next_request_id_{1};
  // Declared last so it is destroyed first: its threads finish their tasks
  // while everything those tasks touch still exists.
  std::unique_ptr<WorkerPool> pool_;
};

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_POSEWIRE_SERVICE_H_
