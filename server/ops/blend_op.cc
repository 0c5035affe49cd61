// blend: a weighted blend of layers (current pose, rest pose, a clip sample
// or a given pose) under an optional blend root.
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/ops/op_table.h"
#include "server/ops/pose_source.h"
#include "server/wire/wire_convert.h"
#include "solver_core/pose_ops/blending_job.h"

namespace posewire::server {
namespace {

struct Layer {
  CompiledSource source;
  float weight = 0.0f;
  std::vector<float> joint_weights;
};

class Blend final : public PreparedOp {
 public:
  Blend(std::vector<Layer> layers, BlendingJob job)
      : layers_(std::move(layers)), job_(job) {}

  absl::Status CheckUpdate(const v1::OpUpdate& update,
                           UpdateWhere where) const override {
    if (update.layer_weights_size() != static_cast<int>(layers_.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat(where(".layer_weights"), ": ",
                       update.layer_weights_size(), " weights for ",
                       layers_.size(), " layers (one per layer, in order)"));
    }
    for (int i = 0; i < update.layer_weights_size(); ++i) {
      const float w = update.layer_weights(i);
      // Anything else is the layer weight's own contract (the job's).
      if (!std::isfinite(w)) {
        return absl::InvalidArgumentError(
            absl::StrCat(where(absl::StrCat(".layer_weights[", i, "]")), ": ",
                         w, " is not finite"));
      }
    }
    return absl::OkStatus();
  }

  absl::Status Run(OpFrame& frame) const override {
    const size_t n = layers_.size();
    const bool reweighted =
        frame.update != nullptr && !frame.update->layer_weights().empty();
    std::vector<LocalPose> poses(n);
    std::vector<BlendLayer> layers(n);
    for (size_t i = 0; i < n; ++i) {
      if (absl::Status s = ResolveSource(frame, layers_[i].source, poses[i]);
          !s.ok()) {
        return s;
      }
      layers[i].transform = poses[i];
      layers[i].weight =
          reweighted ? frame.update->layer_weights(i) : layers_[i].weight;
      layers[i].joint_weights = layers_[i].joint_weights;
    }
    BlendingJob job = job_;
    job.skeleton = &frame.skeleton;
    job.layers = layers;
    job.output = absl::MakeSpan(frame.pose);
    return frame.field.Prefix(job.Run());
  }

 private:
  std::vector<Layer> layers_;
  BlendingJob job_;  // every field but skeleton, layers and output
};

CompiledOp Compile(const OpCompileInput& input) {
  const v1::BlendOp& op = input.op.blend();
  if (op.layers_size() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(input.field, ".layers: at least one layer is required"));
  }
  std::vector<Layer> layers(op.layers_size());
  for (int i = 0; i < op.layers_size(); ++i) {
    const v1::BlendLayer& wire = op.layers(i);
    const std::string where = absl::StrCat(".layers[", i, "]");
    auto source =
        CompileSource(input, wire.source(), absl::StrCat(where, ".source"));
    if (!source.ok()) return source.status();
    if (absl::Status s = CheckJointWeights(
            wire.joint_weights(), input.skeleton,
            absl::StrCat(input.field, where, ".joint_weights"));
        !s.ok()) {
      return s;
    }
    layers[i].source = *std::move(source);
    layers[i].weight = wire.weight();
    layers[i].joint_weights.assign(wire.joint_weights().begin(),
                                   wire.joint_weights().end());
  }
  auto root = JointIndex(input.skeleton, op.blend_root(),
                         absl::StrCat(input.field, ".blend_root"), true);
  if (!root.ok()) return root.status();
  BlendingJob job;
  job.base_layer = op.has_base_layer() ? op.base_layer() : -1;
  job.blend_root = *root;
  if (op.has_threshold()) job.threshold = op.threshold();
  return std::make_unique<Blend>(std::move(layers), job);
}

}  // namespace

OpSpec BlendOpSpec() {
  return {.op_case = v1::Operation::kBlend,
          .updatable = kUpdateLayerWeights,
          .compile = Compile,
          .ranges = {}};
}

}  // namespace posewire::server
