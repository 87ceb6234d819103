/* Raw usbfs, a kind of device file (nvs_device_usbfs, at the end): programs
 * that drive /dev/bus/usb/BBB/DDD with ioctls of their own (fxload, vendor SDKs with a libusb linked in statically), in domain usb
 * and named like the libusb ranges (schema.h). libusb's own ioctls are made
 * inside its traced calls, deeper than the program's level, and pass
 * untraced: a transfer is never drawn twice. */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/ioctl.h>
#include <linux/usbdevice_fs.h>
#include <stdio.h>
#include <string.h>

#include "../emit.h"
#include "device_calls.h"

extern const struct nvs_device_kind nvs_device_usbfs;

/* Name keys: the request (top 3 bits of the 32) and its details; a transfer
 * whose details do not fit gets its name as text, unregistered. */
enum { KEY_BULK = 1, KEY_SUBMIT, KEY_REAP, KEY_FAILED };
#define KEY(request, details) (((uint32_t)(request) << 29) | (details))

static const char *direction(unsigned endpoint)
{
    return (endpoint & 0x80) ? "IN" : "OUT";
}

static const char *type_name(unsigned type)
{
    switch (type) {
    case USBDEVFS_URB_TYPE_ISO: return "ISO";
    case USBDEVFS_URB_TYPE_INTERRUPT: return "INTERRUPT";
    case USBDEVFS_URB_TYPE_CONTROL: return "CONTROL";
    case USBDEVFS_URB_TYPE_BULK: return "BULK";
    default: return "URB";
    }
}

/* ---- URBs in flight: submission to reap ------------------------------------------- */

/* A URB's slot is claimed by its address before the submission (nothing of
 * the program's memory is read before the kernel accepts it) and its range is
 * opened once the submission returned, from the URB the kernel accepted. A
 * reap (or the node's close) on another thread may come in between: it finds
 * the slot still OPENING, marks it ENDED, and the submitter ends the range it
 * opened. */
enum urb_state { URB_OPENING, URB_OPEN, URB_ENDED };

#define URBS 256
static struct {
    _Atomic(void *) urb; /* the program's struct usbdevfs_urb; NULL: free */
    _Atomic int state;
    nvtxRangeId_t range;
    unsigned char slot;
} urbs[URBS];

static int urb_claim(void *urb, unsigned slot)
{
    unsigned start = (unsigned)(((uintptr_t)urb >> 4) % URBS);
    for (unsigned i = 0; i < URBS; i++) {
        unsigned at = (start + i) % URBS;
        void *expected = NULL;
        if (atomic_compare_exchange_strong(&urbs[at].urb, &expected, urb)) {
            urbs[at].slot = (unsigned char)slot;
            atomic_store(&urbs[at].state, URB_OPENING);
            return (int)at;
        }
    }
    nvs_device_count_loss(NVS_DEVICE_LOSS_URBS);
    return -1;
}

static int urb_find(const void *urb)
{
    unsigned start = (unsigned)(((uintptr_t)urb >> 4) % URBS);
    for (unsigned i = 0; i < URBS; i++) {
        unsigned at = (start + i) % URBS;
        if (atomic_load(&urbs[at].urb) == urb)
            return (int)at;
    }
    return -1;
}

/* The URB at AT is done (reaped, or its node closed): its range ends here, or,
 * while the submitter is still opening it, there. */
static void urb_end(int at)
{
    int opening = URB_OPENING;
    if (atomic_compare_exchange_strong(&urbs[at].state, &opening, URB_ENDED))
        return;
    nvtxRangeId_t range = urbs[at].range;
    atomic_store(&urbs[at].urb, NULL);
    nvs_range_end(NVS_DOMAIN_USB, range);
}

/* Whether URB (accepted by the kernel) moves data in: a control transfer's
 * direction is in its setup packet. */
static bool urb_in(const struct usbdevfs_urb *urb)
{
    if (urb->type == USBDEVFS_URB_TYPE_CONTROL && urb->buffer && urb->buffer_length >= 8)
        return (*(const unsigned char *)urb->buffer & 0x80) != 0;
    return (urb->endpoint & 0x80) != 0;
}

/* URB came back from a reap (the kernel handed it back: it is the program's
 * to read): its range ends; an IN transfer's completion is a usb.in frame
 * marker, as libusb's are. */
static void reaped(const struct usbdevfs_urb *returned)
{
    int at = urb_find(returned);
    if (at < 0)
        return;
    struct usbdevfs_urb copy; /* the program's, read where it sits at any alignment */
    memcpy(&copy, returned, sizeof copy);
    const struct usbdevfs_urb *urb = &copy;
    unsigned endpoint = urb->endpoint;
    bool in = urb_in(urb);
    urb_end(at);
    if (urb->status != 0 && urb->status != -ENOENT && urb->status != -ECONNRESET) {
        char what[NVS_CALL_TEXT_MAX];
        snprintf(what, sizeof what, "USBDEVFS_REAPURB ep=0x%02x %s %s %d/%dB", endpoint,
                 type_name(urb->type), direction(endpoint), urb->actual_length, urb->buffer_length);
        struct nvs_device device = { .kind = &nvs_device_usbfs, .domain = NVS_DOMAIN_USB };
        nvs_device_warn(&device, what, -urb->status);
    }
    if (in && urb->type != USBDEVFS_URB_TYPE_CONTROL && urb->status == 0)
        nvs_call_completed(NVS_HOOK_ID(ioctl), NVS_FRAME_USB_IN, (int)endpoint);
}

/* The node in SLOT was closed (its last descriptor went): its URBs' ranges end. */
static void usbfs_closed(unsigned slot)
{
    for (int at = 0; at < URBS; at++)
        if (atomic_load(&urbs[at].urb) && urbs[at].slot == slot)
            urb_end(at);
}

/* ---- the requests ----------------------------------------------------------------- */

/* A synchronous transfer's range, drawn once it returned: its endpoint and
 * size lie in the program's struct, read only once the kernel accepted it
 * (DETAILS, named under KEY, or as text where KEY is 0). One that failed is
 * named after the node alone (the struct may be what the kernel refused) and
 * has a red mark. MARKER: the frame marker it is, for ENDPOINT. */
struct transfer {
    const char *request;
    char details[96];
    uint32_t key;
    enum nvs_frame_marker marker;
    unsigned endpoint;
};

static void transfer_done(struct nvs_device *device, const struct transfer *transfer, int result,
                          int error, uint64_t began)
{
    char text[NVS_CALL_TEXT_MAX];
    struct nvs_attributes range = NVS_ATTRIBUTES_PAYLOAD(
        NVS_DOMAIN_USB, NVS_USB_TRANSFER, NVS_COLOR_USB, result > 0 ? (uint64_t)result : 0);
    enum nvs_frame_marker marker = NVS_FRAME_OFF;
    if (result >= 0 && transfer->key) {
        nvs_attributes_name(&range,
                            nvs_device_name(device, NVS_HOOK_ID(ioctl), transfer->key, "%s %s",
                                            transfer->request, transfer->details));
        marker = transfer->marker;
    } else if (result >= 0) {
        snprintf(text, sizeof text, "%s %s", transfer->request, transfer->details);
        nvs_attributes_name(&range, (struct nvs_name){ NULL, text });
        marker = transfer->marker;
    } else {
        bool bulk = !strcmp(transfer->request, "USBDEVFS_BULK");
        nvs_attributes_name(&range,
                            nvs_device_name(device, NVS_HOOK_ID(ioctl), KEY(KEY_FAILED, bulk),
                                            "%s %s", transfer->request, device->path));
        snprintf(text, sizeof text, "%s %s", transfer->request, device->path);
        nvs_device_warn(device, text, error);
    }
    nvs_call_drawn(NVS_HOOK_ID(ioctl), marker,
                   marker != NVS_FRAME_OFF ? (int)transfer->endpoint : -1, &range, began);
}

static int bulk(nvs_ioctl_fn real, struct nvs_device *device, int fd, unsigned long request,
                void *program_argument)
{
    uint64_t began = nvs_now_ns();
    int result = real(fd, request, program_argument);
    int saved_errno = errno;
    struct transfer transfer = { .request = "USBDEVFS_BULK" };
    struct usbdevfs_bulktransfer copy, *argument = &copy;
    if (result >= 0) {
        memcpy(&copy, program_argument, sizeof copy); /* accepted; at any alignment */
        unsigned endpoint = argument->ep & 0xff;
        snprintf(transfer.details, sizeof transfer.details, "ep=0x%02x %s %uB", endpoint,
                 direction(endpoint), argument->len);
        if (argument->len < (1u << 21))
            transfer.key = KEY(KEY_BULK, (endpoint << 21) | argument->len);
        transfer.marker = (endpoint & 0x80) ? NVS_FRAME_USB_IN : NVS_FRAME_USB_OUT;
        transfer.endpoint = endpoint;
    }
    transfer_done(device, &transfer, result, saved_errno, began);
    errno = saved_errno;
    return result;
}

/* Control transfers are few (set-up, firmware downloads) and their fields
 * many: the name goes as text. */
static int control(nvs_ioctl_fn real, struct nvs_device *device, int fd, unsigned long request,
                   void *program_argument)
{
    uint64_t began = nvs_now_ns();
    int result = real(fd, request, program_argument);
    int saved_errno = errno;
    struct transfer transfer = { .request = "USBDEVFS_CONTROL", .marker = NVS_FRAME_OFF };
    struct usbdevfs_ctrltransfer copy, *argument = &copy;
    if (result >= 0) {
        memcpy(&copy, program_argument, sizeof copy); /* accepted; at any alignment */
        snprintf(transfer.details, sizeof transfer.details,
                 "type=0x%02x req=0x%02x val=0x%04x %s %uB", argument->bRequestType,
                 argument->bRequest, argument->wValue, direction(argument->bRequestType),
                 argument->wLength);
    }
    transfer_done(device, &transfer, result, saved_errno, began);
    errno = saved_errno;
    return result;
}

static int submit(nvs_ioctl_fn real, struct nvs_device *device, unsigned slot, int fd,
                  unsigned long request, struct usbdevfs_urb *program_urb)
{
    struct usbdevfs_urb *urb = program_urb;
    int at = urb_claim(urb, slot);
    if (at < 0)
        return real(fd, request, urb);
    int result = real(fd, request, urb);
    int saved_errno = errno;
    if (result < 0) {
        atomic_store(&urbs[at].urb, NULL);
        char what[NVS_CALL_TEXT_MAX];
        snprintf(what, sizeof what, "USBDEVFS_SUBMITURB %s", device->path);
        nvs_device_warn(device, what, saved_errno);
        errno = saved_errno;
        return result;
    }
    /* Accepted: the URB is the kernel's until it is reaped, and read now (copied:
     * the program's may sit at any alignment). */
    struct usbdevfs_urb copy;
    memcpy(&copy, program_urb, sizeof copy);
    urb = &copy;
    unsigned endpoint = urb->endpoint;
    bool in = urb_in(urb);
    int length = urb->buffer_length;
    char text[NVS_CALL_TEXT_MAX];
    struct nvs_attributes range = NVS_ATTRIBUTES_PAYLOAD(
        NVS_DOMAIN_USB, NVS_USB_TRANSFER, NVS_COLOR_USB, (uint64_t)(length > 0 ? length : 0));
    if (length >= 0 && length < (1 << 18)) {
        nvs_attributes_name(&range,
                            nvs_device_name(device, NVS_HOOK_ID(ioctl),
                                            KEY(KEY_SUBMIT,
                                                ((urb->type & 3u) << 27) | (in ? 1u << 26 : 0) |
                                                    (endpoint << 18) | (unsigned)length),
                                            "USBDEVFS_SUBMITURB ep=0x%02x %s %s %dB", endpoint,
                                            type_name(urb->type), in ? "IN" : "OUT", length));
    } else {
        snprintf(text, sizeof text, "USBDEVFS_SUBMITURB ep=0x%02x %s %s %dB", endpoint,
                 type_name(urb->type), in ? "IN" : "OUT", length);
        nvs_attributes_name(&range, (struct nvs_name){ NULL, text });
    }
    urbs[at].range = nvs_call_open_async(
        NVS_HOOK_ID(ioctl),
        !in && urb->type != USBDEVFS_URB_TYPE_CONTROL ? NVS_FRAME_USB_OUT : NVS_FRAME_OFF,
        (int)endpoint, &range);
    int opening = URB_OPENING;
    if (!atomic_compare_exchange_strong(&urbs[at].state, &opening, URB_OPEN)) {
        /* Reaped (or its node closed) on another thread meanwhile. */
        nvtxRangeId_t started = urbs[at].range;
        atomic_store(&urbs[at].urb, NULL);
        nvs_range_end(NVS_DOMAIN_USB, started);
    }
    errno = saved_errno;
    return result;
}

/* A blocking reap is a wait of its own; a non-blocking one only ends the
 * range of what it returns. */
static int reap(nvs_ioctl_fn real, struct nvs_device *device, int fd, unsigned long request,
                void **urb, bool blocking)
{
    if (blocking) {
        struct nvs_attributes range = NVS_ATTRIBUTES(NVS_DOMAIN_USB, NVS_USB_EVENTS,
                                                     NVS_COLOR_USB_EVENTS);
        nvs_attributes_name(&range,
                            nvs_device_name(device, NVS_HOOK_ID(ioctl), KEY(KEY_REAP, 0),
                                            "USBDEVFS_REAPURB %s", device->path));
        nvs_call_open(NVS_HOOK_ID(ioctl), NVS_FRAME_OFF, -1, &range);
    }
    int result = real(fd, request, urb);
    int saved_errno = errno;
    if (result == 0 && *urb)
        reaped(*urb);
    errno = saved_errno;
    if (blocking)
        nvs_range_pop(NVS_DOMAIN_USB);
    return result;
}

static int usbfs_ioctl(nvs_ioctl_fn real, struct nvs_device *device, unsigned slot, int fd,
                       unsigned long request, void *argument)
{
    unsigned command = (unsigned)request;
    bool known = argument &&
        (command == (unsigned)USBDEVFS_BULK || command == (unsigned)USBDEVFS_CONTROL ||
         command == (unsigned)USBDEVFS_SUBMITURB || command == (unsigned)USBDEVFS_REAPURB ||
         command == (unsigned)USBDEVFS_REAPURBNDELAY);
    if (!known || !nvs_call_enter(device->group))
        return real(fd, request, argument);
    int result;
    if (command == (unsigned)USBDEVFS_BULK)
        result = bulk(real, device, fd, request, argument);
    else if (command == (unsigned)USBDEVFS_CONTROL)
        result = control(real, device, fd, request, argument);
    else if (command == (unsigned)USBDEVFS_SUBMITURB)
        result = submit(real, device, slot, fd, request, argument);
    else
        result = reap(real, device, fd, request, argument, command == (unsigned)USBDEVFS_REAPURB);
    nvs_call_leave();
    return result;
}

/* Its reads and writes pass untraced: a usbfs node's read is its descriptors. */
const struct nvs_device_kind nvs_device_usbfs = {
    .name = "usbfs",
    .majors = { 189 },
    .domain = NVS_DOMAIN_USB,
    .group = NVS_HOOKS_USB,
    .in_marker = NVS_FRAME_OFF,
    .out_marker = NVS_FRAME_OFF,
    .wait_category = NVS_USB_EVENTS,
    .warning_category = NVS_USB_WARNING,
    .ioctl = usbfs_ioctl,
    .last_close = usbfs_closed,
};
