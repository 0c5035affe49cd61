// Session snapshots and resume: what a snapshot holds, and how a stream
// that starts from one gets its registrations back and goes on.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "server/ops/state_codec.h"
#include "server/service/session.h"
#include "server/service/session_snapshot.h"
#include "server/service/wire_status.h"

namespace posewire::server {
namespace {

// The registration message inside `request` (a register_* case).
const google::protobuf::MessageLite& RegistrationMessage(
    const v1::SessionRequest& request) {
  switch (request.message_case()) {
    case v1::SessionRequest::kRegisterSkeleton:
      return request.register_skeleton();
    case v1::SessionRequest::kRegisterClip:
      return request.register_clip();
    case v1::SessionRequest::kRegisterRig:
      return request.register_rig();
    case v1::SessionRequest::kRegisterHitboxes:
      return request.register_hitboxes();
    case v1::SessionRequest::kRegisterLimits:
      return request.register_limits();
    default:
      return request.register_character();
  }
}

// Clip ids are per skeleton: a clip is named by both.
std::string ClipSkeleton(const v1::SessionRequest& request) {
  return request.has_register_clip() ? request.register_clip().skeleton_id()
                                     : std::string();
}

std::string Describe(const v1::SnapshotRegistration& r) {
  return r.kind() == "clip" ? absl::StrCat("clip '", r.id(), "' of skeleton '",
                                           r.skeleton_id(), "'")
                            : absl::StrCat(r.kind(), " '", r.id(), "'");
}

bool IsHexHash(absl::string_view hash) {
  return hash.size() == 64 && std::all_of(hash.begin(), hash.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// What a sealed snapshot must hold before a session starts from it: a
// well-formed snapshot from any server passes; these checks keep a forged
// one (only a checksum seals it by default) from building a session that
// frames could not run on.
absl::Status CheckContent(const v1::SnapshotContent& content, int max_objects) {
  const int objects = content.registrations_size() + content.characters_size();
  if (objects > max_objects) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "resume.snapshot: ", objects,
        " registered objects exceed this server's limit of ", max_objects,
        " per session (GetInfo limits.max_objects_per_session)"));
  }
  absl::flat_hash_set<std::string> seen;
  absl::flat_hash_set<std::string> rigs;
  for (int i = 0; i < content.registrations_size(); ++i) {
    const v1::SnapshotRegistration& r = content.registrations(i);
    const std::string where =
        absl::StrCat("resume.snapshot.registrations[", i, "]");
    if (r.kind() != "skeleton" && r.kind() != "clip" && r.kind() != "rig" &&
        r.kind() != "hitboxes" && r.kind() != "limits") {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ".kind: '", r.kind(), "' is not a kind of ",
                       "registration a snapshot holds"));
    }
    if (r.id().empty() || !IsHexHash(r.hash())) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": an id and a SHA-256 hash are required"));
    }
    if (!seen.insert(absl::StrCat(r.kind(), "/", r.skeleton_id(), "/", r.id()))
             .second) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": ", Describe(r), " is listed twice"));
    }
    if (r.kind() == "rig") rigs.insert(r.id());
  }
  absl::flat_hash_set<std::string> characters;
  for (int i = 0; i < content.characters_size(); ++i) {
    const v1::SnapshotCharacter& c = content.characters(i);
    const std::string where =
        absl::StrCat("resume.snapshot.characters[", i, "]");
    if (c.id().empty() || !characters.insert(c.id()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ".id: '", c.id(), "' is empty or repeated"));
    }
    if (!rigs.contains(c.rig_id())) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ".rig_id: no rig '", c.rig_id(),
                       "' among the snapshot's registrations"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Session::CheckNotResuming(absl::string_view field) const {
  if (!resume_) return absl::OkStatus();
  const auto next =
      std::find(resume_->received.begin(), resume_->received.end(), false);
  return absl::FailedPreconditionError(
      absl::StrCat(field, ": this session is resuming and still waits for ",
                   resume_->remaining, " registrations (next: ",
                   Describe(registrations_[next - resume_->received.begin()]),
                   "); resend those listed in ResumeResult.missing first"));
}

void Session::HandleSnapshotRequest(const v1::SnapshotRequest& request,
                                    v1::SessionSnapshot* snapshot) {
  if (absl::Status s = CheckNotResuming("snapshot"); !s.ok()) {
    ++stats_.errors;
    SetStatus(s, snapshot);
    return;
  }
  snapshot_every_ = request.every_frames();
  frames_since_snapshot_ = 0;
  snapshot_due_ = false;
  WriteSnapshot(snapshot);
}

bool Session::TakeDueSnapshot(v1::SessionResponse* response) {
  if (!snapshot_due_) return false;
  snapshot_due_ = false;
  WriteSnapshot(response->mutable_snapshot());
  return true;
}

void Session::WriteHandover(v1::SessionResponse* response) {
  v1::SessionSnapshot* snapshot = response->mutable_snapshot();
  if (absl::Status s = CheckNotResuming("snapshot"); !s.ok()) {
    SetStatus(s, snapshot);
  } else {
    WriteSnapshot(snapshot);
  }
  snapshot->set_handover(true);
}

void Session::WriteSnapshot(v1::SessionSnapshot* snapshot) {
  v1::SnapshotContent content;
  content.set_after_sequence(last_sequence_);
  content.set_any_frame(any_frame_);
  if (any_timed_frame_) content.set_last_time(last_time_);
  content.mutable_registrations()->Assign(registrations_.begin(),
                                          registrations_.end());
  // By id, so that equal sessions give equal bytes.
  std::vector<const std::pair<const std::string, Character>*> characters;
  characters.reserve(characters_.size());
  for (const auto& entry : characters_) characters.push_back(&entry);
  std::sort(characters.begin(), characters.end(),
            [](const auto* a, const auto* b) { return a->first < b->first; });
  for (const auto* entry : characters) {
    v1::SnapshotCharacter* out = content.add_characters();
    out->set_id(entry->first);
    out->set_rig_id(entry->second.rig_id);
    StateToProto(entry->second.state, *entry->second.rig->clips,
                 out->mutable_state());
    entry->second.history.ToProto(out->mutable_history());
  }
  std::string data = SealSnapshot(content, {.key = config_.snapshot_key});
  const int64_t limit = config_.EffectiveSnapshotBytes();
  // Histories are what grows fastest (a model pose per kept frame per
  // character): over the limit, the snapshot goes without them rather
  // than not at all, and says so.
  bool histories_omitted = false;
  if (static_cast<int64_t>(data.size()) > limit) {
    for (v1::SnapshotCharacter& c : *content.mutable_characters()) {
      histories_omitted = histories_omitted || !c.history().empty();
      c.clear_history();
    }
    if (histories_omitted) {
      data = SealSnapshot(content, {.key = config_.snapshot_key});
    }
  }
  if (static_cast<int64_t>(data.size()) > limit) {
    ++stats_.errors;
    SetStatus(absl::ResourceExhaustedError(absl::StrCat(
                  "snapshot: this session's snapshot would take ", data.size(),
                  " bytes, over this server's limit of ", limit,
                  " (GetInfo limits.max_snapshot_bytes); spread the "
                  "characters over more sessions")),
              snapshot);
    return;
  }
  snapshot->set_data(std::move(data));
  snapshot->set_after_sequence(content.after_sequence());
  snapshot->set_any_frame(content.any_frame());
  snapshot->set_version(kSnapshotVersion);
  snapshot->set_histories_omitted(histories_omitted);
  *snapshot->mutable_registrations() =
      std::move(*content.mutable_registrations());
}

void Session::HandleResume(const v1::ResumeSession& resume,
                           v1::ResumeResult* result) {
  if (absl::Status s = StartResume(resume, result); !s.ok()) {
    ++stats_.errors;
    result->Clear();
    SetStatus(s, result);
  }
}

absl::Status Session::StartResume(const v1::ResumeSession& resume,
                                  v1::ResumeResult* result) {
  if (objects_ > 0 || any_frame_ || any_timed_frame_ || resume_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "resume: must come before any registration or frame of a stream "
        "(this one holds ",
        objects_, " registered objects",
        any_frame_ ? " and has solved frames" : "",
        resume_ ? " and is already resuming" : "",
        "); open a new stream to resume"));
  }
  absl::StatusOr<v1::SnapshotContent> content =
      OpenSnapshot(resume.snapshot(), {.key = config_.snapshot_key},
                   config_.EffectiveSnapshotBytes(), "resume.snapshot");
  if (!content.ok()) return content.status();
  if (absl::Status s = CheckContent(*content, config_.max_session_objects);
      !s.ok()) {
    return s;
  }
  registrations_.assign(content->registrations().begin(),
                        content->registrations().end());
  *result->mutable_missing() = content->registrations();
  result->set_after_sequence(content->after_sequence());
  result->set_any_frame(content->any_frame());
  const int count = content->registrations_size();
  resume_ = PendingResume{.content = *std::move(content),
                          .received = std::vector<bool>(count, false),
                          .remaining = count};
  if (count == 0) return FinishResume();
  return absl::OkStatus();
}

absl::StatusOr<int> Session::CheckResent(const v1::SessionRequest& request,
                                         absl::string_view kind,
                                         const std::string& id) const {
  const std::string skeleton_id = ClipSkeleton(request);
  for (size_t i = 0; i < registrations_.size(); ++i) {
    const v1::SnapshotRegistration& r = registrations_[i];
    if (r.kind() != kind || r.id() != id || r.skeleton_id() != skeleton_id ||
        resume_->received[i]) {
      continue;
    }
    const std::string hash = RegistrationHash(RegistrationMessage(request));
    if (hash != r.hash()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "register_", kind, ": ", Describe(r),
          " is not the one the snapshot was taken with (content hash ", hash,
          ", the snapshot's ", r.hash(),
          "): resend exactly that registration; another skeleton, clip, op "
          "list or hitbox set cannot carry on its state"));
    }
    return static_cast<int>(i);
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "register_", kind, ".id: ", kind, " '", id,
      "' is not one this resuming session waits for (or was resent "
      "already); resend only those listed in ResumeResult.missing"));
}

absl::Status Session::NoteRegistration(const v1::SessionRequest& request,
                                       absl::string_view kind,
                                       const std::string& id,
                                       int resent_index) {
  if (resent_index >= 0) {
    resume_->received[resent_index] = true;
    if (--resume_->remaining == 0) return FinishResume();
    return absl::OkStatus();
  }
  if (kind == "character") return absl::OkStatus();  // in the snapshot whole
  v1::SnapshotRegistration& r = registrations_.emplace_back();
  r.set_kind(std::string(kind));
  r.set_id(id);
  r.set_skeleton_id(ClipSkeleton(request));
  r.set_hash(RegistrationHash(RegistrationMessage(request)));
  return absl::OkStatus();
}

absl::Status Session::FinishResume() {
  const PendingResume pending = *std::move(resume_);
  resume_.reset();
  const v1::SnapshotContent& content = pending.content;
  for (int i = 0; i < content.characters_size(); ++i) {
    const v1::SnapshotCharacter& c = content.characters(i);
    const std::string field =
        absl::StrCat("resume.snapshot.characters[", i, "]");
    auto rig = rigs_.find(c.rig_id());
    if (rig == rigs_.end()) {
      Clear();
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".rig_id: no rig '", c.rig_id(), "' was registered"));
    }
    CharacterState state;
    if (absl::Status s = StateFromProto(c.state(), *rig->second->clips, state,
                                        absl::StrCat(field, ".state"));
        !s.ok()) {
      Clear();
      return absl::InvalidArgumentError(
          absl::StrCat(s.message(), "; the stream is empty again, as new"));
    }
    PoseHistory history(config_.history_frames);
    if (absl::Status s =
            history.FromProto(c.history(), rig->second->skeleton->num_joints(),
                              absl::StrCat(field, ".history"));
        !s.ok()) {
      Clear();
      return absl::InvalidArgumentError(
          absl::StrCat(s.message(), "; the stream is empty again, as new"));
    }
    v1::SessionRequest registration;
    registration.mutable_register_character()->set_id(c.id());
    registration.mutable_register_character()->set_rig_id(c.rig_id());
    bytes_ += static_cast<int64_t>(registration.ByteSizeLong());
    characters_.emplace(c.id(), Character{.rig_id = c.rig_id(),
                                          .rig = rig->second,
                                          .state = std::move(state),
                                          .history = std::move(history)});
    ++objects_;
  }
  any_frame_ = content.any_frame();
  last_sequence_ = content.after_sequence();
  any_timed_frame_ = content.has_last_time();
  last_time_ = content.has_last_time() ? content.last_time() : 0.0;
  return absl::OkStatus();
}

void Session::Clear() {
  characters_.clear();
  hitbox_sets_.clear();
  limit_sets_.clear();
  rigs_.clear();
  skeletons_.clear();
  registrations_.clear();
  resume_.reset();
  objects_ = 0;
  bytes_ = 0;
  any_frame_ = false;
  last_sequence_ = 0;
  any_timed_frame_ = false;
  last_time_ = 0.0;
}

}  // namespace posewire::server
