#include "solver_core/model/pose.h"

#include "absl/strings/str_cat.h"

namespace posewire {

LocalPose RestPose(const Skeleton& skeleton) {
  return LocalPose(skeleton.rest_pose().begin(), skeleton.rest_pose().end());
}

absl::Status ValidatePose(const Skeleton& skeleton,
                          absl::Span<const Transform> pose,
                          absl::string_view field) {
  if (static_cast<int>(pose.size()) != skeleton.num_joints()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", pose.size(), " transforms for a skeleton of ",
                     skeleton.num_joints(), " joints"));
  }
  for (int j = 0; j < skeleton.num_joints(); ++j) {
    absl::Status status =
        ValidateTransform(pose[j], field, j, skeleton.joint_name(j));
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

namespace pose_internal {

absl::Status PartialOverlapError(absl::string_view output_field,
                                 absl::string_view input_field) {
  return absl::InvalidArgumentError(absl::StrCat(
      output_field, ": overlaps ", input_field,
      " without being the same span (pass the same span to work in place, or "
      "separate memory)"));
}

}  // namespace pose_internal

}  // namespace posewire
