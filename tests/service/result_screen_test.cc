// A result that overflows float is an error naming the op that produced it,
// never an OK answer with inf or NaN, whatever the next op: RunPlan screens
// each op's result, and the next job takes its input as validated.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "google/protobuf/text_format.h"
#include "server/ops/plan.h"
#include "tests/service/service_fixture.h"

namespace posewire::server {
namespace {

class ResultScreenTest : public ServiceTest {
 protected:
  // A walk character whose LeftWrist sits 3e38 from its parent, then an
  // additive op that adds as much again (finite inputs, +inf result),
  // then `next_ops` (text format).
  grpc::Status SolveOverflow(const std::string& next_ops,
                             v1::SolveResponse* response) {
    v1::SolveRequest request;
    v1::CharacterInput* c = request.add_characters();
    *c->mutable_skeleton()->mutable_skeleton() = WalkSkeleton();
    LocalPose pose = SampleWalk(1.0f);
    const int wrist = Walk().skeleton.FindJoint("LeftWrist");
    pose[wrist].translation.x() = 3e38f;
    PoseToProto(pose, c->mutable_pose());
    v1::AdditiveOp* additive = c->add_ops()->mutable_additive();
    additive->mutable_base()->set_rest(true);
    additive->mutable_additive()->set_current(true);
    additive->set_weight(1.0f);
    v1::CharacterInput parsed;
    EXPECT_TRUE(
        google::protobuf::TextFormat::ParseFromString(next_ops, &parsed));
    for (const v1::Operation& op : parsed.ops()) *c->add_ops() = op;
    grpc::ClientContext context;
    return stub_->Solve(&context, request, response);
  }
};

constexpr char kOverflowAtTheWrist[] =
    "characters[0].ops[0].additive: the result is not finite at joint "
    "'LeftWrist'";

TEST_F(ResultScreenTest, OverflowInTheLastOpNamesIt) {
  v1::SolveResponse response;
  const grpc::Status status = SolveOverflow("", &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              ::testing::HasSubstr(kOverflowAtTheWrist));
}

TEST_F(ResultScreenTest,
       OverflowBeforeAJobThatScreensItsInputNamesTheOpBefore) {
  // CCD would refuse a non-finite input pose itself; the plan's screen of
  // the additive op's result comes first and names it.
  v1::SolveResponse response;
  const grpc::Status status = SolveOverflow(
      R"(ops { ccd_ik { chain: ["RightShoulder", "RightElbow", "RightWrist"]
                        target { x: -10 y: 15 z: 5 } } })",
      &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              ::testing::HasSubstr(kOverflowAtTheWrist));
}

TEST_F(ResultScreenTest, OverflowBeforeAJobThatReadsPartOfThePoseNamesIt) {
  // Two-bone IK reads only its chain (the right leg): the plan screens the
  // additive op's result itself.
  v1::SolveResponse response;
  const grpc::Status status = SolveOverflow(
      R"(ops { two_bone_ik { start_joint: "RightHip" mid_joint: "RightKnee"
                             end_joint: "RightAnkle"
                             target { x: -3 y: 2 z: 1 } } })",
      &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              ::testing::HasSubstr(kOverflowAtTheWrist));
}

// RunPlan screens only the joints an op says it writes (JointsWritten), so
// that list must hold every joint the op can change: the ops that declare
// one, run for a few frames, leave every other joint's bits as they were.
TEST(JointsWritten, NoOpChangesAJointItDoesNotList) {
  const Skeleton& skeleton = Walk().skeleton;
  for (const char* text : {
           R"(ops { two_bone_ik { start_joint: "LeftShoulder"
                                  mid_joint: "LeftElbow" end_joint: "LeftWrist"
                                  stretch: true max_stretch: 1.5
                                  end_rotation { w: 1 }
                                  target { x: 25 y: 15 z: 10 } } })",
           R"(ops { ccd_ik { chain: ["RightShoulder", "RightElbow",
                                     "RightWrist"]
                             target { x: -10 y: 15 z: 5 } } })",
           R"(ops { fabrik_ik { chain: ["Hips", "lowerback", "Chest",
                                       "Chest2", "lowerneck", "Neck"]
                                target { x: 3 y: 25 z: 4 } } })",
           R"(ops { spring_bones { rig { root_joints: ["LeftShoulder",
                                                      "Neck"] } } })",
       }) {
    SCOPED_TRACE(text);
    v1::CharacterInput parsed;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &parsed));
    auto plan = Plan::Compile(skeleton, parsed.ops(), OpLimits{}, "c");
    ASSERT_TRUE(plan.ok()) << plan.status();
    const std::vector<int>* written = (*plan)->joints_written(0);
    ASSERT_NE(written, nullptr);
    const absl::flat_hash_set<int> listed(written->begin(), written->end());
    ClipLibrary clips(&skeleton);
    CharacterState state;
    for (float t : {0.5f, 0.6f, 0.7f, 1.4f}) {
      const LocalPose input = SampleWalk(t);
      LocalPose pose = input;
      google::protobuf::RepeatedPtrField<v1::OperationResult> results;
      PlanFrame frame;
      frame.skeleton = &skeleton;
      frame.clips = &clips;
      frame.dt = 1.0f / 30.0f;
      frame.field = "c";
      ASSERT_TRUE(RunPlan(**plan, frame, pose, state, &results).ok());
      int changed_listed = 0;
      for (int j = 0; j < skeleton.num_joints(); ++j) {
        const bool same =
            BitIdentical(Packed(absl::MakeConstSpan(&pose[j], 1)),
                         Packed(absl::MakeConstSpan(&input[j], 1)));
        if (listed.contains(j)) {
          changed_listed += same ? 0 : 1;
        } else {
          EXPECT_TRUE(same)
              << "joint '" << skeleton.joint_name(j) << "' changed, t = " << t;
        }
      }
      EXPECT_GT(changed_listed, 0) << "t = " << t;  // the op did something
    }
  }
}

}  // namespace
}  // namespace posewire::server
