#include "clients/cli/referee_command.h"

#include <cmath>
#include <cstdint>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "clients/cli/cli_common.h"
#include "server/wire/wire_convert.h"
#include "solver_core/io/asset_reader.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/model/pose.h"
#include "solver_core/pose_ops/sampling_job.h"

namespace posewire::cli {
namespace {

constexpr char kSkeletonId[] = "skeleton";
constexpr char kRigId[] = "referee";
constexpr char kCharacterId[] = "player";
constexpr char kHitboxesId[] = "bones";
// Most claims one report sends: an hour at 60 Hz.
constexpr int64_t kMaxClaims = 216'000;

int Fail(const std::string& message, int code = 1) {
  std::cerr << "posewire referee: " << message << "\n";
  return code;
}

// "PLAUSIBILITY_CHECK_ANGULAR_VELOCITY" -> "angular_velocity".
std::string CheckName(v1::PlausibilityCheck check) {
  std::string name = v1::PlausibilityCheck_Name(check);
  constexpr absl::string_view kPrefix = "PLAUSIBILITY_CHECK_";
  if (absl::StartsWith(name, kPrefix)) name = name.substr(kPrefix.size());
  for (char& c : name) c = static_cast<char>(std::tolower(c));
  return name;
}

// Limits learnt on the server from `file`'s clips, kept for the joints
// `skeleton` has by name.
absl::StatusOr<google::protobuf::RepeatedPtrField<v1::JointLimitSpec>>
LearnLimitsFrom(client::Client& client, const std::string& file,
                double margin_degrees, const Skeleton& skeleton) {
  auto source = ReadAssetFile(file);
  if (!source.ok()) return source.status();
  if (source->clips.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--limits_from=", file, ": the file has no clips"));
  }
  v1::LearnLimitsRequest request;
  server::SkeletonToProto(source->skeleton,
                          request.mutable_skeleton()->mutable_skeleton());
  for (const Clip& clip : source->clips) {
    server::ClipToProto(clip, request.add_clips());
  }
  request.mutable_options()->set_margin(
      static_cast<float>(margin_degrees * 3.14159265358979 / 180.0));
  auto learnt = client.LearnLimits(request);
  if (!learnt.ok()) return learnt.status();
  google::protobuf::RepeatedPtrField<v1::JointLimitSpec> kept;
  for (const v1::JointLimitSpec& spec : learnt->limits()) {
    // The root joint of FILE is where its character faces: no range.
    const int joint = skeleton.FindJoint(spec.joint());
    if (joint > 0) *kept.Add() = spec;
  }
  return kept;
}

// "ox,oy,oz,dx,dy,dz" as a Ray.
absl::StatusOr<v1::Ray> ParseRay(const std::string& text) {
  std::vector<std::string> parts = absl::StrSplit(text, ',');
  float v[6];
  bool ok = parts.size() == 6;
  for (size_t i = 0; ok && i < 6; ++i) {
    ok = absl::SimpleAtof(absl::StripAsciiWhitespace(parts[i]), &v[i]) &&
         std::isfinite(v[i]);
  }
  if (!ok || (v[3] == 0 && v[4] == 0 && v[5] == 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--ray=", text,
        ": six finite numbers ox,oy,oz,dx,dy,dz, the direction not zero"));
  }
  v1::Ray ray;
  ray.mutable_origin()->set_x(v[0]);
  ray.mutable_origin()->set_y(v[1]);
  ray.mutable_origin()->set_z(v[2]);
  ray.mutable_direction()->set_x(v[3]);
  ray.mutable_direction()->set_y(v[4]);
  ray.mutable_direction()->set_z(v[5]);
  return ray;
}

// The hit query at `at` and its printed answer; false when it failed.
bool QueryAndPrint(client::Session& session, const v1::Ray& ray, double at) {
  v1::HitQuery query;
  query.set_time(at);
  v1::HitTarget* target = query.add_targets();
  target->set_character_id(kCharacterId);
  target->set_hitbox_set(kHitboxesId);
  *query.add_rays() = ray;
  auto result = session.Query(query);
  if (!result.ok()) {
    Fail(
        absl::StrCat("query at ", at, " s: ", DescribeStatus(result.status())));
    return false;
  }
  const v1::RayHit& hit = result->rays(0);
  if (!hit.hit()) {
    std::cout << absl::StrFormat("ray at %.3f s: no hit\n", at);
    return true;
  }
  std::cout << absl::StrFormat(
      "ray at %.3f s: hit %s (hitbox %d) at distance %g, point (%g, %g, %g), "
      "normal (%g, %g, %g)\n",
      at, hit.joint(), hit.hitbox(), hit.distance(), hit.point().x(),
      hit.point().y(), hit.point().z(), hit.normal().x(), hit.normal().y(),
      hit.normal().z());
  return true;
}

}  // namespace

google::protobuf::RepeatedPtrField<v1::Hitbox> AutoHitboxes(
    const Skeleton& skeleton) {
  const int n = skeleton.num_joints();
  // The rest pose's extent in model space.
  ModelPose model(n);
  LocalToModelJob{.skeleton = &skeleton,
                  .input = skeleton.rest_pose(),
                  .output = absl::MakeSpan(model)}
      .RunUnchecked();  // a skeleton's rest pose is valid by construction
  Eigen::Vector3f lo = Eigen::Vector3f::Constant(INFINITY);
  Eigen::Vector3f hi = -lo;
  for (const Transform& t : model) {
    lo = lo.cwiseMin(t.translation);
    hi = hi.cwiseMax(t.translation);
  }
  const float extent = (hi - lo).maxCoeff();
  google::protobuf::RepeatedPtrField<v1::Hitbox> out;
  std::vector<bool> done(n, false);
  for (int c = 0; c < n; ++c) {
    const int j = skeleton.parent(c);
    if (j == kNoParent || done[j]) continue;
    // The bone in the joint's frame (its rest rotation applied by the
    // joint's own transform at run time).
    const Eigen::Vector3f bone = skeleton.rest_pose()[c].translation;
    const float length = bone.norm();
    if (!(length >= 0.02f * extent)) continue;
    done[j] = true;
    v1::Hitbox* box = out.Add();
    box->set_joint(skeleton.joint_name(j));
    box->set_shape(v1::HITBOX_SHAPE_CAPSULE);
    box->set_radius(0.15f * length);
    box->set_half_height(0.5f * length);
    const Eigen::Quaternionf along =
        Eigen::Quaternionf::FromTwoVectors(Eigen::Vector3f::UnitY(),
                                           bone / length)
            .normalized();
    v1::Transform* offset = box->mutable_offset();
    offset->mutable_translation()->set_x(0.5f * bone.x());
    offset->mutable_translation()->set_y(0.5f * bone.y());
    offset->mutable_translation()->set_z(0.5f * bone.z());
    offset->mutable_rotation()->set_x(along.x());
    offset->mutable_rotation()->set_y(along.y());
    offset->mutable_rotation()->set_z(along.z());
    offset->mutable_rotation()->set_w(along.w());
  }
  return out;
}

int RunReferee(client::Client& client, const RefereeOptions& o) {
  if (!std::isfinite(o.rate) || o.rate <= 0.0 || o.rate > 10'000.0) {
    return Fail(absl::StrCat("--rate=", o.rate,
                             ": claims per second, above 0 and at most "
                             "10000"),
                2);
  }
  if (!std::isfinite(o.margin_degrees) || o.margin_degrees < 0.0) {
    return Fail(absl::StrCat("--margin_degrees=", o.margin_degrees, ": >= 0"),
                2);
  }
  auto asset = ReadAssetFile(o.file);
  if (!asset.ok()) return Fail(std::string(asset.status().message()));
  auto clip_index = FindClip(*asset, o.clip);
  if (!clip_index.ok()) return Fail(std::string(clip_index.status().message()));
  if (*clip_index < 0) return Fail(absl::StrCat(o.file, " has no clip"), 2);
  const Clip& clip = asset->clips[*clip_index];
  const float dt = static_cast<float>(1.0 / o.rate);
  const int64_t claims =
      static_cast<int64_t>(std::floor(clip.duration / dt + 1e-3f)) + 1;
  std::optional<v1::Ray> ray;
  if (!o.ray.empty()) {
    auto parsed = ParseRay(o.ray);
    if (!parsed.ok()) return Fail(std::string(parsed.status().message()), 2);
    ray = *parsed;
    if (!std::isfinite(o.at) || o.at < 0.0 || o.at > clip.duration) {
      return Fail(absl::StrFormat("--at=%g: a time in the clip, 0 to %g s",
                                  o.at, clip.duration),
                  2);
    }
  }
  if (claims > kMaxClaims) {
    return Fail(absl::StrCat(claims, " claims at --rate=", o.rate, "; at most ",
                             kMaxClaims, " per report"),
                2);
  }

  v1::Operation op;
  v1::PlausibilityOp* plausibility = op.mutable_plausibility();
  if (!o.limits_from.empty()) {
    auto limits = LearnLimitsFrom(client, o.limits_from, o.margin_degrees,
                                  asset->skeleton);
    if (!limits.ok()) return Fail(DescribeStatus(limits.status()));
    *plausibility->mutable_limits() = *std::move(limits);
  }

  auto session = client.OpenSession();
  if (!session.ok()) return Fail(DescribeStatus(session.status()));
  google::protobuf::RepeatedPtrField<v1::Operation> ops;
  *ops.Add() = op;
  for (const absl::Status& s :
       {(*session)->RegisterSkeleton(kSkeletonId, asset->skeleton),
        (*session)->RegisterRig(kRigId, kSkeletonId, ops),
        (*session)->RegisterCharacter(kCharacterId, kRigId)}) {
    if (!s.ok()) return Fail(absl::StrCat("register: ", DescribeStatus(s)));
  }
  if (ray.has_value()) {
    const absl::Status s = (*session)->RegisterHitboxes(
        kHitboxesId, kSkeletonId, AutoHitboxes(asset->skeleton));
    if (!s.ok()) return Fail(absl::StrCat("register: ", DescribeStatus(s)));
  }
  bool queried = false;
  std::cout << absl::StrFormat(
                   "%s '%s': %d claims at %g Hz, %d joint limits%s\n", o.file,
                   clip.name, claims, o.rate, plausibility->limits_size(),
                   o.limits_from.empty()
                       ? ""
                       : absl::StrCat(" learnt from ", o.limits_from))
            << std::flush;

  LocalPose pose = RestPose(asset->skeleton);
  std::map<std::string, int> by_check;
  int64_t flagged = 0;
  for (int64_t k = 0; k < claims; ++k) {
    const float time = static_cast<float>(k) * dt;
    SamplingJob sampling;
    sampling.skeleton = &asset->skeleton;
    sampling.clip = &clip;
    sampling.clip_validated = true;
    sampling.time = time;
    sampling.mode = PlaybackMode::kClamp;
    sampling.output = absl::MakeSpan(pose);
    if (absl::Status s = sampling.Run(); !s.ok()) {
      return Fail(std::string(s.message()));
    }
    v1::Frame frame;
    frame.set_sequence(static_cast<uint64_t>(k + 1));
    frame.set_dt(k == 0 ? 0.0f : dt);
    // Timed frames are kept for the rewind; only when a ray asks for it.
    if (ray.has_value()) frame.set_time(static_cast<double>(k) * dt);
    v1::CharacterFrame* character = frame.add_characters();
    character->set_character_id(kCharacterId);
    server::PoseToProto(pose, character->mutable_pose());
    auto result = (*session)->SendFrame(frame);
    if (!result.ok()) {
      return Fail(
          absl::StrCat("frame ", k, ": ", DescribeStatus(result.status())));
    }
    const v1::CharacterResult& answer = result->characters(0);
    if (answer.status().code() != 0) {
      return Fail(absl::StrCat("frame ", k, ": ", answer.status().message()));
    }
    // The rewind, as soon as the frame at or after --at is recorded (the
    // history keeps the last frames only), or at the last frame.
    if (ray.has_value() && !queried &&
        (static_cast<double>(k) * dt >= o.at || k + 1 == claims)) {
      queried = true;
      if (!QueryAndPrint(**session, *ray, o.at)) return 1;
    }
    const v1::PlausibilityReport& report = answer.ops(0).plausibility();
    if (report.plausible()) continue;
    ++flagged;
    std::string line = absl::StrFormat("frame %d (%.3f s):", k, time);
    for (const v1::PlausibilityViolation& v : report.violations()) {
      const std::string check = CheckName(v.check());
      ++by_check[check];
      absl::StrAppendFormat(
          &line, " %s %s%s %g > %g;", check, v.joint(),
          v.axis() >= 0 ? absl::StrCat("[", v.axis(), "]") : "", v.measured(),
          v.bound());
    }
    std::cout << line << std::endl;
  }
  std::cout << absl::StrFormat("%d of %d claims flagged", flagged, claims);
  for (const auto& entry : by_check) {
    std::cout << absl::StrFormat("; %s %d", entry.first, entry.second);
  }
  std::cout << std::endl;
  return 0;
}

}  // namespace posewire::cli
