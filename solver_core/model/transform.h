// Transform: translation, unit-quaternion rotation and per-axis scale of one
// joint, and the composition rules every solver shares.
//
// Model-space transforms are kept in the same TRS form as local ones (as in
// "Hands-on C++ Game Animation Programming", ch. 8 and the appendix of seed
// 000): composing TRS values never produces shear, so a non-uniform scale on
// a rotated parent is not propagated as a matrix would. Rigs in practice use
// uniform scale; the trade buys exact round trips local -> model -> local and
// cheap access to joint positions and rotations for IK.
#ifndef POSEWIRE_SOLVER_CORE_MODEL_TRANSFORM_H_
#define POSEWIRE_SOLVER_CORE_MODEL_TRANSFORM_H_

#include <Eigen/Geometry>
#include <cstddef>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

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
// component by component in the exact order the SSE kernel below evaluates
// them, so that builds with and without SSE give the same bits. The rotation
// is Eigen's form (v + w uv + q.vec x uv, uv = 2 q.vec x v).
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

// Lanes x, y, z of a row; the padding lane (which may hold anything,
// including denormals that would slow the arithmetic down) zeroed.
inline __m128 LoadRowXyz(const float* p) {
  return _mm_and_ps(_mm_loadu_ps(p),
                    _mm_castsi128_ps(_mm_set_epi32(0, -1, -1, -1)));
}

// a x b with the padding lanes zero in, zero out.
inline __m128 CrossRows(__m128 a, __m128 b) {
  const __m128 a_yzx = _mm_shuffle_ps(a, a, _MM_SHUFFLE(3, 0, 2, 1));
  const __m128 b_yzx = _mm_shuffle_ps(b, b, _MM_SHUFFLE(3, 0, 2, 1));
  // (a.x b.y - a.y b.x, a.y b.z - a.z b.y, a.z b.x - a.x b.z): z, x, y.
  const __m128 c = _mm_sub_ps(_mm_mul_ps(a, b_yzx), _mm_mul_ps(a_yzx, b));
  return _mm_shuffle_ps(c, c, _MM_SHUFFLE(3, 0, 2, 1));
}

inline __m128 MultiplyRows(__m128 p, __m128 q) {
  const __m128 px = _mm_shuffle_ps(p, p, _MM_SHUFFLE(0, 0, 0, 0));
  const __m128 py = _mm_shuffle_ps(p, p, _MM_SHUFFLE(1, 1, 1, 1));
  const __m128 pz = _mm_shuffle_ps(p, p, _MM_SHUFFLE(2, 2, 2, 2));
  const __m128 pw = _mm_shuffle_ps(p, p, _MM_SHUFFLE(3, 3, 3, 3));
  // Lanes x, y, z, w of the terms in px, py, pz (see Multiply above).
  const __m128 qb = _mm_xor_ps(_mm_shuffle_ps(q, q, _MM_SHUFFLE(0, 1, 2, 3)),
                               _mm_set_ps(-0.0f, 0.0f, -0.0f, 0.0f));
  const __m128 qc = _mm_xor_ps(_mm_shuffle_ps(q, q, _MM_SHUFFLE(1, 0, 3, 2)),
                               _mm_set_ps(-0.0f, -0.0f, 0.0f, 0.0f));
  const __m128 qd = _mm_xor_ps(_mm_shuffle_ps(q, q, _MM_SHUFFLE(2, 3, 0, 1)),
                               _mm_set_ps(-0.0f, 0.0f, 0.0f, -0.0f));
  return _mm_add_ps(_mm_add_ps(_mm_mul_ps(pw, q), _mm_mul_ps(px, qb)),
                    _mm_add_ps(_mm_mul_ps(py, qc), _mm_mul_ps(pz, qd)));
}

inline __m128 RotateRow(__m128 q, __m128 v) {
  __m128 uv = CrossRows(q, v);
  uv = _mm_add_ps(uv, uv);
  const __m128 w = _mm_shuffle_ps(q, q, _MM_SHUFFLE(3, 3, 3, 3));
  return _mm_add_ps(_mm_add_ps(v, _mm_mul_ps(uv, w)), CrossRows(q, uv));
}
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
    namespace ti = transform_internal;
    const float* p = reinterpret_cast<const float*>(&parent);
    const float* c = reinterpret_cast<const float*>(&child);
    const __m128 ps = ti::LoadRowXyz(p + 8);
    const __m128 pq = _mm_loadu_ps(p + 4);
    const __m128 t =
        _mm_add_ps(ti::LoadRowXyz(p),
                   ti::RotateRow(pq, _mm_mul_ps(ps, ti::LoadRowXyz(c))));
    const __m128 q = ti::MultiplyRows(pq, _mm_loadu_ps(c + 4));
    const __m128 s = _mm_mul_ps(ps, ti::LoadRowXyz(c + 8));
    float* o = reinterpret_cast<float*>(out);
    _mm_storeu_ps(o, t);
    _mm_storeu_ps(o + 4, q);
    _mm_storeu_ps(o + 8, s);
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
