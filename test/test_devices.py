"""Device files as a user sees them in the trace file (NVTXSHIM_TRACE): a V4L2 camera (the
emulated one, test/v4l2dev) under OpenCV, ffmpeg and v4l2-ctl; a serial port (a pty named in
NVTXSHIM_DEVICES) under pyserial; the frame markers v4l2.in, serial.in and serial.out; programs
whose terminals, pipes, files and sockets must never be traced; and the C harness as a camera
rig whose capture-to-actuation latency `nvtxshim report` prints.

Every figure is checked against an independent account: the camera's truth log (what it handed
out, when), the bytes the test's own serial peer received and sent, and the harness's --log."""
import glob
import os
import re
import shutil
import subprocess
import threading
import time
import tty

import pytest

from conftest import BUILD, PYTHON, ROOT, SHIM, STUB, load_trace, ranges
from childenv import clean_env
from v4l2dev import DEVICE, camera_env, handed_out, preload, read_log
import traceformat
from traceformat import end_us

SMALL = "YUYV:160x120"
RED = "#d50000"
MS = 1000000
# How long a check that needs a run the scheduler left alone at a few moments may keep trying
# (at least 6 runs): generous for the ASan build with two busy processes beside it.
RETRY_S = 180
DEVICE_DOMAINS = ("v4l2", "serial", "hid", "i2c")


def need(tool, package):
    if not shutil.which(tool):
        pytest.skip("%s is not installed (%s: make deps installs it)" % (tool, package))


def need_python_module(module, package):
    if subprocess.run([PYTHON, "-c", "import " + module], capture_output=True, timeout=60).returncode:
        pytest.skip("%s is not installed (make deps installs it)" % package)


def run(argv, env, timeout=60, **kwargs):
    result = subprocess.run(argv, env=clean_env(env), capture_output=True, timeout=timeout, **kwargs)
    assert result.returncode == 0, (argv, result.returncode, result.stdout[-2000:],
                                    result.stderr.decode(errors="replace")[-3000:])
    return result


def shimmed(env, trace, **settings):
    """ENV (a camera_env) with the profiler in front of the camera and its trace going to TRACE."""
    env = dict(env, NVTXSHIM_TRACE=str(trace), **settings)
    env["LD_PRELOAD"] = preload(SHIM) if "EMUV4L2_LOG" in env else SHIM
    return env


def ns(microseconds):
    """A trace time (microseconds, three decimals) in nanoseconds."""
    return round(microseconds * 1000)


def dqbuf_ranges(events):
    return [e for e in ranges(events, "v4l2") if e["name"].startswith("VIDIOC_DQBUF ")]


def frame_ages(events):
    return [e for e in ranges(events, "v4l2") if e["name"].startswith("frame age ")]


def drop_marks(events):
    return [e for e in events if e.get("cat") == "v4l2" and e.get("ph") in ("i", "I", "R", "n")
            and e["name"].startswith("dropped ")]


def frames(events):
    return [e for e in ranges(events, "nvtxshim") if re.match(r"frame \d+$", e["name"])]


def device_events(events):
    return [e for e in events if e.get("cat") in DEVICE_DOMAINS]


# ---- the camera ---------------------------------------------------------------------------

OPENCV_CHILD = r"""
import sys
import cv2
capture = cv2.VideoCapture(sys.argv[1], cv2.CAP_V4L2)
assert capture.isOpened()
for _ in range(int(sys.argv[2])):
    good, frame = capture.read()
    assert good
    sys.stdout.buffer.write(frame.tobytes())
capture.release()
"""


def client(name, count, out):
    """(argv of camera client NAME reading COUNT frames, where its output goes: None for
    stdout, else the file OUT)."""
    if name == "opencv":
        need_python_module("cv2", "python3-opencv")
        return [PYTHON, "-c", OPENCV_CHILD, DEVICE, str(count)], None
    if name == "ffmpeg":
        need("ffmpeg", "ffmpeg")
        return ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-f", "v4l2", "-i", DEVICE,
                "-frames:v", str(count), "-fps_mode", "passthrough", "-f", "rawvideo", "-"], None
    need("v4l2-ctl", "v4l-utils")
    return ["v4l2-ctl", "-d", DEVICE, "--stream-mmap", "--stream-count=%d" % count,
            "--stream-to=%s" % out], out


def run_camera_client(tmp_path, name, count, profiled, **camera):
    """Runs client NAME on the emulated camera, with the profiler when PROFILED. Returns (its
    output bytes, the camera's log events, the trace's events or None)."""
    where = tmp_path / ("profiled" if profiled else "plain")
    where.mkdir(parents=True)
    env, log = camera_env(where, fmt=SMALL, **camera)
    trace = where / "trace.json"
    if profiled:
        env = shimmed(env, trace)
    argv, out = client(name, count, where / "frames.raw")
    result = run(argv, env)
    output = result.stdout if out is None else out.read_bytes()
    return output, read_log(log), load_trace(trace, complete=True) if profiled else None


def check_camera_trace(events, log):
    """The trace's DQBUF, frame age and dropped-frame events against the camera's LOG."""
    dequeued = [e for e in log if e["event"] == "dqbuf"]
    assert dequeued
    # One capture range per buffer handed out, its payload the bytes used; a DQBUF that found
    # no frame (EAGAIN) is a range too, without a payload.
    dq = dqbuf_ranges(events)
    # OpenCV asks for RGB24 (RGB3), the others take the camera's YUYV: bytesused tells which.
    fourcc = {160 * 120 * 2: "YUYV", 160 * 120 * 3: "RGB3"}[dequeued[0]["bytes"]]
    assert {e["name"] for e in dq} == {"VIDIOC_DQBUF /dev/video0 160x120 " + fourcc}
    assert all(e["args"]["category"] == "capture" for e in dq)
    filled = [e for e in dq if "payload" in e["args"]]
    assert [e["args"]["payload"] for e in filled] == [e["bytes"] for e in dequeued]
    # One frame age per dequeued buffer: from its capture timestamp to the dequeue. It begins at
    # the timestamp the camera logged, and ends after the camera logged the dequeue (the shim
    # reads its clock once the camera's ioctl has returned) and inside the DQBUF range that
    # handed the buffer out. How long after the camera's log is the scheduler's to say: under
    # load the thread can wait milliseconds between the two (a bound of 1 ms failed beside two
    # busy processes), but never outside its own range.
    ages = frame_ages(events)
    assert len(ages) == len(dequeued)
    handed_out = sorted(filled, key=lambda e: e["ts"])
    for age, logged, dequeue in zip(sorted(ages, key=lambda e: e["ts"]), dequeued, handed_out):
        assert age["name"] == "frame age /dev/video0 buf=%d" % logged["index"]
        assert age["async"] and age["args"]["category"] == "frame age"
        assert ns(age["ts"]) == logged["timestamp_ns"]
        assert abs(age["args"]["payload"] - ns(age["dur"])) <= 1
        truth = logged["dq_ns"] - logged["timestamp_ns"]
        assert age["args"]["payload"] >= truth, (age, logged)
        age_end = logged["timestamp_ns"] + age["args"]["payload"]
        assert ns(dequeue["ts"]) - 1 <= age_end <= ns(dequeue["ts"] + dequeue["dur"]) + 1, (
            age, dequeue)
    # A red mark per gap in the sequence, its payload the frames lost.
    gaps, last = [], -1
    for e in dequeued:
        if e["seq"] != last + 1:
            gaps.append(e["seq"] - last - 1)
        last = e["seq"]
    marks = drop_marks(events)
    assert [(m["name"], m["args"]["payload"]) for m in marks] == [
        ("dropped %d frame%s /dev/video0" % (n, "" if n == 1 else "s"), n) for n in gaps]
    assert all(m["args"]["color"] == RED and m["args"]["category"] == "warning" for m in marks)
    return ages


@pytest.mark.parametrize("name", ["opencv", "ffmpeg", "v4l2-ctl"])
def test_camera_clients_see_the_same_frames_and_the_trace_matches_the_camera(tmp_path, name):
    # The camera waits for a queued buffer rather than drop a frame (EMUV4L2_NOBUF=wait): a
    # client that a loaded machine makes late sees the same frames, with the library or not.
    plain, _, _ = run_camera_client(tmp_path, name, 6, False, fps=60, nobuf="wait")
    profiled, log, events = run_camera_client(tmp_path, name, 6, True, fps=60, nobuf="wait")
    assert len(plain) >= 6 * 160 * 120 * 2
    assert profiled == plain
    check_camera_trace(events, log)
    names = {e["name"] for e in ranges(events, "v4l2")}
    assert "VIDIOC_STREAMON /dev/video0" in names
    assert any(n.startswith("VIDIOC_QBUF /dev/video0 buf=") for n in names)


@pytest.mark.parametrize("name", ["opencv", "ffmpeg"])
def test_set_up_ranges_say_what_the_camera_granted(tmp_path, name):
    """VIDIOC_S_FMT and VIDIOC_REQBUFS named from the driver's answer, not the request: ffmpeg
    asks for YU12, 422P and YV12 and for 256 buffers, OpenCV for 640x480 BGR3; the camera
    (160x120, YUYV, GREY or RGB3, at most 32 buffers) answers with what it has, and the names
    say that. They used to say what was asked."""
    _, log, events = run_camera_client(tmp_path, name, 3, True, fps=60)
    names = {e["name"] for e in ranges(events, "v4l2")}
    formats = {n[len("VIDIOC_S_FMT /dev/video0 "):] for n in names if n.startswith("VIDIOC_S_FMT ")}
    assert formats and formats <= {"160x120 YUYV", "160x120 GREY", "160x120 RGB3"}, formats
    # The format it streamed in is the one the last S_FMT set, as the dequeues are named.
    dequeues = {n for n in names if n.startswith("VIDIOC_DQBUF ")}
    assert len(dequeues) == 1 and dequeues.pop().split(" ", 2)[2] in formats
    counts = [int(n.split()[2]) for n in names if n.startswith("VIDIOC_REQBUFS ")]
    assert counts and all(count <= 32 for count in counts) and max(counts) > 0, counts


@pytest.mark.parametrize("name", ["opencv", "ffmpeg", "v4l2-ctl"])
def test_a_dqbuf_range_is_a_frame_handed_out(tmp_path, name):
    """Exactly one VIDIOC_DQBUF range per buffer handed out: non-blocking clients that ask
    before the frame is ready (ffmpeg retries after EAGAIN) draw no range for the asking."""
    _, log, events = run_camera_client(tmp_path, name, 6, True, fps=60)
    assert len(dqbuf_ranges(events)) == len([e for e in log if e["event"] == "dqbuf"])


@pytest.mark.parametrize("name", ["opencv", "ffmpeg", "v4l2-ctl"])
def test_dropped_frames_are_red_marks(tmp_path, name):
    _, log, events = run_camera_client(tmp_path, name, 6, True, fps=60, drops=(2, 3, 5))
    # The camera drops 2, 3 and 5; a client a loaded machine keeps waiting may lose more (the
    # camera had no buffer queued), and those are marked too: the marks are the gaps in what was
    # handed out, as the camera logged it (check_camera_trace).
    drops = [e for e in log if e["event"] == "drop"]
    assert [e["seq"] for e in drops if e["reason"] != "nobuf"] == [2, 3, 5], drops
    check_camera_trace(events, log)
    if all(e["reason"] != "nobuf" for e in drops):
        assert [m["args"]["payload"] for m in drop_marks(events)] == [2, 1]


def test_a_blocking_client_sees_the_configured_frame_age(tmp_path):
    """v4l2-ctl blocks in DQBUF until the frame is ready: the frame age is the camera's delay.
    In every run no frame is handed out before its delay and each age is the camera's (its
    log); that the typical one comes right after it needs a client woken on time, which a
    loaded 2-core machine (or an ASan build) may not give: a run is repeated, for up to
    RETRY_S seconds (at least 6 runs), until the median is within 1 ms of the delay."""
    deadline, attempt = time.monotonic() + RETRY_S, 0
    while True:
        _, log, events = run_camera_client(tmp_path / str(attempt), "v4l2-ctl", 8, True, fps=60,
                                           delays_ms=(5,))
        attempt += 1
        ages = check_camera_trace(events, log)
        assert len(ages) == 8
        payloads = sorted(e["args"]["payload"] for e in ages)
        assert payloads[0] > 5 * MS - MS, payloads
        if abs(payloads[len(payloads) // 2] - 5 * MS) < MS:
            break
        if attempt >= 6 and time.monotonic() > deadline:
            pytest.fail("in %d runs the median frame age was never within 1 ms of 5 ms: %r" % (
                attempt, payloads))


def test_without_the_v4l2_hooks_the_camera_is_not_traced(tmp_path):
    env, log = camera_env(tmp_path, fmt=SMALL, fps=60)
    trace = tmp_path / "trace.json"
    argv, _ = client("v4l2-ctl", 4, tmp_path / "frames.raw")
    run(argv, shimmed(env, trace, NVTXSHIM_HOOKS="usb,serial,hid"))
    assert len(handed_out(read_log(log))) == 4
    assert not trace.exists() or ranges(load_trace(trace), "v4l2") == []


# ---- a serial port: pyserial on a pty ----------------------------------------------------

SERIAL_CHILD = r"""
import sys
import serial
port = serial.Serial(sys.argv[1], 115200, timeout=10)
for message in sys.argv[2:]:
    port.write(message.encode() + b"\n")
    reply = port.readline()
    assert reply == b"ok " + message.encode() + b"\n", reply
port.close()
"""

MESSAGES = ["move 1 2", "x" * 40, "status", "y" * 300]


class Peer:
    """The other end of a pty in raw mode: answers each line L with "ok L\n" until it has
    answered COUNT lines; what it received and sent is kept."""

    def __init__(self, count):
        self.master, self.slave = os.openpty()
        tty.setraw(self.slave)
        self.path = os.ttyname(self.slave)
        self.count, self.received, self.sent = count, b"", 0
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        pending, answered = b"", 0
        while answered < self.count:
            data = os.read(self.master, 4096)
            if not data:
                break
            self.received += data
            pending += data
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                reply = b"ok " + line + b"\n"
                os.write(self.master, reply)
                self.sent += len(reply)
                answered += 1

    def close(self):
        self.thread.join(30)
        assert not self.thread.is_alive()
        os.close(self.slave)
        os.close(self.master)


def run_serial_client(tmp_path, **settings):
    need_python_module("serial", "python3-serial")
    peer = Peer(len(MESSAGES))
    trace = tmp_path / "serial.json"
    try:
        run([PYTHON, "-c", SERIAL_CHILD, peer.path] + MESSAGES, shimmed({}, trace, **{
            k: v.replace("PTS", peer.path) for k, v in settings.items()}))
    finally:
        peer.close()
    assert peer.received == b"".join(m.encode() + b"\n" for m in MESSAGES)
    return peer, (load_trace(trace, complete=True) if trace.exists() else [])


def test_pyserial_writes_and_reads_on_a_named_pty(tmp_path):
    peer, events = run_serial_client(tmp_path, NVTXSHIM_DEVICES="PTS")
    serial = ranges(events, "serial")
    writes = [e for e in serial if e["args"]["category"] == "write"]
    assert [(e["name"], e["args"]["payload"]) for e in writes] == [
        ("write %s %dB" % (peer.path, len(m) + 1), len(m) + 1) for m in MESSAGES]
    reads = [e for e in serial if e["args"]["category"] == "read"]
    assert all(re.match(r"read %s \d+B$" % re.escape(peer.path), e["name"]) for e in reads)
    assert sum(e["args"].get("payload", 0) for e in reads) == peer.sent
    assert {e["args"]["category"] for e in serial} <= {"read", "write", "wait", "drain"}
    assert device_events(events) == [e for e in events if e.get("cat") == "serial"]


@pytest.mark.parametrize("settings", [{}, {"NVTXSHIM_DEVICES": "/dev/ttyUSB*"},
                                      {"NVTXSHIM_DEVICES": "PTS", "NVTXSHIM_HOOKS": "v4l2,hid,usb"}],
                         ids=["unnamed", "other-glob", "serial-hooks-off"])
def test_a_pty_not_named_is_not_traced(tmp_path, settings):
    _, events = run_serial_client(tmp_path, **settings)
    assert device_events(events) == []


# ---- bytes moved: one rule for every device call -------------------------------------------

NONBLOCKING_SERIAL_CHILD = r"""
import os, sys
import serial
port = serial.Serial(sys.argv[1], 115200, timeout=10)
port.nonblocking()
got, empty, reads = b"", 0, 0
try:  # nothing was sent yet: found nothing, for certain
    assert os.read(port.fd, 64) == b""
except BlockingIOError:
    pass
empty += 1
for message in sys.argv[2:]:
    port.write(message.encode() + b"\n")
    want = b"ok " + message.encode() + b"\n"
    line = b""
    while not line.endswith(b"\n"):
        try:
            chunk = os.read(port.fd, 64)
        except BlockingIOError:
            chunk = b""
        if not chunk:  # EAGAIN, or 0 bytes: pyserial's raw mode (VMIN 0) reads nothing so
            empty += 1
            continue
        reads += 1
        line += chunk
    assert line == want, line
    got += line
port.close()
print(len(got), reads, empty)
"""


def test_a_non_blocking_serial_loop_draws_the_bytes_it_moved(tmp_path):
    """pyserial's port (non-blocking) read in a loop, as a control loop polls its servo: each
    read that found nothing (EAGAIN, or 0 bytes in pyserial's raw mode) is drawn nowhere, each that moved bytes is a
    range whose payload is what it moved, and the payloads add up to what the program
    received. It used to draw every EAGAIN as a 64-byte read."""
    need_python_module("serial", "python3-serial")
    peer = Peer(len(MESSAGES))
    trace = tmp_path / "serial.json"
    try:
        result = run([PYTHON, "-c", NONBLOCKING_SERIAL_CHILD, peer.path] + MESSAGES,
                     shimmed({}, trace, NVTXSHIM_DEVICES=peer.path))
    finally:
        peer.close()
    assert result.returncode == 0, result.stderr
    received, reads, empty = (int(v) for v in result.stdout.split())
    assert received == peer.sent and empty > 0
    events = load_trace(trace, complete=True)
    drawn = [e for e in ranges(events, "serial") if e["args"]["category"] == "read"]
    assert len(drawn) == reads
    assert all(e["args"]["payload"] > 0 for e in drawn)
    assert sum(e["args"]["payload"] for e in drawn) == received
    writes = [e for e in ranges(events, "serial") if e["args"]["category"] == "write"]
    assert [e["args"]["payload"] for e in writes] == [len(m) + 1 for m in MESSAGES]


NONBLOCKING_READ_CHILD = r"""
import os, sys
path, size, frames = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
got, reads, empty = 0, 0, 0
while got < frames * size:
    try:
        data = os.read(fd, size)
    except BlockingIOError:
        empty += 1
        continue
    reads += 1
    got += len(data)
os.close(fd)
print(got, reads, empty)
"""


def test_a_non_blocking_camera_read_loop_draws_the_bytes_it_moved(tmp_path):
    """A camera read with read() on a non-blocking descriptor, in a loop that asks until a
    frame is there: the reads that found none are not drawn (as a non-blocking VIDIOC_DQBUF
    that finds none is not), and the drawn ones add up to the bytes the program received.
    It used to draw 37 ranges claiming 1,420,800 B where 3 reads moved 115,200 B."""
    env, log = camera_env(tmp_path, fmt=SMALL, fps=60)
    trace = tmp_path / "trace.json"
    size = 160 * 120 * 2
    result = run([PYTHON, "-c", NONBLOCKING_READ_CHILD, DEVICE, str(size), "3"],
                 shimmed(env, trace))
    assert result.returncode == 0, result.stderr
    received, reads, empty = (int(v) for v in result.stdout.split())
    assert received == 3 * size and empty > 0
    assert sum(e["bytes"] for e in handed_out(read_log(log))) == received
    drawn = [e for e in ranges(load_trace(trace, complete=True), "v4l2")
             if e["name"].startswith("read ")]
    assert len(drawn) == reads
    assert sum(e["args"]["payload"] for e in drawn) == received


# ---- frame markers -------------------------------------------------------------------------

def test_v4l2_in_counts_a_frame_per_dequeue(tmp_path):
    env, log = camera_env(tmp_path, fmt=SMALL, fps=60)
    trace = tmp_path / "trace.json"
    argv, _ = client("v4l2-ctl", 7, tmp_path / "frames.raw")
    run(argv, shimmed(env, trace, NVTXSHIM_FRAME="v4l2.in:/dev/video*"))
    events = load_trace(trace, complete=True)
    assert len(handed_out(read_log(log))) == 7
    counted = frames(events)
    assert [e["name"] for e in counted] == ["frame %d" % i for i in range(1, 8)]
    # each frame begins when its DQBUF returns
    dq = [e for e in dqbuf_ranges(events) if "payload" in e["args"]]
    for frame, call in zip(counted, dq):
        assert call["ts"] <= frame["ts"] <= end_us(call)


@pytest.mark.parametrize("marker", ["v4l2.in", "v4l2.in:/dev/video1"])
def test_v4l2_in_counts_only_its_camera(tmp_path, marker):
    env, log = camera_env(tmp_path, fmt=SMALL, fps=60)
    trace = tmp_path / "trace.json"
    argv, _ = client("v4l2-ctl", 3, tmp_path / "frames.raw")
    run(argv, shimmed(env, trace, NVTXSHIM_FRAME=marker))
    assert len(frames(load_trace(trace, complete=True))) == (3 if marker == "v4l2.in" else 0)


@pytest.mark.parametrize("marker,glob_matches", [
    ("serial.out", True), ("serial.out:/dev/pts/*", True), ("serial.out:/dev/ttyACM*", False),
    ("serial.in", True), ("serial.in:/dev/pts/*", True), ("serial.in:/dev/ttyUSB*", False),
])
def test_serial_markers_count_the_calls_that_moved_data(tmp_path, marker, glob_matches):
    peer, events = run_serial_client(tmp_path, NVTXSHIM_DEVICES="PTS", NVTXSHIM_FRAME=marker)
    serial = ranges(events, "serial")
    category = "write" if marker.startswith("serial.out") else "read"
    moved = [e for e in serial if e["args"]["category"] == category and e["args"].get("payload", 0) > 0]
    assert len(moved) >= len(MESSAGES)
    counted = frames(events)
    if not glob_matches:
        assert counted == []
        return
    assert [e["name"] for e in counted] == ["frame %d" % i for i in range(1, len(moved) + 1)]
    for frame, call in zip(counted, moved):
        assert call["ts"] <= frame["ts"] <= end_us(call)


# ---- never traced --------------------------------------------------------------------------

SOCKET_CHILD = r"""
import socket, sys
a, b = socket.socketpair()
a.sendall(b"x" * 5000)
a.shutdown(socket.SHUT_WR)
got = b""
while True:
    chunk = b.recv(4096)
    if not chunk:
        break
    got += chunk
with open("/dev/null", "w") as null:
    null.write("x")
sys.stdout.write("%d\n" % len(got))
"""

PTY_CHILD = r"""
import os, pty, sys
pty.spawn(["sh", "-c", "echo spawned; cat /etc/hostname; cat /dev/null"])
"""

NEVER_TRACED = {
    "script": ["script", "-qc", "ls /; cat /etc/hostname; cat /dev/null", "/dev/null"],
    "pty.spawn": [PYTHON, "-c", PTY_CHILD],
    "pipeline": ["sh", "-c", "seq 1000 | sort | head; seq 50 > f.txt; cat < f.txt | wc -c; "
                 "echo gone > /dev/null; cat /dev/null; tr a-z A-Z < /etc/hostname"],
    "socket": [PYTHON, "-c", SOCKET_CHILD],
}


@pytest.mark.parametrize("name", sorted(NEVER_TRACED))
def test_terminals_pipes_files_and_sockets_are_never_traced(tmp_path, name):
    argv = NEVER_TRACED[name]
    if not shutil.which(argv[0]):
        pytest.skip("%s is not installed" % argv[0])
    outputs = []
    for profiled in (False, True):
        where = tmp_path / ("profiled" if profiled else "plain")
        where.mkdir()
        env = shimmed({}, where / "trace-%p.json") if profiled else {}
        result = run(argv, env, cwd=str(where), stdin=subprocess.DEVNULL)
        outputs.append((result.stdout, result.stderr))
    assert outputs[0] == outputs[1]
    assert outputs[0][0]
    # The profiler writes a trace at its first event: none, or none of a device's.
    for trace in glob.glob(str(tmp_path / "profiled" / "trace-*.json")):
        assert device_events(load_trace(trace)) == [], trace
    # The control: the same program with /dev/null named in NVTXSHIM_DEVICES is traced (the
    # profiler was there and saw the program's device files), and its output is the same.
    where = tmp_path / "named"
    where.mkdir()
    result = run(argv, shimmed({}, where / "trace-%p.json", NVTXSHIM_DEVICES="/dev/null"), cwd=str(where),
                 stdin=subprocess.DEVNULL)
    assert (result.stdout, result.stderr) == outputs[0]
    named = [e for trace in glob.glob(str(where / "trace-*.json")) for e in device_events(load_trace(trace))]
    assert named and {e["name"].split()[1] for e in named if e.get("ph") == "X"} == {"/dev/null"}, named


# ---- the harness as a camera rig -----------------------------------------------------------

HARNESS = os.path.join(BUILD, "harness_physical")
EMUSERVO = os.path.join(ROOT, "examples", "emuservo.py")
FRAME_LINE = re.compile(rb"^frame (\d+) seq=(\d+) capture_ns=(\d+) dequeue_ns=(\d+) dropped=(\d+) "
                        rb"act_ns=(\d+) sent=(\d+)", re.M)


def test_harness_rig_starts_its_camera_once_the_gpu_is_ready(tmp_path):
    """Found on a real H200: CUDA's start-up took 240 ms, longer than the camera's four
    buffers last at 30 fps, and the harness had started the stream first, so the first frames it
    saw depended on how long start-up took (the summary's second line differed run to run). The
    stand-in driver's cuInit takes 300 ms here and says when it returned (NVS_STUB_INIT_DONE):
    the camera's first frame is captured after that moment (the stream starts when its producer
    thread runs, after STREAMON), an order no load can turn round, where the stream started
    first has it 300 ms before. The camera waits for a queued buffer rather than drop a frame
    (EMUV4L2_NOBUF=wait), so that a harness a loaded machine makes late (ASan with two busy
    processes beside it fell behind in 6 pairs of runs of 6) sees the same frames: with and
    without the start-up time its summary is the same."""
    assert os.path.exists(HARNESS), "%s is not built" % HARNESS
    summaries = []
    for init_ms in ("0", "300"):
        where = tmp_path / init_ms
        os.makedirs(where)
        env, log = camera_env(where, nobuf="wait")
        ready = where / "cuinit.ns"
        env = dict(env, LD_LIBRARY_PATH=STUB, NVS_STUB_INIT_MS=init_ms, NVS_STUB_INIT_DONE=str(ready))
        servo = subprocess.Popen([PYTHON, EMUSERVO, "--timeout", "120"], env=clean_env(),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            pts = servo.stdout.readline().decode().strip()
            result = run([HARNESS, "--frames", "8", "--inference=gpu", "--camera",
                          "v4l2:" + DEVICE, "--actuator", "serial:" + pts], env, timeout=300)
        finally:
            servo.communicate(timeout=150)
        assert result.returncode == 0, result.stderr
        summaries.append(result.stdout.decode().splitlines()[1])
        events = read_log(log)
        [gpu_ready] = [int(line) for line in ready.read_text().split()]
        first = min(e["timestamp_ns"] for e in events if e["event"] in ("dqbuf", "drop"))
        assert first > gpu_ready, (init_ms, first - gpu_ready, events[:3])
        assert not [e for e in events if e["event"] == "drop"], (init_ms, events)
    assert all("frames=8 errors=0" in summary for summary in summaries), summaries
    assert summaries[0] == summaries[1], summaries


def rig_run(where, delay_ms, count):
    """The harness as a rig on the camera (DELAY_MS) and the servo, COUNT frames, recording to
    WHERE/rig.json: (harness rows, camera log, trace events, trace path)."""
    os.mkdir(where)
    # --count 0: the servo stops when the harness closes the port (with --count it closes
    # the pty right after its last reply, which the harness may then never read). Without
    # --path-file it says the pty's path on stdout, one line, once it is ready.
    servo = subprocess.Popen([PYTHON, EMUSERVO, "--timeout", "30"], env=clean_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        pts = servo.stdout.readline().decode().strip()
        assert pts.startswith("/dev/"), pts
        env, log = camera_env(where, delays_ms=(delay_ms,))
        trace = where / "rig.json"
        env = shimmed(env, trace, NVTXSHIM_DEVICES=pts, NVTXSHIM_FRAME="v4l2.in",
                      LD_LIBRARY_PATH=STUB)
        result = run([HARNESS, "--frames", str(count), "--camera", "v4l2:" + DEVICE,
                      "--actuator", "serial:" + pts, "--log"], env)
    finally:
        rest, err = servo.communicate(timeout=30)
    assert b"answered %d commands" % count in rest, (rest, err)
    rows = [tuple(int(v) for v in m.groups()) for m in FRAME_LINE.finditer(result.stdout)]
    assert [r[0] for r in rows] == list(range(count))
    assert b"frames=%d errors=0 " % count in result.stdout, result.stdout[-2000:]
    return rows, read_log(log), load_trace(trace, complete=True), trace


def test_harness_rig_capture_to_actuation(tmp_path):
    """The trace's capture-to-actuation latency is the harness's own (its --log), and the
    report prints it. What the trace holds must agree with the camera and the harness in every
    run: each frame age is the camera's (its log), each latency ends no later than the harness
    read its clock. How close the harness's clock reads come to the trace's is checked in a run
    where no thread was kept off its CPU at those moments: on a loaded machine a run is
    repeated, for up to RETRY_S seconds (at least 6 runs), until one is."""
    assert os.path.exists(HARNESS), "%s is not built" % HARNESS
    delay_ms, count = 5, 12
    deadline, attempt = time.monotonic() + RETRY_S, 0
    while True:
        rows, log, events, trace = rig_run(tmp_path / str(attempt), delay_ms, count)
        attempt += 1
        harness_latency = [r[5] - r[2] for r in rows]
        ages = sorted(frame_ages(events), key=lambda e: e["ts"])
        assert len(ages) == count
        dequeued = [e for e in log if e["event"] == "dqbuf"]
        assert len(dequeued) == count
        # No frame is handed out before its delay; each age is the camera's, from the buffer's
        # timestamp to the dequeue, the library's clock read after the camera's.
        late = []
        for age, logged in zip(ages, dequeued):
            assert logged["dq_ns"] - logged["timestamp_ns"] >= delay_ms * MS - MS
            truth = logged["dq_ns"] - logged["timestamp_ns"]
            assert age["args"]["payload"] >= truth, (age, logged)
            late.append(age["args"]["payload"] - truth)
        # The trace's capture times are the harness's (the buffer's timestamp).
        captures = [ns(e["ts"] + e["dur"]) - e["args"]["payload"] for e in ages]
        assert [abs(c - r[2]) <= 1 for c, r in zip(captures, rows)] == [True] * count

        # The report's pairing: per serial write, the newest frame dequeued before it began;
        # the latency ends with the write's range. The harness's act_ns is read just after its
        # write() returned, so it is later than the range's end, never earlier.
        writes = sorted((e for e in ranges(events, "serial") if e["name"].startswith("write ")),
                        key=lambda e: e["ts"])
        assert len(writes) == count
        dequeues = [ns(e["ts"] + e["dur"]) for e in ages]
        trace_latency = []
        for write in writes:
            newest = max(i for i, d in enumerate(dequeues) if d <= ns(write["ts"]))
            assert newest == len(trace_latency)
            trace_latency.append(ns(write["ts"] + write["dur"]) - captures[newest])
        differences = [h - t for h, t in zip(harness_latency, trace_latency)]
        assert all(d >= 0 for d in differences), differences
        if all(d < MS for d in differences + late):
            break
        if attempt >= 6 and time.monotonic() > deadline:
            pytest.fail("in %d runs the library's clock and the harness's or the camera's were "
                        "always 1 ms or more apart somewhere: %r, %r" % (attempt, differences, late))

    report = subprocess.run([os.path.join(BUILD, "nvtxshim"), "report", str(trace), "--slowest", "100"],
                            env=clean_env(), capture_output=True, timeout=60)
    assert report.returncode == 0, report.stderr
    text = report.stdout.decode()
    section = text[text.index("== Capture to actuation"):]
    m = re.search(r"^  (\d+) pairs +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+)$", section, re.M)
    assert m, section
    assert int(m.group(1)) == count
    mean, maximum = float(m.group(2)), float(m.group(5))
    assert abs(mean - sum(trace_latency) / count / MS) <= 0.0015, (mean, trace_latency)
    assert abs(maximum - max(trace_latency) / MS) <= 0.0015, (maximum, trace_latency)
    assert abs(mean - sum(harness_latency) / count / MS) < 1
    assert "(%d camera frames dequeued, 0 not acted on; %d actuations, 0 on no new frame)" % (
        count, count) in section
    # per frame (--slowest lists them all): the latency column holds each pair's latency
    # (a row may end with a note: "(9 camera frames dropped)" when a loaded machine lost some)
    rows_shown = re.findall(r"^  frame \d+ .*? ([\d.]+|-)(?:  \(.*\))?$", text, re.M)
    assert len(rows_shown) == count, text
    shown = sorted(float(v) for v in rows_shown)
    assert all(abs(a - b / MS) <= 0.0015 for a, b in zip(shown, sorted(trace_latency))), (shown, trace_latency)
    # the frame age's row in the per-name table: its mean is the trace's mean age (in us)
    age_row = re.search(r"^  v4l2 +frame age /dev/video0 +(\d+) +([\d.]+)", text, re.M)
    assert age_row and int(age_row.group(1)) == count
    mean_age = sum(e["args"]["payload"] for e in ages) / count
    assert abs(float(age_row.group(2)) - mean_age / 1000) < 1, (age_row.group(2), mean_age)


# ---- HID: a recorded security key (test/hidraw) ------------------------------------------

HIDRAW = os.path.join(ROOT, "test", "hidraw")
# A raw hidraw client: the report descriptor's size (as hidapi asks it), then CTAPHID_INIT on
# the broadcast channel with the nonce the recording was made with, and the key's answer.
HID_CLIENT = r"""
import fcntl, os, select, struct
fd = os.open("/dev/hidraw5", os.O_RDWR)
size = struct.unpack("i", fcntl.ioctl(fd, 0x80044801, b"\0" * 4))[0]   # HIDIOCGRDESCSIZE
descriptor = bytearray(struct.pack("I", size) + bytes(4096))
fcntl.ioctl(fd, 0x90044802, descriptor, True)  # HIDIOCGRDESC
assert struct.unpack("I", descriptor[:4])[0] == size
packet = b"\x00\xff\xff\xff\xff\x86\x00\x08" + b"\x01" * 8 + b"\x00" * 49
written = os.write(fd, packet)
select.select([fd], [], [], 5)
reply = os.read(fd, 64)
print(size, written, len(reply), reply[:24].hex(), descriptor[4:4 + size].hex())
os.close(fd)
"""


def run_recorded_key(tmp_path, shim, **settings):
    need("umockdev-run", "umockdev")
    tmp_path.mkdir(exist_ok=True)
    trace = tmp_path / "hid-%p.json"
    inner = "exec %s -c '%s'" % (PYTHON, HID_CLIENT.replace("'", "'\\''"))
    if shim:
        # The library in front of umockdev's preload, which answers the device's calls itself.
        inner = 'LD_PRELOAD="%s:$LD_PRELOAD" ' % SHIM + inner
    env = dict(NVTXSHIM_TRACE=str(trace), **settings)
    result = run(["umockdev-run", "--device", "fido2.umockdev",
                  "--ioctl", "/dev/hidraw5=fido2.ioctl", "--script", "/dev/hidraw5=fido2.script",
                  "--", "sh", "-c", inner], env, cwd=HIDRAW)
    events = [e for path in glob.glob(str(tmp_path / "hid-*.json")) for e in load_trace(path)]
    return result.stdout, events


def test_a_hidraw_client_on_a_recorded_security_key(tmp_path):
    plain, _ = run_recorded_key(tmp_path / "plain", False)
    profiled, events = run_recorded_key(tmp_path / "shim", True)
    assert plain == profiled
    assert plain.split()[:3] == [b"34", b"65", b"64"], plain
    hid = [(e["name"], e["args"].get("payload")) for e in ranges(events, "hid")]
    # The report descriptor's size (an int) and the descriptor (34 bytes, the recording's), the
    # script's one write (65 bytes) and one read (64), and the wait before the read.
    assert hid == [("HIDIOCGRDESCSIZE /dev/hidraw5", 4), ("HIDIOCGRDESC /dev/hidraw5", 34),
                   ("write /dev/hidraw5 65B", 65), ("select /dev/hidraw5", None),
                   ("read /dev/hidraw5 64B", 64)], hid
    assert [e["args"]["category"] for e in ranges(events, "hid")][:2] == ["control", "control"]


def test_fido2_token_lists_the_recorded_key_and_its_hid_calls_are_drawn(tmp_path):
    """fido2-token -L (libfido2) on the recorded key: it opens the node and reads the report
    descriptor by ioctl, which were not drawn at all; now each is a range of domain hid whose
    payload is what the recording answered (4 bytes of size, then the 34-byte descriptor), and
    the listing is the same."""
    need("umockdev-run", "umockdev")
    need("fido2-token", "fido2-tools")
    outputs, events = [], []
    for shim in (False, True):
        trace = tmp_path / ("fido-%d-%%p.json" % shim)
        inner = "exec fido2-token -L"
        if shim:
            inner = 'LD_PRELOAD="%s:$LD_PRELOAD" ' % SHIM + inner
        result = run(["umockdev-run", "--device", "fido2.umockdev", "--ioctl",
                      "/dev/hidraw5=fido2.ioctl", "--", "sh", "-c", inner],
                     dict(NVTXSHIM_TRACE=str(trace)), cwd=HIDRAW)
        assert result.returncode == 0, result.stderr
        outputs.append(result.stdout)
        events += [e for path in glob.glob(str(tmp_path / ("fido-%d-*.json" % shim)))
                   for e in load_trace(path)]
    assert outputs[0] == outputs[1] and b"/dev/hidraw5: vendor=0x1050" in outputs[0], outputs
    hid = [(e["name"], e["args"].get("payload")) for e in ranges(events, "hid")]
    assert hid == [("HIDIOCGRDESCSIZE /dev/hidraw5", 4), ("HIDIOCGRDESC /dev/hidraw5", 34)], hid


# libhidapi-hidraw (hidapi's hidraw backend, as instruments' vendor tools use it) reading and
# setting feature reports: the buffer's first byte is the report's number.
FEATURE_CLIENT = r"""
import ctypes
hidapi = ctypes.CDLL("libhidapi-hidraw.so.0")
hidapi.hid_open_path.restype = ctypes.c_void_p
hidapi.hid_open_path.argtypes = [ctypes.c_char_p]
for function in (hidapi.hid_send_feature_report, hidapi.hid_get_feature_report):
    function.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
hidapi.hid_close.argtypes = [ctypes.c_void_p]
assert hidapi.hid_init() == 0
device = hidapi.hid_open_path(b"/dev/hidraw5")
assert device, "no device"
def get(report):
    buffer = ctypes.create_string_buffer(bytes([report]) + bytes(8), 9)
    got = hidapi.hid_get_feature_report(device, buffer, 9)
    print("get", report, buffer.raw[:got].hex())
get(1)
get(2)
setting = bytes([2]) + bytes(range(10, 18))
print("set", hidapi.hid_send_feature_report(device, setting, len(setting)))
get(2)
hidapi.hid_close(device)
"""


def run_feature_client(tmp_path, shim, **settings):
    """FEATURE_CLIENT on the recorded key, whose feature reports 1 (3 bytes) and 2 (8 bytes)
    test/hidraw/emufeature.c answers (umockdev replays none): (its output, the reports as
    the stand-in logged them, the trace's events)."""
    need("umockdev-run", "umockdev")
    if not glob.glob("/usr/lib/*/libhidapi-hidraw.so.0"):
        pytest.skip("no libhidapi-hidraw0")
    tmp_path.mkdir(exist_ok=True)
    log, trace = tmp_path / "features.log", tmp_path / "hid-%p.json"
    preload = os.path.join(BUILD, "test", "libemufeature.so")
    if shim:
        preload = SHIM + ":" + preload
    inner = 'LD_PRELOAD="%s:$LD_PRELOAD" exec %s -c \'%s\'' % (preload, PYTHON, FEATURE_CLIENT)
    env = dict(NVTXSHIM_TRACE=str(trace), EMUFEATURE_NODE="/dev/hidraw5",
               EMUFEATURE_REPORTS="01:a1a2a3,02:b1b2b3b4b5b6b7b8", EMUFEATURE_LOG=str(log),
               **settings)
    result = run(["umockdev-run", "--device", "fido2.umockdev", "--ioctl",
                  "/dev/hidraw5=fido2.ioctl", "--", "sh", "-c", inner], env, cwd=HIDRAW)
    logged = [tuple(line.split()) for line in log.read_text().splitlines()]
    events = [e for path in glob.glob(str(tmp_path / "hid-*.json")) for e in load_trace(path)]
    return result.stdout, logged, events


def test_feature_reports_are_hid_ranges_with_the_bytes_they_moved(tmp_path):
    """An instrument that speaks only feature reports was invisible: HIDIOCGFEATURE and
    HIDIOCSFEATURE are now ranges of domain hid (a get is a read, a set a write), named with the
    buffer's size, whose payloads are the bytes the device answered, as its stand-in logged
    them; hid.in counts the reports read in, hid.out the ones sent."""
    plain, _, _ = run_feature_client(tmp_path / "plain", False)
    profiled, logged, events = run_feature_client(tmp_path / "shim", True,
                                                  NVTXSHIM_FRAME="hid.in:/dev/hidraw5")
    assert plain == profiled
    assert plain.decode().splitlines() == ["get 1 01a1a2a3", "get 2 02b1b2b3b4b5b6b7b8", "set 9",
                                           "get 2 020a0b0c0d0e0f1011"]
    assert logged == [("get", "id=1", "bytes=4"), ("get", "id=2", "bytes=9"),
                      ("set", "id=2", "bytes=9"), ("get", "id=2", "bytes=9")]
    features = [e for e in ranges(events, "hid") if "FEATURE" in e["name"]]
    assert [(e["name"], e["args"]["category"], e["args"]["payload"]) for e in features] == [
        ("HIDIOC%sFEATURE /dev/hidraw5 9B" % ("G" if what == "get" else "S"),
         "read" if what == "get" else "write", int(bytes_.split("=")[1]))
        for what, _, bytes_ in logged]
    assert [e["name"] for e in frames(events)] == ["frame 1", "frame 2", "frame 3"]
    for frame, call in zip(frames(events), [e for e in features if e["args"]["category"] == "read"]):
        assert call["ts"] <= frame["ts"] <= end_us(call)


def test_hid_hooks_off_leave_the_key_untraced(tmp_path):
    _, events = run_recorded_key(tmp_path, True, NVTXSHIM_HOOKS="usb,serial,v4l2")
    assert not ranges(events, "hid")


# ---- usbfs: fxload on the emulated camera ----------------------------------------------------

NODE = "/dev/bus/usb/001/007"
# Intel hex: three bytes at 0x0000, then the end record.
FIRMWARE = ":0300000002000AF1\n:00000001FF\n"


def under_emucam(argv, tmp_path, settings, extra=()):
    trace = tmp_path / "usb-%p.json"
    inner = 'LD_PRELOAD="%s:$LD_PRELOAD" exec "$@"' % SHIM
    env = dict(NVTXSHIM_TRACE=str(trace), LD_LIBRARY_PATH=STUB, **settings)
    result = run([os.path.join(BUILD, "emucam"), *extra, "--", "sh", "-c", inner, "sh", *argv], env)
    events = [e for path in glob.glob(str(tmp_path / "usb-*.json")) for e in load_trace(path)]
    return result, events


def test_fxload_firmware_download_is_usbfs_control_transfers(tmp_path):
    need("fxload", "fxload")
    image = tmp_path / "image.hex"
    image.write_text(FIRMWARE)
    _, events = under_emucam(["fxload", "-t", "fx2", "-D", NODE, "-I", str(image)], tmp_path, {},
                             ("--fx2", str(tmp_path / "fx2.log")))
    usb = [(e["name"], e["args"].get("payload")) for e in ranges(events, "usb")]
    # CPUCS held in reset, the image, CPUCS let go: the three writes the device logged.
    assert usb == [("USBDEVFS_CONTROL type=0x40 req=0xa0 val=0xe600 OUT 1B", 1),
                   ("USBDEVFS_CONTROL type=0x40 req=0xa0 val=0x0000 OUT 3B", 3),
                   ("USBDEVFS_CONTROL type=0x40 req=0xa0 val=0xe600 OUT 1B", 1)], usb
    assert len((tmp_path / "fx2.log").read_text().splitlines()) == 3


USBFS_IOCTLS = os.path.join(ROOT, "test", "programs", "usbfs_ioctls.py")


def test_a_closed_file_ends_the_ranges_of_the_urbs_it_discarded(tmp_path):
    """usbfs_ioctls.py files: URBs 1, 2 and 4 are reaped; URB 3 is submitted on a file that is
    then closed unreaped, which discards it. Each URB is a range from its submission: the reaped
    ones end at their reap, URB 3 where its file was closed (the descriptor table tells usbfs
    when a node's last descriptor goes). Without that its range never ends."""
    result, _ = under_emucam([PYTHON, USBFS_IOCTLS, "files", NODE], tmp_path, {})
    assert result.returncode == 0, result.stderr
    [path] = glob.glob(str(tmp_path / "usb-*.json"))
    raw = traceformat.read_complete_trace(path)
    submits = sorted((e for e in raw if e["ph"] == "b" and "SUBMITURB" in e["name"]),
                     key=lambda e: e["ts"])
    ends = {e["id"]: e for e in raw if e["ph"] == "e"}
    assert len(submits) == 4, [e["name"] for e in raw]
    assert all(e["id"] in ends for e in submits), "a URB's range never ended"
    # URB 3's range ends at the close, before URB 4 is submitted on a new file (not at exit).
    assert ends[submits[2]["id"]]["ts"] <= submits[3]["ts"]


def test_libusb_over_usbfs_is_drawn_once(tmp_path):
    """libusb's own usbfs ioctls run inside its traced calls: a transfer is one libusb range,
    never a USBDEVFS one as well."""
    _, events = under_emucam([os.path.join(BUILD, "harness_physical"), "--frames", "3"], tmp_path,
                             {})
    names = [e["name"] for e in ranges(events, "usb")]
    assert any(n.startswith("libusb_bulk_transfer") for n in names), names
    assert not [n for n in names if n.startswith("USBDEVFS_")], names


@pytest.mark.parametrize("marker, frames_wanted", [("hid.out", 1), ("hid.in", 1),
                                                    ("hid.out:/dev/hidraw5", 1),
                                                    ("hid.out:/dev/hidraw9", 0)])
def test_hid_markers_count_the_key_exchange(tmp_path, marker, frames_wanted):
    """The recorded key's one write and one read: a frame each for hid.out and hid.in."""
    _, events = run_recorded_key(tmp_path, True, NVTXSHIM_FRAME=marker)
    assert len(frames(events)) == frames_wanted, [e["name"] for e in frames(events)]


# ---- descriptors above the table, and numbers used again -----------------------------------

FAR_CHILD = r"""
import os, resource, sys
resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
fd = os.open(sys.argv[1], os.O_RDWR | os.O_NOCTTY)
os.dup2(fd, 2000)
os.close(fd)
os.write(2000, b"far\n")       # the device, at a number above the direct table
os.close(2000)
r, w = os.pipe()
os.dup2(w, 2000)               # the same number, now a pipe: never traced
os.write(2000, b"pipe")
fd = os.open(sys.argv[1], os.O_RDWR | os.O_NOCTTY)
os.dup2(r, fd)                 # dup2 onto the device's number: the device is gone from it
os.write(w, b"x")
os.read(fd, 5)
print("ok")
"""


def test_a_device_far_up_is_followed_and_its_number_forgotten_when_reused(tmp_path):
    master, slave = os.openpty()
    try:
        path = os.ttyname(slave)
        trace = tmp_path / "far.json"
        env = dict(NVTXSHIM_DEVICES=path, NVTXSHIM_TRACE=str(trace), LD_PRELOAD=SHIM)
        result = run([PYTHON, "-c", FAR_CHILD, path], env)
        assert result.stdout == b"ok\n"
        serial = [(e["name"], e["args"].get("payload")) for e in ranges(load_trace(str(trace)), "serial")]
        assert serial == [("write %s 4B" % path, 4)], serial
    finally:
        os.close(master)
        os.close(slave)
