// The plausibility op over the wire: the CMU walk claimed frame by frame in
// a Session is plausible at the defaults, injected cheats are reported with
// their joint and the same bits as the core job given the same frames, a
// Solve that sends its state back answers as the Session, and bad input
// names its field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/casts.h"
#include "absl/strings/match.h"
#include "solver_core/chain_ik/learned_limits.h"
#include "solver_core/io/asset_reader.h"
#include "solver_core/referee/plausibility.h"
#include "tests/service/service_fixture.h"

namespace posewire::server {
namespace plausibility_op_test {

using ::testing::HasSubstr;

constexpr float kDt = 1.0f / 60.0f;

int Joint(const char* name) { return Walk().skeleton.FindJoint(name); }

// One claimed frame: the local pose and the root placement.
struct Claim {
  LocalPose pose;
  Transform root = Transform::Identity();
};

// The walk at 60 Hz from 1 s, with cheats injected: frame 20 snaps the left
// knee 90 degrees (5,400 deg/s), frame 40 moves the root 3 rig sizes (a
// teleport), frame 60 stretches the left shin by 10%.
std::vector<Claim> Claims(int count, bool cheat) {
  std::vector<Claim> claims;
  const float size = RigSize(Walk().skeleton);
  for (int f = 0; f < count; ++f) {
    Claim c;
    c.pose = SampleWalk(1.0f + static_cast<float>(f) * kDt);
    if (cheat && f == 20) {
      c.pose[Joint("LeftKnee")].rotation =
          c.pose[Joint("LeftKnee")].rotation *
          Eigen::Quaternionf(
              Eigen::AngleAxisf(1.5707963f, Eigen::Vector3f::UnitX()));
    }
    if (cheat && f >= 40) c.root.translation = {3.0f * size, 0.0f, 0.0f};
    if (cheat && f == 60) {
      c.pose[Joint("LeftAnkle")].translation *= 1.1f;
    }
    claims.push_back(std::move(c));
  }
  return claims;
}

// The core job on frame f with the frames before it, at the op's defaults
// (extremities left out of the range and motion checks).
PlausibilityResult CoreCheck(const std::vector<Claim>& claims, int f) {
  const Skeleton& s = Walk().skeleton;
  std::vector<uint8_t> checks(s.num_joints(), kCheckAll);
  for (const char* name :
       {"LeftToe", "RightToe", "LeftWrist", "lhand", "LFingers", "LThumb",
        "RightWrist", "rhand", "RFingers", "RThumb"}) {
    checks[Joint(name)] = kCheckBone;
  }
  // Bones near the root: the root and its children.
  for (const char* name : {"Hips", "LHipJoint", "RHipJoint", "lowerback"}) {
    checks[Joint(name)] &= static_cast<uint8_t>(~kCheckBone);
  }
  PlausibilityResult result;
  PlausibilityJob job;
  job.skeleton = &s;
  job.input = claims[f].pose;
  job.placement = claims[f].root;
  if (f >= 1) {
    job.previous = claims[f - 1].pose;
    job.previous_placement = claims[f - 1].root;
    job.dt = kDt;
  }
  if (f >= 2) {
    job.previous2 = claims[f - 2].pose;
    job.previous2_placement = claims[f - 2].root;
    job.previous_dt = kDt;
  }
  job.joint_checks = checks;
  job.rig_size = RigSize(s);
  job.result = &result;
  EXPECT_TRUE(job.Run().ok());
  return result;
}

v1::CharacterFrame* AddClaim(v1::SessionRequest& request, const Claim& claim) {
  v1::CharacterFrame* c = request.mutable_frame()->add_characters();
  c->set_character_id("c");
  PoseToProto(claim.pose, c->mutable_pose());
  TransformToProto(claim.root, c->mutable_root());
  return c;
}

// The report equals the core's, measures and bounds by their bits.
void ExpectSameReport(const v1::PlausibilityReport& wire,
                      const PlausibilityResult& core, int frame) {
  EXPECT_EQ(wire.plausible(), core.plausible) << "frame " << frame;
  ASSERT_EQ(wire.violations_size(), static_cast<int>(core.violations.size()))
      << "frame " << frame;
  for (int i = 0; i < wire.violations_size(); ++i) {
    const v1::PlausibilityViolation& w = wire.violations(i);
    const PlausibilityViolation& c = core.violations[i];
    EXPECT_EQ(static_cast<int>(w.check()), static_cast<int>(c.check));
    EXPECT_EQ(w.joint(), Walk().skeleton.joint_name(c.joint));
    EXPECT_EQ(w.axis(), c.axis);
    EXPECT_EQ(absl::bit_cast<uint32_t>(w.measured()),
              absl::bit_cast<uint32_t>(c.measured));
    EXPECT_EQ(absl::bit_cast<uint32_t>(w.bound()),
              absl::bit_cast<uint32_t>(c.bound));
  }
}

// The checks a report names, as "check joint" strings.
std::vector<std::string> Named(const v1::PlausibilityReport& report) {
  std::vector<std::string> out;
  for (const v1::PlausibilityViolation& v : report.violations()) {
    out.push_back(
        absl::StrCat(v1::PlausibilityCheck_Name(v.check()), " ", v.joint()));
  }
  return out;
}

class PlausibilityOpTest : public ServiceTest {
 protected:
  // Runs `claims` through a Session whose rig is one plausibility op (only
  // its required fields: none); each frame's op report.
  std::vector<v1::OperationResult> RunSession(const std::vector<Claim>& claims,
                                              const v1::PlausibilityOp& op) {
    return RunSessionOf(WalkSkeleton(), claims, op);
  }

  // The same for a character of `skeleton`.
  std::vector<v1::OperationResult> RunSessionOf(
      const v1::Skeleton& skeleton, const std::vector<Claim>& claims,
      const v1::PlausibilityOp& op) {
    grpc::ClientContext context;
    std::unique_ptr<SessionStream> stream = stub_->Session(&context);
    v1::SessionRequest r;
    r.mutable_register_skeleton()->set_id("cmu");
    *r.mutable_register_skeleton()->mutable_skeleton() = skeleton;
    ExpectRegistered(RoundTrip(*stream, r));
    v1::Operation plausibility;
    *plausibility.mutable_plausibility() = op;
    RegisterRigAndCharacter(*stream, {plausibility});
    std::vector<v1::OperationResult> reports;
    for (size_t f = 0; f < claims.size(); ++f) {
      v1::SessionRequest frame;
      frame.mutable_frame()->set_sequence(f + 1);
      frame.mutable_frame()->set_dt(kDt);
      AddClaim(frame, claims[f]);
      const v1::SessionResponse response = RoundTrip(*stream, frame);
      EXPECT_EQ(response.frame().characters_size(), 1);
      if (response.frame().characters_size() != 1) break;
      const v1::CharacterResult& result = response.frame().characters(0);
      EXPECT_EQ(result.status().code(), 0) << result.status().message();
      // The check never changes the pose.
      EXPECT_TRUE(BitIdentical(result.pose(), Packed(claims[f].pose)))
          << "frame " << f;
      EXPECT_EQ(result.ops_size(), 1);
      if (result.ops_size() != 1) break;
      EXPECT_EQ(result.ops(0).op(), "plausibility");
      reports.push_back(result.ops(0));
    }
    stream->WritesDone();
    EXPECT_TRUE(stream->Finish().ok());
    return reports;
  }

  // One Solve of `claim` with `state` sent in; the character's answer.
  v1::CharacterOutput SolveClaim(
      const Claim& claim,
      const google::protobuf::Map<std::string, v1::OperationState>& state) {
    v1::SolveRequest request;
    request.set_dt(kDt);
    v1::CharacterInput* c = request.add_characters();
    *c->mutable_skeleton()->mutable_skeleton() = WalkSkeleton();
    PoseToProto(claim.pose, c->mutable_pose());
    TransformToProto(claim.root, c->mutable_root());
    c->add_ops()->mutable_plausibility();
    *c->mutable_state() = state;
    return SolveFirstCharacter(request);
  }
};

TEST_F(PlausibilityOpTest, Plausibility_HonestWalkAtDefaultsIsPlausible) {
  const std::vector<Claim> claims = Claims(240, false);
  const std::vector<v1::OperationResult> reports =
      RunSession(claims, v1::PlausibilityOp());
  ASSERT_EQ(reports.size(), claims.size());
  for (size_t f = 0; f < reports.size(); ++f) {
    EXPECT_TRUE(reports[f].plausibility().plausible())
        << "frame " << f << ": "
        << ::testing::PrintToString(Named(reports[f].plausibility()));
  }
}

TEST_F(PlausibilityOpTest, Plausibility_FastCaptureAndGameClipsPassAtDefaults) {
  // Other rigs and fast motion, as a client sends them: only the required
  // fields, the clip sampled at 60 Hz (a BVH from its second frame: the
  // first is the capture's calibration pose).
  for (const char* file :
       {"cmu_49_04_run_leap.bvh", "Fox.glb", "RobotExpressive.glb"}) {
    absl::StatusOr<ImportedAsset> asset =
        ReadAssetFile(std::string(POSEWIRE_TEST_DATA_DIR) + "/" + file);
    ASSERT_TRUE(asset.ok()) << asset.status();
    v1::Skeleton skeleton;
    SkeletonToProto(asset->skeleton, &skeleton);
    for (const Clip& clip : asset->clips) {
      std::vector<Claim> claims;
      const float start = absl::EndsWith(file, ".bvh") ? 1.0f / 120.0f : 0.0f;
      for (float t = start; t <= clip.duration; t += kDt) {
        Claim c;
        c.pose = RestPose(asset->skeleton);
        SamplingJob job;
        job.skeleton = &asset->skeleton;
        job.clip = &clip;
        job.time = t;
        job.mode = PlaybackMode::kClamp;
        job.clip_validated = true;
        job.output = absl::MakeSpan(c.pose);
        ASSERT_TRUE(job.Run().ok());
        claims.push_back(std::move(c));
      }
      v1::PlausibilityOp op;
      if (clip.name == "Death") {
        // The robot comes apart as it falls (its head flies off, its
        // shoulders move 5% out): a referee should flag that, so a game
        // that plays this clip leaves those bones out of the check.
        for (const char* joint : {"Head", "Shoulder.L", "Shoulder.R"}) {
          v1::PlausibilitySkip* skip = op.add_skip();
          skip->set_joint(joint);
          skip->set_bone(true);
        }
      }
      const std::vector<v1::OperationResult> reports =
          RunSessionOf(skeleton, claims, op);
      ASSERT_EQ(reports.size(), claims.size()) << file << " " << clip.name;
      int flagged = 0;
      for (size_t f = 0; f < reports.size(); ++f) {
        if (reports[f].plausibility().plausible()) continue;
        if (++flagged <= 3) {
          ADD_FAILURE() << file << " " << clip.name << " frame " << f << ": "
                        << ::testing::PrintToString(
                               Named(reports[f].plausibility()))
                        << " measured "
                        << reports[f].plausibility().violations(0).measured();
        }
      }
      EXPECT_EQ(flagged, 0) << file << " " << clip.name;
    }
  }
}

TEST_F(PlausibilityOpTest, Plausibility_CheatsAreReportedAsTheCoreDoes) {
  const std::vector<Claim> claims = Claims(64, true);
  const std::vector<v1::OperationResult> reports =
      RunSession(claims, v1::PlausibilityOp());
  ASSERT_EQ(reports.size(), claims.size());
  for (size_t f = 0; f < reports.size(); ++f) {
    ExpectSameReport(reports[f].plausibility(), CoreCheck(claims, f), f);
  }
  // The snap: its velocity, then its return's velocity and acceleration.
  EXPECT_THAT(
      Named(reports[20].plausibility()),
      ::testing::Contains("PLAUSIBILITY_CHECK_ANGULAR_VELOCITY LeftKnee"));
  EXPECT_FALSE(reports[21].plausibility().plausible());
  EXPECT_THAT(Named(reports[40].plausibility()),
              ::testing::Contains("PLAUSIBILITY_CHECK_ROOT_TELEPORT Hips"));
  EXPECT_TRUE(reports[50].plausibility().plausible());
  EXPECT_THAT(Named(reports[60].plausibility()),
              ::testing::Contains("PLAUSIBILITY_CHECK_BONE_LENGTH LeftAnkle"));
  EXPECT_TRUE(reports[63].plausibility().plausible());
}

TEST_F(PlausibilityOpTest,
       Plausibility_SolveWithStateSentBackAnswersAsASession) {
  const std::vector<Claim> claims = Claims(44, true);
  const std::vector<v1::OperationResult> session =
      RunSession(claims, v1::PlausibilityOp());
  ASSERT_EQ(session.size(), claims.size());
  google::protobuf::Map<std::string, v1::OperationState> state;
  for (size_t f = 0; f < claims.size(); ++f) {
    const v1::CharacterOutput out = SolveClaim(claims[f], state);
    ASSERT_EQ(out.ops_size(), 1);
    EXPECT_EQ(out.ops(0).SerializeAsString(), session[f].SerializeAsString())
        << "frame " << f;
    ASSERT_EQ(out.state().count("plausibility"), 1u);
    EXPECT_EQ(out.state().at("plausibility").plausibility().frames_size(),
              std::min<int>(f + 1, 2));
    state = out.state();
  }
}

TEST_F(PlausibilityOpTest, Plausibility_LimitsAndSkipsAreApplied) {
  // The knee held straight by its limit: every walking frame bends it.
  v1::PlausibilityOp op;
  v1::JointLimitSpec* limit = op.add_limits();
  limit->set_joint("LeftKnee");
  limit->mutable_euler()->mutable_min();
  limit->mutable_euler()->mutable_max();
  const std::vector<Claim> claims = Claims(3, false);
  std::vector<v1::OperationResult> reports = RunSession(claims, op);
  ASSERT_EQ(reports.size(), 3u);
  bool range = false;
  for (const v1::PlausibilityViolation& v :
       reports[0].plausibility().violations()) {
    EXPECT_EQ(v.check(), v1::PLAUSIBILITY_CHECK_RANGE_OF_MOTION);
    EXPECT_EQ(v.joint(), "LeftKnee");
    EXPECT_GE(v.axis(), 0);
    EXPECT_LE(v.axis(), 2);
    EXPECT_EQ(v.bound(), 0.0f);
    EXPECT_GT(std::fabs(v.measured()), 1e-3f);
    range = true;
  }
  EXPECT_TRUE(range);

  // Skipped, the same limit reports nothing.
  v1::PlausibilitySkip* skip = op.add_skip();
  skip->set_joint("LeftKnee");
  skip->set_range(true);
  reports = RunSession(claims, op);
  ASSERT_EQ(reports.size(), 3u);
  for (const v1::OperationResult& r : reports) {
    EXPECT_TRUE(r.plausibility().plausible());
  }
}

TEST_F(PlausibilityOpTest, Plausibility_ExtremitiesAreCheckedWhenAsked) {
  // A wrist snapped 90 degrees: left out at the defaults, reported when
  // skip_extremities is false.
  std::vector<Claim> claims = Claims(3, false);
  LocalPose& pose = claims[2].pose;
  pose[Joint("LeftWrist")].rotation =
      pose[Joint("LeftWrist")].rotation *
      Eigen::Quaternionf(
          Eigen::AngleAxisf(1.5707963f, Eigen::Vector3f::UnitY()));
  EXPECT_TRUE(
      RunSession(claims, v1::PlausibilityOp())[2].plausibility().plausible());
  v1::PlausibilityOp op;
  op.set_skip_extremities(false);
  EXPECT_THAT(
      Named(RunSession(claims, op)[2].plausibility()),
      ::testing::Contains("PLAUSIBILITY_CHECK_ANGULAR_VELOCITY LeftWrist"));
}

TEST_F(PlausibilityOpTest, Plausibility_BadInputNamesTheField) {
  grpc::ClientContext context;
  std::unique_ptr<SessionStream> stream = stub_->Session(&context);
  RegisterWalk(*stream);
  const auto refused = [&](const v1::PlausibilityOp& op) {
    v1::SessionRequest r;
    r.mutable_register_rig()->set_id("rig");
    r.mutable_register_rig()->set_skeleton_id("cmu");
    *r.mutable_register_rig()->add_ops()->mutable_plausibility() = op;
    const v1::SessionResponse response = RoundTrip(*stream, r);
    EXPECT_EQ(response.registered().status().code(),
              static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
    return response.registered().status().message();
  };
  v1::PlausibilityOp op;
  op.mutable_thresholds()->set_max_root_speed(-1.0f);
  EXPECT_THAT(refused(op),
              HasSubstr("register_rig.ops[0].plausibility.thresholds."
                        "max_root_speed: -1"));
  op.Clear();
  op.add_skip()->set_joint("Tail");
  EXPECT_THAT(refused(op), HasSubstr("register_rig.ops[0].plausibility."
                                     "skip[0].joint: no joint named 'Tail'"));
  op.Clear();
  op.set_rig_size(0.0f);
  EXPECT_THAT(refused(op),
              HasSubstr("register_rig.ops[0].plausibility.rig_size: 0"));
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());

  // State that does not fit: three frames, a pose of the wrong size.
  const Claim claim = Claims(1, false)[0];
  google::protobuf::Map<std::string, v1::OperationState> state;
  v1::PlausibilityState* frames = state["plausibility"].mutable_plausibility();
  for (int i = 0; i < 3; ++i) frames->add_frames();
  v1::SolveRequest request;
  v1::CharacterInput* c = request.add_characters();
  *c->mutable_skeleton()->mutable_skeleton() = WalkSkeleton();
  c->add_ops()->mutable_plausibility();
  *c->mutable_state() = state;
  request.set_dt(kDt);
  grpc::ClientContext solve_context;
  v1::SolveResponse response;
  grpc::Status status = stub_->Solve(&solve_context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr("[\"plausibility\"].plausibility.frames: 3 frames"));

  frames->mutable_frames()->DeleteSubrange(1, 2);
  PoseToProto(LocalPose(2), frames->mutable_frames(0)->mutable_pose());
  *request.mutable_characters(0)->mutable_state() = state;
  grpc::ClientContext solve_context2;
  status = stub_->Solve(&solve_context2, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr("characters[0].state[\"plausibility\"]."
                        "plausibility.frames[0].pose: 2 joints for a "
                        "skeleton of 31"));
  (void)claim;
}

// ------------------------------------------------------------ LearnLimits --

// A referee rig re-solves each frame from its clip time and validates the
// claim; the claim travels as an op update, and answers what the whole op
// list sent with the frame answers, byte for byte.
TEST_F(PlausibilityOpTest, Validate_ClaimAsAnOpUpdateAnswersAsTheWholeOps) {
  grpc::ClientContext context;
  std::unique_ptr<SessionStream> stream = stub_->Session(&context);
  RegisterWalk(*stream);
  v1::Operation validate;
  PoseToProto(RestPose(Walk().skeleton),
              validate.mutable_validate()->mutable_claimed());
  RegisterRigAndCharacter(*stream, {SampleWalkOp(0.0f), validate});
  const int knee = Joint("LeftKnee");
  for (int f = 0; f < 6; ++f) {
    const float t = 1.0f + static_cast<float>(f) * kDt;
    LocalPose claim = SampleWalk(t);
    // Every other claim bends the knee: not what the clip gives.
    if (f % 2 == 1) {
      claim[knee].rotation =
          claim[knee].rotation *
          Eigen::Quaternionf(Eigen::AngleAxisf(0.5f, Eigen::Vector3f::UnitX()));
    }
    v1::SessionRequest by_update;
    by_update.mutable_frame()->set_sequence(2 * f + 1);
    v1::CharacterFrame* c = by_update.mutable_frame()->add_characters();
    c->set_character_id("c");
    v1::OpUpdate* time = c->add_op_updates();
    time->set_op(0);
    time->set_time(t);
    v1::OpUpdate* claimed = c->add_op_updates();
    claimed->set_op(1);
    PoseToProto(claim, claimed->mutable_claimed());

    v1::SessionRequest whole;
    whole.mutable_frame()->set_sequence(2 * f + 2);
    v1::CharacterFrame* w = whole.mutable_frame()->add_characters();
    w->set_character_id("c");
    *w->add_ops() = SampleWalkOp(t);
    PoseToProto(claim, w->add_ops()->mutable_validate()->mutable_claimed());

    const v1::SessionResponse a = RoundTrip(*stream, by_update);
    const v1::SessionResponse b = RoundTrip(*stream, whole);
    ASSERT_EQ(a.frame().characters_size(), 1);
    ASSERT_EQ(a.frame().characters(0).status().code(), 0)
        << a.frame().characters(0).status().message();
    const v1::ValidationResult& v = a.frame().characters(0).ops(1).validation();
    EXPECT_EQ(v.SerializeAsString(),
              b.frame().characters(0).ops(1).validation().SerializeAsString())
        << "frame " << f;
    EXPECT_EQ(v.valid(), f % 2 == 0) << "frame " << f;
    if (f % 2 == 1) {
      // The bent knee moves its leg's end (the toe) the farthest.
      EXPECT_EQ(v.worst_joint(), "LeftToe");
    }
  }
  // A claim of the wrong size is that character's error, naming the
  // field; the next frame is solved.
  v1::SessionRequest bad;
  bad.mutable_frame()->set_sequence(100);
  v1::CharacterFrame* c = bad.mutable_frame()->add_characters();
  c->set_character_id("c");
  v1::OpUpdate* claimed = c->add_op_updates();
  claimed->set_op(1);
  claimed->mutable_claimed()->add_transforms(0.0f);
  const v1::SessionResponse refused = RoundTrip(*stream, bad);
  ASSERT_EQ(refused.frame().characters_size(), 1);
  EXPECT_EQ(refused.frame().characters(0).status().code(),
            static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(refused.frame().characters(0).status().message(),
              HasSubstr("frame.characters[0].op_updates[0].claimed: 1 floats; "
                        "the skeleton's 31 joints take 310"));
  bad.mutable_frame()->set_sequence(101);
  bad.mutable_frame()->mutable_characters(0)->clear_op_updates();
  EXPECT_EQ(RoundTrip(*stream, bad).frame().characters(0).status().code(), 0);
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

class LearnLimitsTest : public ServiceTest {
 protected:
  absl::StatusOr<v1::LearnLimitsResponse> Learn(
      const v1::LearnLimitsRequest& request) {
    grpc::ClientContext context;
    v1::LearnLimitsResponse response;
    const grpc::Status status =
        stub_->LearnLimits(&context, request, &response);
    if (!status.ok()) {
      return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                          status.error_message());
    }
    return response;
  }

  static v1::LearnLimitsRequest WalkRequest() {
    v1::LearnLimitsRequest request;
    *request.mutable_skeleton()->mutable_skeleton() = WalkSkeleton();
    *request.add_clips() = WalkClip();
    return request;
  }
};

TEST_F(LearnLimitsTest, LearnLimits_AnswersTheCoresLimitsBitForBit) {
  absl::StatusOr<v1::LearnLimitsResponse> learnt = Learn(WalkRequest());
  ASSERT_TRUE(learnt.ok()) << learnt.status();
  absl::StatusOr<LearnedLimits> core =
      LearnJointLimits(Walk().skeleton, Walk().clips, LearnLimitsOptions());
  ASSERT_TRUE(core.ok()) << core.status();
  // Every joint but the root (its rotation is the facing), in order.
  int k = 0;
  for (int j = 1; j < Walk().skeleton.num_joints(); ++j) {
    if (core->limits[j].type == JointLimitType::kNone) continue;
    ASSERT_LT(k, learnt->limits_size());
    const v1::JointLimitSpec& spec = learnt->limits(k++);
    EXPECT_EQ(spec.joint(), Walk().skeleton.joint_name(j));
    ASSERT_TRUE(spec.has_euler());
    for (int axis = 0; axis < 3; ++axis) {
      const float min[3] = {spec.euler().min().x(), spec.euler().min().y(),
                            spec.euler().min().z()};
      const float max[3] = {spec.euler().max().x(), spec.euler().max().y(),
                            spec.euler().max().z()};
      EXPECT_EQ(absl::bit_cast<uint32_t>(min[axis]),
                absl::bit_cast<uint32_t>(core->limits[j].euler_min[axis]));
      EXPECT_EQ(absl::bit_cast<uint32_t>(max[axis]),
                absl::bit_cast<uint32_t>(core->limits[j].euler_max[axis]));
    }
  }
  EXPECT_EQ(k, learnt->limits_size());
  EXPECT_GT(k, 20);
  EXPECT_GT(learnt->samples(), 0u);
  EXPECT_FALSE(learnt->skeleton_hash().empty());
}

TEST_F(LearnLimitsTest, LearnLimits_SentBackAsAPlausibilityOpsLimits) {
  v1::LearnLimitsRequest request = WalkRequest();
  request.mutable_options()->set_margin(10.0f * 3.14159265f / 180.0f);
  absl::StatusOr<v1::LearnLimitsResponse> learnt = Learn(request);
  ASSERT_TRUE(learnt.ok()) << learnt.status();
  v1::PlausibilityOp op;
  *op.mutable_limits() = learnt->limits();
  // The walk itself stays within its own limits; a knee bent 40 degrees
  // past its range does not.
  std::vector<Claim> claims = Claims(60, false);
  const int knee = Joint("LeftKnee");
  const v1::JointLimitSpec* spec = nullptr;
  for (const v1::JointLimitSpec& s : learnt->limits()) {
    if (s.joint() == "LeftKnee") spec = &s;
  }
  ASSERT_NE(spec, nullptr);
  const Eigen::Vector3f beyond(spec->euler().max().x() + 0.7f, 0.0f, 0.0f);
  // The rotation relative to rest, about x only, past the x range.
  claims[59].pose[knee].rotation = Walk().skeleton.rest_pose()[knee].rotation *
                                   Eigen::Quaternionf(Eigen::AngleAxisf(
                                       beyond.x(), Eigen::Vector3f::UnitX()));
  grpc::ClientContext context;
  std::unique_ptr<SessionStream> stream = stub_->Session(&context);
  RegisterWalk(*stream);
  v1::Operation plausibility;
  *plausibility.mutable_plausibility() = op;
  RegisterRigAndCharacter(*stream, {plausibility});
  for (size_t f = 0; f < claims.size(); ++f) {
    v1::SessionRequest frame;
    frame.mutable_frame()->set_sequence(f + 1);
    frame.mutable_frame()->set_dt(0.0f);  // ranges only
    AddClaim(frame, claims[f]);
    const v1::SessionResponse response = RoundTrip(*stream, frame);
    ASSERT_EQ(response.frame().characters_size(), 1);
    const v1::PlausibilityReport& report =
        response.frame().characters(0).ops(0).plausibility();
    if (f + 1 < claims.size()) {
      EXPECT_TRUE(report.plausible())
          << "frame " << f << ": " << ::testing::PrintToString(Named(report));
    } else {
      EXPECT_THAT(
          Named(report),
          ::testing::Contains("PLAUSIBILITY_CHECK_RANGE_OF_MOTION LeftKnee"));
    }
  }
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

// A knee bent 0.7 rad past the x range of `limits`' LeftKnee limit, on
// the last of `claims`.
void BendKneePastItsLimit(
    const google::protobuf::RepeatedPtrField<v1::JointLimitSpec>& limits,
    std::vector<Claim>& claims) {
  const int knee = Joint("LeftKnee");
  for (const v1::JointLimitSpec& s : limits) {
    if (s.joint() != "LeftKnee") continue;
    claims.back().pose[knee].rotation =
        Walk().skeleton.rest_pose()[knee].rotation *
        Eigen::Quaternionf(Eigen::AngleAxisf(s.euler().max().x() + 0.7f,
                                             Eigen::Vector3f::UnitX()));
    return;
  }
  ADD_FAILURE() << "no LeftKnee limit";
}

v1::SessionRequest RegisterLimitsRequest(const std::string& id) {
  v1::SessionRequest r;
  v1::RegisterLimits* limits = r.mutable_register_limits();
  limits->set_id(id);
  limits->set_skeleton_id("cmu");
  limits->add_learn_from_clips("walk");
  limits->mutable_learn_options()->set_margin(10.0f * 3.14159265f / 180.0f);
  return r;
}

v1::SessionRequest RegisterRigRequest(const std::string& id,
                                      const std::string& skeleton_id,
                                      const v1::PlausibilityOp& op) {
  v1::SessionRequest r;
  r.mutable_register_rig()->set_id(id);
  r.mutable_register_rig()->set_skeleton_id(skeleton_id);
  *r.mutable_register_rig()->add_ops()->mutable_plausibility() = op;
  return r;
}

// Limits learnt from a Session's own clips are LearnLimits' answer, bit for
// bit; a rig naming them by id reports exactly what a rig carrying them
// inline reports.
TEST_F(LearnLimitsTest, SessionLimits_LearntFromSessionClipsAsLearnLimitsDoes) {
  v1::LearnLimitsRequest unary = WalkRequest();
  unary.mutable_options()->set_margin(10.0f * 3.14159265f / 180.0f);
  absl::StatusOr<v1::LearnLimitsResponse> expected = Learn(unary);
  ASSERT_TRUE(expected.ok()) << expected.status();

  grpc::ClientContext context;
  std::unique_ptr<SessionStream> stream = stub_->Session(&context);
  RegisterWalk(*stream);
  const v1::SessionResponse registered =
      RoundTrip(*stream, RegisterLimitsRequest("walk_limits"));
  ExpectRegistered(registered);
  EXPECT_EQ(registered.registered().kind(), "limits");
  EXPECT_EQ(registered.registered().learned().SerializeAsString(),
            expected->SerializeAsString());

  v1::PlausibilityOp by_id;
  by_id.set_limits_id("walk_limits");
  v1::PlausibilityOp inline_limits;
  *inline_limits.mutable_limits() = expected->limits();
  ExpectRegistered(
      RoundTrip(*stream, RegisterRigRequest("by_id", "cmu", by_id)));
  ExpectRegistered(
      RoundTrip(*stream, RegisterRigRequest("inline", "cmu", inline_limits)));
  for (const char* character : {"a", "b"}) {
    v1::SessionRequest r;
    r.mutable_register_character()->set_id(character);
    r.mutable_register_character()->set_rig_id(character[0] == 'a' ? "by_id"
                                                                   : "inline");
    ExpectRegistered(RoundTrip(*stream, r));
  }

  std::vector<Claim> claims = Claims(30, false);
  BendKneePastItsLimit(expected->limits(), claims);
  for (size_t f = 0; f < claims.size(); ++f) {
    v1::SessionRequest frame;
    frame.mutable_frame()->set_sequence(f + 1);
    frame.mutable_frame()->set_dt(kDt);
    AddClaim(frame, claims[f])->set_character_id("a");
    AddClaim(frame, claims[f])->set_character_id("b");
    const v1::SessionResponse response = RoundTrip(*stream, frame);
    ASSERT_EQ(response.frame().characters_size(), 2);
    const v1::OperationResult& a = response.frame().characters(0).ops(0);
    const v1::OperationResult& b = response.frame().characters(1).ops(0);
    EXPECT_EQ(a.SerializeAsString(), b.SerializeAsString()) << "frame " << f;
    if (f + 1 < claims.size()) {
      EXPECT_TRUE(a.plausibility().plausible())
          << "frame " << f << ": "
          << ::testing::PrintToString(Named(a.plausibility()));
    } else {
      EXPECT_THAT(
          Named(a.plausibility()),
          ::testing::Contains("PLAUSIBILITY_CHECK_RANGE_OF_MOTION LeftKnee"));
    }
  }
  // Per-frame ops name the set too.
  v1::SessionRequest frame;
  frame.mutable_frame()->set_sequence(claims.size() + 1);
  v1::CharacterFrame* c = AddClaim(frame, claims.back());
  c->set_character_id("b");
  *c->add_ops()->mutable_plausibility() = by_id;
  const v1::SessionResponse response = RoundTrip(*stream, frame);
  ASSERT_EQ(response.frame().characters_size(), 1);
  EXPECT_THAT(
      Named(response.frame().characters(0).ops(0).plausibility()),
      ::testing::Contains("PLAUSIBILITY_CHECK_RANGE_OF_MOTION LeftKnee"));
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(LearnLimitsTest,
       SessionLimits_BadInputNamesTheFieldAndTheSessionGoesOn) {
  grpc::ClientContext context;
  std::unique_ptr<SessionStream> stream = stub_->Session(&context);
  RegisterWalk(*stream);
  // The same skeleton under a second id: limits are per registered
  // skeleton.
  v1::SessionRequest other;
  other.mutable_register_skeleton()->set_id("other");
  *other.mutable_register_skeleton()->mutable_skeleton() = WalkSkeleton();
  ExpectRegistered(RoundTrip(*stream, other));
  const v1::SessionResponse learnt =
      RoundTrip(*stream, RegisterLimitsRequest("walk_limits"));
  ExpectRegistered(learnt);

  ExpectRegistered(RoundTrip(*stream, RegisterLimitsRequest("walk_limits")),
                   grpc::StatusCode::ALREADY_EXISTS);
  // Both sources.
  v1::SessionRequest both = RegisterLimitsRequest("both");
  *both.mutable_register_limits()->mutable_limits() =
      learnt.registered().learned().limits();
  const v1::SessionResponse refused = RoundTrip(*stream, both);
  ExpectRegistered(refused, grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(refused.registered().status().message(),
              HasSubstr("register_limits: set exactly one of limits"));
  EXPECT_FALSE(refused.registered().has_learned());
  // Limits sent with learn options.
  v1::SessionRequest sent = both;
  sent.mutable_register_limits()->clear_learn_from_clips();
  EXPECT_THAT(RoundTrip(*stream, sent).registered().status().message(),
              HasSubstr("register_limits.learn_options: only with "
                        "learn_from_clips"));
  // The sent limits, alone, register.
  sent.mutable_register_limits()->clear_learn_options();
  sent.mutable_register_limits()->set_id("sent");
  ExpectRegistered(RoundTrip(*stream, sent));

  v1::PlausibilityOp op;
  op.set_limits_id("walk_limits");
  const v1::SessionResponse wrong_skeleton =
      RoundTrip(*stream, RegisterRigRequest("r1", "other", op));
  ExpectRegistered(wrong_skeleton, grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(wrong_skeleton.registered().status().message(),
              HasSubstr("register_rig.ops[0].plausibility.limits_id: limit set "
                        "'walk_limits' is for skeleton 'cmu', not this rig's "
                        "skeleton"));
  *op.add_limits() = learnt.registered().learned().limits(0);
  const v1::SessionResponse id_and_limits =
      RoundTrip(*stream, RegisterRigRequest("r2", "cmu", op));
  ExpectRegistered(id_and_limits, grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(id_and_limits.registered().status().message(),
              HasSubstr("limits_id: set limits_id or limits, not both"));

  // Nothing refused was kept; what was accepted works.
  op.clear_limits();
  ExpectRegistered(RoundTrip(*stream, RegisterRigRequest("r3", "cmu", op)));
  op.set_limits_id("both");
  ExpectRegistered(RoundTrip(*stream, RegisterRigRequest("r4", "cmu", op)),
                   grpc::StatusCode::NOT_FOUND);
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(LearnLimitsTest, LearnLimits_BadInputNamesTheField) {
  v1::LearnLimitsRequest request = WalkRequest();
  request.clear_clips();
  EXPECT_THAT(Learn(request).status().message(),
              HasSubstr("clips: at least one clip"));
  request = WalkRequest();
  request.mutable_options()->set_margin(-1.0f);
  EXPECT_THAT(Learn(request).status().message(),
              HasSubstr("options.margin: -1 must be finite and >= 0"));
  request = WalkRequest();
  request.mutable_options()->add_unlimited_joints("Tail");
  EXPECT_THAT(Learn(request).status().message(),
              HasSubstr("options.unlimited_joints[0]: no joint named 'Tail'"));
  request = WalkRequest();
  request.mutable_clips(0)->mutable_joints(0)->set_joint(999);
  EXPECT_EQ(Learn(request).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Learn(request).status().message(), HasSubstr("clips[0]"));
  request = WalkRequest();
  request.mutable_skeleton()->set_hash("0000");
  EXPECT_EQ(Learn(request).status().code(), absl::StatusCode::kNotFound);
  request = WalkRequest();
  request.mutable_options()->set_kind(static_cast<v1::LimitKind>(7));
  EXPECT_THAT(Learn(request).status().message(), HasSubstr("options.kind"));
}

}  // namespace plausibility_op_test
}  // namespace posewire::server
