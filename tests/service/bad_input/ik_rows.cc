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
