/* The trace schema: what the library writes and the nvtxshim command reads
 * back, spelled once. Domains, their categories and colours, the frame's name,
 * and the kernel probe's figures (args keys and the mark's text). Included by
 * the library and by cli/; it needs no NVTX or CUDA header. */
#ifndef NVS_SCHEMA_H
#define NVS_SCHEMA_H

#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ---- domains ----------------------------------------------------------------- */

enum nvs_domain {
    NVS_DOMAIN_USB,
    NVS_DOMAIN_X11,
    NVS_DOMAIN_CUDA,
    NVS_DOMAIN_SHIM,
    NVS_DOMAIN_KERNEL,
    NVS_DOMAIN_V4L2,
    NVS_DOMAIN_SERIAL,
    NVS_DOMAIN_HID,
    NVS_DOMAIN_I2C,
    NVS_DOMAIN_COUNT
};

static inline const char *nvs_domain_name(enum nvs_domain domain)
{
    switch (domain) {
    case NVS_DOMAIN_USB: return "usb";
    case NVS_DOMAIN_X11: return "x11";
    case NVS_DOMAIN_CUDA: return "cuda";
    case NVS_DOMAIN_SHIM: return "nvtxshim";
    case NVS_DOMAIN_KERNEL: return "kernel";
    case NVS_DOMAIN_V4L2: return "v4l2";
    case NVS_DOMAIN_SERIAL: return "serial";
    case NVS_DOMAIN_HID: return "hid";
    case NVS_DOMAIN_I2C: return "i2c";
    case NVS_DOMAIN_COUNT: break;
    }
    return NULL;
}

/* ---- categories, numbered per domain ----------------------------------------- */

enum nvs_usb_category {
    NVS_USB_TRANSFER = 1, /* data moved */
    NVS_USB_EVENTS = 2,   /* event handling */
    NVS_USB_CALLBACK = 3, /* the program's completion callback */
    NVS_USB_WARNING = 4,  /* marks: failed transfers and calls */
    NVS_USB_DEVICE = 5,   /* device management: open, configuration, interfaces, reset */
};

enum nvs_x11_category {
    NVS_X11_DRAW = 1,       /* image data to or from the server */
    NVS_X11_FLUSH = 2,      /* requests written out */
    NVS_X11_ROUND_TRIP = 3, /* waiting for the server's reply */
    NVS_X11_WAIT = 4,       /* waiting for events */
    NVS_X11_SWAP = 5,       /* GLX/EGL buffer swaps, Vulkan presents */
    NVS_X11_WARNING = 6,    /* marks: a remote display, no MIT-SHM */
    NVS_X11_UPLOAD = 7,     /* GL texture uploads from the program's memory */
};

enum nvs_cuda_category {
    NVS_CUDA_COPY = 1,   /* memory copied */
    NVS_CUDA_WAIT = 2,   /* the CPU waits for the GPU: stream, context, event */
    NVS_CUDA_LAUNCH = 3, /* a kernel launched */
};

/* Device files (devices/: io.c for the I/O and waits, a file per kind for
 * its ioctls). The camera's ranges:
 *   "VIDIOC_DQBUF /dev/video0 640x480 YUYV buf=2"   capture, payload bytesused
 *   "read /dev/video0 614400B"                       capture (read() I/O)
 *   "VIDIOC_QBUF /dev/video0 buf=2", "VIDIOC_S_FMT /dev/video0 640x480 YUYV",
 *   "VIDIOC_REQBUFS /dev/video0 4 mmap", "VIDIOC_STREAMON /dev/video0"   control
 *   "poll /dev/video0" (select, epoll_wait...)       wait for a frame
 *   "frame age /dev/video0"                          from the buffer's capture
 *       timestamp to its dequeue; payload: the age in ns, so that the capture
 *       time is the range's end minus its payload in every reader (under nsys,
 *       where NVTX cannot begin a range in the past, the range sits at the
 *       dequeue and only the payload tells the age)
 *   mark "dropped N frames /dev/video0 at seq=S"     warning, payload N */
enum nvs_v4l2_category {
    NVS_V4L2_CAPTURE = 1,   /* a frame handed to the program: DQBUF, read() */
    NVS_V4L2_CONTROL = 2,   /* QBUF, STREAMON/OFF, S_FMT, REQBUFS */
    NVS_V4L2_WAIT = 3,      /* poll/select/epoll_wait for a frame */
    NVS_V4L2_WARNING = 4,   /* marks: dropped frames */
    NVS_V4L2_FRAME_AGE = 5, /* capture timestamp -> dequeue */
};
/* Serial ports, HID nodes and I2C nodes share their categories. Their ranges:
 *   "read /dev/ttyACM0 64B", "write /dev/ttyACM0 12B" (readv, writev too),
 *   payload the bytes asked for (the trace file: the bytes moved when fewer);
 *   "tcdrain /dev/ttyACM0"; "poll /dev/ttyACM0" (select, epoll_wait...).
 * An I2C node's (devices/i2c.c), each with the chip's address, payload the
 * bytes moved (0 for a transfer that failed, which has a red mark):
 *   "I2C_RDWR /dev/i2c-1 0x48 W1 R2"   one combined transfer, its messages in
 *                                      order (W: to the chip, R: from it)
 *   "I2C_SMBUS /dev/i2c-1 0x48 R word_data cmd=0x00"   an SMBus command
 *   "read /dev/i2c-1 0x48 2B", "write /dev/i2c-1 0x48 1B"   to the address
 *                                      I2C_SLAVE set
 * read when the transfer brought bytes in, write when it only took them out,
 * control when it failed (named after the node, "I2C_RDWR /dev/i2c-1"). */
enum nvs_tty_category {
    NVS_TTY_READ = 1,  /* bytes in from the device */
    NVS_TTY_WRITE = 2, /* bytes out: an actuation */
    NVS_TTY_WAIT = 3,  /* poll/select/epoll_wait before a read */
    NVS_TTY_WARNING = 4,
    NVS_TTY_DRAIN = 5,   /* tcdrain: waiting for the bytes to leave */
    NVS_TTY_CONTROL = 6, /* a HID node's descriptor, name or info asked for */
};
/* Raw usbfs ioctls (USBDEVFS_*) are in domain usb, with its categories and
 * ranges named like libusb's: "USBDEVFS_BULK ep=0x02 OUT 64B",
 * "USBDEVFS_CONTROL type=0x40 req=0xa0 val=0xe600 OUT 1B",
 * "USBDEVFS_SUBMITURB ep=0x81 BULK IN 512B" (async: from the submission to
 * the reap that returns it), "USBDEVFS_REAPURB" (a blocking reap). */

enum nvs_shim_category {
    NVS_SHIM_FRAME = 1,   /* frame ranges */
    NVS_SHIM_WARNING = 4, /* marks: frames over budget */
};

/* Categories run from 1 to below this in every domain. */
#define NVS_CATEGORY_LIMIT 8u

/* The timeline's name of CATEGORY in DOMAIN; NULL where it has none. */
static inline const char *nvs_category_name(enum nvs_domain domain, uint32_t category)
{
    switch (domain) {
    case NVS_DOMAIN_USB:
        switch ((enum nvs_usb_category)category) {
        case NVS_USB_TRANSFER: return "transfer";
        case NVS_USB_EVENTS: return "events";
        case NVS_USB_CALLBACK: return "callback";
        case NVS_USB_WARNING: return "warning";
        case NVS_USB_DEVICE: return "device";
        }
        return NULL;
    case NVS_DOMAIN_X11:
        switch ((enum nvs_x11_category)category) {
        case NVS_X11_DRAW: return "draw";
        case NVS_X11_FLUSH: return "flush";
        case NVS_X11_ROUND_TRIP: return "round trip";
        case NVS_X11_WAIT: return "event wait";
        case NVS_X11_SWAP: return "swap";
        case NVS_X11_WARNING: return "warning";
        case NVS_X11_UPLOAD: return "upload";
        }
        return NULL;
    case NVS_DOMAIN_CUDA:
        switch ((enum nvs_cuda_category)category) {
        case NVS_CUDA_COPY: return "copy";
        case NVS_CUDA_WAIT: return "wait";
        case NVS_CUDA_LAUNCH: return "launch";
        }
        return NULL;
    case NVS_DOMAIN_SHIM:
        switch ((enum nvs_shim_category)category) {
        case NVS_SHIM_FRAME: return "frame";
        case NVS_SHIM_WARNING: return "warning";
        }
        return NULL;
    case NVS_DOMAIN_V4L2:
        switch ((enum nvs_v4l2_category)category) {
        case NVS_V4L2_CAPTURE: return "capture";
        case NVS_V4L2_CONTROL: return "control";
        case NVS_V4L2_WAIT: return "wait";
        case NVS_V4L2_WARNING: return "warning";
        case NVS_V4L2_FRAME_AGE: return "frame age";
        }
        return NULL;
    case NVS_DOMAIN_SERIAL:
    case NVS_DOMAIN_HID:
    case NVS_DOMAIN_I2C:
        switch ((enum nvs_tty_category)category) {
        case NVS_TTY_READ: return "read";
        case NVS_TTY_WRITE: return "write";
        case NVS_TTY_WAIT: return "wait";
        case NVS_TTY_WARNING: return "warning";
        case NVS_TTY_DRAIN: return "drain";
        case NVS_TTY_CONTROL: return "control";
        }
        return NULL;
    case NVS_DOMAIN_KERNEL:
    case NVS_DOMAIN_COUNT: break;
    }
    return NULL;
}

/* ---- colours (ARGB) ------------------------------------------------------------ */

#define NVS_COLOR_USB 0xFF2E7D32u
#define NVS_COLOR_USB_EVENTS 0xFF81C784u
#define NVS_COLOR_USB_CALLBACK 0xFF00897Bu
#define NVS_COLOR_USB_DEVICE 0xFF9E9D24u
#define NVS_COLOR_X11_DRAW 0xFF1565C0u
#define NVS_COLOR_X11_FLUSH 0xFF42A5F5u
#define NVS_COLOR_X11_ROUND_TRIP 0xFFEF6C00u
#define NVS_COLOR_X11_WAIT 0xFF90CAF9u
#define NVS_COLOR_X11_SWAP 0xFF6A1B9Au
#define NVS_COLOR_X11_UPLOAD 0xFF00838Fu
#define NVS_COLOR_CUDA_COPY 0xFFF57C00u
#define NVS_COLOR_CUDA_PAGEABLE 0xFFD84315u /* a copy from pageable memory: a hidden stall */
#define NVS_COLOR_CUDA_WAIT 0xFF9E9D24u
#define NVS_COLOR_CUDA_LAUNCH 0xFF00ACC1u
#define NVS_COLOR_V4L2_CAPTURE 0xFF8E24AAu
#define NVS_COLOR_V4L2_CONTROL 0xFFBA68C8u
#define NVS_COLOR_V4L2_AGE 0xFFF8BBD0u
#define NVS_COLOR_TTY_READ 0xFF3949ABu
#define NVS_COLOR_TTY_WRITE 0xFF00695Cu
#define NVS_COLOR_DEVICE_WAIT 0xFFB0BEC5u
#define NVS_COLOR_FRAME 0xFF5E35B1u
#define NVS_COLOR_KERNEL 0xFF6D4C41u
#define NVS_COLOR_CAPTURE 0xFFC62828u
#define NVS_COLOR_ERROR 0xFFD50000u /* every warning mark */

/* The colour of a range of CATEGORY in DOMAIN (marks of a warning category: red). */
static inline uint32_t nvs_category_color(enum nvs_domain domain, uint32_t category)
{
    switch (domain) {
    case NVS_DOMAIN_USB:
        return category == NVS_USB_EVENTS  ? NVS_COLOR_USB_EVENTS
            : category == NVS_USB_CALLBACK ? NVS_COLOR_USB_CALLBACK
            : category == NVS_USB_DEVICE   ? NVS_COLOR_USB_DEVICE
            : category == NVS_USB_WARNING  ? NVS_COLOR_ERROR
                                           : NVS_COLOR_USB;
    case NVS_DOMAIN_X11:
        switch ((enum nvs_x11_category)category) {
        case NVS_X11_DRAW: return NVS_COLOR_X11_DRAW;
        case NVS_X11_FLUSH: return NVS_COLOR_X11_FLUSH;
        case NVS_X11_ROUND_TRIP: return NVS_COLOR_X11_ROUND_TRIP;
        case NVS_X11_WAIT: return NVS_COLOR_X11_WAIT;
        case NVS_X11_SWAP: return NVS_COLOR_X11_SWAP;
        case NVS_X11_WARNING: return NVS_COLOR_ERROR;
        case NVS_X11_UPLOAD: return NVS_COLOR_X11_UPLOAD;
        }
        return 0;
    case NVS_DOMAIN_CUDA:
        return category == NVS_CUDA_WAIT  ? NVS_COLOR_CUDA_WAIT
            : category == NVS_CUDA_LAUNCH ? NVS_COLOR_CUDA_LAUNCH
                                          : NVS_COLOR_CUDA_COPY;
    case NVS_DOMAIN_SHIM: return category == NVS_SHIM_WARNING ? NVS_COLOR_ERROR : NVS_COLOR_FRAME;
    case NVS_DOMAIN_KERNEL: return NVS_COLOR_KERNEL;
    case NVS_DOMAIN_V4L2:
        return category == NVS_V4L2_CAPTURE  ? NVS_COLOR_V4L2_CAPTURE
            : category == NVS_V4L2_WAIT      ? NVS_COLOR_DEVICE_WAIT
            : category == NVS_V4L2_WARNING   ? NVS_COLOR_ERROR
            : category == NVS_V4L2_FRAME_AGE ? NVS_COLOR_V4L2_AGE
                                             : NVS_COLOR_V4L2_CONTROL;
    case NVS_DOMAIN_SERIAL:
    case NVS_DOMAIN_HID:
    case NVS_DOMAIN_I2C:
        return category == NVS_TTY_WRITE                            ? NVS_COLOR_TTY_WRITE
            : category == NVS_TTY_WAIT || category == NVS_TTY_DRAIN ? NVS_COLOR_DEVICE_WAIT
            : category == NVS_TTY_WARNING                           ? NVS_COLOR_ERROR
            : category == NVS_TTY_CONTROL                           ? NVS_COLOR_V4L2_CONTROL
                                                                    : NVS_COLOR_TTY_READ;
    case NVS_DOMAIN_COUNT: break;
    }
    return 0;
}

/* The category of a range of domain cuda by its name (readers that have no
 * category, an nsys export among them): the API names the library gives its
 * waits and launches (the documented ones, hooks/cuda.def and cudart.def),
 * then whatever follows a space; anything else is a copy. */
static inline enum nvs_cuda_category nvs_cuda_category_of(const char *name)
{
    static const char *const waits[] = {
        "cuStreamSynchronize",   "cuCtxSynchronize",      "cuEventSynchronize",
        "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
    };
    static const char *const launches[] = {
        "cuLaunchKernel", "cuLaunchKernelEx", "cudaLaunchKernel",
        "cuGraphLaunch",  "cudaGraphLaunch",
    };
    size_t length = 0;
    while (name[length] && name[length] != ' ')
        length++;
    for (size_t i = 0; i < sizeof waits / sizeof waits[0]; i++)
        if (!strncmp(name, waits[i], length) && !waits[i][length])
            return NVS_CUDA_WAIT;
    for (size_t i = 0; i < sizeof launches / sizeof launches[0]; i++)
        if (!strncmp(name, launches[i], length) && !launches[i][length])
            return NVS_CUDA_LAUNCH;
    return NVS_CUDA_COPY;
}

/* ---- frames -------------------------------------------------------------------- */

/* Frame N is the start/end range "frame N" in domain nvtxshim, payload N. */
#define NVS_FRAME_PREFIX "frame "
/* The camera's frame age range's name, "frame age /dev/video0". */
#define NVS_FRAME_AGE_PREFIX "frame age "
/* The camera's mark for frames the driver dropped (a gap in the buffers'
 * sequence numbers): "dropped N frames /dev/video0 at seq=S", payload N. */
#define NVS_DROPPED_PREFIX "dropped "
/* A frame over NVTXSHIM_FRAME_BUDGET: a mark "over budget frame N: T ms > B ms",
 * T and B in ms with three decimals, T with six where three would print B. The
 * library writes it with nvs_over_budget_text and the report reads it back
 * with nvs_over_budget_read: the one spelling of the text. */
#define NVS_OVER_BUDGET_PREFIX "over budget frame "
#define NVS_OVER_BUDGET_TEXT_MAX 96

/* The mark of frame NUMBER, which took TOOK_NS against BUDGET_NS, into OUT
 * (NVS_OVER_BUDGET_TEXT_MAX bytes). */
static inline void nvs_over_budget_text(char *out, uint64_t number, uint64_t took_ns,
                                        uint64_t budget_ns)
{
    char took[32], budget[32];
    snprintf(took, sizeof took, "%.3f", (double)took_ns / 1e6);
    snprintf(budget, sizeof budget, "%.3f", (double)budget_ns / 1e6);
    if (!strcmp(took, budget))
        snprintf(took, sizeof took, "%.6f", (double)took_ns / 1e6);
    snprintf(out, NVS_OVER_BUDGET_TEXT_MAX, NVS_OVER_BUDGET_PREFIX "%" PRIu64 ": %s ms > %s ms",
             number, took, budget);
}

/* Whether TEXT is such a mark, whole; its budget in ns then. */
static inline bool nvs_over_budget_read(const char *text, int64_t *budget_ns)
{
    uint64_t number;
    double took, budget;
    int length = -1;
    if (strncmp(text, NVS_OVER_BUDGET_PREFIX, sizeof NVS_OVER_BUDGET_PREFIX - 1))
        return false;
    text += sizeof NVS_OVER_BUDGET_PREFIX - 1;
    if (sscanf(text, "%" SCNu64 ": %lf ms > %lf ms%n", &number, &took, &budget, &length) != 3 ||
        length < 0 || text[length] || !(budget > 0 && budget < 1e9))
        return false;
    *budget_ns = (int64_t)(budget * 1e6 + 0.5);
    return true;
}

/* ---- the kernel probe's figures ------------------------------------------------ */

/* Per frame, summed over the threads that made hooked calls in it. They are
 * written twice: as args of the frame's range (trace file) under these keys,
 * and as the text of a mark in domain kernel (the one form nsys keeps). */
enum nvs_kernel_figure {
    NVS_FIGURE_RUNNABLE_NS, /* off CPU but runnable: waiting for a CPU */
    NVS_FIGURE_BLOCKED_NS,  /* off CPU asleep */
    NVS_FIGURE_PREEMPTIONS,
    NVS_FIGURE_VOLUNTARY,
    NVS_FIGURE_MIGRATIONS,
    NVS_FIGURE_FAULTS,
    NVS_FIGURE_THREADS,
    NVS_FIGURE_URBS,
    NVS_FIGURE_URB_NS,
    NVS_FIGURE_COUNT
};

static inline const char *nvs_kernel_figure_key(enum nvs_kernel_figure figure)
{
    switch (figure) {
    case NVS_FIGURE_RUNNABLE_NS: return "offcpu_runnable_ns";
    case NVS_FIGURE_BLOCKED_NS: return "offcpu_blocked_ns";
    case NVS_FIGURE_PREEMPTIONS: return "offcpu_preemptions";
    case NVS_FIGURE_VOLUNTARY: return "offcpu_voluntary";
    case NVS_FIGURE_MIGRATIONS: return "offcpu_migrations";
    case NVS_FIGURE_FAULTS: return "offcpu_faults";
    case NVS_FIGURE_THREADS: return "offcpu_threads";
    case NVS_FIGURE_URBS: return "usb_urbs";
    case NVS_FIGURE_URB_NS: return "usb_urb_ns";
    case NVS_FIGURE_COUNT: break;
    }
    return NULL;
}

/* Numbers a range carries to its end (the kernel probe's figures of a frame, an
 * interval's), written as its args in the order given, under keys that live as
 * long as the program (these). */
#define NVS_TRACE_ARGS_MAX 10u /* numbers in the args of one end or interval */
struct nvs_trace_args {
    unsigned count;
    struct {
        const char *key;
        uint64_t value;
    } member[NVS_TRACE_ARGS_MAX];
};

/* The args of one long off-CPU interval of a thread (a range in domain kernel). */
#define NVS_ARG_OFFCPU_NS "offcpu_ns"
#define NVS_ARG_TID "tid"

/* One frame's figures, with a bit per figure that is there. */
struct nvs_kernel_figures {
    uint64_t value[NVS_FIGURE_COUNT];
    unsigned present;
};

/* The mark's text: "frame N: runnable 1.2 ms (3 preemptions), blocked 4.5 ms,
 * 6 faults[, 7 migrations][, 8 URBs 9.1 ms in the kernel]" (schema.c). */
int nvs_kernel_mark_format(char *out, size_t size, uint64_t frame,
                           const struct nvs_kernel_figures *figures);
/* Reads such a text back: the frame and the figures it shows (times to the
 * 0.1 ms it gives). False when TEXT is not one. */
bool nvs_kernel_mark_parse(const char *text, uint64_t *frame, struct nvs_kernel_figures *figures);

#endif
