// Transform: composition, inversion and matrix form, checked against Eigen's
// own affine-matrix algebra (Eigen::Affine3f built from translation, rotation
// and scaling in the test), never against Transform's own output.

#include "solver_core/model/transform.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

namespace posewire {
namespace transform_test {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Seeded generator producing the same floats on every standard library:
// mt19937's output sequence is fixed by the standard, distributions are not.
class Rng {
 public:
  explicit Rng(uint32_t seed) : engine_(seed) {}

  float Uniform(float lo, float hi) {
    const float unit =
        static_cast<float>(engine_() >> 8) * (1.0f / 16777216.0f);
    return lo + (hi - lo) * unit;
  }

  Eigen::Vector3f Vector(float lo, float hi) {
    const float x = Uniform(lo, hi);
    const float y = Uniform(lo, hi);
    const float z = Uniform(lo, hi);
    return Eigen::Vector3f(x, y, z);
  }

  // A unit quaternion from a rejection-sampled point in the 4-ball.
  Eigen::Quaternionf Rotation() {
    while (true) {
      const float w = Uniform(-1, 1);
      const float x = Uniform(-1, 1);
      const float y = Uniform(-1, 1);
      const float z = Uniform(-1, 1);
      Eigen::Quaternionf q(w, x, y, z);
      const float n = q.norm();
      if (n > 0.2f && n <= 1.0f) return q.normalized();
    }
  }

  Transform UniformScaleTransform() {
    Transform t;
    t.translation = Vector(-3, 3);
    t.rotation = Rotation();
    t.scale = Eigen::Vector3f::Constant(Uniform(0.25f, 3.0f));
    return t;
  }

  Transform NonUniformScaleTransform() {
    Transform t;
    t.translation = Vector(-3, 3);
    t.rotation = Rotation();
    // Mixed signs too: mirrored joints are legitimate rig input.
    for (int i = 0; i < 3; ++i) {
      float s = Uniform(0.25f, 3.0f);
      if (Uniform(0, 1) < 0.2f) s = -s;
      t.scale[i] = s;
    }
    return t;
  }

 private:
  std::mt19937 engine_;
};

// T * R * S built by Eigen's geometry module, independently of ToMatrix.
Eigen::Matrix4f ReferenceMatrix(const Transform& t) {
  Eigen::Affine3f a = Eigen::Translation3f(t.translation) * t.rotation *
                      Eigen::Scaling(t.scale);
  return a.matrix();
}

float MaxAbsDiff(const Eigen::Matrix4f& a, const Eigen::Matrix4f& b) {
  return (a - b).cwiseAbs().maxCoeff();
}

// Rotations are compared up to the double cover (q and -q are the same
// rotation).
float QuaternionDistance(const Eigen::Quaternionf& a,
                         const Eigen::Quaternionf& b) {
  const float same = (a.coeffs() - b.coeffs()).cwiseAbs().maxCoeff();
  const float flipped = (a.coeffs() + b.coeffs()).cwiseAbs().maxCoeff();
  return std::min(same, flipped);
}

TEST(Transform, ToMatrixOfHandBuiltTransformHasKnownEntries) {
  Transform t;
  t.translation = Eigen::Vector3f(1, 2, 3);
  // 90 degrees about +Z: x -> y, y -> -x.
  t.rotation = Eigen::Quaternionf(std::sqrt(0.5f), 0, 0, std::sqrt(0.5f));
  t.scale = Eigen::Vector3f(2, 3, 4);
  Eigen::Matrix4f expected;
  // Columns are R * (scale_i * e_i): e_x*2 -> (0,2,0), e_y*3 -> (-3,0,0).
  expected << 0, -3, 0, 1,  //
      2, 0, 0, 2,           //
      0, 0, 4, 3,           //
      0, 0, 0, 1;
  EXPECT_LT(MaxAbsDiff(t.ToMatrix(), expected), 1e-6f) << t.ToMatrix();
}

TEST(Transform, ToMatrixMatchesEigenAffineOnRandomTransforms) {
  Rng rng(101);
  for (int i = 0; i < 200; ++i) {
    const Transform t = rng.NonUniformScaleTransform();
    EXPECT_LT(MaxAbsDiff(t.ToMatrix(), ReferenceMatrix(t)), 1e-5f) << i;
  }
}

TEST(Transform, IdentityIsTheIdentityMatrix) {
  EXPECT_EQ(Transform::Identity().ToMatrix(), Eigen::Matrix4f::Identity());
  EXPECT_EQ(Transform::Identity(), Transform());
}

TEST(Transform, CombineMatchesMatrixProductUnderUniformScale) {
  Rng rng(7);
  for (int i = 0; i < 500; ++i) {
    const Transform parent = rng.UniformScaleTransform();
    const Transform child = rng.UniformScaleTransform();
    const Eigen::Matrix4f expected =
        ReferenceMatrix(parent) * ReferenceMatrix(child);
    const Transform combined = Combine(parent, child);
    EXPECT_LT(MaxAbsDiff(ReferenceMatrix(combined), expected), 5e-5f)
        << "sample " << i;
  }
}

// With a uniformly scaled parent, a non-uniform child scale still composes
// without shear, so TRS composition equals the matrix product exactly.
TEST(Transform, CombineMatchesMatrixProductWhenOnlyChildScaleIsNonUniform) {
  Rng rng(8);
  for (int i = 0; i < 500; ++i) {
    const Transform parent = rng.UniformScaleTransform();
    const Transform child = rng.NonUniformScaleTransform();
    const Eigen::Matrix4f expected =
        ReferenceMatrix(parent) * ReferenceMatrix(child);
    EXPECT_LT(MaxAbsDiff(ReferenceMatrix(Combine(parent, child)), expected),
              5e-5f)
        << "sample " << i;
  }
}

// Even where TRS cannot represent the sheared matrix product (non-uniform
// parent scale), the child's origin must land where the matrix puts it.
TEST(Transform, CombinePlacesChildOriginLikeMatrixProductUnderAnyScale) {
  Rng rng(9);
  for (int i = 0; i < 500; ++i) {
    const Transform parent = rng.NonUniformScaleTransform();
    const Transform child = rng.NonUniformScaleTransform();
    const Eigen::Vector4f expected =
        (ReferenceMatrix(parent) * ReferenceMatrix(child)).col(3);
    const Eigen::Vector3f got = Combine(parent, child).translation;
    EXPECT_LT((got - expected.head<3>()).cwiseAbs().maxCoeff(), 5e-5f)
        << "sample " << i;
    EXPECT_FLOAT_EQ(expected.w(), 1.0f);
  }
}

TEST(Transform, CombineWithIdentityParentReturnsChildBitForBit) {
  Rng rng(10);
  for (int i = 0; i < 100; ++i) {
    const Transform child = rng.NonUniformScaleTransform();
    EXPECT_EQ(Combine(Transform::Identity(), child), child) << i;
  }
}

// Combine's documented scalar formula, spelt out here independently: the
// Hamilton product as (pw qw - px qx) - (py qy + pz qz) and so on, and the
// rotation of v as (v + w uv) + q.vec x uv with uv = 2 q.vec x v. The SSE
// kernel must give exactly these bits, so that builds with and without SSE
// (and every machine) agree.
Transform ScalarCombine(const Transform& p, const Transform& c) {
  const float px = p.rotation.x(), py = p.rotation.y(), pz = p.rotation.z(),
              pw = p.rotation.w();
  const float qx = c.rotation.x(), qy = c.rotation.y(), qz = c.rotation.z(),
              qw = c.rotation.w();
  Transform out;
  out.rotation.w() = (pw * qw - px * qx) - (py * qy + pz * qz);
  out.rotation.x() = (pw * qx + px * qw) + (py * qz - pz * qy);
  out.rotation.y() = (pw * qy - px * qz) + (py * qw + pz * qx);
  out.rotation.z() = (pw * qz + px * qy) + (pz * qw - py * qx);
  const float vx = p.scale.x() * c.translation.x();
  const float vy = p.scale.y() * c.translation.y();
  const float vz = p.scale.z() * c.translation.z();
  float ux = py * vz - pz * vy, uy = pz * vx - px * vz, uz = px * vy - py * vx;
  ux = ux + ux;
  uy = uy + uy;
  uz = uz + uz;
  const float cx = py * uz - pz * uy, cy = pz * ux - px * uz,
              cz = px * uy - py * ux;
  out.translation.x() = p.translation.x() + ((vx + ux * pw) + cx);
  out.translation.y() = p.translation.y() + ((vy + uy * pw) + cy);
  out.translation.z() = p.translation.z() + ((vz + uz * pw) + cz);
  out.scale =
      Eigen::Vector3f(p.scale.x() * c.scale.x(), p.scale.y() * c.scale.y(),
                      p.scale.z() * c.scale.z());
  return out;
}

bool SameBits(const Transform& a, const Transform& b) {
  return std::memcmp(a.translation.data(), b.translation.data(), 12) == 0 &&
         std::memcmp(a.rotation.coeffs().data(), b.rotation.coeffs().data(),
                     16) == 0 &&
         std::memcmp(a.scale.data(), b.scale.data(), 12) == 0;
}

TEST(Transform, CombineGivesTheBitsOfItsDocumentedScalarFormula) {
  Rng rng(41);
  for (int i = 0; i < 2000; ++i) {
    const Transform parent = rng.NonUniformScaleTransform();
    const Transform child = rng.NonUniformScaleTransform();
    EXPECT_TRUE(SameBits(Combine(parent, child), ScalarCombine(parent, child)))
        << i;
  }
}

TEST(Transform, CombineIgnoresWhatThePaddingHolds) {
  Rng rng(43);
  for (int i = 0; i < 200; ++i) {
    const Transform parent = rng.NonUniformScaleTransform();
    const Transform child = rng.NonUniformScaleTransform();
    const Transform clean = Combine(parent, child);
    Transform dirty_parent = parent, dirty_child = child;
    for (Transform* t : {&dirty_parent, &dirty_child}) {
      // Bytes 12..15 and 44..47 of a Transform are padding.
      float* f = reinterpret_cast<float*>(t);
      f[3] = i % 2 == 0 ? kNaN : 1e-42f;  // NaN or a denormal
      f[11] = -kInf;
    }
    const Transform dirty = Combine(dirty_parent, dirty_child);
    EXPECT_TRUE(SameBits(dirty, clean)) << i;
    EXPECT_TRUE(IsFinite(dirty)) << i;
  }
}

TEST(Transform, CombineToMayWriteOverEitherInput) {
  Rng rng(47);
  for (int i = 0; i < 100; ++i) {
    const Transform parent = rng.NonUniformScaleTransform();
    const Transform child = rng.NonUniformScaleTransform();
    const Transform expected = ScalarCombine(parent, child);
    Transform a = parent;
    CombineTo(a, child, &a);
    EXPECT_TRUE(SameBits(a, expected)) << i;
    Transform b = child;
    CombineTo(parent, b, &b);
    EXPECT_TRUE(SameBits(b, expected)) << i;
  }
}

TEST(Transform, TransformPointMatchesAffineMatrix) {
  Rng rng(11);
  for (int i = 0; i < 300; ++i) {
    const Transform t = rng.NonUniformScaleTransform();
    const Eigen::Vector3f p = rng.Vector(-5, 5);
    const Eigen::Vector4f expected =
        ReferenceMatrix(t) * Eigen::Vector4f(p.x(), p.y(), p.z(), 1.0f);
    EXPECT_LT((t.TransformPoint(p) - expected.head<3>()).cwiseAbs().maxCoeff(),
              1e-5f)
        << i;
    const Eigen::Vector4f expected_dir =
        ReferenceMatrix(t) * Eigen::Vector4f(p.x(), p.y(), p.z(), 0.0f);
    EXPECT_LT(
        (t.TransformVector(p) - expected_dir.head<3>()).cwiseAbs().maxCoeff(),
        1e-5f)
        << i;
  }
}

TEST(Transform, InverseTransformPointMatchesInverseMatrix) {
  Rng rng(12);
  for (int i = 0; i < 300; ++i) {
    const Transform t = rng.NonUniformScaleTransform();
    const Eigen::Vector3f p = rng.Vector(-5, 5);
    const Eigen::Vector4f expected = ReferenceMatrix(t).inverse() *
                                     Eigen::Vector4f(p.x(), p.y(), p.z(), 1.0f);
    EXPECT_LT(
        (t.InverseTransformPoint(p) - expected.head<3>()).cwiseAbs().maxCoeff(),
        1e-4f)
        << i;
  }
}

TEST(Transform, InverseTransformPointUndoesTransformPoint) {
  Rng rng(13);
  for (int i = 0; i < 1000; ++i) {
    const Transform t = rng.NonUniformScaleTransform();
    const Eigen::Vector3f p = rng.Vector(-5, 5);
    // Bounds from the rounding of each step: subtracting the translation
    // loses bits relative to the larger operand, and undoing a small scale
    // magnifies that loss.
    const float t_norm = t.translation.norm();
    const float min_scale = t.scale.cwiseAbs().minCoeff();
    const Eigen::Vector3f there = t.TransformPoint(p);
    const Eigen::Vector3f there_and_back = t.InverseTransformPoint(there);
    EXPECT_LT((there_and_back - p).cwiseAbs().maxCoeff(),
              2e-6f * (1.0f + (there.norm() + t_norm) / min_scale))
        << i;
    const Eigen::Vector3f back_and_there =
        t.TransformPoint(t.InverseTransformPoint(p));
    EXPECT_LT((back_and_there - p).cwiseAbs().maxCoeff(),
              2e-6f * (1.0f + p.norm() + t_norm))
        << i;
  }
}

TEST(Transform, LocalFromModelInvertsCombineUnderUniformScale) {
  Rng rng(14);
  for (int i = 0; i < 1000; ++i) {
    const Transform parent = rng.UniformScaleTransform();
    const Transform local = rng.UniformScaleTransform();
    const Transform back = LocalFromModel(parent, Combine(parent, local));
    EXPECT_LT((back.translation - local.translation).cwiseAbs().maxCoeff(),
              1e-5f)
        << i;
    EXPECT_LT(QuaternionDistance(back.rotation, local.rotation), 1e-6f) << i;
    EXPECT_LT((back.scale - local.scale).cwiseAbs().maxCoeff(), 1e-6f) << i;
  }
}

TEST(Transform, LocalFromModelInvertsCombineUnderNonUniformScale) {
  Rng rng(15);
  for (int i = 0; i < 1000; ++i) {
    const Transform parent = rng.NonUniformScaleTransform();
    const Transform local = rng.NonUniformScaleTransform();
    const Transform back = LocalFromModel(parent, Combine(parent, local));
    EXPECT_LT((back.translation - local.translation).cwiseAbs().maxCoeff(),
              1e-5f)
        << i;
    EXPECT_LT(QuaternionDistance(back.rotation, local.rotation), 1e-6f) << i;
    EXPECT_LT((back.scale - local.scale).cwiseAbs().maxCoeff(), 1e-6f) << i;
  }
}

TEST(Transform, CombineInvertsLocalFromModel) {
  Rng rng(16);
  for (int i = 0; i < 1000; ++i) {
    const Transform parent = rng.NonUniformScaleTransform();
    const Transform model = rng.NonUniformScaleTransform();
    const Transform again = Combine(parent, LocalFromModel(parent, model));
    EXPECT_LT((again.translation - model.translation).cwiseAbs().maxCoeff(),
              1e-5f)
        << i;
    EXPECT_LT(QuaternionDistance(again.rotation, model.rotation), 1e-6f) << i;
    EXPECT_LT((again.scale - model.scale).cwiseAbs().maxCoeff(), 1e-6f) << i;
  }
}

// The local transform of a uniformly scaled model must equal the one read
// off the matrix inverse(parent) * model, computed by Eigen.
TEST(Transform, LocalFromModelMatchesInverseMatrixProduct) {
  Rng rng(17);
  for (int i = 0; i < 300; ++i) {
    const Transform parent = rng.UniformScaleTransform();
    const Transform model = rng.UniformScaleTransform();
    const Eigen::Matrix4f expected =
        ReferenceMatrix(parent).inverse() * ReferenceMatrix(model);
    EXPECT_LT(
        MaxAbsDiff(ReferenceMatrix(LocalFromModel(parent, model)), expected),
        1e-4f)
        << i;
  }
}

TEST(Transform, CombineIsDeterministic) {
  Rng rng(18);
  const Transform a = rng.NonUniformScaleTransform();
  const Transform b = rng.NonUniformScaleTransform();
  const Transform first = Combine(a, b);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(Combine(a, b), first);
}

TEST(Transform, IsFiniteAcceptsFiniteTransforms) {
  EXPECT_TRUE(IsFinite(Transform::Identity()));
  Transform big;
  big.translation = Eigen::Vector3f::Constant(3e38f);
  big.scale = Eigen::Vector3f::Constant(-3e38f);
  EXPECT_TRUE(IsFinite(big));
  // IsFinite says nothing about unit norm: that is ValidateTransform's job.
  Transform zero_rotation;
  zero_rotation.rotation.coeffs().setZero();
  EXPECT_TRUE(IsFinite(zero_rotation));
}

TEST(Transform, IsFiniteRejectsNanOrInfInEveryComponent) {
  for (const float bad : {kNaN, kInf, -kInf}) {
    for (int i = 0; i < 3; ++i) {
      Transform t;
      t.translation[i] = bad;
      EXPECT_FALSE(IsFinite(t)) << "translation[" << i << "] = " << bad;
    }
    for (int i = 0; i < 4; ++i) {
      Transform t;
      t.rotation.coeffs()[i] = bad;
      EXPECT_FALSE(IsFinite(t)) << "rotation coeff " << i << " = " << bad;
    }
    for (int i = 0; i < 3; ++i) {
      Transform t;
      t.scale[i] = bad;
      EXPECT_FALSE(IsFinite(t)) << "scale[" << i << "] = " << bad;
    }
  }
}

TEST(Transform, EqualityComparesEveryComponent) {
  const Transform base;
  Transform t = base;
  t.translation.z() = 1e-7f;
  EXPECT_FALSE(t == base);
  t = base;
  t.rotation.coeffs()[0] = 1e-7f;
  EXPECT_FALSE(t == base);
  t = base;
  t.scale.y() = 1.0f + 1e-6f;
  EXPECT_FALSE(t == base);
}

}  // namespace transform_test
}  // namespace posewire
