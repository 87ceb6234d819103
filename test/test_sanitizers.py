"""ThreadSanitizer and valgrind memcheck on the library.

- TSan: the library and test/programs/stress.c built with -fsanitize=thread
  (build/tsan, by mk/sanitize.mk): several threads making synchronous libusb
  calls, CUDA copies and X11 calls while asynchronous transfers complete on
  libusb's event thread, with the recorder on and frames counted. No report, the
  program's output as without the shim, and every call in the trace file.
- valgrind memcheck on the main programs with the (default) shim: no error and
  no definite leak.

(make test-asan runs the whole suite under ASan+UBSan; this file is left to the
default build.)"""
import collections
import os

import pytest

from conftest import BUILD, ROOT, STUB, load_trace, names, program, ranges, run

pytestmark = pytest.mark.skipif(
    os.environ.get("NVS_TEST_BUILD", "build") != "build",
    reason="runs against the default build, with sanitizer variants of its own")

SUPPRESSIONS = os.path.join(ROOT, "test", "sanitizers")
TSAN_SHIM = os.path.join(BUILD, "tsan", "libnvtxshim.so")
APPEND = 'LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$NVS_SANITIZER_SHIM" exec "$@"'


# Frames on every bulk IN (from any thread, sync or completed); or on the actor's
# commands, with a capture window whose CUDA side (cuProfilerStart/Stop) waits for
# a copy on a thread with a context while the window opens on a USB thread.
MODES = {
    "frames": {"NVTXSHIM_FRAME": "usb.in:0x81"},
    "capture": {"NVTXSHIM_FRAME": "call:libusb_control_transfer",
                "NVTXSHIM_CAPTURE": "frames:20+40", "NVTXSHIM_CAPTURE_VIA": "both"},
}


WORKERS, READS, STATUSES, COPIES, X11_CALLS, QUEUED = 6, 50, 50, 40, 25, 150
FRAMES = WORKERS * READS + QUEUED


def stress_under_tsan(make_device, xserver, trace, mode):
    """The stress program built with TSan, the TSan shim recording to TRACE in MODE: no report,
    its output as without the shim; the plain run's output."""
    options = ["--workers", str(WORKERS), "--reads", str(READS), "--statuses", str(STATUSES),
               "--copies", str(COPIES), "--x11", str(X11_CALLS), "--async", str(QUEUED),
               "--queue", "6"]
    device = make_device(frames=FRAMES)
    env = {"DISPLAY": xserver.display, "LD_LIBRARY_PATH": STUB}
    plain = run([program("test/stress")] + options, env=env, shim=False, device=device)
    assert plain.returncode == 0, plain.stderr
    tsan = dict(env, NVS_SANITIZER_SHIM=TSAN_SHIM, NVTXSHIM_TRACE=str(trace), **MODES[mode],
                TSAN_OPTIONS="halt_on_error=1:exitcode=66:second_deadlock_stack=1:suppressions="
                             + os.path.join(SUPPRESSIONS, "tsan.supp"))
    result = run(["sh", "-c", APPEND, "sh", program("tsan/test/stress")] + options, env=tsan,
                 shim=False, device=device, timeout=300)
    report = result.stderr.decode(errors="replace")
    # A crash with no report at all (139) is the runtime dying as it starts: it
    # resolves its interceptors through dlsym, which is the shim's.
    if "ThreadSanitizer" in report or result.returncode != 0:
        pytest.fail("exit status %d\n%s" % (result.returncode, report[-12000:]), pytrace=False)
    assert result.stdout == plain.stdout
    assert b"cuda: yes" in plain.stdout and b"x11: yes" in plain.stdout
    return plain


@pytest.mark.parametrize("mode", sorted(MODES))
def test_stress_under_tsan_is_clean_and_the_trace_complete(make_device, xserver, tmp_path, mode):
    workers, reads, statuses, x11_calls, queued = WORKERS, READS, STATUSES, X11_CALLS, QUEUED
    frames = FRAMES
    trace = tmp_path / "stress.json"
    plain = stress_under_tsan(make_device, xserver, trace, mode)

    events = load_trace(trace)
    # One frame per bulk IN on 0x81, whichever thread read it or completed it; or
    # one per command (as many).
    frame_ranges = [n for n in names(events, "nvtxshim") if n.startswith("frame ")]
    assert sorted(frame_ranges) == sorted("frame %d" % n for n in range(1, frames + 1))
    assert names(events, "nvtxshim").count("capture") == (mode == "capture")
    usb = collections.Counter(name.split(" ")[0] for name in names(events, "usb"))
    assert usb["libusb_control_transfer"] == frames
    assert usb["libusb_bulk_transfer"] == frames + workers * reads  # commands + sync reads
    assert usb["libusb_interrupt_transfer"] == workers * statuses
    assert usb["libusb_submit_transfer"] == usb["libusb_transfer_cb_fn"] == queued
    controls = {n for n in names(events, "usb") if n.startswith("libusb_control_transfer")}
    assert len(controls) == frames  # a new name per command, registered while others run
    x11 = collections.Counter(names(events, "x11"))
    # XCloseDisplay (not hooked) makes one XSync of its own per connection.
    assert x11["XFlush"] == workers * x11_calls and x11["XSync"] == workers * (x11_calls + 1)
    cuda_copies = int(plain.stdout.split(b"cuda: yes, ")[1].split(b" ")[0])
    assert len(ranges(events, "cuda")) == cuda_copies
    usb_threads = {e["tid"] for e in ranges(events, "usb")}
    assert len(usb_threads) >= workers + 2  # the workers, the actor, the event thread


def test_the_shim_loads_into_a_program_built_with_a_sanitizer(make_device, tmp_path):
    # The usual shim (not instrumented) in front of a user's TSan-built program:
    # the runtime resolves its interceptors through dlsym while it starts, and
    # dlsym is the shim's.
    device = make_device(frames=8)
    argv = [program("tsan/test/stress"), "--workers", "2", "--reads", "2", "--async", "4",
            "--copies", "0", "--x11", "0"]
    env = {"TSAN_OPTIONS": "halt_on_error=1:exitcode=66:suppressions="
                           + os.path.join(SUPPRESSIONS, "tsan-uninstrumented-shim.supp")}
    plain = run(argv, env=env, shim=False, device=device)
    assert plain.returncode == 0, plain.stderr
    shimmed = run(argv, env=dict(env, NVTXSHIM_TRACE=str(tmp_path / "t.json")), device=device)
    assert (shimmed.returncode, shimmed.stdout) == (0, plain.stdout), shimmed.stderr[-4000:]
    assert len(names(load_trace(tmp_path / "t.json"), "usb")) > 0


def memcheck(argv, tmp_path, env=None, device=None):
    """ARGV under valgrind memcheck with the shim and the recorder: (plain, checked)."""
    plain = run(argv, env=env, shim=False, device=device)
    trace = tmp_path / "trace.json"
    valgrind = ["valgrind", "-q", "--error-exitcode=99", "--leak-check=full",
                "--errors-for-leak-kinds=definite", "--track-origins=yes",
                "--suppressions=" + os.path.join(SUPPRESSIONS, "valgrind.supp")]
    checked = run(valgrind + argv, env=dict(env or {}, NVTXSHIM_TRACE=str(trace)),
                  device=device, timeout=300)
    report = checked.stderr.decode(errors="replace")
    assert checked.returncode == plain.returncode, report[-6000:]
    assert "==" not in report, report[-6000:]  # memcheck's lines all start with ==PID==
    # The harness's last line (fps) depends on timing: the lines before it do not.
    assert checked.stdout.split(b"\nfps=")[0] == plain.stdout.split(b"\nfps=")[0]
    return plain, load_trace(trace)


FRAME_ON_ACT = {"NVTXSHIM_FRAME": "call:libusb_control_transfer", "NVTXSHIM_FRAME_BUDGET": "1ms"}


@pytest.mark.parametrize("mode", [[], ["--async", "--threads", "--use_gui=1"]],
                         ids=["sync", "async-threads-gui"])
def test_memcheck_the_harness(make_device, xserver, tmp_path, mode):
    device = make_device(frames=6, extra=("--width", "64", "--height", "48"))
    argv = [program("harness_physical"), "--frames", "6", "--width", "64", "--height", "48"] + mode
    env = dict(FRAME_ON_ACT, LD_LIBRARY_PATH=STUB, DISPLAY=xserver.display)
    plain, events = memcheck(argv, tmp_path, env, device)
    assert plain.returncode == 0
    assert sorted(names(events, "nvtxshim")) == ["frame %d" % n for n in range(1, 7)]
    assert ranges(events, "cuda") and ranges(events, "usb")
    assert bool(ranges(events, "x11")) == ("--use_gui=1" in mode)


def test_memcheck_usb_capture_async(make_device, tmp_path):
    device = make_device(frames=5)
    plain, events = memcheck([program("usb_capture"), "--frames", "5", "--async"], tmp_path,
                             {"NVTXSHIM_FRAME": "usb.in:0x81"}, device)
    assert plain.returncode == 0
    assert len(names(events, "nvtxshim")) == 5


def test_memcheck_the_x11_program(xserver, tmp_path):
    plain, events = memcheck([program("test/x11_draw"), "3", "--shm"], tmp_path,
                             {"DISPLAY": xserver.display, "NVTXSHIM_FRAME": "x11.flush"})
    assert plain.returncode == 0
    assert collections.Counter(names(events, "x11"))["XShmPutImage 160x120"] == 3


def test_memcheck_cuda_copies_on_the_stand_in_driver(tmp_path):
    plain, events = memcheck([program("test/cuda_copies"), "loader"], tmp_path,
                             {"LD_LIBRARY_PATH": STUB, "NVTXSHIM_FRAME": "cuda.htod"})
    assert plain.returncode == 0
    assert len(ranges(events, "cuda")) == 12   # 11 copies and a cuStreamSynchronize


def test_the_calls_capture_windows_two_threads_under_tsan():
    """test/unit/test_capture.c's two threads meeting at the capture state (the window's first
    call held at the lock while another thread makes its last), built with TSan: no report."""
    env = {"TSAN_OPTIONS": "halt_on_error=1:exitcode=66"}
    result = run([program("tsan/test/test_capture")], env=env, shim=False)
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    assert result.stdout.endswith(b" 0 failed\n") and b"ThreadSanitizer" not in result.stderr


def test_stress_under_tsan_writing_the_binary_form(make_device, xserver, tmp_path):
    # The protobuf encoder's shared state (shapes made by the first thread that needs one,
    # interned ids from one counter, categories named while others record) under TSan, and
    # the file checked packet by packet against Perfetto's schema (test/pftrace_check.py).
    from test_trace_pftrace import check
    workers, reads, statuses, frames = WORKERS, READS, STATUSES, FRAMES
    trace = tmp_path / "stress.pftrace"
    stress_under_tsan(make_device, xserver, trace, "frames")
    summary = check(trace)
    by_domain = collections.Counter((r["category"], r["name"].split(" ")[0]) for r in summary["ranges"])
    assert by_domain[("usb", "libusb_control_transfer")] == frames
    assert by_domain[("usb", "libusb_bulk_transfer")] == frames + workers * reads
    assert by_domain[("usb", "libusb_interrupt_transfer")] == workers * statuses
    frame_names = sorted(r["name"] for r in summary["ranges"] if r["category"] == "nvtxshim"
                         and r["name"].startswith("frame "))
    assert frame_names == sorted("frame %d" % n for n in range(1, frames + 1))
