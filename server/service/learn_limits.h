// The unary LearnLimits: joint limits learnt from clips, returned as wire
// limits a client keeps and sends back.
#ifndef POSEWIRE_SERVER_SERVICE_LEARN_LIMITS_H_
#define POSEWIRE_SERVER_SERVICE_LEARN_LIMITS_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "posewire/v1/posewire.pb.h"
#include "server/service/server_config.h"
#include "server/service/skeleton_cache.h"
#include "solver_core/model/clip.h"
#include "solver_core/model/skeleton.h"

namespace posewire::server {

// Learns `request`'s limits into `response`. INVALID_ARGUMENT naming the
// field for a bad skeleton, clip or option; NOT_FOUND for a skeleton hash
// the server does not have.
// Learns limits of `skeleton` from `clips` (at least one, already checked
// against it) into `response`, all but its skeleton_hash. Option errors
// are INVALID_ARGUMENT starting with `options_field` (e.g.
// "register_limits.learn_options"). The unary LearnLimits and a Session's
// RegisterLimits share it, so both give the same limits.
absl::Status LearnLimitsFromClips(const Skeleton& skeleton,
                                  absl::Span<const Clip> clips,
                                  const v1::LearnLimitsOptions& options,
                                  absl::string_view options_field,
                                  v1::LearnLimitsResponse* response);

absl::Status LearnLimits(const v1::LearnLimitsRequest& request,
                         const ServerConfig& config, SkeletonCache& skeletons,
                         v1::LearnLimitsResponse* response);

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_SERVICE_LEARN_LIMITS_H_
