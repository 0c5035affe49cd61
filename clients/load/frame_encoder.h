// The wire bytes of a Session frame request for any sequence number, from
// the rest of the request serialised once. The load generator sends the
// same few frames over and over with only the sequence changing; letting
// gRPC serialise the message each time (size pass, then write pass, over a
// thousand sub-messages per 100-character frame) was a fifth of the
// client's CPU, on the cores the server under test needs.
#ifndef POSEWIRE_CLIENTS_LOAD_FRAME_ENCODER_H_
#define POSEWIRE_CLIENTS_LOAD_FRAME_ENCODER_H_

#include <cstdint>
#include <string>

#include "posewire/v1/posewire.pb.h"

namespace posewire::load {

class FrameEncoder {
 public:
  // `request` must hold a frame; its sequence is ignored.
  explicit FrameEncoder(const v1::SessionRequest& request);

  // Writes the request with frame.sequence = `sequence` into `out` (which
  // keeps its capacity across calls). The bytes parse to exactly the
  // message with that sequence set; protobuf accepts the sequence field
  // ahead of the frame's other fields, which is where it is put.
  void Encode(uint64_t sequence, std::string* out) const;

 private:
  // The frame's fields other than its sequence, serialised.
  std::string frame_rest_;
  // The request's fields other than the frame (none today; kept so that a
  // field added to SessionRequest later is not lost).
  std::string request_rest_;
};

}  // namespace posewire::load

#endif  // POSEWIRE_CLIENTS_LOAD_FRAME_ENCODER_H_
