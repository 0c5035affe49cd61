// posewire: command-line client of a posewire server, and an asset inspector.
//
//   posewire info    [--server=HOST:PORT]   version, revision, limits and
//                                           operations
//   posewire health  [--server=HOST:PORT]   grpc.health.v1 check; exit 0 if
//                                           SERVING
//   posewire inspect FILE                   joints, hierarchy and clips of a
//                                           .bvh, .gltf or .glb file
//   posewire solve   FILE [flags]           one Solve of the file's pose:
//                                           clip sample + --ops_json ops,
//                                           printed as JSON or written as BVH
//   posewire stream  FILE [flags]           a Session playing the clip for
//                                           K characters; per-frame latency
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "clients/cli/inspect.h"
#include "clients/cli/solve_command.h"
#include "clients/cli/stream_command.h"
#include "clients/cpp/posewire_client.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "posewire/v1/posewire.grpc.pb.h"
#include "solver_core/io/asset_reader.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051",
          "posewire server, HOST:PORT.");
ABSL_FLAG(absl::Duration, timeout, absl::Seconds(5), "Deadline of each call.");
ABSL_FLAG(std::string, service, "posewire.v1.PoseWire",
          "Service name `health` asks about (\"\" for the whole server).");

// solve and stream.
ABSL_FLAG(std::string, clip, "",
          "solve, stream: clip to play, by name (default: the file's first).");
ABSL_FLAG(std::string, ops_json, "",
          "solve, stream: JSON file with an array of posewire.v1.Operation "
          "(protobuf JSON mapping) applied after the clip sample.");
// solve.
ABSL_FLAG(std::string, time, "",
          "solve: clip time in seconds (default 0; clamped to the clip "
          "unless --loop).");
ABSL_FLAG(std::string, frame, "",
          "solve: clip frame (key index) instead of --time.");
ABSL_FLAG(bool, loop, false, "solve: wrap --time into the clip (loop).");
ABSL_FLAG(double, dt, -1.0,
          "solve: seconds stateful ops advance (default 0); stream: "
          "animation seconds per frame (default 1/rate, or 1/60).");
ABSL_FLAG(std::string, format, "json", "solve: output format, json or bvh.");
ABSL_FLAG(std::string, out, "", "solve: output file (default: stdout).");
ABSL_FLAG(bool, model_pose, false,
          "solve: also print the model-space pose (JSON).");
// stream.
ABSL_FLAG(int, frames, 100, "stream: frames to send.");
ABSL_FLAG(double, rate, 60.0,
          "stream: frames per second; 0 sends as fast as answers come.");
ABSL_FLAG(int, characters, 1, "stream: characters solved per frame.");
ABSL_FLAG(std::string, playback, "sample",
          "stream: sample (per-frame sample_clip ops at each character's "
          "time) or crossfade (the server's player advances by dt).");
ABSL_FLAG(int, print_every, 1,
          "stream: print every k-th frame (0: only the summary).");

namespace {

constexpr char kUsage[] =
    "posewire COMMAND [flags]\n"
    "  info     [--server=HOST:PORT]  server version, revision, limits and "
    "operations\n"
    "  health   [--server=HOST:PORT]  health check; exit 0 when SERVING\n"
    "  inspect  FILE                  joints, hierarchy and clips of a .bvh, "
    ".gltf or .glb file\n"
    "  solve    FILE [--clip=NAME] [--time=T | --frame=N] [--ops_json=FILE]\n"
    "                [--format=json|bvh] [--out=PATH] [--model_pose] "
    "[--server=...]\n"
    "                                 solve the clip's pose at a time, then "
    "the ops,\n"
    "                                 on the server; print JSON or write BVH\n"
    "  stream   FILE [--clip=NAME] [--frames=N] [--rate=HZ] "
    "[--characters=K]\n"
    "                [--ops_json=FILE] [--playback=sample|crossfade] "
    "[--print_every=K]\n"
    "                                 play the clip through a session; "
    "per-frame\n"
    "                                 latency and a p50/p90/p99/max summary";

// Exit codes: 0 ok, 1 the operation failed, 2 usage error.
int Fail(const std::string& message, int code = 1) {
  std::cerr << "posewire: " << message << "\n";
  return code;
}

std::shared_ptr<grpc::Channel> Connect() {
  return grpc::CreateChannel(absl::GetFlag(FLAGS_server),
                             grpc::InsecureChannelCredentials());
}

void SetDeadline(grpc::ClientContext& context) {
  context.set_deadline(
      absl::ToChronoTime(absl::Now() + absl::GetFlag(FLAGS_timeout)));
}

std::string Describe(const grpc::Status& status) {
  return absl::StrCat(absl::GetFlag(FLAGS_server), ": ", status.error_code(),
                      " ", status.error_message());
}

int Info() {
  auto stub = posewire::v1::PoseWire::NewStub(Connect());
  grpc::ClientContext context;
  SetDeadline(context);
  posewire::v1::GetInfoResponse info;
  grpc::Status status = stub->GetInfo(&context, {}, &info);
  if (!status.ok()) return Fail(Describe(status));
  const posewire::v1::Limits& limits = info.limits();
  std::cout
      << "server:      " << absl::GetFlag(FLAGS_server) << "\n"
      << "version:     " << info.version() << "\n"
      << "revision:    " << info.git_revision() << "\n"
      << "threads:     " << info.solver_threads() << "\n"
      << "limits:\n"
      << "  max_message_bytes:        " << limits.max_message_bytes() << "\n"
      << "  max_joints_per_skeleton:  " << limits.max_joints_per_skeleton()
      << "\n"
      << "  max_characters_per_batch: " << limits.max_characters_per_batch()
      << "\n"
      << "  max_solver_iterations:    " << limits.max_solver_iterations()
      << "\n"
      << "  max_sessions:             " << limits.max_sessions() << "\n"
      << "  max_objects_per_session:  " << limits.max_objects_per_session()
      << "\n"
      << "  skeleton_cache_size:      " << limits.skeleton_cache_size() << "\n"
      << "  max_sessions_per_peer:    " << limits.max_sessions_per_peer()
      << " (0: none)\n"
      << "  max_session_bytes:        " << limits.max_session_bytes() << "\n"
      << "operations:" << (info.operations().empty() ? "  (none)" : "") << "\n";
  // One line per op: what a frame's op_updates may change, and the range
  // each bounded count accepts on this server.
  for (const posewire::v1::OperationInfo& op : info.operation_info()) {
    std::string line = absl::StrFormat("  %-20s", op.name());
    if (!op.updatable().empty()) {
      absl::StrAppend(&line, " updates: ", absl::StrJoin(op.updatable(), ", "));
    }
    for (const posewire::v1::FieldRange& range : op.ranges()) {
      absl::StrAppend(&line, line.back() == ' ' ? "" : ";", " ", range.field(),
                      " in [", range.min(), ", ", range.max(), "]");
    }
    absl::StripTrailingAsciiWhitespace(&line);
    std::cout << line << "\n";
  }
  return 0;
}

int Health() {
  auto stub = grpc::health::v1::Health::NewStub(Connect());
  grpc::ClientContext context;
  SetDeadline(context);
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(absl::GetFlag(FLAGS_service));
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) return Fail(Describe(status));
  const std::string state =
      grpc::health::v1::HealthCheckResponse::ServingStatus_Name(
          response.status());
  std::cout << state << "\n";
  return response.status() == grpc::health::v1::HealthCheckResponse::SERVING
             ? 0
             : 1;
}

int Inspect(const std::vector<char*>& args) {
  if (args.size() != 3) {
    return Fail("inspect takes exactly one FILE\n" + std::string(kUsage), 2);
  }
  auto asset = posewire::ReadAssetFile(args[2]);
  if (!asset.ok()) return Fail(std::string(asset.status().message()));
  std::cout << posewire::cli::FormatAsset(*asset);
  return 0;
}

std::unique_ptr<posewire::client::Client> ConnectClient() {
  posewire::client::ClientOptions options;
  options.timeout = absl::GetFlag(FLAGS_timeout);
  return posewire::client::Client::Connect(absl::GetFlag(FLAGS_server),
                                           options);
}

// Parses an optional numeric flag given as text ("" = unset).
template <typename T>
bool ParseOptional(absl::string_view name, const std::string& text,
                   std::optional<T>* value) {
  if (text.empty()) return true;
  T parsed{};
  bool ok = false;
  if constexpr (std::is_same_v<T, int>) {
    ok = absl::SimpleAtoi(text, &parsed);
  } else {
    ok = absl::SimpleAtof(text, &parsed) && std::isfinite(parsed);
  }
  if (!ok) {
    Fail(absl::StrCat("--", name, "=", text, ": not a number"), 2);
    return false;
  }
  *value = parsed;
  return true;
}

int Solve(const std::vector<char*>& args) {
  if (args.size() != 3) {
    return Fail("solve takes exactly one FILE\n" + std::string(kUsage), 2);
  }
  posewire::cli::SolveOptions options;
  options.file = args[2];
  options.clip = absl::GetFlag(FLAGS_clip);
  if (!ParseOptional("time", absl::GetFlag(FLAGS_time), &options.time) ||
      !ParseOptional("frame", absl::GetFlag(FLAGS_frame), &options.frame)) {
    return 2;
  }
  options.loop = absl::GetFlag(FLAGS_loop);
  options.dt = std::max(0.0, absl::GetFlag(FLAGS_dt));
  options.ops_json = absl::GetFlag(FLAGS_ops_json);
  options.format = absl::GetFlag(FLAGS_format);
  options.out = absl::GetFlag(FLAGS_out);
  options.model_pose = absl::GetFlag(FLAGS_model_pose);
  return posewire::cli::RunSolve(*ConnectClient(), options);
}

int Stream(const std::vector<char*>& args) {
  if (args.size() != 3) {
    return Fail("stream takes exactly one FILE\n" + std::string(kUsage), 2);
  }
  posewire::cli::StreamOptions options;
  options.file = args[2];
  options.clip = absl::GetFlag(FLAGS_clip);
  options.frames = absl::GetFlag(FLAGS_frames);
  options.rate = absl::GetFlag(FLAGS_rate);
  options.characters = absl::GetFlag(FLAGS_characters);
  options.ops_json = absl::GetFlag(FLAGS_ops_json);
  options.playback = absl::GetFlag(FLAGS_playback);
  options.print_every = absl::GetFlag(FLAGS_print_every);
  if (absl::GetFlag(FLAGS_dt) >= 0.0) {
    options.dt = static_cast<float>(absl::GetFlag(FLAGS_dt));
  }
  return posewire::cli::RunStream(*ConnectClient(), options);
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(kUsage);
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() < 2) return Fail(kUsage, 2);
  const std::string command = args[1];
  if (command == "info" && args.size() == 2) return Info();
  if (command == "health" && args.size() == 2) return Health();
  if (command == "inspect") return Inspect(args);
  if (command == "solve") return Solve(args);
  if (command == "stream") return Stream(args);
  return Fail("unknown command or extra arguments: " +
                  absl::StrJoin(args.begin() + 1, args.end(), " ") + "\n" +
                  kUsage,
              2);
}
