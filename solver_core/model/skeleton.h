// Skeleton: the immutable joint hierarchy every pose and job refers to.
//
// Joints are stored in topological order (each parent before its children),
// which lets forward kinematics run as one pass. Construction validates
// everything once (names, parents, rest pose) so jobs can trust the
// hierarchy and only check the per-frame data they are given.
#ifndef POSEWIRE_SOLVER_CORE_MODEL_SKELETON_H_
#define POSEWIRE_SOLVER_CORE_MODEL_SKELETON_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "solver_core/model/transform.h"

namespace posewire {

// Parent index of a root joint.
inline constexpr int kNoParent = -1;

// Largest hierarchy a Skeleton accepts. Services impose their own, usually
// smaller, limit; this one only keeps indices and allocations sane.
inline constexpr int kMaxSkeletonJoints = 1 << 16;

struct SkeletonDesc {
  std::vector<std::string> joint_names;
  // parents[i] is kNoParent or an index < i.
  std::vector<int> parents;
  std::vector<Transform> rest_pose;
};

class Skeleton {
 public:
  // Validates `desc` and precomputes the lookup tables. Errors name the field
  // and the joint: empty skeleton, size mismatch, empty or duplicate name,
  // parent out of range or not before its child, non-finite or non-unit rest
  // transform. A zero rest scale is accepted (rigs hide parts that way);
  // ModelToLocalJob rejects zero scale on parents per frame.
  static absl::StatusOr<Skeleton> Create(SkeletonDesc desc);

  Skeleton() = default;

  int num_joints() const { return static_cast<int>(parents_.size()); }
  absl::Span<const std::string> joint_names() const { return joint_names_; }
  const std::string& joint_name(int joint) const { return joint_names_[joint]; }
  absl::Span<const int> parents() const { return parents_; }
  int parent(int joint) const { return parents_[joint]; }
  absl::Span<const Transform> rest_pose() const { return rest_pose_; }

  // Index of the joint called `name`, or -1.
  int FindJoint(absl::string_view name) const;

  // Direct children of `joint`, in index order.
  absl::Span<const int> children(int joint) const;

  // True when `joint` is `root` or one of its descendants. O(1): compares
  // positions in a depth-first pre-order numbering.
  bool IsInSubtree(int root, int joint) const {
    const int pre = preorder_[joint];
    return pre >= preorder_[root] && pre < subtree_end_[root];
  }

  // Number of joints in the subtree rooted at `joint`, itself included.
  int SubtreeSize(int joint) const {
    return subtree_end_[joint] - preorder_[joint];
  }

  // Number of joints from the root down to `joint`, inclusive.
  int Depth(int joint) const { return depth_[joint]; }

  // Every joint, shallowest first (by Depth, then by index): parents still
  // come before their children, and the joints of one level do not depend
  // on each other. Forward kinematics in this order lets the CPU work on
  // several chains at once, where index order makes each joint of a chain
  // wait for the one before it.
  absl::Span<const int> level_order() const { return level_order_; }

 private:
  std::vector<std::string> joint_names_;
  std::vector<int> parents_;
  std::vector<Transform> rest_pose_;
  absl::flat_hash_map<std::string, int> index_by_name_;
  // Children of joint j are children_[child_begin_[j] .. child_begin_[j+1]).
  std::vector<int> child_begin_;
  std::vector<int> children_;
  std::vector<int> preorder_;
  std::vector<int> subtree_end_;
  std::vector<int> depth_;
  std::vector<int> level_order_;
};

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_MODEL_SKELETON_H_
