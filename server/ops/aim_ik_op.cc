// aim_ik: turns one joint so that its forward axis points at a target.
#include "absl/strings/str_cat.h"
#include "server/ops/ik_wire.h"
#include "server/ops/op_table.h"
#include "server/wire/wire_convert.h"
#include "solver_core/analytic_ik/aim_ik.h"
#include "solver_core/model/local_to_model.h"

namespace posewire::server {
namespace {

class AimIk final : public PreparedOp {
 public:
  AimIk(AimIkJob job, CompiledTarget target) : job_(job), target_(target) {}

  absl::Status Run(OpFrame& frame) const override {
    AimIkJob job = job_;
    auto target = target_.For(frame);
    if (!target.ok()) return target.status();
    job.target = *target;
    if (const v1::OpUpdate* update = frame.update) {
      if (update->has_pole_vector()) {
        job.pole_vector = UpdateVector(update->pole_vector());
      }
      if (update->has_weight()) job.weight = update->weight();
    }
    job.skeleton = &frame.skeleton;
    job.input = frame.pose;
    job.parent_model =
        ParentModelTransformOrRoot(frame.skeleton, frame.pose, job.joint);
    job.output = absl::MakeSpan(frame.pose);
    AimIkResult result;
    job.result = &result;
    if (absl::Status s = job.Run(); !s.ok()) return frame.field.Prefix(s);
    frame.result.set_reached(result.reached);
    frame.result.set_error(result.error);
    frame.result.set_iterations(result.iterations);
    if (result.clamped) frame.result.add_warnings("aim clamped to its cone");
    return absl::OkStatus();
  }

 private:
  AimIkJob job_;
  CompiledTarget target_;
};

CompiledOp Compile(const OpCompileInput& input) {
  const v1::AimIkOp& op = input.op.aim_ik();
  AimIkJob job;
  auto joint = JointIndex(input.skeleton, op.joint(),
                          absl::StrCat(input.field, ".joint"));
  if (!joint.ok()) return joint.status();
  job.joint = *joint;
  auto target = CompileTarget(op.has_target(), op.target(),
                              absl::StrCat(input.field, ".target"));
  if (!target.ok()) return target.status();
  struct Optional {
    bool has;
    const v1::Vec3& value;
    Eigen::Vector3f fallback;
    Eigen::Vector3f* out;
    const char* name;
  };
  for (const Optional& o :
       {Optional{op.has_pole_vector(), op.pole_vector(),
                 Eigen::Vector3f::UnitY(), &job.pole_vector, ".pole_vector"},
        Optional{op.has_forward(), op.forward(), Eigen::Vector3f::UnitX(),
                 &job.forward, ".forward"},
        Optional{op.has_up(), op.up(), Eigen::Vector3f::UnitY(), &job.up,
                 ".up"},
        Optional{op.has_offset(), op.offset(), Eigen::Vector3f::Zero(),
                 &job.offset, ".offset"}}) {
    auto v = OptionalVec3(o.has, o.value, o.fallback,
                          absl::StrCat(input.field, o.name));
    if (!v.ok()) return v.status();
    *o.out = *v;
  }
  job.twist_angle = op.twist_angle();
  if (op.has_weight()) job.weight = op.weight();
  job.clamp_weight = op.clamp_weight();
  auto smoothing = ClampSmoothingFromProto(
      op.clamp_smoothing(), absl::StrCat(input.field, ".clamp_smoothing"));
  if (!smoothing.ok()) return smoothing.status();
  job.clamp_smoothing = *smoothing;
  return std::make_unique<AimIk>(job, *target);
}

}  // namespace

OpSpec AimIkOpSpec() {
  return {.op_case = v1::Operation::kAimIk,
          .updatable = kUpdateTarget | kUpdateWeight | kUpdatePoleVector,
          .compile = Compile,
          .ranges = {ClampSmoothingRange()}};
}

}  // namespace posewire::server
