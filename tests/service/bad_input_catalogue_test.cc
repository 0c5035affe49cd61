// The bad-input catalogue: malformed Solve requests and Session message
// sequences against a real in-process server, one table row each. Every row
// asserts the documented status code and a message excerpt that names the
// field; after every row the server must still report SERVING on
// grpc.health.v1, and a well-formed Session started before the first row,
// fed frames from its own thread throughout, must keep getting answers that
// are bit-identical to the core run directly.
//
// docs/RELIABILITY.md publishes this table. To regenerate its rows, run
//   POSEWIRE_CATALOGUE_MARKDOWN=1 bad_input_catalogue_test
// and paste the lines it prints between the markers.
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

namespace posewire::server {
namespace {

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

// Offsets into a packed joint transform: tx ty tz qx qy qz qw sx sy sz.
constexpr int kTx = 0, kQx = 3, kQw = 6, kSx = 7;

std::chrono::system_clock::time_point Deadline(int seconds = 60) {
  return std::chrono::system_clock::now() + std::chrono::seconds(seconds);
}

// What the server answered: a call's status, or the status inside the one
// session response that belongs to the bad message.
struct Outcome {
  grpc::StatusCode code = grpc::StatusCode::OK;
  std::string message;
};

Outcome FromStatus(const grpc::Status& status) {
  return {status.error_code(), status.error_message()};
}

Outcome FromWire(const v1::Status& status) {
  return {static_cast<grpc::StatusCode>(status.code()), status.message()};
}

// A registration's status; for a frame, the frame's status, else the first
// failing character's.
Outcome FromResponse(const v1::SessionResponse& response) {
  if (response.has_registered()) {
    return FromWire(response.registered().status());
  }
  const v1::FrameResult& frame = response.frame();
  if (frame.status().code() != 0) return FromWire(frame.status());
  for (const v1::CharacterResult& c : frame.characters()) {
    if (c.status().code() != 0) return FromWire(c.status());
  }
  return {};
}

// ------------------------------------------------------ building inputs --

std::vector<float> WalkRest() { return Packed(RestPose(Walk().skeleton)); }

void SetPose(const std::vector<float>& floats, v1::Pose* pose) {
  pose->mutable_transforms()->Assign(floats.begin(), floats.end());
}

// The walk rest pose with one float replaced.
v1::Pose RestWith(int joint, int component, float value) {
  std::vector<float> floats = WalkRest();
  floats[joint * kFloatsPerJoint + component] = value;
  v1::Pose pose;
  SetPose(floats, &pose);
  return pose;
}

void SetQuat(float x, float y, float z, float w, v1::Quat* q) {
  q->set_x(x);
  q->set_y(y);
  q->set_z(z);
  q->set_w(w);
}

v1::Vec3 Vec(float x, float y, float z) {
  return ToVec3(Eigen::Vector3f(x, y, z));
}

// One character, "hero", with the walk skeleton inline and no ops; the walk
// clip in the request.
v1::SolveRequest BaseSolve() {
  v1::SolveRequest request;
  *request.add_clips() = ServiceTest::WalkClipForTests();
  request.set_dt(kDt);
  v1::CharacterInput* c = request.add_characters();
  c->set_id("hero");
  *c->mutable_skeleton()->mutable_skeleton() =
      ServiceTest::WalkSkeletonForTests();
  return request;
}

v1::CharacterInput& Hero(v1::SolveRequest& request) {
  return *request.mutable_characters(0);
}

v1::Skeleton& HeroSkeleton(v1::SolveRequest& request) {
  return *Hero(request).mutable_skeleton()->mutable_skeleton();
}

v1::Operation* AddOp(v1::SolveRequest& request) {
  return Hero(request).add_ops();
}

// Well-formed ops on the walk rig; rows break one field of them.
v1::TwoBoneIkOp* TwoBone(v1::SolveRequest& r) {
  v1::TwoBoneIkOp* op = AddOp(r)->mutable_two_bone_ik();
  op->set_start_joint("LeftHip");
  op->set_mid_joint("LeftKnee");
  op->set_end_joint("LeftAnkle");
  *op->mutable_target() = Vec(1, 5, 2);
  return op;
}

v1::AimIkOp* Aim(v1::SolveRequest& r) {
  v1::AimIkOp* op = AddOp(r)->mutable_aim_ik();
  op->set_joint("Head");
  *op->mutable_target() = Vec(0, 20, 30);
  return op;
}

v1::CcdIkOp* Ccd(v1::SolveRequest& r) {
  v1::CcdIkOp* op = AddOp(r)->mutable_ccd_ik();
  for (const char* j : {"LeftShoulder", "LeftElbow", "LeftWrist"}) {
    op->add_chain(j);
  }
  *op->mutable_target() = Vec(5, 15, 5);
  return op;
}

v1::FabrikIkOp* Fabrik(v1::SolveRequest& r) {
  v1::FabrikIkOp* op = AddOp(r)->mutable_fabrik_ik();
  for (const char* j : {"RightShoulder", "RightElbow", "RightWrist"}) {
    op->add_chain(j);
  }
  *op->mutable_target() = Vec(-5, 15, 5);
  return op;
}

v1::FabrikTreeIkOp* FabrikTree(v1::SolveRequest& r) {
  v1::FabrikTreeIkOp* op = AddOp(r)->mutable_fabrik_tree_ik();
  op->set_root("Chest2");
  for (const char* j : {"LeftWrist", "RightWrist"}) {
    v1::FabrikEffector* e = op->add_effectors();
    e->set_joint(j);
    *e->mutable_target() = Vec(0, 20, 10);
  }
  return op;
}

v1::FullBodyCcdOp* FullBodyCcd(v1::SolveRequest& r) {
  v1::FullBodyCcdOp* op = AddOp(r)->mutable_full_body_ccd();
  v1::FullBodyCcdEffector* e = op->add_effectors();
  e->set_joint("LeftAnkle");
  *e->mutable_target() = Vec(3, 0, 5);
  return op;
}

v1::FullBodyBipedIkOp* Biped(v1::SolveRequest& r) {
  v1::FullBodyBipedIkOp* op = AddOp(r)->mutable_full_body_biped_ik();
  v1::BipedEffector* e = op->add_effectors();
  e->set_id(v1::BIPED_EFFECTOR_LEFT_HAND);
  *e->mutable_position() = Vec(10, 15, 5);
  e->set_position_weight(1.0f);
  return op;
}

v1::SpringBonesOp* Spring(v1::SolveRequest& r) {
  v1::SpringBonesOp* op = AddOp(r)->mutable_spring_bones();
  op->mutable_rig()->add_root_joints("LeftShoulder");
  return op;
}

v1::BlendOp* Blend(v1::SolveRequest& r) {
  v1::BlendOp* op = AddOp(r)->mutable_blend();
  for (float time : {0.25f, 1.5f}) {
    v1::BlendLayer* layer = op->add_layers();
    layer->mutable_source()->mutable_clip()->set_clip("walk");
    layer->mutable_source()->mutable_clip()->set_time(time);
    layer->set_weight(0.5f);
  }
  return op;
}

v1::AdditiveOp* Additive(v1::SolveRequest& r) {
  v1::AdditiveOp* op = AddOp(r)->mutable_additive();
  op->mutable_base()->set_rest(true);
  op->mutable_additive()->mutable_clip()->set_clip("walk");
  op->set_weight(0.5f);
  return op;
}

v1::ClipSample* Sample(v1::SolveRequest& r) {
  v1::ClipSample* sample = AddOp(r)->mutable_sample_clip()->mutable_sample();
  sample->set_clip("walk");
  sample->set_time(0.5f);
  return sample;
}

v1::CrossfadeOp* Crossfade(v1::SolveRequest& r) {
  v1::CrossfadeOp* op = AddOp(r)->mutable_crossfade();
  op->add_commands()->set_play("walk");
  return op;
}

// The walk clip's first track of joint `joint`.
v1::JointTracks* ClipJoint(v1::SolveRequest& r, int joint) {
  for (v1::JointTracks& tracks : *r.mutable_clips(0)->mutable_joints()) {
    if (tracks.joint() == joint) return &tracks;
  }
  ADD_FAILURE() << "the walk clip has no tracks for joint " << joint;
  return r.mutable_clips(0)->add_joints();
}

// A skeleton of `n` joints (a chain) with identity rest transforms.
v1::Skeleton ChainSkeleton(int n, bool with_rest_pose) {
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
std::vector<v1::SessionRequest> SessionSetup() {
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

v1::SessionRequest FrameFor(uint64_t sequence, const std::string& character) {
  v1::SessionRequest request;
  request.mutable_frame()->set_sequence(sequence);
  request.mutable_frame()->set_dt(kDt);
  request.mutable_frame()->add_characters()->set_character_id(character);
  return request;
}

v1::CharacterFrame& FrameCharacter(v1::SessionRequest& request) {
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
bool WellFormed(const v1::Pose& pose) {
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
Outcome CallSolve(v1::PoseWire::Stub& stub, const v1::SolveRequest& request,
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
Outcome RunSession(v1::PoseWire::Stub& stub,
                   const std::vector<v1::SessionRequest>& messages) {
  grpc::ClientContext context;
  context.set_deadline(Deadline());
  std::unique_ptr<Stream> stream = stub.Session(&context);
  std::vector<v1::SessionRequest> all = SessionSetup();
  all.insert(all.end(), messages.begin(), messages.end());
  Outcome last;
  uint64_t max_sequence = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    v1::SessionResponse response;
    if (!stream->Write(all[i]) || !stream->Read(&response)) {
      return FromStatus(stream->Finish());
    }
    if (all[i].has_frame()) {
      max_sequence = std::max(max_sequence, all[i].frame().sequence());
    }
    last = FromResponse(response);
    if (i + 1 < all.size() && last.code != grpc::StatusCode::OK) {
      return {grpc::StatusCode::UNKNOWN,
              absl::StrCat("message ", i,
                           " before the bad one failed: ", last.message)};
    }
  }
  v1::SessionRequest good = FrameFor(max_sequence + 1, "hero");
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

BadInput SolveRow(std::string name, std::string input,
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
BadInput SolveSameRow(std::string name, std::string input,
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

BadInput SessionRow(std::string name, std::string input,
                    std::function<std::vector<v1::SessionRequest>()> messages,
                    grpc::StatusCode code, std::string message) {
  return {std::move(name), std::move(input),
          [messages = std::move(messages)](v1::PoseWire::Stub& stub) {
            return RunSession(stub, messages());
          },
          code, std::move(message)};
}

// A frame for "hero" with `edit` applied to its character entry.
BadInput FrameRow(std::string name, std::string input,
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
BadInput SetupAgainRow(std::string name, std::string input, int index,
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
Outcome CallRaw(const std::shared_ptr<grpc::Channel>& channel,
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
Outcome RawSession(const std::shared_ptr<grpc::Channel>& channel,
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

std::vector<BadInput> Catalogue(std::shared_ptr<grpc::Channel> channel) {
  std::vector<BadInput> rows;
  auto add = [&rows](BadInput row) { rows.push_back(std::move(row)); };

  // ---- skeletons
  add(SolveRow(
      "skeleton_rest_translation_nan", "rest_pose tx of joint 3 is NaN",
      [](auto& r) {
        HeroSkeleton(r).set_rest_pose(3 * kFloatsPerJoint + kTx, kNaN);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].skeleton.skeleton: skeleton.rest_pose[3] 'LeftKnee': "
      "translation has a NaN"));
  add(SolveRow(
      "skeleton_rest_rotation_inf", "rest_pose qw of joint 0 is +Inf",
      [](auto& r) { HeroSkeleton(r).set_rest_pose(kQw, kInf); },
      StatusCode::INVALID_ARGUMENT,
      "skeleton.rest_pose[0] 'Hips': rotation has a NaN or infinite"));
  add(SolveRow(
      "skeleton_rest_scale_nan", "rest_pose sy of joint 30 is NaN",
      [](auto& r) {
        HeroSkeleton(r).set_rest_pose(30 * kFloatsPerJoint + kSx + 1, kNaN);
      },
      StatusCode::INVALID_ARGUMENT,
      "skeleton.rest_pose[30] 'RThumb': scale has a NaN or infinite"));
  add(SolveRow(
      "skeleton_rest_zero_quaternion", "rest rotation of joint 2 is (0,0,0,0)",
      [](auto& r) {
        for (int k = kQx; k <= kQw; ++k) {
          HeroSkeleton(r).set_rest_pose(2 * kFloatsPerJoint + k, 0.0f);
        }
      },
      StatusCode::INVALID_ARGUMENT,
      "skeleton.rest_pose[2] 'LeftHip': rotation norm 0 is not 1"));
  add(SolveRow(
      "skeleton_parent_cycle", "parents[2] = 3 and parents[3] = 2",
      [](auto& r) {
        HeroSkeleton(r).set_parents(2, 3);
        HeroSkeleton(r).set_parents(3, 2);
      },
      StatusCode::INVALID_ARGUMENT,
      "skeleton.parents[2] 'LeftHip': parent 3 does not come before"));
  add(SolveRow(
      "skeleton_self_parent", "parents[4] = 4",
      [](auto& r) { HeroSkeleton(r).set_parents(4, 4); },
      StatusCode::INVALID_ARGUMENT,
      "skeleton.parents[4] 'LeftAnkle': parent 4 does not come before"));
  add(SolveRow(
      "skeleton_parent_out_of_range", "parents[5] = 99 (31 joints)",
      [](auto& r) { HeroSkeleton(r).set_parents(5, 99); },
      StatusCode::INVALID_ARGUMENT,
      "skeleton.parents[5] 'LeftToe': parent 99 is out of range [-1, 31)"));
  add(SolveRow(
      "skeleton_parent_negative", "parents[1] = -7",
      [](auto& r) { HeroSkeleton(r).set_parents(1, -7); },
      StatusCode::INVALID_ARGUMENT,
      "skeleton.parents[1] 'LHipJoint': parent -7 is out of range"));
  add(SolveRow(
      "skeleton_zero_joints", "a skeleton with no joints",
      [](auto& r) { HeroSkeleton(r).Clear(); }, StatusCode::INVALID_ARGUMENT,
      "characters[0].skeleton.skeleton: skeleton: no joints"));
  add(SolveRow(
      "skeleton_million_joints", "1,000,000 joint names and parents",
      [](auto& r) {
        // Unnamed joints all parented to 0 keep the message under the
        // 4 MiB limit, so it is the joint limit that answers.
        v1::Skeleton& skeleton = HeroSkeleton(r);
        skeleton.Clear();
        skeleton.mutable_joint_names()->Reserve(1000000);
        for (int j = 0; j < 1000000; ++j) skeleton.add_joint_names();
        skeleton.mutable_parents()->Resize(1000000, 0);
      },
      StatusCode::RESOURCE_EXHAUSTED,
      "1000000 joints exceed this server's limit of 1024 (GetInfo "
      "limits.max_joints_per_skeleton)"));
  add(SolveRow(
      "skeleton_one_over_joint_limit", "1,025 well-formed joints",
      [](auto& r) { HeroSkeleton(r) = ChainSkeleton(1025, true); },
      StatusCode::RESOURCE_EXHAUSTED,
      "1025 joints exceed this server's limit of 1024"));
  add(SolveRow(
      "skeleton_names_parents_mismatch", "31 parents, 30 joint names",
      [](auto& r) { HeroSkeleton(r).mutable_joint_names()->RemoveLast(); },
      StatusCode::INVALID_ARGUMENT,
      "skeleton.joint_names: 30 names for 31 parents"));
  add(SolveRow(
      "skeleton_rest_pose_short", "rest_pose one float short",
      [](auto& r) { HeroSkeleton(r).mutable_rest_pose()->RemoveLast(); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].skeleton.skeleton.rest_pose: 309 floats for 31 joints "
      "(expected 310"));
  add(SolveRow(
      "skeleton_duplicate_joint_name", "joint 6 renamed 'Hips'",
      [](auto& r) { HeroSkeleton(r).set_joint_names(6, "Hips"); },
      StatusCode::INVALID_ARGUMENT,
      "skeleton.joint_names[6] 'Hips': duplicate of joint 0"));
  add(SolveRow(
      "skeleton_empty_joint_name", "joint 7 named ''",
      [](auto& r) { HeroSkeleton(r).set_joint_names(7, ""); },
      StatusCode::INVALID_ARGUMENT, "skeleton.joint_names[7]: empty name"));
  add(SolveRow(
      "skeleton_ref_unset", "SkeletonRef with neither skeleton nor hash",
      [](auto& r) { Hero(r).clear_skeleton(); }, StatusCode::INVALID_ARGUMENT,
      "characters[0].skeleton: set either skeleton or hash"));
  add(SolveRow(
      "skeleton_unknown_hash", "SkeletonRef.hash never sent to this server",
      [](auto& r) {
        Hero(r).mutable_skeleton()->set_hash(std::string(64, 'a'));
      },
      StatusCode::NOT_FOUND,
      "characters[0].skeleton.hash: this server does not know skeleton"));

  // ---- the character's input pose and placement
  add(SolveRow(
      "pose_translation_nan", "input pose tx of joint 0 is NaN",
      [](auto& r) { *Hero(r).mutable_pose() = RestWith(0, kTx, kNaN); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].pose[0] 'Hips': translation has a NaN"));
  add(SolveRow(
      "pose_translation_inf", "input pose tz of joint 12 is -Inf",
      [](auto& r) { *Hero(r).mutable_pose() = RestWith(12, kTx + 2, -kInf); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].pose[12] 'Chest': translation has a NaN or infinite"));
  add(SolveRow(
      "pose_rotation_nan", "input pose qy of joint 9 is NaN",
      [](auto& r) { *Hero(r).mutable_pose() = RestWith(9, kQx + 1, kNaN); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].pose[9] 'RightAnkle': rotation has a NaN"));
  add(SolveRow(
      "pose_scale_inf", "input pose sx of joint 17 is +Inf",
      [](auto& r) { *Hero(r).mutable_pose() = RestWith(17, kSx, kInf); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].pose[17] 'LeftCollar': scale has a NaN or infinite"));
  add(SolveRow(
      "pose_zero_quaternion", "input rotation of joint 3 is (0,0,0,0)",
      [](auto& r) {
        std::vector<float> f = WalkRest();
        std::fill_n(f.begin() + 3 * kFloatsPerJoint + kQx, 4, 0.0f);
        SetPose(f, Hero(r).mutable_pose());
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].pose[3] 'LeftKnee': rotation norm 0 is not 1"));
  add(SolveRow(
      "pose_non_unit_quaternion", "input rotation of joint 4 has norm 2",
      [](auto& r) { *Hero(r).mutable_pose() = RestWith(4, kQw, 2.0f); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].pose[4] 'LeftAnkle': rotation norm 2 is not 1"));
  add(SolveRow(
      "pose_size_mismatch", "input pose of 30 joints for a 31-joint skeleton",
      [](auto& r) {
        std::vector<float> f = WalkRest();
        f.resize(30 * kFloatsPerJoint);
        SetPose(f, Hero(r).mutable_pose());
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].pose: 300 floats for 31 joints (expected 310"));
  add(SolveRow(
      "pose_not_whole_joints", "input pose of 315 floats",
      [](auto& r) {
        std::vector<float> f = WalkRest();
        f.resize(f.size() + 5, 1.0f);
        SetPose(f, Hero(r).mutable_pose());
      },
      StatusCode::INVALID_ARGUMENT, "characters[0].pose: 315 floats"));
  add(SolveRow(
      "root_translation_nan", "root placement translation.y is NaN",
      [](auto& r) {
        Hero(r).mutable_root()->mutable_translation()->set_y(kNaN);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].root.translation: NaN or infinite component"));
  add(SolveRow(
      "root_zero_quaternion", "root placement rotation set to (0,0,0,0)",
      [](auto& r) {
        SetQuat(0, 0, 0, 0, Hero(r).mutable_root()->mutable_rotation());
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].root.rotation: rotation norm 0 is not 1"));
  add(SolveRow(
      "root_scale_inf", "root placement scale.z is +Inf",
      [](auto& r) { Hero(r).mutable_root()->mutable_scale()->set_z(kInf); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].root.scale: NaN or infinite component"));

  // ---- request-level fields
  add(SolveRow(
      "dt_nan", "SolveRequest.dt is NaN", [](auto& r) { r.set_dt(kNaN); },
      StatusCode::INVALID_ARGUMENT, "dt: nan must be finite and >= 0"));
  add(SolveRow(
      "dt_negative", "SolveRequest.dt is -0.016",
      [](auto& r) { r.set_dt(-0.016f); }, StatusCode::INVALID_ARGUMENT,
      "dt: -0.016 must be finite and >= 0"));
  add(SolveRow(
      "dt_inf", "SolveRequest.dt is +Inf", [](auto& r) { r.set_dt(kInf); },
      StatusCode::INVALID_ARGUMENT, "dt: inf must be finite and >= 0"));
  add(SolveRow(
      "too_many_characters", "9 characters (limit 8)",
      [](auto& r) {
        for (int i = 0; i < kMaxCharacters; ++i) *r.add_characters() = Hero(r);
      },
      StatusCode::RESOURCE_EXHAUSTED,
      "characters: 9 characters exceed this server's limit of 8"));
  add(SolveRow(
      "duplicate_clip_names", "two clips named 'walk'",
      [](auto& r) { *r.add_clips() = r.clips(0); },
      StatusCode::INVALID_ARGUMENT,
      "clips[1].name: 'walk' is used by an earlier clip"));

  // ---- clips (converted when an op first names them)
  add(SolveRow(
      "clip_unknown_name", "sample_clip names clip 'run'",
      [](auto& r) { Sample(r)->set_clip("run"); }, StatusCode::NOT_FOUND,
      "characters[0].ops[0].sample_clip.sample.clip: no clip named 'run'"));
  add(SolveRow(
      "clip_key_value_nan", "a rotation key of joint 0 is NaN",
      [](auto& r) {
        ClipJoint(r, 0)->mutable_rotation()->set_values(5, kNaN);
        Sample(r);
      },
      StatusCode::INVALID_ARGUMENT,
      "clips[0]: clip 'walk' joint 0 'Hips' rotation track: value 1 has a NaN "
      "or infinite component"));
  add(SolveRow(
      "clip_key_time_nan", "a translation key time of joint 0 is NaN",
      [](auto& r) {
        ClipJoint(r, 0)->mutable_translation()->set_times(1, kNaN);
        Sample(r);
      },
      StatusCode::INVALID_ARGUMENT,
      "clips[0]: clip 'walk' joint 0 'Hips' translation track: key 1 time nan "
      "is outside"));
  add(SolveRow(
      "clip_key_times_decreasing",
      "translation key 2 time set to 0 (not increasing)",
      [](auto& r) {
        ClipJoint(r, 0)->mutable_translation()->set_times(2, 0.0f);
        Sample(r);
      },
      StatusCode::INVALID_ARGUMENT,
      "clips[0]: clip 'walk' joint 0 'Hips' translation track: key 2 time 0 "
      "does not increase"));
  add(SolveRow(
      "clip_joint_out_of_range", "JointTracks.joint = 31 (31 joints)",
      [](auto& r) {
        r.mutable_clips(0)->mutable_joints(0)->set_joint(31);
        Sample(r);
      },
      StatusCode::INVALID_ARGUMENT,
      "clips[0].joints[0].joint: 31 is out of range [0, 31)"));
  add(SolveRow(
      "clip_duration_negative", "Clip.duration = -1",
      [](auto& r) {
        r.mutable_clips(0)->set_duration(-1.0f);
        Sample(r);
      },
      StatusCode::INVALID_ARGUMENT,
      "clips[0]: clip 'walk': duration -1 must be finite and non-negative"));
  add(SolveRow(
      "clip_values_not_whole", "a rotation track with 4n+1 floats",
      [](auto& r) {
        ClipJoint(r, 0)->mutable_rotation()->add_values(0.0f);
        Sample(r);
      },
      StatusCode::INVALID_ARGUMENT,
      "clips[0].joints[0].rotation.values: 3977 floats is not a multiple of "
      "4"));
  add(SolveRow(
      "clip_unknown_interpolation", "Track.interpolation = 99",
      [](auto& r) {
        ClipJoint(r, 0)->mutable_rotation()->set_interpolation(
            static_cast<v1::Interpolation>(99));
        Sample(r);
      },
      StatusCode::INVALID_ARGUMENT,
      "clips[0].joints[0].rotation.interpolation: unknown value 99"));
  add(SolveRow(
      "sample_time_nan", "sample_clip.time is NaN",
      [](auto& r) { Sample(r)->set_time(kNaN); }, StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].sample_clip.sample: sampling.time: nan is not "
      "finite"));
  add(SolveSameRow(
      "sample_time_huge", "sample_clip.time 1e30 (finite: wrapped by LOOP)",
      [](auto& r) { Sample(r)->set_time(1e30f); },
      [](auto& r) {
        // The same wrap, done here: 1e30 modulo the clip's duration.
        const float duration = r.clips(0).duration();
        Sample(r)->set_time(std::fmod(1e30f, duration));
      }));
  add(SolveRow(
      "sample_unknown_playback_mode", "ClipSample.mode = 7",
      [](auto& r) { Sample(r)->set_mode(static_cast<v1::PlaybackMode>(7)); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].sample_clip.sample.mode: unknown value 7"));
  add(SolveRow(
      "sample_unknown_rotation_interpolation",
      "ClipSample.rotation_interpolation = 5",
      [](auto& r) {
        Sample(r)->set_rotation_interpolation(
            static_cast<v1::RotationInterpolation>(5));
      },
      StatusCode::INVALID_ARGUMENT,
      "sample_clip.sample.rotation_interpolation: unknown value 5"));

  // ---- the operation oneof
  add(SolveRow(
      "op_empty_oneof", "an Operation with no op set",
      [](auto& r) { AddOp(r); }, StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0]: no operation set"));
  add(SolveRow(
      "op_unknown_to_this_server", "an Operation with only field 99 set",
      [](auto& r) {
        v1::Operation* op = AddOp(r);
        op->GetReflection()->MutableUnknownFields(op)->AddVarint(99, 1);
      },
      StatusCode::UNIMPLEMENTED,
      "characters[0].ops[0]: an operation this server does not implement"));

  // ---- blend and additive weights
  add(SolveRow(
      "blend_no_layers", "blend with no layers",
      [](auto& r) { AddOp(r)->mutable_blend(); }, StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].blend.layers: at least one layer is required"));
  add(SolveRow(
      "blend_weight_nan", "blend layer 1 weight NaN",
      [](auto& r) { Blend(r)->mutable_layers(1)->set_weight(kNaN); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].blend: blending.layers[1].weight: nan is not "
      "finite"));
  add(SolveRow(
      "blend_weight_inf", "blend layer 0 weight +Inf",
      [](auto& r) { Blend(r)->mutable_layers(0)->set_weight(kInf); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].blend: blending.layers[0].weight: inf is not "
      "finite"));
  add(SolveRow(
      "blend_weights_overflow", "two blend layers of weight 3e38 (sum +Inf)",
      [](auto& r) {
        v1::BlendOp* op = Blend(r);
        op->mutable_layers(0)->set_weight(3e38f);
        op->mutable_layers(1)->set_weight(3e38f);
      },
      StatusCode::INVALID_ARGUMENT,
      "blending.layers[0].weight: 3e+38 exceeds the largest accepted weight"));
  add(SolveSameRow(
      "blend_weight_negative",
      "blend layer 1 weight -3 (counts as 0: layer 0 alone)",
      [](auto& r) { Blend(r)->mutable_layers(1)->set_weight(-3.0f); },
      [](auto& r) { Blend(r)->mutable_layers(1)->set_weight(0.0f); }));
  add(SolveRow(
      "blend_joint_weights_count", "joint_weights of 5 for 31 joints",
      [](auto& r) {
        Blend(r)->mutable_layers(0)->mutable_joint_weights()->Resize(5, 1.0f);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].blend.layers[0].joint_weights: 5 weights for 31 "
      "joints"));
  add(SolveRow(
      "blend_joint_weight_nan", "joint_weights[3] is NaN",
      [](auto& r) {
        v1::BlendLayer* layer = Blend(r)->mutable_layers(0);
        layer->mutable_joint_weights()->Resize(31, 1.0f);
        layer->set_joint_weights(3, kNaN);
      },
      StatusCode::INVALID_ARGUMENT,
      "blending.layers[0].joint_weights[3] 'LeftKnee': nan is not finite"));
  add(SolveRow(
      "blend_base_layer_out_of_range", "base_layer = 7 with 2 layers",
      [](auto& r) { Blend(r)->set_base_layer(7); },
      StatusCode::INVALID_ARGUMENT,
      "blending.base_layer: 7 is out of range [-1, 2)"));
  add(SolveRow(
      "blend_threshold_nan", "threshold NaN",
      [](auto& r) { Blend(r)->set_threshold(kNaN); },
      StatusCode::INVALID_ARGUMENT,
      "blending.threshold: nan must be finite and non-negative"));
  add(SolveRow(
      "blend_root_unknown_joint", "blend_root 'Tail'",
      [](auto& r) { Blend(r)->set_blend_root("Tail"); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].blend.blend_root: no joint named 'Tail'"));
  add(SolveRow(
      "blend_source_unset", "a layer with no source",
      [](auto& r) { Blend(r)->mutable_layers(0)->clear_source(); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].blend.layers[0].source: no source set"));
  add(SolveRow(
      "blend_source_pose_wrong_size", "a layer's explicit pose of 20 floats",
      [](auto& r) {
        v1::Pose* pose =
            Blend(r)->mutable_layers(0)->mutable_source()->mutable_pose();
        pose->mutable_transforms()->Resize(20, 0.0f);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].blend.layers[0].source.pose: 20 floats"));
  add(SolveRow(
      "additive_weight_above_one", "additive weight 2 (range [-1, 1])",
      [](auto& r) { Additive(r)->set_weight(2.0f); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].additive: additive.weight: 2 is not in [-1, 1]"));
  add(SolveRow(
      "additive_weight_huge_negative", "additive weight -1e30",
      [](auto& r) { Additive(r)->set_weight(-1e30f); },
      StatusCode::INVALID_ARGUMENT,
      "additive.weight: -1e+30 is not in [-1, 1]"));
  add(SolveRow(
      "additive_weight_nan", "additive weight NaN",
      [](auto& r) { Additive(r)->set_weight(kNaN); },
      StatusCode::INVALID_ARGUMENT, "additive.weight: nan is not in [-1, 1]"));

  // ---- crossfade and its state
  add(SolveRow(
      "crossfade_unknown_clip", "crossfade play 'run'",
      [](auto& r) { Crossfade(r)->mutable_commands(0)->set_play("run"); },
      StatusCode::NOT_FOUND,
      "characters[0].ops[0].crossfade.commands[0].play: no clip named 'run'"));
  add(SolveRow(
      "crossfade_negative_fade", "fade_to with fade_seconds -1",
      [](auto& r) {
        v1::FadeTo* fade = Crossfade(r)->add_commands()->mutable_fade_to();
        fade->set_clip("walk");
        fade->set_fade_seconds(-1.0f);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].crossfade.commands[1].fade_to: "
      "crossfade.fade_to.duration: -1 must be finite"));
  add(SolveRow(
      "crossfade_fade_nan", "fade_to with fade_seconds NaN",
      [](auto& r) {
        v1::FadeTo* fade = Crossfade(r)->add_commands()->mutable_fade_to();
        fade->set_clip("walk");
        fade->set_fade_seconds(kNaN);
      },
      StatusCode::INVALID_ARGUMENT,
      "crossfade.fade_to.duration: nan must be finite"));
  add(SolveRow(
      "crossfade_unknown_fade_curve", "FadeTo.curve = 9",
      [](auto& r) {
        v1::FadeTo* fade = Crossfade(r)->add_commands()->mutable_fade_to();
        fade->set_clip("walk");
        fade->set_fade_seconds(0.2f);
        fade->set_curve(static_cast<v1::FadeCurve>(9));
      },
      StatusCode::INVALID_ARGUMENT,
      "crossfade.commands[1].fade_to.curve: unknown value 9"));
  add(SolveRow(
      "crossfade_command_unset", "a CrossfadeCommand with nothing set",
      [](auto& r) { Crossfade(r)->add_commands(); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].crossfade.commands[1]: no command set"));
  add(SolveRow(
      "state_unknown_clip", "crossfade state playing clip 'run'",
      [](auto& r) {
        AddOp(r)->mutable_crossfade();
        (*Hero(r).mutable_state())["crossfade"].mutable_crossfade()->set_clip(
            "run");
      },
      StatusCode::NOT_FOUND,
      "characters[0].state[\"crossfade\"].clip: no clip named 'run'"));
  add(SolveRow(
      "state_time_nan", "crossfade state time NaN",
      [](auto& r) {
        AddOp(r)->mutable_crossfade();
        v1::CrossfadeState* s =
            (*Hero(r).mutable_state())["crossfade"].mutable_crossfade();
        s->set_clip("walk");
        s->set_time(kNaN);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].crossfade: crossfade.state.current.time: nan is "
      "not finite"));
  add(SolveRow(
      "state_too_many_fades", "crossfade state with 17 queued fades",
      [](auto& r) {
        AddOp(r)->mutable_crossfade();
        v1::CrossfadeState* s =
            (*Hero(r).mutable_state())["crossfade"].mutable_crossfade();
        s->set_clip("walk");
        for (int i = 0; i <= kMaxQueuedFades; ++i) {
          s->add_fades()->set_clip("walk");
        }
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].state[\"crossfade\"].fades: 17 fades exceed the limit "
      "of 16"));
  add(SolveRow(
      "state_fade_unknown_curve", "crossfade state fade with curve 4",
      [](auto& r) {
        AddOp(r)->mutable_crossfade();
        v1::CrossfadeState* s =
            (*Hero(r).mutable_state())["crossfade"].mutable_crossfade();
        s->set_clip("walk");
        v1::PendingFade* fade = s->add_fades();
        fade->set_clip("walk");
        fade->set_duration(0.5f);
        fade->set_curve(static_cast<v1::FadeCurve>(4));
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].state[\"crossfade\"].fades[0].curve: unknown value 4"));
  add({"state_dynamics_of_another_rig",
       "spring state from a LeftShoulder rig sent to a RightShoulder rig",
       [](v1::PoseWire::Stub& stub) {
         v1::SolveRequest first = BaseSolve();
         Spring(first);
         v1::SolveResponse response;
         if (Outcome o = CallSolve(stub, first, &response);
             o.code != StatusCode::OK) {
           return Outcome{StatusCode::UNKNOWN,
                          absl::StrCat("the first frame failed: ", o.message)};
         }
         v1::SolveRequest second = BaseSolve();
         Spring(second)->mutable_rig()->set_root_joints(0, "RightShoulder");
         *Hero(second).mutable_state() = response.characters(0).state();
         return CallSolve(stub, second, &response);
       },
       StatusCode::INVALID_ARGUMENT,
       "spring_bones.state_in: made for a different rig"});
  add(SolveRow(
      "state_entry_empty", "a state map entry with no state",
      [](auto& r) { (*Hero(r).mutable_state())["x"]; },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].state[\"x\"]: empty state entry"));
  add(SolveRow(
      "state_dynamics_garbage", "dynamics state of 7 arbitrary bytes",
      [](auto& r) {
        Spring(r);
        (*Hero(r).mutable_state())["spring_bones"].set_dynamics("garbage");
      },
      StatusCode::INVALID_ARGUMENT,
      "dynamics_state: 7 bytes is shorter than the 72-byte header"));

  // ---- chain IK
  add(SolveRow(
      "two_bone_target_nan", "two_bone_ik target.x NaN",
      [](auto& r) { TwoBone(r)->mutable_target()->set_x(kNaN); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].two_bone_ik.target: NaN or infinite component"));
  add(SolveRow(
      "two_bone_target_missing", "two_bone_ik without a target",
      [](auto& r) { TwoBone(r)->clear_target(); }, StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].two_bone_ik.target: required"));
  add(SolveRow(
      "two_bone_unknown_joint", "two_bone_ik mid_joint 'Knee'",
      [](auto& r) { TwoBone(r)->set_mid_joint("Knee"); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].two_bone_ik.mid_joint: no joint named 'Knee'"));
  add(SolveRow(
      "two_bone_not_a_chain", "two_bone_ik LeftHip, RightKnee, RightAnkle",
      [](auto& r) { TwoBone(r)->set_mid_joint("RightKnee"); },
      StatusCode::INVALID_ARGUMENT,
      "two_bone_ik.mid_joint: joint 8 'RightKnee' is not a descendant of "
      "start_j"));
  add(SolveRow(
      "two_bone_pole_inf", "two_bone_ik pole_vector.z -Inf",
      [](auto& r) { TwoBone(r)->mutable_pole_vector()->set_z(-kInf); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].two_bone_ik.pole_vector: NaN or infinite"));
  add(SolveRow(
      "two_bone_end_rotation_zero", "two_bone_ik end_rotation (0,0,0,0)",
      [](auto& r) { SetQuat(0, 0, 0, 0, TwoBone(r)->mutable_end_rotation()); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].two_bone_ik.end_rotation: rotation norm 0"));
  add(SolveRow(
      "two_bone_end_rotation_non_unit", "two_bone_ik end_rotation norm 0.5",
      [](auto& r) {
        SetQuat(0, 0, 0, 0.5f, TwoBone(r)->mutable_end_rotation());
      },
      StatusCode::INVALID_ARGUMENT,
      "two_bone_ik.end_rotation: rotation norm 0.5 is not 1"));
  add(SolveRow(
      "two_bone_weight_nan", "two_bone_ik weight NaN",
      [](auto& r) { TwoBone(r)->set_weight(kNaN); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].two_bone_ik: two_bone_ik.weight"));
  add(SolveSameRow(
      "two_bone_weight_negative",
      "two_bone_ik weight -5 (clamped to 0: the input pose)",
      [](auto& r) { TwoBone(r)->set_weight(-5.0f); }, [](auto&) {}));
  add(SolveSameRow(
      "two_bone_weight_huge", "two_bone_ik weight 1e38 (clamped to 1)",
      [](auto& r) { TwoBone(r)->set_weight(1e38f); },
      [](auto& r) { TwoBone(r)->set_weight(1.0f); }));
  add(SolveRow(
      "two_bone_soften_out_of_range", "two_bone_ik soften 1.5",
      [](auto& r) { TwoBone(r)->set_soften(1.5f); },
      StatusCode::INVALID_ARGUMENT,
      "two_bone_ik.soften: 1.5 is not in [0, 1]"));
  add(SolveRow(
      "two_bone_stretch_below_one", "two_bone_ik stretch, max_stretch 0.5",
      [](auto& r) {
        v1::TwoBoneIkOp* op = TwoBone(r);
        op->set_stretch(true);
        op->set_max_stretch(0.5f);
      },
      StatusCode::INVALID_ARGUMENT,
      "two_bone_ik.max_stretch: 0.5 is not a finite ratio >= 1"));
  add(SolveRow(
      "two_bone_zero_mid_axis", "two_bone_ik mid_axis (0,0,0)",
      [](auto& r) { *TwoBone(r)->mutable_mid_axis() = Vec(0, 0, 0); },
      StatusCode::INVALID_ARGUMENT, "two_bone_ik.mid_axis: zero length"));
  add(SolveRow(
      "two_bone_zero_length_bone",
      "two_bone_ik Hips, LHipJoint, LeftHip (Hips-LHipJoint has length 0)",
      [](auto& r) {
        v1::TwoBoneIkOp* op = TwoBone(r);
        op->set_start_joint("Hips");
        op->set_mid_joint("LHipJoint");
        op->set_end_joint("LeftHip");
      },
      StatusCode::OK, ""));
  add(SolveRow(
      "two_bone_all_bones_zero_length",
      "two_bone_ik on a 3-joint skeleton whose joints all sit at the origin",
      [](auto& r) {
        HeroSkeleton(r) = ChainSkeleton(3, true);
        r.clear_clips();
        v1::TwoBoneIkOp* op = TwoBone(r);
        op->set_start_joint("j0");
        op->set_mid_joint("j1");
        op->set_end_joint("j2");
      },
      StatusCode::OK, ""));
  add(SolveRow(
      "fabrik_zero_length_bone",
      "fabrik_ik chain Hips, LHipJoint, LeftHip (first bone of length 0)",
      [](auto& r) {
        v1::FabrikIkOp* op = Fabrik(r);
        op->set_chain(0, "Hips");
        op->set_chain(1, "LHipJoint");
        op->set_chain(2, "LeftHip");
      },
      StatusCode::OK, ""));
  add(SolveRow(
      "ccd_all_bones_zero_length",
      "ccd_ik on a 4-joint chain whose joints all sit at the origin",
      [](auto& r) {
        HeroSkeleton(r) = ChainSkeleton(4, true);
        r.clear_clips();
        v1::CcdIkOp* op = Ccd(r);
        op->clear_chain();
        for (const char* j : {"j0", "j1", "j2", "j3"}) op->add_chain(j);
      },
      StatusCode::OK, ""));
  add(SolveRow(
      "aim_zero_forward", "aim_ik forward (0,0,0)",
      [](auto& r) { *Aim(r)->mutable_forward() = Vec(0, 0, 0); },
      StatusCode::INVALID_ARGUMENT,
      "aim_ik.forward: zero length; give the axis of joint 16 'Head'"));
  add(SolveRow(
      "aim_clamp_smoothing_out_of_range", "aim_ik clamp_smoothing 5",
      [](auto& r) { Aim(r)->set_clamp_smoothing(5); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].aim_ik.clamp_smoothing: 5 is not in [0, 2]"));
  add(SolveRow(
      "aim_offset_nan", "aim_ik offset.y NaN",
      [](auto& r) { Aim(r)->mutable_offset()->set_y(kNaN); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].aim_ik.offset: NaN or infinite"));
  add(SolveRow(
      "ccd_chain_not_parent_to_child",
      "ccd_ik chain LeftShoulder, LeftWrist, LeftElbow",
      [](auto& r) {
        v1::CcdIkOp* op = Ccd(r);
        op->set_chain(1, "LeftWrist");
        op->set_chain(2, "LeftElbow");
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].ccd_ik.chain[1]: joint 20 'LeftWrist' is not a "
      "child of"));
  add(SolveRow(
      "ccd_chain_empty", "ccd_ik with an empty chain",
      [](auto& r) { Ccd(r)->clear_chain(); }, StatusCode::INVALID_ARGUMENT,
      "ccd_ik.chain: 0 joints; a chain needs at least 2"));
  add(SolveRow(
      "ccd_chain_unknown_joint", "ccd_ik chain[2] 'LeftPaw'",
      [](auto& r) { Ccd(r)->set_chain(2, "LeftPaw"); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].ccd_ik.chain[2]: no joint named 'LeftPaw'"));
  add(SolveRow(
      "ccd_iterations_1e9", "ccd_ik max_iterations 1,000,000,000",
      [](auto& r) { Ccd(r)->set_max_iterations(1000000000); },
      StatusCode::RESOURCE_EXHAUSTED,
      "characters[0].ops[0].ccd_ik.max_iterations: 1000000000 iterations "
      "exceed this server's limit of 100"));
  add(SolveSameRow(
      "ccd_iterations_zero", "ccd_ik max_iterations 0 (only measures)",
      [](auto& r) { Ccd(r)->set_max_iterations(0); }, [](auto&) {}));
  add(SolveRow(
      "ccd_tolerance_negative", "ccd_ik tolerance.absolute -1",
      [](auto& r) { Ccd(r)->mutable_tolerance()->set_absolute(-1.0f); },
      StatusCode::INVALID_ARGUMENT,
      "ccd_ik.tolerance.value: -1 must be finite and >= 0"));
  add(SolveSameRow(
      "ccd_weight_huge", "ccd_ik weight 1e30 (clamped: same pose as weight 1)",
      [](auto& r) { Ccd(r)->set_weight(1e30f); },
      [](auto& r) { Ccd(r)->set_weight(1.0f); }));
  add(SolveSameRow(
      "ccd_weight_negative", "ccd_ik weight -2 (clamped: the input pose)",
      [](auto& r) { Ccd(r)->set_weight(-2.0f); }, [](auto&) {}));
  add(SolveRow(
      "ccd_joint_weights_count", "ccd_ik joint_weights of 2 for a 3-chain",
      [](auto& r) {
        v1::CcdIkOp* op = Ccd(r);
        op->add_joint_weights(1.0f);
        op->add_joint_weights(1.0f);
      },
      StatusCode::INVALID_ARGUMENT,
      "ccd_ik.joint_weights: 2 weights for a chain of 3 joints"));
  add(SolveRow(
      "ccd_hinge_axis_nan", "ccd_ik hinge limit axis NaN",
      [](auto& r) {
        v1::JointLimitSpec* limit = Ccd(r)->add_limits();
        limit->set_joint("LeftElbow");
        *limit->mutable_hinge()->mutable_axis() = Vec(kNaN, 0, 1);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].ccd_ik.limits[0].hinge.axis: NaN or infinite"));
  add(SolveRow(
      "ccd_hinge_axis_zero", "ccd_ik hinge limit axis (0,0,0)",
      [](auto& r) {
        v1::JointLimitSpec* limit = Ccd(r)->add_limits();
        limit->set_joint("LeftElbow");
        *limit->mutable_hinge()->mutable_axis() = Vec(0, 0, 0);
      },
      StatusCode::INVALID_ARGUMENT,
      "'LeftElbow': axis is not a finite unit vector"));
  add(SolveRow(
      "ccd_limit_unknown_euler_order", "ccd_ik euler limit order = 42",
      [](auto& r) {
        v1::JointLimitSpec* limit = Ccd(r)->add_limits();
        limit->set_joint("LeftElbow");
        limit->mutable_euler()->set_order(static_cast<v1::EulerOrder>(42));
        *limit->mutable_euler()->mutable_min() = Vec(-1, -1, -1);
        *limit->mutable_euler()->mutable_max() = Vec(1, 1, 1);
      },
      StatusCode::INVALID_ARGUMENT,
      "ccd_ik.limits[0].euler.order: unknown value 42"));
  add(SolveRow(
      "ccd_limit_duplicate_joint", "ccd_ik two limits on LeftElbow",
      [](auto& r) {
        v1::CcdIkOp* op = Ccd(r);
        for (int i = 0; i < 2; ++i) {
          v1::JointLimitSpec* limit = op->add_limits();
          limit->set_joint("LeftElbow");
          *limit->mutable_hinge()->mutable_axis() = Vec(0, 0, 1);
        }
      },
      StatusCode::INVALID_ARGUMENT,
      "ccd_ik.limits[1].joint: 'LeftElbow' already has a limit"));
  add(SolveRow(
      "ccd_over_relaxation_20", "ccd_ik over_relaxation 20",
      [](auto& r) { Ccd(r)->set_over_relaxation(20.0f); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].ccd_ik: ccd_ik.over_relaxation: 20 is outside "
      "[0, 16]"));
  add(SolveRow(
      "fabrik_planar_limits_count",
      "fabrik_ik 2 planar limits for a 3-joint chain (1 interior joint)",
      [](auto& r) {
        v1::FabrikIkOp* op = Fabrik(r);
        *op->mutable_plane_normal() = Vec(0, 0, 1);
        op->add_planar_limits()->set_max(1.0f);
        op->add_planar_limits()->set_max(1.0f);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].fabrik_ik: fabrik_ik.planar_limits: 2 ranges for "
      "a chain of 3 joints"));
  add(SolveRow(
      "fabrik_over_relaxation_1", "fabrik_ik over_relaxation 1",
      [](auto& r) { Fabrik(r)->set_over_relaxation(1.0f); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].fabrik_ik: fabrik_ik.over_relaxation: 1 is "
      "outside [0, 1)"));
  add(SolveRow(
      "fabrik_iterations_1e9", "fabrik_ik max_iterations 1,000,000,000",
      [](auto& r) { Fabrik(r)->set_max_iterations(1000000000); },
      StatusCode::RESOURCE_EXHAUSTED,
      "fabrik_ik.max_iterations: 1000000000 iterations exceed"));
  add(SolveRow(
      "fabrik_tree_effector_outside_root",
      "fabrik_tree_ik root Chest2, effector LeftToe",
      [](auto& r) {
        FabrikTree(r)->mutable_effectors(0)->set_joint("LeftToe");
      },
      StatusCode::INVALID_ARGUMENT,
      "fabrik_tree_ik.effectors[0].joint: joint 5 'LeftToe' is not below"));
  add(SolveRow(
      "fabrik_tree_pull_negative", "fabrik_tree_ik effector pull -1",
      [](auto& r) { FabrikTree(r)->mutable_effectors(1)->set_pull(-1.0f); },
      StatusCode::INVALID_ARGUMENT,
      "fabrik_tree_ik.effectors[1].pull: -1 must be finite and > 0"));

  // ---- full body
  add(SolveRow(
      "full_body_ccd_target_inf", "full_body_ccd effector target.y +Inf",
      [](auto& r) {
        FullBodyCcd(r)->mutable_effectors(0)->mutable_target()->set_y(kInf);
      },
      StatusCode::INVALID_ARGUMENT,
      "full_body_ccd.effectors[0].target: NaN or infinite"));
  add(SolveSameRow(
      "full_body_ccd_joint_weight_two",
      "full_body_ccd joint_weights[3] = 2 (clamped: same as 1)",
      [](auto& r) {
        v1::FullBodyCcdOp* op = FullBodyCcd(r);
        op->mutable_joint_weights()->Resize(31, 1.0f);
        op->set_joint_weights(3, 2.0f);
      },
      [](auto& r) {
        FullBodyCcd(r)->mutable_joint_weights()->Resize(31, 1.0f);
      }));
  add(SolveRow(
      "full_body_ccd_joint_weight_nan", "full_body_ccd joint_weights[3] NaN",
      [](auto& r) {
        v1::FullBodyCcdOp* op = FullBodyCcd(r);
        op->mutable_joint_weights()->Resize(31, 1.0f);
        op->set_joint_weights(3, kNaN);
      },
      StatusCode::INVALID_ARGUMENT,
      "full_body_ccd.joint_weights[3] 'LeftKnee': nan is not finite"));
  add(SolveRow(
      "biped_iterations_1e9", "full_body_biped_ik iterations 1,000,000,000",
      [](auto& r) { Biped(r)->set_iterations(1000000000); },
      StatusCode::RESOURCE_EXHAUSTED,
      "full_body_biped_ik.iterations: 1000000000 iterations exceed this "
      "server's limit of 100 (GetInfo limits.max_solver_iterations)"));
  add(SolveRow(
      "biped_iterations_65",
      "full_body_biped_ik iterations 65 (documented: "
      "at most 64)",
      [](auto& r) { Biped(r)->set_iterations(65); },
      StatusCode::INVALID_ARGUMENT,
      "full_body_biped_ik.iterations: 65 is outside [0, 64]"));
  add(SolveRow(
      "biped_spine_iterations_zero",
      "full_body_biped_ik spine_iterations 0 "
      "(documented: [1, 16])",
      [](auto& r) { Biped(r)->set_spine_iterations(0); },
      StatusCode::INVALID_ARGUMENT, "full_body_biped_ik.spine_iterations: 0"));
  add(SolveRow(
      "biped_unknown_effector", "full_body_biped_ik effector id 42",
      [](auto& r) {
        Biped(r)->mutable_effectors(0)->set_id(
            static_cast<v1::BipedEffectorId>(42));
      },
      StatusCode::INVALID_ARGUMENT,
      "full_body_biped_ik.effectors[0].id: unknown effector 42"));
  add(SolveRow(
      "biped_effector_rotation_non_unit",
      "full_body_biped_ik effector rotation (1,1,1,1)",
      [](auto& r) {
        SetQuat(1, 1, 1, 1, Biped(r)->mutable_effectors(0)->mutable_rotation());
      },
      StatusCode::INVALID_ARGUMENT,
      "full_body_biped_ik.effectors[0].rotation: rotation norm 2 is not 1"));
  add(SolveRow(
      "biped_position_weight_nan", "full_body_biped_ik position_weight NaN",
      [](auto& r) {
        Biped(r)->mutable_effectors(0)->set_position_weight(kNaN);
      },
      StatusCode::INVALID_ARGUMENT,
      "full_body_biped_ik.effectors[left_hand].position_weight: nan"));
  add(SolveRow(
      "biped_mapping_unknown_joint",
      "full_body_biped_ik mapping pelvis 'Pelvis'",
      [](auto& r) {
        v1::FullBodyBipedIkOp* op = Biped(r);
        op->mutable_mapping()->set_pelvis("Pelvis");
      },
      StatusCode::INVALID_ARGUMENT,
      "full_body_biped_ik.mapping: biped_mapping.pelvis: no joint named "
      "'Pelvis'"));

  // ---- spring bones
  add(SolveRow(
      "spring_damping_nan", "spring_bones settings.damping NaN",
      [](auto& r) {
        Spring(r)->mutable_rig()->mutable_settings()->set_damping(kNaN);
      },
      StatusCode::INVALID_ARGUMENT,
      "spring_bones.rig: spring_rig.settings.damping: nan is outside [0, 1]"));
  add(SolveRow(
      "spring_stiffness_inf", "spring_bones settings.stiffness +Inf",
      [](auto& r) {
        Spring(r)->mutable_rig()->mutable_settings()->set_stiffness(kInf);
      },
      StatusCode::INVALID_ARGUMENT,
      "spring_rig.settings.stiffness: inf is outside [0, 1]"));
  add(SolveRow(
      "spring_curve_value_nan", "spring_bones curves.radius key value NaN",
      [](auto& r) {
        v1::CurveKey* key =
            Spring(r)->mutable_rig()->mutable_curves()->add_radius();
        key->set_position(0.5f);
        key->set_value(kNaN);
      },
      StatusCode::INVALID_ARGUMENT,
      "spring_rig.curves.radius[0]: NaN or infinite position or value"));
  add(SolveRow(
      "spring_unknown_root", "spring_bones root joint 'Ponytail'",
      [](auto& r) { Spring(r)->mutable_rig()->set_root_joints(0, "Ponytail"); },
      StatusCode::INVALID_ARGUMENT,
      "spring_rig.root_joints[0]: no joint named 'Ponytail'"));
  add(SolveRow(
      "spring_substeps_1e9", "spring_bones max_substeps 1,000,000,000",
      [](auto& r) { Spring(r)->mutable_rig()->set_max_substeps(1000000000); },
      StatusCode::RESOURCE_EXHAUSTED,
      "spring_bones.rig.max_substeps: 1000000000 exceeds this server's limit "
      "of 100"));
  add(SolveRow(
      "spring_substeps_negative", "spring_bones max_substeps -3",
      [](auto& r) { Spring(r)->mutable_rig()->set_max_substeps(-3); },
      StatusCode::INVALID_ARGUMENT,
      "spring_rig.max_substeps: -3 is outside [1, 64]"));
  add(SolveRow(
      "spring_rate_zero", "spring_bones target_rate_hz 0",
      [](auto& r) { Spring(r)->mutable_rig()->set_target_rate_hz(0.0f); },
      StatusCode::INVALID_ARGUMENT,
      "spring_rig.target_rate_hz: 0 is outside [1, 1000]"));
  add(SolveRow(
      "spring_unknown_tip_axis", "spring_bones rig.tip_axis = 17",
      [](auto& r) {
        Spring(r)->mutable_rig()->set_tip_axis(
            static_cast<v1::SpringTipAxis>(17));
      },
      StatusCode::INVALID_ARGUMENT,
      "spring_bones.rig.tip_axis: unknown value 17"));
  add(SolveRow(
      "spring_unknown_space", "spring_bones rig.space = 3",
      [](auto& r) {
        Spring(r)->mutable_rig()->set_space(
            static_cast<v1::SimulationSpace>(3));
      },
      StatusCode::INVALID_ARGUMENT, "spring_bones.rig.space: unknown value 3"));
  add(SolveRow(
      "spring_substeps_zero", "spring_bones max_substeps 0",
      [](auto& r) { Spring(r)->mutable_rig()->set_max_substeps(0); },
      StatusCode::INVALID_ARGUMENT,
      "spring_rig.max_substeps: 0 is outside [1, 64]"));
  add(SolveRow(
      "spring_unknown_teleport_response",
      "spring_bones rig.teleport_response = 2",
      [](auto& r) {
        Spring(r)->mutable_rig()->set_teleport_response(
            static_cast<v1::TeleportResponse>(2));
      },
      StatusCode::INVALID_ARGUMENT,
      "spring_bones.rig.teleport_response: unknown value 2"));
  add(SolveRow(
      "spring_dt_huge",
      "spring_bones with dt 1e9 s (steps capped, excess "
      "dropped with a warning)",
      [](auto& r) {
        r.set_dt(1e9f);
        Spring(r);
      },
      StatusCode::OK, ""));
  add(SolveRow(
      "spring_gravity_nan", "spring_bones gravity.y NaN",
      [](auto& r) { Spring(r)->mutable_gravity()->set_y(kNaN); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].spring_bones.gravity: NaN or infinite"));
  add(SolveRow(
      "spring_wind_speed_inf", "spring_bones wind.speed +Inf",
      [](auto& r) { Spring(r)->mutable_wind()->set_speed(kInf); },
      StatusCode::INVALID_ARGUMENT,
      "spring_bones.forces.wind.speed: NaN or infinite"));
  add(SolveRow(
      "spring_collider_radius_nan", "spring_bones sphere collider radius NaN",
      [](auto& r) { Spring(r)->add_colliders()->set_radius(kNaN); },
      StatusCode::INVALID_ARGUMENT,
      "spring_bones.colliders[0] (sphere).radius: nan is not a finite"));
  add(SolveRow(
      "spring_collider_unknown_shape", "spring_bones collider shape 8",
      [](auto& r) {
        Spring(r)->add_colliders()->set_shape(
            static_cast<v1::SpringCollider::Shape>(8));
      },
      StatusCode::INVALID_ARGUMENT,
      "spring_bones.colliders[0].shape: unknown value 8"));

  // ---- validate
  add(SolveRow(
      "validate_claimed_missing", "validate without a claimed pose",
      [](auto& r) { AddOp(r)->mutable_validate(); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].validate.claimed: the claimed pose is required"));
  add(SolveRow(
      "validate_tolerance_negative", "validate position_tolerance -1",
      [](auto& r) {
        v1::ValidateOp* op = AddOp(r)->mutable_validate();
        SetPose(WalkRest(), op->mutable_claimed());
        op->set_position_tolerance(-1.0f);
      },
      StatusCode::INVALID_ARGUMENT,
      "validate.position_tolerance: -1 must be finite and >= 0"));
  add(SolveRow(
      "validate_claimed_nan", "validate claimed pose with a NaN",
      [](auto& r) {
        *AddOp(r)->mutable_validate()->mutable_claimed() =
            RestWith(8, kTx, kNaN);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].validate.claimed[8] 'RightKnee': translation"));

  // ---- session registrations
  auto unchanged = [](v1::SessionRequest&) {};
  add(SetupAgainRow(
      "session_duplicate_skeleton", "register skeleton 'cmu' twice", 0,
      unchanged, StatusCode::ALREADY_EXISTS,
      "register_skeleton.id: skeleton 'cmu' is already registered"));
  add(SetupAgainRow("session_duplicate_clip", "register clip 'walk' twice", 1,
                    unchanged, StatusCode::ALREADY_EXISTS,
                    "register_clip.id: clip 'walk' is already registered"));
  add(SetupAgainRow(
      "session_duplicate_character", "register character 'hero' twice", 3,
      unchanged, StatusCode::ALREADY_EXISTS,
      "register_character.id: character 'hero' is already registered"));
  add(SetupAgainRow("session_duplicate_rig", "register rig 'player' twice", 2,
                    unchanged, StatusCode::ALREADY_EXISTS,
                    "register_rig.id: rig 'player' is already registered"));
  add(SetupAgainRow(
      "session_skeleton_nan", "register a skeleton with a NaN rest scale", 0,
      [](v1::SessionRequest& r) {
        r.mutable_register_skeleton()->set_id("bad");
        r.mutable_register_skeleton()->mutable_skeleton()->set_rest_pose(kSx,
                                                                         kNaN);
      },
      StatusCode::INVALID_ARGUMENT,
      "register_skeleton.skeleton: skeleton.rest_pose[0] 'Hips': scale"));
  add(SetupAgainRow(
      "session_clip_unknown_skeleton", "register a clip for skeleton 'ghost'",
      1,
      [](v1::SessionRequest& r) {
        r.mutable_register_clip()->set_id("walk2");
        r.mutable_register_clip()->set_skeleton_id("ghost");
      },
      StatusCode::NOT_FOUND,
      "register_clip.skeleton_id: no skeleton 'ghost' in this session"));
  add(SetupAgainRow(
      "session_rig_unknown_skeleton", "register a rig for skeleton 'ghost'", 2,
      [](v1::SessionRequest& r) {
        r.mutable_register_rig()->set_id("rig2");
        r.mutable_register_rig()->set_skeleton_id("ghost");
      },
      StatusCode::NOT_FOUND,
      "register_rig.skeleton_id: no skeleton 'ghost' in this session"));
  add(SetupAgainRow(
      "session_character_unknown_rig", "register a character of rig 'ghost'", 3,
      [](v1::SessionRequest& r) {
        r.mutable_register_character()->set_id("villain");
        r.mutable_register_character()->set_rig_id("ghost");
      },
      StatusCode::NOT_FOUND,
      "register_character.rig_id: no rig 'ghost' in this session"));
  add(SetupAgainRow(
      "session_empty_id", "register a rig with id ''", 2,
      [](v1::SessionRequest& r) { r.mutable_register_rig()->clear_id(); },
      StatusCode::INVALID_ARGUMENT, "register_rig.id: an id is required"));
  add(SessionRow(
      "session_empty_message", "a SessionRequest with nothing set",
      [] { return std::vector<v1::SessionRequest>(1); },
      StatusCode::INVALID_ARGUMENT, "empty SessionRequest"));
  add(SessionRow(
      "session_object_limit", "5 more characters past the limit of 8 objects",
      [] {
        std::vector<v1::SessionRequest> messages(5);
        for (int i = 0; i < 5; ++i) {
          messages[i].mutable_register_character()->set_id(
              absl::StrCat("extra", i));
          messages[i].mutable_register_character()->set_rig_id("player");
        }
        return messages;
      },
      StatusCode::RESOURCE_EXHAUSTED,
      "register_character: this session already holds 8 registered objects"));

  // ---- session frames
  add(SessionRow(
      "frame_sequence_repeated", "two frames with sequence 10",
      [] {
        return std::vector<v1::SessionRequest>{FrameFor(10, "hero"),
                                               FrameFor(10, "hero")};
      },
      StatusCode::INVALID_ARGUMENT,
      "frame.sequence: 10 does not increase (last frame was 10)"));
  add(SessionRow(
      "frame_sequence_backwards", "frame 10, then frame 9",
      [] {
        return std::vector<v1::SessionRequest>{FrameFor(10, "hero"),
                                               FrameFor(9, "hero")};
      },
      StatusCode::INVALID_ARGUMENT, "frame.sequence: 9 does not increase"));
  add(SessionRow(
      "frame_dt_nan", "Frame.dt NaN",
      [] {
        v1::SessionRequest r = FrameFor(1, "hero");
        r.mutable_frame()->set_dt(kNaN);
        return std::vector<v1::SessionRequest>{r};
      },
      StatusCode::INVALID_ARGUMENT, "frame.dt: nan must be finite and >= 0"));
  add(SessionRow(
      "frame_dt_negative", "Frame.dt -1",
      [] {
        v1::SessionRequest r = FrameFor(1, "hero");
        r.mutable_frame()->set_dt(-1.0f);
        return std::vector<v1::SessionRequest>{r};
      },
      StatusCode::INVALID_ARGUMENT, "frame.dt: -1 must be finite and >= 0"));
  add(SessionRow(
      "frame_too_many_characters", "a frame of 9 characters (limit 8)",
      [] {
        v1::SessionRequest r = FrameFor(1, "hero");
        for (int i = 0; i < kMaxCharacters; ++i) {
          r.mutable_frame()->add_characters()->set_character_id("hero");
        }
        return std::vector<v1::SessionRequest>{r};
      },
      StatusCode::RESOURCE_EXHAUSTED,
      "frame.characters: 9 characters exceed this server's limit of 8"));
  add(SessionRow(
      "frame_unknown_character", "a frame for character 'ghost'",
      [] { return std::vector<v1::SessionRequest>{FrameFor(1, "ghost")}; },
      StatusCode::NOT_FOUND,
      "frame.characters[0].character_id: no character 'ghost'"));
  add(FrameRow(
      "frame_pose_size_mismatch", "a frame pose of 11 floats",
      [](v1::CharacterFrame& c) {
        c.mutable_pose()->mutable_transforms()->Resize(11, 0.0f);
      },
      StatusCode::INVALID_ARGUMENT,
      "frame.characters[0].pose: 11 floats for 31 joints"));
  add(FrameRow(
      "frame_pose_non_unit_quaternion", "a frame pose rotation of norm 3",
      [](v1::CharacterFrame& c) { *c.mutable_pose() = RestWith(2, kQw, 3.0f); },
      StatusCode::INVALID_ARGUMENT,
      "frame.characters[0].pose[2] 'LeftHip': rotation norm 3 is not 1"));
  add(FrameRow(
      "frame_root_nan", "a frame root translation.x NaN",
      [](v1::CharacterFrame& c) {
        c.mutable_root()->mutable_translation()->set_x(kNaN);
      },
      StatusCode::INVALID_ARGUMENT,
      "frame.characters[0].root.translation: NaN or infinite"));
  add(FrameRow(
      "frame_op_override_bad_joint", "a frame's ops override naming 'Wing'",
      [](v1::CharacterFrame& c) {
        v1::AimIkOp* aim = c.add_ops()->mutable_aim_ik();
        aim->set_joint("Wing");
        *aim->mutable_target() = Vec(0, 1, 0);
      },
      StatusCode::INVALID_ARGUMENT,
      "frame.characters[0].ops[0].aim_ik.joint: no joint named 'Wing'"));
  add(FrameRow(
      "frame_unknown_clip", "a frame's sample_clip naming clip 'run'",
      [](v1::CharacterFrame& c) {
        c.add_ops()->mutable_sample_clip()->mutable_sample()->set_clip("run");
      },
      StatusCode::NOT_FOUND,
      "frame.characters[0].ops[0].sample_clip.sample.clip: no clip named "
      "'run'"));
  add(FrameRow(
      "op_update_past_last_op", "an op update of op 1 for a one-op rig",
      [](v1::CharacterFrame& c) {
        v1::OpUpdate* u = c.add_op_updates();
        u->set_op(1);
        u->set_time(0.2f);
      },
      StatusCode::INVALID_ARGUMENT,
      "frame.characters[0].op_updates[0].op: 1 is not an op of this frame's "
      "pipeline, which has 1 op"));
  add(FrameRow(
      "op_update_twice", "two op updates of the same op",
      [](v1::CharacterFrame& c) {
        for (int i = 0; i < 2; ++i) {
          v1::OpUpdate* u = c.add_op_updates();
          u->set_op(0);
          u->set_time(0.2f);
        }
      },
      StatusCode::INVALID_ARGUMENT,
      "frame.characters[0].op_updates[1].op: op 0 already has an update"));
  add(FrameRow(
      "op_update_target_for_sample", "an op update giving sample_clip a target",
      [](v1::CharacterFrame& c) {
        v1::OpUpdate* u = c.add_op_updates();
        u->set_op(0);
        *u->mutable_target() = Vec(0, 1, 0);
      },
      StatusCode::INVALID_ARGUMENT,
      "frame.characters[0].op_updates[0].target: op 0 is a sample_clip; only "
      "a two_bone_ik, aim_ik, ccd_ik or fabrik_ik op takes this update"));
  add(FrameRow(
      "op_update_empty", "an op update setting nothing",
      [](v1::CharacterFrame& c) { c.add_op_updates()->set_op(0); },
      StatusCode::INVALID_ARGUMENT,
      "frame.characters[0].op_updates[0]: updates nothing"));
  add(FrameRow(
      "op_update_time_infinite", "an op update with time +inf",
      [](v1::CharacterFrame& c) {
        v1::OpUpdate* u = c.add_op_updates();
        u->set_op(0);
        u->set_time(kInf);
      },
      StatusCode::INVALID_ARGUMENT,
      "frame.characters[0].op_updates[0].time: inf is not a finite time"));
  add(FrameRow(
      "op_update_target_nan", "an op update of an aim_ik target with NaN",
      [](v1::CharacterFrame& c) {
        v1::AimIkOp* aim = c.add_ops()->mutable_aim_ik();
        aim->set_joint("Head");
        *aim->mutable_target() = Vec(0, 1, 0);
        v1::OpUpdate* u = c.add_op_updates();
        u->set_op(0);
        *u->mutable_target() = Vec(kNaN, 1, 0);
      },
      StatusCode::INVALID_ARGUMENT,
      "frame.characters[0].op_updates[0].target: NaN or infinite component"));
  add(SessionRow(
      "rig_with_bad_op", "a rig whose two_bone_ik names 'Wing', then a frame",
      [] {
        std::vector<v1::SessionRequest> messages(3);
        v1::RegisterRig* rig = messages[0].mutable_register_rig();
        rig->set_id("broken");
        rig->set_skeleton_id("cmu");
        v1::TwoBoneIkOp* op = rig->add_ops()->mutable_two_bone_ik();
        op->set_start_joint("Wing");
        messages[1].mutable_register_character()->set_id("icarus");
        messages[1].mutable_register_character()->set_rig_id("broken");
        messages[2] = FrameFor(1, "icarus");
        return messages;
      },
      StatusCode::INVALID_ARGUMENT,
      "frame.characters[0].ops[0].two_bone_ik.start_joint: no joint named "
      "'Wing'"));

  // ---- the transport: truncation, cancellation, oversized and raw bytes
  add({"stream_writes_done_mid_sequence",
       "4 registrations written without reading, then WritesDone (no frame)",
       [](v1::PoseWire::Stub& stub) -> Outcome {
         grpc::ClientContext context;
         context.set_deadline(Deadline());
         auto stream = stub.Session(&context);
         const std::vector<v1::SessionRequest> setup = SessionSetup();
         for (const v1::SessionRequest& r : setup) stream->Write(r);
         stream->WritesDone();
         v1::SessionResponse response;
         size_t answered = 0;
         while (stream->Read(&response)) {
           if (FromResponse(response).code == StatusCode::OK) ++answered;
         }
         Outcome outcome = FromStatus(stream->Finish());
         if (answered != setup.size()) {
           outcome.message = absl::StrCat("answered ", answered, " of ",
                                          setup.size(), "; ", outcome.message);
         }
         return outcome;
       },
       StatusCode::OK, ""});
  add({"stream_empty", "a Session that sends nothing and closes",
       [](v1::PoseWire::Stub& stub) {
         grpc::ClientContext context;
         context.set_deadline(Deadline());
         auto stream = stub.Session(&context);
         stream->WritesDone();
         return FromStatus(stream->Finish());
       },
       StatusCode::OK, ""});
  add({"stream_cancelled_mid_sequence",
       "registrations, then the client cancels before the frame",
       [](v1::PoseWire::Stub& stub) {
         grpc::ClientContext context;
         context.set_deadline(Deadline());
         auto stream = stub.Session(&context);
         v1::SessionResponse response;
         for (const v1::SessionRequest& r : SessionSetup()) {
           stream->Write(r);
           stream->Read(&response);
         }
         stream->Write(FrameFor(1, "hero"));
         context.TryCancel();
         while (stream->Read(&response)) {
         }
         return FromStatus(stream->Finish());
       },
       StatusCode::CANCELLED, "CANCELLED"});
  add({"stream_oversized_message",
       "a Session frame of 5 MB (limit 4 MiB): the stream ends",
       [](v1::PoseWire::Stub& stub) {
         grpc::ClientContext context;
         context.set_deadline(Deadline());
         auto stream = stub.Session(&context);
         v1::SessionRequest r = FrameFor(1, "hero");
         FrameCharacter(r).mutable_pose()->mutable_transforms()->Resize(5 << 18,
                                                                        1.0f);
         stream->Write(r);
         v1::SessionResponse response;
         while (stream->Read(&response)) {
         }
         return FromStatus(stream->Finish());
       },
       StatusCode::RESOURCE_EXHAUSTED, "larger than max"});
  add(SolveRow(
      "solve_oversized_message",
      "1,000,000 joints with a full rest pose (40 MB; limit 4 MiB)",
      [](auto& r) { HeroSkeleton(r) = ChainSkeleton(1000000, true); },
      StatusCode::RESOURCE_EXHAUSTED, "larger than max"));
  // Raw bytes, not messages: the service parses requests itself
  // (posewire_service.h), so bytes that are not a message get a status
  // that says so, and a session answers them and goes on.
  add({"solve_truncated_bytes", "a well-formed SolveRequest cut off mid-field",
       [channel](v1::PoseWire::Stub&) {
         std::string bytes = BaseSolve().SerializeAsString();
         bytes.resize(bytes.size() - 7);
         return CallRaw(channel, "/posewire.v1.PoseWire/Solve", bytes);
       },
       StatusCode::INVALID_ARGUMENT,
       "do not parse as posewire.v1.SolveRequest"});
  add({"solve_garbage_bytes", "a SolveRequest of bytes that are not protobuf",
       [channel](v1::PoseWire::Stub&) {
         return CallRaw(channel, "/posewire.v1.PoseWire/Solve",
                        std::string("\xff\xff\xff\xff\xff\xff", 6));
       },
       StatusCode::INVALID_ARGUMENT,
       "request's 6 bytes do not parse as posewire.v1.SolveRequest"});
  add({"session_garbage_bytes",
       "a Session message of bytes that are not protobuf, after a valid one",
       [channel](v1::PoseWire::Stub&) {
         return RawSession(channel, std::string("\xff\xff\xff\xff", 4));
       },
       StatusCode::INVALID_ARGUMENT,
       "message 2 of this stream (4 bytes) does not parse as "
       "posewire.v1.SessionRequest"});
  return rows;
}

// ------------------------------------------- the concurrent good stream --

// A Session opened before the catalogue runs, fed well-formed frames from
// its own thread until stopped: the walk under a crossfade player fading
// between two clips, each answer compared bit for bit with the core's
// StepCrossfade and forward kinematics.
class GoodStream {
 public:
  explicit GoodStream(v1::PoseWire::Stub& stub) {
    context_.set_deadline(Deadline(3600));
    stream_ = stub.Session(&context_);
  }

  // After a failed assertion the test returns early: cancel the stream so
  // the thread's blocking Read returns, and join it.
  ~GoodStream() {
    if (thread_.joinable()) {
      stop_ = true;
      context_.TryCancel();
      thread_.join();
    }
  }

  // Registers the walk rig; returns an error message or "".
  std::string Register() {
    std::vector<v1::SessionRequest> setup(5);
    setup[0] = SessionSetup()[0];
    for (int i = 0; i < 2; ++i) {
      setup[1 + i] = SessionSetup()[1];
      setup[1 + i].mutable_register_clip()->set_id(i == 0 ? "walk" : "walk2");
    }
    v1::RegisterRig* rig = setup[3].mutable_register_rig();
    rig->set_id("player");
    rig->set_skeleton_id("cmu");
    rig->add_ops()->mutable_crossfade();
    setup[4].mutable_register_character()->set_id("witness");
    setup[4].mutable_register_character()->set_rig_id("player");
    for (const v1::SessionRequest& r : setup) {
      v1::SessionResponse response;
      if (!stream_->Write(r) || !stream_->Read(&response)) {
        return "the good stream broke while registering";
      }
      if (Outcome o = FromResponse(response); o.code != StatusCode::OK) {
        return o.message;
      }
    }
    return "";
  }

  void Start() {
    thread_ = std::thread([this] { Loop(); });
  }

  // Waits until two more frames have been answered and checked since the
  // call (so at least one was sent after whatever happened before it).
  // Returns "" or what went wrong.
  std::string WaitForTwoMoreFrames() {
    std::unique_lock<std::mutex> lock(mu_);
    const int64_t target = verified_ + 2;
    // Liveness, not timing: a generous bound so a hang fails the test
    // instead of blocking it forever.
    cv_.wait_for(lock, std::chrono::seconds(120),
                 [&] { return verified_ >= target || !error_.empty(); });
    if (!error_.empty()) return error_;
    if (verified_ < target) return "the good stream stopped answering";
    return "";
  }

  // Stops the thread and closes the stream; returns "" or what went wrong.
  std::string Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    stream_->WritesDone();
    grpc::Status status = stream_->Finish();
    std::lock_guard<std::mutex> lock(mu_);
    if (error_.empty() && !status.ok()) error_ = status.error_message();
    return error_;
  }

  int64_t verified() {
    std::lock_guard<std::mutex> lock(mu_);
    return verified_;
  }

 private:
  void Fail(std::string message) {
    std::lock_guard<std::mutex> lock(mu_);
    if (error_.empty()) error_ = std::move(message);
    cv_.notify_all();
  }

  void Loop() {
    const Skeleton& skeleton = Walk().skeleton;
    const std::vector<Clip> clips = {Walk().clips[0], Walk().clips[0]};
    CrossfadeState expected_state;
    for (uint64_t f = 0; !stop_; ++f) {
      v1::SessionRequest request = FrameFor(f + 1, "witness");
      v1::CharacterFrame& c = FrameCharacter(request);
      c.set_want_model_pose(true);
      // Frame 0 starts the walk; then a fade to the other clip every 40
      // frames, alternating.
      if (f == 0) {
        c.add_ops()->mutable_crossfade()->add_commands()->set_play("walk");
        expected_state = Play(0);
      } else if (f % 40 == 0) {
        const int clip = static_cast<int>(f / 40 % 2);
        v1::FadeTo* fade =
            c.add_ops()->mutable_crossfade()->add_commands()->mutable_fade_to();
        fade->set_clip(clip == 0 ? "walk" : "walk2");
        fade->set_fade_seconds(0.25f);
        auto next = FadeTo(expected_state,
                           FadeRequest{.clip = clip, .duration = 0.25f});
        if (!next.ok()) return Fail(std::string(next.status().message()));
        expected_state = *next;
      }
      LocalPose expected(skeleton.num_joints());
      auto next = StepCrossfade(skeleton, clips, expected_state, kDt,
                                absl::MakeSpan(expected));
      if (!next.ok()) return Fail(std::string(next.status().message()));
      expected_state = *next;

      v1::SessionResponse response;
      if (!stream_->Write(request) || !stream_->Read(&response)) {
        return Fail(absl::StrCat("frame ", f, ": the good stream broke"));
      }
      if (Outcome o = FromResponse(response); o.code != StatusCode::OK) {
        return Fail(absl::StrCat("frame ", f, ": ", o.message));
      }
      const v1::CharacterResult& out = response.frame().characters(0);
      if (response.frame().sequence() != f + 1 ||
          !BitIdentical(out.pose(), Packed(expected)) ||
          !BitIdentical(out.model_pose(), Packed(Model(expected)))) {
        return Fail(absl::StrCat("frame ", f, ": not the core's answer"));
      }
      std::lock_guard<std::mutex> lock(mu_);
      ++verified_;
      cv_.notify_all();
    }
  }

  grpc::ClientContext context_;
  std::unique_ptr<Stream> stream_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t verified_ = 0;
  std::string error_;
};

class BadInputCatalogueTest : public ServiceTest {
 protected:
  void Configure(ServerConfig& config) override {
    config.max_message_bytes = kMaxMessageBytes;
    config.max_characters_per_batch = kMaxCharacters;
    config.max_solver_iterations = kMaxIterations;
    config.max_session_objects = kMaxSessionObjects;
  }

  // Both names the server answers health checks for.
  std::string HealthProblem() {
    auto health = grpc::health::v1::Health::NewStub(channel_);
    for (const char* service : {"", "posewire.v1.PoseWire"}) {
      grpc::ClientContext context;
      context.set_deadline(Deadline());
      grpc::health::v1::HealthCheckRequest request;
      request.set_service(service);
      grpc::health::v1::HealthCheckResponse response;
      grpc::Status status = health->Check(&context, request, &response);
      if (!status.ok()) return status.error_message();
      if (response.status() != grpc::health::v1::HealthCheckResponse::SERVING) {
        return absl::StrCat("'", service, "' is not SERVING");
      }
    }
    return "";
  }
};

// A markdown table cell: no pipes, no newlines, not too long.
std::string Cell(absl::string_view text, size_t max = 110) {
  std::string cell =
      absl::StrReplaceAll(text, {{"|", "\\|"}, {"\n", " "}, {"`", "'"}});
  if (cell.size() > max) cell = cell.substr(0, max - 3) + "...";
  return cell;
}

TEST(BadInputCatalogue, HasAtLeastFortyDistinctRows) {
  const std::vector<BadInput> rows = Catalogue(nullptr);
  EXPECT_GE(rows.size(), 40u);
  absl::flat_hash_set<std::string> names;
  for (const BadInput& row : rows) {
    EXPECT_TRUE(names.insert(row.name).second) << row.name;
    EXPECT_FALSE(row.input.empty()) << row.name;
  }
}

TEST_F(BadInputCatalogueTest,
       EveryRow_GetsItsCodeAndMessageWhileTheServerAndAGoodStreamCarryOn) {
  GoodStream good(*stub_);
  ASSERT_EQ(good.Register(), "");
  good.Start();
  ASSERT_EQ(good.WaitForTwoMoreFrames(), "");

  const bool markdown = std::getenv("POSEWIRE_CATALOGUE_MARKDOWN") != nullptr;
  std::string table;
  for (const BadInput& row : Catalogue(channel_)) {
    SCOPED_TRACE(row.name);
    const Outcome outcome = row.run(*stub_);
    EXPECT_EQ(outcome.code, row.code)
        << grpc::StatusCode(outcome.code) << ": " << outcome.message;
    EXPECT_THAT(outcome.message, HasSubstr(row.message));
    if (row.code != StatusCode::OK && !row.message.empty()) {
      // Not a bare code: a person can act on it.
      EXPECT_FALSE(outcome.message.empty());
    }
    ASSERT_EQ(HealthProblem(), "");
    ASSERT_EQ(good.WaitForTwoMoreFrames(), "");
    if (markdown) {
      const std::string code =
          outcome.code == StatusCode::OK
              ? "OK"
              : absl::StatusCodeToString(
                    static_cast<absl::StatusCode>(outcome.code));
      absl::StrAppend(&table, "| `", row.name, "` | ", Cell(row.input), " | ",
                      code, " | ", Cell(outcome.message), " |\n");
    }
  }
  EXPECT_EQ(good.Stop(), "");
  EXPECT_GT(good.verified(), 0);
  if (markdown) std::cout << table;
}

}  // namespace
}  // namespace posewire::server
