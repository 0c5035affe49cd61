// BVH parsing (ParseBvh) on real CMU files held in memory, so the figure is
// the parser's and not the disk's: tokenising, number parsing, Euler to
// quaternion conversion and clip validation.
//
// ./build/bench/posewire-bench --benchmark_filter=BM_ReadBvh
//     --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "solver_core/io/bvh_reader.h"

namespace posewire {
namespace {

std::string ReadWholeFile(const std::string& file_name) {
  const std::string path =
      std::string(POSEWIRE_BENCH_DATA_DIR) + "/" + file_name;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    std::cerr << "cannot open benchmark data " << path << "\n";
    std::exit(1);
  }
  std::string text;
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), f)) > 0) {
    text.append(buffer, n);
  }
  std::fclose(f);
  return text;
}

void BM_ReadBvh(benchmark::State& state, const char* file_name) {
  const std::string text = ReadWholeFile(file_name);
  for (auto _ : state) {
    absl::StatusOr<ImportedAsset> asset = ParseBvh(text, file_name);
    if (!asset.ok()) {
      state.SkipWithError(std::string(asset.status().message()).c_str());
      break;
    }
    benchmark::DoNotOptimize(asset->clips.data());
  }
  state.SetBytesProcessed(state.iterations() *
                          static_cast<int64_t>(text.size()));
}
BENCHMARK_CAPTURE(BM_ReadBvh, climb_reach_4511_frames,
                  "cmu_01_03_climb_reach.bvh")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ReadBvh, walk_994_frames, "cmu_131_01_walk.bvh")
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace posewire
