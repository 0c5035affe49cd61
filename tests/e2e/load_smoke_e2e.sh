#!/usr/bin/env bash
# Smoke run of posewire-load against the real posewire-server: a few seconds
# of streams and of unary calls with small settings. Asserts only that
# nothing failed and the counts add up (sent == answered, zero errors, in
# both the service and the in-process phase, and the echo baseline's in
# stream mode), then a tiny capacity search whose report must hold the
# three capacities and finite ratios; never a speed threshold.
#
# usage: load_smoke_e2e.sh SERVER_BINARY LOAD_BINARY DATA_DIR PYTHON
set -euo pipefail

server_bin=$1
load_bin=$2
data_dir=$3
python=${4:-/usr/bin/python3}
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

start_server server "$server_bin" --threads=2

# check_json FILE: zero errors and sent == answered > 0 in every phase.
check_json() {
  "$python" - "$1" <<'PY' || fail "report $1 does not add up"
import json, sys
report = json.load(open(sys.argv[1]))
for phase in ("service", "echo", "in_process"):
    if phase == "echo" and report["mode"] != "stream":
        continue
    p = report[phase]
    print(f"{phase}: sent {p['sent']} answered {p['answered']} "
          f"errors {p['errors']} character_frames {p['character_frames']}")
    assert p["sent"] > 0, f"{phase}: nothing sent"
    assert p["sent"] == p["answered"], f"{phase}: sent != answered"
    assert p["error_count"] == 0 and not p["errors"], f"{phase}: errors"
    assert p["character_frames"] == p["answered"] * report["characters"], \
        f"{phase}: character frames do not match messages x characters"
PY
}

"$load_bin" --server="$addr" --mode=stream --streams=2 --characters=3 \
  --op_mix=fk_ik --duration=3 --skeleton="$data_dir/cmu_131_01_walk.bvh" \
  --json="$work/stream.json" >"$work/stream.log" 2>&1 \
  || { cat "$work/stream.log"; fail "posewire-load stream mode failed"; }
grep -q "ratio service/in-process" "$work/stream.log" \
  || { cat "$work/stream.log"; fail "stream: no baseline ratio printed"; }
grep -q "ratio service/echo" "$work/stream.log" \
  || { cat "$work/stream.log"; fail "stream: no echo ratio printed"; }
check_json "$work/stream.json"

# The capacity search in short windows (a warm-up to match), with a
# threshold (1 s) no window misses for latency alone: each target's
# capacity is > 0 and the ratios are finite and > 0 (what they are depends
# on the machine).
"$load_bin" --server="$addr" --mode=stream --streams=2 --channels=2 \
  --rate=30 --duration=1 --capacity_search --search_window=0.2 --warmup=0.05 \
  --p99_ms=1000 --search_steps=1 --skeleton="$data_dir/cmu_131_01_walk.bvh" \
  --json="$work/capacity.json" >"$work/capacity.log" 2>&1 \
  || { cat "$work/capacity.log"; fail "posewire-load --capacity_search failed"; }
grep -q "ratio service/echo: .* (capacity at p99" "$work/capacity.log" \
  || { cat "$work/capacity.log"; fail "capacity: no echo ratio printed"; }
"$python" - "$work/capacity.json" <<'PY' || { cat "$work/capacity.log"; fail "capacity report is not sane"; }
import json, math, sys
report = json.load(open(sys.argv[1]))
assert report["capacity_search"] is True
assert report["search_tries"] == 3, report["search_tries"]
for target in ("service", "echo", "in_process"):
    c = report[target]
    print(f"{target}: {c['messages_per_second']} messages/s at "
          f"{c['rate_per_sender']} Hz/sender, p99 {c['p99_us']} us")
    assert c["messages_per_second"] > 0, f"{target}: no capacity"
    assert c["windows"] >= 1, f"{target}: no window"
for ratio in ("ratio_echo", "ratio"):
    assert math.isfinite(report[ratio]) and report[ratio] > 0, ratio
PY
# The latency plot script turns the report into a PNG titled from it.
plot=$(dirname "${BASH_SOURCE[0]}")/../../bench/load/plot_latency.sh
bash "$plot" "$work/latency.png" "$work/stream.json" >"$work/plot.log" 2>&1 \
  || { cat "$work/plot.log"; fail "plot_latency.sh failed"; }
[[ $(head -c 4 "$work/latency.png" | od -An -c | tr -d ' ') == 211PNG ]] \
  || fail "plot_latency.sh wrote no PNG"
if bash "$plot" "$work/bad.png" "$work/stream.log" >"$work/plot-bad.log" 2>&1; then
  fail "plot_latency.sh accepted a file that is not a report"
fi

"$load_bin" --server="$addr" --mode=unary --callers=2 --characters=2 \
  --op_mix=spring --rate=200 --duration=2 \
  --skeleton="$data_dir/cmu_131_01_walk.bvh" \
  --json="$work/unary.json" >"$work/unary.log" 2>&1 \
  || { cat "$work/unary.log"; fail "posewire-load unary mode failed"; }
check_json "$work/unary.json"

# This one with the generator confined to the last CPU (--cpus), as
# bench/load/scenarios.sh runs it; the report says where it ran.
last_cpu=$(($(nproc) - 1))
"$load_bin" --server="$addr" --mode=stream --streams=1 --characters=2 \
  --op_mix=fullbody --duration=2 --skeleton="$data_dir/cmu_131_01_walk.bvh" \
  --cpus="$last_cpu" \
  --json="$work/fullbody.json" >"$work/fullbody.log" 2>&1 \
  || { cat "$work/fullbody.log"; fail "posewire-load fullbody mix failed"; }
check_json "$work/fullbody.json"
grep -q "\"generator_cpus\": \"$last_cpu\"" "$work/fullbody.json" \
  || fail "--cpus=$last_cpu: not in the JSON report"

# The referee: timed frames of claimed poses, each tick followed by a hit
# query on the same stream; every tick answered OK by the service, the
# echo (which answers frames and queries in turn) and in process.
"$load_bin" --server="$addr" --mode=stream --streams=2 --characters=4 \
  --op_mix=referee --rays=8 --rate=60 --duration=1 \
  --skeleton="$data_dir/cmu_131_01_walk.bvh" \
  --json="$work/referee.json" >"$work/referee.log" 2>&1 \
  || { cat "$work/referee.log"; fail "posewire-load referee mix failed"; }
check_json "$work/referee.json"

# A CPU the process cannot use is refused up front, naming it.
if "$load_bin" --server="$addr" --cpus=1023 --duration=1 \
     >"$work/cpus.log" 2>&1; then
  fail "--cpus=1023 should be refused"
fi
grep -q "CPU 1023 is not available" "$work/cpus.log" \
  || { cat "$work/cpus.log"; fail "--cpus=1023: unclear message"; }

# A mix that does not exist is refused up front with a clear message.
if "$load_bin" --server="$addr" --op_mix=juggling --duration=1 \
     >"$work/unknown.log" 2>&1; then
  fail "--op_mix=juggling should be refused"
fi
grep -q "unknown mix" "$work/unknown.log" || fail "unknown mix: unclear message"

# An even number of windows per rate cannot have a majority: refused.
if "$load_bin" --server="$addr" --capacity_search --search_tries=2 \
     --duration=1 >"$work/tries.log" 2>&1; then
  fail "--search_tries=2 should be refused"
fi
grep -q "search_tries odd" "$work/tries.log" \
  || { cat "$work/tries.log"; fail "--search_tries=2: unclear message"; }

# A warm-up as long as the windows would leave no latency to judge:
# refused, naming both flags.
if "$load_bin" --server="$addr" --capacity_search --search_window=0.2 \
     --duration=1 >"$work/warmup.log" 2>&1; then
  fail "--warmup=0.5 with --search_window=0.2 should be refused"
fi
grep -q "warmup must be >= 0 and less than --duration and --search_window" \
  "$work/warmup.log" || { cat "$work/warmup.log"; fail "--warmup: unclear message"; }

stop_server_expect_exit_0 server
echo "PASS"
