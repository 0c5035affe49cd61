"""Python client for the posewire gRPC service (posewire.v1).

    import posewire
    with posewire.Client("127.0.0.1:50051") as client:
        print(client.info().version)

The message classes (`posewire.v1`) are generated from the .proto files:
by `pip install ./clients/python` into the installed package, or by the
CMake build (target `posewire_python`) into <build>/clients/python/stubs,
which POSEWIRE_PYTHON_STUBS points at (<build>/clients/python/env.sh sets
it and PYTHONPATH). Every message and enum is in `posewire.msg`
(`posewire.msg.Vec3`, `posewire.msg.SolveRequest`, ...); the generated
modules are also here as `posewire.pb` (service messages), `posewire.ops`
(operations) and `posewire.types` (skeletons, poses, clips).

`posewire.local` is the solver core in this process (no server): it reads
BVH and glTF files and answers Solve requests bit for bit as the service
does. `solve_pose` on a Client or a local.Solver takes and returns numpy
arrays, as does `Client.bake` (a clip through a pipeline on the server, its
frames streamed back). `FrameBatcher` gathers characters submitted one by
one (from any thread) into one Session frame per tick.

Runs on Debian's python3-grpcio and python3-protobuf (/usr/bin/python3).
"""

import os as _os
import types as _pytypes

_STUBS_ENV = "POSEWIRE_PYTHON_STUBS"


def _add_generated_stubs():
    """Makes <stubs>/posewire/v1 importable as the subpackage posewire.v1."""
    stubs = _os.environ.get(_STUBS_ENV)
    if not stubs:
        return
    package_dir = _os.path.join(stubs, "posewire")
    if not _os.path.isfile(_os.path.join(package_dir, "v1", "posewire_pb2.py")):
        raise ImportError(
            f"{_STUBS_ENV}={stubs} holds no posewire/v1/posewire_pb2.py; "
            "build the stubs with `ninja -C <build> posewire_python`")
    if package_dir not in __path__:
        __path__.append(package_dir)


_add_generated_stubs()

try:
    from posewire.v1 import operations_pb2 as ops  # noqa: E402
    from posewire.v1 import posewire_pb2 as pb  # noqa: E402
    from posewire.v1 import posewire_pb2_grpc as pb_grpc  # noqa: E402
    from posewire.v1 import types_pb2 as types  # noqa: E402
except ImportError as error:  # pragma: no cover - depends on the setup
    raise ImportError(
        "posewire: the generated posewire.v1 stubs were not found; build "
        "them (`ninja -C <build> posewire_python`) and set "
        f"{_STUBS_ENV}=<build>/clients/python/stubs ({error})") from error



def _messages():
    """Every public name of the three message modules, in one namespace."""
    names = {}
    for module in (types, ops, pb):
        for name in dir(module):
            value = getattr(module, name)
            if name.startswith("_") or name == "DESCRIPTOR" or isinstance(
                    value, _pytypes.ModuleType):
                continue
            names[name] = value
    return _pytypes.SimpleNamespace(**names)


msg = _messages()

from posewire.bake import BakedClip, bake_request  # noqa: E402
from posewire.batcher import BatcherCounters, FrameBatcher  # noqa: E402
from posewire.calls import (  # noqa: E402
    SolvedPose, array_from_pose, pose_from_array, sample_clip_op,
    two_bone_ik_op)
from posewire.client import (  # noqa: E402
    Client, PosewireError, ResumeCounters, ResumeEvent, ResumeOptions,
    ResumePoint, Session)
from posewire.ground import (  # noqa: E402
    ground_hit, ground_op, ground_update, heightfield, look_at_op,
    target_update)
from posewire.retarget import retarget_op  # noqa: E402
from posewire.referee import Violation, plausibility_op, violations  # noqa: E402,E501
from posewire.poses import (  # noqa: E402
    FLOATS_PER_JOINT, Transform, axis_angle, make_skeleton, pack_pose,
    pose_array, rotation_track, unpack_pose)

__all__ = [
    "Client", "Session", "ResumePoint", "ResumeOptions", "ResumeEvent",
    "ResumeCounters", "PosewireError", "SolvedPose", "array_from_pose",
    "pose_from_array", "sample_clip_op", "two_bone_ik_op", "FLOATS_PER_JOINT", "Transform",
    "axis_angle", "make_skeleton", "pack_pose", "pose_array",
    "rotation_track", "unpack_pose", "msg", "ops", "pb", "pb_grpc", "types",
    "ground_hit", "ground_op", "ground_update", "heightfield", "look_at_op",
    "target_update", "retarget_op", "plausibility_op", "violations",
    "Violation", "BakedClip", "bake_request", "FrameBatcher",
    "BatcherCounters",
]
