#include "solver_core/chain_ik/fabrik_ik.h"

#include <Eigen/SVD>
#include <algorithm>
#include <cmath>

#include "absl/base/optimization.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/quaternion_math.h"

namespace posewire {
namespace {

template <typename T>
using NodeVector = absl::InlinedVector<T, 16>;

// Directions within this sine of each other count as collinear for the
// singularity test.
constexpr float kCollinearSine = 1e-4f;
// Iterations before a slow one hands over to the closing step, and what
// counts as slow: an iteration that leaves more than this fraction of the
// previous one's squared error (half the distance).
constexpr int kMinIterations = 3;
constexpr float kSlowIteration2 = 0.25f;

Eigen::Quaternionf Normalized(const Eigen::Quaternionf& q) {
  return Eigen::Quaternionf(q.coeffs() * (1.0f / q.coeffs().norm()));
}

Eigen::Vector3f UnitOr(const Eigen::Vector3f& v,
                       const Eigen::Vector3f& fallback) {
  const float n2 = v.squaredNorm();
  return n2 > 1e-40f ? Eigen::Vector3f(v * (1.0f / std::sqrt(n2))) : fallback;
}

// The unit in-plane part of `v` (plane through the origin, unit `normal`);
// of `fallback` when v has none; any in-plane direction when neither has.
Eigen::Vector3f InPlane(const Eigen::Vector3f& v, const Eigen::Vector3f& normal,
                        const Eigen::Vector3f& fallback) {
  Eigen::Vector3f p = v - normal * normal.dot(v);
  float n = p.norm();
  if (n > 1e-20f) return p / n;
  p = fallback - normal * normal.dot(fallback);
  n = p.norm();
  if (n > 1e-20f) return p / n;
  return AnyPerpendicular(normal);
}

// Everything one FABRIK solve needs besides the IkChain's nodes.
struct Problem {
  IkChain* c = nullptr;
  // Per node: children (CSR), limit (nullptr for none and for tips), the
  // summed pull of the effectors below it, and its effector index or -1.
  NodeVector<int> child_begin;
  NodeVector<int> children;
  NodeVector<const JointLimit*> limit;
  NodeVector<float> pull;
  NodeVector<int> effector_of;
  absl::InlinedVector<int, 4> effector_nodes;
  absl::InlinedVector<Eigen::Vector3f, 4> targets;
  bool planar = false;
  Eigen::Vector3f normal = Eigen::Vector3f::Zero();
  absl::Span<const SignedAngleRange> planar_limits;
  int max_iterations = 0;
  float tolerance = 0.0f;
  // FabrikIkJob::over_relaxation (0 for trees).
  float over_relaxation = 0.0f;
  // A chain with no limit table and no plane: Solve takes its fast path,
  // which reads none of the per-node tables above, so they are left empty
  // (filling them was a measurable part of a short solve).
  bool plain_chain = false;
  // FabrikIkJob::polish (false for trees).
  bool polish = false;

  int num_children(int i) const { return child_begin[i + 1] - child_begin[i]; }
};

class FabrikSolver {
 public:
  explicit FabrikSolver(Problem& pb) : pb_(pb), c_(*pb.c) {}

  // Solves; leaves the IkChain with the solved local rotations and fresh
  // model transforms. Returns iterations used.
  int Solve() {
    const int n = c_.size();
    bool any_limit = false;
    bool is_chain = true;
    if (!pb_.plain_chain) {
      // Raw arrays: InlinedVector's operator[] tests where its storage lives
      // on every access.
      const JointLimit* const* limits = pb_.limit.data();
      const int* child_begin = pb_.child_begin.data();
      for (int i = 0; i < n; ++i) {
        if (limits[i] != nullptr) {
          c_.set_local_rotation(
              i, ApplyJointLimit(*limits[i], c_.local(i).rotation));
          any_limit = true;
        }
        is_chain &= child_begin[i + 1] - child_begin[i] <= 1;
      }
    }
    if (any_limit) c_.UpdateModel(0);
    rotational_ = any_limit || !is_chain;

    fast_ = !rotational_ && is_chain && !pb_.planar;
    const bool relax = fast_ && pb_.over_relaxation > 0.0f;
    p_.resize(n);
    const Transform* models = c_.models();
    Eigen::Vector3f* p = p_.data();
    for (int i = 0; i < n; ++i) p[i] = models[i].translation;
    if (!fast_) {
      // Fallback directions for joints that land on their neighbour. The
      // fast path computes them on demand (it never needs them in practice).
      dir0_.resize(n);
      acc_.resize(n);
      wsum_.resize(n);
      for (int i = 0; i < n; ++i) {
        dir0_[i] =
            i == 0 ? Eigen::Vector3f::UnitY()
                   : UnitOr(p_[i] - p_[c_.parent(i)], Eigen::Vector3f::UnitY());
        if (pb_.planar) dir0_[i] = InPlane(dir0_[i], pb_.normal, dir0_[i]);
      }
    }
    goals_.assign(pb_.targets.begin(), pb_.targets.end());
    if (pb_.planar) {
      for (Eigen::Vector3f& g : goals_) {
        g -= pb_.normal * pb_.normal.dot(g - p_[0]);
      }
    }

    tolerance2_ = pb_.tolerance * pb_.tolerance;
    if (WithinTolerance() || pb_.max_iterations == 0) return 0;

    const Eigen::Vector3f& root = p_[0];
    if (is_chain && !any_limit && pb_.planar_limits.empty() &&
        (goals_[0] - root).norm() >= c_.total_length()) {
      // Out of reach: the straight chain toward the target, in one pass.
      const Eigen::Vector3f dir = (goals_[0] - root).normalized();
      float along = 0.0f;
      for (int i = 1; i < n; ++i) {
        along += c_.length(i);
        p_[i] = root + dir * along;
      }
      c_.AlignChainTo(p_);
      return 1;
    }

    const Eigen::Vector3f offset =
        is_chain ? SingularityOffset() : Eigen::Vector3f::Zero();
    // Limited chains and trees can oscillate (passes that each respect the
    // limits need not agree); keep the best pose seen, never return a worse
    // one than the input or an earlier iteration. Best means the smallest
    // pull-weighted sum of squared effector errors, so a tree whose targets
    // conflict keeps the compromise its pulls ask for.
    NodeVector<Eigen::Quaternionf> best;
    float best_error = 0.0f;
    if (rotational_) {
      best_error = Objective();
      best.resize(n);
      for (int i = 0; i < n; ++i) best[i] = c_.local(i).rotation;
    }
    int iterations = 0;
    // The closing step takes over from slow iterations (fabrik_ik.h): plain
    // chains only.
    const bool polish = fast_ && pb_.polish;
    bool slow = false;
    // LargestError2() after the previous iteration (over-relaxation: every
    // iteration that gets there had a nonzero error).
    float last_e2 = 0.0f;
    const OverRelaxation relaxation(pb_.over_relaxation);
    for (int it = 0; it < pb_.max_iterations; ++it) {
      const Eigen::Vector3f shift = it == 0 ? offset : Eigen::Vector3f::Zero();
      if (rotational_) {
        if (is_chain) {
          ForwardRotational(shift);
        } else {
          Forward(shift);
        }
        BackwardRotational();
      } else if (fast_) {
        if (relax) start_.assign(p_.begin(), p_.end());
        ChainPasses(goals_[0] + shift);
      } else {
        Forward(shift);
        BackwardPositional();
      }
      if (is_chain && (rotational_ || !pb_.planar_limits.empty())) {
        AlignRoot();
      }
      iterations = it + 1;
      if (rotational_) {
        const float objective = Objective();
        if (objective < best_error) {
          best_error = objective;
          for (int i = 0; i < n; ++i) best[i] = c_.local(i).rotation;
        }
      }
      const float e2 = LargestError2();
      if (e2 <= tolerance2_) break;
      if (polish && it >= kMinIterations - 1 &&
          e2 > kSlowIteration2 * last_e2) {
        slow = true;
        break;
      }
      // Extend the move (not after the first iteration; see fabrik_ik.h),
      // only when another iteration follows, so the answer is never an
      // extended pose.
      if (relax && it >= 1 && it + 1 < pb_.max_iterations) {
        if (const float b = relaxation.Factor(e2, last_e2); b > 0.0f) {
          Extend(b);
        }
      }
      last_e2 = e2;
    }
    if (rotational_) {
      for (int i = 0; i < n; ++i) c_.set_local_rotation(i, best[i]);
      c_.UpdateModel(0);
    } else {
      c_.AlignChainTo(p_);
    }
    if (slow && iterations < pb_.max_iterations) {
      float err2 = (goals_[0] - c_.position(n - 1)).squaredNorm();
      iterations += PolishChain(c_, {}, {}, 0.0f, goals_[0], tolerance2_,
                                pb_.max_iterations - iterations, &err2);
    }
    return iterations;
  }

 private:
  // The largest squared distance of an effector from its target (squared:
  // no square root per iteration).
  float LargestError2() const {
    float e2 = 0.0f;
    for (size_t k = 0; k < pb_.effector_nodes.size(); ++k) {
      e2 = std::max(e2,
                    (p_[pb_.effector_nodes[k]] - pb_.targets[k]).squaredNorm());
    }
    return e2;
  }

  // Whether every effector is within the tolerance.
  bool WithinTolerance() const { return LargestError2() <= tolerance2_; }

  float Objective() const {
    float sum = 0.0f;
    for (size_t k = 0; k < pb_.effector_nodes.size(); ++k) {
      const int node = pb_.effector_nodes[k];
      sum += pb_.pull[node] * (p_[node] - pb_.targets[k]).squaredNorm();
    }
    return sum;
  }

  // FinalIK's GetSingularityOffset: a straight chain whose target lies on
  // its line never leaves the line under FABRIK, so the first iteration aims
  // half a last bone to the side.
  Eigen::Vector3f SingularityOffset() const {
    const int n = c_.size();
    const Eigen::Vector3f& root = p_[0];
    const Eigen::Vector3f to_goal = goals_[0] - root;
    if (!(to_goal.norm() < c_.total_length())) return Eigen::Vector3f::Zero();
    const Eigen::Vector3f line = p_[n - 1] - root;
    const float line_norm = line.norm();
    if (!(line_norm > 1e-20f)) return Eigen::Vector3f::Zero();
    const Eigen::Vector3f u = line / line_norm;
    // Cheapest test first: is the goal on the root-to-tip line at all?
    if (to_goal.cross(u).norm() > kCollinearSine * to_goal.norm()) {
      return Eigen::Vector3f::Zero();
    }
    for (int i = 1; i < n; ++i) {
      const Eigen::Vector3f bone = p_[i] - p_[c_.parent(i)];
      if (bone.cross(u).norm() > kCollinearSine * bone.norm()) {
        return Eigen::Vector3f::Zero();
      }
    }
    const Eigen::Vector3f side =
        pb_.planar ? InPlane(pb_.normal.cross(u), pb_.normal, u)
                   : AnyPerpendicular(u);
    return side * (0.5f * c_.length(n - 1));
  }

  // Tip to root: tips on their targets, every other joint slid along the
  // line to its (moved) child to restore the bone length; at a sub-base the
  // pull-weighted centroid of what each branch asks for (FinalIK's
  // FBIKChain.Stage1).
  void Forward(const Eigen::Vector3f& offset) {
    const int n = c_.size();
    for (int i = 0; i < n; ++i) {
      acc_[i] = Eigen::Vector3f::Zero();
      wsum_[i] = 0.0f;
    }
    for (int k = n - 1; k >= 1; --k) {
      const int e = pb_.effector_of[k];
      if (e >= 0) {
        p_[k] = goals_[e] + offset;
      } else if (pb_.num_children(k) == 1) {
        p_[k] = acc_[k];
      } else {
        p_[k] = acc_[k] / wsum_[k];
      }
      const int parent = c_.parent(k);
      Eigen::Vector3f dir = UnitOr(p_[parent] - p_[k], -dir0_[k]);
      // Bend limits are left to the backward pass: clamping here too
      // (a tip-first follow with bend limits, as some 2D FABRIKs do) makes
      // one-sided limits collapse the chain onto a line through the target.
      if (pb_.planar) dir = InPlane(dir, pb_.normal, -dir0_[k]);
      const Eigen::Vector3f proposal = p_[k] + dir * c_.length(k);
      if (pb_.num_children(parent) == 1) {
        acc_[parent] = proposal;
      } else {
        acc_[parent] += pb_.pull[k] * proposal;
        wsum_[parent] += pb_.pull[k];
      }
    }
  }

  // Tip to root carrying frames, for limited chains: the tip goes on the
  // target; each joint's frame is then derived from its child's through the
  // child's local rotation, re-aimed within the child's limit so the bone
  // between them points back toward the joint's previous position. Every
  // interior joint's limit holds after this pass, as every joint's does after
  // the backward pass; only the pinned ends differ (the root here, the tip
  // there), which is what FABRIK iterates away.
  void ForwardRotational(const Eigen::Vector3f& offset) {
    const int n = c_.size();
    const int tip = n - 1;
    p_[tip] = goals_[0] + offset;
    // The tip's frame is free; its local rotation is kept.
    Eigen::Quaternionf frame =
        Normalized(c_.rotation(tip - 1) * c_.local(tip).rotation);
    for (int k = tip; k >= 1; --k) {
      const int j = k - 1;
      Eigen::Vector3f dir = UnitOr(p_[k] - p_[j], dir0_[k]);
      if (pb_.planar) dir = InPlane(dir, pb_.normal, dir0_[k]);
      Eigen::Quaternionf parent_frame;
      if (k == tip) {
        // Swing the child's frame (with its local rotation fixed) so the
        // bone points along dir.
        const Eigen::Quaternionf inv_local = c_.local(k).rotation.conjugate();
        const Eigen::Vector3f bone = frame * (inv_local * c_.offset(k));
        frame = Normalized(FromToRotation(bone, dir) * frame);
        parent_frame = Normalized(frame * inv_local);
      } else {
        // L * (conj(frame) * dir) should point along the offset.
        const Eigen::Quaternionf local = AimWithinJointLimit(
            pb_.limit[k] != nullptr ? *pb_.limit[k] : free_,
            c_.local(k).rotation, frame.conjugate() * dir, c_.offset(k));
        c_.set_local_rotation(k, local);
        parent_frame = Normalized(frame * local.conjugate());
      }
      if (j >= 1) p_[j] = p_[k] - parent_frame * c_.offset(k);
      frame = parent_frame;
    }
  }

  // Turns the whole chain about its root so the tip lies on the ray from
  // the root to the target: a CCD step at the root. Bends are unchanged, so
  // bend limits still hold; the root's own limit is applied.
  void AlignRoot() {
    const int n = c_.size();
    const Eigen::Vector3f& root = p_[0];
    Eigen::Vector3f from = p_[n - 1] - root;
    Eigen::Vector3f to = goals_[0] - root;
    if (pb_.planar) {
      from -= pb_.normal * pb_.normal.dot(from);
      to -= pb_.normal * pb_.normal.dot(to);
    }
    Eigen::Quaternionf turn = FromToRotation(from, to);
    if (rotational_) {
      const Eigen::Quaternionf rp = c_.base().rotation;
      Eigen::Quaternionf local =
          Normalized(rp.conjugate() * turn * c_.rotation(0));
      if (pb_.limit[0] != nullptr)
        local = ApplyJointLimit(*pb_.limit[0], local);
      c_.set_local_rotation(0, local);
      c_.UpdateModel(0);
      for (int i = 1; i < n; ++i) p_[i] = c_.position(i);
      return;
    }
    for (int i = 1; i < n; ++i) p_[i] = root + turn * (p_[i] - root);
  }

  // p <- p + b (p - start) for every node but the root (pinned) and the tip
  // (the next forward pass puts it on the target).
  void Extend(float b) {
    for (int i = 1; i + 1 < c_.size(); ++i) p_[i] += b * (p_[i] - start_[i]);
  }

  // Both passes for the common case, a chain without limits or plane: the
  // same geometry as Forward and BackwardPositional without the tree
  // bookkeeping.
  void ChainPasses(const Eigen::Vector3f& goal) {
    const int n = c_.size();
    p_[n - 1] = goal;
    ReachPass<-1>(n - 1, 1);
    ReachPass<+1>(0, n - 1);
  }

  // One reaching pass: node `pinned` stays where it is and each next node
  // up to `last` (step -1: toward the root, +1: toward the tip) slides along
  // the line to its old place until it is its bone's length from the node
  // placed before it.
  //
  // Speed: each node's scale (length / distance) waits for the previous
  // node's, so the pass is one long chain of dependent square roots and
  // divisions. The squared distance for the next node is therefore carried
  // as a scalar instead of being recomputed from the placed position: with
  // b = next_old - anchor and d = node_old - anchor (scaled by s onto the
  // bone, s |d| = length),
  //   |next_old - placed|^2 = |b|^2 - 2 s (b . d) + length^2,
  // where |b|^2 and b . d do not wait for s. Only a multiply and a subtract
  // are added to the chain, instead of a vector difference and a dot
  // product. Where the sum cancels (the next node's old place near the new
  // one, relative error above ~64 ulp) it is recomputed from the vectors.
  template <int kStep>
  void ReachPass(int pinned, int last) {
    constexpr float kRecomputeBelow = 1.0f / 16.0f;
    if (pinned == last) return;
    Eigen::Vector3f* p = p_.data();
    const float* lengths = c_.lengths();
    int a = pinned;
    Eigen::Vector3f d = p[a + kStep] - p[a];
    float d2 = d.squaredNorm();
    while (true) {
      const int m = a + kStep;
      // Bone k joins nodes k - 1 and k.
      const int bone = kStep > 0 ? m : a;
      const float len = lengths[bone];
      if (m == last) {
        PlaceNode(a, m, bone, d, d2, len);
        return;
      }
      // For the next node; none of it waits for the scale.
      const Eigen::Vector3f b = p[m + kStep] - p[a];
      const float base = b.squaredNorm() + len * len;
      const float twice_bd = 2.0f * b.dot(d);
      const float s = PlaceNode(a, m, bone, d, d2, len);
      d = p[m + kStep] - p[m];
      const float estimate = base - s * twice_bd;
      // A branch, not a select: a select would wait for the recomputed sum
      // too, putting it back on the chain.
      if (ABSL_PREDICT_TRUE(s > 0.0f && estimate >= kRecomputeBelow * base)) {
        d2 = estimate;
      } else {
        d2 = d.squaredNorm();
      }
      a = m;
    }
  }

  // Places node m at `len` from node a along d (d2 = |d|^2); returns the
  // scale applied to d, 0 when d is too short to give a direction (the
  // bone's input direction is used).
  float PlaceNode(int a, int m, int bone, const Eigen::Vector3f& d, float d2,
                  float len) {
    Eigen::Vector3f* p = p_.data();
    if (ABSL_PREDICT_TRUE(d2 > 1e-40f)) {
      const float s = len / std::sqrt(d2);
      p[m] = p[a] + d * s;
      return s;
    }
    p[m] = p[a] + InputDirection(bone) * (m > a ? len : -len);
    return 0.0f;
  }

  // Direction of node k's bone in the input pose (the IkChain's model
  // transforms are untouched until the final mapping on the fast path).
  Eigen::Vector3f InputDirection(int k) const {
    return UnitOr(c_.position(k) - c_.position(k - 1),
                  Eigen::Vector3f::UnitY());
  }

  // Root to tip on positions only (chains without joint limits).
  void BackwardPositional() {
    const int n = c_.size();
    for (int k = 1; k < n; ++k) {
      const int parent = k - 1;
      Eigen::Vector3f dir = UnitOr(p_[k] - p_[parent], dir0_[k]);
      if (pb_.planar) {
        dir = InPlane(dir, pb_.normal, dir0_[k]);
        dir = ClampPlanar(parent, dir);
      }
      p_[k] = p_[parent] + dir * c_.length(k);
    }
  }

  // The planar bound on the bend at chain node `node` for the direction of
  // the segment leaving it.
  Eigen::Vector3f ClampPlanar(int node, const Eigen::Vector3f& dir) const {
    if (pb_.planar_limits.empty() || node < 1 || !(c_.length(node) > 0.0f)) {
      return dir;
    }
    const Eigen::Vector3f prev =
        InPlane(p_[node] - p_[node - 1], pb_.normal, dir0_[node]);
    return ClampSignedAngle(prev, dir, pb_.normal, pb_.planar_limits[node - 1]);
  }

  // Root to tip carrying rotations: each joint turns toward where the
  // forward pass put its child(ren), its local rotation is limited, and the
  // children go where the limited rotation puts them.
  void BackwardRotational() {
    const int n = c_.size();
    for (int j = 0; j < n; ++j) {
      const int count = pb_.num_children(j);
      if (count == 0) continue;
      const Eigen::Quaternionf rp = c_.parent_rotation(j);
      Eigen::Quaternionf r = Normalized(rp * c_.local(j).rotation);
      const JointLimit* limit = pb_.limit[j];
      Eigen::Quaternionf local;
      if (count == 1) {
        const int k = pb_.children[pb_.child_begin[j]];
        Eigen::Vector3f want = p_[k] - p_[j];
        if (pb_.planar) {
          want = ClampPlanar(j, InPlane(want, pb_.normal, dir0_[k]));
        }
        r = Normalized(FromToRotation(r * c_.offset(k), want) * r);
        if (pb_.limit[k] != nullptr && pb_.num_children(k) == 1) {
          r = Normalized(TwistTowardGrandchild(j, k, r) * r);
        }
        local = Normalized(rp.conjugate() * r);
        if (limit != nullptr) {
          local = ApplyJointLimit(*limit, local);
          r = Normalized(rp * local);
        }
      } else {
        r = Normalized(FitChildren(j, r) * r);
        local = Normalized(rp.conjugate() * r);
        if (limit != nullptr) {
          local = ApplyJointLimit(*limit, local);
          r = Normalized(rp * local);
        }
      }
      c_.set_local_rotation(j, local);
      c_.set_model_rotation(j, r);
      for (int s = pb_.child_begin[j]; s < pb_.child_begin[j + 1]; ++s) {
        const int k = pb_.children[s];
        p_[k] = p_[j] + r * c_.offset(k);
      }
    }
  }

  // Positions say nothing about the twist of joint j about its bone, and
  // the minimal swing keeps it; but a limited child (a hinge, a narrow Euler
  // box) can only bend in the plane that twist sets. So turn j about its
  // bone (toward k, already aimed) until the child's bone, at the child's
  // current local rotation, lies in the plane of the bone's axis and the
  // grandchild's forward-pass position. j's own limit applies afterwards.
  Eigen::Quaternionf TwistTowardGrandchild(int j, int k,
                                           const Eigen::Quaternionf& r) const {
    const Eigen::Vector3f bone = r * c_.offset(k);
    const float bn = bone.norm();
    if (!(bn > 1e-20f)) return Eigen::Quaternionf::Identity();
    const Eigen::Vector3f axis = bone / bn;
    const int g = pb_.children[pb_.child_begin[k]];
    const Eigen::Vector3f k_pos = p_[j] + bone;
    Eigen::Vector3f cur = r * (c_.local(k).rotation * c_.offset(g));
    Eigen::Vector3f want = p_[g] - k_pos;
    cur -= axis * axis.dot(cur);
    want -= axis * axis.dot(want);
    if (!(cur.squaredNorm() > 1e-20f) || !(want.squaredNorm() > 1e-20f)) {
      return Eigen::Quaternionf::Identity();
    }
    const float angle = std::atan2(axis.dot(cur.cross(want)), cur.dot(want));
    return QuaternionFromAngleAxis(angle, axis);
  }

  // The rotation that best turns sub-base j's child offsets (under its
  // current model rotation r) onto the directions to the children's
  // forward-pass positions, weighted by pull: Kabsch's least-squares
  // rotation from the SVD of the weighted cross-covariance. When the offsets
  // or the directions are collinear the rotation about that line is free,
  // and the smallest one is used.
  Eigen::Quaternionf FitChildren(int j, const Eigen::Quaternionf& r) const {
    Eigen::Matrix3f h = Eigen::Matrix3f::Zero();
    for (int s = pb_.child_begin[j]; s < pb_.child_begin[j + 1]; ++s) {
      const int k = pb_.children[s];
      const Eigen::Vector3f u = r * c_.offset(k);
      const Eigen::Vector3f d = p_[k] - p_[j];
      const float un = u.norm();
      const float dn = d.norm();
      if (!(un > 0.0f) || !(dn > 0.0f)) continue;
      h += pb_.pull[k] * u * (d * (un / dn)).transpose();
    }
    const Eigen::JacobiSVD<Eigen::Matrix3f> svd(
        h, Eigen::ComputeFullU | Eigen::ComputeFullV);
    const Eigen::Vector3f& sv = svd.singularValues();
    if (!(sv[0] > 1e-20f)) return Eigen::Quaternionf::Identity();
    if (sv[1] <= 1e-6f * sv[0]) {
      return FromToRotation(svd.matrixU().col(0), svd.matrixV().col(0));
    }
    const Eigen::Matrix3f& u = svd.matrixU();
    const Eigen::Matrix3f& v = svd.matrixV();
    Eigen::Matrix3f d = Eigen::Matrix3f::Identity();
    if ((v * u.transpose()).determinant() < 0.0f) d(2, 2) = -1.0f;
    return Normalized(
        Eigen::Quaternionf(Eigen::Matrix3f(v * d * u.transpose())));
  }

  Problem& pb_;
  IkChain& c_;
  // kNone: joints without a limit are re-aimed by the minimal swing.
  const JointLimit free_;
  bool rotational_ = false;
  bool fast_ = false;
  float tolerance2_ = 0.0f;
  NodeVector<Eigen::Vector3f> p_;
  // Positions at the start of the iteration (over-relaxation only).
  NodeVector<Eigen::Vector3f> start_;
  NodeVector<Eigen::Vector3f> dir0_;
  NodeVector<Eigen::Vector3f> acc_;
  NodeVector<float> wsum_;
  absl::InlinedVector<Eigen::Vector3f, 4> goals_;
};

// Shared tail of both jobs: solve, write rotations, blend by weight, report
// the error of the returned pose.
void SolveAndWrite(Problem& pb, float weight, absl::Span<Transform> output,
                   IkResult* result) {
  IkChain& c = *pb.c;
  const int n = c.size();
  IkResult res;
  // The input rotations, for the weight blend (output may alias input).
  NodeVector<int> joints;
  NodeVector<Eigen::Quaternionf> before;
  if (weight > 0.0f && weight < 1.0f) {
    for (int i = 0; i < n; ++i) {
      joints.push_back(c.joint(i));
      before.push_back(c.local(i).rotation);
    }
  }
  if (weight > 0.0f) {
    FabrikSolver solver(pb);
    res.iterations = solver.Solve();
    c.ScatterRotations(output);
    if (weight < 1.0f) {
      BlendIkRotations(before, joints, weight, output);
      for (int i = 0; i < n; ++i) {
        c.set_local_rotation(i, output[joints[i]].rotation);
      }
      c.UpdateModel(0);
    }
  }
  for (size_t k = 0; k < pb.effector_nodes.size(); ++k) {
    res.error = std::max(
        res.error, (c.position(pb.effector_nodes[k]) - pb.targets[k]).norm());
  }
  res.reached = res.error <= pb.tolerance;
  if (result != nullptr) *result = res;
}

// `v` resized to `size` value-initialised entries; its storage, to fill
// without InlinedVector's per-access test of where the storage lives.
template <typename T, size_t kInline>
T* ResizedData(absl::InlinedVector<T, kInline>& v, size_t size) {
  v.resize(size);
  return v.data();
}

// The per-node tables of a chain of n nodes (each node the parent of the
// next, the tip the only effector, at full pull), with no limits yet.
void DescribeChain(int n, Problem& pb) {
  int* child_begin = ResizedData(pb.child_begin, n + 1);
  for (int i = 0; i <= n; ++i) child_begin[i] = std::min(i, n - 1);
  int* children = ResizedData(pb.children, n - 1);
  for (int i = 0; i + 1 < n; ++i) children[i] = i + 1;
  pb.limit.resize(n);
  float* pull = ResizedData(pb.pull, n);
  for (int i = 0; i < n; ++i) pull[i] = 1.0f;
  int* effector_of = ResizedData(pb.effector_of, n);
  for (int i = 0; i + 1 < n; ++i) effector_of[i] = -1;
  effector_of[n - 1] = 0;
}

// Field names of one job, as literals: validation builds no string unless
// it fails. String views, so no call measures a name's length at run time.
struct JobFields {
  absl::string_view skeleton;
  absl::string_view input;
  absl::string_view output;
  absl::string_view max_iterations;
  absl::string_view tolerance;
  absl::string_view weight;
};

absl::Status ValidateCommon(const Skeleton* skeleton,
                            absl::Span<const Transform> input,
                            bool input_validated,
                            absl::Span<const Transform> output,
                            int max_iterations, const IkTolerance& tolerance,
                            float weight, const JobFields& f) {
  if (skeleton == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(f.skeleton, ": not set"));
  }
  if (absl::Status s =
          CheckInputPose(*skeleton, input, f.input, input_validated);
      !s.ok()) {
    return s;
  }
  if (static_cast<int>(output.size()) != skeleton->num_joints()) {
    return absl::InvalidArgumentError(absl::StrCat(
        f.output, ": ", output.size(), " transforms for a skeleton of ",
        skeleton->num_joints(), " joints"));
  }
  if (absl::Status s = CheckNoPartialOverlap(output, f.output, input, f.input);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ValidateIterations(max_iterations, f.max_iterations);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ValidateTolerance(tolerance, f.tolerance); !s.ok()) {
    return s;
  }
  return ValidateWeight(weight, f.weight);
}

constexpr JobFields kChainFields = {
    "fabrik_ik.skeleton",       "fabrik_ik.input",     "fabrik_ik.output",
    "fabrik_ik.max_iterations", "fabrik_ik.tolerance", "fabrik_ik.weight"};
constexpr JobFields kTreeFields = {
    "fabrik_tree_ik.skeleton",  "fabrik_tree_ik.input",
    "fabrik_tree_ik.output",    "fabrik_tree_ik.max_iterations",
    "fabrik_tree_ik.tolerance", "fabrik_tree_ik.weight"};

// The tree's joints: the union of the paths from `root` to each effector,
// sorted (so parents come first). Effectors must already be validated.
NodeVector<int> TreeJoints(const Skeleton& skeleton, int root,
                           absl::Span<const FabrikEffector> effectors) {
  NodeVector<int> joints;
  joints.push_back(root);
  for (const FabrikEffector& e : effectors) {
    for (int j = e.joint; j != root; j = skeleton.parent(j)) {
      joints.push_back(j);
    }
  }
  std::sort(joints.begin(), joints.end());
  joints.erase(std::unique(joints.begin(), joints.end()), joints.end());
  return joints;
}

}  // namespace

absl::Status FabrikIkJob::Validate() const {
  if (absl::Status s =
          ValidateCommon(skeleton, input, input_validated, output,
                         max_iterations, tolerance, weight, kChainFields);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ValidateChain(*skeleton, chain, "fabrik_ik.chain");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ValidateFiniteVector(target, "fabrik_ik.target");
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          ValidateJointLimits(*skeleton, limits, chain, "fabrik_ik.limits");
      !s.ok()) {
    return s;
  }
  if (!(over_relaxation >= 0.0f && over_relaxation < 1.0f)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "fabrik_ik.over_relaxation: ", over_relaxation,
        " is outside [0, 1) (0: classic FABRIK; 1 and above can diverge)"));
  }
  if (absl::Status s =
          ValidateFiniteVector(plane_normal, "fabrik_ik.plane_normal");
      !s.ok()) {
    return s;
  }
  const bool planar = plane_normal.squaredNorm() > 0.0f;
  if (planar && !(plane_normal.squaredNorm() > 1e-12f)) {
    return absl::InvalidArgumentError(
        "fabrik_ik.plane_normal: too short to define a plane");
  }
  if (!planar_limits.empty()) {
    if (!planar) {
      return absl::InvalidArgumentError(
          "fabrik_ik.planar_limits: set plane_normal to use planar limits");
    }
    if (planar_limits.size() + 2 != chain.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "fabrik_ik.planar_limits: ", planar_limits.size(),
          " ranges for a chain of ", chain.size(),
          " joints (one per interior joint: ", chain.size() - 2, ")"));
    }
    for (size_t k = 0; k < planar_limits.size(); ++k) {
      if (absl::Status s = ValidateSignedAngleRange(
              planar_limits[k], "fabrik_ik.planar_limits", static_cast<int>(k));
          !s.ok()) {
        return s;
      }
    }
  }
  return absl::OkStatus();
}

absl::Status FabrikIkJob::Run() const {
  if (absl::Status s = Validate(); !s.ok()) return s;
  CopyPose(input, output);
  IkChain c;
  c.GatherChain(*skeleton, input, chain);
  const int n = c.size();
  Problem pb;
  pb.c = &c;
  // assign, not push_back: on a fresh InlinedVector, GCC 12's sanitizer
  // builds (-O1) warn that push_back may read its unset heap pointer.
  pb.effector_nodes.assign(1, n - 1);
  pb.targets.assign(1, target);
  if (plane_normal.squaredNorm() > 0.0f) {
    pb.planar = true;
    pb.normal = plane_normal.normalized();
    pb.planar_limits = planar_limits;
  }
  pb.plain_chain = limits.empty() && !pb.planar;
  if (!pb.plain_chain) {
    DescribeChain(n, pb);
    if (!limits.empty()) {
      // Resized to nullptr entries; the tip's limit stays unused.
      const JointLimit** limit = pb.limit.data();
      for (int i = 0; i + 1 < n; ++i) {
        limit[i] = FindJointLimit(limits, chain[i]);
      }
    }
  }
  pb.max_iterations = max_iterations;
  pb.tolerance = ResolveTolerance(tolerance, *skeleton, c.total_length());
  pb.over_relaxation = over_relaxation;
  pb.polish = polish;
  SolveAndWrite(pb, ClampWeight(weight), output, result);
  return absl::OkStatus();
}

absl::Status FabrikTreeIkJob::Validate() const {
  if (absl::Status s =
          ValidateCommon(skeleton, input, input_validated, output,
                         max_iterations, tolerance, weight, kTreeFields);
      !s.ok()) {
    return s;
  }
  const int num_joints = skeleton->num_joints();
  if (root < 0 || root >= num_joints) {
    return absl::InvalidArgumentError(
        absl::StrCat("fabrik_tree_ik.root: joint ", root,
                     " is out of range [0, ", num_joints, ")"));
  }
  if (effectors.empty()) {
    return absl::InvalidArgumentError(
        "fabrik_tree_ik.effectors: at least one effector is needed");
  }
  for (size_t e = 0; e < effectors.size(); ++e) {
    const FabrikEffector& eff = effectors[e];
    const std::string where = absl::StrCat("fabrik_tree_ik.effectors[", e, "]");
    if (eff.joint < 0 || eff.joint >= num_joints) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ".joint: ", eff.joint, " is out of range [0, ",
                       num_joints, ")"));
    }
    const std::string label = absl::StrCat(
        "joint ", eff.joint, " '", skeleton->joint_name(eff.joint), "'");
    if (eff.joint == root || !skeleton->IsInSubtree(root, eff.joint)) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ".joint: ", label, " is not below the root (joint ", root,
          " '", skeleton->joint_name(root), "')"));
    }
    for (size_t f = 0; f < effectors.size(); ++f) {
      if (f != e && effectors[f].joint >= 0 &&
          effectors[f].joint < num_joints &&
          skeleton->IsInSubtree(eff.joint, effectors[f].joint)) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ".joint: ", label,
            effectors[f].joint == eff.joint ? " is also effector "
                                            : " is an ancestor of effector ",
            f, "; effectors must be tips of separate branches"));
      }
    }
    if (absl::Status s =
            ValidateFiniteVector(eff.target, absl::StrCat(where, ".target"));
        !s.ok()) {
      return s;
    }
    if (!std::isfinite(eff.pull) || !(eff.pull > 0.0f)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ".pull: ", eff.pull, " must be finite and > 0"));
    }
  }
  const NodeVector<int> joints = TreeJoints(*skeleton, root, effectors);
  return ValidateJointLimits(*skeleton, limits, joints,
                             "fabrik_tree_ik.limits");
}

absl::Status FabrikTreeIkJob::Run() const {
  if (absl::Status s = Validate(); !s.ok()) return s;
  CopyPose(input, output);
  const NodeVector<int> joints = TreeJoints(*skeleton, root, effectors);
  IkChain c;
  c.GatherTree(*skeleton, input, joints);
  const int n = c.size();
  Problem pb;
  pb.c = &c;
  NodeVector<int> count(n, 0);
  for (int i = 1; i < n; ++i) ++count[c.parent(i)];
  pb.child_begin.assign(n + 1, 0);
  for (int i = 0; i < n; ++i)
    pb.child_begin[i + 1] = pb.child_begin[i] + count[i];
  pb.children.resize(n - 1);
  NodeVector<int> fill(pb.child_begin.begin(), pb.child_begin.end() - 1);
  for (int i = 1; i < n; ++i) pb.children[fill[c.parent(i)]++] = i;
  pb.effector_of.assign(n, -1);
  pb.pull.assign(n, 0.0f);
  for (size_t e = 0; e < effectors.size(); ++e) {
    const int node = static_cast<int>(
        std::lower_bound(joints.begin(), joints.end(), effectors[e].joint) -
        joints.begin());
    pb.effector_of[node] = static_cast<int>(e);
    pb.effector_nodes.push_back(node);
    pb.targets.push_back(effectors[e].target);
    pb.pull[node] = effectors[e].pull;
  }
  for (int i = n - 1; i >= 1; --i) pb.pull[c.parent(i)] += pb.pull[i];
  pb.limit.resize(n);
  for (int i = 0; i < n; ++i) {
    pb.limit[i] =
        pb.num_children(i) > 0 ? FindJointLimit(limits, joints[i]) : nullptr;
  }
  pb.max_iterations = max_iterations;
  // The tree's length: its longest path from the root to an effector.
  NodeVector<float> path(n, 0.0f);
  float longest = 0.0f;
  for (int i = 1; i < n; ++i) path[i] = path[c.parent(i)] + c.length(i);
  for (int node : pb.effector_nodes) longest = std::max(longest, path[node]);
  pb.tolerance = ResolveTolerance(tolerance, *skeleton, longest);
  SolveAndWrite(pb, ClampWeight(weight), output, result);
  return absl::OkStatus();
}

}  // namespace posewire
