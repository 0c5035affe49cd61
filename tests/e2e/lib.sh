# shellcheck shell=bash
# What the end-to-end scripts share: a work directory, a posewire-server on a
# free loopback port, and failure reports with the logs. Source it after
# `set -euo pipefail`:
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#
# Sourcing creates $work (an empty temporary directory) and sets an EXIT trap
# that kills the server and every pid in extra_pids, then removes $work.
# A script that starts other background processes appends their pids to
# extra_pids (extra_pids+=($!)) and empties it once it has waited for them,
# so the trap never signals a pid the system may have reused.

work=$(mktemp -d)
server_pid=
extra_pids=()

_e2e_cleanup() {
  local pid
  for pid in "${extra_pids[@]}" $server_pid; do
    kill -KILL "$pid" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap _e2e_cleanup EXIT

# fail MESSAGE...: prints FAIL: MESSAGE and the last 50 lines of every *.log
# in $work to stderr, then exits 1.
fail() {
  echo "FAIL: $*" >&2
  local f
  for f in "$work"/*.log; do
    [[ -e $f ]] || continue
    echo "--- $(basename "$f") ---" >&2
    tail -n 50 "$f" >&2 || true
  done
  exit 1
}

# start_server NAME SERVER_BIN ARGS...: starts SERVER_BIN
# --listen=127.0.0.1:0 ARGS... in the background, its output in
# $work/NAME.log, and returns once it has logged the port it listens on
# (port 0: the server picks a free one, so no race for a fixed port). Sets
# server_pid, port, addr (127.0.0.1:port) and metrics_port (the port of
# "metrics on port N" in the log, empty when there is none). Fails if the
# server exits first or reports no port within 20 s.
start_server() {
  local name=$1 bin=$2
  shift 2
  : >"$work/$name.log"  # exists before the server writes: polling never races
  "$bin" --listen=127.0.0.1:0 "$@" >"$work/$name.log" 2>&1 &
  server_pid=$!
  port=
  for _ in $(seq 1 200); do
    # `|| true`: sed may die of SIGPIPE once head has its line (pipefail).
    port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]\+\).*/\1/p' \
      "$work/$name.log" | head -1 || true)
    # The metrics line ("metrics off" or "metrics on port N") comes just
    # after the listening one; waiting for it too means metrics_port is
    # never read before it is written.
    [[ -n $port ]] &&
      grep -qE ', metrics (off|on port [0-9]+)' "$work/$name.log" && break
    kill -0 "$server_pid" 2>/dev/null ||
      fail "$name: server exited during start-up"
    sleep 0.1
  done
  [[ -n $port ]] || fail "$name: server did not report its port within 20 s"
  # shellcheck disable=SC2034  # addr and metrics_port are for the caller
  addr=127.0.0.1:$port
  # shellcheck disable=SC2034
  metrics_port=$(sed -n 's/.*metrics on port \([0-9]\+\).*/\1/p' \
    "$work/$name.log" | head -1 || true)
}

# wait_server_exit_0 NAME: waits for the server (already signalled) to exit
# and fails unless its status is 0.
wait_server_exit_0() {
  local status=0
  wait "$server_pid" || status=$?
  server_pid=
  [[ $status -eq 0 ]] || fail "$1: server exited $status after SIGTERM, not 0"
}

# stop_server_expect_exit_0 NAME: sends the server SIGTERM, waits for it and
# fails unless it exits 0.
stop_server_expect_exit_0() {
  kill -TERM "$server_pid"
  wait_server_exit_0 "$1"
}
