// GetInfo's operation_info tells the truth: for every bounded count it
// reports, a Solve at the reported maximum (and minimum) is accepted, one
// past it is refused with the status the proto documents
// (RESOURCE_EXHAUSTED past the server's max_solver_iterations,
// INVALID_ARGUMENT past the operation's own contract), naming the field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/text_format.h"
#include "server/ops/op_table.h"
#include "tests/service/service_fixture.h"

namespace posewire::server {
namespace {

using ::testing::HasSubstr;

// Below full body's own cap of 64 iterations and above its spine's 16, so
// both kinds of bound are met.
constexpr int kServerIterations = 40;

// The smallest valid op of each bounded kind, on the walk skeleton.
const char* BaseOp(const std::string& name) {
  static const auto* ops = new std::map<std::string, std::string>{
      {"aim_ik", R"(aim_ik { joint: "Head" target { x: 10 y: 20 z: 40 } })"},
      {"ccd_ik",
       R"(ccd_ik { chain: ["LeftShoulder", "LeftElbow", "LeftWrist"]
                   target { x: 10 y: 15 z: 5 } })"},
      {"fabrik_ik",
       R"(fabrik_ik { chain: ["LeftShoulder", "LeftElbow", "LeftWrist"]
                      target { x: 10 y: 15 z: 5 } })"},
      {"fabrik_tree_ik",
       R"(fabrik_tree_ik { root: "Chest"
            effectors { joint: "LeftWrist" target { x: 10 y: 15 z: 5 } } })"},
      {"full_body_ccd",
       R"(full_body_ccd {
            effectors { joint: "LeftWrist" target { x: 10 y: 15 z: 5 } } })"},
      {"full_body_biped_ik",
       R"(full_body_biped_ik { effectors { id: BIPED_EFFECTOR_LEFT_HAND
            position { x: 10 y: 15 z: 5 } position_weight: 1 } })"},
      {"spring_bones",
       R"(spring_bones { rig { root_joints: "LeftShoulder" } })"},
      {"look_at",
       R"(look_at { spine: ["Chest", "Neck"] head: "Head"
                    target { x: 10 y: 20 z: 40 } })"}};
  auto it = ops->find(name);
  return it == ops->end() ? nullptr : it->second.c_str();
}

// Sets the integer field at `path` ("rig.max_substeps") of `op`'s one set
// operation message.
void SetCount(v1::Operation& op, const std::string& path, int64_t value) {
  const google::protobuf::Reflection* reflection = op.GetReflection();
  google::protobuf::Message* message = reflection->MutableMessage(
      &op, op.GetDescriptor()->FindFieldByNumber(op.op_case()));
  const std::vector<std::string> parts = absl::StrSplit(path, '.');
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    const auto* field = message->GetDescriptor()->FindFieldByName(parts[i]);
    ASSERT_NE(field, nullptr) << path;
    message = message->GetReflection()->MutableMessage(message, field);
  }
  const auto* field = message->GetDescriptor()->FindFieldByName(parts.back());
  ASSERT_NE(field, nullptr) << path;
  const google::protobuf::Reflection* r = message->GetReflection();
  switch (field->cpp_type()) {
    case google::protobuf::FieldDescriptor::CPPTYPE_UINT32:
      r->SetUInt32(message, field, static_cast<uint32_t>(value));
      break;
    case google::protobuf::FieldDescriptor::CPPTYPE_INT32:
      r->SetInt32(message, field, static_cast<int32_t>(value));
      break;
    default:
      FAIL() << path << " is not a 32-bit integer field";
  }
}

class OperationInfoTest : public ServiceTest {
 protected:
  void Configure(ServerConfig& config) override {
    config.max_solver_iterations = kServerIterations;
  }

  v1::GetInfoResponse Info() {
    grpc::ClientContext context;
    v1::GetInfoResponse info;
    const grpc::Status status = stub_->GetInfo(&context, {}, &info);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return info;
  }

  grpc::Status SolveWith(const v1::Operation& op) {
    v1::SolveRequest request;
    v1::CharacterInput* c = request.add_characters();
    *c->mutable_skeleton()->mutable_skeleton() = WalkSkeleton();
    PoseToProto(SampleWalk(1.0f), c->mutable_pose());
    *c->add_ops() = op;
    grpc::ClientContext context;
    v1::SolveResponse response;
    return stub_->Solve(&context, request, &response);
  }
};

TEST_F(OperationInfoTest, EveryOperationIsDescribedOnceInTableOrder) {
  const v1::GetInfoResponse info = Info();
  ASSERT_EQ(info.operation_info_size(), info.operations_size());
  for (int i = 0; i < info.operations_size(); ++i) {
    EXPECT_EQ(info.operation_info(i).name(), info.operations(i));
  }
}

TEST_F(OperationInfoTest, UpdatableInputsAreTheOnesOpUpdatesAccept) {
  const v1::GetInfoResponse info = Info();
  for (const v1::OperationInfo& op : info.operation_info()) {
    if (op.name() == "two_bone_ik") {
      EXPECT_THAT(op.updatable(),
                  ::testing::ElementsAre("target", "bend_goal", "weight",
                                         "pole_vector", "end_rotation"));
    }
    if (op.name() == "sample_clip") {
      EXPECT_THAT(op.updatable(), ::testing::ElementsAre("time"));
    }
  }
}

TEST_F(OperationInfoTest, EachReportedRangeIsExactlyWhatASolveAccepts) {
  int ranges = 0;
  const v1::GetInfoResponse response = Info();
  for (const v1::OperationInfo& info : response.operation_info()) {
    for (const v1::FieldRange& range : info.ranges()) {
      SCOPED_TRACE(info.name() + "." + range.field());
      ++ranges;
      const char* base = BaseOp(info.name());
      ASSERT_NE(base, nullptr) << "no base op for a bounded operation";
      v1::Operation op;
      ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(base, &op));
      const std::string field =
          absl::StrCat(info.name(), ".", range.field(), ": ");

      for (int64_t inside : {range.min(), range.max()}) {
        SetCount(op, range.field(), inside);
        const grpc::Status ok = SolveWith(op);
        EXPECT_TRUE(ok.ok()) << inside << ": " << ok.error_message();
      }

      SetCount(op, range.field(), range.max() + 1);
      const grpc::Status over = SolveWith(op);
      // Past the server's limit, or past the op's own maximum.
      const bool server_bound = range.max() == kServerIterations;
      EXPECT_EQ(over.error_code(), server_bound
                                       ? grpc::StatusCode::RESOURCE_EXHAUSTED
                                       : grpc::StatusCode::INVALID_ARGUMENT)
          << over.error_message();
      EXPECT_THAT(over.error_message(), HasSubstr(field));

      if (range.min() > 0) {
        SetCount(op, range.field(), range.min() - 1);
        const grpc::Status under = SolveWith(op);
        EXPECT_EQ(under.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
            << under.error_message();
        EXPECT_THAT(under.error_message(), HasSubstr(field));
      }
    }
  }
  // Chain IK (4), full body (2), aim, spring bones and look-at.
  EXPECT_EQ(ranges, 9);
}

TEST_F(OperationInfoTest, TheServerLimitLowersOnlyCountsItBounds) {
  const v1::GetInfoResponse response = Info();
  for (const v1::OperationInfo& info : response.operation_info()) {
    for (const v1::FieldRange& range : info.ranges()) {
      if (info.name() == "full_body_biped_ik" &&
          range.field() == "spine_iterations") {
        EXPECT_EQ(range.max(), 16);  // its own cap, under the server's
      } else if (info.name() == "aim_ik" || info.name() == "look_at") {
        EXPECT_EQ(range.max(), 2);  // not an iteration limit
      } else {
        EXPECT_EQ(range.max(), kServerIterations)
            << info.name() << "." << range.field();
      }
    }
  }
}

}  // namespace
}  // namespace posewire::server
