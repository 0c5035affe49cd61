#include "bench/bench_data.h"

#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>

#include "solver_core/io/asset_reader.h"

namespace posewire::bench {

const ImportedAsset& LoadAsset(const std::string& file_name) {
  static std::mutex mutex;
  static auto* cache =
      new std::map<std::string, std::unique_ptr<ImportedAsset>>();
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = (*cache)[file_name];
  if (slot == nullptr) {
    auto read =
        ReadAssetFile(std::string(POSEWIRE_BENCH_DATA_DIR) + "/" + file_name);
    if (!read.ok()) {
      std::cerr << "cannot load benchmark data: " << read.status() << "\n";
      std::exit(1);
    }
    slot = std::make_unique<ImportedAsset>(*std::move(read));
  }
  return *slot;
}

}  // namespace posewire::bench
