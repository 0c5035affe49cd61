// Real rigs and clips for benchmarks, loaded once per process from tests/data.
#ifndef POSEWIRE_BENCH_BENCH_DATA_H_
#define POSEWIRE_BENCH_BENCH_DATA_H_

#include <Eigen/Core>
#include <string>
#include <vector>

#include "solver_core/io/asset.h"
#include "solver_core/model/transform.h"

namespace posewire::bench {

// Loads tests/data/<file_name> (BVH or glTF) the first time it is asked for;
// exits with the reader's error if it cannot, since a benchmark without its
// data would measure nothing.
const ImportedAsset& LoadAsset(const std::string& file_name);

// The CMU walk's four limbs (upper arm to hand, thigh to ankle), each from
// the pose of frame f toward where its end is 30 frames later (the later
// frame placed where the earlier one is): the first 64 reachable cases of
// frames 0, 13, 26, ..., each with its own input pose. With `joints` > 0 the
// chains are cut to their first `joints` joints (3: shoulder, elbow, wrist
// and hip, knee, ankle for two-bone IK).
struct WalkLimbCases {
  struct Case {
    std::vector<Transform> input;
    std::vector<int> chain;
    Eigen::Vector3f target;
  };
  const Skeleton* skeleton = nullptr;
  std::vector<Case> cases;
};
const WalkLimbCases& WalkLimbs(size_t joints = 0);

}  // namespace posewire::bench

#endif  // POSEWIRE_BENCH_BENCH_DATA_H_
