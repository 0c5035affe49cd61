// The solver core's SIMD layer, four lanes: float registers (F4), lane
// masks (M4) and 3-vectors in lanes (V4) with their operations, SSE2 where
// available (baseline x86-64) and plain arrays otherwise with the same
// results. simd_lanes_avx2.h is the eight-lane counterpart, with the same
// names, for AVX2 kernels. Kernels are written with these rather than raw
// intrinsics.
//
// Two ways of using a register:
//   in lanes (SoA)  one value per lane, four particles or joints at once
//                   (the spring-bone kernels, spring_*_lanes.inc);
//   as a row (AoS)  one transform row or quaternion per register
//                   (blending; at eight lanes also forward kinematics and
//                   the pose screen): the shuffles, broadcasts, transposes
//                   and dot products below (SSE2 only; callers keep a
//                   scalar path).
//
// Determinism rules, which every kernel written with these types keeps:
// - Every operation is the IEEE operation the scalar code performs, lane by
//   lane, so a kernel gives the same bits as the scalar code it mirrors as
//   long as it applies the same operations in the same order: no fused
//   multiply-add (the build has -ffp-contract=off and no FMA target), no
//   reciprocal or square-root estimates, no reassociation. Sums that
//   mirror Eigen's use its order (Dot: x + (y + z); Dot4 and FourDots:
//   (x + z) + (y + w), as Eigen's SSE reduction and the scalar Dot4).
// - Min and Max follow std::min / std::max exactly (which operand wins on
//   ties, signed zeros and NaN), not the SSE instructions' argument order.
// - Comparisons are the ordered IEEE ones (false on NaN), except NotGe and
//   NotLe, which are their negations (true on NaN), for screens.
// - A wider kernel gives the same bits as a narrower one: each lane performs
//   the same operations in the same order whatever the width (eight-lane
//   vaddps, vmulps, vdivps, vsqrtps round exactly as their SSE forms), and
//   a lane reads only its own data and values broadcast to all lanes, so
//   which items share a register changes nothing.
#ifndef POSEWIRE_SOLVER_CORE_MODEL_INTERNAL_SIMD_LANES_H_
#define POSEWIRE_SOLVER_CORE_MODEL_INTERNAL_SIMD_LANES_H_

#include <Eigen/Core>
#include <cmath>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace posewire {
namespace lanes {

inline constexpr int kWidth = 4;

#if defined(__SSE2__)

struct F4 {
  __m128 v;
};
// All bits set in a lane where the condition holds.
struct M4 {
  __m128 v;
};

inline F4 Load(const float* p) { return {_mm_load_ps(p)}; }
inline void Store(float* p, F4 a) { _mm_store_ps(p, a.v); }
inline F4 Splat(float a) { return {_mm_set1_ps(a)}; }
// Lanes (a, b, c, d), built in registers: storing lanes one by one and
// loading them as a whole would stall on store forwarding.
inline F4 Set(float a, float b, float c, float d) {
  return {_mm_setr_ps(a, b, c, d)};
}
inline F4 operator+(F4 a, F4 b) { return {_mm_add_ps(a.v, b.v)}; }
inline F4 operator-(F4 a, F4 b) { return {_mm_sub_ps(a.v, b.v)}; }
inline F4 operator*(F4 a, F4 b) { return {_mm_mul_ps(a.v, b.v)}; }
inline F4 operator/(F4 a, F4 b) { return {_mm_div_ps(a.v, b.v)}; }
inline F4 operator-(F4 a) { return {_mm_xor_ps(a.v, _mm_set1_ps(-0.0f))}; }
inline F4 Sqrt(F4 a) { return {_mm_sqrt_ps(a.v)}; }
inline F4 Abs(F4 a) { return {_mm_andnot_ps(_mm_set1_ps(-0.0f), a.v)}; }
// std::max(a, b) is (a < b) ? b : a; maxps(x, y) is (x > y) ? x : y.
inline F4 Max(F4 a, F4 b) { return {_mm_max_ps(b.v, a.v)}; }
inline F4 Min(F4 a, F4 b) { return {_mm_min_ps(b.v, a.v)}; }
inline M4 operator<(F4 a, F4 b) { return {_mm_cmplt_ps(a.v, b.v)}; }
inline M4 operator<=(F4 a, F4 b) { return {_mm_cmple_ps(a.v, b.v)}; }
inline M4 operator>(F4 a, F4 b) { return {_mm_cmpgt_ps(a.v, b.v)}; }
inline M4 operator>=(F4 a, F4 b) { return {_mm_cmpge_ps(a.v, b.v)}; }
inline M4 operator==(F4 a, F4 b) { return {_mm_cmpeq_ps(a.v, b.v)}; }
inline M4 operator&(M4 a, M4 b) { return {_mm_and_ps(a.v, b.v)}; }
inline M4 operator|(M4 a, M4 b) { return {_mm_or_ps(a.v, b.v)}; }
inline M4 Not(M4 a) {
  return {_mm_xor_ps(a.v, _mm_castsi128_ps(_mm_set1_epi32(-1)))};
}
inline M4 AllLanes() { return {_mm_castsi128_ps(_mm_set1_epi32(-1))}; }
inline M4 NoLanes() { return {_mm_setzero_ps()}; }
// Bit k set when lane k is.
inline int Bits(M4 m) { return _mm_movemask_ps(m.v); }
// m ? a : b, lane by lane.
inline F4 Select(M4 m, F4 a, F4 b) {
  return {_mm_or_ps(_mm_and_ps(m.v, a.v), _mm_andnot_ps(m.v, b.v))};
}
inline M4 MaskFromBits(int bits) {
  return {_mm_castsi128_ps(_mm_cmpeq_epi32(
      _mm_and_si128(_mm_set1_epi32(bits), _mm_setr_epi32(1, 2, 4, 8)),
      _mm_setr_epi32(1, 2, 4, 8)))};
}
// Four 4-float rows in, their columns out (and back): quaternions as
// stored to quaternions in lanes.
inline void LoadColumns(const float* r0, const float* r1, const float* r2,
                        const float* r3, F4 out[4]) {
  __m128 a = _mm_loadu_ps(r0), b = _mm_loadu_ps(r1), c = _mm_loadu_ps(r2),
         d = _mm_loadu_ps(r3);
  _MM_TRANSPOSE4_PS(a, b, c, d);
  out[0] = {a};
  out[1] = {b};
  out[2] = {c};
  out[3] = {d};
}
inline void StoreColumns(const F4 in[4], float* rows[4]) {
  __m128 a = in[0].v, b = in[1].v, c = in[2].v, d = in[3].v;
  _MM_TRANSPOSE4_PS(a, b, c, d);
  _mm_storeu_ps(rows[0], a);
  _mm_storeu_ps(rows[1], b);
  _mm_storeu_ps(rows[2], c);
  _mm_storeu_ps(rows[3], d);
}
inline float Lane(F4 a, int k) {
  alignas(16) float out[4];
  _mm_store_ps(out, a.v);
  return out[k];
}

#else  // !__SSE2__

struct F4 {
  float v[4];
};
struct M4 {
  bool v[4];
};

template <typename Op>
inline F4 Map(F4 a, F4 b, Op op) {
  F4 r;
  for (int k = 0; k < 4; ++k) r.v[k] = op(a.v[k], b.v[k]);
  return r;
}
template <typename Op>
inline M4 Compare(F4 a, F4 b, Op op) {
  M4 r;
  for (int k = 0; k < 4; ++k) r.v[k] = op(a.v[k], b.v[k]);
  return r;
}

inline F4 Load(const float* p) { return {{p[0], p[1], p[2], p[3]}}; }
inline void Store(float* p, F4 a) {
  for (int k = 0; k < 4; ++k) p[k] = a.v[k];
}
inline F4 Splat(float a) { return {{a, a, a, a}}; }
inline F4 Set(float a, float b, float c, float d) { return {{a, b, c, d}}; }
inline F4 operator+(F4 a, F4 b) {
  return Map(a, b, [](float x, float y) { return x + y; });
}
inline F4 operator-(F4 a, F4 b) {
  return Map(a, b, [](float x, float y) { return x - y; });
}
inline F4 operator*(F4 a, F4 b) {
  return Map(a, b, [](float x, float y) { return x * y; });
}
inline F4 operator/(F4 a, F4 b) {
  return Map(a, b, [](float x, float y) { return x / y; });
}
inline F4 operator-(F4 a) {
  return Map(a, a, [](float x, float) { return -x; });
}
inline F4 Sqrt(F4 a) {
  return Map(a, a, [](float x, float) { return std::sqrt(x); });
}
inline F4 Abs(F4 a) {
  return Map(a, a, [](float x, float) { return std::fabs(x); });
}
inline F4 Max(F4 a, F4 b) {
  return Map(a, b, [](float x, float y) { return x < y ? y : x; });
}
inline F4 Min(F4 a, F4 b) {
  return Map(a, b, [](float x, float y) { return y < x ? y : x; });
}
inline M4 operator<(F4 a, F4 b) {
  return Compare(a, b, [](float x, float y) { return x < y; });
}
inline M4 operator<=(F4 a, F4 b) {
  return Compare(a, b, [](float x, float y) { return x <= y; });
}
inline M4 operator>(F4 a, F4 b) {
  return Compare(a, b, [](float x, float y) { return x > y; });
}
inline M4 operator>=(F4 a, F4 b) {
  return Compare(a, b, [](float x, float y) { return x >= y; });
}
inline M4 operator==(F4 a, F4 b) {
  return Compare(a, b, [](float x, float y) { return x == y; });
}
inline M4 operator&(M4 a, M4 b) {
  return {
      {a.v[0] && b.v[0], a.v[1] && b.v[1], a.v[2] && b.v[2], a.v[3] && b.v[3]}};
}
inline M4 operator|(M4 a, M4 b) {
  return {
      {a.v[0] || b.v[0], a.v[1] || b.v[1], a.v[2] || b.v[2], a.v[3] || b.v[3]}};
}
inline M4 Not(M4 a) { return {{!a.v[0], !a.v[1], !a.v[2], !a.v[3]}}; }
inline M4 AllLanes() { return {{true, true, true, true}}; }
inline M4 NoLanes() { return {{false, false, false, false}}; }
inline int Bits(M4 m) {
  return (m.v[0] ? 1 : 0) | (m.v[1] ? 2 : 0) | (m.v[2] ? 4 : 0) |
         (m.v[3] ? 8 : 0);
}
inline F4 Select(M4 m, F4 a, F4 b) {
  F4 r;
  for (int k = 0; k < 4; ++k) r.v[k] = m.v[k] ? a.v[k] : b.v[k];
  return r;
}
inline M4 MaskFromBits(int bits) {
  return {{(bits & 1) != 0, (bits & 2) != 0, (bits & 4) != 0, (bits & 8) != 0}};
}
inline void LoadColumns(const float* r0, const float* r1, const float* r2,
                        const float* r3, F4 out[4]) {
  const float* rows[4] = {r0, r1, r2, r3};
  for (int c = 0; c < 4; ++c) {
    for (int k = 0; k < 4; ++k) out[c].v[k] = rows[k][c];
  }
}
inline void StoreColumns(const F4 in[4], float* rows[4]) {
  for (int c = 0; c < 4; ++c) {
    for (int k = 0; k < 4; ++k) rows[k][c] = in[c].v[k];
  }
}
inline float Lane(F4 a, int k) { return a.v[k]; }

#endif  // __SSE2__

inline bool Any(M4 m) { return Bits(m) != 0; }
// Lanes where `a` holds and `b` does not.
inline M4 AndNot(M4 a, M4 b) { return a & Not(b); }

// Four 3-vectors, one per lane.
struct V4 {
  F4 x, y, z;
};

// W 3-vectors as stored: the x, y and z lanes one after the other. Plain
// floats, so the same type serves the four-lane kernels (W = 4) and the
// eight-lane AVX2 ones (W = 8, spring_lanes_avx2.inc).
template <int W>
struct alignas(4 * W) Block3T {
  float x[W];
  float y[W];
  float z[W];
};

// W floats as stored.
template <int W>
struct alignas(4 * W) Block1T {
  float v[W];
};

using Block3 = Block3T<kWidth>;
using Block1 = Block1T<kWidth>;

inline F4 Load(const Block1& b) { return Load(b.v); }
// A block just written lane by lane: read back lane by lane (a whole-vector
// load would wait for the four scalar stores to retire).
inline F4 LoadScalars(const Block1& b) {
  return Set(b.v[0], b.v[1], b.v[2], b.v[3]);
}
inline void Store(Block1& b, F4 a) { Store(b.v, a); }
inline V4 Load(const Block3& b) { return {Load(b.x), Load(b.y), Load(b.z)}; }
inline V4 LoadScalars(const Block3& b) {
  return {Set(b.x[0], b.x[1], b.x[2], b.x[3]),
          Set(b.y[0], b.y[1], b.y[2], b.y[3]),
          Set(b.z[0], b.z[1], b.z[2], b.z[3])};
}
inline void Store(Block3& b, const V4& v) {
  Store(b.x, v.x);
  Store(b.y, v.y);
  Store(b.z, v.z);
}
inline V4 Splat(const Eigen::Vector3f& v) {
  return {Splat(v.x()), Splat(v.y()), Splat(v.z())};
}
inline V4 operator+(const V4& a, const V4& b) {
  return {a.x + b.x, a.y + b.y, a.z + b.z};
}
inline V4 operator-(const V4& a, const V4& b) {
  return {a.x - b.x, a.y - b.y, a.z - b.z};
}
inline V4 operator*(const V4& a, F4 s) { return {a.x * s, a.y * s, a.z * s}; }
inline V4 operator/(const V4& a, F4 s) { return {a.x / s, a.y / s, a.z / s}; }
// Eigen's order for 3-vectors (its unrolled reduction splits the three
// terms as 1 + 2): x x' + (y y' + z z'). Matrix-vector products and squared
// norms sum in the same order.
inline F4 Dot(const V4& a, const V4& b) {
  return a.x * b.x + (a.y * b.y + a.z * b.z);
}
inline F4 SquaredNorm(const V4& a) { return Dot(a, a); }
inline F4 Norm(const V4& a) { return Sqrt(SquaredNorm(a)); }
// Eigen's cross product, component by component.
inline V4 Cross(const V4& a, const V4& b) {
  return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
inline V4 Select(M4 m, const V4& a, const V4& b) {
  return {Select(m, a.x, b.x), Select(m, a.y, b.y), Select(m, a.z, b.z)};
}
// Four vectors into lanes, built in registers.
inline V4 Set(const Eigen::Vector3f& a, const Eigen::Vector3f& b,
              const Eigen::Vector3f& c, const Eigen::Vector3f& d) {
  return {Set(a.x(), b.x(), c.x(), d.x()), Set(a.y(), b.y(), c.y(), d.y()),
          Set(a.z(), b.z(), c.z(), d.z())};
}
// Lane k as an Eigen vector.
inline Eigen::Vector3f Lane(const V4& v, int k) {
  return Eigen::Vector3f(Lane(v.x, k), Lane(v.y, k), Lane(v.z, k));
}
// Lane k of a block.
inline Eigen::Vector3f Get(const Block3& b, int k) {
  return Eigen::Vector3f(b.x[k], b.y[k], b.z[k]);
}
inline void Set(Block3& b, int k, const Eigen::Vector3f& v) {
  b.x[k] = v.x();
  b.y[k] = v.y();
  b.z[k] = v.z();
}

// The names the width-generic kernels (spring_*_lanes.inc) use: the same
// code compiles against this namespace and against lanes_avx2.
using F = F4;
using M = M4;
using V = V4;
// Bits(m) with every lane set.
inline constexpr int kAllBits = (1 << kWidth) - 1;
// Per-frame values broadcast to four lanes (LaneCollider) as this width's
// lanes: already are.
inline F4 Wide(F4 a) { return a; }
inline const V4& Wide(const V4& v) { return v; }
// a[i[0]], ..., a[i[3]] into lanes.
inline V4 Gather(const Eigen::Vector3f* a, const int* i) {
  return Set(a[i[0]], a[i[1]], a[i[2]], a[i[3]]);
}
inline void LoadColumns(const float* const rows[kWidth], F4 out[4]) {
  LoadColumns(rows[0], rows[1], rows[2], rows[3], out);
}

#if defined(__SSE2__)
// ---------------------------------------------------------------------------
// Rows (AoS): one transform row, quaternion or 3-vector per register.

inline F4 LoadU(const float* p) { return {_mm_loadu_ps(p)}; }
inline void StoreU(float* p, F4 a) { _mm_storeu_ps(p, a.v); }
inline F4 Zero() { return {_mm_setzero_ps()}; }
// Lanes (x, y, z, w) as given.
inline F4 SetLanes(float x, float y, float z, float w) {
  return {_mm_setr_ps(x, y, z, w)};
}
// Lane 0.
inline float First(F4 a) { return _mm_cvtss_f32(a.v); }
// Bitwise operations on floats (sign flips, masking).
inline F4 And(F4 a, M4 m) { return {_mm_and_ps(a.v, m.v)}; }
inline F4 Xor(F4 a, F4 b) { return {_mm_xor_ps(a.v, b.v)}; }
// a with its sign flipped in the lanes of m.
inline F4 FlipSign(F4 a, M4 m) {
  return {_mm_xor_ps(a.v, _mm_and_ps(m.v, _mm_set1_ps(-0.0f)))};
}
// Lanes x, y, z: all bits; lane 3 none.
inline M4 XyzLanes() {
  return {_mm_castsi128_ps(_mm_set_epi32(0, -1, -1, -1))};
}
// Lanes x, y, z kept, the padding lane zeroed (it may hold anything,
// including denormals that would slow the arithmetic down).
inline F4 KeepXyz(F4 a) { return And(a, XyzLanes()); }
inline F4 LoadXyz(const float* p) { return KeepXyz(LoadU(p)); }
// !(a >= b) and !(a <= b): true on NaN, for screens.
inline M4 NotGe(F4 a, F4 b) { return {_mm_cmpnge_ps(a.v, b.v)}; }
inline M4 NotLe(F4 a, F4 b) { return {_mm_cmpnle_ps(a.v, b.v)}; }
// Lane k of the result is lane Ik of a.
template <int I0, int I1, int I2, int I3>
inline F4 Shuffle(F4 a) {
  return {_mm_shuffle_ps(a.v, a.v, _MM_SHUFFLE(I3, I2, I1, I0))};
}
// Lanes 0, 1 from a (lanes I0, I1), lanes 2, 3 from b (lanes I2, I3).
template <int I0, int I1, int I2, int I3>
inline F4 Shuffle(F4 a, F4 b) {
  return {_mm_shuffle_ps(a.v, b.v, _MM_SHUFFLE(I3, I2, I1, I0))};
}
// Lane K in every lane.
template <int K>
inline F4 Broadcast(F4 a) {
  return Shuffle<K, K, K, K>(a);
}
// (a0, b0, a1, b1) and (a2, b2, a3, b3).
inline F4 UnpackLo(F4 a, F4 b) { return {_mm_unpacklo_ps(a.v, b.v)}; }
inline F4 UnpackHi(F4 a, F4 b) { return {_mm_unpackhi_ps(a.v, b.v)}; }
// (a0, a1, b0, b1) and (b2, b3, a2, a3), as movlhps and movhlps.
inline F4 MoveLH(F4 a, F4 b) { return {_mm_movelh_ps(a.v, b.v)}; }
inline F4 MoveHL(F4 a, F4 b) { return {_mm_movehl_ps(a.v, b.v)}; }
// Lane 0 of a + b, lanes 1..3 of a.
inline F4 AddFirst(F4 a, F4 b) { return {_mm_add_ss(a.v, b.v)}; }
inline F4 SqrtFirst(F4 a) { return {_mm_sqrt_ss(a.v)}; }

// x x' + y y' + z z' + w w' in every lane, summed as (x x' + z z') +
// (y y' + w w'), the order of the scalar Dot4 (quaternion_math.h).
inline F4 Dot4(F4 a, F4 b) {
  const F4 m = a * b;
  const F4 s = m + Shuffle<2, 3, 0, 1>(m);
  return s + Shuffle<1, 0, 3, 2>(s);
}
// a.b of 3-vectors (lane 3 zero) in lane 0 (the other lanes hold partial
// sums), summed as x + (y + z): the order of Eigen's dot() and
// squaredNorm() on a Vector3f.
inline F4 Dot3(F4 a, F4 b) {
  const F4 m = a * b;
  return AddFirst(m, AddFirst(Broadcast<1>(m), MoveHL(m, m)));
}
// Four dot products a[k] . b[k], one per lane, with Dot4's summation order
// and so its bits: the products are transposed and added instead of summed
// horizontally four times.
inline F4 FourDots(const F4 a[4], const F4 b[4]) {
  const F4 m0 = a[0] * b[0];
  const F4 m1 = a[1] * b[1];
  const F4 m2 = a[2] * b[2];
  const F4 m3 = a[3] * b[3];
  // Lanes (x + z, x + z, y + w, y + w) of joints (0, 1, 0, 1) and (2, 3, ...).
  const F4 s01 = UnpackLo(m0, m1) + UnpackHi(m0, m1);
  const F4 s23 = UnpackLo(m2, m3) + UnpackHi(m2, m3);
  return MoveLH(s01, s23) + MoveHL(s23, s01);
}
// Each lane of `v` in a register of its own: out[k] = (v[k], v[k], v[k],
// v[k]), for scaling four quaternions by four per-quaternion factors.
inline void BroadcastLanes(F4 v, F4 out[4]) {
  out[0] = Broadcast<0>(v);
  out[1] = Broadcast<1>(v);
  out[2] = Broadcast<2>(v);
  out[3] = Broadcast<3>(v);
}
// Reads exactly the 12 bytes of `v` (a 16-byte load could run past the end
// of the object). x and y come in through _mm_loadl_epi64, whose pointer type
// may alias the floats (_mm_load_sd would read them as a double, which the
// optimiser may then move across stores to the vector).
inline F4 LoadVector3(const Eigen::Vector3f& v) {
  const __m128 xy = _mm_castsi128_ps(
      _mm_loadl_epi64(reinterpret_cast<const __m128i*>(v.data())));
  return {_mm_movelh_ps(xy, _mm_load_ss(v.data() + 2))};
}
// Writes exactly the 12 bytes of lanes x, y, z to p.
inline void StoreXyz(float* p, F4 a) {
  _mm_storel_pi(reinterpret_cast<__m64*>(p), a.v);
  _mm_store_ss(p + 2, _mm_movehl_ps(a.v, a.v));
}
inline Eigen::Vector3f ToVector3(F4 v) {
  alignas(16) float f[4];
  _mm_store_ps(f, v.v);
  return Eigen::Vector3f(f[0], f[1], f[2]);
}
// Lanes whose exponent bits are all ones: NaN or infinite.
inline M4 NotFinite(F4 a) {
  const __m128i exponent = _mm_set1_epi32(0x7f800000);
  return {_mm_castsi128_ps(_mm_cmpeq_epi32(
      _mm_and_si128(_mm_castps_si128(a.v), exponent), exponent))};
}

// a x b of rows with the padding lanes zero in, zero out: Eigen's
// component formulas (transform_internal::Cross).
inline F4 CrossRows(F4 a, F4 b) {
  const F4 a_yzx = Shuffle<1, 2, 0, 3>(a);
  const F4 b_yzx = Shuffle<1, 2, 0, 3>(b);
  // (a.x b.y - a.y b.x, a.y b.z - a.z b.y, a.z b.x - a.x b.z): z, x, y.
  const F4 c = a * b_yzx - a_yzx * b;
  return Shuffle<1, 2, 0, 3>(c);
}
// The Hamilton product p q of rows, in transform_internal::Multiply's order.
inline F4 MultiplyRows(F4 p, F4 q) {
  // Lanes x, y, z, w of the terms in px, py, pz (see Multiply).
  const F4 qb = Xor(Shuffle<3, 2, 1, 0>(q), SetLanes(0.0f, -0.0f, 0.0f, -0.0f));
  const F4 qc = Xor(Shuffle<2, 3, 0, 1>(q), SetLanes(0.0f, 0.0f, -0.0f, -0.0f));
  const F4 qd = Xor(Shuffle<1, 0, 3, 2>(q), SetLanes(-0.0f, 0.0f, 0.0f, -0.0f));
  return (Broadcast<3>(p) * q + Broadcast<0>(p) * qb) +
         (Broadcast<1>(p) * qc + Broadcast<2>(p) * qd);
}
// v rotated by unit q (rows): transform_internal::Rotate's form.
inline F4 RotateRow(F4 q, F4 v) {
  F4 uv = CrossRows(q, v);
  uv = uv + uv;
  return (v + uv * Broadcast<3>(q)) + CrossRows(q, uv);
}
#endif  // __SSE2__

}  // namespace lanes

}  // namespace posewire

#endif  // POSEWIRE_SOLVER_CORE_MODEL_INTERNAL_SIMD_LANES_H_
