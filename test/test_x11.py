"""X11 hooks (Xlib, XCB, GLX) against a real X server (Xvfb), through the recorder and nsys."""
import collections
import glob
import os
import re
import shutil
import subprocess

import pytest

from conftest import PYTHON, ROOT, SHIM, clean_env, load_trace, names, program, ranges, run
from xserver import Xvfb
from nsys import export_sqlite, nvtx_events, profile
from traceformat import end_us


def traced(argv, display, tmp_path, env=None, label="x"):
    trace = tmp_path / ("%s.json" % label)
    plain = run(argv, env={"DISPLAY": display}, shim=False)
    shimmed = run(argv, env=dict({"DISPLAY": display, "NVTXSHIM_TRACE": str(trace)}, **(env or {})))
    assert plain.returncode == 0, plain.stderr
    assert (shimmed.stdout, shimmed.returncode) == (plain.stdout, plain.returncode)
    return shimmed, load_trace(trace)


def nested(events):
    """x11 ranges that lie inside another x11 range on the same thread."""
    x11 = ranges(events, "x11")
    return [(a["name"], b["name"]) for a in x11 for b in x11 if a is not b and a["tid"] == b["tid"]
            and b["ts"] <= a["ts"] and end_us(a) <= end_us(b)]


@pytest.mark.parametrize("mode", ["socket", "shm"])
def test_xlib_program_one_range_per_call(xserver, tmp_path, mode):
    frames = 4
    argv = [program("test/x11_draw"), str(frames)] + (["--shm"] if mode == "shm" else [])
    result, events = traced(argv, xserver.display, tmp_path, label=mode)
    assert result.stderr == b""
    counts = collections.Counter(names(events, "x11"))
    put = "XShmPutImage 160x120" if mode == "shm" else "XPutImage 160x120"
    assert counts[put] == frames
    assert counts["XFlush"] == frames + 1
    assert counts["XGetImage 160x120"] == 1
    for call in ("XMaskEvent", "XWindowEvent", "XPeekEvent", "XIfEvent", "XNextEvent", "XPending"):
        assert counts[call] == 1, call
    # The program's own XSync calls (one more to detach MIT-SHM), and the one
    # XCloseDisplay makes inside: an unhooked call shows the hooked call it makes.
    program_syncs = 2 if mode == "shm" else 1
    assert counts["XSync"] == program_syncs + 1
    # Xlib's own calls into XCB do not add ranges inside the program's.
    assert nested(events) == []
    payloads = {e["name"]: e["args"].get("payload") for e in ranges(events, "x11")}
    assert payloads[put] == 160 * 120 * 4 and payloads["XGetImage 160x120"] == 160 * 120 * 4
    categories = {e["name"]: e["args"]["category"] for e in ranges(events, "x11")}
    assert categories["XSync"] == "round trip" and categories[put] == "draw"


@pytest.mark.parametrize("mode", ["socket", "shm"])
def test_xcb_program_one_range_per_call(xserver, tmp_path, mode):
    frames = 4
    argv = [program("test/xcb_draw"), str(frames)] + (["--shm"] if mode == "shm" else [])
    result, events = traced(argv, xserver.display, tmp_path, label=mode)
    counts = collections.Counter(names(events, "x11"))
    put = "xcb_shm_put_image 160x120" if mode == "shm" else "xcb_put_image 160x120"
    assert counts[put] == frames
    assert counts["xcb_flush"] == frames + (2 if mode == "shm" else 1)
    assert counts["xcb_wait_for_event"] == 2
    assert counts["xcb_wait_for_reply"] >= 1  # the get-geometry round trip
    assert set(counts) == {put, "xcb_flush", "xcb_wait_for_event", "xcb_wait_for_reply"}
    assert nested(events) == []
    assert {e["args"]["payload"] for e in ranges(events, "x11") if e["name"] == put} == {160 * 120 * 4}


def test_glxgears_swaps_and_frames(xserver, tmp_path):
    """glxgears, unmodified: closed with Escape after 14 DAMAGE events. Each swap
    damages the window once; the window's first background paint (and at most
    one more repaint) damages it too, so 14 events mean at least 12 swaps."""
    env = clean_env({"DISPLAY": xserver.display})
    helper = subprocess.Popen([program("test/close_after_frames"), "glxgears", "14"], env=env,
                              stdout=subprocess.PIPE, text=True)
    assert helper.stdout.readline().strip() == "ready"
    trace = tmp_path / "gears.json"
    result = run(["glxgears"], env={"DISPLAY": xserver.display, "NVTXSHIM_TRACE": str(trace),
                                    "NVTXSHIM_FRAME": "x11.swap", "vblank_mode": "0"}, timeout=120)
    helper.wait(timeout=60)
    assert result.returncode == 0, result.stderr
    events = load_trace(trace)
    swaps = [e for e in ranges(events, "x11") if e["name"] == "glXSwapBuffers"]
    frames = sorted(ranges(events, "nvtxshim"), key=lambda e: e["ts"])
    assert len(swaps) >= 12
    assert [f["name"] for f in frames] == ["frame %d" % n for n in range(1, len(swaps) + 1)]
    for frame, swap in zip(frames, sorted(swaps, key=lambda e: e["ts"])):
        assert frame["ts"] <= swap["ts"]
    # Mesa's own X11 traffic inside a swap is not shown twice.
    assert nested(events) == []


CTYPES_PROGRAM = r"""
import ctypes, sys
x11 = ctypes.CDLL("libX11.so.6")
x11.XOpenDisplay.restype = ctypes.c_void_p
x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
display = x11.XOpenDisplay(None)
x11.XFlush.argtypes = x11.XSync.argtypes = x11.XPending.argtypes = [ctypes.c_void_p]
x11.XSync.argtypes = [ctypes.c_void_p, ctypes.c_int]
x11.XCloseDisplay.argtypes = [ctypes.c_void_p]
for _ in range(3):
    x11.XFlush(ctypes.c_void_p(display))
x11.XSync(ctypes.c_void_p(display), 0)
print("pending", x11.XPending(ctypes.c_void_p(display)))
x11.XCloseDisplay(ctypes.c_void_p(display))
"""


def test_python_ctypes_reaches_libx11_and_its_calls_show(xserver, tmp_path):
    _, events = traced([PYTHON, "-c", CTYPES_PROGRAM], xserver.display, tmp_path)
    counts = collections.Counter(names(events, "x11"))
    assert counts["XFlush"] == 3 and counts["XPending"] == 1 and counts["XSync"] >= 1


def test_xdpyinfo_prints_the_same(xserver):
    plain = run(["xdpyinfo"], env={"DISPLAY": xserver.display}, shim=False)
    shimmed = run(["xdpyinfo"], env={"DISPLAY": xserver.display})
    assert plain.returncode == 0 and len(plain.stdout) > 1000
    assert (shimmed.stdout, shimmed.stderr, shimmed.returncode) == (
        plain.stdout, plain.stderr, plain.returncode)


def test_remote_display_and_missing_mit_shm_are_reported(tmp_path):
    remote = Xvfb("-listen", "tcp", "-ac")
    no_shm = Xvfb("-nolisten", "tcp", "-extension", "MIT-SHM")
    try:
        cases = [("127.0.0.1:%d" % remote.number, "is remote (TCP)", "remote X display 127.0.0.1:"),
                 (no_shm.display, "offers no MIT-SHM", "no MIT-SHM on X display")]
        for display, line, mark in cases:
            for argv in ([program("test/x11_draw"), "2"], [program("test/xcb_draw"), "2"]):
                result, events = traced(argv, display, tmp_path)
                lines = result.stderr.decode().splitlines()
                assert len(lines) == 1 and lines[0].startswith("nvtxshim: ") and line in lines[0]
                marks = [e["name"] for e in events if e["ph"] == "i" and e["cat"] == "x11"]
                assert len(marks) == 1 and marks[0].startswith(mark), marks
    finally:
        remote.stop()
        no_shm.stop()


def test_xlib_ranges_in_the_nsys_export(xserver, tmp_path):
    env = clean_env({"DISPLAY": xserver.display, "LD_PRELOAD": SHIM})
    result = profile(tmp_path / "x11", [program("test/x11_draw"), "4"], env)
    assert b"frames=4 socket" in result.stdout
    events = nvtx_events(export_sqlite(tmp_path / "x11"))
    x11 = collections.Counter(e[2] for e in events if e[1] == "x11" and e[0] == 59)
    assert x11["XPutImage 160x120"] == 4 and x11["XFlush"] == 5 and x11["XGetImage 160x120"] == 1
    assert all(e[4] is not None and e[4] >= e[3] for e in events if e[0] == 59)
    assert {e[7] for e in events if e[2] == "XPutImage 160x120"} == {160 * 120 * 4}


GETPROCADDRESS_PROGRAM = r"""
import ctypes, os
class DlInfo(ctypes.Structure):
    _fields_ = [("fname", ctypes.c_char_p), ("fbase", ctypes.c_void_p),
                ("sname", ctypes.c_char_p), ("saddr", ctypes.c_void_p)]
libc = ctypes.CDLL(None)
def where(address):
    info = DlInfo()
    libc.dladdr(ctypes.c_void_p(address), ctypes.byref(info))
    return os.path.basename(info.fname.decode())
gl = ctypes.CDLL("libGL.so.1")
egl = ctypes.CDLL("libEGL.so.1")
for library, function in ((gl, "glXGetProcAddress"), (gl, "glXGetProcAddressARB"), (egl, "eglGetProcAddress")):
    lookup = getattr(library, function)
    lookup.restype = ctypes.c_void_p
    lookup.argtypes = [ctypes.c_char_p]
    for name in (b"glXSwapBuffers", b"eglSwapBuffers", b"glClear"):
        address = lookup(name)
        print(function, name.decode(), where(address) if address else None)
egl.eglGetProcAddress.restype = ctypes.c_void_p
swap = ctypes.CFUNCTYPE(ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p)(egl.eglGetProcAddress(b"eglSwapBuffers"))
print("eglSwapBuffers(no display) ->", swap(None, None))
"""


def test_get_proc_address_hands_out_wrappers_for_hooked_names(xserver, tmp_path):
    argv = [PYTHON, "-c", GETPROCADDRESS_PROGRAM]
    plain = run(argv, env={"DISPLAY": xserver.display}, shim=False)
    trace = tmp_path / "gpa.json"
    shimmed = run(argv, env={"DISPLAY": xserver.display, "NVTXSHIM_TRACE": str(trace)})
    assert plain.returncode == shimmed.returncode == 0, shimmed.stderr
    before, after = plain.stdout.decode().splitlines(), shimmed.stdout.decode().splitlines()
    assert len(before) == len(after) == 10
    for old, new in zip(before, after):
        function, name, found = new.split(" ", 2)
        if name[:3] == function[:3] and name.endswith("SwapBuffers"):
            assert found == "libnvtxshim.so" and old.split(" ", 2)[2] != "None", new
        else:
            # Other names, another API's names (GLX answers any name with a stub),
            # and the call's result are untouched.
            assert new == old
    assert names(load_trace(trace), "x11") == ["eglSwapBuffers"]


@pytest.mark.parametrize("program_name, flush", [("test/x11_draw", "XFlush"), ("test/xcb_draw", "xcb_flush")])
def test_flush_marks_frames(xserver, tmp_path, program_name, flush):
    _, events = traced([program(program_name), "3"], xserver.display, tmp_path,
                       env={"NVTXSHIM_FRAME": "x11.flush"})
    flushes = sorted((e for e in ranges(events, "x11") if e["name"] == flush), key=lambda e: e["ts"])
    frames = sorted(ranges(events, "nvtxshim"), key=lambda e: e["ts"])
    # The program flushes once as it sets up and once a frame: four flushes, four frames.
    assert len(flushes) == 4, [e["name"] for e in ranges(events, "x11")]
    assert [f["name"] for f in frames] == ["frame %d" % n for n in range(1, len(flushes) + 1)]
    # Frame N begins as the Nth flush does and ends as the next begins.
    for frame, flush_range, following in zip(frames, flushes, flushes[1:] + [None]):
        assert frame["ts"] <= flush_range["ts"]
        assert following is None or end_us(frame) <= following["ts"]


def test_every_xlib_round_trip_has_its_range(xserver, tmp_path):
    """Every Xlib round trip waits in _XReply (which waits in xcb_wait_for_reply64, twice): 100
    each of XInternAtom, XGetGeometry and XQueryPointer (calls the shim does not wrap) are
    exactly 300 more round-trip ranges than the same program making none."""
    def round_trips(n, label):
        _, events = traced([program("test/x11_round_trips"), str(n)], xserver.display, tmp_path,
                           label=label)
        waits = [e for e in ranges(events, "x11") if e["name"] in ("_XReply", "xcb_wait_for_reply64")]
        assert {e["args"]["category"] for e in waits} <= {"round trip"}
        assert nested(events) == []
        return len(waits)
    assert round_trips(100, "n100") - round_trips(0, "n0") == 300


def test_copy_area_and_a_bitmap_put(xserver, tmp_path):
    """XCopyArea is a draw range with its size and no payload (no image crosses the
    connection); a 64x16 bitmap (depth 1) carries 128 bytes, not 64*16*(1/8 rounded down)."""
    _, events = traced([program("test/x11_round_trips"), "0", "5"], xserver.display, tmp_path)
    x11 = ranges(events, "x11")
    copies = [e for e in x11 if e["name"] == "XCopyArea 64x32"]
    assert len(copies) == 5
    assert all("payload" not in e["args"] and e["args"]["category"] == "draw" for e in copies)
    puts = [e for e in x11 if e["name"] == "XPutImage 64x16"]
    assert [e["args"]["payload"] for e in puts] == [128]


def render_counts(mode, frames, display, tmp_path):
    _, events = traced([program("test/cairo_draw"), str(frames), mode], display, tmp_path,
                       label="%s%d" % (mode.strip("-"), frames))
    draws = [e for e in ranges(events, "x11") if e["args"]["category"] == "draw"]
    assert all("payload" not in e["args"] for e in draws if "Render" in e["name"] or
               "render" in e["name"])
    assert nested(events) == []
    return collections.Counter(e["name"] for e in draws)


@pytest.mark.parametrize("mode, names_per_frame", [
    ("--xlib", {"XRenderComposite 64x32": 1, "XRenderFillRectangle 40x20": 1,
                "XRenderFillRectangles": 1, "XRenderCompositeTrapezoids": 1,
                "XRenderCompositeText8": 1, "XRenderCompositeText16": 1}),
    ("--xcb", {"xcb_render_composite 64x32": 1, "xcb_render_fill_rectangles": 2,
               "xcb_render_trapezoids": 1, "xcb_render_composite_glyphs_8": 1,
               "xcb_render_composite_glyphs_16": 1}),
])
def test_cairo_draws_through_render(xserver, tmp_path, mode, names_per_frame):
    """cairo with alpha on an Xlib or XCB surface (test/programs/cairo_draw.c): each frame paints
    a 64x32 surface the server holds (one composite of 64x32, named with its size, no payload),
    fills a rectangle, a pair of rectangles, a circle (trapezoids) and two words of text (8- and
    16-bit glyphs).
    Each frame more makes exactly one more of each; the program prints the same checksum of
    what was drawn, traced or not."""
    one, four = (render_counts(mode, n, xserver.display, tmp_path) for n in (1, 4))
    for name, per_frame in names_per_frame.items():
        assert four[name] - one[name] == 3 * per_frame, (name, one, four)
    composite = next(name for name in names_per_frame if name.endswith("64x32"))
    assert one[composite] == 1 and four[composite] == 4


GTK_PROGRAM = r"""
import sys
import gi
gi.require_version("Gtk", "3.0")
from gi.repository import Gtk, GLib
window = Gtk.Window(title="nvtxshim")
area = Gtk.DrawingArea()
area.set_size_request(96, 64)
window.add(area)
draws = []
def draw(widget, cr):
    cr.set_source_rgba(0.9, 0.1, 0.1, 0.5)
    cr.rectangle(4, 4, 37, 23)
    cr.fill()
    cr.set_source_rgba(0.1, 0.1, 0.9, 0.5)
    cr.arc(60, 40, 15, 0, 6.283185307)
    cr.fill()
    if not draws:
        GLib.idle_add(Gtk.main_quit)
    draws.append(1)
    return False
area.connect("draw", draw)
window.connect("destroy", Gtk.main_quit)
window.show_all()
Gtk.main()
print("drawn")
print("draws", len(draws), file=sys.stderr)
"""


def test_gtk_window_draws_through_render(xserver, tmp_path):
    """A GTK 3 window whose drawing area fills a 37x23 rectangle and a circle with alpha in its
    draw handler, and quits once it has drawn: GTK's cairo (Xlib surface) makes one 37x23
    rectangle fill and at least one trapezoid composite a draw, no payload."""
    result, events = traced([PYTHON, "-c", GTK_PROGRAM], xserver.display, tmp_path, label="gtk")
    draws = int(next(line for line in result.stderr.decode().splitlines()
                     if line.startswith("draws ")).split()[1])
    counts = collections.Counter(names(events, "x11"))
    assert draws >= 1
    assert counts["XRenderFillRectangle 37x23"] == draws, counts
    assert counts["XRenderCompositeTrapezoids"] >= draws, counts
    assert all("payload" not in e["args"] for e in ranges(events, "x11")
               if e["name"].startswith("XRender"))


@pytest.mark.parametrize("mode", ["linked", "--proc"])
def test_gl_texture_uploads(xserver, tmp_path, mode):
    """A GLX program on Mesa's llvmpipe (test/programs/gl_upload.c) allocates a 64x64 texture
    (glTexImage2D without pixels: no payload) and uploads it once a frame, 64x64 RGBA bytes:
    N ranges of 16384 bytes in category upload, called through the linked symbol or through a
    pointer from glXGetProcAddressARB."""
    frames = 6
    argv = [program("test/gl_upload"), str(frames)] + ([mode] if mode != "linked" else [])
    _, events = traced(argv, xserver.display, tmp_path, label=mode.strip("-"))
    uploads = [e for e in ranges(events, "x11") if e["args"]["category"] == "upload"]
    assert [(e["name"], e["args"].get("payload")) for e in uploads] == \
        [("glTexImage2D 64x64", None)] + [("glTexSubImage2D 64x64", 64 * 64 * 4)] * frames
    assert collections.Counter(names(events, "x11"))["glXSwapBuffers"] == frames
    assert nested(events) == []


def test_gl_loop_beside_libusb_events_keeps_each_domains_names(xserver, tmp_path):
    """A GL display loop with a libusb event loop beside it (gl_upload --usb-events), as a USB
    camera rig has: each frame's glXSwapBuffers range is named glXSwapBuffers (display) and each
    libusb_handle_events range libusb_handle_events (USB). The two hooks' names had the same key
    in one table once (the domain folded into the hook's bits), and whichever registered first
    named both."""
    frames = 4
    argv = [program("test/gl_upload"), str(frames), "--usb-events"]
    _, events = traced(argv, xserver.display, tmp_path, label="usb-events")
    x11 = collections.Counter(names(events, "x11"))
    usb = collections.Counter(names(events, "usb"))
    assert x11["glXSwapBuffers"] == frames, x11
    assert usb == {"libusb_handle_events": frames}, usb


def test_gl_upload_payloads_follow_format_and_type(xserver, tmp_path):
    """8x4 uploads of RGBA/UNSIGNED_BYTE, RGB/UNSIGNED_BYTE, BGRA/UNSIGNED_INT_8_8_8_8_REV,
    RED/FLOAT, RG/HALF_FLOAT, LUMINANCE/UNSIGNED_BYTE, ALPHA/UNSIGNED_SHORT,
    RGB/UNSIGNED_SHORT_5_6_5, RGBA/FLOAT, DEPTH_COMPONENT/UNSIGNED_INT, and COLOR_INDEX/BITMAP (not
    known: no payload); then a 3D 8x4x2 RGBA/UNSIGNED_BYTE and an 8x4x1 RGBA/FLOAT sub-image."""
    _, events = traced([program("test/gl_upload"), "1", "--formats"], xserver.display, tmp_path)
    uploads = [(e["name"], e["args"].get("payload")) for e in ranges(events, "x11")
               if e["args"]["category"] == "upload"]
    per_pixel = [4, 3, 4, 4, 4, 1, 2, 2, 16, 4]
    assert uploads[2:] == [("glTexImage2D 8x4", 32 * n) for n in per_pixel] + [
        ("glTexImage2D 8x4", None), ("glTexImage3D 8x4x2", 8 * 4 * 2 * 4),
        ("glTexSubImage3D 8x4x1", 8 * 4 * 16)]


def lavapipe():
    icds = glob.glob("/usr/share/vulkan/icd.d/lvp_icd.*.json")
    assert icds and shutil.which("vkcube"), "vkcube and lavapipe are needed: make deps"
    return {"VK_ICD_FILENAMES": icds[0]}


def test_vulkan_presents_are_swaps_and_frames(xserver, tmp_path):
    """vkcube (vulkan-tools) on lavapipe, N frames: it takes vkQueuePresentKHR from the loader
    through vkGetInstanceProcAddr("vkGetDeviceProcAddr"), and gets the wrapper. Exactly N
    present ranges in category swap, and with NVTXSHIM_FRAME=x11.swap frames 1..N, each
    beginning as its present does."""
    frames = 7
    env = dict(lavapipe(), NVTXSHIM_FRAME="x11.swap")
    argv = ["vkcube", "--c", str(frames)]
    plain = run(argv, env={"DISPLAY": xserver.display, **lavapipe()}, shim=False)
    trace = tmp_path / "vk.json"
    shimmed = run(argv, env={"DISPLAY": xserver.display, "NVTXSHIM_TRACE": str(trace), **env})
    assert plain.returncode == 0, plain.stderr
    assert (shimmed.stdout, shimmed.returncode) == (plain.stdout, plain.returncode)
    events = load_trace(trace)
    presents = sorted((e for e in ranges(events, "x11") if e["name"] == "vkQueuePresentKHR"),
                      key=lambda e: e["ts"])
    assert len(presents) == frames
    assert {e["args"]["category"] for e in presents} == {"swap"}
    frame_ranges = sorted(ranges(events, "nvtxshim"), key=lambda e: e["ts"])
    assert [f["name"] for f in frame_ranges] == ["frame %d" % n for n in range(1, frames + 1)]
    for frame, present in zip(frame_ranges, presents):
        assert frame["ts"] <= present["ts"]
    assert nested(events) == []


LAYER_PROGRAM = r"""
import ctypes, os, sys
class DlInfo(ctypes.Structure):
    _fields_ = [("fname", ctypes.c_char_p), ("fbase", ctypes.c_void_p),
                ("sname", ctypes.c_char_p), ("saddr", ctypes.c_void_p)]
libc = ctypes.CDLL(None)
def where(address):
    info = DlInfo()
    libc.dladdr(ctypes.c_void_p(address), ctypes.byref(info))
    return os.path.basename(info.fname.decode()) if address else None
vulkan = ctypes.CDLL("libvulkan.so.1")
layer = ctypes.CDLL(sys.argv[1])
for name in ("vkGetInstanceProcAddr", "vkGetDeviceProcAddr"):
    print("layer", name, where(ctypes.cast(getattr(layer, name), ctypes.c_void_p).value))
lookup = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)
gipa = lookup(ctypes.cast(vulkan.vkGetInstanceProcAddr, ctypes.c_void_p).value)
print("vkGetInstanceProcAddr", where(ctypes.cast(vulkan.vkGetInstanceProcAddr, ctypes.c_void_p).value))
found = gipa(None, b"vkGetInstanceProcAddr")
print("loader vkGetInstanceProcAddr", where(found))
version = ctypes.c_uint32()
enumerate_version = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_uint32))(
    lookup(found)(None, b"vkEnumerateInstanceVersion"))
print("vkEnumerateInstanceVersion", enumerate_version(ctypes.byref(version)), version.value >> 22)
"""


def test_a_vulkan_layers_own_lookups_stay_its_own(tmp_path):
    """The loader looks a layer's vkGetInstanceProcAddr and vkGetDeviceProcAddr up with dlsym,
    maybe before the program's first call to the loader's: the layer's own functions are
    answered (not taken for the loader's and wrapped), while the loader's vkGetInstanceProcAddr,
    asked of dlsym or of itself, is the wrapper, whose answers are the loader's."""
    layers = glob.glob("/usr/lib/*/libVkLayer_MESA_overlay.so")
    assert layers, "mesa-vulkan-drivers is needed: make deps"
    argv = [PYTHON, "-c", LAYER_PROGRAM, layers[0]]
    plain = run(argv, shim=False)
    shimmed = run(argv, env={"NVTXSHIM_TRACE": str(tmp_path / "layer.json")})
    assert plain.returncode == shimmed.returncode == 0, shimmed.stderr
    before, after = plain.stdout.decode().splitlines(), shimmed.stdout.decode().splitlines()
    assert before[:2] == after[:2] == ["layer vkGetInstanceProcAddr libVkLayer_MESA_overlay.so",
                                       "layer vkGetDeviceProcAddr libVkLayer_MESA_overlay.so"]
    assert before[2:4] == ["vkGetInstanceProcAddr libvulkan.so.1",
                           "loader vkGetInstanceProcAddr libvulkan.so.1"]
    assert after[2:4] == ["vkGetInstanceProcAddr libnvtxshim.so",
                          "loader vkGetInstanceProcAddr libnvtxshim.so"]
    assert after[4] == before[4] and before[4].startswith("vkEnumerateInstanceVersion 0 1")


def test_the_user_guide_names_every_x11_call_the_library_draws():
    """Each function in registry/x11.def, `_XReply` (the name of Xlib's round trips) among them, is
    named in the user guide (docs/user-guide.md, What you see), where a user reading a trace looks
    a range's name up."""
    with open(os.path.join(ROOT, "libnvtxshim", "registry", "x11.def")) as f:
        hooked = re.findall(r"^NVS_HOOK\((\w+),", f.read(), re.M)
    with open(os.path.join(ROOT, "docs", "user-guide.md")) as f:
        guide = f.read()
    assert "_XReply" in hooked
    assert [name for name in hooked if "`%s`" % name not in guide] == []
