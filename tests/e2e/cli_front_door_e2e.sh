#!/usr/bin/env bash
# The front door of the real binaries, as a user meets it:
#   - --help of posewire, posewire-server and posewire-load: exit 0, that
#     binary's own flags (and not the others'), the exit codes, no absolute
#     path of the source or build tree; --version: version and revision;
#   - `posewire help` (exit 0) and `posewire` alone (exit 2, usage on stderr);
#   - an address without a port refused by all three (exit 2);
#   - nothing listening: info, health, solve and stream print the same
#     message naming the address, plaintext, and posewire-server --listen;
#   - a busy port: the second server prints one line and exits 1;
#   - `posewire stream` to a file: lines appear while it runs; SIGINT prints
#     the summary and exits 0; an absurd --frames is refused;
#   - a TLS + token server (tests/data/tls): reached with --tls_ca and
#     --token_file; without the token UNAUTHENTICATED with a hint; over
#     plaintext the connection-failure message.
#
# usage: cli_front_door_e2e.sh SERVER_BINARY CLI_BINARY LOAD_BINARY DATA_DIR
set -euo pipefail

server_bin=$1
cli_bin=$2
load_bin=$3
data_dir=$4
walk=$data_dir/cmu_131_01_walk.bvh
source_dir=$(cd "$data_dir/../.." && pwd)
build_dir=$(cd "$(dirname "$cli_bin")/.." && pwd)
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# expect_contains LABEL TEXT NEEDLE
expect_contains() {
  grep -qF -- "$3" <<<"$2" || fail "$1: expected to find '$3' in:
$2"
}

# expect_absent LABEL TEXT NEEDLE
expect_absent() {
  if grep -qF -- "$3" <<<"$2"; then
    fail "$1: did not expect '$3' in:
$2"
  fi
}

# run CMD...: runs CMD with its standard output in $work/out and its
# standard error in $work/err; sets status to its exit code.
run() {
  status=0
  "$@" >"$work/out" 2>"$work/err" || status=$?
}

# --- --help and --version of each binary -----------------------------------
check_help() {
  local label=$1 bin=$2 own=$3 foreign=$4 status flag
  run "$bin" --help
  [[ $status -eq 0 ]] || fail "$label --help exited $status, not 0"
  local help
  help=$(cat "$work/out")
  for flag in $own; do expect_contains "$label --help" "$help" "  --$flag="; done
  for flag in $foreign; do expect_absent "$label --help" "$help" "--$flag="; done
  expect_contains "$label --help" "$help" "Exit codes:"
  expect_contains "$label --help" "$help" "  --version"
  expect_absent "$label --help" "$help" "$source_dir"
  expect_absent "$label --help" "$help" "$build_dir"
  expect_absent "$label --help" "$help" "No flags matched"

  run "$bin" --version
  [[ $status -eq 0 ]] || fail "$label --version exited $status, not 0"
  grep -qE "^$label [0-9]+\.[0-9]+\.[0-9]+ \(revision [^)]+\)$" \
    "$work/out" || fail "$label --version: unexpected '$(cat "$work/out")'"
  expect_absent "$label --version" "$(cat "$work/out")" "Debug build"

  # --helpfull lists the libraries' flags too, none under our paths.
  "$bin" --helpfull >"$work/out" 2>&1 || true
  expect_absent "$label --helpfull" "$(cat "$work/out")" "$source_dir"
}
check_help posewire "$cli_bin" \
  "server timeout token_file token tls tls_ca tls_server_name frames rate" \
  "listen tls_cert streams"
check_help posewire-server "$server_bin" \
  "listen threads tls_cert tls_key auth_token_file shutdown_grace" \
  "server frames streams"
check_help posewire-load "$load_bin" \
  "server mode streams callers duration skeleton" \
  "listen frames tls_cert"

# --- posewire help, and posewire alone --------------------------------------
run "$cli_bin" help
[[ $status -eq 0 ]] || fail "posewire help exited $status"
for command in info health inspect solve stream; do
  expect_contains "posewire help" "$(cat "$work/out")" "  $command"
done
run "$cli_bin"
[[ $status -eq 2 ]] || fail "posewire with no command exited $status, not 2"
expect_contains "posewire alone (stderr)" "$(cat "$work/err")" "Commands:"

# --- addresses without a port -----------------------------------------------
run "$cli_bin" info --server=127.0.0.1
[[ $status -eq 2 ]] || fail "posewire --server=127.0.0.1 exited $status, not 2"
expect_contains "posewire no port" "$(cat "$work/err")" "--server=127.0.0.1: no port"
for bad in 127.0.0.1:70000 127.0.0.1: ::1 :50051; do
  run "$cli_bin" health --server="$bad"
  [[ $status -eq 2 ]] || fail "posewire --server=$bad exited $status, not 2"
  expect_contains "posewire --server=$bad" "$(cat "$work/err")" "write HOST:PORT"
done
run "$load_bin" --server=localhost --duration=1
[[ $status -eq 2 ]] || fail "posewire-load --server=localhost exited $status"
expect_contains "load no port" "$(cat "$work/err")" "--server=localhost: no port"
run "$load_bin" --server=127.0.0.1:1 --resume --resume_snapshot_every=0
[[ $status -eq 2 ]] || fail "posewire-load --resume_snapshot_every=0 exited $status"
expect_contains "load snapshot period" "$(cat "$work/err")" \
  "--resume_snapshot_every must be > 0 with --resume"
run "$server_bin" --listen=localhost
[[ $status -eq 2 ]] || fail "posewire-server --listen=localhost exited $status"
expect_contains "server no port" "$(cat "$work/out")$(cat "$work/err")" \
  "--listen=localhost: no port"

# --- nothing listening: one message from every command ----------------------
unreachable="cannot reach a posewire server at 127.0.0.1:1 (plaintext, no TLS)"
for command in info health "solve $walk" "stream $walk"; do
  # shellcheck disable=SC2086  # the command and its FILE are two words
  run "$cli_bin" $command --server=127.0.0.1:1 --timeout=5s
  [[ $status -eq 1 ]] || fail "$command against a closed port exited $status"
  err=$(cat "$work/err")
  expect_contains "$command, closed port" "$err" "UNAVAILABLE: $unreachable"
  expect_contains "$command, closed port" "$err" \
    "Is posewire-server running there (posewire-server --listen=127.0.0.1:1)?"
done

# --- a plaintext server: busy port, stream to a file, SIGINT, --frames ------
start_server plain "$server_bin" --threads=2
run "$server_bin" --listen="$addr"
[[ $status -eq 1 ]] || fail "a second server on $addr exited $status, not 1"
busy=$(cat "$work/out" "$work/err")
[[ $(wc -l <<<"$busy") -eq 1 ]] || fail "busy port: expected one line, got:
$busy"
expect_contains "busy port" "$busy" "cannot listen on $addr: the address is already in use"

run "$cli_bin" stream "$walk" --server="$addr" --frames=2147483647
[[ $status -eq 2 ]] || fail "--frames=2147483647 exited $status, not 2"
expect_contains "--frames too large" "$(cat "$work/err")" "from 1 to 10000000"

"$cli_bin" stream "$walk" --server="$addr" --frames=1000000 --rate=50 \
  >"$work/stream.out" 2>"$work/stream.err" &
stream_pid=$!
extra_pids+=("$stream_pid")
# Lines reach the file while the stream runs (flushed per line).
for _ in $(seq 1 100); do
  [[ $(grep -c '^frame ' "$work/stream.out" || true) -ge 5 ]] && break
  sleep 0.1
done
[[ $(grep -c '^frame ' "$work/stream.out" || true) -ge 5 ]] ||
  fail "stream to a file: no frame lines after 10 s:
$(cat "$work/stream.out" "$work/stream.err")"
kill -INT "$stream_pid"
status=0
wait "$stream_pid" || status=$?
extra_pids=()
streamed=$(cat "$work/stream.out")
[[ $status -eq 0 ]] || fail "stream after SIGINT exited $status, not 0:
$streamed
$(cat "$work/stream.err")"
expect_contains "stream SIGINT" "$streamed" "interrupted: SIGINT after"
expect_contains "stream SIGINT" "$streamed" "errors:      0"
expect_contains "stream SIGINT" "$streamed" "latency_us:  p50="
stop_server_expect_exit_0 plain

# --- a TLS + token server ---------------------------------------------------
printf '# accepted tokens\npw-e2e-token\n' >"$work/tokens.txt"
printf 'pw-e2e-token\n' >"$work/token"
start_server secure "$server_bin" --threads=2 \
  --tls_cert="$data_dir/tls/server.crt" --tls_key="$data_dir/tls/server.key" \
  --auth_token_file="$work/tokens.txt"
secure=(--server="$addr" --tls_ca="$data_dir/tls/server.crt")

info=$("$cli_bin" info "${secure[@]}" --token_file="$work/token") ||
  fail "info over TLS with the token failed"
expect_contains "TLS info" "$info" "version:"
"$cli_bin" stream "$walk" "${secure[@]}" --token_file="$work/token" \
  --frames=5 --rate=0 >"$work/out" 2>&1 || fail "TLS stream failed:
$(cat "$work/out")"
expect_contains "TLS stream" "$(cat "$work/out")" "errors:      0"
# The certificate is for localhost and 127.0.0.1: a name override works.
"$cli_bin" health "${secure[@]}" --tls_server_name=localhost >/dev/null ||
  fail "health over TLS with --tls_server_name=localhost failed"

run "$cli_bin" info "${secure[@]}"
[[ $status -eq 1 ]] || fail "info without the token exited $status, not 1"
expect_contains "no token" "$(cat "$work/err")" "UNAUTHENTICATED"
expect_contains "no token" "$(cat "$work/err")" "--token_file"

run "$cli_bin" info --server="$addr" --token_file="$work/token"
[[ $status -eq 1 ]] || fail "plaintext info to a TLS server exited $status"
expect_contains "plaintext to TLS" "$(cat "$work/err")" \
  "cannot reach a posewire server at $addr (plaintext, no TLS)"
stop_server_expect_exit_0 secure

echo "PASS: --help, --version, help, ports, unreachable, busy port, stream SIGINT, TLS + token"
