// DynamicsState's wire form: round trips bit for bit, a
// parsed state continues a simulation exactly as the original would, and
// garbage of every kind is INVALID_ARGUMENT, never a crash.
#include "solver_core/dynamics/dynamics_state.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "solver_core/dynamics/spring_bones.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/simd_level.h"
#include "solver_core/model/skeleton.h"

namespace posewire {
namespace dynamics_state_test {

using ::testing::HasSubstr;

Skeleton Chain() {
  SkeletonDesc d;
  for (int j = 0; j < 6; ++j) {
    d.joint_names.push_back(absl::StrCat("j", j));
    d.parents.push_back(j - 1);
    Transform t;
    if (j > 0) t.translation = Eigen::Vector3f(8, 0, 0);
    d.rest_pose.push_back(t);
  }
  return *Skeleton::Create(d);
}

struct Fixture {
  Skeleton skeleton = Chain();
  SpringRig rig;
  SpringForces forces;

  Fixture() {
    SpringRigDesc desc;
    desc.root_joints = {"j1"};
    desc.dummy_tip_length = 3.0f;
    desc.space = SimulationSpace::kWorld;
    rig = *SpringRig::Create(skeleton, desc);
    forces.gravity = Eigen::Vector3f(0, -980, 0);
  }

  LocalPose Input(int frame) const {
    LocalPose input = RestPose(skeleton);
    input[0].rotation = Eigen::AngleAxisf(0.3f * std::sin(frame * 0.1f),
                                          Eigen::Vector3f::UnitZ());
    return input;
  }

  Transform Component(int frame) const {
    Transform c;
    c.translation = Eigen::Vector3f(frame * 0.7f, 0, 0);
    c.rotation = Eigen::AngleAxisf(0.01f * frame, Eigen::Vector3f::UnitY());
    c.scale = Eigen::Vector3f::Constant(1.5f);
    return c;
  }

  // One frame (at 50 fps, so leftover time is carried) from `in` into `out`.
  LocalPose Step(int frame, const DynamicsState& in, DynamicsState* out) const {
    const LocalPose input = Input(frame);
    LocalPose output(skeleton.num_joints());
    SpringBonesJob job{.skeleton = &skeleton,
                       .rig = &rig,
                       .input = input,
                       .component_to_world = Component(frame),
                       .dt = 1.0f / 50.0f,
                       .forces = forces,
                       .state_in = &in,
                       .output = absl::MakeSpan(output),
                       .state_out = out};
    EXPECT_TRUE(job.Run().ok());
    return output;
  }
};

DynamicsState SimulatedState(const Fixture& f, int frames) {
  DynamicsState state;
  for (int frame = 0; frame < frames; ++frame) f.Step(frame, state, &state);
  return state;
}

TEST(DynamicsState, RoundTripIsExactAndContinuesTheSimulation) {
  const Fixture f;
  const DynamicsState state = SimulatedState(f, 37);
  ASSERT_FALSE(state.empty());
  ASSERT_GT(state.leftover_time, 0.0f);
  const std::string bytes = SerializeDynamicsState(state);
  EXPECT_EQ(bytes.size(), 72u + 36u * state.positions.size());
  auto parsed = ParseDynamicsState(bytes);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, state);
  EXPECT_EQ(SerializeDynamicsState(*parsed), bytes);

  // Ten more frames from the original and from the parsed copy.
  DynamicsState a = state;
  DynamicsState b = *parsed;
  for (int frame = 37; frame < 47; ++frame) {
    const LocalPose out_a = f.Step(frame, a, &a);
    const LocalPose out_b = f.Step(frame, b, &b);
    for (size_t j = 0; j < out_a.size(); ++j) ASSERT_EQ(out_a[j], out_b[j]);
  }
  EXPECT_EQ(a, b);
}

TEST(DynamicsState, EmptyStateRoundTripsAndResetEmpties) {
  DynamicsState empty;
  const std::string bytes = SerializeDynamicsState(empty);
  EXPECT_EQ(bytes.size(), 72u);
  auto parsed = ParseDynamicsState(bytes);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(parsed->empty());

  const Fixture f;
  DynamicsState state = SimulatedState(f, 5);
  state.Reset();
  EXPECT_TRUE(state.empty());
  EXPECT_EQ(state, DynamicsState());
}

TEST(DynamicsState, LayoutIsLittleEndianAsDocumented) {
  DynamicsState s;
  s.rig_fingerprint = 0x0102030405060708ull;
  s.step_count = 9;
  s.space = SimulationSpace::kWorld;
  s.leftover_time = 0.25f;
  s.positions = {Eigen::Vector3f(1, 2, 3)};
  s.previous_positions = {Eigen::Vector3f(4, 5, 6)};
  s.previous_pose_positions = {Eigen::Vector3f(7, 8, 9)};
  const std::string b = SerializeDynamicsState(s);
  ASSERT_EQ(b.size(), 108u);
  EXPECT_EQ(b.substr(0, 4), "PWDS");
  EXPECT_EQ(b[4], 1);  // version, low byte first
  EXPECT_EQ(b[5], 0);
  EXPECT_EQ(b[6], 1);  // world
  EXPECT_EQ(b[8], 1);  // one particle
  EXPECT_EQ(static_cast<unsigned char>(b[12]), 0x08);
  EXPECT_EQ(static_cast<unsigned char>(b[19]), 0x01);
  EXPECT_EQ(b[20], 9);
  float f;
  std::memcpy(&f, b.data() + 28, 4);  // this host is little-endian
  EXPECT_EQ(f, 0.25f);
  std::memcpy(&f, b.data() + 72 + 4 * 8, 4);  // third vector, last value
  EXPECT_EQ(f, 9.0f);
}

void ExpectInvalid(const std::string& bytes, const std::string& fragment) {
  auto parsed = ParseDynamicsState(bytes);
  ASSERT_FALSE(parsed.ok()) << "accepted: " << fragment;
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(parsed.status().message()), HasSubstr(fragment));
}

void PutFloat(std::string* bytes, size_t offset, float value) {
  std::memcpy(bytes->data() + offset, &value, 4);
}

TEST(DynamicsState, ParseRejectsGarbage) {
  const Fixture f;
  const std::string good = SerializeDynamicsState(SimulatedState(f, 10));
  ExpectInvalid("", "shorter than");
  ExpectInvalid(std::string(71, '\0'), "shorter than");
  ExpectInvalid(std::string(200, 'x'), "bad magic");
  std::string b = good;
  b[4] = 2;
  ExpectInvalid(b, "version 2");
  b = good;
  b[6] = 7;
  ExpectInvalid(b, "space");
  b = good;
  b[7] = 1;
  ExpectInvalid(b, "flags");
  ExpectInvalid(good.substr(0, good.size() - 1), "expected");
  ExpectInvalid(good + "x", "expected");
  b = good;
  b[11] = 0x7f;  // a huge particle count
  ExpectInvalid(b, "exceed the maximum");
  b = good;
  b[8] = static_cast<char>(b[8] + 1);  // one particle more than the bytes
  ExpectInvalid(b, "expected");
  b = good;
  PutFloat(&b, 28, -1.0f);
  ExpectInvalid(b, "leftover_time");
  b = good;
  PutFloat(&b, 28, NAN);
  ExpectInvalid(b, "leftover_time");
  b = good;
  PutFloat(&b, 32 + 4 * 3, 2.0f);  // rotation x: not unit
  ExpectInvalid(b, "rotation norm");
  b = good;
  PutFloat(&b, 32 + 4 * 7, 0.0f);  // scale x
  ExpectInvalid(b, "scale");
  b = good;
  PutFloat(&b, 32 + 4 * 8, 3.0f);  // scale y != x
  ExpectInvalid(b, "not uniform");
  b = good;
  PutFloat(&b, 72 + 4, INFINITY);
  ExpectInvalid(b, "positions[0]");
  b = good;
  PutFloat(&b, b.size() - 4, NAN);
  ExpectInvalid(b, "previous_pose_positions");
}

TEST(DynamicsState, EveryCorruptedByteParsesOrFailsCleanly) {
  const Fixture f;
  const std::string good = SerializeDynamicsState(SimulatedState(f, 10));
  for (size_t i = 0; i < good.size(); ++i) {
    for (int flip : {0x01, 0x80, 0xff}) {
      std::string b = good;
      b[i] = static_cast<char>(b[i] ^ flip);
      auto parsed = ParseDynamicsState(b);
      if (parsed.ok()) {
        EXPECT_TRUE(ValidateDynamicsState(*parsed).ok());
      } else {
        EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
      }
    }
  }
}

TEST(DynamicsState, ValidateNamesTheBadField) {
  DynamicsState s;
  s.positions = {Eigen::Vector3f::Zero()};
  s.previous_positions = {};
  s.previous_pose_positions = {Eigen::Vector3f::Zero()};
  EXPECT_THAT(std::string(ValidateDynamicsState(s).message()),
              HasSubstr("previous positions"));
  s.previous_positions = {Eigen::Vector3f::Zero()};
  EXPECT_TRUE(ValidateDynamicsState(s).ok());
  s.previous_component.scale = Eigen::Vector3f(1, 1, -1);
  EXPECT_THAT(std::string(ValidateDynamicsState(s).message()),
              HasSubstr("not uniform"));
}

// The scan for NaN and infinity runs eight floats at a time with AVX2 and
// four without; at either level it must find a bad component anywhere in
// the arrays (the wide part, the narrow part, the one-at-a-time tail) and
// name its particle.
TEST(DynamicsState, ValidateFindsANonFiniteComponentAnywhereAtEveryLevel) {
  const SimdLevel saved = ActiveSimdLevel();
  for (const size_t n : {1, 5, 11, 12, 13, 37}) {
    DynamicsState s;
    for (size_t i = 0; i < n; ++i) {
      const float f = static_cast<float>(i);
      s.positions.emplace_back(f, -f, 2.0f * f);
    }
    s.previous_positions = s.positions;
    s.previous_pose_positions = s.positions;
    for (const SimdLevel level : {SimdLevel::kSse2, DetectedSimdLevel()}) {
      SetMaxSimdLevel(level);
      EXPECT_TRUE(ValidateDynamicsState(s).ok()) << n;
      for (size_t i = 0; i < n; ++i) {
        for (int c = 0; c < 3; ++c) {
          for (const float bad : {std::nanf(""), -INFINITY}) {
            DynamicsState t = s;
            t.previous_pose_positions[i][c] = bad;
            const absl::Status st = ValidateDynamicsState(t);
            EXPECT_THAT(
                std::string(st.message()),
                HasSubstr(absl::StrCat("previous_pose_positions[", i, "]")))
                << n << " particles, " << SimdLevelName(level);
          }
        }
      }
    }
  }
  SetMaxSimdLevel(saved);
}

}  // namespace dynamics_state_test
}  // namespace posewire
