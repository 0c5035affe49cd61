#include "server/service/bake.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/ops/op_table.h"
#include "server/ops/pose_source.h"
#include "server/ops/state_codec.h"
#include "server/wire/wire_convert.h"
#include "solver_core/pose_ops/sampling_job.h"

namespace posewire::server {
namespace {

// Faster than any animation is keyed: past it 1 / rate loses the frame
// times' precision long before a bake ends.
constexpr double kMaxFrameRate = 100000.0;

// Of a frame: a clip's end this close to a frame's time counts that frame
// (the frame then holds the last pose). Files round their frame time (the
// CMU walk's .0083333 s is not 1/120), so a clip of N keys baked at its
// nominal rate ends a little short of frame N - 1: it still gets N frames.
constexpr double kFrameSlack = 0.5;

// Bytes of one frame's poses on the wire (10 floats a joint).
int64_t FrameBytes(int joints, bool want_model_pose) {
  return int64_t{joints} * 40 * (want_model_pose ? 2 : 1);
}

// A plan compiled with no field prefix names its ops ".ops[i]..."; the
// request's own fields have no leading dot.
absl::Status WithoutLeadingDot(const absl::Status& status) {
  if (status.ok() || status.message().empty() || status.message()[0] != '.') {
    return status;
  }
  return absl::Status(status.code(), status.message().substr(1));
}

absl::StatusOr<uint32_t> FrameCount(const v1::BakeRequest& request,
                                    const Clip* source, double rate,
                                    int max_frames) {
  double count = request.frame_count();
  if (request.frame_count() == 0) {
    if (source == nullptr) {
      return absl::InvalidArgumentError(
          "frame_count: required when there is no source clip (0 bakes the "
          "source clip to its end)");
    }
    const double span = source->duration - request.start_time();
    if (span < 0.0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "frame_count: 0 bakes the source clip from start_time to its end, "
          "but start_time ",
          request.start_time(), " is past its end (", source->duration,
          " s); give frame_count"));
    }
    count = std::floor(span * rate + kFrameSlack) + 1.0;
  }
  if (count > max_frames) {
    return absl::ResourceExhaustedError(
        absl::StrCat("frame_count: ", absl::StrFormat("%.0f", count),
                     " frames exceed this server's limit of ", max_frames,
                     " per bake (GetInfo limits.max_bake_frames)"));
  }
  return static_cast<uint32_t>(count);
}

}  // namespace

BakeRun::BakeRun(const v1::BakeRequest& request, ResolvedSkeleton skeleton)
    : request_(request),
      skeleton_(std::move(skeleton)),
      clips_(skeleton_.skeleton.get(), &request.clips()) {}

absl::StatusOr<std::unique_ptr<BakeRun>> BakeRun::Start(
    const v1::BakeRequest& request, const ServerConfig& config,
    SkeletonCache& skeletons) {
  auto resolved =
      ResolveSkeleton(request.skeleton(), config.max_joints_per_skeleton,
                      skeletons, "skeleton");
  if (!resolved.ok()) return resolved.status();
  std::unique_ptr<BakeRun> run(new BakeRun(request, *std::move(resolved)));
  if (absl::Status s = run->CheckAndPrepare(config, skeletons); !s.ok()) {
    return s;
  }
  return run;
}

absl::Status BakeRun::CheckAndPrepare(const ServerConfig& config,
                                      SkeletonCache& skeletons) {
  const v1::BakeRequest& request = request_;
  const Skeleton& skeleton = *skeleton_.skeleton;
  if (absl::Status s = CheckClipNamesUnique(request.clips()); !s.ok()) {
    return s;
  }
  if (request.has_frame_rate()) {
    frame_rate_ = request.frame_rate();
    if (!(frame_rate_ > 0.0 && frame_rate_ <= kMaxFrameRate)) {
      return absl::InvalidArgumentError(
          absl::StrCat("frame_rate: ", request.frame_rate(), " is not in (0, ",
                       kMaxFrameRate, "] frames a second"));
    }
  }
  dt_ = static_cast<float>(1.0 / frame_rate_);
  if (!std::isfinite(request.start_time())) {
    return absl::InvalidArgumentError(
        absl::StrCat("start_time: ", request.start_time(), " is not finite"));
  }

  const v1::BakeSource& source = request.source();
  if (!v1::RotationInterpolation_IsValid(source.rotation_interpolation())) {
    return UnknownEnum("source.rotation_interpolation",
                       source.rotation_interpolation());
  }
  if (!source.clip().empty()) {
    auto index = clips_.Find(source.clip(), "source.clip");
    if (!index.ok()) return index.status();
    source_clip_ = *index;
  }
  auto count = FrameCount(
      request, source_clip_ < 0 ? nullptr : &clips_.clip(source_clip_),
      frame_rate_, config.max_bake_frames);
  if (!count.ok()) return count.status();
  frames_total_ = *count;

  const int64_t frame_bytes =
      FrameBytes(skeleton.num_joints(), request.want_model_pose());
  if (static_cast<double>(frames_total_) * static_cast<double>(frame_bytes) >
      static_cast<double>(config.max_bake_bytes)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "frame_count: ", frames_total_, " frames of ", frame_bytes,
        " bytes of poses exceed this server's limit of ", config.max_bake_bytes,
        " bytes per bake (GetInfo limits.max_bake_bytes); bake fewer frames "
        "per call"));
  }
  if (request.frames_per_message() > kMaxBakeFramesPerMessage) {
    return absl::InvalidArgumentError(
        absl::StrCat("frames_per_message: ", request.frames_per_message(),
                     " is over ", kMaxBakeFramesPerMessage));
  }
  if (request.frames_per_message() != 0 &&
      request.frames_per_message() * frame_bytes >
          config.max_message_bytes / 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "frames_per_message: ", request.frames_per_message(), " frames of ",
        frame_bytes, " bytes would make messages over half of this server's ",
        config.max_message_bytes,
        "-byte limit (GetInfo limits.max_message_bytes); ask for fewer, or 0 "
        "to let the server choose"));
  }
  const int64_t chosen =
      request.frames_per_message() != 0
          ? int64_t{request.frames_per_message()}
          : std::clamp<int64_t>(kBakeMessageBytes / frame_bytes, 1,
                                kMaxBakeFramesPerMessage);
  frames_per_message_ =
      static_cast<uint32_t>(std::min<int64_t>(chosen, frames_total_));

  auto root = TransformFromProto(request.root(), "root");
  if (!root.ok()) return root.status();
  scratch_.root = *root;

  const RegistryLookup lookup{
      .by_hash = [&skeletons](
                     const std::string& hash) { return skeletons.Find(hash); },
      .by_id = {},
      .limits_by_id = {},
      .max_joints = config.max_joints_per_skeleton};
  const OpLimits limits{.max_solver_iterations = config.max_solver_iterations};
  auto plan = skeletons.plans().Get(skeleton_.skeleton, skeleton_.hash,
                                    request.ops(), limits, "", &lookup);
  if (!plan.ok()) return WithoutLeadingDot(plan.status());
  plan_ = *std::move(plan);
  if (absl::Status s = CheckTimedOps(); !s.ok()) return s;
  if (absl::Status s = CheckFrameUpdates(); !s.ok()) return s;
  if (!request.state().empty()) {
    if (absl::Status s =
            StateFromProto(request.state(), clips_, state_, "state");
        !s.ok()) {
      return s;
    }
  }
  scratch_.pose = RestPose(skeleton);
  return absl::OkStatus();
}

absl::Status BakeRun::CheckTimedOps() {
  if (request_.timed_ops().empty()) return absl::OkStatus();
  timed_by_op_.assign(plan_->size(), nullptr);
  timed_updates_.resize(request_.timed_ops_size());
  for (int i = 0; i < request_.timed_ops_size(); ++i) {
    const uint32_t op = request_.timed_ops(i);
    const std::string field = absl::StrCat("timed_ops[", i, "]");
    if (op >= static_cast<uint32_t>(plan_->size())) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": op ", op,
                                                     " is past the last op (",
                                                     plan_->size(), " ops)"));
    }
    const v1::Operation::OpCase op_case = plan_->op_case(static_cast<int>(op));
    if ((FindOpSpec(op_case)->updatable & kUpdateTime) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": ops[", op, "] is ", OperationName(op_case),
                       ", which takes no time (sample_clip and retarget do)"));
    }
    if (timed_by_op_[op] != nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": op ", op, " is listed twice"));
    }
    timed_updates_[i].set_op(op);
    timed_by_op_[op] = &timed_updates_[i];
  }
  return absl::OkStatus();
}

absl::Status BakeRun::CheckFrameUpdates() {
  if (static_cast<uint32_t>(request_.frame_updates_size()) > frames_total_) {
    return absl::InvalidArgumentError(
        absl::StrCat("frame_updates: ", request_.frame_updates_size(),
                     " entries for ", frames_total_, " frames"));
  }
  frame_updates_by_op_.resize(request_.frame_updates_size());
  for (int i = 0; i < request_.frame_updates_size(); ++i) {
    const std::string field = absl::StrCat("frame_updates[", i, "]");
    OpUpdatesByOp& by_op = frame_updates_by_op_[i];
    if (absl::Status s = IndexOpUpdates(
            *plan_, request_.frame_updates(i).op_updates(), field, by_op);
        !s.ok()) {
      return s;
    }
    if (request_.frame_updates(i).has_root()) {
      auto root = TransformFromProto(request_.frame_updates(i).root(),
                                     absl::StrCat(field, ".root"));
      if (!root.ok()) return root.status();
      frame_roots_.resize(request_.frame_updates_size());
      frame_roots_[i] = *root;
    }
    if (by_op.empty()) continue;
    // The timed ops' updates join the entry's; an op cannot be in both.
    for (size_t op = 0; op < timed_by_op_.size(); ++op) {
      if (timed_by_op_[op] == nullptr) continue;
      if (by_op[op] != nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(
            field, ": op ", op,
            " is in timed_ops, which set its time; it takes no update here"));
      }
      by_op[op] = timed_by_op_[op];
    }
  }
  return absl::OkStatus();
}

absl::Span<const v1::OpUpdate* const> BakeRun::UpdatesOf(uint32_t index) const {
  if (index < frame_updates_by_op_.size() &&
      !frame_updates_by_op_[index].empty()) {
    return frame_updates_by_op_[index];
  }
  return timed_by_op_;
}

absl::Status BakeRun::SolveFrame(uint32_t index, v1::BakedFrame* out,
                                 OperationTimings* timings) {
  const Skeleton& skeleton = *skeleton_.skeleton;
  // In double, so that a long bake's times do not drift by summed rounding.
  const float time = static_cast<float>(
      request_.start_time() + static_cast<double>(index) / frame_rate_);
  const std::string field = absl::StrCat("frames[", index, "]");
  LocalPose& pose = scratch_.pose;
  if (source_clip_ >= 0) {
    // The job a sample_clip op runs, with the same inputs.
    SamplingJob job;
    job.skeleton = &skeleton;
    job.clip = &clips_.clip(source_clip_);
    job.clip_validated = true;
    job.time = time;
    job.mode =
        request_.source().loop() ? PlaybackMode::kLoop : PlaybackMode::kClamp;
    job.rotation_interpolation = RotationInterpolationFromProto(
        request_.source().rotation_interpolation());
    job.output = absl::MakeSpan(pose);
    if (absl::Status s = job.Run(); !s.ok()) {
      return PrefixField(absl::StrCat(field, ".source"), s);
    }
  } else {
    const absl::Span<const Transform> rest = skeleton.rest_pose();
    std::copy(rest.begin(), rest.end(), pose.begin());
  }
  for (v1::OpUpdate& update : timed_updates_) update.set_time(time);
  const PlanFrame frame{
      .skeleton = &skeleton,
      .clips = &clips_,
      // A fresh bake's first frame is its start, with
      // nothing elapsed; one given state continues the
      // bake that returned it, a frame later.
      .dt = index == 0 && request_.state().empty() ? 0.0f : dt_,
      .root = index < frame_roots_.size() && frame_roots_[index].has_value()
                  ? *frame_roots_[index]
                  : scratch_.root,
      .field = field,
      .timings = timings,
      .updates = UpdatesOf(index),
      .undo = nullptr};
  if (absl::Status s = RunPlan(*plan_, frame, pose, state_, out->mutable_ops());
      !s.ok()) {
    return s;
  }
  out->set_index(index);
  out->set_time(time);
  if (request_.want_model_pose()) {
    if (absl::Status s = ModelPoseToProto(skeleton, pose, field, scratch_.model,
                                          out->mutable_model_pose());
        !s.ok()) {
      return s;
    }
  }
  PoseToProto(pose, out->mutable_pose());
  return absl::OkStatus();
}

absl::Status BakeRun::Next(v1::BakeResponse* response,
                           OperationTimings* timings) {
  const uint32_t end =
      std::min(frames_total_, next_frame_ + frames_per_message_);
  response->mutable_frames()->Reserve(static_cast<int>(end - next_frame_));
  for (; next_frame_ < end; ++next_frame_) {
    if (absl::Status s =
            SolveFrame(next_frame_, response->add_frames(), timings);
        !s.ok()) {
      return s;
    }
  }
  response->set_frames_done(next_frame_);
  response->set_frames_total(frames_total_);
  if (done()) {
    response->set_done(true);
    StateToProto(state_, clips_, response->mutable_state());
    response->set_skeleton_hash(skeleton_.hash);
  }
  return absl::OkStatus();
}

}  // namespace posewire::server
