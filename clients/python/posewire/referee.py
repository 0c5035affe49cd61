"""Helpers for a game server's referee: the plausibility op
(posewire.v1.PlausibilityOp, solver_core/referee/plausibility.h) and its
report.

    session.register_rig("referee", "hero", [plausibility_op()])
    ...
    result = session.frame([pb.CharacterFrame(character_id="p1",
                                              pose=claimed, root=placement)],
                           dt=1 / 60)
    for v in violations(result.characters[0].ops[0]):
        print(v.check, v.joint, v.measured, v.bound)

First in a rig the op checks the pose the client claims; it never changes
it. The frames before are the op's state: a Session keeps them, a Solve
returns them in CharacterOutput.state to send back with the next call.
"""

from typing import Iterable, List, NamedTuple, Optional

from posewire.v1 import operations_pb2

_CHECK_PREFIX = "PLAUSIBILITY_CHECK_"


class Violation(NamedTuple):
    """One implausible measure: check is e.g. "angular_velocity"."""
    check: str
    joint: str
    axis: int
    measured: float
    bound: float


def plausibility_op(limits: Iterable = (), *, thresholds: Optional[dict] = None,
                    skip: Iterable = (),
                    skip_extremities: Optional[bool] = None,
                    skip_bones_near_root: Optional[bool] = None,
                    rig_size: Optional[float] = None,
                    state_key: str = "", limits_id: str = ""):
    """A posewire.v1.Operation with a plausibility op.

    limits: posewire.v1.JointLimitSpec messages (e.g. learnt ones) for the
      range-of-motion check; none: no range check.
    limits_id: instead of limits, a limit set the Session registered for
      the rig's skeleton (Session.register_limits or learn_limits).
    thresholds: PlausibilityThresholds fields by name, e.g.
      {"max_root_speed": 9.0}; the rest keep the documented defaults.
    skip: (joint, checks) pairs, checks a set of "range", "motion", "bone".
    The other arguments are PlausibilityOp's fields; None keeps the
    server's default.
    """
    op = operations_pb2.PlausibilityOp(limits=list(limits),
                                       state_key=state_key,
                                       limits_id=limits_id)
    known = op.thresholds.DESCRIPTOR.fields_by_name
    for name, value in (thresholds or {}).items():
        if name not in known:
            raise ValueError(f"plausibility_op: no threshold '{name}' "
                             f"(there are {', '.join(sorted(known))})")
        setattr(op.thresholds, name, float(value))
    for joint, checks in skip:
        unknown = set(checks) - {"range", "motion", "bone"}
        if unknown:
            raise ValueError(f"plausibility_op: skip of '{joint}': unknown "
                             f"checks {sorted(unknown)} (range, motion, bone)")
        op.skip.add(joint=joint, range="range" in checks,
                    motion="motion" in checks, bone="bone" in checks)
    if skip_extremities is not None:
        op.skip_extremities = bool(skip_extremities)
    if skip_bones_near_root is not None:
        op.skip_bones_near_root = bool(skip_bones_near_root)
    if rig_size is not None:
        op.rig_size = float(rig_size)
    return operations_pb2.Operation(plausibility=op)


def violations(op_result) -> List[Violation]:
    """The violations a plausibility op reported in an OperationResult
    (empty when the pose was plausible)."""
    out = []
    for v in op_result.plausibility.violations:
        name = operations_pb2.PlausibilityCheck.Name(v.check)
        out.append(Violation(name[len(_CHECK_PREFIX):].lower(), v.joint,
                             v.axis, v.measured, v.bound))
    return out
