// libFuzzer target: arbitrary bytes as a .gltf or .glb file through
// ParseGltf, the in-memory twin of ReadGltfFile (same tinygltf load, same
// checks, no file access). The first byte picks the reader options, so the
// single-skin and no-folding paths are fuzzed too. Errors are fine; a crash,
// a leak, undefined behaviour, a hang, an exception escaping or an accepted
// asset that breaks the reader's promises (fuzz/asset_checks.h) is not.
//
// tinygltf itself is Debian's shared library, built without our
// instrumentation: ASan still checks the heap blocks it allocates and frees,
// but libFuzzer gets no coverage from inside it.
#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "fuzz/asset_checks.h"
#include "solver_core/io/gltf_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  posewire::GltfReadOptions options;
  const uint8_t selector = data[0];
  // Mostly the defaults (selector 0..191); otherwise skin 0..3 or no folding.
  if (selector >= 192 && selector < 224) options.skin = (selector - 192) % 4;
  if (selector >= 224) options.fold_non_joint_ancestors = false;
  absl::StatusOr<posewire::ImportedAsset> asset = posewire::ParseGltf(
      absl::MakeConstSpan(data + 1, size - 1), "fuzz.gltf", options);
  if (asset.ok()) posewire::fuzz::CheckImportedAsset(*asset);
  return 0;
}
