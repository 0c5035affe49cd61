#!/usr/bin/env python3
"""Checks that #include lines respect posewire's layers (docs/ARCHITECTURE.md).

    scripts/check_layers.py [--root DIR]

Exit 0 when every include of our own code goes the right way, 1 with one line
per violation otherwise. Three rules:

1. A folder may include only the layers listed for it in LAYERS (its own
   included). Third-party headers are free, except the frameworks a layer
   must not see (FORBIDDEN): the solver core knows no protobuf, gRPC or
   logging, and only the transport knows gRPC.
2. A header under an `internal/` folder is not part of its library's public
   API: it may be included only from that library's top folder (e.g.
   solver_core/) and by tests (tests/), which may test internals.
3. No include cycles among our own files.
4. One SIMD layer: x86 intrinsics (their headers, the _mm_/_mm256_ functions
   and the __m128/__m256 types) appear only in SIMD_LAYER; kernels elsewhere
   are written with its lane types, so each kernel's determinism rules are
   stated and kept in one place.
"""
import argparse
import os
import re
import sys

# Folder prefix -> the include prefixes (of our own code) it may use. The
# longest matching folder prefix applies. Generated protobuf headers are
# "posewire/v1/...". tests/, bench/ and fuzz/ may use every layer.
CORE = ["solver_core/"]
WIRE = CORE + ["posewire/v1/", "server/wire/"]
OPS = WIRE + ["server/ops/"]
SERVICE = OPS + ["server/service/"]
TRANSPORT = SERVICE + ["server/transport/", "proto/"]
CLIENT = WIRE + ["proto/", "clients/cpp/"]
LAYERS = {
    "solver_core/": CORE,
    "server/wire/": WIRE,
    "server/ops/": OPS,
    "server/service/": SERVICE,
    "server/transport/": TRANSPORT,
    "proto/": ["proto/"],
    "clients/cpp/": CLIENT,
    "clients/cli/": CLIENT + ["clients/cli/"],
    # The load generator's in-process baseline runs the service logic
    # directly (never the transport's reactors).
    "clients/load/": CLIENT + ["clients/load/", "server/service/",
                               "server/ops/"],
    # posewire._core runs the service logic in a Python process.
    "clients/python/": WIRE + ["server/service/", "server/ops/"],
}
OWN = ("solver_core/", "server/", "clients/", "proto/", "posewire/",
       "tests/", "bench/", "fuzz/")
FORBIDDEN = {
    "solver_core/": ("grpc", "grpcpp/", "google/protobuf/", "spdlog/",
                     "prometheus/", "posewire/v1/"),
    "server/wire/": ("grpcpp/", "grpc/", "spdlog/", "prometheus/"),
    "server/ops/": ("grpcpp/", "grpc/", "spdlog/", "prometheus/"),
    "server/service/": ("grpcpp/", "grpc/", "spdlog/", "prometheus/"),
}
SOURCES = (".h", ".cc", ".inc")
SIMD_LAYER = ("solver_core/model/internal/simd_lanes.h",
              "solver_core/model/internal/simd_lanes_avx2.h")
INTRINSIC = re.compile(r"\b(_mm256_\w+|_mm_\w+|__m128\w*|__m256\w*|"
                       r"\w*intrin\.h)")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def layer_of(path, table):
    best = None
    for prefix in table:
        if path.startswith(prefix) and (best is None or len(prefix) > len(best)):
            best = prefix
    return best


def sources(root):
    """Yields (path relative to root, full path) for our source files."""
    for top in ("solver_core", "server", "clients", "proto", "tests", "bench",
                "fuzz"):
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames[:] = [d for d in dirnames if not d.startswith("build")]
            for name in sorted(filenames):
                if not name.endswith(SOURCES):
                    continue
                full = os.path.join(dirpath, name)
                yield os.path.relpath(full, root).replace(os.sep, "/"), full


def scan(root):
    """Yields (file, line number, include path, is_quoted) for our sources."""
    for rel, full in sources(root):
        with open(full, encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if m:
                    yield rel, number, m.group(2), m.group(1) == '"'


def raw_intrinsics(root):
    """Yields "file:line: ..." for each intrinsic used outside SIMD_LAYER."""
    for rel, full in sources(root):
        if rel in SIMD_LAYER:
            continue
        with open(full, encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                m = INTRINSIC.search(line.split("//")[0])
                if m:
                    yield (f"{rel}:{number}: raw intrinsic {m.group(1)} "
                           f"outside the SIMD layer ({SIMD_LAYER[0]})")


def find_cycle(graph):
    """Returns one include cycle as a list of files, or None."""
    state = {}
    stack = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def check(root):
    problems = []
    graph = {}
    for rel, number, target, quoted in scan(root):
        where = f"{rel}:{number}"
        layer = layer_of(rel, LAYERS)
        forbidden = FORBIDDEN.get(layer_of(rel, FORBIDDEN) or "", ())
        if any(target.startswith(f) for f in forbidden):
            problems.append(f"{where}: {layer} must not include <{target}>")
            continue
        if not quoted or not target.startswith(OWN):
            continue
        if os.path.exists(os.path.join(root, target)):
            graph.setdefault(rel, set()).add(target)
        if layer is not None and not any(
                target.startswith(p) for p in LAYERS[layer] + [layer]):
            problems.append(
                f"{where}: {layer} may not include \"{target}\" "
                f"(it may use: {', '.join(sorted(set(LAYERS[layer])))})")
        if "/internal/" in target and not rel.startswith("tests/"):
            library = target[:target.index("/") + 1]
            if not rel.startswith(library):
                problems.append(
                    f"{where}: \"{target}\" is internal to {library}")
    problems.extend(raw_intrinsics(root))
    cycle = find_cycle(graph)
    if cycle:
        problems.append("include cycle: " + " -> ".join(cycle))
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), ".."))
    args = parser.parse_args()
    problems = check(os.path.abspath(args.root))
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} problem(s) with the layers "
              "(docs/ARCHITECTURE.md, Layers)")
        return 1
    print("layers: every include goes the right way")
    return 0


if __name__ == "__main__":
    sys.exit(main())
