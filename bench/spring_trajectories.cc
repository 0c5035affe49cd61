// posewire-spring-trajectories: records what the spring-bone solver does over
// many frames and compares two recordings, to tell how far a change to the
// solver moves its results and whether that is more than rounding would.
//
//   posewire-spring-trajectories record OUT [PERTURB_FRAME]
//       Runs 72 scenes of the benchmark rig (spring_scene.h) for 1500 frames
//       each and writes every frame's output rotations and particle
//       positions to OUT. The scenes cross component and world space, 8 and
//       16 chains, standing, walking a circle and running one 2.5 times as
//       fast, frames of 1/60, 1/144 and 1/30 s, and limits of 60 and 30
//       degrees; the 8-chain scenes at 1/144 s have gusty wind. With
//       PERTURB_FRAME, that frame's component x position is moved by one
//       unit in the last place: the recording then shows how far rounding
//       alone carries the trajectories apart.
//   posewire-spring-trajectories compare A B
//       Per frame, the largest angle between the same joint's output
//       rotations in A and B; prints how many frames differ by more than 1,
//       10 and 90 degrees, and the median, 99th percentile and largest. Also
//       prints in how many frames the particle positions differ in any bit:
//       none means the simulation is unchanged and only the output moved.
//   posewire-spring-trajectories smoothness A
//       Per frame, the largest turn of any joint since the frame before (a
//       flip or a jitter shows here); the same statistics.
//
// Recordings are raw native-endian floats, only for comparing two runs on
// one machine.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "bench/spring_scene.h"
#include "solver_core/dynamics/dynamics_state.h"
#include "solver_core/dynamics/spring_bones.h"

namespace posewire {
namespace {

constexpr int kFrames = 1500;
constexpr double kDegrees = 180.0 / 3.14159265358979323846;

struct Scenario {
  SimulationSpace space;
  int chains;
  float walk_speed;  // circles of radius 100 per 4 s
  float dt;
  float limit_degrees;
  bool windy;
};

std::vector<Scenario> Scenarios() {
  std::vector<Scenario> out;
  for (SimulationSpace space :
       {SimulationSpace::kComponent, SimulationSpace::kWorld}) {
    for (int chains : {8, 16}) {
      for (float speed : {1.0f, 0.0f, 2.5f}) {
        for (float dt : {1.0f / 60.0f, 1.0f / 144.0f, 1.0f / 30.0f}) {
          for (float limit : {60.0f, 30.0f}) {
            out.push_back({space, chains, speed, dt, limit,
                           chains == 8 && dt == 1.0f / 144.0f});
          }
        }
      }
    }
  }
  return out;
}

// A recording: per scenario a header (joints, particles, frames), then per
// frame the output rotations (x, y, z, w) and the particle positions.
int Record(const char* path, int perturb_frame) {
  FILE* out = std::fopen(path, "wb");
  if (out == nullptr) {
    std::fprintf(stderr, "cannot write %s\n", path);
    return 1;
  }
  for (const Scenario& sc : Scenarios()) {
    SpringScene s = MakeSpringScene(sc.space, sc.chains, sc.limit_degrees);
    if (sc.windy) {
      s.forces.wind.direction = Eigen::Vector3f(1.0f, 0.0f, 0.3f);
      s.forces.wind.speed = 200.0f;
      s.forces.wind.noise_amplitude = 0.5f;
      s.forces.wind.noise_frequency_hz = 1.3f;
    }
    DynamicsState state;
    SpringBonesScratch scratch;
    SpringBonesJob job = SceneJob(s, state, scratch, sc.dt);
    const int header[3] = {s.skeleton.num_joints(), s.rig.num_particles(),
                           kFrames};
    std::fwrite(header, sizeof(int), 3, out);
    double time = 0.0;
    for (int f = 0; f < kFrames; ++f) {
      time += sc.dt;
      const float a =
          sc.walk_speed * 2.0f * 3.14159265f * static_cast<float>(time) / 4.0f;
      job.component_to_world.translation =
          Eigen::Vector3f(100.0f * std::cos(a), 0.0f, 100.0f * std::sin(a));
      if (f == perturb_frame) {
        float& x = job.component_to_world.translation.x();
        x = std::nextafter(x, 1e9f);
      }
      job.component_to_world.rotation =
          Eigen::AngleAxisf(-a, Eigen::Vector3f::UnitY());
      if (absl::Status st = job.Run(); !st.ok()) {
        std::fprintf(stderr, "frame %d: %s\n", f, st.ToString().c_str());
        return 1;
      }
      for (const Transform& t : s.output) {
        std::fwrite(t.rotation.coeffs().data(), sizeof(float), 4, out);
      }
      for (const Eigen::Vector3f& p : state.positions) {
        std::fwrite(p.data(), sizeof(float), 3, out);
      }
    }
  }
  return std::fclose(out) == 0 ? 0 : 1;
}

// One frame of a recording.
struct Frame {
  std::vector<float> rotations;  // x y z w per joint
  std::vector<float> positions;
};

// A scenario's header: its joints, particles and frames.
struct Header {
  int joints = 0, particles = 0, frames = 0;
  bool operator==(const Header&) const = default;
};

class Reader {
 public:
  explicit Reader(const char* path)
      : path_(path), file_(std::fopen(path, "rb")) {
    if (file_ == nullptr) std::fprintf(stderr, "cannot read %s\n", path);
  }
  ~Reader() {
    if (file_ != nullptr) std::fclose(file_);
  }
  bool ok() const { return file_ != nullptr; }
  enum class Next { kScenario, kEnd, kBad };
  // The next scenario's header into `header`; kBad (with a message) for
  // sizes no recording has.
  Next NextScenario(Header* header) {
    int h[3];
    const size_t got = std::fread(h, sizeof(int), 3, file_);
    if (got == 0 && std::feof(file_)) return Next::kEnd;
    if (got != 3 || h[0] < 1 || h[0] > kMaxSkeletonJoints || h[1] < 0 ||
        h[1] > kMaxSkeletonJoints || h[2] < 0 || h[2] > kFrames) {
      std::fprintf(stderr, "%s: not a recording of this tool (bad header)\n",
                   path_);
      return Next::kBad;
    }
    *header = {h[0], h[1], h[2]};
    frame_.rotations.resize(4 * static_cast<size_t>(h[0]));
    frame_.positions.resize(3 * static_cast<size_t>(h[1]));
    return Next::kScenario;
  }
  const Frame* NextFrame() {
    const size_t r = frame_.rotations.size(), p = frame_.positions.size();
    if (std::fread(frame_.rotations.data(), sizeof(float), r, file_) != r ||
        std::fread(frame_.positions.data(), sizeof(float), p, file_) != p) {
      return nullptr;
    }
    return &frame_;
  }

 private:
  const char* path_;
  FILE* file_;
  Frame frame_;
};

// The angle between two rotations of one joint, in degrees; 0 when their
// bits agree.
double AngleDegrees(const float* a, const float* b) {
  if (std::memcmp(a, b, 4 * sizeof(float)) == 0) return 0.0;
  double dot = 0.0, aa = 0.0, bb = 0.0;
  for (int k = 0; k < 4; ++k) {
    dot += static_cast<double>(a[k]) * b[k];
    aa += static_cast<double>(a[k]) * a[k];
    bb += static_cast<double>(b[k]) * b[k];
  }
  return 2.0 * std::acos(std::min(1.0, std::fabs(dot) / std::sqrt(aa * bb))) *
         kDegrees;
}

double LargestAngle(const Frame& a, const Frame& b) {
  double largest = 0.0;
  for (size_t j = 0; j < a.rotations.size(); j += 4) {
    largest = std::max(largest, AngleDegrees(&a.rotations[j], &b.rotations[j]));
  }
  return largest;
}

void PrintSummary(const char* what, std::vector<double> per_frame) {
  if (per_frame.empty()) return;
  std::sort(per_frame.begin(), per_frame.end());
  auto over = [&](double limit) {
    return per_frame.end() -
           std::upper_bound(per_frame.begin(), per_frame.end(), limit);
  };
  auto at = [&](double q) {
    return per_frame[std::min(per_frame.size() - 1,
                              static_cast<size_t>(q * per_frame.size()))];
  };
  const double n = static_cast<double>(per_frame.size());
  std::printf(
      "%s, %zu frames: > 1 deg %ld (%.2f%%), > 10 deg %ld (%.2f%%), > 90 deg "
      "%ld; median %.4f, p99 %.2f, largest %.2f deg\n",
      what, per_frame.size(), static_cast<long>(over(1.0)),
      100.0 * over(1.0) / n, static_cast<long>(over(10.0)),
      100.0 * over(10.0) / n, static_cast<long>(over(90.0)), at(0.5), at(0.99),
      per_frame.back());
}

int Compare(const char* path_a, const char* path_b) {
  Reader a(path_a), b(path_b);
  if (!a.ok() || !b.ok()) return 1;
  std::vector<double> per_frame;
  long positions_differ = 0;
  Header ha, hb;
  for (;;) {
    const Reader::Next na = a.NextScenario(&ha);
    const Reader::Next nb = b.NextScenario(&hb);
    if (na == Reader::Next::kBad || nb == Reader::Next::kBad) return 1;
    if (na == Reader::Next::kEnd && nb == Reader::Next::kEnd) break;
    if (na != nb || !(ha == hb)) {
      std::fprintf(stderr, "the recordings hold different scenarios\n");
      return 1;
    }
    for (int f = 0; f < ha.frames; ++f) {
      const Frame* fa = a.NextFrame();
      const Frame* fb = b.NextFrame();
      if (fa == nullptr || fb == nullptr) {
        std::fprintf(stderr, "a recording is cut short\n");
        return 1;
      }
      per_frame.push_back(LargestAngle(*fa, *fb));
      if (std::memcmp(fa->positions.data(), fb->positions.data(),
                      fa->positions.size() * sizeof(float)) != 0) {
        ++positions_differ;
      }
    }
  }
  PrintSummary("largest joint rotation difference per frame", per_frame);
  std::printf("particle positions differ in some bit in %ld of %zu frames\n",
              positions_differ, per_frame.size());
  return 0;
}

int Smoothness(const char* path) {
  Reader r(path);
  if (!r.ok()) return 1;
  std::vector<double> per_frame;
  Header h;
  for (;;) {
    const Reader::Next next = r.NextScenario(&h);
    if (next == Reader::Next::kBad) return 1;
    if (next == Reader::Next::kEnd) break;
    Frame previous;
    for (int f = 0; f < h.frames; ++f) {
      const Frame* frame = r.NextFrame();
      if (frame == nullptr) {
        std::fprintf(stderr, "the recording is cut short\n");
        return 1;
      }
      // The first frames settle the chains from the rest pose.
      if (f >= 10) per_frame.push_back(LargestAngle(*frame, previous));
      previous = *frame;
    }
  }
  PrintSummary("largest joint turn since the frame before", per_frame);
  return 0;
}

int Usage() {
  std::fprintf(stderr,
               "usage: posewire-spring-trajectories record OUT "
               "[PERTURB_FRAME]\n"
               "       posewire-spring-trajectories compare A B\n"
               "       posewire-spring-trajectories smoothness A\n");
  return 2;
}

}  // namespace
}  // namespace posewire

int main(int argc, char** argv) {
  if (argc < 3) return posewire::Usage();
  const std::string command = argv[1];
  if (command == "record" && (argc == 3 || argc == 4)) {
    int perturb_frame = -1;
    if (argc == 4 &&
        (!absl::SimpleAtoi(argv[3], &perturb_frame) || perturb_frame < 0)) {
      std::fprintf(stderr, "PERTURB_FRAME: '%s' is not a frame number\n",
                   argv[3]);
      return 2;
    }
    return posewire::Record(argv[2], perturb_frame);
  }
  if (command == "compare" && argc == 4) {
    return posewire::Compare(argv[2], argv[3]);
  }
  if (command == "smoothness" && argc == 3)
    return posewire::Smoothness(argv[2]);
  return posewire::Usage();
}
