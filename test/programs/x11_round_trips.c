/* An Xlib program whose round trips go through calls the shim does not wrap:
 * N each of XInternAtom (a new name each time, so Xlib's atom cache cannot
 * answer), XGetGeometry and XQueryPointer - one reply each. Then K XCopyArea
 * of 64x32 and one 64x16 bitmap (depth 1, XYBitmap) put with XPutImage. */
#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 100;
    int copies = argc > 2 ? atoi(argv[2]) : 0;
    Display *display = XOpenDisplay(NULL);
    if (!display) {
        fprintf(stderr, "x11_round_trips: cannot open display\n");
        return 1;
    }
    int screen = DefaultScreen(display);
    Window root = RootWindow(display, screen);
    Window window = XCreateSimpleWindow(display, root, 0, 0, 128, 64, 0, 0, 0);
    unsigned long atoms = 0;
    for (int i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "NVTXSHIM_ROUND_TRIP_%d_%d", (int)getpid(), i);
        atoms += XInternAtom(display, name, False) != None;
    }
    unsigned geometry = 0;
    for (int i = 0; i < n; i++) {
        Window found_root;
        int x, y;
        unsigned width, height, border, depth;
        geometry += XGetGeometry(display, window, &found_root, &x, &y, &width, &height, &border,
                                 &depth) && width == 128;
    }
    unsigned pointer = 0;
    for (int i = 0; i < n; i++) {
        Window found_root, child;
        int root_x, root_y, x, y;
        unsigned mask;
        pointer += XQueryPointer(display, root, &found_root, &child, &root_x, &root_y, &x, &y,
                                 &mask) == True;
    }
    GC gc = DefaultGC(display, screen);
    for (int i = 0; i < copies; i++)
        XCopyArea(display, window, window, gc, 0, 0, 64, 32, 64, 32);
    static char bits[8 * 16];
    memset(bits, 0x55, sizeof bits);
    XImage *bitmap = XCreateImage(display, DefaultVisual(display, screen), 1, XYBitmap, 0, bits,
                                  64, 16, 8, 8);
    if (copies)
        XPutImage(display, window, gc, bitmap, 0, 0, 0, 0, 64, 16);
    bitmap->data = NULL;
    XDestroyImage(bitmap);
    XFlush(display);
    printf("atoms=%lu geometry=%u pointer=%u copies=%d\n", atoms, geometry, pointer, copies);
    XCloseDisplay(display);
    return 0;
}
