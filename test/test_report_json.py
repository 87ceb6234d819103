"""nvtxshim report --json (cli/writers/report_json.c): the report's figures as one JSON document for
programs. Each document - of the example harness recorded in both trace forms, of hand-made
traces that hold every section the summary can have (marks, the kernel probe, camera frames and
the latency, a budget, several processes, capture windows) and of an nsys export - is valid
against docs/schema/report-v1.json with its keys in the schema's order, and holds the text
summary's figures: both are parsed and compared, figure for figure. On stdout the document is
alone and its bytes are those of --json=OUT; a target that cannot take it is one line. The
summary, the document and the page show the same columns: a part no frame spent time in is
left out of all three."""
import ast
import json
import os
import re
import subprocess

import jsonschema
import pytest

import test_cli_report as cli_report
import test_report_html as report_html
from conftest import ROOT, STUB, Device, clean_env, program, run

SCHEMA_PATH = os.path.join(ROOT, "docs", "schema", "report-v1.json")
MS, US = 1e6, 1e3  # nanoseconds in the summary's units
COLUMN_KEYS = {"gpu wait": "gpu_wait"}  # the summary's headings that are not the document's keys


def nvtxshim(*args, **kwargs):
    return subprocess.run([program("nvtxshim")] + [str(a) for a in args], env=clean_env(),
                          capture_output=True, timeout=300, **kwargs)


@pytest.fixture(scope="module")
def schema():
    with open(SCHEMA_PATH, encoding="utf-8") as f:
        loaded = json.load(f)
    jsonschema.Draft202012Validator.check_schema(loaded)
    return loaded


def resolve(schema, node, value):
    """NODE of SCHEMA with its $ref followed and, of a oneOf, the branch that is not null."""
    while True:
        if "$ref" in node:
            node = schema["$defs"][node["$ref"].rsplit("/", 1)[1]]
        elif "oneOf" in node and value is not None:
            node = next(branch for branch in node["oneOf"] if branch.get("type") != "null")
        else:
            return node


def keys_out_of_order(schema, node, value, where="$"):
    """Where VALUE's keys are not in the order NODE lists them (its properties, recursively)."""
    node = resolve(schema, node, value)
    wrong = []
    if isinstance(value, dict) and "properties" in node:
        listed = [key for key in node["properties"] if key in value]
        if list(value) != listed:
            wrong.append((where, list(value)))
        for key, item in value.items():
            wrong += keys_out_of_order(schema, node["properties"][key], item, "%s.%s" % (where, key))
    elif isinstance(value, list) and "items" in node:
        for i, item in enumerate(value):
            wrong += keys_out_of_order(schema, node["items"], item, "%s[%d]" % (where, i))
    return wrong


def report_both(schema, path, *options):
    """nvtxshim report PATH OPTIONS, as text and as --json: (the summary, the document), the
    document checked valid against the schema and in its key order."""
    text = nvtxshim("report", path, *options)
    assert text.returncode == 0, text.stderr
    document = nvtxshim("report", path, *options, "--json")
    assert document.returncode == 0 and document.stderr == text.stderr, document.stderr
    parsed = json.loads(document.stdout.decode("utf-8"))  # stdout is the document alone
    jsonschema.Draft202012Validator(schema).validate(parsed)
    assert keys_out_of_order(schema, schema, parsed) == []
    assert parsed["schema"] == "nvtxshim-report/1" and parsed["time_unit"] == "ns"
    assert parsed["file"] == str(path)
    return text.stdout.decode("utf-8"), parsed


# ---- the text summary, parsed ----------------------------------------------------------------

def sections(text):
    """{heading: [its lines, to the next blank line]} of the summary, in order."""
    found, lines = [], text.splitlines() + [""]
    i = 0
    while i < len(lines):
        if lines[i].startswith("== "):
            end = lines.index("", i)
            found.append((lines[i], lines[i + 1:end]))
            i = end
        i += 1
    return found


def fixed_width_cells(line, count):
    """The COUNT cells after the 16-character label of a per-frame row (each " %9s"), and the
    rest of the line."""
    cells = [line[16 + 10 * c:26 + 10 * c].strip() for c in range(count)]
    return cells, line[16 + 10 * count:]


def parse_frames(heading, body):
    match = re.match(r"== Per frame(?: of process (\d+)(?: (.+?))?)? \(milliseconds; p50 and p99 by nearest "
                     r"rank\)", heading)
    process = {"pid": int(match.group(1)) if match.group(1) else None,
               "name": ast.literal_eval(match.group(2)) if match.group(2) else None}
    header = body[0][16:]
    columns = [header[10 * c:10 * c + 10].strip() for c in range(len(header) // 10)]
    process["columns"] = [COLUMN_KEYS.get(column, column) for column in columns]
    process["statistics"] = {}
    for line in body[1:5]:
        label = line[:16].split()
        process["statistics"]["mean" if label[0] == "mean" else label[0]] = fixed_width_cells(line, len(columns))[0]
        if label[0] == "mean":
            process["frames"] = int(label[2])
    process["slowest"], process["notes"] = [], []
    rows = body[5:]
    start = rows.index("  slowest frames:")
    process["notes"] = rows[:start]
    for line in rows[start + 1:]:
        cells, extra = fixed_width_cells(line, len(columns))
        process["slowest"].append({"frame": int(line.split()[1]), "cells": cells, "extra": extra.strip()})
    return process


def parse_summary(text):
    parsed = {"names": [], "marks": [], "processes": [], "latency": None, "windows": []}
    for heading, body in sections(text):
        if heading.startswith("== NVTX ranges per name"):
            for line in body[1:]:
                fields = line.split()
                parsed["names"].append({"domain": fields[0], "name": " ".join(fields[1:-5]),
                                        "count": int(fields[-5]), "statistics": fields[-4:]})
        elif heading.startswith("== NVTX marks per kind"):
            for line in body[1:]:
                example = re.match(r"^ {23}(['\"].*) x(\d+)$", line)
                others = re.match(r"^ {23}\.\.\. and (\d+) other texts?$", line)
                if example:
                    parsed["marks"][-1]["examples"].append(
                        {"text": ast.literal_eval(example.group(1)), "count": int(example.group(2))})
                elif others:
                    parsed["marks"][-1]["others"] = int(others.group(1))
                else:
                    domain, count, kind = re.match(r"^  (\S+)\s+(\d+)  (.*)$", line).groups()
                    parsed["marks"].append({"domain": domain, "count": int(count), "kind": kind,
                                            "examples": [], "others": 0})
        elif heading.startswith("== Per frame"):
            parsed["processes"].append(parse_frames(heading, body))
        elif heading.startswith("== Capture to actuation"):
            parsed["latency"] = body
        elif heading.startswith("== Capture windows"):
            assert int(heading.split()[-1]) == len(body)
            for line in body:
                label, duration, span = re.match(r"^  (.*?)\s+(\S+) ms  (.*)$", line).groups()
                name, _, domain = label.rpartition("@")
                parsed["windows"].append({"name": name, "domain": domain, "duration": duration, "span": span})
        else:
            assert heading == "== No frame ranges: set NVTXSHIM_FRAME to count the loop's frames"
    return parsed


# ---- the comparison ---------------------------------------------------------------------------

def plural(count, word):
    return "%d %s%s" % (count, word, "" if count == 1 else "s")


def assert_statistics(cells, statistics, unit, decimals):
    """The summary's cells (mean, p50, p99, max) are the document's nanoseconds in UNIT: p50, p99
    and max exactly as printed, the mean within the printing's rounding (the document rounds the
    mean to a nanosecond first)."""
    mean, p50, p99, top = cells
    assert abs(float(mean) - statistics["mean"] / unit) <= 0.5 * 10 ** -decimals + 1e-9, (cells, statistics)
    assert [p50, p99, top] == ["%.*f" % (decimals, statistics[key] / unit) for key in ("p50", "p99", "max")]


def assert_names(text_names, names):
    assert len(text_names) == len(names)
    for said, row in zip(text_names, names):
        assert said["domain"] == row["domain"] and said["count"] == row["count"]
        assert said["name"] == " ".join(row["name"][:34].split())  # the summary cuts a name at 34
        assert_statistics(said["statistics"], row["statistics"], US, 1)


def assert_process(said, process, slowest_limit):
    if said["pid"] is not None:
        assert (said["pid"], said["name"]) == (process["pid"], process["name"])
    assert said["frames"] == process["frames"]
    assert said["columns"] == list(process["columns"])
    for c, column in enumerate(said["columns"]):
        assert_statistics([said["statistics"][s][c] for s in ("mean", "p50", "p99", "max")],
                          process["columns"][column], MS, 3)
    # the lines between the statistics and the slowest frames, made from the document
    notes = []
    n = process["frames"]
    if 0 < process["frames_with_kernel_figures"] < n:
        notes.append("  (kernel figures for %d of the %d frames; the others count as 0)"
                     % (process["frames_with_kernel_figures"], n))
    if "latency" in process["columns"] and process["frames_with_latency"] < n:
        notes.append("  (latency for %d of the %d frames: the others acted on no new camera frame)"
                     % (process["frames_with_latency"], n))
    drops = process["camera_frames_dropped"]
    if drops["total"]:
        listed = ["frame %d: %d" % (f["frame"], f["dropped"]) for f in drops["first_frames"]]
        if drops["frames_with_drops"] > len(drops["first_frames"]):
            listed.append("and " + plural(drops["frames_with_drops"] - len(drops["first_frames"]), "other frame"))
        if drops["outside_frames"]:
            listed.append("%d outside the frames" % drops["outside_frames"])
        notes.append("  camera frames dropped: %d (%s)" % (drops["total"], ", ".join(listed)))
    budget = process["budget"]
    if budget:
        notes.append("  over the budget of %.3f ms (from %s): %d of the %d frames" % (
            budget["duration"] / MS, {"option": "--budget", "marks": "the library's over budget marks"}[budget["from"]],
            budget["frames_over"], n))
    assert said["notes"] == notes
    assert len(process["slowest"]) == min(n, slowest_limit)
    assert [row["frame"] for row in said["slowest"]] == [row["frame"] for row in process["slowest"]]
    for row, frame in zip(said["slowest"], process["slowest"]):
        assert list(frame["columns"]) == said["columns"]
        assert row["cells"] == ["-" if value is None else "%.3f" % (value / MS) for value in frame["columns"].values()]
        extra = ""
        if frame["kernel"]:
            extra += "  (%s, %s)" % (plural(frame["kernel"]["preemptions"], "preemption"),
                                     plural(frame["kernel"]["faults"], "fault"))
        if frame["camera_frames_dropped"]:
            extra += "  (%s dropped)" % plural(frame["camera_frames_dropped"], "camera frame")
        assert row["extra"] == extra.strip()


def assert_latency(body, latency):
    if latency is None:
        assert body is None
        return
    if not latency["pairs"]:
        assert latency["statistics"] is None
        assert body == ["  no actuation after any of the %d camera frames (USB transfers out, serial or HID "
                        "writes: %d)" % (latency["camera_frames"], latency["actuations"])]
        return
    assert body[1].split()[:2] == [str(latency["pairs"]), "pair" if latency["pairs"] == 1 else "pairs"]
    assert_statistics(body[1].split()[2:], latency["statistics"], MS, 3)
    assert body[2] == "  (%s dequeued, %d not acted on; %s, %d on no new frame)" % (
        plural(latency["camera_frames"], "camera frame"), latency["camera_frames_not_acted_on"],
        plural(latency["actuations"], "actuation"), latency["actuations_on_no_new_frame"])
    assert latency["camera_frames"] - latency["pairs"] == latency["camera_frames_not_acted_on"]
    assert latency["actuations"] - latency["pairs"] == latency["actuations_on_no_new_frame"]


def assert_same_figures(text, document):
    said = parse_summary(text)
    assert_names(said["names"], document["names"])
    assert [{k: kind[k] for k in ("domain", "count", "kind", "examples")} for kind in document["marks"]] == \
        [{k: kind[k] for k in ("domain", "count", "kind", "examples")} for kind in said["marks"]]
    assert [max(kind["texts"] - 3, 0) for kind in document["marks"]] == [kind["others"] for kind in said["marks"]]
    assert len(said["processes"]) == len(document["processes"])
    several = len(document["processes"]) > 1
    for process_said, process in zip(said["processes"], document["processes"]):
        assert (process_said["pid"] is not None) == several
        assert_process(process_said, process, document["slowest_limit"])
        # a process's own per-name table where there are several (the page shows it)
        assert (process["names"] is not None) == several
    assert_latency(said["latency"], document["latency"])
    assert [(w["name"], w["domain"], w["duration"], w["span"]) for w in said["windows"]] == [
        (w["name"], w["domain"], "%.3f" % (w["duration"] / MS),
         "frames %d-%d" % (w["first_frame"], w["last_frame"]) if w["first_frame"] is not None else "no frames")
        for w in document["capture_windows"]]


# ---- traces ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def harness_traces(tmp_path_factory):
    """The example harness on the emulated camera, recorded by the trace recorder in each form."""
    directory = tmp_path_factory.mktemp("report_json")
    traces = []
    for name in ("harness.json", "harness.pftrace"):
        trace = directory / name
        recorded = run(cli_report.harness(), env=dict(cli_report.ON_ACT, NVTXSHIM_TRACE=str(trace),
                                                      LD_LIBRARY_PATH=STUB),
                       device=Device(cli_report.FRAMES, ()))
        assert recorded.returncode == 0, recorded.stderr
        traces.append(trace)
    return traces


def two_processes(path):
    """Two processes that count frames, one named, the other writing to a serial port."""
    path.write_text(json.dumps(cli_report.two_processes_events()))
    return path


def budget_and_marks(path):
    """Frames over a budget the library's marks give, marks of many kinds and texts, names the
    summary cuts and escapes, and 12 frames with dropped camera frames (more than the summary
    lists) and one drop outside the frames."""
    complete = cli_report.complete
    events = [{"name": "process_name", "ph": "M", "pid": 7, "tid": 7, "args": {"name": "rig \"one\"\n"}}]
    for n in range(1, 15):
        ms = 40 if n % 4 == 0 else 20 + n
        events.append(complete("frame %d" % n, "nvtxshim", 50 * n, 50 * n + ms, 7))
        if ms > 33:
            events.append({"name": "over budget frame %d: %d.000 ms > 33.000 ms" % (n, ms), "cat": "nvtxshim",
                           "ph": "i", "s": "t", "ts": 1000.0 * (50 * n + ms), "pid": 7, "tid": 7})
        if n > 1:
            events.append({"name": "dropped %d frame%s /dev/video0 at seq=%d" % (n % 3 + 1, "s" * (n % 3 > 0), n),
                           "cat": "v4l2", "ph": "i", "s": "t", "ts": 1000.0 * (50 * n + 1), "pid": 7, "tid": 7})
        events.append(complete("VIDIOC_DQBUF /dev/video0 640x480 YUYV buf=0", "v4l2", 50 * n + 2, 50 * n + 3, 7))
        events.append(complete("caf\u00e9 \U0001F600 \"q\" \\ a name longer than the table's column", "app",
                               50 * n + 3, 50 * n + 5, 7))
    events.append({"name": "dropped 4 frames /dev/video0 at seq=99", "cat": "v4l2", "ph": "i", "s": "t",
                   "ts": 10.0, "pid": 7, "tid": 7})
    for i in range(5):
        events.append({"name": "tick\t%d" % i, "cat": "app", "ph": "i", "s": "t", "ts": 20.0 + i, "pid": 7,
                       "tid": 7})
    events.append({"name": "plain", "cat": "app", "ph": "i", "s": "t", "ts": 30.0, "pid": 7, "tid": 7})
    path.write_text(json.dumps(events))
    return path


def no_frames(path):
    path.write_text(json.dumps([cli_report.complete("step", "app", 1, 2, 7)]))
    return path


def no_actuation(path):
    events = [event for event in cli_report.camera_rig_events()
              if event[1] in ("nvtxshim", "v4l2") or " IN " in event[2]]
    return cli_report.camera_rig_trace(path, events)


def frame_pairs(path):
    """The recorder's async frame pairs with kernel figures, and two capture windows."""
    path.write_text(json.dumps(cli_report.frame_pairs_trace()))
    return path


HAND_MADE = {
    "camera rig": lambda path: cli_report.camera_rig_trace(path, cli_report.camera_rig_events()),
    "camera rig, nsys export": lambda path: cli_report.camera_rig_export(path, cli_report.camera_rig_events()),
    "kernel probe and capture windows": frame_pairs,
    "two processes": two_processes,
    "budget, marks, drops": budget_and_marks,
    "camera without actuation": no_actuation,
    "no frames": no_frames}


# ---- the tests ---------------------------------------------------------------------------------

def test_the_harness_recorded_in_each_form_gives_the_summarys_figures(schema, harness_traces):
    documents = []
    for trace in harness_traces:
        text, document = report_both(schema, trace)
        assert_same_figures(text, document)
        [process] = document["processes"]
        assert process["frames"] == cli_report.FRAMES and process["name"] == "harness_physical"
        assert len(process["slowest"]) == 5
        documents.append(document)
    # the two forms of one program's trace: the same structure
    assert [sorted(d["processes"][0]["columns"]) for d in documents][0] == \
        sorted(documents[1]["processes"][0]["columns"])


@pytest.mark.parametrize("case", sorted(HAND_MADE))
def test_each_section_gives_the_summarys_figures(schema, tmp_path, case):
    path = HAND_MADE[case](tmp_path / ("trace.sqlite" if "nsys" in case else "trace.json"))
    text, document = report_both(schema, path)
    assert_same_figures(text, document)
    if case == "budget, marks, drops":
        [process] = document["processes"]
        assert process["budget"] == {"duration": 33000000, "from": "marks", "frames_over": 4}
        assert process["camera_frames_dropped"]["frames_with_drops"] == 13
        assert process["camera_frames_dropped"]["outside_frames"] == 4
        assert process["name"] == "rig \"one\"\n"
        # strings are the trace's, whole: the summary cuts a name, the document does not
        assert any(row["name"] == "caf\u00e9 \U0001F600 \"q\" \\ a name longer than the table's column"
                   for row in document["names"])
        # --budget and --slowest: the document follows them as the summary does
        text, document = report_both(schema, path, "--budget", "25ms", "--slowest", "2")
        assert_same_figures(text, document)
        assert document["processes"][0]["budget"] == {"duration": 25000000, "from": "option", "frames_over": 10}
        assert document["slowest_limit"] == 2 and len(document["processes"][0]["slowest"]) == 2
    if case == "kernel probe and capture windows":
        slowest = document["processes"][0]["slowest"]
        assert slowest[0]["kernel"] == {"preemptions": 3, "faults": 12}
        assert [w["first_frame"] for w in document["capture_windows"]] == [1, 1]
    if case == "no frames":
        assert document["processes"] == []


def test_an_nsys_export_gives_the_document_of_the_same_trace(schema, tmp_path):
    # The nsys export test_cli_report makes by hand for the camera rig is in the cases above; a
    # converted trace of it reads the same, and its document is the export's but for the file
    # and the frame ages.
    export = cli_report.camera_rig_export(tmp_path / "rig.sqlite", cli_report.camera_rig_events())
    trace = cli_report.camera_rig_trace(tmp_path / "rig.json", cli_report.camera_rig_events())
    _, from_export = report_both(schema, export)
    _, from_trace = report_both(schema, trace)
    for document in (from_export, from_trace):
        document["names"] = [row for row in document["names"] if not row["name"].startswith("frame age")]
        document.pop("file")
    assert from_export == from_trace


def test_stdout_holds_the_document_alone_and_the_same_bytes_as_a_file(tmp_path):
    trace = budget_and_marks(tmp_path / "t.json")
    piped = nvtxshim("report", trace, "--json")
    dash = nvtxshim("report", trace, "--json=-")
    out = tmp_path / "out.json"
    to_file = nvtxshim("report", trace, "--json=%s" % out)
    assert piped.returncode == dash.returncode == to_file.returncode == 0
    assert piped.stderr == dash.stderr == to_file.stderr == b""
    assert piped.stdout == dash.stdout == out.read_bytes()
    # with --json=OUT the summary is printed as ever
    assert to_file.stdout == nvtxshim("report", trace).stdout
    # through a shell pipe, twice: the same bytes
    again = subprocess.run("'%s' report '%s' --json | cat" % (program("nvtxshim"), trace), shell=True,
                           env=clean_env(), capture_output=True, timeout=300)
    assert again.stdout == piped.stdout
    # and with the page beside it
    page = tmp_path / "page.html"
    both = nvtxshim("report", trace, "--json", "--html", page)
    assert both.returncode == 0 and both.stdout == piped.stdout and page.exists()
    # the document is indented, a small object a line, and valid UTF-8 with the trace's strings
    assert piped.stdout.startswith(b'{\n  "schema": "nvtxshim-report/1",\n')
    assert "caf\u00e9 \U0001F600".encode("utf-8") in piped.stdout


def test_a_bad_json_target_is_one_line(tmp_path):
    trace = cli_report.camera_rig_trace(tmp_path / "rig.json", cli_report.camera_rig_events())
    summary = nvtxshim("report", trace).stdout
    before = sorted(os.listdir(tmp_path))
    # a folder that is not there: the summary first, then one line, exit 1, nothing left behind
    missing = tmp_path / "no" / "such" / "out.json"
    result = nvtxshim("report", trace, "--json=%s" % missing)
    assert (result.returncode, result.stdout) == (1, summary)
    assert result.stderr.decode() == "nvtxshim: report: cannot write %s: No such file or directory\n" % missing
    assert sorted(os.listdir(tmp_path)) == before
    # as report's other errors: a file it cannot read, a page it will not write
    assert nvtxshim("report", tmp_path / "missing.json").returncode == result.returncode
    assert nvtxshim("report", trace, "--html", tmp_path).returncode == result.returncode
    # a directory or a link: refused before anything is read, left as it is
    folder = tmp_path / "folder.json"
    folder.mkdir()
    link = tmp_path / "link.json"
    os.symlink(tmp_path / "elsewhere.json", link)
    for target, what in ((folder, "a directory"), (link, "a symbolic link")):
        result = nvtxshim("report", trace, "--json=%s" % target)
        assert (result.returncode, result.stdout) == (1, b"")
        assert result.stderr.decode() == (
            "nvtxshim: report: will not write %s: it is %s, and the JSON document replaces only a regular "
            "file (--json=- writes to standard output)\n" % (target, what))
    assert folder.is_dir() and os.readlink(link) == str(tmp_path / "elsewhere.json")
    assert not (tmp_path / "elsewhere.json").exists()
    # a full standard output
    with open("/dev/full", "wb") as full:
        result = subprocess.run([program("nvtxshim"), "report", str(trace), "--json"], env=clean_env(),
                                stdout=full, stderr=subprocess.PIPE, timeout=300)
    assert result.returncode == 1
    assert result.stderr.decode() == ("nvtxshim: report: cannot write the JSON document to standard output: "
                                      "No space left on device\n")
    # usage errors: exit 2, one line
    for args, said in (
            (["--json="], "--json=OUT needs the document's file name (or - for standard output)"),
            (["--json", "out.json"], "one file at a time: 'out.json' is one too many (the document's file is "
                                     "given as --json=OUT)"),
            (["--json=%s" % trace], "--json=%s is FILE itself" % trace),
            (["--json=%s" % (tmp_path / "p.html"), "--html", tmp_path / "p.html"],
             "--json and --html name the same file: %s" % (tmp_path / "p.html"))):
        result = nvtxshim("report", trace, *args)
        assert result.returncode == 2 and result.stdout == b""
        assert result.stderr.decode() == "nvtxshim: report: %s (nvtxshim report --help)\n" % said
    assert json.loads(trace.read_text())  # FILE itself untouched


def page_columns(page):
    """The columns of each process's statistics table on the page."""
    parsed = report_html.Page(page.read_text())
    # each process's table is under the same heading: its rows follow one another, each table's
    # first row its columns' headings
    rows = parsed.tables["Per frame (milliseconds; p50 and p99 by nearest rank)"]
    return [[COLUMN_KEYS.get(cell, cell) for cell in row if cell] for row in rows if row[:2] == ["", "total"]]


def test_the_summary_the_document_and_the_page_leave_out_the_same_columns(schema, tmp_path):
    # The camera rig's loop makes no CUDA or X11 calls, and pid 8 makes an X11 call outside its
    # frames: the domain is there, its column would be zeros. The page leaves such a column out;
    # so do the summary and the document.
    events = json.loads(cli_report.camera_rig_trace(tmp_path / "rig.json", cli_report.camera_rig_events())
                        .read_text())
    complete = cli_report.complete
    events += [complete("frame 1", "nvtxshim", 100, 110, 8), complete("XOpenDisplay", "x11", 90, 95, 8),
               complete("libusb_bulk_transfer", "usb", 101, 104, 8)]
    trace = tmp_path / "rig2.json"
    trace.write_text(json.dumps(events))
    page = tmp_path / "rig.html"
    text, document = report_both(schema, trace, "--html", page)
    assert_same_figures(text, document)
    expected = [["total", "usb", "camera", "serial", "rest", "latency"], ["total", "usb", "rest"]]
    assert [p["columns"] for p in parse_summary(text)["processes"]] == expected
    assert [list(p["columns"]) for p in document["processes"]] == expected
    assert page_columns(page) == expected
    assert "== Per frame of process 8 (milliseconds; p50 and p99 by nearest rank): time in USB and the rest" \
        in text.splitlines()
