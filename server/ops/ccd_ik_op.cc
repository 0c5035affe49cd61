// ccd_ik: cyclic coordinate descent on a chain, with joint limits.
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/ops/ik_wire.h"
#include "server/ops/op_table.h"
#include "server/wire/wire_convert.h"
#include "solver_core/chain_ik/ccd_ik.h"

namespace posewire::server {
namespace {

class CcdIk final : public PreparedOp {
 public:
  CcdIk(CcdIkJob job, std::vector<int> chain, CompiledTarget target,
        std::vector<JointLimit> limits, std::vector<float> joint_weights)
      : job_(job),
        chain_(std::move(chain)),
        target_(target),
        limits_(std::move(limits)),
        joint_weights_(std::move(joint_weights)) {}

  absl::Status Run(OpFrame& frame) const override {
    auto target = target_.For(frame);
    if (!target.ok()) return target.status();
    CcdIkJob job = job_;
    job.chain = chain_;
    job.target = *target;
    job.joint_weights = joint_weights_;
    job.limits = limits_;
    return RunIkJob(job, frame);
  }

 private:
  CcdIkJob job_;  // scalar parameters; spans set per frame
  std::vector<int> chain_;
  CompiledTarget target_;
  std::vector<JointLimit> limits_;
  std::vector<float> joint_weights_;
};

CompiledOp Compile(const OpCompileInput& input) {
  const v1::CcdIkOp& op = input.op.ccd_ik();
  auto chain = ChainFromProto(input.skeleton, op.chain(),
                              absl::StrCat(input.field, ".chain"));
  if (!chain.ok()) return chain.status();
  auto target = CompileTarget(op.has_target(), op.target(),
                              absl::StrCat(input.field, ".target"));
  if (!target.ok()) return target.status();
  auto settings = SettingsFromProto<CcdIkJob>(input, op);
  if (!settings.ok()) return settings.status();
  auto fallback_axis = OptionalVec3(
      op.has_fallback_axis(), op.fallback_axis(), Eigen::Vector3f::UnitX(),
      absl::StrCat(input.field, ".fallback_axis"));
  if (!fallback_axis.ok()) return fallback_axis.status();
  CcdIkJob job;
  job.max_iterations = settings->iterations;
  job.tolerance = settings->tolerance;
  if (op.has_weight()) job.weight = op.weight();
  job.incremental = op.incremental();
  job.max_step_angle = op.max_step_angle();
  if (op.has_over_relaxation()) job.over_relaxation = op.over_relaxation();
  job.hinge_fallback = op.hinge_fallback();
  job.fallback_axis = *fallback_axis;
  job.nudge = op.nudge();
  if (op.has_polish()) job.polish = op.polish();
  return std::make_unique<CcdIk>(
      job, *std::move(chain), *target, std::move(settings->limits),
      std::vector<float>(op.joint_weights().begin(), op.joint_weights().end()));
}

}  // namespace

OpSpec CcdIkOpSpec() {
  return {.op_case = v1::Operation::kCcdIk,
          .updatable = kUpdateTarget | kUpdateWeight,
          .screens_input_pose = true,
          .compile = Compile,
          .ranges = {{.field = "max_iterations",
                      .min = 0,
                      .max = kMaxIkIterations,
                      .server_limited = true}}};
}

}  // namespace posewire::server
