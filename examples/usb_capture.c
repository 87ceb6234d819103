/* usb_capture: a plain libusb-1.0 camera + actuator loop, with no NVTX in it.
 *
 * Per frame: act (vendor control request + bulk OUT command), observe (bulk IN
 * frame), read status (interrupt IN), choose the next action (the brightest
 * cell of a 4x4 grid). With --async the IN transfers are submitted and
 * completed on an event thread, as streaming camera drivers do. It speaks the
 * protocol of the emulated device in test/usbdev, and prints a summary that
 * does not depend on timing, so runs can be compared byte for byte. */
#include <inttypes.h>
#include <libusb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GRID 4
#define TIMEOUT_MS 2000

struct options {
    int frames, width, height;
    uint16_t vendor, product;
    bool async;
};

struct completion {
    pthread_mutex_t lock;
    pthread_cond_t done;
    bool finished;
    int status;
    int actual_length;
    void *expected_user_data;
    bool user_data_ok;
};

static libusb_context *context;
static volatile int stop_events;

static void usage(void)
{
    fprintf(stderr,
            "usage: usb_capture [--frames N] [--width W] [--height H] "
            "[--device VID:PID] [--async]\n");
    exit(2);
}

static void parse(int argc, char **argv, struct options *options)
{
    *options = (struct options){ 30, 64, 48, 0x1209, 0x0001, false };
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--frames") && i + 1 < argc)
            options->frames = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--width") && i + 1 < argc)
            options->width = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--height") && i + 1 < argc)
            options->height = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--async"))
            options->async = true;
        else if (!strcmp(argv[i], "--device") && i + 1 < argc) {
            unsigned vendor, product;
            if (sscanf(argv[++i], "%x:%x", &vendor, &product) != 2)
                usage();
            options->vendor = (uint16_t)vendor;
            options->product = (uint16_t)product;
        } else
            usage();
    }
    if (options->frames < 1 || options->width < GRID || options->height < GRID)
        usage();
}

static int choose_action(const unsigned char *frame, int width, int height)
{
    uint64_t sums[GRID * GRID] = { 0 };
    int cell_w = width / GRID, cell_h = height / GRID;
    for (int y = 0; y < cell_h * GRID; y++) {
        for (int x = 0; x < cell_w * GRID; x++) {
            const unsigned char *p = frame + ((size_t)y * width + x) * 3;
            sums[(y / cell_h) * GRID + x / cell_w] += (uint64_t)p[0] + p[1] + p[2];
        }
    }
    int best = 0;
    for (int i = 1; i < GRID * GRID; i++)
        if (sums[i] > sums[best])
            best = i;
    return best;
}

static uint32_t fnv1a(uint32_t hash, const unsigned char *data, size_t length)
{
    for (size_t i = 0; i < length; i++)
        hash = (hash ^ data[i]) * 16777619u;
    return hash;
}

static void *run_events(void *unused)
{
    (void)unused;
    while (!stop_events)
        libusb_handle_events_completed(context, (int *)&stop_events);
    return NULL;
}

static void LIBUSB_CALL transfer_done(struct libusb_transfer *transfer)
{
    struct completion *completion = transfer->user_data;
    pthread_mutex_lock(&completion->lock);
    completion->user_data_ok = transfer->user_data == completion->expected_user_data;
    completion->status = transfer->status;
    completion->actual_length = transfer->actual_length;
    completion->finished = true;
    pthread_cond_signal(&completion->done);
    pthread_mutex_unlock(&completion->lock);
}

/* One IN transfer through the event thread. FREE makes libusb free the transfer. */
static int async_in(libusb_device_handle *handle, unsigned char endpoint, unsigned char type,
                    unsigned char *buffer, int length, int *actual, bool free_transfer)
{
    struct completion completion = {
        PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, 0, 0, NULL, false
    };
    completion.expected_user_data = &completion;
    struct libusb_transfer *transfer = libusb_alloc_transfer(0);
    if (!transfer)
        return LIBUSB_ERROR_NO_MEM;
    if (type == LIBUSB_TRANSFER_TYPE_BULK)
        libusb_fill_bulk_transfer(transfer, handle, endpoint, buffer, length, transfer_done,
                                  &completion, TIMEOUT_MS);
    else
        libusb_fill_interrupt_transfer(transfer, handle, endpoint, buffer, length, transfer_done,
                                       &completion, TIMEOUT_MS);
    if (free_transfer)
        transfer->flags |= LIBUSB_TRANSFER_FREE_TRANSFER;
    int result = libusb_submit_transfer(transfer);
    if (result < 0) {
        libusb_free_transfer(transfer);
        return result;
    }
    pthread_mutex_lock(&completion.lock);
    while (!completion.finished)
        pthread_cond_wait(&completion.done, &completion.lock);
    pthread_mutex_unlock(&completion.lock);
    if (!free_transfer)
        libusb_free_transfer(transfer);
    if (!completion.user_data_ok)
        printf("callback saw the wrong user_data\n");
    *actual = completion.actual_length;
    switch (completion.status) {
    case LIBUSB_TRANSFER_COMPLETED: return 0;
    case LIBUSB_TRANSFER_STALL: return LIBUSB_ERROR_PIPE;
    case LIBUSB_TRANSFER_TIMED_OUT: return LIBUSB_ERROR_TIMEOUT;
    case LIBUSB_TRANSFER_NO_DEVICE: return LIBUSB_ERROR_NO_DEVICE;
    default: return LIBUSB_ERROR_IO;
    }
}

int main(int argc, char **argv)
{
    struct options options;
    parse(argc, argv, &options);
    int frame_bytes = options.width * options.height * 3;
    unsigned char *frame = malloc((size_t)frame_bytes);
    if (!frame || libusb_init(&context) < 0) {
        fprintf(stderr, "usb_capture: cannot initialise libusb\n");
        free(frame);
        return 1;
    }
    libusb_device_handle *handle = libusb_open_device_with_vid_pid(context, options.vendor,
                                                                   options.product);
    if (!handle) {
        fprintf(stderr, "usb_capture: no device %04x:%04x\n", options.vendor, options.product);
        libusb_exit(context);
        free(frame);
        return 1;
    }
    libusb_claim_interface(handle, 0);
    pthread_t events;
    if (options.async)
        pthread_create(&events, NULL, run_events, NULL);

    uint32_t checksum = 2166136261u;
    uint64_t received = 0;
    int errors = 0, action = 0;
    printf("usb_capture: %d frames of %dx%d from %04x:%04x (%s)\n", options.frames, options.width,
           options.height, options.vendor, options.product, options.async ? "async" : "sync");
    printf("actions:");
    for (int i = 0; i < options.frames; i++) {
        int moved = 0, result;
        unsigned char command[8] = { 0xA5,
                                     (unsigned char)action,
                                     (unsigned char)(i & 0xff),
                                     (unsigned char)(i >> 8),
                                     0,
                                     0,
                                     0,
                                     0x5A };
        result = libusb_control_transfer(handle, 0x40, 0x01, (uint16_t)i, (uint16_t)action, NULL, 0,
                                         TIMEOUT_MS);
        if (result < 0)
            errors++;
        result = libusb_bulk_transfer(handle, 0x02, command, sizeof command, &moved, TIMEOUT_MS);
        if (result < 0)
            errors++;

        if (options.async)
            result = async_in(handle, 0x81, LIBUSB_TRANSFER_TYPE_BULK, frame, frame_bytes, &moved,
                              false);
        else
            result = libusb_bulk_transfer(handle, 0x81, frame, frame_bytes, &moved, TIMEOUT_MS);
        if (result < 0) {
            errors++;
            printf(" [frame %d: %s]", i, libusb_error_name(result));
        } else if (moved < frame_bytes) {
            errors++;
            printf(" [frame %d: short %d/%d]", i, moved, frame_bytes);
        } else {
            checksum = fnv1a(checksum, frame, (size_t)moved);
            received += (uint64_t)moved;
            action = choose_action(frame, options.width, options.height);
        }

        unsigned char status[8];
        if (options.async)
            result = async_in(handle, 0x83, LIBUSB_TRANSFER_TYPE_INTERRUPT, status, sizeof status,
                              &moved, true);
        else
            result = libusb_interrupt_transfer(handle, 0x83, status, sizeof status, &moved,
                                               TIMEOUT_MS);
        if (result < 0 || status[2] != action) {
            errors++;
            printf(" [frame %d: status disagrees]", i);
        }
        printf(" %d", action);
    }
    printf("\nframes=%d bytes=%" PRIu64 " errors=%d checksum=%08x\n", options.frames, received,
           errors, checksum);

    if (options.async) {
        stop_events = 1;
        libusb_interrupt_event_handler(context);
        pthread_join(events, NULL);
    }
    libusb_release_interface(handle, 0);
    libusb_close(handle);
    libusb_exit(context);
    free(frame);
    return errors ? 3 : 0;
}
