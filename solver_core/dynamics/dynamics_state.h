// DynamicsState: everything a spring-bone simulation remembers between
// frames, as an explicit value that goes into a solve and comes out of it.
//
// The solver core keeps no hidden state (see the design guide), so the
// particle positions, the Verlet "previous positions", the fixed-step
// accumulator and the component transform of the last step travel with
// the caller: in a service session, in a game server's per-character record,
// or over the wire in the compact byte form below.
//
// Beyond the four things the issue names (positions, previous positions,
// leftover time, previous component transform) the state also holds what the
// fixed-step scheme needs to be frame-rate independent: the animated pose
// positions at the last step (each substep interpolates the animated target
// and the component transform between the last step and the current frame,
// so no motion in between is lost), a step counter (the
// clock of the deterministic wind noise) and a fingerprint of the rig it was
// made for, so a state cannot silently be fed to a different rig.
#ifndef POSEWIRE_SOLVER_CORE_DYNAMICS_DYNAMICS_STATE_H_
#define POSEWIRE_SOLVER_CORE_DYNAMICS_DYNAMICS_STATE_H_

#include <Eigen/Core>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "solver_core/model/transform.h"

namespace posewire {

// The space particle positions are simulated (and stored) in.
enum class SimulationSpace : uint8_t {
  // Relative to the component (the character's placement). The component's
  // own motion reaches the chain only through the world damping settings,
  // as in KawaiiPhysics' default mode.
  kComponent = 0,
  // In world space: the chain feels the component's full motion as inertia.
  kWorld = 1,
};

const char* SimulationSpaceName(SimulationSpace space);

struct DynamicsState {
  // Fingerprint of the rig (SpringRig::fingerprint()) the state belongs to.
  uint64_t rig_fingerprint = 0;
  SimulationSpace space = SimulationSpace::kComponent;
  // Fixed steps taken since the state was initialised; the wind-noise clock.
  uint64_t step_count = 0;
  // Seconds from the last simulated step to the last frame: frame time not
  // yet simulated (less than one fixed step).
  float leftover_time = 0.0f;
  // The component's world transform at the last simulated step (the previous
  // frame's, when that frame ended on a step).
  Transform previous_component = Transform::Identity();
  // One entry per rig particle (joints, then dummy tips), in `space`, at the
  // last step and the step before it (Verlet).
  std::vector<Eigen::Vector3f> positions;
  std::vector<Eigen::Vector3f> previous_positions;
  // Animated (target) particle positions at the last simulated step, always
  // in component space.
  std::vector<Eigen::Vector3f> previous_pose_positions;

  // An empty state makes the next solve initialise from the animated pose
  // (KawaiiPhysics' InitModifyBones).
  bool empty() const { return positions.empty(); }
  // Forgets everything: the next solve starts from the pose again. Keeps
  // the vectors' capacity.
  void Reset();

  friend bool operator==(const DynamicsState& a, const DynamicsState& b);
};

// Checks a component-to-world transform: finite, unit rotation (within
// kUnitQuaternionTolerance) and a uniform, non-zero scale (relative spread at
// most 1e-4). Uniform scale keeps distances, collider sizes and the bone
// radius meaningful in both simulation spaces; a negative uniform scale
// (mirroring) is accepted.
absl::Status ValidateComponentTransform(const Transform& transform,
                                        absl::string_view field);

// Checks internal consistency: the three arrays have the same length, every
// value is finite, leftover_time >= 0, previous_component has a unit
// rotation and a non-zero uniform scale. Errors name the field and particle.
absl::Status ValidateDynamicsState(const DynamicsState& state);

// Largest particle count a serialised state may claim: every joint of the
// largest skeleton plus one dummy tip each.
inline constexpr uint32_t kMaxDynamicsParticles = 2u * (1u << 16);

// Compact versioned byte form for the wire, little-endian whatever the host:
//   0  "PWDS"                      magic
//   4  u16 version (1)
//   6  u8  space, u8 flags (0)
//   8  u32 particle count n
//  12  u64 rig fingerprint
//  20  u64 step count
//  28  f32 leftover time
//  32  f32 x10 previous component: translation xyz, rotation xyzw, scale xyz
//  72  f32 x3n positions, then x3n previous positions, then x3n previous
//      pose positions
// 72 + 36 n bytes in all. An empty state is 72 bytes with n = 0.
std::string SerializeDynamicsState(const DynamicsState& state);

// Parses SerializeDynamicsState's output. INVALID_ARGUMENT on anything else:
// wrong magic or version, unknown space or flags, a size that does not match
// the particle count, too many particles, non-finite numbers, a non-unit
// rotation, a zero or non-uniform scale, negative leftover time.
absl::StatusOr<DynamicsState> ParseDynamicsState(absl::string_view bytes);

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_DYNAMICS_DYNAMICS_STATE_H_
