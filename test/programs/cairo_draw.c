/* cairo drawing with alpha on an X pixmap, through an Xlib surface (libXrender)
 * or an XCB surface (libxcb-render): RENDER composites, no image sent.
 *
 *   cairo_draw N --xlib|--xcb
 *
 * Each of the N frames paints a 64x32 ARGB surface that lives in the server
 * onto the 128x96 target, half transparent (one composite of 64x32), fills a
 * half-transparent 40x20 rectangle (one rectangle fill), two 8x8 ones in one
 * fill (a fill of a list), a half-transparent circle (trapezoids) and two
 * words of text (glyphs: one with glyph indices below 256, one above). Then the target is read back
 * into memory once and its checksum printed. */
#include <cairo-xcb.h>
#include <cairo-xlib.h>
#include <cairo.h>
#include <fontconfig/fontconfig.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xcb/xcb.h>

#define WIDTH 128
#define HEIGHT 96

static void draw(cairo_surface_t *target, int frames)
{
    cairo_surface_t *sprite =
        cairo_surface_create_similar(target, CAIRO_CONTENT_COLOR_ALPHA, 64, 32);
    cairo_t *sprite_cr = cairo_create(sprite);
    cairo_set_source_rgba(sprite_cr, 0.2, 0.4, 0.8, 0.75);
    cairo_set_operator(sprite_cr, CAIRO_OPERATOR_SOURCE);
    cairo_paint(sprite_cr);
    cairo_destroy(sprite_cr);

    cairo_t *cr = cairo_create(target);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    for (int frame = 0; frame < frames; frame++) {
        cairo_set_source_surface(cr, sprite, frame % 32, 8);
        cairo_paint_with_alpha(cr, 0.5);
        cairo_set_source_rgba(cr, 0.9, 0.1, 0.1, 0.5);
        cairo_rectangle(cr, 4, 60, 40, 20);
        cairo_fill(cr);
        cairo_rectangle(cr, 50, 4, 8, 8);
        cairo_rectangle(cr, 60, 4, 8, 8);
        cairo_fill(cr);
        cairo_set_source_rgba(cr, 0.1, 0.7, 0.2, 0.5);
        cairo_arc(cr, 90, 60, 20 + frame % 5, 0, 6.283185307);
        cairo_fill(cr);
        cairo_set_source_rgba(cr, 0, 0, 0, 0.8);
        cairo_move_to(cr, 4, 90);
        cairo_set_font_size(cr, 10);
        cairo_show_text(cr, "nvtxshim");
        /* Glyph indices above 255 (Cyrillic in DejaVu Sans): 16-bit glyph requests. */
        cairo_move_to(cr, 64, 90);
        cairo_show_text(cr, "\u0416\u0436");
    }
    cairo_destroy(cr);
    cairo_surface_flush(target);
    cairo_surface_destroy(sprite);

    /* Read back: the target painted onto an image surface in memory. */
    cairo_surface_t *image = cairo_image_surface_create(CAIRO_FORMAT_RGB24, WIDTH, HEIGHT);
    cairo_t *copy = cairo_create(image);
    cairo_set_source_surface(copy, target, 0, 0);
    cairo_paint(copy);
    cairo_destroy(copy);
    cairo_surface_flush(image);
    const unsigned char *data = cairo_image_surface_get_data(image);
    int stride = cairo_image_surface_get_stride(image);
    uint64_t checksum = 1469598103934665603ull;
    for (int y = 0; y < HEIGHT; y++)
        for (int x = 0; x < WIDTH * 4; x++)
            checksum = (checksum ^ data[y * stride + x]) * 1099511628211ull;
    printf("frames=%d checksum=%016llx status=%s\n", frames, (unsigned long long)checksum,
           cairo_status_to_string(cairo_surface_status(target)));
    cairo_surface_destroy(image);
}

/* cairo's and fontconfig's caches freed, for the ASan run's leak check (cairo
 * 1.16's record of an Xlib display is still reported lost, with or without
 * the shim: mk/sanitize.mk leaves the Xlib runs out). */
static void finish(void)
{
    cairo_debug_reset_static_data();
    FcFini();
}

static int with_xlib(int frames)
{
    Display *display = XOpenDisplay(NULL);
    if (!display) {
        fprintf(stderr, "cairo_draw: cannot open display\n");
        return 1;
    }
    int screen = DefaultScreen(display);
    Pixmap pixmap = XCreatePixmap(display, RootWindow(display, screen), WIDTH, HEIGHT,
                                  (unsigned)DefaultDepth(display, screen));
    cairo_surface_t *target = cairo_xlib_surface_create(display, pixmap,
                                                        DefaultVisual(display, screen), WIDTH,
                                                        HEIGHT);
    draw(target, frames);
    cairo_surface_finish(target);
    cairo_surface_destroy(target);
    XFreePixmap(display, pixmap);
    XCloseDisplay(display);
    finish();
    return 0;
}

static xcb_visualtype_t *find_visual(xcb_screen_t *screen)
{
    for (xcb_depth_iterator_t depth = xcb_screen_allowed_depths_iterator(screen); depth.rem;
         xcb_depth_next(&depth))
        for (xcb_visualtype_iterator_t visual = xcb_depth_visuals_iterator(depth.data);
             visual.rem; xcb_visualtype_next(&visual))
            if (visual.data->visual_id == screen->root_visual)
                return visual.data;
    return NULL;
}

static int with_xcb(int frames)
{
    int screen_number;
    xcb_connection_t *connection = xcb_connect(NULL, &screen_number);
    if (xcb_connection_has_error(connection)) {
        fprintf(stderr, "cairo_draw: cannot connect\n");
        return 1;
    }
    xcb_screen_iterator_t screens = xcb_setup_roots_iterator(xcb_get_setup(connection));
    for (int i = 0; i < screen_number; i++)
        xcb_screen_next(&screens);
    xcb_screen_t *screen = screens.data;
    xcb_pixmap_t pixmap = xcb_generate_id(connection);
    xcb_create_pixmap(connection, screen->root_depth, pixmap, screen->root, WIDTH, HEIGHT);
    cairo_surface_t *target = cairo_xcb_surface_create(connection, pixmap, find_visual(screen),
                                                       WIDTH, HEIGHT);
    draw(target, frames);
    cairo_surface_finish(target);
    cairo_surface_destroy(target);
    xcb_free_pixmap(connection, pixmap);
    xcb_disconnect(connection);
    finish();
    return 0;
}

int main(int argc, char **argv)
{
    int frames = argc > 1 ? atoi(argv[1]) : 3;
    if (argc > 2 && !strcmp(argv[2], "--xcb"))
        return with_xcb(frames);
    return with_xlib(frames);
}
