#include "solver_core/full_body/full_body_biped_ik.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "solver_core/analytic_ik/clamp_direction.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/quaternion_math.h"

namespace posewire {
namespace {

constexpr absl::string_view kField = "full_body_biped_ik";

// IKConstraintBend.clampF: LimitBend's clamp weight at full master weight
// (a cone of (1 - 0.505) * 180 = 89.1 degrees).
constexpr float kClampF = 0.505f;
// FBIKChain.maxLimbLength: the trigonometric pass never straightens a limb
// completely, so its bend plane survives.
constexpr float kMaxLimbLength = 0.99999f;
// Below this squared length a vector has no direction (Unity's
// Vector3.normalized returns zero for such vectors).
constexpr float kTinySquared = 1e-24f;
// An "up" vector whose part perpendicular to "forward" is below this
// fraction of its length does not define a plane.
constexpr float kMinUpSine = 1e-5f;

// Node layout: the root node, then three nodes per limb.
constexpr int kNumNodes = 1 + 3 * kNumBipedLimbs;
constexpr int kRoot = 0;
constexpr int LimbNode(int limb, int k) { return 1 + 3 * limb + k; }

constexpr int kLeftArm = static_cast<int>(BipedLimb::kLeftArm);
constexpr int kRightArm = static_cast<int>(BipedLimb::kRightArm);
constexpr int kLeftLeg = static_cast<int>(BipedLimb::kLeftLeg);
constexpr int kRightLeg = static_cast<int>(BipedLimb::kRightLeg);

float Clamp01(float v) { return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v); }

Eigen::Vector3f SafeNormalized(const Eigen::Vector3f& v) {
  const float n2 = v.squaredNorm();
  if (!(n2 > kTinySquared)) return Eigen::Vector3f::Zero();
  return v / std::sqrt(n2);
}

// Unity's Vector3.Lerp with t clamped; the end points are returned exactly.
Eigen::Vector3f Lerp(const Eigen::Vector3f& a, const Eigen::Vector3f& b,
                     float t) {
  if (t <= 0.0f) return a;
  if (t >= 1.0f) return b;
  return a + (b - a) * t;
}

// Unity's Quaternion.Lerp: shortest-path nlerp, t clamped.
Eigen::Quaternionf QLerp(const Eigen::Quaternionf& a,
                         const Eigen::Quaternionf& b, float t) {
  if (t <= 0.0f) return a;
  if (t >= 1.0f) return b;
  return NlerpShortest(a, b, t);
}

float Smooth(float f, FbikSmoothing smoothing) {
  switch (smoothing) {
    case FbikSmoothing::kExponential:
      return f * f;
    case FbikSmoothing::kCubic:
      return f * f * f;
    case FbikSmoothing::kNone:
      break;
  }
  return f;
}

// The unit vector along the part of `up` perpendicular to the unit `z`;
// `fallback` when `up` is (nearly) parallel to z, then any perpendicular.
Eigen::Vector3f OrthoUp(const Eigen::Vector3f& z, const Eigen::Vector3f& up,
                        const Eigen::Vector3f& fallback) {
  for (const Eigen::Vector3f* candidate : {&up, &fallback}) {
    const Eigen::Vector3f u = *candidate - z * z.dot(*candidate);
    const float n2 = u.squaredNorm();
    if (n2 > kMinUpSine * kMinUpSine * candidate->squaredNorm() &&
        n2 > kTinySquared) {
      return u / std::sqrt(n2);
    }
  }
  return AnyPerpendicular(z);
}

// Unity's Quaternion.LookRotation(forward, up) in right-handed axes: the
// rotation taking +z to `forward` and +y toward `up`. Identity for a zero
// forward (Unity's answer); `fallback_up` when up is parallel to forward.
Eigen::Quaternionf LookRotation(const Eigen::Vector3f& forward,
                                const Eigen::Vector3f& up,
                                const Eigen::Vector3f& fallback_up) {
  const Eigen::Vector3f z = SafeNormalized(forward);
  if (z.isZero()) return Eigen::Quaternionf::Identity();
  // Gram-Schmidt leaves y off the perpendicular by about the rounding
  // error over the sine between up and forward, which a nearly straight
  // limb makes large; x from the cross product and y again from x and z
  // are perpendicular to the rounding error.
  const Eigen::Vector3f x =
      SafeNormalized(OrthoUp(z, up, fallback_up).cross(z));
  Eigen::Matrix3f m;
  m.col(0) = x;
  m.col(1) = z.cross(x);
  m.col(2) = z;
  return Eigen::Quaternionf(m).normalized();
}

// The three-point plane rotation FinalIK drives bones with: looking from p1
// at p2 with p3 up; identity when p1 and p3 coincide.
Eigen::Quaternionf PlaneRotation(const Eigen::Vector3f& p1,
                                 const Eigen::Vector3f& p2,
                                 const Eigen::Vector3f& p3,
                                 const Eigen::Vector3f& fallback_up) {
  if (p1 == p3) return Eigen::Quaternionf::Identity();
  return LookRotation(p2 - p1, p3 - p1, fallback_up);
}

// Unity's Vector3.OrthoNormalize(ref normal, ref tangent), tangent only:
// the unit part of `tangent` perpendicular to `normal`; zero when it has
// none (the caller then leaves things as they are).
Eigen::Vector3f OrthoTangent(const Eigen::Vector3f& normal,
                             const Eigen::Vector3f& tangent) {
  const Eigen::Vector3f n = SafeNormalized(normal);
  const Eigen::Vector3f t = tangent - n * n.dot(tangent);
  if (!(t.squaredNorm() > kMinUpSine * kMinUpSine * tangent.squaredNorm())) {
    return Eigen::Vector3f::Zero();
  }
  return SafeNormalized(t);
}

// FBIKChain.SolveFABRIKJoint: pos2 moved toward pos1 by `length`.
Eigen::Vector3f FabrikJoint(const Eigen::Vector3f& pos1,
                            const Eigen::Vector3f& pos2, float length) {
  return pos2 + SafeNormalized(pos1 - pos2) * length;
}

// Forward kinematics computed on demand while WritePose changes rotations
// top-down: writing a joint marks its descendants stale, reading one
// recomputes it and its stale ancestors only.
class PoseState {
 public:
  PoseState(const Skeleton& skeleton, absl::Span<Transform> local,
            absl::Span<Transform> model, absl::Span<uint8_t> fresh)
      : skeleton_(skeleton), local_(local), model_(model), fresh_(fresh) {}

  void ComputeAll() {
    for (int j = 0; j < skeleton_.num_joints(); ++j) {
      const int p = skeleton_.parent(j);
      model_[j] = p == kNoParent ? local_[j] : Combine(model_[p], local_[j]);
      fresh_[j] = 1;
    }
  }

  const Transform& Model(int joint) {
    if (fresh_[joint]) return model_[joint];
    absl::InlinedVector<int, 32> stale;
    for (int j = joint; j != kNoParent && !fresh_[j]; j = skeleton_.parent(j)) {
      stale.push_back(j);
    }
    for (auto it = stale.rbegin(); it != stale.rend(); ++it) {
      const int j = *it;
      const int p = skeleton_.parent(j);
      model_[j] = p == kNoParent ? local_[j] : Combine(model_[p], local_[j]);
      fresh_[j] = 1;
    }
    return model_[joint];
  }

  Eigen::Quaternionf ParentRotation(int joint) {
    const int p = skeleton_.parent(joint);
    return p == kNoParent ? Eigen::Quaternionf::Identity() : Model(p).rotation;
  }

  void SetModelRotation(int joint, const Eigen::Quaternionf& rotation) {
    local_[joint].rotation =
        (ParentRotation(joint).conjugate() * rotation).normalized();
    Invalidate(joint);
  }

  // False (and nothing changes) when the parent's model scale has a zero
  // component, which leaves the local translation undefined.
  bool SetModelPosition(int joint, const Eigen::Vector3f& position) {
    const int p = skeleton_.parent(joint);
    if (p == kNoParent) {
      local_[joint].translation = position;
    } else {
      const Transform& parent = Model(p);
      if ((parent.scale.array() == 0.0f).any()) return false;
      local_[joint].translation = parent.InverseTransformPoint(position);
    }
    Invalidate(joint);
    return true;
  }

 private:
  void Invalidate(int joint) {
    fresh_[joint] = 0;
    for (int k = joint + 1; k < skeleton_.num_joints(); ++k) {
      if (fresh_[k] && skeleton_.IsInSubtree(joint, k)) fresh_[k] = 0;
    }
  }

  const Skeleton& skeleton_;
  absl::Span<Transform> local_;
  absl::Span<Transform> model_;
  absl::Span<uint8_t> fresh_;
};

struct Node {
  int joint = -1;  // -1: a limb's end point
  int limb = -1;   // -1: the root node
  Eigen::Vector3f bone_position = Eigen::Vector3f::Zero();  // read pose
  Eigen::Vector3f solver_position = Eigen::Vector3f::Zero();
  Eigen::Vector3f offset = Eigen::Vector3f::Zero();
  Eigen::Quaternionf solver_rotation = Eigen::Quaternionf::Identity();
  float effector_position_weight = 0.0f;
  float effector_rotation_weight = 0.0f;
  float length = 0.0f;  // to the next node of its chain
};

// One limb: its FBIKChain, IKConstraintBend and IKMappingLimb.
struct Limb {
  const BipedLimbReferences* refs = nullptr;
  const BipedLimbSettings* settings = nullptr;
  // FBIKChain.
  float pull = 1.0f, reach = 0.0f, push = 0.0f, push_parent = 0.0f;
  float root_length = 0.0f, length = 0.0f, distance = 0.0f;
  float reach_force = 0.0f;
  float sqr_mag1 = 0.0f, sqr_mag_dif = 0.0f;
  // IKConstraintBend.
  Eigen::Vector3f default_local_direction = Eigen::Vector3f::UnitX();
  Eigen::Vector3f default_child_direction = Eigen::Vector3f::UnitZ();
  Eigen::Quaternionf rotation_offset = Eigen::Quaternionf::Identity();
  // The set-up bend direction carried by the read upper bone: the bend
  // plane of last resort for a straight limb.
  Eigen::Vector3f fallback_bend = Eigen::Vector3f::UnitX();
  // IKMappingLimb.
  Eigen::Quaternionf local_target_rotation1 = Eigen::Quaternionf::Identity();
  Eigen::Quaternionf local_target_rotation2 = Eigen::Quaternionf::Identity();
  Eigen::Quaternionf maintain_rotation = Eigen::Quaternionf::Identity();
  Eigen::Vector3f clavicle_swing_axis = Eigen::Vector3f::Zero();
};

struct Effector {
  const BipedEffector* in = nullptr;
  int index = 0;
  int node = 0;
  int children[2] = {-1, -1};
  int num_children = 0;
  int plane[3] = {-1, -1, -1};  // end effectors only
  bool is_end = false;
  float position_weight = 0.0f;  // times the master weight
  float maintain_relative = 0.0f;
  Eigen::Vector3f position = Eigen::Vector3f::Zero();
  Eigen::Vector3f local_positions[2] = {Eigen::Vector3f::Zero(),
                                        Eigen::Vector3f::Zero()};
  Eigen::Vector3f animated_position = Eigen::Vector3f::Zero();
  Eigen::Quaternionf animated_plane_rotation = Eigen::Quaternionf::Identity();
  Eigen::Quaternionf plane_rotation_offset = Eigen::Quaternionf::Identity();
  bool first_update = true;
};

struct ChildConstraint {
  int limb1 = 0, limb2 = 0;
  float push_elasticity = 0.0f, pull_elasticity = 0.0f;
  float nominal_distance = 0.0f;
  float cross_fade = 0.5f, inverse_cross_fade = 0.5f;
  bool rigid = true;
};

// A spine bone map (IKMapping.BoneMap) with the plane data of the first and
// last spine bones.
struct SpineBone {
  int joint = -1;
  float length = 0.0f;
  Eigen::Vector3f local_swing_axis = Eigen::Vector3f::Zero();
  Eigen::Vector3f local_twist_axis = Eigen::Vector3f::Zero();
  Eigen::Vector3f ik_position = Eigen::Vector3f::Zero();
  Eigen::Quaternionf local_target_rotation = Eigen::Quaternionf::Identity();
  Eigen::Vector3f plane_position = Eigen::Vector3f::Zero();
};

class Solver {
 public:
  Solver(const FullBodyBipedIkJob& job, float weight,
         std::vector<std::string>* warnings, float tolerance_unit)
      : job_(job),
        skeleton_(*job.skeleton),
        mapping_(*job.mapping),
        w_(weight),
        tolerance_unit_(tolerance_unit),
        warnings_(warnings),
        model_(skeleton_.num_joints()),
        fresh_(skeleton_.num_joints(), 0),
        pose_(skeleton_, job.output, absl::MakeSpan(model_),
              absl::MakeSpan(fresh_)) {
    Setup();
  }

  void Run() {
    ReadPose();
    Solve();
    WritePose();
  }

  // Output-pose position of an effector's bone (or end point).
  Eigen::Vector3f OutputPosition(int effector) {
    return BonePosition(nodes_[effectors_[effector].node]);
  }

  // The tolerance for `effector`, model units: the job's, resolved against
  // the effector's limb length for relative_to_chain (the body's: the
  // longest limb).
  float Tolerance(int effector) const {
    if (!job_.tolerance.relative_to_chain) return tolerance_unit_;
    if (effector == 0) {
      float longest = 0.0f;
      for (const Limb& limb : limbs_) longest = std::max(longest, limb.length);
      return tolerance_unit_ * longest;
    }
    return tolerance_unit_ *
           limbs_[static_cast<int>(BipedEffectorLimb(
                      static_cast<BipedEffectorId>(effector)))]
               .length;
  }

  int iterations_run() const { return iterations_run_; }
  float closing_translation() const { return closing_translation_; }

 private:
  bool full_body() const { return job_.iterations > 0; }
  bool converge() const { return job_.converge && full_body(); }
  Node& limb_node(int limb, int k) { return nodes_[LimbNode(limb, k)]; }

  void Warn(std::string message) {
    if (warnings_ != nullptr) warnings_->push_back(std::move(message));
  }

  // The current position of a node's bone; a limb end point rides on the
  // lower bone.
  Eigen::Vector3f BonePosition(const Node& node) {
    if (node.joint >= 0) return pose_.Model(node.joint).translation;
    const BipedLimbReferences& r = *limbs_[node.limb].refs;
    return pose_.Model(r.lower).TransformPoint(r.end_point_offset);
  }
  Eigen::Vector3f LimbEndPosition(int limb) {
    return BonePosition(limb_node(limb, 2));
  }
  Eigen::Quaternionf LimbEndRotation(int limb) {
    const BipedLimbReferences& r = *limbs_[limb].refs;
    return pose_.Model(r.end >= 0 ? r.end : r.lower).rotation;
  }

  void Setup();
  void ReadPose();
  void LimitBend(int limb);
  void PreSolveEffector(Effector& e);
  void ReadChains();
  void ReadSpine();
  void ReadLimbMapping(int limb);

  void Solve();
  float ReachRadius(int limb) const;
  bool EndGoalsWithinReach();
  void CloseGap();
  void UpdateEffector(Effector& e);
  Eigen::Vector3f EffectorBasePosition(Effector& e,
                                       Eigen::Quaternionf* rotation_offset);
  void Push();
  void Reach();
  void SolveTrigonometric(bool calculate_bend_direction);
  Eigen::Vector3f DirToBendPoint(int limb, const Eigen::Vector3f& direction,
                                 const Eigen::Vector3f& bend_direction,
                                 float magnitude) const;
  Eigen::Vector3f BendDirection(int limb);
  void Stage1();
  void Stage2();
  void SolveChildConstraints();
  void ForwardReach(int limb, const Eigen::Vector3f& position);

  void WritePose();
  void WriteSpine();
  void WriteHead();
  void SwingClavicle(int limb);
  void WriteLimb(int limb);
  Eigen::Vector3f SpinePlanePosition(const SpineBone& bone, const int plane[3]);
  Eigen::Quaternionf SolverPlaneRotation(const int plane[3]);
  void Swing(int joint, const Eigen::Vector3f& local_axis,
             const Eigen::Vector3f& target, float weight);

  const FullBodyBipedIkJob& job_;
  const Skeleton& skeleton_;
  const BipedMapping& mapping_;
  const float w_;  // master weight in (0, 1]
  // The tolerance's value, resolved but for the limb length when
  // relative_to_chain.
  const float tolerance_unit_;
  std::vector<std::string>* warnings_;
  // Effectors whose degenerate-torso warning was given this solve (each
  // iteration would repeat it).
  uint32_t torso_warned_ = 0;
  int iterations_run_ = 0;
  float closing_translation_ = 0.0f;
  absl::InlinedVector<Transform, 64> model_;
  absl::InlinedVector<uint8_t, 64> fresh_;
  PoseState pose_;

  std::array<Node, kNumNodes> nodes_;
  std::array<Limb, kNumBipedLimbs> limbs_;
  std::array<Effector, kNumBipedEffectors> effectors_;
  std::array<ChildConstraint, 4> child_constraints_;
  std::array<float, kNumBipedLimbs> cross_fades_{};
  float pull_parent_sum_ = 1.0f;
  Eigen::Vector3f body_offset_ = Eigen::Vector3f::Zero();

  absl::InlinedVector<SpineBone, 8> spine_;
  int root_index_ = 0;
  bool spine_fabrik_ = true;
  int hip_plane_[3] = {kRoot, LimbNode(kLeftLeg, 0), LimbNode(kRightLeg, 0)};
  int chest_plane_[3] = {kRoot, LimbNode(kLeftArm, 0), LimbNode(kRightArm, 0)};
  Eigen::Quaternionf head_maintain_rotation_ = Eigen::Quaternionf::Identity();
};

void Solver::Setup() {
  const absl::Span<const int> spine = mapping_.spine_bones();
  root_index_ = mapping_.root_node_index();
  nodes_[kRoot].joint = spine[root_index_];
  for (int l = 0; l < kNumBipedLimbs; ++l) {
    Limb& limb = limbs_[l];
    limb.refs = &mapping_.references().limbs[l];
    limb.settings = &job_.limbs[l];
    limb.pull = Clamp01(limb.settings->pull);
    limb.reach = Clamp01(limb.settings->reach);
    limb.push = Clamp01(limb.settings->push);
    limb.push_parent = std::clamp(limb.settings->push_parent, -1.0f, 1.0f);
    const BipedLimbSetup& setup =
        mapping_.limb_setup(static_cast<BipedLimb>(l));
    limb.default_local_direction = setup.default_local_direction;
    limb.default_child_direction = setup.default_child_direction;
    for (int k = 0; k < 3; ++k) limb_node(l, k).limb = l;
    limb_node(l, 0).joint = limb.refs->upper;
    limb_node(l, 1).joint = limb.refs->lower;
    limb_node(l, 2).joint = limb.refs->end;
  }

  // IKSolverFullBodyBiped.SetToReferences: effectors and their planes.
  for (int e = 0; e < kNumBipedEffectors; ++e) {
    effectors_[e].in = &job_.effectors[e];
    effectors_[e].index = e;
  }
  effectors_[0].node = kRoot;
  effectors_[0].children[0] = LimbNode(kLeftLeg, 0);
  effectors_[0].children[1] = LimbNode(kRightLeg, 0);
  effectors_[0].num_children = 2;
  effectors_[1].node = LimbNode(kLeftArm, 0);
  effectors_[2].node = LimbNode(kRightArm, 0);
  effectors_[3].node = LimbNode(kLeftLeg, 0);
  effectors_[4].node = LimbNode(kRightLeg, 0);
  const int ends[4][4] = {{5, kLeftArm, kRightArm, 0},
                          {6, kRightArm, kLeftArm, 0},
                          {7, kLeftLeg, kRightLeg, 0},
                          {8, kRightLeg, kLeftLeg, 0}};
  for (const auto& end : ends) {
    Effector& e = effectors_[end[0]];
    e.node = LimbNode(end[1], 2);
    e.plane[0] = LimbNode(end[1], 0);
    e.plane[1] = LimbNode(end[2], 0);
    e.plane[2] = kRoot;
    e.is_end = true;
  }

  // Child constraints: the diagonals only push, the shoulders' and the
  // thighs' distances are rigid.
  child_constraints_[0] = {kLeftArm, kRightLeg, 0.0f, 1.0f};
  child_constraints_[1] = {kRightArm, kLeftLeg, 0.0f, 1.0f};
  child_constraints_[2] = {kLeftArm, kRightArm, 0.0f, 0.0f};
  child_constraints_[3] = {kLeftLeg, kRightLeg, 0.0f, 0.0f};

  spine_.resize(spine.size());
  for (size_t i = 0; i < spine.size(); ++i) spine_[i].joint = spine[i];
  spine_fabrik_ = spine.size() > 3 || root_index_ != 1;
}

// ---------------------------------------------------------------- ReadPose

void Solver::ReadPose() {
  pose_.ComputeAll();
  // Making sure the limbs are not inverted.
  for (int l = 0; l < kNumBipedLimbs; ++l) LimitBend(l);

  for (Node& node : nodes_) {
    node.bone_position = BonePosition(node);
    node.offset = Eigen::Vector3f::Zero();  // ResetOffset
  }
  for (int l = 0; l < kNumBipedLimbs; ++l) {
    Limb& limb = limbs_[l];
    limb.fallback_bend =
        pose_.Model(limb.refs->upper).rotation * limb.default_local_direction;
  }
  for (Effector& e : effectors_) PreSolveEffector(e);
  ReadChains();
  if (full_body()) {
    ReadSpine();
    if (const int head = mapping_.references().head; head >= 0) {
      head_maintain_rotation_ = pose_.Model(head).rotation;
    }
  }
  for (int l = 0; l < kNumBipedLimbs; ++l) ReadLimbMapping(l);
}

// IKConstraintBend.LimitBend.
void Solver::LimitBend(int l) {
  Limb& limb = limbs_[l];
  const BipedLimbReferences& r = *limb.refs;
  const float position_weight = Clamp01(job_.effectors[5 + l].position_weight);
  const Eigen::Vector3f normal_direction =
      pose_.Model(r.upper).rotation * -limb.default_local_direction;
  const Eigen::Vector3f p2 = pose_.Model(r.lower).translation;
  const Eigen::Vector3f axis2 = LimbEndPosition(l) - p2;

  // The lower bone within ~90 degrees of a right-angled bend.
  const ClampedDirection clamped =
      ClampDirection(axis2, normal_direction, kClampF * w_, 0);
  const Eigen::Quaternionf end_rotation = LimbEndRotation(l);
  if (clamped.changed) {
    const Eigen::Quaternionf f = FromToRotation(axis2, clamped.direction);
    pose_.SetModelRotation(r.lower, f * pose_.Model(r.lower).rotation);
  }
  // Turning the bend plane toward the set-up one when the end is pulled.
  if (position_weight > 0.0f) {
    const Eigen::Vector3f normal = p2 - pose_.Model(r.upper).translation;
    const Eigen::Vector3f tangent =
        OrthoTangent(normal, LimbEndPosition(l) - p2);
    if (!tangent.isZero()) {
      const Eigen::Quaternionf q = FromToRotation(tangent, normal_direction);
      const Eigen::Quaternionf r2 = pose_.Model(r.lower).rotation;
      pose_.SetModelRotation(r.lower, QLerp(r2, q * r2, position_weight * w_));
    }
  }
  if ((clamped.changed || position_weight > 0.0f) && r.end >= 0) {
    pose_.SetModelRotation(r.end, end_rotation);
  }
}

// IKEffector.OnPreSolve.
void Solver::PreSolveEffector(Effector& e) {
  const BipedEffector& in = *e.in;
  e.position_weight = Clamp01(in.position_weight) * w_;
  e.maintain_relative = Clamp01(in.maintain_relative_position_weight);
  e.position = in.position;
  Node& node = nodes_[e.node];
  node.effector_position_weight = e.position_weight;
  node.effector_rotation_weight = Clamp01(in.rotation_weight) * w_;
  node.solver_rotation = in.rotation.normalized();
  node.offset += in.position_offset * w_;
  if (full_body()) {
    for (int c = 0; c < e.num_children; ++c) {
      Node& child = nodes_[e.children[c]];
      e.local_positions[c] = child.bone_position - node.bone_position;
      child.offset += in.position_offset * w_;
    }
  }
  if (e.is_end && e.maintain_relative > 0.0f) {
    const Eigen::Vector3f p1 = nodes_[e.plane[0]].bone_position;
    e.animated_plane_rotation = LookRotation(
        nodes_[e.plane[1]].bone_position - p1,
        nodes_[e.plane[2]].bone_position - p1, Eigen::Vector3f::Zero());
  }
  e.first_update = true;
}

// FBIKChain.ReadPose for the root chain and the limbs.
void Solver::ReadChains() {
  for (Node& node : nodes_) {
    node.solver_position = node.bone_position + node.offset;
  }
  const Node& root = nodes_[kRoot];
  for (int l = 0; l < kNumBipedLimbs; ++l) {
    Limb& limb = limbs_[l];
    Node& n0 = limb_node(l, 0);
    Node& n1 = limb_node(l, 1);
    n0.length = (n1.bone_position - n0.bone_position).norm();
    n1.length = (limb_node(l, 2).bone_position - n1.bone_position).norm();
    limb.length = n0.length + n1.length;
    limb.root_length = (n0.bone_position - root.bone_position).norm();
    limb.sqr_mag1 = n0.length * n0.length;
    limb.sqr_mag_dif = limb.sqr_mag1 - n1.length * n1.length;
  }
  if (!full_body()) return;

  for (ChildConstraint& c : child_constraints_) {
    c.nominal_distance = (limb_node(c.limb2, 0).bone_position -
                          limb_node(c.limb1, 0).bone_position)
                             .norm();
    c.rigid = c.push_elasticity <= 0.0f && c.pull_elasticity <= 0.0f;
    c.cross_fade =
        c.rigid ? 1.0f - (0.5f +
                          (limbs_[c.limb1].pull - limbs_[c.limb2].pull) * 0.5f)
                : 0.5f;
    c.inverse_cross_fade = 1.0f - c.cross_fade;
  }
  float sum = root.effector_position_weight;
  for (int l = 0; l < kNumBipedLimbs; ++l) {
    sum += limb_node(l, 0).effector_position_weight * limbs_[l].pull;
  }
  sum = std::max(sum, 1.0f);
  pull_parent_sum_ = 0.0f;
  for (int l = 0; l < kNumBipedLimbs; ++l) {
    cross_fades_[l] =
        limb_node(l, 0).effector_position_weight * limbs_[l].pull / sum;
    pull_parent_sum_ += limbs_[l].pull;
  }
  pull_parent_sum_ = std::max(pull_parent_sum_, 1.0f);
  for (int l = 0; l < kNumBipedLimbs; ++l) {
    Limb& limb = limbs_[l];
    limb.reach_force =
        limb.reach * Clamp01(limb_node(l, 2).effector_position_weight);
    limb.distance =
        (limb_node(l, 2).bone_position - limb_node(l, 0).bone_position).norm();
  }
}

// IKMappingSpine.ReadPose (and its plane set-up).
void Solver::ReadSpine() {
  const int m = static_cast<int>(spine_.size());
  const Eigen::Vector3f shoulders = limb_node(kLeftArm, 0).bone_position -
                                    limb_node(kRightArm, 0).bone_position;
  auto update_plane = [&](SpineBone& bone, const int plane[3]) {
    const Transform& t = pose_.Model(bone.joint);
    const Eigen::Vector3f p1 = nodes_[plane[0]].bone_position;
    const Eigen::Quaternionf q =
        PlaneRotation(p1, nodes_[plane[1]].bone_position,
                      nodes_[plane[2]].bone_position, Eigen::Vector3f::Zero());
    bone.local_target_rotation = q.conjugate() * t.rotation;
    bone.plane_position = q.conjugate() * (t.translation - p1);
  };
  update_plane(spine_[0], hip_plane_);
  for (int i = 0; i + 1 < m; ++i) {
    const Transform& t = pose_.Model(spine_[i].joint);
    const Eigen::Vector3f to_next =
        pose_.Model(spine_[i + 1].joint).translation - t.translation;
    spine_[i].length = to_next.norm();
    spine_[i].local_swing_axis = t.rotation.conjugate() * to_next;
    spine_[i].local_twist_axis =
        t.rotation.conjugate() * OrthoTangent(to_next, shoulders);
  }
  update_plane(spine_[m - 1], chest_plane_);
}

// IKMappingLimb.ReadPose (and the clavicle's swing axis).
void Solver::ReadLimbMapping(int l) {
  Limb& limb = limbs_[l];
  const BipedLimbReferences& r = *limb.refs;
  const Eigen::Vector3f p1 = limb_node(l, 0).bone_position;
  const Eigen::Vector3f p2 = limb_node(l, 1).bone_position;
  const Eigen::Vector3f p3 = limb_node(l, 2).bone_position;
  const Eigen::Vector3f fallback_up = -limb.fallback_bend;
  limb.local_target_rotation1 =
      PlaneRotation(p1, p2, p3, fallback_up).conjugate() *
      pose_.Model(r.upper).rotation;
  limb.local_target_rotation2 =
      PlaneRotation(p2, p3, p1, fallback_up).conjugate() *
      pose_.Model(r.lower).rotation;
  limb.maintain_rotation = LimbEndRotation(l);
  if (r.clavicle >= 0) {
    const Transform& c = pose_.Model(r.clavicle);
    limb.clavicle_swing_axis = c.rotation.conjugate() * (p1 - c.translation);
  }
}

// ------------------------------------------------------------------- Solve

void Solver::Solve() {
  int i = 0;
  for (; i < job_.iterations; ++i) {
    for (Effector& e : effectors_) {
      if (e.is_end) UpdateEffector(e);
    }
    // The end-effector pass just placed every hand and foot node on its
    // goal: when each is within reach, the final pass below lands them.
    // Not before FinalIK's count: a solve that FinalIK's default already
    // brought home keeps its answer.
    if (converge() && i >= kFinalIkFullBodyBipedIterations &&
        EndGoalsWithinReach()) {
      break;
    }
    Push();
    Reach();
    for (Effector& e : effectors_) {
      if (!e.is_end) UpdateEffector(e);
    }
    SolveTrigonometric(false);
    Stage1();
    for (Effector& e : effectors_) {
      if (!e.is_end) UpdateEffector(e);
    }
    Stage2();
  }
  iterations_run_ = i;
  // Final end-effector pass.
  for (Effector& e : effectors_) {
    if (e.is_end) UpdateEffector(e);
  }
  // ApplyBendConstraints (IKSolverFullBodyBiped's override first).
  if (full_body()) {
    for (int l = 0; l < kNumBipedLimbs; ++l) {
      limbs_[l].rotation_offset = effectors_[5 + l].plane_rotation_offset;
    }
  } else {
    const BipedEffector& body = job_.effectors[0];
    body_offset_ = Lerp(
        body.position_offset,
        body.position - (nodes_[kRoot].bone_position + body.position_offset),
        Clamp01(body.position_weight));
    for (int e = 0; e < 5; ++e) {
      nodes_[effectors_[e].node].solver_position += body_offset_;
    }
  }
  SolveTrigonometric(true);
}

// How far a limb's end goal may lie from its root node and still be
// landed by the final trigonometric pass and WriteLimb: the pass's own
// reach, less a quarter of the effector's tolerance (the upper bone's
// actual position, set by the spine and clavicle mapping, differs from the
// node by a little).
float Solver::ReachRadius(int l) const {
  const float length = limbs_[l].length;
  const float margin = std::min(0.25f * Tolerance(5 + l), 1e-3f * length);
  return length * kMaxLimbLength - margin;
}

// Every active hand and foot node (just placed by the end-effector pass)
// within reach of its limb's root node.
bool Solver::EndGoalsWithinReach() {
  for (int l = 0; l < kNumBipedLimbs; ++l) {
    if (!(effectors_[5 + l].position_weight > 0.0f)) continue;
    const float reach = ReachRadius(l);
    if (!((limb_node(l, 2).solver_position - limb_node(l, 0).solver_position)
              .squaredNorm() <= reach * reach)) {
      return false;
    }
  }
  return true;
}

// The closing step (see the header), in bone space: once the spine and the
// clavicles are written, each limb's upper bone is where WriteLimb will
// start from, a little off its node (the spine and clavicle mapping keep
// bone lengths, the nodes do not). The body (the pelvis, hence every limb,
// and every node) is translated by the shortest d that brings every active
// hand and foot goal within reach of the actual upper bone. Goal l moves by
// k d with the body (k: the share of the torso-carried base,
// (1 - position weight) * maintain_relative_position_weight), so limb l asks
// |g - a - (1 - k) d| <= reach: a ball around (g - a) / (1 - k) of radius
// reach / (1 - k). Dykstra's alternating projections from the origin
// converge to the point of the balls' intersection nearest the origin; the
// sweeps stop once the point is inside every ball up to half the margin
// ReachRadius keeps, and moved by less than that in the last sweep. No
// translation when the intersection is empty (the sweeps never get inside).
void Solver::CloseGap() {
  constexpr int kMaxSweeps = 200;
  struct Ball {
    Eigen::Vector3f center = Eigen::Vector3f::Zero();
    float radius = 0.0f;
    float slack = 0.0f;
  };
  const int pelvis = mapping_.references().pelvis;
  std::array<float, kNumBipedLimbs> carried{};
  std::array<Ball, kNumBipedLimbs> balls;
  int n = 0;
  bool inside = true;
  for (int l = 0; l < kNumBipedLimbs; ++l) {
    const Effector& e = effectors_[5 + l];
    float& k = carried[l];
    if (e.maintain_relative > 0.0f && e.position_weight < 1.0f) {
      k = (1.0f - e.position_weight) * std::min(e.maintain_relative, 1.0f);
    }
    if (!(e.position_weight > 0.0f) || !(k < 1.0f) ||
        !(limbs_[l].settings->mapping_weight > 0.0f) ||
        !skeleton_.IsInSubtree(pelvis, limbs_[l].refs->upper)) {
      continue;
    }
    const float reach = ReachRadius(l);
    Ball& b = balls[n++];
    b.center = (limb_node(l, 2).solver_position -
                pose_.Model(limbs_[l].refs->upper).translation) /
               (1.0f - k);
    b.radius = reach / (1.0f - k);
    b.slack = 0.5f * (limbs_[l].length * kMaxLimbLength - reach) / (1.0f - k);
    if (!(b.center.squaredNorm() <= b.radius * b.radius)) inside = false;
  }
  if (inside) return;

  Eigen::Vector3f x = Eigen::Vector3f::Zero();
  std::array<Eigen::Vector3f, kNumBipedLimbs> increments;
  for (Eigen::Vector3f& p : increments) p = Eigen::Vector3f::Zero();
  bool found = false;
  for (int sweep = 0; sweep < kMaxSweeps && !found; ++sweep) {
    found = true;
    for (int i = 0; i < n; ++i) {
      const Ball& b = balls[i];
      const Eigen::Vector3f y = x + increments[i];
      const Eigen::Vector3f off = y - b.center;
      const float d2 = off.squaredNorm();
      Eigen::Vector3f z = y;
      if (d2 > b.radius * b.radius) {
        z = b.center + off * (b.radius / std::sqrt(d2));
      }
      increments[i] = y - z;
      if (!((z - x).squaredNorm() <= b.slack * b.slack)) found = false;
      x = z;
    }
    for (int i = 0; i < n && found; ++i) {
      const Ball& b = balls[i];
      const float r = b.radius + b.slack;
      if (!((x - b.center).squaredNorm() <= r * r)) found = false;
    }
  }
  if (!found || !x.allFinite()) return;
  if (!pose_.SetModelPosition(pelvis, pose_.Model(pelvis).translation + x)) {
    return;  // a zero scale above the pelvis: nothing can move it
  }
  for (Node& node : nodes_) {
    node.solver_position += node.limb >= 0 && &node == &limb_node(node.limb, 2)
                                ? Eigen::Vector3f(x * carried[node.limb])
                                : x;
  }
  closing_translation_ = x.norm();
}

// IKEffector.Update.
void Solver::UpdateEffector(Effector& e) {
  Node& node = nodes_[e.node];
  if (e.first_update) {
    e.animated_position = node.bone_position + node.offset;
    e.first_update = false;
  }
  const Eigen::Vector3f base =
      EffectorBasePosition(e, &e.plane_rotation_offset);
  node.solver_position = Lerp(base, e.position, e.position_weight);
  for (int c = 0; c < e.num_children; ++c) {
    Node& child = nodes_[e.children[c]];
    child.solver_position =
        Lerp(child.solver_position, node.solver_position + e.local_positions[c],
             e.position_weight);
  }
}

// IKEffector.GetPosition.
Eigen::Vector3f Solver::EffectorBasePosition(
    Effector& e, Eigen::Quaternionf* rotation_offset) {
  *rotation_offset = Eigen::Quaternionf::Identity();
  const Node& node = nodes_[e.node];
  if (!e.is_end) return node.solver_position;
  if (e.maintain_relative <= 0.0f) return e.animated_position;
  const Node& plane1 = nodes_[e.plane[0]];
  const Eigen::Vector3f forward =
      nodes_[e.plane[1]].solver_position - plane1.solver_position;
  Eigen::Quaternionf plane = Eigen::Quaternionf::Identity();
  if (forward.isZero()) {
    // Once per solve: every iteration's pass would repeat it.
    const uint32_t bit = 1u << e.index;
    if ((torso_warned_ & bit) == 0) {
      torso_warned_ |= bit;
      Warn(absl::StrCat(
          BipedEffectorName(static_cast<BipedEffectorId>(e.index)),
          ": the torso triangle is degenerate (two effectors of the same "
          "chain on one point); maintain_relative_position_weight ignored"));
    }
  } else {
    plane = LookRotation(
        forward, nodes_[e.plane[2]].solver_position - plane1.solver_position,
        Eigen::Vector3f::Zero());
  }
  Eigen::Quaternionf offset =
      (plane * e.animated_plane_rotation.conjugate()).normalized();
  const Eigen::Vector3f p =
      plane1.solver_position +
      offset * (node.bone_position - plane1.bone_position);
  *rotation_offset =
      QLerp(Eigen::Quaternionf::Identity(), offset, e.maintain_relative);
  return Lerp(e.animated_position, p + node.offset, e.maintain_relative);
}

// FBIKChain.Push on the root chain: each limb pushes its root when its end
// is closer to it than in the animation, and the body by push_parent.
void Solver::Push() {
  Eigen::Vector3f sum = Eigen::Vector3f::Zero();
  for (int l = 0; l < kNumBipedLimbs; ++l) {
    Limb& limb = limbs_[l];
    if (limb.push <= 0.0f) continue;
    Node& n0 = limb_node(l, 0);
    const Eigen::Vector3f direction =
        limb_node(l, 2).solver_position - n0.solver_position;
    const float magnitude = direction.norm();
    if (magnitude == 0.0f || !(limb.distance > 0.0f)) continue;
    float f = 1.0f - magnitude / limb.distance;
    if (f <= 0.0f) continue;
    f = Smooth(f, limb.settings->push_smoothing);
    const Eigen::Vector3f p = -direction * f * limb.push;
    n0.solver_position += p;
    sum += p * limb.push_parent;
  }
  nodes_[kRoot].solver_position += sum;
}

// FBIKChain.Reach on the limbs.
void Solver::Reach() {
  for (int l = 0; l < kNumBipedLimbs; ++l) {
    Limb& limb = limbs_[l];
    if (limb.reach_force <= 0.0f || !(limb.length > 0.0f)) continue;
    Node& n0 = limb_node(l, 0);
    Node& n2 = limb_node(l, 2);
    const Eigen::Vector3f direction = n2.solver_position - n0.solver_position;
    if (direction.isZero()) continue;
    const float magnitude = direction.norm();
    const Eigen::Vector3f straight = direction / magnitude * limb.length;
    const float rf = limb.reach_force;
    float delta = std::clamp(
        std::clamp(magnitude / limb.length, 1.0f - rf, 1.0f + rf) - 1.0f + rf,
        -1.0f, 1.0f);
    delta = Smooth(delta, limb.settings->reach_smoothing);
    const Eigen::Vector3f offset =
        straight * std::clamp(delta, 0.0f, magnitude);
    n0.solver_position += offset * (1.0f - n0.effector_position_weight);
    n2.solver_position += offset;
  }
}

// FBIKChain.SolveTrigonometric on the limbs.
void Solver::SolveTrigonometric(bool calculate_bend_direction) {
  for (int l = 0; l < kNumBipedLimbs; ++l) {
    Node& n0 = limb_node(l, 0);
    Node& n1 = limb_node(l, 1);
    const Eigen::Vector3f direction =
        limb_node(l, 2).solver_position - n0.solver_position;
    const float magnitude = direction.norm();
    if (magnitude == 0.0f) continue;
    const float max_magnitude =
        std::min(magnitude, limbs_[l].length * kMaxLimbLength);
    const Eigen::Vector3f bend =
        calculate_bend_direction
            ? BendDirection(l)
            : Eigen::Vector3f(n1.solver_position - n0.solver_position);
    n1.solver_position =
        n0.solver_position +
        DirToBendPoint(l, direction / magnitude * max_magnitude, bend,
                       max_magnitude);
  }
}

// FBIKChain.GetDirToBendPoint: the middle joint by the law of cosines, in
// the plane of `direction` and `bend_direction`.
Eigen::Vector3f Solver::DirToBendPoint(int l, const Eigen::Vector3f& direction,
                                       const Eigen::Vector3f& bend_direction,
                                       float magnitude) const {
  const Limb& limb = limbs_[l];
  if (!(magnitude > 0.0f)) return Eigen::Vector3f::Zero();
  const float x =
      ((magnitude * magnitude) + limb.sqr_mag_dif) / 2.0f / magnitude;
  const float y = std::sqrt(std::max(limb.sqr_mag1 - x * x, 0.0f));
  const Eigen::Vector3f z = SafeNormalized(direction);
  if (z.isZero()) return Eigen::Vector3f::Zero();
  return OrthoUp(z, bend_direction, limb.fallback_bend) * y + z * x;
}

// IKConstraintBend.GetDir. FinalIK blends the raw vectors, whose lengths
// are the rig's bone lengths, so the blend would depend on the rig's units;
// each direction is normalised before blending here.
Eigen::Vector3f Solver::BendDirection(int l) {
  Limb& limb = limbs_[l];
  const BipedLimbSettings& s = *limb.settings;
  const Node& n0 = limb_node(l, 0);
  const Node& n2 = limb_node(l, 2);
  const float w = Clamp01(s.bend_goal_weight) * w_;
  Eigen::Vector3f goal = Eigen::Vector3f::Zero();
  if (w > 0.0f) goal = SafeNormalized(s.bend_goal - n0.solver_position);
  if (w >= 1.0f && !goal.isZero()) return goal;

  const Eigen::Vector3f solver_direction =
      n2.solver_position - n0.solver_position;
  // The animated bend direction, carried along by the limb's swing.
  const Eigen::Quaternionf f = FromToRotation(
      limb_node(l, 2).bone_position - n0.bone_position, solver_direction);
  Eigen::Vector3f dir =
      SafeNormalized(f * (limb_node(l, 1).bone_position - n0.bone_position));
  // Bend direction implied by the end effector's rotation.
  if (n2.effector_rotation_weight > 0.0f) {
    const Eigen::Vector3f effector_direction =
        SafeNormalized(-solver_direction.cross(n2.solver_rotation *
                                               limb.default_child_direction));
    dir = Lerp(dir, effector_direction, n2.effector_rotation_weight);
  }
  // The torso's rotation offset (maintain_relative_position_weight), minus
  // its twist about the limb.
  if (!(limb.rotation_offset.coeffs() ==
        Eigen::Quaternionf::Identity().coeffs())) {
    const Eigen::Quaternionf to_ortho = FromToRotation(
        limb.rotation_offset * solver_direction, solver_direction);
    dir = to_ortho * (limb.rotation_offset * dir);
  }
  if (w <= 0.0f || goal.isZero()) return dir;
  return Lerp(SafeNormalized(dir), goal, w);
}

void Solver::ForwardReach(int l, const Eigen::Vector3f& position) {
  Node& n0 = limb_node(l, 0);
  Node& n1 = limb_node(l, 1);
  Node& n2 = limb_node(l, 2);
  n2.solver_position = position;
  n1.solver_position =
      FabrikJoint(n1.solver_position, n2.solver_position, n1.length);
  n0.solver_position =
      FabrikJoint(n0.solver_position, n1.solver_position, n0.length);
}

// FBIKChain.ChildConstraint.Solve, in order (one Gauss-Seidel sweep).
void Solver::SolveChildConstraints() {
  for (const ChildConstraint& c : child_constraints_) {
    if (c.push_elasticity >= 1.0f && c.pull_elasticity >= 1.0f) continue;
    Node& a = limb_node(c.limb1, 0);
    Node& b = limb_node(c.limb2, 0);
    const Eigen::Vector3f direction = b.solver_position - a.solver_position;
    const float distance = direction.norm();
    if (distance == c.nominal_distance || distance == 0.0f) continue;
    float force = 1.0f;
    if (!c.rigid) {
      force = 1.0f - (distance > c.nominal_distance ? c.pull_elasticity
                                                    : c.push_elasticity);
    }
    force *= 1.0f - c.nominal_distance / distance;
    const Eigen::Vector3f offset = direction * force;
    a.solver_position += offset * c.cross_fade;
    b.solver_position -= offset * c.inverse_cross_fade;
  }
}

// FBIKChain.Stage1: forward reach of the limbs, then the root node to the
// pull-weighted centroid of where the limb roots want it.
void Solver::Stage1() {
  for (int l = 0; l < kNumBipedLimbs; ++l) {
    ForwardReach(l, limb_node(l, 2).solver_position);
  }
  Node& root = nodes_[kRoot];
  Eigen::Vector3f centroid = root.solver_position;
  SolveChildConstraints();
  for (int l = 0; l < kNumBipedLimbs; ++l) {
    const Limb& limb = limbs_[l];
    Eigen::Vector3f child = limb_node(l, 0).solver_position;
    if (limb.root_length > 0.0f) {
      child = FabrikJoint(root.solver_position, child, limb.root_length);
    }
    if (pull_parent_sum_ > 0.0f) {
      centroid +=
          (child - root.solver_position) * (limb.pull / pull_parent_sum_);
    }
  }
  // The root chain's pin is 0 in FBBIK: the root goes to the centroid.
  root.solver_position = centroid;
}

// FBIKChain.Stage2: the constraint systems, then the limbs' backward reach.
void Solver::Stage2() {
  Node& root = nodes_[kRoot];
  const int passes = std::clamp(job_.iterations, 2, 4);
  for (int pass = 0; pass < passes; ++pass) {
    SolveChildConstraints();
    for (int l = 0; l < kNumBipedLimbs; ++l) {
      // SolveLinearConstraint(root, limb root, crossFade, rootLength).
      Node& child = limb_node(l, 0);
      const Eigen::Vector3f direction =
          child.solver_position - root.solver_position;
      const float magnitude = direction.norm();
      const float distance = limbs_[l].root_length;
      if (distance == magnitude || magnitude == 0.0f) continue;
      const Eigen::Vector3f offset = direction * (1.0f - distance / magnitude);
      root.solver_position += offset * cross_fades_[l];
      child.solver_position -= offset * (1.0f - cross_fades_[l]);
    }
  }
  for (int l = 0; l < kNumBipedLimbs; ++l) {
    Node& n0 = limb_node(l, 0);
    Node& n1 = limb_node(l, 1);
    Node& n2 = limb_node(l, 2);
    Eigen::Vector3f position = root.solver_position;
    if (limbs_[l].root_length > 0.0f) {
      position =
          FabrikJoint(n0.solver_position, position, limbs_[l].root_length);
    }
    n0.solver_position = position;
    n1.solver_position =
        FabrikJoint(n1.solver_position, n0.solver_position, n0.length);
    n2.solver_position =
        FabrikJoint(n2.solver_position, n1.solver_position, n1.length);
  }
}

// --------------------------------------------------------------- WritePose

void Solver::WritePose() {
  if (full_body()) {
    WriteSpine();
    WriteHead();
  } else if (!body_offset_.isZero()) {
    const int pelvis = mapping_.references().pelvis;
    if (!pose_.SetModelPosition(
            pelvis, pose_.Model(pelvis).translation + body_offset_)) {
      Warn(
          "pelvis: its parent has a zero scale; the body offset is not "
          "applied");
    }
  }
  if (full_body()) {
    for (int l = 0; l < kNumBipedLimbs; ++l) SwingClavicle(l);
  }
  // Every limb's upper bone is where it will stay, but for the closing
  // step's translation.
  if (converge()) CloseGap();
  for (int l = 0; l < kNumBipedLimbs; ++l) WriteLimb(l);
}

// IKMappingLimb.WritePose's first step: the clavicle swung toward the
// solved shoulder. The arms are apart below the spine, so swinging every
// clavicle before any limb is written changes nothing.
void Solver::SwingClavicle(int l) {
  const Limb& limb = limbs_[l];
  const float weight = Clamp01(limb.settings->mapping_weight);
  if (limb.refs->clavicle < 0 || weight <= 0.0f) return;
  Swing(limb.refs->clavicle, limb.clavicle_swing_axis,
        limb_node(l, 0).solver_position, weight);
}

Eigen::Quaternionf Solver::SolverPlaneRotation(const int plane[3]) {
  return PlaneRotation(
      nodes_[plane[0]].solver_position, nodes_[plane[1]].solver_position,
      nodes_[plane[2]].solver_position, Eigen::Vector3f::Zero());
}

Eigen::Vector3f Solver::SpinePlanePosition(const SpineBone& bone,
                                           const int plane[3]) {
  return nodes_[plane[0]].solver_position +
         SolverPlaneRotation(plane) * bone.plane_position;
}

// IKMapping.BoneMap.Swing: turns `joint` so its local axis points at
// `target`.
void Solver::Swing(int joint, const Eigen::Vector3f& local_axis,
                   const Eigen::Vector3f& target, float weight) {
  if (weight <= 0.0f) return;
  const Transform& t = pose_.Model(joint);
  const Eigen::Quaternionf r =
      FromToRotation(t.rotation * local_axis, target - t.translation) *
      t.rotation;
  pose_.SetModelRotation(joint, QLerp(t.rotation, r, weight));
}

// IKMappingSpine.WritePose and MapToSolverPositions.
void Solver::WriteSpine() {
  const int m = static_cast<int>(spine_.size());
  const Eigen::Vector3f first = SpinePlanePosition(spine_[0], hip_plane_);
  const Eigen::Vector3f root = nodes_[kRoot].solver_position;
  const Eigen::Vector3f last = SpinePlanePosition(spine_[m - 1], chest_plane_);

  if (spine_fabrik_) {
    // Keep the animated spine curve: start from it, moved with the root
    // node, then FABRIK between the hip and chest plane positions.
    const Eigen::Vector3f offset =
        root - pose_.Model(spine_[root_index_].joint).translation;
    for (SpineBone& bone : spine_) {
      bone.ik_position = pose_.Model(bone.joint).translation + offset;
    }
    for (int it = 0; it < job_.spine_iterations; ++it) {
      spine_[m - 1].ik_position = last;
      for (int i = m - 2; i >= 0; --i) {
        spine_[i].ik_position = FabrikJoint(
            spine_[i].ik_position, spine_[i + 1].ik_position, spine_[i].length);
      }
      spine_[0].ik_position = first;
      for (int i = 1; i < m; ++i) {
        spine_[i].ik_position =
            FabrikJoint(spine_[i].ik_position, spine_[i - 1].ik_position,
                        spine_[i - 1].length);
      }
      spine_[root_index_].ik_position = root;
    }
  } else {
    spine_[0].ik_position = first;
    spine_[root_index_].ik_position = root;
  }
  spine_[m - 1].ik_position = last;

  // The pelvis: moved and turned with the hip triangle.
  const int pelvis = spine_[0].joint;
  if (!pose_.SetModelPosition(pelvis, spine_[0].ik_position)) {
    Warn("pelvis: its parent has a zero scale; the pelvis is not moved");
  }
  pose_.SetModelRotation(pelvis, SolverPlaneRotation(hip_plane_) *
                                     spine_[0].local_target_rotation);
  // The bones between: swung toward the next bone's solved position and
  // twisted gradually toward the shoulders' line.
  const Eigen::Vector3f shoulders = limb_node(kLeftArm, 0).solver_position -
                                    limb_node(kRightArm, 0).solver_position;
  for (int i = 1; i + 1 < m; ++i) {
    const SpineBone& bone = spine_[i];
    Swing(bone.joint, bone.local_swing_axis, spine_[i + 1].ik_position, 1.0f);
    const float twist_weight = Clamp01(job_.spine_twist_weight) *
                               static_cast<float>(i) /
                               static_cast<float>(m - 2);
    if (twist_weight > 0.0f) {
      const Transform& t = pose_.Model(bone.joint);
      const Eigen::Vector3f twist =
          OrthoTangent(spine_[i + 1].ik_position - t.translation, shoulders);
      if (!twist.isZero()) {
        const Eigen::Quaternionf r =
            FromToRotation(t.rotation * bone.local_twist_axis, twist) *
            t.rotation;
        pose_.SetModelRotation(bone.joint, QLerp(t.rotation, r, twist_weight));
      }
    }
  }
  // The last bone: turned with the chest triangle. FinalIK also moves it
  // onto `last`; here it stays where the bones below put it (next to
  // `last`), so no bone stretches.
  pose_.SetModelRotation(
      spine_[m - 1].joint,
      SolverPlaneRotation(chest_plane_) * spine_[m - 1].local_target_rotation);
}

// IKMappingBone.WritePose for the head.
void Solver::WriteHead() {
  const int head = mapping_.references().head;
  const float weight = Clamp01(job_.head_maintain_rotation_weight) * w_;
  if (head < 0 || weight <= 0.0f) return;
  pose_.SetModelRotation(
      head, QLerp(pose_.Model(head).rotation, head_maintain_rotation_, weight));
}

// IKMappingLimb.WritePose.
void Solver::WriteLimb(int l) {
  Limb& limb = limbs_[l];
  const BipedLimbReferences& r = *limb.refs;
  const float weight = Clamp01(limb.settings->mapping_weight);
  if (weight <= 0.0f) return;
  const Eigen::Vector3f n1 = limb_node(l, 0).solver_position;
  const Eigen::Vector3f n2 = limb_node(l, 1).solver_position;
  const Eigen::Vector3f n3 = limb_node(l, 2).solver_position;
  // FinalIK moves the upper bone onto its node (FixToNode). Instead the
  // limb's triangle is solved again from where the upper bone is, toward
  // the end node, in the solver's bend plane.
  const Eigen::Vector3f a1 = pose_.Model(r.upper).translation;
  Eigen::Vector3f a2 = a1 + (n2 - n1);
  const Eigen::Vector3f direction = n3 - a1;
  const float magnitude = direction.norm();
  if (magnitude > 0.0f) {
    const float max_magnitude =
        std::min(magnitude, limb.length * kMaxLimbLength);
    a2 = a1 + DirToBendPoint(l, direction / magnitude * max_magnitude, n2 - n1,
                             max_magnitude);
  }
  const Eigen::Vector3f fallback_up = -limb.fallback_bend;
  const Eigen::Quaternionf r1 =
      PlaneRotation(a1, a2, n3, fallback_up) * limb.local_target_rotation1;
  pose_.SetModelRotation(r.upper,
                         QLerp(pose_.Model(r.upper).rotation, r1, weight));
  const Eigen::Quaternionf r2 =
      PlaneRotation(a2, n3, a1, fallback_up) * limb.local_target_rotation2;
  pose_.SetModelRotation(r.lower,
                         QLerp(pose_.Model(r.lower).rotation, r2, weight));

  const Node& end = limb_node(l, 2);
  if (r.end < 0) {
    if (end.effector_rotation_weight > 0.0f) {
      Warn(absl::StrCat(BipedLimbName(static_cast<BipedLimb>(l)),
                        ": the end is a point, not a joint; its effector "
                        "rotation is not written"));
    }
    return;
  }
  Eigen::Quaternionf r3 = pose_.Model(r.end).rotation;
  const float maintain =
      Clamp01(limb.settings->maintain_rotation_weight) * weight * w_;
  if (maintain > 0.0f) r3 = QLerp(r3, limb.maintain_rotation, maintain);
  const float to_effector = weight * end.effector_rotation_weight;
  if (to_effector > 0.0f) r3 = QLerp(r3, end.solver_rotation, to_effector);
  if (maintain > 0.0f || to_effector > 0.0f) pose_.SetModelRotation(r.end, r3);
}

// -------------------------------------------------------------- Validation

std::string EffectorField(int e, absl::string_view what) {
  return absl::StrCat(kField, ".effectors[",
                      BipedEffectorName(static_cast<BipedEffectorId>(e)), "].",
                      what);
}

std::string LimbField(int l, absl::string_view what) {
  return absl::StrCat(kField, ".limbs[",
                      BipedLimbName(static_cast<BipedLimb>(l)), "].", what);
}

// The checks take the field's name as a callable: it is only built for an
// error (validation runs on every solve).
template <typename Field>
absl::Status CheckFinite(float v, const Field& field) {
  if (!std::isfinite(v)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field(), ": ", v, " is not finite"));
  }
  return absl::OkStatus();
}

template <typename Field>
absl::Status CheckPoint(const Eigen::Vector3f& v, const Field& field) {
  if (!v.allFinite()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field(), ": NaN or infinite component"));
  }
  if (!(v.cwiseAbs().maxCoeff() <= kMaxFullBodyCoordinate)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field(), ": component beyond +-", kMaxFullBodyCoordinate));
  }
  return absl::OkStatus();
}

bool NothingToSolve(const FullBodyBipedIkJob& job) {
  for (const BipedEffector& e : job.effectors) {
    if (e.position_weight > 0.0f || e.rotation_weight > 0.0f ||
        !e.position_offset.isZero()) {
      return false;
    }
  }
  for (const BipedLimbSettings& l : job.limbs) {
    if (l.bend_goal_weight > 0.0f) return false;
  }
  return true;
}

}  // namespace

const char* BipedEffectorName(BipedEffectorId effector) {
  switch (effector) {
    case BipedEffectorId::kBody:
      return "body";
    case BipedEffectorId::kLeftShoulder:
      return "left_shoulder";
    case BipedEffectorId::kRightShoulder:
      return "right_shoulder";
    case BipedEffectorId::kLeftThigh:
      return "left_thigh";
    case BipedEffectorId::kRightThigh:
      return "right_thigh";
    case BipedEffectorId::kLeftHand:
      return "left_hand";
    case BipedEffectorId::kRightHand:
      return "right_hand";
    case BipedEffectorId::kLeftFoot:
      return "left_foot";
    case BipedEffectorId::kRightFoot:
      return "right_foot";
  }
  return "unknown_effector";
}

BipedLimb BipedEffectorLimb(BipedEffectorId effector) {
  switch (effector) {
    case BipedEffectorId::kLeftShoulder:
    case BipedEffectorId::kLeftHand:
      return BipedLimb::kLeftArm;
    case BipedEffectorId::kRightShoulder:
    case BipedEffectorId::kRightHand:
      return BipedLimb::kRightArm;
    case BipedEffectorId::kLeftThigh:
    case BipedEffectorId::kLeftFoot:
      return BipedLimb::kLeftLeg;
    default:
      return BipedLimb::kRightLeg;
  }
}

std::array<BipedLimbSettings, kNumBipedLimbs> DefaultBipedLimbSettings() {
  std::array<BipedLimbSettings, kNumBipedLimbs> limbs;
  limbs[kLeftLeg].maintain_rotation_weight = 1.0f;
  limbs[kRightLeg].maintain_rotation_weight = 1.0f;
  return limbs;
}

absl::Status FullBodyBipedIkJob::Validate() const {
  if (skeleton == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(kField, ".skeleton: null"));
  }
  if (mapping == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(kField, ".mapping: null"));
  }
  const int n = skeleton->num_joints();
  if (mapping->num_joints() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat(kField, ".mapping: built for a skeleton of ",
                     mapping->num_joints(), " joints, this one has ", n));
  }
  if (absl::Status s = CheckInputPose(
          *skeleton, input, "full_body_biped_ik.input", input_validated);
      !s.ok()) {
    return s;
  }
  if (static_cast<int>(output.size()) != n) {
    return absl::InvalidArgumentError(
        absl::StrCat(kField, ".output: ", output.size(),
                     " transforms for a skeleton of ", n, " joints"));
  }
  if (absl::Status s =
          CheckNoPartialOverlap(output, "full_body_biped_ik.output", input,
                                "full_body_biped_ik.input");
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          CheckFinite(ik_position_weight,
                      [] { return "full_body_biped_ik.ik_position_weight"; });
      !s.ok()) {
    return s;
  }
  if (iterations < 0 || iterations > kMaxFullBodyBipedIterations) {
    return absl::InvalidArgumentError(
        absl::StrCat(kField, ".iterations: ", iterations, " is outside [0, ",
                     kMaxFullBodyBipedIterations, "]"));
  }
  if (spine_iterations < 1 || spine_iterations > kMaxSpineMappingIterations) {
    return absl::InvalidArgumentError(
        absl::StrCat(kField, ".spine_iterations: ", spine_iterations,
                     " is outside [1, ", kMaxSpineMappingIterations, "]"));
  }
  if (absl::Status s =
          CheckFinite(spine_twist_weight,
                      [] { return "full_body_biped_ik.spine_twist_weight"; });
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckFinite(
          head_maintain_rotation_weight,
          [] { return "full_body_biped_ik.head_maintain_rotation_weight"; });
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          ValidateTolerance(tolerance, "full_body_biped_ik.tolerance");
      !s.ok()) {
    return s;
  }
  for (int e = 0; e < kNumBipedEffectors; ++e) {
    const BipedEffector& eff = effectors[e];
    if (absl::Status s = CheckPoint(
            eff.position, [e] { return EffectorField(e, "position"); });
        !s.ok()) {
      return s;
    }
    if (absl::Status s =
            CheckPoint(eff.position_offset,
                       [e] { return EffectorField(e, "position_offset"); });
        !s.ok()) {
      return s;
    }
    for (auto [v, name] : {std::pair{eff.position_weight, "position_weight"},
                           std::pair{eff.rotation_weight, "rotation_weight"},
                           std::pair{eff.maintain_relative_position_weight,
                                     "maintain_relative_position_weight"}}) {
      if (absl::Status s =
              CheckFinite(v, [e, n = name] { return EffectorField(e, n); });
          !s.ok()) {
        return s;
      }
    }
    const Eigen::Vector4f& q = eff.rotation.coeffs();
    if (!q.allFinite() ||
        !(std::fabs(q.norm() - 1.0f) <= kUnitQuaternionTolerance)) {
      return absl::InvalidArgumentError(
          absl::StrCat(EffectorField(e, "rotation"),
                       ": not a finite unit quaternion (norm ", q.norm(), ")"));
    }
  }
  for (int l = 0; l < kNumBipedLimbs; ++l) {
    const BipedLimbSettings& s = limbs[l];
    for (auto [v, name] :
         {std::pair{s.pull, "pull"}, std::pair{s.reach, "reach"},
          std::pair{s.push, "push"}, std::pair{s.push_parent, "push_parent"},
          std::pair{s.bend_goal_weight, "bend_goal_weight"},
          std::pair{s.mapping_weight, "mapping_weight"},
          std::pair{s.maintain_rotation_weight, "maintain_rotation_weight"}}) {
      if (absl::Status st =
              CheckFinite(v, [l, n = name] { return LimbField(l, n); });
          !st.ok()) {
        return st;
      }
    }
    if (absl::Status st =
            CheckPoint(s.bend_goal, [l] { return LimbField(l, "bend_goal"); });
        !st.ok()) {
      return st;
    }
    for (auto [smoothing, name] :
         {std::pair{s.reach_smoothing, "reach_smoothing"},
          std::pair{s.push_smoothing, "push_smoothing"}}) {
      const int v = static_cast<int>(smoothing);
      if (v < 0 || v > static_cast<int>(FbikSmoothing::kCubic)) {
        return absl::InvalidArgumentError(
            absl::StrCat(LimbField(l, name), ": unknown smoothing ", v));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status FullBodyBipedIkJob::Run() const {
  if (absl::Status s = Validate(); !s.ok()) return s;
  CopyPose(input, output);
  const float weight = Clamp01(ik_position_weight);
  std::vector<std::string>* warnings = nullptr;
  if (result != nullptr) {
    *result = FullBodyBipedIkResult();
    result->warnings.assign(mapping->warnings().begin(),
                            mapping->warnings().end());
    warnings = &result->warnings;
  }
  // FinalIK returns at once for a zero master weight. With no effector,
  // offset or bend goal there is nothing to solve either, and the input is
  // returned as it is (FinalIK would still apply LimitBend's small bend to
  // limbs straighter than its clamp allows).
  if (!(weight > 0.0f) || NothingToSolve(*this)) return absl::OkStatus();
  // relative_to_chain is resolved per effector by the solver, which knows
  // the limb lengths; the others here, once.
  const float tolerance_unit = ResolveTolerance(tolerance, *skeleton, 1.0f);
  Solver solver(*this, weight, warnings, tolerance_unit);
  solver.Run();
  if (result == nullptr) return absl::OkStatus();

  result->iterations = solver.iterations_run();
  result->closing_translation = solver.closing_translation();
  for (int e = 0; e < kNumBipedEffectors; ++e) {
    BipedEffectorResult& r = result->effectors[e];
    r.active = Clamp01(effectors[e].position_weight) * weight > 0.0f;
    if (!r.active) continue;
    r.tolerance = solver.Tolerance(e);
    r.error = (solver.OutputPosition(e) - effectors[e].position).norm();
    r.reached = r.error <= r.tolerance;
    result->reached = result->reached && r.reached;
    result->max_error = std::max(result->max_error, r.error);
  }
  return absl::OkStatus();
}

}  // namespace posewire
