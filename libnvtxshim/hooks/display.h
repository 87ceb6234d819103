/* What the display's wrappers share (xlib.c, xcb.c, gl.c, egl.c, vulkan.c,
 * one file per interposed library, all in NVTX domain "x11" and hooks/x11.def):
 * the look at where the display is, said once per process, and the domain's
 * ranges (display.c); the wrappers' two macros. */
#ifndef NVS_DISPLAY_H
#define NVS_DISPLAY_H

#include <X11/Xlib.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <xcb/xcb.h>

#include "../hidden.h"
#include "../emit.h"
#include "../hook.h"

/* Looks once per process at the display DISPLAY (CONNECTION) is on: a remote
 * one, or one without MIT-SHM, is said in a mark and the log. Inline, the
 * look itself out of line: every traced call asks, and after the first one
 * the answer is one load. */
extern NVS_HIDDEN atomic_bool nvs_display_checked;
void nvs_check_xlib_once(Display *display);
void nvs_check_xcb_once(xcb_connection_t *connection);

static inline void nvs_check_xlib(Display *display)
{
    if (__builtin_expect(!atomic_load_explicit(&nvs_display_checked, memory_order_relaxed), 0))
        nvs_check_xlib_once(display);
}

static inline void nvs_check_xcb(xcb_connection_t *connection)
{
    if (__builtin_expect(!atomic_load_explicit(&nvs_display_checked, memory_order_relaxed), 0))
        nvs_check_xcb_once(connection);
}

/* The domain's ranges, in the traced half of a wrapper (X11_SPLIT), where
 * they are inline: the range is opened and closed in the wrapper's own frame,
 * as a hand-written pair is. A range named after the function, in CATEGORY;
 * MARKER counts it as a frame marker. */
static inline __attribute__((always_inline)) void nvs_x11_begin(enum nvs_hook_id id,
                                                                enum nvs_x11_category category,
                                                                enum nvs_frame_marker marker)
{
    nvs_call_open_constant(id, marker, NVS_DOMAIN_X11, category,
                           nvs_category_color(NVS_DOMAIN_X11, category));
}

/* An area of WIDTH x HEIGHT: the size in the name; BYTES, when the call
 * moves image data between the program and the server (MOVES), as the
 * payload. Out of line: its name is found by its size. */
void nvs_x11_begin_area(enum nvs_hook_id id, unsigned width, unsigned height, bool moves,
                        uint64_t bytes);

static inline __attribute__((always_inline)) void nvs_x11_end(void)
{
    nvs_call_close(NVS_DOMAIN_X11);
}

/* An image of WIDTH x HEIGHT, BYTES of it crossing the connection. */
static inline void nvs_x11_begin_image(enum nvs_hook_id id, unsigned width, unsigned height,
                                       uint64_t bytes)
{
    nvs_x11_begin_area(id, width, height, true, bytes);
}

/* The lookups of GLX and EGL (gl.c, egl.c): FOUND, the library's answer for
 * NAME, or the wrapper where NAME is one of the API's (PREFIX) or GL's hooked names. */
void *nvs_gl_entry_point(const char *name, void *found, const char *prefix);

/* Every wrapper of the domain comes in two halves (NVS_SPLIT_WRAPPER,
 * hook.h): the untraced call passes straight through; the traced half finds
 * the real function with FIND(id) (MISSING when there is none; nothing for a
 * void function), does CHECK and OPENING, makes the call and ends the range. */
#define X11_SPLIT(type, name, parameters, arguments, find, missing, check, opening)                \
    NVS_SPLIT_WRAPPER(NVS_HOOKS_X11, type, name, parameters, arguments, find, missing, check;      \
                      opening, nvs_x11_end())

#endif
