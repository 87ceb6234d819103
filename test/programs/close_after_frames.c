/* Test helper: waits for a top-level window called NAME to be mapped, counts
 * FRAMES presented frames through the DAMAGE extension, then sends it Escape
 * (glxgears exits on Escape) — so a test needs no sleep and the program exits
 * normally. Prints "ready" once it is listening. */
#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <X11/extensions/Xdamage.h>
#include <X11/keysym.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int named(Display *display, Window window, const char *name)
{
    char *title = NULL;
    int match = XFetchName(display, window, &title) && title && !strcmp(title, name);
    XFree(title);
    return match;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: close_after_frames NAME FRAMES\n");
        return 2;
    }
    int frames = atoi(argv[2]);
    Display *display = XOpenDisplay(NULL);
    int damage_event, damage_error;
    if (!display || !XDamageQueryExtension(display, &damage_event, &damage_error))
        return 1;
    Window root = DefaultRootWindow(display);
    XSelectInput(display, root, SubstructureNotifyMask);
    XSync(display, False);
    printf("ready\n");
    fflush(stdout);

    Window window = 0;
    XEvent event;
    while (!window) {
        XNextEvent(display, &event);
        if (event.type == MapNotify && named(display, event.xmap.window, argv[1]))
            window = event.xmap.window;
    }
    Damage damage = XDamageCreate(display, window, XDamageReportNonEmpty);
    for (int seen = 0; seen < frames;) {
        XNextEvent(display, &event);
        if (event.type == damage_event + XDamageNotify) {
            XDamageSubtract(display, damage, None, None);
            seen++;
        }
    }
    memset(&event, 0, sizeof event);
    event.xkey.type = KeyPress;
    event.xkey.display = display;
    event.xkey.window = window;
    event.xkey.root = root;
    event.xkey.same_screen = True;
    event.xkey.keycode = XKeysymToKeycode(display, XK_Escape);
    XSendEvent(display, window, True, KeyPressMask, &event);
    XSync(display, False);
    printf("sent Escape after %d frames\n", frames);
    XCloseDisplay(display);
    return 0;
}
