// Wire parameters the IK ops share, converted and checked once when an op
// is compiled: chains, iteration caps, tolerances, joint limits, targets.
#ifndef POSEWIRE_SERVER_OPS_IK_WIRE_H_
#define POSEWIRE_SERVER_OPS_IK_WIRE_H_

#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "posewire/v1/operations.pb.h"
#include "server/ops/op.h"
#include "server/ops/op_table.h"
#include "server/wire/wire_convert.h"
#include "solver_core/chain_ik/ik_chain.h"
#include "solver_core/chain_ik/joint_limits.h"

namespace posewire::server {

// A required vector: unset is an error, since a default target would be a
// silently wrong pose.
absl::StatusOr<Eigen::Vector3f> RequiredVec3(bool has, const v1::Vec3& v,
                                             absl::string_view field);
absl::StatusOr<Eigen::Vector3f> OptionalVec3(bool has, const v1::Vec3& v,
                                             const Eigen::Vector3f& fallback,
                                             absl::string_view field);

// An op's target: given when compiled, or only by each frame's op update
// (a rig whose target moves every frame need not send one up front).
struct CompiledTarget {
  std::optional<Eigen::Vector3f> value;
  // Where a missing target is reported, e.g. ".target".
  absl::string_view leaf = ".target";

  // The frame's update's target, else the compiled one; INVALID_ARGUMENT
  // "<field>.target: required" when neither.
  absl::StatusOr<Eigen::Vector3f> For(const OpFrame& frame) const;
};
absl::StatusOr<CompiledTarget> CompileTarget(bool has, const v1::Vec3& v,
                                             absl::string_view field);

// `value` iterations when `has`, else `fallback` (the solver's own default)
// capped at `limit`; RESOURCE_EXHAUSTED naming the GetInfo limit when a
// value sent is above `limit`.
absl::StatusOr<int> Iterations(bool has, uint32_t value, int fallback,
                               int limit, absl::string_view field);

// The tolerance sent, or `fallback` (the solver's own default) when none is.
absl::StatusOr<IkTolerance> ToleranceFromProto(const v1::Tolerance& proto,
                                               const IkTolerance& fallback,
                                               absl::string_view field);

// The joints `names` name, in order: INVALID_ARGUMENT "<field>[i]: no joint
// named ..." for an unknown one. No check of how they relate.
absl::StatusOr<std::vector<int>> JointsFromProto(
    const Skeleton& skeleton,
    const google::protobuf::RepeatedPtrField<std::string>& names,
    absl::string_view field);

// JointsFromProto, each joint the parent of the next (ValidateChain).
absl::StatusOr<std::vector<int>> ChainFromProto(
    const Skeleton& skeleton,
    const google::protobuf::RepeatedPtrField<std::string>& names,
    absl::string_view field);

EulerOrder EulerOrderFromProto(v1::EulerOrder order);
v1::EulerOrder EulerOrderToProto(EulerOrder order);

// The wire form of `limits` (one per joint of `skeleton`): a spec per
// joint whose limit is not kNone, in joint order, that LimitsFromProto
// reads back to the same floats.
void LimitsToProto(
    const Skeleton& skeleton, absl::Span<const JointLimit> limits,
    google::protobuf::RepeatedPtrField<v1::JointLimitSpec>* specs);

// One JointLimit per skeleton joint (kNone where nothing is given), or an
// empty vector when no limit is given at all.
absl::StatusOr<std::vector<JointLimit>> LimitsFromProto(
    const Skeleton& skeleton,
    const google::protobuf::RepeatedPtrField<v1::JointLimitSpec>& specs,
    absl::string_view field);

// What every iterative solver op shares, compiled into its core job: the
// iteration cap, tolerance and weight, plus the joint limits the job's
// `limits` span is to point into. Unset fields take the core job's defaults
// (`Job`'s max_iterations and tolerance), so a client that sends only the
// required fields gets exactly the core's default solve.
template <typename Job>
struct CompiledSolver {
  Job job;
  std::vector<JointLimit> limits;
};

template <typename Job, typename Op>
absl::StatusOr<CompiledSolver<Job>> CompileSolver(const OpCompileInput& input,
                                                  const Op& op) {
  CompiledSolver<Job> out;
  auto iterations =
      Iterations(op.has_max_iterations(), op.max_iterations(),
                 out.job.max_iterations, input.limits.max_solver_iterations,
                 absl::StrCat(input.field, ".max_iterations"));
  if (!iterations.ok()) return iterations.status();
  out.job.max_iterations = *iterations;
  auto tolerance = ToleranceFromProto(op.tolerance(), out.job.tolerance,
                                      absl::StrCat(input.field, ".tolerance"));
  if (!tolerance.ok()) return tolerance.status();
  out.job.tolerance = *tolerance;
  if (op.has_weight()) out.job.weight = op.weight();
  auto limits = LimitsFromProto(input.skeleton, op.limits(),
                                absl::StrCat(input.field, ".limits"));
  if (!limits.ok()) return limits.status();
  out.limits = *std::move(limits);
  return out;
}

// The bounded counts of an iterative solver op, for its OpSpec.
std::vector<FieldRange> IterativeSolverRanges();

// The clamp_smoothing of the ops with FinalIK's cone clamp (aim_ik,
// look_at): the wire documents FinalIK's range [0, 2]; the core jobs accept
// more passes, which the proto does not promise. `value` when in range,
// else INVALID_ARGUMENT "<field>: 5 is not in [0, 2]".
absl::StatusOr<int> ClampSmoothingFromProto(int32_t value,
                                            absl::string_view field);
// Its range, for the op's OpSpec.
FieldRange ClampSmoothingRange();

// The arrays a single-chain solver op owns (CCD, FABRIK) and its job's spans
// point into; a job without one of these fields ignores it.
struct ChainArrays {
  std::vector<int> chain;
  std::vector<JointLimit> limits;
  std::vector<float> joint_weights;
  std::vector<SignedAngleRange> planar_limits;
};

// A chain solver's op: every parameter compiled once into `job`, each frame
// only the target (from the frame's update or the compiled one) and weight.
template <typename Job>
class ChainToTargetOp final : public PreparedOp {
 public:
  ChainToTargetOp(Job job, ChainArrays arrays, CompiledTarget target)
      : job_(job), arrays_(std::move(arrays)), target_(target) {}

  absl::Status Run(OpFrame& frame) const override {
    auto target = target_.For(frame);
    if (!target.ok()) return target.status();
    Job job = job_;
    job.chain = arrays_.chain;
    job.limits = arrays_.limits;
    if constexpr (requires { job.joint_weights; }) {
      job.joint_weights = arrays_.joint_weights;
    }
    if constexpr (requires { job.planar_limits; }) {
      job.planar_limits = arrays_.planar_limits;
    }
    job.target = *target;
    return RunIkJob(job, frame);
  }

  // The job writes the chain's joints and copies the rest.
  std::optional<std::vector<int>> JointsWritten() const override {
    return std::vector<int>(arrays_.chain.begin(), arrays_.chain.end());
  }

 private:
  Job job_;  // scalar parameters; spans set per frame
  ChainArrays arrays_;
  CompiledTarget target_;
};

// A multi-effector op's effectors for this frame: the compiled ones, or,
// when the frame's update moves some, a per-thread copy with
// `apply(update, effector)` run on each one named.
template <typename Effector, typename Apply>
absl::Span<const Effector> EffectorsThisFrame(
    const std::vector<Effector>& compiled, const OpFrame& frame, Apply apply) {
  if (frame.update == nullptr || frame.update->effectors().empty()) {
    return compiled;
  }
  thread_local std::vector<Effector> moved;
  moved.assign(compiled.begin(), compiled.end());
  for (const v1::EffectorUpdate& e : frame.update->effectors()) {
    apply(e, moved[e.index()]);  // indices checked by CheckUpdate
  }
  return moved;
}

// Checks an update's effectors against an op with `count` effectors
// addressed by index: each index in range and updated once, only the fields
// such an effector has (a target, and a weight when `takes_weight`), finite
// values.
absl::Status CheckIndexedEffectorUpdates(const v1::OpUpdate& update, int count,
                                         bool takes_weight, UpdateWhere where);

// Writes a chain solver's outcome to the op's result.
void ReportIk(const IkResult& result, v1::OperationResult& out);

// Runs an iterative solver's `job` (its parameters set) in place on the
// frame's pose and reports its outcome.
template <typename Job>
absl::Status RunIkJob(Job& job, OpFrame& frame) {
  if (frame.update != nullptr && frame.update->has_weight()) {
    job.weight = frame.update->weight();
  }
  job.skeleton = &frame.skeleton;
  job.input = frame.pose;
  job.input_validated = frame.pose_validated;
  job.output = absl::MakeSpan(frame.pose);
  IkResult result;
  job.result = &result;
  if (absl::Status s = job.Run(); !s.ok()) return frame.field.Prefix(s);
  ReportIk(result, frame.result);
  return absl::OkStatus();
}

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_OPS_IK_WIRE_H_
