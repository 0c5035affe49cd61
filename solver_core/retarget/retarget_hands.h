// Retargeting's arm IK pass: after RetargetJob has transferred a frame (and
// the feet pass, if any, has placed the pelvis), each target hand is put
// where the scaled source puts it, so that hands meet what the source's
// hands met (a prop held in both hands, a clap, a hand on a hip) although
// the target's arms and shoulders have other proportions. After the hand
// IK goals of Unreal's IK Retargeter (docs/REFERENCES.md).
//
// Arms: the map's chains named "left_arm" and "right_arm" (detected, or
// named so in an explicit mapping): upper arm, forearm and hand joint (or
// the forearm's tip), as the feet pass reads legs.
//
// Per frame, per hand (model space; the map assumes both skeletons share
// axes):
// - Goal: the transfer's own hand point moved by scaled_source_weight
//   toward the scaled source hand: the target pelvis (as placed so far)
//   plus the source hand's offset from the source pelvis times the map's
//   root scale, the same scale that carries the pelvis.
// - IK: TwoBoneIkJob turns the upper arm and forearm (hinge from the pose,
//   no pole: the elbow keeps its bend plane) so the hand point is at the
//   goal; bone lengths are untouched. A goal beyond the arm's reach leaves
//   the arm straight toward it, one nearer the shoulder than the folded
//   arm reaches leaves it folded (the result reports both). The hand joint
//   keeps the model rotation the transfer gave it; joints between upper
//   arm and forearm (twist bones) keep their locals.
// The pass has no state: each frame stands alone.
#ifndef POSEWIRE_SOLVER_CORE_RETARGET_RETARGET_HANDS_H_
#define POSEWIRE_SOLVER_CORE_RETARGET_RETARGET_HANDS_H_

#include <Eigen/Geometry>
#include <array>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"
#include "solver_core/retarget/retarget.h"
#include "solver_core/retarget/retarget_limb.h"

namespace posewire {

inline constexpr int kRetargetHands = 2;  // left, right

struct RetargetHandsOptions {
  // From the transfer's own hand point (0) to the scaled source's (1, the
  // default: the pass's purpose). In [0, 1].
  float scaled_source_weight = 1.0f;

  // Errors name the field, e.g. "hands.scaled_source_weight: 2 must be in
  // [0, 1]".
  absl::Status Validate() const;
};

struct RetargetHandsResult {
  // Where each target hand point was solved to, model space.
  std::array<Eigen::Vector3f, kRetargetHands> goal = {};
  // The goal was out of the arm's reach (beyond the straight arm, or
  // nearer the shoulder than the folded arm): the hand is as near as the
  // arm allows.
  std::array<bool, kRetargetHands> unreachable = {};
};

// The arms of a RetargetMap, compiled once.
class RetargetHands {
 public:
  // FAILED_PRECONDITION when the map has no left_arm and right_arm chains
  // or an arm has no hand on either side, naming the chain.
  static absl::StatusOr<RetargetHands> Create(const RetargetMap& map,
                                              const Skeleton& source,
                                              const Skeleton& target);
  RetargetHands() = default;

  // Left, then right.
  const std::array<retarget_internal::RetargetLimb, kRetargetHands>& arms()
      const {
    return arms_;
  }

 private:
  std::array<retarget_internal::RetargetLimb, kRetargetHands> arms_;
};

// Runs the pass on one frame. `output` may be `input`.
struct RetargetHandsJob {
  const RetargetMap* map = nullptr;
  const RetargetHands* hands = nullptr;
  const Skeleton* source_skeleton = nullptr;
  const Skeleton* target_skeleton = nullptr;
  // The source's local pose of this frame.
  absl::Span<const Transform> source;
  // The target pose so far (RetargetJob's output, then the feet pass's).
  absl::Span<const Transform> input;
  absl::Span<Transform> output;
  RetargetHandsOptions options;
  RetargetHandsResult* result = nullptr;  // optional

  absl::Status Validate() const;
  absl::Status Run() const;
};

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_RETARGET_RETARGET_HANDS_H_
