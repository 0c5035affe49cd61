#include "server/wire/wire_convert.h"

#include <openssl/sha.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "solver_core/model/pose.h"

namespace posewire::server {
namespace {

// A Transform is three 16-byte rows: translation and padding, rotation
// (x, y, z, w: the wire's order), scale and padding. The wire's 10 floats
// per joint are the rows without their padding, so a pose is copied row by
// row, not float by float (the answer's pose is written once per character
// of every frame).
static_assert(sizeof(Transform) == 48 &&
              offsetof(Transform, translation) == 0 &&
              offsetof(Transform, rotation) == 16 &&
              offsetof(Transform, scale) == 32 &&
              sizeof(Eigen::Quaternionf) == 16 &&
              sizeof(Eigen::Vector3f) == 12);

void UnpackTransformRows(const float* f, Transform& t) {
  std::memcpy(t.translation.data(), f, 12);
  std::memcpy(t.rotation.coeffs().data(), f + 3, 16);
  std::memcpy(t.scale.data(), f + 7, 12);
}

// Writes 11 floats: the joint's 10 and one of padding after them.
void PackTransformRows(const Transform& t, float* f) {
  const char* rows = reinterpret_cast<const char*>(&t);
  std::memcpy(f, rows, 16);
  std::memcpy(f + 3, rows + 16, 16);
  std::memcpy(f + 7, rows + 32, 16);
}

void PackTransform(const Transform& t, float* f) {
  f[0] = t.translation.x();
  f[1] = t.translation.y();
  f[2] = t.translation.z();
  f[3] = t.rotation.x();
  f[4] = t.rotation.y();
  f[5] = t.rotation.z();
  f[6] = t.rotation.w();
  f[7] = t.scale.x();
  f[8] = t.scale.y();
  f[9] = t.scale.z();
}

}  // namespace

absl::Status UnpackPoseInto(
    const google::protobuf::RepeatedField<float>& floats, int joints,
    absl::string_view field, std::vector<Transform>& out) {
  if (floats.size() != joints * kFloatsPerJoint) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", floats.size(), " floats for ", joints,
                     " joints (expected ", joints * kFloatsPerJoint,
                     ": 10 per joint, tx ty tz qx qy qz qw sx sy sz)"));
  }
  out.resize(joints);
  const float* f = floats.data();
  for (Transform& t : out) {
    UnpackTransformRows(f, t);
    f += kFloatsPerJoint;
  }
  return absl::OkStatus();
}

namespace {

absl::StatusOr<std::vector<Transform>> UnpackPose(
    const google::protobuf::RepeatedField<float>& floats, int joints,
    absl::string_view field) {
  std::vector<Transform> pose;
  if (absl::Status s = UnpackPoseInto(floats, joints, field, pose); !s.ok()) {
    return s;
  }
  return pose;
}

// Appends little-endian bytes of a trivially copyable value (x86 and ARM
// servers are little-endian; a static_assert would be the place to add a
// byte swap for anything else).
template <typename T>
void AppendBytes(std::string& out, const T& value) {
  static_assert(std::endian::native == std::endian::little);
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

template <typename T>
absl::Status UnpackTrack(const v1::Track& proto, int floats_per_value,
                         Track<T>& track, absl::string_view field) {
  switch (proto.interpolation()) {
    case v1::INTERPOLATION_LINEAR:
      track.interpolation = Interpolation::kLinear;
      break;
    case v1::INTERPOLATION_STEP:
      track.interpolation = Interpolation::kStep;
      break;
    case v1::INTERPOLATION_CUBIC_SPLINE:
      track.interpolation = Interpolation::kCubicSpline;
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".interpolation: unknown value ", proto.interpolation()));
  }
  if (proto.values_size() % floats_per_value != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".values: ", proto.values_size(),
                     " floats is not a multiple of ", floats_per_value));
  }
  track.times.assign(proto.times().begin(), proto.times().end());
  const int values = proto.values_size() / floats_per_value;
  track.values.resize(values);
  const float* f = proto.values().data();
  for (int v = 0; v < values; ++v, f += floats_per_value) {
    if constexpr (std::is_same_v<T, Eigen::Quaternionf>) {
      track.values[v] = Eigen::Quaternionf(f[3], f[0], f[1], f[2]);
    } else {
      track.values[v] = Eigen::Vector3f(f[0], f[1], f[2]);
    }
  }
  return absl::OkStatus();
}

v1::Interpolation InterpolationToProto(Interpolation interpolation) {
  switch (interpolation) {
    case Interpolation::kStep:
      return v1::INTERPOLATION_STEP;
    case Interpolation::kCubicSpline:
      return v1::INTERPOLATION_CUBIC_SPLINE;
    case Interpolation::kLinear:
      break;
  }
  return v1::INTERPOLATION_LINEAR;
}

template <typename T>
void PackTrack(const Track<T>& track, v1::Track* proto) {
  proto->set_interpolation(InterpolationToProto(track.interpolation));
  proto->mutable_times()->Add(track.times.begin(), track.times.end());
  for (const T& value : track.values) {
    if constexpr (std::is_same_v<T, Eigen::Quaternionf>) {
      proto->mutable_values()->Add(value.coeffs().data(),
                                   value.coeffs().data() + 4);  // x y z w
    } else {
      proto->mutable_values()->Add(value.data(), value.data() + 3);
    }
  }
}

}  // namespace

void ClipToProto(const Clip& clip, v1::Clip* proto) {
  proto->Clear();
  proto->set_name(clip.name);
  proto->set_duration(clip.duration);
  for (int j = 0; j < static_cast<int>(clip.tracks.size()); ++j) {
    const JointTracks& tracks = clip.tracks[j];
    if (tracks.translation.empty() && tracks.rotation.empty() &&
        tracks.scale.empty()) {
      continue;
    }
    v1::JointTracks* out = proto->add_joints();
    out->set_joint(j);
    if (!tracks.translation.empty()) {
      PackTrack(tracks.translation, out->mutable_translation());
    }
    if (!tracks.rotation.empty()) {
      PackTrack(tracks.rotation, out->mutable_rotation());
    }
    if (!tracks.scale.empty()) PackTrack(tracks.scale, out->mutable_scale());
  }
}

absl::StatusOr<Skeleton> SkeletonFromProto(const v1::Skeleton& proto,
                                           int max_joints,
                                           absl::string_view field) {
  const int n = proto.parents_size();
  if (n > max_joints || proto.joint_names_size() > max_joints) {
    return absl::ResourceExhaustedError(
        absl::StrCat(field, ": ", std::max(n, proto.joint_names_size()),
                     " joints exceed this server's limit of ", max_joints,
                     " (GetInfo limits.max_joints_per_skeleton)"));
  }
  SkeletonDesc desc;
  desc.joint_names.assign(proto.joint_names().begin(),
                          proto.joint_names().end());
  desc.parents.assign(proto.parents().begin(), proto.parents().end());
  auto rest =
      UnpackPose(proto.rest_pose(), n, absl::StrCat(field, ".rest_pose"));
  if (!rest.ok()) return rest.status();
  desc.rest_pose = *std::move(rest);
  auto skeleton = Skeleton::Create(std::move(desc));
  if (!skeleton.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", skeleton.status().message()));
  }
  return skeleton;
}

void SkeletonToProto(const Skeleton& skeleton, v1::Skeleton* proto) {
  proto->Clear();
  for (const std::string& name : skeleton.joint_names()) {
    proto->add_joint_names(name);
  }
  proto->mutable_parents()->Add(skeleton.parents().begin(),
                                skeleton.parents().end());
  v1::Pose rest;
  PoseToProto(skeleton.rest_pose(), &rest);
  *proto->mutable_rest_pose() = std::move(*rest.mutable_transforms());
}

std::string SkeletonHash(const Skeleton& skeleton) {
  std::string bytes;
  bytes.reserve(skeleton.num_joints() * 64);
  AppendBytes(bytes, static_cast<uint32_t>(skeleton.num_joints()));
  for (int j = 0; j < skeleton.num_joints(); ++j) {
    const std::string& name = skeleton.joint_name(j);
    AppendBytes(bytes, static_cast<uint32_t>(name.size()));
    bytes.append(name);
    AppendBytes(bytes, static_cast<int32_t>(skeleton.parent(j)));
    float packed[kFloatsPerJoint];
    PackTransform(skeleton.rest_pose()[j], packed);
    for (float f : packed) AppendBytes(bytes, f);
  }
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
         digest);
  return absl::BytesToHexString(absl::string_view(
      reinterpret_cast<const char*>(digest), SHA256_DIGEST_LENGTH));
}

absl::Status PoseFromProtoInto(const v1::Pose& proto, const Skeleton& skeleton,
                               absl::string_view field, LocalPose& out) {
  if (proto.transforms().empty()) {
    out.assign(skeleton.rest_pose().begin(), skeleton.rest_pose().end());
    return absl::OkStatus();
  }
  if (absl::Status s =
          UnpackPoseInto(proto.transforms(), skeleton.num_joints(), field, out);
      !s.ok()) {
    return s;
  }
  // The SIMD screen first: the same checks and messages (CheckPose).
  return CheckPose(skeleton, out, field);
}

absl::StatusOr<LocalPose> PoseFromProto(const v1::Pose& proto,
                                        const Skeleton& skeleton,
                                        absl::string_view field) {
  LocalPose pose;
  if (absl::Status s = PoseFromProtoInto(proto, skeleton, field, pose);
      !s.ok()) {
    return s;
  }
  return pose;
}

absl::StatusOr<LocalPose> UnsizedPoseFromProto(const v1::Pose& proto,
                                               absl::string_view field) {
  const int floats = proto.transforms_size();
  if (floats % kFloatsPerJoint != 0 ||
      floats / kFloatsPerJoint > kMaxSkeletonJoints) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": ", floats, " floats; a pose has 10 per joint (tx ty tz qx ",
        "qy qz qw sx sy sz) and at most ", kMaxSkeletonJoints, " joints"));
  }
  return UnpackPose(proto.transforms(), floats / kFloatsPerJoint, field);
}

void PoseToProto(absl::Span<const Transform> pose, v1::Pose* proto) {
  google::protobuf::RepeatedField<float>* floats = proto->mutable_transforms();
  const int n = static_cast<int>(pose.size()) * kFloatsPerJoint;
  // Grown without the zero fill Resize would write first.
  floats->Clear();
  floats->Reserve(n);
  float* f = floats->AddNAlreadyReserved(n);
  if (pose.empty()) return;
  // Every joint but the last is copied 16 bytes per row; the scale row's
  // padding lands on the next joint's first float, which that joint's own
  // copy then overwrites.
  for (const Transform& t : pose.first(pose.size() - 1)) {
    PackTransformRows(t, f);
    f += kFloatsPerJoint;
  }
  PackTransform(pose.back(), f);
}

absl::StatusOr<Eigen::Vector3f> Vec3FromProto(const v1::Vec3& proto,
                                              absl::string_view field) {
  Eigen::Vector3f v(proto.x(), proto.y(), proto.z());
  if (!v.allFinite()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": NaN or infinite component"));
  }
  return v;
}

absl::StatusOr<Eigen::Quaternionf> QuatFromProto(const v1::Quat& proto,
                                                 absl::string_view field) {
  Eigen::Quaternionf q(proto.w(), proto.x(), proto.y(), proto.z());
  if (!q.coeffs().allFinite()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": NaN or infinite component"));
  }
  const float norm = q.norm();
  if (!(std::fabs(norm - 1.0f) <= kUnitQuaternionTolerance)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": rotation norm ", norm,
                     " is not 1 (send a unit quaternion x, y, z, w)"));
  }
  q.normalize();
  return q;
}

void Vec3ToProto(const Eigen::Vector3f& v, v1::Vec3* proto) {
  proto->set_x(v.x());
  proto->set_y(v.y());
  proto->set_z(v.z());
}

void TransformToProto(const Transform& transform, v1::Transform* proto) {
  Vec3ToProto(transform.translation, proto->mutable_translation());
  v1::Quat* q = proto->mutable_rotation();
  q->set_x(transform.rotation.x());
  q->set_y(transform.rotation.y());
  q->set_z(transform.rotation.z());
  q->set_w(transform.rotation.w());
  Vec3ToProto(transform.scale, proto->mutable_scale());
}

absl::StatusOr<Transform> TransformFromProto(const v1::Transform& proto,
                                             absl::string_view field) {
  Transform t;
  if (proto.has_translation()) {
    auto v =
        Vec3FromProto(proto.translation(), absl::StrCat(field, ".translation"));
    if (!v.ok()) return v.status();
    t.translation = *v;
  }
  if (proto.has_rotation()) {
    auto q = QuatFromProto(proto.rotation(), absl::StrCat(field, ".rotation"));
    if (!q.ok()) return q.status();
    t.rotation = *q;
  }
  if (proto.has_scale()) {
    auto v = Vec3FromProto(proto.scale(), absl::StrCat(field, ".scale"));
    if (!v.ok()) return v.status();
    t.scale = *v;
  }
  return t;
}

absl::StatusOr<Clip> ClipFromProto(const v1::Clip& proto,
                                   const Skeleton& skeleton,
                                   absl::string_view field) {
  Clip clip;
  clip.name = proto.name();
  clip.duration = proto.duration();
  clip.tracks.resize(skeleton.num_joints());
  std::vector<bool> seen(skeleton.num_joints(), false);
  for (int i = 0; i < proto.joints_size(); ++i) {
    const v1::JointTracks& jt = proto.joints(i);
    const std::string where = absl::StrCat(field, ".joints[", i, "]");
    if (jt.joint() < 0 || jt.joint() >= skeleton.num_joints()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ".joint: ", jt.joint(), " is out of range [0, ",
                       skeleton.num_joints(), ")"));
    }
    if (seen[jt.joint()]) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ".joint: joint ", jt.joint(), " '",
          skeleton.joint_name(jt.joint()), "' already has tracks"));
    }
    seen[jt.joint()] = true;
    JointTracks& tracks = clip.tracks[jt.joint()];
    if (absl::Status s = UnpackTrack(jt.translation(), 3, tracks.translation,
                                     absl::StrCat(where, ".translation"));
        !s.ok()) {
      return s;
    }
    if (absl::Status s = UnpackTrack(jt.rotation(), 4, tracks.rotation,
                                     absl::StrCat(where, ".rotation"));
        !s.ok()) {
      return s;
    }
    if (absl::Status s = UnpackTrack(jt.scale(), 3, tracks.scale,
                                     absl::StrCat(where, ".scale"));
        !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = clip.Validate(skeleton); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", s.message()));
  }
  return clip;
}

absl::StatusOr<int> JointIndex(const Skeleton& skeleton, absl::string_view name,
                               absl::string_view field, bool allow_empty) {
  if (name.empty()) {
    if (allow_empty) return -1;
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": a joint name is required"));
  }
  const int joint = skeleton.FindJoint(name);
  if (joint < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": no joint named '", name, "' in the skeleton"));
  }
  return joint;
}

absl::Status PrefixField(absl::string_view field, const absl::Status& status) {
  if (status.ok()) return status;
  const absl::string_view message = status.message();
  const size_t dot = field.rfind('.');
  const absl::string_view leaf =
      dot == absl::string_view::npos ? field : field.substr(dot + 1);
  // A core job's name, and the wire field that holds its inputs where the
  // two differ.
  static constexpr std::pair<absl::string_view, absl::string_view> kAliases[] =
      {{"blending", "blend"},
       {"sampling", "sample"},
       {"spring_rig", "rig"},
       {"biped_mapping", "mapping"}};
  absl::string_view job = leaf;
  for (const auto& [core, wire] : kAliases) {
    if (leaf == wire) job = core;
  }
  if (message.size() > job.size() && absl::StartsWith(message, job) &&
      (message[job.size()] == '.' || message[job.size()] == '[')) {
    absl::string_view rest = message.substr(job.size());
    // Job fields renamed after clients saw their old names in messages: the
    // old name stays on the wire, so the answers do not change. (A root
    // joint's parent_model is the server's identity root space, never
    // rejected.)
    static constexpr struct {
      absl::string_view job, core, wire;
    } kRenamed[] = {{"two_bone_ik", ".parent_model[", ".model["},
                    {"two_bone_ik", ".input[", ".local["},
                    {"aim_ik", ".parent_model[", ".model["},
                    {"aim_ik", ".input[", ".local["},
                    {"crossfade", ".output:", ".pose:"}};
    for (const auto& r : kRenamed) {
      if (job == r.job && absl::StartsWith(rest, r.core)) {
        return absl::Status(
            status.code(),
            absl::StrCat(field, r.wire, rest.substr(r.core.size())));
      }
    }
    return absl::Status(status.code(), absl::StrCat(field, rest));
  }
  return absl::Status(status.code(), absl::StrCat(field, ": ", message));
}

PlaybackMode PlaybackModeFromProto(v1::PlaybackMode mode) {
  return mode == v1::PLAYBACK_MODE_CLAMP ? PlaybackMode::kClamp
                                         : PlaybackMode::kLoop;
}

FadeCurve FadeCurveFromProto(v1::FadeCurve curve) {
  return curve == v1::FADE_CURVE_SMOOTHSTEP ? FadeCurve::kSmoothstep
                                            : FadeCurve::kLinear;
}

v1::FadeCurve FadeCurveToProto(FadeCurve curve) {
  return curve == FadeCurve::kSmoothstep ? v1::FADE_CURVE_SMOOTHSTEP
                                         : v1::FADE_CURVE_LINEAR;
}

RotationInterpolation RotationInterpolationFromProto(
    v1::RotationInterpolation interpolation) {
  return interpolation == v1::ROTATION_INTERPOLATION_SLERP
             ? RotationInterpolation::kSlerp
             : RotationInterpolation::kNlerp;
}

}  // namespace posewire::server
