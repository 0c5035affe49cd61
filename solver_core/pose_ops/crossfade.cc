#include "solver_core/pose_ops/crossfade.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "solver_core/pose_ops/blending_job.h"

namespace posewire {
namespace {

bool KnownCurve(FadeCurve c) {
  return c == FadeCurve::kLinear || c == FadeCurve::kSmoothstep;
}

// Moves a playback on by dt, wrapped or clamped into its clip.
void Advance(float dt, const Clip& clip, ClipPlayback* playback) {
  playback->time =
      PlaybackTime(playback->time + dt, clip.duration, playback->mode);
}

// Checks one playback against the clips, reusing SamplingJob's checks of the
// clip, the time and the mode.
absl::Status CheckPlayback(const CrossfadeJob& job, const ClipPlayback& p,
                           absl::string_view field) {
  if (p.clip < 0 || p.clip >= static_cast<int>(job.clips.size())) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".clip: ", p.clip,
                                                   " is out of range [0, ",
                                                   job.clips.size(), ")"));
  }
  SamplingJob sampling;
  sampling.skeleton = job.skeleton;
  sampling.clip = job.clips[p.clip];
  sampling.time = p.time;
  sampling.mode = p.mode;
  sampling.rotation_interpolation = job.rotation_interpolation;
  sampling.clip_validated = job.clips_validated;
  sampling.output = job.output;
  if (absl::Status s = sampling.Validate(); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " (clip ", p.clip, "): ", s.message()));
  }
  return absl::OkStatus();
}

}  // namespace

float FadeWeight(FadeCurve curve, float elapsed, float duration) {
  if (!(duration > 0.0f) || elapsed >= duration) return 1.0f;
  const float x = std::clamp(elapsed / duration, 0.0f, 1.0f);
  if (curve == FadeCurve::kSmoothstep) return x * x * (3.0f - 2.0f * x);
  return x;
}

CrossfadeState Play(int clip, float start_time, PlaybackMode mode) {
  CrossfadeState state;
  state.current = ClipPlayback{clip, start_time, mode};
  return state;
}

absl::StatusOr<CrossfadeState> FadeTo(CrossfadeState state,
                                      const FadeRequest& request) {
  if (request.clip < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "crossfade.fade_to.clip: ", request.clip, " is not a clip index"));
  }
  if (!std::isfinite(request.duration) || request.duration < 0.0f) {
    return absl::InvalidArgumentError(
        absl::StrCat("crossfade.fade_to.duration: ", request.duration,
                     " must be finite and non-negative"));
  }
  if (!std::isfinite(request.start_time)) {
    return absl::InvalidArgumentError(
        absl::StrCat("crossfade.fade_to.start_time: ", request.start_time,
                     " is not finite"));
  }
  if (!KnownCurve(request.curve)) {
    return absl::InvalidArgumentError(
        absl::StrCat("crossfade.fade_to.curve: unknown value ",
                     static_cast<int>(request.curve)));
  }
  if (state.current.clip < 0) {
    return Play(request.clip, request.start_time, request.mode);
  }
  const int last =
      state.fades.empty() ? state.current.clip : state.fades.back().target.clip;
  if (last == request.clip) return state;
  if (static_cast<int>(state.fades.size()) >= kMaxQueuedFades) {
    return absl::ResourceExhaustedError(
        absl::StrCat("crossfade.fades: the queue already holds ",
                     kMaxQueuedFades, " fades; wait for one to finish"));
  }
  Fade fade;
  fade.target = ClipPlayback{request.clip, request.start_time, request.mode};
  fade.duration = request.duration;
  fade.elapsed = 0.0f;
  fade.curve = request.curve;
  state.fades.push_back(fade);
  return state;
}

CrossfadeState Cancel(CrossfadeState state) {
  state.fades.clear();
  return state;
}

namespace {

// Checks a playback's own numbers (not its clip's content).
absl::Status CheckPlaybackValues(const CrossfadeJob& job, const ClipPlayback& p,
                                 absl::string_view field) {
  if (p.clip < 0 || p.clip >= static_cast<int>(job.clips.size())) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".clip: ", p.clip,
                                                   " is out of range [0, ",
                                                   job.clips.size(), ")"));
  }
  if (job.clips[p.clip] == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".clip: ", p.clip, " names a null clip"));
  }
  if (!std::isfinite(p.time)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".time: ", p.time, " is not finite"));
  }
  if (p.mode != PlaybackMode::kLoop && p.mode != PlaybackMode::kClamp) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".mode: unknown playback mode ", static_cast<int>(p.mode)));
  }
  return absl::OkStatus();
}

// Everything but the clips' content: pointers, sizes, dt and the state's
// numbers. O(fades).
absl::Status ValidateState(const CrossfadeJob& job) {
  if (job.skeleton == nullptr) {
    return absl::InvalidArgumentError("crossfade.skeleton: not set");
  }
  if (job.state == nullptr) {
    return absl::InvalidArgumentError("crossfade.state: not set");
  }
  if (job.next_state == nullptr) {
    return absl::InvalidArgumentError("crossfade.next_state: not set");
  }
  if (static_cast<int>(job.output.size()) != job.skeleton->num_joints()) {
    return absl::InvalidArgumentError(
        absl::StrCat("crossfade.output: ", job.output.size(),
                     " transforms for a skeleton of ",
                     job.skeleton->num_joints(), " joints"));
  }
  if (!std::isfinite(job.dt) || job.dt < 0.0f) {
    return absl::InvalidArgumentError(absl::StrCat(
        "crossfade.dt: ", job.dt, " must be finite and non-negative"));
  }
  if (job.rotation_interpolation != RotationInterpolation::kNlerp &&
      job.rotation_interpolation != RotationInterpolation::kSlerp) {
    return absl::InvalidArgumentError(
        absl::StrCat("crossfade.rotation_interpolation: unknown value ",
                     static_cast<int>(job.rotation_interpolation)));
  }
  const CrossfadeState& s = *job.state;
  if (s.current.clip == -1) {
    if (!s.fades.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "crossfade.state.fades: ", s.fades.size(),
          " fades queued but no clip is playing (current.clip is -1)"));
    }
    return absl::OkStatus();
  }
  if (absl::Status st =
          CheckPlaybackValues(job, s.current, "crossfade.state.current");
      !st.ok()) {
    return st;
  }
  if (static_cast<int>(s.fades.size()) > kMaxQueuedFades) {
    return absl::InvalidArgumentError(
        absl::StrCat("crossfade.state.fades: ", s.fades.size(),
                     " fades (at most ", kMaxQueuedFades, ")"));
  }
  for (size_t i = 0; i < s.fades.size(); ++i) {
    const Fade& f = s.fades[i];
    auto field = [i] { return absl::StrCat("crossfade.state.fades[", i, "]"); };
    if (!std::isfinite(f.duration) || f.duration < 0.0f) {
      return absl::InvalidArgumentError(
          absl::StrCat(field(), ".duration: ", f.duration,
                       " must be finite and non-negative"));
    }
    if (!std::isfinite(f.elapsed) || f.elapsed < 0.0f ||
        f.elapsed > f.duration) {
      return absl::InvalidArgumentError(
          absl::StrCat(field(), ".elapsed: ", f.elapsed, " is not in [0, ",
                       f.duration, "]"));
    }
    if (!KnownCurve(f.curve)) {
      return absl::InvalidArgumentError(absl::StrCat(
          field(), ".curve: unknown value ", static_cast<int>(f.curve)));
    }
    if (f.target.clip < 0 ||
        f.target.clip >= static_cast<int>(job.clips.size()) ||
        job.clips[f.target.clip] == nullptr || !std::isfinite(f.target.time) ||
        (f.target.mode != PlaybackMode::kLoop &&
         f.target.mode != PlaybackMode::kClamp)) {
      return CheckPlaybackValues(job, f.target,
                                 absl::StrCat(field(), ".target"));
    }
  }
  return absl::OkStatus();
}

// A sampling failure, named after the playback it came from: fade index
// `fade`, or the current clip when fade < 0.
absl::Status SamplingError(const absl::Status& s, int fade, int clip) {
  const std::string field =
      fade < 0 ? std::string("crossfade.state.current")
               : absl::StrCat("crossfade.state.fades[", fade, "].target");
  return absl::InvalidArgumentError(
      absl::StrCat(field, " (clip ", clip, "): ", s.message()));
}

// The step. With `checked`, every sampling validates its clip (fully, or
// its shape if clips_validated) and a failure returns before the state is
// written; the pose is then unspecified.
absl::Status Step(const CrossfadeJob& job, bool checked) {
  const CrossfadeState& in = *job.state;
  const absl::Span<Transform> pose = job.output;
  if (in.current.clip < 0) {
    std::copy(job.skeleton->rest_pose().begin(),
              job.skeleton->rest_pose().end(), pose.begin());
    if (job.next_state != job.state) *job.next_state = in;
    return absl::OkStatus();
  }

  // The advanced playbacks, kept local until every sampling succeeded.
  const int num_fades =
      std::min(static_cast<int>(in.fades.size()), kMaxQueuedFades);
  Fade fades[kMaxQueuedFades];
  ClipPlayback current = in.current;
  Advance(job.dt, *job.clips[current.clip], &current);
  int finished = -1;
  for (int i = 0; i < num_fades; ++i) {
    Fade& f = fades[i];
    f = in.fades[i];
    Advance(job.dt, *job.clips[f.target.clip], &f.target);
    f.elapsed = std::min(f.elapsed + job.dt, f.duration);
    if (f.elapsed >= f.duration) finished = i;
  }
  // The last finished fade becomes the current clip; it hid everything
  // before it, which leaves the queue with it.
  int current_fade = -1;  // which input fade `current` came from
  if (finished >= 0) {
    current = fades[finished].target;
    current_fade = finished;
  }
  const int first_active = finished + 1;

  CrossfadeWorkspace local;
  CrossfadeWorkspace& ws = job.workspace != nullptr ? *job.workspace : local;
  // Keep each playback's cursor with it when fades leave the queue (only a
  // speed matter: cursors are hints).
  if (finished >= 0 && ws.cursors.size() > static_cast<size_t>(first_active)) {
    ws.cursors.erase(ws.cursors.begin(), ws.cursors.begin() + first_active);
  }
  const size_t layers_needed = static_cast<size_t>(num_fades - finished);
  if (ws.cursors.size() < layers_needed) ws.cursors.resize(layers_needed);
  for (SamplingCursor& c : ws.cursors) {
    // A cursor sized for another skeleton is reset rather than rejected.
    if (c.keys.size() != 3 * pose.size()) c.keys.clear();
  }

  SamplingJob sampling;
  sampling.skeleton = job.skeleton;
  sampling.rotation_interpolation = job.rotation_interpolation;
  sampling.clip_validated = job.clips_validated;
  auto sample = [&](const ClipPlayback& p, SamplingCursor* cursor,
                    absl::Span<Transform> out) {
    sampling.clip = job.clips[p.clip];
    sampling.time = p.time;
    sampling.mode = p.mode;
    sampling.cursor = cursor;
    sampling.output = out;
    if (checked) return sampling.Run();
    sampling.RunUnchecked();
    return absl::OkStatus();
  };

  if (absl::Status s = sample(current, &ws.cursors[0], pose); !s.ok()) {
    return SamplingError(s, current_fade, current.clip);
  }
  if (first_active < num_fades) {
    if (ws.scratch.size() != pose.size()) ws.scratch.resize(pose.size());
    BlendLayer layers[2];
    layers[0].transform = pose;
    layers[1].transform = ws.scratch;
    BlendingJob blend;
    blend.skeleton = job.skeleton;
    blend.layers = absl::MakeConstSpan(layers, 2);
    blend.base_layer = 0;
    blend.threshold = 0.0f;
    blend.output = pose;
    for (int i = first_active; i < num_fades; ++i) {
      const Fade& f = fades[i];
      if (absl::Status s = sample(f.target, &ws.cursors[i - finished],
                                  absl::MakeSpan(ws.scratch));
          !s.ok()) {
        return SamplingError(s, i, f.target.clip);
      }
      const float w = FadeWeight(f.curve, f.elapsed, f.duration);
      layers[0].weight = 1.0f - w;
      layers[1].weight = w;
      blend.RunUnchecked();
    }
  }

  CrossfadeState& next = *job.next_state;
  next.current = current;
  next.fades.assign(fades + first_active, fades + num_fades);
  return absl::OkStatus();
}

}  // namespace

absl::Status CrossfadeJob::Validate() const {
  if (absl::Status s = ValidateState(*this); !s.ok()) return s;
  const CrossfadeState& s = *state;
  if (s.current.clip < 0) return absl::OkStatus();
  if (absl::Status st =
          CheckPlayback(*this, s.current, "crossfade.state.current");
      !st.ok()) {
    return st;
  }
  for (size_t i = 0; i < s.fades.size(); ++i) {
    if (absl::Status st = CheckPlayback(
            *this, s.fades[i].target,
            absl::StrCat("crossfade.state.fades[", i, "].target"));
        !st.ok()) {
      return st;
    }
  }
  return absl::OkStatus();
}

absl::Status CrossfadeJob::Run() const {
  if (absl::Status s = ValidateState(*this); !s.ok()) return s;
  return Step(*this, /*checked=*/true);
}

void CrossfadeJob::RunUnchecked() const {
  Step(*this, /*checked=*/false).IgnoreError();
}

absl::StatusOr<CrossfadeState> StepCrossfade(const Skeleton& skeleton,
                                             absl::Span<const Clip> clips,
                                             const CrossfadeState& state,
                                             float dt,
                                             absl::Span<Transform> pose) {
  absl::InlinedVector<const Clip*, 8> pointers;
  pointers.reserve(clips.size());
  for (const Clip& clip : clips) pointers.push_back(&clip);
  CrossfadeState next;
  CrossfadeJob job;
  job.skeleton = &skeleton;
  job.clips = pointers;
  job.state = &state;
  job.dt = dt;
  job.output = pose;
  job.next_state = &next;
  if (absl::Status s = job.Run(); !s.ok()) return s;
  return next;
}

}  // namespace posewire
