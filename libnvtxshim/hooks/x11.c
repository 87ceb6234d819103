/* X11 in NVTX domain "x11": Xlib and XCB drawing, RENDER composites, flushes,
 * round trips and event waits, GLX/EGL buffer swaps, GL texture uploads and
 * Vulkan presents. Xlib is built on XCB and Mesa on both: their calls into one
 * another run below depth 0 and pass straight through. */
#define _GNU_SOURCE
#include <EGL/egl.h>
#include <GL/glx.h>
#include <X11/Xlib.h>
#include <X11/Xlibint.h>
#include <X11/extensions/XShm.h>
#include <X11/extensions/Xrender.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <vulkan/vulkan.h>
#include <xcb/render.h>
#include <xcb/shm.h>
#include <xcb/xcb.h>
#include <xcb/xcbext.h>

#include "../emit.h"
#include "../hook.h"
#include "../log.h"


/* ---- where the display is ------------------------------------------------- */

static atomic_bool display_checked;

static void say(const char *text)
{
    struct nvs_attributes mark = {
        .domain = NVS_DOMAIN_X11, .name = { NULL, text }, .category = NVS_X11_WARNING,
        .color = NVS_COLOR_ERROR,
    };
    nvs_mark(&mark);
}

/* A display reached over TCP (host:N, ssh -X's localhost:10) pays the network on
 * every round trip and cannot use MIT-SHM; a local one may still lack MIT-SHM
 * (a container without the host's IPC namespace). Said once per process. */
static void report_display(const char *name, int fd, int (*has_shm)(void *), void *connection)
{
    struct sockaddr_storage address;
    socklen_t length = sizeof address;
    char text[192], shown[NVS_CONFIG_SHOWN_SIZE];
    name = nvs_config_shown(shown, name, strlen(name));     /* $DISPLAY may hold anything */
    bool remote = getsockname(fd, (struct sockaddr *)&address, &length) == 0 &&
                  (address.ss_family == AF_INET || address.ss_family == AF_INET6);
    if (remote) {
        snprintf(text, sizeof text, "remote X display %s (TCP): round trips cross the network, "
                 "no MIT-SHM", name);
        nvs_log_info("X display '%s' is remote (TCP): every round trip crosses the network and "
                     "images cannot use MIT-SHM\n", name);
        say(text);
    } else if (!has_shm(connection)) {
        snprintf(text, sizeof text, "no MIT-SHM on X display %s: images go through the socket", name);
        nvs_log_info("X display '%s' offers no MIT-SHM: images go through the socket\n", name);
        say(text);
    }
}

static int xlib_has_shm(void *display)
{
    int opcode, event, error;
    static _Atomic(void *) found;
    __typeof__(&XQueryExtension) query = (__typeof__(&XQueryExtension))
        nvs_find_function_once(&found, "libX11.so.6", "XQueryExtension");
    return query && query(display, "MIT-SHM", &opcode, &event, &error);
}

static int xcb_has_shm(void *connection)
{
    static _Atomic(void *) found_query, found_reply;
    __typeof__(&xcb_query_extension) query = (__typeof__(&xcb_query_extension))
        nvs_find_function_once(&found_query, "libxcb.so.1", "xcb_query_extension");
    __typeof__(&xcb_query_extension_reply) reply_of = (__typeof__(&xcb_query_extension_reply))
        nvs_find_function_once(&found_reply, "libxcb.so.1", "xcb_query_extension_reply");
    if (!query || !reply_of)
        return 1;
    xcb_query_extension_reply_t *reply =
        reply_of(connection, query(connection, 7, "MIT-SHM"), NULL);
    int present = reply && reply->present;
    free(reply);
    return present;
}

static void check_xlib(Display *display)
{
    if (!display || atomic_load_explicit(&display_checked, memory_order_relaxed) ||
        atomic_exchange(&display_checked, true))
        return;
    report_display(DisplayString(display), ConnectionNumber(display), xlib_has_shm, display);
}

static void check_xcb(xcb_connection_t *connection)
{
    if (!connection || atomic_load_explicit(&display_checked, memory_order_relaxed) ||
        atomic_exchange(&display_checked, true))
        return;
    static _Atomic(void *) found;
    __typeof__(&xcb_get_file_descriptor) descriptor_of = (__typeof__(&xcb_get_file_descriptor))
        nvs_find_function_once(&found, "libxcb.so.1", "xcb_get_file_descriptor");
    if (descriptor_of)
        report_display(nvs_config()->display[0] ? nvs_config()->display : "(unknown)",
                       descriptor_of(connection), xcb_has_shm, connection);
}

/* ---- ranges -------------------------------------------------------------- */

/* A range named after the function, in CATEGORY; MARKER counts it as a frame marker. */
/* Out of line, like begin_image and end: the wrappers' untraced path then
 * saves no register for them. */
static __attribute__((noinline)) void begin(enum nvs_hook_id id, enum nvs_x11_category category,
                                            enum nvs_frame_marker marker)
{
    struct nvs_attributes range = {
        .domain = NVS_DOMAIN_X11, .category = category,
        .color = nvs_category_color(NVS_DOMAIN_X11, category),
    };
    nvs_call_open(id, marker, -1, &range);
}

/* An area of WIDTH x HEIGHT: the size in the name; BYTES, when the call
 * moves image data between the program and the server, as the payload. */
static __attribute__((noinline)) void begin_area(enum nvs_hook_id id, unsigned width,
                                                 unsigned height, bool moves, uint64_t bytes)
{
    struct nvs_attributes range = {
        .domain = NVS_DOMAIN_X11, .category = NVS_X11_DRAW, .color = NVS_COLOR_X11_DRAW,
        .payload = bytes, .has_payload = moves,
    };
    char text[NVS_CALL_TEXT_MAX];
    uint64_t key = ((uint64_t)(id + 1) << 48) | ((uint64_t)(width & 0xffffff) << 24) |
                   (height & 0xffffff);
    NVS_NAME(range.name, NVS_DOMAIN_X11, key, text, "%s %ux%u", nvs_hook_name(id), width, height);
    nvs_call_open(id, NVS_FRAME_OFF, -1, &range);
}

static void begin_image(enum nvs_hook_id id, unsigned width, unsigned height, uint64_t bytes)
{
    begin_area(id, width, height, true, bytes);
}

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

static __attribute__((noinline)) void end(void)
{
    nvs_call_close(NVS_DOMAIN_X11);
}

/* Bytes per pixel of a drawable of DEPTH bits, as the server stores ZPixmap data. */
static unsigned bytes_per_pixel(unsigned depth)
{
    return depth > 16 ? 4 : depth > 8 ? 2 : 1;
}

/* Pass through when untraced, else one range around the real call. CHECK
 * looks at the display once; OPENING opens the range. */
#define X11_CALL(name, check, opening, arguments)                                          \
    NVS_WRAPPER_BODY(NVS_HOOKS_X11, nvs_resolve, name, (__typeof__(real arguments)){ 0 },    \
                     arguments, check; opening, end())

/* The RENDER, GL upload and Vulkan present wrappers come in two halves
 * (NVS_SPLIT_WRAPPER, hook.h): the traced half finds the real function with
 * FIND(id) (MISSING when there is none; nothing for a void function), does
 * CHECK and OPENING, makes the call and ends the range. */
#define X11_SPLIT(type, name, parameters, arguments, find, missing, check, opening)         \
    NVS_SPLIT_WRAPPER(NVS_HOOKS_X11, type, name, parameters, arguments,                      \
        NVS_WRAPPER_BODY(NVS_HOOKS_X11, find, name, missing, arguments, check; opening, end()))

/* ---- Xlib ------------------------------------------------------------------ */

NVS_EXPORT int XPutImage(Display *display, Drawable drawable, GC gc, XImage *image, int source_x,
                     int source_y, int x, int y, unsigned int width, unsigned int height)
{
    X11_CALL(XPutImage, check_xlib(display),
             begin_image(NVS_HOOK_ID(XPutImage), width, height, image_bytes(image, width, height)),
             (display, drawable, gc, image, source_x, source_y, x, y, width, height));
}

NVS_EXPORT Bool XShmPutImage(Display *display, Drawable drawable, GC gc, XImage *image, int source_x,
                         int source_y, int x, int y, unsigned int width, unsigned int height,
                         Bool send_event)
{
    X11_CALL(XShmPutImage, check_xlib(display),
             begin_image(NVS_HOOK_ID(XShmPutImage), width, height, image_bytes(image, width, height)),
             (display, drawable, gc, image, source_x, source_y, x, y, width, height, send_event));
}

/* A copy inside the server: no image data crosses the connection. */
NVS_EXPORT int XCopyArea(Display *display, Drawable source, Drawable destination, GC gc, int source_x,
                     int source_y, unsigned int width, unsigned int height, int x, int y)
{
    X11_CALL(XCopyArea, check_xlib(display),
             begin_area(NVS_HOOK_ID(XCopyArea), width, height, false, 0),
             (display, source, destination, gc, source_x, source_y, width, height, x, y));
}

NVS_EXPORT XImage *XGetImage(Display *display, Drawable drawable, int x, int y, unsigned int width,
                         unsigned int height, unsigned long plane_mask, int format)
{
    /* The reply's size is known only afterwards: the payload counts 4 bytes a pixel. */
    X11_CALL(XGetImage, check_xlib(display),
             begin_image(NVS_HOOK_ID(XGetImage), width, height, (uint64_t)width * height * 4),
             (display, drawable, x, y, width, height, plane_mask, format));
}

NVS_EXPORT int XFlush(Display *display)
{
    X11_CALL(XFlush, check_xlib(display),
             begin(NVS_HOOK_ID(XFlush), NVS_X11_FLUSH, NVS_FRAME_X11_FLUSH), (display));
}

NVS_EXPORT int XSync(Display *display, Bool discard)
{
    X11_CALL(XSync, check_xlib(display),
             begin(NVS_HOOK_ID(XSync), NVS_X11_ROUND_TRIP, NVS_FRAME_OFF), (display, discard));
}

/* Every Xlib round trip waits for its reply here, once (XInternAtom,
 * XGetGeometry, XQueryPointer... and XSync, whose own range holds it): the
 * xcb_wait_for_reply64 calls it makes inside (two a round trip, one of them
 * for a reply already read) are below it and pass through. */
NVS_EXPORT Status _XReply(Display *display, xReply *reply, int extra, Bool discard)
{
    X11_CALL(_XReply, (void)0, begin(NVS_HOOK_ID(_XReply), NVS_X11_ROUND_TRIP, NVS_FRAME_OFF),
             (display, reply, extra, discard));
}

NVS_EXPORT int XNextEvent(Display *display, XEvent *event)
{
    X11_CALL(XNextEvent, check_xlib(display),
             begin(NVS_HOOK_ID(XNextEvent), NVS_X11_WAIT, NVS_FRAME_OFF), (display, event));
}

NVS_EXPORT int XPeekEvent(Display *display, XEvent *event)
{
    X11_CALL(XPeekEvent, check_xlib(display),
             begin(NVS_HOOK_ID(XPeekEvent), NVS_X11_WAIT, NVS_FRAME_OFF), (display, event));
}

NVS_EXPORT int XWindowEvent(Display *display, Window window, long mask, XEvent *event)
{
    X11_CALL(XWindowEvent, check_xlib(display),
             begin(NVS_HOOK_ID(XWindowEvent), NVS_X11_WAIT, NVS_FRAME_OFF),
             (display, window, mask, event));
}

NVS_EXPORT int XMaskEvent(Display *display, long mask, XEvent *event)
{
    X11_CALL(XMaskEvent, check_xlib(display),
             begin(NVS_HOOK_ID(XMaskEvent), NVS_X11_WAIT, NVS_FRAME_OFF), (display, mask, event));
}

NVS_EXPORT int XIfEvent(Display *display, XEvent *event,
                    Bool (*predicate)(Display *, XEvent *, XPointer), XPointer argument)
{
    /* The predicate is the program's code, called from inside Xlib: its calls are its own. */
    X11_CALL(XIfEvent, check_xlib(display),
             begin(NVS_HOOK_ID(XIfEvent), NVS_X11_WAIT, NVS_FRAME_OFF),
             (display, event, predicate, argument));
}

NVS_EXPORT int XPending(Display *display)
{
    X11_CALL(XPending, check_xlib(display),
             begin(NVS_HOOK_ID(XPending), NVS_X11_FLUSH, NVS_FRAME_OFF), (display));
}

/* ---- XCB -------------------------------------------------------------------- */

NVS_EXPORT int xcb_flush(xcb_connection_t *connection)
{
    X11_CALL(xcb_flush, check_xcb(connection),
             begin(NVS_HOOK_ID(xcb_flush), NVS_X11_FLUSH, NVS_FRAME_X11_FLUSH), (connection));
}

NVS_EXPORT xcb_generic_event_t *xcb_wait_for_event(xcb_connection_t *connection)
{
    X11_CALL(xcb_wait_for_event, check_xcb(connection),
             begin(NVS_HOOK_ID(xcb_wait_for_event), NVS_X11_WAIT, NVS_FRAME_OFF), (connection));
}

NVS_EXPORT void *xcb_wait_for_reply(xcb_connection_t *connection, unsigned int request,
                                xcb_generic_error_t **error)
{
    X11_CALL(xcb_wait_for_reply, check_xcb(connection),
             begin(NVS_HOOK_ID(xcb_wait_for_reply), NVS_X11_ROUND_TRIP, NVS_FRAME_OFF),
             (connection, request, error));
}

/* Xlib (1.8) waits for its replies here: every Xlib round trip. The display
 * is not looked at from inside Xlib's wait (that would send requests on the
 * connection Xlib is reading); the next Xlib call does it. */
NVS_EXPORT void *xcb_wait_for_reply64(xcb_connection_t *connection, uint64_t request,
                                  xcb_generic_error_t **error)
{
    X11_CALL(xcb_wait_for_reply64, (void)0,
             begin(NVS_HOOK_ID(xcb_wait_for_reply64), NVS_X11_ROUND_TRIP, NVS_FRAME_OFF),
             (connection, request, error));
}

/* The round trip that asks whether a checked request failed. */
NVS_EXPORT xcb_generic_error_t *xcb_request_check(xcb_connection_t *connection, xcb_void_cookie_t cookie)
{
    X11_CALL(xcb_request_check, (void)0,
             begin(NVS_HOOK_ID(xcb_request_check), NVS_X11_ROUND_TRIP, NVS_FRAME_OFF),
             (connection, cookie));
}

NVS_EXPORT xcb_void_cookie_t xcb_put_image(xcb_connection_t *connection, uint8_t format,
                                       xcb_drawable_t drawable, xcb_gcontext_t gc, uint16_t width,
                                       uint16_t height, int16_t x, int16_t y, uint8_t left_pad,
                                       uint8_t depth, uint32_t data_length, const uint8_t *data)
{
    X11_CALL(xcb_put_image, check_xcb(connection),
             begin_image(NVS_HOOK_ID(xcb_put_image), width, height, data_length),
             (connection, format, drawable, gc, width, height, x, y, left_pad, depth, data_length,
              data));
}

NVS_EXPORT xcb_void_cookie_t xcb_shm_put_image(xcb_connection_t *connection, xcb_drawable_t drawable,
                                           xcb_gcontext_t gc, uint16_t total_width,
                                           uint16_t total_height, uint16_t source_x,
                                           uint16_t source_y, uint16_t source_width,
                                           uint16_t source_height, int16_t x, int16_t y,
                                           uint8_t depth, uint8_t format, uint8_t send_event,
                                           xcb_shm_seg_t segment, uint32_t offset)
{
    X11_CALL(xcb_shm_put_image, check_xcb(connection),
             begin_image(NVS_HOOK_ID(xcb_shm_put_image), source_width, source_height,
                         (uint64_t)source_width * source_height * bytes_per_pixel(depth)),
             (connection, drawable, gc, total_width, total_height, source_x, source_y,
              source_width, source_height, x, y, depth, format, send_event, segment, offset));
}

/* ---- RENDER ------------------------------------------------------------------------
 * Composites and fills the server does from pictures it holds (GTK and cairo draw
 * this way): no image crosses the connection, so no payload. A call that gives
 * one size has it in the name; the ones that take a list (rectangles,
 * trapezoids, glyphs) are named after the function. */

X11_SPLIT(void, XRenderComposite,
               (Display *display, int op, Picture source, Picture mask, Picture destination,
                int source_x, int source_y, int mask_x, int mask_y, int x, int y,
                unsigned int width, unsigned int height),
               (display, op, source, mask, destination, source_x, source_y, mask_x, mask_y, x, y,
                width, height),
               nvs_resolve, , check_xlib(display),
               begin_area(NVS_HOOK_ID(XRenderComposite), width, height, false, 0))

X11_SPLIT(void, XRenderFillRectangle,
               (Display *display, int op, Picture destination, const XRenderColor *color, int x,
                int y, unsigned int width, unsigned int height),
               (display, op, destination, color, x, y, width, height),
               nvs_resolve, , check_xlib(display),
               begin_area(NVS_HOOK_ID(XRenderFillRectangle), width, height, false, 0))

X11_SPLIT(void, XRenderFillRectangles,
               (Display *display, int op, Picture destination, const XRenderColor *color,
                const XRectangle *rectangles, int count),
               (display, op, destination, color, rectangles, count),
               nvs_resolve, , check_xlib(display),
               begin(NVS_HOOK_ID(XRenderFillRectangles), NVS_X11_DRAW, NVS_FRAME_OFF))

X11_SPLIT(void, XRenderCompositeTrapezoids,
               (Display *display, int op, Picture source, Picture destination,
                const XRenderPictFormat *mask_format, int source_x, int source_y,
                const XTrapezoid *trapezoids, int count),
               (display, op, source, destination, mask_format, source_x, source_y, trapezoids,
                count),
               nvs_resolve, , check_xlib(display),
               begin(NVS_HOOK_ID(XRenderCompositeTrapezoids), NVS_X11_DRAW, NVS_FRAME_OFF))

/* Text: glyphs the server holds, composited (cairo's Xlib text). */
#define RENDER_TEXT(name, item)                                                              \
    NVS_SPLIT_WRAPPER(NVS_HOOKS_X11, void, name,                                             \
                      (Display *display, int op, Picture source, Picture destination,        \
                       const XRenderPictFormat *mask_format, int source_x, int source_y,     \
                       int x, int y, const item *items, int count),                          \
                      (display, op, source, destination, mask_format, source_x, source_y, x, \
                       y, items, count),                                                     \
        NVS_WRAPPER_BODY(NVS_HOOKS_X11, nvs_resolve, name, ,                                 \
                         (display, op, source, destination, mask_format, source_x, source_y, \
                          x, y, items, count),                                               \
                         check_xlib(display);                                                \
                         begin(NVS_HOOK_ID(name), NVS_X11_DRAW, NVS_FRAME_OFF), end()))

RENDER_TEXT(XRenderCompositeText8, XGlyphElt8)
RENDER_TEXT(XRenderCompositeText16, XGlyphElt16)
RENDER_TEXT(XRenderCompositeText32, XGlyphElt32)

X11_SPLIT(xcb_void_cookie_t, xcb_render_composite,
          (xcb_connection_t *connection, uint8_t op, xcb_render_picture_t source,
           xcb_render_picture_t mask, xcb_render_picture_t destination, int16_t source_x,
           int16_t source_y, int16_t mask_x, int16_t mask_y, int16_t x, int16_t y, uint16_t width,
           uint16_t height),
          (connection, op, source, mask, destination, source_x, source_y, mask_x, mask_y, x, y,
           width, height),
          nvs_resolve, (xcb_void_cookie_t){ 0 }, check_xcb(connection),
          begin_area(NVS_HOOK_ID(xcb_render_composite), width, height, false, 0))

X11_SPLIT(xcb_void_cookie_t, xcb_render_fill_rectangles,
          (xcb_connection_t *connection, uint8_t op, xcb_render_picture_t destination,
           xcb_render_color_t color, uint32_t count, const xcb_rectangle_t *rectangles),
          (connection, op, destination, color, count, rectangles),
          nvs_resolve, (xcb_void_cookie_t){ 0 }, check_xcb(connection),
          begin(NVS_HOOK_ID(xcb_render_fill_rectangles), NVS_X11_DRAW, NVS_FRAME_OFF))

X11_SPLIT(xcb_void_cookie_t, xcb_render_trapezoids,
          (xcb_connection_t *connection, uint8_t op, xcb_render_picture_t source,
           xcb_render_picture_t destination, xcb_render_pictformat_t mask_format, int16_t source_x,
           int16_t source_y, uint32_t count, const xcb_render_trapezoid_t *trapezoids),
          (connection, op, source, destination, mask_format, source_x, source_y, count,
           trapezoids),
          nvs_resolve, (xcb_void_cookie_t){ 0 }, check_xcb(connection),
          begin(NVS_HOOK_ID(xcb_render_trapezoids), NVS_X11_DRAW, NVS_FRAME_OFF))

#define RENDER_GLYPHS(name)                                                                  \
    NVS_SPLIT_WRAPPER(NVS_HOOKS_X11, xcb_void_cookie_t, name,                                \
                      (xcb_connection_t *connection, uint8_t op, xcb_render_picture_t source, \
                       xcb_render_picture_t destination, xcb_render_pictformat_t mask_format, \
                       xcb_render_glyphset_t glyphset, int16_t source_x, int16_t source_y,   \
                       uint32_t length, const uint8_t *commands),                            \
                      (connection, op, source, destination, mask_format, glyphset, source_x, \
                       source_y, length, commands),                                          \
        NVS_WRAPPER_BODY(NVS_HOOKS_X11, nvs_resolve, name, (xcb_void_cookie_t){ 0 },          \
                         (connection, op, source, destination, mask_format, glyphset,        \
                          source_x, source_y, length, commands),                             \
                         check_xcb(connection);                                              \
                         begin(NVS_HOOK_ID(name), NVS_X11_DRAW, NVS_FRAME_OFF), end()))

RENDER_GLYPHS(xcb_render_composite_glyphs_8)
RENDER_GLYPHS(xcb_render_composite_glyphs_16)
RENDER_GLYPHS(xcb_render_composite_glyphs_32)

/* ---- GLX and EGL --------------------------------------------------------------- */

NVS_EXPORT void glXSwapBuffers(Display *display, GLXDrawable drawable)
{
    NVS_WRAPPER_BODY(NVS_HOOKS_X11, nvs_resolve, glXSwapBuffers, , (display, drawable),
                     check_xlib(display);
                     begin(NVS_HOOK_ID(glXSwapBuffers), NVS_X11_SWAP, NVS_FRAME_X11_SWAP), end());
}

NVS_EXPORT EGLBoolean eglSwapBuffers(EGLDisplay display, EGLSurface surface)
{
    X11_CALL(eglSwapBuffers, (void)0,
             begin(NVS_HOOK_ID(eglSwapBuffers), NVS_X11_SWAP, NVS_FRAME_X11_SWAP),
             (display, surface));
}

/* A core GL function's name (glTexImage2D): GLX and EGL both answer it with
 * an entry point of that function. */
static bool is_gl_name(const char *name)
{
    return name[0] == 'g' && name[1] == 'l' && name[2] >= 'A' && name[2] <= 'Z' && name[2] != 'X';
}

/* Loaders that ask GLX or EGL for an entry point get the wrapper for that
 * API's hooked names and the hooked GL names; GLX answers any name with a
 * dispatch stub, so an EGL name asked of GLX (or the reverse) is passed back
 * untouched. */
static void *own_entry_point(const char *name, void *found, const char *prefix)
{
    if (!name || (strncmp(name, prefix, strlen(prefix)) && !is_gl_name(name)))
        return found;
    return nvs_resolve_substitute(name, found, true);
}

NVS_EXPORT __GLXextFuncPtr glXGetProcAddressARB(const GLubyte *name)
{
    __typeof__(&glXGetProcAddressARB) real = NVS_REAL(glXGetProcAddressARB);
    if (!real)
        return NULL;
    return (__GLXextFuncPtr)own_entry_point((const char *)name, (void *)real(name), "glX");
}

NVS_EXPORT __GLXextFuncPtr glXGetProcAddress(const GLubyte *name)
{
    __typeof__(&glXGetProcAddressARB) real =
        (__typeof__(&glXGetProcAddressARB))nvs_resolve(NVS_HOOK_ID(glXGetProcAddress));
    if (!real)
        return NULL;
    return (__GLXextFuncPtr)own_entry_point((const char *)name, (void *)real(name), "glX");
}

NVS_EXPORT __eglMustCastToProperFunctionPointerType eglGetProcAddress(const char *name)
{
    __typeof__(&eglGetProcAddress) real = NVS_REAL(eglGetProcAddress);
    if (!real)
        return NULL;
    return (__eglMustCastToProperFunctionPointerType)own_entry_point(name, (void *)real(name), "egl");
}

/* ---- GL texture uploads ------------------------------------------------------------
 * The program's pixels copied into the GL driver (with Mesa's llvmpipe or a
 * discrete GPU alike, the call returns once it has read them). Programs reach
 * these by linking libGL.so.1 or libOpenGL.so.0 (GLVND: both dispatch to the
 * current context's driver), through dlsym, or through glXGetProcAddress and
 * eglGetProcAddress (own_entry_point above). */

#ifndef GL_HALF_FLOAT_OES
#define GL_HALF_FLOAT_OES 0x8D61
#endif

/* The bytes one pixel of FORMAT and TYPE takes in the program's memory; 0 when
 * the pair is not one of these. */
static unsigned gl_pixel_bytes(GLenum format, GLenum type)
{
    unsigned components;
    switch (format) {
    case GL_RED: case GL_GREEN: case GL_BLUE: case GL_ALPHA: case GL_LUMINANCE:
    case GL_DEPTH_COMPONENT: case GL_STENCIL_INDEX: case GL_RED_INTEGER: case GL_GREEN_INTEGER:
    case GL_BLUE_INTEGER: case GL_ALPHA_INTEGER:
        components = 1;
        break;
    case GL_RG: case GL_RG_INTEGER: case GL_LUMINANCE_ALPHA: case GL_DEPTH_STENCIL:
        components = 2;
        break;
    case GL_RGB: case GL_BGR: case GL_RGB_INTEGER: case GL_BGR_INTEGER:
        components = 3;
        break;
    case GL_RGBA: case GL_BGRA: case GL_RGBA_INTEGER: case GL_BGRA_INTEGER:
        components = 4;
        break;
    default:
        return 0;
    }
    switch (type) {
    case GL_UNSIGNED_BYTE: case GL_BYTE:
        return components;
    case GL_UNSIGNED_SHORT: case GL_SHORT: case GL_HALF_FLOAT: case GL_HALF_FLOAT_OES:
        return components * 2;
    case GL_UNSIGNED_INT: case GL_INT: case GL_FLOAT:
        return components * 4;
    /* Packed: one value holds the whole pixel. */
    case GL_UNSIGNED_BYTE_3_3_2: case GL_UNSIGNED_BYTE_2_3_3_REV:
        return 1;
    case GL_UNSIGNED_SHORT_5_6_5: case GL_UNSIGNED_SHORT_5_6_5_REV:
    case GL_UNSIGNED_SHORT_4_4_4_4: case GL_UNSIGNED_SHORT_4_4_4_4_REV:
    case GL_UNSIGNED_SHORT_5_5_5_1: case GL_UNSIGNED_SHORT_1_5_5_5_REV:
        return 2;
    case GL_UNSIGNED_INT_8_8_8_8: case GL_UNSIGNED_INT_8_8_8_8_REV:
    case GL_UNSIGNED_INT_10_10_10_2: case GL_UNSIGNED_INT_2_10_10_10_REV:
    case GL_UNSIGNED_INT_24_8: case GL_UNSIGNED_INT_10F_11F_11F_REV:
    case GL_UNSIGNED_INT_5_9_9_9_REV:
        return 4;
    case GL_FLOAT_32_UNSIGNED_INT_24_8_REV:
        return 8;
    }
    return 0;
}

/* The range of an upload of WIDTH x HEIGHT (x DEPTH, for a 3D call) pixels of
 * FORMAT and TYPE from PIXELS: the size in the name; the payload the bytes the
 * driver reads from the program's memory. Rows are read WIDTH pixels each
 * wherever GL_UNPACK_ROW_LENGTH puts them, so the count does not depend on it
 * (no GL state is asked). No payload when nothing is read (PIXELS NULL: storage
 * allocated only) or the pair is not known. */
static __attribute__((noinline)) void begin_upload(enum nvs_hook_id id, GLsizei width,
                                                   GLsizei height, GLsizei depth, GLenum format,
                                                   GLenum type, const void *pixels)
{
    uint64_t w = width > 0 ? (uint64_t)width : 0, h = height > 0 ? (uint64_t)height : 0;
    uint64_t d = depth > 0 ? (uint64_t)depth : 0;
    unsigned pixel = pixels ? gl_pixel_bytes(format, type) : 0;
    struct nvs_attributes range = {
        .domain = NVS_DOMAIN_X11, .category = NVS_X11_UPLOAD, .color = NVS_COLOR_X11_UPLOAD,
        .payload = w * h * (depth ? d : 1) * pixel, .has_payload = pixel != 0,
    };
    char text[NVS_CALL_TEXT_MAX];
    uint64_t key = nvs_call_name_key(id, (w & 0x3ffff) << 36 | (h & 0x3ffff) << 18 | (d & 0x3ffff));
    if (depth)
        NVS_NAME(range.name, NVS_DOMAIN_X11, key, text, "%s %" PRIu64 "x%" PRIu64 "x%" PRIu64,
                 nvs_hook_name(id), w, h, d);
    else
        NVS_NAME(range.name, NVS_DOMAIN_X11, key, text, "%s %" PRIu64 "x%" PRIu64,
                 nvs_hook_name(id), w, h);
    nvs_call_open(id, NVS_FRAME_OFF, -1, &range);
}

/* The real GL function: the one named in x11.def, else where that is not
 * reachable (a program that has only libOpenGL.so.0, loaded RTLD_LOCAL by a
 * plugin) libOpenGL's, kept once found. */
static void *gl_resolve(enum nvs_hook_id id)
{
    void *found = nvs_resolve(id);
    if (found)
        return found;
    found = nvs_find_function("libOpenGL.so.0", nvs_hook_name(id));
    void *expected = NULL;
    if (found && !atomic_compare_exchange_strong(&nvs_real_functions[id], &expected, found))
        found = expected;
    return found;
}

X11_SPLIT(void, glTexImage2D,
               (GLenum target, GLint level, GLint internal_format, GLsizei width, GLsizei height,
                GLint border, GLenum format, GLenum type, const void *pixels),
               (target, level, internal_format, width, height, border, format, type, pixels),
               gl_resolve, , (void)0,
               begin_upload(NVS_HOOK_ID(glTexImage2D), width, height, 0, format, type, pixels))

X11_SPLIT(void, glTexSubImage2D,
               (GLenum target, GLint level, GLint x, GLint y, GLsizei width, GLsizei height,
                GLenum format, GLenum type, const void *pixels),
               (target, level, x, y, width, height, format, type, pixels),
               gl_resolve, , (void)0,
               begin_upload(NVS_HOOK_ID(glTexSubImage2D), width, height, 0, format, type, pixels))

X11_SPLIT(void, glTexImage3D,
               (GLenum target, GLint level, GLint internal_format, GLsizei width, GLsizei height,
                GLsizei depth, GLint border, GLenum format, GLenum type, const void *pixels),
               (target, level, internal_format, width, height, depth, border, format, type,
                pixels),
               gl_resolve, , (void)0,
               begin_upload(NVS_HOOK_ID(glTexImage3D), width, height, depth, format, type, pixels))

X11_SPLIT(void, glTexSubImage3D,
               (GLenum target, GLint level, GLint x, GLint y, GLint z, GLsizei width,
                GLsizei height, GLsizei depth, GLenum format, GLenum type, const void *pixels),
               (target, level, x, y, z, width, height, depth, format, type, pixels),
               gl_resolve, , (void)0,
               begin_upload(NVS_HOOK_ID(glTexSubImage3D), width, height, depth, format, type,
                            pixels))

/* ---- Vulkan ----------------------------------------------------------------------------
 * A present is a swap: a range in category swap, and a frame marker for
 * NVTXSHIM_FRAME=x11.swap. Programs take vkQueuePresentKHR from the loader's
 * vkGetDeviceProcAddr or vkGetInstanceProcAddr (which answer with the driver's
 * or a layer's function): the wrapper is handed out instead, and it calls the
 * loader's exported vkQueuePresentKHR, which dispatches by the queue. */

X11_SPLIT(VkResult, vkQueuePresentKHR, (VkQueue queue, const VkPresentInfoKHR *info),
          (queue, info), nvs_resolve, VK_ERROR_INITIALIZATION_FAILED, (void)0,
          begin(NVS_HOOK_ID(vkQueuePresentKHR), NVS_X11_SWAP, NVS_FRAME_X11_SWAP))

/* The loader's answer FOUND for NAME, or the wrapper where NAME is hooked (the
 * present, and the two lookups themselves) and the loader has it. Other
 * names, the startup's hundreds, are passed back after two comparisons. */
static void *own_vulkan_entry_point(const char *name, void *found)
{
    if (!found || !name || strncmp(name, "vk", 2) ||
        (strcmp(name + 2, "QueuePresentKHR") && strcmp(name + 2, "GetDeviceProcAddr") &&
         strcmp(name + 2, "GetInstanceProcAddr")))
        return found;
    return nvs_resolve_substitute(name, found, true);
}

NVS_EXPORT PFN_vkVoidFunction vkGetInstanceProcAddr(VkInstance instance, const char *name)
{
    __typeof__(&vkGetInstanceProcAddr) real = NVS_REAL(vkGetInstanceProcAddr);
    if (!real)
        return NULL;
    return (PFN_vkVoidFunction)own_vulkan_entry_point(name, (void *)real(instance, name));
}

NVS_EXPORT PFN_vkVoidFunction vkGetDeviceProcAddr(VkDevice device, const char *name)
{
    __typeof__(&vkGetDeviceProcAddr) real = NVS_REAL(vkGetDeviceProcAddr);
    if (!real)
        return NULL;
    return (PFN_vkVoidFunction)own_vulkan_entry_point(name, (void *)real(device, name));
}
