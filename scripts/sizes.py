#!/usr/bin/env python3
"""The house's size rules over the C sources of cli/ and libnvtxshim/: no file over
MAX_FILE_LINES lines, no function over MAX_FUNCTION_LINES lines unless the line right above
it (its comment's last line, or a line of its own) starts with the marker "One function:"
and says why it is one. A function is found as the project writes one: its head starts a
line with a letter or underscore (and may run on over indented lines) and ends with ")", its
body opens with "{" alone on the next line and closes with "}" at the start of a line; its
size counts the body's lines, braces included.

Usage: sizes.py [--root DIR] [--list] [FOLDER...]   (FOLDER: cli, libnvtxshim; both by default)
Prints one line per breach and exits 1 if there is one; --list prints every function over
the limit, marked or not, and the largest files, and exits 0."""
import argparse
import os
import re
import sys

MAX_FILE_LINES = 1000
MAX_FUNCTION_LINES = 100
MARKER = "One function:"

HEAD = re.compile(r"^[A-Za-z_].*\)\s*$")
NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def sources(root, folders):
    for folder in folders:
        for directory, subfolders, files in os.walk(os.path.join(root, folder)):
            subfolders.sort()
            for name in sorted(files):
                if name.endswith((".c", ".h")):
                    yield os.path.join(directory, name)


def functions(lines):
    """(name, first line number, body lines, marked) of each function in LINES."""
    index = 1
    while index < len(lines):
        if lines[index].rstrip() == "{" and lines[index - 1].rstrip().endswith(")"):
            # the head: its last line is above the brace, its first starts at the margin
            head = index - 1
            while head > 0 and lines[head][:1] in (" ", "\t"):
                head -= 1
            if not HEAD.match(lines[head] + ")") or lines[head].startswith(("#", "/*", "//")):
                index += 1
                continue
            match = NAME.search(" ".join(lines[head:index]))
            end = index + 1
            while end < len(lines) and not lines[end].startswith("}"):
                end += 1
            above = lines[head - 1].strip() if head > 0 else ""
            marked = above.lstrip("/*").strip().startswith(MARKER)
            yield (match.group(1) if match else "?", head + 1, end - index + 1, marked)
            index = end
        index += 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    parser.add_argument("--list", action="store_true")
    parser.add_argument("folders", nargs="*", default=["cli", "libnvtxshim"])
    arguments = parser.parse_args()
    breaches, found = [], []
    for path in sources(arguments.root, arguments.folders):
        with open(path, encoding="utf-8", errors="replace") as file:
            lines = file.read().split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        shown = os.path.relpath(path, arguments.root)
        found.append((len(lines), shown, None, False))
        if len(lines) > MAX_FILE_LINES:
            breaches.append("%s: %d lines, over %d: split it along a seam" % (shown, len(lines), MAX_FILE_LINES))
        for name, line, size, marked in functions(lines):
            if size > MAX_FUNCTION_LINES:
                found.append((size, "%s:%d" % (shown, line), name, marked))
                if not marked:
                    breaches.append("%s:%d: %s is %d lines, over %d, with no \"%s\" line above it saying why"
                                    % (shown, line, name, size, MAX_FUNCTION_LINES, MARKER))
    if arguments.list:
        for size, where, name, marked in sorted(found, reverse=True):
            if name is None and size < 700:
                continue
            print("%5d  %s%s%s" % (size, where, "  " + name if name else "", "  (marked)" if marked else ""))
        return 0
    for breach in breaches:
        print(breach, file=sys.stderr)
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
