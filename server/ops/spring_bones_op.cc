// spring_bones: Kawaii-style spring-bone dynamics on chains below root
// joints, with forces and colliders; the particles are state kept per
// state_key. The rig is built once, when the op is compiled.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/ops/ik_wire.h"
#include "server/ops/op_table.h"
#include "server/wire/wire_convert.h"
#include "solver_core/dynamics/dynamics_state.h"
#include "solver_core/dynamics/spring_bones.h"

namespace posewire::server {

// SpringRigDesc::max_substeps' documented range is [1, 64].
constexpr int kMaxSpringSubsteps = 64;
namespace {

constexpr char kDefaultSpringKey[] = "spring_bones";

SpringCurve CurveFromProto(
    const google::protobuf::RepeatedPtrField<v1::CurveKey>& keys) {
  SpringCurve curve;
  for (const v1::CurveKey& key : keys) {
    curve.push_back(SpringCurveKey{key.position(), key.value()});
  }
  return curve;
}

// Proto3 enums are open: a value this server does not know (a newer
// client's) must not silently become the default.
absl::Status CheckRigEnums(const v1::SpringRig& proto,
                           absl::string_view field) {
  const struct {
    bool valid;
    const char* name;
    int value;
  } enums[] = {
      {v1::SpringTipAxis_IsValid(proto.tip_axis()), "tip_axis",
       proto.tip_axis()},
      {v1::SimulationSpace_IsValid(proto.space()), "space", proto.space()},
      {v1::TeleportResponse_IsValid(proto.teleport_response()),
       "teleport_response", proto.teleport_response()},
  };
  for (const auto& e : enums) {
    if (!e.valid) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".", e.name, ": unknown value ", e.value));
    }
  }
  return absl::OkStatus();
}

SpringRigDesc RigDescFromProto(const v1::SpringRig& proto) {
  SpringRigDesc desc;
  desc.root_joints.assign(proto.root_joints().begin(),
                          proto.root_joints().end());
  desc.excluded_joints.assign(proto.excluded_joints().begin(),
                              proto.excluded_joints().end());
  desc.dummy_tip_length = proto.dummy_tip_length();
  switch (proto.tip_axis()) {
    case v1::SPRING_TIP_AXIS_X_NEGATIVE:
      desc.tip_axis = SpringTipAxis::kXNegative;
      break;
    case v1::SPRING_TIP_AXIS_Y_POSITIVE:
      desc.tip_axis = SpringTipAxis::kYPositive;
      break;
    case v1::SPRING_TIP_AXIS_Y_NEGATIVE:
      desc.tip_axis = SpringTipAxis::kYNegative;
      break;
    case v1::SPRING_TIP_AXIS_Z_POSITIVE:
      desc.tip_axis = SpringTipAxis::kZPositive;
      break;
    case v1::SPRING_TIP_AXIS_Z_NEGATIVE:
      desc.tip_axis = SpringTipAxis::kZNegative;
      break;
    case v1::SPRING_TIP_AXIS_ALONG_BONE:
      desc.tip_axis = SpringTipAxis::kAlongBone;
      break;
    default:
      desc.tip_axis = SpringTipAxis::kXPositive;
      break;
  }
  const v1::SpringBoneSettings& s = proto.settings();
  if (s.has_damping()) desc.settings.damping = s.damping();
  if (s.has_stiffness()) desc.settings.stiffness = s.stiffness();
  if (s.has_world_damping_location()) {
    desc.settings.world_damping_location = s.world_damping_location();
  }
  if (s.has_world_damping_rotation()) {
    desc.settings.world_damping_rotation = s.world_damping_rotation();
  }
  if (s.has_radius()) desc.settings.radius = s.radius();
  if (s.has_limit_angle_degrees()) {
    desc.settings.limit_angle_degrees = s.limit_angle_degrees();
  }
  const v1::SpringCurves& c = proto.curves();
  desc.curves.damping = CurveFromProto(c.damping());
  desc.curves.stiffness = CurveFromProto(c.stiffness());
  desc.curves.world_damping_location =
      CurveFromProto(c.world_damping_location());
  desc.curves.world_damping_rotation =
      CurveFromProto(c.world_damping_rotation());
  desc.curves.radius = CurveFromProto(c.radius());
  desc.curves.limit_angle = CurveFromProto(c.limit_angle());
  desc.space = proto.space() == v1::SIMULATION_SPACE_WORLD
                   ? SimulationSpace::kWorld
                   : SimulationSpace::kComponent;
  if (proto.has_target_rate_hz()) desc.target_rate_hz = proto.target_rate_hz();
  if (proto.has_max_substeps()) desc.max_substeps = proto.max_substeps();
  if (proto.has_teleport_distance()) {
    desc.teleport_distance = proto.teleport_distance();
  }
  if (proto.has_teleport_rotation_degrees()) {
    desc.teleport_rotation_degrees = proto.teleport_rotation_degrees();
  }
  desc.teleport_response =
      proto.teleport_response() == v1::TELEPORT_RESPONSE_RESET
          ? TeleportResponse::kReset
          : TeleportResponse::kIgnoreMotion;
  return desc;
}

absl::StatusOr<SpringCollider> ColliderFromProto(
    const Skeleton& skeleton, const v1::SpringCollider& proto,
    absl::string_view field) {
  SpringCollider collider;
  switch (proto.shape()) {
    case v1::SpringCollider::SHAPE_SPHERE:
      collider.shape = ColliderShape::kSphere;
      break;
    case v1::SpringCollider::SHAPE_CAPSULE:
      collider.shape = ColliderShape::kCapsule;
      break;
    case v1::SpringCollider::SHAPE_BOX:
      collider.shape = ColliderShape::kBox;
      break;
    case v1::SpringCollider::SHAPE_PLANE:
      collider.shape = ColliderShape::kPlane;
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".shape: unknown value ", proto.shape()));
  }
  switch (proto.attachment()) {
    case v1::SpringCollider::ATTACHMENT_COMPONENT:
      collider.attachment = ColliderAttachment::kComponent;
      break;
    case v1::SpringCollider::ATTACHMENT_WORLD:
      collider.attachment = ColliderAttachment::kWorld;
      break;
    case v1::SpringCollider::ATTACHMENT_BONE: {
      collider.attachment = ColliderAttachment::kBone;
      auto bone =
          JointIndex(skeleton, proto.bone(), absl::StrCat(field, ".bone"));
      if (!bone.ok()) return bone.status();
      collider.bone = *bone;
      break;
    }
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".attachment: unknown value ", proto.attachment()));
  }
  auto offset =
      TransformFromProto(proto.offset(), absl::StrCat(field, ".offset"));
  if (!offset.ok()) return offset.status();
  collider.offset = *offset;
  if (proto.has_radius()) collider.radius = proto.radius();
  if (proto.has_length()) collider.length = proto.length();
  if (proto.has_half_extents()) {
    auto v = Vec3FromProto(proto.half_extents(),
                           absl::StrCat(field, ".half_extents"));
    if (!v.ok()) return v.status();
    collider.half_extents = *v;
  }
  if (proto.has_axis()) {
    auto v = Vec3FromProto(proto.axis(), absl::StrCat(field, ".axis"));
    if (!v.ok()) return v.status();
    collider.axis = *v;
  }
  collider.keep_inside = proto.keep_inside();
  return collider;
}

// The wind as the op or an update gives it; the job checks its values.
absl::StatusOr<SpringWind> WindFromProto(const v1::SpringWind& proto,
                                         absl::string_view field) {
  SpringWind wind;
  if (proto.has_direction()) {
    auto v =
        Vec3FromProto(proto.direction(), absl::StrCat(field, ".direction"));
    if (!v.ok()) return v.status();
    wind.direction = *v;
  }
  wind.speed = proto.speed();
  wind.noise_amplitude = proto.noise_amplitude();
  if (proto.has_noise_frequency_hz()) {
    wind.noise_frequency_hz = proto.noise_frequency_hz();
  }
  wind.noise_seed = proto.noise_seed();
  return wind;
}

class SpringBones final : public PreparedOp {
 public:
  SpringBones(std::string key, SpringRig rig, SpringForces forces,
              std::vector<SpringCollider> colliders, bool reset)
      : key_(std::move(key)),
        rig_(std::move(rig)),
        forces_(forces),
        colliders_(std::move(colliders)),
        reset_(reset) {}

  absl::Status CheckUpdate(const v1::OpUpdate& update,
                           UpdateWhere where) const override {
    if (update.has_wind()) {
      if (auto wind = WindFromProto(update.wind(), {}); !wind.ok()) {
        return WindFromProto(update.wind(), where(".wind")).status();
      }
    }
    for (int i = 0; i < update.colliders_size(); ++i) {
      const v1::ColliderUpdate& c = update.colliders(i);
      auto at = [&](absl::string_view leaf) {
        return where(absl::StrCat(".colliders[", i, "]", leaf));
      };
      if (c.index() >= colliders_.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat(at(".index"), ": ", c.index(),
                         " is not a collider of this op, which has ",
                         colliders_.size(), " (indices from 0)"));
      }
      if (IndexRepeats(update.colliders(), i)) {
        return absl::InvalidArgumentError(
            absl::StrCat(at(".index"), ": collider ", c.index(),
                         " already has an update in this frame"));
      }
      if (!c.has_offset()) {
        return absl::InvalidArgumentError(
            absl::StrCat(at(""), ": updates nothing (set offset)"));
      }
      if (!TransformFromProto(c.offset(), {}).ok()) {
        return TransformFromProto(c.offset(), at(".offset")).status();
      }
    }
    return absl::OkStatus();
  }

  absl::Status Run(OpFrame& frame) const override {
    SpringForces forces = forces_;
    absl::Span<const SpringCollider> colliders = colliders_;
    if (const v1::OpUpdate* update = frame.update) {
      if (update->has_gravity()) {
        forces.gravity = UpdateVector(update->gravity());
      }
      if (update->has_external_force()) {
        forces.external_force = UpdateVector(update->external_force());
      }
      // Checked by CheckUpdate, converted as the op's own.
      if (update->has_wind()) forces.wind = *WindFromProto(update->wind(), {});
      if (!update->colliders().empty()) {
        thread_local std::vector<SpringCollider> moved;
        moved.assign(colliders_.begin(), colliders_.end());
        for (const v1::ColliderUpdate& c : update->colliders()) {
          moved[c.index()].offset = *TransformFromProto(c.offset(), {});
        }
        colliders = moved;
      }
    }
    // The solver's ~20 work vectors, kept per thread between frames.
    thread_local SpringBonesScratch scratch;
    SpringBonesResult report;
    SpringBonesJob job;
    job.skeleton = &frame.skeleton;
    job.rig = &rig_;
    job.input = frame.pose;  // in place
    job.input_validated = frame.pose_validated;
    job.component_to_world = frame.root;
    job.dt = frame.dt;
    job.forces = forces;
    job.colliders = colliders;
    job.reset = reset_;
    job.output = absl::MakeSpan(frame.pose);
    job.result = &report;
    job.scratch = &scratch;
    const absl::Status s =
        StepState(frame.state.springs, key_, frame.undo,
                  [&](const DynamicsState& state, DynamicsState& next) {
                    job.state_in = &state;
                    job.state_out = &next;
                    return job.Run();
                  });
    if (!s.ok()) return frame.field.Prefix(s);
    frame.result.set_iterations(report.substeps);
    if (report.initialized) {
      frame.result.add_warnings("initialised from the pose");
    }
    if (report.teleported) frame.result.add_warnings("teleport detected");
    if (report.time_clamped) {
      frame.result.add_warnings(
          "dt exceeded max_substeps steps; the excess was dropped");
    }
    return absl::OkStatus();
  }

  // The simulated joints' rotations (dummy tips are no joint).
  std::optional<std::vector<int>> JointsWritten() const override {
    std::vector<int> joints;
    for (const SpringParticle& p : rig_.particles()) {
      if (p.joint >= 0) joints.push_back(p.joint);
    }
    return joints;
  }

 private:
  std::string key_;
  SpringRig rig_;
  SpringForces forces_;
  std::vector<SpringCollider> colliders_;
  bool reset_;
};

CompiledOp Compile(const OpCompileInput& input) {
  const v1::SpringBonesOp& op = input.op.spring_bones();
  const int max_substeps = input.limits.max_solver_iterations;
  if (op.rig().has_max_substeps() && op.rig().max_substeps() > max_substeps) {
    return absl::ResourceExhaustedError(absl::StrCat(
        input.field, ".rig.max_substeps: ", op.rig().max_substeps(),
        " exceeds this server's limit of ", max_substeps,
        " (GetInfo limits.max_solver_iterations)"));
  }
  if (absl::Status s =
          CheckRigEnums(op.rig(), absl::StrCat(input.field, ".rig"));
      !s.ok()) {
    return s;
  }
  auto rig = SpringRig::Create(input.skeleton, RigDescFromProto(op.rig()));
  if (!rig.ok()) {
    return PrefixField(absl::StrCat(input.field, ".rig"), rig.status());
  }

  SpringForces forces;
  if (op.has_gravity()) {
    auto v = Vec3FromProto(op.gravity(), absl::StrCat(input.field, ".gravity"));
    if (!v.ok()) return v.status();
    forces.gravity = *v;
  }
  if (op.has_wind()) {
    auto wind = WindFromProto(op.wind(), absl::StrCat(input.field, ".wind"));
    if (!wind.ok()) return wind.status();
    forces.wind = *wind;
  }
  if (op.has_external_force()) {
    auto v = Vec3FromProto(op.external_force(),
                           absl::StrCat(input.field, ".external_force"));
    if (!v.ok()) return v.status();
    forces.external_force = *v;
  }
  forces.external_force_space = op.external_force_in_world()
                                    ? ForceSpace::kWorld
                                    : ForceSpace::kComponent;
  std::vector<SpringCollider> colliders;
  for (int i = 0; i < op.colliders_size(); ++i) {
    auto collider =
        ColliderFromProto(input.skeleton, op.colliders(i),
                          absl::StrCat(input.field, ".colliders[", i, "]"));
    if (!collider.ok()) return collider.status();
    colliders.push_back(*collider);
  }
  return std::make_unique<SpringBones>(
      op.state_key().empty() ? kDefaultSpringKey : op.state_key(),
      *std::move(rig), forces, std::move(colliders), op.reset());
}

}  // namespace

OpSpec SpringBonesOpSpec() {
  return {.op_case = v1::Operation::kSpringBones,
          .updatable = kUpdateGravity | kUpdateExternalForce | kUpdateWind |
                       kUpdateColliders,
          .compile = Compile,
          .ranges = {{.field = "rig.max_substeps",
                      .min = 1,
                      .max = kMaxSpringSubsteps,
                      .server_limited = true}}};
}

}  // namespace posewire::server
