#include "server/service/server_config.h"

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"

namespace posewire::server {

absl::Status ServerConfig::Validate() const {
  if (listen.empty()) {
    return absl::InvalidArgumentError("--listen: empty address; use HOST:PORT");
  }
  if (threads < 0 || threads > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("--threads: ", threads, " is outside [0, 1024]"));
  }
  if (inline_request_bytes < 0 || inline_request_bytes > (1 << 20)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--inline_request_bytes: ", inline_request_bytes,
                     " is outside [0, 1048576]"));
  }
  if (batch_inline_quiet < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--batch_inline_quiet: ", absl::FormatDuration(batch_inline_quiet),
        " is negative; use 0 (always inline) up to inf (never)"));
  }
  // gRPC stores the limit in an int; 1 KiB is too small for any real frame.
  if (max_message_bytes < 1024 || max_message_bytes > INT32_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max_message_bytes: ", max_message_bytes,
                     " is outside [1024, ", INT32_MAX, "]"));
  }
  if (max_joints_per_skeleton < 1 || max_joints_per_skeleton > (1 << 16)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max_joints: ", max_joints_per_skeleton, " is outside [1, 65536]"));
  }
  if (max_characters_per_batch < 1) {
    return absl::InvalidArgumentError("--max_characters: must be at least 1");
  }
  if (max_solver_iterations < 1) {
    return absl::InvalidArgumentError("--max_iterations: must be at least 1");
  }
  if (max_sessions < 1) {
    return absl::InvalidArgumentError("--max_sessions: must be at least 1");
  }
  if (max_sessions_per_peer < 0) {
    return absl::InvalidArgumentError(
        "--max_sessions_per_peer: must not be negative (0: no limit)");
  }
  if (max_session_bytes < 1024) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max_session_bytes: ", max_session_bytes, " is below 1024"));
  }
  if (max_snapshot_bytes < 1024) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max_snapshot_bytes: ", max_snapshot_bytes, " is below 1024"));
  }
  if (history_frames < 0 || history_frames > 100000) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--history_frames: ", history_frames, " is not in [0, 100000]"));
  }
  if (!(history_window_seconds >= 0.0 && history_window_seconds <= 3600.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--history_window_seconds: ", history_window_seconds,
                     " is not in [0, 3600]"));
  }
  if (max_bake_frames < 1) {
    return absl::InvalidArgumentError("--max_bake_frames: must be at least 1");
  }
  if (max_bake_bytes < 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max_bake_bytes: ", max_bake_bytes, " is below 1024"));
  }
  if (max_concurrent_bakes < 1) {
    return absl::InvalidArgumentError(
        "--max_concurrent_bakes: must be at least 1");
  }
  if (max_queries_per_request < 1) {
    return absl::InvalidArgumentError(
        "--max_queries_per_request: must be at least 1");
  }
  // gRPC takes milliseconds; below 1 ms a ping could never be answered.
  if (keepalive_time < absl::Milliseconds(1) ||
      keepalive_timeout < absl::Milliseconds(1)) {
    return absl::InvalidArgumentError(
        "--keepalive_time and --keepalive_timeout: must be at least 1ms");
  }
  if (max_session_objects < 1) {
    return absl::InvalidArgumentError(
        "--max_session_objects: must be at least 1");
  }
  if (skeleton_cache_size < 1) {
    return absl::InvalidArgumentError(
        "--skeleton_cache_size: must be at least 1");
  }
  if (tls_cert_file.empty() != tls_key_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls_cert and --tls_key: give both (TLS) or neither (plaintext)");
  }
  if (shutdown_grace < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--shutdown_grace: must not be negative");
  }
  return absl::OkStatus();
}

int64_t ServerConfig::EffectiveSnapshotBytes() const {
  return std::min(max_snapshot_bytes, max_message_bytes / 2);
}

int ServerConfig::EffectiveThreads() const {
  if (threads > 0) return threads;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

}  // namespace posewire::server
