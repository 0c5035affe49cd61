#include "clients/load/answer_receipt.h"

#include <grpcpp/support/status.h>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"

namespace posewire::load {
namespace {

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;

// Field numbers of posewire/v1/posewire.proto that the receipt reads.
constexpr int kResponseRegistered = 1;  // SessionResponse.registered
constexpr int kResponseFrame = 2;       // SessionResponse.frame
constexpr int kResponseQuery = 3;       // SessionResponse.query
constexpr int kResponseSnapshot = 6;    // SessionResponse.snapshot
constexpr int kSnapshotStatus = 1;      // SessionSnapshot.status
constexpr int kSnapshotData = 2;        // SessionSnapshot.data
constexpr int kSnapshotAfter = 3;       // SessionSnapshot.after_sequence
constexpr int kSnapshotHandover = 7;    // SessionSnapshot.handover
constexpr int kResponseResume = 7;      // SessionResponse.resume
constexpr int kResumeStatus = 1;        // ResumeResult.status
constexpr int kResumeMissing = 2;       // ResumeResult.missing
constexpr int kQueryStatus = 1;         // QueryResult.status
constexpr int kRegisteredStatus = 3;    // Registered.status
constexpr int kFrameStatus = 2;         // FrameResult.status
constexpr int kFrameCharacters = 3;     // FrameResult.characters
constexpr int kCharacterStatus = 2;     // CharacterResult.status
constexpr int kCharacterPose = 3;       // CharacterResult.pose
constexpr int kStatusCode = 1;          // Status.code

bool IsMessage(uint32_t tag, int field) {
  return tag == WireFormatLite::MakeTag(
                    field, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
}

// Reads one length-delimited sub-message, calling `field(tag)` for each of
// its fields; `field` consumes the fields it wants and returns false to
// have the others skipped, or sets `*ok` false on malformed bytes.
template <typename Field>
bool ReadMessage(CodedInputStream& in, Field field) {
  uint32_t length = 0;
  if (!in.ReadVarint32(&length)) return false;
  const int start = in.CurrentPosition();
  const CodedInputStream::Limit limit = in.PushLimit(static_cast<int>(length));
  while (const uint32_t tag = in.ReadTag()) {
    bool ok = true;
    if (!field(tag, &ok) && !WireFormatLite::SkipField(&in, tag)) return false;
    if (!ok) return false;
  }
  if (!in.ConsumedEntireMessage()) return false;
  in.PopLimit(limit);
  // All `length` bytes were there: neither the end of the stream nor an
  // enclosing message's end cut this one short.
  return in.CurrentPosition() - start == static_cast<int64_t>(length);
}

// Status { int32 code = 1; ... } into `*code`.
bool ReadStatus(CodedInputStream& in, int* code) {
  return ReadMessage(in, [&](uint32_t tag, bool* ok) {
    if (tag !=
        WireFormatLite::MakeTag(kStatusCode, WireFormatLite::WIRETYPE_VARINT)) {
      return false;
    }
    uint32_t value = 0;
    *ok = in.ReadVarint32(&value);
    *code = static_cast<int32_t>(value);
    return true;
  });
}

bool ReadCharacter(CodedInputStream& in, AnswerReceipt& receipt) {
  int code = 0;
  bool has_pose = false;
  const bool read = ReadMessage(in, [&](uint32_t tag, bool* ok) {
    if (IsMessage(tag, kCharacterStatus)) {
      *ok = ReadStatus(in, &code);
      return true;
    }
    if (IsMessage(tag, kCharacterPose)) has_pose = true;
    return false;  // skipped, the pose included
  });
  if (!read) return false;
  if (code == 0 && !has_pose) code = grpc::StatusCode::INTERNAL;
  if (code == 0) {
    ++receipt.ok_characters;
  } else if (receipt.character_code == 0) {
    receipt.character_code = code;
  }
  return true;
}

}  // namespace

bool ReadAnswerReceipt(google::protobuf::io::ZeroCopyInputStream* stream,
                       AnswerReceipt* receipt) {
  *receipt = AnswerReceipt();
  CodedInputStream in(stream);
  in.SetTotalBytesLimit(INT32_MAX);
  while (const uint32_t tag = in.ReadTag()) {
    bool read = true;
    if (IsMessage(tag, kResponseRegistered)) {
      receipt->kind = AnswerReceipt::Kind::kRegistered;
      read = ReadMessage(in, [&](uint32_t t, bool* ok) {
        if (!IsMessage(t, kRegisteredStatus)) return false;
        *ok = ReadStatus(in, &receipt->code);
        return true;
      });
    } else if (IsMessage(tag, kResponseFrame)) {
      receipt->kind = AnswerReceipt::Kind::kFrame;
      read = ReadMessage(in, [&](uint32_t t, bool* ok) {
        if (IsMessage(t, kFrameStatus)) {
          *ok = ReadStatus(in, &receipt->code);
        } else if (IsMessage(t, kFrameCharacters)) {
          *ok = ReadCharacter(in, *receipt);
        } else {
          return false;
        }
        return true;
      });
    } else if (IsMessage(tag, kResponseQuery)) {
      receipt->kind = AnswerReceipt::Kind::kQuery;
      read = ReadMessage(in, [&](uint32_t t, bool* ok) {
        if (!IsMessage(t, kQueryStatus)) return false;
        *ok = ReadStatus(in, &receipt->code);
        return true;
      });
    } else if (IsMessage(tag, kResponseSnapshot)) {
      bool handover = false;
      read = ReadMessage(in, [&](uint32_t t, bool* ok) {
        if (IsMessage(t, kSnapshotStatus)) {
          *ok = ReadStatus(in, &receipt->code);
        } else if (IsMessage(t, kSnapshotData)) {
          *ok = WireFormatLite::ReadBytes(&in, &receipt->snapshot_data);
        } else if (t == WireFormatLite::MakeTag(
                            kSnapshotAfter, WireFormatLite::WIRETYPE_VARINT)) {
          *ok = in.ReadVarint64(&receipt->snapshot_after);
        } else if (t ==
                   WireFormatLite::MakeTag(kSnapshotHandover,
                                           WireFormatLite::WIRETYPE_VARINT)) {
          uint32_t value = 0;
          *ok = in.ReadVarint32(&value);
          handover = value != 0;
        } else {
          return false;
        }
        return true;
      });
      receipt->kind = handover ? AnswerReceipt::Kind::kHandover
                               : AnswerReceipt::Kind::kSnapshot;
    } else if (IsMessage(tag, kResponseResume)) {
      receipt->kind = AnswerReceipt::Kind::kResumed;
      read = ReadMessage(in, [&](uint32_t t, bool* ok) {
        if (IsMessage(t, kResumeStatus)) {
          *ok = ReadStatus(in, &receipt->code);
        } else if (IsMessage(t, kResumeMissing)) {
          ++receipt->missing;
          return false;  // skipped
        } else {
          return false;
        }
        return true;
      });
    } else {
      read = WireFormatLite::SkipField(&in, tag);
    }
    if (!read) return false;
  }
  return in.ConsumedEntireMessage();
}

}  // namespace posewire::load
