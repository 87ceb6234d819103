"""The emulated camera (build/emucam, test/usbdev/README.md) as real programs see a full-speed
USB device: usbutils (lsusb, usb-devices), python3-usb1 with two handles and transfers in
flight on both under valgrind, sigrok-cli's scan, fxload's firmware download, and usbfs's
ioctls straight from Python (test/programs/usbfs_ioctls.py). Each program runs unmodified,
once without and once with the shim appended to LD_PRELOAD: the two runs must print the same
bytes and exit the same way, and what they print must be what the device is."""
import os
import re
import shutil

import pytest

from conftest import PYTHON, ROOT, load_trace, ranges, run

NODE = "/dev/bus/usb/001/007"
TWO_HANDLES = os.path.join(ROOT, "test", "programs", "two_handles.py")
USBFS_IOCTLS = os.path.join(ROOT, "test", "programs", "usbfs_ioctls.py")
SUPPRESSIONS = os.path.join(ROOT, "test", "sanitizers", "valgrind.supp")


def need(tool, package):
    if not shutil.which(tool):
        pytest.skip("%s is not installed (%s: make deps installs it)" % (tool, package))


def leaky_host():
    """The environment for a program that leaves memory to the OS at exit (lsusb, sigrok-cli):
    under make test-asan, whose shim runs put libasan in front of it, LeakSanitizer is told to
    leave the program's own leaks alone (their stacks, in libusb and GLib, are not the shim's;
    the shim's leaks are checked in the C programs of the other tests)."""
    options = os.environ.get("ASAN_OPTIONS")
    return {"ASAN_OPTIONS": options + ":detect_leaks=0"} if options else {}


def both(argv, device, env=None, timeout=120):
    """ARGV on DEVICE without and with the shim: the same stdout, stderr and exit code.
    Returns the run without the shim."""
    plain = run(argv, env=env, shim=False, device=device, timeout=timeout)
    shimmed = run(argv, env=env, device=device, timeout=timeout)
    assert (shimmed.returncode, shimmed.stdout.decode(errors="replace"),
            shimmed.stderr.decode(errors="replace")) == (
        plain.returncode, plain.stdout.decode(errors="replace"),
        plain.stderr.decode(errors="replace"))
    return plain


def text(result):
    return result.stdout.decode(), result.stderr.decode()


def test_lsusb_shows_the_full_speed_camera_its_strings_and_status(make_device):
    need("lsusb", "usbutils")
    device = make_device()
    out, err = text(both(["lsusb", "-v", "-d", "1209:0001"], device, leaky_host()))
    assert err == ""
    # Names of IDs and classes come from udev's hwdb where a machine has one: only the
    # numbers and the device's own strings (sysfs) are compared.
    lines = [" ".join(line.split()) for line in out.splitlines()]
    assert lines[1].startswith("Bus 001 Device 007: ID 1209:0001 "), lines[1]
    for wanted in ("bcdUSB 2.00", "bDeviceClass 255", "bMaxPacketSize0 64", "idVendor 0x1209",
                   "idProduct 0x0001", "bcdDevice 1.00", "iManufacturer 1 nvtxshim",
                   "iProduct 2 emulated camera + actuator", "iSerial 3 NVS0001",
                   "bNumConfigurations 1", "wTotalLength 0x002e", "MaxPower 100mA",
                   "bNumEndpoints 4",
                   # Read from the device: GET_STATUS answered, bus powered.
                   "Device Status: 0x0000", "(Bus Powered)"):
        assert any(line == wanted or line.startswith(wanted + " ") for line in lines), wanted
    endpoints = re.findall(r"bEndpointAddress\s+(0x\w+).*?wMaxPacketSize\s+(0x\w+)", out, re.S)
    assert endpoints == [("0x81", "0x0040"), ("0x02", "0x0040"), ("0x83", "0x0008"),
                         ("0x04", "0x0008")]
    # A full-speed device has no qualifier for another speed: it stalls the request.
    assert "Device Qualifier" not in out

    out, err = text(both(["lsusb", "-t"], device, leaky_host()))
    assert err == ""
    assert re.fullmatch(r"/:  Bus 01\.Port 1: Dev 1, Class=root_hub, Driver=xhci_hcd/1p, 480M\n"
                        r"    \|__ Port 1: Dev 7, If 0, Class=[^,]*, Driver=, 12M\n", out), out

    # Every device, the root hub included: each one opened and asked.
    out, err = text(both(["lsusb", "-v"], device, leaky_host()))
    assert err == ""
    assert "Bus 001 Device 001: ID 1d6b:0002 " in out
    assert "Hub Port Status:\n   Port 1: 0000.0103 power enable connect\n" in out
    assert out.count("Device Status:") == 2


CAMERA_USB_DEVICES = """
T:  Bus=01 Lev=01 Prnt=01 Port=00 Cnt=01 Dev#=  7 Spd=12  MxCh= 0
D:  Ver= 2.00 Cls=ff(vend.) Sub=00 Prot=00 MxPS=64 #Cfgs=  1
P:  Vendor=1209 ProdID=0001 Rev=01.00
S:  Manufacturer=nvtxshim
S:  Product=emulated camera + actuator
S:  SerialNumber=NVS0001
C:  #Ifs= 1 Cfg#= 1 Atr=80 MxPwr=100mA
I:  If#= 0 Alt= 0 #EPs= 4 Cls=ff(vend.) Sub=00 Prot=00 Driver=(none)
E:  Ad=02(O) Atr=02(Bulk) MxPS=  64 Ivl=0ms
E:  Ad=04(O) Atr=03(Int.) MxPS=   8 Ivl=4ms
E:  Ad=81(I) Atr=02(Bulk) MxPS=  64 Ivl=0ms
E:  Ad=83(I) Atr=03(Int.) MxPS=   8 Ivl=4ms
"""


def test_usb_devices_shows_the_root_hub_and_the_camera_under_it(make_device):
    need("usb-devices", "usbutils")
    out, err = text(both(["usb-devices"], make_device()))
    assert err == ""
    # One block a device, each after an empty line: the root hub, then the camera.
    assert out.startswith("\n"), out
    hub, camera = out[1:].split("\n\n")
    assert hub.startswith("T:  Bus=01 Lev=00 Prnt=00 Port=00 Cnt=00 Dev#=  1 Spd=480 MxCh= 1\n"
                          "D:  Ver= 2.00 Cls=09(hub  ) Sub=00 Prot=01 MxPS=64 #Cfgs=  1\n"
                          "P:  Vendor=1d6b ProdID=0002 Rev=06.01\n"), hub
    assert "I:  If#= 0 Alt= 0 #EPs= 1 Cls=09(hub  ) Sub=00 Prot=00 Driver=hub\n" in hub
    assert "\n" + camera == CAMERA_USB_DEVICES


FRAMES_PER_ROUND, ROUNDS = 4, 3


@pytest.mark.skipif(os.environ.get("NVS_TEST_BUILD", "build") != "build",
                    reason="valgrind runs against the default build")
def test_two_handles_with_transfers_in_flight_on_both_under_valgrind(make_device):
    need("valgrind", "valgrind")
    # Each handle reaps through its own file: with one queue for the device, a handle reaps
    # the other's URBs, and one freed by its handle (valgrind: a write into a freed block).
    valgrind = ["valgrind", "-q", "--error-exitcode=99", "--suppressions=" + SUPPRESSIONS]
    result = both(valgrind + [PYTHON, TWO_HANDLES, str(ROUNDS)], make_device(),
                  env={"PYTHONMALLOC": "malloc"}, timeout=300)
    out, err = text(result)
    assert (result.returncode, err) == (0, "")
    rounds = out.split("round ")[1:]
    assert len(rounds) == ROUNDS
    frames = re.findall(r"handle 1 frame (\d+): TRANSFER_COMPLETED 9216 md5 \w+", out)
    assert frames == [str(n) for n in range(FRAMES_PER_ROUND * ROUNDS)]
    for number, part in enumerate(rounds):
        last = FRAMES_PER_ROUND * (number + 1) - 1
        # Status: the last frame asked for, and the action it asks for.
        assert "handle 1 status: TRANSFER_COMPLETED 8 %02x00%02x0000000000\n" % (
            last, (last * 7 + 3) % 16) in part
        assert part.endswith(
            "  handle 2 device status: TRANSFER_COMPLETED 2 0000\n"
            "  handle 2 interface status: TRANSFER_COMPLETED 2 0000\n"
            "  handle 2 endpoint 0x81 status: TRANSFER_COMPLETED 2 0000\n"
            "  handle 2 device descriptor: TRANSFER_COMPLETED 18 "
            "12010002ff00004009120100000101020301\n"
            "  handle 2 languages: TRANSFER_COMPLETED 4 04030904\n"
            "  handle 2 manufacturer: TRANSFER_COMPLETED 18 'nvtxshim'\n"
            "  handle 2 product: TRANSFER_COMPLETED 54 'emulated camera + actuator'\n"
            "  handle 2 serial: TRANSFER_COMPLETED 16 'NVS0001'\n"
            "  handle 2 configuration: TRANSFER_COMPLETED 1 01\n"
            "  handle 2 device qualifier: TRANSFER_STALL 0 -\n"), part


def test_urbs_belong_to_the_file_they_were_submitted_through(make_device):
    out, err = text(both([PYTHON, USBFS_IOCTLS, "files", NODE], make_device()))
    assert err == ""
    frame = re.compile(r"status=0 actual=9216 md5 \w+")
    assert frame.sub("FRAME", out) == (
        "submit 1 on the first file: 0\n"
        "reap on the second file: EAGAIN\n"
        "submit 2 on the second file: 0\n"
        "reap on the first file: urb 1 FRAME\n"
        "reap on the first file: EAGAIN\n"
        "reap on the second file: urb 2 FRAME\n"
        "submit 3 on the first file: 0\n"
        "first file closed, URB 3 not reaped\n"
        # Closing the file discarded URB 3: nobody reaps it, and its frame was taken.
        "reap on a new file: EAGAIN\n"
        "reap on the second file: EAGAIN\n"
        "submit 4 on the new file: 0\n"
        "reap on the new file: urb 4 FRAME\n")
    frames = frame.findall(out)
    assert len(set(frames)) == 3


def test_synchronous_control_and_bulk_ioctls(make_device):
    result = both([PYTHON, USBFS_IOCTLS, "sync", NODE], make_device())
    out, err = text(result)
    assert result.returncode == 0
    # The bulk OUT sent before any act is a command that breaks the camera's protocol.
    assert err == "emucam: 1 command(s) broke the protocol and stalled\n"
    out = re.sub(r"9216 \w{32}", "9216 FRAME", out)
    assert out == (
        "GET_STATUS device: 2 0000\n"
        "GET_DESCRIPTOR device: 18 12010002ff00004009120100000101020301\n"
        "GET_DESCRIPTOR configuration, 9 bytes: 9 09022e000101008032\n"
        "GET_DESCRIPTOR string 2: 54 'emulated camera + actuator'\n"
        "GET_DESCRIPTOR string 4: EPIPE\n"
        "GET_CONFIGURATION: 1 01\n"
        "GET_DESCRIPTOR device qualifier: EPIPE\n"
        "bulk IN 0x81, frame 0: 9216 FRAME\n"
        "bulk IN 0x81, frame 1: 9216 FRAME\n"
        "interrupt IN 0x83, status: 8 01000a0000000000\n"
        "bulk OUT 0x02 before any act: EPIPE\n"
        "act for frame 0: 0\n"
        "bulk OUT 0x02, the command: 8 a50000000000005a\n"
        "bulk IN 0x05, no such endpoint: ENOENT\n")


def test_sigrok_cli_scans_without_breaking_the_heap(make_device):
    need("sigrok-cli", "sigrok-cli")
    # sigrok's drivers open the device (and its root hub) and read its strings. With the
    # strings stalled and one URB queue for the device, glibc aborted the scan
    # ("malloc_consolidate(): unaligned fastbin chunk detected"); with the strings stalled,
    # the drivers complain on stderr; with a root hub that has no device node, libusb_exit
    # crashed.
    result = both(["sigrok-cli", "--scan"], make_device(), leaky_host())
    out, err = text(result)
    assert (result.returncode, err) == (0, "")
    assert out.startswith("The following devices were found:\n")


def intel_hex(records):
    """An Intel-hex image of RECORDS, (address, bytes) each."""
    lines = []
    for address, data in records + [(0, b"")]:
        kind = 0 if data else 1
        body = bytes([len(data), address >> 8, address & 0xff, kind]) + data
        lines.append(":%s%02X" % (body.hex().upper(), -sum(body) & 0xff))
    return "\n".join(lines) + "\n"


IMAGE = [(0x0000, bytes([0x02, 0x00, 0x80] + list(range(13)))),  # ljmp 0x0080, and data
         (0x0080, bytes(range(0xF0, 0x100)) + b"\x80\xfe"),       # ..., sjmp $
         (0xE000, b"scratch")]


def fx2_writes(log):
    return [(int(address, 16), bytes.fromhex(data))
            for address, data in (line.split() for line in log.read_text().splitlines())]


def test_fxload_downloads_firmware_into_an_fx2(make_device, tmp_path):
    need("fxload", "fxload")
    image = tmp_path / "image.hex"
    image.write_text(intel_hex(IMAGE))
    argv = ["fxload", "-v", "-t", "fx2", "-D", NODE, "-I", str(image)]
    plain_log, shim_log = tmp_path / "plain.log", tmp_path / "shim.log"
    plain = run(argv, shim=False, device=make_device(extra=("--fx2", str(plain_log))))
    shimmed = run(argv, device=make_device(extra=("--fx2", str(shim_log))))
    assert (shimmed.returncode, shimmed.stdout, shimmed.stderr) == (
        plain.returncode, plain.stdout, plain.stderr)
    assert plain.returncode == 0, plain.stderr
    assert "WROTE: 41 bytes, 3 segments" in plain.stderr.decode()
    writes = fx2_writes(plain_log)
    assert writes == fx2_writes(shim_log)
    # The 8051 held in reset (CPUCS bit 0), the image written, the 8051 let go.
    assert writes[0] == (0xE600, b"\x01") and writes[-1] == (0xE600, b"\x00")
    memory = bytearray(0x10000)
    for address, data in writes[1:-1]:
        memory[address:address + len(data)] = data
    for address, data in IMAGE:
        assert memory[address:address + len(data)] == data
    assert sum(len(data) for _, data in writes[1:-1]) == 41

    # Without --fx2 the camera is no FX2: the first write, to CPUCS, stalls.
    refused = both(argv, make_device())
    assert refused.returncode != 0
    assert "can't modify CPUCS: Broken pipe" in refused.stderr.decode()


# The truth for string requests: every device's strings 1-3, read by another libusb client.
STRINGS_CHILD = r"""
import usb1
with usb1.USBContext() as context:
    for device in context.getDeviceList(skip_on_error=True):
        handle = device.open()
        for index in (1, 2, 3):
            try:
                print(index, len(handle.getASCIIStringDescriptor(index) or ""))
            except usb1.USBError:
                pass
"""


def test_sigrok_cli_string_requests_carry_the_bytes_they_read(make_device, tmp_path):
    """sigrok-cli --scan reads every device's strings with libusb_get_string_descriptor_ascii:
    each range's payload is the length of the string it read (the strings as another libusb
    client, python3-usb1, reads them on the same bus), not the program's buffer (255 or 256
    bytes) as it was."""
    need("sigrok-cli", "sigrok-cli")
    device = make_device()
    listing = run([PYTHON, "-c", STRINGS_CHILD], shim=False, device=device)
    assert listing.returncode == 0, listing.stderr
    strings = {}        # index -> the lengths of the devices' strings at that index
    for line in listing.stdout.decode().splitlines():
        index, length = (int(v) for v in line.split())
        strings.setdefault(index, set()).add(length)
    assert strings
    trace = tmp_path / "scan.json"
    result = run(["sigrok-cli", "--scan"], env=dict(leaky_host(), NVTXSHIM_TRACE=str(trace)),
                 device=device)
    assert result.returncode == 0, result.stderr
    requests = [e for e in ranges(load_trace(trace), "usb")
                if e["name"].startswith("libusb_get_string_descriptor_ascii idx=")]
    assert requests
    for request in requests:
        index = int(request["name"].rsplit("=", 1)[1])
        assert request["args"]["payload"] in strings[index], (request, strings)
