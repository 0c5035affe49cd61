#include "solver_core/io/bvh_writer.h"

#include <Eigen/Geometry>
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "solver_core/model/deterministic_math.h"

namespace posewire {
namespace {

// Indentation is capped so a deep chain (up to kMaxSkeletonJoints) does not
// make the file quadratic in its depth; readers ignore whitespace anyway.
constexpr int kMaxIndent = 32;

// Appends a float in the shortest form that reads back as the same float.
// std::to_chars is locale independent, unlike printf.
void AppendFloat(std::string* out, float value) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out->append(buffer, result.ptr);
}

// Angles are computed in double; 10 significant digits keep the rotation
// error far below float rounding of the positions.
void AppendAngle(std::string* out, double degrees) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), degrees,
                                    std::chars_format::general, 10);
  out->append(buffer, result.ptr);
}

void AppendIndent(std::string* out, int depth) {
  out->append(static_cast<size_t>(std::min(depth, kMaxIndent)), '\t');
}

void AppendVector(std::string* out, const Eigen::Vector3f& v) {
  for (int i = 0; i < 3; ++i) {
    if (i > 0) out->push_back(' ');
    AppendFloat(out, v[i]);
  }
}

// Z-Y-X Euler angles (degrees) of a unit rotation: R = Rz(z) * Ry(y) * Rx(x).
// From R's entries: R20 = -sin y, R21 = cos y sin x, R22 = cos y cos x,
// R10 = sin z cos y, R00 = cos z cos y. At gimbal lock (cos y = 0) only
// z - x (or z + x) is defined; x = 0 and z = atan2(-R01, R11) then gives
// the same rotation.
Eigen::Vector3d EulerZyxDegrees(const Eigen::Quaternionf& rotation) {
  const Eigen::Matrix3d r =
      rotation.cast<double>().normalized().toRotationMatrix();
  const double cos_y = std::hypot(r(0, 0), r(1, 0));
  const double y = dmath::Atan2(-r(2, 0), cos_y);
  double z = 0.0;
  double x = 0.0;
  if (cos_y > 1e-12) {
    z = dmath::Atan2(r(1, 0), r(0, 0));
    x = dmath::Atan2(r(2, 1), r(2, 2));
  } else {
    z = dmath::Atan2(-r(0, 1), r(1, 1));
  }
  constexpr double kDegrees = 180.0 / 3.14159265358979323846;
  return Eigen::Vector3d(z, y, x) * kDegrees;
}

bool IsNameBreaker(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
         c == '\f' || c == '{' || c == '}';
}

// Names as single BVH tokens, unique.
std::vector<std::string> BvhNames(const Skeleton& skeleton) {
  const int n = skeleton.num_joints();
  std::vector<std::string> names(n);
  absl::flat_hash_set<std::string> original(skeleton.joint_names().begin(),
                                            skeleton.joint_names().end());
  absl::flat_hash_set<std::string> used;
  for (int j = 0; j < n; ++j) {
    std::string name = skeleton.joint_name(j);
    const bool changed = std::any_of(name.begin(), name.end(), IsNameBreaker);
    std::replace_if(name.begin(), name.end(), IsNameBreaker, '_');
    // A renamed joint must not take an untouched joint's name either.
    if (used.contains(name) || (changed && original.contains(name))) {
      std::string unique = absl::StrCat(name, "_", j);
      while (used.contains(unique) || original.contains(unique)) {
        unique += "_";
      }
      name = std::move(unique);
    }
    used.insert(name);
    names[j] = std::move(name);
  }
  return names;
}

// Joint translations with each parent's accumulated scale baked in (see the
// header): out[j] = S_parent(j) (*) t_j, with S the component-wise product of
// the scales from the root down.
void BakeTranslations(const Skeleton& skeleton,
                      absl::Span<const Transform> pose,
                      std::vector<Eigen::Vector3f>& out) {
  const int n = skeleton.num_joints();
  std::vector<Eigen::Vector3f> model_scale(n);
  out.resize(n);
  for (int j = 0; j < n; ++j) {
    const int parent = skeleton.parent(j);
    if (parent == kNoParent) {
      out[j] = pose[j].translation;
      model_scale[j] = pose[j].scale;
    } else {
      out[j] = model_scale[parent].cwiseProduct(pose[j].translation);
      model_scale[j] = model_scale[parent].cwiseProduct(pose[j].scale);
    }
  }
}

absl::Status ValidateInputs(const Skeleton& skeleton,
                            absl::Span<const LocalPose> frames,
                            const BvhWriteOptions& options) {
  if (skeleton.num_joints() == 0) {
    return absl::InvalidArgumentError("bvh writer: the skeleton is empty");
  }
  if (!std::isfinite(options.frame_time) || !(options.frame_time > 0.0f)) {
    return absl::InvalidArgumentError(absl::StrCat("bvh writer: frame_time ",
                                                   options.frame_time,
                                                   " must be finite and > 0"));
  }
  if (!std::isfinite(options.translation_tolerance) ||
      options.translation_tolerance < 0.0f) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bvh writer: translation_tolerance ", options.translation_tolerance,
        " must be finite and >= 0"));
  }
  if (frames.empty()) {
    return absl::InvalidArgumentError(
        "bvh writer: frames: at least one pose is required (BVH has no "
        "empty motion)");
  }
  for (size_t f = 0; f < frames.size(); ++f) {
    if (absl::Status s =
            ValidatePose(skeleton, frames[f], absl::StrCat("frames[", f, "]"));
        !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("bvh writer: ", s.message()));
    }
  }
  for (size_t i = 0; i < options.end_sites.size(); ++i) {
    const EndSite& site = options.end_sites[i];
    if (site.joint < 0 || site.joint >= skeleton.num_joints()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "bvh writer: end_sites[", i, "].joint ", site.joint,
          " is not a joint of the ", skeleton.num_joints(), "-joint skeleton"));
    }
    if (!site.offset.allFinite()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "bvh writer: end_sites[", i, "].offset (below joint ", site.joint,
          " '", skeleton.joint_name(site.joint), "') is not finite"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> WriteBvh(const Skeleton& skeleton,
                                     absl::Span<const LocalPose> frames,
                                     const BvhWriteOptions& options) {
  if (absl::Status s = ValidateInputs(skeleton, frames, options); !s.ok()) {
    return s;
  }
  const int n = skeleton.num_joints();

  std::vector<Eigen::Vector3f> offsets;
  BakeTranslations(skeleton, skeleton.rest_pose(), offsets);
  std::vector<std::vector<Eigen::Vector3f>> translations(frames.size());
  std::vector<bool> has_position(n, false);
  for (size_t f = 0; f < frames.size(); ++f) {
    BakeTranslations(skeleton, frames[f], translations[f]);
    for (int j = 0; j < n; ++j) {
      const float difference =
          (translations[f][j] - offsets[j]).cwiseAbs().maxCoeff();
      if (skeleton.parent(j) == kNoParent ||
          difference > options.translation_tolerance) {
        has_position[j] = true;
      }
    }
  }

  std::vector<std::vector<const EndSite*>> sites(n);
  for (const EndSite& site : options.end_sites) {
    sites[site.joint].push_back(&site);
  }

  // HIERARCHY, depth-first with an explicit stack (no recursion: depth is
  // only bounded by the joint count). A negative entry -(j + 1) closes j.
  const std::vector<std::string> names = BvhNames(skeleton);
  std::string out = "HIERARCHY\n";
  std::vector<int> order;  // joints in file order: the MOTION column order
  order.reserve(n);
  std::vector<int> stack;
  for (int root = n - 1; root >= 0; --root) {
    if (skeleton.parent(root) == kNoParent) stack.push_back(root);
  }
  while (!stack.empty()) {
    const int entry = stack.back();
    stack.pop_back();
    if (entry < 0) {
      const int joint = -entry - 1;
      const int depth = skeleton.Depth(joint);
      for (const EndSite* site : sites[joint]) {
        AppendIndent(&out, depth);
        out += "End Site\n";
        AppendIndent(&out, depth);
        out += "{\n";
        AppendIndent(&out, depth + 1);
        out += "OFFSET ";
        AppendVector(&out, site->offset);
        out += "\n";
        AppendIndent(&out, depth);
        out += "}\n";
      }
      AppendIndent(&out, depth - 1);
      out += "}\n";
      continue;
    }
    const int joint = entry;
    order.push_back(joint);
    const int depth = skeleton.Depth(joint);
    AppendIndent(&out, depth - 1);
    absl::StrAppend(&out,
                    skeleton.parent(joint) == kNoParent ? "ROOT " : "JOINT ",
                    names[joint], "\n");
    AppendIndent(&out, depth - 1);
    out += "{\n";
    AppendIndent(&out, depth);
    out += "OFFSET ";
    AppendVector(&out, offsets[joint]);
    out += "\n";
    AppendIndent(&out, depth);
    out += has_position[joint]
               ? "CHANNELS 6 Xposition Yposition Zposition Zrotation "
                 "Yrotation Xrotation\n"
               : "CHANNELS 3 Zrotation Yrotation Xrotation\n";
    stack.push_back(-joint - 1);
    const absl::Span<const int> children = skeleton.children(joint);
    for (auto it = children.rbegin(); it != children.rend(); ++it) {
      stack.push_back(*it);
    }
  }

  absl::StrAppend(&out, "MOTION\nFrames: ", frames.size(), "\nFrame Time: ");
  AppendFloat(&out, options.frame_time);
  out += "\n";
  for (size_t f = 0; f < frames.size(); ++f) {
    bool first = true;
    for (const int joint : order) {
      if (!first) out.push_back(' ');
      first = false;
      if (has_position[joint]) {
        AppendVector(&out, translations[f][joint]);
        out.push_back(' ');
      }
      const Eigen::Vector3d zyx = EulerZyxDegrees(frames[f][joint].rotation);
      AppendAngle(&out, zyx.x());
      out.push_back(' ');
      AppendAngle(&out, zyx.y());
      out.push_back(' ');
      AppendAngle(&out, zyx.z());
    }
    out += "\n";
  }
  return out;
}

absl::Status WriteBvhFile(const std::string& path, const Skeleton& skeleton,
                          absl::Span<const LocalPose> frames,
                          const BvhWriteOptions& options) {
  absl::StatusOr<std::string> text = WriteBvh(skeleton, frames, options);
  if (!text.ok()) {
    return absl::Status(text.status().code(),
                        absl::StrCat(path, ": ", text.status().message()));
  }
  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::unique_ptr<std::FILE, Closer> file(std::fopen(path.c_str(), "wb"));
  if (file == nullptr) {
    const int error = errno;
    return absl::ErrnoToStatus(error, absl::StrCat(path, ": cannot open"));
  }
  if (std::fwrite(text->data(), 1, text->size(), file.get()) != text->size() ||
      std::fflush(file.get()) != 0) {
    const int error = errno;
    return absl::ErrnoToStatus(error, absl::StrCat(path, ": cannot write"));
  }
  if (std::fclose(file.release()) != 0) {
    const int error = errno;
    return absl::ErrnoToStatus(error, absl::StrCat(path, ": cannot close"));
  }
  return absl::OkStatus();
}

}  // namespace posewire
