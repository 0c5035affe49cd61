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
#ifndef POSEWIRE_SOLVER_CORE_MODEL_QUATERNION_MATH_H_
#define POSEWIRE_SOLVER_CORE_MODEL_QUATERNION_MATH_H_

#include <Eigen/Geometry>
#include <cmath>
#include <cstddef>
#include <limits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "solver_core/model/deterministic_math.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/simd_level.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"

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
  // std::acos on a float is the same on every glibc variant (see
  // deterministic_math.h); sin is not, hence dmath's weights.
  const dmath::SlerpWeights w = dmath::SlerpScales(std::acos(d), alpha);
  const Eigen::Vector4f l = a.coeffs() * w.from + bc * w.to;
  return NormalizedOr(l, a);
}

// Eigen::Quaternionf(Eigen::AngleAxisf(angle, axis)) with dmath's sin and
// cos instead of libm's (whose float results depend on the CPU's libm
// variant): (cos(angle / 2), sin(angle / 2) axis), the same formula and
// order as Eigen. `axis` should be of unit length (not checked, as in Eigen).
inline Eigen::Quaternionf QuaternionFromAngleAxis(float angle,
                                                  const Eigen::Vector3f& axis) {
  const dmath::SinCosF sc = dmath::SinCos(0.5f * angle);
  return Eigen::Quaternionf(sc.cos, sc.sin * axis.x(), sc.sin * axis.y(),
                            sc.sin * axis.z());
}

// a.slerp(t, b) of Eigen 3.4 with dmath's sines instead of libm's: the
// shortest path (b is negated when a.b < 0), weights (1 - t, t) when
// |a.b| >= 1 - epsilon, not renormalised. The dot product is QuatDot's
// fixed order (Eigen's may be summed differently) and each weight is
// rounded once (dmath::SlerpScales), so results may differ from Eigen's by
// a few ulp.
inline Eigen::Quaternionf Slerp(const Eigen::Quaternionf& a,
                                const Eigen::Quaternionf& b, float t) {
  constexpr float kOne = 1.0f - std::numeric_limits<float>::epsilon();
  const float d = QuatDot(a, b);
  const float abs_d = std::fabs(d);
  float scale0;
  float scale1;
  if (abs_d >= kOne) {
    scale0 = 1.0f - t;
    scale1 = t;
  } else {
    // std::acos is variant-independent, see above.
    const dmath::SlerpWeights w = dmath::SlerpScales(std::acos(abs_d), t);
    scale0 = w.from;
    scale1 = w.to;
  }
  if (d < 0.0f) scale1 = -scale1;
  return Eigen::Quaternionf(scale0 * a.coeffs() + scale1 * b.coeffs());
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

#if defined(__SSE2__)
namespace simd {
// The screen PoseLooksValid and TransformsLookValid run, one transform (or
// four rotation norms) at a time. Translations and scales are summed: a NaN
// or infinity anywhere leaves the sum non-finite (a sum that overflows only
// sends the pose to the detailed check, which decides). Only lanes x, y, z
// of the sum are read, so the padding lanes need no masking on the way.
// Squared rotation norms are compared with "not within bounds", which a NaN
// also satisfies.
class TransformScreen {
 public:
  // Adds the translation and scale rows of the transform at `p`.
  void AddTranslationAndScale(const float* p) {
    sum_ = _mm_add_ps(sum_, _mm_add_ps(_mm_loadu_ps(p), _mm_loadu_ps(p + 8)));
  }
  // Checks squared rotation norms, one per lane.
  void AddSquaredNorms(__m128 n2) {
    bad_ = _mm_or_ps(
        bad_, _mm_or_ps(_mm_cmpnge_ps(n2, _mm_set1_ps(kScreenMinSquaredNorm)),
                        _mm_cmpnle_ps(n2, _mm_set1_ps(kScreenMaxSquaredNorm))));
  }
  // The whole transform at `p`.
  void Add(const float* p) {
    AddTranslationAndScale(p);
    const __m128 q = _mm_loadu_ps(p + 4);
    AddSquaredNorms(Dot4(q, q));
  }
  bool Passed() const {
    // The padding lane is cleared here (it summed whatever the padding
    // held; tools that track uninitialised bytes then see defined lanes).
    const __m128 sum =
        _mm_and_ps(sum_, _mm_castsi128_ps(_mm_set_epi32(0, -1, -1, -1)));
    return _mm_movemask_ps(
               _mm_cmpeq_ps(_mm_sub_ps(sum, sum), _mm_setzero_ps())) == 0xF &&
           _mm_movemask_ps(bad_) == 0;
  }

 private:
  __m128 sum_ = _mm_setzero_ps();
  __m128 bad_ = _mm_setzero_ps();
};
}  // namespace simd
#endif

#if POSEWIRE_AVX2_KERNELS
// PoseLooksValid with AVX2, eight transforms at a time (blending_job.cc).
// Call only when ActiveSimdLevel() is kAvx2.
bool PoseLooksValidAvx2(absl::Span<const Transform> pose);
#endif

// TransformLooksValid for a whole pose, without a branch per transform
// (simd::TransformScreen); squared rotation norms are computed four at a
// time (squares, then a transpose-and-add), or eight at a time with AVX2.
inline bool PoseLooksValid(absl::Span<const Transform> pose) {
#if defined(__SSE2__)
  if constexpr (kSimdTransformLayout) {
#if POSEWIRE_AVX2_KERNELS
    if (pose.size() >= 16 && ActiveSimdLevel() == SimdLevel::kAvx2) {
      return PoseLooksValidAvx2(pose);
    }
#endif
    const float* p = reinterpret_cast<const float*>(pose.data());
    const size_t n = pose.size();
    simd::TransformScreen screen;
    size_t i = 0;
    for (; i + 4 <= n; i += 4, p += 48) {
      __m128 sq[4];
      for (int k = 0; k < 4; ++k) {
        const float* t = p + 12 * k;
        screen.AddTranslationAndScale(t);
        const __m128 q = _mm_loadu_ps(t + 4);
        sq[k] = _mm_mul_ps(q, q);
      }
      const __m128 s01 = _mm_add_ps(_mm_unpacklo_ps(sq[0], sq[1]),
                                    _mm_unpackhi_ps(sq[0], sq[1]));
      const __m128 s23 = _mm_add_ps(_mm_unpacklo_ps(sq[2], sq[3]),
                                    _mm_unpackhi_ps(sq[2], sq[3]));
      screen.AddSquaredNorms(
          _mm_add_ps(_mm_movelh_ps(s01, s23), _mm_movehl_ps(s23, s01)));
    }
    for (; i < n; ++i, p += 12) screen.Add(p);
    return screen.Passed();
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

#if defined(__SSE2__)
// 3-vectors in SSE registers, for the analytic IK solvers (two-bone, aim):
// lanes x, y, z, lane 3 zero. Each helper performs the operations of Eigen's
// scalar code on a Vector3f in the same order, so the SIMD solvers keep the
// bits of the scalar formulas they replace. Cross products and rotations by
// a quaternion are transform.h's CrossRows and RotateRow (Eigen's form too).
namespace simd {

// Reads exactly the 12 bytes of `v` (a 16-byte load could run past the end of
// the object). x and y come in through _mm_loadl_epi64, whose pointer type
// may alias the floats (_mm_load_sd would read them as a double, which the
// optimiser may then move across stores to the vector).
inline __m128 LoadVector3(const Eigen::Vector3f& v) {
  const __m128 xy = _mm_castsi128_ps(
      _mm_loadl_epi64(reinterpret_cast<const __m128i*>(v.data())));
  return _mm_movelh_ps(xy, _mm_load_ss(v.data() + 2));
}

inline Eigen::Vector3f ToVector3(__m128 v) {
  alignas(16) float f[4];
  _mm_store_ps(f, v);
  return Eigen::Vector3f(f[0], f[1], f[2]);
}

template <int kLane>
inline __m128 Splat(__m128 v) {
  return _mm_shuffle_ps(v, v, _MM_SHUFFLE(kLane, kLane, kLane, kLane));
}

// a.b in lane 0 (the other lanes hold partial sums), summed as x + (y + z):
// the order of Eigen's dot() and squaredNorm() on a Vector3f.
inline __m128 Dot3(__m128 a, __m128 b) {
  const __m128 m = _mm_mul_ps(a, b);
  return _mm_add_ss(m, _mm_add_ss(Splat<1>(m), _mm_movehl_ps(m, m)));
}

}  // namespace simd
#endif

// TransformLooksValid for several transforms at once (the few a solver reads,
// wherever they are), with one branch: PoseLooksValid's test on a list of
// pointers.
template <size_t N>
inline bool TransformsLookValid(const Transform* const (&t)[N]) {
#if defined(__SSE2__)
  if constexpr (kSimdTransformLayout) {
    simd::TransformScreen screen;
    for (size_t i = 0; i < N; ++i) {
      screen.Add(reinterpret_cast<const float*>(t[i]));
    }
    return screen.Passed();
  }
#endif
  for (const Transform* x : t) {
    if (!TransformLooksValid(*x)) return false;
  }
  return true;
}

// A 3-vector for the analytic IK solvers' arithmetic: with SSE2 one register
// (lanes x, y, z, lane 3 zero), otherwise an Eigen::Vector3f. Every operation
// is Eigen's on a Vector3f in the same order (dot products and squared norms
// summed x + (y + z), Eigen's cross product and quaternion rotation), so code
// written with Vec3 gives the bits of the same code written with Vector3f,
// in far fewer instructions than Eigen's scalar code for 3-vectors.
class Vec3 {
 public:
  Vec3() = default;
  static Vec3 Zero() { return Vec3(); }

#if defined(__SSE2__)
  explicit Vec3(const Eigen::Vector3f& v) : v_(simd::LoadVector3(v)) {}
  explicit Vec3(__m128 v) : v_(v) {}
  __m128 m128() const { return v_; }
  Eigen::Vector3f ToEigen() const { return simd::ToVector3(v_); }

  friend Vec3 operator+(Vec3 a, Vec3 b) { return Vec3(_mm_add_ps(a.v_, b.v_)); }
  friend Vec3 operator-(Vec3 a, Vec3 b) { return Vec3(_mm_sub_ps(a.v_, b.v_)); }
  friend Vec3 operator-(Vec3 a) {
    return Vec3(_mm_xor_ps(a.v_, _mm_set_ps(0.0f, -0.0f, -0.0f, -0.0f)));
  }
  friend Vec3 operator*(Vec3 a, float s) {
    return Vec3(_mm_mul_ps(a.v_, _mm_set1_ps(s)));
  }
  friend Vec3 operator*(float s, Vec3 a) { return a * s; }
  friend Vec3 operator/(Vec3 a, float s) {
    // Lane 3 stays 0 (0 / s) for any non-zero s; callers never divide by 0.
    return Vec3(_mm_div_ps(a.v_, _mm_set1_ps(s)));
  }
  float dot(Vec3 b) const { return _mm_cvtss_f32(simd::Dot3(v_, b.v_)); }
  float squaredNorm() const { return dot(*this); }
  // IEEE square root without std::sqrt's errno branch (a squared norm is
  // never negative): the same bits.
  float norm() const { return _mm_cvtss_f32(_mm_sqrt_ss(simd::Dot3(v_, v_))); }
  Vec3 cross(Vec3 b) const {
    return Vec3(transform_internal::CrossRows(v_, b.v_));
  }
  Vec3 cwiseProduct(Vec3 b) const { return Vec3(_mm_mul_ps(v_, b.v_)); }
  // Eigen's q * v for a unit quaternion q.
  friend Vec3 Rotate(const Eigen::Quaternionf& q, Vec3 v) {
    return Vec3(
        transform_internal::RotateRow(_mm_loadu_ps(q.coeffs().data()), v.v_));
  }

 private:
  __m128 v_ = _mm_setzero_ps();
#else
  explicit Vec3(const Eigen::Vector3f& v) : v_(v) {}
  Eigen::Vector3f ToEigen() const { return v_; }

  friend Vec3 operator+(Vec3 a, Vec3 b) { return Vec3(a.v_ + b.v_); }
  friend Vec3 operator-(Vec3 a, Vec3 b) { return Vec3(a.v_ - b.v_); }
  friend Vec3 operator-(Vec3 a) { return Vec3(-a.v_); }
  friend Vec3 operator*(Vec3 a, float s) { return Vec3(a.v_ * s); }
  friend Vec3 operator*(float s, Vec3 a) { return Vec3(s * a.v_); }
  friend Vec3 operator/(Vec3 a, float s) { return Vec3(a.v_ / s); }
  float dot(Vec3 b) const { return v_.dot(b.v_); }
  float squaredNorm() const { return v_.squaredNorm(); }
  float norm() const { return v_.norm(); }
  Vec3 cross(Vec3 b) const { return Vec3(v_.cross(b.v_)); }
  Vec3 cwiseProduct(Vec3 b) const { return Vec3(v_.cwiseProduct(b.v_)); }
  friend Vec3 Rotate(const Eigen::Quaternionf& q, Vec3 v) {
    return Vec3(q * v.v_);
  }

 private:
  Eigen::Vector3f v_ = Eigen::Vector3f::Zero();
#endif
};

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_MODEL_QUATERNION_MATH_H_
