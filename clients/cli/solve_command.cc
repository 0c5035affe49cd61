#include "clients/cli/solve_command.h"

#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "clients/cli/cli_common.h"
#include "server/wire/wire_convert.h"
#include "solver_core/io/asset_reader.h"
#include "solver_core/io/bvh_writer.h"

namespace posewire::cli {
namespace {

constexpr int kFloatsPerJoint = server::kFloatsPerJoint;

int Fail(const std::string& message, int code = 1) {
  std::cerr << "posewire solve: " << message << "\n";
  return code;
}

// `count` floats starting at `first` as a JSON array.
void AppendArray(std::string* out, const float* first, int count) {
  out->push_back('[');
  for (int i = 0; i < count; ++i) {
    if (i > 0) *out += ", ";
    AppendJsonNumber(out, first[i]);
  }
  out->push_back(']');
}

// One line per joint: name, parent, translation, rotation (x y z w), scale.
void AppendJoints(std::string* out, const Skeleton& skeleton,
                  const v1::Pose& pose) {
  *out += "[\n";
  for (int j = 0; j < skeleton.num_joints(); ++j) {
    const float* v = pose.transforms().data() + kFloatsPerJoint * j;
    absl::StrAppend(out, "    {\"name\": ", JsonString(skeleton.joint_name(j)),
                    ", \"parent\": ", skeleton.parent(j),
                    ", \"translation\": ");
    AppendArray(out, v, 3);
    *out += ", \"rotation\": ";
    AppendArray(out, v + 3, 4);
    *out += ", \"scale\": ";
    AppendArray(out, v + 7, 3);
    *out += j + 1 < skeleton.num_joints() ? "},\n" : "}\n";
  }
  *out += "  ]";
}

absl::Status CheckPoseSize(const v1::Pose& pose, const Skeleton& skeleton,
                           absl::string_view field) {
  if (pose.transforms_size() != kFloatsPerJoint * skeleton.num_joints()) {
    return absl::InternalError(absl::StrCat(
        "the server returned ", pose.transforms_size(), " floats in ", field,
        " for ", skeleton.num_joints(), " joints (expected ",
        kFloatsPerJoint * skeleton.num_joints(), ")"));
  }
  return absl::OkStatus();
}

absl::Status WriteOutput(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    std::cout << text;
    std::cout.flush();
    return std::cout ? absl::OkStatus()
                     : absl::UnknownError("cannot write standard output");
  }
  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::unique_ptr<std::FILE, Closer> file(std::fopen(path.c_str(), "wb"));
  if (file == nullptr) {
    const int error = errno;
    return absl::ErrnoToStatus(error, absl::StrCat(path, ": cannot open"));
  }
  if (std::fwrite(text.data(), 1, text.size(), file.get()) != text.size() ||
      std::fclose(file.release()) != 0) {
    const int error = errno;
    return absl::ErrnoToStatus(error, absl::StrCat(path, ": cannot write"));
  }
  return absl::OkStatus();
}

}  // namespace

int RunSolve(client::Client& client, const SolveOptions& options) {
  if (options.format != "json" && options.format != "bvh") {
    return Fail(absl::StrCat("--format must be json or bvh, not '",
                             options.format, "'"),
                2);
  }
  if (options.time.has_value() && options.frame.has_value()) {
    return Fail("give --time or --frame, not both", 2);
  }
  auto asset = ReadAssetFile(options.file);
  if (!asset.ok()) return Fail(std::string(asset.status().message()));
  auto clip_index = FindClip(*asset, options.clip);
  if (!clip_index.ok()) return Fail(std::string(clip_index.status().message()));
  auto user_ops = ReadOpsJsonFile(options.ops_json);
  if (!user_ops.ok()) return Fail(std::string(user_ops.status().message()));

  const Clip* clip = *clip_index >= 0 ? &asset->clips[*clip_index] : nullptr;
  float time = options.time.value_or(0.0f);
  if (options.frame.has_value()) {
    if (clip == nullptr) {
      return Fail(absl::StrCat(options.file, " has no clip to take frame ",
                               *options.frame, " from"),
                  2);
    }
    const std::vector<float> times = ClipKeyTimes(*clip);
    if (*options.frame < 0 ||
        *options.frame >= static_cast<int>(times.size())) {
      return Fail(absl::StrCat("--frame=", *options.frame, ": clip '",
                               clip->name, "' has frames 0 to ",
                               static_cast<int>(times.size()) - 1),
                  2);
    }
    time = times[*options.frame];
  }

  v1::SolveRequest request;
  request.set_dt(options.dt);
  for (const Clip& c : asset->clips) {
    server::ClipToProto(c, request.add_clips());
  }
  v1::CharacterInput* character = request.add_characters();
  character->set_id("character");
  server::SkeletonToProto(asset->skeleton,
                          character->mutable_skeleton()->mutable_skeleton());
  character->set_want_model_pose(options.model_pose);
  if (clip != nullptr) {
    v1::ClipSample* sample =
        character->add_ops()->mutable_sample_clip()->mutable_sample();
    sample->set_clip(clip->name);
    sample->set_time(time);
    sample->set_mode(options.loop ? v1::PLAYBACK_MODE_LOOP
                                  : v1::PLAYBACK_MODE_CLAMP);
  }
  const int first_user_op = character->ops_size();
  for (const v1::Operation& op : *user_ops) *character->add_ops() = op;

  auto response = client.Solve(request);
  if (!response.ok()) {
    std::string message = DescribeStatus(response.status());
    if (first_user_op > 0 && absl::StrContains(message, ".ops[")) {
      absl::StrAppend(&message,
                      "\n  (ops[0] is the clip sample posewire "
                      "adds; --ops_json entries start at ops[1])");
    }
    return Fail(message);
  }
  if (response->characters_size() != 1) {
    return Fail(absl::StrCat("the server returned ",
                             response->characters_size(), " characters for 1"));
  }
  const v1::CharacterOutput& out = response->characters(0);
  const Skeleton& skeleton = asset->skeleton;
  if (absl::Status s = CheckPoseSize(out.pose(), skeleton, "pose"); !s.ok()) {
    return Fail(std::string(s.message()));
  }

  std::string text;
  if (options.format == "bvh") {
    auto pose = server::PoseFromProto(out.pose(), skeleton, "pose");
    if (!pose.ok()) return Fail(DescribeStatus(pose.status()));
    BvhWriteOptions bvh;
    bvh.frame_time = clip != nullptr ? ClipFrameTime(*clip) : 1.0f / 30.0f;
    bvh.end_sites = asset->end_sites;
    auto written = WriteBvh(skeleton, {*pose}, bvh);
    if (!written.ok()) return Fail(DescribeStatus(written.status()));
    text = *std::move(written);
  } else {
    absl::StrAppend(
        &text, "{\n  \"file\": ", JsonString(options.file),
        ",\n  \"clip\": ", clip != nullptr ? JsonString(clip->name) : "null",
        ",\n  \"time\": ");
    AppendJsonNumber(&text, time);
    absl::StrAppend(&text,
                    ",\n  \"skeleton_hash\": ", JsonString(out.skeleton_hash()),
                    ",\n  \"joints\": ");
    AppendJoints(&text, skeleton, out.pose());
    if (options.model_pose) {
      if (absl::Status s =
              CheckPoseSize(out.model_pose(), skeleton, "model_pose");
          !s.ok()) {
        return Fail(std::string(s.message()));
      }
      text += ",\n  \"model_pose\": ";
      AppendJoints(&text, skeleton, out.model_pose());
    }
    text += ",\n  \"ops\": [";
    for (int i = 0; i < out.ops_size(); ++i) {
      absl::StrAppend(&text, i > 0 ? ",\n    " : "\n    ",
                      MessageJson(out.ops(i)));
    }
    text += out.ops_size() > 0 ? "\n  ]" : "]";
    if (!out.state().empty()) {
      // State to feed back for stateful ops (crossfade, dynamics), sorted
      // by key so the output is stable.
      std::map<std::string, const v1::OperationState*> sorted;
      for (const auto& [key, value] : out.state()) sorted[key] = &value;
      text += ",\n  \"state\": {";
      bool first = true;
      for (const auto& [key, value] : sorted) {
        absl::StrAppend(&text, first ? "\n    " : ",\n    ", JsonString(key),
                        ": ", MessageJson(*value));
        first = false;
      }
      text += "\n  }";
    }
    text += "\n}\n";
  }
  if (absl::Status s = WriteOutput(options.out, text); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  return 0;
}

}  // namespace posewire::cli
