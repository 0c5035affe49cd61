// Real-data IK cases shared by the core solve-rate tests (chain IK, two-bone
// IK) and the service checks: the CMU BVH clips in tests/data, each arm
// (upper arm to hand) and leg (thigh to ankle or foot) found by joint names,
// solved from the pose of frame f toward where the chain's end joint is 30
// frames (0.25 s at 120 Hz) later. The later frame is placed where the
// earlier one is (its root joint's translation replaced by frame f's), so the
// target is the limb's own motion, not the distance walked. Two-bone cases
// are the first three joints of each limb (upper arm, forearm, wrist or hand;
// thigh, shin, ankle or foot).
#ifndef POSEWIRE_TESTS_CORE_CHAIN_IK_REAL_DATA_H_
#define POSEWIRE_TESTS_CORE_CHAIN_IK_REAL_DATA_H_

#include <gtest/gtest.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "solver_core/analytic_ik/two_bone_ik.h"
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

// The clips every solve-rate test runs on: six CMU clips of two rigs (31
// joints with three naming schemes, 43 joints Daz-style), then the first
// again on a root scaled by kSolveRateRootScale. (The same files as
// ../shared/data/bvh, copied so the project tests without that folder.)
inline constexpr const char* kSolveRateFiles[] = {
    "cmu_131_01_walk.bvh",       "cmu_01_01_jumps.bvh",
    "cmu_02_03_run_daz.bvh",     "cmu_49_04_run_leap.bvh",
    "threejs_pirouette_cmu.bvh", "cmu_01_03_climb_reach.bvh"};
inline const Eigen::Vector3f kSolveRateRootScale(1.0f, 1.5f, 0.75f);

// kSolveRateFiles loaded by `load`, then the first on the scaled root.
template <typename Clip, typename Load>
std::vector<Clip> LoadSolveRateClips(Load load) {
  std::vector<Clip> out;
  for (const char* file : kSolveRateFiles) out.push_back(load(file));
  out.push_back(load(kSolveRateFiles[0], kSolveRateRootScale));
  return out;
}

// The solve-rate clips for chain and two-bone IK, loaded once.
inline const std::vector<RealClip>& SolveRateClips() {
  static const std::vector<RealClip>* clips =
      new std::vector<RealClip>(LoadSolveRateClips<RealClip>(
          [](auto&&... args) { return LoadRealClip(args...); }));
  return *clips;
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

// About `per_clip` frames evenly spread over the clip, every limb chain;
// with `joints` > 0, each chain cut to its first `joints` joints (3: the
// two-bone limbs).
inline std::vector<RealCase> RealCases(const RealClip& clip, int per_clip,
                                       size_t joints = 0) {
  std::vector<RealCase> cases;
  const Skeleton& s = clip.skeleton;
  std::vector<std::vector<int>> chains = LimbChains(s);
  EXPECT_EQ(chains.size(), 4u) << clip.name;
  for (std::vector<int>& chain : chains) {
    if (joints > 0 && chain.size() > joints) chain.resize(joints);
  }
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

// Every clip of SolveRateClips(), `per_clip` frames each.
inline std::vector<RealCase> SolveRateCases(int per_clip, size_t joints = 0) {
  std::vector<RealCase> cases;
  for (const RealClip& clip : SolveRateClips()) {
    for (RealCase& c : RealCases(clip, per_clip, joints)) {
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

// SolveRateCases, computed once per process for each argument pair.
inline const std::vector<RealCase>& CachedSolveRateCases(int per_clip,
                                                         size_t joints = 0) {
  static auto* cache =
      new std::map<std::pair<int, size_t>, std::vector<RealCase>>();
  auto [it, added] = cache->try_emplace({per_clip, joints});
  if (added) it->second = SolveRateCases(per_clip, joints);
  return it->second;
}

// Where a three-joint case's target lies for the limb: within its reach
// (with a margin of 1e-5 of the limb's length at both ends), beyond it,
// closer to the start joint than the bones can fold, or on a boundary.
enum class TwoBoneReach { kReachable, kBeyond, kTooClose, kBoundary };

struct TwoBoneGeometry {
  float l1 = 0.0f;  // bone lengths in the input pose
  float l2 = 0.0f;
  float d = 0.0f;  // start joint to target
  TwoBoneReach reach = TwoBoneReach::kBoundary;
};

inline TwoBoneGeometry TwoBoneGeometryOf(const RealCase& c) {
  const std::vector<Transform> model = ModelOf(c.skeleton(), c.input());
  const Eigen::Vector3f a = model[c.chain[0]].translation;
  TwoBoneGeometry g;
  g.l1 = (model[c.chain[1]].translation - a).norm();
  g.l2 = (model[c.chain[2]].translation - model[c.chain[1]].translation).norm();
  g.d = (c.target - a).norm();
  const float margin = 1e-5f * (g.l1 + g.l2);
  const float closest = std::fabs(g.l1 - g.l2);
  if (g.d > g.l1 + g.l2 + margin) {
    g.reach = TwoBoneReach::kBeyond;
  } else if (g.d < closest - margin) {
    g.reach = TwoBoneReach::kTooClose;
  } else if (g.d <= g.l1 + g.l2 - margin && g.d >= closest + margin) {
    g.reach = TwoBoneReach::kReachable;
  }
  return g;
}

// Two-bone IK of a three-joint case with only what the job requires (the
// joints, the target, the poses; parent_model from the input): every other
// field at its default.
inline TwoBoneIkJob DefaultTwoBoneJob(const RealCase& c,
                                      std::vector<Transform>& out,
                                      TwoBoneIkResult* result) {
  EXPECT_EQ(c.chain.size(), 3u) << c.Where();
  out = c.input();
  TwoBoneIkJob job;
  job.skeleton = &c.skeleton();
  job.input = c.input();
  job.parent_model =
      ParentModelTransformOrRoot(c.skeleton(), c.input(), c.chain[0]);
  job.start_joint = c.chain[0];
  job.mid_joint = c.chain[1];
  job.end_joint = c.chain[2];
  job.target = c.target;
  job.output = absl::MakeSpan(out);
  job.result = result;
  return job;
}

}  // namespace posewire::testing_util

#endif  // POSEWIRE_TESTS_CORE_CHAIN_IK_REAL_DATA_H_
