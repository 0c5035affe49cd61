#include "server/service/pose_history.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "solver_core/referee/rewind.h"

namespace posewire::server {

absl::Span<Transform> PoseHistory::Next(int joints) {
  if (capacity_ <= 0) return {};
  if (ring_.empty()) ring_.resize(capacity_);
  std::vector<Transform>& model = ring_[(start_ + size_) % capacity_].model;
  model.resize(joints);
  return absl::MakeSpan(model);
}

void PoseHistory::Commit(double time, const Transform& root) {
  if (capacity_ <= 0) return;
  Frame& frame = ring_[(start_ + size_) % capacity_];
  frame.time = time;
  frame.root = root;
  if (size_ < capacity_) {
    ++size_;
  } else {
    start_ = (start_ + 1) % capacity_;  // the oldest frame was overwritten
  }
}

absl::Status PoseHistory::Empty(absl::string_view field) const {
  return absl::OutOfRangeError(
      absl::StrCat(field, ": the character has no solved frame to rewind yet",
                   capacity_ <= 0 ? " (this server keeps no history: "
                                    "limits.history_frames is 0)"
                                  : ""));
}

absl::Status PoseHistory::Newest(absl::string_view field, ModelPose& model,
                                 Transform& root) const {
  if (size_ == 0) return Empty(field);
  const Frame& newest = At(size_ - 1);
  model.assign(newest.model.begin(), newest.model.end());
  root = newest.root;
  return absl::OkStatus();
}

absl::Status PoseHistory::Rewind(double time, double window_seconds,
                                 absl::string_view field, ModelPose& model,
                                 Transform& root) const {
  if (size_ == 0) return Empty(field);
  const double newest = newest_time();
  const double start = std::max(oldest_time(), newest - window_seconds);
  if (!(time >= start && time <= newest)) {
    return absl::OutOfRangeError(absl::StrCat(
        field, ": ", time, " is outside the character's rewind window [", start,
        ", ", newest, "] (its last ", size_,
        " frames, at most limits.history_window_seconds = ", window_seconds,
        " s before the newest)"));
  }
  // The latest frame at or before `time`: times never decrease, so a
  // binary search over ages.
  int low = 0, high = size_;  // answer in [low, high)
  while (high - low > 1) {
    const int mid = low + (high - low) / 2;
    if (At(mid).time <= time) {
      low = mid;
    } else {
      high = mid;
    }
  }
  const Frame& before = At(low);
  model.resize(before.model.size());
  if (before.time == time || low + 1 == size_) {
    std::copy(before.model.begin(), before.model.end(), model.begin());
    root = before.root;
    return absl::OkStatus();
  }
  const Frame& after = At(low + 1);
  const float alpha = RewindAlpha(before.time, after.time, time);
  root = InterpolateTransform(before.root, after.root, alpha);
  return InterpolatePosesJob{.before = before.model,
                             .after = after.model,
                             .alpha = alpha,
                             .output = absl::MakeSpan(model)}
      .Run();
}

}  // namespace posewire::server
