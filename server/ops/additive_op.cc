// additive: the difference between two sources (additive - base), applied
// to the current pose with a weight, under an optional blend root.
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/ops/op_table.h"
#include "server/ops/pose_source.h"
#include "server/wire/wire_convert.h"
#include "solver_core/pose_ops/additive_job.h"

namespace posewire::server {
namespace {

class Additive final : public PreparedOp {
 public:
  Additive(CompiledSource base, CompiledSource additive, float weight,
           std::vector<float> joint_weights, int blend_root)
      : base_(std::move(base)),
        additive_(std::move(additive)),
        weight_(weight),
        joint_weights_(std::move(joint_weights)),
        blend_root_(blend_root) {}

  absl::Status Run(OpFrame& frame) const override {
    LocalPose base, additive;
    if (absl::Status s = ResolveSource(frame, base_, base); !s.ok()) return s;
    if (absl::Status s = ResolveSource(frame, additive_, additive); !s.ok()) {
      return s;
    }
    LocalPose delta(frame.skeleton.num_joints());
    MakeAdditiveJob make{.skeleton = &frame.skeleton,
                         .base = base,
                         .additive = additive,
                         .delta = absl::MakeSpan(delta)};
    if (absl::Status s = make.Run(); !s.ok()) {
      return frame.field.Prefix(s);
    }
    AdditiveJob apply;
    apply.skeleton = &frame.skeleton;
    apply.input = frame.pose;
    apply.input_validated = frame.pose_validated;
    apply.delta = delta;
    apply.weight = frame.update != nullptr && frame.update->has_weight()
                       ? frame.update->weight()
                       : weight_;
    apply.joint_weights = joint_weights_;
    apply.blend_root = blend_root_;
    apply.output = absl::MakeSpan(frame.pose);
    return frame.field.Prefix(apply.Run());
  }

 private:
  CompiledSource base_, additive_;
  float weight_;
  std::vector<float> joint_weights_;
  int blend_root_;
};

CompiledOp Compile(const OpCompileInput& input) {
  const v1::AdditiveOp& op = input.op.additive();
  auto base = CompileSource(input, op.base(), ".base");
  if (!base.ok()) return base.status();
  auto additive = CompileSource(input, op.additive(), ".additive");
  if (!additive.ok()) return additive.status();
  if (absl::Status s =
          CheckJointWeights(op.joint_weights(), input.skeleton,
                            absl::StrCat(input.field, ".joint_weights"));
      !s.ok()) {
    return s;
  }
  auto root = JointIndex(input.skeleton, op.blend_root(),
                         absl::StrCat(input.field, ".blend_root"), true);
  if (!root.ok()) return root.status();
  return std::make_unique<Additive>(
      *std::move(base), *std::move(additive), op.weight(),
      std::vector<float>(op.joint_weights().begin(), op.joint_weights().end()),
      *root);
}

}  // namespace

OpSpec AdditiveOpSpec() {
  return {.op_case = v1::Operation::kAdditive,
          .updatable = kUpdateWeight,
          .compile = Compile,
          .ranges = {}};
}

}  // namespace posewire::server
