"""Checks a .pftrace file (NVTXSHIM_TRACE=NAME.pftrace) without Perfetto's trace processor:
every packet decoded with the schema PyPI's perfetto package ships compiled for Python
(perfetto_trace_pb2), and checked against docs/pftrace.md and what Perfetto documents
(protos/perfetto/trace/trace_packet.proto, clock_snapshot.proto, interned_data.proto) and
does when it imports a trace (src/trace_processor/importers/proto/proto_trace_reader.cc,
importers/common/slice_tracker.cc).

    pftrace_check.py [--cut] [--allow-open] FILE

Runs in build/pyenv (scripts/pyenv.sh): Debian's python3 has no protobuf 6. Prints one
JSON object: the events it reconstructed (ranges, marks, threads, process) and the
problems it found; exits 1 when there is a problem, 2 when it cannot run.

--cut: the file may have been cut short (a SIGKILL): a partial packet at the end, ranges
left open and ends whose begins never reached the file are not problems; `last_whole_end`
says where the last whole packet ends and `tail` what follows it.
--allow-open: ranges left open at the end of a whole file are not problems (a program that
never ends a range).

What it checks, per packet in file order:
- framing: each Trace field 1 (length-delimited) is a packet; the rest must be the spec's
  padding (field 2 varints); no packet crosses a 4 KiB page of the file; nothing but
  padding or a partial packet after the last whole packet;
- each packet decodes, with no field the schema does not know (a wrong field number);
- sequences: every packet but the header's has trusted_packet_sequence_id; the first
  packet of each writer sequence has SEQ_INCREMENTAL_STATE_CLEARED; a packet that uses
  interned data, the sequence's defaults or its incremental clock has
  SEQ_NEEDS_INCREMENTAL_STATE (or is the clearing packet), and so does every packet with a
  TrackEvent; no packet needs incremental state on a sequence that was never cleared
  (Perfetto skips it); and, as trace_packet.proto asks, every packet after the sequence's
  trace_packet_defaults has SEQ_NEEDS_INCREMENTAL_STATE, track descriptors too;
- interning: every iid (event names, categories, debug annotation names and string
  values) defined on its sequence since its last SEQ_INCREMENTAL_STATE_CLEARED, before or
  in the packet that uses it; an iid means one thing in the whole file (one counter per
  process, docs/pftrace.md);
- clocks: the header's snapshot has MONOTONIC, BOOTTIME and REALTIME and
  primary_trace_clock MONOTONIC; clock 64 is defined (incremental, beside clock 3) by a
  snapshot on the sequence since its last clear before a packet uses it; times are
  rebuilt in CLOCK_MONOTONIC ns; times on clock 64 never decrease on a sequence; no
  other clock is used;
- tracks: every track_uuid used (its own or the default) has a TrackDescriptor in the
  file; thread descriptors carry pid and tid, T = 1<<61 | tid, parent P; the process's
  descriptor (P = 2 * pid + 1, process { pid, process_name }) is the first packet; an
  async track's (A = 2 * id, parent P, name = the domain) is on the sequence before its
  begin, every event of an async track comes after a descriptor of it in file order (an
  end on another sequence describes the track again), and the track holds one range;
- categories: the first is the domain, a second the named NVTX category (given back as
  the `category` arg, as the JSON form has it); the NVTX category as a number is the
  annotation `category`;
- slices: per track in time order, begins and ends balanced, an END with a name closing
  the innermost open slice of that name (and category), as Perfetto's slice tracker does;
  the same for the layout of the first two packets of each sequence (docs/pftrace.md).
"""
import argparse
import collections
import json
import sys

try:
    from google.protobuf import unknown_fields
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
except ImportError as error:  # not run in build/pyenv
    print("pftrace_check: %s: run it with build/pyenv/bin/python (scripts/pyenv.sh makes it)"
          % error, file=sys.stderr)
    sys.exit(2)

CLEARED = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
NEEDS = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
BEGIN, END, INSTANT = (pb.TrackEvent.TYPE_SLICE_BEGIN, pb.TrackEvent.TYPE_SLICE_END,
                       pb.TrackEvent.TYPE_INSTANT)
MONOTONIC, BOOTTIME, REALTIME = 3, 6, 1
SEQUENCE_CLOCK = 64
PAGE = 4096
THREAD_BIT = 1 << 61
ASYNC_LIMIT = 1 << 33


def process_uuid(pid):
    return 2 * pid + 1


def track_kind(uuid):
    """docs/pftrace.md's uuids: a thread's 1<<61 | tid, the process's 2 * pid + 1 (odd), an
    async range's 2 * its id (even, below 2^33)."""
    if uuid & THREAD_BIT:
        return "thread"
    if uuid < ASYNC_LIMIT:
        return "process" if uuid & 1 else "async"
    return "unknown"
KINDS = ("event_names", "event_categories", "debug_annotation_names",
         "debug_annotation_string_values")


def varint(data, pos):
    """(value, end) of the varint at POS, or None when DATA ends inside it."""
    value = shift = 0
    while pos < len(data):
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7f) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift >= 70:
            raise ValueError("a varint longer than 10 bytes")
    return None


def frame(data, problems, cut):
    """The packets of the Trace in DATA: [(start, end, payload)], and the tail after the
    last whole element {start, bytes, kind}."""
    packets, pos, last_end = [], 0, 0
    tail_kind = None
    while pos < len(data):
        start = pos
        try:
            tag = varint(data, pos)
            if tag is None:
                tail_kind = "partial tag"
                break
            tag, pos = tag
            field, wire = tag >> 3, tag & 7
            if wire == 2:
                length = varint(data, pos)
                if length is None:
                    tail_kind = "partial packet" if field == 1 else "partial field %d" % field
                    break
                length, pos = length
                if pos + length > len(data):
                    tail_kind = "partial packet" if field == 1 else "partial field %d" % field
                    break
                payload, pos = data[pos:pos + length], pos + length
                if field == 1:
                    packets.append((start, pos, payload))
                    last_end = pos
                    if start // PAGE != (pos - 1) // PAGE:
                        problems.append("packet #%d at %d..%d crosses the 4 KiB page boundary at %d"
                                        % (len(packets) - 1, start, pos, (start // PAGE + 1) * PAGE))
                    continue
                problems.append("Trace field %d (length-delimited, %d bytes) at %d: not a packet, "
                                "not the spec's padding (field 2 varints)" % (field, length, start))
                continue
            if wire == 0:
                value = varint(data, pos)
                if value is None:
                    tail_kind = "partial padding" if field == 2 else "partial field %d" % field
                    break
                value, pos = value
                if field == 1:
                    problems.append("Trace field 1 at %d is a varint, not a packet" % start)
                elif field != 2:
                    problems.append("Trace field %d (varint) at %d: not the spec's padding "
                                    "(field 2)" % (field, start))
                continue
            problems.append("Trace field %d with wire type %d at %d: neither a packet nor padding; "
                            "stopped reading there" % (field, wire, start))
            tail_kind = "unreadable"
            break
        except ValueError as error:
            problems.append("at %d: %s; stopped reading there" % (start, error))
            tail_kind = "unreadable"
            break
    if tail_kind is None:
        tail = {"start": pos, "bytes": 0, "kind": "none"}
        if pos > last_end:
            tail = {"start": last_end, "bytes": pos - last_end, "kind": "padding"}
    else:
        tail = {"start": start, "bytes": len(data) - start, "kind": tail_kind,
                "padding_before": start - last_end}
        if tail_kind == "unreadable" or not cut:
            if tail_kind != "unreadable":
                problems.append("the file ends inside an element (%s, %d bytes from %d): a whole file "
                                "ends after a whole packet" % (tail_kind, len(data) - start, start))
    return packets, last_end, tail


def unknown_in(message, where=""):
    """The fields of MESSAGE, nested ones too, that the schema does not know."""
    found = ["%s#%d" % (where, f.field_number) for f in unknown_fields.UnknownFieldSet(message)]
    for descriptor, value in message.ListFields():
        if descriptor.message_type is None:
            continue
        name = where + "." + descriptor.name if where else descriptor.name
        if descriptor.is_repeated:
            for i, item in enumerate(value):
                found += unknown_in(item, "%s[%d]" % (name, i))
        else:
            found += unknown_in(value, name)
    return found


class Sequence:
    def __init__(self, sid):
        self.sid = sid
        self.packets = 0
        self.cleared = False          # a SEQ_INCREMENTAL_STATE_CLEARED seen
        self.generation = 0
        self.interned = {kind: {} for kind in KINDS}
        self.defaults = None
        self.clock = None             # clock 64: {"value", "to_monotonic"}
        self.last_incremental_ns = None
        self.descriptors = set()      # track uuids described on this sequence, in file order
        self.first_layout_checked = False

    def clear(self):
        self.cleared = True
        self.generation += 1
        self.interned = {kind: {} for kind in KINDS}
        self.defaults = None
        self.clock = None


class Checker:
    def __init__(self, cut, allow_open):
        self.cut = cut
        self.allow_open = allow_open
        self.problems = []
        self.notes = []
        self.sequences = {}
        self.iid_meaning = {}         # iid -> (kind, text, where first seen)
        self.descriptors = {}         # uuid -> [TrackDescriptor], file order
        self.descriptor_seq = {}      # uuid -> [(sequence, packet index)]
        self.events = []              # dicts with track, time, order...
        self.uses = []                # (uuid, packet index, sequence, kind)
        self.process = None
        self.header_clock = None
        self.index = 0
        self.offset = 0
        self.sid = 0

    def problem(self, text):
        if self.index == "-":
            self.problems.append(text)
            return
        self.problems.append("packet #%s (offset %s, sequence %s): %s" % (
            self.index, self.offset, self.sid, text))

    # ---- interning ---------------------------------------------------------------------

    def define(self, seq, kind, iid, text):
        if iid == 0:
            self.problem("%s defines iid 0 (0 is no iid)" % kind)
            return
        table = seq.interned[kind]
        if iid in table and table[iid] != text:
            self.problem("%s iid %d redefined on the sequence: %r, then %r" % (kind, iid, table[iid], text))
        table[iid] = text
        known = self.iid_meaning.get(iid)
        if known is None:
            self.iid_meaning[iid] = (kind, text, self.index)
        elif known[:2] != (kind, text):
            self.problem("iid %d is %s %r here but %s %r in packet #%d: iids come from one counter "
                         "in the process (docs/pftrace.md)" % (iid, kind, text, known[0], known[1], known[2]))

    def lookup(self, seq, kind, iid):
        text = seq.interned[kind].get(iid)
        if text is None:
            self.problem("%s iid %d used before its definition on the sequence (since its last "
                         "SEQ_INCREMENTAL_STATE_CLEARED)" % (kind, iid))
            return "<iid %d undefined>" % iid
        return text

    def intern(self, seq, data):
        for entry in data.event_names:
            self.define(seq, "event_names", entry.iid, entry.name)
        for entry in data.event_categories:
            self.define(seq, "event_categories", entry.iid, entry.name)
        for entry in data.debug_annotation_names:
            self.define(seq, "debug_annotation_names", entry.iid, entry.name)
        for entry in data.debug_annotation_string_values:
            self.define(seq, "debug_annotation_string_values", entry.iid,
                        entry.str.decode("utf-8", "replace"))
        for descriptor, _ in data.ListFields():
            if descriptor.name not in KINDS:
                self.problem("interned_data.%s: not a kind docs/pftrace.md uses" % descriptor.name)

    # ---- clocks ------------------------------------------------------------------------

    def clock_snapshot(self, seq, packet):
        snapshot = packet.clock_snapshot
        clocks = {c.clock_id: c for c in snapshot.clocks}
        if len(clocks) != len(snapshot.clocks):
            self.problem("a clock snapshot names a clock twice")
        for c in snapshot.clocks:
            if c.unit_multiplier_ns not in (0, 1):
                self.problem("clock %d has unit_multiplier_ns %d (the spec's clocks are in ns)"
                             % (c.clock_id, c.unit_multiplier_ns))
            if c.is_incremental and c.clock_id < 64:
                self.problem("builtin clock %d marked incremental" % c.clock_id)
        if self.header_clock is None:
            self.header_clock = snapshot
            if snapshot.primary_trace_clock != MONOTONIC:
                self.problem("the first clock snapshot's primary_trace_clock is %d, not MONOTONIC (3)"
                             % snapshot.primary_trace_clock)
            for needed in (MONOTONIC, BOOTTIME, REALTIME):
                if needed not in clocks:
                    self.problem("the header's clock snapshot lacks clock %d" % needed)
            if self.sid not in (0, 1):
                self.problem("the header's clock snapshot is on sequence %s, not the header's" % self.sid)
        elif snapshot.HasField("primary_trace_clock") and snapshot.primary_trace_clock != MONOTONIC:
            self.problem("a clock snapshot changes primary_trace_clock to %d" % snapshot.primary_trace_clock)
        for cid, c in clocks.items():
            if cid >= 64:
                if not self.sid:
                    self.problem("sequence-scoped clock %d in a snapshot without a sequence id" % cid)
                    continue
                if cid != SEQUENCE_CLOCK:
                    self.problem("clock %d: the spec's sequence clock is 64" % cid)
                if not c.is_incremental:
                    self.problem("clock %d is not marked is_incremental" % cid)
                if MONOTONIC not in clocks:
                    self.problem("clock %d defined without CLOCK_MONOTONIC (3) beside it: its times "
                                 "cannot be placed" % cid)
                    continue
                if cid == SEQUENCE_CLOCK:
                    seq.clock = {"value": c.timestamp,
                                 "to_monotonic": clocks[MONOTONIC].timestamp - c.timestamp}

    def time_of(self, seq, packet):
        """The packet's time in CLOCK_MONOTONIC ns, or None; moves clock 64."""
        if not packet.HasField("timestamp"):
            return None
        if packet.HasField("timestamp_clock_id"):
            cid = packet.timestamp_clock_id
        elif seq.defaults is not None and seq.defaults.HasField("timestamp_clock_id"):
            cid = seq.defaults.timestamp_clock_id
        else:
            cid = BOOTTIME
        if cid == MONOTONIC:
            return packet.timestamp
        if cid == SEQUENCE_CLOCK:
            if seq.clock is None:
                self.problem("timestamp on clock 64 before a clock snapshot defined it on the "
                             "sequence (since its last clear)")
                return None
            if packet.timestamp >= 1 << 63:
                self.problem("clock 64 delta %d: a negative delta (time going back)" % packet.timestamp)
            seq.clock["value"] += packet.timestamp
            ns = seq.clock["value"] + seq.clock["to_monotonic"]
            if seq.last_incremental_ns is not None and ns < seq.last_incremental_ns:
                self.problem("time %d on clock 64 is before the sequence's previous one %d"
                             % (ns, seq.last_incremental_ns))
            seq.last_incremental_ns = ns
            return ns
        self.problem("timestamp on clock %d: the spec uses clock 64 (incremental) or 3 (MONOTONIC)" % cid)
        return None

    # ---- packets -----------------------------------------------------------------------

    def packet(self, index, offset, payload):
        self.index, self.offset = index, offset
        packet = pb.TracePacket()
        try:
            packet.ParseFromString(payload)
        except Exception as error:  # DecodeError, and upb's own
            self.sid = "?"
            self.problem("does not decode as a TracePacket: %s" % error)
            return
        unknown = unknown_in(packet)
        self.sid = packet.trusted_packet_sequence_id if packet.HasField("trusted_packet_sequence_id") else 0
        if unknown:
            self.problem("fields the schema does not know: %s" % ", ".join(unknown[:8]))
        flags = packet.sequence_flags
        if packet.incremental_state_cleared:
            flags |= CLEARED
        if flags & ~(CLEARED | NEEDS):
            self.problem("sequence_flags %d has unknown bits" % flags)
        sid = self.sid
        seq = self.sequences.get(sid)
        first = seq is None
        if first:
            seq = self.sequences[sid] = Sequence(sid)
        seq.packets += 1
        header = index < 2
        if sid == 0 and not header:
            self.problem("no trusted_packet_sequence_id (only the header's packets go without)")
        if first and sid not in (0, 1) and not flags & CLEARED:
            self.problem("the first packet of sequence %d lacks SEQ_INCREMENTAL_STATE_CLEARED" % sid)
        had_defaults = seq.defaults is not None
        if flags & CLEARED:
            if not sid:
                self.problem("SEQ_INCREMENTAL_STATE_CLEARED without a sequence id")
            seq.clear()
        elif had_defaults and not flags & NEEDS:
            self.problem("a packet without SEQ_NEEDS_INCREMENTAL_STATE after the sequence's "
                         "trace_packet_defaults (trace_packet.proto: every later packet must have it)")
        if flags & NEEDS and not seq.cleared:
            self.problem("SEQ_NEEDS_INCREMENTAL_STATE on a sequence never cleared: Perfetto skips it")
        needs = []
        if packet.HasField("trace_packet_defaults"):
            if not flags & CLEARED:
                self.problem("trace_packet_defaults outside the clearing packet")
            seq.defaults = packet.trace_packet_defaults
        if packet.HasField("interned_data"):
            needs.append("interned_data")
            self.intern(seq, packet.interned_data)
        if packet.HasField("clock_snapshot"):
            self.clock_snapshot(seq, packet)
            if packet.HasField("timestamp"):
                self.problem("a clock snapshot packet with a timestamp (Perfetto ignores it)")
            time = None
        else:
            if packet.HasField("timestamp") and not packet.HasField("timestamp_clock_id"):
                if seq.defaults is not None:
                    needs.append("the default clock")
            if packet.HasField("timestamp") and self.clock_id(seq, packet) == SEQUENCE_CLOCK:
                needs.append("the incremental clock")
            time = self.time_of(seq, packet)
        if packet.HasField("track_descriptor"):
            self.track_descriptor(seq, packet.track_descriptor)
        if packet.HasField("track_event"):
            needs += self.track_event(seq, packet, time)
        kind = packet.WhichOneof("data")
        if kind not in (None, "track_event", "track_descriptor", "clock_snapshot"):
            self.problem("packet data %s: not one the spec writes" % kind)
        if needs and not flags & (NEEDS | CLEARED):
            self.problem("uses %s without SEQ_NEEDS_INCREMENTAL_STATE" % ", ".join(sorted(set(needs))))
        if needs and (sid in (0,) or not seq.cleared):
            self.problem("uses %s on a sequence never cleared" % ", ".join(sorted(set(needs))))
        self.layout(seq, packet, flags)

    def clock_id(self, seq, packet):
        if packet.HasField("timestamp_clock_id"):
            return packet.timestamp_clock_id
        if seq.defaults is not None and seq.defaults.HasField("timestamp_clock_id"):
            return seq.defaults.timestamp_clock_id
        return BOOTTIME

    def layout(self, seq, packet, flags):
        """docs/pftrace.md's header and the first two packets of each sequence."""
        if self.index == 0:
            d = packet.track_descriptor
            if not (packet.HasField("track_descriptor") and d.HasField("process")):
                self.problem("the first packet is not the process's track descriptor")
            return
        if self.index == 1:
            if not packet.HasField("clock_snapshot"):
                self.problem("the second packet is not the header's clock snapshot")
            return
        if seq.sid in (0, 1):
            self.problem("a packet on the header's sequence after the header")
            return
        if flags & CLEARED:
            seq.layout_position = 0
            d = packet.trace_packet_defaults
            if not packet.HasField("trace_packet_defaults") or d.timestamp_clock_id != SEQUENCE_CLOCK \
                    or not d.track_event_defaults.HasField("track_uuid"):
                self.problem("the clearing packet lacks trace_packet_defaults { timestamp_clock_id: 64, "
                             "track_event_defaults { track_uuid } }")
            elif track_kind(d.track_event_defaults.track_uuid) != "thread":
                self.problem("the default track %#x is not a thread's (1<<61 | tid)"
                             % d.track_event_defaults.track_uuid)
            names = {e.iid: e.name for e in packet.interned_data.debug_annotation_names}
            if names != {1: "payload", 2: "category", 3: "color"}:
                self.problem("the clearing packet's debug_annotation_names are %r, not payload, "
                             "category, color as iids 1, 2, 3" % names)
            clocks = {c.clock_id: c for c in packet.clock_snapshot.clocks}
            if SEQUENCE_CLOCK not in clocks or MONOTONIC not in clocks \
                    or clocks[SEQUENCE_CLOCK].timestamp != clocks[MONOTONIC].timestamp:
                self.problem("the clearing packet's clock snapshot is not {64: t0, 3: t0}")
            return
        position = getattr(seq, "layout_position", None)
        if position == 0:
            seq.layout_position = 1
            d = packet.track_descriptor
            default = seq.defaults.track_event_defaults.track_uuid if seq.defaults else None
            if not (packet.HasField("track_descriptor") and d.HasField("thread") and d.uuid == default):
                self.problem("the second packet of the sequence does not describe its thread's track "
                             "(the default track %s)" % (hex(default) if default else None))

    # ---- tracks ------------------------------------------------------------------------

    def track_descriptor(self, seq, d):
        if not d.HasField("uuid"):
            self.problem("a track descriptor without uuid")
            return
        self.descriptors.setdefault(d.uuid, []).append(d)
        self.descriptor_seq.setdefault(d.uuid, []).append((seq.sid, self.index))
        seq.descriptors.add(d.uuid)
        if d.HasField("process"):
            if not d.process.HasField("pid"):
                self.problem("process descriptor without pid")
            if d.uuid != process_uuid(d.process.pid):
                self.problem("process track uuid %#x is not 2 * pid + 1 (pid %d)" % (d.uuid, d.process.pid))
            if self.process is not None and self.process["uuid"] != d.uuid:
                self.problem("a second process in the file")
            self.process = {"uuid": d.uuid, "pid": d.process.pid, "name": d.process.process_name}
        elif d.HasField("thread"):
            t = d.thread
            if not (t.HasField("pid") and t.HasField("tid")):
                self.problem("thread descriptor %#x without pid and tid" % d.uuid)
            if d.uuid != THREAD_BIT | t.tid:
                self.problem("thread track uuid %#x is not 1<<61 | tid %d" % (d.uuid, t.tid))
            if self.process and t.pid != self.process["pid"]:
                self.problem("thread %d's pid %d is not the process's %d" % (t.tid, t.pid, self.process["pid"]))
            if self.process and d.HasField("parent_uuid") and d.parent_uuid != self.process["uuid"]:
                self.problem("thread track %#x's parent is %#x, not the process's" % (d.uuid, d.parent_uuid))
        else:
            if track_kind(d.uuid) != "async":
                self.problem("async track uuid %#x is not even and below 2^33" % d.uuid)
            if self.process and d.parent_uuid != self.process["uuid"]:
                self.problem("async track %#x's parent is %#x, not the process's" % (d.uuid, d.parent_uuid))
            if not d.HasField("name"):
                self.problem("async track %#x has no name (its domain)" % d.uuid)

    def annotations(self, seq, event):
        args = {}
        for a in event.debug_annotations:
            if a.HasField("name_iid"):
                name = self.lookup(seq, "debug_annotation_names", a.name_iid)
            else:
                name = a.name
            which = a.WhichOneof("value")
            if which == "string_value_iid":
                value = self.lookup(seq, "debug_annotation_string_values", a.string_value_iid)
            elif which in ("uint_value", "int_value", "double_value", "string_value", "bool_value"):
                value = getattr(a, which)
            else:
                self.problem("annotation %r has a %s value, not one the spec writes" % (name, which))
                value = None
            if name in args:
                self.problem("annotation %r twice in one event" % name)
            args[name] = value
        return args

    def track_event(self, seq, packet, time):
        event = packet.track_event
        needs = []
        if time is None:
            self.problem("a track event without a time")
        if event.HasField("track_uuid"):
            track = event.track_uuid
        elif seq.defaults is not None and seq.defaults.track_event_defaults.HasField("track_uuid"):
            track = seq.defaults.track_event_defaults.track_uuid
            needs.append("the default track")
        else:
            self.problem("a track event with no track_uuid and no default track")
            track = 0
        name = None
        if event.HasField("name_iid"):
            needs.append("interned names")
            name = self.lookup(seq, "event_names", event.name_iid)
        elif event.HasField("name"):
            name = event.name
        categories = []
        for iid in event.category_iids:
            needs.append("interned categories")
            categories.append(self.lookup(seq, "event_categories", iid))
        categories += list(event.categories)
        if any(a.HasField("name_iid") or a.HasField("string_value_iid") for a in event.debug_annotations):
            needs.append("interned annotations")
        args = self.annotations(seq, event)
        if len(categories) > 2:
            self.problem("an event with %d categories (the spec writes the domain and the named "
                         "NVTX category)" % len(categories))
        if len(categories) >= 2:
            if "category" in args:
                self.problem("a named NVTX category (second category %r) and a category annotation %r"
                             % (categories[1], args["category"]))
            args["category"] = categories[1]
        if event.type not in (BEGIN, END, INSTANT):
            self.problem("track event type %d: the spec writes SLICE_BEGIN, SLICE_END, INSTANT" % event.type)
        if event.type in (BEGIN, INSTANT) and (name is None or not categories):
            self.problem("a %s without a name or a category" % pb.TrackEvent.Type.Name(event.type))
        default = seq.defaults.track_event_defaults.track_uuid if seq.defaults else None
        if track_kind(track) == "async" and event.type == BEGIN and track not in seq.descriptors:
            self.problem("async track %#x's begin has no descriptor before it on its sequence" % track)
        if track_kind(track) == "async" and track not in self.descriptors:
            # docs/pftrace.md: descriptors first, in file order, for readers that do not sort
            self.problem("async track %#x: a %s before any descriptor of the track in file order"
                         % (track, pb.TrackEvent.Type.Name(event.type)))
        self.uses.append((track, self.index, seq.sid))
        self.events.append({"track": track, "time": time, "order": len(self.events),
                            "type": event.type, "name": name,
                            "category": categories[0] if categories else None, "args": args,
                            "categories": ",".join(categories) if categories else None,
                            "index": self.index, "sequence": seq.sid,
                            "thread_track": default})
        return needs

    # ---- after the last packet ---------------------------------------------------------

    def finish(self):
        self.index, self.offset, self.sid = "-", "-", "-"  # problems found after the last packet
        if self.process is None:
            self.problem("no process track descriptor")
        if self.header_clock is None:
            self.problem("no clock snapshot")
        missing = collections.OrderedDict()
        for track, index, sid in self.uses:
            if track not in self.descriptors:
                missing.setdefault(track, (index, sid))
        for track, (index, sid) in missing.items():
            text = "track %#x (first used in packet #%d, sequence %d) has no TrackDescriptor in the file" % (
                track, index, sid)
            if self.cut and track_kind(track) != "thread":
                self.notes.append(text + " (its sequence was cut)")
            else:
                self.problem(text)

        def tid_of(track):
            for d in self.descriptors.get(track, []):
                if d.HasField("thread"):
                    return d.thread.tid
            return None

        ranges, marks, unmatched, still_open = [], [], [], []
        by_track = collections.defaultdict(list)
        for e in self.events:
            if e["time"] is not None:
                by_track[e["track"]].append(e)
        for track, events in by_track.items():
            events.sort(key=lambda e: (e["time"], e["order"]))
            stack = []
            is_async = track_kind(track) == "async"
            if track_kind(track) not in ("thread", "async"):
                self.problem("events on track %#x, neither a thread's nor an async range's" % track)
            begins = 0
            for e in events:
                if e["type"] == BEGIN:
                    begins += 1
                    if is_async and begins == 2:
                        self.problem("async track %#x holds a second range (%r): each has its own" % (
                            track, e["name"]))
                    tid = tid_of(track) if not is_async else tid_of(e["thread_track"])
                    stack.append({"name": e["name"], "category": e["category"],
                                  "categories": e["categories"], "start_ns": e["time"],
                                  "end_ns": None, "args": dict(e["args"]), "tid": tid,
                                  "async": is_async, "track": track, "begin_packet": e["index"]})
                elif e["type"] == END:
                    at = None
                    for i in range(len(stack) - 1, -1, -1):
                        s = stack[i]
                        if e["name"] is not None and s["name"] != e["name"]:
                            continue
                        # Perfetto's slice tracker compares the categories joined by commas.
                        if e["categories"] is not None and s["categories"] != e["categories"]:
                            continue
                        at = i
                        break
                    if at is None:
                        text = "packet #%d: SLICE_END %s on track %#x at %d closes no open slice" % (
                            e["index"], repr(e["name"]) if e["name"] else "(no name)", track, e["time"])
                        if self.cut and is_async:
                            self.notes.append(text + " (its begin was cut)")
                        else:
                            self.problems.append(text)
                        unmatched.append(e)
                        continue
                    s = stack.pop(at)
                    s["end_ns"] = e["time"]
                    del s["categories"]
                    for key, value in e["args"].items():
                        if key in s["args"] and s["args"][key] != value:
                            self.problems.append("packet #%d: SLICE_END's %s %r differs from its begin's %r"
                                                 % (e["index"], key, value, s["args"][key]))
                        s["args"][key] = value
                    s["end_packet"] = e["index"]
                    if not is_async:
                        s["end_tid"] = s["tid"]
                    else:
                        s["end_tid"] = tid_of(e["thread_track"])
                    ranges.append(s)
                elif e["type"] == INSTANT:
                    marks.append({"name": e["name"], "category": e["category"], "ts_ns": e["time"],
                                  "args": e["args"], "tid": tid_of(track)})
            for s in stack:
                s.pop("categories", None)
                still_open.append(s)
                text = "%r (%s track %#x, begun in packet #%d at %d) never ends" % (
                    s["name"], "async" if is_async else "thread", track, s["begin_packet"], s["start_ns"])
                if self.cut or self.allow_open:
                    self.notes.append(text)
                else:
                    self.problems.append(text)
        threads = collections.defaultdict(list)
        for uuid, descriptors in self.descriptors.items():
            for d in descriptors:
                if d.HasField("thread"):
                    if d.thread.HasField("thread_name") and d.thread.thread_name not in threads[d.thread.tid]:
                        threads[d.thread.tid].append(d.thread.thread_name)
                    else:
                        threads.setdefault(d.thread.tid, [])
        ranges.sort(key=lambda r: (r["start_ns"], r["end_ns"]))
        marks.sort(key=lambda m: m["ts_ns"])
        return {"process": self.process and {"pid": self.process["pid"], "name": self.process["name"]},
                "threads": {str(tid): names for tid, names in sorted(threads.items())},
                "header_clocks": {str(c.clock_id): c.timestamp
                                  for c in (self.header_clock.clocks if self.header_clock else [])},
                "ranges": ranges, "marks": marks, "open": still_open,
                "sequences": sorted(s for s in self.sequences if s)}


def check(path, cut=False, allow_open=False):
    with open(path, "rb") as f:
        data = f.read()
    checker = Checker(cut, allow_open)
    packets, last_end, tail = frame(data, checker.problems, cut)
    for index, (start, _, payload) in enumerate(packets):
        checker.packet(index, start, payload)
    summary = {"file": path, "bytes": len(data), "packets": len(packets), "last_whole_end": last_end,
               "tail": tail}
    summary.update(checker.finish())
    summary["notes"] = checker.notes
    summary["problems"] = checker.problems
    return summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cut", action="store_true", help="the file may have been cut short")
    parser.add_argument("--allow-open", action="store_true", help="ranges may be left open")
    parser.add_argument("file")
    options = parser.parse_args()
    try:
        summary = check(options.file, options.cut, options.allow_open)
    except OSError as error:
        print("pftrace_check: %s" % error, file=sys.stderr)
        return 2
    # one line, by json's C encoder: an indented dump goes through its Python one, which
    # took longer than the check itself for a trace of a few hundred kilobytes
    sys.stdout.write(json.dumps(summary, sort_keys=True) + "\n")
    return 1 if summary["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
