#!/usr/bin/env bash
# Cross-variant determinism: runs the solver workload (libm_variant_workload)
# once with the libm variant glibc picks for this CPU and once with its
# FMA/AVX2 variants switched off, and requires the same output hashes. On a
# CPU without FMA both runs use the same variant and the test proves nothing
# (it says so, and still passes).
#
# Usage: libm_variant_test.sh <path to libm_variant_workload> [bvh file]
set -euo pipefail

workload="$1"
shift

native="$("${workload}" "$@")"
plain="$(GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2,-FMA,-FMA4 "${workload}" "$@")"

echo "native libm variant:"
echo "${native}"
echo "hwcaps=-AVX2,-FMA,-FMA4:"
echo "${plain}"

if ! grep -qw fma /proc/cpuinfo 2>/dev/null; then
  echo "note: this CPU has no FMA, both runs used the same libm variant"
fi

if [[ "${native}" != "${plain}" ]]; then
  echo "FAIL: solver results depend on the libm variant"
  exit 1
fi
echo "PASS: identical hashes"
