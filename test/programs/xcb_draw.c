/* An XCB program: a window, its map and expose events, N frames of
 * xcb_put_image (or xcb_shm_put_image with --shm) and xcb_flush, and a
 * get-geometry round trip. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <xcb/shm.h>
#include <xcb/xcb.h>

#define WIDTH 160
#define HEIGHT 120

int main(int argc, char **argv)
{
    int frames = argc > 1 ? atoi(argv[1]) : 5;
    int use_shm = argc > 2 && !strcmp(argv[2], "--shm");
    xcb_connection_t *connection = xcb_connect(NULL, NULL);
    if (xcb_connection_has_error(connection)) {
        fprintf(stderr, "xcb_draw: cannot connect\n");
        return 1;
    }
    xcb_screen_t *screen = xcb_setup_roots_iterator(xcb_get_setup(connection)).data;
    xcb_window_t window = xcb_generate_id(connection);
    uint32_t events = XCB_EVENT_MASK_EXPOSURE | XCB_EVENT_MASK_STRUCTURE_NOTIFY;
    xcb_create_window(connection, XCB_COPY_FROM_PARENT, window, screen->root, 0, 0, WIDTH, HEIGHT,
                      0, XCB_WINDOW_CLASS_INPUT_OUTPUT, screen->root_visual, XCB_CW_EVENT_MASK,
                      &events);
    xcb_map_window(connection, window);
    xcb_flush(connection);
    int seen = 0;
    while (seen != 3) {
        xcb_generic_event_t *event = xcb_wait_for_event(connection);
        if (!event)
            return 1;
        if ((event->response_type & 0x7f) == XCB_MAP_NOTIFY) seen |= 1;
        if ((event->response_type & 0x7f) == XCB_EXPOSE) seen |= 2;
        free(event);
    }
    xcb_gcontext_t gc = xcb_generate_id(connection);
    xcb_create_gc(connection, gc, window, 0, NULL);
    uint32_t *pixels;
    xcb_shm_seg_t segment = 0;
    int shmid = -1;
    if (use_shm) {
        shmid = shmget(IPC_PRIVATE, WIDTH * HEIGHT * 4, IPC_CREAT | 0600);
        pixels = shmat(shmid, NULL, 0);
        segment = xcb_generate_id(connection);
        xcb_shm_attach(connection, segment, (uint32_t)shmid, 0);
    } else {
        pixels = malloc(WIDTH * HEIGHT * 4);
    }
    for (int f = 0; f < frames; f++) {
        for (int i = 0; i < WIDTH * HEIGHT; i++)
            pixels[i] = (uint32_t)((i * 3 + f * 7) & 0xffffff);
        if (use_shm)
            xcb_shm_put_image(connection, window, gc, WIDTH, HEIGHT, 0, 0, WIDTH, HEIGHT, 0, 0,
                              screen->root_depth, XCB_IMAGE_FORMAT_Z_PIXMAP, 0, segment, 0);
        else
            xcb_put_image(connection, XCB_IMAGE_FORMAT_Z_PIXMAP, window, gc, WIDTH, HEIGHT, 0, 0, 0,
                          screen->root_depth, WIDTH * HEIGHT * 4, (const uint8_t *)pixels);
        xcb_flush(connection);
    }
    xcb_get_geometry_reply_t *geometry =
        xcb_get_geometry_reply(connection, xcb_get_geometry(connection, window), NULL);
    printf("frames=%d %s geometry=%ux%u\n", frames, use_shm ? "shm" : "socket",
           geometry ? geometry->width : 0, geometry ? geometry->height : 0);
    free(geometry);
    if (use_shm) {
        xcb_shm_detach(connection, segment);
        xcb_flush(connection);
        shmdt(pixels);
        shmctl(shmid, IPC_RMID, NULL);
    } else {
        free(pixels);
    }
    xcb_disconnect(connection);
    return 0;
}
