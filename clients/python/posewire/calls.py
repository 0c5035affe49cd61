"""The common calls on numpy arrays, shared by the gRPC Client and the
in-process posewire.local.Solver: one character in, its solved pose out.

    answer = solver.solve_pose(asset, [
        posewire.sample_clip_op("clip", 1.0),
        posewire.two_bone_ik_op("LeftHip", "LeftKnee", "LeftAnkle", target)])
    answer.pose          # (joints, 10) float32: t, q xyzw, s per joint
    answer.model_pose    # the same in model space
    answer.position("LeftAnkle")  # a model-space (x, y, z) numpy array

Targets are in model space: the skeleton's root space, the space of
answer.model_pose. numpy is needed for these calls only.
"""

from typing import NamedTuple

from posewire.poses import FLOATS_PER_JOINT, _vec3
from posewire.v1 import operations_pb2 as _ops
from posewire.v1 import posewire_pb2 as _pb
from posewire.v1 import types_pb2 as _types


def _numpy():
    try:
        import numpy
    except ImportError as error:
        raise ImportError("posewire: the numpy calls need numpy (Debian's "
                          "python3-numpy)") from error
    return numpy


def pose_from_array(array):
    """A posewire.v1.Pose from a (joints, 10) array (or any sequence that
    flattens to 10 floats per joint)."""
    numpy = _numpy()
    flat = numpy.asarray(array, dtype=numpy.float32).reshape(-1)
    if flat.size % FLOATS_PER_JOINT:
        raise ValueError(f"{flat.size} floats is not a whole number of "
                         f"{FLOATS_PER_JOINT}-float joints")
    return _types.Pose(transforms=flat.tolist())


def array_from_pose(pose):
    """A (joints, 10) float32 numpy array of a posewire.v1.Pose."""
    numpy = _numpy()
    return numpy.asarray(pose.transforms, dtype=numpy.float32).reshape(
        -1, FLOATS_PER_JOINT)


def sample_clip_op(clip, time):
    """An op that samples the clip named `clip` at `time` seconds."""
    return _ops.Operation(sample_clip=_ops.SampleClipOp(
        sample=_ops.ClipSample(clip=clip, time=float(time))))


def two_bone_ik_op(start_joint, mid_joint, end_joint, target, **fields):
    """An op that puts `end_joint` on the model-space `target` (x, y, z) by
    turning `start_joint` and `mid_joint`; `fields` are any other
    posewire.v1.TwoBoneIkOp fields (pole_vector as an (x, y, z) too)."""
    for name in ("pole_vector", "bend_goal", "mid_axis"):
        if name in fields and not isinstance(fields[name], _types.Vec3):
            fields[name] = _vec3(fields[name])
    return _ops.Operation(two_bone_ik=_ops.TwoBoneIkOp(
        start_joint=start_joint, mid_joint=mid_joint, end_joint=end_joint,
        target=_vec3(target), **fields))


class SolvedPose(NamedTuple):
    """One solved character: poses as (joints, 10) float32 arrays."""
    pose: object
    model_pose: object
    # posewire.v1.OperationResult per op (reached, error, warnings, ...).
    ops: list
    # The state stateful ops return, to send back with the next call.
    state: dict
    joint_names: list

    def joint(self, name):
        """The index of the joint called `name`."""
        return _joint_index(self.joint_names, name)

    def position(self, name):
        """The model-space position of joint `name`, a numpy (x, y, z)."""
        return self.model_pose[self.joint(name), :3]


def _joint_index(joint_names, name):
    try:
        return joint_names.index(name)
    except ValueError:
        raise KeyError(f"no joint {name!r}; the skeleton has "
                       f"{', '.join(joint_names[:8])}"
                       f"{', ...' if len(joint_names) > 8 else ''}") from None


class SolvesPoses:
    """solve_pose for anything with solve(posewire.v1.SolveRequest)."""

    def solve_pose(self, skeleton, ops, pose=None, clips=(), state=None,
                   dt=0.0, root=None):
        """Runs `ops` on one character and returns a SolvedPose.

        skeleton: a posewire.v1.Skeleton, or an asset from
          posewire.local.load (its skeleton and clips are sent).
        pose: the input local pose, (joints, 10); default: the rest pose.
        clips: posewire.v1.Clip messages the ops sample.
        state: the SolvedPose.state of the previous call, for stateful ops.
        """
        clips = list(clips)
        if hasattr(skeleton, "skeleton") and hasattr(skeleton, "clips"):
            clips = list(skeleton.clips.values()) + clips
            skeleton = skeleton.skeleton
        character = _pb.CharacterInput(
            id="character", skeleton=_pb.SkeletonRef(skeleton=skeleton),
            ops=list(ops), want_model_pose=True)
        if pose is not None:
            character.pose.CopyFrom(pose_from_array(pose))
        if root is not None:
            character.root.CopyFrom(root)
        for op_id, op_state in (state or {}).items():
            character.state[op_id].CopyFrom(op_state)
        response = self.solve(_pb.SolveRequest(
            clips=clips, characters=[character], dt=float(dt)))
        out = response.characters[0]
        return SolvedPose(pose=array_from_pose(out.pose),
                          model_pose=array_from_pose(out.model_pose),
                          ops=list(out.ops), state=dict(out.state),
                          joint_names=list(skeleton.joint_names))
