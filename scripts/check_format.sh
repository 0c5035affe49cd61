#!/usr/bin/env bash
# Checks that every tracked C++ file is formatted with the
# repository's .clang-format (clang-format 14, Debian bookworm's). Prints
# each offending line and exits 1; `clang-format-14 -i FILE` fixes a file.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
format=$(command -v clang-format-14 || command -v clang-format || true)
if [[ -z $format ]]; then
  echo "check_format: needs clang-format-14 (./scripts/bootstrap.sh installs it)" >&2
  exit 1
fi
mapfile -t files < <(git ls-files '*.cc' '*.h')
if "$format" --dry-run -Werror "${files[@]}"; then
  echo "check_format: ${#files[@]} files formatted"
else
  echo "check_format: run $format -i on the files above" >&2
  exit 1
fi
