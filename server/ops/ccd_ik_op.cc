// ccd_ik: cyclic coordinate descent on a chain, with joint limits.
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/ops/ik_wire.h"
#include "server/ops/op_table.h"
#include "server/wire/wire_convert.h"
#include "solver_core/chain_ik/ccd_ik.h"

namespace posewire::server {
namespace {

CompiledOp Compile(const OpCompileInput& input) {
  const v1::CcdIkOp& op = input.op.ccd_ik();
  auto chain = ChainFromProto(input.skeleton, op.chain(),
                              absl::StrCat(input.field, ".chain"));
  if (!chain.ok()) return chain.status();
  auto target = CompileTarget(op.has_target(), op.target(),
                              absl::StrCat(input.field, ".target"));
  if (!target.ok()) return target.status();
  auto solver = CompileSolver<CcdIkJob>(input, op);
  if (!solver.ok()) return solver.status();
  auto fallback_axis = OptionalVec3(
      op.has_fallback_axis(), op.fallback_axis(), Eigen::Vector3f::UnitX(),
      absl::StrCat(input.field, ".fallback_axis"));
  if (!fallback_axis.ok()) return fallback_axis.status();
  CcdIkJob& job = solver->job;
  job.incremental = op.incremental();
  job.max_step_angle = op.max_step_angle();
  if (op.has_over_relaxation()) job.over_relaxation = op.over_relaxation();
  job.hinge_fallback = op.hinge_fallback();
  job.fallback_axis = *fallback_axis;
  job.nudge = op.nudge();
  if (op.has_polish()) job.polish = op.polish();
  return std::make_unique<ChainToTargetOp<CcdIkJob>>(
      job,
      ChainArrays{.chain = *std::move(chain),
                  .limits = std::move(solver->limits),
                  .joint_weights = {op.joint_weights().begin(),
                                    op.joint_weights().end()},
                  .planar_limits = {}},
      *target);
}

}  // namespace

OpSpec CcdIkOpSpec() {
  return {.op_case = v1::Operation::kCcdIk,
          .updatable = kUpdateTarget | kUpdateWeight,
          .compile = Compile,
          .ranges = IterativeSolverRanges()};
}

}  // namespace posewire::server
