// `posewire inspect FILE`: a rig's joints, hierarchy and clips, as text.
#ifndef POSEWIRE_CLIENTS_CLI_INSPECT_H_
#define POSEWIRE_CLIENTS_CLI_INSPECT_H_

#include <string>

#include "solver_core/io/asset.h"

namespace posewire::cli {

// Renders `asset` for a person: a summary line, the joint tree (index, name,
// parent, rest translation), the end sites, the clips and any warnings.
std::string FormatAsset(const ImportedAsset& asset);

}  // namespace posewire::cli

#endif  // POSEWIRE_CLIENTS_CLI_INSPECT_H_
