/* XCB (libxcb) in NVTX domain "x11": drawing, flushes, round trips and event
 * waits; MIT-SHM's image (libxcb-shm) and RENDER's composites
 * (libxcb-render). Xlib (xlib.c) waits for its replies here. */
#define _GNU_SOURCE
#include <xcb/render.h>
#include <xcb/shm.h>
#include <xcb/xcb.h>
#include <xcb/xcbext.h>

#include "display.h"

/* Bytes per pixel of a drawable of DEPTH bits, as the server stores ZPixmap data. */
static unsigned bytes_per_pixel(unsigned depth)
{
    return depth > 16 ? 4 : depth > 8 ? 2 : 1;
}

/* ---- XCB -------------------------------------------------------------------- */

X11_SPLIT(int, xcb_flush, (xcb_connection_t * connection), (connection), nvs_resolve, 0,
          nvs_check_xcb(connection),
          nvs_x11_begin(NVS_HOOK_ID(xcb_flush), NVS_X11_FLUSH, NVS_FRAME_X11_FLUSH))

X11_SPLIT(xcb_generic_event_t *, xcb_wait_for_event, (xcb_connection_t * connection), (connection),
          nvs_resolve, NULL, nvs_check_xcb(connection),
          nvs_x11_begin(NVS_HOOK_ID(xcb_wait_for_event), NVS_X11_WAIT, NVS_FRAME_OFF))

X11_SPLIT(void *, xcb_wait_for_reply,
          (xcb_connection_t * connection, unsigned int request, xcb_generic_error_t **error),
          (connection, request, error), nvs_resolve, NULL, nvs_check_xcb(connection),
          nvs_x11_begin(NVS_HOOK_ID(xcb_wait_for_reply), NVS_X11_ROUND_TRIP, NVS_FRAME_OFF))

/* Xlib (1.8) waits for its replies here: every Xlib round trip. The display
 * is not looked at from inside Xlib's wait (that would send requests on the
 * connection Xlib is reading); the next Xlib call does it. */
X11_SPLIT(void *, xcb_wait_for_reply64,
          (xcb_connection_t * connection, uint64_t request, xcb_generic_error_t **error),
          (connection, request, error), nvs_resolve, NULL, (void)0,
          nvs_x11_begin(NVS_HOOK_ID(xcb_wait_for_reply64), NVS_X11_ROUND_TRIP, NVS_FRAME_OFF))

/* The round trip that asks whether a checked request failed. */
X11_SPLIT(xcb_generic_error_t *, xcb_request_check,
          (xcb_connection_t * connection, xcb_void_cookie_t cookie), (connection, cookie),
          nvs_resolve, NULL, (void)0,
          nvs_x11_begin(NVS_HOOK_ID(xcb_request_check), NVS_X11_ROUND_TRIP, NVS_FRAME_OFF))

X11_SPLIT(xcb_void_cookie_t, xcb_put_image,
          (xcb_connection_t * connection, uint8_t format, xcb_drawable_t drawable,
           xcb_gcontext_t gc, uint16_t width, uint16_t height, int16_t x, int16_t y,
           uint8_t left_pad, uint8_t depth, uint32_t data_length, const uint8_t *data),
          (connection, format, drawable, gc, width, height, x, y, left_pad, depth, data_length,
           data),
          nvs_resolve, (xcb_void_cookie_t){ 0 }, nvs_check_xcb(connection),
          nvs_x11_begin_image(NVS_HOOK_ID(xcb_put_image), width, height, data_length))

X11_SPLIT(xcb_void_cookie_t, xcb_shm_put_image,
          (xcb_connection_t * connection, xcb_drawable_t drawable, xcb_gcontext_t gc,
           uint16_t total_width, uint16_t total_height, uint16_t source_x, uint16_t source_y,
           uint16_t source_width, uint16_t source_height, int16_t x, int16_t y, uint8_t depth,
           uint8_t format, uint8_t send_event, xcb_shm_seg_t segment, uint32_t offset),
          (connection, drawable, gc, total_width, total_height, source_x, source_y, source_width,
           source_height, x, y, depth, format, send_event, segment, offset),
          nvs_resolve, (xcb_void_cookie_t){ 0 }, nvs_check_xcb(connection),
          nvs_x11_begin_image(NVS_HOOK_ID(xcb_shm_put_image), source_width, source_height,
                              (uint64_t)source_width *source_height *bytes_per_pixel(depth)))

/* ---- RENDER ------------------------------------------------------------------------
 * Composites and fills the server does from pictures it holds (GTK and cairo draw
 * this way): no image crosses the connection, so no payload. A call that gives
 * one size has it in the name; the ones that take a list (rectangles,
 * trapezoids, glyphs) are named after the function. */

X11_SPLIT(xcb_void_cookie_t, xcb_render_composite,
          (xcb_connection_t * connection, uint8_t op, xcb_render_picture_t source,
           xcb_render_picture_t mask, xcb_render_picture_t destination, int16_t source_x,
           int16_t source_y, int16_t mask_x, int16_t mask_y, int16_t x, int16_t y, uint16_t width,
           uint16_t height),
          (connection, op, source, mask, destination, source_x, source_y, mask_x, mask_y, x, y,
           width, height),
          nvs_resolve, (xcb_void_cookie_t){ 0 }, nvs_check_xcb(connection),
          nvs_x11_begin_area(NVS_HOOK_ID(xcb_render_composite), width, height, false, 0))

X11_SPLIT(xcb_void_cookie_t, xcb_render_fill_rectangles,
          (xcb_connection_t * connection, uint8_t op, xcb_render_picture_t destination,
           xcb_render_color_t color, uint32_t count, const xcb_rectangle_t *rectangles),
          (connection, op, destination, color, count, rectangles), nvs_resolve,
          (xcb_void_cookie_t){ 0 }, nvs_check_xcb(connection),
          nvs_x11_begin(NVS_HOOK_ID(xcb_render_fill_rectangles), NVS_X11_DRAW, NVS_FRAME_OFF))

X11_SPLIT(xcb_void_cookie_t, xcb_render_trapezoids,
          (xcb_connection_t * connection, uint8_t op, xcb_render_picture_t source,
           xcb_render_picture_t destination, xcb_render_pictformat_t mask_format, int16_t source_x,
           int16_t source_y, uint32_t count, const xcb_render_trapezoid_t *trapezoids),
          (connection, op, source, destination, mask_format, source_x, source_y, count, trapezoids),
          nvs_resolve, (xcb_void_cookie_t){ 0 }, nvs_check_xcb(connection),
          nvs_x11_begin(NVS_HOOK_ID(xcb_render_trapezoids), NVS_X11_DRAW, NVS_FRAME_OFF))

#define RENDER_GLYPHS(name)                                                                        \
    NVS_SPLIT_WRAPPER(NVS_HOOKS_X11, xcb_void_cookie_t, name,                                      \
                      (xcb_connection_t * connection, uint8_t op, xcb_render_picture_t source,     \
                       xcb_render_picture_t destination, xcb_render_pictformat_t mask_format,      \
                       xcb_render_glyphset_t glyphset, int16_t source_x, int16_t source_y,         \
                       uint32_t length, const uint8_t *commands),                                  \
                      (connection, op, source, destination, mask_format, glyphset, source_x,       \
                       source_y, length, commands),                                                \
                      nvs_resolve, (xcb_void_cookie_t){ 0 }, nvs_check_xcb(connection);            \
                      nvs_x11_begin(NVS_HOOK_ID(name), NVS_X11_DRAW, NVS_FRAME_OFF),               \
                      nvs_x11_end())

RENDER_GLYPHS(xcb_render_composite_glyphs_8)
RENDER_GLYPHS(xcb_render_composite_glyphs_16)
RENDER_GLYPHS(xcb_render_composite_glyphs_32)
