#!/usr/bin/env bash
# Set up, build everything and run the whole test suite. The exit code is
# the suite's. Extra arguments go to ctest, e.g. ./scripts/test.sh -R service
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build}

"$root/scripts/build.sh"
cd "$build_dir"
exec ctest --output-on-failure --parallel "${JOBS:-2}" "$@"
