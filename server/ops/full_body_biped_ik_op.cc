// full_body_biped_ik: FinalIK's FullBodyBipedIK on a biped mapping (found
// by joint names or given), with effectors for body, shoulders, thighs,
// hands and feet, and per-limb settings.
#include <array>
#include <cmath>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/ops/ik_wire.h"
#include "server/ops/op_table.h"
#include "server/wire/wire_convert.h"
#include "solver_core/full_body/biped_mapping.h"
#include "solver_core/full_body/full_body_biped_ik.h"

namespace posewire::server {
namespace {

BipedJointNames::Limb LimbNames(const v1::BipedLimbJoints& proto) {
  return {proto.clavicle(), proto.upper(), proto.lower(), proto.end()};
}

// The core reports a joint name it cannot find as NOT_FOUND; on the wire
// NOT_FOUND means "an object this server or session does not hold (resend
// or register it)", while a joint name the skeleton lacks is a bad argument,
// as in every other op.
absl::Status MappingError(absl::string_view field, const absl::Status& s) {
  const absl::Status prefixed = PrefixField(field, s);
  if (s.code() != absl::StatusCode::kNotFound) return prefixed;
  return absl::InvalidArgumentError(prefixed.message());
}

absl::StatusOr<BipedMapping> MappingFromProto(const Skeleton& skeleton,
                                              const v1::FullBodyBipedIkOp& op,
                                              absl::string_view field) {
  if (!op.has_mapping()) {
    auto mapping = MapBipedByName(skeleton);
    if (!mapping.ok()) return MappingError(field, mapping.status());
    return mapping;
  }
  const v1::BipedJoints& m = op.mapping();
  BipedJointNames names;
  names.pelvis = m.pelvis();
  names.spine.assign(m.spine().begin(), m.spine().end());
  names.head = m.head();
  names.root_node = m.root_node();
  names.limbs[static_cast<int>(BipedLimb::kLeftArm)] = LimbNames(m.left_arm());
  names.limbs[static_cast<int>(BipedLimb::kRightArm)] =
      LimbNames(m.right_arm());
  names.limbs[static_cast<int>(BipedLimb::kLeftLeg)] = LimbNames(m.left_leg());
  names.limbs[static_cast<int>(BipedLimb::kRightLeg)] =
      LimbNames(m.right_leg());
  auto references = ResolveBipedJointNames(skeleton, names);
  if (!references.ok()) {
    return MappingError(absl::StrCat(field, ".mapping"), references.status());
  }
  auto mapping = BipedMapping::Create(skeleton, *std::move(references));
  if (!mapping.ok())
    return MappingError(absl::StrCat(field, ".mapping"), mapping.status());
  return mapping;
}

class FullBodyBipedIk final : public PreparedOp {
 public:
  FullBodyBipedIk(FullBodyBipedIkJob job, BipedMapping mapping)
      : job_(job), mapping_(std::move(mapping)) {}

  absl::Status CheckUpdate(const v1::OpUpdate& update,
                           UpdateWhere where) const override {
    // Checked every frame that carries effectors: no heap allocation.
    std::array<bool, kNumBipedEffectors> seen{};
    for (int i = 0; i < update.effectors_size(); ++i) {
      const v1::EffectorUpdate& e = update.effectors(i);
      auto at = [&](absl::string_view leaf) {
        return where(absl::StrCat(".effectors[", i, "]", leaf));
      };
      const int id = static_cast<int>(e.id());
      if (id < 0 || id >= kNumBipedEffectors) {
        return absl::InvalidArgumentError(
            absl::StrCat(at(".id"), ": unknown effector ", id));
      }
      if (seen[id]) {
        return absl::InvalidArgumentError(
            absl::StrCat(at(".id"), ": ", v1::BipedEffectorId_Name(e.id()),
                         " already has an update in this frame"));
      }
      seen[id] = true;
      if (e.index() != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            at(".index"), ": a full_body_biped_ik effector is named by id"));
      }
      if (!e.has_target() && !e.has_rotation() && !e.has_position_weight() &&
          !e.has_rotation_weight()) {
        return absl::InvalidArgumentError(absl::StrCat(
            at(""),
            ": updates nothing (set target, rotation, position_weight or "
            "rotation_weight)"));
      }
      if (e.has_target() && !Vec3FromProto(e.target(), {}).ok()) {
        return Vec3FromProto(e.target(), at(".target")).status();
      }
      if (e.has_rotation() && !QuatFromProto(e.rotation(), {}).ok()) {
        return QuatFromProto(e.rotation(), at(".rotation")).status();
      }
      for (auto [set, value, leaf] :
           {std::tuple{e.has_position_weight(), e.position_weight(),
                       ".position_weight"},
            std::tuple{e.has_rotation_weight(), e.rotation_weight(),
                       ".rotation_weight"}}) {
        if (set && !std::isfinite(value)) {
          return absl::InvalidArgumentError(
              absl::StrCat(at(leaf), ": ", value, " is not finite"));
        }
      }
    }
    return absl::OkStatus();
  }

  absl::Status Run(OpFrame& frame) const override {
    FullBodyBipedIkJob job = job_;
    if (const v1::OpUpdate* update = frame.update) {
      if (update->has_weight()) job.ik_position_weight = update->weight();
      for (const v1::EffectorUpdate& e : update->effectors()) {
        BipedEffector& effector = job.effectors[e.id()];
        if (e.has_target()) effector.position = UpdateVector(e.target());
        if (e.has_rotation()) {
          // Checked by CheckUpdate, converted as the op's own.
          effector.rotation = *QuatFromProto(e.rotation(), {});
        }
        if (e.has_position_weight()) {
          effector.position_weight = e.position_weight();
        }
        if (e.has_rotation_weight()) {
          effector.rotation_weight = e.rotation_weight();
        }
      }
    }
    job.skeleton = &frame.skeleton;
    job.input = frame.pose;  // in place
    job.input_validated = frame.pose_validated;
    job.mapping = &mapping_;
    job.output = absl::MakeSpan(frame.pose);
    FullBodyBipedIkResult result;
    job.result = &result;
    if (absl::Status s = job.Run(); !s.ok()) return frame.field.Prefix(s);
    frame.result.set_reached(result.reached);
    frame.result.set_error(result.max_error);
    frame.result.set_iterations(result.iterations);
    // The mapping's set-up warnings come first in the result's.
    for (const std::string& w : result.warnings) frame.result.add_warnings(w);
    return absl::OkStatus();
  }

 private:
  FullBodyBipedIkJob job_;  // effectors, limbs and settings; spans per frame
  BipedMapping mapping_;
};

CompiledOp Compile(const OpCompileInput& input) {
  const v1::FullBodyBipedIkOp& op = input.op.full_body_biped_ik();
  auto mapping = MappingFromProto(input.skeleton, op, input.field);
  if (!mapping.ok()) return mapping.status();

  FullBodyBipedIkJob job;
  std::vector<bool> seen(kNumBipedEffectors, false);
  for (int i = 0; i < op.effectors_size(); ++i) {
    const v1::BipedEffector& e = op.effectors(i);
    const std::string where = absl::StrCat(input.field, ".effectors[", i, "]");
    const int id = static_cast<int>(e.id());
    if (id < 0 || id >= kNumBipedEffectors) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ".id: unknown effector ", id));
    }
    if (seen[id]) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ".id: ", v1::BipedEffectorId_Name(e.id()), " given twice"));
    }
    seen[id] = true;
    BipedEffector& effector = job.effectors[id];
    auto position =
        Vec3FromProto(e.position(), absl::StrCat(where, ".position"));
    if (!position.ok()) return position.status();
    effector.position = *position;
    effector.position_weight = e.position_weight();
    if (e.has_rotation()) {
      auto rotation =
          QuatFromProto(e.rotation(), absl::StrCat(where, ".rotation"));
      if (!rotation.ok()) return rotation.status();
      effector.rotation = *rotation;
    }
    effector.rotation_weight = e.rotation_weight();
    auto offset = Vec3FromProto(e.position_offset(),
                                absl::StrCat(where, ".position_offset"));
    if (!offset.ok()) return offset.status();
    effector.position_offset = *offset;
    effector.maintain_relative_position_weight =
        e.maintain_relative_position_weight();
  }
  for (int i = 0; i < op.limbs_size(); ++i) {
    const v1::BipedLimbSettings& l = op.limbs(i);
    const std::string where = absl::StrCat(input.field, ".limbs[", i, "]");
    const int id = static_cast<int>(l.limb());
    if (id < 0 || id >= kNumBipedLimbs) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ".limb: unknown limb ", id));
    }
    BipedLimbSettings& limb = job.limbs[id];
    if (l.has_pull()) limb.pull = l.pull();
    if (l.has_reach()) limb.reach = l.reach();
    if (l.has_push()) limb.push = l.push();
    if (l.has_push_parent()) limb.push_parent = l.push_parent();
    if (l.has_bend_goal()) {
      auto goal =
          Vec3FromProto(l.bend_goal(), absl::StrCat(where, ".bend_goal"));
      if (!goal.ok()) return goal.status();
      limb.bend_goal = *goal;
    }
    limb.bend_goal_weight = l.bend_goal_weight();
    if (l.has_mapping_weight()) limb.mapping_weight = l.mapping_weight();
    limb.maintain_rotation_weight = l.maintain_rotation_weight();
  }
  if (op.has_ik_position_weight())
    job.ik_position_weight = op.ik_position_weight();
  // Worded as the other iterative ops word it, naming the GetInfo limit.
  auto over_limit = [&input](absl::string_view name, uint32_t value) {
    return absl::ResourceExhaustedError(
        absl::StrCat(input.field, ".", name, ": ", value,
                     " iterations exceed this server's limit of ",
                     input.limits.max_solver_iterations,
                     " (GetInfo limits.max_solver_iterations)"));
  };
  if (op.has_converge()) job.converge = op.converge();
  // Unset: the core's cap when converging, FinalIK's count when not (what
  // the op did before `converge`), capped at the server's limit.
  auto iterations = Iterations(
      op.has_iterations(), op.iterations(),
      job.converge ? job.iterations : kFinalIkFullBodyBipedIterations,
      input.limits.max_solver_iterations,
      absl::StrCat(input.field, ".iterations"));
  if (!iterations.ok()) return iterations.status();
  job.iterations = *iterations;
  auto tolerance = ToleranceFromProto(op.tolerance(), job.tolerance,
                                      absl::StrCat(input.field, ".tolerance"));
  if (!tolerance.ok()) return tolerance.status();
  job.tolerance = *tolerance;
  if (op.has_spine_iterations()) {
    if (op.spine_iterations() >
        static_cast<uint32_t>(input.limits.max_solver_iterations)) {
      return over_limit("spine_iterations", op.spine_iterations());
    }
    job.spine_iterations = static_cast<int>(op.spine_iterations());
  }
  if (op.has_spine_twist_weight())
    job.spine_twist_weight = op.spine_twist_weight();
  job.head_maintain_rotation_weight = op.head_maintain_rotation_weight();

  return std::make_unique<FullBodyBipedIk>(job, *std::move(mapping));
}

}  // namespace

OpSpec FullBodyBipedIkOpSpec() {
  return {.op_case = v1::Operation::kFullBodyBipedIk,
          .updatable = kUpdateWeight | kUpdateEffectors,
          .compile = Compile,
          .ranges = {{.field = "iterations",
                      .min = 0,
                      .max = kMaxFullBodyBipedIterations,
                      .server_limited = true},
                     {.field = "spine_iterations",
                      .min = 1,
                      .max = kMaxSpineMappingIterations,
                      .server_limited = true}}};
}

}  // namespace posewire::server
