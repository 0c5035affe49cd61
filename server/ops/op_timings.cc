#include "server/ops/op_timings.h"

#include <algorithm>

namespace posewire::server {

void OperationTimings::Add(int op_case, double seconds) {
  if (op_case < 0 || op_case >= kOpCases) return;
  // The bucket Prometheus' Histogram::Observe picks: the first bound >= value.
  const size_t bucket =
      std::lower_bound(kOperationSecondsBuckets.begin(),
                       kOperationSecondsBuckets.end(), seconds) -
      kOperationSecondsBuckets.begin();
  counts_[op_case][bucket] += 1.0;
  sums_[op_case] += seconds;
  seen_[op_case] = true;
}

}  // namespace posewire::server
