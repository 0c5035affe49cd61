// BVH reader: every real file in tests/data, the exact meaning of channels on
// a small hand-written file (checked against rotations built independently
// with Eigen::AngleAxisd), the tolerated quirks (CRLF, tabs, trailing blank
// lines, one extra frame line), and a table of malformed inputs each of which
// must fail with INVALID_ARGUMENT naming the right line.
#include "solver_core/io/bvh_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "solver_core/model/clip.h"

namespace posewire {
namespace bvh_reader_test {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string DataPath(absl::string_view file) {
  return absl::StrCat(POSEWIRE_TEST_DATA_DIR, "/", file);
}

// ---------------------------------------------------------------------------
// Real files.

struct RealFile {
  const char* file;
  int joints;
  int frames;
  int end_sites;
  double frame_time;
  // A few (joint, parent) pairs read off the file by hand.
  std::vector<std::pair<const char*, const char*>> parents;
};

class BvhRealFileTest : public ::testing::TestWithParam<RealFile> {};

TEST_P(BvhRealFileTest, ParsesWithExpectedShapeAndAValidClip) {
  const RealFile& f = GetParam();
  absl::StatusOr<ImportedAsset> asset = ReadBvhFile(DataPath(f.file));
  ASSERT_TRUE(asset.ok()) << asset.status();
  const Skeleton& skeleton = asset->skeleton;
  EXPECT_EQ(skeleton.num_joints(), f.joints);
  EXPECT_EQ(static_cast<int>(asset->end_sites.size()), f.end_sites);
  EXPECT_TRUE(asset->warnings.empty()) << asset->warnings.front();
  EXPECT_EQ(skeleton.parent(0), kNoParent);
  for (const auto& [child, parent] : f.parents) {
    const int c = skeleton.FindJoint(child);
    const int p = skeleton.FindJoint(parent);
    ASSERT_GE(c, 0) << child;
    ASSERT_GE(p, 0) << parent;
    EXPECT_EQ(skeleton.parent(c), p) << child;
  }
  for (const EndSite& end : asset->end_sites) {
    ASSERT_GE(end.joint, 0);
    ASSERT_LT(end.joint, skeleton.num_joints());
    // An End Site hangs off a leaf: no joint has it as parent.
    EXPECT_TRUE(skeleton.children(end.joint).empty())
        << skeleton.joint_name(end.joint);
  }

  ASSERT_EQ(asset->clips.size(), 1u);
  const Clip& clip = asset->clips[0];
  EXPECT_TRUE(clip.Validate(skeleton).ok()) << clip.Validate(skeleton);
  EXPECT_EQ(clip.name, absl::StripSuffix(f.file, ".bvh"));
  EXPECT_NEAR(clip.duration, (f.frames - 1) * f.frame_time, 1e-5 * f.frames);
  for (int j = 0; j < skeleton.num_joints(); ++j) {
    const JointTracks& tracks = clip.tracks[j];
    // Every joint of these files has rotation channels; only the root has
    // position channels; BVH has no scale.
    EXPECT_EQ(static_cast<int>(tracks.rotation.times.size()), f.frames)
        << skeleton.joint_name(j);
    EXPECT_EQ(tracks.translation.empty(), j != 0) << skeleton.joint_name(j);
    EXPECT_TRUE(tracks.scale.empty());
    EXPECT_EQ(tracks.rotation.interpolation, Interpolation::kLinear);
    // Rest pose: OFFSET, no rotation, unit scale.
    EXPECT_TRUE(skeleton.rest_pose()[j].rotation.coeffs() ==
                Eigen::Quaternionf::Identity().coeffs());
    EXPECT_EQ(skeleton.rest_pose()[j].scale, Eigen::Vector3f::Ones());
  }
  const Track<Eigen::Quaternionf>& root = clip.tracks[0].rotation;
  EXPECT_EQ(root.times.front(), 0.0f);
  EXPECT_NEAR(root.times[1], f.frame_time, 1e-7);
  EXPECT_EQ(root.times.back(), clip.duration);
}

INSTANTIATE_TEST_SUITE_P(
    AllDataFiles, BvhRealFileTest,
    ::testing::Values(
        RealFile{"cmu_131_01_walk.bvh",
                 31,
                 994,
                 7,
                 0.0083333,
                 {{"LeftKnee", "LeftHip"},
                  {"LThumb", "LeftWrist"},
                  {"RightCollar", "Chest2"},
                  {"lowerback", "Hips"}}},
        RealFile{"cmu_02_03_run_daz.bvh",
                 43,
                 174,
                 14,
                 0.00833333,
                 {{"abdomen", "hip"},
                  {"rightEye", "head"},
                  {"lPinky2", "lPinky1"},
                  {"lButtock", "hip"}}},
        RealFile{"cmu_49_04_run_leap.bvh",
                 31,
                 252,
                 7,
                 0.0083333,
                 {{"LeftLeg", "LeftUpLeg"}, {"Head", "Neck1"}}},
        RealFile{"cmu_01_01_jumps.bvh",
                 31,
                 2752,
                 7,
                 0.0083333,
                 {{"LeftFoot", "LeftLeg"}, {"LowerBack", "Hips"}}},
        RealFile{"cmu_01_03_climb_reach.bvh",
                 31,
                 4511,
                 7,
                 0.0083333,
                 {{"RightToeBase", "RightFoot"}, {"Spine", "LowerBack"}}},
        RealFile{"threejs_pirouette_cmu.bvh",
                 43,
                 592,
                 14,
                 0.00833333,
                 {{"chest", "abdomen"}, {"lShin", "lThigh"}}}),
    [](const ::testing::TestParamInfo<RealFile>& info) {
      return std::string(absl::StripSuffix(info.param.file, ".bvh"));
    });

TEST(BvhReader, WalkFirstFrameRootKeysAreTheFileValues) {
  absl::StatusOr<ImportedAsset> asset =
      ReadBvhFile(DataPath("cmu_131_01_walk.bvh"));
  ASSERT_TRUE(asset.ok()) << asset.status();
  // First frame line of the file (line 188), read by hand:
  // "5.2300 16.9002 -33.8986 -5.4029 9.8098 10.4956 ..." with the root's
  // channels "Xposition Yposition Zposition Zrotation Yrotation Xrotation".
  const JointTracks& root = asset->clips[0].tracks[0];
  EXPECT_EQ(root.translation.values[0],
            Eigen::Vector3f(5.23f, 16.9002f, -33.8986f));
  const Eigen::Quaterniond want =
      Eigen::AngleAxisd(-5.4029 * M_PI / 180, Eigen::Vector3d::UnitZ()) *
      Eigen::AngleAxisd(9.8098 * M_PI / 180, Eigen::Vector3d::UnitY()) *
      Eigen::AngleAxisd(10.4956 * M_PI / 180, Eigen::Vector3d::UnitX());
  EXPECT_LT((root.rotation.values[0].cast<double>().toRotationMatrix() -
             want.toRotationMatrix())
                .cwiseAbs()
                .maxCoeff(),
            1e-6);
}

TEST(BvhReader, MissingFileIsNotFound) {
  absl::StatusOr<ImportedAsset> asset = ReadBvhFile(DataPath("no_such.bvh"));
  EXPECT_EQ(asset.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(asset.status().message()), HasSubstr("no_such.bvh"));
}

TEST(BvhReader, DirectoryIsAnErrorNotACrash) {
  absl::StatusOr<ImportedAsset> asset = ReadBvhFile(POSEWIRE_TEST_DATA_DIR);
  EXPECT_FALSE(asset.ok());
}

// ---------------------------------------------------------------------------
// A small file whose every value is known.

// Line numbers matter to the malformed-input table below.
const std::vector<std::string>& SmallLines() {
  static const auto* lines = new std::vector<std::string>{
      /*1*/ "HIERARCHY",
      /*2*/ "ROOT Hips",
      /*3*/ "{",
      /*4*/ "\tOFFSET 0.0 0.0 0.0",
      /*5*/
      "\tCHANNELS 6 Xposition Yposition Zposition Zrotation Yrotation "
      "Xrotation",
      /*6*/ "\tJOINT Spine",
      /*7*/ "\t{",
      /*8*/ "\t\tOFFSET 0.0 5.0 0.0",
      /*9*/ "\t\tCHANNELS 3 Zrotation Xrotation Yrotation",
      /*10*/ "\t\tJOINT Head",
      /*11*/ "\t\t{",
      /*12*/ "\t\t\tOFFSET 0.0 3.0 0.5",
      /*13*/ "\t\t\tCHANNELS 3 Xrotation Yrotation Zrotation",
      /*14*/ "\t\t\tEnd Site",
      /*15*/ "\t\t\t{",
      /*16*/ "\t\t\t\tOFFSET 0.0 2.0 0.0",
      /*17*/ "\t\t\t}",
      /*18*/ "\t\t}",
      /*19*/ "\t}",
      /*20*/ "\tJOINT Leg",
      /*21*/ "\t{",
      /*22*/ "\t\tOFFSET 1.0 -4.0 0.0",
      /*23*/ "\t\tCHANNELS 3 Yrotation Xrotation Zrotation",
      /*24*/ "\t\tEnd Site",
      /*25*/ "\t\t{",
      /*26*/ "\t\t\tOFFSET 0.0 -4.0 0.0",
      /*27*/ "\t\t}",
      /*28*/ "\t}",
      /*29*/ "}",
      /*30*/ "MOTION",
      /*31*/ "Frames: 3",
      /*32*/ "Frame Time: 0.04",
      /*33*/ "1.5 20.0 -3.25 10 20 30 40 -50 60 0 0 0 -15 25 -35",
      /*34*/ "1.6 20.5 -3.5 11 21 31 41 -51 61 90 0 0 -16 26 -36",
      /*35*/ "1.7 21.0 -3.75 12 22 32 42 -52 62 0 90 0 -17 27 -37",
  };
  return *lines;
}
constexpr int kSmallValuesPerFrame = 15;

std::string Join(const std::vector<std::string>& lines,
                 absl::string_view eol = "\n") {
  return absl::StrCat(absl::StrJoin(lines, eol), eol);
}
std::string SmallText() { return Join(SmallLines()); }

// The small file with 1-based line `line` replaced by `text`.
std::string SmallWithLine(int line, absl::string_view text) {
  std::vector<std::string> lines = SmallLines();
  lines[line - 1] = std::string(text);
  return Join(lines);
}

// The first `count` lines of the small file.
std::string SmallFirstLines(int count) {
  std::vector<std::string> lines = SmallLines();
  lines.resize(count);
  return Join(lines);
}

Eigen::Quaterniond Rot(char axis, double degrees) {
  const Eigen::Vector3d a = axis == 'X'   ? Eigen::Vector3d::UnitX()
                            : axis == 'Y' ? Eigen::Vector3d::UnitY()
                                          : Eigen::Vector3d::UnitZ();
  return Eigen::Quaterniond(Eigen::AngleAxisd(degrees * M_PI / 180.0, a));
}

// Rotation-matrix distance, so q and -q count as equal.
double RotationError(const Eigen::Quaternionf& got,
                     const Eigen::Quaterniond& want) {
  return (got.cast<double>().toRotationMatrix() - want.toRotationMatrix())
      .cwiseAbs()
      .maxCoeff();
}

TEST(BvhReader, SmallFileHasItsJointsOffsetsAndEndSites) {
  absl::StatusOr<ImportedAsset> asset =
      ParseBvh(SmallText(), "some/dir/small.bvh");
  ASSERT_TRUE(asset.ok()) << asset.status();
  const Skeleton& s = asset->skeleton;
  ASSERT_EQ(s.num_joints(), 4);
  EXPECT_THAT(s.joint_names(),
              ::testing::ElementsAre("Hips", "Spine", "Head", "Leg"));
  EXPECT_THAT(s.parents(), ::testing::ElementsAre(kNoParent, 0, 1, 0));
  EXPECT_EQ(s.rest_pose()[1].translation, Eigen::Vector3f(0, 5, 0));
  EXPECT_EQ(s.rest_pose()[2].translation, Eigen::Vector3f(0, 3, 0.5f));
  EXPECT_EQ(s.rest_pose()[3].translation, Eigen::Vector3f(1, -4, 0));
  ASSERT_EQ(asset->end_sites.size(), 2u);
  EXPECT_EQ(asset->end_sites[0].joint, 2);
  EXPECT_EQ(asset->end_sites[0].offset, Eigen::Vector3f(0, 2, 0));
  EXPECT_EQ(asset->end_sites[1].joint, 3);
  EXPECT_EQ(asset->end_sites[1].offset, Eigen::Vector3f(0, -4, 0));
  EXPECT_EQ(asset->source, "some/dir/small.bvh");
  ASSERT_EQ(asset->clips.size(), 1u);
  EXPECT_EQ(asset->clips[0].name, "small");
}

TEST(BvhReader, SmallFileKeysFollowEachJointsChannelOrder) {
  absl::StatusOr<ImportedAsset> asset = ParseBvh(SmallText(), "small.bvh");
  ASSERT_TRUE(asset.ok()) << asset.status();
  const Clip& clip = asset->clips[0];
  ASSERT_TRUE(clip.Validate(asset->skeleton).ok());
  EXPECT_FLOAT_EQ(clip.duration, 0.08f);
  ASSERT_EQ(clip.tracks.size(), 4u);

  // Independent reading of the three frame lines.
  const std::vector<std::string>& lines = SmallLines();
  for (int k = 0; k < 3; ++k) {
    std::vector<double> v;
    for (absl::string_view token :
         absl::StrSplit(lines[32 + k], ' ', absl::SkipEmpty())) {
      v.push_back(std::stod(std::string(token)));
    }
    ASSERT_EQ(static_cast<int>(v.size()), kSmallValuesPerFrame);
    SCOPED_TRACE(absl::StrCat("frame ", k));
    for (int j = 0; j < 4; ++j) {
      EXPECT_EQ(clip.tracks[j].rotation.times[k], static_cast<float>(0.04 * k));
      EXPECT_TRUE(clip.tracks[j].scale.empty());
    }
    // Root: position replaces OFFSET; rotation Z Y X.
    EXPECT_EQ(clip.tracks[0].translation.values[k],
              Eigen::Vector3d(v[0], v[1], v[2]).cast<float>());
    EXPECT_LT(RotationError(clip.tracks[0].rotation.values[k],
                            Rot('Z', v[3]) * Rot('Y', v[4]) * Rot('X', v[5])),
              1e-6);
    // Spine: Z X Y. Head: X Y Z. Leg: Y X Z.
    EXPECT_LT(RotationError(clip.tracks[1].rotation.values[k],
                            Rot('Z', v[6]) * Rot('X', v[7]) * Rot('Y', v[8])),
              1e-6);
    EXPECT_LT(RotationError(clip.tracks[2].rotation.values[k],
                            Rot('X', v[9]) * Rot('Y', v[10]) * Rot('Z', v[11])),
              1e-6);
    EXPECT_LT(
        RotationError(clip.tracks[3].rotation.values[k],
                      Rot('Y', v[12]) * Rot('X', v[13]) * Rot('Z', v[14])),
        1e-6);
    // Non-root joints have no position channels, so no translation track.
    for (int j = 1; j < 4; ++j) EXPECT_TRUE(clip.tracks[j].translation.empty());
  }
  // The order really matters: frame 1's Spine Z X Y differs from X Y Z.
  EXPECT_GT(RotationError(clip.tracks[1].rotation.values[1],
                          Rot('X', 41) * Rot('Y', 61) * Rot('Z', 11)),
            1e-2);
}

TEST(BvhReader, PartialPositionChannelsKeepTheOffsetForMissingAxes) {
  std::vector<std::string> lines = SmallLines();
  lines[7] = "\t\tOFFSET 7.0 5.0 9.0";
  lines[8] = "\t\tCHANNELS 4 Yposition Xrotation Xposition Zrotation";
  // Spine now has 4 values: Ypos Xrot Xpos Zrot (was Zrot Xrot Yrot).
  lines[32] = "0 0 0 0 0 0 2.5 30 -1.5 45 0 0 0 0 0 0";
  lines[30] = "Frames: 1";
  lines.resize(33);
  absl::StatusOr<ImportedAsset> asset = ParseBvh(Join(lines), "partial");
  ASSERT_TRUE(asset.ok()) << asset.status();
  const JointTracks& spine = asset->clips[0].tracks[1];
  ASSERT_EQ(spine.translation.values.size(), 1u);
  EXPECT_EQ(spine.translation.values[0], Eigen::Vector3f(-1.5f, 2.5f, 9.0f));
  EXPECT_LT(
      RotationError(spine.rotation.values[0], Rot('X', 30) * Rot('Z', 45)),
      1e-6);
  EXPECT_EQ(asset->clips[0].duration, 0.0f);
}

TEST(BvhReader, JointWithoutChannelsHasNoTracksAndKeepsItsRestPose) {
  std::string text = SmallWithLine(23, "\t\tCHANNELS 0");
  text = absl::StrReplaceAll(text, {{" -15 25 -35\n", "\n"},
                                    {" -16 26 -36\n", "\n"},
                                    {" -17 27 -37\n", "\n"}});
  absl::StatusOr<ImportedAsset> asset = ParseBvh(text, "nochannels.bvh");
  ASSERT_TRUE(asset.ok()) << asset.status();
  EXPECT_TRUE(asset->clips[0].tracks[3].rotation.empty());
  EXPECT_TRUE(asset->clips[0].tracks[3].translation.empty());
  EXPECT_TRUE(asset->clips[0].Validate(asset->skeleton).ok());
}

void ExpectSameAsset(const ImportedAsset& a, const ImportedAsset& b) {
  ASSERT_EQ(a.skeleton.num_joints(), b.skeleton.num_joints());
  for (int j = 0; j < a.skeleton.num_joints(); ++j) {
    EXPECT_EQ(a.skeleton.joint_name(j), b.skeleton.joint_name(j));
    EXPECT_EQ(a.skeleton.parent(j), b.skeleton.parent(j));
    EXPECT_TRUE(a.skeleton.rest_pose()[j] == b.skeleton.rest_pose()[j]);
    const JointTracks& ta = a.clips[0].tracks[j];
    const JointTracks& tb = b.clips[0].tracks[j];
    EXPECT_EQ(ta.translation.times, tb.translation.times);
    EXPECT_EQ(ta.translation.values, tb.translation.values);
    EXPECT_EQ(ta.rotation.times, tb.rotation.times);
    ASSERT_EQ(ta.rotation.values.size(), tb.rotation.values.size());
    for (size_t k = 0; k < ta.rotation.values.size(); ++k) {
      EXPECT_EQ(ta.rotation.values[k].coeffs(), tb.rotation.values[k].coeffs());
    }
  }
  ASSERT_EQ(a.end_sites.size(), b.end_sites.size());
  for (size_t e = 0; e < a.end_sites.size(); ++e) {
    EXPECT_EQ(a.end_sites[e].joint, b.end_sites[e].joint);
    EXPECT_EQ(a.end_sites[e].offset, b.end_sites[e].offset);
  }
  EXPECT_EQ(a.clips[0].duration, b.clips[0].duration);
  EXPECT_EQ(a.clips[0].name, b.clips[0].name);
}

TEST(BvhReader, CrlfTabsTrailingSpacesAndBlankLinesParseLikeTheLfFile) {
  absl::StatusOr<ImportedAsset> lf = ParseBvh(SmallText(), "small.bvh");
  ASSERT_TRUE(lf.ok()) << lf.status();

  absl::StatusOr<ImportedAsset> crlf =
      ParseBvh(Join(SmallLines(), "\r\n"), "small.bvh");
  ASSERT_TRUE(crlf.ok()) << crlf.status();
  ExpectSameAsset(*lf, *crlf);

  // Tabs turned into spaces and back, trailing whitespace on every line,
  // a missing final line break, then blank lines at the end.
  std::vector<std::string> messy = SmallLines();
  for (std::string& line : messy) {
    line = absl::StrReplaceAll(line, {{"\t", "  "}, {" ", " \t"}});
    line += " \t ";
  }
  const std::string variants[] = {
      Join(messy, "\r\n"),
      absl::StrJoin(messy, "\n"),                             // no final break
      absl::StrCat(Join(messy, "\r\n"), "\r\n\r\n  \t\r\n"),  // blank lines
      absl::StrCat(Join(SmallLines()), "\n\n\n"),
      absl::StrJoin(SmallLines(), "\r"),  // classic Mac line ends
  };
  for (const std::string& text : variants) {
    absl::StatusOr<ImportedAsset> other = ParseBvh(text, "small.bvh");
    ASSERT_TRUE(other.ok()) << other.status();
    EXPECT_TRUE(other->warnings.empty());
    ExpectSameAsset(*lf, *other);
  }
}

TEST(BvhReader, MixedLineEndingsInARealFileParseLikeAllLf) {
  // cmu_131_01_walk.bvh mixes CRLF and LF; normalising it must not change
  // the result.
  std::string text;
  {
    std::FILE* f = std::fopen(DataPath("cmu_131_01_walk.bvh").c_str(), "rb");
    ASSERT_NE(f, nullptr);
    char buffer[4096];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof(buffer), f)) > 0) {
      text.append(buffer, n);
    }
    std::fclose(f);
  }
  ASSERT_NE(text.find("\r\n"), std::string::npos);
  absl::StatusOr<ImportedAsset> mixed = ParseBvh(text, "walk.bvh");
  absl::StatusOr<ImportedAsset> lf =
      ParseBvh(absl::StrReplaceAll(text, {{"\r\n", "\n"}}), "walk.bvh");
  ASSERT_TRUE(mixed.ok()) << mixed.status();
  ASSERT_TRUE(lf.ok()) << lf.status();
  ExpectSameAsset(*mixed, *lf);
}

TEST(BvhReader, OneExtraFrameLineIsIgnoredWithAWarning) {
  // Declare 2 frames; the third line becomes the tolerated extra one.
  absl::StatusOr<ImportedAsset> asset =
      ParseBvh(SmallWithLine(31, "Frames: 2"), "extra.bvh");
  ASSERT_TRUE(asset.ok()) << asset.status();
  EXPECT_EQ(asset->clips[0].tracks[0].rotation.times.size(), 2u);
  EXPECT_FLOAT_EQ(asset->clips[0].duration, 0.04f);
  ASSERT_EQ(asset->warnings.size(), 1u);
  EXPECT_THAT(asset->warnings[0], StartsWith("extra.bvh:35: "));
  EXPECT_THAT(asset->warnings[0], HasSubstr("ignored"));
  // The two declared frames are unchanged by the extra line.
  absl::StatusOr<ImportedAsset> full = ParseBvh(SmallText(), "extra.bvh");
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(asset->clips[0].tracks[1].rotation.values[1].coeffs(),
            full->clips[0].tracks[1].rotation.values[1].coeffs());
}

TEST(BvhReader, DeepChainParsesWithoutRecursion) {
  // 20000 nested joints: a recursive parser would risk the stack here.
  constexpr int kDepth = 20000;
  std::string text = "HIERARCHY\n";
  for (int i = 0; i < kDepth; ++i) {
    absl::StrAppend(&text, i == 0 ? "ROOT" : "JOINT", " j", i,
                    "\n{\nOFFSET 0 1 0\nCHANNELS 1 Zrotation\n");
  }
  text.append(kDepth, '}');
  absl::StrAppend(&text, "\nMOTION\nFrames: 1\nFrame Time: 0.1\n");
  for (int i = 0; i < kDepth; ++i) absl::StrAppend(&text, "1 ");
  absl::StatusOr<ImportedAsset> asset = ParseBvh(text, "deep.bvh");
  ASSERT_TRUE(asset.ok()) << asset.status();
  EXPECT_EQ(asset->skeleton.num_joints(), kDepth);
  EXPECT_EQ(asset->skeleton.parent(kDepth - 1), kDepth - 2);
}

TEST(BvhReader, MoreJointsThanTheSkeletonLimitIsAnError) {
  std::string text = "HIERARCHY\nROOT r\n{\nOFFSET 0 0 0\nCHANNELS 0\n";
  for (int i = 0; i < kMaxSkeletonJoints; ++i) {
    absl::StrAppend(&text, "JOINT j", i, " { OFFSET 0 0 0\nCHANNELS 0\n}\n");
  }
  text += "}\nMOTION\n";
  absl::StatusOr<ImportedAsset> asset = ParseBvh(text, "wide.bvh");
  EXPECT_EQ(asset.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(asset.status().message()),
              HasSubstr(absl::StrCat("more than ", kMaxSkeletonJoints)));
}

TEST(BvhReader, HugeDeclaredFrameCountFailsWithoutAllocatingIt) {
  // Sixteen million frames declared, three present: must fail on the count,
  // quickly and without reserving memory for the declared number.
  absl::StatusOr<ImportedAsset> asset =
      ParseBvh(SmallWithLine(31, "Frames: 16000000"), "huge.bvh");
  EXPECT_EQ(asset.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(asset.status().message()),
              HasSubstr("huge.bvh:35: expected "
                        "16000000 frame lines"));
  asset = ParseBvh(SmallWithLine(31, "Frames: 2000000000"), "huge.bvh");
  EXPECT_THAT(std::string(asset.status().message()),
              HasSubstr("huge.bvh:31: Frames: 2000000000 is more than"));
}

TEST(BvhReader, FrameTimeTooSmallForDistinctFloatTimesIsAnError) {
  absl::StatusOr<ImportedAsset> asset =
      ParseBvh(SmallWithLine(32, "Frame Time: 1e-46"), "tiny.bvh");
  EXPECT_EQ(asset.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(asset.status().message()),
              HasSubstr("tiny.bvh:32: "));
}

TEST(BvhReader, LeadingPlusAndExponentsAreNumbers) {
  absl::StatusOr<ImportedAsset> asset =
      ParseBvh(SmallWithLine(8, "\t\tOFFSET +0.0 5E0 .0"), "plus.bvh");
  ASSERT_TRUE(asset.ok()) << asset.status();
  EXPECT_EQ(asset->skeleton.rest_pose()[1].translation,
            Eigen::Vector3f(0, 5, 0));
}

// ---------------------------------------------------------------------------
// Malformed input: INVALID_ARGUMENT, "file:line: " and a hint.

struct Malformed {
  const char* name;
  std::string text;
  int line;
  const char* hint;  // a substring the message must contain
};

std::vector<Malformed> MalformedCases() {
  auto frame = [](int line, absl::string_view replacement) {
    return SmallWithLine(line, replacement);
  };
  const std::string base = SmallText();
  return {
      // Truncated at several points.
      {"Empty", "", 1, "expected HIERARCHY at the start"},
      {"TruncatedAfterHierarchy", SmallFirstLines(1), 1,
       "expected ROOT after HIERARCHY, found end of file"},
      {"TruncatedInRoot", SmallFirstLines(5), 5,
       "expected JOINT, End Site or '}' closing joint 0 'Hips' (opened at "
       "line 2), found end of file (unbalanced braces"},
      {"TruncatedInOffset", SmallFirstLines(7) + "\t\tOFFSET 0.0 5.0", 8,
       "OFFSET of joint 1 'Spine' needs 3 numbers on its line, found 2"},
      {"TruncatedInEndSite", SmallFirstLines(16), 16,
       "expected '}' closing the End Site of joint 2 'Head'"},
      {"TruncatedBeforeMotion", SmallFirstLines(29), 29,
       "expected ROOT or MOTION, found end of file"},
      {"TruncatedAfterMotion", SmallFirstLines(30), 30,
       "expected 'Frames: <count>' after MOTION, found end of file"},
      {"TruncatedAfterFrames", SmallFirstLines(31), 31,
       "expected 'Frame Time: <seconds>'"},
      {"TruncatedAfterOneFrame", SmallFirstLines(33), 33,
       "expected 3 frame lines (Frames: at line 31), found 1"},
      {"TruncatedInFrameLine", base.substr(0, base.size() - 20), 35,
       "frame 3: expected 15 values (one per channel), found"},
      // Missing sections and keywords.
      {"MissingHierarchy", frame(1, ""), 2,
       "expected HIERARCHY at the start of a BVH file, found 'ROOT'"},
      {"MissingRoot", frame(2, "ROOTS Hips"), 2,
       "expected ROOT after HIERARCHY, found 'ROOTS'"},
      {"MissingJointName", frame(6, "\tJOINT"), 6,
       "expected a joint name after JOINT"},
      {"MissingMotion", frame(30, ""), 31,
       "expected ROOT or MOTION, found 'Frames:'"},
      {"MissingFrames", frame(31, ""), 32,
       "expected 'Frames: <count>' after MOTION, found 'Frame'"},
      {"MissingFrameTime", frame(32, ""), 33,
       "expected 'Frame Time: <seconds>' after the frame count, found '1.5'"},
      {"MissingFrameTimeValue", frame(32, "Frame Time:"), 32,
       "Frame Time: expected a number of seconds, found end of line"},
      {"MissingOffset", frame(8, ""), 9,
       "expected OFFSET in joint 1 'Spine', found 'CHANNELS'"},
      // Braces.
      {"MissingOpenBrace", frame(7, ""), 8,
       "expected '{' after JOINT 'Spine', found 'OFFSET'"},
      {"MissingCloseBrace", frame(19, ""), 30,
       "found 'MOTION' (unbalanced braces: 1 still open)"},
      {"ExtraCloseBrace", frame(29, "}}"), 29,
       "expected ROOT or MOTION, found '}' (unbalanced braces"},
      {"EndSiteWithChildren", frame(17, "\t\t\tJOINT Toe"), 17,
       "an End Site has only an OFFSET: no channels and no children"},
      {"EndWithoutSite", frame(14, "\t\t\tEnd"), 14, "expected 'End Site'"},
      // Channels.
      {"MissingChannels", frame(9, ""), 10,
       "expected CHANNELS after the OFFSET of joint 1 'Spine', found 'JOINT'"},
      {"TooFewChannelNames", frame(9, "\t\tCHANNELS 3 Zrotation Xrotation"), 9,
       "declares 3 channels, found 2 names before end of line"},
      {"TooManyChannelNames",
       frame(9, "\t\tCHANNELS 2 Zrotation Xrotation Yrotation"), 9,
       "declares 2 channels, found more: 'Yrotation'"},
      {"BadChannelCount", frame(9, "\t\tCHANNELS x Zrotation"), 9,
       "expected a channel count from 0 to 6, found 'x'"},
      {"ChannelCountTooLarge", frame(9, "\t\tCHANNELS 7"), 9,
       "expected a channel count from 0 to 6, found '7'"},
      {"UnknownChannel",
       frame(9, "\t\tCHANNELS 3 Zrotation Wrotation Yrotation"), 9,
       "unknown channel 'Wrotation' (expected one of Xposition"},
      {"DuplicateChannel",
       frame(9, "\t\tCHANNELS 3 Zrotation Xrotation Zrotation"), 9,
       "channel Zrotation is listed twice"},
      // Names.
      {"DuplicateJointName", frame(20, "\tJOINT Spine"), 20,
       "duplicate joint name 'Spine' (joint 1 at line 6 has it already)"},
      // Numbers.
      {"OffsetTwoDots", frame(8, "\t\tOFFSET 0.0 1.2.3 0.0"), 8,
       "OFFSET of joint 1 'Spine': expected a number, '1.2.3' is not a "
       "number"},
      {"OffsetInfinite", frame(12, "\t\t\tOFFSET 0.0 inf 0.5"), 12,
       "'inf' is not finite"},
      {"OffsetFourNumbers", frame(12, "\t\t\tOFFSET 0 3 0.5 1"), 12,
       "has 3 numbers, found more: '1'"},
      {"OffsetOverflowsFloat", frame(22, "\t\tOFFSET 1e39 0 0"), 22,
       "'1e39' is out of float range"},
      {"FrameValueLetters",
       frame(34, "1.6 20.5 -3.5 abc 21 31 41 -51 61 90 0 0 -16 26 -36"), 34,
       "frame 2 value 4 (joint 0 'Hips' Zrotation): expected a number, 'abc' "
       "is not a number"},
      {"FrameValueBareExponent",
       frame(33, "1.5 20.0 -3.25 10 20 30 40 -50 60 0 0 0 -15 25 1e"), 33,
       "frame 1 value 15 (joint 3 'Leg' Zrotation): expected a number, '1e'"},
      {"FrameValueNaN",
       frame(35, "1.7 21.0 -3.75 12 22 32 42 nan 62 0 90 0 -17 27 -37"), 35,
       "value 8 (joint 1 'Spine' Xrotation): expected a number, 'nan' is not "
       "finite"},
      {"FrameValueHexIsNotANumber",
       frame(35, "0x1 21.0 -3.75 12 22 32 42 1 62 0 90 0 -17 27 -37"), 35,
       "'0x1' is not a number"},
      {"FrameValueDoubleSign",
       frame(35, "+-1 21.0 -3.75 12 22 32 42 1 62 0 90 0 -17 27 -37"), 35,
       "'+-1' is not a number"},
      // Frame counts and values per frame.
      {"FrameWithTooFewValues",
       frame(34, "1.6 20.5 -3.5 11 21 31 41 -51 61 90 0 0 -16 26"), 34,
       "frame 2: expected 15 values (one per channel), found 14"},
      {"FrameWithTooManyValues",
       frame(34, "1.6 20.5 -3.5 11 21 31 41 -51 61 90 0 0 -16 26 -36 7 8"), 34,
       "frame 2: expected 15 values (one per channel), found 17"},
      {"FewerFramesThanDeclared", frame(31, "Frames: 5"), 35,
       "expected 5 frame lines (Frames: at line 31), found 3 before end of "
       "file"},
      {"TwoExtraFrameLines", frame(31, "Frames: 1"), 35,
       "expected end of file after the 1 declared frames and one tolerated "
       "extra frame line, found '1.7'"},
      {"MalformedExtraFrameLine",
       absl::StrReplaceAll(frame(31, "Frames: 2"),
                           {{"-17 27 -37\n", "-17 27\n"}}),
       35,
       "frame 3 (one line after the 2 declared frames, tolerated only if "
       "well-formed): expected 15 values (one per channel), found 14"},
      {"ZeroFrames", frame(31, "Frames: 0"), 31,
       "Frames: expected at least 1 frame, found 0"},
      {"NegativeFrames", frame(31, "Frames: -3"), 31,
       "expected at least 1 frame, found -3"},
      {"FractionalFrames", frame(31, "Frames: 2.5"), 31,
       "Frames: expected a whole number, found '2.5'"},
      {"FramesOutOfIntRange", frame(31, "Frames: 99999999999"), 31,
       "Frames: expected a whole number, found '99999999999'"},
      {"ZeroFrameTime", frame(32, "Frame Time: 0"), 32,
       "Frame Time: expected a positive number of seconds, found '0'"},
      {"NegativeFrameTime", frame(32, "Frame Time: -0.04"), 32,
       "expected a positive number of seconds, found '-0.04'"},
      {"NaNFrameTime", frame(32, "Frame Time: nan"), 32, "'nan' is not finite"},
      {"InfiniteFrameTime", frame(32, "Frame Time: inf"), 32,
       "'inf' is not finite"},
      {"GarbageFrameTime", frame(32, "Frame Time: 0.04s"), 32,
       "'0.04s' is not a number"},
      {"BinaryGarbage", std::string("\x00\xff\x01{", 4), 1,
       "expected HIERARCHY at the start of a BVH file, found '\\x00\\xff"},
  };
}

class BvhMalformedTest : public ::testing::TestWithParam<Malformed> {};

TEST_P(BvhMalformedTest, IsInvalidArgumentNamingLineAndProblem) {
  const Malformed& m = GetParam();
  absl::StatusOr<ImportedAsset> asset = ParseBvh(m.text, "bad.bvh");
  ASSERT_FALSE(asset.ok());
  EXPECT_EQ(asset.status().code(), absl::StatusCode::kInvalidArgument)
      << asset.status();
  EXPECT_THAT(std::string(asset.status().message()),
              StartsWith(absl::StrCat("bad.bvh:", m.line, ": ")));
  EXPECT_THAT(std::string(asset.status().message()), HasSubstr(m.hint));
}

INSTANTIATE_TEST_SUITE_P(Table, BvhMalformedTest,
                         ::testing::ValuesIn(MalformedCases()),
                         [](const ::testing::TestParamInfo<Malformed>& info) {
                           return std::string(info.param.name);
                         });

// ---------------------------------------------------------------------------
// Robustness: the reader will be fuzzed; these are its cheap cousins.

void ExpectOkOrLocatedInvalidArgument(const absl::StatusOr<ImportedAsset>& r) {
  if (r.ok()) {
    EXPECT_TRUE(r->clips[0].Validate(r->skeleton).ok());
    return;
  }
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument)
      << r.status();
  EXPECT_THAT(std::string(r.status().message()), StartsWith("x.bvh:"));
}

TEST(BvhReader, EveryPrefixOfAValidFileParsesOrFailsCleanly) {
  const std::string text = Join(SmallLines(), "\r\n");
  int ok = 0;
  for (size_t n = 0; n <= text.size(); ++n) {
    absl::StatusOr<ImportedAsset> r = ParseBvh(text.substr(0, n), "x.bvh");
    ExpectOkOrLocatedInvalidArgument(r);
    ok += r.ok();
  }
  // Only prefixes holding every declared frame (the whole last line, maybe
  // without its line break) may succeed; digits cut off the last value
  // still parse, so a few do.
  EXPECT_GE(ok, 1);
  EXPECT_LE(ok, 6);
}

TEST(BvhReader, RandomByteMutationsParseOrFailCleanly) {
  const std::string text = SmallText();
  std::mt19937 rng(20240611);  // fixed seed: the same cases every run
  std::uniform_int_distribution<size_t> pos(0, text.size() - 1);
  std::uniform_int_distribution<int> byte(0, 255);
  const char interesting[] = {'{', '}', '\n', '\r', ' ', '.', 'e', '-', '\0'};
  std::uniform_int_distribution<int> pick(0, sizeof(interesting) - 1);
  for (int round = 0; round < 3000; ++round) {
    std::string mutated = text;
    const int edits = 1 + round % 4;
    for (int e = 0; e < edits; ++e) {
      const size_t at = pos(rng);
      switch (rng() % 3) {
        case 0:
          mutated[at % mutated.size()] = static_cast<char>(byte(rng));
          break;
        case 1:
          mutated.insert(at % (mutated.size() + 1), 1, interesting[pick(rng)]);
          break;
        default:
          if (!mutated.empty()) mutated.erase(at % mutated.size(), 1);
      }
    }
    ExpectOkOrLocatedInvalidArgument(ParseBvh(mutated, "x.bvh"));
  }
}

}  // namespace bvh_reader_test
}  // namespace posewire
