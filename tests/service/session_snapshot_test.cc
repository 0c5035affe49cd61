// Session snapshots and resume over real gRPC on loopback, between two
// servers: a session with a crossfade player, two-bone IK, look-at, ground
// and spring bones running is snapshotted on server A, goes on there, and
// is resumed on server B from the snapshot; B's answers must be A's, bit
// for bit. Also: periodic snapshots, a client sending only the required
// fields, the size limit and GetInfo.
#include "server/service/session_snapshot.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tests/service/service_fixture.h"

namespace posewire::server {
namespace session_snapshot_test {

using ::testing::HasSubstr;

// 50 Hz frames against the springs' 60 Hz fixed step: the leftover time
// carried in the dynamics state is never zero for long.
constexpr float kDt = 1.0f / 50.0f;

v1::Vec3 Vec(float x, float y, float z) {
  return ToVec3(Eigen::Vector3f(x, y, z));
}

// A stream and its context, which must outlive it.
struct OpenStream {
  std::unique_ptr<grpc::ClientContext> context =
      std::make_unique<grpc::ClientContext>();
  std::unique_ptr<SessionStream> stream;
};

OpenStream Open(v1::PoseWire::Stub& stub) {
  OpenStream s;
  s.context->set_deadline(std::chrono::system_clock::now() +
                          std::chrono::seconds(120));
  s.stream = stub.Session(s.context.get());
  return s;
}

// The pipeline of rig "hero_rig": a crossfade player, the left leg's
// two-bone IK, look-at, ground, a spring chain down the left arm and a
// plausibility check. A
// frame that sends crossfade commands sends this list with them (frame ops
// replace the rig's for that frame; state goes by state_key either way).
google::protobuf::RepeatedPtrField<v1::Operation> Pipeline(
    const std::vector<v1::CrossfadeCommand>& commands) {
  google::protobuf::RepeatedPtrField<v1::Operation> ops;
  v1::CrossfadeOp* crossfade = ops.Add()->mutable_crossfade();
  for (const v1::CrossfadeCommand& c : commands) *crossfade->add_commands() = c;
  v1::TwoBoneIkOp* leg = ops.Add()->mutable_two_bone_ik();
  leg->set_start_joint("LeftHip");
  leg->set_mid_joint("LeftKnee");
  leg->set_end_joint("LeftAnkle");
  *leg->mutable_target() = Vec(5.0f, 2.0f, -3.0f);
  v1::LookAtOp* look = ops.Add()->mutable_look_at();
  for (const char* j : {"Chest", "Chest2", "Neck"}) look->add_spine(j);
  look->set_head("Head");
  *look->mutable_target() = Vec(0.0f, 20.0f, 30.0f);
  v1::GroundOp* ground = ops.Add()->mutable_ground();
  ground->set_pelvis("Hips");
  for (const std::string side : {"Left", "Right"}) {
    v1::GroundLeg* leg_of = ground->add_legs();
    leg_of->set_hip(side + "Hip");
    leg_of->set_knee(side + "Knee");
    leg_of->set_ankle(side + "Ankle");
    leg_of->set_toe(side + "Toe");
  }
  for (float y : {1.0f, 0.5f}) {
    v1::GroundHit* hit = ground->add_samples();
    hit->set_hit(true);
    *hit->mutable_point() = Vec(0.0f, y, 0.0f);
  }
  ops.Add()->mutable_spring_bones()->mutable_rig()->add_root_joints(
      "LeftShoulder");
  // Its frames before are state too: its motion measures after a resume
  // must be the uninterrupted session's.
  ops.Add()->mutable_plausibility();
  return ops;
}

v1::CrossfadeCommand Play(const std::string& clip) {
  v1::CrossfadeCommand c;
  c.set_play(clip);
  return c;
}

v1::CrossfadeCommand FadeTo(const std::string& clip, float seconds) {
  v1::CrossfadeCommand c;
  c.mutable_fade_to()->set_clip(clip);
  c.mutable_fade_to()->set_fade_seconds(seconds);
  return c;
}

// The registrations of the session, in order: what a client keeps to
// resend after a resume, by kind and id.
std::vector<v1::SessionRequest> Registrations() {
  std::vector<v1::SessionRequest> out(4);
  out[0].mutable_register_skeleton()->set_id("cmu");
  *out[0].mutable_register_skeleton()->mutable_skeleton() =
      ServiceTest::WalkSkeletonForTests();
  for (int i = 0; i < 2; ++i) {
    v1::RegisterClip* clip = out[1 + i].mutable_register_clip();
    clip->set_id(i == 0 ? "walk" : "walk2");
    clip->set_skeleton_id("cmu");
    *clip->mutable_clip() = ServiceTest::WalkClipForTests();
  }
  v1::RegisterRig* rig = out[3].mutable_register_rig();
  rig->set_id("hero_rig");
  rig->set_skeleton_id("cmu");
  *rig->mutable_ops() = Pipeline({});
  return out;
}

v1::SessionRequest Character(const std::string& id) {
  v1::SessionRequest r;
  r.mutable_register_character()->set_id(id);
  r.mutable_register_character()->set_rig_id("hero_rig");
  return r;
}

// A stream on `stub` holding Registrations() and characters "hero" and
// "sidekick".
OpenStream OpenWithCharacters(v1::PoseWire::Stub& stub) {
  OpenStream s = Open(stub);
  for (const v1::SessionRequest& r : Registrations()) {
    ExpectRegistered(RoundTrip(*s.stream, r));
  }
  for (const char* id : {"hero", "sidekick"}) {
    ExpectRegistered(RoundTrip(*s.stream, Character(id)));
  }
  return s;
}

// The registration a SnapshotRegistration names, from the client's own.
const v1::SessionRequest* Find(const std::vector<v1::SessionRequest>& all,
                               const v1::SnapshotRegistration& wanted) {
  for (const v1::SessionRequest& r : all) {
    if ((wanted.kind() == "skeleton" && r.has_register_skeleton() &&
         r.register_skeleton().id() == wanted.id()) ||
        (wanted.kind() == "clip" && r.has_register_clip() &&
         r.register_clip().id() == wanted.id() &&
         r.register_clip().skeleton_id() == wanted.skeleton_id()) ||
        (wanted.kind() == "rig" && r.has_register_rig() &&
         r.register_rig().id() == wanted.id()) ||
        (wanted.kind() == "hitboxes" && r.has_register_hitboxes() &&
         r.register_hitboxes().id() == wanted.id())) {
      return &r;
    }
  }
  return nullptr;
}

// Frame `f` (sequence 100 + f) for characters "hero" and "sidekick": the
// root walks and turns, the IK target moves; crossfade commands at frames
// 1 (play walk), 6 (fade to walk2 over 0.4 s: still fading when the tests
// snapshot at frame 10) and 14 (fade back).
v1::SessionRequest FrameNumber(int f) {
  v1::SessionRequest r;
  v1::Frame* frame = r.mutable_frame();
  frame->set_sequence(100 + f);
  frame->set_dt(kDt);
  frame->set_time(f * static_cast<double>(kDt));
  for (const char* id : {"hero", "sidekick"}) {
    v1::CharacterFrame* c = frame->add_characters();
    c->set_character_id(id);
    const float s = static_cast<float>(f);
    *c->mutable_root()->mutable_translation() =
        Vec(0.8f * s, 0.0f, std::string(id) == "hero" ? 0.0f : 40.0f);
    v1::Quat* q = c->mutable_root()->mutable_rotation();
    q->set_y(std::sin(0.05f * s));
    q->set_w(std::cos(0.05f * s));
    std::vector<v1::CrossfadeCommand> commands;
    if (f == 1) commands = {Play("walk")};
    if (f == 6) commands = {FadeTo("walk2", 0.4f)};
    if (f == 14) commands = {FadeTo("walk", 0.3f)};
    if (!commands.empty()) *c->mutable_ops() = Pipeline(commands);
    v1::OpUpdate* ik = c->add_op_updates();
    ik->set_op(1);
    *ik->mutable_target() = Vec(5.0f + 0.3f * s, 2.0f, -3.0f + 0.2f * s);
    c->set_want_model_pose(f % 2 == 0);
  }
  return r;
}

v1::SessionSnapshot TakeSnapshot(SessionStream& stream,
                                 uint32_t every_frames = 0) {
  v1::SessionRequest r;
  r.mutable_snapshot()->set_every_frames(every_frames);
  v1::SessionResponse response = RoundTrip(stream, r);
  EXPECT_TRUE(response.has_snapshot());
  EXPECT_EQ(response.snapshot().status().code(), 0)
      << response.snapshot().status().message();
  return response.snapshot();
}

// Every character answered OK with a pose.
void ExpectSolved(const v1::SessionResponse& response, uint64_t sequence) {
  ASSERT_TRUE(response.has_frame());
  EXPECT_EQ(response.frame().sequence(), sequence);
  EXPECT_EQ(response.frame().status().code(), 0)
      << response.frame().status().message();
  for (const v1::CharacterResult& c : response.frame().characters()) {
    EXPECT_EQ(c.status().code(), 0) << c.status().message();
    EXPECT_EQ(c.pose().transforms_size(),
              Walk().skeleton.num_joints() * kFloatsPerJoint);
  }
}

// Resumes `stream` from `data` and resends what the answer lists from
// `registrations`; the resume answer.
v1::ResumeResult Resume(SessionStream& stream, const std::string& data,
                        const std::vector<v1::SessionRequest>& registrations) {
  v1::SessionRequest r;
  r.mutable_resume()->set_snapshot(data);
  v1::SessionResponse response = RoundTrip(stream, r);
  EXPECT_TRUE(response.has_resume());
  EXPECT_EQ(response.resume().status().code(), 0)
      << response.resume().status().message();
  for (const v1::SnapshotRegistration& missing : response.resume().missing()) {
    const v1::SessionRequest* resend = Find(registrations, missing);
    EXPECT_NE(resend, nullptr) << missing.kind() << " " << missing.id();
    if (resend != nullptr) ExpectRegistered(RoundTrip(stream, *resend));
  }
  return response.resume();
}

class SessionSnapshotTest : public ServiceTest {
 protected:
  // A second server with the same configuration: another replica.
  void StartReplica() {
    auto server = PosewireServer::Start(config_);
    ASSERT_TRUE(server.ok()) << server.status();
    replica_ = *std::move(server);
    replica_stub_ = v1::PoseWire::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", replica_->port()),
                            grpc::InsecureChannelCredentials()));
  }

  std::unique_ptr<PosewireServer> replica_;
  std::unique_ptr<v1::PoseWire::Stub> replica_stub_;
};

TEST_F(SessionSnapshotTest,
       ResumedOnAnotherServer_FramesAfterTheSnapshotAreBitIdentical) {
  StartReplica();
  constexpr int kSnapshotFrame = 10;
  constexpr int kLastFrame = 24;
  const std::vector<v1::SessionRequest> registrations = Registrations();

  // Server A: the uninterrupted session.
  OpenStream a = OpenWithCharacters(*stub_);
  for (int f = 1; f <= kSnapshotFrame; ++f) {
    ExpectSolved(RoundTrip(*a.stream, FrameNumber(f)), 100 + f);
  }
  const v1::SessionSnapshot snapshot = TakeSnapshot(*a.stream);
  EXPECT_EQ(snapshot.after_sequence(), 100u + kSnapshotFrame);
  EXPECT_TRUE(snapshot.any_frame());
  EXPECT_EQ(snapshot.version(), 1u);
  ASSERT_EQ(snapshot.registrations_size(), 4);
  EXPECT_EQ(snapshot.registrations(0).kind(), "skeleton");
  EXPECT_EQ(snapshot.registrations(2).id(), "walk2");
  EXPECT_EQ(snapshot.registrations(2).skeleton_id(), "cmu");
  EXPECT_EQ(snapshot.registrations(3).kind(), "rig");
  EXPECT_EQ(snapshot.registrations(3).hash().size(), 64u);
  // Hashes, not content: the snapshot is far smaller than the registrations.
  int64_t registered_bytes = 0;
  for (const v1::SessionRequest& r : registrations) {
    registered_bytes += static_cast<int64_t>(r.ByteSizeLong());
  }
  // The state apart from the pose histories (a model pose per timed frame
  // kept, here all of them), which carry on rewinds after the resume.
  absl::StatusOr<v1::SnapshotContent> content =
      OpenSnapshot(snapshot.data(), {}, 1 << 30, "snapshot");
  ASSERT_TRUE(content.ok()) << content.status();
  for (v1::SnapshotCharacter& c : *content->mutable_characters()) {
    EXPECT_EQ(c.history_size(), kSnapshotFrame);
    c.clear_history();
  }
  EXPECT_LT(static_cast<int64_t>(content->ByteSizeLong()),
            registered_bytes / 100);
  EXPECT_FALSE(snapshot.histories_omitted());

  std::vector<v1::SessionResponse> on_a;
  for (int f = kSnapshotFrame + 1; f <= kLastFrame; ++f) {
    on_a.push_back(RoundTrip(*a.stream, FrameNumber(f)));
    ExpectSolved(on_a.back(), 100 + f);
  }
  const v1::SessionSnapshot last_on_a = TakeSnapshot(*a.stream);

  // Server B: resumed from the snapshot, the registrations resent.
  OpenStream b = Open(*replica_stub_);
  const v1::ResumeResult resumed =
      Resume(*b.stream, snapshot.data(), registrations);
  EXPECT_EQ(resumed.after_sequence(), 100u + kSnapshotFrame);
  ASSERT_EQ(resumed.missing_size(), 4);
  EXPECT_EQ(resumed.missing(1).kind(), "clip");
  EXPECT_EQ(resumed.missing(1).id(), "walk");
  // The state came back whole: B's snapshot now is A's at the frame.
  EXPECT_EQ(TakeSnapshot(*b.stream).data(), snapshot.data());
  for (int f = kSnapshotFrame + 1; f <= kLastFrame; ++f) {
    const v1::SessionResponse on_b = RoundTrip(*b.stream, FrameNumber(f));
    ExpectSolved(on_b, 100 + f);
    const v1::FrameResult& expected = on_a[f - kSnapshotFrame - 1].frame();
    ASSERT_EQ(on_b.frame().characters_size(), expected.characters_size());
    for (int c = 0; c < expected.characters_size(); ++c) {
      EXPECT_TRUE(BitIdentical(on_b.frame().characters(c).pose(),
                               Floats(expected.characters(c).pose())))
          << "frame " << f << ", character " << c;
      EXPECT_TRUE(BitIdentical(on_b.frame().characters(c).model_pose(),
                               Floats(expected.characters(c).model_pose())))
          << "frame " << f << ", character " << c;
      // Op results (IK errors, iterations, warnings) too.
      EXPECT_EQ(on_b.frame().characters(c).SerializeAsString(),
                expected.characters(c).SerializeAsString())
          << "frame " << f << ", character " << c;
    }
  }
  // And the state after the last frame is A's, byte for byte.
  EXPECT_EQ(TakeSnapshot(*b.stream).data(), last_on_a.data());

  // The state mattered: the same frame on a session started from nothing
  // answers another pose (springs at rest, the player not fading).
  OpenStream fresh = Open(*replica_stub_);
  for (const v1::SessionRequest& r : registrations) {
    ExpectRegistered(RoundTrip(*fresh.stream, r));
  }
  ExpectRegistered(RoundTrip(*fresh.stream, Character("hero")));
  v1::SessionRequest first_after = FrameNumber(kSnapshotFrame + 1);
  first_after.mutable_frame()->mutable_characters()->RemoveLast();
  const v1::SessionResponse from_nothing =
      RoundTrip(*fresh.stream, first_after);
  ExpectSolved(from_nothing, 100 + kSnapshotFrame + 1);
  EXPECT_FALSE(BitIdentical(from_nothing.frame().characters(0).pose(),
                            Floats(on_a[0].frame().characters(0).pose())));

  for (OpenStream* s : {&a, &b, &fresh}) {
    s->stream->WritesDone();
    EXPECT_TRUE(s->stream->Finish().ok());
  }
}

TEST_F(SessionSnapshotTest, ResumedSession_SequenceAndTimeGoOnFromTheSnapshot) {
  StartReplica();
  // A hitbox set too: a sphere on the hips.
  std::vector<v1::SessionRequest> registrations = Registrations();
  v1::SessionRequest& hitboxes = registrations.emplace_back();
  hitboxes.mutable_register_hitboxes()->set_id("body");
  hitboxes.mutable_register_hitboxes()->set_skeleton_id("cmu");
  v1::Hitbox* sphere = hitboxes.mutable_register_hitboxes()->add_hitboxes();
  sphere->set_joint("Hips");
  sphere->set_radius(2.0f);
  OpenStream a = OpenWithCharacters(*stub_);
  ExpectRegistered(RoundTrip(*a.stream, hitboxes));
  for (int f = 1; f <= 3; ++f) {
    ExpectSolved(RoundTrip(*a.stream, FrameNumber(f)), 100 + f);
  }
  const v1::SessionSnapshot snapshot = TakeSnapshot(*a.stream);

  OpenStream b = Open(*replica_stub_);
  v1::SessionRequest resume;
  resume.mutable_resume()->set_snapshot(snapshot.data());
  const v1::SessionResponse answer = RoundTrip(*b.stream, resume);
  ASSERT_EQ(answer.resume().missing_size(), 5);
  EXPECT_EQ(answer.resume().missing(4).kind(), "hitboxes");
  // Nothing runs until every registration is back.
  v1::SessionResponse early = RoundTrip(*b.stream, FrameNumber(4));
  EXPECT_EQ(early.frame().status().code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(early.frame().status().message(),
              HasSubstr("still waits for 5 registrations (next: skeleton "
                        "'cmu')"));
  v1::SessionRequest query;
  v1::HitTarget* target = query.mutable_query()->add_targets();
  target->set_character_id("hero");
  target->set_hitbox_set("body");
  query.mutable_query()->set_want_poses(true);
  EXPECT_EQ(RoundTrip(*b.stream, query).query().status().code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  for (const v1::SessionRequest& r : registrations) {
    ExpectRegistered(RoundTrip(*b.stream, r));
  }
  // The characters came back with the snapshot: registering one again is a
  // duplicate.
  ExpectRegistered(RoundTrip(*b.stream, Character("hero")),
                   grpc::StatusCode::ALREADY_EXISTS);
  // Sequence 103 was the snapshot's last frame.
  v1::SessionResponse repeated = RoundTrip(*b.stream, FrameNumber(3));
  EXPECT_EQ(repeated.frame().status().code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(repeated.frame().status().message(),
              HasSubstr("frame.sequence: 103 does not increase (last frame "
                        "was 103)"));
  // Frame times do not go back past the snapshot's either.
  v1::SessionRequest early_time = FrameNumber(4);
  early_time.mutable_frame()->set_time(0.0);
  EXPECT_EQ(RoundTrip(*b.stream, early_time).frame().status().code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  ExpectSolved(RoundTrip(*b.stream, FrameNumber(4)), 104);
  // The hitbox set came back: a query of the newest frame is answered.
  const v1::SessionResponse queried = RoundTrip(*b.stream, query);
  EXPECT_EQ(queried.query().status().code(), 0)
      << queried.query().status().message();
  EXPECT_EQ(queried.query().poses_size(), 1);
  // A resume is only a stream's first message.
  v1::SessionResponse late = RoundTrip(*b.stream, resume);
  EXPECT_EQ(late.resume().status().code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(late.resume().status().message(),
              HasSubstr("resume: must come before any registration or frame"));
  for (OpenStream* s : {&a, &b}) {
    s->stream->WritesDone();
    EXPECT_TRUE(s->stream->Finish().ok());
  }
}

TEST_F(SessionSnapshotTest, EveryNFrames_ASnapshotFollowsEveryNthFrameAnswer) {
  OpenStream a = OpenWithCharacters(*stub_);
  // One now (before any frame), then after frames 3 and 6.
  const v1::SessionSnapshot first = TakeSnapshot(*a.stream, 3);
  EXPECT_FALSE(first.any_frame());
  std::vector<v1::SessionSnapshot> periodic;
  for (int f = 1; f <= 7; ++f) {
    ExpectSolved(RoundTrip(*a.stream, FrameNumber(f)), 100 + f);
    if (f % 3 == 0) {
      v1::SessionResponse extra;
      ASSERT_TRUE(a.stream->Read(&extra));
      ASSERT_TRUE(extra.has_snapshot());
      EXPECT_EQ(extra.snapshot().status().code(), 0);
      periodic.push_back(extra.snapshot());
    }
  }
  ASSERT_EQ(periodic.size(), 2u);
  EXPECT_EQ(periodic[0].after_sequence(), 103u);
  EXPECT_EQ(periodic[1].after_sequence(), 106u);
  EXPECT_NE(periodic[0].data(), periodic[1].data());
  // every_frames 0 stops them: frame 8 gets its answer alone, the next
  // message's answer comes straight after.
  TakeSnapshot(*a.stream, 0);
  for (int f = 8; f <= 10; ++f) {
    ExpectSolved(RoundTrip(*a.stream, FrameNumber(f)), 100 + f);
  }
  a.stream->WritesDone();
  EXPECT_TRUE(a.stream->Finish().ok());
}

TEST_F(SessionSnapshotTest, AtDefaults_OnlyRequiredFieldsSnapshotAndResume) {
  // A client that sends only what is required: a spring rig by its root
  // joint, frames of a character id and dt, an empty SnapshotRequest, a
  // ResumeSession with the bytes.
  StartReplica();
  std::vector<v1::SessionRequest> registrations(2);
  registrations[0].mutable_register_skeleton()->set_id("s");
  *registrations[0].mutable_register_skeleton()->mutable_skeleton() =
      WalkSkeleton();
  registrations[1].mutable_register_rig()->set_id("r");
  registrations[1].mutable_register_rig()->set_skeleton_id("s");
  registrations[1]
      .mutable_register_rig()
      ->add_ops()
      ->mutable_spring_bones()
      ->mutable_rig()
      ->add_root_joints("LeftShoulder");
  v1::SessionRequest character;
  character.mutable_register_character()->set_id("c");
  character.mutable_register_character()->set_rig_id("r");
  auto frame = [](uint64_t sequence) {
    v1::SessionRequest r;
    r.mutable_frame()->set_sequence(sequence);
    r.mutable_frame()->set_dt(kDt);
    v1::CharacterFrame* c = r.mutable_frame()->add_characters();
    c->set_character_id("c");
    // Moving the root is what sets the springs swinging.
    *c->mutable_root()->mutable_translation() =
        Vec(2.0f * static_cast<float>(sequence), 0.0f, 0.0f);
    return r;
  };

  OpenStream a = Open(*stub_);
  for (const v1::SessionRequest& r : registrations) {
    ExpectRegistered(RoundTrip(*a.stream, r));
  }
  ExpectRegistered(RoundTrip(*a.stream, character));
  for (uint64_t s = 1; s <= 5; ++s)
    ExpectSolved(RoundTrip(*a.stream, frame(s)), s);
  v1::SessionRequest ask;
  ask.mutable_snapshot();
  const v1::SessionResponse snapshot = RoundTrip(*a.stream, ask);
  ASSERT_TRUE(snapshot.has_snapshot());
  ASSERT_EQ(snapshot.snapshot().status().code(), 0);
  const v1::SessionResponse next_on_a = RoundTrip(*a.stream, frame(6));

  OpenStream b = Open(*replica_stub_);
  v1::SessionRequest resume;
  resume.mutable_resume()->set_snapshot(snapshot.snapshot().data());
  const v1::SessionResponse answer = RoundTrip(*b.stream, resume);
  ASSERT_TRUE(answer.has_resume());
  EXPECT_EQ(answer.resume().status().code(), 0);
  ASSERT_EQ(answer.resume().missing_size(), 2);
  for (const v1::SessionRequest& r : registrations) {
    ExpectRegistered(RoundTrip(*b.stream, r));
  }
  const v1::SessionResponse next_on_b = RoundTrip(*b.stream, frame(6));
  ExpectSolved(next_on_b, 6);
  EXPECT_TRUE(BitIdentical(next_on_b.frame().characters(0).pose(),
                           Floats(next_on_a.frame().characters(0).pose())));
  for (OpenStream* s : {&a, &b}) {
    s->stream->WritesDone();
    EXPECT_TRUE(s->stream->Finish().ok());
  }
}

TEST_F(SessionSnapshotTest, GetInfo_ReportsTheSnapshotLimitAndVersion) {
  grpc::ClientContext context;
  v1::GetInfoResponse info;
  ASSERT_TRUE(stub_->GetInfo(&context, {}, &info).ok());
  EXPECT_EQ(info.limits().max_snapshot_bytes(), uint64_t{4} << 20);
  EXPECT_EQ(info.limits().snapshot_version(), 1u);
}

// A sphere round each character's head, as set "heads".
v1::SessionRequest HeadHitboxes() {
  v1::SessionRequest r;
  v1::RegisterHitboxes* set = r.mutable_register_hitboxes();
  set->set_id("heads");
  set->set_skeleton_id("cmu");
  v1::Hitbox* head = set->add_hitboxes();
  head->set_joint("Head");
  head->set_shape(v1::HITBOX_SHAPE_SPHERE);
  head->set_radius(4.0f);
  return r;
}

// Both characters rewound to halfway between frames f - 1 and f, with
// their poses, and a sphere near the first one's start.
v1::SessionRequest RewindTo(int f) {
  v1::SessionRequest r;
  v1::HitQuery* query = r.mutable_query();
  query->set_time(f * static_cast<double>(kDt) - 0.5 * kDt);
  query->set_want_poses(true);
  for (const char* id : {"hero", "sidekick"}) {
    v1::HitTarget* t = query->add_targets();
    t->set_character_id(id);
    t->set_hitbox_set("heads");
  }
  v1::SphereQuery* sphere = query->add_spheres();
  *sphere->mutable_center() = Vec(0.0f, 30.0f, 0.0f);
  sphere->set_radius(10.0f);
  return r;
}

TEST_F(SessionSnapshotTest,
       PoseHistoriesTravel_ARewindBeforeTheResumeAnswersTheSame) {
  StartReplica();
  std::vector<v1::SessionRequest> registrations = Registrations();
  registrations.push_back(HeadHitboxes());
  OpenStream a = OpenWithCharacters(*stub_);
  ExpectRegistered(RoundTrip(*a.stream, HeadHitboxes()));
  for (int f = 1; f <= 10; ++f)
    ExpectSolved(RoundTrip(*a.stream, FrameNumber(f)), 100 + f);
  const v1::SessionSnapshot snapshot = TakeSnapshot(*a.stream);
  EXPECT_FALSE(snapshot.histories_omitted());
  // Between frames 6 and 7 (interpolated) and between 2 and 3: both
  // before the snapshot, both inside the one-second window.
  std::vector<v1::QueryResult> on_a;
  for (int f : {7, 3}) {
    const v1::SessionResponse answer = RoundTrip(*a.stream, RewindTo(f));
    ASSERT_EQ(answer.query().status().code(), 0)
        << answer.query().status().message();
    on_a.push_back(answer.query());
  }

  OpenStream b = Open(*replica_stub_);
  Resume(*b.stream, snapshot.data(), registrations);
  for (size_t i = 0; i < on_a.size(); ++i) {
    const v1::SessionResponse answer =
        RoundTrip(*b.stream, RewindTo(i == 0 ? 7 : 3));
    ASSERT_EQ(answer.query().status().code(), 0)
        << answer.query().status().message();
    ASSERT_EQ(answer.query().poses_size(), 2);
    EXPECT_EQ(answer.query().SerializeAsString(), on_a[i].SerializeAsString())
        << "rewind " << i;
  }
  for (OpenStream* s : {&a, &b}) {
    s->stream->WritesDone();
    EXPECT_TRUE(s->stream->Finish().ok());
  }
}

// A limit the characters' state fits under but not their histories.
class HistoryOverLimitTest : public SessionSnapshotTest {
 protected:
  void Configure(ServerConfig& config) override {
    config.max_snapshot_bytes = 16 << 10;
  }
};

TEST_F(HistoryOverLimitTest, SnapshotGoesWithoutHistoriesAndSaysSo) {
  StartReplica();
  OpenStream a = OpenWithCharacters(*stub_);
  for (int f = 1; f <= 10; ++f)
    ExpectSolved(RoundTrip(*a.stream, FrameNumber(f)), 100 + f);
  const v1::SessionSnapshot snapshot = TakeSnapshot(*a.stream);
  EXPECT_TRUE(snapshot.histories_omitted());
  EXPECT_LE(snapshot.data().size(), 16u << 10);
  const v1::SessionResponse next_on_a = RoundTrip(*a.stream, FrameNumber(11));

  // The state still travels: the next frame is the same; rewinds reach
  // only frames solved after the resume.
  OpenStream b = Open(*replica_stub_);
  Resume(*b.stream, snapshot.data(), Registrations());
  const v1::SessionResponse next_on_b = RoundTrip(*b.stream, FrameNumber(11));
  EXPECT_EQ(next_on_b.frame().SerializeAsString(),
            next_on_a.frame().SerializeAsString());
  for (OpenStream* s : {&a, &b}) {
    s->stream->WritesDone();
    EXPECT_TRUE(s->stream->Finish().ok());
  }
}

class SmallSnapshotLimitTest : public SessionSnapshotTest {
 protected:
  void Configure(ServerConfig& config) override {
    config.max_snapshot_bytes = 1024;
  }
};

TEST_F(SmallSnapshotLimitTest,
       SnapshotOverTheLimit_IsRefusedAndTheSessionGoesOn) {
  OpenStream a = OpenWithCharacters(*stub_);
  ExpectSolved(RoundTrip(*a.stream, FrameNumber(1)), 101);
  v1::SessionRequest ask;
  ask.mutable_snapshot();
  const v1::SessionResponse refused = RoundTrip(*a.stream, ask);
  ASSERT_TRUE(refused.has_snapshot());
  EXPECT_EQ(refused.snapshot().status().code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(refused.snapshot().status().message(),
              HasSubstr("over this server's limit of 1024 (GetInfo "
                        "limits.max_snapshot_bytes)"));
  EXPECT_TRUE(refused.snapshot().data().empty());
  ExpectSolved(RoundTrip(*a.stream, FrameNumber(2)), 102);
  a.stream->WritesDone();
  EXPECT_TRUE(a.stream->Finish().ok());
}

// The seal alone, without a server: keyed and unkeyed snapshots open only
// where the same key (or none) is configured.
TEST(SnapshotSeal, KeyedSnapshots_OpenOnlyWithTheSameKey) {
  v1::SnapshotContent content;
  content.set_after_sequence(7);
  content.set_any_frame(true);
  content.add_characters()->set_id("hero");
  const std::string key = "0123456789abcdef";
  const std::string keyed = SealSnapshot(content, {.key = key});
  const std::string plain = SealSnapshot(content, {});
  EXPECT_NE(keyed, plain);
  // Deterministic: the same content seals to the same bytes.
  EXPECT_EQ(plain, SealSnapshot(content, {}));

  auto opened = OpenSnapshot(keyed, {.key = key}, 1 << 20, "s");
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ(opened->after_sequence(), 7u);
  EXPECT_EQ(opened->characters(0).id(), "hero");

  auto wrong_key =
      OpenSnapshot(keyed, {.key = "fedcba9876543210"}, 1 << 20, "s");
  EXPECT_EQ(wrong_key.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(wrong_key.status().message(),
              HasSubstr("s: the HMAC does not match"));
  auto keyless_server = OpenSnapshot(keyed, {}, 1 << 20, "s");
  EXPECT_EQ(keyless_server.status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(keyless_server.status().message(),
              HasSubstr("sealed with a key but this server has no "
                        "--snapshot_key_file"));
  auto keyed_server = OpenSnapshot(plain, {.key = key}, 1 << 20, "s");
  EXPECT_EQ(keyed_server.status().code(),
            absl::StatusCode::kFailedPrecondition);
  // A forger without the key cannot make a keyed snapshot from a plain
  // one by flipping the kind byte.
  std::string flipped = plain;
  flipped[8] = 1;
  EXPECT_EQ(OpenSnapshot(flipped, {.key = key}, 1 << 20, "s").status().code(),
            absl::StatusCode::kInvalidArgument);
}

class KeyedReplicasTest : public SessionSnapshotTest {
 protected:
  void Configure(ServerConfig& config) override {
    config.snapshot_key = "a key both replicas share";
  }
};

TEST_F(KeyedReplicasTest, SnapshotOfOneKeyedReplica_ResumesOnAnother) {
  StartReplica();
  const std::vector<v1::SessionRequest> registrations = Registrations();
  OpenStream a = OpenWithCharacters(*stub_);
  ExpectSolved(RoundTrip(*a.stream, FrameNumber(1)), 101);
  const v1::SessionSnapshot snapshot = TakeSnapshot(*a.stream);
  const v1::SessionResponse next_on_a = RoundTrip(*a.stream, FrameNumber(2));

  OpenStream b = Open(*replica_stub_);
  Resume(*b.stream, snapshot.data(), registrations);
  const v1::SessionResponse next_on_b = RoundTrip(*b.stream, FrameNumber(2));
  ExpectSolved(next_on_b, 102);
  EXPECT_EQ(next_on_b.frame().SerializeAsString(),
            next_on_a.frame().SerializeAsString());
  for (OpenStream* s : {&a, &b}) {
    s->stream->WritesDone();
    EXPECT_TRUE(s->stream->Finish().ok());
  }
}

}  // namespace session_snapshot_test
}  // namespace posewire::server
