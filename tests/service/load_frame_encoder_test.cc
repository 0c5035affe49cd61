// posewire-load's own code: FrameEncoder's bytes for a frame and a sequence
// number must parse to exactly that frame with that sequence (the load
// generator's real workloads, sequence numbers of every varint length, and
// the tick time of timed frames); the workload's op-update frames must
// solve exactly as its whole-ops frames; the referee's ticks must be
// answered OK with hits; AnswerReceipt must read real answers' statuses as
// a full parse does.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "clients/load/answer_receipt.h"
#include "clients/load/frame_encoder.h"
#include "clients/load/phase.h"
#include "clients/load/workload.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/util/message_differencer.h"
#include "server/service/session.h"
#include "tests/service/service_fixture.h"

namespace posewire::load {
namespace {

TEST(FrameEncoder, BytesParseToTheFrameWithThatSequence) {
  for (const char* mix : {"fk_ik", "spring", "blend3", "fullbody"}) {
    SCOPED_TRACE(mix);
    auto workload = BuildWorkload(
        server::Walk(), WorkloadOptions{.op_mix = mix, .characters = 3});
    ASSERT_TRUE(workload.ok()) << workload.status();
    ASSERT_FALSE(workload->frames.empty());
    for (const v1::SessionRequest& frame : workload->frames) {
      const FrameEncoder encoder(frame);
      std::string bytes;
      for (uint64_t sequence :
           {uint64_t{0}, uint64_t{1}, uint64_t{127}, uint64_t{128},
            uint64_t{1} << 35, std::numeric_limits<uint64_t>::max()}) {
        encoder.Encode(sequence, &bytes);
        v1::SessionRequest parsed;
        ASSERT_TRUE(parsed.ParseFromString(bytes)) << sequence;
        v1::SessionRequest expected = frame;
        expected.mutable_frame()->set_sequence(sequence);
        EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(
            parsed, expected))
            << "sequence " << sequence;
      }
    }
  }
}

TEST(FrameEncoder, TimedFramesCarryTheirTickTime) {
  auto workload = BuildWorkload(
      server::Walk(), WorkloadOptions{.op_mix = "referee", .characters = 2});
  ASSERT_TRUE(workload.ok()) << workload.status();
  ASSERT_GT(workload->seconds_per_frame, 0.0);
  const FrameEncoder encoder(workload->frames[0], workload->seconds_per_frame);
  std::string bytes;
  for (uint64_t sequence : {uint64_t{1}, uint64_t{200}, uint64_t{1} << 40}) {
    encoder.Encode(sequence, &bytes);
    v1::SessionRequest parsed;
    ASSERT_TRUE(parsed.ParseFromString(bytes));
    v1::SessionRequest expected = workload->frames[0];
    expected.mutable_frame()->set_sequence(sequence);
    expected.mutable_frame()->set_time(
        TickTime(sequence, workload->seconds_per_frame));
    EXPECT_TRUE(
        google::protobuf::util::MessageDifferencer::Equals(parsed, expected))
        << "sequence " << sequence;
  }
}

// Every frame of `workload` through one in-process Session, in order,
// after its registrations.
std::vector<v1::SessionResponse> Solve(const Workload& workload) {
  const server::ServerConfig config;  // the session keeps a reference
  server::Session session(config);
  for (const v1::SessionRequest& r : workload.registrations) {
    v1::SessionResponse response;
    session.Handle(r, &response);
    EXPECT_EQ(response.registered().status().code(), 0)
        << response.registered().status().message();
  }
  std::vector<v1::SessionResponse> answers;
  uint64_t sequence = 0;
  for (v1::SessionRequest frame : workload.frames) {
    frame.mutable_frame()->set_sequence(++sequence);
    session.Handle(frame, &answers.emplace_back());
  }
  return answers;
}

TEST(Workload, OpUpdateFramesSolveExactlyAsWholeOpsFrames) {
  for (const char* mix : {"fk_ik", "spring"}) {
    SCOPED_TRACE(mix);
    WorkloadOptions options{.op_mix = mix, .characters = 3};
    options.op_updates = true;
    auto updates = BuildWorkload(server::Walk(), options);
    options.op_updates = false;
    auto whole = BuildWorkload(server::Walk(), options);
    ASSERT_TRUE(updates.ok()) << updates.status();
    ASSERT_TRUE(whole.ok()) << whole.status();
    // The frames really differ: updates only, against whole pipelines.
    const v1::CharacterFrame& first = updates->frames[0].frame().characters(0);
    EXPECT_TRUE(first.ops().empty());
    EXPECT_FALSE(first.op_updates().empty());
    EXPECT_FALSE(whole->frames[0].frame().characters(0).ops().empty());

    const std::vector<v1::SessionResponse> a = Solve(*updates);
    const std::vector<v1::SessionResponse> b = Solve(*whole);
    ASSERT_EQ(a.size(), b.size());
    for (size_t f = 0; f < a.size(); ++f) {
      for (const v1::CharacterResult& c : a[f].frame().characters()) {
        ASSERT_EQ(c.status().code(), 0) << c.status().message();
        ASSERT_GT(c.pose().transforms_size(), 0);
      }
      EXPECT_EQ(a[f].SerializeAsString(), b[f].SerializeAsString())
          << "frame " << f;
    }
  }
}

// The referee's ticks as posewire-load sends them (timed frames, each
// followed by its hit query) through an in-process Session: every frame
// and query is answered OK, the honest claims validate, and the rays hit
// the characters they aim at.
TEST(Workload, RefereeTicksValidateAndTheirRaysHit) {
  WorkloadOptions options{.op_mix = "referee", .characters = 9};
  options.rays_per_query = 6;
  auto w = BuildWorkload(server::Walk(), options);
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(w->queries.size(), w->frames.size());
  // Enough variants to play the clip through at the tick.
  EXPECT_GE(w->frames.size() * w->seconds_per_frame, 0.5 - 1e-6);

  const server::ServerConfig config;
  server::Session session(config);
  for (const v1::SessionRequest& r : w->registrations) {
    v1::SessionResponse response;
    session.Handle(r, &response);
    ASSERT_EQ(response.registered().status().code(), 0)
        << response.registered().status().message();
  }
  int hits = 0, rays = 0, plausible = 0, checked = 0;
  const uint64_t ticks = 2 * w->frames.size();
  for (uint64_t sequence = 1; sequence <= ticks; ++sequence) {
    const size_t v = (sequence - 1) % w->frames.size();
    v1::SessionRequest frame = w->frames[v];
    frame.mutable_frame()->set_sequence(sequence);
    frame.mutable_frame()->set_time(TickTime(sequence, w->seconds_per_frame));
    v1::SessionResponse answer;
    session.Handle(frame, &answer);
    int64_t ok_characters = 0;
    ASSERT_EQ(FrameCode(answer, &ok_characters), 0)
        << answer.frame().status().message();
    ASSERT_EQ(ok_characters, 9);
    for (const v1::CharacterResult& c : answer.frame().characters()) {
      ASSERT_EQ(c.ops_size(), 3);
      // The claim is the clip at the character's time, re-solved the same.
      EXPECT_TRUE(c.ops(2).validation().valid()) << c.character_id();
      plausible += c.ops(0).plausibility().plausible();
      ++checked;
    }
    v1::SessionRequest query = w->queries[v];
    query.mutable_query()->set_time(w->QueryTime(sequence));
    session.Handle(query, &answer);
    ASSERT_EQ(QueryCode(answer), 0) << answer.query().status().message();
    ASSERT_EQ(answer.query().rays_size(), 6);
    for (int k = 0; k < 6; ++k) {
      const v1::RayHit& hit = answer.query().rays(k);
      ++rays;
      if (!hit.hit()) continue;
      ++hits;
      EXPECT_EQ(hit.character_id(),
                absl::StrCat("c", (7 * k + static_cast<int>(v)) % 9));
    }
  }
  // Aimed at the hips as they were: nearly every ray hits, and hits the
  // character it aims at. The clip loops, so a character's pose jumps back
  // once per loop, which plausibility flags; every other frame passes.
  EXPECT_GE(hits, rays * 9 / 10) << hits << " of " << rays;
  EXPECT_GE(plausible, checked * 9 / 10) << plausible << " of " << checked;
  // Queries before the first frame's time + rewind ask at the first frame.
  EXPECT_EQ(w->QueryTime(1), TickTime(1, w->seconds_per_frame));
}

TEST(Workload, RefereeRefusesNegativeRaysAndRewind) {
  for (auto [rays, rewind] : {std::pair{-1, 0.1}, std::pair{32, -0.1}}) {
    WorkloadOptions options{.op_mix = "referee", .characters = 2};
    options.rays_per_query = rays;
    options.rewind_seconds = rewind;
    auto w = BuildWorkload(server::Walk(), options);
    ASSERT_FALSE(w.ok());
    EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(w.status().message()),
                testing::HasSubstr("--op_mix=referee: --rays must be >= 0"));
  }
}

AnswerReceipt Receipt(const v1::SessionResponse& response, bool* read) {
  const std::string bytes = response.SerializeAsString();
  google::protobuf::io::ArrayInputStream in(bytes.data(),
                                            static_cast<int>(bytes.size()));
  AnswerReceipt receipt;
  *read = ReadAnswerReceipt(&in, &receipt);
  return receipt;
}

TEST(AnswerReceipt, ReadsStatusesAndPosesAsAFullParseDoes) {
  auto workload =
      BuildWorkload(server::Walk(), WorkloadOptions{.characters = 4});
  ASSERT_TRUE(workload.ok()) << workload.status();
  std::vector<v1::SessionResponse> answers = Solve(*workload);
  ASSERT_FALSE(answers.empty());
  bool read = false;

  // A real answer: four solved characters with poses, model poses, op
  // results and ids, all skipped but the statuses and poses.
  v1::SessionResponse answer = answers[0];
  AnswerReceipt r = Receipt(answer, &read);
  ASSERT_TRUE(read);
  EXPECT_EQ(r.kind, AnswerReceipt::Kind::kFrame);
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.ok_characters, 4);
  EXPECT_EQ(r.character_code, 0);

  // Characters 1 and 3 failed (with a message to skip), character 2 came
  // back OK without a pose: 1 OK, the first failure's code.
  v1::FrameResult* frame = answer.mutable_frame();
  frame->mutable_characters(1)->mutable_status()->set_code(
      grpc::StatusCode::NOT_FOUND);
  frame->mutable_characters(1)->mutable_status()->set_message("no such");
  frame->mutable_characters(1)->clear_pose();
  frame->mutable_characters(2)->clear_pose();
  frame->mutable_characters(3)->mutable_status()->set_code(
      grpc::StatusCode::INVALID_ARGUMENT);
  r = Receipt(answer, &read);
  ASSERT_TRUE(read);
  EXPECT_EQ(r.ok_characters, 1);
  EXPECT_EQ(r.character_code, grpc::StatusCode::NOT_FOUND);

  // A hit query's answer: its status, nothing else.
  v1::SessionResponse query_answer;
  query_answer.mutable_query()->mutable_status()->set_code(
      grpc::StatusCode::OUT_OF_RANGE);
  query_answer.mutable_query()->add_rays()->set_hit(true);
  r = Receipt(query_answer, &read);
  ASSERT_TRUE(read);
  EXPECT_EQ(r.kind, AnswerReceipt::Kind::kQuery);
  EXPECT_EQ(r.code, grpc::StatusCode::OUT_OF_RANGE);
  EXPECT_EQ(QueryCode(r), grpc::StatusCode::OUT_OF_RANGE);
  // A frame's answer is not a query's.
  EXPECT_EQ(QueryCode(Receipt(answer, &read)), grpc::StatusCode::INTERNAL);
  frame->mutable_characters(1)->clear_status();
  r = Receipt(answer, &read);
  EXPECT_EQ(r.ok_characters, 1);
  EXPECT_EQ(r.character_code, grpc::StatusCode::INTERNAL);  // no pose

  // A failed frame.
  v1::SessionResponse failed;
  failed.mutable_frame()->set_sequence(9);
  failed.mutable_frame()->mutable_status()->set_code(
      grpc::StatusCode::RESOURCE_EXHAUSTED);
  r = Receipt(failed, &read);
  ASSERT_TRUE(read);
  EXPECT_EQ(r.kind, AnswerReceipt::Kind::kFrame);
  EXPECT_EQ(r.code, grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(r.ok_characters, 0);

  // Registrations, OK (status unset) and not.
  v1::SessionResponse registered;
  registered.mutable_registered()->set_kind("rig");
  registered.mutable_registered()->set_id("load");
  r = Receipt(registered, &read);
  ASSERT_TRUE(read);
  EXPECT_EQ(r.kind, AnswerReceipt::Kind::kRegistered);
  EXPECT_EQ(r.code, 0);
  registered.mutable_registered()->mutable_status()->set_code(
      grpc::StatusCode::ALREADY_EXISTS);
  r = Receipt(registered, &read);
  EXPECT_EQ(r.code, grpc::StatusCode::ALREADY_EXISTS);

  // Nothing set, then bytes that are not a message.
  r = Receipt(v1::SessionResponse(), &read);
  ASSERT_TRUE(read);
  EXPECT_EQ(r.kind, AnswerReceipt::Kind::kNone);
  for (const std::string& bad :
       {std::string("\x12\x05\x08", 3),      // frame cut short
        std::string("\x12\x02\x1a\x05", 4),  // character past its frame
        std::string("\xff\xff\xff\xff\xff\xff", 6)}) {
    google::protobuf::io::ArrayInputStream in(bad.data(),
                                              static_cast<int>(bad.size()));
    AnswerReceipt ignored;
    EXPECT_FALSE(ReadAnswerReceipt(&in, &ignored));
  }
}

TEST(AnswerReceipt, ReadsAHandOverAndAResumesAnswer) {
  bool read = false;
  // A periodic snapshot is not a hand-over.
  v1::SessionResponse periodic;
  periodic.mutable_snapshot()->set_data("state");
  periodic.mutable_snapshot()->set_after_sequence(30);
  AnswerReceipt r = Receipt(periodic, &read);
  ASSERT_TRUE(read);
  EXPECT_EQ(r.kind, AnswerReceipt::Kind::kSnapshot);
  EXPECT_EQ(r.snapshot_data, "state");
  EXPECT_EQ(r.snapshot_after, 30u);

  v1::SessionResponse handover = periodic;
  handover.mutable_snapshot()->set_handover(true);
  handover.mutable_snapshot()->set_after_sequence(41);
  r = Receipt(handover, &read);
  ASSERT_TRUE(read);
  EXPECT_EQ(r.kind, AnswerReceipt::Kind::kHandover);
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.snapshot_data, "state");
  EXPECT_EQ(r.snapshot_after, 41u);
  // One that carries no state (a resume was still waiting).
  v1::SessionResponse refused;
  refused.mutable_snapshot()->set_handover(true);
  refused.mutable_snapshot()->mutable_status()->set_code(
      grpc::StatusCode::FAILED_PRECONDITION);
  r = Receipt(refused, &read);
  EXPECT_EQ(r.kind, AnswerReceipt::Kind::kHandover);
  EXPECT_EQ(r.code, grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(r.snapshot_data, "");

  v1::SessionResponse resumed;
  resumed.mutable_resume()->set_after_sequence(41);
  resumed.mutable_resume()->add_missing()->set_kind("skeleton");
  resumed.mutable_resume()->add_missing()->set_kind("rig");
  r = Receipt(resumed, &read);
  ASSERT_TRUE(read);
  EXPECT_EQ(r.kind, AnswerReceipt::Kind::kResumed);
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.missing, 2);
  resumed.mutable_resume()->mutable_status()->set_code(
      grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Receipt(resumed, &read).code, grpc::StatusCode::INVALID_ARGUMENT);
}

}  // namespace
}  // namespace posewire::load
