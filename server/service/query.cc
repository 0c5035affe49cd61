#include "server/service/query.h"

#include <limits>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "server/service/hit_query.h"
#include "server/service/pose_history.h"
#include "server/wire/hitbox_convert.h"

namespace posewire::server {
namespace {

// A character of the request, checked and converted.
struct Character {
  ResolvedSkeleton skeleton;
  std::vector<Hitbox> hitboxes;
  PoseHistory history;
};

absl::Status ReadCharacter(const v1::QueryCharacter& in,
                           const ServerConfig& config, SkeletonCache& skeletons,
                           const std::string& field, Character& out) {
  auto skeleton = ResolveSkeleton(in.skeleton(), config.max_joints_per_skeleton,
                                  skeletons, absl::StrCat(field, ".skeleton"));
  if (!skeleton.ok()) return skeleton.status();
  out.skeleton = *std::move(skeleton);
  auto hitboxes = HitboxesFromProto(in.hitboxes(), *out.skeleton.skeleton,
                                    absl::StrCat(field, ".hitboxes"));
  if (!hitboxes.ok()) return hitboxes.status();
  out.hitboxes = *std::move(hitboxes);
  if (in.frames().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        field,
        ".frames: none; send the frames recorded around the query's "
        "time"));
  }
  if (in.frames_size() > config.history_frames) {
    return absl::ResourceExhaustedError(absl::StrCat(
        field, ".frames: ", in.frames_size(),
        " frames exceed this server's limit of ", config.history_frames,
        " (GetInfo limits.history_frames)"));
  }
  out.history = PoseHistory(in.frames_size());
  return out.history.FromProto(in.frames(), out.skeleton.skeleton->num_joints(),
                               absl::StrCat(field, ".frames"));
}

}  // namespace

absl::Status AnswerQuery(const v1::QueryRequest& request,
                         const ServerConfig& config, SkeletonCache& skeletons,
                         v1::QueryResult* result) {
  const v1::HitQuery& query = request.query();
  if (absl::Status s = CheckHitQuery(query, config.max_queries_per_request,
                                     config.max_characters_per_batch);
      !s.ok()) {
    return s;
  }
  if (request.characters_size() > config.max_characters_per_batch) {
    return absl::ResourceExhaustedError(
        absl::StrCat("characters: ", request.characters_size(),
                     " characters exceed this server's limit of ",
                     config.max_characters_per_batch,
                     " (GetInfo limits.max_characters_per_batch)"));
  }
  std::vector<Character> characters(request.characters_size());
  absl::flat_hash_map<absl::string_view, int> by_id;
  for (int i = 0; i < request.characters_size(); ++i) {
    const v1::QueryCharacter& in = request.characters(i);
    const std::string field = absl::StrCat("characters[", i, "]");
    if (!by_id.emplace(in.id(), i).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".id: '", in.id(), "' is used by an earlier character"));
    }
    if (absl::Status s =
            ReadCharacter(in, config, skeletons, field, characters[i]);
        !s.ok()) {
      return s;
    }
  }

  std::vector<HitTargetPose> targets(query.targets_size());
  for (int i = 0; i < query.targets_size(); ++i) {
    const v1::HitTarget& in = query.targets(i);
    const std::string field = absl::StrCat("query.targets[", i, "]");
    if (!in.hitbox_set().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".hitbox_set: '", in.hitbox_set(),
          "' given; in a unary Query each character carries its hitboxes "
          "(leave it empty)"));
    }
    auto found = by_id.find(in.character_id());
    if (found == by_id.end()) {
      return absl::NotFoundError(
          absl::StrCat(field, ".character_id: no character '",
                       in.character_id(), "' in the request's characters"));
    }
    Character& character = characters[found->second];
    HitTargetPose& target = targets[i];
    target.character_id = &request.characters(found->second).id();
    target.skeleton = character.skeleton.skeleton.get();
    target.hitboxes = character.hitboxes;
    // The request's frames are the window: only their span bounds the time.
    const PoseHistory& history = character.history;
    if (query.has_time() && !(query.time() >= history.oldest_time() &&
                              query.time() <= history.newest_time())) {
      return absl::OutOfRangeError(absl::StrCat(
          "query.time: ", query.time(), " is outside the frames sent for ",
          field, " (character '", in.character_id(), "'): [",
          history.oldest_time(), ", ", history.newest_time(), "]"));
    }
    const absl::string_view time_field =
        query.has_time() ? "query.time" : "query.targets";
    absl::Status s =
        query.has_time()
            ? history.Rewind(query.time(),
                             std::numeric_limits<double>::infinity(),
                             time_field, target.model, target.root)
            : history.Newest(time_field, target.model, target.root);
    if (!s.ok()) {
      return absl::Status(
          s.code(), absl::StrCat(s.message(), " (", field, ", character '",
                                 in.character_id(), "')"));
    }
  }
  return AnswerHitQuery(query, absl::MakeSpan(targets), result);
}

}  // namespace posewire::server
