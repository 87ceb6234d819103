"""Running a program under the real Nsight Systems and reading its SQLite export.

nsys 2022.4's agent busy-loops on its CPU-sampling and context-switch perf
events once they report EPOLLHUP at the target's exit (seen with strace: an
endless epoll_wait returning two HUP'd perf_event fds), and `nsys profile`
never returns — about one run in three here. The tests trace NVTX only, so
sampling and context-switch tracing are off (0 hangs in 14 runs after, 5 in 14
before). As a safety net, nsys runs under the command's own watchdog
(`nvtxshim profile --bare`): a time limit, SIGKILL for nsys, what it started
and that session's agent (it outlives a killed `nsys profile` and ignores
SIGTERM), and one retry."""
import os
import sqlite3
import subprocess
import time

from conftest import SHIM, clean_env, program

PROFILE_TIMEOUT_S = 45


def profile(output, argv, env, trace="nvtx", extra=(), windows=None, context_switches=False):
    """nsys profile ARGV into OUTPUT.nsys-rep (OUTPUT.1.nsys-rep ... OUTPUT.N.nsys-rep
    for N capture WINDOWS with --capture-range-end=repeat); returns the program's
    CompletedProcess. CONTEXT_SWITCHES traces the program's (--cpuctxsw=process-tree,
    the SCHED_EVENTS table), which can hang nsys as said above: the watchdog bounds it,
    and a run that never finishes raises AssertionError like any failed one."""
    reports = ([str(output) + ".nsys-rep"] if windows is None else
               ["%s.%d.nsys-rep" % (output, n) for n in range(1, windows + 1)])
    # The watchdog's limit is PROFILE_TIMEOUT_S a run; a hung run is ended and run once more.
    command = [program("nvtxshim"), "profile", "--bare", "--timeout", str(PROFILE_TIMEOUT_S),
               "-o", str(output), "-f", "--", "-t", trace, "--sample=none",
               "--cpuctxsw=" + ("process-tree" if context_switches else "none"),
               "--force-overwrite", "true", "--export", "none"] + list(extra) + ["--"] + list(argv)
    started = time.monotonic()
    # nsys exits with the program's status: the reports are what tell success. A run
    # that ends without them is tried once more (a hung one the watchdog retried
    # already): nsys 2022.4 sometimes fails at start, "ClientProxy ... GetLocalEndpoint"
    # (seen here with other nsys sessions running at the same time).
    for attempt in range(2):
        result = subprocess.run(command, env=env, capture_output=True,
                                timeout=2 * PROFILE_TIMEOUT_S + 60)
        if all(os.path.exists(report) for report in reports):
            return result
        if b"nsys did not finish within" in result.stderr:
            break
    raise AssertionError("nsys profile failed (%.0fs, %s): %s" % (
        time.monotonic() - started,
        "hung twice" if b"nsys did not finish within" in result.stderr else "no report, twice",
        result.stderr.decode(errors="replace")[-2000:]))


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
