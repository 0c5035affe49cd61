#include "solver_core/analytic_ik/ground.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "solver_core/analytic_ik/clamp_direction.h"
#include "solver_core/analytic_ik/two_bone_ik.h"
#include "solver_core/model/deterministic_math.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/quaternion_math.h"

namespace posewire {
namespace {

// 85 degrees: a steeper tilt would put the ankle's distance from the ground
// plane (h / cos(tilt)) out of any useful range.
constexpr float kMaxGroundTilt = 1.4835298f;

// The share of a leg's length it may stretch to when the pelvis is held
// back by smoothing: just short of straight, where two-bone IK still
// reaches its target exactly.
constexpr float kGroundReach = 0.999f;

absl::Status Invalid(absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("ground.", field, ": ", what));
}

std::string JointRef(const Skeleton& skeleton, int joint) {
  return absl::StrCat("joint ", joint, " '", skeleton.joint_name(joint), "'");
}

absl::Status CheckVector(const Eigen::Vector3f& v, absl::string_view field) {
  if (v.allFinite()) return absl::OkStatus();
  return Invalid(field, "NaN or infinite component");
}

absl::Status CheckNonNegative(float x, absl::string_view field) {
  if (x >= 0.0f && std::isfinite(x)) return absl::OkStatus();
  return Invalid(field, absl::StrCat(x, " is not finite and >= 0"));
}

// `child` must lie strictly under `parent`.
absl::Status CheckBelow(const Skeleton& skel, int parent, int child,
                        absl::string_view parent_field,
                        absl::string_view child_field) {
  const int n = skel.num_joints();
  if (child < 0 || child >= n) {
    return Invalid(child_field, absl::StrCat("joint ", child,
                                             " is out of range [0, ", n, ")"));
  }
  if (child == parent || !skel.IsInSubtree(parent, child)) {
    return Invalid(
        child_field,
        absl::StrCat(JointRef(skel, child), " is not a descendant of ",
                     parent_field, " ", JointRef(skel, parent),
                     " (a leg is a parent chain hip, knee, ankle, "
                     "toe under the pelvis)"));
  }
  return absl::OkStatus();
}

absl::Status CheckLegs(const GroundJob& job) {
  const Skeleton& skel = *job.skeleton;
  if (job.pelvis < 0 || job.pelvis >= skel.num_joints()) {
    return Invalid("pelvis",
                   absl::StrCat("joint ", job.pelvis, " is out of range [0, ",
                                skel.num_joints(), ")"));
  }
  if (job.legs.empty() || job.legs.size() > kMaxGroundLegs) {
    return Invalid("legs", absl::StrCat(job.legs.size(), " legs; give 1 to ",
                                        kMaxGroundLegs));
  }
  for (size_t i = 0; i < job.legs.size(); ++i) {
    const GroundLeg& leg = job.legs[i];
    const std::string f = absl::StrCat("legs[", i, "]");
    const struct {
      int parent;
      int child;
      std::string parent_field;
      std::string child_field;
    } links[] = {{job.pelvis, leg.hip, "pelvis", f + ".hip"},
                 {leg.hip, leg.knee, f + ".hip", f + ".knee"},
                 {leg.knee, leg.ankle, f + ".knee", f + ".ankle"},
                 {leg.ankle, leg.toe, f + ".ankle", f + ".toe"}};
    for (const auto& link : links) {
      if (link.child == -1 && &link == &links[3]) break;  // no toe
      if (absl::Status s = CheckBelow(skel, link.parent, link.child,
                                      link.parent_field, link.child_field);
          !s.ok()) {
        return s;
      }
    }
    for (size_t o = 0; o < i; ++o) {
      const int a = job.legs[o].hip;
      if (skel.IsInSubtree(a, leg.hip) || skel.IsInSubtree(leg.hip, a)) {
        return Invalid(absl::StrCat(f, ".hip"),
                       absl::StrCat(JointRef(skel, leg.hip),
                                    " shares a subtree with legs[", o, "].hip ",
                                    JointRef(skel, a),
                                    "; legs must not hang under each other"));
      }
    }
  }
  return absl::OkStatus();
}

// Up along +Y: the job's own frame, nothing to turn.
bool IsDefaultUp(const Eigen::Vector3f& up) {
  return up.x() == 0.0f && up.z() == 0.0f && up.y() > 0.0f;
}

absl::Status CheckGround(const GroundJob& job) {
  if (absl::Status s = CheckVector(job.up, "up"); !s.ok()) return s;
  if (!(job.up.squaredNorm() > 1e-12f)) {
    return Invalid("up", "zero length; give model space's up direction");
  }
  if (job.heightfield != nullptr && !IsDefaultUp(job.up)) {
    return Invalid("heightfield",
                   "needs up = +Y (its grid lies on the x-z plane); with "
                   "another up, give samples under each foot instead");
  }
  if (job.heightfield != nullptr) {
    if (!job.samples.empty()) {
      return Invalid("samples",
                     "given with a heightfield; give one or the other");
    }
    return job.heightfield->Validate();
  }
  if (job.samples.size() != job.legs.size()) {
    return Invalid(
        "samples",
        absl::StrCat(job.samples.size(), " samples for ", job.legs.size(),
                     " legs; give one per leg (or a heightfield)"));
  }
  for (size_t i = 0; i < job.samples.size(); ++i) {
    const GroundSample& s = job.samples[i];
    const std::string f = absl::StrCat("samples[", i, "]");
    if (absl::Status st = CheckVector(s.point, f + ".point"); !st.ok()) {
      return st;
    }
    if (absl::Status st = CheckVector(s.normal, f + ".normal"); !st.ok()) {
      return st;
    }
    if (!s.hit) continue;
    if (!(s.normal.squaredNorm() > 1e-12f)) {
      return Invalid(f + ".normal",
                     "zero length; give the ground's up-facing normal");
    }
    if (!IsDefaultUp(job.up)) {
      if (!(s.normal.dot(job.up) > 0.0f)) {
        return Invalid(
            f + ".normal",
            absl::StrCat("(", s.normal.x(), ", ", s.normal.y(), ", ",
                         s.normal.z(),
                         ") does not point up (normal . up <= 0 "
                         "with up (",
                         job.up.x(), ", ", job.up.y(), ", ", job.up.z(), "))"));
      }
      continue;
    }
    if (!(s.normal.y() > 0.0f)) {
      return Invalid(f + ".normal",
                     "does not point up (y <= 0); the ground under a foot "
                     "faces +Y");
    }
  }
  return absl::OkStatus();
}

absl::Status CheckParameters(const GroundJob& job) {
  if (!std::isfinite(job.floor_height)) {
    return Invalid("floor_height", "not finite");
  }
  if (!std::isfinite(job.weight)) return Invalid("weight", "not finite");
  if (!(job.max_step_height > 0.0f) || !std::isfinite(job.max_step_height)) {
    return Invalid("max_step_height",
                   absl::StrCat(job.max_step_height, " is not finite and > 0"));
  }
  if (!(job.max_tilt >= 0.0f && job.max_tilt <= kMaxGroundTilt)) {
    return Invalid("max_tilt",
                   absl::StrCat(job.max_tilt, " is not in [0, ", kMaxGroundTilt,
                                "] radians (85 degrees)"));
  }
  if (absl::Status s = CheckNonNegative(job.pelvis_speed, "pelvis_speed");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckNonNegative(job.foot_speed, "foot_speed");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckNonNegative(job.dt, "dt"); !s.ok()) return s;
  if (job.state != nullptr) {
    if (!std::isfinite(job.state->pelvis_offset)) {
      return Invalid("state.pelvis_offset", "not finite");
    }
    for (size_t i = 0; i < job.state->foot_offsets.size(); ++i) {
      if (!std::isfinite(job.state->foot_offsets[i])) {
        return Invalid(absl::StrCat("state.foot_offsets[", i, "]"),
                       "not finite");
      }
    }
  }
  return absl::OkStatus();
}

absl::Status Diagnose(const GroundJob& job) {
  if (job.skeleton == nullptr) return Invalid("skeleton", "not set");
  const Skeleton& skel = *job.skeleton;
  const size_t n = static_cast<size_t>(skel.num_joints());
  if (job.input.size() != n || job.output.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ground: input and output need one transform per joint (", n, "); got ",
        job.input.size(), " and ", job.output.size()));
  }
  if (absl::Status s = CheckNoPartialOverlap(job.output, "ground.output",
                                             job.input, "ground.input");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckLegs(job); !s.ok()) return s;
  if (absl::Status s = CheckGround(job); !s.ok()) return s;
  if (absl::Status s = CheckParameters(job); !s.ok()) return s;
  if (!TransformLooksValid(job.parent_model)) {
    if (absl::Status s = ValidateParentModel(skel, job.parent_model, job.pelvis,
                                             "ground.parent_model");
        !s.ok()) {
      return s;
    }
  }
  return CheckInputPose(skel, job.input, "ground.input", job.input_validated);
}

// The model transform of `joint`, from `top`'s model transform down the
// path between them (top must be `joint` or an ancestor of it).
Transform ModelBelow(const Skeleton& skel, absl::Span<const Transform> local,
                     int top, const Transform& top_model, int joint) {
  absl::InlinedVector<int, 16> path;
  for (int j = joint; j != top; j = skel.parent(j)) path.push_back(j);
  Transform model = top_model;
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    CombineTo(model, local[*it], &model);
  }
  return model;
}

// The ground plane under one foot: a point on it and its unit normal.
struct Plane {
  Eigen::Vector3f point = Eigen::Vector3f::Zero();
  Eigen::Vector3f normal = Eigen::Vector3f::UnitY();
};

// The plane's height at (x, z); the normal points up.
float PlaneHeight(const Plane& p, float x, float z) {
  const Eigen::Vector3f& n = p.normal;
  return p.point.y() -
         (n.x() * (x - p.point.x()) + n.z() * (z - p.point.z())) / n.y();
}

// The heightfield's plane under a foot: its normal is the ground's at the
// middle of the foot (between ankle and toe), and it rests on the higher of
// the ground points under the ankle and the toe, so a foot over a step's
// edge or a bump stands on it rather than in it.
bool HeightfieldPlane(const Heightfield& field, const Eigen::Vector3f& ankle,
                      const Eigen::Vector3f* toe, Plane* plane) {
  float ha = 0.0f;
  Eigen::Vector3f na = Eigen::Vector3f::UnitY();
  const bool ankle_hit = field.Sample(ankle.x(), ankle.z(), &ha, &na);
  if (ankle_hit) *plane = {Eigen::Vector3f(ankle.x(), ha, ankle.z()), na};
  if (toe == nullptr) return ankle_hit;
  float ht = 0.0f;
  Eigen::Vector3f nt = Eigen::Vector3f::UnitY();
  if (!field.Sample(toe->x(), toe->z(), &ht, &nt)) return ankle_hit;
  const Eigen::Vector3f toe_ground(toe->x(), ht, toe->z());
  if (!ankle_hit) {
    *plane = {toe_ground, nt};
    return true;
  }
  float hm = 0.0f;
  Eigen::Vector3f nm = Eigen::Vector3f::UnitY();
  if (field.Sample(0.5f * (ankle.x() + toe->x()), 0.5f * (ankle.z() + toe->z()),
                   &hm, &nm)) {
    plane->normal = nm;
  }
  if (ht > PlaneHeight(*plane, toe->x(), toe->z())) plane->point = toe_ground;
  return true;
}

// `n` (unit, n.y > 0) turned back toward +Y to at most the tilt whose
// cosine and sine are given.
Eigen::Vector3f ClampTilt(const Eigen::Vector3f& n, dmath::SinCosF max_tilt,
                          bool* clamped) {
  if (n.y() >= max_tilt.cos) return n;
  *clamped = true;
  const float horizontal = std::sqrt(n.x() * n.x() + n.z() * n.z());
  if (!(horizontal > 0.0f)) return Eigen::Vector3f::UnitY();
  const float s = max_tilt.sin / horizontal;
  return Eigen::Vector3f(n.x() * s, max_tilt.cos, n.z() * s);
}

// The shortest rotation taking +Y onto unit `n` (n.y > 0): identity, bit
// for bit, when n is +Y.
Eigen::Quaternionf TiltRotation(const Eigen::Vector3f& n) {
  const float s = std::sqrt(2.0f * (1.0f + n.y()));
  return Eigen::Quaternionf(0.5f * s, n.z() / s, 0.0f, -n.x() / s);
}

float Smooth(float from, float to, float speed, float dt, bool smoothing) {
  if (!smoothing || speed == 0.0f) return to;
  const float t = std::min(1.0f, speed * dt);
  return from + (to - from) * t;
}

struct LegPlan {
  Eigen::Vector3f hip = Eigen::Vector3f::Zero();  // input model position
  float length = 0.0f;  // thigh plus shin, model units
  bool grounded = false;
  Transform ankle;  // input model transform
  Eigen::Vector3f tilt = Eigen::Vector3f::UnitY();
  float offset = 0.0f;
};

}  // namespace

absl::Status Heightfield::Validate() const {
  if (columns < 2 || rows < 2) {
    return Invalid(
        "heightfield",
        absl::StrCat(columns, " x ", rows, " samples; give at least 2 x 2"));
  }
  const size_t n = static_cast<size_t>(columns) * static_cast<size_t>(rows);
  if (heights.size() != n) {
    return Invalid("heightfield.heights",
                   absl::StrCat(heights.size(), " heights for ", columns,
                                " columns x ", rows, " rows (", n, ")"));
  }
  if (!(spacing > 0.0f) || !std::isfinite(spacing)) {
    return Invalid("heightfield.spacing",
                   absl::StrCat(spacing, " is not finite and > 0"));
  }
  if (!std::isfinite(origin_x) || !std::isfinite(origin_z)) {
    return Invalid("heightfield.origin", "NaN or infinite component");
  }
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(heights[i])) {
      return Invalid(absl::StrCat("heightfield.heights[", i, "]"),
                     absl::StrCat(heights[i], " is not finite"));
    }
  }
  return absl::OkStatus();
}

bool Heightfield::Sample(float x, float z, float* height,
                         Eigen::Vector3f* normal) const {
  const float u = (x - origin_x) / spacing;
  const float v = (z - origin_z) / spacing;
  if (!(u >= 0.0f && u <= static_cast<float>(columns - 1) && v >= 0.0f &&
        v <= static_cast<float>(rows - 1))) {
    return false;
  }
  const int c = std::min(static_cast<int>(u), columns - 2);
  const int r = std::min(static_cast<int>(v), rows - 2);
  const float fu = u - static_cast<float>(c);
  const float fv = v - static_cast<float>(r);
  const size_t i = static_cast<size_t>(r) * columns + c;
  const float h00 = heights[i], h10 = heights[i + 1];
  const float h01 = heights[i + columns], h11 = heights[i + columns + 1];
  const float low = h00 + (h10 - h00) * fu;
  const float high = h01 + (h11 - h01) * fu;
  *height = low + (high - low) * fv;
  const float du = (h10 - h00) + ((h11 - h01) - (h10 - h00)) * fv;
  const float dv = high - low;
  *normal = Eigen::Vector3f(-du / spacing, 1.0f, -dv / spacing).normalized();
  return true;
}

absl::Status GroundJob::Validate() const { return Diagnose(*this); }

absl::Status GroundJob::Run() const {
  if (absl::Status s = Validate(); !s.ok()) return s;
  if (!IsDefaultUp(up)) {
    // Turn the problem so that up is +Y: the pelvis's parent frame (so every
    // model transform below it turns with it) and the ground samples. Local
    // results do not depend on the frame.
    const Eigen::Quaternionf to_y =
        RotationBetween(up, Eigen::Vector3f::UnitY());
    Transform turn = Transform::Identity();
    turn.rotation = to_y;
    std::array<GroundSample, kMaxGroundLegs> turned;
    for (size_t i = 0; i < samples.size(); ++i) {
      turned[i] = GroundSample{.hit = samples[i].hit,
                               .point = to_y * samples[i].point,
                               .normal = to_y * samples[i].normal};
    }
    GroundJob upright = *this;
    upright.parent_model = Combine(turn, parent_model);
    upright.samples = absl::MakeConstSpan(turned.data(), samples.size());
    upright.up = Eigen::Vector3f::UnitY();
    return upright.Run();
  }
  const Skeleton& skel = *skeleton;
  const float w = std::clamp(weight, 0.0f, 1.0f);
  const dmath::SinCosF tilt_limit = dmath::SinCos(max_tilt);
  const bool smoothing = state != nullptr && dt > 0.0f;
  GroundResult out;

  // Offsets and tilts from the input pose.
  const Transform pelvis_model = Combine(parent_model, input[pelvis]);
  std::array<LegPlan, kMaxGroundLegs> plans;
  float lowest = 0.0f;
  bool moved = false;
  for (size_t i = 0; i < legs.size(); ++i) {
    const GroundLeg& leg = legs[i];
    LegPlan& plan = plans[i];
    const Transform hip =
        ModelBelow(skel, input, pelvis, pelvis_model, leg.hip);
    const Transform knee = ModelBelow(skel, input, leg.hip, hip, leg.knee);
    plan.ankle = ModelBelow(skel, input, leg.knee, knee, leg.ankle);
    plan.hip = hip.translation;
    plan.length = (knee.translation - hip.translation).norm() +
                  (plan.ankle.translation - knee.translation).norm();
    const Eigen::Vector3f& a = plan.ankle.translation;
    Plane plane;
    bool hit = false;
    if (heightfield != nullptr) {
      Eigen::Vector3f toe = Eigen::Vector3f::Zero();
      if (leg.toe >= 0)
        toe = plan.ankle.TransformPoint(input[leg.toe].translation);
      hit = HeightfieldPlane(*heightfield, a, leg.toe >= 0 ? &toe : nullptr,
                             &plane);
    } else if (samples[i].hit) {
      plane = {samples[i].point, samples[i].normal.normalized()};
      hit = true;
    }
    float target = 0.0f;
    Eigen::Vector3f tilt = Eigen::Vector3f::UnitY();
    if (hit) {
      bool clamped = false;
      tilt = ClampTilt(plane.normal, tilt_limit, &clamped);
      // The ankle, h above the clip's floor, goes h from the ground plane
      // along the foot's tilt: h / cos(tilt) above the plane, vertically.
      const float h = a.y() - floor_height;
      target = (PlaneHeight(plane, a.x(), a.z()) - floor_height) +
               (h / tilt.y() - h);
      if (std::abs(target) > max_step_height) {
        target = 0.0f;
        tilt = Eigen::Vector3f::UnitY();
      } else {
        plan.grounded = true;
        ++out.grounded_legs;
        out.tilt_clamped |= clamped;
      }
    }
    plan.offset = Smooth(state != nullptr ? state->foot_offsets[i] : 0.0f,
                         target, foot_speed, dt, smoothing);
    plan.tilt = tilt;
    lowest = std::min(lowest, plan.offset);
    out.foot_offsets[i] = plan.offset;
    moved |= plan.offset != 0.0f || tilt != Eigen::Vector3f::UnitY();
  }
  float pelvis_offset =
      std::min(0.0f, Smooth(state != nullptr ? state->pelvis_offset : 0.0f,
                            lowest, pelvis_speed, dt, smoothing));
  if (pelvis_offset != lowest) {
    // Smoothing may leave the pelvis too high for a grounded foot to reach
    // its target, which would float the foot: the pelvis then goes down
    // as far as that leg needs, straight (hip-to-target at most
    // kGroundReach of the leg's length).
    for (size_t i = 0; i < legs.size(); ++i) {
      const LegPlan& plan = plans[i];
      if (!plan.grounded) continue;
      const Eigen::Vector3f to = plan.ankle.translation - plan.hip;
      const float reach = kGroundReach * plan.length;
      const float across = to.x() * to.x() + to.z() * to.z();
      if (across >= reach * reach) continue;
      const float drop =
          to.y() + plan.offset + std::sqrt(reach * reach - across);
      pelvis_offset = std::min(pelvis_offset, drop);
    }
  }
  out.pelvis_offset = pelvis_offset;
  moved |= pelvis_offset != 0.0f;
  if (next_state != nullptr) {
    next_state->pelvis_offset = pelvis_offset;
    next_state->foot_offsets = out.foot_offsets;
  }

  if (output.data() != input.data()) {
    std::copy(input.begin(), input.end(), output.begin());
  }
  if (!moved || w == 0.0f) {
    if (result != nullptr) *result = out;
    return absl::OkStatus();
  }

  // The pelvis goes down in model space: in its parent's space, the same
  // vector back through the parent's rotation and scale.
  const Eigen::Vector3f drop(0.0f, w * pelvis_offset, 0.0f);
  output[pelvis].translation += (parent_model.rotation.conjugate() * drop)
                                    .cwiseQuotient(parent_model.scale);
  const Transform lowered_pelvis = Combine(parent_model, output[pelvis]);

  for (size_t i = 0; i < legs.size(); ++i) {
    const GroundLeg& leg = legs[i];
    const LegPlan& plan = plans[i];
    Eigen::Quaternionf tilt = TiltRotation(plan.tilt);
    if (w < 1.0f) tilt = Slerp(Eigen::Quaternionf::Identity(), tilt, w);
    TwoBoneIkJob ik;
    ik.skeleton = &skel;
    ik.input = output;
    ik.parent_model =
        ModelBelow(skel, output, pelvis, lowered_pelvis, skel.parent(leg.hip));
    ik.start_joint = leg.hip;
    ik.mid_joint = leg.knee;
    ik.end_joint = leg.ankle;
    ik.target =
        plan.ankle.translation + Eigen::Vector3f(0.0f, w * plan.offset, 0.0f);
    ik.pole_vector = Eigen::Vector3f::Zero();
    ik.end_rotation = (tilt * plan.ankle.rotation).normalized();
    ik.output = output;
    if (absl::Status s = ik.Run(); !s.ok()) return s;
  }
  out.iterations = 1;
  if (result != nullptr) *result = out;
  return absl::OkStatus();
}

}  // namespace posewire
