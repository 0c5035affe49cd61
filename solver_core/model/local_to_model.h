// Conversions between local and model-space poses.
//
// LocalToModelJob is forward kinematics, from a local pose (`input`) to a
// model-space one (`output`): model[j] = model[parent(j)] * local[j], in one
// pass over the topologically ordered joints, optionally
// restricted to the subtree under one joint (IK solvers change a few joints
// and only need their descendants refreshed). ModelToLocalJob is its inverse
// (local = inverse(parent model) * model).
#ifndef POSEWIRE_SOLVER_CORE_MODEL_LOCAL_TO_MODEL_H_
#define POSEWIRE_SOLVER_CORE_MODEL_LOCAL_TO_MODEL_H_

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"

namespace posewire {

struct LocalToModelJob {
  // Inputs.
  const Skeleton* skeleton = nullptr;
  // The local pose, one transform per joint.
  absl::Span<const Transform> input;
  // Transform of the skeleton's root space (the character's placement).
  Transform root = Transform::Identity();
  // When >= 0, only `from` and its descendants are recomputed; every other
  // entry of `output` must already hold valid model-space transforms (the
  // parent of `from` is read from it).
  int from = -1;

  // Output: the model-space pose, one transform per joint, in memory of its
  // own (not overlapping `input`: a partial update reads a parent's model
  // transform from it).
  absl::Span<Transform> output;

  // Checks sizes, that `output` and `input` do not overlap, `from` range and
  // that every local transform is finite with a unit rotation; for a partial
  // update, also the model transform of the parent of `from`, which is read.
  absl::Status Validate() const;
  // Validates, then computes `output`.
  absl::Status Run() const;
  // Computes `output` without validating; for solvers that already validated
  // their inputs and call this in inner loops.
  void RunUnchecked() const;
};

struct ModelToLocalJob {
  // Inputs.
  const Skeleton* skeleton = nullptr;
  // The model-space pose, one transform per joint.
  absl::Span<const Transform> input;
  // Transform of the root space `input` is expressed in.
  Transform root = Transform::Identity();

  // Output: the local pose, one transform per joint, in memory of its own
  // (not overlapping `input`: each joint reads its parent's model transform
  // after the parent is converted).
  absl::Span<Transform> output;

  // Checks sizes, that `output` and `input` do not overlap, finiteness, unit
  // rotations and that no joint that is a parent has a zero scale component
  // (its children's local translation would be undefined).
  absl::Status Validate() const;
  absl::Status Run() const;
  void RunUnchecked() const;
};

// The model-space transform of `joint`'s parent, or `root` when `joint` is a
// root: forward kinematics along the joint's ancestors only, root first, each
// step the CombineTo of LocalToModelJob, so the result is bit for bit the
// entry LocalToModelJob (with the same `root`) writes for the parent. For
// solvers that read one joint's frame (TwoBoneIkJob::parent_model,
// AimIkJob::parent_model) without paying for the whole pose. Not validated:
// `joint` must be in range and `local` hold one transform per joint.
Transform ParentModelTransformOrRoot(
    const Skeleton& skeleton, absl::Span<const Transform> local, int joint,
    const Transform& root = Transform::Identity());

// ValidateTransform for a transform from ParentModelTransformOrRoot: the
// error names `field` and the parent, e.g. "two_bone_ik.parent_model[3] 'hip':
// ...", or the root space when `joint` is a root, as LocalToModelJob names
// its root ("...[0] 'root space': ...").
absl::Status ValidateParentModel(const Skeleton& skeleton,
                                 const Transform& parent_model, int joint,
                                 absl::string_view field);

// The model-space transform of `joint` itself, bit for bit LocalToModelJob's
// model[joint]; the same preconditions.
Transform JointModelTransform(const Skeleton& skeleton,
                              absl::Span<const Transform> local, int joint,
                              const Transform& root = Transform::Identity());

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_MODEL_LOCAL_TO_MODEL_H_
