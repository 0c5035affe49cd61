#include "solver_core/model/local_to_model.h"

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "solver_core/model/internal/simd_lanes_avx2.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/quaternion_math.h"
#include "solver_core/model/simd_level.h"

namespace posewire {
namespace {

absl::Status ValidateRoot(const Transform& root, absl::string_view field) {
  return ValidateTransform(root, field, 0, "root space");
}

#if POSEWIRE_AVX2_KERNELS
// CombineTo (transform.h) for two joints of one level at once, one joint per
// 128-bit half of each register (simd_lanes_avx2.h's row operations): each
// half performs exactly CombineTo's four-lane operations in the same order
// and gets the same bits, in a pass half the length of the SSE one.
// Compiled per function for AVX2; called only when ActiveSimdLevel() is
// kAvx2.

namespace avx2 {

namespace L8 = lanes_avx2;

// Row `offset` (0 translation, 4 rotation, 8 scale) of transforms a and b.
POSEWIRE_AVX2_INLINE L8::F8 LoadRows(const Transform& a, const Transform& b,
                                     int offset) {
  return L8::LoadHalves(reinterpret_cast<const float*>(&a) + offset,
                        reinterpret_cast<const float*>(&b) + offset);
}

POSEWIRE_AVX2_INLINE void StoreRows(L8::F8 v, Transform* a, Transform* b,
                                    int offset) {
  L8::StoreHalves(reinterpret_cast<float*>(a) + offset,
                  reinterpret_cast<float*>(b) + offset, v);
}

// CombineTo(parent_a, child_a, out_a) and the same for b.
POSEWIRE_AVX2_INLINE void CombineTwo(const Transform& parent_a,
                                     const Transform& parent_b,
                                     const Transform& child_a,
                                     const Transform& child_b, Transform* out_a,
                                     Transform* out_b) {
  const L8::F8 ps = L8::KeepXyz(LoadRows(parent_a, parent_b, 8));
  const L8::F8 pq = LoadRows(parent_a, parent_b, 4);
  const L8::F8 t =
      L8::KeepXyz(LoadRows(parent_a, parent_b, 0)) +
      L8::RotateRow(pq, ps * L8::KeepXyz(LoadRows(child_a, child_b, 0)));
  const L8::F8 q = L8::MultiplyRows(pq, LoadRows(child_a, child_b, 4));
  const L8::F8 s = ps * L8::KeepXyz(LoadRows(child_a, child_b, 8));
  StoreRows(t, out_a, out_b, 0);
  StoreRows(q, out_a, out_b, 4);
  StoreRows(s, out_a, out_b, 8);
}

// The whole pose in level order, two joints of one level at a time (a
// level of odd size ends with one joint done alone, by CombineTo).
POSEWIRE_AVX2_FUNCTION void LevelOrderTwoAtATime(const Skeleton& skel,
                                                 const Transform& root,
                                                 const Transform* in,
                                                 Transform* out) {
  const absl::Span<const int> order = skel.level_order();
  const int* parents = skel.parents().data();
  const size_t n = order.size();
  size_t i = 0;
  while (i < n) {
    const int a = order[i];
    const int pa = parents[a];
    const Transform& parent_a = pa == kNoParent ? root : out[pa];
    if (i + 1 < n && skel.Depth(order[i + 1]) == skel.Depth(a)) {
      const int b = order[i + 1];
      const int pb = parents[b];
      CombineTwo(parent_a, pb == kNoParent ? root : out[pb], in[a], in[b],
                 out + a, out + b);
      i += 2;
    } else {
      CombineTo(parent_a, in[a], out + a);
      i += 1;
    }
  }
}

}  // namespace avx2
#endif  // POSEWIRE_AVX2_KERNELS

}  // namespace

absl::Status LocalToModelJob::Validate() const {
  if (skeleton == nullptr) {
    return absl::InvalidArgumentError("local_to_model.skeleton: not set");
  }
  if (static_cast<int>(output.size()) != skeleton->num_joints()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "local_to_model.output: ", output.size(),
        " transforms for a skeleton of ", skeleton->num_joints(), " joints"));
  }
  if (Overlap(output, input)) {
    return absl::InvalidArgumentError(
        "local_to_model.output: shares memory with local_to_model.input; give "
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
  if (absl::Status s = CheckPose(*skeleton, input, "local_to_model.input");
      !s.ok()) {
    return s;
  }
  // A partial update reads the parent of `from` out of `output`; a stale NaN
  // or garbage rotation there would silently poison the whole subtree.
  if (from >= 0) {
    const int p = skeleton->parent(from);
    if (p != kNoParent) {
      return ValidateTransform(output[p], "local_to_model.output", p,
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
  const Transform* in = input.data();
  Transform* out = output.data();
  if (from < 0) {
    // The whole pose: no subtree test, one select for roots, and each joint
    // a branch-free CombineTo (transform.h) whose only serial dependency is
    // on its parent's result. Level by level, so joints of different chains
    // overlap (each joint's arithmetic is the same in any parents-first
    // order, so the bits are too), and with AVX2 two joints of a level at
    // once.
#if POSEWIRE_AVX2_KERNELS
    if constexpr (transform_internal::kRowLayout) {
      if (ActiveSimdLevel() == SimdLevel::kAvx2) {
        avx2::LevelOrderTwoAtATime(skel, root, in, out);
        return;
      }
    }
#endif
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
  if (static_cast<int>(output.size()) != skeleton->num_joints()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model_to_local.output: ", output.size(),
        " transforms for a skeleton of ", skeleton->num_joints(), " joints"));
  }
  if (Overlap(output, input)) {
    return absl::InvalidArgumentError(
        "model_to_local.output: shares memory with model_to_local.input (each "
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
  if (absl::Status s = ValidatePose(*skeleton, input, "model_to_local.input");
      !s.ok()) {
    return s;
  }
  for (int j = 0; j < skeleton->num_joints(); ++j) {
    if (!skeleton->children(j).empty() &&
        input[j].scale.cwiseAbs().minCoeff() == 0.0f) {
      return absl::InvalidArgumentError(absl::StrCat(
          "model_to_local.input[", j, "] '", skeleton->joint_name(j),
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
    output[j] = LocalFromModel(p == kNoParent ? root : input[p], input[j]);
  }
}

Transform ParentModelTransformOrRoot(const Skeleton& skeleton,
                                     absl::Span<const Transform> local,
                                     int joint, const Transform& root) {
  // The ancestors, nearest first; skeletons are rarely deeper than this.
  absl::InlinedVector<int, 32> ancestors;
  for (int p = skeleton.parent(joint); p != kNoParent; p = skeleton.parent(p)) {
    ancestors.push_back(p);
  }
  Transform model = root;
  for (auto it = ancestors.rbegin(); it != ancestors.rend(); ++it) {
    CombineTo(model, local[*it], &model);
  }
  return model;
}

absl::Status ValidateParentModel(const Skeleton& skeleton,
                                 const Transform& parent_model, int joint,
                                 absl::string_view field) {
  const int parent = skeleton.parent(joint);
  if (parent == kNoParent) return ValidateRoot(parent_model, field);
  return ValidateTransform(parent_model, field, parent,
                           skeleton.joint_name(parent));
}

Transform JointModelTransform(const Skeleton& skeleton,
                              absl::Span<const Transform> local, int joint,
                              const Transform& root) {
  Transform model = ParentModelTransformOrRoot(skeleton, local, joint, root);
  CombineTo(model, local[joint], &model);
  return model;
}

}  // namespace posewire
