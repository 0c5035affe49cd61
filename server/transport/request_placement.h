// Where the server solves a request: on the gRPC thread that read it, or on
// the solver pool (WorkerPool).
//
// Small requests (one-character frames, small Solve calls) are solved
// inline: they take less time than the two thread hand-offs the pool costs.
// Large ones (batches) go to the pool so that a long solve never holds up a
// gRPC thread that other clients' small requests are waiting on: with a
// batch load and 200 interactive streams on one server, solving batches
// inline too raised the interactive p50 from 0.4-0.6 ms to 1.8-2.2 ms
// (docs/PERFORMANCE.md). But when no small request has arrived for a while,
// nobody is waiting on those threads, and the hand-off is pure cost: under a
// batch-only load the pool's hand-offs took 8.5 context switches per
// message against 1.5 inline, 0.37 µs more server CPU per character-frame,
// 10% of the throughput. So large requests are solved inline as well once
// small ones have been absent for `batch_inline_quiet`.
#ifndef POSEWIRE_SERVER_TRANSPORT_REQUEST_PLACEMENT_H_
#define POSEWIRE_SERVER_TRANSPORT_REQUEST_PLACEMENT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "absl/time/time.h"

namespace posewire::server {

class RequestPlacement {
 public:
  // `inline_bytes`: requests up to this size are small (0: none is, and
  // every request goes to the pool). `batch_inline_quiet`: how long small
  // requests must have been absent before large ones are solved inline;
  // absl::InfiniteDuration(): never.
  RequestPlacement(int64_t inline_bytes, absl::Duration batch_inline_quiet);

  // True: solve a request of `bytes` on the calling gRPC thread; false: on
  // the pool. Called once per request, from any thread.
  bool SolveInline(size_t bytes);

 private:
  const int64_t inline_bytes_;
  // Nanoseconds; negative: never.
  const int64_t quiet_ns_;
  // Steady-clock nanoseconds of the latest small request (within a
  // millisecond: it is stored at most once per millisecond).
  std::atomic<int64_t> last_small_ns_;
};

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_TRANSPORT_REQUEST_PLACEMENT_H_
