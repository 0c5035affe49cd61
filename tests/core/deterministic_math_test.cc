// dmath's Sin, Cos, SinCos, Pow and SinCosDegrees against long double libm
// (glibc's x87 implementations, far more precise than a float and with an
// exact argument reduction) over dense sweeps, their special values, and
// quaternion_math.h's QuaternionFromAngleAxis and Slerp against Eigen's.
#include "solver_core/model/deterministic_math.h"

#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <vector>

#include "solver_core/model/quaternion_math.h"

namespace posewire {
namespace deterministic_math_test {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

uint32_t Bits(float x) { return std::bit_cast<uint32_t>(x); }
float FromBits(uint32_t b) { return std::bit_cast<float>(b); }

// The spacing of floats at the magnitude of `exact` (the subnormal spacing
// below the normal range).
long double UlpAt(long double exact) {
  const long double a = std::fabs(exact);
  if (a < 0x1p-126L) return 0x1p-149L;
  int e = 0;
  std::frexp(a, &e);  // a = f 2^e, f in [0.5, 1)
  return std::ldexp(1.0L, e - 24);
}

// |got - exact| in float ulps at `exact`.
double UlpError(float got, long double exact) {
  return static_cast<double>(std::fabs(static_cast<long double>(got) - exact) /
                             UlpAt(exact));
}

// Fixed pseudo-random bits (the test must not depend on <random>'s
// distributions).
class Lcg {
 public:
  uint32_t Next() {
    s_ = s_ * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(s_ >> 32);
  }
  float Uniform(float lo, float hi) {
    return lo + (hi - lo) * static_cast<float>(Next() >> 8) * 0x1p-24f;
  }

 private:
  uint64_t s_ = 0x243F6A8885A308D3ull;
};

struct Stats {
  double max_ulp = 0.0;
  float worst = 0.0f;
  int64_t count = 0;
  int64_t not_correctly_rounded = 0;
  void Add(float x, float got, long double exact) {
    const double e = UlpError(got, exact);
    if (e > max_ulp) {
      max_ulp = e;
      worst = x;
    }
    ++count;
    if (e > 0.5) ++not_correctly_rounded;
  }
};

void CheckSinCos(float x, Stats* s, Stats* c) {
  const long double xl = x;
  const float ds = dmath::Sin(x);
  const float dc = dmath::Cos(x);
  s->Add(x, ds, std::sin(xl));
  c->Add(x, dc, std::cos(xl));
  const dmath::SinCosF sc = dmath::SinCos(x);
  ASSERT_EQ(Bits(sc.sin), Bits(ds)) << x;
  ASSERT_EQ(Bits(sc.cos), Bits(dc)) << x;
}

TEST(DeterministicMathTest, SinCosWithinOneUlpBelow128) {
  // Every 61st float from 2^-30 up to 128 (about 1.3 million), both signs.
  Stats s, c;
  const uint32_t lo = Bits(0x1p-30f);
  const uint32_t hi = Bits(128.0f);
  for (uint32_t b = lo; b < hi; b += 61) {
    CheckSinCos(FromBits(b), &s, &c);
    CheckSinCos(-FromBits(b + 7), &s, &c);
  }
  EXPECT_LT(s.max_ulp, 1.0) << "at " << s.worst;
  EXPECT_LT(c.max_ulp, 1.0) << "at " << c.worst;
  // Nearly always the correctly rounded float.
  EXPECT_LT(s.not_correctly_rounded, s.count / 10000);
  EXPECT_LT(c.not_correctly_rounded, c.count / 10000);
  std::printf("sin: max %.4f ulp, %lld of %lld not correctly rounded\n",
              s.max_ulp, static_cast<long long>(s.not_correctly_rounded),
              static_cast<long long>(s.count));
  std::printf("cos: max %.4f ulp, %lld of %lld not correctly rounded\n",
              c.max_ulp, static_cast<long long>(c.not_correctly_rounded),
              static_cast<long long>(c.count));
}

TEST(DeterministicMathTest, SinCosWithinOneUlpForHugeArguments) {
  // Random floats of every exponent from 2^7 to 2^127 (Cody-Waite below
  // 2^25, Payne-Hanek above), and every float just around the switch.
  Stats s, c;
  Lcg rng;
  for (int i = 0; i < 400000; ++i) {
    const uint32_t exponent = 134 + rng.Next() % 120;  // 2^7 .. 2^126
    const float x = FromBits((exponent << 23) | (rng.Next() & 0x7fffff) |
                             (rng.Next() & 0x80000000u));
    CheckSinCos(x, &s, &c);
  }
  for (uint32_t b = Bits(0x1p25f) - 20000; b < Bits(0x1p25f) + 20000; ++b) {
    CheckSinCos(FromBits(b), &s, &c);
  }
  CheckSinCos(std::numeric_limits<float>::max(), &s, &c);
  CheckSinCos(-std::numeric_limits<float>::max(), &s, &c);
  EXPECT_LT(s.max_ulp, 1.0) << "at " << s.worst;
  EXPECT_LT(c.max_ulp, 1.0) << "at " << c.worst;
  std::printf("huge: sin max %.4f ulp, cos max %.4f ulp\n", s.max_ulp,
              c.max_ulp);
}

TEST(DeterministicMathTest, SinCosSpecialValues) {
  EXPECT_EQ(Bits(dmath::Sin(0.0f)), Bits(0.0f));
  EXPECT_EQ(Bits(dmath::Sin(-0.0f)), Bits(-0.0f));
  EXPECT_EQ(dmath::Cos(0.0f), 1.0f);
  EXPECT_EQ(dmath::Cos(-0.0f), 1.0f);
  const float denorm = std::numeric_limits<float>::denorm_min();
  EXPECT_EQ(dmath::Sin(denorm), denorm);
  EXPECT_EQ(dmath::Sin(-denorm), -denorm);
  EXPECT_EQ(dmath::Cos(denorm), 1.0f);
  EXPECT_EQ(dmath::Sin(1e-30f), 1e-30f);
  for (float x : {kNan, -kNan, kInf, -kInf}) {
    EXPECT_TRUE(std::isnan(dmath::Sin(x))) << x;
    EXPECT_TRUE(std::isnan(dmath::Cos(x))) << x;
    const dmath::SinCosF sc = dmath::SinCos(x);
    EXPECT_TRUE(std::isnan(sc.sin) && std::isnan(sc.cos)) << x;
  }
  // Finite for every finite float: a sweep over all exponents.
  for (uint32_t b = 0; b < 0x7f800000u; b += 0x1000) {
    const dmath::SinCosF sc = dmath::SinCos(FromBits(b));
    ASSERT_TRUE(std::isfinite(sc.sin) && std::isfinite(sc.cos)) << b;
    ASSERT_LE(std::fabs(sc.sin), 1.0f);
    ASSERT_LE(std::fabs(sc.cos), 1.0f);
  }
}

void CheckPow(float x, float y, Stats* stats) {
  const float got = dmath::Pow(x, y);
  const long double exact =
      std::pow(static_cast<long double>(x), static_cast<long double>(y));
  if (exact > static_cast<long double>(std::numeric_limits<float>::max())) {
    // Beyond float range (or within half an ulp of its edge): infinity or
    // the largest float.
    ASSERT_TRUE(got == kInf || got == std::numeric_limits<float>::max())
        << x << "^" << y;
    return;
  }
  stats->Add(x, got, exact);
  ASSERT_LT(UlpError(got, exact), 1.0) << x << "^" << y << " = " << got;
}

TEST(DeterministicMathTest, PowWithinOneUlp) {
  // The spring bones' exponents (60 Hz over 30, 50, 90, 120, 144 and 240 Hz
  // rigs) and others, on every 4099th float in (0, 1] (bases 1 - damping)
  // and every 1031st in (1, 128).
  const float exponents[] = {60.0f / 30.0f,  60.0f / 50.0f,  60.0f / 90.0f,
                             60.0f / 120.0f, 60.0f / 144.0f, 60.0f / 240.0f,
                             0.7f,           1.5f,           2.0f,
                             0.5f,           3.7f,           -1.3f,
                             -7.0f,          12.5f,          0.01f};
  for (float y : exponents) {
    Stats stats;
    for (uint32_t b = 1; b <= Bits(1.0f); b += 4099) {
      CheckPow(FromBits(b), y, &stats);
    }
    for (uint32_t b = Bits(1.0f); b < Bits(128.0f); b += 1031) {
      CheckPow(FromBits(b), y, &stats);
    }
    EXPECT_LT(stats.not_correctly_rounded, stats.count / 10000 + 1)
        << "y = " << y;
    std::printf(
        "pow(x, %g): max %.4f ulp, %lld of %lld not correctly rounded\n", y,
        stats.max_ulp, static_cast<long long>(stats.not_correctly_rounded),
        static_cast<long long>(stats.count));
  }
}

TEST(DeterministicMathTest, PowOfOneIsIdentity) {
  // KawaiiPhysics' factors at the 60 Hz reference rate rely on it.
  for (uint32_t b = 0; b < 0x7f800000u; b += 97) {
    const float x = FromBits(b);
    ASSERT_EQ(Bits(dmath::Pow(x, 1.0f)), Bits(x)) << x;
  }
}

TEST(DeterministicMathTest, PowRandomArgumentsWithinOneUlp) {
  Lcg rng;
  Stats stats;
  for (int i = 0; i < 300000; ++i) {
    const float x = FromBits(rng.Next() % Bits(1e6f) + 1);
    const float y = rng.Uniform(-40.0f, 40.0f);
    CheckPow(x, y, &stats);
  }
  std::printf("pow random: max %.4f ulp, %lld of %lld not correctly rounded\n",
              stats.max_ulp,
              static_cast<long long>(stats.not_correctly_rounded),
              static_cast<long long>(stats.count));
}

TEST(DeterministicMathTest, PowSpecialValuesMatchC) {
  // The special cases C (and so glibc's powf, exactly) defines.
  const float values[] = {0.0f, -0.0f,  1.0f,    -1.0f, 0.5f, -0.5f,
                          2.0f, -2.0f,  3.0f,    -3.0f, kInf, -kInf,
                          kNan, 1e-45f, -1e-45f, 1e30f, 0.7f, -0.7f};
  for (float x : values) {
    for (float y : values) {
      const float got = dmath::Pow(x, y);
      const float want = std::pow(x, y);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got)) << x << "^" << y << " = " << got;
      } else if (std::fabs(want) == kInf || want == 0.0f || y == 1.0f ||
                 y == 0.0f || x == 1.0f || std::fabs(x) == kInf || x == 0.0f) {
        EXPECT_EQ(Bits(got), Bits(want)) << x << "^" << y << " = " << got;
      } else {
        EXPECT_LT(UlpError(got, std::pow(static_cast<long double>(x),
                                         static_cast<long double>(y))),
                  1.0)
            << x << "^" << y;
      }
    }
  }
  // Overflow and underflow.
  EXPECT_EQ(dmath::Pow(2.0f, 128.0f), kInf);
  EXPECT_EQ(dmath::Pow(0.5f, 200.0f), 0.0f);
  EXPECT_EQ(dmath::Pow(2.0f, -149.0f),
            std::numeric_limits<float>::denorm_min());
  EXPECT_EQ(dmath::Pow(2.0f, 127.0f), 0x1p127f);
  EXPECT_EQ(dmath::Pow(1e-30f, 0.7f), std::pow(1e-30f, 0.7f));
}

TEST(DeterministicMathTest, SinCosDegreesWithinFewUlp) {
  Lcg rng;
  double max_ulp = 0.0;
  auto check = [&](double degrees) {
    const dmath::SinCosD got = dmath::SinCosDegrees(degrees);
    const long double r =
        std::remainder(static_cast<long double>(degrees), 360.0L) *
        (3.14159265358979323846264338327950288L / 180.0L);
    const long double want[2] = {std::sin(r), std::cos(r)};
    const double have[2] = {got.sin, got.cos};
    for (int k = 0; k < 2; ++k) {
      // Ulps of the double at the exact value's magnitude, absolute near
      // zeros (where the reference's own rounding of r dominates: sinl of
      // pi rounded to long double is 5e-20, not 0).
      const long double mag = std::max(std::fabs(want[k]), 0x1p-10L);
      int e = 0;
      std::frexp(mag, &e);
      const double ulp = static_cast<double>(
          std::fabs(static_cast<long double>(have[k]) - want[k]) /
          std::ldexp(1.0L, e - 53));
      max_ulp = std::max(max_ulp, ulp);
    }
  };
  for (int i = -720000; i <= 720000; ++i) check(i * 0.001);
  for (int i = 0; i < 200000; ++i) {
    check(static_cast<double>(rng.Uniform(-1e6f, 1e6f)));
  }
  EXPECT_LT(max_ulp, 4.0);
  std::printf("SinCosDegrees: max %.3f ulp (double)\n", max_ulp);
  const dmath::SinCosD right = dmath::SinCosDegrees(90.0);
  EXPECT_EQ(right.sin, 1.0);
  EXPECT_EQ(right.cos, 0.0);
  EXPECT_EQ(dmath::SinCosDegrees(180.0).sin, 0.0);
  EXPECT_EQ(dmath::SinCosDegrees(-360.0 * 1e20).cos, 1.0);
  EXPECT_TRUE(std::isnan(dmath::SinCosDegrees(kInf).sin));
  EXPECT_TRUE(std::isnan(dmath::SinCosDegrees(kNan).cos));
}

TEST(DeterministicMathTest, Atan2WithinFewUlp) {
  Lcg rng;
  double max_ulp = 0.0;
  auto check = [&](double y, double x) {
    const long double want =
        std::atan2(static_cast<long double>(y), static_cast<long double>(x));
    const long double mag = std::max(std::fabs(want), 0x1p-1000L);
    int e = 0;
    std::frexp(mag, &e);
    const double ulp = static_cast<double>(
        std::fabs(static_cast<long double>(dmath::Atan2(y, x)) - want) /
        std::ldexp(1.0L, e - 53));
    max_ulp = std::max(max_ulp, ulp);
  };
  // Rotation-matrix entries (the BVH writer's inputs) and wide magnitudes,
  // every quadrant, ratios near each eighth of the reduction.
  for (int i = 0; i < 400000; ++i) {
    const double y = static_cast<double>(rng.Uniform(-1.0f, 1.0f));
    const double x = static_cast<double>(rng.Uniform(-1.0f, 1.0f));
    check(y, x);
    check(std::ldexp(y, i % 200 - 100), std::ldexp(x, (i / 7) % 200 - 100));
  }
  for (int k = 0; k <= 64; ++k) {
    for (int d = -3; d <= 3; ++d) {
      const double t = std::nextafter(k / 64.0, d < 0 ? 0.0 : 2.0);
      check(t, 1.0);
      check(1.0, -t);
      check(-t * (1.0 + d * 1e-9), -1.0);
    }
  }
  EXPECT_LT(max_ulp, 4.0);
  std::printf("Atan2: max %.3f ulp (double)\n", max_ulp);

  const double pi = 3.141592653589793;
  EXPECT_EQ(dmath::Atan2(0.0, 1.0), 0.0);
  EXPECT_TRUE(std::signbit(dmath::Atan2(-0.0, 1.0)));
  EXPECT_EQ(dmath::Atan2(0.0, -0.0), pi);
  EXPECT_EQ(dmath::Atan2(-0.0, -1.0), -pi);
  EXPECT_EQ(dmath::Atan2(0.0, 0.0), 0.0);
  EXPECT_EQ(dmath::Atan2(2.0, 0.0), pi / 2);
  EXPECT_EQ(dmath::Atan2(-2.0, -0.0), -pi / 2);
  EXPECT_EQ(dmath::Atan2(1.0, 1.0), pi / 4);
  EXPECT_EQ(dmath::Atan2(kInf, kInf), pi / 4);
  EXPECT_EQ(dmath::Atan2(-kInf, -kInf), -3.0 * (pi / 4));
  EXPECT_EQ(dmath::Atan2(1.0, kInf), 0.0);
  EXPECT_EQ(dmath::Atan2(1.0, -kInf), pi);
  EXPECT_EQ(dmath::Atan2(-kInf, 5.0), -pi / 2);
  EXPECT_TRUE(std::isnan(dmath::Atan2(kNan, 1.0)));
  EXPECT_TRUE(std::isnan(dmath::Atan2(1.0, kNan)));
}

TEST(DeterministicMathTest, QuaternionFromAngleAxisMatchesEigen) {
  Lcg rng;
  for (int i = 0; i < 100000; ++i) {
    const float angle = rng.Uniform(-7.0f, 7.0f);
    const Eigen::Vector3f axis =
        Eigen::Vector3f(rng.Uniform(-1, 1), rng.Uniform(-1, 1),
                        rng.Uniform(-1, 1))
            .normalized();
    const Eigen::Quaternionf got = QuaternionFromAngleAxis(angle, axis);
    const Eigen::Quaternionf want(Eigen::AngleAxisf(angle, axis));
    for (int k = 0; k < 4; ++k) {
      // A couple of float ulps at 1 (sin and cos to 1 ulp, one product).
      ASSERT_NEAR(got.coeffs()[k], want.coeffs()[k], 2.5e-7f)
          << angle << " " << k;
    }
  }
  const Eigen::Quaternionf zero =
      QuaternionFromAngleAxis(0.0f, Eigen::Vector3f::UnitZ());
  EXPECT_EQ(zero.w(), 1.0f);
  EXPECT_EQ(zero.vec(), Eigen::Vector3f::Zero());
}

Eigen::Quaternionf RandomRotation(Lcg* rng) {
  Eigen::Vector4f v;
  do {
    for (int k = 0; k < 4; ++k) v[k] = rng->Uniform(-1.0f, 1.0f);
  } while (v.squaredNorm() < 1e-3f);
  return Eigen::Quaternionf(v.normalized());
}

TEST(DeterministicMathTest, SlerpMatchesEigen) {
  Lcg rng;
  for (int i = 0; i < 100000; ++i) {
    const Eigen::Quaternionf a = RandomRotation(&rng);
    Eigen::Quaternionf b = RandomRotation(&rng);
    switch (i % 4) {
      case 1:  // nearly parallel: the linear fallback and its edge
        b = Eigen::Quaternionf((a.coeffs() + 1e-4f * b.coeffs()).normalized());
        break;
      case 2:  // nearly opposite: the shortest path flips b
        b = Eigen::Quaternionf((-a.coeffs() + 3e-2f * b.coeffs()).normalized());
        break;
      default:
        break;
    }
    const float t = rng.Uniform(0.0f, 1.0f);
    const Eigen::Quaternionf got = Slerp(a, b, t);
    const Eigen::Quaternionf want = a.slerp(t, b);
    for (int k = 0; k < 4; ++k) {
      ASSERT_NEAR(got.coeffs()[k], want.coeffs()[k], 1e-6f)
          << i << " t=" << t << " k=" << k;
    }
  }
  // The ends and identical inputs.
  const Eigen::Quaternionf a = RandomRotation(&rng);
  const Eigen::Quaternionf b = RandomRotation(&rng);
  // Weights exactly (1, 0) at t = 0, as Eigen's.
  EXPECT_EQ(Slerp(a, b, 0.0f).coeffs(), a.coeffs());
  const dmath::SlerpWeights w0 = dmath::SlerpScales(0.7f, 0.0f);
  EXPECT_EQ(w0.from, 1.0f);
  EXPECT_EQ(w0.to, 0.0f);
  const dmath::SlerpWeights w1 = dmath::SlerpScales(0.7f, 1.0f);
  EXPECT_EQ(w1.from, 0.0f);
  EXPECT_EQ(w1.to, 1.0f);
  const Eigen::Quaternionf end = Slerp(a, b, 1.0f);
  EXPECT_TRUE(end.coeffs().isApprox(b.coeffs(), 1e-6f) ||
              end.coeffs().isApprox(-b.coeffs(), 1e-6f));
  EXPECT_EQ(Slerp(a, a, 0.3f).coeffs(),
            (0.7f * a.coeffs() + 0.3f * a.coeffs()));
}

}  // namespace deterministic_math_test
}  // namespace posewire
