#!/usr/bin/env bash
# Soak: a real posewire-server under about 80% of its measured capacity for a
# long time, checking that nothing degrades.
#
#   bench/load/soak.sh BUILD_DIR [DURATION=1800] [OUT=/tmp/posewire-soak]
#
# 1. Start posewire-server (metrics on a free port).
# 2. Capacity: every load below runs open loop, all at once, for CAPACITY
#    seconds; each one's answered messages/s is its capacity.
# 3. Soak: the same loads at FRACTION (0.8) of that capacity, paced by
#    posewire-load --rate, for DURATION seconds in consecutive WINDOW-second
#    posewire-load runs (posewire-load reports percentiles per run, so a
#    window is a run; every window also opens and closes its streams, which
#    exercises session set-up and tear-down). The server's VmRSS is sampled
#    every RSS_INTERVAL seconds.
# 4. Pass/fail, printed as a Markdown report (also OUT/report.md):
#    - zero errors: every call answered OK in every window, sent = answered;
#      no session left open between windows (posewire_active_sessions = 0);
#      the server exits 0 on SIGTERM at the end;
#    - memory: the median VmRSS of the last window is under 5% (RSS_GROWTH)
#      above the median of the first window after warm-up (WARMUP seconds,
#      default one window);
#    - latency: for each load, the median of the window p99s in the second
#      half of the post-warm-up windows is at most P99_DRIFT (2.0) times the
#      median in the first half. Medians of halves, not single windows, so a
#      neighbour's burst on a shared machine does not fail the run, while a
#      steady climb does.
#
# Environment (defaults): WINDOW=60 WARMUP=WINDOW CAPACITY=15 FRACTION=0.8
# RSS_INTERVAL=5 RSS_GROWTH=0.05 P99_DRIFT=2.0 THREADS=0 (server default).
# CI runs DURATION=120 WINDOW=20.
set -euo pipefail

build=$(cd "$1" && pwd)
duration=${2:-1800}
out=${3:-/tmp/posewire-soak}
window=${WINDOW:-60}
warmup=${WARMUP:-$window}
capacity_seconds=${CAPACITY:-15}
fraction=${FRACTION:-0.8}
rss_interval=${RSS_INTERVAL:-5}
server_bin=$build/server/posewire-server
load_bin=$build/clients/posewire-load

# The loads, run side by side: NAME:SENDERS:ARGS. Streams of ten characters
# with FK + IK (the Session path, per-session skeleton registrations) and
# unary spring-bone calls (the Solve path, the skeleton cache by hash and
# dynamics state carried through the client).
loads=(
  "stream:4:--mode=stream --streams=4 --characters=10 --op_mix=fk_ik"
  "unary:2:--mode=unary --callers=2 --characters=1 --op_mix=spring"
)

rm -rf "$out"
mkdir -p "$out"
server_pid=
sampler_pid=
cleanup() {
  if [[ -n $sampler_pid ]]; then kill "$sampler_pid" 2>/dev/null || true; fi
  if [[ -n $server_pid ]]; then kill -TERM "$server_pid" 2>/dev/null || true; fi
  wait 2>/dev/null || true
}
trap cleanup EXIT

"$server_bin" --listen=127.0.0.1:0 --metrics_listen=127.0.0.1:0 \
  --threads="${THREADS:-0}" >"$out/server.log" 2>&1 &
server_pid=$!
port=
metrics_port=
for _ in $(seq 1 100); do
  port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]\+\).*/\1/p' \
    "$out/server.log" | head -1 || true)
  metrics_port=$(sed -n 's/.*metrics on port \([0-9]\+\).*/\1/p' \
    "$out/server.log" | head -1 || true)
  [[ -n $port && -n $metrics_port ]] && break
  sleep 0.1
done
[[ -n $port && -n $metrics_port ]] ||
  { echo "soak: server did not start: $(cat "$out/server.log")" >&2; exit 1; }

# metric NAME: the value of an unlabelled metric.
metric() {
  /usr/bin/python3 - "$metrics_port" "$1" <<'PY'
import sys, urllib.request
port, name = sys.argv[1], sys.argv[2]
text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read()
for line in text.decode().splitlines():
    if line.startswith(name + " ") or line.startswith(name + "{}"):
        print(int(float(line.split()[-1])))
        break
PY
}

# run_loads PREFIX DURATION RATES...: every load at once (rate 0: open
# loop); reports in OUT/PREFIX-NAME.json. Returns non-zero if any failed.
run_loads() {
  local prefix=$1 seconds=$2
  shift 2
  local pids=() failed=0
  for spec in "${loads[@]}"; do
    local name=${spec%%:*} args=${spec#*:*:}
    # shellcheck disable=SC2086  # ARGS is a list of flags
    "$load_bin" --server="127.0.0.1:$port" $args --rate="$1" \
      --duration="$seconds" --baseline=false \
      --json="$out/$prefix-$name.json" >"$out/$prefix-$name.log" 2>&1 &
    pids+=($!)
    shift
  done
  for pid in "${pids[@]}"; do
    wait "$pid" || failed=1
  done
  return $failed
}

echo "soak: server pid $server_pid on port $port (metrics $metrics_port);" \
  "capacity for ${capacity_seconds}s"
zeros=()
for _ in "${loads[@]}"; do zeros+=(0); done
run_loads capacity "$capacity_seconds" "${zeros[@]}" ||
  { echo "soak: errors while measuring capacity" >&2; exit 1; }
rates=()
for spec in "${loads[@]}"; do
  name=${spec%%:*}
  senders=${spec#*:}
  senders=${senders%%:*}
  rates+=("$(/usr/bin/python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["service"]
rate = float(sys.argv[2]) * r["messages_per_second"] / int(sys.argv[3])
print(f"{rate:.1f}")
' "$out/capacity-$name.json" "$fraction" "$senders")")
done
echo "soak: per-sender rates ${rates[*]} Hz for ${duration}s in ${window}s windows"

# VmRSS sampler: seconds since the soak started, then kB.
start=$(date +%s.%N)
(
  while kill -0 "$server_pid" 2>/dev/null; do
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$server_pid/status" 2>/dev/null ||
      true)
    [[ -n $rss ]] && echo "$(date +%s.%N) $rss" >>"$out/rss.txt"
    sleep "$rss_interval"
  done
) &
sampler_pid=$!

windows=$(( (duration + window - 1) / window ))
status=0
: >"$out/windows.txt"
for w in $(seq 1 "$windows"); do
  t0=$(date +%s.%N)
  if ! run_loads "window$w" "$window" "${rates[@]}"; then
    echo "soak: window $w had errors" >&2
    status=1
  fi
  t1=$(date +%s.%N)
  # Sessions close as their streams finish; allow the server a moment.
  open=
  for _ in $(seq 1 20); do
    open=$(metric posewire_active_sessions)
    [[ $open == 0 ]] && break
    sleep 0.1
  done
  echo "$w $t0 $t1 $open" >>"$out/windows.txt"
  echo "soak: window $w/$windows done, $open sessions open afterwards"
done

kill "$sampler_pid" 2>/dev/null || true
wait "$sampler_pid" 2>/dev/null || true
sampler_pid=
/usr/bin/python3 -c '
import sys, urllib.request
sys.stdout.write(urllib.request.urlopen(
    f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=5).read().decode())
' "$metrics_port" >"$out/metrics.txt" || true
kill -TERM "$server_pid"
server_status=0
wait "$server_pid" || server_status=$?
server_pid=

names=()
for spec in "${loads[@]}"; do names+=("${spec%%:*}"); done
/usr/bin/python3 - "$out" "$start" "$warmup" "$window" "$fraction" \
  "${RSS_GROWTH:-0.05}" "${P99_DRIFT:-2.0}" "$server_status" "$status" \
  "${names[@]}" <<'PY' | tee "$out/report.md"
import json, statistics, sys
(out, start, warmup, window, fraction, growth_bound, drift_bound,
 server_status, load_status), names = sys.argv[1:10], sys.argv[10:]
start, warmup, window = float(start), float(warmup), float(window)
# Whole windows: the first ceil(WARMUP / WINDOW) are warm-up.
warm_windows = -(-int(warmup) // int(window))
growth_bound, drift_bound = float(growth_bound), float(drift_bound)
failures = []
if int(load_status):
    failures.append("a posewire-load run failed (errors or sent != answered)")
if int(server_status):
    failures.append(f"server exited {server_status} on SIGTERM")

windows = []
for line in open(f"{out}/windows.txt"):
    w, t0, t1, open_sessions = line.split()
    windows.append((int(w), float(t0), float(t1), open_sessions))
    if open_sessions != "0":
        failures.append(f"window {w}: {open_sessions} sessions still open")
rss = [(float(t), int(kb)) for t, kb in
       (line.split() for line in open(f"{out}/rss.txt"))]

def load(prefix, name):
    return json.load(open(f"{out}/{prefix}-{name}.json"))["service"]

print("| load | capacity msg/s | soak rate msg/s (total) |")
print("|---|---|---|")
for n in names:
    cap = load("capacity", n)
    rate = json.load(open(f"{out}/window1-{n}.json"))
    print(f"| {n} | {cap['messages_per_second']:.0f} "
          f"| {rate['rate'] * rate['senders']:.0f} "
          f"({float(fraction) * 100:.0f}% of capacity) |")
print()
print("| window | end s | " + " | ".join(
    f"{n} msg/s | {n} p50 us | {n} p99 us | {n} errors" for n in names)
    + " | VmRSS MiB (median) |")
print("|---|---|" + "---|---|---|---|" * len(names) + "---|")
post = []  # (window, {name: p99}, median rss)
for w, t0, t1, _ in windows:
    cells = []
    p99 = {}
    for n in names:
        r = load(f"window{w}", n)
        lat = r["latency_us"]
        p99[n] = lat["p99"]
        if r["error_count"] or r["sent"] != r["answered"]:
            failures.append(f"window {w} {n}: {r['error_count']} errors, "
                            f"sent {r['sent']} answered {r['answered']}")
        cells.append(f"{r['messages_per_second']:.0f} | {lat['p50']:.0f} "
                     f"| {lat['p99']:.0f} | {r['error_count']}")
    samples = [kb for t, kb in rss if t0 <= t <= t1]
    median_rss = statistics.median(samples) if samples else float("nan")
    warm = w <= warm_windows
    if not warm:
        post.append((w, p99, median_rss))
    print(f"| {w}{' (warm-up)' if warm else ''} | {t1 - start:.0f} | "
          + " | ".join(cells) + f" | {median_rss / 1024:.1f} |")
print()

if len(post) < 2:
    failures.append("fewer than two windows after warm-up")
else:
    first_rss, last_rss = post[0][2], post[-1][2]
    growth = last_rss / first_rss - 1
    after = [kb for t, kb in rss if t >= windows[warm_windows][1]]
    print(f"VmRSS: first window after warm-up {first_rss / 1024:.1f} MiB, "
          f"last window {last_rss / 1024:.1f} MiB: growth {growth * 100:+.2f}% "
          f"(bound {growth_bound * 100:.0f}%); peak after warm-up "
          f"{max(after) / 1024:.1f} MiB; {len(rss)} samples")
    if growth >= growth_bound:
        failures.append(f"VmRSS grew {growth * 100:.2f}% after warm-up")
    half = len(post) // 2
    for n in names:
        early = statistics.median(p[1][n] for p in post[:half])
        late = statistics.median(p[1][n] for p in post[half:])
        print(f"p99 {n}: median of window p99s {early:.0f} us in the first "
              f"half after warm-up, {late:.0f} us in the second: "
              f"x{late / early:.2f} (bound x{drift_bound:.1f})")
        if late > drift_bound * early:
            failures.append(f"{n} p99 drifted x{late / early:.2f}")
print()
print("RESULT: " + ("PASS" if not failures else "FAIL: " + "; ".join(failures)))
sys.exit(1 if failures else 0)
PY
