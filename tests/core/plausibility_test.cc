// The plausibility check (referee/plausibility.h) on hand-computed cases,
// bad input, and real motion.
//
// Limits are learnt (Euler XYZ relative to the rest pose, kLearnMargin on
// each side, none on the root) from cmu_01_01_jumps and
// cmu_01_03_climb_reach (the CMU 31-joint rig, MotionBuilder names). A
// limit carries over to another clip's joint only with the same layout,
// place and name: cmu_49_04_run_leap gets them; cmu_131_01_walk (the same
// layout, names and rest directions of its own), the 43-joint CMU rig and
// the glTF rigs get every check but the range, which needs limits of their
// own rig. Hands, fingers, toes and eyes are out of the range and motion
// checks; bones a rig's clips animate are out of the bone check.
//
// Honest frames: every frame of every other clip in tests/data (and, apart,
// of the two clips learnt from), each checked with the two frames before
// it at 120 Hz and at 60 Hz (both phases), and the other clips also as
// ticks of 128 and 100 Hz sample them (poses between the capture's keys),
// default thresholds: none may be flagged, over at least 10,000 distinct
// poses.
//
// Cheats go into the CMU clips at frames and joints drawn from a
// std::mt19937 with a fixed start value (draw order per injection:
// sequence, frame, then the cheat's own draws in the order the code reads
// them; a draw that does not fit starts the next injection's draws): a
// joint 20 degrees beyond its learnt limit, a bone stretched 10%, a 2 m
// root teleport in one frame (each at least 99% caught with the right
// check and joint), and, as figures only, a joint 20 degrees beyond the
// range the clips showed, snaps of 720 to 5,760 deg/s and the root's
// ground speed doubled for one second, under the defaults and under tight
// bounds.

#include "solver_core/referee/plausibility.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/casts.h"
#include "absl/strings/str_cat.h"
#include "solver_core/chain_ik/learned_limits.h"
#include "solver_core/io/asset_reader.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/model/pose.h"
#include "solver_core/pose_ops/sampling_job.h"

namespace posewire {
namespace plausibility_test {

using ::testing::HasSubstr;

constexpr float kPi = 3.14159265f;
constexpr float kDeg = kPi / 180.0f;
// Learnt ranges are widened by this on each side: cmu_49_04 (subject 49)
// goes up to 25 degrees past what subject 01's jumps and climbing show
// (lower back, right hip, left shoulder).
constexpr float kLearnMargin = 30.0f * kDeg;
// Metres: each rig's size (RigSize) is taken for a 1.75 m stature.
constexpr float kStature = 1.75f;

// One clip as the frames a game server would receive: local poses at a
// fixed tick.
struct Sequence {
  std::string name;
  const Skeleton* skeleton = nullptr;
  std::vector<std::vector<Transform>> frames;
  // Each frame's time in its clip, seconds.
  std::vector<float> times;
  float dt = 1.0f / 120.0f;
  float rig_size = 1.0f;
  // The learnt limits mapped onto this rig by joint name, or empty.
  std::vector<JointLimit> limits;
  // Observed ranges (no margin) on this rig's joints; samples 0 = none.
  std::vector<ObservedRange> observed;
  std::vector<uint8_t> joint_checks;
  // True for human motion capture (the cheats go into these).
  bool mocap = false;
};

struct Asset {
  std::string file;
  ImportedAsset asset;
};

const Asset& LoadAsset(const std::string& file) {
  static std::vector<Asset*>* cache = new std::vector<Asset*>();
  for (const Asset* a : *cache) {
    if (a->file == file) return *a;
  }
  absl::StatusOr<ImportedAsset> asset =
      ReadAssetFile(std::string(POSEWIRE_TEST_DATA_DIR) + "/" + file);
  EXPECT_TRUE(asset.ok()) << file << ": " << asset.status();
  auto* a = new Asset{file, asset.ok() ? std::move(*asset) : ImportedAsset()};
  cache->push_back(a);
  return *a;
}

// A clip sampled every `dt` seconds from `start` over its duration; each
// sample's time goes to `times` when given.
std::vector<std::vector<Transform>> SampleClip(
    const Skeleton& s, const Clip& clip, float start, float dt,
    std::vector<float>* times = nullptr) {
  std::vector<std::vector<Transform>> frames;
  const int count =
      static_cast<int>(std::floor((clip.duration - start) / dt + 1e-3f)) + 1;
  for (int k = 0; k < count; ++k) {
    std::vector<Transform> pose = RestPose(s);
    SamplingJob job;
    job.skeleton = &s;
    job.clip = &clip;
    job.time = start + static_cast<float>(k) * dt;
    job.mode = PlaybackMode::kClamp;
    // The asset reader validated the clip: checking every key on each
    // sample would make this quadratic in the clip's length.
    job.clip_validated = true;
    job.output = absl::MakeSpan(pose);
    EXPECT_TRUE(job.Run().ok());
    frames.push_back(std::move(pose));
    if (times != nullptr) times->push_back(job.time);
  }
  return frames;
}

// The limits are learnt from these (the CMU 31-joint rig, MotionBuilder
// names; subject 01). Their joints' names are how other clips' joints get
// a limit.
const char* const kLearnFiles[] = {"cmu_01_01_jumps.bvh",
                                   "cmu_01_03_climb_reach.bvh"};
// Honest motion capture: every other CMU clip. The first frame of
// cmu_49_04, cmu_02_03 and the pirouette is the rig's calibration pose,
// not part of the motion: those start at their second frame.
struct HonestFile {
  const char* file;
  int skip;
};
const HonestFile kHonestBvh[] = {{"cmu_131_01_walk.bvh", 0},
                                 {"cmu_49_04_run_leap.bvh", 1},
                                 {"cmu_02_03_run_daz.bvh", 12},
                                 {"threejs_pirouette_cmu.bvh", 12}};
// The clips the limits come from, for the cheats that need no limits of
// another clip.
const HonestFile kLearnBvh[] = {{"cmu_01_01_jumps.bvh", 1},
                                {"cmu_01_03_climb_reach.bvh", 1}};
const char* const kGltfFiles[] = {"Fox.glb", "RobotExpressive.glb"};

struct Learnt {
  const Skeleton* skeleton = nullptr;
  ObservedRanges observed;
  std::vector<JointLimit> limits;
};

const Learnt& LearntLimits() {
  static const Learnt* learnt = [] {
    auto* l = new Learnt;
    l->skeleton = &LoadAsset(kLearnFiles[0]).asset.skeleton;
    LearnLimitsOptions options;
    options.margin = kLearnMargin;
    for (const char* file : kLearnFiles) {
      absl::StatusOr<ObservedRanges> o =
          ObserveClip(*l->skeleton, LoadAsset(file).asset.clips[0], options);
      EXPECT_TRUE(o.ok()) << o.status();
      if (l->observed.joints.empty()) {
        l->observed = *o;
      } else {
        EXPECT_TRUE(MergeObservedRanges(l->observed, *o).ok());
      }
    }
    absl::StatusOr<LearnedLimits> f =
        FinalizeLimits(*l->skeleton, l->observed, options);
    EXPECT_TRUE(f.ok()) << f.status();
    l->limits = f->limits;
    // The root's rotation is where the character faces: no range.
    l->limits[0] = JointLimit();
    l->observed.joints[0].samples = 0;
    return l;
  }();
  return *learnt;
}

bool SameLayout(const Skeleton& a, const Skeleton& b) {
  if (a.num_joints() != b.num_joints()) return false;
  for (int j = 0; j < a.num_joints(); ++j) {
    if (a.parent(j) != b.parent(j)) return false;
  }
  return true;
}

bool Contains(const std::string& name, const char* part) {
  std::string lower = name;
  for (char& c : lower) c = static_cast<char>(std::tolower(c));
  return lower.find(part) != std::string::npos;
}

// Hands, fingers, toes and eyes: motion capture tracks them with one or two
// markers, and their rotations jump by up to 180 degrees in a frame
// (cmu_131_01_walk's right wrist and thumb, cmu_49_04's toes). A referee
// leaves them out of the range and motion checks.
bool Extremity(const std::string& name) {
  for (const char* part : {"thumb", "finger", "index", "toe", "hand", "wrist",
                           "mid", "ring", "pinky", "eye"}) {
    if (Contains(name, part)) return true;
  }
  return false;
}

Sequence MakeSequence(const std::string& name, const Skeleton& s,
                      std::vector<std::vector<Transform>> frames, float dt,
                      bool mocap, absl::Span<const Clip> clips) {
  Sequence q;
  q.name = name;
  q.skeleton = &s;
  q.frames = std::move(frames);
  q.dt = dt;
  q.rig_size = RigSize(s);
  q.mocap = mocap;
  const Learnt& learnt = LearntLimits();
  q.joint_checks.assign(s.num_joints(), kCheckAll);
  bool any_limit = false;
  std::vector<JointLimit> limits(s.num_joints());
  q.observed.assign(s.num_joints(), ObservedRange());
  for (int j = 0; j < s.num_joints(); ++j) {
    if (Extremity(s.joint_name(j))) {
      q.joint_checks[j] &= static_cast<uint8_t>(~(kCheckRange | kCheckMotion));
    }
    // A limit carries over to a joint of the same name at the same place
    // in the same layout (cmu_131_01_walk has the layout but names, and
    // rest directions, of its own).
    const int k = SameLayout(s, *learnt.skeleton)
                      ? learnt.skeleton->FindJoint(s.joint_name(j))
                      : -1;
    if (k == j && learnt.limits[k].type != JointLimitType::kNone) {
      limits[j] = learnt.limits[k];
      q.observed[j] = learnt.observed.joints[k];
      any_limit = true;
    }
    // Bones a rig's own clips stretch (animated translations) are not
    // checked for length.
    for (const Clip& clip : clips) {
      if (s.parent(j) != kNoParent && !clip.tracks[j].translation.empty()) {
        q.joint_checks[j] &= static_cast<uint8_t>(~kCheckBone);
      }
    }
  }
  if (any_limit) q.limits = std::move(limits);
  return q;
}

// A game server's tick: every `stride`-th key of a capture from key
// `phase` (glTF clips: every stride / 120 s from phase / 120 s), or, with
// `hz`, every 1 / hz s from each clip's first motion frame, so that most
// samples fall between the capture's keys (interpolated poses, as a client
// playing the clip at that rate would send).
struct Tick {
  int stride = 1;
  int phase = 0;
  float hz = 0.0f;
};

// The honest sequences at one tick. With `learnt`, the clips the limits
// come from instead, and no glTF.
std::vector<Sequence> HonestSequences(const Tick& tick, bool learnt = false) {
  std::vector<Sequence> out;
  const float dt = tick.hz > 0.0f ? 1.0f / tick.hz
                                  : static_cast<float>(tick.stride) / 120.0f;
  auto add = [&out](const std::string& name, const ImportedAsset& asset,
                    const Clip& clip, float start, float dt, bool mocap) {
    std::vector<float> times;
    Sequence q =
        MakeSequence(name, asset.skeleton,
                     SampleClip(asset.skeleton, clip, start, dt, &times), dt,
                     mocap, asset.clips);
    q.times = std::move(times);
    out.push_back(std::move(q));
  };
  for (const HonestFile& h : learnt ? absl::MakeConstSpan(kLearnBvh)
                                    : absl::MakeConstSpan(kHonestBvh)) {
    const Asset& a = LoadAsset(h.file);
    const Clip& clip = a.asset.clips[0];
    const float key_dt =
        clip.tracks[0].rotation.times[1] - clip.tracks[0].rotation.times[0];
    if (tick.hz > 0.0f) {
      add(h.file, a.asset, clip, static_cast<float>(h.skip) * key_dt, dt, true);
    } else {
      add(h.file, a.asset, clip,
          static_cast<float>(tick.phase + h.skip) * key_dt,
          key_dt * static_cast<float>(tick.stride), true);
    }
  }
  for (const char* file : kGltfFiles) {
    if (learnt) break;
    const Asset& a = LoadAsset(file);
    for (const Clip& clip : a.asset.clips) {
      add(std::string(file) + " " + clip.name, a.asset, clip,
          tick.hz > 0.0f ? 0.0f : static_cast<float>(tick.phase) / 120.0f, dt,
          false);
    }
  }
  return out;
}

std::vector<Sequence> HonestSequencesAt(int stride, int phase,
                                        bool learnt = false) {
  return HonestSequences({.stride = stride, .phase = phase, .hz = 0.0f},
                         learnt);
}

// Runs the check on frame f of `frames` with up to two frames before it.
PlausibilityResult Check(const Sequence& q,
                         const std::vector<std::vector<Transform>>& frames,
                         int f, const std::vector<Transform>* placements,
                         const PlausibilityThresholds& thresholds = {}) {
  PlausibilityResult result;
  PlausibilityJob job;
  job.skeleton = q.skeleton;
  job.input = frames[f];
  job.frame = f;
  if (placements != nullptr) job.placement = (*placements)[f];
  if (f >= 1) {
    job.previous = frames[f - 1];
    job.dt = q.dt;
    if (placements != nullptr) job.previous_placement = (*placements)[f - 1];
  }
  if (f >= 2) {
    job.previous2 = frames[f - 2];
    job.previous_dt = q.dt;
    if (placements != nullptr) job.previous2_placement = (*placements)[f - 2];
  }
  job.limits = q.limits;
  job.joint_checks = q.joint_checks;
  job.thresholds = thresholds;
  job.rig_size = q.rig_size;
  job.result = &result;
  const absl::Status s = job.Run();
  EXPECT_TRUE(s.ok()) << s;
  return result;
}

// A two-joint rig: a root and a 1-unit bone along +y. RigSize is 1.
Skeleton TwoJoints() {
  SkeletonDesc d;
  d.joint_names = {"root", "arm"};
  d.parents = {kNoParent, 0};
  d.rest_pose.resize(2);
  d.rest_pose[1].translation = {0, 1, 0};
  return *Skeleton::Create(std::move(d));
}

TEST(Plausibility, MeasuresMatchHandComputedValues) {
  const Skeleton s = TwoJoints();
  EXPECT_FLOAT_EQ(RigSize(s), 1.0f);
  std::vector<Transform> p2 = RestPose(s), p1 = RestPose(s), p0 = RestPose(s);
  // The arm turns 0, then 0.1, then 0.3 rad about x in steps of 0.1 s:
  // 1 then 2 rad/s, 10 rad/s^2. The root moves 0.2 then 0.5 along x: 2
  // then 5 sizes/s, 30 sizes/s^2. The bone grows 20%.
  p1[1].rotation = Eigen::AngleAxisf(0.1f, Eigen::Vector3f::UnitX());
  p0[1].rotation = Eigen::AngleAxisf(0.3f, Eigen::Vector3f::UnitX());
  p1[0].translation = {0.2f, 0, 0};
  p0[0].translation = {0.7f, 0, 0};
  p0[1].translation = {0, 1.2f, 0};
  std::vector<JointLimit> limits(2);
  limits[1] = EulerLimit(EulerOrder::kXYZ, Eigen::Vector3f(-0.1f, -1, -1),
                         Eigen::Vector3f(0.2f, 1, 1));
  PlausibilityThresholds t;
  t.max_angular_velocity = 1.5f;
  t.max_angular_acceleration = 5.0f;
  t.rotation_jitter = 0.01f;  // + 1 rad/s^2 at dt 0.1
  t.max_root_speed = 4.0f;
  t.max_root_acceleration = 20.0f;
  t.position_jitter = 0.05f;    // + 5 sizes/s^2
  t.teleport_distance = 0.05f;  // 0.4 + 0.05 < 0.5 moved
  PlausibilityResult result;
  PlausibilityJob job;
  job.skeleton = &s;
  job.input = p0;
  job.frame = 7;
  job.previous = p1;
  job.dt = 0.1f;
  job.previous2 = p2;
  job.previous_dt = 0.1f;
  job.limits = limits;
  job.thresholds = t;
  job.rig_size = 1.0f;
  job.result = &result;
  ASSERT_TRUE(job.Run().ok());
  EXPECT_FALSE(result.plausible);
  auto find = [&result](PlausibilityCheck c) -> const PlausibilityViolation* {
    for (const PlausibilityViolation& v : result.violations) {
      if (v.check == c) return &v;
    }
    return nullptr;
  };
  const PlausibilityViolation* range = find(PlausibilityCheck::kRangeOfMotion);
  ASSERT_NE(range, nullptr);
  EXPECT_EQ(range->joint, 1);
  EXPECT_EQ(range->axis, 0);
  EXPECT_EQ(range->frame, 7);
  EXPECT_NEAR(range->measured, 0.3f, 1e-5f);
  EXPECT_FLOAT_EQ(range->bound, 0.2f);
  const PlausibilityViolation* w = find(PlausibilityCheck::kAngularVelocity);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->joint, 1);
  EXPECT_NEAR(w->measured, 2.0f, 1e-4f);
  const PlausibilityViolation* a =
      find(PlausibilityCheck::kAngularAcceleration);
  ASSERT_NE(a, nullptr);
  EXPECT_NEAR(a->measured, 10.0f, 1e-3f);
  EXPECT_NEAR(a->bound, 6.0f, 1e-5f);
  const PlausibilityViolation* bone = find(PlausibilityCheck::kBoneLength);
  ASSERT_NE(bone, nullptr);
  EXPECT_EQ(bone->joint, 1);
  EXPECT_NEAR(bone->measured, 0.2f, 1e-5f);
  const PlausibilityViolation* v = find(PlausibilityCheck::kRootSpeed);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->joint, 0);
  EXPECT_NEAR(v->measured, 5.0f, 1e-4f);
  const PlausibilityViolation* ra = find(PlausibilityCheck::kRootAcceleration);
  ASSERT_NE(ra, nullptr);
  EXPECT_NEAR(ra->measured, 30.0f, 1e-3f);
  EXPECT_NEAR(ra->bound, 25.0f, 1e-4f);
  const PlausibilityViolation* tp = find(PlausibilityCheck::kRootTeleport);
  ASSERT_NE(tp, nullptr);
  EXPECT_NEAR(tp->measured, 0.5f, 1e-5f);
  EXPECT_NEAR(tp->bound, 0.45f, 1e-5f);
  EXPECT_EQ(find(PlausibilityCheck::kScale), nullptr);
  EXPECT_EQ(result.violations.size(), 7u);

  // The same input again: the same report, bit for bit; the poses as they
  // were.
  PlausibilityResult again;
  job.result = &again;
  ASSERT_TRUE(job.Run().ok());
  ASSERT_EQ(again.violations.size(), result.violations.size());
  for (size_t i = 0; i < again.violations.size(); ++i) {
    // Field by field: the struct has padding, which memcmp would compare.
    const PlausibilityViolation& a = again.violations[i];
    const PlausibilityViolation& b = result.violations[i];
    EXPECT_EQ(a.check, b.check);
    EXPECT_EQ(a.joint, b.joint);
    EXPECT_EQ(a.axis, b.axis);
    EXPECT_EQ(a.frame, b.frame);
    EXPECT_EQ(absl::bit_cast<uint32_t>(a.measured),
              absl::bit_cast<uint32_t>(b.measured));
    EXPECT_EQ(absl::bit_cast<uint32_t>(a.bound),
              absl::bit_cast<uint32_t>(b.bound));
  }
  EXPECT_NEAR(p0[1].translation.y(), 1.2f, 0.0f);

  // Joint checks off: nothing on the arm.
  const std::vector<uint8_t> none = {kCheckAll, 0};
  job.joint_checks = none;
  ASSERT_TRUE(job.Run().ok());
  for (const PlausibilityViolation& x : again.violations) {
    EXPECT_EQ(x.joint, 0);
  }
}

TEST(Plausibility, RangeScreensAndValidatedLimitsChangeNoReport) {
  // The learnt limits pulled 0.6 rad in on every side, so that many frames
  // cross them: the report with screens (and limits checked once), and
  // with the screens laid out in groups of four, is the one without, bit
  // for bit.
  int violations = 0;
  for (const Sequence& q : HonestSequencesAt(2, 0, true)) {
    ASSERT_FALSE(q.limits.empty());
    std::vector<JointLimit> tight = q.limits;
    for (JointLimit& limit : tight) {
      if (limit.type != JointLimitType::kEuler) continue;
      for (int axis = 0; axis < 3; ++axis) {
        if (limit.euler_max[axis] - limit.euler_min[axis] > 1.4f) {
          limit.euler_min[axis] += 0.6f;
          limit.euler_max[axis] -= 0.6f;
        }
      }
    }
    std::vector<EulerRangeScreen> screens;
    for (const JointLimit& limit : tight) {
      screens.push_back(MakeEulerRangeScreen(limit));
    }
    const std::vector<EulerRangeScreenGroup> groups =
        MakeEulerRangeScreenGroups(tight, screens);
    ASSERT_EQ(static_cast<int>(groups.size()),
              EulerRangeScreenGroupCount(static_cast<int>(tight.size())));
    for (int f = 0; f < static_cast<int>(q.frames.size()); ++f) {
      PlausibilityResult plain, screened, grouped;
      PlausibilityJob job;
      job.skeleton = q.skeleton;
      job.input = q.frames[f];
      job.limits = tight;
      job.joint_checks = q.joint_checks;
      job.rig_size = q.rig_size;
      job.result = &plain;
      ASSERT_TRUE(job.Run().ok());
      job.limits_validated = true;
      job.range_screens = screens;
      job.result = &screened;
      ASSERT_TRUE(job.Run().ok());
      job.range_screen_groups = groups;
      job.result = &grouped;
      ASSERT_TRUE(job.Run().ok());
      for (const PlausibilityResult* other : {&screened, &grouped}) {
        ASSERT_EQ(plain.violations.size(), other->violations.size())
            << q.name << " frame " << f;
        for (size_t i = 0; i < plain.violations.size(); ++i) {
          const PlausibilityViolation& a = plain.violations[i];
          const PlausibilityViolation& b = other->violations[i];
          EXPECT_EQ(a.joint, b.joint);
          EXPECT_EQ(a.axis, b.axis);
          EXPECT_EQ(absl::bit_cast<uint32_t>(a.measured),
                    absl::bit_cast<uint32_t>(b.measured));
        }
      }
      violations += static_cast<int>(plain.violations.size());
    }
  }
  EXPECT_GT(violations, 100);
}

// A chain of `n` joints, each a 1-unit bone along +y from its parent.
Skeleton Chain(int n) {
  SkeletonDesc d;
  for (int j = 0; j < n; ++j) {
    d.joint_names.push_back(absl::StrCat("j", j));
    d.parents.push_back(j == 0 ? kNoParent : j - 1);
  }
  d.rest_pose.resize(n);
  for (int j = 1; j < n; ++j) d.rest_pose[j].translation = {0, 1, 0};
  return *Skeleton::Create(std::move(d));
}

// The checks go four joints at a time, and the joints past the last
// multiple of four as the last four (overlapping the group before): a
// fault at any joint of any count is reported once, naming that joint,
// with and without the range screens and their groups.
TEST(Plausibility, EveryJointIsCheckedOnceWhateverTheCount) {
  for (int n = 2; n <= 11; ++n) {
    const Skeleton s = Chain(n);
    const std::vector<Transform> rest = RestPose(s);
    std::vector<JointLimit> limits(n);
    for (JointLimit& l : limits) {
      l = EulerLimit(EulerOrder::kXYZ, Eigen::Vector3f(-0.5f, -0.5f, -0.5f),
                     Eigen::Vector3f(0.5f, 0.5f, 0.5f));
    }
    std::vector<EulerRangeScreen> screens;
    for (const JointLimit& l : limits) {
      screens.push_back(MakeEulerRangeScreen(l));
    }
    const std::vector<EulerRangeScreenGroup> groups =
        MakeEulerRangeScreenGroups(limits, screens);
    ASSERT_EQ(static_cast<int>(groups.size()), EulerRangeScreenGroupCount(n));
    EXPECT_EQ(EulerRangeScreenGroupCount(n), n < 4 ? 0 : (n + 3) / 4);
    for (int fault = 1; fault < n; ++fault) {
      for (PlausibilityCheck check :
           {PlausibilityCheck::kRangeOfMotion, PlausibilityCheck::kBoneLength,
            PlausibilityCheck::kAngularVelocity}) {
        std::vector<Transform> pose = rest;
        if (check == PlausibilityCheck::kRangeOfMotion) {
          pose[fault].rotation =
              Eigen::AngleAxisf(0.8f, Eigen::Vector3f::UnitX());
        } else if (check == PlausibilityCheck::kBoneLength) {
          pose[fault].translation *= 1.1f;
        } else {
          pose[fault].rotation =
              Eigen::AngleAxisf(0.3f, Eigen::Vector3f::UnitZ());
        }
        for (bool prepared : {false, true}) {
          PlausibilityResult result;
          PlausibilityJob job;
          job.skeleton = &s;
          job.input = pose;
          if (check == PlausibilityCheck::kAngularVelocity) {
            job.previous = rest;
            job.dt = 0.3f / 100.0f;  // 100 rad/s against the default 78.5
          } else {
            job.limits = limits;
          }
          if (prepared && !job.limits.empty()) {
            job.range_screens = screens;
            job.range_screen_groups = groups;
          }
          job.result = &result;
          ASSERT_TRUE(job.Run().ok());
          ASSERT_EQ(result.violations.size(), 1u)
              << n << " joints, fault at " << fault << ", "
              << PlausibilityCheckName(check);
          EXPECT_EQ(result.violations[0].check, check);
          EXPECT_EQ(result.violations[0].joint, fault);
        }
      }
    }
  }
}

TEST(Plausibility, PlacementMovesAndTurnsTheRoot) {
  const Skeleton s = TwoJoints();
  std::vector<Transform> p = RestPose(s);
  Transform here, there;
  there.translation = {3.0f, 0, 0};
  PlausibilityResult result;
  PlausibilityJob job;
  job.skeleton = &s;
  job.input = p;
  job.placement = there;
  job.previous = p;
  job.previous_placement = here;
  job.dt = 1.0f;
  job.result = &result;
  ASSERT_TRUE(job.Run().ok());
  EXPECT_TRUE(result.plausible);  // 3 sizes/s
  job.dt = 0.4f;  // 7.5 sizes/s; no teleport (3 < 7 * 0.4 + 0.5)
  ASSERT_TRUE(job.Run().ok());
  ASSERT_EQ(result.violations.size(), 1u);
  EXPECT_EQ(result.violations[0].check, PlausibilityCheck::kRootSpeed);
  // A half turn of the character in 0.1 s: 31.4 rad/s, on the root.
  job.dt = 0.1f;
  job.placement = here;
  job.placement.rotation = Eigen::AngleAxisf(kPi, Eigen::Vector3f::UnitY());
  job.thresholds.max_angular_velocity = 30.0f;
  ASSERT_TRUE(job.Run().ok());
  ASSERT_EQ(result.violations.size(), 1u);
  EXPECT_EQ(result.violations[0].check, PlausibilityCheck::kAngularVelocity);
  EXPECT_EQ(result.violations[0].joint, 0);
  EXPECT_NEAR(result.violations[0].measured, kPi / 0.1f, 1e-3f);
}

TEST(Plausibility, BadInputNamesTheFieldAndJoint) {
  const Skeleton s = TwoJoints();
  const std::vector<Transform> p = RestPose(s);
  PlausibilityResult result;
  PlausibilityJob base;
  base.skeleton = &s;
  base.input = p;
  base.result = &result;
  ASSERT_TRUE(base.Validate().ok());

  std::vector<JointLimit> nan_limits(2);
  nan_limits[1] = EulerLimit(EulerOrder::kXYZ, Eigen::Vector3f(-1, -1, -1),
                             Eigen::Vector3f(std::nanf(""), 1, 1));
  PlausibilityJob job = base;
  job.limits = nan_limits;
  EXPECT_THAT(std::string(job.Validate().message()),
              HasSubstr("plausibility.limits[1] 'arm'"));

  job = base;
  job.thresholds.max_root_speed = -1.0f;
  EXPECT_THAT(std::string(job.Validate().message()),
              HasSubstr("plausibility.thresholds.max_root_speed"));

  job = base;
  job.previous = p;
  job.dt = -0.016f;
  EXPECT_THAT(std::string(job.Validate().message()),
              HasSubstr("plausibility.dt: -0.016"));

  job = base;
  job.previous2 = p;
  EXPECT_THAT(std::string(job.Validate().message()),
              HasSubstr("without plausibility.previous"));

  std::vector<Transform> bad = p;
  bad[1].translation.x() = std::nanf("");
  job = base;
  job.input = bad;
  EXPECT_THAT(std::string(job.Validate().message()),
              HasSubstr("plausibility.input[1] 'arm'"));

  // Told the input is checked (as the service does), the job skips its
  // transforms, but not its size.
  std::vector<Transform> off_unit = p;
  off_unit[1].rotation.coeffs() *= 1.01f;
  job = base;
  job.input = off_unit;
  EXPECT_THAT(std::string(job.Validate().message()),
              HasSubstr("plausibility.input[1] 'arm'"));
  job.input_validated = true;
  EXPECT_TRUE(job.Validate().ok());
  job.input = absl::MakeConstSpan(p).first(1);
  EXPECT_THAT(
      std::string(job.Validate().message()),
      HasSubstr("plausibility.input: 1 transforms for a skeleton of 2"));
  job = base;
  job.previous = off_unit;
  job.dt = 0.016f;
  EXPECT_THAT(std::string(job.Validate().message()),
              HasSubstr("plausibility.previous[1] 'arm'"));
  job.previous_validated = true;
  EXPECT_TRUE(job.Validate().ok());

  job = base;
  job.rig_size = 0.0f;
  EXPECT_THAT(std::string(job.Validate().message()),
              HasSubstr("plausibility.rig_size"));

  // Groups are made from one screen per limit, four joints each (five
  // joints: 0-3 and 1-4); screens that do not match the limits give none.
  const std::vector<JointLimit> five(5);
  const std::vector<EulerRangeScreen> five_screens(5), four_screens(4);
  EXPECT_EQ(MakeEulerRangeScreenGroups(five, five_screens).size(), 2u);
  EXPECT_TRUE(MakeEulerRangeScreenGroups(five, four_screens).empty());

  // Screen groups need the screens they are laid out from.
  const std::vector<JointLimit> free_limits(2);
  const std::vector<EulerRangeScreenGroup> one_group(1);
  job = base;
  job.limits = free_limits;
  job.range_screen_groups = one_group;
  EXPECT_THAT(std::string(job.Validate().message()),
              HasSubstr("plausibility.range_screen_groups: 1 groups for 2 "
                        "limits and 0 screens"));

  const std::vector<uint8_t> short_checks = {kCheckAll};
  job = base;
  job.joint_checks = short_checks;
  EXPECT_THAT(std::string(job.Validate().message()),
              HasSubstr("plausibility.joint_checks"));
}

// Every honest frame at 120 Hz, and at 60 Hz in both phases (each frame
// of a 120 Hz clip once), each with the two frames before it; the clips
// the limits do not come from also at 128 and 100 Hz, game tick rates
// whose samples mostly fall between the capture's keys and each other's.
constexpr Tick kTicks[] = {{.stride = 1, .phase = 0, .hz = 0.0f},
                           {.stride = 2, .phase = 0, .hz = 0.0f},
                           {.stride = 2, .phase = 1, .hz = 0.0f}};
constexpr Tick kGameTicks[] = {{.stride = 1, .phase = 0, .hz = 128.0f},
                               {.stride = 1, .phase = 0, .hz = 100.0f}};

TEST(Plausibility, HonestMotionIsNeverFlagged) {
  for (bool learnt : {false, true}) {
    int frames = 0, ranged = 0, flagged = 0;
    // Each clip's sample times, for counting distinct poses.
    std::map<std::string, std::vector<float>> sampled;
    auto check_all = [&](const std::vector<Sequence>& sequences,
                         const std::string& tick) {
      for (const Sequence& q : sequences) {
        for (int f = 0; f < static_cast<int>(q.frames.size()); ++f) {
          const PlausibilityResult r = Check(q, q.frames, f, nullptr);
          ++frames;
          sampled[q.name].push_back(q.times[f]);
          if (!q.limits.empty()) ++ranged;
          if (!r.plausible) {
            ++flagged;
            const PlausibilityViolation& v = r.violations[0];
            ADD_FAILURE() << q.name << " at " << tick << ", frame " << f << ": "
                          << PlausibilityCheckName(v.check) << " joint "
                          << q.skeleton->joint_name(v.joint) << " measured "
                          << v.measured << " bound " << v.bound;
          }
        }
      }
    };
    for (const Tick& tick : kTicks) {
      check_all(HonestSequences(tick, learnt),
                absl::StrCat(120 / tick.stride, " Hz"));
    }
    if (!learnt) {
      for (const Tick& tick : kGameTicks) {
        check_all(HonestSequences(tick), absl::StrCat(tick.hz, " Hz"));
      }
    }
    // Distinct poses: samples of a clip at least 1 ms apart (the capture's
    // keys are 8.3 ms apart; a BVH's rounded frame time puts a tick that
    // nominally meets a key up to 0.04 ms off it).
    int distinct = 0;
    for (auto& [name, times] : sampled) {
      std::sort(times.begin(), times.end());
      float last = -1.0f;
      for (float t : times) {
        if (t - last >= 1e-3f) {
          ++distinct;
          last = t;
        }
      }
    }
    std::printf(
        "%s: %d distinct poses, %d frame checks (%d with limits), %d "
        "flagged\n",
        learnt ? "clips the limits come from"
               : "clips the limits do not come from",
        distinct, frames, ranged, flagged);
    EXPECT_EQ(flagged, 0);
    if (!learnt) {
      EXPECT_GE(distinct, 10000);
    }
  }
}

// The cheats. Each is injected at frame f of a copy of an honest motion
// capture sequence (the frames before it honest) and checked there (the
// doubled speed: at every frame of its second).
enum class Cheat {
  kBeyondRange,
  kBeyondObserved,
  kSnap,
  kStretch,
  kTeleport,
  kDoubleSpeed
};

const char* CheatName(Cheat c) {
  switch (c) {
    case Cheat::kBeyondRange:
      return "joint 20 deg beyond its learnt limit";
    case Cheat::kBeyondObserved:
      return "joint 20 deg beyond the range its clips showed";
    case Cheat::kSnap:
      return "snap";
    case Cheat::kStretch:
      return "bone stretched 10%";
    case Cheat::kTeleport:
      return "2 m root teleport";
    case Cheat::kDoubleSpeed:
      return "root speed x2 for 1 s";
  }
  return "";
}

struct CatchRate {
  int injected = 0;
  int caught = 0;
  // The doubled speed only: each injection's added ground distance over
  // its second (metres, for a 1.75 m rig) and whether it was caught.
  std::vector<std::pair<float, bool>> added;
  double rate() const { return injected == 0 ? 0.0 : 1.0 * caught / injected; }
};

// Sequences the cheats go into at one tick: every CMU clip.
const std::vector<Sequence>& MocapAt(int stride) {
  static std::vector<Sequence>* by_stride[3] = {nullptr, nullptr, nullptr};
  if (by_stride[stride] == nullptr) {
    auto* v = new std::vector<Sequence>();
    for (bool learnt : {false, true}) {
      for (Sequence& q : HonestSequencesAt(stride, 0, learnt)) {
        if (q.mocap) v->push_back(std::move(q));
      }
    }
    by_stride[stride] = v;
  }
  return *by_stride[stride];
}

bool Has(const PlausibilityResult& r,
         std::initializer_list<PlausibilityCheck> checks, int joint) {
  for (const PlausibilityViolation& v : r.violations) {
    if (v.joint != joint) continue;
    for (PlausibilityCheck c : checks) {
      if (v.check == c) return true;
    }
  }
  return false;
}

// `count` injections of `cheat` at one tick; `snap_deg` is the snap's
// angular speed. Draw order per injection: sequence, frame, then the
// cheat's own (joint; axis and side, or an axis as z and azimuth; or a
// direction's azimuth), redrawn from the sequence on when a draw does not
// fit (a joint without limit or bone; a range bound that would wrap).
CatchRate Inject(Cheat cheat, int stride, int count, uint32_t start,
                 float snap_deg = 720.0f,
                 const PlausibilityThresholds& thresholds = {}) {
  const std::vector<Sequence>& seqs = MocapAt(stride);
  std::mt19937 rng(start);
  CatchRate rate;
  auto uniform_int = [&rng](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  auto uniform = [&rng](float lo, float hi) {
    return std::uniform_real_distribution<float>(lo, hi)(rng);
  };
  const int window = 120 / stride;  // one second of frames
  while (rate.injected < count) {
    const Sequence& q = seqs[uniform_int(0, static_cast<int>(seqs.size()) - 1)];
    const int last = static_cast<int>(q.frames.size()) - 1 -
                     (cheat == Cheat::kDoubleSpeed ? window : 0);
    if (last < 2) continue;
    const int f = uniform_int(2, last);
    const Skeleton& s = *q.skeleton;
    const int n = s.num_joints();
    // Frames f - 2 .. f (the doubled speed: to f + window), f at index 2.
    std::vector<std::vector<Transform>> frames(
        q.frames.begin() + f - 2,
        q.frames.begin() + f + 1 + (cheat == Cheat::kDoubleSpeed ? window : 0));
    std::vector<Transform>& pose = frames[2];
    int joint = 0;
    switch (cheat) {
      case Cheat::kBeyondRange:
      case Cheat::kBeyondObserved: {
        if (q.limits.empty()) continue;
        joint = uniform_int(0, n - 1);
        const int axis = uniform_int(0, 2);
        const bool above = uniform_int(0, 1) == 1;
        const JointLimit& l = q.limits[joint];
        if (l.type != JointLimitType::kEuler ||
            (q.joint_checks[joint] & kCheckRange) == 0) {
          continue;
        }
        float bound = above ? l.euler_max[axis] : l.euler_min[axis];
        if (cheat == Cheat::kBeyondObserved) {
          const ObservedRange& o = q.observed[joint];
          bound = above ? o.max[axis] : o.min[axis];
        }
        const float target = bound + (above ? 20.0f : -20.0f) * kDeg;
        const bool middle = axis == EulerAxisAt(l.euler_order, 1);
        // Past +-90 (middle) or +-180 degrees the angle wraps to another
        // representation: such a bound cannot be exceeded by 20 degrees.
        if (std::fabs(target) > (middle ? 85.0f : 175.0f) * kDeg) continue;
        Eigen::Vector3f e = ToEuler(
            l.reference.conjugate() * pose[joint].rotation, l.euler_order);
        e[axis] = target;
        pose[joint].rotation =
            (l.reference * FromEuler(e, l.euler_order)).normalized();
        break;
      }
      case Cheat::kSnap: {
        joint = uniform_int(0, n - 1);
        const float z = uniform(-1.0f, 1.0f);
        const float phi = uniform(-kPi, kPi);
        if ((q.joint_checks[joint] & kCheckMotion) == 0) continue;
        const float r = std::sqrt(std::max(0.0f, 1.0f - z * z));
        const Eigen::Vector3f axis(r * std::cos(phi), r * std::sin(phi), z);
        pose[joint].rotation = (pose[joint].rotation *
                                Eigen::Quaternionf(Eigen::AngleAxisf(
                                    snap_deg * kDeg * q.dt, axis.normalized())))
                                   .normalized();
        break;
      }
      case Cheat::kStretch: {
        joint = uniform_int(0, n - 1);
        if (s.parent(joint) == kNoParent ||
            (q.joint_checks[joint] & kCheckBone) == 0 ||
            s.rest_pose()[joint].translation.norm() < 0.02f * q.rig_size) {
          continue;
        }
        pose[joint].translation *= 1.1f;
        break;
      }
      case Cheat::kTeleport: {
        const float phi = uniform(-kPi, kPi);
        // 2 m for a 1.75 m tall rig, along the ground (y is up).
        const float d = 2.0f * q.rig_size / kStature;
        pose[0].translation +=
            Eigen::Vector3f(d * std::cos(phi), 0.0f, d * std::sin(phi));
        break;
      }
      case Cheat::kDoubleSpeed: {
        // From frame f on, for a second, the root covers twice the ground.
        const Eigen::Vector3f start = q.frames[f - 1][0].translation;
        Eigen::Vector3f d = Eigen::Vector3f::Zero();
        for (int k = 2; k <= 2 + window; ++k) {
          d = frames[k][0].translation - start;
          d.y() = 0.0f;
          frames[k][0].translation += d;
        }
        rate.added.emplace_back(d.norm() * kStature / q.rig_size, false);
        break;
      }
    }
    ++rate.injected;
    bool caught = false;
    if (cheat == Cheat::kDoubleSpeed) {
      for (int k = 2; k <= 2 + window && !caught; ++k) {
        caught = Has(Check(q, frames, k, nullptr, thresholds),
                     {PlausibilityCheck::kRootSpeed,
                      PlausibilityCheck::kRootAcceleration,
                      PlausibilityCheck::kRootTeleport},
                     0);
      }
      rate.added.back().second = caught;
    } else {
      const PlausibilityResult r = Check(q, frames, 2, nullptr, thresholds);
      switch (cheat) {
        case Cheat::kBeyondRange:
        case Cheat::kBeyondObserved:
          caught = Has(r, {PlausibilityCheck::kRangeOfMotion}, joint);
          break;
        case Cheat::kSnap:
          caught = Has(r,
                       {PlausibilityCheck::kAngularVelocity,
                        PlausibilityCheck::kAngularAcceleration},
                       joint);
          break;
        case Cheat::kStretch:
          caught = Has(r, {PlausibilityCheck::kBoneLength}, joint);
          break;
        default:
          caught = Has(r, {PlausibilityCheck::kRootTeleport}, 0);
          break;
      }
    }
    if (caught) ++rate.caught;
  }
  return rate;
}

constexpr int kInjections = 500;

// What the doubled speed adds: the injections by the ground distance they
// add over their second, and how many of each band are caught. The band
// under 0.1 m (a root moving under 10 cm/s, doubled) is a character
// standing, swaying or turning on the spot: no kinematic check can call
// that a cheat, and it alone keeps a 99% catch out of reach. Asserted,
// since docs/PERFORMANCE.md rests on it.
void ReportAddedDistance(int stride, const CatchRate& r) {
  const float bands[] = {0.0f, 0.1f, 0.25f, 0.5f, 1.0f, 2.0f, 1e9f};
  std::string line;
  int under_tenth = 0;
  for (size_t b = 0; b + 1 < std::size(bands); ++b) {
    int n = 0, caught = 0;
    for (const auto& [added, was_caught] : r.added) {
      if (added < bands[b] || added >= bands[b + 1]) continue;
      ++n;
      caught += was_caught;
    }
    if (b == 0) under_tenth = n;
    absl::StrAppend(&line, b == 0 ? "" : ", ",
                    b + 2 == std::size(bands)
                        ? absl::StrCat(">= ", bands[b])
                        : absl::StrCat(bands[b], "-", bands[b + 1]),
                    " m: ", caught, "/", n);
  }
  std::printf(
      "  root speed x2 at %3d Hz, caught / injected by the ground "
      "distance added in the second: %s\n",
      120 / stride, line.c_str());
  EXPECT_EQ(static_cast<int>(r.added.size()), r.injected);
  EXPECT_GT(under_tenth, r.injected / 100)
      << "over 99% of the doubled-speed injections add at least 0.1 m: "
         "revisit docs/PERFORMANCE.md's reading of the 99% aim";
}

void Report(Cheat cheat, int stride, const CatchRate& r,
            const char* extra = "") {
  std::printf("%-48s%s at %3d Hz: %d of %d caught (%.1f%%)\n", CheatName(cheat),
              extra, 120 / stride, r.caught, r.injected, 100.0 * r.rate());
}

TEST(Plausibility, GrossCheatsAreCaughtWithTheRightJoint) {
  for (int stride : {1, 2}) {
    for (Cheat cheat :
         {Cheat::kBeyondRange, Cheat::kStretch, Cheat::kTeleport}) {
      const CatchRate r = Inject(cheat, stride, kInjections, 20261128u);
      Report(cheat, stride, r);
      EXPECT_GE(r.rate(), 0.99) << CheatName(cheat);
    }
  }
}

// Snaps beyond what capture glitches reach are caught at the defaults;
// slower ones, and the subtler cheats, are printed as figures
// (docs/PERFORMANCE.md): the default motion bounds cannot tell them from
// glitches without flagging honest frames (TightBoundsTradeCatchesForFalse
// Alarms).
TEST(Plausibility, SnapsBeyondCaptureGlitchesAreCaughtAtTheDefaults) {
  for (int stride : {1, 2}) {
    Report(Cheat::kBeyondObserved, stride,
           Inject(Cheat::kBeyondObserved, stride, kInjections, 20261128u));
    for (float deg : {720.0f, 1440.0f, 2880.0f, 5760.0f}) {
      const std::string label =
          absl::StrCat(" ", static_cast<int>(deg), " deg/s");
      const CatchRate r =
          Inject(Cheat::kSnap, stride, kInjections, 20261128u, deg);
      Report(Cheat::kSnap, stride, r, label.c_str());
      if (deg >= 5760.0f) {
        EXPECT_GE(r.rate(), 0.99) << label;
      }
    }
    const CatchRate doubled =
        Inject(Cheat::kDoubleSpeed, stride, kInjections, 20261128u);
    Report(Cheat::kDoubleSpeed, stride, doubled);
    ReportAddedDistance(stride, doubled);
  }
}

// Why a 720 deg/s snap is out of reach at zero false alarms: the angular
// acceleration check measures a joint's second difference |r0 - r1| (the
// rotation vectors of its last two steps). Snaps go into every CMU clip as
// the catch figures' do (each honest step turned by a further 720 deg/s x
// dt about an axis drawn uniformly): the snapped values' 1st percentile is
// the largest bound that still catches 99% of them. The honest frames are
// those the no-false-alarm figure counts (the clips the limits do not come
// from, CMU and glTF), every joint with motion checks but the root: their
// largest second difference is several times that bound, so any bound
// catching 99% flags honest frames. Asserted, since docs/PERFORMANCE.md
// rests on it.
Eigen::Vector3f StepRotationVector(const Eigen::Quaternionf& from,
                                   const Eigen::Quaternionf& to) {
  const Eigen::Quaternionf step = from.conjugate() * to;
  const Eigen::AngleAxisf a(step.w() < 0.0f ? Eigen::Quaternionf(-step.coeffs())
                                            : step);
  return a.angle() * a.axis();
}

TEST(Plausibility, HonestSecondDifferencesReachPastA720DegreeSnap) {
  for (int stride : {1, 2}) {
    std::mt19937 rng(20261130u);
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    std::vector<float> snapped;
    for (const Sequence& q : MocapAt(stride)) {
      const float snap = 720.0f * kDeg * q.dt;
      for (size_t f = 2; f < q.frames.size(); ++f) {
        for (int j = 1; j < q.skeleton->num_joints(); ++j) {
          if ((q.joint_checks[j] & kCheckMotion) == 0) continue;
          const Eigen::Quaternionf& r1 = q.frames[f - 1][j].rotation;
          const Eigen::Vector3f before =
              StepRotationVector(q.frames[f - 2][j].rotation, r1);
          const float z = unit(rng);
          const float phi = kPi * unit(rng);
          const float r = std::sqrt(std::max(0.0f, 1.0f - z * z));
          const Eigen::Vector3f axis(r * std::cos(phi), r * std::sin(phi), z);
          const Eigen::Quaternionf turned =
              q.frames[f][j].rotation *
              Eigen::Quaternionf(Eigen::AngleAxisf(snap, axis));
          snapped.push_back((StepRotationVector(r1, turned) - before).norm());
        }
      }
    }
    std::sort(snapped.begin(), snapped.end());
    const float bound = snapped[snapped.size() / 100];
    float largest = 0.0f;
    std::string largest_where;
    int frames = 0, flagged = 0;
    for (const Sequence& q : HonestSequencesAt(stride, 0)) {
      for (size_t f = 2; f < q.frames.size(); ++f) {
        ++frames;
        bool flag = false;
        for (int j = 1; j < q.skeleton->num_joints(); ++j) {
          if ((q.joint_checks[j] & kCheckMotion) == 0) continue;
          const float d = (StepRotationVector(q.frames[f - 1][j].rotation,
                                              q.frames[f][j].rotation) -
                           StepRotationVector(q.frames[f - 2][j].rotation,
                                              q.frames[f - 1][j].rotation))
                              .norm();
          flag = flag || d > bound;
          if (d > largest) {
            largest = d;
            largest_where = absl::StrCat(q.name, " joint '",
                                         q.skeleton->joint_name(j), "'");
          }
        }
        flagged += flag;
      }
    }
    std::printf(
        "a 720 deg/s snap at %3d Hz adds %.1f deg to a second difference; "
        "the bound catching 99%% of snaps is %.1f deg; the honest frames "
        "reach %.1f deg (%s), and that bound flags %d of their %d frames\n",
        120 / stride, 720.0f / static_cast<float>(120 / stride), bound / kDeg,
        largest / kDeg, largest_where.c_str(), flagged, frames);
    EXPECT_GT(largest, 3.0f * bound);
    EXPECT_GT(flagged, 0);
  }
}

// Why a foot-sliding check cannot rescue the slowest doubled speeds: the
// capture's own planted feet drift. For each foot joint of each CMU clip
// at 120 Hz, a contact is a run of at least 0.1 s in which the joint stays
// within 3 cm of its lowest height in the clip (metres for a 1.75 m rig);
// its drift is the ground distance from the run's first frame to its last
// over the run's time. Printed per clip and foot (median and largest);
// asserted that some honest contact drifts faster than 0.1 m/s, the
// speed the slowest doubled-speed band adds (docs/PERFORMANCE.md).
TEST(Plausibility, PlantedFeetDriftAsFastAsTheSlowestDoubledSpeedsAdd) {
  float fastest = 0.0f;
  for (const Sequence& q : MocapAt(1)) {
    const Skeleton& s = *q.skeleton;
    std::vector<std::vector<Eigen::Vector3f>> paths;  // per foot joint
    std::vector<int> feet;
    for (const char* name :
         {"LeftFoot", "RightFoot", "LeftToeBase", "RightToeBase", "LeftAnkle",
          "RightAnkle", "LeftToe", "RightToe"}) {
      if (const int j = s.FindJoint(name); j >= 0) feet.push_back(j);
    }
    paths.resize(feet.size());
    ModelPose model(s.num_joints());
    for (const std::vector<Transform>& frame : q.frames) {
      const LocalToModelJob fk{
          .skeleton = &s, .input = frame, .output = absl::MakeSpan(model)};
      ASSERT_TRUE(fk.Run().ok());
      for (size_t k = 0; k < feet.size(); ++k) {
        paths[k].push_back(model[feet[k]].translation * kStature / q.rig_size);
      }
    }
    for (size_t k = 0; k < feet.size(); ++k) {
      const std::vector<Eigen::Vector3f>& p = paths[k];
      float lowest = p[0].y();
      for (const Eigen::Vector3f& v : p) lowest = std::min(lowest, v.y());
      auto planted = [&](size_t f) { return p[f].y() <= lowest + 0.03f; };
      std::vector<float> drift;  // m/s, one per contact
      for (size_t a = 0; a < p.size(); ++a) {
        if (!planted(a)) continue;
        size_t b = a;
        while (b + 1 < p.size() && planted(b + 1)) ++b;
        const float seconds = static_cast<float>(b - a) * q.dt;
        if (seconds >= 0.1f) {
          Eigen::Vector3f d = p[b] - p[a];
          d.y() = 0.0f;
          drift.push_back(d.norm() / seconds);
        }
        a = b;
      }
      if (drift.empty()) continue;
      std::sort(drift.begin(), drift.end());
      fastest = std::max(fastest, drift.back());
      std::printf(
          "planted %-28s %-12s %2zu contacts, drift median %.3f m/s, "
          "largest %.3f m/s\n",
          q.name.c_str(), s.joint_name(feet[k]).c_str(), drift.size(),
          drift[drift.size() / 2], drift.back());
    }
  }
  EXPECT_GT(fastest, 0.1f);
}

// The other side of the trade: bounds tight enough for a 720 deg/s snap
// catch it, and flag honest frames, which is why they are not the defaults.
TEST(Plausibility, TightBoundsTradeCatchesForFalseAlarms) {
  PlausibilityThresholds tight;
  tight.max_angular_acceleration = 30000.0f * kDeg;
  tight.rotation_jitter = 0.0f;
  tight.max_root_acceleration = 40.0f;
  tight.position_jitter = 0.0f;
  for (int stride : {1, 2}) {
    const CatchRate snaps =
        Inject(Cheat::kSnap, stride, kInjections, 20261128u, 720.0f, tight);
    Report(Cheat::kSnap, stride, snaps, " 720 deg/s, tight");
    EXPECT_GE(snaps.rate(), 0.99);
    Report(Cheat::kDoubleSpeed, stride,
           Inject(Cheat::kDoubleSpeed, stride, kInjections, 20261128u, 720.0f,
                  tight),
           ", tight");
    int frames = 0, flagged = 0;
    for (int phase = 0; phase < stride; ++phase) {
      for (const Sequence& q : HonestSequencesAt(stride, phase)) {
        for (int f = 0; f < static_cast<int>(q.frames.size()); ++f) {
          ++frames;
          if (!Check(q, q.frames, f, nullptr, tight).plausible) ++flagged;
        }
      }
    }
    std::printf("tight bounds at %3d Hz: %d of %d honest frames flagged\n",
                120 / stride, flagged, frames);
    EXPECT_GT(flagged, 0) << "tight bounds flag no honest frame: make them "
                             "the defaults";
  }
}

}  // namespace plausibility_test
}  // namespace posewire
