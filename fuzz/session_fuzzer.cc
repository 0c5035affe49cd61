// libFuzzer target: arbitrary bytes as one Session stream, fed to
// server::Session the way PoseWireService's SessionReactor does: one
// SessionRequest at a time, each answered before the next is read.
//
// Input format (fuzz/session_input.h): a sequence of messages, each a
// varint byte length followed by a serialised SessionRequest. A length that
// overruns the input, or bytes that do not parse, end the input: the
// reactor answers unparseable bytes itself, before Session::Handle, and the
// bad-input catalogue tests that answer over real gRPC.
//
// Every message must get exactly one answer of the matching kind (a frame
// its FrameResult with the same sequence, anything else a Registered) and a
// solved character a whole, finite pose (fuzz/wire_checks.h). Per-message
// errors are fine; a crash, a leak, undefined behaviour or a hang is not.
#include <cstddef>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "fuzz/session_input.h"
#include "fuzz/wire_checks.h"
#include "google/protobuf/stubs/logging.h"
#include "posewire/v1/posewire.pb.h"
#include "server/service/server_config.h"
#include "server/service/session.h"

// Protobuf logs every string field with invalid UTF-8 it parses; on
// mutated bytes that is most inputs, and the log would drown the fuzzer's.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const posewire::server::ServerConfig config;  // the server's defaults
  posewire::server::Session session(config);
  posewire::fuzz::SessionInputReader reader(data, size);
  posewire::v1::SessionRequest request;
  posewire::v1::SessionResponse response;
  while (reader.Next(&request)) {
    response.Clear();
    session.Handle(request, &response);
    if (!posewire::fuzz::AnsweredInKind(request, response)) __builtin_trap();
    if (request.has_frame()) {
      for (const auto& character : response.frame().characters()) {
        if (character.status().code() != 0) continue;
        posewire::fuzz::CheckSolvedPose(
            character.pose(),
            absl::StrCat("character '", character.character_id(), "' pose"));
        if (character.has_model_pose()) {
          posewire::fuzz::CheckSolvedPose(
              character.model_pose(),
              absl::StrCat("character '", character.character_id(),
                           "' model_pose"));
        }
      }
    }
    posewire::fuzz::CheckSerialises(response);
  }
  return 0;
}
