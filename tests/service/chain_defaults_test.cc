// IK ops sent with only their required fields (chain and target; for
// two_bone_ik the three joints and the target; for full_body_ccd the
// effectors) through a real server on loopback answer bit for bit what the
// core jobs answer at their defaults: the wire's defaults are the core's
// (iterations, tolerance relative to the chain, closing step, the hinge
// axis from the pose), on the real limb targets of the CMU clips
// (tests/core/chain_ik_real_data.h), the same cases as the core's solve-rate
// tests (chain_ik_defaults_test, two_bone_ik_defaults_test), so the service
// reaches what they measure.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "solver_core/analytic_ik/two_bone_ik.h"
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

  // Expects one character's answer (pose and IK outcome) to be the core's
  // bit for bit, with no warning.
  static void ExpectCoreAnswer(const v1::CharacterOutput& out,
                               const std::vector<Transform>& expected,
                               int iterations, float error, bool reached,
                               const std::string& where) {
    EXPECT_TRUE(BitIdentical(out.pose(), Packed(expected))) << where;
    ASSERT_EQ(out.ops_size(), 1) << where;
    EXPECT_EQ(out.ops(0).iterations(), static_cast<uint32_t>(iterations))
        << where;
    EXPECT_EQ(out.ops(0).error(), error) << where;
    EXPECT_EQ(out.ops(0).reached(), reached) << where;
    EXPECT_EQ(out.ops(0).warnings_size(), 0) << where;
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
    ExpectCoreAnswer(response.characters(0), expected, result.iterations,
                     result.error, result.reached, where);
  }

  // One case of a batch: its answer as the core gives it.
  struct Expected {
    std::string where;
    std::vector<Transform> pose;
    int iterations = 0;
    float error = 0.0f;
    bool reached = false;
    bool reachable = false;
  };

  // Adds `c` to `request` as a character of its own with one op, the one
  // `add_op` fills with only its required fields; solves `c` by the core's
  // `Job` at its defaults into `expected`.
  template <typename Job, typename Op>
  void AddChainCase(const RealCase& c, Op* (v1::Operation::*op_of)(),
                    const std::string& name, v1::SolveRequest& request,
                    std::vector<Expected>& expected) {
    Expected e;
    e.where = name + " " + c.Where();
    e.reachable = c.reachable();
    IkResult result;
    Job job = testing_util::DefaultJob<Job>(c.skeleton(), c.input(), c.chain,
                                            c.target, e.pose, &result);
    ASSERT_TRUE(job.Run().ok()) << e.where;
    e.iterations = result.iterations;
    e.error = result.error;
    e.reached = result.reached;
    expected.push_back(std::move(e));
    AddCharacter(c, request);
    Op* op =
        (request.mutable_characters(request.characters_size() - 1)->add_ops()
             ->*op_of)();
    AddChain(c, op->mutable_chain());
    *op->mutable_target() = ToVec3(c.target);
  }

  void AddTwoBoneCase(const RealCase& c, v1::SolveRequest& request,
                      std::vector<Expected>& expected) {
    Expected e;
    e.where = "two_bone_ik " + c.Where();
    e.reachable = testing_util::TwoBoneGeometryOf(c).reach ==
                  testing_util::TwoBoneReach::kReachable;
    TwoBoneIkResult result;
    ASSERT_TRUE(testing_util::DefaultTwoBoneJob(c, e.pose, &result).Run().ok())
        << e.where;
    // Mocap limbs are bent, or straight with the default pole giving a
    // plane: no case falls back to the old default (which the op would
    // warn about).
    ASSERT_NE(result.hinge, TwoBoneIkHinge::kDefault) << e.where;
    e.iterations = result.iterations;
    e.error = result.error;
    e.reached = result.reached;
    expected.push_back(std::move(e));
    AddCharacter(c, request);
    v1::TwoBoneIkOp* op =
        request.mutable_characters(request.characters_size() - 1)
            ->add_ops()
            ->mutable_two_bone_ik();
    op->set_start_joint(c.skeleton().joint_name(c.chain[0]));
    op->set_mid_joint(c.skeleton().joint_name(c.chain[1]));
    op->set_end_joint(c.skeleton().joint_name(c.chain[2]));
    *op->mutable_target() = ToVec3(c.target);
  }

  // Sends the cases in batches of 64 characters, each answer checked against
  // the core's; returns how many reachable cases the service reported
  // reached, of how many.
  std::pair<int, int> SendInBatches(
      size_t count, const std::function<void(size_t, v1::SolveRequest&,
                                             std::vector<Expected>&)>& add) {
    int reachable = 0, reached = 0;
    for (size_t first = 0; first < count; first += 64) {
      v1::SolveRequest request;
      std::vector<Expected> expected;
      for (size_t i = first; i < std::min(count, first + 64); ++i) {
        add(i, request, expected);
      }
      if (HasFatalFailure()) return {reached, reachable};
      v1::SolveResponse response;
      grpc::ClientContext context;
      const grpc::Status status = stub_->Solve(&context, request, &response);
      EXPECT_TRUE(status.ok())
          << expected[0].where << ": " << status.error_message();
      if (!status.ok()) return {reached, reachable};
      EXPECT_EQ(response.characters_size(), static_cast<int>(expected.size()));
      for (size_t k = 0; k < expected.size(); ++k) {
        const Expected& e = expected[k];
        const v1::CharacterOutput& out =
            response.characters(static_cast<int>(k));
        ExpectCoreAnswer(out, e.pose, e.iterations, e.error, e.reached,
                         e.where);
        if (e.reachable) {
          ++reachable;
          reached += out.ops_size() == 1 && out.ops(0).reached();
        }
      }
      if (HasFailure()) return {reached, reachable};
    }
    return {reached, reachable};
  }

  // `c`'s skeleton and input pose as a new character of `request`.
  static void AddCharacter(const RealCase& c, v1::SolveRequest& request) {
    v1::CharacterInput* character = request.add_characters();
    SkeletonToProto(c.skeleton(),
                    character->mutable_skeleton()->mutable_skeleton());
    PoseToProto(c.input(), character->mutable_pose());
  }

  // The chain's joint names.
  static void AddChain(const RealCase& c,
                       google::protobuf::RepeatedPtrField<std::string>* out) {
    for (int j : c.chain) *out->Add() = c.skeleton().joint_name(j);
  }
};

// Every clip of the solve-rate tests, 60 frames each, the four limbs: CCD
// and FABRIK on the whole limb chains (upper arm to hand, thigh to ankle or
// toe), unlimited; two-bone on their first three joints. The service reaches
// what the core does (at least 99.9% for the chains, 100% for two-bone, as
// the core tests measure by forward kinematics; here by the ops' `reached`).
TEST_F(ChainDefaultsServiceTest, CcdAndFabrikAtDefaultsMatchTheCore) {
  const std::vector<RealCase> cases = testing_util::SolveRateCases(60);
  ASSERT_GE(cases.size(), 1000u);
  const auto [ccd_reached, ccd_reachable] = SendInBatches(
      cases.size(),
      [&](size_t i, v1::SolveRequest& r, std::vector<Expected>& e) {
        AddChainCase<CcdIkJob>(cases[i], &v1::Operation::mutable_ccd_ik,
                               "ccd_ik", r, e);
      });
  ASSERT_FALSE(HasFailure());
  const auto [fabrik_reached, fabrik_reachable] = SendInBatches(
      cases.size(),
      [&](size_t i, v1::SolveRequest& r, std::vector<Expected>& e) {
        AddChainCase<FabrikIkJob>(cases[i], &v1::Operation::mutable_fabrik_ik,
                                  "fabrik_ik", r, e);
      });
  std::printf(
      "[ service ] %zu cases: ccd_ik reached %d of %d reachable, fabrik_ik %d "
      "of %d\n",
      cases.size(), ccd_reached, ccd_reachable, fabrik_reached,
      fabrik_reachable);
  EXPECT_GE(ccd_reachable, 1000);
  EXPECT_GE(ccd_reached, 0.999 * ccd_reachable);
  EXPECT_GE(fabrik_reached, 0.999 * fabrik_reachable);
}

TEST_F(ChainDefaultsServiceTest, TwoBoneAtDefaultsMatchesTheCore) {
  const std::vector<RealCase> cases = testing_util::SolveRateCases(60, 3);
  ASSERT_GE(cases.size(), 1000u);
  const auto [reached, reachable] = SendInBatches(
      cases.size(),
      [&](size_t i, v1::SolveRequest& r, std::vector<Expected>& e) {
        AddTwoBoneCase(cases[i], r, e);
      });
  std::printf("[ service ] %zu cases: two_bone_ik reached %d of %d reachable\n",
              cases.size(), reached, reachable);
  EXPECT_GE(reachable, 1000);
  EXPECT_EQ(reached, reachable);
}

// A leg straight in the pose and at rest (the walk's rest pose), with the
// pole along it: no plane gives the hinge, so the op falls back to the old
// default (0, 0, 1), answers what an explicit (0, 0, 1) answers, and warns.
TEST_F(ChainDefaultsServiceTest, TwoBoneWithNoBendPlaneWarnsOfTheOldDefault) {
  const Skeleton& s = RealWalk().skeleton;
  const std::vector<Transform> rest = RestPose(s);
  const std::vector<Transform> model = testing_util::ModelOf(s, rest);
  const int hip = s.FindJoint("LeftHip");
  const int ankle = s.FindJoint("LeftAnkle");
  const Eigen::Vector3f along =
      model[ankle].translation - model[hip].translation;
  v1::SolveResponse answers[2];
  for (int explicit_axis = 0; explicit_axis < 2; ++explicit_axis) {
    v1::SolveRequest request;
    v1::CharacterInput* character = request.add_characters();
    SkeletonToProto(s, character->mutable_skeleton()->mutable_skeleton());
    PoseToProto(rest, character->mutable_pose());
    v1::TwoBoneIkOp* op = character->add_ops()->mutable_two_bone_ik();
    op->set_start_joint("LeftHip");
    op->set_mid_joint("LeftKnee");
    op->set_end_joint("LeftAnkle");
    *op->mutable_target() = ToVec3(model[hip].translation + 0.8f * along +
                                   Eigen::Vector3f(0, 0, 1));
    *op->mutable_pole_vector() = ToVec3(along);
    if (explicit_axis) *op->mutable_mid_axis() = ToVec3({0, 0, 1});
    grpc::ClientContext context;
    const grpc::Status status =
        stub_->Solve(&context, request, &answers[explicit_axis]);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_EQ(answers[explicit_axis].characters(0).ops_size(), 1);
  }
  const v1::OperationResult& derived = answers[0].characters(0).ops(0);
  ASSERT_EQ(derived.warnings_size(), 1);
  EXPECT_EQ(derived.warnings(0),
            "mid_axis unset and the limb straight, with no bend plane from "
            "the pole or the rest pose: hinge defaulted to (0, 0, 1)");
  EXPECT_TRUE(derived.reached());
  EXPECT_EQ(answers[1].characters(0).ops(0).warnings_size(), 0);
  EXPECT_TRUE(BitIdentical(answers[0].characters(0).pose(),
                           Floats(answers[1].characters(0).pose())));
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
