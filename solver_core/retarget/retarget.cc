#include "solver_core/retarget/retarget.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "solver_core/chain_ik/ik_chain.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/quaternion_math.h"

namespace posewire {
namespace {

using transform_internal::Multiply;

// A segment shorter than this fraction of the skeleton's size has no
// direction to align.
constexpr float kMinSegmentFraction = 1e-6f;

std::vector<Transform> RestModel(const Skeleton& skeleton) {
  std::vector<Transform> model(skeleton.num_joints());
  for (int j = 0; j < skeleton.num_joints(); ++j) {
    const int p = skeleton.parent(j);
    model[j] = p == kNoParent ? skeleton.rest_pose()[j]
                              : Combine(model[p], skeleton.rest_pose()[j]);
  }
  return model;
}

bool SameSkeleton(const Skeleton& a, const Skeleton& b) {
  if (a.num_joints() != b.num_joints()) return false;
  for (int j = 0; j < a.num_joints(); ++j) {
    if (a.joint_name(j) != b.joint_name(j) || a.parent(j) != b.parent(j) ||
        !(a.rest_pose()[j] == b.rest_pose()[j])) {
      return false;
    }
  }
  return true;
}

bool Below(const Skeleton& s, int ancestor, int joint) {
  return ancestor != joint && s.IsInSubtree(ancestor, joint);
}

// A chain of one side while compiling: joints, plus an optional point the
// last joint's segment ends at (the next role's joint, or a tip).
struct Side {
  std::vector<int> joints;
  std::optional<Eigen::Vector3f> end;  // rest model space
  int end_joint = -1;                  // the joint at `end`, if one is
};

struct ChainDraft {
  std::string name;
  Side source;
  Side target;
};

std::optional<Eigen::Vector3f> TipPoint(
    int joint, absl::Span<const BipedTip> tips,
    absl::Span<const Transform> rest_model) {
  for (const BipedTip& t : tips) {
    if (t.joint == joint && t.offset.allFinite()) {
      return rest_model[joint].TransformPoint(t.offset);
    }
  }
  return std::nullopt;
}

// Rest positions of a side's joints, then its end point if any.
std::vector<Eigen::Vector3f> Points(const Side& side,
                                    absl::Span<const Transform> rest_model) {
  std::vector<Eigen::Vector3f> out;
  for (int j : side.joints) out.push_back(rest_model[j].translation);
  if (side.end.has_value()) out.push_back(*side.end);
  return out;
}

float PolylineLength(const std::vector<Eigen::Vector3f>& points) {
  float length = 0.0f;
  for (size_t i = 1; i < points.size(); ++i) {
    length += (points[i] - points[i - 1]).norm();
  }
  return length;
}

// Parameter of each joint along its chain: length from the first joint
// over the whole length (0 for every joint of a chain without length).
std::vector<float> Params(const std::vector<Eigen::Vector3f>& points,
                          int joints) {
  std::vector<float> out(joints, 0.0f);
  const float total = PolylineLength(points);
  if (!(total > 0.0f)) return out;
  float run = 0.0f;
  for (int i = 1; i < joints; ++i) {
    run += (points[i] - points[i - 1]).norm();
    out[i] = run / total;
  }
  return out;
}

// Where parameter t falls on a polyline of `params` (one per point): the
// segment and the fraction along it.
std::pair<int, float> Locate(const std::vector<float>& params, float t) {
  const int last = static_cast<int>(params.size()) - 1;
  for (int i = 0; i < last; ++i) {
    if (t <= params[i + 1]) {
      const float span = params[i + 1] - params[i];
      const float f =
          span > 0.0f ? std::clamp((t - params[i]) / span, 0.0f, 1.0f) : 0.0f;
      return {i, f};
    }
  }
  return {std::max(last - 1, 0), last > 0 ? 1.0f : 0.0f};
}

Eigen::Vector3f PointAt(absl::Span<const Eigen::Vector3f> points, int seg,
                        float f) {
  if (seg + 1 >= static_cast<int>(points.size())) return points[seg];
  return points[seg] + (points[seg + 1] - points[seg]) * f;
}

// Unit direction of segment i (joint i to the next point), if it has one.
std::optional<Eigen::Vector3f> Direction(
    const std::vector<Eigen::Vector3f>& points, int i, float min_length) {
  if (i + 1 >= static_cast<int>(points.size())) return std::nullopt;
  const Eigen::Vector3f d = points[i + 1] - points[i];
  const float n = d.norm();
  if (!(n > min_length)) return std::nullopt;
  return Eigen::Vector3f(d / n);
}

// The limb chains of a detected biped, roles matched between the sides.
void AddLimbChains(const Skeleton& src, const BipedReferences& s,
                   absl::Span<const Transform> src_rest,
                   absl::Span<const BipedTip> src_tips, const Skeleton& tgt,
                   const BipedReferences& t,
                   absl::Span<const Transform> tgt_rest,
                   absl::Span<const BipedTip> tgt_tips,
                   std::vector<ChainDraft>& out) {
  for (int l = 0; l < kNumBipedLimbs; ++l) {
    const BipedLimb limb = static_cast<BipedLimb>(l);
    const BipedLimbReferences& sl = s.limbs[l];
    const BipedLimbReferences& tl = t.limbs[l];
    const std::string side = l % 2 == 0 ? "left" : "right";
    if (IsArm(limb) && sl.clavicle >= 0 && tl.clavicle >= 0) {
      ChainDraft c;
      c.name = absl::StrCat(side, "_clavicle");
      c.source.joints = {sl.clavicle};
      c.source.end = src_rest[sl.upper].translation;
      c.source.end_joint = sl.upper;
      c.target.joints = {tl.clavicle};
      c.target.end = tgt_rest[tl.upper].translation;
      out.push_back(std::move(c));
    }
    const bool src_end = sl.end >= 0 && Below(src, sl.lower, sl.end);
    const bool tgt_end = tl.end >= 0 && Below(tgt, tl.lower, tl.end);
    ChainDraft c;
    c.name = absl::StrCat(side, IsArm(limb) ? "_arm" : "_leg");
    c.source.joints = {sl.upper, sl.lower};
    c.target.joints = {tl.upper, tl.lower};
    if (src_end && tgt_end) {
      c.source.joints.push_back(sl.end);
      c.target.joints.push_back(tl.end);
    } else {
      // The calf's / forearm's segment ends at the end joint or the tip.
      c.source.end =
          src_end ? std::optional<Eigen::Vector3f>(src_rest[sl.end].translation)
                  : TipPoint(sl.lower, src_tips, src_rest);
      if (src_end) c.source.end_joint = sl.end;
      c.target.end =
          tgt_end ? std::optional<Eigen::Vector3f>(tgt_rest[tl.end].translation)
                  : TipPoint(tl.lower, tgt_tips, tgt_rest);
    }
    out.push_back(std::move(c));
  }
}

// Joints strictly below `top` down to `head`, then the head; empty when the
// head is not below `top`.
std::vector<int> NeckPath(const Skeleton& s, int top, int head) {
  if (head < 0 || !Below(s, top, head)) return {};
  std::vector<int> path;
  for (int a = head; a != top; a = s.parent(a)) path.push_back(a);
  std::reverse(path.begin(), path.end());
  return path;
}

absl::StatusOr<std::vector<ChainDraft>> DetectChains(
    const Skeleton& src, absl::Span<const Transform> src_rest,
    const Skeleton& tgt, absl::Span<const Transform> tgt_rest,
    const RetargetOptions& options) {
  absl::StatusOr<DetectedBiped> s =
      DetectBipedReferences(src, options.source_tips);
  if (!s.ok()) {
    return absl::Status(
        s.status().code(),
        absl::StrCat("mapping: no biped detected in the source skeleton (",
                     s.status().message(), ")"));
  }
  absl::StatusOr<DetectedBiped> t =
      DetectBipedReferences(tgt, options.target_tips);
  if (!t.ok()) {
    return absl::Status(
        t.status().code(),
        absl::StrCat("mapping: no biped detected in the target skeleton (",
                     t.status().message(), ")"));
  }
  const BipedReferences& sr = s->references;
  const BipedReferences& tr = t->references;
  std::vector<ChainDraft> chains;
  ChainDraft pelvis;
  pelvis.name = "pelvis";
  pelvis.source.joints = {sr.pelvis};
  pelvis.target.joints = {tr.pelvis};
  chains.push_back(std::move(pelvis));

  const std::vector<int> src_neck = NeckPath(src, sr.spine.back(), sr.head);
  const std::vector<int> tgt_neck = NeckPath(tgt, tr.spine.back(), tr.head);
  const bool neck = !src_neck.empty() && !tgt_neck.empty();
  ChainDraft spine;
  spine.name = "spine";
  spine.source.joints = sr.spine;
  spine.target.joints = tr.spine;
  if (neck) {
    spine.source.end = src_rest[src_neck.front()].translation;
    spine.source.end_joint = src_neck.front();
    spine.target.end = tgt_rest[tgt_neck.front()].translation;
  }
  chains.push_back(std::move(spine));
  if (neck) {
    ChainDraft c;
    c.name = "neck";
    c.source.joints = src_neck;
    c.target.joints = tgt_neck;
    chains.push_back(std::move(c));
  }
  AddLimbChains(src, sr, src_rest, options.source_tips, tgt, tr, tgt_rest,
                options.target_tips, chains);
  return chains;
}

absl::StatusOr<int> Resolve(const Skeleton& s, const std::string& name,
                            absl::string_view field, absl::string_view side) {
  const int j = s.FindJoint(name);
  if (j < 0) {
    return absl::NotFoundError(absl::StrCat(field, ": no joint named '", name,
                                            "' in the ", side, " skeleton"));
  }
  return j;
}

absl::StatusOr<std::vector<int>> ResolveChain(
    const Skeleton& s, const std::vector<std::string>& names,
    absl::string_view field, absl::string_view side) {
  if (names.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": empty; a chain needs at least one joint"));
  }
  std::vector<int> out;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string f = absl::StrCat(field, "[", i, "]");
    absl::StatusOr<int> j = Resolve(s, names[i], f, side);
    if (!j.ok()) return j.status();
    for (size_t k = 0; k < out.size(); ++k) {
      if (out[k] == *j) {
        return absl::InvalidArgumentError(absl::StrCat(
            f, ": '", names[i], "' is already joint ", k,
            " of this chain (a cycle); a chain goes down the hierarchy "
            "without repeating a joint"));
      }
    }
    if (!out.empty() && !Below(s, out.back(), *j)) {
      return absl::InvalidArgumentError(absl::StrCat(
          f, ": '", names[i], "' is not below '", s.joint_name(out.back()),
          "'; a chain lists joints top to bottom, each below "
          "the one before it"));
    }
    out.push_back(*j);
  }
  return out;
}

absl::StatusOr<std::vector<ChainDraft>> ExplicitChains(
    const Skeleton& src, const Skeleton& tgt, const RetargetMapping& m) {
  if (m.source_pelvis.empty() || m.target_pelvis.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mapping.", m.source_pelvis.empty() ? "source_pelvis" : "target_pelvis",
        ": empty; an explicit mapping names the pelvis on both sides"));
  }
  std::vector<ChainDraft> chains;
  ChainDraft pelvis;
  pelvis.name = "pelvis";
  absl::StatusOr<int> sp =
      Resolve(src, m.source_pelvis, "mapping.source_pelvis", "source");
  if (!sp.ok()) return sp.status();
  absl::StatusOr<int> tp =
      Resolve(tgt, m.target_pelvis, "mapping.target_pelvis", "target");
  if (!tp.ok()) return tp.status();
  pelvis.source.joints = {*sp};
  pelvis.target.joints = {*tp};
  if (m.source_root.empty() != m.target_root.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mapping.", m.source_root.empty() ? "source_root" : "target_root",
        ": empty while the other side's root is named; name both or neither"));
  }
  if (!m.source_root.empty()) {
    ChainDraft root;
    root.name = "root";
    absl::StatusOr<int> sr =
        Resolve(src, m.source_root, "mapping.source_root", "source");
    if (!sr.ok()) return sr.status();
    absl::StatusOr<int> tr =
        Resolve(tgt, m.target_root, "mapping.target_root", "target");
    if (!tr.ok()) return tr.status();
    root.source.joints = {*sr};
    root.target.joints = {*tr};
    chains.push_back(std::move(root));
  }
  chains.push_back(std::move(pelvis));
  for (size_t i = 0; i < m.chains.size(); ++i) {
    const std::string field = absl::StrCat("mapping.chains[", i, "]");
    ChainDraft c;
    c.name = m.chains[i].name.empty() ? absl::StrCat("chains[", i, "]")
                                      : m.chains[i].name;
    absl::StatusOr<std::vector<int>> s = ResolveChain(
        src, m.chains[i].source, absl::StrCat(field, ".source"), "source");
    if (!s.ok()) return s.status();
    absl::StatusOr<std::vector<int>> t = ResolveChain(
        tgt, m.chains[i].target, absl::StrCat(field, ".target"), "target");
    if (!t.ok()) return t.status();
    c.source.joints = *std::move(s);
    c.target.joints = *std::move(t);
    chains.push_back(std::move(c));
  }
  return chains;
}

// Where a chain's target joints live in the drafts, for the duplicate
// check's message.
std::string TargetField(const std::vector<ChainDraft>& chains, size_t c,
                        size_t k, bool explicit_mapping) {
  if (!explicit_mapping) return absl::StrCat("mapping.", chains[c].name);
  if (chains[c].name == "pelvis") return "mapping.target_pelvis";
  if (chains[c].name == "root") return "mapping.target_root";
  // Explicit chains follow the pelvis (and the root when named).
  const size_t first = chains[0].name == "root" ? 2 : 1;
  return absl::StrCat("mapping.chains[", c - first, "].target[", k, "]");
}

float LegLength(const std::vector<ChainDraft>& chains, bool source,
                absl::Span<const Transform> rest) {
  float sum = 0.0f;
  int legs = 0;
  for (const ChainDraft& c : chains) {
    if (c.name != "left_leg" && c.name != "right_leg") continue;
    sum += PolylineLength(Points(source ? c.source : c.target, rest));
    ++legs;
  }
  return legs == 2 ? sum / 2.0f : 0.0f;
}

float PelvisHeight(absl::Span<const Transform> rest, int pelvis) {
  float lowest = rest[pelvis].translation.y();
  for (const Transform& t : rest) lowest = std::min(lowest, t.translation.y());
  return rest[pelvis].translation.y() - lowest;
}

}  // namespace

absl::StatusOr<RetargetMap> RetargetMap::Create(
    const Skeleton& source, const Skeleton& target,
    const RetargetMapping& mapping, const RetargetOptions& options) {
  if (!std::isfinite(options.root_scale) || options.root_scale < 0.0f) {
    return absl::InvalidArgumentError(
        absl::StrCat("root_scale: ", options.root_scale,
                     " must be finite and >= 0 (0: the leg-length ratio)"));
  }
  if (source.num_joints() == 0 || target.num_joints() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        source.num_joints() == 0 ? "source" : "target", ": empty skeleton"));
  }
  RetargetMap map;
  map.source_joints_ = source.num_joints();
  map.target_joints_ = target.num_joints();
  map.bone_of_.assign(target.num_joints(), -1);
  const std::vector<Transform> src_rest = RestModel(source);
  const std::vector<Transform> tgt_rest = RestModel(target);
  map.source_rest_inverse_.resize(source.num_joints());
  for (int j = 0; j < source.num_joints(); ++j) {
    map.source_rest_inverse_[j] = src_rest[j].rotation.conjugate();
  }

  const bool explicit_mapping =
      !mapping.chains.empty() || !mapping.source_pelvis.empty() ||
      !mapping.target_pelvis.empty() || !mapping.source_root.empty() ||
      !mapping.target_root.empty();
  if (!explicit_mapping && mapping.follow.empty() &&
      SameSkeleton(source, target) &&
      (options.root_scale == 0.0f || options.root_scale == 1.0f)) {
    map.identity_ = true;
    map.root_scale_ = 1.0f;
    return map;
  }

  absl::StatusOr<std::vector<ChainDraft>> drafts =
      explicit_mapping
          ? ExplicitChains(source, target, mapping)
          : DetectChains(source, src_rest, target, tgt_rest, options);
  if (!drafts.ok()) return drafts.status();
  const std::vector<ChainDraft>& chains = *drafts;

  const float src_min = kMinSegmentFraction * SkeletonSize(source);
  const float tgt_min = kMinSegmentFraction * SkeletonSize(target);
  for (size_t c = 0; c < chains.size(); ++c) {
    const ChainDraft& chain = chains[c];
    const std::vector<Eigen::Vector3f> sp = Points(chain.source, src_rest);
    const std::vector<Eigen::Vector3f> tp = Points(chain.target, tgt_rest);
    const int ns = static_cast<int>(chain.source.joints.size());
    const int nt = static_cast<int>(chain.target.joints.size());
    const std::vector<float> s_params = Params(sp, ns);
    const std::vector<float> t_params = Params(tp, nt);
    Eigen::Quaternionf align = Eigen::Quaternionf::Identity();
    for (int k = 0; k < nt; ++k) {
      Bone bone;
      bone.target = chain.target.joints[k];
      int a = 0;
      int b = 0;
      float w = 0.0f;
      if (ns == nt) {
        a = b = k;
      } else {
        // The source bones around this bone's parameter.
        const float t = t_params[k];
        a = ns - 1;
        for (int i = 0; i + 1 < ns; ++i) {
          if (t < s_params[i + 1]) {
            a = i;
            break;
          }
        }
        b = std::min(a + 1, ns - 1);
        const float span = s_params[b] - s_params[a];
        if (b != a && span > 0.0f) {
          w = std::clamp((t - s_params[a]) / span, 0.0f, 1.0f);
        }
        if (w == 0.0f) b = a;
      }
      bone.source_a = chain.source.joints[a];
      bone.source_b = chain.source.joints[b];
      bone.w = w;
      const std::optional<Eigen::Vector3f> td = Direction(tp, k, tgt_min);
      std::optional<Eigen::Vector3f> sd = Direction(sp, a, src_min);
      if (w > 0.0f) {
        const std::optional<Eigen::Vector3f> sb = Direction(sp, b, src_min);
        if (sd.has_value() && sb.has_value()) {
          const Eigen::Vector3f mix = *sd * (1.0f - w) + *sb * w;
          sd = mix.norm() > 1e-6f
                   ? std::optional<Eigen::Vector3f>(mix.normalized())
                   : sd;
        }
      }
      // Distributed: the target segment [t_k, t_k+1] follows the source's
      // chord over the same stretch of its chain, at rest and per frame.
      const bool source_points_known =
          !chain.source.end.has_value() || chain.source.end_joint >= 0;
      if (ns != nt && td.has_value() && source_points_known &&
          k + 1 < static_cast<int>(tp.size())) {
        const std::vector<float> sp_all =
            Params(sp, static_cast<int>(sp.size()));
        const std::vector<float> tp_all =
            Params(tp, static_cast<int>(tp.size()));
        const auto [seg0, f0] = Locate(sp_all, tp_all[k]);
        const auto [seg1, f1] = Locate(sp_all, tp_all[k + 1]);
        const Eigen::Vector3f chord =
            PointAt(sp, seg1, f1) - PointAt(sp, seg0, f0);
        if (chord.norm() > src_min) {
          sd = Eigen::Vector3f(chord.normalized());
          bone.chord = static_cast<int>(map.chords_.size());
          Chord c;
          c.joints = chain.source.joints;
          if (chain.source.end_joint >= 0) {
            c.joints.push_back(chain.source.end_joint);
          }
          c.seg0 = seg0;
          c.f0 = f0;
          c.seg1 = seg1;
          c.f1 = f1;
          c.bone_direction = tgt_rest[bone.target].rotation.conjugate() * *td;
          map.chords_.push_back(std::move(c));
        }
      }
      if (td.has_value() && sd.has_value()) {
        align = Eigen::Quaternionf::FromTwoVectors(*td, *sd);
      }
      bone.offset =
          Multiply(align, tgt_rest[bone.target].rotation).normalized();
      if (map.bone_of_[bone.target] >= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(TargetField(chains, c, k, explicit_mapping),
                         ": target joint '", target.joint_name(bone.target),
                         "' is already mapped by another chain"));
      }
      map.bone_of_[bone.target] = static_cast<int>(map.bones_.size());
      map.bones_.push_back(bone);
    }
    RetargetChain compiled{chain.name, chain.source.joints, chain.target.joints,
                           chain.source.end_joint, std::nullopt};
    if (chain.target.end.has_value()) {
      compiled.target_end =
          tgt_rest[chain.target.joints.back()].InverseTransformPoint(
              *chain.target.end);
    }
    map.chains_.push_back(std::move(compiled));
  }

  for (size_t i = 0; i < mapping.follow.size(); ++i) {
    const std::string field = absl::StrCat("mapping.follow[", i, "]");
    absl::StatusOr<int> t = Resolve(target, mapping.follow[i].target,
                                    absl::StrCat(field, ".target"), "target");
    if (!t.ok()) return t.status();
    absl::StatusOr<int> s = Resolve(source, mapping.follow[i].source,
                                    absl::StrCat(field, ".source"), "source");
    if (!s.ok()) return s.status();
    if (map.bone_of_[*t] >= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".target: target joint '", target.joint_name(*t),
                       "' is already mapped"));
    }
    Bone bone;
    bone.target = *t;
    bone.source_a = bone.source_b = *s;
    bone.offset = tgt_rest[*t].rotation;
    map.bone_of_[*t] = static_cast<int>(map.bones_.size());
    map.bones_.push_back(bone);
  }

  // The pelvis chain is the one named so (every mapping has one).
  for (const ChainDraft& c : chains) {
    if (c.name == "pelvis") {
      map.source_pelvis_ = c.source.joints[0];
      map.target_pelvis_ = c.target.joints[0];
    }
  }
  map.source_pelvis_rest_ = src_rest[map.source_pelvis_].translation;
  map.target_pelvis_rest_ = tgt_rest[map.target_pelvis_].translation;
  if (options.root_scale > 0.0f) {
    map.root_scale_ = options.root_scale;
  } else {
    float s = LegLength(chains, true, src_rest);
    float t = LegLength(chains, false, tgt_rest);
    if (!(s > 0.0f && t > 0.0f)) {
      s = PelvisHeight(src_rest, map.source_pelvis_);
      t = PelvisHeight(tgt_rest, map.target_pelvis_);
    }
    map.root_scale_ = s > 0.0f && t > 0.0f ? t / s : 1.0f;
  }
  return map;
}

namespace {

// The point at fraction f of segment `seg` of the polyline through
// `joints`' current model positions.
Eigen::Vector3f PointOn(absl::Span<const Transform> model,
                        absl::Span<const int> joints, int seg, float f) {
  const Eigen::Vector3f a = model[joints[seg]].translation;
  if (seg + 1 >= static_cast<int>(joints.size())) return a;
  return a + (model[joints[seg + 1]].translation - a) * f;
}

}  // namespace

absl::Status RetargetJob::Validate() const {
  if (map == nullptr || source_skeleton == nullptr ||
      target_skeleton == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(map == nullptr ? "map"
                                                   : source_skeleton == nullptr
                                                       ? "source_skeleton"
                                                       : "target_skeleton",
                                                   ": null"));
  }
  if (source_skeleton->num_joints() != map->source_joints() ||
      target_skeleton->num_joints() != map->target_joints()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "map: compiled for ", map->source_joints(), " source and ",
        map->target_joints(), " target joints, given skeletons of ",
        source_skeleton->num_joints(), " and ", target_skeleton->num_joints()));
  }
  if (absl::Status s = CheckPose(*source_skeleton, source, "source"); !s.ok()) {
    return s;
  }
  if (absl::Status s =
          CheckInputPose(*target_skeleton, input, "input", input_validated);
      !s.ok()) {
    return s;
  }
  if (static_cast<int>(output.size()) != target_skeleton->num_joints()) {
    return absl::InvalidArgumentError(
        absl::StrCat("output: ", output.size(), " transforms for ",
                     target_skeleton->num_joints(), " joints"));
  }
  if (Overlap(output, source)) {
    return absl::InvalidArgumentError(
        "output: overlaps source; the source pose must be separate memory");
  }
  if (!scratch.empty() &&
      (Overlap(scratch, source) || Overlap(scratch, input) ||
       Overlap(scratch, output))) {
    return absl::InvalidArgumentError(
        "scratch: overlaps source, input or output; it must be separate "
        "memory");
  }
  return CheckNoPartialOverlap(output, "output", input, "input");
}

absl::Status RetargetJob::Run() const {
  if (absl::Status s = Validate(); !s.ok()) return s;
  if (map->identity_) {
    std::copy(source.begin(), source.end(), output.begin());
    return absl::OkStatus();
  }
  const Skeleton& src = *source_skeleton;
  const Skeleton& tgt = *target_skeleton;
  const size_t need = static_cast<size_t>(src.num_joints()) +
                      static_cast<size_t>(tgt.num_joints());
  std::vector<Transform> owned;
  absl::Span<Transform> work = scratch;
  if (work.size() < need) {
    owned.resize(need);
    work = absl::MakeSpan(owned);
  }
  const absl::Span<Transform> src_model = work.subspan(0, src.num_joints());
  const absl::Span<Transform> model =
      work.subspan(src.num_joints(), tgt.num_joints());
  for (int j = 0; j < src.num_joints(); ++j) {
    const int p = src.parent(j);
    src_model[j] =
        p == kNoParent ? source[j] : Combine(src_model[p], source[j]);
  }
  auto delta = [&](int s) {
    return Multiply(src_model[s].rotation, map->source_rest_inverse_[s]);
  };
  for (int j = 0; j < tgt.num_joints(); ++j) {
    const int p = tgt.parent(j);
    const Transform parent = p == kNoParent ? Transform::Identity() : model[p];
    Transform local = input[j];
    const int b = map->bone_of_[j];
    if (b >= 0) {
      const RetargetMap::Bone& bone = map->bones_[b];
      Eigen::Quaternionf d = delta(bone.source_a);
      if (bone.w > 0.0f) d = SlerpShortest(d, delta(bone.source_b), bone.w);
      Eigen::Quaternionf world = Multiply(d, bone.offset);
      if (bone.chord >= 0) {
        // The bone turned onto the source's chord over its stretch.
        const RetargetMap::Chord& c = map->chords_[bone.chord];
        const Eigen::Vector3f from = PointOn(src_model, c.joints, c.seg0, c.f0);
        const Eigen::Vector3f to = PointOn(src_model, c.joints, c.seg1, c.f1);
        const Eigen::Vector3f chord = to - from;
        const Eigen::Vector3f now =
            transform_internal::Rotate(world, c.bone_direction);
        const float n = chord.norm();
        if (n > 0.0f && now.norm() > 0.0f) {
          const Eigen::Quaternionf swing =
              Eigen::Quaternionf::FromTwoVectors(now, chord / n);
          world = Multiply(swing, world);
        }
      }
      local.rotation =
          Multiply(parent.rotation.conjugate(), world).normalized();
    }
    if (j == map->target_pelvis_) {
      const Eigen::Vector3f moved =
          src_model[map->source_pelvis_].translation - map->source_pelvis_rest_;
      const Eigen::Vector3f position =
          map->target_pelvis_rest_ + moved * map->root_scale_;
      local.translation = parent.InverseTransformPoint(position);
    }
    model[j] = p == kNoParent ? local : Combine(parent, local);
    output[j] = local;
  }
  return absl::OkStatus();
}

}  // namespace posewire
