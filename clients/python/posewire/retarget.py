"""Helper for the retarget operation: another skeleton's motion onto the
character's, chain by chain (posewire.v1.RetargetOp,
solver_core/retarget/retarget.h).

    walk = local.load("tests/data/cmu_131_01_walk.bvh")
    daz = local.load("tests/data/cmu_02_03_run_daz.bvh")
    answer = local.Solver().solve_pose(daz, [retarget_op(walk, time=1.0)])

Chains are detected by name (the biped namings full_body_biped_ik knows)
unless a posewire.v1.RetargetMapping is given.
"""

from typing import Optional

from posewire.calls import pose_from_array
from posewire.v1 import operations_pb2, types_pb2


def retarget_op(source, clip=None, time: float = 0.0, pose=None, *,
                mapping=None, root_scale: Optional[float] = None,
                lock_feet: bool = False, match_hands: bool = False):
    """A posewire.v1.Operation with a retarget op.

    source: the source skeleton, a posewire.v1.Skeleton or an asset from
      posewire.local.load.
    The source pose is either `clip` sampled at `time` (seconds) -- a
    posewire.v1.Clip, a clip name of the asset, or None for the asset's
    first clip -- or `pose`, a (joints, 10) array or posewire.v1.Pose.
    mapping: a posewire.v1.RetargetMapping; None detects the chains.
    root_scale: multiplies the pelvis's motion; None: the ratio of the
      legs' lengths.
    lock_feet: the feet pass (RetargetFeet): feet held where the source's
      are planted (its state lives in the character's state).
    match_hands: the hands pass (RetargetHands): hands put where the
      scaled source puts them.
    """
    skeleton = getattr(source, "skeleton", source)
    op = operations_pb2.RetargetOp(skeleton=skeleton)
    if pose is not None:
        if not isinstance(pose, types_pb2.Pose):
            pose = pose_from_array(pose)
        op.pose.CopyFrom(pose)
    else:
        if clip is None or isinstance(clip, str):
            clips = getattr(source, "clips", {})
            if not clips:
                raise ValueError("retarget_op: give a clip or a pose (the "
                                 "source has no clips)")
            name = clip if clip is not None else next(iter(clips))
            if name not in clips:
                raise ValueError(f"retarget_op: the source has no clip "
                                 f"'{name}' (it has {', '.join(clips)})")
            clip = clips[name]
        op.clip.clip.CopyFrom(clip)
        op.clip.time = float(time)
    if mapping is not None:
        op.mapping.CopyFrom(mapping)
    if root_scale is not None:
        op.root_scale = float(root_scale)
    if lock_feet:
        op.feet.lock_contacts = True
    if match_hands:
        op.hands.match_source = True
    return operations_pb2.Operation(retarget=op)
