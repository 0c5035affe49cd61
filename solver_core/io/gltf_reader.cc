#include "solver_core/io/gltf_reader.h"

#include <sys/stat.h>

#include <Eigen/Geometry>
#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <fstream>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

// Debian's libtinygltf ships the implementation in libtinygltf.so (built with
// stb_image and nlohmann json), so only the declarations are included here:
// no TINYGLTF_IMPLEMENTATION, no stb or json headers needed.
#include <tiny_gltf.h>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "solver_core/model/clip.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"

namespace posewire {
namespace {

// glTF buffers are little-endian and are decoded with memcpy below.
static_assert(std::endian::native == std::endian::little,
              "the glTF reader assumes a little-endian host");

// Upper bound on the elements of one accessor. Bounds checks already tie the
// count to real bytes, except for a sparse accessor without a buffer view
// (implicitly zero-filled), whose count alone would size an allocation.
constexpr size_t kMaxAccessorElements = size_t{1} << 24;

// How far from identity an ancestor transform may be and still count as
// identity (and so not be folded or reported).
constexpr float kIdentityTolerance = 1e-6f;

constexpr uint32_t kGlbMagic = 0x46546C67;      // "glTF"
constexpr uint32_t kGlbJsonChunk = 0x4E4F534A;  // "JSON"
constexpr uint32_t kGlbBinChunk = 0x004E4942;   // "BIN\0"

// ---------------------------------------------------------------------------
// File access.

absl::StatusOr<std::vector<unsigned char>> ReadFileBytes(
    const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    const int error = errno;
    return absl::ErrnoToStatus(error, absl::StrCat(path, ": cannot open"));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a regular file"));
  }
  // tinygltf takes the size as an unsigned int; GLB caps files at 4 GiB too.
  if (static_cast<uint64_t>(st.st_size) >
      std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": ", st.st_size, " bytes is larger than glTF allows (4 GiB)"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int error = errno;
    return absl::ErrnoToStatus(error, absl::StrCat(path, ": cannot open"));
  }
  std::vector<unsigned char> bytes(static_cast<size_t>(st.st_size));
  if (!bytes.empty() && !in.read(reinterpret_cast<char*>(bytes.data()),
                                 static_cast<std::streamsize>(bytes.size()))) {
    return absl::DataLossError(absl::StrCat(path, ": read failed"));
  }
  return bytes;
}

uint32_t ReadU32(const unsigned char* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// Checks the GLB container (header, JSON chunk, optional BIN chunk) so that a
// truncated or foreign file gets a precise message instead of tinygltf's
// generic "Invalid glTF binary.".
absl::Status CheckGlbContainer(const std::string& path,
                               absl::Span<const unsigned char> bytes,
                               std::vector<std::string>* warnings) {
  const size_t size = bytes.size();
  if (size < 12) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": truncated .glb: ", size, " bytes, the header alone needs 12"));
  }
  const uint32_t version = ReadU32(&bytes[4]);
  const uint32_t length = ReadU32(&bytes[8]);
  if (version != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": .glb container version ", version, " (only 2 is supported)"));
  }
  if (length > size) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": truncated .glb: the header declares ", length,
                     " bytes but the file has ", size));
  }
  if (length < size) {
    warnings->push_back(absl::StrCat(size - length,
                                     " bytes after the declared .glb length ",
                                     length, " ignored"));
  }
  if (length < 20) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": truncated .glb: ", length, " bytes leave no JSON chunk"));
  }
  const uint64_t json_length = ReadU32(&bytes[12]);
  if (ReadU32(&bytes[16]) != kGlbJsonChunk) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": .glb: the first chunk is not JSON"));
  }
  const uint64_t json_end = 20 + json_length;
  if (json_length == 0 || json_end > length) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": truncated .glb: JSON chunk of ", json_length,
                     " bytes at offset 20 does not fit in ", length, " bytes"));
  }
  if (json_end < length) {
    if (json_end + 8 > length) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": truncated .glb: incomplete chunk header at offset ",
          json_end));
    }
    const uint64_t bin_length = ReadU32(&bytes[json_end]);
    const uint32_t bin_type = ReadU32(&bytes[json_end + 4]);
    if (bin_type == kGlbBinChunk && json_end + 8 + bin_length > length) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": truncated .glb: BIN chunk of ", bin_length,
                       " bytes at offset ", json_end + 8, " does not fit in ",
                       length, " bytes"));
    }
  }
  return absl::OkStatus();
}

// tinygltf file-system callbacks that only let a glTF reach files inside its
// own directory tree: a service importing user files must not follow
// "../../etc/passwd", and tinygltf would otherwise also search the current
// working directory.
struct FsPolicy {
  std::string prefix;  // "<base dir>/"
  // False for bytes parsed from memory: they have no directory, so no
  // external URI is followed at all.
  bool allow_files = true;
};

bool InsideBase(const std::string& path, const FsPolicy& policy) {
  if (!policy.allow_files) return false;
  if (!absl::StartsWith(path, policy.prefix)) return false;
  absl::string_view rest(path);
  rest.remove_prefix(policy.prefix.size());
  for (absl::string_view part : absl::StrSplit(rest, absl::ByAnyChar("/\\"))) {
    if (part == "..") return false;
  }
  return true;
}

bool FsFileExists(const std::string& path, void* user) {
  const auto& policy = *static_cast<const FsPolicy*>(user);
  struct stat st;
  return InsideBase(path, policy) && ::stat(path.c_str(), &st) == 0 &&
         S_ISREG(st.st_mode);
}

std::string FsExpandFilePath(const std::string& path, void*) { return path; }

bool FsReadWholeFile(std::vector<unsigned char>* out, std::string* err,
                     const std::string& path, void* user) {
  const auto& policy = *static_cast<const FsPolicy*>(user);
  if (!InsideBase(path, policy)) {
    if (err) *err += "outside the glTF file's directory";
    return false;
  }
  absl::StatusOr<std::vector<unsigned char>> bytes = ReadFileBytes(path);
  if (!bytes.ok()) {
    if (err) *err += std::string(bytes.status().message());
    return false;
  }
  *out = *std::move(bytes);
  return true;
}

bool FsWriteWholeFile(std::string* err, const std::string&,
                      const std::vector<unsigned char>&, void*) {
  if (err) *err += "writing is disabled";
  return false;
}

// Images are irrelevant to a skeleton: skip decoding them entirely (faster,
// and no image codec ever sees untrusted bytes).
bool SkipImage(tinygltf::Image*, const int, std::string*, std::string*, int,
               int, const unsigned char*, int, void*) {
  return true;
}

void AppendLines(absl::string_view text, absl::string_view prefix,
                 std::vector<std::string>* out) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (!line.empty()) out->push_back(absl::StrCat(prefix, line));
  }
}

// Parses `bytes` (the content of `path`, or of an in-memory source named
// `path` when `policy.allow_files` is false) into a tinygltf model.
absl::StatusOr<tinygltf::Model> LoadModel(const std::string& path,
                                          absl::Span<const unsigned char> bytes,
                                          const FsPolicy& policy,
                                          const std::string& base_dir,
                                          std::vector<std::string>* warnings) {
  if (bytes.size() > std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": ", bytes.size(), " bytes is larger than glTF allows (4 GiB)"));
  }

  const bool binary = bytes.size() >= 4 && ReadU32(bytes.data()) == kGlbMagic;
  if (binary) {
    if (absl::Status s = CheckGlbContainer(path, bytes, warnings); !s.ok()) {
      return s;
    }
  } else {
    if (absl::EndsWith(absl::AsciiStrToLower(path), ".glb")) {
      return absl::InvalidArgumentError(
          absl::StrCat(path,
                       ": not a binary glTF: the file does not start with the "
                       "'glTF' magic"));
    }
    size_t first = 0;
    if (bytes.size() >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB &&
        bytes[2] == 0xBF) {
      first = 3;  // UTF-8 byte order mark
    }
    while (first < bytes.size() && absl::ascii_isspace(bytes[first])) ++first;
    if (first == bytes.size() || bytes[first] != '{') {
      return absl::InvalidArgumentError(absl::StrCat(
          path,
          ": not a glTF file: neither the binary 'glTF' magic nor a "
          "JSON object"));
    }
  }

  FsPolicy callback_policy = policy;  // tinygltf wants a mutable pointer
  tinygltf::TinyGLTF loader;
  loader.SetImageLoader(&SkipImage, nullptr);
  loader.SetFsCallbacks(
      tinygltf::FsCallbacks{&FsFileExists, &FsExpandFilePath, &FsReadWholeFile,
                            &FsWriteWholeFile, &callback_policy});
  tinygltf::Model model;
  std::string err;
  std::string warn;
  bool ok = false;
  // tinygltf reports through strings but its JSON layer and containers can
  // throw; nothing may escape this reader.
  try {
    const auto size = static_cast<unsigned int>(bytes.size());
    ok = binary
             ? loader.LoadBinaryFromMemory(&model, &err, &warn, bytes.data(),
                                           size, base_dir)
             : loader.LoadASCIIFromString(
                   &model, &err, &warn,
                   reinterpret_cast<const char*>(bytes.data()), size, base_dir);
  } catch (const std::exception& e) {
    ok = false;
    err = e.what();
  } catch (...) {
    ok = false;
    err = "unknown exception in tinygltf";
  }
  // One line: tinygltf separates its findings with newlines (or nothing).
  const std::string detail = absl::StrJoin(
      absl::StrSplit(absl::StripAsciiWhitespace(err), '\n', absl::SkipEmpty()),
      "; ");
  if (!ok) {
    if (absl::StrContains(detail, "json.exception") ||
        absl::StrContains(detail, "parse_error") ||
        absl::StrContains(detail, "Failed to parse JSON")) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": JSON syntax error: ", detail));
    }
    if (absl::StrContains(detail, "File not found")) {
      return absl::NotFoundError(
          absl::StrCat(path,
                       ": external file missing (URIs must name a file in the "
                       "glTF file's directory): ",
                       detail));
    }
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a valid glTF 2.0 file: ",
                     detail.empty() ? "tinygltf failed" : detail));
  }
  // tinygltf also puts non-fatal findings (e.g. a missing optional property
  // it treats as required) in `err` while succeeding.
  AppendLines(err, "tinygltf: ", warnings);
  AppendLines(warn, "tinygltf: ", warnings);
  if (!absl::StartsWith(model.asset.version, "2.")) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": glTF version '", model.asset.version,
                     "' is not supported (glTF 2.x only)"));
  }
  return model;
}

// ---------------------------------------------------------------------------
// Accessor decoding.

int ComponentCount(int type) {
  switch (type) {
    case TINYGLTF_TYPE_SCALAR:
      return 1;
    case TINYGLTF_TYPE_VEC2:
      return 2;
    case TINYGLTF_TYPE_VEC3:
      return 3;
    case TINYGLTF_TYPE_VEC4:
      return 4;
    case TINYGLTF_TYPE_MAT2:
      return 4;
    case TINYGLTF_TYPE_MAT3:
      return 9;
    case TINYGLTF_TYPE_MAT4:
      return 16;
  }
  return 0;
}

const char* TypeName(int type) {
  switch (type) {
    case TINYGLTF_TYPE_SCALAR:
      return "SCALAR";
    case TINYGLTF_TYPE_VEC2:
      return "VEC2";
    case TINYGLTF_TYPE_VEC3:
      return "VEC3";
    case TINYGLTF_TYPE_VEC4:
      return "VEC4";
    case TINYGLTF_TYPE_MAT2:
      return "MAT2";
    case TINYGLTF_TYPE_MAT3:
      return "MAT3";
    case TINYGLTF_TYPE_MAT4:
      return "MAT4";
  }
  return "unknown";
}

// Bytes per component for the types animation data may use (float, and the
// 8/16-bit integers of quantised or normalised data); 0 for the rest.
int ComponentSize(int component_type) {
  switch (component_type) {
    case TINYGLTF_COMPONENT_TYPE_BYTE:
    case TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE:
      return 1;
    case TINYGLTF_COMPONENT_TYPE_SHORT:
    case TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT:
      return 2;
    case TINYGLTF_COMPONENT_TYPE_FLOAT:
      return 4;
  }
  return 0;
}

template <typename T>
T Load(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Component decoding, normalised integers as the glTF 2.0 specification
// (section 3.11, "Animations") defines them: max(c / 127, -1) and so on.
float DecodeComponent(const unsigned char* p, int component_type,
                      bool normalized) {
  switch (component_type) {
    case TINYGLTF_COMPONENT_TYPE_FLOAT:
      return Load<float>(p);
    case TINYGLTF_COMPONENT_TYPE_BYTE: {
      const float c = Load<int8_t>(p);
      return normalized ? std::max(c / 127.0f, -1.0f) : c;
    }
    case TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE: {
      const float c = Load<uint8_t>(p);
      return normalized ? c / 255.0f : c;
    }
    case TINYGLTF_COMPONENT_TYPE_SHORT: {
      const float c = Load<int16_t>(p);
      return normalized ? std::max(c / 32767.0f, -1.0f) : c;
    }
    case TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT: {
      const float c = Load<uint16_t>(p);
      return normalized ? c / 65535.0f : c;
    }
  }
  return 0.0f;  // unreachable: callers check ComponentSize first
}

// True when [offset, offset + count * stride - stride + element) fits in
// `size` bytes, without overflowing.
bool RangeFits(uint64_t offset, uint64_t count, uint64_t stride,
               uint64_t element, uint64_t size) {
  if (count == 0) return offset <= size;
  if (offset > size) return false;
  // count <= kMaxAccessorElements and stride, element <= 256: no overflow.
  return (count - 1) * stride + element <= size - offset;
}

bool IsIdentity(const Transform& t) {
  return t.translation.cwiseAbs().maxCoeff() <= kIdentityTolerance &&
         (t.scale - Eigen::Vector3f::Ones()).cwiseAbs().maxCoeff() <=
             kIdentityTolerance &&
         std::fabs(std::fabs(t.rotation.w()) - 1.0f) <= kIdentityTolerance;
}

bool HasUniformScale(const Eigen::Vector3f& s) {
  const float m = s.cwiseAbs().maxCoeff();
  return (s - Eigen::Vector3f::Constant(s.x())).cwiseAbs().maxCoeff() <=
         1e-5f * std::max(m, 1.0f);
}

enum class Path { kTranslation = 0, kRotation = 1, kScale = 2 };

// ---------------------------------------------------------------------------
// The import proper: tinygltf's model, whose indices are all unchecked, into
// a Skeleton and Clips.

class Importer {
 public:
  Importer(const std::string& path, const tinygltf::Model& model,
           const GltfReadOptions& options, ImportedAsset* out)
      : path_(path), model_(model), options_(options), out_(out) {}

  absl::Status Run() {
    if (!(options_.max_rotation_norm_error >= 0.0f) ||
        !std::isfinite(options_.max_rotation_norm_error)) {
      return Fail(absl::StrCat("options.max_rotation_norm_error ",
                               options_.max_rotation_norm_error,
                               " must be finite and >= 0"));
    }
    if (absl::Status s = BuildNodeForest(); !s.ok()) return s;
    if (absl::Status s = SelectJoints(); !s.ok()) return s;
    if (absl::Status s = BuildSkeleton(); !s.ok()) return s;
    CollectEndSites();
    out_->clips.reserve(model_.animations.size());
    for (size_t a = 0; a < model_.animations.size(); ++a) {
      if (absl::Status s = ReadAnimation(static_cast<int>(a)); !s.ok()) {
        return s;
      }
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Fail(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": ", what));
  }

  void Warn(std::string what) { out_->warnings.push_back(std::move(what)); }

  int num_nodes() const { return static_cast<int>(model_.nodes.size()); }

  std::string NodeLabel(int node) const {
    const std::string& name = model_.nodes[node].name;
    return name.empty() ? absl::StrCat("node ", node, " (unnamed)")
                        : absl::StrCat("node ", node, " '", name, "'");
  }

  // Parent links from the children lists, then a depth-first pre-order of
  // the whole node forest. Every node must have at most one parent and be
  // reachable from a root; otherwise the "hierarchy" has a cycle or a node
  // shared by two subtrees, which glTF forbids.
  absl::Status BuildNodeForest() {
    const int n = num_nodes();
    node_parent_.assign(n, -1);
    for (int p = 0; p < n; ++p) {
      const std::vector<int>& children = model_.nodes[p].children;
      for (size_t k = 0; k < children.size(); ++k) {
        const int c = children[k];
        if (c < 0 || c >= n) {
          return Fail(absl::StrCat(NodeLabel(p), " children[", k, "]: node ", c,
                                   " does not exist (the file has ", n,
                                   " nodes)"));
        }
        if (c == p) {
          return Fail(absl::StrCat(NodeLabel(p),
                                   " lists itself as a child (a cycle in the "
                                   "node hierarchy)"));
        }
        if (node_parent_[c] != -1) {
          return Fail(absl::StrCat(
              NodeLabel(c), " is reachable twice: it is a child of both ",
              NodeLabel(node_parent_[c]), " and ", NodeLabel(p),
              " (glTF nodes have at most one parent)"));
        }
        node_parent_[c] = p;
      }
    }

    // The default scene's roots come first so that its joints lead.
    std::vector<int> roots;
    std::vector<char> is_scene_root(n, 0);
    scene_ = -1;
    if (!model_.scenes.empty()) {
      scene_ = model_.defaultScene < 0 ? 0 : model_.defaultScene;
      if (scene_ >= static_cast<int>(model_.scenes.size())) {
        return Fail(absl::StrCat("default scene ", scene_,
                                 " does not exist (the file has ",
                                 model_.scenes.size(), " scenes)"));
      }
      const std::vector<int>& scene_nodes = model_.scenes[scene_].nodes;
      for (size_t k = 0; k < scene_nodes.size(); ++k) {
        const int r = scene_nodes[k];
        if (r < 0 || r >= n) {
          return Fail(absl::StrCat("scene ", scene_, " nodes[", k, "]: node ",
                                   r, " does not exist (the file has ", n,
                                   " nodes)"));
        }
        if (node_parent_[r] != -1) {
          return Fail(absl::StrCat(
              "scene ", scene_, " nodes[", k, "]: ", NodeLabel(r),
              " is reachable twice: it is a scene root and a child of ",
              NodeLabel(node_parent_[r])));
        }
        if (is_scene_root[r]) {
          return Fail(absl::StrCat("scene ", scene_, " nodes[", k,
                                   "]: ", NodeLabel(r),
                                   " is reachable twice: listed twice"));
        }
        is_scene_root[r] = 1;
        roots.push_back(r);
      }
    }
    const size_t scene_roots = roots.size();
    for (int r = 0; r < n; ++r) {
      if (node_parent_[r] == -1 && !is_scene_root[r]) roots.push_back(r);
    }

    in_scene_.assign(n, scene_ < 0 ? 1 : 0);
    preorder_.clear();
    preorder_.reserve(n);
    std::vector<char> visited(n, 0);
    std::vector<int> stack;
    for (size_t k = 0; k < roots.size(); ++k) {
      stack.push_back(roots[k]);
      while (!stack.empty()) {
        const int node = stack.back();
        stack.pop_back();
        // Unreachable given one parent per node; kept as a guard so that a
        // logic slip can never loop forever.
        if (visited[node]) {
          return Fail(absl::StrCat(NodeLabel(node), " is reachable twice"));
        }
        visited[node] = 1;
        if (k < scene_roots) in_scene_[node] = 1;
        preorder_.push_back(node);
        const std::vector<int>& children = model_.nodes[node].children;
        for (auto it = children.rbegin(); it != children.rend(); ++it) {
          stack.push_back(*it);
        }
      }
    }
    for (int node = 0; node < n; ++node) {
      if (!visited[node]) {
        return Fail(absl::StrCat(
            NodeLabel(node),
            " is part of a cycle in the node hierarchy (no root reaches it)"));
      }
    }
    return absl::OkStatus();
  }

  absl::Status SelectJoints() {
    const int n = num_nodes();
    const int num_skins = static_cast<int>(model_.skins.size());
    std::vector<char> is_joint(n, 0);
    if (num_skins == 0) {
      if (options_.skin >= 0) {
        return Fail(absl::StrCat("options.skin = ", options_.skin,
                                 " but the file has no skins"));
      }
      int count = 0;
      for (int node = 0; node < n; ++node) {
        is_joint[node] = in_scene_[node];
        count += in_scene_[node];
      }
      if (count == 0) {
        return Fail(
            "no skins and no nodes in the default scene: no skeleton "
            "to import");
      }
      Warn(scene_ < 0
               ? absl::StrCat("no skins: all ", count, " nodes are joints")
               : absl::StrCat("no skins: the ", count, " nodes of scene ",
                              scene_, " are joints"));
    } else {
      if (options_.skin < -1 || options_.skin >= num_skins) {
        return Fail(absl::StrCat("options.skin = ", options_.skin,
                                 " is out of range (the file has ", num_skins,
                                 " skins; -1 takes them all)"));
      }
      const int first = options_.skin < 0 ? 0 : options_.skin;
      const int last = options_.skin < 0 ? num_skins : options_.skin + 1;
      for (int s = first; s < last; ++s) {
        const std::vector<int>& joints = model_.skins[s].joints;
        if (joints.empty()) {
          return Fail(absl::StrCat("skin ", s, " has no joints"));
        }
        for (size_t k = 0; k < joints.size(); ++k) {
          const int node = joints[k];
          if (node < 0 || node >= n) {
            return Fail(absl::StrCat("skin ", s, " joints[", k, "]: node ",
                                     node, " does not exist (the file has ", n,
                                     " nodes)"));
          }
          is_joint[node] = 1;
        }
      }
      if (options_.skin >= 0 && num_skins > 1) {
        Warn(absl::StrCat("skin ", options_.skin, " of ", num_skins,
                          " imported (options.skin); the other skins' joints "
                          "are not joints here"));
      }
    }

    joint_of_node_.assign(n, -1);
    joint_nodes_.clear();
    for (int node : preorder_) {
      if (is_joint[node]) {
        joint_of_node_[node] = static_cast<int>(joint_nodes_.size());
        joint_nodes_.push_back(node);
      }
    }
    if (joint_nodes_.size() > static_cast<size_t>(kMaxSkeletonJoints)) {
      return Fail(absl::StrCat(joint_nodes_.size(),
                               " joints exceed the maximum of ",
                               kMaxSkeletonJoints));
    }
    return absl::OkStatus();
  }

  // A node's local transform: TRS, or the matrix decomposed into TRS.
  absl::StatusOr<Transform> NodeTransform(int node_index) const {
    const tinygltf::Node& node = model_.nodes[node_index];
    Transform t;
    if (!node.matrix.empty()) return MatrixTransform(node_index);
    auto check = [&](const std::vector<double>& v, size_t size,
                     absl::string_view field) -> absl::Status {
      if (!v.empty() && v.size() != size) {
        return Fail(absl::StrCat(NodeLabel(node_index), " ", field, ": ",
                                 v.size(), " numbers (expected ", size, ")"));
      }
      for (double x : v) {
        if (!std::isfinite(x) ||
            std::fabs(x) > std::numeric_limits<float>::max()) {
          return Fail(absl::StrCat(NodeLabel(node_index), " ", field,
                                   ": non-finite value ", x));
        }
      }
      return absl::OkStatus();
    };
    if (absl::Status s = check(node.translation, 3, "translation"); !s.ok()) {
      return s;
    }
    if (absl::Status s = check(node.rotation, 4, "rotation"); !s.ok()) {
      return s;
    }
    if (absl::Status s = check(node.scale, 3, "scale"); !s.ok()) return s;
    if (!node.translation.empty()) {
      t.translation = Eigen::Vector3d(node.translation[0], node.translation[1],
                                      node.translation[2])
                          .cast<float>();
    }
    if (!node.rotation.empty()) {
      const Eigen::Quaterniond q(node.rotation[3], node.rotation[0],
                                 node.rotation[1], node.rotation[2]);
      const double norm = q.norm();
      if (!(std::fabs(norm - 1.0) <= options_.max_rotation_norm_error)) {
        return Fail(absl::StrCat(NodeLabel(node_index), " rotation: norm ",
                                 norm, " is not 1 (max_rotation_norm_error ",
                                 options_.max_rotation_norm_error, ")"));
      }
      t.rotation = Eigen::Quaterniond(q.coeffs() / norm).cast<float>();
    }
    if (!node.scale.empty()) {
      t.scale = Eigen::Vector3d(node.scale[0], node.scale[1], node.scale[2])
                    .cast<float>();
    }
    return t;
  }

  // glTF stores a column-major affine matrix that must be decomposable into
  // T * R * S. With L its 3x3 block, the column norms of L are the scales and
  // L * S^-1 must be a proper rotation; anything else (shear, mirror, zero
  // scale, projection) has no TRS form and is refused rather than bent.
  absl::StatusOr<Transform> MatrixTransform(int node_index) const {
    const std::vector<double>& m = model_.nodes[node_index].matrix;
    const std::string label = absl::StrCat(NodeLabel(node_index), " matrix");
    if (m.size() != 16) {
      return Fail(
          absl::StrCat(label, ": ", m.size(), " numbers (expected 16)"));
    }
    for (double x : m) {
      if (!std::isfinite(x) ||
          std::fabs(x) > std::numeric_limits<float>::max()) {
        return Fail(absl::StrCat(label, ": non-finite value ", x));
      }
    }
    const Eigen::Map<const Eigen::Matrix4d> mat(m.data());
    const Eigen::RowVector4d last = mat.row(3);
    if ((last - Eigen::RowVector4d(0, 0, 0, 1)).cwiseAbs().maxCoeff() > 1e-6) {
      return Fail(absl::StrCat(label, ": last row (", last(0), ", ", last(1),
                               ", ", last(2), ", ", last(3),
                               ") is not (0, 0, 0, 1): a projective matrix "
                               "has no TRS form"));
    }
    const Eigen::Matrix3d linear = mat.topLeftCorner<3, 3>();
    const double det = linear.determinant();
    const Eigen::Vector3d scale(linear.col(0).norm(), linear.col(1).norm(),
                                linear.col(2).norm());
    if (!(scale.minCoeff() > 1e-12)) {
      return Fail(absl::StrCat(label,
                               ": a zero scale makes it singular; "
                               "write it as TRS instead"));
    }
    if (det < 0.0) {
      return Fail(absl::StrCat(label, ": negative determinant ", det,
                               " (a mirror), which a TRS transform with "
                               "positive scale cannot represent"));
    }
    const Eigen::Matrix3d rotation = linear * scale.cwiseInverse().asDiagonal();
    const double shear =
        (rotation.transpose() * rotation - Eigen::Matrix3d::Identity())
            .cwiseAbs()
            .maxCoeff();
    if (shear > 1e-4) {
      return Fail(absl::StrCat(label,
                               ": has shear (columns not orthogonal, "
                               "error ",
                               shear, "), which TRS cannot represent"));
    }
    Transform t;
    t.translation = mat.topRightCorner<3, 1>().cast<float>();
    t.rotation = Eigen::Quaterniond(rotation).normalized().cast<float>();
    t.scale = scale.cast<float>();
    return t;
  }

  absl::Status BuildSkeleton() {
    const int n = num_nodes();
    const int num_joints = static_cast<int>(joint_nodes_.size());

    // For each node, the composed transform of the non-joint nodes from just
    // below its nearest joint ancestor down to itself (only where a joint
    // lies below, so unrelated nodes are never decoded). Filled in pre-order,
    // so a parent's entry is ready before its children's: O(nodes).
    std::vector<char> has_joint_below(n, 0);
    for (auto it = preorder_.rbegin(); it != preorder_.rend(); ++it) {
      const int node = *it;
      const int p = node_parent_[node];
      if (p >= 0 && (has_joint_below[node] || joint_of_node_[node] >= 0)) {
        has_joint_below[p] = 1;
      }
    }
    std::vector<Transform> chain(n);
    std::vector<char> chain_moves(n, 0);  // chain differs from identity
    std::vector<int> nearest_joint(n, kNoParent);

    SkeletonDesc desc;
    desc.joint_names.resize(num_joints);
    desc.parents.resize(num_joints);
    desc.rest_pose.resize(num_joints);
    fold_.assign(num_joints, Transform::Identity());
    folded_.assign(num_joints, 0);
    folded_node_.assign(n, 0);

    for (int node : preorder_) {
      const int p = node_parent_[node];
      Transform above = Transform::Identity();
      bool above_moves = false;
      if (p >= 0) {
        nearest_joint[node] =
            joint_of_node_[p] >= 0 ? joint_of_node_[p] : nearest_joint[p];
        if (joint_of_node_[p] < 0) {
          above = chain[p];
          above_moves = chain_moves[p];
        }
      }
      const int joint = joint_of_node_[node];
      if (joint < 0) {
        if (!has_joint_below[node]) continue;
        absl::StatusOr<Transform> t = NodeTransform(node);
        if (!t.ok()) return t.status();
        chain[node] = Combine(above, *t);
        chain_moves[node] = above_moves || !IsIdentity(*t);
        continue;
      }
      absl::StatusOr<Transform> rest = NodeTransform(node);
      if (!rest.ok()) return rest.status();
      desc.parents[joint] = nearest_joint[node];
      desc.rest_pose[joint] = *rest;
      if (above_moves) {
        std::vector<std::string> names;
        for (int a = p; a >= 0 && joint_of_node_[a] < 0; a = node_parent_[a]) {
          if (names.size() == 3) {
            names.push_back("...");
            break;
          }
          names.push_back(NodeLabel(a));
        }
        if (options_.fold_non_joint_ancestors) {
          fold_[joint] = above;
          folded_[joint] = 1;
          desc.rest_pose[joint] = Combine(above, *rest);
          for (int a = p; a >= 0 && joint_of_node_[a] < 0;
               a = node_parent_[a]) {
            if (folded_node_[a]) break;  // the rest of the chain is marked
            folded_node_[a] = 1;
          }
          Warn(absl::StrCat("joint ", joint, " (", NodeLabel(node),
                            "): the transform of its non-joint ancestor(s) ",
                            absl::StrJoin(names, ", "),
                            " is folded into its rest pose and keys"));
          if (!HasUniformScale(above.scale)) {
            Warn(absl::StrCat(
                "joint ", joint, " (", NodeLabel(node),
                "): the folded ancestor scale (", above.scale.x(), ", ",
                above.scale.y(), ", ", above.scale.z(),
                ") is not uniform; composed per axis as TRS (no shear)"));
          }
        } else {
          Warn(absl::StrCat("joint ", joint, " (", NodeLabel(node),
                            "): the transform of its non-joint ancestor(s) ",
                            absl::StrJoin(names, ", "),
                            " is dropped (fold_non_joint_ancestors = false)"));
        }
      }
    }

    // Names: a node's own name when it is set and not already taken by an
    // earlier joint; otherwise "node_<index>", suffixed until unique.
    std::set<std::string> taken;
    std::vector<char> keeps_name(num_joints, 0);
    for (int j = 0; j < num_joints; ++j) {
      const std::string& name = model_.nodes[joint_nodes_[j]].name;
      if (!name.empty() && taken.insert(name).second) keeps_name[j] = 1;
    }
    for (int j = 0; j < num_joints; ++j) {
      const int node = joint_nodes_[j];
      const std::string& name = model_.nodes[node].name;
      if (keeps_name[j]) {
        desc.joint_names[j] = name;
        continue;
      }
      std::string candidate = absl::StrCat("node_", node);
      for (int k = 2; taken.count(candidate) != 0; ++k) {
        candidate = absl::StrCat("node_", node, "_", k);
      }
      taken.insert(candidate);
      desc.joint_names[j] = candidate;
      Warn(name.empty()
               ? absl::StrCat("joint ", j, ": node ", node,
                              " has no name; named '", candidate, "'")
               : absl::StrCat(
                     "joint ", j, ": node ", node, " repeats the name '", name,
                     "' of an earlier joint; named '", candidate, "'"));
    }

    absl::StatusOr<Skeleton> skeleton = Skeleton::Create(std::move(desc));
    if (!skeleton.ok()) return Fail(skeleton.status().message());
    out_->skeleton = *std::move(skeleton);
    return absl::OkStatus();
  }

  // Non-joint leaves hanging off a joint with nothing to draw (Blender's
  // "<bone>_end" tips) mark where a bone ends: IK wants them as effectors.
  void CollectEndSites() {
    for (int node : preorder_) {
      const int p = node_parent_[node];
      if (joint_of_node_[node] >= 0 || p < 0 || joint_of_node_[p] < 0) {
        continue;
      }
      const tinygltf::Node& n = model_.nodes[node];
      if (!n.children.empty() || n.mesh >= 0 || n.camera >= 0 || n.skin >= 0) {
        continue;
      }
      absl::StatusOr<Transform> t = NodeTransform(node);
      if (!t.ok()) {
        Warn(absl::StrCat("end site ", NodeLabel(node),
                          " skipped: ", t.status().message()));
        continue;
      }
      out_->end_sites.push_back(
          EndSite{.joint = joint_of_node_[p], .offset = t->translation});
    }
  }

  // A bounds-checked view of buffer view `index`.
  absl::StatusOr<absl::Span<const unsigned char>> BufferViewBytes(
      int index, absl::string_view what) const {
    if (index < 0 || index >= static_cast<int>(model_.bufferViews.size())) {
      return Fail(absl::StrCat(what, ": buffer view ", index,
                               " does not exist (the file has ",
                               model_.bufferViews.size(), ")"));
    }
    const tinygltf::BufferView& view = model_.bufferViews[index];
    if (view.buffer < 0 ||
        view.buffer >= static_cast<int>(model_.buffers.size())) {
      return Fail(absl::StrCat(what, ": buffer view ", index, ": buffer ",
                               view.buffer, " does not exist (the file has ",
                               model_.buffers.size(), ")"));
    }
    if (view.extensions.count("EXT_meshopt_compression") != 0) {
      return Fail(absl::StrCat(what, ": buffer view ", index,
                               " is compressed with EXT_meshopt_compression, "
                               "which this reader does not decode"));
    }
    const std::vector<unsigned char>& data = model_.buffers[view.buffer].data;
    if (view.byteOffset > data.size() ||
        view.byteLength > data.size() - view.byteOffset) {
      return Fail(absl::StrCat(what, ": buffer view ", index, " bytes [",
                               view.byteOffset, ", +", view.byteLength,
                               ") exceed buffer ", view.buffer, " (",
                               data.size(), " bytes)"));
    }
    return absl::MakeConstSpan(data.data() + view.byteOffset, view.byteLength);
  }

  // Decodes accessor `index` into `components` floats per element. `what`
  // says who reads it ("animation 0 'Walk' channel 3 (...): input").
  absl::Status ReadAccessor(int index, absl::string_view what, int components,
                            bool float_only, std::vector<float>* out,
                            size_t* count_out) const {
    if (index < 0 || index >= static_cast<int>(model_.accessors.size())) {
      return Fail(absl::StrCat(what, " accessor ", index,
                               " does not exist (the file has ",
                               model_.accessors.size(), " accessors)"));
    }
    const tinygltf::Accessor& acc = model_.accessors[index];
    const std::string label = absl::StrCat(what, " accessor ", index);
    if (ComponentCount(acc.type) != components) {
      return Fail(absl::StrCat(
          label, ": type ", TypeName(acc.type), ", expected ",
          components == 1 ? "SCALAR" : absl::StrCat("VEC", components)));
    }
    const int component_size = ComponentSize(acc.componentType);
    if (component_size == 0 ||
        (float_only && acc.componentType != TINYGLTF_COMPONENT_TYPE_FLOAT)) {
      return Fail(absl::StrCat(
          label, ": component type ", acc.componentType,
          " is not allowed here (",
          float_only ? "FLOAT only" : "FLOAT or 8/16-bit integers", ")"));
    }
    const size_t count = acc.count;
    if (count == 0) return Fail(absl::StrCat(label, ": count is 0"));
    if (count > kMaxAccessorElements) {
      return Fail(absl::StrCat(label, ": count ", count,
                               " exceeds the reader's limit of ",
                               kMaxAccessorElements));
    }
    const size_t element = static_cast<size_t>(component_size) * components;
    out->assign(count * components, 0.0f);  // no buffer view: zeros (spec)

    auto decode = [&](const unsigned char* src, size_t e) {
      for (int c = 0; c < components; ++c) {
        (*out)[e * components + c] =
            DecodeComponent(src + static_cast<size_t>(c) * component_size,
                            acc.componentType, acc.normalized);
      }
    };

    if (acc.bufferView >= 0) {
      absl::StatusOr<absl::Span<const unsigned char>> view =
          BufferViewBytes(acc.bufferView, label);
      if (!view.ok()) return view.status();
      const size_t declared = model_.bufferViews[acc.bufferView].byteStride;
      const size_t stride = declared == 0 ? element : declared;
      if (stride < element) {
        return Fail(absl::StrCat(
            label, ": buffer view ", acc.bufferView, " byteStride ", stride,
            " is smaller than an element (", element, " bytes)"));
      }
      if (!RangeFits(acc.byteOffset, count, stride, element, view->size())) {
        return Fail(absl::StrCat(
            label, ": ", count, " elements of ", element, " bytes (stride ",
            stride, ") from offset ", acc.byteOffset,
            " run past the end of buffer view ", acc.bufferView, " (",
            view->size(), " bytes): out of bounds"));
      }
      const unsigned char* base = view->data() + acc.byteOffset;
      for (size_t e = 0; e < count; ++e) decode(base + e * stride, e);
    } else if (!acc.sparse.isSparse) {
      return Fail(absl::StrCat(label, ": no buffer view and no sparse data"));
    }

    if (acc.sparse.isSparse) {
      const auto& sparse = acc.sparse;
      const std::string slabel = absl::StrCat(label, " sparse");
      if (sparse.count < 1 || static_cast<size_t>(sparse.count) > count) {
        return Fail(absl::StrCat(slabel, ": count ", sparse.count,
                                 " is not in [1, ", count, "]"));
      }
      const size_t scount = static_cast<size_t>(sparse.count);
      int index_size = 0;
      switch (sparse.indices.componentType) {
        case TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE:
          index_size = 1;
          break;
        case TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT:
          index_size = 2;
          break;
        case TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT:
          index_size = 4;
          break;
        default:
          return Fail(absl::StrCat(slabel, ": index component type ",
                                   sparse.indices.componentType,
                                   " is not an unsigned integer type"));
      }
      absl::StatusOr<absl::Span<const unsigned char>> indices = BufferViewBytes(
          sparse.indices.bufferView, absl::StrCat(slabel, " indices"));
      if (!indices.ok()) return indices.status();
      absl::StatusOr<absl::Span<const unsigned char>> values = BufferViewBytes(
          sparse.values.bufferView, absl::StrCat(slabel, " values"));
      if (!values.ok()) return values.status();
      if (sparse.indices.byteOffset < 0 ||
          !RangeFits(static_cast<uint64_t>(sparse.indices.byteOffset), scount,
                     index_size, index_size, indices->size())) {
        return Fail(absl::StrCat(slabel, ": ", scount, " indices from offset ",
                                 sparse.indices.byteOffset,
                                 " run past buffer view ",
                                 sparse.indices.bufferView, ": out of bounds"));
      }
      if (sparse.values.byteOffset < 0 ||
          !RangeFits(static_cast<uint64_t>(sparse.values.byteOffset), scount,
                     element, element, values->size())) {
        return Fail(absl::StrCat(slabel, ": ", scount, " values from offset ",
                                 sparse.values.byteOffset,
                                 " run past buffer view ",
                                 sparse.values.bufferView, ": out of bounds"));
      }
      const unsigned char* ip = indices->data() + sparse.indices.byteOffset;
      const unsigned char* vp = values->data() + sparse.values.byteOffset;
      uint64_t previous = 0;
      for (size_t s = 0; s < scount; ++s) {
        const unsigned char* p = ip + s * index_size;
        const uint64_t i = index_size == 1   ? Load<uint8_t>(p)
                           : index_size == 2 ? Load<uint16_t>(p)
                                             : Load<uint32_t>(p);
        if (i >= count || (s > 0 && i <= previous)) {
          return Fail(absl::StrCat(slabel, ": index ", s, " = ", i,
                                   " is out of range or not increasing"));
        }
        previous = i;
        decode(vp + s * element, static_cast<size_t>(i));
      }
    }
    *count_out = count;
    return absl::OkStatus();
  }

  absl::Status ReadAnimation(int a) {
    const tinygltf::Animation& anim = model_.animations[a];
    Clip clip;
    clip.name = anim.name.empty() ? absl::StrCat("animation_", a) : anim.name;
    const int num_joints = out_->skeleton.num_joints();
    clip.tracks.resize(num_joints);
    const std::string alabel =
        absl::StrCat("animation ", a, " '", clip.name, "'");
    std::vector<std::array<int, 3>> channel_of(num_joints, {-1, -1, -1});
    std::vector<std::string> ignored;
    int imported = 0;

    for (size_t c = 0; c < anim.channels.size(); ++c) {
      const tinygltf::AnimationChannel& channel = anim.channels[c];
      const std::string& target = channel.target_path;
      if (target == "weights") continue;  // morph targets: not a pose
      Path path;
      if (target == "translation") {
        path = Path::kTranslation;
      } else if (target == "rotation") {
        path = Path::kRotation;
      } else if (target == "scale") {
        path = Path::kScale;
      } else {
        Warn(absl::StrCat(alabel, " channel ", c, ": target path '", target,
                          "' is not supported; channel ignored"));
        continue;
      }
      const int node = channel.target_node;
      if (node < 0) {
        Warn(absl::StrCat(alabel, " channel ", c,
                          ": no target node (an extension's target?); "
                          "channel ignored"));
        continue;
      }
      if (node >= num_nodes()) {
        return Fail(absl::StrCat(alabel, " channel ", c, ": target node ", node,
                                 " does not exist (the file has ", num_nodes(),
                                 " nodes)"));
      }
      const std::string clabel = absl::StrCat(
          alabel, " channel ", c, " (", NodeLabel(node), " ", target, ")");
      const int joint = joint_of_node_[node];
      if (joint < 0) {
        ignored.push_back(absl::StrCat(NodeLabel(node), " ", target,
                                       folded_node_[node]
                                           ? " (folded into the joints below "
                                             "it: this motion is lost)"
                                           : ""));
        continue;
      }
      int& previous = channel_of[joint][static_cast<int>(path)];
      if (previous >= 0) {
        return Fail(absl::StrCat(clabel, ": channel ", previous,
                                 " already animates this target"));
      }
      previous = static_cast<int>(c);
      if (channel.sampler < 0 ||
          channel.sampler >= static_cast<int>(anim.samplers.size())) {
        return Fail(absl::StrCat(clabel, ": sampler ", channel.sampler,
                                 " does not exist (the animation has ",
                                 anim.samplers.size(), ")"));
      }
      JointTracks& tracks = clip.tracks[joint];
      absl::Status status;
      switch (path) {
        case Path::kTranslation:
          status = ReadVectorTrack(anim.samplers[channel.sampler], clabel,
                                   joint, path, &tracks.translation);
          break;
        case Path::kScale:
          status = ReadVectorTrack(anim.samplers[channel.sampler], clabel,
                                   joint, path, &tracks.scale);
          break;
        case Path::kRotation:
          status = ReadRotationTrack(anim.samplers[channel.sampler], clabel,
                                     joint, &tracks.rotation);
          break;
      }
      if (!status.ok()) return status;
      ++imported;
    }

    float duration = 0.0f;
    for (const JointTracks& t : clip.tracks) {
      if (!t.translation.empty()) {
        duration = std::max(duration, t.translation.times.back());
      }
      if (!t.rotation.empty()) {
        duration = std::max(duration, t.rotation.times.back());
      }
      if (!t.scale.empty()) duration = std::max(duration, t.scale.times.back());
    }
    clip.duration = duration;
    if (!ignored.empty()) {
      const size_t shown = std::min<size_t>(ignored.size(), 4);
      Warn(absl::StrCat(
          alabel, ": ", ignored.size(),
          " channel(s) on non-joint nodes ignored: ",
          absl::StrJoin(ignored.begin(), ignored.begin() + shown, ", "),
          ignored.size() > shown ? ", ..." : ""));
    }
    if (imported == 0) Warn(absl::StrCat(alabel, " animates no joint"));
    if (absl::Status s = clip.Validate(out_->skeleton); !s.ok()) {
      return Fail(absl::StrCat("internal error, imported ", s.message()));
    }
    out_->clips.push_back(std::move(clip));
    return absl::OkStatus();
  }

  // Reads a sampler's input into `times` and checks it: finite, not
  // negative, strictly increasing. Sets the interpolation and the number of
  // output elements expected per key.
  absl::Status ReadSamplerInput(const tinygltf::AnimationSampler& sampler,
                                absl::string_view clabel,
                                std::vector<float>* times,
                                Interpolation* interpolation) const {
    if (sampler.interpolation.empty() || sampler.interpolation == "LINEAR") {
      *interpolation = Interpolation::kLinear;
    } else if (sampler.interpolation == "STEP") {
      *interpolation = Interpolation::kStep;
    } else if (sampler.interpolation == "CUBICSPLINE") {
      *interpolation = Interpolation::kCubicSpline;
    } else {
      return Fail(absl::StrCat(clabel, ": unknown interpolation '",
                               sampler.interpolation,
                               "' (LINEAR, STEP or CUBICSPLINE)"));
    }
    size_t count = 0;
    if (absl::Status s =
            ReadAccessor(sampler.input, absl::StrCat(clabel, ": input"), 1,
                         /*float_only=*/true, times, &count);
        !s.ok()) {
      return s;
    }
    for (size_t k = 0; k < times->size(); ++k) {
      const float t = (*times)[k];
      if (!std::isfinite(t) || t < 0.0f) {
        return Fail(absl::StrCat(clabel, ": key ", k, " time ", t,
                                 " is negative or not finite"));
      }
      if (k > 0 && !(t > (*times)[k - 1])) {
        return Fail(absl::StrCat(clabel, ": key ", k, " time ", t,
                                 " does not increase (previous ",
                                 (*times)[k - 1], ")"));
      }
    }
    return absl::OkStatus();
  }

  absl::Status ReadOutput(const tinygltf::AnimationSampler& sampler,
                          absl::string_view clabel, int components, size_t keys,
                          Interpolation interpolation,
                          std::vector<float>* values) const {
    size_t count = 0;
    if (absl::Status s =
            ReadAccessor(sampler.output, absl::StrCat(clabel, ": output"),
                         components, /*float_only=*/false, values, &count);
        !s.ok()) {
      return s;
    }
    const size_t per_key = interpolation == Interpolation::kCubicSpline ? 3 : 1;
    if (count != keys * per_key) {
      return Fail(absl::StrCat(
          clabel, ": output has ", count, " elements for ", keys, " keys (",
          InterpolationName(interpolation), " needs ", keys * per_key, ")"));
    }
    for (size_t v = 0; v < values->size(); ++v) {
      if (!std::isfinite((*values)[v])) {
        return Fail(absl::StrCat(clabel, ": key ", v / components / per_key,
                                 " has a non-finite value"));
      }
    }
    return absl::OkStatus();
  }

  absl::Status ReadVectorTrack(const tinygltf::AnimationSampler& sampler,
                               absl::string_view clabel, int joint, Path path,
                               Track<Eigen::Vector3f>* track) const {
    if (absl::Status s = ReadSamplerInput(sampler, clabel, &track->times,
                                          &track->interpolation);
        !s.ok()) {
      return s;
    }
    std::vector<float> raw;
    if (absl::Status s = ReadOutput(sampler, clabel, 3, track->times.size(),
                                    track->interpolation, &raw);
        !s.ok()) {
      return s;
    }
    const bool cubic = track->interpolation == Interpolation::kCubicSpline;
    const Transform& fold = fold_[joint];
    track->values.resize(raw.size() / 3);
    for (size_t v = 0; v < track->values.size(); ++v) {
      Eigen::Vector3f value(raw[3 * v], raw[3 * v + 1], raw[3 * v + 2]);
      if (folded_[joint]) {
        const bool tangent = cubic && v % 3 != 1;
        if (path == Path::kScale) {
          value = fold.scale.cwiseProduct(value);
        } else {
          // Keys are points; tangents are velocities and take no offset.
          value = tangent ? fold.TransformVector(value)
                          : fold.TransformPoint(value);
        }
        if (!value.allFinite()) {
          return Fail(absl::StrCat(clabel, ": key ", cubic ? v / 3 : v,
                                   " overflows once the ancestor transform "
                                   "is folded in"));
        }
      }
      track->values[v] = value;
    }
    return absl::OkStatus();
  }

  absl::Status ReadRotationTrack(const tinygltf::AnimationSampler& sampler,
                                 absl::string_view clabel, int joint,
                                 Track<Eigen::Quaternionf>* track) const {
    if (absl::Status s = ReadSamplerInput(sampler, clabel, &track->times,
                                          &track->interpolation);
        !s.ok()) {
      return s;
    }
    std::vector<float> raw;
    if (absl::Status s = ReadOutput(sampler, clabel, 4, track->times.size(),
                                    track->interpolation, &raw);
        !s.ok()) {
      return s;
    }
    const bool cubic = track->interpolation == Interpolation::kCubicSpline;
    track->values.resize(raw.size() / 4);
    for (size_t v = 0; v < track->values.size(); ++v) {
      // glTF order is (x, y, z, w); Eigen's constructor takes w first.
      Eigen::Quaternionf q(raw[4 * v + 3], raw[4 * v], raw[4 * v + 1],
                           raw[4 * v + 2]);
      const bool tangent = cubic && v % 3 != 1;
      if (!tangent) {
        const float norm = q.norm();
        if (!(std::fabs(norm - 1.0f) <= options_.max_rotation_norm_error)) {
          return Fail(absl::StrCat(clabel, ": key ", cubic ? v / 3 : v,
                                   " rotation (", q.x(), ", ", q.y(), ", ",
                                   q.z(), ", ", q.w(), ") has norm ", norm,
                                   ", not 1 (max_rotation_norm_error ",
                                   options_.max_rotation_norm_error, ")"));
        }
        q.coeffs() /= norm;
      }
      if (folded_[joint]) {
        // Linear in q, so tangents fold the same way as values.
        q = fold_[joint].rotation * q;
        if (!tangent) q.normalize();
      }
      track->values[v] = q;
    }
    return absl::OkStatus();
  }

  const std::string& path_;
  const tinygltf::Model& model_;
  const GltfReadOptions options_;
  ImportedAsset* out_;

  int scene_ = -1;                  // default scene, -1 when none
  std::vector<int> node_parent_;    // node -> parent node or -1
  std::vector<int> preorder_;       // every node, depth-first pre-order
  std::vector<char> in_scene_;      // node reachable from scene_
  std::vector<int> joint_of_node_;  // node -> joint or -1
  std::vector<int> joint_nodes_;    // joint -> node
  std::vector<Transform> fold_;     // joint -> folded ancestor transform
  std::vector<char> folded_;        // joint has a non-identity fold_
  std::vector<char> folded_node_;   // non-joint node folded into a joint
};

}  // namespace

namespace {

absl::StatusOr<ImportedAsset> Import(const std::string& source,
                                     absl::Span<const unsigned char> bytes,
                                     const FsPolicy& policy,
                                     const std::string& base_dir,
                                     const GltfReadOptions& options) {
  ImportedAsset asset;
  asset.source = source;
  absl::StatusOr<tinygltf::Model> model =
      LoadModel(source, bytes, policy, base_dir, &asset.warnings);
  if (!model.ok()) return model.status();
  if (absl::Status s = Importer(source, *model, options, &asset).Run();
      !s.ok()) {
    return s;
  }
  return asset;
}

}  // namespace

absl::StatusOr<ImportedAsset> ReadGltfFile(const std::string& path,
                                           const GltfReadOptions& options) {
  absl::StatusOr<std::vector<unsigned char>> bytes = ReadFileBytes(path);
  if (!bytes.ok()) return bytes.status();
  const size_t slash = path.find_last_of('/');
  const std::string base_dir =
      slash == std::string::npos ? "." : path.substr(0, slash);
  FsPolicy policy;
  policy.prefix = base_dir.empty() ? "/" : absl::StrCat(base_dir, "/");
  return Import(path, *bytes, policy, base_dir, options);
}

absl::StatusOr<ImportedAsset> ParseGltf(absl::Span<const unsigned char> bytes,
                                        absl::string_view source,
                                        const GltfReadOptions& options) {
  FsPolicy policy;
  policy.allow_files = false;
  return Import(std::string(source), bytes, policy, "", options);
}

}  // namespace posewire
