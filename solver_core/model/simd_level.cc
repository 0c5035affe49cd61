#include "solver_core/model/simd_level.h"

#include <algorithm>
#include <atomic>

namespace posewire {
namespace {

SimdLevel Detect() {
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
  // libgcc also checks the OS saves the AVX registers (XGETBV).
  if (__builtin_cpu_supports("avx2")) return SimdLevel::kAvx2;
#endif
  return SimdLevel::kSse2;
}

std::atomic<int>& Active() {
  static std::atomic<int> level{static_cast<int>(DetectedSimdLevel())};
  return level;
}

}  // namespace

SimdLevel DetectedSimdLevel() {
  static const SimdLevel detected = Detect();
  return detected;
}

SimdLevel ActiveSimdLevel() {
  return static_cast<SimdLevel>(Active().load(std::memory_order_relaxed));
}

void SetMaxSimdLevel(SimdLevel level) {
  const int capped =
      std::min(static_cast<int>(level), static_cast<int>(DetectedSimdLevel()));
  Active().store(capped, std::memory_order_relaxed);
}

absl::string_view SimdLevelName(SimdLevel level) {
  switch (level) {
    case SimdLevel::kSse2:
      return "sse2";
    case SimdLevel::kAvx2:
      return "avx2";
  }
  return "unknown";
}

}  // namespace posewire
