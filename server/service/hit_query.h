// A HitQuery's rays and spheres against characters already rewound: the
// part of a query that is the same wherever the poses come from (a
// Session's history, or poses sent in a request). Rays and spheres are in
// world space; each character's rewound model pose is placed by its root
// (Combine(root, model[j]) per joint), then its hitboxes on that, once per
// query, and every ray and sphere reads the placed hitboxes
// (solver_core/referee/hitboxes.h).
#ifndef POSEWIRE_SERVER_SERVICE_HIT_QUERY_H_
#define POSEWIRE_SERVER_SERVICE_HIT_QUERY_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "posewire/v1/posewire.pb.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/referee/hitboxes.h"

namespace posewire::server {

// One target of a query: who it is, and buffers its pose goes through (kept
// by the caller between queries so they are not allocated each time).
struct HitTargetPose {
  const std::string* character_id = nullptr;
  const Skeleton* skeleton = nullptr;
  absl::Span<const Hitbox> hitboxes = {};
  // Filled by the caller: the rewound model pose and root.
  ModelPose model;
  Transform root;
  // Filled by AnswerHitQuery.
  ModelPose world;
  std::vector<PlacedHitbox> placed;
  HitboxBound bound;
};

// Counts and the rays' and spheres' values, checked before any character is
// looked up: at most `max_queries` rays and spheres together
// (RESOURCE_EXHAUSTED), finite origins and centres, finite non-zero
// directions, max_distance and radius finite and >= 0 (INVALID_ARGUMENT),
// each naming "query.rays[i].<field>". A query with no target is refused.
absl::Status CheckHitQuery(const v1::HitQuery& query, int max_queries,
                           int max_targets);

// Places each target and answers every ray and sphere into `result` (and
// the poses when asked). The targets' poses must be finite (recorded
// solves are); a pose that placed a hitbox at a non-finite point is
// INVALID_ARGUMENT naming the target.
absl::Status AnswerHitQuery(const v1::HitQuery& query,
                            absl::Span<HitTargetPose> targets,
                            v1::QueryResult* result);

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_SERVICE_HIT_QUERY_H_
