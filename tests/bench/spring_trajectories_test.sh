#!/usr/bin/env bash
# posewire-spring-trajectories (bench/spring_trajectories.cc): garbage
# arguments and files get a clear message and a non-zero exit; a small
# well-formed recording compares equal to itself.
#
# Usage: spring_trajectories_test.sh <path to posewire-spring-trajectories>
set -uo pipefail

tool="$1"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0

# expect CODE TEXT ARGS...: the tool exits with CODE and says TEXT on stderr.
expect() {
  local code=$1 text=$2
  shift 2
  local got
  "$tool" "$@" >"$dir/out" 2>"$dir/err"
  got=$?
  if [[ $got -ne $code ]] || ! grep -qF -- "$text" "$dir/err"; then
    echo "FAIL: '$*' exited $got (want $code), stderr: $(cat "$dir/err")"
    failures=$((failures + 1))
  else
    echo "ok: '$*' -> $code, $text"
  fi
}

expect 2 "usage:"
expect 2 "usage:" bogus x
expect 2 "usage:" compare only_one
expect 2 "is not a frame number" record "$dir/x.bin" abc
expect 2 "is not a frame number" record "$dir/x.bin" -3
expect 1 "cannot write" record "$dir/no/such/dir/x.bin"
expect 1 "cannot read" compare "$dir/missing.bin" "$dir/missing.bin"
expect 1 "cannot read" smoothness "$dir/missing.bin"
head -c 1000 /dev/zero | tr '\0' '\377' >"$dir/garbage.bin"
expect 1 "not a recording" smoothness "$dir/garbage.bin"
expect 1 "not a recording" compare "$dir/garbage.bin" "$dir/garbage.bin"

# A small well-formed recording (one scene: 1 joint, 1 particle, 2 frames
# of zeros; a full `record` writes 330 MB), then a copy cut short.
{
  printf '\x01\x00\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00'
  head -c 56 /dev/zero
} >"$dir/small.bin"
head -c 40 "$dir/small.bin" >"$dir/cut.bin"
expect 1 "cut short" compare "$dir/small.bin" "$dir/cut.bin"
same=$("$tool" compare "$dir/small.bin" "$dir/small.bin")
if ! grep -qF "> 1 deg 0 (0.00%)" <<<"$same" ||
    ! grep -qF "differ in some bit in 0 of 2 frames" <<<"$same"; then
  echo "FAIL: a recording does not compare equal to itself: $same"
  failures=$((failures + 1))
fi
# The same with the second frame's particle moved (its z set to 1.0f): the
# rotations agree, the positions differ in one frame.
{
  head -c 64 "$dir/small.bin"
  printf '\x00\x00\x80\x3f'
} >"$dir/moved.bin"
moved=$("$tool" compare "$dir/small.bin" "$dir/moved.bin")
if ! grep -qF "> 1 deg 0 (0.00%)" <<<"$moved" ||
    ! grep -qF "differ in some bit in 1 of 2 frames" <<<"$moved"; then
  echo "FAIL: a moved particle is not reported: $moved"
  failures=$((failures + 1))
fi

if [[ $failures -ne 0 ]]; then
  echo "FAIL: $failures case(s)"
  exit 1
fi
echo "PASS"
