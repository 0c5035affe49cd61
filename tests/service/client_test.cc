// The C++ client library against a real server: the skeleton-by-hash
// protocol (including the resend after an eviction), sessions, and errors
// surfaced as absl::Status with the server's code and message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "clients/cpp/posewire_client.h"
#include "tests/service/service_fixture.h"

namespace posewire::server {
namespace {

using ::testing::HasSubstr;

class ClientTest : public ServiceTest {
 protected:
  // One skeleton fits in the cache: a second one evicts the first.
  void Configure(ServerConfig& config) override {
    config.skeleton_cache_size = 1;
  }

  std::unique_ptr<client::Client> Connect() {
    return std::make_unique<client::Client>(channel_, client::ClientOptions{});
  }

  // A client of another server (a replica the test started).
  static client::Client ClientOf(const PosewireServer& server) {
    return client::Client(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", server.port()),
                            grpc::InsecureChannelCredentials()),
        client::ClientOptions{});
  }

  // A session with the walk's skeleton "cmu" and clip "walk" registered;
  // null (and a test failure) if that fails.
  static std::unique_ptr<client::Session> OpenWalkSession(
      client::Client& client) {
    auto session = client.OpenSession();
    EXPECT_TRUE(session.ok()) << session.status();
    if (!session.ok()) return nullptr;
    absl::Status status = (*session)->RegisterSkeleton("cmu", Walk().skeleton);
    if (status.ok()) {
      status = (*session)->RegisterClip("walk", "cmu", Walk().clips[0]);
    }
    EXPECT_TRUE(status.ok()) << status;
    return status.ok() ? std::move(*session) : nullptr;
  }

  static v1::SolveRequest RequestFor(const v1::Skeleton& skeleton) {
    v1::SolveRequest request;
    *request.add_characters()->mutable_skeleton()->mutable_skeleton() =
        skeleton;
    return request;
  }
};

TEST_F(ClientTest, SolveWithSkeletonCache_SurvivesEvictionByResending) {
  auto client = Connect();
  v1::Skeleton walk = WalkSkeleton();
  // A second, different skeleton: the walk with one rest offset changed.
  v1::Skeleton other = walk;
  other.set_rest_pose(1, other.rest_pose(1) + 1.0f);

  for (int round = 0; round < 3; ++round) {
    for (const v1::Skeleton* skeleton : {&walk, &other}) {
      auto response = client->SolveWithSkeletonCache(RequestFor(*skeleton));
      ASSERT_TRUE(response.ok()) << response.status();
      EXPECT_EQ(response->characters(0).pose().transforms_size(), 310);
    }
  }
  // The plain Solve with an evicted hash is the server's NOT_FOUND.
  v1::SolveRequest by_hash;
  by_hash.add_characters()->mutable_skeleton()->set_hash(
      SkeletonHash(Walk().skeleton));
  auto evicted = client->Solve(by_hash);
  EXPECT_EQ(evicted.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(evicted.status().message(),
              HasSubstr("send the skeleton inline"));
}

TEST_F(ClientTest,
       SolveWithSkeletonCache_PassesABadSkeletonThroughForTheServerToExplain) {
  auto client = Connect();
  v1::Skeleton broken = WalkSkeleton();
  broken.set_parents(3, 7);
  auto response = client->SolveWithSkeletonCache(RequestFor(broken));
  EXPECT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(response.status().message(),
              HasSubstr("characters[0].skeleton.skeleton"));
}

TEST_F(ClientTest, Session_RegistersSolvesFramesAndReportsErrors) {
  auto client = Connect();
  std::unique_ptr<client::Session> session = OpenWalkSession(*client);
  ASSERT_NE(session, nullptr);
  google::protobuf::RepeatedPtrField<v1::Operation> ops;
  ops.Add()->mutable_sample_clip()->mutable_sample()->set_clip("walk");
  ASSERT_TRUE(session->RegisterRig("rig", "cmu", ops).ok());
  ASSERT_TRUE(session->RegisterCharacter("hero", "rig").ok());

  absl::Status duplicate = session->RegisterCharacter("hero", "rig");
  EXPECT_EQ(duplicate.code(), absl::StatusCode::kAlreadyExists);

  v1::Frame frame;
  frame.set_sequence(1);
  frame.add_characters()->set_character_id("hero");
  auto result = session->SendFrame(frame);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(
      BitIdentical(result->characters(0).pose(), Packed(SampleWalk(0.0f))));

  // A frame-level error comes back as the call's status.
  auto repeated = session->SendFrame(frame);
  EXPECT_EQ(repeated.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(repeated.status().message(), HasSubstr("does not increase"));
  EXPECT_TRUE(session->Close().ok());
  EXPECT_EQ(session->SendFrame(frame).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// A rig of sampling, ground and look-at whose inputs come in each frame's
// op_updates answers as one Solve with the same inputs in the ops.
TEST_F(ClientTest, Session_GroundAndLookAtFromOpUpdatesMatchSolve) {
  auto joint = [](const char* name) { return Walk().skeleton.FindJoint(name); };
  const LocalPose input = SampleWalk(1.0f);
  const ModelPose model = Model(input);
  v1::GroundOp ground;
  ground.set_pelvis("Hips");
  std::vector<v1::GroundHit> hits;
  for (const char* side : {"Left", "Right"}) {
    const std::string s(side);
    v1::GroundLeg* leg = ground.add_legs();
    leg->set_hip(s + "Hip");
    leg->set_knee(s + "Knee");
    leg->set_ankle(s + "Ankle");
    Eigen::Vector3f under = model[joint((s + "Ankle").c_str())].translation;
    under.y() = hits.empty() ? 1.0f : -0.5f;
    v1::GroundHit& hit = hits.emplace_back();
    hit.set_hit(true);
    *hit.mutable_point() = ToVec3(under);
  }
  v1::LookAtOp look_at;
  for (const char* j : {"lowerback", "Chest", "Chest2"}) look_at.add_spine(j);
  look_at.set_head("Head");
  const Eigen::Vector3f target =
      model[joint("Head")].translation + Eigen::Vector3f(20.0f, 5.0f, 40.0f);

  auto client = Connect();
  std::unique_ptr<client::Session> session = OpenWalkSession(*client);
  ASSERT_NE(session, nullptr);
  google::protobuf::RepeatedPtrField<v1::Operation> ops;
  v1::ClipSample* sample = ops.Add()->mutable_sample_clip()->mutable_sample();
  sample->set_clip("walk");
  sample->set_time(1.0f);
  *ops.Add()->mutable_ground() = ground;
  *ops.Add()->mutable_look_at() = look_at;
  ASSERT_TRUE(session->RegisterRig("rig", "cmu", ops).ok());
  ASSERT_TRUE(session->RegisterCharacter("hero", "rig").ok());
  v1::Frame frame;
  frame.set_sequence(1);
  v1::CharacterFrame* hero = frame.add_characters();
  hero->set_character_id("hero");
  v1::OpUpdate* ground_update = hero->add_op_updates();
  ground_update->set_op(1);
  for (const v1::GroundHit& hit : hits)
    *ground_update->add_ground_samples() = hit;
  v1::OpUpdate* look_update = hero->add_op_updates();
  look_update->set_op(2);
  *look_update->mutable_target() = ToVec3(target);
  auto result = session->SendFrame(frame);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->characters(0).status().code(), 0)
      << result->characters(0).status().message();

  v1::SolveRequest request = RequestFor(WalkSkeleton());
  v1::CharacterInput* c = request.mutable_characters(0);
  PoseToProto(input, c->mutable_pose());
  for (const v1::GroundHit& hit : hits) *ground.add_samples() = hit;
  *look_at.mutable_target() = ToVec3(target);
  *c->add_ops()->mutable_ground() = ground;
  *c->add_ops()->mutable_look_at() = look_at;
  auto solved = client->Solve(request);
  ASSERT_TRUE(solved.ok()) << solved.status();
  EXPECT_TRUE(BitIdentical(result->characters(0).pose(),
                           Floats(solved->characters(0).pose())));
  EXPECT_FALSE(BitIdentical(result->characters(0).pose(), Packed(input)));
  EXPECT_TRUE(session->Close().ok());
}

TEST_F(ClientTest, Session_RegistersHitboxesAndQueriesTheRecordedPose) {
  auto client = Connect();
  auto session = client->OpenSession();
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE((*session)->RegisterSkeleton("cmu", Walk().skeleton).ok());
  ASSERT_TRUE(
      (*session)
          ->RegisterRig("rig", "cmu",
                        google::protobuf::RepeatedPtrField<v1::Operation>())
          .ok());
  ASSERT_TRUE((*session)->RegisterCharacter("hero", "rig").ok());
  google::protobuf::RepeatedPtrField<v1::Hitbox> hitboxes;
  v1::Hitbox* hips = hitboxes.Add();
  hips->set_joint("Hips");
  hips->set_radius(2.0f);
  ASSERT_TRUE((*session)->RegisterHitboxes("body", "cmu", hitboxes).ok());
  hitboxes[0].set_joint("Tail");
  EXPECT_EQ((*session)->RegisterHitboxes("bad", "cmu", hitboxes).code(),
            absl::StatusCode::kInvalidArgument);

  v1::Frame frame;
  frame.set_sequence(1);
  frame.set_time(1.0);
  frame.add_characters()->set_character_id("hero");  // the rest pose
  ASSERT_TRUE((*session)->SendFrame(frame).ok());
  // A ray down -Z from 10 in front of the hips meets their sphere at 8.
  const Eigen::Vector3f center =
      Model(RestPose(Walk().skeleton))[0].translation;
  v1::HitQuery query;
  query.set_time(1.0);
  v1::HitTarget* target = query.add_targets();
  target->set_character_id("hero");
  target->set_hitbox_set("body");
  v1::Ray* ray = query.add_rays();
  *ray->mutable_origin() = ToVec3(center + Eigen::Vector3f(0, 0, 10));
  *ray->mutable_direction() = ToVec3(Eigen::Vector3f(0, 0, -1));
  auto result = (*session)->Query(query);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->rays(0).hit());
  EXPECT_EQ(result->rays(0).joint(), "Hips");
  EXPECT_NEAR(result->rays(0).distance(), 8.0f, 1e-5f);
  // A query error comes back as the call's status.
  query.set_time(5.0);
  auto outside = (*session)->Query(query);
  EXPECT_EQ(outside.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(outside.status().message(), HasSubstr("query.time"));
  EXPECT_TRUE((*session)->Close().ok());
}

// The same query without a session: the character's rest pose sent as its
// one recorded frame, the hitboxes with it.
TEST_F(ClientTest, Query_AnswersWithoutASessionFromTheFramesSent) {
  auto client = Connect();
  const Eigen::Vector3f center =
      Model(RestPose(Walk().skeleton))[0].translation;
  v1::QueryRequest request;
  v1::QueryCharacter* hero = request.add_characters();
  hero->set_id("hero");
  *hero->mutable_skeleton()->mutable_skeleton() = WalkSkeleton();
  v1::Hitbox* hips = hero->add_hitboxes();
  hips->set_joint("Hips");
  hips->set_radius(2.0f);
  v1::HistoryFrame* frame = hero->add_frames();
  frame->set_time(1.0);
  PoseToProto(std::vector<Transform>{Transform::Identity()},
              frame->mutable_root());
  PoseToProto(Model(RestPose(Walk().skeleton)), frame->mutable_model());
  v1::HitQuery* query = request.mutable_query();
  query->set_time(1.0);
  query->add_targets()->set_character_id("hero");
  v1::Ray* ray = query->add_rays();
  *ray->mutable_origin() = ToVec3(center + Eigen::Vector3f(0, 0, 10));
  *ray->mutable_direction() = ToVec3(Eigen::Vector3f(0, 0, -1));
  auto result = client->Query(request);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->rays(0).hit());
  EXPECT_EQ(result->rays(0).character_id(), "hero");
  EXPECT_EQ(result->rays(0).joint(), "Hips");
  EXPECT_NEAR(result->rays(0).distance(), 8.0f, 1e-5f);
  query->set_time(5.0);
  auto outside = client->Query(request);
  EXPECT_EQ(outside.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(outside.status().message(),
              HasSubstr("query.time: 5 is outside the frames sent"));
}

TEST_F(ClientTest, Session_ResumesOnAnotherServerFromItsLatestSnapshot) {
  auto replica = PosewireServer::Start(config_);
  ASSERT_TRUE(replica.ok()) << replica.status();
  auto client = Connect();
  auto session = client->OpenSession();
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE((*session)->RegisterSkeleton("cmu", Walk().skeleton).ok());
  google::protobuf::RepeatedPtrField<v1::Operation> ops;
  ops.Add()->mutable_spring_bones()->mutable_rig()->add_root_joints(
      "LeftShoulder");
  ASSERT_TRUE((*session)->RegisterRig("springy", "cmu", ops).ok());
  ASSERT_TRUE((*session)->RegisterCharacter("hero", "springy").ok());
  // One now, then one after every second frame, read by SendFrame.
  auto first = (*session)->Snapshot(2);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->any_frame());
  auto frame = [](uint64_t sequence) {
    v1::Frame f;
    f.set_sequence(sequence);
    f.set_dt(1.0f / 60.0f);
    v1::CharacterFrame* c = f.add_characters();
    c->set_character_id("hero");
    c->mutable_root()->mutable_translation()->set_x(
        3.0f * static_cast<float>(sequence));
    return f;
  };
  for (uint64_t s = 1; s <= 4; ++s) {
    ASSERT_TRUE((*session)->SendFrame(frame(s)).ok());
  }
  const client::ResumePoint point = (*session)->latest_resume_point();
  EXPECT_EQ(point.snapshot.after_sequence(), 4u);
  // The skeleton and the rig: the character is in the snapshot itself.
  ASSERT_EQ(point.registrations.size(), 2u);
  std::vector<v1::FrameResult> on_first;
  for (uint64_t s = 5; s <= 6; ++s) {
    auto result = (*session)->SendFrame(frame(s));
    ASSERT_TRUE(result.ok()) << result.status();
    on_first.push_back(*result);
  }
  EXPECT_TRUE((*session)->Close().ok());

  client::Client other = ClientOf(**replica);
  auto resumed = other.ResumeSession(point);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  for (uint64_t s = 5; s <= 6; ++s) {
    auto result = (*resumed)->SendFrame(frame(s));
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_TRUE(BitIdentical(result->characters(0).pose(),
                             Floats(on_first[s - 5].characters(0).pose())))
        << "frame " << s;
  }
  // A damaged snapshot is the server's refusal, naming the field.
  client::ResumePoint damaged = point;
  damaged.snapshot.mutable_data()->pop_back();
  auto refused = other.ResumeSession(damaged);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("resume.snapshot"));
  EXPECT_TRUE((*resumed)->Close().ok());
}

// Limits learnt from the session's clip and a referee rig naming them by
// id: after a resume on another server (the registrations resent by the
// client, the limits learnt again there), the reports are the same.
TEST_F(ClientTest, Session_LearnsLimitsFromItsClipsAndResumesWithThem) {
  auto replica = PosewireServer::Start(config_);
  ASSERT_TRUE(replica.ok()) << replica.status();
  auto client = Connect();
  std::unique_ptr<client::Session> session = OpenWalkSession(*client);
  ASSERT_NE(session, nullptr);
  auto learnt = session->LearnLimits("walk_limits", "cmu", {"walk"});
  ASSERT_TRUE(learnt.ok()) << learnt.status();
  EXPECT_GT(learnt->limits_size(), 20);
  google::protobuf::RepeatedPtrField<v1::Operation> ops;
  ops.Add()->mutable_plausibility()->set_limits_id("walk_limits");
  ASSERT_TRUE(session->RegisterRig("referee", "cmu", ops).ok());
  ASSERT_TRUE(session->RegisterCharacter("claimant", "referee").ok());
  // An unknown clip is the server's NOT_FOUND, and nothing is kept.
  auto unknown = session->LearnLimits("run_limits", "cmu", {"run"});
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(unknown.status().message(),
              HasSubstr("register_limits.learn_from_clips[0]: no clip named "
                        "'run'"));
  ASSERT_TRUE(session->Snapshot().ok());
  const client::ResumePoint point = session->latest_resume_point();
  // Skeleton, clip, limits and rig.
  EXPECT_EQ(point.registrations.size(), 4u);

  // The walk's left knee: in range, then bent far past it.
  auto frame = [](uint64_t sequence, float knee_angle) {
    v1::Frame f;
    f.set_sequence(sequence);
    f.set_dt(0.0f);  // ranges only
    v1::CharacterFrame* c = f.add_characters();
    c->set_character_id("claimant");
    LocalPose pose = SampleWalk(1.0f);
    const int knee = Walk().skeleton.FindJoint("LeftKnee");
    pose[knee].rotation = Walk().skeleton.rest_pose()[knee].rotation *
                          Eigen::Quaternionf(Eigen::AngleAxisf(
                              knee_angle, Eigen::Vector3f::UnitX()));
    PoseToProto(pose, c->mutable_pose());
    return f;
  };
  std::vector<v1::FrameResult> first;
  for (uint64_t s = 1; s <= 2; ++s) {
    auto result = session->SendFrame(frame(s, s == 1 ? 0.3f : 3.0f));
    ASSERT_TRUE(result.ok()) << result.status();
    first.push_back(*result);
  }
  EXPECT_TRUE(first[0].characters(0).ops(0).plausibility().plausible());
  EXPECT_FALSE(first[1].characters(0).ops(0).plausibility().plausible());
  EXPECT_TRUE(session->Close().ok());

  client::Client other = ClientOf(**replica);
  auto resumed = other.ResumeSession(point);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  for (uint64_t s = 1; s <= 2; ++s) {
    auto result = (*resumed)->SendFrame(frame(s, s == 1 ? 0.3f : 3.0f));
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->characters(0).ops(0).SerializeAsString(),
              first[s - 1].characters(0).ops(0).SerializeAsString());
  }
  EXPECT_TRUE((*resumed)->Close().ok());
}

}  // namespace
}  // namespace posewire::server
