#include "solver_core/model/transform.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"

namespace posewire {
namespace {

std::string JointLabel(absl::string_view field, int joint,
                       absl::string_view joint_name) {
  return absl::StrCat(field, "[", joint, "] '", joint_name, "'");
}

}  // namespace

Eigen::Matrix4f Transform::ToMatrix() const {
  Eigen::Matrix4f m = Eigen::Matrix4f::Identity();
  m.topLeftCorner<3, 3>() =
      rotation.toRotationMatrix() * scale.asDiagonal().toDenseMatrix();
  m.topRightCorner<3, 1>() = translation;
  return m;
}

bool IsFinite(const Transform& t) {
  return t.translation.allFinite() && t.rotation.coeffs().allFinite() &&
         t.scale.allFinite();
}

absl::Status ValidateTransform(const Transform& t, absl::string_view field,
                               int joint, absl::string_view joint_name) {
  if (!t.translation.allFinite()) {
    return absl::InvalidArgumentError(
        absl::StrCat(JointLabel(field, joint, joint_name),
                     ": translation has a NaN or infinite component"));
  }
  if (!t.rotation.coeffs().allFinite()) {
    return absl::InvalidArgumentError(
        absl::StrCat(JointLabel(field, joint, joint_name),
                     ": rotation has a NaN or infinite component"));
  }
  if (!t.scale.allFinite()) {
    return absl::InvalidArgumentError(
        absl::StrCat(JointLabel(field, joint, joint_name),
                     ": scale has a NaN or infinite component"));
  }
  const float norm = t.rotation.norm();
  if (!(std::fabs(norm - 1.0f) <= kUnitQuaternionTolerance)) {
    return absl::InvalidArgumentError(
        absl::StrCat(JointLabel(field, joint, joint_name), ": rotation norm ",
                     norm, " is not 1 (tolerance ", kUnitQuaternionTolerance,
                     "); send a unit quaternion"));
  }
  return absl::OkStatus();
}

}  // namespace posewire
