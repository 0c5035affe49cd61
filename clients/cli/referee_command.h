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
//
// With --ray, the recording is also a hit-registration check: frames carry
// the clip time, the character gets a capsule per bone (AutoHitboxes), and
// once the frame at or after --at is in, a HitQuery rewinds the character
// to --at and casts the ray; the hit (joint, distance, point, normal) or
// the miss is printed.
#ifndef POSEWIRE_CLIENTS_CLI_REFEREE_COMMAND_H_
#define POSEWIRE_CLIENTS_CLI_REFEREE_COMMAND_H_

#include <string>

#include "clients/cpp/posewire_client.h"
#include "solver_core/model/skeleton.h"

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
  // Empty: no hit query. Else "ox,oy,oz,dx,dy,dz", model space of FILE.
  std::string ray;
  // Seconds into the clip to rewind to for the ray.
  double at = 0.0;
};

// A capsule along every bone of `skeleton` long enough to hit (at least 2%
// of the rest pose's largest extent), from the joint to its first child,
// radius 15% of the bone's length: a stand-in for a game's hitboxes.
google::protobuf::RepeatedPtrField<v1::Hitbox> AutoHitboxes(
    const Skeleton& skeleton);

// Returns the exit code: 0 when the report ran (flagged frames or not), 1
// when the server refused something or a file could not be read, 2 for a
// usage error.
int RunReferee(client::Client& client, const RefereeOptions& options);

}  // namespace posewire::cli

#endif  // POSEWIRE_CLIENTS_CLI_REFEREE_COMMAND_H_
