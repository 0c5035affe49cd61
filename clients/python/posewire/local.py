"""The solver core in process: no server, the same answers bit for bit.

    from posewire import local
    walk = local.load("walk.bvh")               # BVH, glTF or GLB
    solver = local.Solver()
    answer = solver.solve_pose(
        walk, [posewire.sample_clip_op(walk.clip_names[0], 1.0)])

local.Solver runs the service's own Solve (posewire._core, a pybind11
extension built with the C++ core) on the same posewire.v1 messages a
posewire.Client sends, so code moves between a server and the process by
changing one line. Skeletons sent once are cached by hash for the process,
as a server caches them.
"""


from posewire.calls import SolvesPoses, _joint_index, array_from_pose
from posewire.client import PosewireError, status_code
from posewire.v1 import posewire_pb2 as _pb
from posewire.v1 import types_pb2 as _types

try:
    from posewire import _core
except ImportError as _error:  # pragma: no cover - depends on the build
    _core = None
    _import_error = _error


def available():
    """Whether the in-process core (posewire._core) is installed."""
    return _core is not None


def _require_core():
    if _core is None:
        raise ImportError(
            "posewire.local: the in-process core posewire._core is not "
            "installed; pip-install the package from the repository with "
            "Debian's pybind11-dev and python3-dev present, which builds "
            "it (not with POSEWIRE_BUILD_CORE=0), or use a CMake build's "
            f"env.sh ({_import_error})")
    return _core


def _raise(code, message, context):
    raise PosewireError(status_code(code), message, context)


class Asset:
    """A skeleton and its clips, read from a file.

    skeleton: posewire.v1.Skeleton; clips: {name: posewire.v1.Clip};
    warnings: what the reader noticed but did not refuse.
    """

    def __init__(self, path, skeleton, clips, warnings):
        self.path = path
        self.skeleton = skeleton
        self.clips = clips
        self.warnings = warnings

    @property
    def joint_names(self):
        return list(self.skeleton.joint_names)

    @property
    def clip_names(self):
        return list(self.clips)

    def joint(self, name):
        """The index of the joint called `name` (KeyError naming a few)."""
        return _joint_index(self.joint_names, name)

    def rest_pose(self):
        """The rest pose, a (joints, 10) float32 array."""
        return array_from_pose(_types.Pose(transforms=self.skeleton.rest_pose))


def load(path):
    """Reads a .bvh, .gltf or .glb file into an Asset (PosewireError with
    the reader's message on a bad file)."""
    code, message, skeleton, clips, warnings = _require_core().read_asset(
        str(path))
    if code:
        _raise(code, message, f"load {path}")
    parsed = {}
    for data in clips:
        clip = _types.Clip.FromString(data)
        parsed[clip.name] = clip
    return Asset(str(path), _types.Skeleton.FromString(skeleton), parsed,
                 list(warnings))


class Solver(SolvesPoses):
    """posewire.Client's solve and solve_pose, in this process."""

    def __init__(self):
        _require_core()

    def solve(self, request):
        """Solve: one self-contained batch (a posewire.v1.SolveRequest)."""
        code, message, response = _core.solve(request.SerializeToString())
        if code:
            _raise(code, message, "Solve")
        return _pb.SolveResponse.FromString(response)

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


__all__ = ["Asset", "Solver", "available", "load"]
