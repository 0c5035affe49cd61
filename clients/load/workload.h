// The load generator's workload: the requests posewire-load sends, built
// once before the run from a real skeleton and clip so that sending costs
// only a copy and the same messages can run in process for the baseline.
#ifndef POSEWIRE_CLIENTS_LOAD_WORKLOAD_H_
#define POSEWIRE_CLIENTS_LOAD_WORKLOAD_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "posewire/v1/posewire.pb.h"
#include "solver_core/io/asset.h"

namespace posewire::load {

struct WorkloadOptions {
  // "fk_ik", "spring", "blend3", "fullbody" or "referee".
  std::string op_mix = "fk_ik";
  int characters = 1;
  // Distinct message variants (different clip times and IK targets) that the
  // senders cycle through.
  int variants = 8;
  // Seconds of the clip kept (from its start); 0: the whole clip. The unary
  // Solve carries its clips in every request, so a short clip keeps the
  // message from being dominated by key data.
  float clip_seconds = 0.5f;
  // Session frames send what changes as op updates (CharacterFrame.
  // op_updates: the clip time, IK targets and bend goals) rather than the
  // whole pipeline again, where the mix allows (fk_ik, spring).
  bool op_updates = true;
  // Seconds per frame for stateful operations (spring bones), and the
  // referee's tick.
  float dt = 1.0f / 60.0f;
  // referee: the rays of each tick's hit query, and how far in the past
  // it looks (the shooter's view time).
  int rays_per_query = 32;
  double rewind_seconds = 0.1;
};

struct Workload {
  // Operation names (as in GetInfoResponse.operations) the mix needs.
  std::vector<std::string> required_ops;
  // Session: register skeleton, clip, rig and characters, in order.
  std::vector<v1::SessionRequest> registrations;
  // Session frames (sequence left 0: each sender numbers its own).
  std::vector<v1::SessionRequest> frames;
  // Solve requests with the skeleton inline, and the same by content hash.
  std::vector<v1::SolveRequest> solve_inline;
  std::vector<v1::SolveRequest> solve_by_hash;
  std::string skeleton_hash;
  int joints = 0;
  // Whether the session frames carry op updates (else whole ops).
  bool frames_send_op_updates = false;

  // referee: a tick is a frame and then a hit query on the same stream.
  // Frames carry the game's time (FrameEncoder, TickTime(sequence,
  // seconds_per_frame)) so the session keeps each character's poses;
  // queries[v] follows frames[v] and asks at QueryTime(sequence). Empty
  // for the other mixes, whose frames are untimed and tick alone.
  std::vector<v1::SessionRequest> queries;
  double seconds_per_frame = 0.0;
  double rewind_seconds = 0.0;

  // The time the query after frame `sequence` asks for: rewind_seconds
  // before the frame, never before the first frame.
  double QueryTime(uint64_t sequence) const;
};

// Builds the workload for `asset` (its first clip). Fails with
// INVALID_ARGUMENT for an unknown mix or a rig missing the joints it needs.
absl::StatusOr<Workload> BuildWorkload(const ImportedAsset& asset,
                                       const WorkloadOptions& options);

}  // namespace posewire::load

#endif  // POSEWIRE_CLIENTS_LOAD_WORKLOAD_H_
