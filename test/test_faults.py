"""When the kernel says no: each system call the recorder makes, failed on purpose.

strace's `-e inject=CALL:error=ERRNO:when=N` fails one call of a process on purpose. The program
is test/programs/recorder_faults.c, which after its start makes no system call of its own but its
last write: every call of the recorder's kinds from the library's first on is the library's. For
each form (`.json`, `.pftrace`), a run under `strace -k` first finds the occurrences of each call
whose stack holds libnvtxshim.so; then, for every call the recorder makes and each errno that call
can return (DOCUMENTED below, from the calls' manual pages, EPERM for a seccomp filter's
SECCOMP_RET_ERRNO and ENOSYS for a kernel without the call where that is how it says no), the
library's first, second and last occurrence are failed, and all of them at once. Each case asserts
what a user would see:

- the program's exit status and output are those of a run without the library, and it ends (no
  hang: a writer that retries EINTR without bound spins for good);
- everything the library printed is `nvtxshim:` lines;
- the trace file is either complete (every event, closed: strict JSON, or a `.pftrace` that
  test/pftrace_check.py finds whole) or cut at a valid point (the bare-array rule; `--cut` for the
  binary form) with a line that says what was lost and why, naming the errno the kernel gave; and
  where no trace is recorded a line says so, with the errno;
- no file is left that the library created and did not use (the directory holds the trace alone).

Some failures lose nothing: a failed getrandom takes the run's mark from the clock, a failed
prctl(PR_GET_NAME) leaves a thread unnamed, a failed read of the clocksource's name reads the
clock through clock_gettime, a failed gettid draws the thread with the process's id. Those cases
must give a complete trace and no line about it.

ENOMEM into mmap is the one outcome told apart: a thread without a buffer records nothing, and
the line at exit counts what it lost for want of memory."""
import collections
import concurrent.futures
import errno
import json
import os
import re
import signal
import subprocess

import pytest

import pftracefile
import traceformat
from conftest import SHIM, UNDER_ASAN, program
from childenv import clean_env

ITERATIONS = 3000      # 12,000 events: a JSON trace of 39 buffer writes, a .pftrace of 12
TIMEOUT = 120          # seconds for one run under strace: far past any run that ends
FORMATS = ["json", "pftrace"]

# The system calls the recorder makes, and the errnos each can return. From the manual pages;
# EPERM is what a seccomp filter returns, EINTR a signal (or a supervisor) at a call that
# can block or be restarted.
DOCUMENTED = {
    "openat": ["EACCES", "EINTR", "EMFILE", "ENFILE", "ENOMEM", "ENOSPC", "EPERM", "EROFS"],
    "newfstatat": ["EACCES", "EBADF", "EIO", "ENOMEM", "EPERM"],
    "fstatfs": ["EBADF", "EINTR", "EIO", "ENOMEM", "ENOSYS", "EPERM"],
    "flock": ["EBADF", "EINTR", "EAGAIN", "ENOLCK", "EPERM"],
    "ftruncate": ["EBADF", "EFBIG", "EINTR", "EIO", "EPERM"],
    "fcntl": ["EBADF", "EINVAL", "EMFILE", "EPERM"],
    "prlimit64": ["EINVAL", "EPERM", "ENOSYS"],
    "pwrite64": ["EAGAIN", "EBADF", "EDQUOT", "EFBIG", "EINTR", "EIO", "ENOSPC", "EPERM"],
    "pwritev": ["EAGAIN", "EBADF", "EDQUOT", "EFBIG", "EINTR", "EIO", "ENOSPC", "EPERM"],
    "pread64": ["EAGAIN", "EBADF", "EINTR", "EIO", "EPERM"],
    "mmap": ["EAGAIN", "ENOMEM", "EPERM"],
    "getrandom": ["EAGAIN", "EINTR", "ENOSYS", "EPERM"],
    "getpid": ["EPERM", "ENOSYS"],
    "gettid": ["EPERM", "ENOSYS"],
    "prctl": ["EINVAL", "EPERM"],
    "read": ["EAGAIN", "EINTR", "EIO", "EPERM"],
    "close": ["EBADF", "EINTR", "EIO", "ENOSPC"],
    "unlinkat": ["EACCES", "EBUSY", "EIO", "EPERM", "EROFS"],
}
# Calls whose failure the recorder works around, losing nothing.
LOSSLESS = {"getrandom", "prctl", "gettid", "close", "read", "getpid", "prlimit64", "unlinkat"}

NOTHING_RECORDED = "no trace is recorded"
LOSS_WORDS = ("not recorded", "no trace is recorded", "recording stopped", "not written",
              "ends at its last whole event", "lost", "without its closing")


def scratch_env(trace):
    """A recording to TRACE, the shim preloaded (after the ASan runtime in the ASan half, whose
    LeakSanitizer cannot run under strace: it stops the world with ptrace)."""
    env = clean_env({"NVTXSHIM_TRACE": str(trace)})
    first = os.environ.get("NVS_TEST_PRELOAD_FIRST")
    env["LD_PRELOAD"] = (first + ":" if first else "") + SHIM
    if "ASAN_OPTIONS" in env:
        env["ASAN_OPTIONS"] += ":detect_leaks=0"
    return env


def strace_argv(log, calls, *injections, stacks=False):
    argv = ["strace", "-f", "-qq"] + (["-k"] if stacks else []) + [
        "-o", str(log), "-e", "trace=" + ",".join(calls)]
    for injection in injections:
        argv += ["-e", "inject=" + injection]
    return argv


# The ASan half (make test-asan) preloads the ASan runtime first. Its allocator maps memory for
# the library's allocations and the program's alike, and strace cannot always unwind through it
# to tell whose: the program's own maps fall among the library's, so an error injected at "the
# library's Nth mmap" may hit the program. mmap is injected in the plain half only (the ASan
# half deselects its cases, mk/sanitize.mk), and left out of the profiles there (UNDER_ASAN).


def the_program():
    return [program("test/recorder_faults"), str(ITERATIONS)]


@pytest.fixture(scope="module")
def plain():
    """The program's own outcome, without the library."""
    done = subprocess.run(the_program(), env=clean_env(), capture_output=True, timeout=TIMEOUT)
    assert done.returncode == 0 and done.stderr == b"", done
    return done


STACKED = re.compile(r"^(\d+) +([a-z_0-9]+)\(")


def library_occurrences(log_text):
    """{call: [N, ...]}: the invocation numbers (strace's `when`, counted per task and call) of each
    call whose stack, as strace -k prints it under the call, holds libnvtxshim.so."""
    counts = collections.Counter()
    found = collections.defaultdict(list)
    current = None
    for line in log_text.splitlines():
        match = STACKED.match(line)
        if match:
            pid, call = match.groups()
            counts[(pid, call)] += 1
            current = (call, counts[(pid, call)])
            continue
        if line.startswith(" > ") and current and "libnvtxshim.so" in line:
            call, number = current
            if not found[call] or found[call][-1] != number:
                found[call].append(number)
    return found, counts


def profile(argv, trace, calls):
    """{call: [N, ...]}: the library's occurrences of CALLS in a run of ARGV recording to TRACE
    that no error disturbs, each checked to be all the occurrences from the library's first on:
    a case that fails all of them fails the library alone."""
    log = trace.parent / (trace.name + ".profile")
    done = subprocess.run(strace_argv(log, calls, stacks=True) + argv, env=scratch_env(trace),
                          capture_output=True, timeout=TIMEOUT, cwd=str(trace.parent))
    assert done.returncode == 0, done.stderr
    found, counts = library_occurrences(log.read_text())
    if UNDER_ASAN:
        found.pop("mmap", None)
    for call, numbers in found.items():
        total = sum(n for (pid, c), n in counts.items() if c == call)
        assert numbers == list(range(numbers[0], total + 1)), (
            "%s: occurrences %s are the library's of %d: the program makes one of its own "
            "after the library's first" % (call, numbers, total))
    return dict(found)


@pytest.fixture(scope="module")
def profiles(tmp_path_factory):
    """Per form: the library's occurrences of each recorder call in an undisturbed run."""
    return {form: profile(the_program(), tmp_path_factory.mktemp("profile-" + form) / ("t." + form),
                          DOCUMENTED)
            for form in FORMATS}


def cases_for(call, numbers):
    """strace `when` expressions: the first, second and last occurrence, and all of them."""
    whens = {"1st": str(numbers[0]), "all": "%d+" % numbers[0]}
    if len(numbers) > 1:
        whens["2nd"] = str(numbers[1])
        whens["last"] = str(numbers[-1])
    return whens


def error_text(name):
    return os.strerror(getattr(errno, name))


def run_case(where, form, call, name, when):
    """One injection: the run's outcome, the lines the library printed, the files left."""
    where.mkdir()
    trace = where / ("t." + form)
    log = where.parent / (where.name + ".strace")
    return run_bounded(strace_argv(log, [call], "%s:error=%s:when=%s" % (call, name, when))
                       + the_program(), scratch_env(trace), where)


def run_bounded(argv, env, cwd):
    """ARGV's outcome, or None when it has not ended in TIMEOUT: then strace and the program
    (its own process group) are killed, so that a spinning host does not outlive the test."""
    with subprocess.Popen(argv, env=env, cwd=str(cwd), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, start_new_session=True) as child:
        try:
            stdout, stderr = child.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
            return None
    return subprocess.CompletedProcess(argv, child.returncode, stdout, stderr)


def judge(where, form, call, name, when, done, plain, pftrace_summaries):
    """What is wrong with one case's outcome, as a list of sentences (empty: nothing)."""
    problems = []
    label = "%s %s:error=%s:when=%s" % (form, call, name, when)
    if done.returncode != plain.returncode or done.stdout != plain.stdout:
        problems.append("%s: the program's outcome changed: exit %d, stdout %r" % (
            label, done.returncode, done.stdout[-200:]))
    lines = done.stderr.decode(errors="replace").splitlines()
    strangers = [line for line in lines if not line.startswith("nvtxshim: ")]
    if strangers:
        problems.append("%s: lines not the library's: %r" % (label, strangers[:3]))
    said = "\n".join(lines)
    files = sorted(p.name for p in where.iterdir())
    traces = [f for f in files if f.endswith("." + form)]
    if len(files) > 1 or (files and not traces):
        problems.append("%s: files left beside the trace: %s (%s)" % (label, files, said))
    if not traces:
        if NOTHING_RECORDED not in said and "events not recorded" not in said:
            problems.append("%s: no trace file and no line that says so: %r" % (label, said))
        elif error_text(name) not in said and call not in ("mmap",):
            problems.append("%s: the line does not give the errno (%s): %r" % (
                label, error_text(name), said))
        return problems
    path = where / traces[0]
    if os.path.getsize(path) == 0:
        problems.append("%s: an empty trace file is left: %r" % (label, said))
        return problems
    complete, valid = False, True
    if form == "json":
        try:
            events = traceformat.read_complete_trace(path)
            complete = True
        except ValueError:
            try:
                events = traceformat.read_trace(path)
            except ValueError as error:
                valid = False
                problems.append("%s: the file is not a trace cut at a valid point: %s" % (
                    label, error))
                events = []
        work = sum(1 for e in events if e.get("ph") == "X" and e.get("name") == "work")
        ticks = sum(1 for e in events if e.get("ph") == "i" and e.get("name") == "tick")
        spans = sum(1 for e in events if e.get("ph") == "e" and e.get("name") == "span")
    else:
        summary = pftrace_summaries[str(path)]
        if summary.get("problems"):
            valid = False
            problems.append("%s: the file is not a trace cut at a valid point: %s" % (
                label, summary["problems"][:3]))
        work = sum(1 for r in summary.get("ranges", []) if r.get("name") == "work")
        spans = sum(1 for r in summary.get("ranges", []) if r.get("name") == "span")
        ticks = sum(1 for m in summary.get("marks", []) if m.get("name") == "tick")
        complete = summary.get("whole", False)
    complete = complete and work == ticks == spans == ITERATIONS
    if valid and not complete:
        if not any(word in said for word in LOSS_WORDS):
            problems.append("%s: the trace is not complete (%d of %d ranges) and no line says "
                            "what was lost: %r" % (label, work, ITERATIONS, said))
        elif error_text(name) not in said and not (call == "mmap" and "memory" in said):
            problems.append("%s: the line does not give the errno (%s): %r" % (
                label, error_text(name), said))
    if complete and call in LOSSLESS and said:
        problems.append("%s: a complete trace with a line about it: %r" % (label, said))
    if complete and call not in LOSSLESS and "NVTXSHIM_TRACE" in said and any(
            word in said for word in LOSS_WORDS):
        problems.append("%s: a complete trace, yet a line says something was lost: %r" % (label, said))
    return problems


def check_pftraces(paths):
    """pftrace_check.py's summary of each file, in one process: whole files first, then cut."""
    if not paths:
        return {}
    script = (
        "import json, sys\n"
        "sys.path.insert(0, %r)\n"
        "import pftrace_check\n"
        "out = {}\n"
        "for path in sys.argv[1:]:\n"
        "    whole = pftrace_check.check(path)\n"
        "    if not whole['problems']:\n"
        "        whole['whole'] = True\n"
        "        out[path] = whole\n"
        "        continue\n"
        "    cut = pftrace_check.check(path, cut=True)\n"
        "    cut['whole'] = False\n"
        "    out[path] = cut\n"
        "json.dump(out, sys.stdout)\n" % os.path.dirname(pftracefile.CHECKER))
    done = subprocess.run([pftracefile.pyenv_python(), "-c", script] + [str(p) for p in paths],
                          capture_output=True, timeout=600)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    return json.loads(done.stdout)


# Made only on ways the run below never takes: failed there, by the last two tests.
ELSEWHERE = {"pread64", "unlinkat"}


@pytest.mark.parametrize("call", sorted(set(DOCUMENTED) - ELSEWHERE))
@pytest.mark.parametrize("form", FORMATS)
def test_a_failed_call_of_the_recorder_never_harms_the_program_or_hides_a_loss(
        tmp_path, profiles, plain, form, call):
    numbers = profiles[form].get(call)
    assert numbers, "the recorder made no %s call in the run of the %s form" % (call, form)
    cases = [(name, label, when) for name in DOCUMENTED[call]
             for label, when in cases_for(call, numbers).items()]
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {pool.submit(run_case, tmp_path / ("%s-%s" % (name, label)), form, call, name,
                               when): (name, label, when) for name, label, when in cases}
        for future, case in futures.items():
            results[case] = future.result()
    problems = []
    pftraces = [p for name, label, when in cases for p in (tmp_path / ("%s-%s" % (name, label))).iterdir()
                if form == "pftrace" and p.name.endswith(".pftrace") and p.stat().st_size]
    summaries = check_pftraces(pftraces)
    for (name, label, when), done in sorted(results.items()):
        if done is None:
            problems.append("%s %s:error=%s:when=%s: no end in %d s (a hang)" % (
                form, call, name, when, TIMEOUT))
            continue
        problems += judge(tmp_path / ("%s-%s" % (name, label)), form, call, name, when, done, plain,
                          summaries)
    assert not problems, "%d of %d cases:\n%s" % (len(problems), len(cases), "\n".join(problems))


# Two calls the recorder makes only on a way the run above never takes, each failed there.
NOT_REMOVED = re.compile(r"nvtxshim: NVTXSHIM_TRACE: (?P<path>.+), made by this process and not used, "
                         r"could not be removed \((?P<why>.+)\)$")


@pytest.mark.parametrize("form", FORMATS)
def test_a_made_file_that_cannot_be_removed_is_named(tmp_path, plain, form):
    # flock refused at every call: the library makes t.EXT and t.PID.EXT, locks neither and
    # removes both (the case above: nothing is left). With unlinkat refused too, each file it
    # leaves is named in a line with the errno, and no other is left.
    problems = []
    for name in DOCUMENTED["unlinkat"]:
        where = tmp_path / name
        where.mkdir()
        done = run_bounded(strace_argv(tmp_path / (name + ".strace"), ["flock", "unlinkat"],
                                       "flock:error=EAGAIN", "unlinkat:error=" + name)
                           + the_program(), scratch_env(where / ("t." + form)), where)
        if done is None:
            problems.append("%s: no end in %d s" % (name, TIMEOUT))
            continue
        if (done.returncode, done.stdout) != (plain.returncode, plain.stdout):
            problems.append("%s: the program's outcome changed: %r" % (name, done))
        lines = done.stderr.decode(errors="replace").splitlines()
        named = sorted(os.path.basename(m.group("path")) for m in map(NOT_REMOVED.match, lines) if m)
        whys = {m.group("why") for m in map(NOT_REMOVED.match, lines) if m}
        left = sorted(p.name for p in where.iterdir())
        if named != left or len(left) != 2 or whys != {error_text(name)}:
            problems.append("%s: files left %s, named %s with %s: %r" % (name, left, named, whys, lines))
        if not any(NOTHING_RECORDED in line for line in lines):
            problems.append("%s: no line says no trace is recorded: %r" % (name, lines))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("form", FORMATS)
def test_a_trace_that_cannot_be_read_back_moves_with_the_reason(tmp_path, form):
    # The program closes every descriptor from 3 up, the trace's among them, and writes a file
    # of its own (trace_adversary fdreuse). The library opens the trace again by its path and
    # reads its header back (pread64) before it writes there again; refused, it cannot know the
    # file is still this run's: the rest goes to t.PID.EXT, with a line that gives the errno,
    # and the program's own file is untouched.
    adversary = program("test/trace_adversary")
    plain_run = subprocess.run([adversary, "fdreuse", str(tmp_path / "plain.out"), "close_range"],
                               env=clean_env(), capture_output=True, timeout=TIMEOUT)
    assert plain_run.returncode == 0, plain_run.stderr
    first = profile([adversary, "fdreuse", str(tmp_path / "profiled.out"), "close_range"],
                    tmp_path / ("profiled." + form), ["pread64"])["pread64"][0]
    problems = []
    for name in DOCUMENTED["pread64"]:
        for when in (str(first), "%d+" % first):
            where = tmp_path / ("%s-%s" % (name, when))
            where.mkdir()
            own = tmp_path / ("%s-%s.out" % (name, when))
            trace = where / ("t." + form)
            done = run_bounded(strace_argv(tmp_path / (where.name + ".strace"), ["pread64"],
                                           "pread64:error=%s:when=%s" % (name, when))
                               + [adversary, "fdreuse", str(own), "close_range"],
                               scratch_env(trace), where)
            label = "pread64:error=%s:when=%s" % (name, when)
            if done is None:
                problems.append("%s: no end in %d s" % (label, TIMEOUT))
                continue
            if (done.returncode, done.stdout) != (plain_run.returncode, plain_run.stdout):
                problems.append("%s: the program's outcome changed: %r" % (label, done))
            if own.read_bytes() != (tmp_path / "plain.out").read_bytes():
                problems.append("%s: the program's own file changed" % label)
            said = done.stderr.decode(errors="replace")
            # A signal's EINTR once is asked again, and the file opened again as without it.
            once = name == "EINTR" and not when.endswith("+")
            moved = ("the file is opened again" if once else
                     "could not be opened again to check that it is still this process's (%s); "
                     "this process writes the rest to " % error_text(name))
            if moved not in said:
                problems.append("%s: no line gives the reason: %r" % (label, said))
            files = sorted(where.iterdir())
            if len(files) != (1 if once else 2):
                problems.append("%s: files %s" % (label, [p.name for p in files]))
            for path in files:
                if form == "json":
                    try:
                        traceformat.read_trace(path)
                    except ValueError as error:
                        problems.append("%s: %s is not a trace: %s" % (label, path.name, error))
            if form == "pftrace":
                for path, summary in check_pftraces(files).items():
                    if summary["problems"]:
                        problems.append("%s: %s: %s" % (label, path, summary["problems"][:3]))
    assert not problems, "\n".join(problems)
