// Real-data chain IK cases shared by the core solve-rate test and the
// service check: the CMU BVH clips in tests/data, each arm (upper arm to
// hand) and leg (thigh to ankle or foot) found by joint names, solved from
// the pose of frame f toward where the chain's end joint is 30 frames (0.25
// s at 120 Hz) later. The later frame is placed where the earlier one is
// (its root joint's translation replaced by frame f's), so the target is the
// limb's own motion, not the distance walked.
#ifndef POSEWIRE_TESTS_CORE_CHAIN_IK_REAL_DATA_H_
#define POSEWIRE_TESTS_CORE_CHAIN_IK_REAL_DATA_H_

#include <gtest/gtest.h>

#include <Eigen/Core>
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "solver_core/io/bvh_reader.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"

namespace posewire::testing_util {

// Frames between the pose solved from and the one whose end joint is the
// target.
inline constexpr int kRealDataLookAhead = 30;

// One clip: its skeleton (possibly rescaled at the root) and its frames as
// local poses.
struct RealClip {
  std::string name;
  Skeleton skeleton;
  std::vector<std::vector<Transform>> frames;
};

// Reads `file` from tests/data; when `root_scale` is not (1, 1, 1), the root
// joint's rest and animated scale are set to it (a non-uniformly scaled
// character).
inline RealClip LoadRealClip(
    const std::string& file,
    const Eigen::Vector3f& root_scale = Eigen::Vector3f::Ones()) {
  absl::StatusOr<ImportedAsset> asset =
      ReadBvhFile(std::string(POSEWIRE_TEST_DATA_DIR) + "/" + file);
  if (!asset.ok() || asset->clips.empty()) {
    ADD_FAILURE() << file << ": " << asset.status();
    std::abort();
  }
  const Skeleton& s = asset->skeleton;
  RealClip out;
  out.name = file;
  SkeletonDesc desc;
  for (int j = 0; j < s.num_joints(); ++j) {
    desc.joint_names.push_back(s.joint_name(j));
    desc.parents.push_back(s.parent(j));
    desc.rest_pose.push_back(s.rest_pose()[j]);
  }
  const bool scaled = root_scale != Eigen::Vector3f::Ones();
  if (scaled) {
    out.name = absl::StrCat(file, " root scale (", root_scale.x(), ", ",
                            root_scale.y(), ", ", root_scale.z(), ")");
    desc.rest_pose[0].scale = root_scale;
  }
  out.skeleton = *Skeleton::Create(std::move(desc));
  const Clip& clip = asset->clips[0];
  const size_t frames = clip.tracks[0].rotation.times.size();
  for (size_t f = 0; f < frames; ++f) {
    std::vector<Transform> pose = RestPose(out.skeleton);
    for (int j = 0; j < s.num_joints(); ++j) {
      const JointTracks& t = clip.tracks[j];
      if (!t.translation.empty()) {
        pose[j].translation = t.translation.key_value(f);
      }
      if (!t.rotation.empty()) pose[j].rotation = t.rotation.key_value(f);
    }
    if (scaled) pose[0].scale = root_scale;
    out.frames.push_back(std::move(pose));
  }
  return out;
}

// Model pose by the core's LocalToModelJob.
inline std::vector<Transform> ModelOf(const Skeleton& s,
                                      absl::Span<const Transform> local) {
  std::vector<Transform> model(local.size());
  LocalToModelJob job;
  job.skeleton = &s;
  job.input = local;
  job.output = absl::MakeSpan(model);
  EXPECT_TRUE(job.Run().ok());
  return model;
}

// The limb chains found by name: the path from the first root name that
// exists to the first tip name below it.
inline std::vector<std::vector<int>> LimbChains(const Skeleton& s) {
  struct Spec {
    std::vector<const char*> roots, tips;
  };
  const Spec specs[] = {
      {{"LeftArm", "LeftShoulder", "lShldr"}, {"LeftHand", "lhand", "lHand"}},
      {{"RightArm", "RightShoulder", "rShldr"},
       {"RightHand", "rhand", "rHand"}},
      {{"LeftUpLeg", "LeftHip", "lThigh"},
       {"LeftToeBase", "LeftAnkle", "lFoot"}},
      {{"RightUpLeg", "RightHip", "rThigh"},
       {"RightToeBase", "RightAnkle", "rFoot"}},
  };
  std::vector<std::vector<int>> chains;
  for (const Spec& spec : specs) {
    int root = -1, tip = -1;
    for (const char* name : spec.roots) {
      if ((root = s.FindJoint(name)) >= 0) break;
    }
    for (const char* name : spec.tips) {
      tip = s.FindJoint(name);
      if (tip >= 0 && root >= 0 && s.IsInSubtree(root, tip) && tip != root) {
        break;
      }
      tip = -1;
    }
    if (root < 0 || tip < 0) continue;
    std::vector<int> chain;
    for (int j = tip; j != root; j = s.parent(j)) chain.push_back(j);
    chain.push_back(root);
    std::reverse(chain.begin(), chain.end());
    chains.push_back(std::move(chain));
  }
  return chains;
}

struct RealCase {
  const RealClip* clip = nullptr;
  int frame = 0;
  std::vector<int> chain;
  Eigen::Vector3f target = Eigen::Vector3f::Zero();
  // Sum of the chain's model-space bone lengths.
  float length = 0.0f;
  // Distance from the chain root to the target over `length`.
  float reach = 0.0f;

  const Skeleton& skeleton() const { return clip->skeleton; }
  const std::vector<Transform>& input() const { return clip->frames[frame]; }
  bool reachable() const { return reach < 1.0f; }
  std::string Where() const {
    return absl::StrCat(clip->name, " frame ", frame, " ",
                        clip->skeleton.joint_name(chain.front()), "..",
                        clip->skeleton.joint_name(chain.back()));
  }
};

// About `per_clip` frames evenly spread over the clip, every limb chain.
inline std::vector<RealCase> RealCases(const RealClip& clip, int per_clip) {
  std::vector<RealCase> cases;
  const Skeleton& s = clip.skeleton;
  const std::vector<std::vector<int>> chains = LimbChains(s);
  EXPECT_EQ(chains.size(), 4u) << clip.name;
  const int frames = static_cast<int>(clip.frames.size());
  const int span = frames - kRealDataLookAhead;
  const int stride = std::max(1, span / per_clip);
  for (int f = 0; f < span; f += stride) {
    std::vector<Transform> later = clip.frames[f + kRealDataLookAhead];
    later[0].translation = clip.frames[f][0].translation;
    const std::vector<Transform> now_model = ModelOf(s, clip.frames[f]);
    const std::vector<Transform> later_model = ModelOf(s, later);
    for (const std::vector<int>& chain : chains) {
      RealCase c;
      c.clip = &clip;
      c.frame = f;
      c.chain = chain;
      c.target = later_model[chain.back()].translation;
      for (size_t i = 1; i < chain.size(); ++i) {
        c.length += (now_model[chain[i]].translation -
                     now_model[chain[i - 1]].translation)
                        .norm();
      }
      c.reach =
          (c.target - now_model[chain.front()].translation).norm() / c.length;
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

}  // namespace posewire::testing_util

#endif  // POSEWIRE_TESTS_CORE_CHAIN_IK_REAL_DATA_H_
