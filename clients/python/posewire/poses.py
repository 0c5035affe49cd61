"""Packing helpers: poses travel as 10 floats per joint,
tx ty tz  qx qy qz qw  sx sy sz (see proto/posewire/v1/types.proto).

Plain Python lists and tuples everywhere; pose_array returns a numpy array
when numpy is installed, so numpy is never required.
"""

import math
from typing import NamedTuple, Sequence, Tuple

from posewire.v1 import types_pb2

FLOATS_PER_JOINT = 10


class Transform(NamedTuple):
    """One joint: translation (x, y, z), unit rotation (x, y, z, w), scale."""
    translation: Tuple[float, float, float] = (0.0, 0.0, 0.0)
    rotation: Tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0)
    scale: Tuple[float, float, float] = (1.0, 1.0, 1.0)

    def packed(self):
        return [*self.translation, *self.rotation, *self.scale]


def axis_angle(axis, degrees):
    """The unit quaternion (x, y, z, w) rotating `degrees` about `axis`."""
    norm = math.sqrt(sum(c * c for c in axis))
    if norm == 0.0:
        raise ValueError("axis_angle: zero axis")
    half = math.radians(degrees) / 2.0
    s = math.sin(half) / norm
    return (axis[0] * s, axis[1] * s, axis[2] * s, math.cos(half))


def _vec3(values):
    """A posewire.v1.Vec3 from any three numbers (a tuple, a numpy row)."""
    x, y, z = (float(v) for v in values)
    return types_pb2.Vec3(x=x, y=y, z=z)


def _flatten(transforms):
    floats = []
    for i, t in enumerate(transforms):
        values = t.packed() if isinstance(t, Transform) else list(t)
        if len(values) != FLOATS_PER_JOINT:
            raise ValueError(f"joint {i}: {len(values)} floats, expected "
                             f"{FLOATS_PER_JOINT} (t, q xyzw, s)")
        floats.extend(float(v) for v in values)
    return floats


def pack_pose(transforms):
    """A posewire.v1.Pose from Transforms or 10-float sequences per joint."""
    return types_pb2.Pose(transforms=_flatten(transforms))


def unpack_pose(pose):
    """The Transforms of a posewire.v1.Pose (or of a flat float sequence)."""
    floats = list(pose.transforms) if hasattr(pose, "transforms") else list(pose)
    if len(floats) % FLOATS_PER_JOINT:
        raise ValueError(f"{len(floats)} floats is not a whole number of "
                         f"{FLOATS_PER_JOINT}-float joints")
    return [Transform(tuple(floats[i:i + 3]), tuple(floats[i + 3:i + 7]),
                      tuple(floats[i + 7:i + 10]))
            for i in range(0, len(floats), FLOATS_PER_JOINT)]


def pose_array(pose):
    """The pose as a (joints, 10) numpy float32 array when numpy is
    installed, otherwise as a list of 10-float lists."""
    floats = list(pose.transforms) if hasattr(pose, "transforms") else list(pose)
    rows = [floats[i:i + FLOATS_PER_JOINT]
            for i in range(0, len(floats), FLOATS_PER_JOINT)]
    try:
        import numpy
    except ImportError:
        return rows
    return numpy.asarray(rows, dtype=numpy.float32).reshape(-1, FLOATS_PER_JOINT)


def make_skeleton(joint_names: Sequence[str], parents: Sequence[int],
                  rest=None):
    """A posewire.v1.Skeleton. rest: one Transform (or 10 floats) per joint,
    or translations (x, y, z) per joint; default: identity transforms."""
    if len(joint_names) != len(parents):
        raise ValueError(f"{len(joint_names)} names for {len(parents)} parents")
    if rest is None:
        rest = [Transform()] * len(joint_names)
    rest = [Transform(tuple(r)) if not isinstance(r, Transform) and len(r) == 3
            else r for r in rest]
    return types_pb2.Skeleton(joint_names=list(joint_names),
                              parents=list(parents),
                              rest_pose=_flatten(rest))


def rotation_track(joint, times, rotations,
                   interpolation=types_pb2.INTERPOLATION_LINEAR):
    """A posewire.v1.JointTracks animating one joint's rotation: keys at
    `times` (seconds) with unit quaternions (x, y, z, w)."""
    if len(times) != len(rotations):
        raise ValueError(f"{len(times)} times for {len(rotations)} rotations")
    values = [float(c) for q in rotations for c in q]
    return types_pb2.JointTracks(
        joint=joint,
        rotation=types_pb2.Track(times=list(times), values=values,
                                 interpolation=interpolation))
