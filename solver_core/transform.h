// Transform: translation, unit-quaternion rotation and per-axis scale of one
// joint, and the composition rules every solver shares.
//
// Model-space transforms are kept in the same TRS form as local ones (as in
// "Hands-on C++ Game Animation Programming", ch. 8 and the appendix of seed
// 000): composing TRS values never produces shear, so a non-uniform scale on
// a rotated parent is not propagated as a matrix would. Rigs in practice use
// uniform scale; the trade buys exact round trips local -> model -> local and
// cheap access to joint positions and rotations for IK.
#ifndef POSEWIRE_SOLVER_CORE_TRANSFORM_H_
#define POSEWIRE_SOLVER_CORE_TRANSFORM_H_

#include <Eigen/Geometry>

namespace posewire {

struct Transform {
  Eigen::Vector3f translation = Eigen::Vector3f::Zero();
  Eigen::Quaternionf rotation = Eigen::Quaternionf::Identity();
  Eigen::Vector3f scale = Eigen::Vector3f::Ones();

  static Transform Identity() { return Transform(); }

  // Maps a point from this transform's space to its parent's space.
  Eigen::Vector3f TransformPoint(const Eigen::Vector3f& p) const {
    return translation + rotation * scale.cwiseProduct(p);
  }

  // Maps a direction (no translation) to the parent's space.
  Eigen::Vector3f TransformVector(const Eigen::Vector3f& v) const {
    return rotation * scale.cwiseProduct(v);
  }

  // Maps a point from the parent's space back into this transform's space.
  Eigen::Vector3f InverseTransformPoint(const Eigen::Vector3f& p) const {
    return (rotation.conjugate() * (p - translation)).cwiseQuotient(scale);
  }

  // 4x4 affine matrix T * R * S, for skinning and for callers that want one.
  Eigen::Matrix4f ToMatrix() const;

  friend bool operator==(const Transform& a, const Transform& b) {
    return a.translation == b.translation && a.scale == b.scale &&
           a.rotation.coeffs() == b.rotation.coeffs();
  }
};

// parent * child: the child's transform expressed in the parent's space.
// Inline: forward kinematics calls it once per joint.
inline Transform Combine(const Transform& parent, const Transform& child) {
  Transform out;
  out.translation = parent.TransformPoint(child.translation);
  out.rotation = parent.rotation * child.rotation;
  out.scale = parent.scale.cwiseProduct(child.scale);
  return out;
}

// inverse(parent) * model (seed 000 appendix: a joint's local transform from
// its own and its parent's model-space transforms). The exact inverse of
// Combine: LocalFromModel(p, Combine(p, l)) == l up to rounding, provided no
// scale component of p is zero.
inline Transform LocalFromModel(const Transform& parent_model,
                                const Transform& model) {
  Transform out;
  out.translation = parent_model.InverseTransformPoint(model.translation);
  out.rotation = parent_model.rotation.conjugate() * model.rotation;
  out.scale = model.scale.cwiseQuotient(parent_model.scale);
  return out;
}

// True when every component of the transform is finite.
bool IsFinite(const Transform& t);

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_TRANSFORM_H_
