// Pipeline handlers for the chain IK operations (two-bone, aim, CCD, FABRIK
// and FABRIK trees): wire parameters -> solver-core jobs -> results.
#ifndef POSEWIRE_SERVER_IK_OPS_H_
#define POSEWIRE_SERVER_IK_OPS_H_

#include <string>

#include "absl/status/status.h"
#include "posewire/v1/operations.pb.h"
#include "posewire/v1/posewire.pb.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/skeleton.h"

namespace posewire::server {

// What every IK handler reads and writes.
struct IkOpContext {
  const Skeleton& skeleton;
  // Prefix for error messages, e.g. "characters[0].ops[2].ccd_ik".
  const std::string& field;
  int max_iterations;  // the server's limit
  LocalPose& pose;     // in and out
  v1::OperationResult& result;
  // This frame's new target (and bend goal) for the op, or null; checked
  // by IndexOpUpdates (pipeline.h).
  const v1::OpUpdate* update = nullptr;
};

absl::Status RunTwoBoneIk(IkOpContext& ctx, const v1::TwoBoneIkOp& op);
absl::Status RunAimIk(IkOpContext& ctx, const v1::AimIkOp& op);
absl::Status RunCcdIk(IkOpContext& ctx, const v1::CcdIkOp& op);
absl::Status RunFabrikIk(IkOpContext& ctx, const v1::FabrikIkOp& op);
absl::Status RunFabrikTreeIk(IkOpContext& ctx, const v1::FabrikTreeIkOp& op);
absl::Status RunFullBodyCcd(IkOpContext& ctx, const v1::FullBodyCcdOp& op);

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_IK_OPS_H_
