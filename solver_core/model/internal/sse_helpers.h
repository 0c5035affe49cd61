// SSE2 helpers shared by the kernels of the model, pose operations and
// analytic and chain IK: 4-vector and 3-vector loads, splats and dot products
// whose summation orders match the scalar code's, so a kernel written with
// them keeps the bits of the formula it replaces.
#ifndef POSEWIRE_SOLVER_CORE_MODEL_INTERNAL_SSE_HELPERS_H_
#define POSEWIRE_SOLVER_CORE_MODEL_INTERNAL_SSE_HELPERS_H_

#include <Eigen/Core>
#include <cstddef>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "solver_core/model/transform.h"

namespace posewire {

#if defined(__SSE2__)
// The SSE kernels read a Transform as three 16-byte rows: translation and
// padding, rotation (x, y, z, w), scale and padding.
inline constexpr bool kSimdTransformLayout =
    sizeof(Transform) == 48 && alignof(Transform) == 16 &&
    offsetof(Transform, translation) == 0 &&
    offsetof(Transform, rotation) == 16 && offsetof(Transform, scale) == 32;

namespace simd {

// Dot4 in every lane, same summation order as the scalar Dot4.
inline __m128 Dot4(__m128 a, __m128 b) {
  const __m128 m = _mm_mul_ps(a, b);
  const __m128 s = _mm_add_ps(m, _mm_shuffle_ps(m, m, _MM_SHUFFLE(1, 0, 3, 2)));
  return _mm_add_ps(s, _mm_shuffle_ps(s, s, _MM_SHUFFLE(2, 3, 0, 1)));
}

// Lanes x, y, z kept, the padding lane zeroed (it may hold anything,
// including denormals that would slow the arithmetic down).
inline __m128 LoadXyz(const float* p) {
  const __m128 mask = _mm_castsi128_ps(_mm_set_epi32(0, -1, -1, -1));
  return _mm_and_ps(_mm_loadu_ps(p), mask);
}

// Each lane of `v` in a register of its own: out[k] = (v[k], v[k], v[k],
// v[k]), for scaling four quaternions by four per-quaternion factors.
inline void SplatLanes(__m128 v, __m128 out[4]) {
  out[0] = _mm_shuffle_ps(v, v, _MM_SHUFFLE(0, 0, 0, 0));
  out[1] = _mm_shuffle_ps(v, v, _MM_SHUFFLE(1, 1, 1, 1));
  out[2] = _mm_shuffle_ps(v, v, _MM_SHUFFLE(2, 2, 2, 2));
  out[3] = _mm_shuffle_ps(v, v, _MM_SHUFFLE(3, 3, 3, 3));
}

}  // namespace simd
#endif

#if defined(__SSE2__)
// 3-vectors in SSE registers, for the analytic IK solvers (two-bone, aim):
// lanes x, y, z, lane 3 zero. Each helper performs the operations of Eigen's
// scalar code on a Vector3f in the same order, so the SIMD solvers keep the
// bits of the scalar formulas they replace. Cross products and rotations by
// a quaternion are transform.h's CrossRows and RotateRow (Eigen's form too).
namespace simd {

// Reads exactly the 12 bytes of `v` (a 16-byte load could run past the end of
// the object). x and y come in through _mm_loadl_epi64, whose pointer type
// may alias the floats (_mm_load_sd would read them as a double, which the
// optimiser may then move across stores to the vector).
inline __m128 LoadVector3(const Eigen::Vector3f& v) {
  const __m128 xy = _mm_castsi128_ps(
      _mm_loadl_epi64(reinterpret_cast<const __m128i*>(v.data())));
  return _mm_movelh_ps(xy, _mm_load_ss(v.data() + 2));
}

inline Eigen::Vector3f ToVector3(__m128 v) {
  alignas(16) float f[4];
  _mm_store_ps(f, v);
  return Eigen::Vector3f(f[0], f[1], f[2]);
}

template <int kLane>
inline __m128 Splat(__m128 v) {
  return _mm_shuffle_ps(v, v, _MM_SHUFFLE(kLane, kLane, kLane, kLane));
}

// a.b in lane 0 (the other lanes hold partial sums), summed as x + (y + z):
// the order of Eigen's dot() and squaredNorm() on a Vector3f.
inline __m128 Dot3(__m128 a, __m128 b) {
  const __m128 m = _mm_mul_ps(a, b);
  return _mm_add_ss(m, _mm_add_ss(Splat<1>(m), _mm_movehl_ps(m, m)));
}

}  // namespace simd
#endif

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_MODEL_INTERNAL_SSE_HELPERS_H_
