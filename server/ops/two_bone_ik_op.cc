// two_bone_ik: an analytic three-joint limb (hip-knee-ankle,
// shoulder-elbow-wrist) to a target.
#include <tuple>

#include "absl/strings/str_cat.h"
#include "server/ops/ik_wire.h"
#include "server/ops/op_table.h"
#include "server/wire/field_name.h"
#include "server/wire/wire_convert.h"
#include "solver_core/analytic_ik/two_bone_ik.h"
#include "solver_core/model/local_to_model.h"

namespace posewire::server {
namespace {

class TwoBoneIk final : public PreparedOp {
 public:
  TwoBoneIk(TwoBoneIkJob job, CompiledTarget target)
      : job_(job), target_(target) {}

  absl::Status Run(OpFrame& frame) const override {
    TwoBoneIkJob job = job_;
    auto target = target_.For(frame);
    if (!target.ok()) return target.status();
    job.target = *target;
    if (const v1::OpUpdate* update = frame.update) {
      if (update->has_bend_goal()) {
        job.bend_goal = UpdateVector(update->bend_goal());
      }
      if (update->has_pole_vector()) {
        job.pole_vector = UpdateVector(update->pole_vector());
      }
      if (update->has_end_rotation()) {
        // Checked by IndexOpUpdates, converted as the op's own.
        job.end_rotation = *QuatFromProto(update->end_rotation(), {});
      }
      if (update->has_weight()) job.weight = update->weight();
    }
    job.skeleton = &frame.skeleton;
    job.input = frame.pose;
    job.parent_model =
        ParentModelTransformOrRoot(frame.skeleton, frame.pose, job.start_joint);
    job.output = absl::MakeSpan(frame.pose);  // in place
    TwoBoneIkResult result;
    job.result = &result;
    if (absl::Status s = job.Run(); !s.ok()) return frame.field.Prefix(s);
    frame.result.set_reached(result.reached);
    frame.result.set_error(result.error);
    frame.result.set_iterations(result.iterations);
    if (result.hinge == TwoBoneIkHinge::kDefault) {
      frame.result.add_warnings(
          "mid_axis unset and the limb straight, with no bend plane from the "
          "pole or the rest pose: hinge defaulted to (0, 0, 1)");
    }
    return absl::OkStatus();
  }

  // Rotations of the three joints, and with stretch the mid and end
  // joints' translations.
  std::optional<std::vector<int>> JointsWritten() const override {
    return std::vector<int>{job_.start_joint, job_.mid_joint, job_.end_joint};
  }

 private:
  TwoBoneIkJob job_;  // every parameter; pose spans set per frame
  CompiledTarget target_;
};

CompiledOp Compile(const OpCompileInput& input) {
  const v1::TwoBoneIkOp& op = input.op.two_bone_ik();
  const Skeleton& skeleton = input.skeleton;
  TwoBoneIkJob job;
  for (auto [name, out, label] :
       {std::tuple{&op.start_joint(), &job.start_joint, ".start_joint"},
        std::tuple{&op.mid_joint(), &job.mid_joint, ".mid_joint"},
        std::tuple{&op.end_joint(), &job.end_joint, ".end_joint"}}) {
    auto joint = JointIndex(skeleton, *name, absl::StrCat(input.field, label));
    if (!joint.ok()) return joint.status();
    *out = *joint;
  }
  auto target = CompileTarget(op.has_target(), op.target(),
                              absl::StrCat(input.field, ".target"));
  if (!target.ok()) return target.status();
  auto pole = OptionalVec3(op.has_pole_vector(), op.pole_vector(),
                           Eigen::Vector3f::UnitY(),
                           absl::StrCat(input.field, ".pole_vector"));
  if (!pole.ok()) return pole.status();
  job.pole_vector = *pole;
  if (op.has_bend_goal()) {
    auto goal =
        Vec3FromProto(op.bend_goal(), absl::StrCat(input.field, ".bend_goal"));
    if (!goal.ok()) return goal.status();
    job.bend_goal = *goal;
  }
  if (op.has_end_rotation()) {
    auto rotation = QuatFromProto(op.end_rotation(),
                                  absl::StrCat(input.field, ".end_rotation"));
    if (!rotation.ok()) return rotation.status();
    job.end_rotation = *rotation;
  }
  // Unset: the core derives the hinge from the pose.
  if (op.has_mid_axis()) {
    auto axis =
        Vec3FromProto(op.mid_axis(), absl::StrCat(input.field, ".mid_axis"));
    if (!axis.ok()) return axis.status();
    job.mid_axis = *axis;
  }
  job.twist_angle = op.twist_angle();
  if (op.has_soften()) job.soften = op.soften();
  if (op.has_weight()) job.weight = op.weight();
  if (op.has_end_rotation_weight()) {
    job.end_rotation_weight = op.end_rotation_weight();
  }
  job.stretch = op.stretch();
  if (op.stretch()) job.max_stretch = op.max_stretch();
  return std::make_unique<TwoBoneIk>(job, *target);
}

}  // namespace

OpSpec TwoBoneIkOpSpec() {
  return {.op_case = v1::Operation::kTwoBoneIk,
          .updatable = kUpdateTarget | kUpdateBendGoal | kUpdateWeight |
                       kUpdatePoleVector | kUpdateEndRotation,
          .compile = Compile,
          .ranges = {}};
}

}  // namespace posewire::server
