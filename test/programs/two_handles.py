"""Two handles on the emulated camera (build/emucam), python3-usb1 (libusb through ctypes):
asynchronous transfers in flight on both at once, as a program that keeps the device open
while another part of it looks at the device has them. The first handle claims interface 0
and streams frames (bulk IN on 0x81, a queue of QUEUE) with status reads (interrupt IN on
0x83); the second asks standard requests on endpoint 0 (status, descriptors, strings, the
configuration, and the device qualifier a full-speed device stalls). libusb reaps each
handle's URBs through its own file descriptor: usbfs, and the camera, must give each file
only its own.

    two_handles.py [ROUNDS]

Prints every transfer's outcome, per handle in submission order, so that runs with and
without the shim can be compared byte for byte."""
import hashlib
import sys

import usb1

VENDOR, PRODUCT = 0x1209, 0x0001
FRAME = 64 * 48 * 3
QUEUE = 4
STATUS_NAMES = {getattr(usb1, name): name for name in dir(usb1) if name.startswith("TRANSFER_")
                and name[9:] in ("COMPLETED", "ERROR", "TIMED_OUT", "CANCELLED", "STALL",
                                 "NO_DEVICE", "OVERFLOW")}
# (name, bmRequestType, bRequest, wValue, wIndex, wLength): standard requests, all IN.
REQUESTS = [
    ("device status", 0x80, 0, 0, 0, 2),
    ("interface status", 0x81, 0, 0, 0, 2),
    ("endpoint 0x81 status", 0x82, 0, 0, 0x81, 2),
    ("device descriptor", 0x80, 6, 0x0100, 0, 18),
    ("languages", 0x80, 6, 0x0300, 0, 255),
    ("manufacturer", 0x80, 6, 0x0301, 0x0409, 255),
    ("product", 0x80, 6, 0x0302, 0x0409, 255),
    ("serial", 0x80, 6, 0x0303, 0x0409, 255),
    ("configuration", 0x80, 8, 0, 0, 1),
    ("device qualifier", 0x80, 6, 0x0600, 0, 10),
]


def describe(name, data):
    if not data:
        return "-"
    if name in ("manufacturer", "product", "serial"):
        return repr(data[2:data[0]].decode("utf-16-le"))
    if name.startswith("frame"):
        return "md5 " + hashlib.md5(data).hexdigest()
    return data.hex()


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    with usb1.USBContext() as context:
        stream = context.openByVendorIDAndProductID(VENDOR, PRODUCT)
        probe = context.openByVendorIDAndProductID(VENDOR, PRODUCT)
        if stream is None or probe is None:
            print("no device %04x:%04x" % (VENDOR, PRODUCT), file=sys.stderr)
            return 1
        stream.claimInterface(0)
        outcome = {}

        def done(transfer):
            key = transfer.getUserData()
            # usb1 gives a control transfer's data stage, without the setup packet.
            data = bytes(transfer.getBuffer()[:transfer.getActualLength()])
            outcome[key] = (STATUS_NAMES.get(transfer.getStatus(), transfer.getStatus()),
                            transfer.getActualLength(), describe(key[1], data))

        frame = 0
        for round_number in range(rounds):
            transfers = []
            for i in range(QUEUE):
                transfer = stream.getTransfer()
                transfer.setBulk(0x81, FRAME, callback=done, user_data=(1, "frame %d" % frame),
                                 timeout=5000)
                transfers.append(transfer)
                frame += 1
            status = stream.getTransfer()
            status.setInterrupt(0x83, 8, callback=done, user_data=(1, "status"), timeout=5000)
            transfers.append(status)
            for name, request_type, request, value, index, length in REQUESTS:
                transfer = probe.getTransfer()
                transfer.setControl(request_type, request, value, index, length, callback=done,
                                    user_data=(2, name), timeout=5000)
                transfers.append(transfer)
            # Interleaved: both handles have URBs queued before either is reaped.
            order = transfers[:QUEUE + 1]
            for i, transfer in enumerate(transfers[QUEUE + 1:]):
                order.insert(min(2 * i + 1, len(order)), transfer)
            outcome.clear()
            for transfer in order:
                transfer.submit()
            while len(outcome) < len(transfers):
                context.handleEvents()
            print("round %d" % round_number)
            for transfer in transfers:
                key = transfer.getUserData()
                print("  handle %d %s: %s %d %s" % (key + outcome[key]))
                transfer.close()
        probe.close()
        stream.releaseInterface(0)
        stream.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
