#!/usr/bin/env bash
# Installs the build tree into a temporary prefix, then builds the program
# in tests/install/consumer against it twice, as a game or tool outside the
# tree would: with CMake (find_package(posewire)) and with pkg-config
# (posewire-assets). Both must run and reach their target on a real clip,
# and nothing installed may point back into the source or build tree.
#
#   install_test.sh SOURCE_DIR BUILD_DIR CLIP.bvh
set -euo pipefail
src=$1
build=$2
clip=$3
tmp=$(mktemp -d /tmp/posewire-install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

fail() {
  echo "install_test: FAIL: $*" >&2
  exit 1
}

cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" ||
  fail "cmake --install: $(tail -5 "$tmp/install.log")"
for path in include/solver_core/analytic_ik/two_bone_ik.h \
  include/posewire/v1/posewire.grpc.pb.h include/clients/cpp/posewire_client.h; do
  [[ -f $prefix/$path ]] || fail "$path was not installed"
done
leaks=$(grep -rlI -e "$src" -e "$build" "$prefix" || true)
[[ -z $leaks ]] || fail "installed files name the source or build tree: $leaks"

# check_output BINARY: runs the consumer on the clip; it must reach.
check_output() {
  local output
  output=$("$1" "$clip") || fail "$1 exited with $?"
  echo "$output"
  grep -q "(reached: yes)" <<<"$output" || fail "$1 did not reach: $output"
}

echo "--- CMake: find_package(posewire), posewire::assets"
cmake -S "$src/tests/install/consumer" -B "$tmp/cmake-consumer" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  >"$tmp/configure.log" 2>&1 ||
  fail "configure: $(tail -20 "$tmp/configure.log")"
cmake --build "$tmp/cmake-consumer" >"$tmp/build.log" 2>&1 ||
  fail "build: $(tail -30 "$tmp/build.log")"
check_output "$tmp/cmake-consumer/posewire_consumer"

echo "--- pkg-config: posewire-assets"
libdir=$(dirname "$(find "$prefix" -name posewire-assets.pc)")
flags=$(PKG_CONFIG_PATH=$libdir pkg-config --cflags --libs posewire-assets) ||
  fail "pkg-config posewire-assets"
# shellcheck disable=SC2086  # flags is a list of compiler arguments
g++ -O2 -o "$tmp/pc-consumer" "$src/tests/install/consumer/main.cc" $flags ||
  fail "g++ with pkg-config's flags: $flags"
check_output "$tmp/pc-consumer"
echo "install_test: PASS"
