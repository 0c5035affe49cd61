// The solver core's SIMD layer, eight lanes with AVX2: the counterpart of
// simd_lanes.h (same names, same determinism rules, which are written
// there), so the width-generic spring-bone kernels (spring_*_lanes.inc)
// compile against either, plus the row operations of kernels that hold two
// transform rows or quaternions per register, one per 128-bit half (AVX's
// shuffles act within halves, so each half performs the four-lane row
// operations of simd_lanes.h exactly).
//
// Every function carries the AVX2 target (POSEWIRE_AVX2_INLINE): call them
// only from AVX2 code (a POSEWIRE_AVX2_FUNCTION, or a
// POSEWIRE_AVX2_REGION_BEGIN region), reached only when ActiveSimdLevel()
// is SimdLevel::kAvx2; the rest of the binary stays baseline x86-64.
// Eight-lane vaddps, vsubps, vmulps, vdivps and vsqrtps round exactly as
// their SSE forms; the target is "avx2" only (no FMA) and the build has
// -ffp-contract=off. Comparisons use the ordered predicates the SSE
// compares have (false on NaN); Max and Min keep std::max / std::min's
// operand order; Select picks whole lanes from all-ones or all-zero masks,
// as the SSE and/andnot/or form does.
#ifndef POSEWIRE_SOLVER_CORE_MODEL_INTERNAL_SIMD_LANES_AVX2_H_
#define POSEWIRE_SOLVER_CORE_MODEL_INTERNAL_SIMD_LANES_AVX2_H_

#include "solver_core/model/internal/simd_lanes.h"
#include "solver_core/model/simd_level.h"

#if POSEWIRE_AVX2_KERNELS
#include <immintrin.h>

namespace posewire {
namespace lanes_avx2 {

inline constexpr int kWidth = 8;
inline constexpr int kAllBits = (1 << kWidth) - 1;

struct F8 {
  __m256 v;
};
struct M8 {
  __m256 v;
};

using F = F8;
using M = M8;
using Block3 = lanes::Block3T<kWidth>;
using Block1 = lanes::Block1T<kWidth>;

POSEWIRE_AVX2_INLINE F8 Load(const float* p) { return {_mm256_load_ps(p)}; }
POSEWIRE_AVX2_INLINE void Store(float* p, F8 a) { _mm256_store_ps(p, a.v); }
POSEWIRE_AVX2_INLINE F8 Splat(float a) { return {_mm256_set1_ps(a)}; }
POSEWIRE_AVX2_INLINE F8 Set(float a0, float a1, float a2, float a3, float a4,
                            float a5, float a6, float a7) {
  return {_mm256_setr_ps(a0, a1, a2, a3, a4, a5, a6, a7)};
}
POSEWIRE_AVX2_INLINE F8 operator+(F8 a, F8 b) {
  return {_mm256_add_ps(a.v, b.v)};
}
POSEWIRE_AVX2_INLINE F8 operator-(F8 a, F8 b) {
  return {_mm256_sub_ps(a.v, b.v)};
}
POSEWIRE_AVX2_INLINE F8 operator*(F8 a, F8 b) {
  return {_mm256_mul_ps(a.v, b.v)};
}
POSEWIRE_AVX2_INLINE F8 operator/(F8 a, F8 b) {
  return {_mm256_div_ps(a.v, b.v)};
}
POSEWIRE_AVX2_INLINE F8 operator-(F8 a) {
  return {_mm256_xor_ps(a.v, _mm256_set1_ps(-0.0f))};
}
POSEWIRE_AVX2_INLINE F8 Sqrt(F8 a) { return {_mm256_sqrt_ps(a.v)}; }
POSEWIRE_AVX2_INLINE F8 Abs(F8 a) {
  return {_mm256_andnot_ps(_mm256_set1_ps(-0.0f), a.v)};
}
// As lanes::Max / Min: std::max(a, b) is (a < b) ? b : a, and vmaxps(x, y)
// is (x > y) ? x : y.
POSEWIRE_AVX2_INLINE F8 Max(F8 a, F8 b) { return {_mm256_max_ps(b.v, a.v)}; }
POSEWIRE_AVX2_INLINE F8 Min(F8 a, F8 b) { return {_mm256_min_ps(b.v, a.v)}; }
// The predicates of cmpltps, cmpleps, cmpeqps (and the swapped forms the
// SSE greater-than compares are): ordered, false on NaN.
POSEWIRE_AVX2_INLINE M8 operator<(F8 a, F8 b) {
  return {_mm256_cmp_ps(a.v, b.v, _CMP_LT_OS)};
}
POSEWIRE_AVX2_INLINE M8 operator<=(F8 a, F8 b) {
  return {_mm256_cmp_ps(a.v, b.v, _CMP_LE_OS)};
}
POSEWIRE_AVX2_INLINE M8 operator>(F8 a, F8 b) {
  return {_mm256_cmp_ps(b.v, a.v, _CMP_LT_OS)};
}
POSEWIRE_AVX2_INLINE M8 operator>=(F8 a, F8 b) {
  return {_mm256_cmp_ps(b.v, a.v, _CMP_LE_OS)};
}
POSEWIRE_AVX2_INLINE M8 operator==(F8 a, F8 b) {
  return {_mm256_cmp_ps(a.v, b.v, _CMP_EQ_OQ)};
}
POSEWIRE_AVX2_INLINE M8 operator&(M8 a, M8 b) {
  return {_mm256_and_ps(a.v, b.v)};
}
POSEWIRE_AVX2_INLINE M8 operator|(M8 a, M8 b) {
  return {_mm256_or_ps(a.v, b.v)};
}
POSEWIRE_AVX2_INLINE M8 AllLanes() {
  return {_mm256_castsi256_ps(_mm256_set1_epi32(-1))};
}
POSEWIRE_AVX2_INLINE M8 NoLanes() { return {_mm256_setzero_ps()}; }
POSEWIRE_AVX2_INLINE M8 Not(M8 a) { return {_mm256_xor_ps(a.v, AllLanes().v)}; }
POSEWIRE_AVX2_INLINE int Bits(M8 m) { return _mm256_movemask_ps(m.v); }
POSEWIRE_AVX2_INLINE F8 Select(M8 m, F8 a, F8 b) {
  return {_mm256_blendv_ps(b.v, a.v, m.v)};
}
POSEWIRE_AVX2_INLINE M8 MaskFromBits(int bits) {
  const __m256i lane_bits = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  return {_mm256_castsi256_ps(_mm256_cmpeq_epi32(
      _mm256_and_si256(_mm256_set1_epi32(bits), lane_bits), lane_bits))};
}
// Eight 4-float rows in, their columns out (and back).
POSEWIRE_AVX2_INLINE void LoadColumns(const float* const rows[kWidth],
                                      F8 out[4]) {
  __m128 a = _mm_loadu_ps(rows[0]), b = _mm_loadu_ps(rows[1]),
         c = _mm_loadu_ps(rows[2]), d = _mm_loadu_ps(rows[3]);
  __m128 e = _mm_loadu_ps(rows[4]), f = _mm_loadu_ps(rows[5]),
         g = _mm_loadu_ps(rows[6]), h = _mm_loadu_ps(rows[7]);
  _MM_TRANSPOSE4_PS(a, b, c, d);
  _MM_TRANSPOSE4_PS(e, f, g, h);
  out[0] = {_mm256_set_m128(e, a)};
  out[1] = {_mm256_set_m128(f, b)};
  out[2] = {_mm256_set_m128(g, c)};
  out[3] = {_mm256_set_m128(h, d)};
}
POSEWIRE_AVX2_INLINE void StoreColumns(const F8 in[4],
                                       float* const rows[kWidth]) {
  __m128 a = _mm256_castps256_ps128(in[0].v),
         b = _mm256_castps256_ps128(in[1].v),
         c = _mm256_castps256_ps128(in[2].v),
         d = _mm256_castps256_ps128(in[3].v);
  __m128 e = _mm256_extractf128_ps(in[0].v, 1),
         f = _mm256_extractf128_ps(in[1].v, 1),
         g = _mm256_extractf128_ps(in[2].v, 1),
         h = _mm256_extractf128_ps(in[3].v, 1);
  _MM_TRANSPOSE4_PS(a, b, c, d);
  _MM_TRANSPOSE4_PS(e, f, g, h);
  _mm_storeu_ps(rows[0], a);
  _mm_storeu_ps(rows[1], b);
  _mm_storeu_ps(rows[2], c);
  _mm_storeu_ps(rows[3], d);
  _mm_storeu_ps(rows[4], e);
  _mm_storeu_ps(rows[5], f);
  _mm_storeu_ps(rows[6], g);
  _mm_storeu_ps(rows[7], h);
}
POSEWIRE_AVX2_INLINE float Lane(F8 a, int k) {
  alignas(32) float out[kWidth];
  _mm256_store_ps(out, a.v);
  return out[k];
}
POSEWIRE_AVX2_INLINE bool Any(M8 m) { return Bits(m) != 0; }
POSEWIRE_AVX2_INLINE M8 AndNot(M8 a, M8 b) {
  return {_mm256_andnot_ps(b.v, a.v)};
}

struct V8 {
  F8 x, y, z;
};
using V = V8;

// A four-lane broadcast (LaneCollider) on all eight lanes.
POSEWIRE_AVX2_INLINE F8 Wide(lanes::F4 a) {
  return {_mm256_set_m128(a.v, a.v)};
}
// (Qualified: lanes::Wide, found by argument-dependent lookup, would be
// ambiguous.)
POSEWIRE_AVX2_INLINE V8 Wide(const lanes::V4& a) {
  return {lanes_avx2::Wide(a.x), lanes_avx2::Wide(a.y), lanes_avx2::Wide(a.z)};
}

POSEWIRE_AVX2_INLINE F8 Load(const Block1& b) { return Load(b.v); }
POSEWIRE_AVX2_INLINE F8 LoadScalars(const Block1& b) {
  return Set(b.v[0], b.v[1], b.v[2], b.v[3], b.v[4], b.v[5], b.v[6], b.v[7]);
}
POSEWIRE_AVX2_INLINE void Store(Block1& b, F8 a) { Store(b.v, a); }
POSEWIRE_AVX2_INLINE V8 Load(const Block3& b) {
  return {Load(b.x), Load(b.y), Load(b.z)};
}
POSEWIRE_AVX2_INLINE V8 LoadScalars(const Block3& b) {
  return {Set(b.x[0], b.x[1], b.x[2], b.x[3], b.x[4], b.x[5], b.x[6], b.x[7]),
          Set(b.y[0], b.y[1], b.y[2], b.y[3], b.y[4], b.y[5], b.y[6], b.y[7]),
          Set(b.z[0], b.z[1], b.z[2], b.z[3], b.z[4], b.z[5], b.z[6], b.z[7])};
}
POSEWIRE_AVX2_INLINE void Store(Block3& b, const V8& v) {
  Store(b.x, v.x);
  Store(b.y, v.y);
  Store(b.z, v.z);
}
POSEWIRE_AVX2_INLINE V8 Splat(const Eigen::Vector3f& v) {
  return {Splat(v.x()), Splat(v.y()), Splat(v.z())};
}
POSEWIRE_AVX2_INLINE V8 operator+(const V8& a, const V8& b) {
  return {a.x + b.x, a.y + b.y, a.z + b.z};
}
POSEWIRE_AVX2_INLINE V8 operator-(const V8& a, const V8& b) {
  return {a.x - b.x, a.y - b.y, a.z - b.z};
}
POSEWIRE_AVX2_INLINE V8 operator*(const V8& a, F8 s) {
  return {a.x * s, a.y * s, a.z * s};
}
POSEWIRE_AVX2_INLINE V8 operator/(const V8& a, F8 s) {
  return {a.x / s, a.y / s, a.z / s};
}
// The summation orders of lanes::Dot and lanes::Cross (Eigen's).
POSEWIRE_AVX2_INLINE F8 Dot(const V8& a, const V8& b) {
  return a.x * b.x + (a.y * b.y + a.z * b.z);
}
POSEWIRE_AVX2_INLINE F8 SquaredNorm(const V8& a) { return Dot(a, a); }
POSEWIRE_AVX2_INLINE F8 Norm(const V8& a) { return Sqrt(SquaredNorm(a)); }
POSEWIRE_AVX2_INLINE V8 Cross(const V8& a, const V8& b) {
  return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
POSEWIRE_AVX2_INLINE V8 Select(M8 m, const V8& a, const V8& b) {
  return {Select(m, a.x, b.x), Select(m, a.y, b.y), Select(m, a.z, b.z)};
}
POSEWIRE_AVX2_INLINE V8 Gather(const Eigen::Vector3f* a, const int* i) {
  return {Set(a[i[0]].x(), a[i[1]].x(), a[i[2]].x(), a[i[3]].x(), a[i[4]].x(),
              a[i[5]].x(), a[i[6]].x(), a[i[7]].x()),
          Set(a[i[0]].y(), a[i[1]].y(), a[i[2]].y(), a[i[3]].y(), a[i[4]].y(),
              a[i[5]].y(), a[i[6]].y(), a[i[7]].y()),
          Set(a[i[0]].z(), a[i[1]].z(), a[i[2]].z(), a[i[3]].z(), a[i[4]].z(),
              a[i[5]].z(), a[i[6]].z(), a[i[7]].z())};
}
POSEWIRE_AVX2_INLINE Eigen::Vector3f Lane(const V8& v, int k) {
  return Eigen::Vector3f(Lane(v.x, k), Lane(v.y, k), Lane(v.z, k));
}
POSEWIRE_AVX2_INLINE Eigen::Vector3f Get(const Block3& b, int k) {
  return Eigen::Vector3f(b.x[k], b.y[k], b.z[k]);
}
POSEWIRE_AVX2_INLINE void Set(Block3& b, int k, const Eigen::Vector3f& v) {
  b.x[k] = v.x();
  b.y[k] = v.y();
  b.z[k] = v.z();
}

// ---------------------------------------------------------------------------
// Rows (AoS), two per register: the low half holds the first item, the high
// half the second, and each half gets simd_lanes.h's four-lane operation.

POSEWIRE_AVX2_INLINE F8 LoadU(const float* p) { return {_mm256_loadu_ps(p)}; }
POSEWIRE_AVX2_INLINE void StoreU(float* p, F8 a) { _mm256_storeu_ps(p, a.v); }
POSEWIRE_AVX2_INLINE F8 Zero() { return {_mm256_setzero_ps()}; }
// Lanes as given, lane 0 first.
POSEWIRE_AVX2_INLINE F8 SetLanes(float a0, float a1, float a2, float a3,
                                 float a4, float a5, float a6, float a7) {
  return {_mm256_setr_ps(a0, a1, a2, a3, a4, a5, a6, a7)};
}
// The four-lane halves: (lo | hi), low half first in memory order.
POSEWIRE_AVX2_INLINE F8 FromHalves(lanes::F4 lo, lanes::F4 hi) {
  return {_mm256_set_m128(hi.v, lo.v)};
}
POSEWIRE_AVX2_INLINE lanes::F4 LowHalf(F8 a) {
  return {_mm256_castps256_ps128(a.v)};
}
POSEWIRE_AVX2_INLINE lanes::F4 HighHalf(F8 a) {
  return {_mm256_extractf128_ps(a.v, 1)};
}
// Four floats at `lo` into the low half, four at `hi` into the high half;
// and back.
POSEWIRE_AVX2_INLINE F8 LoadHalves(const float* lo, const float* hi) {
  return {_mm256_loadu2_m128(hi, lo)};
}
POSEWIRE_AVX2_INLINE void StoreHalves(float* lo, float* hi, F8 a) {
  _mm256_storeu2_m128(hi, lo, a.v);
}
// Bitwise operations on floats (sign flips, masking).
POSEWIRE_AVX2_INLINE F8 And(F8 a, M8 m) { return {_mm256_and_ps(a.v, m.v)}; }
POSEWIRE_AVX2_INLINE F8 Xor(F8 a, F8 b) { return {_mm256_xor_ps(a.v, b.v)}; }
// A mask from lane bits known at compile time (bit k: lane k).
template <int kBits>
POSEWIRE_AVX2_INLINE M8 ConstMask() {
  return {_mm256_castsi256_ps(_mm256_setr_epi32(
      (kBits & 1) ? -1 : 0, (kBits & 2) ? -1 : 0, (kBits & 4) ? -1 : 0,
      (kBits & 8) ? -1 : 0, (kBits & 16) ? -1 : 0, (kBits & 32) ? -1 : 0,
      (kBits & 64) ? -1 : 0, (kBits & 128) ? -1 : 0))};
}
// Lanes x, y, z of both halves kept, the padding lanes 3 and 7 zeroed.
POSEWIRE_AVX2_INLINE F8 KeepXyz(F8 a) { return And(a, ConstMask<0x77>()); }
// !(a >= b) and !(a <= b): true on NaN, for screens.
POSEWIRE_AVX2_INLINE M8 NotGe(F8 a, F8 b) {
  return {_mm256_cmp_ps(a.v, b.v, _CMP_NGE_UQ)};
}
POSEWIRE_AVX2_INLINE M8 NotLe(F8 a, F8 b) {
  return {_mm256_cmp_ps(a.v, b.v, _CMP_NLE_UQ)};
}
// Within each half, lane k of the result is lane Ik of a's half.
template <int I0, int I1, int I2, int I3>
POSEWIRE_AVX2_INLINE F8 Shuffle(F8 a) {
  return {_mm256_shuffle_ps(a.v, a.v, _MM_SHUFFLE(I3, I2, I1, I0))};
}
// Within each half, lanes 0, 1 from a's (I0, I1) and 2, 3 from b's (I2, I3).
template <int I0, int I1, int I2, int I3>
POSEWIRE_AVX2_INLINE F8 Shuffle(F8 a, F8 b) {
  return {_mm256_shuffle_ps(a.v, b.v, _MM_SHUFFLE(I3, I2, I1, I0))};
}
// Lane K of each half in every lane of that half.
template <int K>
POSEWIRE_AVX2_INLINE F8 Broadcast(F8 a) {
  return Shuffle<K, K, K, K>(a);
}
// unpcklps and unpckhps within each half.
POSEWIRE_AVX2_INLINE F8 UnpackLo(F8 a, F8 b) {
  return {_mm256_unpacklo_ps(a.v, b.v)};
}
POSEWIRE_AVX2_INLINE F8 UnpackHi(F8 a, F8 b) {
  return {_mm256_unpackhi_ps(a.v, b.v)};
}
// Lane k from b where bit k of kBits is set, else from a.
template <int kBits>
POSEWIRE_AVX2_INLINE F8 Blend(F8 a, F8 b) {
  return {_mm256_blend_ps(a.v, b.v, kBits)};
}
// Lanes whose exponent bits are all ones: NaN or infinite.
POSEWIRE_AVX2_INLINE M8 NotFinite(F8 a) {
  const __m256i exponent = _mm256_set1_epi32(0x7f800000);
  return {_mm256_castsi256_ps(_mm256_cmpeq_epi32(
      _mm256_and_si256(_mm256_castps_si256(a.v), exponent), exponent))};
}
// lanes::Dot4 within each half: (x x' + z z') + (y y' + w w') of the
// products `m`, in every lane of the half.
POSEWIRE_AVX2_INLINE F8 HalfDots(F8 m) {
  const F8 s = m + Shuffle<2, 3, 0, 1>(m);
  return s + Shuffle<1, 0, 3, 2>(s);
}
// lanes::CrossRows, lanes::MultiplyRows and lanes::RotateRow on both halves.
POSEWIRE_AVX2_INLINE F8 CrossRows(F8 a, F8 b) {
  const F8 a_yzx = Shuffle<1, 2, 0, 3>(a);
  const F8 b_yzx = Shuffle<1, 2, 0, 3>(b);
  const F8 c = a * b_yzx - a_yzx * b;
  return Shuffle<1, 2, 0, 3>(c);
}
POSEWIRE_AVX2_INLINE F8 MultiplyRows(F8 p, F8 q) {
  const F8 qb = Xor(Shuffle<3, 2, 1, 0>(q), SetLanes(0.0f, -0.0f, 0.0f, -0.0f,
                                                     0.0f, -0.0f, 0.0f, -0.0f));
  const F8 qc = Xor(Shuffle<2, 3, 0, 1>(q), SetLanes(0.0f, 0.0f, -0.0f, -0.0f,
                                                     0.0f, 0.0f, -0.0f, -0.0f));
  const F8 qd = Xor(Shuffle<1, 0, 3, 2>(q), SetLanes(-0.0f, 0.0f, 0.0f, -0.0f,
                                                     -0.0f, 0.0f, 0.0f, -0.0f));
  return (Broadcast<3>(p) * q + Broadcast<0>(p) * qb) +
         (Broadcast<1>(p) * qc + Broadcast<2>(p) * qd);
}
POSEWIRE_AVX2_INLINE F8 RotateRow(F8 q, F8 v) {
  F8 uv = CrossRows(q, v);
  uv = uv + uv;
  return (v + uv * Broadcast<3>(q)) + CrossRows(q, uv);
}

}  // namespace lanes_avx2
}  // namespace posewire

#endif  // POSEWIRE_AVX2_KERNELS

#endif  // POSEWIRE_SOLVER_CORE_MODEL_INTERNAL_SIMD_LANES_AVX2_H_
