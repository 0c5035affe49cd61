// PoseHistory's snapshot form: what ToProto writes, FromProto reads back to
// the same rewinds, bit for bit; a damaged history is refused by name and
// leaves nothing behind.
#include "server/service/pose_history.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tests/service/service_fixture.h"

namespace posewire::server {
namespace pose_history_test {

using ::testing::HasSubstr;

constexpr int kJoints = 3;

// A history of `frames` frames 0.1 s apart whose poses differ per frame.
PoseHistory Recorded(int capacity, int frames) {
  PoseHistory history(capacity);
  for (int f = 0; f < frames; ++f) {
    absl::Span<Transform> model = history.Next(kJoints);
    for (int j = 0; j < kJoints; ++j) {
      model[j] = Transform::Identity();
      model[j].translation =
          Eigen::Vector3f(0.1f * f, static_cast<float>(j), 0.01f * f * j);
    }
    Transform root = Transform::Identity();
    root.translation.x() = 2.0f * f;
    history.Commit(0.1 * f, root);
  }
  return history;
}

std::vector<float> RewoundAt(const PoseHistory& history, double time) {
  ModelPose model;
  Transform root;
  EXPECT_TRUE(history.Rewind(time, 10.0, "q", model, root).ok());
  model.push_back(root);
  return Packed(model);
}

TEST(PoseHistory, ThroughItsSnapshotForm_RewindsGiveTheSameBits) {
  const PoseHistory original = Recorded(8, 12);  // the ring has wrapped
  google::protobuf::RepeatedPtrField<v1::HistoryFrame> frames;
  original.ToProto(&frames);
  ASSERT_EQ(frames.size(), 8);
  EXPECT_EQ(frames[0].time(), 0.1 * 4);  // oldest first
  PoseHistory restored(8);
  ASSERT_TRUE(restored.FromProto(frames, kJoints, "h").ok());
  EXPECT_EQ(restored.size(), 8);
  for (double t : {0.4, 0.45, 0.8, 1.1, 1.05}) {
    EXPECT_TRUE(BitIdentical(RewoundAt(restored, t), RewoundAt(original, t)))
        << t;
  }
}

TEST(PoseHistory, ASmallerCapacity_KeepsTheNewestFrames) {
  google::protobuf::RepeatedPtrField<v1::HistoryFrame> frames;
  Recorded(8, 8).ToProto(&frames);
  PoseHistory restored(3);
  ASSERT_TRUE(restored.FromProto(frames, kJoints, "h").ok());
  EXPECT_EQ(restored.size(), 3);
  EXPECT_EQ(restored.oldest_time(), 0.1 * 5);
  EXPECT_EQ(restored.newest_time(), 0.1 * 7);
}

TEST(PoseHistory, ADamagedFrame_IsRefusedByNameAndLeavesItEmpty) {
  google::protobuf::RepeatedPtrField<v1::HistoryFrame> good;
  Recorded(4, 4).ToProto(&good);
  struct Case {
    const char* what;
    void (*damage)(google::protobuf::RepeatedPtrField<v1::HistoryFrame>&);
    const char* message;
  };
  const Case cases[] = {
      {"another skeleton's pose",
       [](auto& f) { f[2].mutable_model()->mutable_transforms()->Add(0.0f); },
       "h[2].model: 31 floats"},
      {"two roots",
       [](auto& f) {
         const v1::Pose root = f[1].root();
         f[1].mutable_root()->MergeFrom(root);
       },
       "h[1]: 2 root and 3 model transforms for a skeleton of 3 joints"},
      {"time going back", [](auto& f) { f[3].set_time(0.05); },
       "h[3].time: 0.05 is not finite or goes back"},
      {"a NaN",
       [](auto& f) {
         f[0].mutable_model()->set_transforms(
             4, std::numeric_limits<float>::quiet_NaN());
       },
       "h[0]: a transform is not finite"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    google::protobuf::RepeatedPtrField<v1::HistoryFrame> frames = good;
    c.damage(frames);
    PoseHistory restored = Recorded(4, 2);
    const absl::Status s = restored.FromProto(frames, kJoints, "h");
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.message));
    EXPECT_EQ(restored.size(), 0);
  }
}

}  // namespace pose_history_test
}  // namespace posewire::server
