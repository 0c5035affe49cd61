// Rewinding a character to a past time between two recorded poses, for lag
// compensation: a game server tests a shot against the targets as the
// shooter saw them, interpolated between the two server frames around the
// shooter's view time (Valve, "Source Multiplayer Networking" and "Lag
// Compensating Methods in Client/Server In-game Protocol Design";
// docs/REFERENCES.md).
//
// The interpolation is per transform and documented on the wire
// (HitQuery): translation and scale by lerp, a + (b - a) alpha; rotation by
// shortest-path nlerp (quaternion_math.h's NlerpShortest). At alpha 0 and 1
// the result is the recorded transform itself, bit for bit, so a rewind to
// a recorded time answers exactly what was recorded. Everything is plain
// float arithmetic in a fixed order: a client computing the same from the
// poses it recorded gets the same bits.
#ifndef POSEWIRE_SOLVER_CORE_REFEREE_REWIND_H_
#define POSEWIRE_SOLVER_CORE_REFEREE_REWIND_H_

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "solver_core/model/transform.h"

namespace posewire {

// Where `time` lies between `before_time` and `after_time`
// (before_time <= time <= after_time): (time - before_time) /
// (after_time - before_time) in double, rounded once to float and clamped
// to [0, 1]; 1 when the two times are equal (the later frame wins).
float RewindAlpha(double before_time, double after_time, double time);

// One transform at `alpha` between `before` (0) and `after` (1).
Transform InterpolateTransform(const Transform& before, const Transform& after,
                               float alpha);

// Every joint of two poses of one skeleton (model or local) at `alpha`.
struct InterpolatePosesJob {
  absl::Span<const Transform> before = {};
  absl::Span<const Transform> after = {};
  float alpha = 0.0f;  // in [0, 1]
  // Same size as the inputs; may be exactly `before` or `after`.
  absl::Span<Transform> output = {};

  // Sizes match and alpha is in [0, 1]. The poses are not checked
  // (callers pass poses they recorded); a NaN in stays a NaN out.
  absl::Status Validate() const;
  absl::Status Run() const;
};

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_REFEREE_REWIND_H_
