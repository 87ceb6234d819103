"""nvtxshim diff (cli/commands/diff.c, diff_stats.c, diff_json.c, diff_page.c): group B's runs against group
A's, as a CI gate. The verdict, its intervals, the noise of each group, the columns that moved the
frame, the gates and the exit status are checked on traces whose frames are known by construction
(written here, as the library writes them), where each figure is exact; the example harness is
recorded 3 + 3 + 3 times on the emulated camera, B's runs with a camera 3 ms a frame slower
(emucam --frame-time-us 3000), to show the gate and the column on real runs.

What the live runs assert cannot be erased by load. Load only adds time, and it adds it anywhere:
with two busy processes beside it a run's median frame moved by 20 % and its p99 by a factor of 3
between runs of the same code, so a p99 is never gated on here, nor a verdict word asserted of
identical runs. What holds: every frame of a slow run waits at least 3 ms in its bulk IN (emucam
answers that long after it was asked), so B's usb mean and p50 are 3 ms or more and B's median
frame is 3.3 ms or more, where A's is about 2 ms (1.9 to 2.5 ms quiet or loaded): the interval of
the median's change lies far above +10 %, and the usb column's mean moved by about the delay, far
more than any other column's, whose work is the same in both groups. Identical runs pass a gate of
25 % on the median. A round whose runs were stalled throughout (seen under a load of 7) is recorded
again, bounded in rounds and time (rounds())."""
import gzip
import html.parser
import json
import os
import re
import sqlite3
import subprocess
import time

import jsonschema
import pytest

from conftest import ROOT, STUB, Device, clean_env, program, run

FRAMES = 200
LIVE_FRAMES = 100
DELAY_US = 3000
ON_ACT = {"NVTXSHIM_FRAME": "call:libusb_control_transfer", "LD_LIBRARY_PATH": STUB}
with open(os.path.join(ROOT, "docs", "schema", "diff-v1.json")) as schema_file:
    SCHEMA = json.load(schema_file)
STATISTIC = re.compile(r"  (median|p99) frame +(\d+\.\d{3}) -> +(\d+\.\d{3}) ms +([+-]\d+\.\d) % "
                       r"\[([+-]\d+\.\d), ([+-]\d+\.\d)\]  (.*)")
NOTE = " (fewer than 100: its p99 is its slowest frame)"


def nvtxshim(*args, stdin=None):
    return subprocess.run([program("nvtxshim")] + [str(a) for a in args], env=clean_env(),
                          capture_output=True, text=True, stdin=stdin, timeout=300)


def valid(document):
    """DOCUMENT checked against docs/schema/diff-v1.json; returned."""
    jsonschema.Draft202012Validator(SCHEMA).validate(document)
    return document


def statistics(output):
    """{"median" | "p99": (A ms, B ms, change %, low %, high %, judgement)} from the verdict."""
    found = {}
    for line in output.splitlines():
        match = STATISTIC.fullmatch(line)
        if match:
            found[match.group(1)] = tuple(float(g) for g in match.groups()[1:6]) + (match.group(7),)
    assert set(found) == {"median", "p99"}, output
    return found


def moved(output):
    """[(column, ms, low, high)] from the verdict's "moved the frame" line."""
    [line] = [line for line in output.splitlines() if line.startswith("  moved the frame")]
    return [(name, float(ms), float(low), float(high)) for name, ms, low, high in
            re.findall(r"([a-z][a-z ]*?) ([+-]\d+\.\d{3}) ms \[([+-]\d+\.\d{3}), ([+-]\d+\.\d{3})\]",
                       line.split(":", 1)[1])]


def frame_table(output):
    """{column: [A mean, p50, p99, max, B mean, p50, p99, max, change of the mean, low, high,
    change of the p99]}."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("== Per frame"))
    rows = {}
    for line in lines[start + 2:]:
        if not line.strip():
            break
        name, numbers = line[:12].strip(), line[12:].replace("[", " ").replace("]", " ").replace(",", " ")
        rows[name] = [float(n) for n in numbers.split()]
    return rows


def names_table(output):
    """[(domain, name, change in ms per frame)] in the order printed."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("== Range names"))
    return [(line[2:11].strip(), line[12:46].strip(), float(line.split()[-1]))
            for line in lines[start + 2:] if line.startswith("  ") and not line.startswith("  (")]


def synthetic_trace(path, pid, usb_ms, wait_ms, rest_ms=0.2, frames=FRAMES):
    """A trace of the harness's shape, its frame times known by construction: frame N (an async
    b/e pair in domain nvtxshim, as the library writes frames) holds a bulk IN of USB_MS(N), then a
    cuStreamSynchronize (category wait: the gpu wait column) of WAIT_MS(N), then REST_MS of
    nothing hooked (the rest column); the next frame begins as it ends."""
    events = [{"name": "process_name", "ph": "M", "pid": pid, "tid": pid, "args": {"name": "loop"}}]
    at = 1000.0  # microseconds
    for n in range(1, frames + 1):
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


def steady_trace(path, pid, frame_ms):
    """FRAMES frames of FRAME_MS each: a bulk IN of FRAME_MS - 0.5 ms, a GPU wait of 0.3 ms, the
    rest 0.2 ms."""
    return synthetic_trace(path, pid, usb_ms=lambda n: frame_ms - 0.5, wait_ms=lambda n: 0.3)


# One run a side. A's bulk IN takes 1.0 to 1.9 ms (frame N: 1 + (N % 10) / 10), its GPU wait
# 0.3 ms, the rest 0.2 ms, so its frames are 1.5 to 2.4 ms, 20 of each: the median (the 100th of
# 200) is 1.9 ms, the p99 (the 198th) 2.4 ms. B is A with the camera 30 ms slower and the GPU wait
# 5 ms longer: median 36.9 ms (+1842.1 %), p99 37.4 ms (+1458.3 %). A resample of 200 of A's frames
# has 2.4 ms as its 198th but with a chance of 2e-7 (fewer than 3 of its 200 draws the longest
# tenth), B's 37.4 ms: the p99's interval is the change itself. Every frame's usb grew by 30 ms
# and its gpu wait by 5 ms, and nothing else moved.
SYNTHETIC_A = dict(usb_ms=lambda n: 1 + n % 10 / 10, wait_ms=lambda n: 0.3)
SYNTHETIC_B = dict(usb_ms=lambda n: 31 + n % 10 / 10, wait_ms=lambda n: 5.3)


@pytest.fixture(scope="module")
def known(tmp_path_factory):
    where = tmp_path_factory.mktemp("known")
    return {"fast": synthetic_trace(where / "fast.json", 11, **SYNTHETIC_A),
            "slow": synthetic_trace(where / "slow.json", 12, **SYNTHETIC_B)}


def test_one_run_a_side_gives_intervals_and_names_what_moved_but_cannot_judge_noise(known):
    result = nvtxshim("diff", known["fast"], known["slow"])
    assert result.returncode == 0 and result.stderr == "", result.stderr
    lines = result.stdout.splitlines()
    assert lines[:3] == ["== nvtxshim diff: B against A; each run's loop is its process with the most "
                         "frames",
                         "  A: %s: process 11 (loop), 200 frames" % known["fast"],
                         "  B: %s: process 12 (loop), 200 frames" % known["slow"]]
    assert ("== Verdict: unjudged (B against A; 95 % intervals from 2000 resamples of the runs, then "
            "of each run's frames)") in lines
    found = statistics(result.stdout)
    a, b, change, low, high, judgement = found["median"]
    assert (a, b, change) == (1.9, 36.9, 1842.1)
    # A resampled median is 1.8 to 2.0 ms, B's 36.8 to 37.0: the interval lies about the change
    assert 1700 < low <= change <= high < 2000, found["median"]
    assert judgement == "unjudged: A's noise cannot be judged from one run"
    assert found["p99"] == (2.4, 37.4, 1458.3, 1458.3, 1458.3, judgement)
    # Both columns that moved, the larger first; their intervals hold the change.
    [(usb, usb_ms, usb_low, usb_high), gpu_wait] = moved(result.stdout)
    assert (usb, usb_ms) == ("usb", 30.0) and usb_low < 30 < usb_high and usb_high - usb_low < 0.2
    assert gpu_wait == ("gpu wait", 5.0, 5.0, 5.0)
    assert ("  noise: one run of A and one of B: how far runs of the same code lie apart cannot be "
            "judged (record 2 or more a side); the intervals hold the variation of each run's frames "
            "alone") in lines
    table = frame_table(result.stdout)
    # Means: A's usb 1.45 ms, B's 31.45 ms; the whole frame's grew by 35 ms, the rest by nothing.
    assert table["usb"][0] == pytest.approx(1.45) and table["usb"][4] == pytest.approx(31.45)
    assert table["usb"][8] == pytest.approx(30.0) and table["gpu wait"][8:11] == [5.0, 5.0, 5.0]
    assert table["total"][8] == pytest.approx(35.0) and table["rest"][8:11] == [0.0, 0.0, 0.0]
    assert table["total"][11] == pytest.approx(35.0)
    assert names_table(result.stdout)[:2] == [("usb", "libusb_bulk_transfer", 30.0),
                                              ("cuda", "cuStreamSynchronize", 5.0)]


def test_the_other_way_round_the_changes_are_negative(known):
    result = nvtxshim("diff", known["slow"], known["fast"])
    assert result.returncode == 0, result.stderr
    found = statistics(result.stdout)
    assert found["median"][:3] == (36.9, 1.9, -94.9) and found["p99"][:5] == (37.4, 2.4, -93.6,
                                                                                -93.6, -93.6)
    assert [column[:2] for column in moved(result.stdout)] == [("usb", -30.0), ("gpu wait", -5.0)]


def test_the_intervals_are_the_same_every_time(known):
    """The bootstrap's seed is fixed: the same inputs, the same document, to the byte."""
    first = nvtxshim("diff", known["fast"], known["slow"], "--json")
    assert first.returncode == 0
    assert nvtxshim("diff", known["fast"], known["slow"], "--json").stdout == first.stdout
    assert valid(json.loads(first.stdout))["seed"] == 20260423


def test_a_gate_is_a_regression_where_the_whole_interval_lies_above_it(known):
    over = nvtxshim("diff", known["fast"], known["slow"], "--fail-over", "100")
    assert over.returncode == 1 and over.stdout.startswith("== nvtxshim diff")
    median = statistics(over.stdout)["median"]
    assert over.stderr == (
        "nvtxshim: diff: the median frame grew +1842.1 %% (95 %% interval %+.1f %% to %+.1f %%), "
        "wholly above --fail-over 100 %%\n"
        "nvtxshim: diff: the p99 frame grew +1458.3 %% (95 %% interval +1458.3 %% to +1458.3 %%), "
        "wholly above --fail-over 100 %%\n" % (median[3], median[4]))
    assert ("  gate --fail-over 100 %: the p99 frame is a regression (the low end of its interval, "
            "+1458.3 %, is above it)") in over.stdout.splitlines()
    # The p99's interval is +1458.33 % and no wider: a gate a hair below it fails, at it passes.
    assert nvtxshim("diff", known["fast"], known["slow"], "--fail-over-p99", "1458.3").returncode == 1
    passed = nvtxshim("diff", known["fast"], known["slow"], "--fail-over-p99=1458.4%")
    assert passed.returncode == 0 and passed.stderr == ""
    assert ("  gate --fail-over-p99 1458.4 %: the p99 frame is within it (the low end of its "
            "interval, +1458.3 %, is not above it)") in passed.stdout.splitlines()
    # Each gate alone: the median's interval lies under 2000 %, the p99's above 1000 %.
    assert nvtxshim("diff", known["fast"], known["slow"], "--fail-over-median", "2000").returncode == 0
    assert nvtxshim("diff", known["fast"], known["slow"], "--fail-over", "2000",
                    "--fail-over-p99", "1000").returncode == 1
    assert nvtxshim("diff", known["fast"], known["slow"], "--fail-over=100000%").returncode == 0
    # A frame that shrank passes any gate.
    assert nvtxshim("diff", known["slow"], known["fast"], "--fail-over", "0").returncode == 0
    # A run against itself: each resample of A against another of A, an interval about 0, and a
    # gate of 0 % passes.
    same = nvtxshim("diff", known["fast"], known["fast"], "--fail-over", "0")
    assert same.returncode == 0, same.stderr
    found = statistics(same.stdout)
    assert found["median"][2] == 0.0 and found["median"][3] < 0 < found["median"][4]
    assert moved(same.stdout) == []
    assert "  moved the frame (mean per frame, B less A): no column's mean moved clear of 0" in same.stdout


# Three runs a side, each run's frames all alike: A's 10, 11 and 12 ms, so A's runs' medians (and
# p99s) lie 2 ms apart, 18.2 % of A's median (11 ms; the 300th of 600 frames) and 16.7 % of its p99
# (12 ms). B "slower": 20, 21 and 22 ms; B "same": 10.5, 11.5 and 12.5 ms. A resample's median is
# the median of its three runs drawn, so the slower group's change lies from 20 / 12 (+66.7 %) to
# 22 / 10 (+120 %), each end drawn with a chance of 7/27 x 7/27 = 6.7 %, more than the 2.5 % a tail
# holds: the interval is exactly that, wholly above A's 18.2 %. The same group's +4.5 % reaches
# inside it. Only the usb column moves: +10 ms and +0.5 ms, against A's runs' usb means 2 ms apart.
@pytest.fixture(scope="module")
def groups(tmp_path_factory):
    where = tmp_path_factory.mktemp("groups")
    a = where / "a"
    (a / "sub").mkdir(parents=True)
    steady_trace(a / "a1.json", 21, 10)
    steady_trace(a / "a2.json", 22, 11)
    compressed = steady_trace(where / "a3.json", 23, 12)
    (a / "a3.json.gz").write_bytes(gzip.compress(compressed.read_bytes()))
    (a / "notes.txt").write_text("rig 4, after the firmware update\n")
    return {"a": a,
            "slower": [steady_trace(where / ("slower%d.json" % k), 30 + k, 19 + k) for k in (1, 2, 3)],
            "same": [steady_trace(where / ("same%d.json" % k), 40 + k, 9.5 + k) for k in (1, 2, 3)],
            "tight": [steady_trace(where / ("tight%d.json" % k), 50 + k, 9.5 + k / 2) for k in (1, 2, 3)],
            "near": [steady_trace(where / ("near%d.json" % k), 60 + k, 11.75 + k / 4) for k in (1, 2, 3)],
            "close": [steady_trace(where / ("close%d.json" % k), 70 + k, 11.25 + k / 8) for k in (1, 2, 3)]}


def test_several_runs_a_side_are_judged_against_the_noise_among_a_s_runs(groups):
    result = nvtxshim("diff", groups["a"], "--", *groups["slower"])
    assert result.returncode == 0 and result.stderr == "", result.stderr
    lines = result.stdout.splitlines()
    a = groups["a"]
    # The directory's traces by name, the rest named as left out.
    assert lines[1:5] == [
        "  A: %s: 3 files read, by name: a1.json a2.json a3.json.gz; left out: notes.txt (not named as "
        "a trace), sub (a directory)" % a,
        "  A1: %s/a1.json: process 21 (loop), 200 frames" % a,
        "  A2: %s/a2.json: process 22 (loop), 200 frames" % a,
        "  A3: %s/a3.json.gz: process 23 (loop), 200 frames" % a]
    assert lines[5:8] == ["  B%d: %s: process %d (loop), 200 frames" % (k, groups["slower"][k - 1], 30 + k)
                          for k in (1, 2, 3)]
    assert lines[9].startswith("== Verdict: slower (")
    found = statistics(result.stdout)
    assert found["median"] == (11.0, 21.0, 90.9, 66.7, 120.0, "slower: beyond A's spread (18.2 %)")
    assert found["p99"][:3] == (12.0, 22.0, 83.3) and found["p99"][5].startswith("slower: beyond A's")
    [usb] = moved(result.stdout)
    assert usb[:2] == ("usb", 10.0) and 8 <= usb[2] < 10 < usb[3] <= 12, usb
    # Both groups' noise, each run's own median and p99 apart.
    assert lines[lines.index("  noise, how far each group's runs lie apart (least to greatest; that "
                             "spread over the group's own figure):") + 1:][:2] == [
        "    A, 3 runs: median 10.000 to 12.000 ms (18.2 %); p99 10.000 to 12.000 ms (16.7 %)",
        "    B, 3 runs: median 20.000 to 22.000 ms (9.5 %); p99 20.000 to 22.000 ms (9.1 %)"]


def test_a_directory_reads_a_report_s_export_once(tmp_path):
    """nvtxshim profile leaves RIG.nsys-rep and its export RIG.sqlite side by side; load reads the
    export for either, so a directory of them would count each run twice."""
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "rig.nsys-rep").write_bytes(b"NVIDIA Tegra Profiler Report " + b"\0" * 64)
    tid = (1 << 48) | (900 << 24) | 900
    with sqlite3.connect(runs / "rig.sqlite") as db:
        db.execute('CREATE TABLE NVTX_EVENTS (start INTEGER, "end" INTEGER, eventType INTEGER, '
                   'text TEXT, globalTid INTEGER, domainId INTEGER)')
        db.execute("INSERT INTO NVTX_EVENTS VALUES (0, 0, 75, 'nvtxshim', ?, 1)", (tid,))
        db.executemany("INSERT INTO NVTX_EVENTS VALUES (?, ?, 60, ?, ?, 1)",
                       [(n * 10000000, (n + 1) * 10000000, "frame %d" % n, tid) for n in range(1, 101)])
    steady_trace(runs / "run.json", 31, 12)
    result = nvtxshim("diff", runs, "--", runs / "run.json", "--json")
    assert result.returncode == 0, result.stderr
    [listed] = valid(json.loads(result.stdout))["a"]["directories"]
    assert listed == {"path": str(runs), "read": [str(runs / "rig.sqlite"), str(runs / "run.json")],
                      "left_out": ["rig.nsys-rep (its .sqlite export is read)"]}


def test_a_change_inside_a_s_noise_is_within_it(groups):
    result = nvtxshim("diff", groups["a"], "--", *groups["same"], "--fail-over", "20")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    found = statistics(result.stdout)
    assert found["median"][:3] == (11.0, 11.5, 4.5) and found["median"][3] < 18.2
    assert found["median"][5] == "within noise: inside A's spread (18.2 %)"
    assert "== Verdict: within noise (" in result.stdout
    assert "moved the frame (mean per frame, B less A): no column's mean moved beyond A's noise" in \
        result.stdout
    # Clear of 0 is not beyond the noise: A "tight" (10, 10.5 and 11 ms: 9.5 % apart) against
    # "near" (12, 12.25 and 12.5 ms): the interval, 12 / 11 to 12.5 / 10 (each end drawn 6.7 % of
    # the time), lies above 0 but reaches inside A's spread.
    near = nvtxshim("diff", *groups["tight"], "--", *groups["near"])
    assert statistics(near.stdout)["median"] == (10.5, 12.25, 16.7, 9.1, 25.0,
                                                 "within noise: inside A's spread (9.5 %)")
    # So for a column: against "close" (11.375, 11.5 and 11.625 ms) the usb mean grew by 1 ms,
    # each resample's by 0.375 ms at least, but A's runs' usb means lie 1 ms apart.
    close = nvtxshim("diff", *groups["tight"], "--", *groups["close"], "--json")
    usb = valid(json.loads(close.stdout))["change"]["columns"]["usb"]
    assert usb["mean"] == 1000000 and 375000 <= usb["low"] < 1000000 and usb["beyond_noise"] is False
    close = nvtxshim("diff", *groups["tight"], "--", *groups["close"])
    assert statistics(close.stdout)["median"][5] == "within noise: inside A's spread (9.5 %)"
    assert moved(close.stdout) == []
    # A gate under the change's whole interval fails it; the +66.7 % end of the slower group's is
    # the line.
    assert nvtxshim("diff", groups["a"], "--", *groups["same"], "--fail-over-median", "0").returncode == 0
    assert nvtxshim("diff", groups["a"], "--", *groups["slower"], "--fail-over-median", "66").returncode == 1
    assert nvtxshim("diff", groups["a"], "--", *groups["slower"], "--fail-over-median", "66.7").returncode == 0


def test_json_has_every_figure_and_follows_its_schema(groups, known, tmp_path):
    out = tmp_path / "verdict.json"
    result = nvtxshim("diff", groups["a"], "--", *groups["slower"], "--json=%s" % out,
                      "--fail-over-median", "50")
    assert result.returncode == 1 and result.stdout.startswith("== nvtxshim diff"), result.stderr
    document = valid(json.loads(out.read_text()))
    # The same document on standard output, in place of the text.
    alone = nvtxshim("diff", groups["a"], "--", *groups["slower"], "--json", "--fail-over-median", "50")
    assert alone.returncode == 1 and json.loads(alone.stdout) == document
    assert document["schema"] == "nvtxshim-diff/1" and document["verdict"] == "slower"
    a, b = document["a"], document["b"]
    assert [run["median"] for run in a["runs"]] == [10000000, 11000000, 12000000]
    assert [run["path"] for run in a["runs"]] == [str(groups["a"] / n) for n in
                                                  ("a1.json", "a2.json", "a3.json.gz")]
    assert a["directories"] == [{"path": str(groups["a"]),
                                 "read": [run["path"] for run in a["runs"]],
                                 "left_out": ["notes.txt (not named as a trace)", "sub (a directory)"]}]
    assert a["frames"] == b["frames"] == 600
    assert a["columns"]["usb"] == {"mean": 10500000, "p50": 10500000, "p99": 11500000, "max": 11500000}
    assert a["noise"]["median"] == {"least": 10000000, "greatest": 12000000, "percent": 18.182}
    assert b["noise"]["judged"] and b["noise"]["column_means"]["usb"] == {"least": 19500000,
                                                                          "greatest": 21500000}
    median = document["change"]["frame"]["median"]
    assert median == {"a": 11000000, "b": 21000000, "percent": 90.909, "low": 66.667, "high": 120.0,
                      "a_noise_percent": 18.182, "judgement": "slower"}
    assert document["change"]["columns"]["usb"]["mean"] == 10000000
    assert document["change"]["columns"]["usb"]["beyond_noise"] is True
    assert document["change"]["columns"]["gpu_wait"] == {"mean": 0, "low": 0, "high": 0,
                                                         "beyond_noise": False, "p99": 0}
    assert document["change"]["moved_the_frame"] == ["usb"]
    assert document["names"][0]["name"] == "libusb_bulk_transfer"
    assert document["names"][0]["a"]["count"] == 600 and document["names"][0]["per_frame_change"] == 10000000
    assert document["gate"] == {"median": {"option": "--fail-over-median", "percent": 50.0,
                                           "regression": True},
                                "p99": None, "regression": True, "exit_status": 1}
    # One run a side: A's noise not judged.
    single = valid(json.loads(nvtxshim("diff", known["fast"], known["slow"], "--json=-").stdout))
    assert single["verdict"] == "unjudged" and single["a"]["noise"]["judged"] is False
    assert single["change"]["frame"]["p99"]["a_noise_percent"] is None
    assert single["change"]["moved_the_frame"] == ["usb", "gpu_wait"]
    # Nor over a run, nor over the page.
    before = known["fast"].read_bytes()
    over_a_run = nvtxshim("diff", known["fast"], known["slow"], "--json=%s" % known["fast"])
    assert (over_a_run.returncode, over_a_run.stdout) == (2, "") and known["fast"].read_bytes() == before
    assert over_a_run.stderr == ("nvtxshim: diff: %s is a run to compare, not the output's file "
                                 "(nvtxshim diff --help)\n" % known["fast"])
    out.write_text("")
    both = nvtxshim("diff", known["fast"], known["slow"], "--json=%s" % out, "--html", out)
    assert both.returncode == 2 and "--json and --html name the same file" in both.stderr
    # A document is never renamed over what is not a regular file.
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    refused = nvtxshim("diff", known["fast"], known["slow"], "--json=%s" % fifo)
    assert refused.returncode == 2 and "will not write %s: it is a FIFO" % fifo in refused.stderr


class Page(html.parser.HTMLParser):
    def __init__(self, text):
        super().__init__()
        self.rects, self.texts, self.titles, self.svgs, self.text = [], [], [], [], []
        self.in_title = self.in_text = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "svg":
            self.svgs.append(attrs.get("class"))
        if tag == "rect":
            self.rects.append(dict(attrs, svg=self.svgs[-1] if self.svgs else None))
        if tag == "text":
            self.texts.append(dict(attrs, svg=self.svgs[-1], data=""))
        self.in_title, self.in_text = tag == "title", tag == "text"

    def handle_endtag(self, tag):
        self.in_title = self.in_text = False

    def handle_data(self, data):
        self.text.append(data)
        if self.in_title:
            self.titles.append(data)
        if self.in_text:
            self.texts[-1]["data"] += data


def text_extent(text, char_width=6.6):
    """Where an SVG text of the pages' 11 px sans-serif lies along x, at most: 0.6 em a
    character is wider than any digit or lower-case letter of it."""
    width, x = len(text["data"]) * char_width, float(text["x"])
    anchor = text.get("text-anchor", "start")
    left = x if anchor == "start" else x - width if anchor == "end" else x - width / 2
    return left, left + width


def test_the_page_draws_each_group_and_each_run_and_no_label_overlaps_another(groups, known, tmp_path):
    out = tmp_path / "ab.html"
    result = nvtxshim("diff", groups["a"], "--", *groups["slower"], "--html", out)
    assert result.returncode == 0, result.stderr
    page = Page(out.read_text())
    text = "".join(page.text)
    assert "Verdict: slower" in text and "+66.7 to +120.0 %" in text
    assert "10.000-12.000 ms (18.2 %)" in text and "20.000-22.000 ms (9.5 %)" in text
    # Each group's histogram bars hold all of its frames: their shares add up to 100 %.
    for side in "AB":
        shares = [float(t.split(": ")[1].split(" %")[0]) for t in page.titles
                  if re.match(side + ": \\d", t)]
        assert sum(shares) == pytest.approx(100, abs=0.5), (side, shares)
    # On one scale: B's frames (20 ms and more) all lie right of A's median (11 ms).
    a_bars = [int(r["x"]) for r in page.rects if r.get("class") == "run-a"]
    b_bars = [int(r["x"]) for r in page.rects if r.get("class") == "run-b"]
    assert a_bars and b_bars and min(b_bars) > sorted(a_bars)[len(a_bars) // 2]
    # Each run's median and p99 on one scale: a row for each of the six.
    runs = [t for t in page.titles if re.match("[AB][123]: ", t)]
    assert [t[:2] for t in runs] == ["A1", "A2", "A3", "B1", "B2", "B3"]
    assert "A2: %s/a2.json: median 11.000 ms, p99 11.000 ms, 200 frames" % groups["a"] in runs
    # The scales' labels: on one line, none overlaps another or runs off the chart's left edge; the
    # histogram's last label ("longer", the bar of frames past the scale) included.
    for svg in ("histogram", "runs"):
        texts = [t for t in page.texts if t["svg"] == svg]
        assert texts and (svg != "histogram" or any(t["data"] == "longer" for t in texts))
        for i, one in enumerate(texts):
            assert text_extent(one)[0] >= 0, one
            for other in texts[i + 1:]:
                if one["y"] == other["y"]:
                    (l1, r1), (l2, r2) = text_extent(one), text_extent(other)
                    assert r1 <= l2 or r2 <= l1, (one, other)
    # A page is never renamed over what is not a regular file: trouble, exit 2.
    fifo = tmp_path / "fifo.html"
    os.mkfifo(fifo)
    refused = nvtxshim("diff", known["fast"], known["slow"], "--html", fifo)
    assert refused.returncode == 2 and "will not write" in refused.stderr and refused.stdout == ""


@pytest.mark.parametrize("args,message", [
    ([], "which runs? nvtxshim diff A B, or A1 A2 ... -- B1 B2 ..."),
    (["one.json"], "which runs? nvtxshim diff A B, or A1 A2 ... -- B1 B2 ..."),
    (["a", "b", "c"], "'c': more than one run a side needs -- between A's runs and B's "
                      "(nvtxshim diff A1 A2 -- B1 B2)"),
    (["a", "--", "b", "--", "c"], "one -- between A's runs and B's, not two"),
    (["--", "a", "b"], "no run of A before --"),
    (["a", "b", "--"], "no run of B after --"),
    (["-", "--", "b", "-"], "standard input can be one of the runs, not two"),
    (["a", "b", "--fail-over", "x"], "--fail-over needs a percentage, 0 or more (10, 2.5): 'x'"),
    (["a", "b", "--fail-over-median", "-3"],
     "--fail-over-median needs a percentage, 0 or more (10, 2.5): '-3'"),
    (["a", "b", "--fail-over-p99="], "--fail-over-p99 needs a percentage, 0 or more (10, 2.5): ''"),
    (["a", "b", "--json="], "--json= needs the document's file name (or - for standard output)"),
    (["a", "b", "--colour"], "unknown option --colour"),
])
def test_usage_errors_are_one_line_and_status_2(args, message):
    result = nvtxshim("diff", *args)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == "nvtxshim: diff: %s (nvtxshim diff --help)\n" % message


def frames_trace(path, count, pid):
    """COUNT frames of 10 ms each but the last, of 50 ms (one stall), in process PID."""
    events = [{"name": "process_name", "ph": "M", "pid": pid, "tid": pid, "args": {"name": "loop"}}]
    for n in range(1, count + 1):
        events.append({"name": "frame %d" % n, "cat": "nvtxshim", "ph": "X", "ts": n * 60000.0,
                       "dur": 50000.0 if n == count else 10000.0, "pid": pid, "tid": pid})
    path.write_text(json.dumps(events))
    return path


@pytest.mark.parametrize("kind", ["empty", "missing", "not a trace", "no frames", "no trace in it"])
def test_an_input_that_is_not_a_run_is_trouble_status_2(known, tmp_path, kind):
    bad = tmp_path / ("bad" if kind == "no trace in it" else "bad.json")
    if kind == "empty":
        bad.write_bytes(b"")
        line = "cannot read %s: empty file" % bad
    elif kind == "missing":
        line = "cannot read %s: No such file or directory" % bad
    elif kind == "not a trace":
        bad.write_text("frame 1 took 10 ms\n")
        line = "cannot read %s: not a trace (JSON or .pftrace) or an nsys export" % bad
    elif kind == "no frames":
        bad.write_text(json.dumps([{"name": "cuStreamSynchronize", "cat": "cuda", "ph": "X", "ts": 1,
                                    "dur": 5, "pid": 1, "tid": 1}]))
        line = "no frame ranges in %s: record it with NVTXSHIM_FRAME set" % bad
    else:
        bad.mkdir()
        (bad / "README").write_text("the runs go here\n")
        line = ("%s holds no trace or export (named *.json, *.pftrace, *.sqlite, *.nsys-rep or "
                "*.qdrep, or those .gz)" % bad)
    for args in ([known["fast"], bad], [bad, known["fast"]],
                 [known["fast"], known["fast"], "--", known["slow"], bad, "--fail-over", "10"]):
        result = nvtxshim("diff", *args)
        assert (result.returncode, result.stdout) == (2, ""), args
        assert result.stderr == "nvtxshim: diff: %s\n" % line


def test_a_run_of_fewer_than_100_frames_is_marked_where_it_is_named(tmp_path):
    """Under 100 frames the p99 by nearest rank is the slowest frame: one stall is the verdict.
    The run's line says so (and the page's); from 100 frames on the p99 leaves one stall out."""
    short, long = frames_trace(tmp_path / "short.json", 99, 7), frames_trace(tmp_path / "long.json", 100, 8)
    result = nvtxshim("diff", long, short, "--html", tmp_path / "page.html")
    assert result.returncode == 0, result.stderr
    assert "  A: %s: process 8 (loop), 100 frames\n" % long in result.stdout
    assert "  B: %s: process 7 (loop), 99 frames%s\n" % (short, NOTE) in result.stdout
    assert statistics(result.stdout)["p99"][:2] == (10.0, 50.0)
    page = (tmp_path / "page.html").read_text()
    assert page.count(NOTE) == 1 and "<td>99%s</td>" % NOTE in page


# ---- the example harness on the emulated camera ---------------------------------------------------

def record(path, *emucam):
    result = run([program("harness_physical"), "--frames", str(LIVE_FRAMES)],
                 env=dict(ON_ACT, NVTXSHIM_TRACE=str(path)), device=Device(LIVE_FRAMES, list(emucam)))
    assert result.returncode == 0 and b"frames=%d errors=0" % LIVE_FRAMES in result.stdout, result.stderr
    return path


class Rounds:
    """Rounds of recordings, made when first asked for: three runs each of A, of B (the camera
    3 ms a frame slower; B3 in the binary form) and of C (A again), one of each in turn, so that
    what load the machine has falls on all three alike."""

    def __init__(self, where):
        self.where, self.made = where, []

    def __getitem__(self, number):
        while len(self.made) <= number:
            runs, n = {"a": [], "b": [], "c": []}, len(self.made)
            for k in (1, 2, 3):
                runs["a"].append(record(self.where / ("a%d-%d.json" % (n, k))))
                runs["b"].append(record(self.where / ("b%d-%d.%s" % (n, k, "pftrace" if k == 3 else "json")),
                                        "--frame-time-us", str(DELAY_US)))
                runs["c"].append(record(self.where / ("c%d-%d.json" % (n, k))))
            self.made.append(runs)
        return self.made[number]


# Under load a run can be stalled throughout: with two busy processes and other suites beside it
# (a load of 7 on two cores) one run's median frame was 23.7 ms where its group's others had 5 ms.
# Such a run among A's rightly widens the interval past any gate (the data cannot tell that change
# from noise), so a test that wants an outcome records another round until it has one: three
# rounds at least, then more while the test has taken under ROUNDS_SECONDS, ROUNDS_MOST at most
# (under ASan beside two busy processes three rounds in a row once all had a stalled A). A quiet
# machine needs one.
ROUNDS_LEAST, ROUNDS_MOST, ROUNDS_SECONDS = 3, 10, 240


def rounds():
    """Round numbers for a test to try in turn, until it breaks out with the outcome it wants."""
    start = time.monotonic()
    for number in range(ROUNDS_MOST):
        yield number
        if number + 1 >= ROUNDS_LEAST and time.monotonic() - start > ROUNDS_SECONDS:
            return


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    return Rounds(tmp_path_factory.mktemp("live"))


def test_a_camera_3_ms_slower_is_a_regression_and_the_usb_column_moved_the_frame(live, tmp_path):
    out = tmp_path / "verdict.json"
    for number in rounds():
        runs = live[number]
        result = nvtxshim("diff", *runs["a"], "--", *runs["b"], "--fail-over", "10", "--json=%s" % out)
        document = valid(json.loads(out.read_text()))
        if result.returncode == 1 and document["change"]["moved_the_frame"][:1] == ["usb"]:
            break
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert re.match(r"nvtxshim: diff: the median frame grew \+\d+\.\d %", result.stderr), result.stderr
    assert document["gate"]["median"]["regression"] and document["gate"]["exit_status"] == 1
    assert [run["frames"] for run in document["a"]["runs"] + document["b"]["runs"]] == [LIVE_FRAMES] * 6
    assert all(run["process"] == "harness_physical" for run in document["b"]["runs"])
    delay = DELAY_US * 1000
    # Every frame of B waited the delay in its bulk IN: its usb mean and p50 are at least that.
    b_usb = document["b"]["columns"]["usb"]
    assert b_usb["mean"] >= delay and b_usb["p50"] >= delay, b_usb
    # The usb column moved the frame: named first, its mean grown by more than half the delay and
    # more than any other column's (whose work is the same).
    assert document["change"]["moved_the_frame"][0] == "usb", document["change"]
    columns = document["change"]["columns"]
    assert columns["usb"]["mean"] > delay / 2 and columns["usb"]["low"] > 0
    for name, change in columns.items():
        if name not in ("total", "usb"):
            assert change["mean"] < columns["usb"]["mean"], (name, change, columns["usb"])
    assert moved(result.stdout)[0][0] == "usb"
    # The frames' bulk IN is the call that waits for the camera: first of the names.
    first = names_table(result.stdout)[0]
    assert first[:2] == ("usb", "libusb_bulk_transfer") and first[2] > delay / 2e6, first


def test_identical_runs_pass_the_gate_and_show_both_groups_noise(live):
    for number in rounds():
        runs = live[number]
        result = nvtxshim("diff", *runs["a"], "--", *runs["c"], "--fail-over-median", "25")
        if result.returncode == 0:
            break
    assert result.returncode == 0 and result.stderr == "", (result.stdout, result.stderr)
    document = valid(json.loads(nvtxshim("diff", *runs["a"], "--", *runs["c"], "--json").stdout))
    lines = result.stdout.splitlines()
    start = lines.index("  noise, how far each group's runs lie apart (least to greatest; that spread "
                        "over the group's own figure):")
    for line, side in zip(lines[start + 1:start + 3], "ab"):
        medians = [r["median"] / 1e6 for r in document[side]["runs"]]
        p99s = [r["p99"] / 1e6 for r in document[side]["runs"]]
        assert line.startswith("    %s, 3 runs: median %.3f to %.3f ms (" % (side.upper(), min(medians),
                                                                          max(medians))), line
        assert "; p99 %.3f to %.3f ms (" % (min(p99s), max(p99s)) in line, line


def test_one_run_may_come_from_standard_input(live):
    runs = live[0]
    with open(runs["b"][2], "rb") as f:
        piped = nvtxshim("diff", *runs["a"], "--", *runs["b"][:2], "-", stdin=f)
    named = nvtxshim("diff", *runs["a"], "--", *runs["b"])
    assert piped.returncode == named.returncode == 0, piped.stderr
    assert piped.stdout.replace("B3: -:", "B3: %s:" % runs["b"][2]) == named.stdout


def test_a_run_without_frames_is_trouble(live, tmp_path):
    plain = tmp_path / "plain.json"
    result = run([program("harness_physical"), "--frames", "5"],
                 env={"NVTXSHIM_TRACE": str(plain), "LD_LIBRARY_PATH": STUB}, device=Device(5, []))
    assert result.returncode == 0
    done = nvtxshim("diff", live[0]["a"][0], plain)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == ("nvtxshim: diff: no frame ranges in %s: record it with NVTXSHIM_FRAME "
                           "set\n" % plain)
