// Two-bone IK (TwoBoneIkJob) on the CMU walk rig's left arm: shoulder, elbow,
// wrist from the rest pose toward a reachable target in front of the
// shoulder. Each iteration restores the chain's input rotations and runs the
// validated job with its result requested, in place (as ozz's IKTwoBoneJob,
// which writes only the two corrections) unless the name says it copies the
// whole pose.
//
// At default settings (BM_TwoBoneIkDefaultsWalk: what a client sending only
// the three joints and the target gets, the hinge axis derived from the
// pose; Arg 1: the old default hinge, mid_axis (0, 0, 1), for the ratio):
// the CMU walk's arms and legs reaching where their wrist or ankle is 30
// frames later, 64 reachable cases each with its own input pose.
//
// ./build/bench/posewire-bench --benchmark_filter=BM_TwoBoneIk
//     --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <iostream>
#include <vector>

#include "bench/bench_data.h"
#include "solver_core/analytic_ik/two_bone_ik.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/model/pose.h"

namespace posewire {
namespace {

struct ArmSetup {
  const Skeleton* skeleton = nullptr;
  std::vector<Transform> local;
  std::vector<Transform> model;
  int start = -1;
  int mid = -1;
  int end = -1;
  Eigen::Vector3f target;
  Eigen::Vector3f pole;
  float chain_length = 0.0f;
  TwoBoneIkResult result;
};

ArmSetup MakeArm(float reach_fraction) {
  const ImportedAsset& walk = bench::LoadAsset("cmu_131_01_walk.bvh");
  ArmSetup arm;
  arm.skeleton = &walk.skeleton;
  arm.local = RestPose(walk.skeleton);
  arm.model.resize(arm.local.size());
  LocalToModelJob fk{.skeleton = arm.skeleton,
                     .input = arm.local,
                     .output = absl::MakeSpan(arm.model)};
  if (!fk.Run().ok()) std::abort();
  arm.start = walk.skeleton.FindJoint("LeftShoulder");
  arm.mid = walk.skeleton.FindJoint("LeftElbow");
  arm.end = walk.skeleton.FindJoint("LeftWrist");
  if (arm.start < 0 || arm.mid < 0 || arm.end < 0) {
    std::cerr << "CMU walk rig lacks the left arm joints\n";
    std::exit(1);
  }
  const Eigen::Vector3f a = arm.model[arm.start].translation;
  arm.chain_length =
      (arm.model[arm.mid].translation - a).norm() +
      (arm.model[arm.end].translation - arm.model[arm.mid].translation).norm();
  arm.target = a + Eigen::Vector3f(0.4f, -0.5f, 0.6f).normalized() *
                       (reach_fraction * arm.chain_length);
  arm.pole = Eigen::Vector3f(0, 0, -1);
  return arm;
}

TwoBoneIkJob ArmJob(ArmSetup& arm, absl::Span<Transform> output) {
  return TwoBoneIkJob{
      .skeleton = arm.skeleton,
      .input = arm.local,
      .parent_model = arm.model[arm.skeleton->parent(arm.start)],
      .start_joint = arm.start,
      .mid_joint = arm.mid,
      .end_joint = arm.end,
      .target = arm.target,
      .pole_vector = arm.pole,
      .mid_axis = {{1, 0, 0}},
      .output = output,
      .result = &arm.result};
}

// Runs `job` in place, restoring the chain's rotations before each solve so
// every iteration solves the same problem.
void RunInPlace(benchmark::State& state, ArmSetup& arm,
                const TwoBoneIkJob& job) {
  const Transform start = arm.local[arm.start];
  const Transform mid = arm.local[arm.mid];
  const Transform end = arm.local[arm.end];
  for (auto _ : state) {
    arm.local[arm.start] = start;
    arm.local[arm.mid] = mid;
    arm.local[arm.end] = end;
    benchmark::DoNotOptimize(job.Run().ok());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_TwoBoneIk(benchmark::State& state) {
  ArmSetup arm = MakeArm(0.7f);
  const TwoBoneIkJob job = ArmJob(arm, absl::MakeSpan(arm.local));
  RunInPlace(state, arm, job);
}
BENCHMARK(BM_TwoBoneIk);

// Without the optional result (reached, error), which the job then skips:
// the outputs ozz's IKTwoBoneJob has (the corrected rotations).
void BM_TwoBoneIkNoResult(benchmark::State& state) {
  ArmSetup arm = MakeArm(0.7f);
  TwoBoneIkJob job = ArmJob(arm, absl::MakeSpan(arm.local));
  job.result = nullptr;
  RunInPlace(state, arm, job);
}
BENCHMARK(BM_TwoBoneIkNoResult);

void BM_TwoBoneIkUnreachable(benchmark::State& state) {
  ArmSetup arm = MakeArm(1.5f);
  const TwoBoneIkJob job = ArmJob(arm, absl::MakeSpan(arm.local));
  RunInPlace(state, arm, job);
}
BENCHMARK(BM_TwoBoneIkUnreachable);

// Every option on: soften, stretch, twist, partial weight, end rotation.
void BM_TwoBoneIkAllOptions(benchmark::State& state) {
  ArmSetup arm = MakeArm(1.1f);
  TwoBoneIkJob job = ArmJob(arm, absl::MakeSpan(arm.local));
  job.soften = 0.9f;
  job.stretch = true;
  job.max_stretch = 1.2f;
  job.twist_angle = 0.3f;
  job.weight = 0.8f;
  job.end_rotation =
      Eigen::Quaternionf(Eigen::AngleAxisf(0.5f, Eigen::Vector3f::UnitY()));
  job.end_rotation_weight = 0.5f;
  RunInPlace(state, arm, job);
}
BENCHMARK(BM_TwoBoneIkAllOptions);

// Separate output: the solve plus a copy of the whole 31-joint pose.
void BM_TwoBoneIkCopyPose(benchmark::State& state) {
  ArmSetup arm = MakeArm(0.7f);
  std::vector<Transform> output(arm.local.size());
  const TwoBoneIkJob job = ArmJob(arm, absl::MakeSpan(output));
  for (auto _ : state) {
    benchmark::DoNotOptimize(job.Run().ok());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_TwoBoneIkCopyPose);

// Arg 0: defaults (hinge from the pose); Arg 1: the old default hinge.
void BM_TwoBoneIkDefaultsWalk(benchmark::State& state) {
  const bench::WalkLimbCases& w = bench::WalkLimbs(3);
  std::vector<Transform> out(w.skeleton->num_joints());
  TwoBoneIkResult r;
  long reached = 0, solves = 0;
  size_t t = 0;
  for (auto _ : state) {
    const bench::WalkLimbCases::Case& c = w.cases[t];
    t = (t + 1) % w.cases.size();
    TwoBoneIkJob job{.skeleton = w.skeleton,
                     .input = c.input,
                     .parent_model = ParentModelTransformOrRoot(
                         *w.skeleton, c.input, c.chain[0]),
                     .start_joint = c.chain[0],
                     .mid_joint = c.chain[1],
                     .end_joint = c.chain[2],
                     .target = c.target,
                     .output = absl::MakeSpan(out),
                     .result = &r};
    if (state.range(0) == 1) job.mid_axis = Eigen::Vector3f::UnitZ();
    if (!job.Run().ok()) state.SkipWithError("solve failed");
    benchmark::DoNotOptimize(out.data());
    reached += r.reached;
    ++solves;
  }
  state.counters["reached"] = double(reached) / double(solves);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_TwoBoneIkDefaultsWalk)->Arg(0)->Arg(1);

}  // namespace
}  // namespace posewire
