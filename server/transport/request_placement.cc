#include "server/transport/request_placement.h"

#include <chrono>
#include <limits>

namespace posewire::server {
namespace {

int64_t SteadyNanoseconds() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

constexpr int64_t kStoreEveryNs = 1'000'000;

}  // namespace

RequestPlacement::RequestPlacement(int64_t inline_bytes,
                                   absl::Duration batch_inline_quiet)
    : inline_bytes_(inline_bytes),
      quiet_ns_(batch_inline_quiet == absl::InfiniteDuration()
                    ? -1
                    : absl::ToInt64Nanoseconds(batch_inline_quiet)),
      // As if the last small request came long ago: a server that only
      // ever sees batches solves them inline from the start.
      last_small_ns_(std::numeric_limits<int64_t>::min() / 2) {}

bool RequestPlacement::SolveInline(size_t bytes) {
  if (inline_bytes_ <= 0) return false;
  const int64_t now = SteadyNanoseconds();
  if (static_cast<int64_t>(bytes) <= inline_bytes_) {
    // Thousands of small requests a second from every gRPC thread: store
    // only when the value is a millisecond old, so the cache line is not
    // written by every request.
    if (now - last_small_ns_.load(std::memory_order_relaxed) >= kStoreEveryNs) {
      last_small_ns_.store(now, std::memory_order_relaxed);
    }
    return true;
  }
  return quiet_ns_ >= 0 &&
         now - last_small_ns_.load(std::memory_order_relaxed) >= quiet_ns_;
}

}  // namespace posewire::server
