#include "solver_core/dynamics/spring_colliders.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/base/attributes.h"
#include "absl/strings/str_cat.h"
#include "solver_core/dynamics/internal/spring_collider_lanes.h"
#include "solver_core/model/pose.h"

namespace posewire {
namespace {

constexpr float kTinyDistance = kColliderTinyDistance;

std::string Label(int index, ColliderShape shape) {
  return absl::StrCat("spring_bones.colliders[", index, "] (",
                      ColliderShapeName(shape), ")");
}

absl::Status NonNegative(float value, int index, ColliderShape shape,
                         absl::string_view field) {
  if (!std::isfinite(value) || value < 0.0f) {
    return absl::InvalidArgumentError(
        absl::StrCat(Label(index, shape), ".", field, ": ", value,
                     " is not a finite non-negative number"));
  }
  return absl::OkStatus();
}

inline bool FiniteNonNegative(float value) {
  return std::isfinite(value) && value >= 0.0f;
}

// Pushes `position` to distance `limit` from `anchor` along the direction
// from the anchor, or along `fallback` when the point sits on the anchor.
void PushToDistance(const Eigen::Vector3f& anchor, float limit,
                    const Eigen::Vector3f& fallback,
                    Eigen::Vector3f* position) {
  const Eigen::Vector3f d = *position - anchor;
  const float dist = d.norm();
  const Eigen::Vector3f dir =
      dist > kTinyDistance ? Eigen::Vector3f(d / dist) : fallback;
  *position = anchor + dir * limit;
}

Eigen::Vector3f ClosestOnCapsuleAxis(const PlacedCollider& c,
                                     const Eigen::Vector3f& p) {
  const float t =
      std::clamp(c.direction.dot(p - c.center), -c.half_length, c.half_length);
  return c.center + c.direction * t;
}

// The axis of the box face nearest to a point inside the box (box-local
// coordinates).
int NearestFace(const Eigen::Vector3f& local, const Eigen::Vector3f& half) {
  int axis = 0;
  float best = half[0] - std::fabs(local[0]);
  for (int i = 1; i < 3; ++i) {
    const float gap = half[i] - std::fabs(local[i]);
    if (gap < best) {
      best = gap;
      axis = i;
    }
  }
  return axis;
}

// The kernels, defined here so the per-collider loops below inline them.
inline float Depth(const PlacedCollider& c, float bone_radius,
                   const Eigen::Vector3f& p) {
  switch (c.shape) {
    case ColliderShape::kSphere: {
      const float dist = (p - c.center).norm();
      if (c.keep_inside) {
        return dist - std::max(c.radius - bone_radius, 0.0f);
      }
      return c.radius + bone_radius - dist;
    }
    case ColliderShape::kCapsule:
      return c.radius + bone_radius - (p - ClosestOnCapsuleAxis(c, p)).norm();
    case ColliderShape::kBox: {
      const Eigen::Vector3f local = c.axes.transpose() * (p - c.center);
      const Eigen::Vector3f outside =
          (local.cwiseAbs() - c.half_extents).cwiseMax(0.0f);
      if (outside.squaredNorm() > 0.0f) return bone_radius - outside.norm();
      return bone_radius + (c.half_extents - local.cwiseAbs()).minCoeff();
    }
    case ColliderShape::kPlane:
      return bone_radius - c.direction.dot(p - c.center);
  }
  return 0.0f;
}

inline bool PushOut(const PlacedCollider& c, float bone_radius,
                    Eigen::Vector3f* p) {
  switch (c.shape) {
    case ColliderShape::kSphere: {
      const float dist = (*p - c.center).norm();
      if (c.keep_inside) {
        // A bone wider than the sphere cannot fit; its centre goes to the
        // sphere's centre, the best it can do.
        const float limit = std::max(c.radius - bone_radius, 0.0f);
        if (dist <= limit) return false;
        PushToDistance(c.center, limit, c.axes.col(2), p);
        return true;
      }
      const float limit = c.radius + bone_radius;
      if (dist >= limit) return false;
      PushToDistance(c.center, limit, c.axes.col(2), p);
      return true;
    }
    case ColliderShape::kCapsule: {
      const Eigen::Vector3f closest = ClosestOnCapsuleAxis(c, *p);
      const float limit = c.radius + bone_radius;
      if ((*p - closest).norm() >= limit) return false;
      PushToDistance(closest, limit, c.direction.unitOrthogonal(), p);
      return true;
    }
    case ColliderShape::kBox: {
      Eigen::Vector3f local = c.axes.transpose() * (*p - c.center);
      const Eigen::Vector3f clamped =
          local.cwiseMax(-c.half_extents).cwiseMin(c.half_extents);
      const Eigen::Vector3f d = local - clamped;
      const float dist = d.norm();
      if (dist > 0.0f) {
        // Centre outside the box: keep bone_radius from the closest point.
        if (dist >= bone_radius) return false;
        local = clamped + d * (bone_radius / dist);
      } else {
        // Centre inside (or on) the box: leave through the nearest face.
        const int axis = NearestFace(local, c.half_extents);
        const float sign = local[axis] < 0.0f ? -1.0f : 1.0f;
        local[axis] = sign * (c.half_extents[axis] + bone_radius);
      }
      *p = c.center + c.axes * local;
      return true;
    }
    case ColliderShape::kPlane: {
      const float signed_dist = c.direction.dot(*p - c.center);
      if (signed_dist >= bone_radius) return false;
      *p += c.direction * (bone_radius - signed_dist);
      return true;
    }
  }
  return false;
}

}  // namespace

const char* ColliderShapeName(ColliderShape shape) {
  switch (shape) {
    case ColliderShape::kSphere:
      return "sphere";
    case ColliderShape::kCapsule:
      return "capsule";
    case ColliderShape::kBox:
      return "box";
    case ColliderShape::kPlane:
      return "plane";
  }
  return "unknown";
}

absl::Status ValidateCollider(const SpringCollider& c, int index,
                              const Skeleton& skeleton) {
  switch (c.shape) {
    case ColliderShape::kSphere:
    case ColliderShape::kCapsule:
    case ColliderShape::kBox:
    case ColliderShape::kPlane:
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("spring_bones.colliders[", index,
                       "].shape: unknown "
                       "value ",
                       static_cast<int>(c.shape)));
  }
  // Labels are built only on the error paths: this runs for every collider
  // of every frame.
  switch (c.attachment) {
    case ColliderAttachment::kComponent:
    case ColliderAttachment::kWorld:
      break;
    case ColliderAttachment::kBone:
      if (c.bone < 0 || c.bone >= skeleton.num_joints()) {
        return absl::InvalidArgumentError(
            absl::StrCat(Label(index, c.shape), ".bone: joint ", c.bone,
                         " is out of range [0, ", skeleton.num_joints(), ")"));
      }
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(Label(index, c.shape), ".attachment: unknown value ",
                       static_cast<int>(c.attachment)));
  }
  // IsFinite, inline: this runs for every collider of every frame.
  const bool finite = c.offset.translation.allFinite() &&
                      c.offset.rotation.coeffs().allFinite() &&
                      c.offset.scale.allFinite();
  if (!finite || !(std::fabs(c.offset.rotation.norm() - 1.0f) <=
                   kUnitQuaternionTolerance)) {
    return ValidateTransform(c.offset,
                             absl::StrCat(Label(index, c.shape), ".offset"),
                             index, "collider");
  }
  if (c.offset.scale != Eigen::Vector3f::Ones()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Label(index, c.shape),
                     ".offset: scale must be (1, 1, 1); give sizes "
                     "in radius, length and half_extents"));
  }
  // NonNegative builds its message only on failure, but each call returns
  // a Status: test first.
  if (!FiniteNonNegative(c.radius)) {
    return NonNegative(c.radius, index, c.shape, "radius");
  }
  if (!FiniteNonNegative(c.length)) {
    return NonNegative(c.length, index, c.shape, "length");
  }
  for (int i = 0; i < 3; ++i) {
    const float e = c.half_extents[i];
    if (!FiniteNonNegative(e)) {
      return NonNegative(e, index, c.shape,
                         absl::StrCat("half_extents[", i, "]"));
    }
  }
  if (!c.axis.allFinite() || !(c.axis.norm() > 1e-6f)) {
    return absl::InvalidArgumentError(absl::StrCat(
        Label(index, c.shape), ".axis: must be a finite non-zero vector"));
  }
  return absl::OkStatus();
}

PlacedCollider PlaceCollider(const SpringCollider& collider,
                             const Transform& frame, float size_scale) {
  PlacedCollider out;
  out.shape = collider.shape;
  out.keep_inside = collider.keep_inside;
  const Eigen::Quaternionf rotation = frame.rotation * collider.offset.rotation;
  out.center = frame.TransformPoint(collider.offset.translation);
  out.axes = rotation.toRotationMatrix();
  out.direction = rotation * collider.axis.normalized();
  // A negative (mirroring) scale flips directions; sizes stay positive.
  if (size_scale < 0.0f) {
    out.axes = -out.axes;
    out.direction = -out.direction;
  }
  const float s = std::fabs(size_scale);
  out.radius = collider.radius * s;
  out.half_length = 0.5f * collider.length * s;
  out.half_extents = collider.half_extents * s;
  switch (out.shape) {
    case ColliderShape::kSphere:
      out.bound =
          out.keep_inside ? std::numeric_limits<float>::infinity() : out.radius;
      break;
    case ColliderShape::kCapsule:
      out.bound = out.radius + out.half_length;
      break;
    case ColliderShape::kBox:
      out.bound = out.half_extents.norm();
      break;
    case ColliderShape::kPlane:
      out.bound = std::numeric_limits<float>::infinity();
      break;
  }
  return out;
}

Eigen::Vector3f OutwardDirection(const PlacedCollider& c,
                                 const Eigen::Vector3f& p) {
  auto away = [](const Eigen::Vector3f& d, const Eigen::Vector3f& fallback) {
    const float len = d.norm();
    return len > kTinyDistance ? Eigen::Vector3f(d / len) : fallback;
  };
  switch (c.shape) {
    case ColliderShape::kSphere: {
      const Eigen::Vector3f out = away(p - c.center, c.axes.col(2));
      return c.keep_inside ? Eigen::Vector3f(-out) : out;
    }
    case ColliderShape::kCapsule:
      return away(p - ClosestOnCapsuleAxis(c, p), c.direction.unitOrthogonal());
    case ColliderShape::kBox: {
      const Eigen::Vector3f local = c.axes.transpose() * (p - c.center);
      const Eigen::Vector3f clamped =
          local.cwiseMax(-c.half_extents).cwiseMin(c.half_extents);
      const Eigen::Vector3f d = local - clamped;
      if (d.squaredNorm() > 0.0f) return c.axes * d.normalized();
      const int axis = NearestFace(local, c.half_extents);
      return c.axes.col(axis) * (local[axis] < 0.0f ? -1.0f : 1.0f);
    }
    case ColliderShape::kPlane:
      return c.direction;
  }
  return Eigen::Vector3f::UnitZ();
}

float PenetrationDepth(const PlacedCollider& collider, float bone_radius,
                       const Eigen::Vector3f& position) {
  return Depth(collider, bone_radius, position);
}

bool PushOutOfCollider(const PlacedCollider& collider, float bone_radius,
                       Eigen::Vector3f* position) {
  return PushOut(collider, bone_radius, position);
}

bool PushOutOfColliders(absl::Span<const PlacedCollider> colliders,
                        float bone_radius, Eigen::Vector3f* position) {
  bool moved = false;
  for (const PlacedCollider& c : colliders) {
    if (MayTouch(c, bone_radius, *position) &&
        PushOut(c, bone_radius, position)) {
      moved = true;
    }
  }
  return moved;
}

float DeepestPenetration(absl::Span<const PlacedCollider> colliders,
                         float bone_radius, const Eigen::Vector3f& position,
                         float slop, bool cull, int* deepest) {
  float worst = -std::numeric_limits<float>::max();
  for (size_t c = 0; c < colliders.size(); ++c) {
    if (cull && !MayTouch(colliders[c], bone_radius, position)) continue;
    const float depth = Depth(colliders[c], bone_radius, position) - slop;
    if (depth > worst) {
      worst = depth;
      *deepest = static_cast<int>(c);
    }
  }
  return worst;
}

bool AnyPenetration(absl::Span<const PlacedCollider> colliders,
                    float bone_radius, const Eigen::Vector3f& position,
                    float slop) {
  for (const PlacedCollider& c : colliders) {
    if (MayTouch(c, bone_radius, position) &&
        Depth(c, bone_radius, position) - slop > 0.0f) {
      return true;
    }
  }
  return false;
}

LaneCollider SplatCollider(const PlacedCollider& c) {
  LaneCollider out;
  out.shape = c.shape;
  out.keep_inside = c.keep_inside;
  out.center = lanes::Splat(c.center);
  for (int k = 0; k < 3; ++k) {
    out.axes[k] = lanes::Splat(Eigen::Vector3f(c.axes.col(k)));
  }
  out.direction = lanes::Splat(c.direction);
  out.fallback = lanes::Splat(c.shape == ColliderShape::kCapsule
                                  ? c.direction.unitOrthogonal()
                                  : Eigen::Vector3f(c.axes.col(2)));
  out.half_extents = lanes::Splat(c.half_extents);
  out.radius = lanes::Splat(c.radius);
  out.half_length = lanes::Splat(c.half_length);
  out.bound = lanes::Splat(c.bound);
  return out;
}

// The four-lane kernels (the public ones of spring_colliders.h); the same
// source gives spring_bones.cc its eight-lane AVX2 kernels.
namespace L = lanes;
#include "solver_core/dynamics/internal/spring_collider_lanes.inc"

}  // namespace posewire
