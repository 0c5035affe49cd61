// The ground op over the wire, bit-identical to GroundJob run directly:
// client samples in a Solve, samples moved by a Session's op updates, and a
// heightfield the server samples.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "solver_core/analytic_ik/ground.h"
#include "solver_core/model/local_to_model.h"
#include "tests/service/service_fixture.h"

namespace posewire::server {
namespace ground_op_test {

int Joint(const char* name) { return Walk().skeleton.FindJoint(name); }

std::vector<GroundLeg> WalkLegs() {
  std::vector<GroundLeg> legs;
  for (const char* side : {"Left", "Right"}) {
    const std::string s(side);
    legs.push_back({.hip = Joint((s + "Hip").c_str()),
                    .knee = Joint((s + "Knee").c_str()),
                    .ankle = Joint((s + "Ankle").c_str()),
                    .toe = Joint((s + "Toe").c_str())});
  }
  return legs;
}

v1::GroundOp WalkGround() {
  v1::GroundOp op;
  op.set_pelvis("Hips");
  for (const char* side : {"Left", "Right"}) {
    const std::string s(side);
    v1::GroundLeg* leg = op.add_legs();
    leg->set_hip(s + "Hip");
    leg->set_knee(s + "Knee");
    leg->set_ankle(s + "Ankle");
    leg->set_toe(s + "Toe");
  }
  return op;
}

// A ground hit under `joint` of the pose, `rise` above the floor (y = 0),
// tilted by `slope` along x.
GroundSample Under(const LocalPose& pose, int joint, float rise, float slope) {
  const Eigen::Vector3f p = Model(pose)[joint].translation;
  GroundSample s;
  s.hit = true;
  s.point = Eigen::Vector3f(p.x(), rise, p.z());
  s.normal = Eigen::Vector3f(-slope, 1.0f, 0.0f);
  return s;
}

v1::GroundHit ToHit(const GroundSample& s) {
  v1::GroundHit hit;
  hit.set_hit(s.hit);
  *hit.mutable_point() = ToVec3(s.point);
  *hit.mutable_normal() = ToVec3(s.normal);
  return hit;
}

// The core job as the op's defaults describe it on the walk; with `state`,
// smoothed at pelvis_speed over `dt`.
LocalPose CoreGround(const LocalPose& input,
                     absl::Span<const GroundSample> samples,
                     const Heightfield* field, GroundState* state = nullptr,
                     float pelvis_speed = 0.0f, float dt = 0.0f,
                     const Eigen::Vector3f& up = Eigen::Vector3f::UnitY()) {
  const std::vector<GroundLeg> legs = WalkLegs();
  LocalPose output = input;
  GroundJob job;
  job.skeleton = &Walk().skeleton;
  job.input = input;
  job.pelvis = Joint("Hips");
  job.parent_model =
      ParentModelTransformOrRoot(Walk().skeleton, input, job.pelvis);
  job.legs = legs;
  job.samples = samples;
  job.heightfield = field;
  job.up = up;
  // The op's default: half the shortest leg's rest length.
  float shortest = 1e30f;
  for (const GroundLeg& leg : legs) {
    float length = 0.0f;
    for (int j = leg.ankle; j != leg.hip; j = Walk().skeleton.parent(j)) {
      length += Walk().skeleton.rest_pose()[j].translation.norm();
    }
    shortest = std::min(shortest, length);
  }
  job.max_step_height = 0.5f * shortest;
  job.state = state;
  job.next_state = state;
  job.pelvis_speed = pelvis_speed;
  job.dt = dt;
  job.output = absl::MakeSpan(output);
  EXPECT_TRUE(job.Run().ok());
  return output;
}

class GroundOpTest : public ServiceTest {
 protected:
  v1::CharacterOutput Solve(const v1::GroundOp& op) {
    v1::SolveRequest request;
    v1::CharacterInput* c = request.add_characters();
    *c->mutable_skeleton()->mutable_skeleton() = WalkSkeleton();
    PoseToProto(SampleWalk(1.0f), c->mutable_pose());
    *c->add_ops()->mutable_ground() = op;
    return SolveFirstCharacter(request);
  }
};

TEST_F(GroundOpTest, Ground_ClientSamplesMatchTheCore) {
  const LocalPose input = SampleWalk(1.0f);
  const std::vector<GroundSample> samples = {
      Under(input, Joint("LeftAnkle"), 1.2f, 0.1f),
      Under(input, Joint("RightAnkle"), -0.8f, 0.0f)};
  v1::GroundOp op = WalkGround();
  for (const GroundSample& s : samples) *op.add_samples() = ToHit(s);
  const v1::CharacterOutput out = Solve(op);
  ASSERT_EQ(out.ops_size(), 1);
  EXPECT_EQ(out.ops(0).op(), "ground");
  EXPECT_TRUE(out.ops(0).reached());
  const LocalPose expected = CoreGround(input, samples, nullptr);
  EXPECT_TRUE(BitIdentical(out.pose(), Packed(expected)));
  EXPECT_FALSE(BitIdentical(out.pose(), Packed(input)));
}

// A Z-up model space (the walk's root turned +90 degrees about x, as a
// DCC's armature space is): with up (0, 0, 1) and the samples turned too,
// the op answers as the core does, and the legs as in the Y-up rig.
TEST_F(GroundOpTest, Ground_ZUpModelSpaceWithUpMatchesTheCore) {
  const LocalPose upright = SampleWalk(1.0f);
  const std::vector<GroundSample> y_up = {
      Under(upright, Joint("LeftAnkle"), 1.2f, 0.1f),
      Under(upright, Joint("RightAnkle"), -0.8f, 0.0f)};
  const Eigen::Quaternionf y_to_z(
      Eigen::AngleAxisf(1.5707964f, Eigen::Vector3f::UnitX()));
  LocalPose input = upright;
  const int hips = Joint("Hips");
  ASSERT_EQ(Walk().skeleton.parent(hips), -1);
  input[hips].rotation = (y_to_z * input[hips].rotation).normalized();
  input[hips].translation = y_to_z * input[hips].translation;
  std::vector<GroundSample> z_up = y_up;
  for (GroundSample& sample : z_up) {
    sample.point = y_to_z * sample.point;
    sample.normal = y_to_z * sample.normal;
  }
  v1::SolveRequest request;
  v1::CharacterInput* c = request.add_characters();
  *c->mutable_skeleton()->mutable_skeleton() = WalkSkeleton();
  PoseToProto(input, c->mutable_pose());
  v1::GroundOp* op = c->add_ops()->mutable_ground();
  *op = WalkGround();
  *op->mutable_up() = ToVec3(Eigen::Vector3f(0.0f, 0.0f, 1.0f));
  for (const GroundSample& sample : z_up) *op->add_samples() = ToHit(sample);
  const v1::CharacterOutput out = SolveFirstCharacter(request);
  ASSERT_EQ(out.ops_size(), 1);
  EXPECT_TRUE(out.ops(0).reached());
  const LocalPose expected = CoreGround(input, z_up, nullptr, nullptr, 0.0f,
                                        0.0f, Eigen::Vector3f::UnitZ());
  EXPECT_TRUE(BitIdentical(out.pose(), Packed(expected)));
  // Below the root the local pose is the Y-up answer, to float rounding.
  const LocalPose reference = CoreGround(upright, y_up, nullptr);
  for (int j = 0; j < Walk().skeleton.num_joints(); ++j) {
    if (j == hips) continue;
    EXPECT_LT(expected[j].rotation.angularDistance(reference[j].rotation),
              1e-4f)
        << Walk().skeleton.joint_name(j);
  }
  // A sample's normal that points along y is not up any more.
  op->mutable_samples(0)->mutable_normal()->set_z(-1.0f);
  grpc::ClientContext context;
  v1::SolveResponse response;
  const grpc::Status status = stub_->Solve(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              ::testing::HasSubstr("characters[0].ops[0].ground.samples[0]."
                                   "normal"));
}

TEST_F(GroundOpTest, Ground_FlatGroundAtTheFloorReturnsThePoseBitForBit) {
  const LocalPose input = SampleWalk(1.0f);
  v1::GroundOp op = WalkGround();
  for (int i = 0; i < 2; ++i) {
    v1::GroundHit* hit = op.add_samples();
    hit->set_hit(true);
    *hit->mutable_point() = ToVec3(Eigen::Vector3f(3.0f * i, 0.0f, 1.0f));
  }
  EXPECT_TRUE(BitIdentical(Solve(op).pose(), Packed(input)));
}

// A 5 x 4 heightfield under the walk at 1 s, for the core and on the wire.
struct WalkHeightfield {
  std::vector<float> heights = {0.5f, 1.0f, 0.0f, -0.5f, 0.2f, 1.5f, 0.3f,
                                0.8f, 1.1f, 0.0f, 0.0f,  0.9f, 1.4f, 0.2f,
                                0.6f, 0.4f, 0.1f, 0.0f,  0.7f, 1.0f};
  Heightfield field;
  v1::GroundOp op = WalkGround();

  explicit WalkHeightfield(const LocalPose& input) {
    const Eigen::Vector3f hips = Model(input)[Joint("Hips")].translation;
    field.columns = 5;
    field.rows = 4;
    field.spacing = 10.0f;
    field.origin_x = hips.x() - 20.0f;
    field.origin_z = hips.z() - 15.0f;
    field.heights = heights;
    v1::Heightfield* h = op.mutable_heightfield();
    h->set_columns(field.columns);
    h->set_rows(field.rows);
    h->set_spacing(field.spacing);
    h->set_origin_x(field.origin_x);
    h->set_origin_z(field.origin_z);
    for (float v : heights) h->add_heights(v);
  }
  WalkHeightfield(const WalkHeightfield&) = delete;
  WalkHeightfield& operator=(const WalkHeightfield&) = delete;
};

TEST_F(GroundOpTest, Ground_HeightfieldIsSampledByTheServerLikeTheCore) {
  const LocalPose input = SampleWalk(1.0f);
  const WalkHeightfield ground(input);
  const LocalPose expected = CoreGround(input, {}, &ground.field);
  const v1::CharacterOutput out = Solve(ground.op);
  EXPECT_TRUE(BitIdentical(out.pose(), Packed(expected)));
  EXPECT_FALSE(BitIdentical(out.pose(), Packed(input)));
}

// Registers a rig sampling the walk at 1 s, then `ground`, and character
// "c" on it.
void RegisterGroundRig(SessionStream& stream, const v1::GroundOp& ground) {
  v1::Operation op;
  *op.mutable_ground() = ground;
  ServiceTest::RegisterRigAndCharacter(stream,
                                       {ServiceTest::SampleWalkOp(1.0f), op});
}

// One frame of character "c" with the ground op's samples in an update.
v1::SessionRequest GroundFrame(int sequence,
                               absl::Span<const GroundSample> samples) {
  v1::SessionRequest request;
  request.mutable_frame()->set_sequence(sequence);
  request.mutable_frame()->set_dt(1.0f / 60.0f);
  v1::CharacterFrame* c = request.mutable_frame()->add_characters();
  c->set_character_id("c");
  v1::OpUpdate* update = c->add_op_updates();
  update->set_op(1);
  for (const GroundSample& s : samples) {
    *update->add_ground_samples() = ToHit(s);
  }
  return request;
}

TEST_F(GroundOpTest, Ground_SessionKeepsTheSmoothingStateLikeTheCore) {
  grpc::ClientContext context;
  std::unique_ptr<SessionStream> stream = stub_->Session(&context);
  RegisterWalk(*stream);
  v1::GroundOp op = WalkGround();
  op.set_pelvis_speed(6.0f);
  RegisterGroundRig(*stream, op);
  const LocalPose input = SampleWalk(1.0f);
  GroundState state;
  for (int f = 0; f < 5; ++f) {
    // The right foot's ground drops 2 units (11 cm) at once: the pelvis
    // follows over frames.
    const std::vector<GroundSample> samples = {
        Under(input, Joint("LeftAnkle"), 0.0f, 0.0f),
        Under(input, Joint("RightAnkle"), f == 0 ? 0.0f : -2.0f, 0.0f)};
    const v1::SessionResponse response =
        RoundTrip(*stream, GroundFrame(f + 1, samples));
    ASSERT_EQ(response.frame().characters_size(), 1);
    const v1::CharacterResult& result = response.frame().characters(0);
    ASSERT_EQ(result.status().code(), 0) << result.status().message();
    const LocalPose expected =
        CoreGround(input, samples, nullptr, &state, 6.0f, 1.0f / 60.0f);
    EXPECT_TRUE(BitIdentical(result.pose(), Packed(expected))) << "frame " << f;
  }
  EXPECT_LT(state.pelvis_offset, 0.0f);
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(GroundOpTest, Ground_SessionOpUpdatesMoveTheSamplesLikeTheCore) {
  grpc::ClientContext context;
  std::unique_ptr<SessionStream> stream = stub_->Session(&context);
  RegisterWalk(*stream);
  // No samples: every frame's update gives them.
  RegisterGroundRig(*stream, WalkGround());
  const LocalPose input = SampleWalk(1.0f);
  for (int f = 0; f < 4; ++f) {
    const std::vector<GroundSample> samples = {
        Under(input, Joint("LeftAnkle"), 0.5f * f, 0.05f * f),
        Under(input, Joint("RightAnkle"), 1.0f - 0.6f * f, 0.0f)};
    const v1::SessionResponse response =
        RoundTrip(*stream, GroundFrame(f + 1, samples));
    ASSERT_TRUE(response.has_frame());
    ASSERT_EQ(response.frame().characters_size(), 1);
    const v1::CharacterResult& result = response.frame().characters(0);
    ASSERT_EQ(result.status().code(), 0) << result.status().message();
    EXPECT_TRUE(BitIdentical(result.pose(),
                             Packed(CoreGround(input, samples, nullptr))))
        << "frame " << f;
  }
  // A frame without samples for an op that has none is refused, and the
  // stream goes on.
  v1::SessionRequest request;
  request.mutable_frame()->set_sequence(10);
  request.mutable_frame()->set_dt(1.0f / 60.0f);
  request.mutable_frame()->add_characters()->set_character_id("c");
  const v1::SessionResponse response = RoundTrip(*stream, request);
  ASSERT_EQ(response.frame().characters_size(), 1);
  EXPECT_THAT(response.frame().characters(0).status().message(),
              ::testing::HasSubstr("ground.samples: required"));
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

// A rig registered with a heightfield: the Session samples it each frame,
// as the core does, and keeps the smoothing state between frames.
TEST_F(GroundOpTest, Ground_SessionRigWithAHeightfieldMatchesTheCore) {
  grpc::ClientContext context;
  std::unique_ptr<SessionStream> stream = stub_->Session(&context);
  RegisterWalk(*stream);
  const LocalPose input = SampleWalk(1.0f);
  WalkHeightfield ground(input);
  ground.op.set_pelvis_speed(6.0f);
  RegisterGroundRig(*stream, ground.op);
  GroundState state;
  for (int f = 0; f < 3; ++f) {
    v1::SessionRequest request;
    request.mutable_frame()->set_sequence(f + 1);
    request.mutable_frame()->set_dt(1.0f / 60.0f);
    request.mutable_frame()->add_characters()->set_character_id("c");
    const v1::SessionResponse response = RoundTrip(*stream, request);
    ASSERT_EQ(response.frame().characters_size(), 1);
    const v1::CharacterResult& result = response.frame().characters(0);
    ASSERT_EQ(result.status().code(), 0) << result.status().message();
    const LocalPose expected =
        CoreGround(input, {}, &ground.field, &state, 6.0f, 1.0f / 60.0f);
    EXPECT_TRUE(BitIdentical(result.pose(), Packed(expected))) << "frame " << f;
    EXPECT_FALSE(BitIdentical(result.pose(), Packed(input)));
  }
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

// Solve returns the smoothing state; sent back, it continues as the core
// does from that state; without it the call starts from the clip again.
TEST_F(GroundOpTest, Ground_SolveReturnsTheSmoothingStateAndTakesItBack) {
  const LocalPose input = SampleWalk(1.0f);
  const std::vector<GroundSample> samples = {
      Under(input, Joint("LeftAnkle"), 0.0f, 0.0f),
      Under(input, Joint("RightAnkle"), -2.0f, 0.0f)};
  v1::SolveRequest request;
  request.set_dt(1.0f / 60.0f);
  v1::CharacterInput* c = request.add_characters();
  *c->mutable_skeleton()->mutable_skeleton() = WalkSkeleton();
  PoseToProto(input, c->mutable_pose());
  v1::GroundOp* op = c->add_ops()->mutable_ground();
  *op = WalkGround();
  op->set_pelvis_speed(6.0f);
  for (const GroundSample& s : samples) *op->add_samples() = ToHit(s);

  GroundState state;
  const v1::CharacterOutput first = SolveFirstCharacter(request);
  LocalPose expected =
      CoreGround(input, samples, nullptr, &state, 6.0f, 1.0f / 60.0f);
  EXPECT_TRUE(BitIdentical(first.pose(), Packed(expected)));
  ASSERT_TRUE(first.state().contains("ground"));
  const v1::GroundState& wire = first.state().at("ground").ground();
  EXPECT_EQ(wire.pelvis_offset(), state.pelvis_offset);
  EXPECT_LT(wire.pelvis_offset(), 0.0f);
  // Smoothed: short of the 2-unit drop (a tenth of the way, then as low
  // as the right leg needs to reach).
  EXPECT_GT(wire.pelvis_offset(), -2.0f);

  *c->mutable_state() = first.state();
  const v1::CharacterOutput second = SolveFirstCharacter(request);
  expected = CoreGround(input, samples, nullptr, &state, 6.0f, 1.0f / 60.0f);
  EXPECT_TRUE(BitIdentical(second.pose(), Packed(expected)));
  EXPECT_LT(second.state().at("ground").ground().pelvis_offset(),
            wire.pelvis_offset());

  c->clear_state();
  const v1::CharacterOutput fresh = SolveFirstCharacter(request);
  EXPECT_TRUE(BitIdentical(fresh.pose(), Floats(first.pose())));
}

// A rig whose leg crosses the body (the right hip above the left knee and
// ankle) is refused when registered, naming the broken link, and the
// session goes on: the default step height is derived from the legs before
// they are checked, and must not walk off the skeleton doing it.
TEST_F(GroundOpTest, Ground_SessionRigWithACrossedLegIsRefusedByName) {
  grpc::ClientContext context;
  std::unique_ptr<SessionStream> stream = stub_->Session(&context);
  RegisterWalk(*stream);
  v1::SessionRequest r;
  r.mutable_register_rig()->set_id("crossed");
  r.mutable_register_rig()->set_skeleton_id("cmu");
  v1::GroundOp* op = r.mutable_register_rig()->add_ops()->mutable_ground();
  *op = WalkGround();
  op->mutable_legs(0)->set_hip("RightHip");
  op->mutable_legs(1)->set_hip("LeftHip");
  const v1::SessionResponse refused = RoundTrip(*stream, r);
  ExpectRegistered(refused, grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(refused.registered().status().message(),
              ::testing::HasSubstr("ground.legs[0].knee: joint 3 'LeftKnee' "
                                   "is not a descendant of legs[0].hip"));

  RegisterGroundRig(*stream, WalkGround());
  const LocalPose input = SampleWalk(1.0f);
  const std::vector<GroundSample> samples = {
      Under(input, Joint("LeftAnkle"), 0.0f, 0.0f),
      Under(input, Joint("RightAnkle"), 0.0f, 0.0f)};
  const v1::SessionResponse answer =
      RoundTrip(*stream, GroundFrame(1, samples));
  ASSERT_EQ(answer.frame().characters_size(), 1);
  EXPECT_EQ(answer.frame().characters(0).status().code(), 0)
      << answer.frame().characters(0).status().message();
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

// On a skeleton whose legs have no rest length the default step height
// (half the shortest leg) is 0: the op says so and asks for the field,
// rather than failing on a value the client never sent.
TEST_F(GroundOpTest, Ground_ZeroLengthLegsAskForMaxStepHeight) {
  v1::SolveRequest request;
  v1::CharacterInput* c = request.add_characters();
  v1::Skeleton* skeleton = c->mutable_skeleton()->mutable_skeleton();
  *skeleton = WalkSkeleton();
  PoseToProto(RestPose(Walk().skeleton), c->mutable_pose());
  // Every joint at its parent's origin: translations are the first 3 of each
  // joint's 10 floats.
  for (int i = 0; i < skeleton->rest_pose_size(); i += 10) {
    for (int k = 0; k < 3; ++k) {
      skeleton->set_rest_pose(i + k, 0.0f);
      c->mutable_pose()->set_transforms(i + k, 0.0f);
    }
  }
  v1::GroundOp* op = c->add_ops()->mutable_ground();
  *op = WalkGround();
  for (int leg = 0; leg < 2; ++leg) {
    GroundSample floor;
    floor.hit = true;
    floor.normal = Eigen::Vector3f::UnitY();
    *op->add_samples() = ToHit(floor);
  }
  grpc::ClientContext context;
  v1::SolveResponse response;
  const grpc::Status status = stub_->Solve(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              ::testing::HasSubstr("ground.max_step_height: not given, and its "
                                   "default (half the shortest leg's rest "
                                   "length, hip to ankle) is 0"));

  op->set_max_step_height(0.5f);
  EXPECT_EQ(SolveFirstCharacter(request).ops(0).op(), "ground");
}

}  // namespace ground_op_test
}  // namespace posewire::server
