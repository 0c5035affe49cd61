#!/bin/bash
# What one interactive message costs the machine: CPU microseconds and
# context switches per message, for the server and for the load generator,
# in the interactive scenario (200 streams, 1 character per message,
# 60 Hz each, 4 connections). The tail latency of that scenario follows how
# busy the two shared cores are, and on this VM a context switch (a thread
# put to sleep and woken, often by an interrupt from the other core) is a
# large part of a message's cost.
#
#   bench/load/wakeups.sh BUILD_DIR [DURATION=8] [posewire-load flags...]
#
# e.g. `bench/load/wakeups.sh build 8 --cpus=1` for the generator on CPU 1.
# SERVER_CPUS=0 starts the server under `taskset -c 0`.
# Server: CPU time from /proc/PID/stat, context switches summed over
# /proc/PID/task/*/status, both read before and after the generator runs.
# Generator: GNU time over its whole run, start-up included (user + system,
# voluntary + involuntary switches).
set -euo pipefail

if [[ $# -lt 1 || ! -x ${1}/server/posewire-server ]]; then
  echo "usage: $0 BUILD_DIR [DURATION=8] [posewire-load flags...]" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
duration=${2:-8}
shift $(($# >= 2 ? 2 : 1))
# shellcheck source=bench/load/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
server_cmd=("$build/server/posewire-server")
[[ -n ${SERVER_CPUS:-} ]] && server_cmd=(taskset -c "$SERVER_CPUS" "${server_cmd[@]}")
start_server "${server_cmd[@]}"
# Under taskset the server is taskset's child after exec: same pid.

server_cpu_ticks() { awk '{print $14 + $15}' "/proc/$server_pid/stat"; }
server_switches() {
  cat /proc/"$server_pid"/task/*/status 2>/dev/null |
    awk '/ctxt_switches/ {s += $2} END {print s}'
}

ticks0=$(server_cpu_ticks)
switches0=$(server_switches)
/usr/bin/time -f "%U %S %w %c" -o "$work/time" \
  "$build/clients/posewire-load" --server="127.0.0.1:$port" --mode=stream \
  --streams=200 --characters=1 --rate=60 --channels=4 --op_mix=fk_ik \
  --duration="$duration" --baseline=false --json="$work/load.json" "$@" \
  >"$work/load.log" 2>&1 || { cat "$work/load.log" >&2; exit 1; }
ticks1=$(server_cpu_ticks)
switches1=$(server_switches)

/usr/bin/python3 - "$work/load.json" "$work/time" "$(getconf CLK_TCK)" \
  "$((ticks1 - ticks0))" "$((switches1 - switches0))" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
user, system, voluntary, involuntary = map(float, open(sys.argv[2]).read().split())
ticks_per_s, server_ticks, server_switches = map(float, sys.argv[3:6])
s = report["service"]
n = s["answered"]
lat = s["latency_us"]
print(f"generator CPUs {report['generator_cpus']}: {n} messages, "
      f"p50 {lat['p50']:.0f} p99 {lat['p99']:.0f} p99.9 {lat['p99_9']:.0f} us")
print(f"server:    {server_ticks / ticks_per_s * 1e6 / n:.1f} CPU us/message, "
      f"{server_switches / n:.2f} context switches/message")
print(f"generator: {(user + system) * 1e6 / n:.1f} CPU us/message, "
      f"{(voluntary + involuntary) / n:.2f} context switches/message")
PY
