#!/usr/bin/env python3
"""The emulated camera + actuator loop through pyusb (ctypes -> libusb-1.0).

Speaks the protocol of test/usbdev; prints the actions, a checksum and how many
libusb transfer calls it made, so a test can match them against the trace."""
import sys
import zlib

import usb.core

GRID = 4


def choose_action(frame, width, height):
    cell_w, cell_h = width // GRID, height // GRID
    sums = [0] * (GRID * GRID)
    for y in range(cell_h * GRID):
        row = frame[y * width * 3:(y + 1) * width * 3]
        for x in range(cell_w * GRID):
            sums[(y // cell_h) * GRID + x // cell_w] += row[x * 3] + row[x * 3 + 1] + row[x * 3 + 2]
    return max(range(GRID * GRID), key=lambda i: (sums[i], -i))


def main():
    frames = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    width, height = 64, 48
    device = usb.core.find(idVendor=0x1209, idProduct=0x0001)
    if device is None:
        print("no device", file=sys.stderr)
        return 1
    calls = {"control": 0, "bulk": 0, "interrupt": 0}
    action, checksum, actions = 0, 0, []
    for i in range(frames):
        device.ctrl_transfer(0x40, 0x01, i, action, None, 2000)
        calls["control"] += 1
        device.write(0x02, bytes([0xA5, action, i & 0xFF, i >> 8, 0, 0, 0, 0x5A]), 2000)
        calls["bulk"] += 1
        frame = device.read(0x81, width * height * 3, 2000)
        calls["bulk"] += 1
        checksum = zlib.crc32(bytes(frame), checksum)
        action = choose_action(frame, width, height)
        status = device.read(0x83, 8, 2000)
        calls["interrupt"] += 1
        actions.append(action if status[2] == action else -1)
    print("actions:", " ".join(map(str, actions)))
    print("checksum=%08x" % checksum)
    print("calls control=%(control)d bulk=%(bulk)d interrupt=%(interrupt)d" % calls)
    return 0


if __name__ == "__main__":
    sys.exit(main())
