// Real-data full-body biped IK cases shared by the core solve-rate test and
// the service check: every CMU BVH clip in tests/data (chain_ik_real_data.h
// loads them; the same files as the shared data set's bvh/ folder), mapped
// by joint names (MapBipedByName), solved from the pose of frame f with both
// hands and both feet as effectors toward where they are 60 frames (0.5 s at
// 120 Hz) later. Unlike the chain cases, the later frame is not moved back
// onto the earlier one: the targets include the distance walked, run or
// jumped, so the body has to follow the limbs.
#ifndef POSEWIRE_TESTS_CORE_FULL_BODY_REAL_DATA_H_
#define POSEWIRE_TESTS_CORE_FULL_BODY_REAL_DATA_H_

#include <gtest/gtest.h>

#include <Eigen/Core>
#include <array>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "solver_core/full_body/biped_mapping.h"
#include "solver_core/full_body/full_body_biped_ik.h"
#include "tests/core/chain_ik_real_data.h"

namespace posewire::testing_util {

// Frames between the pose solved from and the one whose hands and feet are
// the targets.
inline constexpr int kFullBodyLookAhead = 60;

// A clip with its biped mapping.
struct BipedClip {
  RealClip clip;
  BipedMapping mapping;
};

inline BipedClip LoadBipedClip(
    const std::string& file,
    const Eigen::Vector3f& root_scale = Eigen::Vector3f::Ones()) {
  BipedClip out{.clip = LoadRealClip(file, root_scale), .mapping = {}};
  absl::StatusOr<BipedMapping> mapping = MapBipedByName(out.clip.skeleton);
  if (!mapping.ok()) {
    ADD_FAILURE() << file << ": " << mapping.status();
    std::abort();
  }
  out.mapping = *std::move(mapping);
  return out;
}

// The model-space position of a limb's hand or foot.
inline Eigen::Vector3f LimbEnd(const BipedLimbReferences& r,
                               absl::Span<const Transform> model) {
  return r.end >= 0 ? model[r.end].translation
                    : model[r.lower].TransformPoint(r.end_point_offset);
}

struct FullBodyCase {
  const BipedClip* rig = nullptr;
  int frame = 0;
  // Hands and feet in limb order (left arm, right arm, left leg, right leg).
  std::array<Eigen::Vector3f, kNumBipedLimbs> targets{};
  // Upper plus lower bone length of each limb in the input pose (model
  // space, so the root's scale is in them).
  std::array<float, kNumBipedLimbs> limb_lengths{};

  const Skeleton& skeleton() const { return rig->clip.skeleton; }
  const std::vector<Transform>& input() const {
    return rig->clip.frames[frame];
  }
  std::string Where() const {
    return absl::StrCat(rig->clip.name, " frame ", frame);
  }
  // A job at its defaults: only the required fields (skeleton, mapping,
  // input, output and the four effectors' positions and weights).
  FullBodyBipedIkJob DefaultJob(std::vector<Transform>& output,
                                FullBodyBipedIkResult* result) const {
    output.assign(input().size(), Transform());
    FullBodyBipedIkJob job;
    job.skeleton = &skeleton();
    job.input = input();
    job.mapping = &rig->mapping;
    for (int l = 0; l < kNumBipedLimbs; ++l) {
      BipedEffector& e = job.effectors[5 + l];
      e.position = targets[l];
      e.position_weight = 1.0f;
    }
    job.output = absl::MakeSpan(output);
    job.result = result;
    return job;
  }
};

// About `per_clip` frames evenly spread over the clip.
inline std::vector<FullBodyCase> FullBodyCases(const BipedClip& rig,
                                               int per_clip) {
  std::vector<FullBodyCase> cases;
  const Skeleton& s = rig.clip.skeleton;
  const int frames = static_cast<int>(rig.clip.frames.size());
  const int span = frames - kFullBodyLookAhead;
  const int stride = std::max(1, span / per_clip);
  for (int f = 0; f < span; f += stride) {
    const std::vector<Transform> now = ModelOf(s, rig.clip.frames[f]);
    const std::vector<Transform> later =
        ModelOf(s, rig.clip.frames[f + kFullBodyLookAhead]);
    FullBodyCase c;
    c.rig = &rig;
    c.frame = f;
    for (int l = 0; l < kNumBipedLimbs; ++l) {
      const BipedLimbReferences& r =
          rig.mapping.limb(static_cast<BipedLimb>(l));
      c.targets[l] = LimbEnd(r, later);
      c.limb_lengths[l] =
          (now[r.lower].translation - now[r.upper].translation).norm() +
          (LimbEnd(r, now) - now[r.lower].translation).norm();
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

// The solve-rate clips (chain_ik_real_data.h) as bipeds, loaded once.
inline const std::vector<BipedClip>& FullBodyRigs() {
  static const std::vector<BipedClip>* clips =
      new std::vector<BipedClip>(LoadSolveRateClips<BipedClip>(
          [](auto&&... args) { return LoadBipedClip(args...); }));
  return *clips;
}

}  // namespace posewire::testing_util

#endif  // POSEWIRE_TESTS_CORE_FULL_BODY_REAL_DATA_H_
