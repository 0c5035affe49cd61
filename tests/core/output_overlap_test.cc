// Every job that writes a pose from input poses accepts an output that is
// exactly an input (in place) or apart from it, and rejects an output that
// overlaps an input shifted by some joints: INVALID_ARGUMENT naming both
// fields, nothing written. (Such an overlap would have each joint's result
// overwrite another joint's input before it is read.) LocalToModelJob and
// ModelToLocalJob take no overlap at all. The jobs with `input_validated`
// skip checking an input pose's transforms, never its size.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "solver_core/analytic_ik/aim_ik.h"
#include "solver_core/analytic_ik/ground.h"
#include "solver_core/analytic_ik/look_at.h"
#include "solver_core/analytic_ik/two_bone_ik.h"
#include "solver_core/chain_ik/ccd_ik.h"
#include "solver_core/chain_ik/fabrik_ik.h"
#include "solver_core/dynamics/spring_bones.h"
#include "solver_core/full_body/biped_mapping.h"
#include "solver_core/full_body/full_body_biped_ik.h"
#include "solver_core/full_body/full_body_ccd.h"
#include "solver_core/io/bvh_reader.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/model/pose.h"
#include "solver_core/pose_ops/additive_job.h"
#include "solver_core/pose_ops/blending_job.h"

namespace posewire {
namespace output_overlap_test {

using ::testing::HasSubstr;

// The CMU walk rig (31 joints, a biped), its rest pose and model pose.
struct Walk {
  ImportedAsset asset;
  const Skeleton& skeleton() const { return asset.skeleton; }
  int n() const { return asset.skeleton.num_joints(); }
};

const Walk& WalkRig() {
  static const Walk* walk = [] {
    absl::StatusOr<ImportedAsset> asset = ReadBvhFile(
        std::string(POSEWIRE_TEST_DATA_DIR) + "/cmu_131_01_walk.bvh");
    EXPECT_TRUE(asset.ok()) << asset.status();
    return new Walk{*std::move(asset)};
  }();
  return *walk;
}

// Three poses of room: the input in the middle, the output `shift` joints
// after it (before it when negative), every byte remembered.
class Buffer {
 public:
  Buffer(const Skeleton& skeleton, int shift)
      : n_(skeleton.num_joints()), data_(3 * n_) {
    const LocalPose rest = RestPose(skeleton);
    for (int k = 0; k < 3; ++k) {
      std::copy(rest.begin(), rest.end(), data_.begin() + k * n_);
    }
    input_ = absl::MakeSpan(data_).subspan(n_, n_);
    output_ = absl::MakeSpan(data_).subspan(n_ + shift, n_);
    bytes_.assign(reinterpret_cast<const char*>(data_.data()),
                  reinterpret_cast<const char*>(data_.data() + data_.size()));
  }
  absl::Span<const Transform> input() const { return input_; }
  absl::Span<Transform> output() const { return output_; }
  bool Unchanged() const {
    return std::memcmp(bytes_.data(), data_.data(), bytes_.size()) == 0;
  }

 private:
  int n_;
  std::vector<Transform> data_;
  absl::Span<Transform> input_, output_;
  std::string bytes_;
};

// The status of a job built on `b`'s input and output.
template <typename MakeAndRun>
void ExpectRejected(int shift, MakeAndRun make_and_run,
                    const std::string& message) {
  const Walk& walk = WalkRig();
  Buffer b(walk.skeleton(), shift);
  const absl::Status s =
      make_and_run(walk, b.input(), b.output(), /*validated=*/false);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr(message));
  EXPECT_TRUE(b.Unchanged()) << "the rejected job wrote into its buffer";
}

template <typename MakeAndRun>
void ExpectAccepted(MakeAndRun make_and_run) {
  const Walk& walk = WalkRig();
  Buffer b(walk.skeleton(), 0);  // output is the input: in place
  const absl::Status s =
      make_and_run(walk, b.input(), b.output(), /*validated=*/false);
  EXPECT_TRUE(s.ok()) << s;
}

// Each job's Run() on (input, output), with inputs valid otherwise.
absl::Status RunBlend(const Walk& w, absl::Span<const Transform> in,
                      absl::Span<Transform> out, bool validated) {
  (void)validated;  // no such field: every input is checked
  static const LocalPose other = RestPose(w.skeleton());
  const BlendLayer layers[] = {{other, 1.0f, {}}, {in, 1.0f, {}}};
  BlendingJob job;
  job.skeleton = &w.skeleton();
  job.layers = layers;
  job.output = out;
  return job.Run();
}

absl::Status RunAdditive(const Walk& w, absl::Span<const Transform> in,
                         absl::Span<Transform> out, bool validated) {
  static const LocalPose delta(w.n());  // identity transforms
  AdditiveJob job;
  job.skeleton = &w.skeleton();
  job.input = in;
  job.input_validated = validated;
  job.delta = delta;
  job.weight = 0.5f;
  job.output = out;
  return job.Run();
}

absl::Status RunMakeAdditive(const Walk& w, absl::Span<const Transform> in,
                             absl::Span<Transform> out, bool validated) {
  (void)validated;  // no such field: every input is checked
  static const LocalPose additive = RestPose(w.skeleton());
  return MakeAdditiveJob{
      .skeleton = &w.skeleton(), .base = in, .additive = additive, .delta = out}
      .Run();
}

// A reachable target for an arm chain: where the hand is at rest.
struct Arm {
  std::vector<int> chain;
  Eigen::Vector3f hand;
  ModelPose model;
};

Arm LeftArm(const Walk& w) {
  Arm arm;
  const Skeleton& s = w.skeleton();
  for (const char* name : {"LeftShoulder", "LeftElbow", "LeftWrist"}) {
    arm.chain.push_back(s.FindJoint(name));
    EXPECT_GE(arm.chain.back(), 0) << name;
  }
  const LocalPose rest = RestPose(s);
  arm.model.resize(w.n());
  const LocalToModelJob fk{
      .skeleton = &s, .input = rest, .output = absl::MakeSpan(arm.model)};
  EXPECT_TRUE(fk.Run().ok());
  arm.hand = arm.model[arm.chain.back()].translation +
             Eigen::Vector3f(1.0f, -2.0f, 1.0f);
  return arm;
}

// CcdIkJob or FabrikIkJob on the left arm (same fields).
template <typename ChainJob>
absl::Status RunChain(const Walk& w, absl::Span<const Transform> in,
                      absl::Span<Transform> out, bool validated) {
  const Arm arm = LeftArm(w);
  ChainJob job;
  job.skeleton = &w.skeleton();
  job.input = in;
  job.input_validated = validated;
  job.chain = arm.chain;
  job.target = arm.hand;
  job.output = out;
  return job.Run();
}

absl::Status RunTwoBone(const Walk& w, absl::Span<const Transform> in,
                        absl::Span<Transform> out, bool validated) {
  (void)validated;  // no such field: every input is checked
  const Arm arm = LeftArm(w);
  return TwoBoneIkJob{
      .skeleton = &w.skeleton(),
      .input = in,
      .parent_model = arm.model[w.skeleton().parent(arm.chain[0])],
      .start_joint = arm.chain[0],
      .mid_joint = arm.chain[1],
      .end_joint = arm.chain[2],
      .target = arm.hand,
      .output = out}
      .Run();
}

absl::Status RunAim(const Walk& w, absl::Span<const Transform> in,
                    absl::Span<Transform> out, bool validated) {
  (void)validated;  // no such field: every input is checked
  const Arm arm = LeftArm(w);
  return AimIkJob{.skeleton = &w.skeleton(),
                  .input = in,
                  .parent_model = arm.model[w.skeleton().parent(arm.chain[0])],
                  .joint = arm.chain[0],
                  .target = arm.hand + Eigen::Vector3f(5.0f, 0.0f, 0.0f),
                  .output = out}
      .Run();
}

absl::Status RunLookAt(const Walk& w, absl::Span<const Transform> in,
                       absl::Span<Transform> out, bool validated) {
  const Skeleton& s = w.skeleton();
  const int spine[] = {s.FindJoint("Chest"), s.FindJoint("Neck")};
  LookAtJob job;
  job.skeleton = &s;
  job.input = in;
  job.input_validated = validated;
  job.parent_model = ParentModelTransformOrRoot(s, in, spine[0]);
  job.spine = spine;
  job.head = s.FindJoint("Head");
  job.target = Eigen::Vector3f(10.0f, 20.0f, 40.0f);
  job.output = out;
  return job.Run();
}

absl::Status RunGround(const Walk& w, absl::Span<const Transform> in,
                       absl::Span<Transform> out, bool validated) {
  const Skeleton& s = w.skeleton();
  const GroundLeg legs[] = {{.hip = s.FindJoint("LeftHip"),
                             .knee = s.FindJoint("LeftKnee"),
                             .ankle = s.FindJoint("LeftAnkle"),
                             .toe = -1}};
  GroundSample samples[1];
  samples[0].hit = true;
  samples[0].point = Eigen::Vector3f(0.0f, 1.0f, 0.0f);
  GroundJob job;
  job.skeleton = &s;
  job.input = in;
  job.input_validated = validated;
  job.pelvis = s.FindJoint("Hips");
  job.legs = legs;
  job.samples = samples;
  job.output = out;
  return job.Run();
}

absl::Status RunFullBodyCcd(const Walk& w, absl::Span<const Transform> in,
                            absl::Span<Transform> out, bool validated) {
  const Arm arm = LeftArm(w);
  const FullBodyCcdEffector effectors[] = {
      {.joint = arm.chain.back(), .target = arm.hand}};
  FullBodyCcdJob job;
  job.skeleton = &w.skeleton();
  job.input = in;
  job.input_validated = validated;
  job.effectors = effectors;
  job.output = out;
  return job.Run();
}

absl::Status RunFullBodyBiped(const Walk& w, absl::Span<const Transform> in,
                              absl::Span<Transform> out, bool validated) {
  static const BipedMapping* mapping = [&w] {
    absl::StatusOr<BipedMapping> m = MapBipedByName(w.skeleton());
    EXPECT_TRUE(m.ok()) << m.status();
    return new BipedMapping(*std::move(m));
  }();
  FullBodyBipedIkJob job;
  job.skeleton = &w.skeleton();
  job.input = in;
  job.input_validated = validated;
  job.mapping = mapping;
  job.output = out;
  return job.Run();
}

absl::Status RunSpring(const Walk& w, absl::Span<const Transform> in,
                       absl::Span<Transform> out, bool validated) {
  static const SpringRig* rig = [&w] {
    SpringRigDesc desc;
    desc.root_joints = {"LeftShoulder"};
    absl::StatusOr<SpringRig> r = SpringRig::Create(w.skeleton(), desc);
    EXPECT_TRUE(r.ok()) << r.status();
    return new SpringRig(*std::move(r));
  }();
  DynamicsState state;
  SpringBonesJob job;
  job.skeleton = &w.skeleton();
  job.rig = rig;
  job.input = in;
  job.input_validated = validated;
  job.dt = 1.0f / 60.0f;
  job.state_in = &state;
  job.state_out = &state;
  job.output = out;
  return job.Run();
}

struct Case {
  const char* name;
  absl::Status (*run)(const Walk&, absl::Span<const Transform>,
                      absl::Span<Transform>, bool input_validated);
  const char* message;
  // Whether the job has `input_validated`.
  bool takes_validated_input;
};

const Case kCases[] = {
    {"blending", RunBlend,
     "blending.output: overlaps blending.layers[1].transform", false},
    {"additive", RunAdditive, "additive.output: overlaps additive.input", true},
    {"make_additive", RunMakeAdditive,
     "make_additive.delta: overlaps make_additive.base", false},
    {"ccd_ik", RunChain<CcdIkJob>, "ccd_ik.output: overlaps ccd_ik.input",
     true},
    {"fabrik_ik", RunChain<FabrikIkJob>,
     "fabrik_ik.output: overlaps fabrik_ik.input", true},
    {"two_bone_ik", RunTwoBone,
     "two_bone_ik.output: overlaps two_bone_ik.input", false},
    {"aim_ik", RunAim, "aim_ik.output: overlaps aim_ik.input", false},
    {"look_at", RunLookAt, "look_at.output: overlaps look_at.input", true},
    {"ground", RunGround, "ground.output: overlaps ground.input", true},
    {"full_body_ccd", RunFullBodyCcd,
     "full_body_ccd.output: overlaps full_body_ccd.input", true},
    {"full_body_biped_ik", RunFullBodyBiped,
     "full_body_biped_ik.output: overlaps full_body_biped_ik.input", true},
    {"spring_bones", RunSpring,
     "spring_bones.output: overlaps spring_bones.input", true},
};

TEST(OutputOverlap, EveryPoseJobRejectsAShiftedOverlapAndWritesNothing) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    for (int shift : {1, 5, -3}) {
      SCOPED_TRACE(shift);
      ExpectRejected(shift, c.run, c.message);
    }
  }
}

TEST(OutputOverlap, EveryPoseJobStillSolvesInPlace) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    ExpectAccepted(c.run);
  }
}

// A job told its input is already checked (input_validated, as the
// service sets it for a pose it screened) takes the transforms on trust
// and still checks the pose's size; without the flag the same input is
// refused.
TEST(InputValidated, AJobTakesACheckedInputOnTrustButNotItsSize) {
  const Walk& walk = WalkRig();
  const int wrist = walk.skeleton().FindJoint("RightWrist");
  ASSERT_GE(wrist, 0);
  for (const Case& c : kCases) {
    if (!c.takes_validated_input) continue;
    SCOPED_TRACE(c.name);
    // A rotation 1% off unit length, which every input check refuses.
    LocalPose input = RestPose(walk.skeleton());
    input[wrist].rotation.coeffs() *= 1.01f;
    LocalPose output(walk.n());
    const absl::Status checked =
        c.run(walk, input, absl::MakeSpan(output), /*validated=*/false);
    EXPECT_EQ(checked.code(), absl::StatusCode::kInvalidArgument) << checked;
    EXPECT_THAT(checked.message(), HasSubstr(".input"));
    EXPECT_THAT(checked.message(), HasSubstr("RightWrist"));
    EXPECT_TRUE(
        c.run(walk, input, absl::MakeSpan(output), /*validated=*/true).ok());
    // One transform short: refused with or without the flag.
    const LocalPose rest = RestPose(walk.skeleton());
    const absl::Span<const Transform> short_input =
        absl::MakeConstSpan(rest).first(walk.n() - 1);
    const absl::Status sized =
        c.run(walk, short_input, absl::MakeSpan(output), /*validated=*/true);
    EXPECT_EQ(sized.code(), absl::StatusCode::kInvalidArgument) << sized;
    EXPECT_THAT(sized.message(), HasSubstr("input"));
  }
}

TEST(OutputOverlap, ConversionsTakeNoOverlapAtAll) {
  const Walk& walk = WalkRig();
  for (int shift : {0, 1}) {
    SCOPED_TRACE(shift);
    Buffer b(walk.skeleton(), shift);
    const LocalToModelJob fk{
        .skeleton = &walk.skeleton(), .input = b.input(), .output = b.output()};
    const absl::Status to_model = fk.Run();
    EXPECT_EQ(to_model.code(), absl::StatusCode::kInvalidArgument) << to_model;
    EXPECT_THAT(to_model.message(),
                HasSubstr("local_to_model.output: shares memory with "
                          "local_to_model.input"));
    const ModelToLocalJob ik{
        .skeleton = &walk.skeleton(), .input = b.input(), .output = b.output()};
    const absl::Status to_local = ik.Run();
    EXPECT_EQ(to_local.code(), absl::StatusCode::kInvalidArgument) << to_local;
    EXPECT_THAT(to_local.message(),
                HasSubstr("model_to_local.output: shares memory with "
                          "model_to_local.input"));
    EXPECT_TRUE(b.Unchanged());
  }
}

TEST(OutputOverlap, DisjointAndIdenticalSpansAreNotPartialOverlaps) {
  std::vector<Transform> pose(8);
  const absl::Span<const Transform> all(pose);
  EXPECT_FALSE(OverlapsWithoutAliasing(all, all));
  EXPECT_FALSE(OverlapsWithoutAliasing(all.subspan(0, 4), all.subspan(4, 4)));
  EXPECT_FALSE(OverlapsWithoutAliasing(all.subspan(4, 4), all.subspan(0, 4)));
  EXPECT_TRUE(OverlapsWithoutAliasing(all.subspan(0, 4), all.subspan(3, 4)));
  EXPECT_TRUE(OverlapsWithoutAliasing(all.subspan(3, 4), all.subspan(0, 4)));
  EXPECT_TRUE(Overlap(all, all));
  EXPECT_FALSE(Overlap(all.subspan(0, 0), all));
}

}  // namespace output_overlap_test
}  // namespace posewire
