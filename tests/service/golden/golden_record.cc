// Records the golden answers replayed by golden_replay_test: every op over
// Solve and Session on the real CMU walk rig, at defaults (required fields
// only) and tuned, with state carried from answer to request, skeletons by
// hash, op_updates, resets and model poses. Run against a server whose
// answers are known good; every call must succeed, or nothing is written.
//
//   golden_record WALK.bvh OUT_DIR   writes OUT_DIR/solve.rec, session.rec
#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/text_format.h"
#include "posewire/v1/posewire.grpc.pb.h"
#include "server/transport/server.h"
#include "server/wire/wire_convert.h"
#include "solver_core/io/bvh_reader.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/pose_ops/sampling_job.h"
#include "tests/service/golden/golden_io.h"

namespace posewire::golden {
namespace {

// Ops, in text format, for the CMU walk (joint names of cmu_131_01_walk.bvh,
// clips "walk" and "walk_late"). `%T` etc. are not used: targets near the
// limbs' reach come from Targets below.
struct Targets {
  Eigen::Vector3f left_ankle, right_ankle, left_wrist, right_wrist, head;
};

std::string V(const Eigen::Vector3f& v) {
  return absl::StrCat("{ x: ", v.x(), " y: ", v.y(), " z: ", v.z(), " }");
}

// Each op at its required fields only, then tuned.
std::vector<std::pair<std::string, std::string>> OpTexts(const Targets& t) {
  return {
      {"sample_clip_defaults", R"(sample_clip { sample { clip: "walk" } })"},
      {"sample_clip", R"(sample_clip { sample { clip: "walk_late" time: 1.3
         mode: PLAYBACK_MODE_CLAMP
         rotation_interpolation: ROTATION_INTERPOLATION_SLERP } })"},
      {"blend_defaults",
       R"(blend { layers { source { clip { clip: "walk_late" time: 0.2 } }
                           weight: 1 } })"},
      {"blend", R"(blend {
         layers { source { current: true } weight: 0.6 }
         layers { source { clip { clip: "walk_late" time: 0.3 } } weight: 0.4 }
         layers { source { rest: true } weight: 0.2 }
         base_layer: 0 blend_root: "lowerback" threshold: 0.05 })"},
      {"additive_defaults", R"(additive { base { rest: true }
         additive { clip { clip: "walk" time: 0.4 } } weight: 1 })"},
      {"additive", R"(additive { base { clip { clip: "walk" time: 0.1 } }
         additive { clip { clip: "walk_late" time: 0.5 } } weight: 0.7
         blend_root: "Chest" })"},
      {"crossfade_defaults", R"(crossfade { commands { play: "walk" } })"},
      {"crossfade", R"(crossfade { commands { play: "walk" }
         commands { fade_to { clip: "walk_late" fade_seconds: 0.25
                              curve: FADE_CURVE_SMOOTHSTEP } }
         state_key: "locomotion" mode: PLAYBACK_MODE_LOOP })"},
      {"two_bone_ik_defaults",
       absl::StrCat(R"(two_bone_ik { start_joint: "LeftHip"
         mid_joint: "LeftKnee" end_joint: "LeftAnkle" target )",
                    V(t.left_ankle), " }")},
      {"two_bone_ik", absl::StrCat(R"(two_bone_ik { start_joint: "RightShoulder"
         mid_joint: "RightElbow" end_joint: "RightWrist" target )",
                                   V(t.right_wrist), R"( pole_vector { z: 1 }
         bend_goal { x: -5 y: 18 z: 8 } mid_axis { x: 1 } twist_angle: 0.2
         soften: 0.9 weight: 0.8 end_rotation { x: 0 y: 0.7071068 z: 0
         w: 0.7071068 } end_rotation_weight: 0.5 stretch: true
         max_stretch: 1.1 })")},
      {"aim_ik_defaults",
       absl::StrCat(R"(aim_ik { joint: "Head" target )", V(t.head), " }")},
      {"aim_ik", R"(aim_ik { joint: "Neck" target { x: 10 y: 20 z: 40 }
         forward { z: 1 } up { y: 1 } pole_vector { y: 1 } offset { y: 1 }
         twist_angle: 0.1 weight: 0.9 clamp_weight: 0.3 clamp_smoothing: 2 })"},
      {"ccd_ik_defaults",
       absl::StrCat(R"(ccd_ik { chain: ["LeftShoulder", "LeftElbow",
         "LeftWrist"] target )",
                    V(t.left_wrist), " }")},
      {"ccd_ik", absl::StrCat(R"(ccd_ik {
         chain: ["LeftCollar", "LeftShoulder", "LeftElbow", "LeftWrist"]
         target )",
                              V(t.left_wrist), R"( max_iterations: 12
         tolerance { relative_to_skeleton: 0.001 } weight: 0.9
         joint_weights: [1, 0.8, 0.6, 0.4] max_step_angle: 0.5
         hinge_fallback: true fallback_axis { x: 1 } nudge: true
         over_relaxation: 1.2
         limits { joint: "LeftElbow" hinge { axis { x: 1 } min_angle: -2
                                             max_angle: 0 } } })")},
      {"fabrik_ik_defaults",
       absl::StrCat(R"(fabrik_ik { chain: ["RightHip", "RightKnee",
         "RightAnkle"] target )",
                    V(t.right_ankle), " }")},
      {"fabrik_ik", absl::StrCat(R"(fabrik_ik {
         chain: ["RightShoulder", "RightElbow", "RightWrist"] target )",
                                 V(t.right_wrist), R"( max_iterations: 16
         tolerance { absolute: 0.01 } weight: 0.95 over_relaxation: 0.5
         limits { joint: "RightElbow" swing_twist { axis { y: 1 }
                  max_swing: 1 min_twist: -0.5 max_twist: 0.5 } } })")},
      {"fabrik_tree_ik_defaults", absl::StrCat(R"(fabrik_tree_ik { root: "Chest"
         effectors { joint: "LeftWrist" target )",
                                               V(t.left_wrist), R"( }
         effectors { joint: "RightWrist" target )",
                                               V(t.right_wrist), " } }")},
      {"fabrik_tree_ik", absl::StrCat(R"(fabrik_tree_ik { root: "lowerback"
         effectors { joint: "LeftWrist" target )",
                                      V(t.left_wrist), R"( }
         effectors { joint: "Head" target )",
                                      V(t.head), R"( pull: 0.5 }
         max_iterations: 8 tolerance { absolute: 0.05 } weight: 0.7
         limits { joint: "LeftElbow" euler { order: EULER_ORDER_ZYX
                  min { x: -1 y: -1 z: -1 } max { x: 1 y: 1 z: 1 } } } })")},
      {"full_body_biped_ik_defaults",
       absl::StrCat(R"(full_body_biped_ik {
         effectors { id: BIPED_EFFECTOR_LEFT_HAND position )",
                    V(t.left_wrist), R"( position_weight: 1 } })")},
      {"full_body_biped_ik", absl::StrCat(R"(full_body_biped_ik {
         effectors { id: BIPED_EFFECTOR_LEFT_HAND position )",
                                          V(t.left_wrist), R"(
                     position_weight: 1 rotation { w: 1 } rotation_weight: 0.5 }
         effectors { id: BIPED_EFFECTOR_RIGHT_FOOT position )",
                                          V(t.right_ankle), R"(
                     position_weight: 1 }
         effectors { id: BIPED_EFFECTOR_BODY position { x: 0 y: 17 z: 0 }
                     position_weight: 0.3 position_offset { y: -0.5 }
                     maintain_relative_position_weight: 0.2 }
         limbs { limb: BIPED_LIMB_LEFT_ARM bend_goal { z: 1 }
                 bend_goal_weight: 0.5 pull: 0.8 reach: 0.1 push: 0.2
                 push_parent: 0.1 mapping_weight: 0.9
                 maintain_rotation_weight: 0.3 }
         ik_position_weight: 0.9 iterations: 6 spine_iterations: 3
         spine_twist_weight: 0.5 head_maintain_rotation_weight: 0.4 })")},
      {"full_body_ccd_defaults", absl::StrCat(R"(full_body_ccd {
         effectors { joint: "LeftWrist" target )",
                                              V(t.left_wrist), " } }")},
      {"full_body_ccd", absl::StrCat(R"(full_body_ccd {
         effectors { joint: "LeftWrist" target )",
                                     V(t.left_wrist), R"( offset { x: 0.5 } }
         effectors { joint: "RightAnkle" target )",
                                     V(t.right_ankle), R"( weight: 0.5 }
         max_iterations: 6 tolerance { absolute: 0.02 } weight: 0.9
         nudge: true translation_joint: "Hips"
         limits { joint: "LeftKnee" hinge { axis { x: 1 } min_angle: 0
                                            max_angle: 2.5 } } })")},
      {"spring_bones_defaults",
       R"(spring_bones { rig { root_joints: "LeftShoulder" } })"},
      {"spring_bones", R"(spring_bones {
         rig { root_joints: ["LeftCollar", "RightCollar"]
               excluded_joints: "LThumb" dummy_tip_length: 2
               tip_axis: SPRING_TIP_AXIS_Y_POSITIVE
               settings { stiffness: 0.02 damping: 0.2 radius: 0.5
                          limit_angle_degrees: 60 }
               curves { damping { position: 0 value: 0.1 }
                        damping { position: 1 value: 0.5 } }
               space: SIMULATION_SPACE_WORLD target_rate_hz: 120
               max_substeps: 4 teleport_distance: 50 }
         gravity { y: -98 }
         wind { direction { x: 1 } speed: 2 noise_amplitude: 0.5
                noise_seed: 7 }
         external_force { z: 1 } external_force_in_world: true
         colliders { shape: SHAPE_SPHERE attachment: ATTACHMENT_BONE
                     bone: "Chest" radius: 3 }
         colliders { shape: SHAPE_CAPSULE attachment: ATTACHMENT_BONE
                     bone: "Neck" radius: 1 length: 3 axis { y: 1 } }
         colliders { shape: SHAPE_BOX attachment: ATTACHMENT_COMPONENT
                     half_extents { x: 2 y: 2 z: 2 }
                     offset { translation { y: 10 } } }
         colliders { shape: SHAPE_PLANE attachment: ATTACHMENT_WORLD }
         state_key: "arms" })"},
      {"look_at_defaults", absl::StrCat(R"(look_at { head: "Head"
         target )",
                                        V(t.head), " }")},
      {"look_at", absl::StrCat(R"(look_at {
         spine: ["lowerback", "Chest", "Chest2", "Neck"] head: "Head"
         target )",
                               V(t.head), R"( character_forward { z: 1 }
         weight: 0.8 body_weight: 0.4 head_weight: 0.9 clamp_weight: 0.3
         clamp_weight_head: 0.6 clamp_smoothing: 1 max_turn_speed: 90
         state_key: "gaze" })")},
      {"ground_defaults", R"(ground { pelvis: "Hips"
         legs { hip: "LeftHip" knee: "LeftKnee" ankle: "LeftAnkle" }
         legs { hip: "RightHip" knee: "RightKnee" ankle: "RightAnkle" }
         samples { hit: true point { y: 1 } }
         samples { hit: true point { y: 0.5 } } })"},
      {"ground", R"(ground { pelvis: "Hips"
         legs { hip: "LeftHip" knee: "LeftKnee" ankle: "LeftAnkle"
                toe: "LeftToe" }
         legs { hip: "RightHip" knee: "RightKnee" ankle: "RightAnkle"
                toe: "RightToe" }
         heightfield { columns: 3 rows: 3 spacing: 20 origin_x: -20
                       origin_z: -20
                       heights: [0, 0.5, 1, 0.2, 1.5, 0.7, 0, 2, 1] }
         max_step_height: 3 max_tilt: 0.4 weight: 0.9 pelvis_speed: 4
         foot_speed: 6 state_key: "feet" })"},
      {"plausibility_defaults", "plausibility { }"},
      {"plausibility", R"(plausibility {
         limits { joint: "LeftKnee" euler { order: EULER_ORDER_XYZ
                  min { x: -0.2 y: -0.1 z: -0.1 } max { x: 2.4 y: 0.1 z: 0.1 } } }
         limits { joint: "LeftShoulder" swing_twist { axis { x: 1 }
                  max_swing: 1.2 min_twist: -0.5 max_twist: 0.5 } }
         limits { joint: "RightKnee" hinge { axis { x: 1 } min_angle: -0.1
                  max_angle: 2.4 } }
         thresholds { range_tolerance: 0.05 max_angular_velocity: 20
                      max_root_speed: 400 teleport_distance: 60 }
         skip { joint: "Head" motion: true }
         skip_extremities: true state_key: "referee" })"},
  };
}

class Recorder {
 public:
  Recorder(const ImportedAsset& walk, v1::PoseWire::Stub& stub)
      : walk_(walk), stub_(stub) {
    server::SkeletonToProto(walk_.skeleton, &skeleton_);
    clips_.push_back(Trimmed("walk", 0.0f));
    clips_.push_back(Trimmed("walk_late", 3.0f));
    for (float t : {0.5f, 0.9f, 1.7f}) poses_.push_back(Sample(t));
    const ModelPose later = Model(Sample(0.75f));
    auto at = [&](const char* name) {
      return later[walk_.skeleton.FindJoint(name)].translation;
    };
    targets_ = {at("LeftAnkle"), at("RightAnkle"), at("LeftWrist"),
                at("RightWrist"),
                at("Head") + Eigen::Vector3f(0.0f, 0.0f, 10.0f)};
    ops_ = OpTexts(targets_);
  }

  bool ok() const { return ok_; }
  const std::vector<Record>& solve_records() const { return solve_; }
  const std::vector<Record>& session_records() const { return session_; }

  void RecordSolves() {
    // Each op alone after a clip sample, then every op in one pipeline.
    for (const auto& [name, text] : ops_) {
      v1::SolveRequest request = Request({SampleOp(0.6f), text}, 0);
      if (name.starts_with("validate")) continue;
      Solve(name, request);
    }
    Solve("validate", Request({SampleOp(0.6f), ValidateText(true)}, 0));
    Solve("validate_tolerances",
          Request({SampleOp(0.6f), ValidateText(false)}, 1));
    // A batch: every op in order, three characters (poses, roots, model
    // poses), the skeleton inline for the first and by hash afterwards,
    // state carried from each answer into the next request for 5 frames.
    v1::SolveRequest batch;
    batch.set_dt(1.0f / 60.0f);
    for (const v1::Clip& clip : clips_) *batch.add_clips() = clip;
    for (int c = 0; c < 3; ++c) {
      v1::CharacterInput* in = batch.add_characters();
      in->set_id(absl::StrCat("hero", c));
      *in->mutable_skeleton()->mutable_skeleton() = skeleton_;
      server::PoseToProto(poses_[c], in->mutable_pose());
      TransformToProto(Root(c, 0), in->mutable_root());
      in->set_want_model_pose(c != 1);
      for (const auto& [name, text] : ops_) AddOp(text, in->mutable_ops());
    }
    for (int frame = 0; frame < 5 && ok_; ++frame) {
      v1::SolveResponse response = Solve(absl::StrCat("batch", frame), batch);
      for (int c = 0; c < batch.characters_size(); ++c) {
        v1::CharacterInput* in = batch.mutable_characters(c);
        *in->mutable_state() = response.characters(c).state();
        in->mutable_skeleton()->set_hash(
            response.characters(c).skeleton_hash());
        TransformToProto(Root(c, frame + 1), in->mutable_root());
        *in->mutable_pose() = response.characters(c).pose();
      }
    }
  }

  void RecordSessions() {
    // One rig per op (characters "<op>"), one rig with every op, frames
    // with op_updates, a reset, inline ops and model poses.
    Stream stream;
    Send(stream, Registration([&](v1::SessionRequest& r) {
           r.mutable_register_skeleton()->set_id("cmu");
           *r.mutable_register_skeleton()->mutable_skeleton() = skeleton_;
         }));
    for (const v1::Clip& clip : clips_) {
      Send(stream, Registration([&](v1::SessionRequest& r) {
             r.mutable_register_clip()->set_id(clip.name());
             r.mutable_register_clip()->set_skeleton_id("cmu");
             *r.mutable_register_clip()->mutable_clip() = clip;
           }));
    }
    std::vector<std::string> characters;
    auto add_rig = [&](const std::string& id,
                       const std::vector<std::string>& texts, int count) {
      Send(stream, Registration([&](v1::SessionRequest& r) {
             r.mutable_register_rig()->set_id(id);
             r.mutable_register_rig()->set_skeleton_id("cmu");
             for (const std::string& t : texts) {
               AddOp(t, r.mutable_register_rig()->mutable_ops());
             }
           }));
      for (int i = 0; i < count; ++i) {
        const std::string character = absl::StrCat(id, "#", i);
        Send(stream, Registration([&](v1::SessionRequest& r) {
               r.mutable_register_character()->set_id(character);
               r.mutable_register_character()->set_rig_id(id);
             }));
        characters.push_back(character);
      }
    };
    std::vector<std::string> all;
    for (const auto& [name, text] : ops_) {
      add_rig(name, {SampleOp(0.2f), text}, 1);
      all.push_back(text);
    }
    all.push_back(ValidateText(false));
    add_rig("everything", all, 2);
    const int everything_ops = static_cast<int>(all.size());

    for (int f = 0; f < 24 && ok_; ++f) {
      v1::SessionRequest r;
      v1::Frame* frame = r.mutable_frame();
      frame->set_sequence(10 + 3 * f);
      frame->set_dt(f == 7 ? 0.1f : 1.0f / 60.0f);
      for (size_t k = 0; k < characters.size(); ++k) {
        const std::string& id = characters[k];
        v1::CharacterFrame* c = frame->add_characters();
        c->set_character_id(id);
        server::PoseToProto(poses_[(f + k) % poses_.size()], c->mutable_pose());
        TransformToProto(Root(static_cast<int>(k), f), c->mutable_root());
        c->set_want_model_pose((f + k) % 3 == 0);
        if (f == 12 && k % 4 == 0) c->set_reset_state(true);
        const bool every = id.starts_with("everything");
        // op_updates: the first op (a clip sample) moves in time; every
        // target-taking op gets a moving target, the two-bone a bend goal.
        const float phase = 0.05f * static_cast<float>(f);
        if (f % 2 == 1) {
          v1::OpUpdate* u = c->add_op_updates();
          u->set_op(0);
          if (every) {
            // op 0 of the everything rig is the default sample_clip
            u->set_time(phase);
          } else {
            u->set_time(0.2f + phase);
          }
        }
        const int n = every ? everything_ops : 2;
        const int first = every ? 0 : 1;
        for (int op = first; op < n; ++op) {
          if (every && op >= static_cast<int>(ops_.size())) break;
          const std::string& name =
              every ? ops_[op].first : ops_[OpIndexOfRig(id)].first;
          const bool target =
              name.starts_with("two_bone_ik") || name.starts_with("aim_ik") ||
              name.starts_with("ccd_ik") || name.starts_with("fabrik_ik");
          if (!target || f % 3 == 2) continue;
          v1::OpUpdate* u = c->add_op_updates();
          u->set_op(op);
          Eigen::Vector3f goal = (name.starts_with("two_bone_ik_defaults") ||
                                          name.starts_with("fabrik_ik_defaults")
                                      ? targets_.left_ankle
                                      : targets_.left_wrist) +
                                 Eigen::Vector3f(phase, -phase, 0.5f * phase);
          if (name.starts_with("aim_ik")) goal = targets_.head;
          if (name == "fabrik_ik_defaults") goal = targets_.right_ankle;
          if (name == "fabrik_ik" || name == "two_bone_ik") {
            goal = targets_.right_wrist + Eigen::Vector3f(-phase, 0, phase);
          }
          *u->mutable_target() = ToVec3(goal);
          if (name.starts_with("two_bone_ik") && f % 4 == 0) {
            *u->mutable_bend_goal() = ToVec3(Eigen::Vector3f(0, 10, 10 + f));
          }
        }
        // Inline ops replace the rig's for one frame.
        if (f == 5 && k == 0) {
          AddOp(SampleOp(0.3f), c->mutable_ops());
          AddOp(ops_[2].second, c->mutable_ops());
          c->clear_op_updates();
        }
      }
      Send(stream, r);
    }
    Finish(stream);
  }

 private:
  using Stream = std::unique_ptr<
      grpc::ClientReaderWriter<v1::SessionRequest, v1::SessionResponse>>;

  // The walk's keys from `start` seconds on, every fourth key for one
  // second, as a clip called `name` (a short clip keeps recordings small).
  v1::Clip Trimmed(const std::string& name, float start) {
    v1::Clip full;
    server::ClipToProto(walk_.clips.at(0), &full);
    v1::Clip out;
    out.set_name(name);
    out.set_duration(1.0f);
    for (const v1::JointTracks& joint : full.joints()) {
      v1::JointTracks* j = out.add_joints();
      j->set_joint(joint.joint());
      auto trim = [&](const v1::Track& in, int width, v1::Track* t) {
        if (in.times().empty()) return;
        t->set_interpolation(in.interpolation());
        for (int k = 0; k < in.times_size(); ++k) {
          const float time = in.times(k) - start;
          if (time < 0.0f || time > 1.0f || k % 4 != 0) continue;
          t->add_times(time);
          for (int w = 0; w < width; ++w)
            t->add_values(in.values(k * width + w));
        }
      };
      trim(joint.translation(), 3, j->mutable_translation());
      trim(joint.rotation(), 4, j->mutable_rotation());
      trim(joint.scale(), 3, j->mutable_scale());
    }
    return out;
  }

  LocalPose Sample(float time) const {
    LocalPose pose(walk_.skeleton.num_joints());
    SamplingJob job;
    job.skeleton = &walk_.skeleton;
    job.clip = &walk_.clips[0];
    job.time = time;
    job.output = absl::MakeSpan(pose);
    if (!job.Run().ok()) std::abort();
    return pose;
  }

  ModelPose Model(const LocalPose& local) const {
    ModelPose model(local.size());
    LocalToModelJob job{.skeleton = &walk_.skeleton,
                        .input = local,
                        .output = absl::MakeSpan(model)};
    if (!job.Run().ok()) std::abort();
    return model;
  }

  static void TransformToProto(const Transform& t, v1::Transform* out) {
    *out->mutable_translation() = ToVec3(t.translation);
    out->mutable_rotation()->set_x(t.rotation.x());
    out->mutable_rotation()->set_y(t.rotation.y());
    out->mutable_rotation()->set_z(t.rotation.z());
    out->mutable_rotation()->set_w(t.rotation.w());
    *out->mutable_scale() = ToVec3(t.scale);
  }

  static v1::Vec3 ToVec3(const Eigen::Vector3f& v) {
    v1::Vec3 out;
    out.set_x(v.x());
    out.set_y(v.y());
    out.set_z(v.z());
    return out;
  }

  // A component placement that moves and turns from frame to frame.
  static Transform Root(int character, int frame) {
    Transform t = Transform::Identity();
    t.translation =
        Eigen::Vector3f(3.0f * character + 0.7f * frame, 0.0f, -0.4f * frame);
    t.rotation = Eigen::Quaternionf(Eigen::AngleAxisf(
        0.05f * frame + 0.3f * character, Eigen::Vector3f::UnitY()));
    return t;
  }

  static std::string SampleOp(float time) {
    return absl::StrCat(R"(sample_clip { sample { clip: "walk" time: )", time,
                        " } }");
  }

  std::string ValidateText(bool exact) const {
    v1::Operation op;
    server::PoseToProto(poses_[1], op.mutable_validate()->mutable_claimed());
    if (!exact) {
      op.mutable_validate()->set_position_tolerance(0.5f);
      op.mutable_validate()->set_rotation_tolerance_degrees(2.0f);
    }
    std::string text;
    google::protobuf::TextFormat::PrintToString(op, &text);
    return text;
  }

  int OpIndexOfRig(const std::string& character) const {
    const std::string rig = character.substr(0, character.find('#'));
    for (size_t i = 0; i < ops_.size(); ++i) {
      if (ops_[i].first == rig) return static_cast<int>(i);
    }
    std::abort();
  }

  void AddOp(const std::string& text,
             google::protobuf::RepeatedPtrField<v1::Operation>* ops) {
    if (!google::protobuf::TextFormat::ParseFromString(text, ops->Add())) {
      std::fprintf(stderr, "bad op text: %s\n", text.c_str());
      ok_ = false;
    }
  }

  v1::SolveRequest Request(const std::vector<std::string>& texts, int pose) {
    v1::SolveRequest request;
    request.set_dt(1.0f / 30.0f);
    for (const v1::Clip& clip : clips_) *request.add_clips() = clip;
    v1::CharacterInput* c = request.add_characters();
    c->set_id("hero");
    *c->mutable_skeleton()->mutable_skeleton() = skeleton_;
    server::PoseToProto(poses_[pose], c->mutable_pose());
    c->set_want_model_pose(true);
    for (const std::string& t : texts) AddOp(t, c->mutable_ops());
    return request;
  }

  v1::SolveResponse Solve(const std::string& name,
                          const v1::SolveRequest& request) {
    grpc::ClientContext context;
    v1::SolveResponse response;
    const grpc::Status status = stub_.Solve(&context, request, &response);
    if (!status.ok()) {
      std::fprintf(stderr, "solve %s failed: %s\n", name.c_str(),
                   status.error_message().c_str());
      ok_ = false;
      return response;
    }
    solve_.push_back({RecordKind::kSolveRequest, CanonicalBytes(request)});
    solve_.push_back({RecordKind::kSolveResponse, CanonicalBytes(response)});
    return response;
  }

  template <typename Fill>
  static v1::SessionRequest Registration(Fill fill) {
    v1::SessionRequest r;
    fill(r);
    return r;
  }

  void Send(Stream& stream, const v1::SessionRequest& request) {
    if (stream == nullptr) {
      context_ = std::make_unique<grpc::ClientContext>();
      stream = stub_.Session(context_.get());
      session_.push_back({RecordKind::kStreamStart, ""});
    }
    v1::SessionResponse response;
    if (!stream->Write(request) || !stream->Read(&response)) {
      std::fprintf(stderr, "session stream broke\n");
      ok_ = false;
      return;
    }
    const v1::Status& status = response.has_registered()
                                   ? response.registered().status()
                                   : response.frame().status();
    if (status.code() != 0) {
      std::fprintf(stderr, "session request failed: %s\n",
                   status.message().c_str());
      ok_ = false;
    }
    for (const auto& c : response.frame().characters()) {
      if (c.status().code() != 0) {
        std::fprintf(stderr, "session character %s failed: %s\n",
                     c.character_id().c_str(), c.status().message().c_str());
        ok_ = false;
      }
    }
    session_.push_back({RecordKind::kSessionRequest, CanonicalBytes(request)});
    session_.push_back(
        {RecordKind::kSessionResponse, CanonicalBytes(response)});
  }

  void Finish(Stream& stream) {
    stream->WritesDone();
    const grpc::Status status = stream->Finish();
    if (!status.ok()) {
      std::fprintf(stderr, "session ended with %s\n",
                   status.error_message().c_str());
      ok_ = false;
    }
  }

  const ImportedAsset& walk_;
  v1::PoseWire::Stub& stub_;
  v1::Skeleton skeleton_;
  std::vector<v1::Clip> clips_;
  std::vector<LocalPose> poses_;
  Targets targets_;
  std::vector<std::pair<std::string, std::string>> ops_;
  std::unique_ptr<grpc::ClientContext> context_;
  std::vector<Record> solve_, session_;
  bool ok_ = true;
};

int Main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: golden_record WALK.bvh OUT_DIR\n");
    return 2;
  }
  auto walk = ReadBvhFile(argv[1]);
  if (!walk.ok()) {
    std::fprintf(stderr, "%s\n", walk.status().ToString().c_str());
    return 2;
  }
  server::ServerConfig config;
  config.listen = "127.0.0.1:0";
  auto server = server::PosewireServer::Start(config);
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", server.status().ToString().c_str());
    return 1;
  }
  auto channel =
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", (*server)->port()),
                          grpc::InsecureChannelCredentials());
  auto stub = v1::PoseWire::NewStub(channel);
  Recorder recorder(*walk, *stub);
  recorder.RecordSolves();
  recorder.RecordSessions();
  if (!recorder.ok()) {
    std::fprintf(stderr, "nothing written: a call failed\n");
    return 1;
  }
  const std::filesystem::path out(argv[2]);
  for (const auto& [file, records] :
       {std::pair{"solve.rec", &recorder.solve_records()},
        std::pair{"session.rec", &recorder.session_records()}}) {
    std::ofstream stream(out / file, std::ios::binary);
    stream << EncodeRecords(*records);
    if (!stream) {
      std::fprintf(stderr, "cannot write %s\n", (out / file).c_str());
      return 1;
    }
    std::printf("%s: %zu records\n", file, records->size());
  }
  return 0;
}

}  // namespace
}  // namespace posewire::golden

int main(int argc, char** argv) { return posewire::golden::Main(argc, argv); }
