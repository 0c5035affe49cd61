// The C++ client library against a real server: the skeleton-by-hash
// protocol (including the resend after an eviction), sessions, and errors
// surfaced as absl::Status with the server's code and message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "clients/cpp/posewire_client.h"
#include "tests/service/service_fixture.h"

namespace posewire::server {
namespace {

using ::testing::HasSubstr;

class ClientTest : public ServiceTest {
 protected:
  // One skeleton fits in the cache: a second one evicts the first.
  void Configure(ServerConfig& config) override {
    config.skeleton_cache_size = 1;
  }

  std::unique_ptr<client::Client> Connect() {
    return std::make_unique<client::Client>(channel_, client::ClientOptions{});
  }

  static v1::SolveRequest RequestFor(const v1::Skeleton& skeleton) {
    v1::SolveRequest request;
    *request.add_characters()->mutable_skeleton()->mutable_skeleton() =
        skeleton;
    return request;
  }
};

TEST_F(ClientTest, SolveWithSkeletonCache_SurvivesEvictionByResending) {
  auto client = Connect();
  v1::Skeleton walk = WalkSkeleton();
  // A second, different skeleton: the walk with one rest offset changed.
  v1::Skeleton other = walk;
  other.set_rest_pose(1, other.rest_pose(1) + 1.0f);

  for (int round = 0; round < 3; ++round) {
    for (const v1::Skeleton* skeleton : {&walk, &other}) {
      auto response = client->SolveWithSkeletonCache(RequestFor(*skeleton));
      ASSERT_TRUE(response.ok()) << response.status();
      EXPECT_EQ(response->characters(0).pose().transforms_size(), 310);
    }
  }
  // The plain Solve with an evicted hash is the server's NOT_FOUND.
  v1::SolveRequest by_hash;
  by_hash.add_characters()->mutable_skeleton()->set_hash(
      SkeletonHash(Walk().skeleton));
  auto evicted = client->Solve(by_hash);
  EXPECT_EQ(evicted.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(evicted.status().message(),
              HasSubstr("send the skeleton inline"));
}

TEST_F(ClientTest,
       SolveWithSkeletonCache_PassesABadSkeletonThroughForTheServerToExplain) {
  auto client = Connect();
  v1::Skeleton broken = WalkSkeleton();
  broken.set_parents(3, 7);
  auto response = client->SolveWithSkeletonCache(RequestFor(broken));
  EXPECT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(response.status().message(),
              HasSubstr("characters[0].skeleton.skeleton"));
}

TEST_F(ClientTest, Session_RegistersSolvesFramesAndReportsErrors) {
  auto client = Connect();
  auto session = client->OpenSession();
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE((*session)->RegisterSkeleton("cmu", Walk().skeleton).ok());
  ASSERT_TRUE((*session)->RegisterClip("walk", "cmu", Walk().clips[0]).ok());
  google::protobuf::RepeatedPtrField<v1::Operation> ops;
  ops.Add()->mutable_sample_clip()->mutable_sample()->set_clip("walk");
  ASSERT_TRUE((*session)->RegisterRig("rig", "cmu", ops).ok());
  ASSERT_TRUE((*session)->RegisterCharacter("hero", "rig").ok());

  absl::Status duplicate = (*session)->RegisterCharacter("hero", "rig");
  EXPECT_EQ(duplicate.code(), absl::StatusCode::kAlreadyExists);

  v1::Frame frame;
  frame.set_sequence(1);
  frame.add_characters()->set_character_id("hero");
  auto result = (*session)->SendFrame(frame);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(
      BitIdentical(result->characters(0).pose(), Packed(SampleWalk(0.0f))));

  // A frame-level error comes back as the call's status.
  auto repeated = (*session)->SendFrame(frame);
  EXPECT_EQ(repeated.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(repeated.status().message(), HasSubstr("does not increase"));
  EXPECT_TRUE((*session)->Close().ok());
  EXPECT_EQ((*session)->SendFrame(frame).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace posewire::server
