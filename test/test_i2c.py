"""I2C buses (/dev/i2c-N) as a user sees them in the trace file (NVTXSHIM_TRACE), under real,
unmodified clients: i2c-tools (i2cget, i2cset, i2ctransfer, i2cdetect) and Python's smbus
(python3-smbus), and a raw client's read() and write() after I2C_SLAVE.

No kernel here has i2c-dev: umockdev gives /dev/i2c-1 its sysfs and its device number (char
89:1, by which the library tells an I2C bus: test/i2cdev/i2c-1.umockdev) and
test/i2cdev/emui2c.c, preloaded behind the library, answers i2c-dev's ioctls with the chips it
is given. Its log of what moved on the bus is the independent account the trace is checked
against; each client's output is compared with its output without the library."""
import glob
import os
import subprocess

import pytest

from conftest import BUILD, PYTHON, ROOT, SHIM, load_trace, ranges
from childenv import clean_env

I2C = os.path.join(ROOT, "test", "i2cdev")
EMULATOR = os.path.join(BUILD, "test", "libemui2c.so")
NODE = "/dev/i2c-1"
# A temperature sensor at 0x48 (registers 0 and 1: 25.0 degrees, big-endian; 2 and 3: its
# configuration) and an output expander at 0x20.
CHIPS = "48:1900a060,20:00"
RED = "#d50000"


def need(tool, package):
    if not subprocess.run(["sh", "-c", "command -v " + tool], capture_output=True).stdout:
        pytest.skip("%s is not installed (%s: make deps installs it)" % (tool, package))


def on_the_bus(tmp_path, command, shim=True, **settings):
    """Runs the shell COMMAND with /dev/i2c-1 emulated, the library in front (SHIM) and
    SETTINGS; its result, the trace's events and the emulator's log lines."""
    need("umockdev-run", "umockdev")
    assert os.path.exists(EMULATOR), "%s is not built: run make programs" % EMULATOR
    tmp_path.mkdir(parents=True, exist_ok=True)
    log = tmp_path / "bus.log"
    trace = tmp_path / "i2c-%p.json"
    # The library first, the emulator behind it, umockdev's own preload last (make test-asan:
    # the ASan runtime before them all, NVS_TEST_PRELOAD_FIRST, as conftest.command puts it).
    preload = "%s:%s:$LD_PRELOAD" % (SHIM, EMULATOR) if shim else "%s:$LD_PRELOAD" % EMULATOR
    if shim:
        preload = "${NVS_TEST_PRELOAD_FIRST:+$NVS_TEST_PRELOAD_FIRST:}" + preload
    env = dict(EMUI2C_NODE=NODE, EMUI2C_CHIPS=CHIPS, EMUI2C_LOG=str(log),
               NVTXSHIM_TRACE=str(trace), **settings)
    result = subprocess.run(["umockdev-run", "--device", "i2c-1.umockdev", "--", "sh", "-c",
                             'LD_PRELOAD="%s" exec %s' % (preload, command)],
                            env=clean_env(env), capture_output=True, timeout=120, cwd=I2C)
    events = [e for path in sorted(glob.glob(str(tmp_path / "i2c-*.json")))
              for e in load_trace(path)]
    lines = log.read_text().splitlines() if log.exists() else []
    return result, events, lines


def i2c_ranges(events):
    return [(e["name"], e["args"].get("payload"), e["args"]["category"])
            for e in ranges(events, "i2c")]


def marks(events, domain="i2c"):
    return [e for e in events if e.get("ph") == "i" and e.get("cat") == domain]


def twice(tmp_path, command, **settings):
    """COMMAND without the library and with it: the same output and exit status; the
    second run's events and bus log."""
    plain, _, plain_bus = on_the_bus(tmp_path / "plain", command, shim=False, **settings)
    traced, events, bus = on_the_bus(tmp_path / "shim", command, **settings)
    assert (plain.returncode, plain.stdout, plain.stderr) == \
        (traced.returncode, traced.stdout, traced.stderr), (plain, traced)
    assert plain_bus == bus
    return traced, events, bus


def test_i2c_tools_transfers_are_ranges_named_by_chip_and_messages(tmp_path):
    need("i2ctransfer", "i2c-tools")
    command = ("sh -c 'i2cget -y 1 0x48 0x00 w && i2cset -y 1 0x20 0x01 0x5a && "
               "i2ctransfer -y 1 w1@0x48 0x00 r2 && i2ctransfer -y 1 w3@0x48 0x01 0x60 0xa0'")
    result, events, bus = twice(tmp_path, command)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [b"0x0019", b"0x19", b"0x00"], result.stdout
    assert bus == ["smbus 0x48 R size=3 cmd=0x00", "smbus 0x20 W size=2 cmd=0x01",
                   "rdwr 0x48 W1 0x48 R2", "rdwr 0x48 W3"], bus
    # Payload: the bytes on the bus after the address, the command byte included; a transfer
    # that read is a read, one that only wrote a write.
    assert i2c_ranges(events) == [
        ("I2C_SMBUS /dev/i2c-1 0x48 R word_data cmd=0x00", 3, "read"),
        ("I2C_SMBUS /dev/i2c-1 0x20 W byte_data cmd=0x01", 2, "write"),
        ("I2C_RDWR /dev/i2c-1 0x48 W1 R2", 3, "read"),
        ("I2C_RDWR /dev/i2c-1 0x48 W3", 3, "write")], i2c_ranges(events)
    assert not marks(events)


def test_python_smbus_and_plain_reads_and_writes_to_the_chosen_chip(tmp_path):
    if subprocess.run([PYTHON, "-c", "import smbus"], capture_output=True).returncode:
        pytest.skip("python3-smbus is not installed (make deps installs it)")
    client = ("import fcntl, os, smbus\n"
              "bus = smbus.SMBus(1)\n"
              "print(hex(bus.read_byte_data(0x48, 0x02)), hex(bus.read_word_data(0x48, 0x00)))\n"
              "bus.close()\n"
              "fd = os.open('/dev/i2c-1', os.O_RDWR)\n"
              "fcntl.ioctl(fd, 0x0703, 0x48)\n"          # I2C_SLAVE
              "os.write(fd, b'\\x00')\n"
              "print(os.read(fd, 2).hex())\n"
              "os.close(fd)\n")
    script = tmp_path / "client.py"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(client)
    result, events, bus = twice(tmp_path, "%s %s" % (PYTHON, script))
    assert result.stdout.split() == [b"0xa0", b"0x19", b"1900"], result.stdout
    assert bus == ["smbus 0x48 R size=2 cmd=0x02", "smbus 0x48 R size=3 cmd=0x00",
                   "write 0x48 1", "read 0x48 2"], bus
    assert i2c_ranges(events) == [
        ("I2C_SMBUS /dev/i2c-1 0x48 R byte_data cmd=0x02", 2, "read"),
        ("I2C_SMBUS /dev/i2c-1 0x48 R word_data cmd=0x00", 3, "read"),
        ("write /dev/i2c-1 0x48 1B", 1, "write"),
        ("read /dev/i2c-1 0x48 2B", 2, "read")], i2c_ranges(events)


def test_a_transfer_no_chip_answers_is_a_red_mark(tmp_path):
    need("i2ctransfer", "i2c-tools")
    result, events, bus = twice(tmp_path, "i2ctransfer -y 1 w1@0x51 0x00")
    assert result.returncode != 0 and b"No such device or address" in result.stderr
    assert bus == ["nack 0x51"]
    assert i2c_ranges(events) == [("I2C_RDWR /dev/i2c-1", 0, "control")]
    failed = marks(events)
    assert [(e["name"], e["args"]["color"]) for e in failed] == \
        [("I2C_RDWR /dev/i2c-1 failed: ENXIO", RED)], failed


def test_a_bus_scan_marks_every_address_that_did_not_answer(tmp_path):
    need("i2cdetect", "i2c-tools")
    result, events, bus = twice(tmp_path, "i2cdetect -y 1")
    assert result.returncode == 0 and b" 48 " in result.stdout and b" 20 " in result.stdout
    absent = [line.split()[1] for line in bus if line.startswith("nack ")]
    assert len(absent) > 100
    # One red mark per address no chip answered (the SMBus probe to the address I2C_SLAVE
    # chose), one range per probe.
    assert sorted(e["name"] for e in marks(events)) == \
        sorted("I2C_SMBUS /dev/i2c-1 %s failed: ENXIO" % address for address in absent)
    answered = [r for r in i2c_ranges(events) if r[1] != 0 or r[2] != "control"]
    assert {r[0].split()[2] for r in answered} == {"0x20", "0x48"}, answered
    assert len(i2c_ranges(events)) == len(absent) + 2


@pytest.mark.parametrize("hooks, traced", [("usb,v4l2,serial,hid", False), ("i2c", True),
                                           ("all", True), ("none", False)])
def test_nvtxshim_hooks_switches_the_i2c_calls(tmp_path, hooks, traced):
    need("i2ctransfer", "i2c-tools")
    result, events, _ = on_the_bus(tmp_path, "i2ctransfer -y 1 w1@0x48 0x00 r2",
                                   NVTXSHIM_HOOKS=hooks)
    assert result.returncode == 0 and result.stdout == b"0x19 0x00\n", result
    expected = [("I2C_RDWR /dev/i2c-1 0x48 W1 R2", 3, "read")] if traced else []
    assert i2c_ranges(events) == expected


def test_a_path_nvtxshim_devices_names_is_still_an_i2c_bus(tmp_path):
    # NVTXSHIM_DEVICES takes a path the library would not look at as a serial port; an I2C
    # node it names is told by its device number all the same.
    need("i2ctransfer", "i2c-tools")
    _, events, _ = on_the_bus(tmp_path, "i2ctransfer -y 1 w1@0x48 0x00 r2",
                              NVTXSHIM_DEVICES="/dev/i2c-*")
    assert i2c_ranges(events) == [("I2C_RDWR /dev/i2c-1 0x48 W1 R2", 3, "read")]
    assert not ranges(events, "serial")


SENSOR_LOOP = ("import smbus\n"
               "bus = smbus.SMBus(1)\n"
               "for step in range(6):\n"
               "    temperature = bus.read_word_data(0x48, 0x00)\n"   # the sensor: a frame
               "    bus.write_byte_data(0x20, 0x01, step)\n"          # the actuator
               "print('done')\n")


def test_i2c_reads_are_frames_and_the_report_has_an_i2c_column(tmp_path):
    if subprocess.run([PYTHON, "-c", "import smbus"], capture_output=True).returncode:
        pytest.skip("python3-smbus is not installed (make deps installs it)")
    script = tmp_path / "loop.py"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(SENSOR_LOOP)
    result, events, bus = on_the_bus(tmp_path / "run", "%s %s" % (PYTHON, script),
                                     NVTXSHIM_FRAME="i2c.in:/dev/i2c-*")
    assert result.returncode == 0 and result.stdout == b"done\n", result
    frames = [e for e in ranges(events, "nvtxshim") if e["name"].startswith("frame ")]
    assert [e["name"] for e in frames] == ["frame %d" % n for n in range(1, 7)]
    assert [r[0] for r in i2c_ranges(events)] == \
        ["I2C_SMBUS /dev/i2c-1 0x48 R word_data cmd=0x00",
         "I2C_SMBUS /dev/i2c-1 0x20 W byte_data cmd=0x01"] * 6
    # Each frame begins with a read of the sensor.
    reads = [e for e in ranges(events, "i2c") if e["args"]["category"] == "read"]
    assert all(r["ts"] <= f["ts"] <= r["ts"] + r["dur"] for r, f in zip(reads, frames))
    # nvtxshim report: the frames' time in I2C calls is a column of its own.
    trace = glob.glob(str(tmp_path / "run" / "i2c-*.json"))
    report = subprocess.run([os.path.join(BUILD, "nvtxshim"), "report", trace[0]],
                            capture_output=True, text=True, timeout=60)
    assert report.returncode == 0, report.stderr
    lines = report.stdout.splitlines()
    heading = next(n for n, line in enumerate(lines) if line.startswith("== Per frame"))
    assert lines[heading].endswith("time in I2C and the rest"), lines[heading]
    assert lines[heading + 1].split() == ["total", "i2c", "rest"], report.stdout
    assert lines[heading + 2].split()[:3] == ["mean", "of", "6"], report.stdout
