#include "server/service/learn_limits.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/ops/ik_wire.h"
#include "server/ops/pose_source.h"
#include "server/wire/wire_convert.h"
#include "solver_core/chain_ik/learned_limits.h"

namespace posewire::server {
namespace {

absl::StatusOr<LearnLimitsOptions> OptionsFromProto(
    const v1::LearnLimitsOptions& wire, absl::string_view field) {
  LearnLimitsOptions options;
  switch (wire.kind()) {
    case v1::LIMIT_KIND_EULER:
      options.type = JointLimitType::kEuler;
      break;
    case v1::LIMIT_KIND_SWING_TWIST:
      options.type = JointLimitType::kSwingTwist;
      break;
    default:
      return UnknownEnum(absl::StrCat(field, ".kind"), wire.kind());
  }
  if (!v1::EulerOrder_IsValid(wire.euler_order())) {
    return UnknownEnum(absl::StrCat(field, ".euler_order"), wire.euler_order());
  }
  options.euler_order = EulerOrderFromProto(wire.euler_order());
  if (wire.has_margin()) {
    if (!std::isfinite(wire.margin()) || wire.margin() < 0.0f) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".margin: ", wire.margin(), " must be finite and >= 0"));
    }
    options.margin = wire.margin();
  }
  if (wire.has_min_range()) {
    if (!std::isfinite(wire.min_range()) || wire.min_range() < 0.0f) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".min_range: ", wire.min_range(), " must be finite and >= 0"));
    }
    options.min_range = wire.min_range();
  }
  return options;
}

}  // namespace

absl::Status LearnLimitsFromClips(const Skeleton& skeleton,
                                  absl::Span<const Clip> clips,
                                  const v1::LearnLimitsOptions& wire_options,
                                  absl::string_view options_field,
                                  v1::LearnLimitsResponse* response) {
  auto options = OptionsFromProto(wire_options, options_field);
  if (!options.ok()) return options.status();
  std::vector<bool> unlimited(skeleton.num_joints(), false);
  if (!wire_options.limit_root()) unlimited[0] = true;
  for (int i = 0; i < wire_options.unlimited_joints_size(); ++i) {
    auto joint =
        JointIndex(skeleton, wire_options.unlimited_joints(i),
                   absl::StrCat(options_field, ".unlimited_joints[", i, "]"));
    if (!joint.ok()) return joint.status();
    unlimited[*joint] = true;
  }

  absl::StatusOr<LearnedLimits> learnt =
      LearnJointLimits(skeleton, clips, *options);
  if (!learnt.ok()) return learnt.status();
  uint64_t samples = 0;
  for (const Clip& clip : clips) {
    for (const auto& track : clip.tracks)
      samples += track.rotation.times.size();
  }
  for (int j = 0; j < skeleton.num_joints(); ++j) {
    if (unlimited[j]) learnt->limits[j] = JointLimit();
  }
  LimitsToProto(skeleton, learnt->limits, response->mutable_limits());
  for (int j : learnt->widened_joints) {
    if (!unlimited[j]) response->add_widened_joints(skeleton.joint_name(j));
  }
  response->set_samples(samples);
  return absl::OkStatus();
}

absl::Status LearnLimits(const v1::LearnLimitsRequest& request,
                         const ServerConfig& config, SkeletonCache& skeletons,
                         v1::LearnLimitsResponse* response) {
  // The options first: a bad option is named before the skeleton is
  // looked up or the clips converted.
  if (auto options = OptionsFromProto(request.options(), "options");
      !options.ok()) {
    return options.status();
  }
  auto resolved =
      ResolveSkeleton(request.skeleton(), config.max_joints_per_skeleton,
                      skeletons, "skeleton");
  if (!resolved.ok()) return resolved.status();
  const Skeleton& skeleton = *resolved->skeleton;
  if (request.clips().empty()) {
    return absl::InvalidArgumentError(
        "clips: at least one clip to learn the limits from");
  }
  std::vector<Clip> clips;
  clips.reserve(request.clips_size());
  for (int i = 0; i < request.clips_size(); ++i) {
    auto clip = ClipFromProto(request.clips(i), skeleton,
                              absl::StrCat("clips[", i, "]"));
    if (!clip.ok()) return clip.status();
    clips.push_back(*std::move(clip));
  }
  if (absl::Status s = LearnLimitsFromClips(skeleton, clips, request.options(),
                                            "options", response);
      !s.ok()) {
    return s;
  }
  response->set_skeleton_hash(resolved->hash);
  return absl::OkStatus();
}

}  // namespace posewire::server
