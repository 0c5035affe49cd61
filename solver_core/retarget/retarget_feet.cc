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

using retarget_internal::LimbWords;
using retarget_internal::MakeRetargetLimb;
using retarget_internal::ModelOf;
using retarget_internal::RetargetLimb;
using retarget_internal::SolveRetargetLimb;
using retarget_internal::Toward;
using retarget_internal::ValidatePassInputs;

// Relative distance beyond a leg's reach that is rounding, not a drag.
constexpr float kReachRounding = 1e-5f;

constexpr const char* kLegNames[kRetargetFeet] = {"left_leg", "right_leg"};
constexpr LimbWords kLegWords = {.pass = "feet",
                                 .limbs = "legs",
                                 .end = "foot",
                                 .upper = "thigh",
                                 .lower = "calf"};

absl::Status CheckNonNegative(float v, absl::string_view field) {
  if (std::isfinite(v) && v >= 0.0f) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": ", v, " must be finite and >= 0"));
}

float Smoothstep(float t) { return t * t * (3.0f - 2.0f * t); }

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
  RetargetFeet out;
  float src_sum = 0.0f;
  float tgt_sum = 0.0f;
  for (int f = 0; f < kRetargetFeet; ++f) {
    absl::StatusOr<RetargetLimb> leg =
        MakeRetargetLimb(map, source, target, kLegNames[f], kLegWords);
    if (!leg.ok()) return leg.status();
    out.legs_[f] = *std::move(leg);
    src_sum += out.legs_[f].source_length;
    tgt_sum += out.legs_[f].target_length;
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
  if (absl::Status s = ValidatePassInputs(map, source_skeleton, target_skeleton,
                                          source, input, output);
      !s.ok()) {
    return s;
  }
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
      const float y = src_model[feet->legs()[f].source_end].translation.y();
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
    const RetargetLimb& leg = feet->legs()[f];
    RetargetFootState& foot = next.feet[f];
    const Eigen::Vector3f p = src_model[leg.source_end].translation;
    const float height = p.y() - next.source_floor;
    const float speed =
        first || dt <= 0.0f ? 0.0f : (p - foot.previous_source).norm() / dt;
    foot.previous_source = p;
    const float k = foot.contact ? options.hysteresis : 1.0f;
    const bool contact = height < k * options.contact_height * ls &&
                         speed < k * options.contact_speed * ls;
    // The free goal: the transfer's own foot point, or toward the scaled
    // source's.
    const Transform& calf = tgt_model[leg.lower];
    const Eigen::Vector3f transferred = calf.TransformPoint(leg.end_offset);
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
    reach[f] = (calf.translation - tgt_model[leg.upper].translation).norm() +
               (transferred - calf.translation).norm();
  }

  // The pelvis goes down, never up, as far as a held foot needs to be
  // within its leg's reach (FinalIK's grounder lowers it so): a pelvis
  // placed by the leg-length ratio can stand a little higher than the
  // target's straight legs allow where the rigs' hips differ.
  float drop = 0.0f;
  for (int f = 0; f < kRetargetFeet; ++f) {
    if (!(held[f] > 0.0f)) continue;
    const Eigen::Vector3f hip = tgt_model[feet->legs()[f].upper].translation;
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
    const RetargetLimb& leg = feet->legs()[f];
    RetargetFootState& foot = next.feet[f];
    // What the drop cannot bring within reach (a foot left behind a
    // striding pelvis) is dragged, the least distance, onto the sphere the
    // leg reaches rather than stretching the leg.
    const Eigen::Vector3f hip = model[leg.upper].translation;
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

    const Eigen::Quaternionf foot_model =
        leg.end >= 0 ? model[leg.end].rotation : Eigen::Quaternionf::Identity();
    if (absl::Status s =
            SolveRetargetLimb(leg, *target_skeleton, goal, foot_model, output);
        !s.ok()) {
      return s;
    }
  }
  if (next_state != nullptr) *next_state = next;
  if (result != nullptr) *result = res;
  return absl::OkStatus();
}

}  // namespace posewire
