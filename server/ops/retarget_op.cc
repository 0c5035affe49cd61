// retarget: the current pose becomes a source skeleton's pose transferred by
// chains (solver_core/retarget/retarget.h). The map is compiled with the
// op; a frame samples the source clip (or takes the source pose) and runs
// the job, then the feet pass (retarget_feet.h) when the op asks for it,
// its state kept under the op's state_key, then the hands pass
// (retarget_hands.h) when asked.
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/ops/op_table.h"
#include "server/ops/pose_source.h"
#include "server/wire/wire_convert.h"
#include "solver_core/pose_ops/sampling_job.h"
#include "solver_core/retarget/retarget.h"
#include "solver_core/retarget/retarget_feet.h"
#include "solver_core/retarget/retarget_hands.h"

namespace posewire::server {
namespace {

// The core names its own fields ("mapping.chains[1].target[0]: ...",
// "source[3] 'LeftKnee': ..."): joined to the op's with a dot.
absl::Status Joined(absl::string_view field, const absl::Status& status) {
  if (status.ok()) return status;
  return absl::Status(status.code(),
                      absl::StrCat(field, ".", status.message()));
}

// Where the feet pass's state lives when the op names no state_key.
constexpr absl::string_view kDefaultFeetKey = "retarget_feet";

struct FeetPass {
  RetargetFeet feet;
  RetargetFeetOptions options;
  std::string key;
};

struct HandsPass {
  RetargetHands hands;
  RetargetHandsOptions options;
};

struct SourceClip {
  Clip clip;
  float time = 0.0f;
  PlaybackMode mode = PlaybackMode::kLoop;
  RotationInterpolation rotation_interpolation = RotationInterpolation::kNlerp;
};

class Retarget final : public PreparedOp {
 public:
  Retarget(std::shared_ptr<const Skeleton> source, RetargetMap map,
           std::optional<SourceClip> clip, LocalPose pose,
           std::optional<FeetPass> feet, std::optional<HandsPass> hands)
      : source_(std::move(source)),
        map_(std::move(map)),
        clip_(std::move(clip)),
        pose_(std::move(pose)),
        feet_(std::move(feet)),
        hands_(std::move(hands)) {}

  absl::Status Run(OpFrame& frame) const override {
    // One buffer per thread: its capacity survives, so a steady stream of
    // frames allocates nothing here.
    thread_local LocalPose sampled;
    absl::Span<const Transform> source = pose_;
    if (clip_.has_value()) {
      sampled.resize(source_->num_joints());
      SamplingJob sampling;
      sampling.skeleton = source_.get();
      sampling.clip = &clip_->clip;
      sampling.clip_validated = true;
      sampling.time = frame.update != nullptr && frame.update->has_time()
                          ? frame.update->time()
                          : clip_->time;
      sampling.mode = clip_->mode;
      sampling.rotation_interpolation = clip_->rotation_interpolation;
      sampling.output = absl::MakeSpan(sampled);
      if (absl::Status s = sampling.Run(); !s.ok()) {
        return Joined(absl::StrCat(frame.field.str(), ".clip"), s);
      }
      source = sampled;
    }
    RetargetJob job;
    job.map = &map_;
    job.source_skeleton = source_.get();
    job.target_skeleton = &frame.skeleton;
    job.source = source;
    job.input = frame.pose;
    job.input_validated = frame.pose_validated;
    job.output = absl::MakeSpan(frame.pose);
    thread_local std::vector<Transform> scratch;
    scratch.resize(static_cast<size_t>(source_->num_joints()) +
                   static_cast<size_t>(frame.skeleton.num_joints()));
    job.scratch = absl::MakeSpan(scratch);
    // Joined only for an error.
    if (absl::Status s = job.Run(); !s.ok()) {
      return Joined(frame.field.str(), s);
    }
    if (feet_.has_value()) {
      if (absl::Status s = RunFeet(frame, source); !s.ok()) return s;
    }
    if (!hands_.has_value()) return absl::OkStatus();
    RetargetHandsJob pass;
    pass.map = &map_;
    pass.hands = &hands_->hands;
    pass.source_skeleton = source_.get();
    pass.target_skeleton = &frame.skeleton;
    pass.source = source;
    pass.input = frame.pose;
    pass.output = absl::MakeSpan(frame.pose);
    pass.options = hands_->options;
    return Joined(frame.field.str(), pass.Run());
  }

 private:
  absl::Status RunFeet(OpFrame& frame,
                       absl::Span<const Transform> source) const {
    RetargetFeetJob pass;
    pass.map = &map_;
    pass.feet = &feet_->feet;
    pass.source_skeleton = source_.get();
    pass.target_skeleton = &frame.skeleton;
    pass.source = source;
    pass.input = frame.pose;
    pass.output = absl::MakeSpan(frame.pose);
    pass.options = feet_->options;
    pass.dt = frame.dt;
    return Joined(
        frame.field.str(),
        StepState(frame.state.retarget_feet, feet_->key, frame.undo,
                  [&](const RetargetFeetState& state, RetargetFeetState& next) {
                    pass.state = &state;
                    pass.next_state = &next;
                    return pass.Run();
                  }));
  }

  std::shared_ptr<const Skeleton> source_;
  RetargetMap map_;
  std::optional<SourceClip> clip_;
  LocalPose pose_;
  std::optional<FeetPass> feet_;
  std::optional<HandsPass> hands_;
};

absl::StatusOr<std::shared_ptr<const Skeleton>> SourceSkeleton(
    const OpCompileInput& input, const v1::RetargetOp& op) {
  const RegistryLookup* lookup = input.registry;
  switch (op.source_skeleton_case()) {
    case v1::RetargetOp::kSkeleton: {
      auto skeleton = SkeletonFromProto(
          op.skeleton(),
          lookup != nullptr ? lookup->max_joints : kMaxSkeletonJoints,
          absl::StrCat(input.field, ".skeleton"));
      if (!skeleton.ok()) return skeleton.status();
      return std::make_shared<const Skeleton>(*std::move(skeleton));
    }
    case v1::RetargetOp::kSkeletonHash: {
      std::shared_ptr<const Skeleton> found;
      if (lookup != nullptr && lookup->by_hash) {
        found = lookup->by_hash(op.skeleton_hash());
      }
      if (found == nullptr) {
        return absl::NotFoundError(absl::StrCat(
            input.field, ".skeleton_hash: no skeleton '", op.skeleton_hash(),
            "' here (a Session names registered skeletons by skeleton_id; a "
            "Solve knows the hashes it returned, until evicted): send the "
            "skeleton inline"));
      }
      return found;
    }
    case v1::RetargetOp::kSkeletonId: {
      std::shared_ptr<const Skeleton> found;
      if (lookup != nullptr && lookup->by_id) {
        found = lookup->by_id(op.skeleton_id());
      }
      if (found == nullptr) {
        return absl::NotFoundError(absl::StrCat(
            input.field, ".skeleton_id: no skeleton '", op.skeleton_id(),
            "' registered in this session (a Solve names skeletons by "
            "skeleton_hash or inline)"));
      }
      return found;
    }
    case v1::RetargetOp::SOURCE_SKELETON_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(input.field,
                   ".source_skeleton: not set; send skeleton, skeleton_hash or "
                   "skeleton_id"));
}

absl::StatusOr<std::vector<BipedTip>> Tips(
    const Skeleton& skeleton,
    const google::protobuf::RepeatedPtrField<v1::RetargetTip>& tips,
    const std::string& field) {
  std::vector<BipedTip> out;
  for (int i = 0; i < tips.size(); ++i) {
    const std::string f = absl::StrCat(field, "[", i, "]");
    auto joint =
        JointIndex(skeleton, tips[i].joint(), absl::StrCat(f, ".joint"));
    if (!joint.ok()) return joint.status();
    auto offset = Vec3FromProto(tips[i].offset(), absl::StrCat(f, ".offset"));
    if (!offset.ok()) return offset.status();
    out.push_back({*joint, *offset});
  }
  return out;
}

RetargetMapping MappingFromProto(const v1::RetargetMapping& m) {
  RetargetMapping out;
  out.source_pelvis = m.source_pelvis();
  out.target_pelvis = m.target_pelvis();
  out.source_root = m.source_root();
  out.target_root = m.target_root();
  for (const v1::RetargetChain& c : m.chains()) {
    out.chains.push_back(
        {c.name(),
         std::vector<std::string>(c.source().begin(), c.source().end()),
         std::vector<std::string>(c.target().begin(), c.target().end())});
  }
  for (const v1::RetargetFollow& f : m.follow()) {
    out.follow.push_back({f.target(), f.source()});
  }
  return out;
}

RetargetFeetOptions FeetOptionsFromProto(const v1::RetargetFeet& f) {
  RetargetFeetOptions o;
  if (f.has_contact_height()) o.contact_height = f.contact_height();
  if (f.has_contact_speed()) o.contact_speed = f.contact_speed();
  if (f.has_hysteresis()) o.hysteresis = f.hysteresis();
  if (f.has_release_time()) o.release_time = f.release_time();
  if (f.has_scaled_source_weight()) {
    o.scaled_source_weight = f.scaled_source_weight();
  }
  if (f.has_source_floor()) o.source_floor = f.source_floor();
  return o;
}

CompiledOp Compile(const OpCompileInput& input) {
  const v1::RetargetOp& op = input.op.retarget();
  auto source = SourceSkeleton(input, op);
  if (!source.ok()) return source.status();
  const Skeleton& src = **source;

  std::optional<SourceClip> clip;
  LocalPose pose;
  switch (op.source_pose_case()) {
    case v1::RetargetOp::kClip: {
      const v1::RetargetClip& c = op.clip();
      const std::string field = absl::StrCat(input.field, ".clip");
      if (!v1::PlaybackMode_IsValid(c.mode())) {
        return UnknownEnum(absl::StrCat(field, ".mode"), c.mode());
      }
      if (!v1::RotationInterpolation_IsValid(c.rotation_interpolation())) {
        return UnknownEnum(absl::StrCat(field, ".rotation_interpolation"),
                           c.rotation_interpolation());
      }
      if (!std::isfinite(c.time())) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, ".time: ", c.time(), " is not finite"));
      }
      auto converted =
          ClipFromProto(c.clip(), src, absl::StrCat(field, ".clip"));
      if (!converted.ok()) return converted.status();
      clip = SourceClip{
          .clip = *std::move(converted),
          .time = c.time(),
          .mode = PlaybackModeFromProto(c.mode()),
          .rotation_interpolation =
              RotationInterpolationFromProto(c.rotation_interpolation())};
      break;
    }
    case v1::RetargetOp::kPose: {
      auto converted =
          PoseFromProto(op.pose(), src, absl::StrCat(input.field, ".pose"));
      if (!converted.ok()) return converted.status();
      pose = *std::move(converted);
      break;
    }
    case v1::RetargetOp::SOURCE_POSE_NOT_SET:
      return absl::InvalidArgumentError(absl::StrCat(
          input.field, ".source_pose: not set; send clip or pose"));
  }

  RetargetOptions options;
  if (op.has_root_scale()) options.root_scale = op.root_scale();
  auto source_tips =
      Tips(src, op.source_tips(), absl::StrCat(input.field, ".source_tips"));
  if (!source_tips.ok()) return source_tips.status();
  options.source_tips = *std::move(source_tips);
  auto target_tips = Tips(input.skeleton, op.target_tips(),
                          absl::StrCat(input.field, ".target_tips"));
  if (!target_tips.ok()) return target_tips.status();
  options.target_tips = *std::move(target_tips);
  auto map = RetargetMap::Create(src, input.skeleton,
                                 MappingFromProto(op.mapping()), options);
  if (!map.ok()) return Joined(input.field, map.status());
  std::optional<FeetPass> feet;
  if (op.has_feet()) {
    // Checked even when the pass is off, so a bad value never waits for
    // the flag to surface.
    const RetargetFeetOptions options = FeetOptionsFromProto(op.feet());
    if (absl::Status s = options.Validate(); !s.ok()) {
      return Joined(input.field, s);
    }
    if (op.feet().lock_contacts()) {
      auto legs = RetargetFeet::Create(*map, src, input.skeleton);
      if (!legs.ok()) return Joined(input.field, legs.status());
      feet = FeetPass{
          *std::move(legs), options,
          std::string(op.feet().state_key().empty() ? kDefaultFeetKey
                                                    : op.feet().state_key())};
    }
  }
  std::optional<HandsPass> hands;
  if (op.has_hands()) {
    RetargetHandsOptions options;
    if (op.hands().has_scaled_source_weight()) {
      options.scaled_source_weight = op.hands().scaled_source_weight();
    }
    if (absl::Status s = options.Validate(); !s.ok()) {
      return Joined(input.field, s);
    }
    if (op.hands().match_source()) {
      auto arms = RetargetHands::Create(*map, src, input.skeleton);
      if (!arms.ok()) return Joined(input.field, arms.status());
      hands = HandsPass{*std::move(arms), options};
    }
  }
  return std::make_unique<Retarget>(*std::move(source), *std::move(map),
                                    std::move(clip), std::move(pose),
                                    std::move(feet), std::move(hands));
}

}  // namespace

OpSpec RetargetOpSpec() {
  return {.op_case = v1::Operation::kRetarget,
          .updatable = kUpdateTime,
          .compile = Compile,
          .ranges = {}};
}

}  // namespace posewire::server
