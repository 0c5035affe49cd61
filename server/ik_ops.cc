#include "server/ik_ops.h"

#include <cmath>
#include <optional>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "server/field_name.h"
#include "server/wire_convert.h"
#include "solver_core/analytic_ik/aim_ik.h"
#include "solver_core/analytic_ik/two_bone_ik.h"
#include "solver_core/chain_ik/ccd_ik.h"
#include "solver_core/chain_ik/fabrik_ik.h"
#include "solver_core/chain_ik/ik_chain.h"
#include "solver_core/chain_ik/joint_limits.h"
#include "solver_core/full_body/full_body_ccd.h"

namespace posewire::server {
namespace {

constexpr int kDefaultIterations = 20;
// AimIkOp.clamp_smoothing's documented range is [0, 2].
constexpr int kMaxWireClampSmoothing = 2;

// A required vector: unset is an error, since a default target would be a
// silently wrong pose.
absl::StatusOr<Eigen::Vector3f> RequiredVec3(bool has, const v1::Vec3& v,
                                             absl::string_view field) {
  if (!has)
    return absl::InvalidArgumentError(absl::StrCat(field, ": required"));
  return Vec3FromProto(v, field);
}

// An op's target, or the one this frame's OpUpdate (ctx.update) sends
// instead.
struct WireTarget {
  bool has;
  const v1::Vec3& value;
};
WireTarget TargetOf(const IkOpContext& ctx, bool has, const v1::Vec3& value) {
  if (ctx.update != nullptr && ctx.update->has_target()) {
    return {true, ctx.update->target()};
  }
  return {has, value};
}

absl::StatusOr<Eigen::Vector3f> OptionalVec3(bool has, const v1::Vec3& v,
                                             const Eigen::Vector3f& fallback,
                                             absl::string_view field) {
  if (!has) return fallback;
  return Vec3FromProto(v, field);
}

// The model-space transforms of `joint`'s ancestors only: the two-bone and
// aim jobs read nothing else of the model pose (the parent of the joint they
// start from). Computed exactly as LocalToModelJob does, root first, so the
// entries are bit-identical to a full pass at a fraction of its cost; the
// other entries are left as identity and never read. The pose lives in a
// per-thread buffer, valid until the thread's next call: one allocation per
// solver thread instead of one per op.
absl::Span<const Transform> ModelOfAncestors(const Skeleton& skeleton,
                                             const LocalPose& pose, int joint) {
  thread_local ModelPose model;
  model.assign(skeleton.num_joints(), Transform());
  absl::InlinedVector<int, 16> path;  // parent of `joint` up to the root
  for (int j = skeleton.parent(joint); j != kNoParent; j = skeleton.parent(j)) {
    path.push_back(j);
  }
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    const int p = skeleton.parent(*it);
    model[*it] =
        Combine(p == kNoParent ? Transform::Identity() : model[p], pose[*it]);
  }
  return model;
}

absl::StatusOr<int> Iterations(bool has, uint32_t value, int limit,
                               absl::string_view field) {
  if (!has) return std::min(kDefaultIterations, limit);
  if (value > static_cast<uint32_t>(limit)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        field, ": ", value, " iterations exceed this server's limit of ", limit,
        " (GetInfo limits.max_solver_iterations)"));
  }
  return static_cast<int>(value);
}

absl::StatusOr<IkTolerance> ToleranceFromProto(const v1::Tolerance& proto,
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
    case v1::Tolerance::TOLERANCE_NOT_SET:
      break;
  }
  if (absl::Status s = ValidateTolerance(tolerance, field); !s.ok()) return s;
  return tolerance;
}

absl::StatusOr<std::vector<int>> ChainFromProto(
    const Skeleton& skeleton,
    const google::protobuf::RepeatedPtrField<std::string>& names,
    absl::string_view field) {
  std::vector<int> chain;
  chain.reserve(names.size());
  for (int i = 0; i < names.size(); ++i) {
    auto joint =
        JointIndex(skeleton, names[i], absl::StrCat(field, "[", i, "]"));
    if (!joint.ok()) return joint.status();
    chain.push_back(*joint);
  }
  if (absl::Status s = ValidateChain(skeleton, chain, field); !s.ok()) return s;
  return chain;
}

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

// One JointLimit per skeleton joint (kNone where nothing is given), or an
// empty vector when no limit is given at all.
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

// What CCD and FABRIK share: the chain, target, iteration cap, tolerance
// and joint limits, converted and checked.
// What every iterative solver op shares: the iteration cap, tolerance and
// joint limits, converted and checked.
struct SolverSettings {
  int iterations = 0;
  IkTolerance tolerance;
  std::vector<JointLimit> limits;
};

template <typename Op>
absl::StatusOr<SolverSettings> SettingsFromProto(const IkOpContext& ctx,
                                                 const Op& op) {
  SolverSettings settings;
  auto iterations = Iterations(op.has_max_iterations(), op.max_iterations(),
                               ctx.max_iterations,
                               absl::StrCat(ctx.field, ".max_iterations"));
  if (!iterations.ok()) return iterations.status();
  settings.iterations = *iterations;
  auto tolerance =
      ToleranceFromProto(op.tolerance(), absl::StrCat(ctx.field, ".tolerance"));
  if (!tolerance.ok()) return tolerance.status();
  settings.tolerance = *tolerance;
  auto limits = LimitsFromProto(ctx.skeleton, op.limits(),
                                absl::StrCat(ctx.field, ".limits"));
  if (!limits.ok()) return limits.status();
  settings.limits = *std::move(limits);
  return settings;
}

// CCD and FABRIK also share the chain and its target.
struct ChainInputs {
  std::vector<int> chain;
  Eigen::Vector3f target;
  SolverSettings settings;
};

template <typename Op>
absl::StatusOr<ChainInputs> ChainInputsFromProto(const IkOpContext& ctx,
                                                 const Op& op) {
  ChainInputs in;
  auto chain = ChainFromProto(ctx.skeleton, op.chain(),
                              absl::StrCat(ctx.field, ".chain"));
  if (!chain.ok()) return chain.status();
  in.chain = *std::move(chain);
  const WireTarget wire = TargetOf(ctx, op.has_target(), op.target());
  auto target = NamedOnError(ctx.field, ".target", [&](absl::string_view f) {
    return RequiredVec3(wire.has, wire.value, f);
  });
  if (!target.ok()) return target.status();
  in.target = *target;
  auto settings = SettingsFromProto(ctx, op);
  if (!settings.ok()) return settings.status();
  in.settings = *std::move(settings);
  return in;
}

void Report(const IkResult& result, v1::OperationResult& out) {
  out.set_reached(result.reached);
  out.set_error(result.error);
  out.set_iterations(result.iterations);
}

}  // namespace

absl::Status RunTwoBoneIk(IkOpContext& ctx, const v1::TwoBoneIkOp& op) {
  const Skeleton& skeleton = ctx.skeleton;
  TwoBoneIkJob job;
  job.skeleton = &skeleton;
  for (auto [name, out, label] :
       {std::tuple{&op.start_joint(), &job.start_joint, ".start_joint"},
        std::tuple{&op.mid_joint(), &job.mid_joint, ".mid_joint"},
        std::tuple{&op.end_joint(), &job.end_joint, ".end_joint"}}) {
    // An init-capture: clang before 16 cannot capture a structured binding.
    auto joint =
        NamedOnError(ctx.field, label, [&, name = name](absl::string_view f) {
          return JointIndex(skeleton, *name, f);
        });
    if (!joint.ok()) return joint.status();
    *out = *joint;
  }
  const WireTarget wire = TargetOf(ctx, op.has_target(), op.target());
  auto target = NamedOnError(ctx.field, ".target", [&](absl::string_view f) {
    return RequiredVec3(wire.has, wire.value, f);
  });
  if (!target.ok()) return target.status();
  job.target = *target;
  auto pole = NamedOnError(ctx.field, ".pole_vector", [&](absl::string_view f) {
    return OptionalVec3(op.has_pole_vector(), op.pole_vector(),
                        Eigen::Vector3f::UnitY(), f);
  });
  if (!pole.ok()) return pole.status();
  job.pole_vector = *pole;
  const bool new_goal = ctx.update != nullptr && ctx.update->has_bend_goal();
  if (new_goal || op.has_bend_goal()) {
    const v1::Vec3& wire_goal =
        new_goal ? ctx.update->bend_goal() : op.bend_goal();
    auto goal = NamedOnError(ctx.field, ".bend_goal", [&](absl::string_view f) {
      return Vec3FromProto(wire_goal, f);
    });
    if (!goal.ok()) return goal.status();
    job.bend_goal = *goal;
  }
  if (op.has_end_rotation()) {
    auto rotation =
        NamedOnError(ctx.field, ".end_rotation", [&](absl::string_view f) {
          return QuatFromProto(op.end_rotation(), f);
        });
    if (!rotation.ok()) return rotation.status();
    job.end_rotation = *rotation;
  }
  auto axis = NamedOnError(ctx.field, ".mid_axis", [&](absl::string_view f) {
    return OptionalVec3(op.has_mid_axis(), op.mid_axis(),
                        Eigen::Vector3f::UnitZ(), f);
  });
  if (!axis.ok()) return axis.status();
  job.mid_axis = *axis;
  job.twist_angle = op.twist_angle();
  if (op.has_soften()) job.soften = op.soften();
  if (op.has_weight()) job.weight = op.weight();
  if (op.has_end_rotation_weight())
    job.end_rotation_weight = op.end_rotation_weight();
  job.stretch = op.stretch();
  if (op.stretch()) job.max_stretch = op.max_stretch();

  job.local = ctx.pose;
  job.model = ModelOfAncestors(skeleton, ctx.pose, job.start_joint);
  job.output = absl::MakeSpan(ctx.pose);  // in place
  TwoBoneIkResult result;
  job.result = &result;
  if (absl::Status s = job.Run(); !s.ok()) return PrefixField(ctx.field, s);
  ctx.result.set_reached(result.reached);
  ctx.result.set_error(result.error);
  ctx.result.set_iterations(result.iterations);
  return absl::OkStatus();
}

absl::Status RunAimIk(IkOpContext& ctx, const v1::AimIkOp& op) {
  const Skeleton& skeleton = ctx.skeleton;
  AimIkJob job;
  job.skeleton = &skeleton;
  auto joint = NamedOnError(ctx.field, ".joint", [&](absl::string_view f) {
    return JointIndex(skeleton, op.joint(), f);
  });
  if (!joint.ok()) return joint.status();
  job.joint = *joint;
  const WireTarget wire = TargetOf(ctx, op.has_target(), op.target());
  auto target = NamedOnError(ctx.field, ".target", [&](absl::string_view f) {
    return RequiredVec3(wire.has, wire.value, f);
  });
  if (!target.ok()) return target.status();
  job.target = *target;
  struct Optional {
    bool has;
    const v1::Vec3& value;
    Eigen::Vector3f fallback;
    Eigen::Vector3f* out;
    const char* name;
  };
  for (const Optional& o :
       {Optional{op.has_pole_vector(), op.pole_vector(),
                 Eigen::Vector3f::UnitY(), &job.pole_vector, ".pole_vector"},
        Optional{op.has_forward(), op.forward(), Eigen::Vector3f::UnitX(),
                 &job.forward, ".forward"},
        Optional{op.has_up(), op.up(), Eigen::Vector3f::UnitY(), &job.up,
                 ".up"},
        Optional{op.has_offset(), op.offset(), Eigen::Vector3f::Zero(),
                 &job.offset, ".offset"}}) {
    auto v = NamedOnError(ctx.field, o.name, [&](absl::string_view f) {
      return OptionalVec3(o.has, o.value, o.fallback, f);
    });
    if (!v.ok()) return v.status();
    *o.out = *v;
  }
  job.twist_angle = op.twist_angle();
  if (op.has_weight()) job.weight = op.weight();
  job.clamp_weight = op.clamp_weight();
  // The wire contract is FinalIK's range, [0, 2]; the core job accepts more
  // passes, which the proto does not promise.
  if (op.clamp_smoothing() < 0 ||
      op.clamp_smoothing() > kMaxWireClampSmoothing) {
    return absl::InvalidArgumentError(
        absl::StrCat(ctx.field, ".clamp_smoothing: ", op.clamp_smoothing(),
                     " is not in [0, ", kMaxWireClampSmoothing, "]"));
  }
  job.clamp_smoothing = op.clamp_smoothing();

  job.local = ctx.pose;
  job.model = ModelOfAncestors(skeleton, ctx.pose, job.joint);
  job.output = absl::MakeSpan(ctx.pose);
  AimIkResult result;
  job.result = &result;
  if (absl::Status s = job.Run(); !s.ok()) return PrefixField(ctx.field, s);
  ctx.result.set_reached(result.reached);
  ctx.result.set_error(result.error);
  ctx.result.set_iterations(result.iterations);
  if (result.clamped) ctx.result.add_warnings("aim clamped to its cone");
  return absl::OkStatus();
}

absl::Status RunCcdIk(IkOpContext& ctx, const v1::CcdIkOp& op) {
  const Skeleton& skeleton = ctx.skeleton;
  auto in = ChainInputsFromProto(ctx, op);
  if (!in.ok()) return in.status();
  auto fallback_axis = OptionalVec3(op.has_fallback_axis(), op.fallback_axis(),
                                    Eigen::Vector3f::UnitX(),
                                    absl::StrCat(ctx.field, ".fallback_axis"));
  if (!fallback_axis.ok()) return fallback_axis.status();

  const LocalPose input = ctx.pose;
  CcdIkJob job;
  job.skeleton = &skeleton;
  job.input = input;
  job.chain = in->chain;
  job.target = in->target;
  job.max_iterations = in->settings.iterations;
  job.tolerance = in->settings.tolerance;
  if (op.has_weight()) job.weight = op.weight();
  job.joint_weights = op.joint_weights();
  job.incremental = op.incremental();
  job.max_step_angle = op.max_step_angle();
  if (op.has_over_relaxation()) job.over_relaxation = op.over_relaxation();
  job.limits = in->settings.limits;
  job.hinge_fallback = op.hinge_fallback();
  job.fallback_axis = *fallback_axis;
  job.nudge = op.nudge();
  job.output = absl::MakeSpan(ctx.pose);
  IkResult result;
  job.result = &result;
  if (absl::Status s = job.Run(); !s.ok()) return PrefixField(ctx.field, s);
  Report(result, ctx.result);
  return absl::OkStatus();
}

absl::Status RunFabrikIk(IkOpContext& ctx, const v1::FabrikIkOp& op) {
  const Skeleton& skeleton = ctx.skeleton;
  auto in = ChainInputsFromProto(ctx, op);
  if (!in.ok()) return in.status();
  auto normal = OptionalVec3(op.has_plane_normal(), op.plane_normal(),
                             Eigen::Vector3f::Zero(),
                             absl::StrCat(ctx.field, ".plane_normal"));
  if (!normal.ok()) return normal.status();
  std::vector<SignedAngleRange> planar;
  for (const v1::AngleRange& range : op.planar_limits()) {
    planar.push_back(SignedAngleRange{range.min(), range.max()});
  }

  const LocalPose input = ctx.pose;
  FabrikIkJob job;
  job.skeleton = &skeleton;
  job.input = input;
  job.chain = in->chain;
  job.target = in->target;
  job.max_iterations = in->settings.iterations;
  job.tolerance = in->settings.tolerance;
  if (op.has_weight()) job.weight = op.weight();
  if (op.has_over_relaxation()) job.over_relaxation = op.over_relaxation();
  job.limits = in->settings.limits;
  job.plane_normal = *normal;
  job.planar_limits = planar;
  job.output = absl::MakeSpan(ctx.pose);
  IkResult result;
  job.result = &result;
  if (absl::Status s = job.Run(); !s.ok()) return PrefixField(ctx.field, s);
  Report(result, ctx.result);
  return absl::OkStatus();
}

absl::Status RunFabrikTreeIk(IkOpContext& ctx, const v1::FabrikTreeIkOp& op) {
  const Skeleton& skeleton = ctx.skeleton;
  auto root = JointIndex(skeleton, op.root(), absl::StrCat(ctx.field, ".root"));
  if (!root.ok()) return root.status();
  std::vector<FabrikEffector> effectors;
  for (int i = 0; i < op.effectors_size(); ++i) {
    const v1::FabrikEffector& e = op.effectors(i);
    const std::string where = absl::StrCat(ctx.field, ".effectors[", i, "]");
    auto joint = JointIndex(skeleton, e.joint(), absl::StrCat(where, ".joint"));
    if (!joint.ok()) return joint.status();
    auto target = RequiredVec3(e.has_target(), e.target(),
                               absl::StrCat(where, ".target"));
    if (!target.ok()) return target.status();
    FabrikEffector effector;
    effector.joint = *joint;
    effector.target = *target;
    if (e.has_pull()) effector.pull = e.pull();
    effectors.push_back(effector);
  }
  auto settings = SettingsFromProto(ctx, op);
  if (!settings.ok()) return settings.status();

  const LocalPose input = ctx.pose;
  FabrikTreeIkJob job;
  job.skeleton = &skeleton;
  job.input = input;
  job.root = *root;
  job.effectors = effectors;
  job.max_iterations = settings->iterations;
  job.tolerance = settings->tolerance;
  if (op.has_weight()) job.weight = op.weight();
  job.limits = settings->limits;
  job.output = absl::MakeSpan(ctx.pose);
  IkResult result;
  job.result = &result;
  if (absl::Status s = job.Run(); !s.ok()) return PrefixField(ctx.field, s);
  Report(result, ctx.result);
  return absl::OkStatus();
}

absl::Status RunFullBodyCcd(IkOpContext& ctx, const v1::FullBodyCcdOp& op) {
  const Skeleton& skeleton = ctx.skeleton;
  std::vector<FullBodyCcdEffector> effectors;
  for (int i = 0; i < op.effectors_size(); ++i) {
    const v1::FullBodyCcdEffector& e = op.effectors(i);
    const std::string where = absl::StrCat(ctx.field, ".effectors[", i, "]");
    auto joint = JointIndex(skeleton, e.joint(), absl::StrCat(where, ".joint"));
    if (!joint.ok()) return joint.status();
    auto target = RequiredVec3(e.has_target(), e.target(),
                               absl::StrCat(where, ".target"));
    if (!target.ok()) return target.status();
    auto offset = Vec3FromProto(e.offset(), absl::StrCat(where, ".offset"));
    if (!offset.ok()) return offset.status();
    FullBodyCcdEffector effector;
    effector.joint = *joint;
    effector.offset = *offset;
    effector.target = *target;
    if (e.has_weight()) effector.weight = e.weight();
    effectors.push_back(effector);
  }
  auto settings = SettingsFromProto(ctx, op);
  if (!settings.ok()) return settings.status();
  auto translation = JointIndex(skeleton, op.translation_joint(),
                                absl::StrCat(ctx.field, ".translation_joint"),
                                /*allow_empty=*/true);
  if (!translation.ok()) return translation.status();

  const LocalPose input = ctx.pose;
  FullBodyCcdJob job;
  job.skeleton = &skeleton;
  job.input = input;
  job.effectors = effectors;
  job.max_iterations = settings->iterations;
  job.tolerance = settings->tolerance;
  if (op.has_weight()) job.weight = op.weight();
  job.joint_weights = op.joint_weights();
  job.limits = settings->limits;
  job.nudge = op.nudge();
  job.translation_joint = *translation;
  job.output = absl::MakeSpan(ctx.pose);
  IkResult result;
  job.result = &result;
  if (absl::Status s = job.Run(); !s.ok()) return PrefixField(ctx.field, s);
  Report(result, ctx.result);
  return absl::OkStatus();
}

}  // namespace posewire::server
