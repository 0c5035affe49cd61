// Everything a posewire server needs to start: where to listen and the
// limits it enforces. main.cc fills it from flags; tests fill it directly.
#ifndef POSEWIRE_SERVER_SERVER_CONFIG_H_
#define POSEWIRE_SERVER_SERVER_CONFIG_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace posewire::server {

struct ServerConfig {
  // host:port; port 0 picks a free port (see PosewireServer::port()).
  std::string listen = "127.0.0.1:50051";
  // Threads that run solves; 0 means one per hardware thread.
  int threads = 0;
  // Largest message accepted or sent, in bytes.
  int64_t max_message_bytes = 16 << 20;
  int max_joints_per_skeleton = 1024;
  int max_characters_per_batch = 1024;
  int max_solver_iterations = 1000;
  int max_sessions = 1000;
  // Skeletons, clips, rigs and characters one session may register.
  int max_session_objects = 10000;
  // Skeletons kept for SkeletonRef.hash lookups (least recently used go).
  int skeleton_cache_size = 1024;
  // HTTP address for Prometheus metrics (/metrics); empty: not served.
  std::string metrics_listen;
  // PEM files; both set: TLS, neither: plaintext.
  std::string tls_cert_file;
  std::string tls_key_file;
  // File of accepted bearer tokens, one per line ('#' comments); empty: no
  // authentication. Health and reflection stay open for probes.
  std::string auth_token_file;
  // How long in-flight calls may run after a shutdown request before they
  // are cancelled.
  absl::Duration shutdown_grace = absl::Seconds(10);

  // Checks ranges; errors name the flag to fix.
  absl::Status Validate() const;
  // The thread count actually used (resolves 0).
  int EffectiveThreads() const;
};

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_SERVER_CONFIG_H_
