// BVH (Biovision Hierarchy) reader: HIERARCHY into a Skeleton, MOTION into
// one Clip with a key per frame on every channel. Format as described by
// Meredith & Maddock, "Motion Capture File Formats Explained" (2001), read
// the way three.js's BVHLoader and Blender's importer read it.
//
// Result: joints are the ROOT and JOINT blocks in file order (parents before
// children); End Site blocks become EndSite tips, not joints. The rest pose
// is each joint's OFFSET with no rotation and unit scale. The clip is named
// after the stem of the file (or of `source`), has key k at time
// k * frame_time, duration (frames - 1) * frame_time and linear tracks: a
// translation track for joints with position channels (they replace the
// OFFSET; an axis without a channel keeps the OFFSET's value), a rotation
// track for joints with rotation channels (the product of the axis
// rotations in the order the CHANNELS line lists them, degrees, so
// "Zrotation Yrotation Xrotation" is Rz * Ry * Rx), never a scale track.
//
// Accepted: any channel order per joint and any count from 0 to 6 of
// distinct channel names (case-insensitive), LF, CRLF or CR line endings,
// tabs or spaces, trailing whitespace and blank lines, a UTF-8 BOM, and one
// extra well-formed frame line after the declared frame count (some
// exporters write it; it is ignored with a warning in
// ImportedAsset::warnings).
//
// Rejected with INVALID_ARGUMENT "source:line: what was expected, what was
// found": malformed numbers ("1.2.3", "1e", "abc", a missing value), NaN,
// infinities and values beyond float range (numbers are parsed with
// std::from_chars, independent of the locale), unknown or repeated channel
// names, missing or unbalanced braces, a missing HIERARCHY, ROOT, OFFSET,
// CHANNELS, MOTION, "Frames:" or "Frame Time:", an End Site with children
// or channels, duplicate joint names, a frame line with the wrong number of
// values, fewer frame lines than declared or more than one extra, zero
// frames, and a frame time that is not positive and finite.
//
// Safe on arbitrary bytes: no recursion (nesting depth is bounded only by
// the joint count), at most kMaxSkeletonJoints joints and 2^24 frames, and
// memory proportional to the input size whatever "Frames:" claims.
#ifndef POSEWIRE_SOLVER_CORE_IO_BVH_READER_H_
#define POSEWIRE_SOLVER_CORE_IO_BVH_READER_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "solver_core/io/asset.h"

namespace posewire {

// Parses BVH text. `source` names it in errors ("walk.bvh:12: ...").
absl::StatusOr<ImportedAsset> ParseBvh(absl::string_view text,
                                       absl::string_view source);

// Reads and parses a .bvh file; errors name `path`. A missing file is
// NOT_FOUND, an unreadable one the matching errno status.
absl::StatusOr<ImportedAsset> ReadBvhFile(const std::string& path);

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_IO_BVH_READER_H_
