"""Binary traces (docs/pftrace.md) written by hand for the tests, each with its JSON form: the
same run as the library's two encoders would write it. A protobuf writer of a few lines (varints
by hand), then a Trace that takes NVTX-like calls per thread (push, pop, start, end, a range
written whole after the fact, mark) and gives the .pftrace bytes - the header, a sequence per
thread, interned names and categories, clock 64 incremental and clock 3 for times earlier than
the sequence's last, an async track per start/end range, page padding - and the JSON array.
Each thread's packets reach the file when it flushes, in the order the test flushes them."""
import json
import struct

MASK64 = (1 << 64) - 1
THREAD_TRACK = 1 << 61
PAGE = 4096


def varint(value):
    value &= MASK64  # a negative int64 as its ten-byte two's complement
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def key(number, wire):
    return varint(number << 3 | wire)


def uint(number, value):
    return key(number, 0) + varint(value)


def message(number, *parts):
    body = b"".join(parts)
    return key(number, 2) + varint(len(body)) + body


def text(number, value):
    return message(number, value.encode())


def double(number, value):
    return key(number, 1) + struct.pack("<d", value)


def padding(length):
    """LENGTH bytes of Trace field 2 varints (0x10 0x00, one 0x10 0x80 0x00 for an odd length)."""
    assert length >= 2
    odd = b"\x10\x80\x00" if length % 2 else b""
    return odd + b"\x10\x00" * ((length - len(odd)) // 2)


def micros(ns):
    return "%d.%03d" % (ns // 1000, ns % 1000)


def annotation_value(value, kind):
    if kind == "u":
        return uint(3, value)
    if kind == "i":
        return uint(4, value)
    return double(5, value)


def json_number(value, kind):
    if kind == "d":
        formatted = "%.17g" % value
        return formatted if all(c in "0123456789+-.e" for c in formatted) else json.dumps(formatted)
    return str(value)


class Trace:
    def __init__(self, pid=4242, process="crafted"):
        self.pid = pid
        self.next_iid = 4  # 1-3: the annotation names every sequence defines
        self.next_sequence = 2
        self.next_range = 1
        self.file = []  # (packet bytes, [json events it completes])
        self.json = ['{"name":"process_name","ph":"M","pid":%d,"tid":%d,"args":{"name":%s}}'
                     % (pid, pid, json.dumps(process))]
        self.header = [
            message(60, uint(1, 2 * pid + 1), message(3, uint(1, pid), text(6, process))),
            message(6, message(1, uint(1, 3), uint(2, 10**12)), message(1, uint(1, 6), uint(2, 10**12 + 5)),
                    message(1, uint(1, 1), uint(2, 1700000000000000000)), uint(2, 3))]
        for packet in self.header:
            self.file.append((packet, []))
        self.iids = {}

    def iid(self, kind, value):
        if (kind, value) not in self.iids:
            self.iids[(kind, value)] = self.next_iid
            self.next_iid += 1
        return self.iids[(kind, value)]

    def thread(self, tid, name, t0):
        sequence = Thread(self, self.next_sequence, tid, name, t0)
        self.next_sequence += 1
        return sequence

    def pftrace(self, pad=True):
        """The file; self.padded: where each run of padding starts."""
        out = bytearray()
        self.padded = []
        for body, _ in self.file:
            packet = message(1, body)
            room = PAGE - len(out) % PAGE
            if pad and len(packet) > room and len(packet) <= PAGE:
                self.padded.append(len(out))
                out += padding(room if room > 1 else 2)
            out += packet
        return bytes(out)

    def packet_ends(self, pad=True):
        """(offset where each packet ends, the JSON events that need it in the file)."""
        out, ends = 0, []
        for body, completes in self.file:
            packet = message(1, body)
            room = PAGE - out % PAGE
            if pad and len(packet) > room and len(packet) <= PAGE:
                out += room if room > 1 else 2
            out += len(packet)
            ends.append((out, completes))
        return ends

    def json_text(self, events=None):
        lines = self.json if events is None else self.json[:1] + events
        return "[\n" + ",\n".join(lines) + "\n]\n"


class Thread:
    """A thread's buffer: its sequence of packets, flushed to the file when the test says."""

    def __init__(self, trace, sequence, tid, name, t0):
        self.trace, self.sequence, self.tid, self.last = trace, sequence, tid, t0
        self.track = THREAD_TRACK | tid
        self.pending = []
        self.defined = set()  # the iids defined on this sequence
        self.stack = []  # open push/pop ranges: [name, domain, start, category, begin's json index]
        self.ids = ',"pid":%d,"tid":%d' % (trace.pid, tid)
        self.add(uint(13, 1),
                 message(59, uint(58, 64), message(11, uint(11, self.track))),
                 message(6, message(1, uint(1, 64), uint(2, t0), uint(3, 1)), message(1, uint(1, 3), uint(2, t0))),
                 message(12, message(3, uint(1, 1), text(2, "payload")), message(3, uint(1, 2), text(2, "category")),
                         message(3, uint(1, 3), text(2, "color"))))
        self.add(uint(13, 2), message(60, uint(1, self.track), uint(5, 2 * trace.pid + 1),
                                      message(4, uint(1, trace.pid), uint(2, tid), text(5, name))))
        self.json_event('{"name":"thread_name","ph":"M"%s,"args":{"name":%s}}' % (self.ids, json.dumps(name)))

    def add(self, *parts, completes=()):
        """A packet of PARTS; COMPLETES: the JSON events that need it in the file (returned, for
        an async begin's, which its end extends)."""
        completes = list(completes)
        self.pending.append((b"".join(parts) + uint(10, self.sequence), completes))
        return completes

    def json_event(self, line):
        self.trace.json.append(line)
        return line

    def flush(self):
        self.trace.file += self.pending
        self.pending = []

    def time(self, ns):
        if ns >= self.last:
            delta, self.last = ns - self.last, ns
            return uint(8, delta)
        return uint(8, ns) + uint(58, 3)

    def names(self, name, domain, registered, named_category=None):
        """The event's name and category fields (the domain, then a named NVTX category), and
        the interned data they need here."""
        interned, fields = [], []
        for category_name in [domain] + ([named_category] if named_category else []):
            category = self.trace.iid("category", category_name)
            if category not in self.defined:
                self.defined.add(category)
                interned.append(message(1, uint(1, category), text(2, category_name)))
            fields.append(uint(3, category))
        if registered:
            iid = self.trace.iid("name", name)
            if iid not in self.defined:
                self.defined.add(iid)
                interned.append(message(2, uint(1, iid), text(2, name)))
            fields.append(uint(10, iid))
        else:
            fields.append(text(23, name))
        return (message(12, *interned),) if interned else (), fields

    def event(self, ns, kind, name=None, domain=None, registered=True, track=None, annotations=(),
              completes=(), before=(), named_category=None):
        interned, fields = self.names(name, domain, registered, named_category) if name is not None else ((), [])
        body = [uint(9, kind)] + fields + list(annotations)
        if track is not None:
            body.append(uint(11, track))
        return self.add(*before, uint(13, 2), self.time(ns), *interned, message(11, *body), completes=completes)

    @staticmethod
    def args(payload, kind, category, extra=()):
        members = []
        if payload is not None:
            members.append('"payload":%s' % json_number(payload, kind))
        if category is not None:
            members.append('"category":%s' % json.dumps(category))
        members += ['"%s":%d' % item for item in extra]
        return ',"args":{%s}' % ",".join(members) if members else ""

    def push(self, ns, name, domain="default", category=None, registered=True):
        """CATEGORY: a number (never named: the annotation) or a name (the second category)."""
        numbered = isinstance(category, int)
        annotations = [message(4, uint(1, 2), uint(3, category))] if numbered else []
        self.event(ns, 1, name, domain, registered, annotations=annotations,
                   named_category=None if numbered else category)
        self.stack.append([name, domain, ns, category, registered])

    def pop(self, ns, domain="default", payload=None, kind="u"):
        """Pops DOMAIN's innermost range; an END naming it when it is not the thread's innermost."""
        index = max(i for i, entry in enumerate(self.stack) if entry[1] == domain)
        name, domain, start, category, registered = self.stack.pop(index)
        annotations = [message(4, uint(1, 1), annotation_value(payload, kind))] if payload is not None else []
        inner = index < len(self.stack)
        if inner:  # the JSON form: an async pair, as a complete event would cross the others
            pair = self.trace.next_range
            self.trace.next_range += 1
            lines = [self.json_event('{"name":%s,"cat":%s,"ph":"b","ts":%s%s,"id":%d%s}' % (
                         json.dumps(name), json.dumps(domain), micros(start), self.ids, pair,
                         self.args(payload, kind, category))),
                     self.json_event('{"name":%s,"cat":%s,"ph":"e","ts":%s%s,"id":%d}' % (
                         json.dumps(name), json.dumps(domain), micros(ns), self.ids, pair))]
        else:
            lines = [self.json_event('{"name":%s,"cat":%s,"ph":"X","ts":%s,"dur":%s%s%s}' % (
                json.dumps(name), json.dumps(domain), micros(start), micros(ns - start), self.ids,
                self.args(payload, kind, category)))]
        self.event(ns, 2, name if inner else None, domain if inner else None, registered,
                   annotations=annotations, completes=lines)

    def start(self, ns, name, domain="default", payload=None, kind="u", category=None):
        """A start/end range: its track's descriptor, then its begin; returned for end()."""
        range_id = self.trace.next_range
        self.trace.next_range += 1
        annotations = []
        if payload is not None:
            annotations.append(message(4, uint(1, 1), annotation_value(payload, kind)))
        if category is not None:
            annotations.append(message(4, uint(1, 2), uint(3, category)))
        descriptor = message(60, uint(1, 2 * range_id), uint(5, 2 * self.trace.pid + 1), text(2, domain))
        self.add(uint(13, 2), descriptor)
        line = self.json_event('{"name":%s,"cat":%s,"ph":"b","ts":%s%s,"id":%d%s}' % (
            json.dumps(name), json.dumps(domain), micros(ns), self.ids, range_id,
            self.args(payload, kind, category)))
        packet = self.event(ns, 1, name, domain, track=2 * range_id, annotations=annotations)
        return {"id": range_id, "name": name, "domain": domain, "begin": line, "packet": packet}

    def end(self, ns, started, figures=()):
        """Ends STARTED on this thread, with the kernel probe's FIGURES ((key, value), ...)."""
        annotations = [message(4, text(10, key), uint(3, value)) for key, value in figures]
        line = self.json_event('{"name":%s,"cat":%s,"ph":"e","ts":%s%s,"id":%d%s}' % (
            json.dumps(started["name"]), json.dumps(started["domain"]), micros(ns), self.ids, started["id"],
            ',"args":{%s}' % ",".join('"%s":%d' % item for item in figures) if figures else ""))
        self.event(ns, 2, track=2 * started["id"], annotations=annotations, completes=[started["begin"], line])
        started["packet"] += [started["begin"], line]  # the pair needs both packets

    def whole(self, start, end, name, domain="default", payload=None, kind="u"):
        """A range written after the fact (a camera frame's age): begin at START (earlier than
        the sequence's last time: clock 3), end at END."""
        started = self.start(start, name, domain, payload, kind)
        self.end(end, started)

    def mark(self, ns, name, domain="default", payload=None, kind="u", color=None, registered=False):
        annotations = []
        members = []
        if payload is not None:
            annotations.append(message(4, uint(1, 1), annotation_value(payload, kind)))
            members.append('"payload":%s' % json_number(payload, kind))
        if color is not None:
            annotations.append(message(4, uint(1, 3), text(6, "#%06x" % color)))
            members.append('"color":"#%06x"' % color)
        line = self.json_event('{"name":%s,"cat":%s,"ph":"i","s":"t","ts":%s%s%s}' % (
            json.dumps(name), json.dumps(domain), micros(ns), self.ids,
            ',"args":{%s}' % ",".join(members) if members else ""))
        self.event(ns, 3, name, domain, registered, annotations=annotations, completes=[line])
