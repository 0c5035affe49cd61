// plausibility: a referee's check of the current pose and the character's
// frames before it (solver_core/referee/plausibility.h). It reports; it
// never changes the pose.
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/ops/ik_wire.h"
#include "server/ops/op_table.h"
#include "server/wire/wire_convert.h"
#include "solver_core/model/pose.h"
#include "solver_core/referee/plausibility.h"

namespace posewire::server {
namespace {

// Where the frames before live when the op names no state_key.
constexpr absl::string_view kDefaultPlausibilityKey = "plausibility";

// Parts of the names of joints that motion capture tracks with one or two
// markers (hands, fingers, toes, eyes): their rotations jump by up to 180
// degrees in a frame in honest capture, so by default they are left out of
// the range and motion checks.
constexpr std::array<absl::string_view, 11> kExtremityNameParts = {
    "thumb", "finger", "index", "middle", "ring", "pinky",
    "palm",  "hand",   "wrist", "toe",    "eye"};

bool IsExtremity(absl::string_view name) {
  std::string lower(name);
  for (char& c : lower) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return std::any_of(
      kExtremityNameParts.begin(), kExtremityNameParts.end(),
      [&](absl::string_view part) { return absl::StrContains(lower, part); });
}

// Frames before from a client (a Solve's state) must be of this
// skeleton; the job would name them only as its `previous` inputs.
absl::Status HistoryFits(const PlausibilityHistory& history,
                         const Skeleton& skeleton, absl::string_view character,
                         const std::string& key) {
  for (int i = 0; i < history.frames; ++i) {
    // Joined only for an error: a session checks its own history too.
    auto field = [&] {
      return absl::StrCat(character, ".state[\"", key,
                          "\"].plausibility.frames[", i, "].pose");
    };
    if (history.poses[i].size() != static_cast<size_t>(skeleton.num_joints())) {
      return absl::InvalidArgumentError(absl::StrCat(
          field(), ": ", history.poses[i].size(), " joints for a skeleton of ",
          skeleton.num_joints(),
          "; send back the state this character's last answer returned"));
    }
    if (!PoseLooksValid(history.poses[i])) {
      return CheckPose(skeleton, history.poses[i], field());
    }
  }
  return absl::OkStatus();
}

// Joints whose offset game rigs animate on purpose: joint 0's chain down
// to the first joint with more than one child (the pelvis under a still
// root, as in Fox.glb), and joint 0's children (IK targets and props
// parented to the root, and the body, as in RobotExpressive.glb).
std::vector<bool> BonesNearRoot(const Skeleton& skeleton) {
  const int n = skeleton.num_joints();
  std::vector<bool> near(n, false);
  std::vector<int> children(n, 0);
  for (int j = 1; j < n; ++j) {
    if (skeleton.parent(j) != kNoParent) ++children[skeleton.parent(j)];
  }
  // On joint 0's chain: joint 0, and each only child of a joint on it.
  std::vector<bool> chain(n, false);
  for (int j = 0; j < n; ++j) {
    const int parent = skeleton.parent(j);
    chain[j] = j == 0 ||
               (parent != kNoParent && chain[parent] && children[parent] == 1);
    near[j] = chain[j] || parent == 0;
  }
  return near;
}

v1::PlausibilityCheck CheckToProto(PlausibilityCheck check) {
  switch (check) {
    case PlausibilityCheck::kRangeOfMotion:
      return v1::PLAUSIBILITY_CHECK_RANGE_OF_MOTION;
    case PlausibilityCheck::kAngularVelocity:
      return v1::PLAUSIBILITY_CHECK_ANGULAR_VELOCITY;
    case PlausibilityCheck::kAngularAcceleration:
      return v1::PLAUSIBILITY_CHECK_ANGULAR_ACCELERATION;
    case PlausibilityCheck::kBoneLength:
      return v1::PLAUSIBILITY_CHECK_BONE_LENGTH;
    case PlausibilityCheck::kScale:
      return v1::PLAUSIBILITY_CHECK_SCALE;
    case PlausibilityCheck::kRootSpeed:
      return v1::PLAUSIBILITY_CHECK_ROOT_SPEED;
    case PlausibilityCheck::kRootAcceleration:
      return v1::PLAUSIBILITY_CHECK_ROOT_ACCELERATION;
    case PlausibilityCheck::kRootTeleport:
      return v1::PLAUSIBILITY_CHECK_ROOT_TELEPORT;
  }
  return v1::PLAUSIBILITY_CHECK_RANGE_OF_MOTION;
}

// What a prepared check owns; its job's spans point here.
struct PlausibilityRig {
  std::vector<JointLimit> limits;
  std::vector<EulerRangeScreen> range_screens;
  std::vector<EulerRangeScreenGroup> range_screen_groups;
  std::vector<uint8_t> joint_checks;
};

class Plausibility final : public PreparedOp {
 public:
  Plausibility(PlausibilityJob job, PlausibilityRig rig, std::string key)
      : job_(job), rig_(std::move(rig)), key_(std::move(key)) {}

  absl::Status Run(OpFrame& frame) const override {
    // One result buffer per thread: its capacity survives, so a steady
    // stream of frames allocates nothing here.
    thread_local PlausibilityResult result;
    PlausibilityJob job = job_;
    job.skeleton = &frame.skeleton;
    job.input = frame.pose;
    job.input_validated = frame.pose_validated;
    job.placement = frame.root;
    job.limits = rig_.limits;
    job.limits_validated = true;  // when compiled
    job.range_screens = rig_.range_screens;
    job.range_screen_groups = rig_.range_screen_groups;
    job.joint_checks = rig_.joint_checks;
    job.result = &result;
    if (auto found = frame.state.plausibility.find(key_);
        found != frame.state.plausibility.end()) {
      if (absl::Status fits = HistoryFits(found->second.state, frame.skeleton,
                                          frame.field.character, key_);
          !fits.ok()) {
        return fits;
      }
    }
    job.previous_validated = true;  // HistoryFits, above
    const absl::Status s = StepState(
        frame.state.plausibility, key_, frame.undo,
        [&](const PlausibilityHistory& history, PlausibilityHistory& next) {
          UseHistory(history, frame.dt, job);
          if (absl::Status run = job.Run(); !run.ok()) return run;
          AdvanceHistory(history, frame.pose, frame.root, frame.dt, next);
          return absl::OkStatus();
        });
    if (!s.ok()) return frame.field.Prefix(s);
    v1::PlausibilityReport* report = frame.result.mutable_plausibility();
    report->set_plausible(result.plausible);
    for (const PlausibilityViolation& v : result.violations) {
      v1::PlausibilityViolation* wire = report->add_violations();
      wire->set_check(CheckToProto(v.check));
      wire->set_joint(frame.skeleton.joint_name(v.joint));
      wire->set_axis(v.axis);
      wire->set_measured(v.measured);
      wire->set_bound(v.bound);
    }
    return absl::OkStatus();
  }

 private:
  PlausibilityJob job_;
  PlausibilityRig rig_;
  std::string key_;
};

// Each set field of `wire` over the core default.
PlausibilityThresholds ThresholdsFromProto(
    const v1::PlausibilityThresholds& wire) {
  PlausibilityThresholds t;
  if (wire.has_range_tolerance()) t.range_tolerance = wire.range_tolerance();
  if (wire.has_max_angular_velocity()) {
    t.max_angular_velocity = wire.max_angular_velocity();
  }
  if (wire.has_max_angular_acceleration()) {
    t.max_angular_acceleration = wire.max_angular_acceleration();
  }
  if (wire.has_rotation_jitter()) t.rotation_jitter = wire.rotation_jitter();
  if (wire.has_max_bone_length_change()) {
    t.max_bone_length_change = wire.max_bone_length_change();
  }
  if (wire.has_max_scale_change()) t.max_scale_change = wire.max_scale_change();
  if (wire.has_max_root_speed()) t.max_root_speed = wire.max_root_speed();
  if (wire.has_max_root_acceleration()) {
    t.max_root_acceleration = wire.max_root_acceleration();
  }
  if (wire.has_position_jitter()) t.position_jitter = wire.position_jitter();
  if (wire.has_teleport_distance()) {
    t.teleport_distance = wire.teleport_distance();
  }
  return t;
}

// The op's limits: its own, or the session's limit set it names by
// limits_id, which must be registered for the rig's skeleton.
absl::StatusOr<const google::protobuf::RepeatedPtrField<v1::JointLimitSpec>*>
LimitSpecs(const OpCompileInput& input) {
  const v1::PlausibilityOp& op = input.op.plausibility();
  if (op.limits_id().empty()) return &op.limits();
  const std::string field = absl::StrCat(input.field, ".limits_id");
  if (!op.limits().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field,
                     ": set limits_id or limits, not both (limits_id names a "
                     "registered limit set; limits are sent inline)"));
  }
  const RegistryLookup* registry = input.registry;
  if (registry == nullptr || !registry->limits_by_id) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": '", op.limits_id(),
        "' names a limit set registered in a Session; outside a Session "
        "send the limits themselves in limits"));
  }
  const RegisteredLimits* set = registry->limits_by_id(op.limits_id());
  if (set == nullptr) {
    return absl::NotFoundError(
        absl::StrCat(field, ": no limit set '", op.limits_id(),
                     "' in this session: register_limits first"));
  }
  if (set->skeleton.get() != &input.skeleton) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": limit set '", op.limits_id(), "' is for skeleton '",
        set->skeleton_id, "', not this rig's skeleton"));
  }
  return &set->limits;
}

CompiledOp Compile(const OpCompileInput& input) {
  const v1::PlausibilityOp& op = input.op.plausibility();
  const Skeleton& skeleton = input.skeleton;
  const int n = skeleton.num_joints();
  PlausibilityRig rig;
  auto specs = LimitSpecs(input);
  if (!specs.ok()) return specs.status();
  auto limits =
      LimitsFromProto(skeleton, **specs, absl::StrCat(input.field, ".limits"));
  if (!limits.ok()) return limits.status();
  rig.limits = *std::move(limits);
  for (const JointLimit& limit : rig.limits) {
    rig.range_screens.push_back(MakeEulerRangeScreen(limit));
  }
  rig.range_screen_groups =
      MakeEulerRangeScreenGroups(rig.limits, rig.range_screens);

  rig.joint_checks.assign(n, kCheckAll);
  if (!op.has_skip_extremities() || op.skip_extremities()) {
    for (int j = 0; j < n; ++j) {
      if (IsExtremity(skeleton.joint_name(j))) {
        rig.joint_checks[j] &=
            static_cast<uint8_t>(~(kCheckRange | kCheckMotion));
      }
    }
  }
  if (!op.has_skip_bones_near_root() || op.skip_bones_near_root()) {
    const std::vector<bool> near = BonesNearRoot(skeleton);
    for (int j = 0; j < n; ++j) {
      if (near[j]) rig.joint_checks[j] &= static_cast<uint8_t>(~kCheckBone);
    }
  }
  std::vector<bool> skipped(n, false);
  for (int i = 0; i < op.skip_size(); ++i) {
    const v1::PlausibilitySkip& skip = op.skip(i);
    const std::string where = absl::StrCat(input.field, ".skip[", i, "]");
    auto joint =
        JointIndex(skeleton, skip.joint(), absl::StrCat(where, ".joint"));
    if (!joint.ok()) return joint.status();
    if (skipped[*joint]) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ".joint: '", skip.joint(), "' is already in skip"));
    }
    skipped[*joint] = true;
    uint8_t off = 0;
    if (skip.range()) off |= kCheckRange;
    if (skip.motion()) off |= kCheckMotion;
    if (skip.bone()) off |= kCheckBone;
    rig.joint_checks[*joint] &= static_cast<uint8_t>(~off);
  }

  PlausibilityJob job;
  job.thresholds = ThresholdsFromProto(op.thresholds());
  job.rig_size = op.has_rig_size() ? op.rig_size() : RigSize(skeleton);

  // Thresholds, rig size and limits are checked now, on the rest pose, so
  // that a rig that cannot run is refused when compiled.
  const LocalPose rest = RestPose(skeleton);
  PlausibilityResult check_result;
  PlausibilityJob check = job;
  check.skeleton = &skeleton;
  check.input = rest;
  check.limits = rig.limits;
  check.joint_checks = rig.joint_checks;
  check.result = &check_result;
  if (absl::Status s = check.Validate(); !s.ok()) {
    return PrefixField(input.field, s);
  }
  return std::make_unique<Plausibility>(
      job, std::move(rig),
      std::string(op.state_key().empty() ? kDefaultPlausibilityKey
                                         : op.state_key()));
}

}  // namespace

OpSpec PlausibilityOpSpec() {
  return {.op_case = v1::Operation::kPlausibility,
          .updatable = 0,
          .compile = Compile,
          .ranges = {}};
}

}  // namespace posewire::server
