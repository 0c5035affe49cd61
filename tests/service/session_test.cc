// Streaming Session against a real in-process server: registrations, frames
// answered in order with their sequence numbers, per-character state kept
// for the life of the stream, and errors confined to the message, frame or
// character at fault.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "solver_core/pose_ops/crossfade.h"
#include "tests/service/service_fixture.h"

namespace posewire::server {
namespace {

using ::testing::HasSubstr;
using Stream = SessionStream;

// Run with every request solved on the solver pool, with the default
// split (small messages on gRPC's thread, registrations and batches on the
// pool) and with every request solved on gRPC's thread: the answers must be
// the same wherever they are computed.
class SessionTest : public ServiceTest,
                    public ::testing::WithParamInterface<int64_t> {
 protected:
  void Configure(ServerConfig& config) override {
    config.max_sessions = 3;
    config.max_session_objects = 20;
    config.inline_request_bytes = GetParam();
  }

  struct OpenStream {
    std::unique_ptr<grpc::ClientContext> context =
        std::make_unique<grpc::ClientContext>();
    std::unique_ptr<Stream> stream;
  };

  OpenStream Open() {
    OpenStream s;
    s.stream = stub_->Session(s.context.get());
    return s;
  }

  // Registers the walk skeleton, two clips, a crossfade rig and `n`
  // characters called c0..c{n-1}.
  static void RegisterWalkers(Stream& stream, int n) {
    v1::SessionRequest r;
    r.mutable_register_skeleton()->set_id("cmu");
    *r.mutable_register_skeleton()->mutable_skeleton() = WalkSkeleton();
    ExpectRegistered(RoundTrip(stream, r));
    for (const char* id : {"walk", "walk2"}) {
      r.Clear();
      r.mutable_register_clip()->set_id(id);
      r.mutable_register_clip()->set_skeleton_id("cmu");
      *r.mutable_register_clip()->mutable_clip() = WalkClip();
      ExpectRegistered(RoundTrip(stream, r));
    }
    r.Clear();
    r.mutable_register_rig()->set_id("player");
    r.mutable_register_rig()->set_skeleton_id("cmu");
    r.mutable_register_rig()->add_ops()->mutable_crossfade();
    ExpectRegistered(RoundTrip(stream, r));
    for (int i = 0; i < n; ++i) {
      r.Clear();
      r.mutable_register_character()->set_id(absl::StrCat("c", i));
      r.mutable_register_character()->set_rig_id("player");
      ExpectRegistered(RoundTrip(stream, r));
    }
  }
};

TEST_P(
    SessionTest,
    HundredFramesOfTenCharacters_InOrderWithStateAndOneBadFrameFailingAlone) {
  OpenStream s = Open();
  constexpr int kCharacters = 10;
  constexpr int kFrames = 100;
  constexpr float kDt = 1.0f / 60.0f;
  RegisterWalkers(*s.stream, kCharacters);

  // The same players, run on the core directly for comparison.
  const Skeleton& skeleton = Walk().skeleton;
  const std::vector<Clip> clips = {Walk().clips[0], Walk().clips[0]};
  std::vector<CrossfadeState> expected_state(kCharacters);

  for (int f = 0; f < kFrames; ++f) {
    v1::SessionRequest request;
    v1::Frame* frame = request.mutable_frame();
    frame->set_sequence(1000 + 2 * f);  // increasing, not contiguous
    frame->set_dt(kDt);
    for (int c = 0; c < kCharacters; ++c) {
      v1::CharacterFrame* cf = frame->add_characters();
      cf->set_character_id(absl::StrCat("c", c));
      v1::CrossfadeOp* op = cf->add_ops()->mutable_crossfade();
      if (f == 0) {
        op->add_commands()->set_play("walk");
        expected_state[c] = Play(0);
      }
      // Character c starts fading to walk2 at frame 10 + c.
      if (f == 10 + c) {
        v1::FadeTo* fade = op->add_commands()->mutable_fade_to();
        fade->set_clip("walk2");
        fade->set_fade_seconds(0.2f);
        auto next =
            FadeTo(expected_state[c], FadeRequest{.clip = 1, .duration = 0.2f});
        ASSERT_TRUE(next.ok());
        expected_state[c] = *next;
      }
    }
    // Frame 50: character 3 sends a NaN pose. Only it fails, and its state
    // must not advance.
    const bool bad_frame = f == 50;
    if (bad_frame) {
      PoseToProto(RestPose(skeleton),
                  frame->mutable_characters(3)->mutable_pose());
      frame->mutable_characters(3)->mutable_pose()->set_transforms(3, NAN);
    }

    v1::SessionResponse response = RoundTrip(*s.stream, request);
    ASSERT_TRUE(response.has_frame());
    const v1::FrameResult& result = response.frame();
    ASSERT_EQ(result.sequence(), 1000u + 2 * f);
    ASSERT_EQ(result.status().code(), 0) << result.status().message();
    ASSERT_EQ(result.characters_size(), kCharacters);
    for (int c = 0; c < kCharacters; ++c) {
      const v1::CharacterResult& out = result.characters(c);
      EXPECT_EQ(out.character_id(), absl::StrCat("c", c));
      if (bad_frame && c == 3) {
        EXPECT_EQ(out.status().code(), grpc::StatusCode::INVALID_ARGUMENT);
        EXPECT_THAT(out.status().message(),
                    HasSubstr("frame.characters[3].pose[0] 'Hips': rotation"));
        EXPECT_EQ(out.pose().transforms_size(), 0);
        continue;
      }
      ASSERT_EQ(out.status().code(), 0) << out.status().message();
      LocalPose expected(skeleton.num_joints());
      auto next = StepCrossfade(skeleton, clips, expected_state[c], kDt,
                                absl::MakeSpan(expected));
      ASSERT_TRUE(next.ok());
      expected_state[c] = *next;
      ASSERT_TRUE(BitIdentical(out.pose(), Packed(expected)))
          << "frame " << f << " character " << c;
    }
  }
  s.stream->WritesDone();
  grpc::Status status = s.stream->Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();
}

// The session reuses its pose buffers from one character to the next, so
// characters of different skeletons in one frame (31 joints, 3, 31, 3;
// explicit poses and empty ones, which mean the rest pose) must each still
// get exactly their own pose and model pose.
TEST_P(SessionTest, MixedSkeletonsInOneFrame_EachCharacterGetsItsOwnPoses) {
  OpenStream s = Open();
  v1::Skeleton chain_proto;
  for (int j = 0; j < 3; ++j) {
    chain_proto.add_joint_names(absl::StrCat("link", j));
    chain_proto.add_parents(j - 1);
    // translation (0, 1 + j, 0), identity rotation, unit scale
    for (float f :
         {0.0f, 1.0f + j, 0.0f, 0.0f, 0.0f, 0.0f, 1.0f, 1.0f, 1.0f, 1.0f}) {
      chain_proto.add_rest_pose(f);
    }
  }
  auto chain = SkeletonFromProto(chain_proto, 16, "chain");
  ASSERT_TRUE(chain.ok()) << chain.status();

  v1::SessionRequest r;
  for (const auto& [id, skeleton] :
       {std::pair{"cmu", WalkSkeleton()}, std::pair{"chain", chain_proto}}) {
    r.Clear();
    r.mutable_register_skeleton()->set_id(id);
    *r.mutable_register_skeleton()->mutable_skeleton() = skeleton;
    ExpectRegistered(RoundTrip(*s.stream, r));
    r.Clear();
    r.mutable_register_rig()->set_id(absl::StrCat(id, "_rig"));
    r.mutable_register_rig()->set_skeleton_id(id);  // no ops: pose in = out
    ExpectRegistered(RoundTrip(*s.stream, r));
  }
  const char* kRigs[] = {"cmu_rig", "chain_rig", "cmu_rig", "chain_rig"};
  for (int c = 0; c < 4; ++c) {
    r.Clear();
    r.mutable_register_character()->set_id(absl::StrCat("c", c));
    r.mutable_register_character()->set_rig_id(kRigs[c]);
    ExpectRegistered(RoundTrip(*s.stream, r));
  }

  // c0 and c1 send poses, c2 and c3 send none (their rest poses).
  LocalPose bent = RestPose(*chain);
  bent[1].rotation =
      Eigen::Quaternionf(Eigen::AngleAxisf(0.5f, Eigen::Vector3f::UnitX()));
  const std::vector<LocalPose> expected = {
      SampleWalk(0.7f), bent, RestPose(Walk().skeleton), RestPose(*chain)};
  const Skeleton* skeletons[] = {&Walk().skeleton, &*chain, &Walk().skeleton,
                                 &*chain};
  v1::SessionRequest request;
  request.mutable_frame()->set_sequence(1);
  for (int c = 0; c < 4; ++c) {
    v1::CharacterFrame* cf = request.mutable_frame()->add_characters();
    cf->set_character_id(absl::StrCat("c", c));
    cf->set_want_model_pose(true);
    if (c < 2) PoseToProto(expected[c], cf->mutable_pose());
  }
  v1::SessionResponse response = RoundTrip(*s.stream, request);
  ASSERT_TRUE(response.has_frame());
  ASSERT_EQ(response.frame().characters_size(), 4);
  for (int c = 0; c < 4; ++c) {
    const v1::CharacterResult& out = response.frame().characters(c);
    ASSERT_EQ(out.status().code(), 0) << c << ": " << out.status().message();
    ModelPose model(expected[c].size());
    const LocalToModelJob fk{.skeleton = skeletons[c],
                             .input = expected[c],
                             .output = absl::MakeSpan(model)};
    ASSERT_TRUE(fk.Run().ok());
    EXPECT_TRUE(BitIdentical(out.pose(), Packed(expected[c])))
        << "character " << c;
    EXPECT_TRUE(BitIdentical(out.model_pose(), Packed(model)))
        << "character " << c;
  }
  s.stream->WritesDone();
  EXPECT_TRUE(s.stream->Finish().ok());
}

TEST_P(SessionTest, FrameOutOfOrder_IsAnsweredWithAnErrorAndTheSessionGoesOn) {
  OpenStream s = Open();
  RegisterWalkers(*s.stream, 1);
  v1::SessionRequest request;
  request.mutable_frame()->set_sequence(5);
  request.mutable_frame()->add_characters()->set_character_id("c0");
  EXPECT_EQ(RoundTrip(*s.stream, request).frame().status().code(), 0);

  request.mutable_frame()->set_sequence(5);
  v1::SessionResponse repeated = RoundTrip(*s.stream, request);
  EXPECT_EQ(repeated.frame().sequence(), 5u);
  EXPECT_EQ(repeated.frame().status().code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(repeated.frame().status().message(),
              HasSubstr("frame.sequence: 5 does not increase"));

  request.mutable_frame()->set_sequence(6);
  request.mutable_frame()->set_dt(-1.0f);
  EXPECT_THAT(RoundTrip(*s.stream, request).frame().status().message(),
              HasSubstr("frame.dt: -1"));

  request.mutable_frame()->set_dt(0.0f);
  v1::SessionResponse ok = RoundTrip(*s.stream, request);
  EXPECT_EQ(ok.frame().status().code(), 0);
  EXPECT_EQ(ok.frame().characters(0).status().code(), 0);
  s.stream->WritesDone();
  EXPECT_TRUE(s.stream->Finish().ok());
}

TEST_P(SessionTest,
       Registrations_DuplicatesUnknownReferencesAndTheObjectLimit) {
  OpenStream s = Open();
  RegisterWalkers(*s.stream, 1);  // 5 objects
  v1::SessionRequest r;
  r.mutable_register_skeleton()->set_id("cmu");
  *r.mutable_register_skeleton()->mutable_skeleton() = WalkSkeleton();
  v1::SessionResponse dup = RoundTrip(*s.stream, r);
  ExpectRegistered(dup, grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_EQ(dup.registered().kind(), "skeleton");
  EXPECT_EQ(dup.registered().id(), "cmu");

  r.Clear();
  r.mutable_register_character()->set_id("x");
  r.mutable_register_character()->set_rig_id("nope");
  v1::SessionResponse unknown = RoundTrip(*s.stream, r);
  ExpectRegistered(unknown, grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(unknown.registered().status().message(),
              HasSubstr("no rig 'nope'"));

  r.Clear();
  v1::SessionResponse empty = RoundTrip(*s.stream, r);
  ExpectRegistered(empty, grpc::StatusCode::INVALID_ARGUMENT);

  // Frames naming unknown characters fail for that character only.
  r.Clear();
  r.mutable_frame()->set_sequence(1);
  r.mutable_frame()->add_characters()->set_character_id("c0");
  r.mutable_frame()->add_characters()->set_character_id("ghost");
  v1::SessionResponse frame = RoundTrip(*s.stream, r);
  EXPECT_EQ(frame.frame().characters(0).status().code(), 0);
  EXPECT_EQ(frame.frame().characters(1).status().code(),
            grpc::StatusCode::NOT_FOUND);

  // 15 more characters reach the limit of 20 objects; the next is refused.
  for (int i = 1; i <= 16; ++i) {
    r.Clear();
    r.mutable_register_character()->set_id(absl::StrCat("c", i));
    r.mutable_register_character()->set_rig_id("player");
    ExpectRegistered(
        RoundTrip(*s.stream, r),
        i <= 15 ? grpc::StatusCode::OK : grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  s.stream->WritesDone();
  EXPECT_TRUE(s.stream->Finish().ok());
}

TEST_P(SessionTest, SessionsBeyondTheLimitAreResourceExhaustedAndFreedOnClose) {
  std::vector<OpenStream> open;
  for (int i = 0; i < 3; ++i) {
    open.push_back(Open());
    RegisterWalkers(*open.back().stream, 1);
  }
  OpenStream extra = Open();
  v1::SessionResponse response;
  EXPECT_FALSE(extra.stream->Read(&response));
  grpc::Status refused = extra.stream->Finish();
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(refused.error_message(), HasSubstr("limit of 3 sessions"));

  // Closing one frees its slot.
  open[0].stream->WritesDone();
  EXPECT_TRUE(open[0].stream->Finish().ok());
  bool admitted = false;
  for (int attempt = 0; attempt < 50 && !admitted; ++attempt) {
    OpenStream again = Open();
    v1::SessionRequest r;
    r.mutable_register_skeleton()->set_id("cmu");
    *r.mutable_register_skeleton()->mutable_skeleton() = WalkSkeleton();
    again.stream->Write(r);
    admitted = again.stream->Read(&response);
    again.stream->WritesDone();
    again.stream->Finish();
    // The server frees the slot when the finished reactor is done, which
    // may trail the client's Finish by a moment.
    if (!admitted) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(admitted);
  for (size_t i = 1; i < open.size(); ++i) {
    open[i].stream->WritesDone();
    EXPECT_TRUE(open[i].stream->Finish().ok());
  }
}

TEST_P(SessionTest, ClientCancelMidStream_LeavesTheServerHealthy) {
  {
    OpenStream s = Open();
    RegisterWalkers(*s.stream, 2);
    s.context->TryCancel();
    v1::SessionResponse response;
    EXPECT_FALSE(s.stream->Read(&response));
    EXPECT_EQ(s.stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  OpenStream s = Open();
  RegisterWalkers(*s.stream, 1);
  s.stream->WritesDone();
  EXPECT_TRUE(s.stream->Finish().ok());
}

INSTANTIATE_TEST_SUITE_P(Placement, SessionTest, RequestPlacements(),
                         RequestPlacementName);

}  // namespace
}  // namespace posewire::server
