// SpringRig::Create: the rig description checked against the skeleton, the
// chains resolved into particles with their per-step settings (curves,
// clamping, the reference-rate exponents) and laid out in SIMD lanes.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "solver_core/dynamics/internal/spring_geometry.h"
#include "solver_core/dynamics/internal/spring_lane_layout.h"
#include "solver_core/dynamics/spring_bones.h"
#include "solver_core/model/deterministic_math.h"

namespace posewire {
namespace {

using spring_internal::kDegToRad;
using spring_internal::kTinyLength;

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

// The chain (index into root_joints) of every joint, -1 for joints left to
// the animation, and which joints are roots (their root_joints index).
absl::Status FindChains(const Skeleton& skeleton, const SpringRigDesc& desc,
                        std::vector<int>* chain_of, std::vector<int>* root_of) {
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
  root_of->assign(n, -1);
  for (size_t r = 0; r < desc.root_joints.size(); ++r) {
    const std::string& name = desc.root_joints[r];
    const int j = skeleton.FindJoint(name);
    if (j < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "spring_rig.root_joints[", r, "]: no joint named '", name, "'"));
    }
    if ((*root_of)[j] >= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("spring_rig.root_joints[", r, "] '", name, "' (joint ",
                       j, "): duplicate of root ", (*root_of)[j]));
    }
    if (excluded[j]) {
      return absl::InvalidArgumentError(
          absl::StrCat("spring_rig.root_joints[", r, "] '", name, "' (joint ",
                       j, "): the root is also excluded"));
    }
    (*root_of)[j] = static_cast<int>(r);
  }

  // Chain membership in one pass: parents come before children.
  chain_of->assign(n, -1);
  for (int j = 0; j < n; ++j) {
    const int p = skeleton.parent(j);
    const int inherited = (p >= 0 && !excluded[j]) ? (*chain_of)[p] : -1;
    if ((*root_of)[j] >= 0) {
      if (inherited >= 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "spring_rig.root_joints[", (*root_of)[j], "] '",
            skeleton.joint_name(j), "' (joint ", j,
            "): lies inside the chain of root '", desc.root_joints[inherited],
            "'; exclude it there first"));
      }
      (*chain_of)[j] = (*root_of)[j];
    } else {
      (*chain_of)[j] = inherited;
    }
  }
  return absl::OkStatus();
}

// A dummy tip below every chain leaf (desc.dummy_tip_length > 0).
absl::Status AddDummyTips(const Skeleton& skeleton, const SpringRigDesc& desc,
                          absl::Span<const int> particle_of_joint,
                          std::vector<SpringParticle>* particles) {
  std::vector<SpringParticle>& ps = *particles;
  const int real = static_cast<int>(ps.size());
  for (int i = 0; i < real; ++i) {
    bool has_child = false;
    for (int child : skeleton.children(ps[i].joint)) {
      if (particle_of_joint[child] >= 0) has_child = true;
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
  return absl::OkStatus();
}

// Children, chain positions and resolved settings of every particle.
void ResolveParticles(const Skeleton& skeleton, const SpringRigDesc& desc,
                      std::vector<SpringParticle>* particles) {
  std::vector<SpringParticle>& ps = *particles;
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
}

// FNV-1a over the joint count and the particle topology.
uint64_t Fingerprint(int num_joints, absl::Span<const SpringParticle> ps) {
  uint64_t fp = 1469598103934665603ull;
  fp = Fnv1a(fp, static_cast<uint64_t>(num_joints));
  fp = Fnv1a(fp, static_cast<uint64_t>(ps.size()));
  for (const SpringParticle& pt : ps) {
    fp = Fnv1a(fp, static_cast<uint64_t>(static_cast<int64_t>(pt.joint)));
    fp = Fnv1a(fp, static_cast<uint64_t>(static_cast<int64_t>(pt.parent)));
    fp = Fnv1a(fp, static_cast<uint64_t>(pt.chain));
  }
  return fp;
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
  std::vector<int> chain_of;
  std::vector<int> root_of;
  if (absl::Status s = FindChains(skeleton, desc, &chain_of, &root_of);
      !s.ok()) {
    return s;
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
  if (desc.dummy_tip_length > 0.0f) {
    if (absl::Status s =
            AddDummyTips(skeleton, desc, rig.particle_of_joint_, &ps);
        !s.ok()) {
      return s;
    }
  }
  ResolveParticles(skeleton, desc, &ps);

  rig.fingerprint_ = Fingerprint(n, ps);
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

}  // namespace posewire
