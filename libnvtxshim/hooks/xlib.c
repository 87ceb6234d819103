/* Xlib (libX11) in NVTX domain "x11": drawing, flushes, round trips and event
 * waits; MIT-SHM's image (libXext) and RENDER's composites (libXrender), which
 * take the same Display. Xlib is built on XCB (xcb.c): its calls into XCB run
 * below depth 0 and pass straight through. */
#define _GNU_SOURCE
#include <X11/Xlib.h>
#include <X11/Xlibint.h>
#include <X11/extensions/XShm.h>
#include <X11/extensions/Xrender.h>

#include "display.h"

/* The bytes of a WIDTH x HEIGHT part of IMAGE as the request carries them:
 * whole bytes per row at its bits per pixel (ZPixmap), or a bit per pixel in
 * each plane (XYBitmap, XYPixmap); a 64x16 bitmap is 128 bytes. */
static uint64_t image_bytes(const XImage *image, unsigned width, unsigned height)
{
    if (!image)
        return (uint64_t)width * height * 4;
    if (image->format == ZPixmap)
        return ((uint64_t)width * (unsigned)image->bits_per_pixel + 7) / 8 * height;
    unsigned planes = image->format == XYBitmap ? 1 : (unsigned)image->depth;
    return ((uint64_t)width + 7) / 8 * height * planes;
}

/* ---- Xlib ------------------------------------------------------------------ */

X11_SPLIT(int, XPutImage,
          (Display * display, Drawable drawable, GC gc, XImage *image, int source_x, int source_y,
           int x, int y, unsigned int width, unsigned int height),
          (display, drawable, gc, image, source_x, source_y, x, y, width, height), nvs_resolve, 0,
          nvs_check_xlib(display),
          nvs_x11_begin_image(NVS_HOOK_ID(XPutImage), width, height,
                              image_bytes(image, width, height)))

X11_SPLIT(Bool, XShmPutImage,
          (Display * display, Drawable drawable, GC gc, XImage *image, int source_x, int source_y,
           int x, int y, unsigned int width, unsigned int height, Bool send_event),
          (display, drawable, gc, image, source_x, source_y, x, y, width, height, send_event),
          nvs_resolve, 0, nvs_check_xlib(display),
          nvs_x11_begin_image(NVS_HOOK_ID(XShmPutImage), width, height,
                              image_bytes(image, width, height)))

/* A copy inside the server: no image data crosses the connection. */
X11_SPLIT(int, XCopyArea,
          (Display * display, Drawable source, Drawable destination, GC gc, int source_x,
           int source_y, unsigned int width, unsigned int height, int x, int y),
          (display, source, destination, gc, source_x, source_y, width, height, x, y), nvs_resolve,
          0, nvs_check_xlib(display),
          nvs_x11_begin_area(NVS_HOOK_ID(XCopyArea), width, height, false, 0))

/* The reply's size is known only afterwards: the payload counts 4 bytes a pixel. */
X11_SPLIT(XImage *, XGetImage,
          (Display * display, Drawable drawable, int x, int y, unsigned int width,
           unsigned int height, unsigned long plane_mask, int format),
          (display, drawable, x, y, width, height, plane_mask, format), nvs_resolve, NULL,
          nvs_check_xlib(display),
          nvs_x11_begin_image(NVS_HOOK_ID(XGetImage), width, height, 4ull * width * height))

X11_SPLIT(int, XFlush, (Display * display), (display), nvs_resolve, 0, nvs_check_xlib(display),
          nvs_x11_begin(NVS_HOOK_ID(XFlush), NVS_X11_FLUSH, NVS_FRAME_X11_FLUSH))

X11_SPLIT(int, XSync, (Display * display, Bool discard), (display, discard), nvs_resolve, 0,
          nvs_check_xlib(display),
          nvs_x11_begin(NVS_HOOK_ID(XSync), NVS_X11_ROUND_TRIP, NVS_FRAME_OFF))

/* Every Xlib round trip waits for its reply here, once (XInternAtom,
 * XGetGeometry, XQueryPointer... and XSync, whose own range holds it): the
 * xcb_wait_for_reply64 calls it makes inside (two a round trip, one of them
 * for a reply already read) are below it and pass through. */
X11_SPLIT(Status, _XReply, (Display * display, xReply *reply, int extra, Bool discard),
          (display, reply, extra, discard), nvs_resolve, 0, (void)0,
          nvs_x11_begin(NVS_HOOK_ID(_XReply), NVS_X11_ROUND_TRIP, NVS_FRAME_OFF))

X11_SPLIT(int, XNextEvent, (Display * display, XEvent *event), (display, event), nvs_resolve, 0,
          nvs_check_xlib(display),
          nvs_x11_begin(NVS_HOOK_ID(XNextEvent), NVS_X11_WAIT, NVS_FRAME_OFF))

X11_SPLIT(int, XPeekEvent, (Display * display, XEvent *event), (display, event), nvs_resolve, 0,
          nvs_check_xlib(display),
          nvs_x11_begin(NVS_HOOK_ID(XPeekEvent), NVS_X11_WAIT, NVS_FRAME_OFF))

X11_SPLIT(int, XWindowEvent, (Display * display, Window window, long mask, XEvent *event),
          (display, window, mask, event), nvs_resolve, 0, nvs_check_xlib(display),
          nvs_x11_begin(NVS_HOOK_ID(XWindowEvent), NVS_X11_WAIT, NVS_FRAME_OFF))

X11_SPLIT(int, XMaskEvent, (Display * display, long mask, XEvent *event), (display, mask, event),
          nvs_resolve, 0, nvs_check_xlib(display),
          nvs_x11_begin(NVS_HOOK_ID(XMaskEvent), NVS_X11_WAIT, NVS_FRAME_OFF))

/* The predicate is the program's code, called from inside Xlib: its calls are its own. */
X11_SPLIT(int, XIfEvent,
          (Display * display, XEvent *event, Bool (*predicate)(Display *, XEvent *, XPointer),
           XPointer argument),
          (display, event, predicate, argument), nvs_resolve, 0, nvs_check_xlib(display),
          nvs_x11_begin(NVS_HOOK_ID(XIfEvent), NVS_X11_WAIT, NVS_FRAME_OFF))

X11_SPLIT(int, XPending, (Display * display), (display), nvs_resolve, 0, nvs_check_xlib(display),
          nvs_x11_begin(NVS_HOOK_ID(XPending), NVS_X11_FLUSH, NVS_FRAME_OFF))

/* ---- RENDER ------------------------------------------------------------------------
 * Composites and fills the server does from pictures it holds (GTK and cairo draw
 * this way): no image crosses the connection, so no payload. A call that gives
 * one size has it in the name; the ones that take a list (rectangles,
 * trapezoids, glyphs) are named after the function. */

X11_SPLIT(void, XRenderComposite,
          (Display * display, int op, Picture source, Picture mask, Picture destination,
           int source_x, int source_y, int mask_x, int mask_y, int x, int y, unsigned int width,
           unsigned int height),
          (display, op, source, mask, destination, source_x, source_y, mask_x, mask_y, x, y, width,
           height),
          nvs_resolve, , nvs_check_xlib(display),
          nvs_x11_begin_area(NVS_HOOK_ID(XRenderComposite), width, height, false, 0))

X11_SPLIT(void, XRenderFillRectangle,
          (Display * display, int op, Picture destination, const XRenderColor *color, int x, int y,
           unsigned int width, unsigned int height),
          (display, op, destination, color, x, y, width, height), nvs_resolve, ,
          nvs_check_xlib(display),
          nvs_x11_begin_area(NVS_HOOK_ID(XRenderFillRectangle), width, height, false, 0))

X11_SPLIT(void, XRenderFillRectangles,
          (Display * display, int op, Picture destination, const XRenderColor *color,
           const XRectangle *rectangles, int count),
          (display, op, destination, color, rectangles, count), nvs_resolve, ,
          nvs_check_xlib(display),
          nvs_x11_begin(NVS_HOOK_ID(XRenderFillRectangles), NVS_X11_DRAW, NVS_FRAME_OFF))

X11_SPLIT(void, XRenderCompositeTrapezoids,
          (Display * display, int op, Picture source, Picture destination,
           const XRenderPictFormat *mask_format, int source_x, int source_y,
           const XTrapezoid *trapezoids, int count),
          (display, op, source, destination, mask_format, source_x, source_y, trapezoids, count),
          nvs_resolve, , nvs_check_xlib(display),
          nvs_x11_begin(NVS_HOOK_ID(XRenderCompositeTrapezoids), NVS_X11_DRAW, NVS_FRAME_OFF))

/* Text: glyphs the server holds, composited (cairo's Xlib text). */
#define RENDER_TEXT(name, item)                                                                    \
    NVS_SPLIT_WRAPPER(                                                                             \
        NVS_HOOKS_X11, void, name,                                                                 \
        (Display * display, int op, Picture source, Picture destination,                           \
         const XRenderPictFormat *mask_format, int source_x, int source_y, int x, int y,           \
         const item *items, int count),                                                            \
        (display, op, source, destination, mask_format, source_x, source_y, x, y, items, count),   \
        nvs_resolve, , nvs_check_xlib(display);                                                    \
        nvs_x11_begin(NVS_HOOK_ID(name), NVS_X11_DRAW, NVS_FRAME_OFF), nvs_x11_end())

RENDER_TEXT(XRenderCompositeText8, XGlyphElt8)
RENDER_TEXT(XRenderCompositeText16, XGlyphElt16)
RENDER_TEXT(XRenderCompositeText32, XGlyphElt32)
