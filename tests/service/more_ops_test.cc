// The remaining operations over the wire (additive, aim, FABRIK tree), each
// bit-identical to its core job run directly, and deadlines: a solve that
// cannot finish in time ends with DEADLINE_EXCEEDED.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "solver_core/analytic_ik/aim_ik.h"
#include "solver_core/chain_ik/fabrik_ik.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/pose_ops/additive_job.h"
#include "solver_core/pose_ops/sampling_job.h"
#include "tests/service/service_fixture.h"

namespace posewire::server {
namespace {

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
    grpc::ClientContext context;
    v1::SolveResponse response;
    grpc::Status status = stub_->Solve(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response.characters_size() > 0 ? response.characters(0)
                                          : v1::CharacterOutput();
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

}  // namespace
}  // namespace posewire::server
