"""The aarch64 build (make ARCH=aarch64, mk/aarch64.mk: an NVIDIA Jetson's architecture),
cross-built on x86-64 and run under qemu-aarch64's user-mode emulation: the C unit tests; the
recorder's clock on the generic timer (cntvct_el0); and a C rig recorded by the aarch64 library
on the emulated USB camera (the arm64 libusb and umockdev preload library, in front of the
x86-64 build/emucam's device) and on a pty as a serial port, in both trace forms, which the
x86-64 nvtxshim report reads with the rig's own tally and with the figures of an x86-64 run of
the same rig.

make test builds build-aarch64 first where the cross compiler is (make deps-aarch64 installs
it); without the tools these tests skip, saying why. They run the emulator without -L
/usr/aarch64-linux-gnu: the arm64 glibc of multiarch (libc6:arm64, the host's own version)
serves, and a test_capture run on the cross toolchain's older glibc there hung."""
import collections
import json
import os
import platform
import re
import shutil
import subprocess
import zipfile

import pytest

from conftest import ROOT, load_trace, program, ranges
from childenv import clean_env
from pftracefile import check
from test_devices import Peer
from test_wheel import same_wheel_from_a_clean_clone

AARCH64 = os.path.join(ROOT, os.environ.get("NVS_TEST_AARCH64_BUILD", "build-aarch64"))
QEMU = shutil.which("qemu-aarch64-static") or shutil.which("qemu-aarch64")
CROSS_CC = shutil.which("aarch64-linux-gnu-gcc")
# scripts/deps-aarch64.sh takes it from Debian's arm64 umockdev package.
UMOCKDEV_PRELOAD = "/usr/local/lib/nvtxshim-aarch64/libumockdev-preload.so.0"
# What mk/aarch64.mk's aarch64-programs needs besides the compiler (make deps-aarch64).
ARM64_LIBRARIES = ["/usr/lib/aarch64-linux-gnu/" + name
                   for name in ("libusb-1.0.so", "libsqlite3.so", "libz.so")] + ["/lib/ld-linux-aarch64.so.1"]
FRAMES = 6
LINES = 5


def why_not():
    if platform.machine() != "x86_64":
        return "this machine is %s: the whole suite tests its native build" % platform.machine()
    if not QEMU or not CROSS_CC:
        return "no %s (make deps-aarch64 installs gcc-aarch64-linux-gnu and qemu-user-static)" % (
            "qemu-aarch64-static" if not QEMU else "aarch64-linux-gnu-gcc")
    missing = [path for path in ARM64_LIBRARIES if not os.path.exists(path)]
    if missing:
        return "no %s (make deps-aarch64 installs the arm64 libraries)" % " ".join(missing)
    return None


pytestmark = pytest.mark.skipif(why_not() is not None, reason=why_not() or "")


def aarch64(name):
    path = os.path.join(AARCH64, name)
    assert os.path.exists(path), "%s is not built: make ARCH=aarch64 programs (make test does)" % path
    return path


def emulated(argv, env=None, preload=(), prefix=None, device=False, timeout=120):
    """ARGV, an aarch64 program, under qemu, with PRELOAD (aarch64 libraries) as the guest's
    LD_PRELOAD; PREFIX, a directory whose files stand in for the host's of the same path (qemu's
    -L); with DEVICE, inside the x86-64 build/emucam, whose umockdev device the guest's arm64
    umockdev preload library reaches over its socket."""
    command = [QEMU] + (["-L", str(prefix)] if prefix else [])
    if preload:
        command += ["-E", "LD_PRELOAD=" + ":".join(preload)]
    command += [aarch64(argv[0])] + [str(a) for a in argv[1:]]
    if device:
        command = [program("emucam"), "--"] + command
    return subprocess.run(command, env=clean_env(env), capture_output=True, text=True, timeout=timeout)


def is_aarch64_elf(path):
    with open(path, "rb") as f:
        header = f.read(20)
    return header[:4] == b"\x7fELF" and int.from_bytes(header[18:20], "little") == 183  # EM_AARCH64


def test_the_library_and_the_command_are_aarch64():
    assert is_aarch64_elf(aarch64("libnvtxshim.so")) and is_aarch64_elf(aarch64("nvtxshim"))
    result = emulated(["nvtxshim", "--version"])
    assert result.returncode == 0 and result.stdout.startswith("nvtxshim "), result


@pytest.mark.parametrize("name", ["test_config", "test_error_names", "test_error_names_before_2_32",
                                  "test_capture", "test_trace_json", "test_cli_trace_json",
                                  "test_figures"])
def test_unit_tests_pass_under_qemu(name):
    result = emulated(["test/" + name])
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    found = re.search(r"(\d+) passed, (\d+) failed$", summary)
    assert result.returncode == 0 and found and int(found.group(1)) > 0 and found.group(2) == "0", (
        result.stdout[-3000:], result.stderr[-2000:])


# ---- the clock: the generic timer ---------------------------------------------------------

def clock_figures(stdout):
    found = re.search(r"reads (\d+) from the line (\d+); early (\d+) ns, late (\d+) ns; "
                      r"counter step (\d+) ns", stdout)
    assert found, stdout
    return [int(v) for v in found.groups()]


def arch_counter_prefix(tmp_path):
    """A qemu -L prefix in which the clocksource file says what an aarch64 kernel that keeps
    CLOCK_MONOTONIC with the generic timer says (the host's says "tsc")."""
    prefix = tmp_path / "prefix"
    source = prefix / "sys/devices/system/clocksource/clocksource0/current_clocksource"
    source.parent.mkdir(parents=True)
    source.write_text("arch_sys_counter\n")
    return prefix


def test_the_clock_reads_the_generic_timer_calibrated_against_clock_monotonic(tmp_path):
    # test/unit/test_clock.c: every read between two clock_gettime reads around it, within
    # test_clock.py's 200 ns and four of the counter's steps (qemu's counter follows the host's
    # clock by microseconds: a line is no finer than its counter), never back.
    result = emulated(["test/test_clock"], prefix=arch_counter_prefix(tmp_path))
    assert result.returncode == 0 and result.stdout.endswith("clock: 4 passed, 0 failed\n"), result
    reads, fast, _, _, step = clock_figures(result.stdout)
    assert fast > reads / 2 and step > 0


def test_the_clock_keeps_to_clock_gettime_where_the_kernel_does_not_use_the_counter():
    # The host's clocksource file ("tsc") seen from the aarch64 program: no line.
    result = emulated(["test/test_clock", "50"])
    assert "clock: 3 passed, 1 failed" in result.stdout, result
    reads, fast, early, late, _ = clock_figures(result.stdout)
    assert reads > 0 and fast == 0 and early == late == 0


def test_the_same_clock_test_passes_on_the_tsc():
    result = subprocess.run([program("test/test_clock")], env=clean_env(), capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.endswith("clock: 4 passed, 0 failed\n"), result


# ---- a rig recorded on aarch64, read on x86-64 ------------------------------------------------

def tally(stdout):
    """{name: (calls, bytes)} from rig_tally's lines."""
    figures = {}
    for line in stdout.splitlines():
        name, calls, moved = line.rsplit(" ", 2)
        figures[name] = (int(calls), int(moved))
    return figures


def trace_figures(path):
    """[(domain, name, payload)] of the trace's ranges, in either form."""
    if str(path).endswith(".pftrace"):
        return [(r["category"], r["name"], r["args"].get("payload", 0))
                for r in check(path)["ranges"]]
    return [(e["cat"], e["name"], e["args"].get("payload", 0)) for e in ranges(load_trace(path, complete=True))]


def traced(figures, prefix):
    """(calls, bytes) of the ranges whose name starts with PREFIX (a word of it)."""
    chosen = [payload for _, name, payload in figures if name == prefix or name.startswith(prefix + " ")]
    return len(chosen), sum(chosen)


def report_counts(path):
    """{(domain, name): count} from the x86-64 nvtxshim report --json of PATH."""
    result = subprocess.run([program("nvtxshim"), "report", "--json", str(path)], env=clean_env(),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return {(n["domain"], n["name"]): n["count"] for n in json.loads(result.stdout)["names"]}


def usb_counts(rig):
    """What report's table must count for the rig's usb calls: by function."""
    counts = collections.Counter()
    for name, (calls, _) in rig.items():
        counts[("usb", name.split()[0])] += calls
    return dict(counts)


@pytest.mark.parametrize("suffix", [".json", ".pftrace"])
def test_a_rig_on_the_emulated_camera_recorded_on_aarch64_reads_as_on_x86_64(tmp_path, suffix):
    if not os.path.exists(UMOCKDEV_PRELOAD):
        pytest.skip("no %s, umockdev's arm64 preload library (make deps-aarch64)" % UMOCKDEV_PRELOAD)
    trace = tmp_path / ("arm" + suffix)
    result = emulated(["test/rig_tally", "usb", FRAMES], env={"NVTXSHIM_TRACE": str(trace)},
                      preload=[UMOCKDEV_PRELOAD, aarch64("libnvtxshim.so")], device=True)
    assert result.returncode == 0 and result.stderr == "", result
    rig = tally(result.stdout)
    assert rig["libusb_bulk_transfer ep=0x81 IN"] == (FRAMES, FRAMES * 64 * 48 * 3)
    figures = trace_figures(trace)
    for name, expected in rig.items():
        assert traced(figures, name) == expected, (name, figures)
    counts = report_counts(trace)
    assert {key: counts.get(key) for key in usb_counts(rig)} == usb_counts(rig)
    # The same rig on x86-64, with the x86-64 library: the same report counts.
    native_trace = tmp_path / ("x86" + suffix)
    native = subprocess.run(
        [program("emucam"), "--", "sh", "-c", 'LD_PRELOAD="$LD_PRELOAD:$0" exec "$@"',
         os.path.join(os.path.dirname(program("nvtxshim")), "libnvtxshim.so"),
         program("test/rig_tally"), "usb", str(FRAMES)],
        env=clean_env({"NVTXSHIM_TRACE": str(native_trace)}), capture_output=True, text=True, timeout=120)
    assert native.returncode == 0 and tally(native.stdout) == rig, native
    assert report_counts(native_trace) == counts


@pytest.mark.parametrize("suffix", [".json", ".pftrace"])
def test_a_rig_on_a_pty_serial_port_recorded_on_aarch64(tmp_path, suffix):
    peer = Peer(LINES)
    trace = tmp_path / ("serial" + suffix)
    try:
        result = emulated(["test/rig_tally", "serial", peer.path, LINES],
                          env={"NVTXSHIM_TRACE": str(trace), "NVTXSHIM_DEVICES": peer.path},
                          preload=[aarch64("libnvtxshim.so")])
    finally:
        peer.close()
    assert result.returncode == 0 and result.stderr == "", result
    rig = tally(result.stdout)
    assert rig["write"][1] == len(peer.received) and rig["read"][1] == peer.sent
    figures = [f for f in trace_figures(trace) if f[0] == "serial"]
    for call, expected in rig.items():
        assert traced(figures, "%s %s" % (call, peer.path)) == expected, (call, figures)
    counts = report_counts(trace)
    serial = {name: count for (domain, name), count in counts.items() if domain == "serial"}
    assert sum(serial.values()) == rig["write"][0] + rig["read"][0], counts


# ---- the aarch64 wheel ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """make wheel ARCH=aarch64's wheel (scripts/wheel.sh with NVS_WHEEL_ARCH=aarch64), built here."""
    where = tmp_path_factory.mktemp("wheel_aarch64")
    built = subprocess.run(["bash", os.path.join(ROOT, "scripts", "wheel.sh"), str(where / "dist")],
                           env=clean_env({"NVS_WHEEL_ARCH": "aarch64"}), capture_output=True, text=True,
                           timeout=900)
    assert built.returncode == 0, built.stderr[-4000:] + built.stdout[-2000:]
    tag = [line for line in built.stdout.splitlines() if line.startswith("wheel: tag ")]
    assert tag == ['wheel: tag "manylinux_2_28_aarch64"'], built.stdout
    path = built.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r".*/nvtxshim-[0-9.]+-py3-none-manylinux_2_28_aarch64\.whl", path), path
    with zipfile.ZipFile(path) as archive:      # with the files' modes: the command's x bit
        for member in archive.infolist():
            archive.extract(member, where / "unpacked")
            os.chmod(where / "unpacked" / member.filename, (member.external_attr >> 16) & 0o777)
    return path, where / "unpacked" / "nvtxshim" / "_native"


def test_the_aarch64_wheel_holds_aarch64_binaries_for_glibc_2_28(wheel):
    from test_wheel import glibc_needs
    _, native = wheel
    glibc = {"libc.so.6", "libdl.so.2", "libpthread.so.0", "libm.so.6", "ld-linux-aarch64.so.1"}
    for name in ("libnvtxshim.so", "nvtxshim"):
        assert is_aarch64_elf(native / name), name
        needed, newest = glibc_needs(native / name)
        assert "libc.so.6" in needed and set(needed) <= glibc, (name, needed)
        assert newest <= (2, 28), (name, newest)


def test_the_aarch64_wheels_command_and_library_run_under_qemu(wheel, tmp_path):
    _, native = wheel
    version = subprocess.run([QEMU, str(native / "nvtxshim"), "--version"], env=clean_env(),
                             capture_output=True, text=True, timeout=60)
    with open(os.path.join(ROOT, "VERSION")) as f:
        assert version.returncode == 0 and version.stdout == "nvtxshim %s\n" % f.read().strip(), version
    # The wheel's library records the serial rig; the wheel's command reports it as x86-64's does.
    peer = Peer(LINES)
    trace = tmp_path / "serial.json"
    try:
        result = emulated(["test/rig_tally", "serial", peer.path, LINES],
                          env={"NVTXSHIM_TRACE": str(trace), "NVTXSHIM_DEVICES": peer.path},
                          preload=[str(native / "libnvtxshim.so")])
    finally:
        peer.close()
    assert result.returncode == 0 and result.stderr == "", result
    report = subprocess.run([QEMU, str(native / "nvtxshim"), "report", "--json", str(trace)],
                            env=clean_env(), capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr
    counts = {(n["domain"], n["name"]): n["count"] for n in json.loads(report.stdout)["names"]}
    rig = tally(result.stdout)
    assert sum(c for (domain, _), c in counts.items() if domain == "serial") == \
        rig["write"][0] + rig["read"][0]
    assert counts == report_counts(trace)


def test_a_clean_clone_elsewhere_makes_the_same_aarch64_wheel(wheel, tmp_path):
    """Reproducible as the x86-64 wheel is (test_wheel.py): a clone of the same commit at another
    path gives the same bytes; where the working tree differs from its commit there is nothing to
    compare."""
    path, _ = wheel
    same_wheel_from_a_clean_clone(path, tmp_path, clean_env({
        "NVS_WHEEL_ARCH": "aarch64", "NVS_WHEEL_ENV": os.path.join(ROOT, "build", "wheelenv")}))
