// Bad-input catalogue rows: Session registrations and frames.
#include "tests/service/bad_input/harness.h"

namespace posewire::server::bad_input {

std::vector<BadInput> SessionRows() {
  std::vector<BadInput> rows;
  auto add = [&rows](BadInput row) { rows.push_back(std::move(row)); };

  // ---- session registrations
  auto unchanged = [](v1::SessionRequest&) {};
  add(SetupAgainRow(
      "session_duplicate_skeleton", "register skeleton 'cmu' twice", 0,
      unchanged, StatusCode::ALREADY_EXISTS,
      "register_skeleton.id: skeleton 'cmu' is already registered"));
  add(SetupAgainRow("session_duplicate_clip", "register clip 'walk' twice", 1,
                    unchanged, StatusCode::ALREADY_EXISTS,
                    "register_clip.id: clip 'walk' is already registered"));
  add(SetupAgainRow(
      "session_duplicate_character", "register character 'hero' twice", 3,
      unchanged, StatusCode::ALREADY_EXISTS,
      "register_character.id: character 'hero' is already registered"));
  add(SetupAgainRow("session_duplicate_rig", "register rig 'player' twice", 2,
                    unchanged, StatusCode::ALREADY_EXISTS,
                    "register_rig.id: rig 'player' is already registered"));
  add(SetupAgainRow(
      "session_skeleton_nan", "register a skeleton with a NaN rest scale", 0,
      [](v1::SessionRequest& r) {
        r.mutable_register_skeleton()->set_id("bad");
        r.mutable_register_skeleton()->mutable_skeleton()->set_rest_pose(kSx,
                                                                         kNaN);
      },
      StatusCode::INVALID_ARGUMENT,
      "register_skeleton.skeleton: skeleton.rest_pose[0] 'Hips': scale"));
  add(SetupAgainRow(
      "session_clip_unknown_skeleton", "register a clip for skeleton 'ghost'",
      1,
      [](v1::SessionRequest& r) {
        r.mutable_register_clip()->set_id("walk2");
        r.mutable_register_clip()->set_skeleton_id("ghost");
      },
      StatusCode::NOT_FOUND,
      "register_clip.skeleton_id: no skeleton 'ghost' in this session"));
  add(SetupAgainRow(
      "session_rig_unknown_skeleton", "register a rig for skeleton 'ghost'", 2,
      [](v1::SessionRequest& r) {
        r.mutable_register_rig()->set_id("rig2");
        r.mutable_register_rig()->set_skeleton_id("ghost");
      },
      StatusCode::NOT_FOUND,
      "register_rig.skeleton_id: no skeleton 'ghost' in this session"));
  add(SetupAgainRow(
      "session_character_unknown_rig", "register a character of rig 'ghost'", 3,
      [](v1::SessionRequest& r) {
        r.mutable_register_character()->set_id("villain");
        r.mutable_register_character()->set_rig_id("ghost");
      },
      StatusCode::NOT_FOUND,
      "register_character.rig_id: no rig 'ghost' in this session"));
  add(SetupAgainRow(
      "session_empty_id", "register a rig with id ''", 2,
      [](v1::SessionRequest& r) { r.mutable_register_rig()->clear_id(); },
      StatusCode::INVALID_ARGUMENT, "register_rig.id: an id is required"));
  add(SessionRow(
      "session_empty_message", "a SessionRequest with nothing set",
      [] { return std::vector<v1::SessionRequest>(1); },
      StatusCode::INVALID_ARGUMENT, "empty SessionRequest"));
  add(SessionRow(
      "session_object_limit", "5 more characters past the limit of 8 objects",
      [] {
        std::vector<v1::SessionRequest> messages(5);
        for (int i = 0; i < 5; ++i) {
          messages[i].mutable_register_character()->set_id(
              absl::StrCat("extra", i));
          messages[i].mutable_register_character()->set_rig_id("player");
        }
        return messages;
      },
      StatusCode::RESOURCE_EXHAUSTED,
      "register_character: this session already holds 8 registered objects"));

  // ---- session frames
  add(SessionRow(
      "frame_sequence_repeated", "two frames with sequence 10",
      [] {
        return std::vector<v1::SessionRequest>{FrameFor(10, "hero"),
                                               FrameFor(10, "hero")};
      },
      StatusCode::INVALID_ARGUMENT,
      "frame.sequence: 10 does not increase (last frame was 10)"));
  add(SessionRow(
      "frame_sequence_backwards", "frame 10, then frame 9",
      [] {
        return std::vector<v1::SessionRequest>{FrameFor(10, "hero"),
                                               FrameFor(9, "hero")};
      },
      StatusCode::INVALID_ARGUMENT, "frame.sequence: 9 does not increase"));
  add(SessionRow(
      "frame_dt_nan", "Frame.dt NaN",
      [] {
        v1::SessionRequest r = FrameFor(1, "hero");
        r.mutable_frame()->set_dt(kNaN);
        return std::vector<v1::SessionRequest>{r};
      },
      StatusCode::INVALID_ARGUMENT, "frame.dt: nan must be finite and >= 0"));
  add(SessionRow(
      "frame_dt_negative", "Frame.dt -1",
      [] {
        v1::SessionRequest r = FrameFor(1, "hero");
        r.mutable_frame()->set_dt(-1.0f);
        return std::vector<v1::SessionRequest>{r};
      },
      StatusCode::INVALID_ARGUMENT, "frame.dt: -1 must be finite and >= 0"));
  add(SessionRow(
      "frame_too_many_characters", "a frame of 9 characters (limit 8)",
      [] {
        v1::SessionRequest r = FrameFor(1, "hero");
        for (int i = 0; i < kMaxCharacters; ++i) {
          r.mutable_frame()->add_characters()->set_character_id("hero");
        }
        return std::vector<v1::SessionRequest>{r};
      },
      StatusCode::RESOURCE_EXHAUSTED,
      "frame.characters: 9 characters exceed this server's limit of 8"));
  add(SessionRow(
      "frame_unknown_character", "a frame for character 'ghost'",
      [] { return std::vector<v1::SessionRequest>{FrameFor(1, "ghost")}; },
      StatusCode::NOT_FOUND,
      "frame.characters[0].character_id: no character 'ghost'"));
  add(FrameRow(
      "frame_pose_size_mismatch", "a frame pose of 11 floats",
      [](v1::CharacterFrame& c) {
        c.mutable_pose()->mutable_transforms()->Resize(11, 0.0f);
      },
      StatusCode::INVALID_ARGUMENT,
      "frame.characters[0].pose: 11 floats for 31 joints"));
  add(FrameRow(
      "frame_pose_non_unit_quaternion", "a frame pose rotation of norm 3",
      [](v1::CharacterFrame& c) { *c.mutable_pose() = RestWith(2, kQw, 3.0f); },
      StatusCode::INVALID_ARGUMENT,
      "frame.characters[0].pose[2] 'LeftHip': rotation norm 3 is not 1"));
  add(FrameRow(
      "frame_root_nan", "a frame root translation.x NaN",
      [](v1::CharacterFrame& c) {
        c.mutable_root()->mutable_translation()->set_x(kNaN);
      },
      StatusCode::INVALID_ARGUMENT,
      "frame.characters[0].root.translation: NaN or infinite"));
  add(FrameRow(
      "frame_op_override_bad_joint", "a frame's ops override naming 'Wing'",
      [](v1::CharacterFrame& c) {
        v1::AimIkOp* aim = c.add_ops()->mutable_aim_ik();
        aim->set_joint("Wing");
        *aim->mutable_target() = Vec(0, 1, 0);
      },
      StatusCode::INVALID_ARGUMENT,
      "frame.characters[0].ops[0].aim_ik.joint: no joint named 'Wing'"));
  add(FrameRow(
      "frame_unknown_clip", "a frame's sample_clip naming clip 'run'",
      [](v1::CharacterFrame& c) {
        c.add_ops()->mutable_sample_clip()->mutable_sample()->set_clip("run");
      },
      StatusCode::NOT_FOUND,
      "frame.characters[0].ops[0].sample_clip.sample.clip: no clip named "
      "'run'"));
  add(FrameRow(
      "op_update_past_last_op", "an op update of op 1 for a one-op rig",
      [](v1::CharacterFrame& c) {
        v1::OpUpdate* u = c.add_op_updates();
        u->set_op(1);
        u->set_time(0.2f);
      },
      StatusCode::INVALID_ARGUMENT,
      "frame.characters[0].op_updates[0].op: 1 is not an op of this frame's "
      "pipeline, which has 1 op"));
  add(FrameRow(
      "op_update_twice", "two op updates of the same op",
      [](v1::CharacterFrame& c) {
        for (int i = 0; i < 2; ++i) {
          v1::OpUpdate* u = c.add_op_updates();
          u->set_op(0);
          u->set_time(0.2f);
        }
      },
      StatusCode::INVALID_ARGUMENT,
      "frame.characters[0].op_updates[1].op: op 0 already has an update"));
  add(FrameRow(
      "op_update_target_for_sample", "an op update giving sample_clip a target",
      [](v1::CharacterFrame& c) {
        v1::OpUpdate* u = c.add_op_updates();
        u->set_op(0);
        *u->mutable_target() = Vec(0, 1, 0);
      },
      StatusCode::INVALID_ARGUMENT,
      "frame.characters[0].op_updates[0].target: op 0 is a sample_clip, which "
      "takes time; only "
      "a two_bone_ik, aim_ik, ccd_ik, fabrik_ik or look_at op takes this "
      "update"));
  add(FrameRow(
      "op_update_empty", "an op update setting nothing",
      [](v1::CharacterFrame& c) { c.add_op_updates()->set_op(0); },
      StatusCode::INVALID_ARGUMENT,
      "frame.characters[0].op_updates[0]: updates nothing"));
  add(FrameRow(
      "op_update_time_infinite", "an op update with time +inf",
      [](v1::CharacterFrame& c) {
        v1::OpUpdate* u = c.add_op_updates();
        u->set_op(0);
        u->set_time(kInf);
      },
      StatusCode::INVALID_ARGUMENT,
      "frame.characters[0].op_updates[0].time: inf is not a finite time"));
  add(FrameRow(
      "op_update_target_nan", "an op update of an aim_ik target with NaN",
      [](v1::CharacterFrame& c) {
        v1::AimIkOp* aim = c.add_ops()->mutable_aim_ik();
        aim->set_joint("Head");
        *aim->mutable_target() = Vec(0, 1, 0);
        v1::OpUpdate* u = c.add_op_updates();
        u->set_op(0);
        *u->mutable_target() = Vec(kNaN, 1, 0);
      },
      StatusCode::INVALID_ARGUMENT,
      "frame.characters[0].op_updates[0].target: NaN or infinite component"));
  add(FrameRow(
      "op_update_weight_for_sample", "an op update giving sample_clip a weight",
      [](v1::CharacterFrame& c) {
        v1::OpUpdate* u = c.add_op_updates();
        u->set_op(0);
        u->set_weight(0.5f);
      },
      StatusCode::INVALID_ARGUMENT,
      "frame.characters[0].op_updates[0].weight: op 0 is a sample_clip, "
      "which takes time; only an additive, two_bone_ik, aim_ik, ccd_ik, "
      "fabrik_ik, fabrik_tree_ik, full_body_biped_ik, full_body_ccd, look_at "
      "or "
      "ground op takes this update"));
  add(FrameRow(
      "op_update_effector_index",
      "an op update of effector 3 of a one-effector FABRIK tree",
      [](v1::CharacterFrame& c) {
        v1::FabrikTreeIkOp* tree = c.add_ops()->mutable_fabrik_tree_ik();
        tree->set_root("Chest");
        v1::FabrikEffector* e = tree->add_effectors();
        e->set_joint("LeftWrist");
        *e->mutable_target() = Vec(8, 14, 4);
        v1::OpUpdate* u = c.add_op_updates();
        u->set_op(0);
        v1::EffectorUpdate* moved = u->add_effectors();
        moved->set_index(3);
        *moved->mutable_target() = Vec(1, 2, 3);
      },
      StatusCode::INVALID_ARGUMENT,
      "frame.characters[0].op_updates[0].effectors[0].index: 3 is not an "
      "effector of this op, which has 1 (indices from 0)"));
  add(FrameRow(
      "op_update_layer_count",
      "an op update with 2 layer weights for a 1-layer blend",
      [](v1::CharacterFrame& c) {
        v1::BlendLayer* layer = c.add_ops()->mutable_blend()->add_layers();
        layer->mutable_source()->set_current(true);
        layer->set_weight(1.0f);
        v1::OpUpdate* u = c.add_op_updates();
        u->set_op(0);
        u->add_layer_weights(0.5f);
        u->add_layer_weights(0.5f);
      },
      StatusCode::INVALID_ARGUMENT,
      "frame.characters[0].op_updates[0].layer_weights: 2 weights for 1 "
      "layers (one per layer, in order)"));
  add(FrameRow(
      "op_update_collider_index",
      "an op update moving a collider spring bones lack",
      [](v1::CharacterFrame& c) {
        c.add_ops()->mutable_spring_bones()->mutable_rig()->add_root_joints(
            "LeftShoulder");
        v1::OpUpdate* u = c.add_op_updates();
        u->set_op(0);
        u->add_colliders()->set_index(0);
      },
      StatusCode::INVALID_ARGUMENT,
      "frame.characters[0].op_updates[0].colliders[0].index: 0 is not a "
      "collider of this op, which has 0 (indices from 0)"));
  add(SessionRow(
      "rig_with_bad_op",
      "a rig whose two_bone_ik names 'Wing' (refused when registered)",
      [] {
        std::vector<v1::SessionRequest> messages(1);
        v1::RegisterRig* rig = messages[0].mutable_register_rig();
        rig->set_id("broken");
        rig->set_skeleton_id("cmu");
        v1::TwoBoneIkOp* op = rig->add_ops()->mutable_two_bone_ik();
        op->set_start_joint("Wing");
        return messages;
      },
      StatusCode::INVALID_ARGUMENT,
      "register_rig.ops[0].two_bone_ik.start_joint: no joint named "
      "'Wing'"));
  return rows;
}

}  // namespace posewire::server::bad_input
