/* A libusb-1.0.so.0 that does nothing: every function the bench calls returns
 * at once, so a timed loop measures only what sits in front of it (the shim,
 * an NVTX pair, a tracer). Never installed; bench only.
 *
 * Asynchronous transfers are queued by libusb_submit_transfer and completed,
 * in submission order, by the next libusb_handle_events* call, which runs each
 * transfer's callback as libusb does: on the thread handling events. */
#include <libusb.h>
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))
#define QUEUE_SLOTS 256u

static struct libusb_transfer *queue[QUEUE_SLOTS];
static unsigned queue_head, queue_tail;

EXPORT int LIBUSB_CALL libusb_init(libusb_context **context)
{
    if (context)
        *context = NULL;
    return 0;
}

EXPORT void LIBUSB_CALL libusb_exit(libusb_context *context)
{
    (void)context;
}

EXPORT int LIBUSB_CALL libusb_bulk_transfer(libusb_device_handle *handle, unsigned char endpoint,
                                            unsigned char *data, int length, int *transferred,
                                            unsigned int timeout)
{
    (void)handle, (void)endpoint, (void)data, (void)timeout;
    if (transferred)
        *transferred = length;
    return 0;
}

EXPORT struct libusb_transfer *LIBUSB_CALL libusb_alloc_transfer(int iso_packets)
{
    size_t size = sizeof(struct libusb_transfer) +
                  (size_t)(iso_packets > 0 ? iso_packets : 0) * sizeof(struct libusb_iso_packet_descriptor);
    return calloc(1, size);
}

EXPORT void LIBUSB_CALL libusb_free_transfer(struct libusb_transfer *transfer)
{
    free(transfer);
}

EXPORT int LIBUSB_CALL libusb_submit_transfer(struct libusb_transfer *transfer)
{
    if (queue_tail - queue_head == QUEUE_SLOTS)
        return LIBUSB_ERROR_BUSY;
    queue[queue_tail++ % QUEUE_SLOTS] = transfer;
    return 0;
}

static int complete_queued(int *completed)
{
    while (queue_head != queue_tail) {
        struct libusb_transfer *transfer = queue[queue_head++ % QUEUE_SLOTS];
        transfer->status = LIBUSB_TRANSFER_COMPLETED;
        transfer->actual_length = transfer->length;
        transfer->callback(transfer);
    }
    if (completed)
        *completed = 1;
    return 0;
}

EXPORT int LIBUSB_CALL libusb_clear_halt(libusb_device_handle *handle, unsigned char endpoint)
{
    (void)handle, (void)endpoint;
    return 0;
}

EXPORT int LIBUSB_CALL libusb_handle_events(libusb_context *context)
{
    (void)context;
    return complete_queued(NULL);
}

EXPORT int LIBUSB_CALL libusb_handle_events_completed(libusb_context *context, int *completed)
{
    (void)context;
    return complete_queued(completed);
}

EXPORT int LIBUSB_CALL libusb_handle_events_timeout(libusb_context *context, struct timeval *timeout)
{
    (void)context, (void)timeout;
    return complete_queued(NULL);
}

EXPORT int LIBUSB_CALL libusb_handle_events_timeout_completed(libusb_context *context,
                                                              struct timeval *timeout,
                                                              int *completed)
{
    (void)context, (void)timeout;
    return complete_queued(completed);
}
