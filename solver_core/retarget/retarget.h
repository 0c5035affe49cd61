// Retargeting: a pose of one skeleton (the source) transferred onto another
// (the target) by chains, in model space, after the approach of Unreal's IK
// Retargeter FK chains and Godot's retarget modifiers (docs/REFERENCES.md).
//
// A RetargetMap is compiled once per (source skeleton, target skeleton,
// mapping) from both rest poses; RetargetJob then runs it per frame.
//
// Chains. Either detected by name with the biped conventions the full-body
// mapping knows (DetectBipedReferences, biped_mapping.h), on both skeletons:
//   pelvis            the biped pelvis (a one-bone chain; carries root motion)
//   spine             the biped spine, bottom to top
//   neck              the joints strictly between the spine's top and the
//                     head, then the head
//   <side>_clavicle   the clavicle, when both skeletons have one
//   <side>_arm        upper arm, forearm, hand
//   <side>_leg        thigh, calf, foot (the foot only when both have a
//                     foot joint below the calf)
// or given explicitly (RetargetMapping): the pelvis and optionally a root
// joint named on both sides, and chains of joint names, source to target,
// each joint below the one before it. When source and target are the same
// skeleton (names, parents and rest pose bit for bit) and no mapping is
// given, every joint maps to itself: the output is the source pose, bit for
// bit (a copy).
//
// Transfer, per mapped target bone j with source bone s (both in model
// space, rotations only):
//   D        = Q_src(s) * conj(Q_src_rest(s))  the source's rotation from
//                                              its rest pose
//   Q_tgt(j) = D * A_j * Q_tgt_rest(j)
// where A_j is the smallest rotation that turns j's rest segment (from j to
// the next bone of its chain) onto s's rest segment, computed once. A
// segment's direction therefore follows the source's exactly, whatever the
// two rigs' bone axes and rest orientations (T or A pose); the bone's twist
// follows the source's rest-relative twist. The last bone of a chain (hand,
// foot, head), which has no next bone, uses the previous bone's A. The
// model rotation becomes a local one against the target's parent as solved
// this frame, so unmapped joints between mapped ones (CMU's hip joints,
// Daz's buttocks) keep their input rotation without bending what is below.
//
// Chains of different bone counts (3 neck bones onto 2): each point of a
// chain (its joints, then the joint its last segment ends at, if any) gets
// its parameter along the chain, the rest-pose length from the first joint
// to it over the chain's length. A target bone spanning parameters
// [t, t'] takes the source deltas D of the two source bones around t,
// slerped by where t lies between them (its twist), and is then swung, the
// smallest rotation, so that its segment lies along the source's chord from
// the point at t to the point at t' of the source chain as posed this
// frame; its A aligns it with that chord at rest. So each target segment
// follows the stretch of the source chain it stands for, and a chain's
// overall line follows the source's. Chains of equal counts map bone to
// bone.
//
// Everything else: target joints in no chain keep the input pose (fingers,
// toes, twist bones, tails), or follow a named source bone
// (Q_tgt(j) = D_src(s) * Q_tgt_rest(j), no alignment). Translations and
// scales are the input's (the target's own bone lengths) except the
// pelvis's: its model position is the target's rest position plus the
// source pelvis's displacement from its rest position, times the root
// scale: the ratio of the target's leg length to the source's (thigh to
// calf to foot or its tip point, rest pose, averaged over both legs; for an
// explicit mapping, the chains named "left_leg" and "right_leg", else the
// ratio of the pelvis heights above the lowest joint), or an override.
//
// Both skeletons are taken to share model-space axes (up and forward): the
// transfer turns each bone as the source's turns, in the same model frame.
#ifndef POSEWIRE_SOLVER_CORE_RETARGET_RETARGET_H_
#define POSEWIRE_SOLVER_CORE_RETARGET_RETARGET_H_

#include <Eigen/Geometry>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "solver_core/full_body/biped_mapping.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/model/transform.h"

namespace posewire {

// A chain of an explicit mapping: joint names, top to bottom.
struct RetargetChainNames {
  std::string name;  // for messages and the leg-length rule
  std::vector<std::string> source;
  std::vector<std::string> target;
};

// A target joint that takes a source joint's rotation from rest.
struct RetargetFollow {
  std::string target;
  std::string source;
};

// Empty chains and pelvis: chains detected by name. `follow` applies either
// way.
struct RetargetMapping {
  std::string source_pelvis;
  std::string target_pelvis;
  // Optional: a joint above the pelvis mapped for its rotation.
  std::string source_root;
  std::string target_root;
  std::vector<RetargetChainNames> chains;
  std::vector<RetargetFollow> follow;
};

struct RetargetOptions {
  // Multiplies the pelvis's displacement; 0: the leg-length ratio.
  float root_scale = 0.0f;
  // Points below leaf joints (BVH End Sites, glTF "_end" tips), used as the
  // end of a limb whose end joint is missing (RobotExpressive's feet).
  std::vector<BipedTip> source_tips;
  std::vector<BipedTip> target_tips;
};

// One mapped chain, as compiled (joint indices).
struct RetargetChain {
  std::string name;
  std::vector<int> source;
  std::vector<int> target;
  // The source joint the last source segment ends at, when it is a joint
  // outside the chain (a leg of thigh and calf ends at the ankle), or -1.
  int source_end = -1;
  // The point the last target segment ends at when it is not a chain joint
  // (a glTF calf's tip, or the target's own foot below the calf), in the
  // last target joint's space, rest pose; unset when there is none.
  std::optional<Eigen::Vector3f> target_end;
};

// A compiled mapping; immutable, shared by every frame of the pair.
class RetargetMap {
 public:
  // Errors: NOT_FOUND for a name that is not a joint (naming the field,
  // e.g. "mapping.chains[1].target[2]", and the name) or when detection
  // finds no biped on a side; INVALID_ARGUMENT for a chain that is empty,
  // repeats a joint (a cycle) or goes up the hierarchy, a joint mapped
  // twice, a negative or non-finite root scale, or a mapping with no chain.
  static absl::StatusOr<RetargetMap> Create(
      const Skeleton& source, const Skeleton& target,
      const RetargetMapping& mapping = {}, const RetargetOptions& options = {});

  RetargetMap() = default;

  int source_joints() const { return source_joints_; }
  int target_joints() const { return target_joints_; }
  bool identity() const { return identity_; }
  float root_scale() const { return root_scale_; }
  int source_pelvis() const { return source_pelvis_; }
  int target_pelvis() const { return target_pelvis_; }
  absl::Span<const RetargetChain> chains() const { return chains_; }

 private:
  friend struct RetargetJob;

  // How target joint `target` is solved.
  struct Bone {
    int target = -1;
    // Source bones a and b, blended by w (0: a only).
    int source_a = -1;
    int source_b = -1;
    float w = 0.0f;
    // A_j * Q_tgt_rest(j): D times this is the target's model rotation.
    Eigen::Quaternionf offset = Eigen::Quaternionf::Identity();
    // Index into chords_, or -1 (bone to bone).
    int chord = -1;
  };
  // A distributed bone's stretch of its source chain: from fraction f0 of
  // segment seg0 to fraction f1 of segment seg1 of the polyline through
  // `joints` (the chain, then the joint its last segment ends at).
  struct Chord {
    std::vector<int> joints;
    int seg0 = 0;
    float f0 = 0.0f;
    int seg1 = 0;
    float f1 = 0.0f;
    // The target bone's rest segment direction in its own frame.
    Eigen::Vector3f bone_direction = Eigen::Vector3f::UnitX();
  };

  int source_joints_ = 0;
  int target_joints_ = 0;
  bool identity_ = false;
  float root_scale_ = 1.0f;
  int source_pelvis_ = -1;
  int target_pelvis_ = -1;
  Eigen::Vector3f source_pelvis_rest_ = Eigen::Vector3f::Zero();
  Eigen::Vector3f target_pelvis_rest_ = Eigen::Vector3f::Zero();
  std::vector<RetargetChain> chains_;
  // Per target joint: index into bones_, or -1 (keeps the input).
  std::vector<int> bone_of_;
  std::vector<Bone> bones_;
  std::vector<Chord> chords_;
  // conj(Q_src_rest(s)) per source joint.
  std::vector<Eigen::Quaternionf> source_rest_inverse_;
};

// Runs a RetargetMap on one frame. `output` may be `input` (in place) but
// must not otherwise overlap it or `source`.
struct RetargetJob {
  const RetargetMap* map = nullptr;
  const Skeleton* source_skeleton = nullptr;
  const Skeleton* target_skeleton = nullptr;
  // The source's local pose.
  absl::Span<const Transform> source;
  // The target's local pose: what unmapped joints keep, and every joint's
  // translation and scale but the pelvis's.
  absl::Span<const Transform> input;
  // Set when `input` is known valid (every transform finite with a unit
  // rotation: CheckPose passed, as a service checks each frame's pose once):
  // Validate() then checks only its size.
  bool input_validated = false;
  absl::Span<Transform> output;
  // Optional working space of at least source_skeleton's plus
  // target_skeleton's joint count: a caller that keeps it between frames
  // makes Run allocate nothing. Smaller (or empty): Run allocates its own.
  // Must not overlap the other spans.
  absl::Span<Transform> scratch;

  // Sizes against both skeletons and the map, finite unit inputs, overlap.
  absl::Status Validate() const;
  absl::Status Run() const;
};

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_RETARGET_RETARGET_H_
