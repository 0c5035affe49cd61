// CharacterFrame.op_updates against a real server: a frame that sends only
// the new clip time and IK targets must solve exactly as one that resends
// the whole pipeline with those values; an update lasts one frame; a bad
// update fails its character alone, naming the update; and an OK status is
// left unset on the wire.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "google/protobuf/util/message_differencer.h"
#include "tests/service/service_fixture.h"

namespace posewire::server {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::testing::HasSubstr;

v1::Vec3 Vec(float x, float y, float z) {
  v1::Vec3 v;
  v.set_x(x);
  v.set_y(y);
  v.set_z(z);
  return v;
}

// The rig's pipeline: sample the walk, then one op of each kind an update
// can retarget. The targets are the registered ones; frames move them.
google::protobuf::RepeatedPtrField<v1::Operation> RigOps() {
  google::protobuf::RepeatedPtrField<v1::Operation> ops;
  v1::ClipSample* sample = ops.Add()->mutable_sample_clip()->mutable_sample();
  sample->set_clip("walk");
  sample->set_time(0.1f);
  v1::TwoBoneIkOp* arm = ops.Add()->mutable_two_bone_ik();
  arm->set_start_joint("LeftShoulder");
  arm->set_mid_joint("LeftElbow");
  arm->set_end_joint("LeftWrist");
  *arm->mutable_target() = Vec(8, 14, 4);
  *arm->mutable_bend_goal() = Vec(6, 16, -6);
  v1::AimIkOp* head = ops.Add()->mutable_aim_ik();
  head->set_joint("Head");
  *head->mutable_target() = Vec(0, 20, 30);
  v1::CcdIkOp* right_arm = ops.Add()->mutable_ccd_ik();
  for (const char* j : {"RightShoulder", "RightElbow", "RightWrist"}) {
    right_arm->add_chain(j);
  }
  *right_arm->mutable_target() = Vec(-8, 14, 4);
  v1::FabrikIkOp* leg = ops.Add()->mutable_fabrik_ik();
  for (const char* j : {"LeftHip", "LeftKnee", "LeftAnkle"}) leg->add_chain(j);
  *leg->mutable_target() = Vec(3, 1, 2);
  return ops;
}

// Frame f's values: the clip time and a target for each IK op (and the
// arm's bend goal), all moving with f.
struct FrameInputs {
  float time;
  v1::Vec3 arm_target, arm_bend_goal, head_target, right_arm_target, leg_target;
};

FrameInputs InputsFor(int f) {
  const float s = static_cast<float>(f);
  return {.time = 0.05f * s,
          .arm_target = Vec(8 + 0.3f * s, 14 - 0.2f * s, 4),
          .arm_bend_goal = Vec(6, 16, -6 + 0.1f * s),
          .head_target = Vec(0.5f * s, 20, 30),
          .right_arm_target = Vec(-8, 14 + 0.25f * s, 4),
          .leg_target = Vec(3, 1 + 0.1f * s, 2)};
}

// The same frame as whole ops: the rig's ops with `in`'s values.
void AsOps(const FrameInputs& in, v1::CharacterFrame& c) {
  *c.mutable_ops() = RigOps();
  c.mutable_ops(0)->mutable_sample_clip()->mutable_sample()->set_time(in.time);
  *c.mutable_ops(1)->mutable_two_bone_ik()->mutable_target() = in.arm_target;
  *c.mutable_ops(1)->mutable_two_bone_ik()->mutable_bend_goal() =
      in.arm_bend_goal;
  *c.mutable_ops(2)->mutable_aim_ik()->mutable_target() = in.head_target;
  *c.mutable_ops(3)->mutable_ccd_ik()->mutable_target() = in.right_arm_target;
  *c.mutable_ops(4)->mutable_fabrik_ik()->mutable_target() = in.leg_target;
}

// The same frame as op updates.
void AsUpdates(const FrameInputs& in, v1::CharacterFrame& c) {
  v1::OpUpdate* sample = c.add_op_updates();
  sample->set_op(0);
  sample->set_time(in.time);
  v1::OpUpdate* arm = c.add_op_updates();
  arm->set_op(1);
  *arm->mutable_target() = in.arm_target;
  *arm->mutable_bend_goal() = in.arm_bend_goal;
  // Out of order on purpose: updates name their op.
  v1::OpUpdate* leg = c.add_op_updates();
  leg->set_op(4);
  *leg->mutable_target() = in.leg_target;
  v1::OpUpdate* head = c.add_op_updates();
  head->set_op(2);
  *head->mutable_target() = in.head_target;
  v1::OpUpdate* right_arm = c.add_op_updates();
  right_arm->set_op(3);
  *right_arm->mutable_target() = in.right_arm_target;
}

class OpUpdatesTest : public ServiceTest {
 protected:
  void SetUp() override {
    ServiceTest::SetUp();
    stream_ = stub_->Session(&context_);
    RegisterWalk(*stream_);
    v1::SessionRequest r;
    r.mutable_register_rig()->set_id("rig");
    r.mutable_register_rig()->set_skeleton_id("cmu");
    *r.mutable_register_rig()->mutable_ops() = RigOps();
    ExpectRegistered(RoundTrip(*stream_, r));
    for (const char* id : {"by_updates", "by_ops"}) {
      r.Clear();
      r.mutable_register_character()->set_id(id);
      r.mutable_register_character()->set_rig_id("rig");
      const v1::SessionResponse registered = RoundTrip(*stream_, r);
      ExpectRegistered(registered);
      // OK is left unset on the wire (it reads as code 0).
      EXPECT_FALSE(registered.registered().has_status());
    }
  }

  // A frame for the characters, in order, each edited by its function.
  v1::FrameResult Frame(
      std::vector<
          std::pair<std::string, std::function<void(v1::CharacterFrame&)>>>
          characters) {
    v1::SessionRequest request;
    request.mutable_frame()->set_sequence(++sequence_);
    request.mutable_frame()->set_dt(1.0f / 60.0f);
    for (auto& [id, edit] : characters) {
      v1::CharacterFrame* c = request.mutable_frame()->add_characters();
      c->set_character_id(id);
      c->set_want_model_pose(true);
      edit(*c);
    }
    v1::SessionResponse response = RoundTrip(*stream_, request);
    EXPECT_TRUE(response.has_frame());
    EXPECT_FALSE(response.frame().has_status());
    return response.frame();
  }

  grpc::ClientContext context_;
  std::unique_ptr<SessionStream> stream_;
  uint64_t sequence_ = 0;
};

TEST_F(OpUpdatesTest, UpdatesSolveExactlyAsTheWholeOpsWithTheSameValues) {
  for (int f = 0; f < 20; ++f) {
    const FrameInputs in = InputsFor(f);
    const v1::FrameResult result =
        Frame({{"by_updates", [&](auto& c) { AsUpdates(in, c); }},
               {"by_ops", [&](auto& c) { AsOps(in, c); }}});
    ASSERT_EQ(result.characters_size(), 2);
    const v1::CharacterResult& updated = result.characters(0);
    const v1::CharacterResult& whole = result.characters(1);
    ASSERT_EQ(updated.status().code(), 0) << updated.status().message();
    ASSERT_EQ(whole.status().code(), 0) << whole.status().message();
    EXPECT_FALSE(updated.has_status());
    ASSERT_EQ(updated.pose().transforms_size(), 31 * 10);
    EXPECT_TRUE(BitIdentical(updated.pose(), Floats(whole.pose())))
        << "frame " << f;
    EXPECT_TRUE(BitIdentical(updated.model_pose(), Floats(whole.model_pose())))
        << "frame " << f;
    ASSERT_EQ(updated.ops_size(), 5);
    for (int i = 0; i < 5; ++i) {
      EXPECT_TRUE(MessageDifferencer::Equals(updated.ops(i), whole.ops(i)))
          << "frame " << f << " op " << i;
    }
  }
}

TEST_F(OpUpdatesTest, AnUpdateLastsOneFrame) {
  // Frame 1 moves everything; frame 2 sends nothing, so the registered
  // values apply again, as for a character that never had an update.
  const v1::FrameResult moved =
      Frame({{"by_updates", [](auto& c) { AsUpdates(InputsFor(7), c); }}});
  ASSERT_EQ(moved.characters_size(), 1);
  const v1::FrameResult result =
      Frame({{"by_updates", [](auto&) {}}, {"by_ops", [](auto&) {}}});
  ASSERT_EQ(result.characters_size(), 2);
  ASSERT_EQ(result.characters(0).status().code(), 0);
  EXPECT_TRUE(BitIdentical(result.characters(0).pose(),
                           Floats(result.characters(1).pose())));
  // And the update did move the pose.
  EXPECT_FALSE(BitIdentical(moved.characters(0).pose(),
                            Floats(result.characters(0).pose())));
}

TEST_F(OpUpdatesTest, UpdatesApplyToAFramesOwnOps) {
  // With `ops` sent, indices refer to them, not to the rig's.
  const v1::FrameResult result =
      Frame({{"by_updates",
              [](v1::CharacterFrame& c) {
                v1::ClipSample* sample =
                    c.add_ops()->mutable_sample_clip()->mutable_sample();
                sample->set_clip("walk");
                sample->set_time(0.0f);
                v1::OpUpdate* u = c.add_op_updates();
                u->set_op(0);
                u->set_time(0.4f);
              }},
             {"by_ops", [](v1::CharacterFrame& c) {
                v1::ClipSample* sample =
                    c.add_ops()->mutable_sample_clip()->mutable_sample();
                sample->set_clip("walk");
                sample->set_time(0.4f);
              }}});
  ASSERT_EQ(result.characters_size(), 2);
  ASSERT_EQ(result.characters(0).status().code(), 0)
      << result.characters(0).status().message();
  EXPECT_TRUE(BitIdentical(result.characters(0).pose(),
                           Floats(result.characters(1).pose())));
}

struct BadUpdate {
  const char* name;
  std::function<void(v1::CharacterFrame&)> edit;
  const char* message;
};

TEST_F(OpUpdatesTest, ABadUpdateFailsItsCharacterAloneAndNamesTheUpdate) {
  const float nan = std::nanf("");
  const std::vector<BadUpdate> cases = {
      {"past the last op", [](auto& c) { c.add_op_updates()->set_op(5); },
       "frame.characters[0].op_updates[0].op: 5 is not an op of this frame's "
       "pipeline, which has 5 ops"},
      {"two updates of one op",
       [](auto& c) {
         for (int i = 0; i < 2; ++i) {
           v1::OpUpdate* u = c.add_op_updates();
           u->set_op(2);
           *u->mutable_target() = Vec(0, 1, 0);
         }
       },
       "frame.characters[0].op_updates[1].op: op 2 already has an update in "
       "this frame (one per op)"},
      {"a target for the sample",
       [](auto& c) {
         v1::OpUpdate* u = c.add_op_updates();
         u->set_op(0);
         *u->mutable_target() = Vec(0, 1, 0);
       },
       "frame.characters[0].op_updates[0].target: op 0 is a sample_clip, which "
       "takes time; only "
       "a two_bone_ik, aim_ik, ccd_ik, fabrik_ik or look_at op takes this "
       "update"},
      {"a bend goal for CCD",
       [](auto& c) {
         v1::OpUpdate* u = c.add_op_updates();
         u->set_op(3);
         *u->mutable_bend_goal() = Vec(0, 1, 0);
       },
       "frame.characters[0].op_updates[0].bend_goal: op 3 is a ccd_ik, which "
       "takes target, weight; only a "
       "two_bone_ik op takes this update"},
      {"a time for two-bone IK",
       [](auto& c) {
         v1::OpUpdate* u = c.add_op_updates();
         u->set_op(1);
         u->set_time(1.0f);
       },
       "frame.characters[0].op_updates[0].time: op 1 is a two_bone_ik, which "
       "takes target, bend_goal, weight, pole_vector, end_rotation; only a "
       "sample_clip or retarget op takes this update"},
      {"nothing", [](auto& c) { c.add_op_updates()->set_op(1); },
       "frame.characters[0].op_updates[0]: updates nothing"},
      {"a NaN target",
       [nan](auto& c) {
         v1::OpUpdate* u = c.add_op_updates();
         u->set_op(4);
         *u->mutable_target() = Vec(0, nan, 0);
       },
       "frame.characters[0].op_updates[0].target: NaN or infinite component"},
      {"an infinite bend goal",
       [](auto& c) {
         v1::OpUpdate* u = c.add_op_updates();
         u->set_op(1);
         *u->mutable_bend_goal() = Vec(INFINITY, 0, 0);
       },
       "frame.characters[0].op_updates[0].bend_goal: NaN or infinite"},
      {"a NaN time",
       [nan](auto& c) {
         v1::OpUpdate* u = c.add_op_updates();
         u->set_op(0);
         u->set_time(nan);
       },
       "frame.characters[0].op_updates[0].time: nan is not a finite time"},
  };
  for (const BadUpdate& bad : cases) {
    SCOPED_TRACE(bad.name);
    const v1::FrameResult result =
        Frame({{"by_updates", bad.edit},
               {"by_ops", [](auto& c) { AsOps(InputsFor(3), c); }}});
    ASSERT_EQ(result.characters_size(), 2);
    const v1::CharacterResult& failed = result.characters(0);
    EXPECT_EQ(failed.status().code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(failed.status().message(), HasSubstr(bad.message));
    EXPECT_EQ(failed.pose().transforms_size(), 0);
    EXPECT_EQ(result.characters(1).status().code(), 0)
        << result.characters(1).status().message();
    EXPECT_EQ(result.characters(1).pose().transforms_size(), 31 * 10);
  }
  // The failed frames left the character as it was: it still solves.
  const v1::FrameResult after =
      Frame({{"by_updates", [](auto& c) { AsUpdates(InputsFor(3), c); }},
             {"by_ops", [](auto& c) { AsOps(InputsFor(3), c); }}});
  ASSERT_EQ(after.characters(0).status().code(), 0);
  EXPECT_TRUE(BitIdentical(after.characters(0).pose(),
                           Floats(after.characters(1).pose())));
}

}  // namespace
}  // namespace posewire::server
