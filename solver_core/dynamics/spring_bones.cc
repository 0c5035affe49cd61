#include "solver_core/dynamics/spring_bones.h"

#include <cmath>
#include <memory>

#include "absl/strings/str_cat.h"
#include "solver_core/dynamics/internal/spring_lane_layout.h"
#include "solver_core/dynamics/internal/spring_solver.h"
#include "solver_core/model/pose.h"

namespace posewire {
namespace {

absl::Status ValidateVector(const Eigen::Vector3f& v, absl::string_view field) {
  if (!v.allFinite()) {
    return absl::InvalidArgumentError(
        absl::StrCat("spring_bones.", field, ": NaN or infinite component"));
  }
  return absl::OkStatus();
}

// The forces: finite vectors, a known space, a usable wind.
absl::Status ValidateForces(const SpringForces& forces) {
  if (absl::Status s = ValidateVector(forces.gravity, "forces.gravity");
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          ValidateVector(forces.external_force, "forces.external_force");
      !s.ok()) {
    return s;
  }
  if (forces.external_force_space != ForceSpace::kWorld &&
      forces.external_force_space != ForceSpace::kComponent) {
    return absl::InvalidArgumentError(
        absl::StrCat("spring_bones.forces.external_force_space: unknown value ",
                     static_cast<int>(forces.external_force_space)));
  }
  const SpringWind& w = forces.wind;
  if (absl::Status s = ValidateVector(w.direction, "forces.wind.direction");
      !s.ok()) {
    return s;
  }
  if (!std::isfinite(w.speed)) {
    return absl::InvalidArgumentError(
        "spring_bones.forces.wind.speed: NaN or infinite");
  }
  if (w.speed != 0.0f && !(w.direction.norm() > 1e-6f)) {
    return absl::InvalidArgumentError(
        "spring_bones.forces.wind.direction: zero vector with a non-zero "
        "wind speed");
  }
  if (!(w.noise_amplitude >= 0.0f && w.noise_amplitude <= 1.0f)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spring_bones.forces.wind.noise_amplitude: ", w.noise_amplitude,
        " is outside [0, 1]"));
  }
  if (!std::isfinite(w.noise_frequency_hz) || w.noise_frequency_hz < 0.0f) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spring_bones.forces.wind.noise_frequency_hz: ", w.noise_frequency_hz,
        " is not a finite non-negative frequency"));
  }
  return absl::OkStatus();
}

// A state_in to continue from: made for `rig` and finite.
absl::Status ValidateStateIn(const DynamicsState& st, const SpringRig& rig) {
  if (st.rig_fingerprint != rig.fingerprint()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spring_bones.state_in: made for a different rig (fingerprint ",
        st.rig_fingerprint, ", this rig is ", rig.fingerprint(),
        "); reset the state when the rig changes"));
  }
  if (static_cast<int>(st.positions.size()) != rig.num_particles()) {
    return absl::InvalidArgumentError(
        absl::StrCat("spring_bones.state_in: ", st.positions.size(),
                     " particles, the rig has ", rig.num_particles()));
  }
  if (st.space != rig.desc().space) {
    return absl::InvalidArgumentError(
        absl::StrCat("spring_bones.state_in: simulated in ",
                     SimulationSpaceName(st.space), " space, the rig in ",
                     SimulationSpaceName(rig.desc().space), " space"));
  }
  if (absl::Status s = ValidateDynamicsState(st); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("spring_bones.state_in: ", s.message()));
  }
  return absl::OkStatus();
}

}  // namespace

SpringBonesScratch::SpringBonesScratch() = default;
SpringBonesScratch::~SpringBonesScratch() = default;
SpringBonesScratch::SpringBonesScratch(SpringBonesScratch&&) noexcept = default;
SpringBonesScratch& SpringBonesScratch::operator=(
    SpringBonesScratch&&) noexcept = default;

absl::Status SpringBonesJob::Validate() const {
  if (skeleton == nullptr) {
    return absl::InvalidArgumentError("spring_bones.skeleton: not set");
  }
  if (rig == nullptr) {
    return absl::InvalidArgumentError("spring_bones.rig: not set");
  }
  if (rig->skeleton_parents() != skeleton->parents()) {
    return absl::InvalidArgumentError(
        absl::StrCat("spring_bones.rig: built for a different skeleton (",
                     rig->skeleton_parents().size(), " joints; this one has ",
                     skeleton->num_joints(), " or a different hierarchy)"));
  }
  if (static_cast<int>(output.size()) != skeleton->num_joints()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spring_bones.output: ", output.size(),
        " transforms for a skeleton of ", skeleton->num_joints(), " joints"));
  }
  if (absl::Status s = CheckNoPartialOverlap(output, "spring_bones.output",
                                             input, "spring_bones.input");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckInputPose(*skeleton, input, "spring_bones.input",
                                      input_validated);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ValidateComponentTransform(
          component_to_world, "spring_bones.component_to_world");
      !s.ok()) {
    return s;
  }
  if (!std::isfinite(dt) || dt < 0.0f) {
    return absl::InvalidArgumentError(
        absl::StrCat("spring_bones.dt: ", dt,
                     " is not a finite non-negative number of seconds"));
  }
  if (absl::Status s = ValidateForces(forces); !s.ok()) return s;
  for (size_t c = 0; c < colliders.size(); ++c) {
    if (absl::Status s =
            ValidateCollider(colliders[c], static_cast<int>(c), *skeleton);
        !s.ok()) {
      return s;
    }
  }
  if (state_out == nullptr) {
    return absl::InvalidArgumentError("spring_bones.state_out: not set");
  }
  if (state_in != nullptr && !reset && !state_in->empty()) {
    return ValidateStateIn(*state_in, *rig);
  }
  return absl::OkStatus();
}

absl::Status SpringBonesJob::Run() const {
  if (absl::Status s = Validate(); !s.ok()) return s;
  // Used only without a caller's scratch.
  SpringBonesScratch local_scratch;
  DynamicsState& s = *state_out;
  const bool initialize = reset || state_in == nullptr || state_in->empty();
  if (!initialize && state_in != state_out) s = *state_in;
  SpringBonesResult local_result;
  SpringBonesResult& r = result != nullptr ? *result : local_result;
  r = SpringBonesResult();
  // A default-constructed rig has no layout (and no particles).
  static const SpringLaneLayout kNoLanes;
  const SpringLaneLayout& layout =
      rig->lanes_ != nullptr ? *rig->lanes_ : kNoLanes;
  SpringBonesScratch& sc = scratch != nullptr ? *scratch : local_scratch;
  if (sc.buffers_ == nullptr)
    sc.buffers_ = std::make_unique<SpringSolveBuffers>();
  spring_internal::Solver solver(*this, *sc.buffers_);
  solver.Prepare(initialize, s, r);
  spring_internal::SimulateInLanes(*this, layout, *sc.buffers_, solver, s, r);
  return absl::OkStatus();
}

}  // namespace posewire
