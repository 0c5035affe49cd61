#!/bin/bash
# Batch and interactive load on one server at once, under each of the
# server's three ways of placing large requests: what an interactive
# client's latency pays for a neighbour's batches, and what the batches
# keep. Per round and setting, one fresh 2-thread server, and two
# posewire-load processes started together for DURATION seconds:
#   batch:       4 streams, 100 characters per message, open loop, 4
#                connections (the `batch` scenario of scenarios.sh)
#   interactive: 200 streams, 1 character per message at 60 Hz, 4
#                connections, on the last CPU (the `interactive` scenario)
# Settings (posewire-server flags):
#   pool:    --batch_inline_quiet=inf   large requests always on the pool
#   inline:  --inline_request_bytes=1048576   every request on the gRPC thread
#   default: large requests inline while no small one came for 1 s
#
#   bench/load/mixed.sh BUILD_DIR [ROUNDS=2] [DURATION=10]
set -euo pipefail

if [[ $# -lt 1 || ! -x ${1}/server/posewire-server || ! -x ${1}/clients/posewire-load ]]; then
  echo "usage: $0 BUILD_DIR [ROUNDS=2] [DURATION=10]" \
    "(BUILD_DIR holds server/posewire-server and clients/posewire-load)" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
rounds=${2:-2}
duration=${3:-10}
# shellcheck source=bench/load/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
load=$build/clients/posewire-load
last_cpu=$(($(nproc) - 1))

declare -A flags=(
  [pool]=--batch_inline_quiet=inf
  [inline]=--inline_request_bytes=1048576
  [default]="")

for round in $(seq 1 "$rounds"); do
  for setting in pool inline default; do
    # shellcheck disable=SC2086  # the setting's flag, or none
    start_server "$build/server/posewire-server" ${flags[$setting]}
    common=(--server="127.0.0.1:$port" --mode=stream --op_mix=fk_ik
            --duration="$duration" --baseline=false)
    "$load" "${common[@]}" --streams=4 --characters=100 --rate=0 \
      --channels=4 --json="$work/batch.json" >"$work/batch.log" 2>&1 &
    batch_pid=$!
    "$load" "${common[@]}" --streams=200 --characters=1 --rate=60 \
      --channels=4 --cpus="$last_cpu" --json="$work/interactive.json" \
      >"$work/interactive.log" 2>&1 ||
      { cat "$work/interactive.log" >&2; exit 1; }
    wait "$batch_pid" || { cat "$work/batch.log" >&2; exit 1; }
    kill -TERM "$server_pid"
    wait "$server_pid" || true
    server_pid=
    /usr/bin/python3 - "$round" "$setting" "$work" <<'PY'
import json, sys
round_, setting, work = sys.argv[1:]
b = json.load(open(f"{work}/batch.json"))["service"]
i = json.load(open(f"{work}/interactive.json"))["service"]
errors = b["error_count"] + i["error_count"]
print(f"round {round_} {setting:8s} interactive p50 {i['latency_us']['p50']:.0f} "
      f"p99 {i['latency_us']['p99']:.0f} us, answered {i['answered']}/{i['sent']}; "
      f"batch {b['character_frames_per_second']:.0f} char-frames/s; "
      f"errors {errors}")
PY
  done
done
