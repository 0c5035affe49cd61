#include "server/ops/state_codec.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/ops/pose_source.h"
#include "server/wire/wire_convert.h"

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
