// Bad-input catalogue rows: Chain IK (two-bone, aim, CCD, FABRIK, trees) and
// full-body IK.
#include "tests/service/bad_input/harness.h"

namespace posewire::server::bad_input {

std::vector<BadInput> IkRows() {
  std::vector<BadInput> rows;
  auto add = [&rows](BadInput row) { rows.push_back(std::move(row)); };

  // ---- chain IK
  add(SolveRow(
      "two_bone_target_nan", "two_bone_ik target.x NaN",
      [](auto& r) { TwoBone(r)->mutable_target()->set_x(kNaN); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].two_bone_ik.target: NaN or infinite component"));
  add(SolveRow(
      "two_bone_target_missing", "two_bone_ik without a target",
      [](auto& r) { TwoBone(r)->clear_target(); }, StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].two_bone_ik.target: required"));
  add(SolveRow(
      "two_bone_unknown_joint", "two_bone_ik mid_joint 'Knee'",
      [](auto& r) { TwoBone(r)->set_mid_joint("Knee"); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].two_bone_ik.mid_joint: no joint named 'Knee'"));
  add(SolveRow(
      "two_bone_not_a_chain", "two_bone_ik LeftHip, RightKnee, RightAnkle",
      [](auto& r) { TwoBone(r)->set_mid_joint("RightKnee"); },
      StatusCode::INVALID_ARGUMENT,
      "two_bone_ik.mid_joint: joint 8 'RightKnee' is not a descendant of "
      "start_j"));
  add(SolveRow(
      "two_bone_pole_inf", "two_bone_ik pole_vector.z -Inf",
      [](auto& r) { TwoBone(r)->mutable_pole_vector()->set_z(-kInf); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].two_bone_ik.pole_vector: NaN or infinite"));
  add(SolveRow(
      "two_bone_end_rotation_zero", "two_bone_ik end_rotation (0,0,0,0)",
      [](auto& r) { SetQuat(0, 0, 0, 0, TwoBone(r)->mutable_end_rotation()); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].two_bone_ik.end_rotation: rotation norm 0"));
  add(SolveRow(
      "two_bone_end_rotation_non_unit", "two_bone_ik end_rotation norm 0.5",
      [](auto& r) {
        SetQuat(0, 0, 0, 0.5f, TwoBone(r)->mutable_end_rotation());
      },
      StatusCode::INVALID_ARGUMENT,
      "two_bone_ik.end_rotation: rotation norm 0.5 is not 1"));
  add(SolveRow(
      "two_bone_weight_nan", "two_bone_ik weight NaN",
      [](auto& r) { TwoBone(r)->set_weight(kNaN); },
      StatusCode::INVALID_ARGUMENT, "characters[0].ops[0].two_bone_ik.weight"));
  add(SolveSameRow(
      "two_bone_weight_negative",
      "two_bone_ik weight -5 (clamped to 0: the input pose)",
      [](auto& r) { TwoBone(r)->set_weight(-5.0f); }, [](auto&) {}));
  add(SolveSameRow(
      "two_bone_weight_huge", "two_bone_ik weight 1e38 (clamped to 1)",
      [](auto& r) { TwoBone(r)->set_weight(1e38f); },
      [](auto& r) { TwoBone(r)->set_weight(1.0f); }));
  add(SolveRow(
      "two_bone_soften_out_of_range", "two_bone_ik soften 1.5",
      [](auto& r) { TwoBone(r)->set_soften(1.5f); },
      StatusCode::INVALID_ARGUMENT,
      "two_bone_ik.soften: 1.5 is not in [0, 1]"));
  add(SolveRow(
      "two_bone_stretch_below_one", "two_bone_ik stretch, max_stretch 0.5",
      [](auto& r) {
        v1::TwoBoneIkOp* op = TwoBone(r);
        op->set_stretch(true);
        op->set_max_stretch(0.5f);
      },
      StatusCode::INVALID_ARGUMENT,
      "two_bone_ik.max_stretch: 0.5 is not a finite ratio >= 1"));
  add(SolveRow(
      "two_bone_zero_mid_axis", "two_bone_ik mid_axis (0,0,0)",
      [](auto& r) { *TwoBone(r)->mutable_mid_axis() = Vec(0, 0, 0); },
      StatusCode::INVALID_ARGUMENT, "two_bone_ik.mid_axis: zero length"));
  add(SolveRow(
      "two_bone_zero_length_bone",
      "two_bone_ik Hips, LHipJoint, LeftHip (Hips-LHipJoint has length 0)",
      [](auto& r) {
        v1::TwoBoneIkOp* op = TwoBone(r);
        op->set_start_joint("Hips");
        op->set_mid_joint("LHipJoint");
        op->set_end_joint("LeftHip");
      },
      StatusCode::OK, ""));
  add(SolveRow(
      "two_bone_all_bones_zero_length",
      "two_bone_ik on a 3-joint skeleton whose joints all sit at the origin",
      [](auto& r) {
        HeroSkeleton(r) = ChainSkeleton(3, true);
        r.clear_clips();
        v1::TwoBoneIkOp* op = TwoBone(r);
        op->set_start_joint("j0");
        op->set_mid_joint("j1");
        op->set_end_joint("j2");
      },
      StatusCode::OK, ""));
  // Finite local scales whose product down the chain overflows: the model
  // transform of the solved joint's parent is not finite. The core names it
  // parent_model; the wire keeps naming it model[<parent>].
  const struct {
    const char* name;
    const char* input;
    int ancestor, parent;
    void (*add_op)(v1::SolveRequest&);
    const char* message;
  } overflows[] = {
      {"two_bone_parent_model_overflows",
       "two_bone_ik with scale.x 1e30 on Hips and LHipJoint (LeftHip's parent)",
       0, 1, [](v1::SolveRequest& r) { TwoBone(r); },
       "characters[0].ops[0].two_bone_ik.model[1] 'LHipJoint': scale has a "
       "NaN or infinite component"},
      {"aim_parent_model_overflows",
       "aim_ik with scale.x 1e30 on Hips and Neck (Head's parent)", 0, 15,
       [](v1::SolveRequest& r) { Aim(r); },
       "characters[0].ops[0].aim_ik.model[15] 'Neck': scale has a NaN or "
       "infinite component"}};
  for (const auto& o : overflows) {
    add(SolveRow(
        o.name, o.input,
        [o](auto& r) {
          std::vector<float> floats = WalkRest();
          for (int j : {o.ancestor, o.parent}) {
            floats[j * kFloatsPerJoint + kSx] = 1e30f;
          }
          SetPose(floats, Hero(r).mutable_pose());
          o.add_op(r);
        },
        StatusCode::INVALID_ARGUMENT, o.message));
  }
  add(SolveRow(
      "fabrik_zero_length_bone",
      "fabrik_ik chain Hips, LHipJoint, LeftHip (first bone of length 0)",
      [](auto& r) {
        v1::FabrikIkOp* op = Fabrik(r);
        op->set_chain(0, "Hips");
        op->set_chain(1, "LHipJoint");
        op->set_chain(2, "LeftHip");
      },
      StatusCode::OK, ""));
  add(SolveRow(
      "ccd_all_bones_zero_length",
      "ccd_ik on a 4-joint chain whose joints all sit at the origin",
      [](auto& r) {
        HeroSkeleton(r) = ChainSkeleton(4, true);
        r.clear_clips();
        v1::CcdIkOp* op = Ccd(r);
        op->clear_chain();
        for (const char* j : {"j0", "j1", "j2", "j3"}) op->add_chain(j);
      },
      StatusCode::OK, ""));
  add(SolveRow(
      "aim_zero_forward", "aim_ik forward (0,0,0)",
      [](auto& r) { *Aim(r)->mutable_forward() = Vec(0, 0, 0); },
      StatusCode::INVALID_ARGUMENT,
      "aim_ik.forward: zero length; give the axis of joint 16 'Head'"));
  add(SolveRow(
      "aim_clamp_smoothing_out_of_range", "aim_ik clamp_smoothing 5",
      [](auto& r) { Aim(r)->set_clamp_smoothing(5); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].aim_ik.clamp_smoothing: 5 is not in [0, 2]"));
  add(SolveRow(
      "aim_offset_nan", "aim_ik offset.y NaN",
      [](auto& r) { Aim(r)->mutable_offset()->set_y(kNaN); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].aim_ik.offset: NaN or infinite"));
  add(SolveRow(
      "ccd_chain_not_parent_to_child",
      "ccd_ik chain LeftShoulder, LeftWrist, LeftElbow",
      [](auto& r) {
        v1::CcdIkOp* op = Ccd(r);
        op->set_chain(1, "LeftWrist");
        op->set_chain(2, "LeftElbow");
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].ccd_ik.chain[1]: joint 20 'LeftWrist' is not a "
      "child of"));
  add(SolveRow(
      "ccd_chain_empty", "ccd_ik with an empty chain",
      [](auto& r) { Ccd(r)->clear_chain(); }, StatusCode::INVALID_ARGUMENT,
      "ccd_ik.chain: 0 joints; a chain needs at least 2"));
  add(SolveRow(
      "ccd_chain_unknown_joint", "ccd_ik chain[2] 'LeftPaw'",
      [](auto& r) { Ccd(r)->set_chain(2, "LeftPaw"); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].ccd_ik.chain[2]: no joint named 'LeftPaw'"));
  add(SolveRow(
      "ccd_iterations_1e9", "ccd_ik max_iterations 1,000,000,000",
      [](auto& r) { Ccd(r)->set_max_iterations(1000000000); },
      StatusCode::RESOURCE_EXHAUSTED,
      "characters[0].ops[0].ccd_ik.max_iterations: 1000000000 iterations "
      "exceed this server's limit of 100"));
  add(SolveSameRow(
      "ccd_iterations_zero", "ccd_ik max_iterations 0 (only measures)",
      [](auto& r) { Ccd(r)->set_max_iterations(0); }, [](auto&) {}));
  add(SolveRow(
      "ccd_tolerance_negative", "ccd_ik tolerance.absolute -1",
      [](auto& r) { Ccd(r)->mutable_tolerance()->set_absolute(-1.0f); },
      StatusCode::INVALID_ARGUMENT,
      "ccd_ik.tolerance.value: -1 must be finite and >= 0"));
  add(SolveSameRow(
      "ccd_weight_huge", "ccd_ik weight 1e30 (clamped: same pose as weight 1)",
      [](auto& r) { Ccd(r)->set_weight(1e30f); },
      [](auto& r) { Ccd(r)->set_weight(1.0f); }));
  add(SolveSameRow(
      "ccd_weight_negative", "ccd_ik weight -2 (clamped: the input pose)",
      [](auto& r) { Ccd(r)->set_weight(-2.0f); }, [](auto&) {}));
  add(SolveRow(
      "ccd_joint_weights_count", "ccd_ik joint_weights of 2 for a 3-chain",
      [](auto& r) {
        v1::CcdIkOp* op = Ccd(r);
        op->add_joint_weights(1.0f);
        op->add_joint_weights(1.0f);
      },
      StatusCode::INVALID_ARGUMENT,
      "ccd_ik.joint_weights: 2 weights for a chain of 3 joints"));
  add(SolveRow(
      "ccd_hinge_axis_nan", "ccd_ik hinge limit axis NaN",
      [](auto& r) {
        v1::JointLimitSpec* limit = Ccd(r)->add_limits();
        limit->set_joint("LeftElbow");
        *limit->mutable_hinge()->mutable_axis() = Vec(kNaN, 0, 1);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].ccd_ik.limits[0].hinge.axis: NaN or infinite"));
  add(SolveRow(
      "ccd_hinge_axis_zero", "ccd_ik hinge limit axis (0,0,0)",
      [](auto& r) {
        v1::JointLimitSpec* limit = Ccd(r)->add_limits();
        limit->set_joint("LeftElbow");
        *limit->mutable_hinge()->mutable_axis() = Vec(0, 0, 0);
      },
      StatusCode::INVALID_ARGUMENT,
      "'LeftElbow': axis is not a finite unit vector"));
  add(SolveRow(
      "ccd_limit_unknown_euler_order", "ccd_ik euler limit order = 42",
      [](auto& r) {
        v1::JointLimitSpec* limit = Ccd(r)->add_limits();
        limit->set_joint("LeftElbow");
        limit->mutable_euler()->set_order(static_cast<v1::EulerOrder>(42));
        *limit->mutable_euler()->mutable_min() = Vec(-1, -1, -1);
        *limit->mutable_euler()->mutable_max() = Vec(1, 1, 1);
      },
      StatusCode::INVALID_ARGUMENT,
      "ccd_ik.limits[0].euler.order: unknown value 42"));
  add(SolveRow(
      "ccd_limit_duplicate_joint", "ccd_ik two limits on LeftElbow",
      [](auto& r) {
        v1::CcdIkOp* op = Ccd(r);
        for (int i = 0; i < 2; ++i) {
          v1::JointLimitSpec* limit = op->add_limits();
          limit->set_joint("LeftElbow");
          *limit->mutable_hinge()->mutable_axis() = Vec(0, 0, 1);
        }
      },
      StatusCode::INVALID_ARGUMENT,
      "ccd_ik.limits[1].joint: 'LeftElbow' already has a limit"));
  add(SolveRow(
      "ccd_over_relaxation_20", "ccd_ik over_relaxation 20",
      [](auto& r) { Ccd(r)->set_over_relaxation(20.0f); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].ccd_ik.over_relaxation: 20 is outside "
      "[0, 16]"));
  add(SolveRow(
      "fabrik_planar_limits_count",
      "fabrik_ik 2 planar limits for a 3-joint chain (1 interior joint)",
      [](auto& r) {
        v1::FabrikIkOp* op = Fabrik(r);
        *op->mutable_plane_normal() = Vec(0, 0, 1);
        op->add_planar_limits()->set_max(1.0f);
        op->add_planar_limits()->set_max(1.0f);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].fabrik_ik.planar_limits: 2 ranges for "
      "a chain of 3 joints"));
  add(SolveRow(
      "fabrik_over_relaxation_1", "fabrik_ik over_relaxation 1",
      [](auto& r) { Fabrik(r)->set_over_relaxation(1.0f); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].fabrik_ik.over_relaxation: 1 is "
      "outside [0, 1)"));
  add(SolveRow(
      "fabrik_iterations_1e9", "fabrik_ik max_iterations 1,000,000,000",
      [](auto& r) { Fabrik(r)->set_max_iterations(1000000000); },
      StatusCode::RESOURCE_EXHAUSTED,
      "fabrik_ik.max_iterations: 1000000000 iterations exceed"));
  add(SolveRow(
      "fabrik_tree_effector_outside_root",
      "fabrik_tree_ik root Chest2, effector LeftToe",
      [](auto& r) {
        FabrikTree(r)->mutable_effectors(0)->set_joint("LeftToe");
      },
      StatusCode::INVALID_ARGUMENT,
      "fabrik_tree_ik.effectors[0].joint: joint 5 'LeftToe' is not below"));
  add(SolveRow(
      "fabrik_tree_iterations_1e9",
      "fabrik_tree_ik max_iterations 1,000,000,000",
      [](auto& r) { FabrikTree(r)->set_max_iterations(1000000000); },
      StatusCode::RESOURCE_EXHAUSTED,
      "characters[0].ops[0].fabrik_tree_ik.max_iterations: 1000000000 "
      "iterations exceed this server's limit of 100"));
  add(SolveRow(
      "fabrik_tree_pull_negative", "fabrik_tree_ik effector pull -1",
      [](auto& r) { FabrikTree(r)->mutable_effectors(1)->set_pull(-1.0f); },
      StatusCode::INVALID_ARGUMENT,
      "fabrik_tree_ik.effectors[1].pull: -1 must be finite and > 0"));

  // ---- look-at
  add(SolveRow(
      "look_at_spine_off_the_head_path",
      "look_at spine Chest, Chest2, LeftShoulder; head Head",
      [](auto& r) { LookAt(r)->set_spine(2, "LeftShoulder"); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].look_at.spine[2] 'LeftShoulder': not an ancestor "
      "of look_at.head 'Head' (the spine runs from the hips to the head along "
      "one path)"));
  add(SolveRow(
      "look_at_spine_out_of_order", "look_at spine Chest2, Chest, Neck",
      [](auto& r) {
        v1::LookAtOp* op = LookAt(r);
        op->set_spine(0, "Chest2");
        op->set_spine(1, "Chest");
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].look_at.spine[0] 'Chest2': not an ancestor of "
      "look_at.spine[1] 'Chest'"));
  add(SolveRow(
      "look_at_zero_forward_axis", "look_at axes with the head's (0,0,0)",
      [](auto& r) {
        v1::LookAtOp* op = LookAt(r);
        for (int i = 0; i < 3; ++i) *op->add_axes() = Vec(0, 0, 1);
        *op->add_axes() = Vec(0, 0, 0);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].look_at.axes[3]: zero length; give the forward "
      "axis of head (joint 16 'Head') in its own space"));
  add(SolveRow(
      "look_at_axes_count", "look_at with 2 axes for 4 bones",
      [](auto& r) {
        v1::LookAtOp* op = LookAt(r);
        for (int i = 0; i < 2; ++i) *op->add_axes() = Vec(0, 0, 1);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].look_at.axes: 2 axes for 4 bones"));
  add(SolveRow(
      "look_at_zero_character_forward", "look_at character_forward (0,0,0)",
      [](auto& r) { *LookAt(r)->mutable_character_forward() = Vec(0, 0, 0); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].look_at.character_forward: zero length"));
  add(SolveRow(
      "look_at_eye_not_under_head", "look_at eyes LeftWrist",
      [](auto& r) { LookAt(r)->add_eyes("LeftWrist"); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].look_at.eyes[0] 'LeftWrist': not under "
      "look_at.head 'Head'"));
  add(SolveRow(
      "look_at_unknown_head", "look_at head 'Skull'",
      [](auto& r) { LookAt(r)->set_head("Skull"); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].look_at.head: no joint named 'Skull'"));
  add(SolveRow(
      "look_at_target_missing", "look_at without a target",
      [](auto& r) { LookAt(r)->clear_target(); }, StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].look_at.target: required"));
  add(SolveRow(
      "look_at_body_weight_nan", "look_at body_weight NaN",
      [](auto& r) { LookAt(r)->set_body_weight(kNaN); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].look_at.body_weight: nan is not finite"));
  add(SolveRow(
      "look_at_clamp_smoothing_out_of_range", "look_at clamp_smoothing 3",
      [](auto& r) { LookAt(r)->set_clamp_smoothing(3); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].look_at.clamp_smoothing: 3 is not in [0, 2]"));
  add(SolveSameRow(
      "look_at_weight_huge", "look_at weight 1e38 (clamped to 1)",
      [](auto& r) { LookAt(r)->set_weight(1e38f); },
      [](auto& r) { LookAt(r)->set_weight(1.0f); }));
  add(SolveRow(
      "look_at_max_turn_speed_negative", "look_at max_turn_speed -1",
      [](auto& r) { LookAt(r)->set_max_turn_speed(-1.0f); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].look_at.max_turn_speed: -1 is not finite and "
      ">= 0"));
  add(SolveRow(
      "look_at_state_direction_nan",
      "look_at state direction (NaN, 0, 0), turn speed limited",
      [](auto& r) {
        LookAt(r)->set_max_turn_speed(3.0f);
        *(*Hero(r).mutable_state())["look_at"]
             .mutable_look_at()
             ->mutable_direction() = Vec(kNaN, 0, 0);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].state[\"look_at\"].look_at.direction: NaN or infinite "
      "component"));

  // ---- ground
  add(SolveRow(
      "ground_leg_not_a_chain", "ground legs[0] knee LeftToe (below the ankle)",
      [](auto& r) { Ground(r)->mutable_legs(0)->set_knee("LeftToe"); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].ground.legs[0].ankle: joint 4 'LeftAnkle' is not "
      "a descendant of legs[0].knee joint 5 'LeftToe'"));
  add(SolveRow(
      "ground_leg_ankle_not_under_hip",
      "ground legs[0] hip RightHip (the left ankle is not under it)",
      [](auto& r) { Ground(r)->mutable_legs(0)->set_hip("RightHip"); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].ground.legs[0].knee: joint 3 'LeftKnee' is not a "
      "descendant of legs[0].hip"));
  add(SolveRow(
      "ground_legs_share_a_subtree", "ground with the left leg twice",
      [](auto& r) {
        v1::GroundOp* op = Ground(r);
        *op->mutable_legs(1) = op->legs(0);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].ground.legs[1].hip: joint 2 'LeftHip' shares a "
      "subtree with legs[0].hip"));
  add(SolveRow(
      "ground_unknown_pelvis", "ground pelvis Tail",
      [](auto& r) { Ground(r)->set_pelvis("Tail"); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].ground.pelvis: no joint named 'Tail'"));
  add(SolveRow(
      "ground_heightfield_zero_spacing", "ground heightfield spacing 0",
      [](auto& r) { GroundField(r)->set_spacing(0.0f); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].ground.heightfield.spacing: 0 is not finite and "
      "> 0"));
  add(SolveRow(
      "ground_heightfield_nan_spacing", "ground heightfield spacing NaN",
      [](auto& r) { GroundField(r)->set_spacing(kNaN); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].ground.heightfield.spacing: nan is not finite"));
  add(SolveRow(
      "ground_heightfield_nan_height", "ground heightfield heights[2] NaN",
      [](auto& r) { GroundField(r)->set_heights(2, kNaN); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].ground.heightfield.heights[2]: nan is not "
      "finite"));
  add(SolveRow(
      "ground_heightfield_size", "ground heightfield 2 x 2 with 3 heights",
      [](auto& r) { GroundField(r)->mutable_heights()->RemoveLast(); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].ground.heightfield.heights: 3 heights for 2 "
      "columns x 2 rows"));
  add(SolveRow(
      "ground_sample_nan_point", "ground samples[1] point (NaN, 0, 0)",
      [](auto& r) {
        *Ground(r)->mutable_samples(1)->mutable_point() = Vec(kNaN, 0, 0);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].ground.samples[1].point: NaN or infinite "
      "component"));
  add(SolveRow(
      "ground_sample_zero_normal", "ground samples[0] normal (0, 0, 0)",
      [](auto& r) {
        *Ground(r)->mutable_samples(0)->mutable_normal() = Vec(0, 0, 0);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].ground.samples[0].normal: zero length"));
  add(SolveRow(
      "ground_sample_normal_down", "ground samples[0] normal (0, -1, 0)",
      [](auto& r) {
        *Ground(r)->mutable_samples(0)->mutable_normal() = Vec(0, -1, 0);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].ground.samples[0].normal: (0, -1, 0) does not "
      "point up"));
  add(SolveRow(
      "ground_up_zero", "ground up (0, 0, 0)",
      [](auto& r) { *Ground(r)->mutable_up() = Vec(0, 0, 0); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].ground.up: zero length; give model space's up "
      "direction"));
  add(SolveRow(
      "ground_sample_normal_not_along_up",
      "ground up (0, 0, 1) with samples[0] normal (0, 1, 0)",
      [](auto& r) {
        v1::GroundOp* op = Ground(r);
        *op->mutable_up() = Vec(0, 0, 1);
        *op->mutable_samples(0)->mutable_normal() = Vec(0, 1, 0);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].ground.samples[0].normal: (0, 1, 0) does not "
      "point up (normal . up > 0)"));
  add(SolveRow(
      "ground_heightfield_with_z_up", "ground heightfield with up (0, 0, 1)",
      [](auto& r) {
        GroundField(r);
        *r.mutable_characters(0)
             ->mutable_ops(0)
             ->mutable_ground()
             ->mutable_up() = Vec(0, 0, 1);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].ground.heightfield: needs up = +Y"));
  add(SolveRow(
      "ground_sample_count", "ground with 1 sample for 2 legs",
      [](auto& r) { Ground(r)->mutable_samples()->RemoveLast(); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].ground.samples: 1 samples for 2 legs"));
  add(SolveRow(
      "ground_max_tilt_too_steep", "ground max_tilt 2 radians",
      [](auto& r) { Ground(r)->set_max_tilt(2.0f); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].ground.max_tilt: 2 is not in [0, "));
  add(SolveSameRow(
      "ground_weight_huge", "ground weight 1e38 (clamped to 1)",
      [](auto& r) { Ground(r)->set_weight(1e38f); },
      [](auto& r) { Ground(r)->set_weight(1.0f); }));

  // ---- full body
  add(SolveRow(
      "full_body_ccd_target_inf", "full_body_ccd effector target.y +Inf",
      [](auto& r) {
        FullBodyCcd(r)->mutable_effectors(0)->mutable_target()->set_y(kInf);
      },
      StatusCode::INVALID_ARGUMENT,
      "full_body_ccd.effectors[0].target: NaN or infinite"));
  add(SolveRow(
      "full_body_ccd_iterations_1e9",
      "full_body_ccd max_iterations 1,000,000,000",
      [](auto& r) { FullBodyCcd(r)->set_max_iterations(1000000000); },
      StatusCode::RESOURCE_EXHAUSTED,
      "characters[0].ops[0].full_body_ccd.max_iterations: 1000000000 "
      "iterations exceed this server's limit of 100"));
  add(SolveRow(
      "full_body_ccd_tolerance_relative_to_chain",
      "full_body_ccd tolerance relative_to_chain 0.001 (no single chain)",
      [](auto& r) {
        FullBodyCcd(r)->mutable_tolerance()->set_relative_to_chain(0.001f);
      },
      StatusCode::INVALID_ARGUMENT,
      "full_body_ccd.tolerance: relative_to_chain names no chain here"));
  add(SolveSameRow(
      "full_body_ccd_joint_weight_two",
      "full_body_ccd joint_weights[3] = 2 (clamped: same as 1)",
      [](auto& r) {
        v1::FullBodyCcdOp* op = FullBodyCcd(r);
        op->mutable_joint_weights()->Resize(31, 1.0f);
        op->set_joint_weights(3, 2.0f);
      },
      [](auto& r) {
        FullBodyCcd(r)->mutable_joint_weights()->Resize(31, 1.0f);
      }));
  add(SolveRow(
      "full_body_ccd_joint_weight_nan", "full_body_ccd joint_weights[3] NaN",
      [](auto& r) {
        v1::FullBodyCcdOp* op = FullBodyCcd(r);
        op->mutable_joint_weights()->Resize(31, 1.0f);
        op->set_joint_weights(3, kNaN);
      },
      StatusCode::INVALID_ARGUMENT,
      "full_body_ccd.joint_weights[3] 'LeftKnee': nan is not finite"));
  add(SolveRow(
      "biped_iterations_1e9", "full_body_biped_ik iterations 1,000,000,000",
      [](auto& r) { Biped(r)->set_iterations(1000000000); },
      StatusCode::RESOURCE_EXHAUSTED,
      "full_body_biped_ik.iterations: 1000000000 iterations exceed this "
      "server's limit of 100 (GetInfo limits.max_solver_iterations)"));
  add(SolveRow(
      "biped_iterations_65",
      "full_body_biped_ik iterations 65 (documented: "
      "at most 64)",
      [](auto& r) { Biped(r)->set_iterations(65); },
      StatusCode::INVALID_ARGUMENT,
      "full_body_biped_ik.iterations: 65 is outside [0, 64]"));
  add(SolveRow(
      "biped_spine_iterations_zero",
      "full_body_biped_ik spine_iterations 0 "
      "(documented: [1, 16])",
      [](auto& r) { Biped(r)->set_spine_iterations(0); },
      StatusCode::INVALID_ARGUMENT, "full_body_biped_ik.spine_iterations: 0"));
  add(SolveRow(
      "biped_tolerance_negative",
      "full_body_biped_ik tolerance.relative_to_chain -1",
      [](auto& r) {
        Biped(r)->mutable_tolerance()->set_relative_to_chain(-1.0f);
      },
      StatusCode::INVALID_ARGUMENT,
      "full_body_biped_ik.tolerance.value: -1 must be finite and >= 0"));
  add(SolveRow(
      "biped_unknown_effector", "full_body_biped_ik effector id 42",
      [](auto& r) {
        Biped(r)->mutable_effectors(0)->set_id(
            static_cast<v1::BipedEffectorId>(42));
      },
      StatusCode::INVALID_ARGUMENT,
      "full_body_biped_ik.effectors[0].id: unknown effector 42"));
  add(SolveRow(
      "biped_effector_rotation_non_unit",
      "full_body_biped_ik effector rotation (1,1,1,1)",
      [](auto& r) {
        SetQuat(1, 1, 1, 1, Biped(r)->mutable_effectors(0)->mutable_rotation());
      },
      StatusCode::INVALID_ARGUMENT,
      "full_body_biped_ik.effectors[0].rotation: rotation norm 2 is not 1"));
  add(SolveRow(
      "biped_position_weight_nan", "full_body_biped_ik position_weight NaN",
      [](auto& r) {
        Biped(r)->mutable_effectors(0)->set_position_weight(kNaN);
      },
      StatusCode::INVALID_ARGUMENT,
      "full_body_biped_ik.effectors[left_hand].position_weight: nan"));
  add(SolveRow(
      "biped_mapping_unknown_joint",
      "full_body_biped_ik mapping pelvis 'Pelvis'",
      [](auto& r) {
        v1::FullBodyBipedIkOp* op = Biped(r);
        op->mutable_mapping()->set_pelvis("Pelvis");
      },
      StatusCode::INVALID_ARGUMENT,
      "full_body_biped_ik.mapping.pelvis: no joint named "
      "'Pelvis'"));
  return rows;
}

}  // namespace posewire::server::bad_input
