// Spring-bone dynamics over the wire: the state travels through the client
// in Solve and stays in the session in Session, and either way the poses are
// the core's, bit for bit, frame after frame.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "solver_core/dynamics/dynamics_state.h"
#include "solver_core/dynamics/spring_bones.h"
#include "tests/service/service_fixture.h"

namespace posewire::server {
namespace {

using ::testing::HasSubstr;

constexpr float kDt = 1.0f / 30.0f;

// The left arm as a spring chain under gravity, with a dummy tip.
v1::SpringBonesOp ArmSpringOp() {
  v1::SpringBonesOp op;
  op.mutable_rig()->add_root_joints("LeftShoulder");
  op.mutable_rig()->set_dummy_tip_length(2.0f);
  op.mutable_rig()->mutable_settings()->set_stiffness(0.02f);
  op.mutable_gravity()->set_y(-98.0f);
  return op;
}

// The same rig and forces for the core.
struct CoreSpring {
  SpringRig rig;
  SpringForces forces;
};

CoreSpring CoreArmSpring() {
  SpringRigDesc desc;
  desc.root_joints = {"LeftShoulder"};
  desc.dummy_tip_length = 2.0f;
  desc.settings.stiffness = 0.02f;
  auto rig = SpringRig::Create(Walk().skeleton, desc);
  EXPECT_TRUE(rig.ok()) << rig.status();
  CoreSpring core{*std::move(rig), {}};
  core.forces.gravity = Eigen::Vector3f(0, -98.0f, 0);
  return core;
}

// One frame of the core job from `state` (updated), for comparison.
LocalPose CoreStep(const CoreSpring& core, const LocalPose& input,
                   DynamicsState& state) {
  LocalPose output(input.size());
  DynamicsState next;
  SpringBonesJob job;
  job.skeleton = &Walk().skeleton;
  job.rig = &core.rig;
  job.input = input;
  job.dt = kDt;
  job.forces = core.forces;
  job.state_in = &state;
  job.output = absl::MakeSpan(output);
  job.state_out = &next;
  EXPECT_TRUE(job.Run().ok());
  state = next;
  return output;
}

class SpringServiceTest : public ServiceTest {};

TEST_F(SpringServiceTest, Solve_StateRoundTripsThroughTheClientBitIdentically) {
  const Skeleton& skeleton = Walk().skeleton;
  const LocalPose rest = RestPose(skeleton);
  const CoreSpring core = CoreArmSpring();
  DynamicsState core_state;

  v1::SolveRequest request;
  request.set_dt(kDt);
  v1::CharacterInput* c = request.add_characters();
  *c->mutable_skeleton()->mutable_skeleton() = WalkSkeleton();
  *c->add_ops()->mutable_spring_bones() = ArmSpringOp();

  for (int frame = 0; frame < 20; ++frame) {
    grpc::ClientContext context;
    v1::SolveResponse response;
    grpc::Status status = stub_->Solve(&context, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    const v1::CharacterOutput& out = response.characters(0);
    EXPECT_EQ(out.ops(0).op(), "spring_bones");
    EXPECT_GE(out.ops(0).iterations(), 1u);  // substeps at 60 Hz

    const LocalPose expected = CoreStep(core, rest, core_state);
    ASSERT_TRUE(BitIdentical(out.pose(), Packed(expected)))
        << "frame " << frame;
    ASSERT_EQ(out.state().at("spring_bones").dynamics(),
              SerializeDynamicsState(core_state));
    // The arm falls: after the first frame the pose differs from rest.
    if (frame > 2) {
      EXPECT_FALSE(BitIdentical(out.pose(), Packed(rest)));
    }

    // Hand the state back, as a stateless client must.
    *c->mutable_state() = out.state();
  }
}

TEST_F(SpringServiceTest, Solve_GarbageOrForeignStateIsInvalidArgument) {
  v1::SolveRequest request;
  request.set_dt(kDt);
  v1::CharacterInput* c = request.add_characters();
  *c->mutable_skeleton()->mutable_skeleton() = WalkSkeleton();
  *c->add_ops()->mutable_spring_bones() = ArmSpringOp();
  (*c->mutable_state())["spring_bones"].set_dynamics("not a state");
  grpc::ClientContext context;
  v1::SolveResponse response;
  grpc::Status status = stub_->Solve(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr("characters[0].state[\"spring_bones\"].dynamics"));

  // A state made for another rig (the right arm) is refused by name.
  v1::SolveRequest right = request;
  right.mutable_characters(0)->clear_state();
  right.mutable_characters(0)
      ->mutable_ops(0)
      ->mutable_spring_bones()
      ->mutable_rig()
      ->set_root_joints(0, "RightShoulder");
  grpc::ClientContext first_context;
  ASSERT_TRUE(stub_->Solve(&first_context, right, &response).ok());
  *request.mutable_characters(0)->mutable_state() =
      response.characters(0).state();
  grpc::ClientContext second_context;
  status = stub_->Solve(&second_context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr("spring_bones"));
}

TEST_F(SpringServiceTest, Session_KeepsTheStateAcrossFramesLikeTheCore) {
  const Skeleton& skeleton = Walk().skeleton;
  grpc::ClientContext context;
  auto stream = stub_->Session(&context);
  v1::SessionRequest r;
  v1::SessionResponse response;
  r.mutable_register_skeleton()->set_id("cmu");
  *r.mutable_register_skeleton()->mutable_skeleton() = WalkSkeleton();
  ASSERT_TRUE(stream->Write(r) && stream->Read(&response));
  r.Clear();
  r.mutable_register_rig()->set_id("floppy");
  r.mutable_register_rig()->set_skeleton_id("cmu");
  *r.mutable_register_rig()->add_ops()->mutable_spring_bones() = ArmSpringOp();
  ASSERT_TRUE(stream->Write(r) && stream->Read(&response));
  r.Clear();
  r.mutable_register_character()->set_id("npc");
  r.mutable_register_character()->set_rig_id("floppy");
  ASSERT_TRUE(stream->Write(r) && stream->Read(&response));
  ASSERT_EQ(response.registered().status().code(), 0);

  const LocalPose rest = RestPose(skeleton);
  const CoreSpring core = CoreArmSpring();
  DynamicsState core_state;
  for (int frame = 0; frame < 30; ++frame) {
    r.Clear();
    r.mutable_frame()->set_sequence(frame + 1);
    r.mutable_frame()->set_dt(kDt);
    r.mutable_frame()->add_characters()->set_character_id("npc");
    ASSERT_TRUE(stream->Write(r) && stream->Read(&response));
    const v1::CharacterResult& out = response.frame().characters(0);
    ASSERT_EQ(out.status().code(), 0) << out.status().message();

    const LocalPose expected = CoreStep(core, rest, core_state);
    ASSERT_TRUE(BitIdentical(out.pose(), Packed(expected)))
        << "frame " << frame;
  }
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

}  // namespace
}  // namespace posewire::server
