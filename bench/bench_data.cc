#include "bench/bench_data.h"

#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>

#include "solver_core/io/asset_reader.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/model/pose.h"

namespace posewire::bench {

const ImportedAsset& LoadAsset(const std::string& file_name) {
  static std::mutex mutex;
  static auto* cache =
      new std::map<std::string, std::unique_ptr<ImportedAsset>>();
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = (*cache)[file_name];
  if (slot == nullptr) {
    auto read =
        ReadAssetFile(std::string(POSEWIRE_BENCH_DATA_DIR) + "/" + file_name);
    if (!read.ok()) {
      std::cerr << "cannot load benchmark data: " << read.status() << "\n";
      std::exit(1);
    }
    slot = std::make_unique<ImportedAsset>(*std::move(read));
  }
  return *slot;
}

namespace {

constexpr size_t kWalkCases = 64;

WalkLimbCases MakeWalkLimbs(size_t joints) {
  const ImportedAsset& walk = LoadAsset("cmu_131_01_walk.bvh");
  WalkLimbCases out;
  out.skeleton = &walk.skeleton;
  const Skeleton& s = walk.skeleton;
  const Clip& clip = walk.clips[0];
  auto frame = [&](size_t f) {
    std::vector<Transform> pose = RestPose(s);
    for (int j = 0; j < s.num_joints(); ++j) {
      const JointTracks& t = clip.tracks[j];
      if (!t.translation.empty()) {
        pose[j].translation = t.translation.key_value(f);
      }
      if (!t.rotation.empty()) pose[j].rotation = t.rotation.key_value(f);
    }
    return pose;
  };
  auto model = [&](const std::vector<Transform>& local) {
    std::vector<Transform> m(local.size());
    LocalToModelJob fk{
        .skeleton = &s, .input = local, .output = absl::MakeSpan(m)};
    if (!fk.Run().ok()) std::abort();
    return m;
  };
  const char* limbs[][2] = {{"LeftShoulder", "lhand"},
                            {"RightShoulder", "rhand"},
                            {"LeftHip", "LeftAnkle"},
                            {"RightHip", "RightAnkle"}};
  for (size_t f = 0; out.cases.size() < kWalkCases; f += 13) {
    const std::vector<Transform> now = frame(f);
    std::vector<Transform> later = frame(f + 30);
    later[0].translation = now[0].translation;
    const std::vector<Transform> now_model = model(now);
    const std::vector<Transform> later_model = model(later);
    for (const auto& limb : limbs) {
      WalkLimbCases::Case c;
      c.input = now;
      for (int j = s.FindJoint(limb[1]); j != s.parent(s.FindJoint(limb[0]));
           j = s.parent(j)) {
        c.chain.insert(c.chain.begin(), j);
      }
      if (joints > 0 && c.chain.size() > joints) c.chain.resize(joints);
      c.target = later_model[c.chain.back()].translation;
      float length = 0.0f;
      for (size_t i = 1; i < c.chain.size(); ++i) {
        length += (now_model[c.chain[i]].translation -
                   now_model[c.chain[i - 1]].translation)
                      .norm();
      }
      if ((c.target - now_model[c.chain[0]].translation).norm() < length &&
          out.cases.size() < kWalkCases) {
        out.cases.push_back(std::move(c));
      }
    }
  }
  return out;
}

}  // namespace

const WalkLimbCases& WalkLimbs(size_t joints) {
  static std::mutex mutex;
  static auto* cache = new std::map<size_t, std::unique_ptr<WalkLimbCases>>();
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = (*cache)[joints];
  if (slot == nullptr) {
    slot = std::make_unique<WalkLimbCases>(MakeWalkLimbs(joints));
  }
  return *slot;
}

}  // namespace posewire::bench
