// Full-body biped IK on the real rigs in tests/data (CMU 31-joint walk, CMU
// 43-joint Daz run, RobotExpressive). Every check runs forward kinematics
// here, in double precision with 4x4 matrices (not the library's Combine),
// and compares with geometry derived independently: targets come from other
// frames of the same clip, bend planes are measured from joint positions,
// bone lengths from joint-to-parent distances.
#include "solver_core/full_body/full_body_biped_ik.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <array>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "solver_core/full_body/biped_mapping.h"
#include "solver_core/io/bvh_reader.h"
#include "solver_core/io/gltf_reader.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/pose_ops/sampling_job.h"

namespace posewire {
namespace full_body_biped_ik_test {

using ::testing::Contains;
using ::testing::HasSubstr;

// ---------------------------------------------------------------------------
// Rigs, frames and independent forward kinematics.

struct Rig {
  ImportedAsset asset;
  BipedMapping mapping;
};

Rig LoadRig(const std::string& file) {
  const std::string path = std::string(POSEWIRE_TEST_DATA_DIR) + "/" + file;
  absl::StatusOr<ImportedAsset> asset =
      file.ends_with(".bvh") ? ReadBvhFile(path) : ReadGltfFile(path);
  EXPECT_TRUE(asset.ok()) << asset.status();
  std::vector<BipedTip> tips;
  for (const EndSite& e : asset->end_sites) tips.push_back({e.joint, e.offset});
  absl::StatusOr<BipedMapping> mapping = MapBipedByName(asset->skeleton, tips);
  EXPECT_TRUE(mapping.ok()) << mapping.status();
  return Rig{*std::move(asset), *std::move(mapping)};
}

// Local pose of clip `clip` at `time` (clamped into the clip).
std::vector<Transform> Frame(const Rig& rig, int clip, float time) {
  std::vector<Transform> pose(rig.asset.skeleton.num_joints());
  SamplingJob job;
  job.skeleton = &rig.asset.skeleton;
  job.clip = &rig.asset.clips[clip];
  job.time = time;
  job.mode = PlaybackMode::kClamp;
  job.output = absl::MakeSpan(pose);
  EXPECT_TRUE(job.Run().ok());
  return pose;
}

Eigen::Matrix4d LocalMatrix(const Transform& t) {
  Eigen::Matrix4d m = Eigen::Matrix4d::Identity();
  m.topLeftCorner<3, 3>() =
      t.rotation.cast<double>().normalized().toRotationMatrix() *
      t.scale.cast<double>().asDiagonal();
  m.topRightCorner<3, 1>() = t.translation.cast<double>();
  return m;
}

std::vector<Eigen::Matrix4d> Fk(const Skeleton& s,
                                const std::vector<Transform>& local) {
  std::vector<Eigen::Matrix4d> m(local.size());
  for (int j = 0; j < s.num_joints(); ++j) {
    const int p = s.parent(j);
    m[j] = (p == kNoParent ? Eigen::Matrix4d::Identity() : m[p]) *
           LocalMatrix(local[j]);
  }
  return m;
}

Eigen::Vector3d Pos(const Eigen::Matrix4d& m) {
  return m.topRightCorner<3, 1>();
}

Eigen::Quaterniond Rot(const Eigen::Matrix4d& m) {
  Eigen::Matrix3d r = m.topLeftCorner<3, 3>();
  for (int c = 0; c < 3; ++c) r.col(c).normalize();
  return Eigen::Quaterniond(r);
}

// Position of a limb joint: 0 upper, 1 lower, 2 end (joint or end point).
Eigen::Vector3d LimbPos(const Rig& rig, const std::vector<Eigen::Matrix4d>& m,
                        BipedLimb limb, int k) {
  const BipedLimbReferences& r = rig.mapping.limb(limb);
  if (k == 0) return Pos(m[r.upper]);
  if (k == 1) return Pos(m[r.lower]);
  if (r.end >= 0) return Pos(m[r.end]);
  const Eigen::Vector4d p =
      m[r.lower] * r.end_point_offset.cast<double>().homogeneous();
  return p.head<3>();
}

double LimbLength(const Rig& rig, const std::vector<Eigen::Matrix4d>& m,
                  BipedLimb limb) {
  return (LimbPos(rig, m, limb, 1) - LimbPos(rig, m, limb, 0)).norm() +
         (LimbPos(rig, m, limb, 2) - LimbPos(rig, m, limb, 1)).norm();
}

BipedEffectorId EndEffector(BipedLimb limb) {
  return static_cast<BipedEffectorId>(5 + static_cast<int>(limb));
}

bool BitEqual(const Transform& a, const Transform& b) {
  return std::memcmp(a.translation.data(), b.translation.data(),
                     3 * sizeof(float)) == 0 &&
         std::memcmp(a.rotation.coeffs().data(), b.rotation.coeffs().data(),
                     4 * sizeof(float)) == 0 &&
         std::memcmp(a.scale.data(), b.scale.data(), 3 * sizeof(float)) == 0;
}

bool BitEqual(const std::vector<Transform>& a,
              const std::vector<Transform>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!BitEqual(a[i], b[i])) return false;
  }
  return true;
}

// The pose of frame `other` with its pelvis moved onto the pelvis of
// `base`: the limbs of another moment of the clip, around this body. Its
// hands and feet are reachable by construction.
std::vector<Eigen::Matrix4d> Reposed(const Rig& rig,
                                     const std::vector<Transform>& base,
                                     const std::vector<Transform>& other) {
  const Skeleton& s = rig.asset.skeleton;
  const int pelvis = rig.mapping.references().pelvis;
  const std::vector<Eigen::Matrix4d> mb = Fk(s, base);
  std::vector<Eigen::Matrix4d> mo = Fk(s, other);
  const Eigen::Matrix4d align = mb[pelvis] * mo[pelvis].inverse();
  for (Eigen::Matrix4d& m : mo) m = align * m;
  return mo;
}

FullBodyBipedIkJob MakeJob(const Rig& rig, const std::vector<Transform>& in,
                           std::vector<Transform>& out) {
  FullBodyBipedIkJob job;
  job.skeleton = &rig.asset.skeleton;
  job.mapping = &rig.mapping;
  job.input = in;
  out.assign(in.size(), Transform());
  job.output = absl::MakeSpan(out);
  return job;
}

// Both hands and both feet at full weight toward where they are in `target`.
void AimHandsAndFeet(const Rig& rig, const std::vector<Eigen::Matrix4d>& target,
                     FullBodyBipedIkJob& job) {
  for (int l = 0; l < kNumBipedLimbs; ++l) {
    const BipedLimb limb = static_cast<BipedLimb>(l);
    BipedEffector& e = job.effector(EndEffector(limb));
    e.position = LimbPos(rig, target, limb, 2).cast<float>();
    e.position_weight = 1.0f;
  }
}

void ExpectBoneLengthsKept(const Rig& rig, const std::vector<Transform>& in,
                           const std::vector<Transform>& out,
                           const std::string& where) {
  const Skeleton& s = rig.asset.skeleton;
  const int pelvis = rig.mapping.references().pelvis;
  const std::vector<Eigen::Matrix4d> mi = Fk(s, in);
  const std::vector<Eigen::Matrix4d> mo = Fk(s, out);
  for (int j = 0; j < s.num_joints(); ++j) {
    ASSERT_TRUE(out[j].translation.allFinite() &&
                out[j].rotation.coeffs().allFinite())
        << where << " joint " << s.joint_name(j);
    EXPECT_NEAR(out[j].rotation.norm(), 1.0f, 1e-5f) << where;
    const int p = s.parent(j);
    if (p == kNoParent || j == pelvis) continue;
    // Only rotations change below the pelvis: local translations are the
    // input's, bit for bit, and so are the bone lengths.
    EXPECT_TRUE(std::memcmp(out[j].translation.data(), in[j].translation.data(),
                            3 * sizeof(float)) == 0)
        << where << " joint " << s.joint_name(j);
    const double before = (Pos(mi[j]) - Pos(mi[p])).norm();
    const double after = (Pos(mo[j]) - Pos(mo[p])).norm();
    EXPECT_NEAR(after, before, 1e-4 * (1.0 + before))
        << where << " bone " << s.joint_name(j);
  }
}

// ---------------------------------------------------------------------------
// Reaching targets from other frames.

struct ReachCase {
  const char* file;
  int clip;
  std::vector<std::pair<float, float>> frames;  // (input time, target time)
};

void PrintTo(const ReachCase& c, std::ostream* os) { *os << c.file; }

class ReachTest : public ::testing::TestWithParam<ReachCase> {};

TEST_P(ReachTest, FullBodyBiped_LimbEffectorsReachTargetsFromOtherFrames) {
  const ReachCase& c = GetParam();
  const Rig rig = LoadRig(c.file);
  const Skeleton& s = rig.asset.skeleton;
  for (const auto& [t_in, t_target] : c.frames) {
    const std::vector<Transform> in = Frame(rig, c.clip, t_in);
    const std::vector<Eigen::Matrix4d> target =
        Reposed(rig, in, Frame(rig, c.clip, t_target));
    std::vector<Transform> out;
    FullBodyBipedIkJob job = MakeJob(rig, in, out);
    AimHandsAndFeet(rig, target, job);
    FullBodyBipedIkResult result;
    job.result = &result;
    ASSERT_TRUE(job.Run().ok());
    const std::vector<Eigen::Matrix4d> m = Fk(s, out);
    for (int l = 0; l < kNumBipedLimbs; ++l) {
      const BipedLimb limb = static_cast<BipedLimb>(l);
      const double error =
          (LimbPos(rig, m, limb, 2) - LimbPos(rig, target, limb, 2)).norm();
      EXPECT_LE(error, 1e-3 * LimbLength(rig, m, limb))
          << c.file << " frames " << t_in << " -> " << t_target << " "
          << BipedLimbName(limb);
      EXPECT_NEAR(result.effectors[5 + l].error, error,
                  1e-4 * LimbLength(rig, m, limb));
    }
    ExpectBoneLengthsKept(rig, in, out, c.file);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Rigs, ReachTest,
    ::testing::Values(
        ReachCase{"cmu_131_01_walk.bvh",
                  0,
                  {{1.0f, 1.25f}, {2.0f, 2.5f}, {3.0f, 3.4f}, {4.0f, 4.3f}}},
        ReachCase{"cmu_02_03_run_daz.bvh",
                  0,
                  {{0.3f, 0.5f}, {0.7f, 0.9f}, {1.0f, 1.3f}}},
        ReachCase{"RobotExpressive.glb", 10, {{0.2f, 0.5f}, {0.6f, 0.9f}}}),
    [](const ::testing::TestParamInfo<ReachCase>& info) {
      std::string name = info.param.file;
      for (char& ch : name) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return name;
    });

// ---------------------------------------------------------------------------
// Weights.

class WalkTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    rig_ = new Rig(LoadRig("cmu_131_01_walk.bvh"));
  }
  static void TearDownTestSuite() {
    delete rig_;
    rig_ = nullptr;
  }
  static Rig* rig_;
};
Rig* WalkTest::rig_ = nullptr;

TEST_F(WalkTest, FullBodyBiped_ZeroWeightsReturnTheInputBitForBit) {
  const Rig& rig = *rig_;
  const std::vector<Transform> in = Frame(rig, 0, 2.0f);
  std::vector<Transform> out;
  // Master weight 0 with every effector set.
  FullBodyBipedIkJob job = MakeJob(rig, in, out);
  for (int e = 0; e < kNumBipedEffectors; ++e) {
    job.effectors[e].position = Eigen::Vector3f(10.0f, 20.0f, 30.0f);
    job.effectors[e].position_weight = 1.0f;
    job.effectors[e].rotation_weight = 1.0f;
    job.effectors[e].position_offset = Eigen::Vector3f(1.0f, 0.0f, 0.0f);
  }
  job.ik_position_weight = 0.0f;
  ASSERT_TRUE(job.Run().ok());
  EXPECT_TRUE(BitEqual(out, in));
  // Master weight 1, every effector weight 0, no offsets: nothing to solve.
  FullBodyBipedIkJob idle = MakeJob(rig, in, out);
  for (int e = 0; e < kNumBipedEffectors; ++e) {
    idle.effectors[e].position = Eigen::Vector3f(10.0f, 20.0f, 30.0f);
  }
  FullBodyBipedIkResult result;
  idle.result = &result;
  ASSERT_TRUE(idle.Run().ok());
  EXPECT_TRUE(BitEqual(out, in));
  EXPECT_EQ(result.iterations, 0);
  EXPECT_TRUE(result.reached);
}

TEST_F(WalkTest, FullBodyBiped_PullingAHandBeyondReachMovesTheBodyFeetPinned) {
  const Rig& rig = *rig_;
  const Skeleton& s = rig.asset.skeleton;
  const std::vector<Transform> in = Frame(rig, 0, 3.0f);
  const std::vector<Eigen::Matrix4d> mi = Fk(s, in);
  const BipedLimbReferences& left = rig.mapping.limb(BipedLimb::kLeftArm);
  const BipedLimbReferences& right = rig.mapping.limb(BipedLimb::kRightArm);
  const Eigen::Vector3d shoulder = Pos(mi[left.upper]);
  const Eigen::Vector3d outward =
      (shoulder - Pos(mi[right.upper])).normalized();
  const double arm = LimbLength(rig, mi, BipedLimb::kLeftArm);
  // Out to the side, 1.6 arm lengths from the shoulder.
  const Eigen::Vector3d target = shoulder + outward * (1.6 * arm);

  std::vector<Transform> out;
  FullBodyBipedIkJob job = MakeJob(rig, in, out);
  job.effector(BipedEffectorId::kLeftHand).position = target.cast<float>();
  job.effector(BipedEffectorId::kLeftHand).position_weight = 1.0f;
  for (BipedLimb leg : {BipedLimb::kLeftLeg, BipedLimb::kRightLeg}) {
    BipedEffector& foot = job.effector(EndEffector(leg));
    foot.position = LimbPos(rig, mi, leg, 2).cast<float>();
    foot.position_weight = 1.0f;
  }
  ASSERT_TRUE(job.Run().ok());
  const std::vector<Eigen::Matrix4d> mo = Fk(s, out);

  // The body (root node, and the shoulder) moved toward the target...
  const int root = rig.mapping.references().root_node;
  const double body_shift = (Pos(mo[root]) - Pos(mi[root])).dot(outward);
  const double shoulder_shift =
      (Pos(mo[left.upper]) - Pos(mi[left.upper])).dot(outward);
  EXPECT_GT(body_shift, 0.05 * arm);
  EXPECT_GT(shoulder_shift, 0.1 * arm);
  // ...the hand got closer than a stiff body would let it...
  const double hand_distance =
      (LimbPos(rig, mo, BipedLimb::kLeftArm, 2) - target).norm();
  EXPECT_LT(hand_distance, 0.6 * arm - 0.05 * arm);
  // ...and the feet stayed where they were.
  for (BipedLimb leg : {BipedLimb::kLeftLeg, BipedLimb::kRightLeg}) {
    EXPECT_LE((LimbPos(rig, mo, leg, 2) - LimbPos(rig, mi, leg, 2)).norm(),
              1e-3 * LimbLength(rig, mi, leg))
        << BipedLimbName(leg);
  }
  ExpectBoneLengthsKept(rig, in, out, "pull");
}

// Distance of `p` from the plane through a, b, c, and the side of it.
double PlaneDistance(const Eigen::Vector3d& a, const Eigen::Vector3d& b,
                     const Eigen::Vector3d& c, const Eigen::Vector3d& p) {
  const Eigen::Vector3d n = (b - a).cross(c - a).normalized();
  return n.dot(p - a);
}

TEST_F(WalkTest, FullBodyBiped_BendGoalsSetKneeAndElbowPlanes) {
  const Rig& rig = *rig_;
  const Skeleton& s = rig.asset.skeleton;
  const std::vector<Transform> in = Frame(rig, 0, 1.5f);
  const std::vector<Eigen::Matrix4d> mi = Fk(s, in);
  const Eigen::Vector3d left_right =
      (Pos(mi[rig.mapping.limb(BipedLimb::kLeftLeg).upper]) -
       Pos(mi[rig.mapping.limb(BipedLimb::kRightLeg).upper]))
          .normalized();
  for (int iterations : {0, 4}) {
    std::vector<Transform> out;
    FullBodyBipedIkJob job = MakeJob(rig, in, out);
    job.iterations = iterations;
    std::array<Eigen::Vector3d, kNumBipedLimbs> goals;
    for (int l = 0; l < kNumBipedLimbs; ++l) {
      const BipedLimb limb = static_cast<BipedLimb>(l);
      const double length = LimbLength(rig, mi, limb);
      // Hands and feet pulled in (the limb must bend), bend goals out to
      // each limb's own side.
      const Eigen::Vector3d p0 = LimbPos(rig, mi, limb, 0);
      const Eigen::Vector3d p2 = LimbPos(rig, mi, limb, 2);
      const Eigen::Vector3d end = p0 + (p2 - p0).normalized() * 0.6 * length;
      const double side = (l == 0 || l == 2) ? 1.0 : -1.0;
      goals[l] = LimbPos(rig, mi, limb, 1) + side * left_right * length;
      BipedEffector& e = job.effector(EndEffector(limb));
      e.position = end.cast<float>();
      e.position_weight = 1.0f;
      job.limb(limb).bend_goal = goals[l].cast<float>();
      job.limb(limb).bend_goal_weight = 1.0f;
    }
    ASSERT_TRUE(job.Run().ok());
    const std::vector<Eigen::Matrix4d> mo = Fk(s, out);
    for (int l = 0; l < kNumBipedLimbs; ++l) {
      const BipedLimb limb = static_cast<BipedLimb>(l);
      const double length = LimbLength(rig, mi, limb);
      const Eigen::Vector3d a = LimbPos(rig, mo, limb, 0);
      const Eigen::Vector3d b = LimbPos(rig, mo, limb, 1);
      const Eigen::Vector3d c = LimbPos(rig, mo, limb, 2);
      // The middle joint is in the plane of the limb's ends and the goal...
      EXPECT_NEAR(PlaneDistance(a, c, goals[l], b), 0.0,
                  (iterations == 0 ? 1e-4 : 1e-3) * length)
          << BipedLimbName(limb) << " iterations " << iterations;
      // ...on the goal's side of the limb's axis.
      const Eigen::Vector3d axis = (c - a).normalized();
      Eigen::Vector3d knee = b - a;
      knee -= axis * axis.dot(knee);
      Eigen::Vector3d goal = goals[l] - a;
      goal -= axis * axis.dot(goal);
      EXPECT_GT(knee.normalized().dot(goal.normalized()), 0.99)
          << BipedLimbName(limb) << " iterations " << iterations;
    }
  }
}

TEST_F(WalkTest, FullBodyBiped_IterationsZeroSolvesLimbsAlone) {
  const Rig& rig = *rig_;
  const Skeleton& s = rig.asset.skeleton;
  const std::vector<Transform> in = Frame(rig, 0, 2.2f);
  const std::vector<Eigen::Matrix4d> mi = Fk(s, in);
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<Transform> out;
  FullBodyBipedIkJob job = MakeJob(rig, in, out);
  job.iterations = 0;
  std::array<Eigen::Vector3d, kNumBipedLimbs> targets;
  for (int l = 0; l < kNumBipedLimbs; ++l) {
    const BipedLimb limb = static_cast<BipedLimb>(l);
    Eigen::Vector3d d(u(rng), u(rng), u(rng));
    targets[l] = LimbPos(rig, mi, limb, 0) +
                 d.normalized() * 0.7 * LimbLength(rig, mi, limb);
    job.effector(EndEffector(limb)).position = targets[l].cast<float>();
    job.effector(EndEffector(limb)).position_weight = 1.0f;
  }
  ASSERT_TRUE(job.Run().ok());
  const std::vector<Eigen::Matrix4d> mo = Fk(s, out);
  for (int l = 0; l < kNumBipedLimbs; ++l) {
    const BipedLimb limb = static_cast<BipedLimb>(l);
    EXPECT_LE((LimbPos(rig, mo, limb, 2) - targets[l]).norm(),
              1e-4 * LimbLength(rig, mi, limb))
        << BipedLimbName(limb);
  }
  // The body is not solved: the pelvis and spine are the input's.
  for (int j : rig.mapping.spine_bones()) {
    EXPECT_TRUE(BitEqual(out[j], in[j])) << s.joint_name(j);
  }
}

TEST_F(WalkTest, FullBodyBiped_EffectorRotationAndFootRotationAreKept) {
  const Rig& rig = *rig_;
  const Skeleton& s = rig.asset.skeleton;
  const std::vector<Transform> in = Frame(rig, 0, 2.7f);
  const std::vector<Eigen::Matrix4d> mi = Fk(s, in);
  std::vector<Transform> out;
  FullBodyBipedIkJob job = MakeJob(rig, in, out);
  const Eigen::Quaterniond hand_rotation(
      Eigen::AngleAxisd(0.7, Eigen::Vector3d(1, 2, 3).normalized()));
  BipedEffector& hand = job.effector(BipedEffectorId::kRightHand);
  hand.position = (LimbPos(rig, mi, BipedLimb::kRightArm, 2) +
                   Eigen::Vector3d(0.5, 1.0, 0.5))
                      .cast<float>();
  hand.position_weight = 1.0f;
  hand.rotation = hand_rotation.cast<float>();
  hand.rotation_weight = 1.0f;
  // Move a foot; the legs' maintain_rotation_weight (FinalIK default 1)
  // keeps its model rotation.
  BipedEffector& foot = job.effector(BipedEffectorId::kLeftFoot);
  foot.position =
      (LimbPos(rig, mi, BipedLimb::kLeftLeg, 2) + Eigen::Vector3d(0, 1.0, 0.8))
          .cast<float>();
  foot.position_weight = 1.0f;
  ASSERT_TRUE(job.Run().ok());
  const std::vector<Eigen::Matrix4d> mo = Fk(s, out);
  const int hand_joint = rig.mapping.limb(BipedLimb::kRightArm).end;
  const int foot_joint = rig.mapping.limb(BipedLimb::kLeftLeg).end;
  EXPECT_LT(Rot(mo[hand_joint]).angularDistance(hand_rotation), 1e-4);
  EXPECT_LT(Rot(mo[foot_joint]).angularDistance(Rot(mi[foot_joint])), 1e-4);
  EXPECT_LE(
      (LimbPos(rig, mo, BipedLimb::kLeftLeg, 2) - foot.position.cast<double>())
          .norm(),
      1e-3 * LimbLength(rig, mi, BipedLimb::kLeftLeg));
}

// Forward of the character in `m`: the left foot's ankle-to-toe direction,
// flattened against the hips-to-neck axis.
Eigen::Vector3d Forward(const Skeleton& s,
                        const std::vector<Eigen::Matrix4d>& m) {
  const Eigen::Vector3d up =
      (Pos(m[s.FindJoint("Neck")]) - Pos(m[s.FindJoint("Hips")])).normalized();
  Eigen::Vector3d toe =
      Pos(m[s.FindJoint("LeftToe")]) - Pos(m[s.FindJoint("LeftAnkle")]);
  return (toe - up * up.dot(toe)).normalized();
}

TEST_F(WalkTest, FullBodyBiped_InvertedKneeIsBentBackTheRightWay) {
  // LimitBend: a knee bent backward in the input (its flexion reversed) is
  // clamped back toward the set-up bend before solving, so the solved knee
  // points forward.
  const Rig& rig = *rig_;
  const Skeleton& s = rig.asset.skeleton;
  const std::vector<Transform> frame = Frame(rig, 0, 2.0f);
  const Eigen::Vector3d forward = Forward(s, Fk(s, frame));
  auto knee_forward = [&](const std::vector<Eigen::Matrix4d>& m) {
    const Eigen::Vector3d a = LimbPos(rig, m, BipedLimb::kLeftLeg, 0);
    const Eigen::Vector3d c = LimbPos(rig, m, BipedLimb::kLeftLeg, 2);
    const Eigen::Vector3d axis = (c - a).normalized();
    Eigen::Vector3d k = LimbPos(rig, m, BipedLimb::kLeftLeg, 1) - a;
    k -= axis * axis.dot(k);
    return k.dot(forward);
  };
  // Bend the knee 35 degrees about its local x axis (CMU's hinge), the
  // wrong way.
  const int knee = rig.mapping.limb(BipedLimb::kLeftLeg).lower;
  std::vector<Transform> in = frame;
  for (double angle : {0.6, -0.6}) {
    in[knee].rotation =
        frame[knee].rotation *
        Eigen::Quaternionf(Eigen::AngleAxisf(angle, Eigen::Vector3f::UnitX()));
    if (knee_forward(Fk(s, in)) < 0.0) break;
  }
  const std::vector<Eigen::Matrix4d> mi = Fk(s, in);
  ASSERT_LT(knee_forward(mi), -0.1 * LimbLength(rig, mi, BipedLimb::kLeftLeg))
      << "the input knee should point back";
  // The foot pulled up a little toward the hip, so the leg must bend.
  const Eigen::Vector3d hip = LimbPos(rig, mi, BipedLimb::kLeftLeg, 0);
  const Eigen::Vector3d foot = LimbPos(rig, mi, BipedLimb::kLeftLeg, 2);
  const Eigen::Vector3d target =
      hip + (foot - hip) * 0.8 * LimbLength(rig, mi, BipedLimb::kLeftLeg) /
                (foot - hip).norm();
  std::vector<Transform> out;
  FullBodyBipedIkJob job = MakeJob(rig, in, out);
  job.effector(BipedEffectorId::kLeftFoot).position = target.cast<float>();
  job.effector(BipedEffectorId::kLeftFoot).position_weight = 1.0f;
  ASSERT_TRUE(job.Run().ok());
  const std::vector<Eigen::Matrix4d> mo = Fk(s, out);
  EXPECT_GT(knee_forward(mo), 0.1 * LimbLength(rig, mi, BipedLimb::kLeftLeg));
  EXPECT_LE((LimbPos(rig, mo, BipedLimb::kLeftLeg, 2) - target).norm(),
            1e-3 * LimbLength(rig, mi, BipedLimb::kLeftLeg));
}

TEST_F(WalkTest, FullBodyBiped_MaintainRelativePositionCarriesTheHand) {
  // A hand with position weight 0 stays where the animation put it in model
  // space, unless maintain_relative_position_weight lets the torso carry it.
  const Rig& rig = *rig_;
  const Skeleton& s = rig.asset.skeleton;
  const std::vector<Transform> in = Frame(rig, 0, 2.4f);
  const std::vector<Eigen::Matrix4d> mi = Fk(s, in);
  const int root = rig.mapping.references().root_node;
  const Eigen::Vector3d shift(2.0, -1.0, 1.5);
  const Eigen::Vector3d hand = LimbPos(rig, mi, BipedLimb::kLeftArm, 2);
  for (float maintain : {0.0f, 1.0f}) {
    std::vector<Transform> out;
    FullBodyBipedIkJob job = MakeJob(rig, in, out);
    job.effector(BipedEffectorId::kBody).position =
        (Pos(mi[root]) + shift).cast<float>();
    job.effector(BipedEffectorId::kBody).position_weight = 1.0f;
    job.effector(BipedEffectorId::kLeftHand).maintain_relative_position_weight =
        maintain;
    ASSERT_TRUE(job.Run().ok());
    const std::vector<Eigen::Matrix4d> mo = Fk(s, out);
    const Eigen::Vector3d moved =
        LimbPos(rig, mo, BipedLimb::kLeftArm, 2) - hand;
    const Eigen::Vector3d body = Pos(mo[root]) - Pos(mi[root]);
    if (maintain == 0.0f) {
      EXPECT_LT(moved.norm(), 1e-3 * shift.norm());
    } else {
      // Carried along with the chest: most of the body's displacement.
      EXPECT_GT(moved.dot(body.normalized()), 0.7 * body.norm());
    }
  }
}

TEST_F(WalkTest, FullBodyBiped_BodyEffectorMovesTheBody) {
  const Rig& rig = *rig_;
  const Skeleton& s = rig.asset.skeleton;
  const std::vector<Transform> in = Frame(rig, 0, 1.0f);
  const std::vector<Eigen::Matrix4d> mi = Fk(s, in);
  const int root = rig.mapping.references().root_node;
  const Eigen::Vector3d target =
      Pos(mi[root]) + Eigen::Vector3d(1.5, -1.0, 2.0);
  std::vector<Transform> out;
  FullBodyBipedIkJob job = MakeJob(rig, in, out);
  job.effector(BipedEffectorId::kBody).position = target.cast<float>();
  job.effector(BipedEffectorId::kBody).position_weight = 1.0f;
  ASSERT_TRUE(job.Run().ok());
  const std::vector<Eigen::Matrix4d> mo = Fk(s, out);
  EXPECT_LT((Pos(mo[root]) - target).norm(),
            0.2 * (Pos(mi[root]) - target).norm());
  ExpectBoneLengthsKept(rig, in, out, "body");
}

TEST_F(WalkTest, FullBodyBiped_ResultCarriesTheSetupWarnings) {
  const Rig& rig = *rig_;
  const std::vector<Transform> in = Frame(rig, 0, 1.0f);
  std::vector<Transform> out;
  FullBodyBipedIkJob job = MakeJob(rig, in, out);
  job.effector(BipedEffectorId::kLeftHand).position_weight = 0.5f;
  job.effector(BipedEffectorId::kLeftHand).position =
      Eigen::Vector3f(1.0f, 2.0f, 3.0f);
  FullBodyBipedIkResult result;
  job.result = &result;
  ASSERT_TRUE(job.Run().ok());
  EXPECT_THAT(result.warnings,
              Contains("left_arm straight at set-up: bend direction "
                       "defaulted (elbow backward)"));
  EXPECT_TRUE(result.effectors[5].active);
  EXPECT_FALSE(result.effectors[6].active);
  // The goal (half way to a point far off) stays out of reach: the
  // iterations run to the default cap.
  EXPECT_EQ(result.iterations, kDefaultFullBodyBipedIterations);
}

// converge = false runs exactly `iterations` (FinalIK's fixed count) with
// no closing step; at defaults a goal the body must travel to is met.
TEST_F(WalkTest, FullBodyBiped_ConvergeFalseRunsTheCountAndDefaultsClose) {
  const Rig& rig = *rig_;
  const Skeleton& s = rig.asset.skeleton;
  const std::vector<Transform> in = Frame(rig, 0, 1.0f);
  // The walk 0.5 s later, not moved back: a step ahead.
  const std::vector<Eigen::Matrix4d> later = Fk(s, Frame(rig, 0, 1.5f));
  for (bool converge : {false, true}) {
    std::vector<Transform> out;
    FullBodyBipedIkJob job = MakeJob(rig, in, out);
    AimHandsAndFeet(rig, later, job);
    job.converge = converge;
    if (!converge) job.iterations = kFinalIkFullBodyBipedIterations;
    FullBodyBipedIkResult result;
    job.result = &result;
    ASSERT_TRUE(job.Run().ok());
    if (!converge) {
      EXPECT_EQ(result.iterations, kFinalIkFullBodyBipedIterations);
      EXPECT_EQ(result.closing_translation, 0.0f);
      continue;
    }
    EXPECT_TRUE(result.reached) << result.max_error;
    const std::vector<Eigen::Matrix4d> m = Fk(s, out);
    for (int l = 0; l < kNumBipedLimbs; ++l) {
      const BipedLimb limb = static_cast<BipedLimb>(l);
      EXPECT_LE(
          (LimbPos(rig, m, limb, 2) - LimbPos(rig, later, limb, 2)).norm(),
          1e-4 * LimbLength(rig, m, limb))
          << BipedLimbName(limb);
    }
    ExpectBoneLengthsKept(rig, in, out, "converge");
  }
}

// ---------------------------------------------------------------------------
// Robustness and determinism.

TEST_F(WalkTest, FullBodyBiped_RandomTargetsNeverBreakThePose) {
  const Rig& rig = *rig_;
  const Skeleton& s = rig.asset.skeleton;
  std::mt19937 rng(12345);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int> pick(0, 9);
  const std::vector<Transform> base = Frame(rig, 0, 2.0f);
  const std::vector<Eigen::Matrix4d> mb = Fk(s, base);
  const Eigen::Vector3f center =
      Pos(mb[rig.mapping.references().root_node]).cast<float>();
  constexpr float kScale = 40.0f;  // about the figure's height
  std::vector<Transform> out;
  for (int trial = 0; trial < 10000; ++trial) {
    const std::vector<Transform>& in = base;
    FullBodyBipedIkJob job = MakeJob(rig, in, out);
    job.iterations = trial % 6;
    job.ik_position_weight = trial % 7 == 0 ? 0.5f : 1.0f;
    for (int e = 0; e < kNumBipedEffectors; ++e) {
      BipedEffector& eff = job.effectors[e];
      switch (pick(rng)) {
        case 0:  // on the body's centre
          eff.position = center;
          break;
        case 1:  // everything on one point
          eff.position = Eigen::Vector3f(3.0f, 4.0f, 5.0f);
          break;
        case 2:  // far away
          eff.position = Eigen::Vector3f(u(rng), u(rng), u(rng)) * 1e6f;
          break;
        case 3:  // on its own joint
          eff.position =
              Pos(mb[rig.mapping.references().root_node]).cast<float>();
          break;
        default:
          eff.position =
              center + Eigen::Vector3f(u(rng), u(rng), u(rng)) * kScale;
      }
      eff.position_weight =
          pick(rng) < 3 ? 0.0f : (pick(rng) < 5 ? 1.0f : 0.5f);
      eff.rotation = Eigen::Quaternionf(u(rng), u(rng), u(rng), u(rng) + 0.01f)
                         .normalized();
      eff.rotation_weight = pick(rng) < 5 ? 0.0f : 1.0f;
      if (pick(rng) == 0) {
        eff.position_offset = Eigen::Vector3f(u(rng), u(rng), u(rng)) * kScale;
      }
      eff.maintain_relative_position_weight = pick(rng) < 7 ? 0.0f : 1.0f;
    }
    for (BipedLimbSettings& l : job.limbs) {
      if (pick(rng) < 3) {
        l.bend_goal = center + Eigen::Vector3f(u(rng), u(rng), u(rng)) * kScale;
        l.bend_goal_weight = pick(rng) < 5 ? 1.0f : 0.5f;
      }
      l.push = pick(rng) < 2 ? 1.0f : 0.0f;
      l.push_parent = pick(rng) < 2 ? -0.5f : 0.5f;
    }
    ASSERT_TRUE(job.Run().ok()) << trial;
    ExpectBoneLengthsKept(rig, in, out, absl::StrCat("trial ", trial));
    if (::testing::Test::HasFailure()) break;
  }
}

TEST_F(WalkTest, FullBodyBiped_RerunsAreBitIdenticalAndInPlaceMatches) {
  const Rig& rig = *rig_;
  const std::vector<Transform> in = Frame(rig, 0, 3.3f);
  const std::vector<Eigen::Matrix4d> target =
      Reposed(rig, in, Frame(rig, 0, 3.9f));
  auto run = [&](std::vector<Transform>* out, bool in_place) {
    std::vector<Transform> copy = in;
    FullBodyBipedIkJob job = MakeJob(rig, in, *out);
    if (in_place) {
      job.input = copy;
      job.output = absl::MakeSpan(copy);
    }
    for (int l = 0; l < kNumBipedLimbs; ++l) {
      const BipedLimb limb = static_cast<BipedLimb>(l);
      job.effector(EndEffector(limb)).position =
          LimbPos(rig, target, limb, 2).cast<float>();
      job.effector(EndEffector(limb)).position_weight = 1.0f;
    }
    job.effector(BipedEffectorId::kBody).position_weight = 0.3f;
    job.effector(BipedEffectorId::kBody).position =
        Pos(target[rig.mapping.references().root_node]).cast<float>();
    ASSERT_TRUE(job.Run().ok());
    if (in_place) *out = copy;
  };
  std::vector<Transform> a, b, c;
  run(&a, false);
  run(&b, false);
  run(&c, true);
  EXPECT_TRUE(BitEqual(a, b));
  EXPECT_TRUE(BitEqual(a, c));
  EXPECT_FALSE(BitEqual(a, in));
}

TEST(FullBodyBipedRobotTest, FullBodyBiped_EndPointFootRotationIsReported) {
  const Rig rig = LoadRig("RobotExpressive.glb");
  const std::vector<Transform> in = Frame(rig, 10, 0.3f);
  std::vector<Transform> out;
  FullBodyBipedIkJob job = MakeJob(rig, in, out);
  job.effector(BipedEffectorId::kLeftFoot).rotation_weight = 1.0f;
  FullBodyBipedIkResult result;
  job.result = &result;
  ASSERT_TRUE(job.Run().ok());
  EXPECT_THAT(result.warnings,
              Contains(HasSubstr("left_leg: the end is a point, not a joint")));
}

// ---------------------------------------------------------------------------
// Validation.

TEST_F(WalkTest, FullBodyBiped_InvalidInputNamesTheEffectorAndField) {
  const Rig& rig = *rig_;
  const std::vector<Transform> in = Frame(rig, 0, 1.0f);
  std::vector<Transform> out;
  auto expect_error = [&](auto mutate, const std::string& text) {
    FullBodyBipedIkJob job = MakeJob(rig, in, out);
    mutate(job);
    const absl::Status s = job.Run();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(s.message(), HasSubstr(text));
  };
  const float nan = std::nanf("");
  const float inf = std::numeric_limits<float>::infinity();
  expect_error(
      [&](FullBodyBipedIkJob& j) {
        j.effector(BipedEffectorId::kLeftHand).position.y() = nan;
      },
      "full_body_biped_ik.effectors[left_hand].position: NaN");
  expect_error(
      [&](FullBodyBipedIkJob& j) {
        j.effector(BipedEffectorId::kBody).position_weight = inf;
      },
      "effectors[body].position_weight");
  expect_error(
      [&](FullBodyBipedIkJob& j) {
        j.effector(BipedEffectorId::kRightFoot).rotation.coeffs() *= 2.0f;
      },
      "effectors[right_foot].rotation");
  expect_error(
      [&](FullBodyBipedIkJob& j) {
        j.effector(BipedEffectorId::kLeftThigh).position_offset.x() = inf;
      },
      "effectors[left_thigh].position_offset");
  expect_error(
      [&](FullBodyBipedIkJob& j) {
        j.effector(BipedEffectorId::kRightHand).position.x() = 1e12f;
      },
      "effectors[right_hand].position: component beyond");
  expect_error(
      [&](FullBodyBipedIkJob& j) {
        j.limb(BipedLimb::kRightLeg).bend_goal.z() = nan;
      },
      "limbs[right_leg].bend_goal");
  expect_error(
      [&](FullBodyBipedIkJob& j) { j.limb(BipedLimb::kLeftArm).pull = nan; },
      "limbs[left_arm].pull");
  expect_error([&](FullBodyBipedIkJob& j) { j.ik_position_weight = nan; },
               "ik_position_weight");
  expect_error(
      [&](FullBodyBipedIkJob& j) {
        j.iterations = kMaxFullBodyBipedIterations + 1;
      },
      "iterations: 65 is outside [0, 64]");
  expect_error([&](FullBodyBipedIkJob& j) { j.spine_iterations = 0; },
               "spine_iterations");
  expect_error([&](FullBodyBipedIkJob& j) { j.mapping = nullptr; },
               "mapping: null");
  expect_error(
      [&](FullBodyBipedIkJob& j) { j.output = absl::MakeSpan(out).subspan(1); },
      "output");
  std::vector<Transform> bad = in;
  bad[3].rotation.coeffs() << nan, 0, 0, 1;
  expect_error([&](FullBodyBipedIkJob& j) { j.input = bad; }, "input");
  // A mapping built for another skeleton.
  const Rig daz = LoadRig("cmu_02_03_run_daz.bvh");
  expect_error([&](FullBodyBipedIkJob& j) { j.mapping = &daz.mapping; },
               "built for a skeleton of 43 joints");
}

}  // namespace full_body_biped_ik_test
}  // namespace posewire
