#include "solver_core/retarget/retarget_feet.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "solver_core/analytic_ik/two_bone_ik.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/model/pose.h"

namespace posewire {
namespace {

using transform_internal::Multiply;

// Relative distance beyond a leg's reach that is rounding, not a drag.
constexpr float kReachRounding = 1e-5f;

constexpr const char* kLegNames[kRetargetFeet] = {"left_leg", "right_leg"};

std::vector<Transform> ModelOf(const Skeleton& s,
                               absl::Span<const Transform> local) {
  std::vector<Transform> model(s.num_joints());
  for (int j = 0; j < s.num_joints(); ++j) {
    const int p = s.parent(j);
    model[j] = p == kNoParent ? local[j] : Combine(model[p], local[j]);
  }
  return model;
}

// `joint`'s transform in `ancestor`'s space: the locals strictly below the
// ancestor down to the joint, composed.
Transform Relative(const Skeleton& s, absl::Span<const Transform> local,
                   int ancestor, int joint) {
  std::vector<int> path;
  for (int j = joint; j != ancestor; j = s.parent(j)) path.push_back(j);
  Transform out = Transform::Identity();
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    out = Combine(out, local[*it]);
  }
  return out;
}

absl::Status CheckNonNegative(float v, absl::string_view field) {
  if (std::isfinite(v) && v >= 0.0f) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": ", v, " must be finite and >= 0"));
}

float Smoothstep(float t) { return t * t * (3.0f - 2.0f * t); }

// From a to b by w; b itself at w = 1 (a held foot stays put to the bit).
Eigen::Vector3f Toward(const Eigen::Vector3f& a, const Eigen::Vector3f& b,
                       float w) {
  if (w == 1.0f) return b;
  return a + (b - a) * w;
}

}  // namespace

absl::Status RetargetFeetOptions::Validate() const {
  if (absl::Status s = CheckNonNegative(contact_height, "feet.contact_height");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckNonNegative(contact_speed, "feet.contact_speed");
      !s.ok()) {
    return s;
  }
  if (!(std::isfinite(hysteresis) && hysteresis >= 1.0f)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "feet.hysteresis: ", hysteresis, " must be finite and >= 1"));
  }
  if (absl::Status s = CheckNonNegative(release_time, "feet.release_time");
      !s.ok()) {
    return s;
  }
  if (!(scaled_source_weight >= 0.0f && scaled_source_weight <= 1.0f)) {
    return absl::InvalidArgumentError(
        absl::StrCat("feet.scaled_source_weight: ", scaled_source_weight,
                     " must be in [0, 1]"));
  }
  if (source_floor.has_value() && !std::isfinite(*source_floor)) {
    return absl::InvalidArgumentError(
        absl::StrCat("feet.source_floor: ", *source_floor, " is not finite"));
  }
  return absl::OkStatus();
}

absl::StatusOr<RetargetFeet> RetargetFeet::Create(const RetargetMap& map,
                                                  const Skeleton& source,
                                                  const Skeleton& target) {
  if (source.num_joints() != map.source_joints() ||
      target.num_joints() != map.target_joints()) {
    return absl::InvalidArgumentError(
        "feet: the skeletons are not the map's (joint counts differ)");
  }
  RetargetFeet out;
  const std::vector<Transform> src_rest = ModelOf(source, source.rest_pose());
  const std::vector<Transform> tgt_rest = ModelOf(target, target.rest_pose());
  float src_sum = 0.0f;
  float tgt_sum = 0.0f;
  for (int f = 0; f < kRetargetFeet; ++f) {
    const RetargetChain* chain = nullptr;
    for (const RetargetChain& c : map.chains()) {
      if (c.name == kLegNames[f]) chain = &c;
    }
    if (chain == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(
          "feet: the mapping has no '", kLegNames[f],
          "' chain; the feet pass needs both legs (name them so in an "
          "explicit mapping)"));
    }
    Leg& leg = out.legs_[f];
    if (chain->source.size() >= 3) {
      leg.source_foot = chain->source[2];
    } else if (chain->source_end >= 0) {
      leg.source_foot = chain->source_end;
    } else {
      return absl::FailedPreconditionError(
          absl::StrCat("feet: the source's ", kLegNames[f],
                       " chain has no foot joint (thigh, calf, foot)"));
    }
    const int nt = static_cast<int>(chain->target.size());
    if (nt >= 3) {
      leg.thigh = chain->target[0];
      leg.calf = chain->target[nt - 2];
      leg.foot = chain->target[nt - 1];
      leg.foot_offset =
          Relative(target, target.rest_pose(), leg.calf, leg.foot).translation;
    } else if (nt == 2 && chain->target_end.has_value()) {
      leg.thigh = chain->target[0];
      leg.calf = chain->target[1];
      leg.foot_offset = *chain->target_end;
    } else {
      return absl::FailedPreconditionError(
          absl::StrCat("feet: the target's ", kLegNames[f],
                       " chain has no foot (a joint or tip below the calf)"));
    }
    // The chain as TwoBoneIkJob sees it: thigh, calf (through any joints
    // between), foot point.
    SkeletonDesc desc;
    desc.joint_names = {"thigh", "calf", "foot"};
    desc.parents = {kNoParent, 0, 1};
    desc.rest_pose = {target.rest_pose()[leg.thigh],
                      Relative(target, target.rest_pose(), leg.thigh, leg.calf),
                      Transform::Identity()};
    desc.rest_pose[2].translation = leg.foot_offset;
    absl::StatusOr<Skeleton> ik = Skeleton::Create(std::move(desc));
    if (!ik.ok()) return ik.status();
    leg.ik = *std::move(ik);

    const Eigen::Vector3f s0 = src_rest[chain->source[0]].translation;
    const Eigen::Vector3f s1 = src_rest[chain->source[1]].translation;
    const Eigen::Vector3f s2 = src_rest[leg.source_foot].translation;
    src_sum += (s1 - s0).norm() + (s2 - s1).norm();
    const Eigen::Vector3f t0 = tgt_rest[leg.thigh].translation;
    const Eigen::Vector3f t1 = tgt_rest[leg.calf].translation;
    const Eigen::Vector3f t2 =
        tgt_rest[leg.calf].TransformPoint(leg.foot_offset);
    tgt_sum += (t1 - t0).norm() + (t2 - t1).norm();
  }
  out.source_leg_length_ = src_sum / kRetargetFeet;
  out.target_leg_length_ = tgt_sum / kRetargetFeet;
  if (!(out.source_leg_length_ > 0.0f && out.target_leg_length_ > 0.0f)) {
    return absl::FailedPreconditionError(
        "feet: a leg of zero length has no contacts to detect");
  }
  return out;
}

absl::Status RetargetFeetJob::Validate() const {
  if (feet == nullptr) return absl::InvalidArgumentError("feet: null");
  RetargetJob transfer;
  transfer.map = map;
  transfer.source_skeleton = source_skeleton;
  transfer.target_skeleton = target_skeleton;
  transfer.source = source;
  transfer.input = input;
  transfer.output = output;
  if (absl::Status s = transfer.Validate(); !s.ok()) return s;
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  if (!(std::isfinite(dt) && dt >= 0.0f)) {
    return absl::InvalidArgumentError(
        absl::StrCat("dt: ", dt, " must be finite and >= 0"));
  }
  if (state != nullptr && state->started) {
    if (!std::isfinite(state->source_floor)) {
      return absl::InvalidArgumentError("state.source_floor: NaN or infinite");
    }
    for (int f = 0; f < kRetargetFeet; ++f) {
      const RetargetFootState& s = state->feet[f];
      if (!s.previous_source.allFinite() || !s.lock.allFinite() ||
          !(s.release >= 0.0f && s.release <= 1.0f)) {
        return absl::InvalidArgumentError(
            absl::StrCat("state.feet[", f,
                         "]: positions must be finite and release in [0, 1]"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status RetargetFeetJob::Run() const {
  if (absl::Status s = Validate(); !s.ok()) return s;
  if (output.data() != input.data()) {
    std::copy(input.begin(), input.end(), output.begin());
  }
  const std::vector<Transform> src_model = ModelOf(*source_skeleton, source);
  const std::vector<Transform> tgt_model = ModelOf(*target_skeleton, output);
  const float ls = feet->source_leg_length();
  const float scale = map->root_scale();
  const Eigen::Vector3f src_pelvis =
      src_model[map->source_pelvis()].translation;
  const Eigen::Vector3f tgt_pelvis =
      tgt_model[map->target_pelvis()].translation;

  RetargetFeetState next;
  const bool first = state == nullptr || !state->started;
  if (!first) next = *state;
  next.started = true;
  if (options.source_floor.has_value()) {
    next.source_floor = *options.source_floor;
  } else {
    for (int f = 0; f < kRetargetFeet; ++f) {
      const float y = src_model[feet->legs()[f].source_foot].translation.y();
      next.source_floor = first && f == 0 ? y : std::min(next.source_floor, y);
    }
  }
  RetargetFeetResult res;
  std::array<float, kRetargetFeet> reach = {};
  // Per foot: the free goal, and how much of the lock is in the goal (1
  // held, 0 free, between while a release eases out).
  std::array<Eigen::Vector3f, kRetargetFeet> free_goal;
  std::array<float, kRetargetFeet> held = {};
  for (int f = 0; f < kRetargetFeet; ++f) {
    const RetargetFeet::Leg& leg = feet->legs()[f];
    RetargetFootState& foot = next.feet[f];
    const Eigen::Vector3f p = src_model[leg.source_foot].translation;
    const float height = p.y() - next.source_floor;
    const float speed =
        first || dt <= 0.0f ? 0.0f : (p - foot.previous_source).norm() / dt;
    foot.previous_source = p;
    const float k = foot.contact ? options.hysteresis : 1.0f;
    const bool contact = height < k * options.contact_height * ls &&
                         speed < k * options.contact_speed * ls;
    // The free goal: the transfer's own foot point, or toward the scaled
    // source's.
    const Transform& calf = tgt_model[leg.calf];
    const Eigen::Vector3f transferred = calf.TransformPoint(leg.foot_offset);
    const Eigen::Vector3f scaled = tgt_pelvis + (p - src_pelvis) * scale;
    const Eigen::Vector3f free =
        transferred + (scaled - transferred) * options.scaled_source_weight;
    if (contact && !foot.contact) {
      foot.locked = true;
      foot.lock = free;
      foot.release = 0.0f;
    } else if (!contact && foot.contact && foot.locked) {
      foot.locked = false;
      foot.release = options.release_time > 0.0f ? 1.0f : 0.0f;
    }
    foot.contact = contact;
    free_goal[f] = free;
    if (foot.locked) {
      held[f] = 1.0f;
    } else if (foot.release > 0.0f) {
      held[f] = Smoothstep(foot.release);
      foot.release = std::max(0.0f, foot.release - dt / options.release_time);
    }
    res.goal[f] = Toward(free, foot.lock, held[f]);
    res.contact[f] = foot.contact;
    res.locked[f] = foot.locked;
    reach[f] = (calf.translation - tgt_model[leg.thigh].translation).norm() +
               (transferred - calf.translation).norm();
  }

  // The pelvis goes down, never up, as far as a held foot needs to be
  // within its leg's reach (FinalIK's grounder lowers it so): a pelvis
  // placed by the leg-length ratio can stand a little higher than the
  // target's straight legs allow where the rigs' hips differ.
  float drop = 0.0f;
  for (int f = 0; f < kRetargetFeet; ++f) {
    if (!(held[f] > 0.0f)) continue;
    const Eigen::Vector3f hip = tgt_model[feet->legs()[f].thigh].translation;
    const Eigen::Vector3f d = res.goal[f] - hip;
    const float across = d.x() * d.x() + d.z() * d.z();
    const float r2 = reach[f] * reach[f];
    if (d.squaredNorm() <= r2 || across >= r2) continue;
    drop = std::max(drop, -d.y() - std::sqrt(r2 - across));
  }
  std::vector<Transform> model = tgt_model;
  if (drop > 0.0f) {
    const int pelvis = map->target_pelvis();
    const int parent = target_skeleton->parent(pelvis);
    const Eigen::Vector3f lowered =
        tgt_pelvis - Eigen::Vector3f::UnitY() * drop;
    output[pelvis].translation =
        parent == kNoParent ? lowered
                            : tgt_model[parent].InverseTransformPoint(lowered);
    model = ModelOf(*target_skeleton, output);
  }
  res.pelvis_drop = drop;

  for (int f = 0; f < kRetargetFeet; ++f) {
    const RetargetFeet::Leg& leg = feet->legs()[f];
    RetargetFootState& foot = next.feet[f];
    // What the drop cannot bring within reach (a foot left behind a
    // striding pelvis) is dragged, the least distance, onto the sphere the
    // leg reaches rather than stretching the leg.
    const Eigen::Vector3f hip = model[leg.thigh].translation;
    // A free foot goes down with the pelvis: its leg keeps the transfer's
    // pose.
    const Eigen::Vector3f free = free_goal[f] - Eigen::Vector3f::UnitY() * drop;
    Eigen::Vector3f goal = Toward(free, foot.lock, held[f]);
    const float d = (goal - hip).norm();
    // (A goal the drop put on the sphere is left alone, rounding aside.)
    if (held[f] > 0.0f && d > reach[f] * (1.0f + kReachRounding)) {
      res.unreachable[f] = true;
      goal = hip + (goal - hip) * (reach[f] / d);
      if (foot.locked) foot.lock = goal;
    }
    res.goal[f] = goal;

    // The leg as a three-joint chain, solved, then written back.
    const Transform calf_local =
        Relative(*target_skeleton, output, leg.thigh, leg.calf);
    std::array<Transform, 3> chain = {output[leg.thigh], calf_local,
                                      Transform::Identity()};
    chain[2].translation = leg.foot_offset;
    std::array<Transform, 3> solved = chain;
    TwoBoneIkJob ik;
    ik.skeleton = &leg.ik;
    ik.input = chain;
    ik.parent_model =
        ParentModelTransformOrRoot(*target_skeleton, output, leg.thigh);
    ik.start_joint = 0;
    ik.mid_joint = 1;
    ik.end_joint = 2;
    ik.target = goal;
    ik.pole_vector = Eigen::Vector3f::Zero();
    ik.output = absl::MakeSpan(solved);
    if (absl::Status s = ik.Run(); !s.ok()) return s;
    const Eigen::Quaternionf foot_model = leg.foot >= 0
                                              ? model[leg.foot].rotation
                                              : Eigen::Quaternionf::Identity();
    output[leg.thigh].rotation = solved[0].rotation;
    // calf_local = between * calf's own local: keep `between`.
    const int calf_parent = target_skeleton->parent(leg.calf);
    const Eigen::Quaternionf between =
        calf_parent == leg.thigh
            ? Eigen::Quaternionf::Identity()
            : Relative(*target_skeleton, output, leg.thigh, calf_parent)
                  .rotation;
    output[leg.calf].rotation =
        Multiply(between.conjugate(), solved[1].rotation).normalized();
    if (leg.foot >= 0) {
      const Transform parent =
          ParentModelTransformOrRoot(*target_skeleton, output, leg.foot);
      output[leg.foot].rotation =
          Multiply(parent.rotation.conjugate(), foot_model).normalized();
    }
  }
  if (next_state != nullptr) *next_state = next;
  if (result != nullptr) *result = res;
  return absl::OkStatus();
}

}  // namespace posewire
