// Replays the recorded requests (tests/data/golden, see golden_io.h) against
// a real server and requires every answer to match the recording bit for
// bit: poses, model poses, op results, warnings, states and hashes.
#include <string>
#include <vector>

#include "google/protobuf/util/message_differencer.h"
#include "tests/service/golden/golden_io.h"
#include "tests/service/service_fixture.h"

namespace posewire::server {
namespace {

using golden::CanonicalBytes;
using golden::Record;
using golden::RecordKind;

std::vector<Record> LoadRecording(const std::string& name) {
  std::string bytes;
  std::vector<Record> records;
  const std::string path =
      std::string(POSEWIRE_TEST_DATA_DIR) + "/golden/" + name;
  EXPECT_TRUE(golden::ReadFile(path, &bytes)) << "cannot read " << path;
  EXPECT_TRUE(golden::DecodeRecords(bytes, &records)) << path << " is damaged";
  return records;
}

// Where two answers differ, in words, for the failure message.
template <typename Message>
std::string Difference(const std::string& recorded, const Message& actual) {
  Message expected;
  expected.ParseFromString(recorded);
  std::string report;
  google::protobuf::util::MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&report);
  if (differencer.Compare(expected, actual)) {
    return "equal as values, different in bits (a float's sign of zero or "
           "NaN payload)";
  }
  return report.substr(0, 4000);
}

class GoldenReplayTest : public ServiceTest {};

TEST_F(GoldenReplayTest, SolveAnswersMatchTheRecordingBitForBit) {
  const std::vector<Record> records = LoadRecording("solve.rec");
  ASSERT_GT(records.size(), 40u);
  int compared = 0;
  for (size_t i = 0; i + 1 < records.size(); i += 2) {
    ASSERT_EQ(records[i].kind, RecordKind::kSolveRequest);
    ASSERT_EQ(records[i + 1].kind, RecordKind::kSolveResponse);
    v1::SolveRequest request;
    ASSERT_TRUE(request.ParseFromString(records[i].bytes));
    grpc::ClientContext context;
    v1::SolveResponse response;
    const grpc::Status status = stub_->Solve(&context, request, &response);
    ASSERT_TRUE(status.ok())
        << "request " << i / 2 << ": " << status.error_message();
    EXPECT_TRUE(CanonicalBytes(response) == records[i + 1].bytes)
        << "request " << i / 2 << ": "
        << Difference(records[i + 1].bytes, response);
    ++compared;
  }
  EXPECT_EQ(compared * 2, static_cast<int>(records.size()));
}

TEST_F(GoldenReplayTest, SessionAnswersMatchTheRecordingBitForBit) {
  const std::vector<Record> records = LoadRecording("session.rec");
  ASSERT_GT(records.size(), 40u);
  std::unique_ptr<grpc::ClientContext> context;
  std::unique_ptr<SessionStream> stream;
  auto finish = [&] {
    if (stream == nullptr) return;
    stream->WritesDone();
    const grpc::Status status = stream->Finish();
    EXPECT_TRUE(status.ok()) << status.error_message();
  };
  int frames = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    if (records[i].kind == RecordKind::kStreamStart) {
      finish();
      context = std::make_unique<grpc::ClientContext>();
      stream = stub_->Session(context.get());
      continue;
    }
    ASSERT_NE(stream, nullptr);
    ASSERT_EQ(records[i].kind, RecordKind::kSessionRequest);
    ASSERT_LT(i + 1, records.size());
    ASSERT_EQ(records[i + 1].kind, RecordKind::kSessionResponse);
    v1::SessionRequest request;
    ASSERT_TRUE(request.ParseFromString(records[i].bytes));
    const v1::SessionResponse response = RoundTrip(*stream, request);
    EXPECT_TRUE(CanonicalBytes(response) == records[i + 1].bytes)
        << "message " << i / 2 << ": "
        << Difference(records[i + 1].bytes, response);
    frames += request.has_frame();
    ++i;
  }
  finish();
  EXPECT_GT(frames, 20);
}

}  // namespace
}  // namespace posewire::server
