// Spring-bone dynamics: the Kawaii joint solver (hair, tails, skirts,
// accessories that swing with the animation).
//
// Algorithm: KawaiiPhysics (pafuhana1213, the open-source Unreal plugin):
// every chain joint is a Verlet particle. Per fixed step, in joint order:
//   UpdateMovement  the component's motion since the previous step, ignored
//                   beyond the teleport thresholds;
//   UpdatePose      Verlet inertia scaled by (1 - damping), wind, the
//                   component's motion scaled by (1 - world damping)
//                   (component-space simulation only), gravity 0.5 g dt^2
//                   and the external force;
//   stiffness       a pull toward "parent + animated bone vector" by
//                   1 - (1 - stiffness)^exponent;
//   AdjustAngle     the bone may not turn further than limit_angle from its
//                   animated direction;
//   length restore  the bone gets its animated length back (a bone outside
//                   its cone goes straight to the cone's edge at that
//                   length: the same point, one square root fewer);
// then every particle is pushed out of the colliders, and the angle limit and
// length restore run again (a bone they put back into a collider gets one
// more collide/limit/length round, then, if still inside, is turned about
// its parent toward free space along an arc: to where it leaves the
// collider in closed form for a sphere or a plane, by a root search
// otherwise). Output:
// each chain joint with exactly one simulated child is rotated by the
// shortest arc from its animated bone direction to the simulated one
// (KawaiiPhysics' ApplySimulateResult); joints with several simulated
// children keep their animated model-space rotation.
//
// Performance: particles are solved in SIMD lanes, four at a time with SSE2
// (baseline x86-64) or, on CPUs with AVX2 and for rigs whose levels hold 16
// or more particles on average, eight at a time; the results are
// bit-identical either way (see SpringLaneLayout), so machines with and
// without AVX2 agree.
//
// Differences from the plugin, all for a stateless, frame-rate-independent
// service: fixed-step substepping with the leftover time carried in the
// state (the target rate replaces the plugin's TargetFramerate; each step
// sees the animated pose and the component transform interpolated between
// the last step and the current frame); the stiffness exponent and
// the damping are both expressed per 1/60 s (the plugin's reference rate), so
// a different target rate keeps the same feel; wind noise is a seeded,
// smooth function of simulated time instead of FRandRange; world-space
// simulation carries the chain rigidly through a teleport.
#ifndef POSEWIRE_SOLVER_CORE_DYNAMICS_SPRING_BONES_H_
#define POSEWIRE_SOLVER_CORE_DYNAMICS_SPRING_BONES_H_

#include <Eigen/Core>
#include <Eigen/Geometry>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "solver_core/dynamics/dynamics_state.h"
#include "solver_core/dynamics/spring_colliders.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"

namespace posewire {

// The rate KawaiiPhysics' settings are tuned at: per-step damping and the
// stiffness exponent are scaled so that one second of simulation feels the
// same at any target rate.
inline constexpr float kSpringReferenceRateHz = 60.0f;

// Per-bone physics settings, with KawaiiPhysics' defaults
// (FKawaiiPhysicsSettings). Lengths are in the skeleton's units.
struct SpringBoneSettings {
  // Fraction of the velocity lost per 1/60 s, in [0, 1].
  float damping = 0.1f;
  // Pull toward the animated pose per 1/60 s, in [0, 1]; 1 follows the
  // animation exactly.
  float stiffness = 0.05f;
  // How much of the component's translation / rotation the bone ignores,
  // in [0, 1]: 1 moves rigidly with the component, 0 stays behind in the
  // world. Component-space simulation only.
  float world_damping_location = 0.8f;
  float world_damping_rotation = 0.8f;
  // Radius of the bone's collision sphere, >= 0.
  float radius = 3.0f;
  // Largest angle between the simulated and the animated bone direction, in
  // degrees, in [0, 180]; 0 means no limit (as in KawaiiPhysics).
  float limit_angle_degrees = 0.0f;
};

// A piecewise-linear curve over a bone's position along its chain (0 at the
// root, 1 at the farthest tip, measured along the rest-pose bone lengths, as
// KawaiiPhysics' LengthRateFromRoot). Keys have strictly increasing
// positions; the curve is constant beyond its first and last key. An empty
// curve evaluates to 1.
struct SpringCurveKey {
  float position = 0.0f;
  float value = 1.0f;
};
using SpringCurve = std::vector<SpringCurveKey>;

float EvaluateSpringCurve(const SpringCurve& curve, float position);

// Each setting of a bone is the base setting times its curve at the bone's
// chain position, then clamped to the setting's range (KawaiiPhysics'
// UpdatePhysicsSettingsOfModifyBones).
struct SpringSettingCurves {
  SpringCurve damping;
  SpringCurve stiffness;
  SpringCurve world_damping_location;
  SpringCurve world_damping_rotation;
  SpringCurve radius;
  SpringCurve limit_angle;
};

// Direction of the optional dummy tip in the leaf joint's frame.
enum class SpringTipAxis {
  kXPositive,  // KawaiiPhysics' default BoneForwardAxis
  kXNegative,
  kYPositive,
  kYNegative,
  kZPositive,
  kZNegative,
  // Continue the leaf's own bone: the direction of its rest-pose local
  // translation (suits BVH and other rigs whose joints are not axis-aligned).
  kAlongBone,
};

// What a frame whose component motion exceeds a teleport threshold does.
enum class TeleportResponse {
  // Ignore the motion (KawaiiPhysics' UpdateSkelCompMove): in component
  // space the motion does not reach the chain; in world space the chain is
  // carried rigidly by the component's jump.
  kIgnoreMotion,
  // Start over from the animated pose, as if the state were empty.
  kReset,
};

struct SpringRigDesc {
  // Each root and all its descendants form one chain. Roots are pinned to
  // the animation; their own rotation swings toward their child.
  std::vector<std::string> root_joints;
  // These joints and their descendants are left to the animation.
  std::vector<std::string> excluded_joints;
  // > 0 adds a virtual tip of this length below every chain leaf, so the
  // leaf itself can swing (KawaiiPhysics' DummyBoneLength).
  float dummy_tip_length = 0.0f;
  SpringTipAxis tip_axis = SpringTipAxis::kXPositive;

  SpringBoneSettings settings;
  SpringSettingCurves curves;

  SimulationSpace space = SimulationSpace::kComponent;
  // Fixed simulation rate, in [1, 1000] Hz.
  float target_rate_hz = 60.0f;
  // At most this many fixed steps per solve, in [1, 64]. A longer dt (a
  // hitch, a paused client) is clamped to max_substeps / target_rate_hz
  // seconds and the rest is dropped: the chain moves in slow motion for
  // that frame instead of spiralling (the classic fixed-step clamp).
  int max_substeps = 4;

  // A frame in which the component moves farther than this (in component
  // units) or turns by more than this many degrees counts as a teleport.
  // KawaiiPhysics' defaults; a negative value disables the check.
  float teleport_distance = 300.0f;
  float teleport_rotation_degrees = 10.0f;
  TeleportResponse teleport_response = TeleportResponse::kIgnoreMotion;
};

// One simulated point: a chain joint or a dummy tip.
struct SpringParticle {
  int joint = -1;         // skeleton joint, or -1 for a dummy tip
  int parent = -1;        // particle index, -1 for a chain root
  int chain = 0;          // index into root_joints
  int num_children = 0;   // simulated children
  int first_child = -1;   // particle index of the first one
  float length_rate = 0;  // chain position in [0, 1]
  // Unit dummy-tip direction in the parent joint's frame (dummy tips only).
  Eigen::Vector3f tip_direction = Eigen::Vector3f::Zero();
  // Settings after curves and clamping, turned into per-step factors.
  SpringBoneSettings settings;
  float velocity_keep = 0;              // (1 - damping)^(60 / rate)
  float stiffness_pull = 0;             // 1 - (1 - stiffness)^(60 / rate)
  float cos_limit = -1, sin_limit = 0;  // of limit_angle; unused if 0
};

// The particles arranged in SIMD lanes, level by level
// (internal/spring_lane_layout.h): groups of four for the SSE2 kernels and
// of eight for the AVX2 ones. A solve uses eight lanes only when
// ActiveSimdLevel() is kAvx2 and the rig prefers them
// (SpringRig::prefers_wide_lanes); both give the same bits (simd_lanes.h
// says why; spring_bones_test compares them on every feature).
struct SpringLaneLayout;

// A validated rig: the particles of every chain, resolved once so a frame
// does no name lookups and no pow().
class SpringRig {
 public:
  // Checks `desc` against `skeleton` (errors name the field and the joint):
  // at least one root, every root and excluded name a joint of the skeleton,
  // no root excluded or inside another root's chain, settings in range,
  // curve keys finite with increasing positions and non-negative values,
  // rate, substeps and thresholds finite and in range.
  static absl::StatusOr<SpringRig> Create(const Skeleton& skeleton,
                                          SpringRigDesc desc);

  SpringRig() = default;

  const SpringRigDesc& desc() const { return desc_; }
  absl::Span<const SpringParticle> particles() const { return particles_; }
  int num_particles() const { return static_cast<int>(particles_.size()); }
  int num_chains() const { return static_cast<int>(desc_.root_joints.size()); }
  // Particle of `joint`, or -1 when the joint is not simulated.
  int ParticleOfJoint(int joint) const { return particle_of_joint_[joint]; }
  // Fixed step length, 1 / target_rate_hz.
  float step_seconds() const { return step_; }
  // Identifies the particle topology; stored in every DynamicsState.
  uint64_t fingerprint() const { return fingerprint_; }
  // The skeleton hierarchy the rig was built for.
  absl::Span<const int> skeleton_parents() const { return skeleton_parents_; }
  // Whether solves of this rig use the eight-lane AVX2 kernels when
  // ActiveSimdLevel() allows: when eight-lane groups add little padding over
  // four-lane ones and the levels (particles of one depth) hold 8 or more
  // particles on average, where they are faster (see SpringLaneLayout).
  // Either way the results are the same bits.
  bool prefers_wide_lanes() const;

 private:
  friend struct SpringBonesJob;

  SpringRigDesc desc_;
  std::vector<SpringParticle> particles_;
  std::vector<int> particle_of_joint_;
  std::vector<int> skeleton_parents_;
  float step_ = 1.0f / 60.0f;
  uint64_t fingerprint_ = 0;
  // The particles as SIMD lanes, depth by depth, with their settings. Never
  // changes after Create, so copies of the rig share it.
  std::shared_ptr<const SpringLaneLayout> lanes_;
};

// Wind blowing through the chains (a speed times a direction, added to
// every particle's velocity each step).
struct SpringWind {
  // World-space direction (normalised on use; must not be zero when speed
  // is not zero) and speed in units per second.
  Eigen::Vector3f direction = Eigen::Vector3f::UnitX();
  float speed = 0.0f;
  // Optional gusts: speed * (1 + amplitude * n(t)), n a smooth value noise
  // in [-1, 1] of simulated time, one per chain, varying at about
  // noise_frequency_hz and fully determined by noise_seed (no hidden random
  // state). amplitude in [0, 1]; 0 turns gusts off.
  float noise_amplitude = 0.0f;
  float noise_frequency_hz = 1.0f;
  uint64_t noise_seed = 0;
};

enum class ForceSpace { kWorld, kComponent };

struct SpringForces {
  // World-space gravity in units/s^2, applied as 0.5 g dt^2 per step. Zero by
  // default, as in KawaiiPhysics.
  Eigen::Vector3f gravity = Eigen::Vector3f::Zero();
  SpringWind wind;
  // A constant push in units/s, added as external_force * dt per step
  // (KawaiiPhysics' basic external force).
  Eigen::Vector3f external_force = Eigen::Vector3f::Zero();
  ForceSpace external_force_space = ForceSpace::kComponent;
};

// What a solve did, for callers that want to know (metrics, tests).
struct SpringBonesResult {
  int substeps = 0;
  // The state was (re)initialised from the pose: empty state, `reset`, or a
  // teleport with TeleportResponse::kReset.
  bool initialized = false;
  bool teleported = false;
  // dt plus the leftover exceeded max_substeps steps; the excess was dropped.
  bool time_clamped = false;
};

// What a solve keeps in SpringBonesScratch (spring_solver.h).
struct SpringSolveBuffers;

// Reusable buffers, so a steady stream of solves does not allocate after the
// first. Holds no meaning between calls; one per thread. Movable, not
// copyable.
struct SpringBonesScratch {
  SpringBonesScratch();
  ~SpringBonesScratch();
  SpringBonesScratch(SpringBonesScratch&&) noexcept;
  SpringBonesScratch& operator=(SpringBonesScratch&&) noexcept;

 private:
  friend struct SpringBonesJob;
  // Created by the first solve that uses this scratch.
  std::unique_ptr<SpringSolveBuffers> buffers_;
};

struct SpringBonesJob {
  // Inputs.
  const Skeleton* skeleton = nullptr;
  const SpringRig* rig = nullptr;  // built for `skeleton`
  // The animated local pose this frame.
  absl::Span<const Transform> input = {};
  // Set when `input` is known valid (every transform finite with a unit
  // rotation: CheckPose passed, as a service checks each frame's pose once):
  // Validate() then checks only its size.
  bool input_validated = false;
  // The component's world transform this frame (uniform scale).
  Transform component_to_world = Transform::Identity();
  // Seconds since the previous solve, finite and >= 0. 0 advances nothing
  // and re-applies the current state to the pose.
  float dt = 0.0f;
  SpringForces forces = {};
  absl::Span<const SpringCollider> colliders = {};
  // The state from the previous solve of this rig. Null or empty
  // initialises from the pose. May be the same object as state_out.
  const DynamicsState* state_in = nullptr;
  // Ignore state_in and start over from the pose.
  bool reset = false;
  // Optional reusable buffers.
  SpringBonesScratch* scratch = nullptr;

  // Outputs. `output` is `input` with the chain joints' local rotations
  // replaced; it may alias `input`.
  absl::Span<Transform> output = {};
  DynamicsState* state_out = nullptr;
  SpringBonesResult* result = nullptr;  // optional

  // Checks everything, naming the field and joint: skeleton and rig set and
  // matching, pose sizes, finite unit-rotation input, a valid component
  // transform, dt finite and >= 0, finite forces with a usable wind
  // direction and noise settings in range, every collider, and a state_in
  // that matches the rig (fingerprint, particle count, simulation space) and
  // holds only finite values.
  absl::Status Validate() const;
  // Validates, then solves.
  absl::Status Run() const;
};

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_DYNAMICS_SPRING_BONES_H_
