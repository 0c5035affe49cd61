#include "server/ops/pose_source.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "server/wire/wire_convert.h"

namespace posewire::server {

absl::Status UnknownEnum(absl::string_view field, int value) {
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": unknown value ", value));
}

absl::StatusOr<CompiledSample> CompileSample(const v1::ClipSample& sample,
                                             absl::string_view op_field,
                                             std::string field) {
  if (!v1::PlaybackMode_IsValid(sample.mode())) {
    return UnknownEnum(absl::StrCat(op_field, field, ".mode"), sample.mode());
  }
  if (!v1::RotationInterpolation_IsValid(sample.rotation_interpolation())) {
    return UnknownEnum(absl::StrCat(op_field, field, ".rotation_interpolation"),
                       sample.rotation_interpolation());
  }
  CompiledSample out;
  out.clip = sample.clip();
  out.time = sample.time();
  out.mode = PlaybackModeFromProto(sample.mode());
  out.rotation_interpolation =
      RotationInterpolationFromProto(sample.rotation_interpolation());
  out.field = std::move(field);
  return out;
}

absl::Status SampleInto(const OpFrame& frame, const CompiledSample& sample,
                        float time, absl::Span<Transform> out) {
  // The clip's field is named only for an error (field_name.h).
  auto clip = frame.clips.Find(sample.clip, absl::string_view());
  if (!clip.ok()) {
    return frame.clips
        .Find(sample.clip,
              absl::StrCat(frame.field.str(), sample.field, ".clip"))
        .status();
  }
  SamplingJob job;
  job.skeleton = &frame.skeleton;
  job.clip = &frame.clips.clip(*clip);
  job.clip_validated = true;
  job.time = time;
  job.mode = sample.mode;
  job.rotation_interpolation = sample.rotation_interpolation;
  job.output = out;
  absl::Status status = job.Run();
  if (!status.ok()) {
    return PrefixField(absl::StrCat(frame.field.str(), sample.field), status);
  }
  return status;
}

absl::StatusOr<CompiledSource> CompileSource(const OpCompileInput& input,
                                             const v1::PoseSource& source,
                                             const std::string& field) {
  CompiledSource out;
  out.kind = source.source_case();
  switch (source.source_case()) {
    case v1::PoseSource::kCurrent:
    case v1::PoseSource::kRest:
      return out;
    case v1::PoseSource::kClip: {
      auto sample = CompileSample(source.clip(), input.field,
                                  absl::StrCat(field, ".clip"));
      if (!sample.ok()) return sample.status();
      out.sample = *std::move(sample);
      return out;
    }
    case v1::PoseSource::kPose: {
      auto pose = PoseFromProto(source.pose(), input.skeleton,
                                absl::StrCat(input.field, field, ".pose"));
      if (!pose.ok()) return pose.status();
      out.pose = *std::move(pose);
      return out;
    }
    case v1::PoseSource::SOURCE_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      input.field, field, ": no source set (current, rest, clip or pose)"));
}

absl::Status ResolveSource(const OpFrame& frame, const CompiledSource& source,
                           LocalPose& out) {
  switch (source.kind) {
    case v1::PoseSource::kCurrent:
      out = frame.pose;
      return absl::OkStatus();
    case v1::PoseSource::kRest:
      out = RestPose(frame.skeleton);
      return absl::OkStatus();
    case v1::PoseSource::kClip:
      out.resize(frame.skeleton.num_joints());
      return SampleInto(frame, source.sample, source.sample.time,
                        absl::MakeSpan(out));
    case v1::PoseSource::kPose:
      out = source.pose;
      return absl::OkStatus();
    case v1::PoseSource::SOURCE_NOT_SET:
      break;
  }
  return absl::InternalError("an uncompiled pose source");
}

absl::Status CheckJointWeights(
    const google::protobuf::RepeatedField<float>& weights,
    const Skeleton& skeleton, absl::string_view field) {
  if (!weights.empty() && weights.size() != skeleton.num_joints()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", weights.size(), " weights for ",
                     skeleton.num_joints(), " joints (or send none)"));
  }
  return absl::OkStatus();
}

}  // namespace posewire::server
