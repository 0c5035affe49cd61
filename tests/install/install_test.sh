#!/usr/bin/env bash
# Installs the build tree into a temporary prefix, then builds the programs
# in tests/install/consumer against it, as a game or tool outside the tree
# would, with CMake (find_package(posewire)) and with pkg-config
# (posewire-assets, posewire-client). posewire_consumer must reach its target
# on a real clip; posewire_client_consumer must get the same solve from a
# real posewire-server, bit for bit. Nothing installed may point back into
# the source or build tree.
#
#   install_test.sh SOURCE_DIR BUILD_DIR CLIP.bvh
set -euo pipefail
src=$1
build=$2
clip=$3
source "$src/tests/e2e/lib.sh"
tmp=$work
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" ||
  fail "cmake --install: $(tail -5 "$tmp/install.log")"
for path in include/solver_core/analytic_ik/two_bone_ik.h \
  include/posewire/v1/posewire.grpc.pb.h include/clients/cpp/posewire_client.h \
  lib/pkgconfig/posewire-client.pc; do
  [[ -f $prefix/$path ]] || fail "$path was not installed"
done
# The installed core headers stand alone: one file that includes every one
# compiles against the prefix (an include of a header left out fails), and
# the only internal headers there are the SIMD lanes public inline code
# composes with.
internal=$(cd "$prefix/include" && find solver_core -path '*/internal/*' | sort)
[[ $internal == "solver_core/model/internal/simd_lanes.h
solver_core/model/internal/simd_lanes_avx2.h" ]] ||
  fail "internal headers installed: $internal"
(cd "$prefix/include" && find solver_core -name '*.h' -not -path '*/internal/*' |
  sort | sed 's/.*/#include "&"/') >"$tmp/all_headers.cc"
g++ -std=c++20 -fsyntax-only -Wall -Werror -I"$prefix/include" \
  -isystem /usr/include/eigen3 "$tmp/all_headers.cc" ||
  fail "the installed core headers do not compile on their own"
leaks=$(grep -rlI -e "$src" -e "$build" "$prefix" || true)
[[ -z $leaks ]] || fail "installed files name the source or build tree: $leaks"

start_server server "$build/server/posewire-server"
# check_output BINARY: runs the core consumer on the clip; it must reach.
check_output() {
  local output
  output=$("$1" "$clip") || fail "$1 exited with $?"
  echo "$output"
  grep -q "(reached: yes)" <<<"$output" || fail "$1 did not reach: $output"
}
# check_client_output BINARY: runs the client consumer against the server;
# it exits 0 only when the server's answer is the local one, bit for bit.
check_client_output() {
  local output
  output=$("$1" "$addr" "$clip") || fail "$1 exited with $?: $output"
  echo "$output"
  grep -q "0 of [0-9]* joints differ" <<<"$output" || fail "$1: $output"
}
echo "--- CMake: find_package(posewire), posewire::assets, posewire::client"
cmake -S "$src/tests/install/consumer" -B "$tmp/cmake-consumer" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  >"$tmp/configure.log" 2>&1 ||
  fail "configure: $(tail -20 "$tmp/configure.log")"
cmake --build "$tmp/cmake-consumer" >"$tmp/build.log" 2>&1 ||
  fail "build: $(tail -30 "$tmp/build.log")"
check_output "$tmp/cmake-consumer/posewire_consumer"
check_client_output "$tmp/cmake-consumer/posewire_client_consumer"
# pkg_config_build NAME SOURCE PACKAGE: compiles SOURCE with PACKAGE's flags.
pkgconfig_dir=$(dirname "$(find "$prefix" -name posewire-assets.pc)")
pkg_config_build() {
  local flags
  flags=$(PKG_CONFIG_PATH=$pkgconfig_dir pkg-config --cflags --libs "$3") ||
    fail "pkg-config $3"
  # shellcheck disable=SC2086  # flags is a list of compiler arguments
  g++ -O2 -o "$tmp/$1" "$src/tests/install/consumer/$2" $flags ||
    fail "g++ with pkg-config $3's flags: $flags"
}
echo "--- pkg-config: posewire-assets"
pkg_config_build pc-consumer main.cc posewire-assets
check_output "$tmp/pc-consumer"
echo "--- pkg-config: posewire-client (+ posewire-assets)"
pkg_config_build pc-client-consumer client_main.cc "posewire-client posewire-assets"
check_client_output "$tmp/pc-client-consumer"
stop_server_expect_exit_0 server
echo "install_test: PASS"
