// `posewire solve FILE`: one unary Solve of an asset's pose.
//
// Loads a .bvh, .gltf or .glb file, sends its skeleton inline and its clips
// with one character whose pipeline is "sample the clip at the time" followed
// by the operations of --ops_json (any posewire.v1.Operation the server
// implements, IK included, in protobuf's JSON mapping), and prints the
// solved local pose as JSON or writes it as a one-frame BVH.
#ifndef POSEWIRE_CLIENTS_CLI_SOLVE_COMMAND_H_
#define POSEWIRE_CLIENTS_CLI_SOLVE_COMMAND_H_

#include <optional>
#include <string>

#include "clients/cpp/posewire_client.h"

namespace posewire::cli {

struct SolveOptions {
  std::string file;
  // Empty: the file's first clip (none if it has no clips).
  std::string clip;
  // At most one of them; neither: time 0.
  std::optional<float> time;
  std::optional<int> frame;
  // Sample with PLAYBACK_MODE_LOOP instead of CLAMP.
  bool loop = false;
  // Seconds stateful ops (crossfade, dynamics) advance by.
  float dt = 0.0f;
  std::string ops_json;
  // "json" or "bvh".
  std::string format = "json";
  // Empty or "-": standard output.
  std::string out;
  // Also ask for (and print) the model-space pose. JSON only.
  bool model_pose = false;
};

// Returns the process exit code: 0 solved, 1 failed (the error is printed to
// standard error with its code and the server's message), 2 usage error.
int RunSolve(client::Client& client, const SolveOptions& options);

}  // namespace posewire::cli

#endif  // POSEWIRE_CLIENTS_CLI_SOLVE_COMMAND_H_
