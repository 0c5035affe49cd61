#!/usr/bin/env bash
# Runs README.md's "Try it" section as a newcomer would, so the front page
# cannot rot: every ```sh block, line by line in one shell from a directory
# that sees the repository's files, against a real posewire-server. The
# build directory stands for ./build/, the test server's address for
# 127.0.0.1:50051 (a `posewire` line without --server gets it appended).
# Each block must exit 0, and every line of the ```text block that follows
# a block (what the README says it prints) must appear in its output, up to
# a "..." that stands for what varies from run to run.
#
# usage: readme_e2e.sh SOURCE_DIR BUILD_DIR SERVER_BIN PYTHON
set -euo pipefail
src=$1
build=$2
server_bin=$3
python=$4
# shellcheck source=SCRIPTDIR/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

start_server server "$server_bin"

# The README's files, seen from $work, so what a command writes lands there.
for entry in tests docs clients; do ln -s "$src/$entry" "$work/$entry"; done

# One directory per block: script.sh (the block, rewritten) and, when the
# README shows output, expected.txt.
"$python" - "$src/README.md" "$build" "$addr" "$work/blocks" <<'PY'
import os, re, sys
readme, build, addr, out = sys.argv[1:]
text = open(readme).read()
match = re.search(r"^## Try it\n(.*?)(?=^## |\Z)", text, re.S | re.M)
if not match:
    sys.exit("README.md has no '## Try it' section")
fences = re.findall(r"^```(\w*)\n(.*?)^```", match.group(1), re.S | re.M)
blocks = []
for kind, body in fences:
    if kind == "sh":
        lines = []
        body = re.sub(r"\\\n\s*", "", body)  # continuation lines
        for line in body.splitlines():
            line = line.replace("./build/", build + "/")
            line = re.sub(r"(?<![\w/])build/", build + "/", line)
            line = line.replace("127.0.0.1:50051", addr)
            if re.match(re.escape(build) + r"/clients/posewire\s", line) \
                    and "--server=" not in line:
                command = line.partition("  #")[0]  # drop a trailing comment
                line = command.rstrip() + " --server=" + addr
            lines.append(line)
        blocks.append({"script": "\n".join(lines) + "\n", "expected": None})
    elif kind == "text" and blocks and blocks[-1]["expected"] is None:
        blocks[-1]["expected"] = body
if not blocks:
    sys.exit("README.md's Try it has no sh block")
for i, block in enumerate(blocks):
    directory = os.path.join(out, "%02d" % i)
    os.makedirs(directory)
    with open(os.path.join(directory, "script.sh"), "w") as f:
        f.write("set -euo pipefail\n" + block["script"])
    if block["expected"] is not None:
        with open(os.path.join(directory, "expected.txt"), "w") as f:
            f.write(block["expected"])
print(len(blocks), "blocks")
PY

checked=0
for directory in "$work"/blocks/*/; do
  block=$(basename "$directory")
  if ! (cd "$work" && bash "$directory/script.sh") >"$work/block-$block.log" 2>&1; then
    fail "README Try it, block $block failed:
$(cat "$directory/script.sh")
--- output:
$(tail -30 "$work/block-$block.log")"
  fi
  if [[ -f $directory/expected.txt ]]; then
    while IFS= read -r want; do
      want=${want#"${want%%[![:space:]]*}"}  # leading blanks
      want=${want%"${want##*[![:space:]]}"}  # trailing blanks
      # "..." stands for what varies: the text before it must be there.
      want=${want%%...*}
      want=${want%"${want##*[![:space:]]}"}
      [[ -z $want ]] && continue
      grep -qF -- "$want" "$work/block-$block.log" ||
        fail "README Try it, block $block: the README shows '$want', the command printed:
$(tail -30 "$work/block-$block.log")"
      checked=$((checked + 1))
    done <"$directory/expected.txt"
  fi
done
stop_server_expect_exit_0 server
echo "PASS: README's Try it ran against $addr; $checked shown lines found"
