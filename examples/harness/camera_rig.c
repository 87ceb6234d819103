/* harness_physical as a camera rig: a V4L2 capture device (MMAP streaming)
 * and a serial actuator speaking examples/emuservo.py's protocol. */
#define _GNU_SOURCE
#include "harness.h"

static int xioctl(int fd, unsigned long request, void *argument)
{
    int result;
    do
        result = ioctl(fd, request, argument);
    while (result < 0 && errno == EINTR);
    return result;
}

void fourcc_text(uint32_t fourcc, char text[5])
{
    for (int i = 0; i < 4; i++) {
        char c = (char)(fourcc >> 8 * i);
        text[i] = c > ' ' && c < 127 ? c : '.';
    }
    text[4] = '\0';
}

void v4l2_close(struct v4l2_camera *camera)
{
    if (camera->fd < 0)
        return;
    if (camera->streaming) {
        enum v4l2_buf_type type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
        xioctl(camera->fd, VIDIOC_STREAMOFF, &type);
    }
    for (unsigned i = 0; i < camera->count; i++)
        if (camera->buffers[i].start && camera->buffers[i].start != MAP_FAILED)
            munmap(camera->buffers[i].start, camera->buffers[i].length);
    struct v4l2_requestbuffers request = { .count = 0,
                                           .type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
                                           .memory = V4L2_MEMORY_MMAP };
    xioctl(camera->fd, VIDIOC_REQBUFS, &request);
    close(camera->fd);
    camera->fd = -1;
}

/* Opens PATH, sets the format and queues the buffers; the size the driver chose
 * in O's width and height. v4l2_start starts the stream. */
int v4l2_open(struct v4l2_camera *camera, struct options *o)
{
    memset(camera, 0, sizeof *camera);
    camera->path = o->camera;
    camera->fd = open(o->camera, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (camera->fd < 0) {
        fprintf(stderr, "%s: cannot open %s: %s\n", program, o->camera, strerror(errno));
        return -1;
    }
    const char *step;
    struct v4l2_format format = { .type = V4L2_BUF_TYPE_VIDEO_CAPTURE };
    format.fmt.pix.width = (uint32_t)o->width;
    format.fmt.pix.height = (uint32_t)o->height;
    format.fmt.pix.pixelformat = V4L2_PIX_FMT_YUYV;
    format.fmt.pix.field = V4L2_FIELD_NONE;
    struct v4l2_requestbuffers request = { .count = 4,
                                           .type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
                                           .memory = V4L2_MEMORY_MMAP };
    if ((step = "VIDIOC_S_FMT", xioctl(camera->fd, VIDIOC_S_FMT, &format) < 0) ||
        (step = "VIDIOC_REQBUFS", xioctl(camera->fd, VIDIOC_REQBUFS, &request) < 0))
        goto failed;
    camera->width = format.fmt.pix.width;
    camera->height = format.fmt.pix.height;
    camera->format = format.fmt.pix.pixelformat;
    camera->bytes_per_line = format.fmt.pix.bytesperline;
    char name[5];
    fourcc_text(camera->format, name);
    if (camera->format != V4L2_PIX_FMT_YUYV && camera->format != V4L2_PIX_FMT_RGB24 &&
        camera->format != V4L2_PIX_FMT_BGR24 && camera->format != V4L2_PIX_FMT_GREY) {
        fprintf(stderr, "%s: %s gives %s frames; YUYV, RGB3, BGR3 or GREY are read\n", program,
                o->camera, name);
        v4l2_close(camera);
        return -1;
    }
    if (camera->width < 16 || camera->height < 16 || camera->width > 8192 ||
        camera->height > 8192 || request.count < 1) {
        fprintf(stderr, "%s: %s gives %ux%u frames in %u buffers\n", program, o->camera,
                camera->width, camera->height, request.count);
        v4l2_close(camera);
        return -1;
    }
    unsigned bytes_per_pixel = camera->format == V4L2_PIX_FMT_YUYV ? 2
        : camera->format == V4L2_PIX_FMT_GREY                      ? 1
                                                                   : 3;
    if (camera->bytes_per_line < camera->width * bytes_per_pixel)
        camera->bytes_per_line = camera->width * bytes_per_pixel;
    camera->count = request.count < V4L2_BUFFERS_MAX ? request.count : V4L2_BUFFERS_MAX;
    for (unsigned i = 0; i < camera->count; i++) {
        struct v4l2_buffer buffer = { .index = i,
                                      .type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
                                      .memory = V4L2_MEMORY_MMAP };
        if ((step = "VIDIOC_QUERYBUF", xioctl(camera->fd, VIDIOC_QUERYBUF, &buffer) < 0))
            goto failed;
        camera->buffers[i].length = buffer.length;
        camera->buffers[i].start = mmap(NULL, buffer.length, PROT_READ | PROT_WRITE, MAP_SHARED,
                                        camera->fd, buffer.m.offset);
        if ((step = "mmap", camera->buffers[i].start == MAP_FAILED))
            goto failed;
    }
    for (unsigned i = 0; i < camera->count; i++) {
        struct v4l2_buffer buffer = { .index = i,
                                      .type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
                                      .memory = V4L2_MEMORY_MMAP };
        if ((step = "VIDIOC_QBUF", xioctl(camera->fd, VIDIOC_QBUF, &buffer) < 0))
            goto failed;
    }
    o->width = (int)camera->width;
    o->height = (int)camera->height;
    return 0;
failed:
    fprintf(stderr, "%s: %s: %s failed: %s\n", program, o->camera, step, strerror(errno));
    v4l2_close(camera);
    return -1;
}

/* Starts the stream: once everything else is ready (the GPU's start-up can take
 * longer than the camera's buffers last, and the frames it fills meanwhile
 * would be dropped). */
int v4l2_start(struct v4l2_camera *camera)
{
    enum v4l2_buf_type type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    if (xioctl(camera->fd, VIDIOC_STREAMON, &type) < 0) {
        fprintf(stderr, "%s: %s: VIDIOC_STREAMON failed: %s\n", program, camera->path,
                strerror(errno));
        return -1;
    }
    camera->streaming = true;
    return 0;
}

static unsigned char clamp_byte(int value)
{
    return value < 0 ? 0 : value > 255 ? 255 : (unsigned char)value;
}

/* The driver's frame at DATA (BYTES long) as RGB8 into FRAME; false when it is short. */
static bool v4l2_convert(const struct v4l2_camera *camera, const unsigned char *data, size_t bytes,
                         unsigned char *frame)
{
    uint32_t width = camera->width, height = camera->height, stride = camera->bytes_per_line;
    if (bytes < (size_t)stride * (height - 1) +
            width *
                (camera->format == V4L2_PIX_FMT_YUYV       ? 2
                     : camera->format == V4L2_PIX_FMT_GREY ? 1
                                                           : 3))
        return false;
    for (uint32_t y = 0; y < height; y++) {
        const unsigned char *row = data + (size_t)y * stride;
        unsigned char *out = frame + (size_t)y * width * 3;
        for (uint32_t x = 0; x < width; x++, out += 3) {
            switch (camera->format) {
            case V4L2_PIX_FMT_YUYV: {
                /* BT.601, studio range, in integers */
                const unsigned char *pair = row + (x & ~1u) * 2;
                int c = (x & 1 ? pair[2] : pair[0]) - 16, d = pair[1] - 128, e = pair[3] - 128;
                out[0] = clamp_byte((298 * c + 409 * e + 128) >> 8);
                out[1] = clamp_byte((298 * c - 100 * d - 208 * e + 128) >> 8);
                out[2] = clamp_byte((298 * c + 516 * d + 128) >> 8);
                break;
            }
            case V4L2_PIX_FMT_RGB24: memcpy(out, row + x * 3, 3); break;
            case V4L2_PIX_FMT_BGR24:
                out[0] = row[x * 3 + 2], out[1] = row[x * 3 + 1], out[2] = row[x * 3];
                break;
            default: /* GREY */ out[0] = out[1] = out[2] = row[x]; break;
            }
        }
    }
    return true;
}

/* The next frame: poll, DQBUF, the buffer converted into FRAME. The buffer
 * stays the loop's until v4l2_requeue. True when a whole frame came. */
bool v4l2_observe(struct v4l2_camera *camera, unsigned char *frame, struct frame_info *info)
{
    struct v4l2_buffer buffer;
    info->v4l2 = true;
    info->buffer = -1;
    for (;;) {
        struct pollfd wait = { .fd = camera->fd, .events = POLLIN };
        int ready = poll(&wait, 1, TIMEOUT_MS);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0) {
            fprintf(stderr, "%s: %s: %s\n", program, camera->path,
                    ready ? strerror(errno) : "no frame in 2 s");
            return false;
        }
        buffer = (struct v4l2_buffer){ .type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
                                       .memory = V4L2_MEMORY_MMAP };
        if (xioctl(camera->fd, VIDIOC_DQBUF, &buffer) == 0)
            break;
        if (errno != EAGAIN) {
            fprintf(stderr, "%s: %s: VIDIOC_DQBUF failed: %s\n", program, camera->path,
                    strerror(errno));
            return false;
        }
    }
    info->dequeue_ns = monotonic_ns();
    info->buffer = (int)buffer.index;
    info->sequence = buffer.sequence;
    info->capture_ns = (int64_t)buffer.timestamp.tv_sec * 1000000000 +
        (int64_t)buffer.timestamp.tv_usec * 1000;
    info->dropped = camera->sequenced && buffer.sequence > camera->next_sequence
        ? buffer.sequence - camera->next_sequence
        : 0;
    camera->next_sequence = buffer.sequence + 1;
    camera->sequenced = true;
    if (buffer.index >= camera->count || (buffer.flags & V4L2_BUF_FLAG_ERROR))
        return false;
    return v4l2_convert(camera, camera->buffers[buffer.index].start,
                        buffer.bytesused ? buffer.bytesused : camera->buffers[buffer.index].length,
                        frame);
}

/* The buffer of INFO back to the driver; false when it refused it. */
bool v4l2_requeue(struct v4l2_camera *camera, struct frame_info *info)
{
    if (info->buffer < 0)
        return true;
    struct v4l2_buffer buffer = { .index = (uint32_t)info->buffer,
                                  .type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
                                  .memory = V4L2_MEMORY_MMAP };
    info->buffer = -1;
    if (xioctl(camera->fd, VIDIOC_QBUF, &buffer) == 0)
        return true;
    fprintf(stderr, "%s: %s: VIDIOC_QBUF failed: %s\n", program, camera->path, strerror(errno));
    return false;
}

int serial_open(struct serial_actuator *serial, const char *path)
{
    memset(serial, 0, sizeof *serial);
    serial->path = path;
    serial->fd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (serial->fd < 0) {
        fprintf(stderr, "%s: cannot open %s: %s\n", program, path, strerror(errno));
        return -1;
    }
    struct termios settings;
    if (tcgetattr(serial->fd, &settings) == 0) {
        cfmakeraw(&settings);
        cfsetispeed(&settings, B115200);
        cfsetospeed(&settings, B115200);
        settings.c_cflag |= CLOCAL | CREAD;
        settings.c_cc[VMIN] = 1;
        settings.c_cc[VTIME] = 0;
        tcsetattr(serial->fd, TCSANOW, &settings);
    }
    return 0;
}

/* act: "move FRAME CELL" out, then the reply line into REPLY; the time the
 * write returned in *WROTE_NS. Returns the errors (a failed write or read, a
 * reply other than "ok FRAME CELL"). */
int serial_act(struct serial_actuator *serial, int i, int action, char *reply, size_t size,
               int64_t *wrote_ns)
{
    char command[64];
    int length = snprintf(command, sizeof command, "move %d %d\n", i, action);
    reply[0] = '\0';
    ssize_t written;
    do
        written = write(serial->fd, command, (size_t)length);
    while (written < 0 && errno == EINTR);
    *wrote_ns = monotonic_ns();
    if (written != length) {
        fprintf(stderr, "%s: %s: write failed: %s\n", program, serial->path,
                written < 0 ? strerror(errno) : "short");
        return 1;
    }
    for (;;) {
        char *newline = memchr(serial->pending, '\n', serial->pending_length);
        if (newline) {
            size_t line = (size_t)(newline - serial->pending);
            size_t kept = line < size - 1 ? line : size - 1;
            memcpy(reply, serial->pending, kept);
            reply[kept] = '\0';
            if (kept && reply[kept - 1] == '\r')
                reply[kept - 1] = '\0';
            serial->pending_length -= line + 1;
            memmove(serial->pending, newline + 1, serial->pending_length);
            break;
        }
        if (serial->pending_length == sizeof serial->pending)
            serial->pending_length = 0; /* a line too long: dropped */
        struct pollfd wait = { .fd = serial->fd, .events = POLLIN };
        int ready = poll(&wait, 1, TIMEOUT_MS);
        if (ready < 0 && errno == EINTR)
            continue;
        ssize_t got = ready > 0 ? read(serial->fd, serial->pending + serial->pending_length,
                                       sizeof serial->pending - serial->pending_length)
                                : -1;
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            fprintf(stderr, "%s: %s: no reply to '%.*s'\n", program, serial->path, length - 1,
                    command);
            return 1;
        }
        serial->pending_length += (size_t)got;
    }
    char expected[64];
    snprintf(expected, sizeof expected, "ok %d %d", i, action);
    return strcmp(reply, expected) != 0;
}

void serial_close(struct serial_actuator *serial)
{
    if (serial->fd >= 0)
        close(serial->fd);
    serial->fd = -1;
}
