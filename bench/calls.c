/* The per-call benchmark: one hooked call of each kind, N times in a loop,
 * repeated R times in one process; prints nanoseconds per call for every
 * repeat. Linked against the sink libraries in build/bench/sink (functions
 * that return at once), so what a loop costs beyond the plain row is the
 * tracing in front of the call.
 *
 *   calls --mode plain|nvtx [--kinds usb_sync,usb_async,xflush,cuda_htod,cuda_sync,
 *                                    cuda_launch,ioctl,pipe_read,null_write,floor]
 *         [-n N] [-r R] [--warm W]
 *
 * plain: the call as the program makes it (with LD_PRELOAD=libnvtxshim.so this
 * is the shim's row). nvtx: the same call wrapped by hand in NVTX ranges with
 * registered strings, payload and colour, the ranges the shim would make.
 * floor: no call, only what recording a range must do at the least (below).
 * With bench/write_time.c's library loaded (make bench's recording rows), a
 * second line for each kind gives the time each repeat spent inside the
 * trace writer's pwrite and pwritev, a call: the kernel's part of recording.
 * Each kind's timed loop is its own noinline function, bench_KIND_MODE, so
 * `valgrind --tool=callgrind --toggle-collect=bench_KIND_MODE` counts exactly
 * the loop; warm-up runs through warm_KIND_MODE, outside it. */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libusb.h>
#include <nvtx3/nvToolsExt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#include <X11/Xlib.h>
#include <X11/Xlibint.h>

#define TRANSFER_BYTES 64
#define IN_ENDPOINT 0x81

static libusb_device_handle *const usb_handle = (libusb_device_handle *)(uintptr_t)0x1000;
static unsigned char usb_buffer[TRANSFER_BYTES];
static struct libusb_transfer *usb_transfer;
static unsigned long long callbacks;
static Display *display;
static unsigned char host_buffer[TRANSFER_BYTES];
static int pipe_fds[2], null_fd = -1;
static unsigned long long failures;

/* ---- the hand-written NVTX ranges ------------------------------------------ */

static nvtxDomainHandle_t usb_domain, x11_domain, cuda_domain;
static nvtxStringHandle_t bulk_name, submit_name, callback_name, events_name, flush_name, copy_name,
                          sync_name, launch_name, reply_name, halt_name;
static nvtxRangeId_t submitted_range;

static void register_names(void)
{
    usb_domain = nvtxDomainCreateA("usb");
    x11_domain = nvtxDomainCreateA("x11");
    cuda_domain = nvtxDomainCreateA("cuda");
    bulk_name = nvtxDomainRegisterStringA(usb_domain, "libusb_bulk_transfer ep=0x81 IN 64B");
    submit_name = nvtxDomainRegisterStringA(usb_domain, "libusb_submit_transfer ep=0x81 BULK IN 64B");
    callback_name = nvtxDomainRegisterStringA(usb_domain, "libusb_transfer_cb_fn ep=0x81 BULK IN 64B");
    events_name = nvtxDomainRegisterStringA(usb_domain, "libusb_handle_events");
    flush_name = nvtxDomainRegisterStringA(x11_domain, "XFlush");
    copy_name = nvtxDomainRegisterStringA(cuda_domain, "cuMemcpyHtoD 64B pageable");
    sync_name = nvtxDomainRegisterStringA(cuda_domain, "cuStreamSynchronize");
    launch_name = nvtxDomainRegisterStringA(cuda_domain, "cuLaunchKernel bench_kernel");
    reply_name = nvtxDomainRegisterStringA(x11_domain, "_XReply");
    halt_name = nvtxDomainRegisterStringA(usb_domain, "libusb_clear_halt ep=0x81");
}

/* What a careful user writes before each range: a registered message, a
 * colour, the bytes. (Filled in place: returning the struct by value made GCC
 * copy it through the stack with store-forwarding stalls, ~10 ns a call.) */
#define ATTRIBUTES(event, name, argb, bytes)                                                \
    nvtxEventAttributes_t event = { 0 };                                                    \
    event.version = NVTX_VERSION;                                                           \
    event.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;                                             \
    event.colorType = NVTX_COLOR_ARGB;                                                      \
    event.color = (argb);                                                                   \
    event.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;                                   \
    event.payload.ullValue = (bytes);                                                       \
    event.messageType = NVTX_MESSAGE_TYPE_REGISTERED;                                       \
    event.message.registered = (name)

/* ---- one call of each kind ------------------------------------------------- */

static void LIBUSB_CALL completed_plain(struct libusb_transfer *transfer)
{
    (void)transfer;
    callbacks++;
}

static void LIBUSB_CALL completed_nvtx(struct libusb_transfer *transfer)
{
    nvtxDomainRangeEnd(usb_domain, submitted_range);
    ATTRIBUTES(event, callback_name, 0xFF00897Bu, (uint64_t)transfer->actual_length);
    nvtxDomainRangePushEx(usb_domain, &event);
    callbacks++;
    nvtxDomainRangePop(usb_domain);
}

static inline __attribute__((always_inline)) void usb_sync_plain(void)
{
    int moved;
    if (libusb_bulk_transfer(usb_handle, IN_ENDPOINT, usb_buffer, TRANSFER_BYTES, &moved, 1000) != 0)
        failures++;
}

static inline __attribute__((always_inline)) void usb_sync_nvtx(void)
{
    ATTRIBUTES(event, bulk_name, 0xFF2E7D32u, TRANSFER_BYTES);
    nvtxDomainRangePushEx(usb_domain, &event);
    usb_sync_plain();
    nvtxDomainRangePop(usb_domain);
}

/* One asynchronous "call": submit, handle events, the callback runs inside. */
static inline __attribute__((always_inline)) void usb_async_plain(void)
{
    if (libusb_submit_transfer(usb_transfer) != 0 || libusb_handle_events(NULL) != 0)
        failures++;
}

static inline __attribute__((always_inline)) void usb_async_nvtx(void)
{
    ATTRIBUTES(submit, submit_name, 0xFF2E7D32u, TRANSFER_BYTES);
    submitted_range = nvtxDomainRangeStartEx(usb_domain, &submit);
    if (libusb_submit_transfer(usb_transfer) != 0)
        failures++;
    ATTRIBUTES(events, events_name, 0xFF81C784u, 0);
    events.payloadType = NVTX_PAYLOAD_UNKNOWN;
    nvtxDomainRangePushEx(usb_domain, &events);
    if (libusb_handle_events(NULL) != 0)
        failures++;
    nvtxDomainRangePop(usb_domain);
}

static inline __attribute__((always_inline)) void xflush_plain(void)
{
    XFlush(display);
}

static inline __attribute__((always_inline)) void xflush_nvtx(void)
{
    ATTRIBUTES(event, flush_name, 0xFF42A5F5u, 0);
    event.payloadType = NVTX_PAYLOAD_UNKNOWN;
    nvtxDomainRangePushEx(x11_domain, &event);
    XFlush(display);
    nvtxDomainRangePop(x11_domain);
}

/* An Xlib round trip's wait for its reply (the sink answers at once). */
static inline __attribute__((always_inline)) void xreply_plain(void)
{
    xReply reply;
    if (!_XReply(display, &reply, 0, False))
        failures++;
}

static inline __attribute__((always_inline)) void xreply_nvtx(void)
{
    ATTRIBUTES(event, reply_name, 0xFFEF6C00u, 0);
    event.payloadType = NVTX_PAYLOAD_UNKNOWN;
    nvtxDomainRangePushEx(x11_domain, &event);
    xreply_plain();
    nvtxDomainRangePop(x11_domain);
}

/* A device-management call: clearing an endpoint's halt. */
static inline __attribute__((always_inline)) void usb_clear_halt_plain(void)
{
    if (libusb_clear_halt(usb_handle, IN_ENDPOINT) != 0)
        failures++;
}

static inline __attribute__((always_inline)) void usb_clear_halt_nvtx(void)
{
    ATTRIBUTES(event, halt_name, 0xFF9E9D24u, 0);
    event.payloadType = NVTX_PAYLOAD_UNKNOWN;
    nvtxDomainRangePushEx(usb_domain, &event);
    usb_clear_halt_plain();
    nvtxDomainRangePop(usb_domain);
}

static inline __attribute__((always_inline)) void cuda_htod_plain(void)
{
    if (cuMemcpyHtoD((CUdeviceptr)0x7000000, host_buffer, TRANSFER_BYTES) != CUDA_SUCCESS)
        failures++;
}

static inline __attribute__((always_inline)) void cuda_htod_nvtx(void)
{
    ATTRIBUTES(event, copy_name, 0xFF76B900u, TRANSFER_BYTES);
    nvtxDomainRangePushEx(cuda_domain, &event);
    cuda_htod_plain();
    nvtxDomainRangePop(cuda_domain);
}

/* A wait for the GPU on the default stream, and a kernel launch (the sink's
 * kernel is any non-null handle). */
static inline __attribute__((always_inline)) void cuda_sync_plain(void)
{
    if (cuStreamSynchronize(NULL) != CUDA_SUCCESS)
        failures++;
}

static inline __attribute__((always_inline)) void cuda_sync_nvtx(void)
{
    ATTRIBUTES(event, sync_name, 0xFF9E9D24u, 0);
    event.payloadType = NVTX_PAYLOAD_UNKNOWN;
    nvtxDomainRangePushEx(cuda_domain, &event);
    cuda_sync_plain();
    nvtxDomainRangePop(cuda_domain);
}

static inline __attribute__((always_inline)) void cuda_launch_plain(void)
{
    static void *parameters[1];
    if (cuLaunchKernel((CUfunction)(uintptr_t)0x5000, 1, 1, 1, 32, 1, 1, 0, NULL, parameters, NULL) !=
        CUDA_SUCCESS)
        failures++;
}

static inline __attribute__((always_inline)) void cuda_launch_nvtx(void)
{
    ATTRIBUTES(event, launch_name, 0xFF00ACC1u, 0);
    event.payloadType = NVTX_PAYLOAD_UNKNOWN;
    nvtxDomainRangePushEx(cuda_domain, &event);
    cuda_launch_plain();
    nvtxDomainRangePop(cuda_domain);
}

/* A cheap system call, for tracers of system calls (nsys -t osrt). */
static inline __attribute__((always_inline)) void ioctl_plain(void)
{
    int available;
    if (ioctl(pipe_fds[0], FIONREAD, &available) != 0)
        failures++;
}

static inline __attribute__((always_inline)) void ioctl_nvtx(void)
{
    ioctl_plain();
}

/* Calls on descriptors that are no device (a pipe, /dev/null): the library sits
 * on read, write and ioctl for the device files, and every program makes
 * these; what the shim row adds here is that wrapper's cost. No range in any row. */
static inline __attribute__((always_inline)) void pipe_read_plain(void)
{
    char byte;
    if (read(pipe_fds[0], &byte, 0) != 0)
        failures++;
}

static inline __attribute__((always_inline)) void pipe_read_nvtx(void)
{
    pipe_read_plain();
}

static inline __attribute__((always_inline)) void null_write_plain(void)
{
    static const char byte = 'x';
    if (write(null_fd, &byte, 1) != 1)
        failures++;
}

static inline __attribute__((always_inline)) void null_write_nvtx(void)
{
    null_write_plain();
}

/* ---- the floor of a range ----------------------------------------------------- */

/* What recording a range must do at the least, and nothing else: read the
 * time-stamp counter at its start and at its end, and store a 16-byte record
 * each time (the time and a word: a name's handle, the payload) into a buffer
 * of the thread's own, handed on (here: started again, the count kept) when it
 * is full. No call is made: the recording rows' cost over their plain call is
 * judged against this row's time (make bench prints the ratio). */
struct floor_record {
    uint64_t time, word;
};
#define FLOOR_RECORDS 2048                 /* 32 KiB, the trace writer's buffer */
static __thread struct floor_record floor_buffer[FLOOR_RECORDS] __attribute__((aligned(64)));
static __thread unsigned floor_used;
static unsigned long long floor_handed;
/* Seen from outside, so that no store is dropped as never read. */
struct floor_record *volatile floor_seen;

static inline __attribute__((always_inline)) uint64_t floor_counter(void)
{
#if defined(__x86_64__)
    uint32_t low, high;
    __asm__ volatile("rdtsc" : "=a"(low), "=d"(high));
    return (uint64_t)high << 32 | low;
#elif defined(__aarch64__)
    uint64_t value;
    __asm__ volatile("isb; mrs %0, cntvct_el0" : "=r"(value)::"memory");
    return value;
#else
#error "a time-stamp counter for this architecture"
#endif
}

static inline __attribute__((always_inline)) void floor_plain(void)
{
    if (__builtin_expect(floor_used > FLOOR_RECORDS - 2, 0)) {
        floor_seen = floor_buffer;
        floor_handed++;
        floor_used = 0;
    }
    struct floor_record *record = &floor_buffer[floor_used];
    record[0] = (struct floor_record){ floor_counter(), (uint64_t)TRANSFER_BYTES << 32 | 1 };
    __asm__ volatile("" ::"r"(record) : "memory");
    record[1] = (struct floor_record){ floor_counter(), 1 };
    floor_used += 2;
}

static inline __attribute__((always_inline)) void floor_nvtx(void)
{
    floor_plain();
}

/* ---- the loops ---------------------------------------------------------------- */

#define LOOPS(kind, mode)                                                                   \
    __attribute__((noinline, used)) void bench_##kind##_##mode(long n);                     \
    __attribute__((noinline, used, no_icf)) void bench_##kind##_##mode(long n)              \
    {                                                                                       \
        for (long i = 0; i < n; i++)                                                        \
            kind##_##mode();                                                                \
    }                                                                                       \
    __attribute__((noinline, used, no_icf)) static void warm_##kind##_##mode(long n)                \
    {                                                                                       \
        for (long i = 0; i < n; i++)                                                        \
            kind##_##mode();                                                                \
    }

LOOPS(usb_sync, plain) LOOPS(usb_sync, nvtx)
LOOPS(usb_async, plain) LOOPS(usb_async, nvtx)
LOOPS(xflush, plain) LOOPS(xflush, nvtx)
LOOPS(xreply, plain) LOOPS(xreply, nvtx)
LOOPS(usb_clear_halt, plain) LOOPS(usb_clear_halt, nvtx)
LOOPS(cuda_htod, plain) LOOPS(cuda_htod, nvtx)
LOOPS(cuda_sync, plain) LOOPS(cuda_sync, nvtx)
LOOPS(cuda_launch, plain) LOOPS(cuda_launch, nvtx)
LOOPS(ioctl, plain) LOOPS(ioctl, nvtx)
LOOPS(pipe_read, plain) LOOPS(pipe_read, nvtx)
LOOPS(null_write, plain) LOOPS(null_write, nvtx)
LOOPS(floor, plain) LOOPS(floor, nvtx)

typedef void (*loop_fn)(long);

static const struct kind {
    const char *name;
    loop_fn loop[2], warm[2];      /* [0] plain, [1] nvtx */
} kinds[] = {
#define KIND(kind) { #kind, { bench_##kind##_plain, bench_##kind##_nvtx }, \
                     { warm_##kind##_plain, warm_##kind##_nvtx } }
    KIND(usb_sync), KIND(usb_async), KIND(xflush), KIND(cuda_htod), KIND(cuda_sync),
    KIND(cuda_launch), KIND(xreply), KIND(usb_clear_halt), KIND(ioctl), KIND(pipe_read),
    KIND(null_write), KIND(floor),
#undef KIND
};
#define KIND_COUNT (sizeof kinds / sizeof kinds[0])

static double now_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec * 1e9 + (double)now.tv_nsec;
}

static void usage(int status)
{
    fprintf(status ? stderr : stdout,
            "usage: calls --mode plain|nvtx [--kinds usb_sync,usb_async,xflush,cuda_htod,\n"
            "                                        cuda_sync,cuda_launch,xreply,usb_clear_halt,ioctl,\n"
            "                                        pipe_read,null_write,floor]\n"
            "             [-n CALLS] [-r REPEATS] [--warm CALLS]\n");
    exit(status);
}

static long number(const char *text)
{
    char *end;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (errno || *end || value < 0)
        usage(2);
    return value;
}

int main(int argc, char **argv)
{
    int mode = -1;
    const char *kind_list = "usb_sync,usb_async,xflush,cuda_htod,cuda_sync,cuda_launch,xreply,"
                            "usb_clear_halt";
    long n = 100000, repeats = 5, warm = -1;
    for (int i = 1; i < argc; i++) {
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) usage(0);
        else if (!value) usage(2);
        else if (!strcmp(argv[i], "--mode")) mode = !strcmp(value, "plain") ? 0 : !strcmp(value, "nvtx") ? 1 : -2;
        else if (!strcmp(argv[i], "--kinds")) kind_list = value;
        else if (!strcmp(argv[i], "-n")) n = number(value);
        else if (!strcmp(argv[i], "-r")) repeats = number(value);
        else if (!strcmp(argv[i], "--warm")) warm = number(value);
        else usage(2);
        i++;
    }
    if (mode < 0 || n < 1 || repeats < 1)
        usage(2);
    if (warm < 0)
        warm = n < 1000 ? n : 1000;

    /* bench/write_time.c's clock of the trace writer's writes, where it is loaded */
    uint64_t (*write_ns)(void) = (uint64_t(*)(void))dlsym(RTLD_DEFAULT, "bench_write_ns");
    if (mode == 1)
        register_names();
    usb_transfer = libusb_alloc_transfer(0);
    display = XOpenDisplay(NULL);
    null_fd = open("/dev/null", O_WRONLY);
    if (!usb_transfer || !display || pipe(pipe_fds) != 0 || null_fd < 0) {
        fprintf(stderr, "calls: set-up failed\n");
        return 1;
    }
    libusb_fill_bulk_transfer(usb_transfer, usb_handle, IN_ENDPOINT, usb_buffer, TRANSFER_BYTES,
                              mode ? completed_nvtx : completed_plain, NULL, 1000);

    for (size_t k = 0; k < KIND_COUNT; k++) {
        const char *at = strstr(kind_list, kinds[k].name);
        size_t length = strlen(kinds[k].name);
        /* a whole item of the comma list */
        while (at && ((at != kind_list && at[-1] != ',') || (at[length] && at[length] != ',')))
            at = strstr(at + 1, kinds[k].name);
        if (!at)
            continue;
        unsigned long long callbacks_before = callbacks;
        kinds[k].warm[mode](warm);
        double written[repeats];
        printf("result kind=%s mode=%s n=%ld ns=", kinds[k].name, mode ? "nvtx" : "plain", n);
        for (long r = 0; r < repeats; r++) {
            uint64_t written_before = write_ns ? write_ns() : 0;
            double start = now_ns();
            kinds[k].loop[mode](n);
            double elapsed = now_ns() - start;
            written[r] = write_ns ? (double)(write_ns() - written_before) / (double)n : 0;
            printf("%s%.3f", r ? "," : "", elapsed / (double)n);
        }
        printf("\n");
        if (write_ns) {
            printf("written kind=%s mode=%s n=%ld ns=", kinds[k].name, mode ? "nvtx" : "plain", n);
            for (long r = 0; r < repeats; r++)
                printf("%s%.3f", r ? "," : "", written[r]);
            printf("\n");
        }
        fflush(stdout);
        if (!strcmp(kinds[k].name, "usb_async") &&
            callbacks - callbacks_before != (unsigned long long)(warm + n * repeats)) {
            fprintf(stderr, "calls: %llu callbacks for %ld submissions\n",
                    callbacks - callbacks_before, warm + n * repeats);
            return 1;
        }
    }
    if (failures) {
        fprintf(stderr, "calls: %llu calls failed\n", failures);
        return 1;
    }
    XCloseDisplay(display);
    libusb_free_transfer(usb_transfer);
    return 0;
}
