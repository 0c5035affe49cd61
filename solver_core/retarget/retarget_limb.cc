#include "solver_core/retarget/retarget_limb.h"

#include <array>
#include <utility>

#include "absl/strings/str_cat.h"
#include "solver_core/analytic_ik/two_bone_ik.h"
#include "solver_core/model/local_to_model.h"

namespace posewire::retarget_internal {

using transform_internal::Multiply;

std::vector<Transform> ModelOf(const Skeleton& s,
                               absl::Span<const Transform> local) {
  std::vector<Transform> model(s.num_joints());
  for (int j = 0; j < s.num_joints(); ++j) {
    const int p = s.parent(j);
    model[j] = p == kNoParent ? local[j] : Combine(model[p], local[j]);
  }
  return model;
}

Transform Relative(const Skeleton& s, absl::Span<const Transform> local,
                   int ancestor, int joint) {
  std::vector<int> path;
  for (int j = joint; j != ancestor; j = s.parent(j)) path.push_back(j);
  Transform out = Transform::Identity();
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    out = Combine(out, local[*it]);
  }
  return out;
}

absl::StatusOr<RetargetLimb> MakeRetargetLimb(const RetargetMap& map,
                                              const Skeleton& source,
                                              const Skeleton& target,
                                              absl::string_view chain_name,
                                              const LimbWords& words) {
  if (source.num_joints() != map.source_joints() ||
      target.num_joints() != map.target_joints()) {
    return absl::InvalidArgumentError(absl::StrCat(
        words.pass, ": the skeletons are not the map's (joint counts differ)"));
  }
  const RetargetChain* chain = nullptr;
  for (const RetargetChain& c : map.chains()) {
    if (c.name == chain_name) chain = &c;
  }
  if (chain == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(words.pass, ": the mapping has no '", chain_name,
                     "' chain; the ", words.pass, " pass needs both ",
                     words.limbs, " (name them so in an explicit mapping)"));
  }
  RetargetLimb limb;
  if (chain->source.size() >= 3) {
    limb.source_end = chain->source[2];
  } else if (chain->source_end >= 0) {
    limb.source_end = chain->source_end;
  } else {
    return absl::FailedPreconditionError(absl::StrCat(
        words.pass, ": the source's ", chain_name, " chain has no ", words.end,
        " joint (", words.upper, ", ", words.lower, ", ", words.end, ")"));
  }
  const int nt = static_cast<int>(chain->target.size());
  if (nt >= 3) {
    limb.upper = chain->target[0];
    limb.lower = chain->target[nt - 2];
    limb.end = chain->target[nt - 1];
    limb.end_offset =
        Relative(target, target.rest_pose(), limb.lower, limb.end).translation;
  } else if (nt == 2 && chain->target_end.has_value()) {
    limb.upper = chain->target[0];
    limb.lower = chain->target[1];
    limb.end_offset = *chain->target_end;
  } else {
    return absl::FailedPreconditionError(absl::StrCat(
        words.pass, ": the target's ", chain_name, " chain has no ", words.end,
        " (a joint or tip below the ", words.lower, ")"));
  }
  // The chain as TwoBoneIkJob sees it: upper, lower (through any joints
  // between), end point.
  SkeletonDesc desc;
  desc.joint_names = {"upper", "lower", "end"};
  desc.parents = {kNoParent, 0, 1};
  desc.rest_pose = {
      target.rest_pose()[limb.upper],
      Relative(target, target.rest_pose(), limb.upper, limb.lower),
      Transform::Identity()};
  desc.rest_pose[2].translation = limb.end_offset;
  absl::StatusOr<Skeleton> ik = Skeleton::Create(std::move(desc));
  if (!ik.ok()) return ik.status();
  limb.ik = *std::move(ik);

  const std::vector<Transform> src_rest = ModelOf(source, source.rest_pose());
  const std::vector<Transform> tgt_rest = ModelOf(target, target.rest_pose());
  const Eigen::Vector3f s0 = src_rest[chain->source[0]].translation;
  const Eigen::Vector3f s1 = src_rest[chain->source[1]].translation;
  const Eigen::Vector3f s2 = src_rest[limb.source_end].translation;
  limb.source_length = (s1 - s0).norm() + (s2 - s1).norm();
  const Eigen::Vector3f t0 = tgt_rest[limb.upper].translation;
  const Eigen::Vector3f t1 = tgt_rest[limb.lower].translation;
  const Eigen::Vector3f t2 =
      tgt_rest[limb.lower].TransformPoint(limb.end_offset);
  limb.target_length = (t1 - t0).norm() + (t2 - t1).norm();
  return limb;
}

absl::Status ValidatePassInputs(const RetargetMap* map,
                                const Skeleton* source_skeleton,
                                const Skeleton* target_skeleton,
                                absl::Span<const Transform> source,
                                absl::Span<const Transform> input,
                                absl::Span<Transform> output) {
  RetargetJob transfer;
  transfer.map = map;
  transfer.source_skeleton = source_skeleton;
  transfer.target_skeleton = target_skeleton;
  transfer.source = source;
  transfer.input = input;
  transfer.output = output;
  return transfer.Validate();
}

absl::Status SolveRetargetLimb(const RetargetLimb& limb,
                               const Skeleton& skeleton,
                               const Eigen::Vector3f& goal,
                               const Eigen::Quaternionf& end_model_rotation,
                               absl::Span<Transform> pose) {
  // The limb as a three-joint chain, solved, then written back.
  const Transform lower_local =
      Relative(skeleton, pose, limb.upper, limb.lower);
  std::array<Transform, 3> chain = {pose[limb.upper], lower_local,
                                    Transform::Identity()};
  chain[2].translation = limb.end_offset;
  std::array<Transform, 3> solved = chain;
  TwoBoneIkJob ik;
  ik.skeleton = &limb.ik;
  ik.input = chain;
  ik.parent_model = ParentModelTransformOrRoot(skeleton, pose, limb.upper);
  ik.start_joint = 0;
  ik.mid_joint = 1;
  ik.end_joint = 2;
  ik.target = goal;
  ik.pole_vector = Eigen::Vector3f::Zero();
  ik.output = absl::MakeSpan(solved);
  if (absl::Status s = ik.Run(); !s.ok()) return s;
  pose[limb.upper].rotation = solved[0].rotation;
  // lower_local = between * lower's own local: keep `between`.
  const int lower_parent = skeleton.parent(limb.lower);
  const Eigen::Quaternionf between =
      lower_parent == limb.upper
          ? Eigen::Quaternionf::Identity()
          : Relative(skeleton, pose, limb.upper, lower_parent).rotation;
  pose[limb.lower].rotation =
      Multiply(between.conjugate(), solved[1].rotation).normalized();
  if (limb.end >= 0) {
    const Transform parent =
        ParentModelTransformOrRoot(skeleton, pose, limb.end);
    pose[limb.end].rotation =
        Multiply(parent.rotation.conjugate(), end_model_rotation).normalized();
  }
  return absl::OkStatus();
}

}  // namespace posewire::retarget_internal
