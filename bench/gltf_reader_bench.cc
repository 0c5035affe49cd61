// glTF import (ReadGltfFile) of the real rigs: file read (page-cached after
// the first iteration), GLB container checks, tinygltf's JSON parse, node
// forest, skeleton and every clip decoded, folded and validated. Images are
// never decoded. Items are key values imported (translation, rotation and
// scale values over all clips), so items_per_second reads as keys per second.
//
// ./build/bench/posewire-bench --benchmark_filter=BM_ReadGltf
//     --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "solver_core/io/gltf_reader.h"

namespace posewire {
namespace {

int64_t KeyValues(const ImportedAsset& asset) {
  int64_t n = 0;
  for (const Clip& clip : asset.clips) {
    for (const JointTracks& t : clip.tracks) {
      n += static_cast<int64_t>(t.translation.values.size() +
                                t.rotation.values.size() +
                                t.scale.values.size());
    }
  }
  return n;
}

void BM_ReadGltf(benchmark::State& state, const char* file_name) {
  const std::string path =
      std::string(POSEWIRE_BENCH_DATA_DIR) + "/" + file_name;
  int64_t keys = 0;
  for (auto _ : state) {
    absl::StatusOr<ImportedAsset> asset = ReadGltfFile(path);
    if (!asset.ok()) {
      state.SkipWithError(std::string(asset.status().message()).c_str());
      break;
    }
    keys = KeyValues(*asset);
    benchmark::DoNotOptimize(asset->clips.data());
  }
  state.SetItemsProcessed(state.iterations() * keys);
  state.SetBytesProcessed(
      state.iterations() *
      static_cast<int64_t>(std::filesystem::file_size(path)));
}
BENCHMARK_CAPTURE(BM_ReadGltf, Fox, "Fox.glb")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ReadGltf, RobotExpressive, "RobotExpressive.glb")
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace posewire
