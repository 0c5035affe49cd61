// Sessions share registered clips by content (ClipCache): the same clip
// registered by several sessions is one copy of its keys, a clip that
// differs in a single key bit is its own, frames sample the shared copy
// exactly as a session's own, and a clip goes when its last session does.
#include "server/service/clip_cache.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "server/service/session.h"
#include "tests/service/service_fixture.h"

namespace posewire::server {
namespace clip_cache_test {

std::vector<v1::SessionRequest> Registrations(const v1::Clip& clip) {
  std::vector<v1::SessionRequest> out(4);
  out[0].mutable_register_skeleton()->set_id("cmu");
  SkeletonToProto(Walk().skeleton,
                  out[0].mutable_register_skeleton()->mutable_skeleton());
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

v1::Clip WalkClip() {
  v1::Clip proto;
  ClipToProto(Walk().clips.at(0), &proto);
  return proto;
}

TEST(ClipCache, SessionsShareAClipEqualBitForBitAndAnswerAsWithTheirOwn) {
  const ServerConfig config;
  const v1::Clip walk = WalkClip();
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

  ClipCache cache;
  auto a = std::make_unique<Session>(config, nullptr, &cache);
  auto b = std::make_unique<Session>(config, nullptr, &cache);
  auto c = std::make_unique<Session>(config, nullptr, &cache);
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
  Session d(config, nullptr, &cache);
  Register(d, walk);
  EXPECT_EQ(cache.size(), 1);
}

}  // namespace clip_cache_test
}  // namespace posewire::server
