// The server started in process on 127.0.0.1:0 and called over real gRPC:
// GetInfo, the standard health service and server reflection.
#include "server/transport/server.h"

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "posewire/v1/posewire.grpc.pb.h"
#include "proto/version.h"
#include "server/ops/op_table.h"
#include "server/transport/request_placement.h"

namespace posewire::server {
namespace {

using ::grpc::health::v1::HealthCheckRequest;
using ::grpc::health::v1::HealthCheckResponse;
using ::testing::Contains;
using ::testing::HasSubstr;

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.listen = "127.0.0.1:0";
    config_.threads = 3;
    config_.max_message_bytes = 1 << 20;
    config_.max_joints_per_skeleton = 512;
    config_.max_characters_per_batch = 64;
    config_.max_solver_iterations = 200;
    config_.max_sessions = 10;
    config_.max_sessions_per_peer = 3;
    config_.max_session_bytes = 5 << 20;
    config_.history_frames = 90;
    config_.history_window_seconds = 1.5;
    config_.max_queries_per_request = 300;
    auto server = PosewireServer::Start(config_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    ASSERT_GT(server_->port(), 0);
    channel_ = grpc::CreateChannel(absl::StrCat("127.0.0.1:", server_->port()),
                                   grpc::InsecureChannelCredentials());
  }

  ServerConfig config_;
  std::unique_ptr<PosewireServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
};

// The revision a build reports is the checkout's HEAD at build time, not at
// configure time: an incremental build after a commit must not report the
// commit before it.
TEST(BuildIdentity, RevisionIsTheCheckoutsHead) {
  if (std::string(POSEWIRE_REVISION_OVERRIDE) != "") {
    GTEST_SKIP() << "configured with -DPOSEWIRE_GIT_REVISION";
  }
  const std::string command =
      absl::StrCat("git -C '", POSEWIRE_SOURCE_DIR,
                   "' rev-parse --short=12 HEAD 2>/dev/null");
  FILE* git = popen(command.c_str(), "r");
  ASSERT_NE(git, nullptr);
  char line[64] = {};
  const bool read = std::fgets(line, sizeof(line), git) != nullptr;
  const int exit_status = pclose(git);
  if (!read || exit_status != 0) GTEST_SKIP() << "not a git checkout";
  std::string head(line);
  while (!head.empty() && (head.back() == '\n' || head.back() == '\r')) {
    head.pop_back();
  }
  EXPECT_EQ(std::string(kGitRevision), head);
}

TEST_F(ServerTest, GetInfo_ReportsVersionRevisionAndConfiguredLimits) {
  auto stub = posewire::v1::PoseWire::NewStub(channel_);
  grpc::ClientContext context;
  posewire::v1::GetInfoResponse info;
  grpc::Status status = stub->GetInfo(&context, {}, &info);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(info.version(), kVersion);
  EXPECT_FALSE(info.git_revision().empty());
  EXPECT_EQ(info.solver_threads(), 3u);
  EXPECT_EQ(info.limits().max_message_bytes(), 1u << 20);
  EXPECT_EQ(info.limits().max_joints_per_skeleton(), 512u);
  EXPECT_EQ(info.limits().max_characters_per_batch(), 64u);
  EXPECT_EQ(info.limits().max_solver_iterations(), 200u);
  EXPECT_EQ(info.limits().max_sessions(), 10u);
  EXPECT_EQ(info.limits().max_sessions_per_peer(), 3u);
  EXPECT_EQ(info.limits().max_session_bytes(), 5u << 20);
  EXPECT_EQ(info.limits().history_frames(), 90u);
  EXPECT_EQ(info.limits().history_window_seconds(), 1.5);
  EXPECT_EQ(info.limits().max_queries_per_request(), 300u);
  // Exactly the operations the pipeline dispatches, nothing that would
  // answer UNIMPLEMENTED.
  EXPECT_THAT(std::vector<std::string>(info.operations().begin(),
                                       info.operations().end()),
              ::testing::ElementsAreArray(SupportedOperations()));
  EXPECT_THAT(info.operations(), Contains("blend"));
}

TEST_F(ServerTest, Health_ServerAndPoseWireServiceAreServing) {
  auto stub = grpc::health::v1::Health::NewStub(channel_);
  for (const std::string service : {"", "posewire.v1.PoseWire"}) {
    grpc::ClientContext context;
    HealthCheckRequest request;
    request.set_service(service);
    HealthCheckResponse response;
    grpc::Status status = stub->Check(&context, request, &response);
    ASSERT_TRUE(status.ok()) << service << ": " << status.error_message();
    EXPECT_EQ(response.status(), HealthCheckResponse::SERVING) << service;
  }
}

TEST_F(ServerTest, Health_UnknownServiceIsNotFound) {
  auto stub = grpc::health::v1::Health::NewStub(channel_);
  grpc::ClientContext context;
  HealthCheckRequest request;
  request.set_service("no.such.Service");
  HealthCheckResponse response;
  grpc::Status status = stub->Check(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(ServerTest, Reflection_ListsServicesAndDescribesPoseWire) {
  using grpc::reflection::v1alpha::ServerReflection;
  using grpc::reflection::v1alpha::ServerReflectionRequest;
  using grpc::reflection::v1alpha::ServerReflectionResponse;
  auto stub = ServerReflection::NewStub(channel_);
  grpc::ClientContext context;
  auto stream = stub->ServerReflectionInfo(&context);

  ServerReflectionRequest list;
  list.set_list_services("");
  ASSERT_TRUE(stream->Write(list));
  ServerReflectionResponse listed;
  ASSERT_TRUE(stream->Read(&listed));
  std::vector<std::string> names;
  for (const auto& service : listed.list_services_response().service()) {
    names.push_back(service.name());
  }
  EXPECT_THAT(names, Contains("posewire.v1.PoseWire"));
  EXPECT_THAT(names, Contains("grpc.health.v1.Health"));

  ServerReflectionRequest describe;
  describe.set_file_containing_symbol("posewire.v1.PoseWire");
  ASSERT_TRUE(stream->Write(describe));
  ServerReflectionResponse described;
  ASSERT_TRUE(stream->Read(&described));
  ASSERT_TRUE(described.has_file_descriptor_response());
  ASSERT_GT(described.file_descriptor_response().file_descriptor_proto_size(),
            0);
  // The descriptor is the real compiled contract, so it names the RPC.
  EXPECT_THAT(described.file_descriptor_response().file_descriptor_proto(0),
              HasSubstr("GetInfo"));

  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(ServerTest, Shutdown_RefusesNewCallsAfterwards) {
  server_->Shutdown(absl::Seconds(1));
  auto stub = posewire::v1::PoseWire::NewStub(channel_);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(2));
  posewire::v1::GetInfoResponse info;
  grpc::Status status = stub->GetInfo(&context, {}, &info);
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST(ServerStartTest, InvalidConfigurationIsRejectedWithTheFlagName) {
  ServerConfig config;
  config.listen = "127.0.0.1:0";
  config.threads = -1;
  auto server = PosewireServer::Start(config);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(server.status().message(), HasSubstr("--threads"));

  config.threads = 0;
  config.max_message_bytes = 10;
  server = PosewireServer::Start(config);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(server.status().message(), HasSubstr("--max_message_bytes"));

  config.max_message_bytes = ServerConfig{}.max_message_bytes;
  for (int64_t bytes : {int64_t{-1}, int64_t{1} << 21}) {
    config.inline_request_bytes = bytes;
    server = PosewireServer::Start(config);
    EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(server.status().message(), HasSubstr("--inline_request_bytes"));
  }

  config.inline_request_bytes = ServerConfig{}.inline_request_bytes;
  config.batch_inline_quiet = absl::Milliseconds(-1);
  server = PosewireServer::Start(config);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(server.status().message(), HasSubstr("--batch_inline_quiet"));
}

// Small requests are always solved inline; large ones only once small ones
// have been absent for the quiet time, and never with inline_bytes 0 or an
// infinite quiet time.
TEST(RequestPlacementTest, LargeRequestsGoInlineOnlyWhenSmallOnesStayAway) {
  constexpr size_t kSmall = 1000, kLarge = 100000;
  RequestPlacement fresh(8192, absl::Hours(1));
  // No small request yet: a batch-only server solves inline from the start.
  EXPECT_TRUE(fresh.SolveInline(kLarge));
  EXPECT_TRUE(fresh.SolveInline(kSmall));
  EXPECT_FALSE(fresh.SolveInline(kLarge));  // a small one came just now
  EXPECT_TRUE(fresh.SolveInline(8192));     // the limit is inclusive
  EXPECT_FALSE(fresh.SolveInline(8193));

  RequestPlacement quick(8192, absl::Milliseconds(20));
  EXPECT_TRUE(quick.SolveInline(kSmall));
  EXPECT_FALSE(quick.SolveInline(kLarge));
  absl::SleepFor(absl::Milliseconds(60));
  EXPECT_TRUE(quick.SolveInline(kLarge));

  RequestPlacement always(8192, absl::ZeroDuration());
  EXPECT_TRUE(always.SolveInline(kSmall));
  EXPECT_TRUE(always.SolveInline(kLarge));

  RequestPlacement never(8192, absl::InfiniteDuration());
  EXPECT_FALSE(never.SolveInline(kLarge));
  EXPECT_TRUE(never.SolveInline(kSmall));

  RequestPlacement pool_only(0, absl::ZeroDuration());
  EXPECT_FALSE(pool_only.SolveInline(0));
  EXPECT_FALSE(pool_only.SolveInline(kLarge));
}

TEST(ServerStartTest, PortInUseIsUnavailable) {
  ServerConfig config;
  config.listen = "127.0.0.1:0";
  auto first = PosewireServer::Start(config);
  ASSERT_TRUE(first.ok()) << first.status();
  config.listen = absl::StrCat("127.0.0.1:", (*first)->port());
  auto second = PosewireServer::Start(config);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(second.status().message(), HasSubstr("cannot listen"));
}

}  // namespace
}  // namespace posewire::server
