// validate: compares the solved pose with a pose a client claims, joint by
// joint in model space, for a game server re-solving a player's frame.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "absl/strings/str_cat.h"
#include "server/ops/op_table.h"
#include "server/wire/wire_convert.h"
#include "solver_core/model/local_to_model.h"

namespace posewire::server {
namespace {

class Validate final : public PreparedOp {
 public:
  Validate(const Skeleton& skeleton, LocalPose claimed,
           float position_tolerance, float rotation_tolerance_degrees)
      : skeleton_(skeleton),
        claimed_(std::move(claimed)),
        position_tolerance_(position_tolerance),
        rotation_tolerance_degrees_(rotation_tolerance_degrees) {}

  // A frame's claimed pose must be a whole pose of the skeleton that passes
  // the checks the op's own claim passed (named by the update's field).
  absl::Status CheckUpdate(const v1::OpUpdate& update,
                           UpdateWhere where) const override {
    if (!update.has_claimed()) return absl::OkStatus();
    const int floats = update.claimed().transforms_size();
    const int expected = skeleton_.num_joints() * kFloatsPerJoint;
    if (floats != expected) {
      return absl::InvalidArgumentError(absl::StrCat(
          where(".claimed"), ": ", floats, " floats; the skeleton's ",
          skeleton_.num_joints(), " joints take ", expected));
    }
    thread_local LocalPose checked;
    return PoseFromProtoInto(update.claimed(), skeleton_, where(".claimed"),
                             checked);
  }

  absl::Status Run(OpFrame& frame) const override {
    const Skeleton& skeleton = frame.skeleton;
    const int n = skeleton.num_joints();
    // This frame's claim, or the op's own. CheckUpdate checked the claim
    // whole, so it is only unpacked here.
    thread_local LocalPose updated;
    absl::Span<const Transform> claimed = claimed_;
    if (frame.update != nullptr && frame.update->has_claimed()) {
      if (absl::Status s = UnpackPoseInto(frame.update->claimed().transforms(),
                                          n, frame.field.str(), updated);
          !s.ok()) {
        return s;
      }
      claimed = updated;
    }
    ModelPose solved_model(n), claimed_model(n);
    LocalToModelJob{.skeleton = &skeleton,
                    .input = frame.pose,
                    .output = absl::MakeSpan(solved_model)}
        .RunUnchecked();
    LocalToModelJob{.skeleton = &skeleton,
                    .input = claimed,
                    .output = absl::MakeSpan(claimed_model)}
        .RunUnchecked();
    v1::ValidationResult* v = frame.result.mutable_validation();
    v->mutable_position_error()->Resize(n, 0.0f);
    v->mutable_rotation_error_degrees()->Resize(n, 0.0f);
    int worst = 0;
    float worst_position = -1.0f, worst_rotation = 0.0f;
    bool valid = true;
    for (int j = 0; j < n; ++j) {
      const float position =
          (solved_model[j].translation - claimed_model[j].translation).norm();
      // Angle of the relative rotation, 2 atan2(|v|, |w|): exact 0 for equal
      // rotations and well-conditioned near 0, where 2 acos |<q1, q2>| loses
      // most of its digits (acos of a dot product one ulp below 1 is
      // already 0.02 degrees).
      const Eigen::Quaternionf relative =
          solved_model[j].rotation.conjugate() * claimed_model[j].rotation;
      const float rotation =
          2.0f * std::atan2(relative.vec().norm(), std::fabs(relative.w())) *
          (180.0f / std::numbers::pi_v<float>);
      v->set_position_error(j, position);
      v->set_rotation_error_degrees(j, rotation);
      // NaN-safe: a non-finite error (impossible after validation) fails.
      if (!(position <= position_tolerance_) ||
          !(rotation <= rotation_tolerance_degrees_)) {
        valid = false;
      }
      if (position > worst_position) {
        worst_position = position;
        worst = j;
      }
      worst_rotation = std::max(worst_rotation, rotation);
    }
    v->set_valid(valid);
    v->set_worst_joint(skeleton.joint_name(worst));
    v->set_worst_position_error(worst_position);
    v->set_worst_rotation_error_degrees(worst_rotation);
    return absl::OkStatus();
  }

 private:
  // The skeleton compiled for, kept to check a frame's claim by name.
  const Skeleton skeleton_;
  LocalPose claimed_;
  float position_tolerance_;
  float rotation_tolerance_degrees_;
};

CompiledOp Compile(const OpCompileInput& input) {
  const v1::ValidateOp& op = input.op.validate();
  const float pos_tol = op.position_tolerance();
  const float rot_tol = op.rotation_tolerance_degrees();
  if (!std::isfinite(pos_tol) || pos_tol < 0.0f) {
    return absl::InvalidArgumentError(
        absl::StrCat(input.field, ".position_tolerance: ", pos_tol,
                     " must be finite and >= 0"));
  }
  if (!std::isfinite(rot_tol) || rot_tol < 0.0f) {
    return absl::InvalidArgumentError(
        absl::StrCat(input.field, ".rotation_tolerance_degrees: ", rot_tol,
                     " must be finite and >= 0"));
  }
  if (op.claimed().transforms().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(input.field, ".claimed: the claimed pose is required"));
  }
  auto claimed = PoseFromProto(op.claimed(), input.skeleton,
                               absl::StrCat(input.field, ".claimed"));
  if (!claimed.ok()) return claimed.status();
  return std::make_unique<Validate>(input.skeleton, *std::move(claimed),
                                    pos_tol, rot_tol);
}

}  // namespace

OpSpec ValidateOpSpec() {
  return {.op_case = v1::Operation::kValidate,
          .updatable = kUpdateClaimed,
          .compile = Compile,
          .ranges = {}};
}

}  // namespace posewire::server
