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
 * still uses it. --log prints what each frame did. The summary's second line
 * does not depend on timing, so runs can be compared byte for byte; the third
 * line is the frame rate.
 *
 * This file is the options and the loop; harness.h lists the other parts, one
 * job to a file. */
#define _GNU_SOURCE
#include "harness.h"

const char *program = "harness_physical";

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
    *o = (struct options){
        .frames = 300, .width = 64, .height = 48, .queue = 4, .vendor = 0x1209, .product = 0x0001
    };
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            usage(0);
        else if (!strcmp(argv[i], "--async"))
            o->async = true;
        else if (!strcmp(argv[i], "--threads"))
            o->threads = true;
        else if (!strcmp(argv[i], "--log"))
            o->log = true;
        else if ((v = option_value(argc, argv, &i, "--camera"))) {
            if (!strcmp(v, "usb"))
                o->camera = NULL;
            else if (!strncmp(v, "v4l2:", 5) && v[5])
                o->camera = v + 5;
            else
                usage(2);
        } else if ((v = option_value(argc, argv, &i, "--actuator"))) {
            if (!strcmp(v, "usb"))
                o->actuator = NULL;
            else if (!strncmp(v, "serial:", 7) && v[7])
                o->actuator = v + 7;
            else
                usage(2);
        } else if ((v = option_value(argc, argv, &i, "--use_gui")))
            o->gui = whole(v, 0, 1);
        else if ((v = option_value(argc, argv, &i, "--frames")))
            o->frames = (int)whole(v, 1, 100000000);
        else if ((v = option_value(argc, argv, &i, "--queue")))
            o->queue = (int)whole(v, 1, 64);
        else if ((v = option_value(argc, argv, &i, "--width")))
            o->width = (int)whole(v, 16, 8192);
        else if ((v = option_value(argc, argv, &i, "--height")))
            o->height = (int)whole(v, 16, 8192);
        else if ((v = option_value(argc, argv, &i, "--fps"))) {
            char *end;
            o->fps = strtod(v, &end);
            if (*end || o->fps < 0)
                usage(2);
        } else if ((v = option_value(argc, argv, &i, "--device"))) {
            unsigned vendor, product;
            char extra;
            if (sscanf(v, "%x:%x%c", &vendor, &product, &extra) != 2 || vendor > 0xffff ||
                product > 0xffff)
                usage(2);
            o->vendor = (uint16_t)vendor;
            o->product = (uint16_t)product;
        } else if ((v = option_value(argc, argv, &i, "--inference"))) {
            if (!strcmp(v, "auto"))
                o->inference = INFER_AUTO;
            else if (!strcmp(v, "gpu"))
                o->inference = INFER_GPU;
            else if (!strcmp(v, "cpu"))
                o->inference = INFER_CPU;
            else
                usage(2);
        } else
            usage(2);
    }
    if (o->camera && o->async) {
        fprintf(stderr, "%s: --async streams the USB camera's frames; not with --camera v4l2\n",
                program);
        exit(2);
    }
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
    int frame_ready; /* index of the frame waiting for the main thread, or -1 */
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

int64_t monotonic_ns(void)
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
    if (!loop.frames[0] || !loop.frames[1] || !actions ||
        (use_usb && env_open(&loop.env, &o) < 0)) {
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
           !loop.gui_on           ? "off"
               : loop.gui.use_shm ? "xshm"
                                  : "xputimage");
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
