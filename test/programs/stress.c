/* stress: many threads making hooked calls at once, for the ThreadSanitizer run
 * (test/test_sanitizers.py). On the emulated camera (build/emucam):
 *
 *   - WORKERS threads each read frames with synchronous bulk IN calls, read the
 *     device status (interrupt IN) with lengths of their own (so new range names
 *     are registered from several threads at once), and, where they can be
 *     reached, make CUDA copies (dlopen("libcuda.so.1")) and X11 calls (a
 *     connection of their own to $DISPLAY), all through dlsym, as plugins do;
 *   - a streamer keeps QUEUE asynchronous bulk IN transfers in flight, completed
 *     on libusb's event thread;
 *   - an actor sends the protocol's commands (control OUT + bulk OUT) in order,
 *     each carrying the action of the frame before, as soon as that is known;
 *   - one worker allocates and frees pinned host memory between its copies, so
 *     the shim's pinned/pageable cache is emptied while others use it.
 *
 * Frames are numbered by the camera in the order their bulk IN URBs are
 * submitted, so every bulk IN submission takes FRAME_LOCK and the next number.
 * Prints a summary that does not depend on timing (compare runs with and
 * without the shim); exits 3 when any call failed.
 *
 *   stress [--workers N] [--reads N] [--async N] [--queue N] [--statuses N]
 *          [--copies N] [--x11 N] [--width W --height H]
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emulated_device.h"

#define GRID 4
#define TIMEOUT_MS 5000
#define MAX_QUEUE 16

static struct {
    int workers, reads, async, queue, statuses, copies, x11, width, height;
} options = { 4, 25, 60, 4, 25, 25, 25, 64, 48 };

static libusb_context *context;
static libusb_device_handle *handle;
static int frame_bytes;
static atomic_int errors;
static atomic_int stop_events;
/* Every thread makes its first hooked call at once: the library's first-call
 * set-up then runs on several threads together. */
static pthread_barrier_t start_line;

/* Bulk IN submissions, in the order the camera numbers them. */
static pthread_mutex_t frame_lock = PTHREAD_MUTEX_INITIALIZER;
static int next_frame;

/* The action each frame asks for, once a thread has read it. Never held
 * across a libusb call. */
static pthread_mutex_t action_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t action_known = PTHREAD_COND_INITIALIZER;
static int *actions;               /* -1 until known */
static int total_frames;

static void fail(const char *what, int result)
{
    atomic_fetch_add(&errors, 1);
    fprintf(stderr, "stress: %s: %s\n", what, libusb_error_name(result));
}

static int choose_action(const unsigned char *frame)
{
    uint64_t sums[GRID * GRID] = { 0 };
    int cell_w = options.width / GRID, cell_h = options.height / GRID;
    for (int y = 0; y < cell_h * GRID; y++)
        for (int x = 0; x < cell_w * GRID; x++) {
            const unsigned char *p = frame + ((size_t)y * (size_t)options.width + (size_t)x) * 3;
            sums[(y / cell_h) * GRID + x / cell_w] += (uint64_t)p[0] + p[1] + p[2];
        }
    int best = 0;
    for (int i = 1; i < GRID * GRID; i++)
        if (sums[i] > sums[best]) best = i;
    return best;
}

static void record_frame(int index, const unsigned char *frame, int moved)
{
    if (moved != frame_bytes) {
        fail("frame came short", LIBUSB_ERROR_IO);
        return;
    }
    int action = choose_action(frame);
    pthread_mutex_lock(&action_lock);
    actions[index] = action;
    pthread_cond_broadcast(&action_known);
    pthread_mutex_unlock(&action_lock);
}

static int wait_for_action(int index)
{
    if (index < 0)
        return 0;
    pthread_mutex_lock(&action_lock);
    while (actions[index] < 0)
        pthread_cond_wait(&action_known, &action_lock);
    int action = actions[index];
    pthread_mutex_unlock(&action_lock);
    return action;
}

/* ---- CUDA and X11, through dlopen + dlsym (the shim hands out its wrappers) */
typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_alloc_fn)(unsigned long long *, size_t);
typedef int (*cu_alloc_host_fn)(void **, size_t);
typedef int (*cu_free_host_fn)(void *);
typedef int (*cu_htod_fn)(unsigned long long, const void *, size_t);
typedef int (*cu_dtoh_fn)(void *, unsigned long long, size_t);
static struct {
    cu_alloc_fn alloc;
    cu_alloc_host_fn alloc_host;
    cu_free_host_fn free_host;
    cu_htod_fn htod;
    cu_dtoh_fn dtoh;
} cuda;

typedef void *(*x_open_fn)(const char *);
typedef int (*x_display_fn)(void *);
typedef int (*x_sync_fn)(void *, int);
static struct {
    x_open_fn open;
    x_display_fn flush, close;
    x_sync_fn sync;
} x11;

static bool load_cuda(void)
{
    void *library = dlopen("libcuda.so.1", RTLD_NOW);
    if (!library)
        return false;
    cu_init_fn init = (cu_init_fn)dlsym(library, "cuInit");
    cuda.alloc = (cu_alloc_fn)dlsym(library, "cuMemAlloc_v2");
    cuda.alloc_host = (cu_alloc_host_fn)dlsym(library, "cuMemAllocHost_v2");
    cuda.free_host = (cu_free_host_fn)dlsym(library, "cuMemFreeHost");
    cuda.htod = (cu_htod_fn)dlsym(library, "cuMemcpyHtoD_v2");
    cuda.dtoh = (cu_dtoh_fn)dlsym(library, "cuMemcpyDtoH_v2");
    return init && cuda.alloc && cuda.alloc_host && cuda.free_host && cuda.htod && cuda.dtoh &&
           init(0) == 0;
}

static bool load_x11(void)
{
    if (!getenv("DISPLAY"))
        return false;
    void *library = dlopen("libX11.so.6", RTLD_NOW);
    if (!library)
        return false;
    int (*init_threads)(void) = (int (*)(void))dlsym(library, "XInitThreads");
    x11.open = (x_open_fn)dlsym(library, "XOpenDisplay");
    x11.flush = (x_display_fn)dlsym(library, "XFlush");
    x11.close = (x_display_fn)dlsym(library, "XCloseDisplay");
    x11.sync = (x_sync_fn)dlsym(library, "XSync");
    if (!init_threads || !x11.open || !x11.flush || !x11.close || !x11.sync)
        return false;
    init_threads();
    return true;
}

static bool have_cuda, have_x11;

/* ---- workers ---------------------------------------------------------------- */
struct worker {
    int number;
    pthread_t thread;
    unsigned long long device;   /* CUDA device buffer */
    int copies, x11_calls;
};

static void read_frame_sync(struct worker *worker, unsigned char *buffer, int length)
{
    int moved = 0;
    pthread_mutex_lock(&frame_lock);
    int index = next_frame++;
    int result = libusb_bulk_transfer(handle, 0x81, buffer, length, &moved, TIMEOUT_MS);
    pthread_mutex_unlock(&frame_lock);
    (void)worker;
    if (result < 0)
        fail("bulk IN", result);
    else
        record_frame(index, buffer, moved);
}

static void read_status(struct worker *worker, int round)
{
    unsigned char status[16];
    int moved = 0, length = 8 + (worker->number + round) % 8;
    int result = libusb_interrupt_transfer(handle, 0x83, status, length, &moved, TIMEOUT_MS);
    if (result < 0 || moved != 8)
        fail("interrupt IN", result);
}

static void copy_through_cuda(struct worker *worker, unsigned char *buffer, int round)
{
    size_t bytes = (size_t)frame_bytes;
    if (cuda.htod(worker->device, buffer, bytes) || cuda.dtoh(buffer, worker->device, bytes))
        fail("cuda copy", LIBUSB_ERROR_OTHER);
    worker->copies += 2;
    if (worker->number == 0) {
        /* Pinned memory comes and goes while the others copy. */
        void *pinned = NULL;
        if (cuda.alloc_host(&pinned, 4096 + (size_t)round) == 0) {
            memset(pinned, round, 64);
            if (cuda.htod(worker->device, pinned, 64))
                fail("cuda pinned copy", LIBUSB_ERROR_OTHER);
            worker->copies++;
            cuda.free_host(pinned);
        }
    }
}

static void *work(void *argument)
{
    struct worker *worker = argument;
    pthread_barrier_wait(&start_line);
    /* Lengths past the frame: each worker registers names of its own. */
    int length = frame_bytes + 512 * (worker->number % 4);
    unsigned char *buffer = malloc((size_t)length);
    void *display = NULL;
    if (have_cuda && cuda.alloc(&worker->device, (size_t)frame_bytes))
        fail("cuMemAlloc", LIBUSB_ERROR_NO_MEM);
    if (have_x11 && !(display = x11.open(NULL)))
        fail("XOpenDisplay", LIBUSB_ERROR_OTHER);
    int rounds = options.reads;
    if (options.statuses > rounds) rounds = options.statuses;
    if (have_cuda && options.copies > rounds) rounds = options.copies;
    if (display && options.x11 > rounds) rounds = options.x11;
    for (int round = 0; round < rounds; round++) {
        if (round < options.reads)
            read_frame_sync(worker, buffer, length);
        if (round < options.statuses)
            read_status(worker, round);
        if (have_cuda && round < options.copies)
            copy_through_cuda(worker, buffer, round);
        if (display && round < options.x11) {
            x11.flush(display);
            x11.sync(display, 0);
            worker->x11_calls += 2;
        }
    }
    if (display)
        x11.close(display);
    free(buffer);
    return NULL;
}

/* ---- the streamer: QUEUE asynchronous bulk IN transfers in flight ------------ */
struct slot {
    struct libusb_transfer *transfer;
    unsigned char *buffer;
    int index;
    bool done;
};
static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t slot_done = PTHREAD_COND_INITIALIZER;

static void LIBUSB_CALL transfer_done(struct libusb_transfer *transfer)
{
    struct slot *slot = transfer->user_data;
    if (transfer->status != LIBUSB_TRANSFER_COMPLETED)
        fail("async bulk IN", LIBUSB_ERROR_IO);
    else
        record_frame(slot->index, slot->buffer, transfer->actual_length);
    pthread_mutex_lock(&slot_lock);
    slot->done = true;
    pthread_cond_signal(&slot_done);
    pthread_mutex_unlock(&slot_lock);
}

static bool submit(struct slot *slot)
{
    pthread_mutex_lock(&frame_lock);
    slot->index = next_frame++;
    slot->done = false;
    int result = libusb_submit_transfer(slot->transfer);
    if (result < 0)
        next_frame--;
    pthread_mutex_unlock(&frame_lock);
    if (result < 0)
        fail("libusb_submit_transfer", result);
    return result == 0;
}

static void *stream(void *unused)
{
    (void)unused;
    pthread_barrier_wait(&start_line);
    struct slot slots[MAX_QUEUE];
    int queue = options.queue, submitted = 0, completed = 0, in_flight = 0;
    for (int i = 0; i < queue; i++) {
        slots[i].buffer = malloc((size_t)frame_bytes);
        slots[i].transfer = libusb_alloc_transfer(0);
        libusb_fill_bulk_transfer(slots[i].transfer, handle, 0x81, slots[i].buffer, frame_bytes,
                                  transfer_done, &slots[i], TIMEOUT_MS);
        slots[i].done = true;
        slots[i].index = -1;
    }
    for (int i = 0; i < queue && submitted < options.async; i++)
        if (submit(&slots[i])) { submitted++; in_flight++; }
    while (in_flight > 0) {
        pthread_mutex_lock(&slot_lock);
        int finished = -1;
        while (finished < 0) {
            for (int i = 0; i < queue && finished < 0; i++)
                if (slots[i].done && slots[i].index >= 0)
                    finished = i;
            if (finished < 0)
                pthread_cond_wait(&slot_done, &slot_lock);
        }
        slots[finished].index = -1;
        pthread_mutex_unlock(&slot_lock);
        in_flight--;
        completed++;
        if (submitted < options.async && submit(&slots[finished])) {
            submitted++;
            in_flight++;
        }
    }
    for (int i = 0; i < queue; i++) {
        libusb_free_transfer(slots[i].transfer);
        free(slots[i].buffer);
    }
    (void)completed;
    return NULL;
}

/* ---- the actor: the protocol's commands, in order ---------------------------- */
static void *act(void *unused)
{
    (void)unused;
    pthread_barrier_wait(&start_line);
    for (int i = 0; i < total_frames; i++) {
        int action = wait_for_action(i - 1);
        int result = libusb_control_transfer(handle, 0x40, 0x01, (uint16_t)i, (uint16_t)action,
                                             NULL, 0, TIMEOUT_MS);
        if (result < 0)
            fail("control OUT", result);
        unsigned char command[8] = { 0xA5, (unsigned char)action, (unsigned char)(i & 0xff),
                                     (unsigned char)(i >> 8), 0, 0, 0, 0x5A };
        int moved = 0;
        result = libusb_bulk_transfer(handle, 0x02, command, sizeof command, &moved, TIMEOUT_MS);
        if (result < 0 || moved != (int)sizeof command)
            fail("bulk OUT", result);
    }
    return NULL;
}

static void *handle_events(void *unused)
{
    (void)unused;
    pthread_barrier_wait(&start_line);
    while (!atomic_load(&stop_events))
        libusb_handle_events_completed(context, (int *)&stop_events);
    return NULL;
}

static void usage(void)
{
    fprintf(stderr, "usage: stress [--workers N] [--reads N] [--async N] [--queue N] "
                    "[--statuses N] [--copies N] [--x11 N] [--width W --height H]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    static const struct { const char *name; int *value; int minimum, maximum; } numbers[] = {
        { "--workers", &options.workers, 1, 64 }, { "--reads", &options.reads, 0, 10000 },
        { "--async", &options.async, 0, 10000 }, { "--queue", &options.queue, 1, MAX_QUEUE },
        { "--statuses", &options.statuses, 0, 10000 }, { "--copies", &options.copies, 0, 10000 },
        { "--x11", &options.x11, 0, 10000 }, { "--width", &options.width, GRID, 1024 },
        { "--height", &options.height, GRID, 1024 },
    };
    for (int i = 1; i < argc; i++) {
        size_t n = 0;
        while (n < sizeof numbers / sizeof numbers[0] && strcmp(argv[i], numbers[n].name))
            n++;
        if (n == sizeof numbers / sizeof numbers[0] || i + 1 == argc)
            usage();
        char *end;
        long value = strtol(argv[++i], &end, 10);
        if (*end || value < numbers[n].minimum || value > numbers[n].maximum)
            usage();
        *numbers[n].value = (int)value;
    }
    frame_bytes = options.width * options.height * 3;
    total_frames = options.workers * options.reads + options.async;
    actions = malloc(sizeof *actions * (size_t)(total_frames + 1));
    for (int i = 0; i <= total_frames; i++)
        actions[i] = -1;
    handle = open_emulated_device(&context);
    if (!handle) {
        fprintf(stderr, "stress: no emulated device (run under build/emucam)\n");
        return 1;
    }
    have_cuda = options.copies > 0 && load_cuda();
    have_x11 = options.x11 > 0 && load_x11();

    pthread_t events, streamer, actor;
    pthread_barrier_init(&start_line, NULL, (unsigned)options.workers + 3);
    pthread_create(&events, NULL, handle_events, NULL);
    pthread_create(&actor, NULL, act, NULL);
    pthread_create(&streamer, NULL, stream, NULL);
    struct worker *workers = calloc((size_t)options.workers, sizeof *workers);
    for (int i = 0; i < options.workers; i++) {
        workers[i].number = i;
        pthread_create(&workers[i].thread, NULL, work, &workers[i]);
    }
    int copies = 0, x11_calls = 0;
    for (int i = 0; i < options.workers; i++) {
        pthread_join(workers[i].thread, NULL);
        copies += workers[i].copies;
        x11_calls += workers[i].x11_calls;
    }
    pthread_join(streamer, NULL);
    pthread_join(actor, NULL);
    atomic_store(&stop_events, 1);
    libusb_interrupt_event_handler(context);
    pthread_join(events, NULL);

    uint32_t hash = 2166136261u;
    for (int i = 0; i < total_frames; i++)
        hash = (hash ^ (uint32_t)(actions[i] & 0xff)) * 16777619u;
    printf("stress: %d workers, %d frames (%d sync, %d async, %d in flight), %d commands, "
           "%d status reads\n", options.workers, total_frames, options.workers * options.reads,
           options.async, options.queue, total_frames, options.workers * options.statuses);
    printf("cuda: %s, %d copies; x11: %s, %d calls\n", have_cuda ? "yes" : "no", copies,
           have_x11 ? "yes" : "no", x11_calls);
    printf("errors=%d actions=%08" PRIx32 "\n", atomic_load(&errors), hash);

    pthread_barrier_destroy(&start_line);
    libusb_release_interface(handle, 0);
    libusb_close(handle);
    libusb_exit(context);
    free(workers);
    free(actions);
    return atomic_load(&errors) ? 3 : 0;
}
