// BVH writer: poses written and read back with ReadBvhFile/ParseBvh keep
// their joint names, parents, offsets and model-space joint positions and
// rotations. Forward kinematics here is an independent double-precision TRS
// pass (not local_to_model.cc), and the Z-Y-X angle convention is checked on
// the written text against rotations built with Eigen::AngleAxisd.
#include "solver_core/io/bvh_writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "solver_core/io/bvh_reader.h"
#include "solver_core/io/gltf_reader.h"
#include "solver_core/model/pose.h"
#include "solver_core/pose_ops/sampling_job.h"

namespace posewire {
namespace bvh_writer_test {

using ::testing::HasSubstr;

constexpr double kTolerance = 1e-4;
constexpr double kPi = 3.14159265358979323846;

std::string DataPath(absl::string_view file) {
  return absl::StrCat(POSEWIRE_TEST_DATA_DIR, "/", file);
}

struct ModelJoint {
  Eigen::Vector3d translation;
  Eigen::Quaterniond rotation;
  Eigen::Vector3d scale;
};

// TRS forward kinematics in double, as transform.h defines composition:
// t = tp + Rp * (Sp (*) t), R = Rp * R, S = Sp (*) S.
std::vector<ModelJoint> Fk(const Skeleton& skeleton, const LocalPose& pose) {
  std::vector<ModelJoint> model(skeleton.num_joints());
  for (int j = 0; j < skeleton.num_joints(); ++j) {
    const Eigen::Vector3d t = pose[j].translation.cast<double>();
    const Eigen::Quaterniond r = pose[j].rotation.cast<double>().normalized();
    const Eigen::Vector3d s = pose[j].scale.cast<double>();
    const int p = skeleton.parent(j);
    if (p == kNoParent) {
      model[j] = {t, r, s};
    } else {
      model[j] = {model[p].translation +
                      model[p].rotation * model[p].scale.cwiseProduct(t),
                  model[p].rotation * r, model[p].scale.cwiseProduct(s)};
    }
  }
  return model;
}

// The pose a BVH clip holds at key `k` (every BVH track has a key per frame;
// joints without a track keep the rest value).
LocalPose PoseAtKey(const ImportedAsset& asset, int k) {
  LocalPose pose = RestPose(asset.skeleton);
  const Clip& clip = asset.clips.at(0);
  for (int j = 0; j < asset.skeleton.num_joints(); ++j) {
    const JointTracks& tracks = clip.tracks[j];
    if (!tracks.translation.empty()) {
      pose[j].translation = tracks.translation.key_value(k);
    }
    if (!tracks.rotation.empty())
      pose[j].rotation = tracks.rotation.key_value(k);
  }
  return pose;
}

double AngleBetween(const Eigen::Quaterniond& a, const Eigen::Quaterniond& b) {
  return 2.0 *
         std::acos(std::min(1.0, std::abs(a.normalized().dot(b.normalized()))));
}

// Compares the model-space poses joint by joint, matching joints by name
// (`read` may order them differently) and ignoring scale (BVH has none).
void ExpectSameModelPose(const Skeleton& written_skeleton,
                         const LocalPose& written,
                         const Skeleton& read_skeleton, const LocalPose& read,
                         const std::string& label) {
  const std::vector<ModelJoint> a = Fk(written_skeleton, written);
  const std::vector<ModelJoint> b = Fk(read_skeleton, read);
  for (int j = 0; j < written_skeleton.num_joints(); ++j) {
    const int r = read_skeleton.FindJoint(written_skeleton.joint_name(j));
    ASSERT_GE(r, 0) << label << ": " << written_skeleton.joint_name(j);
    EXPECT_LE((a[j].translation - b[r].translation).norm(), kTolerance)
        << label << " joint " << j << " " << written_skeleton.joint_name(j)
        << ": " << a[j].translation.transpose() << " vs "
        << b[r].translation.transpose();
    EXPECT_LE(AngleBetween(a[j].rotation, b[r].rotation), kTolerance)
        << label << " joint " << j << " " << written_skeleton.joint_name(j);
  }
}

Skeleton MakeSkeleton(std::vector<std::string> names, std::vector<int> parents,
                      std::vector<Eigen::Vector3f> offsets) {
  SkeletonDesc desc;
  desc.joint_names = std::move(names);
  desc.parents = std::move(parents);
  for (const Eigen::Vector3f& offset : offsets) {
    Transform t;
    t.translation = offset;
    desc.rest_pose.push_back(t);
  }
  absl::StatusOr<Skeleton> skeleton = Skeleton::Create(std::move(desc));
  EXPECT_TRUE(skeleton.ok()) << skeleton.status();
  return *std::move(skeleton);
}

Skeleton Chain3() {
  return MakeSkeleton({"hip", "knee", "ankle"}, {kNoParent, 0, 1},
                      {{0, 10, 0}, {0, -4, 0.5f}, {0, -4, 0}});
}

Eigen::Quaternionf Zyx(double z, double y, double x) {
  const double d = kPi / 180.0;
  return Eigen::Quaternionf(
      (Eigen::AngleAxisd(z * d, Eigen::Vector3d::UnitZ()) *
       Eigen::AngleAxisd(y * d, Eigen::Vector3d::UnitY()) *
       Eigen::AngleAxisd(x * d, Eigen::Vector3d::UnitX()))
          .cast<float>());
}

// The numbers of the last non-empty line of `text` (the last frame).
std::vector<double> LastFrameValues(const std::string& text) {
  std::vector<absl::string_view> lines =
      absl::StrSplit(text, '\n', absl::SkipEmpty());
  std::vector<double> values;
  for (absl::string_view token :
       absl::StrSplit(lines.back(), ' ', absl::SkipEmpty())) {
    double v = 0.0;
    EXPECT_TRUE(absl::SimpleAtod(token, &v)) << token;
    values.push_back(v);
  }
  return values;
}

TEST(BvhWriter, WalkFirstTenFramesRoundTripNamesParentsOffsetsAndFk) {
  absl::StatusOr<ImportedAsset> walk =
      ReadBvhFile(DataPath("cmu_131_01_walk.bvh"));
  ASSERT_TRUE(walk.ok()) << walk.status();
  const Skeleton& skeleton = walk->skeleton;
  std::vector<LocalPose> frames;
  for (int k = 0; k < 10; ++k) frames.push_back(PoseAtKey(*walk, k));

  BvhWriteOptions options;
  options.frame_time = 1.0f / 120.0f;
  options.end_sites = walk->end_sites;
  absl::StatusOr<std::string> text = WriteBvh(skeleton, frames, options);
  ASSERT_TRUE(text.ok()) << text.status();
  absl::StatusOr<ImportedAsset> back = ParseBvh(*text, "walk10.bvh");
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << text->substr(0, 2000);

  const Skeleton& read = back->skeleton;
  ASSERT_EQ(read.num_joints(), 31);
  for (int j = 0; j < 31; ++j) {
    EXPECT_EQ(read.joint_name(j), skeleton.joint_name(j));
    EXPECT_EQ(read.parent(j), skeleton.parent(j)) << skeleton.joint_name(j);
    EXPECT_LE(
        (read.rest_pose()[j].translation - skeleton.rest_pose()[j].translation)
            .cwiseAbs()
            .maxCoeff(),
        kTolerance)
        << skeleton.joint_name(j);
  }
  ASSERT_EQ(back->end_sites.size(), walk->end_sites.size());
  for (size_t i = 0; i < walk->end_sites.size(); ++i) {
    EXPECT_EQ(back->end_sites[i].joint, walk->end_sites[i].joint);
    EXPECT_LE((back->end_sites[i].offset - walk->end_sites[i].offset).norm(),
              kTolerance);
  }

  // Only the root had position channels in the source; so in the copy.
  const Clip& clip = back->clips.at(0);
  EXPECT_FALSE(clip.tracks[0].translation.empty());
  for (int j = 1; j < 31; ++j) {
    EXPECT_TRUE(clip.tracks[j].translation.empty()) << skeleton.joint_name(j);
  }
  ASSERT_EQ(clip.tracks[0].rotation.times.size(), 10u);
  EXPECT_NEAR(clip.tracks[0].rotation.times[9], 9.0 / 120.0, 1e-6);

  for (int k = 0; k < 10; ++k) {
    ExpectSameModelPose(skeleton, frames[k], read, PoseAtKey(*back, k),
                        absl::StrCat("frame ", k));
  }
}

TEST(BvhWriter, ZyxChannelsHoldTheAnglesOfRzRyRx) {
  const Skeleton skeleton = MakeSkeleton({"root"}, {kNoParent}, {{0, 0, 0}});
  LocalPose pose = RestPose(skeleton);
  pose[0].translation = {1.5f, -2.0f, 3.25f};
  pose[0].rotation = Zyx(10.0, -20.0, 30.0);
  absl::StatusOr<std::string> text = WriteBvh(skeleton, {pose});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("CHANNELS 6 Xposition Yposition Zposition "
                               "Zrotation Yrotation Xrotation"));
  const std::vector<double> values = LastFrameValues(*text);
  ASSERT_EQ(values.size(), 6u);
  EXPECT_DOUBLE_EQ(values[0], 1.5);
  EXPECT_DOUBLE_EQ(values[1], -2.0);
  EXPECT_DOUBLE_EQ(values[2], 3.25);
  EXPECT_NEAR(values[3], 10.0, 1e-4);
  EXPECT_NEAR(values[4], -20.0, 1e-4);
  EXPECT_NEAR(values[5], 30.0, 1e-4);
}

TEST(BvhWriter, GimbalLockAndRandomRotationsRoundTrip) {
  const Skeleton skeleton = Chain3();
  std::vector<LocalPose> frames;
  // Y at +-90 degrees: only z -+ x is defined there.
  for (double y : {90.0, -90.0}) {
    LocalPose pose = RestPose(skeleton);
    pose[0].rotation = Zyx(30.0, y, 0.0);
    pose[1].rotation = Zyx(0.0, y, 45.0);
    pose[2].rotation = Zyx(-120.0, y, 70.0);
    frames.push_back(pose);
  }
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  for (int f = 0; f < 50; ++f) {
    LocalPose pose = RestPose(skeleton);
    for (Transform& t : pose) {
      t.rotation =
          Eigen::Quaternionf(normal(rng), normal(rng), normal(rng), normal(rng))
              .normalized();
    }
    frames.push_back(pose);
  }
  absl::StatusOr<std::string> text = WriteBvh(skeleton, frames);
  ASSERT_TRUE(text.ok()) << text.status();
  absl::StatusOr<ImportedAsset> back = ParseBvh(*text, "rotations.bvh");
  ASSERT_TRUE(back.ok()) << back.status();
  for (size_t f = 0; f < frames.size(); ++f) {
    const LocalPose read = PoseAtKey(*back, static_cast<int>(f));
    for (int j = 0; j < 3; ++j) {
      EXPECT_LE(AngleBetween(frames[f][j].rotation.cast<double>(),
                             read[j].rotation.cast<double>()),
                1e-5)
          << "frame " << f << " joint " << j;
    }
    ExpectSameModelPose(skeleton, frames[f], back->skeleton, read,
                        absl::StrCat("frame ", f));
  }
}

TEST(BvhWriter, AnimatedNonRootTranslationGetsPositionChannels) {
  const Skeleton skeleton = Chain3();
  LocalPose still = RestPose(skeleton);
  LocalPose stretched = RestPose(skeleton);
  stretched[1].translation = {0.25f, -5.0f, 0.5f};
  absl::StatusOr<std::string> text = WriteBvh(skeleton, {still, stretched});
  ASSERT_TRUE(text.ok()) << text.status();
  absl::StatusOr<ImportedAsset> back = ParseBvh(*text, "stretch.bvh");
  ASSERT_TRUE(back.ok()) << back.status();
  const Clip& clip = back->clips.at(0);
  EXPECT_FALSE(clip.tracks[0].translation.empty());  // the root
  ASSERT_FALSE(clip.tracks[1].translation.empty());
  EXPECT_TRUE(clip.tracks[2].translation.empty());  // never moved
  EXPECT_EQ(clip.tracks[1].translation.values[0],
            skeleton.rest_pose()[1].translation);
  EXPECT_EQ(clip.tracks[1].translation.values[1],
            Eigen::Vector3f(0.25f, -5.0f, 0.5f));
}

TEST(BvhWriter, ScaleIsBakedSoModelPositionsMatch) {
  const Skeleton skeleton = Chain3();
  LocalPose pose = RestPose(skeleton);
  pose[0].scale = {2.0f, 3.0f, 0.5f};
  pose[0].rotation = Zyx(20.0, 10.0, -5.0);
  pose[1].scale = {1.5f, 1.5f, 1.5f};
  pose[1].rotation = Zyx(0.0, 0.0, 60.0);
  pose[2].scale = {4.0f, 4.0f, 4.0f};  // a leaf's scale moves nothing
  absl::StatusOr<std::string> text = WriteBvh(skeleton, {pose});
  ASSERT_TRUE(text.ok()) << text.status();
  absl::StatusOr<ImportedAsset> back = ParseBvh(*text, "scaled.bvh");
  ASSERT_TRUE(back.ok()) << back.status();
  const LocalPose read = PoseAtKey(*back, 0);
  ExpectSameModelPose(skeleton, pose, back->skeleton, read, "scaled");
  // The hand-computed ankle: knee at hip + R0 (S0 (*) t1), ankle below it.
  const Eigen::Vector3d hip(0, 10, 0);
  const Eigen::Quaterniond r0 = pose[0].rotation.cast<double>();
  const Eigen::Quaterniond r1 = r0 * pose[1].rotation.cast<double>();
  const Eigen::Vector3d knee = hip + r0 * Eigen::Vector3d(0, -12, 0.25);
  const Eigen::Vector3d ankle = knee + r1 * Eigen::Vector3d(0, -18, 0);
  EXPECT_LE((Fk(back->skeleton, read)[2].translation - ankle).norm(),
            kTolerance);
}

TEST(BvhWriter, FoxGltfRestRotationsGoIntoTheChannels) {
  absl::StatusOr<ImportedAsset> fox = ReadGltfFile(DataPath("Fox.glb"));
  ASSERT_TRUE(fox.ok()) << fox.status();
  const Skeleton& skeleton = fox->skeleton;
  std::vector<LocalPose> frames = {RestPose(skeleton)};
  LocalPose sampled(skeleton.num_joints());
  SamplingJob job;
  job.skeleton = &skeleton;
  job.clip = &fox->clips.at(0);
  job.time = 0.5f;
  job.output = absl::MakeSpan(sampled);
  ASSERT_TRUE(job.Run().ok());
  frames.push_back(sampled);

  absl::StatusOr<std::string> text = WriteBvh(skeleton, frames);
  ASSERT_TRUE(text.ok()) << text.status();
  absl::StatusOr<ImportedAsset> back = ParseBvh(*text, "fox.bvh");
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->skeleton.num_joints(), skeleton.num_joints());
  for (size_t f = 0; f < frames.size(); ++f) {
    ExpectSameModelPose(skeleton, frames[f], back->skeleton,
                        PoseAtKey(*back, static_cast<int>(f)),
                        absl::StrCat("fox frame ", f));
  }
}

TEST(BvhWriter, NonPreorderSkeletonIsWrittenDepthFirst) {
  // b (index 2) comes before a's child a1 (index 3) in the skeleton, but
  // nesting puts a1 inside a's block.
  const Skeleton skeleton =
      MakeSkeleton({"r", "a", "b", "a1"}, {kNoParent, 0, 0, 1},
                   {{0, 0, 0}, {1, 0, 0}, {-1, 0, 0}, {0, 2, 0}});
  LocalPose pose = RestPose(skeleton);
  pose[1].rotation = Zyx(0.0, 0.0, 90.0);
  absl::StatusOr<std::string> text = WriteBvh(skeleton, {pose});
  ASSERT_TRUE(text.ok()) << text.status();
  absl::StatusOr<ImportedAsset> back = ParseBvh(*text, "order.bvh");
  ASSERT_TRUE(back.ok()) << back.status();
  const Skeleton& read = back->skeleton;
  ASSERT_EQ(read.num_joints(), 4);
  EXPECT_EQ(read.joint_name(1), "a");
  EXPECT_EQ(read.joint_name(2), "a1");
  EXPECT_EQ(read.joint_name(3), "b");
  EXPECT_EQ(read.parent(2), 1);
  EXPECT_EQ(read.parent(3), 0);
  ExpectSameModelPose(skeleton, pose, read, PoseAtKey(*back, 0), "order");
  // a1 sits 2 up from a, rotated 90 degrees about X: (1, 0, 2).
  EXPECT_LE(
      (Fk(read, PoseAtKey(*back, 0))[2].translation - Eigen::Vector3d(1, 0, 2))
          .norm(),
      kTolerance);
}

TEST(BvhWriter, SeveralRootsBecomeSeveralRootBlocks) {
  const Skeleton skeleton =
      MakeSkeleton({"left", "left_child", "right"}, {kNoParent, 0, kNoParent},
                   {{1, 0, 0}, {0, 1, 0}, {-1, 0, 0}});
  LocalPose pose = RestPose(skeleton);
  pose[2].translation = {-3, 0, 0};
  absl::StatusOr<std::string> text = WriteBvh(skeleton, {pose});
  ASSERT_TRUE(text.ok()) << text.status();
  absl::StatusOr<ImportedAsset> back = ParseBvh(*text, "roots.bvh");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->skeleton.parent(2), kNoParent);
  ExpectSameModelPose(skeleton, pose, back->skeleton, PoseAtKey(*back, 0),
                      "roots");
}

TEST(BvhWriter, NamesWithSpacesAndBracesBecomeUniqueTokens) {
  const Skeleton skeleton =
      MakeSkeleton({"left arm", "a{b}", "left_arm"}, {kNoParent, 0, 1},
                   {{0, 0, 0}, {0, 1, 0}, {0, 1, 0}});
  absl::StatusOr<std::string> text = WriteBvh(skeleton, {RestPose(skeleton)});
  ASSERT_TRUE(text.ok()) << text.status();
  absl::StatusOr<ImportedAsset> back = ParseBvh(*text, "names.bvh");
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << *text;
  EXPECT_EQ(back->skeleton.joint_name(0), "left_arm_0");
  EXPECT_EQ(back->skeleton.joint_name(1), "a_b_");
  EXPECT_EQ(back->skeleton.joint_name(2), "left_arm");
}

TEST(BvhWriter, InvalidInputsAreInvalidArgumentNamingTheProblem) {
  const Skeleton skeleton = Chain3();
  const LocalPose rest = RestPose(skeleton);
  struct Case {
    std::vector<LocalPose> frames;
    BvhWriteOptions options;
    const char* expected;
  };
  LocalPose nan_pose = rest;
  nan_pose[2].translation.y() = std::nanf("");
  LocalPose non_unit = rest;
  non_unit[1].rotation.coeffs() << 0.0f, 0.0f, 0.0f, 2.0f;
  BvhWriteOptions zero_time;
  zero_time.frame_time = 0.0f;
  const EndSite bad_site{.joint = 3};
  BvhWriteOptions bad_sites;
  bad_sites.end_sites = absl::MakeConstSpan(&bad_site, 1);
  const std::vector<Case> cases = {
      {{}, {}, "at least one pose"},
      {{LocalPose(2)}, {}, "frames[0]"},
      {{rest, nan_pose}, {}, "frames[1]"},
      {{non_unit}, {}, "frames[0]"},
      {{rest}, zero_time, "frame_time"},
      {{rest}, bad_sites, "end_sites[0].joint 3"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::string> text = WriteBvh(skeleton, c.frames, c.options);
    EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument)
        << c.expected;
    EXPECT_THAT(text.status().message(), HasSubstr(c.expected));
  }
}

TEST(BvhWriter, WriteBvhFileWritesAReadableFileAndReportsBadPaths) {
  const Skeleton skeleton = Chain3();
  const std::string path = ::testing::TempDir() + "/bvh_writer_test.bvh";
  ASSERT_TRUE(WriteBvhFile(path, skeleton, {RestPose(skeleton)}).ok());
  absl::StatusOr<ImportedAsset> back = ReadBvhFile(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->skeleton.num_joints(), 3);
  std::remove(path.c_str());

  const absl::Status missing_dir =
      WriteBvhFile(::testing::TempDir() + "/no/such/dir/x.bvh", skeleton,
                   {RestPose(skeleton)});
  EXPECT_FALSE(missing_dir.ok());
  EXPECT_THAT(missing_dir.message(), HasSubstr("no/such/dir/x.bvh"));
}

}  // namespace bvh_writer_test
}  // namespace posewire
