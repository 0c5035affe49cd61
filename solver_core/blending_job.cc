#include "solver_core/blending_job.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/strings/str_cat.h"
#include "solver_core/pose.h"
#include "solver_core/quaternion_math.h"

namespace posewire {
namespace {

// Relative weights above this are a caller bug and could overflow the
// per-joint sums (weight * joint weight * layers).
constexpr float kMaxBlendWeight = 1e6f;

constexpr float kLargestFloat = std::numeric_limits<float>::max();

// Layers held on the stack; more spill to the heap once per Run.
constexpr int kStackContributors = 16;

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
  for (size_t l = 0; l < layers.size(); ++l) {
    const BlendLayer& layer = layers[l];
    if (static_cast<int>(layer.transform.size()) != n) {
      return absl::InvalidArgumentError(absl::StrCat(
          "blending.layers[", l, "].transform: ", layer.transform.size(),
          " transforms for a skeleton of ", n, " joints"));
    }
    if (absl::Status s = CheckWeight(layer.weight, l, -1, *skeleton); !s.ok()) {
      return s;
    }
    if (!layer.joint_weights.empty()) {
      if (static_cast<int>(layer.joint_weights.size()) != n) {
        return absl::InvalidArgumentError(absl::StrCat(
            "blending.layers[", l, "].joint_weights: ",
            layer.joint_weights.size(), " weights for a skeleton of ", n,
            " joints (expected 0 or ", n, ")"));
      }
      // A branch-free scan first (NaN fails both comparisons), the
      // messages only when it fails.
      bool ok = true;
      for (const float w : layer.joint_weights) {
        ok &= (w <= kMaxBlendWeight) & (w >= -kLargestFloat);
      }
      for (int j = 0; !ok && j < n; ++j) {
        if (absl::Status s =
                CheckWeight(layer.joint_weights[j], l, j, *skeleton);
            !s.ok()) {
          return s;
        }
      }
    }
    if (layers_validated || PoseLooksValid(layer.transform)) continue;
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
  // for up to four joints waiting to be blended together.
  const size_t stride = num_layers + 1;
  float stack_weights[kStackContributors];
  Contributor stack_contributors[4 * (kStackContributors + 1)];
  std::vector<float> heap_weights;
  std::vector<Contributor> heap_contributors;
  float* weights = stack_weights;
  Contributor* contributors = stack_contributors;
  if (num_layers > static_cast<size_t>(kStackContributors)) {
    heap_weights.resize(num_layers);
    heap_contributors.resize(4 * stride);
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
  std::copy(weights, weights + num_layers, layer_weights);

  // Without masks every joint has the same weights: gather once.
  int count = 0;
  if (!masked) {
    count =
        GatherContributors(layers, weights, fallback, threshold, contributors);
  }
  // Fast path: same contributors everywhere, four joints at a time.
  if (!masked && blend_root < 0 && count >= 2) {
    int j = 0;
    for (; j + 4 <= n; j += 4) BlendFourJoints(contributors, count, j, out);
    for (; j < n; ++j) BlendJoint(contributors, count, j, out + j);
    return;
  }

  // General path: per-joint weights (masks) and/or a blend root. Joints that
  // blend wait in slots until four are ready.
  const Contributor* slot_c[4];
  int slot_count[4];
  int slot_joint[4];
  int slots = 0;
  for (int k = 0; k < 4; ++k) slot_c[k] = contributors + k * stride;
  for (int j = 0; j < n; ++j) {
    if (blend_root >= 0 && !skel.IsInSubtree(blend_root, j)) {
      if (out + j != fallback + j) out[j] = fallback[j];
      continue;
    }
    Contributor* c = contributors + slots * stride;
    int joint_count = count;
    if (masked) {
      for (size_t l = 0; l < num_layers; ++l) {
        const float* mask = layers[l].joint_weights.data();
        weights[l] = mask == nullptr ? layer_weights[l]
                                     : layer_weights[l] * Effective(mask[j]);
      }
      joint_count = GatherContributors(layers, weights, fallback, threshold, c);
    } else if (slots > 0) {
      std::copy(contributors, contributors + count, c);
    }
    if (joint_count == 1) {
      const Transform& only = c[0].pose[j];
      if (&only != out + j) out[j] = only;
      continue;
    }
    slot_count[slots] = joint_count;
    slot_joint[slots] = j;
    if (++slots == 4) {
      BlendFourJoints(slot_c, slot_count, slot_joint, out);
      slots = 0;
    }
  }
  for (int k = 0; k < slots; ++k) {
    BlendJoint(slot_c[k], slot_count[k], slot_joint[k], out + slot_joint[k]);
  }
}

}  // namespace posewire
