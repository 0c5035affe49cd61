// The spring-bone particles arranged in SIMD lanes, built once per rig
// (SpringRig::Create), and the per-solve buffers that hold them in lanes.
#ifndef POSEWIRE_SOLVER_CORE_DYNAMICS_INTERNAL_SPRING_LANE_LAYOUT_H_
#define POSEWIRE_SOLVER_CORE_DYNAMICS_INTERNAL_SPRING_LANE_LAYOUT_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/types/span.h"
#include "solver_core/dynamics/spring_bones.h"
#include "solver_core/model/internal/simd_lanes.h"

namespace posewire {

// The lane width of the AVX2 path (lanes_avx2::kWidth).
inline constexpr int kSpringWideLanes = 8;

// Particles in groups of W lanes (W = 4 for SSE2, 8 for AVX2), level by
// level: a group holds particles of one depth (chain roots are depth 0), so
// each group depends only on groups before it, whose positions are final
// when it runs, as in the scalar loop's parents-first order. Lanes therefore
// change no result, nor does the width. Padding lanes (a level whose size is
// not a multiple of W) repeat the group's first particle: they compute
// harmless copies and are never written back.
template <int W>
struct SpringLaneGroup {
  int particle[W];
  // Slot (W * group + lane) of each lane's parent; -1 for chain roots.
  int parent_slot[W];
  // The group whose lanes 0..W-1 are the parents, in order, or -1 when the
  // parents must be gathered slot by slot.
  int parent_group = -1;
  int chain[W];
  // Bits of the lanes holding a particle of their own.
  int real = 0;
  // The per-step factors of SpringParticle, one lane each.
  lanes::Block1T<W> velocity_keep, stiffness_pull, keep_location, keep_rotation,
      radius, cos_limit, sin_limit;
  // 1 where the bone has an angle limit (limit_angle_degrees > 0), else 0.
  lanes::Block1T<W> limited;
  // For the output in lanes (SpringLaneLayoutW::lane_output): the group
  // whose lane k holds lane k's only child, or -1 when the lanes have no
  // children; whether the lanes are joints (not dummy tips); each lane's
  // joint and, for chain roots, its skeleton parent (-1 at the skeleton
  // root).
  int child_group = -1;
  bool joints = false;
  int joint[W];
  int parent_joint[W];
};

// The joints whose output rotation turns toward their only simulated child,
// W at a time (any order: each is independent).
template <int W>
struct SpringLaneArcGroup {
  int particle[W];
  int joint[W];
  int child[W];
  int real = 0;
};

// Every simulated joint, W at a time, for its local output rotation.
template <int W>
struct SpringLaneOutputGroup {
  int particle[W];
  int joint[W];
  // The parent joint (-1 at the skeleton root) and its particle (-1 when it
  // is not simulated).
  int parent_joint[W];
  int parent_particle[W];
  int real = 0;
};

template <int W>
struct SpringLaneLayoutW {
  std::vector<SpringLaneGroup<W>> groups;
  // Groups [0, first_bone_group) hold the chain roots, pinned to the pose.
  int first_bone_group = 0;
  // Every group's lanes have one child each in the same lanes of one group
  // (or none), are all joints or all dummy tips, and read their parents
  // from one group in order (chains of one shape, the usual hair or skirt):
  // the output rotations can then be worked out group by group from the
  // lanes, with no gathering (Engine::ApplyInLanes). Otherwise they go by
  // arc_groups and output_groups.
  bool lane_output = false;
  std::vector<SpringLaneArcGroup<W>> arc_groups;
  std::vector<SpringLaneOutputGroup<W>> output_groups;
};

// Both widths, built once per rig: the solve picks one (same bits).
struct SpringLaneLayout {
  SpringLaneLayoutW<lanes::kWidth> narrow;
  SpringLaneLayoutW<kSpringWideLanes> wide;
  // An eight-lane group does the work of two four-lane ones in about the
  // same instructions, but a level's groups are also the independent work
  // the core overlaps, and padding lanes cost as much as real ones. Eight
  // lanes pay when they add little padding (at most 10% more lane slots
  // than four-lane groups) and a level holds 8 or more particles on
  // average. Measured (time per frame at 8 lanes / at 4, chains of 8
  // bones, 4 colliders, walking; docs/PERFORMANCE.md): 4 chains 1.30, 6
  // chains 1.05, 7 chains 1.02, 8 chains 0.92 (standing 0.86, world space
  // 1.00), 10 chains 1.06, 12 chains 1.08, 14 chains 0.85, 16 chains 0.75,
  // 20 chains 1.06, 24 chains 0.80.
  bool prefer_wide = false;
};

// The layout of `particles` (SpringRig::particles) at both widths.
std::shared_ptr<const SpringLaneLayout> BuildLaneLayout(
    absl::Span<const SpringParticle> particles,
    absl::Span<const int> skeleton_parents,
    absl::Span<const int> particle_of_joint);

// The particles in lanes of W, one block per group of SpringLaneLayoutW.
template <int W>
struct SpringLaneBuffers {
  std::vector<lanes::Block3T<W>> pos;
  std::vector<lanes::Block3T<W>> prev;
  std::vector<lanes::Block3T<W>> pose;
  std::vector<lanes::Block3T<W>> pose_bone;
  std::vector<lanes::Block3T<W>> settled;
  std::vector<lanes::Block1T<W>> pose_len;
  std::vector<uint8_t> moved;  // lane bits per group
  // The output's model rotations, x, y, z and w blocks per group, and the
  // lanes turned toward their child (lane bits per group).
  std::vector<lanes::Block1T<W>> rotation;
  std::vector<uint8_t> turned;
};

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_DYNAMICS_INTERNAL_SPRING_LANE_LAYOUT_H_
