// The Bake call's work without gRPC: a request checked once, then its frames
// solved a message at a time, each frame as a Session character's would be
// (the source clip sampled at the frame's time, then the compiled plan with
// the state carried over).
#ifndef POSEWIRE_SERVER_SERVICE_BAKE_H_
#define POSEWIRE_SERVER_SERVICE_BAKE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "posewire/v1/posewire.pb.h"
#include "server/ops/clip_library.h"
#include "server/ops/op.h"
#include "server/ops/op_timings.h"
#include "server/ops/plan.h"
#include "server/service/character_solve.h"
#include "server/service/server_config.h"
#include "server/service/skeleton_cache.h"

namespace posewire::server {

// Frames per message when the request leaves it to the server: as many as
// fit in about this many bytes of poses.
// Larger messages cost fewer wake-ups per frame on both sides (measured by
// bench/bake_bench.cc) and stay far below gRPC's default 4 MiB limit.
inline constexpr int64_t kBakeMessageBytes = 256 << 10;
// The most a request may ask for per message.
inline constexpr int kMaxBakeFramesPerMessage = 4096;

class BakeRun {
 public:
  // Checks `request` whole: INVALID_ARGUMENT naming the field, NOT_FOUND
  // for a skeleton hash or source clip the request lacks, RESOURCE_EXHAUSTED
  // past config's max_bake_frames or max_bake_bytes. The run reads
  // `request` until it is destroyed.
  static absl::StatusOr<std::unique_ptr<BakeRun>> Start(
      const v1::BakeRequest& request, const ServerConfig& config,
      SkeletonCache& skeletons);

  // Solves the next message's frames into `response` (empty on entry),
  // with progress; the last message also carries the state and the
  // skeleton's hash. A frame that fails stops the run with its error,
  // named "frames[i]...". Not to be called once done().
  absl::Status Next(v1::BakeResponse* response,
                    OperationTimings* timings = nullptr);

  bool done() const { return next_frame_ == frames_total_; }
  uint32_t frames_total() const { return frames_total_; }
  uint32_t frames_per_message() const { return frames_per_message_; }

 private:
  BakeRun(const v1::BakeRequest& request, ResolvedSkeleton skeleton);

  absl::Status CheckAndPrepare(const ServerConfig& config,
                               SkeletonCache& skeletons);
  absl::Status CheckTimedOps();
  absl::Status CheckFrameUpdates();
  // Frame `index`'s updates by op (the timed ones and its frame_updates
  // entry's), or empty for none.
  absl::Span<const v1::OpUpdate* const> UpdatesOf(uint32_t index) const;
  absl::Status SolveFrame(uint32_t index, v1::BakedFrame* out,
                          OperationTimings* timings);

  const v1::BakeRequest& request_;
  ResolvedSkeleton skeleton_;
  ClipLibrary clips_;
  std::shared_ptr<const Plan> plan_;
  CharacterState state_;
  CharacterScratch scratch_;
  // Each timed op's update (its time set per frame) by op, or empty.
  std::vector<v1::OpUpdate> timed_updates_;
  OpUpdatesByOp timed_by_op_;
  // Per frame_updates entry, its updates and the timed ones by op, indexed
  // once when the run starts (empty: the entry has none).
  std::vector<OpUpdatesByOp> frame_updates_by_op_;
  // frame_updates' placements, by frame (empty: none is given).
  std::vector<std::optional<Transform>> frame_roots_;
  // The source clip's index in clips_, or -1 for the rest pose.
  int source_clip_ = -1;
  double frame_rate_ = 30.0;
  float dt_ = 0.0f;
  uint32_t frames_total_ = 0;
  uint32_t frames_per_message_ = 1;
  uint32_t next_frame_ = 0;
};

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_SERVICE_BAKE_H_
