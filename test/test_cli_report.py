"""nvtxshim report and nvtxshim convert (cli/commands/report.c, cli/commands/convert.c): the same harness run
recorded twice - under the real nsys (NVTX and OS runtime calls) and with the trace recorder -
gives the same counts per range name; convert turns the nsys export into a trace whose NVTX
ranges and marks are the export's, in time order, that report reads as it reads the export; what
an export lacks is said, one line each; a trace cut short is read; and each subcommand has its
manual page. convert writes the trace format the recorder writes (test/traceformat.py): a bare
array, complete events that nest on each thread, async pairs for the rest; report joins those
pairs back into ranges."""
import collections
import json
import os
import shutil
import sqlite3
import subprocess

import pytest

import traceformat
from conftest import SHIM, STUB, Device, clean_env, program, run
from nsys import export_sqlite, profile

FRAMES = 8
ON_ACT = {"NVTXSHIM_FRAME": "call:libusb_control_transfer"}
PUSH_POP, START_END, MARK = 59, 60, 34
EXPECTED = {  # the synchronous harness: the device opened and its interface claimed, then per
    # frame an act, an observe, an upload, two kernels, a download and a wait for the GPU; the
    # interface released at the end
    ("usb", "libusb_open"): 1, ("usb", "libusb_claim_interface"): 1,
    ("usb", "libusb_release_interface"): 1,
    ("usb", "libusb_control_transfer"): FRAMES, ("usb", "libusb_bulk_transfer"): 2 * FRAMES,
    ("usb", "libusb_interrupt_transfer"): FRAMES, ("cuda", "cuMemcpyHtoD"): FRAMES,
    ("cuda", "cuLaunchKernel harness_convolve"): FRAMES,
    ("cuda", "cuLaunchKernel harness_cell_argmax"): FRAMES,
    ("cuda", "cuMemcpyDtoHAsync"): FRAMES, ("cuda", "cuStreamSynchronize"): FRAMES,
    ("nvtxshim", "frame N"): FRAMES}
# p50 and p99 are by nearest rank (the ceil(p * n)-th smallest), as the headings say.
NAMES_HEADING = "== NVTX ranges per name (microseconds; p50 and p99 by nearest rank)"
PER_FRAME = "== Per frame (milliseconds; p50 and p99 by nearest rank)"
# The parts a frame is made of, as the heading names them; a part no frame spent time in has no
# column (the page leaves it out too), and the heading lists the columns there are.
PART_MEANINGS = {"usb": "USB", "cuda": "CUDA copies", "gpu wait": "GPU waits", "launch": "kernel launches",
                 "x11": "X11", "camera": "camera (V4L2)", "serial": "serial", "hid": "HID", "rest": "the rest"}
LATENCY_HEADING = ("== Capture to actuation (milliseconds; p50 and p99 by nearest rank): from a camera frame's "
                   "capture to the end of the first actuation after its dequeue")
# The harness's columns: it makes no X11 calls, and the stand-in driver runs its kernels inside
# cuLaunchKernel, so launches take time.
HARNESS_COLUMNS = ["total", "usb", "cuda", "gpu wait", "launch", "rest"]
NOT_NVTX = ("osrt", "cuda kernel", "cuda memcpy", "cuda memset")


def nvtxshim(*args, **kwargs):
    return subprocess.run([program("nvtxshim")] + [str(a) for a in args], env=clean_env(),
                          capture_output=True,
                          text=True, timeout=300, **kwargs)


def convert(database, out):
    """nvtxshim convert DATABASE OUT: its result and OUT's events, which hold to the trace
    format's rules - strict JSON, one event a line, complete events nested on each thread,
    every async begin ended - and are in time order."""
    result = nvtxshim("convert", database, out)
    assert result.returncode == 0, result.stderr
    return result, traceformat.check_converted(out.read_text(encoding="utf-8"), out)


def harness():
    return [program("harness_physical"), "--frames", str(FRAMES)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The harness on the emulated camera under nsys -t nvtx,osrt (report, export), and the
    same program with the trace recorder."""
    directory = tmp_path_factory.mktemp("cli_report")
    device = Device(FRAMES, ())
    # The stand-in CUDA driver for the harness only (nsys itself must not load it), set in the
    # same shell that appends the shim: no other program in between loads the shim (under
    # make test-asan, an uninstrumented one would die loading the instrumented shim).
    shimmed = device.wrap(["sh", "-c", 'LD_PRELOAD="$LD_PRELOAD:$NVS_TEST_SHIM" '
                           'LD_LIBRARY_PATH="$NVS_TEST_STUB" exec "$@"', "sh"] + harness())
    # nsys's OS runtime tracing copies raw stack memory, which ASan reports in the instrumented
    # emucam: the sanitizer run (make test-asan) traces NVTX only.
    osrt = not os.environ.get("NVS_TEST_PRELOAD_FIRST")
    result = profile(directory / "report", shimmed,
                     clean_env(dict(ON_ACT, NVS_TEST_STUB=STUB, NVS_TEST_SHIM=SHIM)),
                     trace="nvtx,osrt" if osrt else "nvtx")
    assert b"frames=%d errors=0" % FRAMES in result.stdout
    database = export_sqlite(directory / "report")
    trace = directory / "trace.json"
    recorded = run(harness(), env=dict(ON_ACT, NVTXSHIM_TRACE=str(trace), LD_LIBRARY_PATH=STUB),
                   device=device)
    assert recorded.returncode == 0 and b"frames=%d errors=0" % FRAMES in recorded.stdout
    return {"directory": directory, "report": directory / "report.nsys-rep",
            "database": database, "trace": trace, "osrt": osrt}


def names_table(output):
    """{(domain, name): count} from the report's first table."""
    lines = output.splitlines()
    start = lines.index(NAMES_HEADING)
    assert lines[start + 1].split() == ["domain", "name", "count", "mean", "p50", "p99", "max"]
    counts = {}
    for line in lines[start + 2:]:
        if not line.strip():
            break
        fields = line.split()
        counts[(fields[0], " ".join(fields[1:-5]))] = int(fields[-5])
    return counts


def per_frame_heading(columns):
    """The per-frame section's heading for COLUMNS: ": time in" and the parts among them."""
    parts = [PART_MEANINGS[column] for column in columns if column in PART_MEANINGS]
    if not parts:
        return PER_FRAME
    return PER_FRAME + ": time in " + (", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0])


def frames_table(output, columns):
    """The per-frame section's lines after its columns' headings, which are COLUMNS."""
    lines = output.splitlines()
    start = lines.index(per_frame_heading(columns))
    assert lines[start + 1].split() == " ".join(columns).split()
    return lines[start + 2:]


def export_events(database):
    """(eventType, domain, name, start, end, globalTid) of the export's NVTX ranges and marks."""
    with sqlite3.connect(database) as db:
        return db.execute("""
            WITH domains AS (SELECT domainId, text AS domain FROM NVTX_EVENTS WHERE eventType = 75)
            SELECT e.eventType, COALESCE(d.domain, 'default'), COALESCE(e.text, s.value),
                   e.start, e."end", e.globalTid
            FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId
            LEFT JOIN domains d ON d.domainId = e.domainId
            WHERE e.eventType IN (34, 59, 60)""").fetchall()


# ---- report ---------------------------------------------------------------------------------

def test_report_on_the_trace_and_on_the_export_counts_the_same_ranges(runs):
    from_trace = nvtxshim("report", runs["trace"])
    from_export = nvtxshim("report", runs["database"])
    assert from_trace.returncode == 0 and from_trace.stderr == "", from_trace.stderr
    assert from_export.returncode == 0 and from_export.stderr == "", from_export.stderr
    assert names_table(from_trace.stdout) == names_table(from_export.stdout) == EXPECTED
    for output in (from_trace.stdout, from_export.stdout):
        rows = frames_table(output, HARNESS_COLUMNS)
        assert rows[0].split()[:3] == ["mean", "of", str(FRAMES)]
        assert [row.split()[0] for row in rows[1:4]] == ["p50", "p99", "max"]
        assert rows[4] == "  slowest frames:"
        slowest = [row.split() for row in rows[5:10]]
        assert [row[0] for row in slowest] == ["frame"] * 5
        totals = [float(row[2]) for row in slowest]
        assert totals == sorted(totals, reverse=True)
        for row in slowest:  # the parts never exceed the frame; the rest is what is left
            total, usb, cuda, wait, launch, rest = map(float, row[2:8])
            parts = usb + cuda + wait + launch
            assert parts <= total + 0.003 and abs(total - parts - rest) < 0.006
            # Each frame waits once for the GPU: the stand-in's cuStreamSynchronize sleeps 0.2 ms.
            assert wait >= 0.2 and launch > 0


def test_report_exports_an_nsys_rep_first_and_reuses_the_export(runs, tmp_path):
    report = tmp_path / "copy.nsys-rep"
    shutil.copy(runs["report"], report)
    first = nvtxshim("report", report)
    assert first.returncode == 0, first.stderr
    assert first.stderr == "nvtxshim: report: exporting %s to %s (nsys export --type sqlite)\n" % (
        report, tmp_path / "copy.sqlite")
    assert (tmp_path / "copy.sqlite").exists()
    assert first.stdout == nvtxshim("report", runs["database"]).stdout
    again = nvtxshim("report", report)
    assert again.stdout == first.stdout
    assert again.stderr == "nvtxshim: report: reading %s, the export of %s made before\n" % (
        tmp_path / "copy.sqlite", report)


def test_report_reads_a_trace_cut_short(runs, tmp_path):
    # A process killed by a signal leaves no closing ] (]} in the older form), its last event
    # followed by a comma and blank padding; a write cut in the middle of an event leaves half of
    # it: both are read up to the last whole event, and said.
    text = runs["trace"].read_text()
    body = text.rstrip()
    closer = "]}" if body.endswith("]}") else "]"
    assert body.endswith(closer) and body[0] == ("{" if closer == "]}" else "[")
    cut = tmp_path / "cut.json"
    cut.write_text(body[:-len(closer)].rstrip() + ",\n" + " " * 4096)
    result = nvtxshim("report", cut)
    assert result.returncode == 0 and names_table(result.stdout) == EXPECTED
    assert result.stderr.startswith("nvtxshim: report: %s ends before its closing %s (" % (cut, closer))
    half = tmp_path / "half.json"
    last = body.rindex('{"name"')
    half.write_text(body[:last + 30])
    whole = json.loads(body[:last].rstrip().rstrip(",") + closer)
    whole = whole["traceEvents"] if closer == "]}" else whole
    begun = {(e["pid"], e["cat"], e["id"]) for e in whole if e["ph"] == "b"}
    ended = {(e["pid"], e["cat"], e["id"]) for e in whole if e["ph"] == "e"}
    result = nvtxshim("report", half)
    assert result.returncode == 0, result.stderr
    assert sum(names_table(result.stdout).values()) == sum(e["ph"] == "X" for e in whole) + len(begun & ended)
    assert "the last one incomplete and left out" in result.stderr
    assert result.stderr.count("\n") == 1 + bool(begun - ended) + bool(ended - begun)


def test_report_groups_marks_by_kind_with_counts_and_the_first_texts(tmp_path):
    # Marks of one kind differ in their numbers only: the frame in an over-budget mark, the bytes
    # and endpoint of a failed transfer, the request value of a control transfer. Each kind is
    # one row with its count (the most frequent first, per domain), then its first 3 texts in
    # time order with their counts, and how many other texts it has; a number inside a word
    # (H264, cuMemcpy2D) is part of the word.
    def mark(name, ts, cat="usb", tid=7):
        return {"name": name, "cat": cat, "ph": "i", "s": "t", "ts": float(ts), "pid": 7, "tid": tid}
    events = [{"name": "process_name", "ph": "M", "pid": 7, "tid": 7, "args": {"name": "loop"}},
              {"name": "frame 1", "cat": "nvtxshim", "ph": "X", "ts": 0.0, "dur": 100.0, "pid": 7,
               "tid": 7}]
    # over budget: frames 1-6 written out of time order (threads write their own parts)
    for frame in (3, 1, 2, 6, 5, 4):
        events.append(mark("over budget frame %d: %d.%03d ms > 33.000 ms" % (frame, 40 + frame, frame),
                           1000 * frame, cat="nvtxshim"))
    for i in range(4):
        events.append(mark("LIBUSB_ERROR_NO_DEVICE libusb_bulk_transfer ep=0x81 IN 0/9216B", 100 + 10 * i))
        events.append(mark("LIBUSB_ERROR_NO_DEVICE libusb_control_transfer type=0x40 req=0x01 "
                           "val=0x%04x" % (9 + i), 101 + 10 * i, tid=8))
    events.append(mark("LIBUSB_ERROR_NO_DEVICE libusb_bulk_transfer ep=0x02 OUT 0/8B", 99))
    events.append(mark("LIBUSB_ERROR_NO_DEVICE libusb_bulk_transfer ep=0x82 IN 0/512B", 200))
    events += [mark("H264 decoder reset", 50, cat="app"), mark("H264 decoder reset", 60, cat="app"),
               mark("cuMemcpy2D refused", 70, cat="app"), mark("tick", 80, cat="app"),
               mark("tick 2", 90, cat="app")]
    trace = tmp_path / "marks.json"
    trace.write_text(json.dumps(events))
    result = nvtxshim("report", trace)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    lines = result.stdout.splitlines()
    start = lines.index("== NVTX marks per kind (each number as N), with the first texts of each")
    end = lines.index("", start)
    assert lines[start + 1:end] == [
        "  domain      count  kind",
        "  app             2  H264 decoder reset",
        "  app             1  cuMemcpy2D refused",
        "  app             1  tick",
        "  app             1  tick N",
        "                       'tick 2' x1",
        "  nvtxshim        6  over budget frame N: N ms > N ms",
        "                       'over budget frame 1: 41.001 ms > 33.000 ms' x1",
        "                       'over budget frame 2: 42.002 ms > 33.000 ms' x1",
        "                       'over budget frame 3: 43.003 ms > 33.000 ms' x1",
        "                       ... and 3 other texts",
        "  usb             5  LIBUSB_ERROR_NO_DEVICE libusb_bulk_transfer ep=N IN N/NB",
        "                       'LIBUSB_ERROR_NO_DEVICE libusb_bulk_transfer ep=0x81 IN 0/9216B' x4",
        "                       'LIBUSB_ERROR_NO_DEVICE libusb_bulk_transfer ep=0x82 IN 0/512B' x1",
        "  usb             4  LIBUSB_ERROR_NO_DEVICE libusb_control_transfer type=N req=N val=N",
        "                       'LIBUSB_ERROR_NO_DEVICE libusb_control_transfer type=0x40 req=0x01 val=0x0009' x1",
        "                       'LIBUSB_ERROR_NO_DEVICE libusb_control_transfer type=0x40 req=0x01 val=0x000a' x1",
        "                       'LIBUSB_ERROR_NO_DEVICE libusb_control_transfer type=0x40 req=0x01 val=0x000b' x1",
        "                       ... and 1 other text",
        "  usb             1  LIBUSB_ERROR_NO_DEVICE libusb_bulk_transfer ep=N OUT N/NB",
        "                       'LIBUSB_ERROR_NO_DEVICE libusb_bulk_transfer ep=0x02 OUT 0/8B' x1"]
    # the ranges' table ends before it, the frames' section follows
    assert lines[start - 1] == "" and lines[end + 1].startswith("== Per frame")


def test_report_gives_150_over_budget_marks_as_one_kind(tmp_path):
    # The library's mark for each frame over NVTXSHIM_FRAME_BUDGET: 150 frames, 150 texts that
    # differ in the frame and its time, one kind with its count and the first 3 texts in time
    # order (written here last frame first, as nothing keeps a trace in time order).
    events = [{"name": "frame 1", "cat": "nvtxshim", "ph": "X", "ts": 0.0, "dur": 100.0, "pid": 7,
               "tid": 7}]
    for frame in range(150, 0, -1):
        events.append({"name": "over budget frame %d: %d.%03d ms > 33.000 ms" % (frame, 33 + frame % 7,
                                                                                 frame),
                       "cat": "nvtxshim", "ph": "i", "s": "t", "ts": 1000.0 * frame, "pid": 7, "tid": 7})
    trace = tmp_path / "budget.json"
    trace.write_text(json.dumps(events))
    result = nvtxshim("report", trace)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    lines = result.stdout.splitlines()
    start = lines.index("== NVTX marks per kind (each number as N), with the first texts of each")
    assert lines[start + 1:lines.index("", start)] == [
        "  domain      count  kind",
        "  nvtxshim      150  over budget frame N: N ms > N ms",
        "                       'over budget frame 1: 34.001 ms > 33.000 ms' x1",
        "                       'over budget frame 2: 35.002 ms > 33.000 ms' x1",
        "                       'over budget frame 3: 36.003 ms > 33.000 ms' x1",
        "                       ... and 147 other texts"]


def test_report_with_kernel_figures_adds_off_cpu_columns(tmp_path):
    # The kernel probe's figures: on the frame ranges in a trace file, in the `kernel` marks in
    # an nsys export (here a hand-made trace holding the second kind only for frame 2).
    events = [{"name": "process_name", "ph": "M", "pid": 7, "tid": 7, "args": {"name": "loop"}},
              {"name": "frame 1", "cat": "nvtxshim", "ph": "X", "ts": 1000.0, "dur": 10000.0,
               "pid": 7, "tid": 7, "args": {"offcpu_runnable_ns": 2500000, "offcpu_blocked_ns": 4000000,
                                            "offcpu_preemptions": 3, "offcpu_faults": 12}},
              {"name": "frame 2", "cat": "nvtxshim", "ph": "X", "ts": 11000.0, "dur": 5000.0,
               "pid": 7, "tid": 7},
              {"name": "frame 2: runnable 0.5 ms (1 preemption), blocked 1.0 ms, 1 fault",
               "cat": "kernel", "ph": "i", "s": "t", "ts": 16000.0, "pid": 7, "tid": 7},
              {"name": "XSync", "cat": "x11", "ph": "X", "ts": 2000.0, "dur": 1000.0, "pid": 7, "tid": 7}]
    trace = tmp_path / "kernel.json"
    trace.write_text(json.dumps({"traceEvents": events}))
    result = nvtxshim("report", trace)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    marks = lines.index("== NVTX marks per kind (each number as N), with the first texts of each")
    assert lines[marks + 1:marks + 4] == [
        "  domain      count  kind",
        "  kernel          1  frame N: off-CPU figures",
        "                       'frame 2: runnable 0.5 ms (1 preemption), blocked 1.0 ms, 1 fault' x1"]
    # no USB or CUDA calls: no columns of zeros for them
    start = lines.index(per_frame_heading(["x11", "rest"]) + "; off CPU (kernel probe): runnable, blocked")
    assert lines[start + 1].split() == ["total", "x11", "rest", "runnable", "blocked"]
    assert lines[start + 2].split() == ["mean", "of", "2", "7.500", "0.500", "7.000", "1.500", "2.500"]
    assert lines[start + 7].split() == ["frame", "1", "10.000", "1.000", "9.000", "2.500", "4.000", "(3",
                                        "preemptions,", "12", "faults)"]
    assert lines[start + 8].split() == ["frame", "2", "5.000", "0.000", "5.000", "0.500", "1.000", "(1",
                                        "preemption,", "1", "fault)"]


def test_report_frame_times_are_each_domains_calls_joined_and_cut_to_the_frame(tmp_path):
    # Per frame, each domain's time is the union of its calls inside the frame: two USB calls
    # on two threads that overlap count once, a CUDA copy that crosses the frame boundary
    # counts in each frame for its part there, and the rest is what no call covers.
    events = [{"name": "process_name", "ph": "M", "pid": 7, "tid": 7, "args": {"name": "loop"}},
              {"name": "frame 1", "cat": "nvtxshim", "ph": "X", "ts": 1000.0, "dur": 10000.0,
               "pid": 7, "tid": 7},
              {"name": "frame 2", "cat": "nvtxshim", "ph": "X", "ts": 11000.0, "dur": 4000.0,
               "pid": 7, "tid": 7}]
    calls = [("usb", "libusb_bulk_transfer", 2000, 3000, 7),    # 2-5 ms
             ("usb", "libusb_bulk_transfer", 4000, 3000, 8),    # 4-7 ms: usb 2-7 ms, 5 ms
             ("x11", "XPutImage", 6000, 2000, 9),                # 6-8 ms
             ("cuda", "cuMemcpyHtoD", 10000, 2000, 8)]           # 10-12 ms: 1 ms in each frame
    events += [{"name": name, "cat": domain, "ph": "X", "ts": float(ts), "dur": float(dur),
                "pid": 7, "tid": tid} for domain, name, ts, dur, tid in calls]
    trace = tmp_path / "overlap.json"
    trace.write_text(json.dumps(events))
    result = nvtxshim("report", trace)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    # no waits for the GPU: no gpu wait column
    rows = frames_table(result.stdout, ["total", "usb", "cuda", "x11", "rest"])
    # frame 1's calls cover 2-8 and 10-11 ms of its 10 ms.
    assert rows[0].split() == ["mean", "of", "2", "7.000", "2.500", "1.000", "1.000", "3.000"]
    assert rows[5].split() == ["frame", "1", "10.000", "5.000", "1.000", "2.000", "3.000"]
    assert rows[6].split() == ["frame", "2", "4.000", "0.000", "1.000", "0.000", "3.000"]


def complete(name, domain, start, end, pid, tid=None):
    """A complete event ("ph":"X") from START to END milliseconds."""
    return {"name": name, "cat": domain, "ph": "X", "ts": start * 1000.0, "dur": (end - start) * 1000.0,
            "pid": pid, "tid": pid if tid is None else tid}


def test_report_frames_count_only_their_own_processs_calls(tmp_path):
    # A frame is its process's loop: another process's calls that overlap it in time (here those
    # of pid 8, which counts no frames: a USB transfer that overlaps one of pid 7's and one alone,
    # an X11 call) are none of its time.
    events = [complete("frame 1", "nvtxshim", 1, 11, 7), complete("frame 2", "nvtxshim", 11, 15, 7),
              complete("libusb_bulk_transfer", "usb", 2, 5, 7),
              complete("libusb_bulk_transfer", "usb", 4, 9, 8),
              complete("XPutImage", "x11", 12, 14, 8, tid=81)]
    trace = tmp_path / "two.json"
    trace.write_text(json.dumps(events))
    result = nvtxshim("report", trace)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    # one process counts frames: the heading names none; pid 8's X11 call is no column of pid 7's
    rows = frames_table(result.stdout, ["total", "usb", "rest"])
    assert rows[5].split() == ["frame", "1", "10.000", "3.000", "7.000"]
    assert rows[6].split() == ["frame", "2", "4.000", "0.000", "4.000"]


def test_report_counts_the_frames_over_the_budget(tmp_path):
    # The budget is the library's, from its "over budget" marks of the frame's process (pid 8's
    # marks say 5 ms, but pid 8 counts no frames), or --budget's for every process; a frame is over
    # it when it takes longer, as the library marks it.
    events = [complete("frame %d" % n, "nvtxshim", 10 * n, 10 * n + ms, 7)
              for n, ms in ((1, 40), (2, 20), (3, 33), (4, 33.001))]
    events += [{"name": "over budget frame %d: %s ms > 33.000 ms" % (n, took), "cat": "nvtxshim",
                "ph": "i", "s": "t", "ts": 1000.0 * n, "pid": 7, "tid": 7}
               for n, took in ((1, "40.000"), (4, "33.001"))]
    events.append({"name": "over budget frame 1: 9.000 ms > 5.000 ms", "cat": "nvtxshim", "ph": "i",
                   "s": "t", "ts": 0.0, "pid": 8, "tid": 8})
    trace = tmp_path / "budget.json"
    trace.write_text(json.dumps(events))
    said = {}
    for option in ((), ("--budget", "20ms"), ("--budget=19999us",)):
        result = nvtxshim("report", trace, *option)
        assert result.returncode == 0 and result.stderr == "", result.stderr
        rows = frames_table(result.stdout, ["total", "rest"])
        assert rows[5] == "  slowest frames:"
        said[option] = rows[4]
    assert said == {
        (): "  over the budget of 33.000 ms (from the library's over budget marks): 2 of the 4 frames",
        ("--budget", "20ms"): "  over the budget of 20.000 ms (from --budget): 3 of the 4 frames",
        ("--budget=19999us",): "  over the budget of 19.999 ms (from --budget): 4 of the 4 frames"}
    # no budget: no line
    del events[4:]
    trace.write_text(json.dumps(events))
    assert frames_table(nvtxshim("report", trace).stdout, ["total", "rest"])[4] == "  slowest frames:"


def two_processes_events():
    """Two processes that count frames (pid 7, named "loop"; pid 9, unnamed), which overlap in
    time; pid 9 writes to a serial port, pid 7 does not (test_report_json uses them too)."""
    return [{"name": "process_name", "ph": "M", "pid": 7, "tid": 7, "args": {"name": "loop"}},
            complete("frame 1", "nvtxshim", 5, 11, 9), complete("frame 2", "nvtxshim", 11, 15, 9),
            complete("frame 1", "nvtxshim", 0, 10, 7), complete("frame 2", "nvtxshim", 10, 20, 7),
            complete("libusb_bulk_transfer", "usb", 4, 8, 7),
            complete("libusb_bulk_transfer", "usb", 8.5, 9.5, 9),
            complete("write /dev/ttyUSB0 8B", "serial", 12, 14, 9)]


def test_report_gives_the_frames_of_each_process_apart(tmp_path):
    # A section each, by pid, headed with the process, with its own frames, calls and columns.
    events = two_processes_events()
    trace = tmp_path / "two.json"
    trace.write_text(json.dumps(events))
    result = nvtxshim("report", trace)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    lines = result.stdout.splitlines()
    start = lines.index("== Per frame of process 7 'loop' (milliseconds; p50 and p99 by nearest rank): time in "
                        "USB and the rest")
    assert lines[start + 1:] == [
        "                     total       usb      rest",
        "  mean of 2         10.000     2.000     8.000",
        "  p50               10.000     0.000     6.000",
        "  p99               10.000     4.000    10.000",
        "  max               10.000     4.000    10.000",
        "  slowest frames:",
        "  frame 1           10.000     4.000     6.000",
        "  frame 2           10.000     0.000    10.000",
        "",
        "== Per frame of process 9 (milliseconds; p50 and p99 by nearest rank): time in USB, serial and the rest",
        "                     total       usb    serial      rest",
        "  mean of 2          5.000     0.500     1.000     3.500",
        "  p50                4.000     0.000     0.000     2.000",
        "  p99                6.000     1.000     2.000     5.000",
        "  max                6.000     1.000     2.000     5.000",
        "  slowest frames:",
        "  frame 1            6.000     1.000     0.000     5.000",
        "  frame 2            4.000     0.000     2.000     2.000"]


def test_report_percentiles_are_by_nearest_rank(tmp_path):
    # p of N values is the ceil(p * N)-th smallest: p50 of 1, 2, 3, 4 ms is 2 ms, not the upper
    # median; p50 and p99 of 1..200 us are 100 and 198 us. The headings say which percentile.
    events = [{"name": "frame %d" % n, "cat": "nvtxshim", "ph": "X", "ts": 10000.0 * n,
               "dur": 1000.0 * n, "pid": 7, "tid": 7} for n in (3, 1, 4, 2)]
    events += [{"name": "step", "cat": "app", "ph": "X", "ts": 100000.0 + 1000 * n, "dur": float(n),
                "pid": 7, "tid": 7} for n in range(200, 0, -1)]
    trace = tmp_path / "ranks.json"
    trace.write_text(json.dumps(events))
    result = nvtxshim("report", trace)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    lines = result.stdout.splitlines()
    start = lines.index(NAMES_HEADING)
    assert lines[start + 2].split() == ["app", "step", "200", "100.5", "100.0", "198.0", "200.0"]
    assert lines[start + 3].split() == ["nvtxshim", "frame", "N", "4", "2500.0", "2000.0", "4000.0",
                                        "4000.0"]
    rows = frames_table(result.stdout, ["total", "rest"])
    assert [row.split()[:2] for row in rows[:4]] == [["mean", "of"], ["p50", "2.000"], ["p99", "4.000"],
                                                     ["max", "4.000"]]


def one_frame_report(tmp_path, calls):
    """The report of a hand-made trace: frame 1 from 1 to 11 ms, and CALLS (domain, name, start,
    duration in microseconds, thread), with no category: as an nsys export has them."""
    events = [{"name": "frame 1", "cat": "nvtxshim", "ph": "X", "ts": 1000.0, "dur": 10000.0,
               "pid": 7, "tid": 7}]
    events += [{"name": name, "cat": domain, "ph": "X", "ts": float(ts), "dur": float(dur),
                "pid": 7, "tid": tid} for domain, name, ts, dur, tid in calls]
    trace = tmp_path / "gpu.json"
    trace.write_text(json.dumps(events))
    result = nvtxshim("report", trace)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    return result.stdout


def test_report_splits_the_cuda_calls_into_copies_gpu_waits_and_launches(tmp_path):
    # Waits for the GPU are known by their API names, on any thread, and joined like any calls;
    # launches that take time get a column of their own.
    output = one_frame_report(tmp_path, [
        ("cuda", "cuMemcpyHtoD 64KiB pinned", 1000, 1000, 7),       # 1-2 ms: copies
        ("cuda", "cuStreamSynchronize", 2000, 2000, 7),             # 2-4 ms
        ("cuda", "cudaStreamSynchronize", 3000, 2000, 8),           # 3-5 ms: waits 2-5 ms
        ("cuda", "cuLaunchKernel conv3x3", 5000, 500, 7),           # 5-5.5 ms: launches
        ("cuda", "cudaEventSynchronize", 6000, 500, 7),             # 6-6.5 ms: waits 3.5 ms
        ("cuda", "cuStreamSynchronizeLater", 7000, 1000, 7)])       # not a wait's name: cuda
    rows = frames_table(output, ["total", "cuda", "gpu wait", "launch", "rest"])
    assert rows[5].split() == ["frame", "1", "10.000", "2.000", "3.500", "0.500", "4.000"]
    # Per name, a launch keeps its kernel's name.
    assert any(line.startswith("  cuda      cuLaunchKernel conv3x3 ") for line in output.splitlines())


def test_report_counts_launches_that_take_no_time_with_the_copies(tmp_path):
    # Asynchronous launches on a real GPU take microseconds: no column of their own then.
    output = one_frame_report(tmp_path, [
        ("cuda", "cuMemcpyHtoD 64KiB pinned", 1000, 1000, 7),
        ("cuda", "cudaLaunchKernel", 2000, 0.2, 7),
        ("cuda", "cudaDeviceSynchronize", 2000.2, 1000, 7)])
    rows = frames_table(output, ["total", "cuda", "gpu wait", "rest"])
    assert rows[5].split() == ["frame", "1", "10.000", "1.000", "1.000", "8.000"]


def test_report_says_why_it_cannot_read_a_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents":[{"name":"a" "ph":"X"}]}')
    not_sqlite = tmp_path / "r.sqlite"
    not_sqlite.write_text("hello")
    empty = tmp_path / "empty.json"
    empty.write_text('{"traceEvents":[]}')
    cases = [(tmp_path / "missing.json", "cannot read %s: No such file or directory" % (tmp_path / "missing.json")),
             (bad, "cannot read %s: not JSON at line 1, column 29: expected ',' or '}' in an object" % bad),
             (not_sqlite, "cannot read %s: not an SQLite database" % not_sqlite),
             (tmp_path, "cannot read %s: Is a directory" % tmp_path),
             (empty, "no NVTX events in %s" % empty)]
    for path, why in cases:
        result = nvtxshim("report", path)
        assert (result.returncode, result.stdout, result.stderr) == (1, "", "nvtxshim: report: %s\n" % why)
    for args in (("report",), ("report", "a.json", "b.json"), ("report", "--slowest", "x", "a.json"),
                 ("report", "--frobnicate", "a.json"), ("report", "--budget", "33", "a.json"),
                 ("report", "a.json", "--budget"), ("convert", "in.sqlite"), ("convert", "-x", "a", "b")):
        result = nvtxshim(*args)
        assert result.returncode == 2 and result.stdout == "" and result.stderr.count("\n") == 1
        assert result.stderr.startswith("nvtxshim: %s: " % args[0]) and "--help)" in result.stderr


@pytest.mark.parametrize("command", ["report", "convert", "diff", "top"])
def test_help_is_a_manual_page_on_stdout(command):
    result = nvtxshim(command, "--help")
    assert result.returncode == 0 and result.stderr == ""
    headings = [line for line in result.stdout.splitlines() if line and not line[0].isspace()]
    assert headings == ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "EXAMPLES"]
    assert "    nvtxshim %s - " % command in result.stdout
    assert nvtxshim(command, "x", "-h").stdout == result.stdout


# ---- convert --------------------------------------------------------------------------------

def test_convert_gives_the_exports_nvtx_ranges_in_time_order(runs, tmp_path):
    out = tmp_path / "converted.json"
    result, events = convert(runs["database"], out)
    exported = export_events(runs["database"])
    assert all(e[4] is not None for e in exported if e[0] != MARK), "an NVTX range was left open"
    # start/end ranges (the frames here) are async pairs
    begun = collections.Counter(e["name"] for e in events if e["ph"] == "b" and e["cat"] not in NOT_NVTX)
    assert not collections.Counter(e[2] for e in exported if e[0] == START_END) - begun
    assert sum(e["ph"] in ("b", "e") for e in events if e.get("cat") == "nvtxshim"
               and e["name"].startswith("frame ")) == 2 * FRAMES
    joined, _ = traceformat.join_async(events)
    nvtx = [e for e in joined if e["ph"] in ("X", "i") and e["cat"] not in NOT_NVTX]
    assert collections.Counter((e["ph"], e["cat"], e["name"]) for e in nvtx) == collections.Counter(
        ("i" if e[0] == MARK else "X", e[1], e[2]) for e in exported)
    # times in microseconds, exactly nsys's nanoseconds; pid and tid from its global thread ids
    exact = {(e[2], e[3] / 1000.0, (e[4] - e[3]) / 1000.0, (e[5] >> 24) & 0xFFFFFF, e[5] & 0xFFFFFF)
             for e in exported if e[0] != MARK}
    assert {(e["name"], e["ts"], e["dur"], e["pid"], e["tid"]) for e in nvtx if e["ph"] == "X"} == exact
    # the recorder's args: the category's name and the payload
    bulk = [e for e in nvtx if e["name"] == "libusb_bulk_transfer ep=0x81 IN 9216B"]
    assert len(bulk) == FRAMES and all(e["args"] == {"category": "transfer", "payload": 9216} for e in bulk)
    # OS runtime calls, on the harness's threads; names of the processes and threads that have events
    lines = result.stderr.splitlines()
    if runs["osrt"]:
        with sqlite3.connect(runs["database"]) as db:
            calls = db.execute("SELECT count(*) FROM OSRT_API").fetchone()[0]
        assert calls > 0 and sum(e.get("cat") == "osrt" for e in joined) == calls
        harness_pid = next(e["pid"] for e in nvtx)
        assert any(e.get("cat") == "osrt" and e["pid"] == harness_pid for e in events)
        assert any(line.startswith("nvtxshim: convert: not converted: ") and "OSRT_CALLCHAINS" in line
                   for line in lines)
    else:
        calls = 0
        assert "nvtxshim: convert: no OSRT_API table: OS runtime calls skipped (profile with -t osrt " \
               "for them)" in lines
    named = {e["pid"] for e in events if e["ph"] == "M"}
    assert named and named <= {e["pid"] for e in events if e["ph"] != "M"}
    # Processes are named as PROCESSES names them. What nsys 2022.4 lists there varies: on a quiet
    # machine the processes it started (not the harness they exec'd), in a loaded run every process
    # on the machine (~150 rows), the harness among them by its kernel name cut to 15 characters
    # ("harness_physica"), which convert completes on purpose from the one program path in the
    # export's strings that starts with it (cli/readers/sqlite_names.c).
    assert "thread_name" in {e["name"] for e in events if e["ph"] == "M"}
    with sqlite3.connect(runs["database"]) as db:
        processes = dict(db.execute("SELECT pid, name FROM PROCESSES"))
        strings = [row[0] for row in db.execute("SELECT value FROM StringIds") if row[0]]
    programs = {s.rsplit("/", 1)[1] for s in strings if "/" in s}
    def completed(name):
        whole = {p for p in programs if len(name) == 15 and len(p) > 15 and p.startswith(name)
                 and not set(p) & set(" \t\n")}
        return whole.pop() if len(whole) == 1 else name
    process_names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert process_names == {pid: completed(processes[pid]) for pid in process_names}
    # what this export lacks, one line each, and what was written
    assert all(line.startswith("nvtxshim: convert: ") for line in lines)
    assert "nvtxshim: convert: no CUPTI_ACTIVITY_KIND_KERNEL table: CUDA kernels skipped " \
           "(none ran, or not profiled with -t cuda)" in lines
    assert any(line.startswith("nvtxshim: convert: no CUPTI_ACTIVITY_KIND_MEMCPY table") for line in lines)
    assert lines[-1].startswith("nvtxshim: convert: wrote %s: %d NVTX ranges, 0 marks, %d OS runtime "
                                "calls" % (out, len(exact), calls))


def test_report_on_the_converted_trace_is_the_report_on_the_export(runs, tmp_path):
    out = tmp_path / "converted.json"
    convert(runs["database"], out)
    from_json = nvtxshim("report", out)
    assert from_json.returncode == 0 and from_json.stderr == ""
    assert from_json.stdout == nvtxshim("report", runs["database"]).stdout


def test_convert_maps_gpu_work_when_the_export_has_it(runs, tmp_path):
    # No GPU here, so nsys records no CUDA activity: the export gets the CUPTI tables nsys
    # 2022.4 writes with -t cuda (the columns its own gputrace report reads), with a kernel and
    # a copy made up for this test, on device 0 stream 7 of the harness's process.
    database = tmp_path / "gpu.sqlite"
    shutil.copy(runs["database"], database)
    with sqlite3.connect(database) as db:
        pid_of = db.execute("SELECT globalTid FROM NVTX_EVENTS WHERE eventType = 59 LIMIT 1").fetchone()[0]
        global_pid = pid_of & ~0xFFFFFF
        name_id = db.execute("SELECT max(id) + 1 FROM StringIds").fetchone()[0]
        db.execute("INSERT INTO StringIds VALUES (?, ?)", (name_id, 'conv3x3(float const*, float*, int, int)'))
        db.execute("INSERT INTO StringIds VALUES (?, ?)", (name_id + 1, "conv3x3"))
        db.execute("""CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
            deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
            correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL,
            shortName INTEGER NOT NULL, mangledName INTEGER, gridX INTEGER, gridY INTEGER, gridZ INTEGER,
            blockX INTEGER, blockY INTEGER, blockZ INTEGER, registersPerThread INTEGER)""")
        db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (2000000, 2004500, 0, 1, 7, 41, ?, ?, ?, "
                   "NULL, 8, 6, 1, 16, 16, 1, 32)", (global_pid, name_id, name_id + 1))
        db.execute("""CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL,
            deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
            correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL,
            deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER)""")
        db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (1990000, 1991000, 0, 1, 7, 40, ?, 9216, 1, "
                   "NULL, 0, 2)", (global_pid,))
    out = tmp_path / "gpu.json"
    result, events = convert(database, out)
    assert "CUPTI_ACTIVITY_KIND_KERNEL" not in result.stderr
    assert "no CUPTI_ACTIVITY_KIND_MEMSET table" in result.stderr
    gpu = [e for e in events if e.get("cat") in ("cuda kernel", "cuda memcpy")]
    pid, row = (global_pid >> 24) & 0xFFFFFF, 0x800007
    assert gpu == [
        {"name": "CUDA memcpy Host-to-Device", "cat": "cuda memcpy", "ph": "X", "ts": 1990.0, "dur": 1.0,
         "pid": pid, "tid": row, "args": {"device": 0, "stream": 7, "correlation": 40, "bytes": 9216,
                                          "src": "Pageable", "dst": "Device"}},
        {"name": "conv3x3(float const*, float*, int, int)", "cat": "cuda kernel", "ph": "X", "ts": 2000.0,
         "dur": 4.5, "pid": pid, "tid": row, "args": {"device": 0, "stream": 7, "correlation": 41}}]
    assert {"name": "thread_name", "ph": "M", "pid": pid, "tid": row,
            "args": {"name": "CUDA stream 7 (device 0)"}} in events
    assert "1 GPU kernels, 1 GPU copies" in result.stderr.splitlines()[-1]


def test_convert_reads_an_export_with_fewer_tables_and_columns_and_says_so(tmp_path):
    # Another nsys version's export, as convert may meet it: NVTX_EVENTS without domainId,
    # textId or category, strings inline; no OSRT_API, ThreadNames or PROCESSES; awkward names.
    database = tmp_path / "old.sqlite"
    with sqlite3.connect(database) as db:
        db.execute('CREATE TABLE NVTX_EVENTS (start INTEGER, "end" INTEGER, eventType INTEGER, '
                   'text TEXT, globalTid INTEGER)')
        tid = (1 << 48) | (4242 << 24) | 4243
        db.executemany("INSERT INTO NVTX_EVENTS VALUES (?, ?, ?, ?, ?)", [
            (5000, 9000, PUSH_POP, 'quote " backslash \\ tab \t caf\u00e9', tid),
            (1000, 3000, START_END, "first", tid),
            (2000, None, PUSH_POP, "never closed", tid),
            (4000, None, MARK, "a mark", tid)])
    out = tmp_path / "old.json"
    result, events = convert(database, out)
    lines = result.stderr.splitlines()
    for said in ('NVTX_EVENTS has no domainId column: every event in domain "default"',
                 "no OSRT_API table: OS runtime calls skipped (profile with -t osrt for them)",
                 "no ThreadNames table: threads unnamed (NVTX thread names kept)",
                 "no PROCESSES table: processes named after their main thread",
                 "left out 1 NVTX ranges never closed and 0 events without a message"):
        assert "nvtxshim: convert: " + said in lines
    assert [(e["ph"], e["name"], e["ts"], e.get("dur"), e["pid"], e["tid"], e["cat"]) for e in events] == [
        ("b", "first", 1.0, None, 4242, 4243, "default"),
        ("e", "first", 3.0, None, 4242, 4243, "default"),
        ("i", "a mark", 4.0, None, 4242, 4243, "default"),
        ("X", 'quote " backslash \\ tab \t caf\u00e9', 5.0, 4.0, 4242, 4243, "default")]


def test_convert_refuses_what_is_not_an_nsys_export(runs, tmp_path):
    out = tmp_path / "out.json"
    result = nvtxshim("convert", runs["trace"], out)
    assert result.returncode == 1 and not out.exists()
    assert result.stderr == ("nvtxshim: convert: %s is not an nsys export (an SQLite file from nsys "
                             "export --type sqlite, or a .nsys-rep report)\n" % runs["trace"])
    result = nvtxshim("convert", runs["database"], tmp_path / "no" / "such" / "dir.json")
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == "nvtxshim: convert: cannot write %s: No such file or " \
                                             "directory" % (tmp_path / "no" / "such" / "dir.json")


def test_a_name_the_kernel_cut_is_completed_from_the_export(runs, tmp_path):
    # The kernel keeps 15 characters of a thread's name: nsys exports the harness's main thread
    # as "harness_physica". The export's strings have the program's path (a call chain's module,
    # under -t osrt): the page's heading and convert's process name say "harness_physical". The
    # export is the real one, given the row nsys writes for such a thread where this run's has
    # none.
    database = tmp_path / "named.sqlite"
    shutil.copy(runs["database"], database)
    with sqlite3.connect(database) as db:
        [(global_tid,)] = db.execute("SELECT DISTINCT globalTid FROM NVTX_EVENTS WHERE globalTid IS NOT NULL "
                                     "LIMIT 1").fetchall()
        pid = (global_tid >> 24) & 0xFFFFFF
        main_thread = (global_tid & ~0xFFFFFF) | pid
        ids = [row[0] for row in db.execute("SELECT id FROM StringIds")]
        cut, path = max(ids) + 1, max(ids) + 2
        db.execute("INSERT INTO StringIds VALUES (?, 'harness_physica')", (cut,))
        db.execute("INSERT INTO StringIds VALUES (?, ?)", (path, program("harness_physical")))
        db.execute("DELETE FROM ThreadNames WHERE globalTid = ?", (main_thread,))
        db.execute("INSERT INTO ThreadNames (nameId, priority, globalTid) VALUES (?, 0, ?)", (cut, main_thread))
        db.execute("DELETE FROM PROCESSES WHERE pid = ?", (pid,))
    page = tmp_path / "named.html"
    result = nvtxshim("report", database, "--html", page)
    assert result.returncode == 0, result.stderr
    assert "Frames of process %d (harness_physical): %d" % (pid, FRAMES) in page.read_text()
    out = tmp_path / "named.json"
    assert nvtxshim("convert", database, out).returncode == 0
    names = {e["pid"]: e["args"]["name"] for e in json.loads(out.read_text())
             if e.get("name") == "process_name"}
    assert names[pid] == "harness_physical"


def test_convert_and_report_read_an_export_from_a_pipe_and_gzipped(runs, tmp_path):
    # SQLite reads files: an export that comes through a pipe, or gzipped, goes to a temporary
    # file first (removed after); the result is the same as from the file itself.
    import gzip
    expected_out = tmp_path / "from-file.json"
    assert nvtxshim("convert", runs["database"], expected_out).returncode == 0
    packed = tmp_path / "export.sqlite.gz"
    with open(runs["database"], "rb") as plain, gzip.open(packed, "wb") as f:
        shutil.copyfileobj(plain, f)
    leftovers_before = set(os.listdir(tmp_path))
    for source in ("cat '%s'" % runs["database"], "cat '%s'" % packed):
        out = tmp_path / "piped.json"
        done = subprocess.run("%s | '%s' convert - '%s'" % (source, program("nvtxshim"), out),
                              shell=True, env=dict(clean_env(), TMPDIR=str(tmp_path)),
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert out.read_bytes() == expected_out.read_bytes(), source
        assert set(os.listdir(tmp_path)) == leftovers_before | {"piped.json"}
        report = subprocess.run("%s | '%s' report -" % (source, program("nvtxshim")), shell=True,
                                env=clean_env(), capture_output=True, text=True, timeout=300)
        assert report.returncode == 0 and report.stdout == nvtxshim("report", runs["database"]).stdout


def test_report_reads_both_forms_of_the_trace_format_and_decodes_strings(tmp_path):
    # {"traceEvents":[...]} with other members around it, and the bare array form; escapes,
    # surrogate pairs and nested args; events that are not ranges or marks are passed over.
    events = [{"name": "thread_name", "ph": "M", "pid": 1, "tid": 2, "args": {"name": "cam\u00e9ra"}},
              {"name": "caf\u00e9 \U0001F600 \"q\" \\", "cat": "app", "ph": "X", "ts": 1, "dur": 2.5e0,
               "pid": 1, "tid": 2, "args": {"nested": {"list": [1, 2.5e-3, None, True, False, "x"]}}},
              {"name": "counter", "cat": "app", "ph": "C", "ts": 2, "pid": 1, "tid": 2, "args": {"v": 1}},
              {"name": "tick", "cat": "app", "ph": "i", "s": "t", "ts": 3, "pid": 1, "tid": 2}]
    wrapped = tmp_path / "wrapped.json"
    wrapped.write_text(json.dumps({"otherData": {"a": [{}]}, "traceEvents": events,
                                   "displayTimeUnit": "ns"}, ensure_ascii=True))
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(events, ensure_ascii=False), encoding="utf-8")
    outputs = [nvtxshim("report", path) for path in (wrapped, bare)]
    for result in outputs:
        assert result.returncode == 0 and result.stderr == "", result.stderr
        assert names_table(result.stdout) == {("app", 'caf\u00e9 \U0001F600 "q" \\'): 1}
        lines = result.stdout.splitlines()
        marks = lines.index("== NVTX marks per kind (each number as N), with the first texts of each")
        # A kind whose one text has no number is its own example.
        assert lines[marks + 1:marks + 4] == ["  domain      count  kind", "  app             1  tick", ""]
    assert outputs[0].stdout == outputs[1].stdout


# ---- the trace format: async pairs, nesting ---------------------------------------------------

def frame_pairs_trace():
    """A bare-array trace as the recorder writes one, by hand: frames are async pairs whose end
    carries the kernel figures (frame 1's end is on another thread and comes first in the file,
    as a thread's part of the file may; its begin has figures of its own, which the end's
    replace one by one); a capture window in another category with the same id as frame 1, and
    one in another process with the same id again; frame 3 still open and an end whose begin is
    not there (a process killed mid-frame)."""
    def pair_half(ph, name, cat, ts, tid, id, pid=7, **args):
        return {"name": name, "cat": cat, "ph": ph, "ts": ts, "pid": pid, "tid": tid, "id": id, "args": args}
    return [
        {"name": "process_name", "ph": "M", "pid": 7, "tid": 7, "args": {"name": "loop"}},
        pair_half("e", "frame 1", "nvtxshim", 11000.0, 9, 1, offcpu_runnable_ns=2500000,
                  offcpu_blocked_ns=4000000, offcpu_preemptions=3),
        pair_half("b", "capture", "app", 500.0, 7, 1),
        pair_half("b", "capture", "app", 600.0, 8, 1, pid=8),
        pair_half("b", "frame 1", "nvtxshim", 1000.0, 7, 1, offcpu_runnable_ns=1, offcpu_faults=12),
        {"name": "XSync", "cat": "x11", "ph": "X", "ts": 2000.0, "dur": 1000.0, "pid": 7, "tid": 7},
        pair_half("e", "capture", "app", 10500.0, 7, 1),
        pair_half("e", "capture", "app", 10600.0, 8, 1, pid=8),
        pair_half("b", "frame 2", "nvtxshim", 11000.0, 7, 2),
        pair_half("e", "frame 2", "nvtxshim", 16000.0, 7, 2, offcpu_runnable_ns=500000,
                  offcpu_blocked_ns=1000000, offcpu_preemptions=1, offcpu_faults=1),
        pair_half("b", "frame 3", "nvtxshim", 16000.0, 7, 3),
        pair_half("e", "frame 9", "nvtxshim", 12000.0, 7, 99)]


FRAME_PAIRS_REPORT = [
    NAMES_HEADING,
    "  domain    name                                 count       mean        p50        p99        max",
    "  app       capture                                  2    10000.0    10000.0    10000.0    10000.0",
    "  nvtxshim  frame N                                  2     7500.0     5000.0    10000.0    10000.0",
    "  x11       XSync                                    1     1000.0     1000.0     1000.0     1000.0",
    "",
    PER_FRAME + ": time in X11 and the rest; off CPU (kernel probe): runnable, blocked",
    "                     total       x11      rest  runnable   blocked",
    "  mean of 2          7.500     0.500     7.000     1.500     2.500",
    "  p50                5.000     0.000     5.000     0.500     1.000",
    "  p99               10.000     1.000     9.000     2.500     4.000",
    "  max               10.000     1.000     9.000     2.500     4.000",
    "  slowest frames:",
    "  frame 1           10.000     1.000     9.000     2.500     4.000  (3 preemptions, 12 faults)",
    "  frame 2            5.000     0.000     5.000     0.500     1.000  (1 preemption, 1 fault)",
    "",
    "== Capture windows: 2",
    "  capture@app                  10.000 ms  frames 1-1",
    "  capture@app                  10.000 ms  frames 1-1"]


def test_report_joins_the_async_frame_pairs_of_a_bare_array_trace(tmp_path):
    events = frame_pairs_trace()
    lines = [json.dumps(e, separators=(",", ":")) + ",\n" for e in events]
    # cut short: after a whole event's ",\n", blank padding between parts and at the end
    cut = tmp_path / "cut.json"
    cut.write_text("[\n" + "".join(lines[:5]) + " " * 300 + "".join(lines[5:]) + " " * 4096)
    assert traceformat.parse_trace_text(cut.read_text()) == events
    result = nvtxshim("report", cut)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == FRAME_PAIRS_REPORT
    assert result.stderr.splitlines() == [
        "nvtxshim: report: %s ends before its closing ] (the process was killed, or left through _exit "
        "before NVTXSHIM_TRACE could finish it): read %d events" % (cut, len(events)),
        'nvtxshim: report: %s: 1 async range ("ph":"b") never ended, left out (open when the trace '
        'stopped)' % cut,
        'nvtxshim: report: %s: 1 async end ("ph":"e") without a begin, left out' % cut]
    # finished as the recorder finishes one: the last comma a space, then ]
    finished = tmp_path / "finished.json"
    finished.write_text(cut.read_text().rstrip()[:-1] + " \n]\n")
    assert json.loads(finished.read_text()) == events
    result = nvtxshim("report", finished)
    assert result.returncode == 0 and result.stdout.splitlines() == FRAME_PAIRS_REPORT
    assert result.stderr.splitlines() == [
        'nvtxshim: report: %s: 1 async range ("ph":"b") never ended, left out (open when the trace '
        'stopped)' % finished,
        'nvtxshim: report: %s: 1 async end ("ph":"e") without a begin, left out' % finished]


def test_report_reads_the_older_object_form_whole_or_cut_short(tmp_path):
    events = frame_pairs_trace()
    whole = tmp_path / "whole.json"
    whole.write_text(json.dumps({"traceEvents": events}))
    cut = tmp_path / "cut.json"
    cut.write_text('{"traceEvents":[\n' + "".join(json.dumps(e) + ",\n" for e in events) + " " * 100)
    for path in (whole, cut):
        result = nvtxshim("report", path)
        assert result.returncode == 0 and result.stdout.splitlines() == FRAME_PAIRS_REPORT, result.stderr
        said = result.stderr.splitlines()
        assert len(said) == (3 if path == cut else 2) and "never ended" in said[-2]
    assert said[0].startswith("nvtxshim: report: %s ends before its closing ]} (" % cut)


def test_convert_writes_start_end_ranges_as_async_pairs_joined_by_id(tmp_path):
    # NVTX start/end ranges may end on another thread (endGlobalTid, NULL for the one that started
    # them) and overlap each other: an async pair each, the begin with the args on the thread that
    # started the range, the end on the one that ended it, joined by an id of its own.
    database = tmp_path / "start_end.sqlite"
    main, worker = (1 << 48) | (500 << 24) | 500, (1 << 48) | (500 << 24) | 501
    with sqlite3.connect(database) as db:
        db.execute('CREATE TABLE NVTX_EVENTS (start INTEGER, "end" INTEGER, eventType INTEGER, '
                   'text TEXT, globalTid INTEGER, endGlobalTid INTEGER, uint64Value INTEGER)')
        db.executemany("INSERT INTO NVTX_EVENTS VALUES (?, ?, ?, ?, ?, ?, ?)", [
            (1000, 9000, START_END, "request", main, worker, 7),
            (2000, 12000, START_END, "overlapping", main, None, None),
            (3000, 4000, PUSH_POP, "inside", main, None, None),
            (12000, 12000, START_END, "empty", worker, None, None)])
    result, events = convert(database, tmp_path / "start_end.json")
    assert [(e["ph"], e["name"], e["ts"], e["tid"]) for e in events] == [
        ("b", "request", 1.0, 500), ("b", "overlapping", 2.0, 500), ("X", "inside", 3.0, 500),
        ("e", "request", 9.0, 501), ("e", "overlapping", 12.0, 500), ("b", "empty", 12.0, 501),
        ("e", "empty", 12.0, 501)]
    ids = {(e["name"], e["ph"]): e["id"] for e in events if e["ph"] in ("b", "e")}
    assert len(set(ids.values())) == 3 and all(ids[(name, "b")] == ids[(name, "e")]
                                               for name in ("request", "overlapping", "empty"))
    joined, _ = traceformat.join_async(events)
    ranges = [(e["name"], e["ts"], e["dur"], e["tid"], e.get("end_tid"), e.get("args")) for e in joined]
    assert sorted(ranges) == [
        ("empty", 12.0, 0.0, 501, 501, {}), ("inside", 3.0, 1.0, 500, None, None),
        ("overlapping", 2.0, 10.0, 500, 500, {}), ("request", 1.0, 8.0, 500, 501, {"payload": 7})]
    assert result.stderr.splitlines()[-1].endswith("3 of the ranges as async pairs (\"ph\":\"b\"/\"e\")")
    report = nvtxshim("report", tmp_path / "start_end.json")
    assert report.returncode == 0 and report.stderr == ""
    assert names_table(report.stdout) == {("default", name): 1 for name in ("request", "overlapping",
                                                                            "inside", "empty")}


def test_convert_writes_a_range_that_crosses_another_on_its_thread_as_an_async_pair(tmp_path):
    # Push/pop ranges nest on their thread, but an export may hold two that cross (a range popped
    # while one pushed after it was open), and OS runtime calls are timed apart from NVTX ranges.
    # Complete events must nest for a viewer: the one that starts inside another and ends after
    # it becomes an async pair; the rest, and the same range on another thread, stay complete.
    database = tmp_path / "crossing.sqlite"
    tid, other = (1 << 48) | (600 << 24) | 600, (1 << 48) | (600 << 24) | 601
    with sqlite3.connect(database) as db:
        db.execute('CREATE TABLE NVTX_EVENTS (start INTEGER, "end" INTEGER, eventType INTEGER, '
                   'text TEXT, globalTid INTEGER)')
        db.executemany("INSERT INTO NVTX_EVENTS VALUES (?, ?, ?, ?, ?)", [
            (1000, 1500, PUSH_POP, "first child", tid),  # starts with outer: outer holds it
            (1000, 5000, PUSH_POP, "outer", tid),
            (2000, 3000, PUSH_POP, "nested", tid),
            (4000, 8000, PUSH_POP, "crossing", tid),
            (4000, 8000, PUSH_POP, "alone", other)])
        db.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)")
        db.executemany("INSERT INTO StringIds VALUES (?, ?)", [(1, "ioctl"), (2, "read")])
        db.execute('CREATE TABLE OSRT_API (start INTEGER, "end" INTEGER, nameId INTEGER, globalTid INTEGER)')
        db.executemany("INSERT INTO OSRT_API VALUES (?, ?, ?, ?)", [
            (4500, 6000, 1, tid),  # from inside outer to after its end
            (6000, 7000, 2, tid)])  # after outer: inside crossing, which is not complete
    out = tmp_path / "crossing.json"
    result, events = convert(database, out)
    assert [(e["ph"], e["name"], e["ts"], e["tid"]) for e in events if e["ph"] != "M"] == [
        ("X", "first child", 1.0, 600), ("X", "outer", 1.0, 600), ("X", "nested", 2.0, 600),
        ("b", "crossing", 4.0, 600), ("X", "alone", 4.0, 601), ("b", "ioctl", 4.5, 600),
        ("e", "ioctl", 6.0, 600), ("X", "read", 6.0, 600), ("e", "crossing", 8.0, 600)]
    assert {e["cat"] for e in events if e["name"] in ("ioctl", "read")} == {"osrt"}
    assert result.stderr.splitlines()[-1] == (
        "nvtxshim: convert: wrote %s: 5 NVTX ranges, 0 marks, 2 OS runtime calls, 0 CUDA API calls, "
        "0 GPU kernels, 0 GPU copies, 0 memsets, 0 NVTX projections, 0 launch arrows, 0 thread states, "
        '0 thread names; 2 of the ranges as async pairs ("ph":"b"/"e")' % out)
    # report reads the pairs back: the same ranges, the OS runtime call still not NVTX
    from_json = nvtxshim("report", out)
    assert from_json.returncode == 0 and from_json.stderr == ""
    assert from_json.stdout == nvtxshim("report", database).stdout
    assert set(names_table(from_json.stdout)) == {("default", name) for name in (
        "first child", "outer", "nested", "crossing", "alone")}


# ---- device files: camera, serial and HID columns; capture-to-actuation latency -----------------

def camera_rig_events():
    """A camera rig's loop by hand, in microseconds: four 10 ms frames on one thread; what each
    holds is said beside it. Each camera frame is a DQBUF and its "frame age" range, from the
    buffer's capture to its dequeue (payload: the age in ns); actuations are serial writes, USB
    transfers out (libusb and usbfs) and an URB in flight (an actuation, but not time in a call).
    As (kind, domain, name, start, end, payload): kind "range", "age" (the frame age) or "mark"."""
    dq = "VIDIOC_DQBUF /dev/video0 640x480 YUYV buf=%d"
    return [
        ("frame", "nvtxshim", "frame 1", 1000, 11000, 1),
        ("frame", "nvtxshim", "frame 2", 11000, 21000, 2),
        ("frame", "nvtxshim", "frame 3", 21000, 31000, 3),
        ("frame", "nvtxshim", "frame 4", 31000, 41000, 4),
        # frame 1: an actuation before any capture (no latency), then a frame dequeued
        ("range", "serial", "write /dev/ttyACM0 12B", 2000, 2500, 12),
        ("range", "v4l2", dq % 0, 9000, 9500, 614400),
        ("age", "v4l2", "frame age /dev/video0", 8000, 9500, 1500000),
        # frame 2: the write acts on frame 1's camera frame (captured at 8 ms): 13 - 8 = 5 ms;
        # the driver dropped 2 frames
        ("mark", "v4l2", "dropped 2 frames /dev/video0 at seq=1", 11500, 11500, 2),
        ("range", "serial", "write /dev/ttyACM0 12B", 12000, 13000, 12),
        ("range", "serial", "read /dev/ttyACM0 64B", 13000, 14000, 64),
        # frame 3: a frame captured at 21 ms, a transfer in (no actuation), a command out that
        # acts on it (23.6 - 21 = 2.6 ms), then a usbfs transfer out with no new frame
        ("range", "v4l2", dq % 1, 22000, 22400, 614400),
        ("age", "v4l2", "frame age /dev/video0", 21000, 22400, 1400000),
        ("range", "usb", "libusb_bulk_transfer ep=0x81 IN 9216B", 22500, 22900, 9216),
        ("range", "usb", "libusb_bulk_transfer ep=0x02 OUT 8B", 23000, 23600, 8),
        ("range", "usb", "USBDEVFS_BULK ep=0x02 OUT 64B", 24000, 24500, 64),
        # frame 4: two frames dequeued (captured at 30 and 32.9 ms; the loop catching up), an
        # URB out submitted at 34 ms and reaped at 36 ms acts on the newer: 36 - 32.9 = 3.1 ms
        ("mark", "v4l2", "dropped 1 frame /dev/video0 at seq=4", 31500, 31500, 1),
        ("range", "v4l2", dq % 2, 32000, 32500, 614400),
        ("age", "v4l2", "frame age /dev/video0", 30000, 32500, 2500000),
        ("range", "v4l2", dq % 3, 33000, 33200, 614400),
        ("age", "v4l2", "frame age /dev/video0", 32900, 33200, 300000),
        ("async", "usb", "USBDEVFS_SUBMITURB ep=0x02 BULK OUT 512B", 34000, 36000, 512)]


def camera_rig_trace(path, events):
    """EVENTS as the recorder writes them: push/pop ranges complete, frames, frame ages and URBs
    in flight async pairs (the frame age from the capture to the dequeue), marks instant."""
    out, next_id = [], 0
    for kind, domain, name, start, end, payload in events:
        if kind in ("frame", "age", "async"):
            next_id += 1
            out.append({"name": name, "cat": domain, "ph": "b", "ts": start / 1.0, "pid": 7, "tid": 7,
                        "id": next_id, "args": {"payload": payload}})
            out.append({"name": name, "cat": domain, "ph": "e", "ts": end / 1.0, "pid": 7, "tid": 7,
                        "id": next_id})
        elif kind == "mark":
            out.append({"name": name, "cat": domain, "ph": "i", "s": "t", "ts": start / 1.0, "pid": 7,
                        "tid": 7, "args": {"payload": payload, "category": "warning"}})
        else:
            out.append({"name": name, "cat": domain, "ph": "X", "ts": start / 1.0,
                        "dur": (end - start) / 1.0, "pid": 7, "tid": 7, "args": {"payload": payload}})
    path.write_text(json.dumps(out))
    return path


def camera_rig_export(path, events):
    """EVENTS as nsys 2022.4 exports them: nanoseconds, domains by id (eventType 75), push/pop
    ranges 59, start/end ranges 60, marks 34, the payload in uint64Value. NVTX cannot begin a
    range in the past, so a frame age is a start/end range at the dequeue (here: from the DQBUF's
    start to its end) and only its payload tells the age."""
    domains = {}
    rows = []
    tid = (1 << 48) | (7 << 24) | 7
    dequeues = {end: start for kind, _, name, start, end, _ in events
                if kind == "range" and name.startswith("VIDIOC_DQBUF")}
    for kind, domain, name, start, end, payload in events:
        domain_id = domains.setdefault(domain, len(domains) + 1)
        if kind == "age":
            start = dequeues[end]
        event_type = {"frame": START_END, "age": START_END, "async": START_END, "mark": MARK}.get(kind, PUSH_POP)
        rows.append((start * 1000, None if kind == "mark" else end * 1000, event_type, name, tid,
                     domain_id, payload))
    rows += [(0, None, 75, domain, tid, domain_id, None) for domain, domain_id in domains.items()]
    with sqlite3.connect(path) as db:
        db.execute('CREATE TABLE NVTX_EVENTS (start INTEGER, "end" INTEGER, eventType INTEGER, '
                   'text TEXT, globalTid INTEGER, domainId INTEGER, uint64Value INTEGER)')
        db.executemany("INSERT INTO NVTX_EVENTS VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    return path


CAMERA_RIG_FRAMES = [
    PER_FRAME + ": time in USB, camera (V4L2), serial and the rest; latency: capture to actuation",
    "                     total       usb    camera    serial      rest   latency",
    "  mean of 4         10.000     0.375     0.400     0.625     8.600     3.567",
    "  p50               10.000     0.000     0.400     0.000     8.100     3.100",
    "  p99               10.000     1.500     0.700     2.000     9.300     5.000",
    "  max               10.000     1.500     0.700     2.000     9.300     5.000",
    "  (latency for 3 of the 4 frames: the others acted on no new camera frame)",
    "  camera frames dropped: 3 (frame 2: 2, frame 4: 1)",
    "  slowest frames:",
    "  frame 1           10.000     0.000     0.500     0.500     9.000         -",
    "  frame 2           10.000     0.000     0.000     2.000     8.000     5.000  (2 camera frames dropped)",
    "  frame 3           10.000     1.500     0.400     0.000     8.100     2.600",
    "  frame 4           10.000     0.000     0.700     0.000     9.300     3.100  (1 camera frame dropped)",
    "",
    LATENCY_HEADING,
    "                      mean       p50       p99       max",
    "  3 pairs            3.567     3.100     5.000     5.000",
    "  (4 camera frames dequeued, 1 not acted on; 5 actuations, 2 on no new frame)"]


def from_frames_on(output):
    lines = output.splitlines()
    return lines[lines.index(CAMERA_RIG_FRAMES[0]):]


def test_report_gives_camera_and_serial_columns_and_the_capture_to_actuation_latency(tmp_path):
    # Per frame: the camera's and the serial port's time like any domain's (the frame age ranges,
    # which start at the capture, left out); the latency from the capture of the newest frame the
    # loop had dequeued to the end of the first actuation after that dequeue, each camera frame
    # consumed once: frame 1 acts before any capture (no latency), frame 3's second transfer out
    # has no new frame, frame 4's older frame is never acted on. Drops counted per frame.
    result = nvtxshim("report", camera_rig_trace(tmp_path / "rig.json", camera_rig_events()))
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert from_frames_on(result.stdout) == CAMERA_RIG_FRAMES
    # the device files' calls by function and device; a frame age keeps its whole name
    table = names_table(result.stdout)
    assert table[("v4l2", "VIDIOC_DQBUF /dev/video0")] == 4
    assert table[("v4l2", "frame age /dev/video0")] == 4
    assert table[("serial", "write /dev/ttyACM0")] == 2 and table[("usb", "USBDEVFS_BULK")] == 1
    # the drops are marks of one kind, singular or plural (they were two)
    assert "  v4l2            2  dropped N frame(s) /dev/video0 at seq=N" in result.stdout.splitlines()


def test_an_i2c_write_is_an_actuation_and_a_register_read_is_not(tmp_path):
    # A rig whose actuator hangs on I2C: each frame reads a sensor register (a write of the
    # register's number, then a read: no actuation) and commands the actuator by a combined
    # write, an SMBus write and a plain write after I2C_SLAVE; each acts on the frame dequeued
    # before it: 4.3 - 1.0, 13.5 - 11.5 and 23.8 - 21.2 ms. A failed transfer (named without its
    # messages) and an SMBus read act on nothing.
    dq = "VIDIOC_DQBUF /dev/video0 640x480 YUYV buf=%d"
    events = [
        ("frame", "nvtxshim", "frame 1", 1000, 11000, 1),
        ("frame", "nvtxshim", "frame 2", 11000, 21000, 2),
        ("frame", "nvtxshim", "frame 3", 21000, 31000, 3),
        ("range", "v4l2", dq % 0, 2000, 2500, 614400),
        ("age", "v4l2", "frame age /dev/video0", 1000, 2500, 1500000),
        ("range", "i2c", "I2C_RDWR /dev/i2c-1 0x48 W1 R2", 3000, 3200, 3),
        ("range", "i2c", "I2C_RDWR /dev/i2c-1 0x60 W3", 4000, 4300, 3),
        ("range", "v4l2", dq % 1, 12000, 12400, 614400),
        ("age", "v4l2", "frame age /dev/video0", 11500, 12400, 900000),
        ("range", "i2c", "I2C_RDWR /dev/i2c-1", 12500, 12600, 0),
        ("range", "i2c", "I2C_SMBUS /dev/i2c-1 0x60 W byte_data cmd=0x01", 13000, 13500, 2),
        ("range", "v4l2", dq % 2, 22000, 22300, 614400),
        ("age", "v4l2", "frame age /dev/video0", 21200, 22300, 1100000),
        ("range", "i2c", "write /dev/i2c-1 0x60 2B", 23000, 23800, 2),
        ("range", "i2c", "I2C_SMBUS /dev/i2c-1 0x48 R word_data cmd=0x00", 24000, 24100, 3)]
    result = nvtxshim("report", camera_rig_trace(tmp_path / "rig.json", events))
    assert result.returncode == 0 and result.stderr == "", result.stderr
    lines = result.stdout.splitlines()
    latency = lines[lines.index(LATENCY_HEADING):]
    assert latency[2] == "  3 pairs            2.633     2.600     3.300     3.300", latency
    assert latency[3].startswith("  (3 camera frames dequeued") and "; 3 actuations" in latency[3], \
        latency


def test_report_reads_the_latency_from_an_nsys_export_as_from_the_trace(tmp_path):
    # Under nsys the frame age sits at the dequeue: the capture is still its end less its payload.
    result = nvtxshim("report", camera_rig_export(tmp_path / "rig.sqlite", camera_rig_events()))
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert from_frames_on(result.stdout) == CAMERA_RIG_FRAMES
    trace = nvtxshim("report", camera_rig_trace(tmp_path / "rig.json", camera_rig_events()))
    # the same tables, the frame ages' durations aside
    assert [line for line in result.stdout.splitlines() if "frame age" not in line] == [
        line for line in trace.stdout.splitlines() if "frame age" not in line]


def test_report_has_no_latency_without_a_camera(tmp_path):
    # Actuations without camera frames: the serial and HID columns, no latency column or section.
    events = [event for event in camera_rig_events() if event[1] != "v4l2"]
    events += [("range", "hid", "write /dev/hidraw0 8B", 5000, 5500, 8),
               ("range", "hid", "read /dev/hidraw0 64B", 25000, 27000, 64)]
    result = nvtxshim("report", camera_rig_trace(tmp_path / "nocam.json", events))
    assert result.returncode == 0 and result.stderr == "", result.stderr
    lines = result.stdout.splitlines()
    start = lines.index(PER_FRAME + ": time in USB, serial, HID and the rest")
    assert lines[start + 1].split() == ["total", "usb", "serial", "hid", "rest"]
    assert lines[start + 2].split() == ["mean", "of", "4", "10.000", "0.375", "0.625", "0.625", "8.375"]
    assert "latency" not in result.stdout and "Capture to actuation" not in result.stdout
    assert "dropped" not in result.stdout


def test_report_says_when_no_actuation_followed_the_camera_frames(tmp_path):
    # Camera frames but nothing out: the camera column, no latency column, the section says so.
    events = [event for event in camera_rig_events()
              if event[1] in ("nvtxshim", "v4l2") or " IN " in event[2]]
    result = nvtxshim("report", camera_rig_trace(tmp_path / "noact.json", events))
    assert result.returncode == 0 and result.stderr == "", result.stderr
    lines = result.stdout.splitlines()
    assert PER_FRAME + ": time in USB, camera (V4L2) and the rest" in lines
    assert lines[-2:] == [
        LATENCY_HEADING,
        "  no actuation after any of the 4 camera frames (USB transfers out, serial or HID writes: 0)"]
