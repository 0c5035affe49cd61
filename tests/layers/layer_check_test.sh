#!/usr/bin/env bash
# The layer check passes on this tree, and fails (naming the file and the
# rule) on a tree with an include that goes up a layer, an internal header
# used outside its library, a framework the core must not see, a cycle and
# a raw SIMD intrinsic outside the lane layer.
set -euo pipefail
check=$1
root=$2

python3 "$check" --root "$root"

bad=$(mktemp -d)
trap 'rm -rf "$bad"' EXIT
mkdir -p "$bad"/server/{wire,service} "$bad"/solver_core/{model,dynamics/internal}
echo '#include "server/service/solve.h"' > "$bad/server/wire/up.h"
echo '' > "$bad/server/service/solve.h"
echo '' > "$bad/solver_core/dynamics/internal/lanes.h"
echo '#include "solver_core/dynamics/internal/lanes.h"' > "$bad/server/wire/uses_lanes.h"
echo '#include <grpcpp/grpcpp.h>' > "$bad/solver_core/model/grpc.h"
echo '#include "solver_core/model/b.h"' > "$bad/solver_core/model/a.h"
echo '#include "solver_core/model/a.h"' > "$bad/solver_core/model/b.h"
printf '#include <immintrin.h>\nfloat f(__m128 v) { return _mm_cvtss_f32(v); }\n' \
  > "$bad/solver_core/model/raw_simd.cc"

if out=$(python3 "$check" --root "$bad"); then
  echo "FAIL: the check passed a tree with layer violations"
  exit 1
fi
echo "$out"
for expected in \
    'server/wire/up.h:1: server/wire/ may not include "server/service/solve.h"' \
    'server/wire/uses_lanes.h:1: "solver_core/dynamics/internal/lanes.h" is internal to solver_core/' \
    'solver_core/model/grpc.h:1: solver_core/ must not include <grpcpp/grpcpp.h>' \
    'include cycle: solver_core/model/a.h -> solver_core/model/b.h -> solver_core/model/a.h' \
    'solver_core/model/raw_simd.cc:1: raw intrinsic immintrin.h outside the SIMD layer' \
    'solver_core/model/raw_simd.cc:2: raw intrinsic __m128 outside the SIMD layer'; do
  if ! grep -qF "$expected" <<<"$out"; then
    echo "FAIL: expected: $expected"
    exit 1
  fi
done
echo "PASS"
