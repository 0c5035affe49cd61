// posewire-server: serves posewire.v1.PoseWire, grpc.health.v1 and server
// reflection. SIGINT or SIGTERM: stop accepting, let in-flight calls finish
// within --shutdown_grace, exit 0. `posewire-server --help` lists the flags
// and the exit codes.
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/program.h"
#include "proto/version.h"
#include "server/transport/server.h"
#include "solver_core/model/simd_level.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "Address to serve on, HOST:PORT (0.0.0.0:PORT: every interface; "
          "port 0 picks a free one and logs it). A port is required.");
ABSL_FLAG(int, threads, 0, "Threads that run solves; 0 = one per core.");
ABSL_FLAG(int64_t, inline_request_bytes, 8 << 10,
          "Requests up to this size are solved on the gRPC thread that read "
          "them (no hand-off to the solver threads); 0: never.");
ABSL_FLAG(absl::Duration, batch_inline_quiet, absl::Seconds(1),
          "Larger requests are solved on the gRPC thread too once no request "
          "up to --inline_request_bytes has arrived for this long (a "
          "batch-only load); inf: never.");
ABSL_FLAG(std::string, log_level, "info",
          "Log level: trace, debug, info, warn, error, critical or off.");
ABSL_FLAG(int64_t, max_message_bytes, 16 << 20,
          "Largest request or response message, in bytes.");
ABSL_FLAG(int, max_joints, 1024, "Largest skeleton accepted, in joints.");
ABSL_FLAG(int, max_characters, 1024,
          "Most characters in one request or stream frame.");
ABSL_FLAG(int, max_iterations, 1000,
          "Largest iteration count an iterative solver accepts.");
ABSL_FLAG(int, max_sessions, 1000, "Most concurrent streaming sessions.");
ABSL_FLAG(
    int, max_session_objects, 10000,
    "Most skeletons, clips, rigs and characters one session may register.");
ABSL_FLAG(int, max_sessions_per_peer, 0,
          "Most concurrent sessions from one client IP address; 0: no limit "
          "(behind a load balancer every client shares its address).");
ABSL_FLAG(int64_t, max_session_bytes, 64 << 20,
          "Most bytes of registrations (wire size) one session may hold.");
ABSL_FLAG(int, history_frames, 64,
          "Solved frames a session keeps per character for rewind queries.");
ABSL_FLAG(double, history_window_seconds, 1.0,
          "How far before a character's newest frame a query may rewind.");
ABSL_FLAG(int, max_queries_per_request, 1024,
          "Most rays and spheres in one hit query.");
ABSL_FLAG(int64_t, max_snapshot_bytes, 4 << 20,
          "Largest session snapshot written or resumed from, in bytes "
          "(capped at half of --max_message_bytes).");
ABSL_FLAG(int, max_bake_frames, 100000,
          "Most frames one Bake call may ask for.");
ABSL_FLAG(int64_t, max_bake_bytes, int64_t{1} << 30,
          "Most bytes of poses one Bake call may stream back.");
ABSL_FLAG(int, max_concurrent_bakes, 8,
          "Most Bake calls run at once; more are refused.");
ABSL_FLAG(std::string, snapshot_key_file, "",
          "File whose bytes (at least 16, trailing whitespace ignored) key "
          "the HMAC-SHA-256 sealing session snapshots; give every replica "
          "a client may resume on the same file. Empty: a SHA-256 checksum.");
ABSL_FLAG(absl::Duration, keepalive_time, absl::Seconds(30),
          "Ping a connection after this long without traffic, so a client "
          "that vanished without closing is noticed.");
ABSL_FLAG(absl::Duration, keepalive_timeout, absl::Seconds(10),
          "Drop the connection (and free its sessions) when a keepalive "
          "ping is not answered within this.");
ABSL_FLAG(int, skeleton_cache_size, 1024,
          "Skeletons kept for lookups by content hash (and their compiled "
          "op lists); as many again for the skeletons and rigs sessions "
          "share.");
ABSL_FLAG(std::string, metrics_listen, "",
          "HOST:PORT to serve Prometheus metrics on (/metrics); empty: off.");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM certificate chain; with --tls_key enables TLS.");
ABSL_FLAG(std::string, tls_key, "", "PEM private key for --tls_cert.");
ABSL_FLAG(std::string, auth_token_file, "",
          "File of accepted bearer tokens, one per line; empty: no auth.");
ABSL_FLAG(absl::Duration, shutdown_grace, absl::Seconds(10),
          "How long in-flight calls may finish after SIGINT/SIGTERM.");

namespace {

constexpr char kUsage[] =
    "the posewire animation solver over gRPC: posewire.v1.PoseWire (unary "
    "Solve,\n"
    "streaming Session), grpc.health.v1 and server reflection. SIGINT or "
    "SIGTERM:\n"
    "stop accepting, let calls in flight finish within --shutdown_grace, "
    "exit 0.\n"
    "\n"
    "Usage: posewire-server [--listen=HOST:PORT] [--flag=value ...]";

constexpr char kExitCodes[] =
    "Exit codes:\n"
    "  0  stopped by SIGINT or SIGTERM after draining\n"
    "  1  could not start: the address is in use or cannot be bound, a "
    "TLS or token\n"
    "     file cannot be read; also an unknown flag or a malformed flag "
    "value\n"
    "     (reported by the flag parser)\n"
    "  2  a flag value is invalid: an address without a port, a limit out "
    "of range,\n"
    "     an unknown --log_level";

// Binds --listen the way gRPC is about to (SO_REUSEADDR, no SO_REUSEPORT)
// and lets it go again. gRPC reports a busy port in its own log, as a long
// nested internal error, before PosewireServer::Start can return; this
// check turns the usual case into one line. A port taken between this
// check and gRPC's bind still gets gRPC's message, then Start's error.
absl::Status CheckCanListen(const std::string& address) {
  if (absl::StartsWith(address, "unix") ||
      posewire::AddressPort(address) == "0") {
    return absl::OkStatus();
  }
  const std::string host(posewire::AddressHost(address));
  const std::string port(posewire::AddressPort(address));
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int error = getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
      error != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot listen on ", address, ": ", gai_strerror(error)));
  }
  const std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> addresses(
      found, freeaddrinfo);
  bool bound = false;
  bool in_use = false;
  int last_error = 0;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd =
        socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      last_error = errno;
      continue;
    }
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0) {
      bound = true;
    } else {
      last_error = errno;
      in_use |= last_error == EADDRINUSE;
    }
    close(fd);
  }
  if (in_use) {
    return absl::UnavailableError(absl::StrCat(
        "cannot listen on ", address,
        ": the address is already in use (is another posewire-server "
        "running? choose another --listen port, or port 0 for a free one)"));
  }
  if (!bound) {
    return absl::UnavailableError(absl::StrCat(
        "cannot listen on ", address, ": ", std::strerror(last_error)));
  }
  return absl::OkStatus();
}

// glibc hands the top of a heap back to the OS whenever 128 KB there are
// free (M_TRIM_THRESHOLD's default), and a batch answer is a few hundred KB
// allocated and freed once per message, so every message faulted the same
// pages back in. Keeping up to four of the largest messages' worth free cut
// the server's CPU per batch character-frame by about a tenth
// (docs/PERFORMANCE.md). Setting the trim threshold also freezes glibc's
// adaptive mmap threshold at 128 KB, so it is set too: buffers up to 4 MB
// come from the heap and are reused, larger ones are mapped and unmapped.
void KeepFreedMemoryForReuse(int64_t max_message_bytes) {
#if defined(__GLIBC__)
  const int64_t keep = std::clamp<int64_t>(4 * max_message_bytes,
                                           int64_t{64} << 20, int64_t{1} << 30);
  mallopt(M_TRIM_THRESHOLD, static_cast<int>(keep));
  mallopt(M_MMAP_THRESHOLD, 4 << 20);
#else
  (void)max_message_bytes;
#endif
}

// The snapshot key's bytes; "" for no file. Trailing whitespace (an
// editor's newline) is not part of the key, so replicas given the "same"
// file agree.
absl::StatusOr<std::string> ReadSnapshotKey(const std::string& path) {
  if (path.empty()) return std::string();
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  if (!in || !(buffer << in.rdbuf())) {
    return absl::NotFoundError(
        absl::StrCat("--snapshot_key_file: cannot read ", path));
  }
  std::string key(absl::StripTrailingAsciiWhitespace(buffer.str()));
  if (key.size() < 16) {
    return absl::InvalidArgumentError(
        absl::StrCat("--snapshot_key_file: ", path, " holds ", key.size(),
                     " bytes; a key needs at least 16"));
  }
  return key;
}

int Run() {
  const std::string level_name = absl::GetFlag(FLAGS_log_level);
  const spdlog::level::level_enum level = spdlog::level::from_str(level_name);
  if (level == spdlog::level::off && level_name != "off") {
    spdlog::error("--log_level: unknown level '{}'", level_name);
    return 2;
  }
  spdlog::set_level(level);

  posewire::server::ServerConfig config;
  config.listen = absl::GetFlag(FLAGS_listen);
  config.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  absl::Status addresses = posewire::CheckHostPort(
      "listen", config.listen, posewire::PortZero::kAllowed);
  if (addresses.ok() && !config.metrics_listen.empty()) {
    addresses = posewire::CheckHostPort("metrics_listen", config.metrics_listen,
                                        posewire::PortZero::kAllowed);
  }
  if (!addresses.ok()) {
    spdlog::error("{}", std::string(addresses.message()));
    return 2;
  }
  config.threads = absl::GetFlag(FLAGS_threads);
  config.inline_request_bytes = absl::GetFlag(FLAGS_inline_request_bytes);
  config.batch_inline_quiet = absl::GetFlag(FLAGS_batch_inline_quiet);
  config.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  config.max_joints_per_skeleton = absl::GetFlag(FLAGS_max_joints);
  config.max_characters_per_batch = absl::GetFlag(FLAGS_max_characters);
  config.max_solver_iterations = absl::GetFlag(FLAGS_max_iterations);
  config.max_sessions = absl::GetFlag(FLAGS_max_sessions);
  config.max_session_objects = absl::GetFlag(FLAGS_max_session_objects);
  config.max_sessions_per_peer = absl::GetFlag(FLAGS_max_sessions_per_peer);
  config.max_session_bytes = absl::GetFlag(FLAGS_max_session_bytes);
  config.history_frames = absl::GetFlag(FLAGS_history_frames);
  config.history_window_seconds = absl::GetFlag(FLAGS_history_window_seconds);
  config.max_queries_per_request = absl::GetFlag(FLAGS_max_queries_per_request);
  config.max_snapshot_bytes = absl::GetFlag(FLAGS_max_snapshot_bytes);
  config.max_bake_frames = absl::GetFlag(FLAGS_max_bake_frames);
  config.max_bake_bytes = absl::GetFlag(FLAGS_max_bake_bytes);
  config.max_concurrent_bakes = absl::GetFlag(FLAGS_max_concurrent_bakes);
  if (absl::StatusOr<std::string> key =
          ReadSnapshotKey(absl::GetFlag(FLAGS_snapshot_key_file));
      key.ok()) {
    config.snapshot_key = *std::move(key);
  } else {
    spdlog::error("{}", std::string(key.status().message()));
    return 2;
  }
  config.keepalive_time = absl::GetFlag(FLAGS_keepalive_time);
  config.keepalive_timeout = absl::GetFlag(FLAGS_keepalive_timeout);
  config.skeleton_cache_size = absl::GetFlag(FLAGS_skeleton_cache_size);
  config.tls_cert_file = absl::GetFlag(FLAGS_tls_cert);
  config.tls_key_file = absl::GetFlag(FLAGS_tls_key);
  config.auth_token_file = absl::GetFlag(FLAGS_auth_token_file);
  config.shutdown_grace = absl::GetFlag(FLAGS_shutdown_grace);
  KeepFreedMemoryForReuse(config.max_message_bytes);

  // Block the stop signals before gRPC starts its threads (they inherit the
  // mask), so only the sigwait below ever receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  if (absl::Status s = config.Validate(); !s.ok()) {
    spdlog::error("{}", std::string(s.message()));
    return 2;
  }
  if (absl::Status s = CheckCanListen(config.listen); !s.ok()) {
    spdlog::error("{}", std::string(s.message()));
    return 1;
  }
  auto server = posewire::server::PosewireServer::Start(config);
  if (!server.ok()) {
    spdlog::error("cannot start: {}", std::string(server.status().message()));
    return absl::IsInvalidArgument(server.status()) ? 2 : 1;
  }
  const std::string host = config.listen.substr(0, config.listen.rfind(':'));
  spdlog::info("posewire-server {} ({}) listening on {}:{}, {} solver threads",
               posewire::kVersion, posewire::kGitRevision, host,
               (*server)->port(), config.EffectiveThreads());
  spdlog::info(
      "{}, {}, metrics {}, solver kernels {}",
      config.tls_cert_file.empty() ? "plaintext" : "TLS",
      config.auth_token_file.empty() ? "no authentication"
                                     : "bearer-token authentication",
      (*server)->metrics_port() == 0
          ? std::string("off")
          : absl::StrCat("on port ", (*server)->metrics_port()),
      std::string(posewire::SimdLevelName(posewire::ActiveSimdLevel())));

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  spdlog::info(
      "{} received: draining for up to {} ({} sessions open); new calls "
      "are refused",
      signal_number == SIGINT ? "SIGINT" : "SIGTERM",
      absl::FormatDuration(config.shutdown_grace),
      (*server)->active_sessions());
  (*server)->Shutdown(config.shutdown_grace);
  spdlog::info("stopped; calls by final status: {}", (*server)->call_summary());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<char*> args =
      posewire::ParseProgramFlags(argc, argv,
                                  {.name = "posewire-server",
                                   .usage = kUsage,
                                   .flags_folder = "server/transport/",
                                   .exit_codes = kExitCodes});
  if (args.size() > 1) {
    spdlog::error(
        "unexpected argument '{}': flags are --name=value "
        "(posewire-server --help)",
        args[1]);
    return 2;
  }
  // Debian builds Abseil without NDEBUG, which leaves absl::Mutex's
  // deadlock detector on: every lock of gRPC's (grpc_core::Mutex is an
  // absl::Mutex) then updates a global lock graph under a global spinlock.
  // That is a debugging aid for tests, not for a serving process.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return Run();
}
