// Clip samples and layer sources shared by the pose ops (sample_clip,
// blend, additive), compiled once and resolved per frame.
#ifndef POSEWIRE_SERVER_OPS_POSE_SOURCE_H_
#define POSEWIRE_SERVER_OPS_POSE_SOURCE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "posewire/v1/operations.pb.h"
#include "server/ops/op.h"
#include "solver_core/pose_ops/sampling_job.h"

namespace posewire::server {

// Proto3 enums are open: a newer client may send a value this server does
// not know. Mapping it to the default would solve something else than was
// asked, so it is an error naming the field.
absl::Status UnknownEnum(absl::string_view field, int value);

// A ClipSample with its enums checked. The clip is looked up by name when
// the frame runs: a session may register the clip after the rig.
struct CompiledSample {
  std::string clip;
  float time = 0.0f;
  PlaybackMode mode = PlaybackMode::kLoop;
  RotationInterpolation rotation_interpolation = RotationInterpolation::kNlerp;
  // Its field for errors, relative to the op: e.g. ".layers[1].source.clip".
  std::string field;
};

absl::StatusOr<CompiledSample> CompileSample(const v1::ClipSample& sample,
                                             absl::string_view op_field,
                                             std::string field);

// Samples `sample` at `time` into `out`.
absl::Status SampleInto(const OpFrame& frame, const CompiledSample& sample,
                        float time, absl::Span<Transform> out);

// A blend layer's or additive input's source.
struct CompiledSource {
  v1::PoseSource::SourceCase kind = v1::PoseSource::SOURCE_NOT_SET;
  CompiledSample sample;  // kClip
  LocalPose pose;         // kPose
};

// `field` is the source's field relative to the op, e.g. ".base".
absl::StatusOr<CompiledSource> CompileSource(const OpCompileInput& input,
                                             const v1::PoseSource& source,
                                             const std::string& field);

// Resolves `source` for this frame into `out`.
absl::Status ResolveSource(const OpFrame& frame, const CompiledSource& source,
                           LocalPose& out);

// Per-joint weights: none, or one per joint.
absl::Status CheckJointWeights(
    const google::protobuf::RepeatedField<float>& weights,
    const Skeleton& skeleton, absl::string_view field);

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_OPS_POSE_SOURCE_H_
