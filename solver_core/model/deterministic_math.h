// Float sin, cos and pow that give the same bits on every IEEE-754 machine.
//
// Why: glibc picks an implementation of sinf, cosf and powf (and of the
// double sin, cos, pow, exp, log, atan, atan2, ...) at load time from the
// CPU's features (an FMA variant or an SSE2 one), and the variants round
// some results differently: measured on glibc 2.36, powf(x, 0.7f) differs
// between them for many x, sinf and cosf for some large x. Game servers
// re-solve the poses their players' clients claim and need bit-identical
// results, so the solvers must not call those functions.
//
// How: each function here evaluates in double precision with only IEEE +,
// -, *, / (correctly rounded on every IEEE machine), exact integer
// arithmetic, and exact operations (a float's conversion to double, scaling
// by a power of two, std::remainder), in a fixed order (the build has
// -ffp-contract=off, so no FMA contraction), then rounds once to float. The
// double result is within about 2^-40 (relative) of the exact value, so the
// float is the correctly rounded one except when the exact value is that
// close to a midpoint between two floats, and then 1 ulp away at most.
//
// Not here, on purpose: atan2f and acosf. glibc 2.36 has a single
// implementation of each (no ifunc variants; their results were measured
// identical with and without FMA), so std::atan2 and std::acos on floats
// stay. The double-precision libm functions do have variants; SinCosDegrees
// (BVH reader) and Atan2 (BVH writer) below are the double functions the
// asset code needs.
#ifndef POSEWIRE_SOLVER_CORE_MODEL_DETERMINISTIC_MATH_H_
#define POSEWIRE_SOLVER_CORE_MODEL_DETERMINISTIC_MATH_H_

namespace posewire::dmath {

struct SinCosF {
  float sin = 0.0f;
  float cos = 1.0f;
};

struct SinCosD {
  double sin = 0.0;
  double cos = 1.0;
};

// sin(x), cos(x) for x in radians. Within 1 ulp of the correctly rounded
// result (nearly always equal to it) for every finite float: the argument
// is reduced exactly enough (Cody-Waite below 2^25 in magnitude,
// Payne-Hanek with a 320-bit table of 2/pi above), so even huge arguments
// give the true sine, as sinf does. sin(-0) = -0; NaN and +-infinity give
// NaN.
float Sin(float x);
float Cos(float x);
// Both, sharing the argument reduction; the same bits as Sin and Cos.
SinCosF SinCos(float x);

// Eigen's slerp weights sin((1 - t) theta) / sin(theta) and
// sin(t theta) / sin(theta) (the arguments (1 - t) theta and t theta rounded
// to float as Eigen computes them), each evaluated in double and rounded
// once to float, for theta in (0, pi] (the caller keeps it away from 0). For
// t = 0 and t = 1 the weights are exactly (1, 0) and (0, 1).
struct SlerpWeights {
  float from = 1.0f;
  float to = 0.0f;
};
SlerpWeights SlerpScales(float theta, float t);

// x^y. Within 1 ulp of the correctly rounded result (nearly always equal
// to it) for x > 0 and finite y, the domain the solvers use (damping and
// stiffness factors (1 - d)^(60 / rate) with the base in [0, 1]); a result
// beyond float range is +infinity or (after gradual underflow) +0.
// Pow(x, 1) == x for every x. The special cases are C's pow:
// - Pow(x, +-0) = 1 and Pow(1, y) = 1 for every x and y, even NaN;
// - otherwise a NaN argument gives NaN;
// - x < 0: for integer y, +-Pow(-x, y) (negative for odd y); for non-integer
//   finite y, NaN;
// - x = +-0: +0 for y > 0, +infinity for y < 0 (signed like x when y is an
//   odd integer);
// - x or y infinite: the limits (e.g. Pow(0.5, +inf) = 0, Pow(2, -inf) = 0,
//   Pow(-1, +-inf) = 1, Pow(+inf, y < 0) = 0).
float Pow(float x, float y);

// sin and cos of an angle in degrees, in double precision (a few ulp), for
// every finite double: the angle is first reduced exactly with
// std::remainder by 360 and 90 degrees. NaN and +-infinity give NaN.
SinCosD SinCosDegrees(double degrees);

// atan2(y, x) in double precision, within a few ulp of the true angle, for
// the BVH writer's Euler angles (glibc's double atan2 has FMA and SSE2
// variants that round differently). C's conventions for zeros and
// infinities: atan2(+-0, +0) = +-0, atan2(+-0, -0) = +-pi, atan2(y, +-0) =
// +-pi/2 for y != 0, atan2(+-inf, +inf) = +-pi/4, atan2(+-inf, -inf) =
// +-3pi/4; a NaN argument gives NaN.
double Atan2(double y, double x);

}  // namespace posewire::dmath

#endif  // POSEWIRE_SOLVER_CORE_MODEL_DETERMINISTIC_MATH_H_
