#include "server/ops/clip_library.h"

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "server/wire/wire_convert.h"

namespace posewire::server {

absl::Status CheckClipNamesUnique(
    const google::protobuf::RepeatedPtrField<v1::Clip>& clips) {
  absl::flat_hash_set<absl::string_view> names;
  for (int i = 0; i < clips.size(); ++i) {
    if (!names.insert(clips[i].name()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("clips[", i, "].name: '", clips[i].name(),
                       "' is used by an earlier clip"));
    }
  }
  return absl::OkStatus();
}

ClipLibrary::ClipLibrary(
    const Skeleton* skeleton,
    const google::protobuf::RepeatedPtrField<v1::Clip>* wire_clips)
    : skeleton_(skeleton), wire_clips_(wire_clips) {
  const int n = wire_clips->size();
  owned_.resize(n);
  clips_.assign(n, nullptr);
  names_.resize(n);
  for (int i = 0; i < n; ++i) {
    names_[i] = (*wire_clips)[i].name();
    // The first clip of a name wins; duplicates are rejected when the
    // request is validated.
    index_.emplace(names_[i], i);
  }
}

ClipLibrary::ClipLibrary(const Skeleton* skeleton) : skeleton_(skeleton) {}

absl::Status ClipLibrary::Add(std::string name,
                              std::shared_ptr<const Clip> clip) {
  if (index_.contains(name)) {
    return absl::AlreadyExistsError(
        absl::StrCat("clip '", name, "' is already registered"));
  }
  index_.emplace(name, static_cast<int>(clips_.size()));
  names_.push_back(std::move(name));
  clips_.push_back(clip.get());
  owned_.push_back(std::move(clip));
  return absl::OkStatus();
}

absl::Status ClipLibrary::Add(std::string name, Clip clip) {
  return Add(std::move(name), std::make_shared<const Clip>(std::move(clip)));
}

absl::StatusOr<int> ClipLibrary::Find(absl::string_view name,
                                      absl::string_view field) {
  auto it = index_.find(name);
  if (it == index_.end()) {
    return absl::NotFoundError(
        absl::StrCat(field, ": no clip named '", name, "'"));
  }
  const int index = it->second;
  if (clips_[index] == nullptr) {
    auto clip = ClipFromProto((*wire_clips_)[index], *skeleton_,
                              absl::StrCat("clips[", index, "]"));
    if (!clip.ok()) return clip.status();
    owned_[index] = std::make_shared<const Clip>(*std::move(clip));
    clips_[index] = owned_[index].get();
  }
  return index;
}

}  // namespace posewire::server
