// The clips a character's operations may name, for one skeleton.
//
// A Solve request carries clips without saying which skeleton they animate,
// so they are converted (and validated) against a skeleton the first time an
// operation of a character with that skeleton names them. A session
// registers clips for a skeleton up front. Both end up here: an array of
// clips (CrossfadeJob indexes into it) plus a name index. Clips are held by
// shared pointer, so that sessions registering the same clip can share one
// copy of its keys (ClipCache).
#ifndef POSEWIRE_SERVER_OPS_CLIP_LIBRARY_H_
#define POSEWIRE_SERVER_OPS_CLIP_LIBRARY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "posewire/v1/types.pb.h"
#include "solver_core/model/clip.h"
#include "solver_core/model/skeleton.h"

namespace posewire::server {

// A request's clips are found by name: OK when no two share one, else
// INVALID_ARGUMENT naming the later clip's "clips[i].name".
absl::Status CheckClipNamesUnique(
    const google::protobuf::RepeatedPtrField<v1::Clip>& clips);

class ClipLibrary {
 public:
  // A library that converts `wire_clips` (borrowed; must outlive it) for
  // `skeleton` on demand.
  ClipLibrary(const Skeleton* skeleton,
              const google::protobuf::RepeatedPtrField<v1::Clip>* wire_clips);
  // An empty library filled with Add.
  explicit ClipLibrary(const Skeleton* skeleton);

  // Adds an already validated clip under `name`. ALREADY_EXISTS if taken.
  absl::Status Add(std::string name, std::shared_ptr<const Clip> clip);
  absl::Status Add(std::string name, Clip clip);

  // The index of the clip called `name`, converting it first if needed.
  // NOT_FOUND naming `field` when there is none; INVALID_ARGUMENT when it
  // does not fit the skeleton.
  absl::StatusOr<int> Find(absl::string_view name, absl::string_view field);

  // Every clip; only indices returned by Find or Add are valid (the others
  // are null until Find converts them).
  absl::Span<const Clip* const> clips() const { return clips_; }
  // The clip at an index Find or Add returned.
  const Clip& clip(int index) const { return *clips_[index]; }
  const std::string& name(int index) const { return names_[index]; }
  int size() const { return static_cast<int>(clips_.size()); }

 private:
  const Skeleton* skeleton_;
  const google::protobuf::RepeatedPtrField<v1::Clip>* wire_clips_ = nullptr;
  std::vector<std::shared_ptr<const Clip>> owned_;
  // owned_'s pointers, for clips(); null until converted.
  std::vector<const Clip*> clips_;
  std::vector<std::string> names_;
  absl::flat_hash_map<std::string, int> index_;
};

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_OPS_CLIP_LIBRARY_H_
