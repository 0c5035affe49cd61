#include "solver_core/retarget/retarget_hands.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace posewire {
namespace {

using retarget_internal::LimbWords;
using retarget_internal::MakeRetargetLimb;
using retarget_internal::ModelOf;
using retarget_internal::RetargetLimb;
using retarget_internal::SolveRetargetLimb;
using retarget_internal::Toward;
using retarget_internal::ValidatePassInputs;

constexpr const char* kArmNames[kRetargetHands] = {"left_arm", "right_arm"};
constexpr LimbWords kArmWords = {.pass = "hands",
                                 .limbs = "arms",
                                 .end = "hand",
                                 .upper = "upper arm",
                                 .lower = "forearm"};

// Relative distance beyond an arm's reach that is rounding, not a miss.
constexpr float kReachRounding = 1e-5f;

}  // namespace

absl::Status RetargetHandsOptions::Validate() const {
  if (!(scaled_source_weight >= 0.0f && scaled_source_weight <= 1.0f)) {
    return absl::InvalidArgumentError(
        absl::StrCat("hands.scaled_source_weight: ", scaled_source_weight,
                     " must be in [0, 1]"));
  }
  return absl::OkStatus();
}

absl::StatusOr<RetargetHands> RetargetHands::Create(const RetargetMap& map,
                                                    const Skeleton& source,
                                                    const Skeleton& target) {
  RetargetHands out;
  for (int h = 0; h < kRetargetHands; ++h) {
    absl::StatusOr<RetargetLimb> arm =
        MakeRetargetLimb(map, source, target, kArmNames[h], kArmWords);
    if (!arm.ok()) return arm.status();
    out.arms_[h] = *std::move(arm);
  }
  return out;
}

absl::Status RetargetHandsJob::Validate() const {
  if (hands == nullptr) return absl::InvalidArgumentError("hands: null");
  if (absl::Status s = ValidatePassInputs(map, source_skeleton, target_skeleton,
                                          source, input, output);
      !s.ok()) {
    return s;
  }
  return options.Validate();
}

absl::Status RetargetHandsJob::Run() const {
  if (absl::Status s = Validate(); !s.ok()) return s;
  if (output.data() != input.data()) {
    std::copy(input.begin(), input.end(), output.begin());
  }
  const std::vector<Transform> src_model = ModelOf(*source_skeleton, source);
  // Solving one arm moves nothing of the other (arms do not share joints
  // below the shoulders), so one model pose serves both.
  const std::vector<Transform> tgt_model = ModelOf(*target_skeleton, output);
  const Eigen::Vector3f src_pelvis =
      src_model[map->source_pelvis()].translation;
  const Eigen::Vector3f tgt_pelvis =
      tgt_model[map->target_pelvis()].translation;
  const float scale = map->root_scale();
  RetargetHandsResult res;
  for (int h = 0; h < kRetargetHands; ++h) {
    const RetargetLimb& arm = hands->arms()[h];
    const Transform& forearm = tgt_model[arm.lower];
    const Eigen::Vector3f transferred = forearm.TransformPoint(arm.end_offset);
    const Eigen::Vector3f scaled =
        tgt_pelvis +
        (src_model[arm.source_end].translation - src_pelvis) * scale;
    const Eigen::Vector3f goal =
        Toward(transferred, scaled, options.scaled_source_weight);
    const Eigen::Vector3f shoulder = tgt_model[arm.upper].translation;
    const float upper = (forearm.translation - shoulder).norm();
    const float lower = (transferred - forearm.translation).norm();
    const float d = (goal - shoulder).norm();
    res.goal[h] = goal;
    // Too far for the straight arm, or too near for the folded one (an arm
    // whose forearm is much longer than its upper arm cannot bring the
    // hand to the shoulder).
    res.unreachable[h] = d > (upper + lower) * (1.0f + kReachRounding) ||
                         d < std::fabs(upper - lower) * (1.0f - kReachRounding);
    const Eigen::Quaternionf hand_model = arm.end >= 0
                                              ? tgt_model[arm.end].rotation
                                              : Eigen::Quaternionf::Identity();
    if (absl::Status s =
            SolveRetargetLimb(arm, *target_skeleton, goal, hand_model, output);
        !s.ok()) {
      return s;
    }
  }
  if (result != nullptr) *result = res;
  return absl::OkStatus();
}

}  // namespace posewire
