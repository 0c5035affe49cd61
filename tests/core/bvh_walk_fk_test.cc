// Data-model acceptance tests on real motion capture (foundation issue, item
// 6): for every frame of a CMU clip, ModelToLocal(LocalToModel(p)) == p, and
// our forward kinematics agrees with joint positions computed here from the
// BVH text by an independent double-precision parser using 4x4 matrices and
// Eigen::AngleAxisd. Partial updates match a full run bit for bit.
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "solver_core/io/bvh_reader.h"
#include "solver_core/model/clip.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/skeleton.h"

namespace posewire {
namespace bvh_walk_fk_test {

std::string DataPath(const std::string& file) {
  return absl::StrCat(POSEWIRE_TEST_DATA_DIR, "/", file);
}

// The local pose at key `k`: each track's k-th value, the rest pose where a
// joint has no track.
LocalPose PoseAtKey(const Skeleton& skeleton, const Clip& clip, size_t k) {
  LocalPose pose = RestPose(skeleton);
  for (int j = 0; j < skeleton.num_joints(); ++j) {
    const JointTracks& tracks = clip.tracks[j];
    if (!tracks.translation.empty()) {
      pose[j].translation = tracks.translation.key_value(k);
    }
    if (!tracks.rotation.empty()) {
      pose[j].rotation = tracks.rotation.key_value(k);
    }
    if (!tracks.scale.empty()) pose[j].scale = tracks.scale.key_value(k);
  }
  return pose;
}

size_t KeyCount(const Clip& clip) {
  size_t keys = 0;
  for (const JointTracks& t : clip.tracks) {
    keys = std::max(keys, t.rotation.times.size());
  }
  return keys;
}

// Largest per-component difference of two rotations, q and -q being the same
// rotation.
float RotationDifference(const Eigen::Quaternionf& a,
                         const Eigen::Quaternionf& b) {
  const float same = (a.coeffs() - b.coeffs()).cwiseAbs().maxCoeff();
  const float flipped = (a.coeffs() + b.coeffs()).cwiseAbs().maxCoeff();
  return std::min(same, flipped);
}

TEST(BvhWalkFk, ModelToLocalInvertsLocalToModelOnEveryWalkFrame) {
  absl::StatusOr<ImportedAsset> asset =
      ReadBvhFile(DataPath("cmu_131_01_walk.bvh"));
  ASSERT_TRUE(asset.ok()) << asset.status();
  const Skeleton& skeleton = asset->skeleton;
  const Clip& clip = asset->clips[0];
  const size_t keys = KeyCount(clip);
  ASSERT_EQ(keys, 994u);

  ModelPose model(skeleton.num_joints());
  LocalPose back(skeleton.num_joints());
  float worst = 0.0f;
  for (size_t k = 0; k < keys; ++k) {
    const LocalPose local = PoseAtKey(skeleton, clip, k);
    LocalToModelJob fk{
        .skeleton = &skeleton, .input = local, .output = absl::MakeSpan(model)};
    ASSERT_TRUE(fk.Run().ok()) << fk.Run();
    ModelToLocalJob ik{
        .skeleton = &skeleton, .input = model, .output = absl::MakeSpan(back)};
    ASSERT_TRUE(ik.Run().ok()) << ik.Run();
    for (int j = 0; j < skeleton.num_joints(); ++j) {
      const float dt =
          (back[j].translation - local[j].translation).cwiseAbs().maxCoeff();
      const float dr = RotationDifference(back[j].rotation, local[j].rotation);
      const float ds = (back[j].scale - local[j].scale).cwiseAbs().maxCoeff();
      worst = std::max({worst, dt, dr, ds});
      ASSERT_LE(dt, 1e-5f) << "frame " << k << " joint "
                           << skeleton.joint_name(j) << " translation";
      ASSERT_LE(dr, 1e-5f) << "frame " << k << " joint "
                           << skeleton.joint_name(j) << " rotation";
      ASSERT_LE(ds, 1e-5f) << "frame " << k << " joint "
                           << skeleton.joint_name(j) << " scale";
    }
  }
  RecordProperty("worst_round_trip_error", absl::StrCat(worst));
}

// ---------------------------------------------------------------------------
// An independent BVH reading, deliberately different from the reader's:
// iostream tokens, doubles, 4x4 matrices, AngleAxisd per channel.

struct RefJoint {
  std::string name;
  int parent = -1;
  Eigen::Vector3d offset = Eigen::Vector3d::Zero();
  std::vector<std::string> channels;
};

struct RefBvh {
  std::vector<RefJoint> joints;
  std::vector<std::vector<double>> frames;
};

RefBvh ReadReference(const std::string& path) {
  RefBvh bvh;
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::istringstream tokens(buffer.str());
  tokens.imbue(std::locale::classic());
  std::string token;
  std::vector<int> open;  // joint index, or -1 for an End Site
  int pending = -1;
  int total_channels = 0;
  while (tokens >> token) {
    if (token == "ROOT" || token == "JOINT") {
      RefJoint joint;
      tokens >> joint.name;
      joint.parent = open.empty() ? -1 : open.back();
      bvh.joints.push_back(joint);
      pending = static_cast<int>(bvh.joints.size()) - 1;
    } else if (token == "End") {
      tokens >> token;  // "Site"
      pending = -1;
    } else if (token == "{") {
      open.push_back(pending);
    } else if (token == "}") {
      open.pop_back();
    } else if (token == "OFFSET") {
      Eigen::Vector3d offset;
      tokens >> offset.x() >> offset.y() >> offset.z();
      if (open.back() >= 0) bvh.joints[open.back()].offset = offset;
    } else if (token == "CHANNELS") {
      int n = 0;
      tokens >> n;
      for (int i = 0; i < n; ++i) {
        tokens >> token;
        bvh.joints[open.back()].channels.push_back(token);
      }
      total_channels += n;
    } else if (token == "MOTION") {
      break;
    }
  }
  int frames = 0;
  double frame_time = 0;
  tokens >> token >> frames >> token >> token >> frame_time;  // Frames: ...
  bvh.frames.assign(frames, std::vector<double>(total_channels));
  for (auto& frame : bvh.frames) {
    for (double& v : frame) tokens >> v;
  }
  EXPECT_FALSE(tokens.fail()) << path;
  return bvh;
}

// Model-space matrices of every joint at `frame`: M = M_parent * T * R, with
// T the OFFSET (position channels replacing it) and R the product of the
// channel rotations in their listed order.
std::vector<Eigen::Matrix4d> ReferenceFk(const RefBvh& bvh, int frame) {
  std::vector<Eigen::Matrix4d> model(bvh.joints.size());
  const std::vector<double>& values = bvh.frames[frame];
  size_t next = 0;
  for (size_t j = 0; j < bvh.joints.size(); ++j) {
    const RefJoint& joint = bvh.joints[j];
    Eigen::Vector3d t = joint.offset;
    Eigen::Matrix3d r = Eigen::Matrix3d::Identity();
    for (const std::string& channel : joint.channels) {
      const double v = values[next++];
      const int axis = channel[0] - 'X';
      if (channel.substr(1) == "position") {
        t[axis] = v;
      } else {
        r = r * Eigen::AngleAxisd(v * M_PI / 180.0, Eigen::Vector3d::Unit(axis))
                    .toRotationMatrix();
      }
    }
    Eigen::Matrix4d local = Eigen::Matrix4d::Identity();
    local.topLeftCorner<3, 3>() = r;
    local.topRightCorner<3, 1>() = t;
    model[j] = joint.parent < 0 ? local : model[joint.parent] * local;
  }
  return model;
}

struct FkCase {
  const char* file;
  int stride;  // check every stride-th frame
};

class BvhIndependentFkTest : public ::testing::TestWithParam<FkCase> {};

TEST_P(BvhIndependentFkTest, JointPositionsMatchIndependentMatrixFk) {
  const FkCase& c = GetParam();
  absl::StatusOr<ImportedAsset> asset = ReadBvhFile(DataPath(c.file));
  ASSERT_TRUE(asset.ok()) << asset.status();
  const RefBvh ref = ReadReference(DataPath(c.file));
  const Skeleton& skeleton = asset->skeleton;
  const Clip& clip = asset->clips[0];
  ASSERT_EQ(static_cast<int>(ref.joints.size()), skeleton.num_joints());
  for (int j = 0; j < skeleton.num_joints(); ++j) {
    ASSERT_EQ(ref.joints[j].name, skeleton.joint_name(j));
    ASSERT_EQ(ref.joints[j].parent, skeleton.parent(j));
  }
  ASSERT_EQ(ref.frames.size(), KeyCount(clip));

  ModelPose model(skeleton.num_joints());
  int checked = 0;
  double worst = 0.0;
  for (size_t k = 0; k < ref.frames.size(); k += c.stride) {
    const LocalPose local = PoseAtKey(skeleton, clip, k);
    ASSERT_TRUE((LocalToModelJob{
        .skeleton = &skeleton, .input = local, .output = absl::MakeSpan(model)}
                     .Run()
                     .ok()));
    const std::vector<Eigen::Matrix4d> want =
        ReferenceFk(ref, static_cast<int>(k));
    for (int j = 0; j < skeleton.num_joints(); ++j) {
      const Eigen::Vector3d p = want[j].topRightCorner<3, 1>();
      const Eigen::Vector3d got = model[j].translation.cast<double>();
      const double error = (got - p).cwiseAbs().maxCoeff();
      worst = std::max(worst, error / (1.0 + p.norm()));
      ASSERT_LE(error, 1e-4 * (1.0 + p.norm()))
          << c.file << " frame " << k << " joint " << skeleton.joint_name(j)
          << ": ours " << got.transpose() << ", independent " << p.transpose();
      // Orientation too: the columns of the rotation are what children use.
      const Eigen::Matrix3d r = want[j].topLeftCorner<3, 3>();
      ASSERT_LE((model[j].rotation.cast<double>().toRotationMatrix() - r)
                    .cwiseAbs()
                    .maxCoeff(),
                1e-4)
          << c.file << " frame " << k << " joint " << skeleton.joint_name(j);
    }
    ++checked;
  }
  EXPECT_GT(checked, 10);
  RecordProperty("worst_relative_position_error", absl::StrCat(worst));
}

INSTANTIATE_TEST_SUITE_P(
    RealClips, BvhIndependentFkTest,
    ::testing::Values(FkCase{"cmu_131_01_walk.bvh", 1},    // ZYX and ZXY
                      FkCase{"cmu_02_03_run_daz.bvh", 1},  // ZXY
                      FkCase{"threejs_pirouette_cmu.bvh", 10},
                      FkCase{"cmu_49_04_run_leap.bvh", 10},
                      FkCase{"cmu_01_01_jumps.bvh", 10},
                      FkCase{"cmu_01_03_climb_reach.bvh", 10}),
    [](const ::testing::TestParamInfo<FkCase>& info) {
      std::string name = info.param.file;
      return name.substr(0, name.size() - 4);
    });

// ---------------------------------------------------------------------------

TEST(BvhWalkFk, PartialUpdateFromOneJointMatchesAFullRunBitForBit) {
  absl::StatusOr<ImportedAsset> asset =
      ReadBvhFile(DataPath("cmu_131_01_walk.bvh"));
  ASSERT_TRUE(asset.ok()) << asset.status();
  const Skeleton& skeleton = asset->skeleton;
  LocalPose local = PoseAtKey(skeleton, asset->clips[0], 400);

  ModelPose before(skeleton.num_joints());
  ASSERT_TRUE((LocalToModelJob{
      .skeleton = &skeleton, .input = local, .output = absl::MakeSpan(before)}
                   .Run()
                   .ok()));

  for (const char* name : {"LeftShoulder", "Chest", "RightHip", "Hips"}) {
    SCOPED_TRACE(name);
    const int joint = skeleton.FindJoint(name);
    ASSERT_GE(joint, 0);
    LocalPose changed = local;
    changed[joint].rotation =
        (changed[joint].rotation *
         Eigen::Quaternionf(
             Eigen::AngleAxisf(0.7f, Eigen::Vector3f(1, 2, 3).normalized())))
            .normalized();

    ModelPose partial = before;
    ASSERT_TRUE((LocalToModelJob{.skeleton = &skeleton,
                                 .input = changed,
                                 .from = joint,
                                 .output = absl::MakeSpan(partial)}
                     .Run()
                     .ok()));
    ModelPose full(skeleton.num_joints());
    ASSERT_TRUE((LocalToModelJob{
        .skeleton = &skeleton, .input = changed, .output = absl::MakeSpan(full)}
                     .Run()
                     .ok()));
    int moved = 0;
    for (int j = 0; j < skeleton.num_joints(); ++j) {
      EXPECT_TRUE(partial[j] == full[j]) << skeleton.joint_name(j);
      if (!skeleton.IsInSubtree(joint, j)) {
        EXPECT_TRUE(partial[j] == before[j]) << skeleton.joint_name(j);
      } else if (!(partial[j] == before[j])) {
        ++moved;
      }
    }
    // The change really reached the subtree (so the comparison means
    // something): every joint under it has a new rotation.
    EXPECT_EQ(moved, skeleton.SubtreeSize(joint));
  }
}

}  // namespace bvh_walk_fk_test
}  // namespace posewire
