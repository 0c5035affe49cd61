#include "solver_core/io/gltf_writer.h"

#include <Eigen/Geometry>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

// As in gltf_reader.cc: Debian's libtinygltf.so holds the implementation.
#include <tiny_gltf.h>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace posewire {
namespace {

// glTF buffers are little-endian; floats are copied in with memcpy.
static_assert(std::endian::native == std::endian::little,
              "the glTF writer assumes a little-endian host");

// tinygltf writes accessor byte offsets as int, and a .glb must stay under
// 4 GiB (so must the base64 text, 4/3 of the buffer, of a .gltf).
constexpr uint64_t kMaxBufferBytes = (uint64_t{1} << 31) - 1;

// glTF's JSON is UTF-8, and nlohmann::json (under tinygltf) throws on
// anything else; tinygltf also passes names as C strings, so a NUL would
// silently cut one short.
bool IsUtf8WithoutNul(absl::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == 0) return false;
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t extra = 0;
    uint32_t code = 0;
    uint32_t smallest = 0;  // below it the sequence is overlong
    if ((c & 0xE0) == 0xC0) {
      extra = 1, code = c & 0x1F, smallest = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      extra = 2, code = c & 0x0F, smallest = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      extra = 3, code = c & 0x07, smallest = 0x10000;
    } else {
      return false;
    }
    if (s.size() - i <= extra) return false;
    for (size_t k = 1; k <= extra; ++k) {
      const unsigned char d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      code = (code << 6) | (d & 0x3F);
    }
    if (code < smallest || code > 0x10FFFF ||
        (code >= 0xD800 && code <= 0xDFFF)) {
      return false;
    }
    i += extra + 1;
  }
  return true;
}

absl::Status ValidateInputs(const Skeleton& skeleton,
                            absl::Span<const LocalPose> frames,
                            const GltfWriteOptions& options) {
  const int n = skeleton.num_joints();
  if (n == 0) {
    return absl::InvalidArgumentError("gltf writer: the skeleton is empty");
  }
  if (!std::isfinite(options.frame_time) || !(options.frame_time > 0.0f)) {
    return absl::InvalidArgumentError(absl::StrCat("gltf writer: frame_time ",
                                                   options.frame_time,
                                                   " must be finite and > 0"));
  }
  if (frames.empty()) {
    return absl::InvalidArgumentError(
        "gltf writer: frames: at least one pose is required (a glTF "
        "sampler has at least one key)");
  }
  if (!IsUtf8WithoutNul(options.animation_name)) {
    return absl::InvalidArgumentError(
        "gltf writer: animation_name is not valid UTF-8 or holds a NUL byte");
  }
  for (int j = 0; j < n; ++j) {
    if (!IsUtf8WithoutNul(skeleton.joint_name(j))) {
      return absl::InvalidArgumentError(
          absl::StrCat("gltf writer: joint ", j, " name '",
                       absl::CHexEscape(skeleton.joint_name(j)),
                       "' is not valid UTF-8 or holds a NUL byte"));
    }
  }
  for (size_t f = 0; f < frames.size(); ++f) {
    if (absl::Status s =
            ValidatePose(skeleton, frames[f], absl::StrCat("frames[", f, "]"));
        !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("gltf writer: ", s.message()));
    }
  }
  for (size_t i = 0; i < options.end_sites.size(); ++i) {
    const EndSite& site = options.end_sites[i];
    if (site.joint < 0 || site.joint >= n) {
      return absl::InvalidArgumentError(
          absl::StrCat("gltf writer: end_sites[", i, "].joint ", site.joint,
                       " is not a joint of the ", n, "-joint skeleton"));
    }
    if (!site.offset.allFinite()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "gltf writer: end_sites[", i, "].offset (below joint ", site.joint,
          " '", skeleton.joint_name(site.joint), "') is not finite"));
    }
  }
  return absl::OkStatus();
}

// Key times i * frame_time, rounded once from double. They must stay finite
// and strictly increasing as floats, as glTF (and the reader) require.
absl::StatusOr<std::vector<float>> KeyTimes(size_t count, float frame_time) {
  std::vector<float> times(count);
  for (size_t i = 0; i < count; ++i) {
    times[i] = static_cast<float>(static_cast<double>(i) * frame_time);
    if (!std::isfinite(times[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("gltf writer: frame_time ", frame_time,
                       ": the time of frames[", i, "] overflows a float"));
    }
    if (i > 0 && !(times[i] > times[i - 1])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "gltf writer: frame_time ", frame_time, " is too small for ", count,
          " frames: frames[", i - 1, "] and frames[", i,
          "] get the same float key time ", times[i]));
    }
  }
  return times;
}

Eigen::Quaterniond Normalized(const Eigen::Quaternionf& q) {
  return q.cast<double>().normalized();
}

// Inverse bind matrices, column-major: inverse(W_j) with W_j = W_parent *
// T_j * R_j * S_j the rest world matrix as glTF composes nodes. Built as
// inverse(T R S) * inverse(W_parent) = S^-1 R^T (x - t) chained, in double.
absl::StatusOr<std::vector<float>> InverseBindMatrices(
    const Skeleton& skeleton) {
  const int n = skeleton.num_joints();
  std::vector<Eigen::Matrix4d> inverse_world(n);
  std::vector<float> out(16 * static_cast<size_t>(n));
  for (int j = 0; j < n; ++j) {
    const Transform& rest = skeleton.rest_pose()[j];
    if ((rest.scale.array() == 0.0f).any()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "gltf writer: skeleton rest_pose[", j, "] '", skeleton.joint_name(j),
          "': scale (", rest.scale.x(), ", ", rest.scale.y(), ", ",
          rest.scale.z(),
          ") has a zero component, so the joint has no inverse bind matrix "
          "(skin.inverseBindMatrices)"));
    }
    const Eigen::Matrix3d inverse_linear =
        rest.scale.cast<double>().cwiseInverse().asDiagonal() *
        Normalized(rest.rotation).toRotationMatrix().transpose();
    Eigen::Matrix4d inverse_local = Eigen::Matrix4d::Identity();
    inverse_local.topLeftCorner<3, 3>() = inverse_linear;
    inverse_local.topRightCorner<3, 1>() =
        -inverse_linear * rest.translation.cast<double>();
    const int parent = skeleton.parent(j);
    inverse_world[j] =
        parent == kNoParent
            ? inverse_local
            : Eigen::Matrix4d(inverse_local * inverse_world[parent]);
    const Eigen::Matrix4f m = inverse_world[j].cast<float>();
    if (!m.allFinite()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "gltf writer: skeleton rest_pose[", j, "] '", skeleton.joint_name(j),
          "': the inverse of its rest world matrix overflows a float "
          "(scales too small)"));
    }
    std::memcpy(&out[16 * static_cast<size_t>(j)], m.data(),
                16 * sizeof(float));
  }
  return out;
}

// Which of a joint's channels are written (see the header).
struct JointChannels {
  bool translation = false;
  bool rotation = false;
  bool scale = false;
};

std::vector<JointChannels> ChooseChannels(const Skeleton& skeleton,
                                          absl::Span<const LocalPose> frames) {
  const int n = skeleton.num_joints();
  std::vector<JointChannels> channels(n);
  for (int j = 0; j < n; ++j) {
    const Transform& rest = skeleton.rest_pose()[j];
    JointChannels& c = channels[j];
    for (const LocalPose& frame : frames) {
      c.translation |= frame[j].translation != rest.translation;
      c.rotation |= frame[j].rotation.coeffs() != rest.rotation.coeffs();
      c.scale |= frame[j].scale != rest.scale;
    }
  }
  channels[0].rotation = true;  // joint 0 is a root (parents come first)
  return channels;
}

// The node's rest TRS, leaving out what equals glTF's default.
tinygltf::Node JointNode(const Skeleton& skeleton, int j) {
  const Transform& rest = skeleton.rest_pose()[j];
  tinygltf::Node node;
  node.name = skeleton.joint_name(j);
  if (rest.translation != Eigen::Vector3f::Zero()) {
    node.translation = {rest.translation.x(), rest.translation.y(),
                        rest.translation.z()};
  }
  const Eigen::Quaterniond q = Normalized(rest.rotation);
  if (q.coeffs() != Eigen::Quaterniond::Identity().coeffs()) {
    node.rotation = {q.x(), q.y(), q.z(), q.w()};
  }
  if (rest.scale != Eigen::Vector3f::Ones()) {
    node.scale = {rest.scale.x(), rest.scale.y(), rest.scale.z()};
  }
  for (const int child : skeleton.children(j)) node.children.push_back(child);
  return node;
}

void AppendFloats(const float* values, size_t count,
                  std::vector<unsigned char>* bytes) {
  const size_t at = bytes->size();
  bytes->resize(at + count * sizeof(float));
  std::memcpy(bytes->data() + at, values, count * sizeof(float));
}

}  // namespace

absl::StatusOr<std::string> WriteGltf(const Skeleton& skeleton,
                                      absl::Span<const LocalPose> frames,
                                      const GltfWriteOptions& options) {
  if (absl::Status s = ValidateInputs(skeleton, frames, options); !s.ok()) {
    return s;
  }
  const int n = skeleton.num_joints();
  const size_t num_frames = frames.size();
  absl::StatusOr<std::vector<float>> times =
      KeyTimes(num_frames, options.frame_time);
  if (!times.ok()) return times.status();
  absl::StatusOr<std::vector<float>> inverse_bind =
      InverseBindMatrices(skeleton);
  if (!inverse_bind.ok()) return inverse_bind.status();
  const std::vector<JointChannels> channels = ChooseChannels(skeleton, frames);

  uint64_t floats_per_frame = 0;
  for (const JointChannels& c : channels) {
    floats_per_frame +=
        (c.translation ? 3 : 0) + (c.rotation ? 4 : 0) + (c.scale ? 3 : 0);
  }
  const uint64_t buffer_bytes =
      sizeof(float) * (inverse_bind->size() + num_frames +
                       uint64_t{num_frames} * floats_per_frame);
  if (buffer_bytes > kMaxBufferBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gltf writer: ", num_frames, " frames of ", n, " joints need ",
        buffer_bytes, " bytes of buffer, more than the ", kMaxBufferBytes,
        " a glTF file written here holds"));
  }

  tinygltf::Model model;
  model.asset.version = "2.0";
  model.asset.generator = "posewire";
  std::vector<unsigned char>& bytes = model.buffers.emplace_back().data;
  bytes.reserve(static_cast<size_t>(buffer_bytes));

  // Nodes: joints, then end sites under their joints.
  model.nodes.reserve(n + options.end_sites.size());
  for (int j = 0; j < n; ++j) model.nodes.push_back(JointNode(skeleton, j));
  std::vector<int> sites_at(n, 0);
  for (const EndSite& site : options.end_sites) {
    tinygltf::Node tip;
    const int k = ++sites_at[site.joint];
    tip.name = k == 1
                   ? absl::StrCat(skeleton.joint_name(site.joint), "_end")
                   : absl::StrCat(skeleton.joint_name(site.joint), "_end_", k);
    tip.translation = {site.offset.x(), site.offset.y(), site.offset.z()};
    model.nodes[site.joint].children.push_back(
        static_cast<int>(model.nodes.size()));
    model.nodes.push_back(std::move(tip));
  }
  tinygltf::Scene& scene = model.scenes.emplace_back();
  for (int j = 0; j < n; ++j) {
    if (skeleton.parent(j) == kNoParent) scene.nodes.push_back(j);
  }
  model.defaultScene = 0;

  // Buffer views: the inverse bind matrices, the key times, the key values.
  auto add_view = [&](size_t begin) {
    tinygltf::BufferView& view = model.bufferViews.emplace_back();
    view.buffer = 0;
    view.byteOffset = begin;
    view.byteLength = bytes.size() - begin;
  };
  auto add_accessor = [&](int view, size_t offset, size_t count, int type) {
    tinygltf::Accessor& accessor = model.accessors.emplace_back();
    accessor.bufferView = view;
    accessor.byteOffset = offset;
    accessor.componentType = TINYGLTF_COMPONENT_TYPE_FLOAT;
    accessor.count = count;
    accessor.type = type;
    return static_cast<int>(model.accessors.size() - 1);
  };

  AppendFloats(inverse_bind->data(), inverse_bind->size(), &bytes);
  add_view(0);
  tinygltf::Skin& skin = model.skins.emplace_back();
  skin.inverseBindMatrices = add_accessor(0, 0, n, TINYGLTF_TYPE_MAT4);
  for (int j = 0; j < n; ++j) skin.joints.push_back(j);

  const size_t times_begin = bytes.size();
  AppendFloats(times->data(), num_frames, &bytes);
  add_view(times_begin);
  const int input = add_accessor(1, 0, num_frames, TINYGLTF_TYPE_SCALAR);
  // Required of a sampler input by the specification.
  model.accessors[input].minValues = {times->front()};
  model.accessors[input].maxValues = {times->back()};

  const size_t values_begin = bytes.size();
  tinygltf::Animation& animation = model.animations.emplace_back();
  animation.name = options.animation_name;
  std::vector<float> values;
  auto add_channel = [&](int joint, const char* path, int type) {
    const size_t offset = bytes.size() - values_begin;
    AppendFloats(values.data(), values.size(), &bytes);
    tinygltf::AnimationSampler& sampler = animation.samplers.emplace_back();
    sampler.input = input;
    sampler.output = add_accessor(2, offset, num_frames, type);
    sampler.interpolation = "LINEAR";
    tinygltf::AnimationChannel& channel = animation.channels.emplace_back();
    channel.sampler = static_cast<int>(animation.samplers.size() - 1);
    channel.target_node = joint;
    channel.target_path = path;
  };
  auto add_vector_channel = [&](int joint, Eigen::Vector3f Transform::*member,
                                const char* path) {
    values.clear();
    for (const LocalPose& frame : frames) {
      const Eigen::Vector3f& v = frame[joint].*member;
      values.insert(values.end(), v.data(), v.data() + 3);
    }
    add_channel(joint, path, TINYGLTF_TYPE_VEC3);
  };
  for (int j = 0; j < n; ++j) {
    if (channels[j].translation) {
      add_vector_channel(j, &Transform::translation, "translation");
    }
    if (channels[j].rotation) {
      values.clear();
      Eigen::Vector4f previous = Eigen::Vector4f::Zero();
      for (const LocalPose& frame : frames) {
        // coeffs() is (x, y, z, w), glTF's order.
        Eigen::Vector4f q =
            Normalized(frame[j].rotation).coeffs().cast<float>();
        if (q.dot(previous) < 0.0f) q = -q;
        values.insert(values.end(), q.data(), q.data() + 4);
        previous = q;
      }
      add_channel(j, "rotation", TINYGLTF_TYPE_VEC4);
    }
    if (channels[j].scale) add_vector_channel(j, &Transform::scale, "scale");
  }
  add_view(values_begin);

  std::ostringstream out;
  bool ok = false;
  std::string failure = "tinygltf reported a failure";
  // tinygltf's JSON layer may throw; nothing escapes this writer.
  try {
    tinygltf::TinyGLTF gltf;
    ok = gltf.WriteGltfSceneToStream(&model, out, /*prettyPrint=*/true,
                                     /*writeBinary=*/options.binary);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (!ok || !out) {
    return absl::InternalError(
        absl::StrCat("gltf writer: serialising failed: ", failure));
  }
  std::string result = std::move(out).str();
  if (result.size() > std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat("gltf writer: the file would be ", result.size(),
                     " bytes, more than glTF allows (4 GiB)"));
  }
  return result;
}

absl::Status WriteGltfFile(const std::string& path, const Skeleton& skeleton,
                           absl::Span<const LocalPose> frames,
                           const GltfWriteOptions& options) {
  GltfWriteOptions file_options = options;
  const std::string lower = absl::AsciiStrToLower(path);
  if (absl::EndsWith(lower, ".glb")) {
    file_options.binary = true;
  } else if (absl::EndsWith(lower, ".gltf")) {
    file_options.binary = false;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": the extension must be .glb (binary) or .gltf (JSON)"));
  }
  absl::StatusOr<std::string> bytes = WriteGltf(skeleton, frames, file_options);
  if (!bytes.ok()) {
    return absl::Status(bytes.status().code(),
                        absl::StrCat(path, ": ", bytes.status().message()));
  }
  // libstdc++'s file streams leave the errno of the failed open or write;
  // EIO stands in should it be unset (ErrnoToStatus(0) would be OK).
  auto failed = [&](absl::string_view what) {
    const int error = errno != 0 ? errno : EIO;
    return absl::ErrnoToStatus(error, absl::StrCat(path, ": cannot ", what));
  };
  errno = 0;
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) return failed("open");
  file.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
  file.close();
  if (!file) return failed("write");
  return absl::OkStatus();
}

}  // namespace posewire
