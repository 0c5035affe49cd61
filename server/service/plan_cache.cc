#include "server/service/plan_cache.h"

#include <functional>
#include <string>

#include "absl/strings/str_cat.h"

namespace posewire::server {
namespace {

// The skeleton's hash, then each op's length and bytes: equal keys are
// equal op lists for equal skeletons (the hash is SHA-256 of the content).
std::string Key(absl::string_view skeleton_hash,
                const google::protobuf::RepeatedPtrField<v1::Operation>& ops) {
  std::string key(skeleton_hash);
  std::string bytes;
  for (const v1::Operation& op : ops) {
    bytes.clear();
    op.SerializeToString(&bytes);
    absl::StrAppend(&key, "|", bytes.size(), ":", bytes);
  }
  return key;
}

// `lookup`, noting in `used` each time it is called; empty stays empty
// (ops tell "no registry" from "not found" by it).
template <typename Result>
std::function<Result(const std::string&)> Watched(
    const std::function<Result(const std::string&)>& lookup, bool& used) {
  if (!lookup) return lookup;
  return [&lookup, &used](const std::string& key) {
    used = true;
    return lookup(key);
  };
}

}  // namespace

std::shared_ptr<const Plan> PlanCache::FindLocked(const std::string& key) {
  auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->plan;
}

std::shared_ptr<const Plan> PlanCache::StoreLocked(
    std::string key, std::shared_ptr<const Skeleton> skeleton,
    std::shared_ptr<const Plan> plan) {
  if (std::shared_ptr<const Plan> cached = FindLocked(key)) return cached;
  lru_.push_front(Entry{key, std::move(skeleton), plan});
  index_.emplace(std::move(key), lru_.begin());
  while (static_cast<int>(lru_.size()) > capacity_) {
    index_.erase(lru_.back().key);
    lru_.pop_back();
  }
  return plan;
}

absl::StatusOr<std::shared_ptr<const Plan>> PlanCache::Get(
    std::shared_ptr<const Skeleton> skeleton, absl::string_view skeleton_hash,
    const google::protobuf::RepeatedPtrField<v1::Operation>& ops,
    OpLimits limits, absl::string_view field, const RegistryLookup* registry) {
  std::string key = Key(skeleton_hash, ops);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (std::shared_ptr<const Plan> cached = FindLocked(key)) return cached;
  }
  // Compiled outside the lock: two threads may compile the same plan once
  // each, and the first stored wins; both are the same plan.
  auto plan = Plan::Compile(*skeleton, ops, limits, field, registry);
  if (!plan.ok() || capacity_ <= 0) return plan;
  std::lock_guard<std::mutex> lock(mutex_);
  return StoreLocked(std::move(key), std::move(skeleton), *std::move(plan));
}

absl::StatusOr<std::shared_ptr<const Plan>> PlanCache::GetUnlessRegistryUsed(
    std::shared_ptr<const Skeleton> skeleton, absl::string_view skeleton_hash,
    const google::protobuf::RepeatedPtrField<v1::Operation>& ops,
    OpLimits limits, absl::string_view field, const RegistryLookup& registry) {
  std::string key = Key(skeleton_hash, ops);
  {
    // Only plans that looked nothing up are ever stored here, and the same
    // ops always make the same lookups: a plan found is the caller's too.
    std::lock_guard<std::mutex> lock(mutex_);
    if (std::shared_ptr<const Plan> cached = FindLocked(key)) return cached;
  }
  bool looked_up = false;
  const RegistryLookup watched{
      .by_hash = Watched(registry.by_hash, looked_up),
      .by_id = Watched(registry.by_id, looked_up),
      .limits_by_id = Watched(registry.limits_by_id, looked_up),
      .max_joints = registry.max_joints};
  auto plan = Plan::Compile(*skeleton, ops, limits, field, &watched);
  if (!plan.ok() || looked_up || capacity_ <= 0) return plan;
  std::lock_guard<std::mutex> lock(mutex_);
  return StoreLocked(std::move(key), std::move(skeleton), *std::move(plan));
}

int PlanCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int>(lru_.size());
}

}  // namespace posewire::server
