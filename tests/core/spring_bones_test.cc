// Spring-bone dynamics. Every property is checked against
// an expectation computed here, independently of the solver: forward
// kinematics with Eigen::Affine3f, point-to-shape distances written out per
// shape, the physics of a hanging chain, a reference run without the event
// under test.
#include "solver_core/dynamics/spring_bones.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "solver_core/dynamics/dynamics_state.h"
// Internal: LaneQueriesMatchOnePointQueriesBitForBit tests the lane kernels
// the solver is built on, which no caller of the library sees.
#include "solver_core/dynamics/internal/spring_collider_lanes.h"
#include "solver_core/dynamics/spring_colliders.h"
#include "solver_core/io/bvh_reader.h"
#include "solver_core/model/clip.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/simd_level.h"
#include "solver_core/model/skeleton.h"
#include "tests/core/hanging_chain.h"

namespace posewire {
namespace spring_bones_test {

using ::testing::HasSubstr;

constexpr float kPi = 3.14159265358979323846f;

// ---------------------------------------------------------------------------
// Independent helpers.

// Joint positions by forward kinematics with Eigen affine matrices (not the
// solver's TRS composition).
std::vector<Eigen::Vector3f> FkPositions(
    const Skeleton& skeleton, absl::Span<const Transform> local,
    const Transform& root = Transform::Identity()) {
  const int n = skeleton.num_joints();
  std::vector<Eigen::Affine3f> model(n);
  const Eigen::Affine3f root_m = Eigen::Translation3f(root.translation) *
                                 root.rotation * Eigen::Scaling(root.scale);
  std::vector<Eigen::Vector3f> out(n);
  for (int j = 0; j < n; ++j) {
    const Eigen::Affine3f l = Eigen::Translation3f(local[j].translation) *
                              local[j].rotation *
                              Eigen::Scaling(local[j].scale);
    const int p = skeleton.parent(j);
    model[j] = (p < 0 ? root_m : model[p]) * l;
    out[j] = model[j].translation();
  }
  return out;
}

// Model-space rotation of every joint, by quaternion products.
std::vector<Eigen::Quaternionf> FkRotations(const Skeleton& skeleton,
                                            absl::Span<const Transform> local) {
  std::vector<Eigen::Quaternionf> out(skeleton.num_joints());
  for (int j = 0; j < skeleton.num_joints(); ++j) {
    const int p = skeleton.parent(j);
    out[j] = p < 0 ? local[j].rotation : out[p] * local[j].rotation;
  }
  return out;
}

float AngleBetween(const Eigen::Vector3f& a, const Eigen::Vector3f& b) {
  return std::atan2(a.cross(b).norm(), a.dot(b));
}

float RotationAngle(const Eigen::Quaternionf& a, const Eigen::Quaternionf& b) {
  const Eigen::Quaternionf d = a.conjugate() * b;
  return 2.0f * std::atan2(d.vec().norm(), std::fabs(d.w()));
}

// A chain "tail0".."tail<bones>" under "root": tail0 at the origin, each
// next joint `length` further along `direction`.
Skeleton MakeChain(int bones, float length,
                   const Eigen::Vector3f& direction = Eigen::Vector3f::UnitX(),
                   bool with_accessory = false) {
  SkeletonDesc d;
  d.joint_names.push_back("root");
  d.parents.push_back(kNoParent);
  d.rest_pose.push_back(Transform::Identity());
  for (int b = 0; b <= bones; ++b) {
    d.joint_names.push_back(absl::StrCat("tail", b));
    d.parents.push_back(b);  // tail0 -> root (0), tail b -> tail b-1 (b)
    Transform t;
    if (b > 0) t.translation = direction * length;
    d.rest_pose.push_back(t);
  }
  if (with_accessory) {
    // A two-joint accessory hanging off tail2, to be excluded.
    const int tail2 = 3;
    d.joint_names.push_back("acc0");
    d.parents.push_back(tail2);
    Transform a;
    a.translation = Eigen::Vector3f(0, 0, 3);
    d.rest_pose.push_back(a);
    d.joint_names.push_back("acc1");
    d.parents.push_back(static_cast<int>(d.parents.size()) - 1);
    d.rest_pose.push_back(a);
  }
  auto skeleton = Skeleton::Create(std::move(d));
  EXPECT_TRUE(skeleton.ok()) << skeleton.status();
  return *std::move(skeleton);
}

SpringRigDesc ChainDesc() {
  SpringRigDesc d;
  d.root_joints = {"tail0"};
  return d;
}

SpringRig MakeRig(const Skeleton& skeleton, SpringRigDesc desc) {
  auto rig = SpringRig::Create(skeleton, std::move(desc));
  EXPECT_TRUE(rig.ok()) << rig.status();
  return *std::move(rig);
}

// Drives one rig frame by frame.
struct Sim {
  const Skeleton* skeleton;
  SpringRig rig;
  DynamicsState state;
  SpringBonesScratch scratch;
  LocalPose output;
  SpringForces forces;
  std::vector<SpringCollider> colliders;
  SpringBonesResult report;

  Sim(const Skeleton& s, SpringRigDesc desc)
      : skeleton(&s),
        rig(MakeRig(s, std::move(desc))),
        output(s.num_joints()) {}

  absl::Status Frame(absl::Span<const Transform> input, float dt,
                     const Transform& component = Transform::Identity()) {
    SpringBonesJob job;
    job.skeleton = skeleton;
    job.rig = &rig;
    job.input = input;
    job.component_to_world = component;
    job.dt = dt;
    job.forces = forces;
    job.colliders = colliders;
    job.state_in = &state;
    job.scratch = &scratch;
    job.output = absl::MakeSpan(output);
    job.state_out = &state;
    job.result = &report;
    return job.Run();
  }
};

Eigen::Vector3f Gravity() { return Eigen::Vector3f(0, -980, 0); }

// ---------------------------------------------------------------------------
// Rest, gravity, limits, stiffness.

TEST(SpringBones, AtRestWithoutForcesKeepsThePose) {
  const Skeleton skeleton = MakeChain(5, 10.0f);
  const LocalPose input = RestPose(skeleton);
  for (SimulationSpace space :
       {SimulationSpace::kComponent, SimulationSpace::kWorld}) {
    SpringRigDesc desc = ChainDesc();
    desc.space = space;
    desc.dummy_tip_length = 5.0f;
    Sim sim(skeleton, desc);
    Transform component;
    component.translation = Eigen::Vector3f(3, 4, 5);
    component.rotation =
        Eigen::Quaternionf(Eigen::AngleAxisf(0.7f, Eigen::Vector3f::UnitY()));
    const auto expected = FkPositions(skeleton, input);
    for (int frame = 0; frame < 300; ++frame) {
      ASSERT_TRUE(sim.Frame(input, 1.0f / 60.0f, component).ok());
      const auto got = FkPositions(skeleton, sim.output);
      for (int j = 0; j < skeleton.num_joints(); ++j) {
        ASSERT_LT((got[j] - expected[j]).norm(), 1e-4f)
            << SimulationSpaceName(space) << " frame " << frame << " joint "
            << j;
        ASSERT_LT(RotationAngle(sim.output[j].rotation, input[j].rotation),
                  1e-5f);
      }
    }
  }
}

TEST(SpringBones, GravitySettlesAChainStraightDownWithLengthsPreserved) {
  // A horizontal chain with no stiffness must end up hanging straight down
  // (the only equilibrium of a pinned pendulum chain), bones at their
  // animated lengths.
  const float length = 10.0f;
  const Skeleton skeleton = MakeChain(6, length);
  const LocalPose input = RestPose(skeleton);
  SpringRigDesc desc = ChainDesc();
  desc.settings.stiffness = 0.0f;
  Sim sim(skeleton, desc);
  sim.forces.gravity = Gravity();
  std::vector<Eigen::Vector3f> previous;
  for (int frame = 0; frame < 900; ++frame) {
    ASSERT_TRUE(sim.Frame(input, 1.0f / 60.0f).ok());
    const auto p = FkPositions(skeleton, sim.output);
    for (int j = 2; j < skeleton.num_joints(); ++j) {
      ASSERT_NEAR((p[j] - p[j - 1]).norm(), length, 1e-5f * length)
          << "frame " << frame << " joint " << j;
    }
    previous = p;
  }
  const auto p = FkPositions(skeleton, sim.output);
  for (int j = 2; j < skeleton.num_joints(); ++j) {
    const Eigen::Vector3f bone = (p[j] - p[j - 1]).normalized();
    EXPECT_GT(-bone.y(), 0.999f)
        << "joint " << j << " bone " << bone.transpose();
  }
  // Settled: the last frame hardly moved.
  ASSERT_TRUE(sim.Frame(input, 1.0f / 60.0f).ok());
  const auto after = FkPositions(skeleton, sim.output);
  EXPECT_LT((after.back() - p.back()).norm(), 1e-3f);
}

TEST(SpringBones, AngleLimitHoldsUnderGravity) {
  const float limit_degrees = 30.0f;
  const Skeleton skeleton = MakeChain(5, 10.0f);
  const LocalPose input = RestPose(skeleton);
  const auto pose = FkPositions(skeleton, input);
  SpringRigDesc desc = ChainDesc();
  desc.settings.stiffness = 0.0f;
  desc.settings.limit_angle_degrees = limit_degrees;
  Sim sim(skeleton, desc);
  sim.forces.gravity = Gravity();
  float largest = 0.0f;
  for (int frame = 0; frame < 300; ++frame) {
    ASSERT_TRUE(sim.Frame(input, 1.0f / 60.0f).ok());
    const auto p = FkPositions(skeleton, sim.output);
    for (int j = 2; j < skeleton.num_joints(); ++j) {
      const float angle =
          AngleBetween(p[j] - p[j - 1], pose[j] - pose[j - 1]) * 180.0f / kPi;
      ASSERT_LE(angle, limit_degrees + 1e-3f) << "frame " << frame;
      ASSERT_NEAR((p[j] - p[j - 1]).norm(), 10.0f, 1e-4f);
      largest = std::max(largest, angle);
    }
  }
  // Gravity pulls every bone far beyond 30 degrees: the limit is what stops
  // it, so some bone sits on it.
  EXPECT_GT(largest, limit_degrees - 0.01f);
}

// A bone turned exactly away from its animated direction has no plane to
// turn back in: the limit picks one, and the bone must still end on the
// cone's edge at its animated length.
TEST(SpringBones, BoneTurnedExactlyAwayLandsOnTheConeEdge) {
  const float limit_degrees = 45.0f;
  const Skeleton skeleton = MakeChain(4, 10.0f);
  const LocalPose input = RestPose(skeleton);
  SpringRigDesc desc = ChainDesc();
  desc.settings.limit_angle_degrees = limit_degrees;
  Sim sim(skeleton, desc);
  ASSERT_TRUE(sim.Frame(input, 1.0f / 60.0f).ok());
  // Fold the whole chain back along -x: every bone points exactly away from
  // the animation (+x), at rest.
  for (size_t i = 1; i < sim.state.positions.size(); ++i) {
    sim.state.positions[i] =
        Eigen::Vector3f(-10.0f * static_cast<float>(i), 0.0f, 0.0f);
  }
  sim.state.previous_positions = sim.state.positions;
  ASSERT_TRUE(sim.Frame(input, 1.0f / 60.0f).ok());
  const auto p = FkPositions(skeleton, sim.output);
  for (int j = 2; j < skeleton.num_joints(); ++j) {
    const Eigen::Vector3f bone = p[j] - p[j - 1];
    ASSERT_TRUE(bone.allFinite()) << "joint " << j;
    EXPECT_NEAR(AngleBetween(bone, Eigen::Vector3f::UnitX()) * 180.0f / kPi,
                limit_degrees, 1e-3f)
        << "joint " << j;
    EXPECT_NEAR(bone.norm(), 10.0f, 1e-4f) << "joint " << j;
  }
}

TEST(SpringBones, StiffnessOneFollowsTheAnimation) {
  const Skeleton skeleton = MakeChain(5, 10.0f);
  for (SimulationSpace space :
       {SimulationSpace::kComponent, SimulationSpace::kWorld}) {
    SpringRigDesc desc = ChainDesc();
    desc.space = space;
    desc.settings.stiffness = 1.0f;
    Sim sim(skeleton, desc);
    sim.forces.gravity = Gravity();
    sim.forces.wind.speed = 50.0f;
    for (float fps : {60.0f, 30.0f}) {
      for (int frame = 0; frame < 120; ++frame) {
        const float t = static_cast<float>(frame) / fps;
        LocalPose input = RestPose(skeleton);
        // Swing the chain root and bend the chain, move the component.
        input[1].rotation =
            Eigen::AngleAxisf(0.8f * std::sin(3 * t), Eigen::Vector3f::UnitZ());
        input[3].rotation =
            Eigen::AngleAxisf(0.5f * std::cos(2 * t), Eigen::Vector3f::UnitY());
        Transform component;
        component.translation = Eigen::Vector3f(40 * std::sin(t), 0, 5 * t);
        ASSERT_TRUE(sim.Frame(input, 1.0f / fps, component).ok());
        const auto want = FkPositions(skeleton, input);
        const auto got = FkPositions(skeleton, sim.output);
        for (int j = 0; j < skeleton.num_joints(); ++j) {
          ASSERT_LT((got[j] - want[j]).norm(), 1e-4f)
              << SimulationSpaceName(space) << " " << fps << " fps frame "
              << frame << " joint " << j;
        }
      }
    }
  }
}

TEST(SpringBones, DefaultStiffnessLetsTheChainLagBehindMotion) {
  // The converse of the test above: with KawaiiPhysics' defaults, moving
  // the component must make the chain deviate from the animation (else the
  // solver would be a no-op and the other tests vacuous).
  const Skeleton skeleton = MakeChain(5, 10.0f);
  const LocalPose input = RestPose(skeleton);
  Sim sim(skeleton, ChainDesc());
  const auto want = FkPositions(skeleton, input);
  float deviation = 0.0f;
  for (int frame = 0; frame < 60; ++frame) {
    Transform component;
    component.translation = Eigen::Vector3f(0, 0, 100.0f * frame / 60.0f);
    ASSERT_TRUE(sim.Frame(input, 1.0f / 60.0f, component).ok());
    const auto got = FkPositions(skeleton, sim.output);
    deviation = std::max(deviation, (got.back() - want.back()).norm());
  }
  EXPECT_GT(deviation, 1.0f);
}

// ---------------------------------------------------------------------------
// Colliders.

// Signed distance from p to each shape's surface, written out per shape.
float SphereDistance(const Eigen::Vector3f& p, const Eigen::Vector3f& c,
                     float r) {
  return (p - c).norm() - r;
}

float CapsuleDistance(const Eigen::Vector3f& p, const Eigen::Vector3f& a,
                      const Eigen::Vector3f& b, float r) {
  const Eigen::Vector3f ab = b - a;
  const float t = std::clamp((p - a).dot(ab) / ab.squaredNorm(), 0.0f, 1.0f);
  return (p - (a + t * ab)).norm() - r;
}

float BoxDistance(const Eigen::Vector3f& p, const Eigen::Vector3f& c,
                  const Eigen::Matrix3f& axes, const Eigen::Vector3f& half) {
  const Eigen::Vector3f local = axes.transpose() * (p - c);
  const Eigen::Vector3f q = local.cwiseAbs() - half;
  const float outside = q.cwiseMax(0.0f).norm();
  const float inside = std::min(q.maxCoeff(), 0.0f);
  return outside + inside;
}

struct ColliderCase {
  const char* name;
  SpringCollider collider;
  // Independent signed distance to the collider surface, component space.
  std::function<float(const Eigen::Vector3f&)> distance;
};

ColliderCase SphereCase(const Eigen::Vector3f& center, float radius) {
  SpringCollider c;
  c.shape = ColliderShape::kSphere;
  c.offset.translation = center;
  c.radius = radius;
  return {"sphere", c, [center, radius](const Eigen::Vector3f& p) {
            return SphereDistance(p, center, radius);
          }};
}

std::vector<ColliderCase> ColliderCases() {
  std::vector<ColliderCase> cases;
  cases.push_back(SphereCase({22, -14, 0}, 9.0f));
  {
    SpringCollider c;
    c.shape = ColliderShape::kCapsule;
    c.offset.translation = Eigen::Vector3f(20, -12, 0);
    c.axis = Eigen::Vector3f::UnitZ();
    c.radius = 5.0f;
    c.length = 40.0f;
    cases.push_back(
        {"capsule", c, [](const Eigen::Vector3f& p) {
           return CapsuleDistance(p, {20, -12, -20}, {20, -12, 20}, 5.0f);
         }});
  }
  {
    SpringCollider c;
    c.shape = ColliderShape::kBox;
    c.offset.translation = Eigen::Vector3f(25, -16, 0);
    c.offset.rotation = Eigen::AngleAxisf(0.35f, Eigen::Vector3f::UnitZ());
    c.half_extents = Eigen::Vector3f(12, 5, 10);
    const Eigen::Matrix3f axes = c.offset.rotation.toRotationMatrix();
    cases.push_back({"box", c, [axes](const Eigen::Vector3f& p) {
                       return BoxDistance(p, {25, -16, 0}, axes, {12, 5, 10});
                     }});
  }
  {
    SpringCollider c;
    c.shape = ColliderShape::kPlane;
    c.offset.translation = Eigen::Vector3f(0, -25, 0);
    c.axis = Eigen::Vector3f::UnitY();
    cases.push_back({"plane", c, [](const Eigen::Vector3f& p) {
                       return p.y() - (-25.0f);
                     }});
  }
  return cases;
}

TEST(SpringBones, NoColliderIsPenetratedAfterASolve) {
  // A horizontal chain of 5 x 10 falls onto each collider under gravity; the
  // sphere, capsule and box sit under its middle, the floor under its tip.
  const Skeleton skeleton = MakeChain(5, 10.0f);
  const LocalPose input = RestPose(skeleton);
  const float bone_radius = 1.5f;
  for (const ColliderCase& c : ColliderCases()) {
    SpringRigDesc desc = ChainDesc();
    desc.settings.stiffness = 0.0f;
    desc.settings.radius = bone_radius;
    Sim sim(skeleton, desc);
    sim.forces.gravity = Gravity();
    sim.colliders = {c.collider};
    float closest = 1e9f;
    for (int frame = 0; frame < 240; ++frame) {
      ASSERT_TRUE(sim.Frame(input, 1.0f / 60.0f).ok());
      const auto p = FkPositions(skeleton, sim.output);
      for (int j = 2; j < skeleton.num_joints(); ++j) {
        const float d = c.distance(p[j]);
        ASSERT_GE(d, bone_radius - 1e-3f)
            << c.name << " frame " << frame << " joint " << j << " at "
            << p[j].transpose();
        ASSERT_NEAR((p[j] - p[j - 1]).norm(), 10.0f, 1e-4f) << c.name;
        closest = std::min(closest, d);
      }
    }
    // The chain did come to rest against the collider.
    EXPECT_LT(closest, bone_radius + 0.05f) << c.name;
  }
}

// The animation points the bone into a collider and the angle limit keeps
// it from being pushed straight out: it must turn about its parent just far
// enough to come clear (within 1e-4 of its length of the surface), without
// leaving its cone. A sphere, a plane and a keep-inside sphere (left in
// closed form by the solver) and a box (left by the search).
TEST(SpringBones, BoneHeldByItsLimitTurnsJustClearOfTheCollider) {
  const Skeleton skeleton = MakeChain(1, 10.0f);  // tail0 -> tail1 along +x
  const LocalPose input = RestPose(skeleton);
  const float bone_radius = 0.5f;
  const float limit_degrees = 40.0f;
  std::vector<ColliderCase> cases;
  cases.push_back(SphereCase({10, -1.5f, 0}, 4.0f));
  {
    SpringCollider c;
    c.shape = ColliderShape::kPlane;
    c.offset.translation = Eigen::Vector3f(0, 3, 0);
    c.offset.rotation = Eigen::AngleAxisf(-0.2f, Eigen::Vector3f::UnitZ());
    c.axis = Eigen::Vector3f::UnitY();
    const Eigen::Vector3f normal = c.offset.rotation * Eigen::Vector3f::UnitY();
    cases.push_back({"plane", c, [normal](const Eigen::Vector3f& p) {
                       return normal.dot(p - Eigen::Vector3f(0, 3, 0));
                     }});
  }
  {
    // Kept inside: the animated tip lies outside; the bone turns back in.
    SpringCollider c;
    c.offset.translation = Eigen::Vector3f(-1, 5, 0);
    c.radius = 10.5f;
    c.keep_inside = true;
    cases.push_back({"keep-inside sphere", c, [](const Eigen::Vector3f& p) {
                       return 10.5f - (p - Eigen::Vector3f(-1, 5, 0)).norm();
                     }});
  }
  {
    SpringCollider c;
    c.shape = ColliderShape::kBox;
    c.offset.translation = Eigen::Vector3f(10, -2, 0);
    c.half_extents = Eigen::Vector3f(3, 3, 3);
    cases.push_back({"box", c, [](const Eigen::Vector3f& p) {
                       return BoxDistance(p, {10, -2, 0},
                                          Eigen::Matrix3f::Identity(),
                                          {3, 3, 3});
                     }});
  }
  for (const ColliderCase& c : cases) {
    SpringRigDesc desc = ChainDesc();
    desc.settings.stiffness = 1.0f;
    desc.settings.radius = bone_radius;
    desc.settings.limit_angle_degrees = limit_degrees;
    Sim sim(skeleton, desc);
    sim.colliders = {c.collider};
    for (int frame = 0; frame < 5; ++frame) {
      ASSERT_TRUE(sim.Frame(input, 1.0f / 60.0f).ok()) << c.name;
      const auto p = FkPositions(skeleton, sim.output);
      const Eigen::Vector3f bone = p[2] - p[1];
      EXPECT_NEAR(bone.norm(), 10.0f, 1e-4f) << c.name;
      EXPECT_LE(AngleBetween(bone, Eigen::Vector3f::UnitX()) * 180.0f / kPi,
                limit_degrees + 1e-3f)
          << c.name;
      const float gap = c.distance(p[2]) - bone_radius;
      EXPECT_GE(gap, -1e-4f) << c.name << " frame " << frame;
      EXPECT_LE(gap, 1e-4f * 10.0f) << c.name << " frame " << frame;
    }
  }
}

// In world space the simulated bones are the animated ones times the
// component's scale; the output rotations must stay finite unit
// quaternions at any scale (the output's arithmetic scales with it).
TEST(SpringBones, WorldSpaceOutputIsUnitAtExtremeComponentScales) {
  const Skeleton skeleton = MakeChain(5, 10.0f);
  const LocalPose input = RestPose(skeleton);
  for (const float scale : {1e-9f, 1e-3f, 100.0f, 1e10f}) {
    SpringRigDesc desc = ChainDesc();
    desc.space = SimulationSpace::kWorld;
    Sim sim(skeleton, desc);
    sim.forces.gravity = Gravity();
    int turned = 0;
    for (int frame = 0; frame < 30; ++frame) {
      Transform component;
      component.scale = Eigen::Vector3f::Constant(scale);
      component.translation = Eigen::Vector3f(frame * 3.0f * scale, 0, 0);
      component.rotation =
          Eigen::AngleAxisf(0.05f * frame, Eigen::Vector3f::UnitY());
      ASSERT_TRUE(sim.Frame(input, 1.0f / 60.0f, component).ok()) << scale;
      for (int j = 0; j < skeleton.num_joints(); ++j) {
        const Eigen::Quaternionf& q = sim.output[j].rotation;
        ASSERT_TRUE(q.coeffs().allFinite()) << scale << " joint " << j;
        EXPECT_NEAR(q.norm(), 1.0f, 1e-5f) << scale << " joint " << j;
        if (!q.coeffs().isApprox(input[j].rotation.coeffs(), 1e-4f)) {
          ++turned;
        }
      }
    }
    EXPECT_GT(turned, 0) << "nothing swung at scale " << scale;
  }
}

TEST(SpringBones, CollidersFollowTheWorldTheComponentAndTheBones) {
  // A floor fixed in the world under a moved, turned component; a sphere
  // following an animated joint. Distances are checked in the space each
  // collider lives in, placed here by hand.
  const Skeleton skeleton = MakeChain(5, 10.0f);
  Transform component;
  component.translation = Eigen::Vector3f(100, 7, 50);
  component.rotation = Eigen::AngleAxisf(kPi / 2, Eigen::Vector3f::UnitY());
  const float bone_radius = 1.0f;
  for (SimulationSpace space :
       {SimulationSpace::kComponent, SimulationSpace::kWorld}) {
    SpringRigDesc desc = ChainDesc();
    desc.space = space;
    desc.settings.stiffness = 0.0f;
    desc.settings.radius = bone_radius;
    Sim sim(skeleton, desc);
    sim.forces.gravity = Gravity();
    SpringCollider floor;
    floor.shape = ColliderShape::kPlane;
    floor.attachment = ColliderAttachment::kWorld;
    floor.offset.translation = Eigen::Vector3f(0, -10, 0);  // world y = -10
    floor.axis = Eigen::Vector3f::UnitY();
    SpringCollider ball;
    ball.shape = ColliderShape::kSphere;
    ball.attachment = ColliderAttachment::kBone;
    ball.bone = 0;  // "root", which the animation turns
    ball.offset.translation = Eigen::Vector3f(20, -8, 0);
    ball.radius = 4.0f;
    sim.colliders = {floor, ball};
    float floor_gap = 1e9f;
    for (int frame = 0; frame < 240; ++frame) {
      LocalPose input = RestPose(skeleton);
      const Eigen::Quaternionf turn(Eigen::AngleAxisf(
          0.3f * std::sin(frame / 20.0f), Eigen::Vector3f::UnitY()));
      input[0].rotation = turn;
      ASSERT_TRUE(sim.Frame(input, 1.0f / 60.0f, component).ok());
      const auto p_cs = FkPositions(skeleton, sim.output);
      const auto p_world = FkPositions(skeleton, sim.output, component);
      const Eigen::Vector3f ball_center =
          turn * Eigen::Vector3f(20, -8, 0);  // root sits at the origin
      for (int j = 2; j < skeleton.num_joints(); ++j) {
        const float to_floor = p_world[j].y() - (-10.0f);
        ASSERT_GE(to_floor, bone_radius - 1e-3f)
            << SimulationSpaceName(space) << " frame " << frame;
        ASSERT_GE(SphereDistance(p_cs[j], ball_center, 4.0f),
                  bone_radius - 1e-3f)
            << SimulationSpaceName(space) << " frame " << frame;
        floor_gap = std::min(floor_gap, to_floor);
      }
    }
    EXPECT_LT(floor_gap, bone_radius + 0.05f) << SimulationSpaceName(space);
  }
}

TEST(SpringColliders, PushOutLeavesEachShapeAtTheBoneRadius) {
  const float r = 0.5f;
  for (const ColliderCase& c : ColliderCases()) {
    const PlacedCollider placed =
        PlaceCollider(c.collider, Transform::Identity(), 1.0f);
    // Points on a grid through and around the shape, including its centre.
    int pushed = 0;
    for (float x = -10; x <= 50; x += 2.5f) {
      for (float y = -40; y <= 10; y += 2.5f) {
        for (float z = -25; z <= 25; z += 5.0f) {
          Eigen::Vector3f p(x, y, z);
          const bool inside = c.distance(p) < r;
          const bool moved = PushOutOfCollider(placed, r, &p);
          if (inside) ++pushed;
          EXPECT_EQ(moved, inside)
              << c.name << " " << x << "," << y << "," << z;
          EXPECT_GE(c.distance(p), r - 1e-4f) << c.name;
          EXPECT_LE(PenetrationDepth(placed, r, p), 1e-4f) << c.name;
        }
      }
    }
    EXPECT_GT(pushed, 0) << c.name;
  }
}

// The all-collider loops the solver uses (one call per bone) must agree with
// the single-collider functions applied one by one: the same pushes in the
// same order bit for bit, the deepest overlap and its collider, and the
// early-exit overlap test.
TEST(SpringColliders, AllColliderQueriesMatchOneByOneQueries) {
  std::vector<PlacedCollider> placed;
  for (const ColliderCase& c : ColliderCases()) {
    placed.push_back(PlaceCollider(c.collider, Transform::Identity(), 1.0f));
  }
  const float r = 0.5f;
  const float slop = 1e-4f;
  int overlapping = 0;
  for (float x = -10; x <= 50; x += 2.5f) {
    for (float y = -40; y <= 10; y += 2.5f) {
      for (float z = -25; z <= 25; z += 5.0f) {
        const Eigen::Vector3f start(x, y, z);
        Eigen::Vector3f want = start;
        bool want_moved = false;
        float want_depth = -std::numeric_limits<float>::max();
        int want_deepest = -1;
        bool want_any = false;
        for (size_t c = 0; c < placed.size(); ++c) {
          const float depth = PenetrationDepth(placed[c], r, start) - slop;
          if (depth > want_depth) {
            want_depth = depth;
            want_deepest = static_cast<int>(c);
          }
          want_any = want_any || depth > 0.0f;
          want_moved = PushOutOfCollider(placed[c], r, &want) || want_moved;
        }
        overlapping += want_any;
        Eigen::Vector3f got = start;
        EXPECT_EQ(PushOutOfColliders(placed, r, &got), want_moved);
        EXPECT_EQ(got, want) << x << "," << y << "," << z;
        int deepest = -1;
        EXPECT_EQ(DeepestPenetration(placed, r, start, slop, false, &deepest),
                  want_depth);
        EXPECT_EQ(deepest, want_deepest);
        if (want_depth > 0.0f) {
          // Culling far colliders keeps every positive answer exact.
          EXPECT_EQ(DeepestPenetration(placed, r, start, slop, true, &deepest),
                    want_depth);
        }
        EXPECT_EQ(AnyPenetration(placed, r, start, slop), want_any)
            << x << "," << y << "," << z;
      }
    }
  }
  EXPECT_GT(overlapping, 0);
}

// Internal (dynamics/internal/spring_collider_lanes.h): the four-lane
// kernels give each lane the bits the one-point kernels give (the solver
// relies on it for bit-identical results): a grid of points around every
// shape, including points inside the box and on a keep-inside sphere, four
// at a time with a different bone radius per lane.
TEST(SpringColliders, LaneQueriesMatchOnePointQueriesBitForBit) {
  std::vector<PlacedCollider> placed;
  for (const ColliderCase& c : ColliderCases()) {
    placed.push_back(PlaceCollider(c.collider, Transform::Identity(), 1.0f));
  }
  SpringCollider inside;
  inside.offset.translation = Eigen::Vector3f(15, -10, 0);
  inside.radius = 30.0f;
  inside.keep_inside = true;
  placed.push_back(PlaceCollider(inside, Transform::Identity(), 1.0f));
  std::vector<LaneCollider> lane_colliders;
  for (const PlacedCollider& c : placed) {
    lane_colliders.push_back(SplatCollider(c));
  }
  const float radii[lanes::kWidth] = {0.5f, 1.0f, 0.0f, 2.5f};
  const lanes::F4 radius = lanes::Set(radii[0], radii[1], radii[2], radii[3]);

  std::vector<Eigen::Vector3f> points;
  for (float x = -10; x <= 50; x += 2.5f) {
    for (float y = -40; y <= 10; y += 2.5f) {
      for (float z = -25; z <= 25; z += 5.0f) {
        points.emplace_back(x + 0.1f * y, y, z + 0.03f * x);
      }
    }
  }
  int pushed = 0;
  int stuck = 0;
  for (size_t first = 0; first + lanes::kWidth <= points.size();
       first += lanes::kWidth) {
    lanes::Block3 block;
    for (int k = 0; k < lanes::kWidth; ++k) {
      lanes::Set(block, k, points[first + k]);
    }
    const lanes::V4 p = lanes::Load(block);
    const lanes::F4 slop = SlopLanes(p);
    lanes::V4 moved = p;
    const int moved_lanes =
        lanes::Bits(PushOutOfCollidersLanes(lane_colliders, radius, &moved));
    const int any_lanes =
        lanes::Bits(AnyPenetrationLanes(lane_colliders, radius, p, slop));
    for (const bool cull : {false, true}) {
      lanes::F4 deepest = lanes::Splat(-1.0f);
      const lanes::F4 depth = DeepestPenetrationLanes(lane_colliders, radius, p,
                                                      slop, cull, &deepest);
      for (int k = 0; k < lanes::kWidth; ++k) {
        const Eigen::Vector3f& point = points[first + k];
        const float want_slop = 1e-6f * (1.0f + point.cwiseAbs().maxCoeff());
        ASSERT_EQ(lanes::Lane(slop, k), want_slop);
        int want_deepest = -1;
        const float want = DeepestPenetration(placed, radii[k], point,
                                              want_slop, cull, &want_deepest);
        ASSERT_EQ(lanes::Lane(depth, k), want)
            << point.transpose() << " cull " << cull;
        ASSERT_EQ(static_cast<int>(lanes::Lane(deepest, k)), want_deepest);
        stuck += want > 0.0f;
      }
    }
    for (int k = 0; k < lanes::kWidth; ++k) {
      const Eigen::Vector3f& point = points[first + k];
      Eigen::Vector3f want = point;
      const bool want_moved = PushOutOfColliders(placed, radii[k], &want);
      ASSERT_EQ(((moved_lanes >> k) & 1) != 0, want_moved) << point.transpose();
      ASSERT_EQ(lanes::Lane(moved, k), want) << point.transpose();
      const float want_slop = 1e-6f * (1.0f + point.cwiseAbs().maxCoeff());
      ASSERT_EQ(((any_lanes >> k) & 1) != 0,
                AnyPenetration(placed, radii[k], point, want_slop));
      pushed += want_moved;
    }
  }
  // Both outcomes occur.
  EXPECT_GT(pushed, 0);
  EXPECT_LT(pushed, static_cast<int>(points.size()));
  EXPECT_GT(stuck, 0);
}

TEST(SpringColliders, KeepInsideSphereHoldsBonesIn) {
  SpringCollider c;
  c.shape = ColliderShape::kSphere;
  c.keep_inside = true;
  c.radius = 10.0f;
  const PlacedCollider placed = PlaceCollider(c, Transform::Identity(), 1.0f);
  Eigen::Vector3f p(30, 0, 0);
  EXPECT_TRUE(PushOutOfCollider(placed, 1.0f, &p));
  EXPECT_NEAR(p.norm(), 9.0f, 1e-5f);
  Eigen::Vector3f q(3, 0, 0);
  EXPECT_FALSE(PushOutOfCollider(placed, 1.0f, &q));
}

// ---------------------------------------------------------------------------
// Teleport.

struct TeleportRun {
  LocalPose output;
  SpringBonesResult report;
};

// Settles a chain for 2 s at the origin, then solves one frame at `jump`.
TeleportRun RunWithJump(const Skeleton& skeleton, SpringRigDesc desc,
                        const Transform& jump) {
  Sim sim(skeleton, std::move(desc));
  sim.forces.gravity = Gravity();
  const LocalPose input = RestPose(skeleton);
  for (int frame = 0; frame < 120; ++frame) {
    EXPECT_TRUE(sim.Frame(input, 1.0f / 60.0f).ok());
  }
  EXPECT_TRUE(sim.Frame(input, 1.0f / 60.0f, jump).ok());
  return {sim.output, sim.report};
}

TEST(SpringBones, TeleportBeyondThresholdDoesNotWhipTheChain) {
  const Skeleton skeleton = MakeChain(5, 10.0f);
  Transform jump;
  jump.translation = Eigen::Vector3f(1000, 0, 300);
  jump.rotation = Eigen::AngleAxisf(kPi / 2, Eigen::Vector3f::UnitY());
  for (SimulationSpace space :
       {SimulationSpace::kComponent, SimulationSpace::kWorld}) {
    SpringRigDesc desc = ChainDesc();
    desc.space = space;
    desc.settings.stiffness = 0.02f;
    desc.settings.world_damping_location = 0.0f;
    desc.settings.world_damping_rotation = 0.0f;
    // Reference: the component never moves.
    const TeleportRun still = RunWithJump(skeleton, desc, Transform());
    const TeleportRun jumped = RunWithJump(skeleton, desc, jump);
    EXPECT_TRUE(jumped.report.teleported);
    EXPECT_FALSE(jumped.report.initialized);
    const auto want = FkPositions(skeleton, still.output);
    const auto got = FkPositions(skeleton, jumped.output);
    for (int j = 0; j < skeleton.num_joints(); ++j) {
      EXPECT_LT((got[j] - want[j]).norm(), 1e-3f)
          << SimulationSpaceName(space) << " joint " << j;
    }
    // Without the thresholds the same jump whips the chain.
    desc.teleport_distance = -1.0f;
    desc.teleport_rotation_degrees = -1.0f;
    const TeleportRun whipped = RunWithJump(skeleton, desc, jump);
    EXPECT_FALSE(whipped.report.teleported);
    const auto whip = FkPositions(skeleton, whipped.output);
    EXPECT_GT((whip.back() - want.back()).norm(), 1.0f)
        << SimulationSpaceName(space);
  }
}

TEST(SpringBones, TeleportWithResetStartsOverFromThePose) {
  const Skeleton skeleton = MakeChain(5, 10.0f);
  Transform jump;
  jump.translation = Eigen::Vector3f(0, 0, 5000);
  SpringRigDesc desc = ChainDesc();
  desc.teleport_response = TeleportResponse::kReset;
  const TeleportRun jumped = RunWithJump(skeleton, desc, jump);
  EXPECT_TRUE(jumped.report.teleported);
  EXPECT_TRUE(jumped.report.initialized);
  // The same frame solved from an empty state at the new place.
  Sim fresh(skeleton, desc);
  fresh.forces.gravity = Gravity();
  const LocalPose input = RestPose(skeleton);
  ASSERT_TRUE(fresh.Frame(input, 1.0f / 60.0f, jump).ok());
  for (int j = 0; j < skeleton.num_joints(); ++j) {
    EXPECT_EQ(jumped.output[j], fresh.output[j]) << "joint " << j;
  }
}

// ---------------------------------------------------------------------------
// Determinism and frame-rate independence.

// 4 s of a chain with everything on: gravity, gusty wind, a collider, an
// animated root, a moving component.
std::vector<LocalPose> BusyRun(const Skeleton& skeleton, SimulationSpace space,
                               DynamicsState* final_state) {
  SpringRigDesc desc = ChainDesc();
  desc.space = space;
  desc.dummy_tip_length = 4.0f;
  desc.settings.limit_angle_degrees = 70.0f;
  desc.curves.stiffness = {{0.0f, 2.0f}, {1.0f, 0.2f}};
  Sim sim(skeleton, desc);
  sim.forces.gravity = Gravity();
  sim.forces.wind.speed = 80.0f;
  sim.forces.wind.direction = Eigen::Vector3f(0, 0, 1);
  sim.forces.wind.noise_amplitude = 0.7f;
  sim.forces.wind.noise_seed = 1234;
  SpringCollider ball;
  ball.offset.translation = Eigen::Vector3f(25, -15, 0);
  ball.radius = 8.0f;
  sim.colliders = {ball};
  std::vector<LocalPose> outputs;
  for (int frame = 0; frame < 240; ++frame) {
    const float t = frame / 60.0f;
    LocalPose input = RestPose(skeleton);
    input[0].rotation =
        Eigen::AngleAxisf(0.6f * std::sin(2 * t), Eigen::Vector3f::UnitY());
    Transform component;
    component.translation = Eigen::Vector3f(30 * std::sin(t), 0, 40 * t);
    EXPECT_TRUE(sim.Frame(input, 1.0f / 60.0f, component).ok());
    outputs.push_back(sim.output);
  }
  *final_state = sim.state;
  return outputs;
}

TEST(SpringBones, SameInputsTwiceGiveBitIdenticalOutputs) {
  const Skeleton skeleton = MakeChain(6, 10.0f);
  for (SimulationSpace space :
       {SimulationSpace::kComponent, SimulationSpace::kWorld}) {
    DynamicsState state_a, state_b;
    const auto a = BusyRun(skeleton, space, &state_a);
    const auto b = BusyRun(skeleton, space, &state_b);
    ASSERT_EQ(a.size(), b.size());
    for (size_t f = 0; f < a.size(); ++f) {
      for (int j = 0; j < skeleton.num_joints(); ++j) {
        ASSERT_EQ(a[f][j], b[f][j]) << "frame " << f << " joint " << j;
      }
    }
    EXPECT_EQ(state_a, state_b);
    EXPECT_EQ(SerializeDynamicsState(state_a), SerializeDynamicsState(state_b));
  }
}

TEST(SpringBones, SeparateStateBuffersAndNoScratchGiveTheSameBits) {
  // state_in != state_out, no scratch, output aliasing input: same result
  // as the in-place run with scratch.
  const Skeleton skeleton = MakeChain(4, 10.0f);
  const SpringRig rig = MakeRig(skeleton, ChainDesc());
  DynamicsState in_place, a, b;
  SpringBonesScratch scratch;
  SpringForces forces;
  forces.gravity = Gravity();
  for (int frame = 0; frame < 50; ++frame) {
    LocalPose input = RestPose(skeleton);
    input[0].rotation =
        Eigen::AngleAxisf(0.05f * frame, Eigen::Vector3f::UnitZ());
    LocalPose out1(skeleton.num_joints());
    SpringBonesJob job{.skeleton = &skeleton,
                       .rig = &rig,
                       .input = input,
                       .dt = 1.0f / 45.0f,
                       .forces = forces,
                       .state_in = &in_place,
                       .scratch = &scratch,
                       .output = absl::MakeSpan(out1),
                       .state_out = &in_place};
    ASSERT_TRUE(job.Run().ok());
    LocalPose out2 = input;
    DynamicsState& from = frame % 2 == 0 ? a : b;
    DynamicsState& to = frame % 2 == 0 ? b : a;
    SpringBonesJob job2{.skeleton = &skeleton,
                        .rig = &rig,
                        .input = out2,
                        .dt = 1.0f / 45.0f,
                        .forces = forces,
                        .state_in = &from,
                        .output = absl::MakeSpan(out2),
                        .state_out = &to};
    ASSERT_TRUE(job2.Run().ok());
    for (int j = 0; j < skeleton.num_joints(); ++j) {
      ASSERT_EQ(out1[j], out2[j]) << "frame " << frame;
    }
    ASSERT_EQ(in_place, to);
  }
}

// Tip position (world) sampled at t = k/6 s, when frames at 30, 60 and 144
// fps all land on the same instant.
std::vector<Eigen::Vector3f> TipTrajectory(const Skeleton& skeleton,
                                           SimulationSpace space, int fps) {
  SpringRigDesc desc = ChainDesc();
  desc.space = space;
  desc.settings.stiffness = 0.02f;
  desc.settings.world_damping_location = 0.5f;
  desc.settings.world_damping_rotation = 0.5f;
  Sim sim(skeleton, desc);
  sim.forces.gravity = Gravity();
  std::vector<Eigen::Vector3f> samples;
  const int frames = 2 * fps;  // 2 s
  // Frame 0 (dt 0) initialises every run from the same pose at t = 0.
  for (int frame = 0; frame <= frames; ++frame) {
    const float t = static_cast<float>(frame) / fps;
    LocalPose input = RestPose(skeleton);
    input[0].rotation = Eigen::AngleAxisf(0.5f * std::sin(2.0f * kPi * t),
                                          Eigen::Vector3f::UnitZ());
    Transform component;
    component.translation =
        Eigen::Vector3f(30.0f * std::sin(kPi * t), 0.0f, 20.0f * t);
    component.rotation =
        Eigen::AngleAxisf(0.3f * std::sin(kPi * t), Eigen::Vector3f::UnitY());
    EXPECT_TRUE(
        sim.Frame(input, frame == 0 ? 0.0f : 1.0f / fps, component).ok());
    if (frame > 0 && (frame * 6) % fps == 0) {
      samples.push_back(FkPositions(skeleton, sim.output, component).back());
    }
  }
  return samples;
}

TEST(SpringBones, FrameRateDoesNotChangeTheTrajectory) {
  // The stated tolerance: the tip of a 50-unit chain swinging through tens
  // of units follows the same path within 0.5 units (1% of the chain) at
  // 30, 60 and 144 fps (measured: at most 0.25 at 30 fps, 0.09 at 144 fps).
  // What remains is the linear interpolation of the animated pose and the
  // component transform between frames, which a 60 fps run does not need.
  const Skeleton skeleton = MakeChain(5, 10.0f);
  for (SimulationSpace space :
       {SimulationSpace::kComponent, SimulationSpace::kWorld}) {
    const auto at60 = TipTrajectory(skeleton, space, 60);
    const auto at30 = TipTrajectory(skeleton, space, 30);
    const auto at144 = TipTrajectory(skeleton, space, 144);
    ASSERT_EQ(at60.size(), 12u);
    ASSERT_EQ(at30.size(), 12u);
    ASSERT_EQ(at144.size(), 12u);
    float swing = 0.0f;
    for (size_t k = 0; k < at60.size(); ++k) {
      EXPECT_LT((at30[k] - at60[k]).norm(), 0.5f)
          << SimulationSpaceName(space) << " sample " << k;
      EXPECT_LT((at144[k] - at60[k]).norm(), 0.5f)
          << SimulationSpaceName(space) << " sample " << k;
      if (k > 0) swing = std::max(swing, (at60[k] - at60[k - 1]).norm());
    }
    EXPECT_GT(swing, 10.0f);  // the comparison is not between still chains
  }
}

TEST(SpringBones, SubstepsAndLeftoverTime) {
  const Skeleton skeleton = MakeChain(3, 10.0f);
  const LocalPose input = RestPose(skeleton);
  Sim sim(skeleton, ChainDesc());
  ASSERT_TRUE(sim.Frame(input, 1.0f / 30.0f).ok());
  EXPECT_EQ(sim.report.substeps, 2);
  EXPECT_TRUE(sim.report.initialized);
  // 24 frames at 144 fps are exactly 10 steps of 1/60 s.
  int steps = 0;
  for (int frame = 0; frame < 24; ++frame) {
    ASSERT_TRUE(sim.Frame(input, 1.0f / 144.0f).ok());
    steps += sim.report.substeps;
    EXPECT_LT(sim.state.leftover_time, 1.0f / 60.0f);
  }
  EXPECT_EQ(steps, 10);
  EXPECT_LT(sim.state.leftover_time, 1e-5f);
  // A 10 s hitch is clamped to max_substeps steps.
  ASSERT_TRUE(sim.Frame(input, 10.0f).ok());
  EXPECT_EQ(sim.report.substeps, 4);
  EXPECT_TRUE(sim.report.time_clamped);
  EXPECT_EQ(sim.state.leftover_time, 0.0f);
  // dt 0 advances nothing.
  const uint64_t before = sim.state.step_count;
  ASSERT_TRUE(sim.Frame(input, 0.0f).ok());
  EXPECT_EQ(sim.report.substeps, 0);
  EXPECT_EQ(sim.state.step_count, before);
}

// ---------------------------------------------------------------------------
// Rig features.

TEST(SpringBones, DummyTipLetsTheLeafSwing) {
  const Skeleton skeleton = MakeChain(3, 10.0f);
  const LocalPose input = RestPose(skeleton);
  const int leaf = skeleton.num_joints() - 1;
  for (float tip : {0.0f, 5.0f}) {
    SpringRigDesc desc = ChainDesc();
    desc.dummy_tip_length = tip;
    desc.tip_axis = SpringTipAxis::kAlongBone;
    desc.settings.stiffness = 0.0f;
    Sim sim(skeleton, desc);
    EXPECT_EQ(sim.rig.num_particles(), tip > 0 ? 5 : 4);
    sim.forces.gravity = Gravity();
    for (int frame = 0; frame < 60; ++frame) {
      ASSERT_TRUE(sim.Frame(input, 1.0f / 60.0f).ok());
    }
    const auto rot = FkRotations(skeleton, sim.output);
    if (tip > 0) {
      // The leaf now points down like the rest of the chain.
      const Eigen::Vector3f leaf_dir = rot[leaf] * Eigen::Vector3f::UnitX();
      EXPECT_LT(leaf_dir.y(), -0.5f);
    } else {
      // Nothing below the leaf to aim at: it keeps its animated model-space
      // rotation while its parent hangs down (KawaiiPhysics' behaviour, the
      // reason dummy tips exist).
      const auto animated = FkRotations(skeleton, input);
      EXPECT_LT(RotationAngle(rot[leaf], animated[leaf]), 1e-5f);
      EXPECT_GT(RotationAngle(rot[leaf - 1], animated[leaf - 1]), 0.5f);
    }
  }
}

TEST(SpringBones, ExcludedBonesKeepTheirAnimationAndFollowTheirParent) {
  const Skeleton skeleton = MakeChain(5, 10.0f, Eigen::Vector3f::UnitX(),
                                      /*with_accessory=*/true);
  SpringRigDesc desc = ChainDesc();
  desc.excluded_joints = {"acc0"};
  desc.settings.stiffness = 0.0f;
  Sim sim(skeleton, desc);
  const int acc0 = skeleton.FindJoint("acc0");
  const int acc1 = skeleton.FindJoint("acc1");
  const int tail2 = skeleton.FindJoint("tail2");
  EXPECT_EQ(sim.rig.ParticleOfJoint(acc0), -1);
  EXPECT_EQ(sim.rig.ParticleOfJoint(acc1), -1);
  EXPECT_GE(sim.rig.ParticleOfJoint(tail2), 0);
  sim.forces.gravity = Gravity();
  LocalPose input = RestPose(skeleton);
  input[acc0].rotation = Eigen::AngleAxisf(0.4f, Eigen::Vector3f::UnitX());
  for (int frame = 0; frame < 60; ++frame) {
    ASSERT_TRUE(sim.Frame(input, 1.0f / 60.0f).ok());
    EXPECT_EQ(sim.output[acc0], input[acc0]);
    EXPECT_EQ(sim.output[acc1], input[acc1]);
  }
  // acc0 hangs off tail2's simulated transform: its offset turned with it.
  const auto p = FkPositions(skeleton, sim.output);
  const auto rot = FkRotations(skeleton, sim.output);
  EXPECT_LT(
      (p[acc0] - (p[tail2] + rot[tail2] * Eigen::Vector3f(0, 0, 3))).norm(),
      1e-4f);
  EXPECT_GT(
      (p[tail2 + 1] - p[tail2]).normalized().dot(-Eigen::Vector3f::UnitY()),
      0.5f);
}

// The solver runs four particles at a time, one per SIMD lane, level by
// level across the chains: chains of different lengths leave lanes empty,
// and a branch or dummy tips put a bone's parent in another lane. None of
// that may couple the chains: each chain solved with all the others gives
// the same bits as the chain solved alone, also while it presses on
// colliders of every shape.
// A sphere body, capsule hips and box pack (fixed in the component) and a
// world floor plane, around the test rigs.
struct BodyColliders {
  SpringCollider body, hips, pack, floor;
};
BodyColliders MakeBodyColliders() {
  BodyColliders c;
  c.body.offset.translation = Eigen::Vector3f(0, 20, 0);
  c.body.radius = 9.0f;
  c.hips.shape = ColliderShape::kCapsule;
  c.hips.offset.translation = Eigen::Vector3f(0, 8, 0);
  c.hips.axis = Eigen::Vector3f::UnitX();
  c.hips.radius = 6.0f;
  c.pack.shape = ColliderShape::kBox;
  c.pack.offset.translation = Eigen::Vector3f(0, 20, -10);
  c.pack.offset.rotation = Eigen::AngleAxisf(0.3f, Eigen::Vector3f::UnitY());
  c.pack.half_extents = Eigen::Vector3f(6, 8, 3);
  c.floor.shape = ColliderShape::kPlane;
  c.floor.attachment = ColliderAttachment::kWorld;
  c.floor.axis = Eigen::Vector3f::UnitY();
  return c;
}

// One sim of every chain in `roots` together and one per chain alone, all
// under gravity and the same colliders, stepped alike: the two must agree
// bit for bit (positions, previous positions, output rotations).
class TogetherAndAlone {
 public:
  template <typename MakeDesc>
  TogetherAndAlone(const Skeleton& skeleton,
                   const std::vector<std::string>& roots, MakeDesc make_desc,
                   const std::vector<SpringCollider>& colliders)
      : together_(skeleton, make_desc(roots)) {
    for (const std::string& root : roots) {
      alone_.push_back(std::make_unique<Sim>(skeleton, make_desc({root})));
    }
    ForEach([&](Sim& sim) {
      sim.forces.gravity = Gravity();
      sim.colliders = colliders;
    });
  }

  // Steps every sim; false (with a test failure) if one fails.
  bool Frame(const LocalPose& input, float dt, const Transform& component) {
    bool ok = true;
    ForEach([&](Sim& sim) {
      const absl::Status s = sim.Frame(input, dt, component);
      EXPECT_TRUE(s.ok()) << s;
      ok = ok && s.ok();
    });
    return ok;
  }

  // Each chain alone against the same particles of the combined rig (by
  // joint, or for a dummy tip by its leaf). `context` names the frame.
  void ExpectSame(const std::string& context) const {
    for (size_t c = 0; c < alone_.size(); ++c) {
      const Sim& single = *alone_[c];
      for (int i = 0; i < single.rig.num_particles(); ++i) {
        const SpringParticle& pt = single.rig.particles()[i];
        const int leaf =
            pt.joint >= 0 ? pt.joint : single.rig.particles()[pt.parent].joint;
        int j = together_.rig.ParticleOfJoint(leaf);
        if (pt.joint < 0) {
          const SpringParticle& leaf_pt = together_.rig.particles()[j];
          ASSERT_EQ(leaf_pt.num_children, 1);
          j = leaf_pt.first_child;
        }
        ASSERT_EQ(single.state.positions[i], together_.state.positions[j])
            << context << " chain " << c << " particle " << i;
        ASSERT_EQ(single.state.previous_positions[i],
                  together_.state.previous_positions[j])
            << context << " chain " << c << " particle " << i;
        if (pt.joint >= 0) {
          ASSERT_EQ(single.output[pt.joint].rotation.coeffs(),
                    together_.output[pt.joint].rotation.coeffs())
              << context << " chain " << c << " joint " << pt.joint;
        }
      }
    }
  }

 private:
  template <typename F>
  void ForEach(F f) {
    f(together_);
    for (auto& sim : alone_) f(*sim);
  }

  Sim together_;
  std::vector<std::unique_ptr<Sim>> alone_;
};

// Appends to `d` (whose joint 0 is the body) chain `c` of `count`, hanging
// from the body toward the circle's `c`-th direction: a root and `bones`
// bones, named c<c>_0.. . Returns the index of its first bone.
int AddHangingChain(SkeletonDesc& d, int c, int count, int bones,
                    std::vector<std::string>& roots) {
  const float angle =
      2.0f * kPi * static_cast<float>(c) / static_cast<float>(count);
  return AddHangingChain(
      d, Eigen::Vector3f(std::cos(angle), 0.0f, std::sin(angle)),
      absl::StrCat("c", c), bones, roots);
}

TEST(SpringBones, ChainsSolvedTogetherMatchEachChainSolvedAlone) {
  SkeletonDesc d;
  d.joint_names.push_back("body");
  d.parents.push_back(kNoParent);
  d.rest_pose.push_back(Transform::Identity());
  const int lengths[] = {3, 7, 2, 5, 6};
  std::vector<std::string> roots;
  for (int c = 0; c < 5; ++c) {
    const int fork = AddHangingChain(d, c, 5, lengths[c], roots);
    if (c == 3) {
      // A side branch: its bones' parents sit at another lane position.
      for (int k = 0; k < 3; ++k) {
        d.joint_names.push_back(absl::StrCat("side", k));
        d.parents.push_back(k == 0 ? fork
                                   : static_cast<int>(d.parents.size()) - 1);
        Transform t;
        t.translation = Eigen::Vector3f(2.0f, -3.0f, 0.5f);
        d.rest_pose.push_back(t);
      }
    }
  }
  auto created = Skeleton::Create(d);
  ASSERT_TRUE(created.ok()) << created.status();
  const Skeleton skeleton = *std::move(created);

  const auto [body, hips, pack, floor] = MakeBodyColliders();

  auto make_desc = [](std::vector<std::string> root_joints) {
    SpringRigDesc desc;
    desc.root_joints = std::move(root_joints);
    desc.dummy_tip_length = 2.0f;
    desc.tip_axis = SpringTipAxis::kAlongBone;
    desc.settings.radius = 1.0f;
    desc.settings.limit_angle_degrees = 60.0f;
    desc.curves.stiffness = {{0.0f, 2.0f}, {1.0f, 0.5f}};
    return desc;
  };
  TogetherAndAlone sims(skeleton, roots, make_desc, {body, hips, pack, floor});

  const LocalPose input = RestPose(skeleton);
  for (int frame = 0; frame < 360; ++frame) {
    // Walking a circle: the chains trail at their limits against the
    // colliders. Some frames take several steps, some none.
    const float t = static_cast<float>(frame) / 60.0f;
    const float a = 2.0f * kPi * t / 4.0f;
    Transform component;
    component.translation =
        Eigen::Vector3f(100.0f * std::cos(a), 0.0f, 100.0f * std::sin(a));
    component.rotation = Eigen::AngleAxisf(-a, Eigen::Vector3f::UnitY());
    const float dt = frame % 7 == 3 ? 2.5f / 60.0f : 1.0f / 60.0f;
    ASSERT_TRUE(sims.Frame(input, dt, component)) << "frame " << frame;
    ASSERT_NO_FATAL_FAILURE(sims.ExpectSame(absl::StrCat("frame ", frame)));
  }
}

// Eight chains of one shape (dummy tips included) fill whole groups of
// four lanes level by level, so their output rotations are worked out from
// the lanes (SpringLaneLayoutW::lane_output); a chain solved alone has
// padding lanes and takes the per-joint path. Both must give the same bits,
// in both spaces, on frames that land on a step, fall between steps or take
// none.
TEST(SpringBones, LaneOutputMatchesEachChainSolvedAlone) {
  SkeletonDesc d;
  d.joint_names.push_back("body");
  d.parents.push_back(kNoParent);
  d.rest_pose.push_back(Transform::Identity());
  std::vector<std::string> roots;
  for (int c = 0; c < 8; ++c) AddHangingChain(d, c, 8, 5, roots);
  auto created = Skeleton::Create(d);
  ASSERT_TRUE(created.ok()) << created.status();
  const Skeleton skeleton = *std::move(created);
  const auto [body, hips, pack, floor] = MakeBodyColliders();

  for (SimulationSpace space :
       {SimulationSpace::kComponent, SimulationSpace::kWorld}) {
    auto make_desc = [space](std::vector<std::string> root_joints) {
      SpringRigDesc desc;
      desc.root_joints = std::move(root_joints);
      desc.space = space;
      desc.dummy_tip_length = 2.0f;
      desc.settings.radius = 1.0f;
      desc.settings.limit_angle_degrees = 60.0f;
      return desc;
    };
    TogetherAndAlone sims(skeleton, roots, make_desc,
                          {body, hips, pack, floor});
    LocalPose input = RestPose(skeleton);
    for (int frame = 0; frame < 240; ++frame) {
      const float t = static_cast<float>(frame) / 60.0f;
      // The animation sways every bone, so the animated bones change.
      for (int j = 1; j < skeleton.num_joints(); ++j) {
        input[j].rotation = Eigen::Quaternionf(Eigen::AngleAxisf(
            0.3f * std::sin(2.1f * t + 0.37f * static_cast<float>(j)),
            Eigen::Vector3f::UnitZ()));
      }
      const float a = 2.0f * kPi * t / 4.0f;
      Transform component;
      component.translation =
          Eigen::Vector3f(100.0f * std::cos(a), 0.0f, 100.0f * std::sin(a));
      component.rotation = Eigen::AngleAxisf(-a, Eigen::Vector3f::UnitY());
      const float dt = frame % 5 == 1   ? 0.0f
                       : frame % 5 == 3 ? 1.0f / 150.0f
                                        : 2.5f / 60.0f;
      ASSERT_TRUE(sims.Frame(input, dt, component)) << "frame " << frame;
      ASSERT_NO_FATAL_FAILURE(sims.ExpectSame(
          absl::StrCat("space ", static_cast<int>(space), " frame ", frame)));
    }
  }
}

TEST(SpringBones, BranchingJointKeepsItsAnimatedRotation) {
  // A "Y": fork with two simulated branches. The fork has two simulated
  // children, so it keeps its animated model-space rotation (KawaiiPhysics'
  // rule) while both branches hang down under gravity.
  SkeletonDesc d;
  d.joint_names = {"fork", "l0", "l1", "r0", "r1"};
  d.parents = {-1, 0, 1, 0, 3};
  d.rest_pose.resize(5);
  d.rest_pose[1].translation = Eigen::Vector3f(10, 0, 5);
  d.rest_pose[2].translation = Eigen::Vector3f(10, 0, 0);
  d.rest_pose[3].translation = Eigen::Vector3f(10, 0, -5);
  d.rest_pose[4].translation = Eigen::Vector3f(10, 0, 0);
  const Skeleton skeleton = *Skeleton::Create(d);
  SpringRigDesc desc;
  desc.root_joints = {"fork"};
  desc.settings.stiffness = 0.0f;
  Sim sim(skeleton, desc);
  sim.forces.gravity = Gravity();
  LocalPose input = RestPose(skeleton);
  input[0].rotation = Eigen::AngleAxisf(0.3f, Eigen::Vector3f::UnitY());
  for (int frame = 0; frame < 240; ++frame) {
    ASSERT_TRUE(sim.Frame(input, 1.0f / 60.0f).ok());
  }
  EXPECT_EQ(sim.output[0], input[0]);
  const auto p = FkPositions(skeleton, sim.output);
  for (int tip : {2, 4}) {
    const Eigen::Vector3f bone = (p[tip] - p[tip - 1]).normalized();
    EXPECT_GT(-bone.y(), 0.99f) << "joint " << tip;
    EXPECT_NEAR((p[tip] - p[tip - 1]).norm(), 10.0f, 1e-4f);
  }
  // The branch roots l0 and r0 stay where the fork's animation puts them.
  const auto want = FkPositions(skeleton, input);
  EXPECT_LT((p[1] - want[1]).norm(), 1e-4f);
  EXPECT_LT((p[3] - want[3]).norm(), 1e-4f);
}

TEST(SpringBones, CurvesScaleSettingsAlongTheChain) {
  // Evaluation against hand-computed values.
  const SpringCurve curve = {{0.0f, 1.0f}, {0.5f, 3.0f}, {1.0f, 0.0f}};
  EXPECT_FLOAT_EQ(EvaluateSpringCurve(curve, -1.0f), 1.0f);
  EXPECT_FLOAT_EQ(EvaluateSpringCurve(curve, 0.25f), 2.0f);
  EXPECT_FLOAT_EQ(EvaluateSpringCurve(curve, 0.75f), 1.5f);
  EXPECT_FLOAT_EQ(EvaluateSpringCurve(curve, 2.0f), 0.0f);
  EXPECT_FLOAT_EQ(EvaluateSpringCurve({}, 0.3f), 1.0f);

  // Bones of 10, 10, 20 units: chain positions 0, 0.25, 0.5, 1.
  SkeletonDesc d;
  d.joint_names = {"a", "b", "c", "d"};
  d.parents = {-1, 0, 1, 2};
  d.rest_pose.resize(4);
  d.rest_pose[1].translation = Eigen::Vector3f(10, 0, 0);
  d.rest_pose[2].translation = Eigen::Vector3f(10, 0, 0);
  d.rest_pose[3].translation = Eigen::Vector3f(20, 0, 0);
  const Skeleton skeleton = *Skeleton::Create(d);
  SpringRigDesc desc;
  desc.root_joints = {"a"};
  desc.settings.damping = 0.5f;
  desc.curves.damping = curve;
  desc.settings.radius = 2.0f;
  desc.curves.radius = {{0.0f, 0.0f}, {1.0f, 1.0f}};
  const SpringRig rig = MakeRig(skeleton, desc);
  const float rates[] = {0.0f, 0.25f, 0.5f, 1.0f};
  const float damping[] = {0.5f, 1.0f, 1.0f, 0.0f};  // 0.5 * curve, <= 1
  for (int i = 0; i < 4; ++i) {
    const SpringParticle& pt = rig.particles()[i];
    EXPECT_FLOAT_EQ(pt.length_rate, rates[i]);
    EXPECT_FLOAT_EQ(pt.settings.damping, damping[i]);
    EXPECT_FLOAT_EQ(pt.settings.radius, 2.0f * rates[i]);
    EXPECT_FLOAT_EQ(pt.settings.stiffness, 0.05f);  // default, no curve
  }
}

TEST(SpringBones, WindPushesDownwindAndNoiseIsSeeded) {
  const Skeleton skeleton = MakeChain(4, 10.0f);
  const LocalPose input = RestPose(skeleton);
  auto tip_after = [&](float amplitude, uint64_t seed) {
    Sim sim(skeleton, ChainDesc());
    sim.forces.wind.direction = Eigen::Vector3f(0, 0, 2);  // normalised
    sim.forces.wind.speed = 30.0f;
    sim.forces.wind.noise_amplitude = amplitude;
    sim.forces.wind.noise_seed = seed;
    sim.forces.wind.noise_frequency_hz = 2.0f;
    for (int frame = 0; frame < 90; ++frame) {
      EXPECT_TRUE(sim.Frame(input, 1.0f / 60.0f).ok());
    }
    return FkPositions(skeleton, sim.output).back();
  };
  const Eigen::Vector3f calm = tip_after(0.0f, 0);
  EXPECT_GT(calm.z(), 1.0f);  // blown along +Z
  const Eigen::Vector3f gusty = tip_after(0.8f, 7);
  EXPECT_EQ(gusty, tip_after(0.8f, 7));     // same seed, same bits
  EXPECT_NE(gusty, tip_after(0.8f, 8));     // another seed differs
  EXPECT_GT((gusty - calm).norm(), 1e-3f);  // gusts do something
}

// ---------------------------------------------------------------------------
// Validation.

TEST(SpringBones, RigRejectsBadDescriptions) {
  const Skeleton skeleton = MakeChain(4, 10.0f, Eigen::Vector3f::UnitX(),
                                      /*with_accessory=*/true);
  auto error = [&](SpringRigDesc d) {
    auto rig = SpringRig::Create(skeleton, std::move(d));
    EXPECT_FALSE(rig.ok());
    EXPECT_EQ(rig.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(rig.status().message());
  };
  SpringRigDesc d = ChainDesc();
  d.root_joints = {};
  EXPECT_THAT(error(d), HasSubstr("root_joints"));
  d.root_joints = {"nope"};
  EXPECT_THAT(error(d), HasSubstr("'nope'"));
  d.root_joints = {"tail0", "tail2"};
  EXPECT_THAT(error(d), HasSubstr("inside the chain of root 'tail0'"));
  d.root_joints = {"tail0", "acc0"};
  EXPECT_THAT(error(d), HasSubstr("inside the chain of root 'tail0'"));
  d.excluded_joints = {"acc0"};
  EXPECT_THAT(error(d), HasSubstr("also excluded"));
  d.root_joints = {"tail0", "acc1"};  // below an excluded joint: its own chain
  EXPECT_TRUE(SpringRig::Create(skeleton, d).ok());
  d = ChainDesc();
  d.excluded_joints = {"tail0"};
  EXPECT_THAT(error(d), HasSubstr("also excluded"));
  d = ChainDesc();
  d.settings.damping = 1.5f;
  EXPECT_THAT(error(d), HasSubstr("settings.damping"));
  d = ChainDesc();
  d.settings.stiffness = std::nanf("");
  EXPECT_THAT(error(d), HasSubstr("settings.stiffness"));
  d = ChainDesc();
  d.settings.limit_angle_degrees = 200.0f;
  EXPECT_THAT(error(d), HasSubstr("limit_angle_degrees"));
  d = ChainDesc();
  d.curves.stiffness = {{0.5f, 1.0f}, {0.5f, 2.0f}};
  EXPECT_THAT(error(d), HasSubstr("curves.stiffness[1]"));
  d = ChainDesc();
  d.curves.radius = {{0.5f, -1.0f}};
  EXPECT_THAT(error(d), HasSubstr("negative"));
  d = ChainDesc();
  d.target_rate_hz = 0.0f;
  EXPECT_THAT(error(d), HasSubstr("target_rate_hz"));
  d = ChainDesc();
  d.max_substeps = 0;
  EXPECT_THAT(error(d), HasSubstr("max_substeps"));
  d = ChainDesc();
  d.teleport_distance = INFINITY;
  EXPECT_THAT(error(d), HasSubstr("teleport_distance"));
}

class SpringBonesValidation : public ::testing::Test {
 protected:
  SpringBonesValidation()
      : skeleton_(MakeChain(4, 10.0f)),
        rig_(MakeRig(skeleton_, ChainDesc())),
        input_(RestPose(skeleton_)),
        output_(skeleton_.num_joints()) {}

  SpringBonesJob Job() {
    SpringBonesJob job;
    job.skeleton = &skeleton_;
    job.rig = &rig_;
    job.input = input_;
    job.dt = 1.0f / 60.0f;
    job.state_in = &state_;
    job.output = absl::MakeSpan(output_);
    job.state_out = &state_;
    return job;
  }

  std::string Error(const SpringBonesJob& job) {
    const absl::Status s = job.Run();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    return std::string(s.message());
  }

  Skeleton skeleton_;
  SpringRig rig_;
  LocalPose input_;
  LocalPose output_;
  DynamicsState state_;
};

TEST_F(SpringBonesValidation, RejectsNonFiniteInputsAndBadTimes) {
  SpringBonesJob job = Job();
  ASSERT_TRUE(job.Run().ok());
  input_[3].rotation.x() = std::nanf("");
  EXPECT_THAT(Error(Job()), HasSubstr("spring_bones.input[3] 'tail2'"));
  input_ = RestPose(skeleton_);
  job = Job();
  job.dt = -0.01f;
  EXPECT_THAT(Error(job), HasSubstr("spring_bones.dt"));
  job.dt = INFINITY;
  EXPECT_THAT(Error(job), HasSubstr("spring_bones.dt"));
  job = Job();
  job.component_to_world.translation.y() = INFINITY;
  EXPECT_THAT(Error(job), HasSubstr("component_to_world"));
  job = Job();
  job.component_to_world.scale = Eigen::Vector3f(1, 2, 1);
  EXPECT_THAT(Error(job), HasSubstr("not uniform"));
  job = Job();
  job.forces.gravity.x() = std::nanf("");
  EXPECT_THAT(Error(job), HasSubstr("forces.gravity"));
  job = Job();
  job.forces.wind.speed = 3.0f;
  job.forces.wind.direction = Eigen::Vector3f::Zero();
  EXPECT_THAT(Error(job), HasSubstr("wind.direction"));
  job = Job();
  job.forces.wind.noise_amplitude = 2.0f;
  EXPECT_THAT(Error(job), HasSubstr("noise_amplitude"));
  job = Job();
  job.output = absl::MakeSpan(output_).subspan(1);
  EXPECT_THAT(Error(job), HasSubstr("spring_bones.output"));
  job = Job();
  job.state_out = nullptr;
  EXPECT_THAT(Error(job), HasSubstr("state_out"));
  job = Job();
  job.rig = nullptr;
  EXPECT_THAT(Error(job), HasSubstr("spring_bones.rig"));
  // A huge but finite dt is fine: clamped, not rejected.
  job = Job();
  job.dt = 1e30f;
  EXPECT_TRUE(job.Run().ok());
}

TEST_F(SpringBonesValidation, RejectsBadColliders) {
  SpringBonesJob job = Job();
  std::vector<SpringCollider> colliders(2);
  colliders[1].shape = ColliderShape::kCapsule;
  colliders[1].radius = -1.0f;
  job.colliders = colliders;
  EXPECT_THAT(Error(job), HasSubstr("colliders[1] (capsule).radius"));
  colliders[1] = SpringCollider();
  colliders[1].attachment = ColliderAttachment::kBone;
  colliders[1].bone = 99;
  EXPECT_THAT(Error(job), HasSubstr("colliders[1] (sphere).bone"));
  colliders[1] = SpringCollider();
  colliders[1].shape = ColliderShape::kPlane;
  colliders[1].axis = Eigen::Vector3f::Zero();
  EXPECT_THAT(Error(job), HasSubstr("axis"));
  colliders[1] = SpringCollider();
  colliders[1].offset.scale = Eigen::Vector3f(2, 2, 2);
  EXPECT_THAT(Error(job), HasSubstr("offset"));
}

TEST_F(SpringBonesValidation, RejectsAStateThatDoesNotMatchTheRig) {
  ASSERT_TRUE(Job().Run().ok());
  const DynamicsState good = state_;
  // A state from a longer chain.
  const Skeleton other = MakeChain(6, 10.0f);
  const SpringRig other_rig = MakeRig(other, ChainDesc());
  LocalPose other_out(other.num_joints());
  const LocalPose other_in = RestPose(other);
  DynamicsState foreign;
  SpringBonesJob other_job{.skeleton = &other,
                           .rig = &other_rig,
                           .input = other_in,
                           .dt = 0.01f,
                           .output = absl::MakeSpan(other_out),
                           .state_out = &foreign};
  ASSERT_TRUE(other_job.Run().ok());
  SpringBonesJob job = Job();
  job.state_in = &foreign;
  EXPECT_THAT(Error(job), HasSubstr("different rig"));
  // Right fingerprint, wrong particle count.
  state_ = good;
  state_.positions.pop_back();
  EXPECT_THAT(Error(Job()), HasSubstr("particles, the rig has"));
  // Right rig, wrong space.
  state_ = good;
  state_.space = SimulationSpace::kWorld;
  EXPECT_THAT(Error(Job()), HasSubstr("world space, the rig in component"));
  // NaN inside.
  state_ = good;
  state_.previous_positions[2].y() = std::nanf("");
  EXPECT_THAT(Error(Job()), HasSubstr("previous_positions[2]"));
  // Reset ignores the bad state and starts over.
  job = Job();
  job.reset = true;
  EXPECT_TRUE(job.Run().ok());
  // A rig for another skeleton.
  job = Job();
  job.rig = &other_rig;
  EXPECT_THAT(Error(job), HasSubstr("different skeleton"));
}

// ---------------------------------------------------------------------------
// SIMD levels. The solver runs its lanes four wide (SSE2, baseline x86-64)
// or, on CPUs with AVX2 and rigs with wide enough levels, eight wide; both
// must give the same bits, so a server and a client on different CPUs agree.

// Caps the SIMD level for a test and restores the level that was active.
class ScopedMaxSimdLevel {
 public:
  ScopedMaxSimdLevel() : saved_(ActiveSimdLevel()) {}
  ~ScopedMaxSimdLevel() { SetMaxSimdLevel(saved_); }
  ScopedMaxSimdLevel(const ScopedMaxSimdLevel&) = delete;
  ScopedMaxSimdLevel& operator=(const ScopedMaxSimdLevel&) = delete;

 private:
  SimdLevel saved_;
};

struct LevelScenario {
  std::string name;
  int chains = 8;
  bool branch = false;  // side branches and an excluded accessory
  bool inward = false;  // every other chain's pose leans into the body
  SpringRigDesc desc;
  int colliders = 0x3f;  // bits of LevelColliders
  float scale = 1.0f;    // uniform component scale (may mirror)
  bool wind = false;
  bool external_world = false;
  bool teleports = false;
  bool animate = true;
};

// A body with `chains` chains of 2 to 8 bones around it (ragged levels, so
// groups have padding lanes), optionally with side branches (parents in
// other lanes) and an excluded accessory.
Skeleton MakeFan(int chains, bool branch, bool inward,
                 std::vector<std::string>* roots) {
  SkeletonDesc d;
  d.joint_names.push_back("body");
  d.parents.push_back(kNoParent);
  d.rest_pose.push_back(Transform::Identity());
  for (int c = 0; c < chains; ++c) {
    const float angle =
        2.0f * kPi * static_cast<float>(c) / static_cast<float>(chains);
    const Eigen::Vector3f out(std::cos(angle), 0.0f, std::sin(angle));
    const int length = 2 + (c * 5) % 7;
    const float lean = inward && c % 2 == 1 ? -1.2f : 0.8f;
    int fork = -1;
    for (int b = 0; b <= length; ++b) {
      const std::string name = absl::StrCat("c", c, "_", b);
      if (b == 0) roots->push_back(name);
      d.joint_names.push_back(name);
      d.parents.push_back(b == 0 ? 0 : static_cast<int>(d.parents.size()) - 1);
      Transform t;
      t.translation =
          b == 0 ? Eigen::Vector3f(out * 10.0f + Eigen::Vector3f(0, 30, 0))
                 : Eigen::Vector3f(out * lean + Eigen::Vector3f(0, -4, 0));
      d.rest_pose.push_back(t);
      if (b == 1) fork = static_cast<int>(d.parents.size()) - 1;
    }
    if (branch && c % 3 == 1) {
      for (int k = 0; k < 3; ++k) {
        d.joint_names.push_back(absl::StrCat("side", c, "_", k));
        d.parents.push_back(k == 0 ? fork
                                   : static_cast<int>(d.parents.size()) - 1);
        Transform t;
        t.translation = Eigen::Vector3f(2.0f, -3.0f, 0.5f);
        d.rest_pose.push_back(t);
      }
    }
    if (branch && c == 0) {
      d.joint_names.push_back("acc");
      d.parents.push_back(fork);
      Transform t;
      t.translation = Eigen::Vector3f(0, 0, 3);
      d.rest_pose.push_back(t);
    }
  }
  auto skeleton = Skeleton::Create(std::move(d));
  EXPECT_TRUE(skeleton.ok()) << skeleton.status();
  return *std::move(skeleton);
}

// Every collider type and attachment: sphere, capsule, box (bone), floor
// plane (world), a keep-inside sphere, a world capsule the walk crosses.
std::vector<SpringCollider> LevelColliders(int mask) {
  auto [body, hips, pack, floor] = MakeBodyColliders();
  pack.attachment = ColliderAttachment::kBone;
  pack.bone = 0;
  SpringCollider cage;
  cage.offset.translation = Eigen::Vector3f(0, 22, 0);
  cage.radius = 34.0f;
  cage.keep_inside = true;
  SpringCollider post;
  post.shape = ColliderShape::kCapsule;
  post.attachment = ColliderAttachment::kWorld;
  post.offset.translation = Eigen::Vector3f(100, 15, 0);
  post.axis = Eigen::Vector3f(0.2f, 1.0f, 0.1f);
  post.radius = 4.0f;
  post.length = 30.0f;
  const SpringCollider all[] = {body, hips, pack, floor, cage, post};
  std::vector<SpringCollider> out;
  for (int k = 0; k < 6; ++k) {
    if ((mask >> k) & 1) out.push_back(all[k]);
  }
  return out;
}

std::vector<LevelScenario> LevelScenarios() {
  std::vector<LevelScenario> out;
  int n = 0;
  // Chain counts on both sides of the four- and eight-lane boundaries, and
  // wide enough for the eight-lane kernels.
  for (int chains : {1, 3, 5, 8, 9, 12, 16, 17, 23, 33, 40, 47}) {
    for (SimulationSpace space :
         {SimulationSpace::kComponent, SimulationSpace::kWorld}) {
      LevelScenario s;
      s.name = absl::StrCat(chains, " chains, ", SimulationSpaceName(space));
      s.chains = chains;
      s.branch = n % 3 != 2;
      s.inward = n % 2 == 0;
      s.desc.space = space;
      s.desc.settings.radius = 1.0f + 0.25f * static_cast<float>(n % 3);
      const float limits[] = {0.0f, 60.0f, 30.0f, 170.0f, 90.0f};
      s.desc.settings.limit_angle_degrees = limits[n % 5];
      if (n % 4 == 1) {
        s.desc.curves.limit_angle = {{0.0f, 0.5f}, {1.0f, 1.5f}};
        s.desc.curves.stiffness = {{0.0f, 2.0f}, {1.0f, 0.5f}};
      }
      if (n % 3 == 0) {
        s.desc.dummy_tip_length = 2.0f;
        s.desc.tip_axis =
            n % 2 == 0 ? SpringTipAxis::kAlongBone : SpringTipAxis::kYNegative;
      }
      s.desc.settings.world_damping_location = n % 2 ? 0.3f : 0.8f;
      s.desc.settings.world_damping_rotation = n % 2 ? 0.5f : 0.8f;
      s.desc.target_rate_hz = n % 4 == 3 ? 90.0f : 60.0f;
      s.desc.teleport_response =
          n % 2 ? TeleportResponse::kReset : TeleportResponse::kIgnoreMotion;
      const int masks[] = {0x3f, 0x0f, 0x31, 0x1b, 0x2e, 0x07};
      s.colliders = masks[n % 6];
      s.scale = n % 5 == 4 ? -1.25f : (n % 5 == 2 ? 1.5f : 1.0f);
      s.wind = n % 2 == 1;
      s.external_world = n % 3 == 1;
      s.teleports = true;
      out.push_back(s);
      ++n;
    }
  }
  // One collider at a time, with poses leaning into the body and angle
  // limits: bones stuck between a collider and their limit, so the arc
  // search runs (one stuck bone per group and several).
  for (int k = 0; k < 6; ++k) {
    LevelScenario s;
    s.chains = k < 3 ? 7 + k : 16 + 3 * k;
    s.name = absl::StrCat(s.chains, " chains, collider ", k);
    s.inward = true;
    s.branch = k % 2 == 0;
    s.desc.settings.radius = 1.5f;
    s.desc.settings.limit_angle_degrees = 40.0f + 10.0f * static_cast<float>(k);
    s.desc.space =
        k % 2 ? SimulationSpace::kWorld : SimulationSpace::kComponent;
    s.colliders = 1 << k;
    s.teleports = k % 3 == 0;
    out.push_back(s);
  }
  // Standing still: settling onto the colliders and resting there.
  LevelScenario still;
  still.name = "36 chains at rest";
  still.chains = 36;
  still.animate = false;
  still.desc.settings.limit_angle_degrees = 60.0f;
  out.push_back(still);
  return out;
}

// 300 frames of `scenario` at the active SIMD level: every frame's output
// pose, state and report, as bytes.
std::string RunLevelScenario(const LevelScenario& scenario,
                             bool* prefers_wide) {
  std::vector<std::string> roots;
  const Skeleton skeleton =
      MakeFan(scenario.chains, scenario.branch, scenario.inward, &roots);
  SpringRigDesc desc = scenario.desc;
  desc.root_joints = roots;
  if (scenario.branch) desc.excluded_joints = {"acc"};
  Sim sim(skeleton, desc);
  *prefers_wide = sim.rig.prefers_wide_lanes();
  sim.colliders = LevelColliders(scenario.colliders);
  sim.forces.gravity = Gravity();
  if (scenario.wind) {
    sim.forces.wind.speed = 90.0f;
    sim.forces.wind.direction = Eigen::Vector3f(1, 0, 1);
    sim.forces.wind.noise_amplitude = 0.6f;
    sim.forces.wind.noise_seed = 77;
  }
  sim.forces.external_force = Eigen::Vector3f(5, 0, -3);
  sim.forces.external_force_space =
      scenario.external_world ? ForceSpace::kWorld : ForceSpace::kComponent;
  std::string bytes;
  auto put = [&bytes](const void* p, size_t n) {
    bytes.append(static_cast<const char*>(p), n);
  };
  const LocalPose rest = RestPose(skeleton);
  // Steps of one, several (some clamped) and none; 1/144 s leaves leftovers.
  const float dts[] = {1.0f / 60.0f, 1.0f / 60.0f, 2.5f / 60.0f, 1.0f / 144.0f,
                       0.0f,         1.0f / 60.0f, 0.3f};
  for (int frame = 0; frame < 300; ++frame) {
    const float t = static_cast<float>(frame) / 60.0f;
    LocalPose input = rest;
    if (scenario.animate) {
      for (int j = 0; j < skeleton.num_joints(); ++j) {
        const float w = 0.35f * std::sin(3.0f * t + 0.7f * j);
        input[j].rotation = Eigen::Quaternionf(Eigen::AngleAxisf(
            w, Eigen::Vector3f(0.3f, 1.0f, 0.5f * (j % 3)).normalized()));
      }
      input[0].rotation = Eigen::AngleAxisf(0.8f * std::sin(1.3f * t),
                                            Eigen::Vector3f::UnitY());
    }
    // Walking a circle, then (teleports) jumping 1000 units at frame 100
    // and turning 0.8 rad at frame 200; the state is reset at frame 150.
    Transform component;
    const float a = scenario.animate ? 2.0f * kPi * t / 4.0f : 0.0f;
    component.translation =
        Eigen::Vector3f(100.0f * std::cos(a), 0.0f, 100.0f * std::sin(a));
    component.rotation = Eigen::AngleAxisf(-a, Eigen::Vector3f::UnitY());
    component.scale = Eigen::Vector3f::Constant(scenario.scale);
    if (scenario.teleports && frame >= 100) {
      component.translation += Eigen::Vector3f(1000, 0, 0);
    }
    if (scenario.teleports && frame >= 200) {
      component.rotation =
          component.rotation *
          Eigen::Quaternionf(Eigen::AngleAxisf(0.8f, Eigen::Vector3f::UnitY()));
    }
    if (frame == 150) sim.state = DynamicsState();
    const absl::Status status = sim.Frame(input, dts[frame % 7], component);
    EXPECT_TRUE(status.ok())
        << scenario.name << " frame " << frame << ": " << status;
    if (!status.ok()) return bytes;
    for (const Transform& x : sim.output) {
      put(x.translation.data(), 3 * sizeof(float));
      put(x.rotation.coeffs().data(), 4 * sizeof(float));
      put(x.scale.data(), 3 * sizeof(float));
    }
    for (const auto* v : {&sim.state.positions, &sim.state.previous_positions,
                          &sim.state.previous_pose_positions}) {
      for (const Eigen::Vector3f& p : *v) put(p.data(), 3 * sizeof(float));
    }
    put(&sim.state.leftover_time, sizeof(float));
    put(&sim.state.step_count, sizeof(sim.state.step_count));
    const int report[] = {sim.report.substeps, sim.report.initialized,
                          sim.report.teleported, sim.report.time_clamped};
    put(report, sizeof(report));
  }
  return bytes;
}

TEST(SpringBones, DetectedSimdLevelGivesTheBitsOfSse2) {
  if (DetectedSimdLevel() == SimdLevel::kSse2) {
    GTEST_SKIP() << "this CPU has no AVX2: only the SSE2 kernels run here";
  }
  ScopedMaxSimdLevel restore;
  int wide_rigs = 0;
  for (const LevelScenario& scenario : LevelScenarios()) {
    bool prefers_wide = false;
    SetMaxSimdLevel(SimdLevel::kSse2);
    const std::string sse2 = RunLevelScenario(scenario, &prefers_wide);
    SetMaxSimdLevel(DetectedSimdLevel());
    ASSERT_EQ(ActiveSimdLevel(), SimdLevel::kAvx2);
    const std::string detected = RunLevelScenario(scenario, &prefers_wide);
    wide_rigs += prefers_wide ? 1 : 0;
    ASSERT_EQ(sse2.size(), detected.size()) << scenario.name;
    ASSERT_GT(sse2.size(), 0u);
    if (std::memcmp(sse2.data(), detected.data(), sse2.size()) != 0) {
      size_t first = 0;
      while (sse2[first] == detected[first]) ++first;
      ADD_FAILURE() << scenario.name << ": first difference at frame "
                    << first * 300 / sse2.size();
    }
  }
  // The eight-lane kernels did run (most rigs of 16 chains or more).
  EXPECT_GE(wide_rigs, 10) << "of " << LevelScenarios().size();
}

// ---------------------------------------------------------------------------
// A ponytail on real motion capture.

std::string DataPath(const std::string& file) {
  return absl::StrCat(POSEWIRE_TEST_DATA_DIR, "/", file);
}

TEST(SpringBones, PonytailOnTheCmuRunStaysFiniteAndBounded) {
  auto asset = ReadBvhFile(DataPath("cmu_49_04_run_leap.bvh"));
  if (!asset.ok() && absl::IsUnimplemented(asset.status())) {
    GTEST_SKIP() << "BVH reader not available yet: " << asset.status();
  }
  ASSERT_TRUE(asset.ok()) << asset.status();
  ASSERT_FALSE(asset->clips.empty());
  const Skeleton& run = asset->skeleton;
  const Clip& clip = asset->clips[0];
  const int head = run.FindJoint("Head");
  ASSERT_GE(head, 0);

  // The run skeleton plus a ponytail of six joints behind the head. The
  // BVH is in CMU units (about 6 cm), Y up, facing +Z.
  SkeletonDesc d;
  d.joint_names.assign(run.joint_names().begin(), run.joint_names().end());
  d.parents.assign(run.parents().begin(), run.parents().end());
  d.rest_pose.assign(run.rest_pose().begin(), run.rest_pose().end());
  const int tail_joints = 6;
  const Eigen::Vector3f tail_bone(0.0f, -0.9f, -0.35f);
  for (int k = 0; k < tail_joints; ++k) {
    d.joint_names.push_back(absl::StrCat("Ponytail", k));
    d.parents.push_back(k == 0 ? head : static_cast<int>(d.parents.size()) - 1);
    Transform t;
    t.translation = k == 0 ? Eigen::Vector3f(0.0f, 1.2f, -1.0f) : tail_bone;
    d.rest_pose.push_back(t);
  }
  auto created = Skeleton::Create(d);
  ASSERT_TRUE(created.ok()) << created.status();
  const Skeleton skeleton = *std::move(created);
  const int first = run.num_joints();
  const float chain_length = tail_bone.norm() * (tail_joints - 1);

  SpringCollider skull;
  skull.attachment = ColliderAttachment::kBone;
  skull.bone = head;
  skull.offset.translation = Eigen::Vector3f(0.0f, 1.0f, 0.3f);
  skull.radius = 1.1f;

  size_t frames = 0;
  for (const JointTracks& t : clip.tracks) {
    frames = std::max(frames, t.rotation.times.size());
  }
  ASSERT_GT(frames, 100u);
  const float dt = clip.duration / static_cast<float>(frames - 1);

  for (SimulationSpace space :
       {SimulationSpace::kComponent, SimulationSpace::kWorld}) {
    SpringRigDesc desc;
    desc.root_joints = {"Ponytail0"};
    desc.space = space;
    desc.dummy_tip_length = 0.5f;
    desc.tip_axis = SpringTipAxis::kAlongBone;
    desc.settings.radius = 0.2f;
    desc.settings.limit_angle_degrees = 75.0f;
    Sim sim(skeleton, desc);
    sim.forces.gravity = Eigen::Vector3f(0.0f, -160.0f, 0.0f);  // 9.8 m/s^2
    sim.colliders = {skull};
    float largest_swing = 0.0f;
    for (size_t k = 0; k < frames; ++k) {
      LocalPose input = RestPose(skeleton);
      for (int j = 0; j < run.num_joints(); ++j) {
        const JointTracks& tracks = clip.tracks[j];
        if (!tracks.translation.empty()) {
          input[j].translation = tracks.translation.key_value(k);
        }
        if (!tracks.rotation.empty()) {
          input[j].rotation = tracks.rotation.key_value(k);
        }
      }
      ASSERT_TRUE(sim.Frame(input, dt).ok()) << "frame " << k;
      const auto want = FkPositions(skeleton, input);
      const auto got = FkPositions(skeleton, sim.output);
      for (int j = 0; j < skeleton.num_joints(); ++j) {
        ASSERT_TRUE(IsFinite(sim.output[j])) << "frame " << k;
        ASSERT_NEAR(sim.output[j].rotation.norm(), 1.0f, 1e-4f);
        if (j < first) {
          // The body is untouched.
          ASSERT_EQ(sim.output[j], input[j]) << "frame " << k << " joint " << j;
        }
      }
      // The ponytail root stays where the head puts it; every bone keeps
      // its length, so the whole tail stays within reach of its root.
      ASSERT_LT((got[first] - want[first]).norm(), 1e-3f);
      for (int t = 1; t < tail_joints; ++t) {
        ASSERT_NEAR((got[first + t] - got[first + t - 1]).norm(),
                    tail_bone.norm(), 1e-4f)
            << SimulationSpaceName(space) << " frame " << k;
        const float swing = AngleBetween(got[first + t] - got[first + t - 1],
                                         want[first + t] - want[first + t - 1]);
        ASSERT_LE(swing * 180.0f / kPi, 75.0f + 1e-2f);
        largest_swing = std::max(largest_swing, swing);
      }
      ASSERT_LE((got[first + tail_joints - 1] - got[first]).norm(),
                chain_length + 1e-3f);
      for (const Eigen::Vector3f& p : sim.state.positions) {
        ASSERT_TRUE(p.allFinite());
      }
    }
    // The tail really moved with the run.
    EXPECT_GT(largest_swing * 180.0f / kPi, 5.0f) << SimulationSpaceName(space);
  }
}

}  // namespace spring_bones_test
}  // namespace posewire
