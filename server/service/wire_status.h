// Writes an absl::Status into the Status field of a session answer.
#ifndef POSEWIRE_SERVER_SERVICE_WIRE_STATUS_H_
#define POSEWIRE_SERVER_SERVICE_WIRE_STATUS_H_

#include <string>

#include "absl/status/status.h"
#include "posewire/v1/posewire.pb.h"

namespace posewire::server {

// Sets `*message`'s status field from `status`, leaving it unset when OK
// (an unset Status reads as code 0 in every language): one sub-message less
// per character for the server to write and each client to parse.
template <typename Message>
void SetStatus(const absl::Status& status, Message* message) {
  if (status.ok()) return;
  v1::Status* out = message->mutable_status();
  out->set_code(static_cast<int>(status.code()));
  out->set_message(std::string(status.message()));
}

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_SERVICE_WIRE_STATUS_H_
