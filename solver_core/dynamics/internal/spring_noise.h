// Wind gusts for the spring-bone solver: a deterministic, smooth value noise
// of simulated time (no hidden random state, the same bits everywhere).
#ifndef POSEWIRE_SOLVER_CORE_DYNAMICS_INTERNAL_SPRING_NOISE_H_
#define POSEWIRE_SOLVER_CORE_DYNAMICS_INTERNAL_SPRING_NOISE_H_

#include <cstdint>

namespace posewire {
namespace spring_internal {

// Value noise in [-1, 1] at `x` (cells of 1) for one chain: smoothstep
// between values on an integer lattice that come from a stateless hash of
// (seed, chain, cell).
float ValueNoise(uint64_t seed, int chain, double x);

}  // namespace spring_internal
}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_DYNAMICS_INTERNAL_SPRING_NOISE_H_
