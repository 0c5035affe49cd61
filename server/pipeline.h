// Runs a character's pipeline: the operations of posewire.v1.Operation,
// applied in order to a local pose, on the solver-core jobs.
//
// Shared by the unary Solve (state comes in and goes out on the wire) and
// streaming sessions (state stays in the session). Validation happens op by
// op, before each job runs; the first error stops the pipeline and names the
// operation and field.
#ifndef POSEWIRE_SERVER_PIPELINE_H_
#define POSEWIRE_SERVER_PIPELINE_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "posewire/v1/operations.pb.h"
#include "posewire/v1/posewire.pb.h"
#include "server/clip_library.h"
#include "server/metrics.h"
#include "server/spring_op.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/pose_ops/crossfade.h"

namespace posewire::server {

// The operations this server really implements, by their oneof field names
// in posewire.v1.Operation. GetInfo reports exactly this list.
const std::vector<std::string>& SupportedOperations();

// What a character remembers between frames, keyed by the ops' state_key.
struct CharacterState {
  absl::flat_hash_map<std::string, CrossfadeState> crossfades;
  absl::flat_hash_map<std::string, SpringSlot> springs;

  void Clear() {
    crossfades.clear();
    springs.clear();
  }
};

// Converts wire state into `state`, resolving clip names in `clips`.
absl::Status StateFromProto(
    const google::protobuf::Map<std::string, v1::OperationState>& proto,
    ClipLibrary& clips, CharacterState& state, absl::string_view field);
// Writes `state` to the wire form (clip indices become names).
void StateToProto(
    const CharacterState& state, const ClipLibrary& clips,
    google::protobuf::Map<std::string, v1::OperationState>* proto);

struct PipelineLimits {
  int max_solver_iterations = 1000;
};

struct PipelineInput {
  const Skeleton* skeleton = nullptr;
  ClipLibrary* clips = nullptr;
  const google::protobuf::RepeatedPtrField<v1::Operation>* ops = nullptr;
  // Seconds stateful operations advance by.
  float dt = 0.0f;
  // Component-to-world placement.
  Transform root = Transform::Identity();
  PipelineLimits limits;
  // Prefix for error messages, e.g. "characters[2]".
  absl::string_view field;
  // Optional: gathers each operation's wall time.
  OperationTimings* timings = nullptr;
  // This frame's update of each op, by op index (null: none); empty when the
  // frame has none. Checked beforehand by IndexOpUpdates.
  absl::Span<const v1::OpUpdate* const> updates;
};

// Op updates by op index: entry i is op i's update, or null.
using OpUpdatesByOp = absl::InlinedVector<const v1::OpUpdate*, 8>;

// Checks a frame's `updates` against the `ops` they update (index in range,
// one update per op, only fields the op has, finite values) and indexes
// them by op into `by_op`. Errors name the update, after `field` (e.g.
// "frame.characters[0]"): "frame.characters[0].op_updates[1].bend_goal:
// ...".
absl::Status IndexOpUpdates(
    const google::protobuf::RepeatedPtrField<v1::Operation>& ops,
    const google::protobuf::RepeatedPtrField<v1::OpUpdate>& updates,
    absl::string_view field, OpUpdatesByOp& by_op);

// Applies `input.ops` to `pose` (in place), updating `state` and appending
// one OperationResult per op to `results`.
absl::Status RunPipeline(
    const PipelineInput& input, LocalPose& pose, CharacterState& state,
    google::protobuf::RepeatedPtrField<v1::OperationResult>* results);

// Computes the model-space pose of `pose`, checks it is finite and writes
// it to `proto`. Finite local transforms can still overflow float once
// composed down a chain (huge translations or scales): that is an
// INVALID_ARGUMENT naming the first joint it happens at, never an OK answer
// carrying inf or NaN. `field` prefixes the message, e.g. "characters[0]".
// `scratch` holds the model pose on the way (reused by callers that write
// many characters, so that each is not a heap allocation).
absl::Status ModelPoseToProto(const Skeleton& skeleton, const LocalPose& pose,
                              absl::string_view field, ModelPose& scratch,
                              v1::Pose* proto);

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_PIPELINE_H_
