#include "server/service/solve.h"

#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "server/ops/clip_library.h"
#include "server/ops/plan.h"
#include "server/ops/state_codec.h"
#include "server/service/character_solve.h"
#include "server/wire/field_name.h"
#include "server/wire/wire_convert.h"

namespace posewire::server {
namespace {

absl::Status SolveCharacters(const v1::SolveRequest& request,
                             const ServerConfig& config,
                             SkeletonCache& skeletons, const StopCheck& stop,
                             v1::SolveResponse* response,
                             OperationTimings* timings) {
  if (request.characters_size() > config.max_characters_per_batch) {
    return absl::ResourceExhaustedError(
        absl::StrCat("characters: ", request.characters_size(),
                     " characters exceed this server's limit of ",
                     config.max_characters_per_batch,
                     " per request (GetInfo limits.max_characters_per_batch)"));
  }
  if (!std::isfinite(request.dt()) || request.dt() < 0.0f) {
    return absl::InvalidArgumentError(
        absl::StrCat("dt: ", request.dt(), " must be finite and >= 0"));
  }
  if (absl::Status s = CheckClipNamesUnique(request.clips()); !s.ok()) {
    return s;
  }

  // Clips are converted once per distinct skeleton in the batch, on demand.
  absl::flat_hash_map<const Skeleton*, std::unique_ptr<ClipLibrary>> libraries;
  const OpLimits limits{.max_solver_iterations = config.max_solver_iterations};
  CharacterScratch scratch;  // every character's poses on the way
  // Other skeletons ops name (retarget's source), by content hash.
  const RegistryLookup lookup{
      .by_hash = [&skeletons](
                     const std::string& hash) { return skeletons.Find(hash); },
      .by_id = {},
      .limits_by_id = {},
      .max_joints = config.max_joints_per_skeleton};

  for (int c = 0; c < request.characters_size(); ++c) {
    if (absl::Status s = stop(); !s.ok()) return s;
    const v1::CharacterInput& in = request.characters(c);
    const std::string field = absl::StrCat("characters[", c, "]");
    // Field names are joined only for an error (field_name.h).
    auto resolved = NamedOnError(field, ".skeleton", [&](absl::string_view f) {
      return ResolveSkeleton(in.skeleton(), config.max_joints_per_skeleton,
                             skeletons, f);
    });
    if (!resolved.ok()) return resolved.status();
    const Skeleton& skeleton = *resolved->skeleton;

    std::unique_ptr<ClipLibrary>& library = libraries[&skeleton];
    if (library == nullptr) {
      library = std::make_unique<ClipLibrary>(&skeleton, &request.clips());
    }
    auto plan = skeletons.plans().Get(resolved->skeleton, resolved->hash,
                                      in.ops(), limits, field, &lookup);
    if (!plan.ok()) return plan.status();
    CharacterState state;
    if (!in.state().empty()) {
      if (absl::Status s = StateFromProto(in.state(), *library, state,
                                          absl::StrCat(field, ".state"));
          !s.ok()) {
        return s;
      }
    }
    v1::CharacterOutput* out = response->add_characters();
    out->set_id(in.id());
    out->set_skeleton_hash(resolved->hash);
    const CharacterInputs inputs{.skeleton = &skeleton,
                                 .clips = library.get(),
                                 .plan = plan->get(),
                                 .pose = &in.pose(),
                                 .root = &in.root(),
                                 .dt = request.dt(),
                                 .want_model_pose = in.want_model_pose(),
                                 // Solve sends its ops whole every call.
                                 .updates = {},
                                 .field = field,
                                 .timings = timings};
    if (absl::Status s = SolveCharacter(
            inputs, state, scratch,
            {.pose = out->mutable_pose(),
             .model_pose =
                 in.want_model_pose() ? out->mutable_model_pose() : nullptr,
             .ops = out->mutable_ops()});
        !s.ok()) {
      return s;
    }
    StateToProto(state, *library, out->mutable_state());
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Solve(const v1::SolveRequest& request, const ServerConfig& config,
                   SkeletonCache& skeletons, const StopCheck& stop,
                   v1::SolveResponse* response, OperationTimingsSink* metrics) {
  // Gathered only for a metrics endpoint (a 1.7 KB table to clear).
  std::optional<OperationTimings> timings;
  if (metrics != nullptr && metrics->times_operations()) timings.emplace();
  OperationTimings* gathered = timings ? &*timings : nullptr;
  const absl::Status status =
      SolveCharacters(request, config, skeletons, stop, response, gathered);
  // Ops that ran count even when a later character failed.
  if (gathered != nullptr) metrics->AddTimings(*timings);
  return status;
}

}  // namespace posewire::server
