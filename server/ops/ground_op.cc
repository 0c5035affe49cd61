// ground: plants feet on uneven ground (FinalIK Grounder).
#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/ops/ik_wire.h"
#include "server/ops/op_table.h"
#include "server/wire/wire_convert.h"
#include "solver_core/analytic_ik/ground.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/model/pose.h"

namespace posewire::server {
namespace {

using Samples = std::array<GroundSample, kMaxGroundLegs>;

// `hits` as core samples, one per leg: a hit needs a point and a normal
// pointing along `up` (unset: `up`). Errors name `field`[i].
absl::Status SamplesFromProto(
    const google::protobuf::RepeatedPtrField<v1::GroundHit>& hits, size_t legs,
    const Eigen::Vector3f& up, absl::string_view field, Samples& out) {
  if (static_cast<size_t>(hits.size()) != legs) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", hits.size(), " samples for ", legs,
                     " legs; give one per leg, in the op's order (hit false "
                     "for no ground)"));
  }
  for (int i = 0; i < hits.size(); ++i) {
    const v1::GroundHit& h = hits[i];
    GroundSample& s = out[i];
    s = GroundSample{};
    s.hit = h.hit();
    if (!s.hit) continue;
    auto at = [&](absl::string_view leaf) {
      return absl::StrCat(field, "[", i, "]", leaf);
    };
    auto point = RequiredVec3(h.has_point(), h.point(), at(".point"));
    if (!point.ok()) return point.status();
    s.point = *point;
    auto normal = OptionalVec3(h.has_normal(), h.normal(), up, at(".normal"));
    if (!normal.ok()) return normal.status();
    s.normal = *normal;
    if (!(s.normal.squaredNorm() > 1e-12f)) {
      return absl::InvalidArgumentError(absl::StrCat(
          at(".normal"), ": zero length; give the ground's upward normal"));
    }
    if (!(s.normal.dot(up) > 0.0f)) {
      const bool y_up = up == Eigen::Vector3f::UnitY();
      return absl::InvalidArgumentError(
          absl::StrCat(at(".normal"), ": (", s.normal.x(), ", ", s.normal.y(),
                       ", ", s.normal.z(), ") does not point up (",
                       y_up ? "y > 0" : "normal . up > 0",
                       "); give the ground's upward normal"));
    }
  }
  return absl::OkStatus();
}

// What a prepared ground op owns; its job's spans point here.
struct GroundRig {
  std::vector<GroundLeg> legs;
  // Model space's up (unit), as the op gives it.
  Eigen::Vector3f up = Eigen::Vector3f::UnitY();
  Samples samples = {};
  bool has_samples = false;
  std::vector<float> heights;
  Heightfield field;
  bool has_field = false;
};

constexpr char kDefaultGroundKey[] = "ground";

class Ground final : public PreparedOp {
 public:
  Ground(GroundJob job, GroundRig rig, std::string key)
      : job_(job), rig_(std::move(rig)), key_(std::move(key)) {
    rig_.field.heights = rig_.heights;
  }

  absl::Status CheckUpdate(const v1::OpUpdate& update,
                           UpdateWhere where) const override {
    if (update.ground_samples().empty()) return absl::OkStatus();
    Samples samples;
    if (SamplesFromProto(update.ground_samples(), rig_.legs.size(), rig_.up, "",
                         samples)
            .ok()) {
      return absl::OkStatus();
    }
    return SamplesFromProto(update.ground_samples(), rig_.legs.size(), rig_.up,
                            where(".ground_samples"), samples);
  }

  absl::Status Run(OpFrame& frame) const override {
    GroundJob job = job_;
    job.legs = rig_.legs;
    const size_t legs = rig_.legs.size();
    Samples samples;
    if (frame.update != nullptr && !frame.update->ground_samples().empty()) {
      // Checked by CheckUpdate.
      (void)SamplesFromProto(frame.update->ground_samples(), legs, rig_.up, "",
                             samples);
      job.samples = absl::MakeConstSpan(samples.data(), legs);
    } else if (rig_.has_samples) {
      job.samples = absl::MakeConstSpan(rig_.samples.data(), legs);
    } else if (rig_.has_field) {
      job.heightfield = &rig_.field;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          frame.field.str(),
          ".samples: required: the op has no samples or heightfield, so "
          "each frame's op update must give ground_samples"));
    }
    if (frame.update != nullptr && frame.update->has_weight()) {
      job.weight = frame.update->weight();
    }
    job.skeleton = &frame.skeleton;
    job.input = frame.pose;
    job.input_validated = frame.pose_validated;
    job.parent_model =
        ParentModelTransformOrRoot(frame.skeleton, frame.pose, job.pelvis);
    job.output = absl::MakeSpan(frame.pose);
    GroundResult result;
    job.result = &result;
    if (job.pelvis_speed == 0.0f && job.foot_speed == 0.0f) {
      if (absl::Status s = job.Run(); !s.ok()) return frame.field.Prefix(s);
    } else {
      job.dt = frame.dt;
      const absl::Status s =
          StepState(frame.state.grounds, key_, frame.undo,
                    [&](const GroundState& state, GroundState& next) {
                      job.state = &state;
                      job.next_state = &next;
                      return job.Run();
                    });
      if (!s.ok()) return frame.field.Prefix(s);
    }
    frame.result.set_reached(result.grounded_legs == static_cast<int>(legs));
    frame.result.set_iterations(result.iterations);
    if (result.tilt_clamped) {
      frame.result.add_warnings("ground: a foot's tilt held at max_tilt");
    }
    return absl::OkStatus();
  }

 private:
  GroundJob job_;
  GroundRig rig_;
  std::string key_;
};

// Hip to knee to ankle along the rest pose, the shortest of the legs. Runs
// before the job checks the legs, so a leg that is not a parent chain (the
// walk reaches the root without meeting the hip) counts as zero length; the
// job's check then names the broken link.
float ShortestLeg(const Skeleton& skeleton, absl::Span<const GroundLeg> legs) {
  float shortest = 0.0f;
  for (size_t i = 0; i < legs.size(); ++i) {
    float length = 0.0f;
    for (int j = legs[i].ankle;
         j >= 0 && j < skeleton.num_joints() && j != legs[i].hip;
         j = skeleton.parent(j)) {
      length += skeleton.rest_pose()[j].translation.norm();
    }
    shortest = i == 0 ? length : std::min(shortest, length);
  }
  return shortest;
}

absl::Status CompileLegs(const OpCompileInput& input, GroundJob& job,
                         GroundRig& rig) {
  const v1::GroundOp& op = input.op.ground();
  auto pelvis = JointIndex(input.skeleton, op.pelvis(),
                           absl::StrCat(input.field, ".pelvis"));
  if (!pelvis.ok()) return pelvis.status();
  job.pelvis = *pelvis;
  if (op.legs_size() > kMaxGroundLegs) {
    return absl::InvalidArgumentError(
        absl::StrCat(input.field, ".legs: ", op.legs_size(), " legs; at most ",
                     kMaxGroundLegs));
  }
  for (int i = 0; i < op.legs_size(); ++i) {
    const v1::GroundLeg& l = op.legs(i);
    const std::string f = absl::StrCat(input.field, ".legs[", i, "]");
    GroundLeg leg;
    const struct {
      const std::string& name;
      const char* leaf;
      int* joint;
      bool optional;
    } joints[] = {{l.hip(), ".hip", &leg.hip, false},
                  {l.knee(), ".knee", &leg.knee, false},
                  {l.ankle(), ".ankle", &leg.ankle, false},
                  {l.toe(), ".toe", &leg.toe, true}};
    for (const auto& j : joints) {
      auto index = JointIndex(input.skeleton, j.name, absl::StrCat(f, j.leaf),
                              j.optional);
      if (!index.ok()) return index.status();
      *j.joint = *index;
    }
    rig.legs.push_back(leg);
  }
  return absl::OkStatus();
}

absl::Status CompileGround(const OpCompileInput& input, GroundRig& rig) {
  const v1::GroundOp& op = input.op.ground();
  if (op.has_heightfield() && !op.samples().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(input.field,
                     ".heightfield: given with samples; give one or the "
                     "other (op updates' ground_samples replace either)"));
  }
  auto up = OptionalVec3(op.has_up(), op.up(), Eigen::Vector3f::UnitY(),
                         absl::StrCat(input.field, ".up"));
  if (!up.ok()) return up.status();
  if (!(up->squaredNorm() > 1e-12f)) {
    return absl::InvalidArgumentError(absl::StrCat(
        input.field, ".up: zero length; give model space's up direction"));
  }
  rig.up = up->normalized();
  if (!op.samples().empty()) {
    if (absl::Status s = SamplesFromProto(op.samples(), rig.legs.size(), rig.up,
                                          absl::StrCat(input.field, ".samples"),
                                          rig.samples);
        !s.ok()) {
      return s;
    }
    rig.has_samples = true;
  }
  if (op.has_heightfield()) {
    const v1::Heightfield& h = op.heightfield();
    rig.heights.assign(h.heights().begin(), h.heights().end());
    rig.field.columns =
        static_cast<int>(std::min<uint32_t>(h.columns(), 1u << 30));
    rig.field.rows = static_cast<int>(std::min<uint32_t>(h.rows(), 1u << 30));
    rig.field.spacing = h.spacing();
    rig.field.origin_x = h.origin_x();
    rig.field.origin_z = h.origin_z();
    rig.field.heights = rig.heights;
    rig.has_field = true;
  }
  return absl::OkStatus();
}

CompiledOp Compile(const OpCompileInput& input) {
  const v1::GroundOp& op = input.op.ground();
  GroundJob job;
  GroundRig rig;
  if (absl::Status s = CompileLegs(input, job, rig); !s.ok()) return s;
  if (absl::Status s = CompileGround(input, rig); !s.ok()) return s;
  job.up = rig.up;
  if (op.has_floor_height()) job.floor_height = op.floor_height();
  job.max_step_height = op.has_max_step_height()
                            ? op.max_step_height()
                            : 0.5f * ShortestLeg(input.skeleton, rig.legs);
  if (op.has_max_tilt()) job.max_tilt = op.max_tilt();
  if (op.has_weight()) job.weight = op.weight();
  if (op.has_pelvis_speed()) job.pelvis_speed = op.pelvis_speed();
  if (op.has_foot_speed()) job.foot_speed = op.foot_speed();

  // The legs, the heightfield and the parameters are checked now, on the
  // rest pose, so that a rig that cannot run is refused when compiled.
  LocalPose rest = RestPose(input.skeleton);
  GroundJob check = job;
  check.skeleton = &input.skeleton;
  check.input = rest;
  check.output = absl::MakeSpan(rest);
  check.legs = rig.legs;
  const Samples misses = {};
  if (rig.has_samples) {
    check.samples = absl::MakeConstSpan(rig.samples.data(), rig.legs.size());
  } else if (!rig.has_field) {
    check.samples = absl::MakeConstSpan(misses.data(), rig.legs.size());
  }
  if (rig.has_field) check.heightfield = &rig.field;
  const bool derived_step_is_zero =
      !op.has_max_step_height() && !(job.max_step_height > 0.0f);
  // Any positive stand-in, so that a broken leg is named before the default.
  if (derived_step_is_zero) check.max_step_height = 1.0f;
  if (absl::Status s = check.Validate(); !s.ok()) {
    return PrefixField(input.field, s);
  }
  if (derived_step_is_zero) {
    return absl::InvalidArgumentError(absl::StrCat(
        input.field,
        ".max_step_height: not given, and its default (half the shortest "
        "leg's rest length, hip to ankle) is 0 on this skeleton; give "
        "max_step_height"));
  }
  return std::make_unique<Ground>(
      job, std::move(rig),
      op.state_key().empty() ? kDefaultGroundKey : op.state_key());
}

}  // namespace

OpSpec GroundOpSpec() {
  return {.op_case = v1::Operation::kGround,
          .updatable = kUpdateGroundSamples | kUpdateWeight,
          .compile = Compile,
          .ranges = {}};
}

}  // namespace posewire::server
