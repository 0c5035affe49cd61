// `posewire bake FILE` and `posewire retarget FILE --to=RIG`: a whole clip
// through a pipeline on the server (the Bake RPC), written as a file.
//
// bake: FILE's clip (--clip, default its first) is sampled at every frame
// of --fps (default: the clip's own frame rate) and run through the
// --ops_json ops, state carried from frame to frame.
// retarget: the same clip played onto RIG's skeleton by a retarget op
// (chains detected by name), then the --ops_json ops.
// The frames are written to --out: .bvh, .glb or .gltf (chosen by the
// extension), on the baked skeleton with its end sites.
#ifndef POSEWIRE_CLIENTS_CLI_BAKE_COMMAND_H_
#define POSEWIRE_CLIENTS_CLI_BAKE_COMMAND_H_

#include <optional>
#include <string>

#include "clients/cpp/posewire_client.h"

namespace posewire::cli {

struct BakeOptions {
  std::string file;
  // Empty: the file's first clip.
  std::string clip;
  std::string ops_json;
  // Frames per second; unset: the clip's own rate (its key interval).
  std::optional<double> fps;
  // Frames to bake; unset: the clip from `start` to its end.
  std::optional<int> frame_count;
  double start = 0.0;
  // Times past the clip's end wrap around instead of holding its last pose.
  bool loop = false;
  // .bvh, .glb or .gltf.
  std::string out;
  // retarget: the rig file whose skeleton the clip is played onto; empty
  // for bake.
  std::string to;
  // retarget: hold the feet where the source's are planted (the retarget
  // op's feet pass) instead of letting them slide.
  bool lock_feet = false;
  // retarget: put the hands where the scaled source puts them (the retarget
  // op's hands pass).
  bool match_hands = false;
};

// Returns the process exit code: 0 written, 1 failed (the server's or the
// file's error on standard error), 2 usage error.
int RunBake(client::Client& client, const BakeOptions& options);

}  // namespace posewire::cli

#endif  // POSEWIRE_CLIENTS_CLI_BAKE_COMMAND_H_
