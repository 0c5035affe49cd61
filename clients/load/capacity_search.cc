#include "clients/load/capacity_search.h"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "absl/strings/str_format.h"

namespace posewire::load {

bool HoldsRate(const PhaseResult& window, double rate_per_sender,
               const SearchOptions& options) {
  // A short window counts whole messages: one per sender of slack.
  const double offered = rate_per_sender * options.senders;
  const double slack = options.senders / std::max(1e-9, window.seconds);
  return window.TotalErrors() == 0 && window.answered == window.sent &&
         window.MessagesPerSecond() >= 0.95 * offered - slack &&
         window.Percentile(99) <= options.p99_us;
}

namespace {

// Judges one rate by a majority of its windows, printing a line per
// window; a rate that holds updates `best` with the figures of its
// holding window with the highest p99.
bool Try(const std::string& target, double rate, const SearchOptions& options,
         const std::function<PhaseResult(double rate)>& window,
         Capacity& best) {
  const int tries = std::max(1, options.tries_per_rate);
  const int majority = tries / 2 + 1;
  int holds = 0;
  int fails = 0;
  PhaseResult worst_held;
  double worst_p99 = -1;
  while (holds < majority && fails < majority) {
    const PhaseResult p = window(rate);
    ++best.windows;
    const bool held = HoldsRate(p, rate, options);
    std::printf(
        "capacity %-10s %8.1f Hz/sender (window %d): %.0f messages/s, p99 "
        "%.1f us: %s\n",
        target.c_str(), rate, holds + fails + 1, p.MessagesPerSecond(),
        p.Percentile(99), held ? "holds" : "fails");
    if (!held) {
      ++fails;
      continue;
    }
    ++holds;
    if (p.Percentile(99) > worst_p99) {
      worst_p99 = p.Percentile(99);
      worst_held = p;
    }
  }
  const bool held = holds >= majority;
  if (held && rate > best.rate_per_sender) {
    best.rate_per_sender = rate;
    best.messages_per_second = worst_held.MessagesPerSecond();
    best.character_frames_per_second = worst_held.CharacterFramesPerSecond();
    best.p99_us = worst_held.Percentile(99);
  }
  return held;
}

}  // namespace

Capacity SearchCapacity(const std::string& target, const SearchOptions& options,
                        const std::function<PhaseResult(double rate)>& window) {
  Capacity best{.target = target};
  double held = 0;
  double failed = 0;
  double rate = options.start_rate;
  for (int i = 0; i <= options.max_doublings; ++i, rate *= 2) {
    if (!Try(target, rate, options, window, best)) {
      failed = rate;
      break;
    }
    held = rate;
  }
  if (failed == 0) return best;  // never failed: the capacity is a floor
  for (int i = 0; i < options.refine_steps; ++i) {
    const double mid = held > 0 ? (held + failed) / 2 : failed / 2;
    if (Try(target, mid, options, window, best)) {
      held = mid;
    } else {
      failed = mid;
    }
  }
  return best;
}

namespace {

// Whose window runs: parties take turns in order, skipping those whose
// search has ended.
class Turns {
 public:
  explicit Turns(size_t parties) : active_(parties, true) {}

  // Blocks until it is `party`'s turn.
  void Wait(size_t party) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return turn_ == party; });
  }

  // `party` has run its window: the next active party's turn.
  void Pass(size_t party) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      AdvanceFromLocked(party);
    }
    changed_.notify_all();
  }

  // `party`'s search has ended.
  void Leave(size_t party) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      active_[party] = false;
      if (turn_ == party) AdvanceFromLocked(party);
    }
    changed_.notify_all();
  }

 private:
  void AdvanceFromLocked(size_t party) {
    for (size_t step = 1; step <= active_.size(); ++step) {
      const size_t next = (party + step) % active_.size();
      if (active_[next]) {
        turn_ = next;
        return;
      }
    }
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  size_t turn_ = 0;
  std::vector<bool> active_;
};

}  // namespace

std::vector<Capacity> SearchCapacitiesInTurn(
    const std::vector<SearchTarget>& targets, const SearchOptions& options) {
  std::vector<Capacity> found(targets.size());
  Turns turns(targets.size());
  std::vector<std::thread> searches;
  searches.reserve(targets.size());
  for (size_t i = 0; i < targets.size(); ++i) {
    searches.emplace_back([&, i] {
      found[i] = SearchCapacity(targets[i].name, options, [&](double rate) {
        turns.Wait(i);
        PhaseResult window = targets[i].window(rate);
        turns.Pass(i);
        return window;
      });
      turns.Leave(i);
    });
  }
  for (std::thread& search : searches) search.join();
  return found;
}

void PrintCapacity(const Capacity& c) {
  std::printf(
      "capacity %-10s %.0f messages/s (%.0f character-frames/s) at %.1f "
      "Hz/sender, p99 %.1f us (%d windows)\n",
      c.target.c_str(), c.messages_per_second, c.character_frames_per_second,
      c.rate_per_sender, c.p99_us, c.windows);
}

std::string CapacityJson(const Capacity& c) {
  return absl::StrFormat(
      "{\"rate_per_sender\": %.3f, \"messages_per_second\": %.1f, "
      "\"character_frames_per_second\": %.1f, \"p99_us\": %.1f, "
      "\"windows\": %d}",
      c.rate_per_sender, c.messages_per_second, c.character_frames_per_second,
      c.p99_us, c.windows);
}

}  // namespace posewire::load
