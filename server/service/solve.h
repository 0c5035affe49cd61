// The unary Solve: a self-contained batch of characters.
#ifndef POSEWIRE_SERVER_SERVICE_SOLVE_H_
#define POSEWIRE_SERVER_SERVICE_SOLVE_H_

#include <functional>

#include "absl/status/status.h"
#include "posewire/v1/posewire.pb.h"
#include "server/ops/op_timings.h"
#include "server/service/server_config.h"
#include "server/service/skeleton_cache.h"

namespace posewire::server {

// Why a call should stop early: the client cancelled or the deadline passed.
// Returns OK to go on; checked between characters.
using StopCheck = std::function<absl::Status()>;

// Validates and solves `request` into `response`. The first problem stops
// the call: INVALID_ARGUMENT naming the character, field and joint;
// NOT_FOUND for a skeleton hash the server does not have (resend it
// inline); RESOURCE_EXHAUSTED beyond a limit.
// `metrics` (optional) records per-operation times.
absl::Status Solve(const v1::SolveRequest& request, const ServerConfig& config,
                   SkeletonCache& skeletons, const StopCheck& stop,
                   v1::SolveResponse* response,
                   OperationTimingsSink* metrics = nullptr);

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_SERVICE_SOLVE_H_
