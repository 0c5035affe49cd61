// Retargeting's leg IK pass: after RetargetJob has transferred a frame, the
// target's feet are held still while the source's feet are planted, so
// that a target whose proportions differ from the source's does not slide
// its feet; optionally (scaled_source_weight) they are also put where the
// scaled source puts them. After the IK goals and
// foot locking of Unreal's IK Retargeter (docs/REFERENCES.md): contacts are
// detected on the source, as Kovar, Schreiner and Gleicher's footskate
// cleanup detects its constraints (a foot low and slow), and each leg is
// solved by analytic two-bone IK.
//
// Legs: the map's chains named "left_leg" and "right_leg" (detected, or
// named so in an explicit mapping). The source foot is the leg chain's
// third joint, or the joint its calf ends at (RetargetChain::source_end);
// the target foot is the chain's last joint below the calf, or the point
// its calf ends at (a glTF calf tip, RetargetChain::target_end). Model
// space is Y-up, as the map assumes both skeletons share axes.
//
// Per frame, per foot:
// - Contact (source). Height h above the source's floor (given, or the
//   lowest source foot height seen so far: the state keeps it) and speed v
//   (distance from the previous frame's source foot over dt) are compared
//   with contact_height and contact_speed times the source's leg length. A
//   contact begins when both are below, and lasts while both stay below
//   `hysteresis` times those (so a foot on the threshold does not flicker).
//   The first frame (no previous foot) takes v = 0.
// - Goal. The free goal is the foot point as the transfer put it, moved
//   by scaled_source_weight toward the scaled source foot: the target
//   pelvis (as RetargetJob placed it) plus the source foot's offset from
//   the source pelvis times the root scale. When a contact begins the free
//   goal there is locked; while the contact lasts the goal is the lock.
//   When it ends, the goal eases from the lock back to the free goal over
//   release_time seconds (a smoothstep; release_time 0 snaps), so the foot
//   never jumps.
// - Pelvis. Lowered, never raised, as far as the held feet (locked or
//   easing out) need to be within their legs' reach (FinalIK's grounder
//   lowers it so, docs/REFERENCES.md): a pelvis placed by the leg-length
//   ratio can stand higher than the target's straight legs allow where the
//   rigs' hips differ. A free foot's goal goes down with it, so a free leg
//   keeps the transfer's pose. What the drop cannot bring within reach (a
//   foot left behind a striding pelvis) is dragged onto the sphere the leg
//   reaches (the result reports it) rather than stretching the leg.
// - IK. TwoBoneIkJob turns thigh and calf (hinge from the pose, no pole:
//   the knee keeps its own bend plane) so the foot point is at the goal;
//   bone lengths are untouched. A foot joint keeps the model rotation the
//   transfer gave it. Joints between thigh and calf (twist bones) keep
//   their local transforms.
//
// Everything that lasts between frames is RetargetFeetState, passed in
// (`state`, null for a first frame) and out (`next_state`): the source
// floor, each source foot's last position, contact, lock and release.
#ifndef POSEWIRE_SOLVER_CORE_RETARGET_RETARGET_FEET_H_
#define POSEWIRE_SOLVER_CORE_RETARGET_RETARGET_FEET_H_

#include <Eigen/Geometry>
#include <array>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"
#include "solver_core/retarget/retarget.h"
#include "solver_core/retarget/retarget_limb.h"

namespace posewire {

inline constexpr int kRetargetFeet = 2;  // left, right

struct RetargetFeetOptions {
  // A foot is low below this times the source's leg length above the
  // source's floor. The default, 0.2, is about 18 cm on a 0.9 m leg: above
  // the ankle of a runner planted on the ball of the foot (CMU run_leap,
  // about 0.15), below a foot lifted over a step. Speed is the sharper
  // test; height keeps a slow foot in the air (a jump's apex) unplanted.
  float contact_height = 0.2f;
  // A foot is slow below this many source leg lengths per second (default
  // 0.5, about 0.45 m/s for a human leg; a swinging foot moves at several).
  float contact_speed = 0.5f;
  // A contact lasts while height and speed stay below this (>= 1) times
  // the thresholds above.
  float hysteresis = 1.5f;
  // Seconds over which a released lock eases back to the free goal.
  float release_time = 0.1f;
  // The free goal (a foot in no contact, and where a contact locks): from
  // the transfer's own foot point (0) to the scaled source's (1). 0 keeps
  // the legs' directions the source's away from contacts; 1 keeps the
  // feet where the scaled source puts them (the target's legs then bend
  // to the source's proportions). In [0, 1].
  float scaled_source_weight = 0.0f;
  // The source's floor height (model y); unset: the lowest source foot
  // height seen so far.
  std::optional<float> source_floor;

  // Errors name the field, e.g. "feet.contact_speed: -1 must be finite and
  // >= 0".
  absl::Status Validate() const;
};

// One foot's state between frames.
struct RetargetFootState {
  Eigen::Vector3f previous_source = Eigen::Vector3f::Zero();
  bool contact = false;
  bool locked = false;
  // Target model position held while locked, and eased from after.
  Eigen::Vector3f lock = Eigen::Vector3f::Zero();
  // Weight of `lock` still in the goal after a contact ends, 1 to 0.
  float release = 0.0f;
};

struct RetargetFeetState {
  // False: nothing seen yet (the same as no state).
  bool started = false;
  float source_floor = 0.0f;
  std::array<RetargetFootState, kRetargetFeet> feet = {};
};

struct RetargetFeetResult {
  std::array<bool, kRetargetFeet> contact = {};
  std::array<bool, kRetargetFeet> locked = {};
  // Where each target foot point was solved to, model space.
  std::array<Eigen::Vector3f, kRetargetFeet> goal = {};
  // A held foot dragged this frame because the leg could not reach it.
  std::array<bool, kRetargetFeet> unreachable = {};
  // How far the pelvis was lowered for the held feet (>= 0).
  float pelvis_drop = 0.0f;
};

// The legs of a RetargetMap, compiled once.
class RetargetFeet {
 public:
  // FAILED_PRECONDITION when the map has no left_leg and right_leg chains
  // or a leg has no foot on either side (fewer than two target joints, no
  // source foot joint), naming the chain.
  static absl::StatusOr<RetargetFeet> Create(const RetargetMap& map,
                                             const Skeleton& source,
                                             const Skeleton& target);
  RetargetFeet() = default;

  float source_leg_length() const { return source_leg_length_; }
  float target_leg_length() const { return target_leg_length_; }

  // Left, then right.
  const std::array<retarget_internal::RetargetLimb, kRetargetFeet>& legs()
      const {
    return legs_;
  }

 private:
  std::array<retarget_internal::RetargetLimb, kRetargetFeet> legs_;
  float source_leg_length_ = 0.0f;
  float target_leg_length_ = 0.0f;
};

// Runs the pass on one frame. `output` may be `input`, as with RetargetJob.
struct RetargetFeetJob {
  const RetargetMap* map = nullptr;
  const RetargetFeet* feet = nullptr;
  const Skeleton* source_skeleton = nullptr;
  const Skeleton* target_skeleton = nullptr;
  // The source's local pose of this frame.
  absl::Span<const Transform> source;
  // RetargetJob's output for it.
  absl::Span<const Transform> input;
  absl::Span<Transform> output;
  RetargetFeetOptions options;
  // Seconds since the previous frame (finite, >= 0; 0: speeds read 0).
  float dt = 0.0f;
  const RetargetFeetState* state = nullptr;  // null: a first frame
  RetargetFeetState* next_state = nullptr;   // optional; may be `state`
  RetargetFeetResult* result = nullptr;      // optional

  absl::Status Validate() const;
  absl::Status Run() const;
};

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_RETARGET_RETARGET_FEET_H_
