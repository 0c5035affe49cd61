// full_body_ccd: CCD over the whole skeleton toward several effectors at
// once, optionally moving a root joint.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/ops/ik_wire.h"
#include "server/ops/op_table.h"
#include "server/wire/wire_convert.h"
#include "solver_core/full_body/full_body_ccd.h"

namespace posewire::server {
namespace {

class FullBodyCcd final : public PreparedOp {
 public:
  FullBodyCcd(FullBodyCcdJob job, std::vector<FullBodyCcdEffector> effectors,
              std::vector<JointLimit> limits, std::vector<float> joint_weights)
      : job_(job),
        effectors_(std::move(effectors)),
        limits_(std::move(limits)),
        joint_weights_(std::move(joint_weights)) {}

  absl::Status CheckUpdate(const v1::OpUpdate& update,
                           UpdateWhere where) const override {
    return CheckIndexedEffectorUpdates(
        update, static_cast<int>(effectors_.size()), true, where);
  }

  absl::Status Run(OpFrame& frame) const override {
    FullBodyCcdJob job = job_;
    job.effectors = EffectorsThisFrame(
        effectors_, frame,
        [](const v1::EffectorUpdate& e, FullBodyCcdEffector& out) {
          if (e.has_target()) out.target = UpdateVector(e.target());
          if (e.has_position_weight()) out.weight = e.position_weight();
        });
    job.joint_weights = joint_weights_;
    job.limits = limits_;
    return RunIkJob(job, frame);
  }

 private:
  FullBodyCcdJob job_;
  std::vector<FullBodyCcdEffector> effectors_;
  std::vector<JointLimit> limits_;
  std::vector<float> joint_weights_;
};

CompiledOp Compile(const OpCompileInput& input) {
  const v1::FullBodyCcdOp& op = input.op.full_body_ccd();
  std::vector<FullBodyCcdEffector> effectors;
  for (int i = 0; i < op.effectors_size(); ++i) {
    const v1::FullBodyCcdEffector& e = op.effectors(i);
    const std::string where = absl::StrCat(input.field, ".effectors[", i, "]");
    auto joint =
        JointIndex(input.skeleton, e.joint(), absl::StrCat(where, ".joint"));
    if (!joint.ok()) return joint.status();
    auto target = RequiredVec3(e.has_target(), e.target(),
                               absl::StrCat(where, ".target"));
    if (!target.ok()) return target.status();
    auto offset = Vec3FromProto(e.offset(), absl::StrCat(where, ".offset"));
    if (!offset.ok()) return offset.status();
    FullBodyCcdEffector effector;
    effector.joint = *joint;
    effector.offset = *offset;
    effector.target = *target;
    if (e.has_weight()) effector.weight = e.weight();
    effectors.push_back(effector);
  }
  auto solver = CompileSolver<FullBodyCcdJob>(input, op);
  if (!solver.ok()) return solver.status();
  auto translation = JointIndex(input.skeleton, op.translation_joint(),
                                absl::StrCat(input.field, ".translation_joint"),
                                /*allow_empty=*/true);
  if (!translation.ok()) return translation.status();
  FullBodyCcdJob& job = solver->job;
  job.nudge = op.nudge();
  job.translation_joint = *translation;
  return std::make_unique<FullBodyCcd>(
      job, std::move(effectors), std::move(solver->limits),
      std::vector<float>(op.joint_weights().begin(), op.joint_weights().end()));
}

}  // namespace

OpSpec FullBodyCcdOpSpec() {
  return {.op_case = v1::Operation::kFullBodyCcd,
          .updatable = kUpdateWeight | kUpdateEffectors,
          .compile = Compile,
          .ranges = IterativeSolverRanges()};
}

}  // namespace posewire::server
