# shellcheck shell=bash
# What bench/load/cpu_split.sh and wakeups.sh share: a work directory and
# one posewire-server on a free loopback port, both cleaned up on exit.
# Source it after `set -euo pipefail`; it sets $work and an EXIT trap.
#
#   start_server CMD...   runs CMD... --listen=127.0.0.1:0 --threads=2 in
#                         the background (CMD is the server binary, or e.g.
#                         `taskset -c 0 BINARY`, which execs it under the
#                         same pid) and sets $server_pid and $port.

work=$(mktemp -d)
server_pid=
_bench_cleanup() {
  if [[ -n $server_pid ]]; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap _bench_cleanup EXIT

start_server() {
  "$@" --listen=127.0.0.1:0 --threads=2 >"$work/server.log" 2>&1 &
  server_pid=$!
  port=
  for _ in $(seq 1 100); do
    port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]\+\).*/\1/p' \
      "$work/server.log" | head -1 || true)
    [[ -n $port ]] && return 0
    sleep 0.1
  done
  echo "server did not start: $(cat "$work/server.log")" >&2
  exit 1
}
