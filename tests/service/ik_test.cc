// Chain IK operations over the wire: results bit-identical to the core jobs
// run directly, reached targets verified by forward kinematics, limits and
// errors mapped to the documented codes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "solver_core/analytic_ik/two_bone_ik.h"
#include "solver_core/chain_ik/ccd_ik.h"
#include "solver_core/chain_ik/fabrik_ik.h"
#include "solver_core/full_body/biped_mapping.h"
#include "solver_core/full_body/full_body_ccd.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/pose_ops/sampling_job.h"
#include "tests/service/service_fixture.h"

namespace posewire::server {
namespace {

using ::testing::HasSubstr;

class IkServiceTest : public ServiceTest {
 protected:
  void Configure(ServerConfig& config) override {
    config.max_solver_iterations = 50;
  }

  // One walk character starting from the pose at 1 s.
  v1::SolveRequest Request() {
    v1::SolveRequest request;
    v1::CharacterInput* c = request.add_characters();
    *c->mutable_skeleton()->mutable_skeleton() = WalkSkeleton();
    PoseToProto(SampleWalk(1.0f), c->mutable_pose());
    c->set_want_model_pose(true);
    return request;
  }

  grpc::Status Call(const v1::SolveRequest& request,
                    v1::SolveResponse* response) {
    grpc::ClientContext context;
    return stub_->Solve(&context, request, response);
  }

  int Joint(const char* name) { return Walk().skeleton.FindJoint(name); }
};

TEST_F(IkServiceTest, TwoBoneIk_ReachesTheOtherFramesFootAndMatchesTheCore) {
  const Skeleton& skeleton = Walk().skeleton;
  const int hip = Joint("LeftHip"), knee = Joint("LeftKnee"),
            ankle = Joint("LeftAnkle");
  // The leg starts from its rest rotations (the body as at 1 s) and reaches
  // for where the ankle is 0.4 s later, relative to the hip (the character
  // walks on), bending toward that frame's knee. The hinge axis is
  // perpendicular to the rest shin, as a rig would set it up.
  LocalPose input = SampleWalk(1.0f);
  for (int j : {hip, knee, ankle}) {
    input[j].rotation = skeleton.rest_pose()[j].rotation;
  }
  const ModelPose now = Model(input);
  const ModelPose later = Model(SampleWalk(1.4f));
  const Eigen::Vector3f offset = now[hip].translation - later[hip].translation;
  const Eigen::Vector3f target = later[ankle].translation + offset;
  const Eigen::Vector3f bend_goal = later[knee].translation + offset;
  const Eigen::Vector3f mid_axis =
      skeleton.rest_pose()[ankle].translation.cross(Eigen::Vector3f::UnitZ());

  v1::SolveRequest request = Request();
  PoseToProto(input, request.mutable_characters(0)->mutable_pose());
  v1::TwoBoneIkOp* op =
      request.mutable_characters(0)->add_ops()->mutable_two_bone_ik();
  op->set_start_joint("LeftHip");
  op->set_mid_joint("LeftKnee");
  op->set_end_joint("LeftAnkle");
  *op->mutable_target() = ToVec3(target);
  *op->mutable_bend_goal() = ToVec3(bend_goal);
  *op->mutable_mid_axis() = ToVec3(mid_axis);

  v1::SolveResponse response;
  grpc::Status status = Call(request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const v1::CharacterOutput& out = response.characters(0);
  ASSERT_EQ(out.ops_size(), 1);
  EXPECT_EQ(out.ops(0).op(), "two_bone_ik");
  EXPECT_TRUE(out.ops(0).reached());

  // Independent check: the returned model pose puts the ankle on target.
  const float* p = out.model_pose().transforms().data() + 10 * ankle;
  EXPECT_LT((Eigen::Vector3f(p[0], p[1], p[2]) - target).norm(), 1e-3f);

  // And the wire result is the core's, bit for bit.
  LocalPose expected = input;
  TwoBoneIkJob job;
  job.skeleton = &skeleton;
  job.input = input;
  job.parent_model = now[skeleton.parent(hip)];
  job.start_joint = hip;
  job.mid_joint = knee;
  job.end_joint = ankle;
  job.target = target;
  job.bend_goal = bend_goal;
  job.mid_axis = mid_axis;
  job.output = absl::MakeSpan(expected);
  ASSERT_TRUE(job.Run().ok());
  EXPECT_TRUE(BitIdentical(out.pose(), Packed(expected)));
}

TEST_F(IkServiceTest, Ccd_WithAHingeLimitMatchesTheCore) {
  const std::vector<std::string> names = {"LeftCollar", "LeftShoulder",
                                          "LeftElbow", "LeftWrist"};
  const Eigen::Vector3f target =
      Model(SampleWalk(2.0f))[Joint("LeftWrist")].translation;
  v1::SolveRequest request = Request();
  v1::CcdIkOp* op = request.mutable_characters(0)->add_ops()->mutable_ccd_ik();
  for (const std::string& n : names) op->add_chain(n);
  *op->mutable_target() = ToVec3(target);
  op->set_max_iterations(30);
  v1::JointLimitSpec* limit = op->add_limits();
  limit->set_joint("LeftElbow");
  *limit->mutable_hinge()->mutable_axis() = ToVec3(Eigen::Vector3f::UnitZ());
  limit->mutable_hinge()->set_min_angle(-2.5f);
  limit->mutable_hinge()->set_max_angle(0.1f);

  v1::SolveResponse response;
  grpc::Status status = Call(request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();

  const LocalPose input = SampleWalk(1.0f);
  std::vector<int> chain;
  for (const std::string& n : names) chain.push_back(Joint(n.c_str()));
  std::vector<JointLimit> limits(Walk().skeleton.num_joints());
  limits[Joint("LeftElbow")] =
      HingeLimit(Eigen::Vector3f::UnitZ(), -2.5f, 0.1f);
  LocalPose expected = input;
  CcdIkJob job;
  job.skeleton = &Walk().skeleton;
  job.input = input;
  job.chain = chain;
  job.target = target;
  job.max_iterations = 30;
  job.limits = limits;
  job.output = absl::MakeSpan(expected);
  IkResult result;
  job.result = &result;
  ASSERT_TRUE(job.Run().ok());
  EXPECT_TRUE(BitIdentical(response.characters(0).pose(), Packed(expected)));
  EXPECT_EQ(response.characters(0).ops(0).iterations(),
            static_cast<uint32_t>(result.iterations));
  EXPECT_EQ(response.characters(0).ops(0).error(), result.error);
}

TEST_F(IkServiceTest, Fabrik_UnreachableTargetStraightensTheChainTowardIt) {
  v1::SolveRequest request = Request();
  v1::FabrikIkOp* op =
      request.mutable_characters(0)->add_ops()->mutable_fabrik_ik();
  for (const char* n : {"RightShoulder", "RightElbow", "RightWrist"})
    op->add_chain(n);
  const ModelPose model = Model(SampleWalk(1.0f));
  const Eigen::Vector3f shoulder = model[Joint("RightShoulder")].translation;
  const Eigen::Vector3f target = shoulder + Eigen::Vector3f(0, 0, 1000);
  *op->mutable_target() = ToVec3(target);

  v1::SolveResponse response;
  ASSERT_TRUE(Call(request, &response).ok());
  EXPECT_FALSE(response.characters(0).ops(0).reached());
  const float* m = response.characters(0).model_pose().transforms().data();
  auto position = [&](const char* name) {
    const float* p = m + 10 * Joint(name);
    return Eigen::Vector3f(p[0], p[1], p[2]);
  };
  const Eigen::Vector3f direction = (target - shoulder).normalized();
  for (const char* n : {"RightElbow", "RightWrist"}) {
    const Eigen::Vector3f along = (position(n) - shoulder).normalized();
    EXPECT_GT(along.dot(direction), 0.9999f) << n;
  }
}

TEST_F(IkServiceTest, IterationsBeyondTheServerLimitAreResourceExhausted) {
  v1::SolveRequest request = Request();
  v1::CcdIkOp* op = request.mutable_characters(0)->add_ops()->mutable_ccd_ik();
  for (const char* n : {"LeftShoulder", "LeftElbow", "LeftWrist"})
    op->add_chain(n);
  *op->mutable_target() = ToVec3(Eigen::Vector3f(1, 2, 3));
  op->set_max_iterations(1000000000);
  v1::SolveResponse response;
  grpc::Status status = Call(request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(
      status.error_message(),
      HasSubstr("characters[0].ops[0].ccd_ik.max_iterations: "
                "1000000000 iterations exceed this server's limit of 50"));
}

TEST_F(IkServiceTest, MissingTargetBrokenChainAndNaNAreInvalidArgument) {
  struct Case {
    std::function<void(v1::TwoBoneIkOp*)> corrupt;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](v1::TwoBoneIkOp* op) { op->clear_target(); },
       "two_bone_ik.target: required"},
      {[](v1::TwoBoneIkOp* op) { op->mutable_target()->set_y(NAN); },
       "two_bone_ik.target: NaN or infinite"},
      {[](v1::TwoBoneIkOp* op) { op->set_mid_joint("Neck"); }, "two_bone_ik"},
      {[](v1::TwoBoneIkOp* op) { op->set_end_joint("NoSuchJoint"); },
       "two_bone_ik.end_joint: no joint named 'NoSuchJoint'"},
  };
  for (const Case& c : cases) {
    v1::SolveRequest request = Request();
    v1::TwoBoneIkOp* op =
        request.mutable_characters(0)->add_ops()->mutable_two_bone_ik();
    op->set_start_joint("LeftHip");
    op->set_mid_joint("LeftKnee");
    op->set_end_joint("LeftAnkle");
    *op->mutable_target() = ToVec3(Eigen::Vector3f(1, 2, 3));
    c.corrupt(op);
    v1::SolveResponse response;
    grpc::Status status = Call(request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << c.message << ": " << status.error_message();
    EXPECT_THAT(status.error_message(), HasSubstr(c.message));
  }
}

TEST_F(IkServiceTest, FullBodyBiped_HandsAndFeetReachTargetsFromAnotherFrame) {
  // Effectors: where hands and feet are 0.3 s later, relative to the hips
  // (the character walks on), solved from the pose at 1 s with automatic
  // mapping from the CMU joint names.
  const ModelPose now = Model(SampleWalk(1.0f));
  const ModelPose later = Model(SampleWalk(1.3f));
  const Eigen::Vector3f offset = now[0].translation - later[0].translation;
  v1::SolveRequest request = Request();
  v1::FullBodyBipedIkOp* op =
      request.mutable_characters(0)->add_ops()->mutable_full_body_biped_ik();
  const std::pair<v1::BipedEffectorId, const char*> effectors[] = {
      {v1::BIPED_EFFECTOR_LEFT_HAND, "LeftWrist"},
      {v1::BIPED_EFFECTOR_RIGHT_HAND, "RightWrist"},
      {v1::BIPED_EFFECTOR_LEFT_FOOT, "LeftAnkle"},
      {v1::BIPED_EFFECTOR_RIGHT_FOOT, "RightAnkle"}};
  for (const auto& [id, joint] : effectors) {
    v1::BipedEffector* e = op->add_effectors();
    e->set_id(id);
    *e->mutable_position() = ToVec3(later[Joint(joint)].translation + offset);
    e->set_position_weight(1.0f);
  }
  v1::SolveResponse response;
  grpc::Status status = Call(request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const v1::CharacterOutput& out = response.characters(0);
  EXPECT_EQ(out.ops(0).op(), "full_body_biped_ik");
  const float* m = out.model_pose().transforms().data();
  for (const auto& [id, joint] : effectors) {
    const float* p = m + 10 * Joint(joint);
    const Eigen::Vector3f target = later[Joint(joint)].translation + offset;
    // Limbs are about 14 units long: 1e-3 of limb length.
    EXPECT_LT((Eigen::Vector3f(p[0], p[1], p[2]) - target).norm(), 0.014f)
        << joint;
  }
  // The mapping's set-up warnings (the CMU rig's straight limbs, its
  // lowerback on the hips), each said once, exactly as the core says them.
  auto mapping = MapBipedByName(Walk().skeleton);
  ASSERT_TRUE(mapping.ok()) << mapping.status();
  ASSERT_FALSE(mapping->warnings().empty());
  std::vector<std::string> said(out.ops(0).warnings().begin(),
                                out.ops(0).warnings().end());
  EXPECT_EQ(std::set<std::string>(said.begin(), said.end()).size(), said.size())
      << "a warning is repeated";
  for (const std::string& w : mapping->warnings()) {
    EXPECT_EQ(std::count(said.begin(), said.end(), w), 1) << w;
  }
}

TEST_F(IkServiceTest, FullBodyCcd_MatchesTheCoreAndGetsCloserToItsTargets) {
  const ModelPose now = Model(SampleWalk(1.0f));
  const ModelPose later = Model(SampleWalk(1.3f));
  const Eigen::Vector3f offset = now[0].translation - later[0].translation;
  v1::SolveRequest request = Request();
  v1::FullBodyCcdOp* op =
      request.mutable_characters(0)->add_ops()->mutable_full_body_ccd();
  std::vector<FullBodyCcdEffector> core_effectors;
  for (const char* joint :
       {"LeftWrist", "RightWrist", "LeftAnkle", "RightAnkle"}) {
    const Eigen::Vector3f target = later[Joint(joint)].translation + offset;
    v1::FullBodyCcdEffector* e = op->add_effectors();
    e->set_joint(joint);
    *e->mutable_target() = ToVec3(target);
    FullBodyCcdEffector core;
    core.joint = Joint(joint);
    core.target = target;
    core_effectors.push_back(core);
  }
  op->set_max_iterations(10);
  v1::SolveResponse response;
  grpc::Status status = Call(request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();

  const LocalPose input = SampleWalk(1.0f);
  LocalPose expected = input;
  FullBodyCcdJob job;
  job.skeleton = &Walk().skeleton;
  job.input = input;
  job.effectors = core_effectors;
  job.max_iterations = 10;
  job.output = absl::MakeSpan(expected);
  IkResult result;
  job.result = &result;
  ASSERT_TRUE(job.Run().ok());
  EXPECT_TRUE(BitIdentical(response.characters(0).pose(), Packed(expected)));
  EXPECT_EQ(response.characters(0).ops(0).error(), result.error);

  // Independently: the worst effector error shrank from the input pose.
  float before = 0.0f;
  for (const FullBodyCcdEffector& e : core_effectors) {
    before = std::max(before, (now[e.joint].translation - e.target).norm());
  }
  EXPECT_LT(response.characters(0).ops(0).error(), before);
}

TEST(IkDeterminismTest,
     SameRequestGivesTheSameBitsOnServersWithOneOrFourThreads) {
  // A mixed pipeline (sample, two-bone, CCD, spring) on 8 characters, solved
  // by two independently started servers with different thread counts.
  v1::SolveRequest request;
  request.set_dt(1.0f / 60.0f);
  *request.add_clips() = ServiceTest::WalkClipForTests();
  for (int i = 0; i < 8; ++i) {
    v1::CharacterInput* c = request.add_characters();
    *c->mutable_skeleton()->mutable_skeleton() =
        ServiceTest::WalkSkeletonForTests();
    v1::Operation* sample = c->add_ops();
    sample->mutable_sample_clip()->mutable_sample()->set_clip("walk");
    sample->mutable_sample_clip()->mutable_sample()->set_time(0.37f * i);
    v1::CcdIkOp* ccd = c->add_ops()->mutable_ccd_ik();
    for (const char* n : {"LeftShoulder", "LeftElbow", "LeftWrist"})
      ccd->add_chain(n);
    *ccd->mutable_target() = ToVec3(Eigen::Vector3f(10.0f + i, 15.0f, 3.0f));
    v1::SpringBonesOp* spring = c->add_ops()->mutable_spring_bones();
    spring->mutable_rig()->add_root_joints("RightShoulder");
    spring->mutable_gravity()->set_y(-98.0f);
  }
  std::vector<v1::SolveResponse> responses;
  for (int threads : {1, 4}) {
    ServerConfig config;
    config.listen = "127.0.0.1:0";
    config.threads = threads;
    auto server = PosewireServer::Start(config);
    ASSERT_TRUE(server.ok()) << server.status();
    auto stub = v1::PoseWire::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", (*server)->port()),
                            grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    responses.emplace_back();
    grpc::Status status = stub->Solve(&context, request, &responses.back());
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  ASSERT_EQ(responses[0].characters_size(), 8);
  for (int i = 0; i < 8; ++i) {
    EXPECT_TRUE(BitIdentical(responses[0].characters(i).pose(),
                             Floats(responses[1].characters(i).pose())))
        << "character " << i;
    EXPECT_EQ(responses[0].characters(i).state().at("spring_bones").dynamics(),
              responses[1].characters(i).state().at("spring_bones").dynamics());
  }
}

TEST_F(IkServiceTest, AnOperationFromANewerClientIsUnimplemented) {
  v1::SolveRequest request = Request();
  v1::Operation* op = request.mutable_characters(0)->add_ops();
  // Field 99 of Operation: unknown to this server, as a future op would be.
  op->GetReflection()->MutableUnknownFields(op)->AddLengthDelimited(99, "");
  v1::SolveResponse response;
  grpc::Status status = Call(request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_THAT(status.error_message(), HasSubstr("characters[0].ops[0]"));
}

// A forearm 3e38 long and a target as far: the distance to the target
// overflows float (inf), and so does the stretched chain's length. Such an
// error is never reported as reached.
TEST_F(IkServiceTest, TwoBoneIk_AnErrorThatOverflowsIsNotReached) {
  v1::SolveRequest request;
  v1::CharacterInput* c = request.add_characters();
  *c->mutable_skeleton()->mutable_skeleton() = WalkSkeleton();
  LocalPose pose = SampleWalk(1.0f);
  pose[Walk().skeleton.FindJoint("LeftWrist")].translation =
      Eigen::Vector3f(3e38f, 0, 0);
  PoseToProto(pose, c->mutable_pose());
  v1::TwoBoneIkOp* arm = c->add_ops()->mutable_two_bone_ik();
  arm->set_start_joint("LeftShoulder");
  arm->set_mid_joint("LeftElbow");
  arm->set_end_joint("LeftWrist");
  arm->set_stretch(true);
  arm->set_max_stretch(4.0f);
  *arm->mutable_target() = ToVec3(Eigen::Vector3f(3e38f, 3e38f, 0));
  v1::SolveResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(stub_->Solve(&context, request, &response).ok());
  const v1::OperationResult& result = response.characters(0).ops(0);
  EXPECT_FALSE(std::isfinite(result.error())) << result.error();
  EXPECT_FALSE(result.reached());
}

}  // namespace
}  // namespace posewire::server
