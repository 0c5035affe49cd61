// fabrik_tree_ik: FABRIK on a subtree with several end effectors (both
// hands from the chest, say), with joint limits.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/ops/ik_wire.h"
#include "server/ops/op_table.h"
#include "server/wire/wire_convert.h"
#include "solver_core/chain_ik/fabrik_ik.h"

namespace posewire::server {
namespace {

class FabrikTreeIk final : public PreparedOp {
 public:
  FabrikTreeIk(FabrikTreeIkJob job, std::vector<FabrikEffector> effectors,
               std::vector<JointLimit> limits)
      : job_(job),
        effectors_(std::move(effectors)),
        limits_(std::move(limits)) {}

  absl::Status CheckUpdate(const v1::OpUpdate& update,
                           UpdateWhere where) const override {
    return CheckIndexedEffectorUpdates(
        update, static_cast<int>(effectors_.size()), false, where);
  }

  absl::Status Run(OpFrame& frame) const override {
    FabrikTreeIkJob job = job_;
    job.effectors = EffectorsThisFrame(
        effectors_, frame,
        [](const v1::EffectorUpdate& e, FabrikEffector& out) {
          if (e.has_target()) out.target = UpdateVector(e.target());
        });
    job.limits = limits_;
    return RunIkJob(job, frame);
  }

 private:
  FabrikTreeIkJob job_;
  std::vector<FabrikEffector> effectors_;
  std::vector<JointLimit> limits_;
};

CompiledOp Compile(const OpCompileInput& input) {
  const v1::FabrikTreeIkOp& op = input.op.fabrik_tree_ik();
  auto root =
      JointIndex(input.skeleton, op.root(), absl::StrCat(input.field, ".root"));
  if (!root.ok()) return root.status();
  std::vector<FabrikEffector> effectors;
  for (int i = 0; i < op.effectors_size(); ++i) {
    const v1::FabrikEffector& e = op.effectors(i);
    const std::string where = absl::StrCat(input.field, ".effectors[", i, "]");
    auto joint =
        JointIndex(input.skeleton, e.joint(), absl::StrCat(where, ".joint"));
    if (!joint.ok()) return joint.status();
    auto target = RequiredVec3(e.has_target(), e.target(),
                               absl::StrCat(where, ".target"));
    if (!target.ok()) return target.status();
    FabrikEffector effector;
    effector.joint = *joint;
    effector.target = *target;
    if (e.has_pull()) effector.pull = e.pull();
    effectors.push_back(effector);
  }
  auto solver = CompileSolver<FabrikTreeIkJob>(input, op);
  if (!solver.ok()) return solver.status();
  solver->job.root = *root;
  return std::make_unique<FabrikTreeIk>(solver->job, std::move(effectors),
                                        std::move(solver->limits));
}

}  // namespace

OpSpec FabrikTreeIkOpSpec() {
  return {.op_case = v1::Operation::kFabrikTreeIk,
          .updatable = kUpdateWeight | kUpdateEffectors,
          .compile = Compile,
          .ranges = IterativeSolverRanges()};
}

}  // namespace posewire::server
