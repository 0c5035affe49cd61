#include "solver_core/pose_ops/blending_job.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/strings/str_cat.h"
#include "solver_core/model/internal/simd_lanes.h"
#include "solver_core/model/internal/simd_lanes_avx2.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/quaternion_math.h"
#include "solver_core/model/simd_level.h"

// AVX2 kernels (per-function target attributes, chosen at run time) on
// x86-64 with GCC or Clang.
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
ABSL_ATTRIBUTE_ALWAYS_INLINE inline lanes::F4 AccumulateJoint(
    const Contributor* c, int count, int j, Transform* out, lanes::F4* first) {
  const float* p = reinterpret_cast<const float*>(c[0].pose + j);
  lanes::F4 w = lanes::Splat(c[0].weight);
  const lanes::F4 first_q = lanes::LoadU(p + 4);
  lanes::F4 t = lanes::LoadXyz(p) * w;
  lanes::F4 q = first_q * w;
  lanes::F4 s = lanes::LoadXyz(p + 8) * w;
  for (int i = 1; i < count; ++i) {
    const float* x = reinterpret_cast<const float*>(c[i].pose + j);
    w = lanes::Splat(c[i].weight);
    const lanes::F4 xq = lanes::LoadU(x + 4);
    // Flip onto the first rotation's hemisphere (q and -q are one rotation).
    // Comparing with the first rather than the running sum keeps the layers
    // independent of each other, so they pipeline.
    const lanes::M4 flip = lanes::Dot4(first_q, xq) < lanes::Zero();
    t = t + lanes::LoadXyz(x) * w;
    s = s + lanes::LoadXyz(x + 8) * w;
    q = q + xq * lanes::FlipSign(w, flip);
  }
  float* o = reinterpret_cast<float*>(out);
  // Full-row stores: the padding lanes receive zeros.
  lanes::StoreU(o, t);
  lanes::StoreU(o + 8, s);
  *first = first_q;
  return q;
}
#endif

inline void BlendJoint(const Contributor* c, int count, int j, Transform* out) {
#if defined(__SSE2__)
  if constexpr (kSimdTransformLayout) {
    lanes::F4 first;
    lanes::F4 q = AccumulateJoint(c, count, j, out, &first);
    const float n2 = lanes::First(lanes::Dot4(q, q));
    q = n2 > kMinQuatSquaredNorm ? q * lanes::Splat(InverseLength(n2)) : first;
    lanes::StoreU(reinterpret_cast<float*>(out) + 4, q);
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
// degenerate. The squared norms are lanes::FourDots, whose sums are Dot4's.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline void StoreFourRotations(
    const lanes::F4 q[4], const lanes::F4 first[4], Transform* const out[4]) {
  const lanes::F4 packed = lanes::FourDots(q, q);
  const lanes::F4 inverse = lanes::Splat(1.0f) / lanes::Sqrt(packed);
  const int degenerate =
      lanes::Bits(packed <= lanes::Splat(kMinQuatSquaredNorm));
  lanes::F4 r[4];
  lanes::BroadcastLanes(inverse, r);
  for (int k = 0; k < 4; ++k) {
    const lanes::F4 unit = (degenerate >> k) & 1 ? first[k] : q[k] * r[k];
    lanes::StoreU(reinterpret_cast<float*>(out[k]) + 4, unit);
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
    lanes::F4 first[4], t[4], q[4], s[4];
    lanes::F4 w = lanes::Splat(c[0].weight);
    for (int k = 0; k < 4; ++k) {
      const float* p = reinterpret_cast<const float*>(c[0].pose + j + k);
      first[k] = lanes::LoadU(p + 4);
      t[k] = lanes::LoadXyz(p) * w;
      q[k] = first[k] * w;
      s[k] = lanes::LoadXyz(p + 8) * w;
    }
    for (int i = 1; i < count; ++i) {
      w = lanes::Splat(c[i].weight);
      const float* x[4];
      lanes::F4 xq[4];
      for (int k = 0; k < 4; ++k) {
        x[k] = reinterpret_cast<const float*>(c[i].pose + j + k);
        xq[k] = lanes::LoadU(x[k] + 4);
      }
      const lanes::F4 flips = lanes::And(
          lanes::Splat(-0.0f), lanes::FourDots(first, xq) < lanes::Zero());
      lanes::F4 flip[4];
      lanes::BroadcastLanes(flips, flip);
      for (int k = 0; k < 4; ++k) {
        t[k] = t[k] + lanes::LoadXyz(x[k]) * w;
        s[k] = s[k] + lanes::LoadXyz(x[k] + 8) * w;
        q[k] = q[k] + xq[k] * lanes::Xor(w, flip[k]);
      }
    }
    for (int k = 0; k < 4; ++k) {
      float* o = reinterpret_cast<float*>(out + j + k);
      lanes::StoreU(o, t[k]);
      lanes::StoreU(o + 8, s[k]);
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
    lanes::F4 first[4];
    lanes::F4 q[4];
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
// time. Two consecutive 48-byte Transforms are exactly three eight-lane rows,
//   a = (t0 q0), b = (s0 t1), c = (q1 s1),
// so a layer's contribution to two joints is three loads, three multiplies
// and three adds. Lane by lane they are AccumulateJoint's and
// StoreFourRotations' operations in the same order (same products, same
// running sums, the same (x x' + z z') + (y y' + w w') dot products, the
// same 1 / sqrt and degenerate test), without FMA or estimates, so both
// paths give the same bits.

namespace avx2 {

namespace L8 = lanes_avx2;
using L8::F8;

// Two joints' accumulators in the three-row layout above. Rotation sums are
// in a's high half (first joint) and c's low half (second joint). The
// padding lanes (3 and 7 of the translation and scale halves) are stored as
// +0, as LoadXyz makes them in the SSE path.
struct PairRows {
  F8 a, b, c;
  // The first contributor's rotations, (q1 | q0): the hemisphere reference
  // and the fallback for a degenerate sum.
  F8 first;
};

// LoadXyz's mask for each row: the padding lanes cleared.
POSEWIRE_AVX2_INLINE L8::M8 MaskA() { return L8::ConstMask<0xF7>(); }
POSEWIRE_AVX2_INLINE L8::M8 MaskB() { return L8::ConstMask<0x77>(); }
POSEWIRE_AVX2_INLINE L8::M8 MaskC() { return L8::ConstMask<0x7F>(); }

// The rotations of rows a and c, as (q1 | q0): a blend within halves.
POSEWIRE_AVX2_INLINE F8 Rotations(F8 a, F8 c) { return L8::Blend<0xF0>(c, a); }

// Rows of the transforms at `p0` and `p1`, padding lanes zeroed.
POSEWIRE_AVX2_INLINE void LoadRows(const float* p0, const float* p1, F8* a,
                                   F8* b, F8* c) {
  *a = L8::And(L8::LoadU(p0), MaskA());
  *b = L8::And(L8::LoadHalves(p0 + 8, p1), MaskB());
  *c = L8::And(L8::LoadU(p1 + 4), MaskC());
}

// AccumulateJoint for joints j0 (contributors c0) and j1 (c1), both with
// `count` contributors, anywhere in the pose.
POSEWIRE_AVX2_INLINE PairRows AccumulatePair(const Contributor* c0,
                                             const Contributor* c1, int count,
                                             int j0, int j1) {
  PairRows r;
  F8 a, b, c;
  LoadRows(reinterpret_cast<const float*>(c0[0].pose + j0),
           reinterpret_cast<const float*>(c1[0].pose + j1), &a, &b, &c);
  // Weights per row: (w0 | w0), (w0 | w1), (w1 | w1).
  F8 wa = L8::Splat(c0[0].weight);
  F8 wc = L8::Splat(c1[0].weight);
  r.first = Rotations(a, c);
  r.a = a * wa;
  r.b = b * L8::Blend<0xF0>(wa, wc);
  r.c = c * wc;
  // The sign bit in the rotation half of a (high) and of c (low).
  const F8 sign_a =
      L8::SetLanes(0.0f, 0.0f, 0.0f, 0.0f, -0.0f, -0.0f, -0.0f, -0.0f);
  const F8 sign_c =
      L8::SetLanes(-0.0f, -0.0f, -0.0f, -0.0f, 0.0f, 0.0f, 0.0f, 0.0f);
  for (int i = 1; i < count; ++i) {
    LoadRows(reinterpret_cast<const float*>(c0[i].pose + j0),
             reinterpret_cast<const float*>(c1[i].pose + j1), &a, &b, &c);
    wa = L8::Splat(c0[i].weight);
    wc = L8::Splat(c1[i].weight);
    // Hemisphere test of both rotations against the first contributor's:
    // all ones in the half of a joint to flip.
    const L8::M8 flip = L8::HalfDots(r.first * Rotations(a, c)) < L8::Zero();
    r.a = r.a + a * L8::Xor(wa, L8::And(sign_a, flip));
    r.b = r.b + b * L8::Blend<0xF0>(wa, wc);
    r.c = r.c + c * L8::Xor(wc, L8::And(sign_c, flip));
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
  lanes::F4 first0, first1;
  const lanes::F4 q0 = AccumulateJoint(c0, count0, j0, out + j0, &first0);
  const lanes::F4 q1 = AccumulateJoint(c1, count1, j1, out + j1, &first1);
  PairRows r;
  r.a = L8::FromHalves(q0, q0);
  r.b = L8::Zero();  // unused: AccumulateJoint stored it
  r.c = L8::FromHalves(q1, q1);
  r.first = L8::FromHalves(first1, first0);
  return r;
}

// The first contributor's rotation in place of a degenerate sum's unit
// rotation, for two pairs held as (u1 | u0) and (u3 | u2): `degenerate`'s
// bits 0 and 4 flag joints 1 and 0 (pair p), bits 1 and 5 joints 3 and 2
// (pair r), as the squared-norm layouts below leave them.
POSEWIRE_AVX2_INLINE void UseFirstWhereDegenerate(int degenerate, F8 first_p,
                                                  F8 first_r, F8* up, F8* ur) {
  if ((degenerate & 0x33) == 0) [[likely]]
    return;
  if (degenerate & 0x01) *up = L8::Blend<0x0F>(*up, first_p);
  if (degenerate & 0x10) *up = L8::Blend<0xF0>(*up, first_p);
  if (degenerate & 0x02) *ur = L8::Blend<0x0F>(*ur, first_r);
  if (degenerate & 0x20) *ur = L8::Blend<0xF0>(*ur, first_r);
}

// StoreFourRotations for the rotation sums qp = (q1 | q0) of a pair of joints
// and qr of another, with their first contributors' rotations (the
// fallbacks): returns each pair's unit rotations as (u1 | u0).
POSEWIRE_AVX2_INLINE void NormalizeFour(F8 qp, F8 first_p, F8 qr, F8 first_r,
                                        F8* up, F8* ur) {
  // Squared norms as FourDots sums them, its transpose within each half:
  // (n1, n3, n1, n3 | n0, n2, n0, n2).
  const F8 mp = qp * qp;
  const F8 mr = qr * qr;
  const F8 s = L8::UnpackLo(mp, mr) + L8::UnpackHi(mp, mr);
  const F8 mixed = s + L8::Shuffle<2, 3, 0, 1>(s);
  // One square root and one division for the four (each twice: a 256-bit
  // one costs about what two 128-bit ones do, and saves moving the norms
  // across halves and back).
  const F8 inverse = L8::Splat(1.0f) / L8::Sqrt(mixed);
  const int degenerate = L8::Bits(mixed <= L8::Splat(kMinQuatSquaredNorm));
  F8 u0 = qp * L8::Broadcast<0>(inverse);
  F8 u1 = qr * L8::Broadcast<1>(inverse);
  UseFirstWhereDegenerate(degenerate, first_p, first_r, &u0, &u1);
  *up = u0;
  *ur = u1;
}

// The same for the rotation sums in rows a and c of two PairRows.
POSEWIRE_AVX2_INLINE void NormalizeFour(const PairRows& p, const PairRows& r,
                                        F8* up, F8* ur) {
  NormalizeFour(Rotations(p.a, p.c), p.first, Rotations(r.a, r.c), r.first, up,
                ur);
}

// Stores the rows of a pair of joints, with unit rotations u = (u1 | u0) in
// place of the sums: joint 0's rows are a and b's low half, joint 1's b's
// high half and c.
POSEWIRE_AVX2_INLINE void StorePair(const PairRows& r, F8 u, Transform* out0,
                                    Transform* out1) {
  float* o0 = reinterpret_cast<float*>(out0);
  float* o1 = reinterpret_cast<float*>(out1);
  L8::StoreU(o0, L8::Blend<0xF0>(r.a, u));
  L8::StoreHalves(o0 + 8, o1, r.b);
  L8::StoreU(o1 + 4, L8::Blend<0xF0>(u, r.c));
}

POSEWIRE_AVX2_INLINE void StoreRotations(F8 u, Transform* out0,
                                         Transform* out1) {
  L8::StoreHalves(reinterpret_cast<float*>(out1) + 4,
                  reinterpret_cast<float*>(out0) + 4, u);
}

// One contributor's weights in the fast path's layout, where a pair of
// joints is held as ts = (t0 | s1) and b = (s0 | t1), their rotations apart
// (see BlendAllGroups): `xyz` multiplies ts and b, zero in the padding
// lanes (3 and 7, never masked on load: garbage times +0 is +-0 or NaN,
// never a denormal, and the stores clear those lanes); `q` multiplies the
// rotations.
// Plain floats: a std::vector of registers need not be 32-byte aligned.
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
  F8 min_norm, max_norm, sum;
};

// Half sums of the squared norms of four rotations held transposed (lo,
// hi), as BlendAllGroups holds them: (x^2 + z^2) and (y^2 + w^2) side by
// side. Any order of summation will do for a screen (its bounds have a
// margin for rounding).
POSEWIRE_AVX2_INLINE F8 HalfNorms(F8 lo, F8 hi) { return lo * lo + hi * hi; }

// Screens the squared norms of two layers' four rotations from their
// HalfNorms (the same layer twice for an odd one out): one transposing add
// and one pair of extremes for the two.
POSEWIRE_AVX2_INLINE void ScreenNorms(F8 s0, F8 s1, Screen* screen) {
  const F8 n2 =
      L8::Shuffle<0, 1, 0, 1>(s0, s1) + L8::Shuffle<2, 3, 2, 3>(s0, s1);
  // std::min(n2, min_norm) and std::max(n2, max_norm): a NaN norm replaces
  // the extreme.
  screen->min_norm = L8::Min(n2, screen->min_norm);
  screen->max_norm = L8::Max(n2, screen->max_norm);
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
  F8 ts_p, b_p, ts_r, b_r;
  // The rotation sums, transposed as above.
  F8 q_lo, q_hi;
  // The first contributor's rotations per pair, (q1 | q0): the fallbacks
  // for a degenerate sum.
  F8 first_p, first_r;
};

// The four joints' rows start at pose[i] + f (f = 12 j).
template <int kCount, bool kScreen>
POSEWIRE_AVX2_INLINE GroupSums AccumulateGroup(const float* const* pose,
                                               const RowWeights* w, int count,
                                               size_t f, Screen* screen) {
  const int layers = kCount > 0 ? kCount : count;
  const F8 sign = L8::Splat(-0.0f);
  GroupSums g;
  const float* x = pose[0] + f;
  F8 a = L8::LoadU(x);
  F8 c = L8::LoadU(x + 16);
  g.first_p = Rotations(a, c);
  F8 wxyz = L8::LoadU(w[0].xyz);
  g.ts_p = L8::Blend<0xF0>(a, c) * wxyz;
  g.b_p = L8::LoadU(x + 8) * wxyz;
  a = L8::LoadU(x + 24);
  c = L8::LoadU(x + 40);
  g.first_r = Rotations(a, c);
  g.ts_r = L8::Blend<0xF0>(a, c) * wxyz;
  g.b_r = L8::LoadU(x + 32) * wxyz;
  // The first contributor's rotations, transposed, and the sums.
  const F8 first_lo = L8::UnpackLo(g.first_p, g.first_r);
  const F8 first_hi = L8::UnpackHi(g.first_p, g.first_r);
  F8 wq = L8::LoadU(w[0].q);
  g.q_lo = first_lo * wq;
  g.q_hi = first_hi * wq;
  // The screen's half norms of an even layer, waiting for the next one.
  F8 pending = L8::Zero();
  if constexpr (kScreen) pending = HalfNorms(first_lo, first_hi);
#pragma GCC unroll 4
  for (int i = 1; i < layers; ++i) {
    x = pose[i] + f;
    const F8 pa = L8::LoadU(x);
    const F8 pc = L8::LoadU(x + 16);
    const F8 ra = L8::LoadU(x + 24);
    const F8 rc = L8::LoadU(x + 40);
    const F8 xq_p = Rotations(pa, pc);
    const F8 xq_r = Rotations(ra, rc);
    const F8 x_lo = L8::UnpackLo(xq_p, xq_r);
    const F8 x_hi = L8::UnpackHi(xq_p, xq_r);
    if constexpr (kScreen) {
      const F8 half_norms = HalfNorms(x_lo, x_hi);
      if (i & 1) {
        ScreenNorms(pending, half_norms, screen);
      } else {
        pending = half_norms;
      }
    }
    // The four hemisphere tests: FourDots' sums (x x' + z z') +
    // (y y' + w w'), in lanes (d1 d3 d1 d3 | d0 d2 d0 d2).
    const F8 s = first_lo * x_lo + first_hi * x_hi;
    const F8 flips = L8::And(sign, s + L8::Shuffle<2, 3, 0, 1>(s) < L8::Zero());
    wxyz = L8::LoadU(w[i].xyz);
    wq = L8::Xor(L8::LoadU(w[i].q), flips);
    g.ts_p = g.ts_p + L8::Blend<0xF0>(pa, pc) * wxyz;
    g.b_p = g.b_p + L8::LoadU(x + 8) * wxyz;
    g.ts_r = g.ts_r + L8::Blend<0xF0>(ra, rc) * wxyz;
    g.b_r = g.b_r + L8::LoadU(x + 32) * wxyz;
    g.q_lo = g.q_lo + x_lo * wq;
    g.q_hi = g.q_hi + x_hi * wq;
  }
  if constexpr (kScreen) {
    if (layers & 1) ScreenNorms(pending, pending, screen);
  }
  return g;
}

// StoreFourRotations' half sums of the group's squared norms, in lanes
// (x1^2 + z1^2, x3^2 + z3^2, y1^2 + w1^2, y3^2 + w3^2 | the same for joints
// 0 and 2): a squared norm is lane k plus lane k + 2.
POSEWIRE_AVX2_INLINE F8 HalfSquaredNorms(const GroupSums& g) {
  return g.q_lo * g.q_lo + g.q_hi * g.q_hi;
}

// Stores the group's translations and scales as soon as they are summed,
// so only four of the group's registers stay live until the norms are
// known (StoreGroupRotations). With kScreen, adds the rows to the screen's sum.
template <bool kScreen>
POSEWIRE_AVX2_INLINE void StoreRows(const GroupSums& g, float* o,
                                    Screen* screen) {
  const L8::M8 pad_mask = MaskB();
  const F8 ts_p = L8::And(g.ts_p, pad_mask);
  const F8 ts_r = L8::And(g.ts_r, pad_mask);
  const F8 b_p = L8::And(g.b_p, pad_mask);
  const F8 b_r = L8::And(g.b_r, pad_mask);
  // Joint 0's translation and joint 1's scale (ts), joint 0's scale and
  // joint 1's translation (b); then joints 2 and 3 likewise. The rotation
  // slots between them are left to StoreGroupRotations, so every byte is
  // written once.
  L8::StoreHalves(o, o + 20, ts_p);
  L8::StoreU(o + 8, b_p);
  L8::StoreHalves(o + 24, o + 44, ts_r);
  L8::StoreU(o + 32, b_r);
  if constexpr (kScreen) {
    screen->sum = screen->sum + ((ts_p + b_p) + (ts_r + b_r));
  }
}

// Stores the group's rotations (after StoreRows): the rotation sums times
// `inverse` (their inverse norms, lanes as (i1 i3 i1 i3 | i0 i2 i0 i2)), or
// the first contributor's rotation for a joint whose squared norm is at
// most kMinQuatSquaredNorm. `degenerate` is the lane bits of that test on
// squared norms laid out with joints 1 and 3 in lanes `lane` and `lane` + 1,
// joints 0 and 2 in lanes `lane` + 4 and `lane` + 5. With kScreen, adds the
// squared norms `n2` to the screen's sum (the rotation sums are finite if
// their squared norms are, which cannot overflow once the inputs' norms
// pass).
template <bool kScreen>
POSEWIRE_AVX2_INLINE void StoreGroupRotations(const GroupSums& g, F8 inverse,
                                              int degenerate, int lane, F8 n2,
                                              float* o, Screen* screen) {
  const F8 u_lo = g.q_lo * inverse;
  const F8 u_hi = g.q_hi * inverse;
  // (u1 | u0) and (u3 | u2).
  F8 up = L8::Shuffle<0, 2, 0, 2>(u_lo, u_hi);
  F8 ur = L8::Shuffle<1, 3, 1, 3>(u_lo, u_hi);
  UseFirstWhereDegenerate(degenerate >> lane, g.first_p, g.first_r, &up, &ur);
  L8::StoreHalves(o + 16, o + 4, up);
  L8::StoreHalves(o + 40, o + 28, ur);
  if constexpr (kScreen) screen->sum = screen->sum + n2;
}

// The fast path's kernel for joints [0, n - n % 4): eight at a time, whose
// squared norms fill one register, so one square root and one division
// serve eight joints, then the last four if n % 8 >= 4 (each norm twice).
template <int kCount, bool kScreen>
POSEWIRE_AVX2_INLINE void BlendAllGroups(const float* const* pose,
                                         const RowWeights* w, int count, int n,
                                         Transform* out, Screen* screen) {
  const F8 min_norm = L8::Splat(kMinQuatSquaredNorm);
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
    const F8 s0 = HalfSquaredNorms(g0);
    const F8 s1 = HalfSquaredNorms(g1);
    const F8 n2 =
        L8::Shuffle<0, 1, 0, 1>(s0, s1) + L8::Shuffle<2, 3, 2, 3>(s0, s1);
    const F8 inverse = L8::Splat(1.0f) / L8::Sqrt(n2);
    const int degenerate = L8::Bits(n2 <= min_norm);
    // Each group's inverse norms back in its lanes (i1 i3 i1 i3 | ...), and
    // its squared norms likewise for the screen.
    StoreGroupRotations<kScreen>(g0, L8::Shuffle<0, 1, 0, 1>(inverse, inverse),
                                 degenerate, 0, L8::Shuffle<0, 1, 0, 1>(n2, n2),
                                 o, screen);
    StoreGroupRotations<kScreen>(g1, L8::Shuffle<2, 3, 2, 3>(inverse, inverse),
                                 degenerate, 2, L8::Shuffle<2, 3, 2, 3>(n2, n2),
                                 o + 48, screen);
  }
  if (n % 8 >= 4) {
    const GroupSums g =
        AccumulateGroup<kCount, kScreen>(pose, w, count, f, screen);
    const F8 s = HalfSquaredNorms(g);
    // (n1 n3 n1 n3 | n0 n2 n0 n2).
    const F8 n2 = s + L8::Shuffle<2, 3, 0, 1>(s);
    const F8 inverse = L8::Splat(1.0f) / L8::Sqrt(n2);
    const int degenerate = L8::Bits(n2 <= min_norm);
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
    const F8 x = L8::Splat(c[i].weight);
    L8::StoreU(w[i].xyz, L8::And(x, MaskB()));
    L8::StoreU(w[i].q, x);
    poses[i] = reinterpret_cast<const float*>(c[i].pose);
  }
  Screen screen;
  screen.min_norm = L8::Splat(1.0f);
  screen.max_norm = L8::Splat(1.0f);
  screen.sum = L8::Zero();
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
    const L8::M8 finite = (screen.sum - screen.sum) == L8::Zero();
    const L8::M8 in_range =
        (screen.min_norm >= L8::Splat(kScreenMinSquaredNorm)) &
        (screen.max_norm <= L8::Splat(kScreenMaxSquaredNorm));
    ok &= L8::Bits(finite & in_range) == 0xFF;
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
  F8 u[2];
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
  if (avx2) return PoseLooksValidAvx2(pose);
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
  const lanes::F4 zero = lanes::Zero();
  lanes::F4 total = zero;
  for (size_t l = 0; l < layers.size(); ++l) {
    const float* mask = layers[l].joint_weights.data();
    const lanes::F4 lw = lanes::Splat(layer_weights[l]);
    // Effective: std::max(0, mask), which is 0 for NaN and for zeros.
    const lanes::F4 w = mask == nullptr
                            ? lw
                            : lw * lanes::Max(zero, lanes::LoadU(mask + first));
    lanes::StoreU(m->weights + 4 * l, w);
    total = total + w;
  }
  const lanes::F4 t = lanes::Splat(threshold);
  const lanes::F4 fill = lanes::And(t - total, total < t);
  // Lanes with a zero total divide by zero or more; they are not read.
  const lanes::F4 inv = lanes::Splat(1.0f) / (total + fill);
  for (size_t l = 0; l < layers.size(); ++l) {
    lanes::StoreU(m->normalised + 4 * l,
                  lanes::LoadU(m->weights + 4 * l) * inv);
  }
  lanes::Store(m->total, total);
  lanes::Store(m->fill, fill);
  lanes::Store(m->fill_normalised, fill * inv);
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
  lanes::M4 all = lanes::AllLanes();
  const lanes::F4 hi = lanes::Splat(kMaxBlendWeight);
  const lanes::F4 lo = lanes::Splat(-kLargestFloat);
  for (; i + 4 <= weights.size(); i += 4) {
    const lanes::F4 w = lanes::LoadU(weights.data() + i);
    all = all & ((w <= hi) & (w >= lo));
  }
  ok = lanes::Bits(all) == 0xF;
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
    if (!(weights[l] > 0.0f) && !PoseLooksValidAvx2(layers[l].transform)) {
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
