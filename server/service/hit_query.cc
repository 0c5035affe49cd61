#include "server/service/hit_query.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "server/wire/wire_convert.h"

namespace posewire::server {
namespace {

Eigen::Vector3f Vec(const v1::Vec3& v) { return {v.x(), v.y(), v.z()}; }

// max_distance on the wire: 0 (unset) means no limit.
float MaxDistance(const v1::Ray& ray) {
  return ray.max_distance() == 0.0f ? std::numeric_limits<float>::infinity()
                                    : ray.max_distance();
}

}  // namespace

absl::Status CheckHitQuery(const v1::HitQuery& query, int max_queries,
                           int max_targets) {
  const int count = query.rays_size() + query.spheres_size();
  if (count > max_queries) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "query.rays: ", query.rays_size(), " rays and ", query.spheres_size(),
        " spheres exceed this server's limit of ", max_queries,
        " per query (limits.max_queries_per_request)"));
  }
  if (query.targets_size() == 0) {
    return absl::InvalidArgumentError(
        "query.targets: name at least one character to query");
  }
  if (query.targets_size() > max_targets) {
    return absl::ResourceExhaustedError(
        absl::StrCat("query.targets: ", query.targets_size(),
                     " characters exceed this server's limit of ", max_targets,
                     " (limits.max_characters_per_batch)"));
  }
  if (query.has_time() && !std::isfinite(query.time())) {
    return absl::InvalidArgumentError(
        absl::StrCat("query.time: ", query.time(), " must be finite"));
  }
  for (int i = 0; i < query.rays_size(); ++i) {
    const v1::Ray& ray = query.rays(i);
    if (!Vec(ray.origin()).allFinite()) {
      return absl::InvalidArgumentError(
          absl::StrCat("query.rays[", i, "].origin: not finite"));
    }
    const float length = Vec(ray.direction()).norm();
    if (!(std::isfinite(length) && length > 0.0f)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "query.rays[", i,
          "].direction: must be finite and of non-zero length (got length ",
          length, ")"));
    }
    if (!(std::isfinite(ray.max_distance()) && ray.max_distance() >= 0.0f)) {
      return absl::InvalidArgumentError(
          absl::StrCat("query.rays[", i, "].max_distance: ", ray.max_distance(),
                       " must be finite and >= 0"));
    }
  }
  for (int i = 0; i < query.spheres_size(); ++i) {
    const v1::SphereQuery& sphere = query.spheres(i);
    if (!Vec(sphere.center()).allFinite()) {
      return absl::InvalidArgumentError(
          absl::StrCat("query.spheres[", i, "].center: not finite"));
    }
    if (!(std::isfinite(sphere.radius()) && sphere.radius() >= 0.0f)) {
      return absl::InvalidArgumentError(
          absl::StrCat("query.spheres[", i, "].radius: ", sphere.radius(),
                       " must be finite and >= 0"));
    }
  }
  return absl::OkStatus();
}

absl::Status AnswerHitQuery(const v1::HitQuery& query,
                            absl::Span<HitTargetPose> targets,
                            v1::QueryResult* result) {
  for (size_t t = 0; t < targets.size(); ++t) {
    HitTargetPose& target = targets[t];
    const size_t joints = target.model.size();
    target.world.resize(joints);
    for (size_t j = 0; j < joints; ++j) {
      CombineTo(target.root, target.model[j], &target.world[j]);
    }
    target.placed.resize(target.hitboxes.size());
    PlaceHitboxes(target.hitboxes, target.world, absl::MakeSpan(target.placed));
    for (const PlacedHitbox& p : target.placed) {
      if (!p.center.allFinite() || !p.axis.allFinite()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "query.targets[", t, "]: character '", *target.character_id,
            "' placed by its root puts a hitbox at a non-finite "
            "point"));
      }
    }
    target.bound = BoundHitboxes(target.hitboxes, target.placed);
  }
  for (const v1::Ray& ray : query.rays()) {
    const Eigen::Vector3f origin = Vec(ray.origin());
    const Eigen::Vector3f direction = Vec(ray.direction());
    const float max_distance = MaxDistance(ray);
    v1::RayHit* out = result->add_rays();
    // Normalised as FirstRayHit does, for the characters' bounds.
    const Eigen::Vector3f unit = direction / direction.norm();
    RayHit best;
    int best_target = -1;
    for (size_t t = 0; t < targets.size(); ++t) {
      // A character entered no nearer than the nearest hit so far cannot
      // take it (a tie stays with the earlier target).
      if (RaySurelyMissesBound(targets[t].bound, origin, unit,
                               best_target < 0
                                   ? max_distance
                                   : std::min(max_distance, best.distance))) {
        continue;
      }
      const RayHit hit = FirstRayHit(targets[t].hitboxes, targets[t].placed,
                                     origin, direction, max_distance);
      // Strictly nearer: a tie stays with the earlier target.
      if (hit.hitbox >= 0 &&
          (best_target < 0 || hit.distance < best.distance)) {
        best = hit;
        best_target = static_cast<int>(t);
      }
    }
    if (best_target < 0) continue;
    const HitTargetPose& target = targets[best_target];
    out->set_hit(true);
    out->set_character_id(*target.character_id);
    out->set_target(static_cast<uint32_t>(best_target));
    out->set_joint(target.skeleton->joint_name(best.joint));
    out->set_hitbox(static_cast<uint32_t>(best.hitbox));
    out->set_distance(best.distance);
    Vec3ToProto(best.point, out->mutable_point());
    Vec3ToProto(best.normal, out->mutable_normal());
  }
  std::vector<int> overlapped;
  for (const v1::SphereQuery& sphere : query.spheres()) {
    v1::SphereOverlaps* out = result->add_spheres();
    for (size_t t = 0; t < targets.size(); ++t) {
      overlapped.clear();
      OverlapSphere(targets[t].hitboxes, targets[t].placed,
                    Vec(sphere.center()), sphere.radius(), &overlapped);
      for (const int i : overlapped) {
        v1::HitboxRef* ref = out->add_hitboxes();
        ref->set_character_id(*targets[t].character_id);
        ref->set_target(static_cast<uint32_t>(t));
        ref->set_joint(
            targets[t].skeleton->joint_name(targets[t].hitboxes[i].joint));
        ref->set_hitbox(static_cast<uint32_t>(i));
      }
    }
  }
  if (query.want_poses()) {
    for (const HitTargetPose& target : targets) {
      v1::RewoundPose* pose = result->add_poses();
      pose->set_character_id(*target.character_id);
      PoseToProto(target.model, pose->mutable_model_pose());
      TransformToProto(target.root, pose->mutable_root());
    }
  }
  return absl::OkStatus();
}

}  // namespace posewire::server
