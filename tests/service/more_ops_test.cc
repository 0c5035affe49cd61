// The remaining operations over the wire (additive, aim, look-at, FABRIK
// tree), each
// bit-identical to its core job run directly, and deadlines: a solve that
// cannot finish in time ends with DEADLINE_EXCEEDED.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "solver_core/analytic_ik/aim_ik.h"
#include "solver_core/analytic_ik/look_at.h"
#include "solver_core/chain_ik/fabrik_ik.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/pose_ops/additive_job.h"
#include "solver_core/pose_ops/sampling_job.h"
#include "tests/service/service_fixture.h"

namespace posewire::server {
namespace more_ops_test {

int Joint(const char* name) { return Walk().skeleton.FindJoint(name); }

class MoreOpsTest : public ServiceTest {
 protected:
  // One walk character starting from the pose at 1 s, with the walk clip.
  v1::SolveRequest Request() {
    v1::SolveRequest request;
    *request.add_clips() = WalkClip();
    v1::CharacterInput* c = request.add_characters();
    *c->mutable_skeleton()->mutable_skeleton() = WalkSkeleton();
    PoseToProto(SampleWalk(1.0f), c->mutable_pose());
    return request;
  }

  v1::CharacterOutput Solve(const v1::SolveRequest& request) {
    return SolveFirstCharacter(request);
  }
};

TEST_F(MoreOpsTest, Additive_ClipDeltaAtHalfWeightMatchesTheCore) {
  v1::SolveRequest request = Request();
  v1::AdditiveOp* op =
      request.mutable_characters(0)->add_ops()->mutable_additive();
  op->mutable_base()->mutable_clip()->set_clip("walk");
  op->mutable_base()->mutable_clip()->set_time(0.0f);
  op->mutable_additive()->mutable_clip()->set_clip("walk");
  op->mutable_additive()->mutable_clip()->set_time(0.5f);
  op->set_weight(0.5f);
  op->set_blend_root("lowerback");
  const v1::CharacterOutput out = Solve(request);

  const Skeleton& skeleton = Walk().skeleton;
  const LocalPose base = SampleWalk(0.0f), additive = SampleWalk(0.5f);
  const LocalPose input = SampleWalk(1.0f);
  LocalPose delta(skeleton.num_joints()), expected(skeleton.num_joints());
  MakeAdditiveJob make{.skeleton = &skeleton,
                       .base = base,
                       .additive = additive,
                       .delta = absl::MakeSpan(delta)};
  ASSERT_TRUE(make.Run().ok());
  AdditiveJob apply;
  apply.skeleton = &skeleton;
  apply.input = input;
  apply.delta = delta;
  apply.weight = 0.5f;
  apply.blend_root = Joint("lowerback");
  apply.output = absl::MakeSpan(expected);
  ASSERT_TRUE(apply.Run().ok());
  EXPECT_TRUE(BitIdentical(out.pose(), Packed(expected)));
  // Outside the blend root (the legs) the input is untouched.
  const float* p = out.pose().transforms().data() + 10 * Joint("LeftKnee");
  EXPECT_EQ(p[6], input[Joint("LeftKnee")].rotation.w());
}

TEST_F(MoreOpsTest, Aim_HeadLooksAtTheTargetLikeTheCore) {
  const LocalPose input = SampleWalk(1.0f);
  const ModelPose model = Model(input);
  const Eigen::Vector3f target =
      model[Joint("Head")].translation + Eigen::Vector3f(0, 5, 40);
  v1::SolveRequest request = Request();
  request.mutable_characters(0)->set_want_model_pose(true);
  v1::AimIkOp* op = request.mutable_characters(0)->add_ops()->mutable_aim_ik();
  op->set_joint("Head");
  *op->mutable_target() = ToVec3(target);
  *op->mutable_forward() = ToVec3(Eigen::Vector3f::UnitZ());
  const v1::CharacterOutput out = Solve(request);
  EXPECT_EQ(out.ops(0).op(), "aim_ik");

  LocalPose expected = input;
  AimIkJob job;
  job.skeleton = &Walk().skeleton;
  job.input = input;
  job.parent_model = model[Walk().skeleton.parent(Joint("Head"))];
  job.joint = Joint("Head");
  job.target = target;
  job.forward = Eigen::Vector3f::UnitZ();
  job.output = absl::MakeSpan(expected);
  ASSERT_TRUE(job.Run().ok());
  EXPECT_TRUE(BitIdentical(out.pose(), Packed(expected)));

  // Independently: the head's forward axis now points at the target.
  const float* m = out.model_pose().transforms().data() + 10 * Joint("Head");
  const Eigen::Quaternionf rotation(m[6], m[3], m[4], m[5]);
  const Eigen::Vector3f head(m[0], m[1], m[2]);
  EXPECT_GT((rotation * Eigen::Vector3f::UnitZ())
                .normalized()
                .dot((target - head).normalized()),
            0.9999f);
}

constexpr const char* kWalkSpine[] = {"lowerback", "Chest", "Chest2",
                                      "lowerneck", "Neck"};

// The look-at the wire's defaults describe, on the walk's spine and head.
LookAtJob CoreLookAt(const LocalPose& input, const Eigen::Vector3f& target,
                     std::vector<int>& spine, LocalPose& output) {
  spine.clear();
  for (const char* j : kWalkSpine) spine.push_back(Joint(j));
  LookAtJob job;
  job.skeleton = &Walk().skeleton;
  job.input = input;
  job.parent_model =
      ParentModelTransformOrRoot(Walk().skeleton, input, spine[0]);
  job.spine = spine;
  job.head = Joint("Head");
  job.target = target;
  output = input;
  job.output = absl::MakeSpan(output);
  return job;
}

v1::LookAtOp WalkLookAt() {
  v1::LookAtOp op;
  for (const char* j : kWalkSpine) op.add_spine(j);
  op.set_head("Head");
  return op;
}

// The head's forward (+z in its space on the BVH rig) against the
// direction to `target`, from a model pose on the wire.
float HeadAngleTo(const v1::Pose& model_pose, const Eigen::Vector3f& target) {
  const float* m = model_pose.transforms().data() + 10 * Joint("Head");
  const Eigen::Quaternionf rotation(m[6], m[3], m[4], m[5]);
  const Eigen::Vector3f head(m[0], m[1], m[2]);
  const Eigen::Vector3f forward = rotation * Eigen::Vector3f::UnitZ();
  const Eigen::Vector3f to = target - head;
  return std::atan2(forward.cross(to).norm(), forward.dot(to));
}

TEST_F(MoreOpsTest, LookAt_SpineAndHeadTurnToTheTargetLikeTheCore) {
  const LocalPose input = SampleWalk(1.0f);
  const Eigen::Vector3f target =
      Model(input)[Joint("Head")].translation + Eigen::Vector3f(25, 8, 30);
  v1::SolveRequest request = Request();
  request.mutable_characters(0)->set_want_model_pose(true);
  v1::LookAtOp* op =
      request.mutable_characters(0)->add_ops()->mutable_look_at();
  *op = WalkLookAt();
  *op->mutable_target() = ToVec3(target);
  const v1::CharacterOutput out = Solve(request);
  ASSERT_EQ(out.ops_size(), 1);
  EXPECT_EQ(out.ops(0).op(), "look_at");
  EXPECT_TRUE(out.ops(0).reached());
  EXPECT_EQ(out.ops(0).iterations(), 1u);

  std::vector<int> spine;
  LocalPose expected;
  LookAtJob job = CoreLookAt(input, target, spine, expected);
  ASSERT_TRUE(job.Run().ok());
  EXPECT_TRUE(BitIdentical(out.pose(), Packed(expected)));
  EXPECT_LT(HeadAngleTo(out.model_pose(), target), 1.0f * 3.14159265f / 180);
}

TEST_F(MoreOpsTest, LookAt_SessionOpUpdatesMoveTheTargetLikeTheCore) {
  grpc::ClientContext context;
  std::unique_ptr<SessionStream> stream = stub_->Session(&context);
  RegisterWalk(*stream);
  v1::Operation look_at;
  *look_at.mutable_look_at() = WalkLookAt();
  RegisterRigAndCharacter(*stream, {SampleWalkOp(1.0f), look_at});

  const LocalPose input = SampleWalk(1.0f);
  const Eigen::Vector3f head = Model(input)[Joint("Head")].translation;
  for (int f = 0; f < 6; ++f) {
    // Sweeping from left to right in front of the character.
    const Eigen::Vector3f target =
        head + Eigen::Vector3f(-30.0f + 12.0f * f, 5.0f, 40.0f);
    v1::SessionRequest request;
    request.mutable_frame()->set_sequence(f + 1);
    request.mutable_frame()->set_dt(1.0f / 60.0f);
    v1::CharacterFrame* c = request.mutable_frame()->add_characters();
    c->set_character_id("c");
    c->set_want_model_pose(true);
    v1::OpUpdate* update = c->add_op_updates();
    update->set_op(1);
    *update->mutable_target() = ToVec3(target);
    const v1::SessionResponse response = RoundTrip(*stream, request);
    ASSERT_TRUE(response.has_frame());
    ASSERT_EQ(response.frame().characters_size(), 1);
    const v1::CharacterResult& result = response.frame().characters(0);
    ASSERT_EQ(result.status().code(), 0) << result.status().message();

    std::vector<int> spine;
    LocalPose expected;
    LookAtJob job = CoreLookAt(input, target, spine, expected);
    ASSERT_TRUE(job.Run().ok());
    EXPECT_TRUE(BitIdentical(result.pose(), Packed(expected))) << "frame " << f;
    EXPECT_LT(HeadAngleTo(result.model_pose(), target),
              1.0f * 3.14159265f / 180)
        << "frame " << f;
  }
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

// 90 degrees a second at 60 Hz: 1.5 degrees a frame.
constexpr float kTurnSpeed = 1.5707964f;
constexpr float kDt = 1.0f / 60.0f;

// Whether any of an op result's warnings says the turn was limited.
bool TurnLimited(const v1::OperationResult& result) {
  for (const std::string& w : result.warnings()) {
    if (w.find("turn limited") != std::string::npos) return true;
  }
  return false;
}

TEST_F(MoreOpsTest, LookAt_TurnSpeedFollowsAJumpingTargetInASession) {
  grpc::ClientContext context;
  std::unique_ptr<SessionStream> stream = stub_->Session(&context);
  RegisterWalk(*stream);
  v1::SessionRequest r;
  r.mutable_register_rig()->set_id("rig");
  r.mutable_register_rig()->set_skeleton_id("cmu");
  v1::ClipSample* sample = r.mutable_register_rig()
                               ->add_ops()
                               ->mutable_sample_clip()
                               ->mutable_sample();
  sample->set_clip("walk");
  sample->set_time(1.0f);
  v1::LookAtOp* op = r.mutable_register_rig()->add_ops()->mutable_look_at();
  *op = WalkLookAt();
  op->set_max_turn_speed(kTurnSpeed);
  ExpectRegistered(RoundTrip(*stream, r));
  r.Clear();
  r.mutable_register_character()->set_id("c");
  r.mutable_register_character()->set_rig_id("rig");
  ExpectRegistered(RoundTrip(*stream, r));

  const LocalPose input = SampleWalk(1.0f);
  const Eigen::Vector3f head = Model(input)[Joint("Head")].translation;
  // Frame 0 looks front-left (nothing to limit yet); then the target jumps
  // about 60 degrees to the front-right and stays there.
  const Eigen::Vector3f left = head + Eigen::Vector3f(-25.0f, 5.0f, 40.0f);
  const Eigen::Vector3f right = head + Eigen::Vector3f(25.0f, 5.0f, 40.0f);
  LookAtState state;  // what the core would carry
  int limited_frames = 0;
  for (int f = 0; f < 60; ++f) {
    const Eigen::Vector3f target = f == 0 ? left : right;
    v1::SessionRequest request;
    request.mutable_frame()->set_sequence(f + 1);
    request.mutable_frame()->set_dt(kDt);
    v1::CharacterFrame* c = request.mutable_frame()->add_characters();
    c->set_character_id("c");
    c->set_want_model_pose(true);
    v1::OpUpdate* update = c->add_op_updates();
    update->set_op(1);
    *update->mutable_target() = ToVec3(target);
    const v1::SessionResponse response = RoundTrip(*stream, request);
    ASSERT_EQ(response.frame().characters_size(), 1);
    const v1::CharacterResult& result = response.frame().characters(0);
    ASSERT_EQ(result.status().code(), 0) << result.status().message();

    std::vector<int> spine;
    LocalPose expected;
    LookAtJob job = CoreLookAt(input, target, spine, expected);
    job.max_turn_speed = kTurnSpeed;
    job.dt = kDt;
    const LookAtState previous = state;
    job.state = &previous;
    job.next_state = &state;
    LookAtResult core;
    job.result = &core;
    ASSERT_TRUE(job.Run().ok());
    ASSERT_TRUE(BitIdentical(result.pose(), Packed(expected))) << "frame " << f;
    ASSERT_EQ(result.ops_size(), 2);
    EXPECT_EQ(TurnLimited(result.ops(1)), core.turn_limited) << "frame " << f;
    if (core.turn_limited) ++limited_frames;
    if (f > 0) {
      // Never more than max_turn_speed * dt between frames.
      const float turned =
          std::atan2(previous.direction.cross(state.direction).norm(),
                     previous.direction.dot(state.direction));
      EXPECT_LE(turned, kTurnSpeed * kDt + 1e-4f) << "frame " << f;
    }
  }
  // About 60 degrees at 1.5 a frame: limited for some 40 frames, then the
  // head is on the new target.
  EXPECT_GT(limited_frames, 30);
  EXPECT_LT(limited_frames, 50);
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(MoreOpsTest, LookAt_SolveReturnsTheTurnStateAndTakesItBack) {
  const LocalPose input = SampleWalk(1.0f);
  const Eigen::Vector3f head = Model(input)[Joint("Head")].translation;
  const Eigen::Vector3f left = head + Eigen::Vector3f(-25.0f, 5.0f, 40.0f);
  const Eigen::Vector3f right = head + Eigen::Vector3f(25.0f, 5.0f, 40.0f);
  v1::SolveRequest request = Request();
  request.set_dt(kDt);
  request.mutable_characters(0)->set_want_model_pose(true);
  v1::LookAtOp* op =
      request.mutable_characters(0)->add_ops()->mutable_look_at();
  *op = WalkLookAt();
  op->set_max_turn_speed(kTurnSpeed);
  *op->mutable_target() = ToVec3(left);
  const v1::CharacterOutput first = Solve(request);
  ASSERT_TRUE(first.state().contains("look_at"));
  const v1::Vec3& d = first.state().at("look_at").look_at().direction();
  const Eigen::Vector3f direction(d.x(), d.y(), d.z());
  EXPECT_NEAR(direction.norm(), 1.0f, 1e-5f);
  EXPECT_GT(direction.dot((left - head).normalized()), 0.99999f);

  // The next call, with the state sent back: held to 1.5 degrees of turn,
  // as the core is given the same state.
  *op->mutable_target() = ToVec3(right);
  *request.mutable_characters(0)->mutable_state() = first.state();
  const v1::CharacterOutput second = Solve(request);
  ASSERT_EQ(second.ops_size(), 1);
  EXPECT_TRUE(TurnLimited(second.ops(0)));
  std::vector<int> spine;
  LocalPose expected;
  LookAtJob job = CoreLookAt(input, right, spine, expected);
  job.max_turn_speed = kTurnSpeed;
  job.dt = kDt;
  const LookAtState state{.direction = direction};
  job.state = &state;
  ASSERT_TRUE(job.Run().ok());
  EXPECT_TRUE(BitIdentical(second.pose(), Packed(expected)));
  EXPECT_GT(HeadAngleTo(second.model_pose(), right), 30.0f * 3.14159265f / 180);

  // Without the state the same call turns all the way at once.
  request.mutable_characters(0)->clear_state();
  const v1::CharacterOutput fresh = Solve(request);
  EXPECT_FALSE(TurnLimited(fresh.ops(0)));
  EXPECT_LT(HeadAngleTo(fresh.model_pose(), right), 1.0f * 3.14159265f / 180);
}

TEST_F(MoreOpsTest, FabrikTree_BothHandsFromTheChestMatchTheCore) {
  const ModelPose later = Model(SampleWalk(1.5f));
  const ModelPose now = Model(SampleWalk(1.0f));
  const Eigen::Vector3f offset =
      now[Joint("Chest")].translation - later[Joint("Chest")].translation;
  v1::SolveRequest request = Request();
  v1::FabrikTreeIkOp* op =
      request.mutable_characters(0)->add_ops()->mutable_fabrik_tree_ik();
  op->set_root("Chest");
  std::vector<FabrikEffector> core;
  for (const char* hand : {"LeftWrist", "RightWrist"}) {
    const Eigen::Vector3f target = later[Joint(hand)].translation + offset;
    v1::FabrikEffector* e = op->add_effectors();
    e->set_joint(hand);
    *e->mutable_target() = ToVec3(target);
    FabrikEffector effector;
    effector.joint = Joint(hand);
    effector.target = target;
    core.push_back(effector);
  }
  const v1::CharacterOutput out = Solve(request);

  const LocalPose input = SampleWalk(1.0f);
  LocalPose expected = input;
  FabrikTreeIkJob job;
  job.skeleton = &Walk().skeleton;
  job.input = input;
  job.root = Joint("Chest");
  job.effectors = core;
  job.output = absl::MakeSpan(expected);
  IkResult result;
  job.result = &result;
  ASSERT_TRUE(job.Run().ok());
  EXPECT_TRUE(BitIdentical(out.pose(), Packed(expected)));
  EXPECT_EQ(out.ops(0).reached(), result.reached);
  EXPECT_EQ(out.ops(0).error(), result.error);
}

class DeadlineTest : public ServiceTest {
 protected:
  void Configure(ServerConfig& config) override {
    config.threads = 1;
    config.max_solver_iterations = 10000;
  }
};

TEST_F(DeadlineTest, ASolveLongerThanItsDeadlineEndsWithDeadlineExceeded) {
  // 1024 characters, each with 100 spring-bone ops of 64 fixed substeps
  // (dt 200 s at 60 Hz, capped at the rig's maximum of 64 steps): seconds of
  // work, against a 200 ms deadline.
  v1::SolveRequest request;
  request.set_dt(200.0f);
  v1::CharacterInput character;
  *character.mutable_skeleton()->mutable_skeleton() = WalkSkeleton();
  for (int i = 0; i < 100; ++i) {
    v1::SpringBonesOp* spring = character.add_ops()->mutable_spring_bones();
    spring->mutable_rig()->add_root_joints("LeftCollar");
    spring->mutable_rig()->set_max_substeps(64);
    spring->mutable_gravity()->set_y(-98.0f);
  }
  for (int i = 0; i < 1024; ++i) *request.add_characters() = character;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(200));
  v1::SolveResponse response;
  const auto started = std::chrono::steady_clock::now();
  grpc::Status status = stub_->Solve(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);

  // The server stopped the abandoned work: with its one solver thread, a
  // new call is answered promptly rather than after the whole batch.
  grpc::ClientContext info_context;
  info_context.set_deadline(std::chrono::system_clock::now() +
                            std::chrono::seconds(20));
  v1::SolveRequest small;
  *small.add_characters()->mutable_skeleton()->mutable_skeleton() =
      WalkSkeleton();
  v1::SolveResponse small_response;
  EXPECT_TRUE(stub_->Solve(&info_context, small, &small_response).ok());
  EXPECT_LT(std::chrono::steady_clock::now() - started,
            std::chrono::seconds(20));
}

}  // namespace more_ops_test
}  // namespace posewire::server
