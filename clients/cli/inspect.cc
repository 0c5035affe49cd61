#include "clients/cli/inspect.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace posewire::cli {
namespace {

template <typename T>
size_t CountKeys(const Track<T>& track) {
  return track.times.size();
}

}  // namespace

std::string FormatAsset(const ImportedAsset& asset) {
  const Skeleton& skeleton = asset.skeleton;
  std::string out = absl::StrCat(asset.source, ": ", skeleton.num_joints(),
                                 " joints, ", asset.clips.size(), " clip",
                                 asset.clips.size() == 1 ? "" : "s", "\n\n");
  absl::StrAppend(&out, "Joints (index, name, parent, rest translation):\n");
  for (int j = 0; j < skeleton.num_joints(); ++j) {
    const int parent = skeleton.parent(j);
    const Eigen::Vector3f& t = skeleton.rest_pose()[j].translation;
    const std::string indent(2 * (skeleton.Depth(j) - 1), ' ');
    absl::StrAppendFormat(
        &out, "  %3d  %s%-*s  parent %-4s (%.4g, %.4g, %.4g)\n", j, indent,
        std::max(1, 28 - static_cast<int>(indent.size())),
        skeleton.joint_name(j),
        parent == kNoParent ? "-" : absl::StrCat(parent), t.x(), t.y(), t.z());
  }
  if (!asset.end_sites.empty()) {
    absl::StrAppend(&out, "\nEnd sites: ", asset.end_sites.size(), "\n");
    for (const EndSite& site : asset.end_sites) {
      absl::StrAppendFormat(&out, "  below %s (%.4g, %.4g, %.4g)\n",
                            skeleton.joint_name(site.joint), site.offset.x(),
                            site.offset.y(), site.offset.z());
    }
  }
  absl::StrAppend(&out, "\nClips:\n");
  if (asset.clips.empty()) absl::StrAppend(&out, "  (none)\n");
  for (const Clip& clip : asset.clips) {
    size_t translation = 0, rotation = 0, scale = 0, keys = 0;
    for (const JointTracks& tracks : clip.tracks) {
      translation += !tracks.translation.empty();
      rotation += !tracks.rotation.empty();
      scale += !tracks.scale.empty();
      keys = std::max({keys, CountKeys(tracks.translation),
                       CountKeys(tracks.rotation), CountKeys(tracks.scale)});
    }
    absl::StrAppendFormat(
        &out,
        "  %-24s %8.3f s  tracks: %zu translation, %zu rotation, %zu scale; "
        "up to %zu keys\n",
        clip.name, clip.duration, translation, rotation, scale, keys);
  }
  if (!asset.warnings.empty()) {
    absl::StrAppend(&out, "\nWarnings:\n");
    for (const std::string& warning : asset.warnings) {
      absl::StrAppend(&out, "  ", warning, "\n");
    }
  }
  return out;
}

}  // namespace posewire::cli
