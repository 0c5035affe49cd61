// The collider queries of spring_colliders.h on four bone spheres at once,
// one per lane (lane k has bone radius lane k), for the spring-bone kernels.
// Each lane gets exactly the bits the one-point functions give for it: the
// same operations in the same order, branches turned into lane selections.
// The source is spring_collider_lanes.inc, which spring_lane_engine.cc also
// compiles at eight lanes for its AVX2 path (same bits per lane).
#ifndef POSEWIRE_SOLVER_CORE_DYNAMICS_INTERNAL_SPRING_COLLIDER_LANES_H_
#define POSEWIRE_SOLVER_CORE_DYNAMICS_INTERNAL_SPRING_COLLIDER_LANES_H_

#include "absl/types/span.h"
#include "solver_core/dynamics/spring_colliders.h"
#include "solver_core/model/internal/simd_lanes.h"

namespace posewire {

// A placed collider with every value broadcast to the four lanes, built
// once per frame.
struct LaneCollider {
  ColliderShape shape = ColliderShape::kSphere;
  bool keep_inside = false;
  lanes::V4 center;
  // Columns of PlacedCollider::axes.
  lanes::V4 axes[3];
  lanes::V4 direction;
  // Where a point on a sphere centre or capsule axis is pushed.
  lanes::V4 fallback;
  lanes::V4 half_extents;
  lanes::F4 radius;
  lanes::F4 half_length;
  lanes::F4 bound;
};

LaneCollider SplatCollider(const PlacedCollider& collider);

// 1e-6 (1 + max |p_i|): how far past a surface counts as rounding.
lanes::F4 SlopLanes(const lanes::V4& position);

// PushOutOfColliders on every lane; returns the lanes it moved.
lanes::M4 PushOutOfCollidersLanes(absl::Span<const LaneCollider> colliders,
                                  lanes::F4 bone_radius, lanes::V4* position);

// AnyPenetration on every lane.
lanes::M4 AnyPenetrationLanes(absl::Span<const LaneCollider> colliders,
                              lanes::F4 bone_radius, const lanes::V4& position,
                              lanes::F4 slop);

// DeepestPenetration on every lane; `deepest` holds collider indices as
// floats (unchanged in a lane no collider was tested for).
lanes::F4 DeepestPenetrationLanes(absl::Span<const LaneCollider> colliders,
                                  lanes::F4 bone_radius,
                                  const lanes::V4& position, lanes::F4 slop,
                                  bool cull, lanes::F4* deepest);

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_DYNAMICS_INTERNAL_SPRING_COLLIDER_LANES_H_
