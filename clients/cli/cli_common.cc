#include "clients/cli/cli_common.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/util/json_util.h"
#include "posewire/v1/posewire.pb.h"

namespace posewire::cli {

absl::StatusOr<int> FindClip(const ImportedAsset& asset,
                             absl::string_view name) {
  if (name.empty()) return asset.clips.empty() ? -1 : 0;
  for (size_t i = 0; i < asset.clips.size(); ++i) {
    if (asset.clips[i].name == name) return static_cast<int>(i);
  }
  std::vector<std::string> names;
  for (const Clip& clip : asset.clips) names.push_back(JsonString(clip.name));
  return absl::NotFoundError(
      absl::StrCat(asset.source, ": no clip '", name, "'; it has ",
                   names.empty() ? "none" : absl::StrJoin(names, ", ")));
}

std::vector<float> ClipKeyTimes(const Clip& clip) {
  const std::vector<float>* densest = nullptr;
  auto consider = [&densest](const std::vector<float>& times) {
    if (densest == nullptr || times.size() > densest->size()) densest = &times;
  };
  for (const JointTracks& tracks : clip.tracks) {
    consider(tracks.translation.times);
    consider(tracks.rotation.times);
    consider(tracks.scale.times);
  }
  return densest == nullptr ? std::vector<float>() : *densest;
}

float ClipFrameTime(const Clip& clip) {
  const std::vector<float> times = ClipKeyTimes(clip);
  float gap = 0.0f;
  for (size_t k = 1; k < times.size(); ++k) {
    const float d = times[k] - times[k - 1];
    if (d > 0.0f && (gap == 0.0f || d < gap)) gap = d;
  }
  return gap > 0.0f ? gap : 1.0f / 30.0f;
}

absl::StatusOr<google::protobuf::RepeatedPtrField<v1::Operation>> ParseOpsJson(
    absl::string_view json, absl::string_view source) {
  const absl::string_view trimmed = absl::StripAsciiWhitespace(json);
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  google::protobuf::RepeatedPtrField<v1::Operation> ops;
  google::protobuf::util::Status status;
  if (!trimmed.empty() && trimmed.front() == '[') {
    // protobuf parses messages, not arrays: wrap the array as the `ops`
    // field of a message that has one (RegisterRig's repeated Operation).
    v1::RegisterRig rig;
    const std::string wrapped = absl::StrCat("{\"ops\": ", trimmed, "}");
    status =
        google::protobuf::util::JsonStringToMessage(wrapped, &rig, options);
    if (status.ok()) ops = std::move(*rig.mutable_ops());
  } else if (!trimmed.empty() && trimmed.front() == '{') {
    v1::Operation op;
    status = google::protobuf::util::JsonStringToMessage(std::string(trimmed),
                                                         &op, options);
    if (status.ok()) *ops.Add() = std::move(op);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(source,
                     ": expected a JSON array of posewire.v1.Operation (or one "
                     "Operation object)"));
  }
  if (!status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source,
                     ": not a list of posewire.v1.Operation in protobuf's JSON "
                     "mapping: ",
                     std::string(status.message())));
  }
  return ops;
}

absl::StatusOr<std::string> ReadTextFile(const std::string& path) {
  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::unique_ptr<std::FILE, Closer> file(std::fopen(path.c_str(), "rb"));
  if (file == nullptr) {
    const int error = errno;
    return absl::ErrnoToStatus(error, absl::StrCat(path, ": cannot open"));
  }
  std::string text;
  char buffer[1 << 14];
  for (;;) {
    const size_t n = std::fread(buffer, 1, sizeof(buffer), file.get());
    text.append(buffer, n);
    if (n < sizeof(buffer)) break;
  }
  if (std::ferror(file.get())) {
    const int error = errno;
    return absl::ErrnoToStatus(error, absl::StrCat(path, ": cannot read"));
  }
  return text;
}

absl::StatusOr<google::protobuf::RepeatedPtrField<v1::Operation>>
ReadOpsJsonFile(const std::string& path) {
  if (path.empty()) return google::protobuf::RepeatedPtrField<v1::Operation>();
  auto text = ReadTextFile(path);
  if (!text.ok()) return text.status();
  return ParseOpsJson(*text, path);
}

std::string DescribeStatus(const absl::Status& status) {
  return absl::StrCat(
      absl::StatusCodeToString(status.code()), ": ", status.message(),
      absl::IsUnauthenticated(status)
          ? " (posewire sends a token with --token_file=FILE or --token)"
          : "");
}

std::string JsonString(absl::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          absl::StrAppendFormat(&out, "\\u%04x", static_cast<int>(c));
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
  return out;
}

void AppendJsonNumber(std::string* out, float value) {
  if (!std::isfinite(value)) {
    *out += "null";
    return;
  }
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out->append(buffer, result.ptr);
}

std::string MessageJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(message, &json, options)
           .ok()) {
    return "null";
  }
  return json;
}

}  // namespace posewire::cli
