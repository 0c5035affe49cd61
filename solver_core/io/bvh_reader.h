// BVH (Biovision Hierarchy) reader: HIERARCHY into a Skeleton, MOTION into
// one Clip with a key per frame on every channel.
//
// Accepted: any rotation channel order per joint (the rotation is the product
// of the axis rotations in the order listed), 3 or 6 channels per joint
// (position channels replace the joint's OFFSET as its translation, as
// three.js and most tools read them), End Site blocks (kept as EndSite tips,
// not joints), LF or CRLF line endings, tabs or spaces, and one extra frame
// line after the declared frame count (some exporters write it; it is
// ignored with a warning). Rejected, with file and line in the message:
// malformed or non-finite numbers, missing or unbalanced braces, unknown
// channel names, a frame with the wrong number of values, fewer frame lines
// than declared, a non-positive frame time.
#ifndef POSEWIRE_SOLVER_CORE_IO_BVH_READER_H_
#define POSEWIRE_SOLVER_CORE_IO_BVH_READER_H_

#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "solver_core/io/asset.h"

namespace posewire {

// Parses BVH text. `source` names it in errors ("walk.bvh:12: ...").
absl::StatusOr<ImportedAsset> ParseBvh(absl::string_view text,
                                       absl::string_view source);

// Reads and parses a .bvh file.
absl::StatusOr<ImportedAsset> ReadBvhFile(const std::string& path);

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_IO_BVH_READER_H_
