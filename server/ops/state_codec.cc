#include "server/ops/state_codec.h"

#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/ops/ik_wire.h"
#include "server/ops/pose_source.h"
#include "server/wire/wire_convert.h"
#include "solver_core/analytic_ik/ground.h"
#include "solver_core/analytic_ik/look_at.h"
#include "solver_core/retarget/retarget_feet.h"

namespace posewire::server {

absl::Status StateFromProto(
    const google::protobuf::Map<std::string, v1::OperationState>& proto,
    ClipLibrary& clips, CharacterState& state, absl::string_view field) {
  for (const auto& [key, value] : proto) {
    const std::string where = absl::StrCat(field, "[\"", key, "\"]");
    switch (value.state_case()) {
      case v1::OperationState::kCrossfade: {
        const v1::CrossfadeState& wire = value.crossfade();
        CrossfadeState player;
        if (!wire.clip().empty()) {
          auto clip = clips.Find(wire.clip(), absl::StrCat(where, ".clip"));
          if (!clip.ok()) return clip.status();
          player.current.clip = *clip;
          player.current.time = wire.time();
        }
        if (wire.fades_size() > kMaxQueuedFades) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, ".fades: ", wire.fades_size(),
                           " fades exceed the limit of ", kMaxQueuedFades));
        }
        for (int i = 0; i < wire.fades_size(); ++i) {
          const v1::PendingFade& f = wire.fades(i);
          auto clip =
              clips.Find(f.clip(), absl::StrCat(where, ".fades[", i, "].clip"));
          if (!clip.ok()) return clip.status();
          if (!v1::FadeCurve_IsValid(f.curve())) {
            return UnknownEnum(absl::StrCat(where, ".fades[", i, "].curve"),
                               f.curve());
          }
          Fade fade;
          fade.target.clip = *clip;
          fade.target.time = f.time();
          fade.duration = f.duration();
          fade.elapsed = f.elapsed();
          fade.curve = FadeCurveFromProto(f.curve());
          player.fades.push_back(fade);
        }
        // Times, durations and elapsed values are range-checked by
        // CrossfadeJob::Validate when the op runs.
        state.crossfades[key].state = std::move(player);
        break;
      }
      case v1::OperationState::kDynamics: {
        auto parsed = ParseDynamicsState(value.dynamics());
        if (!parsed.ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, ".dynamics: ", parsed.status().message()));
        }
        // The spring job checks that the state's rig fingerprint matches
        // the op's rig when it runs.
        state.springs[key].state = *std::move(parsed);
        break;
      }
      case v1::OperationState::kGround: {
        const v1::GroundState& wire = value.ground();
        if (wire.foot_offsets_size() > kMaxGroundLegs) {
          return absl::InvalidArgumentError(absl::StrCat(
              where, ".ground.foot_offsets: ", wire.foot_offsets_size(),
              " offsets; a ground op has at most ", kMaxGroundLegs, " legs"));
        }
        // Finiteness is checked by GroundJob::Validate when the op runs.
        GroundState& ground = state.grounds[key].state;
        ground = GroundState{};
        ground.pelvis_offset = wire.pelvis_offset();
        for (int i = 0; i < wire.foot_offsets_size(); ++i) {
          ground.foot_offsets[i] = wire.foot_offsets(i);
        }
        break;
      }
      case v1::OperationState::kLookAt: {
        auto direction = OptionalVec3(
            value.look_at().has_direction(), value.look_at().direction(),
            Eigen::Vector3f::Zero(), absl::StrCat(where, ".look_at.direction"));
        if (!direction.ok()) return direction.status();
        state.looks[key].state.direction = *direction;
        break;
      }
      case v1::OperationState::kPlausibility: {
        const v1::PlausibilityState& wire = value.plausibility();
        if (wire.frames_size() > 2) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, ".plausibility.frames: ", wire.frames_size(),
                           " frames; the check keeps at most 2"));
        }
        // Sizes and values are checked against the skeleton by
        // PlausibilityJob::Validate when the op runs.
        PlausibilityHistory history;
        history.frames = wire.frames_size();
        for (int i = 0; i < wire.frames_size(); ++i) {
          const v1::PlausibilityFrame& f = wire.frames(i);
          const std::string at =
              absl::StrCat(where, ".plausibility.frames[", i, "]");
          auto pose = UnsizedPoseFromProto(f.pose(), absl::StrCat(at, ".pose"));
          if (!pose.ok()) return pose.status();
          history.poses[i] = *std::move(pose);
          auto root = TransformFromProto(f.root(), absl::StrCat(at, ".root"));
          if (!root.ok()) return root.status();
          history.placements[i] = *root;
          if (!std::isfinite(f.dt()) || f.dt() < 0.0f) {
            return absl::InvalidArgumentError(
                absl::StrCat(at, ".dt: ", f.dt(), " must be finite and >= 0"));
          }
          history.dts[i] = f.dt();
        }
        state.plausibility[key].state = std::move(history);
        break;
      }
      case v1::OperationState::kRetargetFeet: {
        const v1::RetargetFeetState& wire = value.retarget_feet();
        if (wire.feet_size() != 0 && wire.feet_size() != kRetargetFeet) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, ".retarget_feet.feet: ", wire.feet_size(),
                           " feet; the pass keeps ", kRetargetFeet,
                           " (left, right) or none"));
        }
        // Finiteness and ranges are checked by RetargetFeetJob::Validate
        // when the op runs.
        RetargetFeetState feet;
        feet.started = wire.feet_size() == kRetargetFeet;
        feet.source_floor = wire.source_floor();
        for (int i = 0; i < wire.feet_size(); ++i) {
          const v1::RetargetFootState& f = wire.feet(i);
          const std::string at =
              absl::StrCat(where, ".retarget_feet.feet[", i, "]");
          auto previous = OptionalVec3(
              f.has_previous_source(), f.previous_source(),
              Eigen::Vector3f::Zero(), absl::StrCat(at, ".previous_source"));
          if (!previous.ok()) return previous.status();
          auto lock =
              OptionalVec3(f.has_lock(), f.lock(), Eigen::Vector3f::Zero(),
                           absl::StrCat(at, ".lock"));
          if (!lock.ok()) return lock.status();
          feet.feet[i].previous_source = *previous;
          feet.feet[i].contact = f.contact();
          feet.feet[i].locked = f.locked();
          feet.feet[i].lock = *lock;
          feet.feet[i].release = f.release();
        }
        state.retarget_feet[key].state = feet;
        break;
      }
      case v1::OperationState::STATE_NOT_SET:
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": empty state entry"));
    }
  }
  return absl::OkStatus();
}

void StateToProto(
    const CharacterState& state, const ClipLibrary& clips,
    google::protobuf::Map<std::string, v1::OperationState>* proto) {
  for (const auto& [key, slot] : state.springs) {
    (*proto)[key].set_dynamics(SerializeDynamicsState(slot.state));
  }
  for (const auto& [key, slot] : state.grounds) {
    v1::GroundState* wire = (*proto)[key].mutable_ground();
    wire->set_pelvis_offset(slot.state.pelvis_offset);
    // Trailing zeros (legs the op does not have) are left out.
    int n = kMaxGroundLegs;
    while (n > 0 && slot.state.foot_offsets[n - 1] == 0.0f) --n;
    for (int i = 0; i < n; ++i) {
      wire->add_foot_offsets(slot.state.foot_offsets[i]);
    }
  }
  for (const auto& [key, slot] : state.looks) {
    Vec3ToProto(slot.state.direction,
                (*proto)[key].mutable_look_at()->mutable_direction());
  }
  for (const auto& [key, slot] : state.plausibility) {
    v1::PlausibilityState* wire = (*proto)[key].mutable_plausibility();
    for (int i = 0; i < slot.state.frames; ++i) {
      v1::PlausibilityFrame* f = wire->add_frames();
      PoseToProto(slot.state.poses[i], f->mutable_pose());
      TransformToProto(slot.state.placements[i], f->mutable_root());
      f->set_dt(slot.state.dts[i]);
    }
  }
  for (const auto& [key, slot] : state.retarget_feet) {
    v1::RetargetFeetState* wire = (*proto)[key].mutable_retarget_feet();
    if (!slot.state.started) continue;
    wire->set_source_floor(slot.state.source_floor);
    for (const RetargetFootState& foot : slot.state.feet) {
      v1::RetargetFootState* f = wire->add_feet();
      Vec3ToProto(foot.previous_source, f->mutable_previous_source());
      f->set_contact(foot.contact);
      f->set_locked(foot.locked);
      Vec3ToProto(foot.lock, f->mutable_lock());
      f->set_release(foot.release);
    }
  }
  for (const auto& [key, slot] : state.crossfades) {
    const CrossfadeState& player = slot.state;
    v1::CrossfadeState* wire = (*proto)[key].mutable_crossfade();
    if (player.current.clip >= 0) {
      wire->set_clip(clips.name(player.current.clip));
      wire->set_time(player.current.time);
    }
    for (const Fade& fade : player.fades) {
      v1::PendingFade* f = wire->add_fades();
      f->set_clip(clips.name(fade.target.clip));
      f->set_time(fade.target.time);
      f->set_duration(fade.duration);
      f->set_elapsed(fade.elapsed);
      f->set_curve(FadeCurveToProto(fade.curve));
    }
  }
}

}  // namespace posewire::server
