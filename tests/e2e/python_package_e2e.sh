#!/usr/bin/env bash
# The Python package as a user installs it: `pip install` of a copy of
# clients/python (offline, Debian's Python and packages, no build
# isolation) into a temporary target, which generates the posewire.v1
# message classes into the installed package. Then, with only that target
# on PYTHONPATH (no source tree, no POSEWIRE_PYTHON_STUBS), pytest runs the
# package's tests, and the examples and the README's example run against a
# real posewire-server.
#
# usage: python_package_e2e.sh SERVER_BINARY PYTHON SOURCE_DIR
#   SOURCE_DIR: the repository (clients/python and proto/ are read)
set -euo pipefail

server_bin=$1
python=$2
source_dir=$3
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# A copy, so that the in-tree build leaves nothing in the source tree.
cp -r "$source_dir/clients/python" "$work/src"
rm -rf "$work/src/build" "$work/src"/*.egg-info
export POSEWIRE_PROTO_DIR=$source_dir/proto
"$python" -m pip install --quiet --no-build-isolation --no-deps --no-index \
  --disable-pip-version-check --root-user-action=ignore \
  --target "$work/site" "$work/src" >"$work/pip.log" 2>&1 ||
  { cat "$work/pip.log"; fail "pip install of clients/python failed"; }
for stub in types_pb2 operations_pb2 posewire_pb2 posewire_pb2_grpc; do
  [[ -f $work/site/posewire/v1/$stub.py ]] ||
    fail "the installed package lacks posewire/v1/$stub.py"
done

start_server server "$server_bin" --threads=2

unset POSEWIRE_PYTHON_STUBS
export PYTHONPATH=$work/site
export POSEWIRE_SERVER=$addr
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

for example in "$work"/src/examples/*.py; do
  out=$("$python" "$example" --server="$addr" 2>&1) ||
    fail "$(basename "$example") failed: $out"
  echo "$(basename "$example"): $(wc -l <<<"$out") lines"
done

# The README's example, against this server.
"$python" - "$work/src/README.md" "$addr" >"$work/readme.py" <<'PY'
import re
import sys
text = open(sys.argv[1], encoding="utf-8").read()
block = re.search(r"```python\n(.*?)```", text, re.S).group(1)
print(block.replace("127.0.0.1:50051", sys.argv[2]))
PY
out=$("$python" "$work/readme.py" 2>&1) || fail "README example failed: $out"
grep -qF "two_bone_ik" <<<"$out" || fail "README example printed: $out"
echo "README example: ok"

stop_server_expect_exit_0 server
echo "PASS: pip-installed Python package against the server on $addr"
