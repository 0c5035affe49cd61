// Transform: translation, unit-quaternion rotation and per-axis scale of one
// joint, and the composition rules every solver shares.
//
// Model-space transforms are kept in the same TRS form as local ones (as in
// "Hands-on C++ Game Animation Programming", ch. 8): composing TRS values never
// produces shear, so a non-uniform scale on a rotated parent is not propagated
// as a matrix would. Rigs in practice use uniform scale; the trade buys exact
// round trips local -> model -> local and cheap access to joint positions and
// rotations for IK.
#ifndef POSEWIRE_SOLVER_CORE_MODEL_TRANSFORM_H_
#define POSEWIRE_SOLVER_CORE_MODEL_TRANSFORM_H_

#include <Eigen/Geometry>
#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "solver_core/model/internal/simd_lanes.h"

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

namespace transform_internal {

// Hamilton product p * q and the rotation of v by unit q, written out
// component by component in the exact order the SSE kernels
// (lanes::MultiplyRows, lanes::RotateRow) evaluate them, so that builds with
// and without SSE give the same bits. The rotation is Eigen's form (v + w uv +
// q.vec x uv, uv = 2 q.vec x v).
inline Eigen::Quaternionf Multiply(const Eigen::Quaternionf& p,
                                   const Eigen::Quaternionf& q) {
  const float px = p.x(), py = p.y(), pz = p.z(), pw = p.w();
  const float qx = q.x(), qy = q.y(), qz = q.z(), qw = q.w();
  return Eigen::Quaternionf((pw * qw - px * qx) - (py * qy + pz * qz),   // w
                            (pw * qx + px * qw) + (py * qz - pz * qy),   // x
                            (pw * qy - px * qz) + (py * qw + pz * qx),   // y
                            (pw * qz + px * qy) + (pz * qw - py * qx));  // z
}

inline Eigen::Vector3f Cross(const Eigen::Vector3f& a,
                             const Eigen::Vector3f& b) {
  return Eigen::Vector3f(a.y() * b.z() - a.z() * b.y(),
                         a.z() * b.x() - a.x() * b.z(),
                         a.x() * b.y() - a.y() * b.x());
}

inline Eigen::Vector3f Rotate(const Eigen::Quaternionf& q,
                              const Eigen::Vector3f& v) {
  const Eigen::Vector3f qv = q.vec();
  Eigen::Vector3f uv = Cross(qv, v);
  uv = uv + uv;
  return (v + uv * q.w()) + Cross(qv, uv);
}

#if defined(__SSE2__)
// A Transform read as three 16-byte rows: translation and padding, rotation
// (x, y, z, w), scale and padding.
inline constexpr bool kRowLayout =
    sizeof(Transform) == 48 && alignof(Transform) == 16 &&
    offsetof(Transform, translation) == 0 &&
    offsetof(Transform, rotation) == 16 && offsetof(Transform, scale) == 32;
#endif

}  // namespace transform_internal

// *out = parent * child: the child's transform expressed in the parent's
// space. Inline: forward kinematics calls it once per joint. `out` may be
// `parent` or `child`. Written through a pointer rather than returned, so
// that a chain of these keeps its values in registers.
inline void CombineTo(const Transform& parent, const Transform& child,
                      Transform* out) {
#if defined(__SSE2__)
  if constexpr (transform_internal::kRowLayout) {
    const float* p = reinterpret_cast<const float*>(&parent);
    const float* c = reinterpret_cast<const float*>(&child);
    const lanes::F4 ps = lanes::LoadXyz(p + 8);
    const lanes::F4 pq = lanes::LoadU(p + 4);
    const lanes::F4 t =
        lanes::LoadXyz(p) + lanes::RotateRow(pq, ps * lanes::LoadXyz(c));
    const lanes::F4 q = lanes::MultiplyRows(pq, lanes::LoadU(c + 4));
    const lanes::F4 s = ps * lanes::LoadXyz(c + 8);
    float* o = reinterpret_cast<float*>(out);
    lanes::StoreU(o, t);
    lanes::StoreU(o + 4, q);
    lanes::StoreU(o + 8, s);
    return;
  }
#endif
  const Eigen::Vector3f t =
      parent.translation +
      transform_internal::Rotate(parent.rotation,
                                 parent.scale.cwiseProduct(child.translation));
  const Eigen::Quaternionf q =
      transform_internal::Multiply(parent.rotation, child.rotation);
  out->scale = parent.scale.cwiseProduct(child.scale);
  out->translation = t;
  out->rotation = q;
}

// parent * child: the child's transform expressed in the parent's space.
inline Transform Combine(const Transform& parent, const Transform& child) {
  Transform out;
  CombineTo(parent, child, &out);
  return out;
}

// inverse(parent) * model: a joint's local transform from its own and its
// parent's model-space transforms (Szauer 2020, docs/REFERENCES.md). The exact
// inverse of Combine: LocalFromModel(p, Combine(p, l)) == l up to rounding,
// provided no scale component of p is zero.
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

// How far a rotation's norm may stray from 1 before it is rejected. Loose
// enough for float data that went through text or half precision, tight
// enough that a non-normalised input cannot silently skew a solve.
inline constexpr float kUnitQuaternionTolerance = 1e-3f;

// Checks one transform: every component finite, rotation of unit norm within
// kUnitQuaternionTolerance. `field` and the joint name appear in the error,
// e.g. "pose[3] 'LeftKnee': rotation norm 1.5 is not 1 (tolerance 0.001)".
absl::Status ValidateTransform(const Transform& transform,
                               absl::string_view field, int joint,
                               absl::string_view joint_name);

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_MODEL_TRANSFORM_H_
