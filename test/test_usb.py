"""libusb hooks on the emulated camera + actuator, read back through the trace recorder."""
import collections
import re
import shutil

import pytest

from conftest import (CLOSE_CAMERA, OPEN_CAMERA, PYTHON, ROOT, device_calls, load_trace, names,
                      program, ranges, run)
from traceformat import end_us

RED = "#d50000"


def capture(device, tmp_path, mode, env=None, frames=None, executable=None):
    frames = frames or device.frames
    argv = [executable or program("usb_capture"), "--frames", str(frames)] + (["--async"] if mode == "async" else [])
    trace = tmp_path / ("%s.json" % mode)
    plain = run(argv, shim=False, device=device)
    shimmed = run(argv, env=dict({"NVTXSHIM_TRACE": str(trace)}, **(env or {})), device=device)
    assert shimmed.stdout == plain.stdout, "the shim changed the program's output"
    assert shimmed.returncode == plain.returncode
    assert shimmed.stderr == plain.stderr == b""
    return plain, load_trace(trace)


def unchanged_and_traced(make_device, tmp_path, argv):
    """ARGV on the emulated device without the shim and with it recording: the same output,
    errors and exit status (0); the plain run and the trace's events."""
    device = make_device(frames=1)
    trace = tmp_path / "trace.json"
    plain = run(argv, shim=False, device=device)
    shimmed = run(argv, env={"NVTXSHIM_TRACE": str(trace)}, device=device)
    assert plain.returncode == 0, plain
    assert (shimmed.stdout, shimmed.stderr, shimmed.returncode) == (
        plain.stdout, plain.stderr, plain.returncode)
    return plain, load_trace(trace)


def thread_names(events):
    result = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "M" and e["name"] == "thread_name":
            result[e["tid"]].append(e["args"]["name"])
    return result


def inside(inner, outer):
    return (inner["tid"] == outer["tid"] and inner["ts"] >= outer["ts"] and
            end_us(inner) <= end_us(outer) + 0.002)


def test_sync_transfers_one_range_per_call_with_names_and_payloads(make_device, tmp_path):
    device = make_device(frames=5)
    plain, events = capture(device, tmp_path, "sync", {"NVTXSHIM_FRAME": "usb.in:0x81"})
    assert plain.returncode == 0
    usb = collections.Counter(names(events, "usb"))
    assert usb == collections.Counter(
        ["libusb_control_transfer type=0x40 req=0x01 val=0x%04x OUT 0B" % i for i in range(5)] +
        ["libusb_bulk_transfer ep=0x02 OUT 8B"] * 5 +
        ["libusb_bulk_transfer ep=0x81 IN 9216B"] * 5 +
        ["libusb_interrupt_transfer ep=0x83 IN 8B"] * 5 +
        OPEN_CAMERA + CLOSE_CAMERA)
    # The device is opened and its interface claimed before the first transfer, released after
    # the last; device management has its own category and no payload.
    usb_ranges = ranges(events, "usb")
    assert [e["name"] for e in usb_ranges[:2] + usb_ranges[-1:]] == OPEN_CAMERA + CLOSE_CAMERA
    assert device_calls(events) == OPEN_CAMERA + CLOSE_CAMERA
    assert all(e["args"] == {"category": "device"} for e in usb_ranges[:2] + usb_ranges[-1:])
    payloads = {e["name"]: e["args"]["payload"] for e in usb_ranges[2:-1]}
    assert payloads["libusb_bulk_transfer ep=0x81 IN 9216B"] == 9216
    assert payloads["libusb_bulk_transfer ep=0x02 OUT 8B"] == 8
    assert payloads["libusb_interrupt_transfer ep=0x83 IN 8B"] == 8
    # libusb's sync calls run its async ones inside: only the program-level call shows.
    assert not any(inside(a, b) for a in usb_ranges for b in usb_ranges if a is not b)
    assert {e["tid"] for e in usb_ranges} == {usb_ranges[0]["pid"]}
    # Frame N begins with the Nth bulk IN and ends when the next begins.
    frames = sorted(ranges(events, "nvtxshim"), key=lambda e: e["ts"])
    assert [f["name"] for f in frames] == ["frame %d" % n for n in range(1, 6)]
    reads = sorted((e for e in usb_ranges if "ep=0x81" in e["name"]), key=lambda e: e["ts"])
    for frame, read, following in zip(frames, reads, frames[1:] + [None]):
        assert frame["ts"] <= read["ts"]
        end = end_us(frame)
        if following:
            before_next = [e for e in usb_ranges if e["ts"] < following["ts"]]
            assert max(end_us(e) for e in before_next) <= end <= following["ts"]


@pytest.mark.parametrize("name", ["usb_capture_15c", "usb_capture_16ch", "a_usb_capture_program_named_at_length"])
def test_the_event_thread_is_named_whatever_the_length_of_the_programs_name(make_device, tmp_path, name):
    # The kernel keeps 15 characters of a thread's name (TASK_COMM_LEN less its NUL): an event
    # thread that inherited the process's name shows its first 15 characters, whatever the
    # length of program_invocation_short_name.
    executable = tmp_path / name
    shutil.copy(program("usb_capture"), executable)
    _, events = capture(make_device(frames=2), tmp_path, "async", executable=str(executable))
    callbacks = [e for e in ranges(events, "usb") if e["name"].startswith("libusb_transfer_cb_fn")]
    event_threads = {e["tid"] for e in callbacks}
    assert len(event_threads) == 1
    assert "libusb events" in thread_names(events)[event_threads.pop()]


def test_async_transfers_span_submission_to_callback_on_the_event_thread(make_device, tmp_path):
    device = make_device(frames=5)
    plain, events = capture(device, tmp_path, "async")
    assert plain.returncode == 0
    submits = [e for e in ranges(events, "usb") if e["name"].startswith("libusb_submit_transfer")]
    callbacks = [e for e in ranges(events, "usb") if e["name"].startswith("libusb_transfer_cb_fn")]
    handlers = [e for e in ranges(events, "usb") if e["name"] == "libusb_handle_events_completed"]
    assert collections.Counter(e["name"] for e in submits) == {
        "libusb_submit_transfer ep=0x81 BULK IN 9216B": 5,
        "libusb_submit_transfer ep=0x83 INTERRUPT IN 8B": 5}
    assert collections.Counter(e["name"] for e in callbacks) == {
        "libusb_transfer_cb_fn ep=0x81 BULK IN 9216B": 5,
        "libusb_transfer_cb_fn ep=0x83 INTERRUPT IN 8B": 5}
    main = submits[0]["pid"]
    assert {e["tid"] for e in submits} == {main}
    event_threads = {e["tid"] for e in callbacks}
    assert len(event_threads) == 1 and main not in event_threads
    event_thread = event_threads.pop()
    assert "libusb events" in thread_names(events)[event_thread]
    assert "libusb events" not in thread_names(events).get(main, [])
    # Every callback runs inside an event-handling range on its thread, and
    # every submission range ends as its callback begins.
    for callback in callbacks:
        assert any(inside(callback, handler) for handler in handlers)
    for endpoint in ("ep=0x81", "ep=0x83"):
        sent = sorted((e for e in submits if endpoint in e["name"]), key=lambda e: e["ts"])
        done = sorted((e for e in callbacks if endpoint in e["name"]), key=lambda e: e["ts"])
        for submit, callback, following in zip(sent, done, sent[1:] + [None]):
            assert end_us(submit) <= callback["ts"]
            assert following is None or callback["ts"] <= following["ts"]
    assert all(c["args"]["payload"] in (9216, 8) for c in callbacks)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_stall_is_a_red_mark_and_a_short_transfer_a_range_with_the_bytes_moved(
        make_device, tmp_path, mode):
    device = make_device(frames=5, extra=("--stall-frame", "1", "--short-frame", "3"))
    plain, events = capture(device, tmp_path, mode)
    assert plain.returncode == 3  # the program counts errors and says so
    assert b"[frame 1: LIBUSB_ERROR_PIPE]" in plain.stdout
    assert b"[frame 3: short 4608/9216]" in plain.stdout
    # The stall is the one mark: a short transfer completed, and is no error.
    marks = [e for e in events if e.get("ph") == "i" and e.get("cat") == "usb"]
    assert all(m["args"]["color"] == RED and m["args"]["category"] == "warning" for m in marks)
    assert [m["name"] for m in marks] == [
        "LIBUSB_ERROR_PIPE libusb_bulk_transfer ep=0x81 IN 0/9216B" if mode == "sync" else
        "LIBUSB_TRANSFER_STALL libusb_submit_transfer ep=0x81 BULK IN 9216B"]
    # The frames' ranges in time order, each with the bytes it moved: in the trace file a
    # synchronous transfer's range has them (its name keeps the request), an asynchronous one's
    # completion callback has them (its submission's range keeps the request).
    moved = "libusb_bulk_transfer ep=0x81 IN 9216B" if mode == "sync" else \
        "libusb_transfer_cb_fn ep=0x81 BULK IN 9216B"
    assert [e["args"]["payload"] for e in ranges(events, "usb") if e["name"] == moved] == [
        9216, 0, 9216, 4608, 9216]
    if mode == "async":
        submits = [e for e in ranges(events, "usb") if e["name"].startswith(
            "libusb_submit_transfer ep=0x81")]
        assert [e["args"]["payload"] for e in submits] == [9216] * 5


def test_pyusb_through_ctypes_shows_a_range_for_every_libusb_call(make_device, tmp_path):
    device = make_device(frames=4)
    argv = [PYTHON, ROOT + "/test/programs/pyusb_capture.py", "4"]
    trace = tmp_path / "pyusb.json"
    plain = run(argv, shim=False, device=device)
    shimmed = run(argv, env={"NVTXSHIM_TRACE": str(trace)}, device=device)
    assert plain.returncode == 0, plain.stderr
    assert shimmed.stdout == plain.stdout and shimmed.returncode == 0
    assert b"calls control=4 bulk=8 interrupt=4" in plain.stdout
    events = load_trace(trace)
    calls = collections.Counter(name.split(" ")[0] for name in names(events, "usb"))
    assert calls == {"libusb_control_transfer": 4, "libusb_bulk_transfer": 8,
                     "libusb_interrupt_transfer": 4, "libusb_open": 1,
                     "libusb_claim_interface": 1, "libusb_release_interface": 1}
    # pyusb opens the device and claims the interface itself, and releases it when it
    # disposes of the device.
    assert device_calls(events) == OPEN_CAMERA + CLOSE_CAMERA


def test_frame_marker_by_call_and_budget_marks(make_device, tmp_path):
    device = make_device(frames=4)
    _, events = capture(device, tmp_path, "sync", {"NVTXSHIM_FRAME": "call:libusb_control_transfer",
                                                   "NVTXSHIM_FRAME_BUDGET": "1ns"})
    assert sorted(names(events, "nvtxshim")) == ["frame %d" % n for n in range(1, 5)]
    over = [e for e in events if e.get("ph") == "i" and e.get("cat") == "nvtxshim"]
    assert sorted(e["name"].split(":")[0] for e in over) == [
        "over budget frame %d" % n for n in range(1, 5)]
    assert all(e["args"]["color"] == RED for e in over)
    _, events = capture(device, tmp_path, "sync", {"NVTXSHIM_FRAME": "usb.out:2",
                                                   "NVTXSHIM_FRAME_BUDGET": "1000s"})
    assert len(names(events, "nvtxshim")) == 4
    assert not [e for e in events if e.get("ph") == "i" and e.get("cat") == "nvtxshim"]


def test_async_in_frames_count_completions(make_device, tmp_path):
    device = make_device(frames=4)
    _, events = capture(device, tmp_path, "async", {"NVTXSHIM_FRAME": "usb.in:0x81"})
    frames = ranges(events, "nvtxshim")
    callbacks = [e for e in ranges(events, "usb") if e["name"].startswith("libusb_transfer_cb_fn ep=0x81")]
    assert sorted(f["name"] for f in frames) == ["frame %d" % n for n in range(1, 5)]
    assert {f["tid"] for f in frames} == {c["tid"] for c in callbacks}


def test_hooks_without_usb_trace_nothing_and_change_nothing(make_device, tmp_path):
    device = make_device(frames=3)
    argv = [program("usb_capture"), "--frames", "3", "--async"]
    plain = run(argv, shim=False, device=device)
    for hooks in ("x11,cuda", "none"):
        trace = tmp_path / (hooks + ".json")
        shimmed = run(argv, env={"NVTXSHIM_TRACE": str(trace), "NVTXSHIM_HOOKS": hooks},
                      device=device)
        assert (shimmed.stdout, shimmed.stderr, shimmed.returncode) == (
            plain.stdout, plain.stderr, plain.returncode)
        assert not trace.exists() or names(load_trace(trace), "usb") == []


def test_a_long_run_streams_every_event(make_device, tmp_path):
    # Several buffer flushes' worth of events: none lost, none doubled.
    device = make_device(frames=150)
    plain, events = capture(device, tmp_path, "async")
    assert plain.returncode == 0
    usb = collections.Counter(n.split(" ")[0] for n in names(events, "usb"))
    assert usb["libusb_submit_transfer"] == 300 and usb["libusb_transfer_cb_fn"] == 300
    assert usb["libusb_control_transfer"] == 150 and usb["libusb_bulk_transfer"] == 150


def test_async_edges_behave_as_without_the_shim(make_device, tmp_path):
    # A refused isochronous submission (the endpoint is bulk: the device refuses it with
    # EINVAL; callback and user_data left as set, the error returned as is) and a cancel
    # that comes too late (the emulated device completes every URB at once), so the
    # transfer completes, exactly as it does without the shim.
    device = make_device(frames=1)
    argv = [program("test/usb_async_edges")]
    trace = tmp_path / "edges.json"
    plain = run(argv, shim=False, device=device)
    shimmed = run(argv, env={"NVTXSHIM_TRACE": str(trace)}, device=device)
    assert plain.returncode == 0 and b"iso submit: -2 (LIBUSB_ERROR_INVALID_PARAM) callback=same" in plain.stdout
    assert (shimmed.stdout, shimmed.stderr, shimmed.returncode) == (
        plain.stdout, plain.stderr, plain.returncode)
    events = load_trace(trace)
    assert names(events, "usb") == OPEN_CAMERA + ["libusb_submit_transfer ep=0x81 ISO IN 4x512B",
                                                  "libusb_submit_transfer ep=0x81 BULK IN 9216B",
                                                  "libusb_handle_events",
                                                  "libusb_transfer_cb_fn ep=0x81 BULK IN 9216B"] + CLOSE_CAMERA
    marks = [e["name"] for e in events if e["ph"] == "i"]
    assert marks == ["LIBUSB_ERROR_INVALID_PARAM libusb_submit_transfer ep=0x81 ISO IN 4x512B"]


def test_more_async_shapes_than_the_name_table_holds_each_carry_their_own_length(
        make_device, tmp_path):
    """Interrupt IN transfers of every length from 1 to 5,000 bytes, one at a time, on the
    status endpoint, which answers 8 bytes: more shapes (a submission's name and its
    callback's each) than the usb domain's table of 8,192 names holds. Each submission's range
    says its own length in its name and payload, and each callback's range the bytes moved
    (all of a transfer of 8 bytes or fewer, 8 of a longer one), named after its transfer, or
    after the function alone once no name is left to register."""
    count = 5000
    _, events = unchanged_and_traced(
        make_device, tmp_path, [program("test/usb_async_edges"), "shapes", str(count)])
    events = [e for e in events if e.get("cat") == "usb" and e.get("ph") in ("b", "X")]
    submissions = [e for e in events if e["name"].startswith("libusb_submit_transfer")]
    callbacks = [e for e in events if e["name"].startswith("libusb_transfer_cb_fn")]
    assert [(e["name"], e["args"]["payload"]) for e in submissions] == [
        ("libusb_submit_transfer ep=0x83 INTERRUPT IN %dB" % n, n) for n in range(1, count + 1)]
    assert len(callbacks) == count
    generic = 0
    for n, event in enumerate(callbacks, 1):
        assert event["args"]["payload"] == min(n, 8), event
        if event["name"] == "libusb_transfer_cb_fn":
            generic += 1
        else:
            assert event["name"] == "libusb_transfer_cb_fn ep=0x83 INTERRUPT IN %dB" % n, event
    # the table held names for some shapes, not for all
    assert 0 < generic < count


# test/programs/usb_calls.c's calls, in its order: each one's range name and category as the
# contract gives them (device management in "device", descriptor requests in "transfer", event
# handling in "events"). The program prints the same names, one line each: "NAME: RESULT [ERROR]".
USB_CALLS = [("libusb_open", "device"), ("libusb_set_configuration 1", "device"),
             ("libusb_claim_interface 0", "device"),
             ("libusb_set_interface_alt_setting 0 alt=0", "device"),
             ("libusb_clear_halt ep=0x81", "device"),
             ("libusb_get_string_descriptor_ascii idx=1", "transfer"),
             ("libusb_get_bos_descriptor", "transfer"), ("libusb_reset_device", "device"),
             ("libusb_release_interface 0", "device"), ("libusb_handle_events_locked", "events"),
             ("libusb_wait_for_event", "events")]


def under_a_tool_that_changes_errno(make_device, name, printed):
    """test/NAME on the emulated device without the shim, and with it under a tool that sets
    errno in every call it takes (test/libnull_tool_errno.so; nsys makes system calls inside
    the NVTX calls the shim makes around a libusb call): the same output, where the program
    printed errno PRINTED times; the tool's counts (pushes, pops) from its stderr."""
    device = make_device(frames=1)
    argv = [program("test/" + name)]
    plain = run(argv, shim=False, device=device)
    shimmed = run(argv, env={"NVTX_INJECTION64_PATH": program("test/libnull_tool_errno.so")},
                  device=device)
    assert plain.returncode == 0, plain
    assert (shimmed.stdout, shimmed.returncode) == (plain.stdout, plain.returncode)
    assert plain.stdout.count(b" errno=") == printed
    told = re.search(rb"errno tool: pushes (\d+) pops (\d+)", shimmed.stderr)
    assert told, shimmed.stderr
    return int(told.group(1)), int(told.group(2))


def test_async_submissions_and_callbacks_see_errno_as_libusb_left_it_under_a_tool_that_changes_it(
        make_device):
    """A submission (its range started, or ended at once when libusb refuses it) returns with
    errno as libusb left it, and the program's callback, which the shim's own callback calls
    after ending the transfer's range and opening the callback's, finds errno on entry as
    libusb set it (usb_async_edges prints both, errno set to 4242 before each submission)."""
    pushes, _ = under_a_tool_that_changes_errno(make_device, "usb_async_edges", 3)
    assert pushes >= 1


def test_each_device_call_leaves_errno_as_libusb_did_under_a_tool_that_changes_it(make_device):
    """After each call errno is as libusb left it (usb_calls prints it, set to 4242 before each
    call), and every call reached the tool, a push and a pop."""
    pushes, pops = under_a_tool_that_changes_errno(make_device, "usb_calls", len(USB_CALLS))
    assert pushes == pops >= len(USB_CALLS)


def test_device_descriptor_and_event_calls_one_range_each_and_a_red_mark_for_each_failure(
        make_device, tmp_path):
    # The emulated device need not answer every request (a descriptor request may stall): the
    # results are not asserted, only that the trace agrees with them.
    plain, events = unchanged_and_traced(make_device, tmp_path, [program("test/usb_calls")])
    # Indented lines say what a descriptor request that succeeded read.
    results = [line.split(": ") for line in plain.stdout.decode().splitlines()
               if not line.startswith(" ")]
    assert [name for name, _ in results] == [name for name, _ in USB_CALLS]

    usb = ranges(events, "usb")
    # One range per call: libusb's own requests inside a call (the control transfers of a
    # descriptor request, the claims a reset makes again) do not show.
    assert [(e["name"], e["args"]["category"]) for e in usb] == USB_CALLS
    assert {e["tid"] for e in usb} == {usb[0]["pid"]}
    # Only the string request moves bytes: the length it returned (into the program's 64-byte
    # buffer), 0 when it failed.
    string = int(dict(results)["libusb_get_string_descriptor_ascii idx=1"].split()[0])
    assert {e["name"]: e["args"]["payload"] for e in usb if "payload" in e["args"]} == {
        "libusb_get_string_descriptor_ascii idx=1": max(string, 0)}
    # A red mark for each device management or descriptor call that failed (a negative result),
    # named after the error and the function and inside the call's range; none for the others.
    # Event handling has no marks (here it returns 0, and 1 for the wait that timed out).
    marked = {name for name, category in USB_CALLS if category != "events"}
    failed = {name: result.split()[1] for name, result in results
              if int(result.split()[0]) < 0 and name in marked}
    marks = [e for e in events if e["ph"] == "i"]
    assert sorted(m["name"] for m in marks) == sorted(
        "%s %s" % (error, name.split()[0]) for name, error in failed.items())
    for mark in marks:
        assert mark["cat"] == "usb" and mark["args"]["category"] == "warning"
        assert mark["args"]["color"] == RED
        call = next(e for e in usb if e["name"].split()[0] == mark["name"].split()[1])
        assert call["tid"] == mark["tid"] and call["ts"] <= mark["ts"] <= end_us(call)
