"""The binary trace's layout in the file (docs/pftrace.md, "Safety"): no packet crosses a 4 KiB
page, the gaps are padding that readers skip, and nothing else is in the file; read with
scripts/pftrace.py (no protobuf). Test/test_trace_pftrace.py checks the packets themselves
against Perfetto's schema."""
import collections
import os
import sys

from conftest import ROOT, STUB, program, run

sys.path.insert(0, os.path.join(ROOT, "scripts"))
import pftrace  # noqa: E402

PAGE = 4096


def walk(data):
    """(packets, padding bytes); fails on anything that is neither, or a packet across a page."""
    at, packets, padding = 0, [], 0
    while at < len(data):
        tag, body = pftrace._varint(data, at)
        if tag == 0x10:                       # padding: Trace field 2, a varint
            _, end = pftrace._varint(data, body)
            padding += end - at
            at = end
            continue
        assert tag == 0x0a, "byte %d: tag %#x is neither a packet nor padding" % (at, tag)
        length, start = pftrace._varint(data, body)
        end = start + length
        assert end <= len(data), "the packet at %d runs past the end of the file" % at
        assert at // PAGE == (end - 1) // PAGE, "the packet at %d..%d crosses a page" % (at, end)
        packets.append((at, end))
        at = end
    return packets, padding


def test_many_threads_write_whole_packets_none_across_a_page(make_device, xserver, tmp_path):
    # The stress program: six threads of synchronous transfers with names of their own,
    # CUDA copies, X11 calls, queued transfers completed on libusb's thread.
    workers, reads, statuses, queued = 6, 60, 60, 200
    options = ["--workers", str(workers), "--reads", str(reads), "--statuses", str(statuses),
               "--copies", "40", "--x11", "25", "--async", str(queued), "--queue", "6"]
    device = make_device(frames=workers * reads + queued)
    trace = tmp_path / "stress.pftrace"
    env = {"DISPLAY": xserver.display, "LD_LIBRARY_PATH": STUB, "NVTXSHIM_TRACE": str(trace)}
    result = run([program("test/stress")] + options, env=env, device=device, timeout=300)
    assert result.returncode == 0, result.stderr
    data = trace.read_bytes()
    packets, padding = walk(data)
    assert len(packets) > 4 * workers * reads
    # Padding is what is left at pages' ends: less than the largest packet a page, at most.
    assert padding < (len(data) // PAGE + 1) * 2048
    # Every begin on a thread's track has its end.
    open_ = collections.Counter()
    for event in pftrace.events(data):
        if not event.track:
            open_[event.sequence] += {pftrace.BEGIN: 1, pftrace.END: -1}.get(event.type, 0)
    assert set(open_.values()) == {0}, open_


def test_the_form_follows_the_extension(tmp_path):
    for name, first in (("t.pftrace", b"\x0a"), ("t.json", b"["), ("t.pftrace.json", b"["),
                        ("t.PFTRACE", b"[")):
        trace = tmp_path / name
        result = run([program("test/nvtx_user")], env={"NVTXSHIM_TRACE": str(trace)})
        assert result.returncode == 0 and result.stderr == b""
        assert trace.read_bytes()[:1] == first, name


# ---- a full disk: the file keeps whole packets only ------------------------------------------

from test_trace_safety import (WRITE_FAILED, adversary, same_as_without, shim_lines,  # noqa: E402
                               small_tmpfs)  # noqa: F401 (a fixture)


def test_a_small_tmpfs_that_fills_keeps_whole_packets(small_tmpfs):  # noqa: F811
    trace = small_tmpfs / "trace.pftrace"
    argv = adversary("loop", 20000)
    shimmed = run(argv, env={"NVTXSHIM_TRACE": str(trace)}, timeout=120)
    same_as_without(shimmed, run(argv, shim=False, timeout=120))
    said = [line for line in shim_lines(shimmed.stderr) if WRITE_FAILED.match(line)]
    assert len(said) == 1, shim_lines(shimmed.stderr)
    data = trace.read_bytes()
    packets, _ = walk(data)                 # nothing but whole packets and padding
    assert packets and packets[-1][1] == len(data), "the file ends inside padding"
    assert any(e.type == pftrace.BEGIN for e in pftrace.events(data))


def test_a_buffer_of_the_smallest_events(tmp_path):
    # Push/pop pairs of one registered name: 12 to 16 bytes an event, more events to a buffer
    # than any before the binary form. The writer's table of where each event ends must hold
    # them all (it once ran past its end into the events themselves, and the file was garbage
    # from there).
    trace = tmp_path / "short.pftrace"
    result = run([program("test/trace_adversary"), "short", "30000"],
                 env={"NVTXSHIM_TRACE": str(trace)})
    assert result.returncode == 0 and result.stdout == b"30000 short ranges\n", result.stderr
    data = trace.read_bytes()
    walk(data)
    begins = [e for e in pftrace.events(data) if e.type == pftrace.BEGIN]
    assert len(begins) == 30000 and {e.name for e in begins} == {"w"}
