// One spring-bone solve (SpringBonesJob::Run): the scalar part of every
// fixed step (teleports, colliders, forces, substepping) in Solver, the lane
// work behind the LaneEngine interface (spring_lane_engine.cc), and the
// buffers a solve reuses (SpringBonesScratch holds them).
#ifndef POSEWIRE_SOLVER_CORE_DYNAMICS_INTERNAL_SPRING_SOLVER_H_
#define POSEWIRE_SOLVER_CORE_DYNAMICS_INTERNAL_SPRING_SOLVER_H_

#include <Eigen/Core>
#include <Eigen/Geometry>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "solver_core/dynamics/dynamics_state.h"
#include "solver_core/dynamics/internal/spring_collider_lanes.h"
#include "solver_core/dynamics/internal/spring_lane_layout.h"
#include "solver_core/dynamics/spring_bones.h"
#include "solver_core/dynamics/spring_colliders.h"
#include "solver_core/model/transform.h"

namespace posewire {

// What SpringBonesScratch keeps between solves, so a steady stream of
// solves does not allocate. Holds no meaning between calls.
struct SpringSolveBuffers {
  std::vector<Transform> model;
  std::vector<Eigen::Vector3f> pose_cs;
  std::vector<Eigen::Vector3f> step_pose;
  std::vector<Eigen::Quaternionf> rotations;
  std::vector<uint8_t> rotated;
  std::vector<PlacedCollider> colliders;
  std::vector<LaneCollider> lane_colliders;
  std::vector<float> gusts;
  // The simulation in lanes, at the width the solve runs (see
  // SpringLaneBuffers).
  SpringLaneBuffers<lanes::kWidth> lanes;
  SpringLaneBuffers<kSpringWideLanes> wide_lanes;
};

namespace spring_internal {

// One fixed step's inputs besides the state, in simulation space: the
// scalar part of the step, computed once and broadcast to the lanes.
struct StepInputs {
  // The animated target positions of the particles at this step.
  const std::vector<Eigen::Vector3f>* pose = nullptr;
  // UpdateMovement (component space only): the component's translation and
  // turn in this step, seen from its new placement.
  bool follow = false;
  Eigen::Vector3f move = Eigen::Vector3f::Zero();
  Eigen::Matrix3f turn = Eigen::Matrix3f::Identity();
  // Gravity and the external force, as a displacement per step.
  Eigen::Vector3f constant_step = Eigen::Vector3f::Zero();
  bool windy = false;
  Eigen::Vector3f wind_step = Eigen::Vector3f::Zero();
};

// The lane work of a solve, at one width (Engine in spring_bone_lanes.inc).
// Virtual: the solve picks the width once; a handful of calls per frame.
class LaneEngine {
 public:
  virtual ~LaneEngine() = default;
  // The state's positions into the lanes, and back.
  virtual void Load(const DynamicsState& s) = 0;
  virtual void Store(DynamicsState& s) = 0;
  // UpdatePose, the constraints and the colliders of one fixed step.
  virtual void Step(const StepInputs& in) = 0;
  // The output rotations (scratch rotated cleared, output holding the
  // input). `landed_on_frame`: the state's last step used this
  // frame's pose.
  virtual void Apply(const DynamicsState& s, bool landed_on_frame) = 0;
};

// One solve. Holds references to the job's data; all state lives in the
// DynamicsState it is given. The lane work goes to a LaneEngine.
class Solver {
 public:
  Solver(const SpringBonesJob& job, SpringSolveBuffers& buffers)
      : job_(job),
        rig_(*job.rig),
        desc_(job.rig->desc()),
        particles_(job.rig->particles()),
        world_(job.rig->desc().space == SimulationSpace::kWorld),
        component_(job.component_to_world),
        sc_(buffers) {}

  // Everything before the steps: the animated pose, the state (`initialize`:
  // start from the pose whatever `s` holds, else handle a teleport) and the
  // colliders.
  void Prepare(bool initialize, DynamicsState& s, SpringBonesResult& report);
  // The fixed steps and the output pose, the lane work done by `engine`.
  void Simulate(LaneEngine& engine, DynamicsState& s,
                SpringBonesResult& report);

 private:
  void ComputeAnimatedPose();
  Eigen::Vector3f ToSim(const Eigen::Vector3f& p_cs,
                        const Transform& component) const {
    return world_ ? component.TransformPoint(p_cs) : p_cs;
  }
  void Initialize(DynamicsState& s) const;
  // Returns the component transform the frame's motion starts from.
  Transform HandleTeleport(DynamicsState& s, SpringBonesResult& report) const;
  void PlaceColliders();
  void Step(LaneEngine& engine, DynamicsState& s, const Transform& from,
            const Transform& to, float alpha);
  // `landed_on_frame`: the state's last step used this frame's pose.
  void ApplyToPose(LaneEngine& engine, const DynamicsState& s,
                   bool landed_on_frame);

  const SpringBonesJob& job_;
  const SpringRig& rig_;
  const SpringRigDesc& desc_;
  absl::Span<const SpringParticle> particles_;
  const bool world_;
  const Transform& component_;
  SpringSolveBuffers& sc_;
  // Where this frame's motion starts (set by Prepare).
  Transform from_;
};

// Simulate with the lane engine of the width the solve uses: eight lanes
// when the layout prefers them and ActiveSimdLevel() is kAvx2, else four
// (spring_lane_engine.cc). Both give the same bits.
void SimulateInLanes(const SpringBonesJob& job, const SpringLaneLayout& layout,
                     SpringSolveBuffers& buffers, Solver& solver,
                     DynamicsState& s, SpringBonesResult& report);

}  // namespace spring_internal
}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_DYNAMICS_INTERNAL_SPRING_SOLVER_H_
