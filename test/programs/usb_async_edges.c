/* Asynchronous edge cases on the emulated device, printed so that runs with
 * and without the shim can be compared byte for byte:
 *   1. an isochronous transfer the device refuses: the return code, and the
 *      transfer's callback and user_data left as the program set them;
 *   2. a bulk IN transfer cancelled before completion: cancel's return code,
 *      then the status, length and user_data the callback sees.
 * With errno as each submission left it (set to 4242 before it) and as each
 * callback finds it on entry.
 *
 * usb_async_edges shapes N: N interrupt IN transfers on the status endpoint
 * (0x83, 8 bytes an answer), each asking for another length, 1 to N bytes,
 * one at a time: the bytes each moved, summed and printed at the end. */
#include <errno.h>
#include <libusb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emulated_device.h"

static int callbacks;

static void LIBUSB_CALL done(struct libusb_transfer *transfer)
{
    int error = errno;
    callbacks++;
    printf("callback: status=%d actual=%d user_data=%s errno=%d\n", transfer->status,
           transfer->actual_length, transfer->user_data == (void *)&callbacks ? "same" : "changed",
           error);
}

static void LIBUSB_CALL counted(struct libusb_transfer *transfer)
{
    *(long *)transfer->user_data += transfer->actual_length;
    callbacks++;
}

/* N transfers of N shapes, one at a time. */
static int shapes(libusb_context *context, libusb_device_handle *handle, int n)
{
    unsigned char *buffer = malloc((size_t)n);
    struct libusb_transfer *transfer = libusb_alloc_transfer(0);
    long moved = 0;
    int failed = 0;
    for (int length = 1; length <= n && buffer && transfer; length++) {
        libusb_fill_interrupt_transfer(transfer, handle, 0x83, buffer, length, counted, &moved,
                                       1000);
        callbacks = 0;
        if (libusb_submit_transfer(transfer) != 0) {
            failed++;
            continue;
        }
        while (!callbacks)
            libusb_handle_events(context);
    }
    printf("shapes: %d transfers, %d refused, %ld bytes moved\n", n, failed, moved);
    libusb_free_transfer(transfer);
    free(buffer);
    return 0;
}

int main(int argc, char **argv)
{
    libusb_context *context;
    libusb_device_handle *handle = open_emulated_device(&context);
    if (!handle)
        return 1;
    if (argc == 3 && !strcmp(argv[1], "shapes")) {
        int result = shapes(context, handle, atoi(argv[2]));
        libusb_close(handle);
        libusb_exit(context);
        return result;
    }
    static unsigned char buffer[9216];

    struct libusb_transfer *iso = libusb_alloc_transfer(4);
    libusb_fill_iso_transfer(iso, handle, 0x81, buffer, 4 * 512, 4, done, &callbacks, 1000);
    libusb_set_iso_packet_lengths(iso, 512);
    errno = 4242;
    int result = libusb_submit_transfer(iso);
    int error = errno;
    printf("iso submit: %d (%s) callback=%s user_data=%s errno=%d\n", result,
           libusb_error_name(result), iso->callback == done ? "same" : "changed",
           iso->user_data == (void *)&callbacks ? "same" : "changed", error);
    if (result == 0)
        while (!callbacks)
            libusb_handle_events(context);
    libusb_free_transfer(iso);

    callbacks = 0;
    struct libusb_transfer *bulk = libusb_alloc_transfer(0);
    libusb_fill_bulk_transfer(bulk, handle, 0x81, buffer, sizeof buffer, done, &callbacks, 1000);
    errno = 4242;
    result = libusb_submit_transfer(bulk);
    error = errno;
    printf("bulk submit: %d errno=%d\n", result, error);
    result = libusb_cancel_transfer(bulk);
    printf("cancel: %d (%s)\n", result, libusb_error_name(result));
    while (!callbacks)
        libusb_handle_events(context);
    printf("callback restored: %s\n", bulk->callback == done ? "yes" : "no");
    libusb_free_transfer(bulk);

    libusb_release_interface(handle, 0);
    libusb_close(handle);
    libusb_exit(context);
    return 0;
}
