#include "fuzz/session_input.h"

namespace posewire::fuzz {

bool SessionInputReader::Next(v1::SessionRequest* request) {
  if (count_ >= kMaxSessionMessages || offset_ >= size_) return false;
  // A base-128 varint of at most 4 bytes: lengths below 2^28.
  uint64_t length = 0;
  for (int shift = 0;; shift += 7) {
    if (offset_ >= size_ || shift > 21) return false;
    const uint8_t byte = data_[offset_++];
    length |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) break;
  }
  if (length > size_ - offset_) return false;
  const bool parsed =
      request->ParseFromArray(data_ + offset_, static_cast<int>(length));
  offset_ += length;
  ++count_;
  return parsed;
}

void AppendSessionMessage(const v1::SessionRequest& request, std::string* out) {
  std::string bytes = request.SerializeAsString();
  uint64_t length = bytes.size();
  while (length >= 0x80) {
    out->push_back(static_cast<char>((length & 0x7f) | 0x80));
    length >>= 7;
  }
  out->push_back(static_cast<char>(length));
  out->append(bytes);
}

bool AnsweredInKind(const v1::SessionRequest& request,
                    const v1::SessionResponse& response) {
  switch (request.message_case()) {
    case v1::SessionRequest::kFrame:
      return response.has_frame() &&
             response.frame().sequence() == request.frame().sequence();
    case v1::SessionRequest::kQuery:
      return response.has_query();
    case v1::SessionRequest::kSnapshot:
      return response.has_snapshot();
    case v1::SessionRequest::kResume:
      return response.has_resume();
    default:
      return response.has_registered();
  }
}

}  // namespace posewire::fuzz
