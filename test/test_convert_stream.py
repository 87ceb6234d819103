"""nvtxshim convert reads an nsys export as a stream (cli/readers/sqlite_stream.c's nvs_export_*,
cli/commands/convert.c): each table in time order, the tables merged, each event written as it comes, so
that its memory is what is in flight (open ranges, launches whose work is still to come, async
ends), not the export. An export made here with Python's sqlite3, in the tables and columns nsys
2022.4 writes (no nsys needed), ten times larger than another: convert's peak memory (the
child's ru_maxrss from wait4) stays flat, and under a bound far below what the export's events
take loaded whole, and every row comes out. report reads an export through the same stream
(cli/readers/load.c), its NVTX events handed to the figures as they come: its memory is the frames'
figures, not the events."""
import os
import re
import sqlite3
import subprocess

import pytest

from conftest import clean_env, measured_end, no_peak_under_asan, popen_measured, program

MAIN = (4242 << 24) | 4242          # nsys's globalTid of process 4242's main thread
GPU = 4242 << 24                    # ... and the globalPid of its GPU work

SCHEMA = [
    """CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL)""",
    """CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
        rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER,
        endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, uint64Value INTEGER,
        int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, int32Value INTEGER,
        floatValue REAL, jsonTextId INTEGER, jsonText TEXT)""",
    """CREATE TABLE ThreadNames (nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER)""",
    """CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT)""",
    """CREATE TABLE OSRT_API (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
        globalTid INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, nestingLevel INTEGER,
        callchainId INTEGER NOT NULL)""",
    """CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
        eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL,
        returnValue INTEGER NOT NULL, callchainId INTEGER)""",
    """CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
        deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
        correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL,
        shortName INTEGER NOT NULL)""",
    """CREATE TABLE SCHED_EVENTS (start INTEGER NOT NULL, cpu INTEGER NOT NULL, isSchedIn INTEGER NOT NULL,
        globalTid INTEGER)""",
]


def make_export(path, frames, domain=None, calls=0):
    """An export of FRAMES frames of 10 us on one thread, each an NVTX range "frame N" (a name
    of its own) holding an OS runtime call and a CUDA API call that launches a kernel, which
    runs after the range; and the thread's switches off and on the CPU. The tables' rows are
    written out of time order (by kind, the kernels last first), as a reader may not assume.
    With DOMAIN, the ranges are in that NVTX domain (created by the export's first row) and
    numbered from 1, as the library's frames are ("nvtxshim": report counts them as frames),
    each holding CALLS NVTX ranges "libusb_bulk_transfer" of 0.4 us in domain usb (at most 5)."""
    us = 1000
    with sqlite3.connect(path) as db:
        for statement in SCHEMA:
            db.execute(statement)
        db.executemany("INSERT INTO StringIds VALUES (?, ?)",
                       [(1, "main"), (2, "cudaLaunchKernel_v7000"), (3, "ioctl"), (4, "frame_kernel")])
        db.execute("INSERT INTO ThreadNames VALUES (1, 0, ?)", (MAIN,))
        db.execute("INSERT INTO PROCESSES VALUES (?, 4242, 'streamer')", (GPU,))
        if domain:
            db.executemany('INSERT INTO NVTX_EVENTS (start, eventType, text, globalTid, domainId) '
                           'VALUES (0, 75, ?, ?, ?)', [(domain, MAIN, 1), ("usb", MAIN, 2)])
            db.executemany('INSERT INTO NVTX_EVENTS (start, "end", eventType, text, globalTid, domainId) '
                           'VALUES (?, ?, 59, ?, ?, 2)',
                           ((10 * us * i + us * j + 300, 10 * us * i + us * j + 700, "libusb_bulk_transfer", MAIN)
                            for i in range(frames) for j in range(calls)))
        db.executemany('INSERT INTO NVTX_EVENTS (start, "end", eventType, text, globalTid, domainId) '
                       'VALUES (?, ?, 59, ?, ?, ?)',
                       ((10 * us * i, 10 * us * i + 5 * us, "frame %d" % (i + 1 if domain else i), MAIN,
                         1 if domain else None) for i in range(frames)))
        db.executemany("INSERT INTO OSRT_API VALUES (?, ?, 0, ?, 3, 0, 0, 0)",
                       ((10 * us * i + us, 10 * us * i + 2 * us, MAIN) for i in range(frames)))
        db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 0, ?, ?, 2, 0, NULL)",
                       ((10 * us * i + 3 * us, 10 * us * i + 4 * us, MAIN, i + 1) for i in range(frames)))
        db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 1, 7, ?, ?, 4, 4)",
                       ((10 * us * i + 6 * us, 10 * us * i + 9 * us, i + 1, GPU)
                        for i in reversed(range(frames))))
        db.executemany("INSERT INTO SCHED_EVENTS VALUES (?, 0, ?, ?)",
                       ((5 * us * i + 4 * us, (i + 1) % 2, MAIN) for i in range(2 * frames)))
    return path


def measured(*args, stdout=os.devnull):
    """nvtxshim ARGS, its standard output to the file STDOUT: its stderr and its peak resident
    memory in bytes (its own: conftest.popen_measured)."""
    with open(stdout, "wb") as out:
        process = popen_measured([program("nvtxshim")] + [str(arg) for arg in args], env=clean_env(),
                                 stdout=out, stderr=subprocess.PIPE)
        stderr = process.stderr.read().decode()
    figures = measured_end(process)
    assert figures["status"] == 0, stderr
    return stderr, figures["peak"]


def convert_measured(database, out):
    """nvtxshim convert DATABASE OUT: its stderr and its peak resident memory in bytes."""
    return measured("convert", database, out)


def categories(path):
    """How many events of each category OUT has, and its flow events' phases (one a line)."""
    counts = {}
    with open(path) as trace:
        for line in trace:
            start = line.find('"cat":"')
            if start < 0:
                continue
            category = line[start + 7:line.index('"', start + 7)]
            if category == "cuda flow":
                category += ' ' + line[line.index('"ph":"') + 6]
            counts[category] = counts.get(category, 0) + 1
    return counts


@pytest.mark.parametrize("frames", [300000])
def test_convert_of_a_large_export_holds_what_is_in_flight_not_the_export(tmp_path, frames):
    small = make_export(tmp_path / "small.sqlite", frames // 10)
    large = make_export(tmp_path / "large.sqlite", frames)
    _, small_peak = convert_measured(small, tmp_path / "small.json")
    stderr, peak = convert_measured(large, tmp_path / "large.json")
    # Every row comes out: a range, an OS runtime call, a call, a kernel, a projection and an
    # arrow per frame, a thread state per pair of switches.
    assert stderr.splitlines()[-1] == (
        "nvtxshim: convert: wrote %s: %d NVTX ranges, 0 marks, %d OS runtime calls, %d CUDA API calls, "
        "%d GPU kernels, 0 GPU copies, 0 memsets, %d NVTX projections, %d launch arrows, %d thread states, "
        "3 thread names; 0 of the ranges as async pairs (\"ph\":\"b\"/\"e\")"
        % (tmp_path / "large.json", frames, frames, frames, frames, frames, frames, 2 * frames - 1))
    assert categories(tmp_path / "large.json") == {
        "default": frames, "osrt": frames, "cuda api": frames, "cuda kernel": frames,
        "nvtx projection": frames, "cuda flow s": frames, "cuda flow f": frames,
        "thread state": 2 * frames - 1}
    # Loaded whole, these 2.1 million events took some 500 MB (the commit before the stream);
    # read as a stream, ten times the export takes about the memory of a tenth of it.
    no_peak_under_asan()
    assert peak < 64 << 20, "peak %.1f MB" % (peak / 2 ** 20)
    assert peak < small_peak + (16 << 20), "peak %.1f MB, %.1f MB for a tenth of the export" % (
        peak / 2 ** 20, small_peak / 2 ** 20)


@pytest.mark.parametrize("frames", [300000])
def test_report_of_a_large_export_holds_the_frames_figures_not_its_events(tmp_path, frames):
    # Each frame a "frame N" range of domain nvtxshim holding four USB calls: five NVTX events.
    small = make_export(tmp_path / "small.sqlite", frames // 10, domain="nvtxshim", calls=4)
    large = make_export(tmp_path / "large.sqlite", frames, domain="nvtxshim", calls=4)
    _, small_peak = measured("report", small, stdout=tmp_path / "small.txt")
    stderr, peak = measured("report", large, stdout=tmp_path / "large.txt")
    assert stderr == ""
    summary = (tmp_path / "large.txt").read_text()
    # Every row counted: each frame range a frame, each call in the table.
    assert re.search(r"^  nvtxshim +frame N +(\d+) ", summary, re.M).group(1) == str(frames)
    assert re.search(r"^  usb +libusb_bulk_transfer +(\d+) ", summary, re.M).group(1) == str(4 * frames)
    assert re.search(r"^  mean of (\d+) ", summary, re.M).group(1) == str(frames)
    # What report keeps is each frame's figures (some 400 bytes a frame, figures_builder.c); loaded
    # whole, as before the stream, the events came on top (five a frame, some 1,000 bytes a
    # frame in all: 299 MB here).
    no_peak_under_asan()
    per_frame = (peak - small_peak) / (frames - frames // 10)
    assert per_frame < 640, "%.0f bytes a frame (peak %.1f MB, %.1f MB for a tenth)" % (
        per_frame, peak / 2 ** 20, small_peak / 2 ** 20)
    assert peak < 192 << 20, "peak %.1f MB" % (peak / 2 ** 20)
