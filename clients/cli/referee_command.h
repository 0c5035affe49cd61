// `posewire referee FILE`: a game server's plausibility check over a clip,
// frame by frame, as a referee would see a player's claims.
//
// Samples the clip at --rate and sends each pose, with the frame's dt, to a
// Session whose rig is one plausibility op at its defaults. With
// --limits_from=OTHER, joint limits are first learnt on the server
// (LearnLimits) from OTHER's clips with a --margin_degrees margin and used
// for the range-of-motion check on the joints of FILE that share their
// names. Prints each flagged frame with its violations, then a summary by
// check.
#ifndef POSEWIRE_CLIENTS_CLI_REFEREE_COMMAND_H_
#define POSEWIRE_CLIENTS_CLI_REFEREE_COMMAND_H_

#include <string>

#include "clients/cpp/posewire_client.h"

namespace posewire::cli {

struct RefereeOptions {
  std::string file;
  // Empty: the file's first clip.
  std::string clip;
  // Claims per second of animation.
  double rate = 60.0;
  // Empty: no range-of-motion check.
  std::string limits_from;
  double margin_degrees = 30.0;
};

// Returns the exit code: 0 when the report ran (flagged frames or not), 1
// when the server refused something or a file could not be read, 2 for a
// usage error.
int RunReferee(client::Client& client, const RefereeOptions& options);

}  // namespace posewire::cli

#endif  // POSEWIRE_CLIENTS_CLI_REFEREE_COMMAND_H_
