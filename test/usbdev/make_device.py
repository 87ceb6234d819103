#!/usr/bin/env python3
"""Writes a umockdev description and ioctl replay of the emulated camera + actuator.

The device (1209:0001, vendor class) has one interface with four endpoints:
  0x81 bulk IN        camera frames, RGB8 W x H
  0x02 bulk OUT       actuator commands, 8 bytes
  0x83 interrupt IN   status, 8 bytes
  0x04 interrupt OUT  (declared, unused by the protocol)
and takes vendor control requests on endpoint 0.

umockdev replays URBs in the recorded order, one at a time, and matches an OUT
URB only when its bytes are identical. So the protocol is fixed and the
program's bytes are predictable; per frame i (0-based):
  act      control OUT  bmRequestType=0x40 bRequest=0x01 wValue=i wIndex=a(i-1) wLength=0
           bulk OUT     0x02: A5 a(i-1) i&0xff i>>8 00 00 00 5A
  observe  bulk IN      0x81: frame i (frame_bytes)
  status   interrupt IN 0x83: i&0xff i>>8 a(i) 00 00 00 00 00
where a(i) is the action the frame asks for: the brightest cell of a 4 x 4 grid
(ties to the lowest index), and a(-1) = 0. See README.md beside this file.
"""
import argparse
import os
import sys

VID, PID = 0x1209, 0x0001
GRID = 4
URB_ISO, URB_INTERRUPT, URB_CONTROL, URB_BULK = 0, 1, 2, 3
EPIPE = 32


def frame_pixels(index, width, height):
    """Frame INDEX: a dim pattern and one bright block in the cell the frame 'shows'."""
    target = (index * 7 + 3) % (GRID * GRID)
    row_t, col_t = divmod(target, GRID)
    cell_w, cell_h = max(1, width // GRID), max(1, height // GRID)
    data = bytearray(width * height * 3)
    for y in range(height):
        for x in range(width):
            base = (x * 3 + y * 5 + index * 11) % 40
            o = (y * width + x) * 3
            data[o:o + 3] = bytes((base, (base + 13) % 40, (base + 27) % 40))
    for y in range(row_t * cell_h, min(height, (row_t + 1) * cell_h)):
        for x in range(col_t * cell_w, min(width, (col_t + 1) * cell_w)):
            o = (y * width + x) * 3
            data[o:o + 3] = b"\xf0\xe0\xd0"
    return bytes(data)


def action_of(frame, width, height):
    """The brightest grid cell; the same rule the example programs apply."""
    cell_w, cell_h = max(1, width // GRID), max(1, height // GRID)
    sums = [0] * (GRID * GRID)
    for y in range(min(height, cell_h * GRID)):
        for x in range(min(width, cell_w * GRID)):
            o = (y * width + x) * 3
            sums[(y // cell_h) * GRID + x // cell_w] += frame[o] + frame[o + 1] + frame[o + 2]
    return max(range(GRID * GRID), key=lambda i: (sums[i], -i))


def descriptors():
    device = bytes([18, 1, 0x00, 0x02, 0xFF, 0, 0, 64, VID & 0xFF, VID >> 8, PID & 0xFF, PID >> 8,
                    0x00, 0x01, 1, 2, 3, 1])
    endpoints = [(0x81, 2, 512, 0), (0x02, 2, 512, 0), (0x83, 3, 8, 4), (0x04, 3, 8, 4)]
    interface = bytes([9, 4, 0, 0, len(endpoints), 0xFF, 0, 0, 0])
    eps = b"".join(bytes([7, 5, a, t, s & 0xFF, s >> 8, i]) for a, t, s, i in endpoints)
    total = 9 + len(interface) + len(eps)
    config = bytes([9, 2, total & 0xFF, total >> 8, 1, 1, 0, 0x80, 50])
    return device + config + interface + eps


def urb(kind, endpoint, data, length, status=0):
    """One REAPURBNDELAY record: type ep status flags buffer_length actual_length errors data."""
    actual = len(data)
    return "USBDEVFS_REAPURBNDELAY 0 %d %d %d 0 %d %d 0 %s\n" % (
        kind, endpoint, -status if status else 0, length, actual, data.hex().upper())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=30)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--height", type=int, default=48)
    parser.add_argument("--bus", type=int, default=1)
    parser.add_argument("--address", type=int, default=7)
    parser.add_argument("--stall-frame", type=int, action="append", default=[],
                        help="frame whose bulk IN stalls (EPIPE); may repeat")
    parser.add_argument("--short-frame", type=int, action="append", default=[],
                        help="frame whose bulk IN returns half the bytes; may repeat")
    parser.add_argument("--out", required=True, help="directory for camera.umockdev, camera.ioctl")
    args = parser.parse_args()

    frame_bytes = args.width * args.height * 3
    node = "bus/usb/%03d/%03d" % (args.bus, args.address)
    sysfs = "/devices/pci0000:00/0000:00:14.0/usb%d/%d-1" % (args.bus, args.bus)
    desc = descriptors().hex().upper()
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "camera.umockdev"), "w") as f:
        f.write("P: %s\nN: %s=%s\n" % (sysfs, node, desc))
        for key, value in [("BUSNUM", "%03d" % args.bus), ("DEVNAME", "/dev/" + node),
                           ("DEVNUM", "%03d" % args.address), ("DEVTYPE", "usb_device"),
                           ("DRIVER", "usb"), ("ID_VENDOR_ID", "%04x" % VID),
                           ("ID_MODEL_ID", "%04x" % PID), ("MAJOR", "189"),
                           ("MINOR", str((args.bus - 1) * 128 + args.address - 1)),
                           ("PRODUCT", "%x/%x/100" % (VID, PID)), ("SUBSYSTEM", "usb")]:
            f.write("E: %s=%s\n" % (key, value))
        for key, value in [("bConfigurationValue", "1"), ("bDeviceClass", "ff"),
                           ("bNumConfigurations", "1"), ("bNumInterfaces", " 1"),
                           ("busnum", "%d" % args.bus), ("devnum", "%d" % args.address),
                           ("devpath", "1"), ("idProduct", "%04x" % PID),
                           ("idVendor", "%04x" % VID), ("manufacturer", "nvtxshim"),
                           ("product", "emulated camera + actuator"), ("serial", "NVS0001"),
                           ("speed", "480"), ("version", " 2.00")]:
            f.write("A: %s=%s\n" % (key, value))
        f.write("H: descriptors=%s\n" % desc)

    with open(os.path.join(args.out, "camera.ioctl"), "w") as f:
        # NO_PACKET_SIZE_LIM | BULK_SCATTER_GATHER | ...: libusb sends each transfer as one URB.
        f.write("USBDEVFS_GET_CAPABILITIES 0 0F000000\n")
        previous = 0
        for i in range(args.frames):
            setup = bytes([0x40, 0x01, i & 0xFF, (i >> 8) & 0xFF, previous, 0, 0, 0])
            f.write(urb(URB_CONTROL, 0x00, setup, len(setup)))
            command = bytes([0xA5, previous, i & 0xFF, (i >> 8) & 0xFF, 0, 0, 0, 0x5A])
            f.write(urb(URB_BULK, 0x02, command, len(command)))
            frame = frame_pixels(i, args.width, args.height)
            action = action_of(frame, args.width, args.height)
            if i in args.stall_frame:
                f.write(urb(URB_BULK, 0x81, b"", frame_bytes, status=EPIPE))
                action = previous
            elif i in args.short_frame:
                f.write(urb(URB_BULK, 0x81, frame[:frame_bytes // 2], frame_bytes))
                action = previous
            else:
                f.write(urb(URB_BULK, 0x81, frame, frame_bytes))
            status = bytes([i & 0xFF, (i >> 8) & 0xFF, action, 0, 0, 0, 0, 0])
            f.write(urb(URB_INTERRUPT, 0x83, status, len(status)))
            previous = action
    print("%s: %d frames of %dx%d (%d bytes), device %s" % (
        args.out, args.frames, args.width, args.height, frame_bytes, node), file=sys.stderr)


if __name__ == "__main__":
    main()
