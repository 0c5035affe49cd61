#include "fuzz/asset_checks.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/pose_ops/sampling_job.h"

namespace posewire::fuzz {
namespace {

// Not a CHECK macro: the library has no logging, and the message must reach
// the fuzzer's output before the abort.
void Fail(absl::string_view what, const absl::Status& status) {
  std::fprintf(stderr, "asset invariant broken: %.*s: %s\n",
               static_cast<int>(what.size()), what.data(),
               std::string(status.message()).c_str());
  std::abort();
}

bool Finite(const Transform& t) {
  return t.translation.allFinite() && t.rotation.coeffs().allFinite() &&
         t.scale.allFinite();
}

}  // namespace

void CheckImportedAsset(const ImportedAsset& asset) {
  const Skeleton& skeleton = asset.skeleton;
  SkeletonDesc desc;
  desc.joint_names.assign(skeleton.joint_names().begin(),
                          skeleton.joint_names().end());
  desc.parents.assign(skeleton.parents().begin(), skeleton.parents().end());
  desc.rest_pose.assign(skeleton.rest_pose().begin(),
                        skeleton.rest_pose().end());
  if (absl::StatusOr<Skeleton> again = Skeleton::Create(std::move(desc));
      !again.ok()) {
    Fail("skeleton", again.status());
  }
  LocalPose pose(skeleton.num_joints());
  for (const Clip& clip : asset.clips) {
    if (absl::Status s = clip.Validate(skeleton); !s.ok()) Fail("clip", s);
    for (float time :
         {0.0f, 0.5f * clip.duration, clip.duration, clip.duration + 1.0f}) {
      SamplingJob job{.skeleton = &skeleton,
                      .clip = &clip,
                      .time = time,
                      .mode = PlaybackMode::kClamp,
                      .clip_validated = true,
                      .output = absl::MakeSpan(pose)};
      if (absl::Status s = job.Run(); !s.ok()) Fail("sampling", s);
      for (const Transform& t : pose) {
        if (!Finite(t)) Fail("sampling", absl::InternalError("non-finite"));
      }
    }
  }
  for (const EndSite& site : asset.end_sites) {
    if (site.joint < 0 || site.joint >= skeleton.num_joints() ||
        !site.offset.allFinite()) {
      Fail("end site", absl::InternalError("bad joint or offset"));
    }
  }
}

}  // namespace posewire::fuzz
