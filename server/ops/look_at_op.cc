// look_at: turns a spine, head and eyes toward a target (FinalIK LookAtIK).
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/ops/ik_wire.h"
#include "server/ops/op_table.h"
#include "server/wire/wire_convert.h"
#include "solver_core/analytic_ik/look_at.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/model/pose.h"

namespace posewire::server {
namespace {

// The joints and axes a prepared look-at owns; its job's spans point here.
struct LookAtBones {
  std::vector<int> spine;
  std::vector<int> eyes;
  std::vector<Eigen::Vector3f> axes;
};

// Where the turn-speed state lives when the op names no state_key.
constexpr absl::string_view kDefaultLookAtKey = "look_at";

class LookAt final : public PreparedOp {
 public:
  LookAt(LookAtJob job, LookAtBones bones, CompiledTarget target,
         std::string key)
      : job_(job),
        bones_(std::move(bones)),
        target_(target),
        key_(std::move(key)) {}

  absl::Status Run(OpFrame& frame) const override {
    auto target = target_.For(frame);
    if (!target.ok()) return target.status();
    LookAtJob job = job_;
    job.spine = bones_.spine;
    job.eyes = bones_.eyes;
    job.axes = bones_.axes;
    job.target = *target;
    if (frame.update != nullptr && frame.update->has_weight()) {
      job.weight = frame.update->weight();
    }
    job.skeleton = &frame.skeleton;
    job.input = frame.pose;
    job.input_validated = frame.pose_validated;
    job.parent_model = ParentModelTransformOrRoot(
        frame.skeleton, frame.pose,
        bones_.spine.empty() ? job.head : bones_.spine[0]);
    job.output = absl::MakeSpan(frame.pose);
    LookAtResult result;
    job.result = &result;
    if (job.max_turn_speed == 0.0f) {
      if (absl::Status s = job.Run(); !s.ok()) return frame.field.Prefix(s);
    } else {
      // The last look direction, kept as the ground op keeps its offsets.
      job.dt = frame.dt;
      const absl::Status s =
          StepState(frame.state.looks, key_, frame.undo,
                    [&](const LookAtState& state, LookAtState& next) {
                      job.state = &state;
                      job.next_state = &next;
                      return job.Run();
                    });
      if (!s.ok()) return frame.field.Prefix(s);
    }
    frame.result.set_reached(result.reached);
    frame.result.set_error(result.error);
    frame.result.set_iterations(result.iterations);
    if (result.clamped) {
      frame.result.add_warnings("look-at clamped: the target is behind");
    }
    if (result.turn_limited) {
      frame.result.add_warnings(
          "look-at turn limited: the target moved faster than "
          "max_turn_speed");
    }
    return absl::OkStatus();
  }

 private:
  LookAtJob job_;
  LookAtBones bones_;
  CompiledTarget target_;
  std::string key_;
};

CompiledOp Compile(const OpCompileInput& input) {
  const v1::LookAtOp& op = input.op.look_at();
  LookAtJob job;
  LookAtBones bones;
  auto spine = JointsFromProto(input.skeleton, op.spine(),
                               absl::StrCat(input.field, ".spine"));
  if (!spine.ok()) return spine.status();
  bones.spine = *std::move(spine);
  auto head =
      JointIndex(input.skeleton, op.head(), absl::StrCat(input.field, ".head"));
  if (!head.ok()) return head.status();
  job.head = *head;
  auto eyes = JointsFromProto(input.skeleton, op.eyes(),
                              absl::StrCat(input.field, ".eyes"));
  if (!eyes.ok()) return eyes.status();
  bones.eyes = *std::move(eyes);
  for (int i = 0; i < op.axes_size(); ++i) {
    auto axis =
        Vec3FromProto(op.axes(i), absl::StrCat(input.field, ".axes[", i, "]"));
    if (!axis.ok()) return axis.status();
    bones.axes.push_back(*axis);
  }
  auto forward = OptionalVec3(op.has_character_forward(),
                              op.character_forward(), Eigen::Vector3f::UnitZ(),
                              absl::StrCat(input.field, ".character_forward"));
  if (!forward.ok()) return forward.status();
  job.character_forward = *forward;
  auto target = CompileTarget(op.has_target(), op.target(),
                              absl::StrCat(input.field, ".target"));
  if (!target.ok()) return target.status();
  if (op.has_weight()) job.weight = op.weight();
  if (op.has_body_weight()) job.body_weight = op.body_weight();
  if (op.has_head_weight()) job.head_weight = op.head_weight();
  if (op.has_eyes_weight()) job.eyes_weight = op.eyes_weight();
  if (op.has_spine_weight_start()) {
    job.spine_weight_start = op.spine_weight_start();
  }
  if (op.has_clamp_weight()) job.clamp_weight = op.clamp_weight();
  if (op.has_clamp_weight_head()) {
    job.clamp_weight_head = op.clamp_weight_head();
  }
  if (op.has_clamp_weight_eyes()) {
    job.clamp_weight_eyes = op.clamp_weight_eyes();
  }
  if (op.has_clamp_smoothing()) {
    auto smoothing = ClampSmoothingFromProto(
        op.clamp_smoothing(), absl::StrCat(input.field, ".clamp_smoothing"));
    if (!smoothing.ok()) return smoothing.status();
    job.clamp_smoothing = *smoothing;
  }
  if (op.has_max_turn_speed()) job.max_turn_speed = op.max_turn_speed();

  // The bones' path, the axes and the parameters are checked now, on the
  // rest pose, so that a rig that cannot run is refused when compiled.
  LocalPose rest = RestPose(input.skeleton);
  LookAtJob check = job;
  check.skeleton = &input.skeleton;
  check.input = rest;
  check.output = absl::MakeSpan(rest);
  check.spine = bones.spine;
  check.eyes = bones.eyes;
  check.axes = bones.axes;
  if (target->value.has_value()) check.target = *target->value;
  if (absl::Status s = check.Validate(); !s.ok()) {
    return PrefixField(input.field, s);
  }
  return std::make_unique<LookAt>(
      job, std::move(bones), *target,
      std::string(op.state_key().empty() ? kDefaultLookAtKey : op.state_key()));
}

}  // namespace

OpSpec LookAtOpSpec() {
  return {.op_case = v1::Operation::kLookAt,
          .updatable = kUpdateTarget | kUpdateWeight,
          .compile = Compile,
          .ranges = {ClampSmoothingRange()}};
}

}  // namespace posewire::server
