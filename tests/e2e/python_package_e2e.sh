#!/usr/bin/env bash
# The Python package as a user installs it: `pip install` of a copy of
# clients/python (offline, Debian's Python and packages, no build
# isolation) into a temporary target, which generates the posewire.v1
# message classes into the installed package and builds posewire._core
# with CMake. Then, with only that target on PYTHONPATH (no source tree, no
# POSEWIRE_PYTHON_STUBS), pytest runs the package's tests, and the examples
# and the README's example run against a real posewire-server.
#
# With CORE_BUILD_DIR (a CMake build tree of SOURCE_DIR that has the target
# posewire_python_core), pip builds the core there (POSEWIRE_CMAKE_BUILD_DIR:
# up to date after the suite's build, so nothing is recompiled), and the
# tests of posewire.local (the core in process) must run, not skip: they
# replay the recorded Solve answers and match the server bit for bit. A
# second install takes the same extension prebuilt (POSEWIRE_CORE_MODULE),
# and a third shows the message when there is nothing to build it from.
# Without it (the sanitizer builds leave the extension out), the package is
# installed with POSEWIRE_BUILD_CORE=0, and the examples and README blocks
# that use posewire.local are skipped, and say so.
#
# usage: python_package_e2e.sh SERVER_BINARY PYTHON SOURCE_DIR [CORE_BUILD_DIR]
#   SOURCE_DIR: the repository (clients/python, proto/ and tests/data are read)
set -euo pipefail

server_bin=$1
python=$2
source_dir=$3
core_build_dir=${4:-}
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# A copy, so that the in-tree build leaves nothing in the source tree.
cp -r "$source_dir/clients/python" "$work/src"
rm -rf "$work/src/build" "$work/src"/*.egg-info
export POSEWIRE_SOURCE_DIR=$source_dir
# pip_install TARGET LOG: the package from the copy into TARGET.
pip_install() {
  "$python" -m pip install --quiet --no-build-isolation --no-deps --no-index \
    --disable-pip-version-check --root-user-action=ignore \
    --target "$1" "$work/src" >"$2" 2>&1
}
if [[ -n $core_build_dir ]]; then
  export POSEWIRE_CMAKE_BUILD_DIR=$core_build_dir POSEWIRE_REQUIRE_CORE=1
else
  export POSEWIRE_BUILD_CORE=0
fi
pip_install "$work/site" "$work/pip.log" ||
  { cat "$work/pip.log"; fail "pip install of clients/python failed"; }
for stub in types_pb2 operations_pb2 posewire_pb2 posewire_pb2_grpc; do
  [[ -f $work/site/posewire/v1/$stub.py ]] ||
    fail "the installed package lacks posewire/v1/$stub.py"
done
core_module=
if [[ -n $core_build_dir ]]; then
  core_module=$(compgen -G "$work/site/posewire/_core.*") ||
    fail "pip did not build posewire/_core into the installed package"
  built=$(compgen -G "$core_build_dir/clients/python/stubs/posewire/_core.*")
  cmp -s "$core_module" "$built" ||
    fail "the installed posewire/_core is not the one CMake built ($built)"
  # The same extension, prebuilt: installed as it is, nothing built.
  POSEWIRE_CORE_MODULE=$built POSEWIRE_CMAKE_BUILD_DIR=/nonexistent \
    pip_install "$work/site-prebuilt" "$work/pip-prebuilt.log" ||
    { cat "$work/pip-prebuilt.log"; fail "pip install with POSEWIRE_CORE_MODULE failed"; }
  cmp -s "$built" "$(compgen -G "$work/site-prebuilt/posewire/_core.*")" ||
    fail "POSEWIRE_CORE_MODULE was not installed as it is"
  # Nothing to build the core from: a message that says what to do.
  if POSEWIRE_SOURCE_DIR=$work/src POSEWIRE_PROTO_DIR=$source_dir/proto pip_install "$work/site-none" \
    "$work/pip-none.log"; then
    fail "pip install without a source tree to build the core succeeded"
  fi
  grep -q "no CMakeLists.txt in .*POSEWIRE_BUILD_CORE=0" <(tr '\n' ' ' <"$work/pip-none.log") ||
    { cat "$work/pip-none.log"; fail "no clear message without a source tree"; }
  # A prebuilt core that is not an extension, and a switch that is neither
  # on nor off: each refused with a message naming the variable.
  if POSEWIRE_CORE_MODULE=$work/src/README.md pip_install "$work/site-bad" \
    "$work/pip-bad-module.log"; then
    fail "pip install with POSEWIRE_CORE_MODULE=README.md succeeded"
  fi
  grep -q "POSEWIRE_CORE_MODULE=.* is not a built _core extension" \
    "$work/pip-bad-module.log" ||
    { cat "$work/pip-bad-module.log"; fail "POSEWIRE_CORE_MODULE: unclear message"; }
  if POSEWIRE_BUILD_CORE=maybe pip_install "$work/site-bad" \
    "$work/pip-bad-switch.log"; then
    fail "pip install with POSEWIRE_BUILD_CORE=maybe succeeded"
  fi
  grep -q "POSEWIRE_BUILD_CORE='maybe': say 1 or 0" "$work/pip-bad-switch.log" ||
    { cat "$work/pip-bad-switch.log"; fail "POSEWIRE_BUILD_CORE: unclear message"; }
  echo "pip install: core built by CMake, prebuilt core, and the refusals: ok"
fi

# uses_core FILE: whether an example or README block needs posewire._core.
uses_core() { grep -qE "from posewire import local|posewire\.local" "$1"; }
skip_without_core() {
  [[ -z $core_module ]] && uses_core "$1" &&
    echo "$(basename "$1"): skipped, this build has no posewire._core"
}

start_server server "$server_bin" --threads=2

unset POSEWIRE_PYTHON_STUBS
export PYTHONPATH=$work/site
export POSEWIRE_SERVER=$addr
# tests/test_failover.py starts two servers of its own.
export POSEWIRE_SERVER_BINARY=$server_bin
export POSEWIRE_TEST_DATA=$source_dir/tests/data
export PYTHONDONTWRITEBYTECODE=1
cd "$work"

where=$("$python" -c 'import posewire; print(posewire.__file__)')
[[ $where == "$work/site/posewire/__init__.py" ]] ||
  fail "imported posewire from $where, not the installed package"

status=0
"$python" -m pytest -q -p no:cacheprovider "$work/src/tests" \
  >"$work/pytest.log" 2>&1 || status=$?
cat "$work/pytest.log"
[[ $status -eq 0 ]] || fail "pytest failed (exit $status)"
if [[ -n $core_module ]] && grep -q "skipped" "$work/pytest.log"; then
  fail "pytest skipped tests although posewire._core is installed"
fi

for example in "$work"/src/examples/*.py; do
  skip_without_core "$example" && continue
  args=(--server="$addr")
  # The BVH examples read the repository's walk (their default is relative
  # to a source checkout, which this copy is not).
  grep -q -- "--bvh" "$example" && args+=(--bvh="$POSEWIRE_TEST_DATA/cmu_131_01_walk.bvh")
  out=$("$python" "$example" "${args[@]}" 2>&1) ||
    fail "$(basename "$example") failed: $out"
  echo "$(basename "$example"): $(wc -l <<<"$out") lines"
done

# The README's examples, against this server and the repository's data.
"$python" - "$work/src/README.md" "$addr" "$source_dir" "$work" <<'PY' ||
import re
import sys
readme, addr, source, work = sys.argv[1:]
text = open(readme, encoding="utf-8").read()
blocks = re.findall(r"```python\n(.*?)```", text, re.S)
assert len(blocks) >= 2, f"{len(blocks)} python blocks in the README"
for i, block in enumerate(blocks):
    block = block.replace("127.0.0.1:50051", addr).replace(
        '"tests/data/', f'"{source}/tests/data/')
    if i >= 2:  # snippets: the imports the README shows above them
        block = "import posewire\nfrom posewire import msg\n" + block
    with open(f"{work}/readme{i}.py", "w", encoding="utf-8") as f:
        f.write(block)
PY
  fail "cannot extract the README's examples"
if ! skip_without_core "$work/readme0.py"; then
  out=$("$python" "$work/readme0.py" 2>&1) || fail "README example 1 failed: $out"
  grep -q "^True " <<<"$out" || fail "README example 1 did not reach: $out"
fi
out=$("$python" "$work/readme1.py" 2>&1) || fail "README example 2 failed: $out"
grep -qF "two_bone_ik" <<<"$out" || fail "README example 2 printed: $out"
for snippet in "$work"/readme[2-9].py; do
  [[ -e $snippet ]] || continue
  skip_without_core "$snippet" && continue
  out=$("$python" "$snippet" 2>&1) || fail "README snippet $snippet failed: $out"
done
echo "README examples: ok"

stop_server_expect_exit_0 server
echo "PASS: pip-installed Python package against the server on $addr"
