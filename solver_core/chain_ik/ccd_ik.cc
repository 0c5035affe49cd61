#include "solver_core/chain_ik/ccd_ik.h"

#include <algorithm>
#include <cmath>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/quaternion_math.h"

namespace posewire {
namespace {

constexpr float kPi = static_cast<float>(EIGEN_PI);
// Effector and target directions closer than this (sine of the angle) are
// treated as collinear: CCD's rotation axis is then noise.
constexpr float kCollinearSine = 1e-4f;
// Sweeps before a slow one hands over to the polish, and what counts as
// slow: a sweep that leaves more than this fraction of the previous sweep's
// error (squared: half the distance).
constexpr int kMinSweeps = 3;
constexpr float kSlowSweep2 = 0.25f;
// A round of sweeps and polish that leaves more than this fraction of the
// squared error it started from has stalled.
constexpr float kRoundGain2 = 0.98f;

Eigen::Quaternionf Normalized(const Eigen::Quaternionf& q) {
  return Eigen::Quaternionf(q.coeffs() * (1.0f / q.coeffs().norm()));
}

float WrapPi(float a) { return std::remainder(a, 2.0f * kPi); }

bool Collinear(const Eigen::Vector3f& a, const Eigen::Vector3f& b) {
  const float ab = a.norm() * b.norm();
  return ab > 0.0f && a.cross(b).norm() <= kCollinearSine * ab;
}

// Welman's fixed-axis step for heuristic (1): the rotation about `axis`
// (unit, model space) that turns `to_effector` (from the joint) so the
// effector lands at `distance` from the previous chain joint, which sits at
// -`from_parent` from the joint. Solves
//   |from_parent + R(theta) to_effector| = distance
// i.e. A cos(theta) + B sin(theta) = C; when no angle gives the distance
// exactly, the nearest one.
Eigen::Quaternionf FixedAxisStep(const Eigen::Vector3f& axis,
                                 const Eigen::Vector3f& from_parent,
                                 const Eigen::Vector3f& to_effector,
                                 float distance) {
  const Eigen::Vector3f e_par = axis * axis.dot(to_effector);
  const Eigen::Vector3f e_perp = to_effector - e_par;
  const Eigen::Vector3f e_side = axis.cross(to_effector);
  const float a = from_parent.dot(e_perp);
  const float b = from_parent.dot(e_side);
  const float c = 0.5f * (distance * distance - from_parent.squaredNorm() -
                          to_effector.squaredNorm()) -
                  from_parent.dot(e_par);
  const float rho = std::sqrt(a * a + b * b);
  if (!(rho > 1e-20f)) return Eigen::Quaternionf::Identity();
  const float alpha = std::acos(std::clamp(c / rho, -1.0f, 1.0f));
  const float phi = std::atan2(b, a);
  const float t1 = WrapPi(phi + alpha);
  const float t2 = WrapPi(phi - alpha);
  float theta;
  if (std::fabs(std::fabs(t1) - std::fabs(t2)) <= 1e-6f) {
    theta = std::max(t1, t2);
  } else {
    theta = std::fabs(t1) < std::fabs(t2) ? t1 : t2;
  }
  return QuaternionFromAngleAxis(theta, axis);
}

// The plain CCD step at a joint at `p` with model rotation `r` under a
// parent with model rotation `rp` (full weight, no cap, no limit, no
// fallback): turns the joint by the smallest rotation taking the effector's
// direction onto the target's, writing the new local rotation and effector.
// The effector's new place needs no rotation: it is the joint plus the unit
// direction to the target times the effector's distance, so one square root
// lies on the serial chain from step to step (the target's direction depends
// on the joint only). The local rotation is TurnedLocalRotation of the
// unnormalised halfway quaternion (ik_chain.h's HalfwayRotation, same
// arithmetic): one normalisation instead of two. Returns false, writing
// nothing, outside everyday magnitudes and for antiparallel directions, which
// the general step handles.
inline bool PlainStep(const Eigen::Vector3f& p, const Eigen::Quaternionf& r,
                      const Eigen::Quaternionf& rp,
                      const Eigen::Vector3f& target, Eigen::Vector3f* tip,
                      Eigen::Quaternionf* local) {
  const Eigen::Vector3f e = *tip - p;
  const Eigen::Vector3f g = target - p;
  const float ee = e.squaredNorm();
  const float gg = g.squaredNorm();
  const float eg = ee * gg;
  if (!(eg > 1e-30f && eg < 1e30f)) return false;
  const float m = std::sqrt(eg);
  const float d = e.dot(g);
  if (d < (-1.0f + 1e-6f) * m) return false;
  const Eigen::Vector3f axis = e.cross(g);
  *local = TurnedLocalRotation(
      rp, Eigen::Quaternionf(m + d, axis.x(), axis.y(), axis.z()), r);
  const Eigen::Vector3f goal_dir = g * (1.0f / std::sqrt(gg));
  *tip = p + goal_dir * std::sqrt(ee);
  return true;
}

// The general form of the same step: FromToRotation, which handles every
// magnitude and the antiparallel half turn.
inline void GeneralPlainStep(const Eigen::Vector3f& p,
                             const Eigen::Quaternionf& r,
                             const Eigen::Quaternionf& rp,
                             const Eigen::Vector3f& target,
                             Eigen::Vector3f* tip, Eigen::Quaternionf* local) {
  const Eigen::Quaternionf step = FromToRotation(*tip - p, target - p);
  *local = TurnedLocalRotation(rp, step, r);
  *tip = p + step * (*tip - p);
}

// Sweeps for the common case (every joint at full weight, no limit, no step
// cap, no fallback): PlainStep at every joint on the chain's raw arrays,
// forward kinematics once per sweep; over-relaxed by up to `relax` from the
// second sweep on (ccd_ik.h). `first_sweep`: sweeps run before (for the
// incremental variant). Returns early, after a sweep that left more than
// `slow2` of the previous one's squared error (0: never), the solve's cue
// for the polish. Returns the sweeps used; the chain's model transforms are
// stale.
int PlainSweeps(IkChain& c, const Eigen::Vector3f& target, float tol2,
                int max_iterations, int first_sweep, bool incremental,
                float relax, float slow2) {
  const int n = c.size();
  const int tip = n - 1;
  const Transform* model = c.models();
  Transform* local = c.mutable_locals();
  absl::InlinedVector<Eigen::Quaternionf, 16> before;
  if (relax > 0.0f) before.resize(n);
  float last_e2 = 0.0f;
  const OverRelaxation relaxation(relax);
  for (int it = 0; it < max_iterations; ++it) {
    // Each sweep goes tip to root, so a joint's own transform and its
    // ancestors' stay valid within the sweep; only the effector is tracked
    // incrementally, and everything is refreshed here.
    if (it > 0) c.UpdateModel(0);
    Eigen::Vector3f tip_pos = model[tip].translation;
    const int first = incremental ? std::max(0, n - 3 - (first_sweep + it)) : 0;
    if (relax > 0.0f) {
      for (int i = first; i < tip; ++i) before[i] = local[i].rotation;
    }
    for (int i = tip - 1; i >= first; --i) {
      const Transform& m = model[i];
      const Eigen::Quaternionf& rp =
          i == 0 ? c.base().rotation : model[i - 1].rotation;
      if (!PlainStep(m.translation, m.rotation, rp, target, &tip_pos,
                     &local[i].rotation)) {
        GeneralPlainStep(m.translation, m.rotation, rp, target, &tip_pos,
                         &local[i].rotation);
      }
      if ((target - tip_pos).squaredNorm() <= tol2) return it + 1;
    }
    const float e2 = (target - tip_pos).squaredNorm();
    if (slow2 > 0.0f && it >= kMinSweeps - 1 && e2 > slow2 * last_e2) {
      return it + 1;
    }
    if (relax > 0.0f) {
      const float b = relaxation.Factor(e2, last_e2);
      if (it >= 1 && it + 1 < max_iterations && b > 0.0f) {
        // Each joint's turn in this sweep, extended b times along the
        // quaternion chord: nlerp from now past itself, away from before
        // (no trigonometry; late sweeps turn little, where chord and arc
        // agree).
        for (int i = first; i < tip; ++i) {
          local[i].rotation = NlerpShortest(local[i].rotation, before[i], -b);
        }
      }
    }
    last_e2 = e2;
  }
  return max_iterations;
}

// What the general sweeps and the polish read of a job, per chain node
// (the tip's entries unused).
struct ChainSettings {
  absl::InlinedVector<float, 16> weight;
  absl::InlinedVector<const JointLimit*, 16> limit;
  const LimitNudge* nudge = nullptr;
  bool hinge_fallback = false;
  Eigen::Vector3f fallback = Eigen::Vector3f::UnitX();
  float max_step_angle = 0.0f;
  bool incremental = false;
};

// Sweeps with every option (weights, limits, step cap, fallback, nudge).
// Same contract as PlainSweeps, but leaves the chain's model transforms up
// to date but for the descendants of the last joint turned.
int GeneralSweeps(IkChain& c, const ChainSettings& s,
                  const Eigen::Vector3f& target, float tol2, int max_iterations,
                  int first_sweep, float slow2) {
  const int n = c.size();
  const int tip = n - 1;
  const bool plain_steps = s.max_step_angle == 0.0f;
  float last_e2 = 0.0f;
  for (int it = 0; it < max_iterations; ++it) {
    // Each sweep goes tip to root, so a joint's own transform and its
    // ancestors' stay valid within the sweep; only the effector is tracked
    // incrementally and refreshed here.
    c.UpdateModel(0);
    Eigen::Vector3f tip_pos = c.position(tip);
    const int first =
        s.incremental ? std::max(0, n - 3 - (first_sweep + it)) : 0;
    for (int i = tip - 1; i >= first; --i) {
      const float wi = s.weight[i];
      if (wi == 0.0f) continue;
      const Eigen::Vector3f p = c.position(i);
      const Eigen::Quaternionf r = c.rotation(i);
      const Eigen::Vector3f to_effector = tip_pos - p;
      const Eigen::Vector3f to_goal = target - p;
      const JointLimit* limit = s.limit[i];
      const bool fixed_axis =
          s.hinge_fallback && i > 0 && Collinear(to_effector, to_goal);
      if (wi == 1.0f && limit == nullptr && !fixed_axis && plain_steps) {
        Eigen::Quaternionf solved;
        if (!PlainStep(p, r, c.parent_rotation(i), target, &tip_pos, &solved)) {
          GeneralPlainStep(p, r, c.parent_rotation(i), target, &tip_pos,
                           &solved);
        }
        c.set_local_rotation(i, solved);
        if ((target - tip_pos).squaredNorm() <= tol2) return it + 1;
        continue;
      }

      Eigen::Quaternionf step;
      if (fixed_axis) {
        const Eigen::Vector3f local_axis =
            limit != nullptr && limit->type == JointLimitType::kHinge
                ? limit->axis
                : s.fallback;
        const Eigen::Vector3f& parent_pos = c.position(i - 1);
        step = FixedAxisStep((r * local_axis).normalized(), p - parent_pos,
                             to_effector, (target - parent_pos).norm());
      } else {
        step = FromToRotation(to_effector, to_goal);
      }
      if (wi < 1.0f) {
        step = Slerp(Eigen::Quaternionf::Identity(), step, wi);
      }
      if (s.max_step_angle > 0.0f) {
        step = ClampRotationAngle(step, s.max_step_angle);
      }
      Eigen::Quaternionf r_new = step * r;
      if (limit != nullptr) {
        const Eigen::Quaternionf rp = c.parent_rotation(i);
        const Eigen::Quaternionf local = ApplyJointLimit(
            *limit, Normalized(rp.conjugate() * r_new), s.nudge);
        c.set_local_rotation(i, local);
        r_new = Normalized(rp * local);
        c.set_model_rotation(i, r_new);
        step = r_new * r.conjugate();
      } else {
        c.SetModelRotation(i, r_new);
      }
      tip_pos = p + step * (tip_pos - p);
      if ((target - tip_pos).squaredNorm() <= tol2) return it + 1;
    }
    const float e2 = (target - tip_pos).squaredNorm();
    if (slow2 > 0.0f && it >= kMinSweeps - 1 && e2 > slow2 * last_e2) {
      return it + 1;
    }
    last_e2 = e2;
  }
  return max_iterations;
}

}  // namespace

absl::Status CcdIkJob::Validate() const {
  if (skeleton == nullptr) {
    return absl::InvalidArgumentError("ccd_ik.skeleton: not set");
  }
  if (absl::Status s =
          CheckInputPose(*skeleton, input, "ccd_ik.input", input_validated);
      !s.ok()) {
    return s;
  }
  if (static_cast<int>(output.size()) != skeleton->num_joints()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ccd_ik.output: ", output.size(), " transforms for a skeleton of ",
        skeleton->num_joints(), " joints"));
  }
  if (absl::Status s =
          CheckNoPartialOverlap(output, "ccd_ik.output", input, "ccd_ik.input");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ValidateChain(*skeleton, chain, "ccd_ik.chain");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ValidateFiniteVector(target, "ccd_ik.target"); !s.ok()) {
    return s;
  }
  if (absl::Status s =
          ValidateIterations(max_iterations, "ccd_ik.max_iterations");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ValidateTolerance(tolerance, "ccd_ik.tolerance");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ValidateWeight(weight, "ccd_ik.weight"); !s.ok()) {
    return s;
  }
  if (!joint_weights.empty()) {
    if (joint_weights.size() != chain.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("ccd_ik.joint_weights: ", joint_weights.size(),
                       " weights for a chain of ", chain.size(), " joints"));
    }
    for (size_t i = 0; i < joint_weights.size(); ++i) {
      if (std::isnan(joint_weights[i])) {
        return absl::InvalidArgumentError(
            absl::StrCat("ccd_ik.joint_weights[", i, "] (joint ", chain[i],
                         " '", skeleton->joint_name(chain[i]), "'): NaN"));
      }
    }
  }
  if (!(over_relaxation >= 0.0f && over_relaxation <= kMaxCcdOverRelaxation)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ccd_ik.over_relaxation: ", over_relaxation, " is outside [0, ",
        kMaxCcdOverRelaxation, "] (0: classic CCD)"));
  }
  if (!std::isfinite(max_step_angle) || max_step_angle < 0.0f) {
    return absl::InvalidArgumentError(
        absl::StrCat("ccd_ik.max_step_angle: ", max_step_angle,
                     " must be finite and >= 0 (0: no cap)"));
  }
  if (absl::Status s =
          ValidateJointLimits(*skeleton, limits, chain, "ccd_ik.limits");
      !s.ok()) {
    return s;
  }
  if (hinge_fallback &&
      (!fallback_axis.allFinite() || !(fallback_axis.squaredNorm() > 1e-12f))) {
    return absl::InvalidArgumentError(
        "ccd_ik.fallback_axis: must be finite and nonzero");
  }
  if (nudge &&
      (!std::isfinite(nudge_params.threshold) ||
       nudge_params.threshold < 0.0f ||
       !(nudge_params.fraction >= 0.0f && nudge_params.fraction <= 1.0f))) {
    return absl::InvalidArgumentError(
        "ccd_ik.nudge_params: threshold must be finite and >= 0, fraction "
        "within [0, 1]");
  }
  return absl::OkStatus();
}

absl::Status CcdIkJob::Run() const {
  if (absl::Status s = Validate(); !s.ok()) return s;
  CopyPose(input, output);

  IkChain c;
  c.GatherChain(*skeleton, input, chain);
  const int n = c.size();
  const int tip = n - 1;
  const float tol = ResolveTolerance(tolerance, *skeleton, c.total_length());
  const float w = ClampWeight(weight);
  IkResult res;

  if (w == 0.0f) {
    res.error = (target - c.position(tip)).norm();
    res.reached = res.error <= tol;
    if (result != nullptr) *result = res;
    return absl::OkStatus();
  }

  // The input rotations, for the weight blend (output may alias input).
  absl::InlinedVector<Eigen::Quaternionf, 16> before;
  if (w < 1.0f) {
    for (int i = 0; i < n; ++i) before.push_back(c.local(i).rotation);
  }

  // Bring limited joints inside their limits before measuring anything.
  bool any_limit = false;
  for (int i = 0; i < tip; ++i) {
    if (const JointLimit* l = FindJointLimit(limits, chain[i])) {
      c.set_local_rotation(i, ApplyJointLimit(*l, c.local(i).rotation));
      any_limit = true;
    }
  }
  if (any_limit) c.UpdateModel(0);

  // Squared distances inside the loops: no square root per step.
  const float tol2 = tol * tol;
  float err2 = (target - c.position(tip)).squaredNorm();
  const Eigen::Vector3f root = c.position(0);
  const float reach = (target - root).norm();

  if (err2 > tol2 && max_iterations > 0) {
    ChainSettings s;
    s.weight.resize(n, 1.0f);
    s.limit.resize(n, nullptr);
    // A joint frozen by a zero weight cannot take part in straightening;
    // plain solves (every joint at full weight, nothing else set) take
    // PlainSweeps.
    bool all_move = true;
    bool all_full = true;
    for (int i = 0; i < tip; ++i) {
      if (!joint_weights.empty()) s.weight[i] = ClampWeight(joint_weights[i]);
      s.limit[i] = FindJointLimit(limits, chain[i]);
      all_move &= s.weight[i] > 0.0f;
      all_full &= s.weight[i] == 1.0f;
    }
    s.nudge = nudge ? &nudge_params : nullptr;
    s.hinge_fallback = hinge_fallback;
    // Only the hinge fallback reads it: no square root and division
    // otherwise.
    if (hinge_fallback) s.fallback = fallback_axis.normalized();
    s.max_step_angle = max_step_angle;
    s.incremental = incremental;
    const bool plain =
        all_full && !any_limit && max_step_angle == 0.0f && !hinge_fallback;
    if (!any_limit && max_step_angle == 0.0f && all_move &&
        reach >= c.total_length()) {
      // Out of reach: the answer is the straight chain toward the target.
      absl::InlinedVector<Eigen::Vector3f, 16> line(n);
      const Eigen::Vector3f dir = (target - root) / reach;
      float along = 0.0f;
      line[0] = root;
      for (int i = 1; i < n; ++i) {
        along += c.length(i);
        line[i] = root + dir * along;
      }
      c.AlignChainTo(line);
      res.iterations = 1;
    } else {
      // Rounds of sweeps, each handing over to the polish when a sweep is
      // slow, until within the tolerance, at the cap, or a round that gains
      // nothing.
      const float slow2 = polish ? kSlowSweep2 : 0.0f;
      int used = 0;
      while (true) {
        const float round_start = err2;
        used += plain ? PlainSweeps(c, target, tol2, max_iterations - used,
                                    used, incremental, over_relaxation, slow2)
                      : GeneralSweeps(c, s, target, tol2, max_iterations - used,
                                      used, slow2);
        if (!polish) break;
        c.UpdateModel(0);
        err2 = (target - c.position(tip)).squaredNorm();
        if (err2 <= tol2 || used >= max_iterations) break;
        used += PolishChain(c, s.weight, s.limit, max_step_angle, target, tol2,
                            max_iterations - used, &err2);
        if (err2 <= tol2 || used >= max_iterations) break;
        if (!(err2 < kRoundGain2 * round_start)) break;
      }
      res.iterations = used;
    }
  }

  c.ScatterRotations(output);
  if (w < 1.0f) {
    BlendIkRotations(before, chain, w, output);
    for (int i = 0; i < n; ++i) {
      c.set_local_rotation(i, output[chain[i]].rotation);
    }
  }
  // Report the error of the pose actually returned.
  c.UpdateModel(0);
  res.error = (target - c.position(tip)).norm();
  res.reached = res.error <= tol;
  if (result != nullptr) *result = res;
  return absl::OkStatus();
}

}  // namespace posewire
