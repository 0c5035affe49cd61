"""Baking: a frame range solved on the server in one Bake call, then keyed.

Blender evaluates every frame of the range first, as live mode does on a
frame change (scene.frame_set: the action's pose, each target where it is
at that frame); bake_request turns those frames into one BakeRequest (the
poses as a source clip keyed at exactly the frames' times, the rig's ops,
each frame's moved targets as op updates) and the server runs the ops frame
after frame with their state carried (spring bones), as a Session fed one
frame at a time would, in one call instead of a round trip per frame. Keys
are written after the whole answer arrived, because keys written while
evaluating would change the input of the frames still to come (a key at one
frame changes the interpolation around it).

Threading, the simplest design that keeps Blender responsive: the link's
worker thread makes the call (it owns the channel, token and TLS of the
connection) and queues progress and the result, which `step` picks up
without blocking. `step` also evaluates the frames a few at a time, so the
modal operator runs it from a timer: the progress bar moves and Esc cancels
(`close` cancels the call; the server stops at its next message of frames,
and frames_per_message is kept small so that comes soon). `run` is the same
in a plain loop, for scripts and background mode.

Keys go either into the current action (REPLACE: the solved channels are
overwritten at the baked frames) or into a new action layered on top
(LAYER: the current action is pushed down into an NLA strip and left as it
was; mute or fade the layer to compare).
"""

import time

import bpy
from mathutils import Euler

from . import bake_request, conversion, posing, rig, runtime
from .conversion import FLOATS_PER_JOINT
from .link import BakeProgress

SOLVE_TIMEOUT_SECONDS = 30.0
# Evaluating frames in a modal step: at most this long, then the UI runs.
EVALUATE_SECONDS_PER_STEP = 0.02
# Messages a bake's frames come in, about: progress and cancel granularity.
MESSAGES_PER_BAKE = 50


class BakeError(RuntimeError):
    """A bake that cannot go on; the message is for a report."""


class BakeJob:
    """Evaluates frames start..end of one armature, bakes them on the
    server in one call, then keys them."""

    def __init__(self, context, obj, start, end, mode):
        if end < start:
            raise BakeError(f"bake range {start}..{end} is empty")
        self.scene = context.scene
        self.obj = obj
        self.frames = list(range(start, end + 1))
        self.mode = mode
        self.pw = runtime.posewire_package()
        self.layout = conversion.RigLayout(obj.data)
        self.key = f"{obj.name}/bake"
        self.inputs = {}  # frame -> the input pose floats Blender evaluated
        self.solved = {}  # frame -> the server's pose floats
        self.error = None
        self.baked = None  # the posewire.BakedClip, once it arrived
        self._ops, self._roots = [], []
        self._ticket = None
        self._frames_baked = 0
        self._original_frame = self.scene.frame_current
        self._fps = self.scene.render.fps / self.scene.render.fps_base
        # The first frame now: a set-up that cannot be sent fails here.
        try:
            self._evaluate(self.frames[0])
        except rig.SetupError:
            self.scene.frame_set(self._original_frame)
            raise
        runtime.RUNTIME.consumers[self.key] = self._receive
        runtime.RUNTIME.baking = True

    @property
    def progress(self):
        """Fraction done, 0..1: evaluating is the first half, the server's
        frames the second."""
        if self.baked is not None:
            return 1.0
        done = len(self.inputs) + self._frames_baked
        return done / (2 * len(self.frames))

    def _evaluate(self, frame):
        self.scene.frame_set(frame)
        pose = self.layout.pose_floats(self.obj.pose.bones)
        depsgraph = bpy.context.evaluated_depsgraph_get()
        builder = rig.RigBuilder(self.pw, self.obj, self.layout, depsgraph)
        self._ops.append(builder.operations(pose))
        self._roots.append(rig.root_message(self.pw, self.obj))
        self.inputs[frame] = pose

    def _evaluate_some(self):
        deadline = time.monotonic() + EVALUATE_SECONDS_PER_STEP
        while len(self.inputs) < len(self.frames):
            self._evaluate(self.frames[len(self.inputs)])
            if time.monotonic() > deadline:
                return

    def request(self):
        """The posewire.v1.BakeRequest of the evaluated frames. Raises
        BakeError for a per-frame change a bake cannot carry."""
        pw = self.pw
        builder = rig.RigBuilder(pw, self.obj, self.layout)
        names = builder.setup_names()
        try:
            updates = bake_request.frame_updates(pw, self._ops, names,
                                                 self.frames, self._roots)
        except bake_request.FrameChangeError as error:
            raise BakeError(str(error)) from None
        poses = [self.inputs[frame] for frame in self.frames]
        return pw.bake_request(
            rig.skeleton_message(pw, self.layout),
            bake_request.source_clip(pw, "blender", poses, self._fps),
            bake_request.base_ops(pw, self._ops),
            frame_rate=self._fps, frame_count=len(self.frames),
            frame_updates=updates, root=self._roots[0],
            frames_per_message=max(1, len(self.frames) // MESSAGES_PER_BAKE))

    def _send(self):
        self._ticket = runtime.RUNTIME.link.bake(self.key, self.request(),
                                                 self.layout.names)

    def _receive(self, result):
        if result.ticket != self._ticket:
            return
        if isinstance(result, BakeProgress):
            self._frames_baked = result.done
            return
        if not result.ok:
            self.error = result.message
            return
        baked = result.baked
        if len(baked.poses) != len(self.frames):
            self.error = (f"the server baked {len(baked.poses)} frames of "
                          f"{len(self.frames)}")
            return
        for frame, pose in zip(self.frames, baked.poses):
            self.solved[frame] = pose.reshape(-1).tolist()
        self.baked = baked

    def step(self):
        """Advances the job without blocking: evaluates some frames, then
        sends the bake, then takes what arrived. Returns True when every
        frame is solved. Raises BakeError with the server's message on
        failure."""
        runtime.dispatch()
        if self.error:
            raise BakeError(self.error)
        if len(self.inputs) < len(self.frames):
            self._evaluate_some()
            return False
        if self._ticket is None:
            self._send()
            return False
        return self.baked is not None

    def run(self, timeout=SOLVE_TIMEOUT_SECONDS, progress=None):
        """Runs the whole job in a loop (scripts, background mode). timeout:
        seconds the server may go without sending frames."""
        while not self.step():
            if progress is not None:
                progress(self.progress)
            if self._ticket is None:
                continue
            seen = self._frames_baked
            if not runtime.pump_until(
                    lambda: (self._frames_baked != seen or self.error or
                             self.baked is not None), timeout):
                raise BakeError(
                    f"no answer from the server within {timeout:.0f} s "
                    f"({seen} of {len(self.frames)} frames baked)")
        if progress is not None:
            progress(self.progress)
        self.finish()

    def finish(self):
        """Writes the keys and shows the scene's frame with them."""
        self.close()
        write_keys(self.obj, self.layout, self.frames, self.solved,
                   self.inputs, self.mode)
        self.scene.frame_set(self._original_frame)

    def close(self):
        """Ends the job (cancelled, failed or done): a bake still running
        on the server is cancelled, and the scene goes back to its frame."""
        link = runtime.RUNTIME.link
        if self._ticket is not None and self.baked is None and link:
            link.cancel_bake(self._ticket)
        runtime.RUNTIME.consumers.pop(self.key, None)
        runtime.RUNTIME.baking = False
        self.scene.frame_set(self._original_frame)


def _action_for(obj, mode):
    """The action to key into: the current one (REPLACE), or a new one on
    top of the current one pushed down to the NLA (LAYER)."""
    animation = obj.animation_data or obj.animation_data_create()
    action = animation.action
    if mode == "REPLACE":
        if action is None:
            action = bpy.data.actions.new(f"{obj.name}_posewire")
            animation.action = action
        return action
    if action is not None:
        track = animation.nla_tracks.new()
        track.name = "posewire base"
        strip = track.strips.new(action.name, int(action.frame_range[0]),
                                 action)
        strip.blend_type = "REPLACE"
    layer = bpy.data.actions.new(f"{obj.name}_posewire")
    animation.action = layer
    animation.action_blend_type = "REPLACE"
    animation.action_influence = 1.0
    return layer


def _fcurve(action, path, index, group):
    curve = action.fcurves.find(path, index=index)
    if curve is None:
        curve = action.fcurves.new(path, index=index, action_group=group)
    return curve


def write_keys(obj, layout, frames, solved, inputs, mode):
    """Keys every joint the solve changed at some frame: its rotation in
    the bone's rotation mode, and its location where it moved."""
    rotated, translated = set(), set()
    for frame in frames:
        r, t = posing.changed_joints(solved[frame], inputs[frame])
        rotated |= r
        translated |= {i for i in t if not layout.connected[i]}
    action = _action_for(obj, mode)
    for i in sorted(rotated | translated):
        name = layout.names[i]
        pose_bone = obj.pose.bones[name]
        prefix = f'pose.bones["{bpy.utils.escape_identifier(name)}"]'
        rotation_path = posing.rotation_path(pose_bone)
        previous = None
        for frame in frames:
            local = conversion.unpack_matrix(solved[frame],
                                             i * FLOATS_PER_JOINT)
            basis = layout.basis_matrix(i, local)
            channels = []
            if i in rotated:
                values = posing.rotation_values(pose_bone, basis, previous)
                if rotation_path == "rotation_euler":
                    previous = Euler(values, pose_bone.rotation_mode)
                channels.append((rotation_path, values))
            if i in translated:
                channels.append(("location", list(basis.translation)))
            for path, values in channels:
                for index, value in enumerate(values):
                    _fcurve(action, f"{prefix}.{path}", index,
                            name).keyframe_points.insert(
                                frame, value, options={"REPLACE", "FAST"})
    for curve in action.fcurves:
        curve.update()
