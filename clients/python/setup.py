"""Builds the posewire package: message classes and the in-process core.

As it builds, the package gets
- the posewire.v1 message classes, generated from the repository's proto/
  with protoc and grpc_python_plugin (found on PATH; PROTOC and
  GRPC_PYTHON_PLUGIN override them);
- posewire._core, the solver core as a Python extension (posewire.local),
  built with CMake from the repository (the target posewire_python_core).

Environment (all optional):
  POSEWIRE_SOURCE_DIR       the repository (default: two folders up)
  POSEWIRE_PROTO_DIR        its proto/ (default: <source>/proto)
  POSEWIRE_CMAKE_BUILD_DIR  a CMake build tree of the repository to build
                            _core in and reuse (e.g. the build/ that
                            ./scripts/build.sh made, so nothing is rebuilt);
                            default: a Release tree under this package's
                            build/ folder, configured on first use
  POSEWIRE_BUILD_JOBS       parallel compile jobs (default: the CPU count)
  POSEWIRE_CORE_MODULE      an already built _core.*.so to install instead
  POSEWIRE_BUILD_CORE=0     the gRPC client alone, without posewire.local
Everything else is in pyproject.toml.
"""

import glob
import os
import shutil
import subprocess

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
PROTOS = ("types", "operations", "posewire")
CORE_TARGET = "posewire_python_core"
# What the core's CMake configure needs beyond a compiler and CMake, named
# as Debian packages so a failed build says what to install.
CORE_PACKAGES = ("cmake ninja-build g++ pybind11-dev python3-dev "
                 "libgrpc++-dev libprotobuf-dev protobuf-compiler-grpc "
                 "libabsl-dev libeigen3-dev libspdlog-dev")


def _fail(message):
    raise SystemExit(f"posewire: {message}")


def _tool(env, name, package):
    path = os.environ.get(env) or shutil.which(name)
    if not path:
        _fail(f"{name} not found; install Debian's {package} (or set {env})")
    return path


def _source_dir():
    return os.path.abspath(
        os.environ.get("POSEWIRE_SOURCE_DIR", os.path.join(HERE, "..", "..")))


def _build_core_wanted():
    value = os.environ.get("POSEWIRE_BUILD_CORE", "1").strip().lower()
    if value in ("0", "off", "no", "false"):
        return False
    if value in ("1", "on", "yes", "true"):
        return True
    return _fail(f"POSEWIRE_BUILD_CORE={value!r}: say 1 or 0")


def _prebuilt_core():
    """The already built posewire._core named by POSEWIRE_CORE_MODULE."""
    path = os.environ.get("POSEWIRE_CORE_MODULE")
    if not path:
        return None
    if not os.path.isfile(path) or not os.path.basename(path).startswith(
            "_core."):
        _fail(f"POSEWIRE_CORE_MODULE={path} is not a built _core extension "
              f"(build the CMake target {CORE_TARGET})")
    return os.path.abspath(path)


def _run(command, log):
    """Runs a build step with its output in LOG; on failure shows its end."""
    with open(log, "a", encoding="utf-8") as out:
        out.write("$ " + " ".join(command) + "\n")
        out.flush()
        status = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT,
                                check=False).returncode
    if status != 0:
        with open(log, encoding="utf-8", errors="replace") as f:
            tail = "".join(f.readlines()[-25:])
        _fail(f"building posewire._core failed ({command[0]} exited "
              f"{status}); the end of {log}:\n{tail}\n"
              f"It needs Debian's {CORE_PACKAGES}. To install the gRPC "
              "client without posewire.local, set POSEWIRE_BUILD_CORE=0.")


def _cmake_core(build_temp):
    """Builds posewire._core with CMake; returns the extension's path."""
    source = _source_dir()
    if not os.path.isfile(os.path.join(source, "CMakeLists.txt")):
        _fail(f"no CMakeLists.txt in {source} to build posewire._core from; "
              "install from the repository's clients/python, set "
              "POSEWIRE_SOURCE_DIR to the repository, or set "
              "POSEWIRE_BUILD_CORE=0 for the gRPC client alone")
    cmake = _tool("CMAKE", "cmake", "cmake")
    build = os.path.abspath(os.environ.get("POSEWIRE_CMAKE_BUILD_DIR")
                            or os.path.join(build_temp, "posewire-cmake"))
    os.makedirs(build, exist_ok=True)
    log = os.path.join(build, "posewire-python-core.log")
    open(log, "w", encoding="utf-8").close()  # this install's steps only
    if not os.path.isfile(os.path.join(build, "CMakeCache.txt")):
        # Only what the extension links: no tests, no benchmarks.
        configure = [cmake, "-S", source, "-B", build,
                     "-DCMAKE_BUILD_TYPE=Release",
                     "-DPOSEWIRE_BUILD_TESTS=OFF",
                     "-DPOSEWIRE_BUILD_BENCH=OFF",
                     "-DPOSEWIRE_BUILD_PYTHON_CORE=ON"]
        if shutil.which("ninja"):
            configure += ["-G", "Ninja"]
        print(f"posewire: configuring {source} in {build} (log: {log})",
              flush=True)
        _run(configure, log)
    jobs = os.environ.get("POSEWIRE_BUILD_JOBS") or str(os.cpu_count() or 1)
    print(f"posewire: building {CORE_TARGET} in {build} with {jobs} jobs "
          f"(log: {log})", flush=True)
    _run([cmake, "--build", build, "--target", CORE_TARGET,
          "--parallel", jobs], log)
    built = glob.glob(os.path.join(build, "clients", "python", "stubs",
                                   "posewire", "_core.*"))
    if len(built) != 1:
        _fail(f"the CMake build in {build} has no single posewire._core "
              f"({len(built)} found); its configure may have left the "
              f"extension out (see {log}: pybind11-dev and python3-dev?)")
    return built[0]


class BuildWithStubsAndCore(build_py):
    """build_py, then protoc into <build_lib>/posewire/v1 and the core."""

    def run(self):
        super().run()
        proto_dir = os.environ.get("POSEWIRE_PROTO_DIR",
                                   os.path.join(_source_dir(), "proto"))
        sources = [os.path.join(proto_dir, "posewire", "v1", f"{name}.proto")
                   for name in PROTOS]
        missing = [s for s in sources if not os.path.isfile(s)]
        if missing:
            _fail(f"no {missing[0]}; install from the repository's "
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
        core = _prebuilt_core()
        if core is None and _build_core_wanted():
            build_temp = self.get_finalized_command("build").build_temp
            core = _cmake_core(build_temp)
        if core:
            shutil.copy2(core, os.path.join(out, "posewire",
                                            os.path.basename(core)))


class BinaryDistribution(Distribution):
    """With the compiled core inside, a wheel is tagged for this platform."""

    def has_ext_modules(self):
        return _prebuilt_core() is not None or _build_core_wanted()


setup(cmdclass={"build_py": BuildWithStubsAndCore},
      distclass=BinaryDistribution)
