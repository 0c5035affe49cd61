// glTF 2.0 reader (.gltf with external or embedded buffers, and .glb) through
// tinygltf: skin joints into a Skeleton, animations into Clips.
#ifndef POSEWIRE_SOLVER_CORE_IO_GLTF_READER_H_
#define POSEWIRE_SOLVER_CORE_IO_GLTF_READER_H_

#include <string>

#include "absl/status/statusor.h"
#include "solver_core/io/asset.h"

namespace posewire {

struct GltfReadOptions {
  // Which skin becomes the skeleton; -1 takes the union of every skin's
  // joints (files such as RobotExpressive split one rig over several skins).
  int skin = -1;
};

// Reads a .gltf or .glb file. Errors name the file and the node, accessor or
// animation channel at fault.
absl::StatusOr<ImportedAsset> ReadGltfFile(const std::string& path,
                                           const GltfReadOptions& options = {});

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_IO_GLTF_READER_H_
