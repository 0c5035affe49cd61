// Bad-input catalogue rows: Skeletons, input poses and placements,
// request-level fields, clips and the operation oneof.
#include "tests/service/bad_input/harness.h"

namespace posewire::server::bad_input {

std::vector<BadInput> RequestRows() {
  std::vector<BadInput> rows;
  auto add = [&rows](BadInput row) { rows.push_back(std::move(row)); };

  // ---- skeletons
  add(SolveRow(
      "skeleton_rest_translation_nan", "rest_pose tx of joint 3 is NaN",
      [](auto& r) {
        HeroSkeleton(r).set_rest_pose(3 * kFloatsPerJoint + kTx, kNaN);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].skeleton.skeleton: skeleton.rest_pose[3] 'LeftKnee': "
      "translation has a NaN"));
  add(SolveRow(
      "skeleton_rest_rotation_inf", "rest_pose qw of joint 0 is +Inf",
      [](auto& r) { HeroSkeleton(r).set_rest_pose(kQw, kInf); },
      StatusCode::INVALID_ARGUMENT,
      "skeleton.rest_pose[0] 'Hips': rotation has a NaN or infinite"));
  add(SolveRow(
      "skeleton_rest_scale_nan", "rest_pose sy of joint 30 is NaN",
      [](auto& r) {
        HeroSkeleton(r).set_rest_pose(30 * kFloatsPerJoint + kSx + 1, kNaN);
      },
      StatusCode::INVALID_ARGUMENT,
      "skeleton.rest_pose[30] 'RThumb': scale has a NaN or infinite"));
  add(SolveRow(
      "skeleton_rest_zero_quaternion", "rest rotation of joint 2 is (0,0,0,0)",
      [](auto& r) {
        for (int k = kQx; k <= kQw; ++k) {
          HeroSkeleton(r).set_rest_pose(2 * kFloatsPerJoint + k, 0.0f);
        }
      },
      StatusCode::INVALID_ARGUMENT,
      "skeleton.rest_pose[2] 'LeftHip': rotation norm 0 is not 1"));
  add(SolveRow(
      "skeleton_parent_cycle", "parents[2] = 3 and parents[3] = 2",
      [](auto& r) {
        HeroSkeleton(r).set_parents(2, 3);
        HeroSkeleton(r).set_parents(3, 2);
      },
      StatusCode::INVALID_ARGUMENT,
      "skeleton.parents[2] 'LeftHip': parent 3 does not come before"));
  add(SolveRow(
      "skeleton_self_parent", "parents[4] = 4",
      [](auto& r) { HeroSkeleton(r).set_parents(4, 4); },
      StatusCode::INVALID_ARGUMENT,
      "skeleton.parents[4] 'LeftAnkle': parent 4 does not come before"));
  add(SolveRow(
      "skeleton_parent_out_of_range", "parents[5] = 99 (31 joints)",
      [](auto& r) { HeroSkeleton(r).set_parents(5, 99); },
      StatusCode::INVALID_ARGUMENT,
      "skeleton.parents[5] 'LeftToe': parent 99 is out of range [-1, 31)"));
  add(SolveRow(
      "skeleton_parent_negative", "parents[1] = -7",
      [](auto& r) { HeroSkeleton(r).set_parents(1, -7); },
      StatusCode::INVALID_ARGUMENT,
      "skeleton.parents[1] 'LHipJoint': parent -7 is out of range"));
  add(SolveRow(
      "skeleton_zero_joints", "a skeleton with no joints",
      [](auto& r) { HeroSkeleton(r).Clear(); }, StatusCode::INVALID_ARGUMENT,
      "characters[0].skeleton.skeleton: skeleton: no joints"));
  add(SolveRow(
      "skeleton_million_joints", "1,000,000 joint names and parents",
      [](auto& r) {
        // Unnamed joints all parented to 0 keep the message under the
        // 4 MiB limit, so it is the joint limit that answers.
        v1::Skeleton& skeleton = HeroSkeleton(r);
        skeleton.Clear();
        skeleton.mutable_joint_names()->Reserve(1000000);
        for (int j = 0; j < 1000000; ++j) skeleton.add_joint_names();
        skeleton.mutable_parents()->Resize(1000000, 0);
      },
      StatusCode::RESOURCE_EXHAUSTED,
      "1000000 joints exceed this server's limit of 1024 (GetInfo "
      "limits.max_joints_per_skeleton)"));
  add(SolveRow(
      "skeleton_one_over_joint_limit", "1,025 well-formed joints",
      [](auto& r) { HeroSkeleton(r) = ChainSkeleton(1025, true); },
      StatusCode::RESOURCE_EXHAUSTED,
      "1025 joints exceed this server's limit of 1024"));
  add(SolveRow(
      "skeleton_names_parents_mismatch", "31 parents, 30 joint names",
      [](auto& r) { HeroSkeleton(r).mutable_joint_names()->RemoveLast(); },
      StatusCode::INVALID_ARGUMENT,
      "skeleton.joint_names: 30 names for 31 parents"));
  add(SolveRow(
      "skeleton_rest_pose_short", "rest_pose one float short",
      [](auto& r) { HeroSkeleton(r).mutable_rest_pose()->RemoveLast(); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].skeleton.skeleton.rest_pose: 309 floats for 31 joints "
      "(expected 310"));
  add(SolveRow(
      "skeleton_duplicate_joint_name", "joint 6 renamed 'Hips'",
      [](auto& r) { HeroSkeleton(r).set_joint_names(6, "Hips"); },
      StatusCode::INVALID_ARGUMENT,
      "skeleton.joint_names[6] 'Hips': duplicate of joint 0"));
  add(SolveRow(
      "skeleton_empty_joint_name", "joint 7 named ''",
      [](auto& r) { HeroSkeleton(r).set_joint_names(7, ""); },
      StatusCode::INVALID_ARGUMENT, "skeleton.joint_names[7]: empty name"));
  add(SolveRow(
      "skeleton_ref_unset", "SkeletonRef with neither skeleton nor hash",
      [](auto& r) { Hero(r).clear_skeleton(); }, StatusCode::INVALID_ARGUMENT,
      "characters[0].skeleton: set either skeleton or hash"));
  add(SolveRow(
      "skeleton_unknown_hash", "SkeletonRef.hash never sent to this server",
      [](auto& r) {
        Hero(r).mutable_skeleton()->set_hash(std::string(64, 'a'));
      },
      StatusCode::NOT_FOUND,
      "characters[0].skeleton.hash: this server does not know skeleton"));

  // ---- the character's input pose and placement
  add(SolveRow(
      "pose_translation_nan", "input pose tx of joint 0 is NaN",
      [](auto& r) { *Hero(r).mutable_pose() = RestWith(0, kTx, kNaN); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].pose[0] 'Hips': translation has a NaN"));
  add(SolveRow(
      "pose_translation_inf", "input pose tz of joint 12 is -Inf",
      [](auto& r) { *Hero(r).mutable_pose() = RestWith(12, kTx + 2, -kInf); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].pose[12] 'Chest': translation has a NaN or infinite"));
  add(SolveRow(
      "pose_rotation_nan", "input pose qy of joint 9 is NaN",
      [](auto& r) { *Hero(r).mutable_pose() = RestWith(9, kQx + 1, kNaN); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].pose[9] 'RightAnkle': rotation has a NaN"));
  add(SolveRow(
      "pose_scale_inf", "input pose sx of joint 17 is +Inf",
      [](auto& r) { *Hero(r).mutable_pose() = RestWith(17, kSx, kInf); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].pose[17] 'LeftCollar': scale has a NaN or infinite"));
  add(SolveRow(
      "pose_zero_quaternion", "input rotation of joint 3 is (0,0,0,0)",
      [](auto& r) {
        std::vector<float> f = WalkRest();
        std::fill_n(f.begin() + 3 * kFloatsPerJoint + kQx, 4, 0.0f);
        SetPose(f, Hero(r).mutable_pose());
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].pose[3] 'LeftKnee': rotation norm 0 is not 1"));
  add(SolveRow(
      "pose_non_unit_quaternion", "input rotation of joint 4 has norm 2",
      [](auto& r) { *Hero(r).mutable_pose() = RestWith(4, kQw, 2.0f); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].pose[4] 'LeftAnkle': rotation norm 2 is not 1"));
  add(SolveRow(
      "pose_size_mismatch", "input pose of 30 joints for a 31-joint skeleton",
      [](auto& r) {
        std::vector<float> f = WalkRest();
        f.resize(30 * kFloatsPerJoint);
        SetPose(f, Hero(r).mutable_pose());
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].pose: 300 floats for 31 joints (expected 310"));
  add(SolveRow(
      "pose_not_whole_joints", "input pose of 315 floats",
      [](auto& r) {
        std::vector<float> f = WalkRest();
        f.resize(f.size() + 5, 1.0f);
        SetPose(f, Hero(r).mutable_pose());
      },
      StatusCode::INVALID_ARGUMENT, "characters[0].pose: 315 floats"));
  add(SolveRow(
      "root_translation_nan", "root placement translation.y is NaN",
      [](auto& r) {
        Hero(r).mutable_root()->mutable_translation()->set_y(kNaN);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].root.translation: NaN or infinite component"));
  add(SolveRow(
      "root_zero_quaternion", "root placement rotation set to (0,0,0,0)",
      [](auto& r) {
        SetQuat(0, 0, 0, 0, Hero(r).mutable_root()->mutable_rotation());
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].root.rotation: rotation norm 0 is not 1"));
  add(SolveRow(
      "root_scale_inf", "root placement scale.z is +Inf",
      [](auto& r) { Hero(r).mutable_root()->mutable_scale()->set_z(kInf); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].root.scale: NaN or infinite component"));

  // ---- request-level fields
  add(SolveRow(
      "dt_nan", "SolveRequest.dt is NaN", [](auto& r) { r.set_dt(kNaN); },
      StatusCode::INVALID_ARGUMENT, "dt: nan must be finite and >= 0"));
  add(SolveRow(
      "dt_negative", "SolveRequest.dt is -0.016",
      [](auto& r) { r.set_dt(-0.016f); }, StatusCode::INVALID_ARGUMENT,
      "dt: -0.016 must be finite and >= 0"));
  add(SolveRow(
      "dt_inf", "SolveRequest.dt is +Inf", [](auto& r) { r.set_dt(kInf); },
      StatusCode::INVALID_ARGUMENT, "dt: inf must be finite and >= 0"));
  add(SolveRow(
      "too_many_characters", "9 characters (limit 8)",
      [](auto& r) {
        for (int i = 0; i < kMaxCharacters; ++i) *r.add_characters() = Hero(r);
      },
      StatusCode::RESOURCE_EXHAUSTED,
      "characters: 9 characters exceed this server's limit of 8"));
  add(SolveRow(
      "duplicate_clip_names", "two clips named 'walk'",
      [](auto& r) { *r.add_clips() = r.clips(0); },
      StatusCode::INVALID_ARGUMENT,
      "clips[1].name: 'walk' is used by an earlier clip"));

  // ---- clips (converted when an op first names them)
  add(SolveRow(
      "clip_unknown_name", "sample_clip names clip 'run'",
      [](auto& r) { Sample(r)->set_clip("run"); }, StatusCode::NOT_FOUND,
      "characters[0].ops[0].sample_clip.sample.clip: no clip named 'run'"));
  add(SolveRow(
      "clip_key_value_nan", "a rotation key of joint 0 is NaN",
      [](auto& r) {
        ClipJoint(r, 0)->mutable_rotation()->set_values(5, kNaN);
        Sample(r);
      },
      StatusCode::INVALID_ARGUMENT,
      "clips[0]: clip 'walk' joint 0 'Hips' rotation track: value 1 has a NaN "
      "or infinite component"));
  add(SolveRow(
      "clip_key_time_nan", "a translation key time of joint 0 is NaN",
      [](auto& r) {
        ClipJoint(r, 0)->mutable_translation()->set_times(1, kNaN);
        Sample(r);
      },
      StatusCode::INVALID_ARGUMENT,
      "clips[0]: clip 'walk' joint 0 'Hips' translation track: key 1 time nan "
      "is outside"));
  add(SolveRow(
      "clip_key_times_decreasing",
      "translation key 2 time set to 0 (not increasing)",
      [](auto& r) {
        ClipJoint(r, 0)->mutable_translation()->set_times(2, 0.0f);
        Sample(r);
      },
      StatusCode::INVALID_ARGUMENT,
      "clips[0]: clip 'walk' joint 0 'Hips' translation track: key 2 time 0 "
      "does not increase"));
  add(SolveRow(
      "clip_joint_out_of_range", "JointTracks.joint = 31 (31 joints)",
      [](auto& r) {
        r.mutable_clips(0)->mutable_joints(0)->set_joint(31);
        Sample(r);
      },
      StatusCode::INVALID_ARGUMENT,
      "clips[0].joints[0].joint: 31 is out of range [0, 31)"));
  add(SolveRow(
      "clip_duration_negative", "Clip.duration = -1",
      [](auto& r) {
        r.mutable_clips(0)->set_duration(-1.0f);
        Sample(r);
      },
      StatusCode::INVALID_ARGUMENT,
      "clips[0]: clip 'walk': duration -1 must be finite and non-negative"));
  add(SolveRow(
      "clip_values_not_whole", "a rotation track with 4n+1 floats",
      [](auto& r) {
        ClipJoint(r, 0)->mutable_rotation()->add_values(0.0f);
        Sample(r);
      },
      StatusCode::INVALID_ARGUMENT,
      "clips[0].joints[0].rotation.values: 3977 floats is not a multiple of "
      "4"));
  add(SolveRow(
      "clip_unknown_interpolation", "Track.interpolation = 99",
      [](auto& r) {
        ClipJoint(r, 0)->mutable_rotation()->set_interpolation(
            static_cast<v1::Interpolation>(99));
        Sample(r);
      },
      StatusCode::INVALID_ARGUMENT,
      "clips[0].joints[0].rotation.interpolation: unknown value 99"));
  add(SolveRow(
      "sample_time_nan", "sample_clip.time is NaN",
      [](auto& r) { Sample(r)->set_time(kNaN); }, StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].sample_clip.sample.time: nan is not "
      "finite"));
  add(SolveSameRow(
      "sample_time_huge", "sample_clip.time 1e30 (finite: wrapped by LOOP)",
      [](auto& r) { Sample(r)->set_time(1e30f); },
      [](auto& r) {
        // The same wrap, done here: 1e30 modulo the clip's duration.
        const float duration = r.clips(0).duration();
        Sample(r)->set_time(std::fmod(1e30f, duration));
      }));
  add(SolveRow(
      "sample_unknown_playback_mode", "ClipSample.mode = 7",
      [](auto& r) { Sample(r)->set_mode(static_cast<v1::PlaybackMode>(7)); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].sample_clip.sample.mode: unknown value 7"));
  add(SolveRow(
      "sample_unknown_rotation_interpolation",
      "ClipSample.rotation_interpolation = 5",
      [](auto& r) {
        Sample(r)->set_rotation_interpolation(
            static_cast<v1::RotationInterpolation>(5));
      },
      StatusCode::INVALID_ARGUMENT,
      "sample_clip.sample.rotation_interpolation: unknown value 5"));

  // ---- the operation oneof
  add(SolveRow(
      "op_empty_oneof", "an Operation with no op set",
      [](auto& r) { AddOp(r); }, StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0]: no operation set"));
  add(SolveRow(
      "op_unknown_to_this_server", "an Operation with only field 99 set",
      [](auto& r) {
        v1::Operation* op = AddOp(r);
        op->GetReflection()->MutableUnknownFields(op)->AddVarint(99, 1);
      },
      StatusCode::UNIMPLEMENTED,
      "characters[0].ops[0]: an operation this server does not implement"));
  return rows;
}

}  // namespace posewire::server::bad_input
