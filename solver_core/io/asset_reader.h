// One entry point for every supported asset format, chosen by extension.
#ifndef POSEWIRE_SOLVER_CORE_IO_ASSET_READER_H_
#define POSEWIRE_SOLVER_CORE_IO_ASSET_READER_H_

#include <string>

#include "absl/status/statusor.h"
#include "solver_core/io/asset.h"

namespace posewire {

// Reads a .bvh, .gltf or .glb file (extension compared case-insensitively).
// Any other extension is INVALID_ARGUMENT naming the supported ones.
absl::StatusOr<ImportedAsset> ReadAssetFile(const std::string& path);

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_IO_ASSET_READER_H_
