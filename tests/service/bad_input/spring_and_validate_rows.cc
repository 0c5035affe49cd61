// Bad-input catalogue rows: Spring bones and the validate op.
#include "tests/service/bad_input/harness.h"

namespace posewire::server::bad_input {

std::vector<BadInput> SpringAndValidateRows() {
  std::vector<BadInput> rows;
  auto add = [&rows](BadInput row) { rows.push_back(std::move(row)); };

  // ---- spring bones
  add(SolveRow(
      "spring_damping_nan", "spring_bones settings.damping NaN",
      [](auto& r) {
        Spring(r)->mutable_rig()->mutable_settings()->set_damping(kNaN);
      },
      StatusCode::INVALID_ARGUMENT,
      "spring_bones.rig.settings.damping: nan is outside [0, 1]"));
  add(SolveRow(
      "spring_stiffness_inf", "spring_bones settings.stiffness +Inf",
      [](auto& r) {
        Spring(r)->mutable_rig()->mutable_settings()->set_stiffness(kInf);
      },
      StatusCode::INVALID_ARGUMENT,
      "spring_bones.rig.settings.stiffness: inf is outside [0, 1]"));
  add(SolveRow(
      "spring_curve_value_nan", "spring_bones curves.radius key value NaN",
      [](auto& r) {
        v1::CurveKey* key =
            Spring(r)->mutable_rig()->mutable_curves()->add_radius();
        key->set_position(0.5f);
        key->set_value(kNaN);
      },
      StatusCode::INVALID_ARGUMENT,
      "spring_bones.rig.curves.radius[0]: NaN or infinite position or value"));
  add(SolveRow(
      "spring_unknown_root", "spring_bones root joint 'Ponytail'",
      [](auto& r) { Spring(r)->mutable_rig()->set_root_joints(0, "Ponytail"); },
      StatusCode::INVALID_ARGUMENT,
      "spring_bones.rig.root_joints[0]: no joint named 'Ponytail'"));
  add(SolveRow(
      "spring_substeps_1e9", "spring_bones max_substeps 1,000,000,000",
      [](auto& r) { Spring(r)->mutable_rig()->set_max_substeps(1000000000); },
      StatusCode::RESOURCE_EXHAUSTED,
      "spring_bones.rig.max_substeps: 1000000000 exceeds this server's limit "
      "of 100"));
  add(SolveRow(
      "spring_substeps_negative", "spring_bones max_substeps -3",
      [](auto& r) { Spring(r)->mutable_rig()->set_max_substeps(-3); },
      StatusCode::INVALID_ARGUMENT,
      "spring_bones.rig.max_substeps: -3 is outside [1, 64]"));
  add(SolveRow(
      "spring_rate_zero", "spring_bones target_rate_hz 0",
      [](auto& r) { Spring(r)->mutable_rig()->set_target_rate_hz(0.0f); },
      StatusCode::INVALID_ARGUMENT,
      "spring_bones.rig.target_rate_hz: 0 is outside [1, 1000]"));
  add(SolveRow(
      "spring_unknown_tip_axis", "spring_bones rig.tip_axis = 17",
      [](auto& r) {
        Spring(r)->mutable_rig()->set_tip_axis(
            static_cast<v1::SpringTipAxis>(17));
      },
      StatusCode::INVALID_ARGUMENT,
      "spring_bones.rig.tip_axis: unknown value 17"));
  add(SolveRow(
      "spring_unknown_space", "spring_bones rig.space = 3",
      [](auto& r) {
        Spring(r)->mutable_rig()->set_space(
            static_cast<v1::SimulationSpace>(3));
      },
      StatusCode::INVALID_ARGUMENT, "spring_bones.rig.space: unknown value 3"));
  add(SolveRow(
      "spring_substeps_zero", "spring_bones max_substeps 0",
      [](auto& r) { Spring(r)->mutable_rig()->set_max_substeps(0); },
      StatusCode::INVALID_ARGUMENT,
      "spring_bones.rig.max_substeps: 0 is outside [1, 64]"));
  add(SolveRow(
      "spring_unknown_teleport_response",
      "spring_bones rig.teleport_response = 2",
      [](auto& r) {
        Spring(r)->mutable_rig()->set_teleport_response(
            static_cast<v1::TeleportResponse>(2));
      },
      StatusCode::INVALID_ARGUMENT,
      "spring_bones.rig.teleport_response: unknown value 2"));
  add(SolveRow(
      "spring_dt_huge",
      "spring_bones with dt 1e9 s (steps capped, excess "
      "dropped with a warning)",
      [](auto& r) {
        r.set_dt(1e9f);
        Spring(r);
      },
      StatusCode::OK, ""));
  add(SolveRow(
      "spring_gravity_nan", "spring_bones gravity.y NaN",
      [](auto& r) { Spring(r)->mutable_gravity()->set_y(kNaN); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].spring_bones.gravity: NaN or infinite"));
  add(SolveRow(
      "spring_wind_speed_inf", "spring_bones wind.speed +Inf",
      [](auto& r) { Spring(r)->mutable_wind()->set_speed(kInf); },
      StatusCode::INVALID_ARGUMENT,
      "spring_bones.forces.wind.speed: NaN or infinite"));
  add(SolveRow(
      "spring_collider_radius_nan", "spring_bones sphere collider radius NaN",
      [](auto& r) { Spring(r)->add_colliders()->set_radius(kNaN); },
      StatusCode::INVALID_ARGUMENT,
      "spring_bones.colliders[0] (sphere).radius: nan is not a finite"));
  add(SolveRow(
      "spring_collider_unknown_shape", "spring_bones collider shape 8",
      [](auto& r) {
        Spring(r)->add_colliders()->set_shape(
            static_cast<v1::SpringCollider::Shape>(8));
      },
      StatusCode::INVALID_ARGUMENT,
      "spring_bones.colliders[0].shape: unknown value 8"));

  // ---- validate
  add(SolveRow(
      "validate_claimed_missing", "validate without a claimed pose",
      [](auto& r) { AddOp(r)->mutable_validate(); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].validate.claimed: the claimed pose is required"));
  add(SolveRow(
      "validate_tolerance_negative", "validate position_tolerance -1",
      [](auto& r) {
        v1::ValidateOp* op = AddOp(r)->mutable_validate();
        SetPose(WalkRest(), op->mutable_claimed());
        op->set_position_tolerance(-1.0f);
      },
      StatusCode::INVALID_ARGUMENT,
      "validate.position_tolerance: -1 must be finite and >= 0"));
  add(SolveRow(
      "validate_claimed_nan", "validate claimed pose with a NaN",
      [](auto& r) {
        *AddOp(r)->mutable_validate()->mutable_claimed() =
            RestWith(8, kTx, kNaN);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].validate.claimed[8] 'RightKnee': translation"));
  // A referee rig of one validate op; frames send the claim as an update.
  const auto judge = [](v1::Pose claimed) {
    std::vector<v1::SessionRequest> messages(3);
    v1::RegisterRig* rig = messages[0].mutable_register_rig();
    rig->set_id("judge");
    rig->set_skeleton_id("cmu");
    *rig->add_ops()->mutable_validate()->mutable_claimed() = RestWith(0, 0, 0);
    messages[1].mutable_register_character()->set_id("claimant");
    messages[1].mutable_register_character()->set_rig_id("judge");
    messages[2] = FrameFor(1, "claimant");
    v1::OpUpdate* update = FrameCharacter(messages[2]).add_op_updates();
    update->set_op(0);
    *update->mutable_claimed() = std::move(claimed);
    return messages;
  };
  add(SessionRow(
      "validate_update_claimed_short", "a validate op update of 3 floats",
      [judge] {
        v1::Pose three;
        for (int i = 0; i < 3; ++i) three.add_transforms(0.0f);
        return judge(three);
      },
      StatusCode::INVALID_ARGUMENT,
      "frame.characters[0].op_updates[0].claimed: 3 floats; the skeleton's "
      "31 joints take 310"));
  add(SessionRow(
      "validate_update_claimed_nan", "a validate op update with a NaN",
      [judge] { return judge(RestWith(8, kTx, kNaN)); },
      StatusCode::INVALID_ARGUMENT,
      "frame.characters[0].op_updates[0].claimed"));
  return rows;
}

}  // namespace posewire::server::bad_input
