// posewire-load's capacity search: the highest paced rate a target holds
// with its p99 latency under a threshold, found by doubling the rate until
// it fails and then bisecting. Each rate is judged by a majority of a few
// short windows, so that one unlucky window on a shared machine does not
// send the search down (or one lucky one up).
#ifndef POSEWIRE_CLIENTS_LOAD_CAPACITY_SEARCH_H_
#define POSEWIRE_CLIENTS_LOAD_CAPACITY_SEARCH_H_

#include <functional>
#include <string>
#include <vector>

#include "clients/load/phase.h"

namespace posewire::load {

struct SearchOptions {
  // Messages per second per sender of the first window.
  double start_rate = 60;
  // The latency a rate must hold: p99 at most this many microseconds.
  double p99_us = 1000;
  // Bisection steps after the first failing rate.
  int refine_steps = 4;
  // Doublings tried before giving up on finding a failing rate.
  int max_doublings = 8;
  // Windows per rate, at most: the rate holds when most of them hold, and
  // no more windows run once that is decided (odd; 1: one window decides).
  int tries_per_rate = 3;
  int senders = 1;
};

// Whether a window held its offered rate: no errors, every message
// answered, at least 95% of the offered messages (less one per sender)
// answered, and p99 within the threshold. A paced sender that falls behind
// skips rather than bursting, so a saturated target shows as missing
// messages, not only as latency.
bool HoldsRate(const PhaseResult& window, double rate_per_sender,
               const SearchOptions& options);

struct Capacity {
  std::string target;
  // The highest rate that held (0: not even the start rate held).
  double rate_per_sender = 0;
  // What the target answered at that rate, in its holding window with the
  // highest p99: messages/s, character-frames/s and p99 in microseconds.
  double messages_per_second = 0;
  double character_frames_per_second = 0;
  double p99_us = 0;
  int windows = 0;
};

// Runs `window(rate)` (one short phase at `rate` Hz per sender) as the
// search needs, printing one line per window. `options.tries_per_rate`
// must be odd and at least 1.
Capacity SearchCapacity(const std::string& target, const SearchOptions& options,
                        const std::function<PhaseResult(double rate)>& window);

// Searches several targets at once, their windows taking turns (the first
// target's, the second's, ..., the first's again), each search otherwise as
// SearchCapacity. On a shared machine a busy stretch then falls on every
// target's windows alike, so the ratio of their capacities compares them
// under the same conditions; searched one after the other, minutes apart,
// one target can draw a quiet stretch and the other a busy one. A search
// that ends leaves the turns to the others. Each search runs on a thread of
// its own, started here (so it inherits the caller's CPU affinity), and
// `windows[i]` is only ever called from target i's thread, never while
// another target's window runs. Returns the capacities in target order.
struct SearchTarget {
  std::string name;
  std::function<PhaseResult(double rate)> window;
};
std::vector<Capacity> SearchCapacitiesInTurn(
    const std::vector<SearchTarget>& targets, const SearchOptions& options);

void PrintCapacity(const Capacity& c);
std::string CapacityJson(const Capacity& c);

}  // namespace posewire::load

#endif  // POSEWIRE_CLIENTS_LOAD_CAPACITY_SEARCH_H_
