#include "server/service/pose_history.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "server/wire/wire_convert.h"
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

void PoseHistory::ToProto(
    google::protobuf::RepeatedPtrField<v1::HistoryFrame>* frames) const {
  for (int age = 0; age < size_; ++age) {
    const Frame& frame = At(age);
    v1::HistoryFrame* out = frames->Add();
    out->set_time(frame.time);
    PoseToProto(absl::MakeConstSpan(&frame.root, 1), out->mutable_root());
    PoseToProto(frame.model, out->mutable_model());
  }
}

absl::Status PoseHistory::FromProto(
    const google::protobuf::RepeatedPtrField<v1::HistoryFrame>& frames,
    int joints, absl::string_view field) {
  start_ = 0;
  size_ = 0;
  if (capacity_ <= 0) return absl::OkStatus();
  const int first = std::max(0, frames.size() - capacity_);
  for (int i = first; i < frames.size(); ++i) {
    const v1::HistoryFrame& in = frames[i];
    const std::string at = absl::StrCat(field, "[", i, "]");
    absl::Status s = ReadFrame(in, joints, at);
    if (!s.ok()) {
      start_ = 0;
      size_ = 0;
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status PoseHistory::ReadFrame(const v1::HistoryFrame& in, int joints,
                                    absl::string_view at) {
  if (!std::isfinite(in.time()) || (size_ > 0 && in.time() < newest_time())) {
    return absl::InvalidArgumentError(
        absl::StrCat(at, ".time: ", in.time(),
                     " is not finite or goes back before the frame before it"));
  }
  absl::StatusOr<LocalPose> root =
      UnsizedPoseFromProto(in.root(), absl::StrCat(at, ".root"));
  if (!root.ok()) return root.status();
  absl::StatusOr<LocalPose> model =
      UnsizedPoseFromProto(in.model(), absl::StrCat(at, ".model"));
  if (!model.ok()) return model.status();
  if (root->size() != 1 || static_cast<int>(model->size()) != joints) {
    return absl::InvalidArgumentError(
        absl::StrCat(at, ": ", root->size(), " root and ", model->size(),
                     " model transforms for a skeleton of ", joints,
                     " joints (expected 1 and ", joints, ")"));
  }
  const auto finite = [](const Transform& t) { return IsFinite(t); };
  if (!finite((*root)[0]) ||
      !std::all_of(model->begin(), model->end(), finite)) {
    return absl::InvalidArgumentError(
        absl::StrCat(at, ": a transform is not finite"));
  }
  absl::Span<Transform> slot = Next(joints);
  std::copy(model->begin(), model->end(), slot.begin());
  Commit(in.time(), (*root)[0]);
  return absl::OkStatus();
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
