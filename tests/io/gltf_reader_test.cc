// glTF reader: the three real rigs checked against their own JSON node table
// and accessors (parsed here independently with nlohmann::json and a plain
// float decoder), model-space rest poses against the node world matrices a
// glTF viewer would compute, small generated rigs for every feature (matrix
// nodes, folding, sparse, strided, quantised and cubic-spline data, .gltf vs
// .glb vs external .bin), and every error path on malformed files.

#include "solver_core/io/gltf_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <Eigen/Geometry>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "solver_core/io/asset_reader.h"
#include "solver_core/model/clip.h"

namespace posewire {
namespace gltf_reader_test {

using ::nlohmann::json;
using ::testing::HasSubstr;

constexpr int kFloat = 5126;
constexpr int kByte = 5120;
constexpr int kShort = 5122;
constexpr int kUnsignedShort = 5123;

std::string DataPath(const std::string& name) {
  return std::string(POSEWIRE_TEST_DATA_DIR) + "/" + name;
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A fresh directory per test, so that parallel ctest runs never collide.
std::string TempDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) /
      absl::StrCat("gltf_reader_", info->test_suite_name(), "_", info->name(),
                   "_", ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

uint32_t U32(const std::string& b, size_t at) {
  uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}

// ---------------------------------------------------------------------------
// An independent view of a .glb: its JSON chunk and BIN chunk.

struct Glb {
  json doc;
  std::string bin;
};

Glb ReadGlb(const std::string& path) {
  const std::string bytes = ReadBytes(path);
  Glb glb;
  const uint32_t json_length = U32(bytes, 12);
  glb.doc = json::parse(bytes.substr(20, json_length));
  const size_t bin_at = 20 + json_length;
  if (bin_at + 8 <= bytes.size()) {
    glb.bin = bytes.substr(bin_at + 8, U32(bytes, bin_at));
  }
  return glb;
}

int Components(const std::string& type) {
  if (type == "SCALAR") return 1;
  if (type == "VEC3") return 3;
  if (type == "VEC4") return 4;
  if (type == "MAT4") return 16;
  return 0;
}

// Float accessors of the sample files (no sparse data in them).
std::vector<float> DecodeFloats(const Glb& glb, int accessor) {
  const json& a = glb.doc["accessors"][accessor];
  EXPECT_EQ(a["componentType"].get<int>(), kFloat);
  const int comps = Components(a["type"]);
  const json& view = glb.doc["bufferViews"][a["bufferView"].get<int>()];
  const size_t offset =
      view.value("byteOffset", size_t{0}) + a.value("byteOffset", size_t{0});
  const size_t stride = view.value("byteStride", size_t(comps * 4));
  const size_t count = a["count"];
  std::vector<float> out(count * comps);
  for (size_t i = 0; i < count; ++i) {
    for (int c = 0; c < comps; ++c) {
      const size_t at = offset + i * stride + 4 * c;
      EXPECT_LE(at + 4, glb.bin.size());
      std::memcpy(&out[i * comps + c], glb.bin.data() + at, 4);
    }
  }
  return out;
}

Eigen::Matrix4d NodeMatrix(const json& node) {
  if (node.contains("matrix")) {
    std::vector<double> m = node["matrix"];
    return Eigen::Map<const Eigen::Matrix4d>(m.data());  // column-major
  }
  Eigen::Vector3d t(0, 0, 0), s(1, 1, 1);
  Eigen::Quaterniond r = Eigen::Quaterniond::Identity();
  if (node.contains("translation")) {
    t = Eigen::Vector3d(node["translation"][0], node["translation"][1],
                        node["translation"][2]);
  }
  if (node.contains("rotation")) {
    r = Eigen::Quaterniond(node["rotation"][3], node["rotation"][0],
                           node["rotation"][1], node["rotation"][2])
            .normalized();
  }
  if (node.contains("scale")) {
    s = Eigen::Vector3d(node["scale"][0], node["scale"][1], node["scale"][2]);
  }
  Eigen::Matrix4d m = Eigen::Matrix4d::Identity();
  m.topLeftCorner<3, 3>() = r.toRotationMatrix() * s.asDiagonal();
  m.topRightCorner<3, 1>() = t;
  return m;
}

// The JSON's node graph seen from the joints' side.
struct NodeTable {
  std::vector<int> parent;             // node -> parent node or -1
  std::set<int> joints;                // union of every skin's joints
  std::map<std::string, int> by_name;  // joints only: RobotExpressive has
                                       // mesh nodes named like joints

  explicit NodeTable(const json& doc) {
    const size_t n = doc["nodes"].size();
    parent.assign(n, -1);
    for (size_t i = 0; i < n; ++i) {
      for (int c : doc["nodes"][i].value("children", std::vector<int>{})) {
        parent[c] = static_cast<int>(i);
      }
    }
    for (const json& skin : doc["skins"]) {
      for (int j : skin["joints"]) joints.insert(j);
    }
    for (int j : joints) {
      EXPECT_TRUE(by_name.emplace(doc["nodes"][j].value("name", ""), j).second)
          << "duplicate joint name in the sample";
    }
  }
  int NearestJointAncestor(int node) const {
    int p = parent[node];
    while (p >= 0 && joints.count(p) == 0) p = parent[p];
    return p;
  }
  // Product of the local matrices of the non-joint nodes between `node` and
  // its nearest joint ancestor: what the reader must fold into the joint.
  Eigen::Matrix4d FoldMatrix(const json& doc, int node) const {
    Eigen::Matrix4d m = Eigen::Matrix4d::Identity();
    for (int p = parent[node]; p >= 0 && joints.count(p) == 0; p = parent[p]) {
      m = NodeMatrix(doc["nodes"][p]) * m;
    }
    return m;
  }
  Eigen::Matrix4d WorldMatrix(const json& doc, int node) const {
    Eigen::Matrix4d m = Eigen::Matrix4d::Identity();
    for (int p = node; p >= 0; p = parent[p]) {
      m = NodeMatrix(doc["nodes"][p]) * m;
    }
    return m;
  }
};

Eigen::Matrix3d RotationPart(const Eigen::Matrix4d& m) {
  Eigen::Matrix3d l = m.topLeftCorner<3, 3>();
  for (int c = 0; c < 3; ++c) l.col(c).normalize();
  return l;
}

void ExpectMatrixNear(const Eigen::Matrix4d& a, const Eigen::Matrix4d& b,
                      double relative, const std::string& what) {
  const double scale = std::max(1.0, b.cwiseAbs().maxCoeff());
  EXPECT_LE((a - b).cwiseAbs().maxCoeff(), relative * scale)
      << what << "\nreader:\n"
      << a << "\nexpected:\n"
      << b;
}

// Every joint's parent and rest TRS against the JSON node table; the
// model-space rest pose (FK through the posewire skeleton) against the world
// matrix of the node in the glTF hierarchy, which is what folding promises.
void CheckSkeletonAgainstJson(const ImportedAsset& asset, const Glb& glb) {
  const json& doc = glb.doc;
  const NodeTable table(doc);
  const Skeleton& skeleton = asset.skeleton;
  ASSERT_EQ(skeleton.num_joints(), static_cast<int>(table.joints.size()));
  std::vector<Eigen::Matrix4d> model(skeleton.num_joints());
  for (int j = 0; j < skeleton.num_joints(); ++j) {
    const std::string& name = skeleton.joint_name(j);
    SCOPED_TRACE(absl::StrCat("joint ", j, " '", name, "'"));
    ASSERT_EQ(table.by_name.count(name), 1u);
    const int node = table.by_name.at(name);
    EXPECT_EQ(table.joints.count(node), 1u);
    const int parent_node = table.NearestJointAncestor(node);
    if (parent_node < 0) {
      EXPECT_EQ(skeleton.parent(j), kNoParent);
    } else {
      ASSERT_NE(skeleton.parent(j), kNoParent);
      EXPECT_EQ(skeleton.joint_name(skeleton.parent(j)),
                doc["nodes"][parent_node]["name"].get<std::string>());
      EXPECT_LT(skeleton.parent(j), j);
    }
    const Transform& rest = skeleton.rest_pose()[j];
    const Eigen::Matrix4d fold = table.FoldMatrix(doc, node);
    const json& n = doc["nodes"][node];
    if (fold.isIdentity(0.0) && !n.contains("matrix")) {
      // Unfolded: the node's own numbers, to float precision.
      if (n.contains("translation")) {
        for (int c = 0; c < 3; ++c) {
          EXPECT_EQ(rest.translation[c], n["translation"][c].get<float>());
        }
      } else {
        EXPECT_EQ(rest.translation, Eigen::Vector3f::Zero());
      }
      if (n.contains("scale")) {
        for (int c = 0; c < 3; ++c) {
          EXPECT_EQ(rest.scale[c], n["scale"][c].get<float>());
        }
      }
      if (n.contains("rotation")) {
        const Eigen::Quaterniond q(n["rotation"][3], n["rotation"][0],
                                   n["rotation"][1], n["rotation"][2]);
        EXPECT_NEAR(std::fabs(q.normalized().dot(rest.rotation.cast<double>())),
                    1.0, 1e-6);
      }
    }
    const Eigen::Matrix4d local = rest.ToMatrix().cast<double>();
    model[j] = skeleton.parent(j) == kNoParent
                   ? local
                   : Eigen::Matrix4d(model[skeleton.parent(j)] * local);
    ExpectMatrixNear(model[j], table.WorldMatrix(doc, node), 1e-4,
                     "model-space rest vs glTF world matrix");
  }
}

// Every clip against the animation's channels: key times bit for bit, the
// last time equal to the input accessor's max, key counts equal to accessor
// counts, values equal to the decoded outputs (folded where the joint has
// non-joint ancestors), and duration the max over the joint channels.
void CheckClipsAgainstJson(const ImportedAsset& asset, const Glb& glb) {
  const json& doc = glb.doc;
  const NodeTable table(doc);
  const Skeleton& skeleton = asset.skeleton;
  const json& animations = doc["animations"];
  ASSERT_EQ(asset.clips.size(), animations.size());
  for (size_t a = 0; a < animations.size(); ++a) {
    const json& anim = animations[a];
    const Clip& clip = asset.clips[a];
    SCOPED_TRACE(absl::StrCat("clip ", a, " '", clip.name, "'"));
    EXPECT_EQ(clip.name, anim.value("name", absl::StrCat("animation_", a)));
    EXPECT_TRUE(clip.Validate(skeleton).ok()) << clip.Validate(skeleton);
    float duration = 0.0f;
    size_t imported = 0;
    for (const json& channel : anim["channels"]) {
      const std::string path = channel["target"]["path"];
      const int node = channel["target"]["node"];
      if (path == "weights" || table.joints.count(node) == 0) continue;
      const int joint =
          skeleton.FindJoint(doc["nodes"][node]["name"].get<std::string>());
      ASSERT_GE(joint, 0);
      const json& sampler = anim["samplers"][channel["sampler"].get<int>()];
      ASSERT_EQ(sampler.value("interpolation", "LINEAR"), "LINEAR");
      const int input = sampler["input"];
      const std::vector<float> times = DecodeFloats(glb, input);
      const std::vector<float> out = DecodeFloats(glb, sampler["output"]);
      const float max_time = doc["accessors"][input]["max"][0].get<float>();
      duration = std::max(duration, max_time);
      const Eigen::Matrix4d fold = table.FoldMatrix(doc, node);
      const JointTracks& tracks = clip.tracks[joint];
      ++imported;
      if (path == "rotation") {
        ASSERT_EQ(tracks.rotation.times, times);
        EXPECT_EQ(tracks.rotation.times.back(), max_time);
        ASSERT_EQ(tracks.rotation.values.size(), times.size());
        for (size_t k = 0; k < times.size(); ++k) {
          const Eigen::Quaterniond raw(out[4 * k + 3], out[4 * k],
                                       out[4 * k + 1], out[4 * k + 2]);
          const Eigen::Matrix3d expected =
              RotationPart(fold) * raw.normalized().toRotationMatrix();
          const Eigen::Matrix3d got =
              tracks.rotation.values[k].cast<double>().toRotationMatrix();
          EXPECT_LE((got - expected).cwiseAbs().maxCoeff(), 1e-5)
              << "rotation key " << k;
        }
      } else {
        const Track<Eigen::Vector3f>& track =
            path == "translation" ? tracks.translation : tracks.scale;
        ASSERT_EQ(track.times, times);
        EXPECT_EQ(track.times.back(), max_time);
        ASSERT_EQ(track.values.size(), times.size());
        for (size_t k = 0; k < times.size(); ++k) {
          const Eigen::Vector3d raw(out[3 * k], out[3 * k + 1], out[3 * k + 2]);
          Eigen::Vector3d expected;
          if (path == "translation") {
            expected = (fold * raw.homogeneous()).head<3>();
          } else {
            expected = fold.topLeftCorner<3, 3>()
                           .colwise()
                           .norm()
                           .transpose()
                           .cwiseProduct(raw);
          }
          const double tolerance = 1e-5 * std::max(1.0, expected.norm());
          EXPECT_LE(
              (track.values[k].cast<double>() - expected).cwiseAbs().maxCoeff(),
              tolerance)
              << path << " key " << k;
        }
      }
    }
    EXPECT_GT(imported, 0u);
    EXPECT_EQ(clip.duration, duration);
  }
}

// Joints in pre-order: every subtree is the contiguous index range starting
// at its root (checked from the parent array alone).
void ExpectSubtreesContiguous(const Skeleton& skeleton) {
  const int n = skeleton.num_joints();
  for (int r = 0; r < n; ++r) {
    int end = r + 1;
    while (end < n) {
      int a = skeleton.parent(end);
      while (a != kNoParent && a != r) a = skeleton.parent(a);
      if (a != r) break;
      ++end;
    }
    for (int j = end; j < n; ++j) {
      int a = skeleton.parent(j);
      while (a != kNoParent && a != r) a = skeleton.parent(a);
      EXPECT_NE(a, r) << "joint " << j << " is under " << r
                      << " but outside its contiguous range";
    }
  }
}

// ---------------------------------------------------------------------------
// Real rigs.

TEST(GltfReader, RiggedSimpleHasTwoJointsAndOneClipStartingAfterZero) {
  const std::string path = DataPath("RiggedSimple.glb");
  absl::StatusOr<ImportedAsset> asset = ReadGltfFile(path);
  ASSERT_TRUE(asset.ok()) << asset.status();
  EXPECT_EQ(asset->source, path);
  ASSERT_EQ(asset->skeleton.num_joints(), 2);
  EXPECT_EQ(asset->skeleton.joint_name(0), "Bone");
  EXPECT_EQ(asset->skeleton.joint_name(1), "Bone.001");
  EXPECT_EQ(asset->skeleton.parent(1), 0);
  ASSERT_EQ(asset->clips.size(), 1u);
  EXPECT_EQ(asset->clips[0].name, "animation_0");
  // Z_UP and Armature carry matrices above the root joint: folded, reported.
  EXPECT_THAT(asset->warnings,
              testing::Contains(HasSubstr("'Armature', node 0 'Z_UP' is "
                                          "folded")));
  const Glb glb = ReadGlb(path);
  CheckSkeletonAgainstJson(*asset, glb);
  CheckClipsAgainstJson(*asset, glb);
  // Times are kept as authored: this clip's first key is at 1/24 s, not 0.
  float min_time = std::numeric_limits<float>::max();
  for (const json& sampler : glb.doc["animations"][0]["samplers"]) {
    min_time = std::min(
        min_time, glb.doc["accessors"][sampler["input"].get<int>()]["min"][0]
                      .get<float>());
  }
  float first_key = std::numeric_limits<float>::max();
  for (const JointTracks& t : asset->clips[0].tracks) {
    for (const std::vector<float>* times :
         {&t.translation.times, &t.rotation.times, &t.scale.times}) {
      if (!times->empty()) first_key = std::min(first_key, times->front());
    }
  }
  EXPECT_GT(min_time, 0.0f);
  EXPECT_EQ(first_key, min_time);
}

TEST(GltfReader, FoxSkeletonMatchesTheNodeTable) {
  const std::string path = DataPath("Fox.glb");
  absl::StatusOr<ImportedAsset> asset = ReadGltfFile(path);
  ASSERT_TRUE(asset.ok()) << asset.status();
  EXPECT_THAT(asset->warnings, testing::IsEmpty());
  const Skeleton& s = asset->skeleton;
  ASSERT_EQ(s.num_joints(), 24);
  EXPECT_EQ(s.joint_name(0), "_rootJoint");
  EXPECT_EQ(s.parent(0), kNoParent);
  const int hip = s.FindJoint("b_Hip_01");
  const int spine = s.FindJoint("b_Spine01_02");
  const int tail = s.FindJoint("b_Tail01_012");
  const int head = s.FindJoint("b_Head_05");
  ASSERT_GE(hip, 0);
  ASSERT_GE(spine, 0);
  ASSERT_GE(tail, 0);
  ASSERT_GE(head, 0);
  EXPECT_EQ(s.parent(spine), hip);
  EXPECT_EQ(s.parent(tail), hip);
  EXPECT_EQ(s.joint_name(s.parent(head)), "b_Neck_04");
  ExpectSubtreesContiguous(s);
  CheckSkeletonAgainstJson(*asset, ReadGlb(path));
}

TEST(GltfReader, FoxClipsMatchTheirAccessors) {
  const std::string path = DataPath("Fox.glb");
  absl::StatusOr<ImportedAsset> asset = ReadGltfFile(path);
  ASSERT_TRUE(asset.ok()) << asset.status();
  ASSERT_EQ(asset->clips.size(), 3u);
  EXPECT_EQ(asset->clips[0].name, "Survey");
  EXPECT_EQ(asset->clips[1].name, "Walk");
  EXPECT_EQ(asset->clips[2].name, "Run");
  for (const Clip& clip : asset->clips) {
    EXPECT_GT(clip.duration, 0.5f);
    EXPECT_LT(clip.duration, 5.0f);
  }
  CheckClipsAgainstJson(*asset, ReadGlb(path));
}

TEST(GltfReader, RobotExpressiveUnitesItsTwoSkinsAndFoldsTheArmature) {
  const std::string path = DataPath("RobotExpressive.glb");
  const Glb glb = ReadGlb(path);
  ASSERT_EQ(glb.doc["skins"].size(), 2u);
  // Both skins list the same 43 joints; the union is 43, not 86.
  EXPECT_EQ(NodeTable(glb.doc).joints.size(), 43u);
  absl::StatusOr<ImportedAsset> asset = ReadGltfFile(path);
  ASSERT_TRUE(asset.ok()) << asset.status();
  const Skeleton& s = asset->skeleton;
  ASSERT_EQ(s.num_joints(), 43);
  for (const char* name : {"Hips", "Head", "UpperArm.L", "LowerLeg.R"}) {
    EXPECT_GE(s.FindJoint(name), 0) << name;
  }
  EXPECT_EQ(s.joint_name(s.parent(s.FindJoint("Head"))), "Neck");
  EXPECT_EQ(s.joint_name(s.parent(s.FindJoint("LowerArm.L"))), "UpperArm.L");
  ExpectSubtreesContiguous(s);
  CheckSkeletonAgainstJson(*asset, glb);

  std::set<std::string> names;
  for (const Clip& clip : asset->clips) names.insert(clip.name);
  EXPECT_EQ(asset->clips.size(), 14u);
  for (const char* name : {"Walking", "Running", "Jump", "Wave", "Idle"}) {
    EXPECT_EQ(names.count(name), 1u) << name;
  }
  CheckClipsAgainstJson(*asset, glb);

  // "_end" leaves under joints become end sites at their translation.
  const NodeTable table(glb.doc);
  size_t expected_sites = 0;
  for (size_t i = 0; i < glb.doc["nodes"].size(); ++i) {
    const json& n = glb.doc["nodes"][i];
    const int p = table.parent[i];
    if (table.joints.count(static_cast<int>(i)) || p < 0 ||
        !table.joints.count(p) || n.contains("children") ||
        n.contains("mesh") || n.contains("skin") || n.contains("camera")) {
      continue;
    }
    ++expected_sites;
    const std::string parent_name = glb.doc["nodes"][p]["name"];
    bool found = false;
    for (const EndSite& site : asset->end_sites) {
      if (s.joint_name(site.joint) == parent_name &&
          site.offset.x() == n["translation"][0].get<float>() &&
          site.offset.y() == n["translation"][1].get<float>() &&
          site.offset.z() == n["translation"][2].get<float>()) {
        found = true;
      }
    }
    EXPECT_TRUE(found) << n["name"];
  }
  EXPECT_GT(expected_sites, 10u);
  EXPECT_EQ(asset->end_sites.size(), expected_sites);
}

TEST(GltfReader, RobotExpressiveSkinOptionSelectsOneSkin) {
  const std::string path = DataPath("RobotExpressive.glb");
  for (int skin : {0, 1}) {
    absl::StatusOr<ImportedAsset> asset =
        ReadGltfFile(path, GltfReadOptions{.skin = skin});
    ASSERT_TRUE(asset.ok()) << asset.status();
    EXPECT_EQ(asset->skeleton.num_joints(), 43);
    EXPECT_THAT(asset->warnings, testing::Contains(HasSubstr("options.skin")));
  }
  absl::StatusOr<ImportedAsset> bad =
      ReadGltfFile(path, GltfReadOptions{.skin = 2});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(),
              HasSubstr("options.skin = 2 is out of range (the file has 2"));
}

TEST(GltfReader, AssetReaderDispatchesGlbToTheGltfReader) {
  absl::StatusOr<ImportedAsset> asset = ReadAssetFile(DataPath("Fox.glb"));
  ASSERT_TRUE(asset.ok()) << asset.status();
  EXPECT_EQ(asset->skeleton.num_joints(), 24);
}

// ---------------------------------------------------------------------------
// Generated rigs.

std::string Bytes(const void* data, size_t size) {
  return std::string(static_cast<const char*>(data), size);
}
template <typename T>
std::string Bytes(const std::vector<T>& v) {
  return Bytes(v.data(), v.size() * sizeof(T));
}

class GltfBuilder {
 public:
  json doc;
  std::string bin;

  GltfBuilder() {
    doc = {{"asset", {{"version", "2.0"}}},
           {"bufferViews", json::array()},
           {"accessors", json::array()}};
  }

  int AddView(const std::string& bytes, int stride = 0) {
    while (bin.size() % 4 != 0) bin.push_back('\0');
    json view = {{"buffer", 0},
                 {"byteOffset", bin.size()},
                 {"byteLength", bytes.size()}};
    if (stride != 0) view["byteStride"] = stride;
    bin += bytes;
    doc["bufferViews"].push_back(view);
    return static_cast<int>(doc["bufferViews"].size()) - 1;
  }

  int AddAccessor(int view, int component_type, size_t count,
                  const std::string& type, json extra = json::object()) {
    json a = {
        {"componentType", component_type}, {"count", count}, {"type", type}};
    if (view >= 0) a["bufferView"] = view;
    a.update(extra);
    doc["accessors"].push_back(a);
    return static_cast<int>(doc["accessors"].size()) - 1;
  }

  int AddFloats(const std::vector<float>& v, const std::string& type) {
    const int comps = Components(type);
    const int view = AddView(Bytes(v));
    json extra = json::object();
    if (type == "SCALAR") {
      extra = {{"min", {*std::min_element(v.begin(), v.end())}},
               {"max", {*std::max_element(v.begin(), v.end())}}};
    }
    return AddAccessor(view, kFloat, v.size() / comps, type, extra);
  }

  std::string WriteGltf(const std::string& path) const {
    json d = doc;
    d["buffers"] = {{{"byteLength", bin.size()},
                     {"uri", "data:application/octet-stream;base64," +
                                 absl::Base64Escape(bin)}}};
    WriteBytes(path, d.dump(1));
    return path;
  }

  std::string WriteGltfWithExternalBin(const std::string& path,
                                       const std::string& bin_name) const {
    json d = doc;
    d["buffers"] = {{{"byteLength", bin.size()}, {"uri", bin_name}}};
    WriteBytes(path, d.dump(1));
    const std::string dir = std::filesystem::path(path).parent_path().string();
    WriteBytes(dir + "/" + bin_name, bin);
    return path;
  }

  std::string GlbBytes() const {
    json d = doc;
    d["buffers"] = {{{"byteLength", bin.size()}}};
    std::string text = d.dump();
    while (text.size() % 4 != 0) text.push_back(' ');
    std::string payload = bin;
    while (payload.size() % 4 != 0) payload.push_back('\0');
    const uint32_t total = 12 + 8 + text.size() + 8 + payload.size();
    auto u32 = [](uint32_t v) { return Bytes(&v, 4); };
    return "glTF" + u32(2) + u32(total) + u32(text.size()) + "JSON" + text +
           u32(payload.size()) + std::string("BIN\0", 4) + payload;
  }

  std::string WriteGlb(const std::string& path) const {
    WriteBytes(path, GlbBytes());
    return path;
  }
};

Eigen::Quaternionf AboutZ(float angle) {
  return Eigen::Quaternionf(Eigen::AngleAxisf(angle, Eigen::Vector3f::UnitZ()));
}

std::vector<float> QuatFloats(std::initializer_list<Eigen::Quaternionf> qs) {
  std::vector<float> out;
  for (const Eigen::Quaternionf& q : qs) {
    for (float c : {q.x(), q.y(), q.z(), q.w()}) out.push_back(c);
  }
  return out;
}

// Node 0 "Armature" (not a joint, identity) > 1 "Hips" (joint) > 2 "Spine"
// (joint) and 3 "Tip" (non-joint leaf: an end site of Hips). One clip "Wave"
// with keys at 0.5, 1, 1.5 s: Hips translation (channel 0), Spine rotation
// (channel 1).
GltfBuilder TinyRig() {
  GltfBuilder b;
  b.doc["scene"] = 0;
  b.doc["scenes"] = {{{"nodes", {0}}}};
  b.doc["nodes"] = {
      {{"name", "Armature"}, {"children", {1}}},
      {{"name", "Hips"}, {"translation", {0, 1, 0}}, {"children", {2, 3}}},
      {{"name", "Spine"},
       {"translation", {0, 0.5, 0}},
       {"rotation", {0, 0, 0.70710678, 0.70710678}}},
      {{"name", "Tip"}, {"translation", {0, -0.5, 0}}},
  };
  std::vector<float> ibm;
  for (int k = 0; k < 2; ++k) {
    for (int i = 0; i < 16; ++i) ibm.push_back(i % 5 == 0 ? 1.0f : 0.0f);
  }
  const int ibm_accessor = b.AddFloats(ibm, "MAT4");
  b.doc["skins"] = {
      {{"joints", {1, 2}}, {"inverseBindMatrices", ibm_accessor}}};
  const int times = b.AddFloats({0.5f, 1.0f, 1.5f}, "SCALAR");
  const int moves = b.AddFloats({0, 1, 0, 0.5f, 1, 0, 1, 1, 0.25f}, "VEC3");
  const int turns = b.AddFloats(
      QuatFloats({AboutZ(0.0f), AboutZ(0.5f), AboutZ(1.0f)}), "VEC4");
  b.doc["animations"] = {
      {{"name", "Wave"},
       {"channels",
        {{{"sampler", 0}, {"target", {{"node", 1}, {"path", "translation"}}}},
         {{"sampler", 1}, {"target", {{"node", 2}, {"path", "rotation"}}}}}},
       {"samplers",
        {{{"input", times}, {"output", moves}},
         {{"input", times}, {"output", turns}}}}}};
  return b;
}

// Indices into TinyRig's accessors.
constexpr int kTimes = 1;
constexpr int kMoves = 2;
constexpr int kTurns = 3;

void ExpectSameAsset(const ImportedAsset& a, const ImportedAsset& b) {
  ASSERT_EQ(a.skeleton.num_joints(), b.skeleton.num_joints());
  for (int j = 0; j < a.skeleton.num_joints(); ++j) {
    EXPECT_EQ(a.skeleton.joint_name(j), b.skeleton.joint_name(j));
    EXPECT_EQ(a.skeleton.parent(j), b.skeleton.parent(j));
    EXPECT_EQ(a.skeleton.rest_pose()[j], b.skeleton.rest_pose()[j]);
  }
  ASSERT_EQ(a.clips.size(), b.clips.size());
  for (size_t c = 0; c < a.clips.size(); ++c) {
    EXPECT_EQ(a.clips[c].name, b.clips[c].name);
    EXPECT_EQ(a.clips[c].duration, b.clips[c].duration);
    ASSERT_EQ(a.clips[c].tracks.size(), b.clips[c].tracks.size());
    for (size_t j = 0; j < a.clips[c].tracks.size(); ++j) {
      const JointTracks& x = a.clips[c].tracks[j];
      const JointTracks& y = b.clips[c].tracks[j];
      EXPECT_EQ(x.translation.times, y.translation.times);
      EXPECT_EQ(x.translation.values, y.translation.values);
      EXPECT_EQ(x.rotation.times, y.rotation.times);
      ASSERT_EQ(x.rotation.values.size(), y.rotation.values.size());
      for (size_t k = 0; k < x.rotation.values.size(); ++k) {
        EXPECT_EQ(x.rotation.values[k].coeffs(), y.rotation.values[k].coeffs());
      }
      EXPECT_EQ(x.scale.times, y.scale.times);
      EXPECT_EQ(x.scale.values, y.scale.values);
    }
  }
  ASSERT_EQ(a.end_sites.size(), b.end_sites.size());
  EXPECT_EQ(a.warnings, b.warnings);
}

TEST(GltfReader, TinyRigLoadsWithKeysAsAuthored) {
  const std::string dir = TempDir();
  absl::StatusOr<ImportedAsset> asset =
      ReadGltfFile(TinyRig().WriteGltf(dir + "/rig.gltf"));
  ASSERT_TRUE(asset.ok()) << asset.status();
  EXPECT_THAT(asset->warnings, testing::IsEmpty());
  const Skeleton& s = asset->skeleton;
  ASSERT_EQ(s.num_joints(), 2);
  EXPECT_EQ(s.joint_name(0), "Hips");
  EXPECT_EQ(s.joint_name(1), "Spine");
  EXPECT_EQ(s.parent(1), 0);
  EXPECT_EQ(s.rest_pose()[1].translation, Eigen::Vector3f(0, 0.5f, 0));
  EXPECT_NEAR(s.rest_pose()[1].rotation.angularDistance(AboutZ(M_PI / 2)), 0.0f,
              1e-6f);
  ASSERT_EQ(asset->end_sites.size(), 1u);
  EXPECT_EQ(asset->end_sites[0].joint, 0);
  EXPECT_EQ(asset->end_sites[0].offset, Eigen::Vector3f(0, -0.5f, 0));

  ASSERT_EQ(asset->clips.size(), 1u);
  const Clip& clip = asset->clips[0];
  EXPECT_EQ(clip.name, "Wave");
  EXPECT_EQ(clip.duration, 1.5f);
  const std::vector<float> times = {0.5f, 1.0f, 1.5f};
  EXPECT_EQ(clip.tracks[0].translation.times, times);
  EXPECT_EQ(clip.tracks[0].translation.interpolation, Interpolation::kLinear);
  EXPECT_EQ(clip.tracks[0].translation.values[1], Eigen::Vector3f(0.5f, 1, 0));
  EXPECT_TRUE(clip.tracks[0].rotation.empty());
  EXPECT_EQ(clip.tracks[1].rotation.times, times);
  EXPECT_NEAR(clip.tracks[1].rotation.values[2].angularDistance(AboutZ(1.0f)),
              0.0f, 1e-6f);
  EXPECT_TRUE(clip.Validate(s).ok());
}

TEST(GltfReader, GltfGlbAndExternalBinLoadIdentically) {
  const std::string dir = TempDir();
  const GltfBuilder rig = TinyRig();
  absl::StatusOr<ImportedAsset> gltf =
      ReadGltfFile(rig.WriteGltf(dir + "/a.gltf"));
  absl::StatusOr<ImportedAsset> glb =
      ReadGltfFile(rig.WriteGlb(dir + "/b.glb"));
  absl::StatusOr<ImportedAsset> external =
      ReadGltfFile(rig.WriteGltfWithExternalBin(dir + "/c.gltf", "c.bin"));
  // The binary magic decides, not the extension.
  absl::StatusOr<ImportedAsset> renamed =
      ReadGltfFile(rig.WriteGlb(dir + "/d.gltf"));
  ASSERT_TRUE(gltf.ok()) << gltf.status();
  ASSERT_TRUE(glb.ok()) << glb.status();
  ASSERT_TRUE(external.ok()) << external.status();
  ASSERT_TRUE(renamed.ok()) << renamed.status();
  ExpectSameAsset(*gltf, *glb);
  ExpectSameAsset(*gltf, *external);
  ExpectSameAsset(*gltf, *renamed);
}

TEST(GltfReader, MatrixNodeIsDecomposedIntoTrs) {
  const std::string dir = TempDir();
  GltfBuilder rig = TinyRig();
  // T(1, 2, 3) * Rz(90 deg) * S(2, 3, 4), column-major.
  Eigen::Matrix4d m = Eigen::Matrix4d::Identity();
  m.topLeftCorner<3, 3>() =
      Eigen::AngleAxisd(M_PI / 2, Eigen::Vector3d::UnitZ()).toRotationMatrix() *
      Eigen::Vector3d(2, 3, 4).asDiagonal();
  m.topRightCorner<3, 1>() = Eigen::Vector3d(1, 2, 3);
  rig.doc["nodes"][2].erase("translation");
  rig.doc["nodes"][2].erase("rotation");
  rig.doc["nodes"][2]["matrix"] = std::vector<double>(m.data(), m.data() + 16);
  absl::StatusOr<ImportedAsset> asset =
      ReadGltfFile(rig.WriteGltf(dir + "/m.gltf"));
  ASSERT_TRUE(asset.ok()) << asset.status();
  const Transform& t = asset->skeleton.rest_pose()[1];
  EXPECT_TRUE(t.translation.isApprox(Eigen::Vector3f(1, 2, 3), 1e-6f));
  EXPECT_TRUE(t.scale.isApprox(Eigen::Vector3f(2, 3, 4), 1e-6f));
  EXPECT_NEAR(t.rotation.angularDistance(AboutZ(M_PI / 2)), 0.0f, 1e-6f);
  ExpectMatrixNear(t.ToMatrix().cast<double>(), m, 1e-6, "matrix round trip");
}

TEST(GltfReader, NonJointAncestorTransformIsFoldedIntoRestAndKeys) {
  const std::string dir = TempDir();
  GltfBuilder rig = TinyRig();
  const Eigen::Quaterniond r(
      Eigen::AngleAxisd(-M_PI / 2, Eigen::Vector3d::UnitX()));
  rig.doc["nodes"][0]["translation"] = {1, 2, 3};
  rig.doc["nodes"][0]["rotation"] = {r.x(), r.y(), r.z(), r.w()};
  rig.doc["nodes"][0]["scale"] = {100, 100, 100};
  const std::string path = rig.WriteGltf(dir + "/fold.gltf");
  absl::StatusOr<ImportedAsset> asset = ReadGltfFile(path);
  ASSERT_TRUE(asset.ok()) << asset.status();
  EXPECT_THAT(asset->warnings,
              testing::ElementsAre(HasSubstr("node 0 'Armature' is folded")));
  const Eigen::Matrix4d armature = NodeMatrix(rig.doc["nodes"][0]);
  const Eigen::Matrix4d hips = NodeMatrix(rig.doc["nodes"][1]);
  ExpectMatrixNear(asset->skeleton.rest_pose()[0].ToMatrix().cast<double>(),
                   armature * hips, 1e-6, "folded root rest");
  // Spine is under a joint: untouched.
  EXPECT_EQ(asset->skeleton.rest_pose()[1].translation,
            Eigen::Vector3f(0, 0.5f, 0));
  // Translation keys are points carried through the armature.
  const Track<Eigen::Vector3f>& moves = asset->clips[0].tracks[0].translation;
  const Eigen::Vector3d key1(0.5, 1, 0);
  EXPECT_TRUE(moves.values[1].cast<double>().isApprox(
      (armature * key1.homogeneous()).head<3>(), 1e-6));

  // Without folding, the armature is dropped (with a warning saying so).
  absl::StatusOr<ImportedAsset> raw =
      ReadGltfFile(path, GltfReadOptions{.fold_non_joint_ancestors = false});
  ASSERT_TRUE(raw.ok()) << raw.status();
  EXPECT_EQ(raw->skeleton.rest_pose()[0].translation, Eigen::Vector3f(0, 1, 0));
  EXPECT_EQ(raw->clips[0].tracks[0].translation.values[1],
            Eigen::Vector3f(0.5f, 1, 0));
  EXPECT_THAT(raw->warnings, testing::ElementsAre(HasSubstr("is dropped")));
}

TEST(GltfReader, StepAndCubicSplineSamplersKeepTheirLayout) {
  const std::string dir = TempDir();
  GltfBuilder rig = TinyRig();
  // Cubic spline: 3 keys x (in, value, out) = 9 VEC3 elements.
  std::vector<float> cubic;
  for (int e = 0; e < 9; ++e) {
    cubic.insert(cubic.end(), {float(e), float(10 * e), float(-e)});
  }
  const int cubic_out = rig.AddFloats(cubic, "VEC3");
  rig.doc["animations"][0]["samplers"][0]["output"] = cubic_out;
  rig.doc["animations"][0]["samplers"][0]["interpolation"] = "CUBICSPLINE";
  rig.doc["animations"][0]["samplers"][1]["interpolation"] = "STEP";
  absl::StatusOr<ImportedAsset> asset =
      ReadGltfFile(rig.WriteGltf(dir + "/c.gltf"));
  ASSERT_TRUE(asset.ok()) << asset.status();
  const Clip& clip = asset->clips[0];
  const Track<Eigen::Vector3f>& t = clip.tracks[0].translation;
  EXPECT_EQ(t.interpolation, Interpolation::kCubicSpline);
  ASSERT_EQ(t.values.size(), 9u);
  for (int e = 0; e < 9; ++e) {
    EXPECT_EQ(t.values[e], Eigen::Vector3f(e, 10 * e, -e));
  }
  EXPECT_EQ(t.key_value(1), Eigen::Vector3f(4, 40, -4));
  EXPECT_EQ(clip.tracks[1].rotation.interpolation, Interpolation::kStep);
  EXPECT_TRUE(clip.Validate(asset->skeleton).ok());
}

TEST(GltfReader, NormalisedIntegerRotationsDecodeAsTheSpecSays) {
  const std::string dir = TempDir();
  GltfBuilder rig = TinyRig();
  // SHORT normalised: c / 32767. Quarter and half turns about Z.
  const int16_t s = 23170;  // round(32767 / sqrt(2))
  const std::vector<int16_t> shorts = {0, 0, 0, 32767, 0,     0,
                                       s, s, 0, 0,     32767, 0};
  const int view = rig.AddView(Bytes(shorts));
  const int acc =
      rig.AddAccessor(view, kShort, 3, "VEC4", {{"normalized", true}});
  rig.doc["animations"][0]["samplers"][1]["output"] = acc;
  absl::StatusOr<ImportedAsset> asset =
      ReadGltfFile(rig.WriteGltf(dir + "/s.gltf"));
  ASSERT_TRUE(asset.ok()) << asset.status();
  const auto& keys = asset->clips[0].tracks[1].rotation.values;
  ASSERT_EQ(keys.size(), 3u);
  const float c = 23170.0f / 32767.0f;
  const Eigen::Vector4f expected =
      Eigen::Vector4f(0, 0, c, c) / std::sqrt(2 * c * c);  // renormalised
  EXPECT_TRUE(keys[1].coeffs().isApprox(expected, 1e-6f));
  EXPECT_EQ(keys[2].coeffs(), Eigen::Vector4f(0, 0, 1, 0));

  // BYTE normalised: -128 clamps to -1 (max(c / 127, -1)).
  GltfBuilder rig2 = TinyRig();
  const std::vector<int8_t> bytes = {0, 0, 0, 127, 0, 0, -128, 0, 0, 0, 127, 0};
  const int acc2 = rig2.AddAccessor(rig2.AddView(Bytes(bytes)), kByte, 3,
                                    "VEC4", {{"normalized", true}});
  rig2.doc["animations"][0]["samplers"][1]["output"] = acc2;
  absl::StatusOr<ImportedAsset> asset2 =
      ReadGltfFile(rig2.WriteGltf(dir + "/b.gltf"));
  ASSERT_TRUE(asset2.ok()) << asset2.status();
  EXPECT_EQ(asset2->clips[0].tracks[1].rotation.values[1].coeffs(),
            Eigen::Vector4f(0, 0, -1, 0));
}

TEST(GltfReader, SparseAndStridedAccessorsAreRead) {
  const std::string dir = TempDir();
  GltfBuilder rig = TinyRig();
  // Translations interleaved with a padding float: byteStride 16.
  const std::vector<float> padded = {0, 1, 0, 99, 7, 8, 9, 99, 1, 1, 0.25f, 99};
  const int view = rig.AddView(Bytes(padded), 16);
  const int base = rig.AddAccessor(view, kFloat, 3, "VEC3");
  rig.doc["animations"][0]["samplers"][0]["output"] = base;
  // Sparse override of element 2 of the same data.
  const std::vector<uint16_t> indices = {2};
  const std::vector<float> values = {-1, -2, -3};
  const int iview = rig.AddView(Bytes(indices));
  const int vview = rig.AddView(Bytes(values));
  json sparse = {
      {"count", 1},
      {"indices", {{"bufferView", iview}, {"componentType", kUnsignedShort}}},
      {"values", {{"bufferView", vview}}}};
  const int sparse_acc =
      rig.AddAccessor(view, kFloat, 3, "VEC3", {{"sparse", sparse}});
  rig.doc["nodes"][2]["children"] = {4};
  rig.doc["nodes"].push_back({{"name", "Chest"}});
  rig.doc["skins"][0]["joints"] = {1, 2, 4};
  rig.doc["animations"][0]["channels"].push_back(
      {{"sampler", 2}, {"target", {{"node", 4}, {"path", "translation"}}}});
  rig.doc["animations"][0]["samplers"].push_back(
      {{"input", kTimes}, {"output", sparse_acc}});
  absl::StatusOr<ImportedAsset> asset =
      ReadGltfFile(rig.WriteGltf(dir + "/s.gltf"));
  ASSERT_TRUE(asset.ok()) << asset.status();
  const auto& strided = asset->clips[0].tracks[0].translation.values;
  EXPECT_EQ(strided[1], Eigen::Vector3f(7, 8, 9));
  EXPECT_EQ(strided[2], Eigen::Vector3f(1, 1, 0.25f));
  const int chest = asset->skeleton.FindJoint("Chest");
  ASSERT_EQ(chest, 2);
  const auto& patched = asset->clips[0].tracks[chest].translation.values;
  EXPECT_EQ(patched[1], Eigen::Vector3f(7, 8, 9));
  EXPECT_EQ(patched[2], Eigen::Vector3f(-1, -2, -3));
}

TEST(GltfReader, SlightlyOffRotationsAreRenormalisedFarOffOnesRejected) {
  const std::string dir = TempDir();
  GltfBuilder rig = TinyRig();
  const std::vector<float> off = {0, 0,     0, 1.02f, 0,    0,
                                  0, 0.99f, 0, 0,     0.6f, 0.8f};
  rig.doc["animations"][0]["samplers"][1]["output"] =
      rig.AddFloats(off, "VEC4");
  absl::StatusOr<ImportedAsset> asset =
      ReadGltfFile(rig.WriteGltf(dir + "/a.gltf"));
  ASSERT_TRUE(asset.ok()) << asset.status();
  for (const auto& q : asset->clips[0].tracks[1].rotation.values) {
    EXPECT_NEAR(q.norm(), 1.0f, 1e-6f);
  }
  EXPECT_EQ(asset->clips[0].tracks[1].rotation.values[0].coeffs(),
            Eigen::Vector4f(0, 0, 0, 1));

  GltfBuilder far = TinyRig();
  far.doc["animations"][0]["samplers"][1]["output"] =
      far.AddFloats({0, 0, 0, 1, 0, 0, 0, 1.5f, 0, 0, 0, 1}, "VEC4");
  const std::string path = far.WriteGltf(dir + "/b.gltf");
  absl::StatusOr<ImportedAsset> bad = ReadGltfFile(path);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(),
              HasSubstr("animation 0 'Wave' channel 1 (node 2 'Spine' "
                        "rotation): key 1 rotation (0, 0, 0, 1.5) has norm "
                        "1.5"));
  // A looser tolerance accepts it.
  EXPECT_TRUE(
      ReadGltfFile(path, GltfReadOptions{.max_rotation_norm_error = 0.6f})
          .ok());
}

TEST(GltfReader, WeightsChannelsAreSkippedSilentlyOtherNodesWithAWarning) {
  const std::string dir = TempDir();
  GltfBuilder rig = TinyRig();
  const int weights = rig.AddFloats({0, 0.5f, 1}, "SCALAR");
  rig.doc["animations"][0]["samplers"].push_back(
      {{"input", kTimes}, {"output", weights}});
  rig.doc["animations"][0]["channels"].push_back(
      {{"sampler", 2}, {"target", {{"node", 2}, {"path", "weights"}}}});
  absl::StatusOr<ImportedAsset> asset =
      ReadGltfFile(rig.WriteGltf(dir + "/w.gltf"));
  ASSERT_TRUE(asset.ok()) << asset.status();
  EXPECT_THAT(asset->warnings, testing::IsEmpty());

  rig.doc["animations"][0]["channels"].push_back(
      {{"sampler", 0}, {"target", {{"node", 3}, {"path", "translation"}}}});
  asset = ReadGltfFile(rig.WriteGltf(dir + "/n.gltf"));
  ASSERT_TRUE(asset.ok()) << asset.status();
  EXPECT_THAT(asset->warnings,
              testing::ElementsAre(HasSubstr(
                  "1 channel(s) on non-joint nodes ignored: node 3 'Tip' "
                  "translation")));
}

TEST(GltfReader, UnnamedAndDuplicateJointNamesGetUniqueNodeNames) {
  const std::string dir = TempDir();
  GltfBuilder rig = TinyRig();
  rig.doc["nodes"][2]["name"] = "Hips";    // duplicate of node 1
  rig.doc["nodes"][3]["name"] = "node_2";  // squats the fallback name
  rig.doc["nodes"][1].erase("name");
  rig.doc["skins"][0]["joints"] = {1, 2, 3};
  absl::StatusOr<ImportedAsset> asset =
      ReadGltfFile(rig.WriteGltf(dir + "/n.gltf"));
  ASSERT_TRUE(asset.ok()) << asset.status();
  const Skeleton& s = asset->skeleton;
  ASSERT_EQ(s.num_joints(), 3);
  // Node 1 has no name; node 2 keeps "Hips" (the first holder of it);
  // node 3 keeps "node_2", so node 1 is "node_1".
  EXPECT_EQ(s.joint_name(0), "node_1");
  EXPECT_EQ(s.joint_name(1), "Hips");
  EXPECT_EQ(s.joint_name(2), "node_2");
  EXPECT_THAT(asset->warnings,
              testing::ElementsAre(HasSubstr("node 1 has no name; named "
                                             "'node_1'")));

  rig.doc["nodes"][1]["name"] = "Hips";
  rig.doc["nodes"][3]["name"] = "Hips";
  asset = ReadGltfFile(rig.WriteGltf(dir + "/d.gltf"));
  ASSERT_TRUE(asset.ok()) << asset.status();
  EXPECT_EQ(asset->skeleton.joint_name(0), "Hips");
  EXPECT_EQ(asset->skeleton.joint_name(1), "node_2");
  EXPECT_EQ(asset->skeleton.joint_name(2), "node_3");
  EXPECT_EQ(asset->warnings.size(), 2u);
}

TEST(GltfReader, FileWithoutSkinsUsesEveryNodeOfTheDefaultScene) {
  const std::string dir = TempDir();
  GltfBuilder rig = TinyRig();
  rig.doc.erase("skins");
  rig.doc["nodes"].push_back({{"name", "Elsewhere"}});  // not in scene 0
  absl::StatusOr<ImportedAsset> asset =
      ReadGltfFile(rig.WriteGltf(dir + "/n.gltf"));
  ASSERT_TRUE(asset.ok()) << asset.status();
  const Skeleton& s = asset->skeleton;
  ASSERT_EQ(s.num_joints(), 4);
  EXPECT_EQ(s.joint_name(0), "Armature");
  EXPECT_EQ(s.joint_name(1), "Hips");
  EXPECT_EQ(s.joint_name(2), "Spine");
  EXPECT_EQ(s.joint_name(3), "Tip");
  EXPECT_EQ(s.parent(3), 1);
  EXPECT_EQ(s.FindJoint("Elsewhere"), -1);
  EXPECT_THAT(asset->warnings,
              testing::ElementsAre(HasSubstr("no skins: the 4 nodes of scene "
                                             "0 are joints")));
  EXPECT_FALSE(asset->clips[0].tracks[1].translation.empty());

  EXPECT_EQ(
      ReadGltfFile(dir + "/n.gltf", GltfReadOptions{.skin = 0}).status().code(),
      absl::StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------
// Malformed files: each error has its code, names the file and the culprit.

void ExpectError(const absl::StatusOr<ImportedAsset>& result,
                 absl::StatusCode code, const std::string& path,
                 const std::string& fragment) {
  ASSERT_FALSE(result.ok()) << "expected an error containing: " << fragment;
  EXPECT_EQ(result.status().code(), code) << result.status();
  EXPECT_THAT(result.status().message(), HasSubstr(path));
  EXPECT_THAT(result.status().message(), HasSubstr(fragment));
}

TEST(GltfReaderErrors, MissingFileIsNotFound) {
  const std::string path = TempDir() + "/nope.glb";
  ExpectError(ReadGltfFile(path), absl::StatusCode::kNotFound, path,
              "cannot open");
}

TEST(GltfReaderErrors, TextFileIsNotAGltf) {
  const std::string path = TempDir() + "/notes.gltf";
  WriteBytes(path, "hello, this is not JSON\n");
  ExpectError(ReadGltfFile(path), absl::StatusCode::kInvalidArgument, path,
              "not a glTF file: neither the binary 'glTF' magic nor a JSON "
              "object");
}

TEST(GltfReaderErrors, GlbWithoutMagicIsRejected) {
  const std::string dir = TempDir();
  const std::string path = dir + "/json.glb";
  WriteBytes(path, ReadBytes(TinyRig().WriteGltf(dir + "/rig.gltf")));
  ExpectError(ReadGltfFile(path), absl::StatusCode::kInvalidArgument, path,
              "not a binary glTF: the file does not start with the 'glTF' "
              "magic");
}

TEST(GltfReaderErrors, JsonSyntaxErrorIsReported) {
  const std::string path = TempDir() + "/broken.gltf";
  WriteBytes(path,
             R"({"asset": {"version": "2.0"}, "nodes": [{"name": "a"},,]})");
  ExpectError(ReadGltfFile(path), absl::StatusCode::kInvalidArgument, path,
              "JSON syntax error");
}

TEST(GltfReaderErrors, MissingAssetOrWrongVersionIsRejected) {
  const std::string dir = TempDir();
  WriteBytes(dir + "/a.gltf", R"({"nodes": []})");
  ExpectError(ReadGltfFile(dir + "/a.gltf"), absl::StatusCode::kInvalidArgument,
              dir + "/a.gltf", "not a valid glTF 2.0 file");
  GltfBuilder rig = TinyRig();
  rig.doc["asset"]["version"] = "1.0";
  const std::string path = rig.WriteGltf(dir + "/v.gltf");
  ExpectError(ReadGltfFile(path), absl::StatusCode::kInvalidArgument, path,
              "glTF version '1.0' is not supported");
}

TEST(GltfReaderErrors, TruncatedFoxNeverLoads) {
  const std::string dir = TempDir();
  const std::string fox = ReadBytes(DataPath("Fox.glb"));
  ASSERT_GT(fox.size(), 100000u);
  for (size_t length :
       {size_t{0}, size_t{3}, size_t{11}, size_t{12}, size_t{19}, size_t{20},
        size_t{100}, size_t{1000}, size_t{5000}, fox.size() / 2, fox.size() - 4,
        fox.size() - 1}) {
    SCOPED_TRACE(absl::StrCat("length ", length));
    const std::string path = absl::StrCat(dir, "/fox_", length, ".glb");
    WriteBytes(path, fox.substr(0, length));
    absl::StatusOr<ImportedAsset> result = ReadGltfFile(path);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(result.status().message(),
                HasSubstr(length < 4 ? "not a binary glTF" : "truncated .glb"));
  }
  // Same cuts with the header's length patched to match: the chunks
  // themselves are then short, or the buffers no longer fit.
  for (size_t length : {size_t{24}, size_t{1000}, size_t{5000}, fox.size() / 2,
                        fox.size() - 4}) {
    SCOPED_TRACE(absl::StrCat("patched length ", length));
    std::string cut = fox.substr(0, length);
    const uint32_t declared = static_cast<uint32_t>(length);
    std::memcpy(cut.data() + 8, &declared, 4);
    const std::string path = absl::StrCat(dir, "/fox_patched_", length, ".glb");
    WriteBytes(path, cut);
    absl::StatusOr<ImportedAsset> result = ReadGltfFile(path);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(result.status().message(), HasSubstr(path));
  }
}

TEST(GltfReaderErrors, AccessorOutOfBoundsNamesChannelAndAccessor) {
  const std::string dir = TempDir();
  GltfBuilder rig = TinyRig();
  rig.doc["accessors"][kTurns]["count"] = 1000;
  const std::string path = rig.WriteGltf(dir + "/oob.gltf");
  ExpectError(ReadGltfFile(path), absl::StatusCode::kInvalidArgument, path,
              "animation 0 'Wave' channel 1 (node 2 'Spine' rotation): output "
              "accessor 3: 1000 elements of 16 bytes (stride 16) from offset 0 "
              "run past the end of buffer view 3 (48 bytes): out of bounds");
  rig.doc["accessors"][kTurns]["count"] = 3;
  rig.doc["accessors"][kTurns]["byteOffset"] = 4;
  ExpectError(ReadGltfFile(rig.WriteGltf(path)),
              absl::StatusCode::kInvalidArgument, path, "out of bounds");
}

TEST(GltfReaderErrors, BufferViewOutsideItsBuffer) {
  const std::string dir = TempDir();
  GltfBuilder rig = TinyRig();
  rig.doc["bufferViews"][kMoves]["byteLength"] = 1 << 20;
  const std::string path = rig.WriteGltf(dir + "/view.gltf");
  ExpectError(ReadGltfFile(path), absl::StatusCode::kInvalidArgument, path,
              "channel 0 (node 1 'Hips' translation): output accessor 2: "
              "buffer view 2 bytes [");
  rig.doc["accessors"][kMoves]["bufferView"] = 17;
  ExpectError(ReadGltfFile(rig.WriteGltf(path)),
              absl::StatusCode::kInvalidArgument, path,
              "buffer view 17 does not exist");
}

TEST(GltfReaderErrors, StrideSmallerThanElement) {
  const std::string dir = TempDir();
  GltfBuilder rig = TinyRig();
  rig.doc["bufferViews"][kMoves]["byteStride"] = 4;
  const std::string path = rig.WriteGltf(dir + "/stride.gltf");
  ExpectError(ReadGltfFile(path), absl::StatusCode::kInvalidArgument, path,
              "byteStride 4 is smaller than an element (12 bytes)");
}

TEST(GltfReaderErrors, MeshoptCompressedAnimationDataIsRefused) {
  const std::string dir = TempDir();
  GltfBuilder rig = TinyRig();
  rig.doc["bufferViews"][kTurns]["extensions"] = {
      {"EXT_meshopt_compression",
       {{"buffer", 0}, {"byteLength", 8}, {"byteStride", 16}, {"count", 3}}}};
  const std::string path = rig.WriteGltf(dir + "/meshopt.gltf");
  ExpectError(ReadGltfFile(path), absl::StatusCode::kInvalidArgument, path,
              "output accessor 3: buffer view 3 is compressed with "
              "EXT_meshopt_compression");
}

TEST(GltfReaderErrors, ChannelTargetingAMissingNode) {
  const std::string dir = TempDir();
  GltfBuilder rig = TinyRig();
  rig.doc["animations"][0]["channels"][1]["target"]["node"] = 99;
  const std::string path = rig.WriteGltf(dir + "/target.gltf");
  ExpectError(ReadGltfFile(path), absl::StatusCode::kInvalidArgument, path,
              "animation 0 'Wave' channel 1: target node 99 does not exist "
              "(the file has 4 nodes)");
}

TEST(GltfReaderErrors, BadSamplerReferences) {
  const std::string dir = TempDir();
  GltfBuilder rig = TinyRig();
  rig.doc["animations"][0]["channels"][0]["sampler"] = 7;
  const std::string path = rig.WriteGltf(dir + "/sampler.gltf");
  ExpectError(ReadGltfFile(path), absl::StatusCode::kInvalidArgument, path,
              "channel 0 (node 1 'Hips' translation): sampler 7 does not "
              "exist");

  GltfBuilder rig2 = TinyRig();
  rig2.doc["animations"][0]["samplers"][1]["interpolation"] = "BEZIER";
  ExpectError(ReadGltfFile(rig2.WriteGltf(path)),
              absl::StatusCode::kInvalidArgument, path,
              "unknown interpolation 'BEZIER'");

  GltfBuilder rig3 = TinyRig();
  rig3.doc["animations"][0]["samplers"][1]["interpolation"] = "CUBICSPLINE";
  ExpectError(ReadGltfFile(rig3.WriteGltf(path)),
              absl::StatusCode::kInvalidArgument, path,
              "output has 3 elements for 3 keys (cubic-spline needs 9)");

  GltfBuilder rig4 = TinyRig();
  rig4.doc["animations"][0]["samplers"][1]["output"] = kMoves;
  ExpectError(ReadGltfFile(rig4.WriteGltf(path)),
              absl::StatusCode::kInvalidArgument, path,
              "output accessor 2: type VEC3, expected VEC4");

  GltfBuilder rig5 = TinyRig();
  rig5.doc["animations"][0]["channels"][1]["target"]["node"] = 1;
  rig5.doc["animations"][0]["channels"][1]["target"]["path"] = "translation";
  ExpectError(ReadGltfFile(rig5.WriteGltf(path)),
              absl::StatusCode::kInvalidArgument, path,
              "channel 1 (node 1 'Hips' translation): channel 0 already "
              "animates this target");
}

TEST(GltfReaderErrors, InvalidSkinJointIndex) {
  const std::string dir = TempDir();
  GltfBuilder rig = TinyRig();
  rig.doc["skins"][0]["joints"] = {1, 42};
  const std::string path = rig.WriteGltf(dir + "/skin.gltf");
  ExpectError(ReadGltfFile(path), absl::StatusCode::kInvalidArgument, path,
              "skin 0 joints[1]: node 42 does not exist (the file has 4 "
              "nodes)");
}

TEST(GltfReaderErrors, CyclesAndSharedNodesInTheHierarchy) {
  const std::string dir = TempDir();
  const std::string path = dir + "/graph.gltf";
  GltfBuilder cycle = TinyRig();
  cycle.doc.erase("scene");
  cycle.doc.erase("scenes");
  cycle.doc["nodes"][2]["children"] = {0};  // 0 > 1 > 2 > 0
  ExpectError(ReadGltfFile(cycle.WriteGltf(path)),
              absl::StatusCode::kInvalidArgument, path,
              "is part of a cycle in the node hierarchy");

  GltfBuilder self = TinyRig();
  self.doc["nodes"][2]["children"] = {2};
  ExpectError(ReadGltfFile(self.WriteGltf(path)),
              absl::StatusCode::kInvalidArgument, path,
              "node 2 'Spine' lists itself as a child");

  GltfBuilder shared = TinyRig();
  shared.doc["nodes"][0]["children"] = {1, 2};  // 2 is also a child of 1
  ExpectError(ReadGltfFile(shared.WriteGltf(path)),
              absl::StatusCode::kInvalidArgument, path,
              "node 2 'Spine' is reachable twice: it is a child of both node "
              "0 'Armature' and node 1 'Hips'");

  GltfBuilder back = TinyRig();
  back.doc["nodes"][2]["children"] = {0};  // the scene root gets a parent
  ExpectError(ReadGltfFile(back.WriteGltf(path)),
              absl::StatusCode::kInvalidArgument, path,
              "node 0 'Armature' is reachable twice: it is a scene root and a "
              "child of node 2 'Spine'");

  GltfBuilder dangling = TinyRig();
  dangling.doc["nodes"][1]["children"] = {2, 3, 8};
  ExpectError(ReadGltfFile(dangling.WriteGltf(path)),
              absl::StatusCode::kInvalidArgument, path,
              "node 1 'Hips' children[2]: node 8 does not exist");
}

TEST(GltfReaderErrors, BadKeyTimes) {
  const std::string dir = TempDir();
  const std::string path = dir + "/times.gltf";
  GltfBuilder flat = TinyRig();
  flat.doc["animations"][0]["samplers"][1]["input"] =
      flat.AddFloats({0.5f, 0.5f, 1.5f}, "SCALAR");
  ExpectError(ReadGltfFile(flat.WriteGltf(path)),
              absl::StatusCode::kInvalidArgument, path,
              "channel 1 (node 2 'Spine' rotation): key 1 time 0.5 does not "
              "increase (previous 0.5)");

  GltfBuilder negative = TinyRig();
  negative.doc["animations"][0]["samplers"][0]["input"] =
      negative.AddFloats({-1.0f, 0.0f, 1.0f}, "SCALAR");
  ExpectError(ReadGltfFile(negative.WriteGltf(path)),
              absl::StatusCode::kInvalidArgument, path,
              "key 0 time -1 is negative or not finite");
}

TEST(GltfReaderErrors, ZeroOrNonFiniteRotationKeys) {
  const std::string dir = TempDir();
  const std::string path = dir + "/rot.gltf";
  GltfBuilder zero = TinyRig();
  zero.doc["animations"][0]["samplers"][1]["output"] =
      zero.AddFloats({0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1}, "VEC4");
  ExpectError(ReadGltfFile(zero.WriteGltf(path)),
              absl::StatusCode::kInvalidArgument, path,
              "animation 0 'Wave' channel 1 (node 2 'Spine' rotation): key 1 "
              "rotation (0, 0, 0, 0) has norm 0");

  GltfBuilder nan = TinyRig();
  const float q = std::numeric_limits<float>::quiet_NaN();
  nan.doc["animations"][0]["samplers"][1]["output"] =
      nan.AddFloats({0, 0, 0, 1, 0, 0, 0, 1, q, 0, 0, 1}, "VEC4");
  ExpectError(ReadGltfFile(nan.WriteGltf(path)),
              absl::StatusCode::kInvalidArgument, path,
              "channel 1 (node 2 'Spine' rotation): key 2 has a non-finite "
              "value");
}

TEST(GltfReaderErrors, MatricesWithoutATrsForm) {
  const std::string dir = TempDir();
  const std::string path = dir + "/matrix.gltf";
  GltfBuilder shear = TinyRig();
  shear.doc["nodes"][2].erase("rotation");
  shear.doc["nodes"][2].erase("translation");
  shear.doc["nodes"][2]["matrix"] = {1, 0, 0, 0, 0.5, 1, 0, 0,
                                     0, 0, 1, 0, 0,   0, 0, 1};
  ExpectError(ReadGltfFile(shear.WriteGltf(path)),
              absl::StatusCode::kInvalidArgument, path,
              "node 2 'Spine' matrix: has shear");

  GltfBuilder mirror = TinyRig();
  mirror.doc["nodes"][1].erase("translation");
  mirror.doc["nodes"][1]["matrix"] = {-1, 0, 0, 0, 0, 1, 0, 0,
                                      0,  0, 1, 0, 0, 0, 0, 1};
  ExpectError(ReadGltfFile(mirror.WriteGltf(path)),
              absl::StatusCode::kInvalidArgument, path,
              "node 1 'Hips' matrix: negative determinant");

  GltfBuilder folded = TinyRig();  // an ancestor matrix is checked too
  folded.doc["nodes"][0]["matrix"] = {1, 0, 0, 0,   0, 1, 0, 0,
                                      0, 0, 1, 0.5, 0, 0, 0, 1};
  ExpectError(ReadGltfFile(folded.WriteGltf(path)),
              absl::StatusCode::kInvalidArgument, path,
              "node 0 'Armature' matrix: last row");

  GltfBuilder short_trs = TinyRig();
  short_trs.doc["nodes"][2]["rotation"] = {0, 0, 1};
  ExpectError(ReadGltfFile(short_trs.WriteGltf(path)),
              absl::StatusCode::kInvalidArgument, path,
              "node 2 'Spine' rotation: 3 numbers (expected 4)");
}

TEST(GltfReaderErrors, ExternalBufferMissingOrOutsideTheDirectory) {
  const std::string dir = TempDir();
  const GltfBuilder rig = TinyRig();
  json doc = rig.doc;
  doc["buffers"] = {{{"byteLength", rig.bin.size()}, {"uri", "gone.bin"}}};
  WriteBytes(dir + "/gone.gltf", doc.dump());
  ExpectError(ReadGltfFile(dir + "/gone.gltf"), absl::StatusCode::kNotFound,
              dir + "/gone.gltf", "gone.bin");

  // A buffer beside the directory exists but must not be followed.
  std::filesystem::create_directories(dir + "/sub");
  WriteBytes(dir + "/outside.bin", rig.bin);
  doc["buffers"][0]["uri"] = "../outside.bin";
  WriteBytes(dir + "/sub/escape.gltf", doc.dump());
  ExpectError(ReadGltfFile(dir + "/sub/escape.gltf"),
              absl::StatusCode::kNotFound, dir + "/sub/escape.gltf",
              "../outside.bin");
}

TEST(GltfReaderErrors, OptionsAreChecked) {
  const std::string dir = TempDir();
  const std::string path = TinyRig().WriteGltf(dir + "/rig.gltf");
  ExpectError(ReadGltfFile(path, GltfReadOptions{.skin = 1}),
              absl::StatusCode::kInvalidArgument, path,
              "options.skin = 1 is out of range (the file has 1 skins");
  ExpectError(
      ReadGltfFile(path, GltfReadOptions{.max_rotation_norm_error = -1}),
      absl::StatusCode::kInvalidArgument, path,
      "options.max_rotation_norm_error");
}

}  // namespace gltf_reader_test
}  // namespace posewire
