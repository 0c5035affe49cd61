#!/usr/bin/env bash
# Smoke run of posewire-load against the real posewire-server: a few seconds
# of streams and of unary calls with small settings. Asserts only that
# nothing failed and the counts add up (sent == answered, zero errors, in
# both the service and the in-process phase); never a speed threshold.
#
# usage: load_smoke_e2e.sh SERVER_BINARY LOAD_BINARY DATA_DIR PYTHON
set -euo pipefail

server_bin=$1
load_bin=$2
data_dir=$3
python=${4:-/usr/bin/python3}
work=$(mktemp -d)
server_pid=
cleanup() {
  if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -KILL "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  echo "--- server log ---" >&2
  cat "$work/server.log" >&2 || true
  exit 1
}

: >"$work/server.log"  # exists before the server writes, so polling never races
"$server_bin" --listen=127.0.0.1:0 --threads=2 >"$work/server.log" 2>&1 &
server_pid=$!
port=
for _ in $(seq 1 100); do
  port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]\+\).*/\1/p' "$work/server.log" 2>/dev/null | head -1 || true)
  [[ -n $port ]] && break
  kill -0 "$server_pid" 2>/dev/null || fail "server exited during start-up"
  sleep 0.1
done
[[ -n $port ]] || fail "server did not report its port within 10 s"
addr=127.0.0.1:$port

# check_json FILE: zero errors and sent == answered > 0 in both phases.
check_json() {
  "$python" - "$1" <<'PY' || fail "report $1 does not add up"
import json, sys
report = json.load(open(sys.argv[1]))
for phase in ("service", "in_process"):
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
check_json "$work/stream.json"

"$load_bin" --server="$addr" --mode=unary --callers=2 --characters=2 \
  --op_mix=spring --rate=200 --duration=2 \
  --skeleton="$data_dir/cmu_131_01_walk.bvh" \
  --json="$work/unary.json" >"$work/unary.log" 2>&1 \
  || { cat "$work/unary.log"; fail "posewire-load unary mode failed"; }
check_json "$work/unary.json"

"$load_bin" --server="$addr" --mode=stream --streams=1 --characters=2 \
  --op_mix=fullbody --duration=2 --skeleton="$data_dir/cmu_131_01_walk.bvh" \
  --json="$work/fullbody.json" >"$work/fullbody.log" 2>&1 \
  || { cat "$work/fullbody.log"; fail "posewire-load fullbody mix failed"; }
check_json "$work/fullbody.json"

# A mix that does not exist is refused up front with a clear message.
if "$load_bin" --server="$addr" --op_mix=juggling --duration=1 \
     >"$work/unknown.log" 2>&1; then
  fail "--op_mix=juggling should be refused"
fi
grep -q "unknown mix" "$work/unknown.log" || fail "unknown mix: unclear message"

kill -TERM "$server_pid"
wait "$server_pid" || fail "server did not exit 0 on SIGTERM"
server_pid=
echo "PASS"
