// The bad-input catalogue's harness: the outcome of a call, the builders of
// valid requests that each row breaks in one place, and the row kinds
// (a Solve, a Solve that must equal an in-range one, a Session sequence).
// The rows themselves are data, grouped by area in *_rows.cc.
#ifndef POSEWIRE_TESTS_SERVICE_BAD_INPUT_HARNESS_H_
#define POSEWIRE_TESTS_SERVICE_BAD_INPUT_HARNESS_H_

#include <gmock/gmock.h>
#include <grpcpp/generic/generic_stub.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_replace.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "solver_core/pose_ops/crossfade.h"
#include "tests/service/service_fixture.h"

namespace posewire::server::bad_input {

using ::testing::HasSubstr;
using Stream =
    grpc::ClientReaderWriter<v1::SessionRequest, v1::SessionResponse>;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kDt = 1.0f / 60.0f;
// Limits the catalogue's server runs with (GetInfo reports them).
constexpr int kMaxMessageBytes = 4 << 20;
constexpr int kMaxCharacters = 8;
constexpr int kMaxIterations = 100;
constexpr int kMaxSessionObjects = 8;
constexpr int64_t kMaxBakeBytes = 16 << 20;

// Offsets into a packed joint transform: tx ty tz qx qy qz qw sx sy sz.
constexpr int kTx = 0, kQx = 3, kQw = 6, kSx = 7;

inline std::chrono::system_clock::time_point Deadline(int seconds = 60) {
  return std::chrono::system_clock::now() + std::chrono::seconds(seconds);
}

// What the server answered: a call's status, or the status inside the one
// session response that belongs to the bad message.
struct Outcome {
  grpc::StatusCode code = grpc::StatusCode::OK;
  std::string message;
};

inline Outcome FromStatus(const grpc::Status& status) {
  return {status.error_code(), status.error_message()};
}

inline Outcome FromWire(const v1::Status& status) {
  return {static_cast<grpc::StatusCode>(status.code()), status.message()};
}

// A registration's status; for a frame, the frame's status, else the first
// failing character's.
inline Outcome FromResponse(const v1::SessionResponse& response) {
  if (response.has_registered()) {
    return FromWire(response.registered().status());
  }
  if (response.has_query()) return FromWire(response.query().status());
  if (response.has_snapshot()) {
    return FromWire(response.snapshot().status());
  }
  if (response.has_resume()) return FromWire(response.resume().status());
  const v1::FrameResult& frame = response.frame();
  if (frame.status().code() != 0) return FromWire(frame.status());
  for (const v1::CharacterResult& c : frame.characters()) {
    if (c.status().code() != 0) return FromWire(c.status());
  }
  return {};
}

// ------------------------------------------------------ building inputs --

inline std::vector<float> WalkRest() {
  return Packed(RestPose(Walk().skeleton));
}

inline void SetPose(const std::vector<float>& floats, v1::Pose* pose) {
  pose->mutable_transforms()->Assign(floats.begin(), floats.end());
}

// The walk rest pose with one float replaced.
inline v1::Pose RestWith(int joint, int component, float value) {
  std::vector<float> floats = WalkRest();
  floats[joint * kFloatsPerJoint + component] = value;
  v1::Pose pose;
  SetPose(floats, &pose);
  return pose;
}

inline void SetQuat(float x, float y, float z, float w, v1::Quat* q) {
  q->set_x(x);
  q->set_y(y);
  q->set_z(z);
  q->set_w(w);
}

inline v1::Vec3 Vec(float x, float y, float z) {
  return ToVec3(Eigen::Vector3f(x, y, z));
}

// One character, "hero", with the walk skeleton inline and no ops; the walk
// clip in the request.
inline v1::SolveRequest BaseSolve() {
  v1::SolveRequest request;
  *request.add_clips() = ServiceTest::WalkClipForTests();
  request.set_dt(kDt);
  v1::CharacterInput* c = request.add_characters();
  c->set_id("hero");
  *c->mutable_skeleton()->mutable_skeleton() =
      ServiceTest::WalkSkeletonForTests();
  return request;
}

inline v1::CharacterInput& Hero(v1::SolveRequest& request) {
  return *request.mutable_characters(0);
}

inline v1::Skeleton& HeroSkeleton(v1::SolveRequest& request) {
  return *Hero(request).mutable_skeleton()->mutable_skeleton();
}

inline v1::Operation* AddOp(v1::SolveRequest& request) {
  return Hero(request).add_ops();
}

// Well-formed ops on the walk rig; rows break one field of them.
inline v1::TwoBoneIkOp* TwoBone(v1::SolveRequest& r) {
  v1::TwoBoneIkOp* op = AddOp(r)->mutable_two_bone_ik();
  op->set_start_joint("LeftHip");
  op->set_mid_joint("LeftKnee");
  op->set_end_joint("LeftAnkle");
  *op->mutable_target() = Vec(1, 5, 2);
  return op;
}

inline v1::AimIkOp* Aim(v1::SolveRequest& r) {
  v1::AimIkOp* op = AddOp(r)->mutable_aim_ik();
  op->set_joint("Head");
  *op->mutable_target() = Vec(0, 20, 30);
  return op;
}

inline v1::LookAtOp* LookAt(v1::SolveRequest& r) {
  v1::LookAtOp* op = AddOp(r)->mutable_look_at();
  for (const char* j : {"Chest", "Chest2", "Neck"}) op->add_spine(j);
  op->set_head("Head");
  *op->mutable_target() = Vec(0, 20, 30);
  return op;
}

// Both walk legs, ground 1 and 0.5 above the clip's floor.
inline v1::GroundOp* Ground(v1::SolveRequest& r) {
  v1::GroundOp* op = AddOp(r)->mutable_ground();
  op->set_pelvis("Hips");
  for (const char* side : {"Left", "Right"}) {
    const std::string s(side);
    v1::GroundLeg* leg = op->add_legs();
    leg->set_hip(s + "Hip");
    leg->set_knee(s + "Knee");
    leg->set_ankle(s + "Ankle");
    leg->set_toe(s + "Toe");
  }
  for (float y : {1.0f, 0.5f}) {
    v1::GroundHit* hit = op->add_samples();
    hit->set_hit(true);
    *hit->mutable_point() = Vec(0, y, 0);
  }
  return op;
}

// A 2 x 2 flat heightfield in place of the samples.
// A retarget from the walk skeleton (inline, at its rest pose) onto the
// hero's, mapping the left leg explicitly.
inline v1::RetargetOp* Retarget(v1::SolveRequest& r) {
  const v1::Skeleton source = HeroSkeleton(r);
  v1::RetargetOp* op = AddOp(r)->mutable_retarget();
  *op->mutable_skeleton() = source;
  op->mutable_pose();
  v1::RetargetMapping* m = op->mutable_mapping();
  m->set_source_pelvis("Hips");
  m->set_target_pelvis("Hips");
  v1::RetargetChain* leg = m->add_chains();
  leg->set_name("left_leg");
  for (const char* j : {"LeftHip", "LeftKnee", "LeftAnkle"}) {
    leg->add_source(j);
    leg->add_target(j);
  }
  return op;
}

inline v1::Heightfield* GroundField(v1::SolveRequest& r) {
  v1::GroundOp* op = Ground(r);
  op->clear_samples();
  v1::Heightfield* h = op->mutable_heightfield();
  h->set_columns(2);
  h->set_rows(2);
  h->set_spacing(100.0f);
  h->set_origin_x(-50.0f);
  h->set_origin_z(-50.0f);
  for (int i = 0; i < 4; ++i) h->add_heights(0.5f);
  return h;
}

inline v1::CcdIkOp* Ccd(v1::SolveRequest& r) {
  v1::CcdIkOp* op = AddOp(r)->mutable_ccd_ik();
  for (const char* j : {"LeftShoulder", "LeftElbow", "LeftWrist"}) {
    op->add_chain(j);
  }
  *op->mutable_target() = Vec(5, 15, 5);
  return op;
}

inline v1::FabrikIkOp* Fabrik(v1::SolveRequest& r) {
  v1::FabrikIkOp* op = AddOp(r)->mutable_fabrik_ik();
  for (const char* j : {"RightShoulder", "RightElbow", "RightWrist"}) {
    op->add_chain(j);
  }
  *op->mutable_target() = Vec(-5, 15, 5);
  return op;
}

inline v1::FabrikTreeIkOp* FabrikTree(v1::SolveRequest& r) {
  v1::FabrikTreeIkOp* op = AddOp(r)->mutable_fabrik_tree_ik();
  op->set_root("Chest2");
  for (const char* j : {"LeftWrist", "RightWrist"}) {
    v1::FabrikEffector* e = op->add_effectors();
    e->set_joint(j);
    *e->mutable_target() = Vec(0, 20, 10);
  }
  return op;
}

inline v1::FullBodyCcdOp* FullBodyCcd(v1::SolveRequest& r) {
  v1::FullBodyCcdOp* op = AddOp(r)->mutable_full_body_ccd();
  v1::FullBodyCcdEffector* e = op->add_effectors();
  e->set_joint("LeftAnkle");
  *e->mutable_target() = Vec(3, 0, 5);
  return op;
}

inline v1::FullBodyBipedIkOp* Biped(v1::SolveRequest& r) {
  v1::FullBodyBipedIkOp* op = AddOp(r)->mutable_full_body_biped_ik();
  v1::BipedEffector* e = op->add_effectors();
  e->set_id(v1::BIPED_EFFECTOR_LEFT_HAND);
  *e->mutable_position() = Vec(10, 15, 5);
  e->set_position_weight(1.0f);
  return op;
}

inline v1::SpringBonesOp* Spring(v1::SolveRequest& r) {
  v1::SpringBonesOp* op = AddOp(r)->mutable_spring_bones();
  op->mutable_rig()->add_root_joints("LeftShoulder");
  return op;
}

inline v1::BlendOp* Blend(v1::SolveRequest& r) {
  v1::BlendOp* op = AddOp(r)->mutable_blend();
  for (float time : {0.25f, 1.5f}) {
    v1::BlendLayer* layer = op->add_layers();
    layer->mutable_source()->mutable_clip()->set_clip("walk");
    layer->mutable_source()->mutable_clip()->set_time(time);
    layer->set_weight(0.5f);
  }
  return op;
}

inline v1::AdditiveOp* Additive(v1::SolveRequest& r) {
  v1::AdditiveOp* op = AddOp(r)->mutable_additive();
  op->mutable_base()->set_rest(true);
  op->mutable_additive()->mutable_clip()->set_clip("walk");
  op->set_weight(0.5f);
  return op;
}

inline v1::ClipSample* Sample(v1::SolveRequest& r) {
  v1::ClipSample* sample = AddOp(r)->mutable_sample_clip()->mutable_sample();
  sample->set_clip("walk");
  sample->set_time(0.5f);
  return sample;
}

inline v1::CrossfadeOp* Crossfade(v1::SolveRequest& r) {
  v1::CrossfadeOp* op = AddOp(r)->mutable_crossfade();
  op->add_commands()->set_play("walk");
  return op;
}

// The walk clip's first track of joint `joint`.
inline v1::JointTracks* ClipJoint(v1::SolveRequest& r, int joint) {
  for (v1::JointTracks& tracks : *r.mutable_clips(0)->mutable_joints()) {
    if (tracks.joint() == joint) return &tracks;
  }
  ADD_FAILURE() << "the walk clip has no tracks for joint " << joint;
  return r.mutable_clips(0)->add_joints();
}

// A skeleton of `n` joints (a chain) with identity rest transforms.
inline v1::Skeleton ChainSkeleton(int n, bool with_rest_pose) {
  v1::Skeleton skeleton;
  skeleton.mutable_joint_names()->Reserve(n);
  skeleton.mutable_parents()->Reserve(n);
  for (int j = 0; j < n; ++j) {
    skeleton.add_joint_names(absl::StrCat("j", j));
    skeleton.add_parents(j - 1);
  }
  if (with_rest_pose) {
    const float identity[kFloatsPerJoint] = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1};
    skeleton.mutable_rest_pose()->Reserve(n * kFloatsPerJoint);
    for (int j = 0; j < n; ++j) {
      skeleton.mutable_rest_pose()->Add(identity, identity + kFloatsPerJoint);
    }
  }
  return skeleton;
}

// Session messages. Every session row starts from the same registrations:
// skeleton "cmu" (the walk), clip "walk", rig "player" (sample the walk) and
// character "hero".
inline std::vector<v1::SessionRequest> SessionSetup() {
  std::vector<v1::SessionRequest> setup(4);
  setup[0].mutable_register_skeleton()->set_id("cmu");
  *setup[0].mutable_register_skeleton()->mutable_skeleton() =
      ServiceTest::WalkSkeletonForTests();
  setup[1].mutable_register_clip()->set_id("walk");
  setup[1].mutable_register_clip()->set_skeleton_id("cmu");
  *setup[1].mutable_register_clip()->mutable_clip() =
      ServiceTest::WalkClipForTests();
  v1::RegisterRig* rig = setup[2].mutable_register_rig();
  rig->set_id("player");
  rig->set_skeleton_id("cmu");
  v1::ClipSample* sample =
      rig->add_ops()->mutable_sample_clip()->mutable_sample();
  sample->set_clip("walk");
  sample->set_time(0.5f);
  setup[3].mutable_register_character()->set_id("hero");
  setup[3].mutable_register_character()->set_rig_id("player");
  return setup;
}

inline v1::SessionRequest FrameFor(uint64_t sequence,
                                   const std::string& character) {
  v1::SessionRequest request;
  request.mutable_frame()->set_sequence(sequence);
  request.mutable_frame()->set_dt(kDt);
  request.mutable_frame()->add_characters()->set_character_id(character);
  return request;
}

inline v1::CharacterFrame& FrameCharacter(v1::SessionRequest& request) {
  return *request.mutable_frame()->mutable_characters(0);
}

// ------------------------------------------------------------- the rows --

struct BadInput {
  std::string name;
  // What is wrong, in words, for the published table.
  std::string input;
  std::function<Outcome(v1::PoseWire::Stub&)> run;
  grpc::StatusCode code;
  // An excerpt the message must contain (it names the field and joint).
  std::string message;
};

// A pose the server may return: every value finite, every rotation unit.
inline bool WellFormed(const v1::Pose& pose) {
  const int n = pose.transforms_size();
  if (n == 0 || n % kFloatsPerJoint != 0) return false;
  for (int j = 0; j < n; j += kFloatsPerJoint) {
    float norm2 = 0.0f;
    for (int k = 0; k < kFloatsPerJoint; ++k) {
      if (!std::isfinite(pose.transforms(j + k))) return false;
    }
    for (int k = kQx; k <= kQw; ++k) {
      norm2 += pose.transforms(j + k) * pose.transforms(j + k);
    }
    if (!(std::fabs(norm2 - 1.0f) < 1e-3f)) return false;
  }
  return true;
}

// An OK answer must hold one well-formed pose per character: a status of
// OK around a NaN pose would be the worst answer of all.
inline Outcome CallSolve(v1::PoseWire::Stub& stub,
                         const v1::SolveRequest& request,
                         v1::SolveResponse* response) {
  grpc::ClientContext context;
  context.set_deadline(Deadline());
  Outcome outcome = FromStatus(stub.Solve(&context, request, response));
  if (outcome.code != grpc::StatusCode::OK) return outcome;
  if (response->characters_size() != request.characters_size()) {
    return {grpc::StatusCode::UNKNOWN, "OK without one output per character"};
  }
  for (const v1::CharacterOutput& c : response->characters()) {
    if (!WellFormed(c.pose())) {
      return {grpc::StatusCode::UNKNOWN, "OK with a NaN or non-unit pose"};
    }
  }
  return outcome;
}

// Sends the session setup, then `messages`, reading each answer. The
// outcome is the answer to the last message; every other message must
// succeed. Then the session must go on: a well-formed frame is solved and
// the stream closes cleanly.
inline Outcome RunSession(v1::PoseWire::Stub& stub,
                          const std::vector<v1::SessionRequest>& messages) {
  grpc::ClientContext context;
  context.set_deadline(Deadline());
  std::unique_ptr<Stream> stream = stub.Session(&context);
  std::vector<v1::SessionRequest> all = SessionSetup();
  all.insert(all.end(), messages.begin(), messages.end());
  Outcome last;
  uint64_t max_sequence = 0;
  double max_time = 0.0;  // the good frame must not go back in time
  for (size_t i = 0; i < all.size(); ++i) {
    v1::SessionResponse response;
    if (!stream->Write(all[i]) || !stream->Read(&response)) {
      return FromStatus(stream->Finish());
    }
    if (all[i].has_frame()) {
      max_sequence = std::max(max_sequence, all[i].frame().sequence());
      if (std::isfinite(all[i].frame().time())) {
        max_time = std::max(max_time, all[i].frame().time());
      }
    }
    last = FromResponse(response);
    if (i + 1 < all.size() && last.code != grpc::StatusCode::OK) {
      return {grpc::StatusCode::UNKNOWN,
              absl::StrCat("message ", i,
                           " before the bad one failed: ", last.message)};
    }
  }
  v1::SessionRequest good = FrameFor(max_sequence + 1, "hero");
  good.mutable_frame()->set_time(max_time);
  v1::SessionResponse response;
  if (!stream->Write(good) || !stream->Read(&response) ||
      FromResponse(response).code != grpc::StatusCode::OK ||
      response.frame().characters(0).pose().transforms_size() !=
          Walk().skeleton.num_joints() * kFloatsPerJoint) {
    return {grpc::StatusCode::UNKNOWN,
            "the session did not go on after the bad message"};
  }
  stream->WritesDone();
  if (grpc::Status status = stream->Finish(); !status.ok()) {
    return {grpc::StatusCode::UNKNOWN,
            absl::StrCat("the session ended with ", status.error_message())};
  }
  return last;
}

inline BadInput SolveRow(std::string name, std::string input,
                         std::function<void(v1::SolveRequest&)> edit,
                         grpc::StatusCode code, std::string message) {
  return {std::move(name), std::move(input),
          [edit = std::move(edit)](v1::PoseWire::Stub& stub) {
            v1::SolveRequest request = BaseSolve();
            edit(request);
            v1::SolveResponse response;
            return CallSolve(stub, request, &response);
          },
          code, std::move(message)};
}

// An input the contract defines (a weight clamped to its range, a negative
// weight counting as 0): it must answer OK with exactly the pose of the
// in-range request `same`, bit for bit.
inline BadInput SolveSameRow(std::string name, std::string input,
                             std::function<void(v1::SolveRequest&)> edit,
                             std::function<void(v1::SolveRequest&)> same) {
  return {std::move(name), std::move(input),
          [edit = std::move(edit),
           same = std::move(same)](v1::PoseWire::Stub& stub) {
            v1::SolveRequest request = BaseSolve(), reference = BaseSolve();
            edit(request);
            same(reference);
            v1::SolveResponse response, expected;
            Outcome outcome = CallSolve(stub, request, &response);
            if (outcome.code != grpc::StatusCode::OK) return outcome;
            if (Outcome o = CallSolve(stub, reference, &expected);
                o.code != grpc::StatusCode::OK) {
              return Outcome{grpc::StatusCode::UNKNOWN,
                             absl::StrCat("the reference failed: ", o.message)};
            }
            if (!BitIdentical(Floats(response.characters(0).pose()),
                              Floats(expected.characters(0).pose()))) {
              return Outcome{grpc::StatusCode::UNKNOWN,
                             "OK, but not the pose of the in-range request"};
            }
            return outcome;
          },
          grpc::StatusCode::OK, ""};
}

inline BadInput SessionRow(
    std::string name, std::string input,
    std::function<std::vector<v1::SessionRequest>()> messages,
    grpc::StatusCode code, std::string message) {
  return {std::move(name), std::move(input),
          [messages = std::move(messages)](v1::PoseWire::Stub& stub) {
            return RunSession(stub, messages());
          },
          code, std::move(message)};
}

// A frame for "hero" with `edit` applied to its character entry.
inline BadInput FrameRow(std::string name, std::string input,
                         std::function<void(v1::CharacterFrame&)> edit,
                         grpc::StatusCode code, std::string message) {
  return SessionRow(
      std::move(name), std::move(input),
      [edit = std::move(edit)] {
        v1::SessionRequest frame = FrameFor(1, "hero");
        edit(FrameCharacter(frame));
        return std::vector<v1::SessionRequest>{frame};
      },
      code, std::move(message));
}

// One of the setup registrations sent again, with `edit` applied.
inline BadInput SetupAgainRow(std::string name, std::string input, int index,
                              std::function<void(v1::SessionRequest&)> edit,
                              grpc::StatusCode code, std::string message) {
  return SessionRow(
      std::move(name), std::move(input),
      [index, edit = std::move(edit)] {
        v1::SessionRequest request = SessionSetup()[index];
        edit(request);
        return std::vector<v1::SessionRequest>{request};
      },
      code, std::move(message));
}

// Raw bytes to a method, bypassing the generated (always well-formed)
// serialisation.
inline Outcome CallRaw(const std::shared_ptr<grpc::Channel>& channel,
                       const std::string& method, const std::string& bytes) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(Deadline());
  grpc::Slice slice(bytes);
  grpc::ByteBuffer request(&slice, 1), response;
  grpc::CompletionQueue queue;
  auto call = stub.PrepareUnaryCall(&context, method, request, &queue);
  call->StartCall();
  grpc::Status status;
  call->Finish(&response, &status, nullptr);
  void* tag = nullptr;
  bool ok = false;
  queue.Next(&tag, &ok);
  queue.Shutdown();
  while (queue.Next(&tag, &ok)) {
  }
  return FromStatus(status);
}

// A Session whose first message is a valid registration and whose second
// is `bytes`, raw. The outcome is how the stream ends; its message also
// says how many of the two messages were answered.
inline Outcome RawSession(const std::shared_ptr<grpc::Channel>& channel,
                          const std::string& bytes) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(Deadline());
  grpc::CompletionQueue queue;
  // Each step is started, then awaited: one tag in flight at a time.
  auto await = [&queue] {
    void* tag = nullptr;
    bool ok = false;
    return queue.Next(&tag, &ok) && ok;
  };
  auto call =
      stub.PrepareCall(&context, "/posewire.v1.PoseWire/Session", &queue);
  call->StartCall(nullptr);
  await();
  int answered = 0;
  v1::SessionResponse last;
  for (const std::string& message :
       {SessionSetup()[0].SerializeAsString(), bytes}) {
    grpc::Slice slice(message);
    grpc::ByteBuffer buffer(&slice, 1), response;
    call->Write(buffer, nullptr);
    if (!await()) break;
    call->Read(&response, nullptr);
    if (!await()) break;
    ++answered;
    std::vector<grpc::Slice> slices;
    std::string serialized;
    if (response.Dump(&slices).ok()) {
      for (const grpc::Slice& s : slices) {
        serialized.append(reinterpret_cast<const char*>(s.begin()), s.size());
      }
    }
    last.ParseFromString(serialized);
  }
  call->WritesDone(nullptr);
  await();
  grpc::Status status;
  call->Finish(&status, nullptr);
  await();
  queue.Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (queue.Next(&tag, &ok)) {
  }
  if (!status.ok() || answered < 2) {
    Outcome outcome = FromStatus(status);
    outcome.message =
        absl::StrCat(answered, " of 2 messages answered; ", outcome.message);
    return outcome;
  }
  // The stream ended well: the outcome is the answer to the second message.
  return FromWire(last.registered().status());
}

using grpc::StatusCode;

// Each area's rows (one file each).
std::vector<BadInput> RequestRows();
std::vector<BadInput> PoseOpRows();
std::vector<BadInput> IkRows();
std::vector<BadInput> SpringAndValidateRows();
std::vector<BadInput> SessionRows();
std::vector<BadInput> SnapshotRows();
std::vector<BadInput> RefereeRows();
std::vector<BadInput> BakeRows();
std::vector<BadInput> TransportRows(std::shared_ptr<grpc::Channel> channel);

}  // namespace posewire::server::bad_input

#endif  // POSEWIRE_TESTS_SERVICE_BAD_INPUT_HARNESS_H_
