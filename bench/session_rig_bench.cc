// A registered Session rig's frame, in process (no network), against the
// same core jobs run directly on the same inputs: what the service layer
// (wire conversion, op updates, the compiled plan, state, the answer) adds
// to the solve itself. Inputs are 16 frames of the CMU walk; IK targets
// are the hands and feet of the frame 0.4 s later. Each pair is
// Session/<rig> (Session::Handle on a frame message, the answer cleared
// and reused as the server's arena would be) and Jobs/<rig> (the jobs,
// their inputs prepared as a core user would: joints looked up once, the
// input pose copied, the two-bone solver's parent transform computed from
// it).
//
// ./build/bench/posewire-bench --benchmark_filter='BM_SessionRig'
//     --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/bench_data.h"
#include "google/protobuf/arena.h"
#include "google/protobuf/text_format.h"
#include "server/service/server_config.h"
#include "server/service/session.h"
#include "server/wire/wire_convert.h"
#include "solver_core/analytic_ik/two_bone_ik.h"
#include "solver_core/chain_ik/ccd_ik.h"
#include "solver_core/dynamics/spring_bones.h"
#include "solver_core/full_body/biped_mapping.h"
#include "solver_core/full_body/full_body_biped_ik.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/pose_ops/sampling_job.h"

namespace posewire {
namespace {

constexpr int kCases = 16;
constexpr float kDt = 1.0f / 60.0f;

void Check(bool ok, const std::string& what) {
  if (!ok) {
    std::cerr << what << "\n";
    std::exit(1);
  }
}
void Check(const absl::Status& s, const std::string& what) {
  Check(s.ok(), absl::StrCat(what, ": ", s.ToString()));
}

struct Case {
  LocalPose input;
  Eigen::Vector3f left_foot, right_foot, left_hand, right_hand, body;
};

struct Walk {
  const ImportedAsset* asset = nullptr;
  std::vector<Case> cases;
};

const Walk& TheWalk() {
  static const Walk* walk = [] {
    auto* w = new Walk;
    w->asset = &bench::LoadAsset("cmu_131_01_walk.bvh");
    const Skeleton& skeleton = w->asset->skeleton;
    auto sample = [&](float t) {
      LocalPose pose(skeleton.num_joints());
      SamplingJob job;
      job.skeleton = &skeleton;
      job.clip = &w->asset->clips[0];
      job.time = t;
      job.output = absl::MakeSpan(pose);
      Check(job.Run(), "sampling");
      return pose;
    };
    for (int i = 0; i < kCases; ++i) {
      const float t = 1.0f + 0.3f * static_cast<float>(i);
      Case c;
      c.input = sample(t);
      ModelPose later(skeleton.num_joints());
      const LocalPose later_local = sample(t + 0.4f);
      Check(LocalToModelJob{.skeleton = &skeleton,
                            .input = later_local,
                            .output = absl::MakeSpan(later)}
                .Run(),
            "forward kinematics");
      auto at = [&](const char* name) {
        return later[skeleton.FindJoint(name)].translation;
      };
      c.left_foot = at("LeftAnkle");
      c.right_foot = at("RightAnkle");
      c.left_hand = at("LeftWrist");
      c.right_hand = at("RightWrist");
      c.body = at("Hips");
      w->cases.push_back(std::move(c));
    }
    return w;
  }();
  return *walk;
}

v1::Vec3 ToVec3(const Eigen::Vector3f& v) {
  v1::Vec3 out;
  out.set_x(v.x());
  out.set_y(v.y());
  out.set_z(v.z());
  return out;
}

// A session holding the walk's skeleton and one character on a rig of
// `op_texts`, and one frame message per case (`updates` fills each frame's
// op_updates).
struct SessionSetup {
  server::ServerConfig config;
  std::unique_ptr<server::Session> session;
  std::vector<v1::SessionRequest> frames;
  uint64_t sequence = 0;  // the last frame's
  // Frames carry a game time (Frame.time), so each is kept for rewinds.
  bool timed = false;
};

v1::Operation ParseOp(const std::string& text) {
  v1::Operation op;
  Check(google::protobuf::TextFormat::ParseFromString(text, &op),
        "op text: " + text);
  return op;
}

template <typename Updates>
void MakeSession(SessionSetup& setup, const std::vector<v1::Operation>& ops,
                 Updates updates) {
  const Walk& walk = TheWalk();
  setup.session = std::make_unique<server::Session>(setup.config);
  v1::SessionResponse response;
  v1::SessionRequest r;
  r.mutable_register_skeleton()->set_id("cmu");
  server::SkeletonToProto(walk.asset->skeleton,
                          r.mutable_register_skeleton()->mutable_skeleton());
  setup.session->Handle(r, &response);
  r.Clear();
  r.mutable_register_rig()->set_id("rig");
  r.mutable_register_rig()->set_skeleton_id("cmu");
  for (const v1::Operation& op : ops) *r.mutable_register_rig()->add_ops() = op;
  setup.session->Handle(r, &response);
  r.Clear();
  r.mutable_register_character()->set_id("hero");
  r.mutable_register_character()->set_rig_id("rig");
  setup.session->Handle(r, &response);
  Check(response.registered().status().code() == 0,
        response.registered().status().message());
  for (const Case& c : walk.cases) {
    v1::SessionRequest frame;
    frame.mutable_frame()->set_dt(kDt);
    v1::CharacterFrame* character = frame.mutable_frame()->add_characters();
    character->set_character_id("hero");
    server::PoseToProto(c.input, character->mutable_pose());
    updates(c, character);
    setup.frames.push_back(std::move(frame));
  }
}

// The answer lives on an arena reset per message, which starts in a 16 KB
// block of its own, as the server's does (MessagePair in
// server/transport/posewire_service.cc).
void RunSession(benchmark::State& state, SessionSetup& setup) {
  alignas(16) static char first_block[16 << 10];
  google::protobuf::Arena arena(first_block, sizeof(first_block));
  bool ok = true;
  size_t i = 0;
  for (auto _ : state) {
    arena.Reset();
    auto* response =
        google::protobuf::Arena::CreateMessage<v1::SessionResponse>(&arena);
    v1::SessionRequest& frame = setup.frames[i];
    frame.mutable_frame()->set_sequence(++setup.sequence);
    if (setup.timed) {
      frame.mutable_frame()->set_time(static_cast<double>(setup.sequence) /
                                      60.0);
    }
    setup.session->Handle(frame, response);
    benchmark::DoNotOptimize(response);
    ok = ok && response->frame().status().code() == 0 &&
         response->frame().characters_size() == 1 &&
         response->frame().characters(0).status().code() == 0;
    i = (i + 1) % setup.frames.size();
  }
  Check(ok, "a session frame failed");
  state.SetItemsProcessed(state.iterations());
}

// Full-body biped IK, four limb effectors and the body, default settings
// (positions as exact floats: text would round them).
v1::Operation FullBodyOp(const Case& c) {
  v1::Operation op;
  v1::FullBodyBipedIkOp* fb = op.mutable_full_body_biped_ik();
  const std::pair<v1::BipedEffectorId, Eigen::Vector3f> effectors[] = {
      {v1::BIPED_EFFECTOR_LEFT_HAND, c.left_hand},
      {v1::BIPED_EFFECTOR_RIGHT_HAND, c.right_hand},
      {v1::BIPED_EFFECTOR_LEFT_FOOT, c.left_foot},
      {v1::BIPED_EFFECTOR_RIGHT_FOOT, c.right_foot},
      {v1::BIPED_EFFECTOR_BODY, c.body}};
  for (const auto& [id, position] : effectors) {
    v1::BipedEffector* e = fb->add_effectors();
    e->set_id(id);
    *e->mutable_position() = ToVec3(position);
    e->set_position_weight(1.0f);
  }
  return op;
}

// The full-body job as the rig runs it (the effectors of case 0).
FullBodyBipedIkJob FullBodyJob() {
  const Walk& walk = TheWalk();
  const Skeleton& skeleton = walk.asset->skeleton;
  static const BipedMapping* mapping = [&] {
    auto m = MapBipedByName(skeleton);
    Check(m.status(), "mapping");
    return new BipedMapping(*std::move(m));
  }();
  const Case& first = walk.cases[0];
  FullBodyBipedIkJob job;
  job.skeleton = &skeleton;
  job.mapping = mapping;
  const std::pair<BipedEffectorId, Eigen::Vector3f> effectors[] = {
      {BipedEffectorId::kLeftHand, first.left_hand},
      {BipedEffectorId::kRightHand, first.right_hand},
      {BipedEffectorId::kLeftFoot, first.left_foot},
      {BipedEffectorId::kRightFoot, first.right_foot},
      {BipedEffectorId::kBody, first.body}};
  for (const auto& [id, position] : effectors) {
    job.effector(id).position = position;
    job.effector(id).position_weight = 1.0f;
  }
  return job;
}

void BM_SessionRig_FullBody_Session(benchmark::State& state) {
  static SessionSetup* setup = [] {
    auto* s = new SessionSetup;
    MakeSession(*s, {FullBodyOp(TheWalk().cases[0])},
                [](const Case&, v1::CharacterFrame*) {});
    // Both sides of the pair must do the same work: the session's answer
    // to case 0 is the job's, bit for bit.
    v1::SessionResponse response;
    s->frames[0].mutable_frame()->set_sequence(++s->sequence);
    s->session->Handle(s->frames[0], &response);
    FullBodyBipedIkJob job = FullBodyJob();
    LocalPose pose(TheWalk().asset->skeleton.num_joints());
    job.input = TheWalk().cases[0].input;
    job.output = absl::MakeSpan(pose);
    Check(job.Run(), "full-body job");
    v1::Pose expected;
    server::PoseToProto(pose, &expected);
    const auto& got = response.frame().characters(0).pose().transforms();
    Check(got.size() == expected.transforms().size() &&
              std::memcmp(got.data(), expected.transforms().data(),
                          got.size() * sizeof(float)) == 0,
          "the session's full-body answer differs from the job's: " +
              response.ShortDebugString().substr(0, 500));
    return s;
  }();
  RunSession(state, *setup);
}
BENCHMARK(BM_SessionRig_FullBody_Session)->Unit(benchmark::kMicrosecond);

void BM_SessionRig_FullBody_Jobs(benchmark::State& state) {
  const Walk& walk = TheWalk();
  FullBodyBipedIkJob job = FullBodyJob();
  LocalPose pose(walk.asset->skeleton.num_joints());
  FullBodyBipedIkResult result;
  job.result = &result;
  size_t i = 0;
  for (auto _ : state) {
    job.input = walk.cases[i].input;
    job.output = absl::MakeSpan(pose);
    const absl::Status s = job.Run();
    benchmark::DoNotOptimize(s);
    benchmark::DoNotOptimize(pose.data());
    benchmark::ClobberMemory();
    i = (i + 1) % walk.cases.size();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SessionRig_FullBody_Jobs)->Unit(benchmark::kMicrosecond);

// Two-bone IK on the left leg and CCD on the right arm, both with a new
// target each frame (op_updates), then spring bones on the left arm.
const std::vector<v1::Operation>& LimbsAndSpringOps() {
  static const auto* ops = new std::vector<v1::Operation>{
      ParseOp(R"(two_bone_ik { start_joint: "LeftHip" mid_joint: "LeftKnee"
                 end_joint: "LeftAnkle" })"),
      ParseOp(R"(ccd_ik { chain: ["RightShoulder", "RightElbow",
                                  "RightWrist"] })"),
      ParseOp(R"(spring_bones { rig { root_joints: "LeftShoulder" } })")};
  return *ops;
}

SessionSetup* LimbsAndSpringSession(bool timed) {
  auto* s = new SessionSetup;
  s->timed = timed;
  MakeSession(*s, LimbsAndSpringOps(),
              [](const Case& c, v1::CharacterFrame* character) {
                v1::OpUpdate* leg = character->add_op_updates();
                leg->set_op(0);
                *leg->mutable_target() = ToVec3(c.left_foot);
                v1::OpUpdate* arm = character->add_op_updates();
                arm->set_op(1);
                *arm->mutable_target() = ToVec3(c.right_hand);
              });
  return s;
}

void BM_SessionRig_TwoBoneCcdSpring_Session(benchmark::State& state) {
  static SessionSetup* setup = LimbsAndSpringSession(/*timed=*/false);
  RunSession(state, *setup);
}
BENCHMARK(BM_SessionRig_TwoBoneCcdSpring_Session)
    ->Unit(benchmark::kMicrosecond);

// The same with a game time on every frame, so that each character's model
// pose is kept for rewind queries (the default --history_frames): what the
// history costs a frame.
void BM_SessionRig_TwoBoneCcdSpring_SessionTimed(benchmark::State& state) {
  static SessionSetup* setup = LimbsAndSpringSession(/*timed=*/true);
  RunSession(state, *setup);
}
BENCHMARK(BM_SessionRig_TwoBoneCcdSpring_SessionTimed)
    ->Unit(benchmark::kMicrosecond);

void BM_SessionRig_TwoBoneCcdSpring_Jobs(benchmark::State& state) {
  const Walk& walk = TheWalk();
  const Skeleton& skeleton = walk.asset->skeleton;
  const int n = skeleton.num_joints();
  SpringRigDesc desc;
  desc.root_joints = {"LeftShoulder"};
  auto rig = SpringRig::Create(skeleton, desc);
  Check(rig.status(), "spring rig");
  const int hip = skeleton.FindJoint("LeftHip");
  const int knee = skeleton.FindJoint("LeftKnee");
  const int ankle = skeleton.FindJoint("LeftAnkle");
  const std::vector<int> arm = {skeleton.FindJoint("RightShoulder"),
                                skeleton.FindJoint("RightElbow"),
                                skeleton.FindJoint("RightWrist")};
  LocalPose pose(n), input(n);
  DynamicsState states[2];
  SpringBonesScratch scratch;
  int current = 0;
  size_t i = 0;
  for (auto _ : state) {
    const Case& c = walk.cases[i];
    pose = c.input;
    TwoBoneIkJob leg;
    leg.skeleton = &skeleton;
    leg.start_joint = hip;
    leg.mid_joint = knee;
    leg.end_joint = ankle;
    leg.target = c.left_foot;
    leg.input = pose;
    leg.parent_model =
        ParentModelTransformOrRoot(skeleton, pose, leg.start_joint);
    leg.output = absl::MakeSpan(pose);
    TwoBoneIkResult leg_result;
    leg.result = &leg_result;
    benchmark::DoNotOptimize(leg.Run());

    input = pose;
    CcdIkJob ccd;
    ccd.skeleton = &skeleton;
    ccd.input = input;
    ccd.chain = arm;
    ccd.target = c.right_hand;
    ccd.output = absl::MakeSpan(pose);
    IkResult ccd_result;
    ccd.result = &ccd_result;
    benchmark::DoNotOptimize(ccd.Run());

    input = pose;
    SpringBonesJob spring;
    spring.skeleton = &skeleton;
    spring.rig = &*rig;
    spring.input = input;
    spring.dt = kDt;
    spring.state_in = &states[current];
    spring.state_out = &states[1 - current];
    spring.output = absl::MakeSpan(pose);
    SpringBonesResult report;
    spring.result = &report;
    spring.scratch = &scratch;
    benchmark::DoNotOptimize(spring.Run());
    current = 1 - current;
    benchmark::DoNotOptimize(pose.data());
    benchmark::ClobberMemory();
    i = (i + 1) % walk.cases.size();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SessionRig_TwoBoneCcdSpring_Jobs)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace posewire
