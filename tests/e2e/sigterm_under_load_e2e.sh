#!/usr/bin/env bash
# SIGTERM under load, against the real posewire-server binary driven by the
# real posewire-load and posewire CLI.
#
# 1. Drain: streams and unary callers are running when the server gets
#    SIGTERM with a long grace. Each stream is handed over: once the frame
#    it was solving is answered, it gets its session's snapshot
#    (SessionSnapshot.handover) and ends UNAVAILABLE, which posewire-load
#    counts as a hand-over, not an error (also when the stream's next
#    write met the closed stream before the hand-over was read: gRPC then
#    cancels the call and the snapshot is lost, counted apart as
#    handover_snapshots_lost); at most one frame per stream
#    (sent after its last answer) goes unread, and the server solved
#    exactly the frames answered. Unary calls are answered OK or refused
#    (UNAVAILABLE once the listener is closed; CANCELLED from gRPC for a
#    call that raced the shutdown on an open connection); the server's own
#    count of successful Solves (its last log line) equals the client's, so
#    no call was solved and then dropped; a new call during the drain is
#    refused; the server exits 0.
# 2. Short grace: streams asked to run 300 s, SIGTERM with a 1 s grace.
#    The hand-over ends them inside it; the server exits 0; each stream
#    loses at most the one frame it had in flight (sent but never
#    acknowledged), and every acknowledged frame counted.
#
# Waits are bounded only to end a failing run; no speed is asserted.
#
# usage: sigterm_under_load_e2e.sh SERVER LOAD CLI DATA_DIR PYTHON
set -euo pipefail

server_bin=$1
load_bin=$2
cli_bin=$3
data_dir=$4
python=${5:-/usr/bin/python3}
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# wait_answered LOG N: waits until a load progress line reports at least N
# answered messages.
wait_answered() {
  for _ in $(seq 1 600); do
    local answered
    answered=$(sed -n 's/.*answered \([0-9]\+\) .*/\1/p' "$1" | tail -1)
    [[ -n $answered && $answered -ge $2 ]] && return 0
    sleep 0.1
  done
  fail "$1: load made no progress"
}

# wait_sessions LOG N: waits until the server has admitted session N, so
# every stream is open before the signal (one opened after it would rightly
# be refused, and that is not what these phases test).
wait_sessions() {
  for _ in $(seq 1 600); do
    grep -q "session $2 from" "$1" && return 0
    sleep 0.1
  done
  fail "$1: session $2 never started"
}

load() {
  "$load_bin" --server="$addr" --baseline=false \
    --skeleton="$data_dir/cmu_131_01_walk.bvh" --characters=2 "$@"
}

# ---------------------------------------------------------------- drain --
start_server drain "$server_bin" --threads=2 --log_level=debug \
  --shutdown_grace=60s
load --mode=stream --streams=3 --rate=200 --duration=10 \
  --json="$work/drain_stream.json" >"$work/drain_stream.log" 2>&1 &
extra_pids+=($!)
stream_pid=$!
load --mode=unary --callers=2 --rate=100 --duration=3 \
  --json="$work/drain_unary.json" >"$work/drain_unary.log" 2>&1 &
extra_pids+=($!)
unary_pid=$!
wait_sessions "$work/drain.log" 3
wait_answered "$work/drain_stream.log" 50
wait_answered "$work/drain_unary.log" 20

kill -TERM "$server_pid"
# Wait for the drain to begin, then knock: the listener is closed (or the
# server, with nothing left in flight, is already gone).
for _ in $(seq 1 100); do
  grep -q "SIGTERM received: draining" "$work/drain.log" && break
  sleep 0.1
done
grep -q "SIGTERM received: draining" "$work/drain.log" \
  || fail "drain: no drain line after SIGTERM"
if "$cli_bin" info --server="$addr" --timeout=5s >"$work/drain_info.log" 2>&1
then
  fail "drain: a new call was accepted after SIGTERM"
fi

wait "$unary_pid" || true  # refusals after SIGTERM count as its errors
wait "$stream_pid" || fail "drain: posewire-load (streams) reported errors"
extra_pids=()
wait_server_exit_0 drain
grep -q "stopped; calls by final status" "$work/drain.log" ||
  fail "drain: no 'stopped' line"

"$python" - "$work/drain_stream.json" "$work/drain_unary.json" \
  "$work/drain.log" <<'PY' \
  || fail "drain: counts do not add up"
import json, re, sys
log = open(sys.argv[3]).read()
stream = json.load(open(sys.argv[1]))["service"]
print(f"drain streams: sent {stream['sent']} answered {stream['answered']} "
      f"errors {stream['errors']} handovers {stream['handovers']} "
      f"(snapshot not read: {stream['handover_snapshots_lost']})")
assert stream["sent"] > 0
assert stream["error_count"] == 0, "a stream broke during the drain"
assert stream["handovers"] == 3, "every stream is handed over"
# A frame sent after its stream's last answer is not read.
assert 0 <= stream["sent"] - stream["answered"] <= 3, "a stream frame was lost"
assert len(re.findall(r"session \d+ handed over", log)) == 3
ended = re.findall(r"session \d+ ended after [^:]*: \d+ messages, (\d+) frames",
                   log)
solved = sum(int(n) for n in ended)
print(f"drain streams, server side: {len(ended)} sessions, {solved} frames")
assert len(ended) == 3 and solved == stream["answered"], "frame counts differ"
unary = json.load(open(sys.argv[2]))["service"]
print(f"drain unary: sent {unary['sent']} answered {unary['answered']} "
      f"errors {unary['errors']}")
assert unary["sent"] == unary["answered"], "a unary call got no answer"
ok = unary["answered"] - unary["error_count"]
assert ok > 0, "no unary call succeeded"
# 14 UNAVAILABLE: the listener is closed. 1 CANCELLED: gRPC refused a call
# that reached an open connection after the shutdown began, before our
# handler ran (checked below). Anything else would be a fault.
assert set(unary["errors"]) <= {"1", "14"}, f"unexpected codes {unary['errors']}"
summary = re.search(r"stopped; calls by final status: (.*)", log).group(1)
server = {code: int(n) for code, n in
          re.findall(r"Solve ([A-Z_]+) (\d+)", summary)}
print(f"drain unary, server side: OK {server.get('OK')}, "
      f"CANCELLED {server.get('CANCELLED')}")
assert f"Session UNAVAILABLE 3" in summary, summary
# Every call the server solved reached the client, and the server cut none.
assert server.get("OK") == ok, f"server solved {server.get('OK')}, client got {ok}"
assert server.get("CANCELLED", 0) == 0, "the server cancelled accepted work"
PY

# ---------------------------------------------------------- short grace --
start_server grace "$server_bin" --threads=2 --log_level=debug \
  --shutdown_grace=1s
streams=3
load --mode=stream --streams=$streams --rate=200 --duration=300 \
  --json="$work/grace_stream.json" >"$work/grace_stream.log" 2>&1 &
extra_pids+=($!)
stream_pid=$!
wait_sessions "$work/grace.log" $streams
wait_answered "$work/grace_stream.log" 50
stop_server_expect_exit_0 grace
# The load (asked for 300 s) ends on its own once the server has cut every
# stream; its exit status depends on how it counts a cut stream, so the
# counts below decide.
wait "$stream_pid" || true
extra_pids=()

"$python" - "$work/grace_stream.json" "$streams" "$work/grace.log" <<'PY' \
  || fail "grace: counts do not add up"
import json, re, sys
stream = json.load(open(sys.argv[1]))["service"]
streams = int(sys.argv[2])
# The server's own count of frames it solved, from each session's last line.
ended = re.findall(r"session \d+ ended after [^:]*: \d+ messages, (\d+) frames",
                   open(sys.argv[3]).read())
assert len(ended) == streams, f"{len(ended)} sessions ended, not {streams}"
solved = sum(int(n) for n in ended)
print(f"grace, server side: {solved} frames solved")
# Every frame the client saw answered was solved by the server; at most
# one per stream was solved and then cut before its answer got out.
assert 0 <= solved - stream["answered"] <= streams
print(f"grace streams: sent {stream['sent']} answered {stream['answered']} "
      f"errors {stream['errors']}")
assert stream["answered"] > 0
# Each cut stream had at most one frame sent and not yet acknowledged.
assert 0 <= stream["sent"] - stream["answered"] <= streams
# One error per cut stream: CANCELLED (1) or UNAVAILABLE (14).
assert stream["error_count"] <= streams
assert set(stream["errors"]) <= {"1", "14"}, stream["errors"]
PY
echo "PASS"
