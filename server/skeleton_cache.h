// A bounded, thread-safe LRU of skeletons by content hash, shared by every
// call: a client sends a skeleton once, then names it by hash.
#ifndef POSEWIRE_SERVER_SKELETON_CACHE_H_
#define POSEWIRE_SERVER_SKELETON_CACHE_H_

#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "solver_core/model/skeleton.h"

namespace posewire::server {

class SkeletonCache {
 public:
  explicit SkeletonCache(int capacity) : capacity_(capacity) {}

  // The skeleton stored under `hash`, marked most recently used; null if
  // absent. Shared ownership: an eviction never frees a skeleton in use.
  std::shared_ptr<const Skeleton> Find(const std::string& hash);

  // Stores `skeleton` under `hash` (keeping an existing equal entry) and
  // returns the stored one; evicts the least recently used beyond capacity.
  std::shared_ptr<const Skeleton> Insert(
      const std::string& hash, std::shared_ptr<const Skeleton> skeleton);

  int size() const;

 private:
  using Entry = std::pair<std::string, std::shared_ptr<const Skeleton>>;
  const int capacity_;
  mutable std::mutex mutex_;
  std::list<Entry> lru_;  // front: most recently used
  absl::flat_hash_map<std::string, std::list<Entry>::iterator> index_;
};

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_SKELETON_CACHE_H_
