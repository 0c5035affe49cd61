// A character's op list compiled for one skeleton, and how a frame runs it.
#ifndef POSEWIRE_SERVER_OPS_PLAN_H_
#define POSEWIRE_SERVER_OPS_PLAN_H_

#include <memory>
#include <optional>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "posewire/v1/operations.pb.h"
#include "posewire/v1/posewire.pb.h"
#include "server/ops/op.h"
#include "server/ops/op_timings.h"

namespace posewire::server {

class Plan {
 public:
  // Compiles `ops` for `skeleton`. Errors name `field` + ".ops[i].<op>":
  // e.g. "register_rig.ops[2].two_bone_ik.mid_joint: ...". An op this
  // server does not know (a newer client's) is UNIMPLEMENTED. `registry`
  // (optional) resolves what ops name by id or hash: other skeletons
  // (retarget's source) and a session's limit sets (plausibility).
  static absl::StatusOr<std::shared_ptr<const Plan>> Compile(
      const Skeleton& skeleton,
      const google::protobuf::RepeatedPtrField<v1::Operation>& ops,
      OpLimits limits, absl::string_view field,
      const RegistryLookup* registry = nullptr);

  int size() const { return static_cast<int>(ops_.size()); }
  v1::Operation::OpCase op_case(int i) const { return cases_[i]; }
  const PreparedOp& op(int i) const { return *ops_[i]; }
  // ".ops[i].<op name>", what op i's field adds to the character's.
  const std::string& field_suffix(int i) const { return suffixes_[i]; }
  // The joints op i may change (PreparedOp::JointsWritten), or null when
  // it may change any joint.
  const std::vector<int>* joints_written(int i) const {
    return written_[i] ? &*written_[i] : nullptr;
  }

 private:
  std::vector<v1::Operation::OpCase> cases_;
  std::vector<std::string> suffixes_;
  std::vector<std::optional<std::vector<int>>> written_;
  std::vector<std::unique_ptr<const PreparedOp>> ops_;
};

// The OpUpdate fields in `inputs` (UpdatableInput bits), e.g.
// "target, weight", or "no updates".
std::string OpUpdateFieldNames(uint32_t inputs);

// Op updates by op index: entry i is op i's update, or null.
using OpUpdatesByOp = absl::InlinedVector<const v1::OpUpdate*, 8>;

// Checks a frame's `updates` against `plan` (index in range, one update per
// op, only inputs the op's table entry lets change, finite values) and
// indexes them by op into `by_op`. Errors name the update after `field`
// (e.g. "frame.characters[0]"): "frame.characters[0].op_updates[1].bend_goal:
// ...".
absl::Status IndexOpUpdates(
    const Plan& plan,
    const google::protobuf::RepeatedPtrField<v1::OpUpdate>& updates,
    absl::string_view field, OpUpdatesByOp& by_op);

// One frame of one character, for RunPlan.
struct PlanFrame {
  const Skeleton* skeleton = nullptr;
  ClipLibrary* clips = nullptr;
  float dt = 0.0f;
  Transform root = Transform::Identity();
  // Set when the pose RunPlan is given is known valid (CheckPose passed):
  // the first op's job then skips that pass.
  bool pose_validated = false;
  // Prefix of error messages, e.g. "characters[2]".
  absl::string_view field;
  // Optional: gathers each op's wall time.
  OperationTimings* timings = nullptr;
  // This frame's update of each op (IndexOpUpdates), or empty for none.
  absl::Span<const v1::OpUpdate* const> updates;
  // Optional: records state changes, for a caller that rolls them back
  // when the plan fails (see StateUndo).
  StateUndo* undo = nullptr;
};

// Runs `plan` on `pose` (in place), updating `state` and appending one
// OperationResult per op to `results`. The first failing op stops it.
absl::Status RunPlan(
    const Plan& plan, const PlanFrame& frame, LocalPose& pose,
    CharacterState& state,
    google::protobuf::RepeatedPtrField<v1::OperationResult>* results);

// Index of the first joint of `pose` with a NaN or infinite component, or -1.
int FirstNonFiniteJoint(absl::Span<const Transform> pose);
// The same over `joints` only, or over the whole pose when `joints` is null.
int FirstNonFiniteJoint(absl::Span<const Transform> pose,
                        const std::vector<int>* joints);
// Whether `joints` of `pose` (every joint when null) pass PoseLooksValid's
// screen: finite, with unit rotations.
bool JointsLookValid(absl::Span<const Transform> pose,
                     const std::vector<int>* joints);

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_OPS_PLAN_H_
