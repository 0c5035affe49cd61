// Bad-input catalogue rows: The transport: truncation, cancellation, oversized
// and raw bytes.
#include "tests/service/bad_input/harness.h"

namespace posewire::server::bad_input {

std::vector<BadInput> TransportRows(std::shared_ptr<grpc::Channel> channel) {
  std::vector<BadInput> rows;
  auto add = [&rows](BadInput row) { rows.push_back(std::move(row)); };

  // ---- the transport: truncation, cancellation, oversized and raw bytes
  add({"stream_writes_done_mid_sequence",
       "4 registrations written without reading, then WritesDone (no frame)",
       [](v1::PoseWire::Stub& stub) -> Outcome {
         grpc::ClientContext context;
         context.set_deadline(Deadline());
         auto stream = stub.Session(&context);
         const std::vector<v1::SessionRequest> setup = SessionSetup();
         for (const v1::SessionRequest& r : setup) stream->Write(r);
         stream->WritesDone();
         v1::SessionResponse response;
         size_t answered = 0;
         while (stream->Read(&response)) {
           if (FromResponse(response).code == StatusCode::OK) ++answered;
         }
         Outcome outcome = FromStatus(stream->Finish());
         if (answered != setup.size()) {
           outcome.message = absl::StrCat("answered ", answered, " of ",
                                          setup.size(), "; ", outcome.message);
         }
         return outcome;
       },
       StatusCode::OK, ""});
  add({"stream_empty", "a Session that sends nothing and closes",
       [](v1::PoseWire::Stub& stub) {
         grpc::ClientContext context;
         context.set_deadline(Deadline());
         auto stream = stub.Session(&context);
         stream->WritesDone();
         return FromStatus(stream->Finish());
       },
       StatusCode::OK, ""});
  add({"stream_cancelled_mid_sequence",
       "registrations, then the client cancels before the frame",
       [](v1::PoseWire::Stub& stub) {
         grpc::ClientContext context;
         context.set_deadline(Deadline());
         auto stream = stub.Session(&context);
         v1::SessionResponse response;
         for (const v1::SessionRequest& r : SessionSetup()) {
           stream->Write(r);
           stream->Read(&response);
         }
         stream->Write(FrameFor(1, "hero"));
         context.TryCancel();
         while (stream->Read(&response)) {
         }
         return FromStatus(stream->Finish());
       },
       StatusCode::CANCELLED, "CANCELLED"});
  add({"stream_oversized_message",
       "a Session frame of 5 MB (limit 4 MiB): the stream ends",
       [](v1::PoseWire::Stub& stub) {
         grpc::ClientContext context;
         context.set_deadline(Deadline());
         auto stream = stub.Session(&context);
         v1::SessionRequest r = FrameFor(1, "hero");
         FrameCharacter(r).mutable_pose()->mutable_transforms()->Resize(5 << 18,
                                                                        1.0f);
         stream->Write(r);
         v1::SessionResponse response;
         while (stream->Read(&response)) {
         }
         return FromStatus(stream->Finish());
       },
       StatusCode::RESOURCE_EXHAUSTED, "larger than max"});
  add(SolveRow(
      "solve_oversized_message",
      "1,000,000 joints with a full rest pose (40 MB; limit 4 MiB)",
      [](auto& r) { HeroSkeleton(r) = ChainSkeleton(1000000, true); },
      StatusCode::RESOURCE_EXHAUSTED, "larger than max"));
  // Raw bytes, not messages: the service parses requests itself
  // (posewire_service.h), so bytes that are not a message get a status
  // that says so, and a session answers them and goes on.
  add({"solve_truncated_bytes", "a well-formed SolveRequest cut off mid-field",
       [channel](v1::PoseWire::Stub&) {
         std::string bytes = BaseSolve().SerializeAsString();
         bytes.resize(bytes.size() - 7);
         return CallRaw(channel, "/posewire.v1.PoseWire/Solve", bytes);
       },
       StatusCode::INVALID_ARGUMENT,
       "do not parse as posewire.v1.SolveRequest"});
  add({"solve_garbage_bytes", "a SolveRequest of bytes that are not protobuf",
       [channel](v1::PoseWire::Stub&) {
         return CallRaw(channel, "/posewire.v1.PoseWire/Solve",
                        std::string("\xff\xff\xff\xff\xff\xff", 6));
       },
       StatusCode::INVALID_ARGUMENT,
       "request's 6 bytes do not parse as posewire.v1.SolveRequest"});
  add({"learn_limits_garbage_bytes",
       "a LearnLimitsRequest of bytes that are not protobuf",
       [channel](v1::PoseWire::Stub&) {
         return CallRaw(channel, "/posewire.v1.PoseWire/LearnLimits",
                        std::string("\xff\xff\xff\xff\xff", 5));
       },
       StatusCode::INVALID_ARGUMENT,
       "request's 5 bytes do not parse as posewire.v1.LearnLimitsRequest"});
  add({"query_garbage_bytes", "a QueryRequest of bytes that are not protobuf",
       [channel](v1::PoseWire::Stub&) {
         return CallRaw(channel, "/posewire.v1.PoseWire/Query",
                        std::string("\xff\xff\xff\xff\xff", 5));
       },
       StatusCode::INVALID_ARGUMENT,
       "request's 5 bytes do not parse as posewire.v1.QueryRequest"});
  // A server-streaming call refused before its first message answers a
  // one-message call with its status alone.
  add({"bake_garbage_bytes", "a BakeRequest of bytes that are not protobuf",
       [channel](v1::PoseWire::Stub&) {
         return CallRaw(channel, "/posewire.v1.PoseWire/Bake",
                        std::string("\xff\xff\xff\xff\xff", 5));
       },
       StatusCode::INVALID_ARGUMENT,
       "request's 5 bytes do not parse as posewire.v1.BakeRequest"});
  add({"session_garbage_bytes",
       "a Session message of bytes that are not protobuf, after a valid one",
       [channel](v1::PoseWire::Stub&) {
         return RawSession(channel, std::string("\xff\xff\xff\xff", 4));
       },
       StatusCode::INVALID_ARGUMENT,
       "message 2 of this stream (4 bytes) does not parse as "
       "posewire.v1.SessionRequest"});
  return rows;
}

}  // namespace posewire::server::bad_input
