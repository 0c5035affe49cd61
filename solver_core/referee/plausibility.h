// A game server's plausibility check of a pose a client claims: could a
// human body have taken it, given the frames before it? It never changes the
// pose; it lists what is implausible.
//
// Checks, each against a threshold of PlausibilityThresholds:
//  - range of motion: each joint's local rotation against its JointLimit
//    (joint_limits.h; typically learnt from clips, learned_limits.h), Euler
//    angles per axis, swing and twist, or hinge angle;
//  - bone length: each joint's offset from its parent (|translation|)
//    against the rest pose's, relative, and its scale against the rest
//    scale;
//  - with the previous frame: each joint's angular velocity (the angle of
//    the local rotation from one frame to the next, over dt) and the root's
//    linear speed and teleport distance (its world position: `placement`
//    applied to joint 0's translation);
//  - with the two previous frames: each joint's angular acceleration (the
//    change of its angular velocity vector, both in the joint's frame at the
//    middle frame) and the root's linear acceleration.
// Distances scale with the rig: root thresholds are in units of `rig_size`
// (RigSize: the rest pose's largest extent, a human's stature in T-pose), so
// the same defaults serve a rig in metres, centimetres or inches. Angular
// thresholds need no scale. Only the range check depends on a rig's own
// limits; every other check applies to any rig as it is.
//
// The measures are the usual finite differences of motion capture analysis
// (Winter, "Biomechanics and Motor Control of Human Movement", ch. 2), on
// unit quaternions as in Grassia, "Practical Parameterization of Rotations
// Using the Exponential Map" (docs/REFERENCES.md).
//
// Deterministic: plain float arithmetic in a fixed order, glibc's
// single-version atan2f and sqrtf. No allocation once `result->violations`
// has capacity for every violation (at most 3 per joint for range, 1 per
// joint for each other joint check, 3 for the root).
#ifndef POSEWIRE_SOLVER_CORE_REFEREE_PLAUSIBILITY_H_
#define POSEWIRE_SOLVER_CORE_REFEREE_PLAUSIBILITY_H_

#include <array>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "solver_core/chain_ik/joint_limits.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"

namespace posewire {

enum class PlausibilityCheck : uint8_t {
  kRangeOfMotion,        // radians: the Euler, twist, swing or hinge angle
  kAngularVelocity,      // radians per second
  kAngularAcceleration,  // radians per second squared
  kBoneLength,           // relative change of |translation| from the rest
  kScale,                // largest per-axis change of scale from the rest
  kRootSpeed,            // rig sizes per second
  kRootAcceleration,     // rig sizes per second squared
  kRootTeleport,         // rig sizes moved in one frame
};

const char* PlausibilityCheckName(PlausibilityCheck check);

// Defaults admit every frame of the human motion capture in tests/data
// (the CMU clips: walk, runs, a leap, jumps, climbing, a pirouette) and the
// glTF game clips, captured or sampled at 60 or 120 Hz, hands, fingers and
// toes left out (PlausibilityJob::joint_checks). That capture holds
// single-frame glitches (a limb turning 30 degrees in 1/120 s and back),
// which set the motion bounds: they are loose, catching gross snaps and
// teleports rather than subtle ones (docs/PERFORMANCE.md has the figures).
struct PlausibilityThresholds {
  // Added on every side of every joint limit, radians (rounding; learnt
  // limits carry their own margin).
  float range_tolerance = 1e-3f;
  // Joint angular speed, rad/s (4,500 deg/s; the clips peak at 4,000).
  float max_angular_velocity = 78.54f;
  // Joint angular acceleration: max_angular_acceleration (rad/s^2;
  // 160,000 deg/s^2) plus rotation_jitter (radians, 42 degrees) / dt^2,
  // the capture noise's share of a second difference, which grows as the
  // tick shrinks: 765,000 deg/s^2 at 120 Hz, 311,000 at 60 Hz.
  float max_angular_acceleration = 2792.5f;
  float rotation_jitter = 0.733f;  // may be 0
  // |translation| against the rest's, relative (5%); bones shorter than
  // 2% of the rig size compare against that length instead.
  float max_bone_length_change = 0.05f;
  // Per-axis scale against the rest scale, absolute.
  float max_scale_change = 0.05f;
  // Root speed, rig sizes per second (7: 12 m/s for a 1.75 m human, a
  // sprinter's top speed).
  float max_root_speed = 7.0f;
  // Root acceleration: max_root_acceleration (rig sizes/s^2) plus
  // position_jitter (rig sizes) / dt^2, as for joints: 316 at 120 Hz, 154
  // at 60 Hz.
  float max_root_acceleration = 100.0f;
  float position_jitter = 0.015f;  // may be 0
  // A teleport: a displacement in one frame over max_root_speed * dt plus
  // this many rig sizes (0.5: 0.9 m for a 1.75 m human).
  float teleport_distance = 0.5f;
};

// The range screens (MakeEulerRangeScreen) of four consecutive joints,
// j .. j + 3, laid out once in rows of four lanes, so that a run loads
// them rather than gathering them joint by joint.
struct EulerRangeScreenGroup {
  // Bit k: joint j + k has no limit (nothing to check).
  int free = 0;
  // Bit k: joint j + k has a usable screen of the group's Euler order (the
  // first usable one's); the others are left to the exact check.
  int computed = 0;
  // The group's order: its axes first to last, and -1 for an odd order.
  int first = 0, middle = 1, last = 2;
  float sigma = 1.0f;
  // Row r, lane k: joint j + k's reference rotation coefficient r (x, y,
  // z, w; the identity outside `computed`), and per axis (x, y, z) its
  // screen's cos_mid, sin_mid and cos_half.
  alignas(16) float reference[4][4] = {};
  alignas(16) float cos_mid[3][4] = {};
  alignas(16) float sin_mid[3][4] = {};
  alignas(16) float cos_half[3][4] = {};
};

// How many groups MakeEulerRangeScreenGroups lays out for `joints`
// limits: one per four joints, group g starting at joint 4g, and when the
// count is no multiple of four a last group of the last four joints (it
// overlaps the one before); none under four joints.
int EulerRangeScreenGroupCount(int joints);

// EulerRangeScreenGroupCount(limits.size()) groups from `screens`:
// MakeEulerRangeScreen of each limit (none when `screens` is not one per
// limit).
std::vector<EulerRangeScreenGroup> MakeEulerRangeScreenGroups(
    absl::Span<const JointLimit> limits,
    absl::Span<const EulerRangeScreen> screens);

// Bits of PlausibilityJob::joint_checks.
enum PlausibilityJointCheck : uint8_t {
  kCheckRange = 1,   // range of motion
  kCheckMotion = 2,  // angular velocity and acceleration
  kCheckBone = 4,    // bone length and scale
  kCheckAll = 7,
};

struct PlausibilityViolation {
  PlausibilityCheck check = PlausibilityCheck::kRangeOfMotion;
  // The joint (0, the root joint, for the root checks).
  int joint = 0;
  // kRangeOfMotion: the Euler axis (0 x, 1 y, 2 z), or for swing-twist and
  // hinge limits 0 twist (or hinge angle), 1 swing (off-axis for a hinge).
  // -1 otherwise.
  int axis = -1;
  // The checked frame's `frame` (the job's), or the frame before it.
  int64_t frame = 0;
  float measured = 0.0f;
  // The bound exceeded (for a range: the limit's min or max, without the
  // tolerance).
  float bound = 0.0f;
};

struct PlausibilityResult {
  bool plausible = true;
  std::vector<PlausibilityViolation> violations;
};

// The rest pose's largest extent along x, y or z in model space (a human's
// stature in T- or A-pose); 1 when the rest pose has no extent.
float RigSize(const Skeleton& skeleton);

// One claimed frame of a character and, optionally, its previous one or
// two frames (same skeleton), most recent first.
struct PlausibilityJob {
  const Skeleton* skeleton = nullptr;
  // The claimed local pose, one transform per joint.
  absl::Span<const Transform> input = {};
  // Set when `input` is known valid (every transform finite with a unit
  // rotation: CheckPose passed, as a service checks each frame's pose once):
  // Validate() then checks only its size.
  bool input_validated = false;
  // The character in the world (root positions and the root's rotation).
  Transform placement = Transform::Identity();
  // Reported in violations (a frame number or tick).
  int64_t frame = 0;

  // The frame before, empty for none, and the seconds from it to `input`.
  absl::Span<const Transform> previous = {};
  Transform previous_placement = Transform::Identity();
  float dt = 0.0f;
  // The frame before `previous` (needs `previous`), empty for none, and
  // the seconds from it to `previous`.
  absl::Span<const Transform> previous2 = {};
  Transform previous2_placement = Transform::Identity();
  float previous_dt = 0.0f;
  // As input_validated, for `previous` and `previous2` (a service checks
  // the frames it keeps once per frame).
  bool previous_validated = false;

  // Empty (no range check) or one per joint; kNone entries are not checked.
  absl::Span<const JointLimit> limits = {};
  // Set when every limit passed ValidateJointLimit (a service checks them
  // once, when the op is compiled): Validate then checks only their count.
  bool limits_validated = false;
  // Empty, or MakeEulerRangeScreen of each limit, built once: a rotation
  // the screen finds surely within its ranges skips the Euler angles. The
  // report is the same with or without (joint_limits.h).
  absl::Span<const EulerRangeScreen> range_screens = {};
  // Empty, or MakeEulerRangeScreenGroups(limits, range_screens) (needs
  // range_screens): the same screens, four joints at a time, laid out once
  // for the screen in lanes. The report is the same with or without.
  absl::Span<const EulerRangeScreenGroup> range_screen_groups = {};
  // Empty (every check on every joint) or one per joint: the
  // PlausibilityJointCheck bits of the checks that apply to it. Rigs leave
  // out what they cannot vouch for: fingers and toes that capture tracks
  // poorly, bones their clips stretch on purpose.
  absl::Span<const uint8_t> joint_checks = {};
  PlausibilityThresholds thresholds = {};
  // The unit of the root thresholds (RigSize(*skeleton) typically), > 0.
  float rig_size = 1.0f;

  // Cleared and filled by Run; `plausible` when no violation.
  PlausibilityResult* result = nullptr;

  // Sizes, finite poses, limits (ValidateJointLimits), finite positive
  // thresholds, rig_size and dts. Errors name the field and joint.
  absl::Status Validate() const;
  absl::Status Run() const;
};

// A character's last two checked frames, most recent first, for a caller
// that checks one frame at a time (a game server's stream of claims). The
// job never keeps them itself: the history is the caller's explicit state.
struct PlausibilityHistory {
  // Frames held, 0 to 2.
  int frames = 0;
  std::array<std::vector<Transform>, 2> poses;
  std::array<Transform, 2> placements = {Transform::Identity(),
                                         Transform::Identity()};
  // dts[i]: seconds from the frame before poses[i] to it; 0 when none or
  // unknown (no motion measure crosses that gap).
  std::array<float, 2> dts = {0.0f, 0.0f};
};

// Points `job`'s previous frames into `history` for a frame `dt` seconds
// after its newest one: the frame before when dt > 0, the one before that
// when its own dt > 0 too. Sets nothing else of the job.
void UseHistory(const PlausibilityHistory& history, float dt,
                PlausibilityJob& job);

// `next` = `history` advanced by one frame: `input` at `placement`, `dt`
// seconds after the newest. `next` must not be `history`; its buffers are
// reused, so a steady stream of frames allocates nothing.
void AdvanceHistory(const PlausibilityHistory& history,
                    absl::Span<const Transform> input,
                    const Transform& placement, float dt,
                    PlausibilityHistory& next);

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_REFEREE_PLAUSIBILITY_H_
