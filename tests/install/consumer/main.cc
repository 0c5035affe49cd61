// A program outside posewire's tree that links the installed solver core
// (find_package(posewire) or pkg-config posewire-core): it reads a BVH clip,
// samples two frames half a second apart, and moves the left leg of the
// first so its ankle reaches where the second frame has it.
//
//   posewire_consumer CLIP.bvh
//
// Prints the distance before and after the solve; exits 1 on any error.
#include <cstdio>

#include "solver_core/analytic_ik/two_bone_ik.h"
#include "solver_core/io/bvh_reader.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/pose_ops/sampling_job.h"

namespace {

// The local pose of `asset`'s first clip at `time` seconds.
absl::StatusOr<std::vector<posewire::Transform>> Sample(
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
absl::StatusOr<std::vector<posewire::Transform>> ModelPose(
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

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "posewire_consumer: %s\n", status.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: posewire_consumer CLIP.bvh\n");
    return 2;
  }
  absl::StatusOr<posewire::ImportedAsset> asset =
      posewire::ReadBvhFile(argv[1]);
  if (!asset.ok()) return Fail(asset.status());
  if (asset->clips.empty()) return Fail(absl::NotFoundError("no clip"));
  const posewire::Skeleton& skeleton = asset->skeleton;
  const int hip = skeleton.FindJoint("LeftHip");
  const int knee = skeleton.FindJoint("LeftKnee");
  const int ankle = skeleton.FindJoint("LeftAnkle");
  if (hip < 0 || knee < 0 || ankle < 0) {
    return Fail(absl::NotFoundError("no LeftHip, LeftKnee or LeftAnkle"));
  }

  absl::StatusOr<std::vector<posewire::Transform>> now = Sample(*asset, 0.0f);
  absl::StatusOr<std::vector<posewire::Transform>> later = Sample(*asset, 0.5f);
  if (!now.ok()) return Fail(now.status());
  if (!later.ok()) return Fail(later.status());
  absl::StatusOr<std::vector<posewire::Transform>> now_model =
      ModelPose(skeleton, *now);
  absl::StatusOr<std::vector<posewire::Transform>> later_model =
      ModelPose(skeleton, *later);
  if (!now_model.ok()) return Fail(now_model.status());
  if (!later_model.ok()) return Fail(later_model.status());

  // Only the required fields: the chain, the target and the buffers.
  std::vector<posewire::Transform> solved(skeleton.num_joints());
  posewire::TwoBoneIkResult result;
  posewire::TwoBoneIkJob job;
  job.skeleton = &skeleton;
  job.input = *now;
  job.parent_model = (*now_model)[skeleton.parent(hip)];
  job.start_joint = hip;
  job.mid_joint = knee;
  job.end_joint = ankle;
  job.target = (*later_model)[ankle].translation;
  job.output = absl::MakeSpan(solved);
  job.result = &result;
  if (absl::Status status = job.Run(); !status.ok()) return Fail(status);

  const float before = ((*now_model)[ankle].translation - job.target).norm();
  std::printf(
      "left ankle to its position 0.5 s later: %.4f before, %.6f "
      "after (reached: %s)\n",
      before, result.error, result.reached ? "yes" : "no");
  return 0;
}
