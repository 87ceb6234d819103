/* Raw usbfs: programs that drive /dev/bus/usb/BBB/DDD with ioctls of their
 * own (fxload, vendor SDKs with a libusb linked in statically), in domain usb
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

/* Name keys: the request (top 3 bits of the 32) and its details; a transfer
 * whose details do not fit gets its name as text, unregistered. */
enum { KEY_BULK = 1, KEY_SUBMIT, KEY_REAP };
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

#define URBS 256
static struct {
    _Atomic(void *) urb;            /* the program's struct usbdevfs_urb; NULL: free */
    nvtxRangeId_t range;
    unsigned char slot;
    unsigned char endpoint;
    bool in;
} urbs[URBS];

static int urb_claim(void *urb)
{
    unsigned start = (unsigned)(((uintptr_t)urb >> 4) % URBS);
    for (unsigned i = 0; i < URBS; i++) {
        unsigned at = (start + i) % URBS;
        void *expected = NULL;
        if (atomic_compare_exchange_strong(&urbs[at].urb, &expected, urb))
            return (int)at;
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

/* URB came back from a reap: its range ends; an IN transfer's completion is
 * a usb.in frame marker, as libusb's are. */
static void reaped(const struct usbdevfs_urb *urb)
{
    int at = urb_find(urb);
    if (at < 0)
        return;
    nvtxRangeId_t range = urbs[at].range;
    unsigned endpoint = urbs[at].endpoint;
    bool in = urbs[at].in;
    atomic_store(&urbs[at].urb, NULL);
    nvs_range_end(NVS_DOMAIN_USB, range);
    if (urb->status != 0 && urb->status != -ENOENT && urb->status != -ECONNRESET) {
        char what[NVS_CALL_TEXT_MAX];
        snprintf(what, sizeof what, "USBDEVFS_REAPURB ep=0x%02x %s %s %d/%dB", endpoint,
                 type_name(urb->type), direction(endpoint), urb->actual_length, urb->buffer_length);
        struct nvs_device device = { .domain = NVS_DOMAIN_USB };
        nvs_device_warn(&device, what, -urb->status);
    }
    if (in && urb->status == 0)
        nvs_call_completed(NVS_HOOK_ID(ioctl), NVS_FRAME_USB_IN, (int)endpoint);
}

void nvs_usbfs_closed(unsigned slot)
{
    for (int at = 0; at < URBS; at++) {
        if (atomic_load(&urbs[at].urb) && urbs[at].slot == slot) {
            nvtxRangeId_t range = urbs[at].range;
            atomic_store(&urbs[at].urb, NULL);
            nvs_range_end(NVS_DOMAIN_USB, range);
        }
    }
}

/* ---- the requests ----------------------------------------------------------------- */

static int bulk(nvs_ioctl_fn real, struct nvs_device *device, int fd, unsigned long request,
                struct usbdevfs_bulktransfer *transfer)
{
    unsigned endpoint = transfer->ep & 0xff;
    char text[NVS_CALL_TEXT_MAX];
    struct nvs_attributes range = {
        .domain = NVS_DOMAIN_USB, .category = NVS_USB_TRANSFER, .color = NVS_COLOR_USB,
        .payload = transfer->len, .has_payload = true,
    };
    if (transfer->len < (1u << 21)) {
        range.name = nvs_device_name(device, NVS_HOOK_ID(ioctl),
                                     KEY(KEY_BULK, (endpoint << 21) | transfer->len),
                                     "USBDEVFS_BULK ep=0x%02x %s %uB", endpoint,
                                     direction(endpoint), transfer->len);
    } else {
        snprintf(text, sizeof text, "USBDEVFS_BULK ep=0x%02x %s %uB", endpoint,
                 direction(endpoint), transfer->len);
        range.name.text = text;
    }
    unsigned length = transfer->len;
    nvs_call_open(NVS_HOOK_ID(ioctl), (endpoint & 0x80) ? NVS_FRAME_USB_IN : NVS_FRAME_USB_OUT,
                  (int)endpoint, &range);
    int result = real(fd, request, transfer);
    int saved_errno = errno;
    if (result >= 0 && (unsigned)result != length)
        nvs_range_set_payload(NVS_DOMAIN_USB, (uint64_t)result);
    if (result < 0) {
        char what[NVS_CALL_TEXT_MAX];
        snprintf(what, sizeof what, "USBDEVFS_BULK ep=0x%02x %s %uB", endpoint,
                 direction(endpoint), length);
        nvs_device_warn(device, what, saved_errno);
    }
    errno = saved_errno;
    nvs_call_close(NVS_DOMAIN_USB);
    return result;
}

static int control(nvs_ioctl_fn real, struct nvs_device *device, int fd, unsigned long request,
                   struct usbdevfs_ctrltransfer *transfer)
{
    unsigned type = transfer->bRequestType, code = transfer->bRequest;
    unsigned value = transfer->wValue, length = transfer->wLength;
    /* Control transfers are few (set-up, firmware downloads) and their
     * fields many: the name goes as text. */
    char text[NVS_CALL_TEXT_MAX];
    snprintf(text, sizeof text, "USBDEVFS_CONTROL type=0x%02x req=0x%02x val=0x%04x %s %uB", type,
             code, value, direction(type), length);
    struct nvs_attributes range = {
        .domain = NVS_DOMAIN_USB, .category = NVS_USB_TRANSFER, .color = NVS_COLOR_USB,
        .payload = length, .has_payload = true, .name = { NULL, text },
    };
    nvs_call_open(NVS_HOOK_ID(ioctl), NVS_FRAME_OFF, -1, &range);
    int result = real(fd, request, transfer);
    int saved_errno = errno;
    if (result >= 0 && (unsigned)result != length)
        nvs_range_set_payload(NVS_DOMAIN_USB, (uint64_t)result);
    if (result < 0) {
        nvs_device_warn(device, text, saved_errno);
    }
    errno = saved_errno;
    nvs_call_close(NVS_DOMAIN_USB);
    return result;
}

static int submit(nvs_ioctl_fn real, struct nvs_device *device, unsigned slot, int fd,
                  unsigned long request, struct usbdevfs_urb *urb)
{
    unsigned endpoint = urb->endpoint;
    bool in = (endpoint & 0x80) != 0;
    if (urb->type == USBDEVFS_URB_TYPE_CONTROL && urb->buffer && urb->buffer_length >= 8)
        in = (*(const unsigned char *)urb->buffer & 0x80) != 0;
    int at = urb_claim(urb);
    if (at < 0) {
        nvs_call_leave();
        return real(fd, request, urb);
    }
    int length = urb->buffer_length;
    char text[NVS_CALL_TEXT_MAX];
    struct nvs_attributes range = {
        .domain = NVS_DOMAIN_USB, .category = NVS_USB_TRANSFER, .color = NVS_COLOR_USB,
        .payload = (uint64_t)(length > 0 ? length : 0), .has_payload = true,
    };
    if (length >= 0 && length < (1 << 18)) {
        range.name = nvs_device_name(device, NVS_HOOK_ID(ioctl),
                                     KEY(KEY_SUBMIT, ((urb->type & 3u) << 27) | (in ? 1u << 26 : 0) |
                                                         (endpoint << 18) | (unsigned)length),
                                     "USBDEVFS_SUBMITURB ep=0x%02x %s %s %dB", endpoint,
                                     type_name(urb->type), in ? "IN" : "OUT", length);
    } else {
        snprintf(text, sizeof text, "USBDEVFS_SUBMITURB ep=0x%02x %s %s %dB", endpoint,
                 type_name(urb->type), in ? "IN" : "OUT", length);
        range.name.text = text;
    }
    urbs[at].slot = (unsigned char)slot;
    urbs[at].endpoint = (unsigned char)endpoint;
    urbs[at].in = in && urb->type != USBDEVFS_URB_TYPE_CONTROL;
    /* Opened before the submission: another thread may reap it at once. */
    urbs[at].range = nvs_call_open_async(NVS_HOOK_ID(ioctl),
                                         !in && urb->type != USBDEVFS_URB_TYPE_CONTROL
                                             ? NVS_FRAME_USB_OUT : NVS_FRAME_OFF,
                                         (int)endpoint, &range);
    int result = real(fd, request, urb);
    int saved_errno = errno;
    if (result < 0) {
        nvtxRangeId_t started = urbs[at].range;
        atomic_store(&urbs[at].urb, NULL);
        nvs_range_end(NVS_DOMAIN_USB, started);
        char what[NVS_CALL_TEXT_MAX];
        snprintf(what, sizeof what, "USBDEVFS_SUBMITURB ep=0x%02x %s %s %dB", endpoint,
                 type_name(urb->type), in ? "IN" : "OUT", length);
        nvs_device_warn(device, what, saved_errno);
    }
    nvs_call_leave();
    errno = saved_errno;
    return result;
}

/* A blocking reap is a wait of its own; a non-blocking one only ends the
 * range of what it returns. */
static int reap(nvs_ioctl_fn real, struct nvs_device *device, int fd, unsigned long request,
                void **urb, bool blocking)
{
    if (blocking) {
        struct nvs_attributes range = {
            .domain = NVS_DOMAIN_USB, .category = NVS_USB_EVENTS, .color = NVS_COLOR_USB_EVENTS,
            .name = nvs_device_name(device, NVS_HOOK_ID(ioctl), KEY(KEY_REAP, 0),
                                    "USBDEVFS_REAPURB %s", device->path),
        };
        nvs_call_open(NVS_HOOK_ID(ioctl), NVS_FRAME_OFF, -1, &range);
    }
    int result = real(fd, request, urb);
    int saved_errno = errno;
    if (result == 0 && urb && *urb)
        reaped(*urb);
    errno = saved_errno;
    if (blocking)
        nvs_call_close(NVS_DOMAIN_USB);
    else
        nvs_call_leave();
    return result;
}

int nvs_usbfs_ioctl(nvs_ioctl_fn real, struct nvs_device *device, unsigned slot, int fd,
                    unsigned long request, void *argument)
{
    unsigned command = (unsigned)request;
    bool known = argument && (command == (unsigned)USBDEVFS_BULK ||
                              command == (unsigned)USBDEVFS_CONTROL ||
                              command == (unsigned)USBDEVFS_SUBMITURB ||
                              command == (unsigned)USBDEVFS_REAPURB ||
                              command == (unsigned)USBDEVFS_REAPURBNDELAY);
    if (!known || !nvs_call_enter(device->group))
        return real(fd, request, argument);
    if (command == (unsigned)USBDEVFS_BULK)
        return bulk(real, device, fd, request, argument);
    if (command == (unsigned)USBDEVFS_CONTROL)
        return control(real, device, fd, request, argument);
    if (command == (unsigned)USBDEVFS_SUBMITURB)
        return submit(real, device, slot, fd, request, argument);
    return reap(real, device, fd, request, argument, command == (unsigned)USBDEVFS_REAPURB);
}
