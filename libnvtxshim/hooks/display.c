/* What the display's wrappers share (display.h): where the display is, looked
 * at once per process, and the ranges of NVTX domain "x11". */
#define _GNU_SOURCE
#include <X11/Xlib.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <xcb/xcb.h>

#include "../emit.h"
#include "../hook.h"
#include "../log.h"
#include "display.h"

/* ---- where the display is ------------------------------------------------- */

atomic_bool nvs_display_checked;

static void say(const char *text)
{
    struct nvs_attributes mark = NVS_ATTRIBUTES(NVS_DOMAIN_X11, NVS_X11_WARNING, NVS_COLOR_ERROR);
    nvs_attributes_name(&mark, (struct nvs_name){ NULL, text });
    nvs_mark(&mark);
}

/* A display reached over TCP (host:N, ssh -X's localhost:10) pays the network on
 * every round trip and cannot use MIT-SHM; a local one may still lack MIT-SHM
 * (a container without the host's IPC namespace). Said once per process. */
static void report_display(const char *name, int fd, int (*has_shm)(void *), void *connection)
{
    struct sockaddr_storage address;
    socklen_t length = sizeof address;
    char text[192], shown[NVS_CONFIG_SHOWN_SIZE];
    name = nvs_config_shown(shown, name, strlen(name)); /* $DISPLAY may hold anything */
    bool remote = getsockname(fd, (struct sockaddr *)&address, &length) == 0 &&
        (address.ss_family == AF_INET || address.ss_family == AF_INET6);
    if (remote) {
        snprintf(text, sizeof text,
                 "remote X display %s (TCP): round trips cross the network, "
                 "no MIT-SHM",
                 name);
        nvs_log_info("X display '%s' is remote (TCP): every round trip crosses the network and "
                     "images cannot use MIT-SHM\n",
                     name);
        say(text);
    } else if (!has_shm(connection)) {
        snprintf(text, sizeof text, "no MIT-SHM on X display %s: images go through the socket",
                 name);
        nvs_log_info("X display '%s' offers no MIT-SHM: images go through the socket\n", name);
        say(text);
    }
}

static int xlib_has_shm(void *display)
{
    int opcode, event, error;
    static _Atomic(void *) found;
    __typeof__(&XQueryExtension) query = (__typeof__(&XQueryExtension))nvs_find_function_once(
        &found, "libX11.so.6", "XQueryExtension");
    return query && query(display, "MIT-SHM", &opcode, &event, &error);
}

static int xcb_has_shm(void *connection)
{
    static _Atomic(void *) found_query, found_reply;
    __typeof__(&xcb_query_extension) query = (__typeof__(&xcb_query_extension))
        nvs_find_function_once(&found_query, "libxcb.so.1", "xcb_query_extension");
    __typeof__(&xcb_query_extension_reply) reply_of = (__typeof__(&xcb_query_extension_reply))
        nvs_find_function_once(&found_reply, "libxcb.so.1", "xcb_query_extension_reply");
    if (!query || !reply_of)
        return 1;
    xcb_query_extension_reply_t *reply = reply_of(connection, query(connection, 7, "MIT-SHM"),
                                                  NULL);
    int present = reply && reply->present;
    free(reply);
    return present;
}

void nvs_check_xlib_once(Display *display)
{
    if (!display || atomic_exchange(&nvs_display_checked, true))
        return;
    report_display(DisplayString(display), ConnectionNumber(display), xlib_has_shm, display);
}

void nvs_check_xcb_once(xcb_connection_t *connection)
{
    if (!connection || atomic_exchange(&nvs_display_checked, true))
        return;
    static _Atomic(void *) found;
    __typeof__(&xcb_get_file_descriptor) descriptor_of = (__typeof__(&xcb_get_file_descriptor))
        nvs_find_function_once(&found, "libxcb.so.1", "xcb_get_file_descriptor");
    if (descriptor_of)
        report_display(nvs_config()->display[0] ? nvs_config()->display : "(unknown)",
                       descriptor_of(connection), xcb_has_shm, connection);
}

/* ---- ranges -------------------------------------------------------------- */

void nvs_x11_begin_area(enum nvs_hook_id id, unsigned width, unsigned height, bool moves,
                        uint64_t bytes)
{
    struct nvs_attributes range = NVS_ATTRIBUTES(NVS_DOMAIN_X11, NVS_X11_DRAW, NVS_COLOR_X11_DRAW);
    if (moves)
        nvs_attributes_payload(&range, bytes);
    char text[NVS_CALL_TEXT_MAX];
    uint64_t key = nvs_call_name_key(id,
                                     ((uint64_t)(width & 0xffffff) << 24) | (height & 0xffffff));
    struct nvs_name name;
    NVS_NAME(name, NVS_DOMAIN_X11, key, text, "%s %ux%u", nvs_hook_name(id), width, height);
    nvs_attributes_name(&range, name);
    nvs_call_open(id, NVS_FRAME_OFF, -1, &range);
}
