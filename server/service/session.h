// A streaming session's state and logic, apart from gRPC so it can be tested
// and reasoned about on its own: one SessionRequest in, one SessionResponse
// out, in order. The reactor in posewire_service.cc only moves messages.
#ifndef POSEWIRE_SERVER_SERVICE_SESSION_H_
#define POSEWIRE_SERVER_SERVICE_SESSION_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "posewire/v1/posewire.pb.h"
#include "server/ops/clip_library.h"
#include "server/ops/op.h"
#include "server/ops/op_timings.h"
#include "server/ops/plan.h"
#include "server/service/character_solve.h"
#include "server/service/clip_cache.h"
#include "server/service/hit_query.h"
#include "server/service/pose_history.h"
#include "server/service/server_config.h"
#include "server/service/skeleton_cache.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/referee/hitboxes.h"

namespace posewire::server {

// Counters a session reports when it ends (one log line per session).
struct SessionStats {
  int64_t messages = 0;
  int64_t frames = 0;
  int64_t character_frames = 0;
  int64_t errors = 0;
};

// What a server's sessions share by content, so that sessions registering
// the same skeleton, rig or clip hold one copy of it, which their frames
// keep warm in cache: skeletons and the rigs compiled for them (a
// SkeletonCache and its PlanCache of their own, apart from Solve's), and
// clips. A rig whose ops name another registration of the session (a
// retarget source, a limit set) is compiled for its session alone.
struct SessionShared {
  explicit SessionShared(int capacity) : skeletons(capacity) {}
  SkeletonCache skeletons;
  ClipCache clips;
};

class Session {
 public:
  // `metrics` (optional) records per-operation times. `shared` (optional;
  // must outlive the session) is what the server's sessions share.
  explicit Session(const ServerConfig& config,
                   OperationTimingsSink* metrics = nullptr,
                   SessionShared* shared = nullptr)
      : config_(config),
        metrics_(metrics),
        shared_(shared),
        lookup_{.by_hash = {},
                .by_id =
                    [this](const std::string& id) {
                      auto it = skeletons_.find(id);
                      return it == skeletons_.end()
                                 ? std::shared_ptr<const Skeleton>()
                                 : it->second.skeleton;
                    },
                .limits_by_id =
                    [this](const std::string& id) -> const RegisteredLimits* {
                  auto it = limit_sets_.find(id);
                  return it == limit_sets_.end() ? nullptr : &it->second;
                },
                .max_joints = config.max_joints_per_skeleton} {}
  // Not copied or moved: lookup_ refers to this session's skeletons.
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Handles one request; never fails as a whole: problems become error
  // statuses inside `response` (per message, per frame or per character).
  // A registration that would take the session's registered bytes past
  // ServerConfig::max_session_bytes is refused with RESOURCE_EXHAUSTED.
  void Handle(const v1::SessionRequest& request, v1::SessionResponse* response);

  // Counts a message the transport could not parse (it never reaches
  // Handle) as a message and an error.
  void CountUnparseable() {
    ++stats_.messages;
    ++stats_.errors;
  }

  // After Handle: when periodic snapshots are on (SnapshotRequest
  // .every_frames) and the frame just handled completed a period, writes
  // that snapshot to `response` and returns true; the transport sends it
  // after the frame's answer.
  bool TakeDueSnapshot(v1::SessionResponse* response);

  // The last message of a stream whose server drains: a snapshot of the
  // state after the last message handled, marked as the hand-over
  // (SessionSnapshot.handover).
  void WriteHandover(v1::SessionResponse* response);

  const SessionStats& stats() const { return stats_; }

 private:
  struct SkeletonEntry {
    std::shared_ptr<const Skeleton> skeleton;
    // Its content hash; empty when the session shares nothing.
    std::string hash;
    std::unique_ptr<ClipLibrary> clips;
  };
  // A rig is compiled when it is registered: a frame only runs its plan.
  struct Rig {
    std::shared_ptr<const Skeleton> skeleton;
    ClipLibrary* clips;  // the skeleton's, owned by its SkeletonEntry
    std::shared_ptr<const Plan> plan;
  };
  struct Character {
    std::string rig_id;
    std::shared_ptr<const Rig> rig;
    CharacterState state;
    // Its solved model poses with their frame times, for HitQuery.
    PoseHistory history;
  };
  struct HitboxSet {
    std::shared_ptr<const Skeleton> skeleton;
    std::string skeleton_id;
    std::vector<Hitbox> hitboxes;
  };

  // A resume waiting for the client to resend registrations.
  struct PendingResume {
    v1::SnapshotContent content;
    // Per entry of registrations_: resent and registered.
    std::vector<bool> received;
    int remaining = 0;
  };

  // SnapshotRequest, ResumeSession (session.cc's snapshot part).
  void HandleSnapshotRequest(const v1::SnapshotRequest& request,
                             v1::SessionSnapshot* snapshot);
  void WriteSnapshot(v1::SessionSnapshot* snapshot);
  void HandleResume(const v1::ResumeSession& resume, v1::ResumeResult* result);
  absl::Status StartResume(const v1::ResumeSession& resume,
                           v1::ResumeResult* result);
  // While a resume waits: checks that `request` is one of the registrations
  // it waits for, with the snapshot's content hash; returns its index in
  // registrations_ (or the refusal).
  absl::StatusOr<int> CheckResent(const v1::SessionRequest& request,
                                  absl::string_view kind,
                                  const std::string& id) const;
  // After a registration succeeded: records it for snapshots, or marks it
  // received by the pending resume (and completes the resume after the
  // last one).
  absl::Status NoteRegistration(const v1::SessionRequest& request,
                                absl::string_view kind, const std::string& id,
                                int resent_index);
  // Brings back the snapshot's characters and frame position; on an error
  // the session is emptied (Clear).
  absl::Status FinishResume();
  // FAILED_PRECONDITION naming `field` while a resume waits, else OK.
  absl::Status CheckNotResuming(absl::string_view field) const;
  // Forgets every registration, character and frame position: a stream
  // whose resume failed part-way starts afresh.
  void Clear();
  // The registration switch, after the byte budget.
  void Register(const v1::SessionRequest& request,
                v1::SessionResponse* response);
  absl::Status RegisterSkeleton(const v1::RegisterSkeleton& message);
  absl::Status RegisterClip(const v1::RegisterClip& message);
  absl::Status RegisterRig(const v1::RegisterRig& message);
  absl::Status RegisterCharacter(const v1::RegisterCharacter& message);
  absl::Status RegisterHitboxes(const v1::RegisterHitboxes& message);
  // Learnt limits (learn_from_clips) are also written to `learned`.
  absl::Status RegisterLimits(const v1::RegisterLimits& message,
                              v1::LearnLimitsResponse* learned);
  // Checks the per-session object limit and that `id` is new in `kind`.
  template <typename Map>
  absl::Status CheckNewId(const Map& map, absl::string_view kind,
                          const std::string& id) const;
  void HandleFrame(const v1::Frame& frame, v1::FrameResult* result);
  void HandleQuery(const v1::HitQuery& query, v1::QueryResult* result);
  absl::Status AnswerQuery(const v1::HitQuery& query, v1::QueryResult* result);
  // Keeps the character's solved pose (scratch_) in its history at `time`;
  // `model_ready`: scratch_.model already holds its model pose.
  void Record(Character& character, double time, bool model_ready);
  absl::Status SolveFrameCharacter(const v1::Frame& frame, int index,
                                   OperationTimings* timings,
                                   v1::CharacterResult* result);

  const ServerConfig& config_;
  OperationTimingsSink* metrics_;
  SessionShared* shared_;
  // What ops name by registration id: a retarget's source skeleton, a
  // plausibility op's limit set.
  const RegistryLookup lookup_;
  SessionStats stats_;
  int objects_ = 0;
  // Wire bytes of the registrations held, against max_session_bytes: the
  // wire size stands in for the memory the converted objects hold (packed
  // floats convert to Transforms of about the same size).
  int64_t bytes_ = 0;
  bool any_frame_ = false;
  uint64_t last_sequence_ = 0;
  // The last timed frame's time (Frame.time never goes backwards); frames
  // without a time are neither checked against it nor kept in histories.
  bool any_timed_frame_ = false;
  double last_time_ = 0.0;
  absl::flat_hash_map<std::string, SkeletonEntry> skeletons_;
  absl::flat_hash_map<std::string, std::shared_ptr<const Rig>> rigs_;
  absl::flat_hash_map<std::string, Character> characters_;
  absl::flat_hash_map<std::string, HitboxSet> hitbox_sets_;
  absl::flat_hash_map<std::string, RegisteredLimits> limit_sets_;
  // Skeletons, clips, rigs, hitbox sets and limit sets in the order
  // registered, with
  // their content hashes: what a snapshot refers to.
  std::vector<v1::SnapshotRegistration> registrations_;
  std::optional<PendingResume> resume_;
  // Periodic snapshots: every this many accepted frames (0: none).
  uint32_t snapshot_every_ = 0;
  uint32_t frames_since_snapshot_ = 0;
  bool snapshot_due_ = false;
  // A query's targets' poses, kept between queries.
  std::vector<HitTargetPose> query_targets_;
  // Every character's poses on the way, kept between characters and
  // frames so that they are not heap allocations each time.
  CharacterScratch scratch_;
  // The state changes of the character being solved (rolled back if it
  // fails).
  StateUndo undo_;
};

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_SERVICE_SESSION_H_
