#!/usr/bin/env bash
# Shared by run.sh and test.sh: bootstrap, configure and build.
#   build.sh [TARGET...]   (no target: everything)
# BUILD_DIR (default build/) and BUILD_TYPE (default Release) may be set.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build}

"$root/scripts/bootstrap.sh"
cmake -S "$root" -B "$build_dir" -G Ninja \
  -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" ${CMAKE_ARGS:-}
# Two jobs: the reference machine has 2 cores and gRPC headers are heavy.
cmake --build "$build_dir" --parallel "${JOBS:-2}" ${1:+--target "$@"}
