// The Bake RPC over real gRPC: a long bake gives the bits a Session gives
// frame by frame, defaults bake the whole clip, messages carry progress in
// order, a cancelled bake stops and frees its slot, and the C++ client
// gathers a bake or cancels it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "clients/cpp/posewire_client.h"
#include "google/protobuf/util/message_differencer.h"
#include "solver_core/pose_ops/sampling_job.h"
#include "tests/service/service_fixture.h"

namespace posewire::server {
namespace bake_test {

using ::google::protobuf::util::MessageDifferencer;
using ::testing::HasSubstr;

constexpr float kRate = 60.0f;

// The walk's left leg reaching a fixed target, then spring bones hanging
// off the left shoulder: a stateless and a stateful op.
google::protobuf::RepeatedPtrField<v1::Operation> Pipeline() {
  google::protobuf::RepeatedPtrField<v1::Operation> ops;
  v1::TwoBoneIkOp* leg = ops.Add()->mutable_two_bone_ik();
  leg->set_start_joint("LeftHip");
  leg->set_mid_joint("LeftKnee");
  leg->set_end_joint("LeftAnkle");
  *leg->mutable_target() = ToVec3(Eigen::Vector3f(5.0f, 2.0f, -3.0f));
  ops.Add()->mutable_spring_bones()->mutable_rig()->add_root_joints(
      "LeftShoulder");
  return ops;
}

// Frame i's time, as the Bake RPC defines it.
float FrameTime(double start, int i, double rate) {
  return static_cast<float>(start + static_cast<double>(i) / rate);
}

class BakeTest : public ServiceTest {
 protected:
  v1::BakeRequest WalkBake() {
    v1::BakeRequest request;
    *request.mutable_skeleton()->mutable_skeleton() = WalkSkeleton();
    *request.add_clips() = WalkClip();
    request.mutable_source()->set_clip("walk");
    return request;
  }

  // Every message of a bake, and its status.
  grpc::Status ReadAll(const v1::BakeRequest& request,
                       std::vector<v1::BakeResponse>& messages) {
    grpc::ClientContext context;
    auto reader = stub_->Bake(&context, request);
    v1::BakeResponse message;
    while (reader->Read(&message)) messages.push_back(message);
    return reader->Finish();
  }
};

// 1,000 frames of the looping walk through IK and spring bones, with the
// character placed and its model poses asked for: the bake answers every
// frame, every op result and the state after the last as a Session whose
// rig samples the clip and runs the same ops, sent frame by frame.
TEST_F(BakeTest, Bake_ThousandFramesMatchASessionFrameByFrame) {
  constexpr int kFrames = 1000;
  v1::BakeRequest request = WalkBake();
  request.mutable_source()->set_loop(true);
  *request.mutable_ops() = Pipeline();
  request.set_frame_rate(kRate);
  request.set_start_time(0.25);
  request.set_frame_count(kFrames);
  *request.mutable_root()->mutable_translation() =
      ToVec3(Eigen::Vector3f(3.0f, 0.0f, -1.0f));
  request.set_want_model_pose(true);
  std::vector<v1::BakeResponse> messages;
  const grpc::Status status = ReadAll(request, messages);
  ASSERT_TRUE(status.ok()) << status.error_message();
  std::vector<v1::BakedFrame> baked;
  for (const v1::BakeResponse& m : messages) {
    baked.insert(baked.end(), m.frames().begin(), m.frames().end());
  }
  ASSERT_EQ(baked.size(), kFrames);
  // The server's choice: about 256 KiB of poses per message.
  EXPECT_GT(messages.size(), 1u);
  EXPECT_LT(messages.size(), 100u);

  grpc::ClientContext context;
  std::unique_ptr<SessionStream> stream = stub_->Session(&context);
  RegisterWalk(*stream);
  std::vector<v1::Operation> rig = {SampleWalkOp(0.0f)};
  rig[0].mutable_sample_clip()->mutable_sample()->set_mode(
      v1::PLAYBACK_MODE_LOOP);
  for (const v1::Operation& op : Pipeline()) rig.push_back(op);
  RegisterRigAndCharacter(*stream, rig);
  for (int i = 0; i < kFrames; ++i) {
    v1::SessionRequest r;
    v1::Frame* frame = r.mutable_frame();
    frame->set_sequence(i + 1);
    frame->set_dt(i == 0 ? 0.0f : static_cast<float>(1.0 / kRate));
    v1::CharacterFrame* c = frame->add_characters();
    c->set_character_id("c");
    *c->mutable_root() = request.root();
    c->set_want_model_pose(true);
    v1::OpUpdate* time = c->add_op_updates();
    time->set_op(0);
    time->set_time(FrameTime(0.25, i, kRate));
    const v1::SessionResponse answer = RoundTrip(*stream, r);
    ASSERT_EQ(answer.frame().characters_size(), 1);
    const v1::CharacterResult& expected = answer.frame().characters(0);
    ASSERT_EQ(expected.status().code(), 0) << expected.status().message();
    const v1::BakedFrame& got = baked[i];
    ASSERT_EQ(got.index(), static_cast<uint32_t>(i));
    EXPECT_EQ(got.time(), FrameTime(0.25, i, kRate));
    ASSERT_TRUE(BitIdentical(Floats(got.pose()), Floats(expected.pose())))
        << "frame " << i;
    ASSERT_TRUE(
        BitIdentical(Floats(got.model_pose()), Floats(expected.model_pose())))
        << "frame " << i;
    ASSERT_EQ(got.ops_size(), 2);
    for (int k = 0; k < 2; ++k) {
      const v1::OperationResult& e = expected.ops(k + 1);
      EXPECT_EQ(got.ops(k).op(), e.op());
      EXPECT_EQ(got.ops(k).reached(), e.reached());
      EXPECT_EQ(got.ops(k).error(), e.error());
    }
  }
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());

  // The state after the last frame continues the bake: one more frame
  // baked from it, a frame later, equals that frame of a bake that runs on.
  const v1::BakeResponse& last = messages.back();
  ASSERT_TRUE(last.done());
  ASSERT_TRUE(last.state().contains("spring_bones"));
  v1::BakeRequest next = request;
  next.set_start_time(0.25 + kFrames / static_cast<double>(kRate));
  next.set_frame_count(1);
  *next.mutable_state() = last.state();
  v1::BakeRequest longer = request;
  longer.set_frame_count(kFrames + 1);
  std::vector<v1::BakeResponse> continued, whole;
  ASSERT_TRUE(ReadAll(next, continued).ok());
  ASSERT_TRUE(ReadAll(longer, whole).ok());
  const v1::BakedFrame& one = continued.back().frames(0);
  const v1::BakedFrame& ran_on =
      whole.back().frames(whole.back().frames_size() - 1);
  EXPECT_EQ(ran_on.index(), static_cast<uint32_t>(kFrames));
  EXPECT_EQ(one.time(), ran_on.time());
  EXPECT_TRUE(BitIdentical(Floats(one.pose()), Floats(ran_on.pose())));
  // Without the state the spring chain starts afresh: another pose.
  next.clear_state();
  std::vector<v1::BakeResponse> fresh;
  ASSERT_TRUE(ReadAll(next, fresh).ok());
  EXPECT_FALSE(
      BitIdentical(Floats(fresh.back().frames(0).pose()), Floats(one.pose())));
}

// Per-frame IK targets (a DCC's keyed target) and placements in
// frame_updates: each frame answers as a Session frame sending the same op
// update and root, and frames past the last entry keep the op's own target
// and the request's root.
TEST_F(BakeTest, Bake_FrameUpdatesMoveTheTargetAsASessionFrameDoes) {
  constexpr int kFrames = 30;
  constexpr int kUpdated = 20;
  v1::BakeRequest request = WalkBake();
  *request.mutable_ops() = Pipeline();
  request.set_frame_count(kFrames);
  auto target = [](int i) {
    return ToVec3(Eigen::Vector3f(5.0f + 0.2f * i, 2.0f, -3.0f + 0.1f * i));
  };
  // The character walks off, too: spring bones swing in world space.
  auto root = [](int i) {
    v1::Transform t;
    *t.mutable_translation() = ToVec3(Eigen::Vector3f(0.5f * i, 0.0f, 0.0f));
    return t;
  };
  for (int i = 0; i < kUpdated; ++i) {
    v1::BakeFrameUpdates* frame = request.add_frame_updates();
    v1::OpUpdate* update = frame->add_op_updates();
    update->set_op(0);
    *update->mutable_target() = target(i);
    *frame->mutable_root() = root(i);
  }
  std::vector<v1::BakeResponse> messages;
  ASSERT_TRUE(ReadAll(request, messages).ok());
  std::vector<v1::BakedFrame> baked;
  for (const v1::BakeResponse& m : messages) {
    baked.insert(baked.end(), m.frames().begin(), m.frames().end());
  }
  ASSERT_EQ(baked.size(), kFrames);

  grpc::ClientContext context;
  std::unique_ptr<SessionStream> stream = stub_->Session(&context);
  RegisterWalk(*stream);
  std::vector<v1::Operation> rig = {SampleWalkOp(0.0f)};
  rig[0].mutable_sample_clip()->mutable_sample()->set_mode(
      v1::PLAYBACK_MODE_CLAMP);
  for (const v1::Operation& op : Pipeline()) rig.push_back(op);
  RegisterRigAndCharacter(*stream, rig);
  for (int i = 0; i < kFrames; ++i) {
    v1::SessionRequest r;
    r.mutable_frame()->set_sequence(i + 1);
    r.mutable_frame()->set_dt(i == 0 ? 0.0f : 1.0f / 30.0f);
    v1::CharacterFrame* c = r.mutable_frame()->add_characters();
    c->set_character_id("c");
    v1::OpUpdate* time = c->add_op_updates();
    time->set_op(0);
    time->set_time(FrameTime(0.0, i, 30.0));
    if (i < kUpdated) {
      v1::OpUpdate* ik = c->add_op_updates();
      ik->set_op(1);
      *ik->mutable_target() = target(i);
      *c->mutable_root() = root(i);
    }
    const v1::SessionResponse answer = RoundTrip(*stream, r);
    ASSERT_EQ(answer.frame().characters_size(), 1);
    ASSERT_TRUE(BitIdentical(Floats(baked[i].pose()),
                             Floats(answer.frame().characters(0).pose())))
        << "frame " << i;
  }
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
  // The targets did move the leg: frames 0 and 1 differ from a bake
  // without updates.
  request.clear_frame_updates();
  std::vector<v1::BakeResponse> plain;
  ASSERT_TRUE(ReadAll(request, plain).ok());
  EXPECT_FALSE(
      BitIdentical(Floats(plain[0].frames(1).pose()), Floats(baked[1].pose())));
}

// Only the skeleton, the clip and the source: the whole clip at 30 fps,
// clamped so the last frame is the clip's last key, each frame the clip
// sampled as the core samples it.
TEST_F(BakeTest, Bake_DefaultsBakeTheWholeClipEndingOnItsLastKey) {
  std::vector<v1::BakeResponse> messages;
  ASSERT_TRUE(ReadAll(WalkBake(), messages).ok());
  const Clip& clip = Walk().clips.at(0);
  const uint32_t expected_frames =
      static_cast<uint32_t>(std::floor(double{clip.duration} * 30.0 + 0.5)) + 1;
  ASSERT_FALSE(messages.empty());
  EXPECT_EQ(messages.back().frames_total(), expected_frames);
  EXPECT_EQ(messages.back().frames_done(), expected_frames);
  EXPECT_FALSE(messages.back().skeleton_hash().empty());
  uint32_t index = 0;
  LocalPose pose(Walk().skeleton.num_joints());
  for (const v1::BakeResponse& m : messages) {
    for (const v1::BakedFrame& frame : m.frames()) {
      ASSERT_EQ(frame.index(), index);
      SamplingJob job;
      job.skeleton = &Walk().skeleton;
      job.clip = &clip;
      job.time = FrameTime(0.0, static_cast<int>(index), 30.0);
      job.mode = PlaybackMode::kClamp;
      job.output = absl::MakeSpan(pose);
      ASSERT_TRUE(job.Run().ok());
      ASSERT_TRUE(BitIdentical(Floats(frame.pose()), Packed(pose)))
          << "frame " << index;
      ++index;
    }
  }
  EXPECT_EQ(index, expected_frames);
  // Rounded to the nearest frame: the last is at most half a frame past
  // the clip's end (and holds its last pose).
  EXPECT_LE(FrameTime(0.0, static_cast<int>(index) - 1, 30.0),
            clip.duration + 0.5 / 30.0);
}

// At the clip's nominal rate (the walk's 120 fps), a bake has one frame
// per key, its last frame the clip's last key, although the file's frame
// time (.0083333 s) puts the clip's end a little before that frame's time.
TEST_F(BakeTest, Bake_AtTheClipsOwnRateGivesOneFramePerKey) {
  v1::BakeRequest request = WalkBake();
  request.set_frame_rate(120.0f);
  std::vector<v1::BakeResponse> messages;
  ASSERT_TRUE(ReadAll(request, messages).ok());
  const Clip& clip = Walk().clips.at(0);
  size_t keys = 0;
  for (const JointTracks& track : clip.tracks) {
    keys = std::max(keys, track.rotation.times.size());
  }
  ASSERT_EQ(keys, 994u);
  EXPECT_EQ(messages.back().frames_total(), keys);
  const v1::BakedFrame& last =
      messages.back().frames(messages.back().frames_size() - 1);
  LocalPose pose(Walk().skeleton.num_joints());
  SamplingJob job;
  job.skeleton = &Walk().skeleton;
  job.clip = &clip;
  job.time = clip.duration;
  job.mode = PlaybackMode::kClamp;
  job.output = absl::MakeSpan(pose);
  ASSERT_TRUE(job.Run().ok());
  EXPECT_TRUE(BitIdentical(Floats(last.pose()), Packed(pose)));
}

// Asked for 7 frames a message: 50 frames come in 8 messages, progress
// rising, `done`, the state and the hash in the last message only.
TEST_F(BakeTest, Bake_MessagesCarryProgressInOrder) {
  v1::BakeRequest request = WalkBake();
  *request.mutable_ops() = Pipeline();
  request.set_frame_count(50);
  request.set_frames_per_message(7);
  std::vector<v1::BakeResponse> messages;
  ASSERT_TRUE(ReadAll(request, messages).ok());
  ASSERT_EQ(messages.size(), 8u);
  for (size_t m = 0; m < messages.size(); ++m) {
    const uint32_t done = std::min<uint32_t>(50, 7 * (m + 1));
    EXPECT_EQ(messages[m].frames_done(), done);
    EXPECT_EQ(messages[m].frames_total(), 50u);
    EXPECT_EQ(messages[m].frames_size(), static_cast<int>(done - 7 * m));
    const bool last = m + 1 == messages.size();
    EXPECT_EQ(messages[m].done(), last);
    EXPECT_EQ(messages[m].state().empty(), !last);
    EXPECT_EQ(messages[m].skeleton_hash().empty(), !last);
  }
}

// A reader slower than the solve: the server solves one message ahead of
// the one being sent, waits, and goes on as each is read; every message
// arrives in order, equal to a fast reader's.
TEST_F(BakeTest, Bake_SlowReaderGetsTheMessagesAFastOneGets) {
  v1::BakeRequest request = WalkBake();
  *request.mutable_ops() = Pipeline();
  request.set_frame_count(120);
  request.set_frames_per_message(3);
  std::vector<v1::BakeResponse> fast;
  ASSERT_TRUE(ReadAll(request, fast).ok());
  ASSERT_EQ(fast.size(), 40u);

  grpc::ClientContext context;
  auto reader = stub_->Bake(&context, request);
  v1::BakeResponse message;
  size_t read = 0;
  while (reader->Read(&message)) {
    ASSERT_LT(read, fast.size());
    EXPECT_TRUE(MessageDifferencer::Equals(message, fast[read]))
        << "message " << read;
    ++read;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_EQ(read, fast.size());
}

// A server that runs one bake at a time.
class OneBakeAtATimeTest : public BakeTest {
 protected:
  void Configure(ServerConfig& config) override {
    config.max_concurrent_bakes = 1;
  }
};

// A bake cancelled after its first messages ends CANCELLED and gives its
// slot back: the next bake runs. Meanwhile a second bake is refused with
// the limit named.
TEST_F(OneBakeAtATimeTest, Bake_CancelledBakeStopsAndFreesItsSlot) {
  v1::BakeRequest big = WalkBake();
  big.mutable_source()->set_loop(true);
  big.set_frame_count(100000);
  big.set_frames_per_message(1);
  grpc::ClientContext context;
  auto reader = stub_->Bake(&context, big);
  v1::BakeResponse message;
  for (int m = 0; m < 3; ++m) ASSERT_TRUE(reader->Read(&message));
  EXPECT_EQ(message.frames_done(), 3u);

  std::vector<v1::BakeResponse> refused;
  const grpc::Status second = ReadAll(WalkBake(), refused);
  EXPECT_EQ(second.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(second.error_message(),
              HasSubstr("limit of 1 bakes at once (GetInfo "
                        "limits.max_concurrent_bakes)"));

  context.TryCancel();
  while (reader->Read(&message)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_LT(message.frames_done(), 100000u);
  // The slot comes back when the server's reactor is done, just after.
  grpc::Status next;
  for (int attempt = 0; attempt < 200; ++attempt) {
    std::vector<v1::BakeResponse> ok;
    next = ReadAll(WalkBake(), ok);
    if (next.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(next.ok()) << next.error_message();
}

// The C++ client gathers a bake into one response, reports progress, and
// cancels when the callback says so.
TEST_F(BakeTest, Bake_ClientGathersFramesAndCancels) {
  client::Client client(channel_, client::ClientOptions{});
  v1::BakeRequest request = WalkBake();
  *request.mutable_ops() = Pipeline();
  request.set_frame_count(40);
  request.set_frames_per_message(16);
  int calls = 0;
  auto all = client.Bake(request, [&calls](const v1::BakeResponse& m) {
    ++calls;
    return m.frames_total() == 40u;
  });
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(calls, 3);
  ASSERT_EQ(all->frames_size(), 40);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(all->frames(i).index(), i);
  EXPECT_TRUE(all->done());
  EXPECT_FALSE(all->state().empty());

  std::vector<v1::BakeResponse> direct;
  ASSERT_TRUE(ReadAll(request, direct).ok());
  EXPECT_TRUE(BitIdentical(Floats(all->frames(39).pose()),
                           Floats(direct.back().frames(7).pose())));

  request.set_frame_count(100000);
  auto cancelled =
      client.Bake(request, [](const v1::BakeResponse&) { return false; });
  EXPECT_EQ(cancelled.status().code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(cancelled.status().message(),
              HasSubstr("bake cancelled by the caller after 0 of 100000"));
}

}  // namespace bake_test
}  // namespace posewire::server
