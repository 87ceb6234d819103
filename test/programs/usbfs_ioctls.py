"""usbfs's ioctls on the emulated camera's node, straight from Python (ctypes), no
libusb: what the kernel promises about them, checked on build/emucam.

    usbfs_ioctls.py files NODE   URBs belong to the file they were submitted through: a
                                 REAPURB on another file of the same device does not see them,
                                 and closing a file discards the URBs it has not reaped
    usbfs_ioctls.py sync NODE    the synchronous ioctls: USBDEVFS_CONTROL (standard requests, a
                                 stalled one) and USBDEVFS_BULK (a frame, a status read, a
                                 command the camera refuses)

Prints one line per request, so that runs can be compared; exits 1 when an ioctl fails in a
way the line cannot say."""
import ctypes
import errno
import hashlib
import os
import sys

FRAME = 64 * 48 * 3


def ioc(direction, number, size):
    return direction << 30 | size << 16 | ord("U") << 8 | number


class Urb(ctypes.Structure):
    _fields_ = [("type", ctypes.c_ubyte), ("endpoint", ctypes.c_ubyte), ("status", ctypes.c_int),
                ("flags", ctypes.c_uint), ("buffer", ctypes.c_void_p),
                ("buffer_length", ctypes.c_int), ("actual_length", ctypes.c_int),
                ("start_frame", ctypes.c_int), ("number_of_packets", ctypes.c_int),
                ("error_count", ctypes.c_int), ("signr", ctypes.c_uint),
                ("usercontext", ctypes.c_void_p)]


class CtrlTransfer(ctypes.Structure):
    _fields_ = [("bRequestType", ctypes.c_ubyte), ("bRequest", ctypes.c_ubyte),
                ("wValue", ctypes.c_ushort), ("wIndex", ctypes.c_ushort),
                ("wLength", ctypes.c_ushort), ("timeout", ctypes.c_uint),
                ("data", ctypes.c_void_p)]


class BulkTransfer(ctypes.Structure):
    _fields_ = [("ep", ctypes.c_uint), ("len", ctypes.c_uint), ("timeout", ctypes.c_uint),
                ("data", ctypes.c_void_p)]


READ, WRITE = 2, 1
CONTROL = ioc(READ | WRITE, 0, ctypes.sizeof(CtrlTransfer))
BULK = ioc(READ | WRITE, 2, ctypes.sizeof(BulkTransfer))
SUBMITURB = ioc(READ, 10, ctypes.sizeof(Urb))
REAPURBNDELAY = ioc(WRITE, 13, ctypes.sizeof(ctypes.c_void_p))
URB_TYPE_BULK = 3


LIBC = ctypes.CDLL(None, use_errno=True)  # ioctl as the program calls it: umockdev's


def call(fd, request, argument):
    """ioctl(FD, REQUEST, ARGUMENT), ARGUMENT a ctypes object passed by address: the result,
    or the errno's name when it fails."""
    result = LIBC.ioctl(fd, ctypes.c_ulong(request), ctypes.byref(argument))
    return result if result >= 0 else errno.errorcode[ctypes.get_errno()]


def submit(fd, buffers, tag):
    """A bulk IN URB on 0x81 for one frame, its user context TAG."""
    buffer = ctypes.create_string_buffer(FRAME)
    urb = Urb(type=URB_TYPE_BULK, endpoint=0x81, buffer=ctypes.addressof(buffer),
              buffer_length=FRAME, usercontext=tag)
    buffers[tag] = (urb, buffer)
    return call(fd, SUBMITURB, urb)


def reap(fd, buffers):
    """What REAPURBNDELAY gives FD: the URB's tag, status and length, or the errno."""
    pointer = ctypes.c_void_p()
    result = call(fd, REAPURBNDELAY, pointer)
    if result != 0:
        return result
    for tag, (urb, buffer) in buffers.items():
        if pointer.value == ctypes.addressof(urb):
            return "urb %d status=%d actual=%d md5 %s" % (
                tag, urb.status, urb.actual_length,
                hashlib.md5(buffer.raw[:urb.actual_length]).hexdigest())
    return "a URB this program never submitted through it: %#x" % pointer.value


def files(node):
    buffers = {}
    first = os.open(node, os.O_RDWR)
    second = os.open(node, os.O_RDWR)
    print("submit 1 on the first file:", submit(first, buffers, 1))
    print("reap on the second file:", reap(second, buffers))
    print("submit 2 on the second file:", submit(second, buffers, 2))
    print("reap on the first file:", reap(first, buffers))
    print("reap on the first file:", reap(first, buffers))
    print("reap on the second file:", reap(second, buffers))
    print("submit 3 on the first file:", submit(first, buffers, 3))
    os.close(first)
    print("first file closed, URB 3 not reaped")
    third = os.open(node, os.O_RDWR)
    print("reap on a new file:", reap(third, buffers))
    print("reap on the second file:", reap(second, buffers))
    print("submit 4 on the new file:", submit(third, buffers, 4))
    print("reap on the new file:", reap(third, buffers))
    os.close(second)
    os.close(third)


def control(fd, request_type, request, value, index, length, data=b""):
    buffer = ctypes.create_string_buffer(data, max(length, 1))
    transfer = CtrlTransfer(request_type, request, value, index, length, 1000,
                            ctypes.addressof(buffer) if length else None)
    result = call(fd, CONTROL, transfer)
    if not isinstance(result, int):
        return result
    shown = buffer.raw[:result]
    if request == 6 and value >> 8 == 3 and value & 0xff:
        return "%d %r" % (result, shown[2:].decode("utf-16-le"))
    return ("%d %s" % (result, shown.hex())).rstrip()


def bulk(fd, endpoint, length, data=b""):
    buffer = ctypes.create_string_buffer(data, max(length, 1))
    transfer = BulkTransfer(endpoint, length, 1000, ctypes.addressof(buffer))
    result = call(fd, BULK, transfer)
    if not isinstance(result, int):
        return result
    shown = buffer.raw[:result]
    return "%d %s" % (result, hashlib.md5(shown).hexdigest() if result > 8 else shown.hex())


def sync(node):
    fd = os.open(node, os.O_RDWR)
    print("GET_STATUS device:", control(fd, 0x80, 0, 0, 0, 2))
    print("GET_DESCRIPTOR device:", control(fd, 0x80, 6, 0x0100, 0, 18))
    print("GET_DESCRIPTOR configuration, 9 bytes:", control(fd, 0x80, 6, 0x0200, 0, 9))
    print("GET_DESCRIPTOR string 2:", control(fd, 0x80, 6, 0x0302, 0x0409, 255))
    print("GET_DESCRIPTOR string 4:", control(fd, 0x80, 6, 0x0304, 0x0409, 255))
    print("GET_CONFIGURATION:", control(fd, 0x80, 8, 0, 0, 1))
    print("GET_DESCRIPTOR device qualifier:", control(fd, 0x80, 6, 0x0600, 0, 10))
    print("bulk IN 0x81, frame 0:", bulk(fd, 0x81, FRAME))
    print("bulk IN 0x81, frame 1:", bulk(fd, 0x81, FRAME))
    print("interrupt IN 0x83, status:", bulk(fd, 0x83, 8))
    print("bulk OUT 0x02 before any act:", bulk(fd, 0x02, 8, bytes(8)))
    print("act for frame 0:", control(fd, 0x40, 1, 0, 0, 0))
    print("bulk OUT 0x02, the command:", bulk(fd, 0x02, 8, bytes([0xA5, 0, 0, 0, 0, 0, 0, 0x5A])))
    print("bulk IN 0x05, no such endpoint:", bulk(fd, 0x05, 8))
    os.close(fd)


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("files", "sync"):
        print("usage: usbfs_ioctls.py files|sync NODE", file=sys.stderr)
        return 2
    (files if sys.argv[1] == "files" else sync)(sys.argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
