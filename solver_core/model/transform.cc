#include "solver_core/model/transform.h"

namespace posewire {

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

}  // namespace posewire
