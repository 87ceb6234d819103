/* emucam: the emulated camera + actuator, live.
 *
 *     emucam [--width W] [--height H] [--stall-frame K]... [--short-frame K]...
 *            [--timeout-frame K]... [--disconnect-frame K] [--frame-time-us U]
 *            [--bus B] [--address A] [--fx2 LOG] -- PROGRAM [ARGS...]
 *
 * Runs PROGRAM with a full-speed USB device 1209:0001, under a root hub, that
 * the real libusb (and pyusb, lsusb, usb-devices) can open, through umockdev's
 * preload library and an ioctl handler in this process. Unlike a umockdev
 * replay file, which serves one URB at a time in a fixed order, the handler
 * implements the device: any number of URBs may be in flight (a streaming
 * camera's queue), each open file of the device node has its own (as usbfs
 * keeps them), cancellation works, and the run may have any number of frames.
 * The device answers the standard requests a real one answers (descriptors,
 * strings, status, configuration) and usbfs's synchronous control and bulk
 * ioctls. The protocol, per frame i, is in README.md beside this file;
 * commands that break it stall (EPIPE) as a real device would, and are counted
 * in the line printed at exit when there were any. Faults can be put on given
 * frames: a stall, a short frame, a frame the camera never sends (the URB stays
 * pending until the program's timeout discards it), and a disconnect, after
 * which every request fails as usbfs fails it (ENODEV). --frame-time-us makes
 * the camera take U microseconds to send each frame (a slower camera: the bulk
 * IN is answered that long after it was asked for). With --fx2 the device
 * also takes an EZ-USB FX2's firmware download (vendor request 0xA0: its RAM and
 * CPUCS register), as fxload sends it, and logs every write to LOG.
 *
 * The exit status is PROGRAM's (128 + N when signal N ended it). Signals sent
 * to emucam (INT, TERM, HUP, USR1, USR2) are forwarded to PROGRAM. */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/ioctl.h>
#include <linux/usbdevice_fs.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <umockdev.h>
#include <unistd.h>

#define VENDOR 0x1209
#define PRODUCT 0x0001
#define GRID 4
#define MAX_MARKED 64
/* serve()'s and transfer()'s answer when the device does not answer: the URB stays pending. */
#define NO_ANSWER 1
/* usbfs's limit on a control transfer's data stage. */
#define MAX_CONTROL_DATA 4096

/* The camera's descriptors: a full-speed device (bcdUSB 2.00, bulk packets of 64 bytes). */
static const unsigned char camera_device[18] = {
    18, 1, 0x00, 0x02, 0xFF, 0, 0, 64, VENDOR & 0xff, VENDOR >> 8, PRODUCT & 0xff, PRODUCT >> 8,
    0x00, 0x01, 1, 2, 3, 1,
};
static const unsigned char camera_config[46] = {
    9, 2, 46, 0, 1, 1, 0, 0x80, 50,             /* configuration 1, 46 bytes in all, 100 mA */
    9, 4, 0, 0, 4, 0xFF, 0, 0, 0,               /* interface 0, vendor class, 4 endpoints */
    7, 5, 0x81, 2, 64, 0, 0,                    /* bulk IN 64: frames */
    7, 5, 0x02, 2, 64, 0, 0,                    /* bulk OUT 64: commands */
    7, 5, 0x83, 3, 8, 0, 4,                     /* interrupt IN 8, every 4 ms: status */
    7, 5, 0x04, 3, 8, 0, 4,                     /* interrupt OUT 8 */
};
static const char *const camera_strings[3] = { "nvtxshim", "emulated camera + actuator", "NVS0001" };

/* The root hub (usb1): a USB 2.0 root hub of an xHCI controller, one port, the camera on it. */
static const unsigned char hub_device[18] = {
    18, 1, 0x00, 0x02, 0x09, 0, 1, 64, 0x6b, 0x1d, 0x02, 0x00, 0x01, 0x06, 3, 2, 1, 1,
};
static const unsigned char hub_config[25] = {
    9, 2, 25, 0, 1, 1, 0, 0xE0, 0,              /* self powered, remote wakeup */
    9, 4, 0, 0, 1, 0x09, 0, 0, 0,               /* interface 0, hub class */
    7, 5, 0x81, 3, 4, 0, 12,                    /* interrupt IN: the status change bitmap */
};
static const char *const hub_strings[3] = { "Linux 6.1.0 xhci-hcd", "xHCI Host Controller",
                                            "0000:00:14.0" };

/* A device on the bus: its descriptors, and whether it is the root hub. */
struct model {
    const unsigned char *device, *config;
    const char *const *strings;   /* strings 1-3; string 0 is the language list */
    bool hub;
};
static const struct model camera_model = { camera_device, camera_config, camera_strings, false };
static const struct model hub_model = { hub_device, hub_config, hub_strings, true };

struct camera {
    int width, height;
    int stall[MAX_MARKED], stalls, shorts[MAX_MARKED], short_count;
    int timeouts[MAX_MARKED], timeout_count;
    long disconnect_at;       /* the frame whose request finds the device gone; -1: never */
    long frame_time_us;       /* --frame-time-us: how long a frame takes to send */
    bool gone;                /* unplugged: every request but a reap fails with ENODEV */
    unsigned next_frame;      /* index of the next frame bulk IN delivers */
    unsigned last_frame;      /* index of the frame delivered last (status reports it) */
    unsigned commands;        /* control commands accepted */
    unsigned last_command;    /* frame index of the last accepted control command */
    unsigned rejected;        /* commands that broke the protocol */
    unsigned configuration;   /* bConfigurationValue in force: 1, or 0 when unconfigured */
    unsigned char *frame;     /* scratch, one frame */
    FILE *fx2_log;            /* --fx2: the firmware download's writes go here; NULL: no FX2 */
    unsigned char fx2_ram[0x10000];
};

/* One open file of the device node: usbfs keeps URBs per file, so a reap returns
 * only the URBs submitted through that file. umockdev's preload connects one
 * socket per open(), one UMockdevIoctlClient here. */
struct file {
    GQueue done;              /* URBs completed, not yet reaped (UMockdevIoctlData *) */
    GQueue pending;           /* URBs the device does not answer (a --timeout-frame) */
};

static struct camera camera = { .width = 64, .height = 48, .disconnect_at = -1,
                                .configuration = 1 };
static GHashTable *files;     /* UMockdevIoctlClient * -> struct file *, in the handler's thread */
static char hub_node[64];    /* the root hub's device node; the camera's is the other */
static pid_t child;

static int target_of(unsigned index)
{
    return (int)((index * 7 + 3) % (GRID * GRID));
}

/* Frame INDEX: a dim moving pattern and one bright block in the cell it asks for. */
static void render(unsigned index, unsigned char *out, int width, int height)
{
    int target = target_of(index);
    int cell_w = width / GRID, cell_h = height / GRID;
    for (int y = 0; y < height; y++) {
        for (int x = 0; x < width; x++) {
            unsigned char *p = out + ((size_t)y * width + x) * 3;
            int base = (int)((x * 3 + y * 5 + index * 11) % 40);
            bool bright = x / cell_w == target % GRID && y / cell_h == target / GRID;
            p[0] = bright ? 0xf0 : (unsigned char)base;
            p[1] = bright ? 0xe0 : (unsigned char)((base + 13) % 40);
            p[2] = bright ? 0xd0 : (unsigned char)((base + 27) % 40);
        }
    }
}

static bool marked(const int *list, int count, unsigned index)
{
    for (int i = 0; i < count; i++)
        if ((unsigned)list[i] == index)
            return true;
    return false;
}

/* a(k): the action in force after frame K. A frame that stalls, comes short or
 * never comes leaves the previous one; a(-1) = 0. It depends on the frame index only, not
 * on how far ahead of the program the camera's queue runs. */
static int action_after(long k)
{
    for (; k >= 0; k--)
        if (!marked(camera.stall, camera.stalls, (unsigned)k) &&
            !marked(camera.shorts, camera.short_count, (unsigned)k) &&
            !marked(camera.timeouts, camera.timeout_count, (unsigned)k))
            return target_of((unsigned)k);
    return 0;
}

/* The URB type of ENDPOINT's transfers on MODEL, from its descriptors; -1: it has no
 * such endpoint. */
static int type_of(const struct model *model, unsigned endpoint)
{
    static const int types[4] = { USBDEVFS_URB_TYPE_CONTROL, USBDEVFS_URB_TYPE_ISO,
                                  USBDEVFS_URB_TYPE_BULK, USBDEVFS_URB_TYPE_INTERRUPT };
    if ((endpoint & 0x7f) == 0)
        return USBDEVFS_URB_TYPE_CONTROL;
    const unsigned char *config = model->config;
    unsigned total = config[2] | config[3] << 8;
    for (unsigned at = config[0]; at + 7 <= total; at += config[at])
        if (config[at + 1] == 5 && config[at + 2] == endpoint)
            return types[config[at + 3] & 3];
    return -1;
}

/* The client's file, made when it first asks; dropped with its URBs when it closes. */
static void file_free(gpointer data)
{
    struct file *file = data;
    g_queue_clear_full(&file->done, g_object_unref);
    g_queue_clear_full(&file->pending, g_object_unref);
    g_free(file);
}

/* umockdev keeps a client as long as its connection: the client goes when the program closes
 * the file (or exits). Its "connected" property is not notified then (umockdev 0.17), so the
 * client's end is the file's. Closing the file discards its URBs, reaped or not, as usbfs
 * does. */
static void closed(gpointer unused, GObject *client)
{
    (void)unused;
    g_hash_table_remove(files, client);
}

static struct file *file_of(UMockdevIoctlClient *client)
{
    struct file *file = g_hash_table_lookup(files, client);
    if (!file) {
        file = g_new0(struct file, 1);
        g_queue_init(&file->done);
        g_queue_init(&file->pending);
        g_hash_table_insert(files, client, file);
        g_object_weak_ref(G_OBJECT(client), closed, NULL);
    }
    return file;
}

/* The device goes away: what it has not answered, in every file, ends as the
 * kernel ends it on a disconnect (-ESHUTDOWN), ready to reap; from now on requests fail. */
static void unplug(void)
{
    camera.gone = true;
    GHashTableIter iter;
    gpointer value;
    g_hash_table_iter_init(&iter, files);
    while (g_hash_table_iter_next(&iter, NULL, &value)) {
        struct file *file = value;
        UMockdevIoctlData *urb_data;
        while ((urb_data = g_queue_pop_head(&file->pending))) {
            struct usbdevfs_urb *urb = (struct usbdevfs_urb *)urb_data->data;
            urb->status = -ESHUTDOWN;
            urb->actual_length = 0;
            g_queue_push_tail(&file->done, urb_data);
        }
    }
}

/* Copies LENGTH bytes of SOURCE into the data stage OUT, at most WANTED of them. */
static int reply(unsigned char *out, int wanted, const void *source, int length)
{
    int bytes = length < wanted ? length : wanted;
    memcpy(out, source, (size_t)bytes);
    return bytes;
}

/* GET_DESCRIPTOR: MODEL's device and configuration descriptors and strings; everything else
 * stalls. A full-speed-only device has no device qualifier and no other-speed configuration,
 * a bcdUSB 2.00 device no BOS, and Linux's root hubs answer none of those: a real one stalls
 * those requests. */
static int descriptor(const struct model *model, unsigned type, unsigned index,
                      unsigned char *data, int wanted)
{
    switch (type) {
    case 1:
        return index == 0 ? reply(data, wanted, model->device, model->device[0]) : -EPIPE;
    case 2:
        return index == 0 ? reply(data, wanted, model->config,
                                  model->config[2] | model->config[3] << 8)
                          : -EPIPE;
    case 3: {
        unsigned char text[2 + 2 * 64] = { 4, 3, 0x09, 0x04 };  /* string 0: US English */
        if (index > 3)
            return -EPIPE;
        if (index > 0) {
            /* UTF-16LE; the strings are ASCII. */
            const char *string = model->strings[index - 1];
            size_t length = strlen(string);
            text[0] = (unsigned char)(2 + 2 * length);
            for (size_t i = 0; i < length; i++) {
                text[2 + 2 * i] = (unsigned char)string[i];
                text[3 + 2 * i] = 0;
            }
        }
        return reply(data, wanted, text, text[0]);
    }
    default:
        return -EPIPE;
    }
}

/* The standard requests a real device answers (USB 2.0, chapter 9). */
static int standard_request(const struct model *model, unsigned request_type, unsigned request,
                            unsigned value, unsigned index, unsigned char *data, int length)
{
    bool in = request_type & 0x80;
    unsigned recipient = request_type & 0x1f;
    bool configured = model->hub || camera.configuration != 0;
    bool endpoint = recipient == 2 && (index & ~0x8fu) == 0 && type_of(model, index) >= 0 &&
                    (configured || (index & 0x7f) == 0);
    switch (request) {
    case 0x00: { /* GET_STATUS: no endpoint is kept halted (a stall ends one transfer) */
        /* The camera is bus powered, the root hub self powered; no remote wakeup enabled. */
        unsigned char status[2] = { model->hub && recipient == 0, 0 };
        if (!in || value != 0 || !((recipient == 0 && index == 0) ||
                                   (recipient == 1 && index == 0 && configured) || endpoint))
            return -EPIPE;
        return reply(data, length, status, 2);
    }
    case 0x01: /* CLEAR_FEATURE */
    case 0x03: /* SET_FEATURE: ENDPOINT_HALT; DEVICE_REMOTE_WAKEUP where the device has it */
        if (in || length || !((endpoint && value == 0) ||
                              (recipient == 0 && index == 0 && value == 1 &&
                               model->config[7] & 0x20)))
            return -EPIPE;
        return 0;
    case 0x06: /* GET_DESCRIPTOR */
        if (!in || recipient != 0)
            return -EPIPE;
        return descriptor(model, value >> 8, value & 0xff, data, length);
    case 0x08: /* GET_CONFIGURATION */
        if (!in || recipient != 0)
            return -EPIPE;
        return reply(data, length, (const unsigned char[1]){ configured }, 1);
    case 0x09: /* SET_CONFIGURATION: the root hub's stays with its driver */
        if (in || recipient != 0 || value > 1 || length || model->hub)
            return -EPIPE;
        camera.configuration = value;
        return 0;
    case 0x0a: /* GET_INTERFACE: interface 0 has one setting */
        if (!in || recipient != 1 || index != 0 || !configured)
            return -EPIPE;
        return reply(data, length, (const unsigned char[1]){ 0 }, 1);
    case 0x0b: /* SET_INTERFACE */
        if (in || recipient != 1 || index != 0 || value != 0 || !configured || length)
            return -EPIPE;
        return 0;
    default:   /* SET_ADDRESS (the host controller's), SET_DESCRIPTOR, SYNCH_FRAME (no isochronous
                * endpoint) */
        return -EPIPE;
    }
}

/* The root hub's class requests that read its state (USB 2.0, 11.24): its hub descriptor, its
 * status and its port's. Port 1 has the camera, connected, enabled, powered, at full speed.
 * Requests that would change a port are refused (stall): nothing here emulates them. */
static int hub_request(unsigned request_type, unsigned request, unsigned value, unsigned index,
                       unsigned char *data, int length)
{
    static const unsigned char hub_descriptor[9] = { 9, 0x29, 1, 0x09, 0, 10, 0, 0x00, 0xff };
    if (request_type == 0xA0 && request == 0x06 && (value >> 8) == 0x29 && index == 0)
        return reply(data, length, hub_descriptor, sizeof hub_descriptor);
    if (request_type == 0xA0 && request == 0x00 && value == 0 && index == 0)
        return reply(data, length, (const unsigned char[4]){ 0, 0, 0, 0 }, 4);
    if (request_type == 0xA3 && request == 0x00 && value == 0 && index == 1) {
        /* wPortStatus: connection, enable, power; no change. */
        unsigned char status[4] = { camera.gone ? 0x00 : 0x03, 0x01, camera.gone ? 0x01 : 0, 0 };
        return reply(data, length, status, 4);
    }
    return -EPIPE;
}

/* --fx2: an EZ-USB FX2's firmware download, vendor request 0xA0 ("firmware load"): wValue is
 * the address in its internal program/data RAM (0x0000-0x3FFF), its scratch RAM
 * (0xE000-0xE1FF) or its CPUCS register (0xE600, bit 0 holds the 8051 in reset). */
static bool fx2_address(unsigned address, int length)
{
    unsigned end = address + (unsigned)length;
    return length > 0 && ((end <= 0x4000) || (address >= 0xE000 && end <= 0xE200) ||
                          (address == 0xE600 && length == 1));
}

static int fx2_request(bool in, unsigned address, unsigned char *data, int length)
{
    if (!fx2_address(address, length))
        return -EPIPE;
    if (in)
        return reply(data, length, camera.fx2_ram + address, length);
    memcpy(camera.fx2_ram + address, data, (size_t)length);
    fprintf(camera.fx2_log, "0x%04x ", address);
    for (int i = 0; i < length; i++)
        fprintf(camera.fx2_log, "%02x", data[i]);
    fputc('\n', camera.fx2_log);
    fflush(camera.fx2_log);
    return length;
}

/* The device's side of a control transfer: SETUP is the 8-byte setup packet, DATA its data
 * stage (wLength bytes: read for OUT, filled for IN). Returns the data stage's bytes, or a
 * negative errno: -EPIPE when the device stalls. */
static int control(const struct model *model, const unsigned char *setup, unsigned char *data)
{
    unsigned request_type = setup[0], request = setup[1];
    unsigned value = setup[2] | setup[3] << 8, index = setup[4] | setup[5] << 8;
    int length = setup[6] | setup[7] << 8;
    switch (request_type & 0x60) {
    case 0x00:
        return standard_request(model, request_type, request, value, index, data, length);
    case 0x20:
        return model->hub ? hub_request(request_type, request, value, index, data, length)
                          : -EPIPE; /* the camera has no class requests */
    case 0x40:
        if (model->hub)
            return -EPIPE;
        if (request == 0xA0 && camera.fx2_log && (request_type & 0x1f) == 0)
            return fx2_request(request_type & 0x80, value, data, length);
        break;
    default:
        return -EPIPE;
    }
    /* The camera's command (README.md): control OUT 0x40 0x01, wValue the frame index
     * modulo 65536 (a long run goes on past frame 65535), wIndex the action. Any other
     * vendor request breaks the protocol. */
    unsigned frame = camera.commands;
    if (request_type != 0x40 || request != 0x01 || length != 0 || value != (frame & 0xffff) ||
        index != (unsigned)action_after((long)frame - 1)) {
        camera.rejected++;
        return -EPIPE;
    }
    camera.last_command = frame;
    camera.commands++;
    return 0;
}

/* The camera's side of a transfer on ENDPOINT (bulk or interrupt): BUFFER of LENGTH bytes,
 * read for OUT, filled for IN. Returns 0 or a negative errno status (-EPIPE: a stall,
 * -EOVERFLOW, -ESHUTDOWN: unplugged), *ACTUAL the bytes moved; NO_ANSWER when the
 * device does not answer. */
static int transfer(unsigned char endpoint, unsigned char *buffer, int length, int *actual)
{
    *actual = 0;
    switch (endpoint) {
    case 0x02:
    case 0x04: {
        /* An actuator command: bulk or interrupt OUT. */
        unsigned char expected[8] = { 0xA5,
                                      (unsigned char)action_after((long)camera.last_command - 1),
                                      (unsigned char)(camera.last_command & 0xff),
                                      (unsigned char)(camera.last_command >> 8), 0, 0, 0, 0x5A };
        if (length != 8 || !camera.commands || memcmp(buffer, expected, 8)) {
            camera.rejected++;
            return -EPIPE;
        }
        *actual = 8;
        return 0;
    }
    case 0x81: {
        unsigned index = camera.next_frame++;
        int bytes = camera.width * camera.height * 3, status = 0;
        camera.last_frame = index;
        if (camera.disconnect_at >= 0 && (long)index >= camera.disconnect_at) {
            /* Unplugged while this frame was asked for. */
            unplug();
            return -ESHUTDOWN;
        }
        if (marked(camera.timeouts, camera.timeout_count, index))
            return NO_ANSWER;
        if (marked(camera.stall, camera.stalls, index))
            return -EPIPE;
        if (camera.frame_time_us) {
            struct timespec sending = { camera.frame_time_us / 1000000,
                                        camera.frame_time_us % 1000000 * 1000 };
            while (nanosleep(&sending, &sending) != 0 && errno == EINTR)
                continue;
        }
        render(index, camera.frame, camera.width, camera.height);
        if (marked(camera.shorts, camera.short_count, index))
            bytes /= 2;
        if (bytes > length) {
            bytes = length;
            status = -EOVERFLOW;
        }
        memcpy(buffer, camera.frame, (size_t)bytes);
        *actual = bytes;
        return status;
    }
    case 0x83: {
        unsigned char status[8] = { (unsigned char)(camera.last_frame & 0xff),
                                    (unsigned char)(camera.last_frame >> 8),
                                    (unsigned char)action_after(camera.last_frame), 0, 0, 0,
                                    0, 0 };
        *actual = reply(buffer, length, status, 8);
        return 0;
    }
    }
    return 0;
}

/* usbfs's checks on a transfer to ENDPOINT of TYPE (a URB type) before the device sees it:
 * 0 or the errno. The root hub's interface is bound to the hub driver: usbfs cannot claim
 * it, so its endpoint is busy. */
static int endpoint_refused(const struct model *model, unsigned endpoint, int type)
{
    int endpoint_type = type_of(model, endpoint);
    if (endpoint_type < 0)
        return ENOENT;
    if ((endpoint & 0x7f) && model->hub)
        return EBUSY;
    return type == endpoint_type ? 0 : EINVAL;
}

/* The device's side of one URB: fills in status, actual_length and IN data.
 * Returns false when the device does not answer it (it stays pending). */
static bool serve(const struct model *model, struct usbdevfs_urb *urb, unsigned char *buffer)
{
    int actual = 0, status;
    if (urb->type == USBDEVFS_URB_TYPE_CONTROL) {
        /* buffer: the 8-byte setup packet, then the data stage. */
        status = control(model, buffer, buffer + 8);
        if (status > 0)
            actual = status;
        status = status > 0 ? 0 : status;
    } else {
        status = transfer(urb->endpoint, buffer, urb->buffer_length, &actual);
        if (status == NO_ANSWER)
            return false;
    }
    urb->status = status;
    urb->actual_length = actual;
    return true;
}

/* SUBMITURB's checks, as usbfs makes them; 0 or the errno it fails with. */
static int refused(const struct model *model, const struct usbdevfs_urb *urb,
                   const unsigned char *buffer)
{
    int error = endpoint_refused(model, urb->endpoint, urb->type);
    if (error || urb->buffer_length < 0)
        return error ? error : EINVAL;
    if (urb->type == USBDEVFS_URB_TYPE_CONTROL) {
        /* A setup packet, and room for its data stage. */
        if (urb->buffer_length < 8 || !buffer)
            return EINVAL;
        int data_length = buffer[6] | buffer[7] << 8;
        if (data_length + 8 > urb->buffer_length || data_length > MAX_CONTROL_DATA)
            return EINVAL;
    }
    return 0;
}

static gboolean submit(const struct model *model, UMockdevIoctlClient *client,
                       UMockdevIoctlData *arg)
{
    UMockdevIoctlData *urb_data =
        umockdev_ioctl_data_resolve(arg, 0, sizeof(struct usbdevfs_urb), NULL);
    if (!urb_data)
        return FALSE;
    struct usbdevfs_urb *urb = (struct usbdevfs_urb *)urb_data->data;
    UMockdevIoctlData *buffer = NULL;
    if (urb->buffer_length > 0) {
        buffer = umockdev_ioctl_data_resolve(urb_data, G_STRUCT_OFFSET(struct usbdevfs_urb, buffer),
                                             (gsize)urb->buffer_length, NULL);
        if (!buffer) {
            g_object_unref(urb_data);
            umockdev_ioctl_client_complete(client, -1, EFAULT);
            return TRUE;
        }
    }
    int error = refused(model, urb, buffer ? buffer->data : NULL);
    if (error) {
        if (buffer)
            g_object_unref(buffer);
        g_object_unref(urb_data);
        umockdev_ioctl_client_complete(client, -1, error);
        return TRUE;
    }
    /* The device is ready: the URB completes now and waits to be reaped through this
     * file, unless this is a frame the camera never sends. */
    bool answered = serve(model, urb, buffer ? buffer->data : NULL);
    if (buffer)
        g_object_unref(buffer);
    struct file *file = file_of(client);
    g_queue_push_tail(answered ? &file->done : &file->pending, urb_data);
    umockdev_ioctl_client_complete(client, 0, 0);
    return TRUE;
}

static gboolean reap(UMockdevIoctlClient *client, UMockdevIoctlData *arg, bool gone)
{
    struct file *file = file_of(client);
    UMockdevIoctlData *urb_data = g_queue_pop_head(&file->done);
    if (!urb_data) {
        umockdev_ioctl_client_complete(client, -1, gone ? ENODEV : EAGAIN);
        return TRUE;
    }
    UMockdevIoctlData *pointer = umockdev_ioctl_data_resolve(arg, 0, sizeof(void *), NULL);
    if (!pointer) {
        g_queue_push_head(&file->done, urb_data);
        return FALSE;
    }
    umockdev_ioctl_data_set_ptr(pointer, 0, urb_data);
    umockdev_ioctl_client_complete(client, 0, 0);
    g_object_unref(pointer);
    g_object_unref(urb_data);
    return TRUE;
}

static gboolean discard(UMockdevIoctlClient *client, UMockdevIoctlData *arg)
{
    /* A pending URB of this file (a frame the camera never sends: the program's timeout
     * cancels it) is unlinked as usbfs does, -ECONNRESET, and waits to be reaped. Every
     * other URB has completed by the time it could be cancelled, or is another file's:
     * the kernel answers EINVAL, and a completed one is reaped as it completed. */
    struct file *file = file_of(client);
    gulong address = *(gulong *)arg->data;
    for (GList *link = file->pending.head; link; link = link->next) {
        UMockdevIoctlData *urb_data = link->data;
        if (urb_data->client_addr != address)
            continue;
        struct usbdevfs_urb *urb = (struct usbdevfs_urb *)urb_data->data;
        urb->status = -ECONNRESET;
        urb->actual_length = 0;
        g_queue_delete_link(&file->pending, link);
        g_queue_push_tail(&file->done, urb_data);
        umockdev_ioctl_client_complete(client, 0, 0);
        return TRUE;
    }
    umockdev_ioctl_client_complete(client, -1, EINVAL);
    return TRUE;
}

/* Ends a synchronous request: RESULT is its return value, or a negative errno. */
static gboolean finish(UMockdevIoctlClient *client, int result)
{
    if (result < 0)
        umockdev_ioctl_client_complete(client, -1, -result);
    else
        umockdev_ioctl_client_complete(client, result, 0);
    return TRUE;
}

/* USBDEVFS_CONTROL: one control transfer, synchronous; it returns the data stage's bytes. */
static gboolean control_ioctl(const struct model *model, UMockdevIoctlClient *client,
                              UMockdevIoctlData *arg)
{
    UMockdevIoctlData *ctrl_data =
        umockdev_ioctl_data_resolve(arg, 0, sizeof(struct usbdevfs_ctrltransfer), NULL);
    if (!ctrl_data)
        return FALSE;
    struct usbdevfs_ctrltransfer *ctrl = (struct usbdevfs_ctrltransfer *)ctrl_data->data;
    unsigned char setup[8] = { ctrl->bRequestType, ctrl->bRequest,
                               (unsigned char)ctrl->wValue, (unsigned char)(ctrl->wValue >> 8),
                               (unsigned char)ctrl->wIndex, (unsigned char)(ctrl->wIndex >> 8),
                               (unsigned char)ctrl->wLength, (unsigned char)(ctrl->wLength >> 8) };
    UMockdevIoctlData *data = NULL;
    int result = -EINVAL;
    if (ctrl->wLength <= MAX_CONTROL_DATA) {
        if (ctrl->wLength)
            data = umockdev_ioctl_data_resolve(
                ctrl_data, G_STRUCT_OFFSET(struct usbdevfs_ctrltransfer, data), ctrl->wLength,
                NULL);
        unsigned char none[1];
        result = ctrl->wLength && !data ? -EFAULT : control(model, setup, data ? data->data : none);
    }
    finish(client, result);
    if (data)
        g_object_unref(data);
    g_object_unref(ctrl_data);
    return TRUE;
}

/* USBDEVFS_BULK: one bulk or interrupt transfer, synchronous; it returns the bytes moved.
 * A frame the camera never sends ends at once with the timeout's ETIMEDOUT (usbfs would
 * wait out the timeout first: this handler may not block). */
static gboolean bulk_ioctl(const struct model *model, UMockdevIoctlClient *client,
                           UMockdevIoctlData *arg)
{
    UMockdevIoctlData *bulk_data =
        umockdev_ioctl_data_resolve(arg, 0, sizeof(struct usbdevfs_bulktransfer), NULL);
    if (!bulk_data)
        return FALSE;
    struct usbdevfs_bulktransfer *bulk = (struct usbdevfs_bulktransfer *)bulk_data->data;
    UMockdevIoctlData *data = NULL;
    int actual = 0, result = -ENOENT;
    if (bulk->ep <= 0xff && (bulk->ep & 0x7f)) {
        /* usbfs makes it an interrupt transfer on an interrupt endpoint, else a bulk one. */
        int type = type_of(model, bulk->ep) == USBDEVFS_URB_TYPE_INTERRUPT
                       ? USBDEVFS_URB_TYPE_INTERRUPT : USBDEVFS_URB_TYPE_BULK;
        result = -endpoint_refused(model, bulk->ep, type);
    }
    if (!result && bulk->len > 16u << 20)
        result = -EINVAL;
    if (!result && bulk->len) {
        data = umockdev_ioctl_data_resolve(
            bulk_data, G_STRUCT_OFFSET(struct usbdevfs_bulktransfer, data), bulk->len, NULL);
        if (!data)
            result = -EFAULT;
    }
    if (!result) {
        unsigned char none[1];
        result = transfer((unsigned char)bulk->ep, data ? data->data : none, (int)bulk->len,
                          &actual);
        if (result == NO_ANSWER)
            result = -ETIMEDOUT;
        else if (result == 0)
            result = actual;
    }
    finish(client, result);
    if (data)
        g_object_unref(data);
    g_object_unref(bulk_data);
    return TRUE;
}

/* An ioctl's argument, an unsigned int read from the client (an interface number). */
static bool read_number(UMockdevIoctlData *arg, unsigned *value)
{
    UMockdevIoctlData *number = umockdev_ioctl_data_resolve(arg, 0, sizeof(unsigned), NULL);
    if (!number)
        return false;
    *value = *(unsigned *)number->data;
    g_object_unref(number);
    return true;
}

static gboolean handle_ioctl(UMockdevIoctlBase *base, UMockdevIoctlClient *client, gpointer unused)
{
    (void)base;
    (void)unused;
    UMockdevIoctlData *arg = umockdev_ioctl_client_get_arg(client);
    gulong request = umockdev_ioctl_client_get_request(client);
    const struct model *model = strcmp(umockdev_ioctl_client_get_devnode(client), hub_node)
                                    ? &camera_model : &hub_model;
    bool gone = camera.gone && !model->hub;
    unsigned number;
    if (gone && request != USBDEVFS_REAPURB && request != USBDEVFS_REAPURBNDELAY) {
        /* usbfs after a disconnect: only reaping what completed still works. */
        umockdev_ioctl_client_complete(client, -1, ENODEV);
        return TRUE;
    }
    switch (request) {
    case USBDEVFS_GET_CAPABILITIES: {
        UMockdevIoctlData *caps = umockdev_ioctl_data_resolve(arg, 0, sizeof(uint32_t), NULL);
        if (!caps)
            return FALSE;
        /* One URB per transfer, whatever its size. */
        *(uint32_t *)caps->data = USBDEVFS_CAP_ZERO_PACKET | USBDEVFS_CAP_BULK_CONTINUATION |
                                  USBDEVFS_CAP_NO_PACKET_SIZE_LIM |
                                  USBDEVFS_CAP_BULK_SCATTER_GATHER;
        umockdev_ioctl_client_complete(client, 0, 0);
        g_object_unref(caps);
        return TRUE;
    }
    case USBDEVFS_SETCONFIGURATION: {
        UMockdevIoctlData *value = umockdev_ioctl_data_resolve(arg, 0, sizeof(int), NULL);
        if (!value)
            return FALSE;
        /* -1 (libusb's "unconfigured") and 0 unconfigure; the camera has configuration 1.
         * The root hub's interface is its driver's: usbfs refuses to change it. */
        int configuration = *(int *)value->data;
        g_object_unref(value);
        if (model->hub)
            return finish(client, -EBUSY);
        if (configuration < -1 || configuration > 1)
            return finish(client, -EINVAL);
        camera.configuration = configuration == 1;
        return finish(client, 0);
    }
    case USBDEVFS_CLAIMINTERFACE:
        /* The camera's interface 0 is free (claims are not made exclusive between files:
         * README.md); the root hub's is the hub driver's. */
        if (!read_number(arg, &number))
            return FALSE;
        return finish(client, number != 0 ? -ENOENT : model->hub ? -EBUSY : 0);
    case USBDEVFS_RELEASEINTERFACE:
        if (!read_number(arg, &number))
            return FALSE;
        return finish(client, number != 0 || model->hub ? -EINVAL : 0);
    case USBDEVFS_SETINTERFACE:
    case USBDEVFS_CLEAR_HALT:
    case USBDEVFS_RESETEP:
        return finish(client, model->hub ? -EBUSY : 0);
    case USBDEVFS_RESET:
        /* The kernel does not reset a root hub. */
        return finish(client, model->hub ? -EISDIR : 0);
    case USBDEVFS_GETDRIVER: {
        UMockdevIoctlData *driver =
            umockdev_ioctl_data_resolve(arg, 0, sizeof(struct usbdevfs_getdriver), NULL);
        if (!driver)
            return FALSE;
        struct usbdevfs_getdriver *get = (struct usbdevfs_getdriver *)driver->data;
        int result = get->interface == 0 && model->hub ? 0 : -ENODATA;
        if (!result)
            snprintf(get->driver, sizeof get->driver, "hub");
        finish(client, result);
        g_object_unref(driver);
        return TRUE;
    }
    case USBDEVFS_IOCTL:
        /* No kernel driver is bound to the camera's interface; the root hub's stays bound. */
        return finish(client, model->hub ? -EPERM : -ENODATA);
    case USBDEVFS_CONTROL:
        return control_ioctl(model, client, arg);
    case USBDEVFS_BULK:
        return bulk_ioctl(model, client, arg);
    case USBDEVFS_SUBMITURB:
        return submit(model, client, arg);
    case USBDEVFS_REAPURB:
    case USBDEVFS_REAPURBNDELAY:
        return reap(client, arg, gone);
    case USBDEVFS_DISCARDURB:
        return discard(client, arg);
    default:
        return FALSE;
    }
}

/* The umockdev description of the test bed's sysfs: the host controller, its root hub
 * (usb1), the camera on port 1 (1-1), and their interfaces and endpoints, with the
 * attributes the kernel gives them (each value ends with a newline, as the kernel's do). */
G_GNUC_PRINTF(3, 4)
static void attribute(GString *out, const char *name, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    g_string_append_printf(out, "A: %s=", name);
    g_string_append_vprintf(out, format, args);
    g_string_append(out, "\\n\n");
    va_end(args);
}

static void hex_attribute(GString *out, const char *name, const unsigned char *device, size_t
                          device_size, const unsigned char *config, size_t config_size)
{
    g_string_append_printf(out, "H: %s=", name);
    for (size_t i = 0; i < device_size; i++)
        g_string_append_printf(out, "%02X", device[i]);
    for (size_t i = 0; i < config_size; i++)
        g_string_append_printf(out, "%02X", config[i]);
    g_string_append_c(out, '\n');
}

/* An endpoint's directory (ep_XX) in its interface's or device's, from its descriptor EP. */
static void endpoint_attributes(GString *out, const unsigned char *ep, bool high_speed)
{
    static const char *const types[] = { "Control", "Isoc", "Bulk", "Interrupt" };
    unsigned address = ep[2], attributes = ep[3];
    unsigned packet = ep[4] | ep[5] << 8, interval = ep[6];
    unsigned type = attributes & 3;
    /* interval: the polling period; the NAK rate of a high-speed control or bulk OUT. */
    unsigned period = 0;
    if (type == 1 || (type == 3 && high_speed))
        period = 1u << (interval - 1);
    else if (type == 3 || (high_speed && (type == 0 || !(address & 0x80))))
        period = interval;
    period *= high_speed ? 125 : 1000;
    char name[64];
#define EP(attr) (snprintf(name, sizeof name, "ep_%02x/%s", address, attr), name)
    attribute(out, EP("bLength"), "%02x", ep[0]);
    attribute(out, EP("bEndpointAddress"), "%02x", address);
    attribute(out, EP("bmAttributes"), "%02x", attributes);
    attribute(out, EP("bInterval"), "%02x", interval);
    attribute(out, EP("wMaxPacketSize"), "%04x", packet);
    attribute(out, EP("type"), "%s", types[type]);
    attribute(out, EP("direction"), "%s", type == 0 ? "both" : address & 0x80 ? "in" : "out");
    if (period % 1000)
        attribute(out, EP("interval"), "%uus", period);
    else
        attribute(out, EP("interval"), "%ums", period / 1000);
#undef EP
}

/* A USB device's attributes, from its descriptors. */
static void device_attributes(GString *out, const struct model *model, int bus, int address,
                              const char *devpath, const char *speed, int maxchild)
{
    const unsigned char *device = model->device, *config = model->config;
    const char *const *texts = model->strings;
    bool high_speed = !strcmp(speed, "480");
    attribute(out, "authorized", "1");
    attribute(out, "bConfigurationValue", "%u", config[5]);
    attribute(out, "bDeviceClass", "%02x", device[4]);
    attribute(out, "bDeviceSubClass", "%02x", device[5]);
    attribute(out, "bDeviceProtocol", "%02x", device[6]);
    attribute(out, "bMaxPacketSize0", "%u", device[7]);
    attribute(out, "bMaxPower", "%umA", config[8] * 2u);
    attribute(out, "bNumConfigurations", "%u", device[17]);
    attribute(out, "bNumInterfaces", "%2u", config[4]);
    attribute(out, "bcdDevice", "%02x%02x", device[13], device[12]);
    attribute(out, "bmAttributes", "%2x", config[7]);
    attribute(out, "busnum", "%d", bus);
    attribute(out, "configuration", "%s", "");
    attribute(out, "devnum", "%d", address);
    /* The device number, as sysfs has it: umockdev gives it to stat() of the node. */
    attribute(out, "dev", "189:%d", (bus - 1) * 128 + address - 1);
    attribute(out, "devpath", "%s", devpath);
    attribute(out, "idProduct", "%02x%02x", device[11], device[10]);
    attribute(out, "idVendor", "%02x%02x", device[9], device[8]);
    attribute(out, "ltm_capable", "no");
    attribute(out, "manufacturer", "%s", texts[0]);
    attribute(out, "maxchild", "%d", maxchild);
    attribute(out, "product", "%s", texts[1]);
    attribute(out, "quirks", "0x0");
    attribute(out, "removable", "%s", maxchild ? "unknown" : "removable");
    attribute(out, "rx_lanes", "1");
    attribute(out, "serial", "%s", texts[2]);
    attribute(out, "speed", "%s", speed);
    attribute(out, "tx_lanes", "1");
    attribute(out, "version", "%2x.%02x", device[3], device[2]);
    static const unsigned char endpoint_zero[7] = { 7, 5, 0x00, 0, 64, 0, 0 };
    endpoint_attributes(out, endpoint_zero, high_speed);
    hex_attribute(out, "descriptors", device, 18, config, (size_t)(config[2] | config[3] << 8));
}

/* MODEL's first interface, with its endpoints. */
static void interface_attributes(GString *out, const struct model *model, bool high_speed)
{
    const unsigned char *device = model->device, *config = model->config;
    const unsigned char *interface = config + 9;
    attribute(out, "authorized", "1");
    attribute(out, "bAlternateSetting", "%2u", interface[3]);
    attribute(out, "bInterfaceClass", "%02x", interface[5]);
    attribute(out, "bInterfaceNumber", "%02x", interface[2]);
    attribute(out, "bInterfaceProtocol", "%02x", interface[7]);
    attribute(out, "bInterfaceSubClass", "%02x", interface[6]);
    attribute(out, "bNumEndpoints", "%02x", interface[4]);
    attribute(out, "modalias", "usb:v%02X%02Xp%02X%02Xd%02X%02Xdc%02Xdsc%02Xdp%02Xic%02Xisc%02X"
              "ip%02Xin%02X", device[9], device[8], device[11], device[10], device[13],
              device[12], device[4], device[5], device[6], interface[5], interface[6],
              interface[7], interface[2]);
    attribute(out, "supports_autosuspend", "1");
    for (unsigned i = 0; i < interface[4]; i++)
        endpoint_attributes(out, interface + 9 + 7 * i, high_speed);
}

static char *description(int bus, int address)
{
    GString *out = g_string_new(NULL);
    /* The host controller: lsusb -t names the root hub's driver after it. */
    g_string_append(out, "P: /devices/pci0000:00/0000:00:14.0\n"
                         "E: DRIVER=xhci_hcd\nE: PCI_CLASS=C0330\nE: SUBSYSTEM=pci\n"
                         "L: driver=../../../bus/pci/drivers/xhci_hcd\n"
                         "A: class=0x0c0330\\n\n\n");

    /* The root hub, address 1, and its interface (the hub driver's). */
    g_string_append_printf(out, "P: /devices/pci0000:00/0000:00:14.0/usb%d\n"
                                "N: bus/usb/%03d/001\n"
                                "E: BUSNUM=%03d\nE: DEVNAME=/dev/bus/usb/%03d/001\nE: DEVNUM=001\n"
                                "E: DEVTYPE=usb_device\nE: DRIVER=usb\nE: MAJOR=189\nE: MINOR=%d\n"
                                "E: PRODUCT=1d6b/2/601\nE: TYPE=9/0/1\nE: SUBSYSTEM=usb\n"
                                "L: driver=../../../../bus/usb/drivers/usb\n",
                           bus, bus, bus, bus, (bus - 1) * 128);
    device_attributes(out, &hub_model, bus, 1, "0", "480", 1);
    g_string_append_printf(out, "\nP: /devices/pci0000:00/0000:00:14.0/usb%d/%d-0:1.0\n"
                                "E: DEVTYPE=usb_interface\nE: DRIVER=hub\nE: INTERFACE=9/0/0\n"
                                "E: PRODUCT=1d6b/2/601\nE: TYPE=9/0/1\nE: SUBSYSTEM=usb\n"
                                "L: driver=../../../../../bus/usb/drivers/hub\n",
                           bus, bus);
    interface_attributes(out, &hub_model, true);

    /* The camera on port 1, and its interface (no driver bound). */
    g_string_append_printf(out, "\nP: /devices/pci0000:00/0000:00:14.0/usb%d/%d-1\n"
                                "N: bus/usb/%03d/%03d\n"
                                "E: BUSNUM=%03d\nE: DEVNAME=/dev/bus/usb/%03d/%03d\nE: DEVNUM=%03d\n"
                                "E: DEVTYPE=usb_device\nE: DRIVER=usb\nE: ID_VENDOR_ID=%04x\n"
                                "E: ID_MODEL_ID=%04x\nE: MAJOR=189\nE: MINOR=%d\n"
                                "E: PRODUCT=%x/%x/100\nE: TYPE=255/0/0\nE: SUBSYSTEM=usb\n"
                                "L: driver=../../../../../bus/usb/drivers/usb\n",
                           bus, bus, bus, address, bus, bus, address, address, VENDOR, PRODUCT,
                           (bus - 1) * 128 + address - 1, VENDOR, PRODUCT);
    device_attributes(out, &camera_model, bus, address, "1", "12", 0);
    g_string_append_printf(out, "\nP: /devices/pci0000:00/0000:00:14.0/usb%d/%d-1/%d-1:1.0\n"
                                "E: DEVTYPE=usb_interface\nE: INTERFACE=255/0/0\n"
                                "E: PRODUCT=%x/%x/100\nE: TYPE=255/0/0\nE: SUBSYSTEM=usb\n",
                           bus, bus, bus, VENDOR, PRODUCT);
    interface_attributes(out, &camera_model, false);
    return g_string_free(out, FALSE);
}

static void forward(int signal_number)
{
    if (child > 0)
        kill(child, signal_number);
}

static void usage(void)
{
    fprintf(stderr, "usage: emucam [--width W] [--height H] [--stall-frame K]... "
                    "[--short-frame K]... [--timeout-frame K]... [--disconnect-frame K] "
                    "[--frame-time-us U] "
                    "[--bus B] [--address A] [--fx2 LOG] -- PROGRAM [ARGS...]\n");
    exit(2);
}

static int number(const char *text, int low, int high)
{
    char *end;
    long value = strtol(text, &end, 10);
    if (*text == '\0' || *end != '\0' || value < low || value > high)
        usage();
    return (int)value;
}

int main(int argc, char **argv)
{
    int bus = 1, address = 7, first = 0;
    const char *fx2_log = NULL;
    for (int i = 1; i < argc; i++) {
        const char *option = argv[i];
        if (!strcmp(option, "--")) {
            first = i + 1;
            break;
        }
        if (i + 1 >= argc)
            usage();
        const char *value = argv[++i];
        if (!strcmp(option, "--width")) camera.width = number(value, GRID, 4096);
        else if (!strcmp(option, "--height")) camera.height = number(value, GRID, 4096);
        else if (!strcmp(option, "--bus")) bus = number(value, 1, 255);
        else if (!strcmp(option, "--address")) address = number(value, 2, 127);
        else if (!strcmp(option, "--stall-frame") && camera.stalls < MAX_MARKED)
            camera.stall[camera.stalls++] = number(value, 0, 1 << 30);
        else if (!strcmp(option, "--short-frame") && camera.short_count < MAX_MARKED)
            camera.shorts[camera.short_count++] = number(value, 0, 1 << 30);
        else if (!strcmp(option, "--timeout-frame") && camera.timeout_count < MAX_MARKED)
            camera.timeouts[camera.timeout_count++] = number(value, 0, 1 << 30);
        else if (!strcmp(option, "--disconnect-frame"))
            camera.disconnect_at = number(value, 0, 1 << 30);
        else if (!strcmp(option, "--frame-time-us"))
            camera.frame_time_us = number(value, 0, 10000000);
        else if (!strcmp(option, "--fx2") && *value) fx2_log = value;
        else usage();
    }
    if (!first || first >= argc)
        usage();
    if (fx2_log && !(camera.fx2_log = fopen(fx2_log, "w"))) {
        fprintf(stderr, "emucam: cannot write %s: %s\n", fx2_log, strerror(errno));
        return 1;
    }
    camera.frame = malloc((size_t)camera.width * camera.height * 3);
    files = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, file_free);

    UMockdevTestbed *testbed = umockdev_testbed_new();
    UMockdevIoctlBase *handler = umockdev_ioctl_base_new();
    g_signal_connect(handler, "handle-ioctl", G_CALLBACK(handle_ioctl), NULL);
    char node[64];
    snprintf(node, sizeof node, "/dev/bus/usb/%03d/%03d", bus, address);
    snprintf(hub_node, sizeof hub_node, "/dev/bus/usb/%03d/001", bus);
    GError *error = NULL;
    char *text = description(bus, address);
    /* The handler first, so the nodes answer as soon as they exist. */
    if (!umockdev_testbed_attach_ioctl(testbed, node, handler, &error) ||
        !umockdev_testbed_attach_ioctl(testbed, hub_node, handler, &error) ||
        !umockdev_testbed_add_from_string(testbed, text, &error)) {
        fprintf(stderr, "emucam: cannot emulate %s: %s\n", node, error->message);
        return 1;
    }
    g_free(text);
    /* umockdev's preload sends every /sys path to the test bed: give it the
     * kernel's BTF, so that libbpf (NVTXSHIM_KERNEL=on) finds it there too. */
    if (access("/sys/kernel/btf/vmlinux", R_OK) == 0) {
        char *sys = umockdev_testbed_get_sys_dir(testbed);
        char *btf = g_build_filename(sys, "kernel", "btf", NULL);
        char *link = g_build_filename(btf, "vmlinux", NULL);
        if (g_mkdir_with_parents(btf, 0755) == 0 && symlink("/sys/kernel/btf/vmlinux", link) != 0)
            fprintf(stderr, "emucam: cannot link the kernel's BTF into the test bed: %s\n",
                    strerror(errno));
        g_free(link);
        g_free(btf);
        g_free(sys);
    }

    /* umockdev's preload library first, as umockdev-run does; UMOCKDEV_DIR is
     * already set by the testbed. */
    const char *preload = getenv("LD_PRELOAD");
    char *preloads = g_strdup_printf("libumockdev-preload.so.0%s%s", preload && *preload ? ":" : "",
                                     preload && *preload ? preload : "");
    struct sigaction action = { .sa_handler = forward, .sa_flags = SA_RESTART };
    int forwarded[] = { SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2 };
    for (size_t i = 0; i < G_N_ELEMENTS(forwarded); i++)
        sigaction(forwarded[i], &action, NULL);

    child = fork();
    if (child < 0) {
        perror("emucam: fork");
        return 1;
    }
    if (child == 0) {
        setenv("LD_PRELOAD", preloads, 1);
        execvp(argv[first], argv + first);
        fprintf(stderr, "emucam: cannot run %s: %s\n", argv[first], strerror(errno));
        _exit(127);
    }
    g_free(preloads);
    int status;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR)
        continue;
    if (camera.rejected)
        fprintf(stderr, "emucam: %u command(s) broke the protocol and stalled\n", camera.rejected);
    if (camera.fx2_log)
        fclose(camera.fx2_log);
    g_object_unref(handler);
    g_object_unref(testbed);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
