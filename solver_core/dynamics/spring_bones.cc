#include "solver_core/dynamics/spring_bones.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>

#include "absl/base/attributes.h"
#include "absl/strings/str_cat.h"
#include "solver_core/dynamics/internal/spring_collider_lanes.h"
#include "solver_core/model/deterministic_math.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/quaternion_math.h"
#include "solver_core/model/simd_level.h"

#if POSEWIRE_AVX2_KERNELS
#include <immintrin.h>
#endif

namespace posewire {
namespace {

constexpr float kPi = 3.14159265358979323846f;
constexpr float kDegToRad = kPi / 180.0f;
// Below this length a vector has no usable direction.
constexpr float kTinyLength = 1e-12f;
// Accumulated time within this fraction of a step of a whole number of steps
// counts as that many steps, so 24 frames of 1/144 s make exactly 10 steps
// of 1/60 s despite float rounding.
constexpr float kStepSnap = 1e-3f;
// Regula falsi steps when a bone is turned out of a collider along an arc.
// Each keeps the clear end clear; typically 3 to 5 reach the surface within
// 1e-4 of the bone length.
constexpr int kArcSearchSteps = 12;
// Where the closed-form exit (ArcExit) aims: this fraction of the bone
// length beyond the collider's surface, the middle of the band the regula
// falsi accepts (within 1e-4 of the bone length outside), well clear of
// rounding.
constexpr float kArcExitMargin = 5e-5f;

// ---------------------------------------------------------------------------
// Rig construction helpers.

uint64_t Fnv1a(uint64_t hash, uint64_t value) {
  for (int i = 0; i < 8; ++i) {
    hash ^= (value >> (8 * i)) & 0xff;
    hash *= 1099511628211ull;
  }
  return hash;
}

absl::Status CheckRange(float value, float lo, float hi,
                        absl::string_view field) {
  if (!std::isfinite(value) || value < lo || value > hi) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spring_rig.", field, ": ", value, " is outside [", lo, ", ", hi, "]"));
  }
  return absl::OkStatus();
}

absl::Status CheckFinite(float value, absl::string_view field) {
  if (!std::isfinite(value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("spring_rig.", field, ": NaN or infinite"));
  }
  return absl::OkStatus();
}

absl::Status ValidateCurve(const SpringCurve& curve, absl::string_view name) {
  for (size_t k = 0; k < curve.size(); ++k) {
    const SpringCurveKey& key = curve[k];
    if (!std::isfinite(key.position) || !std::isfinite(key.value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("spring_rig.curves.", name, "[", k,
                       "]: NaN or infinite position or value"));
    }
    if (key.value < 0.0f) {
      return absl::InvalidArgumentError(
          absl::StrCat("spring_rig.curves.", name, "[", k, "]: value ",
                       key.value, " is negative"));
    }
    if (k > 0 && !(key.position > curve[k - 1].position)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "spring_rig.curves.", name, "[", k, "]: position ", key.position,
          " does not increase (previous key at ", curve[k - 1].position, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateDesc(const SpringRigDesc& d) {
  const SpringBoneSettings& s = d.settings;
  for (auto [value, name] :
       {std::pair<float, const char*>{s.damping, "damping"},
        {s.stiffness, "stiffness"},
        {s.world_damping_location, "world_damping_location"},
        {s.world_damping_rotation, "world_damping_rotation"}}) {
    if (absl::Status st =
            CheckRange(value, 0.0f, 1.0f, absl::StrCat("settings.", name));
        !st.ok()) {
      return st;
    }
  }
  if (absl::Status st = CheckRange(s.radius, 0.0f, 3.4e38f, "settings.radius");
      !st.ok()) {
    return st;
  }
  if (absl::Status st = CheckRange(s.limit_angle_degrees, 0.0f, 180.0f,
                                   "settings.limit_angle_degrees");
      !st.ok()) {
    return st;
  }
  const SpringSettingCurves& c = d.curves;
  for (auto [curve, name] :
       {std::pair<const SpringCurve*, const char*>{&c.damping, "damping"},
        {&c.stiffness, "stiffness"},
        {&c.world_damping_location, "world_damping_location"},
        {&c.world_damping_rotation, "world_damping_rotation"},
        {&c.radius, "radius"},
        {&c.limit_angle, "limit_angle"}}) {
    if (absl::Status st = ValidateCurve(*curve, name); !st.ok()) return st;
  }
  if (absl::Status st =
          CheckRange(d.dummy_tip_length, 0.0f, 3.4e38f, "dummy_tip_length");
      !st.ok()) {
    return st;
  }
  if (static_cast<int>(d.tip_axis) < 0 ||
      d.tip_axis > SpringTipAxis::kAlongBone) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spring_rig.tip_axis: unknown value ", static_cast<int>(d.tip_axis)));
  }
  if (d.space != SimulationSpace::kComponent &&
      d.space != SimulationSpace::kWorld) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spring_rig.space: unknown value ", static_cast<int>(d.space)));
  }
  if (absl::Status st =
          CheckRange(d.target_rate_hz, 1.0f, 1000.0f, "target_rate_hz");
      !st.ok()) {
    return st;
  }
  if (d.max_substeps < 1 || d.max_substeps > 64) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spring_rig.max_substeps: ", d.max_substeps, " is outside [1, 64]"));
  }
  if (absl::Status st = CheckFinite(d.teleport_distance, "teleport_distance");
      !st.ok()) {
    return st;
  }
  if (absl::Status st =
          CheckFinite(d.teleport_rotation_degrees, "teleport_rotation_degrees");
      !st.ok()) {
    return st;
  }
  if (d.teleport_response != TeleportResponse::kIgnoreMotion &&
      d.teleport_response != TeleportResponse::kReset) {
    return absl::InvalidArgumentError(
        absl::StrCat("spring_rig.teleport_response: unknown value ",
                     static_cast<int>(d.teleport_response)));
  }
  if (d.root_joints.empty()) {
    return absl::InvalidArgumentError(
        "spring_rig.root_joints: no root joint given");
  }
  return absl::OkStatus();
}

Eigen::Vector3f AxisVector(SpringTipAxis axis) {
  switch (axis) {
    case SpringTipAxis::kXPositive:
      return Eigen::Vector3f::UnitX();
    case SpringTipAxis::kXNegative:
      return -Eigen::Vector3f::UnitX();
    case SpringTipAxis::kYPositive:
      return Eigen::Vector3f::UnitY();
    case SpringTipAxis::kYNegative:
      return -Eigen::Vector3f::UnitY();
    case SpringTipAxis::kZPositive:
      return Eigen::Vector3f::UnitZ();
    case SpringTipAxis::kZNegative:
      return -Eigen::Vector3f::UnitZ();
    case SpringTipAxis::kAlongBone:
      break;
  }
  return Eigen::Vector3f::Zero();
}

SpringBoneSettings ResolveSettings(const SpringRigDesc& d, float rate) {
  const SpringBoneSettings& b = d.settings;
  const SpringSettingCurves& c = d.curves;
  SpringBoneSettings s;
  s.damping =
      std::clamp(b.damping * EvaluateSpringCurve(c.damping, rate), 0.0f, 1.0f);
  s.stiffness = std::clamp(b.stiffness * EvaluateSpringCurve(c.stiffness, rate),
                           0.0f, 1.0f);
  s.world_damping_location =
      std::clamp(b.world_damping_location *
                     EvaluateSpringCurve(c.world_damping_location, rate),
                 0.0f, 1.0f);
  s.world_damping_rotation =
      std::clamp(b.world_damping_rotation *
                     EvaluateSpringCurve(c.world_damping_rotation, rate),
                 0.0f, 1.0f);
  s.radius = std::max(b.radius * EvaluateSpringCurve(c.radius, rate), 0.0f);
  s.limit_angle_degrees = std::clamp(
      b.limit_angle_degrees * EvaluateSpringCurve(c.limit_angle, rate), 0.0f,
      180.0f);
  return s;
}

// ---------------------------------------------------------------------------
// Deterministic wind noise: smooth value noise on an integer lattice whose
// values come from a stateless hash of (seed, chain, cell).

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

float LatticeValue(uint64_t seed, int chain, int64_t cell) {
  const uint64_t h = SplitMix64(
      seed ^ SplitMix64(static_cast<uint64_t>(chain) * 0x632be59bd9b4e019ull ^
                        SplitMix64(static_cast<uint64_t>(cell))));
  // Top 24 bits: exactly representable in a float.
  return static_cast<float>(h >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

float ValueNoise(uint64_t seed, int chain, double x) {
  // Bounded so the cell index fits in 64 bits however long a session runs.
  x = std::fmod(x, 4294967296.0);
  const double cell = std::floor(x);
  const float t = static_cast<float>(x - cell);
  const float smooth = t * t * (3.0f - 2.0f * t);
  const int64_t i = static_cast<int64_t>(cell);
  const float a = LatticeValue(seed, chain, i);
  const float b = LatticeValue(seed, chain, i + 1);
  return a + (b - a) * smooth;
}

// ---------------------------------------------------------------------------
// Small transform helpers.

Transform Interpolate(const Transform& a, const Transform& b, float alpha) {
  Transform out;
  out.translation = a.translation + (b.translation - a.translation) * alpha;
  out.rotation = Slerp(a.rotation, b.rotation, alpha);
  out.scale = a.scale + (b.scale - a.scale) * alpha;
  return out;
}

// World vector -> component vector (KawaiiPhysics' InverseTransformVector).
Eigen::Vector3f WorldToComponentVector(const Transform& c,
                                       const Eigen::Vector3f& v) {
  return (c.rotation.conjugate() * v) / c.scale.x();
}

// The inverse of a transform with uniform scale.
Transform Inverse(const Transform& c) {
  Transform out;
  out.rotation = c.rotation.conjugate();
  out.scale = Eigen::Vector3f::Constant(1.0f / c.scale.x());
  out.translation = -(out.rotation * c.translation) / c.scale.x();
  return out;
}

Transform Rigid(const Transform& t) {
  Transform out;
  out.translation = t.translation;
  out.rotation = t.rotation;
  return out;
}

// The rotation taking direction `a` to direction `b` by the shortest arc
// (both non-zero): (|a||b| + a.b, a x b) normalised, the half-angle
// quaternion without trigonometry; any axis normal to `a` when they are
// opposite.
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

// ---------------------------------------------------------------------------
// Per-bone constraints.

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

// TurnOutAlongArc (below) for one bone: the same search, with scalar
// arithmetic. Cheaper than four lanes when only one bone of a group is
// stuck, the common case; the two give the same bits (a chain solved alone
// takes this path where the same chain solved with others shares the
// lanes, and spring_bones_test compares the two).
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

}  // namespace

// Particles in groups of W lanes (W = 4 for SSE2, 8 for AVX2), level by
// level: a group holds particles of one depth (chain roots are depth 0), so
// each group depends only on groups before it, whose positions are final
// when it runs, as in the scalar loop's parents-first order. Lanes therefore
// change no result, nor does the width. Padding lanes (a level whose size is
// not a multiple of W) repeat the group's first particle: they compute
// harmless copies and are never written back.
template <int W>
struct SpringLaneGroup {
  int particle[W];
  // Slot (W * group + lane) of each lane's parent; -1 for chain roots.
  int parent_slot[W];
  // The group whose lanes 0..W-1 are the parents, in order, or -1 when the
  // parents must be gathered slot by slot.
  int parent_group = -1;
  int chain[W];
  // Bits of the lanes holding a particle of their own.
  int real = 0;
  // The per-step factors of SpringParticle, one lane each.
  lanes::Block1T<W> velocity_keep, stiffness_pull, keep_location, keep_rotation,
      radius, cos_limit, sin_limit;
  // 1 where the bone has an angle limit (limit_angle_degrees > 0), else 0.
  lanes::Block1T<W> limited;
  // For the output in lanes (SpringLaneLayoutW::lane_output): the group
  // whose lane k holds lane k's only child, or -1 when the lanes have no
  // children; whether the lanes are joints (not dummy tips); each lane's
  // joint and, for chain roots, its skeleton parent (-1 at the skeleton
  // root).
  int child_group = -1;
  bool joints = false;
  int joint[W];
  int parent_joint[W];
};

// The joints whose output rotation turns toward their only simulated child,
// W at a time (any order: each is independent).
template <int W>
struct SpringLaneArcGroup {
  int particle[W];
  int joint[W];
  int child[W];
  int real = 0;
};

// Every simulated joint, W at a time, for its local output rotation.
template <int W>
struct SpringLaneOutputGroup {
  int particle[W];
  int joint[W];
  // The parent joint (-1 at the skeleton root) and its particle (-1 when it
  // is not simulated).
  int parent_joint[W];
  int parent_particle[W];
  int real = 0;
};

template <int W>
struct SpringLaneLayoutW {
  std::vector<SpringLaneGroup<W>> groups;
  // Groups [0, first_bone_group) hold the chain roots, pinned to the pose.
  int first_bone_group = 0;
  // Every group's lanes have one child each in the same lanes of one group
  // (or none), are all joints or all dummy tips, and read their parents
  // from one group in order (chains of one shape, the usual hair or skirt):
  // the output rotations can then be worked out group by group from the
  // lanes, with no gathering (Engine::ApplyInLanes). Otherwise they go by
  // arc_groups and output_groups.
  bool lane_output = false;
  std::vector<SpringLaneArcGroup<W>> arc_groups;
  std::vector<SpringLaneOutputGroup<W>> output_groups;
};

// Both widths, built once per rig: the solve picks one (same bits).
struct SpringLaneLayout {
  SpringLaneLayoutW<lanes::kWidth> narrow;
  SpringLaneLayoutW<kSpringWideLanes> wide;
  // An eight-lane group does the work of two four-lane ones in about the
  // same instructions, but a level's groups are also the independent work
  // the core overlaps, and padding lanes cost as much as real ones. Eight
  // lanes pay when they add little padding (at most 10% more lane slots
  // than four-lane groups) and a level holds 8 or more particles on
  // average. Measured (time per frame at 8 lanes / at 4, chains of 8
  // bones, 4 colliders, walking; docs/PERFORMANCE.md): 4 chains 1.30, 6
  // chains 1.05, 7 chains 1.02, 8 chains 0.92 (standing 0.86, world space
  // 1.00), 10 chains 1.06, 12 chains 1.08, 14 chains 0.85, 16 chains 0.75,
  // 20 chains 1.06, 24 chains 0.80.
  bool prefer_wide = false;
};

namespace {

// Packs `indices` W to a group, padding the last group with its first
// index; fill(group, lane, index) sets up each lane.
template <int W, typename Group, typename Fill>
void PackLanes(const std::vector<int>& indices, std::vector<Group>* groups,
               Fill fill) {
  for (size_t first = 0; first < indices.size(); first += W) {
    Group g;
    for (int k = 0; k < W; ++k) {
      const bool real = first + k < indices.size();
      if (real) g.real |= 1 << k;
      fill(g, k, indices[real ? first + k : first]);
    }
    groups->push_back(g);
  }
}

// The particles by depth, W to a group, with their settings and where
// their parents are.
template <int W>
void BuildParticleGroups(absl::Span<const SpringParticle> particles,
                         SpringLaneLayoutW<W>* layout) {
  const int n = static_cast<int>(particles.size());
  // Parents come before children in particle order.
  std::vector<int> depth(n, 0);
  int max_depth = -1;
  for (int i = 0; i < n; ++i) {
    const int p = particles[i].parent;
    depth[i] = p < 0 ? 0 : depth[p] + 1;
    max_depth = std::max(max_depth, depth[i]);
  }
  std::vector<std::vector<int>> levels(max_depth + 1);
  for (int i = 0; i < n; ++i) levels[depth[i]].push_back(i);

  std::vector<int> slot_of(n, -1);
  for (int d = 0; d <= max_depth; ++d) {
    PackLanes<W>(
        levels[d], &layout->groups, [&](SpringLaneGroup<W>& g, int k, int i) {
          const SpringParticle& pt = particles[i];
          if ((g.real >> k) & 1) {
            slot_of[i] = W * static_cast<int>(layout->groups.size()) + k;
          }
          g.particle[k] = i;
          g.chain[k] = pt.chain;
          g.velocity_keep.v[k] = pt.velocity_keep;
          g.stiffness_pull.v[k] = pt.stiffness_pull;
          g.keep_location.v[k] = 1.0f - pt.settings.world_damping_location;
          g.keep_rotation.v[k] = 1.0f - pt.settings.world_damping_rotation;
          g.radius.v[k] = pt.settings.radius;
          g.cos_limit.v[k] = pt.cos_limit;
          g.sin_limit.v[k] = pt.sin_limit;
          g.limited.v[k] = pt.settings.limit_angle_degrees > 0.0f ? 1.0f : 0.0f;
        });
    if (d == 0) {
      layout->first_bone_group = static_cast<int>(layout->groups.size());
    }
  }
  for (SpringLaneGroup<W>& g : layout->groups) {
    bool in_order = true;
    for (int k = 0; k < W; ++k) {
      const int parent = particles[g.particle[k]].parent;
      g.parent_slot[k] = parent < 0 ? -1 : slot_of[parent];
      in_order =
          in_order && g.parent_slot[k] >= 0 &&
          g.parent_slot[k] == g.parent_slot[0] - g.parent_slot[0] % W + k;
    }
    g.parent_group = in_order ? g.parent_slot[0] / W : -1;
  }
}

// The deepest level (chain roots are 0), -1 without particles.
int MaxDepth(absl::Span<const SpringParticle> particles) {
  std::vector<int> depth(particles.size(), 0);
  int max_depth = -1;
  for (size_t i = 0; i < particles.size(); ++i) {
    const int p = particles[i].parent;
    depth[i] = p < 0 ? 0 : depth[p] + 1;
    max_depth = std::max(max_depth, depth[i]);
  }
  return max_depth;
}

// Fills the groups' output fields and decides SpringLaneLayoutW::lane_output.
template <int W>
void FindLaneOutput(absl::Span<const SpringParticle> particles,
                    absl::Span<const int> skeleton_parents,
                    absl::Span<const int> particle_of_joint,
                    SpringLaneLayoutW<W>* layout) {
  std::vector<int> slot_of(particles.size(), -1);
  for (size_t g = 0; g < layout->groups.size(); ++g) {
    const SpringLaneGroup<W>& group = layout->groups[g];
    for (int k = 0; k < W; ++k) {
      if ((group.real >> k) & 1) {
        slot_of[group.particle[k]] = W * static_cast<int>(g) + k;
      }
    }
  }
  bool aligned = true;
  for (size_t g = 0; g < layout->groups.size(); ++g) {
    SpringLaneGroup<W>& group = layout->groups[g];
    const SpringParticle& first = particles[group.particle[0]];
    const int child_slot =
        first.num_children == 1 ? slot_of[first.first_child] : -1;
    group.child_group = child_slot >= 0 ? child_slot / W : -1;
    group.joints = first.joint >= 0;
    const bool root = static_cast<int>(g) < layout->first_bone_group;
    aligned = aligned && (root || group.parent_group >= 0);
    for (int k = 0; k < W; ++k) {
      const SpringParticle& pt = particles[group.particle[k]];
      group.joint[k] = pt.joint;
      group.parent_joint[k] = pt.joint >= 0 ? skeleton_parents[pt.joint] : -1;
      // A chain root's parent is never simulated (chains do not nest);
      // checked all the same, as the lanes would not see it turn.
      if (root && group.parent_joint[k] >= 0) {
        aligned = aligned && particle_of_joint[group.parent_joint[k]] < 0;
      }
      aligned = aligned && (pt.joint >= 0) == group.joints &&
                pt.num_children == first.num_children;
      if (((group.real >> k) & 1) && first.num_children == 1) {
        aligned = aligned && slot_of[pt.first_child] == child_slot + k;
      }
    }
    if (first.num_children > 1) aligned = false;
    if (group.child_group >= 0) {
      aligned = aligned && child_slot % W == 0 &&
                layout->groups[group.child_group].real == group.real;
    }
  }
  layout->lane_output = aligned;
}

template <int W>
void BuildLaneLayoutW(absl::Span<const SpringParticle> particles,
                      absl::Span<const int> skeleton_parents,
                      absl::Span<const int> particle_of_joint,
                      SpringLaneLayoutW<W>* layout) {
  BuildParticleGroups(particles, layout);
  FindLaneOutput(particles, skeleton_parents, particle_of_joint, layout);
  std::vector<int> arcs;
  std::vector<int> joints;
  for (int i = 0; i < static_cast<int>(particles.size()); ++i) {
    if (particles[i].joint < 0) continue;
    joints.push_back(i);
    if (particles[i].num_children == 1) arcs.push_back(i);
  }
  PackLanes<W>(arcs, &layout->arc_groups,
               [&](SpringLaneArcGroup<W>& g, int k, int i) {
                 g.particle[k] = i;
                 g.joint[k] = particles[i].joint;
                 g.child[k] = particles[i].first_child;
               });
  PackLanes<W>(
      joints, &layout->output_groups,
      [&](SpringLaneOutputGroup<W>& g, int k, int i) {
        g.particle[k] = i;
        g.joint[k] = particles[i].joint;
        g.parent_joint[k] = skeleton_parents[g.joint[k]];
        g.parent_particle[k] =
            g.parent_joint[k] < 0 ? -1 : particle_of_joint[g.parent_joint[k]];
      });
}

std::shared_ptr<const SpringLaneLayout> BuildLaneLayout(
    absl::Span<const SpringParticle> particles,
    absl::Span<const int> skeleton_parents,
    absl::Span<const int> particle_of_joint) {
  auto layout = std::make_shared<SpringLaneLayout>();
  BuildLaneLayoutW(particles, skeleton_parents, particle_of_joint,
                   &layout->narrow);
  BuildLaneLayoutW(particles, skeleton_parents, particle_of_joint,
                   &layout->wide);
  // Groups hold one level each, so the slots count each level's padding.
  const size_t levels = static_cast<size_t>(1 + MaxDepth(particles));
  const size_t wide_slots = kSpringWideLanes * layout->wide.groups.size();
  const size_t narrow_slots = lanes::kWidth * layout->narrow.groups.size();
  layout->prefer_wide = !particles.empty() &&
                        10 * wide_slots <= 11 * narrow_slots &&
                        particles.size() >= kSpringWideLanes * levels;
  return layout;
}

template <int W>
using LaneLayoutT = SpringLaneLayoutW<W>;
template <int W>
using LaneGroup = SpringLaneGroup<W>;
template <int W>
using LaneArcGroup = SpringLaneArcGroup<W>;
template <int W>
using LaneOutputGroup = SpringLaneOutputGroup<W>;

// One fixed step's inputs besides the state, in simulation space: the
// scalar part of the step, computed once and broadcast to the lanes.
struct StepInputs {
  // The animated target positions of the particles at this step.
  const std::vector<Eigen::Vector3f>* pose = nullptr;
  // UpdateMovement (component space only): the component's translation and
  // turn in this step, seen from its new placement.
  bool follow = false;
  Eigen::Vector3f move = Eigen::Vector3f::Zero();
  Eigen::Matrix3f turn = Eigen::Matrix3f::Identity();
  // Gravity and the external force, as a displacement per step.
  Eigen::Vector3f constant_step = Eigen::Vector3f::Zero();
  bool windy = false;
  Eigen::Vector3f wind_step = Eigen::Vector3f::Zero();
};

// The lane work of a solve, at one width (Engine in spring_bone_lanes.inc).
// Virtual: the solve picks the width once; a handful of calls per frame.
class LaneEngine {
 public:
  virtual ~LaneEngine() = default;
  // The state's positions into the lanes, and back.
  virtual void Load(const DynamicsState& s) = 0;
  virtual void Store(DynamicsState& s) = 0;
  // UpdatePose, the constraints and the colliders of one fixed step.
  virtual void Step(const StepInputs& in) = 0;
  // The output rotations (scratch rotated cleared, output holding the
  // input). `landed_on_frame`: the state's last step used this
  // frame's pose.
  virtual void Apply(const DynamicsState& s, bool landed_on_frame) = 0;
};

// The four-lane (SSE2, or portable) engine: always available.
namespace narrow {
namespace L = ::posewire::lanes;
// The collider kernels again (the public ones of spring_colliders.h are the
// same source, so the same bits): here they inline into the engine.
#include "solver_core/dynamics/internal/spring_collider_lanes.inc"
namespace K = narrow;
#include "solver_core/dynamics/internal/spring_bone_lanes.inc"
}  // namespace narrow

}  // namespace
}  // namespace posewire

#if POSEWIRE_AVX2_KERNELS
// The eight-lane engine and collider kernels, compiled for AVX2 (no FMA)
// from the same sources; used only when ActiveSimdLevel() is kAvx2. Every
// header is included above, so nothing else picks up the AVX2 target.
POSEWIRE_AVX2_REGION_BEGIN
namespace posewire {
namespace {
namespace wide {
#include "solver_core/dynamics/internal/spring_lanes_avx2.inc"
namespace L = lanes_avx2;
static_assert(L::kWidth == kSpringWideLanes);
#include "solver_core/dynamics/internal/spring_collider_lanes.inc"
namespace K = wide;
#include "solver_core/dynamics/internal/spring_bone_lanes.inc"
}  // namespace wide
}  // namespace
}  // namespace posewire
POSEWIRE_AVX2_REGION_END
#endif  // POSEWIRE_AVX2_KERNELS

namespace posewire {
namespace {

// ---------------------------------------------------------------------------
// One solve. Holds references to the job's data; all state lives in the
// DynamicsState it is given. The lane work goes to a LaneEngine.
class Solver {
 public:
  Solver(const SpringBonesJob& job, SpringBonesScratch& scratch)
      : job_(job),
        rig_(*job.rig),
        desc_(job.rig->desc()),
        particles_(job.rig->particles()),
        world_(job.rig->desc().space == SimulationSpace::kWorld),
        component_(job.component_to_world),
        sc_(scratch) {}

  // Everything before the steps: the animated pose, the state (`initialize`:
  // start from the pose whatever `s` holds, else handle a teleport) and the
  // colliders.
  void Prepare(bool initialize, DynamicsState& s, SpringBonesReport& report);
  // The fixed steps and the output pose, the lane work done by `engine`.
  void Simulate(LaneEngine& engine, DynamicsState& s,
                SpringBonesReport& report);

 private:
  void ComputeAnimatedPose();
  Eigen::Vector3f ToSim(const Eigen::Vector3f& p_cs,
                        const Transform& component) const {
    return world_ ? component.TransformPoint(p_cs) : p_cs;
  }
  void Initialize(DynamicsState& s) const;
  // Returns the component transform the frame's motion starts from.
  Transform HandleTeleport(DynamicsState& s, SpringBonesReport& report) const;
  void PlaceColliders();
  void Step(LaneEngine& engine, DynamicsState& s, const Transform& from,
            const Transform& to, float alpha);
  // `landed_on_frame`: the state's last step used this frame's pose.
  void ApplyToPose(LaneEngine& engine, const DynamicsState& s,
                   bool landed_on_frame);

  const SpringBonesJob& job_;
  const SpringRig& rig_;
  const SpringRigDesc& desc_;
  absl::Span<const SpringParticle> particles_;
  const bool world_;
  const Transform& component_;
  SpringBonesScratch& sc_;
  // Where this frame's motion starts (set by Prepare).
  Transform from_;
};

void Solver::ComputeAnimatedPose() {
  const Skeleton& skel = *job_.skeleton;
  sc_.model.resize(skel.num_joints());
  LocalToModelJob{.skeleton = &skel,
                  .input = job_.input,
                  .output = absl::MakeSpan(sc_.model)}
      .RunUnchecked();
  const int n = rig_.num_particles();
  sc_.pose_cs.resize(n);
  for (int i = 0; i < n; ++i) {
    const SpringParticle& pt = particles_[i];
    if (pt.joint >= 0) {
      sc_.pose_cs[i] = sc_.model[pt.joint].translation;
    } else {
      // Dummy tip: rotation only, like KawaiiPhysics' GetBoneForwardVector.
      const Transform& leaf = sc_.model[particles_[pt.parent].joint];
      sc_.pose_cs[i] = leaf.translation + leaf.rotation * pt.tip_direction *
                                              desc_.dummy_tip_length;
    }
  }
}

void Solver::Initialize(DynamicsState& s) const {
  const int n = rig_.num_particles();
  s.rig_fingerprint = rig_.fingerprint();
  s.space = desc_.space;
  s.step_count = 0;
  s.leftover_time = 0.0f;
  s.previous_component = component_;
  s.positions.resize(n);
  s.previous_positions.resize(n);
  s.previous_pose_positions.resize(n);
  for (int i = 0; i < n; ++i) {
    s.positions[i] = ToSim(sc_.pose_cs[i], component_);
    s.previous_positions[i] = s.positions[i];
    s.previous_pose_positions[i] = sc_.pose_cs[i];
  }
}

Transform Solver::HandleTeleport(DynamicsState& s,
                                 SpringBonesReport& report) const {
  const Transform& prev = s.previous_component;
  const Transform& cur = component_;
  if (prev == cur) return prev;
  // UpdateMovement: the previous component origin seen from the current
  // component, and the rotation between the two.
  const Eigen::Vector3f move = cur.InverseTransformPoint(prev.translation);
  const Eigen::Quaternionf turn = cur.rotation.conjugate() * prev.rotation;
  const float angle_degrees =
      2.0f * std::atan2(turn.vec().norm(), std::fabs(turn.w())) / kDegToRad;
  const bool far =
      desc_.teleport_distance >= 0.0f &&
      move.squaredNorm() > desc_.teleport_distance * desc_.teleport_distance;
  const bool turned = desc_.teleport_rotation_degrees >= 0.0f &&
                      angle_degrees > desc_.teleport_rotation_degrees;
  if (!far && !turned) return prev;
  report.teleported = true;
  if (desc_.teleport_response == TeleportResponse::kReset) {
    Initialize(s);
    report.initialized = true;
    return cur;
  }
  if (world_) {
    // Carry the chain rigidly with the component's jump: no whip.
    for (std::vector<Eigen::Vector3f>* array :
         {&s.positions, &s.previous_positions}) {
      for (Eigen::Vector3f& p : *array) {
        p = cur.TransformPoint(prev.InverseTransformPoint(p));
      }
    }
    s.previous_component = cur;
    return cur;
  }
  // Component space: drop the part of the motion that crossed a threshold,
  // as KawaiiPhysics zeroes SkelCompMoveVector / SkelCompMoveRotation.
  Transform from = prev;
  if (far) from.translation = cur.translation;
  if (turned) from.rotation = cur.rotation;
  s.previous_component = from;
  return from;
}

void Solver::PlaceColliders() {
  sc_.colliders.clear();
  const float scale = component_.scale.x();
  for (const SpringCollider& c : job_.colliders) {
    Transform frame;
    float size = 1.0f;
    switch (c.attachment) {
      case ColliderAttachment::kComponent:
        if (world_) {
          frame = component_;
          size = scale;
        }
        break;
      case ColliderAttachment::kWorld:
        if (!world_) {
          frame = Inverse(component_);
          size = 1.0f / scale;
        }
        break;
      case ColliderAttachment::kBone:
        frame = Rigid(sc_.model[c.bone]);
        if (world_) {
          frame = Combine(component_, frame);
          size = scale;
        }
        break;
    }
    sc_.colliders.push_back(PlaceCollider(c, frame, size));
  }
  sc_.lane_colliders.clear();
  for (const PlacedCollider& c : sc_.colliders) {
    sc_.lane_colliders.push_back(SplatCollider(c));
  }
}

void Solver::Step(LaneEngine& engine, DynamicsState& s, const Transform& from,
                  const Transform& to, float alpha) {
  const int n = rig_.num_particles();
  const float h = rig_.step_seconds();

  // The animated target at this step's time: this frame's pose itself when
  // the step lands on the frame in component space (the common case).
  const bool frame_pose = alpha == 1.0f && !world_;
  if (!frame_pose) {
    sc_.step_pose.resize(n);
    for (int i = 0; i < n; ++i) {
      const Eigen::Vector3f& a = s.previous_pose_positions[i];
      const Eigen::Vector3f p_cs =
          alpha == 1.0f ? sc_.pose_cs[i]
                        : Eigen::Vector3f(a + (sc_.pose_cs[i] - a) * alpha);
      sc_.step_pose[i] = ToSim(p_cs, to);
    }
  }

  // UpdateMovement for this step (component space only).
  const bool follow = !world_ && !(from == to);
  Eigen::Vector3f move = Eigen::Vector3f::Zero();
  Eigen::Matrix3f turn = Eigen::Matrix3f::Identity();
  if (follow) {
    move = to.InverseTransformPoint(from.translation);
    turn = (to.rotation.conjugate() * from.rotation).toRotationMatrix();
  }

  // Forces in simulation space, as per-step displacements.
  const SpringForces& f = job_.forces;
  const Eigen::Vector3f gravity =
      world_ ? f.gravity : WorldToComponentVector(to, f.gravity);
  Eigen::Vector3f external = f.external_force;
  if (world_ && f.external_force_space == ForceSpace::kComponent) {
    external = to.TransformVector(external);
  } else if (!world_ && f.external_force_space == ForceSpace::kWorld) {
    external = WorldToComponentVector(to, external);
  }
  const Eigen::Vector3f constant_step = gravity * (0.5f * h * h) + external * h;
  Eigen::Vector3f wind_step = Eigen::Vector3f::Zero();
  const bool windy = f.wind.speed != 0.0f;
  if (windy) {
    const Eigen::Vector3f dir = f.wind.direction.normalized() * f.wind.speed;
    wind_step = (world_ ? dir : WorldToComponentVector(to, dir)) * h;
    sc_.gusts.assign(rig_.num_chains(), 1.0f);
    if (f.wind.noise_amplitude > 0.0f) {
      const double x = static_cast<double>(s.step_count) *
                       static_cast<double>(h) *
                       static_cast<double>(f.wind.noise_frequency_hz);
      for (int c = 0; c < rig_.num_chains(); ++c) {
        sc_.gusts[c] =
            1.0f + f.wind.noise_amplitude * ValueNoise(f.wind.noise_seed, c, x);
      }
    }
  }

  StepInputs in;
  in.pose = frame_pose ? &sc_.pose_cs : &sc_.step_pose;
  in.follow = follow;
  in.move = move;
  in.turn = turn;
  in.constant_step = constant_step;
  in.windy = windy;
  in.wind_step = wind_step;
  engine.Step(in);
  ++s.step_count;
}

void Solver::ApplyToPose(LaneEngine& engine, const DynamicsState& s,
                         bool landed_on_frame) {
  if (job_.output.data() != job_.input.data() && !job_.input.empty()) {
    // Bytes: Eigen's element-wise assignment is several times slower, and
    // Validate ruled out a partial overlap.
    std::memcpy(static_cast<void*>(job_.output.data()), job_.input.data(),
                job_.input.size() * sizeof(Transform));
  }
  engine.Apply(s, landed_on_frame);
}

void Solver::Prepare(bool initialize, DynamicsState& s,
                     SpringBonesReport& report) {
  ComputeAnimatedPose();
  from_ = component_;
  if (initialize) {
    Initialize(s);
    report.initialized = true;
  } else {
    from_ = HandleTeleport(s, report);
  }
  PlaceColliders();
}

void Solver::Simulate(LaneEngine& engine, DynamicsState& s,
                      SpringBonesReport& report) {
  const Transform& from = from_;

  // Fixed steps. The state holds the time since its last step (the
  // leftover) and the component transform and animated pose at that step:
  // the anchor. Step k of this frame lands k h after the anchor, a fraction
  // k h / total of the way from the anchor to this frame, and sees the
  // component and pose interpolated there; so no motion between steps is
  // lost, whatever the frame rate. A total beyond max_substeps steps is
  // clamped (slow motion for that frame instead of a spiral).
  const float h = rig_.step_seconds();
  float total = s.leftover_time + job_.dt;
  const float cap = static_cast<float>(desc_.max_substeps) * h;
  if (total > cap) {
    total = cap;
    report.time_clamped = true;
  }
  const int steps = std::min(
      static_cast<int>(std::floor(total / h + kStepSnap)), desc_.max_substeps);
  const float remaining = std::max(0.0f, total - static_cast<float>(steps) * h);
  const bool moving = !(from == component_);
  Transform step_from = from;
  float alpha = 0.0f;
  if (steps > 0) engine.Load(s);
  for (int k = 1; k <= steps; ++k) {
    alpha = 1.0f;
    if (total > 0.0f) {
      alpha = std::min(static_cast<float>(k) * h / total, 1.0f);
      if (alpha > 1.0f - 1e-6f) alpha = 1.0f;
    }
    const Transform step_to = moving && alpha < 1.0f
                                  ? Interpolate(from, component_, alpha)
                                  : component_;
    Step(engine, s, step_from, step_to, alpha);
    step_from = step_to;
  }
  if (steps > 0) engine.Store(s);
  report.substeps = steps;

  // The new anchor: the last step (unchanged when no step was taken).
  s.leftover_time = remaining;
  s.previous_component = step_from;
  if (steps > 0 && alpha == 1.0f) {
    // Bytes, as in ApplyToPose.
    if (!sc_.pose_cs.empty()) {
      std::memcpy(static_cast<void*>(s.previous_pose_positions.data()),
                  sc_.pose_cs.data(),
                  sc_.pose_cs.size() * sizeof(Eigen::Vector3f));
    }
  } else if (steps > 0) {
    for (int i = 0; i < rig_.num_particles(); ++i) {
      Eigen::Vector3f& a = s.previous_pose_positions[i];
      a += (sc_.pose_cs[i] - a) * alpha;
    }
  }
  ApplyToPose(engine, s, steps > 0 && alpha == 1.0f);
}

absl::Status ValidateVector(const Eigen::Vector3f& v, absl::string_view field) {
  if (!v.allFinite()) {
    return absl::InvalidArgumentError(
        absl::StrCat("spring_bones.", field, ": NaN or infinite component"));
  }
  return absl::OkStatus();
}

}  // namespace

float EvaluateSpringCurve(const SpringCurve& curve, float position) {
  if (curve.empty()) return 1.0f;
  if (position <= curve.front().position) return curve.front().value;
  if (position >= curve.back().position) return curve.back().value;
  // Curves are short (a handful of keys): a linear scan beats a search.
  size_t k = 1;
  while (curve[k].position < position) ++k;
  const SpringCurveKey& a = curve[k - 1];
  const SpringCurveKey& b = curve[k];
  const float t = (position - a.position) / (b.position - a.position);
  return a.value + (b.value - a.value) * t;
}

absl::StatusOr<SpringRig> SpringRig::Create(const Skeleton& skeleton,
                                            SpringRigDesc desc) {
  if (absl::Status s = ValidateDesc(desc); !s.ok()) return s;
  const int n = skeleton.num_joints();

  std::vector<uint8_t> excluded(n, 0);
  for (size_t e = 0; e < desc.excluded_joints.size(); ++e) {
    const int j = skeleton.FindJoint(desc.excluded_joints[e]);
    if (j < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("spring_rig.excluded_joints[", e, "]: no joint named '",
                       desc.excluded_joints[e], "'"));
    }
    excluded[j] = 1;
  }
  std::vector<int> root_of(n, -1);
  for (size_t r = 0; r < desc.root_joints.size(); ++r) {
    const std::string& name = desc.root_joints[r];
    const int j = skeleton.FindJoint(name);
    if (j < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "spring_rig.root_joints[", r, "]: no joint named '", name, "'"));
    }
    if (root_of[j] >= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("spring_rig.root_joints[", r, "] '", name, "' (joint ",
                       j, "): duplicate of root ", root_of[j]));
    }
    if (excluded[j]) {
      return absl::InvalidArgumentError(
          absl::StrCat("spring_rig.root_joints[", r, "] '", name, "' (joint ",
                       j, "): the root is also excluded"));
    }
    root_of[j] = static_cast<int>(r);
  }

  // Chain membership in one pass: parents come before children.
  std::vector<int> chain_of(n, -1);
  for (int j = 0; j < n; ++j) {
    const int p = skeleton.parent(j);
    const int inherited = (p >= 0 && !excluded[j]) ? chain_of[p] : -1;
    if (root_of[j] >= 0) {
      if (inherited >= 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "spring_rig.root_joints[", root_of[j], "] '",
            skeleton.joint_name(j), "' (joint ", j,
            "): lies inside the chain of root '", desc.root_joints[inherited],
            "'; exclude it there first"));
      }
      chain_of[j] = root_of[j];
    } else {
      chain_of[j] = inherited;
    }
  }

  SpringRig rig;
  rig.particle_of_joint_.assign(n, -1);
  std::vector<SpringParticle>& ps = rig.particles_;
  for (int j = 0; j < n; ++j) {
    if (chain_of[j] < 0) continue;
    SpringParticle pt;
    pt.joint = j;
    pt.chain = chain_of[j];
    pt.parent =
        root_of[j] >= 0 ? -1 : rig.particle_of_joint_[skeleton.parent(j)];
    rig.particle_of_joint_[j] = static_cast<int>(ps.size());
    ps.push_back(pt);
  }
  const int real = static_cast<int>(ps.size());
  if (desc.dummy_tip_length > 0.0f) {
    for (int i = 0; i < real; ++i) {
      bool has_child = false;
      for (int child : skeleton.children(ps[i].joint)) {
        if (rig.particle_of_joint_[child] >= 0) has_child = true;
      }
      if (has_child) continue;
      SpringParticle tip;
      tip.parent = i;
      tip.chain = ps[i].chain;
      if (desc.tip_axis == SpringTipAxis::kAlongBone) {
        const Eigen::Vector3f t = skeleton.rest_pose()[ps[i].joint].translation;
        if (!(t.norm() > kTinyLength)) {
          return absl::InvalidArgumentError(absl::StrCat(
              "spring_rig.tip_axis: kAlongBone needs a bone, but leaf joint ",
              ps[i].joint, " '", skeleton.joint_name(ps[i].joint),
              "' has a zero rest translation; choose an axis"));
        }
        tip.tip_direction = t.normalized();
      } else {
        tip.tip_direction = AxisVector(desc.tip_axis);
      }
      ps.push_back(tip);
    }
  }

  // Children, chain positions and resolved settings.
  const int total = static_cast<int>(ps.size());
  std::vector<float> from_root(total, 0.0f);
  std::vector<float> chain_length(desc.root_joints.size(), 0.0f);
  for (int i = 0; i < total; ++i) {
    SpringParticle& pt = ps[i];
    if (pt.parent < 0) continue;
    SpringParticle& parent = ps[pt.parent];
    if (parent.num_children++ == 0) parent.first_child = i;
    const float bone = pt.joint >= 0
                           ? skeleton.rest_pose()[pt.joint].translation.norm()
                           : desc.dummy_tip_length;
    from_root[i] = from_root[pt.parent] + bone;
    chain_length[pt.chain] = std::max(chain_length[pt.chain], from_root[i]);
  }
  const float exponent = kSpringReferenceRateHz / desc.target_rate_hz;
  for (int i = 0; i < total; ++i) {
    SpringParticle& pt = ps[i];
    const float length = chain_length[pt.chain];
    pt.length_rate = length > 0.0f ? from_root[i] / length : 0.0f;
    pt.settings = ResolveSettings(desc, pt.length_rate);
    // At the 60 Hz reference rate these are KawaiiPhysics' exact factors
    // (pow(x, 1) == x).
    pt.velocity_keep = dmath::Pow(1.0f - pt.settings.damping, exponent);
    pt.stiffness_pull =
        1.0f - dmath::Pow(1.0f - pt.settings.stiffness, exponent);
    const float limit = pt.settings.limit_angle_degrees * kDegToRad;
    const dmath::SinCosF limit_sc = dmath::SinCos(limit);
    pt.cos_limit = limit_sc.cos;
    pt.sin_limit = limit_sc.sin;
  }

  uint64_t fp = 1469598103934665603ull;
  fp = Fnv1a(fp, static_cast<uint64_t>(n));
  fp = Fnv1a(fp, static_cast<uint64_t>(total));
  for (const SpringParticle& pt : ps) {
    fp = Fnv1a(fp, static_cast<uint64_t>(static_cast<int64_t>(pt.joint)));
    fp = Fnv1a(fp, static_cast<uint64_t>(static_cast<int64_t>(pt.parent)));
    fp = Fnv1a(fp, static_cast<uint64_t>(pt.chain));
  }
  rig.fingerprint_ = fp;
  rig.step_ = 1.0f / desc.target_rate_hz;
  rig.skeleton_parents_.assign(skeleton.parents().begin(),
                               skeleton.parents().end());
  rig.lanes_ = BuildLaneLayout(rig.particles_, skeleton.parents(),
                               rig.particle_of_joint_);
  rig.desc_ = std::move(desc);
  return rig;
}

bool SpringRig::prefers_wide_lanes() const {
  return lanes_ != nullptr && lanes_->prefer_wide;
}

absl::Status SpringBonesJob::Validate() const {
  if (skeleton == nullptr) {
    return absl::InvalidArgumentError("spring_bones.skeleton: not set");
  }
  if (rig == nullptr) {
    return absl::InvalidArgumentError("spring_bones.rig: not set");
  }
  if (rig->skeleton_parents() != skeleton->parents()) {
    return absl::InvalidArgumentError(
        absl::StrCat("spring_bones.rig: built for a different skeleton (",
                     rig->skeleton_parents().size(), " joints; this one has ",
                     skeleton->num_joints(), " or a different hierarchy)"));
  }
  if (static_cast<int>(output.size()) != skeleton->num_joints()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spring_bones.output: ", output.size(),
        " transforms for a skeleton of ", skeleton->num_joints(), " joints"));
  }
  if (absl::Status s = CheckNoPartialOverlap(output, "spring_bones.output",
                                             input, "spring_bones.input");
      !s.ok()) {
    return s;
  }
  if (static_cast<int>(input.size()) != skeleton->num_joints() ||
      !PoseLooksValid(input)) {
    if (absl::Status s = ValidatePose(*skeleton, input, "spring_bones.input");
        !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = ValidateComponentTransform(
          component_to_world, "spring_bones.component_to_world");
      !s.ok()) {
    return s;
  }
  if (!std::isfinite(dt) || dt < 0.0f) {
    return absl::InvalidArgumentError(
        absl::StrCat("spring_bones.dt: ", dt,
                     " is not a finite non-negative number of seconds"));
  }
  if (absl::Status s = ValidateVector(forces.gravity, "forces.gravity");
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          ValidateVector(forces.external_force, "forces.external_force");
      !s.ok()) {
    return s;
  }
  if (forces.external_force_space != ForceSpace::kWorld &&
      forces.external_force_space != ForceSpace::kComponent) {
    return absl::InvalidArgumentError(
        absl::StrCat("spring_bones.forces.external_force_space: unknown value ",
                     static_cast<int>(forces.external_force_space)));
  }
  const SpringWind& w = forces.wind;
  if (absl::Status s = ValidateVector(w.direction, "forces.wind.direction");
      !s.ok()) {
    return s;
  }
  if (!std::isfinite(w.speed)) {
    return absl::InvalidArgumentError(
        "spring_bones.forces.wind.speed: NaN or infinite");
  }
  if (w.speed != 0.0f && !(w.direction.norm() > 1e-6f)) {
    return absl::InvalidArgumentError(
        "spring_bones.forces.wind.direction: zero vector with a non-zero "
        "wind speed");
  }
  if (!(w.noise_amplitude >= 0.0f && w.noise_amplitude <= 1.0f)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spring_bones.forces.wind.noise_amplitude: ", w.noise_amplitude,
        " is outside [0, 1]"));
  }
  if (!std::isfinite(w.noise_frequency_hz) || w.noise_frequency_hz < 0.0f) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spring_bones.forces.wind.noise_frequency_hz: ", w.noise_frequency_hz,
        " is not a finite non-negative frequency"));
  }
  for (size_t c = 0; c < colliders.size(); ++c) {
    if (absl::Status s =
            ValidateCollider(colliders[c], static_cast<int>(c), *skeleton);
        !s.ok()) {
      return s;
    }
  }
  if (state_out == nullptr) {
    return absl::InvalidArgumentError("spring_bones.state_out: not set");
  }
  if (state_in != nullptr && !reset && !state_in->empty()) {
    const DynamicsState& st = *state_in;
    if (st.rig_fingerprint != rig->fingerprint()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "spring_bones.state_in: made for a different rig (fingerprint ",
          st.rig_fingerprint, ", this rig is ", rig->fingerprint(),
          "); reset the state when the rig changes"));
    }
    if (static_cast<int>(st.positions.size()) != rig->num_particles()) {
      return absl::InvalidArgumentError(
          absl::StrCat("spring_bones.state_in: ", st.positions.size(),
                       " particles, the rig has ", rig->num_particles()));
    }
    if (st.space != rig->desc().space) {
      return absl::InvalidArgumentError(
          absl::StrCat("spring_bones.state_in: simulated in ",
                       SimulationSpaceName(st.space), " space, the rig in ",
                       SimulationSpaceName(rig->desc().space), " space"));
    }
    if (absl::Status s = ValidateDynamicsState(st); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("spring_bones.state_in: ", s.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status SpringBonesJob::Run() const {
  if (absl::Status s = Validate(); !s.ok()) return s;
  // Built only without a caller's scratch: it holds some twenty vectors.
  std::optional<SpringBonesScratch> local_scratch;
  DynamicsState& s = *state_out;
  const bool initialize = reset || state_in == nullptr || state_in->empty();
  if (!initialize && state_in != state_out) s = *state_in;
  SpringBonesReport local_report;
  SpringBonesReport& r = report != nullptr ? *report : local_report;
  r = SpringBonesReport();
  // A default-constructed rig has no layout (and no particles).
  static const SpringLaneLayout kNoLanes;
  const SpringLaneLayout& layout =
      rig->lanes_ != nullptr ? *rig->lanes_ : kNoLanes;
  SpringBonesScratch& sc =
      scratch != nullptr ? *scratch : local_scratch.emplace();
  Solver solver(*this, sc);
  solver.Prepare(initialize, s, r);
  // The width is chosen once per solve; both give the same bits.
#if POSEWIRE_AVX2_KERNELS
  if (layout.prefer_wide && ActiveSimdLevel() == SimdLevel::kAvx2) {
    wide::Engine engine(*this, layout.wide, sc, sc.wide_lanes);
    solver.Simulate(engine, s, r);
    return absl::OkStatus();
  }
#endif
  narrow::Engine engine(*this, layout.narrow, sc, sc.lanes);
  solver.Simulate(engine, s, r);
  return absl::OkStatus();
}

}  // namespace posewire
