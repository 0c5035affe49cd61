// A bounded, thread-safe LRU of compiled plans by content: the skeleton's
// hash and the op list's bytes. A Solve carries its op list whole on every
// call; with this, a client that sends the same ops for the same skeleton
// (the usual case: one rig, a new pose each frame) pays for compiling them
// (joint names to indices, limits, the biped mapping, the spring rig) once.
#ifndef POSEWIRE_SERVER_SERVICE_PLAN_CACHE_H_
#define POSEWIRE_SERVER_SERVICE_PLAN_CACHE_H_

#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "posewire/v1/operations.pb.h"
#include "server/ops/plan.h"
#include "solver_core/model/skeleton.h"

namespace posewire::server {

class PlanCache {
 public:
  explicit PlanCache(int capacity) : capacity_(capacity) {}

  // The plan for `ops` on the skeleton whose content hash is
  // `skeleton_hash`: the cached one, or compiled now (and cached when it
  // compiles). Errors are Plan::Compile's, naming `field`.
  absl::StatusOr<std::shared_ptr<const Plan>> Get(
      std::shared_ptr<const Skeleton> skeleton, absl::string_view skeleton_hash,
      const google::protobuf::RepeatedPtrField<v1::Operation>& ops,
      OpLimits limits, absl::string_view field,
      const RegistryLookup* registry = nullptr);

  // As Get, for a caller whose `registry` names things of its own (a
  // session's registration ids), which a plan cached by content must not
  // depend on: a plan whose compiling looked anything up in `registry` is
  // returned uncached, to this caller alone.
  absl::StatusOr<std::shared_ptr<const Plan>> GetUnlessRegistryUsed(
      std::shared_ptr<const Skeleton> skeleton, absl::string_view skeleton_hash,
      const google::protobuf::RepeatedPtrField<v1::Operation>& ops,
      OpLimits limits, absl::string_view field, const RegistryLookup& registry);

  int size() const;

 private:
  // The cached plan under `key`, marked most recently used; null if none.
  std::shared_ptr<const Plan> FindLocked(const std::string& key);
  // Caches `plan` under `key` (an equal plan cached meanwhile wins) and
  // returns the cached one.
  std::shared_ptr<const Plan> StoreLocked(
      std::string key, std::shared_ptr<const Skeleton> skeleton,
      std::shared_ptr<const Plan> plan);

  struct Entry {
    std::string key;
    // Kept alive with its plan, whatever the skeleton cache evicts.
    std::shared_ptr<const Skeleton> skeleton;
    std::shared_ptr<const Plan> plan;
  };
  const int capacity_;
  mutable std::mutex mutex_;
  std::list<Entry> lru_;  // front: most recently used
  absl::flat_hash_map<std::string, std::list<Entry>::iterator> index_;
};

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_SERVICE_PLAN_CACHE_H_
