// CCD and FABRIK on a 10-joint chain (the goal: <= 3 us CCD and <= 2 us
// FABRIK per unconstrained solve), reachable and
// unreachable targets, with and without joint limits; plus a FABRIK tree
// (a hand: wrist and five three-joint fingers), and a dragged target solved
// from the previous solve's output (a DCC plugin's frames).
//
// Each benchmark cycles through 64 precomputed targets so no single easy or
// hard case dominates, runs the validated job (Run(), as the service would),
// and reports the mean iterations and the fraction reached as counters.
//
// At default settings (BM_*Defaults*: what a client sending only the chain
// and target gets; Arg 1: the old defaults, 20 iterations, 1e-3 absolute,
// no closing step, for the ratio): the CMU walk's limbs reaching where they
// are 30 frames later, and the 10-joint chain's reachable targets.
//
// ./build/bench/posewire-bench --benchmark_filter='BM_(Ccd|Fabrik)'
//     --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/bench_data.h"
#include "solver_core/chain_ik/ccd_ik.h"
#include "solver_core/chain_ik/fabrik_ik.h"
#include "solver_core/chain_ik/joint_limits.h"
#include "solver_core/model/pose.h"

namespace posewire {
namespace {

constexpr int kChainJoints = 10;
constexpr int kTargets = 64;
constexpr float kPi = 3.14159265358979f;

Eigen::Quaternionf RandomRotation(std::mt19937& rng, float max_angle) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Eigen::Vector3f axis;
  do {
    axis = Eigen::Vector3f(u(rng), u(rng), u(rng));
  } while (axis.norm() < 0.1f || axis.norm() > 1.0f);
  return Eigen::Quaternionf(
      Eigen::AngleAxisf(max_angle * 0.5f * (u(rng) + 1.0f), axis.normalized()));
}

// Model-space position of `joint` (plain FK over the whole pose).
Eigen::Vector3f Position(const Skeleton& s, const std::vector<Transform>& pose,
                         int joint) {
  std::vector<Transform> model(pose.size());
  for (int j = 0; j < s.num_joints(); ++j) {
    const int p = s.parent(j);
    model[j] = p == kNoParent ? pose[j] : Combine(model[p], pose[j]);
  }
  return model[joint].translation;
}

struct ChainSetup {
  Skeleton skeleton;
  std::vector<int> chain;
  std::vector<Transform> input;
  std::vector<JointLimit> limits;
  float length = 0.0f;
  std::vector<Eigen::Vector3f> reachable, reachable_limited, unreachable;

  ChainSetup() {
    // A root, then ten joints with unit bones and non-identity rest frames.
    SkeletonDesc d;
    std::mt19937 rng(1234);
    d.joint_names.push_back("root");
    d.parents.push_back(kNoParent);
    d.rest_pose.push_back(Transform());
    for (int i = 0; i < kChainJoints; ++i) {
      Transform t;
      t.translation =
          i == 0 ? Eigen::Vector3f::Zero() : Eigen::Vector3f(0.0f, 1.0f, 0.0f);
      t.rotation = RandomRotation(rng, 0.3f);
      d.joint_names.push_back(absl::StrCat("j", i));
      d.parents.push_back(i);
      d.rest_pose.push_back(t);
      chain.push_back(i + 1);
    }
    skeleton = *Skeleton::Create(std::move(d));
    input = RestPose(skeleton);
    length = kChainJoints - 1;
    limits.resize(skeleton.num_joints());
    for (int j : chain) {
      limits[j] = SwingTwistLimit(Eigen::Vector3f::UnitY(), 1.0f, -0.5f, 0.5f);
      limits[j].reference = input[j].rotation;
    }
    const Eigen::Vector3f root = Position(skeleton, input, chain[0]);
    for (int t = 0; t < kTargets; ++t) {
      std::vector<Transform> free = input, limited = input;
      for (int j : chain) {
        free[j].rotation = RandomRotation(rng, 1.2f);
        limited[j].rotation =
            ApplyJointLimit(limits[j], RandomRotation(rng, kPi));
      }
      reachable.push_back(Position(skeleton, free, chain.back()));
      reachable_limited.push_back(Position(skeleton, limited, chain.back()));
      Eigen::Vector3f dir(std::uniform_real_distribution<float>(-1, 1)(rng),
                          std::uniform_real_distribution<float>(-1, 1)(rng),
                          std::uniform_real_distribution<float>(-1, 1)(rng));
      unreachable.push_back(root + dir.normalized() * (1.5f * length));
    }
  }
};

const ChainSetup& Setup() {
  static const ChainSetup* setup = new ChainSetup();
  return *setup;
}

// Mean iterations and fraction reached over a benchmark's solves, reported
// as counters.
struct SolveTally {
  long iterations = 0, reached = 0, solves = 0;

  void Add(const IkResult& r) {
    iterations += r.iterations;
    reached += r.reached;
    ++solves;
  }
  void Report(benchmark::State& state) const {
    state.counters["iterations"] = double(iterations) / double(solves);
    state.counters["reached"] = double(reached) / double(solves);
    state.SetItemsProcessed(state.iterations());
  }
};

template <typename Job>
void RunSolves(benchmark::State& state, Job job,
               const std::vector<Eigen::Vector3f>& targets) {
  IkResult r;
  job.result = &r;
  SolveTally tally;
  size_t t = 0;
  for (auto _ : state) {
    job.target = targets[t];
    t = (t + 1) % targets.size();
    if (!job.Run().ok()) state.SkipWithError("solve failed");
    benchmark::DoNotOptimize(job.output.data());
    tally.Add(r);
  }
  tally.Report(state);
}

template <typename Job>
Job MakeJob(std::vector<Transform>& out, bool limited) {
  const ChainSetup& s = Setup();
  out = s.input;
  Job job;
  job.skeleton = &s.skeleton;
  job.input = s.input;
  job.chain = s.chain;
  job.max_iterations = 50;
  job.tolerance = AbsoluteTolerance(1e-3f * s.length);
  if (limited) job.limits = s.limits;
  job.output = absl::MakeSpan(out);
  return job;
}

void BM_CcdReachable(benchmark::State& state) {
  std::vector<Transform> out;
  RunSolves(state, MakeJob<CcdIkJob>(out, false), Setup().reachable);
}
BENCHMARK(BM_CcdReachable);

void BM_CcdUnreachable(benchmark::State& state) {
  std::vector<Transform> out;
  RunSolves(state, MakeJob<CcdIkJob>(out, false), Setup().unreachable);
}
BENCHMARK(BM_CcdUnreachable);

void BM_CcdReachableLimited(benchmark::State& state) {
  std::vector<Transform> out;
  RunSolves(state, MakeJob<CcdIkJob>(out, true), Setup().reachable_limited);
}
BENCHMARK(BM_CcdReachableLimited);

void BM_CcdUnreachableLimited(benchmark::State& state) {
  std::vector<Transform> out;
  RunSolves(state, MakeJob<CcdIkJob>(out, true), Setup().unreachable);
}
BENCHMARK(BM_CcdUnreachableLimited);

void BM_FabrikReachable(benchmark::State& state) {
  std::vector<Transform> out;
  RunSolves(state, MakeJob<FabrikIkJob>(out, false), Setup().reachable);
}
BENCHMARK(BM_FabrikReachable);

void BM_FabrikUnreachable(benchmark::State& state) {
  std::vector<Transform> out;
  RunSolves(state, MakeJob<FabrikIkJob>(out, false), Setup().unreachable);
}
BENCHMARK(BM_FabrikUnreachable);

void BM_FabrikReachableLimited(benchmark::State& state) {
  std::vector<Transform> out;
  RunSolves(state, MakeJob<FabrikIkJob>(out, true), Setup().reachable_limited);
}
BENCHMARK(BM_FabrikReachableLimited);

void BM_FabrikUnreachableLimited(benchmark::State& state) {
  std::vector<Transform> out;
  RunSolves(state, MakeJob<FabrikIkJob>(out, true), Setup().unreachable);
}
BENCHMARK(BM_FabrikUnreachableLimited);

// A fixed per-frame budget and no tolerance, as game runtimes run these
// solvers (FinalIK's default is 4 iterations a frame, relying on the
// previous frame's pose): the cost of one solve at that budget.
template <typename Job>
void FixedBudget(benchmark::State& state) {
  std::vector<Transform> out;
  Job job = MakeJob<Job>(out, false);
  job.max_iterations = static_cast<int>(state.range(0));
  job.tolerance = AbsoluteTolerance(0.0f);
  RunSolves(state, job, Setup().reachable);
}

void BM_CcdFixedIterations(benchmark::State& state) {
  FixedBudget<CcdIkJob>(state);
}
BENCHMARK(BM_CcdFixedIterations)->Arg(1)->Arg(4)->Arg(10);

void BM_FabrikFixedIterations(benchmark::State& state) {
  FixedBudget<FabrikIkJob>(state);
}
BENCHMARK(BM_FabrikFixedIterations)->Arg(1)->Arg(4)->Arg(10);

// An artist dragging the target (the DCC plugins' case): the target moves
// in kDragSteps equal steps from each reachable target to the next, and
// each solve starts from the previous solve's output, as a plugin sends
// back the pose it last received. Same tolerance and cap as the cold
// solves above. The two pose buffers swap roles each solve, so no copy is
// timed; the first lap from the rest pose is untimed.
constexpr int kDragSteps = 30;

std::vector<Eigen::Vector3f> DragPath() {
  const std::vector<Eigen::Vector3f>& stops = Setup().reachable;
  std::vector<Eigen::Vector3f> path;
  for (size_t k = 0; k < stops.size(); ++k) {
    const Eigen::Vector3f& from = stops[k];
    const Eigen::Vector3f& to = stops[(k + 1) % stops.size()];
    for (int i = 0; i < kDragSteps; ++i) {
      path.push_back(from + (to - from) * (static_cast<float>(i) / kDragSteps));
    }
  }
  return path;
}

template <typename Job>
void Dragged(benchmark::State& state) {
  const std::vector<Eigen::Vector3f> path = DragPath();
  std::vector<Transform> a = Setup().input, b = Setup().input;
  std::vector<Transform>* in = &a;
  std::vector<Transform>* out = &b;
  std::vector<Transform> unused;
  Job job = MakeJob<Job>(unused, false);
  IkResult r;
  job.result = &r;
  auto solve = [&](const Eigen::Vector3f& target) {
    job.input = *in;
    job.output = absl::MakeSpan(*out);
    job.target = target;
    const bool ok = job.Run().ok();
    std::swap(in, out);
    return ok;
  };
  for (const Eigen::Vector3f& target : path) {
    if (!solve(target)) state.SkipWithError("solve failed");
  }
  SolveTally tally;
  size_t t = 0;
  for (auto _ : state) {
    if (!solve(path[t])) state.SkipWithError("solve failed");
    t = (t + 1) % path.size();
    benchmark::DoNotOptimize(in->data());
    tally.Add(r);
  }
  tally.Report(state);
}

void BM_CcdDragged(benchmark::State& state) { Dragged<CcdIkJob>(state); }
BENCHMARK(BM_CcdDragged);

void BM_FabrikDragged(benchmark::State& state) { Dragged<FabrikIkJob>(state); }
BENCHMARK(BM_FabrikDragged);

// Arg 1: the old defaults.
template <typename Job>
void SetDefaults(Job& job, const benchmark::State& state) {
  if (state.range(0) == 1) {
    job.max_iterations = 20;
    job.tolerance = AbsoluteTolerance(1e-3f);
    job.polish = false;
  }
}

template <typename Job>
void DefaultsOnTheWalk(benchmark::State& state) {
  const bench::WalkLimbCases& w = bench::WalkLimbs();
  std::vector<Transform> out(w.skeleton->num_joints());
  Job job;
  job.skeleton = w.skeleton;
  job.output = absl::MakeSpan(out);
  SetDefaults(job, state);
  IkResult r;
  job.result = &r;
  SolveTally tally;
  size_t t = 0;
  for (auto _ : state) {
    const bench::WalkLimbCases::Case& c = w.cases[t];
    t = (t + 1) % w.cases.size();
    job.input = c.input;
    job.chain = c.chain;
    job.target = c.target;
    if (!job.Run().ok()) state.SkipWithError("solve failed");
    benchmark::DoNotOptimize(out.data());
    tally.Add(r);
  }
  tally.Report(state);
}

void BM_CcdDefaultsWalk(benchmark::State& state) {
  DefaultsOnTheWalk<CcdIkJob>(state);
}
BENCHMARK(BM_CcdDefaultsWalk)->Arg(0)->Arg(1);

void BM_FabrikDefaultsWalk(benchmark::State& state) {
  DefaultsOnTheWalk<FabrikIkJob>(state);
}
BENCHMARK(BM_FabrikDefaultsWalk)->Arg(0)->Arg(1);

template <typename Job>
void DefaultsOnTheLongChain(benchmark::State& state) {
  const ChainSetup& s = Setup();
  std::vector<Transform> out = s.input;
  Job job;
  job.skeleton = &s.skeleton;
  job.input = s.input;
  job.chain = s.chain;
  job.output = absl::MakeSpan(out);
  SetDefaults(job, state);
  RunSolves(state, job, s.reachable);
}

void BM_CcdDefaults10Joints(benchmark::State& state) {
  DefaultsOnTheLongChain<CcdIkJob>(state);
}
BENCHMARK(BM_CcdDefaults10Joints)->Arg(0)->Arg(1);

void BM_FabrikDefaults10Joints(benchmark::State& state) {
  DefaultsOnTheLongChain<FabrikIkJob>(state);
}
BENCHMARK(BM_FabrikDefaults10Joints)->Arg(0)->Arg(1);

// A hand: forearm, wrist (the sub-base), five fingers of three joints.
void BM_FabrikTreeHand(benchmark::State& state) {
  SkeletonDesc d;
  auto add = [&](const std::string& name, int parent, Eigen::Vector3f t) {
    Transform x;
    x.translation = t;
    d.joint_names.push_back(name);
    d.parents.push_back(parent);
    d.rest_pose.push_back(x);
    return static_cast<int>(d.parents.size()) - 1;
  };
  add("forearm", kNoParent, {0, 0, 0});
  const int wrist = add("wrist", 0, {0, 0.25f, 0});
  std::vector<int> tips;
  for (int f = 0; f < 5; ++f) {
    int j = add(absl::StrCat("a", f), wrist, {-0.04f + 0.02f * f, 0.08f, 0});
    j = add(absl::StrCat("b", f), j, {0, 0.04f, 0});
    j = add(absl::StrCat("c", f), j, {0, 0.03f, 0});
    tips.push_back(add(absl::StrCat("d", f), j, {0, 0.02f, 0}));
  }
  const Skeleton s = *Skeleton::Create(std::move(d));
  const std::vector<Transform> input = RestPose(s);
  std::mt19937 rng(99);
  std::vector<std::vector<FabrikEffector>> cases;
  for (int t = 0; t < kTargets; ++t) {
    std::vector<Transform> other = input;
    for (int j = 1; j < s.num_joints(); ++j) {
      other[j].rotation = RandomRotation(rng, 0.6f);
    }
    std::vector<FabrikEffector> e;
    for (int tip : tips) e.push_back({tip, Position(s, other, tip), 1.0f});
    cases.push_back(e);
  }
  std::vector<Transform> out = input;
  IkResult r;
  FabrikTreeIkJob job;
  job.skeleton = &s;
  job.input = input;
  job.root = wrist;
  job.max_iterations = 50;
  job.tolerance = AbsoluteTolerance(1e-3f);
  job.output = absl::MakeSpan(out);
  job.result = &r;
  SolveTally tally;
  size_t t = 0;
  for (auto _ : state) {
    job.effectors = cases[t];
    t = (t + 1) % cases.size();
    if (!job.Run().ok()) state.SkipWithError("solve failed");
    benchmark::DoNotOptimize(out.data());
    tally.Add(r);
  }
  tally.Report(state);
}
BENCHMARK(BM_FabrikTreeHand);

}  // namespace
}  // namespace posewire
