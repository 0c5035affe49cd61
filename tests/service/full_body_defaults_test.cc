// full_body_biped_ik sent with only its required fields (the four hand and
// foot effectors' ids, positions and weights; the mapping found by joint
// names) through a real server on loopback answers bit for bit what
// FullBodyBipedIkJob answers at its defaults, on the real-motion cases of
// the core solve-rate test (tests/core/full_body_real_data.h: six CMU clips
// and the walk on a non-uniformly scaled root, goals 0.5 s ahead).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "solver_core/full_body/full_body_biped_ik.h"
#include "tests/core/full_body_real_data.h"
#include "tests/service/service_fixture.h"

namespace posewire::server {
namespace {

using testing_util::BipedClip;
using testing_util::FullBodyCase;
using testing_util::FullBodyCases;

class FullBodyDefaultsServiceTest : public ServiceTest {};

TEST_F(FullBodyDefaultsServiceTest, DefaultsMatchTheCoreBitForBit) {
  int cases = 0;
  for (const BipedClip& rig : testing_util::FullBodyRigs()) {
    for (const FullBodyCase& c : FullBodyCases(rig, 200)) {
      std::vector<Transform> expected;
      FullBodyBipedIkResult result;
      FullBodyBipedIkJob job = c.DefaultJob(expected, &result);
      ASSERT_TRUE(job.Run().ok()) << c.Where();

      v1::SolveRequest request;
      v1::CharacterInput* character = request.add_characters();
      SkeletonToProto(c.skeleton(),
                      character->mutable_skeleton()->mutable_skeleton());
      PoseToProto(c.input(), character->mutable_pose());
      v1::FullBodyBipedIkOp* op =
          character->add_ops()->mutable_full_body_biped_ik();
      for (int l = 0; l < kNumBipedLimbs; ++l) {
        v1::BipedEffector* e = op->add_effectors();
        e->set_id(static_cast<v1::BipedEffectorId>(5 + l));
        *e->mutable_position() = ToVec3(c.targets[l]);
        e->set_position_weight(1.0f);
      }
      v1::SolveResponse response;
      grpc::ClientContext context;
      const grpc::Status status = stub_->Solve(&context, request, &response);
      ASSERT_TRUE(status.ok()) << c.Where() << ": " << status.error_message();
      ASSERT_EQ(response.characters_size(), 1);
      const v1::CharacterOutput& out = response.characters(0);
      EXPECT_TRUE(BitIdentical(out.pose(), Packed(expected))) << c.Where();
      ASSERT_EQ(out.ops_size(), 1);
      EXPECT_EQ(out.ops(0).iterations(),
                static_cast<uint32_t>(result.iterations))
          << c.Where();
      EXPECT_EQ(out.ops(0).error(), result.max_error) << c.Where();
      EXPECT_EQ(out.ops(0).reached(), result.reached) << c.Where();
      EXPECT_EQ(out.ops(0).warnings_size(),
                static_cast<int>(result.warnings.size()))
          << c.Where();
      if (HasFailure()) return;
      ++cases;
    }
  }
  EXPECT_GE(cases, 1000);
}

}  // namespace
}  // namespace posewire::server
