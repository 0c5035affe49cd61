#include "server/server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>

#include "absl/strings/str_cat.h"

namespace posewire::server {

absl::StatusOr<std::unique_ptr<PosewireServer>> PosewireServer::Start(
    const ServerConfig& config) {
  if (absl::Status status = config.Validate(); !status.ok()) return status;

  // Both are process-wide switches that must be set before a builder exists.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();

  auto server = std::unique_ptr<PosewireServer>(new PosewireServer());
  server->service_ = std::make_unique<PoseWireService>(config);

  grpc::ServerBuilder builder;
  builder.AddListeningPort(config.listen, grpc::InsecureServerCredentials(),
                           &server->port_);
  builder.RegisterService(server->service_.get());
  builder.SetMaxReceiveMessageSize(static_cast<int>(config.max_message_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(config.max_message_bytes));
  // gRPC enables SO_REUSEPORT by default, which lets a second server bind a
  // port that is already serving and silently split its traffic. A busy port
  // must be an error instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot listen on ", config.listen,
        ": the address is invalid or already in use"));
  }
  // The default health service only reports the "" service as SERVING;
  // clients that ask about ours by name must see it too.
  server->server_->GetHealthCheckService()->SetServingStatus(
      posewire::v1::PoseWire::service_full_name(), true);
  return server;
}

PosewireServer::~PosewireServer() { Shutdown(absl::ZeroDuration()); }

void PosewireServer::Shutdown(absl::Duration grace) {
  if (shut_down_) return;
  shut_down_ = true;
  // Tell load balancers first, so no new work is routed here.
  server_->GetHealthCheckService()->SetServingStatus(false);
  server_->Shutdown(absl::ToChronoTime(absl::Now() + grace));
  server_->Wait();
}

void PosewireServer::Wait() { server_->Wait(); }

}  // namespace posewire::server
