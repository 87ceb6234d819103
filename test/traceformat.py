"""Reading trace files as a viewer does, and the rules every trace must keep.

The trace file contract (docs/user-guide.md, "The trace file"): the bare-array form of the
Trace Event Format, `[` then events, each followed by a comma, the closing `]`
optional. A file cut short after any whole event loads: a strict JSON parser
reads it after at most one trailing comma is removed and `]` is added. Push/pop
ranges are `X` events that nest on their thread; ranges that may end on another
thread or overlap others are async `b`/`e` pairs joined by (pid, cat, id)."""
import collections
import json


def parse_trace_text(text):
    """The events of a trace file's TEXT under the bare-array rule; also reads
    the older object form {"traceEvents": [...]} when it is complete. Raises
    ValueError when the text is neither."""
    body = text.rstrip()
    if body.startswith("[") and not body.endswith("]"):
        # Cut short: not JSON as it stands, so one parse (of the repaired text), not two.
        return json.loads((body[:-1] if body.endswith(",") else body) + "]")
    try:
        whole = json.loads(text)
    except ValueError:
        if not body.startswith("["):
            raise
        if body.endswith(","):
            body = body[:-1]
        return json.loads(body + "]")
    if isinstance(whole, dict):
        return whole["traceEvents"]
    return whole


def end_us(event):
    """An X event's end in microseconds, as exactly as its own timestamps: the sum of "ts" and
    "dur" in floating point may land a few picoseconds past the end a later event's "ts"
    (parsed from the same decimal) states, so it is summed in whole nanoseconds, and the
    quotient is the double that decimal parses to."""
    return (round(event["ts"] * 1000) + round(event["dur"] * 1000)) / 1000


def read_trace(path):
    with open(path, encoding="utf-8") as f:
        return parse_trace_text(f.read())


def read_complete_trace(path):
    """The events of a finished trace file (its process ended by return, exit,
    _exit or exec): the closing `]` is there, so the whole text is JSON as it
    stands. Raises ValueError when it is not."""
    with open(path, encoding="utf-8") as f:
        whole = json.loads(f.read())
    if isinstance(whole, dict):
        return whole["traceEvents"]
    if not isinstance(whole, list):
        raise ValueError("%s: not a trace (JSON %s)" % (path, type(whole).__name__))
    return whole


def check_nesting(events, where=""):
    """No `X` event partly overlaps another on the same thread: Perfetto drops
    such events or moves them to an overflow track. Times are compared in
    nanoseconds, as the writer wrote them (three decimals of a microsecond)."""
    by_thread = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X":
            start = round(e["ts"] * 1000)
            by_thread[(e.get("pid"), e.get("tid"))].append((start, start + round(e.get("dur", 0) * 1000), e))
    for thread, spans in by_thread.items():
        spans.sort(key=lambda s: (s[0], -s[1]))
        open_ends = []
        for start, end, event in spans:
            while open_ends and open_ends[-1][0] <= start:
                open_ends.pop()
            if open_ends:
                assert end <= open_ends[-1][0], "%sX event %r crosses the end of %r on thread %s" % (
                    where, event, open_ends[-1][1], thread)
            open_ends.append((end, event))


def join_async(events):
    """`b`/`e` pairs joined into one range each (ph "X", "async": True, the
    begin's thread, the end's args merged in), wherever each lies in the file
    (each thread writes its own part of it, so an end can come first); begins
    without an end are left out and returned apart. Returns (events with the
    pairs joined, unended)."""
    begins, ends, others = {}, {}, []
    for e in events:
        ph = e.get("ph")
        key = (e.get("pid"), e.get("cat"), e.get("id"))
        if ph in ("b", "e"):
            table = begins if ph == "b" else ends
            assert key not in table, "two async %s events for one id: %r" % (ph, e)
            table[key] = e
        else:
            others.append(e)
    unmatched = [e for key, e in ends.items() if key not in begins]
    assert not unmatched, "async ends without a begin: %r" % unmatched[:3]
    joined, unended = [], []
    for key, begin in begins.items():
        end = ends.get(key)
        if end is None:
            unended.append(begin)
            continue
        assert end["ts"] >= begin["ts"], "async range ends before it begins: %r %r" % (begin, end)
        rng = dict(begin)
        rng.update({"ph": "X", "dur": round(end["ts"] - begin["ts"], 3), "async": True,
                    "end_tid": end.get("tid")})
        rng["args"] = dict(begin.get("args", {}), **end.get("args", {}))
        joined.append(rng)
    return others + joined, unended


def check_converted(text, where=""):
    """The events of a file nvtxshim convert wrote, TEXT, after checking the rules it
    keeps: strict JSON, one event a line (the last one's comma a space, then `]`; an
    empty array is `[` and `]` alone),
    complete events nested on each row, every async begin ended, each async id used by
    one pair in its process and category, the names first and then every event in time
    order, and the launch arrows (flow events v1) each one "s" and one "f" with
    "bp":"e", not earlier, their ids used by no other pair or arrow."""
    events = json.loads(text)
    assert events == parse_trace_text(text)
    lines = text.split("\n")
    assert lines[0] == "[" and lines[-2:] == ["]", ""]
    assert (lines == ["[", "]", ""] if not events else
            all(line.endswith("},") for line in lines[1:-3]) and lines[-3].endswith("} "))
    check_nesting(events, "%s: " % where)
    _, unended = join_async(events)
    assert unended == []
    ids = [(e["pid"], e["cat"], e["id"]) for e in events if e["ph"] == "b"]
    assert len(ids) == len(set(ids))
    timed = [e["ts"] for e in events if e["ph"] != "M"]
    assert timed == sorted(timed)
    assert all(e["ph"] == "M" for e in events[:len(events) - len(timed)])
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    finishes = {e["id"]: e for e in events if e["ph"] == "f"}
    assert len(starts) == sum(e["ph"] == "s" for e in events), "a flow id used twice"
    assert len(finishes) == sum(e["ph"] == "f" for e in events), "a flow id used twice"
    assert set(starts) == set(finishes), "a flow without its other end"
    for flow_id, start in starts.items():
        finish = finishes[flow_id]
        assert (start["cat"], start["name"]) == (finish["cat"], finish["name"])
        assert finish.get("bp") == "e" and finish["ts"] >= start["ts"]
    assert not set(starts) & {e["id"] for e in events if e["ph"] == "b"}, "a flow id is an async pair's"
    return events
