"""What a bake sends: Blender's evaluated frames as one BakeRequest.

The Bake RPC samples a source clip for each frame's input pose and takes
the ops once, with per-frame inputs as op updates (OpUpdate, by op index).
So the frames Blender evaluated become:

- the source clip: each joint's translation, rotation and scale keyed at
  exactly the times the bake samples (start 0, frame i at i / frame_rate
  rounded to float as the server rounds it), with step interpolation, so
  each sampled input is Blender's pose bit for bit. A track that never
  changes is one key.
- the ops, built on the first frame. A two-bone hinge axis (mid_axis),
  which live mode derives from each frame's pose (RigBuilder.hinge_axis)
  and an OpUpdate cannot carry, is taken from the first frame where the
  limb is bent: a hinge is fixed in its joint's space, so it differs from
  the per-frame axis by rounding only (a straight limb's fallback, the
  bone's X axis, is used only when the limb never bends).
- frame_updates: for every later frame, the fields of each op that differ
  from the first frame's and that an OpUpdate carries (targets, poles,
  bend goals, biped effectors, ground hits, weights, spring gravity).

  The armature's placement goes in the same entries (BakeFrameUpdates
  root) where it differs from the first frame's, so spring chains, which
  swing in world space, follow an animated armature object.

An op field an OpUpdate cannot carry (a ground set-up's up axis when the
armature turns, an animated floor height) must stay as it is on the first
frame: otherwise the bake is refused with the set-up, the field and the
frame named, rather than baked wrong.

Only the posewire messages are used (no bpy), so this is plain data work.
"""

import struct

from .conversion import FLOATS_PER_JOINT

# Per op kind: (op field, OpUpdate field) pairs an update replaces.
_UPDATABLE = {
    "two_bone_ik": (("target", "target"), ("bend_goal", "bend_goal"),
                    ("pole_vector", "pole_vector"),
                    ("end_rotation", "end_rotation"), ("weight", "weight")),
    "aim_ik": (("target", "target"), ("pole_vector", "pole_vector"),
               ("weight", "weight")),
    "ccd_ik": (("target", "target"), ("weight", "weight")),
    "fabrik_ik": (("target", "target"), ("weight", "weight")),
    "look_at": (("target", "target"), ("weight", "weight")),
    "ground": (("samples", "ground_samples"), ("weight", "weight")),
    "full_body_biped_ik": (("ik_position_weight", "weight"),),
    "spring_bones": (("gravity", "gravity"),),
}

# Fields derived from each frame's pose that no update carries: one value
# for the whole bake (see above), not a change to refuse.
_DERIVED = {"two_bone_ik": ("mid_axis",)}
_STRAIGHT_LIMB_AXIS = (1.0, 0.0, 0.0)


class FrameChangeError(ValueError):
    """A per-frame change a bake cannot carry; the message says which."""


def float32(value):
    """`value` rounded to a 32-bit float, as a proto float field stores
    it."""
    return struct.unpack("f", struct.pack("f", value))[0]


def frame_times(count, frame_rate):
    """The times the Bake RPC samples: start_time (0) + i / frame_rate in
    double, frame_rate being the float the request carries, rounded to
    float."""
    rate = float32(frame_rate)
    return [float32(i / rate) for i in range(count)]


def _track(pw, times, values):
    """A step Track of per-frame values (lists of floats); one key when
    they never change."""
    if all(v == values[0] for v in values):
        return pw.types.Track(times=[0.0], values=values[0],
                              interpolation=pw.types.INTERPOLATION_STEP)
    flat = [f for v in values for f in v]
    return pw.types.Track(times=times, values=flat,
                          interpolation=pw.types.INTERPOLATION_STEP)


def source_clip(pw, name, poses, frame_rate):
    """A posewire.v1.Clip keying `poses` (flat floats per frame) at the
    bake's frame times."""
    times = frame_times(len(poses), frame_rate)
    joints = len(poses[0]) // FLOATS_PER_JOINT
    clip = pw.types.Clip(name=name, duration=times[-1])
    for j in range(joints):
        at = j * FLOATS_PER_JOINT
        tracks = clip.joints.add(joint=j)
        for field, start, width in (("translation", 0, 3),
                                    ("rotation", 3, 4), ("scale", 7, 3)):
            values = [pose[at + start:at + start + width] for pose in poses]
            getattr(tracks, field).CopyFrom(_track(pw, times, values))
    return clip


def _without(op_inner, fields):
    copy = type(op_inner)()
    copy.CopyFrom(op_inner)
    for field in fields:
        copy.ClearField(field)
    return copy


def _per_frame_fields(kind):
    """The fields of an op of `kind` that may differ from frame to frame."""
    fields = [f for f, _ in _UPDATABLE.get(kind, ())]
    fields += _DERIVED.get(kind, ())
    if kind == "full_body_biped_ik":
        fields.append("effectors")  # by id, in EffectorUpdate
    return fields


def base_ops(pw, frame_ops):
    """The ops the bake sends: the first frame's, with each two-bone
    hinge axis from the first frame where its limb is bent."""
    out = []
    for index, op in enumerate(frame_ops[0]):
        copy = pw.ops.Operation()
        copy.CopyFrom(op)
        if copy.WhichOneof("op") == "two_bone_ik":
            for ops in frame_ops:
                axis = ops[index].two_bone_ik.mid_axis
                if (axis.x, axis.y, axis.z) != _STRAIGHT_LIMB_AXIS:
                    copy.two_bone_ik.mid_axis.CopyFrom(axis)
                    break
        out.append(copy)
    return out


def _update(pw, index, kind, base, op):
    """The OpUpdate taking op `index` from `base` to `op` (inner messages
    of kind `kind`), or None when nothing an update carries changed."""
    update = pw.pb.OpUpdate(op=index)
    changed = False
    for op_field, update_field in _UPDATABLE.get(kind, ()):
        value = getattr(op, op_field)
        if value == getattr(base, op_field):
            continue
        changed = True
        target = getattr(update, update_field)
        if isinstance(value, float):
            setattr(update, update_field, value)
        elif hasattr(value, "CopyFrom"):
            target.CopyFrom(value)
        else:
            target.extend(value)
    if kind == "full_body_biped_ik" and list(op.effectors) != list(
            base.effectors):
        changed = True
        for e in op.effectors:
            update.effectors.add(id=e.id, target=e.position,
                                 position_weight=e.position_weight)
    return update if changed else None


def frame_updates(pw, frame_ops, names, frames, roots=None):
    """BakeFrameUpdates per frame: what moved since the first frame.

    frame_ops: each frame's ops as RigBuilder.operations built them;
    names: the set-up of each op, and frames the Blender frame numbers,
    for messages; roots (optional): the armature's placement per frame,
    sent for the frames where it differs from the first (the request's
    root). Raises FrameChangeError for a change no update carries."""
    first = frame_ops[0]
    out = []
    for i, (frame, ops) in enumerate(zip(frames, frame_ops)):
        entry = pw.pb.BakeFrameUpdates()
        if roots is not None and roots[i] != roots[0]:
            entry.root.CopyFrom(roots[i])
        for index, (base_op, op) in enumerate(zip(first, ops)):
            kind = op.WhichOneof("op")
            base, current = getattr(base_op, kind), getattr(op, kind)
            moving = _per_frame_fields(kind)
            if _without(base, moving) != _without(current, moving):
                raise FrameChangeError(_fixed_change_message(
                    names[index], kind, base, current, moving, frame,
                    frames[0]))
            update = _update(pw, index, kind, base, current)
            if update is not None:
                entry.op_updates.append(update)
        out.append(entry)
    # Trailing frames with no update need no entry.
    while out and not out[-1].op_updates and not out[-1].HasField("root"):
        out.pop()
    return out


def _fixed_change_message(name, kind, base, current, updatable, frame,
                          first_frame):
    changed = sorted(
        {f.name for f, _ in base.ListFields()} |
        {f.name for f, _ in current.ListFields()})
    changed = [f for f in changed if f not in updatable and
               getattr(base, f) != getattr(current, f)]
    carried = ", ".join(f for f, _ in _UPDATABLE.get(kind, ())) or "nothing"
    return (f"{name}: {kind} {', '.join(changed)} changes between frame "
            f"{first_frame} and frame {frame}, and a bake updates only its "
            f"{carried} per frame; keep it still over the range, or bake "
            "the frames where it differs separately")


