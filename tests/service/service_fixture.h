// A real posewire server in process on 127.0.0.1:0 and a channel to it, plus
// the real CMU walk rig and clip in wire form.
#ifndef POSEWIRE_TESTS_SERVICE_SERVICE_FIXTURE_H_
#define POSEWIRE_TESTS_SERVICE_SERVICE_FIXTURE_H_

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "posewire/v1/posewire.grpc.pb.h"
#include "server/transport/server.h"
#include "server/wire/wire_convert.h"
#include "solver_core/io/bvh_reader.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/pose_ops/sampling_job.h"

namespace posewire::server {

// The CMU walk (31 joints, 994 frames at 120 Hz), read once.
inline const ImportedAsset& Walk() {
  static const ImportedAsset* asset = [] {
    auto read = ReadBvhFile(std::string(POSEWIRE_TEST_DATA_DIR) +
                            "/cmu_131_01_walk.bvh");
    if (!read.ok()) {
      ADD_FAILURE() << read.status();
      std::abort();
    }
    return new ImportedAsset(*std::move(read));
  }();
  return *asset;
}

// The walk clip sampled at `time` by the core.
inline LocalPose SampleWalk(float time) {
  LocalPose pose(Walk().skeleton.num_joints());
  SamplingJob job;
  job.skeleton = &Walk().skeleton;
  job.clip = &Walk().clips[0];
  job.time = time;
  job.output = absl::MakeSpan(pose);
  EXPECT_TRUE(job.Run().ok());
  return pose;
}

// Forward kinematics of a walk pose by the core.
inline ModelPose Model(const LocalPose& local) {
  ModelPose model(local.size());
  LocalToModelJob job{.skeleton = &Walk().skeleton,
                      .input = local,
                      .output = absl::MakeSpan(model)};
  EXPECT_TRUE(job.Run().ok());
  return model;
}

inline v1::Vec3 ToVec3(const Eigen::Vector3f& v) {
  v1::Vec3 out;
  out.set_x(v.x());
  out.set_y(v.y());
  out.set_z(v.z());
  return out;
}

// The floats of a pose exactly as the server packs them.
inline std::vector<float> Packed(absl::Span<const Transform> pose) {
  v1::Pose proto;
  PoseToProto(pose, &proto);
  return {proto.transforms().begin(), proto.transforms().end()};
}

inline std::vector<float> Floats(const v1::Pose& pose) {
  return {pose.transforms().begin(), pose.transforms().end()};
}

// Bitwise equality: 0.0f == -0.0f and NaN != NaN would hide differences.
inline bool BitIdentical(const std::vector<float>& a,
                         const std::vector<float>& b) {
  // Empty vectors may hold null data, which memcmp must not be given.
  return a.size() == b.size() &&
         (a.empty() ||
          std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

inline bool BitIdentical(const v1::Pose& pose,
                         const std::vector<float>& expected) {
  return BitIdentical(Floats(pose), expected);
}

using SessionStream =
    grpc::ClientReaderWriter<v1::SessionRequest, v1::SessionResponse>;

// Sends one request on a Session stream and reads its one response; a
// failed write or read is a test failure (and an empty response).
inline v1::SessionResponse RoundTrip(SessionStream& stream,
                                     const v1::SessionRequest& request) {
  v1::SessionResponse response;
  EXPECT_TRUE(stream.Write(request));
  EXPECT_TRUE(stream.Read(&response));
  return response;
}

// Asserts that `response` answers a registration with status `code`.
inline void ExpectRegistered(const v1::SessionResponse& response,
                             grpc::StatusCode code = grpc::StatusCode::OK) {
  ASSERT_TRUE(response.has_registered());
  EXPECT_EQ(response.registered().status().code(), code)
      << response.registered().status().message();
}

// Values for ServerConfig::inline_request_bytes that put requests on the
// solver pool (0), split them by size (the default) or keep every one on
// gRPC's thread; for suites that must answer the same wherever they solve.
inline auto RequestPlacements() {
  return ::testing::Values<int64_t>(0, ServerConfig{}.inline_request_bytes,
                                    int64_t{1} << 20);
}
inline std::string RequestPlacementName(
    const ::testing::TestParamInfo<int64_t>& info) {
  if (info.param == 0) return "OnSolverPool";
  if (info.param == ServerConfig{}.inline_request_bytes) return "SplitBySize";
  return "OnGrpcThread";
}

class ServiceTest : public ::testing::Test {
 public:
  // Override to change the configuration before the server starts.
  virtual void Configure(ServerConfig& config) { (void)config; }

  void SetUp() override {
    config_.listen = "127.0.0.1:0";
    config_.threads = 2;
    Configure(config_);
    auto server = PosewireServer::Start(config_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    channel_ = grpc::CreateChannel(absl::StrCat("127.0.0.1:", server_->port()),
                                   grpc::InsecureChannelCredentials());
    stub_ = v1::PoseWire::NewStub(channel_);
  }

  // Registers the walk's skeleton as "cmu" and its clip as "walk" on a
  // Session stream.
  static void RegisterWalk(SessionStream& stream) {
    v1::SessionRequest r;
    r.mutable_register_skeleton()->set_id("cmu");
    *r.mutable_register_skeleton()->mutable_skeleton() = WalkSkeleton();
    ExpectRegistered(RoundTrip(stream, r));
    r.Clear();
    r.mutable_register_clip()->set_id("walk");
    r.mutable_register_clip()->set_skeleton_id("cmu");
    *r.mutable_register_clip()->mutable_clip() = WalkClip();
    ExpectRegistered(RoundTrip(stream, r));
  }

  // An op sampling the registered clip "walk" at `time`.
  static v1::Operation SampleWalkOp(float time) {
    v1::Operation op;
    v1::ClipSample* sample = op.mutable_sample_clip()->mutable_sample();
    sample->set_clip("walk");
    sample->set_time(time);
    return op;
  }

  // Registers rig "rig" of `ops` on skeleton "cmu" (RegisterWalk) and
  // character "c" on it.
  static void RegisterRigAndCharacter(SessionStream& stream,
                                      const std::vector<v1::Operation>& ops) {
    v1::SessionRequest r;
    r.mutable_register_rig()->set_id("rig");
    r.mutable_register_rig()->set_skeleton_id("cmu");
    for (const v1::Operation& op : ops) {
      *r.mutable_register_rig()->add_ops() = op;
    }
    ExpectRegistered(RoundTrip(stream, r));
    r.Clear();
    r.mutable_register_character()->set_id("c");
    r.mutable_register_character()->set_rig_id("rig");
    ExpectRegistered(RoundTrip(stream, r));
  }

  // Solves `request` on the server, expecting OK; its first character's
  // answer (empty when there is none).
  v1::CharacterOutput SolveFirstCharacter(const v1::SolveRequest& request) {
    grpc::ClientContext context;
    v1::SolveResponse response;
    grpc::Status status = stub_->Solve(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response.characters_size() > 0 ? response.characters(0)
                                          : v1::CharacterOutput();
  }

  // For tests outside a fixture.
  static v1::Skeleton WalkSkeletonForTests() { return WalkSkeleton(); }
  static v1::Clip WalkClipForTests() { return WalkClip(); }

 protected:
  static v1::Skeleton WalkSkeleton() {
    v1::Skeleton proto;
    SkeletonToProto(Walk().skeleton, &proto);
    return proto;
  }

  static v1::Clip WalkClip(const std::string& name = "walk") {
    v1::Clip proto;
    ClipToProto(Walk().clips.at(0), &proto);
    proto.set_name(name);
    return proto;
  }

  ServerConfig config_;
  std::unique_ptr<PosewireServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::PoseWire::Stub> stub_;
};

}  // namespace posewire::server

#endif  // POSEWIRE_TESTS_SERVICE_SERVICE_FIXTURE_H_
