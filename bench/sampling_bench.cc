// Clip sampling (SamplingJob) and crossfade steps (CrossfadeJob).
//
// The reference case, as in the ozz-animation comparison: a 64-joint clip
// with 30 keys on every translation, rotation and scale track (1 s at 30 fps,
// linear), played forward at 60 Hz with a cursor, looping. Items are joints,
// so items_per_second reads as joints per second.
//
// ./build/bench/posewire-bench --benchmark_filter='BM_(Sample|Crossfade)'
//     --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_data.h"
#include "solver_core/model/clip.h"
#include "solver_core/model/pose.h"
#include "solver_core/pose_ops/crossfade.h"
#include "solver_core/pose_ops/sampling_job.h"

namespace posewire {
namespace {

constexpr int kJoints = 64;
constexpr int kKeys = 30;
constexpr float kFrame = 1.0f / 60.0f;

// Deterministic floats in [lo, hi) from a fixed seed.
class Rng {
 public:
  explicit Rng(uint32_t seed) : engine_(seed) {}
  float Uniform(float lo, float hi) {
    return lo + (hi - lo) * static_cast<float>(engine_() >> 8) *
                    (1.0f / 16777216.0f);
  }

 private:
  std::mt19937 engine_;
};

const Skeleton& Skeleton64() {
  static const Skeleton* skeleton = [] {
    SkeletonDesc desc;
    for (int j = 0; j < kJoints; ++j) {
      desc.joint_names.push_back("joint" + std::to_string(j));
      desc.parents.push_back(j == 0 ? kNoParent : (j - 1) / 2);
      Transform rest;
      rest.translation = Eigen::Vector3f(0.0f, 0.1f, 0.0f);
      desc.rest_pose.push_back(rest);
    }
    return new Skeleton(*Skeleton::Create(std::move(desc)));
  }();
  return *skeleton;
}

// Smooth random motion: each track wanders by small steps from key to key.
Clip MakeClip(uint32_t seed, Interpolation interpolation) {
  Rng rng(seed);
  Clip clip;
  clip.name = "bench" + std::to_string(seed);
  clip.duration = (kKeys - 1) / 30.0f;
  clip.tracks.resize(kJoints);
  const int per_key = interpolation == Interpolation::kCubicSpline ? 3 : 1;
  for (JointTracks& jt : clip.tracks) {
    Eigen::Vector3f t(rng.Uniform(-1, 1), rng.Uniform(-1, 1),
                      rng.Uniform(-1, 1));
    Eigen::Vector3f axis(rng.Uniform(-1, 1), rng.Uniform(-1, 1),
                         rng.Uniform(-1, 1));
    axis.normalize();
    float angle = rng.Uniform(-3, 3);
    jt.translation.interpolation = interpolation;
    jt.rotation.interpolation = interpolation;
    jt.scale.interpolation = interpolation;
    for (int k = 0; k < kKeys; ++k) {
      const float time = k == kKeys - 1 ? clip.duration : k / 30.0f;
      jt.translation.times.push_back(time);
      jt.rotation.times.push_back(time);
      jt.scale.times.push_back(time);
      t += Eigen::Vector3f(rng.Uniform(-.05f, .05f), rng.Uniform(-.05f, .05f),
                           rng.Uniform(-.05f, .05f));
      angle += rng.Uniform(-0.1f, 0.1f);
      const Eigen::Quaternionf q(Eigen::AngleAxisf(angle, axis));
      const Eigen::Vector3f s =
          Eigen::Vector3f::Constant(1.0f + rng.Uniform(-0.1f, 0.1f));
      for (int v = 0; v < per_key; ++v) {
        const bool tangent = per_key == 3 && v != 1;
        jt.translation.values.push_back(tangent ? Eigen::Vector3f::Zero() : t);
        jt.rotation.values.push_back(tangent ? Eigen::Quaternionf(0, 0, 0, 0)
                                             : q);
        jt.scale.values.push_back(tangent ? Eigen::Vector3f::Zero() : s);
      }
    }
  }
  return clip;
}

const Clip& Linear64() {
  static const Clip* clip = new Clip(MakeClip(1, Interpolation::kLinear));
  return *clip;
}

void SampleForward(benchmark::State& state, bool validated_clip, bool unchecked,
                   RotationInterpolation ri, const Clip& clip) {
  const Skeleton& skeleton = Skeleton64();
  LocalPose pose(kJoints);
  SamplingCursor cursor;
  SamplingJob job;
  job.skeleton = &skeleton;
  job.clip = &clip;
  job.clip_validated = validated_clip;
  job.rotation_interpolation = ri;
  job.cursor = &cursor;
  job.output = absl::MakeSpan(pose);
  if (!job.Run().ok()) state.SkipWithError("invalid clip");
  float time = 0.0f;
  for (auto _ : state) {
    time += kFrame;
    if (time >= clip.duration) time -= clip.duration;
    job.time = time;
    if (unchecked) {
      job.RunUnchecked();
    } else {
      benchmark::DoNotOptimize(job.Run().ok());
    }
    benchmark::DoNotOptimize(pose.data());
  }
  state.SetItemsProcessed(state.iterations() * kJoints);
}

// The ozz comparison: Run() on a clip validated once at load.
void BM_SampleForward(benchmark::State& state) {
  SampleForward(state, true, false, RotationInterpolation::kNlerp, Linear64());
}
BENCHMARK(BM_SampleForward);

void BM_SampleForwardUnchecked(benchmark::State& state) {
  SampleForward(state, true, true, RotationInterpolation::kNlerp, Linear64());
}
BENCHMARK(BM_SampleForwardUnchecked);

// Re-validating every key of the clip on every call.
void BM_SampleForwardFullValidation(benchmark::State& state) {
  SampleForward(state, false, false, RotationInterpolation::kNlerp, Linear64());
}
BENCHMARK(BM_SampleForwardFullValidation);

void BM_SampleForwardSlerp(benchmark::State& state) {
  SampleForward(state, true, false, RotationInterpolation::kSlerp, Linear64());
}
BENCHMARK(BM_SampleForwardSlerp);

void BM_SampleForwardCubic(benchmark::State& state) {
  static const Clip* clip = new Clip(MakeClip(2, Interpolation::kCubicSpline));
  SampleForward(state, true, false, RotationInterpolation::kNlerp, *clip);
}
BENCHMARK(BM_SampleForwardCubic);

// Random access without a cursor: a binary search per track.
void BM_SampleSeek(benchmark::State& state) {
  const Skeleton& skeleton = Skeleton64();
  const Clip& clip = Linear64();
  LocalPose pose(kJoints);
  SamplingJob job;
  job.skeleton = &skeleton;
  job.clip = &clip;
  job.clip_validated = true;
  job.output = absl::MakeSpan(pose);
  Rng rng(7);
  std::vector<float> times(1024);
  for (float& t : times) t = rng.Uniform(0.0f, clip.duration);
  size_t i = 0;
  for (auto _ : state) {
    job.time = times[i++ & 1023];
    benchmark::DoNotOptimize(job.Run().ok());
    benchmark::DoNotOptimize(pose.data());
  }
  state.SetItemsProcessed(state.iterations() * kJoints);
}
BENCHMARK(BM_SampleSeek);

// The CMU walk (BVH, one key per frame on every channel) played forward.
void BM_SampleWalkClip(benchmark::State& state) {
  const ImportedAsset& walk = bench::LoadAsset("cmu_131_01_walk.bvh");
  const Skeleton& skeleton = walk.skeleton;
  const Clip& clip = walk.clips[0];
  LocalPose pose(skeleton.num_joints());
  SamplingCursor cursor;
  SamplingJob job;
  job.skeleton = &skeleton;
  job.clip = &clip;
  job.clip_validated = true;
  job.cursor = &cursor;
  job.output = absl::MakeSpan(pose);
  float time = 0.0f;
  for (auto _ : state) {
    time += kFrame;
    if (time >= clip.duration) time -= clip.duration;
    job.time = time;
    benchmark::DoNotOptimize(job.Run().ok());
    benchmark::DoNotOptimize(pose.data());
  }
  state.SetItemsProcessed(state.iterations() * skeleton.num_joints());
}
BENCHMARK(BM_SampleWalkClip);

// Crossfade steps at 60 Hz during a fade between two 64-joint clips: two
// samplings and a two-layer blend per step. The fade restarts before it
// finishes, so every step measured blends.
void BM_CrossfadeStep(benchmark::State& state) {
  const Skeleton& skeleton = Skeleton64();
  static const std::vector<Clip>* clips = new std::vector<Clip>{
      MakeClip(1, Interpolation::kLinear), MakeClip(3, Interpolation::kLinear)};
  const CrossfadeState start =
      *FadeTo(Play(0, 0.2f), FadeRequest{.clip = 1, .duration = 4.0f});
  CrossfadeState a = start;
  CrossfadeState b = start;
  CrossfadeWorkspace workspace;
  LocalPose pose(kJoints);
  CrossfadeJob job;
  job.skeleton = &skeleton;
  static const std::vector<const Clip*>* pointers =
      new std::vector<const Clip*>{&(*clips)[0], &(*clips)[1]};
  job.clips = *pointers;
  job.clips_validated = true;
  job.dt = kFrame;
  job.workspace = &workspace;
  job.output = absl::MakeSpan(pose);
  for (auto _ : state) {
    job.state = &a;
    job.next_state = &b;
    benchmark::DoNotOptimize(job.Run().ok());
    benchmark::DoNotOptimize(pose.data());
    std::swap(a, b);
    if (a.fades[0].elapsed > 3.5f) a = start;
  }
  state.SetItemsProcessed(state.iterations() * kJoints);
}
BENCHMARK(BM_CrossfadeStep);

}  // namespace
}  // namespace posewire
