#!/usr/bin/env bash
# Builds the whole suite under sanitizers and runs it with ctest. The exit
# code is non-zero if any build or test fails or any
# sanitizer reports.
#
#   scripts/sanitize.sh [asan] [tsan] [-- CTEST_ARGS...]
#
# asan: ASan + UBSan (one build, -DPOSEWIRE_SANITIZE=address,undefined) in
#       build-asan/, with leak checking; UBSan aborts on the first report.
#       Built with clang-14 and the libFuzzer targets (POSEWIRE_BUILD_FUZZERS),
#       so `FUZZ_BUILD_DIR=build-asan scripts/fuzz.sh` runs them without a
#       build of its own (what .ci/run does).
# tsan: TSan (-DPOSEWIRE_SANITIZE=thread, clang-14) in build-tsan/, on the
#       service, client and end-to-end tests only: the solver core and
#       the readers run on one thread (ASan covers their tests). Debian's gRPC,
#       protobuf and Abseil are not instrumented, so TSan ignores accesses
#       from those libraries (ignore_noninstrumented_modules=1),
#       scripts/tsan.supp suppresses races whose top frame is inline gRPC
#       header code or std::function inside gRPC's callback machinery, and
#       scripts/tsan_triage.py fails the stage on any remaining report that
#       involves posewire's code (never anything that could hide a race in
#       our handlers: a deliberate one is caught, docs/RELIABILITY.md).
# No argument: both, asan first. Benchmarks are not built (timing under a
# sanitizer means nothing). BUILD_ROOT (default: the repo) holds the build
# directories; JOBS (default 2) is both the build and the ctest parallelism.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_root=${BUILD_ROOT:-$root}
jobs=${JOBS:-2}

kinds=()
while [[ $# -gt 0 ]]; do
  case $1 in
    asan | tsan) kinds+=("$1") ;;
    --) shift; break ;;
    *) echo "usage: $0 [asan] [tsan] [-- CTEST_ARGS...]" >&2; exit 2 ;;
  esac
  shift
done
[[ ${#kinds[@]} -gt 0 ]] || kinds=(asan tsan)

"$root/scripts/bootstrap.sh" test

# run_suite KIND SANITIZE TIMEOUT CORE_TESTS [CTEST_ARGS...]: configure,
# build, ctest. TIMEOUT is ctest's default per-test timeout (tests without
# their own TIMEOUT property): sanitized binaries are several times slower,
# TSan most. CORE_TESTS ON|OFF: whether the single-threaded solver and
# reader tests are in the build.
run_suite() {
  local kind=$1 sanitize=$2 timeout=$3 core_tests=$4
  shift 4
  # EXTRA_CMAKE_ARGS: set per kind below (compiler, fuzzers).
  local dir=$build_root/build-$kind start
  start=$(date +%s)
  # -O1: the usual level for sanitizers (readable stacks, reasonable speed)
  # and much quicker to compile than -O2/-O3 with instrumentation; the
  # POSEWIRE_SANITIZE block adds -g1 (ASan/UBSan) or -g (TSan).
  # shellcheck disable=SC2086  # CMAKE_ARGS is a list of -D options
  cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -DNDEBUG" \
    -DPOSEWIRE_SANITIZE="$sanitize" -DPOSEWIRE_BUILD_BENCH=OFF \
    -DPOSEWIRE_BUILD_TESTS=ON -DPOSEWIRE_BUILD_CORE_TESTS="$core_tests" \
    "${extra_cmake_args[@]}" ${CMAKE_ARGS:-}
  cmake --build "$dir" --parallel "$jobs"
  local built
  built=$(date +%s)
  echo "sanitize: $kind built in $((built - start)) s"
  (cd "$dir" && ctest --output-on-failure --parallel "$jobs" \
    --timeout "$timeout" "$@")
  echo "sanitize: $kind suite passed in $(($(date +%s) - built)) s" \
    "(total $(($(date +%s) - start)) s)"
}

for kind in "${kinds[@]}"; do
  case $kind in
    asan)
      # detect_leaks: the leak check after each process exits (gRPC and the
      # server shut down cleanly, so nothing may be left). UBSan stops at
      # the first report with a stack (-fno-sanitize-recover in CMake).
      # scripts/lsan.supp: a one-off allocation inside Debian's c-ares.
      "$root/scripts/bootstrap.sh" fuzz
      extra_cmake_args=(-DCMAKE_C_COMPILER=clang-14
                        -DCMAKE_CXX_COMPILER=clang++-14
                        -DPOSEWIRE_BUILD_FUZZERS=ON)
      ASAN_OPTIONS="detect_leaks=1" \
      LSAN_OPTIONS="suppressions=$root/scripts/lsan.supp" \
      UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
        run_suite asan "address,undefined" 600 ON "$@"
      ;;
    tsan)
      # Reports go to files, not to exit codes: scripts/tsan.supp removes
      # what a top-frame pattern can name, and scripts/tsan_triage.py then
      # fails the stage on any report in posewire's code, counting those
      # left entirely inside gRPC's call machinery (Debian's libgrpc is
      # uninstrumented, so its hand-offs between threads are invisible).
      reports=$build_root/build-tsan/tsan-reports
      rm -rf "$reports"
      mkdir -p "$reports"
      # clang-14, like the ASan build: with full -g it compiles the
      # instrumented service tests in about 60% of GCC's time.
      "$root/scripts/bootstrap.sh" fuzz
      extra_cmake_args=(-DCMAKE_C_COMPILER=clang-14
                        -DCMAKE_CXX_COMPILER=clang++-14)
      TSAN_OPTIONS="ignore_noninstrumented_modules=1 suppressions=$root/scripts/tsan.supp exitcode=0 second_deadlock_stack=1 log_path=$reports/report" \
        run_suite tsan thread 1200 OFF "$@"
      shopt -s nullglob
      report_files=("$reports"/report.*)
      shopt -u nullglob
      /usr/bin/python3 "$root/scripts/tsan_triage.py" "$root/" \
        "${report_files[@]}"
      ;;
  esac
done
