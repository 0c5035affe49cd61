"""Finding the posewire Python client and its generated stubs.

The add-on reuses clients/python (the `posewire` package) rather than
carrying its own copy of the wire code. Blender runs it on the system Python,
where Debian's python3-grpcio imports. The import is deferred to the first
connect so the add-on still loads (and says what is missing) without grpc.
"""

import os
import sys

_CLIENT_DIR = os.path.normpath(os.path.join(
    os.path.dirname(os.path.realpath(__file__)), "..", "..", "python"))


def import_posewire(stubs_dir=""):
    """Imports and returns the `posewire` package.

    Looks for it on sys.path, then next to this add-on in the source tree
    (clients/python, found through the add-on's real path, so a symlinked
    add-on works). stubs_dir (the preference) is used when the environment
    does not set POSEWIRE_PYTHON_STUBS. Raises ImportError with a message
    saying what to install or build."""
    if stubs_dir and not os.environ.get("POSEWIRE_PYTHON_STUBS"):
        os.environ["POSEWIRE_PYTHON_STUBS"] = bpy_abspath(stubs_dir)
    try:
        import grpc  # noqa: F401
    except ImportError as error:
        raise ImportError(
            "grpc is not importable in Blender's Python "
            f"({sys.executable}); install python3-grpcio") from error
    try:
        import posewire
    except ImportError:
        if os.path.isdir(os.path.join(_CLIENT_DIR, "posewire")) and \
                _CLIENT_DIR not in sys.path:
            sys.path.append(_CLIENT_DIR)
        import posewire
    return posewire


def bpy_abspath(path):
    """Resolves Blender's '//'-relative paths when bpy is around."""
    try:
        import bpy
        return bpy.path.abspath(path)
    except ImportError:  # pragma: no cover - outside Blender
        return path
