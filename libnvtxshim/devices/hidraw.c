/* hidraw nodes, a kind of device file (nvs_device_hidraw, at the end): reads
 * and writes as a serial port's, and the ioctls that move data, in domain hid. Feature, input and output
 * reports are a device's data as much as its reads and writes are (an
 * instrument may speak only feature reports); the report descriptor, its
 * size, the raw info and the name are what a client such as fido2-token asks
 * first. Each is named from its request alone (the size is in the request
 * number), so nothing of the program's memory is read before the kernel
 * accepted it; the payload is the bytes the call moved. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/hidraw.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "../emit.h"
#include "device_calls.h"

enum hid_move { HID_QUERY, HID_IN, HID_OUT };

struct hid_request {
    unsigned number; /* _IOC_NR */
    const char *name;
    enum hid_move move;
};

static const struct hid_request requests[] = {
    { 0x01, "HIDIOCGRDESCSIZE", HID_QUERY }, { 0x02, "HIDIOCGRDESC", HID_QUERY },
    { 0x03, "HIDIOCGRAWINFO", HID_QUERY },   { 0x04, "HIDIOCGRAWNAME", HID_QUERY },
    { 0x05, "HIDIOCGRAWPHYS", HID_QUERY },   { 0x06, "HIDIOCSFEATURE", HID_OUT },
    { 0x07, "HIDIOCGFEATURE", HID_IN },      { 0x08, "HIDIOCGRAWUNIQ", HID_QUERY },
    { 0x09, "HIDIOCSINPUT", HID_OUT },       { 0x0A, "HIDIOCGINPUT", HID_IN },
    { 0x0B, "HIDIOCSOUTPUT", HID_OUT },      { 0x0C, "HIDIOCGOUTPUT", HID_IN },
};

static const struct hid_request *hid_request(unsigned long request)
{
    if (_IOC_TYPE(request) != 'H')
        return NULL;
    for (size_t i = 0; i < sizeof requests / sizeof requests[0]; i++)
        if (requests[i].number == _IOC_NR(request))
            return &requests[i];
    return NULL;
}

/* What the call moved, from its result and, for the queries whose result is
 * 0, the structure the kernel filled (read once it accepted it). */
static uint64_t moved(const struct hid_request *known, const void *argument, int result)
{
    if (result < 0)
        return 0;
    switch (known->number) {
    case 0x01: return sizeof(int);
    case 0x02: { /* copied out: the program's buffer may sit anywhere */
        uint32_t size;
        memcpy(&size, argument, sizeof size);
        return size;
    }
    case 0x03: return sizeof(struct hidraw_devinfo);
    default: return result > 0 ? (uint64_t)result : 0; /* reports and strings: their length */
    }
}

static int hid_ioctl(nvs_ioctl_fn real, struct nvs_device *device, unsigned slot, int fd,
                     unsigned long request, void *argument)
{
    (void)slot;
    const struct hid_request *known = hid_request(request);
    if (!known || !nvs_call_enter(device->group))
        return real(fd, request, argument);
    unsigned size = _IOC_SIZE(request);
    unsigned category = known->move == HID_IN ? NVS_TTY_READ
        : known->move == HID_OUT              ? NVS_TTY_WRITE
                                              : NVS_TTY_CONTROL;
    /* The payload is the size asked for; under nsys it stays, the trace file gets the moved. */
    struct nvs_attributes range = NVS_ATTRIBUTES_PAYLOAD(
        NVS_DOMAIN_HID, category, nvs_category_color(NVS_DOMAIN_HID, category), size);
    /* The report requests carry their buffer's size; the queries have a fixed one. */
    if (known->move != HID_QUERY || known->number >= 0x04)
        nvs_attributes_name(&range,
                            nvs_device_name(device, NVS_HOOK_ID(ioctl),
                                            known->number << 16 | (size & 0xffff), "%s %s %uB",
                                            known->name, device->path, size));
    else
        nvs_attributes_name(&range,
                            nvs_device_name(device, NVS_HOOK_ID(ioctl), known->number << 16,
                                            "%s %s", known->name, device->path));
    nvs_call_open(NVS_HOOK_ID(ioctl), NVS_FRAME_OFF, -1, &range);
    int result = real(fd, request, argument);
    int saved_errno = errno;
    uint64_t bytes = moved(known, argument, result);
    nvs_range_set_payload(NVS_DOMAIN_HID, bytes);
    enum nvs_frame_marker marker = known->move == HID_IN ? device->in_marker
        : known->move == HID_OUT                         ? device->out_marker
                                                         : NVS_FRAME_OFF;
    if (bytes > 0 && marker != NVS_FRAME_OFF)
        nvs_call_completed(NVS_HOOK_ID(ioctl), marker, -1);
    if (result < 0 && !nvs_device_ordinary_failure(saved_errno)) {
        char what[NVS_CALL_TEXT_MAX];
        snprintf(what, sizeof what, "%s %s", known->name, device->path);
        nvs_device_warn(device, what, saved_errno);
    }
    errno = saved_errno;
    nvs_call_close(NVS_DOMAIN_HID);
    return result;
}

/* hidraw's major is given out at boot: told by its class. */
const struct nvs_device_kind nvs_device_hidraw = {
    .name = "hid",
    .sysfs_class = "/hidraw/",
    .domain = NVS_DOMAIN_HID,
    .group = NVS_HOOKS_HID,
    .in_marker = NVS_FRAME_HID_IN,
    .out_marker = NVS_FRAME_HID_OUT,
    .read_category = NVS_TTY_READ,
    .write_category = NVS_TTY_WRITE,
    .wait_category = NVS_TTY_WAIT,
    .drain_category = NVS_TTY_DRAIN,
    .warning_category = NVS_TTY_WARNING,
    .ioctl = hid_ioctl,
};
