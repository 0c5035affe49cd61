// The spring-bone scene the benchmarks (spring_bones_bench.cc) and the
// trajectory tool (spring_trajectories.cc) run: chains of 8 simulated bones
// hung at shoulder height around a body, 4 colliders (a sphere for the body,
// a capsule for the hips, a box on the body's joint for a backpack, a world
// floor plane), gravity, KawaiiPhysics' other defaults.
#ifndef POSEWIRE_BENCH_SPRING_SCENE_H_
#define POSEWIRE_BENCH_SPRING_SCENE_H_

#include <vector>

#include "solver_core/dynamics/dynamics_state.h"
#include "solver_core/dynamics/spring_bones.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/skeleton.h"

namespace posewire {

inline constexpr int kSpringSceneChains = 8;  // the benchmarked hair rig
inline constexpr int kSpringSceneBonesPerChain = 8;

struct SpringScene {
  Skeleton skeleton;
  SpringRig rig;
  LocalPose input;  // the rest pose
  LocalPose output;
  std::vector<SpringCollider> colliders;
  SpringForces forces;
};

// `chains` chains, each root on a circle of radius 10 at height 30, bones of
// 4 units hanging down and slightly out; bone radius 1, the given angle
// limit. Exits with a message if the rig cannot be built.
SpringScene MakeSpringScene(SimulationSpace space,
                            int chains = kSpringSceneChains,
                            float limit_angle_degrees = 60.0f);

// A job solving `scene` frame by frame with its forces and colliders, the
// state in and out in place (`state`, empty at first), reusable `scratch`,
// and `dt` seconds per frame. The caller sets component_to_world.
SpringBonesJob SceneJob(SpringScene& scene, DynamicsState& state,
                        SpringBonesScratch& scratch, float dt);

}  // namespace posewire

#endif  // POSEWIRE_BENCH_SPRING_SCENE_H_
