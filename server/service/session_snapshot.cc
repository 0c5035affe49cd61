#include "server/service/session_snapshot.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace posewire::server {
namespace {

constexpr absl::string_view kMagic = "PWSN";
// Integrity kinds (the byte after the version).
constexpr unsigned char kChecksum = 0;
constexpr unsigned char kKeyedMac = 1;
// Magic, version (uint32 little-endian), integrity kind.
constexpr size_t kHeaderBytes = 4 + 4 + 1;
constexpr size_t kDigestBytes = SHA256_DIGEST_LENGTH;

std::string Digest(absl::string_view bytes, const SnapshotSeal& seal) {
  unsigned char digest[kDigestBytes];
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  if (seal.key.empty()) {
    SHA256(data, bytes.size(), digest);
  } else {
    unsigned int size = 0;
    HMAC(EVP_sha256(), seal.key.data(), static_cast<int>(seal.key.size()), data,
         bytes.size(), digest, &size);
  }
  return std::string(reinterpret_cast<const char*>(digest), kDigestBytes);
}

std::string Serialize(const google::protobuf::MessageLite& message) {
  std::string bytes;
  google::protobuf::io::StringOutputStream stream(&bytes);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  message.SerializeToCodedStream(&coded);
  coded.Trim();
  return bytes;
}

uint32_t ReadVersion(absl::string_view data) {
  uint32_t version = 0;
  for (int i = 3; i >= 0; --i) {
    version = (version << 8) | static_cast<unsigned char>(data[4 + i]);
  }
  return version;
}

}  // namespace

std::string SealSnapshot(const v1::SnapshotContent& content,
                         const SnapshotSeal& seal) {
  std::string data(kMagic);
  for (int i = 0; i < 4; ++i) {
    data.push_back(static_cast<char>((kSnapshotVersion >> (8 * i)) & 0xff));
  }
  data.push_back(static_cast<char>(seal.key.empty() ? kChecksum : kKeyedMac));
  data += Serialize(content);
  data += Digest(data, seal);
  return data;
}

absl::StatusOr<v1::SnapshotContent> OpenSnapshot(absl::string_view data,
                                                 const SnapshotSeal& seal,
                                                 int64_t max_bytes,
                                                 absl::string_view field) {
  if (static_cast<int64_t>(data.size()) > max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        field, ": ", data.size(), " bytes exceed this server's limit of ",
        max_bytes, " (GetInfo limits.max_snapshot_bytes)"));
  }
  if (data.size() < kHeaderBytes + kDigestBytes ||
      data.substr(0, kMagic.size()) != kMagic) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", data.size(),
                     " bytes are not a posewire session snapshot (send "
                     "SessionSnapshot.data unchanged)"));
  }
  const uint32_t version = ReadVersion(data);
  if (version > kSnapshotVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        field, ": snapshot format version ", version,
        " is newer than this server's ", kSnapshotVersion,
        " (GetInfo limits.snapshot_version): resume on a server at least as "
        "new as the one that took it"));
  }
  if (version == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": snapshot format version 0 does not exist"));
  }
  const unsigned char kind = static_cast<unsigned char>(data[8]);
  if (kind != kChecksum && kind != kKeyedMac) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": unknown integrity kind ", static_cast<int>(kind),
                     " (the snapshot is damaged)"));
  }
  if ((kind == kKeyedMac) != !seal.key.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        field, ": the snapshot is sealed ",
        kind == kKeyedMac ? "with a key" : "without a key", " but this server ",
        seal.key.empty() ? "has no --snapshot_key_file"
                         : "requires one (--snapshot_key_file)",
        ": every replica must share the same key, or none"));
  }
  const absl::string_view sealed = data.substr(0, data.size() - kDigestBytes);
  const std::string expected = Digest(sealed, seal);
  // Constant time: a keyed seal must not reveal how much of a forged
  // digest was right.
  if (CRYPTO_memcmp(expected.data(), data.data() + sealed.size(),
                    kDigestBytes) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": the ", kind == kKeyedMac ? "HMAC" : "checksum",
                     " does not match: the snapshot (", data.size(),
                     " bytes) was truncated or altered"));
  }
  v1::SnapshotContent content;
  if (!content.ParseFromArray(sealed.data() + kHeaderBytes,
                              static_cast<int>(sealed.size() - kHeaderBytes))) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": the sealed content does not parse as SnapshotContent"));
  }
  return content;
}

std::string RegistrationHash(const google::protobuf::MessageLite& message) {
  // The unkeyed digest: a registration's hash is the same on every replica.
  return absl::BytesToHexString(Digest(Serialize(message), SnapshotSeal()));
}

}  // namespace posewire::server
