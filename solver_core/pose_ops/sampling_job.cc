#include "solver_core/pose_ops/sampling_job.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "solver_core/model/internal/simd_lanes.h"
#include "solver_core/model/quaternion_math.h"

namespace posewire {
namespace {

// Where t falls in a track's keys (n >= 1): the index k of the interval
// times[k] <= t < times[k + 1], or kBeforeFirst / kAfterLast when t is
// outside (t <= times[0], t >= times[n - 1]; a single key is both).
constexpr int kBeforeFirst = -1;
constexpr int kAfterLast = -2;

// The search behind FindKey's fast path, kept out of line so the per-track
// code stays small. From a valid hint at or before t it gallops forward
// (1, 2, 4... keys) before bisecting, so playback that skips a few keys per
// frame (a 120 fps clip played at 60 Hz) costs O(log skipped keys); anything
// else bisects all the keys, O(log keys). The result is clamped to
// [0, n - 2] so that keys that are not increasing (a clip wrongly claimed
// validated) cannot lead to an out-of-bounds read.
ABSL_ATTRIBUTE_NOINLINE int SearchKey(const float* times, int n, float t,
                                      int32_t* hint) {
  if (!(t > times[0])) return kBeforeFirst;
  if (!(t < times[n - 1])) return kAfterLast;
  int lo = 0;
  int hi = n;  // the last key <= t is in [lo, hi)
  const int h = *hint;
  if (static_cast<uint32_t>(h) < static_cast<uint32_t>(n) && times[h] <= t) {
    lo = h;
    int step = 1;
    while (lo + step < n && times[lo + step] <= t) {
      lo += step;
      step *= 2;
    }
    hi = std::min(n, lo + step);
  }
  int found =
      static_cast<int>(std::upper_bound(times + lo, times + hi, t) - times) - 1;
  found = std::clamp(found, 0, n - 2);
  *hint = found;
  return found;
}

// Tries the cursor's interval and the one after it (forward playback), then
// searches.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline int FindKey(const float* times, int n,
                                                float t, int32_t* hint) {
  int k = *hint;
  if (static_cast<uint32_t>(k) < static_cast<uint32_t>(n - 1) &&
      times[k] <= t) {
    if (t < times[k + 1]) return k;
    ++k;
    if (k < n - 1 && t < times[k + 1]) {
      *hint = k;
      return k;
    }
  }
  return SearchKey(times, n, t, hint);
}

// Interpolation rules per value type. Each writes *out and returns null, or,
// for a rotation still to be normalised (see DeferredNormalizer), the
// fallback to use if it turns out degenerate.
struct VectorOps {
  using Value = Eigen::Vector3f;
  // `a` and `b` are consecutive values of one track (b == (&a)[1]).
  static const Value* Lerp(const Value& a, const Value& b, float s,
                           RotationInterpolation, Value* out) {
#if defined(__SSE2__)
    static_assert(sizeof(Value) == 3 * sizeof(float));
    // a + (b - a) * s lane by lane, as the scalar form. Both 16-byte loads
    // stay inside the pair: a's row ends with b.x, b's row is loaded from
    // a.z on and shifted down.
    const lanes::F4 va = lanes::LoadU(a.data());
    const lanes::F4 vb = lanes::Shuffle<1, 2, 3, 3>(lanes::LoadU(b.data() - 1));
    lanes::StoreXyz(out->data(), va + (vb - va) * lanes::Splat(s));
#else
    *out = a + (b - a) * s;
#endif
    return nullptr;
  }
  static const Value* Cubic(const Value& p0, const Value& out0, const Value& p1,
                            const Value& in1, float dt, float s, Value* out) {
    *out = Hermite<Value>(p0, out0 * dt, p1, in1 * dt, s);
    return nullptr;
  }
};

struct RotationOps {
  using Value = Eigen::Quaternionf;
  static const Value* Lerp(const Value& a, const Value& b, float s,
                           RotationInterpolation ri, Value* out) {
    if (ri == RotationInterpolation::kSlerp) {
      *out = SlerpShortest(a, b, s);
      return nullptr;
    }
    *out = Value(NlerpShortestUnnormalized(a, b, s));
    return &a;
  }
  static const Value* Cubic(const Value& p0, const Value& out0, const Value& p1,
                            const Value& in1, float dt, float s, Value* out) {
    *out = Value(Hermite<Eigen::Vector4f>(p0.coeffs(), out0.coeffs() * dt,
                                          p1.coeffs(), in1.coeffs() * dt, s));
    return &p0;
  }
};

inline bool KnownInterpolation(Interpolation i) {
  return i == Interpolation::kStep || i == Interpolation::kLinear ||
         i == Interpolation::kCubicSpline;
}

// Bytes of values per byte of key times, by interpolation (step, linear,
// cubic-spline): one value per 4-byte time, three for cubic splines.
template <typename Value>
constexpr size_t kValueBytesPerTimeByte[3] = {
    sizeof(Value) / sizeof(float), sizeof(Value) / sizeof(float),
    3 * sizeof(Value) / sizeof(float)};

template <typename T>
size_t ByteSize(const std::vector<T>& v) {
  return v.size() * sizeof(T);
}

// Samples `track` at t (already mapped into the clip's range) into *out, or
// copies `rest` when the track is empty. Returns false, with `rest` written,
// when the track's shape is broken (value count not matching the key count,
// unknown interpolation): the bounds check every Run() relies on, done here
// where the sizes are loaded anyway. *pending receives null or, for a
// rotation left to DeferredNormalizer, its fallback.
//
// Inlined and writing through `out` rather than returning a value: a
// returned Eigen vector goes through the stack and its reload stalls on
// store forwarding. Written for few instructions per track, since sampling
// is bound by instruction throughput.
// The step and cubic-spline cases of SampleTrack, out of line: linear
// tracks are the common case and keep the inlined path short.
template <typename Ops>
ABSL_ATTRIBUTE_NOINLINE const typename Ops::Value* SampleStepOrCubic(
    const Track<typename Ops::Value>& track, float t, int32_t* hint,
    typename Ops::Value* out) {
  using Value = typename Ops::Value;
  const int n = static_cast<int>(track.times.size());
  const float* times = track.times.data();
  const Value* values = track.values.data();
  // Cubic-spline values are [in_0, value_0, out_0, in_1, value_1, ...].
  const bool cubic = track.interpolation == Interpolation::kCubicSpline;
  const int stride = cubic ? 3 : 1;
  const int first = cubic ? 1 : 0;
  const int k = FindKey(times, n, t, hint);
  if (k < 0) {
    *out = values[(k == kBeforeFirst ? 0 : stride * (n - 1)) + first];
    return nullptr;
  }
  const float t0 = times[k];
  if (t == t0 || !cubic) {
    *out = values[stride * k + first];
    return nullptr;
  }
  const float t1 = times[k + 1];
  const float s = (t - t0) / (t1 - t0);
  return Ops::Cubic(values[3 * k + 1], values[3 * k + 2], values[3 * k + 4],
                    values[3 * k + 3], t1 - t0, s, out);
}

// Samples `track` at t (already mapped into the clip's range) into *out, or
// copies `rest` when the track is empty. Returns false, with `rest` written,
// when the track's shape is broken (value count not matching the key count,
// unknown interpolation): the bounds check every Run() relies on, done here
// where the sizes are loaded anyway. *pending receives null or, for a
// rotation left to DeferredNormalizer, its fallback.
//
// Inlined and writing through `out` rather than returning a value: a
// returned Eigen vector goes through the stack and its reload stalls on
// store forwarding. Written for few instructions on the linear path, since
// sampling is bound by instruction throughput.
template <typename Ops>
ABSL_ATTRIBUTE_ALWAYS_INLINE inline bool SampleTrack(
    const Track<typename Ops::Value>& track, const typename Ops::Value& rest,
    float t, int32_t* hint, RotationInterpolation ri, typename Ops::Value* out,
    const typename Ops::Value** pending) {
  using Value = typename Ops::Value;
  const Interpolation ip = track.interpolation;
  const uint32_t ipi = static_cast<uint32_t>(ip);
  if (ipi > 2 ||
      ByteSize(track.values) !=
          ByteSize(track.times) * kValueBytesPerTimeByte<Value>[ipi]) {
    *out = rest;
    *pending = nullptr;
    return false;
  }
  const int n = static_cast<int>(track.times.size());
  if (n == 0) {
    *out = rest;
    *pending = nullptr;
    return true;
  }
  if (ip != Interpolation::kLinear) {
    *pending = SampleStepOrCubic<Ops>(track, t, hint, out);
    return true;
  }
  const float* times = track.times.data();
  const Value* values = track.values.data();
  *pending = nullptr;
  const int k = FindKey(times, n, t, hint);
  if (k < 0) {
    *out = values[k == kBeforeFirst ? 0 : n - 1];
    return true;
  }
  const float t0 = times[k];
  if (t == t0) {
    *out = values[k];
    return true;
  }
  const float s = (t - t0) / (times[k + 1] - t0);
  *pending = Ops::Lerp(values[k], values[k + 1], s, ri, out);
  return true;
}

// Samples every joint; false when some track's shape is broken (those
// components hold the rest pose).
bool SampleClip(const SamplingJob& job) {
  const int n = job.skeleton->num_joints();
  const float t = PlaybackTime(job.time, job.clip->duration, job.mode);
  const Transform* rest = job.skeleton->rest_pose().data();
  const JointTracks* tracks = job.clip->tracks.data();
  Transform* out = job.output.data();
  const RotationInterpolation ri = job.rotation_interpolation;

  // Without a cursor, each joint starts from where the previous joint's
  // tracks landed: tracks of one clip usually share their key times.
  int32_t scratch[3] = {0, 0, 0};
  int32_t* hints = scratch;
  int hint_stride = 0;
  if (job.cursor != nullptr) {
    if (job.cursor->keys.empty()) {
      job.cursor->keys.assign(3 * static_cast<size_t>(n), 0);
    }
    hints = job.cursor->keys.data();
    hint_stride = 3;
  }
  DeferredNormalizer normalizer;
  bool ok = true;
  for (int j = 0; j < n; ++j) {
    int32_t* h = hints + hint_stride * j;
    const JointTracks& jt = tracks[j];
    Transform& o = out[j];
    const Eigen::Vector3f* unused;
    const Eigen::Quaternionf* fallback;
    ok &= SampleTrack<VectorOps>(jt.translation, rest[j].translation, t, h + 0,
                                 ri, &o.translation, &unused);
    ok &= SampleTrack<RotationOps>(jt.rotation, rest[j].rotation, t, h + 1, ri,
                                   &o.rotation, &fallback);
    if (fallback != nullptr) normalizer.Add(&o.rotation, fallback);
    ok &= SampleTrack<VectorOps>(jt.scale, rest[j].scale, t, h + 2, ri,
                                 &o.scale, &unused);
  }
  normalizer.Flush();
  return ok;
}

template <typename T>
absl::Status CheckTrackShape(const Track<T>& track, const Clip& clip,
                             const Skeleton& skeleton, int joint,
                             absl::string_view component) {
  if (!KnownInterpolation(track.interpolation)) {
    return absl::InvalidArgumentError(
        absl::StrCat("sampling.clip '", clip.name, "' joint ", joint, " '",
                     skeleton.joint_name(joint), "' ", component,
                     " track: unknown interpolation ",
                     static_cast<int>(track.interpolation)));
  }
  const size_t per_key =
      track.interpolation == Interpolation::kCubicSpline ? 3 : 1;
  if (track.values.size() != track.times.size() * per_key) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sampling.clip '", clip.name, "' joint ", joint, " '",
        skeleton.joint_name(joint), "' ", component,
        " track: ", track.values.size(), " values for ", track.times.size(),
        " ", InterpolationName(track.interpolation), " keys"));
  }
  return absl::OkStatus();
}

// What sampling needs to stay in bounds besides the track count: value
// counts that match the key counts, known interpolations. O(joints).
absl::Status CheckClipShape(const Clip& clip, const Skeleton& skeleton) {
  for (int j = 0; j < skeleton.num_joints(); ++j) {
    const JointTracks& jt = clip.tracks[j];
    if (absl::Status s =
            CheckTrackShape(jt.translation, clip, skeleton, j, "translation");
        !s.ok()) {
      return s;
    }
    if (absl::Status s =
            CheckTrackShape(jt.rotation, clip, skeleton, j, "rotation");
        !s.ok()) {
      return s;
    }
    if (absl::Status s = CheckTrackShape(jt.scale, clip, skeleton, j, "scale");
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace

float PlaybackTime(float time, float duration, PlaybackMode mode) {
  if (!(duration > 0.0f)) return 0.0f;
  if (mode == PlaybackMode::kClamp) {
    return std::clamp(time, 0.0f, duration) + 0.0f;  // + 0: no -0
  }
  float r = std::fmod(time, duration);  // exact, sign of `time`
  if (r < 0.0f) r += duration;
  // -tiny + duration can round up to duration, which is 0 on the loop.
  if (r >= duration) r = 0.0f;
  return r + 0.0f;
}

namespace {

// Everything Validate() checks; the clip's shape only if `check_shape` (Run
// has sampling check it on the way, see SampleOrRest).
absl::Status ValidateJob(const SamplingJob& job, bool check_shape) {
  const Skeleton* skeleton = job.skeleton;
  const Clip* clip = job.clip;
  if (skeleton == nullptr) {
    return absl::InvalidArgumentError("sampling.skeleton: not set");
  }
  if (clip == nullptr) {
    return absl::InvalidArgumentError("sampling.clip: not set");
  }
  const int n = skeleton->num_joints();
  if (static_cast<int>(job.output.size()) != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("sampling.output: ", job.output.size(),
                     " transforms for a skeleton of ", n, " joints"));
  }
  if (!std::isfinite(job.time)) {
    return absl::InvalidArgumentError(
        absl::StrCat("sampling.time: ", job.time, " is not finite"));
  }
  if (job.mode != PlaybackMode::kLoop && job.mode != PlaybackMode::kClamp) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sampling.mode: unknown playback mode ", static_cast<int>(job.mode)));
  }
  if (job.rotation_interpolation != RotationInterpolation::kNlerp &&
      job.rotation_interpolation != RotationInterpolation::kSlerp) {
    return absl::InvalidArgumentError(
        absl::StrCat("sampling.rotation_interpolation: unknown value ",
                     static_cast<int>(job.rotation_interpolation)));
  }
  const SamplingCursor* cursor = job.cursor;
  if (cursor != nullptr && !cursor->keys.empty() &&
      cursor->keys.size() != 3 * static_cast<size_t>(n)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sampling.cursor: ", cursor->keys.size(), " entries for ", n,
        " joints (expected 0 or ", 3 * static_cast<size_t>(n), ")"));
  }
  if (!std::isfinite(clip->duration) || clip->duration < 0.0f) {
    return absl::InvalidArgumentError(
        absl::StrCat("sampling.clip '", clip->name, "': duration ",
                     clip->duration, " must be finite and non-negative"));
  }
  if (static_cast<int>(clip->tracks.size()) != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("sampling.clip '", clip->name, "': ", clip->tracks.size(),
                     " joint tracks for a skeleton of ", n, " joints"));
  }
  if (!job.clip_validated) {
    if (absl::Status s = clip->Validate(*skeleton); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("sampling.clip: ", s.message()));
    }
  }
  if (check_shape) return CheckClipShape(*clip, *skeleton);
  return absl::OkStatus();
}

}  // namespace

absl::Status SamplingJob::Validate() const { return ValidateJob(*this, true); }

absl::Status SamplingJob::Run() const {
  if (absl::Status s = ValidateJob(*this, false); !s.ok()) return s;
  if (!SampleClip(*this)) return CheckClipShape(*clip, *skeleton);
  return absl::OkStatus();
}

void SamplingJob::RunUnchecked() const { SampleClip(*this); }

}  // namespace posewire
