// Chain IK ops sent with only their required fields (chain and target; for
// full_body_ccd the effectors) through a real server on loopback answer
// bit for bit what the core jobs answer at their defaults: the wire's
// defaults are the core's (iterations, tolerance relative to the chain,
// closing step), on the real limb targets of the CMU walk
// (tests/core/chain_ik_real_data.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "solver_core/chain_ik/ccd_ik.h"
#include "solver_core/chain_ik/fabrik_ik.h"
#include "solver_core/full_body/full_body_ccd.h"
#include "tests/core/chain_ik_real_data.h"
#include "tests/core/chain_ik_test_util.h"
#include "tests/service/service_fixture.h"

namespace posewire::server {
namespace {

using testing_util::RealCase;
using testing_util::RealCases;
using testing_util::RealClip;

const RealClip& RealWalk() {
  static const RealClip* clip =
      new RealClip(testing_util::LoadRealClip("cmu_131_01_walk.bvh"));
  return *clip;
}

class ChainDefaultsServiceTest : public ServiceTest {
 protected:
  // A request for `c`'s skeleton and input pose; the caller adds one op.
  v1::SolveRequest Request(const RealCase& c) {
    v1::SolveRequest request;
    v1::CharacterInput* character = request.add_characters();
    SkeletonToProto(c.skeleton(),
                    character->mutable_skeleton()->mutable_skeleton());
    PoseToProto(c.input(), character->mutable_pose());
    return request;
  }

  // Sends `request`; expects the answer's pose and IK outcome to be the
  // core's bit for bit.
  void ExpectCore(const v1::SolveRequest& request,
                  const std::vector<Transform>& expected,
                  const IkResult& result, const std::string& where) {
    v1::SolveResponse response;
    grpc::ClientContext context;
    const grpc::Status status = stub_->Solve(&context, request, &response);
    ASSERT_TRUE(status.ok()) << where << ": " << status.error_message();
    ASSERT_EQ(response.characters_size(), 1);
    const v1::CharacterOutput& out = response.characters(0);
    EXPECT_TRUE(BitIdentical(out.pose(), Packed(expected))) << where;
    ASSERT_EQ(out.ops_size(), 1);
    EXPECT_EQ(out.ops(0).iterations(), static_cast<uint32_t>(result.iterations))
        << where;
    EXPECT_EQ(out.ops(0).error(), result.error) << where;
    EXPECT_EQ(out.ops(0).reached(), result.reached) << where;
  }

  // `c` solved by the core's `Job` at its defaults, and sent as the op that
  // `op_of` adds with only its chain and target.
  template <typename Job, typename Op>
  void ExpectChainOpMatches(const RealCase& c, Op* (v1::Operation::*op_of)(),
                            const std::string& name) {
    std::vector<Transform> expected;
    IkResult result;
    Job job = testing_util::DefaultJob<Job>(c.skeleton(), c.input(), c.chain,
                                            c.target, expected, &result);
    ASSERT_TRUE(job.Run().ok());
    v1::SolveRequest request = Request(c);
    Op* op = (request.mutable_characters(0)->add_ops()->*op_of)();
    AddChain(c, op->mutable_chain());
    *op->mutable_target() = ToVec3(c.target);
    ExpectCore(request, expected, result, name + " " + c.Where());
  }

  // The chain's joint names.
  static void AddChain(const RealCase& c,
                       google::protobuf::RepeatedPtrField<std::string>* out) {
    for (int j : c.chain) *out->Add() = c.skeleton().joint_name(j);
  }
};

TEST_F(ChainDefaultsServiceTest, CcdAndFabrikAtDefaultsMatchTheCore) {
  const std::vector<RealCase> cases = RealCases(RealWalk(), 50);
  ASSERT_GE(cases.size(), 200u);
  for (const RealCase& c : cases) {
    ExpectChainOpMatches<CcdIkJob>(c, &v1::Operation::mutable_ccd_ik, "ccd_ik");
    ExpectChainOpMatches<FabrikIkJob>(c, &v1::Operation::mutable_fabrik_ik,
                                      "fabrik_ik");
    if (HasFailure()) return;
  }
}

// The four limb targets of a frame at once.
TEST_F(ChainDefaultsServiceTest, FullBodyCcdAtDefaultsMatchesTheCore) {
  const std::vector<RealCase> cases = RealCases(RealWalk(), 50);
  for (size_t first = 0; first + 4 <= cases.size(); first += 4) {
    const RealCase& c = cases[first];
    std::vector<FullBodyCcdEffector> effectors;
    v1::SolveRequest request = Request(c);
    v1::FullBodyCcdOp* op =
        request.mutable_characters(0)->add_ops()->mutable_full_body_ccd();
    for (size_t k = first; k < first + 4; ++k) {
      FullBodyCcdEffector e;
      e.joint = cases[k].chain.back();
      e.target = cases[k].target;
      effectors.push_back(e);
      v1::FullBodyCcdEffector* wire = op->add_effectors();
      wire->set_joint(c.skeleton().joint_name(e.joint));
      *wire->mutable_target() = ToVec3(e.target);
    }
    std::vector<Transform> expected = c.input();
    IkResult result;
    FullBodyCcdJob job;
    job.skeleton = &c.skeleton();
    job.input = c.input();
    job.effectors = effectors;
    job.output = absl::MakeSpan(expected);
    job.result = &result;
    ASSERT_TRUE(job.Run().ok());
    ExpectCore(request, expected, result,
               "full_body_ccd frame " + std::to_string(c.frame));
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace posewire::server
