/* harness_physical's GUI: the frame and the chosen cell in an X11 window
 * (MIT-SHM when the server offers it, XPutImage otherwise). */
#define _GNU_SOURCE
#include "harness.h"

static bool shm_refused;
static int note_shm_error(Display *display, XErrorEvent *event)
{
    (void)display;
    (void)event;
    shm_refused = true;
    return 0;
}

static int mask_shift(unsigned long mask)
{
    int shift = 0;
    while (mask && !(mask & 1)) {
        mask >>= 1;
        shift++;
    }
    /* An 8-bit channel sits in the top 8 bits of the mask. */
    int bits = 0;
    while (mask & 1) {
        mask >>= 1;
        bits++;
    }
    return shift + bits - 8;
}

bool gui_open(struct gui *gui, const struct options *o)
{
    memset(gui, 0, sizeof *gui);
    gui->display = XOpenDisplay(NULL);
    if (!gui->display) {
        fprintf(stderr, "%s: cannot open display '%s'; running without the GUI\n", program,
                getenv("DISPLAY") ? getenv("DISPLAY") : "");
        return false;
    }
    int screen = DefaultScreen(gui->display);
    Visual *visual = DefaultVisual(gui->display, screen);
    int depth = DefaultDepth(gui->display, screen);
    if (depth < 24 || visual->class != TrueColor) {
        fprintf(stderr, "%s: the display is not 24-bit TrueColor; running without the GUI\n",
                program);
        XCloseDisplay(gui->display);
        return false;
    }
    gui->shift[0] = mask_shift(visual->red_mask);
    gui->shift[1] = mask_shift(visual->green_mask);
    gui->shift[2] = mask_shift(visual->blue_mask);
    gui->scale = o->width >= 320 ? 1 : (320 + o->width - 1) / o->width;
    gui->width = o->width * gui->scale;
    gui->height = o->height * gui->scale;
    gui->white = WhitePixel(gui->display, screen);
    gui->window = XCreateSimpleWindow(gui->display, RootWindow(gui->display, screen), 0, 0,
                                      (unsigned)gui->width, (unsigned)gui->height, 0,
                                      BlackPixel(gui->display, screen),
                                      BlackPixel(gui->display, screen));
    XStoreName(gui->display, gui->window, "harness_physical");
    gui->delete_window = XInternAtom(gui->display, "WM_DELETE_WINDOW", False);
    XSetWMProtocols(gui->display, gui->window, &gui->delete_window, 1);
    XSelectInput(gui->display, gui->window, StructureNotifyMask);
    gui->gc = XCreateGC(gui->display, gui->window, 0, NULL);
    XMapWindow(gui->display, gui->window);

    /* MIT-SHM when the server offers it and can attach our segment (it cannot
     * over a forwarded or remote display); XPutImage otherwise. */
    if (XShmQueryExtension(gui->display)) {
        gui->image = XShmCreateImage(gui->display, visual, (unsigned)depth, ZPixmap, NULL,
                                     &gui->shm, (unsigned)gui->width, (unsigned)gui->height);
        if (gui->image) {
            gui->shm.shmid = shmget(IPC_PRIVATE,
                                    (size_t)gui->image->bytes_per_line * gui->image->height,
                                    IPC_CREAT | 0600);
            gui->shm.shmaddr = gui->shm.shmid < 0 ? (char *)-1 : shmat(gui->shm.shmid, NULL, 0);
            if (gui->shm.shmaddr != (char *)-1) {
                gui->image->data = gui->shm.shmaddr;
                gui->shm.readOnly = False;
                XSync(gui->display, False);
                int (*previous)(Display *, XErrorEvent *) = XSetErrorHandler(note_shm_error);
                shm_refused = false;
                XShmAttach(gui->display, &gui->shm);
                XSync(gui->display, False);
                XSetErrorHandler(previous);
                gui->use_shm = !shm_refused;
            }
            if (gui->shm.shmid >= 0)
                shmctl(gui->shm.shmid, IPC_RMID, NULL); /* freed once both sides detach */
            if (!gui->use_shm) {
                if (gui->shm.shmaddr != (char *)-1)
                    shmdt(gui->shm.shmaddr);
                gui->image->data = NULL;
                XDestroyImage(gui->image);
                gui->image = NULL;
            }
        }
    }
    if (!gui->use_shm) {
        char *pixels = malloc((size_t)gui->width * gui->height * 4);
        gui->image = XCreateImage(gui->display, visual, (unsigned)depth, ZPixmap, 0, pixels,
                                  (unsigned)gui->width, (unsigned)gui->height, 32, 0);
    }
    return true;
}

/* Returns false when the user closed the window. */
bool gui_show(struct gui *gui, const unsigned char *frame, int width, int index, int action)
{
    XImage *image = gui->image;
    for (int y = 0; y < gui->height; y++) {
        uint32_t *row = (uint32_t *)(image->data + (size_t)y * image->bytes_per_line);
        const unsigned char *source = frame + (size_t)(y / gui->scale) * width * 3;
        for (int x = 0; x < gui->width; x++) {
            const unsigned char *p = source + (size_t)(x / gui->scale) * 3;
            row[x] = (uint32_t)p[0] << gui->shift[0] | (uint32_t)p[1] << gui->shift[1] |
                (uint32_t)p[2] << gui->shift[2];
        }
    }
    if (gui->use_shm)
        XShmPutImage(gui->display, gui->window, gui->gc, image, 0, 0, 0, 0, (unsigned)gui->width,
                     (unsigned)gui->height, False);
    else
        XPutImage(gui->display, gui->window, gui->gc, image, 0, 0, 0, 0, (unsigned)gui->width,
                  (unsigned)gui->height);
    int cell_w = gui->width / HARNESS_GRID, cell_h = gui->height / HARNESS_GRID;
    XSetForeground(gui->display, gui->gc, gui->white);
    XDrawRectangle(gui->display, gui->window, gui->gc, (action % HARNESS_GRID) * cell_w,
                   (action / HARNESS_GRID) * cell_h, (unsigned)cell_w - 1, (unsigned)cell_h - 1);
    char caption[64];
    int length = snprintf(caption, sizeof caption, "frame %d  action %d", index, action);
    XDrawString(gui->display, gui->window, gui->gc, 4, 12, caption, length);
    /* The server reads a shared image after the request: wait for it before
     * the next frame overwrites it. Without SHM, flushing is enough. */
    if (gui->use_shm)
        XSync(gui->display, False);
    else
        XFlush(gui->display);
    bool open = true;
    while (XPending(gui->display)) {
        XEvent event;
        XNextEvent(gui->display, &event);
        if (event.type == ClientMessage && (Atom)event.xclient.data.l[0] == gui->delete_window)
            open = false;
    }
    return open;
}

void gui_close(struct gui *gui)
{
    if (gui->use_shm) {
        XShmDetach(gui->display, &gui->shm);
        XSync(gui->display, False);
        shmdt(gui->shm.shmaddr);
        gui->image->data = NULL;
    }
    XDestroyImage(gui->image);
    XFreeGC(gui->display, gui->gc);
    XDestroyWindow(gui->display, gui->window);
    XCloseDisplay(gui->display);
}
