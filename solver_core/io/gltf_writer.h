// glTF 2.0 writer: a Skeleton and a sequence of local poses as a .glb (or a
// .gltf with its buffer embedded as a data: URI) that ReadGltfFile, Blender,
// three.js and other glTF importers read back. The format is the Khronos
// glTF 2.0 specification (registry.khronos.org/glTF/specs/2.0); tinygltf
// serialises the JSON and the GLB container.
//
// What is written:
// - Nodes: one per joint, node j = joint j, named after it, its rest
//   transform as the node's translation, rotation (normalised) and scale
//   (fields equal to glTF's defaults are omitted), its children the
//   skeleton's, in index order. A skeleton whose joints are in depth-first
//   pre-order (everything the BVH and glTF readers produce) reads back with
//   the same indices; another topological order reads back in pre-order
//   (match joints by name).
// - End sites: a leaf node "<joint>_end" (then "<joint>_end_2", ...) under
//   its joint, at the site's offset, after the joint's children. The glTF
//   reader turns such mesh-less, non-joint leaves back into EndSites.
// - One scene (the default) whose nodes are the root joints; several roots
//   stay several roots.
// - One skin listing every joint, with inverseBindMatrices: the inverses of
//   the joints' rest world matrices composed as glTF composes nodes
//   (T * R * S products), which is what importers that rebuild a bind pose
//   (Blender's "guess original bind pose") expect. No mesh: Blender 3.4's
//   importer builds the armature from the skin alone (tests/blender checks
//   it), and a posewire skeleton has no geometry to offer.
// - One animation (options.animation_name) with LINEAR samplers sharing one
//   input of key times i * frame_time. Per joint, translation, rotation and
//   scale channels; a channel whose value equals the joint's rest value in
//   every frame is left out, since readers (glTF's rule, and SamplingJob's
//   for an empty track) then use the node's rest value, which is that
//   value. The first root's rotation channel is always
//   written: glTF wants at least one channel, and it keeps the clip's length.
//   Rotation keys are normalised and written (x, y, z, w); each is flipped
//   to the hemisphere of the previous key (q and -q are the same rotation)
//   so that interpolating between keys takes the short way.
// - Output is deterministic: the same input gives the same bytes.
//
// What differs from posewire:
// - Scale composition: glTF viewers compose node matrices, posewire composes
//   TRS without shear (transform.h). Both put a joint's children at the
//   same place, and agree everywhere for uniform scale; below a joint with
//   a non-uniform scale whose child is rotated, a viewer draws the child's
//   descendants elsewhere than posewire's forward kinematics does.
//   posewire's own reader gets the local TRS back as written either way.
// - A joint whose rest scale has a zero component has no inverse bind matrix
//   and is refused.
//
// Round trip: ReadGltfFile(WriteGltf(s, poses)) has the same joint names,
// parents, rest pose, end sites and local TRS keys within float rounding of
// the normalised rotations (tested to 1e-5 on the CMU walk, Fox and
// RobotExpressive).
#ifndef POSEWIRE_SOLVER_CORE_IO_GLTF_WRITER_H_
#define POSEWIRE_SOLVER_CORE_IO_GLTF_WRITER_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "solver_core/io/asset.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/skeleton.h"

namespace posewire {

struct GltfWriteOptions {
  // Seconds between keys; finite and > 0, and small enough that the key
  // times i * frame_time stay finite and strictly increasing as floats.
  float frame_time = 1.0f / 30.0f;
  // A .glb (binary container, buffer in its BIN chunk) when true; .gltf JSON
  // with the buffer as a base64 data: URI when false. WriteGltfFile picks
  // this from the path's extension instead.
  bool binary = true;
  // The animation's name; empty writes none (readers then make one up).
  // Joint and animation names must be valid UTF-8 without NUL bytes, as
  // glTF's JSON requires.
  std::string animation_name = "posewire";
  // Tips written as "<joint>_end" leaf nodes (ImportedAsset::end_sites).
  absl::Span<const EndSite> end_sites;
};

// glTF bytes for `frames` (at least one; each a valid local pose of
// `skeleton`, as ValidatePose checks). Errors are INVALID_ARGUMENT naming
// the frame, joint or option.
absl::StatusOr<std::string> WriteGltf(const Skeleton& skeleton,
                                      absl::Span<const LocalPose> frames,
                                      const GltfWriteOptions& options = {});

// WriteGltf to a file (replaced if it exists): binary for a ".glb" path,
// JSON for ".gltf" (case-insensitive; options.binary is ignored), any other
// extension is INVALID_ARGUMENT. Errors name `path`.
absl::Status WriteGltfFile(const std::string& path, const Skeleton& skeleton,
                           absl::Span<const LocalPose> frames,
                           const GltfWriteOptions& options = {});

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_IO_GLTF_WRITER_H_
