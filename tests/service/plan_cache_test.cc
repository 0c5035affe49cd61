// PlanCache: one compile per (skeleton content, op list), bounded, LRU.
#include "server/service/plan_cache.h"

#include <gtest/gtest.h>

#include "google/protobuf/text_format.h"
#include "server/wire/wire_convert.h"
#include "tests/service/service_fixture.h"

namespace posewire::server {
namespace {

google::protobuf::RepeatedPtrField<v1::Operation> Ops(const std::string& text) {
  v1::CharacterInput parsed;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &parsed));
  return parsed.ops();
}

class PlanCacheTest : public ::testing::Test {
 protected:
  std::shared_ptr<const Skeleton> skeleton_ =
      std::make_shared<const Skeleton>(Walk().skeleton);
  const std::string hash_ = SkeletonHash(Walk().skeleton);
  const google::protobuf::RepeatedPtrField<v1::Operation> aim_ =
      Ops(R"(ops { aim_ik { joint: "Head" target { x: 1 y: 20 z: 30 } } })");
  const google::protobuf::RepeatedPtrField<v1::Operation> leg_ =
      Ops(R"(ops { two_bone_ik { start_joint: "LeftHip"
               mid_joint: "LeftKnee" end_joint: "LeftAnkle" } })");
};

TEST_F(PlanCacheTest, TheSameOpsForTheSameSkeletonCompileOnce) {
  PlanCache cache(4);
  auto first = cache.Get(skeleton_, hash_, aim_, {}, "characters[0]");
  // Equal content parsed anew: another message, the same bytes.
  auto again = cache.Get(
      skeleton_, hash_,
      Ops(R"(ops { aim_ik { joint: "Head" target { x: 1 y: 20 z: 30 } } })"),
      {}, "characters[1]");
  ASSERT_TRUE(first.ok() && again.ok());
  EXPECT_EQ(first->get(), again->get());
  EXPECT_EQ(cache.size(), 1);
}

TEST_F(PlanCacheTest, OtherOpsOrAnotherSkeletonAreOtherPlans) {
  PlanCache cache(4);
  auto aim = cache.Get(skeleton_, hash_, aim_, {}, "characters[0]");
  auto leg = cache.Get(skeleton_, hash_, leg_, {}, "characters[0]");
  auto other = cache.Get(skeleton_, "another skeleton's hash", aim_, {},
                         "characters[0]");
  ASSERT_TRUE(aim.ok() && leg.ok() && other.ok());
  EXPECT_NE(aim->get(), leg->get());
  EXPECT_NE(aim->get(), other->get());
  EXPECT_EQ(cache.size(), 3);
}

TEST_F(PlanCacheTest, AnOpListThatDoesNotCompileIsAnErrorAndNotCached) {
  PlanCache cache(4);
  auto bad =
      cache.Get(skeleton_, hash_, Ops(R"(ops { aim_ik { joint: "Wing" } })"),
                {}, "characters[3]");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find(
                "characters[3].ops[0].aim_ik.joint: no joint named 'Wing'"),
            std::string::npos)
      << bad.status();
  EXPECT_EQ(cache.size(), 0);
}

TEST_F(PlanCacheTest, BeyondItsCapacityTheLeastRecentlyUsedPlanGoes) {
  PlanCache cache(2);
  auto aim = cache.Get(skeleton_, hash_, aim_, {}, "c");
  auto leg = cache.Get(skeleton_, hash_, leg_, {}, "c");
  ASSERT_TRUE(cache.Get(skeleton_, hash_, aim_, {}, "c").ok());  // aim used
  ASSERT_TRUE(cache.Get(skeleton_, "h2", leg_, {}, "c").ok());   // evicts leg
  EXPECT_EQ(cache.size(), 2);
  auto aim_again = cache.Get(skeleton_, hash_, aim_, {}, "c");
  auto leg_again = cache.Get(skeleton_, hash_, leg_, {}, "c");
  EXPECT_EQ(aim->get(), aim_again->get());
  EXPECT_NE(leg->get(), leg_again->get());  // compiled anew
}

}  // namespace
}  // namespace posewire::server
