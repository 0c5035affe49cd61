#include "solver_core/full_body/full_body_ccd.h"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/quaternion_math.h"

namespace posewire {
namespace {

constexpr absl::string_view kField = "full_body_ccd";

// Bias toward the identity in Horn's matrix, as a fraction of the weighted
// point scale: enough to settle an undetermined twist, too little to matter
// otherwise (it costs at most this fraction of the step).
constexpr float kIdentityBias = 1e-4f;
// A sweep that lowers the total weighted squared error by less than this
// fraction of it has stalled.
constexpr float kStallGain = 1e-6f;

std::string EffectorField(size_t k, absl::string_view what) {
  return absl::StrCat(kField, ".effectors[", k, "].", what);
}

// The field name is only built for an error (validation runs per solve).
absl::Status CheckPoint(const Eigen::Vector3f& v, size_t k,
                        absl::string_view what) {
  if (!v.allFinite()) {
    return absl::InvalidArgumentError(
        absl::StrCat(EffectorField(k, what), ": NaN or infinite component"));
  }
  if (!(v.cwiseAbs().maxCoeff() <= kMaxFullBodyCcdCoordinate)) {
    return absl::InvalidArgumentError(absl::StrCat(EffectorField(k, what),
                                                   ": component beyond +-",
                                                   kMaxFullBodyCcdCoordinate));
  }
  return absl::OkStatus();
}

// The joints that move: ancestors of effector joints, the effector joint
// itself when its point is offset, minus locked joints. Ascending.
absl::InlinedVector<int, 32> MovingJoints(const FullBodyCcdJob& job) {
  const Skeleton& skeleton = *job.skeleton;
  absl::InlinedVector<uint8_t, 64> moving(skeleton.num_joints(), 0);
  for (const FullBodyCcdEffector& e : job.effectors) {
    if (!e.offset.isZero()) moving[e.joint] = 1;
    for (int a = skeleton.parent(e.joint); a != kNoParent;
         a = skeleton.parent(a)) {
      moving[a] = 1;
    }
  }
  absl::InlinedVector<int, 32> out;
  for (int j = 0; j < skeleton.num_joints(); ++j) {
    if (!moving[j]) continue;
    if (!job.joint_weights.empty() && !(job.joint_weights[j] > 0.0f)) continue;
    out.push_back(j);
  }
  return out;
}

}  // namespace

Eigen::Quaternionf WeightedPointRotation(absl::Span<const Eigen::Vector3f> from,
                                         absl::Span<const Eigen::Vector3f> to,
                                         absl::Span<const float> weights) {
  if (from.size() == 1) return FromToRotation(from[0], to[0]);
  // Horn (1987): with S = sum w from to^T, the unit quaternion maximising
  // sum w to . (R from) is the top eigenvector of N(S).
  Eigen::Matrix3f s = Eigen::Matrix3f::Zero();
  float scale = 0.0f;
  for (size_t k = 0; k < from.size(); ++k) {
    s += weights[k] * from[k] * to[k].transpose();
    scale += weights[k] * from[k].norm() * to[k].norm();
  }
  if (!(scale > 1e-30f)) return Eigen::Quaternionf::Identity();
  const float sxx = s(0, 0), sxy = s(0, 1), sxz = s(0, 2);
  const float syx = s(1, 0), syy = s(1, 1), syz = s(1, 2);
  const float szx = s(2, 0), szy = s(2, 1), szz = s(2, 2);
  Eigen::Matrix4f n;
  n << sxx + syy + szz, syz - szy, szx - sxz, sxy - syx,  //
      syz - szy, sxx - syy - szz, sxy + syx, szx + sxz,   //
      szx - sxz, sxy + syx, -sxx + syy - szz, syz + szy,  //
      sxy - syx, szx + sxz, syz + szy, -sxx - syy + szz;
  // Normalised so the eigen solver sees the same numbers at any rig scale.
  n /= scale;
  n(0, 0) += kIdentityBias;
  const Eigen::SelfAdjointEigenSolver<Eigen::Matrix4f> solver(n);
  Eigen::Vector4f q = solver.eigenvectors().col(3);
  if (!q.allFinite() || !(q.squaredNorm() > 0.0f)) {
    return Eigen::Quaternionf::Identity();
  }
  if (q(0) < 0.0f) q = -q;
  return Eigen::Quaternionf(q(0), q(1), q(2), q(3)).normalized();
}

absl::Status FullBodyCcdJob::Validate() const {
  if (skeleton == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(kField, ".skeleton: null"));
  }
  const int n = skeleton->num_joints();
  if (absl::Status s = CheckInputPose(*skeleton, input, "full_body_ccd.input",
                                      input_validated);
      !s.ok()) {
    return s;
  }
  if (static_cast<int>(output.size()) != n) {
    return absl::InvalidArgumentError(
        absl::StrCat(kField, ".output: ", output.size(),
                     " transforms for a skeleton of ", n, " joints"));
  }
  if (absl::Status s = CheckNoPartialOverlap(output, "full_body_ccd.output",
                                             input, "full_body_ccd.input");
      !s.ok()) {
    return s;
  }
  if (effectors.empty() ||
      effectors.size() > static_cast<size_t>(kMaxFullBodyCcdEffectors)) {
    return absl::InvalidArgumentError(
        absl::StrCat(kField, ".effectors: ", effectors.size(),
                     " effectors; give 1 to ", kMaxFullBodyCcdEffectors));
  }
  for (size_t k = 0; k < effectors.size(); ++k) {
    const FullBodyCcdEffector& e = effectors[k];
    if (e.joint < 0 || e.joint >= n) {
      return absl::InvalidArgumentError(
          absl::StrCat(EffectorField(k, "joint"), ": ", e.joint,
                       " is out of range [0, ", n, ")"));
    }
    if (absl::Status s = CheckPoint(e.target, k, "target"); !s.ok()) {
      return s;
    }
    if (absl::Status s = CheckPoint(e.offset, k, "offset"); !s.ok()) {
      return s;
    }
    if (!std::isfinite(e.weight) || e.weight < 0.0f) {
      return absl::InvalidArgumentError(
          absl::StrCat(EffectorField(k, "weight"), ": ", e.weight,
                       " must be finite and >= 0"));
    }
  }
  if (absl::Status s =
          ValidateIterations(max_iterations, "full_body_ccd.max_iterations");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ValidateTolerance(tolerance, "full_body_ccd.tolerance");
      !s.ok()) {
    return s;
  }
  if (tolerance.relative_to_chain) {
    return absl::InvalidArgumentError(
        "full_body_ccd.tolerance: relative_to_chain names no chain here; use "
        "absolute or relative_to_skeleton");
  }
  if (!std::isfinite(weight)) {
    return absl::InvalidArgumentError(
        absl::StrCat(kField, ".weight: ", weight, " is not finite"));
  }
  if (!joint_weights.empty()) {
    if (static_cast<int>(joint_weights.size()) != n) {
      return absl::InvalidArgumentError(
          absl::StrCat(kField, ".joint_weights: ", joint_weights.size(),
                       " weights for a skeleton of ", n,
                       " joints (give none, or one per "
                       "joint)"));
    }
    for (int j = 0; j < n; ++j) {
      if (!std::isfinite(joint_weights[j])) {
        return absl::InvalidArgumentError(absl::StrCat(
            kField, ".joint_weights[", j, "] '", skeleton->joint_name(j),
            "': ", joint_weights[j], " is not finite"));
      }
    }
  }
  if (absl::Status s = ValidateJointLimits(
          *skeleton, limits, MovingJoints(*this), "full_body_ccd.limits");
      !s.ok()) {
    return s;
  }
  if (nudge &&
      (!std::isfinite(nudge_params.threshold) ||
       nudge_params.threshold < 0.0f ||
       !(nudge_params.fraction >= 0.0f && nudge_params.fraction <= 1.0f))) {
    return absl::InvalidArgumentError(absl::StrCat(
        kField,
        ".nudge_params: threshold must be finite and >= 0, fraction "
        "within [0, 1]"));
  }
  if (translation_joint < -1 || translation_joint >= n) {
    return absl::InvalidArgumentError(
        absl::StrCat(kField, ".translation_joint: ", translation_joint,
                     " is neither -1 nor a joint in [0, ", n, ")"));
  }
  if (!effector_errors.empty() && effector_errors.size() != effectors.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kField, ".effector_errors: ", effector_errors.size(),
                     " entries for ", effectors.size(), " effectors"));
  }
  return absl::OkStatus();
}

absl::Status FullBodyCcdJob::Run() const {
  if (absl::Status s = Validate(); !s.ok()) return s;
  const Skeleton& skel = *skeleton;
  const int n = skel.num_joints();
  const int ne = static_cast<int>(effectors.size());
  const float w = ClampWeight(weight);
  const float tol = ResolveTolerance(tolerance, skel);

  // Working local pose (the output may alias the input, which the final
  // blend reads).
  absl::InlinedVector<Transform, 64> local(input.begin(), input.end());
  absl::InlinedVector<Transform, 64> model(n);
  // Joints whose model transform matters: the effector joints and their
  // ancestors, ascending (each one's parent comes before it).
  absl::InlinedVector<uint8_t, 64> needed(n, 0);
  for (const FullBodyCcdEffector& e : effectors) {
    for (int a = e.joint; a != kNoParent; a = skel.parent(a)) needed[a] = 1;
  }
  absl::InlinedVector<int, 32> fk_joints;
  for (int j = 0; j < n; ++j) {
    if (needed[j]) fk_joints.push_back(j);
  }
  const absl::InlinedVector<int, 32> moving =
      w > 0.0f ? MovingJoints(*this) : absl::InlinedVector<int, 32>();

  // For each moving joint, the effectors it carries (flat lists).
  absl::InlinedVector<int, 64> carried_begin(moving.size() + 1, 0);
  absl::InlinedVector<int, 128> carried;
  for (size_t m = 0; m < moving.size(); ++m) {
    const int j = moving[m];
    for (int k = 0; k < ne; ++k) {
      const FullBodyCcdEffector& e = effectors[k];
      const bool below =
          e.joint == j ? !e.offset.isZero() : skel.IsInSubtree(j, e.joint);
      if (below && e.weight > 0.0f) carried.push_back(k);
    }
    carried_begin[m + 1] = static_cast<int>(carried.size());
  }
  absl::InlinedVector<int, 64> translated;
  if (w > 0.0f && translation_joint >= 0) {
    for (int k = 0; k < ne; ++k) {
      if (effectors[k].weight > 0.0f &&
          skel.IsInSubtree(translation_joint, effectors[k].joint)) {
        translated.push_back(k);
      }
    }
  }

  const LimitNudge* nudge_ptr = nudge ? &nudge_params : nullptr;
  // Limited moving joints start inside their limits.
  for (int j : moving) {
    if (const JointLimit* limit = FindJointLimit(limits, j)) {
      local[j].rotation = ApplyJointLimit(*limit, local[j].rotation);
    }
  }

  absl::InlinedVector<Eigen::Vector3f, 16> points(ne);
  auto forward_kinematics = [&]() {
    for (int j : fk_joints) {
      const int p = skel.parent(j);
      model[j] = p == kNoParent ? local[j] : Combine(model[p], local[j]);
    }
    for (int k = 0; k < ne; ++k) {
      points[k] = model[effectors[k].joint].TransformPoint(effectors[k].offset);
    }
  };
  auto max_error = [&]() {
    float e = 0.0f;
    for (int k = 0; k < ne; ++k) {
      e = std::max(e, (points[k] - effectors[k].target).norm());
    }
    return e;
  };

  // The total weighted squared error, for the stall test.
  auto total_error = [&]() {
    float e = 0.0f;
    for (int k = 0; k < ne; ++k) {
      e +=
          effectors[k].weight * (points[k] - effectors[k].target).squaredNorm();
    }
    return e;
  };

  forward_kinematics();
  int sweeps = 0;
  float last_total = total_error();
  absl::InlinedVector<Eigen::Vector3f, 16> from;
  absl::InlinedVector<Eigen::Vector3f, 16> to;
  absl::InlinedVector<float, 16> weights;
  while (sweeps < max_iterations && (!moving.empty() || !translated.empty()) &&
         max_error() > tol) {
    for (size_t m = moving.size(); m-- > 0;) {
      const int j = moving[m];
      const int begin = carried_begin[m];
      const int end = carried_begin[m + 1];
      if (begin == end) continue;
      const Eigen::Vector3f pivot = model[j].translation;
      from.clear();
      to.clear();
      weights.clear();
      for (int i = begin; i < end; ++i) {
        const int k = carried[i];
        from.push_back(points[k] - pivot);
        to.push_back(effectors[k].target - pivot);
        weights.push_back(effectors[k].weight);
      }
      Eigen::Quaternionf step = WeightedPointRotation(from, to, weights);
      if (!joint_weights.empty() && joint_weights[j] < 1.0f) {
        step = Slerp(Eigen::Quaternionf::Identity(), step, joint_weights[j]);
      }
      const int p = skel.parent(j);
      const Eigen::Quaternionf parent_rotation =
          p == kNoParent ? Eigen::Quaternionf::Identity() : model[p].rotation;
      const Eigen::Quaternionf old_rotation = model[j].rotation;
      Eigen::Quaternionf rotation =
          (parent_rotation.conjugate() * (step * old_rotation)).normalized();
      if (const JointLimit* limit = FindJointLimit(limits, j)) {
        rotation = ApplyJointLimit(*limit, rotation, nudge_ptr);
      }
      local[j].rotation = rotation;
      model[j].rotation = (parent_rotation * rotation).normalized();
      // What the joint actually turned by, after its limit.
      const Eigen::Quaternionf turned =
          model[j].rotation * old_rotation.conjugate();
      for (int i = begin; i < end; ++i) {
        const int k = carried[i];
        points[k] = pivot + turned * (points[k] - pivot);
      }
    }
    if (!translated.empty()) {
      Eigen::Vector3f delta = Eigen::Vector3f::Zero();
      float total = 0.0f;
      for (int k : translated) {
        delta += effectors[k].weight * (effectors[k].target - points[k]);
        total += effectors[k].weight;
      }
      delta /= total;
      const int p = skel.parent(translation_joint);
      if (p == kNoParent) {
        local[translation_joint].translation += delta;
      } else if (!(model[p].scale.array() == 0.0f).any()) {
        local[translation_joint].translation +=
            (model[p].rotation.conjugate() * delta)
                .cwiseQuotient(model[p].scale);
      }
    }
    forward_kinematics();
    ++sweeps;
    // Stalled: the sweep gained (almost) nothing.
    const float total = total_error();
    if (!(total < (1.0f - kStallGain) * last_total)) break;
    last_total = total;
  }

  // Blend over the input and write.
  const float final_error = max_error();
  if (w >= 1.0f) {
    std::copy(local.begin(), local.end(), output.begin());
  } else {
    // Copy first: output may alias input, and the blend reads the input.
    absl::InlinedVector<Transform, 64> blended(input.begin(), input.end());
    if (w > 0.0f) {
      for (int j : moving) {
        blended[j].rotation =
            SlerpShortest(input[j].rotation, local[j].rotation, w);
      }
      if (translation_joint >= 0) {
        blended[translation_joint].translation =
            input[translation_joint].translation +
            (local[translation_joint].translation -
             input[translation_joint].translation) *
                w;
      }
    }
    std::copy(blended.begin(), blended.end(), output.begin());
  }

  if (result != nullptr || !effector_errors.empty()) {
    float error = final_error;
    if (w < 1.0f) {
      // Measure the blended pose.
      for (int j : fk_joints) {
        const int p = skel.parent(j);
        model[j] = p == kNoParent ? output[j] : Combine(model[p], output[j]);
      }
      error = 0.0f;
      for (int k = 0; k < ne; ++k) {
        points[k] =
            model[effectors[k].joint].TransformPoint(effectors[k].offset);
        error = std::max(error, (points[k] - effectors[k].target).norm());
      }
    }
    for (size_t k = 0; k < effector_errors.size(); ++k) {
      effector_errors[k] = (points[k] - effectors[k].target).norm();
    }
    if (result != nullptr) {
      result->error = error;
      result->reached = error <= tol;
      result->iterations = sweeps;
    }
  }
  return absl::OkStatus();
}

}  // namespace posewire
