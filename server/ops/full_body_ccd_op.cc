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

  absl::Status Run(OpFrame& frame) const override {
    FullBodyCcdJob job = job_;
    job.effectors = effectors_;
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
  auto settings = SettingsFromProto<FullBodyCcdJob>(input, op);
  if (!settings.ok()) return settings.status();
  auto translation = JointIndex(input.skeleton, op.translation_joint(),
                                absl::StrCat(input.field, ".translation_joint"),
                                /*allow_empty=*/true);
  if (!translation.ok()) return translation.status();
  FullBodyCcdJob job;
  job.max_iterations = settings->iterations;
  job.tolerance = settings->tolerance;
  if (op.has_weight()) job.weight = op.weight();
  job.nudge = op.nudge();
  job.translation_joint = *translation;
  return std::make_unique<FullBodyCcd>(
      job, std::move(effectors), std::move(settings->limits),
      std::vector<float>(op.joint_weights().begin(), op.joint_weights().end()));
}

}  // namespace

OpSpec FullBodyCcdOpSpec() {
  return {.op_case = v1::Operation::kFullBodyCcd,
          .updatable = {.target = false, .bend_goal = false, .time = false},
          .screens_input_pose = true,
          .compile = Compile};
}

}  // namespace posewire::server
