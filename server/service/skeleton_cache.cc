#include "server/service/skeleton_cache.h"

namespace posewire::server {

std::shared_ptr<const Skeleton> SkeletonCache::Find(const std::string& hash) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = index_.find(hash);
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

std::shared_ptr<const Skeleton> SkeletonCache::Insert(
    const std::string& hash, std::shared_ptr<const Skeleton> skeleton) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = index_.find(hash);
  if (it != index_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->second;
  }
  lru_.emplace_front(hash, std::move(skeleton));
  index_.emplace(hash, lru_.begin());
  while (static_cast<int>(lru_.size()) > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return lru_.front().second;
}

int SkeletonCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int>(lru_.size());
}

}  // namespace posewire::server
