"""examples/harness_physical.py, the Python harness: pyusb (libusb-1.0 loaded with ctypes, so
its functions are found with dlsym) and Xlib through ctypes, on the emulated camera and a
private Xvfb. The shim must not change what the program prints, and its trace must show the
calls the program made."""
import collections
import os

import pytest

from conftest import (CLOSE_CAMERA, PYTHON, ROOT, TWIN_OPEN_CAMERA, device_calls, load_trace, names,
                      ranges, run, transfer_ranges)
from xserver import Xvfb
from traceformat import end_us

HARNESS = os.path.join(ROOT, "examples", "harness_physical.py")
FRAMES = 12
# The actions the emulated camera asks for, frame by frame (its bright block walks the grid).
DEVICE_ACTIONS = "3a18f6d4b2907e5c"


@pytest.fixture(scope="module")
def xserver():
    server = Xvfb("-nolisten", "tcp")
    yield server
    server.stop()


def harness(device, *args, env=None, shim=False, trace=None, frames=FRAMES):
    env = dict(env or {})
    if trace:
        env["NVTXSHIM_TRACE"] = str(trace)
    result = run([PYTHON, HARNESS, "--frames", str(frames)] + list(args), env=env, shim=shim,
                 device=device)
    lines = result.stdout.decode().splitlines()
    assert len(lines) == 3, result
    assert lines[2].startswith("fps="), lines
    return result, lines


def expected_summary(frames, errors, checksum_line, bad=()):
    """Line 2 for FRAMES frames, with the frames in BAD (stalled or short) keeping the action."""
    actions, action = [], "0"
    for i in range(frames):
        if i not in bad:
            action = DEVICE_ACTIONS[i % len(DEVICE_ACTIONS)]
        actions.append(action)
    checksum = checksum_line.split("checksum=")[1].split()[0]
    return "frames=%d errors=%d checksum=%s actions=%s" % (frames, errors, checksum, "".join(actions))


def usb_names(frames, in_bytes=64 * 48 * 3, device=()):
    """The usb ranges of FRAMES frames: the camera opened, the interface claimed (and released at
    the end), the frames' transfers, and the device calls in DEVICE (clear_halt after a stall)."""
    return collections.Counter(
        ["libusb_control_transfer type=0x40 req=0x01 val=0x%04x OUT 0B" % i for i in range(frames)] +
        ["libusb_bulk_transfer ep=0x02 OUT 8B"] * frames +
        ["libusb_bulk_transfer ep=0x81 IN %dB" % in_bytes] * frames +
        ["libusb_interrupt_transfer ep=0x83 IN 8B"] * frames +
        TWIN_OPEN_CAMERA + CLOSE_CAMERA + list(device))


def by_time(events):
    return sorted(events, key=lambda e: e["ts"])


def test_pyusb_loop_same_output_with_shim_and_usb_ranges_per_call(make_device, tmp_path):
    device = make_device(frames=FRAMES)
    trace = tmp_path / "numpy.json"
    plain, plain_lines = harness(device)
    shimmed, lines = harness(device, shim=True, trace=trace,
                             env={"NVTXSHIM_FRAME": "usb.out:0x02"})
    assert plain.returncode == shimmed.returncode == 0
    # emucam says nothing when every command matched what the camera asked for.
    assert plain.stderr == shimmed.stderr == b""
    assert plain_lines[0] == lines[0] == (
        "harness_physical.py: %d frames of 64x48 from 1209:0001; usb=sync; "
        "capture on the main thread; inference=numpy; gui=off" % FRAMES)
    assert lines[1] == plain_lines[1] == expected_summary(FRAMES, 0, plain_lines[1])

    events = load_trace(trace)
    # pyusb reaches libusb through ctypes: each of its calls is one range, nothing else shows.
    assert collections.Counter(names(events, "usb")) == usb_names(FRAMES)
    assert device_calls(events) == TWIN_OPEN_CAMERA + CLOSE_CAMERA
    usb = ranges(events, "usb")
    payloads = collections.defaultdict(set)
    for e in transfer_ranges(events):
        payloads[e["name"].split(" type=")[0]].add(e["args"]["payload"])
    assert payloads == {"libusb_control_transfer": {0},
                        "libusb_bulk_transfer ep=0x02 OUT 8B": {8},
                        "libusb_bulk_transfer ep=0x81 IN 9216B": {9216},
                        "libusb_interrupt_transfer ep=0x83 IN 8B": {8}}
    assert {e["tid"] for e in usb} == {usb[0]["pid"]}
    # The order on the wire: the device opened, act(i), observe(i), status(i), act(i+1)..., the
    # interface released.
    order = [e["name"].split(" type=")[0].split(" IN")[0].split(" OUT")[0] for e in by_time(usb)]
    assert order == TWIN_OPEN_CAMERA + [
        "libusb_control_transfer", "libusb_bulk_transfer ep=0x02", "libusb_bulk_transfer ep=0x81",
        "libusb_interrupt_transfer ep=0x83"] * FRAMES + CLOSE_CAMERA

    # NVTXSHIM_FRAME=usb.out:0x02: frame k starts with the kth command and holds its frame's reads.
    frames = by_time(ranges(events, "nvtxshim"))
    assert [f["name"] for f in frames] == ["frame %d" % k for k in range(1, FRAMES + 1)]
    commands = by_time(e for e in usb if "ep=0x02" in e["name"])
    reads = by_time(e for e in usb if "ep=0x81" in e["name"] or "ep=0x83" in e["name"])
    for k, (frame, command) in enumerate(zip(frames, commands)):
        assert frame["ts"] <= command["ts"]
        for read in reads[2 * k:2 * k + 2]:
            assert frame["ts"] <= read["ts"] and end_us(read) <= end_us(frame)


def test_capture_thread_same_output_and_usb_on_its_own_thread(make_device, tmp_path):
    device = make_device(frames=FRAMES)
    trace = tmp_path / "threads.json"
    _, single = harness(device)
    plain, plain_lines = harness(device, "--threads")
    shimmed, lines = harness(device, "--threads", shim=True, trace=trace)
    assert plain.returncode == shimmed.returncode == 0
    assert plain.stderr == shimmed.stderr == b""
    assert "capture on its own thread" in lines[0] and lines[0] == plain_lines[0]
    assert lines[1] == plain_lines[1] == single[1]

    events = load_trace(trace)
    assert collections.Counter(names(events, "usb")) == usb_names(FRAMES)
    usb = transfer_ranges(events)
    pid = usb[0]["pid"]
    tids = {e["tid"] for e in usb}
    assert len(tids) == 1 and tids != {pid}, "the capture thread's transfers are on one other thread"
    # The main thread opens the camera before the capture thread starts, and closes it.
    assert device_calls(events) == TWIN_OPEN_CAMERA + CLOSE_CAMERA
    assert {e["tid"] for e in ranges(events, "usb") if e not in usb} == {pid}
    named = {e["tid"] for e in events if e.get("ph") == "M" and e["name"] == "thread_name"}
    assert tids <= named


def test_gui_on_xvfb_one_put_image_per_frame(make_device, xserver, tmp_path):
    device = make_device(frames=FRAMES)
    trace = tmp_path / "gui.json"
    _, no_gui = harness(device)
    plain, plain_lines = harness(device, "--use_gui=1", env={"DISPLAY": xserver.display})
    shimmed, lines = harness(device, "--use_gui", "1", env={"DISPLAY": xserver.display},
                             shim=True, trace=trace)
    assert plain.returncode == shimmed.returncode == 0
    assert plain.stderr == shimmed.stderr == b""
    assert lines[0].endswith("; gui=xlib") and lines[0] == plain_lines[0]
    assert lines[1] == plain_lines[1] == no_gui[1]

    events = load_trace(trace)
    x11 = ranges(events, "x11")
    counts = collections.Counter(e["name"] for e in x11)
    put = "XPutImage %dx%d" % (64 * 4, 48 * 4)
    assert counts[put] == FRAMES
    assert counts["XFlush"] == FRAMES
    assert not [name for name in counts if name.startswith("XPutImage") and name != put]
    puts = [e for e in x11 if e["name"] == put]
    assert {e["args"]["payload"] for e in puts} == {64 * 4 * 48 * 4 * 4}
    assert {e["args"]["category"] for e in puts} == {"draw"}
    # The USB calls are still all there, one range each.
    assert collections.Counter(names(events, "usb")) == usb_names(FRAMES)


def test_gui_without_a_display_runs_on_without_it(make_device):
    device = make_device(frames=FRAMES)
    _, no_gui = harness(device)
    result, lines = harness(device, "--use_gui=1", env={"DISPLAY": ""}, shim=True)
    assert result.returncode == 0
    assert result.stderr.decode().splitlines() == [
        "harness_physical.py: cannot open display (DISPLAY is not set); running without the GUI"]
    assert lines[0].endswith("; gui=off")
    assert lines[1] == no_gui[1]


def test_stalled_and_short_frames_counted_and_same_with_shim(make_device, tmp_path):
    device = make_device(frames=FRAMES, extra=["--stall-frame", "2", "--short-frame", "4"])
    trace = tmp_path / "stall.json"
    plain, plain_lines = harness(device)
    shimmed, lines = harness(device, shim=True, trace=trace)
    assert plain.returncode == shimmed.returncode == 3
    # No command broke the protocol: the stalled and short frames kept the action in force.
    assert plain.stderr == shimmed.stderr == b""
    assert lines[1] == plain_lines[1] == expected_summary(FRAMES, 2, plain_lines[1], bad=(2, 4))

    events = load_trace(trace)
    # The stalled frame's endpoint is cleared (pyusb's clear_halt).
    assert collections.Counter(names(events, "usb")) == usb_names(
        FRAMES, device=["libusb_clear_halt ep=0x81"])
    # The stall is the one mark; the short frame completed, its range has the bytes it moved.
    marks = [e["name"] for e in events if e.get("ph") == "i" and e.get("cat") == "usb"]
    assert marks == ["LIBUSB_ERROR_PIPE libusb_bulk_transfer ep=0x81 IN 0/9216B"]
    reads = [e["args"]["payload"] for e in ranges(events, "usb")
             if e["name"] == "libusb_bulk_transfer ep=0x81 IN 9216B"]
    assert reads == [9216] * 2 + [0, 9216, 4608] + [9216] * (FRAMES - 5)


@pytest.mark.parametrize("argv, message", [
    (["--async"], "harness_physical.py: --async needs the C harness "
                  "(pyusb has no asynchronous transfers)"),
    (["--width", "8"], "harness_physical.py: error: --width and --height must be at least 16"),
])
def test_usage_errors_exit_2(argv, message):
    result = run([PYTHON, HARNESS] + argv, shim=False)
    assert result.returncode == 2
    assert result.stdout == b""
    assert result.stderr.decode().splitlines()[-1] == message


def test_no_device_exits_1(make_device):
    result = run([PYTHON, HARNESS, "--device", "1209:0002"], device=make_device())
    assert result.returncode == 1
    assert result.stdout == b""
    assert result.stderr.decode().splitlines() == ["harness_physical.py: no device 1209:0002"]


def test_the_serial_actuator_talks_to_the_servo_with_pyserial(make_device, tmp_path):
    # The twin acts through examples/emuservo.py on a pty after inference: once a frame, with
    # the action it chose from that frame, and reads the reply.
    import subprocess
    from test_harness import check_servo_run
    device = make_device(frames=FRAMES)
    usb, usb_lines = harness(device)
    log = tmp_path / "servo.log"
    # The servo says the pty's path on stdout, one line, once it is ready: the read waits.
    servo = subprocess.Popen([PYTHON, os.path.join(ROOT, "examples", "emuservo.py"), "--log", str(log)],
                             stdout=subprocess.PIPE)
    try:
        path = servo.stdout.readline().decode().strip()
        assert path.startswith("/dev/"), path
        rig = run([PYTHON, HARNESS, "--frames", str(FRAMES), "--actuator", "serial:" + path, "--log"],
                  shim=False, device=device)
        check_servo_run(rig, (path, log, servo), FRAMES, usb_lines[1])
    finally:
        if servo.poll() is None:
            servo.kill()
        servo.communicate()


def test_the_rig_options_are_checked():
    for options, said in ((["--camera", "usb0"], "--camera must be usb or v4l2:PATH"),
                          (["--actuator", "tty"], "--actuator must be usb or serial:PATH")):
        result = run([PYTHON, HARNESS] + options, shim=False)
        assert result.returncode == 2 and said in result.stderr.decode()
