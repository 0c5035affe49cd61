// Quaternion and pose-check helpers shared by the pose operations (sampling,
// blending, additive, crossfade), so each rule lives in one place.
//
// Interpolation follows the usual game-runtime practice (Hands-on C++ Game
// Animation Programming, ch. 4 and 12; ozz-animation's NLerp): a quaternion
// q and -q are the same rotation, so interpolation first flips one endpoint
// onto the same hemisphere as the other ("shortest path"), then either lerps
// the coefficients and renormalises (nlerp: cheap, slightly non-uniform
// angular speed) or follows the great arc (slerp).
//
// Determinism: everything is plain IEEE arithmetic (no reciprocal square-root
// estimates, whose results differ between CPU vendors), and the 4-component
// dot product has one fixed summation order, (x x' + z z') + (y y' + w w'),
// shared by the scalar code and the SSE kernels (the order a two-step SSE
// horizontal add produces), so both give the same bits.
#ifndef POSEWIRE_SOLVER_CORE_QUATERNION_MATH_H_
#define POSEWIRE_SOLVER_CORE_QUATERNION_MATH_H_

#include <Eigen/Geometry>
#include <cmath>
#include <cstddef>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "solver_core/pose.h"
#include "solver_core/skeleton.h"
#include "solver_core/transform.h"

namespace posewire {

#if defined(__SSE2__)
// The SSE kernels read a Transform as three 16-byte rows: translation and
// padding, rotation (x, y, z, w), scale and padding.
inline constexpr bool kSimdTransformLayout =
    sizeof(Transform) == 48 && alignof(Transform) == 16 &&
    offsetof(Transform, translation) == 0 &&
    offsetof(Transform, rotation) == 16 && offsetof(Transform, scale) == 32;

namespace simd {

// Dot4 in every lane, same summation order as the scalar Dot4.
inline __m128 Dot4(__m128 a, __m128 b) {
  const __m128 m = _mm_mul_ps(a, b);
  const __m128 s = _mm_add_ps(m, _mm_shuffle_ps(m, m, _MM_SHUFFLE(1, 0, 3, 2)));
  return _mm_add_ps(s, _mm_shuffle_ps(s, s, _MM_SHUFFLE(2, 3, 0, 1)));
}

// Lanes x, y, z kept, the padding lane zeroed (it may hold anything,
// including denormals that would slow the arithmetic down).
inline __m128 LoadXyz(const float* p) {
  const __m128 mask = _mm_castsi128_ps(_mm_set_epi32(0, -1, -1, -1));
  return _mm_and_ps(_mm_loadu_ps(p), mask);
}

// Each lane of `v` in a register of its own: out[k] = (v[k], v[k], v[k],
// v[k]), for scaling four quaternions by four per-quaternion factors.
inline void SplatLanes(__m128 v, __m128 out[4]) {
  out[0] = _mm_shuffle_ps(v, v, _MM_SHUFFLE(0, 0, 0, 0));
  out[1] = _mm_shuffle_ps(v, v, _MM_SHUFFLE(1, 1, 1, 1));
  out[2] = _mm_shuffle_ps(v, v, _MM_SHUFFLE(2, 2, 2, 2));
  out[3] = _mm_shuffle_ps(v, v, _MM_SHUFFLE(3, 3, 3, 3));
}

}  // namespace simd
#endif

// Dot product of 4-vectors in the fixed order described above.
inline float Dot4(const Eigen::Vector4f& a, const Eigen::Vector4f& b) {
#if defined(__SSE2__)
  return _mm_cvtss_f32(
      simd::Dot4(_mm_loadu_ps(a.data()), _mm_loadu_ps(b.data())));
#else
  const float xz = a.x() * b.x() + a.z() * b.z();
  const float yw = a.y() * b.y() + a.w() * b.w();
  return xz + yw;
#endif
}

inline float QuatDot(const Eigen::Quaternionf& a, const Eigen::Quaternionf& b) {
  return Dot4(a.coeffs(), b.coeffs());
}

// Below this squared length a quaternion is treated as degenerate (only a
// wild cubic spline or cancelling weights produce one).
inline constexpr float kMinQuatSquaredNorm = 1e-20f;

// 1 / |q| from |q|^2. Normalisation multiplies by it rather than dividing
// by the length: the SIMD kernels then share one square root and one
// division between four quaternions, with the same bits as this scalar form.
inline float InverseLength(float squared_norm) {
  return 1.0f / std::sqrt(squared_norm);
}

// `q` scaled to unit length; `fallback` when q is degenerate.
inline Eigen::Quaternionf NormalizedOr(const Eigen::Vector4f& q,
                                       const Eigen::Quaternionf& fallback) {
  const float n2 = Dot4(q, q);
  if (!(n2 > kMinQuatSquaredNorm)) return fallback;
  return Eigen::Quaternionf(q * InverseLength(n2));
}

// The lerp of shortest-path nlerp, before normalisation.
inline Eigen::Vector4f NlerpShortestUnnormalized(const Eigen::Quaternionf& a,
                                                 const Eigen::Quaternionf& b,
                                                 float alpha) {
  const Eigen::Vector4f bc = QuatDot(a, b) < 0.0f ? Eigen::Vector4f(-b.coeffs())
                                                  : Eigen::Vector4f(b.coeffs());
  return a.coeffs() + (bc - a.coeffs()) * alpha;
}

// Shortest-path normalised lerp from a (alpha = 0) to b (alpha = 1).
inline Eigen::Quaternionf NlerpShortest(const Eigen::Quaternionf& a,
                                        const Eigen::Quaternionf& b,
                                        float alpha) {
  return NormalizedOr(NlerpShortestUnnormalized(a, b, alpha), a);
}

// Shortest-path spherical lerp: constant angular speed. Falls back to nlerp
// when the endpoints are so close that sin(angle) loses its precision.
inline Eigen::Quaternionf SlerpShortest(const Eigen::Quaternionf& a,
                                        const Eigen::Quaternionf& b,
                                        float alpha) {
  float d = QuatDot(a, b);
  const Eigen::Vector4f bc =
      d < 0.0f ? Eigen::Vector4f(-b.coeffs()) : Eigen::Vector4f(b.coeffs());
  d = std::fabs(d);
  if (d > 0.9995f) return NlerpShortest(a, b, alpha);
  const float angle = std::acos(d);
  const float inv_sin = 1.0f / std::sin(angle);
  const float wa = std::sin((1.0f - alpha) * angle) * inv_sin;
  const float wb = std::sin(alpha * angle) * inv_sin;
  const Eigen::Vector4f l = a.coeffs() * wa + bc * wb;
  return NormalizedOr(l, a);
}

// Cubic Hermite basis (glTF 2.0 Appendix C, CUBICSPLINE): the value at
// s in [0, 1] between p0 and p1 with tangents m0, m1 already scaled by the
// key interval.
template <typename V>
inline V Hermite(const V& p0, const V& m0, const V& p1, const V& m1, float s) {
  const float s2 = s * s;
  const float s3 = s2 * s;
  const float h00 = 2.0f * s3 - 3.0f * s2 + 1.0f;
  const float h10 = s3 - 2.0f * s2 + s;
  const float h01 = -2.0f * s3 + 3.0f * s2;
  const float h11 = s3 - s2;
  return p0 * h00 + m0 * h10 + p1 * h01 + m1 * h11;
}

// Squared-norm bounds strictly inside ValidateTransform's unit-rotation
// tolerance, so a rotation the screen below accepts is one ValidateTransform
// accepts too, whatever the rounding of its square root.
inline constexpr float kScreenMinSquaredNorm =
    (1.0f - kUnitQuaternionTolerance) * (1.0f - kUnitQuaternionTolerance) *
    1.0001f;
inline constexpr float kScreenMaxSquaredNorm =
    (1.0f + kUnitQuaternionTolerance) * (1.0f + kUnitQuaternionTolerance) *
    0.9999f;

// Cheap screen for ValidateTransform's conditions (finite components, unit
// rotation within kUnitQuaternionTolerance): x - x is NaN exactly when x is
// NaN or infinite. Callers run ValidateTransform when it fails, to decide
// near the tolerance's edge and to produce the message.
inline bool TransformLooksValid(const Transform& t) {
#if defined(__SSE2__)
  if constexpr (kSimdTransformLayout) {
    const float* p = reinterpret_cast<const float*>(&t);
    const __m128 tr = simd::LoadXyz(p);
    const __m128 q = _mm_loadu_ps(p + 4);
    const __m128 sc = simd::LoadXyz(p + 8);
    const __m128 z = _mm_add_ps(
        _mm_add_ps(_mm_sub_ps(tr, tr), _mm_sub_ps(q, q)), _mm_sub_ps(sc, sc));
    const float n2 = _mm_cvtss_f32(simd::Dot4(q, q));
    return _mm_movemask_ps(_mm_cmpeq_ps(z, _mm_setzero_ps())) == 0xF &&
           n2 >= kScreenMinSquaredNorm && n2 <= kScreenMaxSquaredNorm;
  }
#endif
  const Eigen::Vector4f& q = t.rotation.coeffs();
  const float finite = (t.translation - t.translation).sum() + (q - q).sum() +
                       (t.scale - t.scale).sum();
  const float n2 = Dot4(q, q);
  return finite == 0.0f && n2 >= kScreenMinSquaredNorm &&
         n2 <= kScreenMaxSquaredNorm;
}

// Normalises quaternions in place, four at a time: NormalizedOr on each,
// with the same bits, but one SIMD square root and division per four, off
// the critical path of the loop that produced them (in sampling, that chain
// of dot product, square root and division was a third of the time). Each
// added quaternion must stay in place, untouched, until Flush().
class DeferredNormalizer {
 public:
  void Add(Eigen::Quaternionf* q, const Eigen::Quaternionf* fallback) {
    q_[count_] = q;
    fallback_[count_] = fallback;
    if (++count_ == 4) Flush();
  }

  void Flush() {
#if defined(__SSE2__)
    if (count_ == 4) {
      __m128 v[4];
      __m128 n2[4];
      for (int k = 0; k < 4; ++k) {
        v[k] = _mm_loadu_ps(q_[k]->coeffs().data());
        n2[k] = simd::Dot4(v[k], v[k]);
      }
      const __m128 packed = _mm_movelh_ps(_mm_unpacklo_ps(n2[0], n2[1]),
                                          _mm_unpacklo_ps(n2[2], n2[3]));
      const __m128 inverse = _mm_div_ps(_mm_set1_ps(1.0f), _mm_sqrt_ps(packed));
      const int degenerate = _mm_movemask_ps(
          _mm_cmple_ps(packed, _mm_set1_ps(kMinQuatSquaredNorm)));
      __m128 r[4];
      simd::SplatLanes(inverse, r);
      for (int k = 0; k < 4; ++k) {
        if ((degenerate >> k) & 1) {
          *q_[k] = *fallback_[k];
        } else {
          _mm_storeu_ps(q_[k]->coeffs().data(), _mm_mul_ps(v[k], r[k]));
        }
      }
      count_ = 0;
      return;
    }
#endif
    for (int k = 0; k < count_; ++k) {
      *q_[k] = NormalizedOr(q_[k]->coeffs(), *fallback_[k]);
    }
    count_ = 0;
  }

 private:
  Eigen::Quaternionf* q_[4];
  const Eigen::Quaternionf* fallback_[4];
  int count_ = 0;
};

// TransformLooksValid for a whole pose, without a branch per transform.
// Translations and scales are summed: a NaN or infinity anywhere leaves the
// sum non-finite (a sum that overflows only sends the pose to the detailed
// check, which decides). Only lanes x, y, z of the sum are read, so the
// padding lanes need no masking in the loop. Squared rotation norms are
// computed four at a time (squares, then a transpose-and-add) and compared with
// "not within bounds", which a NaN also satisfies.
inline bool PoseLooksValid(absl::Span<const Transform> pose) {
#if defined(__SSE2__)
  if constexpr (kSimdTransformLayout) {
    const float* p = reinterpret_cast<const float*>(pose.data());
    const size_t n = pose.size();
    __m128 sum = _mm_setzero_ps();
    __m128 bad = _mm_setzero_ps();
    const __m128 lo = _mm_set1_ps(kScreenMinSquaredNorm);
    const __m128 hi = _mm_set1_ps(kScreenMaxSquaredNorm);
    size_t i = 0;
    for (; i + 4 <= n; i += 4, p += 48) {
      __m128 sq[4];
      for (int k = 0; k < 4; ++k) {
        const float* t = p + 12 * k;
        sum = _mm_add_ps(sum, _mm_add_ps(_mm_loadu_ps(t), _mm_loadu_ps(t + 8)));
        const __m128 q = _mm_loadu_ps(t + 4);
        sq[k] = _mm_mul_ps(q, q);
      }
      const __m128 s01 = _mm_add_ps(_mm_unpacklo_ps(sq[0], sq[1]),
                                    _mm_unpackhi_ps(sq[0], sq[1]));
      const __m128 s23 = _mm_add_ps(_mm_unpacklo_ps(sq[2], sq[3]),
                                    _mm_unpackhi_ps(sq[2], sq[3]));
      const __m128 n2 =
          _mm_add_ps(_mm_movelh_ps(s01, s23), _mm_movehl_ps(s23, s01));
      bad = _mm_or_ps(bad,
                      _mm_or_ps(_mm_cmpnge_ps(n2, lo), _mm_cmpnle_ps(n2, hi)));
    }
    for (; i < n; ++i, p += 12) {
      sum = _mm_add_ps(sum, _mm_add_ps(_mm_loadu_ps(p), _mm_loadu_ps(p + 8)));
      const __m128 q = _mm_loadu_ps(p + 4);
      const __m128 n2 = simd::Dot4(q, q);
      bad = _mm_or_ps(bad,
                      _mm_or_ps(_mm_cmpnge_ps(n2, lo), _mm_cmpnle_ps(n2, hi)));
    }
    // The padding lane is cleared once here (it summed whatever the padding
    // held; tools that track uninitialised bytes then see defined lanes).
    sum = _mm_and_ps(sum, _mm_castsi128_ps(_mm_set_epi32(0, -1, -1, -1)));
    return _mm_movemask_ps(
               _mm_cmpeq_ps(_mm_sub_ps(sum, sum), _mm_setzero_ps())) == 0xF &&
           _mm_movemask_ps(bad) == 0;
  }
#endif
  for (const Transform& t : pose) {
    if (!TransformLooksValid(t)) return false;
  }
  return true;
}

// ValidatePose with the fast screen above in front: the same checks and
// messages, at a fraction of the cost when the pose is valid (the common
// case, checked every frame).
inline absl::Status CheckPose(const Skeleton& skeleton,
                              absl::Span<const Transform> pose,
                              absl::string_view field) {
  if (static_cast<int>(pose.size()) != skeleton.num_joints()) {
    return ValidatePose(skeleton, pose, field);
  }
  if (PoseLooksValid(pose)) return absl::OkStatus();
  for (int j = 0; j < skeleton.num_joints(); ++j) {
    if (TransformLooksValid(pose[j])) continue;
    absl::Status s =
        ValidateTransform(pose[j], field, j, skeleton.joint_name(j));
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_QUATERNION_MATH_H_
