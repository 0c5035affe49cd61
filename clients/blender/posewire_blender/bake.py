"""Baking: solve a frame range on the server and key the result.

Every frame is solved first and keyed after, because keys written while
solving would change the input of the frames still to come (a key at one
frame changes the interpolation around it). The job steps one frame at a
time so the operator can run it from a modal timer (Blender stays
responsive, the progress bar moves, Esc cancels) or in a plain loop when run
from a script or in background mode.

Keys go either into the current action (REPLACE: the solved channels are
overwritten at the baked frames) or into a new action layered on top
(LAYER: the current action is pushed down into an NLA strip and left as it
was; mute or fade the layer to compare).
"""

import bpy
from mathutils import Euler

from . import conversion, posing, rig, runtime
from .conversion import FLOATS_PER_JOINT

SOLVE_TIMEOUT_SECONDS = 30.0


class BakeError(RuntimeError):
    """A bake that cannot go on; the message is for a report."""


class BakeJob:
    """Solves frames start..end of one armature, then keys them."""

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
        self.inputs = {}
        self.solved = {}
        self.error = None
        self._next = 0
        self._waiting = None  # (ticket, frame) in flight
        self._registered = False
        self._original_frame = self.scene.frame_current
        fps = self.scene.render.fps / self.scene.render.fps_base
        self._dt = 1.0 / fps
        runtime.RUNTIME.consumers[self.key] = self._receive
        runtime.RUNTIME.baking = True
        self._start()

    @property
    def progress(self):
        """Fraction of frames solved, 0..1."""
        return len(self.solved) / len(self.frames)

    def _start(self):
        self.scene.frame_set(self.frames[0])
        pose = self.layout.pose_floats(self.obj.pose.bones)
        builder = rig.RigBuilder(self.pw, self.obj, self.layout)
        ops = builder.operations(pose)
        ticket = runtime.RUNTIME.link.register(
            self.key, rig.skeleton_message(self.pw, self.layout), ops)
        self._waiting = (ticket, None)

    def _receive(self, result):
        if self._waiting is None or result.ticket != self._waiting[0]:
            return
        frame = self._waiting[1]
        self._waiting = None
        if not result.ok:
            self.error = result.message
        elif frame is None:
            self._registered = True
        else:
            self.solved[frame] = result.pose

    def _send_next(self):
        frame = self.frames[self._next]
        self._next += 1
        self.scene.frame_set(frame)
        pose = self.layout.pose_floats(self.obj.pose.bones)
        self.inputs[frame] = pose
        depsgraph = bpy.context.evaluated_depsgraph_get()
        builder = rig.RigBuilder(self.pw, self.obj, self.layout, depsgraph)
        first = frame == self.frames[0]
        message = builder.character_frame(self.key, pose, reset_state=first)
        ticket = runtime.RUNTIME.link.send_frame(
            self.key, message, 0.0 if first else self._dt, latest_only=False)
        self._waiting = (ticket, frame)

    def step(self):
        """Advances the job without blocking: takes any arrived answer and
        sends the next frame. Returns True when every frame is solved.
        Raises BakeError with the server's message on failure."""
        runtime.dispatch()
        if self.error:
            raise BakeError(self.error)
        if self._waiting is not None:
            return False
        if self._next < len(self.frames):
            self._send_next()
            return False
        return True

    def run(self, timeout=SOLVE_TIMEOUT_SECONDS, progress=None):
        """Runs the whole job in a loop (scripts, background mode)."""
        done = False
        while not done:
            sent = self._next
            if not runtime.pump_until(
                    lambda: self._waiting is None or self.error, timeout):
                raise BakeError(f"no answer from the server within "
                                f"{timeout:.0f} s (frame {sent})")
            done = self.step()
            if progress is not None:
                progress(self.progress)
        self.finish()

    def finish(self):
        """Writes the keys and restores the scene's frame."""
        self.close()
        write_keys(self.obj, self.layout, self.frames, self.solved,
                   self.inputs, self.mode)
        self.scene.frame_set(self._original_frame)

    def close(self):
        runtime.RUNTIME.consumers.pop(self.key, None)
        runtime.RUNTIME.baking = False


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
