// Bad-input catalogue rows: Blend and additive weights; crossfade commands and
// their state.
#include "tests/service/bad_input/harness.h"

namespace posewire::server::bad_input {

std::vector<BadInput> PoseOpRows() {
  std::vector<BadInput> rows;
  auto add = [&rows](BadInput row) { rows.push_back(std::move(row)); };

  // ---- blend and additive weights
  add(SolveRow(
      "blend_no_layers", "blend with no layers",
      [](auto& r) { AddOp(r)->mutable_blend(); }, StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].blend.layers: at least one layer is required"));
  add(SolveRow(
      "blend_weight_nan", "blend layer 1 weight NaN",
      [](auto& r) { Blend(r)->mutable_layers(1)->set_weight(kNaN); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].blend.layers[1].weight: nan is not "
      "finite"));
  add(SolveRow(
      "blend_weight_inf", "blend layer 0 weight +Inf",
      [](auto& r) { Blend(r)->mutable_layers(0)->set_weight(kInf); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].blend.layers[0].weight: inf is not "
      "finite"));
  add(SolveRow(
      "blend_weights_overflow", "two blend layers of weight 3e38 (sum +Inf)",
      [](auto& r) {
        v1::BlendOp* op = Blend(r);
        op->mutable_layers(0)->set_weight(3e38f);
        op->mutable_layers(1)->set_weight(3e38f);
      },
      StatusCode::INVALID_ARGUMENT,
      "blend.layers[0].weight: 3e+38 exceeds the largest accepted weight"));
  add(SolveSameRow(
      "blend_weight_negative",
      "blend layer 1 weight -3 (counts as 0: layer 0 alone)",
      [](auto& r) { Blend(r)->mutable_layers(1)->set_weight(-3.0f); },
      [](auto& r) { Blend(r)->mutable_layers(1)->set_weight(0.0f); }));
  add(SolveRow(
      "blend_joint_weights_count", "joint_weights of 5 for 31 joints",
      [](auto& r) {
        Blend(r)->mutable_layers(0)->mutable_joint_weights()->Resize(5, 1.0f);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].blend.layers[0].joint_weights: 5 weights for 31 "
      "joints"));
  add(SolveRow(
      "blend_joint_weight_nan", "joint_weights[3] is NaN",
      [](auto& r) {
        v1::BlendLayer* layer = Blend(r)->mutable_layers(0);
        layer->mutable_joint_weights()->Resize(31, 1.0f);
        layer->set_joint_weights(3, kNaN);
      },
      StatusCode::INVALID_ARGUMENT,
      "blend.layers[0].joint_weights[3] 'LeftKnee': nan is not finite"));
  add(SolveRow(
      "blend_base_layer_out_of_range", "base_layer = 7 with 2 layers",
      [](auto& r) { Blend(r)->set_base_layer(7); },
      StatusCode::INVALID_ARGUMENT,
      "blend.base_layer: 7 is out of range [-1, 2)"));
  add(SolveRow(
      "blend_threshold_nan", "threshold NaN",
      [](auto& r) { Blend(r)->set_threshold(kNaN); },
      StatusCode::INVALID_ARGUMENT,
      "blend.threshold: nan must be finite and non-negative"));
  add(SolveRow(
      "blend_root_unknown_joint", "blend_root 'Tail'",
      [](auto& r) { Blend(r)->set_blend_root("Tail"); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].blend.blend_root: no joint named 'Tail'"));
  add(SolveRow(
      "blend_source_unset", "a layer with no source",
      [](auto& r) { Blend(r)->mutable_layers(0)->clear_source(); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].blend.layers[0].source: no source set"));
  add(SolveRow(
      "blend_source_pose_wrong_size", "a layer's explicit pose of 20 floats",
      [](auto& r) {
        v1::Pose* pose =
            Blend(r)->mutable_layers(0)->mutable_source()->mutable_pose();
        pose->mutable_transforms()->Resize(20, 0.0f);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].blend.layers[0].source.pose: 20 floats"));
  add(SolveRow(
      "additive_weight_above_one", "additive weight 2 (range [-1, 1])",
      [](auto& r) { Additive(r)->set_weight(2.0f); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].additive.weight: 2 is not in [-1, 1]"));
  add(SolveRow(
      "additive_weight_huge_negative", "additive weight -1e30",
      [](auto& r) { Additive(r)->set_weight(-1e30f); },
      StatusCode::INVALID_ARGUMENT,
      "additive.weight: -1e+30 is not in [-1, 1]"));
  add(SolveRow(
      "additive_weight_nan", "additive weight NaN",
      [](auto& r) { Additive(r)->set_weight(kNaN); },
      StatusCode::INVALID_ARGUMENT, "additive.weight: nan is not in [-1, 1]"));

  // ---- crossfade and its state
  add(SolveRow(
      "crossfade_unknown_clip", "crossfade play 'run'",
      [](auto& r) { Crossfade(r)->mutable_commands(0)->set_play("run"); },
      StatusCode::NOT_FOUND,
      "characters[0].ops[0].crossfade.commands[0].play: no clip named 'run'"));
  add(SolveRow(
      "crossfade_negative_fade", "fade_to with fade_seconds -1",
      [](auto& r) {
        v1::FadeTo* fade = Crossfade(r)->add_commands()->mutable_fade_to();
        fade->set_clip("walk");
        fade->set_fade_seconds(-1.0f);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].crossfade.commands[1].fade_to: "
      "crossfade.fade_to.duration: -1 must be finite"));
  add(SolveRow(
      "crossfade_fade_nan", "fade_to with fade_seconds NaN",
      [](auto& r) {
        v1::FadeTo* fade = Crossfade(r)->add_commands()->mutable_fade_to();
        fade->set_clip("walk");
        fade->set_fade_seconds(kNaN);
      },
      StatusCode::INVALID_ARGUMENT,
      "crossfade.fade_to.duration: nan must be finite"));
  add(SolveRow(
      "crossfade_unknown_fade_curve", "FadeTo.curve = 9",
      [](auto& r) {
        v1::FadeTo* fade = Crossfade(r)->add_commands()->mutable_fade_to();
        fade->set_clip("walk");
        fade->set_fade_seconds(0.2f);
        fade->set_curve(static_cast<v1::FadeCurve>(9));
      },
      StatusCode::INVALID_ARGUMENT,
      "crossfade.commands[1].fade_to.curve: unknown value 9"));
  add(SolveRow(
      "crossfade_command_unset", "a CrossfadeCommand with nothing set",
      [](auto& r) { Crossfade(r)->add_commands(); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].crossfade.commands[1]: no command set"));
  add(SolveRow(
      "state_unknown_clip", "crossfade state playing clip 'run'",
      [](auto& r) {
        AddOp(r)->mutable_crossfade();
        (*Hero(r).mutable_state())["crossfade"].mutable_crossfade()->set_clip(
            "run");
      },
      StatusCode::NOT_FOUND,
      "characters[0].state[\"crossfade\"].clip: no clip named 'run'"));
  add(SolveRow(
      "state_time_nan", "crossfade state time NaN",
      [](auto& r) {
        AddOp(r)->mutable_crossfade();
        v1::CrossfadeState* s =
            (*Hero(r).mutable_state())["crossfade"].mutable_crossfade();
        s->set_clip("walk");
        s->set_time(kNaN);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].crossfade.state.current.time: nan is "
      "not finite"));
  add(SolveRow(
      "state_too_many_fades", "crossfade state with 17 queued fades",
      [](auto& r) {
        AddOp(r)->mutable_crossfade();
        v1::CrossfadeState* s =
            (*Hero(r).mutable_state())["crossfade"].mutable_crossfade();
        s->set_clip("walk");
        for (int i = 0; i <= kMaxQueuedFades; ++i) {
          s->add_fades()->set_clip("walk");
        }
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].state[\"crossfade\"].fades: 17 fades exceed the limit "
      "of 16"));
  add(SolveRow(
      "state_fade_unknown_curve", "crossfade state fade with curve 4",
      [](auto& r) {
        AddOp(r)->mutable_crossfade();
        v1::CrossfadeState* s =
            (*Hero(r).mutable_state())["crossfade"].mutable_crossfade();
        s->set_clip("walk");
        v1::PendingFade* fade = s->add_fades();
        fade->set_clip("walk");
        fade->set_duration(0.5f);
        fade->set_curve(static_cast<v1::FadeCurve>(4));
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].state[\"crossfade\"].fades[0].curve: unknown value 4"));
  add({"state_dynamics_of_another_rig",
       "spring state from a LeftShoulder rig sent to a RightShoulder rig",
       [](v1::PoseWire::Stub& stub) {
         v1::SolveRequest first = BaseSolve();
         Spring(first);
         v1::SolveResponse response;
         if (Outcome o = CallSolve(stub, first, &response);
             o.code != StatusCode::OK) {
           return Outcome{StatusCode::UNKNOWN,
                          absl::StrCat("the first frame failed: ", o.message)};
         }
         v1::SolveRequest second = BaseSolve();
         Spring(second)->mutable_rig()->set_root_joints(0, "RightShoulder");
         *Hero(second).mutable_state() = response.characters(0).state();
         return CallSolve(stub, second, &response);
       },
       StatusCode::INVALID_ARGUMENT,
       "spring_bones.state_in: made for a different rig"});
  add(SolveRow(
      "state_entry_empty", "a state map entry with no state",
      [](auto& r) { (*Hero(r).mutable_state())["x"]; },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].state[\"x\"]: empty state entry"));
  add(SolveRow(
      "state_dynamics_garbage", "dynamics state of 7 arbitrary bytes",
      [](auto& r) {
        Spring(r);
        (*Hero(r).mutable_state())["spring_bones"].set_dynamics("garbage");
      },
      StatusCode::INVALID_ARGUMENT,
      "dynamics_state: 7 bytes is shorter than the 72-byte header"));

  // ---- retarget
  add(SolveRow(
      "retarget_chain_to_missing_bone",
      "retarget chain target LeftFoot (no such joint)",
      [](auto& r) {
        Retarget(r)->mutable_mapping()->mutable_chains(0)->set_target(
            2, "LeftFoot");
      },
      StatusCode::NOT_FOUND,
      "characters[0].ops[0].retarget.mapping.chains[0].target[2]: no joint "
      "named 'LeftFoot' in the target skeleton"));
  add(SolveRow(
      "retarget_chain_cycle",
      "retarget chain source LeftHip, LeftKnee, LeftHip",
      [](auto& r) {
        Retarget(r)->mutable_mapping()->mutable_chains(0)->set_source(
            2, "LeftHip");
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].retarget.mapping.chains[0].source[2]: 'LeftHip' "
      "is already joint 0 of this chain (a cycle)"));
  add(SolveRow(
      "retarget_chain_goes_up", "retarget chain target LeftKnee, LeftHip",
      [](auto& r) {
        v1::RetargetChain* c =
            Retarget(r)->mutable_mapping()->mutable_chains(0);
        c->clear_target();
        c->add_target("LeftKnee");
        c->add_target("LeftHip");
        c->mutable_source()->RemoveLast();
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].retarget.mapping.chains[0].target[1]: 'LeftHip' "
      "is not below 'LeftKnee'"));
  add(SolveRow(
      "retarget_joint_mapped_twice", "retarget pelvis Hips also in a chain",
      [](auto& r) {
        v1::RetargetChain* c = Retarget(r)->mutable_mapping()->add_chains();
        c->add_source("Hips");
        c->add_target("Hips");
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].retarget.mapping.chains[1].target[0]: target "
      "joint 'Hips' is already mapped by another chain"));
  add(SolveRow(
      "retarget_shares_nothing", "retarget from a two-joint stick, no mapping",
      [](auto& r) {
        v1::RetargetOp* op = Retarget(r);
        op->clear_mapping();
        v1::Skeleton* s = op->mutable_skeleton();
        s->Clear();
        s->add_joint_names("a");
        s->add_joint_names("b");
        s->add_parents(-1);
        s->add_parents(0);
        for (int j = 0; j < 2; ++j) {
          for (float v :
               {0.f, 1.f * j, 0.f, 0.f, 0.f, 0.f, 1.f, 1.f, 1.f, 1.f}) {
            s->add_rest_pose(v);
          }
        }
      },
      StatusCode::NOT_FOUND,
      "characters[0].ops[0].retarget.mapping: no biped detected in the "
      "source skeleton"));
  add(SolveRow(
      "retarget_unknown_hash", "retarget skeleton_hash 'feed'",
      [](auto& r) { Retarget(r)->set_skeleton_hash("feed"); },
      StatusCode::NOT_FOUND,
      "characters[0].ops[0].retarget.skeleton_hash: no skeleton 'feed' here"));
  add(SolveRow(
      "retarget_skeleton_id_in_solve", "retarget skeleton_id in a Solve",
      [](auto& r) { Retarget(r)->set_skeleton_id("cmu"); },
      StatusCode::NOT_FOUND,
      "characters[0].ops[0].retarget.skeleton_id: no skeleton 'cmu' "
      "registered in this session"));
  add(SolveRow(
      "retarget_no_source_pose", "retarget without clip or pose",
      [](auto& r) { Retarget(r)->clear_pose(); }, StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].retarget.source_pose: not set"));
  add(SolveRow(
      "retarget_root_scale_nan", "retarget root_scale NaN",
      [](auto& r) { Retarget(r)->set_root_scale(kNaN); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].retarget.root_scale: nan must be finite and >= "
      "0"));
  add(SolveRow(
      "retarget_source_pose_short", "retarget pose of 3 floats",
      [](auto& r) {
        v1::Pose* p = Retarget(r)->mutable_pose();
        for (int i = 0; i < 3; ++i) p->add_transforms(0.0f);
      },
      StatusCode::INVALID_ARGUMENT, "characters[0].ops[0].retarget.pose"));
  // ---- retarget feet pass
  add(SolveRow(
      "retarget_feet_contact_speed_negative",
      "retarget feet lock_contacts, contact_speed -1",
      [](auto& r) {
        v1::RetargetFeet* f = Retarget(r)->mutable_feet();
        f->set_lock_contacts(true);
        f->set_contact_speed(-1.0f);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].retarget.feet.contact_speed: -1 must be finite "
      "and >= 0"));
  add(SolveRow(
      "retarget_feet_contact_height_nan", "retarget feet contact_height NaN",
      [](auto& r) { Retarget(r)->mutable_feet()->set_contact_height(kNaN); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].retarget.feet.contact_height: nan must be finite "
      "and >= 0"));
  add(SolveRow(
      "retarget_feet_hysteresis_below_one", "retarget feet hysteresis 0.5",
      [](auto& r) { Retarget(r)->mutable_feet()->set_hysteresis(0.5f); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].retarget.feet.hysteresis: 0.5 must be finite and "
      ">= 1"));
  add(SolveRow(
      "retarget_feet_release_time_negative", "retarget feet release_time -1",
      [](auto& r) { Retarget(r)->mutable_feet()->set_release_time(-1.0f); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].retarget.feet.release_time: -1 must be finite "
      "and >= 0"));
  add(SolveRow(
      "retarget_feet_scaled_source_weight_above_one",
      "retarget feet scaled_source_weight 2",
      [](auto& r) {
        Retarget(r)->mutable_feet()->set_scaled_source_weight(2.0f);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].retarget.feet.scaled_source_weight: 2 must be in "
      "[0, 1]"));
  add(SolveRow(
      "retarget_feet_source_floor_infinite", "retarget feet source_floor inf",
      [](auto& r) { Retarget(r)->mutable_feet()->set_source_floor(kInf); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].retarget.feet.source_floor: inf is not finite"));
  add(SolveRow(
      "retarget_feet_needs_both_legs",
      "retarget feet lock_contacts with a left_leg chain only",
      [](auto& r) { Retarget(r)->mutable_feet()->set_lock_contacts(true); },
      StatusCode::FAILED_PRECONDITION,
      "characters[0].ops[0].retarget.feet: the mapping has no 'right_leg' "
      "chain"));
  // ---- retarget hands pass
  add(SolveRow(
      "retarget_hands_scaled_source_weight_negative",
      "retarget hands scaled_source_weight -0.5",
      [](auto& r) {
        Retarget(r)->mutable_hands()->set_scaled_source_weight(-0.5f);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].retarget.hands.scaled_source_weight: -0.5 must "
      "be in [0, 1]"));
  add(SolveRow(
      "retarget_hands_needs_both_arms",
      "retarget hands match_source with a left_leg chain only",
      [](auto& r) { Retarget(r)->mutable_hands()->set_match_source(true); },
      StatusCode::FAILED_PRECONDITION,
      "characters[0].ops[0].retarget.hands: the mapping has no 'left_arm' "
      "chain; the hands pass needs both arms"));
  add(SolveRow(
      "retarget_feet_state_one_foot", "retarget_feet state with one foot",
      [](auto& r) {
        Retarget(r);
        (*Hero(r).mutable_state())["retarget_feet"]
            .mutable_retarget_feet()
            ->add_feet();
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].state[\"retarget_feet\"].retarget_feet.feet: 1 feet; "
      "the pass keeps 2"));
  return rows;
}

}  // namespace posewire::server::bad_input
