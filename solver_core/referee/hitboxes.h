// Hitboxes bound to joints, and the queries a game server's hit
// registration makes against a posed character: the first hitbox a ray
// meets, and the hitboxes a sphere overlaps.
//
// A hitbox is a sphere, a capsule or an oriented box, placed by an offset
// (translation and rotation) in its joint's frame. Its model-space frame is
// the joint's model transform composed with the offset (Combine, so a
// joint's scale moves the hitbox with the bone); its sizes are model-space
// lengths, never scaled. A capsule is the set of points within `radius` of
// the segment from -half_height to +half_height along its frame's Y axis; a
// box spans +-half_extents along its frame's axes.
//
// The ray and overlap tests are the closed-form ones of Ericson,
// "Real-Time Collision Detection" (docs/REFERENCES.md): a sphere by the
// quadratic, a capsule as the first entry into its cylinder (within the
// segment) or either end sphere, a box by slabs in its own frame. Every
// query is plain float arithmetic in a fixed order, so the same inputs give
// the same bits on every run; ties between hitboxes go to the lower index.
#ifndef POSEWIRE_SOLVER_CORE_REFEREE_HITBOXES_H_
#define POSEWIRE_SOLVER_CORE_REFEREE_HITBOXES_H_

#include <Eigen/Geometry>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"

namespace posewire {

enum class HitboxShape { kSphere, kCapsule, kBox };

struct Hitbox {
  int joint = -1;
  HitboxShape shape = HitboxShape::kSphere;
  // Offset in the joint's frame (translation and rotation; no scale).
  Eigen::Vector3f offset_translation = Eigen::Vector3f::Zero();
  Eigen::Quaternionf offset_rotation = Eigen::Quaternionf::Identity();
  float radius = 0.0f;       // sphere and capsule
  float half_height = 0.0f;  // capsule: half the segment's length
  Eigen::Vector3f half_extents = Eigen::Vector3f::Zero();  // box
};

// Checks every hitbox against `skeleton`: its joint exists, its offset is
// finite with a unit rotation, its sizes are finite and positive (a
// capsule's half_height may be 0: a sphere). Errors name
// "<field>[i].<member>" and the joint.
absl::Status ValidateHitboxes(const Skeleton& skeleton,
                              absl::Span<const Hitbox> hitboxes,
                              absl::string_view field);

// The first hitbox a ray meets.
struct RayHit {
  int hitbox = -1;  // index into the hitboxes; -1 when nothing is hit
  int joint = -1;
  // Along the ray's unit direction from its origin; 0 when the origin is
  // inside the hitbox.
  float distance = 0.0f;
  Eigen::Vector3f point = Eigen::Vector3f::Zero();
  // Unit outward surface normal at `point` (the reversed ray direction
  // when the origin is inside).
  Eigen::Vector3f normal = Eigen::Vector3f::Zero();
};

// Casts one ray, in model space, against a character's hitboxes.
struct RayCastJob {
  const Skeleton* skeleton = nullptr;
  absl::Span<const Hitbox> hitboxes = {};  // as ValidateHitboxes accepts
  // The character's model-space pose (LocalToModelJob's output).
  absl::Span<const Transform> model_pose = {};
  Eigen::Vector3f origin = Eigen::Vector3f::Zero();
  // Any non-zero length; normalised before use.
  Eigen::Vector3f direction = Eigen::Vector3f::UnitZ();
  // Hits farther than this are ignored (> 0, may be infinite).
  float max_distance = std::numeric_limits<float>::infinity();
  RayHit* hit = nullptr;  // required; hitbox -1 when nothing is hit

  // The skeleton, the pose's size and finiteness, the hitboxes, a finite
  // origin, a finite non-zero direction, a positive max_distance.
  absl::Status Validate() const;
  absl::Status Run() const;
};

// The hitboxes a sphere in model space overlaps (touching counts).
struct SphereOverlapJob {
  const Skeleton* skeleton = nullptr;
  absl::Span<const Hitbox> hitboxes = {};
  absl::Span<const Transform> model_pose = {};
  Eigen::Vector3f center = Eigen::Vector3f::Zero();
  float radius = 0.0f;  // >= 0
  // Indices of the overlapped hitboxes, ascending. Required.
  std::vector<int>* overlapped = nullptr;

  absl::Status Validate() const;
  absl::Status Run() const;
};

// Many queries at one pose: the hitboxes placed once (one transform each),
// then rays and spheres tested against the placed set. RayCastJob and
// SphereOverlapJob run the same per-hitbox code, so both ways give the same
// bits.
struct PlacedHitbox {
  Eigen::Vector3f center = Eigen::Vector3f::Zero();
  Eigen::Quaternionf rotation = Eigen::Quaternionf::Identity();
  Eigen::Vector3f axis = Eigen::Vector3f::UnitY();  // the frame's Y axis
};

// The checks both jobs make of their scene: the skeleton is set, the model
// pose has one finite, unit-rotation transform per joint, and the hitboxes
// pass ValidateHitboxes. `job` prefixes the fields ("<job>.model_pose").
absl::Status ValidateHitScene(const Skeleton* skeleton,
                              absl::Span<const Hitbox> hitboxes,
                              absl::Span<const Transform> model_pose,
                              absl::string_view job);

// Places every hitbox at `model_pose` into `placed` (one per hitbox); the
// scene must pass ValidateHitScene.
void PlaceHitboxes(absl::Span<const Hitbox> hitboxes,
                   absl::Span<const Transform> model_pose,
                   absl::Span<PlacedHitbox> placed);

// RayCastJob::Run on placed hitboxes, without its checks: `origin` finite,
// `direction` finite and non-zero (normalised here as the job does),
// `max_distance` > 0.
RayHit FirstRayHit(absl::Span<const Hitbox> hitboxes,
                   absl::Span<const PlacedHitbox> placed,
                   const Eigen::Vector3f& origin,
                   const Eigen::Vector3f& direction, float max_distance);

// A ball around every placed hitbox of one character: the bounding balls
// of its hitboxes, all inside it (radius < 0: no hitbox). A query tests a
// ray against it before the character's hitboxes, so most characters a
// ray passes by cost one test.
struct HitboxBound {
  Eigen::Vector3f center = Eigen::Vector3f::Zero();
  float radius = -1.0f;
};
HitboxBound BoundHitboxes(absl::Span<const Hitbox> hitboxes,
                          absl::Span<const PlacedHitbox> placed);

// Whether the ray from `origin` along `unit_direction` (normalised as
// FirstRayHit does) surely misses `bound`, or enters it only beyond
// `limit`. The test grows the ball by a margin far above its own rounding
// and FirstRayHit's, so skipping a character it clears never changes an
// answer: no hitbox of that character could be hit nearer than `limit`.
bool RaySurelyMissesBound(const HitboxBound& bound,
                          const Eigen::Vector3f& origin,
                          const Eigen::Vector3f& unit_direction, float limit);

// SphereOverlapJob::Run on placed hitboxes, without its checks: appends
// the overlapped hitboxes' indices, ascending, to `overlapped`.
void OverlapSphere(absl::Span<const Hitbox> hitboxes,
                   absl::Span<const PlacedHitbox> placed,
                   const Eigen::Vector3f& center, float radius,
                   std::vector<int>* overlapped);

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_REFEREE_HITBOXES_H_
