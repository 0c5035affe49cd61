// A chain hanging from a body, for spring-bone tests and workloads.
#ifndef POSEWIRE_TESTS_CORE_HANGING_CHAIN_H_
#define POSEWIRE_TESTS_CORE_HANGING_CHAIN_H_

#include <Eigen/Core>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "solver_core/model/skeleton.h"

namespace posewire {

// Appends to `d` (whose joint 0 is the body) a root 10 units out along the
// horizontal direction `out` and 30 up, then `bones` bones each 0.8 further
// out and 4 down, named <prefix>_0, <prefix>_1, ...; adds the root's name to
// `roots`. Returns the index of the chain's first bone.
inline int AddHangingChain(SkeletonDesc& d, const Eigen::Vector3f& out,
                           absl::string_view prefix, int bones,
                           std::vector<std::string>& roots) {
  int first_bone = -1;
  for (int b = 0; b <= bones; ++b) {
    const std::string name = absl::StrCat(prefix, "_", b);
    if (b == 0) roots.push_back(name);
    d.joint_names.push_back(name);
    d.parents.push_back(b == 0 ? 0 : static_cast<int>(d.parents.size()) - 1);
    Transform t;
    t.translation =
        b == 0 ? Eigen::Vector3f(out * 10.0f + Eigen::Vector3f(0, 30, 0))
               : Eigen::Vector3f(out * 0.8f + Eigen::Vector3f(0, -4, 0));
    d.rest_pose.push_back(t);
    if (b == 1) first_bone = static_cast<int>(d.parents.size()) - 1;
  }
  return first_bone;
}

}  // namespace posewire

#endif  // POSEWIRE_TESTS_CORE_HANGING_CHAIN_H_
