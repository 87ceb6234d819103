"""The library against what could make it harm its host, round three (test/programs/harmless.c):

- a signal handler whose libc call is the process's first of that function, while the thread
  it interrupted is inside the dynamic loader, with nothing set: the wrapper's real function is
  found at load, never then (a lookup would wait for the loader's lock that thread holds);
- a function the driver lacks (cuPointerGetAttribute) is looked up once, not on every copy;
- pointers and counts the kernel refuses (poll, ppoll, select, pselect, readv, writev): the
  kernel's EFAULT and EINVAL, never a fault of the library's, which reads a call's memory only
  once the kernel has accepted it;
- a device closed behind the library's back (a raw close system call, freopen's own close):
  the descriptor that next gets its number, by any libc call, is not taken for the device;
- the library's own I/O (its log lines, its trace file, its clock) never goes through the
  wrappers it exports for the program: its message on a descriptor 2 that is a followed
  device is not drawn as the program's write; and a build check that says so of every object.
"""
import collections
import os
import subprocess
import tempfile

import pytest

import pftracefile
from conftest import BUILD, ROOT, SHIM, load_trace, program, run, sanitizer_free

TIMEOUT = 60
FORMATS = ["json", "pftrace"]


def harmless(*args):
    return [program("test/harmless")] + [str(a) for a in args]


def names(path):
    """Counter of the names of PATH's ranges and marks, either form."""
    if str(path).endswith(".pftrace"):
        summary = pftracefile.check(path)
        return collections.Counter([r["name"] for r in summary["ranges"]] +
                                   [m["name"] for m in summary["marks"]])
    return collections.Counter(e["name"] for e in load_trace(path) if e.get("ph") in ("X", "i"))


def same_as_without(shimmed, plain):
    assert shimmed.returncode == plain.returncode, shimmed.stderr.decode(errors="replace")
    assert shimmed.stdout == plain.stdout
    assert [line for line in shimmed.stderr.decode().splitlines()
            if not line.startswith("nvtxshim: ")] == plain.stderr.decode().splitlines()


# ---- 1: a handler's first libc call while its thread is in the loader ----------------------

TRIALS = 300


@pytest.mark.parametrize("function", ["_exit", "write", "close"])
def test_a_handlers_first_libc_call_never_waits_for_the_loader(function):
    """Each trial: a thread loops in dlopen/dlsym/dlclose, SIGUSR1 interrupts it after a random
    few milliseconds, and its handler makes the process's first call of FUNCTION, then _exit(3).
    Before the real libc functions were found at load, 1 to 2 trials in 100 hung for good (the
    lookup waited for the loader's lock its own thread held). With nothing set."""
    argv = harmless("handler", function)
    hangs = []
    for trial in range(TRIALS):
        try:
            done = run(argv, timeout=20)
        except subprocess.TimeoutExpired:
            hangs.append(trial)
            if len(hangs) >= 3:
                break
            continue
        assert done.returncode == 3, (trial, done.returncode, done.stderr[-2000:])
        assert done.stdout == b"" and sanitizer_free(done.stderr) == b""
    assert not hangs, "trials %s of %d hung" % (hangs, TRIALS)


# ---- 2: a missing function is remembered as missing ----------------------------------------

def test_a_function_the_driver_lacks_is_looked_up_once(tmp_path):
    """A driver without cuPointerGetAttribute (test/cuda/stub_libcuda.c built without it): the
    library asks for it once, then knows it missing, where it asked on every copy (a pass
    through the loader and its lock each time). Counted from the loader's own log."""
    trace = tmp_path / "copies.json"
    log = tmp_path / "loader"
    stub = os.path.join(BUILD, "test", "stub-nopointer")
    done = run([program("test/cuda_copies"), "linked"],
               env={"LD_LIBRARY_PATH": stub, "NVTXSHIM_TRACE": str(trace),
                    "LD_DEBUG": "symbols", "LD_DEBUG_OUTPUT": str(log)}, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr[-2000:]
    copies = [n for n in names(trace).elements() if n.startswith("cuMemcpy")]
    assert len(copies) >= 8
    lookups = 0
    for name in os.listdir(tmp_path):
        if name.startswith("loader"):
            with open(tmp_path / name, errors="replace") as f:
                lookups += sum("symbol=cuPointerGetAttribute;" in line and
                               "stub-nopointer/libcuda.so.1" in line for line in f)
    # One lookup by RTLD_NEXT and one through the driver's handle: each searches the driver once.
    assert 1 <= lookups <= 2, "%d lookups of cuPointerGetAttribute in libcuda for %d copies" % (
        lookups, len(copies))


# ---- 3: memory the kernel refuses ----------------------------------------------------------

@pytest.mark.parametrize("form", FORMATS)
def test_pointers_and_counts_the_kernel_refuses_are_its_errors(tmp_path, form):
    """poll, ppoll, select, pselect, readv and writev on a followed device, given a bad
    pointer: EFAULT as without the library (it used to read them first and die of SIGSEGV);
    poll and ppoll with a count of INT_MAX: EINVAL (it read that many entries). Recording."""
    trace = tmp_path / ("trace." + form)
    argv = harmless("bad-pointers", "/dev/null")
    env = {"NVTXSHIM_DEVICES": "/dev/null", "NVTXSHIM_TRACE": str(trace)}
    shimmed = run(argv, env=env, timeout=TIMEOUT)
    plain = run(argv, env=env, shim=False, timeout=TIMEOUT)
    same_as_without(shimmed, plain)
    lines = shimmed.stdout.decode().splitlines()
    assert lines[:9] == ["poll = -1 (EFAULT)", "poll INT_MAX = -1 (EINVAL)", "ppoll = -1 (EFAULT)",
                         "ppoll INT_MAX = -1 (EINVAL)", "select = -1 (EFAULT)",
                         "select write = -1 (EFAULT)", "pselect = -1 (EFAULT)",
                         "readv = -1 (EFAULT)", "writev = -1 (EFAULT)"]
    seen = names(trace)
    # The device was followed: its calls are there, the refused ones as failures.
    assert seen["readv /dev/null failed: EFAULT"] == 1
    assert seen["writev /dev/null"] == 2 and seen["poll /dev/null"] == 1


# ---- 6: descriptors that get a closed device's number --------------------------------------

@pytest.mark.parametrize("form", FORMATS)
def test_a_new_descriptor_is_never_taken_for_a_device_closed_behind_the_library(tmp_path, form):
    """A device closed by a raw system call (or by freopen inside libc), then its number handed
    out again by open of a regular file, pipe, socketpair, eventfd, SCM_RIGHTS, freopen, fopen
    and accept: the writes to those are not the device's. Each device is written 1 byte before."""
    trace = tmp_path / ("trace." + form)
    argv = harmless("reused", "/dev/null", tmp_path / "file")
    done = run(argv, env={"NVTXSHIM_DEVICES": "/dev/null", "NVTXSHIM_TRACE": str(trace)},
               timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(done.stdout.decode().splitlines()) == 8
    device = {name: count for name, count in names(trace).items() if "/dev/null" in name}
    assert device == {"write /dev/null 1B": 8}


# ---- 7: the library's own I/O --------------------------------------------------------------

def test_the_librarys_own_line_on_a_followed_descriptor_is_not_the_programs_write(tmp_path):
    """Descriptor 2 made a followed device (a file named in NVTXSHIM_DEVICES): the program's
    line there is its write; the library's own debug line after it is in the file but is not
    drawn (its write went through the library's exported write, and was)."""
    trace = tmp_path / "trace.json"
    path = tmp_path / "device.log"
    done = run(harmless("stderr", path), env={"NVTXSHIM_DEVICES": str(path),
                                              "NVTXSHIM_TRACE": str(trace),
                                              "NVTXSHIM_LOG": "debug"}, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = path.read_text().splitlines()
    assert lines[0] == "the program's line"
    assert any(line.startswith("nvtxshim: ") for line in lines[1:])
    writes = [name for name in names(trace).elements() if name.startswith("write ")]
    assert len(writes) == 1 and writes[0].endswith("device.log 19B"), writes


def own_calls(*objects):
    return subprocess.run([os.path.join(ROOT, "scripts", "own_calls.sh"),
                           os.path.join(BUILD, "exports.map")] + [str(o) for o in objects],
                          capture_output=True, text=True, timeout=TIMEOUT)


def test_no_object_of_the_library_calls_its_own_exported_wrappers():
    """scripts/own_calls.sh, which the build runs before it links: none of the library's objects
    but the hook table refers to a function the library exports for the program. (The objects
    the library is linked from: one left in the build by a source since moved is not.)"""
    top = os.path.join(BUILD, "obj")
    objects = [os.path.join(where, name) for where, _, files in os.walk(top)
               for name in files if name.endswith(".o") and os.path.exists(os.path.join(
                   ROOT, "libnvtxshim", os.path.relpath(os.path.join(where, name), top)[:-2] + ".c"))]
    assert len(objects) > 20
    done = own_calls(*objects)
    assert done.returncode == 0, done.stderr


def test_the_build_check_names_an_object_that_calls_a_wrapper(tmp_path):
    """The check itself: an object that calls write() and fcntl() fails it, named."""
    source = tmp_path / "logs.c"
    source.write_text("#include <fcntl.h>\n#include <unistd.h>\n"
                      "int say(void) { return (int)write(2, \"x\", 1) + fcntl(2, F_GETFD); }\n")
    objects = tmp_path / "logs.o"
    subprocess.run(["cc", "-c", str(source), "-o", str(objects)], check=True, timeout=TIMEOUT)
    done = own_calls(objects)
    assert done.returncode == 1
    assert "logs.o calls the library's exported wrappers: fcntl write" in done.stderr
