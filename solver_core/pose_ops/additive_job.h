// Additive layers: MakeAdditiveJob turns a base pose and an additive pose into
// a delta pose; AdditiveJob applies a delta to a pose with a weight, a
// per-joint mask and a blend root.
//
// Source: MakeAdditivePose / Add of Szauer 2020 (docs/REFERENCES.md),
// ch. 12: result = input + (additive - base)), with
// ozz-animation's additive layers as the reference for weights and masks.
// Computing the delta once (when a clip or pose is registered) instead of
// subtracting the base every frame, as the book does, halves the per-frame
// work and lets a delta be stored, sent and reused.
//
// Conventions, per joint (d = delta, b = base, a = additive, in = input):
// - Translation adds: d.t = a.t - b.t; out.t = in.t + w * d.t.
// - Rotation composes in the joint's local space (post-multiplication, as
//   the book's `input * inverse(base) * additive`): d.r = conj(b.r) * a.r,
//   normalised; out.r = in.r * d.r^w, where d.r^w is the shortest-path nlerp
//   from identity to d.r (d.r itself at w = 1). Applying the delta of
//   (b, a) to b with weight 1 gives a.
// - Scale multiplies: d.s = a.s / b.s; out.s = in.s * lerp(1, d.s, w).
//   Scale is a factor, not an offset: a base scale of 2 and an additive of 3
//   means "1.5 times bigger", which must turn an input of 4 into 6. The
//   book's in.s + (a.s - b.s) would give 5, and would turn an input of 0.5
//   with a delta of -1 into a negative (mirrored) scale. A zero component of
//   the base scale is INVALID_ARGUMENT, since no factor maps it to the
//   additive.
// - The weight is in [-1, 1]. A negative weight applies the inverse delta:
//   out.t = in.t - |w| d.t, out.r = in.r * conj(d.r^|w|),
//   out.s = in.s / lerp(1, d.s, |w|), so applying w then -w returns the
//   input (up to rounding). A zero component of that divisor is
//   INVALID_ARGUMENT.
// - Joint weights (optional) multiply the weight and are clamped to [0, 1];
//   NaN or infinite ones are INVALID_ARGUMENT. Joints outside `blend_root`,
//   or whose effective weight is 0, are the input bit for bit.
// - `delta` from MakeAdditiveJob of a pose with itself is exactly the
//   identity (zero translation, identity rotation, unit scale).
// - Outputs may alias inputs (each joint is read before it is written).
#ifndef POSEWIRE_SOLVER_CORE_POSE_OPS_ADDITIVE_JOB_H_
#define POSEWIRE_SOLVER_CORE_POSE_OPS_ADDITIVE_JOB_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "solver_core/model/clip.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"

namespace posewire {

struct MakeAdditiveJob {
  // Inputs: the reference pose and the pose whose difference to it is the
  // additive motion.
  const Skeleton* skeleton = nullptr;
  absl::Span<const Transform> base = {};
  absl::Span<const Transform> additive = {};

  // Output: the delta, one transform per joint.
  absl::Span<Transform> delta = {};

  // Checks sizes, both poses (finite, unit rotations) and that no base
  // scale component is zero.
  absl::Status Validate() const;
  absl::Status Run() const;
  void RunUnchecked() const;
};

struct AdditiveJob {
  // Inputs.
  const Skeleton* skeleton = nullptr;
  absl::Span<const Transform> input = {};
  // Set when `input` is known valid (every transform finite with a unit
  // rotation: CheckPose passed, as a service checks each frame's pose once):
  // Validate() then checks only its size.
  bool input_validated = false;
  // A delta from MakeAdditiveJob (finite, unit rotations).
  absl::Span<const Transform> delta = {};
  // In [-1, 1].
  float weight = 1.0f;
  // Empty (1 everywhere) or one weight per joint.
  absl::Span<const float> joint_weights = {};
  // Only joints in this joint's subtree change (-1: every joint).
  int blend_root = -1;

  // Output: one transform per joint.
  absl::Span<Transform> output = {};

  // Checks sizes, the weight range, joint weights, input and delta poses,
  // and (for negative weights) that no scale divisor is zero.
  absl::Status Validate() const;
  absl::Status Run() const;
  void RunUnchecked() const;
};

// The book's MakeAdditivePose: `clip` sampled at `time` (clamped to the clip)
// over the rest pose; use it as MakeAdditiveJob's base.
absl::StatusOr<LocalPose> SampleAdditiveBase(const Skeleton& skeleton,
                                             const Clip& clip,
                                             float time = 0.0f);

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_POSE_OPS_ADDITIVE_JOB_H_
