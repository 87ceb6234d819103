"""The example harness (examples/harness_physical.c) end to end on the emulated
device: the same summary with and without the shim, and with the shim every
frame holds its USB, CUDA-copy and X11 ranges."""
import collections
import os

import pytest

from conftest import PYTHON, ROOT, STUB, load_trace, program, ranges, run

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
    return frame["ts"] <= event["ts"] < frame["ts"] + frame["dur"]


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
    device = make_device(frames=4, extra=("--stall-frame", "1"))
    _, events = harness(device, ["--async"], tmp_path, label="categories")
    categories = collections.defaultdict(set)
    for e in events:
        if e["ph"] in ("X", "i") and e.get("cat") == "usb":
            categories[e["name"].split(" ")[0]].add(e["args"].get("category"))
    assert categories["libusb_handle_events_completed"] == {"events"}
    assert categories["libusb_transfer_cb_fn"] == {"callback"}
    assert categories["libusb_control_transfer"] == {"transfer"}
    for call in ("libusb_open", "libusb_claim_interface", "libusb_release_interface"):
        assert categories[call] == {"device"}, call
    assert categories["LIBUSB_ERROR_PIPE"] == {"warning"} or categories["LIBUSB_TRANSFER_STALL"] == {"warning"}


def test_the_python_twin_sees_the_same_frames_and_picks_the_same_actions(make_device, tmp_path):
    device = make_device(frames=FRAMES, extra=("--stall-frame", "4"))
    c, _ = harness(device, [], tmp_path, shim=False)
    twin = run([PYTHON, os.path.join(ROOT, "examples", "harness_physical.py"), "--frames", str(FRAMES)],
               shim=False, device=device)
    assert (summary(twin)[1], twin.returncode) == (summary(c)[1], c.returncode) and c.returncode == 3
