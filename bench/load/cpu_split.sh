#!/bin/bash
# Where the CPU goes in the batch scenario (the aim: service >= 50% of
# in-process): CPU microseconds per character-frame spent by the server, by
# the load generator, and by the same work in process. Throughput ratios move
# with every neighbour on a shared machine; CPU time per unit of work moves
# much less, so this shows what limits the ratio when the two cores are busy.
#
#   bench/load/cpu_split.sh BUILD_DIR [STREAMS=4] [DURATION=8]
#
# Two posewire-load runs against one fresh 2-thread server:
#  1. service only (--baseline=false): the server's CPU time (from
#     /proc/PID/stat) and the generator's (GNU time) over the answered
#     character-frames;
#  2. service then in-process baseline (no echo phase: its child server's
#     CPU would count as the generator's): the generator's CPU time minus
#     its service part (per-frame cost from run 1) over the baseline's
#     frames.
# Prints the three costs and the ratio they imply when the CPU is the limit,
# with and without the generator's share.
set -euo pipefail

if [[ $# -lt 1 || ! -x ${1}/server/posewire-server || ! -x ${1}/clients/posewire-load ]]; then
  echo "usage: $0 BUILD_DIR [STREAMS=4] [DURATION=8]" \
    "(BUILD_DIR holds server/posewire-server and clients/posewire-load)" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
streams=${2:-4}
duration=${3:-8}
# shellcheck source=bench/load/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
start_server "$build/server/posewire-server"

# Server CPU seconds so far (user + system, all threads).
server_cpu() {
  awk -v hz="$(getconf CLK_TCK)" '{ printf "%.3f", ($14 + $15) / hz }' \
    "/proc/$server_pid/stat"
}
# load RUN [extra flags]: one posewire-load run; its CPU seconds go to
# $work/RUN.time, its report to $work/RUN.out.
load() {
  local run=$1
  shift
  /usr/bin/time -f "%U %S" -o "$work/$run.time" \
    "$build/clients/posewire-load" --server="127.0.0.1:$port" --mode=stream \
    --streams="$streams" --channels="$streams" --characters=100 --rate=0 \
    --op_mix=fk_ik --duration="$duration" "$@" >"$work/$run.out" 2>&1
}
# frames RUN PHASE: character-frames answered in a phase ("service" or
# "in-process") of a run's final report.
frames() {
  grep -E "^$2 " "$work/$1.out" | grep -oE "answered [0-9]+" |
    awk '{ print $2 * 100 }'
}

before=$(server_cpu)
load service --baseline=false
after=$(server_cpu)
load both --echo=false

awk -v server="$(awk -v a="$after" -v b="$before" 'BEGIN { print a - b }')" \
  -v client="$(awk '{ print $1 + $2 }' "$work/service.time")" \
  -v frames="$(frames service service)" \
  -v client2="$(awk '{ print $1 + $2 }' "$work/both.time")" \
  -v frames2="$(frames both service)" \
  -v baseline_frames="$(frames both in-process)" '
BEGIN {
  s = server / frames * 1e6
  c = client / frames * 1e6
  b = (client2 - c * frames2 / 1e6) / baseline_frames * 1e6
  printf "CPU us per character-frame: server %.2f, load generator %.2f, " \
         "in process %.2f\n", s, c, b
  printf "ratio the CPU allows: %.3f (without the generator: %.3f)\n",
         b / (s + c), b / s
}'
