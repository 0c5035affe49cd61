#!/usr/bin/env bash
# Starts the real posewire-server on a free loopback port and runs the Python
# client's unittest file (clients/python/tests/test_client.py) and its example
# script against it with Debian's Python, then stops the server with SIGTERM
# and checks it exits 0.
#
# usage: python_client_e2e.sh SERVER_BINARY PYTHON STUBS_DIR CLIENT_DIR
#   STUBS_DIR:  the build's generated stubs (<build>/clients/python/stubs)
#   CLIENT_DIR: clients/python in the source tree
set -euo pipefail

server_bin=$1
python=$2
stubs_dir=$3
client_dir=$4
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

[[ -f $stubs_dir/posewire/v1/posewire_pb2.py ]] ||
  fail "no generated stubs in $stubs_dir (build the posewire_python target)"

: >"$work/server.log"  # exists before the server writes, so polling never races
"$server_bin" --listen=127.0.0.1:0 --threads=2 >"$work/server.log" 2>&1 &
server_pid=$!
port=
for _ in $(seq 1 100); do
  port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]\+\).*/\1/p' "$work/server.log" | head -1)
  [[ -n $port ]] && break
  kill -0 "$server_pid" 2>/dev/null || fail "server exited during start-up"
  sleep 0.1
done
[[ -n $port ]] || fail "server did not report its port within 10 s"
addr=127.0.0.1:$port

export PYTHONPATH=$client_dir
export POSEWIRE_PYTHON_STUBS=$stubs_dir
export POSEWIRE_SERVER=$addr
# No bytecode caches in the source tree.
export PYTHONDONTWRITEBYTECODE=1

status=0
"$python" "$client_dir/tests/test_client.py" >"$work/unittest.log" 2>&1 ||
  status=$?
cat "$work/unittest.log"
[[ $status -eq 0 ]] || fail "Python unittest failed (exit $status)"

example=$("$python" "$client_dir/examples/solve_walk.py" --server="$addr" 2>&1) ||
  fail "example failed: $example"
grep -qF "frame 12" <<<"$example" || fail "example output lacks frame 12: $example"

kill -TERM "$server_pid"
status=0
wait "$server_pid" || status=$?
server_pid=
[[ $status -eq 0 ]] || fail "server exited with $status after SIGTERM"
echo "PASS: Python client against the server on $addr"
