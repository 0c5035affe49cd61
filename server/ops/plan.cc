#include "server/ops/plan.h"

#include <chrono>
#include <cmath>
#include <string>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "server/ops/op_table.h"
#include "server/wire/wire_convert.h"
#include "solver_core/model/pose.h"

namespace posewire::server {

absl::StatusOr<std::shared_ptr<const Plan>> Plan::Compile(
    const Skeleton& skeleton,
    const google::protobuf::RepeatedPtrField<v1::Operation>& ops,
    OpLimits limits, absl::string_view field, const RegistryLookup* registry) {
  auto plan = std::make_shared<Plan>();
  plan->cases_.reserve(ops.size());
  plan->ops_.reserve(ops.size());
  for (int i = 0; i < ops.size(); ++i) {
    const v1::Operation& op = ops[i];
    const OpSpec* spec = FindOpSpec(op.op_case());
    if (spec == nullptr) {
      const std::string where = absl::StrCat(field, ".ops[", i, "]");
      // A newer client may send an operation this server does not know:
      // protobuf keeps it as an unknown field.
      if (op.op_case() != v1::Operation::OP_NOT_SET ||
          !op.GetReflection()->GetUnknownFields(op).empty()) {
        return absl::UnimplementedError(
            absl::StrCat(where,
                         ": an operation this server does not implement (see "
                         "GetInfo operations)"));
      }
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": no operation set"));
    }
    std::string suffix =
        absl::StrCat(".ops[", i, "].", OperationName(op.op_case()));
    const std::string op_field = absl::StrCat(field, suffix);
    CompiledOp compiled = spec->compile(OpCompileInput{.skeleton = skeleton,
                                                       .op = op,
                                                       .limits = limits,
                                                       .field = op_field,
                                                       .registry = registry});
    if (!compiled.ok()) return compiled.status();
    plan->cases_.push_back(op.op_case());
    plan->suffixes_.push_back(std::move(suffix));
    plan->written_.push_back((*compiled)->JointsWritten());
    plan->ops_.push_back(*std::move(compiled));
  }
  return plan;
}

int FirstNonFiniteJoint(absl::Span<const Transform> pose) {
  // Runs after every op of every character, so the common case goes
  // through the branch-free SIMD screen first: a pose that passes it
  // (finite, unit rotations) has no such joint. Only a pose it rejects is
  // searched joint by joint, and one rejected for a rotation's norm alone
  // is still finite.
  if (PoseLooksValid(pose)) return -1;
  for (size_t j = 0; j < pose.size(); ++j) {
    if (!IsFinite(pose[j])) return static_cast<int>(j);
  }
  return -1;
}

int FirstNonFiniteJoint(absl::Span<const Transform> pose,
                        const std::vector<int>* joints) {
  if (joints == nullptr) return FirstNonFiniteJoint(pose);
  for (const int j : *joints) {
    if (!IsFinite(pose[j])) return j;
  }
  return -1;
}

bool JointsLookValid(absl::Span<const Transform> pose,
                     const std::vector<int>* joints) {
  if (joints == nullptr) return PoseLooksValid(pose);
  return TransformsLookValid(pose, *joints);
}

namespace {

// The error for op `i`'s result, not finite at `joint`. Inputs are
// validated finite, so this is float overflow on extreme (finite) inputs
// or a failed solve: refused, naming the op, rather than answered OK.
absl::Status NotFinite(const Plan& plan, const PlanFrame& frame, int i,
                       int joint) {
  return absl::InvalidArgumentError(absl::StrCat(
      frame.field, plan.field_suffix(i),
      ": the result is not finite at joint '",
      frame.skeleton->joint_name(joint),
      "' (float overflow or a degenerate solve); check this op's targets "
      "and the pose's translations and scales for extreme values"));
}

}  // namespace

absl::Status RunPlan(
    const Plan& plan, const PlanFrame& frame, LocalPose& pose,
    CharacterState& state,
    google::protobuf::RepeatedPtrField<v1::OperationResult>* results) {
  auto op_started = frame.timings != nullptr
                        ? std::chrono::steady_clock::now()
                        : std::chrono::steady_clock::time_point();
  bool validated = frame.pose_validated;
  for (int i = 0; i < plan.size(); ++i) {
    const v1::Operation::OpCase op_case = plan.op_case(i);
    v1::OperationResult* result = results->Add();
    result->set_op(OperationName(op_case));
    OpFrame op_frame{
        .skeleton = *frame.skeleton,
        .clips = *frame.clips,
        .dt = frame.dt,
        .root = frame.root,
        .pose = pose,
        .pose_validated = validated,
        .state = state,
        .update = frame.updates.empty() ? nullptr : frame.updates[i],
        .result = *result,
        // Each op's field name ("characters[2].ops[1].blend"), which every
        // error starts with: the character's prefix and the op's suffix
        // the plan keeps.
        .field = {.character = frame.field, .op = plan.field_suffix(i)},
        .undo = frame.undo};
    if (absl::Status s = plan.op(i).Run(op_frame); !s.ok()) return s;
    // The op's changes are screened here, once, so that the next op's job
    // takes the pose as validated rather than checking all of it again: the
    // joints the op writes (every joint when it does not say). A NaN or
    // infinity is refused, naming this op; a finite rotation off unit
    // length (no op writes one) only leaves the next job to check the pose.
    const std::vector<int>* written = plan.joints_written(i);
    if (JointsLookValid(pose, written)) {
      validated = validated || written == nullptr;
    } else {
      if (const int bad = FirstNonFiniteJoint(pose, written); bad >= 0) {
        return NotFinite(plan, frame, i, bad);
      }
      validated = false;
    }
    if (frame.timings != nullptr) {
      // One clock read per op: each op's time runs from the previous op's
      // end, so it includes its own bookkeeping above (field name, result).
      const auto finished = std::chrono::steady_clock::now();
      frame.timings->Add(
          op_case,
          std::chrono::duration<double>(finished - op_started).count());
      op_started = finished;
    }
  }
  return absl::OkStatus();
}

namespace {

// Checks one update against the op it names: only inputs that op takes, at
// least one of them, finite values. `where(leaf)` names the update's field
// in errors. What depends on the compiled op (effector indices, counts) is
// the op's own CheckUpdate.
absl::Status CheckOpUpdate(const v1::OpUpdate& update,
                           v1::Operation::OpCase op_case, UpdateWhere where) {
  const uint32_t takes = FindOpSpec(op_case)->updatable;
  const uint32_t sent = SetUpdateInputs(update);
  if (sent == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        where(""), ": updates nothing (op ", update.op(), ", a ",
        OperationName(op_case), ", takes ", OpUpdateFieldNames(takes), ")"));
  }
  if (const uint32_t extra = sent & ~takes; extra != 0) {
    const UpdateField* field = nullptr;
    for (const UpdateField& f : UpdateFields()) {
      if (extra & f.input) {
        field = &f;
        break;
      }
    }
    // Which ops take this input, for the message, from the table itself.
    std::string ops;
    for (const OpSpec& spec : OpTable()) {
      if (!(spec.updatable & field->input)) continue;
      absl::StrAppend(&ops, ops.empty() ? "" : ", ",
                      OperationName(spec.op_case));
    }
    const size_t last = ops.rfind(", ");
    if (last != std::string::npos) ops.replace(last, 2, " or ");
    return absl::InvalidArgumentError(absl::StrCat(
        where(absl::StrCat(".", field->name)), ": op ", update.op(), " is a ",
        OperationName(op_case), ", which takes ", OpUpdateFieldNames(takes),
        "; only ",
        absl::string_view("aeiou").find(ops[0]) != absl::string_view::npos
            ? "an "
            : "a ",
        ops, " op takes this update"));
  }
  // Finite values, only for the inputs the update sent. Names are built
  // only for an error (field_name.h).
  struct VectorInput {
    uint32_t input;
    const v1::Vec3& (v1::OpUpdate::*value)() const;
    absl::string_view leaf;
  };
  static constexpr VectorInput kVectors[] = {
      {kUpdateTarget, &v1::OpUpdate::target, ".target"},
      {kUpdateBendGoal, &v1::OpUpdate::bend_goal, ".bend_goal"},
      {kUpdatePoleVector, &v1::OpUpdate::pole_vector, ".pole_vector"},
      {kUpdateGravity, &v1::OpUpdate::gravity, ".gravity"},
      {kUpdateExternalForce, &v1::OpUpdate::external_force, ".external_force"}};
  for (const VectorInput& v : kVectors) {
    if ((sent & v.input) == 0) continue;
    const v1::Vec3& value = (update.*v.value)();
    if (!std::isfinite(value.x()) || !std::isfinite(value.y()) ||
        !std::isfinite(value.z())) {
      return Vec3FromProto(value, where(v.leaf)).status();
    }
  }
  for (auto [input, value, leaf, what] :
       {std::tuple{kUpdateTime, update.time(), ".time", "time"},
        std::tuple{kUpdateWeight, update.weight(), ".weight", "weight"}}) {
    if ((sent & input) != 0 && !std::isfinite(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where(leaf), ": ", value, " is not a finite ", what));
    }
  }
  if ((sent & kUpdateEndRotation) != 0 &&
      !QuatFromProto(update.end_rotation(), {}).ok()) {
    return QuatFromProto(update.end_rotation(), where(".end_rotation"))
        .status();
  }
  return absl::OkStatus();
}

}  // namespace

std::string OpUpdateFieldNames(uint32_t inputs) {
  if (inputs == 0) return "no updates";
  std::string names;
  for (const UpdateField& field : UpdateFields()) {
    if (inputs & field.input) {
      absl::StrAppend(&names, names.empty() ? "" : ", ", field.name);
    }
  }
  return names;
}

absl::Status IndexOpUpdates(
    const Plan& plan,
    const google::protobuf::RepeatedPtrField<v1::OpUpdate>& updates,
    absl::string_view field, OpUpdatesByOp& by_op) {
  by_op.clear();
  if (updates.empty()) return absl::OkStatus();
  by_op.assign(plan.size(), nullptr);
  for (int k = 0; k < updates.size(); ++k) {
    const v1::OpUpdate& update = updates[k];
    auto where = [&](absl::string_view leaf) {
      return absl::StrCat(field, ".op_updates[", k, "]", leaf);
    };
    if (update.op() >= static_cast<uint32_t>(plan.size())) {
      return absl::InvalidArgumentError(absl::StrCat(
          where(".op"), ": ", update.op(),
          " is not an op of this frame's pipeline, which has ", plan.size(),
          plan.size() == 1 ? " op" : " ops", " (indices from 0)"));
    }
    if (by_op[update.op()] != nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(where(".op"), ": op ", update.op(),
                       " already has an update in this frame (one per op)"));
    }
    if (absl::Status s =
            CheckOpUpdate(update, plan.op_case(update.op()), where);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = plan.op(update.op()).CheckUpdate(update, where);
        !s.ok()) {
      return s;
    }
    by_op[update.op()] = &update;
  }
  return absl::OkStatus();
}

}  // namespace posewire::server
