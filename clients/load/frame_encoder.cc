#include "clients/load/frame_encoder.h"

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"

namespace posewire::load {

namespace {

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedOutputStream;

// Appends `value` as a base-128 varint.
void AppendVarint(uint64_t value, std::string* out) {
  uint8_t bytes[10];
  const uint8_t* end = CodedOutputStream::WriteVarint64ToArray(value, bytes);
  out->append(reinterpret_cast<const char*>(bytes), end - bytes);
}

}  // namespace

FrameEncoder::FrameEncoder(const v1::SessionRequest& request,
                           double seconds_per_frame)
    : seconds_per_frame_(seconds_per_frame) {
  v1::Frame frame = request.frame();
  frame.clear_sequence();
  frame.clear_time();
  frame_rest_ = frame.SerializeAsString();
  v1::SessionRequest rest = request;
  rest.clear_frame();
  request_rest_ = rest.SerializeAsString();
}

void FrameEncoder::Encode(uint64_t sequence, std::string* out) const {
  std::string sequence_field;
  AppendVarint(WireFormatLite::MakeTag(v1::Frame::kSequenceFieldNumber,
                                       WireFormatLite::WIRETYPE_VARINT),
               &sequence_field);
  AppendVarint(sequence, &sequence_field);
  if (seconds_per_frame_ > 0.0) {
    AppendVarint(WireFormatLite::MakeTag(v1::Frame::kTimeFieldNumber,
                                         WireFormatLite::WIRETYPE_FIXED64),
                 &sequence_field);
    uint8_t bytes[8];
    WireFormatLite::WriteDoubleNoTagToArray(
        TickTime(sequence, seconds_per_frame_), bytes);
    sequence_field.append(reinterpret_cast<const char*>(bytes), 8);
  }

  out->clear();
  out->append(request_rest_);
  AppendVarint(
      WireFormatLite::MakeTag(v1::SessionRequest::kFrameFieldNumber,
                              WireFormatLite::WIRETYPE_LENGTH_DELIMITED),
      out);
  AppendVarint(sequence_field.size() + frame_rest_.size(), out);
  out->append(sequence_field);
  out->append(frame_rest_);
}

}  // namespace posewire::load
