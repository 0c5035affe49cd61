// libFuzzer target: arbitrary bytes as a BVH file through ParseBvh, the
// entry point ReadBvhFile and the CLI use. Errors are fine; a crash, a leak,
// undefined behaviour, a hang or an accepted asset that breaks the reader's
// promises (fuzz/asset_checks.h) is not.
#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "fuzz/asset_checks.h"
#include "solver_core/io/bvh_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<posewire::ImportedAsset> asset =
      posewire::ParseBvh(text, "fuzz.bvh");
  if (asset.ok()) posewire::fuzz::CheckImportedAsset(*asset);
  return 0;
}
