#include "bench/spring_scene.h"

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace posewire {
namespace {

template <typename T>
T OrDie(absl::StatusOr<T> value) {
  if (!value.ok()) {
    std::cerr << "spring scene setup failed: " << value.status() << "\n";
    std::exit(1);
  }
  return *std::move(value);
}

}  // namespace

SpringScene MakeSpringScene(SimulationSpace space, int chains,
                            float limit_angle_degrees) {
  // "body" at the origin; each chain root on a circle of radius 10 at
  // shoulder height, bones of 4 units hanging down and slightly out.
  SkeletonDesc d;
  d.joint_names.push_back("body");
  d.parents.push_back(kNoParent);
  d.rest_pose.push_back(Transform::Identity());
  std::vector<std::string> roots;
  for (int c = 0; c < chains; ++c) {
    const float angle = 2.0f * 3.14159265f * c / chains;
    const Eigen::Vector3f out(std::cos(angle), 0.0f, std::sin(angle));
    for (int b = 0; b <= kSpringSceneBonesPerChain; ++b) {
      const std::string name = absl::StrCat("hair", c, "_", b);
      if (b == 0) roots.push_back(name);
      d.joint_names.push_back(name);
      d.parents.push_back(b == 0 ? 0 : static_cast<int>(d.parents.size()) - 1);
      Transform t;
      if (b == 0) {
        t.translation = out * 10.0f + Eigen::Vector3f(0, 30, 0);
      } else {
        t.translation = out * 0.8f + Eigen::Vector3f(0, -4, 0);
      }
      d.rest_pose.push_back(t);
    }
  }
  SpringScene s;
  s.skeleton = OrDie(Skeleton::Create(std::move(d)));
  SpringRigDesc desc;
  desc.root_joints = roots;
  desc.space = space;
  desc.settings.radius = 1.0f;
  desc.settings.limit_angle_degrees = limit_angle_degrees;
  s.rig = OrDie(SpringRig::Create(s.skeleton, desc));
  s.input = RestPose(s.skeleton);
  s.output.resize(s.skeleton.num_joints());

  SpringCollider body;  // sphere
  body.offset.translation = Eigen::Vector3f(0, 20, 0);
  body.radius = 9.0f;
  SpringCollider hips;
  hips.shape = ColliderShape::kCapsule;
  hips.offset.translation = Eigen::Vector3f(0, 8, 0);
  hips.axis = Eigen::Vector3f::UnitX();
  hips.radius = 6.0f;
  hips.length = 10.0f;
  SpringCollider pack;
  pack.shape = ColliderShape::kBox;
  pack.attachment = ColliderAttachment::kBone;
  pack.bone = 0;
  pack.offset.translation = Eigen::Vector3f(0, 20, -10);
  pack.half_extents = Eigen::Vector3f(6, 8, 3);
  SpringCollider floor;
  floor.shape = ColliderShape::kPlane;
  floor.attachment = ColliderAttachment::kWorld;
  floor.axis = Eigen::Vector3f::UnitY();
  s.colliders = {body, hips, pack, floor};
  s.forces.gravity = Eigen::Vector3f(0, -980, 0);
  return s;
}

SpringBonesJob SceneJob(SpringScene& scene, DynamicsState& state,
                        SpringBonesScratch& scratch, float dt) {
  SpringBonesJob job;
  job.skeleton = &scene.skeleton;
  job.rig = &scene.rig;
  job.input = scene.input;
  job.dt = dt;
  job.forces = scene.forces;
  job.colliders = scene.colliders;
  job.state_in = &state;
  job.scratch = &scratch;
  job.output = absl::MakeSpan(scene.output);
  job.state_out = &state;
  return job;
}

}  // namespace posewire
