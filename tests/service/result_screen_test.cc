// A result that overflows float is an error naming the op that produced it,
// never an OK answer with inf or NaN, whether the next op's job screens its
// input (and the plan skips its own screen) or not.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "google/protobuf/text_format.h"
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
  // CCD refuses a non-finite input pose itself; the error still names the
  // additive op whose result it was.
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

}  // namespace
}  // namespace posewire::server
