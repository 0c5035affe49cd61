// The rewind interpolation (solver_core/referee/rewind.h) against values
// computed here by its documented formula, and the placed-hitbox path of
// the ray and overlap queries against the jobs.
#include "solver_core/referee/rewind.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "solver_core/referee/hitboxes.h"

namespace posewire {
namespace rewind_test {

bool SameBits(const Transform& a, const Transform& b) {
  return std::memcmp(a.translation.data(), b.translation.data(), 12) == 0 &&
         std::memcmp(a.rotation.coeffs().data(), b.rotation.coeffs().data(),
                     16) == 0 &&
         std::memcmp(a.scale.data(), b.scale.data(), 12) == 0;
}

Transform Make(float x, float angle, float s) {
  Transform t;
  t.translation = Eigen::Vector3f(x, 2 * x, -x);
  t.rotation = Eigen::Quaternionf(
      Eigen::AngleAxisf(angle, Eigen::Vector3f(0.3f, 1, 0.2f).normalized()));
  t.scale = Eigen::Vector3f::Constant(s);
  return t;
}

TEST(Rewind, AlphaIsTheTimeFractionAndOneForEqualTimes) {
  EXPECT_EQ(RewindAlpha(10.0, 11.0, 10.25), 0.25f);
  EXPECT_EQ(RewindAlpha(10.0, 11.0, 10.0), 0.0f);
  EXPECT_EQ(RewindAlpha(10.0, 11.0, 11.0), 1.0f);
  EXPECT_EQ(RewindAlpha(3.0, 3.0, 3.0), 1.0f);  // the later frame wins
  EXPECT_EQ(RewindAlpha(0.0, 1.0, 2.0), 1.0f);  // clamped
}

TEST(Rewind, EndpointsAreTheRecordedTransformsBitForBit) {
  // A rotation of norm slightly off 1: nlerp would renormalise it.
  Transform a = Make(1.0f, 0.4f, 1.0f);
  a.rotation.coeffs() *= 1.0001f;
  const Transform b = Make(3.0f, 1.1f, 2.0f);
  EXPECT_TRUE(SameBits(InterpolateTransform(a, b, 0.0f), a));
  EXPECT_TRUE(SameBits(InterpolateTransform(a, b, 1.0f), b));
}

TEST(Rewind, BetweenFramesLerpsAndNlerpsOnTheShortestPath) {
  const Transform a = Make(1.0f, 0.4f, 1.0f);
  Transform b = Make(3.0f, 1.1f, 2.0f);
  b.rotation.coeffs() = -b.rotation.coeffs();  // the same rotation as q
  const Transform mid = InterpolateTransform(a, b, 0.25f);
  EXPECT_NEAR(mid.translation.x(), 1.5f, 1e-6f);
  EXPECT_NEAR(mid.scale.y(), 1.25f, 1e-6f);
  // Shortest path: as if b were not negated; nlerp's angle at 0.25 lies
  // between the two rotations' angles.
  EXPECT_GT(mid.rotation.w(), 0.0f);
  const float angle = 2 * std::acos(std::min(1.0f, mid.rotation.w()));
  EXPECT_GT(angle, 0.4f);
  EXPECT_LT(angle, 1.1f);
  EXPECT_NEAR(mid.rotation.norm(), 1.0f, 1e-6f);
}

TEST(Rewind, PosesJobRejectsMismatchedSizesAndBadAlpha) {
  std::vector<Transform> a(3), b(2), out(3);
  EXPECT_FALSE((InterpolatePosesJob{
      .before = a, .after = b, .alpha = 0.5f, .output = absl::MakeSpan(out)}
                    .Run()
                    .ok()));
  EXPECT_FALSE((InterpolatePosesJob{
      .before = a, .after = a, .alpha = NAN, .output = absl::MakeSpan(out)}
                    .Run()
                    .ok()));
}

TEST(Rewind, PlacedHitboxesAnswerAsTheJobs) {
  SkeletonDesc desc;
  desc.joint_names = {"root", "child"};
  desc.parents = {-1, 0};
  desc.rest_pose = {Make(0.0f, 0.0f, 1.0f), Make(0.5f, 0.7f, 1.0f)};
  const Skeleton skeleton = *Skeleton::Create(std::move(desc));
  const std::vector<Transform> model = {Make(0.0f, 0.2f, 1.0f),
                                        Make(0.4f, 0.9f, 1.1f)};
  std::vector<Hitbox> boxes(3);
  boxes[0].joint = 0;
  boxes[0].radius = 0.5f;
  boxes[1].joint = 1;
  boxes[1].shape = HitboxShape::kCapsule;
  boxes[1].radius = 0.3f;
  boxes[1].half_height = 0.6f;
  boxes[2].joint = 1;
  boxes[2].shape = HitboxShape::kBox;
  boxes[2].half_extents = Eigen::Vector3f(0.2f, 0.3f, 0.4f);
  boxes[2].offset_translation = Eigen::Vector3f(0.5f, 0, 0);
  std::vector<PlacedHitbox> placed(boxes.size());
  PlaceHitboxes(boxes, model, absl::MakeSpan(placed));
  for (int i = 0; i < 50; ++i) {
    const Eigen::Vector3f origin(3.0f * std::cos(i * 0.7f), 0.1f * i - 2.0f,
                                 3.0f * std::sin(i * 0.7f));
    const Eigen::Vector3f direction =
        Eigen::Vector3f(0.4f, 0.8f, 0.2f) * std::sin(i * 1.3f) - origin;
    RayHit from_job;
    const RayCastJob job{.skeleton = &skeleton,
                         .hitboxes = boxes,
                         .model_pose = model,
                         .origin = origin,
                         .direction = direction,
                         .hit = &from_job};
    ASSERT_TRUE(job.Run().ok());
    const RayHit placed_hit =
        FirstRayHit(boxes, placed, origin, direction,
                    std::numeric_limits<float>::infinity());
    EXPECT_EQ(placed_hit.hitbox, from_job.hitbox);
    EXPECT_EQ(std::memcmp(&placed_hit.distance, &from_job.distance, 4), 0);
    EXPECT_EQ(placed_hit.point, from_job.point);
    EXPECT_EQ(placed_hit.normal, from_job.normal);
    std::vector<int> a, b;
    const SphereOverlapJob overlap{.skeleton = &skeleton,
                                   .hitboxes = boxes,
                                   .model_pose = model,
                                   .center = origin * 0.3f,
                                   .radius = 0.4f,
                                   .overlapped = &a};
    ASSERT_TRUE(overlap.Run().ok());
    OverlapSphere(boxes, placed, origin * 0.3f, 0.4f, &b);
    EXPECT_EQ(a, b);
  }
}

}  // namespace rewind_test
}  // namespace posewire
