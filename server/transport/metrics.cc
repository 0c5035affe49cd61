#include "server/transport/metrics.h"

#include <algorithm>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/ops/op_table.h"

namespace posewire::server {

absl::StatusOr<std::unique_ptr<Metrics>> Metrics::Create(
    const std::string& listen) {
  auto metrics = std::unique_ptr<Metrics>(new Metrics());
  metrics->registry_ = std::make_shared<prometheus::Registry>();
  prometheus::Registry& registry = *metrics->registry_;

  auto& calls =
      prometheus::BuildCounter()
          .Name("posewire_calls_total")
          .Help("Finished RPCs and sessions by method and gRPC status code")
          .Register(registry);
  for (const char* rpc : {"GetInfo", "Solve", "Session", "LearnLimits"}) {
    auto& by_code = metrics->calls_[rpc];
    for (int code = 0; code < kCodes; ++code) {
      by_code[code] = &calls.Add(
          {{"rpc", rpc},
           {"code",
            absl::StatusCodeToString(static_cast<absl::StatusCode>(code))}});
    }
  }
  auto& frames = prometheus::BuildCounter()
                     .Name("posewire_session_frames_total")
                     .Help("Session frames answered")
                     .Register(registry);
  metrics->frames_ = &frames.Add({});
  auto& characters =
      prometheus::BuildCounter()
          .Name("posewire_character_frames_total")
          .Help("Characters solved in session frames, by outcome")
          .Register(registry);
  metrics->character_frames_ = &characters.Add({{"outcome", "ok"}});
  metrics->character_errors_ = &characters.Add({{"outcome", "error"}});

  auto& seconds = prometheus::BuildHistogram()
                      .Name("posewire_operation_seconds")
                      .Help("Wall time of one operation on one character")
                      .Register(registry);
  const prometheus::Histogram::BucketBoundaries buckets(
      kOperationSecondsBuckets.begin(), kOperationSecondsBuckets.end());
  for (const OpSpec& spec : OpTable()) {
    const std::string& op = OperationName(spec.op_case);
    if (static_cast<int>(spec.op_case) >= OperationTimings::kOpCases) {
      return absl::InternalError(
          absl::StrCat("operation '", op, "' has no histogram slot (oneof ",
                       "field number ", spec.op_case, ")"));
    }
    metrics->operation_seconds_[spec.op_case] =
        &seconds.Add({{"op", op}}, buckets);
  }
  auto& sessions = prometheus::BuildGauge()
                       .Name("posewire_active_sessions")
                       .Help("Streaming sessions open now")
                       .Register(registry);
  metrics->active_sessions_ = &sessions.Add({});

  if (!listen.empty()) {
    try {
      metrics->exposer_ = std::make_unique<prometheus::Exposer>(listen);
    } catch (const std::exception& e) {
      return absl::UnavailableError(
          absl::StrCat("--metrics_listen: cannot serve metrics on ", listen,
                       ": ", e.what()));
    }
    metrics->exposer_->RegisterCollectable(metrics->registry_);
    const std::vector<int> ports = metrics->exposer_->GetListeningPorts();
    metrics->port_ = ports.empty() ? 0 : ports.front();
  }
  return metrics;
}

void Metrics::CountCall(absl::string_view rpc, absl::StatusCode code) {
  auto it = calls_.find(rpc);
  const int index = static_cast<int>(code);
  if (it == calls_.end() || index < 0 || index >= kCodes) return;
  it->second[index]->Increment();
}

std::string Metrics::CallSummary() const {
  std::vector<std::string> rpcs;
  for (const auto& entry : calls_) rpcs.push_back(entry.first);
  std::sort(rpcs.begin(), rpcs.end());
  std::vector<std::string> parts;
  for (const std::string& rpc : rpcs) {
    const auto& by_code = calls_.at(rpc);
    for (int code = 0; code < kCodes; ++code) {
      const double count = by_code[code]->Value();
      if (count == 0) continue;
      parts.push_back(absl::StrCat(
          rpc, " ",
          absl::StatusCodeToString(static_cast<absl::StatusCode>(code)), " ",
          static_cast<int64_t>(count)));
    }
  }
  return parts.empty() ? "none" : absl::StrJoin(parts, "; ");
}

void Metrics::CountFrame(int characters, int errors) {
  frames_->Increment();
  character_frames_->Increment(characters - errors);
  character_errors_->Increment(errors);
}

void Metrics::AddTimings(const OperationTimings& timings) {
  for (int op_case = 0; op_case < OperationTimings::kOpCases; ++op_case) {
    prometheus::Histogram* histogram = operation_seconds_[op_case];
    if (!timings.seen(op_case) || histogram == nullptr) continue;
    const OperationTimings::Buckets& counts = timings.counts(op_case);
    histogram->ObserveMultiple(
        std::vector<double>(counts.begin(), counts.end()),
        timings.sum(op_case));
  }
}

}  // namespace posewire::server
