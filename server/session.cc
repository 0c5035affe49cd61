#include "server/session.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/field_name.h"
#include "server/wire_convert.h"

namespace posewire::server {
namespace {

// Sets `*message`'s status field from `status`, leaving it unset when OK
// (an unset Status reads as code 0 in every language): one sub-message less
// per character for the server to write and each client to parse.
template <typename Message>
void SetStatus(const absl::Status& status, Message* message) {
  if (status.ok()) return;
  v1::Status* out = message->mutable_status();
  out->set_code(static_cast<int>(status.code()));
  out->set_message(std::string(status.message()));
}

}  // namespace

void Session::Handle(const v1::SessionRequest& request,
                     v1::SessionResponse* response) {
  ++stats_.messages;
  absl::Status status;
  v1::Registered* registered = nullptr;
  auto reply = [&](absl::string_view kind, const std::string& id) {
    registered = response->mutable_registered();
    registered->set_kind(std::string(kind));
    registered->set_id(id);
  };
  switch (request.message_case()) {
    case v1::SessionRequest::kRegisterSkeleton:
      reply("skeleton", request.register_skeleton().id());
      status = RegisterSkeleton(request.register_skeleton());
      break;
    case v1::SessionRequest::kRegisterClip:
      reply("clip", request.register_clip().id());
      status = RegisterClip(request.register_clip());
      break;
    case v1::SessionRequest::kRegisterRig:
      reply("rig", request.register_rig().id());
      status = RegisterRig(request.register_rig());
      break;
    case v1::SessionRequest::kRegisterCharacter:
      reply("character", request.register_character().id());
      status = RegisterCharacter(request.register_character());
      break;
    case v1::SessionRequest::kFrame:
      HandleFrame(request.frame(), response->mutable_frame());
      return;
    case v1::SessionRequest::MESSAGE_NOT_SET:
      reply("", "");
      status = absl::InvalidArgumentError(
          "empty SessionRequest: set register_skeleton, register_clip, "
          "register_rig, register_character or frame");
      break;
  }
  if (!status.ok()) ++stats_.errors;
  SetStatus(status, registered);
}

template <typename Map>
absl::Status Session::CheckNewId(const Map& map, absl::string_view kind,
                                 const std::string& id) const {
  if (id.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("register_", kind, ".id: an id is required"));
  }
  if (map.contains(id)) {
    return absl::AlreadyExistsError(
        absl::StrCat("register_", kind, ".id: ", kind, " '", id,
                     "' is already registered in this session"));
  }
  if (objects_ >= config_.max_session_objects) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "register_", kind, ": this session already holds ", objects_,
        " registered objects, the server's limit "
        "(GetInfo limits.max_objects_per_session)"));
  }
  return absl::OkStatus();
}

absl::Status Session::RegisterSkeleton(const v1::RegisterSkeleton& message) {
  if (absl::Status s = CheckNewId(skeletons_, "skeleton", message.id());
      !s.ok()) {
    return s;
  }
  auto skeleton =
      SkeletonFromProto(message.skeleton(), config_.max_joints_per_skeleton,
                        "register_skeleton.skeleton");
  if (!skeleton.ok()) return skeleton.status();
  SkeletonEntry entry;
  entry.skeleton = std::make_shared<const Skeleton>(*std::move(skeleton));
  entry.clips = std::make_unique<ClipLibrary>(entry.skeleton.get());
  skeletons_.emplace(message.id(), std::move(entry));
  ++objects_;
  return absl::OkStatus();
}

absl::Status Session::RegisterClip(const v1::RegisterClip& message) {
  auto it = skeletons_.find(message.skeleton_id());
  if (it == skeletons_.end()) {
    return absl::NotFoundError(absl::StrCat(
        "register_clip.skeleton_id: no skeleton '", message.skeleton_id(),
        "' in this session: register it first"));
  }
  if (message.id().empty()) {
    return absl::InvalidArgumentError("register_clip.id: an id is required");
  }
  if (objects_ >= config_.max_session_objects) {
    return absl::ResourceExhaustedError(
        absl::StrCat("register_clip: this session already holds ", objects_,
                     " registered objects, the server's limit"));
  }
  auto clip =
      ClipFromProto(message.clip(), *it->second.skeleton, "register_clip.clip");
  if (!clip.ok()) return clip.status();
  // Clips are named per skeleton; ops name them by the registered id.
  if (absl::Status s = it->second.clips->Add(message.id(), *std::move(clip));
      !s.ok()) {
    return absl::AlreadyExistsError(
        absl::StrCat("register_clip.id: ", s.message(), " for skeleton '",
                     message.skeleton_id(), "'"));
  }
  ++objects_;
  return absl::OkStatus();
}

absl::Status Session::RegisterRig(const v1::RegisterRig& message) {
  if (absl::Status s = CheckNewId(rigs_, "rig", message.id()); !s.ok()) {
    return s;
  }
  if (!skeletons_.contains(message.skeleton_id())) {
    return absl::NotFoundError(absl::StrCat(
        "register_rig.skeleton_id: no skeleton '", message.skeleton_id(),
        "' in this session: register it first"));
  }
  rigs_.emplace(message.id(), Rig{message.skeleton_id(), message.ops()});
  ++objects_;
  return absl::OkStatus();
}

absl::Status Session::RegisterCharacter(const v1::RegisterCharacter& message) {
  if (absl::Status s = CheckNewId(characters_, "character", message.id());
      !s.ok()) {
    return s;
  }
  if (!rigs_.contains(message.rig_id())) {
    return absl::NotFoundError(
        absl::StrCat("register_character.rig_id: no rig '", message.rig_id(),
                     "' in this session: register it first"));
  }
  characters_.emplace(message.id(), Character{message.rig_id(), {}});
  ++objects_;
  return absl::OkStatus();
}

void Session::HandleFrame(const v1::Frame& frame, v1::FrameResult* result) {
  result->set_sequence(frame.sequence());
  absl::Status status;
  if (any_frame_ && frame.sequence() <= last_sequence_) {
    status = absl::InvalidArgumentError(absl::StrCat(
        "frame.sequence: ", frame.sequence(),
        " does not increase (last frame was ", last_sequence_, ")"));
  } else if (!std::isfinite(frame.dt()) || frame.dt() < 0.0f) {
    status = absl::InvalidArgumentError(
        absl::StrCat("frame.dt: ", frame.dt(), " must be finite and >= 0"));
  } else if (frame.characters_size() > config_.max_characters_per_batch) {
    status = absl::ResourceExhaustedError(
        absl::StrCat("frame.characters: ", frame.characters_size(),
                     " characters exceed this server's limit of ",
                     config_.max_characters_per_batch, " per frame"));
  }
  SetStatus(status, result);
  if (!status.ok()) {
    ++stats_.errors;
    return;
  }
  any_frame_ = true;
  last_sequence_ = frame.sequence();
  ++stats_.frames;
  OperationTimings timings;
  OperationTimings* gathered =
      metrics_ != nullptr && metrics_->times_operations() ? &timings : nullptr;
  for (int i = 0; i < frame.characters_size(); ++i) {
    v1::CharacterResult* out = result->add_characters();
    out->set_character_id(frame.characters(i).character_id());
    absl::Status s = SolveCharacter(frame, i, gathered, out);
    if (!s.ok()) {
      ++stats_.errors;
      // A failed character returns no partial pose: the status alone.
      out->clear_pose();
      out->clear_model_pose();
      out->clear_ops();
    } else {
      ++stats_.character_frames;
    }
    SetStatus(s, out);
  }
  if (gathered != nullptr) metrics_->AddTimings(timings);
}

namespace {

// "frame.characters[N]", the prefix of every error about a character,
// written in place: as a std::string it would be one more heap allocation
// per character of every frame.
class CharacterField {
 public:
  explicit CharacterField(int index) {
    constexpr absl::string_view kPrefix = "frame.characters[";
    char* end = std::copy(kPrefix.begin(), kPrefix.end(), text_);
    end = std::to_chars(end, text_ + sizeof(text_) - 1, index).ptr;
    *end++ = ']';
    size_ = static_cast<size_t>(end - text_);
  }
  absl::string_view view() const { return absl::string_view(text_, size_); }

 private:
  char text_[32];  // the prefix, an int's at most 11 characters and ']'
  size_t size_;
};

}  // namespace

absl::Status Session::SolveCharacter(const v1::Frame& frame, int index,
                                     OperationTimings* timings,
                                     v1::CharacterResult* result) {
  const v1::CharacterFrame& in = frame.characters(index);
  const CharacterField character_field(index);
  const absl::string_view field = character_field.view();
  auto character = characters_.find(in.character_id());
  if (character == characters_.end()) {
    return absl::NotFoundError(
        absl::StrCat(field, ".character_id: no character '", in.character_id(),
                     "' in this session: register it first"));
  }
  const Rig& rig = rigs_.at(character->second.rig_id);
  SkeletonEntry& entry = skeletons_.at(rig.skeleton_id);
  const Skeleton& skeleton = *entry.skeleton;

  LocalPose& pose = pose_scratch_;
  if (absl::Status s = NamedOnError(field, ".pose",
                                    [&](absl::string_view name) {
                                      return PoseFromProtoInto(
                                          in.pose(), skeleton, name, pose);
                                    });
      !s.ok()) {
    return s;
  }
  auto root = NamedOnError(field, ".root", [&](absl::string_view name) {
    return TransformFromProto(in.root(), name);
  });
  if (!root.ok()) return root.status();

  CharacterState& persistent = character->second.state;
  if (in.reset_state()) persistent.Clear();
  // Solve on a copy so a failing op leaves the stored state untouched.
  CharacterState state = persistent;
  const auto& ops = in.ops().empty() ? rig.ops : in.ops();
  OpUpdatesByOp updates;
  if (absl::Status s = IndexOpUpdates(ops, in.op_updates(), field, updates);
      !s.ok()) {
    return s;
  }
  PipelineInput pipeline{
      .skeleton = &skeleton,
      .clips = entry.clips.get(),
      .ops = &ops,
      .dt = frame.dt(),
      .root = *root,
      .limits = {.max_solver_iterations = config_.max_solver_iterations},
      .field = field,
      .timings = timings,
      .updates = updates};
  if (absl::Status s =
          RunPipeline(pipeline, pose, state, result->mutable_ops());
      !s.ok()) {
    return s;
  }
  if (in.want_model_pose()) {
    if (absl::Status s = ModelPoseToProto(skeleton, pose, field, model_scratch_,
                                          result->mutable_model_pose());
        !s.ok()) {
      return s;
    }
  }
  persistent = std::move(state);
  PoseToProto(pose, result->mutable_pose());
  return absl::OkStatus();
}

}  // namespace posewire::server
