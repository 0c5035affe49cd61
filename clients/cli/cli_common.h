// Helpers the `posewire solve` and `posewire stream` commands share: picking
// a clip and a time in an imported asset, reading --ops_json files, and
// printing statuses and JSON.
#ifndef POSEWIRE_CLIENTS_CLI_CLI_COMMON_H_
#define POSEWIRE_CLIENTS_CLI_CLI_COMMON_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "posewire/v1/operations.pb.h"
#include "solver_core/io/asset.h"
#include "solver_core/model/clip.h"

namespace posewire::cli {

// The clip called `name` in `asset` (the first clip when `name` is empty).
// NOT_FOUND listing the clips there are; -1 when `name` is empty and the
// asset has no clips (a rig without animation: the pipeline starts from the
// rest pose).
absl::StatusOr<int> FindClip(const ImportedAsset& asset,
                             absl::string_view name);

// Key times of the clip's densest track (for BVH: every frame line), so
// "frame N" means the same for BVH and glTF clips.
std::vector<float> ClipKeyTimes(const Clip& clip);

// The clip's frame interval: the smallest gap between its key times, or
// 1/30 s for a clip with fewer than two keys.
float ClipFrameTime(const Clip& clip);

// Parses a JSON array of posewire.v1.Operation in protobuf's JSON mapping
// (or one Operation object). Unknown fields are errors, so a misspelt
// parameter is not silently dropped. `source` names the input in errors.
absl::StatusOr<google::protobuf::RepeatedPtrField<v1::Operation>> ParseOpsJson(
    absl::string_view json, absl::string_view source);

// The whole file; an error names the path and says why.
absl::StatusOr<std::string> ReadTextFile(const std::string& path);

// ParseOpsJson on a file's contents; an empty path is no ops.
absl::StatusOr<google::protobuf::RepeatedPtrField<v1::Operation>>
ReadOpsJsonFile(const std::string& path);

// "INVALID_ARGUMENT: message" for a person: the code's name and the
// server's (or the client library's) message as is, and for
// UNAUTHENTICATED which flags carry a token.
std::string DescribeStatus(const absl::Status& status);

// `text` as a JSON string literal, quotes included.
std::string JsonString(absl::string_view text);

// A float as a JSON number in the shortest form that reads back as the same
// float; null for NaN and infinities (JSON has no literal for them).
void AppendJsonNumber(std::string* out, float value);

// A protobuf message as compact JSON with the .proto field names.
std::string MessageJson(const google::protobuf::Message& message);

}  // namespace posewire::cli

#endif  // POSEWIRE_CLIENTS_CLI_CLI_COMMON_H_
