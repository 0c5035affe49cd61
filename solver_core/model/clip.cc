#include "solver_core/model/clip.h"

#include <cmath>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "solver_core/model/pose.h"

namespace posewire {
namespace {

bool ValueIsFinite(const Eigen::Vector3f& v) { return v.allFinite(); }
bool ValueIsFinite(const Eigen::Quaternionf& q) {
  return q.coeffs().allFinite();
}

template <typename T>
absl::Status ValidateTrack(const Track<T>& track, const Clip& clip,
                           const Skeleton& skeleton, int joint,
                           absl::string_view component) {
  auto where = [&] {
    return absl::StrCat("clip '", clip.name, "' joint ", joint, " '",
                        skeleton.joint_name(joint), "' ", component, " track");
  };
  // An out-of-range enum (e.g. cast from a wire integer) would otherwise be
  // sampled as whatever a switch's default happens to do.
  if (track.interpolation != Interpolation::kStep &&
      track.interpolation != Interpolation::kLinear &&
      track.interpolation != Interpolation::kCubicSpline) {
    return absl::InvalidArgumentError(
        absl::StrCat(where(), ": unknown interpolation ",
                     static_cast<int>(track.interpolation)));
  }
  const size_t keys = track.times.size();
  const size_t per_key =
      track.interpolation == Interpolation::kCubicSpline ? 3 : 1;
  if (track.values.size() != keys * per_key) {
    return absl::InvalidArgumentError(
        absl::StrCat(where(), ": ", track.values.size(), " values for ", keys,
                     " ", InterpolationName(track.interpolation),
                     " keys (expected ", keys * per_key, ")"));
  }
  for (size_t k = 0; k < keys; ++k) {
    const float t = track.times[k];
    if (!std::isfinite(t) || t < 0.0f || t > clip.duration) {
      return absl::InvalidArgumentError(
          absl::StrCat(where(), ": key ", k, " time ", t, " is outside [0, ",
                       clip.duration, "]"));
    }
    if (k > 0 && !(t > track.times[k - 1])) {
      return absl::InvalidArgumentError(absl::StrCat(
          where(), ": key ", k, " time ", t, " does not increase (previous ",
          track.times[k - 1], ")"));
    }
  }
  for (size_t v = 0; v < track.values.size(); ++v) {
    if (!ValueIsFinite(track.values[v])) {
      return absl::InvalidArgumentError(absl::StrCat(
          where(), ": value ", v, " has a NaN or infinite component"));
    }
  }
  if constexpr (std::is_same_v<T, Eigen::Quaternionf>) {
    for (size_t k = 0; k < keys; ++k) {
      const float norm = track.key_value(k).norm();
      if (!(std::fabs(norm - 1.0f) <= kUnitQuaternionTolerance)) {
        return absl::InvalidArgumentError(absl::StrCat(
            where(), ": key ", k, " rotation norm ", norm,
            " is not 1 (tolerance ", kUnitQuaternionTolerance, ")"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

const char* InterpolationName(Interpolation interpolation) {
  switch (interpolation) {
    case Interpolation::kStep:
      return "step";
    case Interpolation::kLinear:
      return "linear";
    case Interpolation::kCubicSpline:
      return "cubic-spline";
  }
  return "unknown";
}

absl::Status Clip::Validate(const Skeleton& skeleton) const {
  if (!std::isfinite(duration) || duration < 0.0f) {
    return absl::InvalidArgumentError(
        absl::StrCat("clip '", name, "': duration ", duration,
                     " must be finite and non-negative"));
  }
  if (static_cast<int>(tracks.size()) != skeleton.num_joints()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "clip '", name, "': ", tracks.size(),
        " joint tracks for a skeleton of ", skeleton.num_joints(), " joints"));
  }
  for (int j = 0; j < skeleton.num_joints(); ++j) {
    const JointTracks& jt = tracks[j];
    if (absl::Status s =
            ValidateTrack(jt.translation, *this, skeleton, j, "translation");
        !s.ok()) {
      return s;
    }
    if (absl::Status s =
            ValidateTrack(jt.rotation, *this, skeleton, j, "rotation");
        !s.ok()) {
      return s;
    }
    if (absl::Status s = ValidateTrack(jt.scale, *this, skeleton, j, "scale");
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace posewire
