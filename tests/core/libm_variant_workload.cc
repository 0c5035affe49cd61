// A fixed workload over the solvers whose results went through libm's sin,
// cos and pow, printing one hash of every output bit. libm_variant_test.sh
// runs it once as is and once with glibc's FMA/AVX2 variants switched off
// (GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2,-FMA,-FMA4) and requires the same
// hash: results must not depend on which libm variant the machine picks.
//
// Inputs come from a fixed linear congruential generator (not <random>,
// whose distributions may differ between standard libraries) and from the
// CMU walk in tests/data, so the hash is a function of the solvers alone.
#include <Eigen/Geometry>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "solver_core/analytic_ik/aim_ik.h"
#include "solver_core/analytic_ik/two_bone_ik.h"
#include "solver_core/chain_ik/ccd_ik.h"
#include "solver_core/chain_ik/joint_limits.h"
#include "solver_core/dynamics/dynamics_state.h"
#include "solver_core/dynamics/spring_bones.h"
#include "solver_core/io/asset.h"
#include "solver_core/io/bvh_reader.h"
#include "solver_core/io/bvh_writer.h"
#include "solver_core/model/clip.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/skeleton.h"
#include "solver_core/pose_ops/sampling_job.h"
#include "tests/core/hanging_chain.h"

namespace posewire {
namespace {

class Hasher {
 public:
  void Add(const void* data, size_t size) {
    const unsigned char* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < size; ++i) {
      h_ = (h_ ^ p[i]) * 1099511628211ull;
    }
  }
  void Add(float f) { Add(&f, sizeof f); }
  void Add(const Eigen::Vector3f& v) { Add(v.data(), 3 * sizeof(float)); }
  void Add(const Eigen::Quaternionf& q) {
    Add(q.coeffs().data(), 4 * sizeof(float));
  }
  void Add(absl::Span<const Transform> pose) {
    for (const Transform& t : pose) {
      Add(t.translation);
      Add(t.rotation);
      Add(t.scale);
    }
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 1469598103934665603ull;
};

// Numerical Recipes' LCG; floats from the top 24 bits, exact.
class Lcg {
 public:
  float Uniform(float lo, float hi) {
    s_ = s_ * 6364136223846793005ull + 1442695040888963407ull;
    const float u = static_cast<float>(s_ >> 40) * 0x1p-24f;
    return lo + (hi - lo) * u;
  }
  Eigen::Vector3f Vector(float r) {
    const float x = Uniform(-r, r);
    const float y = Uniform(-r, r);
    const float z = Uniform(-r, r);
    return Eigen::Vector3f(x, y, z);
  }
  Eigen::Quaternionf Rotation() {
    Eigen::Vector4f v;
    for (int i = 0; i < 4; ++i) v[i] = Uniform(-1.0f, 1.0f);
    if (v.squaredNorm() < 1e-4f) v = Eigen::Vector4f(0, 0, 0, 1);
    return Eigen::Quaternionf(v.normalized());
  }

 private:
  uint64_t s_ = 0x9E3779B97F4A7C15ull;
};

int failures = 0;

void Check(const absl::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, std::string(s.message()).c_str());
    ++failures;
  }
}

std::vector<Transform> ModelPose(const Skeleton& skeleton,
                                 absl::Span<const Transform> local) {
  std::vector<Transform> model(local.size());
  Check(LocalToModelJob{.skeleton = &skeleton,
                        .input = local,
                        .output = absl::MakeSpan(model)}
            .Run(),
        "local to model");
  return model;
}

// BVH read (Euler channels) and slerp sampling of the clip.
void SampleClip(const ImportedAsset& asset, Hasher* h) {
  const Clip& clip = asset.clips.front();
  std::vector<Transform> out(asset.skeleton.num_joints());
  for (int i = 0; i < 200; ++i) {
    SamplingJob job;
    job.skeleton = &asset.skeleton;
    job.clip = &clip;
    job.time = clip.duration * static_cast<float>(i) / 199.0f * 1.37f;
    job.rotation_interpolation = RotationInterpolation::kSlerp;
    job.output = absl::MakeSpan(out);
    Check(job.Run(), "sampling");
    h->Add(out);
  }
}

// BVH export of the clip's sampled frames with random extra turns: the
// writer's Euler decomposition (double atan2) and its text.
void WriteClip(const ImportedAsset& asset, Lcg* rng, Hasher* h) {
  const Clip& clip = asset.clips.front();
  std::vector<LocalPose> frames;
  for (int i = 0; i < 60; ++i) {
    LocalPose pose(asset.skeleton.num_joints());
    SamplingJob job;
    job.skeleton = &asset.skeleton;
    job.clip = &clip;
    job.time = clip.duration * static_cast<float>(i) / 59.0f;
    job.output = absl::MakeSpan(pose);
    Check(job.Run(), "sampling for bvh write");
    for (Transform& t : pose) t.rotation = (rng->Rotation() * t.rotation);
    for (Transform& t : pose) t.rotation.normalize();
    frames.push_back(std::move(pose));
  }
  absl::StatusOr<std::string> text = WriteBvh(asset.skeleton, frames);
  Check(text.status(), "bvh write");
  if (text.ok()) h->Add(text->data(), text->size());
}

void JointLimits(Lcg* rng, Hasher* h) {
  const EulerOrder orders[] = {EulerOrder::kXYZ, EulerOrder::kXZY,
                               EulerOrder::kYXZ, EulerOrder::kYZX,
                               EulerOrder::kZXY, EulerOrder::kZYX};
  for (int i = 0; i < 3000; ++i) {
    const Eigen::Quaternionf q = rng->Rotation();
    const EulerOrder order = orders[i % 6];
    const Eigen::Vector3f lo(rng->Uniform(-2.5f, -0.1f),
                             rng->Uniform(-1.2f, -0.1f),
                             rng->Uniform(-2.5f, -0.1f));
    const Eigen::Vector3f hi(rng->Uniform(0.1f, 2.5f), rng->Uniform(0.1f, 1.2f),
                             rng->Uniform(0.1f, 2.5f));
    h->Add(FromEuler(rng->Vector(20.0f), order));
    h->Add(ApplyJointLimit(EulerLimit(order, lo, hi), q));
    const Eigen::Vector3f axis = rng->Vector(1.0f).normalized();
    const JointLimit swing =
        SwingTwistLimit(axis, rng->Uniform(0.1f, 2.0f),
                        rng->Uniform(-2.0f, -0.05f), rng->Uniform(0.05f, 2.0f));
    h->Add(ApplyJointLimit(swing, q));
    const LimitNudge nudge;
    h->Add(ApplyJointLimit(swing, q, &nudge));
    const JointLimit hinge = HingeLimit(axis, rng->Uniform(-2.5f, -0.05f),
                                        rng->Uniform(0.05f, 2.5f));
    h->Add(ApplyJointLimit(hinge, q));
    h->Add(AimWithinJointLimit(swing, q, rng->Vector(1.0f), rng->Vector(1.0f)));
    h->Add(ClampSignedAngle(
        rng->Vector(1.0f), rng->Vector(1.0f), axis,
        SignedAngleRange{rng->Uniform(-2.0f, 0.0f), rng->Uniform(0.0f, 2.0f)}));
  }
}

// Euler angles of several turns (clients may send any). glibc 2.36's sinf
// and cosf round differently between variants for 17 floats in [16, 128),
// all next to odd multiples of pi/2 where the cosine or sine is tiny; the
// first list is those half angles, found by sweeping every float there
// with both variants. FromEuler halves each angle exactly, so twice them
// reach exactly those arguments. Random angles follow, for the rest.
void LargeEulerAngles(Lcg* rng, Hasher* h) {
  const float half_angles[] = {0x1.1475b6p+4f, 0x1.1475b8p+4f, 0x1.1475bap+4f,
                               0x1.1475bcp+4f, 0x1.78edb2p+4f, 0x1.05d696p+5f,
                               0x1.ab6152p+5f, 0x1.d0f4aap+5f, 0x1.019c50p+6f,
                               0x1.0e1c80p+6f, 0x1.46b80ep+6f, 0x1.46ba88p+6f,
                               0x1.52e6c0p+6f, 0x1.8abf54p+6f, 0x1.9eb0a8p+6f,
                               0x1.b1a47cp+6f, 0x1.d0f4aap+6f};
  for (float half : half_angles) {
    for (int k = 0; k < 3; ++k) {
      Eigen::Vector3f angles(0.3f, -0.2f, 0.1f);
      angles[k] = 2.0f * half;
      h->Add(FromEuler(angles, EulerOrder::kXYZ));
    }
  }
  for (int i = 0; i < 100000; ++i) {
    const EulerOrder order = static_cast<EulerOrder>(i % 6);
    h->Add(FromEuler(rng->Vector(250.0f), order));
  }
}

void AnalyticIk(const ImportedAsset& asset, Lcg* rng, Hasher* h) {
  const Skeleton& sk = asset.skeleton;
  std::vector<Transform> local(sk.rest_pose().begin(), sk.rest_pose().end());
  const std::vector<Transform> model = ModelPose(sk, local);
  std::vector<Transform> out(local.size());
  const int hip = sk.FindJoint("LeftHip");
  const int knee = sk.FindJoint("LeftKnee");
  const int ankle = sk.FindJoint("LeftAnkle");
  const int head = sk.FindJoint("Head");
  const Eigen::Vector3f hip_pos = model[hip].translation;
  for (int i = 0; i < 1500; ++i) {
    TwoBoneIkJob job;
    job.skeleton = &sk;
    job.input = local;
    job.parent_model = model[sk.parent(hip)];
    job.start_joint = hip;
    job.mid_joint = knee;
    job.end_joint = ankle;
    job.target = hip_pos + rng->Vector(20.0f);
    job.pole_vector = rng->Vector(1.0f);
    job.twist_angle = rng->Uniform(-3.0f, 3.0f);
    job.soften = rng->Uniform(0.8f, 1.0f);
    job.weight = rng->Uniform(0.2f, 1.0f);
    if (i % 3 == 0) job.end_rotation = rng->Rotation();
    job.end_rotation_weight = rng->Uniform(0.0f, 1.0f);
    job.output = absl::MakeSpan(out);
    Check(job.Run(), "two-bone");
    h->Add(out);
  }
  for (int i = 0; i < 1500; ++i) {
    AimIkJob job;
    job.skeleton = &sk;
    job.input = local;
    job.parent_model = model[sk.parent(head)];
    job.joint = head;
    job.target = model[head].translation + rng->Vector(50.0f);
    job.pole_vector = rng->Vector(1.0f);
    job.offset = rng->Vector(2.0f);
    job.twist_angle = rng->Uniform(-3.0f, 3.0f);
    job.weight = rng->Uniform(0.2f, 1.0f);
    job.clamp_weight = i % 2 == 0 ? rng->Uniform(0.0f, 1.0f) : 0.0f;
    job.clamp_smoothing = i % 3;
    job.output = absl::MakeSpan(out);
    Check(job.Run(), "aim");
    h->Add(out);
  }
}

void Ccd(const ImportedAsset& asset, Lcg* rng, Hasher* h) {
  const Skeleton& sk = asset.skeleton;
  std::vector<Transform> local(sk.rest_pose().begin(), sk.rest_pose().end());
  const std::vector<Transform> model = ModelPose(sk, local);
  const std::vector<int> chain = {
      sk.FindJoint("RightCollar"), sk.FindJoint("RightShoulder"),
      sk.FindJoint("RightElbow"), sk.FindJoint("RightWrist")};
  std::vector<JointLimit> limits(sk.num_joints());
  limits[chain[1]] =
      SwingTwistLimit(Eigen::Vector3f::UnitX(), 1.5f, -1.0f, 1.0f);
  limits[chain[2]] = HingeLimit(Eigen::Vector3f::UnitZ(), -2.5f, 0.0f);
  limits[chain[3]] = EulerLimit(EulerOrder::kZYX, Eigen::Vector3f(-1, -0.5, -1),
                                Eigen::Vector3f(1, 0.5, 1));
  const std::vector<float> weights = {0.3f, 0.8f, 1.0f, 0.6f};
  std::vector<Transform> out(local.size());
  for (int i = 0; i < 300; ++i) {
    CcdIkJob job;
    job.skeleton = &sk;
    job.input = local;
    job.chain = chain;
    job.target = model[chain[0]].translation + rng->Vector(25.0f);
    job.max_iterations = 15;
    job.weight = rng->Uniform(0.5f, 1.0f);
    job.joint_weights = weights;
    job.max_step_angle = i % 2 == 0 ? rng->Uniform(0.05f, 0.5f) : 0.0f;
    job.limits = limits;
    job.hinge_fallback = i % 4 == 1;
    job.nudge = i % 3 == 2;
    job.output = absl::MakeSpan(out);
    IkResult result;
    job.result = &result;
    Check(job.Run(), "ccd");
    h->Add(out);
    h->Add(result.error);
  }
}

// A rig at 90 Hz (pow(1 - damping, 60 / 90) per particle, damping and
// stiffness varied along each chain by curves), angle limits (cos, sin of
// the limit) and colliders that the arc search (cos, sin) slides along.
void SpringBones(Lcg* rng, Hasher* h) {
  constexpr int kChains = 8;
  constexpr int kBones = 8;
  SkeletonDesc d;
  d.joint_names.push_back("body");
  d.parents.push_back(kNoParent);
  d.rest_pose.push_back(Transform::Identity());
  std::vector<std::string> roots;
  for (int c = 0; c < kChains; ++c) {
    const Eigen::Vector3f out =
        Eigen::Vector3f(rng->Uniform(-1, 1), 0.0f, rng->Uniform(-1, 1))
            .normalized();
    AddHangingChain(d, out, absl::StrCat("hair", c), kBones, roots);
  }
  absl::StatusOr<Skeleton> skeleton = Skeleton::Create(std::move(d));
  Check(skeleton.status(), "spring skeleton");
  if (!skeleton.ok()) return;
  SpringRigDesc desc;
  desc.root_joints = roots;
  desc.target_rate_hz = 90.0f;
  desc.settings.radius = 1.0f;
  desc.settings.damping = 0.137f;
  desc.settings.stiffness = 0.0731f;
  desc.settings.limit_angle_degrees = 47.3f;
  for (int k = 0; k <= 6; ++k) {
    const float p = static_cast<float>(k) / 6.0f;
    desc.curves.damping.push_back({p, rng->Uniform(0.3f, 1.7f)});
    desc.curves.stiffness.push_back({p, rng->Uniform(0.3f, 1.7f)});
    desc.curves.limit_angle.push_back({p, rng->Uniform(0.3f, 1.7f)});
  }
  absl::StatusOr<SpringRig> rig = SpringRig::Create(*skeleton, desc);
  Check(rig.status(), "spring rig");
  if (!rig.ok()) return;
  SpringCollider body;
  body.offset.translation = Eigen::Vector3f(0, 20, 0);
  body.radius = 9.0f;
  SpringCollider hips;
  hips.shape = ColliderShape::kCapsule;
  hips.offset.translation = Eigen::Vector3f(0, 8, 0);
  hips.axis = Eigen::Vector3f::UnitX();
  hips.radius = 6.0f;
  hips.length = 10.0f;
  const std::vector<SpringCollider> colliders = {body, hips};
  LocalPose input = RestPose(*skeleton);
  std::vector<Transform> output(input.size());
  DynamicsState state;
  SpringBonesScratch scratch;
  SpringBonesJob job;
  job.skeleton = &*skeleton;
  job.rig = &*rig;
  job.forces.gravity = Eigen::Vector3f(0, -980, 0);
  job.forces.wind.direction = Eigen::Vector3f(1, 0, 0.3f).normalized();
  job.forces.wind.speed = 300.0f;
  job.forces.wind.noise_amplitude = 0.5f;
  job.forces.wind.noise_frequency_hz = 1.7f;
  job.forces.wind.noise_seed = 7;
  job.colliders = colliders;
  job.state_in = &state;
  job.scratch = &scratch;
  job.output = absl::MakeSpan(output);
  job.state_out = &state;
  for (int frame = 0; frame < 240; ++frame) {
    const float t = static_cast<float>(frame) / 60.0f;
    input[0].translation = Eigen::Vector3f(rng->Uniform(-3, 3) + 20.0f * t,
                                           rng->Uniform(-1, 1), 0.0f);
    input[0].rotation = Eigen::Quaternionf(
        Eigen::Vector4f(0.0f, rng->Uniform(-0.2f, 0.2f), 0.0f, 1.0f)
            .normalized());
    job.input = input;
    job.dt = 1.0f / 60.0f;
    Check(job.Run(), "spring bones");
    h->Add(output);
  }
}

int Main(int argc, char** argv) {
  const std::string path =
      argc > 1 ? argv[1]
               : std::string(POSEWIRE_TEST_DATA_DIR) + "/cmu_131_01_walk.bvh";
  absl::StatusOr<ImportedAsset> asset = ReadBvhFile(path);
  Check(asset.status(), "read bvh");
  if (!asset.ok() || asset->clips.empty()) return 1;
  Lcg rng;
  Hasher all;
  struct Part {
    const char* name;
    Hasher h;
  };
  Part parts[8] = {{"bvh", {}},         {"sampling", {}}, {"joint_limits", {}},
                   {"analytic_ik", {}}, {"ccd", {}},      {"spring", {}},
                   {"euler_large", {}}, {"bvh_write", {}}};
  parts[0].h.Add(asset->skeleton.rest_pose());
  for (const JointTracks& tracks : asset->clips.front().tracks) {
    for (const Eigen::Quaternionf& q : tracks.rotation.values) {
      parts[0].h.Add(q);
    }
  }
  SampleClip(*asset, &parts[1].h);
  JointLimits(&rng, &parts[2].h);
  AnalyticIk(*asset, &rng, &parts[3].h);
  Ccd(*asset, &rng, &parts[4].h);
  SpringBones(&rng, &parts[5].h);
  LargeEulerAngles(&rng, &parts[6].h);
  WriteClip(*asset, &rng, &parts[7].h);
  for (const Part& p : parts) {
    const uint64_t v = p.h.value();
    std::printf("%-12s %016" PRIx64 "\n", p.name, v);
    all.Add(&v, sizeof v);
  }
  std::printf("all          %016" PRIx64 "\n", all.value());
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace posewire

int main(int argc, char** argv) { return posewire::Main(argc, argv); }
