// Grounding: plants a character's feet on the real ground instead of the
// flat floor its clip was recorded on, after FinalIK's Grounder
// (GrounderIK / Grounding, docs/REFERENCES.md).
//
// Model space is Y-up unless `up` says otherwise (a Z-up DCC rig gives
// up = +Z); the clip was recorded on the plane at floor_height along up.
// Every formula below is written for +Y: with another up the job turns the
// problem so that up becomes +Y (the pelvis's parent transform and the
// samples), which changes no local result beyond float rounding.
// Each leg is a hip (thigh), knee and ankle (foot) joint, each a proper
// descendant of the previous, with an optional toe under the ankle; legs
// hang under one pelvis joint and none lies under another leg. Any number
// of legs (up to kMaxGroundLegs): bipeds and quadrupeds alike.
//
// The ground under each foot comes either from the caller, as a game engine
// would raycast it (a hit point and normal per leg, or a miss), or from a
// Heightfield the job samples itself (under the ankle and under the toe,
// the higher of the two, so a foot over a step's edge rests on the step).
// A sample is taken as the plane through its point with its normal.
//
// Solve, per frame, in FinalIK's order:
// - Foot offsets. Each foot's tilt is the ground normal, turned back toward
//   +Y to at most max_tilt radians. A foot whose ankle is h above the clip's
//   floor (the input pose) is placed so that its ankle is h from the ground
//   plane along the tilted normal, straight above or below where the clip
//   put it: its sole, which lay on the clip's floor, then lies on the
//   ground. The offset is that vertical move. A miss, or an offset beyond
//   max_step_height either way, leaves the foot to the clip (offset 0, no
//   tilt), as FinalIK's maxStep does.
// - Pelvis. Lowered by the lowest foot offset, so that the foot with the
//   lowest ground can still reach it; never raised above the clip (FinalIK
//   with liftPelvisWeight 0).
// - Smoothing (optional, explicit state): with `state` given and dt > 0,
//   the pelvis offset moves toward its target by min(1, pelvis_speed * dt)
//   of the way each frame and each foot offset by min(1, foot_speed * dt),
//   as FinalIK's pelvisSpeed and footSpeed lerps do; a speed of 0 means no
//   smoothing for that part. Smoothing may leave the pelvis too high for a
//   grounded foot to reach its ground; the pelvis then goes down as far as
//   that leg needs (nearly straight), so feet never float to keep the pelvis
//   smooth. The offsets used are written to `next_state`; a zero state is
//   the clip itself. Foot smoothing lags a planted foot whenever its ground
//   moves relative to the clip's floor (the character controller climbing a
//   ramp under it) by that speed / foot_speed: it is meant to soften a
//   swinging foot's jump over a step's edge, and is off by default.
// - Legs. Each leg is solved with TwoBoneIkJob (no pole: the knee keeps
//   its own bend plane) to its ankle target, the ankle's model rotation
//   turned from +Y onto the foot's tilt.
//
// Flat ground at the clip's floor (every sample a hit at y = floor_height
// with normal exactly +Y) gives zero offsets and no tilt, and then the job
// writes nothing: the output is the input bit for bit.
#ifndef POSEWIRE_SOLVER_CORE_ANALYTIC_IK_GROUND_H_
#define POSEWIRE_SOLVER_CORE_ANALYTIC_IK_GROUND_H_

#include <Eigen/Geometry>
#include <array>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"

namespace posewire {

inline constexpr int kMaxGroundLegs = 8;

// A regular grid of ground heights over the model's x-z plane: sample
// (column c, row r) lies at (origin_x + c * spacing, heights[r * columns +
// c], origin_z + r * spacing). Between samples the ground is bilinear;
// outside the grid there is none (a miss).
struct Heightfield {
  int columns = 0;       // samples along x, >= 2
  int rows = 0;          // samples along z, >= 2
  float spacing = 0.0f;  // > 0, finite
  float origin_x = 0.0f;
  float origin_z = 0.0f;
  absl::Span<const float> heights = {};  // rows * columns, row by row

  // Checks the sizes, the spacing, the origin and every height; errors name
  // the field, e.g. "ground.heightfield.spacing: 0 is not finite and > 0".
  absl::Status Validate() const;

  // The ground at (x, z): false outside the grid; otherwise the bilinear
  // height and the unit normal of the bilinear patch there.
  bool Sample(float x, float z, float* height, Eigen::Vector3f* normal) const;
};

// One leg's joints (indices into the skeleton).
struct GroundLeg {
  int hip = -1;
  int knee = -1;
  int ankle = -1;
  int toe = -1;  // optional: -1 for none
};

// The ground under one foot, model space.
struct GroundSample {
  bool hit = false;
  Eigen::Vector3f point = Eigen::Vector3f::Zero();
  // Need not be unit; must point up (normal . up > 0) for a hit.
  Eigen::Vector3f normal = Eigen::Vector3f::UnitY();
};

// What lasts from frame to frame when smoothing: the offsets last used.
struct GroundState {
  float pelvis_offset = 0.0f;
  std::array<float, kMaxGroundLegs> foot_offsets = {};
};

struct GroundResult {
  // The pelvis's vertical move (<= 0) and each foot's, after smoothing.
  float pelvis_offset = 0.0f;
  std::array<float, kMaxGroundLegs> foot_offsets = {};
  // Legs placed on ground (a hit within max_step_height).
  int grounded_legs = 0;
  // Some foot's tilt was held at max_tilt.
  bool tilt_clamped = false;
  // 1 for a solve, 0 when nothing was written.
  int iterations = 0;
};

struct GroundJob {
  // Inputs.
  const Skeleton* skeleton = nullptr;
  absl::Span<const Transform> input = {};
  // Set when `input` is known valid (every transform finite with a unit
  // rotation: CheckPose passed, as a service checks each frame's pose once):
  // Validate() then checks only its size.
  bool input_validated = false;
  // The model-space transform of the pelvis's parent, as
  // ParentModelTransformOrRoot computes it (identity when it is a root).
  Transform parent_model = Transform::Identity();

  int pelvis = -1;
  absl::Span<const GroundLeg> legs = {};

  // One per leg, or empty when `heightfield` is set (not both).
  absl::Span<const GroundSample> samples = {};
  // Over the x-z plane: only with up along +Y.
  const Heightfield* heightfield = nullptr;
  // Model space's up direction: finite, not zero, need not be unit. A
  // hit's normal must point along it (normal . up > 0); floor_height and
  // max_step_height are measured along it.
  Eigen::Vector3f up = Eigen::Vector3f::UnitY();

  // Parameters: finite.
  // The height of the floor the clip was recorded on.
  float floor_height = 0.0f;
  // Offsets beyond this (> 0) either way leave the foot to the clip.
  float max_step_height = 1.0f;
  // Radians in [0, pi/2]: how far a foot tilts toward the ground normal.
  float max_tilt = 0.7853982f;  // 45 degrees, FinalIK's maxFootRotationAngle
  // Blend from the clip (0) to the grounded pose (1), clamped to [0, 1].
  float weight = 1.0f;
  // Smoothing rates, per second (>= 0; 0 = none), and the frame time.
  float pelvis_speed = 0.0f;
  float foot_speed = 0.0f;
  float dt = 0.0f;
  const GroundState* state = nullptr;

  // Outputs.
  // May be the same memory as `input`, but must not otherwise overlap it.
  absl::Span<Transform> output = {};
  GroundState* next_state = nullptr;  // optional; may be `state`
  GroundResult* result = nullptr;     // optional

  // Checks the skeleton, sizes, the legs (in range, parent chains under the
  // pelvis, apart from each other), the samples (finite, a hit's normal
  // pointing up), the heightfield, the parameters, the state and the input
  // pose. Errors name the field, e.g. "ground.legs[1].knee: joint 3 'hip'
  // is not a descendant of legs[1].hip ...".
  absl::Status Validate() const;
  // Validates, then solves.
  absl::Status Run() const;
};

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_ANALYTIC_IK_GROUND_H_
