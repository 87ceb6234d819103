"""nvtxshim report of a long trace: a million frames in each form, read from a file, gzipped
through a pipe and from a pipe, in memory that does not grow with the events, with every figure
the synthetic trace's generator (test/programs/longtrace.c) worked out while it wrote it.

The files are written as the library writes them (each thread's buffer at every frame's end and
when full); the pipes as when the writer skips frame flushes, so that one thread lags. The memory
bound is what the output needs and no more: a fixed allowance and a row a frame (FIXED and
PER_FRAME), never the events. Run alone:

    NVS_TEST_BUILD=build nice /usr/bin/python3 -m pytest -q test/test_long_trace.py

(NVS_LONG_FRAMES=N writes N frames instead of 1,000,000, for a quick try; the bound scales.)"""
import json
import math
import os
import re
import subprocess

import pytest

from childenv import clean_env
from conftest import BUILD, UNDER_ASAN, measured_end, no_peak_under_asan, popen_measured, program

# make test-asan (an instrumented command, libasan preloaded first): ASan's shadow memory and
# quarantine are its runtime's, not the reader's, so the peak is not judged there, and a tenth
# of the frames keeps its slowdown short.
FRAMES = int(os.environ.get("NVS_LONG_FRAMES", "100000" if UNDER_ASAN else "1000000"))
SEED = 43
# A frame: its range, its marker call (libusb_control_transfer), another call every other frame
# drawn from usb, cuda, x11 and v4l2 (an async submission ended on libusb's event thread among
# them), an over-budget mark for about 2 % of the frames: 2.6 ranges a frame, 568 MB of JSON.
# The .pftrace, whose events cost fewer bytes, has four idle libusb_handle_events ranges a frame
# more on the event thread (6.6 ranges a frame, 276 MB): ranges that count in no frame.
SHAPES = {"json": ["--calls", "0.5", "--events", "0"], "pftrace": ["--calls", "0.5", "--events", "4"]}

# What report may hold: FIXED for the command itself (its code and libraries, the reader's
# buffers and zlib's window, the per-name table in a fixed-size sketch, the marks by kind), and
# PER_FRAME bytes for each frame's row of the per-frame table as cli/model/figures.h has it (struct
# nvs_report_frame: the frame's number and start, 13 columns of 8 bytes, flags and counts: 152
# bytes) in an array that doubles (while realloc copies it, the old and the new both live: 304),
# its place in the slowest-first order (8) and a value to sort (8). Nothing per range: a reader
# that keeps an event (cli/model/events.h's struct nvs_event is 80 bytes, its text aside) goes over,
# on the .pftrace by 200 MB. For 1,000,000 frames: 387 MB. The readers of 16b656e kept every
# event and mapped a plain file whole: 866 MB for the JSON file and the gzipped pipe, 2,416 MB
# for the .pftrace file and pipe (2026-11-28).
FIXED = 64 << 20
PER_FRAME = 320


def allowance(frames):
    return FIXED + PER_FRAME * frames


def generator(form, expect, out="-", flush="frame"):
    """The generator of the trace in FORM to OUT, its figures to EXPECT. FLUSH "buffer": each
    thread's buffer goes out only when full (the library also writes every buffer at each
    frame's end, unless another thread holds the file), so libusb's event thread, which writes
    little, lags the loop by thousands of frames in the file."""
    return [program("test/longtrace"), "--form", form, "--frames", str(FRAMES), "--seed", str(SEED),
            "--expect", str(expect), "-o", str(out), "--flush", flush] + SHAPES[form]


def measured(process, label):
    """PROCESS's (a conftest.popen_measured) exit status after it ends, its peak resident memory
    in bytes and its CPU seconds: its own, not its siblings' in a pipe nor pytest's."""
    figures = measured_end(process)
    return dict(figures, label=label)


def report_command():
    return [os.path.join(BUILD, "nvtxshim"), "report"]


def run_report(tmp_path, source, label, feed=None):
    """report of SOURCE (a path, or "-" with FEED, the processes that write the pipe, the last
    one's stdout): its text and its measured figures."""
    text = tmp_path / (label + ".txt")
    errors = tmp_path / (label + ".err")
    with open(text, "wb") as out, open(errors, "wb") as err:
        stdin = feed[-1].stdout if feed else subprocess.DEVNULL
        report = popen_measured(report_command() + [str(source)], stdin=stdin, stdout=out, stderr=err,
                                env=clean_env())
        if feed:
            feed[-1].stdout.close()
        try:
            figures = measured(report, label)
        finally:
            for process in feed or ():
                process.wait(timeout=300)
    for process in feed or ():
        assert process.returncode == 0, "%s exited %d" % (process.args, process.returncode)
    assert figures["status"] == 0, "report %s exited %d: %s" % (
        label, figures["status"], errors.read_text()[-2000:])
    return text.read_text(), figures


# ---- the report's text --------------------------------------------------------------------

def section(text, heading):
    """The lines of TEXT's section that starts with "== HEADING", up to a blank line."""
    lines = text.splitlines()
    for at, line in enumerate(lines):
        if line.startswith("== " + heading):
            end = at + 1
            while end < len(lines) and lines[end].strip():
                end += 1
            return lines[at + 1:end]
    raise AssertionError("no section %r in the report:\n%s" % (heading, text[:3000]))


def last_numbers(words, count):
    """The last COUNT numbers of WORDS, each with whether it is marked an estimate ("~12.3", or
    "~" before it), and how many words come before them."""
    values, estimated, at = [], [], len(words)
    while len(values) < count:
        at -= 1
        if words[at] == "~":
            estimated[-1] = True
            continue
        values.append(float(words[at].lstrip("~")))
        estimated.append(words[at].startswith("~"))
    return values[::-1], estimated[::-1], at


def name_rows(text):
    """{(domain, name): ((count, mean, p50, p99, max), (estimated?) * 5)} of the per-name table,
    in microseconds. Its notes (a line in brackets) are left out."""
    rows = {}
    for line in section(text, "NVTX ranges per name")[1:]:
        words = line.split()
        if words[0].startswith("("):
            continue
        values, estimated, at = last_numbers(words, 5)
        rows[(words[0], " ".join(words[1:at]))] = (values, estimated)
    return rows


def frame_table(lines):
    """The per-frame table of LINES: the columns, {row label: [values]}, the budget line, the
    slowest frames [(number, [values])]. Each heading is " %9s" after 16 blanks."""
    header = lines[0]
    columns = [header[16 + 10 * i:26 + 10 * i].strip() for i in range((len(header) - 16) // 10)]
    rows, slowest, budget, in_slowest = {}, [], None, False
    for line in lines[1:]:
        if line.strip().startswith("over the budget of"):
            budget = line.strip()
        elif line.strip() == "slowest frames:":
            in_slowest = True
        else:
            # the label may be wider than its 14 characters ("mean of 1000000"): the values are
            # the last words
            words = line.split()
            try:
                values, _, at = last_numbers(words, len(columns))
            except (ValueError, IndexError):
                continue
            label = " ".join(words[:at])
            if in_slowest:
                slowest.append((int(label.split()[1]), values))
            else:
                rows[label] = values
    return columns, rows, budget, slowest


def stated_error(text):
    """The error the report states for its estimated p50s and p99s (a line that speaks of p50 and
    estimates): ("rank", fraction) where it speaks of ranks, else ("value", fraction); (None, 0)
    where it estimates none. A report that estimates must say by how much."""
    lines = [line for line in text.splitlines() if "estimat" in line.lower() and "p50" in line]
    if not lines:
        return None, 0.0
    for line in lines:
        found = re.search(r"(\d+(?:\.\d+)?)\s*%", line)
        if found:
            return "rank" if "rank" in line.lower() else "value", float(found.group(1)) / 100
    raise AssertionError("the report says figures are estimated without saying how closely:\n%s"
                         % "\n".join(lines))


def close_enough(printed, exact_ns, unit_ns, digits, relative=0.0):
    """Whether PRINTED (in units of UNIT_NS, DIGITS decimals) is EXACT_NS as printed: within half
    its last digit, and 2 ns for a timestamp's conversion; RELATIVE more for an estimate."""
    exact = exact_ns / unit_ns
    return abs(printed - exact) <= 0.5 * 10 ** -digits + 2 / unit_ns + relative * abs(exact)


def percentile_ok(printed, statistics, percent, unit_ns, digits, error):
    """Whether PRINTED is the nearest-rank PERCENT-th of STATISTICS (the generator's), or, given
    the stated ERROR of an estimate, within it: of the value, or of the rank (between the values
    at the thousandths of the ranks that enclose the percentile less and plus the error)."""
    if close_enough(printed, statistics["p%d" % percent], unit_ns, digits):
        return True
    kind, amount = error
    if kind == "value":
        return close_enough(printed, statistics["p%d" % percent], unit_ns, digits, amount)
    if kind == "rank":
        thousandths = statistics["thousandths"]
        low = thousandths[max(0, math.floor((percent / 100 - amount) * 1000))]
        high = thousandths[min(1000, math.ceil((percent / 100 + amount) * 1000))]
        slack = 0.5 * 10 ** -digits + 2 / unit_ns
        return low / unit_ns - slack <= printed <= high / unit_ns + slack
    return False


def compare(text, expected):
    """Every figure of EXPECTED (the generator's) that REPORT's TEXT prints, as a list of
    differences."""
    wrong = []
    error = stated_error(text)
    rows = name_rows(text)
    for name in expected["names"]:
        key = (name["domain"], name["name"])
        if key not in rows:
            wrong.append("no row %s %s in the per-name table" % key)
            continue
        (count, mean, p50, p99, most), estimated = rows[key]
        if any(estimated[i] for i in (0, 1, 4)):
            wrong.append("%s %s: the count, mean or max marked an estimate" % key)
        if count != name["count"]:
            wrong.append("%s %s: count %d, not %d" % (key + (count, name["count"])))
        for label, printed, exact in (("mean", mean, name["sum"] / name["count"]), ("max", most, name["max"])):
            if not close_enough(printed, exact, 1000, 1):
                wrong.append("%s %s: %s %.1f us, not %.3f" % (key + (label, printed, exact / 1000)))
        for percent, printed, marked in ((50, p50, estimated[2]), (99, p99, estimated[3])):
            if not percentile_ok(printed, name, percent, 1000, 1, error if marked else (None, 0)):
                wrong.append("%s %s: p%d %.1f us, not %.3f" % (key + (percent, printed,
                                                                     name["p%d" % percent] / 1000)))
    extra = set(rows) - {(n["domain"], n["name"]) for n in expected["names"]}
    if extra:
        wrong.append("rows the trace has no ranges for: %s" % sorted(extra))

    marks = section(text, "NVTX marks per kind")
    for mark in expected["marks"]:
        if not any(line.split()[:2] == [mark["domain"], str(mark["count"])] and
                   line.rstrip().endswith(mark["kind"]) for line in marks):
            wrong.append("no marks row '%s %d %s'" % (mark["domain"], mark["count"], mark["kind"]))

    columns, frame_rows, budget, slowest = frame_table(section(text, "Per frame"))
    want = [c["column"] for c in expected["columns"]]
    if columns != want:
        wrong.append("per-frame columns %s, not %s" % (columns, want))
    mean_label = "mean of %d" % expected["frames"]
    if mean_label not in frame_rows:
        wrong.append("no row '%s' (the frame count) in %s" % (mean_label, sorted(frame_rows)))
    for column in expected["columns"]:
        if column["column"] not in columns:
            continue
        i = columns.index(column["column"])
        for label, exact in ((mean_label, column["sum"] / column["count"]), ("p50", column["p50"]),
                             ("p99", column["p99"]), ("max", column["max"])):
            printed = frame_rows.get(label, [None] * len(columns))[i]
            right = printed is not None and close_enough(printed, exact, 1e6, 3)
            if not right:
                wrong.append("per frame %s %s: %s ms, not %.6f" % (column["column"], label, printed,
                                                                   exact / 1e6))
    # every call reaches the file within a few thousand frames of its own: the breakdown is exact
    wrong += ["the report calls the per-frame breakdown an estimate: %s" % line.strip()
              for line in text.splitlines() if "breakdown" in line and "estimat" in line]
    said = "over the budget of %.3f ms (from the library's over budget marks): %d of the %d frames" % (
        expected["budget_ns"] / 1e6, expected["over_budget"], expected["frames"])
    if budget != said:
        wrong.append("budget line %r, not %r" % (budget, said))
    if not slowest:
        wrong.append("no slowest frames listed")
    for (number, values), frame in zip(slowest, expected["slowest"]):
        if number != frame["frame"]:
            wrong.append("slowest frames: frame %d where frame %d is" % (number, frame["frame"]))
            break
        for i, column in enumerate(columns):
            if column in frame and not close_enough(values[i], frame[column], 1e6, 3):
                wrong.append("slowest frame %d: %s %.3f ms, not %.6f" % (number, column, values[i],
                                                                        frame[column] / 1e6))
    return wrong


def check(text, figures, expected):
    print("%s: %d frames, %.1f MB of %s; report's peak memory %.1f MB (allowed %.1f MB), CPU %.1f s" % (
        figures["label"], expected["frames"], expected["bytes"] / 1e6, expected["form"],
        figures["peak"] / 1e6, allowance(expected["frames"]) / 1e6, figures["cpu"]))
    assert expected["frames"] == FRAMES
    wrong = compare(text, expected)
    assert not wrong, "%s: %d figures differ from the generator's:\n%s" % (
        figures["label"], len(wrong), "\n".join(wrong[:40]))
    no_peak_under_asan()
    assert figures["peak"] <= allowance(expected["frames"]), (
        "%s: report's peak memory %.1f MB is over %.1f MB (%.0f MiB + %d bytes x %d frames): "
        "it keeps what grows with the events" % (
            figures["label"], figures["peak"] / 1e6, allowance(expected["frames"]) / 1e6, FIXED >> 20,
            PER_FRAME, expected["frames"]))


def expectation(path):
    with open(path) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """The trace in each form, written once: {form: (path, expected figures)}; removed after
    (730 MB that pytest would keep for three runs)."""
    folder = tmp_path_factory.mktemp("long")
    made = {}
    for form, name in (("json", "long.json"), ("pftrace", "long.pftrace")):
        path, expect = folder / name, folder / (name + ".expected.json")
        subprocess.run(generator(form, expect, path), check=True, timeout=300)
        made[form] = (path, expectation(expect))
    yield made
    for path, _ in made.values():
        path.unlink()


@pytest.mark.parametrize("form", ["json", "pftrace"])
def test_a_long_trace_file_is_reported_exactly_in_bounded_memory(traces, tmp_path, form):
    path, expected = traces[form]
    text, figures = run_report(tmp_path, path, form + " file")
    check(text, figures, expected)


@pytest.mark.parametrize("form,gzipped", [("json", True), ("pftrace", False)])
def test_a_long_trace_from_a_pipe_is_reported_exactly_in_bounded_memory(tmp_path, form, gzipped):
    expect = tmp_path / "expected.json"
    writer = subprocess.Popen(generator(form, expect, flush="buffer"), stdout=subprocess.PIPE,
                              env=clean_env())
    feed = [writer]
    if gzipped:
        feed.append(subprocess.Popen(["gzip", "-1", "-c"], stdin=writer.stdout, stdout=subprocess.PIPE))
        writer.stdout.close()
    label = "%s%s from a pipe" % (form, " gzipped" if gzipped else "")
    text, figures = run_report(tmp_path, "-", label, feed)
    check(text, figures, expectation(expect))
