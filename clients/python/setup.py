"""Generates the posewire.v1 message classes into the package as it builds.

The .proto files are the repository's proto/ folder (POSEWIRE_PROTO_DIR
overrides it); the tools are protoc and grpc_python_plugin, found on PATH
(PROTOC, GRPC_PYTHON_PLUGIN override them). POSEWIRE_CORE_MODULE names a
built posewire._core extension (the CMake target posewire_python_core,
<build>/clients/python/stubs/posewire/_core.*.so) to install with the package
for posewire.local; without it the package is the gRPC client alone.
Everything else is in pyproject.toml.
"""

import os
import shutil
import subprocess

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
PROTOS = ("types", "operations", "posewire")


def _tool(env, name, package):
    path = os.environ.get(env) or shutil.which(name)
    if not path:
        raise SystemExit(
            f"posewire: {name} not found; install Debian's {package} "
            f"(or set {env})")
    return path


class BuildWithStubs(build_py):
    """build_py, then protoc into <build_lib>/posewire/v1."""

    def run(self):
        super().run()
        proto_dir = os.environ.get(
            "POSEWIRE_PROTO_DIR", os.path.join(HERE, "..", "..", "proto"))
        sources = [os.path.join(proto_dir, "posewire", "v1", f"{name}.proto")
                   for name in PROTOS]
        missing = [s for s in sources if not os.path.isfile(s)]
        if missing:
            raise SystemExit(
                f"posewire: no {missing[0]}; install from the repository's "
                "clients/python, or set POSEWIRE_PROTO_DIR to its proto/")
        protoc = _tool("PROTOC", "protoc", "protobuf-compiler")
        plugin = _tool("GRPC_PYTHON_PLUGIN", "grpc_python_plugin",
                       "protobuf-compiler-grpc")
        out = os.path.abspath(self.build_lib)
        subprocess.run(
            [protoc, f"--proto_path={proto_dir}", f"--python_out={out}",
             f"--grpc_out={out}", f"--plugin=protoc-gen-grpc={plugin}",
             *sources],
            check=True)
        # posewire/v1 is a subpackage of the posewire package.
        with open(os.path.join(out, "posewire", "v1", "__init__.py"), "w",
                  encoding="utf-8"):
            pass
        core = _core_module()
        if core:
            shutil.copy2(core, os.path.join(out, "posewire",
                                            os.path.basename(core)))


def _core_module():
    """The prebuilt posewire._core to install, or None."""
    path = os.environ.get("POSEWIRE_CORE_MODULE")
    if not path:
        return None
    if not os.path.isfile(path) or not os.path.basename(path).startswith(
            "_core."):
        raise SystemExit(
            f"posewire: POSEWIRE_CORE_MODULE={path} is not a built _core "
            "extension (build the CMake target posewire_python_core)")
    return os.path.abspath(path)


class BinaryDistribution(Distribution):
    """With the compiled core inside, a wheel is tagged for this platform."""

    def has_ext_modules(self):
        return _core_module() is not None


setup(cmdclass={"build_py": BuildWithStubs}, distclass=BinaryDistribution)
