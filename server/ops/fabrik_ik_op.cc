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

CompiledOp Compile(const OpCompileInput& input) {
  const v1::FabrikIkOp& op = input.op.fabrik_ik();
  auto chain = ChainFromProto(input.skeleton, op.chain(),
                              absl::StrCat(input.field, ".chain"));
  if (!chain.ok()) return chain.status();
  auto target = CompileTarget(op.has_target(), op.target(),
                              absl::StrCat(input.field, ".target"));
  if (!target.ok()) return target.status();
  auto solver = CompileSolver<FabrikIkJob>(input, op);
  if (!solver.ok()) return solver.status();
  auto normal = OptionalVec3(op.has_plane_normal(), op.plane_normal(),
                             Eigen::Vector3f::Zero(),
                             absl::StrCat(input.field, ".plane_normal"));
  if (!normal.ok()) return normal.status();
  std::vector<SignedAngleRange> planar;
  for (const v1::AngleRange& range : op.planar_limits()) {
    planar.push_back(SignedAngleRange{range.min(), range.max()});
  }
  FabrikIkJob& job = solver->job;
  if (op.has_over_relaxation()) job.over_relaxation = op.over_relaxation();
  job.plane_normal = *normal;
  if (op.has_polish()) job.polish = op.polish();
  return std::make_unique<ChainToTargetOp<FabrikIkJob>>(
      job,
      ChainArrays{.chain = *std::move(chain),
                  .limits = std::move(solver->limits),
                  .joint_weights = {},
                  .planar_limits = std::move(planar)},
      *target);
}

}  // namespace

OpSpec FabrikIkOpSpec() {
  return {.op_case = v1::Operation::kFabrikIk,
          .updatable = kUpdateTarget | kUpdateWeight,
          .compile = Compile,
          .ranges = IterativeSolverRanges()};
}

}  // namespace posewire::server
