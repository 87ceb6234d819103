"""The libusb hooks under the real Nsight Systems, read from its SQLite export."""
import collections
import sqlite3

import pytest

from conftest import CLOSE_CAMERA, OPEN_CAMERA, program
from nsys import thread_names, under_nsys

PUSH_POP, START_END, MARK = 59, 60, 34
TRANSFER_CATEGORY, TRANSFER_COLOR = 1, 0xFF2E7D32  # schema.h: NVS_USB_TRANSFER, NVS_COLOR_USB


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_usb_ranges_in_the_nsys_export_are_named_and_closed(make_device, tmp_path, mode):
    frames = 6
    device = make_device(frames=frames, extra=("--short-frame", "2"))
    argv = [program("usb_capture"), "--frames", str(frames)] + (["--async"] if mode == "async" else [])
    result, events, database = under_nsys(tmp_path, device, argv, {"NVTXSHIM_FRAME": "usb.in:0x81"})
    assert b"frames=6 bytes=46080 errors=1" in result.stdout

    ranges = [e for e in events if e[0] in (PUSH_POP, START_END)]
    assert all(e[4] is not None and e[4] >= e[3] for e in ranges), "an NVTX range was left open"
    usb = collections.Counter(e[2] for e in ranges if e[1] == "usb")
    controls = {"libusb_control_transfer type=0x40 req=0x01 val=0x%04x OUT 0B" % i: 1
                for i in range(frames)}
    # The device opened and its interface claimed, then released: once each.
    controls.update(dict.fromkeys(OPEN_CAMERA + CLOSE_CAMERA, 1))
    if mode == "sync":
        assert usb == dict(controls, **{
            "libusb_bulk_transfer ep=0x02 OUT 8B": frames,
            "libusb_bulk_transfer ep=0x81 IN 9216B": frames,
            "libusb_interrupt_transfer ep=0x83 IN 8B": frames})
    else:
        handlers = usb.pop("libusb_handle_events_completed")
        # Every completion's callback ran inside an events call of the event thread. How many
        # calls that took is the scheduler's: the emulated device completes a transfer as it is
        # submitted, and one round of events can reap both of a frame's.
        events_calls = [e for e in ranges if e[2] == "libusb_handle_events_completed"]
        callbacks = [e for e in ranges if e[2].startswith("libusb_transfer_cb_fn")]
        assert handlers >= 1 and callbacks
        assert all(any(h[5] == c[5] and h[3] <= c[3] and c[4] <= h[4] for h in events_calls)
                   for c in callbacks)
        assert usb == dict(controls, **{
            "libusb_bulk_transfer ep=0x02 OUT 8B": frames,
            "libusb_submit_transfer ep=0x81 BULK IN 9216B": frames,
            "libusb_submit_transfer ep=0x83 INTERRUPT IN 8B": frames,
            "libusb_transfer_cb_fn ep=0x81 BULK IN 9216B": frames,
            "libusb_transfer_cb_fn ep=0x83 INTERRUPT IN 8B": frames})
        submits = [e for e in ranges if e[2].startswith("libusb_submit_transfer")]
        # Submitted on the main thread, completed on the event thread: closed across threads.
        assert all(e[0] == START_END and e[6] is not None and e[6] != e[5] for e in submits)
        assert "libusb events" in thread_names(database)
    frames_seen = sorted(e[2] for e in ranges if e[1] == "nvtxshim")
    assert frames_seen == sorted("frame %d" % n for n in range(1, frames + 1))
    # nsys takes a range's payload with its push, before the transfer ran: a transfer's range
    # has the requested size, frame 2's short one too. No red mark: the short frame completed.
    reads = sorted((e for e in ranges if e[1] == "usb" and (
        e[2].startswith("libusb_bulk_transfer ep=0x81") or
        e[2].startswith("libusb_submit_transfer ep=0x81"))), key=lambda e: e[3])
    assert [e[7] for e in reads] == [9216] * frames
    marks = [e for e in events if e[0] == MARK and e[1] == "usb"]
    if mode == "sync":
        # What frame 2 moved is a mark inside its range, with the bytes as payload, in the
        # transfers' category and colour, named after the range.
        assert [(m[2], m[7]) for m in marks] == [
            ("short transfer libusb_bulk_transfer ep=0x81 IN 9216B", 4608)]
        assert reads[2][5] == marks[0][5] and reads[2][3] <= marks[0][3] <= reads[2][4]
        with sqlite3.connect(database) as db:
            assert db.execute("SELECT category, color FROM NVTX_EVENTS WHERE eventType = ?",
                              (MARK,)).fetchall() == [(TRANSFER_CATEGORY, TRANSFER_COLOR)]
    else:
        # The completion callback's range begins when the transfer has completed: it has what
        # moved, and no mark is needed.
        assert marks == []
        callbacks = sorted((e for e in ranges if e[2] == "libusb_transfer_cb_fn ep=0x81 BULK IN 9216B"),
                           key=lambda e: e[3])
        assert [e[7] for e in callbacks] == [9216, 9216, 4608] + [9216] * (frames - 3)
