// Direction helpers shared by the chain IK solvers: keeping a direction inside
// a cone (ClampDirection), interpolating and rotating between directions.
//
// ClampDirection is FinalIK's V3Tools.ClampDirection (docs/REFERENCES.md)
// (the elbow/knee bend constraint and AimIK's target clamp): the cone is given
// by a clamp weight w in [0, 1] whose half-angle is (1 - w) * 180 degrees, and
// a direction outside the cone is slerped toward the cone's axis. The slerp
// factor is scaled down further the farther the direction lies outside (so a
// direction exactly opposite the axis, where "the nearest point of the cone"
// is undefined, lands on the axis instead of flipping from side to side), and
// `smoothing_iterations` passes of x -> sin(x * pi / 2) trade that stability
// back for accuracy near the cone's edge. The result always lies inside the
// cone.
//
// The rotation helpers exist because every chain solver needs a from-to
// rotation with a defined answer for antiparallel directions, and because
// building quaternions from a cosine and a sine (or from two frames) avoids
// acos/atan2/sin/cos in the analytic solvers' hot path.
#ifndef POSEWIRE_SOLVER_CORE_ANALYTIC_IK_CLAMP_DIRECTION_H_
#define POSEWIRE_SOLVER_CORE_ANALYTIC_IK_CLAMP_DIRECTION_H_

#include <Eigen/Geometry>
#include <algorithm>
#include <cmath>

#include "solver_core/model/quaternion_math.h"

namespace posewire {

// Smoothing passes beyond this change the result by less than float
// precision near the cone edge; larger requests are treated as this many.
inline constexpr int kMaxClampSmoothingIterations = 8;

struct ClampedDirection {
  // Same length as the input direction.
  Eigen::Vector3f direction = Eigen::Vector3f::Zero();
  // True when the input lay outside the cone (or clamp_weight >= 1).
  bool changed = false;
};

// Half-angle in radians of the cone a clamp weight allows: (1 - w) * pi, with
// w clamped to [0, 1].
float ClampConeAngle(float clamp_weight);

// Keeps `direction` within the cone around `normal_direction` that
// `clamp_weight` defines (see the file comment). Neither vector needs unit
// length; the result keeps |direction|.
// - clamp_weight <= 0 (or NaN): `direction` unchanged.
// - clamp_weight >= 1: `normal_direction` rescaled to |direction| (FinalIK
//   returns normal_direction itself; keeping the length lets callers clamp
//   bone vectors).
// - `direction` or `normal_direction` zero: `direction` unchanged.
// - `direction` opposite `normal_direction`: the axis direction.
// `smoothing_iterations` outside [0, kMaxClampSmoothingIterations] is clamped
// into it.
ClampedDirection ClampDirection(const Eigen::Vector3f& direction,
                                const Eigen::Vector3f& normal_direction,
                                float clamp_weight, int smoothing_iterations);

// The fraction of the angle between a direction and the cone's axis that
// ClampDirection turns the axis by, for a direction `angle` radians (in
// [0, pi]) from the axis: 1 inside the cone (or clamp_weight <= 0 or NaN),
// 0 for clamp_weight >= 1; outside the cone the fraction that lands on its
// edge, scaled down the farther outside (0 when opposite) and smoothed.
// FinalIK's LookAtIK scales its bones' turns by it (IKSolverLookAt's
// GetForwards).
float ClampTurnFraction(float angle, float clamp_weight,
                        int smoothing_iterations);

// Spherical interpolation between unit directions: `a` rotated toward `b` by
// t times the angle between them (t = 0 returns `a` exactly). Opposite
// directions rotate about a perpendicular axis chosen deterministically.
Eigen::Vector3f SlerpDirection(const Eigen::Vector3f& a,
                               const Eigen::Vector3f& b, float t);

// SlerpDirection in two steps, for several points of one arc: the arc from
// unit `from` toward unit `to` (ArcBetween), then the point a fraction t of
// the way along it (PointOnArc), with SlerpDirection's bits.
struct DirectionArc {
  Eigen::Vector3f from = Eigen::Vector3f::UnitZ();
  // Unit, square to `from`, toward `to` (when opposite: a perpendicular
  // chosen deterministically).
  Eigen::Vector3f toward = Eigen::Vector3f::Zero();
  // The angle from `from` to `to`, in [0, pi].
  float angle = 0.0f;
  // `to` is `from` within float precision: every point is `from`.
  bool same = true;
};
DirectionArc ArcBetween(const Eigen::Vector3f& from, const Eigen::Vector3f& to);
Eigen::Vector3f PointOnArc(const DirectionArc& arc, float t);

// Shortest-arc rotation taking the direction of `from` onto the direction of
// `to` (neither needs unit length). Identity when either is zero; a half turn
// about an axis perpendicular to `from`, chosen deterministically, when they
// are opposite. Accurate to float precision up to and including opposite
// directions (the axis is built perpendicular to `from`).
Eigen::Quaternionf RotationBetween(const Eigen::Vector3f& from,
                                   const Eigen::Vector3f& to);

// Rotation about the unit `axis` by the angle whose cosine and sine are
// proportional to `c` and `s` (they need not be normalised, but must not both
// be zero). Half-angle formulas: no trigonometric calls. Inline: the
// analytic solvers call it in their hot path.
inline Eigen::Quaternionf AxisRotationFromCosSin(const Eigen::Vector3f& axis,
                                                 float c, float s) {
  // With r = |(c, s)| and a the angle: (r + c, s * axis) is the quaternion
  // scaled by 2 r cos(a/2), of squared norm 2 r (r + c); (s, (r - c) * axis)
  // is it scaled by 2 r sin(a/2), of squared norm 2 r (r - c). The first
  // keeps full precision for |a| <= 90 degrees, the second beyond, and
  // neither needs (c, s) normalised first.
  float r = std::sqrt(c * c + s * s);
  if (!(r > 1e-18f && r < 1e18f)) {
    // Rescale so that 2 r (r +- c) below neither underflows nor overflows.
    const float m = std::max(std::fabs(c), std::fabs(s));
    c /= m;
    s /= m;
    r = std::sqrt(c * c + s * s);
  }
  float w;
  float v;
  float inv;
  if (c >= 0.0f) {
    w = r + c;
    v = s;
    inv = 1.0f / std::sqrt(2.0f * r * w);
  } else {
    w = s;
    v = r - c;
    inv = 1.0f / std::sqrt(2.0f * r * v);
    if (s < 0.0f) inv = -inv;  // sin(a/2) < 0: flip to keep w >= 0
  }
  const float k = v * inv;
  return Eigen::Quaternionf(w * inv, k * axis.x(), k * axis.y(), k * axis.z());
}

// AxisRotationFromCosSin for c^2 + s^2 = 1 (to float precision): one square
// root fewer.
inline Eigen::Quaternionf AxisRotationFromUnitCosSin(
    const Eigen::Vector3f& axis, float c, float s) {
  float w;
  float v;
  float inv;
  if (c >= 0.0f) {
    w = 1.0f + c;
    v = s;
    inv = 1.0f / std::sqrt(2.0f * w);
  } else {
    w = s;
    v = 1.0f - c;
    inv = 1.0f / std::sqrt(2.0f * v);
    if (s < 0.0f) inv = -inv;
  }
  const float k = v * inv;
  return Eigen::Quaternionf(w * inv, k * axis.x(), k * axis.y(), k * axis.z());
}

// The rotation that takes the direction of `from` onto the direction of `to`
// and, about that, the part of `from_ref` perpendicular to `from` onto the
// part of `to_ref` perpendicular to `to`: a swing followed by a roll, built
// in one step from the two orthonormal frames. When either reference has no
// perpendicular part (its squared sine with its direction is at most
// `min_sin2`) the roll is undefined and the result is RotationBetween(from,
// to). Identity when `from` or `to` is zero.
Eigen::Quaternionf RotationBetweenFrames(const Eigen::Vector3f& from,
                                         const Eigen::Vector3f& from_ref,
                                         const Eigen::Vector3f& to,
                                         const Eigen::Vector3f& to_ref,
                                         float min_sin2 = 1e-10f);
// The same on Vec3 values (quaternion_math.h), for the analytic solvers,
// whose vectors already live in SIMD registers.
Eigen::Quaternionf RotationBetweenFrames(Vec3 from, Vec3 from_ref, Vec3 to,
                                         Vec3 to_ref, float min_sin2 = 1e-10f);

// Rotation about the unit `axis` that turns the part of `from` perpendicular
// to `axis` onto the part of `to` perpendicular to it. Identity when either
// part is (nearly) zero, i.e. when a vector is parallel to the axis: there is
// no angle to measure. `min_sin2` is the squared sine of the smallest angle
// between a vector and the axis that still defines the rotation.
Eigen::Quaternionf RotationAboutAxis(const Eigen::Vector3f& axis,
                                     const Eigen::Vector3f& from,
                                     const Eigen::Vector3f& to,
                                     float min_sin2 = 1e-10f);

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_ANALYTIC_IK_CLAMP_DIRECTION_H_
