// Clip: keyframed animation of a skeleton, as the asset readers produce it and
// the sampling job consumes it.
//
// Each joint has up to three tracks (translation, rotation, scale); an empty
// track means "use the rest pose" for that component. Keys are stored as in
// glTF 2.0: strictly increasing times, and for cubic-spline tracks three
// values per key (in-tangent, value, out-tangent).
#ifndef POSEWIRE_SOLVER_CORE_MODEL_CLIP_H_
#define POSEWIRE_SOLVER_CORE_MODEL_CLIP_H_

#include <Eigen/Geometry>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "solver_core/model/skeleton.h"

namespace posewire {

enum class Interpolation {
  kStep,         // hold each key until the next one
  kLinear,       // lerp; rotations by shortest-path nlerp or slerp
  kCubicSpline,  // cubic Hermite with explicit tangents (glTF CUBICSPLINE)
};

const char* InterpolationName(Interpolation interpolation);

template <typename T>
struct Track {
  std::vector<float> times;
  // times.size() values, or 3 * times.size() for kCubicSpline laid out as
  // [in_tangent_0, value_0, out_tangent_0, in_tangent_1, ...].
  std::vector<T> values;
  Interpolation interpolation = Interpolation::kLinear;

  bool empty() const { return times.empty(); }
  // The value at key `k` (skipping tangents for cubic-spline tracks).
  const T& key_value(size_t k) const {
    return interpolation == Interpolation::kCubicSpline ? values[3 * k + 1]
                                                        : values[k];
  }
};

struct JointTracks {
  Track<Eigen::Vector3f> translation;
  // Cubic-spline tangents are stored as (non-unit) quaternion coefficients.
  Track<Eigen::Quaternionf> rotation;
  Track<Eigen::Vector3f> scale;
};

struct Clip {
  std::string name;
  // Playback length in seconds; every key time lies in [0, duration].
  float duration = 0.0f;
  // One entry per skeleton joint, in joint order.
  std::vector<JointTracks> tracks;

  // Checks the clip against `skeleton`: one JointTracks per joint, finite
  // non-negative duration, key times finite, strictly increasing and within
  // [0, duration], value counts matching the interpolation, values finite and
  // key rotations of unit norm. Errors name the clip, joint and track.
  absl::Status Validate(const Skeleton& skeleton) const;
};

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_MODEL_CLIP_H_
