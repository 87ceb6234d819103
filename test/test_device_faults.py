"""Device faults on the emulated camera (test/usbdev): a stalled frame, a short frame, a frame
the camera never sends (the program's 2 s timeout fires and libusb discards the URB) and a
disconnect in the middle of the stream (from then on every request fails with ENODEV, as usbfs
fails it) - all in one run, for synchronous transfers, one-at-a-time asynchronous ones, the
example harness's stream of queued transfers and the pyusb twin. The program must print exactly
what it prints without the shim, and the trace must hold one red mark for each failed transfer
and each failed device call (the interface released after the disconnect), no more. The short
frame completed: it is no mark, and the range that says what moved (the synchronous call's, or
the completion callback's) has the bytes it moved."""
import collections
import concurrent.futures
import os

import pytest

from conftest import PYTHON, ROOT, STUB, load_trace, program, ranges, run
from traceformat import end_us

RED = "#d50000"
FRAMES = 11
# Stall frame 1, frame 2 short, frame 3 never sent, the device gone from frame 9 on. The
# disconnect comes after the timed-out frame has ended even with four transfers queued.
STALL, SHORT, TIMEOUT, DISCONNECT = 1, 2, 3, 9
FAULTS = ("--stall-frame", str(STALL), "--short-frame", str(SHORT),
          "--timeout-frame", str(TIMEOUT), "--disconnect-frame", str(DISCONNECT))

PROGRAMS = {
    "usb_capture-sync": ["usb_capture", "--frames", str(FRAMES)],
    "usb_capture-async": ["usb_capture", "--frames", str(FRAMES), "--async"],
    "harness-sync": ["harness_physical", "--frames", str(FRAMES)],
    "harness-stream": ["harness_physical", "--frames", str(FRAMES), "--async"],
    "python-twin": [PYTHON, os.path.join(ROOT, "examples", "harness_physical.py"),
                    "--frames", str(FRAMES)],
}


def gone(call):
    """The mark of a call made after the disconnect."""
    return {
        "control": "LIBUSB_ERROR_NO_DEVICE libusb_control_transfer type=0x40 req=0x01 val=0x%04x",
        "command": "LIBUSB_ERROR_NO_DEVICE libusb_bulk_transfer ep=0x02 OUT 0/8B",
        "frame": "LIBUSB_ERROR_NO_DEVICE libusb_bulk_transfer ep=0x81 IN 0/9216B",
        "status": "LIBUSB_ERROR_NO_DEVICE libusb_interrupt_transfer ep=0x83 IN 0/8B",
        "submit frame": "LIBUSB_ERROR_NO_DEVICE libusb_submit_transfer ep=0x81 BULK IN 9216B",
        "submit status": "LIBUSB_ERROR_NO_DEVICE libusb_submit_transfer ep=0x83 INTERRUPT IN 8B",
    }[call]


def after_disconnect(first_frame, calls):
    """Marks for frames FIRST_FRAME..FRAMES-1, each making CALLS."""
    marks = []
    for i in range(first_frame, FRAMES):
        for call in calls:
            marks.append(gone(call) % i if call == "control" else gone(call))
    return marks


SYNC_MARKS = [
    "LIBUSB_ERROR_PIPE libusb_bulk_transfer ep=0x81 IN 0/9216B",
    "LIBUSB_ERROR_TIMEOUT libusb_bulk_transfer ep=0x81 IN 0/9216B",
    # Frame 9: acted before the device went; its frame and status fail.
    gone("frame"), gone("status"),
] + after_disconnect(DISCONNECT + 1, ["control", "command", "frame", "status"])

ASYNC_FAILURES = [
    "LIBUSB_TRANSFER_STALL libusb_submit_transfer ep=0x81 BULK IN 9216B",
    "LIBUSB_TRANSFER_TIMED_OUT libusb_submit_transfer ep=0x81 BULK IN 9216B",
    # The transfer that asked for frame 9 when the device went.
    "LIBUSB_TRANSFER_NO_DEVICE libusb_submit_transfer ep=0x81 BULK IN 9216B",
]

# The stream keeps 4 transfers queued: the one for frame 9 is submitted as frame 5 is taken,
# so the device goes during frame 5's observe. Every later submission fails (frames 10-14, as
# frames 6-10 are taken), and so do frame 5's status read and all calls of frames 6-10.
QUEUE = 4
STREAM_GOES = DISCONNECT - QUEUE

# Every program releases the interface at the end, and with the device gone that fails too.
RELEASE_GONE = ["LIBUSB_ERROR_NO_DEVICE libusb_release_interface"]
# The Python twin clears the halt of an endpoint whose transfer failed (the stall and the timeout
# before the disconnect: cleared), which fails once the device is gone: after frame 9's observe,
# and frame 10's command and observe.
TWIN_CLEAR_HALTS_GONE = ["LIBUSB_ERROR_NO_DEVICE libusb_clear_halt"] * 3

EXPECTED_MARKS = {
    "usb_capture-sync": SYNC_MARKS + RELEASE_GONE,
    "usb_capture-async": ASYNC_FAILURES + [gone("submit status")] + after_disconnect(
        DISCONNECT + 1, ["control", "command", "submit frame", "submit status"]) + RELEASE_GONE,
    "harness-sync": SYNC_MARKS + RELEASE_GONE,
    "harness-stream": ASYNC_FAILURES + [gone("status")] + [gone("submit frame")] * (
        FRAMES - STREAM_GOES - 1) + after_disconnect(STREAM_GOES + 1, ["control", "command", "status"]
                                                     ) + RELEASE_GONE,
    "python-twin": SYNC_MARKS + TWIN_CLEAR_HALTS_GONE + RELEASE_GONE,
}


def both(argv, env, device, trace):
    """The program without and with the shim, side by side (each run waits out a 2 s timeout)."""
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        plain = pool.submit(run, argv, env=env, shim=False, device=device)
        shimmed = pool.submit(run, argv, env=dict(env, NVTXSHIM_TRACE=str(trace),
                                                  NVTXSHIM_FRAME="call:libusb_control_transfer"),
                              device=device)
        return plain.result(), shimmed.result()


def timing_free(output):
    """The output without the harness's fps= line, the one line that depends on timing."""
    return [line for line in output.splitlines() if not line.startswith(b"fps=")]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_each_fault_is_a_red_mark_and_the_program_sees_what_it_sees_without_the_shim(
        make_device, tmp_path, name):
    argv = list(PROGRAMS[name])
    if not argv[0].startswith("/"):
        argv[0] = program(argv[0])
    device = make_device(frames=FRAMES, extra=FAULTS)
    env = {"LD_LIBRARY_PATH": STUB}  # the harness's GPU path on the stand-in driver
    trace = tmp_path / "faults.json"
    plain, shimmed = both(argv, env, device, trace)
    # The C programs count the errors and say so; the Python twin dies of pyusb's exception
    # when it releases the interface of the unplugged device (a traceback, exit code 1).
    assert plain.returncode == (1 if name == "python-twin" else 3), plain
    assert (timing_free(shimmed.stdout), shimmed.stderr, shimmed.returncode) == (
        timing_free(plain.stdout), plain.stderr, plain.returncode)
    if name.startswith("usb_capture"):
        assert (b" [frame %d: LIBUSB_ERROR_PIPE] " % STALL in plain.stdout and
                b" [frame %d: short 4608/9216] " % SHORT in plain.stdout and
                b" [frame %d: LIBUSB_ERROR_TIMEOUT] " % TIMEOUT in plain.stdout and
                b" [frame %d: LIBUSB_ERROR_NO_DEVICE] " % DISCONNECT in plain.stdout)

    events = load_trace(trace)
    marks = [e for e in events if e["ph"] == "i" and e["cat"] == "usb"]
    assert all(m["args"]["color"] == RED and m["args"]["category"] == "warning" for m in marks)
    assert collections.Counter(m["name"] for m in marks) == collections.Counter(EXPECTED_MARKS[name])
    # A synchronous call's mark lies inside that call's range, on its thread.
    calls = ranges(events, "usb")
    for mark in marks:
        call = mark["name"].split(" ")[1]
        if call == "libusb_submit_transfer":
            continue  # a completion is marked on the event thread
        assert any(c["tid"] == mark["tid"] and c["name"].startswith(call) and
                   c["ts"] <= mark["ts"] <= end_us(c) for c in calls), mark
    # The frames the camera was asked for, with the bytes each moved, in the order they ended
    # (a stream's timed-out frame ends after the frames queued behind it): the short frame half of
    # one, the six whole frames all of one, the stalled, timed-out and lost ones none.
    moved = [e["args"]["payload"] for e in calls if e["name"] in (
        "libusb_bulk_transfer ep=0x81 IN 9216B", "libusb_transfer_cb_fn ep=0x81 BULK IN 9216B")]
    assert moved[:SHORT + 1] == [9216, 0, 4608]
    assert collections.Counter(moved) == {9216: 6, 4608: 1, 0: len(moved) - 7}
    # Every frame was counted, the faulty ones included.
    frames = [e["name"] for e in ranges(events, "nvtxshim") if e["name"].startswith("frame ")]
    assert sorted(frames, key=lambda f: int(f.split()[1])) == ["frame %d" % n for n in range(1, FRAMES + 1)]
