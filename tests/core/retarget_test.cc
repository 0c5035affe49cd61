// Retargeting on real rigs: the CMU walk onto RobotExpressive (43 joints,
// Blender names, feet as calf tips) and onto the Daz rig of
// cmu_02_03_run_daz.bvh. Each limb segment's model-space direction is
// computed here by forward kinematics of both poses, from segment lists
// written by hand per rig (not from the map), and compared; bone lengths,
// root motion, round trips, identical skeletons and every mapping error.
#include "solver_core/retarget/retarget.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "solver_core/io/bvh_reader.h"
#include "solver_core/io/gltf_reader.h"
#include "solver_core/model/pose.h"
#include "solver_core/pose_ops/sampling_job.h"
#include "solver_core/retarget/retarget_feet.h"
#include "solver_core/retarget/retarget_hands.h"
#include "tests/core/rig_assets.h"

namespace posewire {
namespace {

using ::testing::HasSubstr;

constexpr float kPi = 3.14159265358979f;

using test_rigs::Load;
using test_rigs::Tips;

std::vector<Transform> Model(const Skeleton& s,
                             absl::Span<const Transform> local) {
  std::vector<Transform> m(s.num_joints());
  for (int j = 0; j < s.num_joints(); ++j) {
    const int p = s.parent(j);
    m[j] = p == kNoParent ? local[j] : Combine(m[p], local[j]);
  }
  return m;
}

// A segment from joint `from` to joint `to`, or to `from`'s end site when
// `to` is empty.
struct Segment {
  std::string from;
  std::string to;
};

Eigen::Vector3f SegmentDirection(const ImportedAsset& asset,
                                 absl::Span<const Transform> model,
                                 const Segment& seg) {
  const int a = asset.skeleton.FindJoint(seg.from);
  EXPECT_GE(a, 0) << seg.from;
  Eigen::Vector3f end = Eigen::Vector3f::Zero();
  if (seg.to.empty()) {
    bool found = false;
    for (const EndSite& e : asset.end_sites) {
      if (e.joint == a) {
        end = model[a].TransformPoint(e.offset);
        found = true;
      }
    }
    EXPECT_TRUE(found) << seg.from << " has no end site";
  } else {
    const int b = asset.skeleton.FindJoint(seg.to);
    EXPECT_GE(b, 0) << seg.to;
    end = model[b].translation;
  }
  return (end - model[a].translation).normalized();
}

// Every float of the two poses has the same bits (Transform has padding, so
// not one memcmp over the whole span).
bool SameBits(const LocalPose& a, const LocalPose& b) {
  if (a.size() != b.size()) return false;
  for (size_t j = 0; j < a.size(); ++j) {
    if (std::memcmp(a[j].translation.data(), b[j].translation.data(), 12) ||
        std::memcmp(a[j].rotation.coeffs().data(),
                    b[j].rotation.coeffs().data(), 16) ||
        std::memcmp(a[j].scale.data(), b[j].scale.data(), 12)) {
      return false;
    }
  }
  return true;
}

float AngleDegrees(const Eigen::Vector3f& a, const Eigen::Vector3f& b) {
  const float c = std::clamp(a.dot(b), -1.0f, 1.0f);
  const float s = a.cross(b).norm();
  return std::atan2(s, c) * 180.0f / kPi;
}

float Percentile(std::vector<float> v, float q) {
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * v.size()));
  return v[i];
}

std::vector<LocalPose> Frames(const ImportedAsset& asset, int count) {
  std::vector<LocalPose> out;
  const Clip& clip = asset.clips.at(0);
  for (int f = 0; f < count; ++f) {
    LocalPose pose(asset.skeleton.num_joints());
    SamplingJob job;
    job.skeleton = &asset.skeleton;
    job.clip = &clip;
    job.clip_validated = true;
    job.mode = PlaybackMode::kClamp;
    job.time = clip.duration * static_cast<float>(f) / (count - 1);
    job.output = absl::MakeSpan(pose);
    EXPECT_TRUE(job.Run().ok());
    out.push_back(std::move(pose));
  }
  return out;
}

// A job retargeting `source` into `out` in place.
RetargetJob JobFor(const RetargetMap& map, const ImportedAsset& from,
                   const ImportedAsset& to, const LocalPose& source,
                   LocalPose& out) {
  RetargetJob job;
  job.map = &map;
  job.source_skeleton = &from.skeleton;
  job.target_skeleton = &to.skeleton;
  job.source = source;
  job.input = out;
  job.output = absl::MakeSpan(out);
  return job;
}

LocalPose Retarget(const RetargetMap& map, const ImportedAsset& from,
                   const ImportedAsset& to, const LocalPose& source) {
  LocalPose out = RestPose(to.skeleton);
  absl::Status s = JobFor(map, from, to, source, out).Run();
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

struct Errors {
  std::vector<float> degrees;
};

// Source segment i pairs with target segment i.
Errors CompareSegments(const ImportedAsset& from, const ImportedAsset& to,
                       const std::vector<Segment>& src_segs,
                       const std::vector<Segment>& tgt_segs,
                       const std::vector<LocalPose>& src_frames,
                       const std::vector<LocalPose>& tgt_frames) {
  Errors e;
  for (size_t f = 0; f < src_frames.size(); ++f) {
    const std::vector<Transform> sm = Model(from.skeleton, src_frames[f]);
    const std::vector<Transform> tm = Model(to.skeleton, tgt_frames[f]);
    for (size_t i = 0; i < src_segs.size(); ++i) {
      e.degrees.push_back(AngleDegrees(SegmentDirection(from, sm, src_segs[i]),
                                       SegmentDirection(to, tm, tgt_segs[i])));
    }
  }
  return e;
}

const std::vector<Segment>& CmuLimbs() {
  static const auto* s = new std::vector<Segment>{
      {"LeftCollar", "LeftShoulder"},  {"LeftShoulder", "LeftElbow"},
      {"LeftElbow", "LeftWrist"},      {"RightCollar", "RightShoulder"},
      {"RightShoulder", "RightElbow"}, {"RightElbow", "RightWrist"},
      {"LeftHip", "LeftKnee"},         {"LeftKnee", "LeftAnkle"},
      {"RightHip", "RightKnee"},       {"RightKnee", "RightAnkle"}};
  return *s;
}

// The same segments in the naming of CMU subjects 1 and 49 (run_leap,
// jumps).
const std::vector<Segment>& CmuLimbsUpLeg() {
  static const auto* s = new std::vector<Segment>{
      {"LeftShoulder", "LeftArm"},  {"LeftArm", "LeftForeArm"},
      {"LeftForeArm", "LeftHand"},  {"RightShoulder", "RightArm"},
      {"RightArm", "RightForeArm"}, {"RightForeArm", "RightHand"},
      {"LeftUpLeg", "LeftLeg"},     {"LeftLeg", "LeftFoot"},
      {"RightUpLeg", "RightLeg"},   {"RightLeg", "RightFoot"}};
  return *s;
}

const std::vector<Segment>& RobotLimbs() {
  static const auto* s = new std::vector<Segment>{
      {"Shoulder.L", "UpperArm.L"}, {"UpperArm.L", "LowerArm.L"},
      {"LowerArm.L", "Palm2.L"},    {"Shoulder.R", "UpperArm.R"},
      {"UpperArm.R", "LowerArm.R"}, {"LowerArm.R", "Palm2.R"},
      {"UpperLeg.L", "LowerLeg.L"}, {"LowerLeg.L", ""},
      {"UpperLeg.R", "LowerLeg.R"}, {"LowerLeg.R", ""}};
  return *s;
}

const std::vector<Segment>& DazLimbs() {
  static const auto* s = new std::vector<Segment>{
      {"lCollar", "lShldr"}, {"lShldr", "lForeArm"}, {"lForeArm", "lHand"},
      {"rCollar", "rShldr"}, {"rShldr", "rForeArm"}, {"rForeArm", "rHand"},
      {"lThigh", "lShin"},   {"lShin", "lFoot"},     {"rThigh", "rShin"},
      {"rShin", "rFoot"}};
  return *s;
}

struct Rigs {
  ImportedAsset walk = Load("cmu_131_01_walk.bvh");
  ImportedAsset run_leap = Load("cmu_49_04_run_leap.bvh");
  ImportedAsset jumps = Load("cmu_01_01_jumps.bvh");
  ImportedAsset robot = Load("RobotExpressive.glb");
  ImportedAsset daz = Load("cmu_02_03_run_daz.bvh");
};

const Rigs& TheRigs() {
  static const Rigs* rigs = new Rigs;
  return *rigs;
}

RetargetMap MapOf(const ImportedAsset& from, const ImportedAsset& to) {
  RetargetOptions options;
  options.source_tips = Tips(from);
  options.target_tips = Tips(to);
  absl::StatusOr<RetargetMap> map =
      RetargetMap::Create(from.skeleton, to.skeleton, {}, options);
  EXPECT_TRUE(map.ok()) << map.status();
  return *std::move(map);
}

// `from` (limb segments `src_segs`) onto `to` (`tgt_segs`) over 240
// frames: limb directions within median 2 and p95 5 degrees of the
// source's, bone lengths the target's.
void ExpectLimbsFollow(const ImportedAsset& from,
                       const std::vector<Segment>& src_segs,
                       const ImportedAsset& to,
                       const std::vector<Segment>& tgt_segs,
                       const char* label) {
  const RetargetMap map = MapOf(from, to);
  const std::vector<LocalPose> src = Frames(from, 240);
  std::vector<LocalPose> tgt;
  for (const LocalPose& p : src) tgt.push_back(Retarget(map, from, to, p));
  const Errors e = CompareSegments(from, to, src_segs, tgt_segs, src, tgt);
  const float median = Percentile(e.degrees, 0.5f);
  const float p95 = Percentile(e.degrees, 0.95f);
  ::testing::Test::RecordProperty(std::string(label) + "_median_deg",
                                  std::to_string(median));
  ::testing::Test::RecordProperty(std::string(label) + "_p95_deg",
                                  std::to_string(p95));
  std::printf(
      "%s: limb segment direction error median %.4f deg, p95 %.4f "
      "deg, max %.4f deg over %zu segments\n",
      label, median, p95, Percentile(e.degrees, 1.0f), e.degrees.size());
  EXPECT_LE(median, 2.0f);
  EXPECT_LE(p95, 5.0f);
  // Bone lengths: every local translation but the pelvis's is the target's.
  const LocalPose rest = RestPose(to.skeleton);
  for (const LocalPose& p : tgt) {
    for (int j = 0; j < to.skeleton.num_joints(); ++j) {
      if (j == map.target_pelvis()) continue;
      ASSERT_EQ(std::memcmp(p[j].translation.data(), rest[j].translation.data(),
                            sizeof(float) * 3),
                0)
          << to.skeleton.joint_name(j);
    }
  }
}

TEST(RetargetTest, Retarget_CmuWalkOntoRobotExpressiveLimbsFollowTheSource) {
  ExpectLimbsFollow(TheRigs().walk, CmuLimbs(), TheRigs().robot, RobotLimbs(),
                    "walk_to_robot");
}

TEST(RetargetTest, Retarget_CmuWalkOntoDazRigLimbsFollowTheSource) {
  ExpectLimbsFollow(TheRigs().walk, CmuLimbs(), TheRigs().daz, DazLimbs(),
                    "walk_to_daz");
}

// The fast clips of CMU subjects 49 and 1 (another naming) onto both rigs.
TEST(RetargetTest, Retarget_CmuRunLeapOntoBothRigsLimbsFollowTheSource) {
  const Rigs& r = TheRigs();
  ExpectLimbsFollow(r.run_leap, CmuLimbsUpLeg(), r.robot, RobotLimbs(),
                    "run_leap_to_robot");
  ExpectLimbsFollow(r.run_leap, CmuLimbsUpLeg(), r.daz, DazLimbs(),
                    "run_leap_to_daz");
}

TEST(RetargetTest, Retarget_CmuJumpsOntoBothRigsLimbsFollowTheSource) {
  const Rigs& r = TheRigs();
  ExpectLimbsFollow(r.jumps, CmuLimbsUpLeg(), r.robot, RobotLimbs(),
                    "jumps_to_robot");
  ExpectLimbsFollow(r.jumps, CmuLimbsUpLeg(), r.daz, DazLimbs(),
                    "jumps_to_daz");
}

TEST(RetargetTest, Retarget_SpineBonesAndDistributedNeckFollowTheSource) {
  // The spines map bone to bone (Chest, Chest2 onto abdomen, chest; CMU's
  // zero-length lowerback is left out). CMU's neck (lowerneck, Neck, Head)
  // onto Daz's (neck, head) is distributed: Daz's neck bone stands for the
  // whole of CMU's lowerneck-Neck-Head line.
  const Rigs& r = TheRigs();
  const RetargetMap map = MapOf(r.walk, r.daz);
  const std::vector<LocalPose> src = Frames(r.walk, 120);
  std::vector<LocalPose> tgt;
  for (const LocalPose& p : src) tgt.push_back(Retarget(map, r.walk, r.daz, p));
  const std::vector<Segment> s = {
      {"Chest", "Chest2"}, {"Chest2", "lowerneck"}, {"lowerneck", "Head"}};
  const std::vector<Segment> t = {
      {"abdomen", "chest"}, {"chest", "neck"}, {"neck", "head"}};
  for (size_t i = 0; i < s.size(); ++i) {
    const Errors e = CompareSegments(r.walk, r.daz, {s[i]}, {t[i]}, src, tgt);
    std::printf(
        "walk_to_daz %s-%s onto %s-%s: median %.4f deg, p95 %.4f "
        "deg\n",
        s[i].from.c_str(), s[i].to.c_str(), t[i].from.c_str(), t[i].to.c_str(),
        Percentile(e.degrees, 0.5f), Percentile(e.degrees, 0.95f));
    EXPECT_LE(Percentile(e.degrees, 0.5f), 2.0f) << t[i].from;
    EXPECT_LE(Percentile(e.degrees, 0.95f), 5.0f) << t[i].from;
  }
}

TEST(RetargetTest, Retarget_DetectsChainsOnBothRigs) {
  const Rigs& r = TheRigs();
  const RetargetMap map = MapOf(r.walk, r.daz);
  std::vector<std::string> names;
  for (const RetargetChain& c : map.chains()) names.push_back(c.name);
  EXPECT_THAT(names,
              ::testing::ElementsAre("pelvis", "spine", "neck", "left_clavicle",
                                     "left_arm", "right_clavicle", "right_arm",
                                     "left_leg", "right_leg"));
  // CMU's neck has three bones (lowerneck, Neck, Head), Daz's two.
  EXPECT_EQ(map.chains()[2].source.size(), 3u);
  EXPECT_EQ(map.chains()[2].target.size(), 2u);
  // Robot feet are calf tips: its legs map thigh and calf only.
  const RetargetMap robot = MapOf(r.walk, r.robot);
  EXPECT_EQ(robot.chains().back().target.size(), 2u);
}

TEST(RetargetTest, Retarget_RootMotionScaledByLegLength) {
  const Rigs& r = TheRigs();
  const RetargetMap map = MapOf(r.walk, r.daz);
  // Leg lengths computed here: thigh to knee to ankle, both sides.
  auto leg = [](const ImportedAsset& a, const char* h, const char* k,
                const char* f) {
    const std::vector<Transform> m = Model(a.skeleton, a.skeleton.rest_pose());
    const Eigen::Vector3f ph = m[a.skeleton.FindJoint(h)].translation;
    const Eigen::Vector3f pk = m[a.skeleton.FindJoint(k)].translation;
    const Eigen::Vector3f pf = m[a.skeleton.FindJoint(f)].translation;
    return (pk - ph).norm() + (pf - pk).norm();
  };
  const float src = (leg(r.walk, "LeftHip", "LeftKnee", "LeftAnkle") +
                     leg(r.walk, "RightHip", "RightKnee", "RightAnkle")) /
                    2;
  const float tgt = (leg(r.daz, "lThigh", "lShin", "lFoot") +
                     leg(r.daz, "rThigh", "rShin", "rFoot")) /
                    2;
  EXPECT_NEAR(map.root_scale(), tgt / src, 1e-5f * tgt / src);

  const std::vector<LocalPose> src_frames = Frames(r.walk, 20);
  const int sp = r.walk.skeleton.FindJoint("Hips");
  const int tp = r.daz.skeleton.FindJoint("hip");
  const Eigen::Vector3f src_rest =
      Model(r.walk.skeleton, r.walk.skeleton.rest_pose())[sp].translation;
  const Eigen::Vector3f tgt_rest =
      Model(r.daz.skeleton, r.daz.skeleton.rest_pose())[tp].translation;
  for (const LocalPose& p : src_frames) {
    const LocalPose out = Retarget(map, r.walk, r.daz, p);
    const Eigen::Vector3f s = Model(r.walk.skeleton, p)[sp].translation;
    const Eigen::Vector3f t = Model(r.daz.skeleton, out)[tp].translation;
    const Eigen::Vector3f want = tgt_rest + (s - src_rest) * map.root_scale();
    EXPECT_LT((t - want).norm(), 1e-4f * tgt);
  }

  RetargetOptions options;
  options.root_scale = 2.5f;
  absl::StatusOr<RetargetMap> fixed =
      RetargetMap::Create(r.walk.skeleton, r.daz.skeleton, {}, options);
  ASSERT_TRUE(fixed.ok()) << fixed.status();
  EXPECT_EQ(fixed->root_scale(), 2.5f);
}

TEST(RetargetTest, Retarget_RoundTripCmuToDazAndBackWithinOneDegree) {
  const Rigs& r = TheRigs();
  const RetargetMap there = MapOf(r.walk, r.daz);
  const RetargetMap back = MapOf(r.daz, r.walk);
  const std::vector<LocalPose> src = Frames(r.walk, 120);
  std::vector<LocalPose> again;
  for (const LocalPose& p : src) {
    const LocalPose daz = Retarget(there, r.walk, r.daz, p);
    LocalPose out = p;  // unmapped joints keep the original's pose
    RetargetJob job;
    job.map = &back;
    job.source_skeleton = &r.daz.skeleton;
    job.target_skeleton = &r.walk.skeleton;
    job.source = daz;
    job.input = p;
    job.output = absl::MakeSpan(out);
    ASSERT_TRUE(job.Run().ok());
    again.push_back(std::move(out));
  }
  const Errors e =
      CompareSegments(r.walk, r.walk, CmuLimbs(), CmuLimbs(), src, again);
  const float median = Percentile(e.degrees, 0.5f);
  std::printf("round trip walk->daz->walk: median %.6f deg, p95 %.6f deg\n",
              median, Percentile(e.degrees, 0.95f));
  EXPECT_LE(median, 1.0f);
}

TEST(RetargetTest, Retarget_IdenticalSkeletonsGiveTheSourcePoseBitForBit) {
  const Rigs& r = TheRigs();
  absl::StatusOr<RetargetMap> map =
      RetargetMap::Create(r.walk.skeleton, r.walk.skeleton);
  ASSERT_TRUE(map.ok()) << map.status();
  EXPECT_TRUE(map->identity());
  for (const LocalPose& p : Frames(r.walk, 10)) {
    const LocalPose out = Retarget(*map, r.walk, r.walk, p);
    ASSERT_TRUE(SameBits(out, p));
  }
}

TEST(RetargetTest, Retarget_SameInputSameBits) {
  const Rigs& r = TheRigs();
  const RetargetMap a = MapOf(r.walk, r.robot);
  const RetargetMap b = MapOf(r.walk, r.robot);
  for (const LocalPose& p : Frames(r.walk, 10)) {
    const LocalPose x = Retarget(a, r.walk, r.robot, p);
    const LocalPose y = Retarget(b, r.walk, r.robot, p);
    ASSERT_TRUE(SameBits(x, y));
  }
}

TEST(RetargetTest, Retarget_ScratchGivesTheSameBitsAndMustBeSeparate) {
  const Rigs& r = TheRigs();
  const RetargetMap map = MapOf(r.walk, r.robot);
  std::vector<Transform> scratch(r.walk.skeleton.num_joints() +
                                 r.robot.skeleton.num_joints());
  for (const LocalPose& p : Frames(r.walk, 5)) {
    LocalPose out = RestPose(r.robot.skeleton);
    RetargetJob job = JobFor(map, r.walk, r.robot, p, out);
    job.scratch = absl::MakeSpan(scratch);
    ASSERT_TRUE(job.Run().ok());
    ASSERT_TRUE(SameBits(out, Retarget(map, r.walk, r.robot, p)));
    // Scratch that is the output is refused.
    job.scratch = absl::MakeSpan(out);
    const absl::Status s = job.Validate();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("scratch"));
  }
}

TEST(RetargetTest, Retarget_ValidatedInputSkipsItsTransformsNotItsSize) {
  const Rigs& r = TheRigs();
  const RetargetMap map = MapOf(r.walk, r.robot);
  const LocalPose source = Frames(r.walk, 2)[0];
  LocalPose out = RestPose(r.robot.skeleton);
  out[1].rotation.coeffs() *= 1.01f;  // off unit length
  RetargetJob job = JobFor(map, r.walk, r.robot, source, out);
  const absl::Status checked = job.Validate();
  EXPECT_EQ(checked.code(), absl::StatusCode::kInvalidArgument) << checked;
  EXPECT_THAT(std::string(checked.message()), ::testing::HasSubstr("input[1]"));
  job.input_validated = true;
  EXPECT_TRUE(job.Validate().ok());
  job.input = absl::MakeConstSpan(out).first(out.size() - 1);
  EXPECT_THAT(std::string(job.Validate().message()),
              ::testing::HasSubstr("transforms for a skeleton of"));
}

TEST(RetargetTest, Retarget_ExplicitMappingMatchesDetectedLimbs) {
  const Rigs& r = TheRigs();
  RetargetMapping m;
  m.source_pelvis = "Hips";
  m.target_pelvis = "hip";
  m.chains = {{"left_leg",
               {"LeftHip", "LeftKnee", "LeftAnkle"},
               {"lThigh", "lShin", "lFoot"}},
              {"right_leg",
               {"RightHip", "RightKnee", "RightAnkle"},
               {"rThigh", "rShin", "rFoot"}}};
  absl::StatusOr<RetargetMap> map =
      RetargetMap::Create(r.walk.skeleton, r.daz.skeleton, m);
  ASSERT_TRUE(map.ok()) << map.status();
  const RetargetMap detected = MapOf(r.walk, r.daz);
  EXPECT_EQ(map->root_scale(), detected.root_scale());
  const std::vector<LocalPose> src = Frames(r.walk, 30);
  std::vector<LocalPose> tgt;
  for (const LocalPose& p : src)
    tgt.push_back(Retarget(*map, r.walk, r.daz, p));
  // The thigh segment's direction is the last segment of a chain without an
  // end: checked on the thigh (hip to knee) only.
  const std::vector<Segment> s = {{"LeftHip", "LeftKnee"},
                                  {"RightHip", "RightKnee"}};
  const std::vector<Segment> t = {{"lThigh", "lShin"}, {"rThigh", "rShin"}};
  const Errors e = CompareSegments(r.walk, r.daz, s, t, src, tgt);
  EXPECT_LE(Percentile(e.degrees, 1.0f), 0.01f);
}

absl::Status CreateWith(const RetargetMapping& m) {
  const Rigs& r = TheRigs();
  return RetargetMap::Create(r.walk.skeleton, r.daz.skeleton, m).status();
}

RetargetMapping LegMapping() {
  RetargetMapping m;
  m.source_pelvis = "Hips";
  m.target_pelvis = "hip";
  m.chains = {{"left_leg", {"LeftHip", "LeftKnee"}, {"lThigh", "lShin"}}};
  return m;
}

TEST(RetargetTest, Retarget_ChainToMissingBoneIsNotFoundNamingIt) {
  RetargetMapping m = LegMapping();
  m.chains[0].target[1] = "lKnee";
  const absl::Status s = CreateWith(m);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("mapping.chains[0].target[1]"));
  EXPECT_THAT(s.message(), HasSubstr("'lKnee'"));
}

TEST(RetargetTest, Retarget_RepeatedJointInChainIsACycle) {
  RetargetMapping m = LegMapping();
  m.chains[0].source = {"LeftHip", "LeftKnee", "LeftHip"};
  const absl::Status s = CreateWith(m);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("mapping.chains[0].source[2]"));
  EXPECT_THAT(s.message(), HasSubstr("cycle"));
}

TEST(RetargetTest, Retarget_ChainGoingUpIsRefused) {
  RetargetMapping m = LegMapping();
  m.chains[0].target = {"lShin", "lThigh"};
  const absl::Status s = CreateWith(m);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'lThigh' is not below 'lShin'"));
}

TEST(RetargetTest, Retarget_TargetJointInTwoChainsIsRefused) {
  RetargetMapping m = LegMapping();
  m.chains.push_back({"again", {"RightKnee"}, {"lShin"}});
  const absl::Status s = CreateWith(m);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("mapping.chains[1].target[0]"));
  EXPECT_THAT(s.message(), HasSubstr("already mapped"));
}

TEST(RetargetTest, Retarget_ExplicitMappingNeedsBothPelves) {
  RetargetMapping m = LegMapping();
  m.target_pelvis.clear();
  const absl::Status s = CreateWith(m);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("mapping.target_pelvis"));
}

TEST(RetargetTest, Retarget_SkeletonsSharingNothingAreNotFound) {
  SkeletonDesc desc;
  desc.joint_names = {"a", "b"};
  desc.parents = {-1, 0};
  desc.rest_pose.resize(2);
  desc.rest_pose[1].translation = Eigen::Vector3f(0, 1, 0);
  absl::StatusOr<Skeleton> stick = Skeleton::Create(desc);
  ASSERT_TRUE(stick.ok());
  const absl::Status s =
      RetargetMap::Create(TheRigs().walk.skeleton, *stick).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("target skeleton"));
}

TEST(RetargetTest, Retarget_FollowTakesTheSourceBonesRotation) {
  const Rigs& r = TheRigs();
  RetargetMapping m;
  m.follow = {{"lToe", "LeftToe"}};
  RetargetOptions options;
  const absl::Status bad =
      RetargetMap::Create(r.walk.skeleton, r.daz.skeleton, m, options).status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(bad.message(), HasSubstr("mapping.follow[0].target"));
  m.follow = {{"leftEye", "Head"}};
  absl::StatusOr<RetargetMap> map =
      RetargetMap::Create(r.walk.skeleton, r.daz.skeleton, m, options);
  ASSERT_TRUE(map.ok()) << map.status();
  const LocalPose src = Frames(r.walk, 5)[3];
  const LocalPose out = Retarget(*map, r.walk, r.daz, src);
  const int eye = r.daz.skeleton.FindJoint("leftEye");
  const int head = r.walk.skeleton.FindJoint("Head");
  const Eigen::Quaternionf d =
      Model(r.walk.skeleton, src)[head].rotation *
      Model(r.walk.skeleton, r.walk.skeleton.rest_pose())[head]
          .rotation.conjugate();
  const Eigen::Quaternionf want =
      d * Model(r.daz.skeleton, r.daz.skeleton.rest_pose())[eye].rotation;
  const Eigen::Quaternionf got = Model(r.daz.skeleton, out)[eye].rotation;
  EXPECT_GT(std::fabs(want.dot(got)), 1.0f - 1e-5f);
}

TEST(RetargetTest, Retarget_BadPosesAreRefused) {
  const Rigs& r = TheRigs();
  const RetargetMap map = MapOf(r.walk, r.daz);
  LocalPose src = RestPose(r.walk.skeleton);
  src[3].rotation.coeffs() *= 2.0f;
  LocalPose out = RestPose(r.daz.skeleton);
  RetargetJob job = JobFor(map, r.walk, r.daz, src, out);
  const absl::Status s = job.Run();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("source"));
  job.source_skeleton = &r.daz.skeleton;
  EXPECT_THAT(job.Validate().message(), HasSubstr("compiled for"));
}

// The feet pass, frame by frame with its state threaded. A foot point is
// named by a joint, or by a joint whose end site (glTF tip) it is.
struct FootPoint {
  std::string joint;
  bool tip = false;
};

Eigen::Vector3f FootAt(const ImportedAsset& asset,
                       absl::Span<const Transform> model, const FootPoint& p) {
  const int j = asset.skeleton.FindJoint(p.joint);
  EXPECT_GE(j, 0) << p.joint;
  if (!p.tip) return model[j].translation;
  for (const EndSite& e : asset.end_sites) {
    if (e.joint == j) return model[j].TransformPoint(e.offset);
  }
  ADD_FAILURE() << p.joint << " has no end site";
  return model[j].translation;
}

float TargetLegLength(const ImportedAsset& to, const char* thigh,
                      const char* calf, const FootPoint& foot) {
  const std::vector<Transform> m = Model(to.skeleton, to.skeleton.rest_pose());
  const Eigen::Vector3f a = m[to.skeleton.FindJoint(thigh)].translation;
  const Eigen::Vector3f b = m[to.skeleton.FindJoint(calf)].translation;
  return (b - a).norm() + (FootAt(to, m, foot) - b).norm();
}

struct FeetRun {
  int frames = 0;
  std::array<int, 2> contact_frames = {};
  std::array<int, 2> contacts = {};
  // Max displacement of a target foot point from where its contact began,
  // over every detected contact, with the pass and with the transfer only.
  float slide_with = 0.0f;
  float slide_without = 0.0f;
  // The source's own: in source leg lengths.
  float slide_source = 0.0f;
  bool finite = true;
  bool bone_lengths_exact = true;
  int unreachable = 0;
  float max_drop = 0.0f;
  std::vector<bool> dropped;
  std::vector<LocalPose> source;
  std::vector<LocalPose> solved;
  // Per foot: frames within a release time of that foot's contacts.
  std::array<std::vector<bool>, 2> near_contact;
};

// Every frame of the clip at 60 Hz.
FeetRun RunFeet(const ImportedAsset& from, const ImportedAsset& to,
                const std::array<FootPoint, 2>& feet_points,
                const RetargetFeetOptions& options = {}) {
  FeetRun run;
  const RetargetMap map = MapOf(from, to);
  absl::StatusOr<RetargetFeet> feet =
      RetargetFeet::Create(map, from.skeleton, to.skeleton);
  EXPECT_TRUE(feet.ok()) << feet.status();
  if (!feet.ok()) return run;
  const float duration = from.clips.at(0).duration;
  const int count = static_cast<int>(std::lround(duration * 60.0f)) + 1;
  const float dt = duration / static_cast<float>(count - 1);
  run.source = Frames(from, count);
  run.frames = count;
  const LocalPose rest = RestPose(to.skeleton);
  RetargetFeetState state;
  std::array<Eigen::Vector3f, 2> start_with;
  std::array<Eigen::Vector3f, 2> start_without;
  std::array<Eigen::Vector3f, 2> start_source;
  std::array<bool, 2> was = {false, false};
  std::vector<std::array<bool, 2>> contact(count);
  for (int f = 0; f < count; ++f) {
    LocalPose fk = RestPose(to.skeleton);
    EXPECT_TRUE(JobFor(map, from, to, run.source[f], fk).Run().ok());
    LocalPose out = fk;
    RetargetFeetJob job;
    job.map = &map;
    job.feet = &*feet;
    job.source_skeleton = &from.skeleton;
    job.target_skeleton = &to.skeleton;
    job.source = run.source[f];
    job.input = out;
    job.output = absl::MakeSpan(out);
    job.options = options;
    job.dt = dt;
    job.state = &state;
    job.next_state = &state;
    RetargetFeetResult result;
    job.result = &result;
    const absl::Status s = job.Run();
    EXPECT_TRUE(s.ok()) << s;
    const std::vector<Transform> mw = Model(to.skeleton, out);
    const std::vector<Transform> mo = Model(to.skeleton, fk);
    const std::vector<Transform> ms = Model(from.skeleton, run.source[f]);
    for (int j = 0; j < to.skeleton.num_joints(); ++j) {
      if (!mw[j].translation.allFinite() ||
          !mw[j].rotation.coeffs().allFinite()) {
        run.finite = false;
      }
      if (j != map.target_pelvis() &&
          std::memcmp(out[j].translation.data(), rest[j].translation.data(),
                      sizeof(float) * 3) != 0) {
        run.bone_lengths_exact = false;
      }
    }
    run.max_drop = std::max(run.max_drop, result.pelvis_drop);
    run.dropped.push_back(result.pelvis_drop > 0.0f);
    for (int i = 0; i < 2; ++i) {
      run.unreachable += result.unreachable[i] ? 1 : 0;
      contact[f][i] = result.contact[i];
      const Eigen::Vector3f w = FootAt(to, mw, feet_points[i]);
      const Eigen::Vector3f o = FootAt(to, mo, feet_points[i]);
      const Eigen::Vector3f sf = ms[feet->legs()[i].source_end].translation;
      if (result.contact[i]) {
        ++run.contact_frames[i];
        if (!was[i]) {
          ++run.contacts[i];
          start_with[i] = w;
          start_without[i] = o;
          start_source[i] = sf;
        }
        run.slide_source =
            std::max(run.slide_source,
                     (sf - start_source[i]).norm() / feet->source_leg_length());
        run.slide_with = std::max(run.slide_with, (w - start_with[i]).norm());
        run.slide_without =
            std::max(run.slide_without, (o - start_without[i]).norm());
      }
      was[i] = result.contact[i];
    }
    run.solved.push_back(std::move(out));
  }
  // Frames within a release time of a foot's contact are "near" it.
  const int margin = static_cast<int>(std::ceil(options.release_time / dt)) + 1;
  for (int i = 0; i < 2; ++i) {
    run.near_contact[i].assign(count, false);
    for (int f = 0; f < count; ++f) {
      if (!contact[f][i]) continue;
      for (int g = std::max(0, f - margin);
           g <= std::min(count - 1, f + margin); ++g) {
        run.near_contact[i][g] = true;
      }
    }
  }
  return run;
}

const std::array<FootPoint, 2>& RobotFeet() {
  static const auto* f = new std::array<FootPoint, 2>{
      FootPoint{"LowerLeg.L", true}, FootPoint{"LowerLeg.R", true}};
  return *f;
}

const std::array<FootPoint, 2>& DazFeet() {
  static const auto* f =
      new std::array<FootPoint, 2>{FootPoint{"lFoot"}, FootPoint{"rFoot"}};
  return *f;
}

void ExpectFeetPlanted(const ImportedAsset& from, const ImportedAsset& to,
                       const std::array<FootPoint, 2>& feet_points,
                       float leg_length, const std::vector<Segment>& src_segs,
                       const std::vector<Segment>& tgt_segs, const char* label,
                       bool walk) {
  const FeetRun run = RunFeet(from, to, feet_points);
  std::printf(
      "%s: %d frames, contact frames L %d (%d contacts) R %d (%d contacts), "
      "sliding with the pass %.5f (%.4f leg), transfer only %.5f (%.4f leg), "
      "dragged %d, pelvis drop max %.4f leg, source slide %.4f leg\n",
      label, run.frames, run.contact_frames[0], run.contacts[0],
      run.contact_frames[1], run.contacts[1], run.slide_with,
      run.slide_with / leg_length, run.slide_without,
      run.slide_without / leg_length, run.unreachable,
      run.max_drop / leg_length, run.slide_source);
  ::testing::Test::RecordProperty(std::string(label) + "_slide_with_legs",
                                  std::to_string(run.slide_with / leg_length));
  ::testing::Test::RecordProperty(
      std::string(label) + "_slide_without_legs",
      std::to_string(run.slide_without / leg_length));
  EXPECT_TRUE(run.finite);
  EXPECT_TRUE(run.bone_lengths_exact);
  for (int i = 0; i < 2; ++i) EXPECT_GT(run.contacts[i], 0) << i;
  if (walk) {
    for (int i = 0; i < 2; ++i) {
      const float fraction =
          static_cast<float>(run.contact_frames[i]) / run.frames;
      EXPECT_GE(fraction, 0.3f) << i;
      EXPECT_LE(fraction, 0.7f) << i;
    }
  }
  EXPECT_LE(run.slide_with, 0.011f * leg_length);
  // The pass is what plants the feet: the transfer alone slides more.
  EXPECT_GT(run.slide_without, 2.0f * run.slide_with);
  EXPECT_GT(run.slide_without, 0.011f * leg_length);

  // Away from contacts the limbs still follow the source: the arms on
  // every frame, each leg (segments 6-7 left, 8-9 right) away from its
  // foot's contacts and while the pelvis is where the transfer put it (a
  // lowered pelvis bends both knees).
  std::vector<float> degrees;
  for (int f = 0; f < run.frames; ++f) {
    for (size_t k = 0; k < src_segs.size(); ++k) {
      const int leg = k < 6 ? -1 : (k < 8 ? 0 : 1);
      if (leg >= 0 && (run.near_contact[leg][f] || run.dropped[f])) continue;
      const Errors e = CompareSegments(from, to, {src_segs[k]}, {tgt_segs[k]},
                                       {run.source[f]}, {run.solved[f]});
      degrees.push_back(e.degrees[0]);
    }
  }
  std::printf(
      "%s: limb error away from contacts (%zu segments) median %.4f deg, "
      "p95 %.4f deg\n",
      label, degrees.size(), Percentile(degrees, 0.5f),
      Percentile(degrees, 0.95f));
  EXPECT_LE(Percentile(degrees, 0.5f), 2.0f);
  EXPECT_LE(Percentile(degrees, 0.95f), 5.0f);
}

float RobotLeg() {
  const Rigs& r = TheRigs();
  return (TargetLegLength(r.robot, "UpperLeg.L", "LowerLeg.L", RobotFeet()[0]) +
          TargetLegLength(r.robot, "UpperLeg.R", "LowerLeg.R",
                          RobotFeet()[1])) /
         2;
}

float DazLeg() {
  const Rigs& r = TheRigs();
  return (TargetLegLength(r.daz, "lThigh", "lShin", DazFeet()[0]) +
          TargetLegLength(r.daz, "rThigh", "rShin", DazFeet()[1])) /
         2;
}

TEST(RetargetFeetTest, RetargetFeet_WalkOntoRobotKeepsContactsPlanted) {
  const Rigs& r = TheRigs();
  ExpectFeetPlanted(r.walk, r.robot, RobotFeet(), RobotLeg(), CmuLimbs(),
                    RobotLimbs(), "feet_walk_to_robot", true);
}

TEST(RetargetFeetTest, RetargetFeet_WalkOntoDazKeepsContactsPlanted) {
  const Rigs& r = TheRigs();
  ExpectFeetPlanted(r.walk, r.daz, DazFeet(), DazLeg(), CmuLimbs(), DazLimbs(),
                    "feet_walk_to_daz", true);
}

TEST(RetargetFeetTest, RetargetFeet_RunLeapOntoRobotKeepsContactsPlanted) {
  const Rigs& r = TheRigs();
  ExpectFeetPlanted(r.run_leap, r.robot, RobotFeet(), RobotLeg(),
                    CmuLimbsUpLeg(), RobotLimbs(), "feet_run_leap_to_robot",
                    false);
}

TEST(RetargetFeetTest, RetargetFeet_RunLeapOntoDazKeepsContactsPlanted) {
  const Rigs& r = TheRigs();
  ExpectFeetPlanted(r.run_leap, r.daz, DazFeet(), DazLeg(), CmuLimbsUpLeg(),
                    DazLimbs(), "feet_run_leap_to_daz", false);
}

TEST(RetargetFeetTest, RetargetFeet_JumpsOntoRobotKeepsContactsPlanted) {
  const Rigs& r = TheRigs();
  ExpectFeetPlanted(r.jumps, r.robot, RobotFeet(), RobotLeg(), CmuLimbsUpLeg(),
                    RobotLimbs(), "feet_jumps_to_robot", false);
}

TEST(RetargetFeetTest, RetargetFeet_JumpsOntoDazKeepsContactsPlanted) {
  const Rigs& r = TheRigs();
  ExpectFeetPlanted(r.jumps, r.daz, DazFeet(), DazLeg(), CmuLimbsUpLeg(),
                    DazLimbs(), "feet_jumps_to_daz", false);
}

TEST(RetargetFeetTest, RetargetFeet_BadOptionsAreRefusedNamingTheField) {
  RetargetFeetOptions o;
  EXPECT_TRUE(o.Validate().ok());
  o.contact_speed = -1.0f;
  EXPECT_THAT(o.Validate().message(), HasSubstr("feet.contact_speed"));
  o = {};
  o.contact_height = std::nanf("");
  EXPECT_THAT(o.Validate().message(), HasSubstr("feet.contact_height"));
  o = {};
  o.hysteresis = 0.5f;
  EXPECT_THAT(o.Validate().message(), HasSubstr("feet.hysteresis"));
  o = {};
  o.release_time = -0.1f;
  EXPECT_THAT(o.Validate().message(), HasSubstr("feet.release_time"));
  o = {};
  o.scaled_source_weight = 2.0f;
  EXPECT_THAT(o.Validate().message(), HasSubstr("feet.scaled_source_weight"));
  o = {};
  o.source_floor = INFINITY;
  EXPECT_EQ(o.Validate().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(o.Validate().message(), HasSubstr("feet.source_floor"));
}

TEST(RetargetFeetTest, RetargetFeet_MappingWithoutLegsIsAFailedPrecondition) {
  const Rigs& r = TheRigs();
  RetargetMapping m = LegMapping();  // left_leg only
  absl::StatusOr<RetargetMap> map =
      RetargetMap::Create(r.walk.skeleton, r.daz.skeleton, m);
  ASSERT_TRUE(map.ok()) << map.status();
  const absl::Status s =
      RetargetFeet::Create(*map, r.walk.skeleton, r.daz.skeleton).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("left_leg"));
}

// ---- hands pass

struct HandsRun {
  int hands = 0;             // hand frames solved
  int unreachable = 0;       // of them, beyond the arm's reach
  float max_miss = 0;        // reachable goal to solved hand, arm lengths
  float max_goal_error = 0;  // pass's goal against the test's, arm lengths
  float mean_moved = 0;      // transfer's hand to the goal, arm lengths
  bool bone_lengths_exact = true;
  bool hand_rotations_kept = true;
  // The pass's reach verdict differs from the test's (outside rounding).
  bool reach_disagrees = false;
};

// Every frame of `from` (at 60 fps, at most 600) transferred onto `to`,
// then the hands pass at `weight`; the hand points measured from outside.
HandsRun RunHands(const ImportedAsset& from, const ImportedAsset& to,
                  float weight) {
  HandsRun run;
  const RetargetMap map = MapOf(from, to);
  absl::StatusOr<RetargetHands> hands =
      RetargetHands::Create(map, from.skeleton, to.skeleton);
  EXPECT_TRUE(hands.ok()) << hands.status();
  if (!hands.ok()) return run;
  const int count = std::min(
      600, static_cast<int>(std::lround(from.clips.at(0).duration * 60)) + 1);
  const std::vector<LocalPose> source = Frames(from, count);
  double moved = 0;
  for (int f = 0; f < count; ++f) {
    LocalPose transferred = RestPose(to.skeleton);
    EXPECT_TRUE(JobFor(map, from, to, source[f], transferred).Run().ok());
    LocalPose out = transferred;
    RetargetHandsJob job;
    job.map = &map;
    job.hands = &*hands;
    job.source_skeleton = &from.skeleton;
    job.target_skeleton = &to.skeleton;
    job.source = source[f];
    job.input = out;
    job.output = absl::MakeSpan(out);
    job.options.scaled_source_weight = weight;
    RetargetHandsResult result;
    job.result = &result;
    const absl::Status s = job.Run();
    EXPECT_TRUE(s.ok()) << s;
    if (!s.ok()) return run;
    const std::vector<Transform> ms = Model(from.skeleton, source[f]);
    const std::vector<Transform> mt = Model(to.skeleton, transferred);
    const std::vector<Transform> mo = Model(to.skeleton, out);
    for (int j = 0; j < to.skeleton.num_joints(); ++j) {
      if (std::memcmp(out[j].translation.data(),
                      transferred[j].translation.data(),
                      sizeof(float) * 3) != 0) {
        run.bone_lengths_exact = false;
      }
    }
    for (int h = 0; h < kRetargetHands; ++h) {
      const auto& arm = hands->arms()[h];
      const float length = arm.target_length;
      // The scaled source hand, computed here from the map's own figures.
      const Eigen::Vector3f scaled = mt[map.target_pelvis()].translation +
                                     (ms[arm.source_end].translation -
                                      ms[map.source_pelvis()].translation) *
                                         map.root_scale();
      const Eigen::Vector3f before =
          mt[arm.lower].TransformPoint(arm.end_offset);
      const Eigen::Vector3f goal = before + (scaled - before) * weight;
      const Eigen::Vector3f after =
          mo[arm.lower].TransformPoint(arm.end_offset);
      ++run.hands;
      moved += (goal - before).norm() / length;
      run.max_goal_error =
          std::max(run.max_goal_error, (result.goal[h] - goal).norm() / length);
      // The arm's reach, measured here on the transferred pose.
      const Eigen::Vector3f shoulder = mt[arm.upper].translation;
      const float upper = (mt[arm.lower].translation - shoulder).norm();
      const float lower = (before - mt[arm.lower].translation).norm();
      const float d = (goal - shoulder).norm();
      const bool out_of_reach = d > (upper + lower) * (1 + 1e-4f) ||
                                d < std::fabs(upper - lower) * (1 - 1e-4f);
      const bool within_reach = d < (upper + lower) * (1 - 1e-4f) &&
                                d > std::fabs(upper - lower) * (1 + 1e-4f);
      if (out_of_reach && !result.unreachable[h]) run.reach_disagrees = true;
      if (within_reach && result.unreachable[h]) run.reach_disagrees = true;
      if (result.unreachable[h]) {
        ++run.unreachable;
      } else {
        run.max_miss = std::max(run.max_miss, (after - goal).norm() / length);
      }
      if (arm.end >= 0 &&
          mo[arm.end].rotation.angularDistance(mt[arm.end].rotation) > 1e-3f) {
        run.hand_rotations_kept = false;
      }
    }
  }
  run.mean_moved = static_cast<float>(moved / std::max(1, run.hands));
  return run;
}

// The hands land where the scaled source puts them (within 0.1% of the
// arm's length where the arm reaches it), bone lengths and the hands' own
// rotations kept, on both rigs, for walking, running and jumping. How many
// goals are out of reach is the rigs' proportions, printed as a figure.
TEST(RetargetHandsTest, RetargetHands_PutTheHandsWhereTheScaledSourceDoes) {
  const Rigs& r = TheRigs();
  for (const ImportedAsset* to : {&r.robot, &r.daz}) {
    for (const ImportedAsset* from : {&r.walk, &r.run_leap, &r.jumps}) {
      const HandsRun run = RunHands(*from, *to, 1.0f);
      std::printf(
          "hands %s onto %s: %d hands, transfer to scaled source %.3f arm "
          "(mean), %d out of reach, largest miss %.2e arm\n",
          from->clips.at(0).name.c_str(), to == &r.robot ? "Robot" : "Daz",
          run.hands, run.mean_moved, run.unreachable, run.max_miss);
      EXPECT_GT(run.hands, 100);
      EXPECT_LT(run.max_miss, 1e-3f);
      EXPECT_LT(run.max_goal_error, 1e-5f);
      EXPECT_FALSE(run.reach_disagrees);
      EXPECT_TRUE(run.bone_lengths_exact);
      EXPECT_TRUE(run.hand_rotations_kept);
    }
  }
}

// Weight 0 keeps the transfer's own hands: the arms hardly move.
TEST(RetargetHandsTest, RetargetHands_WeightZeroKeepsTheTransfersHands) {
  const Rigs& r = TheRigs();
  const HandsRun run = RunHands(r.walk, r.daz, 0.0f);
  EXPECT_EQ(run.mean_moved, 0.0f);
  EXPECT_EQ(run.unreachable, 0);
  EXPECT_LT(run.max_miss, 1e-4f);
}

TEST(RetargetHandsTest, RetargetHands_BadOptionsAndMappingsAreRefused) {
  RetargetHandsOptions o;
  EXPECT_TRUE(o.Validate().ok());
  for (float w : {-0.1f, 1.5f, std::nanf("")}) {
    o.scaled_source_weight = w;
    EXPECT_EQ(o.Validate().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(o.Validate().message(),
                HasSubstr("hands.scaled_source_weight"));
  }
  const Rigs& r = TheRigs();
  absl::StatusOr<RetargetMap> map =
      RetargetMap::Create(r.walk.skeleton, r.daz.skeleton, LegMapping());
  ASSERT_TRUE(map.ok()) << map.status();
  const absl::Status s =
      RetargetHands::Create(*map, r.walk.skeleton, r.daz.skeleton).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(),
              HasSubstr("hands: the mapping has no 'left_arm' chain; the "
                        "hands pass needs both arms"));
}

// A run split in two, the state handed over, gives the same bits as one.
TEST(RetargetFeetTest, RetargetFeet_StateHandedOverContinuesBitForBit) {
  const Rigs& r = TheRigs();
  const RetargetMap map = MapOf(r.walk, r.robot);
  absl::StatusOr<RetargetFeet> feet =
      RetargetFeet::Create(map, r.walk.skeleton, r.robot.skeleton);
  ASSERT_TRUE(feet.ok()) << feet.status();
  const std::vector<LocalPose> src = Frames(r.walk, 120);
  auto step = [&](const LocalPose& p, const RetargetFeetState* in,
                  RetargetFeetState* out) {
    LocalPose pose = RestPose(r.robot.skeleton);
    EXPECT_TRUE(JobFor(map, r.walk, r.robot, p, pose).Run().ok());
    RetargetFeetJob job;
    job.map = &map;
    job.feet = &*feet;
    job.source_skeleton = &r.walk.skeleton;
    job.target_skeleton = &r.robot.skeleton;
    job.source = p;
    job.input = pose;
    job.output = absl::MakeSpan(pose);
    job.dt = 1.0f / 15.0f;
    job.state = in;
    job.next_state = out;
    EXPECT_TRUE(job.Run().ok());
    return pose;
  };
  RetargetFeetState one;
  std::vector<LocalPose> whole;
  for (const LocalPose& p : src) whole.push_back(step(p, &one, &one));
  RetargetFeetState a;
  for (int f = 0; f < 60; ++f) step(src[f], f == 0 ? nullptr : &a, &a);
  RetargetFeetState b = a;  // as a client would resume it
  for (int f = 60; f < 120; ++f) {
    ASSERT_TRUE(SameBits(step(src[f], &b, &b), whole[f])) << f;
  }
  // A bad state is refused, naming it.
  RetargetFeetState bad = b;
  bad.feet[1].release = 2.0f;
  LocalPose pose = RestPose(r.robot.skeleton);
  RetargetFeetJob job;
  job.map = &map;
  job.feet = &*feet;
  job.source_skeleton = &r.walk.skeleton;
  job.target_skeleton = &r.robot.skeleton;
  job.source = src[0];
  job.input = pose;
  job.output = absl::MakeSpan(pose);
  job.state = &bad;
  EXPECT_THAT(job.Validate().message(), HasSubstr("state.feet[1]"));
  job.state = nullptr;
  job.dt = -1.0f;
  EXPECT_THAT(job.Validate().message(), HasSubstr("dt"));
}

}  // namespace
}  // namespace posewire
