"""Writes small .pftrace files as docs/pftrace.md lays them out, with perfetto_trace_pb2
(build/pyenv's python): a good one, and ones each broken in one way, so that the tests
can show test/pftrace_check.py finds each problem (a broken encoder cannot pass it).

    pftrace_craft.py VARIANT OUT

writes OUT and OUT.expected.json (the ranges and marks the good content holds, in
CLOCK_MONOTONIC ns). VARIANT: good, or one of BROKEN's keys."""
import json
import sys

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

CLEARED = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
NEEDS = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
BEGIN, END, INSTANT = 1, 2, 3
PAGE = 4096
PID = 4242
P = 2 * PID + 1

# What each broken variant does, and a piece of the problem the checker must report.
BROKEN = {
    "iid_before_definition": "event_names iid",
    "missing_cleared": "lacks SEQ_INCREMENTAL_STATE_CLEARED",
    "track_without_descriptor": "has no TrackDescriptor",
    "unbalanced_end": "closes no open slice",
    "never_ended": "never ends",
    "missing_needs": "without SEQ_NEEDS_INCREMENTAL_STATE",
    "clock_before_snapshot": "before a clock snapshot defined it",
    "time_backwards": "negative delta",
    "unknown_field": "fields the schema does not know",
    "crossing_page": "crosses the 4 KiB page boundary",
    "iid_two_meanings": "iids come from one counter",
    "primary_clock": "not MONOTONIC (3)",
    "partial_packet": "ends inside an element",
    "thread_without_tid": "without pid and tid",
    "stale_iid_after_clear": "used before its definition",
    # The END that names a range under another domain's must carry the begin's categories:
    # Perfetto matches them joined ("app,stage").
    "end_categories_differ": "closes no open slice",
}


def varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7f
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


class File:
    def __init__(self, variant):
        self.variant = variant
        self.out = bytearray()
        self.next_iid = 4     # 1..3: the annotation names payload, category, color
        self.iids = {}        # (kind, text) -> iid, process-wide
        self.expected = {"ranges": [], "marks": []}

    def iid(self, kind, text):
        key = (kind, text)
        if key not in self.iids:
            self.iids[key] = self.next_iid
            self.next_iid += 1
        return self.iids[key]

    def write(self, packet, raw_tail=b""):
        data = packet.SerializeToString() + raw_tail
        record = b"\x0a" + varint(len(data)) + data
        room = PAGE - len(self.out) % PAGE
        if len(record) > room and self.variant != "crossing_page":
            self.pad(room)
        self.out += record

    def pad(self, length):
        if length % 2:
            self.out += b"\x10\x80\x00"
            length -= 3
        self.out += b"\x10\x00" * (length // 2)

    def header(self, t):
        p = pb.TracePacket()
        p.track_descriptor.uuid = P
        p.track_descriptor.process.pid = PID
        p.track_descriptor.process.process_name = "crafted"
        self.write(p)
        p = pb.TracePacket()
        for cid, value in ((3, t), (6, t + 5000), (1, t + 10 ** 18)):
            c = p.clock_snapshot.clocks.add()
            c.clock_id, c.timestamp = cid, value
        p.clock_snapshot.primary_trace_clock = 6 if self.variant == "primary_clock" else 3
        self.write(p)


class Sequence:
    def __init__(self, f, sid, tid, t0, name):
        self.f, self.sid, self.tid, self.now = f, sid, tid, t0
        self.track = 1 << 61 | tid
        self.defined = set()
        self.clear(t0, name)

    def clear(self, t0, name=None):
        self.defined = set()
        self.now = t0
        p = pb.TracePacket()
        p.trusted_packet_sequence_id = self.sid
        broken = self.f.variant == "missing_cleared" and self.sid == 3
        p.sequence_flags = 0 if broken else CLEARED | NEEDS
        p.trace_packet_defaults.timestamp_clock_id = 64
        p.trace_packet_defaults.track_event_defaults.track_uuid = self.track
        if not (self.f.variant == "clock_before_snapshot" and self.sid == 2):
            c = p.clock_snapshot.clocks.add()
            c.clock_id, c.timestamp, c.is_incremental = 64, t0, True
            c = p.clock_snapshot.clocks.add()
            c.clock_id, c.timestamp = 3, t0
        for iid, text in ((1, "payload"), (2, "category"), (3, "color")):
            entry = p.interned_data.debug_annotation_names.add()
            entry.iid, entry.name = iid, text
        self.f.write(p)
        if name is not None:
            self.describe_thread(name)

    def describe_thread(self, name, tid=None):
        p = pb.TracePacket()
        p.trusted_packet_sequence_id = self.sid
        p.sequence_flags = NEEDS        # every packet after the sequence's defaults
        tid = tid or self.tid
        p.track_descriptor.uuid = 1 << 61 | tid
        p.track_descriptor.parent_uuid = P
        if not (self.f.variant == "thread_without_tid" and self.sid == 2):
            p.track_descriptor.thread.pid = PID
            p.track_descriptor.thread.tid = tid
        p.track_descriptor.thread.thread_name = name
        self.f.write(p)

    def packet(self):
        p = pb.TracePacket()
        p.trusted_packet_sequence_id = self.sid
        p.sequence_flags = NEEDS
        return p

    def use(self, p, kind, text):
        """The iid of TEXT, defined in packet P when the sequence lacks it."""
        iid = self.f.iid(kind, text)
        if (kind, iid) not in self.defined:
            self.defined.add((kind, iid))
            table = getattr(p.interned_data, kind)
            entry = table.add()
            entry.iid = iid
            if kind == "debug_annotation_string_values":
                entry.str = text.encode()
            else:
                entry.name = text
        return iid

    def event(self, kind, t, name=None, domain=None, args=None, track=None, absolute=False,
              interned=True, raw_tail=b""):
        p = self.packet()
        if absolute:
            p.timestamp_clock_id = 3
            p.timestamp = t
        else:
            delta = t - self.now
            p.timestamp = delta if delta >= 0 else delta + (1 << 64)
            self.now = t
        e = p.track_event
        e.type = kind
        if track is not None:
            e.track_uuid = track
        if name is not None:
            if interned:
                e.name_iid = self.use(p, "event_names", name)
            else:
                e.name = name
        if domain is not None:
            e.category_iids.append(self.use(p, "event_categories", domain))
        args = dict(args or {})
        if isinstance(args.get("category"), str):
            # A named NVTX category: the second category (docs/pftrace.md).
            e.category_iids.append(self.use(p, "event_categories", args.pop("category")))
        for key, value in args.items():
            a = e.debug_annotations.add()
            if key in ("payload", "category", "color"):
                a.name_iid = {"payload": 1, "category": 2, "color": 3}[key]
            else:
                a.name = key
            if isinstance(value, str):
                a.string_value = value
            elif isinstance(value, float):
                a.double_value = value
            elif value < 0:
                a.int_value = value
            else:
                a.uint_value = value
        self.f.write(p, raw_tail)
        return p

    def async_descriptor(self, uuid, domain):
        p = self.packet()
        p.sequence_flags = NEEDS
        p.track_descriptor.uuid = uuid
        p.track_descriptor.parent_uuid = P
        p.track_descriptor.name = domain
        self.f.write(p)


def craft(variant):
    f = File(variant)
    base = 1_000_000_000_000
    f.header(base)
    main = Sequence(f, 2, 100, base + 1000, "crafted")
    other = Sequence(f, 3, 101, base + 1500, "worker")
    expect = f.expected

    def rng(name, domain, start, end, args=None, tid=100, is_async=False):
        expect["ranges"].append({"name": name, "category": domain, "start_ns": start, "end_ns": end,
                                 "args": args or {}, "tid": tid, "async": is_async})

    t = base + 2000
    # push/pop: outer > inner, a mark inside, payload on the END, category interned.
    main.event(BEGIN, t, "outer", "default", {"category": "stage"})
    if variant == "iid_before_definition":
        # "inner" used by a name_iid that this sequence defines only later.
        iid = f.iid("event_names", "inner")
        p = main.packet()
        p.timestamp = 1000
        main.now += 1000
        p.track_event.type = BEGIN
        p.track_event.name_iid = iid
        p.track_event.category_iids.append(f.iid("event_categories", "default"))
        f.write(p)
        later = main.packet()
        later.interned_data.event_names.add(iid=iid, name="inner")
        f.write(later)
        main.defined.add(("event_names", iid))
    else:
        main.event(BEGIN, t + 1000, "inner", "default")
    main.event(INSTANT, t + 1500, "a mark", "default", {"color": "#00c853", "payload": 7})
    main.event(END, t + 2000, args={"payload": 4096})
    main.event(END, t + 3000)
    rng("outer", "default", t, t + 3000, {"category": "stage"})
    rng("inner", "default", t + 1000, t + 2000, {"payload": 4096})
    expect["marks"].append({"name": "a mark", "category": "default", "ts_ns": t + 1500,
                            "args": {"color": "#00c853", "payload": 7}, "tid": 100})
    # Two domains' ranges that cross: app's END names its range.
    t += 10_000
    main.event(BEGIN, t, "app interleaved", "app",
               {"category": "stage"} if variant == "end_categories_differ" else None)
    main.event(BEGIN, t + 1000, "default interleaved", "default", interned=False)
    main.event(END, t + 2000, "app interleaved", "app")
    main.event(END, t + 3000, args={"payload": -5})
    rng("app interleaved", "app", t, t + 2000)
    rng("default interleaved", "default", t + 1000, t + 3000, {"payload": -5})
    # An async range begun on main, ended on the worker; its track described just before.
    t += 10_000
    if variant != "track_without_descriptor":
        main.async_descriptor(2, "default")
    main.event(BEGIN, t, "crosses threads", "default", {"payload": 2.5, "category": 9}, track=2)
    other.event(END, t + 4000, track=2, args={"queued_ns": 12})
    rng("crosses threads", "default", t, t + 4000, {"payload": 2.5, "category": 9, "queued_ns": 12},
        is_async=True)
    # A range written after the fact, earlier than the sequence's last time: absolute clock.
    main.async_descriptor(4, "camera")
    main.event(BEGIN, t - 5000, "frame age", "camera", track=4, absolute=True)
    main.event(END, t + 500, track=4)
    rng("frame age", "camera", t - 5000, t + 500, is_async=True)
    # The worker renames the main thread (nvtxNameOsThread of another thread).
    other.describe_thread("nvtx main", tid=100)
    # Enough events to fill pages: padding before packets that would cross.
    t += 10_000
    for i in range(300):
        main.event(BEGIN, t, "step %d" % (i % 7), "app", {"category": "stage"})
        main.event(END, t + 100, args={"payload": i})
        rng("step %d" % (i % 7), "app", t, t + 100, {"category": "stage", "payload": i})
        t += 200
    # Same names again after the sequence is cleared (a buffer taken over by a new thread).
    main.tid = 102
    main.track = 1 << 61 | 102
    main.clear(t, "taken over")
    tail_raw = b"\x98\x06\x01" if variant == "unknown_field" else b""  # field 99 of TracePacket
    stale = variant == "stale_iid_after_clear"
    if stale:
        p = main.packet()
        p.timestamp = 1000
        p.track_event.type = BEGIN
        p.track_event.name_iid = f.iid("event_names", "outer")   # defined before the clear
        p.track_event.category_iids.append(main.use(p, "event_categories", "default"))
        f.write(p)
    else:
        main.event(BEGIN, t + 1000, "outer", "default", raw_tail=tail_raw)
    main.event(END, t + 2000)
    rng("outer", "default", t + 1000, t + 2000, tid=102)
    if variant == "time_backwards":
        main.event(INSTANT, t + 1000, "back", "default")
    if variant == "missing_needs":
        p = main.event(INSTANT, t + 3000, "no flag", "default")
        f.out = f.out[:len(f.out) - len(p.SerializeToString()) - 2]   # rewrite it without the flag
        p.sequence_flags = 0
        f.write(p)
    if variant == "iid_two_meanings":
        p = other.packet()
        p.timestamp = 1
        p.interned_data.event_names.add(iid=f.iid("event_names", "outer"), name="not outer")
        p.track_event.type = INSTANT
        p.track_event.name_iid = f.iid("event_names", "outer")
        p.track_event.category_iids.append(other.use(p, "event_categories", "default"))
        f.write(p)
    if variant == "unbalanced_end":
        main.event(END, t + 5000)
    if variant == "never_ended":
        main.event(BEGIN, t + 5000, "left open", "default")
    if variant == "partial_packet":
        f.out += b"\x0a\x40\x08\x01"
    threads = {"100": ["crafted", "nvtx main"], "101": ["worker"], "102": ["taken over"]}
    expect["threads"] = threads
    expect["process"] = {"pid": PID, "name": "crafted"}
    return f


def main():
    variant, out = sys.argv[1], sys.argv[2]
    if variant != "good" and variant not in BROKEN:
        sys.exit("pftrace_craft: no variant %s" % variant)
    f = craft(variant)
    with open(out, "wb") as file:
        file.write(f.out)
    with open(out + ".expected.json", "w") as file:
        json.dump(dict(f.expected, problem=BROKEN.get(variant)), file)


if __name__ == "__main__":
    main()
