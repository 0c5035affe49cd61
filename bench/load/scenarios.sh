#!/usr/bin/env bash
# The load scenarios (docs/PERFORMANCE.md) against real posewire-server processes, each run
# RUNS times; prints the median of each figure as a Markdown table and keeps
# every run's --json report in OUT.
#
#   bench/load/scenarios.sh BUILD_DIR [RUNS=3] [DURATION=10] [OUT=/tmp/posewire-load] \
#     [SCENARIOS="batch interactive unary nginx"]
#
# batch:       4 streams, 100 characters per message, open loop (max
#              throughput), one connection per stream
# interactive: 200 streams, 1 character per message at 60 Hz each, over a
#              pool of 4 connections (50 streams each; gRPC's performance
#              guide: spread many long-lived streams over a channel pool)
# interactive_headroom: the interactive layout with 1.5x the streams (300),
#              the headroom the interactive aim asks for
# batch_1ch, interactive_1ch: the same over one connection
# interactive_capacity: the interactive layout, each target's highest rate
#              per stream holding p99 <= P99_MS (default 1) ms
#              (--capacity_search, windows of SEARCH_WINDOW seconds, default 2)
# referee:     a game server's referee: 4 streams at 60 Hz, each tick a
#              frame of 64 characters' claimed poses (plausibility, re-solve
#              and validate) then a hit query of 32 rays 100 ms in the past
#              (--op_mix=referee); latency is per tick
# unary:       one-shot Solve calls, 1 character, open loop
# nginx:       batch through nginx (deploy/nginx/posewire.conf, grpc_pass;
#              needs Debian's nginx: apt-get install --no-install-recommends nginx)
#              in front of two servers with 1 solver thread each
# Every posewire-load run also runs the identical work in process (on as
# many threads as the server has solver threads, same duration) and reports
# the ratio service/in-process, and in stream mode the same senders
# against a minimal gRPC callback echo (posewire-load in a child process on
# every CPU, as the server) answering with the service's recorded answers:
# the ratio service/echo.
# Latency counts from 0.5 s into each phase and each capacity window
# (posewire-load's --warmup), past the burst of every stream registering.
# The generator's network phase runs on the last CPU only (--cpus), so the
# tool stands in for remote clients without roaming onto the core where a
# server thread is about to be woken; the servers and the in-process
# baseline use every CPU. GENERATOR_CPUS=all leaves the generator free.
set -euo pipefail

build=$(cd "$1" && pwd)
runs=${2:-3}
duration=${3:-10}
out=${4:-/tmp/posewire-load}
scenarios=${5:-batch interactive unary nginx}
repo=$(cd "$(dirname "$0")/../.." && pwd)
server_bin=$build/server/posewire-server
load_bin=$build/clients/posewire-load
mkdir -p "$out"
generator_cpus=${GENERATOR_CPUS:-$(($(nproc) - 1))}
cpus_arg=()
[[ $generator_cpus == all ]] || cpus_arg=(--cpus="$generator_cpus")

pids=()
cleanup() {
  for pid in "${pids[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  pids=()
}
trap cleanup EXIT

# start_server LISTEN THREADS LOG: starts a server, waits for its port and
# sets $port (not printed: a $(...) subshell would lose the pid to clean up).
start_server() {
  "$server_bin" --listen="$1" --threads="$2" >"$3" 2>&1 &
  pids+=($!)
  port=
  for _ in $(seq 1 100); do
    port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]\+\).*/\1/p' "$3" 2>/dev/null | head -1 || true)
    [[ -n $port ]] && break
    sleep 0.1
  done
  [[ -n $port ]] || { echo "server did not start: $(cat "$3")" >&2; exit 1; }
}

start_nginx() {
  if ! command -v nginx >/dev/null; then
    echo "scenario nginx needs Debian's nginx on this host:" \
      "apt-get install --no-install-recommends nginx" >&2
    exit 1
  fi
  local prefix=$out/nginx
  mkdir -p "$prefix"
  cp "$repo/deploy/nginx/posewire.conf" "$prefix/posewire.conf"
  nginx -p "$prefix" -c "$prefix/posewire.conf" &
  pids+=($!)
  for _ in $(seq 1 50); do
    (exec 3<>/dev/tcp/127.0.0.1/50060) 2>/dev/null && return 0
    sleep 0.1
  done
  echo "nginx did not start: $(cat "$prefix/error.log")" >&2
  exit 1
}

for scenario in $scenarios; do
  for run in $(seq 1 "$runs"); do
    json=$out/$scenario-$run.json
    log=$out/$scenario-$run.log
    case $scenario in
      batch)
        start_server 127.0.0.1:0 2 "$out/server.log"
        args=(--mode=stream --streams=4 --characters=100 --rate=0 --channels=4) ;;
      batch_1ch)
        start_server 127.0.0.1:0 2 "$out/server.log"
        args=(--mode=stream --streams=4 --characters=100 --rate=0) ;;
      interactive)
        start_server 127.0.0.1:0 2 "$out/server.log"
        args=(--mode=stream --streams=200 --characters=1 --rate=60 --channels=4) ;;
      interactive_headroom)
        start_server 127.0.0.1:0 2 "$out/server.log"
        args=(--mode=stream --streams=300 --characters=1 --rate=60 --channels=4) ;;
      interactive_capacity)
        start_server 127.0.0.1:0 2 "$out/server.log"
        args=(--mode=stream --streams=200 --characters=1 --rate=60 --channels=4
              --capacity_search --search_window="${SEARCH_WINDOW:-2}"
              --p99_ms="${P99_MS:-1}") ;;
      interactive_1ch)
        start_server 127.0.0.1:0 2 "$out/server.log"
        args=(--mode=stream --streams=200 --characters=1 --rate=60) ;;
      referee)
        start_server 127.0.0.1:0 2 "$out/server.log"
        args=(--mode=stream --streams=4 --characters=64 --rate=60
              --op_mix=referee --rays=32 --rewind_ms=100) ;;
      unary)
        start_server 127.0.0.1:0 2 "$out/server.log"
        args=(--mode=unary --callers=4 --characters=1 --rate=0) ;;
      nginx)
        start_server 127.0.0.1:50061 1 "$out/server1.log"
        start_server 127.0.0.1:50062 1 "$out/server2.log"
        start_nginx
        port=50060
        # Four connections, so nginx's two workers both carry streams.
        # The baseline gets the two servers' threads together.
        args=(--mode=stream --streams=4 --characters=100 --rate=0 --channels=4
              --baseline_threads=2) ;;
      *) echo "unknown scenario $scenario" >&2; exit 2 ;;
    esac
    # --op_mix=fk_ik unless the scenario names its own (the last wins).
    cmd=("$load_bin" "--server=127.0.0.1:$port" --op_mix=fk_ik "${args[@]}"
         --duration="$duration" "${cpus_arg[@]}" --json="$json")
    echo "== $scenario run $run: ${cmd[*]}"
    "${cmd[@]}" >"$log" 2>&1 || echo "(posewire-load exited $?: errors)"
    grep -E '^(service|echo|in-process|ratio|capacity [a-z-]+ +[0-9]+ m| )' \
      "$log" || true
    cleanup
  done
done

# Medians over the runs.
# shellcheck disable=SC2086  # one argument per scenario
/usr/bin/python3 - "$out" "$runs" $scenarios <<'PY'
import json, statistics, sys
out, runs, scenarios = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
print()
print("| scenario | service char-frames/s | msg/s | p50 us | p90 us | p99 us "
      "| p99.9 us | max us | errors | sent = answered | in-process "
      "char-frames/s | in-process p99 us | ratio |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
capacity = [s for s in scenarios if s.endswith("_capacity")]
for s in [s for s in scenarios if s not in capacity]:
    reports = [json.load(open(f"{out}/{s}-{r}.json")) for r in range(1, runs + 1)]
    med = lambda f: statistics.median(f(r) for r in reports)
    sv = lambda k: med(lambda r: r["service"][k])
    lat = lambda k: med(lambda r: r["service"]["latency_us"][k])
    errors = sum(r["service"]["error_count"] for r in reports)
    balanced = all(r["service"]["sent"] == r["service"]["answered"] for r in reports)
    print(f"| {s} | {sv('character_frames_per_second'):.0f} "
          f"| {sv('messages_per_second'):.0f} | {lat('p50'):.0f} "
          f"| {lat('p90'):.0f} | {lat('p99'):.0f} | {lat('p99_9'):.0f} "
          f"| {lat('max'):.0f} | {errors} | {'yes' if balanced else 'NO'} "
          f"| {med(lambda r: r['in_process']['character_frames_per_second']):.0f} "
          f"| {med(lambda r: r['in_process']['latency_us']['p99']):.0f} "
          f"| {med(lambda r: r['ratio']):.2f} |")
    if all("echo" in r for r in reports):
        print(f"|   echo | {med(lambda r: r['echo']['character_frames_per_second']):.0f} "
              f"| p50 {med(lambda r: r['echo']['latency_us']['p50']):.0f} "
              f"| p99 {med(lambda r: r['echo']['latency_us']['p99']):.0f} "
              f"| service/echo {med(lambda r: r['ratio_echo']):.2f} |")
if capacity:
    print()
    print("| scenario | service msg/s at the p99 | echo | in-process "
          "| service/echo | service/in-process |")
    print("|---|---|---|---|---|---|")
for s in capacity:
    reports = [json.load(open(f"{out}/{s}-{r}.json")) for r in range(1, runs + 1)]
    med = lambda f: statistics.median(f(r) for r in reports)
    cap = lambda t: med(lambda r: r[t]["messages_per_second"])
    each = lambda k: " / ".join(f"{r[k]:.2f}" for r in reports)
    print(f"| {s} | {cap('service'):.0f} | {cap('echo'):.0f} "
          f"| {cap('in_process'):.0f} | {med(lambda r: r['ratio_echo']):.2f} "
          f"({each('ratio_echo')}) | {med(lambda r: r['ratio']):.2f} "
          f"({each('ratio')}) |")
PY
