#include "solver_core/transform.h"

namespace posewire {

Eigen::Matrix4f Transform::ToMatrix() const {
  Eigen::Matrix4f m = Eigen::Matrix4f::Identity();
  m.topLeftCorner<3, 3>() =
      rotation.toRotationMatrix() * scale.asDiagonal().toDenseMatrix();
  m.topRightCorner<3, 1>() = translation;
  return m;
}

Transform Combine(const Transform& parent, const Transform& child) {
  Transform out;
  out.translation = parent.TransformPoint(child.translation);
  out.rotation = parent.rotation * child.rotation;
  out.scale = parent.scale.cwiseProduct(child.scale);
  return out;
}

Transform LocalFromModel(const Transform& parent_model,
                         const Transform& model) {
  Transform out;
  out.translation = parent_model.InverseTransformPoint(model.translation);
  out.rotation = parent_model.rotation.conjugate() * model.rotation;
  out.scale = model.scale.cwiseQuotient(parent_model.scale);
  return out;
}

bool IsFinite(const Transform& t) {
  return t.translation.allFinite() && t.rotation.coeffs().allFinite() &&
         t.scale.allFinite();
}

}  // namespace posewire
