#include "solver_core/ik_chain.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "solver_core/quaternion_math.h"

namespace posewire {
namespace {

std::string JointLabel(const Skeleton& skeleton, int joint) {
  return absl::StrCat("joint ", joint, " '", skeleton.joint_name(joint), "'");
}

Eigen::Quaternionf Normalized(const Eigen::Quaternionf& q) {
  return Eigen::Quaternionf(q.coeffs() * (1.0f / q.coeffs().norm()));
}

}  // namespace

float SkeletonSize(const Skeleton& skeleton) {
  const int n = skeleton.num_joints();
  if (n == 0) return 0.0f;
  absl::InlinedVector<Transform, 64> model(n);
  Eigen::Vector3f lo =
      Eigen::Vector3f::Constant(std::numeric_limits<float>::infinity());
  Eigen::Vector3f hi = -lo;
  for (int j = 0; j < n; ++j) {
    const int p = skeleton.parent(j);
    model[j] = p == kNoParent ? skeleton.rest_pose()[j]
                              : Combine(model[p], skeleton.rest_pose()[j]);
    lo = lo.cwiseMin(model[j].translation);
    hi = hi.cwiseMax(model[j].translation);
  }
  return (hi - lo).norm();
}

absl::Status ValidateTolerance(const IkTolerance& tolerance,
                               absl::string_view field) {
  if (!std::isfinite(tolerance.value) || tolerance.value < 0.0f) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".value: ", tolerance.value, " must be finite and >= 0"));
  }
  if (!std::isfinite(tolerance.skeleton_size) ||
      tolerance.skeleton_size < 0.0f) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".skeleton_size: ", tolerance.skeleton_size,
                     " must be finite and >= 0 (0: computed)"));
  }
  return absl::OkStatus();
}

float ResolveTolerance(const IkTolerance& tolerance, const Skeleton& skeleton) {
  if (!tolerance.relative_to_skeleton) return tolerance.value;
  const float size = tolerance.skeleton_size > 0.0f ? tolerance.skeleton_size
                                                    : SkeletonSize(skeleton);
  return tolerance.value * size;
}

absl::Status ValidateChain(const Skeleton& skeleton,
                           absl::Span<const int> chain,
                           absl::string_view field) {
  if (chain.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", chain.size(),
                     " joints; a chain needs at least 2 (root and tip)"));
  }
  for (size_t i = 0; i < chain.size(); ++i) {
    const int j = chain[i];
    if (j < 0 || j >= skeleton.num_joints()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, "[", i, "]: joint ", j, " is out of range [0, ",
                       skeleton.num_joints(), ")"));
    }
    if (i > 0 && skeleton.parent(j) != chain[i - 1]) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, "[", i, "]: ", JointLabel(skeleton, j), " is not a child of ",
          field, "[", i - 1, "] (", JointLabel(skeleton, chain[i - 1]),
          "); list the chain root to tip, each joint the parent of the "
          "next"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateIterations(int iterations, absl::string_view field) {
  if (iterations < 0 || iterations > kMaxIkIterations) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": ", iterations, " is outside [0, ", kMaxIkIterations, "]"));
  }
  return absl::OkStatus();
}

absl::Status ValidateFiniteVector(const Eigen::Vector3f& v,
                                  absl::string_view field) {
  if (!v.allFinite()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": NaN or infinite component"));
  }
  return absl::OkStatus();
}

absl::Status ValidateWeight(float weight, absl::string_view field) {
  if (std::isnan(weight)) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": NaN"));
  }
  return absl::OkStatus();
}

Eigen::Vector3f AnyPerpendicular(const Eigen::Vector3f& v) {
  const Eigen::Vector3f a = v.cwiseAbs();
  int axis = 0;
  if (a.y() < a[axis]) axis = 1;
  if (a.z() < a[axis]) axis = 2;
  return v.cross(Eigen::Vector3f::Unit(axis)).normalized();
}

// The half-way form of the from-to rotation, (|f||t| + f.t, f x t), which
// normalises to the half-angle quaternion with no trigonometric call; for
// everyday magnitudes it needs one square root. Vectors so small or large
// that the products under- or overflow are normalised first. Not normalised
// itself (callers that normalise a product anyway skip that work), except
// for the antiparallel and degenerate cases, which are exact.
Eigen::Quaternionf HalfwayRotation(const Eigen::Vector3f& from,
                                   const Eigen::Vector3f& to) {
  const float ff = from.squaredNorm();
  const float tt = to.squaredNorm();
  if (!(ff > 1e-40f) || !(tt > 1e-40f)) return Eigen::Quaternionf::Identity();
  const float ft = ff * tt;
  Eigen::Vector3f u = from, v = to;
  float m;
  if (ft > 1e-30f && ft < 1e30f) {
    m = std::sqrt(ft);
  } else {
    u = from * (1.0f / std::sqrt(ff));
    v = to * (1.0f / std::sqrt(tt));
    m = 1.0f;
  }
  const float d = u.dot(v);
  if (d < (-1.0f + 1e-6f) * m) {
    // Antiparallel: any perpendicular axis works; pick a deterministic one.
    const Eigen::Vector3f axis = AnyPerpendicular(u);
    return Eigen::Quaternionf(0.0f, axis.x(), axis.y(), axis.z());
  }
  const Eigen::Vector3f c = u.cross(v);
  return Eigen::Quaternionf(m + d, c.x(), c.y(), c.z());
}

Eigen::Quaternionf FromToRotation(const Eigen::Vector3f& from,
                                  const Eigen::Vector3f& to) {
  return Normalized(HalfwayRotation(from, to));
}

Eigen::Quaternionf ClampRotationAngle(const Eigen::Quaternionf& q,
                                      float max_angle) {
  Eigen::Quaternionf r = q;
  if (r.w() < 0.0f) r.coeffs() = -r.coeffs();
  const float s = r.vec().norm();
  const float angle = 2.0f * std::atan2(s, r.w());
  if (angle <= max_angle || !(s > 0.0f)) return q;
  return QuaternionFromAngleAxis(max_angle, r.vec() / s);
}

Transform ParentModelTransform(const Skeleton& skeleton,
                               absl::Span<const Transform> local, int joint) {
  absl::InlinedVector<int, 32> ancestors;
  for (int p = skeleton.parent(joint); p != kNoParent; p = skeleton.parent(p)) {
    ancestors.push_back(p);
  }
  Transform model = Transform::Identity();
  for (auto it = ancestors.rbegin(); it != ancestors.rend(); ++it) {
    model = it == ancestors.rbegin() ? local[*it] : Combine(model, local[*it]);
  }
  return model;
}

void IkChain::GatherChain(const Skeleton& skeleton,
                          absl::Span<const Transform> pose,
                          absl::Span<const int> chain) {
  joints_.assign(chain.begin(), chain.end());
  parents_.resize(chain.size());
  for (size_t i = 0; i < chain.size(); ++i) {
    parents_[i] = static_cast<int>(i) - 1;
  }
  Finish(skeleton, pose);
}

void IkChain::GatherTree(const Skeleton& skeleton,
                         absl::Span<const Transform> pose,
                         absl::Span<const int> joints) {
  joints_.assign(joints.begin(), joints.end());
  parents_.resize(joints.size());
  parents_[0] = -1;
  for (size_t i = 1; i < joints.size(); ++i) {
    // Sorted, so the parent (a smaller index) is found by binary search.
    const int p = skeleton.parent(joints_[i]);
    parents_[i] = static_cast<int>(
        std::lower_bound(joints_.begin(), joints_.begin() + i, p) -
        joints_.begin());
  }
  Finish(skeleton, pose);
}

void IkChain::Finish(const Skeleton& skeleton,
                     absl::Span<const Transform> pose) {
  const int n = size();
  base_ = ParentModelTransform(skeleton, pose, joints_[0]);
  local_.resize(n);
  model_.resize(n);
  offsets_.resize(n);
  lengths_.resize(n);
  for (int i = 0; i < n; ++i) local_[i] = pose[joints_[i]];
  UpdateModel(0);
  total_length_ = 0.0f;
  offsets_[0] = Eigen::Vector3f::Zero();
  lengths_[0] = 0.0f;
  for (int i = 1; i < n; ++i) {
    offsets_[i] = model_[parents_[i]].scale.cwiseProduct(local_[i].translation);
    lengths_[i] = offsets_[i].norm();
    total_length_ += lengths_[i];
  }
}

void IkChain::SetModelRotation(int i, const Eigen::Quaternionf& r) {
  model_[i].rotation = r;
  local_[i].rotation = Normalized(parent_rotation(i).conjugate() * r);
}

void IkChain::UpdateModel(int from) {
  // Raw pointers: InlinedVector's operator[] tests where its storage lives
  // on every access, which cost more than the arithmetic here.
  const int n = size();
  const int* parents = parents_.data();
  const Transform* local = local_.data();
  Transform* model = model_.data();
  int i = from;
  if (i == 0 && n > 0) CombineTo(base_, local[0], model);
  for (i = std::max(i, 1); i < n; ++i) {
    CombineTo(model[parents[i]], local[i], model + i);
  }
}

void IkChain::AlignChainTo(absl::Span<const Eigen::Vector3f> targets) {
  const int n = size();
  Transform* local = local_.data();
  Transform* model = model_.data();
  const Eigen::Vector3f* offsets = offsets_.data();
  for (int i = 0; i + 1 < n; ++i) {
    // model[i] is current: its parent was aligned and refreshed above.
    const Eigen::Quaternionf rp =
        i == 0 ? base_.rotation : model[i - 1].rotation;
    const Eigen::Vector3f bone = model[i].rotation * offsets[i + 1];
    const Eigen::Vector3f wanted = targets[i + 1] - model[i].translation;
    const Eigen::Quaternionf swing = HalfwayRotation(bone, wanted);
    // One normalisation per bone: the stored local rotation's. The model
    // rotation is rebuilt from it so the two stay consistent.
    local[i].rotation = TurnedLocalRotation(rp, swing, model[i].rotation);
    model[i].rotation = transform_internal::Multiply(rp, local[i].rotation);
    CombineTo(model[i], local[i + 1], model + i + 1);
  }
}

void IkChain::ScatterRotations(absl::Span<Transform> pose) const {
  for (int i = 0; i < size(); ++i)
    pose[joints_[i]].rotation = local_[i].rotation;
}

void BlendIkRotations(absl::Span<const Eigen::Quaternionf> from,
                      absl::Span<const int> joints, float weight,
                      absl::Span<Transform> output) {
  for (size_t i = 0; i < joints.size(); ++i) {
    Transform& t = output[joints[i]];
    t.rotation = Normalized(Slerp(from[i], t.rotation, weight));
  }
}

void CopyPose(absl::Span<const Transform> input, absl::Span<Transform> output) {
  if (input.data() == output.data()) return;
  std::copy(input.begin(), input.end(), output.begin());
}

}  // namespace posewire
