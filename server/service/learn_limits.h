// The unary LearnLimits: joint limits learnt from clips, returned as wire
// limits a client keeps and sends back.
#ifndef POSEWIRE_SERVER_SERVICE_LEARN_LIMITS_H_
#define POSEWIRE_SERVER_SERVICE_LEARN_LIMITS_H_

#include "absl/status/status.h"
#include "posewire/v1/posewire.pb.h"
#include "server/service/server_config.h"
#include "server/service/skeleton_cache.h"

namespace posewire::server {

// Learns `request`'s limits into `response`. INVALID_ARGUMENT naming the
// field for a bad skeleton, clip or option; NOT_FOUND for a skeleton hash
// the server does not have.
absl::Status LearnLimits(const v1::LearnLimitsRequest& request,
                         const ServerConfig& config, SkeletonCache& skeletons,
                         v1::LearnLimitsResponse* response);

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_SERVICE_LEARN_LIMITS_H_
