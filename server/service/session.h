// A streaming session's state and logic, apart from gRPC so it can be tested
// and reasoned about on its own: one SessionRequest in, one SessionResponse
// out, in order. The reactor in posewire_service.cc only moves messages.
#ifndef POSEWIRE_SERVER_SERVICE_SESSION_H_
#define POSEWIRE_SERVER_SERVICE_SESSION_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "posewire/v1/posewire.pb.h"
#include "server/ops/clip_library.h"
#include "server/ops/op.h"
#include "server/ops/op_timings.h"
#include "server/ops/plan.h"
#include "server/service/character_solve.h"
#include "server/service/server_config.h"
#include "solver_core/model/skeleton.h"

namespace posewire::server {

// Counters a session reports when it ends (one log line per session).
struct SessionStats {
  int64_t messages = 0;
  int64_t frames = 0;
  int64_t character_frames = 0;
  int64_t errors = 0;
};

class Session {
 public:
  // `metrics` (optional) records per-operation times.
  explicit Session(const ServerConfig& config,
                   OperationTimingsSink* metrics = nullptr)
      : config_(config), metrics_(metrics) {}

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

  const SessionStats& stats() const { return stats_; }

 private:
  struct SkeletonEntry {
    std::shared_ptr<const Skeleton> skeleton;
    std::unique_ptr<ClipLibrary> clips;
  };
  // A rig is compiled when it is registered: a frame only runs its plan.
  struct Rig {
    std::shared_ptr<const Skeleton> skeleton;
    ClipLibrary* clips;  // the skeleton's, owned by its SkeletonEntry
    std::shared_ptr<const Plan> plan;
  };
  struct Character {
    std::shared_ptr<const Rig> rig;
    CharacterState state;
  };

  // The registration switch, after the byte budget.
  void Register(const v1::SessionRequest& request,
                v1::SessionResponse* response);
  absl::Status RegisterSkeleton(const v1::RegisterSkeleton& message);
  absl::Status RegisterClip(const v1::RegisterClip& message);
  absl::Status RegisterRig(const v1::RegisterRig& message);
  absl::Status RegisterCharacter(const v1::RegisterCharacter& message);
  // Checks the per-session object limit and that `id` is new in `kind`.
  template <typename Map>
  absl::Status CheckNewId(const Map& map, absl::string_view kind,
                          const std::string& id) const;
  void HandleFrame(const v1::Frame& frame, v1::FrameResult* result);
  absl::Status SolveFrameCharacter(const v1::Frame& frame, int index,
                                   OperationTimings* timings,
                                   v1::CharacterResult* result);

  const ServerConfig& config_;
  OperationTimingsSink* metrics_;
  SessionStats stats_;
  int objects_ = 0;
  // Wire bytes of the registrations held, against max_session_bytes: the
  // wire size stands in for the memory the converted objects hold (packed
  // floats convert to Transforms of about the same size).
  int64_t bytes_ = 0;
  bool any_frame_ = false;
  uint64_t last_sequence_ = 0;
  absl::flat_hash_map<std::string, SkeletonEntry> skeletons_;
  absl::flat_hash_map<std::string, std::shared_ptr<const Rig>> rigs_;
  absl::flat_hash_map<std::string, Character> characters_;
  // Every character's poses on the way, kept between characters and
  // frames so that they are not heap allocations each time.
  CharacterScratch scratch_;
  // The state changes of the character being solved (rolled back if it
  // fails).
  StateUndo undo_;
};

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_SERVICE_SESSION_H_
