"""The transparency corpus: every example and test program, with fixed arguments, gives
byte-identical output and the same exit code with and without the shim - the shim run with a
trace file (NVTXSHIM_TRACE, %p) and frames counted (NVTXSHIM_FRAME), and every trace file it
writes complete. One list, CORPUS, holds them all; test_the_corpus_lists_every_program fails when
a program is added to the repository without an entry here. Many of these runs are checked in
more detail elsewhere; here the point is the single list.

Output is compared whole - stdout, stderr and the exit code - except the harness's `fps=` line,
the one line of any program here that depends on timing, which is left out of the comparison
(entries with timing=True)."""
import concurrent.futures
import json
import os
import subprocess

import pytest

from traceformat import check_nesting
from conftest import PYTHON, ROOT, SHIM, STUB, clean_env, program, run, sanitizer_free

ON_ACT = "call:libusb_control_transfer"
TWIN = os.path.join(ROOT, "examples", "harness_physical.py")
PYUSB = os.path.join(ROOT, "test", "programs", "pyusb_capture.py")
TWO_HANDLES = os.path.join(ROOT, "test", "programs", "two_handles.py")
USBFS_IOCTLS = os.path.join(ROOT, "test", "programs", "usbfs_ioctls.py")
EMUSERVO = os.path.join(ROOT, "examples", "emuservo.py")


class Case:
    """One program run: ARGV (its first element a build/ program, unless a path), on the
    emulated device when DEVICE is not None (its emucam options), on the private Xvfb with
    DISPLAY, with ENV; FRAME is the shim run's NVTXSHIM_FRAME; TIMING leaves out the lines
    that give times (fps=, and the clock test's readings: "reads ...")."""

    def __init__(self, name, argv, device=None, display=False, env=None, frame=ON_ACT,
                 timing=False):
        self.name, self.argv, self.device, self.display = name, argv, device, display
        self.env, self.frame, self.timing = dict(env or {}), frame, timing


GPU = {"LD_LIBRARY_PATH": STUB}  # the stand-in CUDA driver and runtime: no GPU here
DEVICE = ()

CORPUS = [
    # The example harness, each mode; the GPU path on the stand-in driver.
    Case("harness-sync", ["harness_physical", "--frames", "8"], DEVICE, env=GPU, timing=True),
    Case("harness-async", ["harness_physical", "--frames", "8", "--async"], DEVICE, env=GPU,
         timing=True),
    Case("harness-async-threads", ["harness_physical", "--frames", "8", "--async", "--threads",
                                   "--queue", "6"], DEVICE, env=GPU, timing=True),
    Case("harness-threads", ["harness_physical", "--frames", "8", "--threads"], DEVICE, env=GPU,
         timing=True),
    Case("harness-gui", ["harness_physical", "--frames", "6", "--async", "--use_gui=1"], DEVICE,
         display=True, env=GPU, timing=True),
    Case("harness-large-frames", ["harness_physical", "--frames", "3", "--width", "320",
                                  "--height", "240"], ("--width", "320", "--height", "240"),
         env=GPU, timing=True),
    Case("harness-cpu", ["harness_physical", "--frames", "6", "--inference=cpu"], DEVICE,
         timing=True),
    Case("harness-no-gpu", ["harness_physical", "--frames", "4"], DEVICE, timing=True),
    Case("harness-gpu-refused", ["harness_physical", "--frames", "4", "--inference=gpu"], DEVICE),
    Case("harness-faults", ["harness_physical", "--frames", "6", "--async"],
         ("--stall-frame", "1", "--short-frame", "3"), env=GPU, timing=True),
    Case("harness-help", ["harness_physical", "--help"]),
    Case("harness-bad-option", ["harness_physical", "--frobnicate"]),
    Case("harness-no-device", ["harness_physical", "--frames", "2"], env=GPU),
    # The Python twin (pyusb through ctypes, numpy, Xlib through ctypes).
    Case("twin", [PYTHON, TWIN, "--frames", "6"], DEVICE, timing=True),
    Case("twin-threads", [PYTHON, TWIN, "--frames", "6", "--threads"], DEVICE, timing=True),
    Case("twin-gui", [PYTHON, TWIN, "--frames", "4", "--use_gui=1"], DEVICE, display=True,
         timing=True),
    Case("twin-async-refused", [PYTHON, TWIN, "--async"]),
    # The servo controller the camera rig acts through (on a pty; here its usage).
    Case("emuservo-help", [PYTHON, EMUSERVO, "--help"]),
    # The plain libusb example and the test programs on the device.
    Case("usb_capture-sync", ["usb_capture", "--frames", "6"], DEVICE),
    Case("usb_capture-async", ["usb_capture", "--frames", "6", "--async"], DEVICE),
    Case("usb_capture-faults", ["usb_capture", "--frames", "5"],
         ("--stall-frame", "1", "--short-frame", "3")),
    Case("usb_capture-bad-option", ["usb_capture", "--frobnicate"]),
    Case("usb_capture-no-device", ["usb_capture", "--frames", "2"]),
    Case("pyusb_capture", [PYTHON, PYUSB, "4"], DEVICE),
    Case("two_handles", [PYTHON, TWO_HANDLES, "2"], DEVICE),
    # usbfs's ioctls without libusb: nothing for the shim to trace (test_emucam.py runs them).
    Case("usbfs_ioctls-usage", [PYTHON, USBFS_IOCTLS]),
    Case("frame_loop", ["test/frame_loop", "4"], DEVICE),
    Case("frame_loop-signals", ["test/frame_loop", "4", "--raise", "10", "1", "--raise", "12", "2"],
         DEVICE),
    Case("frame_loop-usage", ["test/frame_loop"]),
    # A signal handler's first write while the loader is busy (test_harmless.py: no hang).
    Case("harmless-handler", ["test/harmless", "handler", "write"]),
    Case("harmless-usage", ["test/harmless"]),
    Case("usb_async_edges", ["test/usb_async_edges"], DEVICE),
    Case("usb_calls", ["test/usb_calls"], DEVICE),
    Case("usb_calls-no-device", ["test/usb_calls"]),
    Case("stress", ["test/stress", "--workers", "3", "--reads", "5", "--statuses", "5",
                    "--copies", "5", "--x11", "3", "--async", "10", "--queue", "4"], DEVICE,
         display=True, env=GPU, frame="usb.in:0x81"),
    Case("process_life-fork", ["test/process_life", "fork", "2", "1", "1"], DEVICE),
    Case("process_life-spawn", ["test/process_life", "spawn", "1", "1", "1"], DEVICE),
    Case("process_life-threads", ["test/process_life", "threads", "2", "2", "1"], DEVICE),
    Case("process_life-exit", ["test/process_life", "end", "exit", "1"], DEVICE),
    Case("process_life-usage", ["test/process_life"]),
    Case("process_life_dl", ["test/process_life_dl", "dlreopen", "1"], DEVICE),
    Case("emucam-usage", ["emucam"]),
    # X11: Xlib and XCB, over the socket and MIT-SHM.
    Case("x11_draw", ["test/x11_draw", "3"], display=True, frame="x11.flush"),
    Case("x11_draw-shm", ["test/x11_draw", "3", "--shm"], display=True, frame="x11.flush"),
    Case("x11_draw-no-display", ["test/x11_draw", "3"], frame="x11.flush",
         env={"DISPLAY": ":9999"}),
    Case("x11_round_trips", ["test/x11_round_trips", "20", "3"], display=True, frame="x11.flush"),
    Case("xcb_draw", ["test/xcb_draw", "3"], display=True, frame="x11.flush"),
    Case("xcb_draw-shm", ["test/xcb_draw", "3", "--shm"], display=True, frame="x11.flush"),
    Case("close_after_frames-usage", ["test/close_after_frames"]),
    # RENDER through cairo (Xlib and XCB surfaces), GL texture uploads on llvmpipe.
    Case("cairo_draw-xlib", ["test/cairo_draw", "3", "--xlib"], display=True, frame="x11.flush"),
    Case("cairo_draw-xcb", ["test/cairo_draw", "3", "--xcb"], display=True, frame="x11.flush"),
    Case("gl_upload", ["test/gl_upload", "3"], display=True, frame="x11.swap"),
    Case("gl_upload-proc", ["test/gl_upload", "3", "--proc"], display=True, frame="x11.swap"),
    Case("gl_upload-formats", ["test/gl_upload", "1", "--formats"], display=True,
         frame="x11.swap"),
    # CUDA copies on the stand-in driver and runtime, every way to the driver.
    Case("cuda_copies-linked", ["test/cuda_copies", "linked"], env=GPU, frame="cuda.htod"),
    Case("cuda_copies-dlsym", ["test/cuda_copies", "dlsym"], env=GPU, frame="cuda.htod"),
    Case("cuda_copies-getproc", ["test/cuda_copies", "getproc"], env=GPU, frame="cuda.dtoh"),
    Case("cuda_copies-getproc-ptds", ["test/cuda_copies", "getproc-ptds"], env=GPU,
         frame="cuda.htod"),
    Case("cuda_copies-getproc-v1", ["test/cuda_copies", "getproc-v1"], env=GPU, frame="cuda.htod"),
    Case("cuda_copies-loader", ["test/cuda_copies", "loader"], env=GPU, frame="cuda.htod"),
    Case("runtime_copies", ["test/runtime_copies"], env=GPU, frame="call:cudaMemcpy"),
    # Waits for the GPU and kernel launches on the stand-ins.
    Case("cuda_waits-linked", ["test/cuda_waits", "linked"], env=GPU, frame="call:cuStreamSynchronize"),
    Case("cuda_waits-getproc-ptds", ["test/cuda_waits", "getproc-ptds"], env=GPU,
         frame="call:cuLaunchKernel_ptsz"),
    Case("runtime_waits", ["test/runtime_waits", "linked"], env=GPU, frame="call:cudaLaunchKernel"),
    Case("runtime_waits-dlsym", ["test/runtime_waits", "dlsym"], env=GPU,
         frame="call:cudaDeviceSynchronize"),
    # NVTX in the program itself, across fork, exec and _exit.
    Case("nvtx_user", ["test/nvtx_user"]),
    # Ranges on a thread that forbids itself the TSC, and on one it starts (the recorder's clock).
    Case("clock_agree-refuse", ["test/clock_agree", "20", "100", "refuse", "quiet"]),
    Case("nvtx_user-fork", ["test/nvtx_user", "fork"]),
    Case("nvtx_user-exec", ["test/nvtx_user", "exec", "/bin/echo", "after exec"]),
    Case("nvtx_user-failed-exec", ["test/nvtx_user", "exec", "/nonexistent/program"]),
    Case("nvtx_user-_exit", ["test/nvtx_user", "_exit"]),
    # The rest: the configuration unit tests, RTLD_NEXT through another interposer, a
    # program that dlopens a library and makes NVTX ranges (test_security.py runs it set-uid).
    Case("test_config", ["test/test_config"]),
    Case("test_trace_json", ["test/test_trace_json"]),
    Case("test_error_names", ["test/test_error_names"]),
    Case("test_error_names_before_2_32", ["test/test_error_names_before_2_32"]),
    Case("test_capture", ["test/test_capture"]),
    Case("test_cli_trace_json", ["test/test_cli_trace_json"]),
    Case("test_figures", ["test/test_figures"]),
    Case("test_clock", ["test/test_clock"], timing=True),
    # test_aarch64.py's rig, natively: its tally of the emulated camera's protocol.
    Case("rig_tally-usb", ["test/rig_tally", "usb", "3"], DEVICE),
    # The long-trace generator (test_long_trace.py's): 20 frames of JSON on its stdout.
    Case("longtrace", ["test/longtrace", "--frames", "20"]),
    # The loaders' events of a file (test_cli_pftrace.py's tool), given a file that is no
    # trace (a configuration fuzz seed): its one line and exit status.
    Case("events_dump-not-a-trace", ["test/events_dump",
                         os.path.join(ROOT, "test", "fuzz", "corpus", "seed-trace-100__.json")]),
    Case("secure_probe", ["test/secure_probe", "libc.so.6"]),
    Case("secure_probe-usage", ["test/secure_probe"]),
    Case("dlsym_next", ["test/dlsym_next"], env={"LD_PRELOAD": "@test/libpreload_probe.so"}),
    Case("dlsym_truth", ["test/dlsym_truth"]),
    Case("signal_ignore", ["test/signal_ignore", "10", "before", "true"]),
    Case("chdir_record", ["test/chdir_record", "/"]),
    # test_trace_safety.py's adversary: its usage and a plain loop (its other modes end by
    # signals or report losses on stderr by design).
    Case("trace_adversary-usage", ["test/trace_adversary"]),
    Case("trace_adversary-loop", ["test/trace_adversary", "loop", "100"]),
    # test_seccomp.py's launcher: its usage (a run under a filter is that test's).
    Case("seccomp_run-usage", ["test/seccomp_run"]),
    Case("recorder_faults", ["test/recorder_faults", "100"]),
    Case("recorder_faults-usage", ["test/recorder_faults"]),
]

# Programs checked elsewhere: close_after_frames only runs paired with glxgears (below);
# frame_chain prints what a walk of its own frame pointers finds from inside the driver,
# which the library's frames change by design (test_cuda.py's frame test says how).
PAIRED = {"test/close_after_frames", "test/frame_chain"}


def resolve(case, display):
    argv = list(case.argv)
    if not argv[0].startswith("/"):
        argv[0] = program(argv[0])
    env = {key: program(value[1:]) if value.startswith("@") else value
           for key, value in case.env.items()}
    if case.display:
        env["DISPLAY"] = display
    return argv, env


def comparable(result, timing):
    stdout = result.stdout
    if timing:
        stdout = b"".join(line for line in stdout.splitlines(True)
                          if not line.startswith((b"fps=", b"reads ")))
    return stdout, sanitizer_free(result.stderr), result.returncode


def check_traces(directory):
    """Every trace file the shim run wrote is complete JSON (the bare array, closed),
    and its complete events nest on their threads."""
    for name in os.listdir(directory):
        with open(os.path.join(directory, name)) as f:
            events = json.load(f)
        assert isinstance(events, list), name
        check_nesting(events, name + ": ")


@pytest.mark.parametrize("case", CORPUS, ids=lambda case: case.name)
def test_same_output_and_exit_code_with_and_without_the_shim(case, make_device, xserver, tmp_path):
    argv, env = resolve(case, xserver.display)
    device = make_device(extra=case.device) if case.device is not None else None
    traces = tmp_path / "traces"
    traces.mkdir()
    shim_env = dict(env, NVTXSHIM_TRACE=str(traces / "trace.%p.json"), NVTXSHIM_FRAME=case.frame)
    if case.display:
        # One after the other: two windows at the same place on one X server hide each
        # other, and what a program reads back from an obscured window is undefined.
        plain = run(argv, env=env, shim=False, device=device)
        shimmed = run(argv, env=shim_env, device=device)
    else:
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            plain = pool.submit(run, argv, env=env, shim=False, device=device)
            shimmed = pool.submit(run, argv, env=shim_env, device=device)
            plain, shimmed = plain.result(), shimmed.result()
    assert comparable(shimmed, case.timing) == comparable(plain, case.timing)
    check_traces(traces)
    # A run that got as far as its hooked calls (or its own NVTX) was traced: the shim was there.
    uses_hooks = (case.device is not None or case.display or "LD_LIBRARY_PATH" in case.env or
                  case.argv[0] in ("test/nvtx_user", "test/secure_probe", "test/clock_agree"))
    if uses_hooks and plain.returncode in (0, 3):
        assert os.listdir(traces), "no trace: was the shim loaded?"


def shell(argv, env, shim):
    """argv and environment as conftest.run() makes them, for a program run with Popen."""
    full = clean_env(env)
    if shim:
        full["NVS_TEST_SHIM"] = SHIM
        argv = ["sh", "-c", 'LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$NVS_TEST_SHIM" exec "$@"',
                "sh"] + list(argv)
    return argv, full


def close_glxgears(display, traces, shim):
    """close_after_frames waits for glxgears' window, counts 3 presented frames and sends
    Escape; glxgears exits. Returns the helper's output and exit code, and glxgears' exit code."""
    env = {"DISPLAY": display, "vblank_mode": "0"}
    if shim:
        env.update(NVTXSHIM_TRACE=str(traces / "trace.%p.json"), NVTXSHIM_FRAME="x11.swap")
    argv, full = shell([program("test/close_after_frames"), "glxgears", "3"], env, shim)
    helper = subprocess.Popen(argv, env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        ready = helper.stdout.readline()  # "ready": it is watching for the window
        argv, full = shell(["glxgears"], env, shim)
        gears = subprocess.run(argv, env=full, capture_output=True, timeout=120)
        rest, errors = helper.communicate(timeout=60)
    finally:
        helper.kill()
    return ready + rest, errors, helper.returncode, gears.returncode


def test_close_after_frames_closing_glxgears(xserver, tmp_path):
    traces = tmp_path / "traces"
    traces.mkdir()
    plain = close_glxgears(xserver.display, traces, shim=False)
    shimmed = close_glxgears(xserver.display, traces, shim=True)
    assert plain == (b"ready\nsent Escape after 3 frames\n", b"", 0, 0)
    assert shimmed == plain
    check_traces(traces)


def test_the_corpus_lists_every_program():
    """Every program source in the repository (git ls-files) has an entry."""
    listed = {arg for case in CORPUS for arg in case.argv[:2]} | PAIRED
    files = subprocess.run(["git", "ls-files", "examples", "test/programs", "test/cuda",
                            "test/unit", "test/usbdev"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split()
    libraries = {"preload_probe", "malloc_count", "fakeclock", "ifunc_write", "stub_libcuda",
                 "stub_libcudart"}
    wanted = set()
    for path in files:
        directory, base = os.path.split(path)
        stem, extension = os.path.splitext(base)
        if extension == ".py":
            wanted.add(os.path.join(ROOT, path))
        elif extension == ".c" and directory == "examples/harness":
            wanted.add("harness_physical")      # one program, one job to a file
        elif extension == ".c" and stem not in libraries:
            wanted.add(stem if directory in ("examples", "test/usbdev") else "test/" + stem)
    missing = sorted(wanted - listed)
    assert not missing, "add these programs to CORPUS in test/test_transparency.py: %s" % missing
