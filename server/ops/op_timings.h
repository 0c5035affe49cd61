// Operation wall times of one request or frame, gathered without locks and
// handed to the metrics in one step. Observing each operation of each
// character directly took a map lookup and a histogram's mutex per op,
// about 5% of the server's CPU in a 100-character batch with both solver
// threads contending for the same histograms.
#ifndef POSEWIRE_SERVER_OPS_OP_TIMINGS_H_
#define POSEWIRE_SERVER_OPS_OP_TIMINGS_H_

#include <array>

namespace posewire::server {

// Upper bounds (seconds) of the operation-time histogram's buckets.
inline constexpr std::array<double, 12> kOperationSecondsBuckets = {
    1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 5e-3, 2e-2};

class OperationTimings {
 public:
  // One slot per v1::Operation oneof case (its field number).
  static constexpr int kOpCases = 20;
  // Per op case, observations per bucket as Prometheus counts them: bucket
  // b holds values <= kOperationSecondsBuckets[b], the last one the rest.
  using Buckets = std::array<double, kOperationSecondsBuckets.size() + 1>;

  // `op_case` outside [0, kOpCases) is ignored.
  void Add(int op_case, double seconds);

  bool seen(int op_case) const { return seen_[op_case]; }
  const Buckets& counts(int op_case) const { return counts_[op_case]; }
  double sum(int op_case) const { return sums_[op_case]; }

 private:
  std::array<Buckets, kOpCases> counts_{};
  std::array<double, kOpCases> sums_{};
  std::array<bool, kOpCases> seen_{};
};

// Where a request's or frame's timings go when it is done (the server's
// metrics); the service logic knows nothing else of them.
class OperationTimingsSink {
 public:
  virtual ~OperationTimingsSink() = default;
  // Whether timings are worth gathering: each costs a clock read per op.
  virtual bool times_operations() const = 0;
  virtual void AddTimings(const OperationTimings& timings) = 0;
};

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_OPS_OP_TIMINGS_H_
