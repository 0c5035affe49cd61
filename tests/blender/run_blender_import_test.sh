#!/usr/bin/env bash
# Imports what posewire's glTF and BVH writers wrote into headless Blender
# with Blender's own importers: io_test's GltfWriter.WritesBlenderFixture
# writes the CMU walk (.glb, .bvh) and the joint positions posewire computes
# (.json) into a temporary directory, then test_gltf_import.py checks the
# imported armatures against them. No server.
#
# usage: run_blender_import_test.sh IO_TEST_BINARY SOURCE_DIR
#
# Exits 77 (CTest's skip code here) when Blender is not installed.
set -euo pipefail

io_test=$1
source_dir=$2

blender=$(PATH=/usr/bin:/bin command -v blender || true)
if [[ -z $blender ]]; then
  echo "SKIP: blender is not installed (scripts/bootstrap.sh installs it)"
  exit 77
fi

# For $work and fail (no server is started).
# shellcheck source=SCRIPTDIR/../e2e/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../e2e/lib.sh"

POSEWIRE_GLTF_OUT="$work/walk.glb" "$io_test" \
  --gtest_filter=GltfWriter.WritesBlenderFixture >"$work/fixture.log" 2>&1 ||
  fail "GltfWriter.WritesBlenderFixture failed"
# A filter that matches nothing passes too: check what it wrote.
for f in walk.glb walk.bvh walk.json; do
  [[ -s $work/$f ]] || fail "the fixture test wrote no $f"
done

mkdir -p "$work/home"
status=0
env -i PATH=/usr/bin:/bin HOME="$work/home" PYTHONDONTWRITEBYTECODE=1 \
  "$blender" -b --factory-startup --python-exit-code 1 \
  --python "$source_dir/tests/blender/test_gltf_import.py" \
  -- "$work/walk.json" >"$work/blender.log" 2>&1 || status=$?
cat "$work/blender.log"
[[ $status -eq 0 ]] || fail "test_gltf_import.py failed in Blender (exit $status)"
grep -q "^OK" "$work/blender.log" || fail "test_gltf_import.py: no unittest OK line"
echo "PASS: test_gltf_import.py in $("$blender" -b --factory-startup --version 2>/dev/null | head -1)"
