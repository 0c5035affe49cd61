// Hitboxes and query results between the wire (posewire.v1 Hitbox, RayHit)
// and the core's referee types (solver_core/referee/hitboxes.h).
#ifndef POSEWIRE_SERVER_WIRE_HITBOX_CONVERT_H_
#define POSEWIRE_SERVER_WIRE_HITBOX_CONVERT_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "posewire/v1/posewire.pb.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/referee/hitboxes.h"

namespace posewire::server {

// Hitboxes for `skeleton`, each joint named and each checked by the core's
// ValidateHitboxes: errors name "<field>[i].<member>" and the joint. An
// offset with a scale is refused (a hitbox's sizes are its own).
absl::StatusOr<std::vector<Hitbox>> HitboxesFromProto(
    const google::protobuf::RepeatedPtrField<v1::Hitbox>& proto,
    const Skeleton& skeleton, absl::string_view field);

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_WIRE_HITBOX_CONVERT_H_
