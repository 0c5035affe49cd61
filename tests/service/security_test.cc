// TLS, bearer-token authentication and Prometheus metrics, each against a
// real server started with the corresponding flags.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "grpc/health/v1/health.grpc.pb.h"
#include "tests/service/service_fixture.h"

namespace posewire::server {
namespace {

using ::testing::HasSubstr;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string TlsPath(const char* name) {
  return std::string(POSEWIRE_TEST_DATA_DIR) + "/tls/" + name;
}

// GET http://127.0.0.1:port/metrics with a plain socket.
std::string HttpGet(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return "";
  }
  const std::string request =
      "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  (void)!write(fd, request.data(), request.size());
  std::string response;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof(buffer))) > 0) response.append(buffer, n);
  close(fd);
  return response;
}

TEST(SecurityTest, BearerToken_RequiredForPoseWireButNotForHealth) {
  const std::string token_file = testing::TempDir() + "/tokens.txt";
  std::ofstream(token_file) << "# tokens\nsecret-one\n\nsecret-two\n";
  ServerConfig config;
  config.listen = "127.0.0.1:0";
  config.auth_token_file = token_file;
  auto server = PosewireServer::Start(config);
  ASSERT_TRUE(server.ok()) << server.status();
  auto channel =
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", (*server)->port()),
                          grpc::InsecureChannelCredentials());
  auto stub = v1::PoseWire::NewStub(channel);

  auto get_info = [&](const std::string& authorization) {
    grpc::ClientContext context;
    if (!authorization.empty())
      context.AddMetadata("authorization", authorization);
    v1::GetInfoResponse info;
    return stub->GetInfo(&context, {}, &info);
  };
  grpc::Status none = get_info("");
  EXPECT_EQ(none.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(none.error_message(), HasSubstr("Bearer"));
  EXPECT_EQ(get_info("Bearer wrong").error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(get_info("secret-one").error_code(),
            grpc::StatusCode::UNAUTHENTICATED);  // no "Bearer " scheme
  EXPECT_TRUE(get_info("Bearer secret-one").ok());
  EXPECT_TRUE(get_info("Bearer secret-two").ok());

  // Solve and Session are guarded too.
  {
    grpc::ClientContext context;
    v1::SolveResponse response;
    EXPECT_EQ(stub->Solve(&context, {}, &response).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
  }
  {
    grpc::ClientContext context;
    auto stream = stub->Session(&context);
    v1::SessionResponse response;
    EXPECT_FALSE(stream->Read(&response));
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  // Health stays open for load balancers and probes.
  auto health = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext context;
  grpc::health::v1::HealthCheckResponse response;
  EXPECT_TRUE(health->Check(&context, {}, &response).ok());
}

TEST(SecurityTest, EmptyOrMissingTokenFileRefusesToStart) {
  ServerConfig config;
  config.listen = "127.0.0.1:0";
  config.auth_token_file = testing::TempDir() + "/no-such-file";
  EXPECT_EQ(PosewireServer::Start(config).status().code(),
            absl::StatusCode::kNotFound);
  const std::string empty = testing::TempDir() + "/empty-tokens.txt";
  std::ofstream(empty) << "# nothing\n";
  config.auth_token_file = empty;
  auto server = PosewireServer::Start(config);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(server.status().message(), HasSubstr("holds no token"));
}

TEST(SecurityTest, Tls_TrustedClientConnectsAndPlaintextClientCannot) {
  ServerConfig config;
  config.listen = "127.0.0.1:0";
  config.tls_cert_file = TlsPath("server.crt");
  config.tls_key_file = TlsPath("server.key");
  auto server = PosewireServer::Start(config);
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string target = absl::StrCat("127.0.0.1:", (*server)->port());

  grpc::SslCredentialsOptions options;
  options.pem_root_certs = ReadFile(TlsPath("server.crt"));
  auto secure = v1::PoseWire::NewStub(
      grpc::CreateChannel(target, grpc::SslCredentials(options)));
  {
    grpc::ClientContext context;
    v1::GetInfoResponse info;
    grpc::Status status = secure->GetInfo(&context, {}, &info);
    EXPECT_TRUE(status.ok()) << status.error_message();
  }
  auto plain = v1::PoseWire::NewStub(
      grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(2));
  v1::GetInfoResponse info;
  EXPECT_FALSE(plain->GetInfo(&context, {}, &info).ok());

  config.tls_key_file.clear();
  EXPECT_EQ(PosewireServer::Start(config).status().code(),
            absl::StatusCode::kInvalidArgument);
}

class MetricsTest : public ServiceTest {
 protected:
  void Configure(ServerConfig& config) override {
    config.metrics_listen = "127.0.0.1:0";
  }
};

TEST_F(MetricsTest, CountsCallsByCodeAndTimesOperations) {
  v1::SolveRequest request;
  *request.add_clips() = WalkClip();
  v1::CharacterInput* c = request.add_characters();
  *c->mutable_skeleton()->mutable_skeleton() = WalkSkeleton();
  c->add_ops()->mutable_sample_clip()->mutable_sample()->set_clip("walk");
  for (int i = 0; i < 3; ++i) {
    grpc::ClientContext context;
    v1::SolveResponse response;
    ASSERT_TRUE(stub_->Solve(&context, request, &response).ok());
  }
  request.set_dt(-1.0f);
  grpc::ClientContext context;
  v1::SolveResponse response;
  EXPECT_FALSE(stub_->Solve(&context, request, &response).ok());

  ASSERT_GT(server_->metrics_port(), 0);
  const std::string page = HttpGet(server_->metrics_port(), "/metrics");
  EXPECT_THAT(page,
              HasSubstr("posewire_calls_total{code=\"OK\",rpc=\"Solve\"} 3"));
  EXPECT_THAT(
      page,
      HasSubstr(
          "posewire_calls_total{code=\"INVALID_ARGUMENT\",rpc=\"Solve\"} 1"));
  EXPECT_THAT(
      page,
      HasSubstr("posewire_operation_seconds_count{op=\"sample_clip\"} 3"));
  EXPECT_THAT(page, HasSubstr("posewire_active_sessions 0"));
}

}  // namespace
}  // namespace posewire::server
