#!/usr/bin/env python3
"""report.py: what a profile of a control loop says, first.

    scripts/report.py REPORT.sqlite | TRACE.json [--slowest N]

Reads NVTX events from an nsys SQLite export (`nsys export --type sqlite`) or
from a trace written by NVTXSHIM_TRACE, and prints
  - per range name: count, mean, p50, p99 and max;
  - per frame (the `frame N` ranges of domain nvtxshim): the time in USB, CUDA
    copies, X11 and the rest, for the whole run and for the slowest frames;
  - the capture windows found.
Per-frame times are unions of the calls' intervals inside the frame, so
nested or overlapping calls count once. Two kinds of USB range are left out of
them because they are not time the loop spent in a call: a
`libusb_submit_transfer` range runs from submission to completion (the
transfer in flight), and `libusb_handle_events*` is an event thread waiting.
"""
import argparse
import bisect
import collections
import json
import sqlite3
import sys

NS_PER_US = 1000.0
CALL_DOMAINS = ("usb", "cuda", "x11")


class Event:
    __slots__ = ("domain", "name", "start", "end", "tid", "mark")

    def __init__(self, domain, name, start, end, tid, mark=False):
        self.domain, self.name, self.start, self.end, self.tid, self.mark = (
            domain, name, start, end, tid, mark)


def from_sqlite(path):
    db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "NVTX_EVENTS" not in tables:
        return []
    strings = dict(db.execute("SELECT id, value FROM StringIds")) if "StringIds" in tables else {}
    columns = {row[1] for row in db.execute("PRAGMA table_info(NVTX_EVENTS)")}
    domain_column = "domainId" if "domainId" in columns else "NULL"
    domains = {0: ""}
    rows = db.execute("SELECT start, end, eventType, text, textId, globalTid, %s FROM NVTX_EVENTS"
                      % domain_column).fetchall()
    for start, end, kind, text, text_id, tid, domain in rows:
        if kind == 75 and domain is not None:  # domain create: text is the domain's name
            domains[domain] = text or strings.get(text_id, "")
    events = []
    for start, end, kind, text, text_id, tid, domain in rows:
        name = text if text is not None else strings.get(text_id)
        if name is None:
            continue
        tid = (tid or 0) & 0xFFFFFF
        if kind in (59, 60) and end is not None:  # push/pop, start/end
            events.append(Event(domains.get(domain, ""), name, start, end, tid))
        elif kind == 34:  # mark
            events.append(Event(domains.get(domain, ""), name, start, start, tid, mark=True))
    return events


def load_trace_events(path):
    """A trace file's events; one cut short (the process died of a signal, so
    the closing ]} is missing) is read up to its last event."""
    with open(path) as f:
        text = f.read()
    try:
        return json.loads(text)["traceEvents"]
    except ValueError:
        body = text.rstrip().rstrip(",")
        return json.loads(body + "]}")["traceEvents"]


def from_trace(path):
    raw = load_trace_events(path)
    events = []
    for e in raw:
        if e.get("ph") == "X":
            start = e["ts"] * NS_PER_US
            events.append(Event(e.get("cat", ""), e["name"], start, start + e["dur"] * NS_PER_US,
                                e.get("tid", 0)))
        elif e.get("ph") == "i":
            start = e["ts"] * NS_PER_US
            events.append(Event(e.get("cat", ""), e["name"], start, start, e.get("tid", 0), True))
    return events


def percentile(sorted_values, fraction):
    index = min(len(sorted_values) - 1, int(fraction * len(sorted_values)))
    return sorted_values[index]


def short_name(event):
    return event.name.split(" ")[0] if event.domain in CALL_DOMAINS else event.name


def frame_number(event):
    parts = event.name.split(" ")
    if event.domain == "nvtxshim" and len(parts) == 2 and parts[0] == "frame" and parts[1].isdigit():
        return int(parts[1])
    return None


def union_length(intervals):
    total, current_start, current_end = 0, None, None
    for start, end in sorted(intervals):
        if current_end is None or start > current_end:
            if current_end is not None:
                total += current_end - current_start
            current_start, current_end = start, end
        else:
            current_end = max(current_end, end)
    if current_end is not None:
        total += current_end - current_start
    return total


def counts_toward_frame(event):
    return (event.domain in CALL_DOMAINS and not event.mark and
            not event.name.startswith("libusb_submit_transfer") and
            not event.name.startswith("libusb_handle_events"))


def breakdown(frames, events):
    calls = sorted((e for e in events if counts_toward_frame(e)), key=lambda e: e.start)
    starts = [e.start for e in calls]
    longest = max((e.end - e.start for e in calls), default=0)
    rows = []
    for frame in frames:
        lo = bisect.bisect_left(starts, frame.start - longest)
        hi = bisect.bisect_left(starts, frame.end)
        parts = {d: [] for d in CALL_DOMAINS}
        for e in calls[lo:hi]:
            start, end = max(e.start, frame.start), min(e.end, frame.end)
            if end > start:
                parts[e.domain].append((start, end))
        row = {"frame": frame_number(frame), "total": frame.end - frame.start}
        for domain in CALL_DOMAINS:
            row[domain] = union_length(parts[domain])
        row["rest"] = row["total"] - union_length([i for d in CALL_DOMAINS for i in parts[d]])
        rows.append(row)
    return rows


def print_names(events):
    durations = collections.defaultdict(list)
    for e in events:
        if not e.mark:
            durations[(e.domain, "frame N" if frame_number(e) else short_name(e))].append(e.end - e.start)
    print("== NVTX ranges per name (microseconds)")
    print("  %-9s %-34s %7s %10s %10s %10s %10s" % ("domain", "name", "count", "mean", "p50", "p99", "max"))
    for (domain, name), values in sorted(durations.items()):
        values.sort()
        print("  %-9s %-34s %7d %10.1f %10.1f %10.1f %10.1f" % (
            domain, name[:34], len(values), sum(values) / len(values) / NS_PER_US,
            percentile(values, 0.5) / NS_PER_US, percentile(values, 0.99) / NS_PER_US,
            values[-1] / NS_PER_US))
    marks = collections.Counter((e.domain, e.name) for e in events if e.mark)
    if marks:
        print("  marks: " + ", ".join("%s %r x%d" % (d, n, c) for (d, n), c in sorted(marks.items())))


def print_frames(events, slowest):
    frames = sorted((e for e in events if frame_number(e) and not e.mark), key=lambda e: e.start)
    print()
    if not frames:
        print("== No frame ranges: set NVTXSHIM_FRAME to count the loop's frames")
        return
    rows = breakdown(frames, events)
    ms = 1e6
    columns = ("total",) + CALL_DOMAINS + ("rest",)
    print("== Per frame (milliseconds): time in USB, CUDA copies, X11 and the rest")
    print("  %-14s %9s %9s %9s %9s %9s" % (("",) + columns))
    for label, pick in (("mean", lambda v: sum(v) / len(v)), ("p50", lambda v: percentile(v, 0.5)),
                        ("p99", lambda v: percentile(v, 0.99)), ("max", lambda v: v[-1])):
        print("  %-14s" % ("%s of %d" % (label, len(rows)) if label == "mean" else label) +
              "".join(" %9.3f" % (pick(sorted(r[c] for r in rows)) / ms) for c in columns))
    print("  slowest frames:")
    for row in sorted(rows, key=lambda r: -r["total"])[:slowest]:
        print("  %-14s" % ("frame %d" % row["frame"]) +
              "".join(" %9.3f" % (row[c] / ms) for c in columns))


def print_captures(events):
    captures = [e for e in events if not e.mark and e.domain != "" and not frame_number(e)
                and e.domain not in CALL_DOMAINS and e.domain != "kernel"
                and e.name.split(" ")[0] == "capture"]
    if captures:
        print()
        print("== Capture windows: %d" % len(captures))
        for e in sorted(captures, key=lambda e: e.start):
            inside = [frame_number(f) for f in events
                      if frame_number(f) and not f.mark and e.start <= f.start < e.end]
            span = ("frames %d-%d" % (min(inside), max(inside))) if inside else "no frames"
            print("  %-24s %10.3f ms  %s" % ("%s@%s" % (e.name, e.domain), (e.end - e.start) / 1e6, span))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("file", help="an nsys SQLite export (.sqlite) or an NVTXSHIM_TRACE file (.json)")
    parser.add_argument("--slowest", type=int, default=5, help="slowest frames to list (5)")
    args = parser.parse_args()
    events = from_sqlite(args.file) if args.file.endswith(".sqlite") else from_trace(args.file)
    if not events:
        print("report: no NVTX events in %s" % args.file, file=sys.stderr)
        return 1
    print_names(events)
    print_frames(events, args.slowest)
    print_captures(events)
    return 0


if __name__ == "__main__":
    sys.exit(main())
