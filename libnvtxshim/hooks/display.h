/* What the display's wrappers share (xlib.c, xcb.c, gl.c, egl.c, vulkan.c,
 * one file per interposed library, all in NVTX domain "x11" and hooks/x11.def):
 * the look at where the display is, said once per process, and the domain's
 * ranges (display.c); the wrappers' two macros. */
#ifndef NVS_DISPLAY_H
#define NVS_DISPLAY_H

#include <X11/Xlib.h>
#include <stdbool.h>
#include <stdint.h>
#include <xcb/xcb.h>

#include "../emit.h"
#include "../hook.h"

/* Looks once per process at the display DISPLAY (CONNECTION) is on: a remote
 * one, or one without MIT-SHM, is said in a mark and the log. */
void nvs_check_xlib(Display *display);
void nvs_check_xcb(xcb_connection_t *connection);

/* The domain's ranges. Out of line: the wrappers' untraced path then saves
 * no register for them. A range named after the function, in CATEGORY;
 * MARKER counts it as a frame marker. */
void nvs_x11_begin(enum nvs_hook_id id, enum nvs_x11_category category,
                   enum nvs_frame_marker marker);
/* An area of WIDTH x HEIGHT: the size in the name; BYTES, when the call
 * moves image data between the program and the server (MOVES), as the payload. */
void nvs_x11_begin_area(enum nvs_hook_id id, unsigned width, unsigned height, bool moves,
                        uint64_t bytes);
void nvs_x11_end(void);

/* An image of WIDTH x HEIGHT, BYTES of it crossing the connection. */
static inline void nvs_x11_begin_image(enum nvs_hook_id id, unsigned width, unsigned height,
                                       uint64_t bytes)
{
    nvs_x11_begin_area(id, width, height, true, bytes);
}

/* The lookups of GLX and EGL (gl.c, egl.c): FOUND, the library's answer for
 * NAME, or the wrapper where NAME is one of the API's (PREFIX) or GL's hooked names. */
void *nvs_gl_entry_point(const char *name, void *found, const char *prefix);

/* Pass through when untraced, else one range around the real call. CHECK
 * looks at the display once; OPENING opens the range. */
#define X11_CALL(name, check, opening, arguments)                                                  \
    NVS_WRAPPER_BODY(NVS_HOOKS_X11, nvs_resolve, name, (__typeof__(real arguments)){ 0 },          \
                     arguments, check;                                                             \
                     opening, nvs_x11_end())

/* The RENDER, GL upload and Vulkan present wrappers come in two halves
 * (NVS_SPLIT_WRAPPER, hook.h): the traced half finds the real function with
 * FIND(id) (MISSING when there is none; nothing for a void function), does
 * CHECK and OPENING, makes the call and ends the range. */
#define X11_SPLIT(type, name, parameters, arguments, find, missing, check, opening)                \
    NVS_SPLIT_WRAPPER(NVS_HOOKS_X11, type, name, parameters, arguments, find, missing, check;      \
                      opening, nvs_x11_end())

#endif
