#!/usr/bin/env bash
# Starts the real posewire-server on a free loopback port and drives it with
# `posewire solve` and `posewire stream` on real assets:
#   - solve the CMU walk at frame 10: JSON with 31 joints of finite numbers,
#     the root translation equal to the file's frame-10 values;
#   - the same pose as a one-frame BVH, read back by `posewire inspect` and
#     solved again: the same rotations;
#   - --ops_json with a blend op (checked against the blend computed here);
#   - bad ops (unknown blend_root joint, a misspelt field): exit 1 with the
#     server's (or the parser's) message;
#   - a glTF rig (Fox.glb) by clip name;
#   - `posewire stream` of 100 frames x 3 characters, and a crossfade stream,
#     with zero errors;
#   - `posewire referee` of the walk, and of a clip against limits learnt
#     from another;
#   - `posewire bake` of the walk to .glb and .bvh (read back with the
#     source's pose), with an IK op, and `posewire retarget` onto
#     RobotExpressive.glb; an unknown output format, 10^9 frames and a
#     retarget without a rig are refused;
# then stops the server with SIGTERM and checks it exits 0.
#
# usage: cli_solve_stream_e2e.sh SERVER_BINARY CLI_BINARY DATA_DIR [PYTHON]
# PYTHON (default /usr/bin/python3) only parses JSON with its standard library.
set -euo pipefail

server_bin=$1
cli_bin=$2
data_dir=$3
python=${4:-/usr/bin/python3}
walk=$data_dir/cmu_131_01_walk.bvh
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# expect_contains LABEL TEXT NEEDLE
expect_contains() {
  grep -qF -- "$3" <<<"$2" || fail "$1: expected to find '$3' in:
$2"
}

# check_json LABEL PYTHON_CODE ARGS...: runs the code with the JSON files in
# sys.argv; it raises (exit non-zero) on a failed check.
check_json() {
  local label=$1 code=$2
  shift 2
  "$python" -c "$code" "$@" >"$work/check.out" 2>&1 ||
    fail "$label: $(cat "$work/check.out")"
}

start_server server "$server_bin" --threads=2

# Shared JSON checks: every joint has 3 + 4 + 3 finite numbers (the CLI
# prints null for a non-finite one) and a unit rotation.
read -r -d '' common_py <<'EOF' || true
import json, math, sys
def load(path):
    with open(path) as f:
        return json.load(f)
def check_pose(doc, joints):
    assert len(doc["joints"]) == joints, len(doc["joints"])
    for j in doc["joints"]:
        for key, n in (("translation", 3), ("rotation", 4), ("scale", 3)):
            v = j[key]
            assert len(v) == n, (j["name"], key, v)
            assert all(isinstance(x, (int, float)) and math.isfinite(x)
                       for x in v), (j["name"], key, v)
        norm = math.sqrt(sum(x * x for x in j["rotation"]))
        assert abs(norm - 1) < 1e-3, (j["name"], norm)
def joint(doc, name):
    return next(j for j in doc["joints"] if j["name"] == name)
def same_rotation(a, b, tol=1e-4):
    return abs(sum(x * y for x, y in zip(a, b))) > 1 - tol
EOF

# 1. Solve the walk at frame 10, as JSON.
"$cli_bin" solve "$walk" --server="$addr" --frame=10 --out="$work/f10.json" ||
  fail "solve --frame=10 failed"
check_json "solve walk json" "$common_py
doc = load(sys.argv[1])
check_pose(doc, 31)
assert doc['clip'] == 'cmu_131_01_walk', doc['clip']
assert doc['joints'][0]['name'] == 'Hips' and doc['joints'][0]['parent'] == -1
assert [op['op'] for op in doc['ops']] == ['sample_clip'], doc['ops']
assert len(doc['skeleton_hash']) == 64
# The root translation is the file's frame-10 position channels.
lines = open(sys.argv[2]).read().splitlines()
first = next(i for i, l in enumerate(lines) if l.startswith('Frame Time')) + 1
expected = [float(x) for x in lines[first + 10].split()[:3]]
got = doc['joints'][0]['translation']
assert all(abs(a - b) < 1e-4 for a, b in zip(got, expected)), (got, expected)
" "$work/f10.json" "$walk"

# 2. The same pose as a one-frame BVH, inspected and solved again.
"$cli_bin" solve "$walk" --server="$addr" --frame=10 --format=bvh \
  --out="$work/f10.bvh" || fail "solve --format=bvh failed"
inspect=$("$cli_bin" inspect "$work/f10.bvh") || fail "inspect of the written BVH failed"
expect_contains "inspect written bvh" "$inspect" "31 joints, 1 clip"
expect_contains "inspect written bvh" "$inspect" "LeftKnee"
"$cli_bin" solve "$work/f10.bvh" --server="$addr" --out="$work/f10_again.json" ||
  fail "solve of the written BVH failed"
check_json "bvh round trip" "$common_py
a, b = load(sys.argv[1]), load(sys.argv[2])
check_pose(b, 31)
for ja, jb in zip(a['joints'], b['joints']):
    assert ja['name'] == jb['name'], (ja['name'], jb['name'])
    assert same_rotation(ja['rotation'], jb['rotation']), ja['name']
assert all(abs(x - y) < 1e-4 for x, y in
           zip(a['joints'][0]['translation'], b['joints'][0]['translation']))
" "$work/f10.json" "$work/f10_again.json"

# 3. --ops_json: blend the left leg halfway to the rest pose; the rest of the
# body keeps the sampled pose (base_layer 0) bit for bit.
cat >"$work/blend.json" <<'EOF'
[
  {"blend": {
    "layers": [
      {"source": {"current": true}, "weight": 0.5},
      {"source": {"rest": true}, "weight": 0.5}
    ],
    "base_layer": 0,
    "blend_root": "LeftHip"
  }}
]
EOF
"$cli_bin" solve "$walk" --server="$addr" --frame=10 --ops_json="$work/blend.json" \
  --out="$work/blend_out.json" || fail "solve with a blend op failed"
check_json "blend op" "$common_py
plain, blended = load(sys.argv[1]), load(sys.argv[2])
check_pose(blended, 31)
assert [op['op'] for op in blended['ops']] == ['sample_clip', 'blend'], blended['ops']
for name in ('RightKnee', 'Hips', 'Chest'):
    assert joint(blended, name) == joint(plain, name), name
# LeftKnee: current and the identity rest rotation, the identity flipped onto
# the current rotation's hemisphere, summed and normalised.
q = joint(plain, 'LeftKnee')['rotation']
s = 1.0 if q[3] >= 0 else -1.0
e = [0.5 * q[0], 0.5 * q[1], 0.5 * q[2], 0.5 * q[3] + 0.5 * s]
n = math.sqrt(sum(x * x for x in e))
e = [x / n for x in e]
got = joint(blended, 'LeftKnee')['rotation']
assert same_rotation(got, e, 1e-6), (got, e)
assert not same_rotation(got, q, 1e-6), 'LeftKnee did not blend'
" "$work/f10.json" "$work/blend_out.json"

# 4. Bad ops: an unknown joint is the server's INVALID_ARGUMENT, exit 1.
cat >"$work/bad_joint.json" <<'EOF'
[{"blend": {"layers": [{"source": {"rest": true}, "weight": 1}],
            "blend_root": "NoSuchJoint"}}]
EOF
status=0
bad=$("$cli_bin" solve "$walk" --server="$addr" --ops_json="$work/bad_joint.json" 2>&1) ||
  status=$?
[[ $status -eq 1 ]] || fail "bad blend_root: expected exit 1, got $status: $bad"
expect_contains "bad blend_root" "$bad" "INVALID_ARGUMENT"
expect_contains "bad blend_root" "$bad" "blend_root"
expect_contains "bad blend_root" "$bad" "NoSuchJoint"

# A misspelt field is caught by the JSON parser, naming the file.
echo '[{"blend": {"layerz": []}}]' >"$work/typo.json"
status=0
bad=$("$cli_bin" solve "$walk" --server="$addr" --ops_json="$work/typo.json" 2>&1) ||
  status=$?
[[ $status -eq 1 ]] || fail "typo: expected exit 1, got $status: $bad"
expect_contains "typo" "$bad" "typo.json"
expect_contains "typo" "$bad" "layerz"

# An unknown clip name lists the clips there are.
status=0
bad=$("$cli_bin" solve "$walk" --server="$addr" --clip=nope 2>&1) || status=$?
[[ $status -eq 1 ]] || fail "unknown clip: expected exit 1, got $status: $bad"
expect_contains "unknown clip" "$bad" "cmu_131_01_walk"

# 4b. Any op the server implements goes through --ops_json unchanged: when it
# lists two_bone_ik, the left ankle reaches a reachable target.
info=$("$cli_bin" info --server="$addr") || fail "posewire info failed"
if grep -q "two_bone_ik" <<<"$info"; then
  cat >"$work/ik.json" <<'EOF'
[{"two_bone_ik": {"start_joint": "LeftHip", "mid_joint": "LeftKnee",
  "end_joint": "LeftAnkle", "target": {"x": 8, "y": 4, "z": -30},
  "pole_vector": {"x": 0, "y": 0, "z": 1}}}]
EOF
  "$cli_bin" solve "$walk" --server="$addr" --time=0.5 --ops_json="$work/ik.json" \
    --model_pose --out="$work/ik_out.json" || fail "solve with two_bone_ik failed"
  check_json "two_bone_ik" "$common_py
doc = load(sys.argv[1])
check_pose(doc, 31)
assert [op['op'] for op in doc['ops']] == ['sample_clip', 'two_bone_ik'], doc['ops']
assert doc['ops'][1]['reached'] is True, doc['ops'][1]
ankle = next(j for j in doc['model_pose'] if j['name'] == 'LeftAnkle')
target = (8, 4, -30)
assert math.dist(ankle['translation'], target) < 1e-3, ankle['translation']
" "$work/ik_out.json"
fi

# 5. A glTF rig, by clip name, with the model-space pose.
"$cli_bin" solve "$data_dir/Fox.glb" --server="$addr" --clip=Survey --time=0.5 \
  --model_pose --out="$work/fox.json" || fail "solve Fox.glb failed"
check_json "fox" "$common_py
doc = load(sys.argv[1])
check_pose(doc, 24)
assert doc['clip'] == 'Survey'
assert len(doc['model_pose']) == 24
" "$work/fox.json"

# 6. Streams: 100 frames x 3 characters as fast as answers come, then a
# crossfade-driven one at 200 Hz.
stream=$("$cli_bin" stream "$walk" --server="$addr" --frames=100 --characters=3 \
  --rate=0 --print_every=10 2>&1) || fail "stream failed: $stream"
expect_contains "stream" "$stream" "frames:      100 sent, 100 answered"
expect_contains "stream" "$stream" "characters:  3 per frame, 300 solved"
expect_contains "stream" "$stream" "errors:      0"
expect_contains "stream" "$stream" "latency_us:  p50="
expect_contains "stream" "$stream" "frame 91: 3/3 ok"
stream=$("$cli_bin" stream "$walk" --server="$addr" --frames=30 --characters=2 \
  --rate=200 --playback=crossfade --ops_json="$work/blend.json" --print_every=0 2>&1) ||
  fail "crossfade stream failed: $stream"
expect_contains "crossfade stream" "$stream" "characters:  2 per frame, 60 solved"
expect_contains "crossfade stream" "$stream" "errors:      0"
# A bad op fails the characters (or the rig, should the server check rigs
# when they are registered): exit 1 with the server's message.
status=0
stream=$("$cli_bin" stream "$walk" --server="$addr" --frames=3 --rate=0 \
  --ops_json="$work/bad_joint.json" 2>&1) || status=$?
[[ $status -eq 1 ]] || fail "bad stream: expected exit 1, got $status: $stream"
expect_contains "bad stream" "$stream" "NoSuchJoint"

# `posewire referee`: the walk claim by claim at the defaults, and the climb
# against limits learnt from the jumps (the same subject's rig).
referee=$("$cli_bin" referee "$walk" --server="$addr" 2>&1) ||
  fail "referee failed: $referee"
expect_contains "referee" "$referee" "cmu_131_01_walk.bvh"
expect_contains "referee" "$referee" "0 joint limits"
expect_contains "referee" "$referee" "claims flagged"
referee=$("$cli_bin" referee "$data_dir/cmu_01_03_climb_reach.bvh" \
  --server="$addr" --limits_from="$data_dir/cmu_01_01_jumps.bvh" 2>&1) ||
  fail "referee with learnt limits failed: $referee"
expect_contains "referee with limits" "$referee" \
  "joint limits learnt from $data_dir/cmu_01_01_jumps.bvh"
expect_contains "referee with limits" "$referee" "claims flagged"
# The recording as a hit check: rewound to 0.5 s, a ray straight down
# through the walk's hips (at x 4.76, z -32.62 then) hits the body above
# them; the same ray pointing up hits nothing.
referee=$("$cli_bin" referee "$walk" --server="$addr" --at=0.5 \
  --ray=4.76,100,-32.62,0,-1,0 2>&1) || fail "referee --ray failed: $referee"
expect_contains "referee --ray down" "$referee" "ray at 0.500 s: hit "
expect_contains "referee --ray down" "$referee" "claims flagged"
referee=$("$cli_bin" referee "$walk" --server="$addr" --at=0.5 \
  --ray=4.76,100,-32.62,0,1,0 2>&1) || fail "referee --ray up failed: $referee"
expect_contains "referee --ray up" "$referee" "ray at 0.500 s: no hit"
status=0
referee=$("$cli_bin" referee "$walk" --server="$addr" --ray=1,2,3 2>&1) ||
  status=$?
[[ $status -eq 2 ]] || fail "referee --ray=1,2,3: expected exit 2, got $status"
expect_contains "referee --ray=1,2,3" "$referee" "six finite numbers"
status=0
referee=$("$cli_bin" referee "$walk" --server="$addr" --ray=0,0,0,0,1,0 \
  --at=99 2>&1) || status=$?
[[ $status -eq 2 ]] || fail "referee --at=99: expected exit 2, got $status"
expect_contains "referee --at=99" "$referee" "--at=99: a time in the clip"
status=0
referee=$("$cli_bin" referee "$walk" --server="$addr" --rate=0 2>&1) ||
  status=$?
[[ $status -eq 2 ]] || fail "referee --rate=0: expected exit 2, got $status"
expect_contains "referee --rate=0" "$referee" "--rate=0: claims per second"
status=0
referee=$("$cli_bin" referee "$walk" --server="$addr" --margin_degrees=-1 \
  2>&1) || status=$?
[[ $status -eq 2 ]] || fail "referee --margin_degrees=-1: expected exit 2, got $status"
expect_contains "referee --margin_degrees" "$referee" "--margin_degrees=-1: >= 0"
status=0
referee=$("$cli_bin" referee "$walk" --server="$addr" \
  --limits_from="$work/missing.bvh" 2>&1) || status=$?
[[ $status -eq 1 ]] || fail "referee --limits_from=missing: expected exit 1, got $status"
expect_contains "referee --limits_from=missing" "$referee" "missing.bvh"

# 9. Bake and retarget whole clips to files.
# The walk baked with no ops, to .glb and .bvh at its own rate: every frame
# of the file, read back with the same pose at frame 10 as the source.
for ext in glb bvh; do
  summary=$("$cli_bin" bake "$walk" --server="$addr" --out="$work/baked.$ext" \
    2>&1) || fail "bake to .$ext failed: $summary"
  expect_contains "bake .$ext" "$summary" "994 frames of 31 joints at 120 fps"
  inspect=$("$cli_bin" inspect "$work/baked.$ext") ||
    fail "inspect of the baked .$ext failed"
  expect_contains "inspect baked .$ext" "$inspect" "31 joints, 1 clip"
  "$cli_bin" solve "$work/baked.$ext" --server="$addr" --frame=10 \
    --out="$work/baked_f10_$ext.json" || fail "solve of the baked .$ext failed"
  check_json "baked .$ext frame 10" "$common_py
a, b = load(sys.argv[1]), load(sys.argv[2])
check_pose(b, 31)
for ja, jb in zip(a['joints'], b['joints']):
    assert ja['name'] == jb['name'], (ja['name'], jb['name'])
    assert same_rotation(ja['rotation'], jb['rotation']), ja['name']
" "$work/f10.json" "$work/baked_f10_$ext.json"
done
# With an op: the left leg reaches a fixed target in every frame.
cat >"$work/leg.json" <<'JSON'
[{"twoBoneIk": {"startJoint": "LeftHip", "midJoint": "LeftKnee",
  "endJoint": "LeftAnkle", "target": {"x": 5, "y": 4, "z": 0}}}]
JSON
"$cli_bin" bake "$walk" --server="$addr" --ops_json="$work/leg.json" --fps=30 \
  --out="$work/leg.bvh" 2>"$work/bake.err" || fail "bake with ops failed: $(cat "$work/bake.err")"
expect_contains "bake with ops" "$(cat "$work/bake.err")" "249 frames of 31 joints at 30 fps"
# Retargeted onto the robot's 43-joint rig, at 30 fps.
summary=$("$cli_bin" retarget "$walk" --to="$data_dir/RobotExpressive.glb" \
  --server="$addr" --fps=30 --out="$work/robot.glb" 2>&1) ||
  fail "retarget onto RobotExpressive failed: $summary"
expect_contains "retarget" "$summary" "249 frames of 43 joints at 30 fps"
inspect=$("$cli_bin" inspect "$work/robot.glb") || fail "inspect robot.glb failed"
expect_contains "inspect retargeted" "$inspect" "43 joints, 1 clip"
# With the feet held where the walk plants them, and the hands where the
# scaled walk puts them.
summary=$("$cli_bin" retarget "$walk" --to="$data_dir/cmu_02_03_run_daz.bvh" \
  --lock_feet --match_hands --server="$addr" --fps=30 \
  --out="$work/daz.bvh" 2>&1) ||
  fail "retarget --lock_feet --match_hands onto the Daz rig failed: $summary"
expect_contains "retarget --lock_feet --match_hands" "$summary" "249 frames of"
status=0
out=$("$cli_bin" bake "$walk" --match_hands --server="$addr" \
  --out="$work/x.bvh" 2>&1) || status=$?
[[ $status -eq 2 ]] || fail "bake --match_hands: expected exit 2, got $status"
expect_contains "bake --match_hands" "$out" "bake takes no --lock_feet or --match_hands"
# Refusals: an output format it cannot write, a bake past the server's
# frame limit, retarget without a rig.
status=0
out=$("$cli_bin" bake "$walk" --server="$addr" --out="$work/x.txt" 2>&1) ||
  status=$?
[[ $status -eq 2 ]] || fail "bake --out=x.txt: expected exit 2, got $status"
expect_contains "bake --out=x.txt" "$out" "give a file ending in .bvh, .glb or .gltf"
status=0
out=$("$cli_bin" bake "$walk" --server="$addr" --out="$work/x.bvh" \
  --frame_count=1000000000 2>&1) || status=$?
[[ $status -eq 1 ]] || fail "bake of 10^9 frames: expected exit 1, got $status"
expect_contains "bake of 10^9 frames" "$out" \
  "RESOURCE_EXHAUSTED: frame_count: 1000000000 frames exceed this server's limit"
status=0
out=$("$cli_bin" retarget "$walk" --server="$addr" --out="$work/x.bvh" 2>&1) ||
  status=$?
[[ $status -eq 2 ]] || fail "retarget without --to: expected exit 2, got $status"
expect_contains "retarget without --to" "$out" "retarget needs --to=RIG"

stop_server_expect_exit_0 server
echo "PASS: posewire solve, stream, referee, bake and retarget against the server on $addr"
