"""A small reader of the library's .pftrace files (docs/pftrace.md) for the scripts that count
what a long run recorded (make soak, make bench): pure Python, no protobuf, so that it runs
with the system's interpreter. It walks the packets, keeps each sequence's interned names and
categories, and yields the TrackEvents. The full check of a file against Perfetto's schema is
test/pftrace_check.py's."""


class Event:
    __slots__ = ("sequence", "type", "name", "categories", "track")

    def __init__(self, sequence, type_, name, categories, track):
        self.sequence, self.type, self.name, self.categories, self.track = (
            sequence, type_, name, categories, track)


def _varint(data, at):
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7f) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def fields(data, start, end):
    """(field number, value or start, end or None) of the message in DATA[START:END]."""
    at = start
    while at < end:
        tag, at = _varint(data, at)
        kind = tag & 7
        if kind == 0:
            value, at = _varint(data, at)
            yield tag >> 3, value, None
        elif kind == 2:
            length, at = _varint(data, at)
            if at + length > end:
                raise ValueError("field past the end of its message at %d" % at)
            yield tag >> 3, at, at + length
            at += length
        elif kind == 1:
            at += 8
            yield tag >> 3, None, None
        elif kind == 5:
            at += 4
            yield tag >> 3, None, None
        else:
            raise ValueError("wire type %d at %d" % (kind, at))


def packets(data):
    """(start, end) of each whole packet; a cut at the end (a partial packet or padding)
    ends the walk."""
    at = 0
    while at < len(data):
        try:
            tag, body = _varint(data, at)
            if tag & 7 == 0:
                _, at = _varint(data, body)
                continue                    # padding: an unknown varint field of Trace
            length, start = _varint(data, body)
        except IndexError:
            return
        if tag != 0x0a or start + length > len(data):
            return
        yield start, start + length
        at = start + length


def events(data):
    """The TrackEvents of a .pftrace's bytes, names and categories resolved."""
    names, categories = {}, {}             # per sequence: iid -> text
    for start, end in packets(data):
        sequence, flags, event = 0, 0, None
        interned = None
        for number, a, b in fields(data, start, end):
            if number == 10:
                sequence = a
            elif number == 13:
                flags = a
            elif number == 12:
                interned = (a, b)
            elif number == 11:
                event = (a, b)
        if flags & 1:
            names[sequence], categories[sequence] = {}, {}
        if interned:
            for number, a, b in fields(data, *interned):
                if number in (1, 2):
                    entry = dict((n, (x, y)) for n, x, y in fields(data, a, b))
                    iid = entry[1][0]
                    text = data[entry[2][0]:entry[2][1]].decode("utf-8")
                    (categories if number == 1 else names).setdefault(sequence, {})[iid] = text
        if not event:
            continue
        type_, name, cats, track = 0, None, [], 0
        for number, a, b in fields(data, *event):
            if number == 9:
                type_ = a
            elif number == 10:
                name = names.get(sequence, {}).get(a)
            elif number == 23:
                name = data[a:b].decode("utf-8")
            elif number == 3:
                cats.append(categories.get(sequence, {}).get(a))
            elif number == 22:
                cats.append(data[a:b].decode("utf-8"))
            elif number == 11:
                track = a
        yield Event(sequence, type_, name, cats, track)


BEGIN, END, INSTANT = 1, 2, 3
