// Ray casts and sphere overlaps against hitboxes, checked against an
// independent reference: signed distance functions in double precision,
// with rays marched by sphere tracing (each step the distance to the
// nearest surface, which never crosses one), on synthetic frames and on
// the CMU walk with 15 capsules on its limbs.
#include "solver_core/referee/hitboxes.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "solver_core/io/bvh_reader.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/pose_ops/sampling_job.h"

namespace posewire {
namespace hitboxes_test {

using Vec = Eigen::Vector3d;

// A hitbox's frame in model space, in double: the joint's model transform
// composed with the offset (translation scaled by the joint's scale).
struct RefFrame {
  Vec center;
  Eigen::Quaterniond rotation;
};

RefFrame Frame(const Transform& joint, const Hitbox& h) {
  const Eigen::Quaterniond jr = joint.rotation.cast<double>();
  const Vec offset = joint.scale.cast<double>().cwiseProduct(
      h.offset_translation.cast<double>());
  return {joint.translation.cast<double>() + jr * offset,
          jr * h.offset_rotation.cast<double>()};
}

// Signed distance from q to the hitbox (negative inside).
double Sdf(const Vec& q, const RefFrame& f, const Hitbox& h) {
  const Vec local = f.rotation.conjugate() * (q - f.center);
  switch (h.shape) {
    case HitboxShape::kSphere:
      return local.norm() - h.radius;
    case HitboxShape::kCapsule: {
      const double y =
          std::clamp(local.y(), -double{h.half_height}, double{h.half_height});
      return (local - Vec(0, y, 0)).norm() - h.radius;
    }
    case HitboxShape::kBox: {
      const Vec d = local.cwiseAbs() - h.half_extents.cast<double>();
      return d.cwiseMax(0.0).norm() + std::min(d.maxCoeff(), 0.0);
    }
  }
  return 0;
}

struct RefHit {
  bool hit = false;
  bool grazing = false;  // too close to call: skipped by the comparisons
  int hitbox = -1;
  double t = 0;
};

// Sphere tracing from the origin along unit d, up to max_t.
RefHit RefRay(const std::vector<RefFrame>& frames,
              const std::vector<Hitbox>& boxes, const Vec& o, const Vec& d,
              double max_t) {
  auto nearest = [&](const Vec& q, int* which) {
    double best = INFINITY;
    for (size_t i = 0; i < boxes.size(); ++i) {
      const double s = Sdf(q, frames[i], boxes[i]);
      if (s < best) {
        best = s;
        *which = static_cast<int>(i);
      }
    }
    return best;
  };
  RefHit out;
  double t = 0;
  for (int step = 0; step < 20000; ++step) {
    int which = -1;
    const double s = nearest(o + d * t, &which);
    if (s < 1e-9) {
      out.hit = true;
      out.hitbox = which;
      out.t = t;
      return out;
    }
    // A ray that creeps along a surface (it passes within 1e-3 of one
    // without touching, or touches it at a glancing angle) is not a case a
    // float test and this one can be expected to call the same way.
    if (s < 1e-3 && step > 200) {
      out.grazing = true;
      return out;
    }
    t += s;
    if (t > max_t) return out;
  }
  out.grazing = true;
  return out;
}

Vec RandomUnit(std::mt19937& rng) {
  std::normal_distribution<double> n(0, 1);
  const double x = n(rng);
  const double y = n(rng);
  const double z = n(rng);
  return Vec(x, y, z).normalized();
}

// A root and one child joint, the child rotated, translated and scaled so
// that hitbox frames exercise the whole composition.
Skeleton TwoJoints() {
  SkeletonDesc desc;
  desc.joint_names = {"root", "child"};
  desc.parents = {-1, 0};
  Transform root;
  Transform child;
  child.translation = Eigen::Vector3f(0.3f, 1.0f, -0.2f);
  child.rotation = Eigen::Quaternionf(
      Eigen::AngleAxisf(0.7f, Eigen::Vector3f(1, 2, 3).normalized()));
  child.scale = Eigen::Vector3f(1.2f, 1.2f, 1.2f);
  desc.rest_pose = {root, child};
  return *Skeleton::Create(std::move(desc));
}

std::vector<Transform> ModelPose(const Skeleton& skeleton,
                                 absl::Span<const Transform> local) {
  std::vector<Transform> model(skeleton.num_joints());
  const LocalToModelJob job{
      .skeleton = &skeleton, .input = local, .output = absl::MakeSpan(model)};
  EXPECT_TRUE(job.Run().ok());
  return model;
}

Hitbox MakeHitbox(HitboxShape shape, int joint) {
  Hitbox h;
  h.joint = joint;
  h.shape = shape;
  h.offset_translation = Eigen::Vector3f(0.1f, 0.4f, 0.05f);
  h.offset_rotation = Eigen::Quaternionf(
      Eigen::AngleAxisf(0.5f, Eigen::Vector3f(-1, 0.5f, 2).normalized()));
  h.radius = 0.3f;
  h.half_height = 0.45f;
  h.half_extents = Eigen::Vector3f(0.25f, 0.5f, 0.15f);
  return h;
}

// Casts `rays` random rays at the hitboxes (from points around `aim`,
// toward points near it) and compares each answer with the reference: hit
// or miss, distance and point within 1e-5 of the scene's scale, the
// hitbox's surface through that point, the normal within 1e-3 of the
// distance function's gradient. Returns how many hit.
int CompareRays(const Skeleton& skeleton, const std::vector<Transform>& model,
                const std::vector<Hitbox>& boxes, const Vec& aim, double spread,
                int rays, uint32_t seed) {
  std::vector<RefFrame> frames;
  for (const Hitbox& h : boxes) frames.push_back(Frame(model[h.joint], h));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  int hits = 0;
  int compared = 0;
  for (int r = 0; r < rays; ++r) {
    // One draw per statement: the order of a call's operands is the
    // compiler's, and the rays must be the same under GCC and clang.
    const Vec from_dir = RandomUnit(rng);
    const double from_scale = spread * (2 + 2 * u(rng));
    const Vec toward_dir = RandomUnit(rng);
    const double toward_scale = spread * u(rng);
    const Vec from = aim + from_dir * from_scale;
    const Vec toward = aim + toward_dir * toward_scale;
    const Eigen::Vector3f origin = from.cast<float>();
    const Eigen::Vector3f direction = (toward - from).cast<float>();
    // The reference follows the float ray exactly.
    const Vec o = origin.cast<double>();
    const Vec d = direction.cast<double>().normalized();
    const RefHit want = RefRay(frames, boxes, o, d, 1e9);
    if (want.grazing) continue;
    RayHit got;
    const RayCastJob job{.skeleton = &skeleton,
                         .hitboxes = boxes,
                         .model_pose = model,
                         .origin = origin,
                         .direction = direction,
                         .hit = &got};
    EXPECT_TRUE(job.Run().ok());
    ++compared;
    EXPECT_EQ(got.hitbox >= 0, want.hit) << "ray " << r;
    if (!want.hit || got.hitbox < 0) continue;
    ++hits;
    const double tolerance = 1e-5 * std::max(1.0, spread);
    EXPECT_NEAR(got.distance, want.t, tolerance) << "ray " << r;
    // The hitbox: the reference's, or one whose surface passes through the
    // same point (overlapping capsules at a joint enter together).
    if (got.hitbox != want.hitbox) {
      EXPECT_LT(
          std::abs(Sdf(o + d * want.t, frames[got.hitbox], boxes[got.hitbox])),
          tolerance)
          << "ray " << r << ": hitbox " << got.hitbox << ", reference "
          << want.hitbox;
    }
    EXPECT_LT((got.point.cast<double>() - (o + d * want.t)).norm(),
              2 * tolerance)
        << "ray " << r;
    EXPECT_EQ(got.joint, boxes[got.hitbox].joint);
    // The normal: the SDF's gradient at the hit, by central differences.
    const Vec p = o + d * want.t;
    Vec grad;
    for (int k = 0; k < 3; ++k) {
      Vec e = Vec::Zero();
      e[k] = 1e-6;
      grad[k] = Sdf(p + e, frames[got.hitbox], boxes[got.hitbox]) -
                Sdf(p - e, frames[got.hitbox], boxes[got.hitbox]);
    }
    // On a box's edge or corner the normal is any blend of the faces'; the
    // distance function's gradient there is shorter than 1, and is skipped.
    if (grad.norm() / 2e-6 < 0.999) continue;
    EXPECT_LT((got.normal.cast<double>() - grad.normalized()).norm(), 1e-3)
        << "ray " << r << " normal " << got.normal.transpose() << " want "
        << grad.normalized().transpose();
    EXPECT_NEAR(got.normal.norm(), 1.0f, 1e-5f);
  }
  EXPECT_GT(compared, rays * 9 / 10);
  return hits;
}

TEST(Hitboxes, RaysMatchTheReferenceForEachShape) {
  const Skeleton skeleton = TwoJoints();
  const std::vector<Transform> model =
      ModelPose(skeleton, skeleton.rest_pose());
  for (HitboxShape shape :
       {HitboxShape::kSphere, HitboxShape::kCapsule, HitboxShape::kBox}) {
    const std::vector<Hitbox> boxes = {MakeHitbox(shape, 1)};
    const Vec aim = Frame(model[1], boxes[0]).center;
    const int hits = CompareRays(skeleton, model, boxes, aim, 1.0, 2000,
                                 17 + static_cast<int>(shape));
    // Rays aimed within a unit of the centre: a good share hit, some miss.
    EXPECT_GT(hits, 300) << static_cast<int>(shape);
    EXPECT_LT(hits, 1900) << static_cast<int>(shape);
  }
}

// 15 capsules on the CMU walk's limbs, spine and head, at a frame of the
// walk: the nearest of many hitboxes, against the reference.
// The CMU walk at 2 s with a capsule along each of 15 bones, from the
// joint to its child.
struct WalkScene {
  ImportedAsset asset;
  std::vector<Transform> model;
  std::vector<Hitbox> boxes;
};

void MakeWalkScene(WalkScene* scene) {
  auto asset =
      ReadBvhFile(std::string(POSEWIRE_TEST_DATA_DIR) + "/cmu_131_01_walk.bvh");
  ASSERT_TRUE(asset.ok()) << asset.status();
  scene->asset = *std::move(asset);
  const Skeleton& skeleton = scene->asset.skeleton;
  std::vector<Transform> local(skeleton.num_joints());
  const SamplingJob sample{.skeleton = &skeleton,
                           .clip = &scene->asset.clips[0],
                           .time = 2.0f,
                           .output = absl::MakeSpan(local)};
  ASSERT_TRUE(sample.Run().ok());
  scene->model = ModelPose(skeleton, local);
  const std::vector<Transform>& model = scene->model;
  std::vector<Hitbox>& boxes = scene->boxes;
  const std::pair<const char*, const char*> bones[] = {
      {"LeftHip", "LeftKnee"},
      {"LeftKnee", "LeftAnkle"},
      {"RightHip", "RightKnee"},
      {"RightKnee", "RightAnkle"},
      {"LeftShoulder", "LeftElbow"},
      {"LeftElbow", "LeftWrist"},
      {"RightShoulder", "RightElbow"},
      {"RightElbow", "RightWrist"},
      {"Hips", "lowerback"},
      {"lowerback", "Chest"},
      {"Chest", "Chest2"},
      {"Chest2", "lowerneck"},
      {"Neck", "Head"},
      {"LeftCollar", "LeftShoulder"},
      {"RightCollar", "RightShoulder"}};
  for (const auto& [from, to] : bones) {
    const int a = skeleton.FindJoint(from);
    const int b = skeleton.FindJoint(to);
    ASSERT_GE(a, 0) << from;
    ASSERT_GE(b, 0) << to;
    const Eigen::Vector3f bone = local[b].translation;  // in a's frame
    Hitbox h;
    h.joint = a;
    h.shape = HitboxShape::kCapsule;
    h.offset_translation = bone * 0.5f;
    // A bone of no length (some CMU joints sit on their parent) keeps the
    // joint's own axes.
    if (bone.norm() > 1e-3f) {
      h.offset_rotation =
          Eigen::Quaternionf::FromTwoVectors(Eigen::Vector3f::UnitY(), bone);
    }
    h.half_height = 0.5f * bone.norm() * model[a].scale.x();
    h.radius = 1.2f;
    boxes.push_back(h);
  }
  ASSERT_EQ(boxes.size(), 15u);
  ASSERT_TRUE(ValidateHitboxes(skeleton, boxes, "hitboxes").ok());
}

TEST(Hitboxes, RaysAtTheWalkMatchTheReference) {
  WalkScene scene;
  ASSERT_NO_FATAL_FAILURE(MakeWalkScene(&scene));
  const Skeleton& skeleton = scene.asset.skeleton;
  const std::vector<Transform>& model = scene.model;
  const std::vector<Hitbox>& boxes = scene.boxes;
  const Vec aim = model[skeleton.FindJoint("Chest")].translation.cast<double>();
  const int hits = CompareRays(skeleton, model, boxes, aim, 20.0, 3000, 5);
  EXPECT_GT(hits, 500);
}

// A query skips a character whose bound a ray clears: that must never
// lose a hit. Every hit of 20,000 rays (from all around, at and past the
// body, many grazing) lies inside the bound at its distance, and the
// bound clears the rays that pass well away.
TEST(Hitboxes, TheCharacterBoundNeverHidesAHit) {
  WalkScene scene;
  ASSERT_NO_FATAL_FAILURE(MakeWalkScene(&scene));
  std::vector<PlacedHitbox> placed(scene.boxes.size());
  PlaceHitboxes(scene.boxes, scene.model, absl::MakeSpan(placed));
  const HitboxBound bound = BoundHitboxes(scene.boxes, placed);
  ASSERT_GT(bound.radius, 0.0f);
  const float inf = std::numeric_limits<float>::infinity();
  std::mt19937 rng(2026);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  int hits = 0, cleared = 0;
  for (int i = 0; i < 20000; ++i) {
    const float ox = u(rng);
    const float oy = u(rng);
    const float oz = u(rng);
    const float spread = 1.5f * (u(rng) + 1.0f);  // 0-3 bound radii off
    const float tx = u(rng);
    const float ty = u(rng);
    const float tz = u(rng);
    const Eigen::Vector3f origin =
        bound.center +
        Eigen::Vector3f(ox, oy, oz).normalized() * (2.0f * bound.radius);
    const Eigen::Vector3f toward =
        bound.center + Eigen::Vector3f(tx, ty, tz) * (spread * bound.radius);
    const Eigen::Vector3f direction = toward - origin;
    const Eigen::Vector3f unit = direction / direction.norm();
    const RayHit hit = FirstRayHit(scene.boxes, placed, origin, direction, inf);
    if (hit.hitbox >= 0) {
      ++hits;
      EXPECT_FALSE(RaySurelyMissesBound(bound, origin, unit, hit.distance))
          << "ray " << i << " hits at " << hit.distance;
      EXPECT_FALSE(RaySurelyMissesBound(bound, origin, unit, inf));
    } else {
      cleared += RaySurelyMissesBound(bound, origin, unit, inf);
    }
  }
  EXPECT_GT(hits, 2000);
  EXPECT_GT(cleared, 2000);
  // No hitbox: nothing to hit, every ray cleared.
  EXPECT_TRUE(RaySurelyMissesBound(BoundHitboxes({}, {}), bound.center,
                                   Eigen::Vector3f::UnitX(), inf));
}

TEST(Hitboxes, OriginInsideHitsAtZeroFacingBack) {
  const Skeleton skeleton = TwoJoints();
  const std::vector<Transform> model =
      ModelPose(skeleton, skeleton.rest_pose());
  for (HitboxShape shape :
       {HitboxShape::kSphere, HitboxShape::kCapsule, HitboxShape::kBox}) {
    const std::vector<Hitbox> boxes = {MakeHitbox(shape, 1)};
    const Eigen::Vector3f center =
        Frame(model[1], boxes[0]).center.cast<float>();
    RayHit hit;
    const RayCastJob job{.skeleton = &skeleton,
                         .hitboxes = boxes,
                         .model_pose = model,
                         .origin = center,
                         .direction = Eigen::Vector3f(0, 0, 2),
                         .hit = &hit};
    ASSERT_TRUE(job.Run().ok());
    EXPECT_EQ(hit.hitbox, 0);
    EXPECT_EQ(hit.distance, 0.0f);
    EXPECT_EQ(hit.point, center);
    EXPECT_EQ(hit.normal, Eigen::Vector3f(0, 0, -1));
  }
}

TEST(Hitboxes, MaxDistanceAndTiesAndReruns) {
  const Skeleton skeleton = TwoJoints();
  const std::vector<Transform> model =
      ModelPose(skeleton, skeleton.rest_pose());
  // Two identical spheres: the tie goes to the lower index.
  Hitbox sphere = MakeHitbox(HitboxShape::kSphere, 0);
  sphere.offset_translation = Eigen::Vector3f(0, 0, 5);
  sphere.offset_rotation = Eigen::Quaternionf::Identity();
  sphere.radius = 1.0f;
  const std::vector<Hitbox> boxes = {MakeHitbox(HitboxShape::kBox, 1), sphere,
                                     sphere};
  RayCastJob job{.skeleton = &skeleton,
                 .hitboxes = boxes,
                 .model_pose = model,
                 .origin = Eigen::Vector3f(0, 0, -10),
                 .direction = Eigen::Vector3f(0, 0, 1)};
  RayHit hit;
  job.hit = &hit;
  ASSERT_TRUE(job.Run().ok());
  EXPECT_EQ(hit.hitbox, 1);
  EXPECT_EQ(hit.distance, 14.0f);
  EXPECT_EQ(hit.point, Eigen::Vector3f(0, 0, 4));
  EXPECT_EQ(hit.normal, Eigen::Vector3f(0, 0, -1));
  // Bit for bit on a rerun.
  RayHit again;
  job.hit = &again;
  ASSERT_TRUE(job.Run().ok());
  EXPECT_EQ(std::memcmp(&hit.point, &again.point, sizeof(hit.point)), 0);
  EXPECT_EQ(std::memcmp(&hit.normal, &again.normal, sizeof(hit.normal)), 0);
  EXPECT_EQ(std::memcmp(&hit.distance, &again.distance, sizeof(float)), 0);
  // Beyond max_distance: no hit.
  job.max_distance = 13.9f;
  ASSERT_TRUE(job.Run().ok());
  EXPECT_EQ(again.hitbox, -1);
}

TEST(Hitboxes, SphereOverlapsMatchTheReference) {
  const Skeleton skeleton = TwoJoints();
  const std::vector<Transform> model =
      ModelPose(skeleton, skeleton.rest_pose());
  std::vector<Hitbox> boxes = {MakeHitbox(HitboxShape::kSphere, 1),
                               MakeHitbox(HitboxShape::kCapsule, 0),
                               MakeHitbox(HitboxShape::kBox, 1)};
  boxes[1].offset_translation = Eigen::Vector3f(1.5f, 0, 0);
  boxes[2].offset_translation = Eigen::Vector3f(-1.0f, 0.5f, 0.5f);
  std::vector<RefFrame> frames;
  for (const Hitbox& h : boxes) frames.push_back(Frame(model[h.joint], h));
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-3, 3), r(0, 1);
  int overlaps = 0;
  for (int q = 0; q < 3000; ++q) {
    const double x = u(rng);
    const double y = u(rng);
    const double z = u(rng);
    const Eigen::Vector3f center(static_cast<float>(x), static_cast<float>(y),
                                 static_cast<float>(z));
    const float radius = static_cast<float>(r(rng));
    std::vector<int> got;
    const SphereOverlapJob job{.skeleton = &skeleton,
                               .hitboxes = boxes,
                               .model_pose = model,
                               .center = center,
                               .radius = radius,
                               .overlapped = &got};
    ASSERT_TRUE(job.Run().ok());
    std::vector<int> want;
    bool close_call = false;
    for (size_t i = 0; i < boxes.size(); ++i) {
      const double gap =
          Sdf(center.cast<double>(), frames[i], boxes[i]) - radius;
      close_call |= std::abs(gap) < 1e-5;
      if (gap <= 0) want.push_back(static_cast<int>(i));
    }
    if (close_call) continue;
    EXPECT_EQ(got, want) << "query " << q;
    overlaps += !got.empty();
  }
  EXPECT_GT(overlaps, 100);
}

TEST(Hitboxes, BadInputIsRefusedWithTheFieldNamed) {
  const Skeleton skeleton = TwoJoints();
  const std::vector<Transform> model =
      ModelPose(skeleton, skeleton.rest_pose());
  auto ray_error = [&](std::vector<Hitbox> boxes, Eigen::Vector3f direction,
                       float max_distance) {
    RayHit hit;
    const RayCastJob job{.skeleton = &skeleton,
                         .hitboxes = boxes,
                         .model_pose = model,
                         .origin = Eigen::Vector3f::Zero(),
                         .direction = direction,
                         .max_distance = max_distance,
                         .hit = &hit};
    return std::string(job.Run().message());
  };
  const Hitbox good = MakeHitbox(HitboxShape::kCapsule, 1);
  Hitbox missing = good;
  missing.joint = 7;
  EXPECT_EQ(ray_error({good, missing}, Eigen::Vector3f::UnitZ(), 1.0f),
            "ray_cast.hitboxes[1].joint: 7 is not a joint of this 2-joint "
            "skeleton");
  Hitbox nan_radius = good;
  nan_radius.radius = NAN;
  EXPECT_EQ(ray_error({nan_radius}, Eigen::Vector3f::UnitZ(), 1.0f),
            "ray_cast.hitboxes[0].radius: nan must be finite and > 0 (joint "
            "'child')");
  Hitbox flat_box = MakeHitbox(HitboxShape::kBox, 0);
  flat_box.half_extents.y() = 0.0f;
  EXPECT_EQ(ray_error({flat_box}, Eigen::Vector3f::UnitZ(), 1.0f),
            "ray_cast.hitboxes[0].half_extents: (0.25, 0, 0.15) must be "
            "finite and > 0 (joint 'root')");
  EXPECT_EQ(ray_error({good}, Eigen::Vector3f::Zero(), 1.0f),
            "ray_cast.direction: must be finite and of non-zero length");
  EXPECT_EQ(ray_error({good}, Eigen::Vector3f::UnitZ(), -1.0f),
            "ray_cast.max_distance: -1 must be > 0");
  std::vector<int> out;
  const SphereOverlapJob overlap{.skeleton = &skeleton,
                                 .hitboxes = {},
                                 .model_pose = model,
                                 .center = Eigen::Vector3f::Zero(),
                                 .radius = -0.5f,
                                 .overlapped = &out};
  EXPECT_EQ(overlap.Run().message(),
            "sphere_overlap.radius: -0.5 must be finite and >= 0");
  std::vector<Transform> short_pose = {model[0]};
  RayHit hit;
  const RayCastJob ray{.skeleton = &skeleton,
                       .hitboxes = {},
                       .model_pose = short_pose,
                       .hit = &hit};
  EXPECT_EQ(ray.Run().message(),
            "ray_cast.model_pose: 1 transforms for a skeleton of 2 joints");
}

}  // namespace hitboxes_test
}  // namespace posewire
