#include "server/transport/server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/impl/server_builder_option.h>
#include <grpcpp/impl/server_builder_plugin.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace posewire::server {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path,
                                     absl::string_view flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat(flag, ": cannot read ", path));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// One token per line; blank lines and '#' comments ignored.
absl::StatusOr<absl::flat_hash_set<std::string>> ReadTokens(
    const std::string& path) {
  absl::flat_hash_set<std::string> tokens;
  if (path.empty()) return tokens;
  auto text = ReadFile(path, "--auth_token_file");
  if (!text.ok()) return text.status();
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line.front() == '#') continue;
    tokens.insert(std::string(line));
  }
  if (tokens.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--auth_token_file: ", path,
                     " holds no token; authentication would "
                     "refuse every call"));
  }
  return tokens;
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(
    const ServerConfig& config) {
  if (config.tls_cert_file.empty()) return grpc::InsecureServerCredentials();
  auto cert = ReadFile(config.tls_cert_file, "--tls_cert");
  if (!cert.ok()) return cert.status();
  auto key = ReadFile(config.tls_key_file, "--tls_key");
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({*key, *cert});
  return grpc::SslServerCredentials(options);
}

// Drops the reflection plugin from one builder. Reflection is registered
// process-wide, and gRPC's reflection service has no hook where our bearer
// token check could run; with authentication on it is therefore not served
// at all (calls get UNIMPLEMENTED) rather than served open. Clients of an
// authenticated server use the .proto files instead.
class WithoutReflection final : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments* /*args*/) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>*
                         plugins) override {
    std::erase_if(*plugins, [](const auto& plugin) {
      return plugin->name() == "proto_server_reflection";
    });
  }
};

int Milliseconds(absl::Duration d) {
  return static_cast<int>(
      std::min<int64_t>(absl::ToInt64Milliseconds(d), INT32_MAX));
}

// Server-side HTTP/2 keepalive, so a client that vanished without closing
// its connection is noticed and its sessions freed.
void SetKeepalive(const ServerConfig& config, grpc::ServerBuilder& builder) {
  const int time_ms = Milliseconds(config.keepalive_time);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, time_ms);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
                             Milliseconds(config.keepalive_timeout));
  // gRPC's ping policy caps pings sent without data in between (two, and
  // five minutes apart, by default). An idle session (registered, between
  // bursts of frames) must be probed for as long as it lives, so lift the
  // cap. On Debian's gRPC 1.51 keepalive pings already get through without
  // these two (KeepaliveTest passes with them removed); they guard against
  // versions where the policy does apply to keepalive.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  builder.AddChannelArgument(
      GRPC_ARG_HTTP2_MIN_SENT_PING_INTERVAL_WITHOUT_DATA_MS, time_ms);
}

}  // namespace

absl::StatusOr<std::unique_ptr<PosewireServer>> PosewireServer::Start(
    const ServerConfig& config) {
  if (absl::Status status = config.Validate(); !status.ok()) return status;

  // Both are process-wide switches that must be set before a builder exists.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();

  auto tokens = ReadTokens(config.auth_token_file);
  if (!tokens.ok()) return tokens.status();
  auto credentials = Credentials(config);
  if (!credentials.ok()) return credentials.status();
  auto metrics = Metrics::Create(config.metrics_listen);
  if (!metrics.ok()) return metrics.status();

  auto server = std::unique_ptr<PosewireServer>(new PosewireServer());
  server->metrics_ = *std::move(metrics);
  server->service_ = std::make_unique<PoseWireService>(
      config, server->metrics_.get(), *std::move(tokens));

  grpc::ServerBuilder builder;
  builder.AddListeningPort(config.listen, *credentials, &server->port_);
  builder.RegisterService(server->service_.get());
  builder.SetMaxReceiveMessageSize(static_cast<int>(config.max_message_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(config.max_message_bytes));
  // gRPC enables SO_REUSEPORT by default, which lets a second server bind a
  // port that is already serving and silently split its traffic. A busy port
  // must be an error instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  SetKeepalive(config, builder);
  if (!config.auth_token_file.empty()) {
    builder.SetOption(std::make_unique<WithoutReflection>());
  }
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", config.listen,
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
  // A server that failed to start has nothing to shut down.
  if (shut_down_ || server_ == nullptr) return;
  shut_down_ = true;
  // Tell load balancers first, so no new work is routed here.
  server_->GetHealthCheckService()->SetServingStatus(false);
  // Open sessions hand their state to their clients, to resume elsewhere,
  // instead of running until the grace period cuts them off.
  service_->DrainSessions();
  server_->Shutdown(absl::ToChronoTime(absl::Now() + grace));
  server_->Wait();
}

void PosewireServer::Wait() {
  if (server_ != nullptr) server_->Wait();
}

}  // namespace posewire::server
