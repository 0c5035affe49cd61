// Prometheus metrics: requests and errors by RPC and status code, frames and
// character-frames, solve latency per operation, active sessions. Served on
// --metrics_listen (HTTP, /metrics) when set; always collected, so tests and
// the server share one code path.
#ifndef POSEWIRE_SERVER_TRANSPORT_METRICS_H_
#define POSEWIRE_SERVER_TRANSPORT_METRICS_H_

#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/ops/op_timings.h"

namespace posewire::server {

class Metrics final : public OperationTimingsSink {
 public:
  // Collects metrics; when `listen` (HOST:PORT, port 0 for any) is not
  // empty, also serves them over HTTP. UNAVAILABLE if it cannot bind.
  static absl::StatusOr<std::unique_ptr<Metrics>> Create(
      const std::string& listen);

  // The bound HTTP port, or 0 when not serving.
  int port() const { return port_; }
  // Whether operation times are worth gathering: only an HTTP endpoint
  // shows them, and timing costs a clock read per op of every character
  // (2% of a batch-loaded server's perf samples).
  bool times_operations() const override { return exposer_ != nullptr; }

  // One finished RPC (Solve, GetInfo) or session, by final status.
  void CountCall(absl::string_view rpc, absl::StatusCode code);
  // One answered session frame with `characters` characters, `errors` of
  // which failed.
  void CountFrame(int characters, int errors);
  // The calls counted so far by RPC and final status, e.g.
  // "GetInfo OK 1; Session UNAVAILABLE 3; Solve OK 400" (nonzero counts,
  // RPCs by name), for the server's last log line.
  std::string CallSummary() const;
  // Adds one request's or frame's operation times.
  void AddTimings(const OperationTimings& timings) override;
  void SessionStarted() { active_sessions_->Increment(); }
  void SessionEnded() { active_sessions_->Decrement(); }

 private:
  Metrics() = default;

  static constexpr int kCodes = 17;  // gRPC status codes 0..16
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
  // Every child is created up front, so the hot path never takes the
  // family's lock to look one up.
  absl::flat_hash_map<std::string, std::array<prometheus::Counter*, kCodes>>
      calls_;
  prometheus::Counter* frames_ = nullptr;
  prometheus::Counter* character_frames_ = nullptr;
  prometheus::Counter* character_errors_ = nullptr;
  // By v1::Operation oneof case; null for cases that are not operations.
  std::array<prometheus::Histogram*, OperationTimings::kOpCases>
      operation_seconds_{};
  prometheus::Gauge* active_sessions_ = nullptr;
};

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_TRANSPORT_METRICS_H_
