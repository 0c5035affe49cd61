// The one table of operations: each op of posewire.v1.Operation is
// registered here once, with the inputs a frame's OpUpdate may change and
// the function that compiles it (its adapter file, e.g. two_bone_ik_op.cc).
// Dispatch, GetInfo's list, op names in messages, metrics and op-update
// checks all read this table, so an op cannot be half-added.
#ifndef POSEWIRE_SERVER_OPS_OP_TABLE_H_
#define POSEWIRE_SERVER_OPS_OP_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "posewire/v1/operations.pb.h"
#include "posewire/v1/posewire.pb.h"
#include "server/ops/op.h"

namespace posewire::server {

// The OpUpdate fields an op takes, as bits of OpSpec::updatable.
enum UpdatableInput : uint32_t {
  kUpdateTarget = 1u << 0,
  kUpdateBendGoal = 1u << 1,
  kUpdateTime = 1u << 2,
  kUpdateWeight = 1u << 3,
  kUpdatePoleVector = 1u << 4,
  kUpdateEndRotation = 1u << 5,
  kUpdateEffectors = 1u << 6,
  kUpdateLayerWeights = 1u << 7,
  kUpdateGravity = 1u << 8,
  kUpdateExternalForce = 1u << 9,
  kUpdateWind = 1u << 10,
  kUpdateColliders = 1u << 11,
  kUpdateGroundSamples = 1u << 12,
  kUpdateClaimed = 1u << 13,
};

// One OpUpdate field: its bit and its name on the wire.
struct UpdateField {
  UpdatableInput input;
  absl::string_view name;
};

// Every OpUpdate field but `op`, in the proto's order.
absl::Span<const UpdateField> UpdateFields();

// The UpdatableInput bits of the fields `update` sets.
uint32_t SetUpdateInputs(const v1::OpUpdate& update);

// A bounded integer field of an op (a count of iterations or steps), as
// GetInfo reports it. A value above `max` is outside the op's contract
// (INVALID_ARGUMENT); when `server_limited`, the server's
// max_solver_iterations lowers the bound, and a value above that is a
// server limit (RESOURCE_EXHAUSTED).
struct FieldRange {
  absl::string_view field;  // inside the op, e.g. "rig.max_substeps"
  int64_t min = 0;
  int64_t max = 0;
  bool server_limited = false;
};

struct OpSpec {
  v1::Operation::OpCase op_case = v1::Operation::OP_NOT_SET;
  uint32_t updatable = 0;  // UpdatableInput bits
  CompiledOp (*compile)(const OpCompileInput& input) = nullptr;
  // Every bounded count the op takes.
  std::vector<FieldRange> ranges;
};

// Every implemented op, in the proto's field order.
absl::Span<const OpSpec> OpTable();

// The entry for `op_case`, or null when this server does not implement it.
const OpSpec* FindOpSpec(v1::Operation::OpCase op_case);

// The op's name: its oneof field's name in posewire.v1.Operation.
const std::string& OperationName(v1::Operation::OpCase op_case);

// The names of OpTable's ops, as GetInfo reports them.
const std::vector<std::string>& SupportedOperations();

// GetInfo's description of every op: its name, the inputs an OpUpdate may
// change, and its bounded fields as a server with `limits` accepts them.
void DescribeOperations(
    const OpLimits& limits,
    google::protobuf::RepeatedPtrField<v1::OperationInfo>* out);

// Each adapter's entry (defined in the adapter's file).
OpSpec SampleClipOpSpec();
OpSpec BlendOpSpec();
OpSpec AdditiveOpSpec();
OpSpec CrossfadeOpSpec();
OpSpec TwoBoneIkOpSpec();
OpSpec AimIkOpSpec();
OpSpec CcdIkOpSpec();
OpSpec FabrikIkOpSpec();
OpSpec FabrikTreeIkOpSpec();
OpSpec FullBodyBipedIkOpSpec();
OpSpec FullBodyCcdOpSpec();
OpSpec SpringBonesOpSpec();
OpSpec ValidateOpSpec();
OpSpec LookAtOpSpec();
OpSpec GroundOpSpec();
OpSpec RetargetOpSpec();
OpSpec PlausibilityOpSpec();

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_OPS_OP_TABLE_H_
