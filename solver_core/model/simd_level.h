// Which instruction set the solver kernels use, chosen once per process.
//
// The product is built for baseline x86-64 (SSE2), so it runs on any x86-64
// server. A few kernels (see the callers of ActiveSimdLevel) also have AVX2
// versions, compiled per function with __attribute__((target("avx2"))) and
// picked at run time when the CPU and OS support AVX2.
//
// Determinism: a wider kernel performs, lane by lane, the same IEEE
// operations in the same order as the SSE2 one (no fused multiply-add, no
// estimates), so both give the same bits; each such kernel has a test that
// compares the two. A game server on an AVX2 machine and a client on an
// SSE2-only one agree bit for bit.
#ifndef POSEWIRE_SOLVER_CORE_MODEL_SIMD_LEVEL_H_
#define POSEWIRE_SOLVER_CORE_MODEL_SIMD_LEVEL_H_

#include "absl/strings/string_view.h"

// Whether this build compiles AVX2 kernels (x86-64 with GCC or Clang), and
// the attributes that compile one function for AVX2 in a file built for
// baseline x86-64. Call such a function only when ActiveSimdLevel() is
// kAvx2. A kernel made of many functions compiled from one source at two
// widths (the spring-bone lane engine) is instead compiled for AVX2 as a
// whole, between POSEWIRE_AVX2_REGION_BEGIN and POSEWIRE_AVX2_REGION_END;
// include every header before the region, so nothing else is compiled
// for AVX2.
#if defined(__x86_64__) && defined(__GNUC__) && defined(__SSE2__)
#define POSEWIRE_AVX2_KERNELS 1
#define POSEWIRE_AVX2_FUNCTION __attribute__((target("avx2"), noinline))
#define POSEWIRE_AVX2_INLINE \
  __attribute__((target("avx2"), always_inline)) inline
#if defined(__clang__)
// clang-format would split the pragma string.
// clang-format off
#define POSEWIRE_AVX2_REGION_BEGIN                                    \
  _Pragma("clang attribute push(__attribute__((target(\"avx2\"))), \
apply_to = function)")
#define POSEWIRE_AVX2_REGION_END _Pragma("clang attribute pop")
// clang-format on
#else
#define POSEWIRE_AVX2_REGION_BEGIN \
  _Pragma("GCC push_options") _Pragma("GCC target(\"avx2\")")
#define POSEWIRE_AVX2_REGION_END _Pragma("GCC pop_options")
#endif
#else
#define POSEWIRE_AVX2_KERNELS 0
#endif

namespace posewire {

enum class SimdLevel {
  kSse2 = 0,  // Baseline x86-64, or the portable scalar code elsewhere.
  kAvx2 = 1,
};

// The widest level this CPU and OS support (detected once).
SimdLevel DetectedSimdLevel();

// The level kernels use: DetectedSimdLevel(), unless lowered with
// SetMaxSimdLevel. Cheap (one relaxed atomic load).
SimdLevel ActiveSimdLevel();

// Caps ActiveSimdLevel at `level` (never above DetectedSimdLevel), so tests
// can compare the kernels and benchmarks can time each. Jobs already running
// may still use the previous level.
void SetMaxSimdLevel(SimdLevel level);

absl::string_view SimdLevelName(SimdLevel level);

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_MODEL_SIMD_LEVEL_H_
