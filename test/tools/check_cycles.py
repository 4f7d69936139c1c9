#!/usr/bin/env python3
"""check_cycles.py - no cycle in the include/call graph of src/.

A node is a source file, with foo.c and foo.h in one folder counting as one
node "foo" (a header without a .c of its name is a node of its own).  There is
an edge A -> B when A includes a header of B ("lp_x.h": any quoted include
found under src/) without defining anything it declares, or
when A names a function whose non-static definition is in B (a static inline
function of a header counts as defined in that header).  Names in headers are
declarations, not calls.  Generated protobuf code (src/proto) is left out.

Prints a line for each problem on standard output and exits 1 when there is
one: a cycle (named, with the edges it is made of), a core file (src/core)
that depends on a file outside the core, or a file that depends on a folder
of a higher layer or a sibling folder of its own layer (LAYERS).  KNOWN_CYCLE_EDGES lists edges of
cycles still to be removed: they are left out of the cycle search and
reported on standard error, and an entry that matches no edge is a problem,
so the list cannot go stale.  The number of files and edges goes to standard
error too.  test/tools/check_layers.sh runs it as the check "cycles".

    test/tools/check_cycles.py [SRC_DIR]     (default: src of this tree)
"""
import os
import re
import sys

IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# Function definitions in the PostgreSQL style: the name at the start of a
# line, the return type on the line before, the body's "{" at the start of a
# line after the parameters.
DEFINITION = re.compile(r"^(?P<head>[^\n#;{}]*)\n(?P<name>[A-Za-z_]\w*)\([^;{]*?\)\s*\n\{",
                        re.M)
COMMENT_OR_STRING = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                               re.S)


def strip(text):
    """Comments, strings and character literals blanked (line breaks kept)."""
    def blank(match):
        token = match.group(0)
        if token.startswith('"'):
            return '""'
        return re.sub(r"[^\n]", " ", token)
    return COMMENT_OR_STRING.sub(blank, text)


def load(src):
    files = {}
    for folder, dirs, names in os.walk(src):
        dirs[:] = sorted(d for d in dirs if os.path.join(folder, d) != os.path.join(src, "proto"))
        for name in sorted(names):
            if name.endswith((".c", ".h")):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    files[os.path.relpath(path, src)] = f.read()
    return files


def node_of(path, files):
    stem = os.path.splitext(path)[0]
    return stem if stem + ".c" in files or path.endswith(".c") else path


def build_graph(files):
    """{node: {node: [reasons]}} and the set of nodes."""
    headers = {}
    for path in files:
        if path.endswith(".h"):
            headers.setdefault(os.path.basename(path), []).append(path)
    defined = {}                        # function name -> node
    texts = {}
    for path, text in files.items():
        node = node_of(path, files)
        clean = strip(text)
        texts.setdefault(node, []).append((path, text, clean))
        for match in DEFINITION.finditer(clean):
            is_static = re.search(r"\bstatic\b", match.group("head"))
            if not is_static or path.endswith(".h"):
                defined[match.group("name")] = node
    graph = {node: {} for node in texts}
    for node, parts in texts.items():
        for path, text, clean in parts:
            names = set(IDENTIFIER.findall(clean))
            own = {name for name in names if defined.get(name) == node}
            for included in INCLUDE.findall(text):
                candidates = [p for p in headers.get(os.path.basename(included), [])
                              if p == included or p.endswith("/" + included)]
                if not candidates:
                    continue
                target = node_of(candidates[0], files)
                # A file that defines what the header declares implements it.
                implements = own & set(IDENTIFIER.findall(strip(files[candidates[0]])))
                if target != node and not implements:
                    graph[node].setdefault(target, []).append("includes " + included)
            if path.endswith(".h"):
                continue            # prototypes name functions, they do not call them
            for name in sorted(names):
                target = defined.get(name)
                if target is not None and target != node:
                    graph[node].setdefault(target, []).append("calls " + name)
    return graph


def cycles(graph):
    """Strongly connected components with more than one node (Tarjan)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10000)
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def shortest_cycle(graph, component):
    """One cycle through the component's first node, as a list of nodes."""
    start, members = component[0], set(component)
    previous, queue = {start: None}, [start]
    for node in queue:
        for target in sorted(graph[node]):
            if target == start:
                path = [node]
                while previous[path[-1]] is not None:
                    path.append(previous[path[-1]])
                return list(reversed(path)) + [start]
            if target in members and target not in previous:
                previous[target] = node
                queue.append(target)
    return component


def describe(reasons):
    calls = [r[6:] for r in reasons if r.startswith("calls ")]
    includes = [r for r in reasons if r.startswith("includes ")]
    text = includes[:1]
    if calls:
        text.append("calls " + ", ".join(calls[:4]) + (" ..." if len(calls) > 4 else ""))
    return "; ".join(text)


# The layers, lowest first: a folder depends only on folders of lower
# layers (docs/ARCHITECTURE.md).  The PostgreSQL layer is the top one, in
# layers of its own: its base (errors, allocation, types, arguments), the
# stores, targets and sidecars, assembly, the FDW's reads,
# the writers (with the FDW's writes and the publication at commit), the
# SQL functions, and the module's entry point (lance_parts.c) above all.
LAYERS = [
    ["core/base"],
    ["core/io"],
    ["core/format"],
    ["core/codec"],
    ["core/concat", "core/dataset", "core/decode", "core/encode"],
    ["core/index", "core/reencode"],
    ["platform"],
    ["pg/base"],
    ["pg/store"],
    ["pg/targets"],
    ["pg/assemble"],
    ["pg/fdw"],
    ["pg/write"],
    ["pg/functions"],
    ["pg/lance_parts"],
]
LAYER_OF = {folder: rank for rank, folders in enumerate(LAYERS) for folder in folders}


def folder_of(node):
    parts = node.split("/")
    if parts[0] == "core" or (parts[0] == "pg" and len(parts) > 2):
        return "/".join(parts[:2])
    if node == "pg/lance_parts":
        return node
    return parts[0]


# (from, to): why the edge is still there.  Remove an entry with its edge.
KNOWN_CYCLE_EDGES = {}


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "src")
    graph = build_graph(load(src))
    failures = 0
    for (a, b), why in sorted(KNOWN_CYCLE_EDGES.items()):
        if b in graph.get(a, {}):
            print("known cycle edge, to be removed: %s -> %s (%s): %s"
                  % (a, b, describe(graph[a].pop(b)), why), file=sys.stderr)
        else:
            failures += 1
            print("known cycle edge %s -> %s no longer exists: remove it from KNOWN_CYCLE_EDGES"
                  % (a, b))
    for component in cycles(graph):
        failures += 1
        members = set(component)
        print("cycle among %d files: %s" % (len(component), " ".join(component)))
        path = shortest_cycle(graph, component)
        print("  for example " + " -> ".join(path))
        for a in component:
            for b in sorted(graph[a]):
                if b in members:
                    print("  %s -> %s (%s)" % (a, b, describe(graph[a][b])))
    for node in sorted(graph):
        for target in sorted(graph[node]):
            if node.startswith("core/") and not target.startswith("core/"):
                failures += 1
                print("core file %s depends on %s outside the core (%s)"
                      % (node, target, describe(graph[node][target])))
        for target in sorted(graph[node]):
            here, there = folder_of(node), folder_of(target)
            if here == there:
                continue
            if here not in LAYER_OF or there not in LAYER_OF:
                failures += 1
                print("folder of %s or %s is in no layer: add it to LAYERS" % (node, target))
            elif LAYER_OF[here] <= LAYER_OF[there]:
                failures += 1
                print("%s (%s) depends on %s (%s), which is not in a lower layer (%s)"
                      % (node, here, target, there, describe(graph[node][target])))
    edges = sum(len(targets) for targets in graph.values())
    print("%d files, %d edges: %s" % (len(graph), edges,
                                      "%d problem(s)" % failures if failures else "no cycle"),
          file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
