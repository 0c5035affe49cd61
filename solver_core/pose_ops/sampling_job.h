// SamplingJob: evaluates a Clip at one time into a local pose.
//
// Keyframe interpolation as in Hands-on C++ Game Animation Programming,
// ch. 8 (tracks, step / linear / cubic Hermite) and glTF 2.0 Appendix C
// (CUBICSPLINE keys carry in- and out-tangents, scaled by the key interval),
// with ozz-animation's SamplingJob as the reference for behaviour: a caller-
// owned cursor remembers where the previous sample fell in every track, so
// forward playback finds its keys in O(1) per track (the same interval or
// the next one; a galloping search when a frame skips several keys, O(log
// skipped)); any other time (a seek, a loop wrap, playing backwards) falls
// back to a binary search, O(log keys). Without a cursor, each joint's
// search starts where the previous joint's landed: tracks of one clip
// usually share their key times, so only the first joint pays the search.
//
// Speed: the clip stays in its plain form (vectors of keys per track); the
// linear path is written for few instructions per track, and rotations are
// normalised four at a time (see DeferredNormalizer in quaternion_math.h).
//
// Conventions:
// - Time. kLoop wraps the requested time into [0, duration) with fmod (so
//   duration itself plays as 0, Szauer 2020's AdjustTimeToFitRange); kClamp
//   clamps it into [0, duration]. A zero-length clip always samples at 0.
// - Before a track's first key the first key's value holds, after its last
//   key the last value holds (glTF); there is no interpolation across the loop
//   seam from the last key back to the first.
// - A time equal to a key time returns that key's value bit for bit, whatever
//   the interpolation (nlerp would otherwise renormalise it).
// - A joint component without a track takes the skeleton's rest pose.
// - Rotations: kLinear tracks interpolate along the shortest path, by nlerp
//   (default, like ozz) or slerp (`rotation_interpolation`); cubic-spline
//   rotations are evaluated on the coefficients and normalised (glTF); step
//   holds the earlier key.
// - The cursor is only a hint: the output is bit-identical with a fresh
//   cursor, a stale one, one from another clip, or none at all. It is a plain
//   vector of key indices, so a service may keep it per session.
// - Errors: Run() reports a broken clip shape (value and key counts that
//   disagree) found while sampling; the output's content is then
//   unspecified. Every other error is found before anything is written.
#ifndef POSEWIRE_SOLVER_CORE_POSE_OPS_SAMPLING_JOB_H_
#define POSEWIRE_SOLVER_CORE_POSE_OPS_SAMPLING_JOB_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "solver_core/model/clip.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"

namespace posewire {

enum class PlaybackMode {
  kLoop,   // wrap the time into [0, duration)
  kClamp,  // clamp the time into [0, duration]
};

enum class RotationInterpolation {
  kNlerp,  // normalised lerp, shortest path
  kSlerp,  // spherical lerp, shortest path
};

// Where the previous sample fell in every track of a clip: keys[3 * j + c]
// is the index of the key that opened the interval of joint j's component c
// (0 translation, 1 rotation, 2 scale). Hint only; see the header comment.
struct SamplingCursor {
  std::vector<int32_t> keys;
};

// `time` mapped into [0, duration] as `mode` says. `time` must be finite and
// `duration` finite and non-negative.
float PlaybackTime(float time, float duration, PlaybackMode mode);

struct SamplingJob {
  // Inputs.
  const Skeleton* skeleton = nullptr;
  const Clip* clip = nullptr;
  // Seconds; any finite value (mapped by `mode`).
  float time = 0.0f;
  PlaybackMode mode = PlaybackMode::kLoop;
  RotationInterpolation rotation_interpolation = RotationInterpolation::kNlerp;
  // Set when `clip` already passed Clip::Validate(*skeleton) (the asset
  // readers guarantee it; a service validates a clip once when it is
  // registered). Validate() then skips re-checking every key, O(keys), and
  // only checks the clip's shape (track and value counts, interpolation
  // values), O(joints): enough that sampling never reads out of bounds.
  bool clip_validated = false;
  // Optional; written by Run, so one cursor per concurrent playback. Empty
  // cursors are sized on first use; otherwise it must hold 3 * num_joints
  // entries.
  SamplingCursor* cursor = nullptr;

  // Output: one transform per joint.
  absl::Span<Transform> output = {};

  // Checks pointers, sizes, that `time` is finite, the enum values, the
  // cursor's size, and the clip (fully, or its shape if clip_validated).
  absl::Status Validate() const;
  // Validates, then samples.
  absl::Status Run() const;
  // Samples without validating; for callers that validated these inputs.
  void RunUnchecked() const;
};

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_POSE_OPS_SAMPLING_JOB_H_
