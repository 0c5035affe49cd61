// Scalar geometry of the spring-bone solver: the per-bone cone limit and
// length restore, the shortest-arc rotation, and turning a bone stuck in a
// collider out along an arc. The lane kernels (spring_bone_lanes.inc) mirror
// these operation by operation and fall back on them lane by lane for rare
// cases, so both give the same bits.
#ifndef POSEWIRE_SOLVER_CORE_DYNAMICS_INTERNAL_SPRING_GEOMETRY_H_
#define POSEWIRE_SOLVER_CORE_DYNAMICS_INTERNAL_SPRING_GEOMETRY_H_

#include <Eigen/Core>
#include <Eigen/Geometry>
#include <cmath>

#include "absl/base/attributes.h"
#include "absl/types/span.h"
#include "solver_core/dynamics/spring_bones.h"
#include "solver_core/dynamics/spring_colliders.h"

namespace posewire {
namespace spring_internal {

inline constexpr float kPi = 3.14159265358979323846f;
inline constexpr float kDegToRad = kPi / 180.0f;
// Below this length a vector has no usable direction.
inline constexpr float kTinyLength = 1e-12f;
// Regula falsi steps when a bone is turned out of a collider along an arc.
// Each keeps the clear end clear; typically 3 to 5 reach the surface within
// 1e-4 of the bone length.
inline constexpr int kArcSearchSteps = 12;
// Where the closed-form exit (ArcExit) aims: this fraction of the bone
// length beyond the collider's surface, the middle of the band the regula
// falsi accepts (within 1e-4 of the bone length outside), well clear of
// rounding.
inline constexpr float kArcExitMargin = 5e-5f;

// The rotation taking direction `a` to direction `b` by the shortest arc
// (both non-zero): (|a||b| + a.b, a x b) normalised, the half-angle
// quaternion without trigonometry; any axis normal to `a` when they are
// opposite.
Eigen::Quaternionf ShortestArc(const Eigen::Vector3f& a,
                               const Eigen::Vector3f& b);

// True when `bone` lies inside the cone of half-angle limit_angle around
// `pose_bone` (of length `pose_len`), decided without square roots:
// cos(angle) = d / (|pose| |bone|) >= cos_limit, squared with care for
// signs. Most bones are; near the boundary the callers' exact test has the
// last word.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline bool ClearlyInsideCone(
    const SpringParticle& pt, const Eigen::Vector3f& pose_bone, float pose_len,
    const Eigen::Vector3f& bone) {
  const float d = pose_bone.dot(bone);
  const float rhs =
      pt.cos_limit * pt.cos_limit * (pose_len * pose_len) * bone.squaredNorm();
  return pt.cos_limit >= 0.0f ? (d >= 0.0f && d * d > rhs)
                              : (d >= 0.0f || d * d < rhs);
}

// AdjustAngle: turns `bone` back onto the cone of half-angle limit_angle
// around `pose_bone` (of length `pose_len`) when it points outside, keeping
// its length.
// Inlined: a few hundred calls per solve, most taking the early return.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline void LimitAngle(
    const SpringParticle& pt, const Eigen::Vector3f& pose_bone, float pose_len,
    Eigen::Vector3f* bone) {
  if (!(pt.settings.limit_angle_degrees > 0.0f) || !(pose_len > kTinyLength)) {
    return;
  }
  if (ClearlyInsideCone(pt, pose_bone, pose_len, *bone)) return;
  const float len = bone->norm();
  if (!(len > kTinyLength)) return;
  const Eigen::Vector3f pose_dir = pose_bone / pose_len;
  const Eigen::Vector3f dir = *bone / len;
  const float cosine = pose_dir.dot(dir);
  if (cosine >= pt.cos_limit) return;
  // In the plane spanned by the two directions (any plane when they are
  // opposite).
  Eigen::Vector3f perp = dir - pose_dir * cosine;
  const float perp_len = perp.norm();
  perp = perp_len > kTinyLength ? Eigen::Vector3f(perp / perp_len)
                                : pose_dir.unitOrthogonal();
  *bone = (pose_dir * pt.cos_limit + perp * pt.sin_limit) * len;
}

// The per-bone constraint shared by every pass: the angle limit against the
// animated bone direction (AdjustAngle), then the animated length (length
// restore), in one. A bone outside its cone goes straight to the cone's edge
// at the animated length, pose_dir cos_limit + perp sin_limit times
// pose_len, where perp is the bone's unit component normal to pose_dir: the
// point AdjustAngle then length restore reach, without turning the bone at
// its own length first (a square root and a division fewer on the chain
// every later bone waits for). A bone collapsed onto its parent takes the
// animated direction. `pose_len` is pose_bone.norm(), computed once per
// step. The lane form (ConstrainLanes, spring_bone_lanes.inc) performs the
// same operations in the same order.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline Eigen::Vector3f Constrain(
    const SpringParticle& pt, const Eigen::Vector3f& position,
    const Eigen::Vector3f& parent, const Eigen::Vector3f& pose_bone,
    float pose_len) {
  const Eigen::Vector3f bone = position - parent;
  const float len = bone.norm();
  const bool usable = len > kTinyLength;
  const Eigen::Vector3f restored =
      usable ? Eigen::Vector3f(bone * (pose_len / len)) : pose_bone;
  if (!(pt.settings.limit_angle_degrees > 0.0f) || !(pose_len > kTinyLength) ||
      !usable) {
    return parent + restored;
  }
  if (ClearlyInsideCone(pt, pose_bone, pose_len, bone)) {
    return parent + restored;
  }
  const Eigen::Vector3f pose_dir = pose_bone / pose_len;
  const float c = pose_dir.dot(bone);  // |bone| cos(angle)
  if (c >= pt.cos_limit * len) return parent + restored;
  const Eigen::Vector3f perp = bone - pose_dir * c;
  const float perp_len = perp.norm();
  if (!(perp_len > kTinyLength)) {
    // Bone and pose exactly opposite: any plane will do.
    return parent + (pose_dir * pt.cos_limit +
                     pose_dir.unitOrthogonal() * pt.sin_limit) *
                        pose_len;
  }
  return parent + (pose_dir * (pt.cos_limit * pose_len) +
                   perp * (pt.sin_limit * pose_len / perp_len));
}

// The arc search's parameter. A point of the arc from unit direction `a`
// toward `b` (angle theta between them) is written with u = tan(phi / 4)
// instead of phi itself: cos phi and sin phi are then rational in u (one
// division, no trigonometry, the same bits on every CPU), and u runs over
// [0, tan(theta / 4)], at most [0, 1], nearly in proportion to phi (the
// ratio of the end slopes is 1 + u^2 <= 2), so the regula falsi on u behaves
// as it did on phi.
//
// tan(theta / 4) from sin theta (>= 0) and cos theta: tan(theta / 2) / (1 +
// sec(theta / 2)) = s / ((1 + c) + sqrt(2 (1 + c))); 1 for a half turn.
inline float TanQuarterAngle(float sin_theta, float cos_theta) {
  const float one_plus_cos = 1.0f + cos_theta;
  if (!(one_plus_cos > 1e-12f)) return 1.0f;
  return sin_theta / (one_plus_cos + std::sqrt(2.0f * one_plus_cos));
}

// TurnOutAlongArc (below) for one bone: the same search, with scalar
// arithmetic. Cheaper than four lanes when only one bone of a group is
// stuck, the common case; the two give the same bits (a chain solved alone
// takes this path where the same chain solved with others shares the
// lanes, and spring_bones_test compares the two).
Eigen::Vector3f TurnOutAlongArcScalar(
    const SpringParticle& pt, Eigen::Vector3f p, const Eigen::Vector3f& parent,
    const Eigen::Vector3f& pose_bone, float pose_len, float f_lo, int deepest,
    absl::Span<const PlacedCollider> colliders);

}  // namespace spring_internal
}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_DYNAMICS_INTERNAL_SPRING_GEOMETRY_H_
