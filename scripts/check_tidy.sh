#!/usr/bin/env bash
# Runs clang-tidy 14 (Debian bookworm's) with the repository's .clang-tidy
# on the library code every answer goes through: the solver core and the
# server's wire, ops and service layers (not the gRPC transport, the
# clients, tests, benchmarks or generated code: parsing gRPC's headers
# would double the stage's time for little), from a build's
# compile_commands.json. Prints each finding and exits 1 if there is one.
#
#   scripts/check_tidy.sh [BUILD_DIR]     (default: build; JOBS=2)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
build=${1:-build}
tidy=$(command -v clang-tidy-14 || command -v clang-tidy || true)
if [[ -z $tidy ]]; then
  echo "check_tidy: needs clang-tidy-14 (./scripts/bootstrap.sh installs it)" >&2
  exit 1
fi
if [[ ! -f $build/compile_commands.json ]]; then
  echo "check_tidy: no $build/compile_commands.json; build first (scripts/build.sh)" >&2
  exit 1
fi
mapfile -t files < <(git ls-files 'solver_core/*.cc' 'server/wire/*.cc' \
  'server/ops/*.cc' 'server/service/*.cc')
# --quiet drops the "N warnings generated" lines of system headers; the
# header filter keeps findings to our own headers.
if printf '%s\n' "${files[@]}" |
  xargs -P "${JOBS:-2}" -n 4 "$tidy" --quiet -p "$build" 2>/dev/null; then
  echo "check_tidy: ${#files[@]} files clean"
else
  echo "check_tidy: fix the findings above (checks: .clang-tidy)" >&2
  exit 1
fi
