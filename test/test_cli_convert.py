"""nvtxshim convert (cli/commands/convert.c, cli/readers/sqlite_stream.c): what users of other nsys
converters (nCompass's) would miss. From real nsys 2022.4 exports of test/nvtx_user (NVTX and OS
runtime calls, and the program's context switches in a second run, which can hang nsys: the
thread-state checks on it skip when nsys fails of itself, test/nsys.py): CUDA API calls, launch arrows from each
call to its GPU work, NVTX ranges projected onto the GPU rows, thread states, gzip, --only and
--nvtx-prefix, and databases that are not nsys exports refused. There is no GPU here: the CUDA
tables are added to a real export with the columns nsys 2022.4 writes, rows made up for the
tests. Every file written keeps the trace format's rules (traceformat.check_converted)."""
import collections
import gzip
import os
import resource
import shutil
import sqlite3
import subprocess
import time

import pytest

import traceformat
from conftest import clean_env, program
from nsys import export_sqlite, profile
from traceformat import end_us

PUSH_POP, START_END, MARK = 59, 60, 34
STATE_ROW = 0x40000000
NOT_NVTX = {"osrt": "osrt", "cuda api": "cuda-api", "cuda kernel": "kernel", "cuda memcpy": "kernel",
            "cuda memset": "kernel", "nvtx projection": "nvtx-kernel", "thread state": "sched"}
KINDS = ["nvtx", "nvtx-kernel", "cuda-api", "kernel", "osrt", "sched"]

# CUPTI_ACTIVITY_KIND_RUNTIME with the columns nsys 2022.4 writes (its CUDA API calls).
RUNTIME_TABLE = """CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
    eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL,
    returnValue INTEGER NOT NULL, callchainId INTEGER)"""



def nvtxshim(*args):
    return subprocess.run([program("nvtxshim")] + [str(a) for a in args], env=clean_env(),
                          capture_output=True, text=True, timeout=300)


def convert(database, out, *options):
    """nvtxshim convert [OPTIONS] DATABASE OUT: its result and OUT's events (gunzipped when OUT
    ends .gz), which keep the trace format's rules."""
    result = nvtxshim("convert", *options, database, out)
    assert result.returncode == 0, result.stderr
    data = out.read_bytes()
    text = (gzip.decompress(data) if str(out).endswith(".gz") else data).decode("utf-8")
    return result, traceformat.check_converted(text, out)


def kind(event):
    """--only's name for EVENT's kind; "flow" for a launch arrow's half, "name" for metadata."""
    if event["ph"] == "M":
        return "name"
    if event["cat"] == "cuda flow":
        return "flow"
    return NOT_NVTX.get(event["cat"], "nvtx")


def ranges(events):
    """Every range and mark (async pairs joined), comparable across files: the ids and how a
    range was written (complete or async) left out."""
    joined, _ = traceformat.join_async(events)
    return sorted((kind(e), e["name"], e["cat"], e["ph"], e["ts"], e.get("dur"), e["pid"], e["tid"],
                   tuple(sorted((k, str(v)) for k, v in e.get("args", {}).items())))
                  for e in joined if e["ph"] in ("X", "i"))


# ---- real exports ---------------------------------------------------------------------------------

def nvtx_user_export(directory, name, context_switches):
    """test/nvtx_user fork (NVTX ranges, marks, a start/end range ended on another thread, a
    child process) under nsys -t nvtx,osrt; the export's path. nsys's OS runtime tracing copies
    raw stack memory, which ASan reports in an instrumented program: the sanitizer run (make
    test-asan) traces NVTX only."""
    trace = "nvtx" if os.environ.get("NVS_TEST_PRELOAD_FIRST") else "nvtx,osrt"
    result = profile(directory / name, [program("test/nvtx_user"), "fork"], clean_env(), trace=trace,
                     context_switches=context_switches)
    assert b"nvtx_user done" in result.stdout
    return export_sqlite(directory / name)


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    return nvtx_user_export(tmp_path_factory.mktemp("convert_plain"), "plain", False)


@pytest.fixture(scope="module")
def switches(tmp_path_factory):
    """The export with context switches, and None. A run that nsys fails of itself (it hangs
    more often with --cpuctxsw=process-tree) is made again, and the tests that use it are
    skipped, with the reason, when nsys fails each time (nsys.run_nsys); a run that made no
    report for another reason fails them."""
    return nvtx_user_export(tmp_path_factory.mktemp("convert_switches"), "switches", True), None


def test_a_real_export_converts_with_its_nvtx_ranges_and_os_runtime_calls(plain, tmp_path):
    out = tmp_path / "plain.json"
    result, events = convert(plain, out)
    with sqlite3.connect(plain) as db:
        nvtx = db.execute("SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (34, 59, 60)").fetchone()[0]
        osrt = db.execute("SELECT count(*) FROM OSRT_API").fetchone()[0] if db.execute(
            "SELECT 1 FROM sqlite_master WHERE name = 'OSRT_API'").fetchone() else 0
    written = collections.Counter(r[0] for r in ranges(events))
    assert written["nvtx"] == nvtx and written["osrt"] == osrt
    assert set(written) <= {"nvtx", "osrt"} and not any(e["ph"] in ("s", "f") for e in events)
    lines = result.stderr.splitlines()
    assert ("nvtxshim: convert: no CUPTI_ACTIVITY_KIND_RUNTIME table: CUDA API calls skipped (none made, "
            "or not profiled with -t cuda)") in lines
    assert ("nvtxshim: convert: no SCHED_EVENTS table: thread states skipped (profile with "
            "--cpuctxsw=process-tree for them)") in lines
    marks = sum(e["ph"] == "i" for e in events)
    assert lines[-1].startswith("nvtxshim: convert: wrote %s: %d NVTX ranges, %d marks, %d OS runtime calls, "
                                "0 CUDA API calls, " % (out, nvtx - marks, marks, osrt))


def sched_pairs(database):
    """What SCHED_EVENTS says, thread by thread in time order: each switch in followed by the
    thread's next switch out is a Running range on that CPU, each switch out followed by its next
    switch in an Off CPU range; as (name, pid, row, ts, dur, cpu) in microseconds."""
    by_thread = collections.defaultdict(list)
    with sqlite3.connect(database) as db:
        for start, cpu, switch_in, tid in db.execute(
                "SELECT start, cpu, isSchedIn, globalTid FROM SCHED_EVENTS ORDER BY start, rowid"):
            by_thread[tid].append((start, cpu, bool(switch_in)))
    pairs = []
    for tid, switches in by_thread.items():
        for (start, cpu, was_in), (end, _, now_in) in zip(switches, switches[1:]):
            if was_in != now_in:
                pairs.append(("Running" if was_in else "Off CPU", (tid >> 24) & 0xFFFFFF,
                              STATE_ROW | (tid & 0xFFFFFF), start / 1000, round((end - start) / 1000, 3),
                              cpu if was_in else None))
    return sorted(pairs, key=str)


def test_thread_states_are_the_export_s_context_switches(switches, tmp_path):
    database, why = switches
    if database is None:
        pytest.skip(why)
    out = tmp_path / "switches.json"
    result, events = convert(database, out)
    states = [e for e in events if e.get("cat") == "thread state"]
    assert states and all(e["ph"] == "X" for e in states)  # one after another on their rows
    written = sorted(((e["name"], e["pid"], e["tid"], e["ts"], e["dur"], e.get("args", {}).get("cpu"))
                      for e in states), key=str)
    assert written == sched_pairs(database)
    # each thread's row is named after the thread; the thread's own events stay on its own row
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    for pid, row in {(e["pid"], e["tid"]) for e in states}:
        thread = names.get((pid, row & ~STATE_ROW))
        assert names[(pid, row)] == ("%s (state)" % thread if thread else "thread %d (state)" % (row & ~STATE_ROW))
    assert not any(e["tid"] & STATE_ROW for e in events if e.get("cat") not in ("thread state", None))
    # nsys 2022.4 says why a thread left the CPU nowhere: said once
    assert result.stderr.count("SCHED_EVENTS has no threadState or threadBlock column: time off the CPU "
                               "is shown without its reason") == 1
    assert " %d thread states, " % len(states) in result.stderr.splitlines()[-1]


# ---- GPU work, added to a real export ----------------------------------------------------------

T0 = 10 ** 10  # the made-up events start 10 s into the session, after nvtx_user's own
OTHER_PID = 4242
# CUDA API calls: (correlation, thread, name as nsys writes it, class (0 runtime, 1 driver), start,
# end in microseconds after T0, return value)
CALLS = [
    (1001, "main", "cudaLaunchKernel_v7000", 0, 20, 25, 0),
    (1002, "main", "cudaMemcpyAsync_ptsz_v7000", 0, 26, 28, 0),
    (1003, "main", "cuGraphLaunch", 1, 70, 72, 0),               # two kernels, two streams
    (1004, "main", "cudaMemsetAsync_v3020", 0, 73, 74, 0),
    (1005, "main", "cudaLaunchKernel_v7000", 0, 200, 201, 0),    # in no range
    (1006, "main", "cudaLaunchKernel_ptsz_v7000", 0, 390, 410, 0),  # ends after step 2: async
    (1007, "worker", "cuLaunchKernel", 1, 450, 452, 0),
    (1008, "main", "cudaLaunchKernel_v7000", 0, 590, 591, 0),
    (1009, "main", "cudaLaunchKernel_v7000", 0, 592, 593, 700),
    (1010, "main", "cudaStreamSynchronize_v3020", 0, 640, 660, 0),  # launches nothing
    (1011, "main", "cuMemcpyHtoD_v2", 1, 680, 690, 0),           # the driver's _v2 is its name
]
API_NAMES = {1001: "cudaLaunchKernel", 1002: "cudaMemcpyAsync", 1003: "cuGraphLaunch",
             1004: "cudaMemsetAsync", 1005: "cudaLaunchKernel", 1006: "cudaLaunchKernel",
             1007: "cuLaunchKernel", 1008: "cudaLaunchKernel", 1009: "cudaLaunchKernel",
             1010: "cudaStreamSynchronize", 1011: "cuMemcpyHtoD_v2"}
# GPU work: (table, correlation, stream, start, end, kernel name), all on device 0
WORK = [
    ("kernel", 1001, 7, 30, 40, "conv"),
    ("memcpy", 1002, 7, 41, 45, None),
    ("kernel", 1003, 7, 80, 90, "graph a"),
    ("kernel", 1003, 9, 81, 95, "graph b"),
    ("memset", 1004, 9, 96, 97, None),
    ("kernel", 1005, 7, 210, 215, "alone"),
    ("kernel", 1006, 7, 420, 430, "late"),
    ("kernel", 1007, 11, 500, 510, "from the worker"),
    ("kernel", 1008, 13, 600, 620, "first"),
    ("kernel", 1009, 13, 610, 630, "overlapping"),  # crosses "first" on its row: async
    ("memcpy", 1011, 7, 692, 695, None),
    ("kernel", 1001, 7, 700, 710, "another process's"),  # same correlation id, OTHER_PID
]
# NVTX ranges on the main thread: (name, type, start, end, ended on the worker)
NVTX = [
    ("step 1", PUSH_POP, 0, 100, False),
    ("step 1 inner", PUSH_POP, 10, 60, False),
    ("step 2", PUSH_POP, 300, 400, False),
    ("own end", START_END, 0, 500, False),
    ("handoff", START_END, 15, 80, True),
]
# What nsys's projection makes of those: (range, stream, first op's start, last op's end, ops)
PROJECTIONS = [
    ("step 1", 7, 30, 90, 3), ("step 1", 9, 81, 97, 2),
    ("step 1 inner", 7, 30, 45, 2),
    ("own end", 7, 30, 430, 5), ("own end", 9, 81, 97, 2),
]
# The launches drawn: 1006's call and 1009's kernel are async pairs, to which no flow binds.
ARROWS = {(1001, "conv"), (1002, "CUDA memcpy Host-to-Device"), (1003, "graph a"), (1003, "graph b"),
          (1004, "CUDA memset"), (1005, "alone"), (1007, "from the worker"), (1008, "first"),
          (1011, "CUDA memcpy Host-to-Device")}
# Context switches, newer nsys's columns: (thread, start, cpu, in, threadState, threadBlock)
SWITCHES = [
    ("main", 0, 1, 1, None, None), ("main", 50, 1, 0, 2, 3), ("main", 55, 0, 1, None, None),
    ("main", 300, 0, 0, 1, None), ("main", 301, 1, 1, None, None),
    ("main", 302, 0, 1, None, None),  # in twice: the first one unpaired
    ("main", 400, 0, 0, 3, 99),
    ("worker", 440, 1, 0, 2, 3),  # out first: no Running before it
    ("worker", 449, 1, 1, None, None), ("worker", 460, 1, 0, 7, None),
]
THREAD_STATES = [  # (row's thread, name, start, end, args)
    ("main", "Running", 0, 50, {"cpu": 1}),
    ("main", "Off CPU (Interruptible)", 50, 55, {"state": "Interruptible", "block": "futex"}),
    ("main", "Running", 55, 300, {"cpu": 0}),
    ("main", "Off CPU (Running)", 300, 301, {"state": "Running"}),
    ("main", "Running", 302, 400, {"cpu": 0}),
    ("worker", "Off CPU (Interruptible)", 440, 449, {"state": "Interruptible", "block": "futex"}),
    ("worker", "Running", 449, 460, {"cpu": 1}),
]


def us(t):
    return T0 + t * 1000


@pytest.fixture(scope="module")
def gpu(plain, tmp_path_factory):
    """The real export with CALLS, WORK, NVTX and SWITCHES added: {"database", "pid", "main",
    "worker"} (thread ids)."""
    database = tmp_path_factory.mktemp("convert_gpu") / "gpu.sqlite"
    shutil.copy(plain, database)
    with sqlite3.connect(database) as db:
        main = db.execute("SELECT globalTid FROM NVTX_EVENTS WHERE eventType = 59 LIMIT 1").fetchone()[0]
        worker, global_pid = main + 1000, main & ~0xFFFFFF
        threads = {"main": main, "worker": worker}
        names = {}

        def string(text):
            if text not in names:
                names[text] = db.execute("SELECT max(id) + 1 FROM StringIds").fetchone()[0]
                db.execute("INSERT INTO StringIds VALUES (?, ?)", (names[text], text))
            return names[text]
        # the columns nsys 2022.4 writes
        db.execute(RUNTIME_TABLE)
        db.execute("""CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
            deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
            correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL,
            shortName INTEGER NOT NULL, mangledName INTEGER, gridX INTEGER, gridY INTEGER, gridZ INTEGER,
            blockX INTEGER, blockY INTEGER, blockZ INTEGER, registersPerThread INTEGER)""")
        db.execute("""CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL,
            deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
            correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL,
            deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER)""")
        db.execute("""CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL,
            deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
            correlationId INTEGER, globalPid INTEGER, value INTEGER NOT NULL, bytes INTEGER NOT NULL,
            graphNodeId INTEGER, memKind INTEGER)""")
        for correlation, thread, name, event_class, start, end, value in CALLS:
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?, ?, ?, ?, NULL)",
                       (us(start), us(end), event_class, threads[thread], correlation, string(name), value))
        for table, correlation, stream, start, end, name in WORK:
            process = (OTHER_PID << 24) | (1 << 56) if name == "another process's" else global_pid
            if table == "kernel":
                db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 1, ?, ?, ?, ?, ?, NULL, "
                           "1, 1, 1, 32, 1, 1, 16)",
                           (us(start), us(end), stream, correlation, process, string(name), string(name)))
            elif table == "memcpy":
                db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?, ?, 0, 1, ?, ?, ?, 4096, 1, NULL, "
                           "0, 2)", (us(start), us(end), stream, correlation, process))
            else:
                db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (?, ?, 0, 1, ?, ?, ?, 0, 256, NULL, 2)",
                           (us(start), us(end), stream, correlation, process))
        for name, event_type, start, end, handed_off in NVTX:
            db.execute('INSERT INTO NVTX_EVENTS (start, "end", eventType, text, globalTid, endGlobalTid, '
                       'domainId) VALUES (?, ?, ?, ?, ?, ?, 0)',
                       (us(start), us(end), event_type, name, main, worker if handed_off else None))
        db.execute("DROP TABLE IF EXISTS SCHED_EVENTS")
        db.execute("""CREATE TABLE SCHED_EVENTS (start INTEGER NOT NULL, cpu INTEGER NOT NULL,
            isSchedIn INTEGER NOT NULL, globalTid INTEGER, threadState INTEGER, threadBlock INTEGER)""")
        db.executemany("INSERT INTO SCHED_EVENTS VALUES (?, ?, ?, ?, ?, ?)",
                       [(us(start), cpu, switch_in, threads[thread], state, block)
                        for thread, start, cpu, switch_in, state, block in SWITCHES])
        # nsys 2022.4 labels its thread states in ENUM_SAMPLING_THREAD_STATE (already in the export);
        # what blocked a thread has labels of its own in the nsys versions that write it
        db.execute("CREATE TABLE ENUM_SCHED_THREAD_BLOCK (id INTEGER PRIMARY KEY, name TEXT, label TEXT)")
        db.execute("INSERT INTO ENUM_SCHED_THREAD_BLOCK VALUES (3, 'FUTEX', 'futex')")
    return {"database": database, "pid": (main >> 24) & 0xFFFFFF, "main": main & 0xFFFFFF,
            "worker": worker & 0xFFFFFF}


@pytest.fixture(scope="module")
def everything(gpu, tmp_path_factory):
    """The gpu export converted with no options: (result, events, OUT)."""
    out = tmp_path_factory.mktemp("convert_all") / "all.json"
    return convert(gpu["database"], out) + (out,)


def by_correlation(events, category):
    found = collections.defaultdict(list)
    for e in traceformat.join_async(events)[0]:
        if e.get("cat") in category:
            found[e["args"]["correlation"]].append(e)
    return found


def test_cuda_api_calls_are_on_their_threads_named_without_nsys_s_suffixes(gpu, everything):
    result, events, _ = everything
    calls = by_correlation(events, ("cuda api",))
    assert sorted(calls) == sorted(c[0] for c in CALLS)
    for correlation, thread, _, event_class, start, end, value in CALLS:
        (call,) = calls[correlation]
        assert (call["name"], call["ts"], call["dur"], call["pid"], call["tid"]) == (
            API_NAMES[correlation], us(start) / 1000, end - start, gpu["pid"], gpu[thread])
        assert call["args"] == {"correlation": correlation, "return": value,
                                "class": ["CUDA runtime", "CUDA driver"][event_class]}
    # the GPU work keeps its correlation id
    work = by_correlation(events, ("cuda kernel", "cuda memcpy", "cuda memset"))
    assert sum(map(len, work.values())) == len(WORK)


def launches(events):
    """The launch arrows as {(the call's correlation id, the work's name)}, each checked: the
    "s" at its call's start on the call's thread, the "f" at its work's start on the work's
    row, both from the same process and correlation id."""
    starts = {e["id"]: (i, e) for i, e in enumerate(events) if e["ph"] == "s"}
    finishes = {e["id"]: (i, e) for i, e in enumerate(events) if e["ph"] == "f"}
    joined = set()
    for flow_id, (at, start) in starts.items():
        end_at, finish = finishes[flow_id]
        assert (start["name"], start["cat"], finish["name"], finish["cat"]) == ("launch", "cuda flow") * 2
        # Each half right after its slice (or after the call's other arrows): of the events at one
        # time, a viewer binds the flow to the innermost slice open when it reads it.
        call = next(e for e in reversed(events[:at]) if e["ph"] != "s")
        work = events[end_at - 1]
        assert call["ph"] == "X" and call["cat"] == "cuda api"
        assert work["ph"] == "X" and work["cat"] in ("cuda kernel", "cuda memcpy", "cuda memset")
        assert (start["pid"], start["tid"], start["ts"]) == (call["pid"], call["tid"], call["ts"])
        assert (finish["pid"], finish["tid"], finish["ts"]) == (work["pid"], work["tid"], work["ts"])
        assert call["args"]["correlation"] == work["args"]["correlation"] and call["pid"] == work["pid"]
        joined.add((call["args"]["correlation"], work["name"]))
    assert len(joined) == len(starts)
    return joined


def test_each_launch_arrow_joins_a_call_to_the_work_it_launched(gpu, everything):
    result, events, _ = everything
    assert launches(events) == ARROWS  # 1003 launched two kernels: two arrows
    starts = [e["id"] for e in events if e["ph"] == "s"]
    # ids: each its own, none an async pair's (traceformat checks that too)
    ids = starts + [e["id"] for e in events if e["ph"] == "b"]
    assert len(ids) == len(set(ids))
    lines = result.stderr.splitlines()
    assert ("nvtxshim: convert: 2 launches without an arrow: the API call or the GPU work crosses another "
            "range on its row (written as an async pair, which a flow event cannot bind to), or the work "
            "starts before the call") in lines


def test_nvtx_ranges_are_projected_onto_exactly_their_gpu_work(gpu, everything):
    result, events, _ = everything
    projections = [e for e in traceformat.join_async(events)[0] if e.get("cat") == "nvtx projection"]
    made = sorted((e["name"], e["tid"] & 0xFFFF, e["ts"], e["ts"] + e["dur"], e["args"]["gpu ops"])
                  for e in projections)
    assert made == sorted((name, stream, us(start) / 1000, us(end) / 1000, ops)
                          for name, stream, start, end, ops in PROJECTIONS)
    for e in projections:
        assert e["pid"] == gpu["pid"] and e["tid"] >> 16 == 0x80  # device 0's rows
        assert e["args"]["domain"] == "default"
    # each on its stream's row, holding its work: the ranges of a range inside another nest
    rows = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert {rows[e["tid"]] for e in projections} == {"CUDA stream 7 (device 0)", "CUDA stream 9 (device 0)"}
    row7 = {e["name"]: e for e in projections if e["tid"] & 0xFFFF == 7}
    outer, inner = row7["step 1"], row7["step 1 inner"]
    assert outer["ts"] <= inner["ts"] and end_us(inner) <= end_us(outer)
    assert all(e["ph"] == "X" for e in events if e.get("cat") == "nvtx projection")


def test_thread_states_say_why_a_thread_left_the_cpu_when_the_export_does(gpu, everything):
    result, events, _ = everything
    states = sorted((e["tid"], e["name"], e["ts"], e["ts"] + e["dur"], e.get("args", {}))
                    for e in events if e.get("cat") == "thread state")
    assert states == sorted((STATE_ROW | gpu[thread], name, us(start) / 1000, us(end) / 1000, args)
                            for thread, name, start, end, args in THREAD_STATES)
    assert "nvtxshim: convert: SCHED_EVENTS: 1 switch in (or out) followed by another the same way, left out" \
        in result.stderr.splitlines()
    assert "threadState" not in result.stderr


def test_the_last_line_counts_every_kind(gpu, everything):
    result, events, out = everything
    joined = traceformat.join_async(events)[0]
    count = collections.Counter(kind(e) for e in joined if e["ph"] in ("X", "i"))
    nvtx = [e for e in joined if kind(e) == "nvtx"]
    assert result.stderr.splitlines()[-1] == (
        "nvtxshim: convert: wrote %s: %d NVTX ranges, %d marks, %d OS runtime calls, %d CUDA API calls, "
        "%d GPU kernels, 2 GPU copies, 1 memsets, %d NVTX projections, %d launch arrows, %d thread states, "
        '%d thread names; %d of the ranges as async pairs ("ph":"b"/"e")' % (
            out, sum(e["ph"] == "X" for e in nvtx), sum(e["ph"] == "i" for e in nvtx),
            count["osrt"], len(CALLS), len(WORK) - 3, len(PROJECTIONS), len(ARROWS), len(THREAD_STATES),
            sum(e["name"] == "thread_name" for e in events), sum(e["ph"] == "b" for e in events)))


# ---- gzip, filters ------------------------------------------------------------------------------

def test_out_gz_is_the_same_trace_gzipped_and_report_reads_it(gpu, tmp_path):
    plain, packed = tmp_path / "x.json", tmp_path / "x.json.gz"
    convert(gpu["database"], plain)
    convert(gpu["database"], packed)
    assert packed.read_bytes()[:2] == b"\x1f\x8b"
    assert gzip.decompress(packed.read_bytes()) == plain.read_bytes()
    reports = [nvtxshim("report", path) for path in (packed, plain, gpu["database"])]
    for report in reports:
        assert report.returncode == 0 and report.stderr == "", report.stderr
    # the same NVTX tables: API calls, GPU work, projections and thread states are not NVTX ranges
    assert reports[0].stdout == reports[1].stdout == reports[2].stdout


@pytest.mark.parametrize("only", KINDS)
def test_only_one_kind_writes_exactly_that_kind(gpu, everything, only, tmp_path):
    result, events = convert(gpu["database"], tmp_path / ("%s.json" % only), "--only", only)
    written = ranges(events)
    # (the sanitizer run's export has no OS runtime calls)
    assert written or (only == "osrt" and os.environ.get("NVS_TEST_PRELOAD_FIRST"))
    assert written == [r for r in ranges(everything[1]) if r[0] == only]
    assert not any(e["ph"] in ("s", "f") for e in events)
    # the names of the processes with events stay
    pids = {e["pid"] for e in events if e["ph"] != "M"}
    assert [e for e in events if e["ph"] == "M"] == [e for e in everything[1] if e["ph"] == "M" and e["pid"] in pids]


def test_only_api_calls_and_gpu_work_keep_the_arrows(gpu, everything, tmp_path):
    result, events = convert(gpu["database"], tmp_path / "launches.json", "--only=cuda-api,kernel")
    assert {r[0] for r in ranges(events)} == {"cuda-api", "kernel"}
    # without the NVTX range it crossed, 1006's call is a complete event: its arrow is drawn
    assert launches(events) == ARROWS | {(1006, "late")}
    assert "1 launch without an arrow" in result.stderr
    # twice: the lists add up
    result, again = convert(gpu["database"], tmp_path / "again.json", "--only", "cuda-api", "--only", "kernel")
    assert ranges(again) == ranges(events) and launches(again) == launches(events)


def test_nvtx_prefix_keeps_exactly_the_ranges_named_so_and_their_projections(gpu, everything, tmp_path):
    everything_ranges = ranges(everything[1])
    for prefixes in (["step 1"], ["step", "parent"]):
        result, events = convert(gpu["database"], tmp_path / "prefix.json", "--nvtx-prefix", ",".join(prefixes))
        written = ranges(events)
        nvtx = [r for r in written if r[0] == "nvtx"]
        assert nvtx and nvtx == [r for r in everything_ranges if r[0] == "nvtx"
                                 and any(r[1].startswith(p) for p in prefixes)]
        projected = [r for r in written if r[0] == "nvtx-kernel"]
        assert projected == [r for r in everything_ranges if r[0] == "nvtx-kernel"
                             and any(r[1].startswith(p) for p in prefixes)]
        assert {r[1] for r in projected} == {"step 1", "step 1 inner"}
        # the rest untouched
        assert [r for r in written if r[0] not in ("nvtx", "nvtx-kernel")] == [
            r for r in everything_ranges if r[0] not in ("nvtx", "nvtx-kernel")]


@pytest.mark.parametrize("args", [["--only", "nvtx,gpu", "IN", "OUT"], ["--only", "", "IN", "OUT"],
                                  ["IN", "OUT", "--only"], ["--only=nvtx,", "IN", "OUT"],
                                  ["--nvtx-prefix", "a,,b", "IN", "OUT"]])
def test_a_bad_filter_is_a_usage_error(gpu, args, tmp_path):
    out = tmp_path / "out.json"
    result = nvtxshim("convert", *[{"IN": gpu["database"], "OUT": out}.get(a, a) for a in args])
    assert result.returncode == 2 and result.stdout == "" and result.stderr.count("\n") == 1
    assert result.stderr.startswith("nvtxshim: convert: ") and result.stderr.endswith("(nvtxshim convert --help)\n")
    if "nvtx,gpu" in args:
        assert "--only: unknown kind 'gpu': the kinds are nvtx, nvtx-kernel, cuda-api, kernel, osrt, sched" \
            in result.stderr
    assert not out.exists()


# ---- what is not an nsys export ------------------------------------------------------------------

def test_a_database_that_is_not_an_nsys_export_is_refused_by_convert_and_report(tmp_path):
    database = tmp_path / "app.sqlite"
    with sqlite3.connect(database) as db:
        db.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
        db.execute("INSERT INTO users VALUES (1, 'ada')")
    why = ("%s is not an nsys export (an SQLite database with none of the tables nsys export writes: "
           "NVTX_EVENTS, OSRT_API, CUPTI_*, SCHED_EVENTS, StringIds, TARGET_INFO_*, ...)" % database)
    out = tmp_path / "out.json"
    for command, args in (("convert", (database, out)), ("report", (database,))):
        result = nvtxshim(command, *args)
        assert (result.returncode, result.stdout, result.stderr) == (1, "", "nvtxshim: %s: %s\n" % (command, why))
    assert not out.exists()


# ---- the manual and the cost --------------------------------------------------------------------

def test_the_manual_names_every_table_option_and_row():
    page = nvtxshim("convert", "--help").stdout
    for said in ("CUPTI_ACTIVITY_KIND_RUNTIME", "SCHED_EVENTS", "--only KINDS", "--nvtx-prefix P[,P...]",
                 "nvtx-kernel", "cuda-api", '"ph":"s"', '"bp":"e"', "cuda flow", "nvtx projection",
                 "thread state", "0x40000000", "(state)", "Off CPU", ".gz", "CUDA stream S (device D)"):
        assert said in page, said


def large_export(plain, database, n):
    """PLAIN with N CUDA API calls on its main thread, each in an NVTX range of its own and
    launching a kernel, and N context switches."""
    shutil.copy(plain, database)
    with sqlite3.connect(database) as db:
        main = db.execute("SELECT globalTid FROM NVTX_EVENTS WHERE eventType = 59 LIMIT 1").fetchone()[0]
        name = db.execute("SELECT max(id) + 1 FROM StringIds").fetchone()[0]
        db.execute("INSERT INTO StringIds VALUES (?, 'cudaLaunchKernel_v7000')", (name,))
        db.execute(RUNTIME_TABLE)
        db.execute("""CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
            deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
            correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL,
            shortName INTEGER NOT NULL)""")
        db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 0, ?, ?, ?, 0, NULL)",
                       ((us(10 * i), us(10 * i + 2), main, i + 1, name) for i in range(n)))
        db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 1, 7, ?, ?, ?, ?)",
                       ((us(10 * i + 3), us(10 * i + 8), i + 1, main & ~0xFFFFFF, name, name) for i in range(n)))
        db.executemany('INSERT INTO NVTX_EVENTS (start, "end", eventType, text, globalTid) VALUES (?, ?, 59, ?, ?)',
                       ((us(10 * i - 1), us(10 * i + 3), "launch", main) for i in range(n)))
        db.execute("DROP TABLE IF EXISTS SCHED_EVENTS")
        db.execute("CREATE TABLE SCHED_EVENTS (start INTEGER NOT NULL, cpu INTEGER NOT NULL, "
                   "isSchedIn INTEGER NOT NULL, globalTid INTEGER)")
        db.executemany("INSERT INTO SCHED_EVENTS VALUES (?, 0, ?, ?)",
                       ((us(5 * i), (i + 1) % 2, main) for i in range(n)))
    return database


def test_a_large_export_converts_in_time_that_grows_with_its_size(plain, tmp_path):
    # 150,000 calls, kernels, ranges and switches (some 600,000 events written, and as many
    # arrows and projections), then an eighth of that: the CPU time grows about 8 times (it
    # sorts), where a scan of the calls per range (or of the calls per kernel, for the arrows)
    # would grow 64 times: about 30 times here, measured with such a scan. CPU time, not the
    # clock's: other work on the machine changes it less.
    n = 150000
    took = {}
    for size in (n // 8, n):
        database = large_export(plain, tmp_path / ("large%d.sqlite" % size), size)
        before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
        result = nvtxshim("convert", database, tmp_path / "large.json.gz")
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        assert result.returncode == 0, result.stderr
        assert (" %d CUDA API calls, %d GPU kernels, " % (size, size)) in result.stderr
        assert (" %d NVTX projections, %d launch arrows, " % (size, size)) in result.stderr
        assert time.monotonic() - started < 60
        took[size] = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    assert took[n] < 16 * took[n // 8], "CPU time %.2f s for %d calls, %.2f s for %d" % (
        took[n], n, took[n // 8], n // 8)
