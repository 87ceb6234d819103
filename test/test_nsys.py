"""The libusb hooks under the real Nsight Systems, read from its SQLite export."""
import collections

import pytest

from conftest import CLOSE_CAMERA, OPEN_CAMERA, program
from nsys import thread_names, under_nsys

PUSH_POP, START_END, MARK = 59, 60, 34


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
        assert handlers >= 2 * frames
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
    payloads = {e[2]: e[7] for e in ranges if e[1] == "usb" and "ep=0x81" in e[2]}
    assert set(payloads.values()) == {9216}
    frames_seen = sorted(e[2] for e in ranges if e[1] == "nvtxshim")
    assert frames_seen == sorted("frame %d" % n for n in range(1, frames + 1))
    marks = [e[2] for e in events if e[0] == MARK and e[1] == "usb"]
    assert len(marks) == 1 and marks[0].startswith("short transfer") and "4608/9216B" in marks[0]
