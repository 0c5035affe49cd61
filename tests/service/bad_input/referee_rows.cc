// Bad-input catalogue rows: frame times, hitbox sets and hit queries
// (rewind and rays).
#include "tests/service/bad_input/harness.h"

namespace posewire::server::bad_input {
namespace {

// Registers hitbox set "body" on skeleton "cmu": a capsule on the left
// knee and a sphere on the head, with `edit` applied.
v1::SessionRequest Hitboxes(
    const std::function<void(v1::RegisterHitboxes&)>& edit = {}) {
  v1::SessionRequest request;
  v1::RegisterHitboxes* set = request.mutable_register_hitboxes();
  set->set_id("body");
  set->set_skeleton_id("cmu");
  v1::Hitbox* leg = set->add_hitboxes();
  leg->set_joint("LeftKnee");
  leg->set_shape(v1::HITBOX_SHAPE_CAPSULE);
  leg->set_radius(0.8f);
  leg->set_half_height(3.0f);
  v1::Hitbox* head = set->add_hitboxes();
  head->set_joint("Head");
  head->set_radius(1.2f);
  if (edit) edit(*set);
  return request;
}

// Registers limit set "walk_limits" for skeleton "cmu", learnt from the
// session's clip "walk", with `edit` applied.
v1::SessionRequest Limits(
    const std::function<void(v1::RegisterLimits&)>& edit = {}) {
  v1::SessionRequest request;
  v1::RegisterLimits* set = request.mutable_register_limits();
  set->set_id("walk_limits");
  set->set_skeleton_id("cmu");
  set->add_learn_from_clips("walk");
  if (edit) edit(*set);
  return request;
}

// Registers rig "referee" on "cmu": one plausibility op naming limit set
// `limits_id`.
v1::SessionRequest RefereeRig(const std::string& limits_id) {
  v1::SessionRequest request;
  v1::RegisterRig* rig = request.mutable_register_rig();
  rig->set_id("referee");
  rig->set_skeleton_id("cmu");
  rig->add_ops()->mutable_plausibility()->set_limits_id(limits_id);
  return request;
}

v1::SessionRequest TimedFrame(uint64_t sequence, double time) {
  v1::SessionRequest request = FrameFor(sequence, "hero");
  request.mutable_frame()->set_time(time);
  return request;
}

// A query of "hero" with set "body" at `time`, one ray down -Z.
v1::SessionRequest Query(double time) {
  v1::SessionRequest request;
  v1::HitQuery* query = request.mutable_query();
  query->set_time(time);
  v1::HitTarget* target = query->add_targets();
  target->set_character_id("hero");
  target->set_hitbox_set("body");
  v1::Ray* ray = query->add_rays();
  *ray->mutable_origin() = Vec(0, 10, 50);
  *ray->mutable_direction() = Vec(0, 0, -1);
  return request;
}

// Hitboxes, two frames at t = 1 and 1.1, then `last`.
std::vector<v1::SessionRequest> WithHistory(v1::SessionRequest last) {
  return {Hitboxes(), TimedFrame(1, 1.0), TimedFrame(2, 1.1), std::move(last)};
}

v1::PlausibilityOp* Plausibility(v1::SolveRequest& r) {
  return AddOp(r)->mutable_plausibility();
}

// A plausibility op with the frames before it as state: `frames` copies of
// the rest pose, each `dt` after the one before.
v1::PlausibilityState* PlausibilityWithState(v1::SolveRequest& r, int frames) {
  Plausibility(r);
  r.set_dt(1.0f / 60.0f);
  v1::PlausibilityState* state =
      (*Hero(r).mutable_state())["plausibility"].mutable_plausibility();
  for (int i = 0; i < frames; ++i) {
    v1::PlausibilityFrame* f = state->add_frames();
    SetPose(WalkRest(), f->mutable_pose());
    f->set_dt(1.0f / 60.0f);
  }
  return state;
}

// A unary Query of "hero" at time 1.5 between its two frames (the rest
// pose at times 1 and 2), one ray down -Z, with `edit` applied.
BadInput UnaryQueryRow(std::string name, std::string input,
                       std::function<void(v1::QueryRequest&)> edit,
                       grpc::StatusCode code, std::string message) {
  return {
      std::move(name), std::move(input),
      [edit = std::move(edit)](v1::PoseWire::Stub& stub) {
        v1::QueryRequest request;
        v1::QueryCharacter* hero = request.add_characters();
        hero->set_id("hero");
        *hero->mutable_skeleton()->mutable_skeleton() =
            ServiceTest::WalkSkeletonForTests();
        *hero->mutable_hitboxes() = Hitboxes().register_hitboxes().hitboxes();
        for (double time : {1.0, 2.0}) {
          v1::HistoryFrame* frame = hero->add_frames();
          frame->set_time(time);
          PoseToProto(std::vector<Transform>{Transform::Identity()},
                      frame->mutable_root());
          PoseToProto(Model(RestPose(Walk().skeleton)), frame->mutable_model());
        }
        *request.mutable_query() = Query(1.5).query();
        request.mutable_query()->mutable_targets(0)->clear_hitbox_set();
        edit(request);
        grpc::ClientContext context;
        context.set_deadline(Deadline());
        v1::QueryResult result;
        return FromStatus(stub.Query(&context, request, &result));
      },
      code, std::move(message)};
}

}  // namespace

std::vector<BadInput> RefereeRows() {
  std::vector<BadInput> rows;
  auto add = [&rows](BadInput row) { rows.push_back(std::move(row)); };

  // ---- plausibility
  add(SolveRow(
      "plausibility_threshold_negative",
      "plausibility thresholds.max_angular_velocity -1",
      [](auto& r) {
        Plausibility(r)->mutable_thresholds()->set_max_angular_velocity(-1.0f);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].plausibility.thresholds.max_angular_velocity: -1 "
      "must be finite and positive"));
  add(SolveRow(
      "plausibility_threshold_nan",
      "plausibility thresholds.teleport_distance "
      "NaN",
      [](auto& r) {
        Plausibility(r)->mutable_thresholds()->set_teleport_distance(kNaN);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].plausibility.thresholds.teleport_distance: nan "
      "must be finite and positive"));
  add(SolveRow(
      "plausibility_rig_size_zero", "plausibility rig_size 0",
      [](auto& r) { Plausibility(r)->set_rig_size(0.0f); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].plausibility.rig_size: 0 must be finite and "
      "positive"));
  add(SolveRow(
      "plausibility_skip_unknown_joint", "plausibility skip of joint 'Tail'",
      [](auto& r) { Plausibility(r)->add_skip()->set_joint("Tail"); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].plausibility.skip[0].joint: no joint named 'Tail' "
      "in the skeleton"));
  add(SolveRow(
      "plausibility_skip_twice", "plausibility skip of LeftKnee twice",
      [](auto& r) {
        v1::PlausibilityOp* op = Plausibility(r);
        op->add_skip()->set_joint("LeftKnee");
        op->add_skip()->set_joint("LeftKnee");
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].plausibility.skip[1].joint: 'LeftKnee' is "
      "already in skip"));
  add(SolveRow(
      "plausibility_limit_nan", "plausibility limit on LeftKnee, euler min NaN",
      [](auto& r) {
        v1::JointLimitSpec* limit = Plausibility(r)->add_limits();
        limit->set_joint("LeftKnee");
        *limit->mutable_euler()->mutable_min() = Vec(kNaN, 0, 0);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].plausibility.limits[0].euler.min"));
  add(SolveRow(
      "plausibility_limits_id_in_solve",
      "plausibility limits_id 'walk_limits' in a Solve (no session)",
      [](auto& r) { Plausibility(r)->set_limits_id("walk_limits"); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].ops[0].plausibility.limits_id: 'walk_limits' names a "
      "limit set registered in a Session; outside a Session send the limits "
      "themselves in limits"));
  add(SessionRow(
      "limits_learn_unknown_clip",
      "limits learnt from clip 'run', not registered",
      [] {
        return std::vector<v1::SessionRequest>{Limits(
            [](v1::RegisterLimits& l) { l.set_learn_from_clips(0, "run"); })};
      },
      StatusCode::NOT_FOUND,
      "register_limits.learn_from_clips[0]: no clip named 'run' registered "
      "for skeleton 'cmu'"));
  add(SessionRow(
      "limits_no_source", "a limit set with neither limits nor clips",
      [] {
        return std::vector<v1::SessionRequest>{
            Limits([](v1::RegisterLimits& l) { l.clear_learn_from_clips(); })};
      },
      StatusCode::INVALID_ARGUMENT,
      "register_limits: set exactly one of limits (the limits themselves) "
      "and learn_from_clips"));
  add(SessionRow(
      "limits_learn_margin_negative", "limits learnt with margin -1",
      [] {
        return std::vector<v1::SessionRequest>{
            Limits([](v1::RegisterLimits& l) {
              l.mutable_learn_options()->set_margin(-1.0f);
            })};
      },
      StatusCode::INVALID_ARGUMENT,
      "register_limits.learn_options.margin: -1 must be finite and >= 0"));
  add(SessionRow(
      "limits_sent_missing_joint", "a limit set sent with a limit on 'Tail'",
      [] {
        return std::vector<v1::SessionRequest>{
            Limits([](v1::RegisterLimits& l) {
              l.clear_learn_from_clips();
              v1::JointLimitSpec* limit = l.add_limits();
              limit->set_joint("Tail");
              *limit->mutable_euler()->mutable_max() = Vec(1, 1, 1);
            })};
      },
      StatusCode::INVALID_ARGUMENT,
      "register_limits.limits[0].joint: no joint named 'Tail'"));
  add(SessionRow(
      "limits_id_unknown", "a plausibility rig naming limit set 'ghost'",
      [] {
        return std::vector<v1::SessionRequest>{Limits(), RefereeRig("ghost")};
      },
      StatusCode::NOT_FOUND,
      "register_rig.ops[0].plausibility.limits_id: no limit set 'ghost' in "
      "this session: register_limits first"));
  add(SolveRow(
      "plausibility_state_three_frames", "plausibility state of 3 frames",
      [](auto& r) { PlausibilityWithState(r, 3); },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].state[\"plausibility\"].plausibility.frames: 3 frames; "
      "the check keeps at most 2"));
  add(SolveRow(
      "plausibility_state_pose_short", "plausibility state pose of 2 joints",
      [](auto& r) {
        v1::PlausibilityState* state = PlausibilityWithState(r, 1);
        state->mutable_frames(0)
            ->mutable_pose()
            ->mutable_transforms()
            ->Truncate(20);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].state[\"plausibility\"].plausibility.frames[0].pose: 2 "
      "joints for a skeleton of 31"));
  add(SolveRow(
      "plausibility_state_dt_negative", "plausibility state frame dt -1",
      [](auto& r) {
        PlausibilityWithState(r, 1)->mutable_frames(0)->set_dt(-1.0f);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].state[\"plausibility\"].plausibility.frames[0].dt: -1 "
      "must be finite and >= 0"));
  add(SolveRow(
      "plausibility_state_pose_nan", "plausibility state pose with a NaN",
      [](auto& r) {
        PlausibilityWithState(r, 1)
            ->mutable_frames(0)
            ->mutable_pose()
            ->set_transforms(3, kNaN);
      },
      StatusCode::INVALID_ARGUMENT,
      "characters[0].state[\"plausibility\"].plausibility.frames[0].pose[0]"));

  add(SessionRow(
      "frame_time_backwards", "Frame.time 2, then Frame.time 1",
      [] {
        return std::vector<v1::SessionRequest>{TimedFrame(1, 2.0),
                                               TimedFrame(2, 1.0)};
      },
      StatusCode::INVALID_ARGUMENT,
      "frame.time: 1 is before the last frame's time 2"));
  add(SessionRow(
      "frame_time_nan", "Frame.time NaN",
      [] {
        return std::vector<v1::SessionRequest>{
            TimedFrame(1, std::numeric_limits<double>::quiet_NaN())};
      },
      StatusCode::INVALID_ARGUMENT, "frame.time: nan must be finite"));
  add(SessionRow(
      "hitbox_missing_joint", "a hitbox on joint 'Tail', not in the skeleton",
      [] {
        return std::vector<v1::SessionRequest>{
            Hitboxes([](v1::RegisterHitboxes& s) {
              s.mutable_hitboxes(1)->set_joint("Tail");
            })};
      },
      StatusCode::INVALID_ARGUMENT,
      "register_hitboxes.hitboxes[1].joint: no joint named 'Tail'"));
  add(SessionRow(
      "hitbox_radius_nan", "a capsule hitbox with radius NaN",
      [] {
        return std::vector<v1::SessionRequest>{
            Hitboxes([](v1::RegisterHitboxes& s) {
              s.mutable_hitboxes(0)->set_radius(kNaN);
            })};
      },
      StatusCode::INVALID_ARGUMENT,
      "register_hitboxes.hitboxes[0].radius: nan must be finite and > 0 "
      "(joint 'LeftKnee')"));
  add(SessionRow(
      "hitbox_offset_nan", "a hitbox offset translation with a NaN",
      [] {
        return std::vector<v1::SessionRequest>{
            Hitboxes([](v1::RegisterHitboxes& s) {
              *s.mutable_hitboxes(1)->mutable_offset()->mutable_translation() =
                  Vec(0, kNaN, 0);
            })};
      },
      StatusCode::INVALID_ARGUMENT,
      "register_hitboxes.hitboxes[1].offset.translation"));
  add(SessionRow(
      "hitbox_unknown_skeleton", "a hitbox set for skeleton 'ghost'",
      [] {
        return std::vector<v1::SessionRequest>{Hitboxes(
            [](v1::RegisterHitboxes& s) { s.set_skeleton_id("ghost"); })};
      },
      StatusCode::NOT_FOUND,
      "register_hitboxes.skeleton_id: no skeleton 'ghost' in this session"));
  add(SessionRow(
      "query_time_after_window", "a rewind to 2.0 s, newest frame 1.1 s",
      [] { return WithHistory(Query(2.0)); }, StatusCode::OUT_OF_RANGE,
      "query.time: 2 is outside the character's rewind window [1, 1.1]"));
  add(SessionRow(
      "query_time_before_window", "a rewind to 0.5 s, oldest frame 1 s",
      [] { return WithHistory(Query(0.5)); }, StatusCode::OUT_OF_RANGE,
      "query.time: 0.5 is outside the character's rewind window [1, 1.1]"));
  add(SessionRow(
      "query_no_history", "a query before the character's first frame",
      [] {
        return std::vector<v1::SessionRequest>{Hitboxes(), Query(0.0)};
      },
      StatusCode::OUT_OF_RANGE,
      "query.time: the character has no solved frame to rewind yet"));
  add(SessionRow(
      "query_ray_zero_direction", "a ray with direction (0, 0, 0)",
      [] {
        v1::SessionRequest q = Query(1.05);
        *q.mutable_query()->mutable_rays(0)->mutable_direction() = Vec(0, 0, 0);
        return WithHistory(q);
      },
      StatusCode::INVALID_ARGUMENT,
      "query.rays[0].direction: must be finite and of non-zero length"));
  add(SessionRow(
      "query_ray_origin_inf", "a ray origin with an infinity",
      [] {
        v1::SessionRequest q = Query(1.05);
        *q.mutable_query()->mutable_rays(0)->mutable_origin() = Vec(kInf, 0, 0);
        return WithHistory(q);
      },
      StatusCode::INVALID_ARGUMENT, "query.rays[0].origin: not finite"));
  add(SessionRow(
      "query_unknown_hitbox_set", "a query naming hitbox set 'armour'",
      [] {
        v1::SessionRequest q = Query(1.05);
        q.mutable_query()->mutable_targets(0)->set_hitbox_set("armour");
        return WithHistory(q);
      },
      StatusCode::NOT_FOUND,
      "query.targets[0].hitbox_set: no hitbox set 'armour'"));
  add(SessionRow(
      "query_unknown_character", "a query of character 'ghost'",
      [] {
        v1::SessionRequest q = Query(1.05);
        q.mutable_query()->mutable_targets(0)->set_character_id("ghost");
        return WithHistory(q);
      },
      StatusCode::NOT_FOUND,
      "query.targets[0].character_id: no character 'ghost'"));
  add(SessionRow(
      "query_sphere_negative_radius", "an overlap sphere of radius -1",
      [] {
        v1::SessionRequest q = Query(1.05);
        v1::SphereQuery* sphere = q.mutable_query()->add_spheres();
        sphere->set_radius(-1.0f);
        return WithHistory(q);
      },
      StatusCode::INVALID_ARGUMENT,
      "query.spheres[0].radius: -1 must be finite and >= 0"));

  // ---- the unary Query (characters and frames in the request)
  add(UnaryQueryRow(
      "unary_query_time_outside_frames",
      "a unary query at 0.5 of frames at 1 and 2",
      [](auto& r) { r.mutable_query()->set_time(0.5); },
      StatusCode::OUT_OF_RANGE,
      "query.time: 0.5 is outside the frames sent for "
      "query.targets[0] (character 'hero'): [1, 2]"));
  add(UnaryQueryRow(
      "unary_query_hitbox_missing_joint", "a unary query's hitbox on 'Tail'",
      [](auto& r) {
        r.mutable_characters(0)->mutable_hitboxes(0)->set_joint("Tail");
      },
      StatusCode::INVALID_ARGUMENT, "characters[0].hitboxes[0]"));
  add(UnaryQueryRow(
      "unary_query_frames_backwards", "a unary query's frames at 1 then 0",
      [](auto& r) {
        r.mutable_characters(0)->mutable_frames(1)->set_time(0.0);
      },
      StatusCode::INVALID_ARGUMENT, "characters[0].frames"));
  add(UnaryQueryRow(
      "unary_query_unknown_character", "a unary query of 'ghost'",
      [](auto& r) {
        r.mutable_query()->mutable_targets(0)->set_character_id("ghost");
      },
      StatusCode::NOT_FOUND,
      "query.targets[0].character_id: no character 'ghost' in the request's "
      "characters"));
  return rows;
}

}  // namespace posewire::server::bad_input
