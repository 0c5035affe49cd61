// What an asset reader returns: a skeleton and its clips.
#ifndef POSEWIRE_SOLVER_CORE_IO_ASSET_H_
#define POSEWIRE_SOLVER_CORE_IO_ASSET_H_

#include <Eigen/Core>
#include <string>
#include <vector>

#include "solver_core/model/clip.h"
#include "solver_core/model/skeleton.h"

namespace posewire {

// A BVH "End Site": a tip point below a leaf joint. Not a joint (it has no
// channels), but IK chains often want it as their end effector.
struct EndSite {
  int joint = -1;                                    // the leaf it hangs off
  Eigen::Vector3f offset = Eigen::Vector3f::Zero();  // in that joint's space
};

struct ImportedAsset {
  // Where it came from (a path, or a name given to an in-memory parse).
  std::string source;
  Skeleton skeleton;
  // Every clip validates against `skeleton`.
  std::vector<Clip> clips;
  std::vector<EndSite> end_sites;
  // Non-fatal observations a user should see (e.g. "skin 1 ignored").
  std::vector<std::string> warnings;
};

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_IO_ASSET_H_
