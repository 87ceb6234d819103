"""nvtxshim diff A B (cli/diff.c): the verdict, its columns, --fail-over and the page on traces
whose frames are known by construction (written here, as the library writes them), and the example
harness recorded twice on the emulated camera, the second time with a camera that takes 30 ms longer
to send each frame (emucam --frame-time-us): the table puts that change in the usb column and in
libusb_bulk_transfer, from a JSON and a binary trace.

No figure asserted of the live pair can be erased by load. Load only adds time, and it adds it
anywhere: with two busy processes and a second suite beside it the fast run's p99 frame was 69 ms
(2.8 ms on a quiet machine), so a gap between the two runs' p99 frames (13.5 ms there, for a 30 ms
delay) or the column that moved the slowest 1 % of the frames (2 of 200, each possibly a stall
of the fast run's) decides nothing. What holds: every frame of the slow run waits at least 30 ms
in its bulk IN (emucam sleeps that long before it answers), so the slow run's usb mean and p50 are
30 ms or more; the usb column's mean, over 200 frames, grows by about the delay (+31.3 ms quiet; the
whole frame's mean grew by 40.7 ms under that load), far more than any other column's mean, whose
work (0.1-0.3 ms a frame) is the same in both runs. The verdict line, its order and --fail-over's
gate are checked on the synthetic traces, where each figure is exact."""
import html.parser
import json
import re
import subprocess

import pytest

from conftest import STUB, Device, clean_env, program, run

FRAMES = 200
DELAY_US = 30000
ON_ACT = {"NVTXSHIM_FRAME": "call:libusb_control_transfer", "LD_LIBRARY_PATH": STUB}
VERDICT = re.compile(r"p99 frame (\d+\.\d{3}) -> (\d+\.\d{3}) ms \(([+-]\d+\.\d) %\)(.*)")


def record(path, *emucam):
    result = run([program("harness_physical"), "--frames", str(FRAMES)],
                 env=dict(ON_ACT, NVTXSHIM_TRACE=str(path)), device=Device(FRAMES, list(emucam)))
    assert result.returncode == 0 and b"frames=%d errors=0" % FRAMES in result.stdout, result.stderr
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    where = tmp_path_factory.mktemp("diff")
    return {"fast": record(where / "fast.json"),
            "slow": record(where / "slow.json", "--frame-time-us", str(DELAY_US)),
            "slow.pftrace": record(where / "slow.pftrace", "--frame-time-us", str(DELAY_US))}


def nvtxshim(*args, stdin=None):
    return subprocess.run([program("nvtxshim")] + [str(a) for a in args], env=clean_env(),
                          capture_output=True, text=True, stdin=stdin, timeout=300)


def verdict(output):
    """(p99 of A, p99 of B, the change in %, [(column, ms)...]) from the verdict line."""
    [line] = [line for line in output.splitlines() if line.startswith("p99 frame ")]
    match = VERDICT.fullmatch(line)
    assert match, line
    columns = [(name, float(ms)) for name, ms in
               re.findall(r"([a-z][a-z ]*?) ([+-]\d+\.\d{3}) ms", match.group(4))]
    return float(match.group(1)), float(match.group(2)), float(match.group(3)), columns


def frame_table(output):
    """{column: [A mean, p50, p99, max, B mean, p50, p99, max, change of mean, of p99]}."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("== Per frame"))
    rows = {}
    for line in lines[start + 2:]:
        if not line.strip():
            break
        name, numbers = line[:12].strip(), line[12:].split()
        rows[name] = [float(n) for n in numbers]
    return rows


def names_table(output):
    """[(domain, name, change in ms per frame)] in the order printed."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("== Range names"))
    return [(line[2:11].strip(), line[12:46].strip(), float(line.split()[-1]))
            for line in lines[start + 2:] if line.startswith("  ") and not line.startswith("  (")]


def synthetic_trace(path, pid, usb_ms, wait_ms, rest_ms=0.2):
    """A trace of the harness's shape, its frame times known by construction: frame N (an async
    b/e pair in domain nvtxshim, as the library writes frames) holds a bulk IN of USB_MS(N), then a
    cuStreamSynchronize (category wait: the gpu wait column) of WAIT_MS(N), then REST_MS of
    nothing hooked (the rest column); the next frame begins as it ends."""
    events = [{"name": "process_name", "ph": "M", "pid": pid, "tid": pid, "args": {"name": "loop"}}]
    at = 1000.0  # microseconds
    for n in range(1, FRAMES + 1):
        usb, wait = usb_ms(n) * 1000, wait_ms(n) * 1000
        events += [
            {"name": "frame %d" % n, "cat": "nvtxshim", "ph": "b", "ts": at, "pid": pid, "tid": pid,
             "id": n, "args": {"payload": n, "category": "frame"}},
            {"name": "libusb_bulk_transfer ep=0x81 IN 9216B", "cat": "usb", "ph": "X", "ts": at,
             "dur": usb, "pid": pid, "tid": pid, "args": {"category": "transfer", "payload": 9216}},
            {"name": "cuStreamSynchronize", "cat": "cuda", "ph": "X", "ts": at + usb, "dur": wait,
             "pid": pid, "tid": pid, "args": {"category": "wait"}}]
        at += usb + wait + rest_ms * 1000
        events.append({"name": "frame %d" % n, "cat": "nvtxshim", "ph": "e", "ts": at, "pid": pid,
                       "tid": pid, "id": n})
    path.write_text(json.dumps(events))
    return path


# Synthetic runs: A's bulk IN takes 1.0 to 1.9 ms (frame N: 1 + (N % 10) / 10), its GPU wait
# 0.3 ms, the rest 0.2 ms, so its frames are 1.5 to 2.4 ms and 20 of the 200 are 2.4 ms: the p99
# (the 198th) is 2.4 ms, and so is each of the slowest 1 % (2 frames). B is A with the camera 30 ms
# slower and the GPU wait 5 ms longer: p99 37.4 ms, +1458.3 %; the slowest frames moved by
# usb +30 ms, then gpu wait +5 ms, and by nothing else.
SYNTHETIC_A = dict(usb_ms=lambda n: 1 + n % 10 / 10, wait_ms=lambda n: 0.3)
SYNTHETIC_B = dict(usb_ms=lambda n: 31 + n % 10 / 10, wait_ms=lambda n: 5.3)
SYNTHETIC_VERDICT = "p99 frame 2.400 -> 37.400 ms (+1458.3 %): usb +30.000 ms, gpu wait +5.000 ms"


@pytest.fixture(scope="module")
def known(tmp_path_factory):
    where = tmp_path_factory.mktemp("known")
    return {"fast": synthetic_trace(where / "fast.json", 11, **SYNTHETIC_A),
            "slow": synthetic_trace(where / "slow.json", 12, **SYNTHETIC_B)}


def test_the_verdict_names_the_columns_that_moved_the_slowest_frames(known):
    result = nvtxshim("diff", known["fast"], known["slow"])
    assert result.returncode == 0 and result.stderr == "", result.stderr
    [line] = [line for line in result.stdout.splitlines() if line.startswith("p99 frame ")]
    assert line == SYNTHETIC_VERDICT
    assert verdict(result.stdout) == (2.4, 37.4, 1458.3, [("usb", 30.0), ("gpu wait", 5.0)])
    table = frame_table(result.stdout)
    # Means: A's usb 1.45 ms, B's 31.45 ms; the whole frame's grew by 35 ms.
    assert table["usb"][0] == pytest.approx(1.45) and table["usb"][4] == pytest.approx(31.45)
    assert table["usb"][8] == pytest.approx(30.0) and table["gpu wait"][8] == pytest.approx(5.0)
    assert table["total"][8] == pytest.approx(35.0) and table["rest"][8] == pytest.approx(0.0)
    assert names_table(result.stdout)[:2] == [("usb", "libusb_bulk_transfer", 30.0),
                                              ("cuda", "cuStreamSynchronize", 5.0)]


def test_the_other_way_round_the_change_is_negative(known):
    result = nvtxshim("diff", known["slow"], known["fast"])
    assert result.returncode == 0, result.stderr
    assert verdict(result.stdout) == (37.4, 2.4, -93.6, [("usb", -30.0), ("gpu wait", -5.0)])


def test_fail_over_gates_on_the_p99_frame(known):
    over = nvtxshim("diff", known["fast"], known["slow"], "--fail-over", "100")
    assert over.returncode == 1 and over.stdout.startswith("== nvtxshim diff")
    assert over.stderr == ("nvtxshim: diff: the p99 frame grew 1458.3 % (2.400 -> 37.400 ms), more "
                           "than --fail-over 100 %\n")
    # The gate is "more than": the growth itself passes, a hair under it does not.
    assert nvtxshim("diff", known["fast"], known["slow"], "--fail-over=1458.4%").returncode == 0
    assert nvtxshim("diff", known["fast"], known["slow"], "--fail-over", "1458.3").returncode == 1
    assert nvtxshim("diff", known["fast"], known["slow"], "--fail-over=100000%").returncode == 0
    # A p99 that shrank passes any gate.
    assert nvtxshim("diff", known["slow"], known["fast"], "--fail-over", "0").returncode == 0
    # A run against itself moves nothing, and passes a gate of 0 %.
    same = nvtxshim("diff", known["fast"], known["fast"], "--fail-over", "0")
    assert same.returncode == 0, same.stderr
    assert verdict(same.stdout)[2:] == (0.0, [])


@pytest.mark.parametrize("slow", ["slow", "slow.pftrace"])
def test_a_slower_camera_moves_the_usb_column(runs, slow):
    result = nvtxshim("diff", runs["fast"], runs[slow])
    assert result.returncode == 0 and result.stderr == "", result.stderr
    table = frame_table(result.stdout)
    delay_ms = DELAY_US / 1000
    # Every frame of B waited the delay in its bulk IN: B's usb mean and p50 are at least that,
    # whatever the load (which only adds time).
    assert table["usb"][4] >= delay_ms and table["usb"][5] >= delay_ms, table["usb"]
    assert table["total"][4] >= table["usb"][4], table
    # The change is B less A, and the usb column's mean took the delay: over 200 frames it grew
    # by far more than half of it, and more than any other column's (whose work is the same).
    usb = table["usb"][8]
    assert usb == pytest.approx(table["usb"][4] - table["usb"][0], abs=0.002), table["usb"]
    assert usb > delay_ms / 2, table["usb"]
    for column, row in table.items():
        if column not in ("total", "usb"):
            assert row[8] < usb, (column, row, table["usb"])
    # The frames' bulk IN is the call that waits for the camera: first of the names, its time
    # per frame grown by more than half the delay.
    [first] = names_table(result.stdout)[:1]
    assert first[:2] == ("usb", "libusb_bulk_transfer") and first[2] > delay_ms / 2, first
    # Both loops are named: the harness, FRAMES frames each.
    assert result.stdout.count("(harness_physical), %d frames\n" % FRAMES) == 2


def test_one_of_the_two_may_come_from_standard_input(runs):
    with open(runs["slow"], "rb") as f:
        piped = subprocess.run([program("nvtxshim"), "diff", str(runs["fast"]), "-"], stdin=f,
                               env=clean_env(), capture_output=True, text=True, timeout=300)
    named = nvtxshim("diff", runs["fast"], runs["slow"])
    assert piped.returncode == 0
    assert piped.stdout.replace("B: -:", "B: %s:" % runs["slow"]) == named.stdout


class Page(html.parser.HTMLParser):
    def __init__(self, text):
        super().__init__()
        self.rects, self.text, self.titles, self.in_title = [], [], [], False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        if tag == "rect":
            self.rects.append(dict(attrs))
        self.in_title = tag == "title"

    def handle_endtag(self, tag):
        self.in_title = False

    def handle_data(self, data):
        self.text.append(data)
        if self.in_title:
            self.titles.append(data)


def test_the_page_draws_both_runs_on_one_scale(known, tmp_path):
    out = tmp_path / "ab.html"
    result = nvtxshim("diff", known["fast"], known["slow"], "--html", out)
    assert result.returncode == 0, result.stderr
    page = Page(out.read_text())
    line = [line for line in result.stdout.splitlines() if line.startswith("p99 frame ")][0]
    assert line in "".join(page.text)
    # Each run's histogram bars hold all of its frames: their shares add up to 100 %.
    for side in "AB":
        shares = [float(t.split(": ")[1].split(" %")[0]) for t in page.titles if t.startswith(side + ":")]
        assert sum(shares) == pytest.approx(100, abs=0.5), (side, shares)
    # On one scale: the slow run's frames (36.5 ms and more) all lie further right than the fast
    # run's median (2.0 ms).
    a_bars = [int(r["x"]) for r in page.rects if r.get("class") == "run-a"]
    b_bars = [int(r["x"]) for r in page.rects if r.get("class") == "run-b"]
    assert a_bars and b_bars and min(b_bars) > sorted(a_bars)[len(a_bars) // 2]
    # A page is never renamed over what is not a regular file.
    fifo = tmp_path / "fifo.html"
    import os
    os.mkfifo(fifo)
    refused = nvtxshim("diff", known["fast"], known["slow"], "--html", fifo)
    assert refused.returncode == 1 and "will not write" in refused.stderr and refused.stdout == ""


@pytest.mark.parametrize("args,message", [
    ([], "which files? nvtxshim diff A B"),
    (["one.json"], "which files? nvtxshim diff A B"),
    (["a", "b", "c"], "two files to compare: 'c' is one too many"),
    (["-", "-"], "standard input can be one of the two, not both"),
    (["a", "b", "--fail-over", "x"], "--fail-over needs a percentage, 0 or more (10, 2.5): 'x'"),
    (["a", "b", "--fail-over", "-3"], "--fail-over needs a percentage, 0 or more (10, 2.5): '-3'"),
    (["a", "b", "--colour"], "unknown option --colour"),
])
def test_usage_errors_are_one_line(args, message):
    result = nvtxshim("diff", *args)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == "nvtxshim: diff: %s (nvtxshim diff --help)\n" % message


def test_a_run_without_frames_is_said(runs, tmp_path):
    plain = tmp_path / "plain.json"
    result = run([program("harness_physical"), "--frames", "5"],
                 env={"NVTXSHIM_TRACE": str(plain), "LD_LIBRARY_PATH": STUB}, device=Device(5, []))
    assert result.returncode == 0
    done = nvtxshim("diff", runs["fast"], plain)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == ("nvtxshim: diff: no frame ranges in %s: record it with NVTXSHIM_FRAME "
                           "set\n" % plain)


def frames_trace(path, count, pid):
    """COUNT frames of 10 ms each but the last, of 50 ms (one stall), in process PID."""
    events = [{"name": "process_name", "ph": "M", "pid": pid, "tid": pid, "args": {"name": "loop"}}]
    for n in range(1, count + 1):
        events.append({"name": "frame %d" % n, "cat": "nvtxshim", "ph": "X", "ts": n * 60000.0,
                       "dur": 50000.0 if n == count else 10000.0, "pid": pid, "tid": pid})
    path.write_text(json.dumps(events))
    return path


def test_a_run_of_fewer_than_100_frames_is_marked_where_it_is_named(tmp_path):
    """Under 100 frames the p99 by nearest rank is the slowest frame: one stall is the verdict.
    The run's line says so (and the page's); from 100 frames on the p99 leaves one stall out."""
    note = " (fewer than 100: its p99 is its slowest frame)"
    short, long = frames_trace(tmp_path / "short.json", 99, 7), frames_trace(tmp_path / "long.json", 100, 8)
    result = nvtxshim("diff", long, short, "--html", tmp_path / "page.html")
    assert result.returncode == 0, result.stderr
    assert "  A: %s: process 8 (loop), 100 frames\n" % long in result.stdout
    assert "  B: %s: process 7 (loop), 99 frames%s\n" % (short, note) in result.stdout
    assert verdict(result.stdout)[:2] == (10.0, 50.0)
    page = (tmp_path / "page.html").read_text()
    assert page.count(note) == 1 and ", 99 frames%s</p>" % note in page
