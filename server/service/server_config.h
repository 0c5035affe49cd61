// Everything a posewire server needs to start: where to listen and the
// limits it enforces. main.cc fills it from flags; tests fill it directly.
#ifndef POSEWIRE_SERVER_SERVICE_SERVER_CONFIG_H_
#define POSEWIRE_SERVER_SERVICE_SERVER_CONFIG_H_

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
  // Requests of at most this many bytes are solved on the gRPC thread that
  // read them instead of on the solver pool. A one-character frame is a few
  // KB and solves in microseconds, less than the two thread hand-offs the
  // pool costs; at 60 Hz on hundreds of streams those hand-offs set the
  // latency tail. Larger requests (batches, registrations) keep going to the
  // pool so they never hold up gRPC's threads. 0: everything on the pool.
  int64_t inline_request_bytes = 8 << 10;
  // ...unless no request up to inline_request_bytes has arrived for this
  // long: then nobody waits on gRPC's threads, and larger requests are
  // solved inline too (a batch-only load; see request_placement.h).
  // absl::InfiniteDuration(): larger requests always go to the pool.
  absl::Duration batch_inline_quiet = absl::Seconds(1);
  // Largest message accepted or sent, in bytes.
  int64_t max_message_bytes = 16 << 20;
  int max_joints_per_skeleton = 1024;
  int max_characters_per_batch = 1024;
  int max_solver_iterations = 1000;
  int max_sessions = 1000;
  // Sessions one peer address (IP, port ignored) may hold at once, so one
  // client cannot take every slot; 0: no per-peer limit. Off by default
  // because behind a load balancer every client has the balancer's address.
  int max_sessions_per_peer = 0;
  // Skeletons, clips, rigs and characters one session may register.
  int max_session_objects = 10000;
  // Wire bytes of the registrations one session may hold. With
  // max_sessions it bounds the memory sessions can pin: a count of objects
  // alone does not, since each may be a message of max_message_bytes.
  int64_t max_session_bytes = 64 << 20;
  // Solved frames a session keeps per character for rewind queries
  // (HitQuery), and how far back before the newest a query may go. 64
  // frames hold a second at 60 Hz; a second is the usual lag-compensation
  // bound (Source's sv_maxunlag). Each kept frame costs 48 bytes a joint
  // (not counted in max_session_bytes).
  int history_frames = 64;
  double history_window_seconds = 1.0;
  // Most rays and spheres in one HitQuery.
  int max_queries_per_request = 1024;
  // Largest session snapshot (SessionSnapshot.data) written or resumed
  // from. A snapshot holds hashes, not registrations, so it grows with the
  // characters' state: a spring chain's particles are tens of bytes a
  // joint, and 4 MiB holds thousands of characters.
  int64_t max_snapshot_bytes = 4 << 20;
  // Key of the HMAC-SHA-256 that seals snapshots, shared by the replicas a
  // client may resume on; empty (the default): a plain SHA-256 checksum,
  // which catches truncation and corruption but not a forgery.
  std::string snapshot_key;
  // Bake: most frames one call may ask for (10^5 frames are 55 minutes at
  // 30 fps), most bytes of poses it may stream back, and most calls run at
  // once (each holds its request and takes a solver thread per message).
  int max_bake_frames = 100000;
  int64_t max_bake_bytes = int64_t{1} << 30;
  int max_concurrent_bakes = 8;
  // Skeletons kept for SkeletonRef.hash lookups (least recently used go),
  // with Solve's compiled plans; also the size of the skeleton and plan
  // caches sessions share (SessionShared). A shared entry evicted stays
  // alive in the sessions that hold it.
  int skeleton_cache_size = 1024;
  // HTTP address for Prometheus metrics (/metrics); empty: not served.
  std::string metrics_listen;
  // PEM files; both set: TLS, neither: plaintext.
  std::string tls_cert_file;
  std::string tls_key_file;
  // File of accepted bearer tokens, one per line ('#' comments); empty: no
  // authentication. Health stays open for probes; reflection, which cannot
  // check a token, is then not served.
  std::string auth_token_file;
  // HTTP/2 keepalive: after `keepalive_time` without traffic the server
  // pings the client and drops the connection if no answer comes within
  // `keepalive_timeout`. This is how a client that vanished without closing
  // its connection (power loss, a dropped NAT entry) frees its sessions.
  absl::Duration keepalive_time = absl::Seconds(30);
  absl::Duration keepalive_timeout = absl::Seconds(10);
  // How long in-flight calls may run after a shutdown request before they
  // are cancelled.
  absl::Duration shutdown_grace = absl::Seconds(10);

  // Checks ranges; errors name the flag to fix.
  absl::Status Validate() const;
  // The snapshot size limit in force: max_snapshot_bytes, or half of
  // max_message_bytes when that is lower, so that a snapshot always fits
  // in the messages that carry it (GetInfo limits.max_snapshot_bytes).
  int64_t EffectiveSnapshotBytes() const;
  // The thread count actually used (resolves 0).
  int EffectiveThreads() const;
};

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_SERVICE_SERVER_CONFIG_H_
