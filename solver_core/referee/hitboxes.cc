#include "solver_core/referee/hitboxes.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "solver_core/model/pose.h"

namespace posewire {
namespace {

PlacedHitbox Place(const Transform& joint_model, const Hitbox& hitbox) {
  Transform offset;
  offset.translation = hitbox.offset_translation;
  offset.rotation = hitbox.offset_rotation;
  const Transform frame = Combine(joint_model, offset);
  return {.center = frame.translation,
          .rotation = frame.rotation,
          .axis = frame.rotation * Eigen::Vector3f::UnitY()};
}

// The point of segment [center - axis h, center + axis h] nearest to p.
Eigen::Vector3f NearestOnSegment(const Eigen::Vector3f& center,
                                 const Eigen::Vector3f& axis, float h,
                                 const Eigen::Vector3f& p) {
  const float s = std::clamp((p - center).dot(axis), -h, h);
  return center + axis * s;
}

// One shape's first entry along the ray: t (>= 0) and the outward normal.
struct Entry {
  bool hit = false;
  float t = 0.0f;
  Eigen::Vector3f normal = Eigen::Vector3f::Zero();
};

// The ray (o, unit d) and the sphere (c, r); the origin is outside it.
Entry EnterSphere(const Eigen::Vector3f& o, const Eigen::Vector3f& d,
                  const Eigen::Vector3f& c, float r) {
  const Eigen::Vector3f m = o - c;
  const float b = m.dot(d);
  if (b > 0.0f) return {};  // moving away from it
  // r^2 less the squared distance from the centre to the line, rather than
  // b^2 - (|m|^2 - r^2), which cancels badly far from the sphere (Haines et
  // al., "Precision Improvements for Ray/Sphere Intersection").
  const float disc = r * r - (m - d * b).squaredNorm();
  if (disc < 0.0f) return {};
  const float t = std::max(-b - std::sqrt(disc), 0.0f);
  return {.hit = true, .t = t, .normal = (m + d * t).normalized()};
}

Entry EnterCapsule(const Eigen::Vector3f& o, const Eigen::Vector3f& d,
                   const PlacedHitbox& p, const Hitbox& h) {
  const float r = h.radius;
  Entry best;
  // The lateral surface of the cylinder around the segment: the ray and
  // the offset from the centre with their axial parts removed.
  const Eigen::Vector3f m = o - p.center;
  const Eigen::Vector3f m_radial = m - p.axis * m.dot(p.axis);
  const Eigen::Vector3f d_radial = d - p.axis * d.dot(p.axis);
  const float a = d_radial.squaredNorm();
  if (a > 0.0f) {
    // As for the sphere, in the plane across the axis: the closest
    // approach t0 and the radial distance there.
    const float t0 = -m_radial.dot(d_radial) / a;
    const float disc = (r * r - (m_radial + d_radial * t0).squaredNorm()) / a;
    if (disc >= 0.0f) {
      const float t = t0 - std::sqrt(disc);
      if (t >= 0.0f && std::abs((m + d * t).dot(p.axis)) <= h.half_height) {
        best = {.hit = true,
                .t = t,
                .normal = (m_radial + d_radial * t).normalized()};
      }
    }
  }
  // The end spheres (the cylinder's entry, when it has one within the
  // segment, is never later than theirs there: the first of the three is
  // the capsule's).
  for (const float end : {-h.half_height, h.half_height}) {
    const Entry e = EnterSphere(o, d, p.center + p.axis * end, r);
    if (e.hit && (!best.hit || e.t < best.t)) best = e;
  }
  return best;
}

Entry EnterBox(const Eigen::Vector3f& o, const Eigen::Vector3f& d,
               const PlacedHitbox& p, const Hitbox& h) {
  const Eigen::Quaternionf to_local = p.rotation.conjugate();
  const Eigen::Vector3f lo = to_local * (o - p.center);
  const Eigen::Vector3f ld = to_local * d;
  float t_enter = 0.0f;
  float t_exit = std::numeric_limits<float>::infinity();
  int axis = -1;
  for (int i = 0; i < 3; ++i) {
    const float e = h.half_extents[i];
    if (ld[i] == 0.0f) {
      if (std::abs(lo[i]) > e) return {};  // parallel, outside this slab
      continue;
    }
    float near_t = (-e - lo[i]) / ld[i];
    float far_t = (e - lo[i]) / ld[i];
    if (near_t > far_t) std::swap(near_t, far_t);
    if (near_t > t_enter) {
      t_enter = near_t;
      axis = i;
    }
    t_exit = std::min(t_exit, far_t);
    if (t_enter > t_exit) return {};
  }
  if (axis < 0) return {.hit = true, .t = 0.0f, .normal = -d};  // on it
  Eigen::Vector3f local_normal = Eigen::Vector3f::Zero();
  local_normal[axis] = ld[axis] > 0.0f ? -1.0f : 1.0f;
  return {.hit = true, .t = t_enter, .normal = p.rotation * local_normal};
}

bool Inside(const Eigen::Vector3f& q, const PlacedHitbox& p, const Hitbox& h) {
  switch (h.shape) {
    case HitboxShape::kSphere:
      return (q - p.center).squaredNorm() <= h.radius * h.radius;
    case HitboxShape::kCapsule:
      return (q - NearestOnSegment(p.center, p.axis, h.half_height, q))
                 .squaredNorm() <= h.radius * h.radius;
    case HitboxShape::kBox: {
      const Eigen::Vector3f l = p.rotation.conjugate() * (q - p.center);
      return std::abs(l.x()) <= h.half_extents.x() &&
             std::abs(l.y()) <= h.half_extents.y() &&
             std::abs(l.z()) <= h.half_extents.z();
    }
  }
  return false;
}

// Squared distance from q to the hitbox (0 inside).
float SquaredDistance(const Eigen::Vector3f& q, const PlacedHitbox& p,
                      const Hitbox& h) {
  switch (h.shape) {
    case HitboxShape::kSphere: {
      const float out = std::max((q - p.center).norm() - h.radius, 0.0f);
      return out * out;
    }
    case HitboxShape::kCapsule: {
      const float out = std::max(
          (q - NearestOnSegment(p.center, p.axis, h.half_height, q)).norm() -
              h.radius,
          0.0f);
      return out * out;
    }
    case HitboxShape::kBox: {
      const Eigen::Vector3f l = p.rotation.conjugate() * (q - p.center);
      const Eigen::Vector3f clamped =
          l.cwiseMax(-h.half_extents).cwiseMin(h.half_extents);
      return (l - clamped).squaredNorm();
    }
  }
  return 0.0f;
}

bool Finite(const Eigen::Vector3f& v) { return v.allFinite(); }

// The ray's (unit d) entry into one placed hitbox.
Entry EnterHitbox(const Eigen::Vector3f& o, const Eigen::Vector3f& d,
                  const PlacedHitbox& p, const Hitbox& h) {
  if (Inside(o, p, h)) return {.hit = true, .t = 0.0f, .normal = -d};
  switch (h.shape) {
    case HitboxShape::kSphere:
      return EnterSphere(o, d, p.center, h.radius);
    case HitboxShape::kCapsule:
      return EnterCapsule(o, d, p, h);
    case HitboxShape::kBox:
      return EnterBox(o, d, p, h);
  }
  return {};
}

// The radius of a ball around the hitbox's centre that holds it.
float BoundingRadius(const Hitbox& h) {
  switch (h.shape) {
    case HitboxShape::kSphere:
      return h.radius;
    case HitboxShape::kCapsule:
      return h.radius + h.half_height;
    case HitboxShape::kBox:
      return h.half_extents.norm();
  }
  return std::numeric_limits<float>::infinity();
}

// Whether the ray (unit d) surely misses the hitbox's bounding ball, or
// meets it only beyond `limit` (the nearest hit so far, or max_distance):
// a few products that skip most hitboxes a ray passes by. The ball is
// grown by a margin far above the rounding of this test and of the exact
// ones (0.1% of its radius, plus 1e-5 of the distance to it), so it never
// skips a hit the exact tests would keep: it saves work and never changes
// an answer.
bool BallSurelyMissed(const Eigen::Vector3f& o, const Eigen::Vector3f& d,
                      const Eigen::Vector3f& center, float bound, float limit) {
  const Eigen::Vector3f m = o - center;
  const float r = bound + (1e-3f * bound + 1e-5f * m.cwiseAbs().sum());
  const float r2 = r * r;
  if (m.squaredNorm() <= r2) return false;  // from inside or near: exact
  const float b = m.dot(d);
  if (b >= 0.0f) return true;  // outside the ball, going away
  const float across = (m - d * b).squaredNorm();
  if (across > r2) return true;                // passes beside it
  return -b - std::sqrt(r2 - across) > limit;  // enters beyond the limit
}

bool SurelyMissed(const Eigen::Vector3f& o, const Eigen::Vector3f& d,
                  const PlacedHitbox& p, const Hitbox& h, float limit) {
  return BallSurelyMissed(o, d, p.center, BoundingRadius(h), limit);
}

// The limit SurelyMissed skips beyond: a hitbox entered farther than the
// nearest hit so far cannot replace it.
float Limit(const RayHit& best, float max_distance) {
  return best.hitbox < 0 ? max_distance : std::min(max_distance, best.distance);
}

// Keeps the nearer of `best` and hitbox i's entry (ties: the lower index,
// which came first).
void KeepNearest(const Entry& e, int i, int joint, const Eigen::Vector3f& o,
                 const Eigen::Vector3f& d, float max_distance, RayHit& best) {
  if (!e.hit || e.t > max_distance) return;
  if (best.hitbox < 0 || e.t < best.distance) {
    best.hitbox = i;
    best.joint = joint;
    best.distance = e.t;
    best.point = o + d * e.t;
    best.normal = e.normal;
  }
}

}  // namespace

absl::Status ValidateHitScene(const Skeleton* skeleton,
                              absl::Span<const Hitbox> hitboxes,
                              absl::Span<const Transform> model_pose,
                              absl::string_view job) {
  if (skeleton == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(job, ".skeleton: null"));
  }
  if (absl::Status s =
          CheckPose(*skeleton, model_pose, absl::StrCat(job, ".model_pose"));
      !s.ok()) {
    return s;
  }
  return ValidateHitboxes(*skeleton, hitboxes, absl::StrCat(job, ".hitboxes"));
}

void PlaceHitboxes(absl::Span<const Hitbox> hitboxes,
                   absl::Span<const Transform> model_pose,
                   absl::Span<PlacedHitbox> placed) {
  for (size_t i = 0; i < hitboxes.size(); ++i) {
    placed[i] = Place(model_pose[hitboxes[i].joint], hitboxes[i]);
  }
}

RayHit FirstRayHit(absl::Span<const Hitbox> hitboxes,
                   absl::Span<const PlacedHitbox> placed,
                   const Eigen::Vector3f& origin,
                   const Eigen::Vector3f& direction, float max_distance) {
  const Eigen::Vector3f d = direction / direction.norm();
  RayHit best;
  for (size_t i = 0; i < hitboxes.size(); ++i) {
    if (SurelyMissed(origin, d, placed[i], hitboxes[i],
                     Limit(best, max_distance))) {
      continue;
    }
    KeepNearest(EnterHitbox(origin, d, placed[i], hitboxes[i]),
                static_cast<int>(i), hitboxes[i].joint, origin, d, max_distance,
                best);
  }
  return best;
}

HitboxBound BoundHitboxes(absl::Span<const Hitbox> hitboxes,
                          absl::Span<const PlacedHitbox> placed) {
  HitboxBound bound;
  if (hitboxes.empty()) return bound;
  Eigen::Vector3f sum = Eigen::Vector3f::Zero();
  for (const PlacedHitbox& p : placed) sum += p.center;
  bound.center = sum / static_cast<float>(placed.size());
  bound.radius = 0.0f;
  for (size_t i = 0; i < hitboxes.size(); ++i) {
    bound.radius =
        std::max(bound.radius, (placed[i].center - bound.center).norm() +
                                   BoundingRadius(hitboxes[i]));
  }
  return bound;
}

bool RaySurelyMissesBound(const HitboxBound& bound,
                          const Eigen::Vector3f& origin,
                          const Eigen::Vector3f& unit_direction, float limit) {
  return bound.radius < 0.0f ||
         BallSurelyMissed(origin, unit_direction, bound.center, bound.radius,
                          limit);
}

void OverlapSphere(absl::Span<const Hitbox> hitboxes,
                   absl::Span<const PlacedHitbox> placed,
                   const Eigen::Vector3f& center, float radius,
                   std::vector<int>* overlapped) {
  for (size_t i = 0; i < hitboxes.size(); ++i) {
    if (SquaredDistance(center, placed[i], hitboxes[i]) <= radius * radius) {
      overlapped->push_back(static_cast<int>(i));
    }
  }
}

absl::Status ValidateHitboxes(const Skeleton& skeleton,
                              absl::Span<const Hitbox> hitboxes,
                              absl::string_view field) {
  for (size_t i = 0; i < hitboxes.size(); ++i) {
    const Hitbox& h = hitboxes[i];
    // Built only for an error: a scene is checked once per query.
    auto where_of = [&] { return absl::StrCat(field, "[", i, "]"); };
    if (h.joint < 0 || h.joint >= skeleton.num_joints()) {
      return absl::InvalidArgumentError(absl::StrCat(
          where_of(), ".joint: ", h.joint, " is not a joint of this ",
          skeleton.num_joints(), "-joint skeleton"));
    }
    auto joint = [&] {
      return absl::StrCat(" (joint '", skeleton.joint_name(h.joint), "')");
    };
    if (!Finite(h.offset_translation)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where_of(), ".offset_translation: not finite", joint()));
    }
    const float n = h.offset_rotation.norm();
    if (!(std::abs(n - 1.0f) <= kUnitQuaternionTolerance)) {
      return absl::InvalidArgumentError(absl::StrCat(
          where_of(), ".offset_rotation: norm ", n, " is not 1", joint()));
    }
    switch (h.shape) {
      case HitboxShape::kSphere:
      case HitboxShape::kCapsule:
        if (!(std::isfinite(h.radius) && h.radius > 0.0f)) {
          return absl::InvalidArgumentError(
              absl::StrCat(where_of(), ".radius: ", h.radius,
                           " must be finite and > 0", joint()));
        }
        if (h.shape == HitboxShape::kCapsule &&
            !(std::isfinite(h.half_height) && h.half_height >= 0.0f)) {
          return absl::InvalidArgumentError(
              absl::StrCat(where_of(), ".half_height: ", h.half_height,
                           " must be finite and >= 0", joint()));
        }
        break;
      case HitboxShape::kBox:
        if (!(Finite(h.half_extents) && h.half_extents.minCoeff() > 0.0f)) {
          return absl::InvalidArgumentError(
              absl::StrCat(where_of(), ".half_extents: (", h.half_extents.x(),
                           ", ", h.half_extents.y(), ", ", h.half_extents.z(),
                           ") must be finite and > 0", joint()));
        }
        break;
      default:
        return absl::InvalidArgumentError(
            absl::StrCat(where_of(), ".shape: unknown", joint()));
    }
  }
  return absl::OkStatus();
}

absl::Status RayCastJob::Validate() const {
  if (absl::Status s =
          ValidateHitScene(skeleton, hitboxes, model_pose, "ray_cast");
      !s.ok()) {
    return s;
  }
  if (hit == nullptr) {
    return absl::InvalidArgumentError("ray_cast.hit: null");
  }
  if (!Finite(origin)) {
    return absl::InvalidArgumentError("ray_cast.origin: not finite");
  }
  const float length = direction.norm();
  if (!(std::isfinite(length) && length > 0.0f)) {
    return absl::InvalidArgumentError(
        "ray_cast.direction: must be finite and of non-zero length");
  }
  if (!(max_distance > 0.0f)) {
    return absl::InvalidArgumentError(
        absl::StrCat("ray_cast.max_distance: ", max_distance, " must be > 0"));
  }
  return absl::OkStatus();
}

absl::Status RayCastJob::Run() const {
  if (absl::Status s = Validate(); !s.ok()) return s;
  // Placed one at a time: a single ray reads each placement once.
  const Eigen::Vector3f d = direction / direction.norm();
  RayHit best;
  for (size_t i = 0; i < hitboxes.size(); ++i) {
    const Hitbox& h = hitboxes[i];
    const PlacedHitbox p = Place(model_pose[h.joint], h);
    if (SurelyMissed(origin, d, p, h, Limit(best, max_distance))) continue;
    KeepNearest(EnterHitbox(origin, d, p, h), static_cast<int>(i), h.joint,
                origin, d, max_distance, best);
  }
  *hit = best;
  return absl::OkStatus();
}

absl::Status SphereOverlapJob::Validate() const {
  if (absl::Status s =
          ValidateHitScene(skeleton, hitboxes, model_pose, "sphere_overlap");
      !s.ok()) {
    return s;
  }
  if (overlapped == nullptr) {
    return absl::InvalidArgumentError("sphere_overlap.overlapped: null");
  }
  if (!Finite(center)) {
    return absl::InvalidArgumentError("sphere_overlap.center: not finite");
  }
  if (!(std::isfinite(radius) && radius >= 0.0f)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sphere_overlap.radius: ", radius, " must be finite and >= 0"));
  }
  return absl::OkStatus();
}

absl::Status SphereOverlapJob::Run() const {
  if (absl::Status s = Validate(); !s.ok()) return s;
  overlapped->clear();
  for (size_t i = 0; i < hitboxes.size(); ++i) {
    const Hitbox& h = hitboxes[i];
    if (SquaredDistance(center, Place(model_pose[h.joint], h), h) <=
        radius * radius) {
      overlapped->push_back(static_cast<int>(i));
    }
  }
  return absl::OkStatus();
}

}  // namespace posewire
