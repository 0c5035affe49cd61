#include "solver_core/model/skeleton.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace posewire {

absl::StatusOr<Skeleton> Skeleton::Create(SkeletonDesc desc) {
  const size_t n = desc.parents.size();
  // Sizes first: names without parents is a mismatch, not an empty skeleton.
  if (desc.joint_names.size() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("skeleton.joint_names: ", desc.joint_names.size(),
                     " names for ", n, " parents"));
  }
  if (desc.rest_pose.size() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("skeleton.rest_pose: ", desc.rest_pose.size(),
                     " transforms for ", n, " joints"));
  }
  if (n == 0) {
    return absl::InvalidArgumentError("skeleton: no joints");
  }
  if (n > static_cast<size_t>(kMaxSkeletonJoints)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "skeleton: ", n, " joints exceed the maximum of ", kMaxSkeletonJoints));
  }

  Skeleton s;
  s.index_by_name_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const std::string& name = desc.joint_names[i];
    if (name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("skeleton.joint_names[", i, "]: empty name"));
    }
    auto [it, inserted] = s.index_by_name_.emplace(name, static_cast<int>(i));
    if (!inserted) {
      return absl::InvalidArgumentError(
          absl::StrCat("skeleton.joint_names[", i, "] '", name,
                       "': duplicate of joint ", it->second));
    }
    const int p = desc.parents[i];
    if (p != kNoParent && (p < 0 || p >= static_cast<int>(n))) {
      return absl::InvalidArgumentError(
          absl::StrCat("skeleton.parents[", i, "] '", name, "': parent ", p,
                       " is out of range [-1, ", n, ")"));
    }
    if (p >= static_cast<int>(i)) {
      // Covers self-parenting and cycles: in topological order a parent
      // always comes first, so no cycle can exist once this holds.
      return absl::InvalidArgumentError(absl::StrCat(
          "skeleton.parents[", i, "] '", name, "': parent ", p,
          " does not come before its child (joints must be in topological "
          "order; a cycle or self-parent also ends here)"));
    }
    const Transform& rest = desc.rest_pose[i];
    absl::Status status = ValidateTransform(rest, "skeleton.rest_pose",
                                            static_cast<int>(i), name);
    if (!status.ok()) return status;
  }

  // Children lists in CSR form.
  s.child_begin_.assign(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    if (desc.parents[i] != kNoParent) ++s.child_begin_[desc.parents[i] + 1];
  }
  for (size_t i = 0; i < n; ++i) s.child_begin_[i + 1] += s.child_begin_[i];
  s.children_.resize(s.child_begin_[n]);
  std::vector<int> fill(s.child_begin_.begin(), s.child_begin_.end() - 1);
  for (size_t i = 0; i < n; ++i) {
    if (desc.parents[i] != kNoParent) {
      s.children_[fill[desc.parents[i]]++] = static_cast<int>(i);
    }
  }

  // Depth-first pre-order numbering with an explicit stack (no recursion:
  // a 65k-deep chain must not overflow the call stack).
  s.preorder_.assign(n, 0);
  s.subtree_end_.assign(n, 0);
  s.depth_.assign(n, 0);
  int counter = 0;
  std::vector<std::pair<int, int>> stack;  // (joint, next child slot)
  for (size_t r = 0; r < n; ++r) {
    if (desc.parents[r] != kNoParent) continue;
    s.preorder_[r] = counter++;
    s.depth_[r] = 1;
    stack.emplace_back(static_cast<int>(r), s.child_begin_[r]);
    while (!stack.empty()) {
      auto& [joint, slot] = stack.back();
      if (slot == s.child_begin_[joint + 1]) {
        s.subtree_end_[joint] = counter;
        stack.pop_back();
        continue;
      }
      const int child = s.children_[slot++];
      s.preorder_[child] = counter++;
      s.depth_[child] = s.depth_[joint] + 1;
      stack.emplace_back(child, s.child_begin_[child]);
    }
  }

  s.level_order_.resize(n);
  for (size_t j = 0; j < n; ++j) s.level_order_[j] = static_cast<int>(j);
  std::stable_sort(s.level_order_.begin(), s.level_order_.end(),
                   [&s](int a, int b) { return s.depth_[a] < s.depth_[b]; });

  s.joint_names_ = std::move(desc.joint_names);
  s.parents_ = std::move(desc.parents);
  s.rest_pose_ = std::move(desc.rest_pose);
  return s;
}

int Skeleton::FindJoint(absl::string_view name) const {
  auto it = index_by_name_.find(name);
  return it == index_by_name_.end() ? -1 : it->second;
}

absl::Span<const int> Skeleton::children(int joint) const {
  return absl::MakeConstSpan(children_.data() + child_begin_[joint],
                             child_begin_[joint + 1] - child_begin_[joint]);
}

}  // namespace posewire
