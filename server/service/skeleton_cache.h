// A bounded, thread-safe LRU of skeletons by content hash, shared by every
// call: a client sends a skeleton once, then names it by hash. It also
// holds the plans compiled for those skeletons (PlanCache), bounded by the
// same capacity.
#ifndef POSEWIRE_SERVER_SERVICE_SKELETON_CACHE_H_
#define POSEWIRE_SERVER_SERVICE_SKELETON_CACHE_H_

#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "posewire/v1/posewire.pb.h"
#include "server/service/plan_cache.h"
#include "solver_core/model/skeleton.h"

namespace posewire::server {

class SkeletonCache {
 public:
  explicit SkeletonCache(int capacity)
      : capacity_(capacity), plans_(capacity) {}

  // The skeleton stored under `hash`, marked most recently used; null if
  // absent. Shared ownership: an eviction never frees a skeleton in use.
  std::shared_ptr<const Skeleton> Find(const std::string& hash);

  // Stores `skeleton` under `hash` (keeping an existing equal entry) and
  // returns the stored one; evicts the least recently used beyond capacity.
  std::shared_ptr<const Skeleton> Insert(
      const std::string& hash, std::shared_ptr<const Skeleton> skeleton);

  int size() const;

  // Op lists compiled for these skeletons.
  PlanCache& plans() { return plans_; }

 private:
  using Entry = std::pair<std::string, std::shared_ptr<const Skeleton>>;
  const int capacity_;
  mutable std::mutex mutex_;
  std::list<Entry> lru_;  // front: most recently used
  absl::flat_hash_map<std::string, std::list<Entry>::iterator> index_;
  PlanCache plans_;
};

// A request's skeleton: sent inline (converted, checked and cached) or
// named by the content hash a cache holds.
struct ResolvedSkeleton {
  std::shared_ptr<const Skeleton> skeleton;
  std::string hash;
};

// NOT_FOUND for a hash `cache` does not hold (resend inline);
// INVALID_ARGUMENT naming `field` for a bad skeleton or an empty ref.
absl::StatusOr<ResolvedSkeleton> ResolveSkeleton(const v1::SkeletonRef& ref,
                                                 int max_joints,
                                                 SkeletonCache& cache,
                                                 absl::string_view field);

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_SERVICE_SKELETON_CACHE_H_
