// Recorded wire answers: requests and the answers a known-good server gave,
// recorded once (golden_record.cc) and replayed against the current server
// (golden_replay_test.cc). Any change in the bits of any answer fails the
// replay, so a refactoring that claims "same results" is checked over every
// op, over Solve and Session, at defaults and tuned.
//
// File format: a sequence of records, each a varint kind, a varint length
// and that many bytes. A Solve record pair is a SolveRequest then its
// SolveResponse; a Session stream starts with a kStreamStart record and then
// alternates SessionRequest and SessionResponse.
#ifndef POSEWIRE_TESTS_SERVICE_GOLDEN_GOLDEN_IO_H_
#define POSEWIRE_TESTS_SERVICE_GOLDEN_GOLDEN_IO_H_

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/message.h"

namespace posewire::golden {

enum class RecordKind : uint32_t {
  kSolveRequest = 1,
  kSolveResponse = 2,
  kStreamStart = 3,
  kSessionRequest = 4,
  kSessionResponse = 5,
};

struct Record {
  RecordKind kind;
  std::string bytes;  // a serialised message; empty for kStreamStart
};

// Serialised with maps in key order, so that equal messages give equal
// bytes (the answers' state maps would otherwise follow hash order).
inline std::string CanonicalBytes(const google::protobuf::Message& message) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  return bytes;
}

inline std::string EncodeRecords(const std::vector<Record>& records) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    for (const Record& r : records) {
      coded.WriteVarint32(static_cast<uint32_t>(r.kind));
      coded.WriteVarint32(static_cast<uint32_t>(r.bytes.size()));
      coded.WriteString(r.bytes);
    }
  }
  return out;
}

// False when `bytes` are not a whole sequence of records.
inline bool DecodeRecords(const std::string& bytes,
                          std::vector<Record>* records) {
  google::protobuf::io::CodedInputStream coded(
      reinterpret_cast<const uint8_t*>(bytes.data()),
      static_cast<int>(bytes.size()));
  coded.SetTotalBytesLimit(static_cast<int>(bytes.size()) + 1);
  while (coded.CurrentPosition() < static_cast<int>(bytes.size())) {
    uint32_t kind = 0, size = 0;
    Record r;
    if (!coded.ReadVarint32(&kind) || !coded.ReadVarint32(&size) || kind < 1 ||
        kind > 5 || !coded.ReadString(&r.bytes, size)) {
      return false;
    }
    r.kind = static_cast<RecordKind>(kind);
    records->push_back(std::move(r));
  }
  return true;
}

inline bool ReadFile(const std::string& path, std::string* bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  *bytes = buffer.str();
  return true;
}

}  // namespace posewire::golden

#endif  // POSEWIRE_TESTS_SERVICE_GOLDEN_GOLDEN_IO_H_
