// posewire: command-line client of a posewire server, and an asset inspector.
// The commands and what they print are in kCommands below (`posewire help`);
// every flag and the exit codes in `posewire --help`.
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
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "clients/cli/bake_command.h"
#include "clients/cli/cli_common.h"
#include "clients/cli/inspect.h"
#include "clients/cli/referee_command.h"
#include "clients/cli/solve_command.h"
#include "clients/cli/stream_command.h"
#include "clients/cpp/posewire_client.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "posewire/v1/posewire.grpc.pb.h"
#include "proto/program.h"
#include "solver_core/io/asset_reader.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051",
          "Server address, HOST:PORT (the port is required).");
ABSL_FLAG(absl::Duration, timeout, absl::Seconds(5), "Deadline of each call.");
ABSL_FLAG(std::string, service, "posewire.v1.PoseWire",
          "health: service name to ask about (\"\" for the whole server).");
// Connecting to a secured server (posewire-server --tls_cert,
// --auth_token_file), as the Python client and the Blender add-on do.
ABSL_FLAG(std::string, token_file, "",
          "File holding the bearer token for a server started with "
          "--auth_token_file: its first line that is not blank or a '#' "
          "comment.");
ABSL_FLAG(std::string, token, "",
          "The bearer token itself (other users can see it in `ps`; prefer "
          "--token_file).");
ABSL_FLAG(bool, tls, false,
          "Connect with TLS, trusting the system's certificate authorities "
          "(--tls_ca implies it).");
ABSL_FLAG(std::string, tls_ca, "",
          "PEM file of the certificate authority that signed the server's "
          "certificate (or the server's self-signed certificate); implies "
          "--tls.");
ABSL_FLAG(std::string, tls_server_name, "",
          "Name the server's certificate must carry when it is not the host "
          "of --server (e.g. --server=10.0.0.5:50051 "
          "--tls_server_name=posewire.example.com).");

// solve and stream.
ABSL_FLAG(std::string, clip, "",
          "solve, stream, referee, bake, retarget: clip to play, by name "
          "(default: the "
          "file's first).");
ABSL_FLAG(std::string, ops_json, "",
          "solve, stream, bake, retarget: JSON file with an array of "
          "posewire.v1.Operation "
          "(protobuf JSON mapping) applied after the clip sample.");
// solve.
ABSL_FLAG(std::string, time, "",
          "solve: clip time in seconds (default 0; clamped to the clip "
          "unless --loop).");
ABSL_FLAG(std::string, frame, "",
          "solve: clip frame (key index) instead of --time.");
ABSL_FLAG(bool, loop, false,
          "solve, bake, retarget: wrap times past the clip's end (loop).");
ABSL_FLAG(double, dt, -1.0,
          "solve: seconds stateful ops advance (default 0); stream: "
          "animation seconds per frame (default 1/rate, or 1/60).");
ABSL_FLAG(std::string, format, "json", "solve: output format, json or bvh.");
ABSL_FLAG(std::string, out, "",
          "solve: output file (default: stdout); bake, retarget: the .bvh, "
          ".glb or .gltf to write.");
ABSL_FLAG(bool, model_pose, false,
          "solve: also print the model-space pose (JSON).");
// stream.
ABSL_FLAG(int, frames, 100,
          "stream: frames to send, at most 10000000 (stop earlier with "
          "Ctrl-C: the summary is printed and the exit code is 0).");
ABSL_FLAG(double, rate, 60.0,
          "stream: frames per second; 0 sends as fast as answers come. "
          "referee: claims per second of animation.");
ABSL_FLAG(int, characters, 1, "stream: characters solved per frame.");
ABSL_FLAG(std::string, playback, "sample",
          "stream: sample (per-frame sample_clip ops at each character's "
          "time) or crossfade (the server's player advances by dt).");
ABSL_FLAG(int, print_every, 1,
          "stream: print every k-th frame (0: only the summary).");

ABSL_FLAG(std::string, limits_from, "",
          "referee: learn joint limits from this file's clips for the "
          "range-of-motion check (joints matched by name).");
ABSL_FLAG(double, margin_degrees, 30.0,
          "referee: degrees added on each side of every learnt range.");

ABSL_FLAG(std::string, fps, "",
          "bake, retarget: frames per second (default: the clip's own "
          "rate).");
ABSL_FLAG(std::string, frame_count, "",
          "bake, retarget: frames to bake (default: the clip from --start "
          "to its end).");
ABSL_FLAG(double, start, 0.0, "bake, retarget: the first frame's time, s.");
ABSL_FLAG(std::string, to, "",
          "retarget: the .bvh, .gltf or .glb rig to play the clip onto.");
ABSL_FLAG(std::string, ray, "",
          "referee: a ray ox,oy,oz,dx,dy,dz (the file's model space) cast "
          "at the character rewound to --at, against a capsule per bone.");
ABSL_FLAG(double, at, 0.0, "referee: the clip time, s, --ray rewinds to.");
ABSL_FLAG(bool, lock_feet, false,
          "retarget: hold the feet where the source's are planted, so they "
          "do not slide.");
ABSL_FLAG(bool, match_hands, false,
          "retarget: put the hands where the scaled source puts them (the "
          "arms bend to reach).");

namespace {

constexpr char kCommands[] =
    "Commands:\n"
    "  info          the server's version, revision, limits and operations\n"
    "  health        the server's health check; exit 0 when SERVING\n"
    "  inspect FILE  joints, hierarchy and clips of a .bvh, .gltf or .glb "
    "file\n"
    "  solve FILE    one solve on the server: the clip's pose at --time or "
    "--frame,\n"
    "                then the --ops_json ops; JSON, or BVH with "
    "--format=bvh\n"
    "  stream FILE   plays the clip through a session for --frames frames at "
    "--rate;\n"
    "                per-frame latency and a p50/p90/p99/max summary\n"
    "  referee FILE  a game server's plausibility check of the clip, claim "
    "by claim\n"
    "                at --rate; with --limits_from=OTHER, joint limits "
    "learnt from\n"
    "                OTHER's clips; prints flagged frames and a summary;\n"
    "                with --ray, a rewound hit query at --at\n"
    "  bake FILE     the clip through the --ops_json ops on the server, "
    "every frame\n"
    "                at --fps, written to --out (.bvh, .glb or .gltf)\n"
    "  retarget FILE the clip played onto --to=RIG's skeleton (chains by "
    "name), then\n"
    "                the --ops_json ops, written to --out\n"
    "  help          this list\n";

constexpr char kUsage[] =
    "command-line client of a posewire server, and an asset inspector.\n"
    "\n"
    "Usage: posewire COMMAND [FILE] [--flag=value ...]\n"
    "\n"
    "Commands:\n"
    "  info, health, inspect FILE, solve FILE, stream FILE, referee FILE,\n"
    "  bake FILE, retarget FILE --to=RIG, help\n"
    "  (`posewire help` says what each does)\n"
    "\n"
    "The server is --server=HOST:PORT; a server started with --tls_cert "
    "and\n"
    "--auth_token_file also needs --tls_ca=CA.pem and --token_file=FILE.";

constexpr char kExitCodes[] =
    "Exit codes:\n"
    "  0  done (health: the service is SERVING; stream: also when stopped "
    "with Ctrl-C)\n"
    "  1  the operation failed: the server refused it or could not be "
    "reached, a\n"
    "     file could not be read, health is not SERVING; also an unknown "
    "flag or\n"
    "     a malformed flag value (reported by the flag parser)\n"
    "  2  usage error: no command or an unknown one, missing or extra "
    "arguments,\n"
    "     an address without a port, a value out of range (e.g. --frames)";

int Fail(const std::string& message, int code = 1) {
  std::cerr << "posewire: " << message << "\n";
  return code;
}

// The first line of `text` that is neither blank nor a '#' comment, as the
// server reads its --auth_token_file.
std::string FirstToken(absl::string_view text) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (!line.empty() && line.front() != '#') return std::string(line);
  }
  return "";
}

// --server, --timeout and the TLS and token flags as client options.
absl::StatusOr<posewire::client::ClientOptions> ConnectionFlags() {
  if (absl::Status s = posewire::CheckHostPort(
          "server", absl::GetFlag(FLAGS_server), posewire::PortZero::kRefused);
      !s.ok()) {
    return s;
  }
  posewire::client::ClientOptions options;
  options.timeout = absl::GetFlag(FLAGS_timeout);
  const std::string token_file = absl::GetFlag(FLAGS_token_file);
  options.token = absl::GetFlag(FLAGS_token);
  if (!token_file.empty() && !options.token.empty()) {
    return absl::InvalidArgumentError("give --token_file or --token, not both");
  }
  if (!token_file.empty()) {
    auto text = posewire::cli::ReadTextFile(token_file);
    if (!text.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--token_file: ", text.status().message()));
    }
    options.token = FirstToken(*text);
    if (options.token.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--token_file=", token_file, ": holds no token"));
    }
  }
  const std::string ca = absl::GetFlag(FLAGS_tls_ca);
  options.tls = absl::GetFlag(FLAGS_tls) || !ca.empty();
  if (!ca.empty()) {
    auto pem = posewire::cli::ReadTextFile(ca);
    if (!pem.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--tls_ca: ", pem.status().message()));
    }
    options.tls_root_certificates = *std::move(pem);
  }
  options.tls_server_name = absl::GetFlag(FLAGS_tls_server_name);
  if (!options.tls_server_name.empty() && !options.tls) {
    return absl::InvalidArgumentError(
        "--tls_server_name needs TLS (--tls or --tls_ca)");
  }
  return options;
}

// The client every server command uses; null (after printing why) when the
// flags are wrong.
std::unique_ptr<posewire::client::Client> ConnectClient() {
  auto options = ConnectionFlags();
  if (!options.ok()) {
    Fail(std::string(options.status().message()));
    return nullptr;
  }
  return posewire::client::Client::Connect(absl::GetFlag(FLAGS_server),
                                           *options);
}

int Info() {
  auto client = ConnectClient();
  if (client == nullptr) return 2;
  auto info = client->GetInfo();
  if (!info.ok()) return Fail(posewire::cli::DescribeStatus(info.status()));
  const posewire::v1::Limits& limits = info->limits();
  std::cout
      << "server:      " << absl::GetFlag(FLAGS_server) << "\n"
      << "version:     " << info->version() << "\n"
      << "revision:    " << info->git_revision() << "\n"
      << "threads:     " << info->solver_threads() << "\n"
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
      << "  history_frames:           " << limits.history_frames() << "\n"
      << "  history_window_seconds:   " << limits.history_window_seconds()
      << "\n"
      << "  max_queries_per_request:  " << limits.max_queries_per_request()
      << "\n"
      << "operations:" << (info->operations().empty() ? "  (none)" : "")
      << "\n";
  // One line per op: what a frame's op_updates may change, and the range
  // each bounded count accepts on this server.
  for (const posewire::v1::OperationInfo& op : info->operation_info()) {
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
  auto client = ConnectClient();
  if (client == nullptr) return 2;
  auto stub = grpc::health::v1::Health::NewStub(client->channel());
  grpc::ClientContext context;
  client->PrepareContext(context);
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(absl::GetFlag(FLAGS_service));
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) {
    return Fail(posewire::cli::DescribeStatus(client->CallError(status)));
  }
  const std::string state =
      grpc::health::v1::HealthCheckResponse::ServingStatus_Name(
          response.status());
  std::cout << state << "\n";
  return response.status() == grpc::health::v1::HealthCheckResponse::SERVING
             ? 0
             : 1;
}

// `posewire help` (exit 0, standard output) and `posewire` alone (exit 2,
// standard error: a script that forgot its command must not pass).
int Help(std::ostream& out, int code) {
  out << "Usage: posewire COMMAND [FILE] [--flag=value ...]\n\n"
      << kCommands
      << "\n`posewire --help` lists every flag and the exit codes.\n";
  return code;
}

int Inspect(const std::vector<char*>& args) {
  if (args.size() != 3) {
    return Fail("inspect takes exactly one FILE (posewire help)", 2);
  }
  auto asset = posewire::ReadAssetFile(args[2]);
  if (!asset.ok()) return Fail(std::string(asset.status().message()));
  std::cout << posewire::cli::FormatAsset(*asset);
  return 0;
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
    return Fail("solve takes exactly one FILE (posewire help)", 2);
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
  auto client = ConnectClient();
  if (client == nullptr) return 2;
  return posewire::cli::RunSolve(*client, options);
}

int Stream(const std::vector<char*>& args) {
  if (args.size() != 3) {
    return Fail("stream takes exactly one FILE (posewire help)", 2);
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
  auto client = ConnectClient();
  if (client == nullptr) return 2;
  return posewire::cli::RunStream(*client, options);
}

int Referee(const std::vector<char*>& args) {
  if (args.size() != 3) {
    return Fail("referee takes exactly one FILE (posewire help)", 2);
  }
  posewire::cli::RefereeOptions options;
  options.file = args[2];
  options.clip = absl::GetFlag(FLAGS_clip);
  options.rate = absl::GetFlag(FLAGS_rate);
  options.limits_from = absl::GetFlag(FLAGS_limits_from);
  options.margin_degrees = absl::GetFlag(FLAGS_margin_degrees);
  options.ray = absl::GetFlag(FLAGS_ray);
  options.at = absl::GetFlag(FLAGS_at);
  auto client = ConnectClient();
  if (client == nullptr) return 2;
  return posewire::cli::RunReferee(*client, options);
}

// bake FILE, and retarget FILE --to=RIG (`retarget` true).
int Bake(const std::vector<char*>& args, bool retarget) {
  const char* name = retarget ? "retarget" : "bake";
  if (args.size() != 3) {
    return Fail(absl::StrCat(name, " takes exactly one FILE (posewire help)"),
                2);
  }
  posewire::cli::BakeOptions options;
  options.file = args[2];
  options.clip = absl::GetFlag(FLAGS_clip);
  options.ops_json = absl::GetFlag(FLAGS_ops_json);
  std::optional<float> fps;
  if (!ParseOptional("fps", absl::GetFlag(FLAGS_fps), &fps) ||
      !ParseOptional("frame_count", absl::GetFlag(FLAGS_frame_count),
                     &options.frame_count)) {
    return 2;
  }
  if (fps.has_value()) options.fps = *fps;
  options.start = absl::GetFlag(FLAGS_start);
  options.loop = absl::GetFlag(FLAGS_loop);
  options.out = absl::GetFlag(FLAGS_out);
  options.to = absl::GetFlag(FLAGS_to);
  options.lock_feet = absl::GetFlag(FLAGS_lock_feet);
  options.match_hands = absl::GetFlag(FLAGS_match_hands);
  if (!retarget && (options.lock_feet || options.match_hands)) {
    return Fail(
        "bake takes no --lock_feet or --match_hands (posewire retarget does)",
        2);
  }
  if (retarget && options.to.empty()) {
    return Fail("retarget needs --to=RIG, the rig to play the clip onto", 2);
  }
  if (!retarget && !options.to.empty()) {
    return Fail("bake takes no --to (posewire retarget does)", 2);
  }
  auto client = ConnectClient();
  if (client == nullptr) return 2;
  return posewire::cli::RunBake(*client, options);
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<char*> args =
      posewire::ParseProgramFlags(argc, argv,
                                  {.name = "posewire",
                                   .usage = kUsage,
                                   .flags_folder = "clients/cli/",
                                   .exit_codes = kExitCodes});
  if (args.size() < 2) return Help(std::cerr, 2);
  const std::string command = args[1];
  if (command == "help" && args.size() == 2) return Help(std::cout, 0);
  if (command == "info" && args.size() == 2) return Info();
  if (command == "health" && args.size() == 2) return Health();
  if (command == "inspect") return Inspect(args);
  if (command == "solve") return Solve(args);
  if (command == "stream") return Stream(args);
  if (command == "referee") return Referee(args);
  if (command == "bake") return Bake(args, false);
  if (command == "retarget") return Bake(args, true);
  return Fail("unknown command or extra arguments: " +
                  absl::StrJoin(args.begin() + 1, args.end(), " ") +
                  " (posewire help lists the commands)",
              2);
}
