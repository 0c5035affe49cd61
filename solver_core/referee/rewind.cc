#include "solver_core/referee/rewind.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "solver_core/model/quaternion_math.h"

namespace posewire {

float RewindAlpha(double before_time, double after_time, double time) {
  const double span = after_time - before_time;
  if (!(span > 0.0)) return 1.0f;
  const float alpha = static_cast<float>((time - before_time) / span);
  return std::clamp(alpha, 0.0f, 1.0f);
}

Transform InterpolateTransform(const Transform& before, const Transform& after,
                               float alpha) {
  // The endpoints are returned as they are: nlerp's renormalisation would
  // move a recorded rotation by an ulp.
  if (alpha == 0.0f) return before;
  if (alpha == 1.0f) return after;
  Transform out;
  out.translation =
      before.translation + (after.translation - before.translation) * alpha;
  out.rotation = NlerpShortest(before.rotation, after.rotation, alpha);
  out.scale = before.scale + (after.scale - before.scale) * alpha;
  return out;
}

absl::Status InterpolatePosesJob::Validate() const {
  if (before.size() != after.size() || output.size() != before.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "interpolate_poses: before has ", before.size(), " joints, after ",
        after.size(), ", output ", output.size(), "; they must match"));
  }
  if (!(alpha >= 0.0f && alpha <= 1.0f)) {
    return absl::InvalidArgumentError(
        absl::StrCat("interpolate_poses.alpha: ", alpha, " must be in [0, 1]"));
  }
  return absl::OkStatus();
}

absl::Status InterpolatePosesJob::Run() const {
  if (absl::Status s = Validate(); !s.ok()) return s;
  for (size_t j = 0; j < output.size(); ++j) {
    output[j] = InterpolateTransform(before[j], after[j], alpha);
  }
  return absl::OkStatus();
}

}  // namespace posewire
