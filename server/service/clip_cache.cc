#include "server/service/clip_cache.h"

#include <cstring>
#include <utility>

#include "absl/hash/hash.h"
#include "absl/strings/string_view.h"

namespace posewire::server {
namespace {

template <typename T>
absl::string_view Bytes(const std::vector<T>& values) {
  return absl::string_view(reinterpret_cast<const char*>(values.data()),
                           values.size() * sizeof(T));
}

// Keys are packed floats (Eigen's Vector3f and Quaternionf have no
// padding), so bytes compare and hash them exactly, -0 and NaN included.
static_assert(sizeof(Eigen::Vector3f) == 3 * sizeof(float));
static_assert(sizeof(Eigen::Quaternionf) == 4 * sizeof(float));

template <typename T>
bool SameTrack(const Track<T>& a, const Track<T>& b) {
  return a.interpolation == b.interpolation &&
         Bytes(a.times) == Bytes(b.times) && Bytes(a.values) == Bytes(b.values);
}

bool SameClip(const Clip& a, const Clip& b) {
  if (a.name != b.name || a.tracks.size() != b.tracks.size() ||
      std::memcmp(&a.duration, &b.duration, sizeof(float)) != 0) {
    return false;
  }
  for (size_t j = 0; j < a.tracks.size(); ++j) {
    if (!SameTrack(a.tracks[j].translation, b.tracks[j].translation) ||
        !SameTrack(a.tracks[j].rotation, b.tracks[j].rotation) ||
        !SameTrack(a.tracks[j].scale, b.tracks[j].scale)) {
      return false;
    }
  }
  return true;
}

uint64_t ContentHash(const Clip& clip) {
  uint32_t duration;
  std::memcpy(&duration, &clip.duration, sizeof(duration));
  size_t h = absl::HashOf(clip.name, duration, clip.tracks.size());
  for (const JointTracks& t : clip.tracks) {
    h = absl::HashOf(h, static_cast<int>(t.translation.interpolation),
                     Bytes(t.translation.times), Bytes(t.translation.values),
                     static_cast<int>(t.rotation.interpolation),
                     Bytes(t.rotation.times), Bytes(t.rotation.values),
                     static_cast<int>(t.scale.interpolation),
                     Bytes(t.scale.times), Bytes(t.scale.values));
  }
  return h;
}

// A full sweep after this many shares, so entries of clips that have gone
// do not pile up in buckets nobody visits again.
constexpr int kSharesPerSweep = 256;

}  // namespace

std::shared_ptr<const Clip> ClipCache::Share(Clip clip) {
  // Hashed outside the lock: O(keys).
  const uint64_t hash = ContentHash(clip);
  std::lock_guard<std::mutex> lock(mutex_);
  if (++shares_since_sweep_ >= kSharesPerSweep) SweepLocked();
  std::vector<std::weak_ptr<const Clip>>& bucket = by_hash_[hash];
  for (auto it = bucket.begin(); it != bucket.end();) {
    std::shared_ptr<const Clip> live = it->lock();
    if (live == nullptr) {
      it = bucket.erase(it);
      continue;
    }
    if (SameClip(*live, clip)) return live;
    ++it;
  }
  auto shared = std::make_shared<const Clip>(std::move(clip));
  bucket.push_back(shared);
  return shared;
}

int ClipCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  int live = 0;
  for (const auto& [hash, bucket] : by_hash_) {
    for (const std::weak_ptr<const Clip>& clip : bucket) {
      live += !clip.expired();
    }
  }
  return live;
}

void ClipCache::SweepLocked() {
  shares_since_sweep_ = 0;
  for (auto it = by_hash_.begin(); it != by_hash_.end();) {
    std::erase_if(it->second, [](const std::weak_ptr<const Clip>& clip) {
      return clip.expired();
    });
    if (it->second.empty()) {
      by_hash_.erase(it++);
    } else {
      ++it;
    }
  }
}

}  // namespace posewire::server
