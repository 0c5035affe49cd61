#include "solver_core/dynamics/internal/spring_solver.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "solver_core/dynamics/internal/spring_geometry.h"
#include "solver_core/dynamics/internal/spring_noise.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/model/quaternion_math.h"

namespace posewire {
namespace spring_internal {
namespace {

// Accumulated time within this fraction of a step of a whole number of steps
// counts as that many steps, so 24 frames of 1/144 s make exactly 10 steps
// of 1/60 s despite float rounding.
constexpr float kStepSnap = 1e-3f;

Transform Interpolate(const Transform& a, const Transform& b, float alpha) {
  Transform out;
  out.translation = a.translation + (b.translation - a.translation) * alpha;
  out.rotation = Slerp(a.rotation, b.rotation, alpha);
  out.scale = a.scale + (b.scale - a.scale) * alpha;
  return out;
}

// World vector -> component vector (KawaiiPhysics' InverseTransformVector).
Eigen::Vector3f WorldToComponentVector(const Transform& c,
                                       const Eigen::Vector3f& v) {
  return (c.rotation.conjugate() * v) / c.scale.x();
}

// The inverse of a transform with uniform scale.
Transform Inverse(const Transform& c) {
  Transform out;
  out.rotation = c.rotation.conjugate();
  out.scale = Eigen::Vector3f::Constant(1.0f / c.scale.x());
  out.translation = -(out.rotation * c.translation) / c.scale.x();
  return out;
}

Transform Rigid(const Transform& t) {
  Transform out;
  out.translation = t.translation;
  out.rotation = t.rotation;
  return out;
}

}  // namespace

void Solver::ComputeAnimatedPose() {
  const Skeleton& skel = *job_.skeleton;
  sc_.model.resize(skel.num_joints());
  LocalToModelJob{.skeleton = &skel,
                  .input = job_.input,
                  .output = absl::MakeSpan(sc_.model)}
      .RunUnchecked();
  const int n = rig_.num_particles();
  sc_.pose_cs.resize(n);
  for (int i = 0; i < n; ++i) {
    const SpringParticle& pt = particles_[i];
    if (pt.joint >= 0) {
      sc_.pose_cs[i] = sc_.model[pt.joint].translation;
    } else {
      // Dummy tip: rotation only, like KawaiiPhysics' GetBoneForwardVector.
      const Transform& leaf = sc_.model[particles_[pt.parent].joint];
      sc_.pose_cs[i] = leaf.translation + leaf.rotation * pt.tip_direction *
                                              desc_.dummy_tip_length;
    }
  }
}

void Solver::Initialize(DynamicsState& s) const {
  const int n = rig_.num_particles();
  s.rig_fingerprint = rig_.fingerprint();
  s.space = desc_.space;
  s.step_count = 0;
  s.leftover_time = 0.0f;
  s.previous_component = component_;
  s.positions.resize(n);
  s.previous_positions.resize(n);
  s.previous_pose_positions.resize(n);
  for (int i = 0; i < n; ++i) {
    s.positions[i] = ToSim(sc_.pose_cs[i], component_);
    s.previous_positions[i] = s.positions[i];
    s.previous_pose_positions[i] = sc_.pose_cs[i];
  }
}

Transform Solver::HandleTeleport(DynamicsState& s,
                                 SpringBonesResult& report) const {
  const Transform& prev = s.previous_component;
  const Transform& cur = component_;
  if (prev == cur) return prev;
  // UpdateMovement: the previous component origin seen from the current
  // component, and the rotation between the two.
  const Eigen::Vector3f move = cur.InverseTransformPoint(prev.translation);
  const Eigen::Quaternionf turn = cur.rotation.conjugate() * prev.rotation;
  const float angle_degrees =
      2.0f * std::atan2(turn.vec().norm(), std::fabs(turn.w())) / kDegToRad;
  const bool far =
      desc_.teleport_distance >= 0.0f &&
      move.squaredNorm() > desc_.teleport_distance * desc_.teleport_distance;
  const bool turned = desc_.teleport_rotation_degrees >= 0.0f &&
                      angle_degrees > desc_.teleport_rotation_degrees;
  if (!far && !turned) return prev;
  report.teleported = true;
  if (desc_.teleport_response == TeleportResponse::kReset) {
    Initialize(s);
    report.initialized = true;
    return cur;
  }
  if (world_) {
    // Carry the chain rigidly with the component's jump: no whip.
    for (std::vector<Eigen::Vector3f>* array :
         {&s.positions, &s.previous_positions}) {
      for (Eigen::Vector3f& p : *array) {
        p = cur.TransformPoint(prev.InverseTransformPoint(p));
      }
    }
    s.previous_component = cur;
    return cur;
  }
  // Component space: drop the part of the motion that crossed a threshold,
  // as KawaiiPhysics zeroes SkelCompMoveVector / SkelCompMoveRotation.
  Transform from = prev;
  if (far) from.translation = cur.translation;
  if (turned) from.rotation = cur.rotation;
  s.previous_component = from;
  return from;
}

void Solver::PlaceColliders() {
  sc_.colliders.clear();
  const float scale = component_.scale.x();
  for (const SpringCollider& c : job_.colliders) {
    Transform frame;
    float size = 1.0f;
    switch (c.attachment) {
      case ColliderAttachment::kComponent:
        if (world_) {
          frame = component_;
          size = scale;
        }
        break;
      case ColliderAttachment::kWorld:
        if (!world_) {
          frame = Inverse(component_);
          size = 1.0f / scale;
        }
        break;
      case ColliderAttachment::kBone:
        frame = Rigid(sc_.model[c.bone]);
        if (world_) {
          frame = Combine(component_, frame);
          size = scale;
        }
        break;
    }
    sc_.colliders.push_back(PlaceCollider(c, frame, size));
  }
  sc_.lane_colliders.clear();
  for (const PlacedCollider& c : sc_.colliders) {
    sc_.lane_colliders.push_back(SplatCollider(c));
  }
}

void Solver::Step(LaneEngine& engine, DynamicsState& s, const Transform& from,
                  const Transform& to, float alpha) {
  const int n = rig_.num_particles();
  const float h = rig_.step_seconds();

  // The animated target at this step's time: this frame's pose itself when
  // the step lands on the frame in component space (the common case).
  const bool frame_pose = alpha == 1.0f && !world_;
  if (!frame_pose) {
    sc_.step_pose.resize(n);
    for (int i = 0; i < n; ++i) {
      const Eigen::Vector3f& a = s.previous_pose_positions[i];
      const Eigen::Vector3f p_cs =
          alpha == 1.0f ? sc_.pose_cs[i]
                        : Eigen::Vector3f(a + (sc_.pose_cs[i] - a) * alpha);
      sc_.step_pose[i] = ToSim(p_cs, to);
    }
  }

  // UpdateMovement for this step (component space only).
  const bool follow = !world_ && !(from == to);
  Eigen::Vector3f move = Eigen::Vector3f::Zero();
  Eigen::Matrix3f turn = Eigen::Matrix3f::Identity();
  if (follow) {
    move = to.InverseTransformPoint(from.translation);
    turn = (to.rotation.conjugate() * from.rotation).toRotationMatrix();
  }

  // Forces in simulation space, as per-step displacements.
  const SpringForces& f = job_.forces;
  const Eigen::Vector3f gravity =
      world_ ? f.gravity : WorldToComponentVector(to, f.gravity);
  Eigen::Vector3f external = f.external_force;
  if (world_ && f.external_force_space == ForceSpace::kComponent) {
    external = to.TransformVector(external);
  } else if (!world_ && f.external_force_space == ForceSpace::kWorld) {
    external = WorldToComponentVector(to, external);
  }
  const Eigen::Vector3f constant_step = gravity * (0.5f * h * h) + external * h;
  Eigen::Vector3f wind_step = Eigen::Vector3f::Zero();
  const bool windy = f.wind.speed != 0.0f;
  if (windy) {
    const Eigen::Vector3f dir = f.wind.direction.normalized() * f.wind.speed;
    wind_step = (world_ ? dir : WorldToComponentVector(to, dir)) * h;
    sc_.gusts.assign(rig_.num_chains(), 1.0f);
    if (f.wind.noise_amplitude > 0.0f) {
      const double x = static_cast<double>(s.step_count) *
                       static_cast<double>(h) *
                       static_cast<double>(f.wind.noise_frequency_hz);
      for (int c = 0; c < rig_.num_chains(); ++c) {
        sc_.gusts[c] =
            1.0f + f.wind.noise_amplitude * ValueNoise(f.wind.noise_seed, c, x);
      }
    }
  }

  StepInputs in;
  in.pose = frame_pose ? &sc_.pose_cs : &sc_.step_pose;
  in.follow = follow;
  in.move = move;
  in.turn = turn;
  in.constant_step = constant_step;
  in.windy = windy;
  in.wind_step = wind_step;
  engine.Step(in);
  ++s.step_count;
}

void Solver::ApplyToPose(LaneEngine& engine, const DynamicsState& s,
                         bool landed_on_frame) {
  if (job_.output.data() != job_.input.data() && !job_.input.empty()) {
    // Bytes: Eigen's element-wise assignment is several times slower, and
    // Validate ruled out a partial overlap.
    std::memcpy(static_cast<void*>(job_.output.data()), job_.input.data(),
                job_.input.size() * sizeof(Transform));
  }
  engine.Apply(s, landed_on_frame);
}

void Solver::Prepare(bool initialize, DynamicsState& s,
                     SpringBonesResult& report) {
  ComputeAnimatedPose();
  from_ = component_;
  if (initialize) {
    Initialize(s);
    report.initialized = true;
  } else {
    from_ = HandleTeleport(s, report);
  }
  PlaceColliders();
}

void Solver::Simulate(LaneEngine& engine, DynamicsState& s,
                      SpringBonesResult& report) {
  const Transform& from = from_;

  // Fixed steps. The state holds the time since its last step (the
  // leftover) and the component transform and animated pose at that step:
  // the anchor. Step k of this frame lands k h after the anchor, a fraction
  // k h / total of the way from the anchor to this frame, and sees the
  // component and pose interpolated there; so no motion between steps is
  // lost, whatever the frame rate. A total beyond max_substeps steps is
  // clamped (slow motion for that frame instead of a spiral).
  const float h = rig_.step_seconds();
  float total = s.leftover_time + job_.dt;
  const float cap = static_cast<float>(desc_.max_substeps) * h;
  if (total > cap) {
    total = cap;
    report.time_clamped = true;
  }
  const int steps = std::min(
      static_cast<int>(std::floor(total / h + kStepSnap)), desc_.max_substeps);
  const float remaining = std::max(0.0f, total - static_cast<float>(steps) * h);
  const bool moving = !(from == component_);
  Transform step_from = from;
  float alpha = 0.0f;
  if (steps > 0) engine.Load(s);
  for (int k = 1; k <= steps; ++k) {
    alpha = 1.0f;
    if (total > 0.0f) {
      alpha = std::min(static_cast<float>(k) * h / total, 1.0f);
      if (alpha > 1.0f - 1e-6f) alpha = 1.0f;
    }
    const Transform step_to = moving && alpha < 1.0f
                                  ? Interpolate(from, component_, alpha)
                                  : component_;
    Step(engine, s, step_from, step_to, alpha);
    step_from = step_to;
  }
  if (steps > 0) engine.Store(s);
  report.substeps = steps;

  // The new anchor: the last step (unchanged when no step was taken).
  s.leftover_time = remaining;
  s.previous_component = step_from;
  if (steps > 0 && alpha == 1.0f) {
    // Bytes, as in ApplyToPose.
    if (!sc_.pose_cs.empty()) {
      std::memcpy(static_cast<void*>(s.previous_pose_positions.data()),
                  sc_.pose_cs.data(),
                  sc_.pose_cs.size() * sizeof(Eigen::Vector3f));
    }
  } else if (steps > 0) {
    for (int i = 0; i < rig_.num_particles(); ++i) {
      Eigen::Vector3f& a = s.previous_pose_positions[i];
      a += (sc_.pose_cs[i] - a) * alpha;
    }
  }
  ApplyToPose(engine, s, steps > 0 && alpha == 1.0f);
}

}  // namespace spring_internal
}  // namespace posewire
