#include "clients/load/workload.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "clients/load/frame_encoder.h"
#include "server/wire/wire_convert.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/model/pose.h"
#include "solver_core/pose_ops/sampling_job.h"

namespace posewire::load {
namespace {

// Keeps the keys of `track` at or before `seconds`.
template <typename T>
void TrimTrack(Track<T>& track, float seconds) {
  size_t keep = 0;
  while (keep < track.times.size() && track.times[keep] <= seconds) ++keep;
  if (keep == 0) return;  // first key beyond the cut: keep the track whole
  const size_t per_key =
      track.interpolation == Interpolation::kCubicSpline ? 3 : 1;
  track.times.resize(keep);
  track.values.resize(keep * per_key);
}

// The clip's first `seconds` (all of it for 0 or a longer span).
Clip TrimClip(const Clip& clip, float seconds) {
  if (seconds <= 0.0f || seconds >= clip.duration) return clip;
  Clip out = clip;
  float last = 0.0f;
  for (JointTracks& tracks : out.tracks) {
    TrimTrack(tracks.translation, seconds);
    TrimTrack(tracks.rotation, seconds);
    TrimTrack(tracks.scale, seconds);
    for (const auto* times : {&tracks.translation.times, &tracks.rotation.times,
                              &tracks.scale.times}) {
      if (!times->empty()) last = std::max(last, times->back());
    }
  }
  out.duration = std::max(seconds, last);
  return out;
}

v1::Vec3 ToVec3(const Eigen::Vector3f& v) {
  v1::Vec3 out;
  out.set_x(v.x());
  out.set_y(v.y());
  out.set_z(v.z());
  return out;
}

struct Limb {
  int start, mid, end;
  const char* names[3];
  Eigen::Vector3f mid_axis;
};

class Builder {
 public:
  Builder(const ImportedAsset& asset, const Clip& clip)
      : skeleton_(asset.skeleton), clip_(clip) {}

  absl::Status AddLimb(const char* start, const char* mid, const char* end) {
    Limb limb{skeleton_.FindJoint(start),
              skeleton_.FindJoint(mid),
              skeleton_.FindJoint(end),
              {start, mid, end},
              {}};
    for (int i = 0; i < 3; ++i) {
      const int j = i == 0 ? limb.start : i == 1 ? limb.mid : limb.end;
      if (j < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--op_mix=fk_ik: the skeleton has no joint '", limb.names[i],
            "' (the mix needs the CMU limb names)"));
      }
    }
    // The hinge is perpendicular to the rest forearm or shin, as a rig
    // would set it up (tests/service/ik_test.cc does the same).
    const Eigen::Vector3f bone = skeleton_.rest_pose()[limb.end].translation;
    Eigen::Vector3f axis = bone.cross(Eigen::Vector3f::UnitZ());
    if (axis.norm() < 1e-4f * std::max(1.0f, bone.norm())) {
      axis = bone.cross(Eigen::Vector3f::UnitX());
    }
    limb.mid_axis = axis.normalized();
    limbs_.push_back(limb);
    return absl::OkStatus();
  }

  LocalPose Sample(float time) const {
    LocalPose pose(skeleton_.num_joints());
    SamplingJob job;
    job.skeleton = &skeleton_;
    job.clip = &clip_;
    job.time = time;
    job.output = absl::MakeSpan(pose);
    (void)job.Run();  // the clip validated against the skeleton on import
    return pose;
  }

  ModelPose Model(const LocalPose& local) const {
    ModelPose model(local.size());
    LocalToModelJob job{.skeleton = &skeleton_,
                        .input = local,
                        .output = absl::MakeSpan(model)};
    (void)job.Run();
    return model;
  }

  // fk_ik: each limb reaches for where its end joint is a little later in
  // the clip, relative to the limb root (the character walks on), bending
  // toward that frame's mid joint.
  struct LimbGoal {
    Eigen::Vector3f target, bend_goal;
  };
  std::vector<LimbGoal> LimbGoals(const ModelPose& now,
                                  const ModelPose& later) const {
    std::vector<LimbGoal> goals;
    for (const Limb& limb : limbs_) {
      const Eigen::Vector3f offset =
          now[limb.start].translation - later[limb.start].translation;
      goals.push_back({later[limb.end].translation + offset,
                       later[limb.mid].translation + offset});
    }
    return goals;
  }

  float Wrap(float t) const {
    return clip_.duration > 0.0f ? std::fmod(t, clip_.duration) : 0.0f;
  }

  // One character's pipeline at clip time `t` for `mix`.
  void Ops(const std::string& mix, float t,
           google::protobuf::RepeatedPtrField<v1::Operation>* ops) const {
    auto sample = [&](float time, v1::ClipSample* s) {
      s->set_clip("walk");
      s->set_time(Wrap(time));
    };
    if (mix == "blend3") {
      v1::BlendOp* blend = ops->Add()->mutable_blend();
      const float weights[3] = {0.5f, 0.3f, 0.2f};
      for (int i = 0; i < 3; ++i) {
        v1::BlendLayer* layer = blend->add_layers();
        sample(t + 0.11f * static_cast<float>(i),
               layer->mutable_source()->mutable_clip());
        layer->set_weight(weights[i]);
      }
      return;
    }
    sample(t, ops->Add()->mutable_sample_clip()->mutable_sample());
    if (mix == "spring") {
      v1::SpringBonesOp* spring = ops->Add()->mutable_spring_bones();
      spring->mutable_rig()->add_root_joints("LeftShoulder");
      spring->mutable_rig()->add_root_joints("RightShoulder");
      spring->mutable_rig()->set_dummy_tip_length(2.0f);
      spring->mutable_rig()->mutable_settings()->set_stiffness(0.02f);
      spring->mutable_gravity()->set_y(-98.0f);
      return;
    }
    const ModelPose now = Model(Sample(t));
    const ModelPose later = Model(Sample(t + 0.2f));
    if (mix == "fullbody") {
      // Full-body biped IK with the four limb effectors and the body
      // effector at weight 1, targets from 0.2 s later relative to the hips
      // (the character walks on); mapping detected from the CMU names.
      const Eigen::Vector3f offset = now[0].translation - later[0].translation;
      v1::FullBodyBipedIkOp* fb = ops->Add()->mutable_full_body_biped_ik();
      v1::BipedEffector* body = fb->add_effectors();
      body->set_id(v1::BIPED_EFFECTOR_BODY);
      *body->mutable_position() = ToVec3(now[0].translation);
      body->set_position_weight(1.0f);
      const v1::BipedEffectorId ids[] = {
          v1::BIPED_EFFECTOR_LEFT_HAND, v1::BIPED_EFFECTOR_RIGHT_HAND,
          v1::BIPED_EFFECTOR_LEFT_FOOT, v1::BIPED_EFFECTOR_RIGHT_FOOT};
      for (size_t i = 0; i < limbs_.size() && i < 4; ++i) {
        v1::BipedEffector* e = fb->add_effectors();
        e->set_id(ids[i]);
        *e->mutable_position() =
            ToVec3(later[limbs_[i].end].translation + offset);
        e->set_position_weight(1.0f);
      }
      return;
    }
    const std::vector<LimbGoal> goals = LimbGoals(now, later);
    for (size_t i = 0; i < limbs_.size(); ++i) {
      const Limb& limb = limbs_[i];
      v1::TwoBoneIkOp* ik = ops->Add()->mutable_two_bone_ik();
      ik->set_start_joint(limb.names[0]);
      ik->set_mid_joint(limb.names[1]);
      ik->set_end_joint(limb.names[2]);
      *ik->mutable_target() = ToVec3(goals[i].target);
      *ik->mutable_bend_goal() = ToVec3(goals[i].bend_goal);
      *ik->mutable_mid_axis() = ToVec3(limb.mid_axis);
    }
  }

  // The same frame as Ops(mix, t) for a pipeline registered with Ops(mix,
  // 0), as op updates: the clip time, and each limb's target and bend goal.
  // Only for mixes that TakesUpdates.
  void Updates(
      const std::string& mix, float t,
      google::protobuf::RepeatedPtrField<v1::OpUpdate>* updates) const {
    v1::OpUpdate* sample = updates->Add();
    sample->set_op(0);
    sample->set_time(Wrap(t));
    if (mix == "spring") return;
    const std::vector<LimbGoal> goals =
        LimbGoals(Model(Sample(t)), Model(Sample(t + 0.2f)));
    for (size_t i = 0; i < goals.size(); ++i) {
      v1::OpUpdate* update = updates->Add();
      update->set_op(static_cast<uint32_t>(i + 1));  // after the sample
      *update->mutable_target() = ToVec3(goals[i].target);
      *update->mutable_bend_goal() = ToVec3(goals[i].bend_goal);
    }
  }

  // Whether op updates can carry `mix`'s per-frame inputs: not blend layer
  // times or full-body effectors, whose frames send their ops.
  static bool TakesUpdates(const std::string& mix) {
    return mix == "fk_ik" || mix == "spring";
  }

 private:
  const Skeleton& skeleton_;
  const Clip& clip_;
  std::vector<Limb> limbs_;
};

// The skeleton and clip as every mix registers them (the clip named
// "walk").
struct WireAssets {
  v1::Skeleton skeleton;
  v1::Clip clip;
};

WireAssets ToWire(const Skeleton& skeleton, const Clip& clip) {
  WireAssets wire;
  server::SkeletonToProto(skeleton, &wire.skeleton);
  server::ClipToProto(clip, &wire.clip);
  wire.clip.set_name("walk");
  return wire;
}

// The Session registrations: the skeleton "rig", the clip "walk", then
// `before_rig` (the referee's hitboxes), the rig "load" of `rig_ops`, and
// characters c0, c1, ... on it.
void AddRegistrations(
    const WireAssets& wire, const std::vector<v1::SessionRequest>& before_rig,
    const google::protobuf::RepeatedPtrField<v1::Operation>& rig_ops,
    int characters, Workload& w) {
  v1::SessionRequest r;
  r.mutable_register_skeleton()->set_id("rig");
  *r.mutable_register_skeleton()->mutable_skeleton() = wire.skeleton;
  w.registrations.push_back(r);
  r.Clear();
  r.mutable_register_clip()->set_id("walk");
  r.mutable_register_clip()->set_skeleton_id("rig");
  *r.mutable_register_clip()->mutable_clip() = wire.clip;
  w.registrations.push_back(r);
  for (const v1::SessionRequest& extra : before_rig) {
    w.registrations.push_back(extra);
  }
  r.Clear();
  r.mutable_register_rig()->set_id("load");
  r.mutable_register_rig()->set_skeleton_id("rig");
  *r.mutable_register_rig()->mutable_ops() = rig_ops;
  w.registrations.push_back(r);
  for (int c = 0; c < characters; ++c) {
    r.Clear();
    r.mutable_register_character()->set_id(absl::StrCat("c", c));
    r.mutable_register_character()->set_rig_id("load");
    w.registrations.push_back(r);
  }
}

// Appends `solve` (skeletons inline) and its copy with the skeletons by
// content hash.
void AddSolve(v1::SolveRequest solve, Workload& w) {
  v1::SolveRequest by_hash = solve;
  for (v1::CharacterInput& ci : *by_hash.mutable_characters()) {
    ci.mutable_skeleton()->set_hash(w.skeleton_hash);
  }
  w.solve_inline.push_back(std::move(solve));
  w.solve_by_hash.push_back(std::move(by_hash));
}

// referee: what a game server's referee sends each tick. Every character
// comes with its claimed pose (the clip sampled at its own time), which the
// rig checks for plausibility, then re-solves from its input (the clip
// time) and validates against the claim (time and claim as op updates of
// the registered rig; a unary Solve sends the ops); then a hit query fires
// rays at
// the characters as they were rewind_seconds before, the shooters' view.
// Characters stand on a square grid, each ray aimed at one character's
// hips from in front.
class RefereeBuilder {
 public:
  RefereeBuilder(const Skeleton& skeleton, const Clip& clip,
                 const Builder& builder, const WorkloadOptions& options)
      : builder_(builder), options_(options) {
    // Sizes from the rig: the rest pose's reach from its root.
    const ModelPose rest = builder.Model(
        LocalPose(skeleton.rest_pose().begin(), skeleton.rest_pose().end()));
    for (const Transform& t : rest) {
      reach_ = std::max(reach_, (t.translation - rest[0].translation).norm());
    }
    spacing_ = 3.0f * std::max(reach_, 1e-3f);
    side_ = static_cast<int>(
        std::ceil(std::sqrt(static_cast<float>(options.characters))));
    // Enough variants for the clip to play through at the tick rate, so
    // a character's consecutive frames are consecutive motion.
    variants_ =
        std::max(options.variants,
                 static_cast<int>(std::ceil(clip.duration / options.dt)));
    lag_frames_ = static_cast<int>(
        std::lround(options.rewind_seconds / static_cast<double>(options.dt)));
  }

  int variants() const { return variants_; }

  float Time(int character, int variant) const {
    return builder_.Wrap(0.0137f * static_cast<float>(character) +
                         options_.dt * static_cast<float>(variant));
  }

  Eigen::Vector3f Placement(int character) const {
    return Eigen::Vector3f(static_cast<float>(character % side_) * spacing_,
                           0.0f,
                           static_cast<float>(character / side_) * spacing_);
  }

  // Plausibility of the claim, the re-solve, the comparison.
  void Ops(const LocalPose& claimed, float t,
           google::protobuf::RepeatedPtrField<v1::Operation>* ops) const {
    ops->Add()->mutable_plausibility();
    v1::ClipSample* sample =
        ops->Add()->mutable_sample_clip()->mutable_sample();
    sample->set_clip("walk");
    sample->set_time(t);
    server::PoseToProto(claimed,
                        ops->Add()->mutable_validate()->mutable_claimed());
  }

  v1::RegisterHitboxes Hitboxes() const {
    v1::RegisterHitboxes set;
    set.set_id("body");
    set.set_skeleton_id("rig");
    for (const char* joint : {"LeftHip", "LeftKnee", "LeftAnkle", "RightHip",
                              "RightKnee", "RightAnkle", "lowerback", "Chest",
                              "Neck", "LeftShoulder", "LeftElbow", "LeftWrist",
                              "RightShoulder", "RightElbow", "RightWrist"}) {
      v1::Hitbox* h = set.add_hitboxes();
      h->set_joint(joint);
      h->set_shape(v1::HITBOX_SHAPE_CAPSULE);
      h->set_radius(0.08f * reach_);
      h->set_half_height(0.12f * reach_);
    }
    return set;
  }

  // The query after frame `variant` (its time is set per send).
  v1::SessionRequest Query(int variant) const {
    v1::SessionRequest request;
    v1::HitQuery* query = request.mutable_query();
    for (int c = 0; c < options_.characters; ++c) {
      v1::HitTarget* target = query->add_targets();
      target->set_character_id(absl::StrCat("c", c));
      target->set_hitbox_set("body");
    }
    const int past =
        ((variant - lag_frames_) % variants_ + variants_) % variants_;
    for (int k = 0; k < options_.rays_per_query; ++k) {
      const int c = (7 * k + variant) % options_.characters;
      const Eigen::Vector3f hips =
          Placement(c) +
          builder_.Model(builder_.Sample(Time(c, past)))[0].translation;
      v1::Ray* ray = query->add_rays();
      *ray->mutable_origin() =
          ToVec3(hips - Eigen::Vector3f(0.0f, 0.0f, 0.5f * spacing_));
      *ray->mutable_direction() = ToVec3(Eigen::Vector3f::UnitZ());
      ray->set_max_distance(spacing_);
    }
    return request;
  }

 private:
  const Builder& builder_;
  const WorkloadOptions& options_;
  float reach_ = 0.0f;
  float spacing_ = 1.0f;
  int side_ = 1;
  int variants_ = 1;
  int lag_frames_ = 0;
};

absl::StatusOr<Workload> BuildRefereeWorkload(const ImportedAsset& asset,
                                              const Clip& clip,
                                              const WorkloadOptions& options) {
  if (options.rays_per_query < 0 || !(options.rewind_seconds >= 0.0) ||
      !(options.dt > 0.0f)) {
    return absl::InvalidArgumentError(
        "--op_mix=referee: --rays must be >= 0, --rewind_ms >= 0 and the "
        "tick positive");
  }
  const Builder builder(asset, clip);
  const RefereeBuilder referee(asset.skeleton, clip, builder, options);
  Workload w;
  w.required_ops = {"plausibility", "sample_clip", "validate"};
  w.joints = asset.skeleton.num_joints();
  w.skeleton_hash = server::SkeletonHash(asset.skeleton);
  w.seconds_per_frame = options.dt;
  w.rewind_seconds = options.rewind_seconds;

  const WireAssets wire = ToWire(asset.skeleton, clip);
  v1::SessionRequest hitboxes;
  *hitboxes.mutable_register_hitboxes() = referee.Hitboxes();
  v1::RegisterRig rig;
  referee.Ops(builder.Sample(0.0f), 0.0f, rig.mutable_ops());
  AddRegistrations(wire, {hitboxes}, rig.ops(), options.characters, w);

  for (int v = 0; v < referee.variants(); ++v) {
    v1::SessionRequest frame;
    frame.mutable_frame()->set_dt(options.dt);
    v1::SolveRequest solve;
    solve.set_dt(options.dt);
    *solve.add_clips() = wire.clip;
    for (int c = 0; c < options.characters; ++c) {
      const float t = referee.Time(c, v);
      const LocalPose claimed = builder.Sample(t);
      Transform root;
      root.translation = referee.Placement(c);
      v1::CharacterFrame* cf = frame.mutable_frame()->add_characters();
      cf->set_character_id(absl::StrCat("c", c));
      server::PoseToProto(claimed, cf->mutable_pose());
      server::TransformToProto(root, cf->mutable_root());
      // The registered rig's ops, this frame's clip time and claim as op
      // updates: no op list compiled per frame.
      v1::OpUpdate* time = cf->add_op_updates();
      time->set_op(1);
      time->set_time(t);
      v1::OpUpdate* claim = cf->add_op_updates();
      claim->set_op(2);
      *claim->mutable_claimed() = cf->pose();

      v1::CharacterInput* ci = solve.add_characters();
      ci->set_id(absl::StrCat("c", c));
      *ci->mutable_skeleton()->mutable_skeleton() = wire.skeleton;
      *ci->mutable_pose() = cf->pose();
      *ci->mutable_root() = cf->root();
      referee.Ops(claimed, t, ci->mutable_ops());
    }
    w.frames.push_back(std::move(frame));
    w.queries.push_back(referee.Query(v));
    AddSolve(std::move(solve), w);
  }
  return w;
}

}  // namespace

absl::StatusOr<Workload> BuildWorkload(const ImportedAsset& asset,
                                       const WorkloadOptions& options) {
  const std::string& mix = options.op_mix;
  Workload w;
  if (mix == "fk_ik") {
    w.required_ops = {"sample_clip", "two_bone_ik"};
  } else if (mix == "spring") {
    w.required_ops = {"sample_clip", "spring_bones"};
  } else if (mix == "blend3") {
    w.required_ops = {"blend"};
  } else if (mix == "fullbody") {
    w.required_ops = {"sample_clip", "full_body_biped_ik"};
  } else if (mix != "referee") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--op_mix: unknown mix '", mix,
        "' (expected fk_ik, spring, blend3, fullbody or referee)"));
  }
  if (asset.clips.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--skeleton: ", asset.source, " has no clip"));
  }
  if (options.characters < 1 || options.variants < 1) {
    return absl::InvalidArgumentError("--characters must be >= 1");
  }
  const Clip clip = TrimClip(asset.clips[0], options.clip_seconds);
  if (mix == "referee") return BuildRefereeWorkload(asset, clip, options);
  Builder builder(asset, clip);
  if (mix == "fk_ik" || mix == "fullbody") {
    // Arms then legs: the full-body mix maps them to hand and foot effectors
    // in this order.
    for (const auto& l :
         {std::array<const char*, 3>{"LeftShoulder", "LeftElbow", "LeftWrist"},
          {"RightShoulder", "RightElbow", "RightWrist"},
          {"LeftHip", "LeftKnee", "LeftAnkle"},
          {"RightHip", "RightKnee", "RightAnkle"}}) {
      absl::Status status = builder.AddLimb(l[0], l[1], l[2]);
      if (!status.ok()) return status;
    }
  }
  w.joints = asset.skeleton.num_joints();
  w.skeleton_hash = server::SkeletonHash(asset.skeleton);

  const WireAssets wire = ToWire(asset.skeleton, clip);
  v1::RegisterRig rig;
  builder.Ops(mix, 0.0f, rig.mutable_ops());
  AddRegistrations(wire, {}, rig.ops(), options.characters, w);

  w.frames_send_op_updates = options.op_updates && Builder::TakesUpdates(mix);
  // Message variants: every character at its own clip time.
  for (int v = 0; v < options.variants; ++v) {
    v1::SessionRequest frame;
    frame.mutable_frame()->set_dt(options.dt);
    v1::SolveRequest solve;
    solve.set_dt(options.dt);
    *solve.add_clips() = wire.clip;
    for (int c = 0; c < options.characters; ++c) {
      const float t = builder.Wrap(
          0.0137f * static_cast<float>(v * options.characters + c));
      v1::CharacterFrame* cf = frame.mutable_frame()->add_characters();
      cf->set_character_id(absl::StrCat("c", c));
      cf->set_want_model_pose(true);
      v1::CharacterFrame full;
      builder.Ops(mix, t, full.mutable_ops());
      if (w.frames_send_op_updates) {
        builder.Updates(mix, t, cf->mutable_op_updates());
      } else {
        *cf->mutable_ops() = full.ops();
      }

      v1::CharacterInput* ci = solve.add_characters();
      ci->set_id(absl::StrCat("c", c));
      *ci->mutable_skeleton()->mutable_skeleton() = wire.skeleton;
      ci->set_want_model_pose(true);
      *ci->mutable_ops() = full.ops();
    }
    w.frames.push_back(std::move(frame));
    AddSolve(std::move(solve), w);
  }
  return w;
}

double Workload::QueryTime(uint64_t sequence) const {
  return std::max(TickTime(sequence, seconds_per_frame) - rewind_seconds,
                  TickTime(1, seconds_per_frame));
}

}  // namespace posewire::load
