// BVH (Biovision Hierarchy) writer: a Skeleton and a sequence of local poses
// as BVH text that ReadBvhFile (and Blender's, three.js's and most DCC
// importers) read back. Format as described by Meredith & Maddock, "Motion
// Capture File Formats Explained" (2001), written the way CMU's mocap files
// are: "Zrotation Yrotation Xrotation" channels (R = Rz * Ry * Rx, degrees).
//
// What is written:
// - HIERARCHY: joints nested depth-first, children in index order, so a
//   skeleton whose joints are already in depth-first pre-order (everything
//   the BVH and glTF readers produce) reads back with the same indices;
//   another topological order reads back in pre-order (match joints by
//   name). Several roots become several ROOT blocks. OFFSET is the joint's
//   rest translation (times its parent's rest scale, see below). Given end
//   sites are written as "End Site" blocks after the joint's children.
// - CHANNELS: 6 (Xposition Yposition Zposition Zrotation Yrotation
//   Xrotation) on every root, and on any other joint whose translation in
//   some frame differs from its OFFSET by more than
//   `translation_tolerance` on an axis (BVH replaces the OFFSET by position
//   channels, so an animated translation needs them); 3 rotation channels
//   everywhere else.
// - MOTION: one line per pose. Rotations are converted to Z-Y-X Euler
//   angles in double precision; at gimbal lock (Y = +-90 degrees) X is set
//   to 0 and Z carries the whole twist, which is the same rotation.
// - Numbers are printed with 9 significant digits (every float round-trips)
//   in the C locale.
//
// What BVH cannot hold, and how it is handled:
// - Rest rotations: a BVH rest pose has none. Poses are written with their
//   full local rotation in the channels, so the motion is exact; only the
//   hierarchy's rest orientation is lost.
// - Scale: BVH has none. Each joint's translation is multiplied component-
//   wise by its parent's accumulated model-space scale (the product of its
//   ancestors' scales), which is exactly how posewire composes TRS
//   transforms (transform.h), so the model-space joint positions and
//   rotations of every frame are reproduced; the scales themselves read back
//   as 1.
// - Joint names: BVH names are single tokens. Whitespace and braces in a
//   name become '_'; a name that then collides with another gets "_<index>"
//   appended.
//
// Round trip: ReadBvhFile(WriteBvh(s, poses)) has the same joint names,
// parents and model-space joint positions and rotations within float
// rounding (tested to 1e-4 on the CMU walk and on glTF rigs).
#ifndef POSEWIRE_SOLVER_CORE_IO_BVH_WRITER_H_
#define POSEWIRE_SOLVER_CORE_IO_BVH_WRITER_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "solver_core/io/asset.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/skeleton.h"

namespace posewire {

struct BvhWriteOptions {
  // Seconds per frame ("Frame Time:"); finite and > 0.
  float frame_time = 1.0f / 30.0f;
  // Tips written as "End Site" blocks (ImportedAsset::end_sites).
  absl::Span<const EndSite> end_sites;
  // A non-root joint whose translation stays within this distance of its
  // OFFSET on every axis in every frame gets no position channels (and the
  // difference is dropped). Finite and >= 0.
  float translation_tolerance = 1e-5f;
};

// BVH text for `frames` (at least one; each a valid local pose of
// `skeleton`, as ValidatePose checks). Errors are INVALID_ARGUMENT naming
// the frame, joint or option.
absl::StatusOr<std::string> WriteBvh(const Skeleton& skeleton,
                                     absl::Span<const LocalPose> frames,
                                     const BvhWriteOptions& options = {});

// WriteBvh to a file (replaced if it exists). Errors name `path`.
absl::Status WriteBvhFile(const std::string& path, const Skeleton& skeleton,
                          absl::Span<const LocalPose> frames,
                          const BvhWriteOptions& options = {});

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_IO_BVH_WRITER_H_
