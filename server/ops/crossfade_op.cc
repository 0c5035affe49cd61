// crossfade: a clip player with a queue of fades, driven by commands; its
// progress is state kept per state_key.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/ops/op_table.h"
#include "server/ops/pose_source.h"
#include "server/wire/wire_convert.h"
#include "solver_core/pose_ops/crossfade.h"

namespace posewire::server {
namespace {

constexpr char kDefaultCrossfadeKey[] = "crossfade";

struct Command {
  v1::CrossfadeCommand::CommandCase kind;
  std::string clip;  // kPlay, kFadeTo
  float fade_seconds = 0.0f;
  FadeCurve curve = FadeCurve::kLinear;
  bool cancel = false;
};

class Crossfade final : public PreparedOp {
 public:
  Crossfade(std::string key, PlaybackMode mode, std::vector<Command> commands)
      : key_(std::move(key)), mode_(mode), commands_(std::move(commands)) {}

  absl::Status Run(OpFrame& frame) const override {
    // Not a structured binding: clang before 16 cannot capture one.
    const auto emplaced = frame.state.crossfades.try_emplace(key_);
    const auto slot = emplaced.first;
    const bool created = emplaced.second;
    // Solved into the slot's spare buffer, swapped in on success.
    CrossfadeState& player = slot->second.next;
    player = slot->second.state;
    auto fail = [&](absl::Status status) {
      if (created) frame.state.crossfades.erase(slot);
      return status;
    };
    for (size_t i = 0; i < commands_.size(); ++i) {
      const Command& command = commands_[i];
      auto where = [&](absl::string_view leaf) {
        return absl::StrCat(frame.field.str(), ".commands[", i, "]", leaf);
      };
      switch (command.kind) {
        case v1::CrossfadeCommand::kPlay: {
          auto clip = frame.clips.Find(command.clip, where(".play"));
          if (!clip.ok()) return fail(clip.status());
          player = Play(*clip, 0.0f, mode_);
          break;
        }
        case v1::CrossfadeCommand::kFadeTo: {
          auto clip = frame.clips.Find(command.clip, where(".fade_to.clip"));
          if (!clip.ok()) return fail(clip.status());
          FadeRequest request;
          request.clip = *clip;
          request.duration = command.fade_seconds;
          request.curve = command.curve;
          request.mode = mode_;
          auto next = FadeTo(std::move(player), request);
          if (!next.ok()) {
            return fail(PrefixField(where(".fade_to"), next.status()));
          }
          player = *std::move(next);
          break;
        }
        case v1::CrossfadeCommand::kCancel:
          if (command.cancel) player = Cancel(std::move(player));
          break;
        case v1::CrossfadeCommand::COMMAND_NOT_SET:
          break;  // refused when compiled
      }
    }
    CrossfadeJob job;
    job.skeleton = &frame.skeleton;
    job.clips = frame.clips.clips();
    job.clips_validated = true;
    job.state = &player;
    job.next_state = &player;
    job.dt = frame.dt;
    job.output = absl::MakeSpan(frame.pose);
    if (absl::Status s = job.Run(); !s.ok()) {
      return fail(frame.field.Prefix(s));
    }
    std::swap(slot->second.state, slot->second.next);
    if (frame.undo != nullptr) {
      frame.undo->Swapped(frame.state.crossfades, key_, created);
    }
    return absl::OkStatus();
  }

 private:
  std::string key_;
  PlaybackMode mode_;
  std::vector<Command> commands_;
};

CompiledOp Compile(const OpCompileInput& input) {
  const v1::CrossfadeOp& op = input.op.crossfade();
  if (!v1::PlaybackMode_IsValid(op.mode())) {
    return UnknownEnum(absl::StrCat(input.field, ".mode"), op.mode());
  }
  std::vector<Command> commands(op.commands_size());
  for (int i = 0; i < op.commands_size(); ++i) {
    const v1::CrossfadeCommand& wire = op.commands(i);
    Command& command = commands[i];
    command.kind = wire.command_case();
    switch (wire.command_case()) {
      case v1::CrossfadeCommand::kPlay:
        command.clip = wire.play();
        break;
      case v1::CrossfadeCommand::kFadeTo:
        if (!v1::FadeCurve_IsValid(wire.fade_to().curve())) {
          return UnknownEnum(
              absl::StrCat(input.field, ".commands[", i, "].fade_to.curve"),
              wire.fade_to().curve());
        }
        command.clip = wire.fade_to().clip();
        command.fade_seconds = wire.fade_to().fade_seconds();
        command.curve = FadeCurveFromProto(wire.fade_to().curve());
        break;
      case v1::CrossfadeCommand::kCancel:
        command.cancel = wire.cancel();
        break;
      case v1::CrossfadeCommand::COMMAND_NOT_SET:
        return absl::InvalidArgumentError(
            absl::StrCat(input.field, ".commands[", i,
                         "]: no command set (play, fade_to or cancel)"));
    }
  }
  return std::make_unique<Crossfade>(
      op.state_key().empty() ? kDefaultCrossfadeKey : op.state_key(),
      PlaybackModeFromProto(op.mode()), std::move(commands));
}

}  // namespace

OpSpec CrossfadeOpSpec() {
  return {.op_case = v1::Operation::kCrossfade,
          .updatable = 0,
          .compile = Compile,
          .ranges = {}};
}

}  // namespace posewire::server
