"""The kernel probe (NVTXSHIM_KERNEL=on, libbpf): per-frame off-CPU figures of the
threads making hooked calls, long intervals as ranges, and a clean refusal.
BPF needs root (or CAP_BPF+CAP_PERFMON): these run as root, as make test does here
and on CI."""
import os
import re
import shutil

import pytest

from conftest import SHIM, STUB, load_trace, program, ranges, run
from nsys import under_nsys

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="the kernel probe needs root"),
    pytest.mark.skipif(not os.path.exists("/sys/kernel/btf/vmlinux"),
                       reason="this kernel has no BTF: the library is built without the probe"),
]

ON_ACT = {"NVTXSHIM_FRAME": "call:libusb_control_transfer"}
FIGURES = ("offcpu_runnable_ns", "offcpu_blocked_ns", "offcpu_preemptions", "offcpu_voluntary",
           "offcpu_migrations", "offcpu_faults")


def probe_built():
    with open(SHIM, "rb") as f:
        return b"kernel probe on:" in f.read()


def frames_of(events):
    frames = [e for e in ranges(events, "nvtxshim") if e["name"].startswith("frame ")]
    return sorted(frames, key=lambda e: int(e["name"].split()[1]))


def traced(device, argv, tmp_path, env=None, label="k"):
    trace = tmp_path / ("%s.json" % label)
    full = dict(ON_ACT, NVTXSHIM_KERNEL="on", NVTXSHIM_TRACE=str(trace), **(env or {}))
    result = run(argv, env=full, device=device)
    return result, load_trace(trace)


@pytest.fixture(autouse=True)
def built_with_the_probe():
    assert probe_built(), "make built the library without the kernel probe (make deps installs libbpf, bpftool, clang)"


class Inside:
    """DEVICE's runs, each started by PREFIX (a command that runs the rest: unshare, say)."""

    def __init__(self, device, prefix):
        self.device, self.prefix = device, prefix

    def wrap(self, argv):
        return self.prefix + self.device.wrap(argv)


def sleeping_frames_until_enough(make_device, tmp_path, prefix=None, label="k"):
    """Runs frame_loop (8 frames, each sleeping 5 ms) until 8 frames were seen whole off
    CPU, 20 runs at most, and checks what holds for every frame at any load.

    A frame that sleeps 5 ms spends at least that off CPU, blocked. Not always seen so: a
    thread preempted between arming the sleep's timer and going to sleep may run again only
    after the timer expired (the time was runnable); on a virtual machine the hypervisor can
    take the CPU in that window (steal time, which the guest kernel sees neither as on nor
    off CPU), so the sleep never blocks; and a kernel may leave out the switches of a task it
    hides from tracing (a VM's agent: the probe counts those and says so at exit), and with
    them the sleep's wake-up. What holds always: a frame has the one thread that made calls
    in it, its mark, and no more blocked time than it lasted (a frame's figures are its own,
    not the time before it)."""
    whole = ranged = 0
    for attempt in range(20):
        device = make_device(frames=8)
        if prefix:
            device = Inside(device, prefix)
        result, events = traced(device, [program("test/frame_loop"), "8", "--sleep-us", "5000"],
                                tmp_path, label="%s%d" % (label, attempt))
        assert result.returncode == 0, result.stderr
        frames = frames_of(events)
        assert len(frames) == 8
        for frame in frames:
            figures = frame["args"]
            assert figures["offcpu_threads"] == 1, frame
            # The figures are read a few microseconds after the range's times: 1 ms of slack.
            assert figures["offcpu_blocked_ns"] <= frame["dur"] * 1000 + 1000000, frame
            if figures["offcpu_blocked_ns"] >= 5000000:
                assert figures["offcpu_voluntary"] >= 1, frame
                whole += 1
        # A sleep seen whole is longer than the 1 ms threshold: a range in domain kernel
        # (other waits over 1 ms, opening the device say, may be there too), from the switch
        # out, a little after nanosleep began, to the timer's wake-up, due 5 ms after it
        # began: a hair under 5 ms at worst.
        ranged += sum(1 for e in ranges(events, "kernel")
                      if e["name"] == "off CPU: blocked" and e["dur"] >= 4900)
        marks = [e["name"] for e in events if e.get("ph") == "i" and e.get("cat") == "kernel"]
        assert len(marks) == 8 and all(re.match(
            r"frame \d+: runnable [\d.]+ ms \(\d+ preemptions?\), blocked [\d.]+ ms, \d+ faults?", m)
            for m in marks), marks
        if whole >= 8 and ranged >= 8:
            break
    assert whole >= 8 and ranged >= 8, \
        "in 20 runs only %d frames were seen asleep whole, %d sleeps as ranges" % (whole, ranged)


def test_a_frame_that_sleeps_shows_at_least_that_much_blocked(make_device, tmp_path):
    sleeping_frames_until_enough(make_device, tmp_path)


@pytest.mark.skipif(not shutil.which("unshare"), reason="no unshare (util-linux)")
def test_a_program_in_its_own_pid_namespace_gets_its_own_figures(make_device, tmp_path):
    # In a container (a pid namespace of its own) the program's thread ids are not the
    # kernel's: the probe keys its threads by the ids the program sees, in its namespace. The
    # device and the program run under a shell, as a container's programs run under its init
    # (LeakSanitizer, in make test's ASan half, cannot stop the world of a namespace's init).
    sleeping_frames_until_enough(
        make_device, tmp_path, label="ns",
        prefix=["unshare", "--pid", "--fork", "--mount-proc", "--", "sh", "-c", '"$@"; exit $?', "sh"])


def test_a_loop_sharing_its_cpu_with_a_busy_thread_waits_runnable(make_device, tmp_path):
    device = make_device(frames=10)
    result, events = traced(device, [program("test/frame_loop"), "10", "--compete"], tmp_path)
    assert result.returncode == 0, result.stderr
    frames = frames_of(events)
    assert len(frames) == 10
    runnable = [f["args"]["offcpu_runnable_ns"] for f in frames]
    preempted = [f["args"]["offcpu_preemptions"] for f in frames]
    # Each frame spends CPU on a CPU the busy thread also wants until it has been
    # preempted (the program watches its own involuntary switches).
    assert sum(1 for r, p in zip(runnable, preempted) if r > 0 and p > 0) >= len(frames) // 2, (
        runnable, preempted)
    assert any(e["name"] == "off CPU: runnable (waiting for a CPU)" for e in ranges(events, "kernel"))


def test_the_harness_with_the_probe_has_figures_on_every_frame_and_the_same_output(make_device, tmp_path):
    device = make_device(frames=12)
    argv = [program("harness_physical"), "--frames", "12", "--async", "--threads"]
    env = {"LD_LIBRARY_PATH": STUB}
    plain = run(argv, env=env, shim=False, device=device)
    result, events = traced(device, argv, tmp_path, env=env)
    assert plain.stdout.splitlines()[:2] == result.stdout.splitlines()[:2]
    assert result.returncode == plain.returncode == 0
    lines = result.stderr.decode().splitlines()
    assert lines[0].startswith("nvtxshim: kernel probe on: off-CPU time")
    assert re.match(r"nvtxshim: kernel: worst frames by time off CPU: frame \d+ [\d.]+ ms", lines[-1])
    frames = frames_of(events)
    assert len(frames) == 12 and all(set(FIGURES) <= set(f["args"]) for f in frames)
    # The capture thread (USB) and the main thread (inference) both make hooked calls.
    assert max(f["args"]["offcpu_threads"] for f in frames) >= 2


def test_under_nsys_each_frame_gets_a_kernel_mark(make_device, tmp_path):
    device = make_device(frames=6)
    result, events, _ = under_nsys(tmp_path, device, [program("test/frame_loop"), "6", "--sleep-us", "2000"],
                                   dict(ON_ACT, NVTXSHIM_KERNEL="on"))
    marks = sorted(e[2] for e in events if e[0] == 34 and e[1] == "kernel")
    assert len(marks) == 6 and all(m.startswith("frame ") for m in marks), marks


@pytest.mark.skipif(not shutil.which("setpriv"), reason="setpriv (util-linux) is not installed")
def test_without_the_capabilities_one_line_and_the_program_runs_on(make_device, tmp_path):
    device = make_device(frames=4)
    argv = [program("test/frame_loop"), "4"]
    plain = run(argv, shim=False, device=device)
    # Root without any capability: BPF is refused.
    dropped = ["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--"] + argv
    result = run(dropped, env=dict(ON_ACT, NVTXSHIM_KERNEL="on"), device=device)
    assert (result.stdout, result.returncode) == (plain.stdout, plain.returncode)
    assert result.stderr.decode().splitlines() == [
        "nvtxshim: NVTXSHIM_KERNEL=on: needs root, or CAP_BPF and CAP_PERFMON; the kernel probe stays off"]


def test_without_libbpf_one_line_and_the_program_runs_on(make_device, tmp_path):
    # The library does not link libbpf: it opens it when NVTXSHIM_KERNEL=on asks. Here
    # libbpf.so.1 is made unloadable (an empty file bound over it in a mount namespace of
    # this run alone): one line says so, and the program runs as without the shim.
    found = re.search(r"libbpf\.so\.1 \(.*\) => (\S+)",
                      __import__("subprocess").run(["ldconfig", "-p"], capture_output=True,
                                                   text=True).stdout)
    if not found or not shutil.which("unshare"):
        pytest.skip("no libbpf.so.1 in ld.so.cache, or no unshare")
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    device = make_device(frames=3)
    argv = ["unshare", "-m", "sh", "-c", 'mount --bind "$0" "$1" && shift && exec "$@"',
            str(empty), os.path.realpath(found.group(1)), program("test/frame_loop"), "3"]
    plain = run(argv, shim=False, device=device)
    result = run(argv, env=dict(ON_ACT, NVTXSHIM_KERNEL="on"), device=device)
    assert (result.stdout, result.returncode) == (plain.stdout, plain.returncode)
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nvtxshim: NVTXSHIM_KERNEL=on: ") and \
        lines[0].endswith("; the kernel probe stays off"), lines
