// What a server's sessions share by content (SessionShared): the same clip
// registered by several sessions is one copy of its keys, a clip that
// differs in a single key bit is its own, frames sample the shared copy
// exactly as a session's own, and a clip goes when its last session does;
// equal skeletons are one object and equal rigs one compiled plan, except
// a rig naming the session's own registrations.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "server/service/clip_cache.h"
#include "server/service/session.h"
#include "tests/service/service_fixture.h"

namespace posewire::server {
namespace session_shared_test {

std::vector<v1::SessionRequest> Registrations(const v1::Clip& clip) {
  std::vector<v1::SessionRequest> out(4);
  out[0].mutable_register_skeleton()->set_id("cmu");
  *out[0].mutable_register_skeleton()->mutable_skeleton() =
      ServiceTest::WalkSkeletonForTests();
  out[1].mutable_register_clip()->set_id("walk");
  out[1].mutable_register_clip()->set_skeleton_id("cmu");
  *out[1].mutable_register_clip()->mutable_clip() = clip;
  out[2].mutable_register_rig()->set_id("player");
  out[2].mutable_register_rig()->set_skeleton_id("cmu");
  out[2]
      .mutable_register_rig()
      ->add_ops()
      ->mutable_sample_clip()
      ->mutable_sample()
      ->set_clip("walk");
  out[3].mutable_register_character()->set_id("hero");
  out[3].mutable_register_character()->set_rig_id("player");
  return out;
}

void Register(Session& session, const v1::Clip& clip) {
  for (const v1::SessionRequest& r : Registrations(clip)) {
    v1::SessionResponse response;
    session.Handle(r, &response);
    ASSERT_EQ(response.registered().status().code(), 0)
        << response.registered().status().message();
  }
}

// The answer to one frame sampling the clip at `time`.
std::string FrameAnswer(Session& session, uint64_t sequence, float time) {
  v1::SessionRequest r;
  r.mutable_frame()->set_sequence(sequence);
  v1::CharacterFrame* c = r.mutable_frame()->add_characters();
  c->set_character_id("hero");
  v1::OpUpdate* update = c->add_op_updates();
  update->set_op(0);
  update->set_time(time);
  v1::SessionResponse response;
  session.Handle(r, &response);
  EXPECT_EQ(response.frame().characters(0).status().code(), 0)
      << response.frame().characters(0).status().message();
  return response.SerializeAsString();
}

TEST(ClipCache, SessionsShareAClipEqualBitForBitAndAnswerAsWithTheirOwn) {
  const ServerConfig config;
  const v1::Clip walk = ServiceTest::WalkClipForTests();
  // One translation key's last bit flipped: a different clip.
  v1::Clip nudged = walk;
  v1::Track* track = nullptr;
  for (v1::JointTracks& j : *nudged.mutable_joints()) {
    if (j.translation().values_size() > 0) {
      track = j.mutable_translation();
      break;
    }
  }
  ASSERT_NE(track, nullptr);
  float value = track->values(0);
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  bits ^= 1u;
  std::memcpy(&value, &bits, sizeof(bits));
  track->set_values(0, value);

  SessionShared shared(config.skeleton_cache_size);
  const ClipCache& cache = shared.clips;
  auto a = std::make_unique<Session>(config, nullptr, &shared);
  auto b = std::make_unique<Session>(config, nullptr, &shared);
  auto c = std::make_unique<Session>(config, nullptr, &shared);
  Session alone(config);  // its own copy
  Register(*a, walk);
  Register(*b, walk);
  EXPECT_EQ(cache.size(), 1);
  Register(*c, nudged);
  EXPECT_EQ(cache.size(), 2);
  Register(alone, walk);
  EXPECT_EQ(cache.size(), 2);

  for (int f = 0; f < 40; ++f) {
    const float time = 0.037f * static_cast<float>(f);
    const std::string own = FrameAnswer(alone, f + 1, time);
    EXPECT_EQ(FrameAnswer(*a, f + 1, time), own) << "frame " << f;
    EXPECT_EQ(FrameAnswer(*b, f + 1, time), own) << "frame " << f;
  }

  a.reset();
  EXPECT_EQ(cache.size(), 2);  // b still holds the walk
  b.reset();
  EXPECT_EQ(cache.size(), 1);
  c.reset();
  EXPECT_EQ(cache.size(), 0);
  // A later session registers it afresh.
  Session d(config, nullptr, &shared);
  Register(d, walk);
  EXPECT_EQ(cache.size(), 1);
}

TEST(SessionShared, EqualSkeletonsAndRigsAreOneButARigNamingItsSessionsOwn) {
  const ServerConfig config;
  SessionShared shared(config.skeleton_cache_size);
  const v1::Clip walk = ServiceTest::WalkClipForTests();
  Session a(config, nullptr, &shared);
  Session b(config, nullptr, &shared);
  Session alone(config);
  Register(a, walk);
  Register(b, walk);
  Register(alone, walk);
  EXPECT_EQ(shared.skeletons.size(), 1);
  EXPECT_EQ(shared.skeletons.plans().size(), 1);

  // A plausibility rig on a limit set of session a's own: compiled for a
  // alone, and working.
  v1::SessionRequest limits;
  limits.mutable_register_limits()->set_id("learnt");
  limits.mutable_register_limits()->set_skeleton_id("cmu");
  limits.mutable_register_limits()->add_learn_from_clips("walk");
  v1::SessionRequest rig;
  rig.mutable_register_rig()->set_id("referee");
  rig.mutable_register_rig()->set_skeleton_id("cmu");
  rig.mutable_register_rig()->add_ops()->mutable_plausibility()->set_limits_id(
      "learnt");
  v1::SessionRequest character;
  character.mutable_register_character()->set_id("suspect");
  character.mutable_register_character()->set_rig_id("referee");
  auto code = [](Session& s, const v1::SessionRequest& r) {
    v1::SessionResponse response;
    s.Handle(r, &response);
    EXPECT_EQ(response.registered().status().code(), 0)
        << response.registered().status().message();
    return response.registered().status().code();
  };
  for (Session* s : {&a, &alone}) {
    for (const v1::SessionRequest* r : {&limits, &rig, &character}) {
      ASSERT_EQ(code(*s, *r), 0);
    }
  }
  EXPECT_EQ(shared.skeletons.plans().size(), 1);
  // Session b has no limit set "learnt": its rig is refused, as a session's
  // own would be, not served the plan a compiled.
  v1::SessionResponse refused;
  b.Handle(rig, &refused);
  EXPECT_EQ(refused.registered().status().code(),
            static_cast<int>(absl::StatusCode::kNotFound))
      << refused.registered().status().message();

  // Frames on shared and own rigs answer alike.
  for (int f = 0; f < 10; ++f) {
    v1::SessionRequest r;
    r.mutable_frame()->set_sequence(f + 1);
    r.mutable_frame()->set_dt(1.0f / 60.0f);
    v1::CharacterFrame* c = r.mutable_frame()->add_characters();
    c->set_character_id("suspect");
    PoseToProto(SampleWalk(0.1f * static_cast<float>(f)), c->mutable_pose());
    c = r.mutable_frame()->add_characters();
    c->set_character_id("hero");
    v1::OpUpdate* update = c->add_op_updates();
    update->set_op(0);
    update->set_time(0.1f * static_cast<float>(f));
    v1::SessionResponse mine, own;
    a.Handle(r, &mine);
    alone.Handle(r, &own);
    ASSERT_EQ(mine.frame().characters(0).status().code(), 0)
        << mine.frame().characters(0).status().message();
    EXPECT_EQ(mine.SerializeAsString(), own.SerializeAsString())
        << "frame " << f;
  }
}

}  // namespace session_shared_test
}  // namespace posewire::server
