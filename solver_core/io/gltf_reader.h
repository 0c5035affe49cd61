// glTF 2.0 reader (.gltf with external or embedded buffers, and .glb) through
// tinygltf: skin joints into a Skeleton, animations into Clips. The format is
// the Khronos glTF 2.0 specification (registry.khronos.org/glTF/specs/2.0);
// tinygltf only parses the JSON and the buffers, and every index, byte range
// and value it hands back is checked here before it is used.
//
// Skeleton
//   Joints are the joints of the chosen skin, or the union of every skin's
//   joints (options.skin == -1; RobotExpressive's two skins share the same 43
//   joints). A file without skins is a node-animation file: every node of the
//   default scene (scene 0 when none is marked, all nodes when there are no
//   scenes) becomes a joint, with a warning.
//   Order: a depth-first pre-order walk of the node forest (the default
//   scene's roots first, then any other parentless node by index) keeping
//   only the joints, so each parent precedes its children and every subtree
//   is contiguous. A joint's parent is its nearest ancestor node that is a
//   joint, or kNoParent.
//   Names are node names; an unnamed node, or a later node repeating an
//   earlier joint's name, becomes "node_<index>" (made unique if a node is
//   really called that), with a warning.
//   Rest pose: the node's local TRS as authored (not the bind pose of
//   inverseBindMatrices, which is ignored), or its matrix decomposed into
//   TRS; a matrix with shear, a mirror (negative determinant), a zero scale
//   or a projective last row is an error naming the node.
//   Non-joint nodes between a joint and its joint parent, or above a root
//   joint (RiggedSimple's Z_UP and Armature, RobotExpressive's RobotArmature
//   with its x100 scale), are folded: their static transform P is composed
//   into the joint's rest transform and every key as Combine(P, key)
//   (translation keys as points, rotations pre-multiplied, scales
//   multiplied, cubic-spline tangents as vectors), with a warning. Model-space
//   joint positions then match what a glTF viewer draws. The fold is exact
//   for uniform ancestor scale; a non-uniform one is approximated the way
//   posewire's TRS composition always is (see transform.h), with a warning.
//   Channels that animate a folded node cannot be kept and are reported.
//   Non-joint leaf children of a joint that carry no mesh, camera or skin
//   (Blender's "<bone>_end" tips) become EndSites at their translation.
//
// Clips
//   One Clip per animation, named after it or "animation_<i>". Translation,
//   rotation and scale channels on joints become tracks (STEP, LINEAR or
//   CUBICSPLINE, the latter stored as [in, value, out] triplets as clip.h
//   describes); 'weights' channels are skipped silently, channels on other
//   nodes with a warning. Key times are kept as authored (they may start
//   after 0); duration is the largest key time over the imported tracks.
//   Outputs may be float or, as the specification and KHR_mesh_quantization
//   allow, normalised or plain 8/16-bit integers; sparse accessors and
//   interleaved buffer views (byteStride) are read. Rotation keys are
//   renormalised when their norm is within options.max_rotation_norm_error
//   of 1; other norms (zero included) and non-finite values are errors
//   naming the animation, channel and key, as are times that are negative,
//   non-finite or not strictly increasing, and two channels with the same
//   target.
//
// Errors
//   Every failure is an absl::Status whose message starts with the path and
//   names the node, skin, accessor or animation channel at fault: NOT_FOUND
//   for a missing file (or missing external buffer), INVALID_ARGUMENT for
//   anything malformed (not glTF, truncated .glb, JSON syntax, accessor or
//   buffer view out of bounds, dangling node/skin/sampler indices, a node
//   with two parents or in a cycle, bad values, animation data compressed
//   with EXT_meshopt_compression, which is not decoded). Nothing is printed.
//   External buffers and images are only read from the glTF file's own
//   directory tree (a URI with ".." or an absolute path is not followed).
#ifndef POSEWIRE_SOLVER_CORE_IO_GLTF_READER_H_
#define POSEWIRE_SOLVER_CORE_IO_GLTF_READER_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "solver_core/io/asset.h"

namespace posewire {

struct GltfReadOptions {
  // Which skin becomes the skeleton; -1 takes the union of every skin's
  // joints (files such as RobotExpressive split one rig over several skins).
  int skin = -1;
  // Fold the static transform of non-joint ancestor nodes into the joints
  // below them (see above). When false those transforms are dropped with a
  // warning: the rig is then expressed in its armature's own space.
  bool fold_non_joint_ancestors = true;
  // Rotation keys and rest rotations whose norm differs from 1 by at most
  // this much are renormalised (8-bit quantised keys are off by up to ~1%);
  // beyond it the value is rejected as corrupt.
  float max_rotation_norm_error = 0.1f;
};

// Reads a .gltf or .glb file (recognised by the "glTF" binary magic, so the
// extension does not matter). Errors name the file and the node, accessor or
// animation channel at fault.
absl::StatusOr<ImportedAsset> ReadGltfFile(const std::string& path,
                                           const GltfReadOptions& options = {});

// Parses .gltf or .glb bytes held in memory (an upload, a fuzzer's input);
// `source` names them in errors. With no directory to resolve them against,
// external URIs are never followed: buffers must be embedded (a data: URI or
// the .glb BIN chunk), and any other buffer URI is NOT_FOUND.
absl::StatusOr<ImportedAsset> ParseGltf(absl::Span<const unsigned char> bytes,
                                        absl::string_view source,
                                        const GltfReadOptions& options = {});

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_IO_GLTF_READER_H_
