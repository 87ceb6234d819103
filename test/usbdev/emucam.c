/* emucam: the emulated camera + actuator, live.
 *
 *     emucam [--width W] [--height H] [--stall-frame K]... [--short-frame K]...
 *            [--timeout-frame K]... [--disconnect-frame K] [--bus B] [--address A]
 *            -- PROGRAM [ARGS...]
 *
 * Runs PROGRAM with a USB device 1209:0001 that the real libusb (and pyusb)
 * can open, through umockdev's preload library and an ioctl handler in this
 * process. Unlike a umockdev replay file, which serves one URB at a time in a
 * fixed order, the handler implements the device: any number of URBs may be
 * in flight (a streaming camera's queue), each open file of the device node
 * has its own (as usbfs keeps them), cancellation works, and the run may have
 * any number of frames. The protocol, per frame i, is in README.md beside
 * this file; commands that break it stall (EPIPE) as a real device would, and
 * are counted in the line printed at exit when there were any. Faults can be
 * put on given frames: a stall, a short frame, a frame the camera never sends
 * (the URB stays pending until the program's timeout discards it), and a
 * disconnect, after which every request fails as usbfs fails it (ENODEV).
 *
 * The exit status is PROGRAM's (128 + N when signal N ended it). Signals sent
 * to emucam (INT, TERM, HUP, USR1, USR2) are forwarded to PROGRAM. */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/ioctl.h>
#include <linux/usbdevice_fs.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <umockdev.h>
#include <unistd.h>

#define VENDOR 0x1209
#define PRODUCT 0x0001
#define GRID 4
#define MAX_MARKED 64

struct camera {
    int width, height;
    int stall[MAX_MARKED], stalls, shorts[MAX_MARKED], short_count;
    int timeouts[MAX_MARKED], timeout_count;
    long disconnect_at;       /* the frame whose request finds the device gone; -1: never */
    bool gone;                /* unplugged: every request but a reap fails with ENODEV */
    unsigned next_frame;      /* index of the next frame bulk IN delivers */
    unsigned last_frame;      /* index of the frame delivered last (status reports it) */
    unsigned commands;        /* control commands accepted */
    unsigned last_command;    /* frame index of the last accepted control command */
    unsigned rejected;        /* commands that broke the protocol */
    unsigned char *frame;     /* scratch, one frame */
};

/* One open file of the device node: usbfs keeps URBs per file, so a reap returns
 * only the URBs submitted through that file. umockdev's preload connects one
 * socket per open(), one UMockdevIoctlClient here. */
struct file {
    GQueue done;              /* URBs completed, not yet reaped (UMockdevIoctlData *) */
    GQueue pending;           /* URBs the device does not answer (a --timeout-frame) */
};

static struct camera camera = { .width = 64, .height = 48, .disconnect_at = -1 };
static GHashTable *files;     /* UMockdevIoctlClient * -> struct file *, in the handler's thread */
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

static int type_of(unsigned char endpoint)
{
    switch (endpoint) {
    case 0x00: return USBDEVFS_URB_TYPE_CONTROL;
    case 0x81: case 0x02: return USBDEVFS_URB_TYPE_BULK;
    case 0x83: case 0x04: return USBDEVFS_URB_TYPE_INTERRUPT;
    default: return -1;
    }
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

/* The device's side of one URB: fills in status, actual_length and IN data.
 * Returns false when the device does not answer it (it stays pending). */
static bool serve(struct usbdevfs_urb *urb, unsigned char *buffer)
{
    urb->status = 0;
    urb->actual_length = 0;
    if (urb->type == USBDEVFS_URB_TYPE_CONTROL) {
        /* buffer: the 8-byte setup packet, then wLength bytes. wValue is the frame
         * index modulo 65536: a long run goes on past frame 65535. */
        unsigned value = buffer[2] | buffer[3] << 8, index = buffer[4] | buffer[5] << 8;
        unsigned frame = camera.commands;
        if (urb->buffer_length < 8 || buffer[0] != 0x40 || buffer[1] != 0x01 ||
            value != (frame & 0xffff) || index != (unsigned)action_after((long)frame - 1)) {
            urb->status = -EPIPE;
            camera.rejected++;
            return true;
        }
        camera.last_command = frame;
        camera.commands++;
        return true;
    }
    switch (urb->endpoint) {
    case 0x02:
    case 0x04: {
        /* An actuator command: bulk or interrupt OUT. */
        unsigned char expected[8] = { 0xA5,
                                      (unsigned char)action_after((long)camera.last_command - 1),
                                      (unsigned char)(camera.last_command & 0xff),
                                      (unsigned char)(camera.last_command >> 8), 0, 0, 0, 0x5A };
        if (urb->buffer_length != 8 || !camera.commands || memcmp(buffer, expected, 8)) {
            urb->status = -EPIPE;
            camera.rejected++;
            return true;
        }
        urb->actual_length = 8;
        return true;
    }
    case 0x81: {
        unsigned index = camera.next_frame++;
        int bytes = camera.width * camera.height * 3;
        camera.last_frame = index;
        if (camera.disconnect_at >= 0 && (long)index >= camera.disconnect_at) {
            /* Unplugged while this frame was asked for. */
            unplug();
            urb->status = -ESHUTDOWN;
            return true;
        }
        if (marked(camera.timeouts, camera.timeout_count, index))
            return false;
        if (marked(camera.stall, camera.stalls, index)) {
            urb->status = -EPIPE;
            return true;
        }
        render(index, camera.frame, camera.width, camera.height);
        if (marked(camera.shorts, camera.short_count, index))
            bytes /= 2;
        if (bytes > urb->buffer_length) {
            bytes = urb->buffer_length;
            urb->status = -EOVERFLOW;
        }
        memcpy(buffer, camera.frame, (size_t)bytes);
        urb->actual_length = bytes;
        return true;
    }
    case 0x83: {
        unsigned char status[8] = { (unsigned char)(camera.last_frame & 0xff),
                                    (unsigned char)(camera.last_frame >> 8),
                                    (unsigned char)action_after(camera.last_frame), 0, 0, 0,
                                    0, 0 };
        int bytes = urb->buffer_length < 8 ? urb->buffer_length : 8;
        memcpy(buffer, status, (size_t)bytes);
        urb->actual_length = bytes;
        return true;
    }
    }
    return true;
}

static gboolean handle_ioctl(UMockdevIoctlBase *base, UMockdevIoctlClient *client, gpointer unused)
{
    (void)base;
    (void)unused;
    UMockdevIoctlData *arg = umockdev_ioctl_client_get_arg(client);
    gulong request = umockdev_ioctl_client_get_request(client);
    if (camera.gone && request != USBDEVFS_REAPURB && request != USBDEVFS_REAPURBNDELAY) {
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
    case USBDEVFS_SETCONFIGURATION:
    case USBDEVFS_CLAIMINTERFACE:
    case USBDEVFS_RELEASEINTERFACE:
    case USBDEVFS_SETINTERFACE:
    case USBDEVFS_CLEAR_HALT:
    case USBDEVFS_RESET:
    case USBDEVFS_RESETEP:
        umockdev_ioctl_client_complete(client, 0, 0);
        return TRUE;
    case USBDEVFS_GETDRIVER:
    case USBDEVFS_IOCTL:
        /* No kernel driver is bound to the interface. */
        umockdev_ioctl_client_complete(client, -1, ENODATA);
        return TRUE;
    case USBDEVFS_SUBMITURB: {
        UMockdevIoctlData *urb_data =
            umockdev_ioctl_data_resolve(arg, 0, sizeof(struct usbdevfs_urb), NULL);
        if (!urb_data)
            return FALSE;
        struct usbdevfs_urb *urb = (struct usbdevfs_urb *)urb_data->data;
        if (urb->type != type_of(urb->endpoint)) {
            /* The kernel refuses a URB whose type is not its endpoint's. */
            g_object_unref(urb_data);
            umockdev_ioctl_client_complete(client, -1, EINVAL);
            return TRUE;
        }
        UMockdevIoctlData *buffer = umockdev_ioctl_data_resolve(
            urb_data, G_STRUCT_OFFSET(struct usbdevfs_urb, buffer), (gsize)urb->buffer_length, NULL);
        if (!buffer) {
            g_object_unref(urb_data);
            return FALSE;
        }
        /* The device is ready: the URB completes now and waits to be reaped
         * through this file, unless this is a frame the camera never sends. */
        bool answered = serve(urb, buffer->data);
        g_object_unref(buffer);
        struct file *file = file_of(client);
        g_queue_push_tail(answered ? &file->done : &file->pending, urb_data);
        umockdev_ioctl_client_complete(client, 0, 0);
        return TRUE;
    }
    case USBDEVFS_REAPURB:
    case USBDEVFS_REAPURBNDELAY: {
        struct file *file = file_of(client);
        UMockdevIoctlData *urb_data = g_queue_pop_head(&file->done);
        if (!urb_data) {
            umockdev_ioctl_client_complete(client, -1, camera.gone ? ENODEV : EAGAIN);
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
    case USBDEVFS_DISCARDURB: {
        /* A pending URB of this file (a frame the camera never sends: the
         * program's timeout cancels it) is unlinked as usbfs does, -ECONNRESET,
         * and waits to be reaped. Every other URB has completed by the time it
         * could be cancelled, or is another file's: the kernel answers EINVAL,
         * and a completed one is reaped as it completed. */
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
    default:
        return FALSE;
    }
}

static char *description(int bus, int address)
{
    static const unsigned char device[18] = { 18, 1, 0x00, 0x02, 0xFF, 0, 0, 64,
                                              VENDOR & 0xff, VENDOR >> 8, PRODUCT & 0xff,
                                              PRODUCT >> 8, 0x00, 0x01, 1, 2, 3, 1 };
    static const unsigned char config[] = {
        9, 2, 46, 0, 1, 1, 0, 0x80, 50,             /* configuration, 46 bytes in all */
        9, 4, 0, 0, 4, 0xFF, 0, 0, 0,               /* interface 0, vendor class, 4 endpoints */
        7, 5, 0x81, 2, 0x00, 0x02, 0,               /* bulk IN 512: frames */
        7, 5, 0x02, 2, 0x00, 0x02, 0,               /* bulk OUT 512: commands */
        7, 5, 0x83, 3, 8, 0, 4,                     /* interrupt IN 8: status */
        7, 5, 0x04, 3, 8, 0, 4,                     /* interrupt OUT 8 */
    };
    GString *hex = g_string_new(NULL);
    for (size_t i = 0; i < sizeof device; i++) g_string_append_printf(hex, "%02X", device[i]);
    for (size_t i = 0; i < sizeof config; i++) g_string_append_printf(hex, "%02X", config[i]);
    char *text = g_strdup_printf(
        "P: /devices/pci0000:00/0000:00:14.0/usb%d/%d-1\n"
        "N: bus/usb/%03d/%03d=%s\n"
        "E: BUSNUM=%03d\nE: DEVNAME=/dev/bus/usb/%03d/%03d\nE: DEVNUM=%03d\n"
        "E: DEVTYPE=usb_device\nE: DRIVER=usb\nE: ID_VENDOR_ID=%04x\nE: ID_MODEL_ID=%04x\n"
        "E: MAJOR=189\nE: MINOR=%d\nE: PRODUCT=%x/%x/100\nE: SUBSYSTEM=usb\n"
        "A: bConfigurationValue=1\nA: bDeviceClass=ff\nA: bNumConfigurations=1\n"
        "A: bNumInterfaces= 1\nA: busnum=%d\nA: devnum=%d\nA: devpath=1\n"
        "A: idProduct=%04x\nA: idVendor=%04x\nA: manufacturer=nvtxshim\n"
        "A: product=emulated camera + actuator\nA: serial=NVS0001\nA: speed=480\n"
        "A: version= 2.00\nH: descriptors=%s\n",
        bus, bus, bus, address, hex->str, bus, bus, address, address, VENDOR, PRODUCT,
        (bus - 1) * 128 + address - 1, VENDOR, PRODUCT, bus, address, PRODUCT, VENDOR, hex->str);
    g_string_free(hex, TRUE);
    return text;
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
                    "[--bus B] [--address A] -- PROGRAM [ARGS...]\n");
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
        else if (!strcmp(option, "--address")) address = number(value, 1, 127);
        else if (!strcmp(option, "--stall-frame") && camera.stalls < MAX_MARKED)
            camera.stall[camera.stalls++] = number(value, 0, 1 << 30);
        else if (!strcmp(option, "--short-frame") && camera.short_count < MAX_MARKED)
            camera.shorts[camera.short_count++] = number(value, 0, 1 << 30);
        else if (!strcmp(option, "--timeout-frame") && camera.timeout_count < MAX_MARKED)
            camera.timeouts[camera.timeout_count++] = number(value, 0, 1 << 30);
        else if (!strcmp(option, "--disconnect-frame"))
            camera.disconnect_at = number(value, 0, 1 << 30);
        else usage();
    }
    if (!first || first >= argc)
        usage();
    camera.frame = malloc((size_t)camera.width * camera.height * 3);
    files = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, file_free);

    UMockdevTestbed *testbed = umockdev_testbed_new();
    UMockdevIoctlBase *handler = umockdev_ioctl_base_new();
    g_signal_connect(handler, "handle-ioctl", G_CALLBACK(handle_ioctl), NULL);
    char node[64];
    snprintf(node, sizeof node, "/dev/bus/usb/%03d/%03d", bus, address);
    GError *error = NULL;
    char *text = description(bus, address);
    /* The handler first, so the node answers as soon as it exists. */
    if (!umockdev_testbed_attach_ioctl(testbed, node, handler, &error) ||
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
    g_object_unref(handler);
    g_object_unref(testbed);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
