// Writes the seed corpora of the Solve and Session fuzzers: valid requests,
// one per operation the server implements plus a few combinations, built on
// a real CMU skeleton and clip (a trimmed BVH from fuzz/corpus/bvh_reader).
// Every seed is run once here and dropped with a message on stderr if the
// server rejects it, so the corpus starts on the success paths, where the
// solvers are, not on the first validation error.
//
//   make_request_seeds WALK.bvh OUT_DIR
// writes OUT_DIR/solve_fuzzer/*.pb and OUT_DIR/session_fuzzer/*.bin.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "fuzz/session_input.h"
#include "google/protobuf/text_format.h"
#include "posewire/v1/posewire.pb.h"
#include "server/service/server_config.h"
#include "server/service/session.h"
#include "server/service/skeleton_cache.h"
#include "server/service/solve.h"
#include "server/wire/wire_convert.h"
#include "solver_core/io/bvh_reader.h"

namespace posewire::fuzz {
namespace {

// One Operation per supported op, in text format, for the CMU skeleton
// (joint names as in cmu_131_01_walk.bvh, clip "walk").
const std::vector<std::pair<std::string, std::string>>& OpSeeds() {
  static const auto* ops = new std::vector<std::pair<std::string, std::string>>{
      {"sample_clip", R"(sample_clip { sample { clip: "walk" time: 0.01 } })"},
      {"blend", R"(blend {
         layers { source { current: true } weight: 0.5 }
         layers { source { clip { clip: "walk" time: 0.02 } } weight: 0.5 }
         blend_root: "LeftHip" })"},
      {"additive", R"(additive { base { current: true }
         additive { clip { clip: "walk" time: 0.02 } } weight: 0.5 })"},
      {"crossfade", R"(crossfade { commands { play: "walk" }
         commands { fade_to { clip: "walk" fade_seconds: 0.1
                              curve: FADE_CURVE_SMOOTHSTEP } }
         state_key: "cf" })"},
      {"two_bone_ik", R"(two_bone_ik { start_joint: "LeftHip"
         mid_joint: "LeftKnee" end_joint: "LeftAnkle"
         target { x: 1 y: 5 z: 2 } pole_vector { z: 1 } soften: 0.5 })"},
      {"aim_ik", R"(aim_ik { joint: "Head" target { x: 0 y: 20 z: 40 }
         forward { z: 1 } up { y: 1 } })"},
      {"ccd_ik", R"(ccd_ik {
         chain: ["LeftShoulder", "LeftElbow", "LeftWrist"]
         target { x: 10 y: 15 z: 5 } max_iterations: 8
         tolerance { absolute: 0.01 }
         limits { joint: "LeftElbow" hinge { axis { x: 1 } min_angle: -2
                                             max_angle: 0 } } })"},
      {"fabrik_ik", R"(fabrik_ik {
         chain: ["RightShoulder", "RightElbow", "RightWrist"]
         target { x: -10 y: 15 z: 5 } max_iterations: 8
         limits { joint: "RightElbow" swing_twist { axis { y: 1 }
                  max_swing: 1 min_twist: -0.5 max_twist: 0.5 } } })"},
      {"fabrik_tree_ik", R"(fabrik_tree_ik { root: "Chest"
         effectors { joint: "LeftWrist" target { x: 10 y: 15 z: 5 } }
         effectors { joint: "RightWrist" target { x: -10 y: 15 z: 5 }
                     pull: 0.5 }
         max_iterations: 8
         limits { joint: "LeftElbow" euler { order: EULER_ORDER_ZYX
                  min { x: -1 y: -1 z: -1 } max { x: 1 y: 1 z: 1 } } } })"},
      {"full_body_biped_ik", R"(full_body_biped_ik {
         effectors { id: BIPED_EFFECTOR_LEFT_HAND position { x: 10 y: 15 z: 5 }
                     position_weight: 1 }
         effectors { id: BIPED_EFFECTOR_RIGHT_FOOT position { x: -3 y: 0 z: 2 }
                     position_weight: 1 }
         limbs { limb: BIPED_LIMB_LEFT_ARM bend_goal { z: 1 }
                 bend_goal_weight: 0.5 }
         iterations: 3 })"},
      {"full_body_ccd", R"(full_body_ccd {
         effectors { joint: "LeftWrist" target { x: 10 y: 15 z: 5 } }
         effectors { joint: "RightAnkle" target { x: -3 y: 0 z: 2 } }
         max_iterations: 6 })"},
      {"spring_bones", R"(spring_bones {
         rig { root_joints: "LeftShoulder" dummy_tip_length: 2
               settings { stiffness: 0.02 }
               curves { damping { position: 0 value: 0.1 }
                        damping { position: 1 value: 0.5 } } }
         gravity { y: -98 }
         wind { direction { x: 1 } speed: 2 noise_amplitude: 0.5 }
         colliders { shape: SHAPE_SPHERE attachment: ATTACHMENT_BONE
                     bone: "Chest" radius: 3 }
         colliders { shape: SHAPE_PLANE attachment: ATTACHMENT_WORLD }
         state_key: "arm" })"},
      {"look_at", R"(look_at {
         spine: ["Chest", "Chest2", "Neck"] head: "Head"
         target { x: 10 y: 20 z: 40 } body_weight: 0.7
         clamp_weight: 0.4 clamp_smoothing: 1 })"},
      {"ground", R"(ground {
         pelvis: "Hips"
         legs { hip: "LeftHip" knee: "LeftKnee" ankle: "LeftAnkle"
                toe: "LeftToe" }
         legs { hip: "RightHip" knee: "RightKnee" ankle: "RightAnkle" }
         samples { hit: true point { y: 1 } normal { x: 0.2 y: 1 } }
         samples { hit: false } max_tilt: 0.5 })"},
  };
  return *ops;
}

// The validate op needs the claimed pose: the rest pose itself.
std::string ValidateOp(const Skeleton& skeleton) {
  v1::Operation op;
  server::PoseToProto(skeleton.rest_pose(),
                      op.mutable_validate()->mutable_claimed());
  op.mutable_validate()->set_position_tolerance(0.01f);
  op.mutable_validate()->set_rotation_tolerance_degrees(1.0f);
  std::string text;
  google::protobuf::TextFormat::PrintToString(op, &text);
  return text;
}

bool AddOp(const std::string& text,
           google::protobuf::RepeatedPtrField<v1::Operation>* ops) {
  if (!google::protobuf::TextFormat::ParseFromString(text, ops->Add())) {
    std::fprintf(stderr, "bad op text: %s\n", text.c_str());
    return false;
  }
  return true;
}

bool Write(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  return static_cast<bool>(out);
}

class SeedWriter {
 public:
  SeedWriter(const ImportedAsset& walk, std::filesystem::path out)
      : walk_(walk), out_(std::move(out)) {
    server::SkeletonToProto(walk_.skeleton, &skeleton_);
    server::ClipToProto(walk_.clips.at(0), &clip_);
    clip_.set_name("walk");
    server::PoseToProto(walk_.skeleton.rest_pose(), &rest_);
  }

  // A one-character request running `ops` (op texts).
  v1::SolveRequest Request(const std::vector<std::string>& ops) const {
    v1::SolveRequest request;
    request.set_dt(1.0f / 60.0f);
    *request.add_clips() = clip_;
    v1::CharacterInput* c = request.add_characters();
    c->set_id("hero");
    *c->mutable_skeleton()->mutable_skeleton() = skeleton_;
    *c->mutable_pose() = rest_;
    c->set_want_model_pose(true);
    for (const std::string& op : ops) AddOp(op, c->mutable_ops());
    return request;
  }

  // Writes `request` if the server solves it; counts the failures.
  void Solve(const std::string& name, const v1::SolveRequest& request) {
    const server::ServerConfig config;
    server::SkeletonCache cache(config.skeleton_cache_size);
    v1::SolveResponse response;
    const absl::Status status = server::Solve(
        request, config, cache, [] { return absl::OkStatus(); }, &response);
    if (!status.ok()) {
      std::fprintf(stderr, "solve seed %s rejected: %s\n", name.c_str(),
                   status.ToString().c_str());
      ++failures_;
      return;
    }
    Emit(out_ / "solve_fuzzer" / (name + ".pb"), request.SerializeAsString());
  }

  // A session: register skeleton, clip, a limit set learnt from the clip,
  // a rig running `ops`, two characters, then `frames` frames; every
  // answer must be OK.
  void Session(const std::string& name, const std::vector<std::string>& ops,
               int frames) {
    std::vector<v1::SessionRequest> stream;
    v1::SessionRequest r;
    r.mutable_register_skeleton()->set_id("cmu");
    *r.mutable_register_skeleton()->mutable_skeleton() = skeleton_;
    stream.push_back(r);
    r.Clear();
    r.mutable_register_clip()->set_id("walk");
    r.mutable_register_clip()->set_skeleton_id("cmu");
    *r.mutable_register_clip()->mutable_clip() = clip_;
    stream.push_back(r);
    // A limit set learnt from the clip, for plausibility ops' limits_id.
    r.Clear();
    r.mutable_register_limits()->set_id("walk_limits");
    r.mutable_register_limits()->set_skeleton_id("cmu");
    r.mutable_register_limits()->add_learn_from_clips("walk");
    stream.push_back(r);
    r.Clear();
    r.mutable_register_rig()->set_id("rig");
    r.mutable_register_rig()->set_skeleton_id("cmu");
    for (const std::string& op : ops) {
      AddOp(op, r.mutable_register_rig()->mutable_ops());
    }
    stream.push_back(r);
    for (const char* id : {"a", "b"}) {
      r.Clear();
      r.mutable_register_character()->set_id(id);
      r.mutable_register_character()->set_rig_id("rig");
      stream.push_back(r);
    }
    for (int f = 0; f < frames; ++f) {
      r.Clear();
      v1::Frame* frame = r.mutable_frame();
      frame->set_sequence(f + 1);
      frame->set_dt(1.0f / 60.0f);
      for (const char* id : {"a", "b"}) {
        v1::CharacterFrame* c = frame->add_characters();
        c->set_character_id(id);
        *c->mutable_pose() = rest_;
        c->set_want_model_pose(f == 0);
      }
      stream.push_back(r);
    }

    const server::ServerConfig config;
    server::Session session(config);
    std::string bytes;
    for (const v1::SessionRequest& request : stream) {
      v1::SessionResponse response;
      session.Handle(request, &response);
      const v1::Status& status = response.has_frame()
                                     ? response.frame().status()
                                     : response.registered().status();
      bool ok = status.code() == 0;
      std::string message = status.message();
      for (const auto& c : response.frame().characters()) {
        if (c.status().code() != 0) {
          ok = false;
          message = c.status().message();
        }
      }
      if (!ok) {
        std::fprintf(stderr, "session seed %s rejected: %s\n", name.c_str(),
                     message.c_str());
        ++failures_;
        return;
      }
      AppendSessionMessage(request, &bytes);
    }
    Emit(out_ / "session_fuzzer" / (name + ".bin"), bytes);
  }

  const ImportedAsset& walk() const { return walk_; }
  int failures() const { return failures_; }
  int written() const { return written_; }

 private:
  void Emit(const std::filesystem::path& path, const std::string& bytes) {
    if (!Write(path, bytes)) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      ++failures_;
      return;
    }
    ++written_;
  }

  const ImportedAsset& walk_;
  const std::filesystem::path out_;
  v1::Skeleton skeleton_;
  v1::Clip clip_;
  v1::Pose rest_;
  int failures_ = 0;
  int written_ = 0;
};

int Main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s WALK.bvh OUT_DIR\n", argv[0]);
    return 2;
  }
  absl::StatusOr<ImportedAsset> walk = ReadBvhFile(argv[1]);
  if (!walk.ok() || walk->clips.empty()) {
    std::fprintf(stderr, "%s: %s\n", argv[1],
                 walk.ok() ? "no clip" : walk.status().ToString().c_str());
    return 1;
  }
  const std::filesystem::path out = argv[2];
  std::filesystem::create_directories(out / "solve_fuzzer");
  std::filesystem::create_directories(out / "session_fuzzer");
  SeedWriter seeds(*walk, out);

  std::vector<std::pair<std::string, std::string>> ops = OpSeeds();
  ops.emplace_back("validate", ValidateOp(walk->skeleton));
  std::vector<std::string> all;
  for (const auto& [name, text] : ops) {
    seeds.Solve(name, seeds.Request({text}));
    all.push_back(text);
  }
  // Everything in one pipeline, as a game server's character would run it.
  seeds.Solve("all_ops", seeds.Request(all));
  {
    // Two characters, the second naming the first's skeleton by hash, with
    // the spring and crossfade state a previous call returned.
    v1::SolveRequest request = seeds.Request({ops[0].second});
    v1::CharacterInput second = request.characters(0);
    second.set_id("sidekick");
    second.mutable_skeleton()->set_hash(server::SkeletonHash(walk->skeleton));
    *request.add_characters() = second;
    seeds.Solve("two_characters_by_hash", request);
  }
  {
    // State in: run crossfade and springs once, feed the state back.
    const std::vector<std::string> stateful = {ops[3].second, ops[11].second};
    v1::SolveRequest request = seeds.Request(stateful);
    const server::ServerConfig config;
    server::SkeletonCache cache(config.skeleton_cache_size);
    v1::SolveResponse response;
    if (server::Solve(
            request, config, cache, [] { return absl::OkStatus(); }, &response)
            .ok()) {
      *request.mutable_characters(0)->mutable_state() =
          response.characters(0).state();
      seeds.Solve("state_round_trip", request);
    }
  }

  for (const auto& [name, text] : ops) seeds.Session(name, {text}, 3);
  seeds.Session("all_ops", all, 2);
  seeds.Session("no_ops", {}, 2);
  seeds.Session("plausibility_limits_id",
                {"plausibility { limits_id: \"walk_limits\" }"}, 3);

  std::printf("%d seeds written, %d rejected\n", seeds.written(),
              seeds.failures());
  // A rejected seed is reported above but fails nothing: the fuzzers still
  // start from the others. No seed at all means the generator is broken.
  return seeds.written() > 0 ? 0 : 1;
}

}  // namespace
}  // namespace posewire::fuzz

int main(int argc, char** argv) { return posewire::fuzz::Main(argc, argv); }
