"""The library's shape: what it exports and what it links; and the Makefile's dependencies."""
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import BUILD, ROOT, SHIM


def hook_table(name):
    with open(os.path.join(ROOT, "libnvtxshim", "registry", name)) as f:
        return re.findall(r"^NVS_HOOK\((\w+),", f.read(), re.M)


def test_exports_are_exactly_the_hooks_dlsym_and_the_nvtx_entry_point():
    output = subprocess.run(["nm", "-D", "--defined-only", SHIM], capture_output=True,
                            text=True, check=True).stdout
    exported = {line.split()[-1] for line in output.splitlines() if line.strip()}
    # The version script is generated from the hook tables (cpp keeps the entry
    # points the installed cuda.h declares); it and the library must agree.
    with open(os.path.join(BUILD, "exports.map")) as f:
        mapped = set(re.findall(r"^\s*(\w+);", f.read().split("local:")[0], re.M))
    assert exported == mapped
    tables = [f for f in os.listdir(os.path.join(ROOT, "libnvtxshim", "registry")) if f.endswith(".def")]
    assert {"usb.def", "x11.def", "cuda.def", "cudart.def", "process.def"} <= set(tables)
    listed = set()
    for table in tables:
        listed |= set(hook_table(table))
    assert {"dlsym", "dlvsym", "InitializeInjectionNvtx2"} <= mapped
    assert mapped - {"dlsym", "dlvsym", "InitializeInjectionNvtx2"} <= listed
    assert {"libusb_bulk_transfer", "XPutImage", "cuMemcpyHtoD_v2", "cuMemcpyHtoD_v2_ptds",
            "cuGetProcAddress", "cudaMemcpyAsync_ptsz", "execve"} <= mapped


def test_exports_functions_alone_so_bsymbolic_binds_functions_alone():
    # The library links with -Bsymbolic (LLD, the wheel's linker, has no -Bsymbolic-functions):
    # exported data would bind inside too, and a program's copy relocation of it would split it.
    output = subprocess.run(["readelf", "--dyn-syms", "-W", SHIM], capture_output=True, text=True,
                            check=True).stdout
    defined = [line.split() for line in output.splitlines() if re.match(r"\s*\d+:", line)]
    defined = [fields for fields in defined if len(fields) >= 8 and fields[6] != "UND"]
    assert defined and {fields[3] for fields in defined} == {"FUNC"}, \
        [fields[7] for fields in defined if fields[3] != "FUNC"]


def test_links_only_libc():
    # Every process that inherits LD_PRELOAD maps what the library needs: libc alone, also in
    # the build with the kernel probe (libbpf is opened with dlopen when NVTXSHIM_KERNEL asks).
    output = subprocess.run(["readelf", "-d", SHIM], capture_output=True, text=True,
                            check=True).stdout
    needed = set(re.findall(r"\(NEEDED\).*\[(.+)\]", output))
    assert needed == {"libc.so.6"}, needed
    assert not any("usb" in n or "X11" in n or "cuda" in n for n in needed)


# ---- the Makefile's dependencies ---------------------------------------------------------------
# Which compile commands make runs after a header is touched, against which sources include that
# header. The commands come from what make prints (`make -n`), the includes from the sources' own
# #include "..." lines, searched as the compiler searches them (the including file's directory,
# then the command's -I directories): neither side reads the dependency files.

def _make(tree, *args):
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "V")}
    return subprocess.run(["make", "--no-print-directory", "BUILD=build"] + list(args), cwd=tree,
                          env=env, capture_output=True, text=True, check=True).stdout


def _compile_steps(tree, output):
    """{(source, target): (include directories, objects linked)} for each command in make -n's
    OUTPUT that compiles project sources (C files, and exports.map.in, which cpp reads)."""
    steps = {}
    for line in output.replace("\\\n", " ").splitlines():
        words = line.split()
        if "-o" not in words[:-1]:
            continue
        target = os.path.normpath(words[words.index("-o") + 1])
        files = [os.path.normpath(w) for w in words if os.path.isfile(os.path.join(tree, w))]
        objects = frozenset(f for f in files if f.endswith(".o") and f != target)
        dirs = _include_dirs(words)
        for source in files:
            if source.endswith((".c", ".in")):
                steps[source, target] = (dirs, objects)
    return steps


def _include_dirs(words):
    dirs = []
    for i, word in enumerate(words):
        for flag in ("-I", "-iquote"):
            if word == flag and i + 1 < len(words):
                dirs.append(words[i + 1])
            elif word.startswith(flag) and len(word) > len(flag):
                dirs.append(word[len(flag):])
    return tuple(dirs)


def _includes(tree, source, dirs, seen=None):
    """The project files that SOURCE includes, directly or not (paths relative to TREE)."""
    seen = set() if seen is None else seen
    with open(os.path.join(tree, source), errors="replace") as f:
        names = re.findall(r'^\s*#\s*include\s+"([^"]+)"', f.read(), re.M)
    for name in names:
        for d in (os.path.dirname(source),) + dirs:
            path = os.path.normpath(os.path.join(d, name))
            if os.path.isfile(os.path.join(tree, path)):
                if not path.startswith("build/") and path not in seen:
                    seen.add(path)
                    _includes(tree, path, dirs, seen)
                break
    return seen


def test_touching_a_header_rebuilds_exactly_what_includes_it(tmp_path):
    # A copy (the sources, and the build as it is, times kept), brought up to date there: the
    # checkout's own build is never touched, and a stale one does not change the answer.
    tree = str(tmp_path / "tree")
    shutil.copytree(ROOT, tree, symlinks=True, ignore=lambda d, names: [
        n for n in names if n in (".git", "__pycache__")
        or (os.path.abspath(d) == ROOT and n.startswith("build-"))   # other builds beside it
        or (os.path.abspath(d) == os.path.join(ROOT, "build") and n in ("asan", "tsan", "bench"))])
    programs = _make(tree, "-s", "--eval", "print-%: ; @echo $($*)", "print-TEST_PROGRAMS").split()
    targets = ["all"] + [p for p in programs if p.startswith("build/")]
    _make(tree, "-j2", "-s", *targets)
    every_step = _compile_steps(tree, _make(tree, "-n", "-B", *targets))
    assert ("libnvtxshim/hooks/cuda.c", "build/obj/hooks/cuda.o") in every_step
    includes = {step: _includes(tree, step[0], dirs) for step, (dirs, _) in every_step.items()}

    def expected(header):
        # The commands compiling a source that includes HEADER, then those linking what they make.
        steps = {step for step in every_step if header in includes[step]}
        while True:
            made = {target for _, target in steps}
            more = {step for step, (_, objects) in every_step.items() if objects & made} - steps
            if not more:
                return steps
            steps |= more

    def rebuilt_after_touching(header):
        # Newer than everything built, for one make -n; then its time as it was.
        path = os.path.join(tree, header)
        before = os.stat(path)
        os.utime(path, ns=(before.st_atime_ns, time.time_ns() + 100 * 10**9))
        try:
            return set(_compile_steps(tree, _make(tree, "-n", *targets)))
        finally:
            os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))

    headers = sorted(os.path.relpath(os.path.join(d, n), tree)
                     for top in ("libnvtxshim", "cli", "examples", "test")
                     for d, _, names in os.walk(os.path.join(tree, top))
                     for n in names if n.endswith((".h", ".def")))
    assert "libnvtxshim/hooks/copy.h" in headers and "libnvtxshim/registry/cuda.def" in headers
    wrong, included = [], 0
    for header in headers:
        want, got = expected(header), rebuilt_after_touching(header)
        included += bool(want)
        if got != want:
            wrong.append("%s: rebuilds %s without need, misses %s" % (
                header, sorted({t for _, t in got - want}), sorted({t for _, t in want - got})))
    assert not wrong, "\n".join(wrong)
    assert included > len(headers) // 2  # the #include scan found them


# ---- what decides how a target is built ------------------------------------------------------
# The compiler, the flags and what the Makefile found (the kernel probe's tools, nvcc) are
# dependencies of the targets they change: the files in $(BUILD)/flags.

def _make_here(*args, check=True):
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "V")}
    result = subprocess.run(["make", "--no-print-directory"] + list(args), cwd=ROOT, env=env,
                            capture_output=True, text=True)
    assert not check or result.returncode == 0, result.stdout + result.stderr
    return result


def _made(output, build):
    """The targets under BUILD that make's lines ("  CC      build/obj/x.o") say it made."""
    made = set()
    for line in output.splitlines():
        words = line.split()
        if len(words) == 2 and words[0].isupper() and words[1].startswith(build + "/"):
            made.add(os.path.relpath(words[1], build))
    return made


def test_the_kernel_probe_found_later_rebuilds_the_objects_it_changes(tmp_path):
    # make on a machine without libbpf, make deps, make: the kernel probe is found now, and the
    # two objects it changes (kernel.c's probe instead of its stubs, kernel_libbpf.c's libbpf
    # functions instead of nothing) are rebuilt - not kernel.o alone, which left the link
    # without bpf_object__destroy_skeleton - and no other object. And back again.
    found = _make_here("-s", "--eval", "print-%: ; @echo $($*)", "print-KERNEL_PROBE").stdout.strip()
    if found != "yes":
        pytest.skip("this machine has no libbpf, bpftool, clang or BTF for the probe")
    build = str(tmp_path / "build")
    library = os.path.join(build, "libnvtxshim.so")
    common = ["BUILD=" + build, "CFLAGS=-O0", library]

    def has_probe():
        with open(library, "rb") as f:
            return b"libbpf.so.1" in f.read()

    _make_here("-j2", "KERNEL_PROBE=no", *common)   # as where libbpf is missing
    assert not has_probe()
    probe_objects = {"obj/kernel.o", "obj/kernel_libbpf.o", "libnvtxshim.so"}
    made = _made(_make_here(*common).stdout, build)   # found now
    # The probe's object and skeleton (kernel/) are new; of the library's, exactly these two.
    assert {m for m in made if not m.startswith(("kernel/", "flags/"))} == probe_objects, made
    assert has_probe()
    assert _make_here("-q", *common, check=False).returncode == 0   # and now up to date
    made = _made(_make_here("KERNEL_PROBE=no", *common).stdout, build)
    assert made == probe_objects | {"flags/kernel"}, made
    assert not has_probe()
    # Other flags rebuild every object of the library (a dry run).
    dry = _make_here("-n", "BUILD=" + build, "CFLAGS=-O1", "KERNEL_PROBE=no", library).stdout
    compiled = {os.path.relpath(o, build) for o in re.findall(r" -o (\S+\.o)\b", dry)}
    sources = {os.path.relpath(os.path.join(d, n), os.path.join(ROOT, "libnvtxshim"))
               for d, _, names in os.walk(os.path.join(ROOT, "libnvtxshim"))
               for n in names if n.endswith(".c") and not n.endswith(".bpf.c")}
    assert compiled == {"obj/" + source[:-2] + ".o" for source in sources}


def test_every_target_depends_on_the_file_of_its_flags():
    # Every target make compiles, generates or links for make programs (the nested sanitizer
    # builds' too) lists a flags file of its own build directory among its prerequisites. From
    # make's database after a dry run that remakes everything (-p -n -B): nothing is written.
    build = os.path.relpath(BUILD, ROOT)
    result = _make_here("-p", "-n", "-B", "BUILD=" + build, "programs", "asan-programs")
    made = set()
    for line in result.stdout.splitlines():
        for target in re.findall(r"(?:^|\s)(?:-o|>) (\S+)", line):
            target = target[:-len(".tmp")] if target.endswith(".tmp") else target
            if target.startswith(build + "/") and "/flags/" not in target:
                made.add(target)
    for target in ("obj/kernel_libbpf.o", "nvtxshim", "cli/commands/main.o", "test/frame_loop",
                   "exports.map", "asan/obj/kernel.o", "tsan/test/stress"):
        assert os.path.join(build, target) in made, target
    nested = re.findall(r"^NESTED_BUILDS :?= (.*)$", result.stdout, re.M)
    nested = set(" ".join(nested).split())
    prerequisites = {}
    for line in result.stdout.splitlines():
        match = re.match(r"^(\S+): (.*)$", line)
        if match and match.group(1) in made:
            prerequisites.setdefault(match.group(1), set()).update(match.group(2).split())
    missing = []
    for target in sorted(made):
        home = max([d for d in nested if target.startswith(d + "/")] + [build], key=len)
        if not any(p.startswith(home + "/flags/") for p in prerequisites.get(target, ())):
            missing.append(target)
    assert not missing, missing
