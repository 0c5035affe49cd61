// The lane engines of the spring-bone solve: spring_bone_lanes.inc (with the
// collider kernels of spring_collider_lanes.inc) compiled twice, at four
// lanes for SSE2 (or the portable fallback) and at eight inside an AVX2
// region, and SimulateInLanes, which picks one per solve.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/base/attributes.h"
#include "solver_core/dynamics/internal/spring_collider_lanes.h"
#include "solver_core/dynamics/internal/spring_geometry.h"
#include "solver_core/dynamics/internal/spring_lane_layout.h"
#include "solver_core/dynamics/internal/spring_solver.h"
#include "solver_core/model/internal/simd_lanes.h"
#include "solver_core/model/quaternion_math.h"
#include "solver_core/model/simd_level.h"

namespace posewire {
namespace spring_internal {
namespace {

template <int W>
using LaneLayoutT = SpringLaneLayoutW<W>;
template <int W>
using LaneGroup = SpringLaneGroup<W>;
template <int W>
using LaneArcGroup = SpringLaneArcGroup<W>;
template <int W>
using LaneOutputGroup = SpringLaneOutputGroup<W>;

// The four-lane (SSE2, or portable) engine: always available.
namespace narrow {
namespace L = ::posewire::lanes;
// The collider kernels again (the public ones of spring_colliders.h are the
// same source, so the same bits): here they inline into the engine.
#include "solver_core/dynamics/internal/spring_collider_lanes.inc"
namespace K = narrow;
#include "solver_core/dynamics/internal/spring_bone_lanes.inc"
}  // namespace narrow

}  // namespace
}  // namespace spring_internal
}  // namespace posewire

#if POSEWIRE_AVX2_KERNELS
// The eight-lane engine and collider kernels, compiled for AVX2 (no FMA)
// from the same sources; used only when ActiveSimdLevel() is kAvx2. Every
// header is included above, so nothing else picks up the AVX2 target.
POSEWIRE_AVX2_REGION_BEGIN
// Inside the region, as the eight-lane engine's lane operations always were
// compiled: with them compiled outside it (target attribute only), some
// eight-lane output rotations differed from the four-lane ones in the last
// bit (spring_bones_test's SIMD comparisons), cause not yet found.
#include "solver_core/model/internal/simd_lanes_avx2.h"
namespace posewire {
namespace spring_internal {
namespace {
namespace wide {
namespace L = ::posewire::lanes_avx2;
static_assert(L::kWidth == kSpringWideLanes);
#include "solver_core/dynamics/internal/spring_collider_lanes.inc"
namespace K = wide;
#include "solver_core/dynamics/internal/spring_bone_lanes.inc"
}  // namespace wide
}  // namespace
}  // namespace spring_internal
}  // namespace posewire
POSEWIRE_AVX2_REGION_END
#endif  // POSEWIRE_AVX2_KERNELS

namespace posewire {
namespace spring_internal {

void SimulateInLanes(const SpringBonesJob& job, const SpringLaneLayout& layout,
                     SpringSolveBuffers& buffers, Solver& solver,
                     DynamicsState& s, SpringBonesResult& report) {
  // The width is chosen once per solve; both give the same bits.
#if POSEWIRE_AVX2_KERNELS
  if (layout.prefer_wide && ActiveSimdLevel() == SimdLevel::kAvx2) {
    wide::Engine engine(job, layout.wide, buffers, buffers.wide_lanes);
    solver.Simulate(engine, s, report);
    return;
  }
#endif
  narrow::Engine engine(job, layout.narrow, buffers, buffers.lanes);
  solver.Simulate(engine, s, report);
}

}  // namespace spring_internal
}  // namespace posewire
