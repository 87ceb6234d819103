"""The emulated V4L2 camera (build/test/libemuv4l2.so, test/v4l2dev/emuv4l2.c) for tests:
the environment that makes a program see /dev/video0, the truth log the camera writes, and
the frames it produces.

    env, log = camera_env(tmp_path, delays_ms=(0, 5), drops=(3,), fps=60, fmt="YUYV:160x120")
    subprocess.run(argv, env=clean_env(env))      # the camera alone (LD_PRELOAD set)
    env["LD_PRELOAD"] = preload(SHIM)             # the profiler in front of it
    for event in read_log(log): ...

The camera only answers in processes that load the library, so every program (and every
child that should see the camera) needs LD_PRELOAD to include it."""
import os

from conftest import BUILD

LIBRARY = os.path.join(BUILD, "test", "libemuv4l2.so")
DEVICE = "/dev/video0"

_BYTES_PER_PIXEL = {"YUYV": 2, "GREY": 1, "RGB3": 3, "RGB24": 3}


def preload(*in_front):
    """An LD_PRELOAD value: the libraries IN_FRONT (the profiler), then the camera."""
    return ":".join(list(in_front) + [LIBRARY])


def camera_env(tmp_path, delays_ms=(), drops=(), fps=30, fmt="YUYV:640x480", device=DEVICE, minor=0,
               nobuf="drop"):
    """(the variables to merge into a child's environment, the path of the truth log).
    DELAYS_MS: frame of sequence s becomes ready delays_ms[s % len] after its timestamp;
    DROPS: sequence numbers the camera drops; NOBUF: "drop" a frame that comes while no
    buffer is queued (as a driver does), or "wait" for one (the camera's clock stops), for a
    check that must not depend on the client keeping up. LD_PRELOAD holds the camera alone
    (preload() puts other libraries in front of it)."""
    assert os.path.exists(LIBRARY), "%s is not built: run make test" % LIBRARY
    log = os.path.join(str(tmp_path), "emuv4l2.log")
    env = {
        "LD_PRELOAD": LIBRARY,
        "EMUV4L2_DEVICE": device,
        "EMUV4L2_MINOR": str(minor),
        "EMUV4L2_FORMAT": fmt,
        "EMUV4L2_FPS": str(fps),
        "EMUV4L2_LOG": log,
        "EMUV4L2_NOBUF": nobuf,
    }
    if delays_ms:
        env["EMUV4L2_DELAY_MS"] = ",".join(repr(float(d)) for d in delays_ms)
    if drops:
        env["EMUV4L2_DROP"] = ",".join(str(int(s)) for s in drops)
    return env, log


def read_log(path):
    """The log's lines as dicts, in file order: {"event": "dqbuf"|"read"|"drop", ...} with
    the numeric fields as ints (seq, index, timestamp_ns, due_ns, ready_ns, dq_ns, bytes) and
    reason a string. A missing file (the device was never opened) is an empty list."""
    if not os.path.exists(path):
        return []
    events = []
    with open(path) as f:
        for line in f:
            words = line.split()
            if not words:
                continue
            event = {"event": words[0]}
            for word in words[1:]:
                key, _, value = word.partition("=")
                event[key] = value if key == "reason" else int(value)
            events.append(event)
    return events


def handed_out(events):
    """The events of frames handed to the program (DQBUF or read())."""
    return [e for e in events if e["event"] in ("dqbuf", "read")]


def frame_bytes(seq, fmt="YUYV:640x480"):
    """The bytes of frame SEQ in format FMT, as the camera fills it: byte (x, y) is
    x + 2y + 5*seq mod 256, then the first 8 bytes are seq and ~seq (32-bit little-endian)."""
    fourcc, _, size = fmt.partition(":")
    width, height = (int(v) for v in size.split("x"))
    width &= ~1
    line = width * _BYTES_PER_PIXEL[fourcc]
    ramp = bytes(range(256)) * (line // 256 + 2)
    frame = bytearray(b"".join(ramp[(2 * y + 5 * seq) % 256:][:line] for y in range(height)))
    if len(frame) >= 8:
        frame[0:4] = (seq & 0xFFFFFFFF).to_bytes(4, "little")
        frame[4:8] = (~seq & 0xFFFFFFFF).to_bytes(4, "little")
    return bytes(frame)
