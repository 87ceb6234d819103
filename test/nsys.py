"""Running a program under the real Nsight Systems and reading its SQLite export.

nsys 2022.4's agent busy-loops on its CPU-sampling and context-switch perf
events once they report EPOLLHUP at the target's exit (seen with strace: an
endless epoll_wait returning two HUP'd perf_event fds), and `nsys profile`
never returns - about one run in three here. The tests trace NVTX only, so
sampling and context-switch tracing are off (0 hangs in 14 runs after, 5 in 14
before). As a safety net, nsys runs under the command's own watchdog
(`nvtxshim profile --bare`): SIGKILL for nsys, what it started and that
session's agent (it outlives a killed `nsys profile` and ignores SIGTERM), and
one retry.

nsys's own failures are not the library's, and are told apart from them here
(run_nsys, for every test that runs nsys, through nvtxshim profile with --bare
or without): with two busy processes and a second suite beside it, nsys hung or
threw (ProcessWaiterImpl.cpp, ClientProxy::GetLocalEndpoint) in 3 of 5 plain
runs, with and without the library. nsys's own are (1) a run whose watchdog
fired on --finish-timeout, the time nsys spends with no program of its own
running (starting up, or writing the report: the program's time is not in it),
and (2) a run that made no report and whose output holds nsys's own exception
or fatal-error lines. Such a run is made again, up to NSYS_ATTEMPTS times and
while NSYS_BUDGET_S lasts; when nsys fails each time the test is skipped, the
reason printed (pytest -rs, as make test runs it), never passed. A run that made
no report for any other reason - the program never opened its capture window,
it crashed nsys, it ran past the generous --timeout - fails its test."""
import os
import re
import sqlite3
import subprocess
import time

import pytest

from conftest import SHIM, clean_env, program

# nsys's own time (start-up, finalising) in one run; the whole run, program included.
NSYS_OWN_TIMEOUT_S = 60
# The same for a run that traces context switches, which hangs far more often (2026-11-29,
# test/nvtx_user fork: 5 runs in 30 quiet, 6 in 10 beside two busy processes, where a run that
# did not hang took 2.6 s at most): a hang found in 20 s, not 60, each time.
NSYS_OWN_TIMEOUT_SWITCHES_S = 20
PROFILE_TIMEOUT_S = 240
NSYS_ATTEMPTS = 4
NSYS_BUDGET_S = 420
# What nsys 2022.4 prints when it fails of itself (strings of its own binary).
NSYS_OWN_ERRORS = re.compile(rb"Throw in function|Dynamic exception type|Unexpected exception|"
                             rb"Fatal error|FATAL ERROR|Session shuts down due to a fatal error")
HUNG = b"nsys did not finish within"


def nsys_own_failure(result, reports, elapsed_s, total_s=None):
    """Why RESULT (a run of nvtxshim profile that took ELAPSED_S, under --timeout TOTAL_S when
    given) failed of nsys's own doing, or None: its REPORTS were made, or it failed otherwise."""
    if all(os.path.exists(report) for report in reports):
        return None
    output = (result.stderr or b"") + (result.stdout or b"")
    if isinstance(output, str):
        output = output.encode()
    if HUNG in output:
        # The watchdog retries once: two runs ended on --timeout take twice that.
        if total_s is not None and elapsed_s >= total_s:
            return None
        return "nsys hung past its own --finish-timeout (%.0f s), killed twice by the watchdog" % elapsed_s
    thrown = [line for line in output.splitlines() if NSYS_OWN_ERRORS.search(line)]
    if thrown:
        return "nsys threw: " + b" | ".join(thrown[:3]).decode(errors="replace")[:300]
    return None


def run_nsys(argv, reports, total_s=None, **kwargs):
    """subprocess.run(ARGV, capture_output=True, **KWARGS) for a command that runs nsys profile
    (nvtxshim profile, scripts/demo.sh), made again while nsys fails of itself (above); the
    last CompletedProcess. Skips the test when nsys failed of itself every time."""
    failures, started = [], time.monotonic()
    for attempt in range(NSYS_ATTEMPTS):
        for report in reports:
            if os.path.exists(report):
                os.unlink(report)
        before = time.monotonic()
        result = subprocess.run(argv, capture_output=True, **kwargs)
        why = nsys_own_failure(result, reports, time.monotonic() - before, total_s)
        if why is None:
            return result
        failures.append(why)
        if time.monotonic() - started > NSYS_BUDGET_S:
            break
    pytest.skip("nsys 2022.4 failed of itself in %d runs (%.0f s), not the library: %s" % (
        len(failures), time.monotonic() - started, "; ".join(failures)))


def profile(output, argv, env, trace="nvtx", extra=(), windows=None, context_switches=False):
    """nsys profile ARGV into OUTPUT.nsys-rep (OUTPUT.1.nsys-rep ... OUTPUT.N.nsys-rep
    for N capture WINDOWS with --capture-range-end=repeat); returns the program's
    CompletedProcess. CONTEXT_SWITCHES traces the program's (--cpuctxsw=process-tree,
    the SCHED_EVENTS table), which can hang nsys as said above. A run that nsys fails of
    itself is made again, then skipped (run_nsys); one that made no report otherwise
    raises AssertionError."""
    reports = ([str(output) + ".nsys-rep"] if windows is None else
               ["%s.%d.nsys-rep" % (output, n) for n in range(1, windows + 1)])
    command = [program("nvtxshim"), "profile", "--bare", "--timeout", str(PROFILE_TIMEOUT_S),
               "--finish-timeout",
               str(NSYS_OWN_TIMEOUT_SWITCHES_S if context_switches else NSYS_OWN_TIMEOUT_S),
               "-o", str(output), "-f", "--", "-t", trace, "--sample=none",
               "--cpuctxsw=" + ("process-tree" if context_switches else "none"),
               "--force-overwrite", "true", "--export", "none"] + list(extra) + ["--"] + list(argv)
    started = time.monotonic()
    # nsys exits with the program's status: the reports are what tell success.
    result = run_nsys(command, reports, total_s=PROFILE_TIMEOUT_S, env=env,
                      timeout=2 * PROFILE_TIMEOUT_S + 60)
    if all(os.path.exists(report) for report in reports):
        return result
    raise AssertionError("nsys profile made no report, and not of nsys's own doing (%.0fs): %s" % (
        time.monotonic() - started, result.stderr.decode(errors="replace")[-2000:]))


def nsys_env(extra):
    """The environment for a program under nsys: no shim variables from outside."""
    return clean_env(dict(extra, NVS_TEST_SHIM=SHIM))


def under_nsys(tmp_path, device, argv, env, extra=(), windows=None):
    """ARGV on DEVICE under nsys with the shim; (result, events, database) of report
    1..WINDOWS when given, of the single report otherwise."""
    # nsys sets the target's LD_PRELOAD; emucam puts umockdev's first; the shim is appended last.
    wrapped = device.wrap(["sh", "-c", 'LD_PRELOAD="$LD_PRELOAD:$NVS_TEST_SHIM" exec "$@"', "sh"] + argv)
    result = profile(tmp_path / "report", wrapped, nsys_env(env), extra=extra, windows=windows)
    if windows is None:
        database = export_sqlite(tmp_path / "report")
        return result, nvtx_events(database), database
    databases = [export_sqlite(tmp_path / ("report.%d" % n)) for n in range(1, windows + 1)]
    return result, [nvtx_events(d) for d in databases], databases


def export_sqlite(report):
    database = str(report) + ".sqlite"
    subprocess.run(["nsys", "export", "--type", "sqlite", "--force-overwrite", "true", "-o",
                    database, str(report) + ".nsys-rep"], check=True, capture_output=True,
                   timeout=300)
    return database


def nvtx_events(database):
    """NVTX ranges and marks: (eventType, domain, name, start, end, tid, endTid, payload)."""
    with sqlite3.connect(database) as db:
        return db.execute("""
            WITH domains AS (SELECT domainId, text AS domain FROM NVTX_EVENTS WHERE eventType = 75)
            SELECT e.eventType, COALESCE(d.domain, ''), COALESCE(e.text, s.value), e.start, e."end",
                   e.globalTid, e.endGlobalTid, e.uint64Value
            FROM NVTX_EVENTS e
            LEFT JOIN StringIds s ON s.id = e.textId
            LEFT JOIN domains d ON d.domainId = e.domainId
            WHERE e.eventType IN (34, 59, 60)""").fetchall()


def thread_names(database):
    with sqlite3.connect(database) as db:
        return [row[0] for row in db.execute(
            "SELECT COALESCE(e.text, s.value) FROM NVTX_EVENTS e LEFT JOIN StringIds s "
            "ON s.id = e.textId WHERE e.eventType = 39")]
