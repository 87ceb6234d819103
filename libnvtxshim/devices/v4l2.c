/* V4L2 cameras, a kind of device file (nvs_device_v4l2, at the end): the
 * streaming ioctls as ranges in domain v4l2, and what each dequeued buffer
 * tells that nothing else on the timeline does: how old the frame already is
 * (the kernel's capture timestamp to the dequeue) and whether frames were
 * dropped (its sequence number skips). read() is a frame too. schema.h has
 * the names. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/videodev2.h>
#include <sys/ioctl.h>
#include <stdio.h>
#include <string.h>

#include "../emit.h"
#include "device_calls.h"

/* Name keys: the request (high byte of the 32-bit parameter) and its details. */
enum {
    KEY_DQBUF = 1,
    KEY_QBUF,
    KEY_STREAMON,
    KEY_STREAMOFF,
    KEY_S_FMT,
    KEY_REQBUFS,
    KEY_AGE,
    KEY_FAILED
};

static uint32_t key(unsigned request, uint32_t details)
{
    return ((uint32_t)request << 24) | (details & 0xffffffu);
}

/* A format as the device keeps it: fourcc << 32 | width << 16 | height. */
static uint64_t pack_format(uint32_t fourcc, uint32_t width, uint32_t height)
{
    return ((uint64_t)fourcc << 32) | ((uint64_t)(width & 0xffffu) << 16) | (height & 0xffffu);
}

static uint32_t format_hash(uint64_t format)
{
    uint64_t h = format * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(h >> 40);
}

/* The format in a struct v4l2_format of a capture type, 0 for any other. */
static uint64_t format_of(const struct v4l2_format *format)
{
    if (!format)
        return 0;
    switch (format->type) {
    case V4L2_BUF_TYPE_VIDEO_CAPTURE:
        return pack_format(format->fmt.pix.pixelformat, format->fmt.pix.width,
                           format->fmt.pix.height);
    case V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE:
        return pack_format(format->fmt.pix_mp.pixelformat, format->fmt.pix_mp.width,
                           format->fmt.pix_mp.height);
    default: return 0;
    }
}

/* " 640x480 YUYV", or "" for an unknown format; FOURCC's unprintable bytes as '?'. */
static void describe_format(char *out, size_t size, uint64_t format)
{
    if (!format) {
        out[0] = '\0';
        return;
    }
    char fourcc[5];
    for (int i = 0; i < 4; i++) {
        char c = (char)(format >> (32 + 8 * i));
        fourcc[i] = (c >= 0x20 && c < 0x7f) ? c : '?';
    }
    fourcc[4] = '\0';
    /* Formats with a trailing blank ("Y8  ") read better without it. */
    for (int i = 3; i > 0 && fourcc[i] == ' '; i--)
        fourcc[i] = '\0';
    snprintf(out, size, " %ux%u %s", (unsigned)(format >> 16) & 0xffffu, (unsigned)format & 0xffffu,
             fourcc);
}

static const char *memory_name(uint32_t memory)
{
    switch (memory) {
    case V4L2_MEMORY_MMAP: return "mmap";
    case V4L2_MEMORY_USERPTR: return "userptr";
    case V4L2_MEMORY_DMABUF: return "dmabuf";
    case V4L2_MEMORY_OVERLAY: return "overlay";
    default: return "memory?";
    }
}

/* What the kernel answered in the program's ARGUMENT to REQUEST, copied out: the
 * kernel reads and writes it with no alignment asked (copy_from_user; Python's
 * fcntl.ioctl hands a bytearray at any address), so its fields are never read
 * in place. Only after the kernel accepted it. */
union answer {
    struct v4l2_buffer buffer;
    struct v4l2_requestbuffers request;
    struct v4l2_format format;
};

static union answer answer_of(unsigned long request, const void *argument)
{
    union answer copy;
    size_t size = _IOC_SIZE(request) < sizeof copy ? _IOC_SIZE(request) : sizeof copy;
    memset(&copy, 0, sizeof copy);
    memcpy(&copy, argument, size);
    return copy;
}

/* Untraced requests that still tell the camera's format (VIDIOC_G_FMT), and
 * the traced ones' answers. */
static void observe(struct nvs_device *device, unsigned long request, const void *argument,
                    int result)
{
    if (result != 0)
        return;
    unsigned command = (unsigned)request;
    if (command == (unsigned)VIDIOC_G_FMT || command == (unsigned)VIDIOC_S_FMT) {
        union answer answer = answer_of(request, argument);
        uint64_t format = format_of(&answer.format);
        if (format)
            atomic_store_explicit(&device->format, format, memory_order_relaxed);
    } else if (command == (unsigned)VIDIOC_STREAMON) {
        atomic_store_explicit(&device->last_sequence, -1, memory_order_relaxed);
    }
}

/* Bytes the driver filled in a dequeued buffer (all planes of a multi-planar one). */
static uint64_t bytes_used(const struct v4l2_buffer *buffer)
{
    if (buffer->type == V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE ||
        buffer->type == V4L2_BUF_TYPE_VIDEO_OUTPUT_MPLANE) {
        uint64_t total = 0;
        for (uint32_t i = 0; buffer->m.planes && i < buffer->length && i < VIDEO_MAX_PLANES; i++) {
            struct v4l2_plane plane;
            memcpy(&plane, &buffer->m.planes[i], sizeof plane);
            total += plane.bytesused;
        }
        return total;
    }
    return buffer->bytesused;
}

static bool is_capture(uint32_t type)
{
    return type == V4L2_BUF_TYPE_VIDEO_CAPTURE || type == V4L2_BUF_TYPE_VIDEO_CAPTURE_MPLANE;
}

/* What a dequeued buffer tells: dropped frames (a red mark) and the frame's age. */
static void dequeued(struct nvs_device *device, const struct v4l2_buffer *buffer)
{
    int64_t sequence = buffer->sequence;
    int64_t last = atomic_exchange_explicit(&device->last_sequence, sequence, memory_order_relaxed);
    /* Sequences count from 0 at STREAMON, so a first buffer with a higher one
     * comes after drops too. A sequence that went back is a restart, not a drop. */
    int64_t dropped = sequence - last - 1;
    if (dropped > 0) {
        char text[NVS_CALL_TEXT_MAX];
        snprintf(text, sizeof text, "dropped %lld frame%s %s", (long long)dropped,
                 dropped == 1 ? "" : "s", device->path);
        struct nvs_attributes mark = NVS_ATTRIBUTES_PAYLOAD(NVS_DOMAIN_V4L2, NVS_V4L2_WARNING,
                                                            NVS_COLOR_ERROR, (uint64_t)dropped);
        nvs_attributes_name(&mark, (struct nvs_name){ NULL, text });
        nvs_mark(&mark);
    }
    /* The age needs the timestamp on our clock: CLOCK_MONOTONIC. Drivers
     * whose timestamps are copied from elsewhere or unknown get none. */
    if ((buffer->flags & V4L2_BUF_FLAG_TIMESTAMP_MASK) != V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC)
        return;
    uint64_t captured = (uint64_t)buffer->timestamp.tv_sec * 1000000000ull +
        (uint64_t)buffer->timestamp.tv_usec * 1000ull;
    uint64_t now = nvs_now_ns();
    if (captured == 0 || captured > now || now - captured > 60ull * 1000000000ull)
        return;
    struct nvs_attributes age = NVS_ATTRIBUTES_PAYLOAD(NVS_DOMAIN_V4L2, NVS_V4L2_FRAME_AGE,
                                                       NVS_COLOR_V4L2_AGE, now - captured);
    nvs_attributes_name(&age,
                        nvs_device_name(device, NVS_HOOK_ID(ioctl), key(KEY_AGE, buffer->index),
                                        NVS_FRAME_AGE_PREFIX "%s buf=%u", device->path,
                                        buffer->index));
    nvs_range_span(&age, captured, now);
}

static const char *request_name(unsigned command)
{
    return command == (unsigned)VIDIOC_DQBUF    ? "VIDIOC_DQBUF"
        : command == (unsigned)VIDIOC_QBUF      ? "VIDIOC_QBUF"
        : command == (unsigned)VIDIOC_STREAMON  ? "VIDIOC_STREAMON"
        : command == (unsigned)VIDIOC_STREAMOFF ? "VIDIOC_STREAMOFF"
        : command == (unsigned)VIDIOC_S_FMT     ? "VIDIOC_S_FMT"
        : command == (unsigned)VIDIOC_REQBUFS   ? "VIDIOC_REQBUFS"
                                                : "ioctl";
}

/* Whether REQUEST is one the library draws. */
static bool traced_request(unsigned command)
{
    return command == (unsigned)VIDIOC_DQBUF || command == (unsigned)VIDIOC_QBUF ||
        command == (unsigned)VIDIOC_STREAMON || command == (unsigned)VIDIOC_STREAMOFF ||
        command == (unsigned)VIDIOC_S_FMT || command == (unsigned)VIDIOC_REQBUFS;
}

static struct nvs_attributes control_range(void)
{
    return NVS_ATTRIBUTES(NVS_DOMAIN_V4L2, NVS_V4L2_CONTROL, NVS_COLOR_V4L2_CONTROL);
}

/* A dequeue's range: named from the camera's format as the library knows it,
 * not from the program's buffer, which the kernel has not read yet. */
static struct nvs_attributes dequeue_range(struct nvs_device *device)
{
    char format[48];
    uint64_t known = atomic_load_explicit(&device->format, memory_order_relaxed);
    describe_format(format, sizeof format, known);
    struct nvs_attributes range = NVS_ATTRIBUTES(NVS_DOMAIN_V4L2, NVS_V4L2_CAPTURE,
                                                 NVS_COLOR_V4L2_CAPTURE);
    nvs_attributes_name(&range,
                        nvs_device_name(device, NVS_HOOK_ID(ioctl),
                                        key(KEY_DQBUF, format_hash(known)), "VIDIOC_DQBUF %s%s",
                                        device->path, format));
    return range;
}

/* The range of a set-up or queueing request that succeeded, from what the
 * driver answered in ARGUMENT (the kernel accepted it): the format it set,
 * the buffers it granted. False for a request on a queue that is not a
 * camera's (an output queue's buffers, an overlay format). */
static bool describe_answer(struct nvs_attributes *range, struct nvs_device *device,
                            unsigned command, const union answer *answer)
{
    char format[48];
    enum nvs_hook_id id = NVS_HOOK_ID(ioctl);
    *range = control_range();
    if (command == (unsigned)VIDIOC_QBUF) {
        const struct v4l2_buffer *buffer = &answer->buffer;
        if (!is_capture(buffer->type))
            return false;
        nvs_attributes_name(range,
                            nvs_device_name(device, id, key(KEY_QBUF, buffer->index),
                                            "VIDIOC_QBUF %s buf=%u", device->path, buffer->index));
    } else if (command == (unsigned)VIDIOC_S_FMT) {
        uint64_t granted = format_of(&answer->format);
        if (!granted)
            return false;
        describe_format(format, sizeof format, granted);
        nvs_attributes_name(range,
                            nvs_device_name(device, id, key(KEY_S_FMT, format_hash(granted)),
                                            "VIDIOC_S_FMT %s%s", device->path, format));
    } else {
        const struct v4l2_requestbuffers *request = &answer->request;
        if (!is_capture(request->type))
            return false;
        nvs_attributes_name(
            range,
            nvs_device_name(
                device, id,
                key(KEY_REQBUFS, (request->count & 0xffffu) << 4 | (request->memory & 0xfu)),
                "VIDIOC_REQBUFS %s %u %s", device->path, request->count,
                memory_name(request->memory)));
    }
    return true;
}

/* A buffer was handed out: what it tells, and the frame it begins. */
static void handed_out(struct nvs_device *device, const struct v4l2_buffer *buffer)
{
    dequeued(device, buffer);
    if (device->in_marker != NVS_FRAME_OFF)
        nvs_call_completed(NVS_HOOK_ID(ioctl), device->in_marker, -1);
}

/* A request that failed, other than for want of a frame or by a signal: a red mark. */
static void failed(const struct nvs_device *device, unsigned command, int error)
{
    if (nvs_device_ordinary_failure(error))
        return;
    char what[NVS_CALL_TEXT_MAX];
    snprintf(what, sizeof what, "%s %s", request_name(command), device->path);
    nvs_device_warn(device, what, error);
}

/* A dequeue on a non-blocking descriptor returns at once, with a buffer or
 * EAGAIN: programs that poll by dequeuing (ffmpeg sleeps and asks again)
 * make thousands of them. Its range is drawn only when it handed out a
 * buffer, after the call, from when it began; a blocking one waits for the
 * frame inside and its range opens before, as every other call's. */
static int dequeue_nonblocking(nvs_ioctl_fn real, struct nvs_device *device, int fd,
                               unsigned long request, void *argument)
{
    uint64_t began = nvs_now_ns();
    int result = real(fd, request, argument);
    int saved_errno = errno;
    union answer answer;
    if (result == 0 && is_capture((answer = answer_of(request, argument)).buffer.type)) {
        struct nvs_attributes done = dequeue_range(device);
        nvs_attributes_payload(&done, bytes_used(&answer.buffer));
        handed_out(device, &answer.buffer); /* its frame begins inside its range */
        nvs_call_drawn(NVS_HOOK_ID(ioctl), NVS_FRAME_OFF, -1, &done, began);
    } else if (result != 0) {
        /* A failure other than finding no frame is drawn, as on a blocking one. */
        failed(device, (unsigned)request, saved_errno);
        if (saved_errno != EAGAIN && saved_errno != EWOULDBLOCK) {
            struct nvs_attributes refused = dequeue_range(device);
            nvs_attributes_payload(&refused, 0);
            nvs_call_drawn(NVS_HOOK_ID(ioctl), NVS_FRAME_OFF, -1, &refused, began);
        }
    }
    errno = saved_errno;
    return result;
}

/* The range of a set-up or queueing request that failed: the driver granted
 * nothing, and what the program asked is not read (the kernel may not have
 * accepted its memory), so the name says "failed"; moved: 0. */
static struct nvs_attributes failed_range(struct nvs_device *device, unsigned command)
{
    struct nvs_attributes range = control_range();
    unsigned which = command == (unsigned)VIDIOC_QBUF ? KEY_QBUF
        : command == (unsigned)VIDIOC_S_FMT           ? KEY_S_FMT
                                                      : KEY_REQBUFS;
    nvs_attributes_name(&range,
                        nvs_device_name(device, NVS_HOOK_ID(ioctl), key(KEY_FAILED, which),
                                        "%s %s failed", request_name(command), device->path));
    nvs_attributes_payload(&range, 0);
    return range;
}

/* A request quick to answer whose range is named from the answer (QBUF,
 * S_FMT, REQBUFS): drawn once it has returned. One that failed is drawn as
 * every failed device call is (but one that found nothing, EAGAIN), named
 * failed, its red mark inside it: a client's probe the driver refused
 * (GStreamer's DMABUF REQBUFS, v4l2-compliance's) is on the timeline. */
static int answered(nvs_ioctl_fn real, struct nvs_device *device, int fd, unsigned long request,
                    void *argument)
{
    uint64_t began = nvs_now_ns();
    int result = real(fd, request, argument);
    int saved_errno = errno;
    struct nvs_attributes range;
    if (result == 0) {
        observe(device, request, argument, result);
        union answer answer = answer_of(request, argument);
        if (describe_answer(&range, device, (unsigned)request, &answer))
            nvs_call_drawn(NVS_HOOK_ID(ioctl), NVS_FRAME_OFF, -1, &range, began);
    } else {
        failed(device, (unsigned)request, saved_errno);
        if (saved_errno != EAGAIN && saved_errno != EWOULDBLOCK) {
            range = failed_range(device, (unsigned)request);
            nvs_call_drawn(NVS_HOOK_ID(ioctl), NVS_FRAME_OFF, -1, &range, began);
        }
    }
    errno = saved_errno;
    return result;
}

/* A request whose range opens before the call: a blocking dequeue (it waits
 * for the frame), STREAMON and STREAMOFF. Nothing of the program's memory is
 * read before the kernel has accepted it. */
static int waited(nvs_ioctl_fn real, struct nvs_device *device, int fd, unsigned long request,
                  void *argument)
{
    unsigned command = (unsigned)request;
    struct nvs_attributes range = control_range();
    if (command == (unsigned)VIDIOC_DQBUF)
        range = dequeue_range(device);
    else
        nvs_attributes_name(
            &range,
            nvs_device_name(
                device, NVS_HOOK_ID(ioctl),
                key(command == (unsigned)VIDIOC_STREAMON ? KEY_STREAMON : KEY_STREAMOFF, 0),
                "%s %s", request_name(command), device->path));
    nvs_call_open(NVS_HOOK_ID(ioctl), NVS_FRAME_OFF, -1, &range);
    int result = real(fd, request, argument);
    int saved_errno = errno;
    observe(device, request, argument, result);
    union answer answer;
    if (command == (unsigned)VIDIOC_DQBUF && result == 0 &&
        is_capture((answer = answer_of(request, argument)).buffer.type)) {
        nvs_range_set_payload(NVS_DOMAIN_V4L2, bytes_used(&answer.buffer));
        handed_out(device, &answer.buffer);
    }
    if (result != 0) {
        if (command == (unsigned)VIDIOC_DQBUF && saved_errno != EAGAIN)
            nvs_range_set_payload(NVS_DOMAIN_V4L2, 0); /* moved nothing */
        failed(device, command, saved_errno);
    }
    errno = saved_errno;
    nvs_call_close(NVS_DOMAIN_V4L2);
    return result;
}

static int v4l2_ioctl(nvs_ioctl_fn real, struct nvs_device *device, unsigned slot, int fd,
                      unsigned long request, void *argument)
{
    (void)slot;
    unsigned command = (unsigned)request;
    if (!traced_request(command) || !nvs_call_enter(device->group)) {
        int result = real(fd, request, argument);
        if (command == (unsigned)VIDIOC_G_FMT) {
            int saved_errno = errno;
            observe(device, request, argument, result);
            errno = saved_errno;
        }
        return result;
    }
    if (command == (unsigned)VIDIOC_DQBUF &&
        atomic_load_explicit(&device->nonblocking, memory_order_relaxed)) {
        int result = dequeue_nonblocking(real, device, fd, request, argument);
        nvs_call_leave();
        return result;
    }
    if (command == (unsigned)VIDIOC_DQBUF || command == (unsigned)VIDIOC_STREAMON ||
        command == (unsigned)VIDIOC_STREAMOFF)
        return waited(real, device, fd, request, argument);
    int result = answered(real, device, fd, request, argument);
    nvs_call_leave();
    return result;
}

/* A camera's format and sequence are unknown until the program sets, reads or dequeues. */
static void v4l2_opened(struct nvs_device *device)
{
    atomic_store(&device->format, 0);
    atomic_store(&device->last_sequence, -1);
}

const struct nvs_device_kind nvs_device_v4l2 = {
    .name = "v4l2",
    .majors = { 81 },
    .sysfs_class = "/video4linux/",
    .domain = NVS_DOMAIN_V4L2,
    .group = NVS_HOOKS_V4L2,
    .in_marker = NVS_FRAME_V4L2_IN,
    .out_marker = NVS_FRAME_OFF,
    .read_category = NVS_V4L2_CAPTURE,
    .write_category = NVS_V4L2_CAPTURE,
    .wait_category = NVS_V4L2_WAIT,
    .warning_category = NVS_V4L2_WARNING,
    .ioctl = v4l2_ioctl,
    .opened = v4l2_opened,
};
