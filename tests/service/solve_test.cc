// Unary Solve against a real in-process server: results over the wire are
// bit-identical to the core called directly; every error has its code and a
// message naming the field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "solver_core/model/local_to_model.h"
#include "solver_core/pose_ops/blending_job.h"
#include "solver_core/pose_ops/crossfade.h"
#include "solver_core/pose_ops/sampling_job.h"
#include "tests/service/service_fixture.h"

namespace posewire::server {
namespace {

using ::testing::HasSubstr;

LocalPose CoreSample(float time) {
  const Skeleton& skeleton = Walk().skeleton;
  LocalPose pose(skeleton.num_joints());
  SamplingJob job;
  job.skeleton = &skeleton;
  job.clip = &Walk().clips[0];
  job.time = time;
  job.output = absl::MakeSpan(pose);
  EXPECT_TRUE(job.Run().ok());
  return pose;
}

v1::Operation SampleOp(const std::string& clip, float time) {
  v1::Operation op;
  op.mutable_sample_clip()->mutable_sample()->set_clip(clip);
  op.mutable_sample_clip()->mutable_sample()->set_time(time);
  return op;
}

class SolveFixture : public ServiceTest {
 protected:
  void Configure(ServerConfig& config) override {
    config.max_characters_per_batch = 64;
    config.inline_request_bytes = inline_request_bytes_;
  }

  // A request with the walk clip and one character with the skeleton inline.
  v1::SolveRequest OneCharacter() {
    v1::SolveRequest request;
    *request.add_clips() = WalkClip();
    v1::CharacterInput* c = request.add_characters();
    c->set_id("hero");
    *c->mutable_skeleton()->mutable_skeleton() = WalkSkeleton();
    return request;
  }

  grpc::Status Call(const v1::SolveRequest& request,
                    v1::SolveResponse* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(30));
    return stub_->Solve(&context, request, response);
  }

  int64_t inline_request_bytes_ = ServerConfig{}.inline_request_bytes;
};

// Run with every request solved on the solver pool, with the default
// split (small requests on gRPC's thread, large ones on the pool) and with
// every request solved on gRPC's thread: the answers must be the same
// wherever they are computed.
class SolveTest : public SolveFixture,
                  public ::testing::WithParamInterface<int64_t> {
 protected:
  SolveTest() { inline_request_bytes_ = GetParam(); }
};

TEST_P(SolveTest, SampleClip_OverTheWireIsBitIdenticalToTheCore) {
  v1::SolveRequest request = OneCharacter();
  *request.mutable_characters(0)->add_ops() = SampleOp("walk", 2.345f);
  request.mutable_characters(0)->set_want_model_pose(true);
  v1::SolveResponse response;
  grpc::Status status = Call(request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.characters_size(), 1);
  const v1::CharacterOutput& out = response.characters(0);
  EXPECT_EQ(out.id(), "hero");
  EXPECT_EQ(out.skeleton_hash(), SkeletonHash(Walk().skeleton));
  const LocalPose expected = CoreSample(2.345f);
  EXPECT_TRUE(BitIdentical(Floats(out.pose()), Packed(expected)));

  ModelPose model(expected.size());
  LocalToModelJob fk{.skeleton = &Walk().skeleton,
                     .input = expected,
                     .output = absl::MakeSpan(model)};
  ASSERT_TRUE(fk.Run().ok());
  EXPECT_TRUE(BitIdentical(Floats(out.model_pose()), Packed(model)));
  ASSERT_EQ(out.ops_size(), 1);
  EXPECT_EQ(out.ops(0).op(), "sample_clip");
}

TEST_P(SolveTest, NoOps_ReturnsTheInputPoseOrTheRestPose) {
  v1::SolveRequest request = OneCharacter();
  v1::SolveResponse response;
  ASSERT_TRUE(Call(request, &response).ok());
  EXPECT_TRUE(BitIdentical(Floats(response.characters(0).pose()),
                           Packed(RestPose(Walk().skeleton))));

  const LocalPose input = CoreSample(1.0f);
  PoseToProto(input, request.mutable_characters(0)->mutable_pose());
  response.Clear();
  ASSERT_TRUE(Call(request, &response).ok());
  EXPECT_TRUE(
      BitIdentical(Floats(response.characters(0).pose()), Packed(input)));
}

TEST_P(SolveTest, SkeletonByHash_WorksAfterSendingItOnceAndUnknownIsNotFound) {
  v1::SolveRequest request = OneCharacter();
  v1::SolveResponse first;
  ASSERT_TRUE(Call(request, &first).ok());
  const std::string hash = first.characters(0).skeleton_hash();
  ASSERT_EQ(hash.size(), 64u);  // hex SHA-256

  request.mutable_characters(0)->mutable_skeleton()->set_hash(hash);
  *request.mutable_characters(0)->add_ops() = SampleOp("walk", 0.5f);
  v1::SolveResponse second;
  grpc::Status status = Call(request, &second);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_TRUE(BitIdentical(Floats(second.characters(0).pose()),
                           Packed(CoreSample(0.5f))));

  request.mutable_characters(0)->mutable_skeleton()->set_hash(
      std::string(64, 'f'));
  status = Call(request, &second);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(status.error_message(), HasSubstr("characters[0].skeleton.hash"));
  EXPECT_THAT(status.error_message(), HasSubstr("send the skeleton inline"));
}

TEST_P(SolveTest, Blend_OfTwoClipTimesMatchesTheCore) {
  v1::SolveRequest request = OneCharacter();
  v1::BlendOp* blend =
      request.mutable_characters(0)->add_ops()->mutable_blend();
  for (auto [time, weight] : {std::pair{0.25f, 0.7f}, std::pair{1.5f, 0.3f}}) {
    v1::BlendLayer* layer = blend->add_layers();
    layer->mutable_source()->mutable_clip()->set_clip("walk");
    layer->mutable_source()->mutable_clip()->set_time(time);
    layer->set_weight(weight);
  }
  blend->set_blend_root("lowerback");
  v1::SolveResponse response;
  grpc::Status status = Call(request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();

  const Skeleton& skeleton = Walk().skeleton;
  const LocalPose a = CoreSample(0.25f), b = CoreSample(1.5f);
  BlendLayer layers[2];
  layers[0].transform = a;
  layers[0].weight = 0.7f;
  layers[1].transform = b;
  layers[1].weight = 0.3f;
  LocalPose expected(skeleton.num_joints());
  BlendingJob job;
  job.skeleton = &skeleton;
  job.layers = layers;
  job.blend_root = skeleton.FindJoint("lowerback");
  job.output = absl::MakeSpan(expected);
  ASSERT_TRUE(job.Run().ok());
  EXPECT_TRUE(
      BitIdentical(Floats(response.characters(0).pose()), Packed(expected)));
}

TEST_P(SolveTest, Crossfade_StateRoundTripsThroughTheClientAndMatchesTheCore) {
  v1::SolveRequest request = OneCharacter();
  *request.add_clips() = WalkClip("walk_late");
  // The second clip is the same motion; start it 2 s in so the fade shows.
  request.set_dt(1.0f / 60.0f);
  v1::CrossfadeOp* fade =
      request.mutable_characters(0)->add_ops()->mutable_crossfade();
  fade->add_commands()->set_play("walk");
  fade->add_commands()->mutable_fade_to()->set_clip("walk_late");
  fade->mutable_commands(1)->mutable_fade_to()->set_fade_seconds(0.25f);

  const Skeleton& skeleton = Walk().skeleton;
  std::vector<Clip> clips = {Walk().clips[0], Walk().clips[0]};
  CrossfadeState state = Play(0);
  FadeRequest fade_request{.clip = 1, .duration = 0.25f};
  auto faded = FadeTo(state, fade_request);
  ASSERT_TRUE(faded.ok());
  state = *faded;

  for (int frame = 0; frame < 30; ++frame) {
    v1::SolveResponse response;
    grpc::Status status = Call(request, &response);
    ASSERT_TRUE(status.ok()) << frame << ": " << status.error_message();
    LocalPose expected(skeleton.num_joints());
    auto next = StepCrossfade(skeleton, clips, state, 1.0f / 60.0f,
                              absl::MakeSpan(expected));
    ASSERT_TRUE(next.ok());
    state = *next;
    ASSERT_TRUE(
        BitIdentical(Floats(response.characters(0).pose()), Packed(expected)))
        << "frame " << frame;
    // Next frame: no commands, the state the server handed back.
    v1::CharacterInput* c = request.mutable_characters(0);
    c->mutable_ops(0)->mutable_crossfade()->clear_commands();
    *c->mutable_state() = response.characters(0).state();
  }
  // After 0.5 s the 0.25 s fade has finished: the target plays alone.
  const v1::CrossfadeState& wire =
      request.characters(0).state().at("crossfade").crossfade();
  EXPECT_EQ(wire.clip(), "walk_late");
  EXPECT_EQ(wire.fades_size(), 0);
}

TEST_P(SolveTest, Validate_AcceptsTheHonestPoseAndNamesTheWorstJointOfACheat) {
  v1::SolveRequest request = OneCharacter();
  *request.mutable_characters(0)->add_ops() = SampleOp("walk", 3.0f);
  v1::ValidateOp* validate =
      request.mutable_characters(0)->add_ops()->mutable_validate();
  validate->set_position_tolerance(1e-4f);
  validate->set_rotation_tolerance_degrees(0.01f);
  LocalPose claimed = CoreSample(3.0f);
  PoseToProto(claimed, validate->mutable_claimed());

  v1::SolveResponse response;
  ASSERT_TRUE(Call(request, &response).ok());
  const v1::ValidationResult& honest =
      response.characters(0).ops(1).validation();
  EXPECT_TRUE(honest.valid());
  EXPECT_EQ(honest.worst_position_error(), 0.0f);
  EXPECT_EQ(honest.position_error_size(), Walk().skeleton.num_joints());

  // A player's client claims its left knee bent 30 degrees more.
  const int knee = Walk().skeleton.FindJoint("LeftKnee");
  claimed[knee].rotation =
      claimed[knee].rotation *
      Eigen::Quaternionf(Eigen::AngleAxisf(0.5236f, Eigen::Vector3f::UnitX()));
  PoseToProto(claimed, validate->mutable_claimed());
  response.Clear();
  ASSERT_TRUE(Call(request, &response).ok());
  const v1::ValidationResult& cheat =
      response.characters(0).ops(1).validation();
  EXPECT_FALSE(cheat.valid());
  EXPECT_NEAR(cheat.worst_rotation_error_degrees(), 30.0f, 0.05f);
  // The knee's own position is unchanged; its descendants moved.
  EXPECT_EQ(cheat.position_error(knee), 0.0f);
  const int ankle = Walk().skeleton.FindJoint("LeftAnkle");
  EXPECT_GT(cheat.position_error(ankle), 0.1f);
  EXPECT_THAT(cheat.worst_joint(), ::testing::AnyOf("LeftAnkle", "LeftToe"));
  // The pipeline's pose is the re-solved one, not the claim.
  EXPECT_TRUE(BitIdentical(Floats(response.characters(0).pose()),
                           Packed(CoreSample(3.0f))));
}

TEST_P(SolveTest, Determinism_SameCharacterGivesTheSameBitsInAnyBatch) {
  v1::SolveRequest single = OneCharacter();
  v1::BlendOp* blend = single.mutable_characters(0)->add_ops()->mutable_blend();
  for (float t : {0.1f, 0.9f, 4.2f}) {
    v1::BlendLayer* layer = blend->add_layers();
    layer->mutable_source()->mutable_clip()->set_clip("walk");
    layer->mutable_source()->mutable_clip()->set_time(t);
    layer->set_weight(t);
  }
  v1::SolveResponse reference;
  ASSERT_TRUE(Call(single, &reference).ok());

  v1::SolveRequest batch = single;
  for (int i = 0; i < 49; ++i) *batch.add_characters() = single.characters(0);
  v1::SolveResponse batched;
  ASSERT_TRUE(Call(batch, &batched).ok());
  ASSERT_EQ(batched.characters_size(), 50);
  for (const v1::CharacterOutput& out : batched.characters()) {
    EXPECT_TRUE(BitIdentical(Floats(out.pose()),
                             Floats(reference.characters(0).pose())));
  }
}

struct BadRequestCase {
  std::string name;
  std::function<void(v1::SolveRequest&)> corrupt;
  grpc::StatusCode code;
  std::string message;
};

INSTANTIATE_TEST_SUITE_P(Placement, SolveTest, RequestPlacements(),
                         RequestPlacementName);

class SolveBadRequestTest
    : public SolveFixture,
      public ::testing::WithParamInterface<BadRequestCase> {};

TEST_P(SolveBadRequestTest, IsRejectedWithItsCodeAndAMessageNamingTheField) {
  v1::SolveRequest request = OneCharacter();
  *request.mutable_characters(0)->add_ops() = SampleOp("walk", 0.5f);
  GetParam().corrupt(request);
  v1::SolveResponse response;
  grpc::Status status = Call(request, &response);
  EXPECT_EQ(status.error_code(), GetParam().code) << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr(GetParam().message));
  EXPECT_EQ(response.characters_size(), 0);

  // The server is unharmed: a good request right after still works.
  v1::SolveResponse good;
  EXPECT_TRUE(Call(OneCharacter(), &good).ok());
}

const float kNaN = std::numeric_limits<float>::quiet_NaN();

INSTANTIATE_TEST_SUITE_P(
    Catalogue, SolveBadRequestTest,
    ::testing::Values(
        BadRequestCase{
            "NaNInInputPose",
            [](v1::SolveRequest& r) {
              PoseToProto(RestPose(Walk().skeleton),
                          r.mutable_characters(0)->mutable_pose());
              r.mutable_characters(0)->mutable_pose()->set_transforms(
                  10 * 4 + 1, kNaN);
            },
            grpc::StatusCode::INVALID_ARGUMENT,
            "characters[0].pose[4] 'LeftAnkle': translation"},
        BadRequestCase{
            "PoseOfWrongSize",
            [](v1::SolveRequest& r) {
              r.mutable_characters(0)->mutable_pose()->add_transforms(1);
            },
            grpc::StatusCode::INVALID_ARGUMENT,
            "characters[0].pose: 1 floats for 31 joints"},
        BadRequestCase{"NegativeDt",
                       [](v1::SolveRequest& r) { r.set_dt(-0.1f); },
                       grpc::StatusCode::INVALID_ARGUMENT, "dt: -0.1"},
        BadRequestCase{"UnknownClip",
                       [](v1::SolveRequest& r) {
                         r.mutable_characters(0)
                             ->mutable_ops(0)
                             ->mutable_sample_clip()
                             ->mutable_sample()
                             ->set_clip("run");
                       },
                       grpc::StatusCode::NOT_FOUND,
                       "characters[0].ops[0].sample_clip.sample.clip: no clip "
                       "named 'run'"},
        BadRequestCase{"DuplicateClipNames",
                       [](v1::SolveRequest& r) { *r.add_clips() = r.clips(0); },
                       grpc::StatusCode::INVALID_ARGUMENT,
                       "clips[1].name: 'walk' is used by an earlier clip"},
        BadRequestCase{"TooManyCharacters",
                       [](v1::SolveRequest& r) {
                         for (int i = 0; i < 64; ++i) {
                           *r.add_characters() = r.characters(0);
                         }
                       },
                       grpc::StatusCode::RESOURCE_EXHAUSTED,
                       "65 characters exceed this server's limit of 64"},
        BadRequestCase{"NoSkeleton",
                       [](v1::SolveRequest& r) {
                         r.mutable_characters(0)->clear_skeleton();
                       },
                       grpc::StatusCode::INVALID_ARGUMENT,
                       "characters[0].skeleton: set either skeleton or hash"},
        BadRequestCase{"ParentCycle",
                       [](v1::SolveRequest& r) {
                         r.mutable_characters(0)
                             ->mutable_skeleton()
                             ->mutable_skeleton()
                             ->set_parents(2, 5);
                       },
                       grpc::StatusCode::INVALID_ARGUMENT,
                       "does not come before its child"},
        BadRequestCase{
            "UnknownBlendRoot",
            [](v1::SolveRequest& r) {
              v1::BlendOp* b =
                  r.mutable_characters(0)->add_ops()->mutable_blend();
              b->add_layers()->mutable_source()->set_rest(true);
              b->set_blend_root("Tail");
            },
            grpc::StatusCode::INVALID_ARGUMENT,
            "characters[0].ops[1].blend.blend_root: no joint named "
            "'Tail'"},
        BadRequestCase{
            "NaNBlendWeight",
            [](v1::SolveRequest& r) {
              v1::BlendOp* b =
                  r.mutable_characters(0)->add_ops()->mutable_blend();
              b->add_layers()->mutable_source()->set_rest(true);
              b->mutable_layers(0)->set_weight(kNaN);
            },
            grpc::StatusCode::INVALID_ARGUMENT, "characters[0].ops[1].blend"},
        BadRequestCase{
            "EmptyOperation",
            [](v1::SolveRequest& r) { r.mutable_characters(0)->add_ops(); },
            grpc::StatusCode::INVALID_ARGUMENT,
            "characters[0].ops[1]: no operation set"},
        BadRequestCase{"NonUnitRootRotation",
                       [](v1::SolveRequest& r) {
                         r.mutable_characters(0)
                             ->mutable_root()
                             ->mutable_rotation()
                             ->set_w(2.0f);
                       },
                       grpc::StatusCode::INVALID_ARGUMENT,
                       "characters[0].root.rotation: rotation norm 2"},
        BadRequestCase{
            "ClipTimesNotIncreasing",
            [](v1::SolveRequest& r) {
              v1::Track* t =
                  r.mutable_clips(0)->mutable_joints(0)->mutable_rotation();
              t->set_times(1, t->times(0));
            },
            grpc::StatusCode::INVALID_ARGUMENT, "does not increase"}),
    [](const ::testing::TestParamInfo<BadRequestCase>& info) {
      return info.param.name;
    });

}  // namespace
}  // namespace posewire::server
