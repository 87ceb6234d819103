"""nvtxshim diff A B (cli/diff.c): the example harness recorded twice on the emulated camera,
the second time with a camera that takes 30 ms longer to send each frame (emucam
--frame-time-us): the comparison names usb as what moved the slowest frames, its table puts the
change in the usb column and in libusb_bulk_transfer, --fail-over turns the grown p99 frame into
exit status 1, and --html draws both runs on one scale.

The verdict must not depend on the scheduler. A stalled frame can take longer than the delay (a
fresh clone's CI saw a 23 ms frame in the fast run, on a quiet machine, when each run had 40
frames and the p99 by nearest rank was the slowest frame). So each run has 200 frames: the p99
is the 198th, and two stalled frames in a run leave it alone. With two busy processes beside the
ASan build, the fast run's p99 was 11-12 ms and its slowest frame 16.5 ms; the delay is 30 ms."""
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


@pytest.mark.parametrize("slow", ["slow", "slow.pftrace"])
def test_a_slower_camera_is_named_as_what_moved_the_frame(runs, slow):
    result = nvtxshim("diff", runs["fast"], runs[slow])
    assert result.returncode == 0 and result.stderr == "", result.stderr
    a, b, change, columns = verdict(result.stdout)
    assert b - a > DELAY_US / 1000 / 2 and change > 0, result.stdout
    assert columns[0][0] == "usb" and columns[0][1] > DELAY_US / 1000 / 2, columns
    table = frame_table(result.stdout)
    # The usb column took the delay: its mean grew by about 30 ms a frame, the others did not.
    assert table["usb"][8] == pytest.approx(DELAY_US / 1000, abs=DELAY_US / 1000 / 3), table["usb"]
    assert table["total"][8] == pytest.approx(table["usb"][8], abs=DELAY_US / 1000 / 5)
    for column in ("cuda", "gpu wait", "rest"):
        assert abs(table[column][8]) < DELAY_US / 1000 / 10, (column, table[column])
    # The frames' bulk IN is the call that waits for the camera.
    assert names_table(result.stdout)[0][:2] == ("usb", "libusb_bulk_transfer")
    # Both loops are named: the harness, FRAMES frames each.
    assert result.stdout.count("(harness_physical), %d frames\n" % FRAMES) == 2


def test_the_other_way_round_the_change_is_negative(runs):
    result = nvtxshim("diff", runs["slow"], runs["fast"])
    a, b, change, columns = verdict(result.stdout)
    assert result.returncode == 0 and change < 0 and columns[0][0] == "usb" and columns[0][1] < 0


def test_fail_over_gates_on_the_p99_frame(runs):
    over = nvtxshim("diff", runs["fast"], runs["slow"], "--fail-over", "100")
    assert over.returncode == 1 and over.stdout.startswith("== nvtxshim diff")
    a, b, change, _ = verdict(over.stdout)
    assert over.stderr == ("nvtxshim: diff: the p99 frame grew %.1f %% (%.3f -> %.3f ms), more than "
                           "--fail-over 100 %%\n" % (change, a, b))
    assert nvtxshim("diff", runs["fast"], runs["slow"], "--fail-over=100000%").returncode == 0
    # A run against itself moves nothing, and passes a gate of 0 %.
    same = nvtxshim("diff", runs["fast"], runs["fast"], "--fail-over", "0")
    assert same.returncode == 0, same.stderr
    assert verdict(same.stdout)[2:] == (0.0, [])


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


def test_the_page_draws_both_runs_on_one_scale(runs, tmp_path):
    out = tmp_path / "ab.html"
    result = nvtxshim("diff", runs["fast"], runs["slow"], "--html", out)
    assert result.returncode == 0, result.stderr
    page = Page(out.read_text())
    line = [line for line in result.stdout.splitlines() if line.startswith("p99 frame ")][0]
    assert line in "".join(page.text)
    # Each run's histogram bars hold all of its frames: their shares add up to 100 %.
    for side in "AB":
        shares = [float(t.split(": ")[1].split(" %")[0]) for t in page.titles if t.startswith(side + ":")]
        assert sum(shares) == pytest.approx(100, abs=0.5), (side, shares)
    # On one scale: the slow run's frames all lie further right than the fast run's median.
    a_bars = [int(r["x"]) for r in page.rects if r.get("class") == "run-a"]
    b_bars = [int(r["x"]) for r in page.rects if r.get("class") == "run-b"]
    assert a_bars and b_bars and min(b_bars) > sorted(a_bars)[len(a_bars) // 2]
    # A page is never renamed over what is not a regular file.
    fifo = tmp_path / "fifo.html"
    import os
    os.mkfifo(fifo)
    refused = nvtxshim("diff", runs["fast"], runs["slow"], "--html", fifo)
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
