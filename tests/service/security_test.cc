// TLS with a certificate authority made by the test, bearer-token
// authentication on every RPC but health, the per-peer and per-session
// limits that keep one client from taking the server's memory, and that no
// token ever reaches the log; each against a real server started with the
// corresponding configuration.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"
#include "tests/service/http_get.h"
#include "tests/service/service_fixture.h"

namespace posewire::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Stream =
    grpc::ClientReaderWriter<v1::SessionRequest, v1::SessionResponse>;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs a shell command quietly; true when it exits 0.
bool Shell(const std::string& command) {
  return std::system((command + " >/dev/null 2>&1").c_str()) == 0;
}

// A certificate authority and a server certificate it signed, made with the
// openssl command line in a fresh directory: nothing secret is committed,
// and the chain is the shape a real deployment has (the client trusts the
// CA, not the server's own certificate).
struct TestPki {
  std::string dir;
  bool ok = false;

  std::string Path(const char* name) const { return dir + "/" + name; }

  // A server configuration on 127.0.0.1:0 serving this PKI's certificate.
  ServerConfig TlsServer() const {
    ServerConfig config;
    config.listen = "127.0.0.1:0";
    config.tls_cert_file = Path("server.crt");
    config.tls_key_file = Path("server.key");
    return config;
  }

  // `tag` keeps directories of several PKIs in one test apart.
  explicit TestPki(const std::string& tag) {
    dir = absl::StrCat(testing::TempDir(), "/pki-", tag, "-", getpid());
    const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1";
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    std::ofstream(Path("server.ext"))
        << "subjectAltName=DNS:localhost,IP:127.0.0.1\n"
           "basicConstraints=critical,CA:FALSE\n"
           "keyUsage=critical,digitalSignature,keyEncipherment\n"
           "extendedKeyUsage=serverAuth\n";
    ok = !error &&
         Shell("cd " + dir + " && openssl req -x509 " + ec +
               " -nodes -keyout ca.key -out ca.crt -days 2"
               " -subj '/CN=posewire test CA " +
               tag +
               "'"
               " -addext basicConstraints=critical,CA:TRUE"
               " -addext keyUsage=critical,keyCertSign,cRLSign") &&
         Shell("cd " + dir + " && openssl req " + ec +
               " -nodes -keyout server.key -out server.csr"
               " -subj /CN=localhost") &&
         Shell("cd " + dir +
               " && openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key"
               " -CAcreateserial -days 2 -extfile server.ext -out server.crt");
  }
};

grpc::Status CallGetInfo(v1::PoseWire::Stub& stub,
                         const std::string& authorization = "") {
  grpc::ClientContext context;
  if (!authorization.empty()) {
    context.AddMetadata("authorization", authorization);
  }
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(10));
  v1::GetInfoResponse info;
  return stub.GetInfo(&context, {}, &info);
}

// A valid one-character Solve: the walk skeleton at rest, no ops.
v1::SolveRequest RestSolve() {
  v1::SolveRequest request;
  *request.add_characters()->mutable_skeleton()->mutable_skeleton() =
      ServiceTest::WalkSkeletonForTests();
  return request;
}

grpc::Status CallSolve(v1::PoseWire::Stub& stub,
                       const std::string& authorization,
                       const v1::SolveRequest& request = RestSolve()) {
  grpc::ClientContext context;
  if (!authorization.empty()) {
    context.AddMetadata("authorization", authorization);
  }
  v1::SolveResponse response;
  return stub.Solve(&context, request, &response);
}

// Opens a Session and registers the walk skeleton: the stream's final
// status when the server refuses it, OK when the registration is answered.
grpc::Status CallSession(v1::PoseWire::Stub& stub,
                         const std::string& authorization) {
  grpc::ClientContext context;
  if (!authorization.empty()) {
    context.AddMetadata("authorization", authorization);
  }
  auto stream = stub.Session(&context);
  v1::SessionRequest request;
  request.mutable_register_skeleton()->set_id("cmu");
  *request.mutable_register_skeleton()->mutable_skeleton() =
      ServiceTest::WalkSkeletonForTests();
  v1::SessionResponse response;
  stream->Write(request);
  const bool answered = stream->Read(&response);
  stream->WritesDone();
  const grpc::Status status = stream->Finish();
  if (answered && response.registered().status().code() != 0) {
    return grpc::Status(grpc::StatusCode::INTERNAL, "registration failed");
  }
  return status;
}

// One ServerReflectionInfo exchange (list services).
grpc::Status CallReflection(const std::shared_ptr<grpc::Channel>& channel,
                            const std::string& authorization) {
  using grpc::reflection::v1alpha::ServerReflection;
  auto stub = ServerReflection::NewStub(channel);
  grpc::ClientContext context;
  if (!authorization.empty()) {
    context.AddMetadata("authorization", authorization);
  }
  auto stream = stub->ServerReflectionInfo(&context);
  grpc::reflection::v1alpha::ServerReflectionRequest request;
  request.set_list_services("");
  grpc::reflection::v1alpha::ServerReflectionResponse response;
  stream->Write(request);
  stream->Read(&response);
  stream->WritesDone();
  return stream->Finish();
}

grpc::Status CallHealth(const std::shared_ptr<grpc::Channel>& channel) {
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext context;
  grpc::health::v1::HealthCheckResponse response;
  return stub->Check(&context, {}, &response);
}

class AuthTest : public ServiceTest {
 protected:
  static constexpr const char* kToken = "pw-7f3e9c1a-token-one";
  static constexpr const char* kOtherToken = "pw-0b5d2e8f-token-two";
  // Close to a real one, as a typo or a stale token would be.
  static constexpr const char* kWrongToken = "pw-7f3e9c1a-token-onf";

  void Configure(ServerConfig& config) override {
    const std::string file = testing::TempDir() + "/auth-tokens.txt";
    std::ofstream(file) << "# accepted tokens\n"
                        << kToken << "\n\n"
                        << kOtherToken << "\n";
    config.auth_token_file = file;
  }
};

TEST_F(AuthTest, EveryPoseWireRpcRefusesMissingOrWrongTokens) {
  const std::vector<std::string> refused = {
      "",                                    // no metadata at all
      absl::StrCat("Bearer ", kWrongToken),  // wrong token
      kToken,                                // right token, no scheme
      absl::StrCat("Basic ", kToken),        // another scheme
      absl::StrCat("Bearer ", kToken, "x"),  // the token and more
      "Bearer ",                             // empty token
  };
  for (const std::string& authorization : refused) {
    SCOPED_TRACE(absl::StrCat("authorization: '", authorization, "'"));
    const grpc::Status info = CallGetInfo(*stub_, authorization);
    EXPECT_EQ(info.error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(CallSolve(*stub_, authorization).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(CallSession(*stub_, authorization).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    // The message says what to send, and never echoes what was sent.
    EXPECT_THAT(info.error_message(), HasSubstr("Bearer"));
    EXPECT_THAT(info.error_message(), Not(HasSubstr(kToken)));
    EXPECT_THAT(info.error_message(), Not(HasSubstr(kWrongToken)));
  }
  // Refused sessions never took a slot.
  EXPECT_EQ(server_->active_sessions(), 0);
}

TEST_F(AuthTest, EveryPoseWireRpcAcceptsEachConfiguredToken) {
  for (const char* token : {kToken, kOtherToken}) {
    const std::string authorization = absl::StrCat("Bearer ", token);
    EXPECT_TRUE(CallGetInfo(*stub_, authorization).ok());
    EXPECT_TRUE(CallSolve(*stub_, authorization).ok());
    EXPECT_TRUE(CallSession(*stub_, authorization).ok());
  }
}

TEST_F(AuthTest, HealthStaysOpenAndReflectionIsNotServed) {
  // Load balancers and orchestrators probe health without credentials.
  EXPECT_TRUE(CallHealth(channel_).ok());
  // gRPC's reflection service cannot check our token, so an authenticated
  // server does not serve it at all, with or without a token.
  EXPECT_EQ(CallReflection(channel_, "").error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_EQ(
      CallReflection(channel_, absl::StrCat("Bearer ", kToken)).error_code(),
      grpc::StatusCode::UNIMPLEMENTED);
}

TEST(SecurityTest, WithoutTokensReflectionIsServed) {
  ServerConfig config;
  config.listen = "127.0.0.1:0";
  auto server = PosewireServer::Start(config);
  ASSERT_TRUE(server.ok()) << server.status();
  auto channel =
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", (*server)->port()),
                          grpc::InsecureChannelCredentials());
  EXPECT_TRUE(CallReflection(channel, "").ok());
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

// Captures everything spdlog's default logger writes, at trace level, for
// the life of the object; then puts the previous logger back.
class CapturedLog {
 public:
  CapturedLog() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(stream_);
    auto logger = std::make_shared<spdlog::logger>("captured", sink);
    logger->set_level(spdlog::level::trace);
    spdlog::set_default_logger(logger);
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  std::string text() {
    spdlog::default_logger()->flush();
    return stream_.str();
  }

 private:
  std::shared_ptr<spdlog::logger> previous_;
  std::ostringstream stream_;
};

TEST(SecurityTest, NoTokenIsEverLogged_NotEvenOnRefusalAtTraceLevel) {
  constexpr const char* kToken = "pw-9d41c6b7-never-logged";
  constexpr const char* kWrong = "pw-9d41c6b7-never-loggee";
  CapturedLog log;
  {
    ServerConfig config;
    config.listen = "127.0.0.1:0";
    config.auth_token_file = testing::TempDir() + "/log-tokens.txt";
    std::ofstream(config.auth_token_file) << kToken << "\n";
    auto server = PosewireServer::Start(config);
    ASSERT_TRUE(server.ok()) << server.status();
    auto stub = v1::PoseWire::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", (*server)->port()),
                            grpc::InsecureChannelCredentials()));
    const std::string good = absl::StrCat("Bearer ", kToken);
    for (const std::string& authorization :
         {good, absl::StrCat("Bearer ", kWrong), std::string(kToken),
          std::string()}) {
      (void)CallGetInfo(*stub, authorization);
      (void)CallSolve(*stub, authorization);
      (void)CallSession(*stub, authorization);
    }
    // A failing Solve and a session's start and end log at info and debug.
    v1::SolveRequest bad = RestSolve();
    bad.set_dt(-1);
    EXPECT_EQ(CallSolve(*stub, good, bad).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT);
    (*server)->Shutdown(absl::ZeroDuration());
  }
  const std::string text = log.text();
  // The capture saw the refusals and the session lines, so silence below
  // means the token was not written, not that nothing was.
  EXPECT_THAT(text, HasSubstr("refused: bearer token not accepted"));
  EXPECT_THAT(text, HasSubstr("refused: no authorization metadata"));
  EXPECT_THAT(text, HasSubstr("refused: authorization is not"));
  EXPECT_THAT(text, HasSubstr("Solve request"));
  EXPECT_THAT(text, HasSubstr("session 1 ended"));
  EXPECT_THAT(text, Not(HasSubstr(kToken)));
  EXPECT_THAT(text, Not(HasSubstr(kWrong)));
  // Not even a prefix long enough to narrow a guess.
  EXPECT_THAT(text, Not(HasSubstr("pw-9d41c6b7")));
}

TEST(SecurityTest, Tls_ClientTrustingTheTestCaConnectsOthersAreUnavailable) {
  const TestPki pki("trusted");
  ASSERT_TRUE(pki.ok) << "openssl could not make the test CA in " << pki.dir;
  const TestPki stranger("stranger");
  ASSERT_TRUE(stranger.ok);

  ServerConfig config = pki.TlsServer();
  auto server = PosewireServer::Start(config);
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();

  auto stub_for = [&](const std::string& host,
                      std::shared_ptr<grpc::ChannelCredentials> credentials) {
    return v1::PoseWire::NewStub(
        grpc::CreateChannel(absl::StrCat(host, ":", port), credentials));
  };
  auto trusting = [](const TestPki& ca) {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = ReadFile(ca.Path("ca.crt"));
    return grpc::SslCredentials(options);
  };
  // The certificate names both the address and the host name (SANs), and
  // the client checks the name it dialled against them.
  for (const char* host : {"127.0.0.1", "localhost"}) {
    SCOPED_TRACE(host);
    const grpc::Status status = CallGetInfo(*stub_for(host, trusting(pki)), "");
    EXPECT_TRUE(status.ok()) << status.error_message();
  }
  // A client that trusts another CA refuses the server's certificate.
  EXPECT_EQ(
      CallGetInfo(*stub_for("127.0.0.1", trusting(stranger))).error_code(),
      grpc::StatusCode::UNAVAILABLE);
  // A plaintext client cannot speak to a TLS port.
  EXPECT_EQ(
      CallGetInfo(*stub_for("127.0.0.1", grpc::InsecureChannelCredentials()))
          .error_code(),
      grpc::StatusCode::UNAVAILABLE);

  config.tls_key_file.clear();
  EXPECT_EQ(PosewireServer::Start(config).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SecurityTest, TlsAndToken_TogetherAsDeployed) {
  const TestPki pki("deployed");
  ASSERT_TRUE(pki.ok);
  ServerConfig config = pki.TlsServer();
  config.auth_token_file = pki.Path("tokens.txt");
  std::ofstream(config.auth_token_file) << "deployed-token\n";
  auto server = PosewireServer::Start(config);
  ASSERT_TRUE(server.ok()) << server.status();
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = ReadFile(pki.Path("ca.crt"));
  auto channel =
      grpc::CreateChannel(absl::StrCat("localhost:", (*server)->port()),
                          grpc::SslCredentials(options));
  auto stub = v1::PoseWire::NewStub(channel);
  EXPECT_EQ(CallGetInfo(*stub).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(CallGetInfo(*stub, "Bearer deployed-token").ok());
  EXPECT_TRUE(CallSession(*stub, "Bearer deployed-token").ok());
  EXPECT_TRUE(CallHealth(channel).ok());
}

class PerPeerLimitTest : public ServiceTest {
 protected:
  void Configure(ServerConfig& config) override {
    config.max_sessions = 10;
    config.max_sessions_per_peer = 3;
  }
};

TEST_F(PerPeerLimitTest, OneClientAddressCannotTakeEverySession) {
  struct Open {
    grpc::ClientContext context;
    std::unique_ptr<Stream> stream;
  };
  auto open_session = [](v1::PoseWire::Stub& stub) {
    auto s = std::make_unique<Open>();
    s->stream = stub.Session(&s->context);
    return s;
  };
  // Registers on `s`; true when the server answered (admitted).
  auto admitted = [](Open& s) {
    v1::SessionRequest r;
    r.mutable_register_skeleton()->set_id("cmu");
    *r.mutable_register_skeleton()->mutable_skeleton() = WalkSkeleton();
    v1::SessionResponse response;
    s.stream->Write(r);
    return s.stream->Read(&response);
  };
  std::vector<std::unique_ptr<Open>> open;
  for (int i = 0; i < 3; ++i) {
    open.push_back(open_session(*stub_));
    ASSERT_TRUE(admitted(*open.back()));
  }
  // A fourth from the same address is refused, also over a new connection
  // (a new source port): the limit is per address, not per connection.
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto other = v1::PoseWire::NewStub(
      grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", server_->port()),
                                grpc::InsecureChannelCredentials(), args));
  for (v1::PoseWire::Stub* stub : {stub_.get(), other.get()}) {
    auto extra = open_session(*stub);
    EXPECT_FALSE(admitted(*extra));
    const grpc::Status refused = extra->stream->Finish();
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_THAT(refused.error_message(), HasSubstr("--max_sessions_per_peer"));
  }
  EXPECT_EQ(server_->active_sessions(), 3);

  // Closing one gives its slot back to the same client.
  open[0]->stream->WritesDone();
  EXPECT_TRUE(open[0]->stream->Finish().ok());
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while (server_->active_sessions() != 2 && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  auto again = open_session(*other);
  EXPECT_TRUE(admitted(*again));
  again->stream->WritesDone();
  EXPECT_TRUE(again->stream->Finish().ok());
  for (size_t i = 1; i < open.size(); ++i) {
    open[i]->stream->WritesDone();
    EXPECT_TRUE(open[i]->stream->Finish().ok());
  }
}

class SessionBytesTest : public ServiceTest {
 protected:
  void Configure(ServerConfig& config) override {
    config.max_session_bytes = 64 << 10;
  }
};

TEST_F(SessionBytesTest,
       RegistrationsBeyondTheByteBudgetAreRefusedAndTheSessionGoesOn) {
  grpc::ClientContext context;
  auto stream = stub_->Session(&context);
  auto round_trip = [&](const v1::SessionRequest& request) {
    v1::SessionResponse response;
    EXPECT_TRUE(stream->Write(request));
    EXPECT_TRUE(stream->Read(&response));
    return response;
  };
  v1::SessionRequest skeleton;
  skeleton.mutable_register_skeleton()->set_id("cmu");
  *skeleton.mutable_register_skeleton()->mutable_skeleton() = WalkSkeleton();
  ASSERT_LT(skeleton.ByteSizeLong(), size_t{64 << 10});
  EXPECT_EQ(round_trip(skeleton).registered().status().code(), 0);

  // The whole walk clip is far more than 64 KiB: refused, naming the flag,
  // while each object on its own is well under the message size limit.
  v1::SessionRequest clip;
  clip.mutable_register_clip()->set_id("walk");
  clip.mutable_register_clip()->set_skeleton_id("cmu");
  *clip.mutable_register_clip()->mutable_clip() = WalkClip();
  ASSERT_GT(clip.ByteSizeLong(), size_t{64 << 10});
  const v1::SessionResponse refused = round_trip(clip);
  EXPECT_EQ(refused.registered().kind(), "clip");
  EXPECT_EQ(refused.registered().id(), "walk");
  EXPECT_EQ(refused.registered().status().code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(refused.registered().status().message(),
              HasSubstr("--max_session_bytes"));

  // Small registrations still fit, and frames need no budget.
  v1::SessionRequest r;
  r.mutable_register_rig()->set_id("rig");
  r.mutable_register_rig()->set_skeleton_id("cmu");
  EXPECT_EQ(round_trip(r).registered().status().code(), 0);
  r.Clear();
  r.mutable_register_character()->set_id("c0");
  r.mutable_register_character()->set_rig_id("rig");
  EXPECT_EQ(round_trip(r).registered().status().code(), 0);
  for (uint64_t sequence = 1; sequence <= 3; ++sequence) {
    r.Clear();
    r.mutable_frame()->set_sequence(sequence);
    v1::CharacterFrame* c = r.mutable_frame()->add_characters();
    c->set_character_id("c0");
    PoseToProto(SampleWalk(0.1f * sequence), c->mutable_pose());
    const v1::SessionResponse answer = round_trip(r);
    ASSERT_EQ(answer.frame().characters_size(), 1);
    EXPECT_TRUE(BitIdentical(answer.frame().characters(0).pose(),
                             Packed(SampleWalk(0.1f * sequence))));
  }
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
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
