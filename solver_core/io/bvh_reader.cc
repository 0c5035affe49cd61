#include "solver_core/io/bvh_reader.h"
namespace posewire {
absl::StatusOr<ImportedAsset> ParseBvh(absl::string_view, absl::string_view) { return absl::UnimplementedError("wip"); }
absl::StatusOr<ImportedAsset> ReadBvhFile(const std::string&) { return absl::UnimplementedError("wip"); }
}
