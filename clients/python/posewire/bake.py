"""Bakes: a clip through a pipeline on the server, frames streamed back
(the Bake RPC, proto/posewire/v1/posewire.proto).

    walk = local.load("tests/data/cmu_131_01_walk.bvh")
    baked = client.bake(walk, ops=[posewire.two_bone_ik_op(...)],
                        frame_rate=60, on_progress=print)
    baked.poses          # (frames, joints, 10) float32
    baked.frame(10).position("LeftAnkle")

Frame i samples the source clip at start_time + i / frame_rate and runs the
ops with their state carried from frame to frame, as a Session character
sent one frame per frame time would, bit for bit; one call replaces a
round trip per frame. `bake_request` builds the posewire.v1.BakeRequest;
Client.bake sends it and gathers the frames with a FrameGatherer.

Cancelling: on_progress(done, total) returning False cancels the call, which
then raises PosewireError CANCELLED; the frames that arrived before are
final and ride on the error as `partial` (a BakedClip), as they do when a
frame fails on the server.
"""

from typing import NamedTuple

from posewire.calls import SolvedPose, _joint_index, _numpy
from posewire.poses import FLOATS_PER_JOINT
from posewire.v1 import posewire_pb2 as _pb
from posewire.v1 import types_pb2 as _types


class BakedClip(NamedTuple):
    """A bake's frames, in order. Poses are float32 numpy arrays."""
    # (frames, joints, 10): t, q xyzw, s per joint, local space.
    poses: object
    # The same in model space, or None unless want_model_pose.
    model_poses: object
    # (frames,) float32: each frame's time in seconds.
    times: object
    # Per frame, a posewire.v1.OperationResult per op (the source is none).
    ops: list
    # The state after the last frame: the next bake's (or Solve's) state.
    state: dict
    # The skeleton's content hash: pass it as the next call's skeleton.
    skeleton_hash: str
    joint_names: list
    # Frames the bake was to make (more than len(poses) when cut short).
    frames_total: int

    def frame(self, i):
        """Frame i as a SolvedPose (its state: the final one on the last
        frame, {} on the others)."""
        last = i in (-1, len(self.poses) - 1)
        model = None if self.model_poses is None else self.model_poses[i]
        return SolvedPose(pose=self.poses[i], model_pose=model,
                          ops=self.ops[i], state=self.state if last else {},
                          joint_names=self.joint_names)

    def joint(self, name):
        """The index of the joint called `name`."""
        return _joint_index(self.joint_names, name)


def _split_asset(skeleton):
    """(skeleton message or hash, {name: Clip}) of a skeleton, a content
    hash or an asset from posewire.local.load."""
    if hasattr(skeleton, "skeleton") and hasattr(skeleton, "clips"):
        return skeleton.skeleton, dict(skeleton.clips)
    return skeleton, {}


def _skeleton_ref(skeleton):
    if isinstance(skeleton, str):
        return _pb.SkeletonRef(hash=skeleton)
    return _pb.SkeletonRef(skeleton=skeleton)


def _source_clip(clip, known):
    """The source's name, adding a Clip message to `known` under its name
    ("source" when it has none); None: no source (the rest pose)."""
    if clip is None:
        return None
    if isinstance(clip, _types.Clip):
        name = clip.name or "source"
        if name not in known:
            if not clip.name:
                clip = _types.Clip(name=name, duration=clip.duration,
                                   joints=clip.joints)
            known[name] = clip
        return name
    if clip not in known:
        raise ValueError(f"bake: no clip '{clip}' among the asset's and "
                         f"`clips` ({', '.join(known) or 'none given'})")
    return clip


def _frame_updates(entries):
    """BakeFrameUpdates per frame from lists of OpUpdate (or None)."""
    out = []
    for entry in entries or ():
        if isinstance(entry, _pb.BakeFrameUpdates):
            out.append(entry)
        else:
            out.append(_pb.BakeFrameUpdates(op_updates=list(entry or ())))
    return out


def bake_request(skeleton, clip=None, ops=(), *, clips=(), frame_rate=None,
                 frame_count=None, start_time=0.0, loop=False,
                 frame_updates=None, timed_ops=(), state=None, root=None,
                 want_model_pose=False, frames_per_message=0,
                 rotation_interpolation=None):
    """A posewire.v1.BakeRequest (see Client.bake for the arguments)."""
    skeleton, asset_clips = _split_asset(skeleton)
    known = dict(asset_clips)
    for extra in clips:
        known.setdefault(extra.name, extra)
    if clip is None and asset_clips:
        clip = next(iter(asset_clips))
    source = _source_clip(clip, known)
    request = _pb.BakeRequest(
        skeleton=_skeleton_ref(skeleton), clips=list(known.values()),
        ops=list(ops), start_time=float(start_time),
        frame_count=int(frame_count or 0), want_model_pose=want_model_pose,
        frames_per_message=int(frames_per_message),
        timed_ops=[int(i) for i in timed_ops],
        frame_updates=_frame_updates(frame_updates))
    if source is not None:
        request.source.clip = source
        request.source.loop = bool(loop)
        if rotation_interpolation is not None:
            request.source.rotation_interpolation = rotation_interpolation
    if frame_rate is not None:
        request.frame_rate = float(frame_rate)
    if root is not None:
        request.root.CopyFrom(root)
    for op_id, op_state in (state or {}).items():
        request.state[op_id].CopyFrom(op_state)
    return request


class FrameGatherer:
    """The frames of a bake as they arrive, flattened for numpy."""

    def __init__(self, joint_names):
        self.joint_names = joint_names
        self.poses, self.model_poses, self.times, self.ops = [], [], [], []
        self.state, self.skeleton_hash = {}, ""
        self.done = self.total = 0

    def add(self, message):
        for frame in message.frames:
            self.poses.extend(frame.pose.transforms)
            self.model_poses.extend(frame.model_pose.transforms)
            self.times.append(frame.time)
            self.ops.append(list(frame.ops))
        self.done, self.total = message.frames_done, message.frames_total
        if message.done:
            self.state = dict(message.state)
            self.skeleton_hash = message.skeleton_hash

    def clip(self):
        numpy = _numpy()

        count = len(self.times)

        def frames(floats):
            joints = len(floats) // (FLOATS_PER_JOINT * count) if count else 0
            return numpy.asarray(floats, dtype=numpy.float32).reshape(
                count, joints, FLOATS_PER_JOINT)

        return BakedClip(
            poses=frames(self.poses),
            model_poses=frames(self.model_poses) if self.model_poses
            else None,
            times=numpy.asarray(self.times, dtype=numpy.float32),
            ops=self.ops, state=self.state,
            skeleton_hash=self.skeleton_hash,
            joint_names=self.joint_names, frames_total=self.total)
