"""The trace writer (NVTXSHIM_TRACE) against what can happen to a recording process and its
file: another process recording to the same path (a child run by system(), two runs at once,
`%p` in PID namespaces, children forked while other threads record), threads that come and
go, a full disk (btrfs filled by another writer, a small tmpfs), a file size limit (RLIMIT_FSIZE),
errno through the program's own NVTX calls, its
descriptors closed and reused by the program, its file taken by another run while it had
closed the descriptor, exit and _exit from a SIGTERM handler, SIGKILL
and SIGTERM at any moment, signal handlers that record on the thread they interrupt, a path
that is not a regular file, and NVTX ranges that never end, are still open at exit or at a
failed exec, or nest deeper than the writer keeps. The program is
test/programs/trace_adversary.c.

In every case the program runs as it runs without the shim - the same stdout, the same stderr
apart from `nvtxshim:` lines, the same exit code, no signal, no hang - and every trace file
loads under the bare-array rule (test/traceformat.py), its `X` events nesting on their threads.
The writer is the same for both forms, so each case that is not about signals runs in both:
a .pftrace file passes test/pftrace_check.py (whole packets, interned ids, balanced slices)
and holds the same events. The signals' cases for the binary form are in
test_trace_pftrace.py.

"A random moment": the program prints a line once its loop runs; the test reads it, then waits
a random 0-20 ms (from a fixed seed per test, so a failure can be run again) before it signals."""
import collections
import errno
import fcntl
import os
import random
import re
import select
import shutil
import signal
import socket
import stat
import subprocess
import time

import pytest

import pftracefile
import traceformat
from conftest import STUB, command, program, run, sanitizer_free

TIMEOUT = 120  # seconds for one run: a bound for a hang, generous for ASan with busy processes beside it
FORMATS = ["json", "pftrace"]
IN_USE = re.compile(r"nvtxshim: NVTXSHIM_TRACE=(?P<path>.+) is in use by another process; "
                    r"this process writes (?P<new>.+)")
NOT_REGULAR = re.compile(r"nvtxshim: NVTXSHIM_TRACE=(?P<path>.+): not a regular file \(.+\); "
                         r"no trace is recorded")
WRITE_FAILED = re.compile(r"nvtxshim: NVTXSHIM_TRACE=(?P<path>.+): write failed "
                          r"\(No space left on device\)")
OVER_LIMIT = re.compile(r"nvtxshim: NVTXSHIM_TRACE=(?P<path>.+): write failed \(File too large: "
                        r"the process's file size limit, RLIMIT_FSIZE\): \d+ events of this thread "
                        r"not written; recording stopped, the file ends at its last whole event "
                        r"\(the line at exit counts these with the events after them\)")


def adversary(*args):
    return [program("test/trace_adversary")] + [str(a) for a in args]


def shim_lines(stderr):
    return [line for line in stderr.decode(errors="replace").splitlines()
            if line.startswith("nvtxshim:")]


def without_shim_lines(stderr):
    """STDERR less the shim's lines, and less ASan's own warning where the program leaves a
    signal handler by _exit (make test-asan), which its runtime gives at random, shim or not."""
    return b"".join(line for line in sanitizer_free(stderr).splitlines(True)
                    if not line.startswith(b"nvtxshim:"))


def described(returncode):
    if returncode < 0:
        return "killed by %s" % signal.Signals(-returncode).name
    return "exit code %d" % returncode


def same_as_without(shimmed, plain):
    """SHIMMED ran as PLAIN did: stdout, stderr less the shim's lines, exit code."""
    assert shimmed.returncode == plain.returncode, "with the shim: %s (without: %s); stderr: %r" % (
        described(shimmed.returncode), described(plain.returncode), shimmed.stderr[-2000:])
    assert shimmed.stdout == plain.stdout
    assert without_shim_lines(shimmed.stderr) == without_shim_lines(plain.stderr)


def recorded_as_without(argv, trace):
    """ARGV run recording to TRACE and run without the shim, the same (same_as_without); the
    run with the shim."""
    shimmed = run(argv, env={"NVTXSHIM_TRACE": str(trace)}, timeout=TIMEOUT)
    same_as_without(shimmed, run(argv, shim=False, timeout=TIMEOUT))
    return shimmed


def load(path):
    """PATH's events as written (the bare-array rule; nesting checked), and joined: (raw,
    events with b/e pairs as ranges, begins without an end)."""
    assert os.path.exists(path), "no trace file %s" % path
    raw = traceformat.read_trace(path)
    traceformat.check_nesting(raw, "%s: " % path)
    joined, unended = traceformat.join_async(raw)
    return raw, joined, unended


def binary(path):
    return str(path).endswith(".pftrace")


def recorded(path):
    """{pid: {(kind, name): count}} in PATH, kind "range" (push/pop), "async" (start/end) or
    "mark"; every range ended (a finished trace)."""
    counts = collections.defaultdict(collections.Counter)
    if binary(path):
        summary = pftracefile.check(path)   # no range left open, among others
        pid = summary["process"] and summary["process"]["pid"]
        for r in summary["ranges"]:
            counts[pid][("async" if r["async"] else "range", r["name"])] += 1
        for m in summary["marks"]:
            counts[pid][("mark", m["name"])] += 1
        return counts
    _, joined, unended = load(path)
    assert not unended, "start/end ranges left open in a finished trace: %r" % unended[:3]
    for e in joined:
        kind = {"X": "async" if e.get("async") else "range", "i": "mark"}.get(e["ph"])
        if kind:
            counts[e["pid"]][(kind, e["name"])] += 1
    return counts


def work(path):
    """{pid: number of `work` iterations} in PATH: each is a push/pop `work`, a start/end
    `span` and a `tick` mark, all whole."""
    result = {}
    for pid, seen in recorded(path).items():
        iterations = seen[("range", "work")]
        assert seen[("async", "span")] == seen[("mark", "tick")] == iterations, (pid, seen)
        result[pid] = iterations
    return result


class Driven:
    """A program run with pipes that the test talks to: reads its lines as they come, then
    gives it its input and waits for its end, each under a timeout (a hang fails)."""

    def __init__(self, argv, env=None, shim=True):
        argv, full_env = command(argv, env, shim)
        self.proc = subprocess.Popen(argv, env=full_env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.out = b""
        self.read = 0

    @property
    def pid(self):
        return self.proc.pid

    def line(self, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.out[self.read:]:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([fd], [], [], max(left, 0))
            if not ready:
                self.proc.kill()
                self.proc.communicate()
                pytest.fail("no line from %s in %d s: it hangs" % (self.proc.args[-3:], timeout))
            chunk = os.read(fd, 65536)
            if not chunk:
                rest = self.finish(timeout=timeout)
                pytest.fail("%s ended (%s) before printing a line; stderr: %r" % (
                    self.proc.args[-3:], described(rest.returncode), rest.stderr[-2000:]))
            self.out += chunk
        end = self.out.index(b"\n", self.read) + 1
        line, self.read = self.out[self.read:end], end
        return line

    def finish(self, data=None, timeout=TIMEOUT, what=None):
        try:
            out, err = self.proc.communicate(data, timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
            pytest.fail("%s did not end in %d s: it hangs" % (what or self.proc.args[-3:], timeout))
        return subprocess.CompletedProcess(self.proc.args, self.proc.returncode,
                                           self.out + out, err)


@pytest.fixture
def drive():
    """Driven(...), with every program still running at the end of the test killed."""
    started = []

    def start(argv, env=None, shim=True):
        started.append(Driven(argv, env, shim))
        return started[-1]
    yield start
    for driven in started:
        if driven.proc.poll() is None:
            driven.proc.kill()
            driven.proc.communicate()


def paused(drive, more, env=None, shim=True, before=500):
    """trace_adversary pause: BEFORE iterations, "ready", MORE iterations; run to its end."""
    driven = drive(adversary("pause", before), env, shim)
    assert driven.line() == b"ready\n"
    return driven.finish(b"%d\n" % more)


def second_name(path, new):
    """The pid in NEW, the name a second process recording to PATH takes: NAME.PID.EXT, or
    NAME.PID.N.EXT when that one is in use too, in PATH's directory."""
    name, extension = os.path.splitext(os.path.basename(path))
    assert os.path.dirname(new) == os.path.dirname(path), new
    match = re.fullmatch(re.escape(name) + r"\.(\d+)(?:\.\d+)?" + re.escape(extension),
                         os.path.basename(new))
    assert match, "%s is not %s.PID%s or %s.PID.N%s" % (new, name, extension, name, extension)
    return int(match.group(1))


def in_use_line(stderr, path):
    """The one line saying PATH is taken (and no other line of the shim's); the new path."""
    lines = shim_lines(stderr)
    assert len(lines) == 1, "one line about the path in use, and only that: %r" % lines
    match = IN_USE.fullmatch(lines[0])
    assert match and match["path"] in (path if isinstance(path, tuple) else (path,)), lines[0]
    return match["new"]


# ---- 1. another process records to the same path ----------------------------------------

@pytest.mark.parametrize("ext", FORMATS)
def test_a_child_run_by_system_records_to_a_file_of_its_own(tmp_path, ext):
    # The child inherits LD_PRELOAD and NVTXSHIM_TRACE (no %p) while the parent's file is open;
    # the parent records on after the child ended.
    trace = tmp_path / ("trace." + ext)
    argv = adversary("system", 1000, 10)
    plain = run(argv, shim=False, timeout=TIMEOUT)
    shimmed = run(argv, env={"NVTXSHIM_TRACE": str(trace)}, timeout=TIMEOUT)
    same_as_without(shimmed, plain)
    new = in_use_line(shimmed.stderr, str(trace))
    child = second_name(str(trace), new)
    assert sorted(os.listdir(tmp_path)) == sorted([trace.name, os.path.basename(new)])
    parent = work(trace)
    assert list(parent.values()) == [2000] and child not in parent
    assert work(new) == {child: 10}


@pytest.mark.parametrize("ext", FORMATS)
def test_two_runs_at_once_with_the_same_path(tmp_path, drive, ext):
    # Both start together and record; the one that ends first (with no more iterations) may
    # leave the file under the other, which then records 5000 iterations more.
    trace = tmp_path / ("trace." + ext)
    env = {"NVTXSHIM_TRACE": str(trace)}
    first, second = drive(adversary("pause", 500), env), drive(adversary("pause", 500), env)
    assert first.line() == second.line() == b"ready\n"
    results = {first.pid: first.finish(b"0\n")}
    results[second.pid] = second.finish(b"5000\n")
    same_as_without(results[first.pid], paused(drive, 0, shim=False))
    same_as_without(results[second.pid], paused(drive, 5000, shim=False))
    said = {pid: shim_lines(result.stderr) for pid, result in results.items()}
    assert sorted(len(lines) for lines in said.values()) == [0, 1], said
    [(moved, _)] = [(pid, lines) for pid, lines in said.items() if lines]
    new = in_use_line(results[moved].stderr, str(trace))
    assert second_name(str(trace), new) == moved
    assert sorted(os.listdir(tmp_path)) == sorted([trace.name, os.path.basename(new)])
    expected = {first.pid: 500, second.pid: 5500}
    [stayed] = set(results) - {moved}
    assert work(trace) == {stayed: expected[stayed]}
    assert work(new) == {moved: expected[moved]}


def pid_namespaces_work():
    if os.geteuid() != 0:
        return "PID namespaces (unshare -p) need root"
    if not shutil.which("unshare"):
        return "no unshare(1) here (util-linux)"
    probe = subprocess.run(["unshare", "-p", "-f", "--mount-proc", "--kill-child", "true"],
                           capture_output=True, timeout=TIMEOUT)
    if probe.returncode != 0:
        return "unshare -p -f --mount-proc fails here: %s" % probe.stderr.decode().strip()
    return None


@pytest.mark.parametrize("ext", FORMATS)
def test_pid_in_the_path_in_two_pid_namespaces(tmp_path, drive, ext):
    # Two runs at once, each PID 1 of its own namespace: `%p` gives both trace.1.EXT.
    reason = pid_namespaces_work()
    if reason:
        pytest.skip(reason)
    template = tmp_path / ("trace.%p." + ext)
    env = {"NVTXSHIM_TRACE": str(template)}
    if os.environ.get("ASAN_OPTIONS"):
        # make test-asan: LeakSanitizer cannot stop the world as PID 1 of a new PID namespace
        # ("LeakSanitizer has encountered a fatal error"); ASan itself stays on.
        env["ASAN_OPTIONS"] = os.environ["ASAN_OPTIONS"] + ":detect_leaks=0"
    argv = ["unshare", "-p", "-f", "--mount-proc", "--kill-child"] + adversary("pause", 500)
    first, second = drive(argv, env), drive(argv, env)
    assert first.line() == second.line() == b"ready\n"
    results = [first.finish(b"0\n"), second.finish(b"5000\n")]
    plain = [paused(drive, 0, shim=False), paused(drive, 5000, shim=False)]
    for shimmed, unshimmed in zip(results, plain):
        same_as_without(shimmed, unshimmed)
    taken = str(tmp_path / ("trace.1." + ext))
    said = [shim_lines(result.stderr) for result in results]
    assert sorted(len(lines) for lines in said) == [0, 1], said
    moved = 0 if said[0] else 1
    new = in_use_line(results[moved].stderr, (taken, str(template)))
    assert second_name(taken, new) == 1, "PID 1 in its namespace"
    assert sorted(os.listdir(tmp_path)) == sorted([os.path.basename(taken), os.path.basename(new)])
    assert work(taken) == {1: [500, 5500][1 - moved]}
    assert work(new) == {1: [500, 5500][moved]}


@pytest.mark.parametrize("ext", FORMATS)
def test_forks_while_other_threads_record(tmp_path, ext):
    # Two threads record (each buffer fills every few hundred iterations, taking the file's
    # lock) while the main thread forks 60 children one at a time, inside a range; a child
    # does not have those threads, and must not wait for a lock one of them held at the fork.
    # Each child records 100 iterations and leaves by exit or _exit in turn.
    trace = tmp_path / ("trace." + ext)
    argv = adversary("forkbusy", 60)
    env = {}
    if os.environ.get("ASAN_OPTIONS"):
        # make test-asan: LeakSanitizer, at a forked child's exit, waits for the threads its
        # parent had, shim or not ("Running thread N was not suspended", then a hang).
        env["ASAN_OPTIONS"] = os.environ["ASAN_OPTIONS"] + ":detect_leaks=0"
    shimmed = run(argv, env=dict(env, NVTXSHIM_TRACE=str(trace)), timeout=TIMEOUT * 4)
    same_as_without(shimmed, run(argv, env=env, shim=False, timeout=TIMEOUT * 4))
    children = sorted(set(os.listdir(tmp_path)) - {trace.name})
    assert len(children) == 60, children[:5]
    for child in children:
        pid = second_name(str(trace), str(tmp_path / child))
        assert work(tmp_path / child) == {pid: 100}, child
    parent = work(trace)
    assert len(parent) == 1 and list(parent.values())[0] >= 60, parent


@pytest.mark.parametrize("ext", FORMATS)
def test_threads_that_come_and_go(tmp_path, ext):
    # 100 rounds of 8 threads at once, each named with nvtxNameOsThread, 20 iterations each,
    # joined before the next round's take over their buffers: every thread's iterations on
    # its own track, under its own name.
    trace = tmp_path / ("trace." + ext)
    argv = adversary("threads", 100, 8)
    recorded_as_without(argv, trace)
    if binary(trace):
        summary = pftracefile.check(trace)
        names = {int(tid): given for tid, given in summary["threads"].items()}
        per_thread = collections.Counter(r["tid"] for r in summary["ranges"] if r["name"] == "work")
    else:
        raw, joined, _ = load(trace)
        names = collections.defaultdict(list)
        for e in raw:
            if e["ph"] == "M" and e["name"] == "thread_name":
                names[e["tid"]].append(e["args"]["name"])
        per_thread = collections.Counter(e["tid"] for e in joined if e["name"] == "work")
    workers = {tid: given for tid, given in names.items() if any(n.startswith("worker ") for n in given)}
    assert sorted(n for given in workers.values() for n in given if n.startswith("worker ")) == \
        sorted("worker %d.%d" % (r, t) for r in range(100) for t in range(8))
    assert all(per_thread[tid] == 20 for tid in workers), collections.Counter(
        per_thread[tid] for tid in workers)
    assert sum(per_thread.values()) == 100 * 8 * 20 + 100


# ---- 2. full disks ------------------------------------------------------------------------

def mount(argv, target):
    """Runs mount ARGV ... TARGET as root; skips with mount's reason where it cannot."""
    if os.geteuid() != 0:
        pytest.skip("mounting a file system needs root")
    target.mkdir()
    done = subprocess.run(["mount"] + argv + [str(target)], capture_output=True, timeout=TIMEOUT)
    if done.returncode != 0:
        pytest.skip("cannot mount here: %s" % done.stderr.decode().strip())


def unmount(target):
    if subprocess.run(["umount", str(target)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(target)], capture_output=True)


@pytest.fixture
def small_btrfs(tmp_path):
    """A 32 MiB btrfs on a loop device (mixed block groups, so it can be that small)."""
    if os.geteuid() != 0:
        pytest.skip("a loop-mounted btrfs needs root")
    mkfs = shutil.which("mkfs.btrfs") or next(
        (p for p in ("/usr/sbin/mkfs.btrfs", "/sbin/mkfs.btrfs") if os.path.exists(p)), None)
    if not mkfs:
        pytest.skip("mkfs.btrfs is missing (btrfs-progs: make deps installs it)")
    if not os.path.exists("/dev/loop-control"):
        pytest.skip("no loop devices here (/dev/loop-control is missing)")
    image = tmp_path / "btrfs.img"
    with open(image, "wb") as f:
        f.truncate(32 << 20)
    made = subprocess.run([mkfs, "-q", "-M", str(image)], capture_output=True, timeout=TIMEOUT)
    assert made.returncode == 0, made.stderr
    target = tmp_path / "btrfs"
    mount(["-t", "btrfs", "-o", "loop", str(image)], target)
    yield target
    unmount(target)
    image.unlink()


@pytest.fixture
def small_tmpfs(tmp_path):
    target = tmp_path / "tmpfs"
    mount(["-t", "tmpfs", "-o", "size=512k", "tmpfs"], target)
    yield target
    unmount(target)


def fill(directory):
    """Another writer takes every free byte of DIRECTORY's file system."""
    with open(directory / "filler", "wb", buffering=0) as f:
        for size in (1 << 20, 4096, 1):
            block = b"\0" * size
            while True:
                try:
                    f.write(block)
                except OSError as error:
                    assert error.errno == errno.ENOSPC, error
                    break
        try:
            os.fsync(f.fileno())
        except OSError as error:
            assert error.errno == errno.ENOSPC, error


def check_full_disk_run(shimmed, plain, trace, failed=WRITE_FAILED):
    same_as_without(shimmed, plain)
    said = [line for line in shim_lines(shimmed.stderr) if failed.match(line)]
    assert len(said) == 1, "one line saying the writes failed: %r" % shim_lines(shimmed.stderr)
    assert failed.match(said[0])["path"] == str(trace), said[0]
    if binary(trace):
        # Whole packets only (a partial one is a problem without --cut); a range whose
        # begin was written before the disk filled may have lost its end.
        summary = pftracefile.check(trace, "--allow-open")
        assert summary["tail"]["bytes"] == 0 and summary["last_whole_end"] == summary["bytes"]
        return {summary["process"]["pid"]} if summary["packets"] else set()
    raw, _, _ = load(trace)  # whole events only: a cut one would not load
    return {e["pid"] for e in raw}


@pytest.mark.parametrize("ext", FORMATS)
def test_a_btrfs_filled_by_another_writer_during_the_run(small_btrfs, drive, ext):
    # The program records, the disk fills up and is synced (the file's written pages are
    # clean again: on a copy-on-write file system new writes to them need new space), then
    # the program records 20000 iterations more.
    trace = small_btrfs / ("trace." + ext)
    driven = drive(adversary("pause", 300), {"NVTXSHIM_TRACE": str(trace)})
    assert driven.line() == b"ready\n"
    fill(small_btrfs)
    subprocess.run(["sync"], check=True, timeout=TIMEOUT)
    shimmed = driven.finish(b"20000\n")
    pids = check_full_disk_run(shimmed, paused(drive, 20000, shim=False, before=300), trace)
    assert pids <= {driven.pid}


@pytest.mark.parametrize("ext", FORMATS)
def test_a_small_tmpfs_that_fills(small_tmpfs, ext):
    trace = small_tmpfs / ("trace." + ext)
    argv = adversary("loop", 20000)
    shimmed = run(argv, env={"NVTXSHIM_TRACE": str(trace)}, timeout=TIMEOUT)
    assert len(check_full_disk_run(shimmed, run(argv, shim=False, timeout=TIMEOUT), trace)) <= 1


def with_file_limit(kib, argv):
    """ARGV run under a file size limit of KIB KiB (RLIMIT_FSIZE, as `ulimit -f` sets it), shim
    or not (prlimit(1), util-linux)."""
    return ["prlimit", "--fsize=%d" % (kib * 1024)] + list(argv)


@pytest.mark.parametrize("ext", FORMATS)
def test_a_file_size_limit_below_what_the_trace_would_take(tmp_path, ext):
    # A process may not write past RLIMIT_FSIZE: the write that tries is refused and raises
    # SIGXFSZ, which kills the program (it killed it, exit 153, before the writer kept below
    # the limit). The program writes nothing itself; its trace would take ~1.5 MB.
    trace = tmp_path / ("trace." + ext)
    argv = with_file_limit(200, adversary("loop", 20000))
    shimmed = run(argv, env={"NVTXSHIM_TRACE": str(trace)}, timeout=TIMEOUT)
    check_full_disk_run(shimmed, run(argv, shim=False, timeout=TIMEOUT), trace, OVER_LIMIT)
    assert 190 * 1024 < trace.stat().st_size <= 200 * 1024


@pytest.mark.parametrize("ext", FORMATS)
@pytest.mark.parametrize("where", ["new file", "in use", "full disk", "file size limit"])
def test_the_programs_own_nvtx_calls_keep_its_errno(tmp_path, request, ext, where):
    # A program that marks between a failed call and its look at errno must see its own: the
    # first event opens the file (an lstat that finds nothing, a flock that finds it taken),
    # a write can fail. Every kind of NVTX call, errno set before and looked at after.
    directory = request.getfixturevalue("small_tmpfs") if where == "full disk" else tmp_path
    trace = directory / ("trace." + ext)
    argv = adversary("errno", 3000)
    if where == "file size limit":
        argv = with_file_limit(64, argv)
    holder = None
    if where == "in use":
        holder = open(trace, "w")
        fcntl.flock(holder, fcntl.LOCK_EX)
    try:
        shimmed = run(argv, env={"NVTXSHIM_TRACE": str(trace)}, timeout=TIMEOUT)
    finally:
        if holder:
            holder.close()
    assert shimmed.stdout == b"errno kept\n" and shimmed.returncode == 0, (
        shimmed.stdout, shim_lines(shimmed.stderr))
    said = shim_lines(shimmed.stderr)
    expected = {"new file": 0, "in use": 1, "full disk": 2, "file size limit": 2}[where]
    assert len(said) == expected, said


# ---- 3. the program closes every descriptor and opens its own file ------------------------

@pytest.mark.parametrize("ext", FORMATS)
@pytest.mark.parametrize("how", ["close_range", "loop"])
def test_descriptors_closed_and_reused_by_the_program(tmp_path, how, ext):
    # Daemon style: NVTX calls (the trace file is open), every descriptor from 3 up closed,
    # then the program's own file (the lowest free descriptor) written between NVTX calls.
    plain = run(adversary("fdreuse", tmp_path / "plain.out", how), shim=False, timeout=TIMEOUT)
    trace = tmp_path / ("trace." + ext)
    shimmed = run(adversary("fdreuse", tmp_path / "shim.out", how),
                  env={"NVTXSHIM_TRACE": str(trace)}, timeout=TIMEOUT)
    same_as_without(shimmed, plain)
    assert plain.returncode == 0, plain.stderr
    mine, theirs = (tmp_path / "shim.out").read_bytes(), (tmp_path / "plain.out").read_bytes()
    assert len(mine) == len(theirs) and mine == theirs, "the program's own file was changed"
    # The trace file was opened again by its path: every iteration is in it, those before the
    # descriptors were closed and those after, and one line says so.
    assert list(work(trace).values()) == [200 + 64 * 100 + 100]
    assert shim_lines(shimmed.stderr) == [
        "nvtxshim: NVTXSHIM_TRACE=%s: the program closed or reused the trace file's descriptor; "
        "the file is opened again" % trace]


MOVED = re.compile(r"nvtxshim: NVTXSHIM_TRACE=(?P<path>.+): the program closed or reused the trace "
                   r"file's descriptor, and the file is no longer this process's \(another process "
                   r"took the path, or the file was removed or rewritten\); this process writes the "
                   r"rest to (?P<new>.+)")
MOVED_LOSS = re.compile(r"nvtxshim: NVTXSHIM_TRACE=(?P<path>.+): events not recorded: (?P<count>\d+) "
                        r"made for the file that stopped being this process's, which only that file "
                        r"could read")


@pytest.mark.parametrize("ext", FORMATS)
@pytest.mark.parametrize("before,other", [(30000, 500), (500, 10000)],
                         ids=["other shorter", "other longer"])
def test_a_file_another_run_took_while_the_program_had_closed_its_descriptor(tmp_path, drive, ext,
                                                                              before, other):
    # Run A records, closes every descriptor (its lock on the trace goes with the trace's) and
    # waits; run B starts on the same path, finds it free, truncates it, records and exits; A
    # records 1000 iterations more. The file B left may be shorter than what A wrote or
    # longer, on the same inode: A reopening it must see that it is not its own any more (its
    # mark, a random number in the header, is not there) and write the rest elsewhere, never
    # into B's file. Before, A wrote at its old offsets: B's file no longer loaded.
    trace = tmp_path / ("trace." + ext)
    env = {"NVTXSHIM_TRACE": str(trace)}
    first = drive(adversary("closepause", before), env)
    assert first.line() == b"ready\n"
    second = drive(adversary("loop", other), env)
    taken = second.finish()
    assert taken.returncode == 0 and shim_lines(taken.stderr) == [], taken.stderr
    assert work(trace) == {second.pid: other}
    result = first.finish(b"1000\n")
    plain = drive(adversary("closepause", before), shim=False)
    assert plain.line() == b"ready\n"
    same_as_without(result, plain.finish(b"1000\n"))
    # B's file is B's alone, whole, as B left it.
    assert work(trace) == {second.pid: other}
    said = shim_lines(result.stderr)
    assert said and MOVED.fullmatch(said[0]) and MOVED.fullmatch(said[0])["path"] == str(trace), said
    new = MOVED.fullmatch(said[0])["new"]
    assert second_name(str(trace), new) == first.pid
    assert sorted(os.listdir(tmp_path)) == sorted([trace.name, os.path.basename(new)])
    # The rest is in NAME.PID.EXT: a file that starts in the middle of A's run, so a start/end
    # range may have its end there and its begin in the file B took.
    if binary(new):
        # The binary form's events lean on what their sequence wrote before (interned names,
        # the clock): those still in A's buffer when it moved are counted, not written.
        summary = pftracefile.check(new, "--cut")
        assert summary["tail"]["bytes"] == 0 and summary["process"]["pid"] == first.pid
        assert not [n for n in summary["notes"] if "thread track" in n], summary["notes"]
        iterations = sum(1 for r in summary["ranges"] if r["name"] == "work")
        assert len(said) == 2 and MOVED_LOSS.fullmatch(said[1]), said
        assert MOVED_LOSS.fullmatch(said[1])["path"] == new
        assert 0 < iterations <= 1000 < iterations + int(MOVED_LOSS.fullmatch(said[1])["count"])
    else:
        # The JSON form's events stand alone: those still in A's buffer are there too.
        raw = traceformat.read_complete_trace(new)
        traceformat.check_nesting(raw, "%s: " % new)
        assert {e["pid"] for e in raw} == {first.pid}
        iterations = sum(1 for e in raw if e["ph"] == "X" and e["name"] == "work")
        assert len(said) == 1 and 1000 <= iterations <= 1000 + before, (said, iterations)


# ---- 4 and 6. signals at random moments ---------------------------------------------------

def signalled_runs(drive, tmp_path, mode, sig, runs, seed):
    """RUNS runs of `sigloop MODE`, each sent SIG a random 0-20 ms after it says it loops;
    yields (its index; the run, its signal and its delay, said; its pid; its result; its trace
    path). A run that has not ended TIMEOUT s after the signal hangs."""
    rng = random.Random(seed)
    for index in range(runs):
        trace = tmp_path / ("run%02d.json" % index)
        driven = drive(adversary("sigloop", mode), {"NVTXSHIM_TRACE": str(trace)})
        assert driven.line() == b"looping\n"
        delay = rng.uniform(0, 0.020)
        time.sleep(delay)
        driven.proc.send_signal(sig)
        where = "seed %d run %d (%s %.1f ms after the loop started)" % (
            seed, index, signal.Signals(sig).name, delay * 1000)
        yield index, where, driven.pid, driven.finish(timeout=TIMEOUT, what=where), trace


def check_signalled_trace(where, pid, trace, index):
    """Every run's file loads under the bare-array rule and holds this process's events only.
    A run's file holds 5-20 MB (two threads recording flat out for up to 20 ms), so the
    slower checks - nesting and the pairing of start/end halves - take every fifth run."""
    assert trace.exists(), "%s: no trace file" % where
    try:
        if index % 5 == 0:
            raw, _, _ = load(trace)
        else:
            raw = traceformat.read_trace(trace)
    except (ValueError, AssertionError) as error:
        pytest.fail("%s: the trace does not load: %s" % (where, error))
    assert {e["pid"] for e in raw} <= {pid}, where
    trace.unlink()  # checked: 25 runs' files would fill the disk (pytest keeps its last runs)


@pytest.mark.parametrize("how,seed", [("exit", 4001), ("_exit", 4002)])
def test_exit_from_a_sigterm_handler_at_a_random_moment(tmp_path, drive, how, seed):
    # 25 runs each of exit(3) and _exit(3) from the handler, while two threads make push/pop,
    # start/end ranges and marks as fast as they can.
    runs = signalled_runs(drive, tmp_path, how, signal.SIGTERM, 25, seed)
    for index, where, pid, result, trace in runs:
        assert result.returncode == 3, "%s: %s; stderr %r" % (
            where, described(result.returncode), result.stderr[-2000:])
        assert result.stdout == b"looping\n", where
        check_signalled_trace(where, pid, trace, index)


@pytest.mark.parametrize("sig,seed", [(signal.SIGKILL, 6001), (signal.SIGTERM, 6002)],
                         ids=["SIGKILL", "SIGTERM"])
def test_a_fatal_signal_at_a_random_moment(tmp_path, drive, sig, seed):
    runs = signalled_runs(drive, tmp_path, "default", sig, 25, seed)
    for index, where, pid, result, trace in runs:
        assert result.returncode == -sig, "%s: %s; stderr %r" % (
            where, described(result.returncode), result.stderr[-2000:])
        assert result.stdout == b"looping\n", where
        check_signalled_trace(where, pid, trace, index)


# ---- 4b. signal handlers that record on the thread they interrupt -----------------------------

HANDLER_LOSS = re.compile(r"(\d+) made by signal handlers that interrupted an event on their thread")
HANDLER_RUNS = 300


@pytest.mark.parametrize("ext", FORMATS)
def test_signal_handlers_that_record_on_the_thread_they_interrupt(tmp_path, ext):
    # A second thread sends SIGUSR1 to the main thread as fast as it can, while the main
    # thread makes ranges, marks and CUDA copies (the stand-in driver); the handler makes a
    # range with a mark in it. So a handler lands anywhere in the recorder: in a push, in a
    # pop between looking at its begin and writing it, inside the buffer's write, in the
    # clock's read and in the making of the thread's next clock line. Five runs (three of the
    # binary form, whose checker is slower): every file whole and nested, in time order,
    # every iteration of the main thread in it, and each handler's range either in the file
    # or counted as not recorded. The main thread goes on past 20000 iterations until the
    # handler has run 300 times (the second thread may wait for a processor), within 15 s.
    argv = adversary("handlers", 20000, HANDLER_RUNS)
    env = {"LD_LIBRARY_PATH": STUB}
    plain = run(argv, env=env, shim=False, timeout=TIMEOUT)
    assert plain.returncode == 0 and plain.stderr == b"", plain.stderr
    first_line = plain.stdout.splitlines()[0]
    for index in range(3 if ext == "pftrace" else 5):
        trace = tmp_path / ("run%d.%s" % (index, ext))
        result = run(argv, env=dict(env, NVTXSHIM_TRACE=str(trace)), timeout=TIMEOUT)
        assert result.returncode == 0, "run %d: %s; stderr %r" % (
            index, described(result.returncode), result.stderr[-2000:])
        lines = result.stdout.splitlines()
        assert len(lines) == 2 and lines[0] == first_line, result.stdout
        ran = re.fullmatch(rb"handler ran (\d+) times in (\d+) iterations", lines[1])
        handled, iterations = int(ran.group(1)), int(ran.group(2))
        assert handled >= HANDLER_RUNS, \
            "the handler ran %d times in 15 s: too few to test anything" % handled
        assert iterations >= 20000, lines[1]
        said = shim_lines(result.stderr)
        assert all(HANDLER_LOSS.search(line) for line in said), said
        lost = sum(int(HANDLER_LOSS.search(line).group(1)) for line in said)
        [counts] = recorded(trace).values()
        assert (counts[("range", "work")] == counts[("async", "span")] ==
                counts[("range", "cuMemcpyHtoD 4KiB pageable")] == iterations), (index, counts)
        in_file = counts[("range", "handler")]
        assert in_file <= handled <= in_file + lost, (index, handled, in_file, lost)
        assert counts[("mark", "tick")] - iterations <= handled
        trace.unlink()


# ---- 5. a path that is not a regular file -------------------------------------------------

@pytest.mark.parametrize("ext", FORMATS)
@pytest.mark.parametrize("kind", ["fifo", "socket", "directory"])
def test_a_trace_path_that_is_not_a_regular_file(tmp_path, kind, ext):
    path = tmp_path / (kind + "." + ext)
    listener = None
    if kind == "fifo":
        os.mkfifo(path)  # and no reader
        is_kind = stat.S_ISFIFO
    elif kind == "socket":
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(path))
        listener.listen(1)
        is_kind = stat.S_ISSOCK
    else:
        path.mkdir()
        is_kind = stat.S_ISDIR
    argv = adversary("loop", 5000)  # far more than a pipe holds
    try:
        plain = run(argv, shim=False, timeout=TIMEOUT)
        try:
            shimmed = run(argv, env={"NVTXSHIM_TRACE": str(path)}, timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail("the program blocked with NVTXSHIM_TRACE naming a %s" % kind)
    finally:
        if listener:
            listener.close()
    same_as_without(shimmed, plain)
    lines = shim_lines(shimmed.stderr)
    assert len(lines) == 1 and NOT_REGULAR.fullmatch(lines[0]), lines
    assert NOT_REGULAR.fullmatch(lines[0])["path"] == str(path)
    assert is_kind(os.lstat(path).st_mode), "the %s was replaced" % kind
    if kind == "directory":
        assert os.listdir(path) == []


KERNEL_FILE = re.compile(r"nvtxshim: NVTXSHIM_TRACE=(?P<path>.+): a file of the kernel's "
                         r"\((?P<fs>[a-z0-9]+)\), not for a trace; no trace is recorded")


@pytest.mark.parametrize("path,fs", [("/proc/self/comm", "proc"),
                                     ("/sys/kernel/mm/transparent_hugepage/enabled", "sysfs")])
def test_a_trace_path_in_the_kernels_own_file_systems(path, fs):
    # Regular files, but the kernel's settings and switches (/proc/self/comm renames the
    # program, a sysfs attribute is a device's or the kernel's; this one takes only
    # always/madvise/never, so even a write would change nothing): never written, one line
    # says why. Which form does not matter: neither is written past the check.
    if not os.access(path, os.W_OK):
        pytest.skip("%s is not here or not writable (root)" % path)
    argv = adversary("loop", 100)
    shimmed = recorded_as_without(argv, path)
    lines = shim_lines(shimmed.stderr)
    assert len(lines) == 1 and KERNEL_FILE.fullmatch(lines[0]), lines
    assert KERNEL_FILE.fullmatch(lines[0])["fs"] == fs


# ---- 7. what cannot be kept is said ---------------------------------------------------------

@pytest.mark.parametrize("ext", FORMATS)
def test_start_ranges_that_never_end_are_all_in_the_file(tmp_path, ext):
    # 5000 start ranges never ended, then 100 start/end pairs: every begin is written when it
    # happens (no table of open ranges to fill up), and every end.
    trace = tmp_path / ("trace." + ext)
    argv = adversary("unended", 5000, 100)
    recorded_as_without(argv, trace)
    expected = ["open %d" % i for i in range(5000)] + ["pair %d" % i for i in range(100)]
    if binary(trace):
        summary = pftracefile.check(trace, "--allow-open")
        assert sorted(r["name"] for r in summary["ranges"] if r["async"]) == sorted(expected[5000:])
        assert sorted(r["name"] for r in summary["open"]) == sorted(expected[:5000]), \
            "%d of 5000 begins without an end in the file" % len(summary["open"])
        assert all(r["async"] for r in summary["open"])
        return
    raw, joined, unended = load(trace)
    begins = collections.Counter(e["name"] for e in raw if e["ph"] == "b")
    assert begins == collections.Counter(expected), "missing begins: %d of 5100 written" % sum(
        begins[name] for name in set(expected))
    assert sum(1 for e in raw if e["ph"] == "e") == 100
    assert sorted(e["name"] for e in joined if e.get("async")) == sorted(expected[5000:])
    assert sorted(e["name"] for e in unended) == sorted(expected[:5000])


OPEN_AT_END = re.compile(r"nvtxshim: NVTXSHIM_TRACE=(?P<path>.+): events not recorded: "
                         r"(?P<count>\d+) push/pop ranges still open at the end that could not be "
                         r"ended there \(another thread's, or under a write a signal handler "
                         r"interrupted\)")


@pytest.mark.parametrize("ext", FORMATS)
@pytest.mark.parametrize("depth", [1, 1024])
def test_ranges_still_open_at_exit_are_written_ended_there_or_counted(tmp_path, ext, depth):
    # A second thread pushes DEPTH ranges and waits; the main thread pushes DEPTH ranges and
    # calls exit inside them. The main thread's are in the file, ended at the exit and marked
    # as ranges that did not end: in the JSON form complete events with "did_not_end", in
    # the binary form slices with a begin and no end, which Perfetto shows as "Did not end".
    # The other thread's stack is its own to change, not read: its ranges are counted in
    # the line at exit, the same line in both forms.
    trace = tmp_path / ("trace." + ext)
    argv = adversary("exitinside", depth, depth)
    shimmed = recorded_as_without(argv, trace)
    assert shimmed.stdout == b"exiting inside %d ranges, %d beside\n" % (depth, depth)
    said = shim_lines(shimmed.stderr)
    assert len(said) == 1 and OPEN_AT_END.fullmatch(said[0]), said
    assert OPEN_AT_END.fullmatch(said[0])["count"] == str(depth)
    assert OPEN_AT_END.fullmatch(said[0])["path"] == str(trace)
    expected = ["inside %d" % i for i in range(depth)]
    if binary(trace):
        summary = pftracefile.check(trace, "--allow-open")
        pid = summary["process"]["pid"]
        still_open = sorted(summary["open"], key=lambda r: r["start_ns"])
        assert [r["name"] for r in still_open] == expected
        assert {r["tid"] for r in still_open} == {pid} and not any(r["async"] for r in still_open)
        ended = [r["name"] for r in summary["ranges"]]
    else:
        raw, joined, unended = load(trace)
        assert not unended
        pid = raw[0]["pid"]
        unfinished = sorted((e for e in raw if e.get("args", {}).get("did_not_end")),
                            key=lambda e: e["ts"])
        assert [e["name"] for e in unfinished] == expected
        assert all(e["ph"] == "X" and e["tid"] == pid and e["args"] == {"did_not_end": True}
                   for e in unfinished)
        ends = {round((e["ts"] + e["dur"]) * 1000) for e in unfinished}
        assert max(ends) - min(ends) <= 1, "the ranges end together, at the exit"
        ended = [e["name"] for e in joined
                 if e["ph"] == "X" and not e.get("args", {}).get("did_not_end")]
    assert sorted(ended) == ["span", "work"], "the one whole iteration, and nothing beside"


@pytest.mark.parametrize("ext", FORMATS)
def test_ranges_open_at_a_failed_exec_are_written_once_whole(tmp_path, ext):
    # The exec finishes the file as the exit does, with the ranges still open ended there;
    # it fails, and the ranges go on to their pops: each is in the file once, whole (the
    # JSON form's ended at the exec come out of the file again, the binary form's begins
    # written there get their ends).
    trace = tmp_path / ("trace." + ext)
    argv = adversary("execinside", 1024)
    shimmed = recorded_as_without(argv, trace)
    assert shim_lines(shimmed.stderr) == []
    counts = recorded(trace)
    [seen] = counts.values()
    assert seen == collections.Counter(dict([(("range", "inside %d" % i), 1) for i in range(1024)] +
                                            [(("range", "work"), 1), (("async", "span"), 1),
                                             (("mark", "tick"), 1)]))
    if not binary(trace):
        raw, _, _ = load(trace)
        assert not [e for e in raw if e.get("args", {}).get("did_not_end")]


@pytest.mark.parametrize("ext", FORMATS)
def test_push_pop_deeper_than_1024_is_said(tmp_path, ext):
    # A stack 1100 deep on one thread: the outer 1024 ranges are in the file, and one line at
    # exit says how many were not.
    trace = tmp_path / ("trace." + ext)
    argv = adversary("deep", 1100)
    shimmed = recorded_as_without(argv, trace)
    if binary(trace):
        names = [r["name"] for r in pftracefile.check(trace)["ranges"] if not r["async"]]
    else:
        _, joined, _ = load(trace)
        names = [e["name"] for e in joined if e["ph"] == "X"]
    depths = sorted(int(name.split()[1]) for name in names if name.startswith("depth "))
    assert len(depths) == 1024 and depths == list(range(1024)), \
        "%d of 1100 nested ranges in the file" % len(depths)
    said = [line for line in shim_lines(shimmed.stderr)
            if "76 ranges nested deeper than 1024 on one thread" in line]
    assert len(said) == 1, shim_lines(shimmed.stderr)
