#include "solver_core/analytic_ik/clamp_direction.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "solver_core/model/deterministic_math.h"
#include "solver_core/model/quaternion_math.h"

namespace posewire {
namespace {

constexpr float kPi = std::numbers::pi_v<float>;

// Angle in [0, pi] between two non-zero vectors. atan2 of the cross and dot
// products keeps full precision near 0 and pi, where acos(dot) does not.
float AngleBetween(const Eigen::Vector3f& a, const Eigen::Vector3f& b) {
  return std::atan2(a.cross(b).norm(), a.dot(b));
}

// A unit vector perpendicular to `v` (non-zero): v crossed with the axis it
// is least aligned with.
Eigen::Vector3f AnyPerpendicular(const Eigen::Vector3f& v) {
  const Eigen::Vector3f a = v.cwiseAbs();
  Eigen::Vector3f other = Eigen::Vector3f::UnitX();
  if (a.y() < a.x() && a.y() <= a.z()) {
    other = Eigen::Vector3f::UnitY();
  } else if (a.z() < a.x() && a.z() < a.y()) {
    other = Eigen::Vector3f::UnitZ();
  }
  return v.cross(other).normalized();
}

}  // namespace

float ClampConeAngle(float clamp_weight) {
  return (1.0f - std::clamp(clamp_weight, 0.0f, 1.0f)) * kPi;
}

ClampedDirection ClampDirection(const Eigen::Vector3f& direction,
                                const Eigen::Vector3f& normal_direction,
                                float clamp_weight, int smoothing_iterations) {
  ClampedDirection out{direction, false};
  if (!(clamp_weight > 0.0f)) return out;
  const float length = direction.norm();
  const float normal_length = normal_direction.norm();
  if (!(length > 0.0f) || !(normal_length > 0.0f)) return out;
  const Eigen::Vector3f axis = normal_direction / normal_length;
  if (clamp_weight >= 1.0f) {
    out.direction = axis * length;
    out.changed = true;
    return out;
  }

  const float angle = AngleBetween(axis, direction);
  if (1.0f - angle / kPi > clamp_weight) return out;  // inside the cone
  out.changed = true;
  out.direction = SlerpDirection(axis, direction / length,
                                 ClampTurnFraction(angle, clamp_weight,
                                                   smoothing_iterations)) *
                  length;
  return out;
}

float ClampTurnFraction(float angle, float clamp_weight,
                        int smoothing_iterations) {
  if (!(clamp_weight > 0.0f)) return 1.0f;
  if (clamp_weight >= 1.0f) return 0.0f;
  // FinalIK's "dot" is not a dot product but the angle as a fraction of a
  // half turn, flipped: 1 along the axis, 0 opposite it. The direction is
  // inside the cone while it exceeds the clamp weight.
  const float dot = 1.0f - angle / kPi;
  if (dot > clamp_weight) return 1.0f;
  // Fraction of the angle that lands on the cone's edge ((1 - w) / (1 - dot),
  // FinalIK's expression simplified)...
  const float target_clamp =
      std::clamp(1.0f - (clamp_weight - dot) / (1.0f - dot), 0.0f, 1.0f);
  // ...scaled down the farther outside the direction is (0 when opposite).
  float clamp_mlp = std::clamp(dot / clamp_weight, 0.0f, 1.0f);
  const int passes =
      std::clamp(smoothing_iterations, 0, kMaxClampSmoothingIterations);
  for (int i = 0; i < passes; ++i) {
    clamp_mlp = dmath::Sin(clamp_mlp * kPi * 0.5f);
  }
  return clamp_mlp * target_clamp;
}

Eigen::Vector3f SlerpDirection(const Eigen::Vector3f& a,
                               const Eigen::Vector3f& b, float t) {
  if (t == 0.0f) return a;
  return PointOnArc(ArcBetween(a, b), t);
}

DirectionArc ArcBetween(const Eigen::Vector3f& from,
                        const Eigen::Vector3f& to) {
  DirectionArc arc;
  arc.from = from;
  const float c = from.dot(to);
  // Unit vector in the plane of from and to, perpendicular to from, toward
  // to.
  Eigen::Vector3f w = to - c * from;
  const float w_len = w.norm();
  if (w_len > 1e-6f) {
    w /= w_len;
  } else if (c > 0.0f) {
    return arc;  // same direction: nothing to interpolate
  } else {
    w = AnyPerpendicular(from);
  }
  arc.toward = w;
  arc.angle = std::atan2(w_len, c);
  arc.same = false;
  return arc;
}

Eigen::Vector3f PointOnArc(const DirectionArc& arc, float t) {
  if (t == 0.0f || arc.same) return arc.from;
  const dmath::SinCosF sc = dmath::SinCos(t * arc.angle);
  return arc.from * sc.cos + arc.toward * sc.sin;
}

Eigen::Quaternionf RotationBetween(const Eigen::Vector3f& from,
                                   const Eigen::Vector3f& to) {
  const float from_len2 = from.squaredNorm();
  const float to_len2 = to.squaredNorm();
  if (!(from_len2 > 0.0f) || !(to_len2 > 0.0f)) {
    return Eigen::Quaternionf::Identity();
  }
  const float dot = from.dot(to);
  if (dot >= 0.0f) {
    // q = (|a||b| + a.b, a x b), normalised, is the half-angle rotation from
    // a to b; no cancellation while the angle is at most 90 degrees. Its
    // squared norm is 2 |a||b| (|a||b| + a.b).
    const float scale = std::sqrt(from_len2 * to_len2);
    const float w = scale + dot;
    const float norm2 = 2.0f * scale * w;
    if (norm2 > 1e-30f && norm2 < 1e30f) {  // else: the general path below
      const Eigen::Vector3f xyz = from.cross(to);
      const float inv = 1.0f / std::sqrt(norm2);
      return Eigen::Quaternionf(w * inv, xyz.x() * inv, xyz.y() * inv,
                                xyz.z() * inv);
    }
  }
  // Beyond 90 degrees the sum above cancels, and a cross product of nearly
  // opposite vectors tilts toward them by its rounding error, which a half
  // turn doubles. Build the axis from the part of `to` perpendicular to
  // `from` instead, so it is perpendicular to `from` by construction. (This
  // path also serves lengths so extreme that the product above underflows.)
  const Eigen::Vector3f a = from / std::sqrt(from_len2);
  const Eigen::Vector3f b = to / std::sqrt(to_len2);
  const float c = a.dot(b);
  const Eigen::Vector3f b_perp = b - c * a;
  const float s = b_perp.norm();
  if (s < 1e-6f) {
    if (c > 0.0f) return Eigen::Quaternionf::Identity();
    // Opposite within float precision: the axis is undefined, pick one.
    const Eigen::Vector3f axis = AnyPerpendicular(a);
    return Eigen::Quaternionf(0.0f, axis.x(), axis.y(), axis.z());
  }
  // a x b_perp is perpendicular to a whatever the rounding, but its length
  // is only close to s: normalise it on its own.
  const Eigen::Vector3f axis = a.cross(b_perp);
  return AxisRotationFromCosSin(axis * (1.0f / axis.norm()), c, s);
}

Eigen::Quaternionf RotationBetweenFrames(const Eigen::Vector3f& from,
                                         const Eigen::Vector3f& from_ref,
                                         const Eigen::Vector3f& to,
                                         const Eigen::Vector3f& to_ref,
                                         float min_sin2) {
  return RotationBetweenFrames(Vec3(from), Vec3(from_ref), Vec3(to),
                               Vec3(to_ref), min_sin2);
}

Eigen::Quaternionf RotationBetweenFrames(Vec3 from, Vec3 from_ref, Vec3 to,
                                         Vec3 to_ref, float min_sin2) {
  const float from_len2 = from.squaredNorm();
  const float to_len2 = to.squaredNorm();
  if (!(from_len2 > 0.0f) || !(to_len2 > 0.0f)) {
    return Eigen::Quaternionf::Identity();
  }
  // The references' parts perpendicular to their directions (the
  // reciprocals are formed while the dot products are).
  const Vec3 e2 = from_ref - (from_ref.dot(from) * (1.0f / from_len2)) * from;
  const Vec3 f2 = to_ref - (to_ref.dot(to) * (1.0f / to_len2)) * to;
  const float e2_len2 = e2.squaredNorm();
  const float f2_len2 = f2.squaredNorm();
  if (!(e2_len2 > min_sin2 * from_ref.squaredNorm()) ||
      !(f2_len2 > min_sin2 * to_ref.squaredNorm())) {
    return RotationBetween(from.ToEigen(), to.ToEigen());
  }
  // R = F E^T, with E = [e1 e2 e3] and F = [f1 f2 f3] the orthonormal frames
  // (e1 = from / |from|, e3 = e1 x e2 / |e2|, and so on): R = k1 to from^T +
  // k2 f2 e2^T + k1 k2 f3 e3^T, each term built from the unnormalised vectors
  // and scaled once (k1 and k2 below), which keeps the square roots and
  // divisions off each other's paths.
  const float k1 = 1.0f / std::sqrt(from_len2 * to_len2);
  const float k2 = 1.0f / std::sqrt(e2_len2 * f2_len2);
  const Vec3 e3 = from.cross(e2);
  const Vec3 f3 = to.cross(f2);
  // Shepperd's method, first case: with trace(R) > 0, q = (t / 2, v / (2 t)),
  // t = sqrt(1 + trace(R)), v the axial vector of R - R^T. For R a sum of
  // outer products f e^T, trace(R) is the sum of the dot products e.f and v
  // the sum of the cross products e x f: both are formed from the
  // unnormalised vectors while k1 and k2 are computed, rather than from R's
  // nine entries once they are known, which shortens the solvers' critical
  // path. (Angles below 120 degrees; the IK corrections almost always are.)
  const float k12 = k1 * k2;
  const float trace = (k1 * from.dot(to) + k2 * e2.dot(f2)) + k12 * e3.dot(f3);
  if (trace > 0.0f) {
    const float t = std::sqrt(trace + 1.0f);
    const Vec3 v =
        (k1 * from.cross(to) + k2 * e2.cross(f2)) + k12 * e3.cross(f3);
    const Eigen::Vector3f xyz = (v * (0.5f / t)).ToEigen();
    return Eigen::Quaternionf(0.5f * t, xyz.x(), xyz.y(), xyz.z());
  }
  // Otherwise R itself, converted by Eigen (Shepperd's other cases, keyed on
  // the largest diagonal entry).
  const Eigen::Matrix3f r = (k1 * to.ToEigen()) * from.ToEigen().transpose() +
                            (k2 * f2.ToEigen()) * e2.ToEigen().transpose() +
                            (k12 * f3.ToEigen()) * e3.ToEigen().transpose();
  return Eigen::Quaternionf(r);
}

Eigen::Quaternionf RotationAboutAxis(const Eigen::Vector3f& axis,
                                     const Eigen::Vector3f& from,
                                     const Eigen::Vector3f& to,
                                     float min_sin2) {
  const Eigen::Vector3f f = from - from.dot(axis) * axis;
  const Eigen::Vector3f t = to - to.dot(axis) * axis;
  const float f2 = f.squaredNorm();
  const float t2 = t.squaredNorm();
  if (!(f2 > min_sin2 * from.squaredNorm()) ||
      !(t2 > min_sin2 * to.squaredNorm())) {
    return Eigen::Quaternionf::Identity();
  }
  return AxisRotationFromCosSin(axis, f.dot(t), axis.dot(f.cross(t)));
}

}  // namespace posewire
