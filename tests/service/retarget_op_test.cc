// The retarget op over the wire: the CMU walk onto the Daz rig of
// cmu_02_03_run_daz.bvh, bit-identical to RetargetMap and RetargetJob run
// directly, in a Solve (source inline and by hash) and a Session (source
// by registration id, the clip time moved by op updates), the same bits on
// every call, IK composing after it, and the feet pass over a bake frame by
// frame with its state, as the core threads it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "solver_core/retarget/retarget.h"
#include "solver_core/retarget/retarget_feet.h"
#include "solver_core/retarget/retarget_hands.h"
#include "tests/service/service_fixture.h"

namespace posewire::server {
namespace {

const ImportedAsset& Daz() {
  static const ImportedAsset* asset = [] {
    auto read = ReadBvhFile(std::string(POSEWIRE_TEST_DATA_DIR) +
                            "/cmu_02_03_run_daz.bvh");
    if (!read.ok()) {
      ADD_FAILURE() << read.status();
      std::abort();
    }
    return new ImportedAsset(*std::move(read));
  }();
  return *asset;
}

v1::Skeleton DazSkeleton() {
  v1::Skeleton proto;
  SkeletonToProto(Daz().skeleton, &proto);
  return proto;
}

// The core's answer: the walk at `time` onto the Daz rest pose.
LocalPose CoreRetarget(float time) {
  absl::StatusOr<RetargetMap> map =
      RetargetMap::Create(Walk().skeleton, Daz().skeleton);
  EXPECT_TRUE(map.ok()) << map.status();
  const LocalPose source = SampleWalk(time);
  LocalPose out = RestPose(Daz().skeleton);
  RetargetJob job;
  job.map = &*map;
  job.source_skeleton = &Walk().skeleton;
  job.target_skeleton = &Daz().skeleton;
  job.source = source;
  job.input = out;
  job.output = absl::MakeSpan(out);
  EXPECT_TRUE(job.Run().ok());
  return out;
}

class RetargetOpTest : public ServiceTest {
 protected:
  // A Daz character at rest whose first op retargets the walk clip at
  // `time`; the source skeleton inline, or by `hash` when given.
  v1::SolveRequest Request(float time, const std::string& hash = "") {
    v1::SolveRequest request;
    v1::CharacterInput* c = request.add_characters();
    *c->mutable_skeleton()->mutable_skeleton() = DazSkeleton();
    v1::RetargetOp* op = c->add_ops()->mutable_retarget();
    if (hash.empty()) {
      *op->mutable_skeleton() = WalkSkeleton();
    } else {
      op->set_skeleton_hash(hash);
    }
    *op->mutable_clip()->mutable_clip() = WalkClip();
    op->mutable_clip()->set_time(time);
    return request;
  }
};

TEST_F(RetargetOpTest, Retarget_SolveMatchesTheCoreBitForBit) {
  const v1::CharacterOutput out = SolveFirstCharacter(Request(1.0f));
  ASSERT_EQ(out.ops_size(), 1);
  EXPECT_EQ(out.ops(0).op(), "retarget");
  EXPECT_TRUE(BitIdentical(out.pose(), Packed(CoreRetarget(1.0f))));
  EXPECT_FALSE(BitIdentical(out.pose(), Packed(RestPose(Daz().skeleton))));
}

TEST_F(RetargetOpTest, Retarget_SameRequestSameBitsEveryTime) {
  const v1::CharacterOutput a = SolveFirstCharacter(Request(0.75f));
  const v1::CharacterOutput b = SolveFirstCharacter(Request(0.75f));
  EXPECT_TRUE(BitIdentical(a.pose(), Floats(b.pose())));
}

TEST_F(RetargetOpTest, Retarget_SourceByHashAnswersAsInline) {
  // A Solve of a walk character makes the server know its skeleton's hash.
  v1::SolveRequest walk;
  *walk.add_characters()->mutable_skeleton()->mutable_skeleton() =
      WalkSkeleton();
  const std::string hash = SolveFirstCharacter(walk).skeleton_hash();
  ASSERT_FALSE(hash.empty());
  const v1::CharacterOutput out = SolveFirstCharacter(Request(0.5f, hash));
  EXPECT_TRUE(BitIdentical(out.pose(), Packed(CoreRetarget(0.5f))));
}

TEST_F(RetargetOpTest, Retarget_IkComposesAfterIt) {
  // The left hand of the retargeted pose moved 2 cm up by two-bone IK.
  v1::SolveRequest request = Request(1.0f);
  const LocalPose retargeted = CoreRetarget(1.0f);
  std::vector<Transform> model(retargeted.size());
  for (int j = 0; j < Daz().skeleton.num_joints(); ++j) {
    const int p = Daz().skeleton.parent(j);
    model[j] =
        p == kNoParent ? retargeted[j] : Combine(model[p], retargeted[j]);
  }
  const Eigen::Vector3f hand =
      model[Daz().skeleton.FindJoint("lHand")].translation +
      Eigen::Vector3f(0.0f, 2.0f, 0.0f);
  v1::TwoBoneIkOp* ik =
      request.mutable_characters(0)->add_ops()->mutable_two_bone_ik();
  ik->set_start_joint("lShldr");
  ik->set_mid_joint("lForeArm");
  ik->set_end_joint("lHand");
  *ik->mutable_target() = ToVec3(hand);
  const v1::CharacterOutput out = SolveFirstCharacter(request);
  ASSERT_EQ(out.ops_size(), 2);
  EXPECT_TRUE(out.ops(1).reached());
  EXPECT_LT(out.ops(1).error(), 1e-3f);
}

TEST_F(RetargetOpTest, Retarget_SessionRigFollowsTheClipTimeLikeTheCore) {
  grpc::ClientContext context;
  std::unique_ptr<SessionStream> stream = stub_->Session(&context);
  RegisterWalk(*stream);
  v1::SessionRequest r;
  r.mutable_register_skeleton()->set_id("daz");
  *r.mutable_register_skeleton()->mutable_skeleton() = DazSkeleton();
  ExpectRegistered(RoundTrip(*stream, r));
  r.Clear();
  r.mutable_register_rig()->set_id("rig");
  r.mutable_register_rig()->set_skeleton_id("daz");
  v1::RetargetOp* op = r.mutable_register_rig()->add_ops()->mutable_retarget();
  op->set_skeleton_id("cmu");
  *op->mutable_clip()->mutable_clip() = WalkClip();
  ExpectRegistered(RoundTrip(*stream, r));
  r.Clear();
  r.mutable_register_character()->set_id("c");
  r.mutable_register_character()->set_rig_id("rig");
  ExpectRegistered(RoundTrip(*stream, r));
  for (int f = 0; f < 4; ++f) {
    const float time = 0.25f * static_cast<float>(f);
    v1::SessionRequest frame;
    frame.mutable_frame()->set_sequence(f + 1);
    frame.mutable_frame()->set_dt(1.0f / 60.0f);
    v1::CharacterFrame* c = frame.mutable_frame()->add_characters();
    c->set_character_id("c");
    v1::OpUpdate* update = c->add_op_updates();
    update->set_op(0);
    update->set_time(time);
    const v1::SessionResponse response = RoundTrip(*stream, frame);
    ASSERT_EQ(response.frame().characters_size(), 1);
    const v1::CharacterResult& result = response.frame().characters(0);
    ASSERT_EQ(result.status().code(), 0) << result.status().message();
    EXPECT_TRUE(BitIdentical(result.pose(), Packed(CoreRetarget(time))))
        << "frame " << f;
  }
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

// A bake onto the Daz rig whose retarget op plays the walk (timed_ops sets
// its clip time to each frame's): every frame is the core's retarget of the
// walk at that time, as a pipeline retargeting a whole clip runs it.
TEST_F(RetargetOpTest, Retarget_BakeWithTheOpTimedMatchesTheCore) {
  v1::BakeRequest request;
  *request.mutable_skeleton()->mutable_skeleton() = DazSkeleton();
  *request.mutable_ops() = Request(0.0f).characters(0).ops();
  request.add_timed_ops(0);
  request.set_frame_rate(10.0f);
  request.set_frame_count(20);
  grpc::ClientContext context;
  auto reader = stub_->Bake(&context, request);
  v1::BakeResponse message;
  int frames = 0;
  while (reader->Read(&message)) {
    for (const v1::BakedFrame& frame : message.frames()) {
      const float time = static_cast<float>(frames / 10.0);
      EXPECT_EQ(frame.time(), time);
      EXPECT_TRUE(BitIdentical(frame.pose(), Packed(CoreRetarget(time))))
          << "frame " << frames;
      ++frames;
    }
  }
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_EQ(frames, 20);
}

// The core's answer with the feet pass: the walk at `time` onto the Daz
// rest pose, then RetargetFeetJob with `state` threaded.
LocalPose CoreRetargetFeet(float time, float dt, RetargetFeetState& state) {
  absl::StatusOr<RetargetMap> map =
      RetargetMap::Create(Walk().skeleton, Daz().skeleton);
  EXPECT_TRUE(map.ok()) << map.status();
  absl::StatusOr<RetargetFeet> feet =
      RetargetFeet::Create(*map, Walk().skeleton, Daz().skeleton);
  EXPECT_TRUE(feet.ok()) << feet.status();
  const LocalPose source = SampleWalk(time);
  LocalPose out = CoreRetarget(time);
  RetargetFeetJob job;
  job.map = &*map;
  job.feet = &*feet;
  job.source_skeleton = &Walk().skeleton;
  job.target_skeleton = &Daz().skeleton;
  job.source = source;
  job.input = out;
  job.output = absl::MakeSpan(out);
  job.dt = dt;
  job.state = &state;
  job.next_state = &state;
  EXPECT_TRUE(job.Run().ok());
  return out;
}

// A bake of the walk onto the Daz rig with the feet pass on (the one flag):
// every frame is the core's, run frame by frame with the state threaded,
// bit for bit; a second bake given the state the first returned continues
// it bit for bit.
TEST_F(RetargetOpTest, Retarget_BakeWithFeetMatchesTheCoreFrameByFrame) {
  constexpr double kRate = 30.0;
  v1::SolveRequest solve = Request(0.0f);
  v1::RetargetOp* op =
      solve.mutable_characters(0)->mutable_ops(0)->mutable_retarget();
  op->mutable_feet()->set_lock_contacts(true);
  RetargetFeetState state;
  google::protobuf::Map<std::string, v1::OperationState> returned;
  int locked_frames = 0;
  for (int part = 0; part < 2; ++part) {
    v1::BakeRequest request;
    *request.mutable_skeleton()->mutable_skeleton() = DazSkeleton();
    *request.mutable_ops() = solve.characters(0).ops();
    request.add_timed_ops(0);
    request.set_frame_rate(static_cast<float>(kRate));
    request.set_start_time(part * 30 / kRate);
    request.set_frame_count(30);
    *request.mutable_state() = returned;
    grpc::ClientContext context;
    auto reader = stub_->Bake(&context, request);
    v1::BakeResponse message;
    int frames = 0;
    while (reader->Read(&message)) {
      for (const v1::BakedFrame& frame : message.frames()) {
        const float time =
            static_cast<float>(part * 30 / kRate + frames / kRate);
        EXPECT_EQ(frame.time(), time);
        const float dt =
            part == 0 && frames == 0 ? 0.0f : 1.0f / static_cast<float>(kRate);
        EXPECT_TRUE(BitIdentical(frame.pose(),
                                 Packed(CoreRetargetFeet(time, dt, state))))
            << "part " << part << " frame " << frames;
        locked_frames += state.feet[0].locked ? 1 : 0;
        ++frames;
      }
      if (message.done()) returned = message.state();
    }
    ASSERT_TRUE(reader->Finish().ok());
    EXPECT_EQ(frames, 30);
    ASSERT_EQ(returned.count("retarget_feet"), 1u);
    ASSERT_EQ(returned.at("retarget_feet").retarget_feet().feet_size(), 2);
    EXPECT_EQ(returned.at("retarget_feet").retarget_feet().source_floor(),
              state.source_floor);
  }
  // The pass did something: the left foot was held on some frames.
  EXPECT_GT(locked_frames, 0);
}

// The hands pass (the one flag) gives the core's transfer followed by its
// hands job, bit for bit, and moves the hands.
TEST_F(RetargetOpTest, Retarget_HandsPassMatchesTheCore) {
  v1::SolveRequest request = Request(1.0f);
  request.mutable_characters(0)
      ->mutable_ops(0)
      ->mutable_retarget()
      ->mutable_hands()
      ->set_match_source(true);
  const v1::CharacterOutput out = SolveFirstCharacter(request);
  ASSERT_EQ(out.ops_size(), 1);

  absl::StatusOr<RetargetMap> map =
      RetargetMap::Create(Walk().skeleton, Daz().skeleton);
  ASSERT_TRUE(map.ok()) << map.status();
  absl::StatusOr<RetargetHands> hands =
      RetargetHands::Create(*map, Walk().skeleton, Daz().skeleton);
  ASSERT_TRUE(hands.ok()) << hands.status();
  const LocalPose source = SampleWalk(1.0f);
  LocalPose expected = CoreRetarget(1.0f);
  RetargetHandsJob job;
  job.map = &*map;
  job.hands = &*hands;
  job.source_skeleton = &Walk().skeleton;
  job.target_skeleton = &Daz().skeleton;
  job.source = source;
  job.input = expected;
  job.output = absl::MakeSpan(expected);
  ASSERT_TRUE(job.Run().ok());
  EXPECT_TRUE(BitIdentical(out.pose(), Packed(expected)));
  EXPECT_FALSE(BitIdentical(out.pose(), Packed(CoreRetarget(1.0f))));
}

TEST_F(RetargetOpTest, Retarget_SessionRigWithUnknownSourceIsRefused) {
  grpc::ClientContext context;
  std::unique_ptr<SessionStream> stream = stub_->Session(&context);
  RegisterWalk(*stream);
  v1::SessionRequest r;
  r.mutable_register_rig()->set_id("rig");
  r.mutable_register_rig()->set_skeleton_id("cmu");
  v1::RetargetOp* op = r.mutable_register_rig()->add_ops()->mutable_retarget();
  op->set_skeleton_id("nobody");
  op->mutable_pose();
  const v1::SessionResponse response = RoundTrip(*stream, r);
  EXPECT_EQ(response.registered().status().code(),
            static_cast<int>(grpc::StatusCode::NOT_FOUND));
  EXPECT_THAT(response.registered().status().message(),
              ::testing::HasSubstr("register_rig.ops[0].retarget.skeleton_id: "
                                   "no skeleton 'nobody'"));
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

}  // namespace
}  // namespace posewire::server
