#!/usr/bin/python3
"""harness_physical.py: a physical-system control loop in plain Python, with no NVTX in it.

The shape of a robot or camera-rig harness: per frame act -> observe -> infer -> render.

- act: a vendor control request and an 8-byte actuator command (bulk OUT 0x02);
- observe: one RGB8 camera frame (bulk IN 0x81), then the status word (interrupt IN 0x83);
- infer: a 3x3 box filter over the frame's luminance, summed over a 4x4 grid of cells; the
  brightest cell is the next action. With PyTorch the filter runs on the GPU when there is one
  (the frame goes up, the 16 cell sums come back); without it, numpy does the same arithmetic;
- render (--use_gui=1): the frame, scaled 4x, and the chosen cell, in an Xlib window (ctypes).

USB goes through pyusb (libusb-1.0 underneath, loaded with ctypes). The program speaks the
protocol of the emulated device in test/usbdev, and prints a summary line that does not depend
on timing, so runs can be compared byte for byte:

    build/emucam -- python3 examples/harness_physical.py --frames 30

As a camera rig, like the C harness: --camera v4l2:PATH reads the frames from a V4L2 capture
device with OpenCV (cv2.VideoCapture(PATH, cv2.CAP_V4L2)), --actuator serial:PATH acts after
inference by writing "move FRAME CELL" to a serial port with pyserial and reading the reply
line (examples/emuservo.py answers it); USB is opened only for what still uses it. --log prints
one line per frame: the capture and dequeue times, the actuation's end (CLOCK_MONOTONIC ns).
"""
import argparse
import ctypes
import os
import queue
import sys
import threading
import time
import zlib

import numpy as np

PROG = "harness_physical.py"
GRID = 4
TIMEOUT_MS = 2000
SCALE = 4  # the window shows the frame this many times larger


def fail(message, status):
    print("%s: %s" % (PROG, message), file=sys.stderr)
    sys.exit(status)


# --------------------------------------------------------------------------- options

def parse_args(argv):
    parser = argparse.ArgumentParser(prog=PROG, description="A camera + actuator control loop.")
    parser.add_argument("--use_gui", type=int, choices=(0, 1), default=0,
                        help="draw each frame in an X11 window (default 0)")
    parser.add_argument("--frames", type=int, default=300, help="frames to run (default 300)")
    parser.add_argument("--device", default="1209:0001", help="VID:PID in hex (default 1209:0001)")
    parser.add_argument("--width", type=int, default=64, help="frame width, >= 16 (default 64)")
    parser.add_argument("--height", type=int, default=48, help="frame height, >= 16 (default 48)")
    parser.add_argument("--fps", type=float, default=0.0,
                        help="pace the loop at this rate; 0 runs it as fast as it goes (default)")
    parser.add_argument("--threads", action="store_true",
                        help="capture (act, observe, status) on its own thread")
    parser.add_argument("--async", dest="use_async", action="store_true",
                        help="asynchronous USB transfers (the C harness only)")
    parser.add_argument("--inference", choices=("auto", "torch", "numpy"), default="auto",
                        help="auto: torch when it can be imported, else numpy (default)")
    parser.add_argument("--camera", default="usb",
                        help="usb (default), or v4l2:PATH: frames from a V4L2 device (OpenCV)")
    parser.add_argument("--actuator", default="usb",
                        help="usb (default), or serial:PATH: a command line per frame (pyserial)")
    parser.add_argument("--log", action="store_true",
                        help="one line per frame: capture, dequeue and actuation times")
    args = parser.parse_args(argv)
    args.v4l2 = args.serial = None
    if args.camera.startswith("v4l2:") and len(args.camera) > 5:
        args.v4l2 = args.camera[5:]
    elif args.camera != "usb":
        parser.error("--camera must be usb or v4l2:PATH")
    if args.actuator.startswith("serial:") and len(args.actuator) > 7:
        args.serial = args.actuator[7:]
    elif args.actuator != "usb":
        parser.error("--actuator must be usb or serial:PATH")
    if args.frames < 1:
        parser.error("--frames must be at least 1")
    if args.width < 16 or args.height < 16:
        parser.error("--width and --height must be at least 16")
    if args.width * args.height * 3 > 64 * 1024 * 1024:
        parser.error("--width x --height is too large")
    if not args.fps >= 0:
        parser.error("--fps must be 0 or more")
    try:
        vid, pid = args.device.split(":")
        if not (1 <= len(vid) <= 4 and 1 <= len(pid) <= 4):
            raise ValueError(args.device)
        args.vid, args.pid = int(vid, 16), int(pid, 16)
    except ValueError:
        parser.error("--device must be VID:PID in hex, e.g. 1209:0001")
    if args.use_async:
        fail("--async needs the C harness (pyusb has no asynchronous transfers)", 2)
    return args


# --------------------------------------------------------------------------- inference

def cells_numpy(frame, width, height):
    """The 16 cell sums of the 3x3 box-filtered luminance, as exact integers."""
    lum = frame.reshape(height, width, 3).astype(np.int64).sum(axis=2)
    padded = np.pad(lum, 1, mode="edge")
    conv = np.zeros_like(lum)
    for dy in range(3):
        for dx in range(3):
            conv += padded[dy:dy + height, dx:dx + width]
    cell_w, cell_h = width // GRID, height // GRID
    grid = conv[:GRID * cell_h, :GRID * cell_w].reshape(GRID, cell_h, GRID, cell_w)
    return grid.sum(axis=(1, 3)).ravel().tolist()


class TorchInference:
    """The same arithmetic with PyTorch: the frame is copied to the GPU when there is one, the
    filter is a convolution in float32 (every value is an integer below 2^24, so it is exact),
    and the cell sums come back to the host."""

    def __init__(self, torch):
        import torch.nn.functional
        self.torch, self.functional = torch, torch.nn.functional
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.name = "torch-" + self.device.type
        if self.device.type == "cuda":
            # TF32 would still be exact for these values, but keep the convolution plain float32.
            torch.backends.cudnn.allow_tf32 = False
            torch.backends.cuda.matmul.allow_tf32 = False
        self.kernel = torch.ones((1, 1, 3, 3), dtype=torch.float32, device=self.device)

    def cells(self, frame, width, height):
        torch, functional = self.torch, self.functional
        with torch.no_grad():
            pixels = torch.from_numpy(frame).to(self.device)  # host -> device copy
            lum = pixels.view(height, width, 3).to(torch.float32).sum(dim=2)
            padded = functional.pad(lum.view(1, 1, height, width), (1, 1, 1, 1), mode="replicate")
            conv = functional.conv2d(padded, self.kernel).view(height, width)
            # Round before the cast: a convolution algorithm may leave a tiny float error.
            conv = torch.round(conv).to(torch.int64)
            cell_w, cell_h = width // GRID, height // GRID
            grid = conv[:GRID * cell_h, :GRID * cell_w].reshape(GRID, cell_h, GRID, cell_w)
            sums = grid.sum(dim=(1, 3)).reshape(-1)
            return sums.cpu().tolist()  # device -> host copy


def make_inference(choice):
    """Returns (name, function(frame, width, height) -> 16 cell sums)."""
    if choice in ("auto", "torch"):
        try:
            import torch
        except ImportError as error:
            if choice == "torch":
                fail("--inference=torch: cannot import torch (%s)" % error, 2)
        else:
            engine = TorchInference(torch)
            return engine.name, engine.cells
    return "numpy", cells_numpy


def best_cell(sums):
    """The brightest cell; ties go to the lowest index."""
    best = 0
    for index, value in enumerate(sums):
        if value > sums[best]:
            best = index
    return best


# --------------------------------------------------------------------------- X11 window

class XImageFuncs(ctypes.Structure):
    _fields_ = [(name, ctypes.c_void_p) for name in
                ("create_image", "destroy_image", "get_pixel", "put_pixel", "sub_image",
                 "add_pixel")]


class XImage(ctypes.Structure):
    _fields_ = [("width", ctypes.c_int), ("height", ctypes.c_int), ("xoffset", ctypes.c_int),
                ("format", ctypes.c_int), ("data", ctypes.c_void_p),
                ("byte_order", ctypes.c_int), ("bitmap_unit", ctypes.c_int),
                ("bitmap_bit_order", ctypes.c_int), ("bitmap_pad", ctypes.c_int),
                ("depth", ctypes.c_int), ("bytes_per_line", ctypes.c_int),
                ("bits_per_pixel", ctypes.c_int), ("red_mask", ctypes.c_ulong),
                ("green_mask", ctypes.c_ulong), ("blue_mask", ctypes.c_ulong),
                ("obdata", ctypes.c_void_p), ("f", XImageFuncs)]


class XEvent(ctypes.Union):
    _fields_ = [("type", ctypes.c_int), ("pad", ctypes.c_long * 24)]


ZPIXMAP = 2
LSB_FIRST, MSB_FIRST = 0, 1
STRUCTURE_NOTIFY_MASK = 1 << 17
EXPOSURE_MASK = 1 << 15


def load_xlib():
    xlib = ctypes.CDLL("libX11.so.6")
    display, window, gc, visual = ctypes.c_void_p, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_void_p
    c_int, c_uint, c_ulong, c_long = ctypes.c_int, ctypes.c_uint, ctypes.c_ulong, ctypes.c_long
    image = ctypes.POINTER(XImage)
    signatures = {
        "XOpenDisplay": (display, [ctypes.c_char_p]),
        "XDisplayString": (ctypes.c_char_p, [display]),
        "XDefaultScreen": (c_int, [display]),
        "XDefaultDepth": (c_int, [display, c_int]),
        "XDefaultVisual": (visual, [display, c_int]),
        "XRootWindow": (window, [display, c_int]),
        "XBlackPixel": (c_ulong, [display, c_int]),
        "XWhitePixel": (c_ulong, [display, c_int]),
        "XCreateSimpleWindow": (window, [display, window, c_int, c_int, c_uint, c_uint, c_uint,
                                         c_ulong, c_ulong]),
        "XStoreName": (c_int, [display, window, ctypes.c_char_p]),
        "XSelectInput": (c_int, [display, window, c_long]),
        "XMapWindow": (c_int, [display, window]),
        "XCreateGC": (gc, [display, window, c_ulong, ctypes.c_void_p]),
        "XSetForeground": (c_int, [display, gc, c_ulong]),
        "XCreateImage": (image, [display, visual, c_uint, c_int, c_int, ctypes.c_void_p, c_uint,
                                 c_uint, c_int, c_int]),
        "XPutImage": (c_int, [display, window, gc, image, c_int, c_int, c_int, c_int, c_uint,
                              c_uint]),
        "XDrawRectangle": (c_int, [display, window, gc, c_int, c_int, c_uint, c_uint]),
        "XFlush": (c_int, [display]),
        "XPending": (c_int, [display]),
        "XNextEvent": (c_int, [display, ctypes.POINTER(XEvent)]),
        "XDestroyImage": (c_int, [image]),
        "XFreeGC": (c_int, [display, gc]),
        "XDestroyWindow": (c_int, [display, window]),
        "XCloseDisplay": (c_int, [display]),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(xlib, name)
        function.restype, function.argtypes = restype, argtypes
    return xlib


class Window:
    """An Xlib window showing the frame SCALE times larger, with the chosen cell outlined."""

    def __init__(self, width, height):
        self.display = None
        self.width, self.height = width, height
        try:
            self.x = load_xlib()
        except OSError as error:
            self.reason = "cannot load libX11.so.6 (%s)" % error
            return
        name = os.environ.get("DISPLAY")
        self.display = self.x.XOpenDisplay(None)
        if not self.display:
            self.reason = "cannot open display %s" % (repr(name) if name else "(DISPLAY is not set)")
            return
        x, dpy = self.x, self.display
        screen = x.XDefaultScreen(dpy)
        depth = x.XDefaultDepth(dpy, screen)
        self.win_w, self.win_h = width * SCALE, height * SCALE
        # The image buffer: one 32-bit pixel 0x00RRGGBB per window pixel, owned by Python and
        # kept alive as long as the XImage that points into it.
        self.pixels = np.zeros((self.win_h, self.win_w), dtype=np.uint32)
        self.image = x.XCreateImage(dpy, x.XDefaultVisual(dpy, screen), depth, ZPIXMAP, 0,
                                    self.pixels.ctypes.data, self.win_w, self.win_h, 32,
                                    self.win_w * 4)
        if not self.image or self.image.contents.bits_per_pixel != 32:
            if self.image:
                self.release_image()
            x.XCloseDisplay(dpy)
            self.display = None
            self.reason = "display %s has no 32-bit pixels at depth %d" % (name, depth)
            return
        self.image.contents.byte_order = LSB_FIRST if sys.byteorder == "little" else MSB_FIRST
        self.window = x.XCreateSimpleWindow(dpy, x.XRootWindow(dpy, screen), 0, 0, self.win_w,
                                            self.win_h, 0, x.XBlackPixel(dpy, screen),
                                            x.XBlackPixel(dpy, screen))
        x.XStoreName(dpy, self.window, PROG.encode())
        x.XSelectInput(dpy, self.window, STRUCTURE_NOTIFY_MASK | EXPOSURE_MASK)
        x.XMapWindow(dpy, self.window)
        self.gc = x.XCreateGC(dpy, self.window, 0, None)
        x.XSetForeground(dpy, self.gc, 0x00ff00 if depth >= 24 else x.XWhitePixel(dpy, screen))
        self.event = XEvent()

    def release_image(self):
        # XDestroyImage frees the data too: the buffer is numpy's, so take it away first.
        self.image.contents.data = None
        self.x.XDestroyImage(self.image)
        self.image = None

    def render(self, frame, cell):
        x, dpy = self.x, self.display
        rgb = frame.reshape(self.height, self.width, 3).astype(np.uint32)
        packed = (rgb[:, :, 0] << 16) | (rgb[:, :, 1] << 8) | rgb[:, :, 2]
        self.pixels[:] = packed.repeat(SCALE, axis=0).repeat(SCALE, axis=1)
        x.XPutImage(dpy, self.window, self.gc, self.image, 0, 0, 0, 0, self.win_w, self.win_h)
        cell_w, cell_h = self.width // GRID * SCALE, self.height // GRID * SCALE
        x.XDrawRectangle(dpy, self.window, self.gc, (cell % GRID) * cell_w, (cell // GRID) * cell_h,
                         cell_w - 1, cell_h - 1)
        x.XFlush(dpy)
        while x.XPending(dpy) > 0:  # drain the events, so the queue does not grow
            x.XNextEvent(dpy, ctypes.byref(self.event))

    def close(self):
        if not self.display:
            return
        x, dpy = self.x, self.display
        self.release_image()
        x.XFreeGC(dpy, self.gc)
        x.XDestroyWindow(dpy, self.window)
        x.XCloseDisplay(dpy)
        self.display = None


# --------------------------------------------------------------------------- USB

class Camera:
    """The camera + actuator over pyusb."""

    def __init__(self, args):
        import usb.core
        import usb.util
        self.usb_core, self.usb_util = usb.core, usb.util
        self.dev = usb.core.find(idVendor=args.vid, idProduct=args.pid)
        if self.dev is None:
            fail("no device %04x:%04x" % (args.vid, args.pid), 1)
        self.dev.set_configuration()
        usb.util.claim_interface(self.dev, 0)
        self.frame_bytes = args.width * args.height * 3

    def capture(self, i, action):
        """act(i) with the action in force, observe(i), status(i).
        Returns (frame as a numpy uint8 array or None, errors)."""
        errors = self.act(i, action)
        frame, more = self.observe()
        return frame, errors + more

    def act(self, i, action):
        """The vendor request and the command carrying ACTION; returns the errors."""
        USBError = self.usb_core.USBError
        dev, errors = self.dev, 0
        try:
            dev.ctrl_transfer(0x40, 0x01, i & 0xffff, action, None, timeout=TIMEOUT_MS)
        except USBError:
            errors += 1
        command = bytes([0xA5, action, i & 0xff, (i >> 8) & 0xff, 0, 0, 0, 0x5A])
        try:
            dev.write(0x02, command, timeout=TIMEOUT_MS)
        except USBError:
            errors += 1
            self.clear_halt(0x02)
        self.acted_ns = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        return errors

    def observe(self):
        """A frame (bulk IN), then the status (interrupt IN): (frame or None, errors)."""
        USBError = self.usb_core.USBError
        dev, errors, frame = self.dev, 0, None
        try:
            data = dev.read(0x81, self.frame_bytes, timeout=TIMEOUT_MS)
        except USBError:
            errors += 1
            self.clear_halt(0x81)
        else:
            if len(data) < self.frame_bytes:
                errors += 1
            else:
                frame = np.frombuffer(data, dtype=np.uint8)
        # status (control signalling: read, not interpreted)
        try:
            dev.read(0x83, 8, timeout=TIMEOUT_MS)
        except USBError:
            errors += 1
        return frame, errors

    def clear_halt(self, endpoint):
        try:
            self.dev.clear_halt(endpoint)
        except self.usb_core.USBError:
            pass

    def close(self):
        self.usb_util.release_interface(self.dev, 0)
        self.usb_util.dispose_resources(self.dev)


# --------------------------------------------------------------------------- the camera rig

class V4l2Camera:
    """Frames from a V4L2 capture device through OpenCV, as RGB8 like the USB camera's."""

    def __init__(self, args):
        import cv2
        self.cv2, self.path = cv2, args.v4l2
        self.capture = cv2.VideoCapture(args.v4l2, cv2.CAP_V4L2)
        if not self.capture.isOpened():
            fail("cannot open %s as a V4L2 camera" % args.v4l2, 1)
        self.capture.set(cv2.CAP_PROP_FRAME_WIDTH, args.width)
        self.capture.set(cv2.CAP_PROP_FRAME_HEIGHT, args.height)
        self.width = int(self.capture.get(cv2.CAP_PROP_FRAME_WIDTH))
        self.height = int(self.capture.get(cv2.CAP_PROP_FRAME_HEIGHT))
        if self.width < 16 or self.height < 16:
            fail("%s gives %dx%d frames" % (args.v4l2, self.width, self.height), 1)

    def observe(self):
        """The next frame: (RGB8 frame or None, errors, capture_ns, dequeue_ns)."""
        ok, image = self.capture.read()
        dequeue_ns = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        # the V4L2 backend gives the buffer's timestamp (the driver's capture time) in ms
        capture_ns = int(round(self.capture.get(self.cv2.CAP_PROP_POS_MSEC) * 1e6))
        if not ok or image is None or image.shape[:2] != (self.height, self.width):
            return None, 1, capture_ns, dequeue_ns
        rgb = np.ascontiguousarray(image.reshape(self.height, self.width, -1)[:, :, 2::-1])
        return rgb.reshape(-1), 0, capture_ns, dequeue_ns

    def close(self):
        self.capture.release()


class SerialActuator:
    """A servo controller on a serial port: "move FRAME CELL" out, "ok FRAME CELL" back."""

    def __init__(self, path):
        import serial
        try:
            self.port = serial.Serial(path, 115200, timeout=TIMEOUT_MS / 1000.0)
        except (serial.SerialException, OSError) as error:
            fail("cannot open %s: %s" % (path, error), 1)
        self.path = path

    def act(self, i, action):
        """Returns (errors, the reply line, when the write returned)."""
        command = "move %d %d" % (i, action)
        try:
            self.port.write((command + "\n").encode("ascii"))
            wrote_ns = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            reply = self.port.readline().decode("ascii", "replace").rstrip("\r\n")
        except OSError as error:
            print("%s: %s: %s" % (PROG, self.path, error), file=sys.stderr)
            return 1, "", time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        if not reply:
            print("%s: %s: no reply to %r" % (PROG, self.path, command), file=sys.stderr)
        return int(reply != "ok %d %d" % (i, action)), reply, wrote_ns

    def close(self):
        self.port.close()


# --------------------------------------------------------------------------- the loop

class Pacer:
    """Absolute deadlines at --fps, so a late frame does not delay the ones after it."""

    def __init__(self, fps):
        self.period = 1.0 / fps if fps > 0 else 0.0
        self.start = time.monotonic()

    def wait(self, i):
        if self.period:
            delay = self.start + i * self.period - time.monotonic()
            if delay > 0:
                time.sleep(delay)


class Loop:
    def __init__(self, args, camera, infer, window, v4l2=None, actuator=None):
        self.args, self.camera, self.infer, self.window = args, camera, infer, window
        self.v4l2, self.actuator = v4l2, actuator
        self.errors, self.checksum, self.action, self.actions = 0, 0, 0, []

    def observe(self, i, action):
        """The USB act for frame I (the action of frame I-1), then the frame: from the V4L2
        camera or over USB. Returns (frame or None, errors, what --log says of it)."""
        info, errors = {}, 0
        if not self.actuator:
            errors += self.camera.act(i, action)
            info.update(act_ns=self.camera.acted_ns, sent=action)
        if self.v4l2:
            frame, more, info["capture_ns"], info["dequeue_ns"] = self.v4l2.observe()
        else:
            frame, more = self.camera.observe()
        return frame, errors + more, info

    def think(self, frame, errors, info, i):
        """infer, act (the serial actuator), render for one captured frame; returns the action
        now in force."""
        self.errors += errors
        if frame is not None:
            self.checksum = zlib.crc32(frame, self.checksum)
            self.action = best_cell(self.infer(frame, self.args.width, self.args.height))
        if self.actuator:
            more, info["reply"], info["act_ns"] = self.actuator.act(i, self.action)
            info["sent"] = self.action
            self.errors += more
        if frame is not None and self.window:
            self.window.render(frame, self.action)
        self.actions.append("%x" % self.action)
        if self.args.log:
            line = "frame %d" % i
            if self.v4l2:
                line += " capture_ns=%d dequeue_ns=%d" % (info["capture_ns"], info["dequeue_ns"])
            line += " act_ns=%d sent=%d" % (info["act_ns"], info["sent"])
            if self.actuator:
                line += ' reply="%s"' % info["reply"]
            print(line + " action=%d" % self.action)
        return self.action

    def run_single(self):
        pacer = Pacer(self.args.fps)
        for i in range(self.args.frames):
            pacer.wait(i)
            self.think(*self.observe(i, self.action), i)

    def run_threaded(self):
        """Capture on its own thread; this thread infers and renders. The two hand over
        strictly in turn, so the USB order stays act(i), observe(i), status(i), act(i+1)."""
        frames, actions = queue.Queue(maxsize=1), queue.Queue(maxsize=1)

        def capture():
            pacer, action = Pacer(self.args.fps), 0
            try:
                for i in range(self.args.frames):
                    pacer.wait(i)
                    frames.put(self.observe(i, action))
                    action = actions.get()
                    if action is None:
                        return
            except BaseException as error:  # hand it to the main thread
                frames.put(error)

        thread = threading.Thread(target=capture, name="capture")
        thread.start()
        try:
            for i in range(self.args.frames):
                item = frames.get()
                if isinstance(item, BaseException):
                    raise item
                actions.put(self.think(*item, i))
        except BaseException:
            try:
                actions.put_nowait(None)
            except queue.Full:
                pass
            raise
        finally:
            thread.join()


def main(argv):
    args = parse_args(argv)
    v4l2 = actuator = camera = None
    if args.v4l2:
        v4l2 = V4l2Camera(args)
        args.width, args.height = v4l2.width, v4l2.height
    if args.serial:
        actuator = SerialActuator(args.serial)
    if not (v4l2 and actuator):
        camera = Camera(args)
    name, infer = make_inference(args.inference)
    window = None
    if args.use_gui:
        window = Window(args.width, args.height)
        if not window.display:
            print("%s: %s; running without the GUI" % (PROG, window.reason), file=sys.stderr)
            window = None
    source = "v4l2:%s" % args.v4l2 if v4l2 else "%04x:%04x; usb=sync" % (args.vid, args.pid)
    if actuator:
        source += "; actuator=serial:%s" % args.serial
    elif v4l2:
        source += "; actuator=%04x:%04x" % (args.vid, args.pid)
    print("%s: %d frames of %dx%d from %s; capture on %s; inference=%s; gui=%s"
          % (PROG, args.frames, args.width, args.height, source,
             "its own thread" if args.threads else "the main thread", name,
             "xlib" if window else "off"), flush=True)
    loop = Loop(args, camera, infer, window, v4l2, actuator)
    start = time.monotonic()
    try:
        if args.threads:
            loop.run_threaded()
        else:
            loop.run_single()
        elapsed = time.monotonic() - start
    finally:
        if window:
            window.close()
        if camera:
            camera.close()
        if v4l2:
            v4l2.close()
        if actuator:
            actuator.close()
    print("frames=%d errors=%d checksum=%08x actions=%s"
          % (args.frames, loop.errors, loop.checksum, "".join(loop.actions)))
    print("fps=%.1f" % (args.frames / elapsed if elapsed > 0 else 0.0))
    sys.stdout.flush()
    return 3 if loop.errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
