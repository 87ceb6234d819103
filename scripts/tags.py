#!/usr/bin/env python3
"""make tags: one ctags index of the library, the command and the examples that also finds
every generated wrapper.

ctags reads C as written: a wrapper that a macro writes (`COPY_PAIR(CUresult,
cuMemcpyHtoDAsync_v2, ...)`, `DATA_TRANSFER(libusb_bulk_transfer)`, `X11_CALL(...)`) is no
function to it, and a search for `libusb_bulk_transfer` ends in libusb's header. So each
symbol the registry lists (libnvtxshim/registry/*.def, one NVS_HOOK line each) that ctags did
not find defined in the library gets a tag at the line that makes its wrapper, in a .c file
of the library (the registry's own files and the table of wrappers aside): a definition
under its assembler name (`nvs_open(...) __asm__("open")`), else an exported definition
ctags lost among macro calls, else the first macro call that names it. A hooked symbol with no such line is said, and the exit status
is 1: its wrapper is somewhere no reader would look.

    scripts/tags.py [OUTPUT]      (default: tags, in the tree's root)
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = ("libnvtxshim", "cli", "examples")
HOOK = re.compile(r"^NVS_HOOK\((\w+),", re.M)
# A line that starts a macro call: an upper-case name and its opening parenthesis.
MACRO_CALL = re.compile(r"^\s*([A-Z][A-Z0-9_]*)\s*\((.*)$")
NOT_WRAPPERS = ("libnvtxshim/registry/", "libnvtxshim/wrappers.c")
# A function defined under another name than its C one: nvs_open(...) __asm__("open").
ASM_NAME = re.compile(r'__asm__\("(\w+)"\)')
# The names a definition line of an exported function introduces.
EXPORTED = re.compile(r"\b(\w+)\s*\(")


def hooked_symbols():
    found = []
    registry = os.path.join(ROOT, "libnvtxshim", "registry")
    for name in sorted(os.listdir(registry)):
        if name.endswith(".def"):
            with open(os.path.join(registry, name)) as f:
                found += HOOK.findall(f.read())
    return found


def library_sources():
    for where, _, files in sorted(os.walk(os.path.join(ROOT, "libnvtxshim"))):
        for name in sorted(files):
            relative = os.path.relpath(os.path.join(where, name), ROOT)
            if name.endswith(".c") and not relative.startswith(NOT_WRAPPERS):
                yield relative


def ctags_lines():
    out = subprocess.run(["ctags", "-R", "-f", "-", "--languages=C", "--langmap=C:+.def",
                          "--kinds-C=+p", "--fields=+n"] + list(FOLDERS),
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if line and not line.startswith("!_TAG_")]


def pattern(text):
    """A line as ctags' search pattern: /^text$/, with / and \\ escaped."""
    return "/^" + text.replace("\\", "\\\\").replace("/", "\\/") + "$/"


def generated_tags(symbols, defined):
    """{symbol: tag line} for the symbols ctags did not find defined in the library: where
    the wrapper is made, by the first line of the best kind (a definition under the
    symbol's assembler name; a definition ctags lost among macro calls; a macro call)."""
    wanted = {symbol for symbol in symbols if symbol not in defined}
    best = {}
    for path in library_sources():
        with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                found = []
                named = ASM_NAME.search(line)
                if named:
                    found.append((0, named.group(1), "asm"))
                if line.startswith("NVS_EXPORT "):
                    found += [(1, s, "NVS_EXPORT") for s in EXPORTED.findall(line)]
                call = MACRO_CALL.match(line)
                if call:
                    found += [(2, s, call.group(1)) for s in re.findall(r"\b\w+\b", call.group(2))]
                for rank, symbol, how in found:
                    if symbol in wanted and (symbol not in best or best[symbol][0] > rank):
                        best[symbol] = (rank, '%s\t%s\t%s;"\tf\tline:%d\tmade_by:%s' % (
                            symbol, path, pattern(line.rstrip("\n")), number, how))
    return {symbol: tag for symbol, (_, tag) in best.items()}


def main(argv):
    output = argv[1] if len(argv) > 1 else os.path.join(ROOT, "tags")
    lines = ctags_lines()
    defined = {line.split("\t", 1)[0] for line in lines
               if line.split("\t")[1].startswith("libnvtxshim/") and "\tf\t" in line}
    symbols = hooked_symbols()
    generated = generated_tags(symbols, defined)
    missing = [s for s in symbols if s not in defined and s not in generated]
    header = ["!_TAG_FILE_FORMAT\t2\t/extended format/",
              "!_TAG_FILE_SORTED\t1\t/0=unsorted, 1=sorted, 2=foldcase/"]
    everything = sorted(set(lines) | set(generated.values()))
    with open(output + ".tmp", "w") as f:
        f.write("\n".join(header + everything) + "\n")
    os.replace(output + ".tmp", output)
    for symbol in missing:
        print("tags: no wrapper found for %s (registry/*.def lists it)" % symbol,
              file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
