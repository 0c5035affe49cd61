// libFuzzer target: arbitrary bytes as a unary Solve call's request, decoded
// the way gRPC decodes it (ParseFromArray) and handed to server::Solve, the
// same validate-then-solve function PoseWireService::Solve runs on its
// worker pool, with the server's default limits. No gRPC server is started:
// the transport adds nothing the fuzzer could reach.
//
// Errors (INVALID_ARGUMENT, NOT_FOUND, RESOURCE_EXHAUSTED) are fine; a
// crash, a leak, undefined behaviour, a hang, or an OK answer with a
// truncated or non-finite pose (fuzz/wire_checks.h) is not.
#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "fuzz/wire_checks.h"
#include "google/protobuf/stubs/logging.h"
#include "posewire/v1/posewire.pb.h"
#include "server/service/server_config.h"
#include "server/service/skeleton_cache.h"
#include "server/service/solve.h"

// Protobuf logs every string field with invalid UTF-8 it parses; on
// mutated bytes that is most inputs, and the log would drown the fuzzer's.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using posewire::server::ServerConfig;
  posewire::v1::SolveRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;

  const ServerConfig config;  // the limits posewire-server starts with
  // A fresh cache per input keeps runs reproducible: a character can still
  // name by hash a skeleton sent inline earlier in the same request.
  posewire::server::SkeletonCache skeletons(config.skeleton_cache_size);
  posewire::v1::SolveResponse response;
  const absl::Status status = posewire::server::Solve(
      request, config, skeletons, [] { return absl::OkStatus(); }, &response);
  if (!status.ok()) return 0;

  if (response.characters_size() != request.characters_size()) {
    __builtin_trap();  // an OK answer covers every character
  }
  for (int c = 0; c < response.characters_size(); ++c) {
    const posewire::v1::CharacterOutput& out = response.characters(c);
    posewire::fuzz::CheckSolvedPose(out.pose(),
                                    absl::StrCat("characters[", c, "].pose"));
    if (request.characters(c).want_model_pose()) {
      posewire::fuzz::CheckSolvedPose(
          out.model_pose(), absl::StrCat("characters[", c, "].model_pose"));
    }
  }
  posewire::fuzz::CheckSerialises(response);
  return 0;
}
