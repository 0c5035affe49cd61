"""Helpers for the ground and look_at operations (posewire.v1).

The ground op plants feet on uneven ground (FinalIK Grounder's model,
solver_core/analytic_ik/ground.h); look_at turns a spine, head and eyes
toward a target (FinalIK LookAtIK's). These build their messages from
plain tuples; every field left as None keeps the server's default.

    op = ground_op("Hips", [("LeftHip", "LeftKnee", "LeftAnkle", "LeftToe"),
                            ("RightHip", "RightKnee", "RightAnkle")])
    update = ground_update(1, [ground_hit((0, 0.2, 0)), ground_hit(None)])
"""

from typing import Optional, Sequence

from posewire.poses import _vec3
from posewire.v1 import operations_pb2, posewire_pb2


def ground_hit(point, normal=None):
    """A posewire.v1.GroundHit: the ground under one foot in model space, as
    a raycast found it. point None is a miss (the foot is left to the clip);
    normal None is straight up (the op's up)."""
    if point is None:
        return operations_pb2.GroundHit(hit=False)
    hit = operations_pb2.GroundHit(hit=True, point=_vec3(point))
    if normal is not None:
        hit.normal.CopyFrom(_vec3(normal))
    return hit


def heightfield(heights: Sequence[Sequence[float]], spacing, origin=(0, 0)):
    """A posewire.v1.Heightfield from rows of heights: heights[r][c] lies at
    (origin[0] + c * spacing, origin[1] + r * spacing) on the x-z plane."""
    rows = len(heights)
    columns = len(heights[0]) if rows else 0
    if any(len(row) != columns for row in heights):
        raise ValueError("every row of heights needs the same length")
    return operations_pb2.Heightfield(
        columns=columns, rows=rows, spacing=float(spacing),
        origin_x=float(origin[0]), origin_z=float(origin[1]),
        heights=[float(h) for row in heights for h in row])


def ground_op(pelvis, legs, samples=None, field=None, *,
              floor_height: Optional[float] = None,
              max_step_height: Optional[float] = None,
              max_tilt: Optional[float] = None,
              weight: Optional[float] = None,
              pelvis_speed: Optional[float] = None,
              foot_speed: Optional[float] = None,
              up=None,
              state_key: str = ""):
    """A posewire.v1.Operation with a ground op. legs: (hip, knee, ankle) or
    (hip, knee, ankle, toe) joint names; samples: one ground_hit per leg, or
    None to give them in each frame's ground_update; field: a heightfield
    for the server to sample instead; up: model space's up as (x, y, z),
    e.g. (0, 0, 1) for a Z-up rig (None: +Y)."""
    op = operations_pb2.GroundOp(pelvis=pelvis, state_key=state_key)
    if up is not None:
        op.up.CopyFrom(_vec3(up))
    for leg in legs:
        if len(leg) not in (3, 4):
            raise ValueError(f"a leg is hip, knee, ankle[, toe], not {leg}")
        op.legs.add(hip=leg[0], knee=leg[1], ankle=leg[2],
                    toe=leg[3] if len(leg) == 4 else "")
    if samples is not None:
        op.samples.extend(samples)
    if field is not None:
        op.heightfield.CopyFrom(field)
    for name, value in (("floor_height", floor_height),
                        ("max_step_height", max_step_height),
                        ("max_tilt", max_tilt), ("weight", weight),
                        ("pelvis_speed", pelvis_speed),
                        ("foot_speed", foot_speed)):
        if value is not None:
            setattr(op, name, float(value))
    return operations_pb2.Operation(ground=op)


def ground_update(op_index, hits, weight: Optional[float] = None):
    """A posewire.v1.OpUpdate giving ground op `op_index` this frame's
    ground: one ground_hit per leg, in the op's order."""
    update = posewire_pb2.OpUpdate(op=op_index, ground_samples=list(hits))
    if weight is not None:
        update.weight = float(weight)
    return update


def look_at_op(spine, head, target=None, eyes=(), **params):
    """A posewire.v1.Operation with a look_at op: spine joints from the hips
    up, the head, optional eyes, a model-space target (None: each frame's
    update gives it). params: any other LookAtOp field (weight,
    body_weight, clamp_weight, ...; character_forward as an (x, y, z),
    axes as a list of them)."""
    op = operations_pb2.LookAtOp(spine=list(spine), head=head,
                                 eyes=list(eyes))
    if target is not None:
        op.target.CopyFrom(_vec3(target))
    for name, value in params.items():
        if name == "character_forward":
            op.character_forward.CopyFrom(_vec3(value))
        elif name == "axes":
            op.axes.extend(_vec3(axis) for axis in value)
        else:
            setattr(op, name, value)
    return operations_pb2.Operation(look_at=op)


def target_update(op_index, target, weight: Optional[float] = None):
    """A posewire.v1.OpUpdate moving an IK or look_at op's target."""
    update = posewire_pb2.OpUpdate(op=op_index, target=_vec3(target))
    if weight is not None:
        update.weight = float(weight)
    return update
