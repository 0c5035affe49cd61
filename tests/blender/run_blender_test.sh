#!/usr/bin/env bash
# Runs one of the add-on's test scripts inside headless Blender against the
# real posewire-server, started here on a free loopback port.
#
# usage: run_blender_test.sh SERVER_BINARY STUBS_DIR SOURCE_DIR DATA_DIR TEST
#          [two_replicas]
#   STUBS_DIR:  the build's generated Python stubs (<build>/clients/python/stubs)
#   SOURCE_DIR: the repository root (clients/python, clients/blender)
#   TEST:       a script in tests/blender, e.g. test_live_bake.py
#   two_replicas: start a second server; the test gets the gRPC address
#               list of both and the first one's pid, to stop it.
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
replicas=${6:-}

blender=$(PATH=/usr/bin:/bin command -v blender || true)
if [[ -z $blender ]]; then
  echo "SKIP: blender is not installed (scripts/bootstrap.sh installs it)"
  exit 77
fi

# shellcheck source=SCRIPTDIR/../e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../e2e/lib.sh"
start_server server "$server_bin" --threads=2
target=$addr
first_pid=
if [[ $replicas == two_replicas ]]; then
  first_pid=$server_pid
  first_port=$port
  extra_pids+=("$first_pid")
  start_server second "$server_bin" --threads=2
  target="ipv4:127.0.0.1:$first_port,127.0.0.1:$port"
fi

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
  -- "$data_dir" "$target" $first_pid >"$work/blender.log" 2>&1 ||
  status=$?
cat "$work/blender.log"
[[ $status -eq 0 ]] || fail "$test_script failed in Blender (exit $status)"
grep -q "^OK" "$work/blender.log" || fail "$test_script: no unittest OK line"

if [[ -n $first_pid ]]; then
  # The test stopped the first replica with SIGTERM: it must have exited 0.
  first_status=0
  wait "$first_pid" || first_status=$?
  extra_pids=()
  [[ $first_status -eq 0 ]] ||
    fail "the first replica exited $first_status after SIGTERM, not 0"
fi
stop_server_expect_exit_0 server
echo "PASS: $test_script in $("$blender" -b --factory-startup --version 2>/dev/null | head -1)"
