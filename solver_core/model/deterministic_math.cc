#include "solver_core/model/deterministic_math.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace posewire::dmath {
namespace {

__extension__ typedef unsigned __int128 Uint128;
__extension__ typedef __int128 Int128;

// The constants below were derived for this file with python3 (pi by
// Machin's formula in exact integer arithmetic, then split and rounded
// exactly). The float sin and cos use fitted polynomials (below); the other
// polynomials are plain Taylor series with the coefficients written as exact
// ratios, which the compiler rounds correctly to double.

// pi / 2 in three parts: the first two have 28 significant bits, so k times
// them is exact for |k| < 2^25, and x - k * kPio2Hi is exact for the floats
// reduced that way (|x| < 2^25).
constexpr double kPio2Hi = 0x1.921fb54p+0;
constexpr double kPio2Mid = 0x1.10b461p-30;
constexpr double kPio2Lo = 0x1.a62633145c06ep-58;
constexpr double kTwoOverPi = 0x1.45f306dc9c883p-1;
constexpr double kPiOver4 = 0x1.921fb54442d18p-1;
// Adding and subtracting 1.5 * 2^52 rounds a double of magnitude below 2^51
// to the nearest integer (ties to even), in the default rounding mode, with
// no call to rint (which would read the rounding mode just the same).
constexpr double kRoundToInt = 0x1.8p52;
// Floats at or above this magnitude are reduced by Payne-Hanek.
constexpr float kCodyWaiteLimit = 0x1p25f;

// The bits of 2/pi after the binary point, 64 to a word, most significant
// first: word j holds bits 64 j + 1 ... 64 j + 64.
constexpr uint64_t kTwoOverPiBits[5] = {
    0xa2f9836e4e441529ull, 0xfc2757d1f534ddc0ull, 0xdb6295993c439041ull,
    0xfe5163abdebbc561ull, 0xb7246e3a424dd2e0ull};
// pi/2 * 2^-126: turns the 126-bit fraction of x * 2/pi into radians.
constexpr double kPio2Scaled = 0x1.921fb54442d18p-126;

double ReduceLarge(float x, int* quadrant);

// x reduced to r in about [-pi/4, pi/4] with x = r + n * pi/2 (n mod 4 in
// `quadrant`), for finite x. Inlined into each caller: SlerpScales then
// evaluates its three sines side by side.
[[gnu::always_inline]] inline double Reduce(float x, int* quadrant) {
  const double xd = x;
  if (std::fabs(xd) <= kPiOver4) {
    *quadrant = 0;
    return xd;
  }
  if (std::fabs(x) < kCodyWaiteLimit) {
    const double k = (xd * kTwoOverPi + kRoundToInt) - kRoundToInt;
    *quadrant = static_cast<int>(static_cast<int64_t>(k) & 3);
    return ((xd - k * kPio2Hi) - k * kPio2Mid) - k * kPio2Lo;
  }
  return ReduceLarge(x, quadrant);
}

// Reduce for |x| >= 2^25 (rare: out of line, so the common path inlines).
[[gnu::noinline]] double ReduceLarge(float x, int* quadrant) {
  // Payne-Hanek. |x| = m 2^e with a 24-bit integer m and e >= 2. Bits of
  // 2/pi up to bit e - 2 contribute multiples of 4 to x * 2/pi (nothing to
  // the quadrant or the fraction), so only the 128 bits from bit i0 = e - 1
  // on are used: with W those bits as an integer, x * 2/pi = m W 2^-126
  // (mod 4) up to less than 2^-102, and m W mod 2^128 is that in fixed
  // point with 2 integer bits.
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const uint64_t m = (bits & 0x7fffffu) | 0x800000u;
  const int e = static_cast<int>((bits >> 23) & 0xff) - 127 - 23;
  const int i0 = e - 1;
  const int q = (i0 - 1) / 64;
  const int s = (i0 - 1) % 64;
  uint64_t hi = kTwoOverPiBits[q];
  uint64_t lo = kTwoOverPiBits[q + 1];
  if (s != 0) {
    hi = (hi << s) | (kTwoOverPiBits[q + 1] >> (64 - s));
    lo = (lo << s) | (kTwoOverPiBits[q + 2] >> (64 - s));
  }
  const Uint128 w = (static_cast<Uint128>(hi) << 64) | lo;
  const Uint128 p = static_cast<Uint128>(m) * w;  // mod 2^128
  // Nearest quadrant, and the signed fraction in [-1/2, 1/2) quadrants.
  const Uint128 n = (p + (static_cast<Uint128>(1) << 125)) >> 126;
  const Int128 f = static_cast<Int128>(p - (n << 126));
  // f in double, from its two halves: the low one converts with an error
  // below 2^11 (2^-115 quadrants), under the 2^-102 already neglected.
  const double fd =
      static_cast<double>(static_cast<int64_t>(f >> 64)) * 0x1p64 +
      static_cast<double>(static_cast<uint64_t>(f));
  double r = fd * kPio2Scaled;
  int quad = static_cast<int>(n & 3);
  if (x < 0.0f) {
    r = -r;
    quad = (4 - quad) & 3;
  }
  *quadrant = quad;
  return r;
}

// sin(r) = r + r z S(z) and cos(r) = 1 + z C(z), z = r^2, on |r| <= pi/4
// (+ a rounding error), S and C of degree 4: Chebyshev fits of
// (sin(r)/r - 1)/z and (cos(r) - 1)/z on [0, 1.0001 (pi/4)^2], computed for
// this file with python3's mpmath (chebyfit, 50 digits), coefficients then
// rounded to double. Relative error of the approximants: below 2^-45 (sin)
// and 2^-41 (cos), far under the float's 2^-24. Evaluated in Estrin's
// scheme (shorter dependency chains than Horner's; still one fixed order).
constexpr double kS0 = -0x1.555555555516bp-3;
constexpr double kS1 = 0x1.1111110fd3b3cp-7;
constexpr double kS2 = -0x1.a019fd9ae7168p-13;
constexpr double kS3 = 0x1.71d9a9b87993fp-19;
constexpr double kS4 = -0x1.aa283bea75579p-26;
constexpr double kC0 = -0x1.fffffffffe694p-2;
constexpr double kC1 = 0x1.555555514f0e0p-5;
constexpr double kC2 = -0x1.6c16bae56f7d8p-10;
constexpr double kC3 = 0x1.a0129877a1cfcp-16;
constexpr double kC4 = -0x1.2474cb416294ep-22;

double SinPoly(double r) {
  const double z = r * r;
  const double z2 = z * z;
  const double p = (kS0 + kS1 * z) + z2 * ((kS2 + kS3 * z) + z2 * kS4);
  return r + (r * z) * p;
}

double CosPoly(double r) {
  const double z = r * r;
  const double z2 = z * z;
  const double p = (kC0 + kC1 * z) + z2 * ((kC2 + kC3 * z) + z2 * kC4);
  return 1.0 + z * p;
}

bool IsFinite(float x) { return x - x == 0.0f; }

// sin(x) before its rounding to float; NaN for NaN and infinities.
[[gnu::always_inline]] inline double SinDouble(float x) {
  if (!IsFinite(x)) return x - x;
  if (x == 0.0f) return x;  // keeps sin(-0) = -0 (the series gives +0)
  int quadrant = 0;
  const double r = Reduce(x, &quadrant);
  // Both series and a select rather than a switch: no branch on the
  // quadrant to mispredict, and the two chains run side by side.
  const double s = SinPoly(r);
  const double c = CosPoly(r);
  const double v = (quadrant & 1) != 0 ? c : s;
  return (quadrant & 2) != 0 ? -v : v;
}

}  // namespace

SlerpWeights SlerpScales(float theta, float t) {
  // The three sines in double, unrounded; one rounding per weight. For t = 0
  // or 1 the weights are exactly (1, 0) and (0, 1): the same argument's sine
  // divided by itself.
  const double s = SinDouble(theta);
  const double s0 = SinDouble((1.0f - t) * theta);
  const double s1 = SinDouble(t * theta);
  return {static_cast<float>(s0 / s), static_cast<float>(s1 / s)};
}

SinCosF SinCos(float x) {
  if (!IsFinite(x)) {
    const float nan = x - x;
    return {nan, nan};
  }
  if (x == 0.0f) return {x, 1.0f};  // keeps sin(-0) = -0
  int quadrant = 0;
  const double r = Reduce(x, &quadrant);
  const double s = SinPoly(r);
  const double c = CosPoly(r);
  // As SinDouble: selects, no branch on the quadrant. cos(r + n pi/2) is
  // negative for n = 1 (-sin r) and n = 2 (-cos r).
  const bool odd = (quadrant & 1) != 0;
  const double sv = odd ? c : s;
  const double cv = odd ? s : c;
  return {static_cast<float>((quadrant & 2) != 0 ? -sv : sv),
          static_cast<float>(((quadrant + 1) & 2) != 0 ? -cv : cv)};
}

float Sin(float x) { return static_cast<float>(SinDouble(x)); }

float Cos(float x) { return SinCos(x).cos; }

namespace {

constexpr double kInvLn2 = 0x1.71547652b82fep+0;
constexpr double kLn2 = 0x1.62e42fefa39efp-1;
constexpr double kSqrt2 = 0x1.6a09e667f3bcdp+0;

// log2(x) for a positive finite float, within about 2^-50 relative (and
// exactly 0 for x = 1). x = 2^e m with m in [sqrt(1/2), sqrt(2)];
// ln(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.172, by its series up
// to s^17 / 17 (the first omitted term is below 2^-50 relative).
double Log2(float x) {
  const uint64_t bits = std::bit_cast<uint64_t>(static_cast<double>(x));
  int e = static_cast<int>(bits >> 52) - 1023;  // x > 0: no sign bit
  double m = std::bit_cast<double>((bits & 0x000fffffffffffffull) |
                                   0x3ff0000000000000ull);
  if (m > kSqrt2) {
    m *= 0.5;
    ++e;
  }
  const double s = (m - 1.0) / (m + 1.0);
  const double s2 = s * s;
  const double p =
      1.0 / 3.0 +
      s2 * (1.0 / 5.0 +
            s2 * (1.0 / 7.0 +
                  s2 * (1.0 / 9.0 +
                        s2 * (1.0 / 11.0 +
                              s2 * (1.0 / 13.0 +
                                    s2 * (1.0 / 15.0 + s2 * (1.0 / 17.0)))))));
  const double ln_m = 2.0 * s + (2.0 * s) * (s2 * p);
  return static_cast<double>(e) + ln_m * kInvLn2;
}

// 2^t for t in [-151, 128): 2^k e^(f ln 2) with k = round(t), |f| <= 1/2
// (t - k is exact), e^u by its Taylor series to u^11 (|u| <= 0.347: the
// first omitted term is below 2^-47 relative). Scaling by 2^k is exact in
// double; the one rounding to float (subnormal or not) comes after.
float Exp2(double t) {
  const double k = (t + kRoundToInt) - kRoundToInt;
  const double u = (t - k) * kLn2;
  double p = 1.0 / 39916800.0;  // 1/11!
  p = 1.0 / 3628800.0 + u * p;
  p = 1.0 / 362880.0 + u * p;
  p = 1.0 / 40320.0 + u * p;
  p = 1.0 / 5040.0 + u * p;
  p = 1.0 / 720.0 + u * p;
  p = 1.0 / 120.0 + u * p;
  p = 1.0 / 24.0 + u * p;
  p = 1.0 / 6.0 + u * p;
  p = 0.5 + u * p;
  p = 1.0 + u * p;
  p = 1.0 + u * p;
  const uint64_t scale_bits =
      static_cast<uint64_t>(static_cast<int64_t>(k) + 1023) << 52;
  return static_cast<float>(p * std::bit_cast<double>(scale_bits));
}

bool IsNan(float x) { return x != x; }

// y is an integer (or infinite: every float that large is even).
bool IsInteger(float y) { return std::trunc(y) == y; }
bool IsOddInteger(float y) {
  // Floats of magnitude 2^24 and up are even; below, the conversion is exact.
  return std::fabs(y) < 0x1p24f && IsInteger(y) &&
         (static_cast<int32_t>(y) & 1) != 0;
}

// x^y for x > 0 (finite or +inf) and y != 0, not NaN.
float PowPositive(float x, float y) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  if (x == kInf) return y > 0.0f ? kInf : 0.0f;
  if (std::fabs(y) == kInf) {
    // x != 1 here.
    return (x > 1.0f) == (y > 0.0f) ? kInf : 0.0f;
  }
  const double t = static_cast<double>(y) * Log2(x);
  if (t >= 128.0) return kInf;
  if (t < -151.0) return 0.0f;
  return Exp2(t);
}

}  // namespace

float Pow(float x, float y) {
  if (y == 0.0f || x == 1.0f) return 1.0f;
  if (IsNan(x) || IsNan(y)) return x + y;
  if (x > 0.0f) return PowPositive(x, y);
  constexpr float kInf = std::numeric_limits<float>::infinity();
  if (x == 0.0f) {
    const bool odd = IsOddInteger(y);
    if (y > 0.0f) return odd ? x : 0.0f;
    return odd ? std::copysign(kInf, x) : kInf;
  }
  // x < 0.
  if (x == -kInf) {
    const float r = PowPositive(kInf, y);
    return IsOddInteger(y) ? -r : r;
  }
  if (std::fabs(y) == kInf) {
    if (x == -1.0f) return 1.0f;
    return PowPositive(-x, y);
  }
  if (!IsInteger(y)) return std::numeric_limits<float>::quiet_NaN();
  const float r = PowPositive(-x, y);
  return IsOddInteger(y) ? -r : r;
}

namespace {

constexpr double kPiOver180 = 0x1.1df46a2529d39p-6;

// Taylor series to r^17 / r^18 on |r| <= pi/4: the first omitted terms are
// below 2^-60 relative, so double rounding dominates (a few ulp).
double SinPolyD(double r) {
  const double r2 = r * r;
  double p = 1.0 / 355687428096000.0;  // 1/17!
  p = -1.0 / 1307674368000.0 + r2 * p;
  p = 1.0 / 6227020800.0 + r2 * p;
  p = -1.0 / 39916800.0 + r2 * p;
  p = 1.0 / 362880.0 + r2 * p;
  p = -1.0 / 5040.0 + r2 * p;
  p = 1.0 / 120.0 + r2 * p;
  p = -1.0 / 6.0 + r2 * p;
  return r + r * (r2 * p);
}

double CosPolyD(double r) {
  const double r2 = r * r;
  double p = 1.0 / 6402373705728000.0;  // 1/18!
  p = -1.0 / 20922789888000.0 + r2 * p;
  p = 1.0 / 87178291200.0 + r2 * p;
  p = -1.0 / 479001600.0 + r2 * p;
  p = 1.0 / 3628800.0 + r2 * p;
  p = -1.0 / 40320.0 + r2 * p;
  p = 1.0 / 720.0 + r2 * p;
  p = -1.0 / 24.0 + r2 * p;
  p = 0.5 + r2 * p;
  return 1.0 - r2 * p;
}

}  // namespace

SinCosD SinCosDegrees(double degrees) {
  if (!(degrees - degrees == 0.0)) {
    const double nan = degrees - degrees;
    return {nan, nan};
  }
  // Both remainders are exact; a360 - a90 is an exact multiple of 90.
  const double a360 = std::remainder(degrees, 360.0);
  const double a90 = std::remainder(a360, 90.0);
  const int quadrant = static_cast<int>((a360 - a90) / 90.0) & 3;
  const double r = a90 * kPiOver180;
  const double s = SinPolyD(r);
  const double c = CosPolyD(r);
  switch (quadrant) {
    case 0:
      return {s, c};
    case 1:
      return {c, -s};
    case 2:
      return {-s, -c};
    default:
      return {-c, s};
  }
}

namespace {

// atan(k / 8) for k = 0..8, rounded to double (mpmath at 200 bits).
constexpr double kAtanEighths[9] = {
    0.0,
    0.12435499454676144,
    0.24497866312686414,
    0.35877067027057225,
    0.4636476090008061,
    0.5585993153435624,
    0.6435011087932844,
    0.7188299996216245,
    0.7853981633974483,
};
// pi and pi / 2 as a double plus the double nearest the remainder.
constexpr double kPiHi = 3.141592653589793;
constexpr double kPiLo = 1.2246467991473532e-16;
constexpr double kHalfPiHi = 1.5707963267948966;
constexpr double kHalfPiLo = 6.123233995736766e-17;

// atan(t) for t in [0, 1]: atan(c) + atan(u) with c = k / 8 the nearest
// eighth and u = (t - c) / (1 + t c), |u| <= 1/16, whose odd Taylor series
// to u^19 is below 2^-80 relative in its last term.
double AtanUnit(double t) {
  const int k = static_cast<int>(t * 8.0 + 0.5);
  const double c = static_cast<double>(k) * 0.125;
  const double u = (t - c) / (1.0 + t * c);
  const double u2 = u * u;
  double series = 1.0 / 19.0;
  for (int n = 17; n >= 1; n -= 2) {
    series = 1.0 / static_cast<double>(n) - u2 * series;
  }
  return kAtanEighths[k] + u * series;
}

}  // namespace

double Atan2(double y, double x) {
  if (std::isnan(x) || std::isnan(y)) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  const bool x_negative = std::signbit(x);
  const double ax = std::fabs(x);
  const double ay = std::fabs(y);
  double angle;  // in [0, pi], signed by y at the end
  if (ay == 0.0) {
    angle = x_negative ? kPiHi : 0.0;
  } else if (std::isinf(ax) && std::isinf(ay)) {
    angle = x_negative ? 3.0 * (kPiHi * 0.25) : kPiHi * 0.25;
  } else if (std::isinf(ax)) {
    angle = x_negative ? kPiHi : 0.0;
  } else if (std::isinf(ay) || ax == 0.0) {
    angle = kHalfPiHi;
  } else {
    // The ratio in [0, 1]: for the steep half, atan(ay / ax) = pi / 2 -
    // atan(ax / ay).
    const bool steep = ay > ax;
    const double t = steep ? ax / ay : ay / ax;
    angle = AtanUnit(t);
    if (steep) angle = (kHalfPiHi - angle) + kHalfPiLo;
    if (x_negative) angle = (kPiHi - angle) + kPiLo;
  }
  return std::copysign(angle, y);
}

}  // namespace posewire::dmath
