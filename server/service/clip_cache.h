// Registered clips shared among a server's sessions by content.
//
// Sessions register clips one by one, and many sessions often register the
// same one (every player's client the same walk, a load test's streams). A
// 31-joint, 1,000-key clip converts to about 0.6 MB of keys; two hundred
// sessions holding their own copies need over 100 MB, and each frame's
// sampling then reads cold memory. Shared, there is one copy, which stays
// in cache. A clip is shared only when equal bit for bit (name, duration,
// every track's interpolation, times and values), so sampling it gives
// exactly what the session's own copy would. The cache holds clips weakly:
// a clip goes when the last session holding it does.
#ifndef POSEWIRE_SERVER_SERVICE_CLIP_CACHE_H_
#define POSEWIRE_SERVER_SERVICE_CLIP_CACHE_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "solver_core/model/clip.h"

namespace posewire::server {

class ClipCache {
 public:
  // A live clip equal to `clip`, or else `clip` itself, now shared with
  // later callers. Thread-safe.
  std::shared_ptr<const Clip> Share(Clip clip);

  // Live clips held (for tests and metrics).
  int size() const;

 private:
  // Drops the entries whose clip has gone; under mutex_.
  void SweepLocked();

  mutable std::mutex mutex_;
  // By content hash; equal hashes are told apart by comparing content.
  absl::flat_hash_map<uint64_t, std::vector<std::weak_ptr<const Clip>>>
      by_hash_;
  int shares_since_sweep_ = 0;
};

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_SERVICE_CLIP_CACHE_H_
