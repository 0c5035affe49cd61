// GroundJob on real motion: the CMU walk and run (BVH, 120 Hz) and Fox.glb's
// walk (four legs), over a 15 degree ramp, 20 cm steps and a noisy
// heightfield, plus flat ground (bit for bit) and bad input.
//
// Units. CMU's BVH files are in the ASF's length unit, 1/0.45 inch = 5.644
// cm (the thigh, 7.3 units, is 41 cm); Fox.glb's are centimetres.
//
// The game's part. The grounder corrects feet for ground that differs from
// the clip's floor near the character; placing the character on the ground
// at large is the character controller's job (FinalIK's Grounder sits on
// one). So each frame the clip's root is first lifted by a controller
// height: the ground under the pelvis (ramp, heightfield) or the stairs'
// mean slope (steps), and the clip's floor with it.
//
// Measures, during the clip's contact frames (a foot joint within 3 cm of
// its lowest height over the clip and moving under 50 cm/s): each foot's
// sole, the floor points straight under its ankle and toe in the clip
// carried with the foot, must lie on the ground: no point below it by more
// than 0.5 cm (penetration) and the lowest at most 1 cm above it (float).
// The foot's up axis is within 3 degrees of the ground normal; the pelvis
// offset moves at most 2 cm between frames, with the smoothing state
// threaded from frame to frame.
#include "solver_core/analytic_ik/ground.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "solver_core/io/asset_reader.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/model/pose.h"
#include "solver_core/pose_ops/sampling_job.h"
#include "tests/core/chain_ik_real_data.h"

namespace posewire {
namespace ground_test {

using ::testing::HasSubstr;
using testing_util::LoadRealClip;

constexpr float kPi = 3.14159265f;

struct Character {
  std::string name;
  Skeleton skeleton;
  std::vector<std::vector<Transform>> frames;
  float dt = 1.0f / 120.0f;
  float cm = 1.0f;  // model units per centimetre
  int pelvis = -1;
  std::vector<GroundLeg> legs;
};

int Find(const Skeleton& s, const char* name) {
  const int j = s.FindJoint(name);
  EXPECT_GE(j, 0) << name;
  return j;
}

GroundLeg Leg(const Skeleton& s, const char* hip, const char* knee,
              const char* ankle, const char* toe) {
  GroundLeg leg;
  leg.hip = Find(s, hip);
  leg.knee = Find(s, knee);
  leg.ankle = Find(s, ankle);
  leg.toe = toe == nullptr ? -1 : Find(s, toe);
  return leg;
}

// A CMU clip whose legs are named with the given prefixes' joints.
Character Cmu(const char* file, const char* hip, const char* knee,
              const char* ankle, const char* toe) {
  testing_util::RealClip clip = LoadRealClip(file);
  Character c;
  c.name = file;
  c.skeleton = clip.skeleton;
  // Frame 0 of these files is a calibration pose, not part of the motion.
  c.frames.assign(clip.frames.begin() + 1, clip.frames.end());
  c.cm = 0.45f / 2.54f;
  c.pelvis = Find(c.skeleton, "Hips");
  for (const char* side : {"Left", "Right"}) {
    auto name = [&](const char* part) { return std::string(side) + part; };
    c.legs.push_back(Leg(c.skeleton, name(hip).c_str(), name(knee).c_str(),
                         name(ankle).c_str(), name(toe).c_str()));
  }
  return c;
}

const Character& Walk() {
  static const Character* c =
      new Character(Cmu("cmu_131_01_walk.bvh", "Hip", "Knee", "Ankle", "Toe"));
  return *c;
}

const Character& RunLeap() {
  static const Character* c = new Character(
      Cmu("cmu_49_04_run_leap.bvh", "UpLeg", "Leg", "Foot", "ToeBase"));
  return *c;
}

const Character& Fox() {
  static const Character* fox = [] {
    absl::StatusOr<ImportedAsset> asset =
        ReadAssetFile(std::string(POSEWIRE_TEST_DATA_DIR) + "/Fox.glb");
    EXPECT_TRUE(asset.ok()) << asset.status();
    auto* c = new Character;
    c->name = "Fox.glb Walk";
    c->skeleton = asset->skeleton;
    c->dt = 1.0f / 60.0f;
    const Clip* walk = nullptr;
    for (const Clip& clip : asset->clips) {
      if (clip.name == "Walk") walk = &clip;
    }
    EXPECT_NE(walk, nullptr);
    for (float t = 0.0f; t <= walk->duration; t += c->dt) {
      std::vector<Transform> pose = RestPose(c->skeleton);
      SamplingJob job;
      job.skeleton = &c->skeleton;
      job.clip = walk;
      job.time = t;
      job.output = absl::MakeSpan(pose);
      EXPECT_TRUE(job.Run().ok());
      c->frames.push_back(std::move(pose));
    }
    const Skeleton& s = c->skeleton;
    c->pelvis = Find(s, "b_Hip_01");
    c->legs = {Leg(s, "b_LeftLeg01_015", "b_LeftLeg02_016", "b_LeftFoot01_017",
                   "b_LeftFoot02_018"),
               Leg(s, "b_RightLeg01_019", "b_RightLeg02_020",
                   "b_RightFoot01_021", "b_RightFoot02_022"),
               Leg(s, "b_LeftUpperArm_09", "b_LeftForeArm_010",
                   "b_LeftHand_011", nullptr),
               Leg(s, "b_RightUpperArm_06", "b_RightForeArm_07",
                   "b_RightHand_08", nullptr)};
    return c;
  }();
  return *fox;
}

// The ground, as the test knows it: height and unit normal at (x, z).
struct Terrain {
  std::function<float(float, float)> height;
  std::function<Eigen::Vector3f(float, float)> normal;
  // Where the character controller puts the clip's floor, given the
  // pelvis's model position in the clip.
  std::function<float(const Eigen::Vector3f&)> controller;
  // The job samples this itself instead of taking client samples.
  const Heightfield* field = nullptr;
};

// The horizontal direction the clip travels in (+z for a clip in place).
Eigen::Vector3f Travel(const Character& c) {
  const Eigen::Vector3f d =
      c.frames.back()[0].translation - c.frames.front()[0].translation;
  const Eigen::Vector3f flat(d.x(), 0.0f, d.z());
  if (flat.norm() < 10.0f * c.cm) return Eigen::Vector3f::UnitZ();
  return flat.normalized();
}

Terrain Ramp(const Character& c, float degrees) {
  const Eigen::Vector3f dir = Travel(c);
  const float slope = std::tan(degrees * kPi / 180.0f);
  Terrain t;
  t.height = [dir, slope](float x, float z) {
    return slope * (dir.x() * x + dir.z() * z);
  };
  const Eigen::Vector3f n =
      Eigen::Vector3f(-slope * dir.x(), 1.0f, -slope * dir.z()).normalized();
  t.normal = [n](float, float) { return n; };
  t.controller = [h = t.height](const Eigen::Vector3f& p) {
    return h(p.x(), p.z());
  };
  return t;
}

// Stairs rising `rise` every `tread` along the clip's travel; the
// controller follows their mean slope.
Terrain Steps(const Character& c, float rise, float tread) {
  const Eigen::Vector3f dir = Travel(c);
  Terrain t;
  t.height = [dir, rise, tread](float x, float z) {
    return rise * std::floor((dir.x() * x + dir.z() * z) / tread);
  };
  t.normal = [](float, float) { return Eigen::Vector3f::UnitY(); };
  t.controller = [dir, rise, tread](const Eigen::Vector3f& p) {
    return rise * ((dir.x() * p.x() + dir.z() * p.z()) / tread) - 0.5f * rise;
  };
  return t;
}

struct Stats {
  float penetration = 0.0f;  // deepest sole point below the ground
  float floating = 0.0f;     // highest lowest-sole-point above the ground
  float tilt_error = 0.0f;   // degrees, foot up vs the (clamped) normal
  float pelvis_jump = 0.0f;  // largest pelvis offset change between frames
  int contacts = 0;          // foot-frames measured
};

struct Params {
  float max_step_height = 0.0f;  // 0: 50 cm
  float pelvis_speed = 0.0f;
  float foot_speed = 0.0f;
  float weight = 1.0f;
};

Eigen::Vector3f Pos(const std::vector<Transform>& model, int j) {
  return model[j].translation;
}

// Grounds every frame of `c` on `terrain`, threading the state, and
// measures the contact frames.
Stats Ground(const Character& c, const Terrain& terrain, const Params& p) {
  const Skeleton& s = c.skeleton;
  // The clip's floor and contact frames, from the clip alone.
  std::vector<std::vector<Transform>> clip_model;
  for (const auto& f : c.frames) {
    clip_model.push_back(testing_util::ModelOf(s, f));
  }
  float floor = 1e30f;
  for (const auto& m : clip_model) {
    for (const GroundLeg& leg : c.legs) {
      floor = std::min(floor, Pos(m, leg.ankle).y());
      if (leg.toe >= 0) floor = std::min(floor, Pos(m, leg.toe).y());
    }
  }
  auto lowest = [&](int joint) {
    float low = 1e30f;
    for (const auto& m : clip_model) low = std::min(low, Pos(m, joint).y());
    return low;
  };
  // Vertical speed: a clip walked in place (Fox's) slides its planted
  // feet back at the walking speed.
  auto in_contact = [&](size_t f, int joint, float low) {
    if (f == 0) return false;
    const float speed = std::abs(Pos(clip_model[f], joint).y() -
                                 Pos(clip_model[f - 1], joint).y()) /
                        c.dt;
    return Pos(clip_model[f], joint).y() - low < 3.0f * c.cm &&
           speed < 20.0f * c.cm;
  };

  Stats stats;
  GroundState state;
  float previous_offset = 0.0f;
  for (size_t f = 0; f < c.frames.size(); ++f) {
    std::vector<Transform> pose = c.frames[f];
    const float lift = terrain.controller(Pos(clip_model[f], c.pelvis));
    pose[0].translation.y() += lift;
    const std::vector<Transform> in_model = testing_util::ModelOf(s, pose);
    std::vector<GroundSample> samples;
    for (const GroundLeg& leg : c.legs) {
      // The client's rays: under the ankle and the toe, the higher hit.
      GroundSample sample;
      sample.hit = true;
      for (int j : {leg.ankle, leg.toe}) {
        if (j < 0) continue;
        const Eigen::Vector3f q = Pos(in_model, j);
        const float h = terrain.height(q.x(), q.z());
        if (j == leg.ankle || h > sample.point.y()) {
          sample.point = Eigen::Vector3f(q.x(), h, q.z());
          sample.normal = terrain.normal(q.x(), q.z());
        }
      }
      samples.push_back(sample);
    }
    std::vector<Transform> out(pose.size());
    GroundJob job;
    job.skeleton = &s;
    job.input = pose;
    job.parent_model = ParentModelTransformOrRoot(s, pose, c.pelvis);
    job.pelvis = c.pelvis;
    job.legs = c.legs;
    if (terrain.field != nullptr) {
      job.heightfield = terrain.field;
    } else {
      job.samples = samples;
    }
    job.floor_height = floor + lift;
    job.max_step_height =
        p.max_step_height > 0.0f ? p.max_step_height : 50.0f * c.cm;
    job.pelvis_speed = p.pelvis_speed;
    job.foot_speed = p.foot_speed;
    job.weight = p.weight;
    job.dt = c.dt;
    job.state = &state;
    job.next_state = &state;
    job.output = absl::MakeSpan(out);
    const absl::Status status = job.Run();
    EXPECT_TRUE(status.ok()) << status;
    if (!status.ok()) return stats;

    const std::vector<Transform> out_model = testing_util::ModelOf(s, out);
    const float offset =
        Pos(out_model, c.pelvis).y() - Pos(in_model, c.pelvis).y();
    if (f > 0) {
      stats.pelvis_jump = std::max(stats.pelvis_jump,
                                   std::abs(offset - previous_offset) / c.cm);
    }
    previous_offset = offset;

    for (const GroundLeg& leg : c.legs) {
      const bool contact =
          in_contact(f, leg.ankle, lowest(leg.ankle)) ||
          (leg.toe >= 0 && in_contact(f, leg.toe, lowest(leg.toe)));
      if (!contact) continue;
      ++stats.contacts;
      float low = 1e30f;
      for (int j : {leg.ankle, leg.toe}) {
        if (j < 0) continue;
        // The floor point under the joint, carried with it.
        Eigen::Vector3f sole = Pos(in_model, j);
        sole.y() = floor + lift;
        const Eigen::Vector3f local = in_model[j].InverseTransformPoint(sole);
        const Eigen::Vector3f placed = out_model[j].TransformPoint(local);
        const Eigen::Vector3f n = terrain.normal(placed.x(), placed.z());
        const float gap =
            (placed.y() - terrain.height(placed.x(), placed.z())) * n.y();
        stats.penetration = std::max(stats.penetration, -gap / c.cm);
        low = std::min(low, gap);
      }
      stats.floating = std::max(stats.floating, low / c.cm);
      // The foot's up axis against the ground normal at the foot's middle.
      Eigen::Vector3f a = Pos(out_model, leg.ankle);
      if (leg.toe >= 0) a = 0.5f * (a + Pos(out_model, leg.toe));
      const Eigen::Vector3f up_local =
          in_model[leg.ankle].rotation.conjugate() * Eigen::Vector3f::UnitY();
      const Eigen::Vector3f up = out_model[leg.ankle].rotation * up_local;
      const Eigen::Vector3f n = terrain.normal(a.x(), a.z());
      const float degrees =
          std::atan2(up.cross(n).norm(), up.dot(n)) * 180.0f / kPi;
      stats.tilt_error = std::max(stats.tilt_error, degrees);
    }
  }
  return stats;
}

void ExpectGrounded(const Stats& s, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_GT(s.contacts, 20);
  EXPECT_LE(s.penetration, 0.5f);
  EXPECT_LE(s.floating, 1.0f);
  EXPECT_LE(s.tilt_error, 3.0f);
  EXPECT_LE(s.pelvis_jump, 2.0f);
  std::printf(
      "%s: %d contacts, penetration %.3f cm, float %.3f cm, tilt %.2f "
      "deg, pelvis jump %.3f cm\n",
      what.c_str(), s.contacts, s.penetration, s.floating, s.tilt_error,
      s.pelvis_jump);
}

constexpr Params kSmoothed = {.max_step_height = 0.0f,
                              .pelvis_speed = 10.0f,
                              .foot_speed = 0.0f,
                              .weight = 1.0f};

TEST(GroundJob, WalkOnRampKeepsSolesOnTheGround) {
  ExpectGrounded(Ground(Walk(), Ramp(Walk(), 15.0f), kSmoothed), "walk ramp");
}

TEST(GroundJob, RunOnRampKeepsSolesOnTheGround) {
  ExpectGrounded(Ground(RunLeap(), Ramp(RunLeap(), 15.0f), kSmoothed),
                 "run ramp");
}

TEST(GroundJob, WalkUpStepsKeepsSolesOnTheGround) {
  const Character& c = Walk();
  ExpectGrounded(Ground(c, Steps(c, 20.0f * c.cm, 60.0f * c.cm), kSmoothed),
                 "walk steps");
}

TEST(GroundJob, RunUpStepsKeepsSolesOnTheGround) {
  const Character& c = RunLeap();
  ExpectGrounded(Ground(c, Steps(c, 20.0f * c.cm, 60.0f * c.cm), kSmoothed),
                 "run steps");
}

// 2 cm noise on a 50 cm grid under the whole clip, from a fixed LCG.
void ExpectGroundedOnNoisyHeightfield(const Character& c,
                                      const std::string& what) {
  Heightfield field;
  field.spacing = 50.0f * c.cm;
  float min_x = 1e30f, max_x = -1e30f, min_z = 1e30f, max_z = -1e30f;
  for (const auto& f : c.frames) {
    min_x = std::min(min_x, f[0].translation.x());
    max_x = std::max(max_x, f[0].translation.x());
    min_z = std::min(min_z, f[0].translation.z());
    max_z = std::max(max_z, f[0].translation.z());
  }
  field.origin_x = min_x - 200.0f * c.cm;
  field.origin_z = min_z - 200.0f * c.cm;
  field.columns = static_cast<int>((max_x - min_x) / field.spacing) + 12;
  field.rows = static_cast<int>((max_z - min_z) / field.spacing) + 12;
  std::vector<float> heights(static_cast<size_t>(field.columns) * field.rows);
  uint32_t seed = 12345;
  for (float& h : heights) {
    seed = seed * 1664525u + 1013904223u;
    h = (static_cast<float>(seed >> 8) / 16777216.0f - 0.5f) * 2.0f * 2.0f *
        c.cm;
  }
  field.heights = heights;
  Terrain t;
  t.height = [&field](float x, float z) {
    float h = 0.0f;
    Eigen::Vector3f n;
    EXPECT_TRUE(field.Sample(x, z, &h, &n));
    return h;
  };
  t.normal = [&field](float x, float z) {
    float h = 0.0f;
    Eigen::Vector3f n = Eigen::Vector3f::UnitY();
    EXPECT_TRUE(field.Sample(x, z, &h, &n));
    return n;
  };
  t.controller = [](const Eigen::Vector3f&) { return 0.0f; };
  t.field = &field;
  ExpectGrounded(Ground(c, t, kSmoothed), what);
}

TEST(GroundJob, WalkOnNoisyHeightfieldKeepsSolesOnTheGround) {
  ExpectGroundedOnNoisyHeightfield(Walk(), "walk heightfield");
}

TEST(GroundJob, RunOnNoisyHeightfieldKeepsSolesOnTheGround) {
  ExpectGroundedOnNoisyHeightfield(RunLeap(), "run heightfield");
}

TEST(GroundJob, FoxFourFeetOnRamp) {
  ExpectGrounded(Ground(Fox(), Ramp(Fox(), 15.0f), kSmoothed), "fox ramp");
}

// Every component's bits (not the padding between them).
bool BitIdentical(absl::Span<const Transform> a,
                  absl::Span<const Transform> b) {
  for (size_t j = 0; j < a.size(); ++j) {
    if (std::memcmp(a[j].translation.data(), b[j].translation.data(),
                    3 * sizeof(float)) != 0 ||
        std::memcmp(a[j].rotation.coeffs().data(),
                    b[j].rotation.coeffs().data(), 4 * sizeof(float)) != 0 ||
        std::memcmp(a[j].scale.data(), b[j].scale.data(), 3 * sizeof(float)) !=
            0) {
      return false;
    }
  }
  return a.size() == b.size();
}

// The measure is not trivially met: the clip itself, weight 0, sinks into
// the ramp and floats above it, its feet flat.
TEST(GroundJob, WeightZeroLeavesTheClipOffTheRamp) {
  Params p = kSmoothed;
  p.weight = 0.0f;
  const Stats s = Ground(Walk(), Ramp(Walk(), 15.0f), p);
  EXPECT_GT(s.penetration, 5.0f);
  EXPECT_GT(s.floating, 5.0f);
  EXPECT_GT(s.tilt_error, 14.0f);
  EXPECT_EQ(s.pelvis_jump, 0.0f);
}

// A job on one of the character's poses, its legs on the given samples.
GroundJob JobOn(const Character& c, absl::Span<const Transform> pose,
                absl::Span<const GroundSample> samples,
                absl::Span<Transform> out) {
  GroundJob job;
  job.skeleton = &c.skeleton;
  job.input = pose;
  job.pelvis = c.pelvis;
  job.legs = c.legs;
  job.samples = samples;
  job.output = out;
  return job;
}

TEST(GroundJob, FlatGroundAtTheClipFloorReturnsTheInputBitForBit) {
  const Character& c = Walk();
  for (size_t f = 0; f < c.frames.size(); f += 37) {
    const std::vector<Transform>& pose = c.frames[f];
    std::vector<GroundSample> samples(c.legs.size());
    const std::vector<Transform> model =
        testing_util::ModelOf(c.skeleton, pose);
    for (size_t i = 0; i < c.legs.size(); ++i) {
      const Eigen::Vector3f a = Pos(model, c.legs[i].ankle);
      samples[i].hit = true;
      samples[i].point = Eigen::Vector3f(a.x() + 3.0f, 0.25f, a.z() - 1.0f);
    }
    std::vector<Transform> out(pose.size());
    GroundState state;
    GroundJob job = JobOn(c, pose, samples, absl::MakeSpan(out));
    job.floor_height = 0.25f;
    job.pelvis_speed = 5.0f;
    job.dt = c.dt;
    job.state = &state;
    job.next_state = &state;
    ASSERT_TRUE(job.Run().ok());
    EXPECT_TRUE(BitIdentical(out, pose)) << "frame " << f;
  }
}

// A Z-up rig (a DCC's armature space) is the Y-up one turned: the same
// samples turned with it and up = +Z give the same local pose, to float
// rounding, as the Y-up job.
TEST(GroundJob, ZUpRigGivesTheYUpAnswer) {
  const Character& c = Walk();
  const Terrain ramp = Ramp(c, 15.0f);
  // +90 degrees about x takes +Y to +Z.
  const Eigen::Quaternionf y_to_z(
      Eigen::AngleAxisf(0.5f * kPi, Eigen::Vector3f::UnitX()));
  Transform turn = Transform::Identity();
  turn.rotation = y_to_z;
  int grounded = 0;
  for (size_t f = 0; f < c.frames.size(); f += 41) {
    const std::vector<Transform>& pose = c.frames[f];
    const std::vector<Transform> model =
        testing_util::ModelOf(c.skeleton, pose);
    // The ramp passes under the pelvis at the clip's floor (the
    // controller's part), so the feet are a step's height off at most.
    const Eigen::Vector3f pelvis = Pos(model, c.pelvis);
    const float base = ramp.height(pelvis.x(), pelvis.z());
    std::vector<GroundSample> y_up(c.legs.size()), z_up(c.legs.size());
    for (size_t i = 0; i < c.legs.size(); ++i) {
      const Eigen::Vector3f a = Pos(model, c.legs[i].ankle);
      y_up[i] = {.hit = true,
                 .point = Eigen::Vector3f(
                     a.x(), ramp.height(a.x(), a.z()) - base, a.z()),
                 .normal = ramp.normal(a.x(), a.z())};
      z_up[i] = {.hit = true,
                 .point = y_to_z * y_up[i].point,
                 .normal = y_to_z * y_up[i].normal};
    }
    GroundJob job;
    job.skeleton = &c.skeleton;
    job.input = pose;
    job.pelvis = c.pelvis;
    job.legs = c.legs;
    job.max_step_height = 10.0f * c.cm;
    job.parent_model = ParentModelTransformOrRoot(c.skeleton, pose, c.pelvis);
    std::vector<Transform> expected(pose.size()), out(pose.size());
    GroundResult y_result, z_result;
    job.samples = y_up;
    job.output = absl::MakeSpan(expected);
    job.result = &y_result;
    ASSERT_TRUE(job.Run().ok());
    job.parent_model = Combine(turn, job.parent_model);
    job.samples = z_up;
    job.up = Eigen::Vector3f(0.0f, 0.0f, 2.0f);  // need not be unit
    job.output = absl::MakeSpan(out);
    job.result = &z_result;
    ASSERT_TRUE(job.Run().ok());
    EXPECT_EQ(z_result.grounded_legs, y_result.grounded_legs);
    grounded += y_result.grounded_legs;
    for (size_t j = 0; j < pose.size(); ++j) {
      EXPECT_LT((out[j].translation - expected[j].translation).norm(),
                1e-4f * (1.0f + expected[j].translation.norm()))
          << "frame " << f << " joint " << j;
      EXPECT_LT(out[j].rotation.angularDistance(expected[j].rotation), 1e-4f)
          << "frame " << f << " joint " << j;
    }
  }
  EXPECT_GT(grounded, 0);
}

// One frame of the walk grounded on the given samples, without smoothing:
// the pose, the grounded pose's model transforms and the job's result.
struct OneFrame {
  std::vector<Transform> model_in;
  std::vector<Transform> model_out;
  GroundResult result;
};

OneFrame GroundOneFrame(const std::vector<GroundSample>& samples,
                        float max_step_height, float max_tilt) {
  const Character& c = Walk();
  const std::vector<Transform>& pose = c.frames[0];
  std::vector<Transform> out(pose.size());
  OneFrame frame;
  GroundJob job = JobOn(c, pose, samples, absl::MakeSpan(out));
  job.max_step_height = max_step_height;
  job.max_tilt = max_tilt;
  job.parent_model = ParentModelTransformOrRoot(c.skeleton, pose, c.pelvis);
  job.result = &frame.result;
  EXPECT_TRUE(job.Run().ok());
  frame.model_in = testing_util::ModelOf(c.skeleton, pose);
  frame.model_out = testing_util::ModelOf(c.skeleton, out);
  return frame;
}

// Samples straight under each ankle of the walk's first frame, `rise`
// above the clip's floor (0), with the given normal.
std::vector<GroundSample> SamplesUnderAnkles(float rise,
                                             const Eigen::Vector3f& normal) {
  const Character& c = Walk();
  const std::vector<Transform> model =
      testing_util::ModelOf(c.skeleton, c.frames[0]);
  std::vector<GroundSample> samples(c.legs.size());
  for (size_t i = 0; i < c.legs.size(); ++i) {
    const Eigen::Vector3f a = Pos(model, c.legs[i].ankle);
    samples[i].hit = true;
    samples[i].point = Eigen::Vector3f(a.x(), rise, a.z());
    samples[i].normal = normal;
  }
  return samples;
}

// Ground above the clip's floor lifts the feet but never the pelvis.
TEST(GroundJob, RaisedGroundLiftsTheFeetButNeverThePelvis) {
  const Character& c = Walk();
  const OneFrame f =
      GroundOneFrame(SamplesUnderAnkles(5.0f * c.cm, Eigen::Vector3f::UnitY()),
                     50.0f * c.cm, 0.7853982f);
  EXPECT_EQ(f.result.pelvis_offset, 0.0f);
  EXPECT_LT((Pos(f.model_out, c.pelvis) - Pos(f.model_in, c.pelvis)).norm(),
            1e-4f * c.cm);
  EXPECT_EQ(f.result.grounded_legs, 2);
  for (size_t i = 0; i < c.legs.size(); ++i) {
    EXPECT_NEAR(f.result.foot_offsets[i], 5.0f * c.cm, 0.01f * c.cm) << i;
    const float lift = Pos(f.model_out, c.legs[i].ankle).y() -
                       Pos(f.model_in, c.legs[i].ankle).y();
    EXPECT_NEAR(lift, 5.0f * c.cm, 0.05f * c.cm) << "leg " << i;
  }
}

// A miss, and ground beyond max_step_height either way, leave that foot to
// the clip; the other foot is still grounded (here 5 cm down, so the pelvis
// goes down with it and the left-alone foot stays where the clip has it).
TEST(GroundJob, MissAndStepBeyondTheMaximumLeaveTheFootToTheClip) {
  const Character& c = Walk();
  for (const float left_rise : {-1.0f, 30.0f * c.cm, -30.0f * c.cm}) {
    std::vector<GroundSample> samples =
        SamplesUnderAnkles(-5.0f * c.cm, Eigen::Vector3f::UnitY());
    if (left_rise == -1.0f) {
      samples[0].hit = false;
    } else {
      samples[0].point.y() = left_rise;
    }
    const OneFrame f = GroundOneFrame(samples, 20.0f * c.cm, 0.7853982f);
    SCOPED_TRACE(left_rise == -1.0f ? "miss" : "beyond max_step_height");
    EXPECT_EQ(f.result.grounded_legs, 1);
    EXPECT_EQ(f.result.foot_offsets[0], 0.0f);
    EXPECT_NEAR(f.result.pelvis_offset, -5.0f * c.cm, 0.01f * c.cm);
    EXPECT_LT(
        (Pos(f.model_out, c.legs[0].ankle) - Pos(f.model_in, c.legs[0].ankle))
            .norm(),
        0.05f * c.cm);
    EXPECT_NEAR(Pos(f.model_out, c.legs[1].ankle).y() -
                    Pos(f.model_in, c.legs[1].ankle).y(),
                -5.0f * c.cm, 0.05f * c.cm);
  }
}

// A slope steeper than max_tilt tilts the feet by max_tilt and says so; a
// gentler one tilts them fully and does not.
TEST(GroundJob, SlopeSteeperThanMaxTiltIsClampedToIt) {
  const Character& c = Walk();
  const float max_tilt = 20.0f * kPi / 180.0f;
  for (const float degrees : {15.0f, 35.0f}) {
    const float a = degrees * kPi / 180.0f;
    const Eigen::Vector3f normal(std::sin(a), std::cos(a), 0.0f);
    const OneFrame f = GroundOneFrame(SamplesUnderAnkles(0.0f, normal),
                                      50.0f * c.cm, max_tilt);
    SCOPED_TRACE(degrees);
    EXPECT_EQ(f.result.tilt_clamped, degrees > 20.0f);
    const float expected = std::min(a, max_tilt);
    for (const GroundLeg& leg : c.legs) {
      // The ankle's model rotation turns by the tilt from the clip's.
      const float turned = f.model_out[leg.ankle].rotation.angularDistance(
          f.model_in[leg.ankle].rotation);
      EXPECT_NEAR(turned, expected, 0.5f * kPi / 180.0f);
    }
  }
}

// A small valid job on the walk's first frame, for the bad-input tests.
struct BadInput : ::testing::Test {
  std::vector<Transform> pose = Walk().frames[0];
  std::vector<Transform> out = pose;
  std::vector<GroundLeg> legs = Walk().legs;
  std::vector<GroundSample> samples = std::vector<GroundSample>(2);
  std::vector<float> flat_heights = std::vector<float>(4, 0.0f);
  GroundJob job;
  // A valid 2 x 2 field at height 0, 1 apart.
  Heightfield FlatField() const {
    Heightfield field;
    field.columns = 2;
    field.rows = 2;
    field.spacing = 1.0f;
    field.heights = flat_heights;
    return field;
  }
  void SetUp() override {
    for (GroundSample& s : samples) s.hit = true;
    job.skeleton = &Walk().skeleton;
    job.input = pose;
    job.pelvis = Walk().pelvis;
    job.legs = legs;
    job.samples = samples;
    job.output = absl::MakeSpan(out);
  }
};

TEST_F(BadInput, ValidJobPasses) { EXPECT_TRUE(job.Validate().ok()); }

TEST_F(BadInput, LegThatIsNotAParentChain) {
  std::swap(legs[0].knee, legs[0].ankle);
  EXPECT_THAT(job.Validate().message(), HasSubstr("ground.legs[0].ankle"));
  std::swap(legs[0].knee, legs[0].ankle);
  legs[1].hip = legs[0].hip;
  EXPECT_THAT(job.Validate().message(), HasSubstr("ground.legs[1]"));
}

TEST_F(BadInput, NanSampleAndZeroNormal) {
  samples[1].point.x() = std::nanf("");
  EXPECT_THAT(job.Validate().message(), HasSubstr("ground.samples[1].point"));
  samples[1].point.x() = 0.0f;
  samples[0].normal = Eigen::Vector3f::Zero();
  EXPECT_THAT(job.Validate().message(),
              HasSubstr("ground.samples[0].normal: zero length"));
}

TEST_F(BadInput, UpThatIsZeroOrNotTheNormalsOrWithAHeightfield) {
  job.up = Eigen::Vector3f::Zero();
  EXPECT_THAT(job.Validate().message(), HasSubstr("ground.up: zero length"));
  job.up = Eigen::Vector3f::UnitZ();
  // The samples' normals are +Y: not up in a Z-up model space.
  EXPECT_THAT(job.Validate().message(),
              HasSubstr("ground.samples[0].normal: (0, 1, 0) does not point "
                        "up (normal . up <= 0 with up (0, 0, 1))"));
  for (GroundSample& sample : samples) sample.normal = Eigen::Vector3f::UnitZ();
  EXPECT_TRUE(job.Validate().ok());
  Heightfield field = FlatField();
  job.samples = {};
  job.heightfield = &field;
  EXPECT_THAT(job.Validate().message(),
              HasSubstr("ground.heightfield: needs up = +Y"));
}

TEST_F(BadInput, HeightfieldWithNanOrZeroSpacing) {
  Heightfield field = FlatField();
  field.spacing = 0.0f;
  job.samples = {};
  job.heightfield = &field;
  EXPECT_THAT(job.Validate().message(),
              HasSubstr("ground.heightfield.spacing: 0 is not finite"));
  field.spacing = std::nanf("");
  EXPECT_THAT(job.Validate().message(),
              HasSubstr("ground.heightfield.spacing"));
  field.spacing = 1.0f;
  const std::vector<float> nan_heights = {0.0f, 0.0f, std::nanf(""), 0.0f};
  field.heights = nan_heights;
  EXPECT_THAT(job.Validate().message(),
              HasSubstr("ground.heightfield.heights[2]"));
}

}  // namespace ground_test
}  // namespace posewire
