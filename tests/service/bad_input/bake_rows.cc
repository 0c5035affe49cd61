// Bad Bake requests: each refused before its first frame with the field
// named, and a well-formed bake answered right after it.
#include "tests/service/bad_input/harness.h"

namespace posewire::server::bad_input {
namespace {

// The walk clip baked for 4 frames at 30 fps through a left-leg two-bone
// solve; rows break one field of it.
v1::BakeRequest BaseBake() {
  v1::BakeRequest request;
  *request.mutable_skeleton()->mutable_skeleton() =
      ServiceTest::WalkSkeletonForTests();
  *request.add_clips() = ServiceTest::WalkClipForTests();
  request.mutable_source()->set_clip(request.clips(0).name());
  request.set_frame_count(4);
  v1::TwoBoneIkOp* op = request.add_ops()->mutable_two_bone_ik();
  op->set_start_joint("LeftHip");
  op->set_mid_joint("LeftKnee");
  op->set_end_joint("LeftAnkle");
  *op->mutable_target() = Vec(1, 5, 2);
  return request;
}

// Reads the whole bake: its status, and for an OK one, that every frame
// came, in order, well-formed.
Outcome CallBake(v1::PoseWire::Stub& stub, const v1::BakeRequest& request) {
  grpc::ClientContext context;
  context.set_deadline(Deadline());
  std::unique_ptr<grpc::ClientReader<v1::BakeResponse>> reader =
      stub.Bake(&context, request);
  v1::BakeResponse response;
  uint32_t frames = 0;
  bool well_formed = true;
  while (reader->Read(&response)) {
    for (const v1::BakedFrame& frame : response.frames()) {
      well_formed =
          well_formed && frame.index() == frames && WellFormed(frame.pose());
      ++frames;
    }
  }
  Outcome outcome = FromStatus(reader->Finish());
  if (outcome.code == grpc::StatusCode::OK &&
      (!well_formed || frames != response.frames_total())) {
    return {grpc::StatusCode::UNKNOWN,
            "OK without every frame, in order and well-formed"};
  }
  return outcome;
}

BadInput BakeRow(std::string name, std::string input,
                 std::function<void(v1::BakeRequest&)> edit,
                 grpc::StatusCode code, std::string message) {
  return {std::move(name), std::move(input),
          [edit = std::move(edit)](v1::PoseWire::Stub& stub) {
            v1::BakeRequest request = BaseBake();
            edit(request);
            Outcome outcome = CallBake(stub, request);
            // The server bakes on: the base request still works.
            if (Outcome good = CallBake(stub, BaseBake());
                good.code != grpc::StatusCode::OK) {
              return Outcome{
                  grpc::StatusCode::UNKNOWN,
                  absl::StrCat("a good bake after it failed: ", good.message)};
            }
            return outcome;
          },
          code, std::move(message)};
}

}  // namespace

std::vector<BadInput> BakeRows() {
  std::vector<BadInput> rows;
  auto add = [&rows](BadInput row) { rows.push_back(std::move(row)); };
  add(BakeRow(
      "bake_frames_1e9", "bake frame_count 10^9",
      [](auto& r) { r.set_frame_count(1000000000); },
      StatusCode::RESOURCE_EXHAUSTED,
      "frame_count: 1000000000 frames exceed this server's limit of 100000 "
      "per bake (GetInfo limits.max_bake_frames)"));
  add(BakeRow(
      "bake_bytes_over_limit",
      "bake of 20,000 frames with model poses (limit 16 MiB of poses)",
      [](auto& r) {
        r.set_frame_count(20000);
        r.set_want_model_pose(true);
      },
      StatusCode::RESOURCE_EXHAUSTED,
      "frame_count: 20000 frames of 2480 bytes of poses exceed this server's "
      "limit of 16777216 bytes per bake (GetInfo limits.max_bake_bytes)"));
  add(BakeRow(
      "bake_frame_rate_zero", "bake frame_rate 0",
      [](auto& r) { r.set_frame_rate(0.0f); }, StatusCode::INVALID_ARGUMENT,
      "frame_rate: 0 is not in (0, 100000] frames a second"));
  add(BakeRow(
      "bake_frame_rate_nan", "bake frame_rate NaN",
      [](auto& r) { r.set_frame_rate(kNaN); }, StatusCode::INVALID_ARGUMENT,
      "frame_rate: nan is not in (0, 100000] frames a second"));
  add(BakeRow(
      "bake_start_time_infinite", "bake start_time infinity",
      [](auto& r) {
        r.set_start_time(std::numeric_limits<double>::infinity());
      },
      StatusCode::INVALID_ARGUMENT, "start_time: inf is not finite"));
  add(BakeRow(
      "bake_unknown_source_clip", "bake source clip 'jog' (not sent)",
      [](auto& r) { r.mutable_source()->set_clip("jog"); },
      StatusCode::NOT_FOUND, "source.clip: no clip named 'jog'"));
  add(BakeRow(
      "bake_no_source_no_frame_count", "bake of the rest pose, no frame_count",
      [](auto& r) {
        r.clear_source();
        r.set_frame_count(0);
      },
      StatusCode::INVALID_ARGUMENT,
      "frame_count: required when there is no source clip"));
  add(BakeRow(
      "bake_start_past_the_clip", "bake from 1000 s, no frame_count",
      [](auto& r) {
        r.set_frame_count(0);
        r.set_start_time(1000.0);
      },
      StatusCode::INVALID_ARGUMENT,
      "frame_count: 0 bakes the source clip from start_time to its "
      "end, but start_time 1000 is past its end"));
  add(BakeRow(
      "bake_frames_per_message_over", "bake frames_per_message 5000",
      [](auto& r) { r.set_frames_per_message(5000); },
      StatusCode::INVALID_ARGUMENT, "frames_per_message: 5000 is over 4096"));
  add(BakeRow(
      "bake_source_interpolation_unknown",
      "bake source rotation_interpolation 7",
      [](auto& r) {
        r.mutable_source()->set_rotation_interpolation(
            static_cast<v1::RotationInterpolation>(7));
      },
      StatusCode::INVALID_ARGUMENT, "source.rotation_interpolation"));
  add(BakeRow(
      "bake_op_unknown_joint", "bake two_bone_ik start_joint 'Tail'",
      [](auto& r) {
        r.mutable_ops(0)->mutable_two_bone_ik()->set_start_joint("Tail");
      },
      StatusCode::INVALID_ARGUMENT,
      "ops[0].two_bone_ik.start_joint: no joint named 'Tail'"));
  add(BakeRow(
      "bake_timed_op_takes_no_time", "bake timed_ops [0], a two_bone_ik",
      [](auto& r) { r.add_timed_ops(0); }, StatusCode::INVALID_ARGUMENT,
      "timed_ops[0]: ops[0] is two_bone_ik, which takes no time"));
  add(BakeRow(
      "bake_timed_op_past_the_last", "bake timed_ops [3] of 1 op",
      [](auto& r) { r.add_timed_ops(3); }, StatusCode::INVALID_ARGUMENT,
      "timed_ops[0]: op 3 is past the last op (1 ops)"));
  add(BakeRow(
      "bake_frame_update_nan_target",
      "bake frame_updates[2] target (NaN, 0, 0)",
      [](auto& r) {
        for (int i = 0; i < 3; ++i) {
          v1::OpUpdate* u = r.add_frame_updates()->add_op_updates();
          u->set_op(0);
          *u->mutable_target() = Vec(i == 2 ? kNaN : 1.0f, 0, 0);
        }
      },
      StatusCode::INVALID_ARGUMENT,
      "frame_updates[2].op_updates[0].target: NaN or infinite component"));
  add(BakeRow(
      "bake_frame_update_root_nan",
      "bake frame_updates[0] root translation (NaN, 0, 0)",
      [](auto& r) {
        *r.add_frame_updates()->mutable_root()->mutable_translation() =
            Vec(kNaN, 0, 0);
      },
      StatusCode::INVALID_ARGUMENT, "frame_updates[0].root"));
  add(BakeRow(
      "bake_more_frame_updates_than_frames",
      "bake of 4 frames with 5 frame_updates",
      [](auto& r) {
        for (int i = 0; i < 5; ++i) r.add_frame_updates();
      },
      StatusCode::INVALID_ARGUMENT, "frame_updates: 5 entries for 4 frames"));
  add(BakeRow(
      "bake_no_skeleton", "bake with no skeleton",
      [](auto& r) { r.clear_skeleton(); }, StatusCode::INVALID_ARGUMENT,
      "skeleton"));
  add(BakeRow(
      "bake_duplicate_clip", "bake with the walk clip twice",
      [](auto& r) { *r.add_clips() = r.clips(0); },
      StatusCode::INVALID_ARGUMENT,
      "clips[1].name: '" + ServiceTest::WalkClipForTests().name() +
          "' is used by an earlier clip"));
  rows.push_back(
      {"bake_cancelled",
       "a bake of 10,000 frames cancelled after its first message",
       [](v1::PoseWire::Stub& stub) {
         v1::BakeRequest request = BaseBake();
         request.mutable_source()->set_loop(true);
         request.set_frame_count(10000);
         request.set_frames_per_message(1);
         grpc::ClientContext context;
         context.set_deadline(Deadline());
         auto reader = stub.Bake(&context, request);
         v1::BakeResponse message;
         if (!reader->Read(&message)) return FromStatus(reader->Finish());
         context.TryCancel();
         while (reader->Read(&message)) {
         }
         Outcome outcome = FromStatus(reader->Finish());
         if (message.frames_done() >= 10000) {
           return Outcome{grpc::StatusCode::UNKNOWN,
                          "the bake ran to its end after the cancel"};
         }
         if (Outcome good = CallBake(stub, BaseBake());
             good.code != grpc::StatusCode::OK) {
           return Outcome{
               grpc::StatusCode::UNKNOWN,
               absl::StrCat("a good bake after it failed: ", good.message)};
         }
         return outcome;
       },
       StatusCode::CANCELLED, ""});
  return rows;
}

}  // namespace posewire::server::bad_input
