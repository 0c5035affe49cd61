#!/usr/bin/env bash
# The Python package as a user installs it: `pip install` of a copy of
# clients/python (offline, Debian's Python and packages, no build
# isolation) into a temporary target, which generates the posewire.v1
# message classes into the installed package. Then, with only that target
# on PYTHONPATH (no source tree, no POSEWIRE_PYTHON_STUBS), pytest runs the
# package's tests, and the examples and the README's example run against a
# real posewire-server.
#
# With CORE_MODULE (the built posewire._core), the package installs it, and
# the tests of posewire.local (the core in process) must run, not skip: it
# replays the recorded Solve answers and matches the server bit for bit.
# Without it (the sanitizer builds leave the extension out), the examples
# and README blocks that use posewire.local are skipped, and say so.
#
# usage: python_package_e2e.sh SERVER_BINARY PYTHON SOURCE_DIR [CORE_MODULE]
#   SOURCE_DIR: the repository (clients/python, proto/ and tests/data are read)
set -euo pipefail

server_bin=$1
python=$2
source_dir=$3
core_module=${4:-}
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# A copy, so that the in-tree build leaves nothing in the source tree.
cp -r "$source_dir/clients/python" "$work/src"
rm -rf "$work/src/build" "$work/src"/*.egg-info
export POSEWIRE_PROTO_DIR=$source_dir/proto
if [[ -n $core_module ]]; then
  export POSEWIRE_CORE_MODULE=$core_module POSEWIRE_REQUIRE_CORE=1
fi
"$python" -m pip install --quiet --no-build-isolation --no-deps --no-index \
  --disable-pip-version-check --root-user-action=ignore \
  --target "$work/site" "$work/src" >"$work/pip.log" 2>&1 ||
  { cat "$work/pip.log"; fail "pip install of clients/python failed"; }
for stub in types_pb2 operations_pb2 posewire_pb2 posewire_pb2_grpc; do
  [[ -f $work/site/posewire/v1/$stub.py ]] ||
    fail "the installed package lacks posewire/v1/$stub.py"
done
if [[ -n $core_module ]]; then
  compgen -G "$work/site/posewire/_core.*" >/dev/null ||
    fail "the installed package lacks posewire/_core (POSEWIRE_CORE_MODULE)"
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
