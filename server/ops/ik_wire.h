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

absl::StatusOr<std::vector<int>> ChainFromProto(
    const Skeleton& skeleton,
    const google::protobuf::RepeatedPtrField<std::string>& names,
    absl::string_view field);

// One JointLimit per skeleton joint (kNone where nothing is given), or an
// empty vector when no limit is given at all.
absl::StatusOr<std::vector<JointLimit>> LimitsFromProto(
    const Skeleton& skeleton,
    const google::protobuf::RepeatedPtrField<v1::JointLimitSpec>& specs,
    absl::string_view field);

// What every iterative solver op shares: the iteration cap, tolerance and
// joint limits. Unset fields take the core job's defaults (`Job`'s
// max_iterations and tolerance), so a client that sends only the required
// fields gets exactly the core's default solve.
struct SolverSettings {
  int iterations = 0;
  IkTolerance tolerance;
  std::vector<JointLimit> limits;
};

template <typename Job, typename Op>
absl::StatusOr<SolverSettings> SettingsFromProto(const OpCompileInput& input,
                                                 const Op& op) {
  SolverSettings settings;
  const Job defaults;
  auto iterations =
      Iterations(op.has_max_iterations(), op.max_iterations(),
                 defaults.max_iterations, input.limits.max_solver_iterations,
                 absl::StrCat(input.field, ".max_iterations"));
  if (!iterations.ok()) return iterations.status();
  settings.iterations = *iterations;
  auto tolerance = ToleranceFromProto(op.tolerance(), defaults.tolerance,
                                      absl::StrCat(input.field, ".tolerance"));
  if (!tolerance.ok()) return tolerance.status();
  settings.tolerance = *tolerance;
  auto limits = LimitsFromProto(input.skeleton, op.limits(),
                                absl::StrCat(input.field, ".limits"));
  if (!limits.ok()) return limits.status();
  settings.limits = *std::move(limits);
  return settings;
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
  job.output = absl::MakeSpan(frame.pose);
  IkResult result;
  job.result = &result;
  if (absl::Status s = job.Run(); !s.ok()) return frame.field.Prefix(s);
  ReportIk(result, frame.result);
  return absl::OkStatus();
}

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_OPS_IK_WIRE_H_
