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

// The game's tick time of frame `sequence` when frames are timed: one tick
// of `dt` seconds per sequence number, from dt for the first frame.
inline double TickTime(uint64_t sequence, double dt) {
  return static_cast<double>(sequence) * dt;
}

class FrameEncoder {
 public:
  // `request` must hold a frame; its sequence and time are ignored.
  // `seconds_per_frame` > 0: each encoded frame also carries its time,
  // TickTime(sequence, seconds_per_frame).
  explicit FrameEncoder(const v1::SessionRequest& request,
                        double seconds_per_frame = 0.0);

  // Writes the request with frame.sequence = `sequence` (and its time) into
  // `out` (which keeps its capacity across calls). The bytes parse to
  // exactly the message with those fields set; protobuf accepts fields in
  // any order, and these go ahead of the frame's others.
  void Encode(uint64_t sequence, std::string* out) const;

 private:
  double seconds_per_frame_;
  // The frame's fields other than its sequence, serialised.
  std::string frame_rest_;
  // The request's fields other than the frame (none today; kept so that a
  // field added to SessionRequest later is not lost).
  std::string request_rest_;
};

}  // namespace posewire::load

#endif  // POSEWIRE_CLIENTS_LOAD_FRAME_ENCODER_H_
