/* An Xlib program: a window, its map and expose events through each blocking
 * event call, N frames of XPutImage (or XShmPutImage with --shm) and XFlush, an
 * XSync round trip, and one XGetImage whose checksum it prints. */
#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <X11/extensions/XShm.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>

#define WIDTH 160
#define HEIGHT 120

static Bool is_client_message(Display *display, XEvent *event, XPointer argument)
{
    (void)display;
    (void)argument;
    return event->type == ClientMessage;
}

static void send_to_self(Display *display, Window window, long value)
{
    XEvent event;
    memset(&event, 0, sizeof event);
    event.xclient.type = ClientMessage;
    event.xclient.window = window;
    event.xclient.format = 32;
    event.xclient.data.l[0] = value;
    XSendEvent(display, window, False, NoEventMask, &event);
}

int main(int argc, char **argv)
{
    int frames = argc > 1 ? atoi(argv[1]) : 5;
    int use_shm = argc > 2 && !strcmp(argv[2], "--shm");
    Display *display = XOpenDisplay(NULL);
    if (!display) {
        fprintf(stderr, "x11_draw: cannot open display\n");
        return 1;
    }
    int screen = DefaultScreen(display);
    Window window = XCreateSimpleWindow(display, RootWindow(display, screen), 0, 0, WIDTH, HEIGHT,
                                        0, 0, 0);
    XSelectInput(display, window, ExposureMask | StructureNotifyMask);
    XMapWindow(display, window);
    XEvent event;
    XMaskEvent(display, StructureNotifyMask, &event);      /* MapNotify */
    XWindowEvent(display, window, ExposureMask, &event);   /* Expose */

    send_to_self(display, window, 1);
    send_to_self(display, window, 2);
    XFlush(display);
    XPeekEvent(display, &event);
    XIfEvent(display, &event, is_client_message, NULL);
    long first = event.xclient.data.l[0];
    XNextEvent(display, &event);
    printf("client messages: %ld %ld, pending %d\n", first, event.xclient.data.l[0],
           XPending(display));

    GC gc = DefaultGC(display, screen);
    Visual *visual = DefaultVisual(display, screen);
    int depth = DefaultDepth(display, screen);
    XShmSegmentInfo segment;
    XImage *image;
    if (use_shm) {
        image = XShmCreateImage(display, visual, (unsigned)depth, ZPixmap, NULL, &segment, WIDTH,
                                HEIGHT);
        segment.shmid = shmget(IPC_PRIVATE, (size_t)image->bytes_per_line * HEIGHT, IPC_CREAT | 0600);
        segment.shmaddr = image->data = shmat(segment.shmid, NULL, 0);
        segment.readOnly = False;
        XShmAttach(display, &segment);
    } else {
        char *pixels = malloc((size_t)WIDTH * HEIGHT * 4);
        image = XCreateImage(display, visual, (unsigned)depth, ZPixmap, 0, pixels, WIDTH, HEIGHT,
                             32, 0);
    }
    for (int f = 0; f < frames; f++) {
        for (int y = 0; y < HEIGHT; y++)
            for (int x = 0; x < WIDTH; x++)
                XPutPixel(image, x, y, (unsigned long)((x * 3 + y * 5 + f * 7) & 0xffffff));
        if (use_shm)
            XShmPutImage(display, window, gc, image, 0, 0, 0, 0, WIDTH, HEIGHT, False);
        else
            XPutImage(display, window, gc, image, 0, 0, 0, 0, WIDTH, HEIGHT);
        XFlush(display);
    }
    XSync(display, False);
    XImage *back = XGetImage(display, window, 0, 0, WIDTH, HEIGHT, AllPlanes, ZPixmap);
    uint32_t checksum = 2166136261u;
    for (int y = 0; back && y < HEIGHT; y++)
        for (int x = 0; x < WIDTH; x++)
            checksum = (checksum ^ (uint32_t)(XGetPixel(back, x, y) & 0xffffff)) * 16777619u;
    printf("frames=%d %s checksum=%08x\n", frames, use_shm ? "shm" : "socket", checksum);
    if (back)
        XDestroyImage(back);
    if (use_shm) {
        XShmDetach(display, &segment);
        XSync(display, False);
        shmdt(segment.shmaddr);
        shmctl(segment.shmid, IPC_RMID, NULL);
        image->data = NULL;
    }
    XDestroyImage(image);
    XCloseDisplay(display);
    return 0;
}
