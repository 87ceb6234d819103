"""nvtxshim report --html (cli/writers/report_html.c): the page, as a real browser shows it. Headless
Chromium, with no network (a network namespace of its own where it can have one, and a proxy
that is nowhere and no name lookups besides), renders the page of a hand-made trace whose frames
and calls are known exactly; PIL and numpy then measure the picture: each column's colour takes
its share of the bars, the band is behind exactly the frames over the budget, the budget line is
at the budget. The page's tables hold the text summary's numbers; names from the program are
text, not markup; the page refers to nothing outside itself; the summary on stdout is the same
with or without the page; many frames give a small page; a page that cannot be written leaves
nothing behind."""
import ast
import html.parser
import json
import os
import re
import shutil
import subprocess

import pytest

from conftest import clean_env, program

try:
    import numpy
    from PIL import Image
except ImportError:  # make deps installs both (python3-numpy, python3-pil)
    numpy = Image = None

# The page's colours, as docs/user-guide.md documents them ("nvtxshim report --html").
PARTS = {"usb": "#2e7d32", "cuda": "#f57c00", "gpu wait": "#9e9d24", "launch": "#00acc1",
         "x11": "#1565c0", "camera": "#8e24aa", "serial": "#00695c", "hid": "#ad1457", "rest": "#bdbdbd"}
PLOT_BACKGROUND, BAND, BUDGET_LINE, AXIS = "#f3f6fa", "#ffcdd2", "#d50000", "#616161"
WINDOW = (1280, 900)  # the frame chart, the page's first, lies inside it


def rgb(colour):
    return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))


# ---- the browser -------------------------------------------------------------------------------

_isolation = []


def no_network_prefix():
    """unshare -n (root) or unshare -r -n (a user namespace) where this machine allows one:
    the browser then has a loopback device that is down and nothing else."""
    if not _isolation:
        for prefix in (["unshare", "-n"], ["unshare", "-r", "-n"]):
            if shutil.which("unshare") and subprocess.run(prefix + ["true"],
                                                          capture_output=True).returncode == 0:
                _isolation.append(prefix)
                break
        else:
            _isolation.append([])
    return _isolation[0]


def browser(tmp_path, *args):
    """Headless Chromium on ARGS, with a profile of its own in TMP_PATH and no network."""
    chromium = shutil.which("chromium")
    if not chromium or Image is None:
        pytest.skip("chromium, python3-pil or python3-numpy is not installed (make deps installs them)")
    home = tmp_path / "browser"
    home.mkdir(exist_ok=True)
    argv = no_network_prefix() + [
        chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
        "--user-data-dir=%s" % (home / "profile"), "--proxy-server=127.0.0.1:9",
        "--host-resolver-rules=MAP * ~NOTFOUND", "--hide-scrollbars", "--force-device-scale-factor=1",
        "--force-color-profile=srgb"] + list(args)
    result = subprocess.run(argv, env=clean_env({"HOME": str(home)}), capture_output=True, timeout=120)
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    return result


def screenshot(tmp_path, page, size=WINDOW):
    """PAGE as the browser draws it in a window of SIZE: an array of rows of RGB pixels."""
    png = tmp_path / (page.stem + ".png")
    browser(tmp_path, "--screenshot=%s" % png, "--window-size=%d,%d" % size, page.as_uri())
    with Image.open(png) as image:
        return numpy.asarray(image.convert("RGB"))


def rendered_dom(tmp_path, page):
    """PAGE's document after the browser loaded it (and ran whatever script it had)."""
    return browser(tmp_path, "--dump-dom", page.as_uri()).stdout.decode()


def where(pixels, colour):
    return numpy.all(pixels == numpy.array(rgb(colour), dtype=numpy.uint8), axis=2)


def runs(row):
    """The [start, end) of each run of True in ROW."""
    edges = numpy.diff(numpy.concatenate(([0], row.astype(numpy.int8), [0])))
    return list(zip(numpy.nonzero(edges == 1)[0], numpy.nonzero(edges == -1)[0]))


# ---- the page's text ---------------------------------------------------------------------------

class Page(html.parser.HTMLParser):
    """A page's headings, tables (under the heading before each: {heading: [[cell text]]}), every
    element's tag and all of its text."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.tags, self.headings, self.tables, self.text = [], [], {}, []
        self._heading = self._cell = self._rows = None
        self._in_title = False
        self.title = ""
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag in ("h1", "h2", "h3"):
            self._heading = ""
        elif tag == "table":
            self._rows = self.tables.setdefault(self.headings[-1], [])
        elif tag == "tr" and self._rows is not None:
            self._rows.append([])
        elif tag in ("td", "th") and self._rows is not None:
            self._cell = ""
        elif tag == "title" and "svg" not in self.tags:
            self._in_title = True

    def handle_endtag(self, tag):
        if tag in ("h1", "h2", "h3"):
            self.headings.append(self._heading)
            self._heading = None
        elif tag == "table":
            self._rows = None
        elif tag in ("td", "th") and self._cell is not None:
            self._rows[-1].append(self._cell)
            self._cell = None
        elif tag == "title":
            self._in_title = False

    def handle_data(self, data):
        self.text.append(data)
        if self._heading is not None:
            self._heading += data
        if self._cell is not None:
            self._cell += data
        if self._in_title:
            self.title += data


# ---- traces ------------------------------------------------------------------------------------

BUDGET_MS = 33
OVER = (4, 9, 10, 15)  # the frames over the budget; the first and the last are not
COLUMN_CALLS = [  # column, domain, name: one call each per frame, one after the other
    ("usb", "usb", "libusb_bulk_transfer ep=0x81 IN 9216B"), ("cuda", "cuda", "cuMemcpyHtoD"),
    ("gpu wait", "cuda", "cuStreamSynchronize"), ("launch", "cuda", "cuLaunchKernel conv3x3"),
    ("x11", "x11", "XPutImage"), ("camera", "v4l2", "VIDIOC_DQBUF /dev/video0 640x480 YUYV buf=0"),
    ("serial", "serial", "read /dev/ttyUSB0 8B"), ("hid", "hid", "read /dev/hidraw0 8B")]


def complete(name, domain, start, end, pid=7, tid=7):
    """A complete event from START to END milliseconds."""
    return {"name": name, "cat": domain, "ph": "X", "ts": start * 1000.0, "dur": (end - start) * 1000.0,
            "pid": pid, "tid": tid}


def known_frames(count=20):
    """COUNT frames, each its calls one after the other from its start, and the rest: {frame
    number: {column: ms}}, each part different from frame to frame."""
    frames = {}
    for n in range(1, count + 1):
        total = 36 + n % 3 if n in OVER else 20 + (n * 5) % 11
        parts = {"usb": 2 + n % 3, "cuda": 1 + n % 2, "gpu wait": 2.5, "launch": 1 + (n % 4) / 4,
                 "x11": 1 + (n % 4) / 2, "camera": 1.5, "serial": 0.5 + n % 2, "hid": 1.0}
        parts["rest"] = total - sum(parts.values())
        frames[n] = dict(parts, total=total)
    return frames


def known_trace(path, frames, marks=True, name="loop", extra=()):
    """FRAMES as a trace the library would write, with its over-budget marks (MARKS)."""
    events = [{"name": "process_name", "ph": "M", "pid": 7, "tid": 7, "args": {"name": name}}]
    start = 0.0
    for n, parts in frames.items():
        events.append(complete("frame %d" % n, "nvtxshim", start, start + parts["total"]))
        at = start
        for column, domain, call in COLUMN_CALLS:
            events.append(complete(call, domain, at, at + parts[column]))
            at += parts[column]
        if marks and parts["total"] > BUDGET_MS:
            events.append({"name": "over budget frame %d: %.3f ms > %.3f ms" % (n, parts["total"], BUDGET_MS),
                           "cat": "nvtxshim", "ph": "i", "s": "t", "ts": (start + parts["total"]) * 1000.0,
                           "pid": 7, "tid": 7})
        start += parts["total"]
    events += list(extra)
    path.write_text(json.dumps(events))
    return path


def nvtxshim(*args):
    return subprocess.run([program("nvtxshim")] + [str(a) for a in args], env=clean_env(), capture_output=True,
                          text=True, timeout=120)


def report(trace, *options, out=None):
    """nvtxshim report TRACE [OPTIONS] --html OUT: its result, OUT checked written."""
    out = out or trace.with_suffix(".html")
    result = nvtxshim("report", trace, *options, "--html", out)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert out.exists()
    return result, out


# ---- the picture -------------------------------------------------------------------------------

class FrameChart:
    """The frame chart in a screenshot: its plot area (where its background colour is, down to the
    x axis's line), the bars (runs of the parts' colours along its bottom row, left to right), the
    band and the budget line."""

    def __init__(self, pixels):
        ys, xs = numpy.nonzero(where(pixels, PLOT_BACKGROUND))
        assert len(ys), "no plot background (%s) in the picture" % PLOT_BACKGROUND
        top, left, right = ys.min(), xs.min(), xs.max() + 1
        axis = where(pixels[:, left:right], AXIS).mean(axis=1) > 0.9
        bottom = top + int(numpy.argmax(axis[top:]))
        assert bottom > top, "no x axis under the plot"
        self.box = pixels[top:bottom, left:right]
        self.height, self.width = self.box.shape[:2]
        assert self.width >= 800 and self.height >= 250, self.box.shape
        self.parts = {column: where(self.box, colour) for column, colour in PARTS.items()}
        coloured = numpy.logical_or.reduce(list(self.parts.values()))
        self.bars = runs(coloured[-1])
        self.band = where(self.box, BAND)
        self.line = where(self.box, BUDGET_LINE)

    def bar_width(self):
        return int(numpy.median([end - start for start, end in self.bars]))

    def slots(self):
        """Each bar's slot, [from, to): from halfway to the bar before to halfway to the next."""
        middles = [0] + [(self.bars[i][1] + self.bars[i + 1][0]) // 2 for i in range(len(self.bars) - 1)]
        return list(zip(middles, middles[1:] + [self.width]))


@pytest.fixture(scope="module")
def known(tmp_path_factory):
    """The page of known_frames() (the budget from the library's marks) and its screenshot."""
    directory = tmp_path_factory.mktemp("report_html")
    frames = known_frames()
    result, page = report(known_trace(directory / "known.json", frames))
    return {"frames": frames, "page": page, "summary": result.stdout,
            "chart": FrameChart(screenshot(directory, page))}


def test_each_columns_colour_takes_its_share_of_the_bars(known):
    # One bar per frame, each column's colour present in proportion to the column's share of all
    # the frames' time. Each segment's edges are whole pixels, each rounded once from the exact
    # boundary, so a segment is off by at most one pixel row per bar; the budget line (2 rows)
    # hides at most 2 rows of one segment of each bar that reaches it. So a column's share of the
    # coloured pixels may differ from its share of the time by at most (bars x width x 1 + bars
    # reaching the line x width x 2 x 2) / coloured pixels: about 0.8 % here, when the smallest
    # share (launch) is 3 %.
    chart, frames = known["chart"], known["frames"]
    assert len(chart.bars) == len(frames)
    counts = {column: int(mask.sum()) for column, mask in chart.parts.items()}
    coloured = sum(counts.values())
    total_ms = sum(parts["total"] for parts in frames.values())
    crossing = sum(parts["total"] > BUDGET_MS for parts in frames.values())
    tolerance = (len(chart.bars) + 4 * crossing) * chart.bar_width() / coloured
    assert tolerance < 0.01
    for column in PARTS:
        expected = sum(parts[column] for parts in frames.values()) / total_ms
        assert expected > 3 * tolerance
        assert abs(counts[column] / coloured - expected) <= tolerance, (column, counts, expected, tolerance)
    # each bar's height is its frame's time, to one pixel, on one scale
    scales = []
    for (start, end), parts in zip(chart.bars, frames.values()):
        column = (start + end) // 2
        height = sum(int(mask[:, column].sum()) for mask in chart.parts.values())
        if parts["total"] > BUDGET_MS:  # the line crosses the bar
            height += int(chart.line[:, column].sum())
        scales.append(height / parts["total"])
    assert max(scales) - min(scales) <= 2 * 1.0 / 20, scales


def test_the_band_is_behind_exactly_the_frames_over_the_budget(known):
    chart = known["chart"]
    # above each bar, at the plot's top, the band or the background
    above = [tuple(chart.box[0, (start + end) // 2]) for start, end in chart.bars]
    assert set(above) <= {rgb(BAND), rgb(PLOT_BACKGROUND)}
    assert [n for n, colour in enumerate(above, 1) if colour == rgb(BAND)] == list(OVER)
    # and nowhere else: each column of the band lies in the slot of a frame over the budget, and
    # fills that slot's height wherever no bar or line covers it
    columns = set(numpy.nonzero(chart.band.any(axis=0))[0])
    slots = chart.slots()
    over_columns = {x for n in OVER for x in range(*slots[n - 1])}
    assert columns and columns <= over_columns
    for n in OVER:
        start, end = chart.bars[n - 1]
        assert (chart.band[:, start - 1] | chart.line[:, start - 1]).all()  # the gap before the bar
    # the summary's count is the page's
    assert "  over the budget of 33.000 ms (from the library's over budget marks): 4 of the 20 frames" in \
        known["summary"].splitlines()


def test_the_budget_line_is_at_the_budget(known):
    chart, frames = known["chart"], known["frames"]
    rows = [y for y in range(chart.height) if chart.line[y].sum() >= 0.9 * chart.width]
    assert len(rows) == 2 and rows[1] == rows[0] + 1, rows
    # the scale from the bars below the line: pixels per ms
    heights = []
    for (start, end), parts in zip(chart.bars, frames.values()):
        if parts["total"] < BUDGET_MS:
            column = (start + end) // 2
            heights.append(sum(int(mask[:, column].sum()) for mask in chart.parts.values()) / parts["total"])
    per_ms = sum(heights) / len(heights)
    # the line's lower row is the budget's: BUDGET_MS up from the plot's bottom
    assert abs((chart.height - 1 - rows[1]) - BUDGET_MS * per_ms) <= 1.5, (rows, per_ms)


def test_the_budget_comes_from_the_option_else_the_marks_else_nowhere(tmp_path):
    frames = known_frames()
    # --budget before the marks: 25 ms, and the frames over it
    _, page = report(known_trace(tmp_path / "option.json", frames), "--budget", "25ms")
    chart = FrameChart(screenshot(tmp_path, page))
    above = [tuple(chart.box[0, (start + end) // 2]) for start, end in chart.bars]
    assert [n for n, colour in enumerate(above, 1) if colour == rgb(BAND)] == [
        n for n, parts in frames.items() if parts["total"] > 25]
    assert "the budget, 25.000 ms (from --budget)" in "".join(Page(page.read_text()).text)
    # no marks, no option: no line, no band
    _, page = report(known_trace(tmp_path / "none.json", frames, marks=False))
    chart = FrameChart(screenshot(tmp_path, page))
    assert len(chart.bars) == len(frames) and not chart.band.any() and not chart.line.any()
    assert "the budget" not in "".join(Page(page.read_text()).text)


# ---- the page's figures ------------------------------------------------------------------------

def summary_table(summary, heading):
    """The rows under HEADING in the text summary, split into fields, to the next blank line."""
    lines = summary.splitlines() + [""]
    start = lines.index(heading)
    return [line.split() for line in lines[start + 2:lines.index("", start)]]


def test_the_pages_tables_hold_the_summarys_numbers(known):
    page = Page(known["page"].read_text())
    summary = known["summary"]
    # per name: the same rows, figure for figure
    names = page.tables["NVTX ranges per name (microseconds; p50 and p99 by nearest rank)"]
    assert names[0] == ["domain", "name", "count", "mean", "p50", "p99", "max"]
    text = summary_table(summary, "== NVTX ranges per name (microseconds; p50 and p99 by nearest rank)")
    assert [[row[0]] + row[1].split() + row[2:] for row in names[1:]] == text
    # per frame: the statistics, and the slowest frames with their breakdown
    stats = page.tables["Per frame (milliseconds; p50 and p99 by nearest rank)"]
    heading = next(line for line in summary.splitlines() if line.startswith("== Per frame"))
    text = summary_table(summary, heading)
    assert [" ".join(row).split() for row in stats[1:]] == text[:4]
    assert [cell for cell in stats[0] if cell] == ["total"] + list(PARTS)
    slowest = page.tables["The 5 slowest frames (milliseconds)"]
    assert [row[:-1] for row in slowest[1:]] == [[" ".join(row[:2])] + row[2:] for row in text[6:11]]
    # the histogram counts every frame once
    histogram = known["page"].read_text().split("<h3>Frame time histogram</h3>")[1].split("</svg>")[0]
    counts = [int(part.split(" frame")[0]) for part in histogram.split("ms: ")[1:]]
    assert sum(counts) == len(known["frames"]) and len(counts) > 1


def test_the_summary_is_the_same_with_the_page(known, tmp_path):
    trace = known_trace(tmp_path / "again.json", known["frames"])
    alone = nvtxshim("report", trace)
    assert alone.returncode == 0 and alone.stdout == known["summary"]


def test_names_from_the_program_are_text(tmp_path):
    # A range, a process and a capture window named with markup, and a file name with & and <:
    # the page shows them as they are, and no script of theirs runs (it would retitle the page).
    nasty = '<script>document.title="pwned"</script> & <i>co</i>'
    frames = known_frames(3)
    trace = known_trace(tmp_path / "a&b <c>.json", frames, name='<b>rig</b> & "co"', extra=[
        complete(nasty, "app", 1, 2), complete("capture <u>window</u> &amp;", "app", 0, 50)])
    _, page = report(trace)
    text = page.read_text()
    assert "<script" not in text and "<i>" not in text and "<b>" not in text and "<u>" not in text
    dom = Page(rendered_dom(tmp_path, page))
    assert dom.title == "nvtxshim report: %s" % trace
    assert not {"script", "i", "b", "u"} & set(dom.tags)
    names = dom.tables["NVTX ranges per name (microseconds; p50 and p99 by nearest rank)"]
    assert ["app", nasty] in [row[:2] for row in names]
    assert 'Frames of process 7 (<b>rig</b> & "co"): 3' in dom.headings
    assert dom.tables["Capture windows: 1"][1][0] == "capture <u>window</u> &amp;@app"


MARKS_HEADING = "NVTX marks per kind (each number as N), with the first texts of each"


def summary_marks(summary):
    """The summary's marks by kind: [(domain, count, kind, [(text, count)], other texts)]."""
    lines = summary.splitlines() + [""]
    start = lines.index("== " + MARKS_HEADING)
    kinds = []
    for line in lines[start + 2:lines.index("", start)]:
        example = re.fullmatch(r""" +(['"].*['"]) x(\d+)""", line)
        others = re.fullmatch(r" +\.\.\. and (\d+) other texts?", line)
        if example:
            kinds[-1][3].append((ast.literal_eval(example.group(1)), int(example.group(2))))
        elif others:
            kinds[-1][4] = int(others.group(1))
        else:
            domain, count, kind = re.fullmatch(r"  (\S+) +(\d+)  (.*)", line).groups()
            kinds.append([domain, int(count), kind, [], 0])
    return kinds


def page_marks(page):
    """The same from the page's table: a row per kind, then a row per further text, and one that
    counts the other texts."""
    rows = Page(page.read_text()).tables.get(MARKS_HEADING)
    assert rows, "no table under %r on the page" % MARKS_HEADING
    assert rows[0] == ["domain", "count", "kind", "first texts", "marks"]
    kinds = []
    for domain, count, kind, text, marks in rows[1:]:
        if domain:
            kinds.append([domain, int(count), kind, [], 0])
        others = re.fullmatch(r"\.\.\. and (\d+) other texts?", text)
        if others:
            kinds[-1][4] = int(others.group(1))
        elif text:
            kinds[-1][3].append((text, int(marks)))
    return kinds


def test_the_page_lists_the_marks_by_kind_as_the_summary_does(tmp_path):
    # kinds of one text (no number: no examples), of two (a word singular and plural), of five (three
    # listed, two more counted), the kernel probe's, and one with markup in it: the page's table
    # has the summary's kinds, counts and first texts, in its order, the markup as text
    def mark(name, ms, domain="app"):
        return {"name": name, "cat": domain, "ph": "i", "s": "t", "ts": ms * 1000.0, "pid": 7, "tid": 7}
    nasty = '<b>alarm</b> & 3 "faults"'
    marks = [mark("usb reset", 1, "usb"), mark("usb reset", 2, "usb"), mark("dropped 1 frame", 3, "v4l2"),
             mark("dropped 3 frames", 4, "v4l2"), mark("dropped 3 frames", 5, "v4l2"), mark(nasty, 6),
             mark("frame 2: runnable 1.5 ms (2 preemptions), blocked 0.3 ms, 1 fault", 40, "kernel")]
    marks += [mark("retry %d of 9" % n, 10 + i) for i, n in enumerate((5, 1, 4, 2, 3, 1))]
    result, page = report(known_trace(tmp_path / "marks.json", known_frames(3), extra=marks))
    summary = summary_marks(result.stdout)
    assert [kind[:3] for kind in summary] == [
        ["app", 6, "retry N of N"], ["app", 1, '<b>alarm</b> & N "faults"'],
        ["kernel", 1, "frame N: off-CPU figures"], ["usb", 2, "usb reset"], ["v4l2", 3, "dropped N frame(s)"]]
    assert summary[0][3:] == [[("retry 5 of 9", 1), ("retry 1 of 9", 2), ("retry 4 of 9", 1)], 2]
    assert page_marks(page) == summary
    assert "<b>" not in page.read_text()


def test_the_page_refers_to_nothing_outside_itself(known):
    text = known["page"].read_text()
    for reference in ("http:", "https:", "//", "<script", "<link", "<iframe", "<object", "<embed", "@import",
                      "url(", "<img"):
        assert reference not in text.lower(), reference
    assert all(text[at:].startswith("src=\"data:") for at in range(len(text)) if text.startswith("src=", at))


# ---- many frames, processes, the probe, the latency ----------------------------------------------

def test_many_frames_are_binned_into_a_small_page(tmp_path):
    # 100,000 frames: each bar a bin's distribution; the one frame over the budget (number
    # 50,000) is its bin's slowest, and the only bin with a strip under it. No band: behind
    # binned bars it covered whole plots.
    events, start = [], 0.0
    for n in range(1, 100001):
        total = 60.0 if n == 50000 else 10.0 + n % 7
        events.append(complete("frame %d" % n, "nvtxshim", start, start + total))
        events.append(complete("libusb_bulk_transfer", "usb", start, start + 3))
        start += total
    trace = tmp_path / "many.json"
    trace.write_text(json.dumps(events))
    _, page = report(trace, "--budget", "33ms")
    text = page.read_text()
    assert len(text) < 400 * 1024
    chart = text.split("<h3>Frame time per frame</h3>")[1].split("</svg>")[0]
    bars = chart.count("<g><title>")
    assert 100 <= bars <= 500
    assert "100000 frames in %d bins of %d or %d consecutive frames" % (
        bars, 100000 // bars, -(-100000 // bars)) in text
    assert re.search(r"slowest 60\.000 ms \(frame 50000\); 1 over the budget\. The median one", chart)
    assert chart.count('class="f-strip"') == 1 and 'class="f-over"' not in chart
    picture = FrameChart(screenshot(tmp_path, page))
    assert not picture.band.any()


# ---- a real run's length ---------------------------------------------------------------------

def long_run(count, seed=7):
    """COUNT frames as a rig's ten minutes look: most near 3.5 ms, 13 % over a 5 ms budget (5.5 to
    8 ms), one in 997 an 88 ms outlier; each frame 40 % in USB, the rest in no call. Totals in
    whole microseconds, so that the trace's and the report's figures agree exactly."""
    import random
    draw = random.Random(seed)
    totals = []
    for n in range(1, count + 1):
        if n % 997 == 0:
            us = 88000
        elif draw.random() < 0.13:
            us = draw.randint(5500, 8000)
        else:
            us = draw.randint(3000, 4200)
        totals.append(us)
    return totals


def long_trace(path, totals):
    with open(path, "w") as f:
        f.write("[\n")
        start = 0
        for n, us in enumerate(totals, 1):
            usb = us * 2 // 5
            f.write('{"name":"frame %d","cat":"nvtxshim","ph":"X","ts":%d,"dur":%d,"pid":7,"tid":7},\n'
                    % (n, start, us))
            f.write('{"name":"libusb_bulk_transfer","cat":"usb","ph":"X","ts":%d,"dur":%d,"pid":7,"tid":7},\n'
                    % (start, usb))
            start += us
        f.write('{"name":"process_name","ph":"M","pid":7,"tid":7,"args":{"name":"rig"}}\n]\n')
    return path


def nearest_rank(values, p):
    ordered = sorted(values)
    return ordered[-(-len(ordered) * p // 100) - 1]


# A bin's tooltip; a bin of fewer than 100 frames has no p99 of its own (its p99 is its slowest
# frame), and says none.
BIN_TITLE = re.compile(r"frames (\d+)-(\d+) \((\d+)\): median (\d+\.\d{3}) ms(?:, p99 (\d+\.\d{3}) ms)?, "
                       r"slowest (\d+\.\d{3}) ms \(frame (\d+)\); (\d+) over the budget")
ONE_TICK = ("a bin&#39;s slowest frame, its one tick: a bin of fewer than 100 frames has no p99 of its own "
            "(its p99 is its slowest frame)")


@pytest.mark.parametrize("count", [48, 12000, 200000])
def test_a_real_runs_length_draws_each_bins_distribution(tmp_path, count):
    totals = long_run(count)
    _, page = report(long_trace(tmp_path / ("run%d.json" % count), totals), "--budget", "5ms")
    text = page.read_text()
    assert len(text) < 600 * 1024, len(text)
    chart = text.split("<h3>Frame time per frame</h3>")[1].split("</svg>")[0]
    groups = re.findall(r"<g><title>(.*?)</title>(.*?)</g>", chart)
    bottom = 22 + 300                                     # the plot's top and height (report_html.c)
    if count <= 460:
        # One bar a frame, the band behind those over the budget: as a capture window draws.
        assert len(groups) == count and "f-strip" not in chart
        assert chart.count('class="f-over"') == sum(us > 5000 for us in totals)
        return
    bins = len(groups)
    assert 100 <= bins <= 460
    heights, medians = [], []
    for b, (title, shapes) in enumerate(groups):
        first, last = b * count // bins, (b + 1) * count // bins
        mine = totals[first:last]
        match = BIN_TITLE.match(title)
        assert match, title
        assert (int(match.group(1)), int(match.group(2)), int(match.group(3))) == (first + 1, last, len(mine))
        # The drawn figures are the bin's own, by nearest rank.
        assert float(match.group(4)) == nearest_rank(mine, 50) / 1000
        if len(mine) >= 100:
            assert float(match.group(5)) == nearest_rank(mine, 99) / 1000
        else:
            assert match.group(5) is None and nearest_rank(mine, 99) == max(mine)
        assert float(match.group(6)) == max(mine) / 1000
        over = sum(us > 5000 for us in mine)
        assert int(match.group(8)) == over
        strip = re.search(r'class="f-strip" x="\d+" y="\d+" width="\d+" height="6" fill-opacity="([\d.]+)"',
                          shapes)
        assert (strip is not None) == (over > 0)
        if strip:
            assert float(strip.group(1)) == pytest.approx(0.15 + 0.85 * over / len(mine), abs=0.001)
        # The bar: its stacked parts reach the median frame's height.
        tops = [int(y) for y in re.findall(r'class="f-(?:usb|rest)" x="\d+" y="(\d+)"', shapes)]
        heights.append(bottom - min(tops))
        medians.append(nearest_rank(mine, 50))
        # The ticks at or above the bar: the p99 and the slowest frame, or of a bin of fewer than
        # 100 frames its slowest alone.
        ticks = re.findall(r'class="f-(p99|max)" x="\d+" y="(\d+)"', shapes)
        assert [kind for kind, _ in ticks] == (["p99", "max"] if len(mine) >= 100 else ["max"])
        assert all(bottom - int(y) >= heights[-1] - 1 for _, y in ticks)
    # One scale for all: each bar's height is its median times the same pixels per microsecond.
    scale = sum(h * m for h, m in zip(heights, medians)) / sum(m * m for m in medians)
    assert all(abs(h - scale * m) <= 1.5 for h, m in zip(heights, medians)), (scale, heights[:10])
    # The scale is the bins' p99s', not the 88 ms outliers': a median frame is a visible bar.
    assert min(heights) >= 100
    # The histogram bounds its range by the p99.5 frame and says what lies past it.
    histogram = text.split("<h3>Frame time histogram</h3>")[1].split("</svg>")[0]
    outliers = count // 997
    assert "%d frames took longer, up to 88.000 ms" % outliers in histogram
    # The outliers' ticks are off the scale: their value is over the plot.
    assert set(re.findall(r'<text class="clipped" [^>]*>([^<]*)</text>', chart)) == {"88.000 ms"}
    drawn = [int(n) for n in re.findall(r"ms: (\d+) frames?</title>", histogram)]
    assert sum(drawn) == count - outliers and max(drawn) < count * 0.3
    # The picture: the bars in their colours, no band, the strip under the plot.
    picture = FrameChart(screenshot(tmp_path, page))
    assert not picture.band.any()
    assert picture.parts["usb"].any() and picture.parts["rest"].any()
    # 2-pixel bins touch: their bars make one run along the plot's bottom row.
    assert sum(end - start for start, end in picture.bars) >= picture.width * 0.95


def binned_chart(tmp_path, totals, *options):
    """The frame chart of the page of TOTALS (long_trace): its text, from the legend to the end
    of its picture, and per bar (tooltip, shapes)."""
    _, page = report(long_trace(tmp_path / ("run%d.json" % len(totals)), totals), *options)
    chart = page.read_text().split("<h3>Frame time per frame</h3>")[1].split("</svg>")[0]
    return chart, re.findall(r"<g><title>(.*?)</title>(.*?)</g>", chart)


def tick_kinds(shapes):
    return re.findall(r'class="f-(p99|max)"', shapes)


def test_a_bin_of_fewer_than_100_frames_has_one_tick_and_the_legend_says_why(tmp_path):
    # 12,000 frames in 460 bins of 26 or 27: a bin's p99 by nearest rank is its slowest frame, so
    # each bar has one tick, its slowest frame's, and the legend and the note say why; no tooltip
    # gives a p99.
    totals = long_run(12000)
    chart, groups = binned_chart(tmp_path, totals, "--budget", "5ms")
    assert len(groups) == 460
    legend = chart.split("</ul>")[0]
    assert ONE_TICK in legend and "a bin&#39;s p99" not in legend
    assert "the tick is the bin&#39;s slowest frame, and its p99 too" in chart
    for b, (title, shapes) in enumerate(groups):
        mine = totals[b * 12000 // 460:(b + 1) * 12000 // 460]
        assert tick_kinds(shapes) == ["max"]
        assert ", p99 " not in title and "slowest %.3f ms" % (max(mine) / 1000) in title
    # 45,770 frames: bins of 99 and of 100. Those of 100 have a p99 of their own and two ticks;
    # the legend has both keys and says which bins have one tick.
    chart, groups = binned_chart(tmp_path, long_run(45770), "--budget", "5ms")
    legend = chart.split("</ul>")[0]
    assert "a bin&#39;s p99" in legend and ONE_TICK not in legend
    assert "the one tick of a bin of fewer than 100 frames" in legend
    sizes = [int(re.match(r"frames \d+-\d+ \((\d+)\)", title).group(1)) for title, _ in groups]
    assert set(sizes) == {99, 100}
    assert all(tick_kinds(shapes) == (["p99", "max"] if size == 100 else ["max"])
               for size, (_, shapes) in zip(sizes, groups))


CLIPPED = re.compile(r'<text class="clipped" x="(\d+)" y="(\d+)" text-anchor="middle">([^<]*)</text>')


def test_a_tick_off_the_scale_shows_its_value(tmp_path):
    # 12,000 frames of 3 to 4.2 ms and one (frame 6001) of 500 ms: the scale holds the run's p99
    # frame and the bins' medians, so that frame's tick sits at the plot's top edge, and its value
    # is written over it, above the plot (which begins 22 pixels down the picture).
    top = 22
    totals = [3000 + (n * 37) % 1200 for n in range(12000)]
    totals[6000] = 500000
    chart, groups = binned_chart(tmp_path, totals)
    [(x, y, text)] = CLIPPED.findall(chart)
    assert text == "500.000 ms" and 0 < int(y) < top
    [shapes] = [shapes for title, shapes in groups if "(frame 6001)" in title]
    tick = re.search(r'class="f-max" x="(\d+)" y="(\d+)" width="(\d+)"', shapes)
    assert int(tick.group(2)) == top
    assert int(x) == int(tick.group(1)) + int(tick.group(3)) // 2
    # On the scale, no label: the same frame at 4 ms.
    totals[6000] = 4000
    chart, _ = binned_chart(tmp_path, totals)
    assert "500.000" not in chart and not CLIPPED.findall(chart)


def test_ticks_off_the_scale_close_together_share_a_label(tmp_path):
    # One frame in 211 far off the scale (30 to 430 ms; fewer than 1 %, so the run's p99 frame is
    # not one of them): every bin with such a frame has its tick at the top edge. Ticks closer
    # than a label's width share one label, which has the highest of their values: the labels do
    # not overlap, each is the value of a tick off the scale, and the highest of all is shown.
    import random
    draw = random.Random(3)
    totals = [3000 + (n * 37) % 1200 for n in range(24000)]
    clipped = {}
    for n in range(0, 24000, 211):
        totals[n] = 30000 + draw.randint(0, 400000)
        clipped[n] = totals[n]
    chart, groups = binned_chart(tmp_path, totals)
    labels = [(int(x), text) for x, _, text in CLIPPED.findall(chart)]
    assert 3 <= len(labels) < len(clipped)
    values = {"%.3f ms" % (us / 1000) for us in clipped.values()}
    assert all(text in values for _, text in labels)
    assert "%.3f ms" % (max(clipped.values()) / 1000) in [text for _, text in labels]
    # 11 px sans-serif takes under 7 pixels a character
    for (left, left_text), (right, right_text) in zip(labels, labels[1:]):
        assert right - left >= (len(left_text) + len(right_text)) * 7 / 2, labels
    assert labels[0][0] - len(labels[0][1]) * 7 / 2 > 64 - 4 and labels[-1][0] + len(labels[-1][1]) * 7 / 2 <= 1000


def test_each_process_has_its_section(tmp_path):
    frames = known_frames(4)
    trace = known_trace(tmp_path / "two.json", frames)
    events = json.loads(trace.read_text())
    events += [dict(e, pid=9, tid=9, ts=e["ts"] + 500.0) for e in events if e.get("ph") == "X"]
    trace.write_text(json.dumps(events))
    _, page = report(trace)
    parsed = Page(page.read_text())
    assert [h for h in parsed.headings if h.startswith("Frames of")] == [
        "Frames of process 7 (loop): 4", "Frames of process 9: 4"]
    assert parsed.headings.count("Frame time per frame") == 2
    assert parsed.headings.count("Frame time histogram") == 2
    # Each process has its own per-name table, beside the one of all of them together.
    own = "NVTX ranges per name in this process (microseconds; p50 and p99 by nearest rank)"
    assert parsed.headings.count(own) == 2
    assert "NVTX ranges per name, all processes together (microseconds; p50 and p99 by nearest rank)" \
        in parsed.headings
    all_counts = {tuple(row[:2]): int(row[2]) for row in parsed.tables[
        "NVTX ranges per name, all processes together (microseconds; p50 and p99 by nearest rank)"][1:]}
    assert all_counts[("usb", "libusb_bulk_transfer")] == 8


def test_the_kernel_probes_figures_and_the_latency_have_charts(tmp_path):
    frames = known_frames(4)
    figures = [{"offcpu_runnable_ns": 1000000 * n, "offcpu_blocked_ns": 500000, "offcpu_preemptions": n,
                "offcpu_faults": 10 + n} for n in range(1, 5)]
    trace = known_trace(tmp_path / "probe.json", frames)
    events = json.loads(trace.read_text())
    frame_events = [e for e in events if e.get("name", "").startswith("frame ")]
    for event, args in zip(frame_events, figures):
        event["args"] = args
    # a camera frame captured in frame 2 (its age range ends at the dequeue) and a serial write
    # after it: the latency runs from the capture to the write's end, 3.5 ms
    second = frame_events[1]["ts"] / 1000.0
    age = dict(complete("frame age /dev/video0", "v4l2", second + 5.5, second + 7.5), args={"payload": 2000000})
    events += [age, complete("write /dev/ttyUSB0 8B", "serial", second + 8, second + 9)]
    trace.write_text(json.dumps(events))
    _, page = report(trace)
    parsed = Page(page.read_text())
    assert "Off the CPU per frame (kernel probe)" in parsed.headings
    assert "Kernel figures for 4 of the 4 frames: 10 preemptions and 50 page faults in all." in parsed.text
    assert "Capture to actuation per frame" in parsed.headings
    latency = parsed.tables["Capture to actuation (milliseconds; p50 and p99 by nearest rank)"]
    assert latency[1] == ["1 pair", "3.500", "3.500", "3.500", "3.500"]
    # without them, neither
    _, page = report(known_trace(tmp_path / "plain.json", frames))
    parsed = Page(page.read_text())
    assert not {"Off the CPU per frame (kernel probe)", "Capture to actuation per frame"} & set(
        parsed.headings)


def test_a_page_that_cannot_be_written_leaves_nothing(tmp_path):
    trace = known_trace(tmp_path / "t.json", known_frames(3))
    before = sorted(os.listdir(tmp_path)), sorted(os.listdir(tmp_path.parent))
    for out, why in ((tmp_path / "no" / "such" / "page.html", "No such file or directory"),):
        result = nvtxshim("report", trace, "--html", out)
        assert result.returncode == 1
        assert result.stderr == "nvtxshim: report: cannot write %s: %s\n" % (out, why)
        assert result.stdout.startswith("== NVTX ranges per name")  # the summary came first
        assert (sorted(os.listdir(tmp_path)), sorted(os.listdir(tmp_path.parent))) == before
    result = nvtxshim("report", trace, "--html", trace)
    assert result.returncode == 2 and "is FILE itself" in result.stderr


def test_a_page_never_replaces_what_is_not_a_regular_file(tmp_path):
    # The page used to be renamed over OUT whatever it was: as root, --html /dev/null made
    # /dev/null a regular file. Every kind of node is made here, in a temporary folder, and
    # each is refused with one line and left as it was; a regular file is still replaced.
    import socket
    import stat
    trace = known_trace(tmp_path / "t.json", known_frames(3))
    nodes = tmp_path / "nodes"
    nodes.mkdir()
    target = nodes / "target.html"
    target.write_text("the link's target")
    os.symlink(target, nodes / "link.html")
    os.mkfifo(nodes / "fifo.html")
    os.mknod(nodes / "null.html", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(nodes / "socket.html"))
    (nodes / "directory.html").mkdir()
    kinds = {"link.html": ("a symbolic link", stat.S_ISLNK), "fifo.html": ("a FIFO", stat.S_ISFIFO),
             "null.html": ("a character device", stat.S_ISCHR),
             "socket.html": ("a socket", stat.S_ISSOCK),
             "directory.html": ("a directory", stat.S_ISDIR)}
    try:
        before = sorted(os.listdir(nodes))
        for name, (what, is_kind) in kinds.items():
            out = nodes / name
            result = nvtxshim("report", trace, "--html", out)
            assert (result.returncode, result.stdout) == (1, ""), result.stderr
            assert result.stderr == ("nvtxshim: report: will not write %s: it is %s, and the page "
                                     "replaces only a regular file\n" % (out, what))
            assert is_kind(os.lstat(out).st_mode), name
            assert sorted(os.listdir(nodes)) == before
        assert target.read_text() == "the link's target"
    finally:
        listener.close()
    regular = nodes / "page.html"
    regular.write_text("an old page")
    result = nvtxshim("report", trace, "--html", regular)
    assert result.returncode == 0 and regular.read_text().startswith("<!DOCTYPE html>")
