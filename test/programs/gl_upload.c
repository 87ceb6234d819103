/* A GLX program that uploads one 64x64 RGBA texture a frame: one
 * glTexImage2D that only allocates (no pixels), then N frames of
 * glTexSubImage2D (16384 bytes from the program's memory), a textured quad and
 * glXSwapBuffers. It prints a checksum of the last frame read back.
 *
 *   gl_upload N [--proc]     --proc: glTexSubImage2D from glXGetProcAddressARB
 *   gl_upload N --formats    then one upload per format/type pair in FORMATS
 *                            (8x4, and a 3D 8x4x2), in that order
 *   gl_upload N --usb-events and a libusb event loop's turn a frame, as a USB
 *                            camera's beside the display: libusb_handle_events,
 *                            woken at once (libusb_interrupt_event_handler) */
#include <GL/gl.h>
#include <GL/glx.h>
#include <X11/Xlib.h>
#include <libusb-1.0/libusb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIZE 64

typedef void (*sub_image_fn)(GLenum, GLint, GLint, GLint, GLsizei, GLsizei, GLenum, GLenum,
                             const void *);

/* Format, type and the bytes of one pixel (the test reads these back from the
 * trace, 8x4 pixels each). */
static const struct {
    GLenum internal_format, format, type;
} FORMATS[] = {
    { GL_RGBA8, GL_RGBA, GL_UNSIGNED_BYTE },                 /* 4 */
    { GL_RGB8, GL_RGB, GL_UNSIGNED_BYTE },                   /* 3 */
    { GL_RGBA8, GL_BGRA, GL_UNSIGNED_INT_8_8_8_8_REV },      /* 4 */
    { GL_R32F, GL_RED, GL_FLOAT },                           /* 4 */
    { GL_RG16F, GL_RG, GL_HALF_FLOAT },                      /* 4 */
    { GL_LUMINANCE8, GL_LUMINANCE, GL_UNSIGNED_BYTE },       /* 1 */
    { GL_ALPHA16, GL_ALPHA, GL_UNSIGNED_SHORT },             /* 2 */
    { GL_RGB565, GL_RGB, GL_UNSIGNED_SHORT_5_6_5 },          /* 2 */
    { GL_RGBA32F, GL_RGBA, GL_FLOAT },                       /* 16 */
    { GL_DEPTH_COMPONENT24, GL_DEPTH_COMPONENT, GL_UNSIGNED_INT }, /* 4 */
    { GL_RGBA8, GL_COLOR_INDEX, GL_BITMAP },                 /* not known: no payload */
};

int main(int argc, char **argv)
{
    int frames = argc > 1 ? atoi(argv[1]) : 5;
    int by_proc = argc > 2 && !strcmp(argv[2], "--proc");
    int formats = argc > 2 && !strcmp(argv[2], "--formats");
    libusb_context *usb = NULL;
    if (argc > 2 && !strcmp(argv[2], "--usb-events") && libusb_init(&usb) != 0) {
        fprintf(stderr, "gl_upload: libusb_init failed\n");
        return 1;
    }
    Display *display = XOpenDisplay(NULL);
    if (!display) {
        fprintf(stderr, "gl_upload: cannot open display\n");
        return 1;
    }
    int attributes[] = { GLX_RGBA, GLX_DOUBLEBUFFER, GLX_RED_SIZE, 8, GLX_GREEN_SIZE, 8,
                         GLX_BLUE_SIZE, 8, None };
    XVisualInfo *visual = glXChooseVisual(display, DefaultScreen(display), attributes);
    if (!visual) {
        fprintf(stderr, "gl_upload: no RGBA double-buffered visual\n");
        return 1;
    }
    Window root = RootWindow(display, visual->screen);
    XSetWindowAttributes window_attributes = {
        .colormap = XCreateColormap(display, root, visual->visual, AllocNone),
    };
    Window window = XCreateWindow(display, root, 0, 0, SIZE, SIZE, 0, visual->depth, InputOutput,
                                  visual->visual, CWColormap, &window_attributes);
    GLXContext context = glXCreateContext(display, visual, NULL, True);
    if (!context || !glXMakeCurrent(display, window, context)) {
        fprintf(stderr, "gl_upload: no GL context\n");
        return 1;
    }
    sub_image_fn sub_image = glTexSubImage2D;
    if (by_proc)
        sub_image = (sub_image_fn)glXGetProcAddressARB((const GLubyte *)"glTexSubImage2D");

    GLuint texture;
    glGenTextures(1, &texture);
    glBindTexture(GL_TEXTURE_2D, texture);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, SIZE, SIZE, 0, GL_RGBA, GL_UNSIGNED_BYTE, NULL);
    glEnable(GL_TEXTURE_2D);
    glViewport(0, 0, SIZE, SIZE);

    static uint8_t pixels[SIZE * SIZE * 4];
    static uint8_t read_back[SIZE * SIZE * 4];
    uint64_t checksum = 1469598103934665603ull;
    for (int frame = 0; frame < frames; frame++) {
        for (int i = 0; i < SIZE * SIZE; i++) {
            pixels[4 * i + 0] = (uint8_t)(i + frame * 7);
            pixels[4 * i + 1] = (uint8_t)(i / SIZE * 3);
            pixels[4 * i + 2] = (uint8_t)(frame * 40);
            pixels[4 * i + 3] = 255;
        }
        sub_image(GL_TEXTURE_2D, 0, 0, 0, SIZE, SIZE, GL_RGBA, GL_UNSIGNED_BYTE, pixels);
        glClear(GL_COLOR_BUFFER_BIT);
        glBegin(GL_QUADS);
        glTexCoord2f(0, 0); glVertex2f(-1, -1);
        glTexCoord2f(1, 0); glVertex2f(1, -1);
        glTexCoord2f(1, 1); glVertex2f(1, 1);
        glTexCoord2f(0, 1); glVertex2f(-1, 1);
        glEnd();
        if (frame == frames - 1) {
            glReadPixels(0, 0, SIZE, SIZE, GL_RGBA, GL_UNSIGNED_BYTE, read_back);
            for (size_t i = 0; i < sizeof read_back; i++)
                checksum = (checksum ^ read_back[i]) * 1099511628211ull;
        }
        glXSwapBuffers(display, window);
        if (usb) {
            libusb_interrupt_event_handler(usb);
            if (libusb_handle_events(usb) != 0)
                fprintf(stderr, "gl_upload: libusb_handle_events failed\n");
        }
    }

    int uploads = 0;
    if (formats) {
        static float data[8 * 4 * 2 * 4];  /* room for the largest: 8x4x2 RGBA float */
        memset(data, 0, sizeof data);
        GLuint small;
        glGenTextures(1, &small);
        glBindTexture(GL_TEXTURE_2D, small);
        for (size_t i = 0; i < sizeof FORMATS / sizeof FORMATS[0]; i++) {
            glTexImage2D(GL_TEXTURE_2D, 0, (GLint)FORMATS[i].internal_format, 8, 4, 0,
                         FORMATS[i].format, FORMATS[i].type, data);
            uploads++;
        }
        glGetError();  /* GL_BITMAP: not accepted, nothing read */
        GLuint volume;
        glGenTextures(1, &volume);
        glBindTexture(GL_TEXTURE_3D, volume);
        glTexImage3D(GL_TEXTURE_3D, 0, GL_RGBA8, 8, 4, 2, 0, GL_RGBA, GL_UNSIGNED_BYTE, data);
        glTexSubImage3D(GL_TEXTURE_3D, 0, 0, 0, 1, 8, 4, 1, GL_RGBA, GL_FLOAT, data);
        uploads += 2;
    }
    printf("frames=%d uploads=%d checksum=%016llx error=0x%x\n", frames, uploads,
           (unsigned long long)checksum, glGetError());
    glXMakeCurrent(display, None, NULL);
    glXDestroyContext(display, context);
    XDestroyWindow(display, window);
    XFree(visual);
    XCloseDisplay(display);
    if (usb)
        libusb_exit(usb);
    return 0;
}
