// A replica lost under a running session, with the C++ client resuming by
// itself (SessionOptions::auto_resume) over a channel that knows two
// replicas' addresses. The session runs a crossfade player, two-bone IK and
// spring bones; every answer after the loss must be the one an
// uninterrupted session gives, bit for bit.
//
// - Drain (what SIGTERM does: PosewireServer::Shutdown, in process): the
//   server hands the session over; nothing is replayed.
// - SIGKILL of a real posewire-server process: the client resumes from its
//   last periodic snapshot on the other process and replays the frames
//   answered since; the frame in flight is sent once more.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "clients/cpp/posewire_client.h"
#include "tests/service/server_process.h"
#include "tests/service/service_fixture.h"

namespace posewire::server {
namespace session_failover_test {

constexpr float kDt = 1.0f / 50.0f;
constexpr int kFrames = 30;

google::protobuf::RepeatedPtrField<v1::Operation> Pipeline() {
  google::protobuf::RepeatedPtrField<v1::Operation> ops;
  v1::CrossfadeOp* crossfade = ops.Add()->mutable_crossfade();
  crossfade->add_commands()->set_play("walk");
  v1::TwoBoneIkOp* leg = ops.Add()->mutable_two_bone_ik();
  leg->set_start_joint("LeftHip");
  leg->set_mid_joint("LeftKnee");
  leg->set_end_joint("LeftAnkle");
  *leg->mutable_target() = ToVec3(Eigen::Vector3f(5.0f, 2.0f, -3.0f));
  ops.Add()->mutable_spring_bones()->mutable_rig()->add_root_joints(
      "LeftShoulder");
  return ops;
}

// Frame `f` (sequence f) of character "hero": the root walks, the IK target
// moves, and at frame 12 the player fades to a second clip.
v1::Frame FrameNumber(int f) {
  v1::Frame frame;
  frame.set_sequence(f);
  frame.set_dt(kDt);
  v1::CharacterFrame* c = frame.add_characters();
  c->set_character_id("hero");
  const float s = static_cast<float>(f);
  *c->mutable_root()->mutable_translation() =
      ToVec3(Eigen::Vector3f(0.8f * s, 0.0f, 0.0f));
  if (f == 12) {
    *c->mutable_ops() = Pipeline();
    v1::CrossfadeCommand* fade =
        c->mutable_ops(0)->mutable_crossfade()->mutable_commands(0);
    fade->Clear();
    fade->mutable_fade_to()->set_clip("walk2");
    fade->mutable_fade_to()->set_fade_seconds(0.3f);
  }
  v1::OpUpdate* ik = c->add_op_updates();
  ik->set_op(1);
  *ik->mutable_target() =
      ToVec3(Eigen::Vector3f(5.0f + 0.3f * s, 2.0f, -3.0f + 0.2f * s));
  return frame;
}

void Register(client::Session& session) {
  ASSERT_TRUE(session.RegisterSkeleton("cmu", Walk().skeleton).ok());
  ASSERT_TRUE(session.RegisterClip("walk", "cmu", Walk().clips.at(0)).ok());
  ASSERT_TRUE(session.RegisterClip("walk2", "cmu", Walk().clips.at(0)).ok());
  ASSERT_TRUE(session.RegisterRig("hero_rig", "cmu", Pipeline()).ok());
  ASSERT_TRUE(session.RegisterCharacter("hero", "hero_rig").ok());
}

// The answers of an uninterrupted session on `address`, frame by frame.
std::vector<std::string> Uninterrupted(const std::string& address) {
  auto client = client::Client::Connect(address);
  auto session = client->OpenSession();
  EXPECT_TRUE(session.ok()) << session.status();
  Register(**session);
  std::vector<std::string> answers;
  for (int f = 1; f <= kFrames; ++f) {
    auto result = (*session)->SendFrame(FrameNumber(f));
    EXPECT_TRUE(result.ok()) << result.status();
    answers.push_back(result.ok() ? result->SerializeAsString() : "");
  }
  EXPECT_TRUE((*session)->Close().ok());
  return answers;
}

// A channel that tries `first`, then `second` (gRPC's pick_first over an
// address list): the client side of two replicas without a balancer.
std::unique_ptr<client::Client> ConnectToBoth(int first, int second) {
  return std::make_unique<client::Client>(
      grpc::CreateChannel(
          absl::StrCat("ipv4:127.0.0.1:", first, ",127.0.0.1:", second),
          grpc::InsecureChannelCredentials()),
      client::ClientOptions{});
}

client::SessionOptions Resuming(std::vector<client::ResumeEvent>* events) {
  client::SessionOptions options;
  options.auto_resume = true;
  options.snapshot_every_frames = 5;
  options.on_resume = [events](const client::ResumeEvent& e) {
    events->push_back(e);
  };
  return options;
}

class SessionFailoverTest : public ServiceTest {};

TEST_F(SessionFailoverTest, Drain_HandsOverAndTheClientGoesOnBitForBit) {
  auto replica = PosewireServer::Start(config_);
  ASSERT_TRUE(replica.ok()) << replica.status();
  const std::vector<std::string> expected =
      Uninterrupted(absl::StrCat("127.0.0.1:", (*replica)->port()));

  auto client = ConnectToBoth(server_->port(), (*replica)->port());
  std::vector<client::ResumeEvent> events;
  auto session = client->OpenSession(Resuming(&events));
  ASSERT_TRUE(session.ok()) << session.status();
  Register(**session);
  std::thread drain;
  for (int f = 1; f <= kFrames; ++f) {
    if (f == 14) {
      // SIGTERM's path: the server drains while the session waits for
      // frame 14 (Shutdown returns once the session has handed over).
      drain = std::thread([this] { server_->Shutdown(absl::Seconds(30)); });
      while (server_->active_sessions() > 0)
        absl::SleepFor(absl::Milliseconds(1));
    }
    auto result = (*session)->SendFrame(FrameNumber(f));
    ASSERT_TRUE(result.ok()) << "frame " << f << ": " << result.status();
    EXPECT_EQ(result->SerializeAsString(), expected[f - 1]) << "frame " << f;
  }
  drain.join();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(events[0].handover);
  EXPECT_TRUE(absl::IsUnavailable(events[0].cause)) << events[0].cause;
  EXPECT_EQ(events[0].after_sequence, 13u);  // the hand-over's snapshot
  EXPECT_EQ(events[0].replayed, 0);          // it covered every answer
  const client::ResumeCounters& counters = (*session)->resume_counters();
  EXPECT_EQ(counters.resumes, 1);
  EXPECT_EQ(counters.handovers, 1);
  EXPECT_EQ(counters.replayed, 0);
  EXPECT_TRUE((*session)->Close().ok());
}

TEST_F(SessionFailoverTest,
       Drain_AnIdleRawStreamGetsTheSnapshotThenUnavailable) {
  grpc::ClientContext context;
  std::unique_ptr<SessionStream> stream = stub_->Session(&context);
  RegisterWalk(*stream);
  std::thread drain([this] { server_->Shutdown(absl::Seconds(30)); });
  v1::SessionResponse handover;
  ASSERT_TRUE(stream->Read(&handover));
  ASSERT_TRUE(handover.has_snapshot());
  EXPECT_TRUE(handover.snapshot().handover());
  EXPECT_EQ(handover.snapshot().status().code(), 0);
  EXPECT_FALSE(handover.snapshot().data().empty());
  EXPECT_EQ(handover.snapshot().registrations_size(), 2);  // skeleton, clip
  v1::SessionResponse more;
  EXPECT_FALSE(stream->Read(&more));
  const grpc::Status status = stream->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(status.error_message(),
              ::testing::HasSubstr("resume from it on another replica"));
  drain.join();
}

using ::posewire::testing::ServerProcess;

TEST(SessionFailoverProcessTest, SigkillMidStream_ResumesFromTheLastSnapshot) {
  const std::string dir = ::testing::TempDir();
  ServerProcess a(POSEWIRE_SERVER_BINARY, dir + "/failover_a.log");
  ServerProcess b(POSEWIRE_SERVER_BINARY, dir + "/failover_b.log");
  ASSERT_GT(a.port(), 0) << "server A did not start";
  ASSERT_GT(b.port(), 0) << "server B did not start";
  const std::vector<std::string> expected =
      Uninterrupted(absl::StrCat("127.0.0.1:", b.port()));

  auto client = ConnectToBoth(a.port(), b.port());
  std::vector<client::ResumeEvent> events;
  auto session = client->OpenSession(Resuming(&events));
  ASSERT_TRUE(session.ok()) << session.status();
  Register(**session);
  for (int f = 1; f <= kFrames; ++f) {
    // Killed after frame 13's answer: the last snapshot followed frame 10,
    // so 11-13 are replayed on B and frame 14 is sent there once more.
    if (f == 14) a.Kill(SIGKILL);
    auto result = (*session)->SendFrame(FrameNumber(f));
    ASSERT_TRUE(result.ok()) << "frame " << f << ": " << result.status();
    EXPECT_EQ(result->SerializeAsString(), expected[f - 1]) << "frame " << f;
  }
  ASSERT_EQ(events.size(), 1u);
  EXPECT_FALSE(events[0].handover);
  EXPECT_EQ(events[0].after_sequence, 10u);
  EXPECT_EQ(events[0].replayed, 3);
  const client::ResumeCounters& counters = (*session)->resume_counters();
  EXPECT_EQ(counters.resumes, 1);
  EXPECT_EQ(counters.handovers, 0);
  EXPECT_EQ(counters.replayed, 3);
  EXPECT_TRUE((*session)->Close().ok());
}

TEST(SessionFailoverProcessTest, NoReplicaLeft_TheCallFailsUnavailable) {
  const std::string dir = ::testing::TempDir();
  ServerProcess a(POSEWIRE_SERVER_BINARY, dir + "/failover_only.log");
  ASSERT_GT(a.port(), 0);
  auto client = client::Client::Connect(absl::StrCat("127.0.0.1:", a.port()));
  client::SessionOptions options;
  options.auto_resume = true;
  options.max_attempts = 3;
  options.connect_timeout = absl::Milliseconds(200);
  auto session = client->OpenSession(options);
  ASSERT_TRUE(session.ok());
  Register(**session);
  ASSERT_TRUE((*session)->SendFrame(FrameNumber(1)).ok());
  a.Kill(SIGKILL);
  auto result = (*session)->SendFrame(FrameNumber(2));
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(absl::IsUnavailable(result.status())) << result.status();
  EXPECT_THAT(std::string(result.status().message()),
              ::testing::HasSubstr("could not be resumed"));
  EXPECT_EQ((*session)->resume_counters().resumes, 0);
  EXPECT_EQ((*session)->resume_counters().failed_attempts, 2);
}

}  // namespace session_failover_test
}  // namespace posewire::server
