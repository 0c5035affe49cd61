#include "solver_core/dynamics/internal/spring_lane_layout.h"

#include <algorithm>

namespace posewire {
namespace {

// Packs `indices` W to a group, padding the last group with its first
// index; fill(group, lane, index) sets up each lane.
template <int W, typename Group, typename Fill>
void PackLanes(const std::vector<int>& indices, std::vector<Group>* groups,
               Fill fill) {
  for (size_t first = 0; first < indices.size(); first += W) {
    Group g;
    for (int k = 0; k < W; ++k) {
      const bool real = first + k < indices.size();
      if (real) g.real |= 1 << k;
      fill(g, k, indices[real ? first + k : first]);
    }
    groups->push_back(g);
  }
}

// The particles by depth, W to a group, with their settings and where
// their parents are.
template <int W>
void BuildParticleGroups(absl::Span<const SpringParticle> particles,
                         SpringLaneLayoutW<W>* layout) {
  const int n = static_cast<int>(particles.size());
  // Parents come before children in particle order.
  std::vector<int> depth(n, 0);
  int max_depth = -1;
  for (int i = 0; i < n; ++i) {
    const int p = particles[i].parent;
    depth[i] = p < 0 ? 0 : depth[p] + 1;
    max_depth = std::max(max_depth, depth[i]);
  }
  std::vector<std::vector<int>> levels(max_depth + 1);
  for (int i = 0; i < n; ++i) levels[depth[i]].push_back(i);

  std::vector<int> slot_of(n, -1);
  for (int d = 0; d <= max_depth; ++d) {
    PackLanes<W>(
        levels[d], &layout->groups, [&](SpringLaneGroup<W>& g, int k, int i) {
          const SpringParticle& pt = particles[i];
          if ((g.real >> k) & 1) {
            slot_of[i] = W * static_cast<int>(layout->groups.size()) + k;
          }
          g.particle[k] = i;
          g.chain[k] = pt.chain;
          g.velocity_keep.v[k] = pt.velocity_keep;
          g.stiffness_pull.v[k] = pt.stiffness_pull;
          g.keep_location.v[k] = 1.0f - pt.settings.world_damping_location;
          g.keep_rotation.v[k] = 1.0f - pt.settings.world_damping_rotation;
          g.radius.v[k] = pt.settings.radius;
          g.cos_limit.v[k] = pt.cos_limit;
          g.sin_limit.v[k] = pt.sin_limit;
          g.limited.v[k] = pt.settings.limit_angle_degrees > 0.0f ? 1.0f : 0.0f;
        });
    if (d == 0) {
      layout->first_bone_group = static_cast<int>(layout->groups.size());
    }
  }
  for (SpringLaneGroup<W>& g : layout->groups) {
    bool in_order = true;
    for (int k = 0; k < W; ++k) {
      const int parent = particles[g.particle[k]].parent;
      g.parent_slot[k] = parent < 0 ? -1 : slot_of[parent];
      in_order =
          in_order && g.parent_slot[k] >= 0 &&
          g.parent_slot[k] == g.parent_slot[0] - g.parent_slot[0] % W + k;
    }
    g.parent_group = in_order ? g.parent_slot[0] / W : -1;
  }
}

// The deepest level (chain roots are 0), -1 without particles.
int MaxDepth(absl::Span<const SpringParticle> particles) {
  std::vector<int> depth(particles.size(), 0);
  int max_depth = -1;
  for (size_t i = 0; i < particles.size(); ++i) {
    const int p = particles[i].parent;
    depth[i] = p < 0 ? 0 : depth[p] + 1;
    max_depth = std::max(max_depth, depth[i]);
  }
  return max_depth;
}

// Fills the groups' output fields and decides SpringLaneLayoutW::lane_output.
template <int W>
void FindLaneOutput(absl::Span<const SpringParticle> particles,
                    absl::Span<const int> skeleton_parents,
                    absl::Span<const int> particle_of_joint,
                    SpringLaneLayoutW<W>* layout) {
  std::vector<int> slot_of(particles.size(), -1);
  for (size_t g = 0; g < layout->groups.size(); ++g) {
    const SpringLaneGroup<W>& group = layout->groups[g];
    for (int k = 0; k < W; ++k) {
      if ((group.real >> k) & 1) {
        slot_of[group.particle[k]] = W * static_cast<int>(g) + k;
      }
    }
  }
  bool aligned = true;
  for (size_t g = 0; g < layout->groups.size(); ++g) {
    SpringLaneGroup<W>& group = layout->groups[g];
    const SpringParticle& first = particles[group.particle[0]];
    const int child_slot =
        first.num_children == 1 ? slot_of[first.first_child] : -1;
    group.child_group = child_slot >= 0 ? child_slot / W : -1;
    group.joints = first.joint >= 0;
    const bool root = static_cast<int>(g) < layout->first_bone_group;
    aligned = aligned && (root || group.parent_group >= 0);
    for (int k = 0; k < W; ++k) {
      const SpringParticle& pt = particles[group.particle[k]];
      group.joint[k] = pt.joint;
      group.parent_joint[k] = pt.joint >= 0 ? skeleton_parents[pt.joint] : -1;
      // A chain root's parent is never simulated (chains do not nest);
      // checked all the same, as the lanes would not see it turn.
      if (root && group.parent_joint[k] >= 0) {
        aligned = aligned && particle_of_joint[group.parent_joint[k]] < 0;
      }
      aligned = aligned && (pt.joint >= 0) == group.joints &&
                pt.num_children == first.num_children;
      if (((group.real >> k) & 1) && first.num_children == 1) {
        aligned = aligned && slot_of[pt.first_child] == child_slot + k;
      }
    }
    if (first.num_children > 1) aligned = false;
    if (group.child_group >= 0) {
      aligned = aligned && child_slot % W == 0 &&
                layout->groups[group.child_group].real == group.real;
    }
  }
  layout->lane_output = aligned;
}

template <int W>
void BuildLaneLayoutW(absl::Span<const SpringParticle> particles,
                      absl::Span<const int> skeleton_parents,
                      absl::Span<const int> particle_of_joint,
                      SpringLaneLayoutW<W>* layout) {
  BuildParticleGroups(particles, layout);
  FindLaneOutput(particles, skeleton_parents, particle_of_joint, layout);
  std::vector<int> arcs;
  std::vector<int> joints;
  for (int i = 0; i < static_cast<int>(particles.size()); ++i) {
    if (particles[i].joint < 0) continue;
    joints.push_back(i);
    if (particles[i].num_children == 1) arcs.push_back(i);
  }
  PackLanes<W>(arcs, &layout->arc_groups,
               [&](SpringLaneArcGroup<W>& g, int k, int i) {
                 g.particle[k] = i;
                 g.joint[k] = particles[i].joint;
                 g.child[k] = particles[i].first_child;
               });
  PackLanes<W>(
      joints, &layout->output_groups,
      [&](SpringLaneOutputGroup<W>& g, int k, int i) {
        g.particle[k] = i;
        g.joint[k] = particles[i].joint;
        g.parent_joint[k] = skeleton_parents[g.joint[k]];
        g.parent_particle[k] =
            g.parent_joint[k] < 0 ? -1 : particle_of_joint[g.parent_joint[k]];
      });
}

}  // namespace

std::shared_ptr<const SpringLaneLayout> BuildLaneLayout(
    absl::Span<const SpringParticle> particles,
    absl::Span<const int> skeleton_parents,
    absl::Span<const int> particle_of_joint) {
  auto layout = std::make_shared<SpringLaneLayout>();
  BuildLaneLayoutW(particles, skeleton_parents, particle_of_joint,
                   &layout->narrow);
  BuildLaneLayoutW(particles, skeleton_parents, particle_of_joint,
                   &layout->wide);
  // Groups hold one level each, so the slots count each level's padding.
  const size_t levels = static_cast<size_t>(MaxDepth(particles)) + 1;
  const size_t wide_slots = kSpringWideLanes * layout->wide.groups.size();
  const size_t narrow_slots = lanes::kWidth * layout->narrow.groups.size();
  layout->prefer_wide = !particles.empty() &&
                        10 * wide_slots <= 11 * narrow_slots &&
                        particles.size() >= kSpringWideLanes * levels;
  return layout;
}

}  // namespace posewire
