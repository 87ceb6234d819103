/* harness_physical: an example physical-system control loop — a USB camera and
 * actuator, GPU inference, an X11 GUI — with no NVTX in it. It is the program
 * libnvtxshim is shown on: run it under the shim and Nsight Systems to see its
 * USB, CUDA-copy and X11 work per frame.
 *
 * Per frame i:
 *   act      a vendor control request and a command (bulk OUT) carrying the
 *            action chosen from the previous frame;
 *   observe  one RGB8 frame over bulk IN (with --async, from a queue of
 *            transfers kept in flight and completed on an event thread, the
 *            way camera drivers stream), then the device status (interrupt IN);
 *   infer    the frame goes to the GPU, a 3x3 convolution and a cell argmax
 *            pick the action, the action comes back (CUDA driver API through a
 *            dlopen'ed libcuda.so.1; on the CPU when there is no GPU);
 *   render   with --use_gui=1, the frame and the chosen cell in an X11 window
 *            (MIT-SHM when the server offers it, XPutImage otherwise).
 *
 * It speaks the protocol of the emulated device in test/usbdev (build/emucam),
 * and runs against a real device with the same protocol when one is plugged
 * in.
 *
 * As a camera rig: --camera v4l2:PATH observes from a V4L2 capture device
 * (MMAP streaming: S_FMT, REQBUFS, QUERYBUF and mmap, QBUF all, STREAMON; per
 * frame poll, DQBUF, then QBUF once the frame was acted on), and
 * --actuator serial:PATH acts, after inference, by writing a command line to
 * a serial port and reading its one-line reply ("move FRAME CELL" -> "ok FRAME
 * CELL", the protocol of examples/emuservo.py). USB is opened only for what
 * still uses it. --log prints what each frame did. The summary's second line does not depend on timing, so runs can be
 * compared byte for byte; the third line is the frame rate. */
#define _GNU_SOURCE
#include <X11/Xlib.h>
#include <X11/Xutil.h>
#include <X11/extensions/XShm.h>
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libusb.h>
#include <linux/videodev2.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "harness_infer.h"

#define TIMEOUT_MS 2000
#define EP_COMMAND 0x02
#define EP_FRAMES 0x81
#define EP_STATUS 0x83

struct options {
    int frames, width, height, queue;
    uint16_t vendor, product;
    const char *camera;      /* a V4L2 device's path (--camera v4l2:PATH), or NULL: USB */
    const char *actuator;    /* a serial port's path (--actuator serial:PATH), or NULL: USB */
    bool async, threads, gui, log;
    double fps;
    enum { INFER_AUTO, INFER_GPU, INFER_CPU } inference;
};

static const char *program = "harness_physical";

static void usage(int status)
{
    fprintf(status ? stderr : stdout,
            "usage: %s [--use_gui=0|1] [--frames N] [--device VID:PID] [--async] [--queue N]\n"
            "       [--threads] [--fps F] [--width W] [--height H] [--inference=auto|gpu|cpu]\n"
            "       [--camera usb|v4l2:PATH] [--actuator usb|serial:PATH] [--log]\n"
            "  --use_gui=1     show each frame and the chosen action in an X11 window\n"
            "  --frames N      frames to run (300)\n"
            "  --device V:P    the camera + actuator, hex ids (1209:0001, the emulated one)\n"
            "  --async         stream frames: N transfers in flight, completed on an event thread\n"
            "  --queue N       transfers in flight with --async (4)\n"
            "  --threads       USB capture on its own thread; inference and GUI on the main one\n"
            "  --fps F         pace the loop at F frames a second (0: as fast as it goes)\n"
            "  --width W --height H   the camera's frame size (64x48)\n"
            "  --inference=X   gpu, cpu, or auto: the GPU when there is one (auto)\n"
            "  --camera v4l2:PATH   frames from a V4L2 capture device (MMAP streaming, YUYV\n"
            "                  asked for at W x H; the size the driver gives is used)\n"
            "  --actuator serial:PATH   after inference, write \"move FRAME CELL\" to a serial\n"
            "                  port and read its reply line (examples/emuservo.py)\n"
            "  --log           one line per frame: the camera's sequence and capture time,\n"
            "                  the dequeue, the actuation's end (CLOCK_MONOTONIC ns)\n",
            program);
    exit(status);
}

/* "--name=value" or "--name value"; returns the value or NULL if NAME does not match. */
static const char *option_value(int argc, char **argv, int *i, const char *name)
{
    size_t length = strlen(name);
    if (strncmp(argv[*i], name, length))
        return NULL;
    if (argv[*i][length] == '=')
        return argv[*i] + length + 1;
    if (argv[*i][length] == '\0') {
        if (*i + 1 >= argc)
            usage(2);
        return argv[++*i];
    }
    return NULL;
}

static long whole(const char *text, long low, long high)
{
    char *end;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (errno || *text == '\0' || *end != '\0' || value < low || value > high)
        usage(2);
    return value;
}

static void parse(int argc, char **argv, struct options *o)
{
    *o = (struct options){ .frames = 300, .width = 64, .height = 48, .queue = 4,
                           .vendor = 0x1209, .product = 0x0001 };
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) usage(0);
        else if (!strcmp(argv[i], "--async")) o->async = true;
        else if (!strcmp(argv[i], "--threads")) o->threads = true;
        else if (!strcmp(argv[i], "--log")) o->log = true;
        else if ((v = option_value(argc, argv, &i, "--camera"))) {
            if (!strcmp(v, "usb")) o->camera = NULL;
            else if (!strncmp(v, "v4l2:", 5) && v[5]) o->camera = v + 5;
            else usage(2);
        } else if ((v = option_value(argc, argv, &i, "--actuator"))) {
            if (!strcmp(v, "usb")) o->actuator = NULL;
            else if (!strncmp(v, "serial:", 7) && v[7]) o->actuator = v + 7;
            else usage(2);
        }
        else if ((v = option_value(argc, argv, &i, "--use_gui"))) o->gui = whole(v, 0, 1);
        else if ((v = option_value(argc, argv, &i, "--frames"))) o->frames = (int)whole(v, 1, 100000000);
        else if ((v = option_value(argc, argv, &i, "--queue"))) o->queue = (int)whole(v, 1, 64);
        else if ((v = option_value(argc, argv, &i, "--width"))) o->width = (int)whole(v, 16, 8192);
        else if ((v = option_value(argc, argv, &i, "--height"))) o->height = (int)whole(v, 16, 8192);
        else if ((v = option_value(argc, argv, &i, "--fps"))) {
            char *end;
            o->fps = strtod(v, &end);
            if (*end || o->fps < 0) usage(2);
        } else if ((v = option_value(argc, argv, &i, "--device"))) {
            unsigned vendor, product;
            char extra;
            if (sscanf(v, "%x:%x%c", &vendor, &product, &extra) != 2 || vendor > 0xffff ||
                product > 0xffff)
                usage(2);
            o->vendor = (uint16_t)vendor;
            o->product = (uint16_t)product;
        } else if ((v = option_value(argc, argv, &i, "--inference"))) {
            if (!strcmp(v, "auto")) o->inference = INFER_AUTO;
            else if (!strcmp(v, "gpu")) o->inference = INFER_GPU;
            else if (!strcmp(v, "cpu")) o->inference = INFER_CPU;
            else usage(2);
        } else usage(2);
    }
    if (o->camera && o->async) {
        fprintf(stderr, "%s: --async streams the USB camera's frames; not with --camera v4l2\n",
                program);
        exit(2);
    }
}

/* ---- the environment: camera and actuator over libusb ------------------- */

struct env;
struct slot {
    struct env *env;
    struct libusb_transfer *transfer;
    bool done;
};

struct env {
    libusb_context *context;
    libusb_device_handle *handle;
    int frame_bytes;
    /* --async: a ring of bulk IN transfers, consumed in submission order. */
    bool async;
    int queue, next, in_flight;
    struct slot *slots;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    pthread_t events;
    volatile int stop_events;
    int64_t acted_ns;  /* when the last command (bulk OUT) returned, CLOCK_MONOTONIC */
};

static int64_t monotonic_ns(void);

static void *run_events(void *argument)
{
    struct env *env = argument;
    while (!env->stop_events)
        libusb_handle_events_completed(env->context, (int *)&env->stop_events);
    return NULL;
}

static int env_open(struct env *env, const struct options *o)
{
    memset(env, 0, sizeof *env);
    env->frame_bytes = o->width * o->height * 3;
    int result = libusb_init(&env->context);
    if (result < 0) {
        fprintf(stderr, "%s: cannot initialise libusb: %s\n", program, libusb_error_name(result));
        return -1;
    }
    env->handle = libusb_open_device_with_vid_pid(env->context, o->vendor, o->product);
    if (!env->handle) {
        fprintf(stderr, "%s: no device %04x:%04x (the emulated one: build/emucam -- %s ...)\n",
                program, o->vendor, o->product, program);
        libusb_exit(env->context);
        return -1;
    }
    libusb_set_auto_detach_kernel_driver(env->handle, 1);
    result = libusb_claim_interface(env->handle, 0);
    if (result < 0) {
        fprintf(stderr, "%s: cannot claim interface 0: %s\n", program, libusb_error_name(result));
        libusb_close(env->handle);
        libusb_exit(env->context);
        return -1;
    }
    return 0;
}

/* Called with env->lock held. */
static int stream_submit(struct env *env, int index)
{
    struct slot *slot = &env->slots[index];
    slot->done = false;
    env->in_flight++;
    int result = libusb_submit_transfer(slot->transfer);
    if (result < 0) {
        env->in_flight--;
        slot->done = true;
        slot->transfer->status = LIBUSB_TRANSFER_ERROR;
    }
    return result;
}

/* On the event thread. */
static void LIBUSB_CALL stream_done(struct libusb_transfer *transfer)
{
    struct slot *slot = transfer->user_data;
    struct env *env = slot->env;
    pthread_mutex_lock(&env->lock);
    slot->done = true;
    env->in_flight--;
    pthread_cond_broadcast(&env->changed);
    pthread_mutex_unlock(&env->lock);
}

static int stream_start(struct env *env, int queue)
{
    env->async = true;
    env->queue = queue;
    env->slots = calloc((size_t)queue, sizeof *env->slots);
    if (!env->slots)
        return -1;
    pthread_mutex_init(&env->lock, NULL);
    pthread_cond_init(&env->changed, NULL);
    for (int i = 0; i < queue; i++) {
        unsigned char *buffer = malloc((size_t)env->frame_bytes);
        struct libusb_transfer *transfer = libusb_alloc_transfer(0);
        if (!buffer || !transfer)
            return -1;
        env->slots[i].env = env;
        env->slots[i].transfer = transfer;
        env->slots[i].done = true;
        libusb_fill_bulk_transfer(transfer, env->handle, EP_FRAMES, buffer, env->frame_bytes,
                                  stream_done, &env->slots[i], TIMEOUT_MS);
    }
    if (pthread_create(&env->events, NULL, run_events, env))
        return -1;
    pthread_mutex_lock(&env->lock);
    for (int i = 0; i < queue; i++)
        stream_submit(env, i);
    pthread_mutex_unlock(&env->lock);
    return 0;
}

static void stream_stop(struct env *env)
{
    pthread_mutex_lock(&env->lock);
    for (int i = 0; i < env->queue; i++)
        if (!env->slots[i].done)
            libusb_cancel_transfer(env->slots[i].transfer);
    while (env->in_flight > 0)
        pthread_cond_wait(&env->changed, &env->lock);
    pthread_mutex_unlock(&env->lock);
    env->stop_events = 1;
    libusb_interrupt_event_handler(env->context);
    pthread_join(env->events, NULL);
    for (int i = 0; i < env->queue; i++) {
        free(env->slots[i].transfer->buffer);
        libusb_free_transfer(env->slots[i].transfer);
    }
    free(env->slots);
}

static void env_close(struct env *env)
{
    if (env->async)
        stream_stop(env);
    libusb_release_interface(env->handle, 0);
    libusb_close(env->handle);
    libusb_exit(env->context);
}

/* act: the actuator command for frame I, carrying the action chosen from frame I-1. */
static int env_act(struct env *env, int i, int action)
{
    int errors = 0, moved = 0;
    unsigned char command[8] = { 0xA5, (unsigned char)action, (unsigned char)(i & 0xff),
                                 (unsigned char)((i >> 8) & 0xff), 0, 0, 0, 0x5A };
    if (libusb_control_transfer(env->handle, 0x40, 0x01, (uint16_t)i, (uint16_t)action, NULL, 0,
                                TIMEOUT_MS) < 0)
        errors++;
    if (libusb_bulk_transfer(env->handle, EP_COMMAND, command, sizeof command, &moved,
                             TIMEOUT_MS) < 0 || moved != (int)sizeof command)
        errors++;
    env->acted_ns = monotonic_ns();
    return errors;
}

/* observe: the next frame into FRAME; true when it came whole. Adds to *ERRORS. */
static bool env_observe(struct env *env, unsigned char *frame, int *errors)
{
    int moved = 0, result = 0;
    enum libusb_transfer_status status = LIBUSB_TRANSFER_COMPLETED;
    if (env->async) {
        pthread_mutex_lock(&env->lock);
        struct slot *slot = &env->slots[env->next];
        while (!slot->done)
            pthread_cond_wait(&env->changed, &env->lock);
        status = slot->transfer->status;
        moved = slot->transfer->actual_length;
        if (status == LIBUSB_TRANSFER_COMPLETED)
            memcpy(frame, slot->transfer->buffer, (size_t)moved);
        pthread_mutex_unlock(&env->lock);
        if (status == LIBUSB_TRANSFER_STALL)
            libusb_clear_halt(env->handle, EP_FRAMES);
        pthread_mutex_lock(&env->lock);
        stream_submit(env, env->next);
        env->next = (env->next + 1) % env->queue;
        pthread_mutex_unlock(&env->lock);
    } else {
        result = libusb_bulk_transfer(env->handle, EP_FRAMES, frame, env->frame_bytes, &moved,
                                      TIMEOUT_MS);
        if (result == LIBUSB_ERROR_PIPE)
            libusb_clear_halt(env->handle, EP_FRAMES);
    }
    bool whole_frame = result == 0 && status == LIBUSB_TRANSFER_COMPLETED &&
                       moved == env->frame_bytes;
    if (!whole_frame)
        ++*errors;

    /* The device's status: control signalling, read every frame. */
    unsigned char device_status[8];
    if (libusb_interrupt_transfer(env->handle, EP_STATUS, device_status, sizeof device_status,
                                  &moved, TIMEOUT_MS) < 0)
        ++*errors;
    return whole_frame;
}

/* ---- the camera rig: a V4L2 capture device and a serial actuator --------- */

#define V4L2_BUFFERS_MAX 8

static int xioctl(int fd, unsigned long request, void *argument)
{
    int result;
    do
        result = ioctl(fd, request, argument);
    while (result < 0 && errno == EINTR);
    return result;
}

struct v4l2_camera {
    const char *path;
    int fd;
    unsigned count;
    struct { void *start; size_t length; } buffers[V4L2_BUFFERS_MAX];
    uint32_t width, height, format, bytes_per_line;
    uint32_t next_sequence;
    bool streaming, sequenced;
};

/* What one dequeued frame was: the driver's sequence and capture time, when
 * the loop had it, and the frames the driver dropped before it. */
struct frame_info {
    bool v4l2;
    uint32_t sequence, dropped;
    int64_t capture_ns, dequeue_ns;
    int buffer;                       /* to queue again once acted on; -1: none */
    int64_t act_ns;                   /* when this frame's actuation returned */
    int sent;                         /* the cell that actuation carried */
};

static void fourcc_text(uint32_t fourcc, char text[5])
{
    for (int i = 0; i < 4; i++) {
        char c = (char)(fourcc >> 8 * i);
        text[i] = c > ' ' && c < 127 ? c : '.';
    }
    text[4] = '\0';
}

static void v4l2_close(struct v4l2_camera *camera)
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
    struct v4l2_requestbuffers request = { .count = 0, .type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
                                           .memory = V4L2_MEMORY_MMAP };
    xioctl(camera->fd, VIDIOC_REQBUFS, &request);
    close(camera->fd);
    camera->fd = -1;
}

/* Opens PATH, sets the format and queues the buffers; the size the driver chose
 * in O's width and height. v4l2_start starts the stream. */
static int v4l2_open(struct v4l2_camera *camera, struct options *o)
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
    struct v4l2_requestbuffers request = { .count = 4, .type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
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
    if (camera->width < 16 || camera->height < 16 || camera->width > 8192 || camera->height > 8192 ||
        request.count < 1) {
        fprintf(stderr, "%s: %s gives %ux%u frames in %u buffers\n", program, o->camera,
                camera->width, camera->height, request.count);
        v4l2_close(camera);
        return -1;
    }
    unsigned bytes_per_pixel = camera->format == V4L2_PIX_FMT_YUYV ? 2
                               : camera->format == V4L2_PIX_FMT_GREY ? 1 : 3;
    if (camera->bytes_per_line < camera->width * bytes_per_pixel)
        camera->bytes_per_line = camera->width * bytes_per_pixel;
    camera->count = request.count < V4L2_BUFFERS_MAX ? request.count : V4L2_BUFFERS_MAX;
    for (unsigned i = 0; i < camera->count; i++) {
        struct v4l2_buffer buffer = { .index = i, .type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
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
        struct v4l2_buffer buffer = { .index = i, .type = V4L2_BUF_TYPE_VIDEO_CAPTURE,
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
static int v4l2_start(struct v4l2_camera *camera)
{
    enum v4l2_buf_type type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    if (xioctl(camera->fd, VIDIOC_STREAMON, &type) < 0) {
        fprintf(stderr, "%s: %s: VIDIOC_STREAMON failed: %s\n", program, camera->path, strerror(errno));
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
    if (bytes < (size_t)stride * (height - 1) + width * (camera->format == V4L2_PIX_FMT_YUYV ? 2 :
                                                          camera->format == V4L2_PIX_FMT_GREY ? 1 : 3))
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
            case V4L2_PIX_FMT_RGB24:
                memcpy(out, row + x * 3, 3);
                break;
            case V4L2_PIX_FMT_BGR24:
                out[0] = row[x * 3 + 2], out[1] = row[x * 3 + 1], out[2] = row[x * 3];
                break;
            default:                          /* GREY */
                out[0] = out[1] = out[2] = row[x];
                break;
            }
        }
    }
    return true;
}

/* The next frame: poll, DQBUF, the buffer converted into FRAME. The buffer
 * stays the loop's until v4l2_requeue. True when a whole frame came. */
static bool v4l2_observe(struct v4l2_camera *camera, unsigned char *frame, struct frame_info *info)
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
                    ? buffer.sequence - camera->next_sequence : 0;
    camera->next_sequence = buffer.sequence + 1;
    camera->sequenced = true;
    if (buffer.index >= camera->count || (buffer.flags & V4L2_BUF_FLAG_ERROR))
        return false;
    return v4l2_convert(camera, camera->buffers[buffer.index].start,
                        buffer.bytesused ? buffer.bytesused : camera->buffers[buffer.index].length,
                        frame);
}

/* The buffer of INFO back to the driver; false when it refused it. */
static bool v4l2_requeue(struct v4l2_camera *camera, struct frame_info *info)
{
    if (info->buffer < 0)
        return true;
    struct v4l2_buffer buffer = { .index = (uint32_t)info->buffer,
                                  .type = V4L2_BUF_TYPE_VIDEO_CAPTURE, .memory = V4L2_MEMORY_MMAP };
    info->buffer = -1;
    if (xioctl(camera->fd, VIDIOC_QBUF, &buffer) == 0)
        return true;
    fprintf(stderr, "%s: %s: VIDIOC_QBUF failed: %s\n", program, camera->path, strerror(errno));
    return false;
}

struct serial_actuator {
    const char *path;
    int fd;
    char pending[256];               /* bytes read after the last reply's newline */
    size_t pending_length;
};

static int serial_open(struct serial_actuator *serial, const char *path)
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
static int serial_act(struct serial_actuator *serial, int i, int action, char *reply, size_t size,
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
            serial->pending_length = 0;       /* a line too long: dropped */
        struct pollfd wait = { .fd = serial->fd, .events = POLLIN };
        int ready = poll(&wait, 1, TIMEOUT_MS);
        if (ready < 0 && errno == EINTR)
            continue;
        ssize_t got = ready > 0 ? read(serial->fd, serial->pending + serial->pending_length,
                                       sizeof serial->pending - serial->pending_length) : -1;
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            fprintf(stderr, "%s: %s: no reply to '%.*s'\n", program, serial->path, length - 1, command);
            return 1;
        }
        serial->pending_length += (size_t)got;
    }
    char expected[64];
    snprintf(expected, sizeof expected, "ok %d %d", i, action);
    return strcmp(reply, expected) != 0;
}

static void serial_close(struct serial_actuator *serial)
{
    if (serial->fd >= 0)
        close(serial->fd);
    serial->fd = -1;
}

/* ---- the agent: inference on the GPU (driver API) or the CPU ------------ */

#ifdef HARNESS_HAVE_IMAGE
extern const unsigned char harness_image[]; /* nvcc's fat binary, embedded at build time */
#endif

/* The driver entry points the harness uses, taken from the dlopen'ed
 * libcuda.so.1 with dlsym, the way programs that load CUDA lazily do. */
struct driver {
    CUresult (*cuInit)(unsigned);
    CUresult (*cuDeviceGet)(CUdevice *, int);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*cuCtxSetCurrent)(CUcontext);
    CUresult (*cuModuleLoadData)(CUmodule *, const void *);
    CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*cuStreamCreate)(CUstream *, unsigned);
    CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
    CUresult (*cuMemAllocHost)(void **, size_t);
    CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                               unsigned, unsigned, CUstream, void **, void **);
    CUresult (*cuStreamSynchronize)(CUstream);
};

struct agent {
    bool gpu;
    int width, height;
    uint32_t *convolved; /* CPU path */
    struct driver cu;    /* GPU path */
    CUstream stream;
    CUfunction convolve, argmax;
    CUdeviceptr frame, output, action;
    int *host_action; /* pinned, so the copy back can be asynchronous */
};

/* Sets up the GPU path; on failure says why in REASON and returns false. */
static bool agent_open_gpu(struct agent *agent, char *reason, size_t size)
{
#ifndef HARNESS_HAVE_IMAGE
    snprintf(reason, size, "built without nvcc, so there are no GPU kernels");
    return false;
#else
    void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        snprintf(reason, size, "no CUDA driver: libcuda.so.1 not found");
        return false;
    }
    struct driver *cu = &agent->cu;
    const struct { void *slot; const char *name; } entries[] = {
        { &cu->cuInit, "cuInit" },
        { &cu->cuDeviceGet, "cuDeviceGet" },
        { &cu->cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain" },
        { &cu->cuCtxSetCurrent, "cuCtxSetCurrent" },
        { &cu->cuModuleLoadData, "cuModuleLoadData" },
        { &cu->cuModuleGetFunction, "cuModuleGetFunction" },
        { &cu->cuStreamCreate, "cuStreamCreate" },
        { &cu->cuMemAlloc, "cuMemAlloc_v2" },
        { &cu->cuMemAllocHost, "cuMemAllocHost_v2" },
        { &cu->cuMemcpyHtoD, "cuMemcpyHtoD_v2" },
        { &cu->cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2" },
        { &cu->cuLaunchKernel, "cuLaunchKernel" },
        { &cu->cuStreamSynchronize, "cuStreamSynchronize" },
    };
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        void *entry = dlsym(library, entries[i].name);
        if (!entry) {
            snprintf(reason, size, "the CUDA driver has no %s", entries[i].name);
            return false;
        }
        memcpy(entries[i].slot, &entry, sizeof entry);
    }
    CUresult result;
    CUdevice device;
    CUcontext context;
    CUmodule module;
    size_t pixels = (size_t)agent->width * agent->height;
    const char *step;
    if ((step = "cuInit", result = cu->cuInit(0)) ||
        (step = "cuDeviceGet", result = cu->cuDeviceGet(&device, 0)) ||
        (step = "cuDevicePrimaryCtxRetain", result = cu->cuDevicePrimaryCtxRetain(&context, device)) ||
        (step = "cuCtxSetCurrent", result = cu->cuCtxSetCurrent(context)) ||
        (step = "cuModuleLoadData", result = cu->cuModuleLoadData(&module, harness_image)) ||
        (step = "cuModuleGetFunction",
         result = cu->cuModuleGetFunction(&agent->convolve, module, "harness_convolve")) ||
        (result = cu->cuModuleGetFunction(&agent->argmax, module, "harness_cell_argmax")) ||
        /* A blocking stream: it waits for the synchronous upload on the legacy stream. */
        (step = "cuStreamCreate", result = cu->cuStreamCreate(&agent->stream, CU_STREAM_DEFAULT)) ||
        (step = "cuMemAlloc", result = cu->cuMemAlloc(&agent->frame, pixels * 3)) ||
        (result = cu->cuMemAlloc(&agent->output, pixels * sizeof(uint32_t))) ||
        (result = cu->cuMemAlloc(&agent->action, sizeof(int))) ||
        (step = "cuMemAllocHost",
         result = cu->cuMemAllocHost((void **)&agent->host_action, sizeof(int)))) {
        snprintf(reason, size, "%s failed with CUDA error %d", step, (int)result);
        return false;
    }
    return true;
#endif
}

static int agent_open(struct agent *agent, const struct options *o)
{
    memset(agent, 0, sizeof *agent);
    agent->width = o->width;
    agent->height = o->height;
    char reason[160] = "--inference=cpu";
    if (o->inference != INFER_CPU && agent_open_gpu(agent, reason, sizeof reason)) {
        agent->gpu = true;
        return 0;
    }
    if (o->inference == INFER_GPU) {
        fprintf(stderr, "%s: no GPU inference: %s\n", program, reason);
        return -1;
    }
    if (o->inference == INFER_AUTO)
        fprintf(stderr, "%s: no GPU (%s); inference runs on the CPU\n", program, reason);
    agent->convolved = malloc((size_t)o->width * o->height * sizeof(uint32_t));
    return agent->convolved ? 0 : -1;
}

/* The action for FRAME, or -1 when the GPU failed. */
static int agent_infer(struct agent *agent, const unsigned char *frame)
{
    int width = agent->width, height = agent->height;
    if (!agent->gpu) {
        harness_convolve(frame, agent->convolved, width, height);
        return harness_cell_argmax(agent->convolved, width, height);
    }
    const struct driver *cu = &agent->cu;
    void *convolve_args[] = { &agent->frame, &agent->output, &width, &height };
    void *argmax_args[] = { &agent->output, &agent->action, &width, &height };
    /* Upload from the pageable frame buffer, as a camera loop typically does. */
    if (cu->cuMemcpyHtoD(agent->frame, frame, (size_t)width * height * 3) ||
        cu->cuLaunchKernel(agent->convolve, (unsigned)(width + 15) / 16,
                           (unsigned)(height + 15) / 16, 1, 16, 16, 1, 0, agent->stream,
                           convolve_args, NULL) ||
        cu->cuLaunchKernel(agent->argmax, 1, 1, 1, HARNESS_CELLS * 16, 1, 1, 0, agent->stream,
                           argmax_args, NULL) ||
        cu->cuMemcpyDtoHAsync(agent->host_action, agent->action, sizeof(int), agent->stream) ||
        cu->cuStreamSynchronize(agent->stream))
        return -1;
    return *agent->host_action;
}

/* ---- the GUI: the frame and the chosen cell in an X11 window ------------- */

struct gui {
    Display *display;
    Window window;
    GC gc;
    XImage *image;
    XShmSegmentInfo shm;
    bool use_shm;
    Atom delete_window;
    int scale, width, height;
    int shift[3];
    unsigned long white;
};

static bool shm_refused;
static int note_shm_error(Display *display, XErrorEvent *event)
{
    (void)display;
    (void)event;
    shm_refused = true;
    return 0;
}

static int mask_shift(unsigned long mask)
{
    int shift = 0;
    while (mask && !(mask & 1)) {
        mask >>= 1;
        shift++;
    }
    /* An 8-bit channel sits in the top 8 bits of the mask. */
    int bits = 0;
    while (mask & 1) {
        mask >>= 1;
        bits++;
    }
    return shift + bits - 8;
}

static bool gui_open(struct gui *gui, const struct options *o)
{
    memset(gui, 0, sizeof *gui);
    gui->display = XOpenDisplay(NULL);
    if (!gui->display) {
        fprintf(stderr, "%s: cannot open display '%s'; running without the GUI\n", program,
                getenv("DISPLAY") ? getenv("DISPLAY") : "");
        return false;
    }
    int screen = DefaultScreen(gui->display);
    Visual *visual = DefaultVisual(gui->display, screen);
    int depth = DefaultDepth(gui->display, screen);
    if (depth < 24 || visual->class != TrueColor) {
        fprintf(stderr, "%s: the display is not 24-bit TrueColor; running without the GUI\n",
                program);
        XCloseDisplay(gui->display);
        return false;
    }
    gui->shift[0] = mask_shift(visual->red_mask);
    gui->shift[1] = mask_shift(visual->green_mask);
    gui->shift[2] = mask_shift(visual->blue_mask);
    gui->scale = o->width >= 320 ? 1 : (320 + o->width - 1) / o->width;
    gui->width = o->width * gui->scale;
    gui->height = o->height * gui->scale;
    gui->white = WhitePixel(gui->display, screen);
    gui->window = XCreateSimpleWindow(gui->display, RootWindow(gui->display, screen), 0, 0,
                                      (unsigned)gui->width, (unsigned)gui->height, 0,
                                      BlackPixel(gui->display, screen),
                                      BlackPixel(gui->display, screen));
    XStoreName(gui->display, gui->window, "harness_physical");
    gui->delete_window = XInternAtom(gui->display, "WM_DELETE_WINDOW", False);
    XSetWMProtocols(gui->display, gui->window, &gui->delete_window, 1);
    XSelectInput(gui->display, gui->window, StructureNotifyMask);
    gui->gc = XCreateGC(gui->display, gui->window, 0, NULL);
    XMapWindow(gui->display, gui->window);

    /* MIT-SHM when the server offers it and can attach our segment (it cannot
     * over a forwarded or remote display); XPutImage otherwise. */
    if (XShmQueryExtension(gui->display)) {
        gui->image = XShmCreateImage(gui->display, visual, (unsigned)depth, ZPixmap, NULL,
                                     &gui->shm, (unsigned)gui->width, (unsigned)gui->height);
        if (gui->image) {
            gui->shm.shmid = shmget(IPC_PRIVATE,
                                    (size_t)gui->image->bytes_per_line * gui->image->height,
                                    IPC_CREAT | 0600);
            gui->shm.shmaddr = gui->shm.shmid < 0 ? (char *)-1 : shmat(gui->shm.shmid, NULL, 0);
            if (gui->shm.shmaddr != (char *)-1) {
                gui->image->data = gui->shm.shmaddr;
                gui->shm.readOnly = False;
                XSync(gui->display, False);
                int (*previous)(Display *, XErrorEvent *) = XSetErrorHandler(note_shm_error);
                shm_refused = false;
                XShmAttach(gui->display, &gui->shm);
                XSync(gui->display, False);
                XSetErrorHandler(previous);
                gui->use_shm = !shm_refused;
            }
            if (gui->shm.shmid >= 0)
                shmctl(gui->shm.shmid, IPC_RMID, NULL); /* freed once both sides detach */
            if (!gui->use_shm) {
                if (gui->shm.shmaddr != (char *)-1)
                    shmdt(gui->shm.shmaddr);
                gui->image->data = NULL;
                XDestroyImage(gui->image);
                gui->image = NULL;
            }
        }
    }
    if (!gui->use_shm) {
        char *pixels = malloc((size_t)gui->width * gui->height * 4);
        gui->image = XCreateImage(gui->display, visual, (unsigned)depth, ZPixmap, 0, pixels,
                                  (unsigned)gui->width, (unsigned)gui->height, 32, 0);
    }
    return true;
}

/* Returns false when the user closed the window. */
static bool gui_show(struct gui *gui, const unsigned char *frame, int width, int index, int action)
{
    XImage *image = gui->image;
    for (int y = 0; y < gui->height; y++) {
        uint32_t *row = (uint32_t *)(image->data + (size_t)y * image->bytes_per_line);
        const unsigned char *source = frame + (size_t)(y / gui->scale) * width * 3;
        for (int x = 0; x < gui->width; x++) {
            const unsigned char *p = source + (size_t)(x / gui->scale) * 3;
            row[x] = (uint32_t)p[0] << gui->shift[0] | (uint32_t)p[1] << gui->shift[1] |
                     (uint32_t)p[2] << gui->shift[2];
        }
    }
    if (gui->use_shm)
        XShmPutImage(gui->display, gui->window, gui->gc, image, 0, 0, 0, 0, (unsigned)gui->width,
                     (unsigned)gui->height, False);
    else
        XPutImage(gui->display, gui->window, gui->gc, image, 0, 0, 0, 0, (unsigned)gui->width,
                  (unsigned)gui->height);
    int cell_w = gui->width / HARNESS_GRID, cell_h = gui->height / HARNESS_GRID;
    XSetForeground(gui->display, gui->gc, gui->white);
    XDrawRectangle(gui->display, gui->window, gui->gc, (action % HARNESS_GRID) * cell_w,
                   (action / HARNESS_GRID) * cell_h, (unsigned)cell_w - 1, (unsigned)cell_h - 1);
    char caption[64];
    int length = snprintf(caption, sizeof caption, "frame %d  action %d", index, action);
    XDrawString(gui->display, gui->window, gui->gc, 4, 12, caption, length);
    /* The server reads a shared image after the request: wait for it before
     * the next frame overwrites it. Without SHM, flushing is enough. */
    if (gui->use_shm)
        XSync(gui->display, False);
    else
        XFlush(gui->display);
    bool open = true;
    while (XPending(gui->display)) {
        XEvent event;
        XNextEvent(gui->display, &event);
        if (event.type == ClientMessage &&
            (Atom)event.xclient.data.l[0] == gui->delete_window)
            open = false;
    }
    return open;
}

static void gui_close(struct gui *gui)
{
    if (gui->use_shm) {
        XShmDetach(gui->display, &gui->shm);
        XSync(gui->display, False);
        shmdt(gui->shm.shmaddr);
        gui->image->data = NULL;
    }
    XDestroyImage(gui->image);
    XFreeGC(gui->display, gui->gc);
    XDestroyWindow(gui->display, gui->window);
    XCloseDisplay(gui->display);
}

/* ---- the loop ----------------------------------------------------------- */

static uint32_t crc_table[256];

static void crc_init(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[n] = c;
    }
}

/* CRC-32 as zlib computes it, chained: crc32(data, previous). */
static uint32_t crc32_update(uint32_t crc, const unsigned char *data, size_t length)
{
    crc = ~crc;
    for (size_t i = 0; i < length; i++)
        crc = crc_table[(crc ^ data[i]) & 0xff] ^ (crc >> 8);
    return ~crc;
}

/* With --threads, the capture thread does act + observe and hands each frame
 * to the main thread, which hands the chosen action back. */
struct mailbox {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int frame_ready;  /* index of the frame waiting for the main thread, or -1 */
    bool frame_whole;
    int action_ready; /* index of the frame whose action is waiting, or -1 */
    int action;
    int errors;
    bool quit;
};

struct loop {
    struct options *o;
    struct env env;
    struct v4l2_camera camera;     /* --camera v4l2:PATH */
    struct serial_actuator serial; /* --actuator serial:PATH */
    struct frame_info info[2];     /* frame i's in info[i % 2] */
    struct agent agent;
    struct gui gui;
    bool gui_on;
    unsigned char *frames[2]; /* frame i is in frames[i % 2] */
    struct mailbox box;
};

/* The USB act for frame I (the action of frame I-1), then observe: from the
 * V4L2 device or over USB. Adds to *ERRORS; true when a whole frame came. */
static bool act_and_observe(struct loop *loop, int i, int action, unsigned char *frame,
                            struct frame_info *info, int *errors)
{
    const struct options *o = loop->o;
    *info = (struct frame_info){ .buffer = -1 };
    if (!o->actuator) {
        *errors += env_act(&loop->env, i, action);
        info->act_ns = loop->env.acted_ns;
        info->sent = action;
    }
    if (!o->camera)
        return env_observe(&loop->env, frame, errors);
    bool whole_frame = v4l2_observe(&loop->camera, frame, info);
    if (!whole_frame)
        ++*errors;
    return whole_frame;
}

static void *capture_thread(void *argument)
{
    struct loop *loop = argument;
    struct mailbox *box = &loop->box;
    int action = 0;
    for (int i = 0; i < loop->o->frames; i++) {
        int errors = 0;
        struct frame_info *info = &loop->info[i % 2];
        bool whole_frame = act_and_observe(loop, i, action, loop->frames[i % 2], info, &errors);
        /* the frame is copied: its buffer goes back to the driver at once */
        if (loop->o->camera && !v4l2_requeue(&loop->camera, info))
            errors++;
        pthread_mutex_lock(&box->lock);
        box->errors += errors;
        box->frame_ready = i;
        box->frame_whole = whole_frame;
        pthread_cond_broadcast(&box->changed);
        while (box->action_ready != i && !box->quit)
            pthread_cond_wait(&box->changed, &box->lock);
        action = box->action;
        bool quit = box->quit;
        pthread_mutex_unlock(&box->lock);
        if (quit)
            break;
    }
    return NULL;
}

static int64_t monotonic_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* --log: what frame I did. */
static void log_frame(const struct options *o, int i, const struct frame_info *info, int action,
                      const char *reply)
{
    printf("frame %d", i);
    if (info->v4l2)
        printf(" seq=%" PRIu32 " capture_ns=%" PRId64 " dequeue_ns=%" PRId64 " dropped=%" PRIu32,
               info->sequence, info->capture_ns, info->dequeue_ns, info->dropped);
    printf(" act_ns=%" PRId64 " sent=%d", info->act_ns, info->sent);
    if (o->actuator)
        printf(" reply=\"%s\"", reply);
    printf(" action=%d\n", action);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void pace(double start, double fps, int i)
{
    if (fps <= 0)
        return;
    double deadline = start + (double)(i + 1) / fps;
    struct timespec t = { (time_t)deadline, (long)((deadline - (double)(time_t)deadline) * 1e9) };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR)
        continue;
}

static void rig_close(struct loop *loop)
{
    if (loop->o->camera)
        v4l2_close(&loop->camera);
    if (loop->o->actuator)
        serial_close(&loop->serial);
}

int main(int argc, char **argv)
{
    struct options o;
    struct loop loop = { .o = &o };
    parse(argc, argv, &o);
    crc_init();
    /* The camera first: the frame's size is the one its driver gives. Its stream
     * starts last, when inference and the window are ready. */
    loop.camera.fd = loop.serial.fd = -1;
    bool use_usb = !o.camera || !o.actuator;
    if (o.camera && v4l2_open(&loop.camera, &o) < 0)
        return 1;
    if (o.actuator && serial_open(&loop.serial, o.actuator) < 0) {
        rig_close(&loop);
        return 1;
    }
    size_t frame_bytes = (size_t)o.width * o.height * 3;
    loop.frames[0] = malloc(frame_bytes);
    loop.frames[1] = malloc(frame_bytes);
    char *actions = calloc((size_t)o.frames + 1, 1);
    if (!loop.frames[0] || !loop.frames[1] || !actions || (use_usb && env_open(&loop.env, &o) < 0)) {
        rig_close(&loop);
        free(actions);
        free(loop.frames[0]);
        free(loop.frames[1]);
        return 1;
    }
    if (agent_open(&loop.agent, &o) < 0) {
        if (use_usb)
            env_close(&loop.env);
        rig_close(&loop);
        free(actions);
        free(loop.frames[0]);
        free(loop.frames[1]);
        return 1;
    }
    if (o.async && stream_start(&loop.env, o.queue) < 0) {
        fprintf(stderr, "%s: cannot start streaming\n", program);
        return 1;
    }
    loop.gui_on = o.gui && gui_open(&loop.gui, &o);
    if (o.camera && v4l2_start(&loop.camera) < 0) {
        rig_close(&loop);
        return 1;
    }

    printf("%s: %d frames of %dx%d from ", program, o.frames, o.width, o.height);
    if (o.camera) {
        char name[5];
        fourcc_text(loop.camera.format, name);
        printf("v4l2:%s (%s, %u buffers)", o.camera, name, loop.camera.count);
    } else {
        printf("%04x:%04x; usb=", o.vendor, o.product);
        if (o.async)
            printf("async (%d in flight)", o.queue);
        else
            printf("sync");
    }
    if (o.actuator)
        printf("; actuator=serial:%s", o.actuator);
    else if (o.camera)
        printf("; actuator=%04x:%04x", o.vendor, o.product);
    printf("; capture on %s; inference=%s; gui=%s\n",
           o.threads ? "its own thread" : "the main thread", loop.agent.gpu ? "gpu" : "cpu",
           !loop.gui_on ? "off" : loop.gui.use_shm ? "xshm" : "xputimage");
    fflush(stdout);

    struct mailbox *box = &loop.box;
    pthread_mutex_init(&box->lock, NULL);
    pthread_cond_init(&box->changed, NULL);
    box->frame_ready = box->action_ready = -1;
    pthread_t capture;
    if (o.threads && pthread_create(&capture, NULL, capture_thread, &loop)) {
        fprintf(stderr, "%s: cannot start the capture thread\n", program);
        return 1;
    }

    uint32_t checksum = 0;
    int errors = 0, action = 0, done = 0;
    double start = now();
    for (int i = 0; i < o.frames; i++) {
        bool whole_frame;
        unsigned char *frame = loop.frames[i % 2];
        struct frame_info *info = &loop.info[i % 2];
        if (o.threads) {
            pthread_mutex_lock(&box->lock);
            while (box->frame_ready != i)
                pthread_cond_wait(&box->changed, &box->lock);
            whole_frame = box->frame_whole;
            pthread_mutex_unlock(&box->lock);
        } else {
            whole_frame = act_and_observe(&loop, i, action, frame, info, &errors);
        }
        bool go_on = true;
        if (whole_frame) {
            checksum = crc32_update(checksum, frame, frame_bytes);
            int chosen = agent_infer(&loop.agent, frame);
            if (chosen < 0 || chosen >= HARNESS_CELLS)
                errors++;
            else
                action = chosen;
        }
        /* The serial actuator acts on this frame's action, then its buffer goes back. */
        char reply[128] = "";
        if (o.actuator) {
            errors += serial_act(&loop.serial, i, action, reply, sizeof reply, &info->act_ns);
            info->sent = action;
        }
        if (o.camera && !o.threads && !v4l2_requeue(&loop.camera, info))
            errors++;
        if (o.log)
            log_frame(&o, i, info, action, reply);
        /* The action goes back; the capture thread fills the other buffer while we render. */
        if (o.threads) {
            pthread_mutex_lock(&box->lock);
            box->action = action;
            box->action_ready = i;
            pthread_cond_broadcast(&box->changed);
            pthread_mutex_unlock(&box->lock);
        }
        actions[i] = "0123456789abcdef"[action];
        if (loop.gui_on && whole_frame)
            go_on = gui_show(&loop.gui, frame, o.width, i, action);
        done = i + 1;
        if (!go_on)
            break;
        pace(start, o.fps, i);
    }
    double seconds = now() - start;
    if (o.threads) {
        pthread_mutex_lock(&box->lock);
        box->quit = true;
        pthread_cond_broadcast(&box->changed);
        pthread_mutex_unlock(&box->lock);
        pthread_join(capture, NULL);
        errors += box->errors;
    }

    printf("frames=%d errors=%d checksum=%08x actions=%s\n", done, errors, checksum, actions);
    printf("fps=%.1f\n", seconds > 0 ? done / seconds : 0.0);
    if (loop.gui_on)
        gui_close(&loop.gui);
    if (use_usb)
        env_close(&loop.env);
    rig_close(&loop);
    free(loop.agent.convolved);
    free(actions);
    free(loop.frames[0]);
    free(loop.frames[1]);
    return errors ? 3 : 0;
}
