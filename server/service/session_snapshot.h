// A session snapshot's sealed byte form (SessionSnapshot.data): a small
// header, the SnapshotContent, and a digest that makes a truncated or
// altered snapshot detectable. Pure functions: the session decides what
// goes in and what comes back (session.cc).
#ifndef POSEWIRE_SERVER_SERVICE_SESSION_SNAPSHOT_H_
#define POSEWIRE_SERVER_SERVICE_SESSION_SNAPSHOT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message_lite.h"
#include "posewire/v1/posewire.pb.h"

namespace posewire::server {

// The format this server writes and the newest it reads. A change to the
// layout or to what SnapshotContent means raises it; an older server then
// refuses the newer snapshots by name instead of misreading them.
inline constexpr uint32_t kSnapshotVersion = 1;

// What seals the snapshot and whether a key is needed to check it.
struct SnapshotSeal {
  // Empty: a SHA-256 checksum. Otherwise the HMAC-SHA-256 key the replicas
  // share (ServerConfig::snapshot_key).
  absl::string_view key;
};

// The sealed bytes of `content` (deterministic serialisation, so the same
// session state gives the same bytes on every replica).
std::string SealSnapshot(const v1::SnapshotContent& content,
                         const SnapshotSeal& seal);

// Checks and opens `data`: its size against `max_bytes`, the header, the
// version (not newer than kSnapshotVersion), the seal, then the content.
// Errors name `field`: INVALID_ARGUMENT for a truncated, altered or
// unreadable snapshot, FAILED_PRECONDITION for a newer version or a seal
// this server cannot check, RESOURCE_EXHAUSTED over the size limit.
absl::StatusOr<v1::SnapshotContent> OpenSnapshot(absl::string_view data,
                                                 const SnapshotSeal& seal,
                                                 int64_t max_bytes,
                                                 absl::string_view field);

// Lowercase hex SHA-256 of `message` in protobuf's deterministic
// serialisation: what a resent registration is checked against.
std::string RegistrationHash(const google::protobuf::MessageLite& message);

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_SERVICE_SESSION_SNAPSHOT_H_
