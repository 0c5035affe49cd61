#include "solver_core/pose_ops/blending_job.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/strings/str_cat.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/internal/sse_helpers.h"
#include "solver_core/model/quaternion_math.h"
#include "solver_core/model/simd_level.h"

// AVX2 kernels (per-function target attributes, chosen at run time) on
// x86-64 with GCC or Clang.
#if POSEWIRE_AVX2_KERNELS
#include <immintrin.h>
#endif
#define POSEWIRE_BLEND_AVX2 POSEWIRE_AVX2_KERNELS

namespace posewire {
namespace {

// Relative weights above this are a caller bug and could overflow the
// per-joint sums (weight * joint weight * layers).
constexpr float kMaxBlendWeight = 1e6f;

constexpr float kLargestFloat = std::numeric_limits<float>::max();

// Layers held on the stack; more spill to the heap once per Run.
constexpr int kStackContributors = 16;

// Joints the general path gathers before blending them (a multiple of four).
constexpr int kSlots = 16;

// A pose taking part in a joint's blend, with its normalised weight.
struct Contributor {
  const Transform* pose;
  float weight;
};

// Weighted sums of the contributors' transforms (count >= 2, weights already
// normalised). Every input of a joint is read before anything of it is
// written, so the output may alias an input. The SSE and scalar paths perform
// the same IEEE operations in the same order and give the same bits.

#if defined(__SSE2__)
// Accumulates joint j: writes translation and scale to `out`, returns the
// unnormalised rotation sum and the first contributor's rotation (the
// fallback for a degenerate sum).
ABSL_ATTRIBUTE_ALWAYS_INLINE inline __m128 AccumulateJoint(const Contributor* c,
                                                           int count, int j,
                                                           Transform* out,
                                                           __m128* first) {
  const float* p = reinterpret_cast<const float*>(c[0].pose + j);
  __m128 w = _mm_set1_ps(c[0].weight);
  const __m128 first_q = _mm_loadu_ps(p + 4);
  __m128 t = _mm_mul_ps(simd::LoadXyz(p), w);
  __m128 q = _mm_mul_ps(first_q, w);
  __m128 s = _mm_mul_ps(simd::LoadXyz(p + 8), w);
  const __m128 sign_bit = _mm_set1_ps(-0.0f);
  for (int i = 1; i < count; ++i) {
    const float* x = reinterpret_cast<const float*>(c[i].pose + j);
    w = _mm_set1_ps(c[i].weight);
    const __m128 xq = _mm_loadu_ps(x + 4);
    // Flip onto the first rotation's hemisphere (q and -q are one rotation).
    // Comparing with the first rather than the running sum keeps the layers
    // independent of each other, so they pipeline.
    const __m128 flip = _mm_and_ps(
        _mm_cmplt_ps(simd::Dot4(first_q, xq), _mm_setzero_ps()), sign_bit);
    t = _mm_add_ps(t, _mm_mul_ps(simd::LoadXyz(x), w));
    s = _mm_add_ps(s, _mm_mul_ps(simd::LoadXyz(x + 8), w));
    q = _mm_add_ps(q, _mm_mul_ps(xq, _mm_xor_ps(w, flip)));
  }
  float* o = reinterpret_cast<float*>(out);
  // Full-row stores: the padding lanes receive zeros.
  _mm_storeu_ps(o, t);
  _mm_storeu_ps(o + 8, s);
  *first = first_q;
  return q;
}
#endif

inline void BlendJoint(const Contributor* c, int count, int j, Transform* out) {
#if defined(__SSE2__)
  if constexpr (kSimdTransformLayout) {
    __m128 first;
    __m128 q = AccumulateJoint(c, count, j, out, &first);
    const float n2 = _mm_cvtss_f32(simd::Dot4(q, q));
    q = n2 > kMinQuatSquaredNorm ? _mm_mul_ps(q, _mm_set1_ps(InverseLength(n2)))
                                 : first;
    _mm_storeu_ps(reinterpret_cast<float*>(out) + 4, q);
    return;
  }
#endif
  const Transform& first = c[0].pose[j];
  const Eigen::Vector4f first_q = first.rotation.coeffs();
  const float w0 = c[0].weight;
  Eigen::Vector3f t = first.translation * w0;
  Eigen::Vector4f q = first_q * w0;
  Eigen::Vector3f s = first.scale * w0;
  for (int i = 1; i < count; ++i) {
    const Transform& x = c[i].pose[j];
    const float w = c[i].weight;
    const float wq = Dot4(first_q, x.rotation.coeffs()) < 0.0f ? -w : w;
    t += x.translation * w;
    s += x.scale * w;
    q += x.rotation.coeffs() * wq;
  }
  out->translation = t;
  out->rotation = NormalizedOr(q, Eigen::Quaternionf(first_q));
  out->scale = s;
}

#if defined(__SSE2__)
// Stores four rotation sums normalised with one SIMD square root and
// division (the costliest part of a blend), or their fallbacks when
// degenerate.
// Four dot products a[k] . b[k], one per lane, with simd::Dot4's summation
// order, (x x' + z z') + (y y' + w w'), and so its bits: the products are
// transposed and added instead of summed horizontally four times.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline __m128 FourDots(const __m128 a[4],
                                                    const __m128 b[4]) {
  const __m128 m0 = _mm_mul_ps(a[0], b[0]);
  const __m128 m1 = _mm_mul_ps(a[1], b[1]);
  const __m128 m2 = _mm_mul_ps(a[2], b[2]);
  const __m128 m3 = _mm_mul_ps(a[3], b[3]);
  // Lanes (x + z, x + z, y + w, y + w) of joints (0, 1, 0, 1) and (2, 3, ...).
  const __m128 s01 =
      _mm_add_ps(_mm_unpacklo_ps(m0, m1), _mm_unpackhi_ps(m0, m1));
  const __m128 s23 =
      _mm_add_ps(_mm_unpacklo_ps(m2, m3), _mm_unpackhi_ps(m2, m3));
  return _mm_add_ps(_mm_movelh_ps(s01, s23), _mm_movehl_ps(s23, s01));
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline void StoreFourRotations(
    const __m128 q[4], const __m128 first[4], Transform* const out[4]) {
  const __m128 packed = FourDots(q, q);
  const __m128 inverse = _mm_div_ps(_mm_set1_ps(1.0f), _mm_sqrt_ps(packed));
  const int degenerate =
      _mm_movemask_ps(_mm_cmple_ps(packed, _mm_set1_ps(kMinQuatSquaredNorm)));
  __m128 r[4];
  simd::SplatLanes(inverse, r);
  for (int k = 0; k < 4; ++k) {
    const __m128 unit =
        (degenerate >> k) & 1 ? first[k] : _mm_mul_ps(q[k], r[k]);
    _mm_storeu_ps(reinterpret_cast<float*>(out[k]) + 4, unit);
  }
}
#endif

// Joints j .. j + 3 with the same contributors (count >= 2): as four
// BlendJoint calls, with the four normalisations done together.
inline void BlendFourJoints(const Contributor* c, int count, int j,
                            Transform* out) {
#if defined(__SSE2__)
  if constexpr (kSimdTransformLayout) {
    // AccumulateJoint's arithmetic on four joints at once, so the four
    // hemisphere tests of a layer share one FourDots. Every input of the
    // four joints is read before any of them is written.
    __m128 first[4], t[4], q[4], s[4];
    __m128 w = _mm_set1_ps(c[0].weight);
    for (int k = 0; k < 4; ++k) {
      const float* p = reinterpret_cast<const float*>(c[0].pose + j + k);
      first[k] = _mm_loadu_ps(p + 4);
      t[k] = _mm_mul_ps(simd::LoadXyz(p), w);
      q[k] = _mm_mul_ps(first[k], w);
      s[k] = _mm_mul_ps(simd::LoadXyz(p + 8), w);
    }
    const __m128 sign_bit = _mm_set1_ps(-0.0f);
    for (int i = 1; i < count; ++i) {
      w = _mm_set1_ps(c[i].weight);
      const float* x[4];
      __m128 xq[4];
      for (int k = 0; k < 4; ++k) {
        x[k] = reinterpret_cast<const float*>(c[i].pose + j + k);
        xq[k] = _mm_loadu_ps(x[k] + 4);
      }
      const __m128 flips = _mm_and_ps(
          _mm_cmplt_ps(FourDots(first, xq), _mm_setzero_ps()), sign_bit);
      __m128 flip[4];
      simd::SplatLanes(flips, flip);
      for (int k = 0; k < 4; ++k) {
        t[k] = _mm_add_ps(t[k], _mm_mul_ps(simd::LoadXyz(x[k]), w));
        s[k] = _mm_add_ps(s[k], _mm_mul_ps(simd::LoadXyz(x[k] + 8), w));
        q[k] = _mm_add_ps(q[k], _mm_mul_ps(xq[k], _mm_xor_ps(w, flip[k])));
      }
    }
    for (int k = 0; k < 4; ++k) {
      float* o = reinterpret_cast<float*>(out + j + k);
      _mm_storeu_ps(o, t[k]);
      _mm_storeu_ps(o + 8, s[k]);
    }
    Transform* const outs[4] = {out + j, out + j + 1, out + j + 2, out + j + 3};
    StoreFourRotations(q, first, outs);
    return;
  }
#endif
  for (int k = 0; k < 4; ++k) BlendJoint(c, count, j + k, out + j + k);
}

// Four joints, each with its own contributors (count >= 2), likewise.
inline void BlendFourJoints(const Contributor* const c[4], const int count[4],
                            const int j[4], Transform* out) {
#if defined(__SSE2__)
  if constexpr (kSimdTransformLayout) {
    __m128 first[4];
    __m128 q[4];
    for (int k = 0; k < 4; ++k) {
      q[k] = AccumulateJoint(c[k], count[k], j[k], out + j[k], &first[k]);
    }
    Transform* const outs[4] = {out + j[0], out + j[1], out + j[2], out + j[3]};
    StoreFourRotations(q, first, outs);
    return;
  }
#endif
  for (int k = 0; k < 4; ++k) BlendJoint(c[k], count[k], j[k], out + j[k]);
}

#if POSEWIRE_BLEND_AVX2
// AVX2 kernels, compiled per function (the file itself is built for
// baseline x86-64, so no AVX2 code runs on a CPU without it) and chosen at run
// time. Two consecutive 48-byte Transforms are exactly three __m256 rows,
//   a = (t0 q0), b = (s0 t1), c = (q1 s1),
// so a layer's contribution to two joints is three loads, three multiplies
// and three adds. Lane by lane they are AccumulateJoint's and
// StoreFourRotations' operations in the same order (same products, same
// running sums, the same (x x' + z z') + (y y' + w w') dot products, the
// same 1 / sqrt and degenerate test), without FMA or estimates, so both
// paths give the same bits.

namespace avx2 {

// Two joints' accumulators in the three-row layout above. Rotation sums are
// in a's high half (first joint) and c's low half (second joint). The
// padding lanes (3 and 7 of the translation and scale halves) are stored as
// +0, as LoadXyz makes them in the SSE path.
struct PairRows {
  __m256 a, b, c;
  // The first contributor's rotations, (q1 | q0): the hemisphere reference
  // and the fallback for a degenerate sum.
  __m256 first;
};

// LoadXyz's mask for each row: the padding lanes cleared.
POSEWIRE_AVX2_INLINE __m256 MaskA() {
  return _mm256_castsi256_ps(_mm256_set_epi32(-1, -1, -1, -1, 0, -1, -1, -1));
}
POSEWIRE_AVX2_INLINE __m256 MaskB() {
  return _mm256_castsi256_ps(_mm256_set_epi32(0, -1, -1, -1, 0, -1, -1, -1));
}
POSEWIRE_AVX2_INLINE __m256 MaskC() {
  return _mm256_castsi256_ps(_mm256_set_epi32(0, -1, -1, -1, -1, -1, -1, -1));
}

// simd::Dot4 within each 128-bit half: (x x' + z z') + (y y' + w w') of the
// products `m`, in every lane of the half.
POSEWIRE_AVX2_INLINE __m256 HalfDots(__m256 m) {
  const __m256 s =
      _mm256_add_ps(m, _mm256_shuffle_ps(m, m, _MM_SHUFFLE(1, 0, 3, 2)));
  return _mm256_add_ps(s, _mm256_shuffle_ps(s, s, _MM_SHUFFLE(2, 3, 0, 1)));
}

// The rotations of rows a and c, as (q1 | q0): a blend within halves.
POSEWIRE_AVX2_INLINE __m256 Rotations(__m256 a, __m256 c) {
  return _mm256_blend_ps(c, a, 0xF0);
}

// Rows of the transforms at `p0` and `p1`, padding lanes zeroed.
POSEWIRE_AVX2_INLINE void LoadRows(const float* p0, const float* p1, __m256* a,
                                   __m256* b, __m256* c) {
  *a = _mm256_and_ps(_mm256_loadu_ps(p0), MaskA());
  *b = _mm256_and_ps(_mm256_loadu2_m128(p1, p0 + 8), MaskB());
  *c = _mm256_and_ps(_mm256_loadu_ps(p1 + 4), MaskC());
}

// AccumulateJoint for joints j0 (contributors c0) and j1 (c1), both with
// `count` contributors, anywhere in the pose.
POSEWIRE_AVX2_INLINE PairRows AccumulatePair(const Contributor* c0,
                                             const Contributor* c1, int count,
                                             int j0, int j1) {
  PairRows r;
  __m256 a, b, c;
  LoadRows(reinterpret_cast<const float*>(c0[0].pose + j0),
           reinterpret_cast<const float*>(c1[0].pose + j1), &a, &b, &c);
  // Weights per row: (w0 | w0), (w0 | w1), (w1 | w1).
  __m256 wa = _mm256_set1_ps(c0[0].weight);
  __m256 wc = _mm256_set1_ps(c1[0].weight);
  r.first = Rotations(a, c);
  r.a = _mm256_mul_ps(a, wa);
  r.b = _mm256_mul_ps(b, _mm256_blend_ps(wa, wc, 0xF0));
  r.c = _mm256_mul_ps(c, wc);
  // The sign bit in the rotation half of a (high) and of c (low).
  const __m256 sign_a =
      _mm256_setr_ps(0.0f, 0.0f, 0.0f, 0.0f, -0.0f, -0.0f, -0.0f, -0.0f);
  const __m256 sign_c =
      _mm256_setr_ps(-0.0f, -0.0f, -0.0f, -0.0f, 0.0f, 0.0f, 0.0f, 0.0f);
  for (int i = 1; i < count; ++i) {
    LoadRows(reinterpret_cast<const float*>(c0[i].pose + j0),
             reinterpret_cast<const float*>(c1[i].pose + j1), &a, &b, &c);
    wa = _mm256_set1_ps(c0[i].weight);
    wc = _mm256_set1_ps(c1[i].weight);
    // Hemisphere test of both rotations against the first contributor's:
    // all ones in the half of a joint to flip.
    const __m256 flip =
        _mm256_cmp_ps(HalfDots(_mm256_mul_ps(r.first, Rotations(a, c))),
                      _mm256_setzero_ps(), _CMP_LT_OS);
    r.a = _mm256_add_ps(
        r.a, _mm256_mul_ps(a, _mm256_xor_ps(wa, _mm256_and_ps(flip, sign_a))));
    r.b = _mm256_add_ps(r.b, _mm256_mul_ps(b, _mm256_blend_ps(wa, wc, 0xF0)));
    r.c = _mm256_add_ps(
        r.c, _mm256_mul_ps(c, _mm256_xor_ps(wc, _mm256_and_ps(flip, sign_c))));
  }
  return r;
}

// The same rows from two AccumulateJoint calls, for two joints whose
// contributor counts differ (AccumulateJoint writes their translations and
// scales; only the rotations remain to store).
POSEWIRE_AVX2_INLINE PairRows AccumulateTwoSingles(const Contributor* c0,
                                                   int count0, int j0,
                                                   const Contributor* c1,
                                                   int count1, int j1,
                                                   Transform* out) {
  __m128 first0, first1;
  const __m128 q0 = AccumulateJoint(c0, count0, j0, out + j0, &first0);
  const __m128 q1 = AccumulateJoint(c1, count1, j1, out + j1, &first1);
  PairRows r;
  r.a = _mm256_set_m128(q0, q0);
  r.b = _mm256_setzero_ps();  // unused: AccumulateJoint stored it
  r.c = _mm256_set_m128(q1, q1);
  r.first = _mm256_set_m128(first0, first1);
  return r;
}

// The first contributor's rotation in place of a degenerate sum's unit
// rotation, for two pairs held as (u1 | u0) and (u3 | u2): `degenerate`'s
// bits 0 and 4 flag joints 1 and 0 (pair p), bits 1 and 5 joints 3 and 2
// (pair r), as the squared-norm layouts below leave them.
POSEWIRE_AVX2_INLINE void UseFirstWhereDegenerate(int degenerate,
                                                  __m256 first_p,
                                                  __m256 first_r, __m256* up,
                                                  __m256* ur) {
  if ((degenerate & 0x33) == 0) [[likely]]
    return;
  if (degenerate & 0x01) *up = _mm256_blend_ps(*up, first_p, 0x0F);
  if (degenerate & 0x10) *up = _mm256_blend_ps(*up, first_p, 0xF0);
  if (degenerate & 0x02) *ur = _mm256_blend_ps(*ur, first_r, 0x0F);
  if (degenerate & 0x20) *ur = _mm256_blend_ps(*ur, first_r, 0xF0);
}

// StoreFourRotations for the rotation sums qp = (q1 | q0) of a pair of joints
// and qr of another, with their first contributors' rotations (the
// fallbacks): returns each pair's unit rotations as (u1 | u0).
POSEWIRE_AVX2_INLINE void NormalizeFour(__m256 qp, __m256 first_p, __m256 qr,
                                        __m256 first_r, __m256* up,
                                        __m256* ur) {
  // Squared norms as FourDots sums them, its transpose within each half:
  // (n1, n3, n1, n3 | n0, n2, n0, n2).
  const __m256 mp = _mm256_mul_ps(qp, qp);
  const __m256 mr = _mm256_mul_ps(qr, qr);
  const __m256 s =
      _mm256_add_ps(_mm256_unpacklo_ps(mp, mr), _mm256_unpackhi_ps(mp, mr));
  const __m256 mixed =
      _mm256_add_ps(s, _mm256_shuffle_ps(s, s, _MM_SHUFFLE(1, 0, 3, 2)));
  // One square root and one division for the four (each twice: a 256-bit
  // one costs about what two 128-bit ones do, and saves moving the norms
  // across halves and back).
  const __m256 inverse =
      _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_sqrt_ps(mixed));
  const int degenerate = _mm256_movemask_ps(
      _mm256_cmp_ps(mixed, _mm256_set1_ps(kMinQuatSquaredNorm), _CMP_LE_OS));
  __m256 u0 = _mm256_mul_ps(qp, _mm256_permute_ps(inverse, 0x00));
  __m256 u1 = _mm256_mul_ps(qr, _mm256_permute_ps(inverse, 0x55));
  UseFirstWhereDegenerate(degenerate, first_p, first_r, &u0, &u1);
  *up = u0;
  *ur = u1;
}

// The same for the rotation sums in rows a and c of two PairRows.
POSEWIRE_AVX2_INLINE void NormalizeFour(const PairRows& p, const PairRows& r,
                                        __m256* up, __m256* ur) {
  NormalizeFour(Rotations(p.a, p.c), p.first, Rotations(r.a, r.c), r.first, up,
                ur);
}

// Stores the rows of a pair of joints, with unit rotations u = (u1 | u0) in
// place of the sums: joint 0's rows are a and b's low half, joint 1's b's
// high half and c.
POSEWIRE_AVX2_INLINE void StorePair(const PairRows& r, __m256 u,
                                    Transform* out0, Transform* out1) {
  float* o0 = reinterpret_cast<float*>(out0);
  float* o1 = reinterpret_cast<float*>(out1);
  _mm256_storeu_ps(o0, _mm256_blend_ps(r.a, u, 0xF0));
  _mm256_storeu2_m128(o1, o0 + 8, r.b);
  _mm256_storeu_ps(o1 + 4, _mm256_blend_ps(u, r.c, 0xF0));
}

POSEWIRE_AVX2_INLINE void StoreRotations(__m256 u, Transform* out0,
                                         Transform* out1) {
  _mm256_storeu2_m128(reinterpret_cast<float*>(out0) + 4,
                      reinterpret_cast<float*>(out1) + 4, u);
}

// One contributor's weights in the fast path's layout, where a pair of
// joints is held as ts = (t0 | s1) and b = (s0 | t1), their rotations apart
// (see BlendAllGroups): `xyz` multiplies ts and b, zero in the padding
// lanes (3 and 7, never masked on load: garbage times +0 is +-0 or NaN,
// never a denormal, and the stores clear those lanes); `q` multiplies the
// rotations.
// Plain floats: a std::vector of __m256 need not be 32-byte aligned.
struct RowWeights {
  float xyz[8];
  float q[8];
};

// What the checked fast path (RunScreened) learns from the inputs it blends:
// the extremes of their squared rotation norms, and a sum of the output's
// translation and scale rows and of the rotation sums' squared norms, which
// is finite only if every input component is (a NaN or an infinity times a
// weight, even +0, is not finite and stays so through the sums). A NaN norm
// may hide the extremes seen before it, but then that NaN reaches the sum.
struct Screen {
  __m256 min_norm, max_norm, sum;
};

// Half sums of the squared norms of four rotations held transposed (lo,
// hi), as BlendAllGroups holds them: (x^2 + z^2) and (y^2 + w^2) side by
// side. Any order of summation will do for a screen (its bounds have a
// margin for rounding).
POSEWIRE_AVX2_INLINE __m256 HalfNorms(__m256 lo, __m256 hi) {
  return _mm256_add_ps(_mm256_mul_ps(lo, lo), _mm256_mul_ps(hi, hi));
}

// Screens the squared norms of two layers' four rotations from their
// HalfNorms (the same layer twice for an odd one out): one transposing add
// and one pair of extremes for the two.
POSEWIRE_AVX2_INLINE void ScreenNorms(__m256 s0, __m256 s1, Screen* screen) {
  const __m256 n2 =
      _mm256_add_ps(_mm256_shuffle_ps(s0, s1, _MM_SHUFFLE(1, 0, 1, 0)),
                    _mm256_shuffle_ps(s0, s1, _MM_SHUFFLE(3, 2, 3, 2)));
  screen->min_norm = _mm256_min_ps(screen->min_norm, n2);
  screen->max_norm = _mm256_max_ps(screen->max_norm, n2);
}

// The fast path's sums for four joints (as BlendFourJoints) of kCount
// contributors (0: `count`, any number >= 2), unrolled per count: the layer
// loop of two to four contributors is short enough that its own overhead
// (and the reloaded pointers and weights) costs as much as a layer's
// arithmetic. With kScreen, also screens the transforms it reads (Screen).
//
// It keeps the rotation sums of the four joints transposed, as
// FourDots' first step leaves products:
//   lo = (x1 x3 y1 y3 | x0 x2 y0 y2), hi = (z1 z3 w1 w3 | z0 z2 w0 w2)
// (unpacklo and unpackhi of the pairs' (q1 | q0) and (q3 | q2)). The
// hemisphere tests' dot products then come out as (d1 d3 d1 d3 | d0 d2 d0
// d2), lane for lane the joints of lo and hi, so one sign mask flips both
// registers without a splat per pair, and the squared norms are
// lo^2 + hi^2 plus one shuffle, with no transpose (nor the inverse norms
// any splat). Every lane computes what it did in the (q1 | q0) layout, in
// the same order, so the bits are the SSE2 path's.
struct GroupSums {
  // Joints j, j + 1 (pair p) and j + 2, j + 3 (pair r): translations and
  // scales as ts = (t0 | s1) and b = (s0 | t1) per pair.
  __m256 ts_p, b_p, ts_r, b_r;
  // The rotation sums, transposed as above.
  __m256 q_lo, q_hi;
  // The first contributor's rotations per pair, (q1 | q0): the fallbacks
  // for a degenerate sum.
  __m256 first_p, first_r;
};

// The four joints' rows start at pose[i] + f (f = 12 j).
template <int kCount, bool kScreen>
POSEWIRE_AVX2_INLINE GroupSums AccumulateGroup(const float* const* pose,
                                               const RowWeights* w, int count,
                                               size_t f, Screen* screen) {
  const int layers = kCount > 0 ? kCount : count;
  const __m256 sign = _mm256_set1_ps(-0.0f);
  GroupSums g;
  const float* x = pose[0] + f;
  __m256 a = _mm256_loadu_ps(x);
  __m256 c = _mm256_loadu_ps(x + 16);
  g.first_p = Rotations(a, c);
  __m256 wxyz = _mm256_loadu_ps(w[0].xyz);
  g.ts_p = _mm256_mul_ps(_mm256_blend_ps(a, c, 0xF0), wxyz);
  g.b_p = _mm256_mul_ps(_mm256_loadu_ps(x + 8), wxyz);
  a = _mm256_loadu_ps(x + 24);
  c = _mm256_loadu_ps(x + 40);
  g.first_r = Rotations(a, c);
  g.ts_r = _mm256_mul_ps(_mm256_blend_ps(a, c, 0xF0), wxyz);
  g.b_r = _mm256_mul_ps(_mm256_loadu_ps(x + 32), wxyz);
  // The first contributor's rotations, transposed, and the sums.
  const __m256 first_lo = _mm256_unpacklo_ps(g.first_p, g.first_r);
  const __m256 first_hi = _mm256_unpackhi_ps(g.first_p, g.first_r);
  __m256 wq = _mm256_loadu_ps(w[0].q);
  g.q_lo = _mm256_mul_ps(first_lo, wq);
  g.q_hi = _mm256_mul_ps(first_hi, wq);
  // The screen's half norms of an even layer, waiting for the next one.
  __m256 pending = _mm256_setzero_ps();
  if constexpr (kScreen) pending = HalfNorms(first_lo, first_hi);
#pragma GCC unroll 4
  for (int i = 1; i < layers; ++i) {
    x = pose[i] + f;
    const __m256 pa = _mm256_loadu_ps(x);
    const __m256 pc = _mm256_loadu_ps(x + 16);
    const __m256 ra = _mm256_loadu_ps(x + 24);
    const __m256 rc = _mm256_loadu_ps(x + 40);
    const __m256 xq_p = Rotations(pa, pc);
    const __m256 xq_r = Rotations(ra, rc);
    const __m256 x_lo = _mm256_unpacklo_ps(xq_p, xq_r);
    const __m256 x_hi = _mm256_unpackhi_ps(xq_p, xq_r);
    if constexpr (kScreen) {
      const __m256 half_norms = HalfNorms(x_lo, x_hi);
      if (i & 1) {
        ScreenNorms(pending, half_norms, screen);
      } else {
        pending = half_norms;
      }
    }
    // The four hemisphere tests: FourDots' sums (x x' + z z') +
    // (y y' + w w'), in lanes (d1 d3 d1 d3 | d0 d2 d0 d2).
    const __m256 s = _mm256_add_ps(_mm256_mul_ps(first_lo, x_lo),
                                   _mm256_mul_ps(first_hi, x_hi));
    const __m256 flips = _mm256_and_ps(
        _mm256_cmp_ps(
            _mm256_add_ps(s, _mm256_shuffle_ps(s, s, _MM_SHUFFLE(1, 0, 3, 2))),
            _mm256_setzero_ps(), _CMP_LT_OS),
        sign);
    wxyz = _mm256_loadu_ps(w[i].xyz);
    wq = _mm256_xor_ps(_mm256_loadu_ps(w[i].q), flips);
    g.ts_p = _mm256_add_ps(g.ts_p,
                           _mm256_mul_ps(_mm256_blend_ps(pa, pc, 0xF0), wxyz));
    g.b_p = _mm256_add_ps(g.b_p, _mm256_mul_ps(_mm256_loadu_ps(x + 8), wxyz));
    g.ts_r = _mm256_add_ps(g.ts_r,
                           _mm256_mul_ps(_mm256_blend_ps(ra, rc, 0xF0), wxyz));
    g.b_r = _mm256_add_ps(g.b_r, _mm256_mul_ps(_mm256_loadu_ps(x + 32), wxyz));
    g.q_lo = _mm256_add_ps(g.q_lo, _mm256_mul_ps(x_lo, wq));
    g.q_hi = _mm256_add_ps(g.q_hi, _mm256_mul_ps(x_hi, wq));
  }
  if constexpr (kScreen) {
    if (layers & 1) ScreenNorms(pending, pending, screen);
  }
  return g;
}

// StoreFourRotations' half sums of the group's squared norms, in lanes
// (x1^2 + z1^2, x3^2 + z3^2, y1^2 + w1^2, y3^2 + w3^2 | the same for joints
// 0 and 2): a squared norm is lane k plus lane k + 2.
POSEWIRE_AVX2_INLINE __m256 HalfSquaredNorms(const GroupSums& g) {
  return _mm256_add_ps(_mm256_mul_ps(g.q_lo, g.q_lo),
                       _mm256_mul_ps(g.q_hi, g.q_hi));
}

// Stores the group's translations and scales as soon as they are summed,
// so only four of the group's registers stay live until the norms are
// known (StoreGroupRotations). With kScreen, adds the rows to the screen's sum.
template <bool kScreen>
POSEWIRE_AVX2_INLINE void StoreRows(const GroupSums& g, float* o,
                                    Screen* screen) {
  const __m256 pad_mask = MaskB();
  const __m256 ts_p = _mm256_and_ps(g.ts_p, pad_mask);
  const __m256 ts_r = _mm256_and_ps(g.ts_r, pad_mask);
  const __m256 b_p = _mm256_and_ps(g.b_p, pad_mask);
  const __m256 b_r = _mm256_and_ps(g.b_r, pad_mask);
  // Joint 0's translation and joint 1's scale (ts), joint 0's scale and
  // joint 1's translation (b); then joints 2 and 3 likewise. The rotation
  // slots between them are left to StoreGroupRotations, so every byte is
  // written once.
  _mm256_storeu2_m128(o + 20, o, ts_p);
  _mm256_storeu_ps(o + 8, b_p);
  _mm256_storeu2_m128(o + 44, o + 24, ts_r);
  _mm256_storeu_ps(o + 32, b_r);
  if constexpr (kScreen) {
    screen->sum = _mm256_add_ps(
        screen->sum,
        _mm256_add_ps(_mm256_add_ps(ts_p, b_p), _mm256_add_ps(ts_r, b_r)));
  }
}

// Stores the group's rotations (after StoreRows): the rotation sums times
// `inverse` (their inverse norms, lanes as (i1 i3 i1 i3 | i0 i2 i0 i2)), or
// the first contributor's rotation for a joint whose squared norm is at
// most kMinQuatSquaredNorm. `degenerate` is the movemask of that test on
// squared norms laid out with joints 1 and 3 in lanes `lane` and `lane` + 1,
// joints 0 and 2 in lanes `lane` + 4 and `lane` + 5. With kScreen, adds the
// squared norms `n2` to the screen's sum (the rotation sums are finite if
// their squared norms are, which cannot overflow once the inputs' norms
// pass).
template <bool kScreen>
POSEWIRE_AVX2_INLINE void StoreGroupRotations(const GroupSums& g,
                                              __m256 inverse, int degenerate,
                                              int lane, __m256 n2, float* o,
                                              Screen* screen) {
  const __m256 u_lo = _mm256_mul_ps(g.q_lo, inverse);
  const __m256 u_hi = _mm256_mul_ps(g.q_hi, inverse);
  // (u1 | u0) and (u3 | u2).
  __m256 up = _mm256_shuffle_ps(u_lo, u_hi, _MM_SHUFFLE(2, 0, 2, 0));
  __m256 ur = _mm256_shuffle_ps(u_lo, u_hi, _MM_SHUFFLE(3, 1, 3, 1));
  UseFirstWhereDegenerate(degenerate >> lane, g.first_p, g.first_r, &up, &ur);
  _mm256_storeu2_m128(o + 4, o + 16, up);
  _mm256_storeu2_m128(o + 28, o + 40, ur);
  if constexpr (kScreen) screen->sum = _mm256_add_ps(screen->sum, n2);
}

// The fast path's kernel for joints [0, n - n % 4): eight at a time, whose
// squared norms fill one register, so one square root and one division
// serve eight joints, then the last four if n % 8 >= 4 (each norm twice).
template <int kCount, bool kScreen>
POSEWIRE_AVX2_INLINE void BlendAllGroups(const float* const* pose,
                                         const RowWeights* w, int count, int n,
                                         Transform* out, Screen* screen) {
  const __m256 min_norm = _mm256_set1_ps(kMinQuatSquaredNorm);
  float* o = reinterpret_cast<float*>(out);
  size_t f = 0;
  for (const size_t end = static_cast<size_t>(n / 8) * 96; f < end;
       f += 96, o += 96) {
    const GroupSums g0 =
        AccumulateGroup<kCount, kScreen>(pose, w, count, f, screen);
    StoreRows<kScreen>(g0, o, screen);
    const GroupSums g1 =
        AccumulateGroup<kCount, kScreen>(pose, w, count, f + 48, screen);
    StoreRows<kScreen>(g1, o + 48, screen);
    // Squared norms (n1 n3 m1 m3 | n0 n2 m0 m2), n of g0 and m of g1,
    // each (x^2 + z^2) + (y^2 + w^2) as StoreFourRotations sums them.
    const __m256 s0 = HalfSquaredNorms(g0);
    const __m256 s1 = HalfSquaredNorms(g1);
    const __m256 n2 =
        _mm256_add_ps(_mm256_shuffle_ps(s0, s1, _MM_SHUFFLE(1, 0, 1, 0)),
                      _mm256_shuffle_ps(s0, s1, _MM_SHUFFLE(3, 2, 3, 2)));
    const __m256 inverse =
        _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_sqrt_ps(n2));
    const int degenerate =
        _mm256_movemask_ps(_mm256_cmp_ps(n2, min_norm, _CMP_LE_OS));
    // Each group's inverse norms back in its lanes (i1 i3 i1 i3 | ...), and
    // its squared norms likewise for the screen.
    StoreGroupRotations<kScreen>(
        g0, _mm256_shuffle_ps(inverse, inverse, _MM_SHUFFLE(1, 0, 1, 0)),
        degenerate, 0, _mm256_shuffle_ps(n2, n2, _MM_SHUFFLE(1, 0, 1, 0)), o,
        screen);
    StoreGroupRotations<kScreen>(
        g1, _mm256_shuffle_ps(inverse, inverse, _MM_SHUFFLE(3, 2, 3, 2)),
        degenerate, 2, _mm256_shuffle_ps(n2, n2, _MM_SHUFFLE(3, 2, 3, 2)),
        o + 48, screen);
  }
  if (n % 8 >= 4) {
    const GroupSums g =
        AccumulateGroup<kCount, kScreen>(pose, w, count, f, screen);
    const __m256 s = HalfSquaredNorms(g);
    // (n1 n3 n1 n3 | n0 n2 n0 n2).
    const __m256 n2 =
        _mm256_add_ps(s, _mm256_shuffle_ps(s, s, _MM_SHUFFLE(1, 0, 3, 2)));
    const __m256 inverse =
        _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_sqrt_ps(n2));
    const int degenerate =
        _mm256_movemask_ps(_mm256_cmp_ps(n2, min_norm, _CMP_LE_OS));
    StoreRows<kScreen>(g, o, screen);
    StoreGroupRotations<kScreen>(g, inverse, degenerate, 0, n2, o, screen);
  }
}

// The fast path: every joint of [0, n) with the same contributors
// (count >= 2). Joints 0 .. n - n % 4 blend four at a time (as
// BlendFourJoints), the rest one at a time (BlendJoint), as in the SSE path:
// the two differ for NaN sums (unvalidated inputs), so the split is the same.
// With kScreen, also screens every transform it reads as
// TransformLooksValid does, and returns false if one fails (having written
// `out` all the same).
template <bool kScreen>
POSEWIRE_AVX2_INLINE bool BlendAllImpl(const Contributor* c, int count, int n,
                                       Transform* out) {
  RowWeights stack_weights[kStackContributors + 1];
  const float* stack_poses[kStackContributors + 1];
  std::vector<RowWeights> heap_weights;
  std::vector<const float*> heap_poses;
  RowWeights* w = stack_weights;
  const float** poses = stack_poses;
  if (count > kStackContributors + 1) {
    heap_weights.resize(count);
    heap_poses.resize(count);
    w = heap_weights.data();
    poses = heap_poses.data();
  }
  for (int i = 0; i < count; ++i) {
    const __m256 x = _mm256_set1_ps(c[i].weight);
    _mm256_storeu_ps(w[i].xyz, _mm256_and_ps(x, MaskB()));
    _mm256_storeu_ps(w[i].q, x);
    poses[i] = reinterpret_cast<const float*>(c[i].pose);
  }
  Screen screen;
  screen.min_norm = _mm256_set1_ps(1.0f);
  screen.max_norm = _mm256_set1_ps(1.0f);
  screen.sum = _mm256_setzero_ps();
  switch (count) {
    case 2:
      BlendAllGroups<2, kScreen>(poses, w, count, n, out, &screen);
      break;
    case 3:
      BlendAllGroups<3, kScreen>(poses, w, count, n, out, &screen);
      break;
    case 4:
      BlendAllGroups<4, kScreen>(poses, w, count, n, out, &screen);
      break;
    default:
      BlendAllGroups<0, kScreen>(poses, w, count, n, out, &screen);
  }
  bool ok = true;
  for (int j = n & ~3; j < n; ++j) {
    if constexpr (kScreen) {
      for (int i = 0; i < count; ++i) ok &= TransformLooksValid(c[i].pose[j]);
    }
    BlendJoint(c, count, j, out + j);
  }
  if constexpr (kScreen) {
    const __m256 finite = _mm256_cmp_ps(_mm256_sub_ps(screen.sum, screen.sum),
                                        _mm256_setzero_ps(), _CMP_EQ_OQ);
    const __m256 in_range = _mm256_and_ps(
        _mm256_cmp_ps(screen.min_norm, _mm256_set1_ps(kScreenMinSquaredNorm),
                      _CMP_GE_OQ),
        _mm256_cmp_ps(screen.max_norm, _mm256_set1_ps(kScreenMaxSquaredNorm),
                      _CMP_LE_OQ));
    ok &= _mm256_movemask_ps(_mm256_and_ps(finite, in_range)) == 0xFF;
  }
  return ok;
}

POSEWIRE_AVX2_FUNCTION void BlendAll(const Contributor* c, int count, int n,
                                     Transform* out) {
  BlendAllImpl<false>(c, count, n, out);
}

// BlendAll that also screens the transforms it reads (true when they all
// pass).
POSEWIRE_AVX2_FUNCTION bool BlendAllScreened(const Contributor* c, int count,
                                             int n, Transform* out) {
  return BlendAllImpl<true>(c, count, n, out);
}

// BlendFourJoints for four joints with their own contributors: joints with
// the same number of contributors pair up in the three-row layout.
POSEWIRE_AVX2_INLINE void BlendFour(const Contributor* const c[4],
                                    const int count[4], const int j[4],
                                    Transform* out) {
  PairRows pair[2];
  bool same[2];
  for (int h = 0; h < 2; ++h) {
    const int k = 2 * h;
    same[h] = count[k] == count[k + 1];
    pair[h] = same[h] ? AccumulatePair(c[k], c[k + 1], count[k], j[k], j[k + 1])
                      : AccumulateTwoSingles(c[k], count[k], j[k], c[k + 1],
                                             count[k + 1], j[k + 1], out);
  }
  __m256 u[2];
  NormalizeFour(pair[0], pair[1], &u[0], &u[1]);
  for (int h = 0; h < 2; ++h) {
    const int k = 2 * h;
    if (same[h]) {
      StorePair(pair[h], u[h], out + j[k], out + j[k + 1]);
    } else {
      StoreRotations(u[h], out + j[k], out + j[k + 1]);
    }
  }
}

// BlendSlots's joints, in the same groups of four (and single joints after
// the last group) as the SSE path.
POSEWIRE_AVX2_FUNCTION void BlendSlots(const Contributor* const* c,
                                       const int* count, const int* j,
                                       int slots, Transform* out) {
  int k = 0;
  for (; k + 4 <= slots; k += 4) BlendFour(c + k, count + k, j + k, out);
  for (; k < slots; ++k) BlendJoint(c[k], count[k], j[k], out + j[k]);
}

// PoseLooksValid (quaternion_math.h) on the three-row layout: the same
// squared rotation norms (FourDots' order) against the same bounds, and
// every translation and scale component summed (a NaN or infinity leaves
// the sum non-finite). Like it, a screen: a pose it rejects goes to
// ValidateTransform, which decides, so the status is the same either way.
POSEWIRE_AVX2_FUNCTION bool PoseLooksValid(absl::Span<const Transform> pose) {
  const float* p = reinterpret_cast<const float*>(pose.data());
  const size_t n = pose.size();
  // Rows a and c summed together: their rotation halves come along, which
  // is harmless (a rotation that passes the norm test is finite and small).
  __m256 sum_ac = _mm256_setzero_ps();
  __m256 sum_b = _mm256_setzero_ps();
  __m256 bad = _mm256_setzero_ps();
  const __m256 lo = _mm256_set1_ps(kScreenMinSquaredNorm);
  const __m256 hi = _mm256_set1_ps(kScreenMaxSquaredNorm);
  size_t i = 0;
  for (; i + 8 <= n; i += 8, p += 96) {
    // Eight transforms: the sums of the loop below, and the eight squared
    // norms in one register (FourDots' transpose, its final add across the
    // two pairs of rotation registers) for one pair of comparisons.
    __m256 m[4];
    for (int k = 0; k < 4; ++k) {
      const float* t = p + 24 * k;
      const __m256 a = _mm256_loadu_ps(t);
      const __m256 b = _mm256_loadu_ps(t + 8);
      const __m256 c = _mm256_loadu_ps(t + 16);
      sum_ac = _mm256_add_ps(sum_ac, _mm256_add_ps(a, c));
      sum_b = _mm256_add_ps(sum_b, b);
      const __m256 q = Rotations(a, c);
      m[k] = _mm256_mul_ps(q, q);
    }
    const __m256 s01 = _mm256_add_ps(_mm256_unpacklo_ps(m[0], m[1]),
                                     _mm256_unpackhi_ps(m[0], m[1]));
    const __m256 s23 = _mm256_add_ps(_mm256_unpacklo_ps(m[2], m[3]),
                                     _mm256_unpackhi_ps(m[2], m[3]));
    const __m256 n2 =
        _mm256_add_ps(_mm256_shuffle_ps(s01, s23, _MM_SHUFFLE(1, 0, 1, 0)),
                      _mm256_shuffle_ps(s01, s23, _MM_SHUFFLE(3, 2, 3, 2)));
    bad = _mm256_or_ps(bad, _mm256_or_ps(_mm256_cmp_ps(n2, lo, _CMP_NGE_UQ),
                                         _mm256_cmp_ps(n2, hi, _CMP_NLE_UQ)));
  }
  for (; i + 4 <= n; i += 4, p += 48) {
    const __m256 a0 = _mm256_loadu_ps(p);
    const __m256 b0 = _mm256_loadu_ps(p + 8);
    const __m256 c0 = _mm256_loadu_ps(p + 16);
    const __m256 a1 = _mm256_loadu_ps(p + 24);
    const __m256 b1 = _mm256_loadu_ps(p + 32);
    const __m256 c1 = _mm256_loadu_ps(p + 40);
    sum_ac = _mm256_add_ps(
        sum_ac, _mm256_add_ps(_mm256_add_ps(a0, c0), _mm256_add_ps(a1, c1)));
    sum_b = _mm256_add_ps(sum_b, _mm256_add_ps(b0, b1));
    // Rotations (q1 | q0) and (q3 | q2); products transposed and added as
    // in FourDots: lanes 0, 1 of each half hold the two norms of that half.
    const __m256 q01 = Rotations(a0, c0);
    const __m256 q23 = Rotations(a1, c1);
    const __m256 m01 = _mm256_mul_ps(q01, q01);
    const __m256 m23 = _mm256_mul_ps(q23, q23);
    const __m256 s = _mm256_add_ps(_mm256_unpacklo_ps(m01, m23),
                                   _mm256_unpackhi_ps(m01, m23));
    const __m256 n2 =
        _mm256_add_ps(s, _mm256_shuffle_ps(s, s, _MM_SHUFFLE(1, 0, 3, 2)));
    bad = _mm256_or_ps(bad, _mm256_or_ps(_mm256_cmp_ps(n2, lo, _CMP_NGE_UQ),
                                         _mm256_cmp_ps(n2, hi, _CMP_NLE_UQ)));
  }
  simd::TransformScreen tail;
  for (; i < n; ++i, p += 12) tail.Add(p);
  // Padding lanes (3 and 7) summed whatever the padding held: cleared.
  const __m256 pad_mask =
      _mm256_castsi256_ps(_mm256_set_epi32(0, -1, -1, -1, 0, -1, -1, -1));
  const __m256 sums = _mm256_and_ps(_mm256_add_ps(sum_ac, sum_b), pad_mask);
  const __m256 finite =
      _mm256_cmp_ps(_mm256_sub_ps(sums, sums), _mm256_setzero_ps(), _CMP_EQ_OQ);
  return _mm256_movemask_ps(finite) == 0xFF && _mm256_movemask_ps(bad) == 0 &&
         tail.Passed();
}

}  // namespace avx2
#endif  // POSEWIRE_BLEND_AVX2

// The AVX2 kernels when the CPU has them and nobody capped the level.
inline bool UseAvx2() {
#if POSEWIRE_BLEND_AVX2
  if constexpr (kSimdTransformLayout) {
    return ActiveSimdLevel() == SimdLevel::kAvx2;
  }
#endif
  return false;
}

// The general path's joints waiting to blend (slots), each with its own
// contributors: four at a time, then the few left one at a time. The groups
// depend only on the slot order, so every level forms the same ones (a
// group and a single joint differ for NaN sums).
void BlendSlots(const Contributor* const* c, const int* count, const int* j,
                int slots, Transform* out, bool avx2) {
#if POSEWIRE_BLEND_AVX2
  if (avx2) {
    avx2::BlendSlots(c, count, j, slots, out);
    return;
  }
#endif
  (void)avx2;
  int k = 0;
  for (; k + 4 <= slots; k += 4) BlendFourJoints(c + k, count + k, j + k, out);
  for (; k < slots; ++k) BlendJoint(c[k], count[k], j[k], out + j[k]);
}

inline bool LayerLooksValid(absl::Span<const Transform> pose, bool avx2) {
#if POSEWIRE_BLEND_AVX2
  if (avx2) return avx2::PoseLooksValid(pose);
#endif
  (void)avx2;
  return PoseLooksValid(pose);
}

// The contributors at one joint, given each layer's effective weight there
// (already >= 0), with their weights normalised; returns how many. A single
// contributor is copied unchanged by the caller.
inline int GatherContributors(absl::Span<const BlendLayer> layers,
                              const float* weights, const Transform* fallback,
                              float threshold, Contributor* c) {
  float total = 0.0f;
  for (size_t l = 0; l < layers.size(); ++l) total += weights[l];
  if (total == 0.0f) {
    c[0] = {fallback, 1.0f};
    return 1;
  }
  const float fill = total < threshold ? threshold - total : 0.0f;
  const float inv = 1.0f / (total + fill);
  int count = 0;
  for (size_t l = 0; l < layers.size(); ++l) {
    if (weights[l] > 0.0f) {
      c[count++] = {layers[l].transform.data(), weights[l] * inv};
    }
  }
  if (fill > 0.0f) c[count++] = {fallback, fill * inv};
  return count;
}

inline float Effective(float w) { return w > 0.0f ? w : 0.0f; }

#if defined(__SSE2__)
// GatherContributors' arithmetic for the masked path, for four consecutive
// joints at once (one per lane, the same operations in the same order):
// each layer's effective weight, the total, the fill and the normalised
// weights, so that per joint only the choice of contributors remains.
struct MaskedWeights {
  // Layer l's weight at joint first + k is weights[4 * l + k], normalised
  // normalised[4 * l + k] (num_layers * 4 floats each).
  float* weights;
  float* normalised;
  alignas(16) float total[4];
  alignas(16) float fill[4];
  alignas(16) float fill_normalised[4];
  int first = -1;
};

inline void ComputeMaskedWeights(absl::Span<const BlendLayer> layers,
                                 const float* layer_weights, float threshold,
                                 int first, MaskedWeights* m) {
  const __m128 zero = _mm_setzero_ps();
  __m128 total = zero;
  for (size_t l = 0; l < layers.size(); ++l) {
    const float* mask = layers[l].joint_weights.data();
    const __m128 lw = _mm_set1_ps(layer_weights[l]);
    // Effective: max returns its second operand for NaN and for zeros.
    const __m128 w =
        mask == nullptr
            ? lw
            : _mm_mul_ps(lw, _mm_max_ps(_mm_loadu_ps(mask + first), zero));
    _mm_storeu_ps(m->weights + 4 * l, w);
    total = _mm_add_ps(total, w);
  }
  const __m128 t = _mm_set1_ps(threshold);
  const __m128 fill = _mm_and_ps(_mm_cmplt_ps(total, t), _mm_sub_ps(t, total));
  // Lanes with a zero total divide by zero or more; they are not read.
  const __m128 inv = _mm_div_ps(_mm_set1_ps(1.0f), _mm_add_ps(total, fill));
  for (size_t l = 0; l < layers.size(); ++l) {
    _mm_storeu_ps(m->normalised + 4 * l,
                  _mm_mul_ps(_mm_loadu_ps(m->weights + 4 * l), inv));
  }
  _mm_store_ps(m->total, total);
  _mm_store_ps(m->fill, fill);
  _mm_store_ps(m->fill_normalised, _mm_mul_ps(fill, inv));
  m->first = first;
}

// GatherContributors at joint m.first + k, from ComputeMaskedWeights.
inline int GatherMaskedContributors(absl::Span<const BlendLayer> layers,
                                    const MaskedWeights& m, int k,
                                    const Transform* fallback, Contributor* c) {
  if (m.total[k] == 0.0f) {
    c[0] = {fallback, 1.0f};
    return 1;
  }
  int count = 0;
  for (size_t l = 0; l < layers.size(); ++l) {
    if (m.weights[4 * l + k] > 0.0f) {
      c[count++] = {layers[l].transform.data(), m.normalised[4 * l + k]};
    }
  }
  if (m.fill[k] > 0.0f) c[count++] = {fallback, m.fill_normalised[k]};
  return count;
}
#endif

// True when every weight is finite and at most kMaxBlendWeight (NaN fails
// both comparisons), without a branch per weight. Four at a time with SSE2:
// the scalar loop's chain through `ok` cost several times more.
inline bool JointWeightsLookValid(absl::Span<const float> weights) {
  size_t i = 0;
  bool ok = true;
#if defined(__SSE2__)
  __m128 all = _mm_castsi128_ps(_mm_set1_epi32(-1));
  const __m128 hi = _mm_set1_ps(kMaxBlendWeight);
  const __m128 lo = _mm_set1_ps(-kLargestFloat);
  for (; i + 4 <= weights.size(); i += 4) {
    const __m128 w = _mm_loadu_ps(weights.data() + i);
    all = _mm_and_ps(all, _mm_and_ps(_mm_cmple_ps(w, hi), _mm_cmpge_ps(w, lo)));
  }
  ok = _mm_movemask_ps(all) == 0xF;
#endif
  for (; i < weights.size(); ++i) {
    const float w = weights[i];
    ok &= (w <= kMaxBlendWeight) & (w >= -kLargestFloat);
  }
  return ok;
}

absl::Status CheckWeight(float w, size_t layer, int joint,
                         const Skeleton& skeleton) {
  if (std::isfinite(w) && w <= kMaxBlendWeight) return absl::OkStatus();
  const std::string where =
      joint < 0 ? absl::StrCat("blending.layers[", layer, "].weight")
                : absl::StrCat("blending.layers[", layer, "].joint_weights[",
                               joint, "] '", skeleton.joint_name(joint), "'");
  if (!std::isfinite(w)) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": ", w, " is not finite"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(where, ": ", w, " exceeds the largest accepted weight ",
                   kMaxBlendWeight));
}

#if POSEWIRE_BLEND_AVX2
// Run()'s fast path with AVX2 (no masks, no blend root, two contributors or
// more, at most kMaxScreenedJoints joints): Validate()'s transform scan
// fused into the blend, which reads every contributing transform anyway.
// The blend goes to a scratch pose, copied to the output only when every
// layer's transforms pass the screen (nothing is written on error, and the
// output may alias a layer); otherwise returns false, having written
// nothing, and Run() validates and blends as usual. The caller has checked
// everything but the transforms. The bits are RunUnchecked's: the same
// kernel, the same contributors.
constexpr int kMaxScreenedJoints = 256;

// Whether RunScreened may apply, before anything is validated: the checks
// it needs are O(layers).
bool MayRunScreened(const BlendingJob& job) {
  if (job.layers_validated || job.blend_root != -1 || job.skeleton == nullptr ||
      job.skeleton->num_joints() > kMaxScreenedJoints ||
      job.layers.size() > static_cast<size_t>(kStackContributors)) {
    return false;
  }
  for (const BlendLayer& layer : job.layers) {
    if (!layer.joint_weights.empty()) return false;
  }
  return UseAvx2();
}

// For a job that MayRunScreened and passes Validate() but for the
// transforms.
bool RunScreened(const BlendingJob& job) {
  const Skeleton& skel = *job.skeleton;
  const int n = skel.num_joints();
  const absl::Span<const BlendLayer> layers = job.layers;
  float weights[kStackContributors];
  for (size_t l = 0; l < layers.size(); ++l) {
    weights[l] = Effective(layers[l].weight);
  }
  const Transform* fallback = job.base_layer >= 0
                                  ? layers[job.base_layer].transform.data()
                                  : skel.rest_pose().data();
  Contributor c[kStackContributors + 1];
  const int count =
      GatherContributors(layers, weights, fallback, job.threshold, c);
  if (count < 2) return false;
  // Layers without weight are not read by the blend: scanned apart.
  for (size_t l = 0; l < layers.size(); ++l) {
    if (!(weights[l] > 0.0f) && !avx2::PoseLooksValid(layers[l].transform)) {
      return false;
    }
  }
  alignas(32) float scratch[kMaxScreenedJoints * 12];
  static_assert(sizeof(Transform) == 12 * sizeof(float));
  Transform* blended = reinterpret_cast<Transform*>(scratch);
  if (!avx2::BlendAllScreened(c, count, n, blended)) return false;
  std::memcpy(static_cast<void*>(job.output.data()), blended,
              n * sizeof(Transform));
  return true;
}
#endif

}  // namespace

#if POSEWIRE_AVX2_KERNELS
bool PoseLooksValidAvx2(absl::Span<const Transform> pose) {
  return avx2::PoseLooksValid(pose);
}
#endif

absl::Status BlendingJob::Validate() const {
  if (skeleton == nullptr) {
    return absl::InvalidArgumentError("blending.skeleton: not set");
  }
  const int n = skeleton->num_joints();
  if (static_cast<int>(output.size()) != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("blending.output: ", output.size(),
                     " transforms for a skeleton of ", n, " joints"));
  }
  if (base_layer < -1 || base_layer >= static_cast<int>(layers.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("blending.base_layer: ", base_layer,
                     " is out of range [-1, ", layers.size(), ")"));
  }
  if (blend_root < -1 || blend_root >= n) {
    return absl::InvalidArgumentError(
        absl::StrCat("blending.blend_root: joint ", blend_root,
                     " is out of range [-1, ", n, ")"));
  }
  if (!std::isfinite(threshold) || threshold < 0.0f) {
    return absl::InvalidArgumentError(absl::StrCat(
        "blending.threshold: ", threshold, " must be finite and non-negative"));
  }
  [[maybe_unused]] const bool avx2 = UseAvx2();
  for (size_t l = 0; l < layers.size(); ++l) {
    const BlendLayer& layer = layers[l];
    if (static_cast<int>(layer.transform.size()) != n) {
      return absl::InvalidArgumentError(absl::StrCat(
          "blending.layers[", l, "].transform: ", layer.transform.size(),
          " transforms for a skeleton of ", n, " joints"));
    }
    if (OverlapsWithoutAliasing(output, layer.transform)) {
      return CheckNoPartialOverlap(
          output, "blending.output", layer.transform,
          absl::StrCat("blending.layers[", l, "].transform"));
    }
    // The test inline, the message (CheckWeight) out of line: a blend
    // costs a few hundred nanoseconds, so per-layer calls show.
    if (!(std::isfinite(layer.weight) && layer.weight <= kMaxBlendWeight)) {
      return CheckWeight(layer.weight, l, -1, *skeleton);
    }
    if (!layer.joint_weights.empty()) {
      if (static_cast<int>(layer.joint_weights.size()) != n) {
        return absl::InvalidArgumentError(absl::StrCat(
            "blending.layers[", l, "].joint_weights: ",
            layer.joint_weights.size(), " weights for a skeleton of ", n,
            " joints (expected 0 or ", n, ")"));
      }
      // A branch-free scan first, the messages only when it fails.
      const bool ok = JointWeightsLookValid(layer.joint_weights);
      for (int j = 0; !ok && j < n; ++j) {
        if (absl::Status s =
                CheckWeight(layer.joint_weights[j], l, j, *skeleton);
            !s.ok()) {
          return s;
        }
      }
    }
    if (layers_validated || LayerLooksValid(layer.transform, avx2)) continue;
    for (int j = 0; j < n; ++j) {
      if (TransformLooksValid(layer.transform[j])) continue;
      absl::Status s =
          ValidateTransform(layer.transform[j],
                            absl::StrCat("blending.layers[", l, "].transform"),
                            j, skeleton->joint_name(j));
      if (!s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

absl::Status BlendingJob::Run() const {
#if POSEWIRE_BLEND_AVX2
  if (MayRunScreened(*this)) {
    // Everything but the transforms first (O(layers) without masks), so
    // that RunScreened only has the transforms to screen; when it declines
    // or a transform fails its screen, the full Validate() below decides
    // (and names the first bad transform).
    BlendingJob structure = *this;
    structure.layers_validated = true;
    if (absl::Status s = structure.Validate(); !s.ok()) return s;
    if (RunScreened(*this)) return absl::OkStatus();
  }
#endif
  if (absl::Status s = Validate(); !s.ok()) return s;
  RunUnchecked();
  return absl::OkStatus();
}

void BlendingJob::RunUnchecked() const {
  const Skeleton& skel = *skeleton;
  const int n = skel.num_joints();
  const size_t num_layers = layers.size();
  const Transform* fallback = base_layer >= 0
                                  ? layers[base_layer].transform.data()
                                  : skel.rest_pose().data();
  Transform* out = output.data();

  // Scratch: per-layer weights at the current joint, and contributor lists
  // for up to kSlots joints waiting to be blended.
  const size_t stride = num_layers + 1;
  float stack_weights[kStackContributors];
  Contributor stack_contributors[kSlots * (kStackContributors + 1)];
  std::vector<float> heap_weights;
  std::vector<Contributor> heap_contributors;
  float* weights = stack_weights;
  Contributor* contributors = stack_contributors;
  if (num_layers > static_cast<size_t>(kStackContributors)) {
    heap_weights.resize(num_layers);
    heap_contributors.resize(kSlots * stride);
    weights = heap_weights.data();
    contributors = heap_contributors.data();
  }

  bool masked = false;
  for (size_t l = 0; l < num_layers; ++l) {
    weights[l] = Effective(layers[l].weight);
    masked = masked || !layers[l].joint_weights.empty();
  }
  // The layer weights, kept while `weights` is reused per joint.
  float stack_layer_weights[kStackContributors];
  std::vector<float> heap_layer_weights;
  float* layer_weights = stack_layer_weights;
  if (num_layers > static_cast<size_t>(kStackContributors)) {
    heap_layer_weights.resize(num_layers);
    layer_weights = heap_layer_weights.data();
  }
  // (Only the masked path reuses `weights`; a copy is a memmove call.)
  if (masked) std::copy(weights, weights + num_layers, layer_weights);

  // Without masks every joint has the same weights: gather once.
  int count = 0;
  if (!masked) {
    count =
        GatherContributors(layers, weights, fallback, threshold, contributors);
  }
  // Fast path: same contributors everywhere, four joints at a time.
  [[maybe_unused]] const bool avx2 = UseAvx2();
  if (!masked && blend_root < 0 && count >= 2) {
#if POSEWIRE_BLEND_AVX2
    if (avx2) {
      avx2::BlendAll(contributors, count, n, out);
      return;
    }
#endif
    int j = 0;
    for (; j + 4 <= n; j += 4) BlendFourJoints(contributors, count, j, out);
    for (; j < n; ++j) BlendJoint(contributors, count, j, out + j);
    return;
  }

  // General path: per-joint weights (masks) and/or a blend root. Joints that
  // blend wait in slots, kSlots at a time: gathering a run of joints and then
  // blending them keeps both loops free of each other's latency.
  const Contributor* slot_c[kSlots];
  int slot_count[kSlots];
  int slot_joint[kSlots];
  int slots = 0;
#if defined(__SSE2__)
  float stack_masked[8 * kStackContributors];
  std::vector<float> heap_masked;
  MaskedWeights masked_weights;
  masked_weights.weights = stack_masked;
  if (masked && num_layers > static_cast<size_t>(kStackContributors)) {
    heap_masked.resize(8 * num_layers);
    masked_weights.weights = heap_masked.data();
  }
  masked_weights.normalised = masked_weights.weights + 4 * num_layers;
#endif
  for (int j = 0; j < n; ++j) {
    if (blend_root >= 0 && !skel.IsInSubtree(blend_root, j)) {
      if (out + j != fallback + j) out[j] = fallback[j];
      continue;
    }
    // Without masks every slot shares the one contributor list.
    const Contributor* c = contributors;
    int joint_count = count;
    if (masked) {
      Contributor* joint_c = contributors + slots * stride;
      c = joint_c;
#if defined(__SSE2__)
      // Four joints' weights at a time where four remain.
      const int block = j & ~3;
      if (block + 4 <= n) {
        if (masked_weights.first != block) {
          ComputeMaskedWeights(layers, layer_weights, threshold, block,
                               &masked_weights);
        }
        joint_count = GatherMaskedContributors(layers, masked_weights,
                                               j - block, fallback, joint_c);
      } else  // NOLINT(readability/braces)
#endif
      {
        for (size_t l = 0; l < num_layers; ++l) {
          const float* mask = layers[l].joint_weights.data();
          weights[l] = mask == nullptr ? layer_weights[l]
                                       : layer_weights[l] * Effective(mask[j]);
        }
        joint_count =
            GatherContributors(layers, weights, fallback, threshold, joint_c);
      }
    }
    if (joint_count == 1) {
      const Transform& only = c[0].pose[j];
      if (&only != out + j) out[j] = only;
      continue;
    }
    slot_c[slots] = c;
    slot_count[slots] = joint_count;
    slot_joint[slots] = j;
    if (++slots == kSlots) {
      BlendSlots(slot_c, slot_count, slot_joint, slots, out, avx2);
      slots = 0;
    }
  }
  BlendSlots(slot_c, slot_count, slot_joint, slots, out, avx2);
}

}  // namespace posewire
