#include "solver_core/io/gltf_reader.h"
namespace posewire {
absl::StatusOr<ImportedAsset> ReadGltfFile(const std::string&, const GltfReadOptions&) { return absl::UnimplementedError("wip"); }
}
