#include "solver_core/dynamics/internal/spring_noise.h"

#include <cmath>

namespace posewire {
namespace spring_internal {
namespace {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

float LatticeValue(uint64_t seed, int chain, int64_t cell) {
  const uint64_t h = SplitMix64(
      seed ^ SplitMix64(static_cast<uint64_t>(chain) * 0x632be59bd9b4e019ull ^
                        SplitMix64(static_cast<uint64_t>(cell))));
  // Top 24 bits: exactly representable in a float.
  return static_cast<float>(h >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

}  // namespace

float ValueNoise(uint64_t seed, int chain, double x) {
  // Bounded so the cell index fits in 64 bits however long a session runs.
  x = std::fmod(x, 4294967296.0);
  const double cell = std::floor(x);
  const float t = static_cast<float>(x - cell);
  const float smooth = t * t * (3.0f - 2.0f * t);
  const int64_t i = static_cast<int64_t>(cell);
  const float a = LatticeValue(seed, chain, i);
  const float b = LatticeValue(seed, chain, i + 1);
  return a + (b - a) * smooth;
}

}  // namespace spring_internal
}  // namespace posewire
