#!/usr/bin/env python3
"""Writes the committed seed corpora of the asset-reader fuzzers.

  fuzz/make_corpus.py            # from tests/data into fuzz/corpus

bvh_reader_fuzzer: the real CMU and three.js files trimmed to three frames
(the hierarchies are what matters; thousands of frame lines only slow every
execution down), plus small files for the syntax the reader documents
(CRLF, CR, a BOM, tabs, an End Site, the tolerated extra frame line).

gltf_reader_fuzzer: its first input byte picks the reader options (0: the
defaults), the rest is the file. RiggedSimple.glb as it is; the same model
as a .gltf with its buffer in a data: URI and without its mesh; and a small
node-animation file without skins.

The Solve and Session corpora are requests, written by the C++ program
make_request_seeds (scripts/fuzz.sh runs it) from the trimmed walk here.
Only the standard library: runs on a bare Debian.
"""
import base64
import json
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")
CORPUS = os.path.join(ROOT, "fuzz", "corpus")


def write(target, name, data):
    directory = os.path.join(CORPUS, target)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name), "wb") as f:
        f.write(data)


def trim_bvh(text, frames):
    """The hierarchy and the first `frames` frame lines of a BVH file."""
    lines = text.splitlines()
    out, i = [], 0
    while not lines[i].strip().startswith("Frames:"):
        out.append(lines[i])
        i += 1
    out.append("Frames: %d" % frames)
    out.append(lines[i + 1])  # Frame Time:
    out.extend(lines[i + 2:i + 2 + frames])
    return "\n".join(out) + "\n"


TINY_BVH = """HIERARCHY
ROOT Hips
{
\tOFFSET 0 0 0
\tCHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation
\tJOINT Spine
\t{
\t\tOFFSET 0 5.5 0
\t\tCHANNELS 3 Zrotation Xrotation Yrotation
\t\tEnd Site
\t\t{
\t\t\tOFFSET 0 3 0
\t\t}
\t}
}
MOTION
Frames: 2
Frame Time: 0.0333333
0 10 0 0 0 0 5 -5 90
1.5 10.25 -0.5 1e1 2.5E-1 -180 0 0 0
"""


def bvh_seeds():
    for name in ("cmu_131_01_walk", "cmu_02_03_run_daz",
                 "threejs_pirouette_cmu"):
        with open(os.path.join(DATA, name + ".bvh"), newline="") as f:
            text = f.read()
        write("bvh_reader_fuzzer", name + "_3frames.bvh",
              trim_bvh(text, 3).encode())
    write("bvh_reader_fuzzer", "tiny.bvh", TINY_BVH.encode())
    write("bvh_reader_fuzzer", "tiny_crlf_bom.bvh",
          b"\xef\xbb\xbf" + TINY_BVH.replace("\n", "\r\n").encode())
    write("bvh_reader_fuzzer", "tiny_cr_spaces.bvh",
          TINY_BVH.replace("\n", "\r").replace("\t", "  ").encode())
    # One extra well-formed frame line after the declared count.
    write("bvh_reader_fuzzer", "tiny_extra_frame.bvh",
          (TINY_BVH + "0 0 0 0 0 0 0 0 0\n").encode())


def read_glb(path):
    with open(path, "rb") as f:
        data = f.read()
    json_length = struct.unpack_from("<I", data, 12)[0]
    doc = json.loads(data[20:20 + json_length])
    bin_start = 20 + json_length
    bin_length = struct.unpack_from("<I", data, bin_start)[0]
    return data, doc, data[bin_start + 8:bin_start + 8 + bin_length]


def node_animation_gltf():
    """Two nodes, no skin, a LINEAR rotation and a STEP translation."""
    times = struct.pack("<2f", 0.0, 1.0)
    rotations = struct.pack("<8f", 0, 0, 0, 1, 0, 0.7071068, 0, 0.7071068)
    translations = struct.pack("<6f", 0, 0, 0, 0, 1, 0)
    blob = times + rotations + translations
    doc = {
        "asset": {"version": "2.0"},
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": [{"name": "root", "children": [1]},
                  {"name": "tip", "translation": [0, 1, 0]}],
        "buffers": [{"byteLength": len(blob),
                     "uri": "data:application/octet-stream;base64," +
                            base64.b64encode(blob).decode()}],
        "bufferViews": [{"buffer": 0, "byteOffset": 0, "byteLength": 8},
                        {"buffer": 0, "byteOffset": 8, "byteLength": 32},
                        {"buffer": 0, "byteOffset": 40, "byteLength": 24}],
        "accessors": [
            {"bufferView": 0, "componentType": 5126, "count": 2,
             "type": "SCALAR", "min": [0], "max": [1]},
            {"bufferView": 1, "componentType": 5126, "count": 2,
             "type": "VEC4"},
            {"bufferView": 2, "componentType": 5126, "count": 2,
             "type": "VEC3"}],
        "animations": [{"name": "nod", "samplers": [
            {"input": 0, "output": 1, "interpolation": "LINEAR"},
            {"input": 0, "output": 2, "interpolation": "STEP"}],
            "channels": [
                {"sampler": 0, "target": {"node": 1, "path": "rotation"}},
                {"sampler": 1, "target": {"node": 0,
                                          "path": "translation"}}]}],
    }
    return json.dumps(doc, separators=(",", ":")).encode()


def gltf_seeds():
    glb, doc, blob = read_glb(os.path.join(DATA, "RiggedSimple.glb"))
    write("gltf_reader_fuzzer", "rigged_simple.glb", b"\x00" + glb)
    # Option selectors (gltf_reader_fuzzer.cc): 0xC0 skin 0, 0xE0 no folding.
    write("gltf_reader_fuzzer", "rigged_simple_skin0.glb", b"\xc0" + glb)
    write("gltf_reader_fuzzer", "rigged_simple_nofold.glb", b"\xe0" + glb)
    # The same rig as .gltf: buffer embedded, mesh and material dropped.
    for node in doc["nodes"]:
        node.pop("mesh", None)
    for key in ("meshes", "materials"):
        doc.pop(key, None)
    doc["buffers"] = [{"byteLength": len(blob),
                       "uri": "data:application/octet-stream;base64," +
                              base64.b64encode(blob).decode()}]
    write("gltf_reader_fuzzer", "rigged_simple_embedded.gltf",
          b"\x00" + json.dumps(doc, separators=(",", ":")).encode())
    write("gltf_reader_fuzzer", "node_animation.gltf",
          b"\x00" + node_animation_gltf())


def main():
    if len(sys.argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    bvh_seeds()
    gltf_seeds()
    return 0


if __name__ == "__main__":
    sys.exit(main())
