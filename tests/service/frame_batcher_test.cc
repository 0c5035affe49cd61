// client::FrameBatcher against a real server: characters submitted one by
// one (from one thread or several) go out as one Session frame per tick,
// each caller gets its own character's result, bit for bit what a frame of
// its own gives, and every rule of the flush rule sends a batch.
#include "clients/cpp/frame_batcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "clients/cpp/posewire_client.h"
#include "tests/service/service_fixture.h"

namespace posewire::server {
namespace frame_batcher_test {

using client::FlushReason;
using client::FrameBatcher;
using client::FrameBatcherOptions;
using ::testing::HasSubstr;
using CharacterFuture = std::future<absl::StatusOr<v1::CharacterResult>>;

constexpr float kDt = 1.0f / 60.0f;
// Long enough that only a full tick sends a batch, however slowly the
// submitting threads run (a sanitizer build, a loaded machine): the tests
// that count one frame per tick use it.
constexpr absl::Duration kWholeTick = absl::Seconds(60);

int Reason(FlushReason reason) { return static_cast<int>(reason); }

std::string CharacterId(int i) { return absl::StrCat("npc", i); }

class FrameBatcherTest : public ServiceTest {
 protected:
  // A session with the walk's skeleton, a rig that samples the walk and
  // runs spring bones on the left arm (state that advances with each
  // frame's dt), and `characters` characters npc0, npc1, ... on it.
  std::unique_ptr<client::Session> OpenSession(int characters) {
    if (client_ == nullptr) {
      client_ =
          std::make_unique<client::Client>(channel_, client::ClientOptions{});
    }
    auto session = client_->OpenSession();
    EXPECT_TRUE(session.ok()) << session.status();
    if (!session.ok()) return nullptr;
    client::Session& s = **session;
    EXPECT_TRUE(s.RegisterSkeleton("cmu", Walk().skeleton).ok());
    EXPECT_TRUE(s.RegisterClip("walk", "cmu", Walk().clips[0]).ok());
    google::protobuf::RepeatedPtrField<v1::Operation> ops;
    ops.Add()->mutable_sample_clip()->mutable_sample()->set_clip("walk");
    ops.Add()->mutable_spring_bones()->mutable_rig()->add_root_joints(
        "LeftShoulder");
    EXPECT_TRUE(s.RegisterRig("walker", "cmu", ops).ok());
    for (int i = 0; i < characters; ++i) {
      EXPECT_TRUE(s.RegisterCharacter(CharacterId(i), "walker").ok());
    }
    return std::move(*session);
  }

  // Character i's frame at `tick`: its own clip time and a root that
  // moves, so that every character and tick differ.
  static v1::CharacterFrame FrameOf(int i, int tick) {
    v1::CharacterFrame c;
    c.set_character_id(CharacterId(i));
    c.mutable_root()->mutable_translation()->set_x(0.5f * i + 0.1f * tick);
    v1::OpUpdate* update = c.add_op_updates();
    update->set_op(0);
    update->set_time(0.05f * i + tick * kDt);
    return c;
  }

  // Sends `character` alone in the session's next frame.
  static v1::CharacterResult Alone(client::Session& session,
                                   v1::CharacterFrame character,
                                   float dt = kDt) {
    v1::Frame frame;
    frame.set_sequence(session.last_sequence() + 1);
    frame.set_dt(dt);
    *frame.add_characters() = std::move(character);
    auto result = session.SendFrame(frame);
    EXPECT_TRUE(result.ok()) << result.status();
    if (!result.ok() || result->characters_size() != 1) return {};
    return result->characters(0);
  }

  static v1::CharacterResult Get(CharacterFuture& future) {
    absl::StatusOr<v1::CharacterResult> result = future.get();
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *std::move(result) : v1::CharacterResult();
  }

  std::unique_ptr<client::Client> client_;
};

TEST_F(FrameBatcherTest,
       OneFramePerTick_ResultsBitIdenticalToFramesOfTheirOwn) {
  constexpr int kCharacters = 8;
  constexpr int kTicks = 20;
  auto separate = OpenSession(kCharacters);
  auto batched = OpenSession(kCharacters);
  ASSERT_NE(separate, nullptr);
  ASSERT_NE(batched, nullptr);
  FrameBatcher batcher(*batched,
                       FrameBatcherOptions{.expected_characters = kCharacters,
                                           .max_delay = kWholeTick});
  for (int tick = 0; tick < kTicks; ++tick) {
    std::vector<CharacterFuture> futures;
    for (int i = 0; i < kCharacters; ++i) {
      futures.push_back(batcher.Submit(FrameOf(i, tick), kDt));
    }
    for (int i = 0; i < kCharacters; ++i) {
      const v1::CharacterResult own = Alone(*separate, FrameOf(i, tick));
      const v1::CharacterResult mine = Get(futures[i]);
      EXPECT_EQ(mine.character_id(), CharacterId(i));
      ASSERT_EQ(mine.pose().transforms_size(), 310);
      EXPECT_TRUE(BitIdentical(mine.pose(), Floats(own.pose())))
          << "tick " << tick << ", character " << i;
    }
  }
  const FrameBatcher::Counters counters = batcher.counters();
  EXPECT_EQ(counters.frames, kTicks);
  EXPECT_EQ(counters.characters, kTicks * kCharacters);
  EXPECT_EQ(counters.by_reason[Reason(FlushReason::kExpectedCharacters)],
            kTicks);
  EXPECT_EQ(batched->last_sequence(), static_cast<uint64_t>(kTicks));
  EXPECT_EQ(separate->last_sequence(),
            static_cast<uint64_t>(kTicks * kCharacters));
}

TEST_F(FrameBatcherTest, SubmitsFromManyThreads_EachGetsItsOwnCharacter) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 16;
  constexpr int kTicks = 5;
  auto separate = OpenSession(kThreads * kPerThread);
  auto batched = OpenSession(kThreads * kPerThread);
  ASSERT_NE(separate, nullptr);
  ASSERT_NE(batched, nullptr);
  FrameBatcher batcher(*batched, FrameBatcherOptions{.expected_characters =
                                                         kThreads * kPerThread,
                                                     .max_delay = kWholeTick});
  // results[tick][character], filled by the threads.
  std::vector<std::vector<v1::CharacterResult>> results(
      kTicks, std::vector<v1::CharacterResult>(kThreads * kPerThread));
  for (int tick = 0; tick < kTicks; ++tick) {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t, tick] {
        std::vector<CharacterFuture> futures;
        for (int k = 0; k < kPerThread; ++k) {
          futures.push_back(
              batcher.Submit(FrameOf(t * kPerThread + k, tick), kDt));
        }
        for (int k = 0; k < kPerThread; ++k) {
          results[tick][t * kPerThread + k] = Get(futures[k]);
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
  }
  for (int tick = 0; tick < kTicks; ++tick) {
    for (int i = 0; i < kThreads * kPerThread; ++i) {
      const v1::CharacterResult own = Alone(*separate, FrameOf(i, tick));
      EXPECT_EQ(results[tick][i].character_id(), CharacterId(i));
      EXPECT_TRUE(BitIdentical(results[tick][i].pose(), Floats(own.pose())))
          << "tick " << tick << ", character " << i;
    }
  }
  EXPECT_EQ(batcher.counters().frames, kTicks);
}

TEST_F(FrameBatcherTest, WithoutAnExpectedCount_MaxDelaySendsTheBatch) {
  auto session = OpenSession(1);
  ASSERT_NE(session, nullptr);
  FrameBatcher batcher(*session);  // the defaults: 1 ms, no expected count
  CharacterFuture future = batcher.Submit(FrameOf(0, 0), kDt);
  // Sent by the delay alone: no Flush(), no further submit.
  ASSERT_EQ(future.wait_for(std::chrono::seconds(10)),
            std::future_status::ready);
  EXPECT_EQ(Get(future).pose().transforms_size(), 310);
  const FrameBatcher::Counters counters = batcher.counters();
  EXPECT_EQ(counters.frames, 1);
  EXPECT_EQ(counters.by_reason[Reason(FlushReason::kMaxDelay)], 1);
}

TEST_F(FrameBatcherTest, MaxCharactersSplitsAndFlushSendsTheRest) {
  auto session = OpenSession(7);
  ASSERT_NE(session, nullptr);
  FrameBatcher batcher(
      *session,
      FrameBatcherOptions{.max_characters = 3, .max_delay = absl::Seconds(60)});
  std::vector<CharacterFuture> futures;
  for (int i = 0; i < 7; ++i)
    futures.push_back(batcher.Submit(FrameOf(i, 0), kDt));
  // The first six went out by max_characters; the seventh waits for Flush.
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(Get(futures[i]).character_id(), CharacterId(i));
  EXPECT_EQ(futures[6].wait_for(std::chrono::milliseconds(50)),
            std::future_status::timeout);
  batcher.Flush();
  ASSERT_EQ(futures[6].wait_for(std::chrono::seconds(0)),
            std::future_status::ready);
  EXPECT_EQ(Get(futures[6]).character_id(), CharacterId(6));
  const FrameBatcher::Counters counters = batcher.counters();
  EXPECT_EQ(counters.frames, 3);
  EXPECT_EQ(counters.by_reason[Reason(FlushReason::kMaxCharacters)], 2);
  EXPECT_EQ(counters.by_reason[Reason(FlushReason::kFlush)], 1);
  EXPECT_EQ(session->last_sequence(), 3u);
}

// A character submitted twice, or a new dt, seals the waiting batch first:
// each character's frames reach the server in the order submitted, so the
// results are those of frames of their own in that order.
TEST_F(FrameBatcherTest, RepeatedCharacterAndNewDt_SplitInSubmitOrder) {
  auto separate = OpenSession(2);
  auto batched = OpenSession(2);
  ASSERT_NE(separate, nullptr);
  ASSERT_NE(batched, nullptr);
  FrameBatcher batcher(*batched,
                       FrameBatcherOptions{.max_delay = absl::Seconds(60)});
  CharacterFuture a0 = batcher.Submit(FrameOf(0, 0), kDt);
  CharacterFuture b0 = batcher.Submit(FrameOf(1, 0), kDt);
  CharacterFuture a1 = batcher.Submit(FrameOf(0, 1), kDt);      // npc0 again
  CharacterFuture b1 = batcher.Submit(FrameOf(1, 1), 2 * kDt);  // a new dt
  batcher.Flush();
  const v1::CharacterResult own_a0 = Alone(*separate, FrameOf(0, 0));
  const v1::CharacterResult own_b0 = Alone(*separate, FrameOf(1, 0));
  const v1::CharacterResult own_a1 = Alone(*separate, FrameOf(0, 1));
  const v1::CharacterResult own_b1 = Alone(*separate, FrameOf(1, 1), 2 * kDt);
  EXPECT_TRUE(BitIdentical(Get(a0).pose(), Floats(own_a0.pose())));
  EXPECT_TRUE(BitIdentical(Get(b0).pose(), Floats(own_b0.pose())));
  EXPECT_TRUE(BitIdentical(Get(a1).pose(), Floats(own_a1.pose())));
  EXPECT_TRUE(BitIdentical(Get(b1).pose(), Floats(own_b1.pose())));
  const FrameBatcher::Counters counters = batcher.counters();
  EXPECT_EQ(counters.frames, 3);  // {a0, b0}, {a1}, {b1}
  EXPECT_EQ(counters.by_reason[Reason(FlushReason::kRepeatedCharacter)], 1);
  EXPECT_EQ(counters.by_reason[Reason(FlushReason::kNewTick)], 1);
  EXPECT_EQ(counters.by_reason[Reason(FlushReason::kFlush)], 1);
}

TEST_F(FrameBatcherTest, ACharactersOwnErrorFailsOnlyItsFuture) {
  auto session = OpenSession(2);
  ASSERT_NE(session, nullptr);
  FrameBatcher batcher(*session, FrameBatcherOptions{.expected_characters = 3,
                                                     .max_delay = kWholeTick});
  v1::CharacterFrame stranger = FrameOf(0, 0);
  stranger.set_character_id("stranger");
  CharacterFuture ok0 = batcher.Submit(FrameOf(0, 0), kDt);
  CharacterFuture bad = batcher.Submit(stranger, kDt);
  CharacterFuture ok1 = batcher.Submit(FrameOf(1, 0), kDt);
  const absl::StatusOr<v1::CharacterResult> refused = bad.get();
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(refused.status().message(), HasSubstr("no character 'stranger'"));
  EXPECT_EQ(Get(ok0).character_id(), CharacterId(0));
  EXPECT_EQ(Get(ok1).character_id(), CharacterId(1));
  EXPECT_EQ(batcher.counters().frames, 1);
}

TEST_F(FrameBatcherTest, ARefusedFrameFailsItsBatchAndTheNextGoesOn) {
  auto session = OpenSession(2);
  ASSERT_NE(session, nullptr);
  FrameBatcher batcher(*session, FrameBatcherOptions{.expected_characters = 2,
                                                     .max_delay = kWholeTick});
  CharacterFuture first = batcher.Submit(FrameOf(0, 0), kDt, 5.0);
  CharacterFuture second = batcher.Submit(FrameOf(1, 0), kDt, 5.0);
  Get(first);
  Get(second);
  // A tick time going backwards: the server refuses the whole frame.
  std::vector<CharacterFuture> back;
  back.push_back(batcher.Submit(FrameOf(0, 1), kDt, 4.0));
  back.push_back(batcher.Submit(FrameOf(1, 1), kDt, 4.0));
  for (CharacterFuture& f : back) {
    const absl::StatusOr<v1::CharacterResult> r = f.get();
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr("frame.time"));
  }
  // Nothing of the session changed: the next tick is solved, with the
  // sequence the refused frame did not use.
  CharacterFuture again0 = batcher.Submit(FrameOf(0, 1), kDt, 6.0);
  CharacterFuture again1 = batcher.Submit(FrameOf(1, 1), kDt, 6.0);
  EXPECT_EQ(Get(again0).character_id(), CharacterId(0));
  EXPECT_EQ(Get(again1).character_id(), CharacterId(1));
  EXPECT_EQ(session->last_sequence(), 2u);
}

TEST_F(FrameBatcherTest, BadArgumentsAndOptionsAreRefusedWithoutSending) {
  auto session = OpenSession(1);
  ASSERT_NE(session, nullptr);
  {
    FrameBatcher batcher(*session);
    for (float dt : {-kDt, std::nanf(""), INFINITY}) {
      const absl::StatusOr<v1::CharacterResult> r =
          batcher.Submit(FrameOf(0, 0), dt).get();
      EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(r.status().message(), HasSubstr("dt " + absl::StrCat(dt) +
                                                  " for character 'npc0'"));
    }
    const absl::StatusOr<v1::CharacterResult> r =
        batcher.Submit(FrameOf(0, 0), kDt, std::nan("")).get();
    EXPECT_THAT(r.status().message(), HasSubstr("time nan"));
    EXPECT_EQ(batcher.counters().frames, 0);
  }
  const FrameBatcherOptions bad_options[] = {
      {.expected_characters = -1},
      {.max_characters = 0},
      {.max_delay = -absl::Milliseconds(1)},
      {.max_delay = absl::InfiniteDuration()},
      {.expected_characters = 65}};
  const char* const fields[] = {
      "expected_characters", "max_characters", "max_delay", "max_delay",
      "expected_characters: 65 exceeds max_characters 64"};
  for (int k = 0; k < 5; ++k) {
    FrameBatcher batcher(*session, bad_options[k]);
    const absl::StatusOr<v1::CharacterResult> r =
        batcher.Submit(FrameOf(0, 0), kDt).get();
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(),
                HasSubstr(absl::StrCat("FrameBatcherOptions.", fields[k])));
  }
  EXPECT_EQ(session->last_sequence(), 0u);
}

TEST_F(FrameBatcherTest, DestructionSendsWhatIsWaiting) {
  auto session = OpenSession(1);
  ASSERT_NE(session, nullptr);
  CharacterFuture future;
  {
    FrameBatcher batcher(*session,
                         FrameBatcherOptions{.max_delay = absl::Seconds(60)});
    future = batcher.Submit(FrameOf(0, 0), kDt);
  }
  ASSERT_EQ(future.wait_for(std::chrono::seconds(0)),
            std::future_status::ready);
  EXPECT_EQ(Get(future).character_id(), CharacterId(0));
  EXPECT_EQ(session->last_sequence(), 1u);
}

}  // namespace frame_batcher_test
}  // namespace posewire::server
