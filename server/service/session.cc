#include "server/service/session.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/ops/ik_wire.h"
#include "server/ops/plan.h"
#include "server/service/learn_limits.h"
#include "server/service/wire_status.h"
#include "server/wire/field_name.h"
#include "server/wire/hitbox_convert.h"
#include "server/wire/wire_convert.h"
#include "solver_core/model/local_to_model.h"

namespace posewire::server {
namespace {

// The kind and id a Registered answer echoes; an empty kind for a frame.
std::pair<absl::string_view, const std::string*> Registration(
    const v1::SessionRequest& request) {
  switch (request.message_case()) {
    case v1::SessionRequest::kRegisterSkeleton:
      return {"skeleton", &request.register_skeleton().id()};
    case v1::SessionRequest::kRegisterClip:
      return {"clip", &request.register_clip().id()};
    case v1::SessionRequest::kRegisterRig:
      return {"rig", &request.register_rig().id()};
    case v1::SessionRequest::kRegisterCharacter:
      return {"character", &request.register_character().id()};
    case v1::SessionRequest::kRegisterHitboxes:
      return {"hitboxes", &request.register_hitboxes().id()};
    case v1::SessionRequest::kRegisterLimits:
      return {"limits", &request.register_limits().id()};
    default:
      return {"", nullptr};
  }
}

}  // namespace

void Session::Handle(const v1::SessionRequest& request,
                     v1::SessionResponse* response) {
  if (request.has_frame()) {
    ++stats_.messages;
    if (absl::Status s = CheckNotResuming("frame"); !s.ok()) {
      ++stats_.errors;
      response->mutable_frame()->set_sequence(request.frame().sequence());
      SetStatus(s, response->mutable_frame());
      return;
    }
    HandleFrame(request.frame(), response->mutable_frame());
    return;
  }
  if (request.has_query()) {
    ++stats_.messages;
    if (absl::Status s = CheckNotResuming("query"); !s.ok()) {
      ++stats_.errors;
      SetStatus(s, response->mutable_query());
      return;
    }
    HandleQuery(request.query(), response->mutable_query());
    return;
  }
  if (request.has_snapshot()) {
    ++stats_.messages;
    HandleSnapshotRequest(request.snapshot(), response->mutable_snapshot());
    return;
  }
  if (request.has_resume()) {
    ++stats_.messages;
    HandleResume(request.resume(), response->mutable_resume());
    return;
  }
  // Not a structured binding: clang 14 cannot capture one in a lambda.
  const std::pair<absl::string_view, const std::string*> registration =
      Registration(request);
  const absl::string_view kind = registration.first;
  const std::string* id = registration.second;
  if (id == nullptr) {
    Register(request, response);
    return;
  }
  auto refuse = [&](const absl::Status& status) {
    ++stats_.messages;
    ++stats_.errors;
    v1::Registered* registered = response->mutable_registered();
    registered->set_kind(std::string(kind));
    registered->set_id(*id);
    SetStatus(status, registered);
  };
  int resent_index = -1;
  if (resume_) {
    absl::StatusOr<int> index = CheckResent(request, kind, *id);
    if (!index.ok()) {
      refuse(index.status());
      return;
    }
    resent_index = *index;
  }
  const int64_t size = static_cast<int64_t>(request.ByteSizeLong());
  if (bytes_ + size > config_.max_session_bytes) {
    refuse(absl::ResourceExhaustedError(absl::StrCat(
        "register_", kind, ": ", size, " bytes would take this session to ",
        bytes_ + size, " bytes of registrations, over the server's limit of ",
        config_.max_session_bytes,
        " (--max_session_bytes); register less or open another session")));
    return;
  }
  Register(request, response);
  if (response->registered().status().code() != 0) return;
  bytes_ += size;
  if (absl::Status s = NoteRegistration(request, kind, *id, resent_index);
      !s.ok()) {
    ++stats_.errors;
    SetStatus(s, response->mutable_registered());
  }
}

void Session::Register(const v1::SessionRequest& request,
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
    case v1::SessionRequest::kRegisterHitboxes:
      reply("hitboxes", request.register_hitboxes().id());
      status = RegisterHitboxes(request.register_hitboxes());
      break;
    case v1::SessionRequest::kRegisterLimits:
      reply("limits", request.register_limits().id());
      status = RegisterLimits(request.register_limits(),
                              registered->mutable_learned());
      if (!status.ok()) registered->clear_learned();
      break;
    case v1::SessionRequest::kFrame:
    case v1::SessionRequest::kQuery:
    case v1::SessionRequest::kSnapshot:
    case v1::SessionRequest::kResume:
      break;  // Handle's
    case v1::SessionRequest::MESSAGE_NOT_SET:
      reply("", "");
      status = absl::InvalidArgumentError(
          "empty SessionRequest: set register_skeleton, register_clip, "
          "register_rig, register_character, register_hitboxes, "
          "register_limits, frame, query, snapshot or resume");
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
  if (shared_ != nullptr) {
    // One copy among the sessions that registered an equal skeleton. Within
    // a session each registration stays its own object: ops tell a
    // session's skeletons apart by identity (a limit set is for the
    // skeleton it was registered for).
    entry.hash = SkeletonHash(*entry.skeleton);
    std::shared_ptr<const Skeleton> common =
        shared_->skeletons.Insert(entry.hash, entry.skeleton);
    const bool mine = std::any_of(
        skeletons_.begin(), skeletons_.end(),
        [&](const auto& held) { return held.second.skeleton == common; });
    if (!mine) entry.skeleton = std::move(common);
  }
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
  // Clips are named per skeleton; ops name them by the registered id. The
  // keys are shared with other sessions that registered the same clip.
  std::shared_ptr<const Clip> shared =
      shared_ != nullptr ? shared_->clips.Share(*std::move(clip))
                         : std::make_shared<const Clip>(*std::move(clip));
  if (absl::Status s = it->second.clips->Add(message.id(), std::move(shared));
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
  auto entry = skeletons_.find(message.skeleton_id());
  if (entry == skeletons_.end()) {
    return absl::NotFoundError(absl::StrCat(
        "register_rig.skeleton_id: no skeleton '", message.skeleton_id(),
        "' in this session: register it first"));
  }
  // Compiled now, so a rig that cannot run is refused here, once, instead
  // of failing every frame; clips are looked up when frames run, since a
  // rig may name a clip registered after it.
  const OpLimits limits{.max_solver_iterations = config_.max_solver_iterations};
  // Shared with the sessions that registered the same ops for an equal
  // skeleton, unless the ops name this session's registrations.
  auto plan = shared_ != nullptr
                  ? shared_->skeletons.plans().GetUnlessRegistryUsed(
                        entry->second.skeleton, entry->second.hash,
                        message.ops(), limits, "register_rig", lookup_)
                  : Plan::Compile(*entry->second.skeleton, message.ops(),
                                  limits, "register_rig", &lookup_);
  if (!plan.ok()) return plan.status();
  rigs_.emplace(message.id(),
                std::make_shared<const Rig>(Rig{entry->second.skeleton,
                                                entry->second.clips.get(),
                                                *std::move(plan)}));
  ++objects_;
  return absl::OkStatus();
}

absl::Status Session::RegisterCharacter(const v1::RegisterCharacter& message) {
  if (absl::Status s = CheckNewId(characters_, "character", message.id());
      !s.ok()) {
    return s;
  }
  auto rig = rigs_.find(message.rig_id());
  if (rig == rigs_.end()) {
    return absl::NotFoundError(
        absl::StrCat("register_character.rig_id: no rig '", message.rig_id(),
                     "' in this session: register it first"));
  }
  characters_.emplace(
      message.id(), Character{.rig_id = message.rig_id(),
                              .rig = rig->second,
                              .state = {},
                              .history = PoseHistory(config_.history_frames)});
  ++objects_;
  return absl::OkStatus();
}

absl::Status Session::RegisterLimits(const v1::RegisterLimits& message,
                                     v1::LearnLimitsResponse* learned) {
  if (absl::Status s = CheckNewId(limit_sets_, "limits", message.id());
      !s.ok()) {
    return s;
  }
  auto entry = skeletons_.find(message.skeleton_id());
  if (entry == skeletons_.end()) {
    return absl::NotFoundError(absl::StrCat(
        "register_limits.skeleton_id: no skeleton '", message.skeleton_id(),
        "' in this session: register it first"));
  }
  const bool learn = !message.learn_from_clips().empty();
  if (learn == !message.limits().empty()) {
    return absl::InvalidArgumentError(
        "register_limits: set exactly one of limits (the limits themselves) "
        "and learn_from_clips (ids of this session's clips to learn them "
        "from)");
  }
  if (!learn && message.has_learn_options()) {
    return absl::InvalidArgumentError(
        "register_limits.learn_options: only with learn_from_clips");
  }
  const Skeleton& skeleton = *entry->second.skeleton;
  RegisteredLimits set{.skeleton = entry->second.skeleton,
                       .skeleton_id = message.skeleton_id(),
                       .limits = {}};
  if (learn) {
    ClipLibrary& library = *entry->second.clips;
    std::vector<Clip> clips;
    clips.reserve(message.learn_from_clips_size());
    for (int i = 0; i < message.learn_from_clips_size(); ++i) {
      auto index = library.Find(
          message.learn_from_clips(i),
          absl::StrCat("register_limits.learn_from_clips[", i, "]"));
      if (!index.ok()) {
        return absl::Status(
            index.status().code(),
            absl::StrCat(index.status().message(), " registered for skeleton '",
                         message.skeleton_id(), "'"));
      }
      clips.push_back(library.clip(*index));
    }
    if (absl::Status s =
            LearnLimitsFromClips(skeleton, clips, message.learn_options(),
                                 "register_limits.learn_options", learned);
        !s.ok()) {
      return s;
    }
    learned->set_skeleton_hash(SkeletonHash(skeleton));
    set.limits = learned->limits();
  } else {
    // Checked now, so a rig naming the set compiles it without surprises.
    if (auto limits = LimitsFromProto(skeleton, message.limits(),
                                      "register_limits.limits");
        !limits.ok()) {
      return limits.status();
    }
    set.limits = message.limits();
  }
  limit_sets_.emplace(message.id(), std::move(set));
  ++objects_;
  return absl::OkStatus();
}

absl::Status Session::RegisterHitboxes(const v1::RegisterHitboxes& message) {
  if (absl::Status s = CheckNewId(hitbox_sets_, "hitboxes", message.id());
      !s.ok()) {
    return s;
  }
  auto entry = skeletons_.find(message.skeleton_id());
  if (entry == skeletons_.end()) {
    return absl::NotFoundError(absl::StrCat(
        "register_hitboxes.skeleton_id: no skeleton '", message.skeleton_id(),
        "' in this session: register it first"));
  }
  auto hitboxes = HitboxesFromProto(message.hitboxes(), *entry->second.skeleton,
                                    "register_hitboxes.hitboxes");
  if (!hitboxes.ok()) return hitboxes.status();
  hitbox_sets_.emplace(message.id(),
                       HitboxSet{.skeleton = entry->second.skeleton,
                                 .skeleton_id = message.skeleton_id(),
                                 .hitboxes = *std::move(hitboxes)});
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
  } else if (frame.has_time() && !std::isfinite(frame.time())) {
    status = absl::InvalidArgumentError(
        absl::StrCat("frame.time: ", frame.time(), " must be finite"));
  } else if (frame.has_time() && any_timed_frame_ &&
             frame.time() < last_time_) {
    status = absl::InvalidArgumentError(absl::StrCat(
        "frame.time: ", frame.time(), " is before the last frame's time ",
        last_time_, "; frame times must not go backwards"));
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
  if (frame.has_time()) {
    any_timed_frame_ = true;
    last_time_ = frame.time();
  }
  ++stats_.frames;
  if (snapshot_every_ > 0 && ++frames_since_snapshot_ >= snapshot_every_) {
    frames_since_snapshot_ = 0;
    snapshot_due_ = true;
  }
  // Gathered only for a metrics endpoint (a 1.7 KB table to clear).
  std::optional<OperationTimings> timings;
  if (metrics_ != nullptr && metrics_->times_operations()) timings.emplace();
  OperationTimings* gathered = timings ? &*timings : nullptr;
  for (int i = 0; i < frame.characters_size(); ++i) {
    v1::CharacterResult* out = result->add_characters();
    out->set_character_id(frame.characters(i).character_id());
    absl::Status s = SolveFrameCharacter(frame, i, gathered, out);
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
  if (gathered != nullptr) metrics_->AddTimings(*timings);
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

absl::Status Session::SolveFrameCharacter(const v1::Frame& frame, int index,
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
  const Rig& rig = *character->second.rig;
  // Ops sent with the frame replace the rig's for this frame only.
  const Plan* plan = rig.plan.get();
  std::shared_ptr<const Plan> frame_plan;
  if (!in.ops().empty()) {
    auto compiled =
        Plan::Compile(*rig.skeleton, in.ops(),
                      {.max_solver_iterations = config_.max_solver_iterations},
                      field, &lookup_);
    if (!compiled.ok()) return compiled.status();
    frame_plan = *std::move(compiled);
    plan = frame_plan.get();
  }
  OpUpdatesByOp updates;
  if (absl::Status s = IndexOpUpdates(*plan, in.op_updates(), field, updates);
      !s.ok()) {
    return s;
  }
  // A failing character keeps the state it had (and a reset it asked for
  // does not happen): what the frame changes is logged and rolled back.
  CharacterState& state = character->second.state;
  CharacterState before_reset;
  if (in.reset_state()) {
    std::swap(before_reset, state);  // `state` starts empty
  }
  undo_.Clear();
  const CharacterInputs inputs{.skeleton = rig.skeleton.get(),
                               .clips = rig.clips,
                               .plan = plan,
                               .pose = &in.pose(),
                               .root = &in.root(),
                               .dt = frame.dt(),
                               .want_model_pose = in.want_model_pose(),
                               .updates = updates,
                               .field = field,
                               .timings = timings,
                               .undo = &undo_};
  if (absl::Status s = SolveCharacter(
          inputs, state, scratch_,
          {.pose = result->mutable_pose(),
           .model_pose =
               in.want_model_pose() ? result->mutable_model_pose() : nullptr,
           .ops = result->mutable_ops()});
      !s.ok()) {
    undo_.Rollback();
    if (in.reset_state()) std::swap(before_reset, state);
    return s;
  }
  if (frame.has_time()) {
    Record(character->second, frame.time(), in.want_model_pose());
  }
  return absl::OkStatus();
}

void Session::Record(Character& character, double time, bool model_ready) {
  const Skeleton& skeleton = *character.rig->skeleton;
  const absl::Span<Transform> slot =
      character.history.Next(skeleton.num_joints());
  if (slot.empty()) return;  // no history kept
  if (model_ready) {
    // The answer's model pose, computed and screened for this frame.
    std::copy(scratch_.model.begin(), scratch_.model.end(), slot.begin());
  } else {
    // The solved pose passed RunPlan's screens and has the skeleton's size.
    LocalToModelJob{
        .skeleton = &skeleton, .input = scratch_.pose, .output = slot}
        .RunUnchecked();
    // A pose whose model transforms overflow float is not kept: no query
    // could place a hitbox on it (the frame itself was answered).
    if (FirstNonFiniteJoint(slot) >= 0) return;
  }
  character.history.Commit(time, scratch_.root);
}

void Session::HandleQuery(const v1::HitQuery& query, v1::QueryResult* result) {
  if (absl::Status s = AnswerQuery(query, result); !s.ok()) {
    ++stats_.errors;
    result->Clear();
    SetStatus(s, result);
  }
}

absl::Status Session::AnswerQuery(const v1::HitQuery& query,
                                  v1::QueryResult* result) {
  if (absl::Status s = CheckHitQuery(query, config_.max_queries_per_request,
                                     config_.max_characters_per_batch);
      !s.ok()) {
    return s;
  }
  if (query_targets_.size() < static_cast<size_t>(query.targets_size())) {
    query_targets_.resize(query.targets_size());
  }
  for (int i = 0; i < query.targets_size(); ++i) {
    const v1::HitTarget& in = query.targets(i);
    auto character = characters_.find(in.character_id());
    if (character == characters_.end()) {
      return absl::NotFoundError(
          absl::StrCat("query.targets[", i, "].character_id: no character '",
                       in.character_id(), "' in this session"));
    }
    auto set = hitbox_sets_.find(in.hitbox_set());
    if (set == hitbox_sets_.end()) {
      return absl::NotFoundError(absl::StrCat(
          "query.targets[", i, "].hitbox_set: no hitbox set '", in.hitbox_set(),
          "' in this session: register_hitboxes first"));
    }
    const Rig& rig = *character->second.rig;
    if (set->second.skeleton != rig.skeleton) {
      return absl::InvalidArgumentError(absl::StrCat(
          "query.targets[", i, "].hitbox_set: hitbox set '", in.hitbox_set(),
          "' is for skeleton '", set->second.skeleton_id,
          "', not the skeleton of character '", in.character_id(), "'"));
    }
    HitTargetPose& target = query_targets_[i];
    target.character_id = &character->first;
    target.skeleton = rig.skeleton.get();
    target.hitboxes = set->second.hitboxes;
    const PoseHistory& history = character->second.history;
    const absl::string_view field =
        query.has_time() ? "query.time" : "query.targets";
    absl::Status s =
        query.has_time()
            ? history.Rewind(query.time(), config_.history_window_seconds,
                             field, target.model, target.root)
            : history.Newest(field, target.model, target.root);
    if (!s.ok()) {
      return absl::Status(
          s.code(), absl::StrCat(s.message(), " (query.targets[", i,
                                 "], character '", in.character_id(), "')"));
    }
  }
  return AnswerHitQuery(
      query, absl::MakeSpan(query_targets_).first(query.targets_size()),
      result);
}

}  // namespace posewire::server
