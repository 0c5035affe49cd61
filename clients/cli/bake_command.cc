#include "clients/cli/bake_command.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "clients/cli/cli_common.h"
#include "server/wire/wire_convert.h"
#include "solver_core/io/asset_reader.h"
#include "solver_core/io/bvh_writer.h"
#include "solver_core/io/gltf_writer.h"

namespace posewire::cli {
namespace {

enum class OutFormat { kBvh, kGlb, kGltf };

int Fail(const BakeOptions& options, const std::string& message, int code = 1) {
  std::cerr << "posewire " << (options.to.empty() ? "bake" : "retarget") << ": "
            << message << "\n";
  return code;
}

std::optional<OutFormat> FormatOf(const std::string& path) {
  const std::string lower = absl::AsciiStrToLower(path);
  if (absl::EndsWith(lower, ".bvh")) return OutFormat::kBvh;
  if (absl::EndsWith(lower, ".glb")) return OutFormat::kGlb;
  if (absl::EndsWith(lower, ".gltf")) return OutFormat::kGltf;
  return std::nullopt;
}

// The clip's frames from `start` to its end at `fps`, as the server counts
// them for a bake without frame_count.
int64_t WholeClipFrames(const Clip& clip, double start, double fps) {
  const double span = static_cast<double>(clip.duration) - start;
  if (span < 0.0) return 0;
  // As the server counts (BakeRequest.frame_count).
  return static_cast<int64_t>(std::floor(span * fps + 0.5)) + 1;
}

void AddTips(const ImportedAsset& asset,
             google::protobuf::RepeatedPtrField<v1::RetargetTip>* tips) {
  for (const EndSite& site : asset.end_sites) {
    v1::RetargetTip* tip = tips->Add();
    tip->set_joint(asset.skeleton.joint_name(site.joint));
    tip->mutable_offset()->set_x(site.offset.x());
    tip->mutable_offset()->set_y(site.offset.y());
    tip->mutable_offset()->set_z(site.offset.z());
  }
}

// The retarget op that plays `clip` of `source` onto `target`'s skeleton
// (the request's); its time follows the frames (timed_ops). End sites are
// the tips of limbs whose end joint a rig lacks.
void AddRetarget(const ImportedAsset& source, const Clip& clip, bool loop,
                 const BakeOptions& options, const ImportedAsset& target,
                 v1::BakeRequest& request) {
  v1::RetargetOp* op = request.add_ops()->mutable_retarget();
  if (options.lock_feet) op->mutable_feet()->set_lock_contacts(true);
  if (options.match_hands) op->mutable_hands()->set_match_source(true);
  AddTips(source, op->mutable_source_tips());
  AddTips(target, op->mutable_target_tips());
  server::SkeletonToProto(source.skeleton, op->mutable_skeleton());
  server::ClipToProto(clip, op->mutable_clip()->mutable_clip());
  op->mutable_clip()->set_mode(loop ? v1::PLAYBACK_MODE_LOOP
                                    : v1::PLAYBACK_MODE_CLAMP);
  request.add_timed_ops(0);
}

absl::Status WriteFrames(const std::string& path, OutFormat format,
                         const ImportedAsset& rig,
                         const std::vector<LocalPose>& frames, double fps) {
  const float frame_time = static_cast<float>(1.0 / fps);
  if (format == OutFormat::kBvh) {
    BvhWriteOptions bvh;
    bvh.frame_time = frame_time;
    bvh.end_sites = rig.end_sites;
    return WriteBvhFile(path, rig.skeleton, frames, bvh);
  }
  GltfWriteOptions gltf;
  gltf.frame_time = frame_time;
  gltf.end_sites = rig.end_sites;
  return WriteGltfFile(path, rig.skeleton, frames, gltf);
}

// The clip's own rate: 1 / its key interval. Float key times leave the
// interval a hair off (the walk's 1/120 s gives 120.002): within 1e-4 of a
// whole rate, the whole rate, as the file means it.
double ClipFrameRate(const Clip& clip) {
  const double rate = 1.0 / static_cast<double>(ClipFrameTime(clip));
  const double whole = std::round(rate);
  return std::abs(rate - whole) < 1e-4 * rate ? whole : rate;
}

}  // namespace

int RunBake(client::Client& client, const BakeOptions& options) {
  const std::optional<OutFormat> format = FormatOf(options.out);
  if (options.out.empty() || !format.has_value()) {
    return Fail(options,
                absl::StrCat("--out=", options.out,
                             ": give a file ending in .bvh, .glb or .gltf"),
                2);
  }
  if (options.fps.has_value() &&
      !(std::isfinite(*options.fps) && *options.fps > 0.0)) {
    return Fail(options, absl::StrCat("--fps=", *options.fps, ": must be > 0"),
                2);
  }
  if (options.frame_count.has_value() && *options.frame_count < 1) {
    return Fail(options,
                absl::StrCat("--frame_count=", *options.frame_count,
                             ": must be at least 1"),
                2);
  }
  auto source = ReadAssetFile(options.file);
  if (!source.ok())
    return Fail(options, std::string(source.status().message()));
  auto clip_index = FindClip(*source, options.clip);
  if (!clip_index.ok()) {
    return Fail(options, std::string(clip_index.status().message()));
  }
  if (*clip_index < 0) {
    return Fail(options, absl::StrCat(options.file, " has no clip to bake"));
  }
  const Clip& clip = source->clips[*clip_index];
  auto user_ops = ReadOpsJsonFile(options.ops_json);
  if (!user_ops.ok()) {
    return Fail(options, std::string(user_ops.status().message()));
  }
  std::optional<ImportedAsset> target;
  if (!options.to.empty()) {
    auto read = ReadAssetFile(options.to);
    if (!read.ok()) return Fail(options, std::string(read.status().message()));
    target = *std::move(read);
  }
  const ImportedAsset& rig = target.has_value() ? *target : *source;
  const double fps = options.fps.value_or(ClipFrameRate(clip));

  v1::BakeRequest request;
  server::SkeletonToProto(rig.skeleton,
                          request.mutable_skeleton()->mutable_skeleton());
  request.set_frame_rate(static_cast<float>(fps));
  request.set_start_time(options.start);
  if (target.has_value()) {
    // The clip belongs to the source skeleton: the retarget op plays it,
    // and the bake needs a frame count since it has no source clip.
    AddRetarget(*source, clip, options.loop, options, *target, request);
    const int64_t whole = WholeClipFrames(clip, options.start, fps);
    if (!options.frame_count.has_value() && whole == 0) {
      return Fail(
          options,
          absl::StrCat("--start=", options.start, " is past the clip's end (",
                       clip.duration, " s)"),
          2);
    }
    request.set_frame_count(static_cast<uint32_t>(
        options.frame_count.value_or(static_cast<int>(whole))));
  } else {
    for (const Clip& c : source->clips) {
      server::ClipToProto(c, request.add_clips());
    }
    request.mutable_source()->set_clip(clip.name);
    request.mutable_source()->set_loop(options.loop);
    if (options.frame_count.has_value()) {
      request.set_frame_count(static_cast<uint32_t>(*options.frame_count));
    }
  }
  const int first_user_op = request.ops_size();
  for (const v1::Operation& op : *user_ops) *request.add_ops() = op;

  // Progress on a terminal only: a log or a pipe gets the summary alone.
  const bool show_progress = isatty(STDERR_FILENO) != 0;
  const auto started = std::chrono::steady_clock::now();
  auto baked = client.Bake(request, [&](const v1::BakeResponse& message) {
    if (show_progress) {
      std::cerr << absl::StrFormat("\rposewire: baked %u/%u frames",
                                   message.frames_done(),
                                   message.frames_total())
                << std::flush;
    }
    return true;
  });
  if (show_progress) std::cerr << "\n";
  if (!baked.ok()) {
    std::string message = DescribeStatus(baked.status());
    if (first_user_op > 0 && absl::StrContains(message, "ops[")) {
      absl::StrAppend(&message,
                      "\n  (ops[0] is the retarget posewire adds; --ops_json "
                      "entries start at ops[1])");
    }
    return Fail(options, message);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();

  std::vector<LocalPose> frames;
  frames.reserve(baked->frames_size());
  for (const v1::BakedFrame& frame : baked->frames()) {
    auto pose = server::PoseFromProto(frame.pose(), rig.skeleton, "pose");
    if (!pose.ok()) return Fail(options, DescribeStatus(pose.status()));
    frames.push_back(*std::move(pose));
  }
  if (frames.empty()) return Fail(options, "the server returned no frames");
  if (absl::Status s = WriteFrames(options.out, *format, rig, frames, fps);
      !s.ok()) {
    return Fail(options, std::string(s.message()));
  }
  std::cerr << absl::StrFormat(
      "posewire: %d frames of %d joints at %g fps baked in %.3f s (%.0f "
      "frames/s), written to %s\n",
      static_cast<int>(frames.size()), rig.skeleton.num_joints(), fps, seconds,
      static_cast<double>(frames.size()) / seconds, options.out);
  return 0;
}

}  // namespace posewire::cli
