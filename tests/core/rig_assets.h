// The real rigs of tests/data, loaded for tests that map bipeds (the biped
// mapping, retargeting).
#ifndef POSEWIRE_TESTS_CORE_RIG_ASSETS_H_
#define POSEWIRE_TESTS_CORE_RIG_ASSETS_H_

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "solver_core/full_body/biped_mapping.h"
#include "solver_core/io/bvh_reader.h"
#include "solver_core/io/gltf_reader.h"

namespace posewire::test_rigs {

// A BVH or glTF file of tests/data.
inline ImportedAsset Load(const std::string& file) {
  const std::string path = std::string(POSEWIRE_TEST_DATA_DIR) + "/" + file;
  absl::StatusOr<ImportedAsset> asset =
      file.ends_with(".bvh") ? ReadBvhFile(path) : ReadGltfFile(path);
  EXPECT_TRUE(asset.ok()) << asset.status();
  return *std::move(asset);
}

// The asset's end sites as biped tips.
inline std::vector<BipedTip> Tips(const ImportedAsset& asset) {
  std::vector<BipedTip> tips;
  for (const EndSite& e : asset.end_sites) tips.push_back({e.joint, e.offset});
  return tips;
}

}  // namespace posewire::test_rigs

#endif  // POSEWIRE_TESTS_CORE_RIG_ASSETS_H_
