#include "solver_core/io/asset_reader.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "solver_core/io/bvh_reader.h"
#include "solver_core/io/gltf_reader.h"

namespace posewire {

absl::StatusOr<ImportedAsset> ReadAssetFile(const std::string& path) {
  const std::string lower = absl::AsciiStrToLower(path);
  if (absl::EndsWith(lower, ".bvh")) return ReadBvhFile(path);
  if (absl::EndsWith(lower, ".gltf") || absl::EndsWith(lower, ".glb")) {
    return ReadGltfFile(path);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      path, ": unsupported file type (expected .bvh, .gltf or .glb)"));
}

}  // namespace posewire
