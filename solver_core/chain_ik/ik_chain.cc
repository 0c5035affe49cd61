#include "solver_core/chain_ik/ik_chain.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/base/optimization.h"
#include "absl/strings/str_cat.h"
#include "solver_core/model/internal/simd_lanes.h"
#include "solver_core/model/quaternion_math.h"

namespace posewire {
namespace {

std::string JointLabel(const Skeleton& skeleton, int joint) {
  return absl::StrCat("joint ", joint, " '", skeleton.joint_name(joint), "'");
}

Eigen::Quaternionf Normalized(const Eigen::Quaternionf& q) {
  return Eigen::Quaternionf(q.coeffs() * (1.0f / q.coeffs().norm()));
}

// *to = from, as three 16-byte rows (padding included) where the layout
// allows: three loads and stores instead of Eigen's member-wise copy.
inline void CopyTransform(const Transform& from, Transform* to) {
#if defined(__SSE2__)
  if constexpr (transform_internal::kRowLayout) {
    const float* f = reinterpret_cast<const float*>(&from);
    float* t = reinterpret_cast<float*>(to);
    lanes::StoreU(t, lanes::LoadU(f));
    lanes::StoreU(t + 4, lanes::LoadU(f + 4));
    lanes::StoreU(t + 8, lanes::LoadU(f + 8));
    return;
  }
#endif
  *to = from;
}

}  // namespace

#if defined(__SSE2__)
namespace {

// transform_internal::Multiply(p, q) on quaternion rows, bit for bit. (The
// terms are MultiplyRows', but its w lane sums a + (-b + -c) where Multiply
// computes a - (b + c); the two differ in the sign of an exactly zero w. Here
// the w lane of the second half is summed unnegated and negated after.)
lanes::F4 MultiplyRowsAsScalar(lanes::F4 p, lanes::F4 q) {
  using lanes::SetLanes;
  using lanes::Shuffle;
  using lanes::Xor;
  // Lanes x, y, z, w: (w, -z, y, -x), (z, w, -x, y), (-y, x, w, z).
  const lanes::F4 qb =
      Xor(Shuffle<3, 2, 1, 0>(q), SetLanes(0.0f, -0.0f, 0.0f, -0.0f));
  const lanes::F4 qc =
      Xor(Shuffle<2, 3, 0, 1>(q), SetLanes(0.0f, 0.0f, -0.0f, 0.0f));
  const lanes::F4 qd =
      Xor(Shuffle<1, 0, 3, 2>(q), SetLanes(-0.0f, 0.0f, 0.0f, 0.0f));
  const lanes::F4 first =
      lanes::Broadcast<3>(p) * q + lanes::Broadcast<0>(p) * qb;
  const lanes::F4 second =
      lanes::Broadcast<1>(p) * qc + lanes::Broadcast<2>(p) * qd;
  return first + Xor(second, SetLanes(0.0f, 0.0f, 0.0f, -0.0f));
}

// HalfwayRotation of two 3-vector rows (lane 3 zero) as a quaternion row
// (x, y, z, w). The everyday branch is computed here with the same operations
// (Dot3 sums in Eigen's order, CrossRows is Eigen's cross); every other
// magnitude, and antiparallel vectors, go to HalfwayRotation itself, so the
// bits are HalfwayRotation's in every case.
lanes::F4 HalfwayRotationRow(lanes::F4 from, lanes::F4 to) {
  const float ff = lanes::First(lanes::Dot3(from, from));
  const float tt = lanes::First(lanes::Dot3(to, to));
  const float ft = ff * tt;
  if (ABSL_PREDICT_TRUE(ff > 1e-40f && tt > 1e-40f && ft > 1e-30f &&
                        ft < 1e30f)) {
    const float m = std::sqrt(ft);
    const float d = lanes::First(lanes::Dot3(from, to));
    if (ABSL_PREDICT_TRUE(!(d < (-1.0f + 1e-6f) * m))) {
      // (from x to, m + d): the cross product's lane w is zero already.
      return lanes::Select(lanes::XyzLanes(), lanes::CrossRows(from, to),
                           lanes::Splat(m + d));
    }
  }
  const Eigen::Quaternionf q =
      HalfwayRotation(lanes::ToVector3(from), lanes::ToVector3(to));
  return lanes::LoadU(q.coeffs().data());
}

}  // namespace
#endif

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

namespace ik_internal {

absl::Status ToleranceError(const IkTolerance& tolerance,
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
  if (tolerance.relative_to_skeleton && tolerance.relative_to_chain) {
    return absl::InvalidArgumentError(
        absl::StrCat(field,
                     ": relative_to_skeleton and relative_to_chain are "
                     "exclusive"));
  }
  return absl::OkStatus();
}

absl::Status IterationsError(int iterations, absl::string_view field) {
  return absl::InvalidArgumentError(absl::StrCat(
      field, ": ", iterations, " is outside [0, ", kMaxIkIterations, "]"));
}

absl::Status FiniteVectorError(absl::string_view field) {
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": NaN or infinite component"));
}

absl::Status WeightError(absl::string_view field) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": NaN"));
}

}  // namespace ik_internal

float ResolveTolerance(const IkTolerance& tolerance, const Skeleton& skeleton,
                       float chain_length) {
  if (tolerance.relative_to_chain) return tolerance.value * chain_length;
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
  const int n = static_cast<int>(chain.size());
  parents_.resize(n);
  int* parents = parents_.data();
  for (int i = 0; i < n; ++i) parents[i] = i - 1;
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
  // One pass over raw arrays (InlinedVector's operator[] tests where its
  // storage lives on every access): each node's local and model transform,
  // then its bone from the parent's model transform, which is already final.
  const Transform* in = pose.data();
  const int* joints = joints_.data();
  const int* parents = parents_.data();
  Transform* local = local_.data();
  Transform* model = model_.data();
  Eigen::Vector3f* offsets = offsets_.data();
  float* lengths = lengths_.data();
  CopyTransform(in[joints[0]], local);
  CombineTo(base_, local[0], model);
  offsets[0] = Eigen::Vector3f::Zero();
  lengths[0] = 0.0f;
  float total_length = 0.0f;
  for (int i = 1; i < n; ++i) {
    CopyTransform(in[joints[i]], local + i);
    const Transform& parent = model[parents[i]];
    CombineTo(parent, local[i], model + i);
    offsets[i] = parent.scale.cwiseProduct(local[i].translation);
    lengths[i] = offsets[i].norm();
    total_length += lengths[i];
  }
  total_length_ = total_length;
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
#if defined(__SSE2__)
  // The loop below on SSE rows: the same operations in the same order
  // (RotateRow is Eigen's quaternion-vector product), with the parent's
  // model rotation carried in a register from one bone to the next.
  lanes::F4 parent_rotation = lanes::LoadU(base_.rotation.coeffs().data());
  for (int i = 0; i + 1 < n; ++i) {
    const lanes::F4 rotation = lanes::LoadU(model[i].rotation.coeffs().data());
    const lanes::F4 bone =
        lanes::RotateRow(rotation, lanes::LoadVector3(offsets[i + 1]));
    const lanes::F4 wanted = lanes::LoadVector3(targets[i + 1]) -
                             lanes::LoadXyz(model[i].translation.data());
    const lanes::F4 turned = TurnedLocalRotationRow(
        parent_rotation, HalfwayRotationRow(bone, wanted), rotation);
    lanes::StoreU(local[i].rotation.coeffs().data(), turned);
    parent_rotation = MultiplyRowsAsScalar(parent_rotation, turned);
    lanes::StoreU(model[i].rotation.coeffs().data(), parent_rotation);
    CombineTo(model[i], local[i + 1], model + i + 1);
  }
#else
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
#endif
}

void IkChain::ScatterRotations(absl::Span<Transform> pose) const {
  const int n = size();
  const int* joints = joints_.data();
  const Transform* local = local_.data();
  Transform* out = pose.data();
  for (int i = 0; i < n; ++i) out[joints[i]].rotation = local[i].rotation;
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
  const Transform* from = input.data();
  Transform* to = output.data();
  for (size_t j = 0; j < input.size(); ++j) CopyTransform(from[j], to + j);
}

namespace {

// w^2 of node i's weight (1 for an empty table).
float Weight2(absl::Span<const float> weights, int i) {
  return weights.empty() ? 1.0f : weights[i] * weights[i];
}

// x solving a x = b for a symmetric positive definite 3x3 `a` (Cholesky, a
// fixed order of operations); false when a is not numerically positive
// definite.
bool SolveSpd3(const Eigen::Matrix3f& a, const Eigen::Vector3f& b,
               Eigen::Vector3f* x) {
  const float l00 = a(0, 0);
  if (!(l00 > 0.0f)) return false;
  const float d0 = std::sqrt(l00);
  const float l10 = a(1, 0) / d0;
  const float l20 = a(2, 0) / d0;
  const float m11 = a(1, 1) - l10 * l10;
  if (!(m11 > 0.0f)) return false;
  const float d1 = std::sqrt(m11);
  const float l21 = (a(2, 1) - l20 * l10) / d1;
  const float m22 = a(2, 2) - l20 * l20 - l21 * l21;
  if (!(m22 > 0.0f)) return false;
  const float d2 = std::sqrt(m22);
  const float y0 = b.x() / d0;
  const float y1 = (b.y() - l10 * y0) / d1;
  const float y2 = (b.z() - l20 * y0 - l21 * y1) / d2;
  const float x2 = y2 / d2;
  const float x1 = (y1 - l21 * x2) / d1;
  const float x0 = (y0 - l10 * x1 - l20 * x2) / d0;
  *x = Eigen::Vector3f(x0, x1, x2);
  return x->allFinite();
}

// The largest turn of a joint in one polish step (radians) when the job sets
// no step cap; the damping's start (relative to the Jacobian's mean squared
// singular value), its floor, and where it counts as stalled.
constexpr float kMaxPolishTurn = 0.5f;
constexpr float kStartDamping = 1e-3f;
constexpr float kMinDamping = 1e-7f;
constexpr float kMaxDamping = 1e6f;

}  // namespace

int PolishChain(IkChain& c, absl::Span<const float> weights,
                absl::Span<const JointLimit* const> limits,
                float max_step_angle, const Eigen::Vector3f& target, float tol2,
                int max_iterations, float* err2) {
  const int n = c.size();
  const int tip = n - 1;
  absl::InlinedVector<Eigen::Vector3f, 16> turn(n);
  absl::InlinedVector<Transform, 16> saved_local(n);
  absl::InlinedVector<Transform, 16> saved_model(n);
  const float max_turn =
      max_step_angle > 0.0f ? max_step_angle : kMaxPolishTurn;
  // Damping relative to the Jacobian's scale (its mean squared singular
  // value), so it means the same on every rig.
  float damping = kStartDamping;
  int it = 0;
  while (it<max_iterations&& * err2> tol2) {
    const Eigen::Vector3f tip_pos = c.position(tip);
    const Eigen::Vector3f error = target - tip_pos;
    // J W^2 J^T: each free joint adds w^2 (|r|^2 I - r r^T), a hinge
    // w^2 (a x r)(a x r)^T.
    Eigen::Matrix3f jjt = Eigen::Matrix3f::Zero();
    for (int i = 0; i < tip; ++i) {
      const float w2 = Weight2(weights, i);
      if (w2 == 0.0f) continue;
      const Eigen::Vector3f r = tip_pos - c.position(i);
      const JointLimit* limit = limits.empty() ? nullptr : limits[i];
      if (limit != nullptr && limit->type == JointLimitType::kHinge) {
        const Eigen::Vector3f col = (c.rotation(i) * limit->axis).cross(r);
        jjt += (w2 * col) * col.transpose();
      } else {
        const Eigen::Matrix3f rr = r * r.transpose();
        jjt += w2 * (Eigen::Matrix3f::Identity() * r.squaredNorm() - rr);
      }
    }
    const float scale = jjt.trace() * (1.0f / 3.0f);
    if (!(scale > 0.0f)) break;
    bool improved = false;
    while (it < max_iterations && damping <= kMaxDamping) {
      ++it;
      Eigen::Vector3f y;
      if (!SolveSpd3(jjt + Eigen::Matrix3f::Identity() * (damping * scale),
                     error, &y)) {
        damping *= 8.0f;
        continue;
      }
      // Each joint's turn in model space: w^2 (r x y), or about the hinge
      // axis w^2 ((a x r) . y).
      float largest = 0.0f;
      for (int i = 0; i < tip; ++i) {
        const float w2 = Weight2(weights, i);
        if (w2 == 0.0f) {
          turn[i] = Eigen::Vector3f::Zero();
          continue;
        }
        const Eigen::Vector3f r = tip_pos - c.position(i);
        const JointLimit* limit = limits.empty() ? nullptr : limits[i];
        if (limit != nullptr && limit->type == JointLimitType::kHinge) {
          const Eigen::Vector3f a = c.rotation(i) * limit->axis;
          turn[i] = a * (w2 * a.cross(r).dot(y));
        } else {
          turn[i] = w2 * r.cross(y);
        }
        largest = std::max(largest, turn[i].squaredNorm());
      }
      largest = std::sqrt(largest);
      const float shrink = largest > max_turn ? max_turn / largest : 1.0f;
      for (int i = 0; i < n; ++i) {
        saved_local[i] = c.local(i);
        saved_model[i] = c.model(i);
      }
      for (int i = 0; i < tip; ++i) {
        const float angle = turn[i].norm() * shrink;
        if (!(angle > 0.0f)) continue;
        // The turn in the parent's frame, applied to the local rotation.
        const Eigen::Vector3f axis =
            c.parent_rotation(i).conjugate() * (turn[i] * (shrink / angle));
        Eigen::Quaternionf local = Normalized(
            QuaternionFromAngleAxis(angle, axis) * c.local(i).rotation);
        if (!limits.empty() && limits[i] != nullptr) {
          local = ApplyJointLimit(*limits[i], local);
        }
        c.set_local_rotation(i, local);
      }
      c.UpdateModel(0);
      const float e2 = (target - c.position(tip)).squaredNorm();
      if (e2 < *err2) {
        *err2 = e2;
        damping = std::max(damping * 0.25f, kMinDamping);
        improved = true;
        break;
      }
      for (int i = 0; i < n; ++i) {
        c.set_local_rotation(i, saved_local[i].rotation);
        c.set_model_rotation(i, saved_model[i].rotation);
        c.set_position(i, saved_model[i].translation);
      }
      damping *= 8.0f;
    }
    if (!improved) break;
  }
  return it;
}

}  // namespace posewire
