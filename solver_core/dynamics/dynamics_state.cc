#include "solver_core/dynamics/dynamics_state.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "solver_core/model/internal/simd_lanes.h"
#include "solver_core/model/internal/simd_lanes_avx2.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/simd_level.h"

namespace posewire {
namespace {

constexpr char kMagic[4] = {'P', 'W', 'D', 'S'};
constexpr uint16_t kVersion = 1;
constexpr size_t kHeaderBytes = 72;
constexpr size_t kBytesPerParticle = 36;  // three Vector3f
// ValidateArray views a vector of Vector3f as one float array.
static_assert(sizeof(Eigen::Vector3f) == 3 * sizeof(float));

// Relative spread allowed between scale components before a scale counts as
// non-uniform.
constexpr float kUniformScaleTolerance = 1e-4f;

// Byte-wise little-endian writers and readers: the format must not depend on
// the host's endianness or on struct padding.
void PutU16(std::string* out, uint16_t v) {
  out->push_back(static_cast<char>(v & 0xff));
  out->push_back(static_cast<char>((v >> 8) & 0xff));
}

void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) {
    out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
}

void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) {
    out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
}

void PutF32(std::string* out, float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  PutU32(out, bits);
}

void PutVec3(std::string* out, const Eigen::Vector3f& v) {
  PutF32(out, v.x());
  PutF32(out, v.y());
  PutF32(out, v.z());
}

class Reader {
 public:
  explicit Reader(absl::string_view bytes) : bytes_(bytes) {}

  uint64_t Uint(int width) {
    uint64_t v = 0;
    for (int i = 0; i < width; ++i) {
      v |= static_cast<uint64_t>(static_cast<unsigned char>(bytes_[pos_ + i]))
           << (8 * i);
    }
    pos_ += width;
    return v;
  }

  float F32() {
    const uint32_t bits = static_cast<uint32_t>(Uint(4));
    float f;
    std::memcpy(&f, &bits, sizeof(f));
    return f;
  }

  Eigen::Vector3f Vec3() {
    const float x = F32();
    const float y = F32();
    const float z = F32();
    return Eigen::Vector3f(x, y, z);
  }

 private:
  absl::string_view bytes_;
  size_t pos_ = 0;
};

#if POSEWIRE_AVX2_KERNELS
// ValidateArray's scan eight floats at a time, for CPUs with AVX2 (compiled
// for it alone; the file is built for baseline x86-64): the floats from
// `k` on, in steps of 32, while they last; returns where it stopped, and
// in `bad` non-zero when an exponent was all ones.
POSEWIRE_AVX2_FUNCTION size_t ScanAvx2(const float* floats, size_t count,
                                       uint32_t* bad) {
  namespace L8 = lanes_avx2;
  L8::M8 found = L8::NoLanes();
  size_t k = 0;
  for (; k + 32 <= count; k += 32) {
    const float* p = floats + k;
    found =
        found |
        ((L8::NotFinite(L8::LoadU(p)) | L8::NotFinite(L8::LoadU(p + 8))) |
         (L8::NotFinite(L8::LoadU(p + 16)) | L8::NotFinite(L8::LoadU(p + 24))));
  }
  *bad |= static_cast<uint32_t>(L8::Bits(found));
  return k;
}
#endif

absl::Status ValidateArray(const std::vector<Eigen::Vector3f>& values,
                           absl::string_view field) {
  // One pass over the bit patterns (a float is NaN or infinite exactly when
  // its exponent bits are all ones); the per-particle loop below only runs
  // to name the culprit.
  const size_t count = 3 * values.size();
  const float* floats = values.empty() ? nullptr : values[0].data();
  uint32_t bad = 0;
  size_t k = 0;
#if POSEWIRE_AVX2_KERNELS
  if (count >= 32 && ActiveSimdLevel() == SimdLevel::kAvx2) {
    k = ScanAvx2(floats, count, &bad);
  }
#endif
#if defined(__SSE2__)
  // Four floats at a time (GCC does not vectorise the loop below): this
  // runs on every particle of every solve.
  lanes::M4 found = lanes::NoLanes();
  for (; k + 16 <= count; k += 16) {
    const float* p = floats + k;
    found = found | ((lanes::NotFinite(lanes::LoadU(p)) |
                      lanes::NotFinite(lanes::LoadU(p + 4))) |
                     (lanes::NotFinite(lanes::LoadU(p + 8)) |
                      lanes::NotFinite(lanes::LoadU(p + 12))));
  }
  for (; k + 4 <= count; k += 4) {
    found = found | lanes::NotFinite(lanes::LoadU(floats + k));
  }
  bad |= static_cast<uint32_t>(lanes::Bits(found));
#endif
  for (; k < count; ++k) {
    uint32_t bits;
    std::memcpy(&bits, floats + k, sizeof(bits));
    // Exponent all ones carries into the top bit.
    bad |= ((bits & 0x7f800000u) + 0x00800000u) >> 31;
  }
  if (bad == 0) return absl::OkStatus();
  for (size_t i = 0; i < values.size(); ++i) {
    if (!values[i].allFinite()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "dynamics_state.", field, "[", i, "]: NaN or infinite component"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

const char* SimulationSpaceName(SimulationSpace space) {
  switch (space) {
    case SimulationSpace::kComponent:
      return "component";
    case SimulationSpace::kWorld:
      return "world";
  }
  return "unknown";
}

void DynamicsState::Reset() {
  rig_fingerprint = 0;
  space = SimulationSpace::kComponent;
  step_count = 0;
  leftover_time = 0.0f;
  previous_component = Transform::Identity();
  positions.clear();
  previous_positions.clear();
  previous_pose_positions.clear();
}

bool operator==(const DynamicsState& a, const DynamicsState& b) {
  return a.rig_fingerprint == b.rig_fingerprint && a.space == b.space &&
         a.step_count == b.step_count && a.leftover_time == b.leftover_time &&
         a.previous_component == b.previous_component &&
         a.positions == b.positions &&
         a.previous_positions == b.previous_positions &&
         a.previous_pose_positions == b.previous_pose_positions;
}

absl::Status ValidateComponentTransform(const Transform& t,
                                        absl::string_view field) {
  if (absl::Status s = ValidateTransform(t, field, 0, "component"); !s.ok()) {
    return s;
  }
  const Eigen::Vector3f a = t.scale.cwiseAbs();
  const float largest = a.maxCoeff();
  if (!(a.minCoeff() > 0.0f)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": scale has a zero component"));
  }
  const bool same_sign =
      (t.scale.array() > 0.0f).all() || (t.scale.array() < 0.0f).all();
  if (largest - a.minCoeff() > kUniformScaleTolerance * largest || !same_sign) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": scale (", t.scale.x(), ", ", t.scale.y(), ", ", t.scale.z(),
        ") is not uniform; spring-bone dynamics needs one "
        "scale factor for distances and radii"));
  }
  return absl::OkStatus();
}

absl::Status ValidateDynamicsState(const DynamicsState& state) {
  const size_t n = state.positions.size();
  if (state.previous_positions.size() != n ||
      state.previous_pose_positions.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dynamics_state: ", n, " positions but ",
        state.previous_positions.size(), " previous positions and ",
        state.previous_pose_positions.size(), " previous pose positions"));
  }
  if (n > kMaxDynamicsParticles) {
    return absl::InvalidArgumentError(
        absl::StrCat("dynamics_state: ", n, " particles exceed the maximum of ",
                     kMaxDynamicsParticles));
  }
  if (state.space != SimulationSpace::kComponent &&
      state.space != SimulationSpace::kWorld) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dynamics_state.space: unknown value ", static_cast<int>(state.space)));
  }
  if (!std::isfinite(state.leftover_time) || state.leftover_time < 0.0f) {
    return absl::InvalidArgumentError(
        absl::StrCat("dynamics_state.leftover_time: ", state.leftover_time,
                     " is not a finite non-negative number of seconds"));
  }
  if (absl::Status s = ValidateComponentTransform(
          state.previous_component, "dynamics_state.previous_component");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ValidateArray(state.positions, "positions"); !s.ok()) {
    return s;
  }
  if (absl::Status s =
          ValidateArray(state.previous_positions, "previous_positions");
      !s.ok()) {
    return s;
  }
  return ValidateArray(state.previous_pose_positions,
                       "previous_pose_positions");
}

std::string SerializeDynamicsState(const DynamicsState& state) {
  const size_t n = state.positions.size();
  std::string out;
  out.reserve(kHeaderBytes + kBytesPerParticle * n);
  out.append(kMagic, sizeof(kMagic));
  PutU16(&out, kVersion);
  out.push_back(static_cast<char>(state.space));
  out.push_back(0);  // flags
  PutU32(&out, static_cast<uint32_t>(n));
  PutU64(&out, state.rig_fingerprint);
  PutU64(&out, state.step_count);
  PutF32(&out, state.leftover_time);
  const Transform& c = state.previous_component;
  PutVec3(&out, c.translation);
  PutF32(&out, c.rotation.x());
  PutF32(&out, c.rotation.y());
  PutF32(&out, c.rotation.z());
  PutF32(&out, c.rotation.w());
  PutVec3(&out, c.scale);
  // Arrays of unequal length cannot be represented; Validate rejects such a
  // state, and here the shorter arrays are padded with zeros rather than
  // read out of bounds.
  for (const std::vector<Eigen::Vector3f>* array :
       {&state.positions, &state.previous_positions,
        &state.previous_pose_positions}) {
    for (size_t i = 0; i < n; ++i) {
      PutVec3(&out, i < array->size() ? (*array)[i] : Eigen::Vector3f::Zero());
    }
  }
  return out;
}

absl::StatusOr<DynamicsState> ParseDynamicsState(absl::string_view bytes) {
  if (bytes.size() < kHeaderBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dynamics_state: ", bytes.size(), " bytes is shorter than the ",
        kHeaderBytes, "-byte header"));
  }
  if (std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return absl::InvalidArgumentError(
        "dynamics_state: bad magic (not a serialised DynamicsState)");
  }
  Reader r(bytes.substr(4));
  const uint16_t version = static_cast<uint16_t>(r.Uint(2));
  if (version != kVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat("dynamics_state: unsupported version ", version,
                     " (this build reads version ", kVersion, ")"));
  }
  const uint8_t space = static_cast<uint8_t>(r.Uint(1));
  const uint8_t flags = static_cast<uint8_t>(r.Uint(1));
  if (space > static_cast<uint8_t>(SimulationSpace::kWorld)) {
    return absl::InvalidArgumentError(
        absl::StrCat("dynamics_state.space: unknown value ", space));
  }
  if (flags != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("dynamics_state: unknown flags ", flags));
  }
  const uint32_t n = static_cast<uint32_t>(r.Uint(4));
  if (n > kMaxDynamicsParticles) {
    return absl::InvalidArgumentError(
        absl::StrCat("dynamics_state: ", n, " particles exceed the maximum of ",
                     kMaxDynamicsParticles));
  }
  // 64-bit arithmetic: n is bounded above, so this cannot overflow.
  const uint64_t expected =
      kHeaderBytes + static_cast<uint64_t>(kBytesPerParticle) * n;
  if (bytes.size() != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat("dynamics_state: ", bytes.size(), " bytes for ", n,
                     " particles; expected ", expected));
  }
  DynamicsState state;
  state.space = static_cast<SimulationSpace>(space);
  state.rig_fingerprint = r.Uint(8);
  state.step_count = r.Uint(8);
  state.leftover_time = r.F32();
  Transform& c = state.previous_component;
  c.translation = r.Vec3();
  const float qx = r.F32();
  const float qy = r.F32();
  const float qz = r.F32();
  const float qw = r.F32();
  c.rotation = Eigen::Quaternionf(qw, qx, qy, qz);
  c.scale = r.Vec3();
  for (std::vector<Eigen::Vector3f>* array :
       {&state.positions, &state.previous_positions,
        &state.previous_pose_positions}) {
    array->resize(n);
    for (uint32_t i = 0; i < n; ++i) (*array)[i] = r.Vec3();
  }
  if (absl::Status s = ValidateDynamicsState(state); !s.ok()) return s;
  return state;
}

}  // namespace posewire
