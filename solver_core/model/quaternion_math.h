// Quaternion and 3-vector math shared by the pose operations (sampling,
// blending, additive, crossfade) and the IK solvers, so each rule lives in
// one place. The pose validity screens built on it are in pose.h.
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
#include <limits>

#include "solver_core/model/deterministic_math.h"
#include "solver_core/model/internal/simd_lanes.h"
#include "solver_core/model/transform.h"

namespace posewire {

// Dot product of 4-vectors in the fixed order described above.
inline float Dot4(const Eigen::Vector4f& a, const Eigen::Vector4f& b) {
#if defined(__SSE2__)
  return lanes::First(
      lanes::Dot4(lanes::LoadU(a.data()), lanes::LoadU(b.data())));
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
      lanes::F4 v[4];
      lanes::F4 n2[4];
      for (int k = 0; k < 4; ++k) {
        v[k] = lanes::LoadU(q_[k]->coeffs().data());
        n2[k] = lanes::Dot4(v[k], v[k]);
      }
      const lanes::F4 packed = lanes::MoveLH(lanes::UnpackLo(n2[0], n2[1]),
                                             lanes::UnpackLo(n2[2], n2[3]));
      const lanes::F4 inverse = lanes::Splat(1.0f) / lanes::Sqrt(packed);
      const int degenerate =
          lanes::Bits(packed <= lanes::Splat(kMinQuatSquaredNorm));
      lanes::F4 r[4];
      lanes::BroadcastLanes(inverse, r);
      for (int k = 0; k < 4; ++k) {
        if ((degenerate >> k) & 1) {
          *q_[k] = *fallback_[k];
        } else {
          lanes::StoreU(q_[k]->coeffs().data(), v[k] * r[k]);
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
  explicit Vec3(const Eigen::Vector3f& v) : v_(lanes::LoadVector3(v)) {}
  explicit Vec3(lanes::F4 v) : v_(v) {}
  Eigen::Vector3f ToEigen() const { return lanes::ToVector3(v_); }

  friend Vec3 operator+(Vec3 a, Vec3 b) { return Vec3(a.v_ + b.v_); }
  friend Vec3 operator-(Vec3 a, Vec3 b) { return Vec3(a.v_ - b.v_); }
  friend Vec3 operator-(Vec3 a) {
    return Vec3(lanes::Xor(a.v_, lanes::SetLanes(-0.0f, -0.0f, -0.0f, 0.0f)));
  }
  friend Vec3 operator*(Vec3 a, float s) {
    return Vec3(a.v_ * lanes::Splat(s));
  }
  friend Vec3 operator*(float s, Vec3 a) { return a * s; }
  friend Vec3 operator/(Vec3 a, float s) {
    // Lane 3 stays 0 (0 / s) for any non-zero s; callers never divide by 0.
    return Vec3(a.v_ / lanes::Splat(s));
  }
  float dot(Vec3 b) const { return lanes::First(lanes::Dot3(v_, b.v_)); }
  float squaredNorm() const { return dot(*this); }
  // IEEE square root without std::sqrt's errno branch (a squared norm is
  // never negative): the same bits.
  float norm() const {
    return lanes::First(lanes::SqrtFirst(lanes::Dot3(v_, v_)));
  }
  Vec3 cross(Vec3 b) const { return Vec3(lanes::CrossRows(v_, b.v_)); }
  Vec3 cwiseProduct(Vec3 b) const { return Vec3(v_ * b.v_); }
  // Eigen's q * v for a unit quaternion q.
  friend Vec3 Rotate(const Eigen::Quaternionf& q, Vec3 v) {
    return Vec3(lanes::RotateRow(lanes::LoadU(q.coeffs().data()), v.v_));
  }

 private:
  lanes::F4 v_ = lanes::Zero();
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
