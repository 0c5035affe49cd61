#!/usr/bin/env bash
# Starts the real posewire-server on a free loopback port and runs the Python
# client's unittest files (clients/python/tests/test_client.py and
# test_batcher.py) and its example script against it with Debian's Python,
# then stops the server with SIGTERM and checks it exits 0.
# tests/test_failover.py starts two servers of its own and loses one under a
# resuming session.
#
# usage: python_client_e2e.sh SERVER_BINARY PYTHON STUBS_DIR CLIENT_DIR
#   STUBS_DIR:  the build's generated stubs (<build>/clients/python/stubs)
#   CLIENT_DIR: clients/python in the source tree
set -euo pipefail

server_bin=$1
python=$2
stubs_dir=$3
client_dir=$4
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[[ -f $stubs_dir/posewire/v1/posewire_pb2.py ]] ||
  fail "no generated stubs in $stubs_dir (build the posewire_python target)"

start_server server "$server_bin" --threads=2

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

# FrameBatcher: most tests use this server; two start their own (one allowing
# two characters per frame, one killed under the batcher).
status=0
POSEWIRE_SERVER_BINARY=$server_bin "$python" "$client_dir/tests/test_batcher.py" \
  >"$work/batcher.log" 2>&1 || status=$?
cat "$work/batcher.log"
[[ $status -eq 0 ]] || fail "Python batcher test failed (exit $status)"

# Replicas lost under a resuming session: the test starts its own servers.
status=0
POSEWIRE_SERVER_BINARY=$server_bin "$python" "$client_dir/tests/test_failover.py" \
  >"$work/failover.log" 2>&1 || status=$?
cat "$work/failover.log"
[[ $status -eq 0 ]] || fail "Python failover test failed (exit $status)"

example=$("$python" "$client_dir/examples/solve_walk.py" --server="$addr" 2>&1) ||
  fail "example failed: $example"
grep -qF "frame 12" <<<"$example" || fail "example output lacks frame 12: $example"

stop_server_expect_exit_0 server
echo "PASS: Python client against the server on $addr"
