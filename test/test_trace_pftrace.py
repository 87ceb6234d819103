"""The binary trace (NVTXSHIM_TRACE=NAME.pftrace, docs/pftrace.md), checked without Perfetto's
trace processor: test/pftrace_check.py decodes every packet with the schema PyPI's perfetto
package ships compiled for Python and checks what Perfetto's UI relies on (its docstring
lists it). It runs in build/pyenv (scripts/pyenv.sh, run by make test's deps): Debian's
python3 has no protobuf 6.

- the checker itself: a file written with perfetto_trace_pb2 as docs/pftrace.md lays it
  out (test/pftrace_craft.py) passes and reads back as written; one broken in each way
  an encoder could break it fails, naming the problem; the file cut anywhere reads up to
  its last whole packet;
- the test programs (NVTX of its own, USB on the emulated camera, Xlib on Xvfb, the
  stand-in CUDA driver, the harness) write files it passes with no problem;
- fork (a file each, with %p in the path or without), exec, _exit and a failed exec after
  which the process records on, as test_recorder.py has them for the JSON form;
- one deterministic program run twice under a counter for CLOCK_MONOTONIC
  (test/programs/fakeclock.c), once with a .json and once with a .pftrace: the same
  ranges, marks, threads and process (names, domains, times to the ns, args);
- SIGKILL at 25 random moments: every whole packet before the cut decodes, and only
  padding or a partial packet follows the last one."""
import collections
import json
import os
import random
import re
import signal
import subprocess
import time

import pytest

import traceformat
from conftest import ROOT, STUB, command, program, run
import pftracefile
from pftracefile import check, pyenv_python

CRAFTER = os.path.join(ROOT, "test", "pftrace_craft.py")
FAKECLOCK = "test/libfakeclock.so"
FAKE_BASE, FAKE_STEP = 1_000_000_000_000, 1000  # test/programs/fakeclock.c's
TIMEOUT = 60


def craft(variant, path):
    # The crafter's time, like the checker's (pftracefile.TIMEOUT), is not the library's.
    done = subprocess.run([pyenv_python(), CRAFTER, variant, str(path)], capture_output=True,
                          timeout=pftracefile.TIMEOUT)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    with open(str(path) + ".expected.json") as f:
        return json.load(f)


def record_ends(data):
    """The end offsets of the field-1 records (packets) of DATA, read independently of the
    checker: the spec's framing (0x0a, a varint length) and padding (0x10 varints)."""
    ends, pos = [], 0
    while pos < len(data):
        tag = data[pos]
        pos += 1
        if tag == 0x10:
            while data[pos] & 0x80:
                pos += 1
            pos += 1
            continue
        assert tag == 0x0a, "byte %#x at %d is neither a packet nor padding" % (tag, pos - 1)
        length = shift = 0
        while True:
            byte = data[pos]
            pos += 1
            length |= (byte & 0x7f) << shift
            shift += 7
            if not byte & 0x80:
                break
        pos += length
        ends.append(pos)
    return ends


PADDING = re.compile(rb"(?:\x10\x00|\x10\x80\x00)*")


# ---- the checker itself ---------------------------------------------------------------

def summary_ranges(summary):
    return [{k: r[k] for k in ("name", "category", "start_ns", "end_ns", "args", "tid", "async")}
            for r in summary["ranges"]]


def test_the_checker_passes_a_file_laid_out_as_the_spec_says_and_reads_it_back(tmp_path):
    path = tmp_path / "good.pftrace"
    expected = craft("good", path)
    summary = check(path)
    assert summary_ranges(summary) == sorted(expected["ranges"],
                                             key=lambda r: (r["start_ns"], r["end_ns"]))
    assert summary["marks"] == expected["marks"]
    assert summary["threads"] == expected["threads"] and summary["process"] == expected["process"]
    assert summary["open"] == [] and [n for n in summary["notes"] if "track descriptor packets" not in n] == []
    data = path.read_bytes()
    assert summary["packets"] == len(record_ends(data)) and summary["last_whole_end"] == len(data)


BROKEN = ["iid_before_definition", "missing_cleared", "track_without_descriptor", "unbalanced_end",
          "never_ended", "missing_needs", "clock_before_snapshot", "time_backwards",
          "unknown_field", "crossing_page", "iid_two_meanings", "primary_clock", "partial_packet",
          "thread_without_tid", "stale_iid_after_clear", "end_categories_differ"]


@pytest.mark.parametrize("variant", BROKEN)
def test_the_checker_finds_each_broken_rule(tmp_path, variant):
    path = tmp_path / ("%s.pftrace" % variant)
    expected = craft(variant, path)
    summary = check(path, expect_problems=True)
    assert any(expected["problem"] in p for p in summary["problems"]), (
        "%s: no problem saying %r: %s" % (variant, expected["problem"], summary["problems"]))


def test_the_checker_reads_a_cut_file_up_to_its_last_whole_packet(tmp_path):
    path = tmp_path / "good.pftrace"
    craft("good", path)
    data = path.read_bytes()
    ends = record_ends(data)
    rng = random.Random(7001)
    cut_path = tmp_path / "cut.pftrace"
    for cut in sorted(rng.sample(range(ends[1] + 1, len(data)), 25)):
        cut_path.write_bytes(data[:cut])
        summary = check(cut_path, "--cut")
        whole = [end for end in ends if end <= cut]
        assert summary["packets"] == len(whole) and summary["last_whole_end"] == whole[-1], cut
        rest = data[whole[-1]:cut]
        assert summary["tail"]["bytes"] == len(rest)
        # Only padding, then maybe the start of the next packet.
        assert PADDING.match(rest).end() == len(rest) or summary["tail"]["kind"] in (
            "partial packet", "partial tag", "partial padding"), (cut, summary["tail"])
        if cut not in ends and not PADDING.fullmatch(rest):
            # Without --cut a file that ends inside a packet is a problem.
            assert check(cut_path, expect_problems=True)["problems"]


# ---- what the library writes ----------------------------------------------------------

def traced(tmp_path, argv, env=None, device=None, label="t", suffix=".pftrace"):
    trace = tmp_path / (label + suffix)
    result = run(argv, env=dict(env or {}, NVTXSHIM_TRACE=str(trace)), device=device)
    assert result.returncode == 0, result.stderr.decode(errors="replace")[-2000:]
    assert trace.exists(), "no trace file %s" % trace
    return trace, result


def range_names(summary):
    return collections.Counter((r["category"], r["name"]) for r in summary["ranges"])


def json_range_names(path):
    events, _ = traceformat.join_async(traceformat.read_complete_trace(path))
    return collections.Counter((e["cat"], e["name"]) for e in events if e.get("ph") == "X")


def test_the_programs_own_nvtx(tmp_path):
    trace, _ = traced(tmp_path, [program("test/nvtx_user")])
    summary = check(trace)
    names = {r["name"] for r in summary["ranges"]}
    assert {"parent outer", "inner", 'registered "quoted" step', "app interleaved",
            "default interleaved", "crosses threads", "wide r\u00e4nge \u20ac"} <= names
    assert [m["name"] for m in summary["marks"]] == ["a mark", "wide mark", "coloured mark"]
    assert summary["process"]["name"] == "nvtx_user"
    json_trace, _ = traced(tmp_path, [program("test/nvtx_user")], suffix=".json")
    assert range_names(summary) == json_range_names(json_trace)


def outer_ranges(path):
    summary = check(path)
    return summary["process"]["pid"], [r["name"] for r in summary["ranges"]
                                       if r["name"].endswith(("outer", "exec"))]


def test_fork_exec_and_exit(tmp_path):
    # As test_recorder's for the JSON form: fork with and without %p in the path, exec,
    # _exit, a failed exec after which the process records on.
    user = program("test/nvtx_user")
    forked = tmp_path / "forked"
    forked.mkdir()
    result = run([user, "fork"], env={"NVTXSHIM_TRACE": str(forked / "trace-%p.pftrace")})
    assert result.returncode == 0 and result.stderr == b""
    by_file = {f: outer_ranges(forked / f) for f in os.listdir(forked)}
    assert sorted(names for _, names in by_file.values()) == [["child outer"], ["parent outer"]]
    assert {"trace-%d.pftrace" % pid for pid, _ in by_file.values()} == set(by_file)
    kept = tmp_path / "kept"
    kept.mkdir()
    result = run([user, "fork"], env={"NVTXSHIM_TRACE": str(kept / "trace.pftrace")})
    assert result.returncode == 0
    assert outer_ranges(kept / "trace.pftrace")[1] == ["parent outer"]
    [child] = [f for f in os.listdir(kept) if f != "trace.pftrace"]
    assert re.fullmatch(r"trace\.\d+\.pftrace", child), child
    assert outer_ranges(kept / child)[1] == ["child outer"]
    for argv, code in ((["exec", "/bin/echo", "after exec"], 0), (["_exit"], 0),
                       (["exec", "/nonexistent/program"], 1)):
        trace = tmp_path / ("%s.pftrace" % argv[0])
        result = run([user] + argv, env={"NVTXSHIM_TRACE": str(trace)})
        assert result.returncode == code, (argv, result.stderr)
        expected = ["parent outer"] + (["after the failed exec"] if code else [])
        assert outer_ranges(trace)[1] == expected, argv
        trace.unlink()


def test_a_loop_of_traced_calls(tmp_path):
    trace, _ = traced(tmp_path, [program("test/trace_adversary"), "loop", "3000"])
    summary = check(trace)
    counts = range_names(summary)
    assert counts[("default", "work")] == counts[("default", "span")] == 3000
    assert len(summary["marks"]) == 3000
    assert len(summary["sequences"]) >= 1 and summary["bytes"] > 3 * 4096


def test_usb_on_the_emulated_camera(make_device, tmp_path):
    device = make_device(frames=5)
    for mode in ([], ["--async"]):
        trace, _ = traced(tmp_path, [program("usb_capture"), "--frames", "5"] + mode, device=device,
                          label="usb%s" % len(mode))
        summary = check(trace)
        assert ("usb", "libusb_open") in range_names(summary)


@pytest.mark.parametrize("mode", ["socket", "shm"])
def test_xlib_on_xvfb(xserver, tmp_path, mode):
    argv = [program("test/x11_draw"), "4"] + (["--shm"] if mode == "shm" else [])
    trace, _ = traced(tmp_path, argv, env={"DISPLAY": xserver.display})
    summary = check(trace)
    json_trace, _ = traced(tmp_path, argv, env={"DISPLAY": xserver.display}, suffix=".json")
    assert range_names(summary) == json_range_names(json_trace)
    assert range_names(summary)[("x11", "XFlush")] == 5


def test_the_stand_in_cuda_driver(tmp_path):
    argv = [program("test/cuda_copies"), "getproc"]
    trace, _ = traced(tmp_path, argv, env={"LD_LIBRARY_PATH": STUB})
    summary = check(trace)
    json_trace, _ = traced(tmp_path, argv, env={"LD_LIBRARY_PATH": STUB}, suffix=".json")
    assert range_names(summary) == json_range_names(json_trace)
    assert ("cuda", "cuStreamSynchronize") in range_names(summary)


def test_the_harness_with_threads_frames_and_async_transfers(make_device, xserver, tmp_path):
    # Transfers submitted on the main thread end on libusb's event thread, whose buffer may
    # reach the file first: the checker reads in file order and finds every async track
    # described before its first event (an end on another sequence describes it again).
    device = make_device(frames=6)
    argv = [program("harness_physical"), "--frames", "6", "--async", "--threads", "--queue", "6",
            "--use_gui=1"]
    env = {"LD_LIBRARY_PATH": STUB, "DISPLAY": xserver.display,
           "NVTXSHIM_FRAME": "call:libusb_control_transfer"}
    trace, _ = traced(tmp_path, argv, env=env, device=device)
    summary = check(trace)
    frames = [r["name"] for r in summary["ranges"] if r["category"] == "nvtxshim"
              and r["name"].startswith("frame ")]
    assert frames == ["frame %d" % k for k in range(1, 7)]
    assert len(summary["sequences"]) >= 2 and any(r["async"] for r in summary["ranges"])
    assert {c for c, _ in range_names(summary)} >= {"usb", "cuda", "x11", "nvtxshim"}


# ---- the same events as the JSON file of the same run ---------------------------------

def fake_clock_run(tmp_path, suffix):
    trace = tmp_path / ("fake%s" % suffix)
    result = run([program("test/nvtx_user")],
                 env={"LD_PRELOAD": program(FAKECLOCK), "NVTXSHIM_TRACE": str(trace),
                      "NVS_FAKECLOCK_REPORT": "1"})
    assert result.returncode == 0, result.stderr
    reads = re.findall(rb"fakeclock: (\d+) reads", result.stderr)
    return trace, int(reads[-1])


def test_the_same_events_as_the_json_file_of_the_same_run(tmp_path):
    json_trace, json_reads = fake_clock_run(tmp_path, ".json")
    pf_trace, pf_reads = fake_clock_run(tmp_path, ".pftrace")
    summary = check(pf_trace)
    # The two runs read CLOCK_MONOTONIC as often but for one read: the .pftrace header's clock
    # snapshot (docs/pftrace.md: CLOCK_MONOTONIC read with BOOTTIME and REALTIME when the
    # file is opened, at the first event). The JSON header reads no clock. That read took
    # one step of the counter at the time the snapshot holds, HEADER; the reads after it
    # are one step later than in the JSON run, those before it the same.
    header = summary["header_clocks"]["3"]
    assert pf_reads == json_reads + 1, "the .pftrace run read the clock %d times, the .json run %d" % (
        pf_reads, json_reads)
    assert (header - FAKE_BASE) % FAKE_STEP == 0 and FAKE_BASE <= header < FAKE_BASE + FAKE_STEP * pf_reads

    def ns(microseconds):
        """A time of the JSON run, as the .pftrace run read it."""
        t = round(microseconds * 1000)
        return t if t < header else t + FAKE_STEP
    raw = traceformat.read_complete_trace(json_trace)
    pid = raw[0]["pid"]
    events, unended = traceformat.join_async(raw)
    assert unended == []

    def role(tid, main):
        return "main" if tid == main else "other"

    want_ranges = sorted(
        ({"name": e["name"], "category": e["cat"], "start_ns": ns(e["ts"]),
          "end_ns": ns(e["ts"] + e["dur"]), "args": e.get("args", {}),
          "thread": role(e["tid"], pid)} for e in events if e["ph"] == "X"),
        key=lambda r: (r["start_ns"], r["end_ns"], r["name"]))
    got_ranges = sorted(
        ({"name": r["name"], "category": r["category"], "start_ns": r["start_ns"],
          "end_ns": r["end_ns"], "args": r["args"], "thread": role(r["tid"], summary["process"]["pid"])}
         for r in summary["ranges"]),
        key=lambda r: (r["start_ns"], r["end_ns"], r["name"]))
    assert len(got_ranges) == len(want_ranges) >= 15
    for got, want in zip(got_ranges, want_ranges):
        assert got == want
    want_marks = [{"name": e["name"], "category": e["cat"], "ts_ns": ns(e["ts"]),
                   "args": e.get("args", {})}
                  for e in sorted((e for e in events if e["ph"] == "i"), key=lambda e: e["ts"])]
    got_marks = [{k: m[k] for k in ("name", "category", "ts_ns", "args")} for m in summary["marks"]]
    assert got_marks == want_marks
    assert summary["process"]["name"] == [e["args"]["name"] for e in raw
                                          if e["ph"] == "M" and e["name"] == "process_name"][0]
    want_threads = {(role(e["tid"], pid), e["args"]["name"]) for e in raw
                    if e["ph"] == "M" and e["name"] == "thread_name"}
    got_threads = {(role(int(tid), summary["process"]["pid"]), name)
                   for tid, names in summary["threads"].items() for name in names}
    assert got_threads == want_threads


# ---- cut short ------------------------------------------------------------------------

def signal_at_size(argv, trace, threshold, sig, first_line=None):
    """Runs ARGV recording to TRACE and sends it SIG once TRACE holds THRESHOLD bytes (after
    FIRST_LINE on its stdout, when given): the moment is set by what it wrote, not by a sleep.
    Returns the finished process and its stderr."""
    argv, env = command(argv, {"NVTXSHIM_TRACE": str(trace)})
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        if first_line is not None:
            assert proc.stdout.readline() == first_line
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                size = os.stat(trace).st_size
            except FileNotFoundError:
                size = 0
            if size >= threshold:
                break
            assert proc.poll() is None, "%s ended before writing %d bytes: %r" % (
                argv[-2:], threshold, proc.stderr.read()[-2000:])
            assert time.monotonic() < deadline, "%s stays at %d bytes" % (trace, size)
            os.sched_yield()
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
        proc.wait()
    return proc, err


def test_sigkill_at_25_random_moments_leaves_every_whole_packet(tmp_path):
    rng = random.Random(7002)
    for run_index in range(25):
        trace = tmp_path / ("killed-%d.pftrace" % run_index)
        threshold = rng.randrange(512, 256 * 1024)
        proc, _ = signal_at_size([program("test/trace_adversary"), "loop", "100000000"], trace,
                                 threshold, signal.SIGKILL)
        assert proc.returncode == -signal.SIGKILL
        data = trace.read_bytes()
        summary = check(trace, "--cut")
        where = "run %d (threshold %d, %d bytes)" % (run_index, threshold, len(data))
        assert summary["packets"] > 4, where
        end = summary["last_whole_end"]
        rest = data[end:]
        assert summary["tail"]["bytes"] == len(rest), where
        # After the last whole packet: padding, then at most the start of a packet.
        padding = PADDING.match(rest).end()
        assert padding == len(rest) or (rest[padding] == 0x0a and
                                        summary["tail"]["kind"] == "partial packet"), (where, summary["tail"])
        ends = [e for e in record_ends(data[:end])]
        assert len(ends) == summary["packets"] and ends[-1] == end, where
        counts = range_names(summary)
        ticks = len(summary["marks"])
        assert abs(counts[("default", "work")] - ticks) <= 1 and abs(counts[("default", "span")] - ticks) <= 1, (
            where, counts, ticks)
        assert ticks > 0, where


# ---- the end of the process ------------------------------------------------------------

def test_ranges_open_on_the_thread_that_exits_are_slices_that_never_end(tmp_path):
    # A push's begin waits for its pop (docs/pftrace.md); the thread that ends the process
    # writes the begins still waiting, so a call that never returned shows as a slice
    # without an end. The JSON form, which writes a range whole at its pop, writes these at
    # the exit, as complete events up to it marked "did_not_end". Nothing is lost: no line.
    # (test_trace_safety.py has them with 1024 open, and others open on another thread.)
    argv = [program("test/trace_adversary"), "exitinside", "3"]
    trace, result = traced(tmp_path, argv)
    assert result.stdout == b"exiting inside 3 ranges\n" and result.stderr == b""
    summary = check(trace, "--allow-open")
    still_open = sorted(summary["open"], key=lambda r: r["start_ns"])
    assert [r["name"] for r in still_open] == ["inside 0", "inside 1", "inside 2"]
    main = {r["tid"] for r in still_open}
    assert len(main) == 1 and main == {summary["process"]["pid"]}
    assert range_names(summary)[("default", "work")] == 1
    json_trace, result = traced(tmp_path, argv, suffix=".json")
    assert result.stderr == b""
    events = traceformat.read_complete_trace(json_trace)
    inside = [e for e in events if e["name"].startswith("inside")]
    assert sorted(e["name"] for e in inside) == ["inside 0", "inside 1", "inside 2"]
    assert all(e["ph"] == "X" and e["args"] == {"did_not_end": True} for e in inside)
    assert {e["tid"] for e in inside} == {events[0]["pid"]}


def test_exit_from_a_sigterm_handler_at_10_random_moments(tmp_path):
    # Two threads make push/pop and start/end ranges and marks flat out; a SIGTERM handler
    # calls exit(3) on whichever thread the kernel picks, at a moment set by how much of the
    # file is written. The handler may land inside a push (its slot taken, not yet pending),
    # inside a pop's write, or between: the file is whole and valid every time, and its
    # ranges nest.
    rng = random.Random(7003)
    for run_index in range(10):
        trace = tmp_path / ("exited-%d.pftrace" % run_index)
        threshold = rng.randrange(0, 256 * 1024)
        proc, err = signal_at_size([program("test/trace_adversary"), "sigloop", "exit"], trace,
                                   threshold, signal.SIGTERM, first_line=b"looping\n")
        where = "run %d (threshold %d)" % (run_index, threshold)
        assert proc.returncode == 3, (where, err[-2000:])
        summary = check(trace, "--allow-open")
        # Open at the end: at most one of each of the loop's ranges on each thread.
        left = collections.Counter((r["tid"], r["name"], r["async"]) for r in summary["open"])
        names = {"work", "span", 'needs "escapes" \\ \t here'}
        assert len(summary["ranges"]) > 0 and set(n for _, n, _ in left) <= names, where
        assert max(left.values(), default=1) == 1 and len({t for t, _, _ in left}) <= 2, (where, left)
        trace.unlink()
