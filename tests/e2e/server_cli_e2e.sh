#!/usr/bin/env bash
# Starts the real posewire-server on a free loopback port, drives it with the
# real posewire CLI (info, health), inspects real assets, then stops the
# server with SIGTERM and checks it exits 0.
#
# usage: server_cli_e2e.sh SERVER_BINARY CLI_BINARY DATA_DIR
set -euo pipefail

server_bin=$1
cli_bin=$2
data_dir=$3
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# expect_contains LABEL TEXT NEEDLE
expect_contains() {
  grep -qF -- "$3" <<<"$2" || fail "$1: expected to find '$3' in:
$2"
}

start_server server "$server_bin" --threads=2 --max_joints=333

info=$("$cli_bin" info --server="$addr") || fail "posewire info failed"
expect_contains "info" "$info" "version:"
expect_contains "info" "$info" "max_joints_per_skeleton:  333"
expect_contains "info" "$info" "threads:     2"
# Each op with what a frame may update and its counts' ranges on this server.
expect_contains "info" "$info" "two_bone_ik          updates: target, bend_goal, weight, pole_vector, end_rotation"
expect_contains "info" "$info" "ccd_ik               updates: target, weight; max_iterations in [0, 1000]"
expect_contains "info" "$info" "spring_bones         updates: gravity, external_force, wind, colliders; rig.max_substeps in [1, 64]"

health=$("$cli_bin" health --server="$addr") || fail "posewire health failed: $health"
[[ $health == SERVING ]] || fail "health: expected SERVING, got '$health'"
health=$("$cli_bin" health --server="$addr" --service=) || fail "overall health failed"
[[ $health == SERVING ]] || fail "overall health: expected SERVING, got '$health'"

walk=$("$cli_bin" inspect "$data_dir/cmu_131_01_walk.bvh") || fail "inspect walk failed"
expect_contains "inspect walk" "$walk" "31 joints, 1 clip"
expect_contains "inspect walk" "$walk" "LeftKnee"
fox=$("$cli_bin" inspect "$data_dir/Fox.glb") || fail "inspect Fox failed"
expect_contains "inspect Fox" "$fox" "24 joints, 3 clips"
expect_contains "inspect Fox" "$fox" "Survey"

# A bad file is an error with a message, exit code 1, not a crash.
printf 'HIERARCHY\nROOT Hips\n{\n OFFSET 0 0 zero\n' >"$work/bad.bvh"
if bad=$("$cli_bin" inspect "$work/bad.bvh" 2>&1); then
  fail "inspect of a malformed file succeeded"
fi
expect_contains "inspect bad" "$bad" "bad.bvh:4"

# Unreachable server: clear error, non-zero exit.
if "$cli_bin" info --server=127.0.0.1:1 --timeout=1s >/dev/null 2>&1; then
  fail "info against a closed port succeeded"
fi

stop_server_expect_exit_0 server
grep -q "SIGTERM received" "$work/server.log" || fail "no drain message in the log"
echo "PASS: server on $addr answered info, health and stopped cleanly"
