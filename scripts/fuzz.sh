#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang, ASan and UBSan in their
# own build directory, then runs each one in turn for a while on its seed
# corpus. The exit code is 1 if any target found a crash, a leak, undefined
# behaviour, a timeout or an out-of-memory; the input is kept in
# $FUZZ_BUILD_DIR/artifacts/<target>/ (replay: <binary> <file>).
#
#   ./scripts/fuzz.sh                 # every target, 30 s each
#   ./scripts/fuzz.sh 600 solve_fuzzer bvh_reader_fuzzer
#   FUZZ_RUNS=2000000 ./scripts/fuzz.sh 0 bvh_reader_fuzzer  # by executions
#
# Environment: FUZZ_BUILD_DIR (default build-fuzz), JOBS (build jobs,
# default 2), FUZZ_RUNS (stop after that many executions instead; seconds
# then 0 means no time limit), FUZZ_FLAGS (more libFuzzer flags).
# New inputs that reach new code go to $FUZZ_BUILD_DIR/corpus/<target>/,
# kept from run to run; fuzz/corpus/<target>/ (committed) is only read.
# Targets run one at a time, one process each: the machines are shared.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${FUZZ_BUILD_DIR:-$root/build-fuzz}
seconds=${1:-30}
shift || true
all_targets=(bvh_reader_fuzzer gltf_reader_fuzzer solve_fuzzer session_fuzzer)
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=("${all_targets[@]}")

"$root/scripts/bootstrap.sh" fuzz
if ! command -v clang++-14 >/dev/null ||
   ! compgen -G '/usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a' >/dev/null; then
  echo "fuzz: needs clang-14 and libclang-rt-14-dev (./scripts/bootstrap.sh fuzz installs them)" >&2
  exit 1
fi

# An instrumented build: -O1 keeps it fast enough to fuzz, and no NDEBUG so
# Eigen's index assertions are checked too.
if [[ ! -f $build_dir/CMakeCache.txt ]]; then
  CC=clang-14 CXX=clang++-14 cmake -S "$root" -B "$build_dir" -G Ninja \
    -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g" \
    -DPOSEWIRE_BUILD_FUZZERS=ON -DPOSEWIRE_BUILD_TESTS=OFF \
    -DPOSEWIRE_BUILD_BENCH=OFF >/dev/null
fi
ninja -C "$build_dir" -j "${JOBS:-2}" posewire_fuzzers make_request_seeds

# Request seeds are generated, not committed: they follow the .proto files.
seeds=$build_dir/seeds
rm -rf "$seeds"
"$build_dir/fuzz/make_request_seeds" \
  "$root/fuzz/corpus/bvh_reader_fuzzer/cmu_131_01_walk_3frames.bvh" "$seeds"

# Largest input per target: a few real skeletons and clips fit, and inputs
# stay small enough for thousands of executions a second.
declare -A max_len=([bvh_reader_fuzzer]=32768 [gltf_reader_fuzzer]=65536
                    [solve_fuzzer]=32768 [session_fuzzer]=32768)
declare -A dict=([bvh_reader_fuzzer]=bvh.dict [gltf_reader_fuzzer]=gltf.dict)

failed=()
for target in "${targets[@]}"; do
  [[ -n ${max_len[$target]:-} ]] || { echo "fuzz: no target $target" >&2; exit 2; }
  work=$build_dir/corpus/$target
  artifacts=$build_dir/artifacts/$target
  mkdir -p "$work" "$artifacts"
  inputs=("$work")
  [[ -d $root/fuzz/corpus/$target ]] && inputs+=("$root/fuzz/corpus/$target")
  [[ -d $seeds/$target ]] && inputs+=("$seeds/$target")
  # Past failures are seeds too: every run re-checks them under ASan/UBSan.
  [[ -d $root/fuzz/regressions/$target ]] &&
    inputs+=("$root/fuzz/regressions/$target")
  flags=(-max_len="${max_len[$target]}" -rss_limit_mb=2048 -timeout=10
         -max_total_time="$seconds" -print_final_stats=1
         -artifact_prefix="$artifacts/")
  [[ -n ${FUZZ_RUNS:-} ]] && flags+=(-runs="$FUZZ_RUNS")
  [[ -n ${dict[$target]:-} ]] && flags+=(-dict="$root/fuzz/${dict[$target]}")
  echo "fuzz: $target for ${seconds}s${FUZZ_RUNS:+ or $FUZZ_RUNS runs}"
  # shellcheck disable=SC2086  # FUZZ_FLAGS is a list of flags
  if ! "$build_dir/fuzz/$target" "${flags[@]}" ${FUZZ_FLAGS:-} "${inputs[@]}"; then
    failed+=("$target")
    echo "fuzz: $target FAILED; inputs in $artifacts" >&2
  fi
done

if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz: failures in ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: ${targets[*]}: no crash, leak, timeout or out-of-memory"
