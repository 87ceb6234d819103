#!/usr/bin/env python3
"""Checks that the library's files depend on each other one way (docs/ARCHITECTURE.md,
"Direction"), from two drawings of the code:

- calls: from the compiled objects, file A calls file B when A's object refers to a symbol
  B's object defines (functions and data alike, what `nm` lists);
- includes: file A includes file B when A.c or A.h includes B.h (a .c and its .h are one
  file here).

The rules:
  1. no cycle of calls among the library's files, none of includes;
  2. every file of the library stands on one floor (FLOORS below, top first), and no call
     and no include runs from a floor to one above it: no arrow back up;
  3. no file outside libnvtxshim/hooks/ includes a header of hooks/, but init.c, which puts
     the library together at load (the registry's .def tables of hooked names are anyone's);
  4. the descriptor table (devices/table.c) calls no other file of devices/: the kinds'
     files (devices/v4l2.c...) and the wrappers are reached through the kinds' table;
  5. cli/ includes only the library headers it shares (SHARED below), has no cycle of
     includes either, and its rooms include one way (CLI_ROOMS below).

    scripts/direction.py OBJECTS_DIR [ROOT]

OBJECTS_DIR: the library's objects (build/obj), named by their source's path under
libnvtxshim/. ROOT: the repository (the sources). Prints each breach and exits 1, or exits 0
in silence."""
import collections
import os
import re
import subprocess
import sys

# cli/'s rooms, bottom first: a file includes its own room's headers and those of the rooms
# below it; readers/ and writers/ stand side by side on the model, and know nothing of each other.
CLI_ROOMS = {"util": 0, "model": 1, "readers": 2, "writers": 2, "commands": 3}
SHARED = {"schema.h", "pftrace_proto.h", "config.h", "variables.def", "registry.h", "spin.h"}
TOP = {"init"}                              # the composition root: may include anything
# The library's floors, top first (docs/ARCHITECTURE.md, "Direction"): a file's calls and
# includes reach its own floor or the ones below. Each entry: the floor's name and its files,
# as module paths (a trailing / takes a folder's every file; a .def table is its own module).
FLOORS = [
    ("the composition", ["init", "wrappers"]),
    ("the wrappers", ["hooks/", "devices/"]),
    ("the descriptor table", ["devices/table"]),
    ("the call path", ["hook", "activation"]),
    ("what a call drives", ["frames", "capture", "kernel", "kernel_libbpf"]),
    ("the recorder", ["recorder/"]),
    ("NVTX", ["emit"]),
    ("the base", ["clock", "resolve", "log", "config", "variables.def", "schema", "sys", "spin",
                  "hidden", "pftrace_proto"]),
    ("the registry", ["registry/"]),
]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def objects_graph(objects_dir, root):
    """Module -> {called module: a symbol}, from the objects whose source is in ROOT (an
    object left in the build by a file since moved or deleted is no part of the library)."""
    defined, wanted = {}, {}
    for where, _, files in os.walk(objects_dir):
        for name in files:
            if not name.endswith(".o"):
                continue
            path = os.path.join(where, name)
            module = os.path.relpath(path, objects_dir)[:-2]
            if not os.path.exists(os.path.join(root, "libnvtxshim", module + ".c")):
                continue
            out = subprocess.run(["nm", "-P", path], capture_output=True, text=True,
                                 check=True).stdout
            defined[module], wanted[module] = set(), set()
            for line in out.splitlines():
                fields = line.split()
                if len(fields) < 2:
                    continue
                symbol, kind = fields[0], fields[1]
                if kind == "U":
                    wanted[module].add(symbol)
                elif kind.isupper() and kind not in "UVW":
                    defined[module].add(symbol)
    owner = {}
    for module, symbols in defined.items():
        for symbol in symbols:
            owner.setdefault(symbol, module)
    graph = collections.defaultdict(dict)
    for module, symbols in wanted.items():
        for symbol in sorted(symbols):
            target = owner.get(symbol)
            if target and target != module:
                graph[module].setdefault(target, symbol)
    return graph, set(defined)


def includes_graph(root, folder):
    """Module -> {included module: the including file}; modules are paths without the
    extension, relative to FOLDER."""
    base = os.path.join(root, folder)
    graph = collections.defaultdict(dict)
    outside = []
    for where, _, files in os.walk(base):
        for name in sorted(files):
            if not name.endswith((".c", ".h")) or name.endswith(".bpf.c"):
                continue
            path = os.path.join(where, name)
            module = os.path.relpath(path, base).rsplit(".", 1)[0]
            with open(path, encoding="utf-8", errors="replace") as source:
                text = source.read()
            for included in INCLUDE.findall(text):
                # as the compiler finds it: beside the file, then from the folder's root (cli/'s
                # rooms include each other as "model/events.h", -Icli), then the library's
                target = os.path.normpath(os.path.join(where, included))
                if not os.path.exists(target):
                    target = os.path.normpath(os.path.join(base, included))
                if not os.path.exists(target):
                    target = os.path.normpath(os.path.join(root, "libnvtxshim", included))
                if not os.path.exists(target):
                    continue                        # generated (build/), or a system header
                relative = os.path.relpath(target, base)
                if relative.startswith(".."):
                    outside.append((os.path.relpath(path, root), os.path.relpath(target, root)))
                    continue
                # a .c and its .h are one file; a table (.def) is one of its own
                other = relative.rsplit(".", 1)[0] if relative.endswith((".c", ".h")) else relative
                if other != module:
                    graph[module].setdefault(other, os.path.relpath(path, root))
    return graph, outside


def cycles(graph):
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = [0]
    nodes = set(graph) | {t for targets in graph.values() for t in targets}
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, {}))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = counter[0]
                    counter[0] += 1
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph.get(successor, {})))))
                    advanced = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
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
    return found


def floor_of(module):
    """The index of MODULE's floor in FLOORS, or None; a file named for itself stands where
    its entry says, before the floor of the folder it is in."""
    for number, (_, members) in enumerate(FLOORS):
        if module in members:
            return number
    for number, (_, members) in enumerate(FLOORS):
        for member in members:
            if member.endswith("/") and module.startswith(member):
                return number
    return None


def arrows_up(graph, how):
    """Each edge of GRAPH from a floor to one above it, and each module on no floor."""
    found = []
    modules = sorted(set(graph) | {t for targets in graph.values() for t in targets})
    for module in modules:
        if floor_of(module) is None:
            found.append("%s stands on no floor: put it on one in FLOORS (scripts/direction.py)"
                         % module)
    for module in sorted(graph):
        for target, why in sorted(graph[module].items()):
            here, there = floor_of(module), floor_of(target)
            if here is not None and there is not None and there < here:
                found.append("%s (%s) %s %s (%s), a floor above it: %s"
                             % (module, FLOORS[here][0], how, target, FLOORS[there][0], why))
    return found


def rooms_down(cli):
    """cli/'s includes from a room to another not below it, or from a file in no room."""
    found = []
    for module, targets in sorted(cli.items()):
        room = module.split("/")[0] if "/" in module else None
        if room not in CLI_ROOMS:
            found.append("cli/%s is in no room of cli/ (%s)" % (module, ", ".join(CLI_ROOMS)))
            continue
        for target, where in sorted(targets.items()):
            other = target.split("/")[0]
            if other != room and CLI_ROOMS.get(other, CLI_ROOMS[room]) >= CLI_ROOMS[room]:
                found.append("%s includes cli/%s: a room of cli/ includes only the rooms below "
                             "it (util/, model/, readers/ and writers/, commands/)" % (where, target))
    return found


def describe(component, graph, how):
    members = set(component)
    edges = ["%s -> %s (%s)" % (a, b, graph[a][b]) for a in component
             for b in sorted(graph.get(a, {})) if b in members]
    return "a cycle of %s among %s: %s" % (how, ", ".join(component), "; ".join(edges))


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__.strip().splitlines()[-5], file=sys.stderr)
        return 2
    objects_dir = argv[1]
    root = argv[2] if len(argv) == 3 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    breaches = []
    calls, modules = objects_graph(objects_dir, root)
    if len(modules) < 10:
        breaches.append("%s: %d objects, too few to be the library's" % (objects_dir, len(modules)))
    for component in cycles(calls):
        breaches.append(describe(component, calls, "calls"))
    breaches += arrows_up(calls, "calls")
    for target, symbol in sorted(calls.get("devices/table", {}).items()):
        if target.startswith("devices/"):
            breaches.append("the descriptor table calls %s (%s): a kind's file is reached "
                            "through the kinds' table, and calls only down" % (target, symbol))
    includes, _ = includes_graph(root, "libnvtxshim")
    for component in cycles(includes):
        breaches.append(describe(component, includes, "includes"))
    breaches += arrows_up(includes, "includes")
    for module, targets in sorted(includes.items()):
        if module.startswith("hooks/") or module in TOP:
            continue
        for target, where in sorted(targets.items()):
            if target.startswith("hooks/") and not target.endswith(".def"):
                breaches.append("%s includes hooks/%s: only hooks/ and init.c include the "
                                "wrappers' headers" % (where, target[len("hooks/"):]))
    cli, shared = includes_graph(root, "cli")
    for component in cycles(cli):
        breaches.append(describe(component, cli, "includes in cli/"))
    breaches += rooms_down(cli)
    for where, target in shared:
        if target.startswith("libnvtxshim/") and os.path.basename(target) not in SHARED:
            breaches.append("%s includes %s: cli/ shares only %s with the library"
                            % (where, target, ", ".join(sorted(SHARED))))
    for line in breaches:
        print("direction: " + line, file=sys.stderr)
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
