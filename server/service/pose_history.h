// A character's recent solved model poses with their frame times, for
// rewind queries (HitQuery): a ring of a fixed number of frames. Each slot's
// pose is allocated the first time the slot is used and reused after, so a
// session that has warmed up records frames without heap allocations.
#ifndef POSEWIRE_SERVER_SERVICE_POSE_HISTORY_H_
#define POSEWIRE_SERVER_SERVICE_POSE_HISTORY_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "posewire/v1/posewire.pb.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/transform.h"

namespace posewire::server {

class PoseHistory {
 public:
  // Keeps the last `capacity` frames (0: none).
  explicit PoseHistory(int capacity = 0) : capacity_(capacity) {}

  // The slot the next frame is written to, sized for `joints`. It becomes
  // part of the history only on Commit; until then the history is as it
  // was (a character whose frame fails records nothing).
  absl::Span<Transform> Next(int joints);
  // Makes the pose written through Next the newest frame, at `time` (never
  // before the newest frame's: the session checks Frame.time) and placed
  // by `root`.
  void Commit(double time, const Transform& root);

  int size() const { return size_; }
  // Times of the oldest and newest frames kept (size() > 0).
  double oldest_time() const { return At(0).time; }
  double newest_time() const { return At(size_ - 1).time; }

  // The character's model pose and root at `time` (rewind.h's
  // interpolation between the frames around it; a recorded time gives that
  // frame exactly, the latest of several recorded at the same time). The
  // window is [max(oldest, newest - window_seconds), newest]; outside it:
  // OUT_OF_RANGE naming `field` and the window; no frames: OUT_OF_RANGE.
  absl::Status Rewind(double time, double window_seconds,
                      absl::string_view field, ModelPose& model,
                      Transform& root) const;
  // The frames kept, oldest first, as a snapshot carries them.
  void ToProto(
      google::protobuf::RepeatedPtrField<v1::HistoryFrame>* frames) const;
  // Replaces the history with `frames` (a snapshot's, oldest first; only
  // the newest `capacity` are kept) for a skeleton of `joints` joints.
  // INVALID_ARGUMENT naming `field` for a frame of the wrong size, a
  // non-finite value or times that go backwards; the history is then
  // empty.
  absl::Status FromProto(
      const google::protobuf::RepeatedPtrField<v1::HistoryFrame>& frames,
      int joints, absl::string_view field);

  // The newest frame's pose (size() > 0 or OUT_OF_RANGE naming `field`).
  absl::Status Newest(absl::string_view field, ModelPose& model,
                      Transform& root) const;

 private:
  struct Frame {
    double time = 0.0;
    Transform root;
    std::vector<Transform> model;
  };
  // Appends one frame of a snapshot (FromProto), naming `at` in errors.
  absl::Status ReadFrame(const v1::HistoryFrame& in, int joints,
                         absl::string_view at);
  // The frame `age` places after the oldest (0: oldest).
  const Frame& At(int age) const { return ring_[(start_ + age) % capacity_]; }
  absl::Status Empty(absl::string_view field) const;

  int capacity_ = 0;
  std::vector<Frame> ring_;  // capacity_ slots once the first frame comes
  int start_ = 0;            // slot of the oldest frame
  int size_ = 0;
};

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_SERVICE_POSE_HISTORY_H_
