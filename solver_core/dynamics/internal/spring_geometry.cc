#include "solver_core/dynamics/internal/spring_geometry.h"

#include <algorithm>

namespace posewire {
namespace spring_internal {
namespace {

// How far past a collider surface counts as rounding rather than overlap.
float Slop(const Eigen::Vector3f& p) {
  return 1e-6f * (1.0f + p.cwiseAbs().maxCoeff());
}

// The deepest overlap of a bone sphere at `p` with the colliders, beyond
// rounding: > 0 overlaps, <= 0 is clear. Every collider counts (no
// bounding-sphere culling), so the value is a continuous function of `p`,
// as the arc search needs; where only the sign matters, AnyPenetration is
// cheaper.
float ExactOverlap(absl::Span<const PlacedCollider> colliders, float radius,
                   const Eigen::Vector3f& p) {
  int ignored = -1;
  return DeepestPenetration(colliders, radius, p, Slop(p), false, &ignored);
}

// cos phi and sin phi for u = tan(phi / 4): the half angle's cosine and
// sine (1 - u^2, 2 u) / (1 + u^2), then the double-angle formulas. The lane
// search (spring_bone_lanes.inc) spells out the same operations.
struct ArcCosSin {
  float cos, sin;
};
inline ArcCosSin ArcPoint(float u) {
  const float u2 = u * u;
  const float d = 1.0f / (1.0f + u2);
  const float c = (1.0f - u2) * d;
  const float s = (u + u) * d;
  return {c * c - s * s, (s + s) * c};
}

// The exit from a sphere or a plane along the arc, in closed form. Along
// dir(phi) = a cos phi + perp sin phi (a point parent + length dir), the
// bone overlaps such a collider exactly where
//   alpha cos phi + beta sin phi < gamma,
// for a sphere of reach rho around c (D = parent - c) alpha = D.a,
// beta = D.perp, gamma = (rho^2 - D.D - length^2) / (2 length), signs
// flipped for a keep-inside sphere; for a plane of normal n through c
// alpha = n.a, beta = n.perp, gamma = (reach - n.D) / length. The reach is
// the collider's (plus the bone radius) and kArcExitMargin of the length.
// The coefficients for the other shapes do not exist: `exists` is false and
// the regula falsi runs instead.
struct ArcExitCoefficients {
  bool exists = false;
  float alpha = 0.0f, beta = 0.0f, gamma = 0.0f;
};

ArcExitCoefficients ArcExitFor(const PlacedCollider& c, float radius,
                               const Eigen::Vector3f& parent,
                               const Eigen::Vector3f& a,
                               const Eigen::Vector3f& perp, float length) {
  const float margin = kArcExitMargin * length;
  const Eigen::Vector3f d = parent - c.center;
  switch (c.shape) {
    case ColliderShape::kSphere: {
      const float reach = c.keep_inside
                              ? std::max(c.radius - radius, 0.0f) - margin
                              : c.radius + radius + margin;
      const float gamma = (reach * reach - d.squaredNorm() - length * length) /
                          (length + length);
      if (c.keep_inside) {
        return {reach > 0.0f, -d.dot(a), -d.dot(perp), -gamma};
      }
      return {true, d.dot(a), d.dot(perp), gamma};
    }
    case ColliderShape::kPlane:
      return {true, c.direction.dot(a), c.direction.dot(perp),
              (radius + margin - c.direction.dot(d)) / length};
    case ColliderShape::kCapsule:
    case ColliderShape::kBox:
      break;
  }
  return {};
}

// The first phi > 0 where alpha cos phi + beta sin phi reaches gamma
// (starting below it), as (cos phi, sin phi), when it lies within the arc
// (cos phi >= cos_end). With t = tan(phi / 2) the condition is the quadratic
// (alpha + gamma) t^2 - 2 beta t + (gamma - alpha) = 0, whose smallest
// positive root is (gamma - alpha) / (beta + sqrt(alpha^2 + beta^2 -
// gamma^2)) whenever the denominator is positive (the form without
// cancellation). Returns false otherwise: no real root, none ahead, or past
// the arc's end. The lane search spells out the same operations.
bool ArcExit(const ArcExitCoefficients& k, float cos_end, ArcCosSin* out) {
  if (!k.exists) return false;
  const float below = k.gamma - k.alpha;
  const float discriminant =
      k.alpha * k.alpha + k.beta * k.beta - k.gamma * k.gamma;
  if (!(below > 0.0f) || !(discriminant >= 0.0f)) return false;
  const float denominator = k.beta + std::sqrt(discriminant);
  if (!(denominator > 0.0f)) return false;
  const float t = below / denominator;
  const float t2 = t * t;
  const float inverse = 1.0f / (1.0f + t2);
  out->cos = (1.0f - t2) * inverse;
  out->sin = (t + t) * inverse;
  return out->cos >= cos_end;
}

}  // namespace

Eigen::Quaternionf ShortestArc(const Eigen::Vector3f& a,
                               const Eigen::Vector3f& b) {
  const float norms = std::sqrt(a.squaredNorm() * b.squaredNorm());
  const float w = norms + a.dot(b);
  if (w <= 1e-6f * norms) {
    const Eigen::Vector3f axis = a.unitOrthogonal();
    return Eigen::Quaternionf(0.0f, axis.x(), axis.y(), axis.z());
  }
  const Eigen::Vector3f v = a.cross(b);
  return Eigen::Quaternionf(w, v.x(), v.y(), v.z()).normalized();
}

Eigen::Vector3f TurnOutAlongArcScalar(
    const SpringParticle& pt, Eigen::Vector3f p, const Eigen::Vector3f& parent,
    const Eigen::Vector3f& pose_bone, float pose_len, float f_lo, int deepest,
    absl::Span<const PlacedCollider> colliders) {
  const float radius = pt.settings.radius;
  const float length = (p - parent).norm();
  if (!(length > kTinyLength)) return p;
  const Eigen::Vector3f target = Constrain(
      pt, parent + OutwardDirection(colliders[deepest], parent) * length,
      parent, pose_bone, pose_len);
  // The arc from the bone's direction a toward the target's b:
  // dir(t) = cos(phi) a + sin(phi) perp, tan(phi / 4) = t tan(angle / 4).
  const Eigen::Vector3f a = (p - parent) / length;
  const Eigen::Vector3f b = (target - parent).normalized();
  const float ab = a.dot(b);
  Eigen::Vector3f perp = b - a * ab;
  const float perp_len = perp.norm();
  perp = perp_len > kTinyLength ? Eigen::Vector3f(perp / perp_len)
                                : a.unitOrthogonal();
  // A sphere or a plane: straight to where the arc leaves it, kept when no
  // other collider holds that point.
  ArcCosSin exit;
  if (ArcExit(ArcExitFor(colliders[deepest], radius, parent, a, perp, length),
              ab, &exit)) {
    const Eigen::Vector3f x =
        parent + (a * exit.cos + perp * exit.sin) * length;
    // Only the sign matters here: the culled test gives it.
    if (!AnyPenetration(colliders, radius, x, Slop(x))) return x;
  }
  float f_hi = ExactOverlap(colliders, radius, target);
  if (f_hi > 0.0f) return p;
  const float quarter = TanQuarterAngle(a.cross(b).norm(), ab);
  // Invariant: fraction `lo` of the arc overlaps (f_lo > 0), `hi` is clear.
  float lo = 0.0f;
  float hi = 1.0f;
  Eigen::Vector3f clear = target;
  const float close_enough = 1e-4f * length;
  int retained = 0;  // which end the last step kept: -1 lo, +1 hi
  for (int it = 0; it < kArcSearchSteps; ++it) {
    float t = (lo * f_hi - hi * f_lo) / (f_hi - f_lo);
    if (!(t > lo && t < hi)) t = 0.5f * (lo + hi);
    const ArcCosSin sc = ArcPoint(t * quarter);
    const Eigen::Vector3f x = parent + (a * sc.cos + perp * sc.sin) * length;
    const float f = ExactOverlap(colliders, radius, x);
    if (f > 0.0f) {
      lo = t;
      f_lo = f;
      if (retained == -1) f_hi *= 0.5f;  // Illinois: unstick the kept end
      retained = -1;
    } else {
      hi = t;
      f_hi = f;
      clear = x;
      if (f > -close_enough) break;
      if (retained == 1) f_lo *= 0.5f;
      retained = 1;
    }
  }
  return clear;
}

}  // namespace spring_internal
}  // namespace posewire
