// A character's state on the wire (Solve sends it in and gets it back each
// call): crossfade players by clip name, spring-bone particles as bytes.
#ifndef POSEWIRE_SERVER_OPS_STATE_CODEC_H_
#define POSEWIRE_SERVER_OPS_STATE_CODEC_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/map.h"
#include "posewire/v1/posewire.pb.h"
#include "server/ops/clip_library.h"
#include "server/ops/op.h"

namespace posewire::server {

// Converts wire state into `state`, resolving clip names in `clips`.
// Errors name `field` (e.g. "characters[0].state") and the entry's key.
absl::Status StateFromProto(
    const google::protobuf::Map<std::string, v1::OperationState>& proto,
    ClipLibrary& clips, CharacterState& state, absl::string_view field);

// Writes `state` to the wire form (clip indices become names).
void StateToProto(
    const CharacterState& state, const ClipLibrary& clips,
    google::protobuf::Map<std::string, v1::OperationState>* proto);

}  // namespace posewire::server

#endif  // POSEWIRE_SERVER_OPS_STATE_CODEC_H_
