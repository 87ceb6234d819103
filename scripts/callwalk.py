#!/usr/bin/python3
"""The files of the library one call walks through, from callgrind's call graph.

    valgrind --tool=callgrind --toggle-collect=FUNCTION --callgrind-out-file=OUT PROGRAM...
    scripts/callwalk.py OUT SOURCE_ROOT

SOURCE_ROOT is the directory the library was built in (its debug info names files from
there). Prints the library's files the collected calls ran in, every distinct call from one
of those files into another, and the pairs of files that call each other both ways. A
function's code inlined from a header counts as its own file's (callgrind names the caller by
its function), so a call through an inline door (emit.h's push, which calls the recorder
through a pointer) shows as a call from the file that made it. docs/ARCHITECTURE.md, "The way
of a call", has the walks this printed."""
import collections
import os
import re
import sys


def walk(path, root):
    names = {}

    def named(kind, value):
        # callgrind compresses names: "(7) name" the first time, "(7)" afterwards.
        match = re.match(r"\((\d+)\)(?: (.*))?", value)
        if not match:
            return value
        if match.group(2) is not None:
            names[(kind, match.group(1))] = match.group(2)
        return names.get((kind, match.group(1)), value)

    def ours(name):
        name = os.path.relpath(name, root) if name.startswith(root) else name
        return name if name.startswith("libnvtxshim/") else None

    caller_file = callee_file = None
    files, edges = set(), collections.Counter()
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("fl="):
                caller_file = named("fl", line[3:])
            elif line.startswith(("fi=", "fe=")):
                named("fl", line[3:])
            elif line.startswith("fn="):
                named("fn", line[3:])
            elif line.startswith(("cfi=", "cfl=")):
                callee_file = named("fl", line[4:])
            elif line.startswith("cfn="):
                named("fn", line[4:])
                a, b = ours(caller_file or ""), ours(callee_file or caller_file or "")
                callee_file = None
                files.update(x for x in (a, b) if x)
                if a and b and a != b:
                    edges[(a, b)] += 1
    return files, edges


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    files, edges = walk(sys.argv[1], os.path.join(os.path.abspath(sys.argv[2]), ""))
    print("files of the library: %d" % len(files))
    for name in sorted(files):
        print("  " + name)
    print("calls from one file into another (distinct): %d" % len(edges))
    for a, b in sorted(edges):
        print("  %s -> %s" % (a, b))
    both = sorted({tuple(sorted(e)) for e in edges if (e[1], e[0]) in edges})
    print("pairs calling each other both ways: %d" % len(both))
    for a, b in both:
        print("  %s <-> %s" % (a, b))


if __name__ == "__main__":
    main()
