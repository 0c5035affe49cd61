// Bad-input catalogue rows: session snapshots and resume. Each resume row
// snapshots the usual session setup after one frame on a stream of its
// own, then sends its bad messages on a new stream; after the refusal the
// new stream must still resume from the good snapshot and solve a frame.
#include "server/service/session_snapshot.h"
#include "tests/service/bad_input/harness.h"

namespace posewire::server::bad_input {
namespace snapshot_rows {

using Messages = std::vector<v1::SessionRequest>;

// The setup's skeleton, clip and rig: what a resume asks to be resent.
Messages Resends(size_t from = 0) {
  const Messages setup = SessionSetup();
  return Messages(setup.begin() + static_cast<std::ptrdiff_t>(from),
                  setup.begin() + 3);
}

v1::SessionRequest ResumeFrom(const std::string& data) {
  v1::SessionRequest request;
  request.mutable_resume()->set_snapshot(data);
  return request;
}

// The snapshot of the setup after frame 1, or an error outcome.
Outcome TakeSnapshot(v1::PoseWire::Stub& stub, std::string* data) {
  grpc::ClientContext context;
  context.set_deadline(Deadline());
  std::unique_ptr<Stream> stream = stub.Session(&context);
  Messages messages = SessionSetup();
  messages.push_back(FrameFor(1, "hero"));
  messages.emplace_back().mutable_snapshot();
  v1::SessionResponse response;
  for (const v1::SessionRequest& m : messages) {
    if (!stream->Write(m) || !stream->Read(&response)) {
      return FromStatus(stream->Finish());
    }
    if (Outcome o = FromResponse(response); o.code != StatusCode::OK) {
      return {StatusCode::UNKNOWN,
              "the snapshot's session failed: " + o.message};
    }
  }
  *data = response.snapshot().data();
  stream->WritesDone();
  return FromStatus(stream->Finish());
}

// Sends `messages`; the answer to the last one, every other one must be OK.
Outcome Send(Stream& stream, const Messages& messages, bool all_ok) {
  Outcome last;
  for (size_t i = 0; i < messages.size(); ++i) {
    v1::SessionResponse response;
    if (!stream.Write(messages[i]) || !stream.Read(&response)) {
      return {StatusCode::UNKNOWN, "the stream broke"};
    }
    last = FromResponse(response);
    if ((all_ok || i + 1 < messages.size()) && last.code != StatusCode::OK) {
      return {StatusCode::UNKNOWN,
              absl::StrCat("message ", i, " failed: ", last.message)};
    }
  }
  return last;
}

// A resume from `data` and every resend it asks for.
Messages ResumeAndResend(const std::string& data) {
  Messages m{ResumeFrom(data)};
  for (const v1::SessionRequest& r : Resends()) m.push_back(r);
  return m;
}

// `bad` (given the good snapshot) on a new stream, then `recover` and a
// frame, which must be solved.
BadInput ResumeRow(std::string name, std::string input,
                   std::function<Messages(const std::string&)> bad,
                   std::function<Messages(const std::string&)> recover,
                   grpc::StatusCode code, std::string message) {
  return {
      std::move(name), std::move(input),
      [bad = std::move(bad),
       recover = std::move(recover)](v1::PoseWire::Stub& stub) {
        std::string data;
        if (Outcome o = TakeSnapshot(stub, &data); o.code != StatusCode::OK) {
          return o;
        }
        grpc::ClientContext context;
        context.set_deadline(Deadline());
        std::unique_ptr<Stream> stream = stub.Session(&context);
        const Outcome outcome = Send(*stream, bad(data), false);
        Messages after = recover(data);
        after.push_back(FrameFor(2, "hero"));
        if (Outcome o = Send(*stream, after, true); o.code != StatusCode::OK) {
          return Outcome{StatusCode::UNKNOWN,
                         "the stream did not resume after the bad "
                         "message: " +
                             o.message};
        }
        stream->WritesDone();
        if (grpc::Status s = stream->Finish(); !s.ok()) {
          return Outcome{StatusCode::UNKNOWN, s.error_message()};
        }
        return outcome;
      },
      code, std::move(message)};
}

// A resume from `data` edited by `edit`; recovering resumes from the
// good snapshot.
BadInput BadSnapshotRow(std::string name, std::string input,
                        std::function<void(std::string&)> edit,
                        grpc::StatusCode code, std::string message) {
  return ResumeRow(
      std::move(name), std::move(input),
      [edit = std::move(edit)](const std::string& data) {
        std::string bad = data;
        edit(bad);
        return Messages{ResumeFrom(bad)};
      },
      ResumeAndResend, code, std::move(message));
}

// A good resume, the resends before `index`, then resend `index` edited.
BadInput BadResendRow(std::string name, std::string input, size_t index,
                      std::function<void(v1::SessionRequest&)> edit,
                      grpc::StatusCode code, std::string message) {
  return ResumeRow(
      std::move(name), std::move(input),
      [index, edit = std::move(edit)](const std::string& data) {
        Messages m{ResumeFrom(data)};
        const Messages resends = Resends();
        m.insert(m.end(), resends.begin(),
                 resends.begin() + static_cast<std::ptrdiff_t>(index));
        v1::SessionRequest bad = resends[index];
        edit(bad);
        m.push_back(bad);
        return m;
      },
      [index](const std::string&) { return Resends(index); }, code,
      std::move(message));
}

}  // namespace snapshot_rows

std::vector<BadInput> SnapshotRows() {
  using snapshot_rows::BadResendRow;
  using snapshot_rows::BadSnapshotRow;
  using snapshot_rows::Messages;
  using snapshot_rows::ResumeFrom;
  using snapshot_rows::ResumeRow;
  std::vector<BadInput> rows;
  auto add = [&rows](BadInput row) { rows.push_back(std::move(row)); };

  add(BadSnapshotRow(
      "resume_truncated_snapshot", "a snapshot missing its last byte",
      [](std::string& data) { data.pop_back(); }, StatusCode::INVALID_ARGUMENT,
      "resume.snapshot: the checksum does not match"));
  add(BadSnapshotRow(
      "resume_tampered_snapshot", "a snapshot with one bit flipped",
      [](std::string& data) { data[data.size() / 2] ^= 1; },
      StatusCode::INVALID_ARGUMENT,
      "resume.snapshot: the checksum does not match"));
  add(BadSnapshotRow(
      "resume_newer_snapshot", "a snapshot of format version 2",
      [](std::string& data) { data[4] = 2; }, StatusCode::FAILED_PRECONDITION,
      "resume.snapshot: snapshot format version 2 is newer than this "
      "server's 1"));
  add(BadSnapshotRow(
      "resume_not_a_snapshot", "ResumeSession.snapshot 'hello'",
      [](std::string& data) { data = "hello"; }, StatusCode::INVALID_ARGUMENT,
      "resume.snapshot: 5 bytes are not a posewire session snapshot"));
  add(BadSnapshotRow(
      "resume_snapshot_too_large", "a snapshot of 2 MiB + 1 (limit 2 MiB)",
      [](std::string& data) { data.resize((kMaxMessageBytes / 2) + 1); },
      StatusCode::RESOURCE_EXHAUSTED,
      "resume.snapshot: 2097153 bytes exceed this server's limit of 2097152"));
  add(BadResendRow(
      "resume_other_skeleton", "resend skeleton 'cmu' with another rest pose",
      0,
      [](v1::SessionRequest& r) {
        r.mutable_register_skeleton()->mutable_skeleton()->set_rest_pose(kTx,
                                                                         1.0f);
      },
      StatusCode::INVALID_ARGUMENT,
      "register_skeleton: skeleton 'cmu' is not the one the snapshot was "
      "taken with"));
  add(BadResendRow(
      "resume_other_rig", "resend rig 'player' sampling another time", 2,
      [](v1::SessionRequest& r) {
        r.mutable_register_rig()
            ->mutable_ops(0)
            ->mutable_sample_clip()
            ->mutable_sample()
            ->set_time(0.75f);
      },
      StatusCode::INVALID_ARGUMENT,
      "register_rig: rig 'player' is not the one the snapshot was taken "
      "with"));
  add(ResumeRow(
      "resume_frame_before_resends", "a frame before the resends",
      [](const std::string& data) {
        return Messages{ResumeFrom(data), FrameFor(2, "hero")};
      },
      [](const std::string&) { return snapshot_rows::Resends(); },
      StatusCode::FAILED_PRECONDITION,
      "frame: this session is resuming and still waits for 3 registrations "
      "(next: skeleton 'cmu')"));
  add(ResumeRow(
      "resume_unlisted_registration",
      "register character 'hero' before the resends (the snapshot holds it)",
      [](const std::string& data) {
        return Messages{ResumeFrom(data), SessionSetup()[3]};
      },
      [](const std::string&) { return snapshot_rows::Resends(); },
      StatusCode::FAILED_PRECONDITION,
      "register_character.id: character 'hero' is not one this resuming "
      "session waits for"));
  add(ResumeRow(
      "resume_history_of_another_skeleton",
      "a resealed snapshot whose character has a one-joint pose history",
      [](const std::string& data) {
        absl::StatusOr<v1::SnapshotContent> content =
            OpenSnapshot(data, {}, 1 << 30, "snapshot");
        v1::HistoryFrame* frame = content->mutable_characters(0)->add_history();
        PoseToProto(std::vector<Transform>(1, Transform::Identity()),
                    frame->mutable_root());
        PoseToProto(std::vector<Transform>(1, Transform::Identity()),
                    frame->mutable_model());
        return snapshot_rows::ResumeAndResend(SealSnapshot(*content, {}));
      },
      snapshot_rows::ResumeAndResend, StatusCode::INVALID_ARGUMENT,
      "resume.snapshot.characters[0].history[0]: 1 root and 1 model "
      "transforms for a skeleton of 31 joints (expected 1 and 31); the "
      "stream is empty again, as new"));
  add(SessionRow(
      "resume_not_first", "a resume after the session's registrations",
      [] { return Messages{ResumeFrom("anything")}; },
      StatusCode::FAILED_PRECONDITION,
      "resume: must come before any registration or frame of a stream"));
  return rows;
}

}  // namespace posewire::server::bad_input
