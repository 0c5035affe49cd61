// What both consumer programs do with a clip: sample two frames half a
// second apart and move the left leg of the first so its ankle reaches
// where the second frame has it, with the installed solver core.
#ifndef POSEWIRE_CONSUMER_LEFT_LEG_H_
#define POSEWIRE_CONSUMER_LEFT_LEG_H_

#include <vector>

#include "solver_core/analytic_ik/two_bone_ik.h"
#include "solver_core/io/bvh_reader.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/pose_ops/sampling_job.h"

namespace consumer {

// The local pose of `asset`'s first clip at `time` seconds.
inline absl::StatusOr<std::vector<posewire::Transform>> Sample(
    const posewire::ImportedAsset& asset, float time) {
  std::vector<posewire::Transform> pose(asset.skeleton.num_joints());
  const posewire::SamplingJob job = {
      .skeleton = &asset.skeleton,
      .clip = &asset.clips.front(),
      .time = time,
      .mode = posewire::PlaybackMode::kClamp,
      .rotation_interpolation = posewire::RotationInterpolation::kNlerp,
      .clip_validated = true,
      .cursor = nullptr,
      .output = absl::MakeSpan(pose),
  };
  if (absl::Status status = job.Run(); !status.ok()) return status;
  return pose;
}

// The model-space pose of `local`.
inline absl::StatusOr<std::vector<posewire::Transform>> ModelPose(
    const posewire::Skeleton& skeleton,
    const std::vector<posewire::Transform>& local) {
  std::vector<posewire::Transform> model(skeleton.num_joints());
  posewire::LocalToModelJob job;
  job.skeleton = &skeleton;
  job.input = local;
  job.output = absl::MakeSpan(model);
  if (absl::Status status = job.Run(); !status.ok()) return status;
  return model;
}

struct LeftLegSolve {
  std::vector<posewire::Transform> input;   // the clip at 0 s
  Eigen::Vector3f target;                   // the ankle at 0.5 s, model space
  float distance_before = 0.0f;             // ankle to target at 0 s
  std::vector<posewire::Transform> solved;  // the two-bone answer
  posewire::TwoBoneIkResult result;
};

inline absl::StatusOr<LeftLegSolve> SolveLeftLeg(
    const posewire::ImportedAsset& asset) {
  if (asset.clips.empty()) return absl::NotFoundError("no clip");
  const posewire::Skeleton& skeleton = asset.skeleton;
  const int hip = skeleton.FindJoint("LeftHip");
  const int knee = skeleton.FindJoint("LeftKnee");
  const int ankle = skeleton.FindJoint("LeftAnkle");
  if (hip < 0 || knee < 0 || ankle < 0) {
    return absl::NotFoundError("no LeftHip, LeftKnee or LeftAnkle");
  }
  absl::StatusOr<std::vector<posewire::Transform>> now = Sample(asset, 0.0f);
  if (!now.ok()) return now.status();
  absl::StatusOr<std::vector<posewire::Transform>> later = Sample(asset, 0.5f);
  if (!later.ok()) return later.status();
  absl::StatusOr<std::vector<posewire::Transform>> now_model =
      ModelPose(skeleton, *now);
  if (!now_model.ok()) return now_model.status();
  absl::StatusOr<std::vector<posewire::Transform>> later_model =
      ModelPose(skeleton, *later);
  if (!later_model.ok()) return later_model.status();

  LeftLegSolve out;
  out.input = *now;
  out.target = (*later_model)[ankle].translation;
  out.distance_before = ((*now_model)[ankle].translation - out.target).norm();
  out.solved.resize(skeleton.num_joints());
  // Only the required fields: the chain, the target and the buffers.
  posewire::TwoBoneIkJob job;
  job.skeleton = &skeleton;
  job.input = out.input;
  job.parent_model = (*now_model)[skeleton.parent(hip)];
  job.start_joint = hip;
  job.mid_joint = knee;
  job.end_joint = ankle;
  job.target = out.target;
  job.output = absl::MakeSpan(out.solved);
  job.result = &out.result;
  if (absl::Status status = job.Run(); !status.ok()) return status;
  return out;
}

}  // namespace consumer

#endif  // POSEWIRE_CONSUMER_LEFT_LEG_H_
