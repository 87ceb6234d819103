"""Shared helpers: the built library, the emulated device, running programs
with the shim appended to LD_PRELOAD, and reading the trace it writes."""
import os
import subprocess

import pytest

import traceformat
from childenv import clean_env
from xserver import Xvfb

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# NVS_TEST_BUILD runs the suite against another build (make test-asan: build/asan).
BUILD = os.path.join(ROOT, os.environ.get("NVS_TEST_BUILD", "build"))
SHIM = os.path.join(BUILD, "libnvtxshim.so")
STUB = os.path.join(BUILD, "test", "stub")  # the stand-in CUDA driver and runtime
PYTHON = "/usr/bin/python3"  # Debian's, which has python3-usb


def program(name):
    path = os.path.join(BUILD, name)
    assert os.path.exists(path), "%s is not built: run make test" % path
    return path


class Device:
    """The emulated camera + actuator: build/emucam runs a program with the
    device attached (test/usbdev/README.md)."""

    def __init__(self, frames, extra):
        self.frames = frames
        self.extra = list(extra)

    def wrap(self, argv):
        return [program("emucam")] + self.extra + ["--"] + list(argv)


@pytest.fixture
def make_device():
    def make(frames=5, extra=()):
        return Device(frames, extra)
    return make


def command(argv, env=None, shim=True):
    """ARGV and its environment as run() makes them: clean_env(ENV), and with SHIM the
    shim appended to LD_PRELOAD by a shell that then execs the program (the same pid).
    For programs a test drives itself with subprocess.Popen."""
    full_env = clean_env(env)
    if shim:
        full_env["NVS_TEST_SHIM"] = SHIM
        # NVS_TEST_PRELOAD_FIRST (make test-asan: libasan) goes in front, so that
        # uninstrumented hosts (python) can load an instrumented shim.
        argv = ["sh", "-c", 'LD_PRELOAD="${NVS_TEST_PRELOAD_FIRST:+$NVS_TEST_PRELOAD_FIRST:}'
                '${LD_PRELOAD:+$LD_PRELOAD:}$NVS_TEST_SHIM" exec "$@"', "sh"] + list(argv)
    return list(argv), full_env


# make test's ASan half: the ASan runtime goes first in LD_PRELOAD (NVS_TEST_PRELOAD_FIRST).
UNDER_ASAN = bool(os.environ.get("NVS_TEST_PRELOAD_FIRST"))

PEAK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peak.py")


def popen_measured(argv, **kwargs):
    """subprocess.Popen(ARGV, **KWARGS) through test/peak.py, so that measured_end can tell
    ARGV's own peak memory (not pytest's, which a child's ru_maxrss would carry)."""
    read_end, write_end = os.pipe()
    try:
        process = subprocess.Popen(["/usr/bin/python3", "-S", PEAK, str(write_end)] + list(argv),
                                   pass_fds=(write_end,), **kwargs)
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)
    process.measure = read_end
    return process


def no_peak_under_asan():
    """Skips the rest of a test (its figures checked) in the ASan half, where a process's
    memory is the runtime's shadow and quarantine more than its own."""
    if UNDER_ASAN:
        pytest.skip("every figure checked; the peak memory is not judged under ASan (its shadow "
                    "memory and quarantine are its runtime's)")


def measured_end(process, timeout=None):
    """Waits for a popen_measured PROCESS: {"status", "peak" (bytes), "cpu" (seconds)} of the
    command it ran."""
    process.wait(timeout=timeout)
    with os.fdopen(process.measure) as figures:
        line = figures.read().split()
    assert line, "test/peak.py did not run %s (exit %d)" % (process.args[4:], process.returncode)
    return {"status": int(line[0]), "peak": int(line[1]) * 1024, "cpu": float(line[2])}


def run(argv, env=None, shim=True, device=None, timeout=120):
    """Runs ARGV, with the shim appended to LD_PRELOAD inside the emulated
    device's runner (replacing LD_PRELOAD would drop umockdev's preload library)."""
    argv, full_env = command(argv, env, shim)
    if device:
        argv = device.wrap(argv)
    return subprocess.run(argv, env=full_env, capture_output=True, timeout=timeout)


# ASan's own warning when _exit leaves a signal handler (make test-asan): its runtime's, at
# random (where the handler interrupted the thread), with or without the shim.
ASAN_NO_RETURN = (b"WARNING: ASan is ignoring requested __asan_handle_no_return",
                  b"False positive error reports may follow",
                  b"For details see https://github.com/google/sanitizers/issues/189")


def sanitizer_free(stderr):
    """STDERR without the ASan runtime's own warning lines (ASAN_NO_RETURN)."""
    return b"".join(line for line in stderr.splitlines(True)
                    if not any(part in line for part in ASAN_NO_RETURN))


def load_trace(path, complete=False):
    """The trace's events in time order, as a viewer shows them (each thread
    writes its own part of the file, so file order is not time order);
    metadata first. The file is read under the bare-array rule, its `X` events
    must nest on their threads (traceformat.check_nesting), and each async
    `b`/`e` pair (start/end ranges, frames, submissions) becomes one "X" range
    (traceformat.join_async); a begin without an end is left out. With
    COMPLETE, the file must be whole JSON as it stands: its closing `]` written,
    as it is when the process ends by return, exit, _exit or exec."""
    events = (traceformat.read_complete_trace if complete else traceformat.read_trace)(path)
    traceformat.check_nesting(events, "%s: " % path)
    events, _ = traceformat.join_async(events)
    return sorted(events, key=lambda e: e.get("ts", -1.0))


def ranges(events, category=None):
    return [e for e in events if e.get("ph") == "X" and (category is None or e.get("cat") == category)]


def names(events, category=None):
    return [e["name"] for e in ranges(events, category)]


# The device management ranges (usb, category "device") of a program that opens the emulated
# camera with libusb_open_device_with_vid_pid - libusb calls libusb_open through its exported
# symbol, so that call is the range - claims interface 0 and releases it at the end: the C
# examples, the test programs (emulated_device.h) and pyusb, which claims the interface itself.
OPEN_CAMERA = ["libusb_open", "libusb_claim_interface 0"]
CLOSE_CAMERA = ["libusb_release_interface 0"]
# The Python harness sets the configuration first (pyusb's set_configuration()).
TWIN_OPEN_CAMERA = ["libusb_open", "libusb_set_configuration 1", "libusb_claim_interface 0"]


def device_calls(events):
    """The names of the usb ranges of device management (category "device"), in time order."""
    return [e["name"] for e in ranges(events, "usb") if e["args"]["category"] == "device"]


def transfer_ranges(events):
    """The usb ranges that are not device management: transfers, callbacks, event handling."""
    return [e for e in ranges(events, "usb") if e["args"]["category"] != "device"]


@pytest.fixture(scope="session")
def xserver():
    """A private Xvfb, shared by the tests that draw."""
    server = Xvfb("-nolisten", "tcp")
    yield server
    server.stop()
