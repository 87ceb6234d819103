"""The user guide's one rule for a device call's bytes (docs/user-guide.md, "One rule for
bytes"), where the guide and the library once disagreed, checked through the trace file:

- a read on a blocking serial port that waited and got nothing (raw mode, VMIN 0, VTIME
  running out) is drawn, from before the call to its return, with payload 0 and no red mark:
  the wait is what the timeline shows (only a non-blocking call that found nothing is left
  out);
- a V4L2 set-up or queueing call the driver refuses (REQBUFS for DMABUF, as GStreamer probes;
  S_FMT while buffers are allocated; QBUF of a buffer that does not exist) is drawn as every
  failed call is: a range named "... failed" (the driver granted nothing), payload 0, its red
  mark inside it. It used to be a red mark alone. So is a refused DQBUF, blocking (its range
  had no payload) or not (it was a red mark alone)."""
import subprocess

from childenv import clean_env
from conftest import PYTHON, SHIM, load_trace, program, ranges
from v4l2dev import DEVICE, camera_env, preload

RED = "#d50000"
MS = 1000.0  # trace times are microseconds


def marks(events, domain):
    return [e for e in events if e.get("cat") == domain and e.get("ph") in ("i", "I", "R", "n")]


def inside(mark, span):
    return span["ts"] <= mark["ts"] <= span["ts"] + span["dur"]


def run(argv, env):
    result = subprocess.run(argv, env=clean_env(env), capture_output=True, timeout=60)
    assert result.returncode == 0, (result.stdout, result.stderr.decode(errors="replace")[-3000:])
    return result


# ---- a blocking serial read that waited for nothing -------------------------------------

EMPTY_READS = 3
SERIAL_CHILD = r"""
import os, sys, termios, tty
master, slave = os.openpty()
tty.setraw(slave)
fd = os.open(os.ttyname(slave), os.O_RDWR | os.O_NOCTTY)   # blocking
attributes = termios.tcgetattr(fd)
attributes[6][termios.VMIN], attributes[6][termios.VTIME] = 0, 1   # wait 0.1 s for a byte
termios.tcsetattr(fd, termios.TCSANOW, attributes)
empty = [os.read(fd, 64) for _ in range(int(sys.argv[1]))]
os.write(master, b"hello")
print(empty, os.read(fd, 64), os.ttyname(slave))
"""


def test_a_blocking_serial_read_that_timed_out_is_drawn_with_nothing_moved(tmp_path):
    trace = tmp_path / "serial.json"
    result = run([PYTHON, "-c", SERIAL_CHILD, str(EMPTY_READS)],
                 {"LD_PRELOAD": SHIM, "NVTXSHIM_TRACE": str(trace), "NVTXSHIM_DEVICES": "/dev/pts/*"})
    path = result.stdout.split()[-1].decode()
    assert result.stdout.decode().startswith("[%s] b'hello'" % ", ".join(["b''"] * EMPTY_READS))
    events = load_trace(trace, complete=True)
    reads = [e for e in ranges(events, "serial") if e["args"]["category"] == "read"]
    assert [(e["name"], e["args"]["payload"]) for e in reads] == \
        [("read %s 64B" % path, 0)] * EMPTY_READS + [("read %s 64B" % path, 5)]
    # Each empty one is the wait for VTIME (0.1 s): the range opened before the call.
    assert all(e["dur"] >= 50 * MS for e in reads[:EMPTY_READS]), [e["dur"] for e in reads]
    assert marks(events, "serial") == []


# ---- a V4L2 set-up call the driver refuses -------------------------------------------------

def iowr(number, size):
    return (3 << 30) | (size << 16) | (ord("V") << 8) | number


V4L2_CHILD = r"""
import errno, fcntl, os, struct, sys
REQBUFS, S_FMT, QBUF, DQBUF = (int(v) for v in sys.argv[2:6])
CAPTURE, MMAP, DMABUF = 1, 1, 4
BUFFER = struct.pack("=2I", 0, CAPTURE) + bytes(52) + struct.pack("=I", MMAP) + bytes(24)
fd = os.open(sys.argv[1], os.O_RDWR)   # blocking

def ask(request, data):
    try:
        fcntl.ioctl(fd, request, bytearray(data))
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]

outcomes = [
    ask(REQBUFS, struct.pack("=5I", 4, CAPTURE, DMABUF, 0, 0)),   # GStreamer's DMABUF probe
    ask(REQBUFS, struct.pack("=5I", 2, CAPTURE, MMAP, 0, 0)),
    ask(S_FMT, struct.pack("=I", CAPTURE) + bytes(204)),          # buffers allocated: EBUSY
    ask(QBUF, struct.pack("=2I", 99, CAPTURE) + bytes(52) + struct.pack("=I", MMAP) + bytes(24)),
    ask(REQBUFS, struct.pack("=5I", 0, CAPTURE, MMAP, 0, 0)),
    ask(DQBUF, BUFFER),                                            # no buffers: EINVAL
]
fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)
outcomes.append(ask(DQBUF, BUFFER))                                # the same, not blocking
print(" ".join(outcomes))
"""

# What the camera answers each, and the range each draws.
V4L2_OUTCOMES = "EINVAL ok EBUSY EINVAL ok EINVAL EINVAL"
V4L2_RANGES = [
    ("VIDIOC_REQBUFS %s failed" % DEVICE, "EINVAL"),
    ("VIDIOC_REQBUFS %s 2 mmap" % DEVICE, None),
    ("VIDIOC_S_FMT %s failed" % DEVICE, "EBUSY"),
    ("VIDIOC_QBUF %s failed" % DEVICE, "EINVAL"),
    ("VIDIOC_REQBUFS %s 0 mmap" % DEVICE, None),
    ("VIDIOC_DQBUF %s" % DEVICE, "EINVAL"),
    ("VIDIOC_DQBUF %s" % DEVICE, "EINVAL"),
]


def test_a_refused_v4l2_set_up_call_is_a_failed_range_with_its_red_mark(tmp_path):
    argv = [PYTHON, "-c", V4L2_CHILD, DEVICE, str(iowr(8, 20)), str(iowr(5, 208)), str(iowr(15, 88)),
            str(iowr(17, 88))]
    env, _ = camera_env(tmp_path, fmt="YUYV:160x120")
    plain = run(argv, env)
    assert plain.stdout.decode().split() == V4L2_OUTCOMES.split()
    trace = tmp_path / "trace.json"
    profiled = run(argv, dict(env, LD_PRELOAD=preload(SHIM), NVTXSHIM_TRACE=str(trace)))
    assert profiled.stdout == plain.stdout
    # Under a tool that sets errno in every call it takes (as nsys's system calls do), each
    # refusal's errno is still the driver's.
    tool = run(argv, dict(env, LD_PRELOAD=preload(SHIM),
                          NVTX_INJECTION64_PATH=program("test/libnull_tool_errno.so")))
    assert tool.stdout == plain.stdout and b"errno tool: pushes" in tool.stderr
    events = load_trace(trace, complete=True)
    drawn = ranges(events, "v4l2")
    assert [e["name"] for e in drawn] == [name for name, _ in V4L2_RANGES]
    red = marks(events, "v4l2")
    assert all(m["args"]["color"] == RED for m in red)
    failures = [(span, error) for span, (_, error) in zip(drawn, V4L2_RANGES) if error]
    assert len(red) == len(failures)
    for (span, error), mark in zip(failures, red):
        request = span["name"].split()[0]
        assert mark["name"] == "%s %s failed: %s" % (request, DEVICE, error)
        assert span["args"]["payload"] == 0
        assert span["args"]["category"] == ("capture" if request == "VIDIOC_DQBUF" else "control")
        assert inside(mark, span), (mark, span)
