"""nvtxshim report on the binary trace (cli/readers/trace_pftrace.c, docs/pftrace.md): a .pftrace written
by hand (test/pftrace_twins.py) reports exactly as its JSON form does - ranges, names, payloads,
frames with the kernel probe's figures, marks - whichever thread's packets reach the file first;
gzipped, or under another name, it is found by its bytes; cut at any byte it reads the whole
packets before the cut; a corrupt one fails in one line, never a crash or a hang."""
import gzip
import random
import subprocess

import pytest

import pftrace_twins as craft
from conftest import STUB, Device, program, run
from childenv import clean_env
from test_cli_report import names_table

MS = 1000000
FIGURES = [("offcpu_runnable_ns", 2500000), ("offcpu_blocked_ns", 4000000), ("offcpu_preemptions", 3),
           ("offcpu_faults", 12)]


def nvtxshim(*args):
    return subprocess.run([program("nvtxshim")] + [str(a) for a in args], env=clean_env(),
                          capture_output=True, text=True, timeout=60)


def scenario(frames=3, main_first=True, pid=4242):
    """A camera loop's trace: per frame, a frame range (start/end, payload N, the kernel
    probe's figures on its end), USB and CUDA push/pop ranges (one popped while an X11 range
    it lies under is still open: an END naming it), a frame age written after the fact (clock
    3), a dropped-frames mark, a URB submitted on a worker thread and reaped on the main one,
    signed and floating payloads. MAIN_FIRST: the main thread's packets reach the file before
    the worker's, so the reap's END comes before its BEGIN."""
    trace = craft.Trace(pid=pid, process="camera loop")
    main = trace.thread(pid, "camera loop", 5 * MS)
    worker = trace.thread(pid + 1, "usb worker", 5 * MS)
    for n in range(1, frames + 1):
        base = n * 40 * MS
        frame = main.start(base, "frame %d" % n, "nvtxshim", payload=n)
        main.push(base + 1 * MS, "libusb_bulk_transfer", "usb", category=1)
        main.pop(base + 3 * MS, "usb", payload=9216 + n)
        main.push(base + 4 * MS, "cuMemcpyHtoD", "cuda", category="copy")
        main.push(base + 5 * MS, "XSync", "x11", registered=False)
        main.pop(base + 6 * MS, "cuda", payload=65536)
        main.pop(base + 7 * MS + n, "x11")
        main.whole(base - 10 * MS, base + 8 * MS, "frame age /dev/video0", "v4l2", payload=18 * MS)
        main.mark(base + 9 * MS, "dropped 2 frames /dev/video0 at seq=%d" % n, "v4l2", payload=2,
                  color=0xD50000)
        urb = worker.start(base + 10 * MS, "USBDEVFS_SUBMITURB ep=0x81 BULK IN 512B", "usb", payload=512)
        worker.push(base + 10 * MS + 5, "USBDEVFS_REAPURB", "usb", category=2)
        worker.pop(base + 10 * MS + 900, "usb", payload=-3, kind="i")
        main.push(base + 11 * MS, "libusb_control_transfer", "usb", category=1)
        main.pop(base + 12 * MS, "usb", payload=2.75 * n, kind="d")
        main.end(base + 13 * MS, urb)
        main.mark(base + 14 * MS, "tick", "app", payload=-7.5, kind="d")
        main.end(base + 30 * MS, frame, figures=FIGURES)
        for thread in (main, worker) if main_first else (worker, main):
            thread.flush()
    return trace


def write(tmp_path, trace, name="t"):
    pftrace, json_form = tmp_path / (name + ".pftrace"), tmp_path / (name + ".json")
    pftrace.write_bytes(trace.pftrace())
    json_form.write_text(trace.json_text())
    return pftrace, json_form


def dump(path):
    """The events the loader gives for PATH (test/unit/events_dump.c), one a line, sorted."""
    result = subprocess.run([program("test/events_dump"), str(path)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    return sorted(result.stdout.splitlines())


@pytest.mark.parametrize("main_first", [True, False])
def test_the_events_of_a_pftrace_are_those_of_its_json_form(tmp_path, main_first):
    # Field by field: times, threads, the thread that ended each async range, payloads (a
    # double's fraction cut as the JSON reader cuts it), the figures, the names.
    pftrace, json_form = write(tmp_path, scenario(main_first=main_first))
    events = dump(pftrace)
    assert events == dump(json_form)
    assert len(events) == 3 * 10 + 3 and any("end_tid=4242 async=1 payload=512" in e for e in events)


@pytest.mark.parametrize("main_first", [True, False])
def test_report_on_a_pftrace_is_the_report_on_its_json_form(tmp_path, main_first):
    pftrace, json_form = write(tmp_path, scenario(main_first=main_first))
    binary, text = nvtxshim("report", pftrace), nvtxshim("report", json_form)
    assert (text.returncode, text.stderr) == (0, "")
    assert (binary.returncode, binary.stderr) == (0, "")
    assert binary.stdout == text.stdout
    # and the report is of something: every range, the figures, the marks' payloads
    assert names_table(binary.stdout) == {
        ("cuda", "cuMemcpyHtoD"): 3, ("nvtxshim", "frame N"): 3, ("usb", "USBDEVFS_REAPURB"): 3,
        ("usb", "USBDEVFS_SUBMITURB"): 3, ("usb", "libusb_bulk_transfer"): 3,
        ("usb", "libusb_control_transfer"): 3, ("v4l2", "frame age /dev/video0"): 3, ("x11", "XSync"): 3}
    assert "(3 preemptions, 12 faults)" in binary.stdout
    assert "camera frames dropped: 6 (frame 1: 2, frame 2: 2, frame 3: 2)" in binary.stdout


def test_the_named_end_closes_its_own_slice_not_the_innermost(tmp_path):
    # cuMemcpyHtoD (4-6 ms) is popped while XSync (5-7 ms), pushed after it in another domain,
    # is open: the END names it, and closing XSync instead would make both wrong.
    pftrace, _ = write(tmp_path, scenario(frames=1))
    lines = nvtxshim("report", pftrace).stdout.splitlines()
    row = {line.split()[1]: line.split()[-1] for line in lines if line.startswith(("  cuda ", "  x11 "))}
    assert row == {"cuMemcpyHtoD": "2000.0", "XSync": "2000.0"}


def test_report_finds_the_binary_trace_by_its_bytes_gzipped_or_not(tmp_path):
    trace = scenario()
    pftrace, json_form = write(tmp_path, trace)
    expected = nvtxshim("report", json_form).stdout
    gzipped = tmp_path / "t.pftrace.gz"
    gzipped.write_bytes(gzip.compress(trace.pftrace()))
    renamed = tmp_path / "t.trace"
    renamed.write_bytes(trace.pftrace())
    misnamed = tmp_path / "t.data.json"
    misnamed.write_bytes(gzip.compress(trace.pftrace()))
    for path in (gzipped, renamed, misnamed):
        result = nvtxshim("report", path)
        assert (result.returncode, result.stderr, result.stdout) == (0, "", expected), path
    # a JSON trace that starts with a newline, as a packet does, is still JSON
    newline = tmp_path / "newline.json"
    newline.write_text("\n" + json_form.read_text())
    assert nvtxshim("report", newline).stdout == expected


def test_a_process_named_91_bytes_long_is_still_found_by_its_bytes(tmp_path):
    # The header's first packet is then 0x0a 0x5b: "\n[", as a JSON trace may start.
    for length in range(70, 130):
        trace = craft.Trace(process="p" * length)
        if trace.pftrace()[:2] in (b"\n[", b"\n{"):
            break
    else:
        pytest.fail("no process name gives a header of 91 or 123 bytes")
    main = trace.thread(4242, "main", MS)
    main.push(2 * MS, "step", "app")
    main.pop(3 * MS, "app")
    main.flush()
    renamed = tmp_path / "t.bin"
    renamed.write_bytes(trace.pftrace())
    result = nvtxshim("report", renamed)
    assert result.returncode == 0 and names_table(result.stdout) == {("app", "step"): 1}, result.stderr


def cut_results(tmp_path, trace, offsets):
    """For each cut, report on the file cut there, and on the JSON form of the events whose
    packets are all whole before it."""
    data, ends = trace.pftrace(), trace.packet_ends()
    cut = tmp_path / "cut.pftrace"
    expected_json = tmp_path / "expected.json"
    cache = {}
    whole_at = {}  # a JSON event: where the last packet it needs ends
    for packet_end, needed_by in ends:
        for line in needed_by:
            whole_at[line] = max(whole_at.get(line, 0), packet_end)
    for offset in offsets:
        cut.write_bytes(data[:offset])
        whole = [packet_end for packet_end, _ in ends if packet_end <= offset]
        events = [line for line in trace.json[1:] if '"ph":"M"' in line or whole_at.get(line, offset + 1) <= offset]
        key = tuple(events)
        if key not in cache:
            expected_json.write_text(trace.json_text(events))
            cache[key] = nvtxshim("report", expected_json)
        yield offset, len(whole), nvtxshim("report", cut), cache[key]


def check_cut(offset, packets, result, expected):
    assert result.returncode in (0, 1), (offset, result)
    if not packets:
        assert (result.returncode, result.stdout) == (1, ""), offset
        assert result.stderr.startswith("nvtxshim: report: cannot read ") and result.stderr.count("\n") == 1
        return
    # whole packets: read as far as they go, and no alarm about the cut itself
    assert "cannot read" not in result.stderr, (offset, result.stderr)
    assert (result.returncode, result.stdout) == (expected.returncode, expected.stdout), offset


def test_a_pftrace_cut_at_any_byte_reads_its_whole_packets(tmp_path):
    trace = scenario(frames=1)
    size = len(trace.pftrace())
    assert size < 4096
    for offset, packets, result, expected in cut_results(tmp_path, trace, range(size + 1)):
        check_cut(offset, packets, result, expected)


def test_a_pftrace_cut_in_its_page_padding_reads_its_whole_packets(tmp_path):
    # Packets never cross a 4 KiB page: the gap before one that would is padding (Trace field
    # 2), and a cut inside it is a cut like any other.
    trace = next(trace for trace in (scenario(frames=n) for n in range(8, 16))
                 if trace.pftrace() and trace.padded)
    data, padded = trace.pftrace(), trace.padded[0]
    assert data[padded:padded + 2] in (b"\x10\x00", b"\x10\x80")
    offsets = range(padded - 40, (padded // 4096 + 1) * 4096 + 200)
    for offset, packets, result, expected in cut_results(tmp_path, trace, offsets):
        check_cut(offset, packets, result, expected)


def valid_trace():
    trace = scenario(frames=1)
    return trace.pftrace()


CORRUPT = [  # (name, bytes after the first whole packets, or None for the bytes alone, message)
    ("empty", b"", None, "no whole packet"),
    ("a huge first length", b"\x0a" + craft.varint(1 << 40) + b"\x08\x01", None, "no whole packet"),
    ("padding alone", craft.padding(64), None, "no whole packet"),
    ("a varint of 11 bytes in a packet", craft.message(1, b"\x08" + b"\xff" * 10 + b"\x01"), True,
     "a varint longer than 10 bytes"),
    ("a varint of 11 bytes between packets", b"\x10" + b"\x80" * 10 + b"\x00", True,
     "a varint longer than 10 bytes"),
    ("a nested length past the packet's end",
     craft.message(1, craft.key(60, 2) + craft.varint(100) + b"\x08\x01"), True,
     "a field runs past the end of its message"),
    ("a nested length past the end of its message",
     craft.message(1, craft.message(11, craft.key(4, 2) + craft.varint(30) + b"\x08\x01")), True,
     "a field runs past the end of its message"),
    ("a debug annotation cut inside",
     craft.message(1, craft.message(11, craft.uint(9, 1), craft.message(4, b"\x18"))), True,
     "a field runs past the end of its message"),
    ("a group", craft.message(1, craft.key(5, 3)), True, "a field of an unknown wire type"),
    ("field 0", craft.message(1, b"\x00\x01"), True, "a field numbered 0"),
    ("a packet that is a varint", b"\x08\x01", True, "a packet that is not a message"),
]


@pytest.mark.parametrize("name,tail,after_valid,why", CORRUPT, ids=[c[0] for c in CORRUPT])
def test_a_corrupt_pftrace_fails_in_one_line(tmp_path, name, tail, after_valid, why):
    path = tmp_path / "bad.pftrace"
    path.write_bytes((valid_trace() if after_valid else b"") + tail)
    result = nvtxshim("report", path)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith("nvtxshim: report: cannot read %s: " % path), result.stderr
    assert why in result.stderr and result.stderr.count("\n") == 1, result.stderr


def test_a_pftrace_ending_in_a_partial_varint_or_length_is_read_as_cut_short(tmp_path):
    expected = nvtxshim("report", write(tmp_path, scenario(frames=1), "whole")[0]).stdout
    for tail in (b"\x0a", b"\x0a\x80", b"\x0a\x7f\x08", b"\x10", b"\x10\x80", b"\x0a" + craft.varint(1 << 40)):
        path = tmp_path / "cut.pftrace"
        path.write_bytes(valid_trace() + tail)
        result = nvtxshim("report", path)
        assert (result.returncode, result.stderr, result.stdout) == (0, "", expected), tail


def test_a_mangled_pftrace_never_crashes_or_hangs(tmp_path):
    data = valid_trace()
    rng = random.Random(20240611)
    path = tmp_path / "mangled.pftrace"
    for round in range(300):
        mangled = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            at = rng.randrange(len(mangled))
            choice = rng.random()
            if choice < 0.5:
                mangled[at] ^= 1 << rng.randrange(8)
            elif choice < 0.75:
                mangled[at] = rng.choice((0x00, 0x7F, 0x80, 0xFF, 0x0A, 0x10))
            else:
                mangled[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 12)))
        path.write_bytes(bytes(mangled))
        result = nvtxshim("report", path)
        assert result.returncode in (0, 1), (round, result)
        lines = result.stderr.splitlines()
        assert all(line.startswith("nvtxshim: report: ") for line in lines), (round, lines)
        if "cannot read" in result.stderr:
            assert (result.returncode, result.stdout, len(lines)) == (1, "", 1), (round, lines)
        elif result.returncode:  # whole packets, none with an NVTX event left
            assert result.stdout == "" and lines[-1].startswith("nvtxshim: report: no NVTX events in ")
    for round in range(100):
        path.write_bytes(b"\x0a" + bytes(rng.randrange(256) for _ in range(rng.randint(1, 600))))
        result = nvtxshim("report", path)
        assert result.returncode in (0, 1) and result.stderr, (round, result)


def test_run_takes_a_pftrace_and_the_manual_pages_say_so(tmp_path):
    trace = tmp_path / "rig-%p.pftrace"
    result = nvtxshim("run", "--dry-run", "--trace", trace, "--", "true")
    assert result.returncode == 0 and "NVTXSHIM_TRACE=%s " % trace in result.stdout, result
    assert "FILE ending .pftrace, the compact binary form" in nvtxshim("run", "--help").stdout
    assert "    TRACE.pftrace     the compact binary form" in nvtxshim("report", "--help").stdout


def normalised(path):
    """PATH's events without what differs between two runs: times, pids, tids (a thread by its
    name), the thread that ended an async range (another one, or none)."""
    lines = dump(path)
    names = {}
    for line in lines:
        if line.startswith("name "):
            pid, tid, name = line.split(" ", 3)[1:]
            names[tid[4:]] = name
    out = []
    for line in lines:
        fields = line.split(" ")
        kept = []
        for field in fields:
            key = field.split("=")[0]
            if key in ("start", "end", "pid"):
                continue
            if key == "tid":
                field = "thread=" + names.get(field[4:], "?")
            if key == "end_tid":
                field = "ended_elsewhere=%d" % (field != "end_tid=0")
            kept.append(field)
        out.append(" ".join(kept))
    return sorted(out)


def test_a_program_traced_to_pftrace_and_to_json_gives_the_same_events(tmp_path):
    # test/nvtx_user: ranges of two domains that cross, registered strings, marks, a start/end
    # range ended on another thread, named categories, its thread named, every payload type.
    traces = {}
    for form in ("json", "pftrace"):
        traces[form] = tmp_path / ("nvtx_user." + form)
        result = run([program("test/nvtx_user")], env={"NVTXSHIM_TRACE": str(traces[form])})
        assert result.returncode == 0, result.stderr
    assert traces["pftrace"].read_bytes()[:1] == b"\x0a"
    events = normalised(traces["pftrace"])
    assert events == normalised(traces["json"])
    assert any("name=crosses threads" in e and "ended_elsewhere=1" in e for e in events)
    assert any("name=payload double" in e for e in events)
    binary, text = nvtxshim("report", traces["pftrace"]), nvtxshim("report", traces["json"])
    assert (binary.returncode, binary.stderr) == (0, "") and text.returncode == 0
    assert names_table(binary.stdout) == names_table(text.stdout)


def test_the_harness_traced_to_pftrace_and_to_json_reports_the_same_ranges(tmp_path):
    # The camera loop on the emulated camera with the stand-in CUDA driver: frames, USB and CUDA
    # ranges, the capture; libusb's event handling counts vary from run to run.
    frames = 6
    reports = {}
    for form in ("json", "pftrace"):
        trace = tmp_path / ("harness." + form)
        result = run([program("harness_physical"), "--frames", str(frames)],
                     env={"NVTXSHIM_TRACE": str(trace), "NVTXSHIM_FRAME": "call:libusb_control_transfer",
                          "LD_LIBRARY_PATH": STUB}, device=Device(frames, ()))
        assert result.returncode == 0 and b"frames=%d errors=0" % frames in result.stdout, result.stderr
        report = nvtxshim("report", trace)
        assert report.returncode == 0, report.stderr
        reports[form] = {k: v for k, v in names_table(report.stdout).items() if "handle_events" not in k[1]}
    assert reports["pftrace"] == reports["json"]
    assert reports["pftrace"][("nvtxshim", "frame N")] == frames
