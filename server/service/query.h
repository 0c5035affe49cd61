// The unary Query: a HitQuery whose characters come with the request (their
// skeletons, hitboxes and recorded frames) instead of from a session.
#ifndef POSEWIRE_SERVER_SERVICE_QUERY_H_
#define POSEWIRE_SERVER_SERVICE_QUERY_H_

#include "absl/status/status.h"
#include "posewire/v1/posewire.pb.h"
#include "server/service/server_config.h"
#include "server/service/skeleton_cache.h"

namespace posewire::server {

// Checks `request` and answers it into `result`. Each character's frames
// become a pose history (PoseHistory::FromProto, as a resumed session's),
// rewound as a session rewinds it, so the answer is the one a Session
// holding those frames gives, bit for bit. Errors name the field:
// INVALID_ARGUMENT for bad values, NOT_FOUND for a target naming no
// character or a skeleton hash the server lacks, OUT_OF_RANGE for a time
// outside a character's frames, RESOURCE_EXHAUSTED past a limit.
absl::Status AnswerQuery(const v1::QueryRequest& request,
                         const ServerConfig& config, SkeletonCache& skeletons,
                         v1::QueryResult* result);

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_SERVICE_QUERY_H_
