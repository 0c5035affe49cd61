"""Generates the posewire.v1 message classes into the package as it builds.

The .proto files are the repository's proto/ folder (POSEWIRE_PROTO_DIR
overrides it); the tools are protoc and grpc_python_plugin, found on PATH
(PROTOC, GRPC_PYTHON_PLUGIN override them). Everything else is in
pyproject.toml.
"""

import os
import shutil
import subprocess

from setuptools import setup
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


setup(cmdclass={"build_py": BuildWithStubs})
