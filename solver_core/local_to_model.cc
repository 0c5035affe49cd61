#include "solver_core/local_to_model.h"

#include "absl/strings/str_cat.h"
#include "solver_core/pose.h"
#include "solver_core/quaternion_math.h"

namespace posewire {
namespace {

absl::Status ValidateRoot(const Transform& root, absl::string_view field) {
  return ValidateTransform(root, field, 0, "root space");
}

}  // namespace

absl::Status LocalToModelJob::Validate() const {
  if (skeleton == nullptr) {
    return absl::InvalidArgumentError("local_to_model.skeleton: not set");
  }
  if (static_cast<int>(model.size()) != skeleton->num_joints()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "local_to_model.model: output has ", model.size(),
        " transforms for a skeleton of ", skeleton->num_joints(), " joints"));
  }
  if (Overlap(model, local)) {
    return absl::InvalidArgumentError(
        "local_to_model.model: shares memory with local_to_model.local; give "
        "the model pose its own memory");
  }
  if (from < -1 || from >= skeleton->num_joints()) {
    return absl::InvalidArgumentError(
        absl::StrCat("local_to_model.from: joint ", from,
                     " is out of range [-1, ", skeleton->num_joints(), ")"));
  }
  if (absl::Status s = ValidateRoot(root, "local_to_model.root"); !s.ok()) {
    return s;
  }
  // One branch-free pass over the pose; the per-joint messages only when it
  // finds something.
  if (absl::Status s = CheckPose(*skeleton, local, "local_to_model.local");
      !s.ok()) {
    return s;
  }
  // A partial update reads the parent of `from` out of `model`; a stale NaN
  // or garbage rotation there would silently poison the whole subtree.
  if (from >= 0) {
    const int p = skeleton->parent(from);
    if (p != kNoParent) {
      return ValidateTransform(model[p], "local_to_model.model", p,
                               skeleton->joint_name(p));
    }
  }
  return absl::OkStatus();
}

absl::Status LocalToModelJob::Run() const {
  if (absl::Status s = Validate(); !s.ok()) return s;
  RunUnchecked();
  return absl::OkStatus();
}

void LocalToModelJob::RunUnchecked() const {
  const Skeleton& skel = *skeleton;
  const int n = skel.num_joints();
  const int* parents = skel.parents().data();
  const Transform* in = local.data();
  Transform* out = model.data();
  if (from < 0) {
    // The whole pose: no subtree test, one select for roots, and each joint
    // a branch-free CombineTo (transform.h) whose only serial dependency is
    // on its parent's result. Level by level, so joints of different chains
    // overlap (each joint's arithmetic is the same in any parents-first
    // order, so the bits are too).
    for (const int j : skel.level_order()) {
      const int p = parents[j];
      CombineTo(p == kNoParent ? root : out[p], in[j], out + j);
    }
    return;
  }
  // Topological order need not be depth-first, so the subtree is not a
  // contiguous range: test each later joint.
  for (int j = from; j < n; ++j) {
    if (!skel.IsInSubtree(from, j)) continue;
    const int p = parents[j];
    CombineTo(p == kNoParent ? root : out[p], in[j], out + j);
  }
}

absl::Status ModelToLocalJob::Validate() const {
  if (skeleton == nullptr) {
    return absl::InvalidArgumentError("model_to_local.skeleton: not set");
  }
  if (static_cast<int>(local.size()) != skeleton->num_joints()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model_to_local.local: output has ", local.size(),
        " transforms for a skeleton of ", skeleton->num_joints(), " joints"));
  }
  if (Overlap(local, model)) {
    return absl::InvalidArgumentError(
        "model_to_local.local: shares memory with model_to_local.model (each "
        "joint reads its parent's model transform after the parent is "
        "converted); give the local pose its own memory");
  }
  if (absl::Status s = ValidateRoot(root, "model_to_local.root"); !s.ok()) {
    return s;
  }
  if (root.scale.cwiseAbs().minCoeff() == 0.0f) {
    return absl::InvalidArgumentError(
        "model_to_local.root: scale has a zero component");
  }
  if (absl::Status s = ValidatePose(*skeleton, model, "model_to_local.model");
      !s.ok()) {
    return s;
  }
  for (int j = 0; j < skeleton->num_joints(); ++j) {
    if (!skeleton->children(j).empty() &&
        model[j].scale.cwiseAbs().minCoeff() == 0.0f) {
      return absl::InvalidArgumentError(absl::StrCat(
          "model_to_local.model[", j, "] '", skeleton->joint_name(j),
          "': scale has a zero component, so its children's local "
          "transforms are undefined"));
    }
  }
  return absl::OkStatus();
}

absl::Status ModelToLocalJob::Run() const {
  if (absl::Status s = Validate(); !s.ok()) return s;
  RunUnchecked();
  return absl::OkStatus();
}

void ModelToLocalJob::RunUnchecked() const {
  const Skeleton& skel = *skeleton;
  for (int j = 0; j < skel.num_joints(); ++j) {
    const int p = skel.parent(j);
    local[j] = LocalFromModel(p == kNoParent ? root : model[p], model[j]);
  }
}

}  // namespace posewire
