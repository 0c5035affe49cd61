// What every asset reader promises about a successful result, checked on
// each input a fuzzer gets through (see docs/RELIABILITY.md, "Fuzzing").
// A broken promise aborts, so libFuzzer keeps the input as a crash.
#ifndef POSEWIRE_FUZZ_ASSET_CHECKS_H_
#define POSEWIRE_FUZZ_ASSET_CHECKS_H_

#include "solver_core/io/asset.h"

namespace posewire::fuzz {

// Aborts unless: the skeleton re-validates from its own parts, every clip
// validates against it and samples (at its ends, its middle and past its
// end) into finite transforms, and every end site hangs off a real joint at
// a finite offset.
void CheckImportedAsset(const ImportedAsset& asset);

}  // namespace posewire::fuzz

#endif  // POSEWIRE_FUZZ_ASSET_CHECKS_H_
