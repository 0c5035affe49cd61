// Shared helpers for the pose-operation tests (sampling, blending, additive,
// crossfade): a seeded random source, small synthetic skeletons and poses,
// and angle measures computed with Eigen only (never with the code under
// test).
#ifndef POSEWIRE_TESTS_CORE_POSE_OPS_TEST_UTIL_H_
#define POSEWIRE_TESTS_CORE_POSE_OPS_TEST_UTIL_H_

#include <Eigen/Geometry>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"

namespace posewire::testing {

// Seeded generator producing the same floats on every standard library
// (mt19937's sequence is fixed by the standard, distributions are not).
class Rng {
 public:
  explicit Rng(uint32_t seed) : engine_(seed) {}

  float Uniform(float lo, float hi) {
    const float unit =
        static_cast<float>(engine_() >> 8) * (1.0f / 16777216.0f);
    return lo + (hi - lo) * unit;
  }

  Eigen::Vector3f Vector(float lo, float hi) {
    const float x = Uniform(lo, hi);
    const float y = Uniform(lo, hi);
    const float z = Uniform(lo, hi);
    return Eigen::Vector3f(x, y, z);
  }

  Eigen::Vector3f Axis() { return Vector(-1, 1).normalized(); }

  Eigen::Quaternionf Rotation() {
    const float angle = Uniform(-3.1f, 3.1f);
    return Eigen::Quaternionf(Eigen::AngleAxisf(angle, Axis()));
  }

  Transform RandomTransform() {
    Transform t;
    t.translation = Vector(-2, 2);
    t.rotation = Rotation();
    t.scale = Vector(0.5f, 2.0f);
    return t;
  }

 private:
  std::mt19937 engine_;
};

// Joints "j0".."j<n-1>": a binary tree (parent (j - 1) / 2), so subtrees are
// not contiguous index ranges. Rest pose: a distinct translation per joint.
inline Skeleton TreeSkeleton(int n) {
  SkeletonDesc desc;
  for (int j = 0; j < n; ++j) {
    // StrCat, not "j" + std::to_string: GCC 12 reports a false -Wrestrict
    // on the latter once inlined.
    desc.joint_names.push_back(absl::StrCat("j", j));
    desc.parents.push_back(j == 0 ? kNoParent : (j - 1) / 2);
    Transform rest;
    rest.translation = Eigen::Vector3f(0.1f * j, 1.0f, -0.5f * j);
    rest.rotation = Eigen::Quaternionf(
        Eigen::AngleAxisf(0.05f * j, Eigen::Vector3f::UnitZ()));
    desc.rest_pose.push_back(rest);
  }
  return *Skeleton::Create(std::move(desc));
}

inline LocalPose RandomPose(int n, Rng& rng) {
  LocalPose pose(n);
  for (Transform& t : pose) t = rng.RandomTransform();
  return pose;
}

// Angle in radians of the rotation taking a to b (q and -q alike), in double
// and through atan2, which stays accurate for tiny angles where acos of a
// dot product does not.
inline float AngleBetween(const Eigen::Quaternionf& a,
                          const Eigen::Quaternionf& b) {
  const Eigen::Quaterniond d =
      a.cast<double>().normalized().conjugate() * b.cast<double>().normalized();
  return static_cast<float>(2.0 * std::atan2(d.vec().norm(), std::fabs(d.w())));
}

// True when the two transforms have the same bits (operator== would call
// -0 and +0 equal and NaN unequal to itself).
inline bool SameBits(const Transform& a, const Transform& b) {
  float fa[10] = {a.translation.x(), a.translation.y(), a.translation.z(),
                  a.rotation.x(),    a.rotation.y(),    a.rotation.z(),
                  a.rotation.w(),    a.scale.x(),       a.scale.y(),
                  a.scale.z()};
  float fb[10] = {b.translation.x(), b.translation.y(), b.translation.z(),
                  b.rotation.x(),    b.rotation.y(),    b.rotation.z(),
                  b.rotation.w(),    b.scale.x(),       b.scale.y(),
                  b.scale.z()};
  return std::memcmp(fa, fb, sizeof(fa)) == 0;
}

}  // namespace posewire::testing

#endif  // POSEWIRE_TESTS_CORE_POSE_OPS_TEST_UTIL_H_
