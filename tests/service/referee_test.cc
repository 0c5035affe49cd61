// Pose history, rewind and hitbox queries (HitQuery) on a real in-process
// server: a rewound pose equals, bit for bit, the documented interpolation
// of the model poses the frames returned, computed here with the core's
// InterpolatePosesJob; ray hits on rewound poses equal an analytic
// ray-sphere/capsule/box reference written here in double precision within
// 1e-5; bad input is refused naming the field, and the session, its
// history and its answers are unchanged after it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "server/wire/hitbox_convert.h"
#include "solver_core/referee/rewind.h"
#include "tests/service/service_fixture.h"

namespace posewire::server {
namespace {

using ::testing::HasSubstr;
using Vec = Eigen::Vector3d;

constexpr int kFrames = 12;
constexpr int kHistoryFrames = 8;
constexpr double kWindow = 0.1;
constexpr double kDt = 1.0 / 60.0;
const char* const kCharacters[] = {"hero", "villain"};

double FrameTime(int k) { return 10.0 + k * kDt; }

// A packed pose as transforms, float for float (no normalisation).
std::vector<Transform> Unpack(const v1::Pose& pose) {
  std::vector<Transform> out(pose.transforms_size() / kFloatsPerJoint);
  for (size_t j = 0; j < out.size(); ++j) {
    const float* f = pose.transforms().data() + j * kFloatsPerJoint;
    out[j].translation = Eigen::Vector3f(f[0], f[1], f[2]);
    out[j].rotation = Eigen::Quaternionf(f[6], f[3], f[4], f[5]);
    out[j].scale = Eigen::Vector3f(f[7], f[8], f[9]);
  }
  return out;
}

std::vector<float> RootFloats(const v1::Transform& t) {
  return {t.translation().x(), t.translation().y(), t.translation().z(),
          t.rotation().x(),    t.rotation().y(),    t.rotation().z(),
          t.rotation().w(),    t.scale().x(),       t.scale().y(),
          t.scale().z()};
}

std::vector<float> RootFloats(const Transform& t) {
  return {t.translation.x(), t.translation.y(), t.translation.z(),
          t.rotation.x(),    t.rotation.y(),    t.rotation.z(),
          t.rotation.w(),    t.scale.x(),       t.scale.y(),
          t.scale.z()};
}

// Each character's placement at frame k: moving and turning.
v1::Transform FrameRoot(int character, int k) {
  v1::Transform t;
  *t.mutable_translation() = ToVec3(
      Eigen::Vector3f(character * 12.0f + 0.25f * k, 0.0f, -3.0f + 0.1f * k));
  const Eigen::Quaternionf q(Eigen::AngleAxisf(0.3f + 0.08f * k + character,
                                               Eigen::Vector3f::UnitY()));
  t.mutable_rotation()->set_x(q.x());
  t.mutable_rotation()->set_y(q.y());
  t.mutable_rotation()->set_z(q.z());
  t.mutable_rotation()->set_w(q.w());
  return t;
}

// The hitbox set "body": 15 capsules on the limbs and spine, a sphere on
// the head and a box on the chest, some turned and moved off their joint.
v1::RegisterHitboxes BodyHitboxes() {
  v1::RegisterHitboxes set;
  set.set_id("body");
  set.set_skeleton_id("cmu");
  const char* capsules[] = {
      "LeftHip",    "LeftKnee",  "LeftAnkle",     "RightHip",   "RightKnee",
      "RightAnkle", "lowerback", "Chest",         "Neck",       "LeftShoulder",
      "LeftElbow",  "LeftWrist", "RightShoulder", "RightElbow", "RightWrist"};
  int i = 0;
  for (const char* joint : capsules) {
    v1::Hitbox* h = set.add_hitboxes();
    h->set_joint(joint);
    h->set_shape(v1::HITBOX_SHAPE_CAPSULE);
    h->set_radius(0.5f + 0.05f * (i % 4));
    h->set_half_height(1.0f + 0.2f * (i % 3));
    *h->mutable_offset()->mutable_translation() =
        ToVec3(Eigen::Vector3f(0.1f * (i % 2), -1.2f, 0.05f * i));
    const Eigen::Quaternionf q(Eigen::AngleAxisf(
        0.2f * i, Eigen::Vector3f(1.0f, 0.5f, -0.3f).normalized()));
    h->mutable_offset()->mutable_rotation()->set_x(q.x());
    h->mutable_offset()->mutable_rotation()->set_y(q.y());
    h->mutable_offset()->mutable_rotation()->set_z(q.z());
    h->mutable_offset()->mutable_rotation()->set_w(q.w());
    ++i;
  }
  v1::Hitbox* head = set.add_hitboxes();
  head->set_joint("Head");
  head->set_radius(1.1f);
  *head->mutable_offset()->mutable_translation() =
      ToVec3(Eigen::Vector3f(0, 0.8f, 0));
  v1::Hitbox* chest = set.add_hitboxes();
  chest->set_joint("Chest2");
  chest->set_shape(v1::HITBOX_SHAPE_BOX);
  *chest->mutable_half_extents() = ToVec3(Eigen::Vector3f(1.8f, 1.4f, 1.0f));
  return set;
}

// ------------------------------------------------- analytic reference --

constexpr double kInf = std::numeric_limits<double>::infinity();

// First t >= 0 at which o + t d (unit d) is within r of c; 0 inside.
double RaySphere(const Vec& o, const Vec& d, const Vec& c, double r) {
  const Vec m = o - c;
  const double cc = m.squaredNorm() - r * r;
  if (cc <= 0) return 0;
  const double b = m.dot(d);
  const double disc = b * b - cc;
  if (disc < 0 || b > 0) return kInf;
  return -b - std::sqrt(disc);
}

// Capsule: the segment c +- h a (unit a), radius r.
double RayCapsule(const Vec& o, const Vec& d, const Vec& c, const Vec& a,
                  double h, double r) {
  const Vec m = o - c;
  const double s = std::clamp(m.dot(a), -h, h);
  if ((m - a * s).squaredNorm() <= r * r) return 0;
  double best =
      std::min(RaySphere(o, d, c - a * h, r), RaySphere(o, d, c + a * h, r));
  // The infinite cylinder: |(m + t d) x a|^2 = r^2.
  const double md = m.dot(a), dd = d.dot(a);
  const double qa = 1 - dd * dd;
  if (qa > 1e-12) {
    const double qb = m.dot(d) - md * dd;
    const double qc = m.squaredNorm() - md * md - r * r;
    const double disc = qb * qb - qa * qc;
    if (disc >= 0) {
      const double t = (-qb - std::sqrt(disc)) / qa;
      if (t >= 0 && std::abs(md + t * dd) <= h) best = std::min(best, t);
    }
  }
  return best;
}

// Box: centre c, rotation q, half extents e.
double RayBox(const Vec& o, const Vec& d, const Vec& c,
              const Eigen::Quaterniond& q, const Vec& e) {
  const Vec lo = q.conjugate() * (o - c);
  const Vec ld = q.conjugate() * d;
  double enter = 0, exit = kInf;
  for (int i = 0; i < 3; ++i) {
    if (std::abs(ld[i]) < 1e-15) {
      if (std::abs(lo[i]) > e[i]) return kInf;
      continue;
    }
    double t0 = (-e[i] - lo[i]) / ld[i], t1 = (e[i] - lo[i]) / ld[i];
    if (t0 > t1) std::swap(t0, t1);
    enter = std::max(enter, t0);
    exit = std::min(exit, t1);
    if (enter > exit) return kInf;
  }
  return enter;
}

struct RefCharacter {
  std::vector<Transform> world;  // Combine(root, model[j])
};

struct RefHit {
  double t = kInf;
  int target = -1;
  int hitbox = -1;
};

// The nearest hitbox along the ray, every size grown by `grow`.
RefHit Reference(const std::vector<RefCharacter>& characters,
                 const std::vector<Hitbox>& boxes, const Vec& o, const Vec& d,
                 double grow) {
  RefHit best;
  for (size_t c = 0; c < characters.size(); ++c) {
    for (size_t i = 0; i < boxes.size(); ++i) {
      const Hitbox& h = boxes[i];
      const Transform& joint = characters[c].world[h.joint];
      const Eigen::Quaterniond jr = joint.rotation.cast<double>();
      const Vec center = joint.translation.cast<double>() +
                         jr * joint.scale.cast<double>().cwiseProduct(
                                  h.offset_translation.cast<double>());
      const Eigen::Quaterniond rotation = jr * h.offset_rotation.cast<double>();
      double t = kInf;
      switch (h.shape) {
        case HitboxShape::kSphere:
          t = RaySphere(o, d, center, h.radius + grow);
          break;
        case HitboxShape::kCapsule:
          t = RayCapsule(o, d, center, rotation * Vec::UnitY(), h.half_height,
                         h.radius + grow);
          break;
        case HitboxShape::kBox:
          t = RayBox(o, d, center, rotation,
                     h.half_extents.cast<double>() + Vec::Constant(grow));
          break;
      }
      if (t < best.t) best = {t, static_cast<int>(c), static_cast<int>(i)};
    }
  }
  return best;
}

// ---------------------------------------------------------- the tests --

class RefereeTest : public ServiceTest {
 protected:
  void Configure(ServerConfig& config) override {
    config.history_frames = kHistoryFrames;
    config.history_window_seconds = kWindow;
    config.max_queries_per_request = 512;
  }

  // Registers the walk, a rig without ops, two characters and "body", and
  // sends kFrames frames (walk samples, moving roots), keeping the model
  // poses and roots they returned.
  void StartSession() {
    stream_ = stub_->Session(&context_);
    RegisterWalk(*stream_);
    v1::SessionRequest r;
    r.mutable_register_rig()->set_id("still");
    r.mutable_register_rig()->set_skeleton_id("cmu");
    ExpectRegistered(RoundTrip(*stream_, r));
    for (const char* id : kCharacters) {
      r.Clear();
      r.mutable_register_character()->set_id(id);
      r.mutable_register_character()->set_rig_id("still");
      ExpectRegistered(RoundTrip(*stream_, r));
    }
    r.Clear();
    *r.mutable_register_hitboxes() = BodyHitboxes();
    ExpectRegistered(RoundTrip(*stream_, r));
    auto skeleton = SkeletonFromProto(WalkSkeleton(), 1024, "");
    ASSERT_TRUE(skeleton.ok());
    auto boxes =
        HitboxesFromProto(BodyHitboxes().hitboxes(), *skeleton, "hitboxes");
    ASSERT_TRUE(boxes.ok()) << boxes.status();
    boxes_ = *boxes;
    for (int k = 0; k < kFrames; ++k) SendFrame(k);
  }

  void SendFrame(int k) {
    v1::SessionRequest r;
    v1::Frame* frame = r.mutable_frame();
    frame->set_sequence(k + 1);
    frame->set_dt(static_cast<float>(kDt));
    frame->set_time(FrameTime(k));
    for (int c = 0; c < 2; ++c) {
      v1::CharacterFrame* character = frame->add_characters();
      character->set_character_id(kCharacters[c]);
      PoseToProto(SampleWalk(0.2f + 0.05f * k + 0.5f * c),
                  character->mutable_pose());
      *character->mutable_root() = FrameRoot(c, k);
      character->set_want_model_pose(true);
    }
    const v1::SessionResponse response = RoundTrip(*stream_, r);
    ASSERT_EQ(response.frame().status().code(), 0)
        << response.frame().status().message();
    for (int c = 0; c < 2; ++c) {
      ASSERT_EQ(response.frame().characters(c).status().code(), 0);
      models_[c].push_back(Unpack(response.frame().characters(c).model_pose()));
      auto root = TransformFromProto(FrameRoot(c, k), "root");
      ASSERT_TRUE(root.ok());
      roots_[c].push_back(*root);
    }
  }

  static v1::SessionRequest Query(std::optional<double> time) {
    v1::SessionRequest r;
    v1::HitQuery* query = r.mutable_query();
    if (time) query->set_time(*time);
    for (const char* id : kCharacters) {
      v1::HitTarget* target = query->add_targets();
      target->set_character_id(id);
      target->set_hitbox_set("body");
    }
    query->set_want_poses(true);
    return r;
  }

  v1::QueryResult Ask(const v1::SessionRequest& request) {
    const v1::SessionResponse response = RoundTrip(*stream_, request);
    EXPECT_TRUE(response.has_query());
    return response.query();
  }

  // The offline rewind of character c at `time` between frames k and k+1.
  std::vector<Transform> OfflineModel(int c, int k, double time) const {
    const float alpha = RewindAlpha(FrameTime(k), FrameTime(k + 1), time);
    std::vector<Transform> out(models_[c][k].size());
    EXPECT_TRUE((InterpolatePosesJob{.before = models_[c][k],
                                     .after = models_[c][k + 1],
                                     .alpha = alpha,
                                     .output = absl::MakeSpan(out)}
                     .Run()
                     .ok()));
    return out;
  }

  Transform OfflineRoot(int c, int k, double time) const {
    return InterpolateTransform(
        roots_[c][k], roots_[c][k + 1],
        RewindAlpha(FrameTime(k), FrameTime(k + 1), time));
  }

  grpc::ClientContext context_;
  std::unique_ptr<SessionStream> stream_;
  std::vector<Hitbox> boxes_;
  std::vector<std::vector<Transform>> models_[2];
  std::vector<Transform> roots_[2];
};

TEST_F(RefereeTest, FramesWithoutATimeAreSolvedButNotKept) {
  ASSERT_NO_FATAL_FAILURE(StartSession());
  const v1::QueryResult before = Ask(Query(std::nullopt));
  ASSERT_EQ(before.status().code(), 0) << before.status().message();
  // An untimed frame with other poses: answered, but the newest kept pose
  // stays the last timed frame's, and a later timed frame may carry any
  // time not before that one.
  v1::SessionRequest r;
  v1::Frame* frame = r.mutable_frame();
  frame->set_sequence(kFrames + 1);
  v1::CharacterFrame* character = frame->add_characters();
  character->set_character_id(kCharacters[0]);
  PoseToProto(SampleWalk(1.9f), character->mutable_pose());
  const v1::SessionResponse response = RoundTrip(*stream_, r);
  ASSERT_EQ(response.frame().status().code(), 0);
  ASSERT_EQ(response.frame().characters(0).status().code(), 0);
  const v1::QueryResult after = Ask(Query(std::nullopt));
  ASSERT_EQ(after.status().code(), 0) << after.status().message();
  EXPECT_EQ(after.SerializeAsString(), before.SerializeAsString());
  frame->set_sequence(kFrames + 2);
  frame->set_time(FrameTime(kFrames - 1));
  EXPECT_EQ(RoundTrip(*stream_, r).frame().status().code(), 0);
}

TEST_F(RefereeTest, RewindBetweenFramesIsTheOfflineInterpolationBitForBit) {
  ASSERT_NO_FATAL_FAILURE(StartSession());
  // Between the frames 9 and 10, at a recorded time, and the newest.
  const double between = FrameTime(9) + 0.37 * kDt;
  const v1::QueryResult result = Ask(Query(between));
  ASSERT_EQ(result.status().code(), 0) << result.status().message();
  ASSERT_EQ(result.poses_size(), 2);
  for (int c = 0; c < 2; ++c) {
    EXPECT_EQ(result.poses(c).character_id(), kCharacters[c]);
    EXPECT_TRUE(BitIdentical(result.poses(c).model_pose(),
                             Packed(OfflineModel(c, 9, between))))
        << kCharacters[c];
    EXPECT_TRUE(BitIdentical(RootFloats(result.poses(c).root()),
                             RootFloats(OfflineRoot(c, 9, between))));
  }
  const v1::QueryResult at_frame = Ask(Query(FrameTime(7)));
  ASSERT_EQ(at_frame.status().code(), 0) << at_frame.status().message();
  const v1::QueryResult newest = Ask(Query(std::nullopt));
  ASSERT_EQ(newest.status().code(), 0) << newest.status().message();
  for (int c = 0; c < 2; ++c) {
    EXPECT_TRUE(
        BitIdentical(at_frame.poses(c).model_pose(), Packed(models_[c][7])));
    EXPECT_TRUE(BitIdentical(newest.poses(c).model_pose(),
                             Packed(models_[c][kFrames - 1])));
  }
  // The interpolation moved the pose: it is neither frame.
  EXPECT_FALSE(
      BitIdentical(result.poses(0).model_pose(), Packed(models_[0][9])));
  EXPECT_FALSE(
      BitIdentical(result.poses(0).model_pose(), Packed(models_[0][10])));
}

TEST_F(RefereeTest, RayHitsOnRewoundPosesMatchTheAnalyticReference) {
  ASSERT_NO_FATAL_FAILURE(StartSession());
  const double time = FrameTime(8) + 0.61 * kDt;
  std::vector<RefCharacter> characters(2);
  for (int c = 0; c < 2; ++c) {
    const std::vector<Transform> model = OfflineModel(c, 8, time);
    const Transform root = OfflineRoot(c, 8, time);
    for (const Transform& joint : model) {
      characters[c].world.push_back(Combine(root, joint));
    }
  }
  // Rays from 2 to 6 units around a random hitbox's joint toward a point
  // near it, and some from far away in random directions.
  v1::SessionRequest request = Query(time);
  std::mt19937 rng(27);
  std::uniform_real_distribution<double> u(-1, 1);
  constexpr int kRays = 400;
  for (int i = 0; i < kRays; ++i) {
    const int c = i % 2;
    const int box = static_cast<int>(rng() % boxes_.size());
    const Vec aim =
        characters[c].world[boxes_[box].joint].translation.cast<double>();
    const double x = u(rng);
    const double y = u(rng);
    const double z = u(rng);
    const double scale = 2 + 2 * (u(rng) + 1);
    const Vec from = aim + Vec(x, y, z).normalized() * scale;
    const double jx = u(rng);
    const double jy = u(rng);
    const double jz = u(rng);
    const Vec toward = aim + Vec(jx, jy, jz) * 0.5;
    v1::Ray* ray = request.mutable_query()->add_rays();
    *ray->mutable_origin() = ToVec3(from.cast<float>());
    *ray->mutable_direction() = ToVec3((toward - from).cast<float>());
    if (i % 7 == 0) ray->set_max_distance(1.5f);
  }
  const v1::QueryResult result = Ask(request);
  ASSERT_EQ(result.status().code(), 0) << result.status().message();
  ASSERT_EQ(result.rays_size(), kRays);
  int hits = 0, compared = 0;
  for (int i = 0; i < kRays; ++i) {
    const v1::Ray& ray = request.query().rays(i);
    const Vec o(ray.origin().x(), ray.origin().y(), ray.origin().z());
    const Vec d =
        Vec(ray.direction().x(), ray.direction().y(), ray.direction().z())
            .normalized();
    const double max_t = ray.max_distance() == 0 ? kInf : ray.max_distance();
    // A ray whose answer changes when every hitbox grows or shrinks by
    // 1e-4 grazes a surface or a tie: too close to call either way.
    RefHit want = Reference(characters, boxes_, o, d, 0.0);
    const RefHit grown = Reference(characters, boxes_, o, d, 1e-4);
    const RefHit shrunk = Reference(characters, boxes_, o, d, -1e-4);
    auto hits_within = [max_t](const RefHit& h) {
      return h.hitbox >= 0 && h.t <= max_t;
    };
    if (grown.hitbox != shrunk.hitbox || grown.target != shrunk.target ||
        hits_within(grown) != hits_within(shrunk)) {
      continue;
    }
    ++compared;
    const v1::RayHit& got = result.rays(i);
    if (!hits_within(want)) {
      EXPECT_FALSE(got.hit()) << "ray " << i;
      continue;
    }
    ++hits;
    ASSERT_TRUE(got.hit()) << "ray " << i << " should hit at " << want.t;
    EXPECT_EQ(got.target(), static_cast<uint32_t>(want.target)) << i;
    EXPECT_EQ(got.character_id(), kCharacters[want.target]);
    EXPECT_EQ(got.hitbox(), static_cast<uint32_t>(want.hitbox)) << i;
    EXPECT_EQ(got.joint(),
              Walk().skeleton.joint_name(boxes_[want.hitbox].joint));
    EXPECT_NEAR(got.distance(), want.t, 1e-5) << "ray " << i;
    const Vec point = o + d * want.t;
    EXPECT_NEAR(got.point().x(), point.x(), 1e-5);
    EXPECT_NEAR(got.point().y(), point.y(), 1e-5);
    EXPECT_NEAR(got.point().z(), point.z(), 1e-5);
    const Vec normal(got.normal().x(), got.normal().y(), got.normal().z());
    EXPECT_NEAR(normal.norm(), 1.0, 1e-5);
  }
  // Most rays are clear cases, and most of those hit.
  EXPECT_GE(compared, kRays * 95 / 100);
  EXPECT_GE(hits, compared / 2);
  // The same query again: the same bytes.
  EXPECT_EQ(Ask(request).SerializeAsString(), result.SerializeAsString());
}

TEST_F(RefereeTest, SphereOverlapFindsTheHitboxesAroundAJoint) {
  ASSERT_NO_FATAL_FAILURE(StartSession());
  v1::SessionRequest request = Query(std::nullopt);
  const Transform head = Combine(
      roots_[1].back(), models_[1].back()[Walk().skeleton.FindJoint("Head")]);
  v1::SphereQuery* sphere = request.mutable_query()->add_spheres();
  *sphere->mutable_center() = ToVec3(head.translation);
  sphere->set_radius(0.1f);
  v1::SphereQuery* far = request.mutable_query()->add_spheres();
  *far->mutable_center() = ToVec3(Eigen::Vector3f(500, 500, 500));
  far->set_radius(1.0f);
  const v1::QueryResult result = Ask(request);
  ASSERT_EQ(result.status().code(), 0) << result.status().message();
  ASSERT_EQ(result.spheres_size(), 2);
  bool head_found = false;
  for (const v1::HitboxRef& ref : result.spheres(0).hitboxes()) {
    EXPECT_EQ(ref.character_id(), "villain");
    head_found |= ref.joint() == "Head" && ref.hitbox() == 15;
  }
  EXPECT_TRUE(head_found);
  EXPECT_EQ(result.spheres(1).hitboxes_size(), 0);
}

// The unary Query given the frames the session keeps (its last
// kHistoryFrames, as HistoryFrames: time, root, the model pose each frame
// returned) answers the session's query byte for byte: rewound poses, rays
// and spheres. A time outside the frames sent, a hitbox set named, an
// unknown character and no frames are refused naming the field.
TEST_F(RefereeTest, UnaryQueryOverTheSessionsFramesAnswersTheSameBytes) {
  ASSERT_NO_FATAL_FAILURE(StartSession());
  const double time = FrameTime(9) + 0.37 * kDt;
  v1::SessionRequest session_query = Query(time);
  v1::HitQuery& query = *session_query.mutable_query();
  // Aimed around where the hero's head is at the query's time.
  const Transform head =
      Combine(roots_[0][9], models_[0][9][Walk().skeleton.FindJoint("Head")]);
  for (int i = 0; i < 16; ++i) {
    v1::Ray* ray = query.add_rays();
    *ray->mutable_origin() =
        ToVec3(head.translation + Eigen::Vector3f(8.0f, 0.3f * i - 2.0f, 1.0f));
    *ray->mutable_direction() = ToVec3(Eigen::Vector3f(-1.0f, 0.0f, -0.1f));
  }
  v1::SphereQuery* sphere = query.add_spheres();
  *sphere->mutable_center() = ToVec3(head.translation);
  sphere->set_radius(2.0f);
  const v1::QueryResult from_session = Ask(session_query);
  ASSERT_EQ(from_session.status().code(), 0) << from_session.status().message();

  v1::QueryRequest unary;
  *unary.mutable_query() = query;
  for (v1::HitTarget& target : *unary.mutable_query()->mutable_targets()) {
    target.clear_hitbox_set();
  }
  for (int c = 0; c < 2; ++c) {
    v1::QueryCharacter* character = unary.add_characters();
    character->set_id(kCharacters[c]);
    *character->mutable_skeleton()->mutable_skeleton() = WalkSkeleton();
    *character->mutable_hitboxes() = BodyHitboxes().hitboxes();
    for (int k = kFrames - kHistoryFrames; k < kFrames; ++k) {
      v1::HistoryFrame* frame = character->add_frames();
      frame->set_time(FrameTime(k));
      PoseToProto(std::vector<Transform>{roots_[c][k]}, frame->mutable_root());
      PoseToProto(models_[c][k], frame->mutable_model());
    }
  }
  auto ask = [this](const v1::QueryRequest& request, v1::QueryResult* out) {
    grpc::ClientContext context;
    return stub_->Query(&context, request, out);
  };
  v1::QueryResult from_unary;
  const grpc::Status status = ask(unary, &from_unary);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_GT(from_unary.rays_size(), 0);
  EXPECT_EQ(from_unary.SerializeAsString(), from_session.SerializeAsString());
  int hits = 0;
  for (const v1::RayHit& hit : from_unary.rays()) hits += hit.hit() ? 1 : 0;
  EXPECT_GT(hits, 0);

  struct Case {
    const char* name;
    std::function<void(v1::QueryRequest&)> edit;
    grpc::StatusCode code;
    const char* message;
  };
  const Case cases[] = {
      {"time before the frames sent",
       [](v1::QueryRequest& r) { r.mutable_query()->set_time(FrameTime(1)); },
       grpc::StatusCode::OUT_OF_RANGE,
       "query.time: 10.0167 is outside the frames sent for "
       "query.targets[0] (character 'hero'): [10.0667, 10.1833]"},
      {"a hitbox set named",
       [](v1::QueryRequest& r) {
         r.mutable_query()->mutable_targets(1)->set_hitbox_set("body");
       },
       grpc::StatusCode::INVALID_ARGUMENT,
       "query.targets[1].hitbox_set: 'body' given; in a unary Query each "
       "character carries its hitboxes"},
      {"an unknown character",
       [](v1::QueryRequest& r) {
         r.mutable_query()->mutable_targets(0)->set_character_id("ghost");
       },
       grpc::StatusCode::NOT_FOUND,
       "query.targets[0].character_id: no character 'ghost' in the "
       "request's characters"},
      {"no frames",
       [](v1::QueryRequest& r) { r.mutable_characters(1)->clear_frames(); },
       grpc::StatusCode::INVALID_ARGUMENT, "characters[1].frames: none"},
      {"frames going back in time",
       [](v1::QueryRequest& r) {
         r.mutable_characters(0)->mutable_frames(3)->set_time(0.0);
       },
       grpc::StatusCode::INVALID_ARGUMENT, "characters[0].frames"},
  };
  for (const Case& c : cases) {
    v1::QueryRequest bad = unary;
    c.edit(bad);
    v1::QueryResult ignored;
    const grpc::Status refused = ask(bad, &ignored);
    EXPECT_EQ(refused.error_code(), c.code) << c.name;
    EXPECT_THAT(refused.error_message(), HasSubstr(c.message)) << c.name;
  }
}

// Each bad message is refused naming its field; afterwards the same good
// query answers the same bytes (nothing in the session changed) and frames
// go on.
TEST_F(RefereeTest, BadInputNamesTheFieldAndChangesNothing) {
  ASSERT_NO_FATAL_FAILURE(StartSession());
  v1::SessionRequest good = Query(FrameTime(9) + 0.5 * kDt);
  good.mutable_query()->add_rays()->mutable_direction()->set_z(1.0f);
  const std::string before = Ask(good).SerializeAsString();
  auto expect_same = [&] { EXPECT_EQ(Ask(good).SerializeAsString(), before); };
  struct Case {
    std::string name;
    v1::SessionRequest request;
    grpc::StatusCode code;
    std::string message;
  };
  std::vector<Case> cases;
  // Newest frame 10 + 11/60 s, window 0.1 s: [10.0833, 10.1833].
  cases.push_back({"after the newest frame",
                   Query(FrameTime(kFrames - 1) + 0.01),
                   grpc::StatusCode::OUT_OF_RANGE,
                   "query.time: 10.1933 is outside the character's rewind "
                   "window [10.0833, 10.1833]"});
  cases.push_back({"before the window", Query(FrameTime(4)),
                   grpc::StatusCode::OUT_OF_RANGE,
                   "is outside the character's rewind window"});
  {
    v1::SessionRequest r = good;
    r.mutable_query()->mutable_rays(0)->clear_direction();
    cases.push_back({"zero-length ray", r, grpc::StatusCode::INVALID_ARGUMENT,
                     "query.rays[0].direction: must be finite and of "
                     "non-zero length"});
  }
  {
    v1::SessionRequest r;
    *r.mutable_register_hitboxes() = BodyHitboxes();
    r.mutable_register_hitboxes()->set_id("bad_joint");
    r.mutable_register_hitboxes()->mutable_hitboxes(3)->set_joint("Tail");
    cases.push_back({"hitbox on a missing joint", r,
                     grpc::StatusCode::INVALID_ARGUMENT,
                     "register_hitboxes.hitboxes[3].joint: no joint named "
                     "'Tail'"});
  }
  {
    v1::SessionRequest r;
    *r.mutable_register_hitboxes() = BodyHitboxes();
    r.mutable_register_hitboxes()->set_id("bad_radius");
    r.mutable_register_hitboxes()->mutable_hitboxes(15)->set_radius(
        std::numeric_limits<float>::quiet_NaN());
    cases.push_back({"NaN in a hitbox", r, grpc::StatusCode::INVALID_ARGUMENT,
                     "register_hitboxes.hitboxes[15].radius: nan must be "
                     "finite and > 0 (joint 'Head')"});
  }
  {
    v1::SessionRequest r;
    r.mutable_frame()->set_sequence(100);
    r.mutable_frame()->set_time(FrameTime(kFrames - 1) - 0.5);
    r.mutable_frame()->add_characters()->set_character_id("hero");
    cases.push_back({"time going backwards", r,
                     grpc::StatusCode::INVALID_ARGUMENT,
                     "frame.time: 9.68333 is before the last frame's time "
                     "10.1833; frame times must not go backwards"});
  }
  for (const Case& c : cases) {
    const v1::SessionResponse response = RoundTrip(*stream_, c.request);
    const v1::Status& status = response.has_query() ? response.query().status()
                               : response.has_registered()
                                   ? response.registered().status()
                                   : response.frame().status();
    EXPECT_EQ(status.code(), c.code) << c.name << ": " << status.message();
    EXPECT_THAT(status.message(), HasSubstr(c.message)) << c.name;
    if (response.has_query()) {
      EXPECT_EQ(response.query().rays_size(), 0) << c.name;
    }
    expect_same();
  }
  // The session goes on: a new frame is recorded and is the newest.
  SendFrame(kFrames);
  const v1::QueryResult newest = Ask(Query(std::nullopt));
  ASSERT_EQ(newest.status().code(), 0) << newest.status().message();
  EXPECT_TRUE(
      BitIdentical(newest.poses(0).model_pose(), Packed(models_[0][kFrames])));
}

}  // namespace
}  // namespace posewire::server
