"""The example harness (examples/harness/, build/harness_physical) end to end on the emulated
device: the same summary with and without the shim, and with the shim every
frame holds its USB, CUDA-copy and X11 ranges."""
import collections
import os

import pytest

from conftest import PYTHON, ROOT, STUB, load_trace, program, ranges, run
from traceformat import end_us

FRAMES = 12
FRAME_ON_ACT = {"NVTXSHIM_FRAME": "call:libusb_control_transfer"}


def summary(result):
    """The run's summary without the timing line (fps=...)."""
    lines = result.stdout.decode().splitlines()
    assert lines and lines[-1].startswith("fps="), result.stdout
    return lines[:-1]


def harness(device, options, tmp_path, display=None, gpu=True, shim=True, env=None, label="h"):
    full = dict(env or {})
    if gpu:
        full["LD_LIBRARY_PATH"] = STUB  # the stand-in driver: no GPU on this machine
    if display:
        full["DISPLAY"] = display
    trace = tmp_path / ("%s.json" % label)
    if shim:
        full.update(FRAME_ON_ACT, NVTXSHIM_TRACE=str(trace))
    result = run([program("harness_physical"), "--frames", str(device.frames)] + options,
                 env=full, shim=shim, device=device)
    return result, (load_trace(trace) if shim else None)


def inside(frame, event):
    return frame["ts"] <= event["ts"] < end_us(frame)


MODES = {
    "sync": [],
    "async": ["--async"],
    "async-threads": ["--async", "--threads", "--queue", "6"],
}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_every_frame_holds_its_usb_cuda_and_x11_ranges(make_device, xserver, tmp_path, mode):
    device = make_device(frames=FRAMES)
    options = MODES[mode] + ["--use_gui=1"]
    plain, _ = harness(device, options, tmp_path, xserver.display, shim=False)
    shimmed, events = harness(device, options, tmp_path, xserver.display, label=mode)
    assert plain.returncode == 0, plain.stderr
    assert (summary(shimmed), shimmed.stderr, shimmed.returncode) == (
        summary(plain), plain.stderr, plain.returncode)
    assert "inference=gpu; gui=xshm" in summary(plain)[0]

    frames = [e for e in ranges(events, "nvtxshim") if e["name"].startswith("frame ")]
    assert [f["name"] for f in frames] == ["frame %d" % k for k in range(1, FRAMES + 1)]
    calls = [e for e in ranges(events) if e["cat"] in ("usb", "cuda", "x11")]
    observe = "libusb_submit_transfer ep=0x81" if "--async" in options else "libusb_bulk_transfer ep=0x81"
    wanted = {"act": "libusb_control_transfer type=0x40 req=0x01", "command": "libusb_bulk_transfer ep=0x02",
              "observe": observe, "status": "libusb_interrupt_transfer ep=0x83",
              "upload": "cuMemcpyHtoD 9KiB pageable", "download": "cuMemcpyDtoHAsync 4B pinned",
              "render": "XShmPutImage 320x240"}
    per_frame = []
    for frame in frames:
        held = {role: sum(1 for e in calls if inside(frame, e) and e["name"].startswith(prefix))
                for role, prefix in wanted.items()}
        per_frame.append(held)
    if "--threads" in options:
        # USB runs on the capture thread, inference and drawing on the main thread:
        # frame k is drawn while the capture thread acts for frame k+1, so the drawing
        # lands in frame k or k+1, whichever thread runs first.
        assert sum(held.pop("render") for held in per_frame) == FRAMES
        del wanted["render"]
        usb_threads = {e["tid"] for e in calls if e["cat"] == "usb" and "ep=0x83" in e["name"]}
        main_threads = {e["tid"] for e in calls if e["cat"] in ("cuda", "x11")}
        assert len(usb_threads) == 1 and len(main_threads) == 1 and usb_threads != main_threads
    assert per_frame == [dict.fromkeys(wanted, 1)] * FRAMES


def test_stalled_and_short_frames_count_as_errors_alike(make_device, tmp_path):
    device = make_device(frames=8, extra=("--stall-frame", "2", "--short-frame", "5"))
    for options in ([], ["--async", "--threads"]):
        plain, _ = harness(device, options, tmp_path, shim=False)
        shimmed, events = harness(device, options, tmp_path, label="stall")
        assert plain.returncode == 3
        assert "errors=2" in summary(plain)[1]
        assert (summary(shimmed), shimmed.returncode) == (summary(plain), plain.returncode)
        # The harness counts a short frame as an error; for libusb it completed: the stall is
        # the one red mark, and the short frame's range (its callback's, for the stream) holds
        # the bytes it moved, half the frame.
        marks = [e["name"] for e in events if e["ph"] == "i"]
        assert marks == ["LIBUSB_ERROR_PIPE libusb_bulk_transfer ep=0x81 IN 0/9216B" if not options
                         else "LIBUSB_TRANSFER_STALL libusb_submit_transfer ep=0x81 BULK IN 9216B"]
        frames = [e["args"]["payload"] for e in ranges(events, "usb") if e["name"] in (
            "libusb_bulk_transfer ep=0x81 IN 9216B", "libusb_transfer_cb_fn ep=0x81 BULK IN 9216B")]
        assert frames[:6] == [9216, 9216, 0, 9216, 9216, 4608]


def test_the_cpu_path_says_so_once_and_picks_the_same_actions(make_device, tmp_path):
    device = make_device(frames=FRAMES)
    gpu, _ = harness(device, [], tmp_path, shim=False)
    # No stand-in on the library path: the real libcuda (which finds no GPU here), or none.
    cpu, events = harness(device, [], tmp_path, gpu=False, label="cpu")
    lines = cpu.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("harness_physical: no GPU (")
    assert lines[0].endswith("); inference runs on the CPU")
    assert "inference=cpu" in summary(cpu)[0]
    assert summary(cpu)[1] == summary(gpu)[1] and cpu.returncode == 0
    names = collections.Counter(e["name"].split(" ")[0] for e in ranges(events))
    assert names["libusb_control_transfer"] == FRAMES and not any(
        e["cat"] == "cuda" for e in ranges(events))
    forced, _ = harness(device, ["--inference=cpu"], tmp_path, shim=False)
    assert forced.stderr == b"" and summary(forced)[1] == summary(gpu)[1]


def test_usb_categories_are_named_apart_from_warnings(make_device, tmp_path):
    # The stream's event thread calls libusb_handle_events_completed from when the stream
    # starts; with CPU-bound processes beside the harness that thread may first run only once the
    # 4 frames are over (the main thread's synchronous calls handle every completion meanwhile),
    # and make no call. Runs again until it has made one, 20 runs at most.
    for attempt in range(20):
        device = make_device(frames=4, extra=("--stall-frame", "1"))
        _, events = harness(device, ["--async"], tmp_path, label="categories%d" % attempt)
        categories = collections.defaultdict(set)
        for e in events:
            if e["ph"] in ("X", "i") and e.get("cat") == "usb":
                categories[e["name"].split(" ")[0]].add(e["args"].get("category"))
        assert categories["libusb_transfer_cb_fn"] == {"callback"}
        assert categories["libusb_control_transfer"] == {"transfer"}
        for call in ("libusb_open", "libusb_claim_interface", "libusb_release_interface"):
            assert categories[call] == {"device"}, call
        assert categories["LIBUSB_ERROR_PIPE"] == {"warning"} or \
            categories["LIBUSB_TRANSFER_STALL"] == {"warning"}
        if categories["libusb_handle_events_completed"]:
            break
    assert categories["libusb_handle_events_completed"] == {"events"}


def test_the_python_twin_sees_the_same_frames_and_picks_the_same_actions(make_device, tmp_path):
    device = make_device(frames=FRAMES, extra=("--stall-frame", "4"))
    c, _ = harness(device, [], tmp_path, shim=False)
    twin = run([PYTHON, os.path.join(ROOT, "examples", "harness_physical.py"), "--frames", str(FRAMES)],
               shim=False, device=device)
    assert (summary(twin)[1], twin.returncode) == (summary(c)[1], c.returncode) and c.returncode == 3


# ---- the camera rig: a serial actuator (examples/emuservo.py), a V4L2 camera ------------------

EMUSERVO = os.path.join(ROOT, "examples", "emuservo.py")


@pytest.fixture
def servo(tmp_path):
    """examples/emuservo.py on a pty: (its path, its log file, the process)."""
    import subprocess
    log = tmp_path / "servo.log"
    # Without --path-file the servo says the pty's path on stdout, one line, once it is ready:
    # the read waits for it (or for the servo's end, an empty line).
    process = subprocess.Popen([PYTHON, EMUSERVO, "--log", str(log), "--timeout", "60"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    path = process.stdout.readline().decode().strip()
    assert path.startswith("/dev/"), (path, process.communicate())
    yield path, log, process
    if process.poll() is None:
        process.kill()
    process.communicate()


def rig_log(result, frames):
    """The --log lines of a run, as dicts, and the summary around them."""
    lines = result.stdout.decode().splitlines()
    logged = [line for line in lines if line.startswith("frame ")]
    assert len(logged) == frames, lines
    parsed = []
    for line in logged:
        head, _, reply = line.partition(' reply="')
        reply, _, tail = reply.partition('"')
        fields = dict(word.split("=", 1) for word in (head + tail).split()[2:])
        parsed.append(dict(fields, frame=int(head.split()[1]), reply=reply))
    return parsed, [line for line in lines if not line.startswith("frame ")]


def check_servo_run(result, servo, frames, usb_summary):
    """The rig's run acted through the servo once a frame with the action it chose, and saw the
    same frames (the same actions) as the USB run."""
    path, log, process = servo
    assert result.returncode == 0, result.stderr
    logged, rest = rig_log(result, frames)
    assert "; actuator=serial:%s;" % path in rest[0]
    assert rest[1] == usb_summary
    actions = rest[1].split("actions=")[1]
    for i, frame in enumerate(logged):
        assert frame["frame"] == i and int(frame["sent"]) == int(frame["action"]) == int(actions[i], 16)
        assert frame["reply"] == "ok %d %s" % (i, frame["sent"])
    times = [int(frame["act_ns"]) for frame in logged]
    assert times == sorted(times) and len(set(times)) == frames
    out, _ = process.communicate(timeout=30)  # the harness closed the port: the servo ends
    assert out.decode() == "emuservo.py: answered %d commands\n" % frames
    commands = [line.split(" ", 1)[1] for line in log.read_text().splitlines()]
    assert commands == ["move %d %s" % (i, frame["sent"]) for i, frame in enumerate(logged)]


@pytest.mark.parametrize("threads", [False, True])
def test_the_serial_actuator_sends_each_frames_action_to_the_servo(make_device, tmp_path, servo, threads):
    device = make_device(frames=8)
    options = ["--threads"] if threads else []
    usb, _ = harness(device, options, tmp_path, shim=False)
    rig = run([program("harness_physical"), "--frames", "8", "--actuator", "serial:" + servo[0], "--log"]
              + options, env={"LD_LIBRARY_PATH": STUB}, shim=False, device=device)
    check_servo_run(rig, servo, 8, summary(usb)[1])


def test_the_rig_options_are_checked(tmp_path):
    for options, status, said in (
            (["--camera", "usb0"], 2, "usage: harness_physical"),
            (["--actuator", "serial:"], 2, "usage: harness_physical"),
            (["--camera", "v4l2:/dev/video9", "--async"], 2,
             "harness_physical: --async streams the USB camera's frames; not with --camera v4l2"),
            (["--camera", "v4l2:%s" % (tmp_path / "none")], 1,
             "harness_physical: cannot open %s: No such file or directory" % (tmp_path / "none")),
            # not a V4L2 device: the first ioctl says so
            (["--camera", "v4l2:/dev/null", "--actuator", "serial:/dev/null"], 1,
             "harness_physical: /dev/null: VIDIOC_S_FMT failed: Inappropriate ioctl for device"),
            (["--actuator", "serial:%s" % (tmp_path / "none")], 1,
             "harness_physical: cannot open %s: No such file or directory" % (tmp_path / "none"))):
        result = run([program("harness_physical")] + options, shim=False)
        assert result.returncode == status and result.stderr.decode().startswith(said), options
