"""seccomp: the user guide's list of the system calls a recording makes (the list under its
**seccomp.** paragraph) is complete. A filter that allows that list, the calls the guide says
the library adds without NVTXSHIM_TRACE, and the calls the program makes without the library
(measured here with strace), and that kills the process on any other system call
(SECCOMP_RET_KILL_PROCESS, build/test/seccomp_run), runs a recording of rounds of four threads
in both forms: the program exits 0 and prints what it prints without the library, and the trace
is whole. The list is read from the guide's own text, so a call taken out of it there (the
writer's lock waits with sched_yield) makes these tests fail with SIGSYS; the last test takes
sched_yield out itself and sees the filter kill the recording."""
import collections
import os
import re
import signal
import subprocess
import time

import pytest

import pftracefile
import traceformat
from childenv import clean_env
from conftest import ROOT, SHIM, load_trace, program

GUIDE = os.path.join(ROOT, "docs", "user-guide.md")
FORMATS = ["json", "pftrace"]
# Rounds of four threads at once, each named and making 20 iterations (trace_adversary
# threads): the threads of a round claim their buffers and flush them at exit together, so
# one finds the writer's file lock taken and waits for it.
ROUNDS, THREADS, ITERATIONS = 20, 4, 20
TIMEOUT = 60
NAME = re.compile(r"`([a-z_][a-z0-9_]*)`")


def guide_lists():
    """(the system calls the guide lists for a recording, those it says the library adds
    without NVTXSHIM_TRACE), from docs/user-guide.md: every backticked lower-case name in the
    list items under the **seccomp.** paragraph, and in its sentence beginning "Without
    `NVTXSHIM_TRACE`"."""
    with open(GUIDE, encoding="utf-8") as f:
        text = f.read()
    start = text.index("**seccomp.**")
    lines = text[start:].split("\n")
    items, i = [], 0
    while i < len(lines) and not lines[i].startswith("- "):
        i += 1
    while i < len(lines) and (lines[i].startswith("- ") or lines[i].startswith("  ")):
        items.append(lines[i])
        i += 1
    assert items, "no list under the guide's **seccomp.** paragraph"
    recording = set(NAME.findall("\n".join(items)))
    rest = " ".join(lines[i:i + 20])
    without = re.search(r"Without `NVTXSHIM_TRACE` the library adds only (.*?) to what", rest)
    assert without, "no sentence on the calls the library adds without NVTXSHIM_TRACE"
    return recording, set(NAME.findall(without.group(1)))


def syscall_numbers():
    """This machine's system calls, name to number, from the kernel's headers as the
    compiler sees them (<sys/syscall.h>: __NR_NAME)."""
    done = subprocess.run([os.environ.get("CC", "cc"), "-dM", "-E", "-include", "sys/syscall.h",
                           "-x", "c", "/dev/null"], capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"^#define __NR_(\w+) (\d+)$", done.stdout, re.M)}


def strace_names(log):
    """The names of the system calls in an strace -f log, finished or not."""
    names = set()
    with open(log, errors="replace") as f:
        for line in f:
            m = re.match(r"(?:\d+ +)?(?:<\.\.\. )?([a-z_][a-z0-9_]*)(?:\(| resumed>)", line)
            if m:
                names.add(m.group(1))
    return names


def adversary():
    return [program("test/trace_adversary"), "threads", str(ROUNDS), str(THREADS)]


@pytest.fixture(scope="module")
def own_calls(tmp_path_factory):
    """(the system calls of the program without the library, what it prints), measured."""
    log = tmp_path_factory.mktemp("own") / "own.strace"
    done = subprocess.run(["strace", "-f", "-qq", "-o", str(log)] + adversary(),
                          env=clean_env(), capture_output=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    names = strace_names(log)
    assert {"execve", "write", "exit_group"} <= names, names
    return names, done.stdout


def allowed_numbers(names):
    numbers = syscall_numbers()
    return ",".join(str(n) for n in sorted({numbers[name] for name in names if name in numbers}))


def recorded_env(trace):
    return clean_env({"LD_PRELOAD": SHIM, "NVTXSHIM_TRACE": str(trace)})


def under_filter(names, trace):
    """The recording of adversary() to TRACE under a filter that allows NAMES alone."""
    return subprocess.run([program("test/seccomp_run"), allowed_numbers(names)] + adversary(),
                          env=recorded_env(trace), capture_output=True, timeout=TIMEOUT)


def refused(names, trace):
    """The system calls outside NAMES that the filtered run makes, seen by strace (for the
    message of a run killed by SIGSYS)."""
    log = str(trace) + ".strace"
    subprocess.run(["strace", "-f", "-qq", "-o", log, program("test/seccomp_run"),
                    allowed_numbers(names)] + adversary(), env=recorded_env(trace),
                   capture_output=True, timeout=TIMEOUT)
    return sorted(strace_names(log) - set(names) - {"prctl", "seccomp"})


def test_the_guide_lists_system_calls_of_this_machine():
    recording, without = guide_lists()
    numbers = syscall_numbers()
    # The file's lock, the writes, the buffers: what any recording needs.
    assert {"openat", "flock", "pwritev", "mmap", "sched_yield", "getpid"} <= recording, recording
    assert without == {"getpid", "futex"}, without
    if os.uname().machine == "x86_64":
        assert sorted(recording - set(numbers)) == []


@pytest.mark.parametrize("ext", FORMATS)
def test_a_recording_of_four_threads_runs_under_a_filter_made_from_the_guide(tmp_path, own_calls, ext):
    names, plain_output = own_calls
    recording, without = guide_lists()
    allowed = names | recording | without
    trace = tmp_path / ("trace." + ext)
    done = under_filter(allowed, trace)
    if done.returncode == -signal.SIGSYS:
        pytest.fail("killed by the filter (SIGSYS): the recording made %s, which neither the "
                    "guide's list nor the program's own calls hold" % refused(allowed, trace))
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    assert done.stdout == plain_output
    assert b"nvtxshim:" not in done.stderr, done.stderr.decode(errors="replace")
    workers = ["worker %d.%d" % (r, t) for r in range(ROUNDS) for t in range(THREADS)]
    if ext == "pftrace":
        summary = pftracefile.check(trace)
        names_by_tid = {int(tid): given for tid, given in summary["threads"].items()}
        per_thread = collections.Counter(r["tid"] for r in summary["ranges"] if r["name"] == "work")
    else:
        raw = traceformat.read_complete_trace(trace)
        names_by_tid = collections.defaultdict(list)
        for e in raw:
            if e["ph"] == "M" and e["name"] == "thread_name":
                names_by_tid[e["tid"]].append(e["args"]["name"])
        per_thread = collections.Counter(e["tid"] for e in load_trace(trace, complete=True)
                                         if e.get("name") == "work" and e.get("ph") == "X")
    named = {tid: given for tid, given in names_by_tid.items()
             if any(n.startswith("worker ") for n in given)}
    assert sorted(n for given in named.values() for n in given if n.startswith("worker ")) == \
        sorted(workers)
    assert all(per_thread[tid] == ITERATIONS for tid in named)
    assert sum(per_thread.values()) == len(workers) * ITERATIONS + ROUNDS


def test_without_sched_yield_in_the_list_the_filter_kills_the_recording(tmp_path, own_calls):
    """The filter bites, and the recording above does wait for the writer's lock: with
    sched_yield taken out of the guide's list (and the program making none of its own), a
    run dies by SIGSYS. Whether a thread finds the lock taken is the scheduler's: runs are
    repeated until one does, for a bounded time."""
    names, _ = own_calls
    assert "sched_yield" not in names
    recording, without = guide_lists()
    allowed = (names | recording | without) - {"sched_yield"}
    deadline, runs, outcomes = time.monotonic() + 60, 0, collections.Counter()
    while time.monotonic() < deadline and runs < 50:
        runs += 1
        done = under_filter(allowed, tmp_path / ("trace.%d.json" % runs))
        outcomes[done.returncode] += 1
        if done.returncode == -signal.SIGSYS:
            return
        assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    pytest.fail("no run of %d waited for the writer's lock: %s" % (runs, dict(outcomes)))
