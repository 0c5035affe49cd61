// Joint limits learnt from animation (after the Blade engine's IK notes,
// docs/REFERENCES.md): the range of motion each joint shows in one or more
// clips becomes its limit for CCD and FABRIK.
//
// For every rotation key of every joint, the rotation relative to a
// reference (the rest rotation by default) is decomposed as Euler angles in
// a stated order, or as swing and twist about the rest bone direction; the
// extremes are kept per joint. The reference itself (the rest pose) is
// always inside, as in the Blade notes (each range starts at zero). Observing
// is separate from finalising so clips can be merged first (tools that merge
// skeletons or clips must merge their limits too): merging takes the union
// of the observed ranges.
//
// Finalising widens every range by a margin on each side, then handles the
// seed's warning that a clip in which a knee never bends yields a range too
// small for IK to bend it: any range narrower than `min_range` is widened to
// it around its middle, and the joint is reported in `widened_joints` so the
// caller can supply an authored limit instead. Ranges never wrap: an axis
// whose motion crosses +-180 degrees gets (nearly) its whole circle.
#ifndef POSEWIRE_SOLVER_CORE_CHAIN_IK_LEARNED_LIMITS_H_
#define POSEWIRE_SOLVER_CORE_CHAIN_IK_LEARNED_LIMITS_H_

#include <Eigen/Core>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "solver_core/chain_ik/joint_limits.h"
#include "solver_core/model/clip.h"
#include "solver_core/model/skeleton.h"

namespace posewire {

struct LearnLimitsOptions {
  // kEuler or kSwingTwist.
  JointLimitType type = JointLimitType::kEuler;
  EulerOrder euler_order = EulerOrder::kXYZ;
  // Limits relative to the rest rotation (reference = rest) or to the raw
  // local rotation (reference = identity).
  bool relative_to_rest = true;
  // Radians added on each side of every observed range (5 degrees).
  float margin = 0.0872665f;
  // Smallest width of a finished range, radians (30 degrees); for swing,
  // the smallest cone half-angle is half of it.
  float min_range = 0.523599f;
};

// What the clips showed, before margin and minimum range.
struct ObservedRange {
  // Rotation keys seen (0: the joint is never animated).
  int samples = 0;
  // kEuler: per-axis extremes, indexed by axis (x, y, z). kSwingTwist: the
  // twist extremes in x; y and z unused.
  Eigen::Vector3f min = Eigen::Vector3f::Zero();
  Eigen::Vector3f max = Eigen::Vector3f::Zero();
  // kSwingTwist: the largest swing angle seen.
  float max_swing = 0.0f;
};

struct ObservedRanges {
  JointLimitType type = JointLimitType::kEuler;
  EulerOrder euler_order = EulerOrder::kXYZ;
  bool relative_to_rest = true;
  // One per skeleton joint.
  std::vector<ObservedRange> joints;
};

struct LearnedLimits {
  // One per skeleton joint, ready for CcdIkJob/FabrikIkJob::limits.
  std::vector<JointLimit> limits;
  // Joints with at least one range widened to min_range (never or barely
  // animated), in index order.
  std::vector<int> widened_joints;
};

// Ranges seen in `clip` (validated against `skeleton`). Errors for an
// invalid clip or options.
absl::StatusOr<ObservedRanges> ObserveClip(const Skeleton& skeleton,
                                           const Clip& clip,
                                           const LearnLimitsOptions& options);

// Widens `into` to also cover `other`. Both must come from the same options
// and skeleton size.
absl::Status MergeObservedRanges(ObservedRanges& into,
                                 const ObservedRanges& other);

// Applies margin and minimum range (see file comment).
absl::StatusOr<LearnedLimits> FinalizeLimits(const Skeleton& skeleton,
                                             const ObservedRanges& observed,
                                             const LearnLimitsOptions& options);

// ObserveClip on every clip, merged, finalised. At least one clip.
absl::StatusOr<LearnedLimits> LearnJointLimits(
    const Skeleton& skeleton, absl::Span<const Clip> clips,
    const LearnLimitsOptions& options);

// The twist axis used for `joint` by kSwingTwist learning: the rest
// direction to its first child (for a leaf, from its parent), in the limit's
// reference frame; +Y when that bone has no length.
Eigen::Vector3f RestTwistAxis(const Skeleton& skeleton, int joint,
                              bool relative_to_rest);

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_CHAIN_IK_LEARNED_LIMITS_H_
