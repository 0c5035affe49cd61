// fabrik_ik: forward-and-backward reaching on a chain, with joint limits
// and optional planar (2D) angle limits.
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/ops/ik_wire.h"
#include "server/ops/op_table.h"
#include "server/wire/wire_convert.h"
#include "solver_core/chain_ik/fabrik_ik.h"

namespace posewire::server {
namespace {

class FabrikIk final : public PreparedOp {
 public:
  FabrikIk(FabrikIkJob job, std::vector<int> chain, CompiledTarget target,
           std::vector<JointLimit> limits,
           std::vector<SignedAngleRange> planar_limits)
      : job_(job),
        chain_(std::move(chain)),
        target_(target),
        limits_(std::move(limits)),
        planar_limits_(std::move(planar_limits)) {}

  absl::Status Run(OpFrame& frame) const override {
    auto target = target_.For(frame);
    if (!target.ok()) return target.status();
    FabrikIkJob job = job_;
    job.chain = chain_;
    job.target = *target;
    job.limits = limits_;
    job.planar_limits = planar_limits_;
    return RunIkJob(job, frame);
  }

 private:
  FabrikIkJob job_;
  std::vector<int> chain_;
  CompiledTarget target_;
  std::vector<JointLimit> limits_;
  std::vector<SignedAngleRange> planar_limits_;
};

CompiledOp Compile(const OpCompileInput& input) {
  const v1::FabrikIkOp& op = input.op.fabrik_ik();
  auto chain = ChainFromProto(input.skeleton, op.chain(),
                              absl::StrCat(input.field, ".chain"));
  if (!chain.ok()) return chain.status();
  auto target = CompileTarget(op.has_target(), op.target(),
                              absl::StrCat(input.field, ".target"));
  if (!target.ok()) return target.status();
  auto settings = SettingsFromProto<FabrikIkJob>(input, op);
  if (!settings.ok()) return settings.status();
  auto normal = OptionalVec3(op.has_plane_normal(), op.plane_normal(),
                             Eigen::Vector3f::Zero(),
                             absl::StrCat(input.field, ".plane_normal"));
  if (!normal.ok()) return normal.status();
  std::vector<SignedAngleRange> planar;
  for (const v1::AngleRange& range : op.planar_limits()) {
    planar.push_back(SignedAngleRange{range.min(), range.max()});
  }
  FabrikIkJob job;
  job.max_iterations = settings->iterations;
  job.tolerance = settings->tolerance;
  if (op.has_weight()) job.weight = op.weight();
  if (op.has_over_relaxation()) job.over_relaxation = op.over_relaxation();
  job.plane_normal = *normal;
  if (op.has_polish()) job.polish = op.polish();
  return std::make_unique<FabrikIk>(job, *std::move(chain), *target,
                                    std::move(settings->limits),
                                    std::move(planar));
}

}  // namespace

OpSpec FabrikIkOpSpec() {
  return {.op_case = v1::Operation::kFabrikIk,
          .updatable = kUpdateTarget | kUpdateWeight,
          .screens_input_pose = true,
          .compile = Compile,
          .ranges = {{.field = "max_iterations",
                      .min = 0,
                      .max = kMaxIkIterations,
                      .server_limited = true}}};
}

}  // namespace posewire::server
