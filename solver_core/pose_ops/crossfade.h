// Crossfade: the CrossFadeTaskManager of Szauer 2020, ch. 12
// (docs/REFERENCES.md), made stateless. Everything that lasts between frames
// is a CrossfadeState value, plain numbers and clip indices (no pointers), so
// a service can store, serialise and hand it back; CrossfadeJob advances it by
// dt against a list of clips and produces the pose.
//
// Semantics (the book's, with its gaps filled in):
// - The state plays one current clip (an index into the job's `clips`, -1
//   for none) and a queue of fades, each with its own target clip, playback
//   time, duration, elapsed time and curve.
// - FadeTo with nothing playing starts the clip at once (the book's
//   BeginPlay). Fading to the clip already last in the queue, or to the
//   playing clip when the queue is empty, adds nothing. The queue holds at
//   most kMaxQueuedFades fades.
// - Each step advances the current clip and every fade's target by dt (loop
//   or clamp per clip), and every fade's elapsed time by dt (capped at its
//   duration). The pose is the current clip's sample, then each fade in queue
//   order blended over it: pose = mix(pose, target, curve(elapsed/duration)).
// - A fade whose elapsed time reaches its duration is finished: its target
//   becomes the current clip (keeping its playback time), and it and every
//   fade before it leave the queue. At weight 1 the finished fade already
//   hid everything before it, so this changes the state, never the pose. The
//   pose of the step in which a fade finishes is the target's sample exactly
//   (with any later fades blended over it).
// - dt = 0 advances nothing and returns the pose at the current times; dt
//   larger than a whole fade finishes it in that step (the target's time
//   still advances by the whole dt); a zero-length fade (duration 0) is
//   finished at the first step that sees it, whatever dt, i.e. a cut. A
//   negative or non-finite dt is INVALID_ARGUMENT.
// - Cancel drops every queued fade: the current clip plays on alone and the
//   pose jumps back to it. To return smoothly instead, fade to the playing
//   clip (allowed while the queue is not empty) with start_time set to its
//   current time, so both copies stay in step.
// - Rest pose when nothing is playing.
// - Errors leave `next_state` untouched (the step is computed aside and
//   committed last); the pose is then unspecified.
// - The fade curve applies to the weight: linear (the book's
//   elapsed / duration, clamped to 1) or smoothstep x^2 (3 - 2x), which
//   starts and ends the fade with zero slope.
#ifndef POSEWIRE_SOLVER_CORE_POSE_OPS_CROSSFADE_H_
#define POSEWIRE_SOLVER_CORE_POSE_OPS_CROSSFADE_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "solver_core/model/clip.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"
#include "solver_core/pose_ops/sampling_job.h"

namespace posewire {

// Longest fade queue: bounds the work per step whatever a client sends.
inline constexpr int kMaxQueuedFades = 16;

enum class FadeCurve {
  kLinear,      // weight = x
  kSmoothstep,  // weight = x^2 (3 - 2x): eases in and out
};

// One clip being played.
struct ClipPlayback {
  int clip = -1;  // index into CrossfadeJob::clips; -1: nothing
  float time = 0.0f;
  PlaybackMode mode = PlaybackMode::kLoop;
};

struct Fade {
  ClipPlayback target;
  float duration = 0.0f;  // seconds, >= 0
  float elapsed = 0.0f;   // seconds, in [0, duration]
  FadeCurve curve = FadeCurve::kLinear;
};

struct CrossfadeState {
  ClipPlayback current;
  std::vector<Fade> fades;  // in the order they were requested
};

struct FadeRequest {
  int clip = -1;
  float duration = 0.25f;
  FadeCurve curve = FadeCurve::kLinear;
  PlaybackMode mode = PlaybackMode::kLoop;
  // Where the target clip starts playing (the book starts at 0).
  float start_time = 0.0f;
};

// The weight `curve` gives a fade `elapsed` seconds into `duration`: in
// [0, 1], 1 for a zero-length fade.
float FadeWeight(FadeCurve curve, float elapsed, float duration);

// Plays `clip` from `start_time` with no fades (the book's BeginPlay).
CrossfadeState Play(int clip, float start_time = 0.0f,
                    PlaybackMode mode = PlaybackMode::kLoop);

// `state` with the fade added as the header describes. INVALID_ARGUMENT for
// a negative clip index, a duration or start time that is not finite or a
// negative duration; RESOURCE_EXHAUSTED when the queue is full.
absl::StatusOr<CrossfadeState> FadeTo(CrossfadeState state,
                                      const FadeRequest& request);

// `state` without its fades.
CrossfadeState Cancel(CrossfadeState state);

// Reusable memory for CrossfadeJob: a scratch pose and sampling cursors.
// Not state: results are bit-identical with a fresh, reused or absent one.
struct CrossfadeWorkspace {
  LocalPose scratch;
  std::vector<SamplingCursor> cursors;
};

struct CrossfadeJob {
  // Inputs.
  const Skeleton* skeleton = nullptr;
  // Every clip the state may name, each valid for `skeleton` (pointers, so
  // that a service can share one clip's keys among many callers' lists).
  absl::Span<const Clip* const> clips = {};
  // As SamplingJob::clip_validated, for every clip.
  bool clips_validated = false;
  RotationInterpolation rotation_interpolation = RotationInterpolation::kNlerp;
  const CrossfadeState* state = nullptr;
  // Seconds, finite and >= 0.
  float dt = 0.0f;
  // Optional.
  CrossfadeWorkspace* workspace = nullptr;

  // Outputs. `next_state` may be `state`.
  // The local pose, one transform per joint.
  absl::Span<Transform> output = {};
  CrossfadeState* next_state = nullptr;

  // Checks pointers, sizes, dt, the state (clip indices in range, times,
  // durations and elapsed finite and in range, enum values, queue length)
  // and the clips the state names (fully, or their shape if
  // clips_validated).
  absl::Status Validate() const;
  // Checks the same (the clips as each is sampled), then steps.
  absl::Status Run() const;
  // Steps without validating; for callers that validated these inputs.
  void RunUnchecked() const;
};

// The step function in one call: (state, dt, clips) -> (new state, pose),
// with full validation of the clips the state names.
absl::StatusOr<CrossfadeState> StepCrossfade(const Skeleton& skeleton,
                                             absl::Span<const Clip> clips,
                                             const CrossfadeState& state,
                                             float dt,
                                             absl::Span<Transform> pose);

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_POSE_OPS_CROSSFADE_H_
