// Conversions between wire messages (posewire.v1) and solver-core values.
//
// Every conversion validates: it returns INVALID_ARGUMENT naming the field
// (with the caller's prefix, e.g. "characters[3].pose") and the joint, and
// never produces a value the core would reject later.
#ifndef POSEWIRE_SERVER_WIRE_WIRE_CONVERT_H_
#define POSEWIRE_SERVER_WIRE_WIRE_CONVERT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "posewire/v1/operations.pb.h"
#include "posewire/v1/types.pb.h"
#include "solver_core/model/clip.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"
#include "solver_core/pose_ops/crossfade.h"
#include "solver_core/pose_ops/sampling_job.h"

namespace posewire::server {

// Floats per joint in a packed pose: tx ty tz qx qy qz qw sx sy sz.
inline constexpr int kFloatsPerJoint = 10;

// A skeleton of at most `max_joints` joints.
absl::StatusOr<Skeleton> SkeletonFromProto(const v1::Skeleton& proto,
                                           int max_joints,
                                           absl::string_view field);
void SkeletonToProto(const Skeleton& skeleton, v1::Skeleton* proto);

// Content hash of a skeleton: lowercase hex SHA-256 of its canonical
// encoding (joint count, then per joint: name length, name bytes, parent,
// 10 rest floats; integers and floats little-endian). Equal skeletons hash
// equally on every replica; a different joint order is a different skeleton.
std::string SkeletonHash(const Skeleton& skeleton);

// A local pose for `skeleton`; an empty message is the rest pose.
absl::StatusOr<LocalPose> PoseFromProto(const v1::Pose& proto,
                                        const Skeleton& skeleton,
                                        absl::string_view field);
// The same into `out`, reusing its capacity (its contents are unspecified
// after an error).
absl::Status PoseFromProtoInto(const v1::Pose& proto, const Skeleton& skeleton,
                               absl::string_view field, LocalPose& out);
// The pose's floats into `out` for `joints` joints (sizes checked, values
// not): for a pose already checked once (an op update its op checked).
absl::Status UnpackPoseInto(
    const google::protobuf::RepeatedField<float>& floats, int joints,
    absl::string_view field, std::vector<Transform>& out);
// A pose of as many joints as `proto` holds (a multiple of 10 floats, at
// most kMaxSkeletonJoints joints), values unchecked: for state that its
// job checks against the skeleton when it runs.
absl::StatusOr<LocalPose> UnsizedPoseFromProto(const v1::Pose& proto,
                                               absl::string_view field);
// Writes a pose as packed floats (replacing what `proto` held).
void PoseToProto(absl::Span<const Transform> pose, v1::Pose* proto);

// A transform; unset sub-messages mean identity rotation, zero translation,
// unit scale. Rejects non-finite values and non-unit rotations.
absl::StatusOr<Transform> TransformFromProto(const v1::Transform& proto,
                                             absl::string_view field);
void TransformToProto(const Transform& transform, v1::Transform* proto);

absl::StatusOr<Eigen::Vector3f> Vec3FromProto(const v1::Vec3& proto,
                                              absl::string_view field);
void Vec3ToProto(const Eigen::Vector3f& v, v1::Vec3* proto);
// A unit rotation (within kUnitQuaternionTolerance), normalised.
absl::StatusOr<Eigen::Quaternionf> QuatFromProto(const v1::Quat& proto,
                                                 absl::string_view field);

// A clip for `skeleton`, validated with Clip::Validate.
absl::StatusOr<Clip> ClipFromProto(const v1::Clip& proto,
                                   const Skeleton& skeleton,
                                   absl::string_view field);

// Writes a clip in wire form (joints without tracks are left out).
void ClipToProto(const Clip& clip, v1::Clip* proto);

// The index of joint `name` in `skeleton`; INVALID_ARGUMENT naming `field`
// when absent. An empty name is -1 when `allow_empty`, an error otherwise.
absl::StatusOr<int> JointIndex(const Skeleton& skeleton, absl::string_view name,
                               absl::string_view field,
                               bool allow_empty = false);

// `status` with where in the request it happened in front of its message
// (OK stays OK). Core jobs name their own fields ("two_bone_ik.soften: ...");
// when `field` ends with that job's field, the path is joined once:
// "characters[0].ops[1].two_bone_ik" + "two_bone_ik.soften: ..." gives
// "characters[0].ops[1].two_bone_ik.soften: ...". Otherwise it is
// "<field>: <message>". A core field renamed since clients first saw it in
// messages keeps its former name here (two_bone_ik.parent_model[i] stays
// two_bone_ik.model[i], two_bone_ik.input[i] two_bone_ik.local[i]), so the
// answers on the wire do not change.
absl::Status PrefixField(absl::string_view field, const absl::Status& status);

PlaybackMode PlaybackModeFromProto(v1::PlaybackMode mode);
FadeCurve FadeCurveFromProto(v1::FadeCurve curve);
v1::FadeCurve FadeCurveToProto(FadeCurve curve);
RotationInterpolation RotationInterpolationFromProto(
    v1::RotationInterpolation interpolation);

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_WIRE_WIRE_CONVERT_H_
