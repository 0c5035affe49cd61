// `posewire stream FILE`: plays an asset's clip through a streaming Session
// and measures each frame's round trip.
//
// Registers the skeleton, every clip of the file (under its name) and one rig
// whose pipeline is the playback op followed by the ops of --ops_json, then K
// characters of that rig, and sends N frames at a fixed rate (or back to back
// with --rate=0). Playback "sample" sends, per frame and character, a
// sample_clip op at that character's time (characters are spread evenly over
// the clip) followed by the --ops_json ops, the way a game sends IK targets
// that change every frame; playback "crossfade" lets the server's crossfade
// player advance the clip by dt, its state kept in the session. Prints a line
// per frame (or every k-th) and a latency summary. Each line is flushed as
// it is printed, so a file or pipe on standard output follows the stream.
// SIGINT (Ctrl-C) stops sending after the frame in flight: the session is
// closed, the summary of the frames so far printed, and the exit code is as
// if those were all the frames asked for. A second SIGINT ends the process
// at once.
#ifndef POSEWIRE_CLIENTS_CLI_STREAM_COMMAND_H_
#define POSEWIRE_CLIENTS_CLI_STREAM_COMMAND_H_

#include <optional>
#include <string>

#include "clients/cpp/posewire_client.h"

namespace posewire::cli {

// Most frames one stream sends: 46 hours at 60 Hz. More is a typo (or an
// overflowed script variable), refused before anything is sent.
inline constexpr int kMaxStreamFrames = 10'000'000;
// Most characters per frame; every server limit is far below (its
// --max_characters, 1024 by default), this only stops a typo from
// allocating gigabytes of ids before the server could refuse them.
inline constexpr int kMaxStreamCharacters = 1'000'000;

struct StreamOptions {
  std::string file;
  // Empty: the file's first clip.
  std::string clip;
  int frames = 100;
  // Frames per second; 0 sends each frame as soon as the previous answer
  // arrived.
  double rate = 60.0;
  int characters = 1;
  std::string ops_json;
  // "sample" or "crossfade".
  std::string playback = "sample";
  // Animation seconds per frame; unset: 1/rate, or 1/60 when rate is 0.
  std::optional<float> dt;
  // Print every k-th frame line (errors always); 0 prints only the summary.
  int print_every = 1;
};

// Returns the exit code: 0 when every frame and character solved, 1 when any
// failed (or the session broke), 2 for a usage error.
int RunStream(client::Client& client, const StreamOptions& options);

}  // namespace posewire::cli

#endif  // POSEWIRE_CLIENTS_CLI_STREAM_COMMAND_H_
