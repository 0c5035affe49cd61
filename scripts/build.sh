#!/usr/bin/env bash
# Shared by run.sh and test.sh: bootstrap, configure and build.
#   build.sh [TARGET...]   (no target: everything)
# BUILD_DIR (default build/) and BUILD_TYPE (default Release) may be set.
# POSEWIRE_SET=serve (run.sh) installs and configures only what the server
# and the clients need: no tests, no benchmarks. The default, test, is the
# whole tree.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build}
set_name=${POSEWIRE_SET:-test}

case $set_name in
  serve) parts=OFF ;;
  test) parts=ON ;;
  *)
    echo "build: POSEWIRE_SET must be serve or test, not '$set_name'" >&2
    exit 2
    ;;
esac
"$root/scripts/bootstrap.sh" "$set_name"
# shellcheck disable=SC2086  # CMAKE_ARGS is a list of -D options
cmake -S "$root" -B "$build_dir" -G Ninja \
  -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" \
  -DPOSEWIRE_BUILD_TESTS=$parts -DPOSEWIRE_BUILD_BENCH=$parts ${CMAKE_ARGS:-}
# Two jobs: the reference machine has 2 cores and gRPC headers are heavy.
cmake --build "$build_dir" --parallel "${JOBS:-2}" ${1:+--target "$@"}
