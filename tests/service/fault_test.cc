// Faults against a real in-process server: a client that cancels mid-stream,
// one whose connection is reset, one that goes silent without closing (only
// keepalive can tell), a deadline that expires mid-solve, and a thousand
// sessions at once. Each checks that the server frees what the client held
// and keeps serving others.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "tests/service/http_get.h"
#include "tests/service/service_fixture.h"

namespace posewire::server {
namespace {

using ::testing::HasSubstr;
using Stream = SessionStream;

// Waits until `condition` holds, polling. The limit only ends a test that is
// failing anyway; how fast the server gets there never decides the result.
bool Eventually(const std::function<bool()>& condition,
                absl::Duration limit = absl::Seconds(60)) {
  const absl::Time end = absl::Now() + limit;
  while (!condition()) {
    if (absl::Now() > end) return false;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return true;
}

// The value of one sample line ("name{labels} value") on a Prometheus
// page; -1 when the sample is absent.
double Sample(const std::string& page, const std::string& series) {
  // At the start of a line, so "# HELP name ..." does not match.
  const std::string line = "\n" + series + " ";
  const size_t at = page.find(line);
  if (at == std::string::npos) return -1;
  const size_t begin = at + line.size();
  const size_t end = page.find('\n', begin);
  double value = -1;
  if (!absl::SimpleAtod(page.substr(begin, end - begin), &value)) return -1;
  return value;
}

// A TCP relay between one client connection and the server. It can drop
// the connection with a reset, as the kernel does for a process killed with
// SIGKILL, or go silent: stop moving bytes both ways while keeping both
// sockets open, which is how a client behind a pulled cable or a dead NAT
// looks to the server (no FIN, no RST; only an unanswered ping tells).
class Relay {
 public:
  explicit Relay(int server_port) : server_port_(server_port) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr = Loopback(0);
    socklen_t size = sizeof(addr);
    if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), size) != 0 ||
        listen(listen_fd_, 4) != 0 ||
        getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &size) !=
            0) {
      ADD_FAILURE() << "relay: cannot listen";
      return;
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Run(); });
  }

  ~Relay() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    close(listen_fd_);
  }

  int port() const { return port_; }
  void GoSilent() { silent_ = true; }
  void Reset() { reset_ = true; }

 private:
  static sockaddr_in Loopback(int port) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return addr;
  }

  // Copies what `from` has to `to`; false when `from` closed or failed.
  static bool Pump(int from, int to) {
    char buffer[16384];
    const ssize_t n = read(from, buffer, sizeof(buffer));
    if (n <= 0) return false;
    for (ssize_t sent = 0; sent < n;) {
      const ssize_t w = write(to, buffer + sent, n - sent);
      if (w <= 0) return false;
      sent += w;
    }
    return true;
  }

  void Run() {
    int client = -1;
    while (!stop_ && client < 0) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (poll(&p, 1, 20) > 0) client = accept(listen_fd_, nullptr, nullptr);
    }
    if (client < 0) return;
    int server = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr = Loopback(server_port_);
    if (connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) !=
        0) {
      ADD_FAILURE() << "relay: cannot reach the server";
      stop_ = true;
    }
    while (!stop_) {
      if (reset_) {
        // SO_LINGER with a zero timeout makes close() send RST.
        linger hard{1, 0};
        setsockopt(server, SOL_SOCKET, SO_LINGER, &hard, sizeof(hard));
        break;
      }
      if (silent_) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      pollfd p[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
      if (poll(p, 2, 20) <= 0) continue;
      if ((p[0].revents && !Pump(client, server)) ||
          (p[1].revents && !Pump(server, client))) {
        break;
      }
    }
    close(server);
    close(client);
  }

  const int server_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<bool> silent_{false};
  std::atomic<bool> reset_{false};
  std::thread thread_;
};

class FaultTest : public ServiceTest {
 protected:
  void Configure(ServerConfig& config) override {
    config.metrics_listen = "127.0.0.1:0";
  }

  std::string Metrics() const {
    return HttpGet(server_->metrics_port(), "/metrics");
  }

  // An operation that takes real time per character: a full-body CCD
  // toward unreachable targets with a zero tolerance runs every iteration.
  // Slow on purpose: a full-body CCD of up to 1000 sweeps (milliseconds)
  // whose joints each move a five-hundredth of their step, toward targets
  // it can reach (each effector's place with its grandparent turned): every
  // sweep still gains, so the solver never stops early as stalled.
  static v1::Operation SlowOp() {
    const Skeleton& skeleton = Walk().skeleton;
    v1::Operation op;
    v1::FullBodyCcdOp* ccd = op.mutable_full_body_ccd();
    for (const char* joint : {"lhand", "rhand", "LeftToe", "RightToe"}) {
      const int j = skeleton.FindJoint(joint);
      LocalPose turned(skeleton.rest_pose().begin(),
                       skeleton.rest_pose().end());
      const int grandparent = skeleton.parent(skeleton.parent(j));
      turned[grandparent].rotation =
          turned[grandparent].rotation *
          Eigen::Quaternionf(Eigen::AngleAxisf(0.4f, Eigen::Vector3f::UnitX()));
      v1::FullBodyCcdEffector* e = ccd->add_effectors();
      e->set_joint(joint);
      *e->mutable_target() = ToVec3(Model(turned)[j].translation);
    }
    for (int j = 0; j < skeleton.num_joints(); ++j) {
      ccd->add_joint_weights(0.002f);
    }
    ccd->set_max_iterations(1000);
    ccd->mutable_tolerance()->set_absolute(0);
    return op;
  }

  // Registers the walk skeleton, a rig running `ops` and characters
  // c0..c{n-1}; leaves the stream ready for frames.
  static void RegisterWalkers(Stream& stream, int n,
                              const std::vector<v1::Operation>& ops) {
    v1::SessionRequest r;
    r.mutable_register_skeleton()->set_id("cmu");
    *r.mutable_register_skeleton()->mutable_skeleton() = WalkSkeleton();
    ExpectRegistered(RoundTrip(stream, r));
    r.Clear();
    r.mutable_register_rig()->set_id("rig");
    r.mutable_register_rig()->set_skeleton_id("cmu");
    for (const v1::Operation& op : ops)
      *r.mutable_register_rig()->add_ops() = op;
    ExpectRegistered(RoundTrip(stream, r));
    for (int i = 0; i < n; ++i) {
      r.Clear();
      r.mutable_register_character()->set_id(absl::StrCat("c", i));
      r.mutable_register_character()->set_rig_id("rig");
      ExpectRegistered(RoundTrip(stream, r));
    }
  }

  // A frame for characters c0..c{n-1}, each starting from the walk at 0.5 s.
  static v1::SessionRequest WalkFrame(uint64_t sequence, int n) {
    v1::SessionRequest r;
    r.mutable_frame()->set_sequence(sequence);
    r.mutable_frame()->set_dt(1.0f / 60);
    for (int i = 0; i < n; ++i) {
      v1::CharacterFrame* c = r.mutable_frame()->add_characters();
      c->set_character_id(absl::StrCat("c", i));
      PoseToProto(SampleWalk(0.5f), c->mutable_pose());
    }
    return r;
  }

  // A registered, idle session whose connection runs through a Relay.
  // Members are destroyed in reverse: the stream before the relay.
  struct RelayedSession {
    explicit RelayedSession(int server_port) : relay(server_port) {}
    Relay relay;
    std::unique_ptr<v1::PoseWire::Stub> stub;
    grpc::ClientContext context;
    std::unique_ptr<Stream> stream;
  };

  std::unique_ptr<RelayedSession> OpenThroughRelay() {
    auto s = std::make_unique<RelayedSession>(server_->port());
    s->stub = v1::PoseWire::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", s->relay.port()),
                            grpc::InsecureChannelCredentials()));
    s->stream = s->stub->Session(&s->context);
    RegisterWalkers(*s->stream, 2, {});
    return s;
  }

  // A full session on a fresh stream, to show the server still serves: with
  // no ops a character's answer is its input pose, bit for bit.
  void ExpectServes() {
    grpc::ClientContext context;
    auto stream = stub_->Session(&context);
    RegisterWalkers(*stream, 1, {});
    const v1::SessionResponse response = RoundTrip(*stream, WalkFrame(1, 1));
    ASSERT_EQ(response.frame().characters_size(), 1);
    EXPECT_TRUE(BitIdentical(response.frame().characters(0).pose(),
                             Packed(SampleWalk(0.5f))));
    stream->WritesDone();
    EXPECT_TRUE(stream->Finish().ok());
  }
};

TEST_F(FaultTest, ClientCancelsMidStream_SessionIsFreedAndServerServesOthers) {
  {
    grpc::ClientContext context;
    auto stream = stub_->Session(&context);
    RegisterWalkers(*stream, 16, {SlowOp()});
    ASSERT_EQ(server_->active_sessions(), 1);
    // Cancel while the pool is solving the frame: the answer has nowhere to
    // go and the session must still be torn down.
    ASSERT_TRUE(stream->Write(WalkFrame(1, 16)));
    context.TryCancel();
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  EXPECT_TRUE(Eventually([&] { return server_->active_sessions() == 0; }));
  EXPECT_TRUE(Eventually([&] {
    return Sample(Metrics(), "posewire_active_sessions") == 0 &&
           Sample(Metrics(),
                  "posewire_calls_total{code=\"CANCELLED\",rpc=\"Session\"}") ==
               1;
  })) << Metrics();
  ExpectServes();
}

TEST_F(FaultTest, ClientConnectionResetWhileHoldingSession_SessionIsFreed) {
  // The default keepalive (30 s) is longer than the time allowed below, so
  // this passes only because the reset itself ends the session.
  auto session = OpenThroughRelay();
  ASSERT_EQ(server_->active_sessions(), 1);
  session->relay.Reset();
  EXPECT_TRUE(Eventually([&] { return server_->active_sessions() == 0; },
                         absl::Seconds(20)));
  EXPECT_FALSE(session->stream->Finish().ok());
  ExpectServes();
}

class KeepaliveTest : public FaultTest {
 protected:
  void Configure(ServerConfig& config) override {
    FaultTest::Configure(config);
    config.keepalive_time = absl::Milliseconds(500);
    config.keepalive_timeout = absl::Milliseconds(500);
  }
};

TEST_F(KeepaliveTest, IdleClientVanishesWithoutClosing_KeepaliveFreesSession) {
  auto session = OpenThroughRelay();
  ASSERT_EQ(server_->active_sessions(), 1);
  // Stay idle for several keepalive periods first: gRPC's defaults stop
  // pinging after two pings without data, so a session that idled before
  // its client vanished would never be noticed.
  absl::SleepFor(absl::Seconds(3));
  ASSERT_EQ(server_->active_sessions(), 1) << "a live idle client was dropped";
  session->relay.GoSilent();
  EXPECT_TRUE(Eventually([&] { return server_->active_sessions() == 0; }));
  EXPECT_TRUE(Eventually(
      [&] { return Sample(Metrics(), "posewire_active_sessions") == 0; }));
  session->context.TryCancel();
  EXPECT_FALSE(session->stream->Finish().ok());
  ExpectServes();
}

TEST_F(FaultTest, DeadlineExpiresMidSolve_DeadlineExceededAndTheWorkStops) {
  // The skeleton goes by hash, so the request is small and reaches the
  // server well inside its deadline even on a busy machine: the deadline
  // must expire during the solve, not during the upload.
  std::string hash;
  {
    v1::SolveRequest once;
    *once.add_characters()->mutable_skeleton()->mutable_skeleton() =
        WalkSkeleton();
    grpc::ClientContext context;
    v1::SolveResponse response;
    ASSERT_TRUE(stub_->Solve(&context, once, &response).ok());
    hash = response.characters(0).skeleton_hash();
  }
  // Milliseconds of work per character here, so the batch would take many
  // seconds against a 1 s deadline. The deadline is not shorter because on
  // a loaded machine the call must still reach the server's worker before
  // it expires (a call that expires in gRPC's queue never runs, and never
  // counts).
  constexpr int kCharacters = 1000;
  v1::SolveRequest request;
  for (int i = 0; i < kCharacters; ++i) {
    v1::CharacterInput* c = request.add_characters();
    c->mutable_skeleton()->set_hash(hash);
    *c->add_ops() = SlowOp();
  }
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(1000));
  v1::SolveResponse response;
  const grpc::Status status = stub_->Solve(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED)
      << status.error_message();
  EXPECT_EQ(response.characters_size(), 0);

  // The worker checks between characters and stops the call long before
  // the batch would have ended. Which of two codes it records is a race it
  // cannot win every time: the server's copy of the deadline is the
  // client's timeout counted from when the request arrived, so it falls a
  // little after the client's own, and the client, at its deadline, resets
  // the stream. The worker then sees a cancelled call whose deadline has
  // not quite passed (CANCELLED); otherwise it sees the deadline first
  // (DEADLINE_EXCEEDED). Either is one stopped call.
  const std::string kDeadline =
      "posewire_calls_total{code=\"DEADLINE_EXCEEDED\",rpc=\"Solve\"}";
  const std::string kCancelled =
      "posewire_calls_total{code=\"CANCELLED\",rpc=\"Solve\"}";
  EXPECT_TRUE(Eventually([&] {
    const std::string metrics = Metrics();
    // An absent series (-1) counts as 0.
    return std::max(0.0, Sample(metrics, kDeadline)) +
               std::max(0.0, Sample(metrics, kCancelled)) ==
           1;
  })) << Metrics();
  const double solved = Sample(
      Metrics(), "posewire_operation_seconds_count{op=\"full_body_ccd\"}");
  EXPECT_LT(solved, kCharacters) << "the worker ran the whole batch";

  auto health = grpc::health::v1::Health::NewStub(channel_);
  grpc::ClientContext health_context;
  grpc::health::v1::HealthCheckResponse serving;
  ASSERT_TRUE(health->Check(&health_context, {}, &serving).ok());
  EXPECT_EQ(serving.status(), grpc::health::v1::HealthCheckResponse::SERVING);
  ExpectServes();
}

class ThousandSessionsTest : public FaultTest {
 protected:
  void Configure(ServerConfig& config) override {
    FaultTest::Configure(config);
    config.max_sessions = 1000;
  }
};

TEST_F(ThousandSessionsTest, AllServedWithinTheLimitAndTheNextRefused) {
  constexpr int kSessions = 1000;
  // Spread over a few connections, as many clients would be.
  std::vector<std::unique_ptr<v1::PoseWire::Stub>> stubs;
  for (int i = 0; i < 4; ++i) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    stubs.push_back(v1::PoseWire::NewStub(
        grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", server_->port()),
                                  grpc::InsecureChannelCredentials(), args)));
  }
  struct Open {
    grpc::ClientContext context;
    std::unique_ptr<Stream> stream;
  };
  std::vector<std::unique_ptr<Open>> open;
  for (int i = 0; i < kSessions; ++i) {
    open.push_back(std::make_unique<Open>());
    open.back()->stream =
        stubs[i % stubs.size()]->Session(&open.back()->context);
    RegisterWalkers(*open.back()->stream, 1, {});
    if (HasFailure()) return;
  }
  EXPECT_EQ(server_->active_sessions(), kSessions);

  // Every one of them is served, while all are open.
  const std::vector<float> expected = Packed(SampleWalk(0.5f));
  int correct = 0;
  for (auto& s : open) {
    const v1::SessionResponse response = RoundTrip(*s->stream, WalkFrame(1, 1));
    correct += response.frame().characters_size() == 1 &&
               BitIdentical(response.frame().characters(0).pose(), expected);
  }
  EXPECT_EQ(correct, kSessions);

  // One more is refused with a status naming the limit.
  {
    grpc::ClientContext context;
    auto stream = stub_->Session(&context);
    v1::SessionResponse response;
    EXPECT_FALSE(stream->Read(&response));
    const grpc::Status refused = stream->Finish();
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_THAT(refused.error_message(), HasSubstr("limit of 1000 sessions"));
  }
  EXPECT_EQ(server_->active_sessions(), kSessions);

  for (auto& s : open) {
    s->stream->WritesDone();
    EXPECT_TRUE(s->stream->Finish().ok());
  }
  EXPECT_TRUE(Eventually([&] { return server_->active_sessions() == 0; }));
  ExpectServes();
}

}  // namespace
}  // namespace posewire::server
