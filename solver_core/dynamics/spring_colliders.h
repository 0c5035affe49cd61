// Colliders for spring-bone dynamics: sphere, capsule, box and plane, each
// fixed in the component, fixed in the world or attached to a joint, pushing
// the bone spheres (a particle plus its bone radius) out of themselves.
//
// Shapes and push-out rules follow KawaiiPhysics' limits (SphericalLimit with
// its Outer/Inner types, CapsuleLimit, BoxLimit, PlanarLimit), with three
// deliberate differences so that "no collider penetrated" is a property one
// can state: a particle exactly on a sphere centre or capsule axis is pushed
// along a fixed fallback direction instead of staying put; a particle whose
// centre is inside a box leaves through the nearest face; and a plane is a
// half-space (everything behind it is solid) rather than a surface tested by
// segment crossing.
#ifndef POSEWIRE_SOLVER_CORE_DYNAMICS_SPRING_COLLIDERS_H_
#define POSEWIRE_SOLVER_CORE_DYNAMICS_SPRING_COLLIDERS_H_

#include <Eigen/Core>
#include <Eigen/Geometry>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"

namespace posewire {

enum class ColliderShape {
  kSphere,   // `radius` around the frame origin
  kCapsule,  // segment of `length` along `axis` through the origin, `radius`
  kBox,      // `half_extents` along the frame's axes
  kPlane,    // through the origin, solid behind `axis` (the outward normal)
};

enum class ColliderAttachment {
  kComponent,  // `offset` is in component space: moves with the character
  kWorld,      // `offset` is in world space: the floor, a wall
  kBone,       // `offset` is relative to joint `bone`'s model transform
};

const char* ColliderShapeName(ColliderShape shape);

struct SpringCollider {
  ColliderShape shape = ColliderShape::kSphere;
  ColliderAttachment attachment = ColliderAttachment::kComponent;
  // Joint index, for kBone only.
  int bone = -1;
  // The collider frame relative to what it is attached to. Only translation
  // and rotation are used; the scale must be (1, 1, 1) (sizes are given
  // explicitly below, in the units of the attachment's space). The scale of
  // the joint a kBone collider follows is ignored for the same reason.
  Transform offset = Transform::Identity();
  // Sphere and capsule radius. KawaiiPhysics' default.
  float radius = 5.0f;
  // Capsule: distance between the two hemisphere centres. KawaiiPhysics'
  // default.
  float length = 10.0f;
  // Box: half the box size along each frame axis. KawaiiPhysics' default.
  Eigen::Vector3f half_extents = Eigen::Vector3f::Constant(5.0f);
  // Capsule axis, or the plane's outward normal, in the collider frame
  // (normalised on use; must not be zero). KawaiiPhysics uses +Z for both.
  Eigen::Vector3f axis = Eigen::Vector3f::UnitZ();
  // Sphere only: keep the bones inside the sphere instead of outside
  // (KawaiiPhysics' ESphericalLimitType::Inner).
  bool keep_inside = false;
};

// Checks one collider: finite values, non-negative sizes, a unit offset
// rotation and unit offset scale, a non-zero axis, and a `bone` that exists
// when the attachment is kBone. `index` names it in errors
// ("spring_bones.colliders[2] (capsule): ...").
absl::Status ValidateCollider(const SpringCollider& collider, int index,
                              const Skeleton& skeleton);

// A collider placed in simulation space for one frame: what the push-out
// kernels read. Built once per frame, not per particle.
struct PlacedCollider {
  ColliderShape shape = ColliderShape::kSphere;
  bool keep_inside = false;
  Eigen::Vector3f center = Eigen::Vector3f::Zero();
  // Columns are the collider frame's axes in simulation space.
  Eigen::Matrix3f axes = Eigen::Matrix3f::Identity();
  // Unit capsule axis or plane normal in simulation space.
  Eigen::Vector3f direction = Eigen::Vector3f::UnitZ();
  float radius = 0.0f;
  float half_length = 0.0f;
  Eigen::Vector3f half_extents = Eigen::Vector3f::Zero();
  // Every point of the shape lies within `bound` of `center` (infinite for
  // planes and keep-inside spheres): a cheap test to skip far colliders.
  float bound = 0.0f;
};

// False when a sphere of `bone_radius` at `position` cannot touch `collider`
// (a squared-distance test against its bounding sphere).
inline bool MayTouch(const PlacedCollider& collider, float bone_radius,
                     const Eigen::Vector3f& position) {
  const float reach = collider.bound + bone_radius;
  return (position - collider.center).squaredNorm() <= reach * reach;
}

// Places `collider` given the simulation-space transform of the frame it
// is attached to (`frame` already includes the attachment, e.g. component
// to simulation space, or the joint's model transform mapped into it), and
// the factor `size_scale` by which lengths grow from the attachment's space
// to simulation space (the component's uniform scale in world simulation,
// its inverse for world colliders in component simulation, else 1).
PlacedCollider PlaceCollider(const SpringCollider& collider,
                             const Transform& frame, float size_scale);

// Moves `position` so that a sphere of `bone_radius` around it no longer
// overlaps `collider` (or, for keep_inside spheres, stays inside). Returns
// true when it moved the point.
bool PushOutOfCollider(const PlacedCollider& collider, float bone_radius,
                       Eigen::Vector3f* position);

// The direction in which moving away from `position` leaves (for keep_inside
// spheres: enters) `collider` fastest: away from the closest point of the
// shape's core (sphere centre, capsule axis, box, plane), or along the
// nearest face normal from inside a box. Unit length; a fixed fallback
// direction where it is undefined (a point on a sphere centre or capsule
// axis).
Eigen::Vector3f OutwardDirection(const PlacedCollider& collider,
                                 const Eigen::Vector3f& position);

// How deep a sphere of `bone_radius` at `position` reaches into `collider`
// (> 0 means overlap; <= 0 means clear). Used to decide whether another
// collide/limit/length round is needed.
float PenetrationDepth(const PlacedCollider& collider, float bone_radius,
                       const Eigen::Vector3f& position);

// The per-frame loops over all colliders, here so the shape kernels inline
// into them (these run several hundred times per solve).

// PushOutOfCollider with every collider in turn, skipping those MayTouch
// rules out. Returns true when any of them moved the point.
bool PushOutOfColliders(absl::Span<const PlacedCollider> colliders,
                        float bone_radius, Eigen::Vector3f* position);

// The largest PenetrationDepth minus `slop` over the colliders and, in
// `deepest`, the first collider reaching it (unchanged when there are no
// colliders). With `cull`, colliders MayTouch rules out are skipped: only
// positive results are then exact.
float DeepestPenetration(absl::Span<const PlacedCollider> colliders,
                         float bone_radius, const Eigen::Vector3f& position,
                         float slop, bool cull, int* deepest);

// DeepestPenetration(..., cull = true, ...) > 0, stopping at the first
// overlap.
bool AnyPenetration(absl::Span<const PlacedCollider> colliders,
                    float bone_radius, const Eigen::Vector3f& position,
                    float slop);

// Below this distance a direction is considered undefined and a fixed
// fallback direction is used instead (shared by the scalar kernels and the
// lane kernels of every width).
inline constexpr float kColliderTinyDistance = 1e-12f;

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_DYNAMICS_SPRING_COLLIDERS_H_
