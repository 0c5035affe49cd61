#include "server/service/character_solve.h"

#include "absl/strings/str_cat.h"
#include "server/wire/field_name.h"
#include "server/wire/wire_convert.h"
#include "solver_core/model/local_to_model.h"

namespace posewire::server {

absl::Status SolveCharacter(const CharacterInputs& in, CharacterState& state,
                            CharacterScratch& scratch,
                            const CharacterOutputs& out) {
  const Skeleton& skeleton = *in.skeleton;
  LocalPose& pose = scratch.pose;
  // Field names are joined only for an error (field_name.h).
  if (absl::Status s = NamedOnError(in.field, ".pose",
                                    [&](absl::string_view name) {
                                      return PoseFromProtoInto(
                                          *in.pose, skeleton, name, pose);
                                    });
      !s.ok()) {
    return s;
  }
  auto root = NamedOnError(in.field, ".root", [&](absl::string_view name) {
    return TransformFromProto(*in.root, name);
  });
  if (!root.ok()) return root.status();
  scratch.root = *root;
  const PlanFrame frame{.skeleton = &skeleton,
                        .clips = in.clips,
                        .dt = in.dt,
                        .root = *root,
                        // PoseFromProtoInto checked it.
                        .pose_validated = true,
                        .field = in.field,
                        .timings = in.timings,
                        .updates = in.updates,
                        .undo = in.undo};
  if (absl::Status s = RunPlan(*in.plan, frame, pose, state, out.ops);
      !s.ok()) {
    return s;
  }
  if (in.want_model_pose) {
    if (absl::Status s = ModelPoseToProto(skeleton, pose, in.field,
                                          scratch.model, out.model_pose);
        !s.ok()) {
      return s;
    }
  }
  PoseToProto(pose, out.pose);
  return absl::OkStatus();
}

absl::Status ModelPoseToProto(const Skeleton& skeleton, const LocalPose& pose,
                              absl::string_view field, ModelPose& scratch,
                              v1::Pose* proto) {
  ModelPose& model = scratch;
  model.resize(skeleton.num_joints());
  LocalToModelJob{
      .skeleton = &skeleton, .input = pose, .output = absl::MakeSpan(model)}
      .RunUnchecked();
  if (const int bad = FirstNonFiniteJoint(model); bad >= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".want_model_pose: the model-space transform of joint '",
        skeleton.joint_name(bad),
        "' overflows float; the skeleton's or pose's translations and scales "
        "are too large once composed down the chain"));
  }
  PoseToProto(model, proto);
  return absl::OkStatus();
}

}  // namespace posewire::server
