// A running posewire server: the gRPC server with our service, the standard
// health service and reflection. Used by main.cc and by in-process tests.
#ifndef POSEWIRE_SERVER_TRANSPORT_SERVER_H_
#define POSEWIRE_SERVER_TRANSPORT_SERVER_H_

#include <grpcpp/grpcpp.h>

#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/service/server_config.h"
#include "server/transport/metrics.h"
#include "server/transport/posewire_service.h"

namespace posewire::server {

class PosewireServer {
 public:
  // Validates `config`, binds and starts serving. UNAVAILABLE when the
  // address cannot be bound, INVALID_ARGUMENT for a bad configuration.
  static absl::StatusOr<std::unique_ptr<PosewireServer>> Start(
      const ServerConfig& config);

  ~PosewireServer();

  // The bound port (the real one when the configuration asked for port 0).
  int port() const { return port_; }
  // The bound metrics HTTP port, or 0 when metrics are not served.
  int metrics_port() const { return metrics_->port(); }
  // Calls answered so far by RPC and final status (Metrics::CallSummary).
  std::string call_summary() const { return metrics_->CallSummary(); }
  // Streaming sessions open now; a session's memory is freed when it stops
  // counting here.
  int active_sessions() const { return service_->active_sessions(); }

  // Stops accepting calls, reports NOT_SERVING on health, lets in-flight
  // calls finish for up to `grace`, then cancels what is left. Returns when
  // the server has stopped. Safe to call more than once.
  void Shutdown(absl::Duration grace);

  // Blocks until the server has shut down.
  void Wait();

 private:
  PosewireServer() = default;

  // Declared before the service, which refers to it.
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<PoseWireService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  bool shut_down_ = false;
};

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_TRANSPORT_SERVER_H_
