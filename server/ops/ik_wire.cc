#include "server/ops/ik_wire.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/wire/field_name.h"
#include "server/wire/wire_convert.h"

namespace posewire::server {

EulerOrder EulerOrderFromProto(v1::EulerOrder order) {
  switch (order) {
    case v1::EULER_ORDER_XZY:
      return EulerOrder::kXZY;
    case v1::EULER_ORDER_YXZ:
      return EulerOrder::kYXZ;
    case v1::EULER_ORDER_YZX:
      return EulerOrder::kYZX;
    case v1::EULER_ORDER_ZXY:
      return EulerOrder::kZXY;
    case v1::EULER_ORDER_ZYX:
      return EulerOrder::kZYX;
    default:
      return EulerOrder::kXYZ;
  }
}

v1::EulerOrder EulerOrderToProto(EulerOrder order) {
  switch (order) {
    case EulerOrder::kXZY:
      return v1::EULER_ORDER_XZY;
    case EulerOrder::kYXZ:
      return v1::EULER_ORDER_YXZ;
    case EulerOrder::kYZX:
      return v1::EULER_ORDER_YZX;
    case EulerOrder::kZXY:
      return v1::EULER_ORDER_ZXY;
    case EulerOrder::kZYX:
      return v1::EULER_ORDER_ZYX;
    case EulerOrder::kXYZ:
      break;
  }
  return v1::EULER_ORDER_XYZ;
}

void LimitsToProto(
    const Skeleton& skeleton, absl::Span<const JointLimit> limits,
    google::protobuf::RepeatedPtrField<v1::JointLimitSpec>* specs) {
  for (size_t j = 0; j < limits.size(); ++j) {
    const JointLimit& limit = limits[j];
    if (limit.type == JointLimitType::kNone) continue;
    v1::JointLimitSpec* spec = specs->Add();
    spec->set_joint(skeleton.joint_name(static_cast<int>(j)));
    if (!limit.reference.coeffs().isApprox(
            Eigen::Quaternionf::Identity().coeffs(), 0.0f)) {
      v1::Quat* q = spec->mutable_reference();
      q->set_x(limit.reference.x());
      q->set_y(limit.reference.y());
      q->set_z(limit.reference.z());
      q->set_w(limit.reference.w());
    }
    switch (limit.type) {
      case JointLimitType::kEuler: {
        v1::EulerLimit* e = spec->mutable_euler();
        e->set_order(EulerOrderToProto(limit.euler_order));
        Vec3ToProto(limit.euler_min, e->mutable_min());
        Vec3ToProto(limit.euler_max, e->mutable_max());
        break;
      }
      case JointLimitType::kSwingTwist: {
        v1::SwingTwistLimit* st = spec->mutable_swing_twist();
        Vec3ToProto(limit.axis, st->mutable_axis());
        st->set_max_swing(limit.max_swing);
        st->set_min_twist(limit.min_angle);
        st->set_max_twist(limit.max_angle);
        break;
      }
      case JointLimitType::kHinge: {
        v1::HingeLimit* h = spec->mutable_hinge();
        Vec3ToProto(limit.axis, h->mutable_axis());
        h->set_min_angle(limit.min_angle);
        h->set_max_angle(limit.max_angle);
        break;
      }
      case JointLimitType::kNone:
        break;
    }
  }
}

absl::StatusOr<Eigen::Vector3f> RequiredVec3(bool has, const v1::Vec3& v,
                                             absl::string_view field) {
  if (!has) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": required"));
  }
  return Vec3FromProto(v, field);
}

absl::StatusOr<Eigen::Vector3f> OptionalVec3(bool has, const v1::Vec3& v,
                                             const Eigen::Vector3f& fallback,
                                             absl::string_view field) {
  if (!has) return fallback;
  return Vec3FromProto(v, field);
}

absl::StatusOr<Eigen::Vector3f> CompiledTarget::For(
    const OpFrame& frame) const {
  if (frame.update != nullptr && frame.update->has_target()) {
    // Checked finite by IndexOpUpdates.
    return Eigen::Vector3f(frame.update->target().x(),
                           frame.update->target().y(),
                           frame.update->target().z());
  }
  if (value.has_value()) return *value;
  return absl::InvalidArgumentError(
      absl::StrCat(frame.field.str(), leaf, ": required"));
}

absl::StatusOr<CompiledTarget> CompileTarget(bool has, const v1::Vec3& v,
                                             absl::string_view field) {
  CompiledTarget target;
  if (!has) return target;
  auto value = Vec3FromProto(v, field);
  if (!value.ok()) return value.status();
  target.value = *value;
  return target;
}

absl::StatusOr<int> Iterations(bool has, uint32_t value, int fallback,
                               int limit, absl::string_view field) {
  if (!has) return std::min(fallback, limit);
  if (value > static_cast<uint32_t>(limit)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        field, ": ", value, " iterations exceed this server's limit of ", limit,
        " (GetInfo limits.max_solver_iterations)"));
  }
  return static_cast<int>(value);
}

absl::StatusOr<IkTolerance> ToleranceFromProto(const v1::Tolerance& proto,
                                               const IkTolerance& fallback,
                                               absl::string_view field) {
  IkTolerance tolerance;
  switch (proto.tolerance_case()) {
    case v1::Tolerance::kAbsolute:
      tolerance.value = proto.absolute();
      break;
    case v1::Tolerance::kRelativeToSkeleton:
      tolerance.value = proto.relative_to_skeleton();
      tolerance.relative_to_skeleton = true;
      break;
    case v1::Tolerance::kRelativeToChain:
      tolerance.value = proto.relative_to_chain();
      tolerance.relative_to_chain = true;
      break;
    case v1::Tolerance::TOLERANCE_NOT_SET:
      tolerance = fallback;
      break;
  }
  if (absl::Status s = ValidateTolerance(tolerance, field); !s.ok()) return s;
  return tolerance;
}

absl::StatusOr<std::vector<int>> JointsFromProto(
    const Skeleton& skeleton,
    const google::protobuf::RepeatedPtrField<std::string>& names,
    absl::string_view field) {
  std::vector<int> joints;
  joints.reserve(names.size());
  for (int i = 0; i < names.size(); ++i) {
    auto joint =
        JointIndex(skeleton, names[i], absl::StrCat(field, "[", i, "]"));
    if (!joint.ok()) return joint.status();
    joints.push_back(*joint);
  }
  return joints;
}

absl::StatusOr<std::vector<int>> ChainFromProto(
    const Skeleton& skeleton,
    const google::protobuf::RepeatedPtrField<std::string>& names,
    absl::string_view field) {
  auto chain = JointsFromProto(skeleton, names, field);
  if (!chain.ok()) return chain.status();
  if (absl::Status s = ValidateChain(skeleton, *chain, field); !s.ok()) {
    return s;
  }
  return chain;
}

absl::StatusOr<std::vector<JointLimit>> LimitsFromProto(
    const Skeleton& skeleton,
    const google::protobuf::RepeatedPtrField<v1::JointLimitSpec>& specs,
    absl::string_view field) {
  std::vector<JointLimit> limits;
  if (specs.empty()) return limits;
  limits.resize(skeleton.num_joints());
  std::vector<bool> seen(skeleton.num_joints(), false);
  for (int i = 0; i < specs.size(); ++i) {
    const v1::JointLimitSpec& spec = specs[i];
    const std::string where = absl::StrCat(field, "[", i, "]");
    auto joint =
        JointIndex(skeleton, spec.joint(), absl::StrCat(where, ".joint"));
    if (!joint.ok()) return joint.status();
    if (seen[*joint]) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ".joint: '", spec.joint(), "' already has a limit"));
    }
    seen[*joint] = true;
    JointLimit limit;
    switch (spec.limit_case()) {
      case v1::JointLimitSpec::kEuler: {
        // Proto3 enums are open: an order this server does not know must
        // not silently become XYZ.
        if (!v1::EulerOrder_IsValid(spec.euler().order())) {
          return absl::InvalidArgumentError(absl::StrCat(
              where, ".euler.order: unknown value ", spec.euler().order()));
        }
        auto min = Vec3FromProto(spec.euler().min(),
                                 absl::StrCat(where, ".euler.min"));
        if (!min.ok()) return min.status();
        auto max = Vec3FromProto(spec.euler().max(),
                                 absl::StrCat(where, ".euler.max"));
        if (!max.ok()) return max.status();
        limit =
            EulerLimit(EulerOrderFromProto(spec.euler().order()), *min, *max);
        break;
      }
      case v1::JointLimitSpec::kSwingTwist: {
        auto axis = RequiredVec3(spec.swing_twist().has_axis(),
                                 spec.swing_twist().axis(),
                                 absl::StrCat(where, ".swing_twist.axis"));
        if (!axis.ok()) return axis.status();
        limit = SwingTwistLimit(*axis, spec.swing_twist().max_swing(),
                                spec.swing_twist().min_twist(),
                                spec.swing_twist().max_twist());
        break;
      }
      case v1::JointLimitSpec::kHinge: {
        auto axis = RequiredVec3(spec.hinge().has_axis(), spec.hinge().axis(),
                                 absl::StrCat(where, ".hinge.axis"));
        if (!axis.ok()) return axis.status();
        limit = HingeLimit(*axis, spec.hinge().min_angle(),
                           spec.hinge().max_angle());
        break;
      }
      case v1::JointLimitSpec::LIMIT_NOT_SET:
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": set euler, swing_twist or hinge"));
    }
    if (spec.has_reference()) {
      auto reference =
          QuatFromProto(spec.reference(), absl::StrCat(where, ".reference"));
      if (!reference.ok()) return reference.status();
      limit.reference = *reference;
    }
    if (absl::Status s = ValidateJointLimit(limit, where, *joint,
                                            skeleton.joint_name(*joint));
        !s.ok()) {
      return s;
    }
    limits[*joint] = limit;
  }
  return limits;
}

absl::Status CheckIndexedEffectorUpdates(const v1::OpUpdate& update, int count,
                                         bool takes_weight, UpdateWhere where) {
  for (int i = 0; i < update.effectors_size(); ++i) {
    const v1::EffectorUpdate& e = update.effectors(i);
    auto at = [&](absl::string_view leaf) {
      return where(absl::StrCat(".effectors[", i, "]", leaf));
    };
    if (e.index() >= static_cast<uint32_t>(count)) {
      return absl::InvalidArgumentError(
          absl::StrCat(at(".index"), ": ", e.index(),
                       " is not an effector of this op, which has ", count,
                       " (indices from 0)"));
    }
    if (IndexRepeats(update.effectors(), i)) {
      return absl::InvalidArgumentError(
          absl::StrCat(at(".index"), ": effector ", e.index(),
                       " already has an update in this frame"));
    }
    if (e.id() != 0 || e.has_rotation() || e.has_rotation_weight() ||
        (!takes_weight && e.has_position_weight())) {
      return absl::InvalidArgumentError(absl::StrCat(
          at(""), ": this op's effectors take only index, target",
          takes_weight ? " and position_weight (the effector's weight)" : "",
          " (id, rotation and rotation_weight are full_body_biped_ik's)"));
    }
    if (!e.has_target() && !e.has_position_weight()) {
      return absl::InvalidArgumentError(
          absl::StrCat(at(""), ": updates nothing (set target)"));
    }
    if (e.has_target() && !Vec3FromProto(e.target(), {}).ok()) {
      return Vec3FromProto(e.target(), at(".target")).status();
    }
    if (e.has_position_weight() &&
        !(std::isfinite(e.position_weight()) && e.position_weight() >= 0.0f)) {
      return absl::InvalidArgumentError(
          absl::StrCat(at(".position_weight"), ": ", e.position_weight(),
                       " must be finite and >= 0"));
    }
  }
  return absl::OkStatus();
}

void ReportIk(const IkResult& result, v1::OperationResult& out) {
  out.set_reached(result.reached);
  out.set_error(result.error);
  out.set_iterations(result.iterations);
}

std::vector<FieldRange> IterativeSolverRanges() {
  return {{.field = "max_iterations",
           .min = 0,
           .max = kMaxIkIterations,
           .server_limited = true}};
}

namespace {
constexpr int kMaxWireClampSmoothing = 2;
}  // namespace

absl::StatusOr<int> ClampSmoothingFromProto(int32_t value,
                                            absl::string_view field) {
  if (value < 0 || value > kMaxWireClampSmoothing) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": ", value, " is not in [0, ", kMaxWireClampSmoothing, "]"));
  }
  return value;
}

FieldRange ClampSmoothingRange() {
  return {.field = "clamp_smoothing",
          .min = 0,
          .max = kMaxWireClampSmoothing,
          .server_limited = false};
}

}  // namespace posewire::server
