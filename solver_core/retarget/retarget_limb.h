// A two-bone limb of a retarget's target skeleton (thigh, calf and foot;
// upper arm, forearm and hand) as the IK passes after the transfer solve
// it: the feet pass (retarget_feet.h) and the hands pass
// (retarget_hands.h). Internal to solver_core/retarget.
#ifndef POSEWIRE_SOLVER_CORE_RETARGET_RETARGET_LIMB_H_
#define POSEWIRE_SOLVER_CORE_RETARGET_RETARGET_LIMB_H_

#include <Eigen/Geometry>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"
#include "solver_core/retarget/retarget.h"

namespace posewire::retarget_internal {

// The words a pass's errors use, e.g. {"feet", "legs", "foot", "thigh",
// "calf"}.
struct LimbWords {
  absl::string_view pass;
  absl::string_view limbs;
  absl::string_view end;
  absl::string_view upper;
  absl::string_view lower;
};

struct RetargetLimb {
  int source_end = -1;  // the source's foot or hand joint
  int upper = -1;       // target thigh / upper arm
  int lower = -1;       // target calf / forearm
  int end = -1;         // the target's foot / hand joint, or -1 (a point)
  // The end point in `lower`'s space (the end joint's rest offset through
  // any joints between, or the lower bone's tip).
  Eigen::Vector3f end_offset = Eigen::Vector3f::Zero();
  // A three-joint skeleton (upper, lower, end point) for TwoBoneIkJob, from
  // the target's rest pose.
  Skeleton ik;
  // Rest lengths, upper plus lower segment, source and target.
  float source_length = 0.0f;
  float target_length = 0.0f;
};

// The limb of the map's chain `chain_name` ("left_leg", "right_arm", ...).
// INVALID_ARGUMENT when the skeletons are not the map's; FAILED_PRECONDITION
// naming the chain when the map has none, or a side
// has no end joint (fewer than three source joints and no source_end;
// fewer than two target joints, or two without a tip).
absl::StatusOr<RetargetLimb> MakeRetargetLimb(const RetargetMap& map,
                                              const Skeleton& source,
                                              const Skeleton& target,
                                              absl::string_view chain_name,
                                              const LimbWords& words);

// From a to b by w; b itself at w = 1 (a held foot stays put to the bit,
// a hand goal is the scaled source's own point).
inline Eigen::Vector3f Toward(const Eigen::Vector3f& a,
                              const Eigen::Vector3f& b, float w) {
  if (w == 1.0f) return b;
  return a + (b - a) * w;
}

// Model transforms of a local pose.
std::vector<Transform> ModelOf(const Skeleton& s,
                               absl::Span<const Transform> local);

// `joint`'s transform in `ancestor`'s space: the locals strictly below the
// ancestor down to the joint, composed.
Transform Relative(const Skeleton& s, absl::Span<const Transform> local,
                   int ancestor, int joint);

// What a pass after the transfer checks of its inputs: what RetargetJob
// checks of the same map, skeletons and poses.
absl::Status ValidatePassInputs(const RetargetMap* map,
                                const Skeleton* source_skeleton,
                                const Skeleton* target_skeleton,
                                absl::Span<const Transform> source,
                                absl::Span<const Transform> input,
                                absl::Span<Transform> output);

// Turns the limb's upper and lower joints of `pose` (bone lengths kept; the
// lower joint keeps its bend plane: hinge from the pose, no pole) so that
// its end point is at `goal`, or as near as the limb reaches. The end
// joint keeps `end_model_rotation`; joints between upper and lower keep
// their locals.
absl::Status SolveRetargetLimb(const RetargetLimb& limb,
                               const Skeleton& skeleton,
                               const Eigen::Vector3f& goal,
                               const Eigen::Quaternionf& end_model_rotation,
                               absl::Span<Transform> pose);

}  // namespace posewire::retarget_internal

#endif  // POSEWIRE_SOLVER_CORE_RETARGET_RETARGET_LIMB_H_
