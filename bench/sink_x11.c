/* A libX11.so.6 that does nothing: XFlush returns at once. XOpenDisplay hands
 * out a zeroed Display with no connection (fd -1), which the shim's one-time
 * display check reads as local; XQueryExtension says MIT-SHM is there, so no
 * notice is made. Never installed; bench only. */
#include <X11/Xlib.h>
#include <X11/Xlibint.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

static char display_name[] = "sink:0";

EXPORT Display *XOpenDisplay(const char *name)
{
    (void)name;
    _XPrivDisplay display = calloc(1, sizeof *display);
    if (!display)
        return NULL;
    display->fd = -1;
    display->display_name = display_name;
    return (Display *)display;
}

EXPORT int XCloseDisplay(Display *display)
{
    free(display);
    return 0;
}

EXPORT Status _XReply(Display *display, xReply *reply, int extra, Bool discard)
{
    (void)display, (void)extra, (void)discard;
    memset(reply, 0, sizeof *reply);
    return 1;
}

EXPORT int XFlush(Display *display)
{
    (void)display;
    return 1;
}

EXPORT Bool XQueryExtension(Display *display, const char *name, int *opcode, int *event,
                            int *error)
{
    (void)display, (void)name;
    *opcode = 130, *event = 65, *error = 128;
    return True;
}
