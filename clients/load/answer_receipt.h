// What posewire-load reads of the server's answers: the statuses, and
// whether each solved character came back with a pose. The stream senders
// read each answer's bytes for just that, skipping the rest in place: a full
// parse builds a message or string for every pose, op result and id of a
// 100-character answer, nearly all of which the load generator never reads,
// on the cores the server under test needs.
#ifndef POSEWIRE_CLIENTS_LOAD_ANSWER_RECEIPT_H_
#define POSEWIRE_CLIENTS_LOAD_ANSWER_RECEIPT_H_

#include <cstdint>
#include <string>

#include "google/protobuf/io/zero_copy_stream.h"

namespace posewire::load {

struct AnswerReceipt {
  // kSnapshot: a SessionSnapshot (asked for, or periodic); kHandover: the
  // one a draining server sends in place of an answer
  // (SessionSnapshot.handover) before it ends the stream; kResumed: the
  // answer to a ResumeSession.
  enum class Kind {
    kNone,
    kRegistered,
    kFrame,
    kQuery,
    kSnapshot,
    kHandover,
    kResumed
  };
  // Which message of the SessionResponse oneof was set.
  Kind kind = Kind::kNone;
  // registered.status.code, frame.status.code, query.status.code,
  // snapshot.status.code (a hand-over) or resume.status.code.
  int code = 0;
  // A snapshot's (or hand-over's) data, to resume from, and the frame it
  // was taken after.
  std::string snapshot_data;
  uint64_t snapshot_after = 0;
  // A resume's answer: the registrations to resend.
  int missing = 0;
  // Characters with code 0 and a pose.
  int64_t ok_characters = 0;
  // The first failed character's code; INTERNAL for a character with code 0
  // but no pose.
  int character_code = 0;
};

// Reads `in` as a serialised posewire.v1.SessionResponse into `receipt`.
// False if the bytes are not a well-formed message.
bool ReadAnswerReceipt(google::protobuf::io::ZeroCopyInputStream* in,
                       AnswerReceipt* receipt);

}  // namespace posewire::load

#endif  // POSEWIRE_CLIENTS_LOAD_ANSWER_RECEIPT_H_
