#include "server/pipeline.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numbers>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/field_name.h"
#include "server/full_body_op.h"
#include "server/ik_ops.h"
#include "server/wire_convert.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/model/pose.h"
#include "solver_core/pose_ops/additive_job.h"
#include "solver_core/pose_ops/blending_job.h"
#include "solver_core/pose_ops/sampling_job.h"

namespace posewire::server {
namespace {

using google::protobuf::RepeatedField;
using google::protobuf::RepeatedPtrField;

constexpr char kDefaultCrossfadeKey[] = "crossfade";
constexpr char kDefaultSpringKey[] = "spring_bones";

// Everything an op handler needs, bundled so handlers keep short signatures.
struct OpContext {
  const PipelineInput& input;
  const Skeleton& skeleton;
  const std::string& field;  // e.g. "characters[2].ops[1].blend"
  LocalPose& pose;
  CharacterState& state;
  v1::OperationResult& result;
  // This frame's update of the op, or null.
  const v1::OpUpdate* update;
};

// The op's name is its oneof field's name, as GetInfo lists it. Looked up
// once: a descriptor lookup per op of every character was 1% of a
// batch-loaded server's samples.
const std::string& OperationName(v1::Operation::OpCase op) {
  static const std::vector<std::string>* const names = [] {
    const google::protobuf::OneofDescriptor* oneof =
        v1::Operation::descriptor()->FindOneofByName("op");
    int largest = 0;
    for (int i = 0; i < oneof->field_count(); ++i) {
      largest = std::max(largest, oneof->field(i)->number());
    }
    auto* by_number = new std::vector<std::string>(largest + 1);
    for (int i = 0; i < oneof->field_count(); ++i) {
      (*by_number)[oneof->field(i)->number()] = oneof->field(i)->name();
    }
    return by_number;
  }();
  return (*names)[op];
}

// Proto3 enums are open: a newer client may send a value this server does
// not know. Mapping it to the default would solve something else than was
// asked, so it is an error naming the field.
absl::Status UnknownEnum(absl::string_view field, int value) {
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": unknown value ", value));
}

// Samples `sample` into `out`. `base` + `leaf` name the sample in errors,
// joined only when there is one (see field_name.h).
// `time` is the sample's own or, for a sample_clip op, its update's.
absl::Status SampleInto(OpContext& ctx, const v1::ClipSample& sample,
                        float time, absl::string_view base,
                        absl::string_view leaf, absl::Span<Transform> out) {
  if (!v1::PlaybackMode_IsValid(sample.mode())) {
    return UnknownEnum(absl::StrCat(base, leaf, ".mode"), sample.mode());
  }
  if (!v1::RotationInterpolation_IsValid(sample.rotation_interpolation())) {
    return UnknownEnum(absl::StrCat(base, leaf, ".rotation_interpolation"),
                       sample.rotation_interpolation());
  }
  auto clip = ctx.input.clips->Find(sample.clip(), absl::string_view());
  if (!clip.ok()) {
    return ctx.input.clips
        ->Find(sample.clip(), absl::StrCat(base, leaf, ".clip"))
        .status();
  }
  SamplingJob job;
  job.skeleton = &ctx.skeleton;
  job.clip = &ctx.input.clips->clips()[*clip];
  job.clip_validated = true;
  job.time = time;
  job.mode = PlaybackModeFromProto(sample.mode());
  job.rotation_interpolation =
      RotationInterpolationFromProto(sample.rotation_interpolation());
  job.output = out;
  absl::Status status = job.Run();
  if (!status.ok()) return PrefixField(absl::StrCat(base, leaf), status);
  return status;
}

// Resolves a layer's pose source into `out`.
absl::Status ResolveSource(OpContext& ctx, const v1::PoseSource& source,
                           absl::string_view field, LocalPose& out) {
  switch (source.source_case()) {
    case v1::PoseSource::kCurrent:
      out = ctx.pose;
      return absl::OkStatus();
    case v1::PoseSource::kRest:
      out = RestPose(ctx.skeleton);
      return absl::OkStatus();
    case v1::PoseSource::kClip:
      out.resize(ctx.skeleton.num_joints());
      return SampleInto(ctx, source.clip(), source.clip().time(), field,
                        ".clip", absl::MakeSpan(out));
    case v1::PoseSource::kPose: {
      auto pose = PoseFromProto(source.pose(), ctx.skeleton,
                                absl::StrCat(field, ".pose"));
      if (!pose.ok()) return pose.status();
      out = *std::move(pose);
      return absl::OkStatus();
    }
    case v1::PoseSource::SOURCE_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": no source set (current, rest, clip or pose)"));
}

absl::Status CheckJointWeights(const RepeatedField<float>& weights,
                               const Skeleton& skeleton,
                               absl::string_view field) {
  if (!weights.empty() && weights.size() != skeleton.num_joints()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", weights.size(), " weights for ",
                     skeleton.num_joints(), " joints (or send none)"));
  }
  return absl::OkStatus();
}

absl::Status RunSampleClip(OpContext& ctx, const v1::SampleClipOp& op) {
  const float time = ctx.update != nullptr && ctx.update->has_time()
                         ? ctx.update->time()
                         : op.sample().time();
  return SampleInto(ctx, op.sample(), time, ctx.field, ".sample",
                    absl::MakeSpan(ctx.pose));
}

absl::Status RunBlend(OpContext& ctx, const v1::BlendOp& op) {
  const int n = op.layers_size();
  if (n == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(ctx.field, ".layers: at least one layer is required"));
  }
  std::vector<LocalPose> poses(n);
  std::vector<BlendLayer> layers(n);
  for (int i = 0; i < n; ++i) {
    const v1::BlendLayer& layer = op.layers(i);
    const std::string where = absl::StrCat(ctx.field, ".layers[", i, "]");
    if (absl::Status s = ResolveSource(
            ctx, layer.source(), absl::StrCat(where, ".source"), poses[i]);
        !s.ok()) {
      return s;
    }
    if (absl::Status s =
            CheckJointWeights(layer.joint_weights(), ctx.skeleton,
                              absl::StrCat(where, ".joint_weights"));
        !s.ok()) {
      return s;
    }
    layers[i].transform = poses[i];
    layers[i].weight = layer.weight();
    layers[i].joint_weights = layer.joint_weights();
  }
  auto root = JointIndex(ctx.skeleton, op.blend_root(),
                         absl::StrCat(ctx.field, ".blend_root"), true);
  if (!root.ok()) return root.status();
  BlendingJob job;
  job.skeleton = &ctx.skeleton;
  job.layers = layers;
  job.base_layer = op.has_base_layer() ? op.base_layer() : -1;
  job.blend_root = *root;
  if (op.has_threshold()) job.threshold = op.threshold();
  job.output = absl::MakeSpan(ctx.pose);
  return PrefixField(ctx.field, job.Run());
}

absl::Status RunAdditive(OpContext& ctx, const v1::AdditiveOp& op) {
  LocalPose base, additive;
  if (absl::Status s =
          ResolveSource(ctx, op.base(), absl::StrCat(ctx.field, ".base"), base);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ResolveSource(
          ctx, op.additive(), absl::StrCat(ctx.field, ".additive"), additive);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          CheckJointWeights(op.joint_weights(), ctx.skeleton,
                            absl::StrCat(ctx.field, ".joint_weights"));
      !s.ok()) {
    return s;
  }
  auto root = JointIndex(ctx.skeleton, op.blend_root(),
                         absl::StrCat(ctx.field, ".blend_root"), true);
  if (!root.ok()) return root.status();
  LocalPose delta(ctx.skeleton.num_joints());
  MakeAdditiveJob make{.skeleton = &ctx.skeleton,
                       .base = base,
                       .additive = additive,
                       .delta = absl::MakeSpan(delta)};
  if (absl::Status s = make.Run(); !s.ok()) return PrefixField(ctx.field, s);
  AdditiveJob apply;
  apply.skeleton = &ctx.skeleton;
  apply.input = ctx.pose;
  apply.delta = delta;
  apply.weight = op.weight();
  apply.joint_weights = op.joint_weights();
  apply.blend_root = *root;
  apply.output = absl::MakeSpan(ctx.pose);
  return PrefixField(ctx.field, apply.Run());
}

FadeCurve FadeCurveFromProto(v1::FadeCurve curve) {
  return curve == v1::FADE_CURVE_SMOOTHSTEP ? FadeCurve::kSmoothstep
                                            : FadeCurve::kLinear;
}

v1::FadeCurve FadeCurveToProto(FadeCurve curve) {
  return curve == FadeCurve::kSmoothstep ? v1::FADE_CURVE_SMOOTHSTEP
                                         : v1::FADE_CURVE_LINEAR;
}

absl::Status RunCrossfade(OpContext& ctx, const v1::CrossfadeOp& op) {
  const std::string key =
      op.state_key().empty() ? kDefaultCrossfadeKey : op.state_key();
  if (!v1::PlaybackMode_IsValid(op.mode())) {
    return UnknownEnum(absl::StrCat(ctx.field, ".mode"), op.mode());
  }
  CrossfadeState player = ctx.state.crossfades[key];
  const PlaybackMode mode = PlaybackModeFromProto(op.mode());
  for (int i = 0; i < op.commands_size(); ++i) {
    const v1::CrossfadeCommand& command = op.commands(i);
    const std::string where = absl::StrCat(ctx.field, ".commands[", i, "]");
    switch (command.command_case()) {
      case v1::CrossfadeCommand::kPlay: {
        auto clip =
            ctx.input.clips->Find(command.play(), absl::StrCat(where, ".play"));
        if (!clip.ok()) return clip.status();
        player = Play(*clip, 0.0f, mode);
        break;
      }
      case v1::CrossfadeCommand::kFadeTo: {
        auto clip = ctx.input.clips->Find(command.fade_to().clip(),
                                          absl::StrCat(where, ".fade_to.clip"));
        if (!clip.ok()) return clip.status();
        if (!v1::FadeCurve_IsValid(command.fade_to().curve())) {
          return UnknownEnum(absl::StrCat(where, ".fade_to.curve"),
                             command.fade_to().curve());
        }
        FadeRequest request;
        request.clip = *clip;
        request.duration = command.fade_to().fade_seconds();
        request.curve = FadeCurveFromProto(command.fade_to().curve());
        request.mode = mode;
        auto next = FadeTo(std::move(player), request);
        if (!next.ok()) {
          return PrefixField(absl::StrCat(where, ".fade_to"), next.status());
        }
        player = *std::move(next);
        break;
      }
      case v1::CrossfadeCommand::kCancel:
        if (command.cancel()) player = Cancel(std::move(player));
        break;
      case v1::CrossfadeCommand::COMMAND_NOT_SET:
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": no command set (play, fade_to or cancel)"));
    }
  }
  CrossfadeJob job;
  job.skeleton = &ctx.skeleton;
  job.clips = ctx.input.clips->clips();
  job.clips_validated = true;
  job.state = &player;
  job.next_state = &player;
  job.dt = ctx.input.dt;
  job.pose = absl::MakeSpan(ctx.pose);
  if (absl::Status s = job.Run(); !s.ok()) return PrefixField(ctx.field, s);
  ctx.state.crossfades[key] = std::move(player);
  return absl::OkStatus();
}

absl::Status RunValidate(OpContext& ctx, const v1::ValidateOp& op) {
  const float pos_tol = op.position_tolerance();
  const float rot_tol = op.rotation_tolerance_degrees();
  if (!std::isfinite(pos_tol) || pos_tol < 0.0f) {
    return absl::InvalidArgumentError(
        absl::StrCat(ctx.field, ".position_tolerance: ", pos_tol,
                     " must be finite and >= 0"));
  }
  if (!std::isfinite(rot_tol) || rot_tol < 0.0f) {
    return absl::InvalidArgumentError(
        absl::StrCat(ctx.field, ".rotation_tolerance_degrees: ", rot_tol,
                     " must be finite and >= 0"));
  }
  if (op.claimed().transforms().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(ctx.field, ".claimed: the claimed pose is required"));
  }
  auto claimed = PoseFromProto(op.claimed(), ctx.skeleton,
                               absl::StrCat(ctx.field, ".claimed"));
  if (!claimed.ok()) return claimed.status();
  const int n = ctx.skeleton.num_joints();
  ModelPose solved_model(n), claimed_model(n);
  LocalToModelJob{.skeleton = &ctx.skeleton,
                  .local = ctx.pose,
                  .model = absl::MakeSpan(solved_model)}
      .RunUnchecked();
  LocalToModelJob{.skeleton = &ctx.skeleton,
                  .local = *claimed,
                  .model = absl::MakeSpan(claimed_model)}
      .RunUnchecked();
  v1::ValidationResult* v = ctx.result.mutable_validation();
  v->mutable_position_error()->Resize(n, 0.0f);
  v->mutable_rotation_error_degrees()->Resize(n, 0.0f);
  int worst = 0;
  float worst_position = -1.0f, worst_rotation = 0.0f;
  bool valid = true;
  for (int j = 0; j < n; ++j) {
    const float position =
        (solved_model[j].translation - claimed_model[j].translation).norm();
    // Angle of the relative rotation, 2 atan2(|v|, |w|): exact 0 for equal
    // rotations and well-conditioned near 0, where 2 acos |<q1, q2>| loses
    // most of its digits (acos of a dot product one ulp below 1 is already
    // 0.02 degrees).
    const Eigen::Quaternionf relative =
        solved_model[j].rotation.conjugate() * claimed_model[j].rotation;
    const float rotation =
        2.0f * std::atan2(relative.vec().norm(), std::fabs(relative.w())) *
        (180.0f / std::numbers::pi_v<float>);
    v->set_position_error(j, position);
    v->set_rotation_error_degrees(j, rotation);
    // NaN-safe: a non-finite error (impossible after validation) fails.
    if (!(position <= pos_tol) || !(rotation <= rot_tol)) valid = false;
    if (position > worst_position) {
      worst_position = position;
      worst = j;
    }
    worst_rotation = std::max(worst_rotation, rotation);
  }
  v->set_valid(valid);
  v->set_worst_joint(ctx.skeleton.joint_name(worst));
  v->set_worst_position_error(worst_position);
  v->set_worst_rotation_error_degrees(worst_rotation);
  return absl::OkStatus();
}

// Index of the first joint of `pose` with a NaN or infinite component, or -1.
// Runs after every op of every character, so the common case goes through
// the branch-free SIMD screen first: a pose that passes it (finite, unit
// rotations) has no such joint. Only a pose it rejects is searched joint by
// joint, and one rejected for a rotation's norm alone is still finite.
int FirstNonFiniteJoint(absl::Span<const Transform> pose) {
  if (PoseLooksValid(pose)) return -1;
  for (size_t j = 0; j < pose.size(); ++j) {
    if (!IsFinite(pose[j])) return static_cast<int>(j);
  }
  return -1;
}

}  // namespace

const std::vector<std::string>& SupportedOperations() {
  static const auto* names =
      new std::vector<std::string>{"sample_clip",    "blend",
                                   "additive",       "crossfade",
                                   "two_bone_ik",    "aim_ik",
                                   "ccd_ik",         "fabrik_ik",
                                   "fabrik_tree_ik", "full_body_biped_ik",
                                   "full_body_ccd",  "spring_bones",
                                   "validate"};
  return *names;
}

absl::Status StateFromProto(
    const google::protobuf::Map<std::string, v1::OperationState>& proto,
    ClipLibrary& clips, CharacterState& state, absl::string_view field) {
  for (const auto& [key, value] : proto) {
    const std::string where = absl::StrCat(field, "[\"", key, "\"]");
    switch (value.state_case()) {
      case v1::OperationState::kCrossfade: {
        const v1::CrossfadeState& wire = value.crossfade();
        CrossfadeState player;
        if (!wire.clip().empty()) {
          auto clip = clips.Find(wire.clip(), absl::StrCat(where, ".clip"));
          if (!clip.ok()) return clip.status();
          player.current.clip = *clip;
          player.current.time = wire.time();
        }
        if (wire.fades_size() > kMaxQueuedFades) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, ".fades: ", wire.fades_size(),
                           " fades exceed the limit of ", kMaxQueuedFades));
        }
        for (int i = 0; i < wire.fades_size(); ++i) {
          const v1::PendingFade& f = wire.fades(i);
          auto clip =
              clips.Find(f.clip(), absl::StrCat(where, ".fades[", i, "].clip"));
          if (!clip.ok()) return clip.status();
          if (!v1::FadeCurve_IsValid(f.curve())) {
            return UnknownEnum(absl::StrCat(where, ".fades[", i, "].curve"),
                               f.curve());
          }
          Fade fade;
          fade.target.clip = *clip;
          fade.target.time = f.time();
          fade.duration = f.duration();
          fade.elapsed = f.elapsed();
          fade.curve = FadeCurveFromProto(f.curve());
          player.fades.push_back(fade);
        }
        // Times, durations and elapsed values are range-checked by
        // CrossfadeJob::Validate when the op runs.
        state.crossfades[key] = std::move(player);
        break;
      }
      case v1::OperationState::kDynamics: {
        auto parsed = ParseDynamicsState(value.dynamics());
        if (!parsed.ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, ".dynamics: ", parsed.status().message()));
        }
        // The rig is rebuilt from the op on first use; the job checks that
        // the state's rig fingerprint matches it.
        state.springs[key].state = *std::move(parsed);
        break;
      }
      case v1::OperationState::STATE_NOT_SET:
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": empty state entry"));
    }
  }
  return absl::OkStatus();
}

void StateToProto(
    const CharacterState& state, const ClipLibrary& clips,
    google::protobuf::Map<std::string, v1::OperationState>* proto) {
  for (const auto& [key, slot] : state.springs) {
    (*proto)[key].set_dynamics(SerializeDynamicsState(slot.state));
  }
  for (const auto& [key, player] : state.crossfades) {
    v1::CrossfadeState* wire = (*proto)[key].mutable_crossfade();
    if (player.current.clip >= 0) {
      wire->set_clip(clips.name(player.current.clip));
      wire->set_time(player.current.time);
    }
    for (const Fade& fade : player.fades) {
      v1::PendingFade* f = wire->add_fades();
      f->set_clip(clips.name(fade.target.clip));
      f->set_time(fade.target.time);
      f->set_duration(fade.duration);
      f->set_elapsed(fade.elapsed);
      f->set_curve(FadeCurveToProto(fade.curve));
    }
  }
}

absl::Status RunPipeline(const PipelineInput& input, LocalPose& pose,
                         CharacterState& state,
                         RepeatedPtrField<v1::OperationResult>* results) {
  // Each op's field name ("characters[2].ops[1].blend"), which every error
  // starts with, built in a per-thread buffer: two string allocations per
  // op before.
  thread_local std::string field;
  auto op_started = input.timings != nullptr
                        ? std::chrono::steady_clock::now()
                        : std::chrono::steady_clock::time_point();
  for (int i = 0; i < input.ops->size(); ++i) {
    const v1::Operation& op = (*input.ops)[i];
    v1::OperationResult* result = results->Add();
    field.assign(input.field.data(), input.field.size());
    absl::StrAppend(&field, ".ops[", i, "]");
    if (op.op_case() == v1::Operation::OP_NOT_SET) {
      // A newer client may send an operation this server does not know:
      // protobuf keeps it as an unknown field.
      if (!op.GetReflection()->GetUnknownFields(op).empty()) {
        return absl::UnimplementedError(
            absl::StrCat(field,
                         ": an operation this server does not implement (see "
                         "GetInfo operations)"));
      }
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": no operation set"));
    }
    const std::string& name = OperationName(op.op_case());
    result->set_op(name);
    absl::StrAppend(&field, ".", name);
    const v1::OpUpdate* update =
        input.updates.empty() ? nullptr : input.updates[i];
    OpContext ctx{input, *input.skeleton, field, pose, state, *result, update};
    IkOpContext ik{
        *input.skeleton, ctx.field, input.limits.max_solver_iterations, pose,
        *result,         update};
    absl::Status status;
    switch (op.op_case()) {
      case v1::Operation::kSampleClip:
        status = RunSampleClip(ctx, op.sample_clip());
        break;
      case v1::Operation::kBlend:
        status = RunBlend(ctx, op.blend());
        break;
      case v1::Operation::kAdditive:
        status = RunAdditive(ctx, op.additive());
        break;
      case v1::Operation::kCrossfade:
        status = RunCrossfade(ctx, op.crossfade());
        break;
      case v1::Operation::kTwoBoneIk:
        status = RunTwoBoneIk(ik, op.two_bone_ik());
        break;
      case v1::Operation::kAimIk:
        status = RunAimIk(ik, op.aim_ik());
        break;
      case v1::Operation::kCcdIk:
        status = RunCcdIk(ik, op.ccd_ik());
        break;
      case v1::Operation::kFabrikIk:
        status = RunFabrikIk(ik, op.fabrik_ik());
        break;
      case v1::Operation::kFabrikTreeIk:
        status = RunFabrikTreeIk(ik, op.fabrik_tree_ik());
        break;
      case v1::Operation::kFullBodyBipedIk:
        status = RunFullBodyBipedIk(ik, op.full_body_biped_ik());
        break;
      case v1::Operation::kFullBodyCcd:
        status = RunFullBodyCcd(ik, op.full_body_ccd());
        break;
      case v1::Operation::kSpringBones: {
        const std::string& key = op.spring_bones().state_key().empty()
                                     ? kDefaultSpringKey
                                     : op.spring_bones().state_key();
        SpringOpContext spring{
            *input.skeleton,    ctx.field,  input.limits.max_solver_iterations,
            input.dt,           input.root, pose,
            state.springs[key], *result};
        status = RunSpringBones(spring, op.spring_bones());
        break;
      }
      case v1::Operation::kValidate:
        status = RunValidate(ctx, op.validate());
        break;
      case v1::Operation::OP_NOT_SET:
        break;  // handled above
    }
    if (!status.ok()) return status;
    // Inputs are validated finite, so a non-finite result means an op
    // overflowed float on extreme (finite) inputs or failed numerically:
    // refuse it here, naming the op, rather than answer OK with NaN.
    if (const int bad = FirstNonFiniteJoint(pose); bad >= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ": the result is not finite at joint '",
          input.skeleton->joint_name(bad),
          "' (float overflow or a degenerate solve); check this op's targets "
          "and the pose's translations and scales for extreme values"));
    }
    if (input.timings != nullptr) {
      // One clock read per op: each op's time runs from the previous op's
      // end, so it includes its own bookkeeping above (field name, result).
      const auto finished = std::chrono::steady_clock::now();
      input.timings->Add(
          op.op_case(),
          std::chrono::duration<double>(finished - op_started).count());
      op_started = finished;
    }
  }
  return absl::OkStatus();
}

namespace {

// Checks one update against the op it names (`kind`): only fields that op
// has, at least one of them, finite values. `where(leaf)` names the update's
// field in errors.
template <typename Where>
absl::Status CheckOpUpdate(const v1::OpUpdate& update,
                           v1::Operation::OpCase kind, Where where) {
  const bool has_target =
      kind == v1::Operation::kTwoBoneIk || kind == v1::Operation::kAimIk ||
      kind == v1::Operation::kCcdIk || kind == v1::Operation::kFabrikIk;
  struct Input {
    bool set;
    bool op_has_it;
    const char* leaf;
    const char* ops_with_it;
  };
  for (const Input& input :
       {Input{update.has_target(), has_target, ".target",
              "two_bone_ik, aim_ik, ccd_ik or fabrik_ik"},
        Input{update.has_bend_goal(), kind == v1::Operation::kTwoBoneIk,
              ".bend_goal", "two_bone_ik"},
        Input{update.has_time(), kind == v1::Operation::kSampleClip, ".time",
              "sample_clip"}}) {
    if (input.set && !input.op_has_it) {
      return absl::InvalidArgumentError(absl::StrCat(
          where(input.leaf), ": op ", update.op(), " is ",
          kind == v1::Operation::OP_NOT_SET
              ? std::string("not set")
              : absl::StrCat("a ", OperationName(kind)),
          "; only a ", input.ops_with_it, " op takes this update"));
    }
  }
  if (!update.has_target() && !update.has_bend_goal() && !update.has_time()) {
    return absl::InvalidArgumentError(absl::StrCat(
        where(""), ": updates nothing (set target, bend_goal or time)"));
  }
  for (auto [set, value, leaf] :
       {std::tuple{update.has_target(), &update.target(), ".target"},
        std::tuple{update.has_bend_goal(), &update.bend_goal(),
                   ".bend_goal"}}) {
    // The name is built only for the error (see field_name.h).
    if (set && !Vec3FromProto(*value, {}).ok()) {
      return Vec3FromProto(*value, where(leaf)).status();
    }
  }
  if (update.has_time() && !std::isfinite(update.time())) {
    return absl::InvalidArgumentError(absl::StrCat(
        where(".time"), ": ", update.time(), " is not a finite time"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status IndexOpUpdates(const RepeatedPtrField<v1::Operation>& ops,
                            const RepeatedPtrField<v1::OpUpdate>& updates,
                            absl::string_view field, OpUpdatesByOp& by_op) {
  by_op.clear();
  if (updates.empty()) return absl::OkStatus();
  by_op.assign(ops.size(), nullptr);
  for (int k = 0; k < updates.size(); ++k) {
    const v1::OpUpdate& update = updates[k];
    auto where = [&](absl::string_view leaf) {
      return absl::StrCat(field, ".op_updates[", k, "]", leaf);
    };
    if (update.op() >= static_cast<uint32_t>(ops.size())) {
      return absl::InvalidArgumentError(absl::StrCat(
          where(".op"), ": ", update.op(),
          " is not an op of this frame's pipeline, which has ", ops.size(),
          ops.size() == 1 ? " op" : " ops", " (indices from 0)"));
    }
    if (by_op[update.op()] != nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(where(".op"), ": op ", update.op(),
                       " already has an update in this frame (one per op)"));
    }
    if (absl::Status s =
            CheckOpUpdate(update, ops[update.op()].op_case(), where);
        !s.ok()) {
      return s;
    }
    by_op[update.op()] = &update;
  }
  return absl::OkStatus();
}

absl::Status ModelPoseToProto(const Skeleton& skeleton, const LocalPose& pose,
                              absl::string_view field, ModelPose& scratch,
                              v1::Pose* proto) {
  ModelPose& model = scratch;
  model.resize(skeleton.num_joints());
  LocalToModelJob{
      .skeleton = &skeleton, .local = pose, .model = absl::MakeSpan(model)}
      .RunUnchecked();
  if (const int bad = FirstNonFiniteJoint(model); bad >= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".want_model_pose: the model-space transform of joint '",
        skeleton.joint_name(bad),
        "' overflows float; the skeleton's or pose's translations and scales "
        "are too large once composed down the chain"));
  }
  PoseToProto(model, proto);
  return absl::OkStatus();
}

}  // namespace posewire::server
