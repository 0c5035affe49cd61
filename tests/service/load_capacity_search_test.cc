// posewire-load's capacity search (clients/load/capacity_search.h) against
// synthetic targets whose behaviour at each rate is known: what counts as
// holding a rate, where the search lands, and how many windows it spends.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <thread>
#include <vector>

#include "clients/load/capacity_search.h"

namespace posewire::load {
namespace {

using ::testing::HasSubstr;

// One second's window of a target that answers `answered_fraction` of the
// `rate` Hz offered by `senders` senders, every answer taking `latency_us`.
PhaseResult Window(double rate, int senders, double latency_us,
                   double answered_fraction = 1.0) {
  PhaseResult p;
  p.seconds = 1.0;
  p.sent = static_cast<int64_t>(std::llround(rate * senders));
  p.answered = static_cast<int64_t>(
      std::llround(static_cast<double>(p.sent) * answered_fraction));
  // A sender that falls behind skips: what it never sent is not "sent".
  p.sent = p.answered;
  p.character_frames = p.answered * 4;
  p.latency_ns.assign(static_cast<size_t>(std::max<int64_t>(p.answered, 1)),
                      static_cast<int64_t>(latency_us * 1000));
  return p;
}

// A target that holds up to `capacity` Hz per sender with p99 200 us and
// beyond it answers only what it can, at 5 ms.
struct Saturating {
  explicit Saturating(double capacity, int senders = 1)
      : capacity(capacity), senders(senders) {}

  double capacity;
  int senders;
  std::vector<double> rates_tried;

  PhaseResult operator()(double rate) {
    rates_tried.push_back(rate);
    if (rate <= capacity) return Window(rate, senders, 200);
    return Window(rate, senders, 5000, capacity / rate);
  }
};

TEST(HoldsRate, EveryConditionCounts) {
  const SearchOptions options{.p99_us = 1000, .senders = 2};
  EXPECT_TRUE(HoldsRate(Window(100, 2, 999), 100, options));
  // p99 over the threshold.
  EXPECT_FALSE(HoldsRate(Window(100, 2, 1001), 100, options));
  // An error, even one.
  PhaseResult with_error = Window(100, 2, 200);
  with_error.errors[14] = 1;
  EXPECT_FALSE(HoldsRate(with_error, 100, options));
  // A message sent and never answered.
  PhaseResult unanswered = Window(100, 2, 200);
  unanswered.sent += 1;
  EXPECT_FALSE(HoldsRate(unanswered, 100, options));
  // Falling behind: 90% of the offered rate answered fails, 95% less one
  // message per sender holds.
  EXPECT_FALSE(HoldsRate(Window(100, 2, 200, 0.90), 100, options));
  EXPECT_TRUE(HoldsRate(Window(100, 2, 200, 0.94), 100, options));
  EXPECT_FALSE(HoldsRate(Window(100, 2, 200, 0.93), 100, options));
}

TEST(SearchCapacity, DoublesThenBisectsToWithinTheLastStep) {
  Saturating target(700);
  const SearchOptions options{
      .start_rate = 60, .refine_steps = 4, .tries_per_rate = 1};
  const Capacity c = SearchCapacity("echo", options, std::ref(target));
  // 60, 120, 240, 480 hold; 960 fails; then 720, 600, 660, 690.
  const std::vector<double> expected = {60,  120, 240, 480, 960,
                                        720, 600, 660, 690};
  EXPECT_EQ(target.rates_tried, expected);
  EXPECT_EQ(c.target, "echo");
  EXPECT_DOUBLE_EQ(c.rate_per_sender, 690);
  EXPECT_EQ(c.windows, 9);
  EXPECT_DOUBLE_EQ(c.messages_per_second, 690);
  EXPECT_DOUBLE_EQ(c.character_frames_per_second, 4 * 690);
  EXPECT_DOUBLE_EQ(c.p99_us, 200);
  // The answer is within one last bisection step of the true capacity.
  EXPECT_LE(c.rate_per_sender, target.capacity);
  EXPECT_GE(c.rate_per_sender, target.capacity - 480.0 / 16);
}

TEST(SearchCapacity, AStartRateThatFailsIsBisectedDownwards) {
  Saturating target(20);
  const Capacity c = SearchCapacity(
      "service",
      SearchOptions{.start_rate = 60, .refine_steps = 3, .tries_per_rate = 1},
      std::ref(target));
  // 60 fails; 30 fails; 15 holds; 22.5 fails.
  const std::vector<double> expected = {60, 30, 15, 22.5};
  EXPECT_EQ(target.rates_tried, expected);
  EXPECT_DOUBLE_EQ(c.rate_per_sender, 15);
}

TEST(SearchCapacity, NothingHoldsGivesZero) {
  const auto never = [](double rate) { return Window(rate, 1, 1e6); };
  const Capacity c = SearchCapacity(
      "broken",
      SearchOptions{.start_rate = 60, .refine_steps = 2, .tries_per_rate = 1},
      never);
  EXPECT_EQ(c.rate_per_sender, 0);
  EXPECT_EQ(c.windows, 3);
  EXPECT_THAT(CapacityJson(c), HasSubstr("\"rate_per_sender\": 0.000"));
}

TEST(SearchCapacity, ATargetThatNeverFailsReportsTheLastRateAsAFloor) {
  Saturating target(1e12);
  const Capacity c = SearchCapacity(
      "local",
      SearchOptions{.start_rate = 10, .max_doublings = 3, .tries_per_rate = 1},
      std::ref(target));
  const std::vector<double> expected = {10, 20, 40, 80};
  EXPECT_EQ(target.rates_tried, expected);
  EXPECT_DOUBLE_EQ(c.rate_per_sender, 80);
  EXPECT_EQ(CapacityJson(c),
            "{\"rate_per_sender\": 80.000, \"messages_per_second\": 80.0, "
            "\"character_frames_per_second\": 320.0, \"p99_us\": 200.0, "
            "\"windows\": 4}");
}

TEST(SearchCapacity, SendersMultiplyTheOfferedRate) {
  Saturating target(100, 4);
  const Capacity c = SearchCapacity("service",
                                    SearchOptions{.start_rate = 50,
                                                  .refine_steps = 2,
                                                  .tries_per_rate = 1,
                                                  .senders = 4},
                                    std::ref(target));
  // 50, 100 hold; 200 fails; 150 fails; 125 fails.
  EXPECT_DOUBLE_EQ(c.rate_per_sender, 100);
  EXPECT_DOUBLE_EQ(c.messages_per_second, 400);
}

// A target on a shared machine: it holds up to `capacity`, but every
// `glitch_every`-th window fails whatever the rate (a neighbour's burst).
struct Glitchy {
  Glitchy(double capacity, int glitch_every)
      : target(capacity), glitch_every(glitch_every) {}

  Saturating target;
  int glitch_every;
  int windows = 0;

  PhaseResult operator()(double rate) {
    if (++windows % glitch_every == 0) {
      target.rates_tried.push_back(rate);
      return Window(rate, 1, 5000);
    }
    return target(rate);
  }
};

TEST(SearchCapacity, AMajorityOfWindowsDecidesEachRate) {
  // Every third window fails: one window per rate would settle on 60 (the
  // third window, 240, fails) and bisect down from there; three per rate
  // outvote each glitch.
  Glitchy one(700, 3);
  const Capacity alone = SearchCapacity(
      "service",
      SearchOptions{.start_rate = 60, .refine_steps = 4, .tries_per_rate = 1},
      std::ref(one));
  EXPECT_LT(alone.rate_per_sender, 240);

  Glitchy glitchy(700, 3);
  const Capacity c = SearchCapacity(
      "service", SearchOptions{.start_rate = 60, .refine_steps = 4},
      std::ref(glitchy));
  EXPECT_DOUBLE_EQ(c.rate_per_sender, 690);
  // Two windows per rate when the first two agree, three when a glitch
  // splits them: 9 rates, of which 120, 240, 480, 660 and 690 were split.
  EXPECT_EQ(c.windows, static_cast<int>(glitchy.target.rates_tried.size()));
  EXPECT_EQ(c.windows, 9 * 2 + 5);
  EXPECT_DOUBLE_EQ(c.p99_us, 200);
}

TEST(SearchCapacity, AHeldRateReportsItsWorstHoldingWindow) {
  // At 60 Hz the windows' p99 are 300, 900 and (never run) 100 us: the
  // first two hold, and the report takes the 900 us one.
  std::vector<double> p99s = {300, 900, 100};
  size_t next = 0;
  const auto target = [&](double rate) {
    if (rate > 60) return Window(rate, 1, 5000);
    return Window(rate, 1, p99s[next++ % p99s.size()]);
  };
  const Capacity c = SearchCapacity(
      "echo", SearchOptions{.start_rate = 60, .refine_steps = 0}, target);
  EXPECT_DOUBLE_EQ(c.rate_per_sender, 60);
  EXPECT_DOUBLE_EQ(c.p99_us, 900);
  EXPECT_EQ(c.windows, 4);  // 60 held twice; 120 failed twice
}

TEST(SearchCapacitiesInTurn, WindowsAlternateAndEachSearchLandsAsAlone) {
  // The service fails sooner than the echo: 60 to 480 hold for both, the
  // service's 960 fails while the echo's holds. The service's search takes
  // 9 windows, the echo's 10.
  Saturating service(700);
  Saturating echo(1500);
  std::vector<int> order;  // whose window ran, in turn
  std::atomic<int> running{0};
  int most_running = 0;
  const auto window_of = [&](Saturating& target, int who) {
    return [&, who](double rate) {
      most_running = std::max(most_running, ++running);
      order.push_back(who);
      // A window takes time: a search that did not wait would overlap.
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      const PhaseResult p = target(rate);
      --running;
      return p;
    };
  };
  const SearchOptions options{
      .start_rate = 60, .refine_steps = 4, .tries_per_rate = 1};
  const std::vector<Capacity> found = SearchCapacitiesInTurn(
      {{.name = "service", .window = window_of(service, 0)},
       {.name = "echo", .window = window_of(echo, 1)}},
      options);

  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(most_running, 1);
  // Each search ran exactly as it would alone.
  Saturating service_alone(700);
  Saturating echo_alone(1500);
  SearchCapacity("service", options, std::ref(service_alone));
  SearchCapacity("echo", options, std::ref(echo_alone));
  EXPECT_EQ(service.rates_tried, service_alone.rates_tried);
  EXPECT_EQ(echo.rates_tried, echo_alone.rates_tried);
  EXPECT_EQ(found[0].target, "service");
  EXPECT_DOUBLE_EQ(found[0].rate_per_sender, 690);
  EXPECT_EQ(found[1].target, "echo");
  EXPECT_DOUBLE_EQ(found[1].rate_per_sender, 1500);
  // Turns alternate from the service while both search; the longer search
  // then runs its last windows alone.
  ASSERT_EQ(order.size(), service.rates_tried.size() + echo.rates_tried.size());
  const size_t both =
      2 * std::min(service.rates_tried.size(), echo.rates_tried.size());
  for (size_t i = 0; i < order.size(); ++i) {
    EXPECT_EQ(order[i], i < both ? static_cast<int>(i % 2) : 1) << i;
  }
}

}  // namespace
}  // namespace posewire::load
