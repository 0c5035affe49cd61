#include "server/service/skeleton_cache.h"

#include "absl/strings/str_cat.h"
#include "server/wire/wire_convert.h"

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

absl::StatusOr<ResolvedSkeleton> ResolveSkeleton(const v1::SkeletonRef& ref,
                                                 int max_joints,
                                                 SkeletonCache& cache,
                                                 absl::string_view field) {
  switch (ref.ref_case()) {
    case v1::SkeletonRef::kSkeleton: {
      auto skeleton = SkeletonFromProto(ref.skeleton(), max_joints,
                                        absl::StrCat(field, ".skeleton"));
      if (!skeleton.ok()) return skeleton.status();
      ResolvedSkeleton resolved;
      resolved.hash = SkeletonHash(*skeleton);
      resolved.skeleton =
          cache.Insert(resolved.hash,
                       std::make_shared<const Skeleton>(*std::move(skeleton)));
      return resolved;
    }
    case v1::SkeletonRef::kHash: {
      std::shared_ptr<const Skeleton> skeleton = cache.Find(ref.hash());
      if (skeleton == nullptr) {
        return absl::NotFoundError(absl::StrCat(
            field, ".hash: this server does not know skeleton '", ref.hash(),
            "' (never sent here, or evicted): send the skeleton inline"));
      }
      return ResolvedSkeleton{std::move(skeleton), ref.hash()};
    }
    case v1::SkeletonRef::REF_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": set either skeleton or hash"));
}

}  // namespace posewire::server
