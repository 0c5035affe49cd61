#include "solver_core/full_body/biped_mapping.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "solver_core/chain_ik/ik_chain.h"
#include "solver_core/model/pose.h"

namespace posewire {
namespace {

constexpr absl::string_view kField = "biped_mapping";

// A limb is "straight" when its middle joint is closer to the upper-to-end
// line than this fraction of the upper bone's length (sin of the angle
// between the upper bone and the limb axis): the bend plane is then decided
// by rounding, not by the rig.
constexpr float kStraightSine = 1e-3f;

// Two set-up positions closer than this fraction of the skeleton's size are
// "the same point" (FinalIK compares positions with ==; float data that went
// through a file needs a little room).
constexpr float kSamePointFraction = 1e-6f;

std::string Label(const Skeleton& skeleton, int joint) {
  return absl::StrCat("joint ", joint, " '", skeleton.joint_name(joint), "'");
}

bool IsAncestor(const Skeleton& skeleton, int ancestor, int joint) {
  return ancestor != joint && skeleton.IsInSubtree(ancestor, joint);
}

// Lower-case name without a namespace ("mixamorig:", "mixamorig1_",
// "Character1:").
std::string NormalizeName(absl::string_view name) {
  const size_t colon = name.rfind(':');
  if (colon != absl::string_view::npos) name.remove_prefix(colon + 1);
  std::string out(name);
  for (char& c : out) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  constexpr absl::string_view kMixamo = "mixamorig";
  if (absl::string_view(out).substr(0, kMixamo.size()) == kMixamo) {
    size_t i = kMixamo.size();
    while (i < out.size() && std::isdigit(static_cast<unsigned char>(out[i]))) {
      ++i;
    }
    if (i < out.size() && out[i] == '_') out.erase(0, i + 1);
  }
  return out;
}

// Roles a naming convention names: pelvis, head, then upper / lower / end
// for each limb in BipedLimb order.
constexpr int kPelvisRole = 0;
constexpr int kHeadRole = 1;
constexpr int kNumRoles = 2 + 3 * kNumBipedLimbs;
int LimbRole(int limb, int bone) { return 2 + 3 * limb + bone; }

struct Convention {
  BipedNamingConvention id;
  // Candidate names per role, lower case, first match wins.
  std::array<std::vector<std::string>, kNumRoles> names;
};

// Built per call: no global tables in solver_core.
std::vector<Convention> Conventions() {
  std::vector<Convention> out;
  auto add = [&](BipedNamingConvention id,
                 std::vector<std::vector<std::string>> names) {
    Convention c;
    c.id = id;
    for (int r = 0; r < kNumRoles; ++r) c.names[r] = std::move(names[r]);
    out.push_back(std::move(c));
  };
  add(BipedNamingConvention::kMotionBuilder, {{"hips"},
                                              {"head"},
                                              {"leftarm"},
                                              {"leftforearm"},
                                              {"lefthand"},
                                              {"rightarm"},
                                              {"rightforearm"},
                                              {"righthand"},
                                              {"leftupleg"},
                                              {"leftleg"},
                                              {"leftfoot"},
                                              {"rightupleg"},
                                              {"rightleg"},
                                              {"rightfoot"}});
  add(BipedNamingConvention::kCmu3dsMax, {{"hips"},
                                          {"head"},
                                          {"leftshoulder"},
                                          {"leftelbow"},
                                          {"leftwrist"},
                                          {"rightshoulder"},
                                          {"rightelbow"},
                                          {"rightwrist"},
                                          {"lefthip"},
                                          {"leftknee"},
                                          {"leftankle"},
                                          {"righthip"},
                                          {"rightknee"},
                                          {"rightankle"}});
  add(BipedNamingConvention::kDaz, {{"hip", "pelvis"},
                                    {"head"},
                                    {"lshldr", "lshldrbend"},
                                    {"lforearm", "lforearmbend"},
                                    {"lhand"},
                                    {"rshldr", "rshldrbend"},
                                    {"rforearm", "rforearmbend"},
                                    {"rhand"},
                                    {"lthigh", "lthighbend"},
                                    {"lshin"},
                                    {"lfoot"},
                                    {"rthigh", "rthighbend"},
                                    {"rshin"},
                                    {"rfoot"}});
  add(BipedNamingConvention::kBlenderRobot, {{"hips"},
                                             {"head"},
                                             {"upperarm.l"},
                                             {"lowerarm.l"},
                                             {"palm2.l", "hand.l"},
                                             {"upperarm.r"},
                                             {"lowerarm.r"},
                                             {"palm2.r", "hand.r"},
                                             {"upperleg.l"},
                                             {"lowerleg.l"},
                                             {"foot.l"},
                                             {"upperleg.r"},
                                             {"lowerleg.r"},
                                             {"foot.r"}});
  add(BipedNamingConvention::kFox, {{"b_hip_01"},
                                    {"b_head_05"},
                                    {"b_leftupperarm_09"},
                                    {"b_leftforearm_010"},
                                    {"b_lefthand_011"},
                                    {"b_rightupperarm_06"},
                                    {"b_rightforearm_07"},
                                    {"b_righthand_08"},
                                    {"b_leftleg01_015"},
                                    {"b_leftleg02_016"},
                                    {"b_leftfoot01_017"},
                                    {"b_rightleg01_019"},
                                    {"b_rightleg02_020"},
                                    {"b_rightfoot01_021"}});
  return out;
}

// Model-space transforms of a local pose (parents before children).
std::vector<Transform> ForwardKinematics(const Skeleton& skeleton,
                                         absl::Span<const Transform> local) {
  std::vector<Transform> model(skeleton.num_joints());
  for (int j = 0; j < skeleton.num_joints(); ++j) {
    const int p = skeleton.parent(j);
    model[j] = p == kNoParent ? local[j] : Combine(model[p], local[j]);
  }
  return model;
}

float SamePointDistance(const Skeleton& skeleton) {
  const float size = SkeletonSize(skeleton);
  return size > 0.0f ? kSamePointFraction * size : 0.0f;
}

// Position of a limb's end: its joint, or the tip point below the lower bone.
Eigen::Vector3f EndPosition(const BipedLimbReferences& limb,
                            absl::Span<const Transform> model) {
  if (limb.end >= 0) return model[limb.end].translation;
  return model[limb.lower].TransformPoint(limb.end_point_offset);
}

Eigen::Quaternionf EndRotation(const BipedLimbReferences& limb,
                               absl::Span<const Transform> model) {
  return model[limb.end >= 0 ? limb.end : limb.lower].rotation;
}

const char* BoneRoleName(int bone) {
  switch (bone) {
    case 0:
      return "upper";
    case 1:
      return "lower";
    default:
      return "end";
  }
}

}  // namespace

const char* BipedLimbName(BipedLimb limb) {
  switch (limb) {
    case BipedLimb::kLeftArm:
      return "left_arm";
    case BipedLimb::kRightArm:
      return "right_arm";
    case BipedLimb::kLeftLeg:
      return "left_leg";
    case BipedLimb::kRightLeg:
      return "right_leg";
  }
  return "unknown_limb";
}

const char* BipedNamingConventionName(BipedNamingConvention convention) {
  switch (convention) {
    case BipedNamingConvention::kMotionBuilder:
      return "MotionBuilder/Mixamo";
    case BipedNamingConvention::kCmu3dsMax:
      return "CMU 3ds Max";
    case BipedNamingConvention::kDaz:
      return "Daz";
    case BipedNamingConvention::kBlenderRobot:
      return "Blender .L/.R (RobotExpressive)";
    case BipedNamingConvention::kFox:
      return "Fox";
  }
  return "unknown";
}

absl::StatusOr<BipedReferences> ResolveBipedJointNames(
    const Skeleton& skeleton, const BipedJointNames& names) {
  BipedReferences refs;
  auto find = [&](const std::string& name, absl::string_view role,
                  int* out) -> absl::Status {
    if (name.empty()) {
      *out = -1;
      return absl::OkStatus();
    }
    *out = skeleton.FindJoint(name);
    if (*out < 0) {
      return absl::NotFoundError(absl::StrCat(
          kField, ".", role, ": no joint named '", name, "' in the skeleton"));
    }
    return absl::OkStatus();
  };
  if (absl::Status s = find(names.pelvis, "pelvis", &refs.pelvis); !s.ok()) {
    return s;
  }
  refs.spine.resize(names.spine.size());
  for (size_t i = 0; i < names.spine.size(); ++i) {
    if (absl::Status s = find(names.spine[i], absl::StrCat("spine[", i, "]"),
                              &refs.spine[i]);
        !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = find(names.head, "head", &refs.head); !s.ok()) return s;
  if (absl::Status s = find(names.root_node, "root_node", &refs.root_node);
      !s.ok()) {
    return s;
  }
  for (int l = 0; l < kNumBipedLimbs; ++l) {
    const std::string prefix = BipedLimbName(static_cast<BipedLimb>(l));
    const BipedJointNames::Limb& n = names.limbs[l];
    BipedLimbReferences& r = refs.limbs[l];
    for (auto [name, out, role] :
         {std::tuple{&n.clavicle, &r.clavicle, "clavicle"},
          std::tuple{&n.upper, &r.upper, "upper"},
          std::tuple{&n.lower, &r.lower, "lower"},
          std::tuple{&n.end, &r.end, "end"}}) {
      if (absl::Status s = find(*name, absl::StrCat(prefix, ".", role), out);
          !s.ok()) {
        return s;
      }
    }
  }
  return refs;
}

absl::StatusOr<DetectedBiped> DetectBipedReferences(
    const Skeleton& skeleton, absl::Span<const BipedTip> tips) {
  const int n = skeleton.num_joints();
  absl::flat_hash_map<std::string, int> by_name;
  for (int j = 0; j < n; ++j) {
    by_name.try_emplace(NormalizeName(skeleton.joint_name(j)), j);
  }
  auto lookup = [&](const std::vector<std::string>& candidates) {
    for (const std::string& c : candidates) {
      auto it = by_name.find(c);
      if (it != by_name.end()) return it->second;
    }
    return -1;
  };
  auto tip_of = [&](int joint) -> const BipedTip* {
    for (const BipedTip& t : tips) {
      if (t.joint == joint && t.offset.allFinite()) return &t;
    }
    return nullptr;
  };

  std::vector<std::string> misses;
  for (const Convention& convention : Conventions()) {
    std::array<int, kNumRoles> found;
    found.fill(-1);
    std::string miss;
    for (int r = 0; r < kNumRoles; ++r) {
      found[r] = lookup(convention.names[r]);
      const bool optional = r == kPelvisRole || r == kHeadRole;
      // An end bone may be missing when a tip hangs off the lower bone.
      const bool is_end = r >= 2 && (r - 2) % 3 == 2;
      if (found[r] >= 0 || optional) continue;
      if (is_end && found[r - 1] >= 0 && tip_of(found[r - 1]) != nullptr) {
        continue;
      }
      if (miss.empty()) miss = convention.names[r].front();
    }
    if (!miss.empty()) {
      misses.push_back(absl::StrCat(BipedNamingConventionName(convention.id),
                                    ": no '", miss, "'"));
      continue;
    }

    DetectedBiped out;
    out.convention = convention.id;
    BipedReferences& refs = out.references;
    for (int l = 0; l < kNumBipedLimbs; ++l) {
      BipedLimbReferences& limb = refs.limbs[l];
      limb.upper = found[LimbRole(l, 0)];
      limb.lower = found[LimbRole(l, 1)];
      limb.end = found[LimbRole(l, 2)];
      const bool end_below =
          limb.end >= 0 && IsAncestor(skeleton, limb.lower, limb.end);
      if (!end_below) {
        const BipedTip* tip = tip_of(limb.lower);
        if (tip != nullptr) {
          out.notes.push_back(absl::StrCat(
              BipedLimbName(static_cast<BipedLimb>(l)), ": ",
              limb.end >= 0
                  ? absl::StrCat("'", skeleton.joint_name(limb.end),
                                 "' is not below '",
                                 skeleton.joint_name(limb.lower), "'")
                  : absl::StrCat("no end bone below '",
                                 skeleton.joint_name(limb.lower), "'"),
              "; its end is the tip point of '",
              skeleton.joint_name(limb.lower),
              "' (position solved, rotation not written)"));
          limb.end = -1;
          limb.has_end_point = true;
          limb.end_point_offset = tip->offset;
        }
      }
    }

    const int left_thigh =
        refs.limbs[static_cast<int>(BipedLimb::kLeftLeg)].upper;
    const int left_upper_arm =
        refs.limbs[static_cast<int>(BipedLimb::kLeftArm)].upper;
    const int right_upper_arm =
        refs.limbs[static_cast<int>(BipedLimb::kRightArm)].upper;
    int pelvis = found[kPelvisRole];
    if (pelvis < 0 || !IsAncestor(skeleton, pelvis, left_thigh)) {
      pelvis = skeleton.parent(left_thigh);
      if (pelvis == kNoParent) {
        return absl::InvalidArgumentError(absl::StrCat(
            kField, ": the left thigh ", Label(skeleton, left_thigh),
            " is a root joint, so there is no pelvis above it"));
      }
    }
    refs.pelvis = pelvis;

    // First common ancestor of the upper arms.
    absl::InlinedVector<int, 32> left_path;
    for (int a = skeleton.parent(left_upper_arm); a != kNoParent;
         a = skeleton.parent(a)) {
      left_path.push_back(a);
    }
    int common = kNoParent;
    for (int a = skeleton.parent(right_upper_arm); a != kNoParent;
         a = skeleton.parent(a)) {
      if (std::find(left_path.begin(), left_path.end(), a) != left_path.end()) {
        common = a;
        break;
      }
    }
    if (common == kNoParent) {
      return absl::InvalidArgumentError(absl::StrCat(
          kField, ": the upper arms ", Label(skeleton, left_upper_arm), " and ",
          Label(skeleton, right_upper_arm), " have no common ancestor"));
    }
    if (common != pelvis && !IsAncestor(skeleton, pelvis, common)) {
      return absl::InvalidArgumentError(absl::StrCat(
          kField, ": the pelvis ", Label(skeleton, pelvis),
          " is not an ancestor of the arms' common ancestor ",
          Label(skeleton, common), "; give the mapping explicitly"));
    }

    const std::vector<Transform> model =
        ForwardKinematics(skeleton, skeleton.rest_pose());
    const float same = SamePointDistance(skeleton);
    absl::InlinedVector<int, 16> chain;  // top to bottom
    for (int a = common; a != pelvis; a = skeleton.parent(a)) {
      chain.push_back(a);
    }
    const int thigh_parent = skeleton.parent(left_thigh);
    Eigen::Vector3f previous = model[pelvis].translation;
    int previous_joint = pelvis;
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const int bone = *it;
      if (bone == thigh_parent) continue;
      const Eigen::Vector3f p = model[bone].translation;
      if ((p - previous).norm() <= same) {
        out.notes.push_back(
            absl::StrCat("spine: ", Label(skeleton, bone), " sits on ",
                         Label(skeleton, previous_joint),
                         " in the rest pose; left out of the spine"));
        continue;
      }
      refs.spine.push_back(bone);
      previous = p;
      previous_joint = bone;
    }
    if (refs.spine.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          kField, ": no spine bone between the pelvis ",
          Label(skeleton, pelvis), " and the arms' common ancestor ",
          Label(skeleton, common)));
    }

    for (BipedLimb arm : {BipedLimb::kLeftArm, BipedLimb::kRightArm}) {
      BipedLimbReferences& limb = refs.limbs[static_cast<int>(arm)];
      const int p = skeleton.parent(limb.upper);
      if (p != kNoParent && p != pelvis &&
          std::find(refs.spine.begin(), refs.spine.end(), p) ==
              refs.spine.end()) {
        limb.clavicle = p;
      }
    }

    refs.head = found[kHeadRole];
    if (refs.head < 0) {
      for (int c : skeleton.children(common)) {
        if (!skeleton.IsInSubtree(c, left_upper_arm) &&
            !skeleton.IsInSubtree(c, right_upper_arm)) {
          refs.head = c;
          break;
        }
      }
    }
    return out;
  }
  return absl::NotFoundError(
      absl::StrCat(kField, ": no naming convention matches the joint names (",
                   absl::StrJoin(misses, "; "),
                   "); give the mapping explicitly (ResolveBipedJointNames)"));
}

absl::StatusOr<BipedMapping> BipedMapping::Create(
    const Skeleton& skeleton, BipedReferences references,
    absl::Span<const Transform> setup_pose) {
  const int n = skeleton.num_joints();
  if (!setup_pose.empty()) {
    if (absl::Status s = ValidatePose(skeleton, setup_pose,
                                      absl::StrCat(kField, ".setup_pose"));
        !s.ok()) {
      return s;
    }
  }
  const std::vector<Transform> model = ForwardKinematics(
      skeleton, setup_pose.empty() ? skeleton.rest_pose() : setup_pose);
  const float same = SamePointDistance(skeleton);

  auto error = [&](absl::string_view role, absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat(kField, ".", role, ": ", what));
  };
  auto check_index = [&](int joint, absl::string_view role,
                         bool optional) -> absl::Status {
    if (joint == -1 && optional) return absl::OkStatus();
    if (joint == -1) return error(role, "missing (-1)");
    if (joint < 0 || joint >= n) {
      return error(
          role, absl::StrCat("joint ", joint, " is out of range [0, ", n, ")"));
    }
    return absl::OkStatus();
  };

  // Every role filled and in range; FBBIK's chains are 1, 3, 3, 3, 3 nodes.
  if (absl::Status s = check_index(references.pelvis, "pelvis", false);
      !s.ok()) {
    return s;
  }
  if (references.spine.empty()) {
    return error("spine",
                 "empty; FBBIK needs at least one spine bone above "
                 "the pelvis");
  }
  for (size_t i = 0; i < references.spine.size(); ++i) {
    if (absl::Status s = check_index(references.spine[i],
                                     absl::StrCat("spine[", i, "]"), false);
        !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = check_index(references.head, "head", true); !s.ok()) {
    return s;
  }
  if (absl::Status s = check_index(references.root_node, "root_node", true);
      !s.ok()) {
    return s;
  }
  for (int l = 0; l < kNumBipedLimbs; ++l) {
    const BipedLimb limb_id = static_cast<BipedLimb>(l);
    const std::string name = BipedLimbName(limb_id);
    const BipedLimbReferences& limb = references.limbs[l];
    if (!IsArm(limb_id) && limb.clavicle != -1) {
      return error(absl::StrCat(name, ".clavicle"),
                   "legs have no clavicle (set it to -1)");
    }
    if (absl::Status s =
            check_index(limb.clavicle, absl::StrCat(name, ".clavicle"), true);
        !s.ok()) {
      return s;
    }
    if (absl::Status s =
            check_index(limb.upper, absl::StrCat(name, ".upper"), false);
        !s.ok()) {
      return s;
    }
    if (absl::Status s =
            check_index(limb.lower, absl::StrCat(name, ".lower"), false);
        !s.ok()) {
      return s;
    }
    if (limb.end == -1 && limb.has_end_point) {
      if (!limb.end_point_offset.allFinite()) {
        return error(absl::StrCat(name, ".end_point_offset"),
                     "NaN or infinite component");
      }
    } else if (absl::Status s =
                   check_index(limb.end, absl::StrCat(name, ".end"), false);
               !s.ok()) {
      return s;
    }
  }

  // No joint in two roles.
  absl::flat_hash_map<int, std::string> roles;
  auto claim = [&](int joint, std::string role) -> absl::Status {
    if (joint < 0) return absl::OkStatus();
    auto [it, inserted] = roles.try_emplace(joint, role);
    if (!inserted) {
      return error(role, absl::StrCat(Label(skeleton, joint),
                                      " is already the ", it->second));
    }
    return absl::OkStatus();
  };
  if (absl::Status s = claim(references.pelvis, "pelvis"); !s.ok()) return s;
  for (size_t i = 0; i < references.spine.size(); ++i) {
    if (absl::Status s =
            claim(references.spine[i], absl::StrCat("spine[", i, "]"));
        !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = claim(references.head, "head"); !s.ok()) return s;
  for (int l = 0; l < kNumBipedLimbs; ++l) {
    const std::string name = BipedLimbName(static_cast<BipedLimb>(l));
    const BipedLimbReferences& limb = references.limbs[l];
    if (absl::Status s = claim(limb.clavicle, absl::StrCat(name, ".clavicle"));
        !s.ok()) {
      return s;
    }
    const int bones[3] = {limb.upper, limb.lower, limb.end};
    for (int b = 0; b < 3; ++b) {
      if (absl::Status s =
              claim(bones[b], absl::StrCat(name, ".", BoneRoleName(b)));
          !s.ok()) {
        return s;
      }
    }
  }

  // Hierarchies (FinalIK: "Bone transforms in a limb do not belong to the
  // same ancestry") and distinct positions.
  for (int l = 0; l < kNumBipedLimbs; ++l) {
    const std::string name = BipedLimbName(static_cast<BipedLimb>(l));
    const BipedLimbReferences& limb = references.limbs[l];
    if (limb.clavicle >= 0 &&
        !IsAncestor(skeleton, limb.clavicle, limb.upper)) {
      return error(absl::StrCat(name, ".clavicle"),
                   absl::StrCat(Label(skeleton, limb.clavicle),
                                " is not an ancestor of the upper arm ",
                                Label(skeleton, limb.upper)));
    }
    if (!IsAncestor(skeleton, limb.upper, limb.lower)) {
      return error(absl::StrCat(name, ".lower"),
                   absl::StrCat(Label(skeleton, limb.lower),
                                " is not below the upper bone ",
                                Label(skeleton, limb.upper),
                                "; the limb's bones must be parented to each "
                                "other"));
    }
    if (limb.end >= 0 && !IsAncestor(skeleton, limb.lower, limb.end)) {
      return error(absl::StrCat(name, ".end"),
                   absl::StrCat(Label(skeleton, limb.end),
                                " is not below the lower bone ",
                                Label(skeleton, limb.lower),
                                "; the limb's bones must be parented to each "
                                "other"));
    }
    const Eigen::Vector3f p1 = model[limb.upper].translation;
    const Eigen::Vector3f p2 = model[limb.lower].translation;
    const Eigen::Vector3f p3 = EndPosition(limb, model);
    if (!((p2 - p1).norm() > same)) {
      return error(absl::StrCat(name, ".lower"),
                   absl::StrCat(Label(skeleton, limb.lower),
                                " is on the same point as the upper bone in "
                                "the set-up pose (zero-length bone)"));
    }
    if (!((p3 - p2).norm() > same)) {
      return error(absl::StrCat(name, ".end"),
                   "the end is on the same point as the lower bone in the "
                   "set-up pose (zero-length bone)");
    }
  }
  {
    int previous = references.pelvis;
    for (size_t i = 0; i < references.spine.size(); ++i) {
      const int bone = references.spine[i];
      const std::string role = absl::StrCat("spine[", i, "]");
      if (!IsAncestor(skeleton, previous, bone)) {
        return error(role, absl::StrCat(Label(skeleton, bone), " is not below ",
                                        Label(skeleton, previous),
                                        "; list the spine bottom to top, "
                                        "above the pelvis"));
      }
      if (!((model[bone].translation - model[previous].translation).norm() >
            same)) {
        return error(role, absl::StrCat(Label(skeleton, bone),
                                        " is on the same point as ",
                                        Label(skeleton, previous),
                                        " in the set-up pose; remove it from "
                                        "the spine"));
      }
      previous = bone;
    }
  }

  BipedMapping mapping;
  mapping.num_joints_ = n;
  mapping.spine_bones_.push_back(references.pelvis);
  mapping.spine_bones_.insert(mapping.spine_bones_.end(),
                              references.spine.begin(), references.spine.end());

  const auto& limbs = references.limbs;
  const Eigen::Vector3f left_thigh =
      model[limbs[static_cast<int>(BipedLimb::kLeftLeg)].upper].translation;
  const Eigen::Vector3f right_thigh =
      model[limbs[static_cast<int>(BipedLimb::kRightLeg)].upper].translation;
  const Eigen::Vector3f left_arm =
      model[limbs[static_cast<int>(BipedLimb::kLeftArm)].upper].translation;
  const Eigen::Vector3f right_arm =
      model[limbs[static_cast<int>(BipedLimb::kRightArm)].upper].translation;
  const Eigen::Vector3f hip = (left_thigh + right_thigh) * 0.5f;
  const Eigen::Vector3f neck = (left_arm + right_arm) * 0.5f;
  const Eigen::Vector3f to_neck = neck - hip;

  // Root node: given, or FinalIK's DetectRootNodeBone.
  if (references.root_node >= 0) {
    auto it = std::find(mapping.spine_bones_.begin(),
                        mapping.spine_bones_.end(), references.root_node);
    if (it == mapping.spine_bones_.end()) {
      return error("root_node",
                   absl::StrCat(Label(skeleton, references.root_node),
                                " is neither the pelvis nor a spine bone"));
    }
    mapping.root_node_index_ =
        static_cast<int>(it - mapping.spine_bones_.begin());
  } else {
    int index = 0;
    const float to_neck2 = to_neck.squaredNorm();
    if (to_neck2 > 0.0f) {
      for (size_t i = 1; i < references.spine.size(); ++i) {
        const float along =
            (model[references.spine[i]].translation - hip).dot(to_neck);
        // Projection in front of the hips and below half way to the neck.
        if (along > 0.0f && along / to_neck2 < 0.5f) {
          index = static_cast<int>(i);
        }
      }
    }
    references.root_node = references.spine[index];
    mapping.root_node_index_ = index + 1;
  }

  // Default bend directions (IKConstraintBend.Initiate), or the torso's
  // answer for straight limbs.
  const Eigen::Vector3f& up = to_neck;
  for (int l = 0; l < kNumBipedLimbs; ++l) {
    const BipedLimb limb_id = static_cast<BipedLimb>(l);
    const BipedLimbReferences& limb = limbs[l];
    const Eigen::Vector3f p1 = model[limb.upper].translation;
    const Eigen::Vector3f p2 = model[limb.lower].translation;
    const Eigen::Vector3f p3 = EndPosition(limb, model);
    const Eigen::Vector3f bone1 = (p2 - p1).normalized();
    const Eigen::Vector3f axis = (p3 - p1).normalized();
    // OrthoToLimb: the part of the upper bone perpendicular to the limb's
    // axis, pointing from that axis toward the middle joint.
    Eigen::Vector3f toward = bone1 - axis * axis.dot(bone1);
    BipedLimbSetup& setup = mapping.setups_[l];
    if (!(toward.norm() > kStraightSine)) {
      setup.straight_at_setup = true;
      const Eigen::Vector3f lateral =
          IsArm(limb_id) ? Eigen::Vector3f(left_arm - right_arm)
                         : Eigen::Vector3f(left_thigh - right_thigh);
      const Eigen::Vector3f forward = lateral.cross(up);
      toward = IsArm(limb_id) ? Eigen::Vector3f(-forward) : forward;
      mapping.warnings_.push_back(absl::StrCat(
          BipedLimbName(limb_id),
          " straight at set-up: bend direction defaulted (",
          IsArm(limb_id) ? "elbow backward" : "knee forward", ")"));
    }
    // OrthoToBone1: perpendicular to the upper bone.
    Eigen::Vector3f direction = toward - bone1 * bone1.dot(toward);
    if (!(direction.norm() > 1e-6f * toward.norm()) ||
        !(direction.squaredNorm() > 0.0f)) {
      direction = AnyPerpendicular(bone1);
    }
    direction.normalize();
    setup.default_local_direction =
        (model[limb.upper].rotation.conjugate() * direction).normalized();
    const Eigen::Vector3f normal = axis.cross(direction);
    setup.default_child_direction =
        (EndRotation(limb, model).conjugate() * normal).normalized();
  }

  mapping.references_ = std::move(references);
  return mapping;
}

absl::StatusOr<BipedMapping> MapBipedByName(const Skeleton& skeleton,
                                            absl::Span<const BipedTip> tips) {
  absl::StatusOr<DetectedBiped> detected =
      DetectBipedReferences(skeleton, tips);
  if (!detected.ok()) return detected.status();
  absl::StatusOr<BipedMapping> mapping =
      BipedMapping::Create(skeleton, std::move(detected->references));
  if (!mapping.ok()) return mapping.status();
  std::vector<std::string> warnings = std::move(detected->notes);
  warnings.insert(warnings.end(), mapping->warnings_.begin(),
                  mapping->warnings_.end());
  mapping->warnings_ = std::move(warnings);
  return mapping;
}

}  // namespace posewire
