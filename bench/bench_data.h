// Real rigs and clips for benchmarks, loaded once per process from tests/data.
#ifndef POSEWIRE_BENCH_BENCH_DATA_H_
#define POSEWIRE_BENCH_BENCH_DATA_H_

#include <string>

#include "solver_core/io/asset.h"

namespace posewire::bench {

// Loads tests/data/<file_name> (BVH or glTF) the first time it is asked for;
// exits with the reader's error if it cannot, since a benchmark without its
// data would measure nothing.
const ImportedAsset& LoadAsset(const std::string& file_name);

}  // namespace posewire::bench

#endif  // POSEWIRE_BENCH_BENCH_DATA_H_
