// glTF writer: poses written and read back with ReadGltfFile/ParseGltf keep
// their joint names, parents, rest pose, end sites and every frame's local
// TRS, on the CMU walk and the glTF sample rigs. What posewire's reader does
// not look at (inverse bind matrices, the scene, key times and the sign of
// rotation keys) is checked on the written JSON and BIN chunk, decoded here
// with nlohmann::json and memcpy and composed as glTF composes nodes.
//
// GltfWriter.WritesBlenderFixture also writes the .glb and the expected
// joint positions that tests/blender/test_gltf_import.py imports into
// Blender ($POSEWIRE_GLTF_OUT, see tests/blender/run_blender_import_test.sh).
#include "solver_core/io/gltf_writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <Eigen/Geometry>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "solver_core/io/bvh_reader.h"
#include "solver_core/io/bvh_writer.h"
#include "solver_core/io/gltf_reader.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/model/pose.h"
#include "solver_core/pose_ops/sampling_job.h"

namespace posewire {
namespace gltf_writer_test {

using ::nlohmann::json;
using ::testing::HasSubstr;

// Local TRS and model-space positions (relative to the longest bone) agree
// to this after a write and a read.
constexpr double kTolerance = 1e-5;

std::string DataPath(absl::string_view file) {
  return absl::StrCat(POSEWIRE_TEST_DATA_DIR, "/", file);
}

// A fresh directory per test, so that parallel ctest runs never collide.
std::string TempDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) /
      absl::StrCat("gltf_writer_", info->name(), "_", ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

absl::Span<const unsigned char> Bytes(const std::string& s) {
  return absl::MakeConstSpan(reinterpret_cast<const unsigned char*>(s.data()),
                             s.size());
}

Skeleton MakeSkeleton(std::vector<std::string> names, std::vector<int> parents,
                      std::vector<Transform> rest) {
  SkeletonDesc desc{std::move(names), std::move(parents), std::move(rest)};
  absl::StatusOr<Skeleton> skeleton = Skeleton::Create(std::move(desc));
  EXPECT_TRUE(skeleton.ok()) << skeleton.status();
  return *std::move(skeleton);
}

Transform Trs(Eigen::Vector3f t = Eigen::Vector3f::Zero(),
              Eigen::Quaternionf r = {1, 0, 0, 0},
              Eigen::Vector3f s = Eigen::Vector3f::Ones()) {
  Transform x;
  x.translation = t;
  x.rotation = r.normalized();
  x.scale = s;
  return x;
}

Eigen::Quaternionf AxisAngle(float radians, Eigen::Vector3f axis) {
  return Eigen::Quaternionf(Eigen::AngleAxisf(radians, axis.normalized()));
}

// The pose a clip holds at key `k`, read straight from the keys (every
// written track has a key per frame; a missing track is the rest value).
LocalPose PoseAtKey(const Skeleton& skeleton, const Clip& clip, size_t k) {
  LocalPose pose = RestPose(skeleton);
  for (int j = 0; j < skeleton.num_joints(); ++j) {
    const JointTracks& tracks = clip.tracks[j];
    if (!tracks.translation.empty()) {
      pose[j].translation = tracks.translation.key_value(k);
    }
    if (!tracks.rotation.empty())
      pose[j].rotation = tracks.rotation.key_value(k);
    if (!tracks.scale.empty()) pose[j].scale = tracks.scale.key_value(k);
  }
  return pose;
}

// Every key of the asset's first clip (a BVH clip has one per frame).
std::vector<LocalPose> AllKeys(const ImportedAsset& asset) {
  const Clip& clip = asset.clips.at(0);
  std::vector<LocalPose> frames;
  for (size_t k = 0; k < clip.tracks[0].rotation.times.size(); ++k) {
    frames.push_back(PoseAtKey(asset.skeleton, clip, k));
  }
  return frames;
}

// The clip sampled every `step` seconds from 0 to its duration.
std::vector<LocalPose> Sample(const Skeleton& skeleton, const Clip& clip,
                              float step) {
  std::vector<LocalPose> frames;
  // The small margin keeps a last key at duration from rounding away.
  const int count =
      static_cast<int>(std::floor(clip.duration / step + 1e-3f)) + 1;
  for (int i = 0; i < count; ++i) {
    LocalPose pose(skeleton.num_joints());
    SamplingJob job;
    job.skeleton = &skeleton;
    job.clip = &clip;
    job.time = static_cast<float>(i) * step;
    job.mode = PlaybackMode::kClamp;
    job.output = absl::MakeSpan(pose);
    EXPECT_TRUE(job.Run().ok()) << clip.name << " at " << job.time;
    frames.push_back(std::move(pose));
  }
  return frames;
}

std::vector<Eigen::Vector3f> ModelPositions(const Skeleton& skeleton,
                                            const LocalPose& pose) {
  ModelPose model(skeleton.num_joints());
  LocalToModelJob job;
  job.skeleton = &skeleton;
  job.input = pose;
  job.output = absl::MakeSpan(model);
  EXPECT_TRUE(job.Run().ok());
  std::vector<Eigen::Vector3f> positions;
  for (const Transform& t : model) positions.push_back(t.translation);
  return positions;
}

// The longest bone of the rest pose in model space: the unit model-space
// tolerances are relative to.
double LongestBone(const Skeleton& skeleton) {
  const std::vector<Eigen::Vector3f> rest =
      ModelPositions(skeleton, RestPose(skeleton));
  double longest = 0.0;
  for (int j = 0; j < skeleton.num_joints(); ++j) {
    if (skeleton.parent(j) == kNoParent) continue;
    longest =
        std::max<double>(longest, (rest[j] - rest[skeleton.parent(j)]).norm());
  }
  return std::max(longest, 1e-3);
}

// |q| and |-q| are the same rotation: the angle between them, from the
// absolute dot product.
double RotationDistance(const Eigen::Quaternionf& a,
                        const Eigen::Quaternionf& b) {
  const double dot = std::fabs(
      a.cast<double>().normalized().dot(b.cast<double>().normalized()));
  return 2.0 * std::acos(std::min(1.0, dot));
}

void ExpectSameTransform(const Transform& written, const Transform& read,
                         const std::string& label) {
  EXPECT_LE((written.translation - read.translation).cwiseAbs().maxCoeff(),
            kTolerance * std::max(1.0f, written.translation.norm()))
      << label << " translation " << written.translation.transpose() << " vs "
      << read.translation.transpose();
  EXPECT_LE(RotationDistance(written.rotation, read.rotation), kTolerance)
      << label << " rotation " << written.rotation.coeffs().transpose()
      << " vs " << read.rotation.coeffs().transpose();
  EXPECT_LE((written.scale - read.scale).cwiseAbs().maxCoeff(),
            kTolerance * std::max(1.0f, written.scale.norm()))
      << label << " scale " << written.scale.transpose() << " vs "
      << read.scale.transpose();
}

// Writes, reads back with ParseGltf and checks the skeleton, the end sites
// and every frame (local TRS and model-space positions). The skeleton must
// be in pre-order, as everything the readers produce is.
ImportedAsset ExpectRoundTrip(const Skeleton& skeleton,
                              const std::vector<LocalPose>& frames,
                              const GltfWriteOptions& options,
                              const std::string& label) {
  SCOPED_TRACE(label);
  absl::StatusOr<std::string> bytes = WriteGltf(skeleton, frames, options);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  if (!bytes.ok()) return {};
  absl::StatusOr<ImportedAsset> back = ParseGltf(Bytes(*bytes), label);
  EXPECT_TRUE(back.ok()) << back.status();
  if (!back.ok()) return {};
  const Skeleton& read = back->skeleton;
  EXPECT_EQ(read.num_joints(), skeleton.num_joints());
  if (read.num_joints() != skeleton.num_joints()) return *std::move(back);
  for (int j = 0; j < skeleton.num_joints(); ++j) {
    EXPECT_EQ(read.joint_name(j), skeleton.joint_name(j));
    EXPECT_EQ(read.parent(j), skeleton.parent(j)) << skeleton.joint_name(j);
    ExpectSameTransform(skeleton.rest_pose()[j], read.rest_pose()[j],
                        absl::StrCat("rest ", skeleton.joint_name(j)));
  }

  // End sites as (joint, offset) sets: the reader lists them in node
  // pre-order, which may differ from the order given.
  using Site = std::tuple<int, float, float, float>;
  std::vector<Site> given, got;
  for (const EndSite& s : options.end_sites) {
    given.emplace_back(s.joint, s.offset.x(), s.offset.y(), s.offset.z());
  }
  for (const EndSite& s : back->end_sites) {
    got.emplace_back(s.joint, s.offset.x(), s.offset.y(), s.offset.z());
  }
  std::sort(given.begin(), given.end());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, given);

  EXPECT_EQ(back->clips.size(), 1u);
  if (back->clips.empty()) return *std::move(back);
  const Clip& clip = back->clips[0];
  EXPECT_EQ(clip.name, options.animation_name.empty() ? "animation_0"
                                                      : options.animation_name);
  const double length = (frames.size() - 1) * double{options.frame_time};
  EXPECT_NEAR(clip.duration, length, 1e-6 * std::max(1.0, length));
  const double limb = LongestBone(skeleton);
  for (size_t f = 0; f < frames.size(); ++f) {
    const LocalPose pose = PoseAtKey(read, clip, f);
    for (int j = 0; j < skeleton.num_joints(); ++j) {
      ExpectSameTransform(frames[f][j], pose[j],
                          absl::StrCat("frame ", f, " joint ", j, " '",
                                       skeleton.joint_name(j), "'"));
    }
    const std::vector<Eigen::Vector3f> a = ModelPositions(skeleton, frames[f]);
    const std::vector<Eigen::Vector3f> b = ModelPositions(read, pose);
    for (int j = 0; j < skeleton.num_joints(); ++j) {
      EXPECT_LE((a[j] - b[j]).norm(), kTolerance * limb)
          << "frame " << f << " joint " << j << " '" << skeleton.joint_name(j)
          << "': " << a[j].transpose() << " vs " << b[j].transpose();
    }
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "stopping at frame " << f;
      break;
    }
  }
  return *std::move(back);
}

// ---------------------------------------------------------------------------
// An independent view of a written .glb.

struct Glb {
  json doc;
  std::string bin;
};

uint32_t U32(const std::string& b, size_t at) {
  uint32_t v = 0;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}

Glb SplitGlb(const std::string& bytes) {
  Glb glb;
  EXPECT_EQ(bytes.substr(0, 4), "glTF");
  EXPECT_EQ(U32(bytes, 4), 2u);
  EXPECT_EQ(U32(bytes, 8), bytes.size());
  const uint32_t json_length = U32(bytes, 12);
  EXPECT_EQ(json_length % 4, 0u);  // chunks are 4-byte aligned
  glb.doc = json::parse(bytes.substr(20, json_length));
  const size_t bin_at = 20 + json_length;
  EXPECT_EQ(U32(bytes, bin_at + 4), 0x004E4942u);  // "BIN\0"
  glb.bin = bytes.substr(bin_at + 8, U32(bytes, bin_at));
  return glb;
}

// A tightly packed float accessor (all the writer produces).
std::vector<float> Floats(const Glb& glb, int index) {
  const json& accessor = glb.doc["accessors"][index];
  EXPECT_EQ(accessor["componentType"], 5126);
  EXPECT_FALSE(accessor.contains("sparse"));
  const json& view = glb.doc["bufferViews"][accessor["bufferView"].get<int>()];
  EXPECT_FALSE(view.contains("byteStride"));
  const std::string type = accessor["type"];
  const size_t width = type == "SCALAR" ? 1
                       : type == "VEC3" ? 3
                       : type == "VEC4" ? 4
                       : type == "MAT4" ? 16
                                        : 0;
  std::vector<float> out(width * accessor["count"].get<size_t>());
  const size_t at = view.value("byteOffset", size_t{0}) +
                    accessor.value("byteOffset", size_t{0});
  EXPECT_EQ(at % 4, 0u);
  EXPECT_LE(at + 4 * out.size(), view.value("byteOffset", size_t{0}) +
                                     view["byteLength"].get<size_t>());
  EXPECT_LE(at + 4 * out.size(), glb.bin.size());
  if (at + 4 * out.size() <= glb.bin.size()) {
    std::memcpy(out.data(), glb.bin.data() + at, 4 * out.size());
  }
  return out;
}

// A node's local matrix T * R * S from its JSON fields (glTF defaults for
// missing ones), through Eigen::Affine3d.
Eigen::Matrix4d LocalMatrix(const json& node) {
  EXPECT_FALSE(node.contains("matrix"));
  Eigen::Affine3d m = Eigen::Affine3d::Identity();
  const std::vector<double> t =
      node.value("translation", std::vector{0., 0., 0.});
  const std::vector<double> r =
      node.value("rotation", std::vector{0., 0., 0., 1.});
  const std::vector<double> s = node.value("scale", std::vector{1., 1., 1.});
  m.translate(Eigen::Vector3d(t[0], t[1], t[2]));
  m.rotate(Eigen::Quaterniond(r[3], r[0], r[1], r[2]));
  m.scale(Eigen::Vector3d(s[0], s[1], s[2]));
  return m.matrix();
}

// ---------------------------------------------------------------------------
// Real data.

TEST(GltfWriter, CmuWalkRoundTripsEveryFrame) {
  absl::StatusOr<ImportedAsset> walk =
      ReadBvhFile(DataPath("cmu_131_01_walk.bvh"));
  ASSERT_TRUE(walk.ok()) << walk.status();
  const std::vector<LocalPose> frames = AllKeys(*walk);
  ASSERT_EQ(frames.size(), 994u);
  GltfWriteOptions options;
  options.frame_time = 1.0f / 120.0f;
  options.end_sites = walk->end_sites;
  options.animation_name = "cmu_131_01";
  ASSERT_FALSE(walk->end_sites.empty());
  const ImportedAsset back =
      ExpectRoundTrip(walk->skeleton, frames, options, "walk.glb");
  ASSERT_EQ(back.clips.size(), 1u);

  // Only the root's translation moves in the source and BVH has no scale;
  // some joints (the hip joints, the fingers) never turn. Each channel that
  // stays at its rest value is left out; every other is there.
  const Clip& clip = back.clips[0];
  EXPECT_FALSE(clip.tracks[0].translation.empty());
  int still = 0;
  for (int j = 0; j < walk->skeleton.num_joints(); ++j) {
    const Eigen::Quaternionf& rest = walk->skeleton.rest_pose()[j].rotation;
    const bool turns =
        std::any_of(frames.begin(), frames.end(), [&](const LocalPose& pose) {
          return pose[j].rotation.coeffs() != rest.coeffs();
        });
    EXPECT_EQ(clip.tracks[j].rotation.empty(), !turns && j > 0) << j;
    still += !turns;
    EXPECT_TRUE(clip.tracks[j].scale.empty()) << j;
    if (j > 0) {
      EXPECT_TRUE(clip.tracks[j].translation.empty()) << j;
    }
  }
  EXPECT_GT(still, 0);
  const std::vector<float>& times = clip.tracks[0].rotation.times;
  ASSERT_EQ(times.size(), 994u);
  for (size_t k = 0; k < times.size(); ++k) {
    ASSERT_NEAR(times[k], k / 120.0, 1e-6 * std::max(1.0, k / 120.0))
        << "key " << k;
  }
}

TEST(GltfWriter, FoxClipsRoundTrip) {
  absl::StatusOr<ImportedAsset> fox = ReadGltfFile(DataPath("Fox.glb"));
  ASSERT_TRUE(fox.ok()) << fox.status();
  ASSERT_EQ(fox->clips.size(), 3u);
  for (const Clip& clip : fox->clips) {
    const std::vector<LocalPose> frames = Sample(fox->skeleton, clip, 1 / 30.f);
    ASSERT_GT(frames.size(), 10u) << clip.name;
    GltfWriteOptions options;
    options.animation_name = clip.name;
    options.end_sites = fox->end_sites;
    ExpectRoundTrip(fox->skeleton, frames, options,
                    absl::StrCat("fox_", clip.name, ".glb"));
  }
}

TEST(GltfWriter, RobotExpressiveFirstClipRoundTrips) {
  absl::StatusOr<ImportedAsset> robot =
      ReadGltfFile(DataPath("RobotExpressive.glb"));
  ASSERT_TRUE(robot.ok()) << robot.status();
  ASSERT_FALSE(robot->clips.empty());
  const Clip& clip = robot->clips[0];
  const std::vector<LocalPose> frames = Sample(robot->skeleton, clip, 1 / 30.f);
  ASSERT_GT(frames.size(), 10u);
  GltfWriteOptions options;
  options.animation_name = clip.name;
  options.end_sites = robot->end_sites;
  // The reader folded the armature's x100 (or 1/100) into the roots: the
  // rest pose written here carries it as the root's scale.
  ExpectRoundTrip(robot->skeleton, frames, options, "robot.glb");
}

// ---------------------------------------------------------------------------
// Small rigs.

// Two roots; end sites on a leaf, twice on another leaf, and on a joint
// with children.
Skeleton TwoRoots() {
  return MakeSkeleton(
      {"left", "left_knee", "left_ankle", "right", "right_knee"},
      {kNoParent, 0, 1, kNoParent, 3},
      {Trs({1, 2, 0}), Trs({0, -1, 0.25f}, AxisAngle(0.3f, {1, 0, 0})),
       Trs({0, -1, 0}), Trs({-1, 2, 0}, AxisAngle(-0.5f, {0, 1, 1})),
       Trs({0, -1.5f, 0})});
}

TEST(GltfWriter, SeveralRootsAndEndSitesRoundTrip) {
  const Skeleton skeleton = TwoRoots();
  const std::vector<EndSite> sites = {
      {.joint = 2, .offset = {0, 0, 0.3f}},
      {.joint = 4, .offset = {0, -0.5f, 0}},
      {.joint = 4, .offset = {0.1f, -0.5f, 0}},
      {.joint = 0, .offset = {0.5f, 0, 0}},
  };
  std::vector<LocalPose> frames;
  for (int f = 0; f < 40; ++f) {
    LocalPose pose = RestPose(skeleton);
    pose[0].translation += Eigen::Vector3f(0.05f * f, 0, 0);
    pose[1].rotation = AxisAngle(0.1f * f, {1, 0, 0});
    pose[3].rotation = AxisAngle(-0.07f * f, {0, 0, 1});
    pose[4].rotation = AxisAngle(0.2f * f, {0, 1, 0});
    frames.push_back(pose);
  }
  GltfWriteOptions options;
  options.end_sites = sites;
  const ImportedAsset back =
      ExpectRoundTrip(skeleton, frames, options, "roots.glb");

  absl::StatusOr<std::string> bytes = WriteGltf(skeleton, frames, options);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  const Glb glb = SplitGlb(*bytes);
  EXPECT_EQ(glb.doc["scene"], 0);
  EXPECT_EQ(glb.doc["scenes"][0]["nodes"], json({0, 3}));
  const json& nodes = glb.doc["nodes"];
  ASSERT_EQ(nodes.size(), 9u);
  EXPECT_EQ(nodes[5]["name"], "left_ankle_end");
  EXPECT_EQ(nodes[6]["name"], "right_knee_end");
  EXPECT_EQ(nodes[7]["name"], "right_knee_end_2");
  EXPECT_EQ(nodes[8]["name"], "left_end");
  EXPECT_EQ(nodes[0]["children"], json({1, 8}));  // joints first, then tips
  EXPECT_EQ(nodes[4]["children"], json({6, 7}));
}

TEST(GltfWriter, NonUniformScaleSurvivesInRestAndFrames) {
  const Skeleton skeleton =
      MakeSkeleton({"root", "mid", "tip"}, {kNoParent, 0, 1},
                   {Trs({0, 1, 0}, AxisAngle(0.4f, {0, 0, 1}), {2, 0.5f, 1}),
                    Trs({0, 1, 0}, AxisAngle(0.2f, {1, 0, 0}), {1, 3, 0.25f}),
                    Trs({0, 2, 0})});
  std::vector<LocalPose> frames;
  for (int f = 0; f < 20; ++f) {
    LocalPose pose = RestPose(skeleton);
    pose[0].scale = {2.0f + 0.1f * f, 0.5f, 1.0f - 0.02f * f};
    pose[2].scale = {0.5f, 0.5f + 0.1f * f, 4.0f};
    frames.push_back(pose);
  }
  const ImportedAsset back =
      ExpectRoundTrip(skeleton, frames, {}, "scaled.glb");
  ASSERT_EQ(back.clips.size(), 1u);
  const Clip& clip = back.clips[0];
  EXPECT_FALSE(clip.tracks[0].scale.empty());
  EXPECT_TRUE(clip.tracks[1].scale.empty());  // the rest's (1, 3, 0.25)
  EXPECT_FALSE(clip.tracks[2].scale.empty());
  EXPECT_EQ(back.skeleton.rest_pose()[1].scale, Eigen::Vector3f(1, 3, 0.25f));
  EXPECT_EQ(clip.tracks[0].scale.values[19], frames[19][0].scale);
}

TEST(GltfWriter, ConstantChannelsAtRestAreLeftOutAndSampleAsRest) {
  const Skeleton skeleton = TwoRoots();
  std::vector<LocalPose> frames;
  for (int f = 0; f < 10; ++f) {
    LocalPose pose = RestPose(skeleton);
    pose[1].rotation = AxisAngle(0.1f * f, {1, 0, 0});
    pose[2].translation = {0, -1, 0.5f};  // constant, but not the rest
    frames.push_back(pose);
  }
  absl::StatusOr<std::string> bytes = WriteGltf(skeleton, frames);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  const Glb glb = SplitGlb(*bytes);
  std::vector<std::pair<int, std::string>> targets;
  for (const json& c : glb.doc["animations"][0]["channels"]) {
    targets.emplace_back(c["target"]["node"], c["target"]["path"]);
  }
  // Joint 0's rotation is always there (glTF wants a channel).
  EXPECT_EQ(targets,
            (std::vector<std::pair<int, std::string>>{
                {0, "rotation"}, {1, "rotation"}, {2, "translation"}}));

  // What a player sees: sampling the read clip between and at the keys
  // gives the written frames, rest values included.
  absl::StatusOr<ImportedAsset> back = ParseGltf(Bytes(*bytes), "rest.glb");
  ASSERT_TRUE(back.ok()) << back.status();
  const std::vector<LocalPose> sampled =
      Sample(back->skeleton, back->clips.at(0), 1 / 30.f);
  ASSERT_EQ(sampled.size(), frames.size());
  for (size_t f = 0; f < frames.size(); ++f) {
    for (int j = 0; j < skeleton.num_joints(); ++j) {
      ExpectSameTransform(frames[f][j], sampled[f][j],
                          absl::StrCat("frame ", f, " joint ", j));
    }
  }
}

TEST(GltfWriter, RotationKeysAreUnitXyzwAndTakeTheShortWay) {
  const Skeleton skeleton = MakeSkeleton({"root"}, {kNoParent}, {Trs()});
  std::vector<LocalPose> frames;
  for (int f = 0; f < 24; ++f) {
    LocalPose pose = RestPose(skeleton);
    // A steady turn past 180 degrees, every other key given as -q: the
    // written keys must not jump between hemispheres.
    Eigen::Quaternionf q = AxisAngle(0.3f * f, {0, 0, 1});
    if (f % 2 == 1) q.coeffs() = -q.coeffs();
    pose[0].rotation = q;
    frames.push_back(pose);
  }
  absl::StatusOr<std::string> bytes = WriteGltf(skeleton, frames);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  const Glb glb = SplitGlb(*bytes);
  const json& animation = glb.doc["animations"][0];
  ASSERT_EQ(animation["channels"].size(), 1u);
  const json& sampler = animation["samplers"][0];
  EXPECT_EQ(sampler["interpolation"], "LINEAR");
  const std::vector<float> keys = Floats(glb, sampler["output"]);
  ASSERT_EQ(keys.size(), 4u * frames.size());
  for (size_t f = 0; f < frames.size(); ++f) {
    const Eigen::Vector4f key(keys[4 * f], keys[4 * f + 1], keys[4 * f + 2],
                              keys[4 * f + 3]);
    EXPECT_NEAR(key.norm(), 1.0f, 1e-6f) << f;
    // glTF order (x, y, z, w): a turn about Z has x = y = 0.
    EXPECT_EQ(key.x(), 0.0f);
    EXPECT_EQ(key.y(), 0.0f);
    const Eigen::Vector4f given = frames[f][0].rotation.coeffs();
    EXPECT_NEAR(std::fabs(key.dot(given)), 1.0f, 1e-6f) << f;
    if (f > 0) {
      const Eigen::Vector4f before(keys[4 * f - 4], keys[4 * f - 3],
                                   keys[4 * f - 2], keys[4 * f - 1]);
      EXPECT_GT(key.dot(before), 0.0f) << "keys " << f - 1 << " and " << f;
    }
  }
  const std::vector<float> times = Floats(glb, sampler["input"]);
  ASSERT_EQ(times.size(), frames.size());
  for (size_t f = 0; f < times.size(); ++f) {
    EXPECT_NEAR(times[f], f / 30.0, 1e-6) << "key " << f;
  }
  const json& input = glb.doc["accessors"][sampler["input"].get<int>()];
  EXPECT_EQ(input["min"][0].get<float>(), 0.0f);
  EXPECT_EQ(input["max"][0].get<float>(), times.back());
}

TEST(GltfWriter, InverseBindMatricesInvertTheRestWorldMatrices) {
  const Skeleton skeleton =
      MakeSkeleton({"root", "mid", "tip", "other"}, {kNoParent, 0, 1, 0},
                   {Trs({0, 1, 0}, AxisAngle(0.4f, {0, 0, 1}), {2, 2, 2}),
                    Trs({0, 1, 0}, AxisAngle(0.2f, {1, 0, 0}), {1, 3, 0.25f}),
                    Trs({0, 2, 1}, AxisAngle(-1.0f, {1, 1, 0})),
                    Trs({1, 0, 0}, AxisAngle(2.5f, {0, 1, 0}))});
  absl::StatusOr<std::string> bytes = WriteGltf(skeleton, {RestPose(skeleton)});
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  const Glb glb = SplitGlb(*bytes);
  ASSERT_EQ(glb.doc["skins"].size(), 1u);
  const json& skin = glb.doc["skins"][0];
  EXPECT_EQ(skin["joints"], json({0, 1, 2, 3}));
  EXPECT_FALSE(glb.doc.contains("meshes"));
  const std::vector<float> ibm = Floats(glb, skin["inverseBindMatrices"]);
  ASSERT_EQ(ibm.size(), 64u);
  const json& nodes = glb.doc["nodes"];
  for (int j = 0; j < 4; ++j) {
    Eigen::Matrix4d world = LocalMatrix(nodes[j]);
    for (int p = skeleton.parent(j); p != kNoParent; p = skeleton.parent(p)) {
      world = LocalMatrix(nodes[p]) * world;
    }
    const Eigen::Matrix4d inverse =
        Eigen::Map<const Eigen::Matrix4f>(&ibm[16 * j]).cast<double>();
    EXPECT_LE(
        (inverse * world - Eigen::Matrix4d::Identity()).cwiseAbs().maxCoeff(),
        1e-5)
        << "joint " << j << "\n"
        << inverse * world;
  }
  // The node numbers are the rest pose (a default value is left out).
  EXPECT_FALSE(nodes[2].contains("scale"));
  EXPECT_EQ(nodes[1]["scale"], json({1.0, 3.0, 0.25}));
  EXPECT_EQ(nodes[0]["translation"], json({0.0, 1.0, 0.0}));
  EXPECT_EQ(glb.doc["asset"]["version"], "2.0");
}

TEST(GltfWriter, NonPreorderSkeletonReadsBackInPreorder) {
  // b (index 2) comes before a's child a1 (index 3).
  const Skeleton skeleton = MakeSkeleton(
      {"r", "a", "b", "a1"}, {kNoParent, 0, 0, 1},
      {Trs({0, 0, 0}), Trs({1, 0, 0}), Trs({-1, 0, 0}), Trs({0, 2, 0})});
  LocalPose pose = RestPose(skeleton);
  pose[1].rotation = AxisAngle(1.57079633f, {1, 0, 0});
  absl::StatusOr<std::string> bytes = WriteGltf(skeleton, {pose});
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<ImportedAsset> back = ParseGltf(Bytes(*bytes), "order.glb");
  ASSERT_TRUE(back.ok()) << back.status();
  const Skeleton& read = back->skeleton;
  ASSERT_EQ(read.num_joints(), 4);
  EXPECT_EQ(read.joint_name(2), "a1");
  EXPECT_EQ(read.joint_name(3), "b");
  EXPECT_EQ(read.parent(2), 1);
  const std::vector<Eigen::Vector3f> model =
      ModelPositions(read, PoseAtKey(read, back->clips.at(0), 0));
  // a1 sits 2 up from a, turned 90 degrees about X: (1, 0, 2).
  EXPECT_LE((model[2] - Eigen::Vector3f(1, 0, 2)).norm(), 1e-6);
}

// ---------------------------------------------------------------------------
// Files and bytes.

TEST(GltfWriter, SameInputGivesTheSameBytes) {
  absl::StatusOr<ImportedAsset> fox = ReadGltfFile(DataPath("Fox.glb"));
  ASSERT_TRUE(fox.ok()) << fox.status();
  const std::vector<LocalPose> frames =
      Sample(fox->skeleton, fox->clips.at(1), 1 / 30.f);
  for (const bool binary : {true, false}) {
    GltfWriteOptions options;
    options.binary = binary;
    options.end_sites = fox->end_sites;
    absl::StatusOr<std::string> a = WriteGltf(fox->skeleton, frames, options);
    absl::StatusOr<std::string> b = WriteGltf(fox->skeleton, frames, options);
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_TRUE(*a == *b) << "binary " << binary;
  }
}

TEST(GltfWriter, GltfAndGlbFilesReadBackAlike) {
  const std::string dir = TempDir();
  const Skeleton skeleton = TwoRoots();
  std::vector<LocalPose> frames(3, RestPose(skeleton));
  frames[1][4].rotation = AxisAngle(1.0f, {0, 1, 0});
  frames[2][0].scale = {1, 2, 3};
  const EndSite site{.joint = 2, .offset = {0, -0.2f, 0}};
  GltfWriteOptions options;
  options.end_sites = absl::MakeConstSpan(&site, 1);
  options.binary = false;  // ignored: the extension decides

  const std::string glb_path = dir + "/rig.GLB";
  const std::string gltf_path = dir + "/rig.gltf";
  ASSERT_TRUE(WriteGltfFile(glb_path, skeleton, frames, options).ok());
  options.binary = true;
  ASSERT_TRUE(WriteGltfFile(gltf_path, skeleton, frames, options).ok());

  std::ifstream glb_in(glb_path, std::ios::binary);
  const std::string glb_bytes(std::istreambuf_iterator<char>(glb_in), {});
  std::ifstream gltf_in(gltf_path, std::ios::binary);
  const std::string gltf_bytes(std::istreambuf_iterator<char>(gltf_in), {});
  EXPECT_EQ(glb_bytes.substr(0, 4), "glTF");
  const json doc = json::parse(gltf_bytes);
  ASSERT_EQ(doc["buffers"].size(), 1u);
  EXPECT_TRUE(absl::StartsWith(doc["buffers"][0]["uri"].get<std::string>(),
                               "data:application/octet-stream;base64,"));

  absl::StatusOr<ImportedAsset> from_glb = ReadGltfFile(glb_path);
  absl::StatusOr<ImportedAsset> from_gltf = ReadGltfFile(gltf_path);
  ASSERT_TRUE(from_glb.ok()) << from_glb.status();
  ASSERT_TRUE(from_gltf.ok()) << from_gltf.status();
  ASSERT_EQ(from_gltf->skeleton.num_joints(), skeleton.num_joints());
  ASSERT_EQ(from_gltf->end_sites.size(), 1u);
  for (const ImportedAsset* asset : {&*from_glb, &*from_gltf}) {
    SCOPED_TRACE(asset->source);
    EXPECT_EQ(asset->skeleton.joint_names(), skeleton.joint_names());
    for (size_t f = 0; f < frames.size(); ++f) {
      const LocalPose pose = PoseAtKey(asset->skeleton, asset->clips.at(0), f);
      for (int j = 0; j < skeleton.num_joints(); ++j) {
        ExpectSameTransform(frames[f][j], pose[j],
                            absl::StrCat("frame ", f, " joint ", j));
      }
    }
  }
}

TEST(GltfWriter, InvalidInputsAreInvalidArgumentNamingTheProblem) {
  const Skeleton skeleton = TwoRoots();
  const LocalPose rest = RestPose(skeleton);
  LocalPose nan_pose = rest;
  nan_pose[2].translation.y() = std::nanf("");
  LocalPose inf_scale = rest;
  inf_scale[4].scale.x() = std::numeric_limits<float>::infinity();
  LocalPose non_unit = rest;
  non_unit[1].rotation.coeffs() << 0.0f, 0.0f, 0.0f, 2.0f;
  auto with_time = [](float t) {
    GltfWriteOptions o;
    o.frame_time = t;
    return o;
  };
  const EndSite bad_joint{.joint = 5};
  const EndSite bad_offset{.joint = 1, .offset = {0, std::nanf(""), 0}};
  GltfWriteOptions bad_site;
  bad_site.end_sites = absl::MakeConstSpan(&bad_joint, 1);
  GltfWriteOptions nan_site;
  nan_site.end_sites = absl::MakeConstSpan(&bad_offset, 1);
  GltfWriteOptions bad_name;
  bad_name.animation_name = "walk\xff";
  struct Case {
    std::vector<LocalPose> frames;
    GltfWriteOptions options;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {{}, {}, "frames: at least one pose"},
      {{LocalPose(2)}, {}, "frames[0]"},
      {{rest, nan_pose}, {}, "frames[1][2] 'left_ankle': translation"},
      {{rest, rest, inf_scale}, {}, "frames[2][4] 'right_knee': scale"},
      {{non_unit}, {}, "frames[0][1] 'left_knee': rotation norm"},
      {{rest}, with_time(0.0f), "frame_time 0 must be finite and > 0"},
      {{rest}, with_time(-0.5f), "frame_time -0.5"},
      {{rest}, with_time(std::nanf("")), "frame_time nan"},
      {{rest},
       with_time(std::numeric_limits<float>::infinity()),
       "frame_time inf"},
      {{rest, rest, rest}, with_time(3e38f), "time of frames[2] overflows"},
      {{rest}, bad_site, "end_sites[0].joint 5"},
      {{rest}, nan_site, "end_sites[0].offset (below joint 1 'left_knee')"},
      {{rest}, bad_name, "animation_name is not valid UTF-8"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::string> bytes =
        WriteGltf(skeleton, c.frames, c.options);
    EXPECT_EQ(bytes.status().code(), absl::StatusCode::kInvalidArgument)
        << c.expected << ": " << bytes.status();
    EXPECT_THAT(bytes.status().message(), HasSubstr(c.expected));
  }
}

TEST(GltfWriter, SkeletonsGltfCannotHoldAreRefused) {
  // A zero rest scale (which Skeleton accepts) has no inverse bind matrix.
  const Skeleton flat =
      MakeSkeleton({"root", "hidden"}, {kNoParent, 0},
                   {Trs({0, 0, 0}), Trs({0, 1, 0}, {1, 0, 0, 0}, {1, 0, 1})});
  absl::StatusOr<std::string> bytes = WriteGltf(flat, {RestPose(flat)});
  EXPECT_EQ(bytes.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bytes.status().message(),
              HasSubstr("rest_pose[1] 'hidden': scale (1, 0, 1) has a zero"));

  const Skeleton latin1 =
      MakeSkeleton({"root", "K\xf6rper"}, {kNoParent, 0}, {Trs(), Trs()});
  bytes = WriteGltf(latin1, {RestPose(latin1)});
  EXPECT_EQ(bytes.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bytes.status().message(),
              HasSubstr("joint 1 name 'K\\xf6rper' is not valid UTF-8"));

  // UTF-8 names are fine, and come back as written.
  const Skeleton utf8 = MakeSkeleton({"root", "K\xc3\xb6rper \xe8\x85\xb0"},
                                     {kNoParent, 0}, {Trs(), Trs()});
  bytes = WriteGltf(utf8, {RestPose(utf8)});
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<ImportedAsset> back = ParseGltf(Bytes(*bytes), "utf8.glb");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->skeleton.joint_name(1), "K\xc3\xb6rper \xe8\x85\xb0");
}

TEST(GltfWriter, WriteGltfFileReportsBadPathsAndExtensions) {
  const std::string dir = TempDir();
  const Skeleton skeleton = TwoRoots();
  const std::vector<LocalPose> frames = {RestPose(skeleton)};

  const std::string missing = dir + "/no/such/dir/x.glb";
  absl::Status s = WriteGltfFile(missing, skeleton, frames);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(s.message(), HasSubstr(missing));

  const std::string directory = dir + "/a_directory.glb";
  std::filesystem::create_directory(directory);
  s = WriteGltfFile(directory, skeleton, frames);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("a_directory.glb: cannot open"));

  s = WriteGltfFile(dir + "/x.bvh", skeleton, frames);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("x.bvh: the extension must be .glb"));

  s = WriteGltfFile(dir + "/none.gltf", skeleton, {});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("none.gltf: gltf writer: frames"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/none.gltf"));
}

// The Blender import test's input: the CMU walk as .glb with keys on
// Blender's 24 fps frames, the same motion as .bvh, and beside them
// (".json") the model-space joint and end-site positions posewire computes
// at a few frames, in glTF's (and BVH's) Y-up space. Written to
// $POSEWIRE_GLTF_OUT when set (run_blender_import_test.sh), to a temporary
// directory otherwise; either way read back and checked here.
TEST(GltfWriter, WritesBlenderFixture) {
  const char* env = std::getenv("POSEWIRE_GLTF_OUT");
  const std::filesystem::path path =
      env != nullptr && *env != '\0' ? env : TempDir() + "/walk.glb";
  absl::StatusOr<ImportedAsset> walk =
      ReadBvhFile(DataPath("cmu_131_01_walk.bvh"));
  ASSERT_TRUE(walk.ok()) << walk.status();
  const Skeleton& skeleton = walk->skeleton;
  const std::vector<LocalPose> frames = AllKeys(*walk);
  GltfWriteOptions options;
  options.frame_time = 1.0f / 24.0f;
  options.end_sites = walk->end_sites;
  options.animation_name = "cmu_131_01_walk";
  ASSERT_TRUE(WriteGltfFile(path, skeleton, frames, options).ok());
  BvhWriteOptions bvh_options;
  bvh_options.frame_time = options.frame_time;
  bvh_options.end_sites = walk->end_sites;
  const std::string bvh_path =
      std::filesystem::path(path).replace_extension(".bvh").string();
  ASSERT_TRUE(WriteBvhFile(bvh_path, skeleton, frames, bvh_options).ok());

  const int knee = skeleton.FindJoint("LeftKnee");
  const int ankle = skeleton.FindJoint("LeftAnkle");
  ASSERT_GE(knee, 0);
  ASSERT_GE(ankle, 0);
  const double leg = skeleton.rest_pose()[knee].translation.norm() +
                     skeleton.rest_pose()[ankle].translation.norm();
  json expected;
  expected["glb"] = path.filename().string();
  expected["bvh"] = std::filesystem::path(bvh_path).filename().string();
  expected["leg_length"] = leg;
  expected["joints"] = std::vector<std::string>(skeleton.joint_names().begin(),
                                                skeleton.joint_names().end());
  expected["parents"] =
      std::vector<int>(skeleton.parents().begin(), skeleton.parents().end());
  json& sites = expected["end_sites"] = json::array();
  for (const EndSite& site : walk->end_sites) {
    sites.push_back(absl::StrCat(skeleton.joint_name(site.joint), "_end"));
  }
  auto xyz = [](const Eigen::Vector3f& v) {
    return json::array({v.x(), v.y(), v.z()});
  };
  json& checked = expected["frames"];
  for (const size_t f :
       {size_t{0}, size_t{1}, size_t{37}, size_t{500}, frames.size() - 1}) {
    ModelPose model(skeleton.num_joints());
    LocalToModelJob fk;
    fk.skeleton = &skeleton;
    fk.input = frames[f];
    fk.output = absl::MakeSpan(model);
    ASSERT_TRUE(fk.Run().ok());
    json positions = json::array();
    for (const Transform& t : model) positions.push_back(xyz(t.translation));
    json tips = json::array();
    for (const EndSite& site : walk->end_sites) {
      tips.push_back(xyz(model[site.joint].TransformPoint(site.offset)));
    }
    checked.push_back(
        {{"frame", f}, {"positions", positions}, {"end_sites", tips}});
  }
  const std::string json_path =
      std::filesystem::path(path).replace_extension(".json").string();
  std::ofstream(json_path) << expected.dump(1) << "\n";

  // What Blender will be compared with is what posewire reads back.
  absl::StatusOr<ImportedAsset> back = ReadGltfFile(path);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->skeleton.joint_names(), skeleton.joint_names());
  std::ifstream in(json_path);
  const json reread = json::parse(in);
  ASSERT_EQ(reread["frames"].size(), 5u);
  for (const json& frame : reread["frames"]) {
    const size_t f = frame["frame"];
    const std::vector<Eigen::Vector3f> read_positions = ModelPositions(
        back->skeleton, PoseAtKey(back->skeleton, back->clips.at(0), f));
    for (int j = 0; j < skeleton.num_joints(); ++j) {
      const json& p = frame["positions"][j];
      const Eigen::Vector3f expected_position(
          p[0].get<float>(), p[1].get<float>(), p[2].get<float>());
      EXPECT_LE((read_positions[j] - expected_position).norm(), 1e-5 * leg)
          << "frame " << f << " joint " << skeleton.joint_name(j);
    }
  }
}

}  // namespace gltf_writer_test
}  // namespace posewire
