#include "solver_core/chain_ik/joint_limits.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "solver_core/chain_ik/ik_chain.h"
#include "solver_core/model/quaternion_math.h"

namespace posewire {
namespace {

constexpr float kPi = static_cast<float>(EIGEN_PI);
constexpr float kHalfPi = static_cast<float>(EIGEN_PI / 2.0);
// Slack when checking user-given bounds against +-pi and unit lengths.
constexpr float kAngleSlack = 1e-6f;
constexpr float kUnitSlack = 1e-3f;

// Axis indices (i, j, k) of the three positions of each order, and whether
// the permutation is even (cyclic), which fixes the signs in ToEuler.
struct OrderAxes {
  int i, j, k;
  bool even;
};

OrderAxes AxesOf(EulerOrder order) {
  switch (order) {
    case EulerOrder::kXYZ:
      return {0, 1, 2, true};
    case EulerOrder::kYZX:
      return {1, 2, 0, true};
    case EulerOrder::kZXY:
      return {2, 0, 1, true};
    case EulerOrder::kXZY:
      return {0, 2, 1, false};
    case EulerOrder::kYXZ:
      return {1, 0, 2, false};
    case EulerOrder::kZYX:
      return {2, 1, 0, false};
  }
  return {0, 1, 2, true};
}

// Wraps an angle into [-pi, pi].
float WrapPi(float a) {
  a = std::remainder(a, 2.0f * kPi);
  return a;
}

// Clamps `a` to [lo, hi]. For angles that wrap at +-pi the nearest bound is
// chosen on the circle (an angle just below -pi is near a bound at +pi).
// Applies the LimitNudge heuristic when given. Sets *changed when the result
// differs from `a`.
float ClampAngle(float a, float lo, float hi, bool wraps,
                 const LimitNudge* nudge, bool* changed) {
  if (a >= lo && a <= hi) return a;
  bool to_lo;
  if (wraps) {
    to_lo = std::fabs(WrapPi(a - lo)) <= std::fabs(WrapPi(a - hi));
  } else {
    to_lo = a < lo;
  }
  float out = to_lo ? lo : hi;
  if (nudge != nullptr) {
    if (to_lo && lo > -nudge->threshold) {
      out = lo + nudge->fraction * (hi - lo);
    } else if (!to_lo && hi < nudge->threshold) {
      out = hi - nudge->fraction * (hi - lo);
    }
  }
  *changed = true;
  return out;
}

Eigen::Quaternionf Normalized(const Eigen::Quaternionf& q) {
  return Eigen::Quaternionf(q.coeffs() * (1.0f / q.coeffs().norm()));
}

std::string Where(absl::string_view field, int joint,
                  absl::string_view joint_name) {
  return absl::StrCat(field, "[", joint, "] '", joint_name, "'");
}

bool InRange(float v, float lo, float hi) {
  return v >= lo - kAngleSlack && v <= hi + kAngleSlack;
}

}  // namespace

const char* EulerOrderName(EulerOrder order) {
  switch (order) {
    case EulerOrder::kXYZ:
      return "XYZ";
    case EulerOrder::kXZY:
      return "XZY";
    case EulerOrder::kYXZ:
      return "YXZ";
    case EulerOrder::kYZX:
      return "YZX";
    case EulerOrder::kZXY:
      return "ZXY";
    case EulerOrder::kZYX:
      return "ZYX";
  }
  return "unknown";
}

int EulerAxisAt(EulerOrder order, int position) {
  const OrderAxes a = AxesOf(order);
  return position == 0 ? a.i : position == 1 ? a.j : a.k;
}

Eigen::Vector3f ToEuler(const Eigen::Quaternionf& q, EulerOrder order) {
  const OrderAxes ax = AxesOf(order);
  const int i = ax.i, j = ax.j, k = ax.k;
  const Eigen::Matrix3f m = q.normalized().toRotationMatrix();
  // For R = R_i(a) R_j(b) R_k(c): R(i,k) = +-sin(b), and the first row/last
  // column give c and a (signs flip for odd permutations).
  const float s = ax.even ? 1.0f : -1.0f;
  const float cos_b = std::sqrt(m(i, i) * m(i, i) + m(i, j) * m(i, j));
  const float b = std::atan2(s * m(i, k), cos_b);
  float a, c;
  if (cos_b > 1e-6f) {
    a = std::atan2(-s * m(j, k), m(k, k));
    c = std::atan2(-s * m(i, j), m(i, i));
  } else {
    // Gimbal lock: only a + c (or a - c) is defined; put it all in a.
    a = std::atan2(s * m(k, j), m(j, j));
    c = 0.0f;
  }
  Eigen::Vector3f out;
  out[i] = a;
  out[j] = b;
  out[k] = c;
  return out;
}

EulerRangeScreen MakeEulerRangeScreen(const JointLimit& limit) {
  EulerRangeScreen screen;
  if (limit.type != JointLimitType::kEuler) return screen;
  screen.order = limit.euler_order;
  const OrderAxes ax = AxesOf(limit.euler_order);
  screen.first = ax.i;
  screen.middle = ax.j;
  screen.last = ax.k;
  screen.even = ax.even;
  for (int axis = 0; axis < 3; ++axis) {
    const double lo = limit.euler_min[axis];
    const double hi = limit.euler_max[axis];
    const double half = 0.5 * (hi - lo) - kEulerScreenMargin;
    // Too narrow to shrink and still leave the cosine test room above
    // rounding: always computed exactly.
    if (half < 2.0 * kEulerScreenMargin) return EulerRangeScreen();
    const double mid = 0.5 * (lo + hi);
    screen.cos_mid[axis] = static_cast<float>(std::cos(mid));
    screen.sin_mid[axis] = static_cast<float>(std::sin(mid));
    screen.cos_half[axis] =
        half >= EIGEN_PI ? -2.0f : static_cast<float>(std::cos(half));
  }
  screen.usable = true;
  return screen;
}

bool SurelyWithinEulerRanges(const EulerRangeScreen& screen,
                             const Eigen::Quaternionf& q) {
  if (!screen.usable) return false;
  // The arguments ToEuler passes to atan2, from the same matrix.
  const int i = screen.first, j = screen.middle, k = screen.last;
  const Eigen::Matrix3f m = q.normalized().toRotationMatrix();
  const float s = screen.even ? 1.0f : -1.0f;
  const float cos_b = std::sqrt(m(i, i) * m(i, i) + m(i, j) * m(i, j));
  // Near gimbal lock ToEuler takes another path: leave it to the caller.
  // (cos_b also scales the other two angles' directions: above 0.1 the
  // margin stays far above rounding.)
  if (!(cos_b > 0.1f)) return false;
  // An angle atan2(y, x) lies in the arc when its direction's cosine to
  // the middle direction reaches the half-width's cosine.
  auto within = [&](int axis, float y, float x, float r) {
    return x * screen.cos_mid[axis] + y * screen.sin_mid[axis] >=
           r * screen.cos_half[axis];
  };
  const float yb = s * m(i, k);
  const float rb = std::sqrt(yb * yb + cos_b * cos_b);
  return within(j, yb, cos_b, rb) && within(i, -s * m(j, k), m(k, k), cos_b) &&
         within(k, -s * m(i, j), m(i, i), cos_b);
}

Eigen::Quaternionf FromEuler(const Eigen::Vector3f& angles, EulerOrder order) {
  const OrderAxes ax = AxesOf(order);
  auto axis_rotation = [&](int axis) {
    return QuaternionFromAngleAxis(angles[axis], Eigen::Vector3f::Unit(axis));
  };
  return Normalized(axis_rotation(ax.i) * axis_rotation(ax.j) *
                    axis_rotation(ax.k));
}

SwingTwistParts DecomposeSwingTwist(const Eigen::Quaternionf& q,
                                    const Eigen::Vector3f& axis) {
  SwingTwistParts out;
  // q and -q are the same rotation; w >= 0 keeps both angles in [-pi, pi].
  Eigen::Quaternionf r = q;
  if (r.w() < 0.0f) r.coeffs() = -r.coeffs();
  const float p = r.vec().dot(axis);
  const float n = std::sqrt(r.w() * r.w() + p * p);
  if (n > 1e-7f) {
    out.twist = Eigen::Quaternionf(r.w() / n, axis.x() * p / n,
                                   axis.y() * p / n, axis.z() * p / n);
    out.twist_angle = 2.0f * std::atan2(p, r.w());
  }
  out.swing = r * out.twist.conjugate();
  if (out.swing.w() < 0.0f) out.swing.coeffs() = -out.swing.coeffs();
  out.swing_angle = 2.0f * std::atan2(out.swing.vec().norm(), out.swing.w());
  return out;
}

JointLimit EulerLimit(EulerOrder order, const Eigen::Vector3f& min,
                      const Eigen::Vector3f& max) {
  JointLimit l;
  l.type = JointLimitType::kEuler;
  l.euler_order = order;
  l.euler_min = min;
  l.euler_max = max;
  return l;
}

JointLimit SwingTwistLimit(const Eigen::Vector3f& twist_axis, float max_swing,
                           float min_twist, float max_twist) {
  JointLimit l;
  l.type = JointLimitType::kSwingTwist;
  l.axis = twist_axis;
  l.max_swing = max_swing;
  l.min_angle = min_twist;
  l.max_angle = max_twist;
  return l;
}

JointLimit HingeLimit(const Eigen::Vector3f& axis, float min_angle,
                      float max_angle) {
  JointLimit l;
  l.type = JointLimitType::kHinge;
  l.axis = axis;
  l.min_angle = min_angle;
  l.max_angle = max_angle;
  return l;
}

absl::Status ValidateJointLimit(const JointLimit& limit,
                                absl::string_view field, int joint,
                                absl::string_view joint_name) {
  auto error = [&](absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat(Where(field, joint, joint_name), ": ", what));
  };
  switch (limit.type) {
    case JointLimitType::kNone:
      return absl::OkStatus();
    case JointLimitType::kEuler:
    case JointLimitType::kSwingTwist:
    case JointLimitType::kHinge:
      break;
    default:
      return error(
          absl::StrCat("unknown limit type ", static_cast<int>(limit.type)));
  }
  if (!limit.reference.coeffs().allFinite() ||
      std::fabs(limit.reference.norm() - 1.0f) > kUnitSlack) {
    return error("reference is not a finite unit quaternion");
  }
  if (limit.type == JointLimitType::kEuler) {
    if (static_cast<int>(limit.euler_order) < 0 ||
        static_cast<int>(limit.euler_order) > 5) {
      return error("unknown Euler order");
    }
    if (!limit.euler_min.allFinite() || !limit.euler_max.allFinite()) {
      return error("Euler bound has a NaN or infinite component");
    }
    const int middle = EulerAxisAt(limit.euler_order, 1);
    for (int axis = 0; axis < 3; ++axis) {
      const float lo = limit.euler_min[axis], hi = limit.euler_max[axis];
      const float bound = axis == middle ? kHalfPi : kPi;
      const char* name = axis == 0 ? "x" : axis == 1 ? "y" : "z";
      if (!(lo <= hi)) {
        return error(absl::StrCat("Euler ", name, " range [", lo, ", ", hi,
                                  "] has min > max"));
      }
      if (!InRange(lo, -bound, bound) || !InRange(hi, -bound, bound)) {
        return error(absl::StrCat(
            "Euler ", name, " range [", lo, ", ", hi, "] leaves [", -bound,
            ", ", bound, "] (", axis == middle ? "middle" : "outer",
            " axis of order ", EulerOrderName(limit.euler_order), ")"));
      }
    }
    return absl::OkStatus();
  }
  if (!limit.axis.allFinite() ||
      std::fabs(limit.axis.norm() - 1.0f) > kUnitSlack) {
    return error("axis is not a finite unit vector");
  }
  if (!std::isfinite(limit.min_angle) || !std::isfinite(limit.max_angle) ||
      !(limit.min_angle <= limit.max_angle) ||
      !InRange(limit.min_angle, -kPi, kPi) ||
      !InRange(limit.max_angle, -kPi, kPi)) {
    return error(
        absl::StrCat(limit.type == JointLimitType::kHinge ? "hinge" : "twist",
                     " range [", limit.min_angle, ", ", limit.max_angle,
                     "] must be finite, min <= max, within [-pi, pi]"));
  }
  if (limit.type == JointLimitType::kSwingTwist &&
      !(limit.max_swing >= 0.0f && limit.max_swing <= kPi + kAngleSlack)) {
    return error(
        absl::StrCat("max_swing ", limit.max_swing, " must be within [0, pi]"));
  }
  return absl::OkStatus();
}

absl::Status ValidateJointLimits(const Skeleton& skeleton,
                                 absl::Span<const JointLimit> limits,
                                 absl::Span<const int> used,
                                 absl::string_view field) {
  if (limits.empty()) return absl::OkStatus();
  if (static_cast<int>(limits.size()) != skeleton.num_joints()) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": ", limits.size(), " limits for a skeleton of ",
        skeleton.num_joints(), " joints (give none, or one per joint)"));
  }
  for (int j : used) {
    if (absl::Status s =
            ValidateJointLimit(limits[j], field, j, skeleton.joint_name(j));
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

Eigen::Quaternionf ApplyJointLimit(const JointLimit& limit,
                                   const Eigen::Quaternionf& local,
                                   const LimitNudge* nudge) {
  if (limit.type == JointLimitType::kNone) return local;
  const Eigen::Quaternionf q = limit.reference.conjugate() * local;
  bool changed = false;
  switch (limit.type) {
    case JointLimitType::kEuler: {
      Eigen::Vector3f e = ToEuler(q, limit.euler_order);
      const int middle = EulerAxisAt(limit.euler_order, 1);
      for (int axis = 0; axis < 3; ++axis) {
        e[axis] =
            ClampAngle(e[axis], limit.euler_min[axis], limit.euler_max[axis],
                       axis != middle, nudge, &changed);
      }
      if (!changed) return local;
      return Normalized(limit.reference * FromEuler(e, limit.euler_order));
    }
    case JointLimitType::kSwingTwist: {
      SwingTwistParts parts = DecomposeSwingTwist(q, limit.axis);
      bool twist_changed = false;
      const float twist =
          ClampAngle(parts.twist_angle, limit.min_angle, limit.max_angle,
                     /*wraps=*/true, nudge, &twist_changed);
      if (twist_changed) {
        parts.twist = QuaternionFromAngleAxis(twist, limit.axis);
        changed = true;
      }
      if (parts.swing_angle > limit.max_swing) {
        const Eigen::Vector3f v = parts.swing.vec();
        const float n = v.norm();
        // A swing this large has a well-defined axis (n > 0 since the angle
        // is above max_swing >= 0).
        parts.swing = QuaternionFromAngleAxis(limit.max_swing, v / n);
        changed = true;
      }
      if (!changed) return local;
      return Normalized(limit.reference * parts.swing * parts.twist);
    }
    case JointLimitType::kHinge: {
      const SwingTwistParts parts = DecomposeSwingTwist(q, limit.axis);
      const float angle =
          ClampAngle(parts.twist_angle, limit.min_angle, limit.max_angle,
                     /*wraps=*/true, nudge, &changed);
      // Already a rotation about the hinge within range: keep it bit for
      // bit (solvers re-apply limits to joints that did not move).
      if (!changed && parts.swing_angle <= 1e-5f) return local;
      return Normalized(limit.reference *
                        QuaternionFromAngleAxis(angle, limit.axis));
    }
    case JointLimitType::kNone:
      break;
  }
  return local;
}

namespace {

// The angle about unit `axis` that turns `v` closest to `d`, or `fallback`
// when either has no component perpendicular to the axis.
float BestAngleAbout(const Eigen::Vector3f& axis, const Eigen::Vector3f& v,
                     const Eigen::Vector3f& d, float fallback) {
  const Eigen::Vector3f vp = v - axis * axis.dot(v);
  const Eigen::Vector3f dp = d - axis * axis.dot(d);
  if (!(vp.squaredNorm() > 1e-20f) || !(dp.squaredNorm() > 1e-20f)) {
    return fallback;
  }
  return std::atan2(axis.dot(vp.cross(dp)), vp.dot(dp));
}

Eigen::Quaternionf MinimalSwingAim(const Eigen::Quaternionf& local,
                                   const Eigen::Vector3f& bone,
                                   const Eigen::Vector3f& want) {
  return Normalized(FromToRotation(local * bone, want) * local);
}

}  // namespace

Eigen::Quaternionf AimWithinJointLimit(const JointLimit& limit,
                                       const Eigen::Quaternionf& local,
                                       const Eigen::Vector3f& bone,
                                       const Eigen::Vector3f& want) {
  switch (limit.type) {
    case JointLimitType::kNone:
      return MinimalSwingAim(local, bone, want);
    case JointLimitType::kSwingTwist: {
      // Clamping the twist turns an off-axis bone away again; a few rounds
      // of aim-and-clamp settle it.
      Eigen::Quaternionf q = local;
      for (int round = 0; round < 4; ++round) {
        const Eigen::Quaternionf aimed = MinimalSwingAim(q, bone, want);
        q = ApplyJointLimit(limit, aimed);
        // Inside the limit: ApplyJointLimit returned it as it was.
        if (q.coeffs() == aimed.coeffs()) break;
      }
      return q;
    }
    case JointLimitType::kHinge: {
      const Eigen::Vector3f d = limit.reference.conjugate() * want;
      const float current =
          DecomposeSwingTwist(limit.reference.conjugate() * local, limit.axis)
              .twist_angle;
      bool changed = false;
      const float angle = ClampAngle(
          BestAngleAbout(limit.axis, bone, d, current), limit.min_angle,
          limit.max_angle, /*wraps=*/true, nullptr, &changed);
      return Normalized(limit.reference *
                        QuaternionFromAngleAxis(angle, limit.axis));
    }
    case JointLimitType::kEuler: {
      const OrderAxes ax = AxesOf(limit.euler_order);
      const int axes[3] = {ax.i, ax.j, ax.k};
      const Eigen::Vector3f d = limit.reference.conjugate() * want;
      // Start from the clamped free aim: closer to the answer than the
      // clamped start, so the descent rarely stops in the wrong basin.
      Eigen::Vector3f e = ToEuler(
          limit.reference.conjugate() *
              ApplyJointLimit(limit, MinimalSwingAim(local, bone, want)),
          limit.euler_order);
      auto rot = [&](int axis) {
        return QuaternionFromAngleAxis(e[axis], Eigen::Vector3f::Unit(axis));
      };
      for (int sweep = 0; sweep < 4; ++sweep) {
        for (int pos = 0; pos < 3; ++pos) {
          // q = before * R_axis(angle) * after: align after * bone with
          // conj(before) * d about the axis.
          Eigen::Quaternionf before = Eigen::Quaternionf::Identity();
          for (int p = 0; p < pos; ++p) before = before * rot(axes[p]);
          Eigen::Quaternionf after = Eigen::Quaternionf::Identity();
          for (int p = 2; p > pos; --p) after = rot(axes[p]) * after;
          const int axis = axes[pos];
          bool changed = false;
          e[axis] = ClampAngle(
              BestAngleAbout(Eigen::Vector3f::Unit(axis), after * bone,
                             before.conjugate() * d, e[axis]),
              limit.euler_min[axis], limit.euler_max[axis], pos != 1, nullptr,
              &changed);
        }
      }
      return Normalized(limit.reference * FromEuler(e, limit.euler_order));
    }
  }
  return local;
}

absl::Status ValidateSignedAngleRange(const SignedAngleRange& range,
                                      absl::string_view field, int index) {
  if (!std::isfinite(range.min) || !std::isfinite(range.max) ||
      !(range.min <= range.max) || !InRange(range.min, -kPi, kPi) ||
      !InRange(range.max, -kPi, kPi)) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, "[", index, "]: range [", range.min, ", ", range.max,
        "] must be finite, min <= max, within [-pi, pi]"));
  }
  return absl::OkStatus();
}

float SignedAngle(const Eigen::Vector3f& from, const Eigen::Vector3f& to,
                  const Eigen::Vector3f& normal) {
  const Eigen::Vector3f a = from - normal * normal.dot(from);
  const Eigen::Vector3f b = to - normal * normal.dot(to);
  if (a.squaredNorm() == 0.0f || b.squaredNorm() == 0.0f) return 0.0f;
  return std::atan2(normal.dot(a.cross(b)), a.dot(b));
}

Eigen::Vector3f ClampSignedAngle(const Eigen::Vector3f& reference,
                                 const Eigen::Vector3f& dir,
                                 const Eigen::Vector3f& normal,
                                 const SignedAngleRange& range) {
  Eigen::Vector3f d = dir - normal * normal.dot(dir);
  const float dn = d.norm();
  if (dn > 0.0f) d /= dn;
  Eigen::Vector3f r = reference - normal * normal.dot(reference);
  const float rn = r.norm();
  if (!(rn > 1e-12f) || !(dn > 0.0f)) return d;
  r /= rn;
  const float angle = std::atan2(normal.dot(r.cross(d)), r.dot(d));
  bool changed = false;
  const float clamped = ClampAngle(angle, range.min, range.max, /*wraps=*/true,
                                   nullptr, &changed);
  if (!changed) return d;
  return QuaternionFromAngleAxis(clamped, normal) * r;
}

}  // namespace posewire
