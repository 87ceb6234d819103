"""The emulated V4L2 camera (test/v4l2dev/emuv4l2.c, helpers in test/v4l2dev.py) under real,
unmodified clients, without the profiler: v4l2-ctl (MMAP and USERPTR streaming), ffmpeg's
v4l2 input, OpenCV's V4L2 backend, Python's own read()/poll()/stat(), and
v4l2-compliance's streaming tests. What each client receives is checked against the
camera's truth log and against the frames the camera is known to produce."""
import json
import os
import re
import shutil
import subprocess

import pytest

from conftest import PYTHON
from childenv import clean_env
from v4l2dev import DEVICE, LIBRARY, camera_env, frame_bytes, handed_out, read_log

SMALL = "YUYV:160x120"


def need(tool, package):
    if not shutil.which(tool):
        pytest.skip("%s is not installed (%s: make deps installs it)" % (tool, package))


def run(argv, env, timeout=60):
    return subprocess.run(argv, env=clean_env(env), capture_output=True, timeout=timeout)


def ok(result):
    assert result.returncode == 0, (result.returncode, result.stdout.decode(errors="replace")[-3000:],
                                    result.stderr.decode(errors="replace")[-3000:])
    return result


@pytest.fixture(autouse=True)
def library_built():
    assert os.path.exists(LIBRARY), "%s is not built: run make test" % LIBRARY


# v4l2-ctl --verbose prints one line per buffer it dequeues:
#   cap dqbuf: 2 seq:      4 bytesused: 38400 ts: 16074.185245 delta: ... (ts-monotonic, ts-src-soe)
DQBUF_LINE = re.compile(rb"cap dqbuf: *(\d+) seq: *(\d+) bytesused: *(\d+) ts: *(\d+)\.(\d{6})(.*)")


def v4l2ctl_buffers(output):
    """(index, sequence, bytesused, timestamp in ns, the rest) of each buffer v4l2-ctl saw."""
    found = []
    for m in DQBUF_LINE.finditer(output):
        found.append((int(m.group(1)), int(m.group(2)), int(m.group(3)),
                      (int(m.group(4)) * 1000000 + int(m.group(5))) * 1000, m.group(6)))
    return found


@pytest.mark.parametrize("io", ["mmap", "user"])
def test_v4l2ctl_streams_the_frames_the_camera_logs(tmp_path, io):
    need("v4l2-ctl", "v4l-utils")
    env, log = camera_env(tmp_path, fps=60, fmt=SMALL)
    out = tmp_path / "frames.raw"
    result = ok(run(["v4l2-ctl", "-d", DEVICE, "--stream-%s" % io, "--stream-count=8", "--verbose",
                     "--stream-to=%s" % out], env))
    seen = v4l2ctl_buffers(result.stdout + result.stderr)
    # Frames 0-7, each handed out and none dropped; frames after them (the camera goes on until
    # v4l2-ctl stops the stream, and drops them once it holds no buffer) are not the stream's.
    events = [e for e in read_log(log) if e["seq"] < 8]
    assert [e["event"] for e in events] == ["dqbuf"] * 8
    assert [(b[0], b[1], b[2], b[3]) for b in seen] == \
        [(e["index"], e["seq"], e["bytes"], e["timestamp_ns"]) for e in events]
    assert [e["seq"] for e in events] == list(range(8))
    assert all(b[4].rstrip().endswith(b"(ts-monotonic, ts-src-soe)") for b in seen)
    assert out.read_bytes() == b"".join(frame_bytes(s, SMALL) for s in range(8))


def test_dropped_sequences_are_skipped_and_logged(tmp_path):
    need("v4l2-ctl", "v4l-utils")
    env, log = camera_env(tmp_path, drops=(2, 3, 5), fps=60, fmt=SMALL)
    result = ok(run(["v4l2-ctl", "-d", DEVICE, "--stream-mmap", "--stream-count=5", "--verbose"], env))
    seen = v4l2ctl_buffers(result.stdout + result.stderr)
    assert [b[1] for b in seen] == [0, 1, 4, 6, 7]
    assert b"dropped: 2" in seen[2][4] and b"dropped: 1" in seen[3][4]
    # In sequence order: a drop is logged as its frame comes, a dqbuf as the client takes the
    # frame, so the log's own order of the two follows the client's pace. Up to the fifth frame
    # handed out (7): the camera goes on until v4l2-ctl stops the stream, and drops frames once
    # it holds no more buffers, how many depending on how soon that is.
    events = sorted((e for e in read_log(log) if e["seq"] <= 7), key=lambda e: e["seq"])
    assert [(e["event"], e["seq"]) for e in events] == \
        [("dqbuf", 0), ("dqbuf", 1), ("drop", 2), ("drop", 3), ("dqbuf", 4), ("drop", 5), ("dqbuf", 6), ("dqbuf", 7)]
    assert all(e["reason"] == "config" for e in events if e["event"] == "drop")
    # a dropped frame keeps its place in time: the timestamps stay on the 60 Hz grid
    start = events[0]["timestamp_ns"]
    assert all(e["timestamp_ns"] == start + (e["seq"] * 1000000 // 60) * 1000 for e in events)


def test_frame_age_is_the_injected_delay(tmp_path):
    need("v4l2-ctl", "v4l-utils")
    delays = (0, 7.5, 20)
    env, log = camera_env(tmp_path, delays_ms=delays, fps=30, fmt=SMALL)
    result = ok(run(["v4l2-ctl", "-d", DEVICE, "--stream-mmap", "--stream-count=6", "--verbose"], env))
    events = handed_out(read_log(log))
    assert [e["seq"] for e in events] == list(range(6))
    for e in events:
        delay_ns = int(delays[e["seq"] % len(delays)] * 1000000)
        assert e["due_ns"] - e["timestamp_ns"] == delay_ns
        # Made ready at its due moment: never before it, and after it no later than a wake-up
        # takes (1 ms) besides the time the producer spent waiting for a CPU (waited_ns, the
        # scheduler's share: CPU-bound processes beside the test make that as long as they like).
        assert e["ready_ns"] >= e["due_ns"], e
        assert e["ready_ns"] - e["due_ns"] - e["waited_ns"] < 1000000, e
        assert e["dq_ns"] >= e["ready_ns"]
    # the client's timestamps are the log's, to the microsecond (struct timeval)
    seen = v4l2ctl_buffers(result.stdout + result.stderr)
    assert [b[3] for b in seen] == [e["timestamp_ns"] for e in events]


def test_ffmpeg_output_is_the_same_twice(tmp_path):
    need("ffmpeg", "ffmpeg")
    outputs = []
    for run_number in range(2):
        where = tmp_path / str(run_number)
        where.mkdir()
        env, log = camera_env(where, fps=60, fmt=SMALL)
        out = where / "out.raw"
        ok(run(["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-f", "v4l2", "-i", DEVICE,
                "-frames:v", "6", "-fps_mode", "passthrough", "-f", "rawvideo", str(out)], env))
        outputs.append(out.read_bytes())
        # ffmpeg may dequeue a frame or two more than it writes
        assert [e["seq"] for e in handed_out(read_log(log))][:6] == list(range(6))
    assert outputs[0] == outputs[1]
    assert outputs[0] == b"".join(frame_bytes(s, SMALL) for s in range(6))


OPENCV_CHILD = r"""
import json, sys
import cv2
capture = cv2.VideoCapture(sys.argv[1], cv2.CAP_V4L2)
assert capture.isOpened()
seqs = []
with open(sys.argv[3], "wb") as out:
    for _ in range(int(sys.argv[2])):
        good, frame = capture.read()
        assert good
        # BGR of an RGB24 frame whose first bytes are the sequence number
        seqs.append(int(frame[0, 0, 2]) | int(frame[0, 0, 1]) << 8 | int(frame[0, 0, 0]) << 16)
        out.write(frame.tobytes())
capture.release()
print(json.dumps(seqs))
"""


def test_opencv_reads_frames(tmp_path):
    try:
        subprocess.run([PYTHON, "-c", "import cv2"], check=True, capture_output=True, timeout=60)
    except subprocess.CalledProcessError:
        pytest.skip("python3-opencv is not installed (make deps installs it)")
    env, log = camera_env(tmp_path, fps=60, fmt=SMALL)
    out = tmp_path / "frames.bgr"
    result = ok(run([PYTHON, "-c", OPENCV_CHILD, DEVICE, "5", str(out)], env))
    seqs = json.loads(result.stdout)
    events = handed_out(read_log(log))
    logged = [e["seq"] for e in events]
    assert seqs == sorted(set(seqs)) and set(seqs) <= set(logged)
    # OpenCV asks for RGB24 (it is in the camera's list) and converts it to BGR
    assert {e["bytes"] for e in events} == {160 * 120 * 3}
    expected = b""
    for s in seqs:
        bgr = bytearray(frame_bytes(s, "RGB3:160x120"))
        bgr[0::3], bgr[2::3] = bgr[2::3], bgr[0::3]
        expected += bytes(bgr)
    assert out.read_bytes() == expected


# read() I/O, poll readiness, stat and fstat, dup, from Python's os module (libc underneath).
READ_CHILD = r"""
import errno, fcntl, os, select, stat, sys
path, size, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
for st in (os.stat(path), os.lstat(path)):
    assert stat.S_ISCHR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o660, oct(st.st_mode)
    assert (os.major(st.st_rdev), os.minor(st.st_rdev)) == (81, 0)
assert os.access(path, os.R_OK | os.W_OK)
fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
st = os.fstat(fd)
assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(81, 0)
cap = bytearray(104)
fcntl.ioctl(fd, 0x80685600, cap)  # VIDIOC_QUERYCAP
assert cap[:8] == b"emuv4l2\0", cap[:16]
try:
    os.read(fd, size)  # starts capture; no frame can be ready yet
    raise SystemExit("read did not say EAGAIN")
except BlockingIOError:
    pass
poller = select.poll()
poller.register(fd, select.POLLIN)
with open(out, "wb") as frames:
    for i in range(3):
        assert poller.poll(5000), "no frame"
        if i == 1:  # one frame in two reads
            frames.write(os.read(fd, 100) + os.read(fd, size))
        else:
            frames.write(os.read(fd, size))
    copy = os.dup(fd)
    os.close(fd)
    assert stat.S_ISCHR(os.fstat(copy).st_mode)
    os.set_blocking(copy, True)
    frames.write(os.read(copy, size))  # blocks until the frame is ready
os.close(copy)
assert not stat.S_ISCHR(os.stat(out).st_mode)  # other files are left alone
print("ok")
"""


def test_read_poll_and_stat(tmp_path):
    env, log = camera_env(tmp_path, fps=60, fmt=SMALL)
    out = tmp_path / "frames.raw"
    size = 160 * 120 * 2
    result = ok(run([PYTHON, "-c", READ_CHILD, DEVICE, str(size), str(out)], env))
    assert result.stdout == b"ok\n"
    events = handed_out(read_log(log))
    assert [e["event"] for e in events] == ["read"] * 4
    assert out.read_bytes() == b"".join(frame_bytes(e["seq"], SMALL) for e in events)


def test_v4l2_compliance_streaming(tmp_path):
    need("v4l2-compliance", "v4l-utils")
    # 120 frames per second: the streaming tests capture 60 frames several times over. The
    # camera waits for a buffer rather than drop a frame that comes while none is queued:
    # compliance fails a stream with a gap of two, which a client more than two periods
    # behind makes (where CPU-bound processes run beside it), however right the camera is.
    env, log = camera_env(tmp_path, fps=120, fmt=SMALL, nobuf="wait")
    result = run(["v4l2-compliance", "-d", DEVICE, "-s"], env, timeout=120)
    text = result.stdout.decode(errors="replace")
    assert result.returncode == 0, text[-4000:]
    assert re.search(r"Total for emuv4l2 device /dev/video0: (\d+), Succeeded: \1, Failed: 0, Warnings: 1", text), \
        text[-4000:]
    # The one warning: the camera has no VIDIOC_CREATE_BUFS (optional; REQBUFS is what
    # clients use), so compliance skips the CREATE_BUFS checks.
    assert re.findall(r"warn: \S+ (.*)", text) == ["VIDIOC_CREATE_BUFS not supported"]
    assert [e for e in read_log(log) if e["event"] == "drop"] == []
    for test in ("read/write", "blocking wait", "MMAP \\(select\\)", "MMAP \\(epoll\\)", "USERPTR \\(select\\)"):
        assert re.search(r"test %s: OK\n" % test, text), test


def test_other_paths_are_untouched(tmp_path):
    """A second path is not the camera; the camera's own path only with the library."""
    env, log = camera_env(tmp_path, device="/dev/video7", minor=7, fmt=SMALL)
    check = ("import os, stat, sys\n"
             "st = os.stat('/dev/video7')\n"
             "assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(81, 7)\n"
             "assert os.stat('/dev/null').st_rdev == os.makedev(1, 3)\n")
    ok(run([PYTHON, "-c", check], env))
    assert read_log(log) == []


# A program that waits for a frame before its first read(), as a select()-driven read loop does.
SELECT_FIRST_CHILD = r"""
import os, select, sys
path, size = sys.argv[1], int(sys.argv[2])
fd = os.open(path, os.O_RDWR)
ready, _, _ = select.select([fd], [], [], 3)
print("ready" if ready else "timed out")
if ready:
    print(len(os.read(fd, size)))
"""


def test_a_select_before_the_first_read_wakes_with_the_first_frame(tmp_path):
    """A driver starts read() I/O when the program waits to read (vb2_poll), not only at its first
    read(): the camera double waited out the select's timeout, hiding what a real camera does."""
    env, log = camera_env(tmp_path, fps=60, fmt=SMALL)
    result = ok(run([PYTHON, "-c", SELECT_FIRST_CHILD, DEVICE, str(160 * 120 * 2)], env))
    assert result.stdout.decode().split() == ["ready", str(160 * 120 * 2)]
    assert [e["event"] for e in handed_out(read_log(log))] == ["read"]


# Streaming with MMAP buffers, then a forked child dequeues (a worker process given the camera).
FORK_CHILD = r"""
import fcntl, os, signal, struct, sys
REQBUFS, QBUF, DQBUF, STREAMON = 0xc0145608, 0xc058560f, 0xc0585611, 0x40045612
CAPTURE, MMAP = 1, 1
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.ioctl(fd, REQBUFS, bytearray(struct.pack("IIII4x", 2, CAPTURE, MMAP, 0)), True)
def buffer(index=0):
    b = bytearray(88)
    struct.pack_into("II", b, 0, index, CAPTURE)
    struct.pack_into("I", b, 60, MMAP)
    return b
for index in range(2):
    fcntl.ioctl(fd, QBUF, buffer(index), True)
fcntl.ioctl(fd, STREAMON, bytearray(struct.pack("I", CAPTURE)), True)
child = os.fork()
if child == 0:
    signal.alarm(10)  # a hang is a failure, not a stuck test
    b = buffer()
    fcntl.ioctl(fd, DQBUF, b, True)
    print("child dequeued sequence", struct.unpack_from("I", b, 56)[0], flush=True)
    os._exit(0)
_, status = os.waitpid(child, 0)
print("child", "ok" if os.waitstatus_to_exitcode(status) == 0 else "failed")
"""


@pytest.mark.parametrize("shim", [False, True], ids=["plain", "shim"])
def test_a_forked_child_dequeues_from_the_stream(tmp_path, shim):
    """The stream is the device's: a child forked while it runs gets frames from a blocking
    VIDIOC_DQBUF, with the library or without it. The double's capture thread did not cross the
    fork, and the child waited for good."""
    env, log = camera_env(tmp_path, fps=60, fmt=SMALL)
    if shim:
        from conftest import SHIM
        env = dict(env, LD_PRELOAD=SHIM + ":" + env["LD_PRELOAD"],
                   NVTXSHIM_TRACE=str(tmp_path / "trace-%p.json"))
    result = ok(run([PYTHON, "-c", FORK_CHILD, DEVICE], env, timeout=60))
    assert result.stdout.decode().splitlines() == ["child dequeued sequence 0", "child ok"]
