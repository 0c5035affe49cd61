// Pipeline handler for SpringBonesOp: wire rig and forces -> SpringRig and
// SpringBonesJob, with the rig cached in the character's state so a session
// builds it once, not every frame.
#ifndef POSEWIRE_SERVER_SPRING_OP_H_
#define POSEWIRE_SERVER_SPRING_OP_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "posewire/v1/operations.pb.h"
#include "solver_core/dynamics/dynamics_state.h"
#include "solver_core/dynamics/spring_bones.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/skeleton.h"

namespace posewire::server {

// One simulation's memory: the state, and the rig built from the wire
// description it was last run with (rebuilt when the description changes).
struct SpringSlot {
  std::string rig_key;  // serialized wire rig the cached rig came from
  std::shared_ptr<const SpringRig> rig;
  DynamicsState state;
};

struct SpringOpContext {
  const Skeleton& skeleton;
  const std::string& field;
  int max_substeps;  // the server's iteration limit
  float dt;
  const Transform& component_to_world;
  LocalPose& pose;
  SpringSlot& slot;
  v1::OperationResult& result;
};

absl::Status RunSpringBones(SpringOpContext& ctx, const v1::SpringBonesOp& op);

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_SPRING_OP_H_
