// The posewire.v1.PoseWire service: converts wire messages to solver-core
// jobs and back. Stateless apart from its configuration; streaming sessions
// own their own state.
#ifndef POSEWIRE_SERVER_POSEWIRE_SERVICE_H_
#define POSEWIRE_SERVER_POSEWIRE_SERVICE_H_

#include <grpcpp/grpcpp.h>

#include "posewire/v1/posewire.grpc.pb.h"
#include "server/server_config.h"

namespace posewire::server {

class PoseWireService final : public posewire::v1::PoseWire::CallbackService {
 public:
  explicit PoseWireService(const ServerConfig& config);

  grpc::ServerUnaryReactor* GetInfo(
      grpc::CallbackServerContext* context,
      const posewire::v1::GetInfoRequest* request,
      posewire::v1::GetInfoResponse* response) override;

 private:
  // Built once: GetInfo's answer never changes while the server runs.
  posewire::v1::GetInfoResponse info_;
};

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_POSEWIRE_SERVICE_H_
