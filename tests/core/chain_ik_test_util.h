// Test helpers for the chain IK tests: chain skeletons, and forward
// kinematics written independently of solver_core (4x4 matrices
// T * R * S multiplied down the hierarchy), so tests never check a solver
// against the code it is built from.
#ifndef POSEWIRE_TESTS_CORE_CHAIN_IK_TEST_UTIL_H_
#define POSEWIRE_TESTS_CORE_CHAIN_IK_TEST_UTIL_H_

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "solver_core/chain_ik/ik_chain.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"

namespace posewire::testing_util {

inline constexpr float kPi = 3.14159265358979f;

// Model-space matrices of every joint: M[j] = M[parent] * T * R * S.
inline std::vector<Eigen::Matrix4f> MatrixFk(
    const Skeleton& skeleton, const std::vector<Transform>& pose) {
  std::vector<Eigen::Matrix4f> m(pose.size());
  for (int j = 0; j < skeleton.num_joints(); ++j) {
    Eigen::Matrix4f local = Eigen::Matrix4f::Identity();
    const Eigen::Matrix3f r = pose[j].rotation.normalized().toRotationMatrix();
    local.topLeftCorner<3, 3>() = r * pose[j].scale.asDiagonal();
    local.topRightCorner<3, 1>() = pose[j].translation;
    const int p = skeleton.parent(j);
    m[j] = p == kNoParent ? local : Eigen::Matrix4f(m[p] * local);
  }
  return m;
}

inline std::vector<Eigen::Vector3f> FkPositions(
    const Skeleton& skeleton, const std::vector<Transform>& pose) {
  std::vector<Eigen::Vector3f> out;
  for (const Eigen::Matrix4f& m : MatrixFk(skeleton, pose)) {
    out.push_back(m.topRightCorner<3, 1>());
  }
  return out;
}

// Model rotation of every joint (uniform scale assumed: columns normalised).
inline std::vector<Eigen::Quaternionf> FkRotations(
    const Skeleton& skeleton, const std::vector<Transform>& pose) {
  std::vector<Eigen::Quaternionf> out;
  for (const Eigen::Matrix4f& m : MatrixFk(skeleton, pose)) {
    Eigen::Matrix3f r = m.topLeftCorner<3, 3>();
    for (int c = 0; c < 3; ++c) r.col(c).normalize();
    out.push_back(Eigen::Quaternionf(r));
  }
  return out;
}

// Rotation angle of a unit quaternion, in [0, pi].
inline float AngleOf(const Eigen::Quaternionf& q) {
  return 2.0f * std::atan2(q.vec().norm(), std::fabs(q.w()));
}

// Angle between two rotations.
inline float AngleBetween(const Eigen::Quaternionf& a,
                          const Eigen::Quaternionf& b) {
  return AngleOf(a.conjugate() * b);
}

inline Eigen::Quaternionf RandomRotation(std::mt19937& rng, float max_angle) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Eigen::Vector3f axis;
  do {
    // Drawn one by one (the order of a constructor's arguments is
    // unspecified: GCC and clang draw differently). z first: the order GCC
    // used when these cases were written, so they stay the same.
    const float z = u(rng);
    const float y = u(rng);
    const float x = u(rng);
    axis = Eigen::Vector3f(x, y, z);
  } while (axis.norm() < 0.1f || axis.norm() > 1.0f);
  const float angle = max_angle * 0.5f * (u(rng) + 1.0f);
  return Eigen::Quaternionf(Eigen::AngleAxisf(angle, axis.normalized()));
}

inline bool BitEqual(const std::vector<Transform>& a,
                     const std::vector<Transform>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(a[i].translation.data(), b[i].translation.data(),
                    3 * sizeof(float)) != 0 ||
        std::memcmp(a[i].rotation.coeffs().data(),
                    b[i].rotation.coeffs().data(), 4 * sizeof(float)) != 0 ||
        std::memcmp(a[i].scale.data(), b[i].scale.data(), 3 * sizeof(float)) !=
            0) {
      return false;
    }
  }
  return true;
}

// A skeleton "base" -> "j1" -> ... -> "j<n>" with n = bones.size() + 1: a
// root with a non-identity rotation and offset (so the chain's parent frame
// is not the model frame), then chain joints whose local translations are
// `bones` (j2 sits at bones[0] in j1's frame, ...) and whose rest rotations
// are non-identity when `rotated_frames` (so joint frames differ from model
// frames). Uniform `scale` on the base.
inline Skeleton MakeChainSkeleton(const std::vector<Eigen::Vector3f>& bones,
                                  bool rotated_frames = true,
                                  float scale = 1.0f) {
  SkeletonDesc desc;
  Transform base;
  base.translation = Eigen::Vector3f(0.3f, -0.2f, 0.5f);
  if (rotated_frames) {
    base.rotation = Eigen::Quaternionf(
        Eigen::AngleAxisf(0.7f, Eigen::Vector3f(1, 2, 3).normalized()));
  }
  base.scale = Eigen::Vector3f::Constant(scale);
  desc.joint_names.push_back("base");
  desc.parents.push_back(kNoParent);
  desc.rest_pose.push_back(base);
  std::mt19937 rng(7);
  for (size_t i = 0; i <= bones.size(); ++i) {
    Transform t;
    t.translation = i == 0 ? Eigen::Vector3f(0.1f, 0.2f, -0.1f) : bones[i - 1];
    if (rotated_frames) t.rotation = RandomRotation(rng, 0.6f);
    desc.joint_names.push_back(absl::StrCat("j", i + 1));
    desc.parents.push_back(static_cast<int>(i));
    desc.rest_pose.push_back(t);
  }
  return *Skeleton::Create(std::move(desc));
}

// Chain indices 1..n of MakeChainSkeleton.
inline std::vector<int> ChainIndices(int n) {
  std::vector<int> c;
  for (int i = 1; i <= n; ++i) c.push_back(i);
  return c;
}

// Sum of |p[i+1] - p[i]| along a chain.
inline float ChainLength(const std::vector<Eigen::Vector3f>& positions,
                         const std::vector<int>& chain) {
  float l = 0.0f;
  for (size_t i = 1; i < chain.size(); ++i) {
    l += (positions[chain[i]] - positions[chain[i - 1]]).norm();
  }
  return l;
}

// The five-joint test chain (four bones in different directions) that the
// CCD and FABRIK tests share, with a factory for a solver job on it.
inline std::vector<Eigen::Vector3f> TestChainBones() {
  return {{0.0f, 1.0f, 0.0f},
          {0.2f, 0.8f, 0.1f},
          {0.0f, 0.1f, 0.7f},
          {-0.3f, 0.5f, 0.0f}};
}

// A chain job (FabrikIkJob, CcdIkJob) from `input` toward `target` with a
// tolerance of 5e-5 of the chain's length; output and result unset.
template <typename Job>
Job ChainJob(const Skeleton& skeleton, const std::vector<Transform>& input,
             const std::vector<int>& chain, const Eigen::Vector3f& target,
             int max_iterations) {
  Job job;
  job.skeleton = &skeleton;
  job.input = input;
  job.chain = chain;
  job.target = target;
  job.max_iterations = max_iterations;
  job.tolerance = AbsoluteTolerance(
      5e-5f * ChainLength(FkPositions(skeleton, input), chain));
  return job;
}

// A chain job (FabrikIkJob, CcdIkJob) at default settings from `input`
// toward `target`, writing `out` (set to the input) and `result`.
template <typename Job>
Job DefaultJob(const Skeleton& skeleton, absl::Span<const Transform> input,
               absl::Span<const int> chain, const Eigen::Vector3f& target,
               std::vector<Transform>& out, IkResult* result) {
  out.assign(input.begin(), input.end());
  Job job;
  job.skeleton = &skeleton;
  job.input = input;
  job.chain = chain;
  job.target = target;
  job.output = absl::MakeSpan(out);
  job.result = result;
  return job;
}

template <typename Job>
struct TestChain {
  Skeleton skeleton = MakeChainSkeleton(TestChainBones());
  std::vector<int> chain = ChainIndices(5);
  std::vector<Transform> input = RestPose(skeleton);
  float length = ChainLength(FkPositions(skeleton, input), chain);

  // A reachable target: the tip of another pose of the chain.
  Eigen::Vector3f RandomReachable(std::mt19937& rng) const {
    std::vector<Transform> other = input;
    for (size_t i = 0; i + 1 < chain.size(); ++i) {
      other[chain[i]].rotation = RandomRotation(rng, 2.0f);
    }
    return FkPositions(skeleton, other)[chain.back()];
  }

  // `count` of them, from a generator seeded with `seed`.
  std::vector<Eigen::Vector3f> RandomReachableTargets(int count,
                                                      uint32_t seed) const {
    std::mt19937 rng(seed);
    std::vector<Eigen::Vector3f> targets;
    for (int t = 0; t < count; ++t) targets.push_back(RandomReachable(rng));
    return targets;
  }

  // A job from `input` toward `target`, writing `out`, with a tolerance of
  // 5e-5 of the chain length.
  Job MakeJob(const Eigen::Vector3f& target, std::vector<Transform>& out,
              IkResult* result, int max_iterations) const {
    out = input;
    Job job = ChainJob<Job>(skeleton, input, chain, target, max_iterations);
    job.output = absl::MakeSpan(out);
    job.result = result;
    return job;
  }
};

// A case for over-relaxation (fabrik_ik.h, ccd_ik.h): a 10-joint chain of
// unit bones started nearly straight (random turns up to 0.3 rad, where
// both solvers creep) and 100 reachable targets, the tips of random poses
// with turns up to 1.2 rad.
struct LongChainCase {
  explicit LongChainCase(uint32_t seed) {
    std::mt19937 rng(seed);
    for (size_t i = 0; i + 1 < chain.size(); ++i) {
      input[chain[i]].rotation = RandomRotation(rng, 0.3f);
    }
    for (int t = 0; t < 100; ++t) {
      std::vector<Transform> other = input;
      for (size_t i = 0; i + 1 < chain.size(); ++i) {
        other[chain[i]].rotation = RandomRotation(rng, 1.2f);
      }
      targets.push_back(FkPositions(skeleton, other)[chain.back()]);
    }
  }

  Skeleton skeleton =
      MakeChainSkeleton(std::vector<Eigen::Vector3f>(9, {0.0f, 1.0f, 0.0f}));
  std::vector<int> chain = ChainIndices(10);
  std::vector<Transform> input = RestPose(skeleton);
  std::vector<Eigen::Vector3f> targets;
};

// One target solved twice by a chain job (FabrikIkJob, CcdIkJob) set up
// but for its output and result: classic (over_relaxation 0) and with
// `relax`.
struct ClassicAndRelaxed {
  IkResult classic, relaxed;
  std::vector<Transform> classic_out, relaxed_out;
};
template <typename Job>
ClassicAndRelaxed SolveClassicAndRelaxed(Job job, float relax) {
  ClassicAndRelaxed r;
  r.classic_out.assign(job.input.begin(), job.input.end());
  r.relaxed_out = r.classic_out;
  job.over_relaxation = 0.0f;
  job.output = absl::MakeSpan(r.classic_out);
  job.result = &r.classic;
  EXPECT_TRUE(job.Run().ok());
  job.over_relaxation = relax;
  job.output = absl::MakeSpan(r.relaxed_out);
  job.result = &r.relaxed;
  EXPECT_TRUE(job.Run().ok());
  return r;
}

// Expects `job` (valid but for it) to be INVALID_ARGUMENT naming `field`
// with each of `values` as its over_relaxation.
template <typename Job>
void ExpectOverRelaxationRejected(Job job, std::initializer_list<float> values,
                                  const std::string& field) {
  for (float r : values) {
    job.over_relaxation = r;
    const absl::Status s = job.Run();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << r;
    EXPECT_THAT(s.message(), ::testing::HasSubstr(field)) << r;
  }
}

}  // namespace posewire::testing_util

#endif  // POSEWIRE_TESTS_CORE_CHAIN_IK_TEST_UTIL_H_
