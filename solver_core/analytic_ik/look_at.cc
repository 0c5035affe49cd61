#include "solver_core/analytic_ik/look_at.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "solver_core/analytic_ik/clamp_direction.h"
#include "solver_core/model/local_to_model.h"
#include "solver_core/model/pose.h"
#include "solver_core/model/quaternion_math.h"

namespace posewire {
namespace {

// Bones of a typical rig (a few spine bones, the head, two eyes) fit
// without allocating.
template <typename T>
using BoneVector = absl::InlinedVector<T, 12>;

absl::Status CheckVector(const Eigen::Vector3f& v, absl::string_view field) {
  if (v.allFinite()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("look_at.", field, ": NaN or infinite component"));
}

absl::Status CheckScalar(float x, absl::string_view field) {
  if (std::isfinite(x)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("look_at.", field, ": ", x, " is not finite"));
}

std::string Named(const Skeleton& skel, absl::string_view field, int joint) {
  return absl::StrCat("look_at.", field, " '", skel.joint_name(joint), "'");
}

// The bone's field name: "spine[i]", "head" or "eyes[i]", by its index in
// the order spine, head, eyes.
std::string BoneField(const LookAtJob& job, size_t bone) {
  const size_t n = job.spine.size();
  if (bone < n) return absl::StrCat("spine[", bone, "]");
  if (bone == n) return "head";
  return absl::StrCat("eyes[", bone - n - 1, "]");
}

int BoneJoint(const LookAtJob& job, size_t bone) {
  const size_t n = job.spine.size();
  if (bone < n) return job.spine[bone];
  if (bone == n) return job.head;
  return job.eyes[bone - n - 1];
}

absl::Status CheckJoints(const LookAtJob& job) {
  const Skeleton& skel = *job.skeleton;
  const int n = skel.num_joints();
  const size_t bones = job.spine.size() + 1 + job.eyes.size();
  for (size_t b = 0; b < bones; ++b) {
    const int j = BoneJoint(job, b);
    if (j < 0 || j >= n) {
      return absl::InvalidArgumentError(
          absl::StrCat("look_at.", BoneField(job, b), ": joint ", j,
                       " is out of range [0, ", n, ")"));
    }
  }
  // The spine and head: one path down the hierarchy.
  for (size_t i = 0; i < job.spine.size(); ++i) {
    const int below = i + 1 < job.spine.size() ? job.spine[i + 1] : job.head;
    if (below == job.spine[i] || !skel.IsInSubtree(job.spine[i], below)) {
      return absl::InvalidArgumentError(absl::StrCat(
          Named(skel, BoneField(job, i), job.spine[i]), ": not an ancestor of ",
          Named(skel, BoneField(job, i + 1), below),
          " (the spine runs from the hips to the head along one path)"));
    }
  }
  for (size_t e = 0; e < job.eyes.size(); ++e) {
    const size_t b = job.spine.size() + 1 + e;
    const int eye = job.eyes[e];
    if (eye == job.head || !skel.IsInSubtree(job.head, eye)) {
      return absl::InvalidArgumentError(
          absl::StrCat(Named(skel, BoneField(job, b), eye), ": not under ",
                       Named(skel, "head", job.head)));
    }
    for (size_t o = 0; o < job.eyes.size(); ++o) {
      if (o != e && skel.IsInSubtree(job.eyes[o], eye)) {
        return absl::InvalidArgumentError(absl::StrCat(
            Named(skel, BoneField(job, b), eye), ": is, or is under, ",
            Named(skel, BoneField(job, job.spine.size() + 1 + o), job.eyes[o]),
            "; each eye turns on its own"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckAxes(const LookAtJob& job) {
  const Skeleton& skel = *job.skeleton;
  if (absl::Status s = CheckVector(job.character_forward, "character_forward");
      !s.ok()) {
    return s;
  }
  if (!(job.character_forward.squaredNorm() > 1e-12f)) {
    return absl::InvalidArgumentError(
        "look_at.character_forward: zero length; give the model-space "
        "direction the rest pose faces");
  }
  const size_t bones = job.spine.size() + 1 + job.eyes.size();
  if (!job.axes.empty() && job.axes.size() != bones) {
    return absl::InvalidArgumentError(absl::StrCat(
        "look_at.axes: ", job.axes.size(), " axes for ", bones,
        " bones (spine, head, eyes); give none (derived from the rest pose) "
        "or one per bone"));
  }
  for (size_t b = 0; b < job.axes.size(); ++b) {
    if (!job.axes[b].allFinite()) {
      return CheckVector(job.axes[b], absl::StrCat("axes[", b, "]"));
    }
    if (!(job.axes[b].squaredNorm() > 1e-12f)) {
      const int j = BoneJoint(job, b);
      return absl::InvalidArgumentError(absl::StrCat(
          "look_at.axes[", b, "]: zero length; give the forward axis of ",
          BoneField(job, b), " (joint ", j, " '", skel.joint_name(j),
          "') in its own space"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckParameters(const LookAtJob& job) {
  if (absl::Status s = CheckVector(job.target, "target"); !s.ok()) return s;
  struct Scalar {
    float value;
    const char* name;
  };
  for (const Scalar& x :
       {Scalar{job.weight, "weight"}, Scalar{job.body_weight, "body_weight"},
        Scalar{job.head_weight, "head_weight"},
        Scalar{job.eyes_weight, "eyes_weight"},
        Scalar{job.spine_weight_start, "spine_weight_start"},
        Scalar{job.clamp_weight, "clamp_weight"},
        Scalar{job.clamp_weight_head, "clamp_weight_head"},
        Scalar{job.clamp_weight_eyes, "clamp_weight_eyes"}}) {
    if (absl::Status s = CheckScalar(x.value, x.name); !s.ok()) return s;
  }
  if (job.clamp_smoothing < 0 ||
      job.clamp_smoothing > kMaxClampSmoothingIterations) {
    return absl::InvalidArgumentError(
        absl::StrCat("look_at.clamp_smoothing: ", job.clamp_smoothing,
                     " is not in [0, ", kMaxClampSmoothingIterations, "]"));
  }
  for (const Scalar& x :
       {Scalar{job.max_turn_speed, "max_turn_speed"}, Scalar{job.dt, "dt"}}) {
    if (!(x.value >= 0.0f) || !std::isfinite(x.value)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "look_at.", x.name, ": ", x.value, " is not finite and >= 0"));
    }
  }
  if (job.state != nullptr) {
    return CheckVector(job.state->direction, "state.direction");
  }
  return absl::OkStatus();
}

absl::Status Diagnose(const LookAtJob& job) {
  if (job.skeleton == nullptr) {
    return absl::InvalidArgumentError("look_at.skeleton: not set");
  }
  const Skeleton& skel = *job.skeleton;
  const size_t n = static_cast<size_t>(skel.num_joints());
  if (job.input.size() != n || job.output.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "look_at: input and output need one transform per joint (", n,
        "); got ", job.input.size(), " and ", job.output.size()));
  }
  if (absl::Status s = CheckNoPartialOverlap(job.output, "look_at.output",
                                             job.input, "look_at.input");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckJoints(job); !s.ok()) return s;
  if (absl::Status s = CheckAxes(job); !s.ok()) return s;
  if (absl::Status s = CheckParameters(job); !s.ok()) return s;
  const int first = job.spine.empty() ? job.head : job.spine[0];
  if (!TransformLooksValid(job.parent_model)) {
    if (absl::Status s = ValidateParentModel(skel, job.parent_model, first,
                                             "look_at.parent_model");
        !s.ok()) {
      return s;
    }
  }
  return CheckInputPose(skel, job.input, "look_at.input", job.input_validated);
}

Eigen::Vector3f RotateVector(const Eigen::Quaternionf& q,
                             const Eigen::Vector3f& v) {
  return q * v;
}

// Angle in [0, pi] between two non-zero vectors (atan2 keeps precision near
// 0 and pi, where acos does not).
float Angle(const Eigen::Vector3f& a, const Eigen::Vector3f& b) {
  return std::atan2(a.cross(b).norm(), a.dot(b));
}

// The joints strictly below `ancestor` down to and including `joint`, root
// first.
void PathBelow(const Skeleton& skel, int ancestor, int joint,
               BoneVector<int>& path) {
  path.clear();
  for (int j = joint; j != ancestor; j = skel.parent(j)) path.push_back(j);
  std::reverse(path.begin(), path.end());
}

// A bone during the solve: its joint, forward axis (unit, joint space) and
// the model transform of its parent, which the bones above it have moved.
struct Bone {
  int joint = -1;
  Eigen::Vector3f axis = Eigen::Vector3f::UnitZ();
  Transform parent_model = Transform::Identity();
};

class Solver {
 public:
  explicit Solver(const LookAtJob& job)
      : job_(job), skel_(*job.skeleton), out_(job.output) {}

  // Each bone's joint, forward axis (given, or from the rest pose) and the
  // model transform of its parent in the input pose.
  void Prepare(BoneVector<Bone>& bones) const {
    const size_t n_spine = job_.spine.size();
    const size_t count = n_spine + 1 + job_.eyes.size();
    const absl::Span<const Transform> rest = skel_.rest_pose();
    const Eigen::Vector3f forward = job_.character_forward.normalized();
    bones.resize(count);
    BoneVector<Eigen::Quaternionf> rest_model(count);
    BoneVector<Transform> model(count);
    BoneVector<int> path;
    for (size_t b = 0; b < count; ++b) {
      Bone& bone = bones[b];
      bone.joint = BoneJoint(job_, b);
      Eigen::Quaternionf rest_rot = Eigen::Quaternionf::Identity();
      Transform parent = job_.parent_model;
      if (b == 0) {
        const int p = skel_.parent(bone.joint);
        if (p != kNoParent) {
          rest_rot = JointModelTransform(skel_, rest, p).rotation;
        }
        path.assign(1, bone.joint);
      } else {
        // Eyes hang from the head, the others from the bone before them.
        const size_t above = b <= n_spine ? b - 1 : n_spine;
        rest_rot = rest_model[above];
        parent = model[above];
        PathBelow(skel_, bones[above].joint, bone.joint, path);
      }
      for (int j : path) {
        rest_rot = rest_rot * rest[j].rotation;
        if (j != bone.joint) parent = Combine(parent, job_.input[j]);
      }
      rest_model[b] = rest_rot;
      model[b] = Combine(parent, job_.input[bone.joint]);
      bone.parent_model = parent;
      bone.axis = job_.axes.empty()
                      ? RotateVector(rest_rot.conjugate(), forward)
                      : job_.axes[b].normalized();
    }
  }

  // The model transform of `bone` in the output as it stands.
  Transform Model(const Bone& bone) const {
    return Combine(bone.parent_model, out_[bone.joint]);
  }

  // The model transform of the parent of `joint`, below the joint `above`
  // whose model transform is `above_model`, in the output as it stands.
  Transform ParentBelow(const Transform& above_model, int above,
                        int joint) const {
    BoneVector<int> path;
    PathBelow(skel_, above, joint, path);
    Transform model = above_model;
    for (int j : path) {
      if (j != joint) model = Combine(model, out_[j]);
    }
    return model;
  }

  // Turns `bone` (model transform `model`) so that its forward axis points
  // along `direction` (model space, unit), by `weight`; returns its new
  // model transform.
  Transform Turn(const Bone& bone, const Transform& model,
                 const Eigen::Vector3f& direction, float weight) {
    if (!(weight > 0.0f)) return model;
    const Eigen::Vector3f local_dir =
        RotateVector(model.rotation.conjugate(), direction);
    Eigen::Quaternionf correction = RotationBetween(bone.axis, local_dir);
    if (weight < 1.0f) {
      // FinalIK's Quaternion.Lerp: a normalised lerp.
      correction =
          NlerpShortest(Eigen::Quaternionf::Identity(), correction, weight);
    }
    Transform& local = out_[bone.joint];
    local.rotation = local.rotation * correction;
    return Combine(bone.parent_model, local);
  }

  // FinalIK's GetForwards for bones whose clamp cone is around `base`
  // (unit): the arc from `base` toward `to_target` (non-zero) and the
  // fraction of it the clamp lets through; a bone's forward is the point
  // (its share * clamp) along the arc.
  DirectionArc Arc(const Eigen::Vector3f& base,
                   const Eigen::Vector3f& to_target, float clamp_weight,
                   float* clamp) {
    const DirectionArc arc = ArcBetween(base, to_target.normalized());
    *clamp = ClampTurnFraction(arc.angle, clamp_weight, job_.clamp_smoothing);
    if (*clamp < 1.0f) result_.clamped = true;
    return arc;
  }

  LookAtResult& result() { return result_; }

 private:
  const LookAtJob& job_;
  const Skeleton& skel_;
  absl::Span<Transform> out_;
  LookAtResult result_;
};

}  // namespace

absl::Status LookAtJob::Validate() const { return Diagnose(*this); }

absl::Status LookAtJob::Run() const {
  if (absl::Status s = Diagnose(*this); !s.ok()) return s;
  if (output.data() != input.data()) {
    std::copy(input.begin(), input.end(), output.begin());
  }
  Solver solver(*this);
  LookAtResult& res = solver.result();
  BoneVector<Bone> bones;
  solver.Prepare(bones);
  const size_t n_spine = spine.size();
  const Bone& head_bone = bones[n_spine];

  // The head's position in the input pose: the pivot of the turn speed
  // limit.
  const Eigen::Vector3f head_pos = solver.Model(head_bone).translation;
  Eigen::Vector3f aim = target;
  const Eigen::Vector3f to_target = target - head_pos;
  const Eigen::Vector3f* previous =
      state != nullptr && state->direction.squaredNorm() > 0.0f
          ? &state->direction
          : nullptr;
  Eigen::Vector3f look = to_target.squaredNorm() > 0.0f
                             ? Eigen::Vector3f(to_target.normalized())
                             : Eigen::Vector3f::Zero();
  if (max_turn_speed > 0.0f && previous != nullptr &&
      look.squaredNorm() > 0.0f) {
    const Eigen::Vector3f from = previous->normalized();
    const float angle = Angle(from, look);
    const float step = max_turn_speed * dt;
    if (angle > step) {
      look = SlerpDirection(from, look, step / angle);
      aim = head_pos + look * to_target.norm();
      res.turn_limited = true;
    }
  }
  if (next_state != nullptr) {
    next_state->direction = look;
  }

  const float w = std::clamp(weight, 0.0f, 1.0f);
  auto finish = [&]() {
    if (result == nullptr) return absl::OkStatus();  // nobody asks
    const Transform head_model = solver.Model(head_bone);
    const Eigen::Vector3f dir =
        RotateVector(head_model.rotation, head_bone.axis).normalized();
    const Eigen::Vector3f rel = target - head_model.translation;
    const float along = std::max(0.0f, rel.dot(dir));
    res.error = (rel - along * dir).norm();
    res.head_angle_error = rel.squaredNorm() > 0.0f ? Angle(dir, rel) : 0.0f;
    res.reached = res.error <= 1e-4f * rel.norm();
    *result = res;
    return absl::OkStatus();
  };
  if (w == 0.0f) return finish();
  res.iterations = 1;

  float clamp = 1.0f;
  // Spine.
  const float body = w * std::clamp(body_weight, 0.0f, 1.0f);
  Transform last_model = Transform::Identity();
  if (n_spine > 0) {
    const Transform first_model = solver.Model(bones[0]);
    const Eigen::Vector3f base =
        RotateVector(first_model.rotation, bones[0].axis);
    // From the last spine bone in the input pose, as FinalIK.
    Transform last_input = first_model;
    for (size_t i = 1; i < n_spine; ++i) {
      last_input = solver.Model(bones[i]);
    }
    const Eigen::Vector3f to = aim - last_input.translation;
    const bool turns = body > 0.0f && to.squaredNorm() > 0.0f;
    DirectionArc arc;
    if (turns) arc = solver.Arc(base, to, clamp_weight, &clamp);
    const float start = std::clamp(spine_weight_start, 0.0f, 1.0f);
    Transform model = first_model;
    for (size_t i = 0; i < n_spine; ++i) {
      Bone& bone = bones[i];
      if (i > 0) {
        bone.parent_model =
            solver.ParentBelow(last_model, bones[i - 1].joint, bone.joint);
        model = solver.Model(bone);
      }
      if (turns) {
        const float share =
            n_spine == 1 ? 1.0f
                         : start + (1.0f - start) * static_cast<float>(i) /
                                       static_cast<float>(n_spine - 1);
        model = solver.Turn(bone, model, PointOnArc(arc, share * clamp), body);
      }
      last_model = model;
    }
  }

  // Head.
  Bone& head = bones[n_spine];
  if (n_spine > 0) {
    head.parent_model =
        solver.ParentBelow(last_model, spine[n_spine - 1], head.joint);
  }
  Transform head_model = solver.Model(head);
  const Eigen::Vector3f head_base =
      n_spine > 0 ? RotateVector(last_model.rotation, bones[n_spine - 1].axis)
                  : RotateVector(head_model.rotation, head.axis);
  const float head_w = w * std::clamp(head_weight, 0.0f, 1.0f);
  const Eigen::Vector3f head_to = aim - head_model.translation;
  if (head_w > 0.0f && head_to.squaredNorm() > 0.0f) {
    const DirectionArc arc =
        solver.Arc(head_base, head_to, clamp_weight_head, &res.head_clamp);
    head_model =
        solver.Turn(head, head_model, PointOnArc(arc, res.head_clamp), head_w);
  }

  // Eyes.
  const float eyes_w = w * std::clamp(eyes_weight, 0.0f, 1.0f);
  if (eyes_w > 0.0f) {
    const Eigen::Vector3f eye_base =
        RotateVector(head_model.rotation, head.axis);
    for (size_t b = n_spine + 1; b < bones.size(); ++b) {
      Bone& eye = bones[b];
      eye.parent_model = solver.ParentBelow(head_model, head.joint, eye.joint);
      const Transform eye_model = solver.Model(eye);
      const Eigen::Vector3f eye_to = aim - eye_model.translation;
      if (!(eye_to.squaredNorm() > 0.0f)) continue;
      const DirectionArc arc =
          solver.Arc(eye_base, eye_to, clamp_weight_eyes, &clamp);
      solver.Turn(eye, eye_model, PointOnArc(arc, clamp), eyes_w);
    }
  }
  return finish();
}

}  // namespace posewire
