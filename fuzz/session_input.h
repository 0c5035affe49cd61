// The session fuzzer's input format, shared with the seed generator so both
// agree: messages one after another, each a varint byte length followed by
// that many bytes of a serialised SessionRequest.
#ifndef POSEWIRE_FUZZ_SESSION_INPUT_H_
#define POSEWIRE_FUZZ_SESSION_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "posewire/v1/posewire.pb.h"

namespace posewire::fuzz {

// Most messages one input may hold: bounds the work per input, so a slow
// input means a slow message, not a long stream.
inline constexpr int kMaxSessionMessages = 64;

class SessionInputReader {
 public:
  SessionInputReader(const uint8_t* data, size_t size)
      : data_(data), size_(size) {}

  // Reads the next message into `request`; false at the end of the stream
  // (no more bytes, a truncated or unparsable message, or the cap reached).
  bool Next(v1::SessionRequest* request);

 private:
  const uint8_t* data_;
  size_t size_;
  size_t offset_ = 0;
  int count_ = 0;
};

// Appends `request` to `out` in the format above.
void AppendSessionMessage(const v1::SessionRequest& request, std::string* out);

// Whether `response` is the answer Session::Handle owes `request`: its own
// FrameResult (same sequence) for a frame, a QueryResult for a query, a
// snapshot for a snapshot request, a ResumeResult for a resume, and a
// Registered for everything else (registrations and an empty request).
bool AnsweredInKind(const v1::SessionRequest& request,
                    const v1::SessionResponse& response);

}  // namespace posewire::fuzz

#endif  // POSEWIRE_FUZZ_SESSION_INPUT_H_
