#include "solver_core/model/simd_level.h"

#include <gtest/gtest.h>

namespace posewire {
namespace simd_level_test {

TEST(SimdLevelTest, CapLowersAndRestores) {
  const SimdLevel detected = DetectedSimdLevel();
  EXPECT_EQ(ActiveSimdLevel(), detected);
  SetMaxSimdLevel(SimdLevel::kSse2);
  EXPECT_EQ(ActiveSimdLevel(), SimdLevel::kSse2);
  // Never above what the CPU has.
  SetMaxSimdLevel(SimdLevel::kAvx2);
  EXPECT_EQ(ActiveSimdLevel(), detected);
}

TEST(SimdLevelTest, Names) {
  EXPECT_EQ(SimdLevelName(SimdLevel::kSse2), "sse2");
  EXPECT_EQ(SimdLevelName(SimdLevel::kAvx2), "avx2");
}

}  // namespace simd_level_test
}  // namespace posewire
