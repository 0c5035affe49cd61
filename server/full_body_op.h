// Pipeline handler for FullBodyBipedIkOp: wire mapping, effectors and limb
// settings -> BipedMapping and FullBodyBipedIkJob.
#ifndef POSEWIRE_SERVER_FULL_BODY_OP_H_
#define POSEWIRE_SERVER_FULL_BODY_OP_H_

#include "absl/status/status.h"
#include "posewire/v1/operations.pb.h"
#include "server/ik_ops.h"

namespace posewire::server {

absl::Status RunFullBodyBipedIk(IkOpContext& ctx,
                                const v1::FullBodyBipedIkOp& op);

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_FULL_BODY_OP_H_
