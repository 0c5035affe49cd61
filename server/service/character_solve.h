// One character of one request or frame, solved the same way for the unary
// Solve and for a Session: its pose and placement converted, its compiled
// plan run with this frame's op updates, its answer written.
#ifndef POSEWIRE_SERVER_SERVICE_CHARACTER_SOLVE_H_
#define POSEWIRE_SERVER_SERVICE_CHARACTER_SOLVE_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "posewire/v1/operations.pb.h"
#include "posewire/v1/posewire.pb.h"
#include "posewire/v1/types.pb.h"
#include "server/ops/clip_library.h"
#include "server/ops/op.h"
#include "server/ops/op_timings.h"
#include "server/ops/plan.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/skeleton.h"

namespace posewire::server {

// What solving one character reads.
struct CharacterInputs {
  const Skeleton* skeleton = nullptr;
  ClipLibrary* clips = nullptr;
  const Plan* plan = nullptr;
  const v1::Pose* pose = nullptr;
  const v1::Transform* root = nullptr;
  float dt = 0.0f;
  bool want_model_pose = false;
  // This frame's op updates, by op (IndexOpUpdates); empty for none.
  absl::Span<const v1::OpUpdate* const> updates;
  // Prefix of every error, e.g. "characters[2]" or "frame.characters[0]".
  absl::string_view field;
  // Optional: gathers each op's wall time.
  OperationTimings* timings = nullptr;
  // Optional: records what the frame changes in the state (StateUndo).
  StateUndo* undo = nullptr;
};

// Where the answer goes.
struct CharacterOutputs {
  v1::Pose* pose = nullptr;
  // Only when the character asks for it (null otherwise: an empty message
  // would still be sent).
  v1::Pose* model_pose = nullptr;
  google::protobuf::RepeatedPtrField<v1::OperationResult>* ops = nullptr;
};

// Buffers kept by a caller that solves many characters, so that a
// character's poses are not heap allocations each time.
struct CharacterScratch {
  LocalPose pose;
  ModelPose model;
  // The character's placement, as the frame sent it.
  Transform root;
};

// Solves one character, updating `state` in place. On an error the outputs
// and `state` are partly written: a caller that must keep the state as it
// was passes an undo log and rolls it back.
absl::Status SolveCharacter(const CharacterInputs& in, CharacterState& state,
                            CharacterScratch& scratch,
                            const CharacterOutputs& out);

// Computes the model-space pose of `pose`, checks it is finite and writes
// it to `proto`. Finite local transforms can still overflow float once
// composed down a chain (huge translations or scales): that is an
// INVALID_ARGUMENT naming the first joint it happens at, never an OK answer
// carrying inf or NaN. `field` prefixes the message, e.g. "characters[0]".
absl::Status ModelPoseToProto(const Skeleton& skeleton, const LocalPose& pose,
                              absl::string_view field, ModelPose& scratch,
                              v1::Pose* proto);

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_SERVICE_CHARACTER_SOLVE_H_
