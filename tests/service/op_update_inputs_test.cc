// Every per-frame input an OpUpdate can carry (weights, poles, end
// rotations, effectors, blend layer weights, spring forces and colliders),
// against a real server: a character on a registered rig that receives the
// update solves bit for bit as a character that sends the op edited to the
// same values, over two frames (so stateful ops carry their state through).
// Bad updates fail their character alone with a message naming the field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "tests/service/service_fixture.h"

namespace posewire::server {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::testing::HasSubstr;

struct UpdateCase {
  std::string name;
  std::string op;      // the registered op
  std::string update;  // an OpUpdate of it (its `op` index set here)
  std::string edited;  // the op with the update's values written in
};

std::vector<UpdateCase> Cases() {
  const std::string arm =
      R"(start_joint: "LeftShoulder" mid_joint: "LeftElbow"
         end_joint: "LeftWrist" target { x: 8 y: 14 z: 4 })";
  const std::string tree_effectors =
      R"(effectors { joint: "LeftWrist" target { x: 8 y: 14 z: 4 } }
         effectors { joint: "RightWrist" target { x: -8 y: 14 z: 4 } })";
  const std::string ccd_effectors =
      R"(effectors { joint: "LeftWrist" target { x: 8 y: 14 z: 4 } }
         effectors { joint: "RightAnkle" target { x: -3 y: 1 z: 2 } })";
  const std::string collider =
      R"(colliders { shape: SHAPE_SPHERE attachment: ATTACHMENT_WORLD
                     offset { translation { x: 10 y: 15 z: 0 } } radius: 2 })";
  const std::string ground_legs =
      R"(pelvis: "Hips"
         legs { hip: "LeftHip" knee: "LeftKnee" ankle: "LeftAnkle"
                toe: "LeftToe" }
         legs { hip: "RightHip" knee: "RightKnee" ankle: "RightAnkle"
                toe: "RightToe" })";
  return {
      {"two_bone_ik", absl::StrCat("two_bone_ik { ", arm, " }"),
       R"(weight: 0.6 pole_vector { z: 1 }
          end_rotation { x: 0.3826834 w: 0.9238795 })",
       absl::StrCat("two_bone_ik { ", arm, R"( weight: 0.6 pole_vector { z: 1 }
          end_rotation { x: 0.3826834 w: 0.9238795 } })")},
      {"aim_ik", R"(aim_ik { joint: "Head" target { x: 0 y: 20 z: 30 } })",
       R"(weight: 0.5 pole_vector { x: 1 })",
       R"(aim_ik { joint: "Head" target { x: 0 y: 20 z: 30 } weight: 0.5
                   pole_vector { x: 1 } })"},
      {"look_at",
       R"(look_at { spine: ["Chest", "Chest2", "Neck"] head: "Head"
                    target { x: 0 y: 20 z: 30 } })",
       R"(weight: 0.5 target { x: 10 y: 22 z: 30 })",
       R"(look_at { spine: ["Chest", "Chest2", "Neck"] head: "Head"
                    target { x: 10 y: 22 z: 30 } weight: 0.5 })"},
      {"ground", absl::StrCat("ground { ", ground_legs, R"(
                   samples { hit: true point { y: 1 } }
                   samples { hit: true point { y: 0.5 } } })"),
       R"(weight: 0.5 ground_samples { hit: true point { y: 1.5 } }
          ground_samples { hit: true point { y: 0.8 } normal { x: 0.1 y: 1 } })",
       absl::StrCat("ground { ", ground_legs, R"(
                   samples { hit: true point { y: 1.5 } }
                   samples { hit: true point { y: 0.8 } normal { x: 0.1 y: 1 } }
                   weight: 0.5 })")},
      {"ccd_ik",
       R"(ccd_ik { chain: ["RightShoulder", "RightElbow", "RightWrist"]
                   target { x: -8 y: 14 z: 4 } })",
       "weight: 0.7",
       R"(ccd_ik { chain: ["RightShoulder", "RightElbow", "RightWrist"]
                   target { x: -8 y: 14 z: 4 } weight: 0.7 })"},
      {"fabrik_ik",
       R"(fabrik_ik { chain: ["LeftHip", "LeftKnee", "LeftAnkle"]
                      target { x: 3 y: 1 z: 2 } })",
       "weight: 0.8",
       R"(fabrik_ik { chain: ["LeftHip", "LeftKnee", "LeftAnkle"]
                      target { x: 3 y: 1 z: 2 } weight: 0.8 })"},
      {"fabrik_tree_ik",
       absl::StrCat(R"(fabrik_tree_ik { root: "Chest" )", tree_effectors, " }"),
       R"(weight: 0.9 effectors { index: 1 target { x: -7 y: 16 z: 5 } })",
       R"(fabrik_tree_ik { root: "Chest"
            effectors { joint: "LeftWrist" target { x: 8 y: 14 z: 4 } }
            effectors { joint: "RightWrist" target { x: -7 y: 16 z: 5 } }
            weight: 0.9 })"},
      {"full_body_ccd", absl::StrCat("full_body_ccd { ", ccd_effectors, " }"),
       R"(weight: 0.75
          effectors { index: 0 target { x: 7 y: 15 z: 5 } position_weight: 0.5 })",
       R"(full_body_ccd {
            effectors { joint: "LeftWrist" target { x: 7 y: 15 z: 5 }
                        weight: 0.5 }
            effectors { joint: "RightAnkle" target { x: -3 y: 1 z: 2 } }
            weight: 0.75 })"},
      {"full_body_biped_ik",
       R"(full_body_biped_ik { effectors { id: BIPED_EFFECTOR_LEFT_HAND
            position { x: 8 y: 14 z: 4 } position_weight: 1 } })",
       R"(weight: 0.8
          effectors { id: BIPED_EFFECTOR_RIGHT_FOOT target { x: -3 y: 1 z: 2 }
                      position_weight: 1 }
          effectors { id: BIPED_EFFECTOR_LEFT_HAND
                      rotation { y: 0.3826834 w: 0.9238795 }
                      rotation_weight: 0.5 })",
       R"(full_body_biped_ik {
            effectors { id: BIPED_EFFECTOR_LEFT_HAND
                        position { x: 8 y: 14 z: 4 } position_weight: 1
                        rotation { y: 0.3826834 w: 0.9238795 }
                        rotation_weight: 0.5 }
            effectors { id: BIPED_EFFECTOR_RIGHT_FOOT
                        position { x: -3 y: 1 z: 2 } position_weight: 1 }
            ik_position_weight: 0.8 })"},
      {"blend",
       R"(blend { layers { source { current: true } weight: 1 }
                  layers { source { clip { clip: "walk" time: 0.5 } }
                           weight: 0.5 } })",
       "layer_weights: [0.2, 0.8]",
       R"(blend { layers { source { current: true } weight: 0.2 }
                  layers { source { clip { clip: "walk" time: 0.5 } }
                           weight: 0.8 } })"},
      {"additive",
       R"(additive { base { clip { clip: "walk" time: 0 } }
                     additive { clip { clip: "walk" time: 0.5 } } weight: 1 })",
       "weight: 0.3",
       R"(additive { base { clip { clip: "walk" time: 0 } }
                     additive { clip { clip: "walk" time: 0.5 } }
                     weight: 0.3 })"},
      {"spring_bones",
       absl::StrCat(R"(spring_bones { rig { root_joints: "LeftShoulder" } )",
                    collider, " }"),
       R"(gravity { y: -98 } external_force { x: 5 }
          wind { direction { x: 1 } speed: 3 }
          colliders { index: 0
                      offset { translation { x: 9 y: 14 z: 1 } } })",
       R"(spring_bones { rig { root_joints: "LeftShoulder" }
            colliders { shape: SHAPE_SPHERE attachment: ATTACHMENT_WORLD
                        offset { translation { x: 9 y: 14 z: 1 } } radius: 2 }
            gravity { y: -98 } external_force { x: 5 }
            wind { direction { x: 1 } speed: 3 } })"},
  };
}

template <typename Message>
Message Parse(const std::string& text) {
  Message m;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &m)) << text;
  return m;
}

class OpUpdateInputsTest : public ServiceTest {
 protected:
  void SetUp() override {
    ServiceTest::SetUp();
    stream_ = stub_->Session(&context_);
    RegisterWalk(*stream_);
  }

  // A rig of the walk sample then `op`, and characters `ids` on it.
  void Register(const std::string& rig, const v1::Operation& op,
                const std::vector<std::string>& ids) {
    v1::SessionRequest r;
    r.mutable_register_rig()->set_id(rig);
    r.mutable_register_rig()->set_skeleton_id("cmu");
    *r.mutable_register_rig()->add_ops() = op;
    ExpectRegistered(RoundTrip(*stream_, r));
    for (const std::string& id : ids) {
      r.Clear();
      r.mutable_register_character()->set_id(id);
      r.mutable_register_character()->set_rig_id(rig);
      ExpectRegistered(RoundTrip(*stream_, r));
    }
  }

  // One frame; each character starts from the walk at 1 s.
  v1::FrameResult Frame(const std::vector<v1::CharacterFrame>& characters) {
    v1::SessionRequest request;
    request.mutable_frame()->set_sequence(++sequence_);
    request.mutable_frame()->set_dt(1.0f / 60.0f);
    for (v1::CharacterFrame c : characters) {
      PoseToProto(SampleWalk(1.0f), c.mutable_pose());
      *request.mutable_frame()->add_characters() = c;
    }
    const v1::SessionResponse response = RoundTrip(*stream_, request);
    EXPECT_TRUE(response.has_frame());
    return response.frame();
  }

  grpc::ClientContext context_;
  std::unique_ptr<SessionStream> stream_;
  uint64_t sequence_ = 0;
};

TEST_F(OpUpdateInputsTest, EachUpdateSolvesAsTheOpEditedToItsValues) {
  for (const UpdateCase& test : Cases()) {
    SCOPED_TRACE(test.name);
    const v1::Operation op = Parse<v1::Operation>(test.op);
    Register(test.name, op, {test.name + "/updated", test.name + "/edited"});
    v1::CharacterFrame updated;
    updated.set_character_id(test.name + "/updated");
    *updated.add_op_updates() = Parse<v1::OpUpdate>(test.update);
    v1::CharacterFrame edited;
    edited.set_character_id(test.name + "/edited");
    *edited.add_ops() = Parse<v1::Operation>(test.edited);
    // The plain rig, to show the update changes the answer.
    v1::CharacterFrame plain;
    plain.set_character_id(test.name + "/updated");
    for (int frame = 0; frame < 2; ++frame) {
      const v1::FrameResult result = Frame({updated, edited});
      ASSERT_EQ(result.characters_size(), 2);
      const v1::CharacterResult& a = result.characters(0);
      const v1::CharacterResult& b = result.characters(1);
      ASSERT_EQ(a.status().code(), 0) << a.status().message();
      ASSERT_EQ(b.status().code(), 0) << b.status().message();
      EXPECT_TRUE(BitIdentical(a.pose(), Floats(b.pose()))) << frame;
      ASSERT_EQ(a.ops_size(), 1);
      EXPECT_TRUE(MessageDifferencer::Equals(a.ops(0), b.ops(0)))
          << a.ops(0).ShortDebugString() << " vs "
          << b.ops(0).ShortDebugString();
    }
    // Spring bones keep state; the others answer the registered op alone.
    if (test.name != "spring_bones") {
      const v1::FrameResult result = Frame({plain});
      ASSERT_EQ(result.characters_size(), 1);
      EXPECT_FALSE(BitIdentical(result.characters(0).pose(),
                                Floats(Frame({updated}).characters(0).pose())))
          << "the update changed nothing";
    }
  }
}

TEST_F(OpUpdateInputsTest, GetInfoListsExactlyTheInputsTheseCasesUpdate) {
  grpc::ClientContext context;
  v1::GetInfoResponse info;
  ASSERT_TRUE(stub_->GetInfo(&context, {}, &info).ok());
  for (const UpdateCase& test : Cases()) {
    const auto update = Parse<v1::OpUpdate>(test.update);
    for (const v1::OperationInfo& op : info.operation_info()) {
      if (op.name() != test.name) continue;
      std::vector<const google::protobuf::FieldDescriptor*> set;
      update.GetReflection()->ListFields(update, &set);
      for (const auto* field : set) {
        EXPECT_THAT(op.updatable(), ::testing::Contains(field->name()))
            << test.name;
      }
    }
  }
}

struct BadUpdate {
  std::string name;
  std::string op;
  std::string update;
  std::string message;  // a part of the error
};

TEST_F(OpUpdateInputsTest, BadUpdatesFailTheirCharacterNamingTheField) {
  const std::vector<BadUpdate> cases = {
      {"weight_nan", R"(ccd_ik { chain: ["LeftElbow", "LeftWrist"] })",
       "weight: nan", "op_updates[0].weight: nan is not a finite weight"},
      {"weight_for_blend",
       R"(blend { layers { source { current: true } weight: 1 } })",
       "weight: 1",
       "op_updates[0].weight: op 0 is a blend, which takes layer_weights; "
       "only an additive, two_bone_ik, aim_ik, ccd_ik, fabrik_ik, "
       "fabrik_tree_ik, full_body_biped_ik, full_body_ccd, look_at or ground "
       "op "
       "takes this update"},
      {"layer_count",
       R"(blend { layers { source { current: true } weight: 1 } })",
       "layer_weights: [1, 2]",
       "op_updates[0].layer_weights: 2 weights for 1 layers"},
      {"effector_index",
       R"(fabrik_tree_ik { root: "Chest"
            effectors { joint: "LeftWrist" target { x: 8 y: 14 z: 4 } } })",
       "effectors { index: 1 target { x: 1 } }",
       "op_updates[0].effectors[0].index: 1 is not an effector of this op, "
       "which has 1"},
      {"effector_twice",
       R"(full_body_ccd {
            effectors { joint: "LeftWrist" target { x: 8 y: 14 z: 4 } } })",
       "effectors { index: 0 target { x: 1 } } "
       "effectors { index: 0 target { x: 2 } }",
       "op_updates[0].effectors[1].index: effector 0 already has an update"},
      {"tree_effector_weight",
       R"(fabrik_tree_ik { root: "Chest"
            effectors { joint: "LeftWrist" target { x: 8 y: 14 z: 4 } } })",
       "effectors { index: 0 position_weight: 1 }",
       "op_updates[0].effectors[0]: this op's effectors take only index, "
       "target"},
      {"biped_rotation_not_unit",
       R"(full_body_biped_ik { effectors { id: BIPED_EFFECTOR_LEFT_HAND
            position { x: 8 y: 14 z: 4 } position_weight: 1 } })",
       "effectors { id: BIPED_EFFECTOR_LEFT_HAND rotation { x: 3 w: 0 } }",
       "op_updates[0].effectors[0].rotation"},
      {"collider_index",
       R"(spring_bones { rig { root_joints: "LeftShoulder" } })",
       "colliders { index: 0 offset { translation { x: 1 } } }",
       "op_updates[0].colliders[0].index: 0 is not a collider of this op, "
       "which has 0"},
      {"gravity_inf", R"(spring_bones { rig { root_joints: "LeftShoulder" } })",
       "gravity { y: inf }", "op_updates[0].gravity"},
      {"end_rotation_for_aim",
       R"(aim_ik { joint: "Head" target { x: 0 y: 20 z: 30 } })",
       "end_rotation { w: 1 }",
       "op_updates[0].end_rotation: op 0 is a aim_ik, which takes target, "
       "weight, pole_vector; only a two_bone_ik op takes this update"},
  };
  for (const BadUpdate& test : cases) {
    SCOPED_TRACE(test.name);
    Register(test.name, Parse<v1::Operation>(test.op), {test.name});
    v1::CharacterFrame bad;
    bad.set_character_id(test.name);
    *bad.add_op_updates() = Parse<v1::OpUpdate>(test.update);
    const v1::FrameResult result = Frame({bad});
    ASSERT_EQ(result.characters_size(), 1);
    EXPECT_EQ(result.characters(0).status().code(),
              grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(result.characters(0).status().message(),
                HasSubstr(test.message));
    EXPECT_THAT(result.characters(0).status().message(),
                HasSubstr("frame.characters[0].op_updates[0]"));
  }
}

}  // namespace
}  // namespace posewire::server
