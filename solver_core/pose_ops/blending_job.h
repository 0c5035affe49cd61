// BlendingJob: weighted blend of N local poses, with per-joint weight masks
// and an optional blend root.
//
// Generalises the two-pose Blend(a, b, t, root) of Szauer 2020, ch. 12
// (docs/REFERENCES.md) to N layers in the manner of ozz-animation's
// BlendingJob: every layer contributes weight * joint_weight[j] at joint j;
// weights are normalised per joint; translations and scales blend as weighted
// sums, rotations as a weighted quaternion sum in which each layer's
// quaternion is first flipped onto the hemisphere of the first contributing
// layer's (q and -q are the same rotation), then normalised. (ozz compares
// with the running sum instead; comparing with the first keeps the layers
// independent of each other, which lets them pipeline, and is identical for
// two layers.) With two layers this is the book's mix: lerp and
// shortest-path nlerp.
//
// Layout and speed: poses stay arrays of Transform (the interface); the
// kernel reads each Transform as three SSE rows, and normalises rotations
// four joints at a time as q * (1 / sqrt(|q|^2)). The scalar fallback (non-SSE
// builds) performs the same IEEE operations in the same order.
//
// AVX2 (x86-64 CPUs that have it, chosen at run time by ActiveSimdLevel(),
// see simd_level.h; the build stays baseline SSE2): two consecutive 48-byte
// Transforms are exactly three 256-bit rows, (t0 q0), (s0 t1), (q1 s1), so
// each layer adds to two joints with three loads, three multiplies and three
// adds. Where every joint has the same contributors, the rotations of four
// joints are gathered and summed transposed, so the four hemisphere tests
// and squared norms need no transpose and one sign mask flips all four.
// Validate()'s transform scan reads the same rows, and Run() without masks
// or blend root (up to 256 joints) screens the transforms while it blends
// them, into scratch copied to the output once they all pass, instead of
// scanning them first (on a failed screen it validates and blends as
// before, so its statuses and output are unchanged). The results are
// the SSE2 path's bit for bit: every lane performs the same IEEE operations
// in the same order (products x * w, the running sums in layer order, dot
// products summed (x x' + z z') + (y y' + w w') against the first
// contributor, 1 / sqrt(|q|^2) with the same degenerate test, padding lanes
// stored as +0), with no FMA and no reciprocal estimates; joints blend in
// the same groups of four and single tail joints (the two differ for NaN
// sums from unvalidated inputs). blending_job_test compares the two paths
// byte for byte on random blends.
//
// Conventions:
// - A negative layer or joint weight counts as 0; a NaN or infinite one is
//   INVALID_ARGUMENT naming the layer (and the joint for masks), and so is
//   one above 1e6 (weights are relative; such sizes are caller bugs that
//   could overflow the sums).
// - Fallback pose: the layer `base_layer` if set, else the skeleton's rest
//   pose. At a joint where the total weight w is below `threshold`, the
//   fallback is blended in with weight threshold - w (ozz's rule: the result
//   moves continuously to the fallback as the weights fade out), and where
//   w is 0 the output is the fallback bit for bit.
// - Where exactly one layer has a non-zero weight and w >= threshold, the
//   output is that layer's transform bit for bit (so weights 1 and 0 return
//   the inputs unchanged, with no renormalisation rounding).
// - Blend root: joints outside the subtree of `blend_root` do not blend at
//   all; they get the fallback bit for bit. The book's Blend(a, b, t, root)
//   is layers {a: 1 - t, b: t}, base_layer 0, blend_root root.
// - `output` may alias any layer's transforms (in-place blending, as the
//   seed's Blend does): every joint reads all layers before it is written.
// - The arithmetic at a joint depends only on the inputs at that joint: a
//   mask of ones gives the same bits as no mask.
// - On error nothing is written.
#ifndef POSEWIRE_SOLVER_CORE_POSE_OPS_BLENDING_JOB_H_
#define POSEWIRE_SOLVER_CORE_POSE_OPS_BLENDING_JOB_H_

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"

namespace posewire {

struct BlendLayer {
  // One local transform per joint.
  absl::Span<const Transform> transform = {};
  float weight = 0.0f;
  // Empty (weight 1 at every joint) or one weight per joint, multiplying
  // `weight`.
  absl::Span<const float> joint_weights = {};
};

// ozz-animation's default.
inline constexpr float kDefaultBlendThreshold = 0.1f;

struct BlendingJob {
  // Inputs.
  const Skeleton* skeleton = nullptr;
  absl::Span<const BlendLayer> layers = {};
  // Index into `layers` of the fallback pose, or -1 for the rest pose.
  int base_layer = -1;
  // Only joints in this joint's subtree blend (-1: every joint).
  int blend_root = -1;
  // Total weight below which the fallback fills in; finite and >= 0.
  float threshold = kDefaultBlendThreshold;
  // Set when every layer's transforms are already known to be finite with
  // unit rotations (for instance poses SamplingJob or BlendingJob produced
  // from validated inputs). Validate() then checks sizes, indices and
  // weights only, O(layers) without masks, instead of every transform.
  bool layers_validated = false;

  // Output: one transform per joint.
  absl::Span<Transform> output = {};

  // Checks sizes, indices, weights (finite), the threshold and, unless
  // layers_validated, every layer's transforms (finite, unit rotation).
  absl::Status Validate() const;
  // Validates, then blends.
  absl::Status Run() const;
  // Blends without validating; for callers that validated these inputs.
  void RunUnchecked() const;
};

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_POSE_OPS_BLENDING_JOB_H_
