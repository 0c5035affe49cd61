// posewire-load's phase accounting (clients/load/phase.h): the warm-up at
// the start of a phase counts for throughput and errors, not for latency.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "clients/load/phase.h"
#include "clients/load/workload.h"

namespace posewire::load {
namespace {

using std::chrono::microseconds;

constexpr double kDuration = 0.05;

// A phase whose one sender answers a message sent as the phase starts
// (in 5 ms) and one sent as the warm-up ends (in 100 us).
PhaseResult PhaseWithWarmup(double warmup) {
  Config c;
  c.senders = 1;
  c.duration = kDuration;
  c.warmup = warmup;
  const Workload w;
  return RunPhase(
      "service", w, c,
      [](const Phase& phase, std::vector<SenderResult>& results) {
        const Clock::time_point start =
            phase.end - std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(kDuration));
        const Clock::time_point from = phase.live.measure_from;
        Sent(results[0], phase.live);
        Record(results[0], phase.live, start, start + microseconds(5000), 0, 3);
        Sent(results[0], phase.live);
        Record(results[0], phase.live, from, from + microseconds(100), 0, 3);
      });
}

TEST(Phase, TheWarmupCountsForThroughputButNotForLatency) {
  const PhaseResult p = PhaseWithWarmup(0.01);
  EXPECT_EQ(p.sent, 2);
  EXPECT_EQ(p.answered, 2);
  EXPECT_EQ(p.character_frames, 6);
  ASSERT_EQ(p.latency_ns.size(), 1u);
  EXPECT_DOUBLE_EQ(p.Percentile(99), 100.0);
}

TEST(Phase, NoWarmupCountsEveryLatency) {
  const PhaseResult p = PhaseWithWarmup(0);
  EXPECT_EQ(p.answered, 2);
  ASSERT_EQ(p.latency_ns.size(), 2u);
  EXPECT_DOUBLE_EQ(p.Percentile(99), 5000.0);
}

}  // namespace
}  // namespace posewire::load
