// The hit-registration scene the referee benchmarks share: the CMU walk
// rig (31 joints) posed at frames 100 and 101, 15 capsules on its limbs
// and spine, and 256 fixed rays from 40-120 units (inches: 1-3 m) around
// the hips toward points near the body (about a quarter hit).
#ifndef POSEWIRE_BENCH_REFEREE_SCENE_H_
#define POSEWIRE_BENCH_REFEREE_SCENE_H_

#include <vector>

#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"
#include "solver_core/referee/hitboxes.h"

namespace posewire::bench {

struct SceneRay {
  Eigen::Vector3f origin;
  Eigen::Vector3f direction;
};

struct RefereeScene {
  const Skeleton* skeleton = nullptr;
  std::vector<Transform> model;       // frame 100
  std::vector<Transform> model_next;  // frame 101
  std::vector<Hitbox> hitboxes;
  std::vector<SceneRay> rays;
};

// Built on first use (bench_data.h's CMU walk), then shared.
const RefereeScene& Scene();

}  // namespace posewire::bench

#endif  // POSEWIRE_BENCH_REFEREE_SCENE_H_
