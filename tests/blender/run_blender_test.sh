#!/usr/bin/env bash
# Runs one of the add-on's test scripts inside headless Blender against the
# real posewire-server, started here on a free loopback port.
#
# usage: run_blender_test.sh SERVER_BINARY STUBS_DIR SOURCE_DIR DATA_DIR TEST
#   STUBS_DIR:  the build's generated Python stubs (<build>/clients/python/stubs)
#   SOURCE_DIR: the repository root (clients/python, clients/blender)
#   TEST:       a script in tests/blender, e.g. test_live_bake.py
#
# Exits 77 (CTest's skip code here) when Blender is not installed. Blender
# runs with --factory-startup, a clean PATH (so its Python is Debian's
# /usr/bin/python3.11, where python3-grpcio imports) and a temporary
# BLENDER_USER_SCRIPTS whose addons/ links to the add-on in the tree.
set -euo pipefail

server_bin=$1
stubs_dir=$2
source_dir=$3
data_dir=$4
test_script=$5

blender=$(PATH=/usr/bin:/bin command -v blender || true)
if [[ -z $blender ]]; then
  echo "SKIP: blender is not installed (scripts/bootstrap.sh installs it)"
  exit 77
fi

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
  tail -50 "$work/server.log" >&2 || true
  exit 1
}

: >"$work/server.log"
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

mkdir -p "$work/scripts/addons" "$work/home"
ln -s "$source_dir/clients/blender/posewire_blender" \
  "$work/scripts/addons/posewire_blender"

status=0
env -i PATH=/usr/bin:/bin HOME="$work/home" \
  BLENDER_USER_SCRIPTS="$work/scripts" \
  PYTHONPATH="$source_dir/clients/python" \
  POSEWIRE_PYTHON_STUBS="$stubs_dir" \
  PYTHONDONTWRITEBYTECODE=1 \
  "$blender" -b --factory-startup --python-exit-code 1 \
  --python "$source_dir/tests/blender/$test_script" \
  -- "$data_dir" "127.0.0.1:$port" >"$work/blender.log" 2>&1 || status=$?
cat "$work/blender.log"
[[ $status -eq 0 ]] || fail "$test_script failed in Blender (exit $status)"
grep -q "^OK" "$work/blender.log" || fail "$test_script: no unittest OK line"

kill -TERM "$server_pid"
status=0
wait "$server_pid" || status=$?
server_pid=
[[ $status -eq 0 ]] || fail "server exited with $status after SIGTERM"
echo "PASS: $test_script in $("$blender" -b --factory-startup --version 2>/dev/null | head -1)"
