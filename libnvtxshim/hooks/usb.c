/* libusb-1.0: synchronous transfers, asynchronous transfers (submission to
 * completion callback) and event handling, in NVTX domain "usb". */
#define _GNU_SOURCE
#include <libusb.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../emit.h"
#include "../hook.h"

static const char *direction(unsigned char endpoint)
{
    return (endpoint & LIBUSB_ENDPOINT_IN) ? "IN" : "OUT";
}

static const char *error_name(int code)
{
    switch (code) {
    case LIBUSB_ERROR_IO: return "LIBUSB_ERROR_IO";
    case LIBUSB_ERROR_INVALID_PARAM: return "LIBUSB_ERROR_INVALID_PARAM";
    case LIBUSB_ERROR_ACCESS: return "LIBUSB_ERROR_ACCESS";
    case LIBUSB_ERROR_NO_DEVICE: return "LIBUSB_ERROR_NO_DEVICE";
    case LIBUSB_ERROR_NOT_FOUND: return "LIBUSB_ERROR_NOT_FOUND";
    case LIBUSB_ERROR_BUSY: return "LIBUSB_ERROR_BUSY";
    case LIBUSB_ERROR_TIMEOUT: return "LIBUSB_ERROR_TIMEOUT";
    case LIBUSB_ERROR_OVERFLOW: return "LIBUSB_ERROR_OVERFLOW";
    case LIBUSB_ERROR_PIPE: return "LIBUSB_ERROR_PIPE";
    case LIBUSB_ERROR_INTERRUPTED: return "LIBUSB_ERROR_INTERRUPTED";
    case LIBUSB_ERROR_NO_MEM: return "LIBUSB_ERROR_NO_MEM";
    case LIBUSB_ERROR_NOT_SUPPORTED: return "LIBUSB_ERROR_NOT_SUPPORTED";
    default: return "LIBUSB_ERROR_OTHER";
    }
}

static const char *status_name(enum libusb_transfer_status status)
{
    switch (status) {
    case LIBUSB_TRANSFER_COMPLETED: return "LIBUSB_TRANSFER_COMPLETED";
    case LIBUSB_TRANSFER_ERROR: return "LIBUSB_TRANSFER_ERROR";
    case LIBUSB_TRANSFER_TIMED_OUT: return "LIBUSB_TRANSFER_TIMED_OUT";
    case LIBUSB_TRANSFER_CANCELLED: return "LIBUSB_TRANSFER_CANCELLED";
    case LIBUSB_TRANSFER_STALL: return "LIBUSB_TRANSFER_STALL";
    case LIBUSB_TRANSFER_NO_DEVICE: return "LIBUSB_TRANSFER_NO_DEVICE";
    case LIBUSB_TRANSFER_OVERFLOW: return "LIBUSB_TRANSFER_OVERFLOW";
    }
    return "LIBUSB_TRANSFER_UNKNOWN";
}

/* A red mark beside the range: a failed, timed-out or stalled transfer, a failed call. */
__attribute__((format(printf, 2, 3))) static void warn(uint64_t payload, const char *format, ...)
{
    char text[160];
    va_list args;
    va_start(args, format);
    vsnprintf(text, sizeof text, format, args);
    va_end(args);
    struct nvs_attributes mark = NVS_ATTRIBUTES_PAYLOAD(NVS_DOMAIN_USB, NVS_USB_WARNING,
                                                        NVS_COLOR_ERROR, payload);
    nvs_attributes_name(&mark, (struct nvs_name){ NULL, text });
    nvs_mark(&mark);
}

/* ---- bytes moved ----------------------------------------------------------
 *
 * A transfer that moves fewer bytes than it asked for has completed: it is
 * not an error. Protocols end a message with a short packet and read into a
 * buffer larger than the answer (MTP, CDC, mass storage, most vendor
 * protocols), so a red mark for each made the errors impossible to find (an
 * MTP replay: 2,449 marks, about 100 names, one per byte count). What a user
 * wants from a short transfer is how many bytes it moved, in the place each
 * tool can hold it:
 *
 *   - The trace file (NVTXSHIM_TRACE): the recorder writes a push/pop range
 *     when it is popped, so a synchronous transfer's range gets the bytes
 *     moved as its payload; its name keeps the requested size. A short one
 *     is a range whose payload is less than its name says, and nothing else:
 *     no event that would only repeat the payload.
 *   - nsys, or any other NVTX tool, takes a range's payload with its push,
 *     before the transfer ran: the range keeps the requested size, and a
 *     short completion is a mark in category "transfer" (the transfers'
 *     colour, not red) with the bytes moved as payload, named after the
 *     range ("short transfer libusb_bulk_transfer ep=0x81 IN 9216B"): one
 *     name per transfer shape, however many byte counts come back.
 *   - Asynchronous transfers: the completion callback's range, pushed once
 *     the transfer has completed, carries the bytes moved in either tool, so
 *     no mark is needed; the submission's range began (and its begin was
 *     written) at submission, with the requested size.
 *
 * A failed transfer keeps its red mark, with the bytes moved before it failed
 * in the mark's name and payload (and the range's payload in the trace file). */

/* A short completion under a tool that took the range's payload at its push. */
static void short_mark(struct nvs_name name, uint64_t moved)
{
    struct nvs_attributes mark = NVS_ATTRIBUTES_PAYLOAD(NVS_DOMAIN_USB, NVS_USB_TRANSFER,
                                                        NVS_COLOR_USB, moved);
    nvs_attributes_name(&mark, name);
    nvs_mark(&mark);
}

/* The short-completion mark's name: the range's key with this bit. */
#define SHORT_KEY NVS_KEY_VARIANT

/* ---- synchronous transfers ---------------------------------------------- */

/* The key of a bulk or interrupt transfer's range: its endpoint and length
 * (40 bits). */
static inline uint64_t data_key(enum nvs_hook_id id, unsigned char endpoint, int length)
{
    return nvs_call_name_key(id, ((uint64_t)endpoint << 32) | (uint32_t)length);
}

static inline enum nvs_frame_marker data_marker(unsigned char endpoint)
{
    return (endpoint & LIBUSB_ENDPOINT_IN) ? NVS_FRAME_USB_IN : NVS_FRAME_USB_OUT;
}

/* The range of a bulk or interrupt transfer, the first time its shape is
 * used: named after endpoint, direction and length, with the length asked
 * for as the payload; built and stored (nvs_range_store), then opened. Out of
 * line, with its buffer: the traced call's frame stays small. */
static __attribute__((noinline, cold)) void data_open_first(enum nvs_hook_id id,
                                                            unsigned char endpoint, int length)
{
    uint64_t key = data_key(id, endpoint, length);
    const struct nvs_attributes *built = nvs_range_find(NVS_DOMAIN_USB, key);
    struct nvs_attributes range;
    if (!built) {
        char text[NVS_CALL_TEXT_MAX];
        snprintf(text, sizeof text, "%s ep=0x%02x %s %dB", nvs_hook_name(id), endpoint,
                 direction(endpoint), length);
        range = NVS_ATTRIBUTES_PAYLOAD(NVS_DOMAIN_USB, NVS_USB_TRANSFER, NVS_COLOR_USB,
                                       (uint64_t)(length > 0 ? length : 0));
        built = nvs_range_store(&range, key, text);
    }
    nvs_call_open_built(id, data_marker(endpoint), endpoint, NVS_DOMAIN_USB, built);
}

/* The dispatch of a transfer, its marker found here, out of line. */
static __attribute__((noinline, cold)) void data_dispatch(enum nvs_hook_id id,
                                                          unsigned char endpoint)
{
    nvs_call_dispatch(id, data_marker(endpoint), endpoint, NVS_DOMAIN_USB);
}

/* Opens the range of a bulk or interrupt transfer: the one built for its
 * shape, found at once after the first (nvs_range_lookup). */
static inline __attribute__((always_inline)) void data_open(enum nvs_hook_id id,
                                                            unsigned char endpoint, int length)
{
    const struct nvs_attributes *range = nvs_range_lookup(NVS_DOMAIN_USB,
                                                          data_key(id, endpoint, length));
    if (__builtin_expect(range == NULL, 0)) {
        data_open_first(id, endpoint, length);
        return;
    }
    if (nvs_call_has_work())
        data_dispatch(id, endpoint);
    nvs_range_push_in(NVS_DOMAIN_USB, range);
}

/* A bulk or interrupt transfer's range ends unusually: it failed (RESULT),
 * or MOVED of LENGTH bytes moved, fewer than asked for. errno is kept. */
static __attribute__((noinline, cold)) void data_ended_unusually(enum nvs_hook_id id,
                                                                 unsigned char endpoint, int length,
                                                                 int moved, int result)
{
    int saved_errno = errno;
    if (result < 0)
        warn((uint64_t)moved, "%s %s ep=0x%02x %s %d/%dB", error_name(result), nvs_hook_name(id),
             endpoint, direction(endpoint), moved, length);
    /* All of it: the range's payload says so already. */
    if (moved != length && !nvs_range_set_payload(NVS_DOMAIN_USB, (uint64_t)moved) && result >= 0 &&
        moved < length) {
        struct nvs_name name;
        char text[NVS_CALL_TEXT_MAX];
        NVS_NAME(name, NVS_DOMAIN_USB, data_key(id, endpoint, length) ^ SHORT_KEY, text,
                 "short transfer %s ep=0x%02x %s %dB", nvs_hook_name(id), endpoint,
                 direction(endpoint), length);
        short_mark(name, (uint64_t)moved);
    }
    errno = saved_errno;
}

/* A traced bulk or interrupt transfer: inlined into one function per hook
 * with the hook's own arguments, which its wrapper jumps to (a tail call:
 * the wrapper saves no register and moves no argument). */
static inline __attribute__((always_inline)) int data_transfer(
    enum nvs_hook_id id, libusb_device_handle *handle, unsigned char endpoint, unsigned char *data,
    int length, int *transferred, unsigned int timeout)
{
    data_open(id, endpoint, length);
    /* loaded after the push: no register kept for it across the tool's call */
    __typeof__(&libusb_bulk_transfer) real = (__typeof__(&libusb_bulk_transfer))nvs_resolved(id);

    /* libusb writes *transferred only when the transfer ran: not when its
     * submission failed (LIBUSB_ERROR_NO_DEVICE, _BUSY...), where the program's
     * variable keeps whatever it held and nothing moved. Ours starts at -1 to
     * tell the two apart, and the program's is written exactly when libusb
     * writes it. libusb is given ours even when the program passed NULL (it
     * only writes it), so the bytes moved are always known. */
    int moved = -1;
    int result = real(handle, endpoint, data, length, &moved, timeout);
    if (transferred && moved >= 0)
        *transferred = moved;
    if (moved < 0)
        moved = 0;
    if (__builtin_expect(result < 0 || moved != length, 0))
        data_ended_unusually(id, endpoint, length, moved, result);
    nvs_call_close(NVS_DOMAIN_USB);
    return result;
}

/* A bulk or interrupt transfer's wrapper (hook.h's, in three parts): its
 * traced part passes libusb a transferred count of its own (data_transfer). */
#define DATA_TRANSFER(name)                                                                        \
    NVS_SPLIT_WRAPPER_TRACED(NVS_HOOKS_USB, int, name,                                             \
                             (libusb_device_handle * handle, unsigned char endpoint,               \
                              unsigned char *data, int length, int *transferred,                   \
                              unsigned int timeout),                                               \
                             (handle, endpoint, data, length, transferred, timeout), nvs_resolve,  \
                             LIBUSB_ERROR_NOT_SUPPORTED,                                           \
                             return data_transfer(NVS_HOOK_ID(name), handle, endpoint, data,       \
                                                  length, transferred, timeout))

DATA_TRANSFER(libusb_bulk_transfer)
DATA_TRANSFER(libusb_interrupt_transfer)

/* The range of a control transfer: the setup packet's fields and length. */
static void describe_control(struct nvs_attributes *range, char *text, uint8_t request_type,
                             uint8_t request, uint16_t value, uint16_t length)
{
    *range = NVS_ATTRIBUTES_PAYLOAD(NVS_DOMAIN_USB, NVS_USB_TRANSFER, NVS_COLOR_USB, length);
    uint64_t key = nvs_call_name_key(NVS_HOOK_ID(libusb_control_transfer),
                                     ((uint64_t)request_type << 40) | ((uint64_t)request << 32) |
                                         ((uint64_t)value << 16) | length);
    struct nvs_name name = nvs_name_lookup(NVS_DOMAIN_USB, key);
    if (!name.registered) {
        snprintf(text, NVS_CALL_TEXT_MAX,
                 "libusb_control_transfer type=0x%02x req=0x%02x val=0x%04x %s %uB", request_type,
                 request, value, direction(request_type), length);
        name = nvs_name_store(NVS_DOMAIN_USB, key, text);
    }
    nvs_attributes_name(range, name);
}

/* A control transfer's range ends, MOVED of LENGTH data bytes moved
 * (COMPLETED: without an error; a failed one reports none). */
static void control_moved(uint8_t request_type, uint8_t request, uint16_t value, uint16_t length,
                          int moved, bool completed)
{
    if (moved == length)
        return;
    if (nvs_range_set_payload(NVS_DOMAIN_USB, (uint64_t)moved) || !completed || moved >= length)
        return;
    uint64_t key = nvs_call_name_key(NVS_HOOK_ID(libusb_control_transfer),
                                     ((uint64_t)request_type << 40) | ((uint64_t)request << 32) |
                                         ((uint64_t)value << 16) | length);
    struct nvs_name name;
    char text[NVS_CALL_TEXT_MAX];
    NVS_NAME(name, NVS_DOMAIN_USB, key ^ SHORT_KEY, text,
             "short transfer libusb_control_transfer type=0x%02x req=0x%02x val=0x%04x %s %uB",
             request_type, request, value, direction(request_type), length);
    short_mark(name, (uint64_t)moved);
}

NVS_EXPORT int LIBUSB_CALL libusb_control_transfer(libusb_device_handle *handle,
                                                   uint8_t request_type, uint8_t request,
                                                   uint16_t value, uint16_t index,
                                                   unsigned char *data, uint16_t length,
                                                   unsigned int timeout)
{
    __typeof__(&libusb_control_transfer) real = NVS_REAL(libusb_control_transfer);
    if (!real)
        return LIBUSB_ERROR_NOT_SUPPORTED;
    if (!nvs_call_begins(NVS_HOOKS_USB))
        return real(handle, request_type, request, value, index, data, length, timeout);

    struct nvs_attributes range;
    char text[NVS_CALL_TEXT_MAX];
    describe_control(&range, text, request_type, request, value, length);
    nvs_call_open(NVS_HOOK_ID(libusb_control_transfer), NVS_FRAME_OFF, 0, &range);
    int result = real(handle, request_type, request, value, index, data, length, timeout);
    int saved_errno = errno;
    if (result < 0)
        warn(0, "%s libusb_control_transfer type=0x%02x req=0x%02x val=0x%04x", error_name(result),
             request_type, request, value);
    control_moved(request_type, request, value, length, result > 0 ? result : 0, result >= 0);
    errno = saved_errno;
    nvs_call_close(NVS_DOMAIN_USB);
    return result;
}

/* ---- asynchronous transfers --------------------------------------------- */

/* Transfers in flight, keyed by address: the program's callback, restored
 * before it runs, and the submission range that the completion ends. Insert
 * and remove are lock-free; probing is bounded, and a transfer that finds no
 * slot simply goes untraced. */
#define FLIGHT_SLOTS 4096u
#define FLIGHT_PROBES 64u

struct flight {
    _Atomic(struct libusb_transfer *) transfer;
    libusb_transfer_cb_fn callback;
    nvtxRangeId_t range;
    /* The callback's range built for the transfer's shape, its payload the
     * bytes asked for (nvs_range_store); NULL where none is built, and the
     * callback's range is then made at the completion, named callback_name. */
    const struct nvs_attributes *callback_range;
    struct nvs_name callback_name;
};

static struct flight flights[FLIGHT_SLOTS];

static uint32_t flight_slot(const struct libusb_transfer *transfer)
{
    uintptr_t bits = (uintptr_t)transfer;
    bits ^= bits >> 17;
    bits *= 0x9e3779b97f4a7c15ull;
    return (uint32_t)(bits >> 40) & (FLIGHT_SLOTS - 1);
}

static struct flight *flight_claim(struct libusb_transfer *transfer)
{
    uint32_t slot = flight_slot(transfer);
    for (uint32_t probe = 0; probe < FLIGHT_PROBES; probe++) {
        struct flight *flight = &flights[(slot + probe) & (FLIGHT_SLOTS - 1)];
        struct libusb_transfer *expected = NULL;
        if (atomic_compare_exchange_strong(&flight->transfer, &expected, transfer))
            return flight;
    }
    return NULL;
}

static struct flight *flight_find(const struct libusb_transfer *transfer)
{
    uint32_t slot = flight_slot(transfer);
    for (uint32_t probe = 0; probe < FLIGHT_PROBES; probe++) {
        struct flight *flight = &flights[(slot + probe) & (FLIGHT_SLOTS - 1)];
        if (atomic_load_explicit(&flight->transfer, memory_order_acquire) == transfer)
            return flight;
    }
    return NULL;
}

static void flight_release(struct flight *flight)
{
    atomic_store_explicit(&flight->transfer, NULL, memory_order_release);
}

static const char *type_name(unsigned char type)
{
    switch (type) {
    case LIBUSB_TRANSFER_TYPE_CONTROL: return "CONTROL";
    case LIBUSB_TRANSFER_TYPE_ISOCHRONOUS: return "ISO";
    case LIBUSB_TRANSFER_TYPE_BULK: return "BULK";
    case LIBUSB_TRANSFER_TYPE_INTERRUPT: return "INTERRUPT";
    case LIBUSB_TRANSFER_TYPE_BULK_STREAM: return "BULK_STREAM";
    }
    return "UNKNOWN";
}

/* The part of an async name after the function: what, where, how much. */
static void describe(char *text, size_t size, const struct libusb_transfer *transfer)
{
    if (transfer->type == LIBUSB_TRANSFER_TYPE_CONTROL && transfer->length >= 8 &&
        transfer->buffer) {
        const unsigned char *setup = transfer->buffer;
        snprintf(text, size, "ep=0x%02x CONTROL type=0x%02x req=0x%02x val=0x%04x %s %dB",
                 transfer->endpoint, setup[0], setup[1], setup[2] | (setup[3] << 8),
                 direction(setup[0]), transfer->length - 8);
    } else if (transfer->type == LIBUSB_TRANSFER_TYPE_ISOCHRONOUS) {
        snprintf(text, size, "ep=0x%02x ISO %s %dx%uB", transfer->endpoint,
                 direction(transfer->endpoint), transfer->num_iso_packets,
                 transfer->num_iso_packets > 0 ? transfer->iso_packet_desc[0].length : 0);
    } else {
        snprintf(text, size, "ep=0x%02x %s %s %dB", transfer->endpoint, type_name(transfer->type),
                 direction(transfer->endpoint), transfer->length);
    }
}

/* The parameters of an asynchronous transfer's name (describe), below bit
 * 53 (its callback's name is the variant): the type (bits 50-52), then for
 * a control transfer the setup packet's type, request and value and the
 * length (18 bits: a control transfer moves at most 65535 + 8), else the
 * endpoint and the length (or the packets' count and the first's length).
 * False for a control transfer on an endpoint other than 0, which libusb
 * allows and which has no room here: its name is not kept. */
static inline __attribute__((always_inline)) bool transfer_key(
    const struct libusb_transfer *transfer, uint64_t *key)
{
    uint64_t shape;
    if (transfer->type == LIBUSB_TRANSFER_TYPE_CONTROL && transfer->length >= 8 &&
        transfer->buffer) {
        const unsigned char *setup = transfer->buffer;
        if (transfer->endpoint != 0 || transfer->length > 0x3ffff)
            return false;
        shape = (uint64_t)setup[0] << 42 | (uint64_t)setup[1] << 34 |
            (uint64_t)(setup[2] | setup[3] << 8) << 18 | (uint32_t)transfer->length;
    } else if (transfer->type == LIBUSB_TRANSFER_TYPE_ISOCHRONOUS) {
        shape = (uint64_t)transfer->endpoint << 32 |
            (uint64_t)(uint16_t)transfer->num_iso_packets << 16 |
            (transfer->num_iso_packets > 0 ? transfer->iso_packet_desc[0].length & 0xffff : 0);
    } else {
        shape = (uint64_t)transfer->endpoint << 32 | (uint32_t)transfer->length;
    }
    *key = nvs_call_name_key(NVS_HOOK_ID(libusb_submit_transfer),
                             (uint64_t)(transfer->type & 7) << 50 | shape);
    return true;
}

static uint64_t requested_bytes(const struct libusb_transfer *transfer)
{
    int length = transfer->type == LIBUSB_TRANSFER_TYPE_CONTROL ? transfer->length - 8
                                                                : transfer->length;
    return length > 0 ? (uint64_t)length : 0;
}

static bool counts_as_frame_in(const struct libusb_transfer *transfer)
{
    return transfer->type != LIBUSB_TRANSFER_TYPE_CONTROL &&
        (transfer->endpoint & LIBUSB_ENDPOINT_IN);
}

/* Marks a completion that did not complete (cancellation is the program's
 * own doing and is not marked; a short completion is not a failure, and the
 * callback's range that follows carries the bytes moved). Out of line: the
 * completion calls it only for a status other than completed. */
static __attribute__((noinline, cold)) void check_completion(const struct libusb_transfer *transfer)
{
    char what[112];
    if (transfer->status == LIBUSB_TRANSFER_CANCELLED)
        return;
    describe(what, sizeof what, transfer);
    warn((uint64_t)(transfer->actual_length > 0 ? transfer->actual_length : 0),
         "%s libusb_submit_transfer %s", status_name(transfer->status), what);
}

/* The callback's range when none was built for its shape (flight's
 * callback_name), or when the transfer moved other than it asked: made at
 * the completion, out of line. */
static __attribute__((noinline, cold)) void push_callback_range(const struct flight *flight,
                                                                uint64_t moved)
{
    struct nvs_attributes range;
    if (flight->callback_range) {
        range = *flight->callback_range;
    } else {
        range = NVS_ATTRIBUTES(NVS_DOMAIN_USB, NVS_USB_CALLBACK, NVS_COLOR_USB_CALLBACK);
        nvs_attributes_name(&range, flight->callback_name);
    }
    nvs_attributes_payload(&range, moved);
    nvs_range_push(&range);
}

/* Runs in place of the program's callback, on the thread libusb chose. */
static void LIBUSB_CALL transfer_completed(struct libusb_transfer *transfer)
{
    struct flight *flight = flight_find(transfer);
    /* Cannot happen: the callback is only replaced after a slot was claimed. */
    if (!flight)
        return;
    libusb_transfer_cb_fn callback = flight->callback;
    transfer->callback = callback;

    /* errno at its TLS address (emit.h): a callback is only ever installed by a traced submit */
    int NVS_ERRNO_SPACE *error = nvs_errno_address();
    int saved_errno = *error;
    nvs_range_end(NVS_DOMAIN_USB, flight->range);
    if (__builtin_expect(transfer->status != LIBUSB_TRANSFER_COMPLETED, 0))
        check_completion(transfer);
    if (nvs_call_has_work() && counts_as_frame_in(transfer))
        nvs_call_completed(NVS_HOOK_ID(libusb_submit_transfer), NVS_FRAME_USB_IN,
                           transfer->endpoint);
    /* The callback's range carries the bytes moved: the one built for the
     * shape when they are what it asked for. */
    uint64_t moved = (uint64_t)(transfer->actual_length > 0 ? transfer->actual_length : 0);
    const struct nvs_attributes *built = flight->callback_range;
    if (__builtin_expect(built != NULL && built->event.payload.ullValue == moved, 1))
        nvs_range_push_in(NVS_DOMAIN_USB, built);
    else
        push_callback_range(flight, moved);
    /* The slot is free once nothing more is read from it. */
    flight_release(flight);
    *error = saved_errno;

    /* The program's callback is program-level code: its own libusb calls are traced. */
    unsigned depth = nvs_hook_depth;
    nvs_hook_depth = 0;
    callback(transfer);
    nvs_hook_depth = depth;
    /* The transfer may be freed or resubmitted by now: it is not touched again. */

    nvs_range_pop(NVS_DOMAIN_USB);
}

/* A submission's range and its callback's, for a transfer whose shape has
 * none built yet (or none that can be: a name that finds no slot, a control
 * transfer on another endpoint than 0, an isochronous transfer whose length
 * its key does not hold): described, and built for the shape where they can
 * be. RANGE, when not built, is named into TEXT, valid until the push. */
static __attribute__((noinline, cold)) const struct nvs_attributes *describe_submit(
    struct nvs_attributes *range, char *text, const struct libusb_transfer *transfer,
    struct flight *flight)
{
    uint64_t key;
    bool kept = transfer_key(transfer, &key);
    uint64_t requested = requested_bytes(transfer);
    char what[112];
    describe(what, sizeof what, transfer);
    *range = NVS_ATTRIBUTES_PAYLOAD(NVS_DOMAIN_USB, NVS_USB_CALLBACK, NVS_COLOR_USB_CALLBACK,
                                    requested);
    snprintf(text, NVS_CALL_TEXT_MAX, "libusb_transfer_cb_fn %s", what);
    flight->callback_range = NULL;
    flight->callback_name = (struct nvs_name){ NULL, "libusb_transfer_cb_fn" };
    if (kept) {
        const struct nvs_attributes *callback = nvs_range_find(NVS_DOMAIN_USB,
                                                               key ^ NVS_KEY_VARIANT);
        if (!callback)
            callback = nvs_range_store(range, key ^ NVS_KEY_VARIANT, text);
        if (callback != range && callback->event.payload.ullValue == requested)
            flight->callback_range = callback; /* built: it lives on */
        else if (callback->event.messageType == NVTX_MESSAGE_TYPE_REGISTERED)
            flight->callback_name = (struct nvs_name){ callback->event.message.registered, NULL };
        /* Plain-text names live only as long as this call: the callback keeps the function's. */
    }
    *range = NVS_ATTRIBUTES_PAYLOAD(NVS_DOMAIN_USB, NVS_USB_TRANSFER, NVS_COLOR_USB, requested);
    snprintf(text, NVS_CALL_TEXT_MAX, "libusb_submit_transfer %s", what);
    if (!kept) {
        nvs_attributes_name(range, (struct nvs_name){ NULL, text });
        return range;
    }
    const struct nvs_attributes *built = nvs_range_find(NVS_DOMAIN_USB, key);
    if (built && built->event.payload.ullValue == requested)
        return built;
    if (built) {
        /* the same name, another length (an isochronous transfer's) */
        nvs_attributes_name(range, (struct nvs_name){ built->event.message.registered, NULL });
        return range;
    }
    return nvs_range_store(range, key, text);
}

/* The submission's frame marker, found only when a call is dispatched. */
static __attribute__((noinline, cold)) void submit_dispatch(const struct libusb_transfer *transfer)
{
    bool frame_out = !(transfer->endpoint & LIBUSB_ENDPOINT_IN) &&
        transfer->type != LIBUSB_TRANSFER_TYPE_CONTROL;
    nvs_call_dispatch(NVS_HOOK_ID(libusb_submit_transfer),
                      frame_out ? NVS_FRAME_USB_OUT : NVS_FRAME_OFF, transfer->endpoint,
                      NVS_DOMAIN_USB);
}

/* A submission that failed: no callback will come, so everything is put
 * back as the program left it, and the failure marked. errno is kept. */
static __attribute__((noinline, cold)) void submit_failed(struct libusb_transfer *transfer,
                                                          struct flight *flight, int result)
{
    int saved_errno = errno;
    char what[112];
    transfer->callback = flight->callback;
    nvs_range_end(NVS_DOMAIN_USB, flight->range);
    flight_release(flight);
    describe(what, sizeof what, transfer);
    warn(0, "%s libusb_submit_transfer %s", error_name(result), what);
    errno = saved_errno;
}

/* A traced submission (the wrapper's traced half: the call entered). Its
 * range and its callback's are the ones built for the transfer's shape
 * (nvs_range_lookup), found at once after the first. A transfer libusb will
 * refuse at once (none, or no callback) passes through. */
static inline __attribute__((always_inline)) int submit(struct libusb_transfer *transfer)
{
    __typeof__(&libusb_submit_transfer) real = (__typeof__(&libusb_submit_transfer))nvs_resolved(
        NVS_HOOK_ID(libusb_submit_transfer));
    struct flight *flight;
    if (__builtin_expect(!transfer || !transfer->callback || !(flight = flight_claim(transfer)),
                         0)) {
        nvs_call_leave();
        return real(transfer);
    }
    const struct nvs_attributes *range = NULL, *callback_range = NULL;
    uint64_t key;
    if (__builtin_expect(transfer_key(transfer, &key), 1)) {
        range = nvs_range_lookup(NVS_DOMAIN_USB, key);
        callback_range = nvs_range_lookup(NVS_DOMAIN_USB, key ^ NVS_KEY_VARIANT);
    }
    struct nvs_attributes described;
    char text[NVS_CALL_TEXT_MAX];
    uint64_t requested = requested_bytes(transfer);
    if (__builtin_expect(range != NULL && callback_range != NULL &&
                             range->event.payload.ullValue == requested &&
                             callback_range->event.payload.ullValue == requested,
                         1))
        flight->callback_range = callback_range;
    else
        range = describe_submit(&described, text, transfer, flight);
    flight->callback = transfer->callback;
    if (nvs_call_has_work())
        submit_dispatch(transfer);
    int NVS_ERRNO_SPACE *error = nvs_errno_address();
    int saved_errno = *error;
    flight->range = nvs_range_start(range);
    *error = saved_errno;
    transfer->callback = transfer_completed;

    int result = real(transfer);
    if (__builtin_expect(result < 0, 0))
        submit_failed(transfer, flight, result);
    nvs_call_leave();
    return result;
}

NVS_SPLIT_WRAPPER_TRACED(NVS_HOOKS_USB, int, libusb_submit_transfer,
                         (struct libusb_transfer * transfer), (transfer), nvs_resolve,
                         LIBUSB_ERROR_NOT_SUPPORTED, return submit(transfer))

/* ---- event handling ------------------------------------------------------ */

static __thread bool thread_checked __attribute__((tls_model("initial-exec")));

/* A thread that runs libusb events is named "libusb events" in the timeline,
 * unless the program named it (its OS name differs from the process's). The
 * kernel keeps 15 characters of a name (TASK_COMM_LEN less the NUL): a thread
 * that inherited the name of a program called "harness_physical" is
 * "harness_physica", so the program's name is cut to 15 to compare. */
static __attribute__((noinline, cold)) void name_event_thread(void)
{
    thread_checked = true;
    int saved_errno = errno;
    if (syscall(SYS_gettid) != getpid()) {
        char thread_name[16] = "", process_name[16] = "";
        syscall(SYS_prctl, PR_GET_NAME, thread_name, 0, 0, 0); /* not through our prctl */
        snprintf(process_name, sizeof process_name, "%s", program_invocation_short_name);
        if (!strcmp(thread_name, process_name))
            nvs_name_thread("libusb events");
    }
    errno = saved_errno;
}

/* An event function's range: named after it, in category "events". Inline
 * in the wrapper's traced half (NVS_SPLIT_WRAPPER), as close_events. */
static inline __attribute__((always_inline)) void open_events(enum nvs_hook_id id)
{
    if (__builtin_expect(!thread_checked, 0))
        name_event_thread();
    nvs_call_open_constant(id, NVS_FRAME_OFF, NVS_DOMAIN_USB, NVS_USB_EVENTS, NVS_COLOR_USB_EVENTS);
}

static inline __attribute__((always_inline)) void close_events(void)
{
    nvs_call_close(NVS_DOMAIN_USB);
}

/* Each event function: pass through when untraced, otherwise one range. */
#define EVENTS_WRAPPER(name, parameters, arguments)                                                \
    NVS_SPLIT_WRAPPER(NVS_HOOKS_USB, int, name, parameters, arguments, nvs_resolve,                \
                      LIBUSB_ERROR_NOT_SUPPORTED, open_events(NVS_HOOK_ID(name)), close_events())

EVENTS_WRAPPER(libusb_handle_events, (libusb_context * context), (context))
EVENTS_WRAPPER(libusb_handle_events_completed, (libusb_context * context, int *completed),
               (context, completed))
EVENTS_WRAPPER(libusb_handle_events_timeout, (libusb_context * context, struct timeval *timeout),
               (context, timeout))
EVENTS_WRAPPER(libusb_handle_events_timeout_completed,
               (libusb_context * context, struct timeval *timeout, int *completed),
               (context, timeout, completed))
EVENTS_WRAPPER(libusb_wait_for_event, (libusb_context * context, struct timeval *timeout),
               (context, timeout))
EVENTS_WRAPPER(libusb_handle_events_locked, (libusb_context * context, struct timeval *timeout),
               (context, timeout))

/* ---- device management and descriptor requests ------------------------------ */

/* The name of a call's range with the numbers it acts on, the first time it
 * is used, in TEXT. */
static void name_call(char *text, enum nvs_hook_id id, const char *format, int first, int second)
{
    int used = snprintf(text, NVS_CALL_TEXT_MAX, "%s ", nvs_hook_name(id));
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    snprintf(text + used, NVS_CALL_TEXT_MAX - (size_t)used, format, first, second);
#pragma GCC diagnostic pop
}

/* The numbers a call's name says (interface, configuration, alternate
 * setting, endpoint, string index: USB's are below 256, libusb's "none" -1),
 * 24 bits each: two calls whose numbers differ below 2^24 - 1 have names of
 * their own. */
static inline uint64_t call_key(enum nvs_hook_id id, int first, int second)
{
    return nvs_call_name_key(
        id, ((uint64_t)((uint32_t)first & 0xffffffu) << 24) | ((uint32_t)second & 0xffffffu));
}

/* The range of a call named after the numbers it acts on (below), the first
 * time they are used: HAS_PAYLOAD, PAYLOAD its payload, which only a range
 * built anew at each call has (it is not in the name). Out of line, with its
 * buffer. */
static __attribute__((noinline, cold)) void open_call_first(enum nvs_hook_id id,
                                                            enum nvs_usb_category category,
                                                            const char *format, int first,
                                                            int second, bool has_payload,
                                                            uint64_t payload)
{
    char text[NVS_CALL_TEXT_MAX];
    struct nvs_attributes range = NVS_ATTRIBUTES(NVS_DOMAIN_USB, category,
                                                 nvs_category_color(NVS_DOMAIN_USB, category));
    uint64_t key = call_key(id, first, second);
    if (has_payload) {
        nvs_attributes_payload(&range, payload);
        struct nvs_name name = nvs_name_lookup(NVS_DOMAIN_USB, key);
        if (!name.registered) {
            name_call(text, id, format, first, second);
            name = nvs_name_store(NVS_DOMAIN_USB, key, text);
        }
        nvs_attributes_name(&range, name);
        nvs_call_open(id, NVS_FRAME_OFF, -1, &range);
        return;
    }
    const struct nvs_attributes *built = nvs_range_find(NVS_DOMAIN_USB, key);
    if (!built) {
        name_call(text, id, format, first, second);
        built = nvs_range_store(&range, key, text);
    }
    nvs_call_open_built(id, NVS_FRAME_OFF, -1, NVS_DOMAIN_USB, built);
}

/* The range of a call named after its function and, where FORMAT is given,
 * the numbers it acts on (an interface, an endpoint, a string index): a range
 * built once for each (nvs_range_lookup), but for one with a payload. Inline
 * in the wrapper's traced half (NVS_SPLIT_WRAPPER), as close_call. */
static inline __attribute__((always_inline)) void open_call(enum nvs_hook_id id,
                                                            enum nvs_usb_category category,
                                                            const char *format, int first,
                                                            int second, bool has_payload,
                                                            uint64_t payload)
{
    if (!format && !has_payload) {
        nvs_call_open_constant(id, NVS_FRAME_OFF, NVS_DOMAIN_USB, category,
                               nvs_category_color(NVS_DOMAIN_USB, category));
        return;
    }
    const struct nvs_attributes *range = NULL;
    if (format && !has_payload)
        range = nvs_range_lookup(NVS_DOMAIN_USB, call_key(id, first, second));
    if (__builtin_expect(range == NULL, 0)) {
        if (format) {
            open_call_first(id, category, format, first, second, has_payload, payload);
            return;
        }
        struct nvs_attributes own = NVS_ATTRIBUTES(NVS_DOMAIN_USB, category,
                                                   nvs_category_color(NVS_DOMAIN_USB, category));
        nvs_attributes_payload(&own, payload);
        nvs_call_open(id, NVS_FRAME_OFF, -1, &own);
        return;
    }
    nvs_call_open_built(id, NVS_FRAME_OFF, -1, NVS_DOMAIN_USB, range);
}

/* The call returned RESULT: a libusb error gets a red mark beside the range.
 * MOVES: RESULT is the bytes it moved (a string descriptor's length), the
 * range's payload in the trace file, 0 when it failed. */
static __attribute__((noinline, cold)) void call_ended_unusually(enum nvs_hook_id id, int result,
                                                                 bool moves)
{
    int saved_errno = errno;
    if (moves)
        nvs_range_set_payload(NVS_DOMAIN_USB, result > 0 ? (uint64_t)result : 0);
    if (result < 0)
        warn(0, "%s %s", error_name(result), nvs_hook_name(id));
    errno = saved_errno;
}

static inline __attribute__((always_inline)) void close_call(enum nvs_hook_id id, int result,
                                                             bool moves)
{
    if (__builtin_expect(moves || result < 0, 0))
        call_ended_unusually(id, result, moves);
    nvs_call_close(NVS_DOMAIN_USB);
}

/* A wrapper that opens one range of CATEGORY around the call (FORMAT, FIRST,
 * SECOND: the numbers in its name; PAYLOAD: the bytes it asks for, if any). */
#define DEVICE_CALL(name, parameters, arguments, category, format, first, second, has_payload,     \
                    payload)                                                                       \
    NVS_SPLIT_WRAPPER(                                                                             \
        NVS_HOOKS_USB, int, name, parameters, arguments, nvs_resolve, LIBUSB_ERROR_NOT_SUPPORTED,  \
        open_call(NVS_HOOK_ID(name), category, format, first, second, has_payload, payload),       \
        close_call(NVS_HOOK_ID(name), result, has_payload))

DEVICE_CALL(libusb_open, (libusb_device * device, libusb_device_handle **handle), (device, handle),
            NVS_USB_DEVICE, NULL, 0, 0, false, 0)
DEVICE_CALL(libusb_set_configuration, (libusb_device_handle * handle, int configuration),
            (handle, configuration), NVS_USB_DEVICE, "%d", configuration, 0, false, 0)
DEVICE_CALL(libusb_claim_interface, (libusb_device_handle * handle, int interface_number),
            (handle, interface_number), NVS_USB_DEVICE, "%d", interface_number, 0, false, 0)
DEVICE_CALL(libusb_release_interface, (libusb_device_handle * handle, int interface_number),
            (handle, interface_number), NVS_USB_DEVICE, "%d", interface_number, 0, false, 0)
DEVICE_CALL(libusb_set_interface_alt_setting,
            (libusb_device_handle * handle, int interface_number, int alternate_setting),
            (handle, interface_number, alternate_setting), NVS_USB_DEVICE, "%d alt=%d",
            interface_number, alternate_setting, false, 0)
DEVICE_CALL(libusb_clear_halt, (libusb_device_handle * handle, unsigned char endpoint),
            (handle, endpoint), NVS_USB_DEVICE, "ep=0x%02x", endpoint, 0, false, 0)
DEVICE_CALL(libusb_reset_device, (libusb_device_handle * handle), (handle), NVS_USB_DEVICE, NULL, 0,
            0, false, 0)
DEVICE_CALL(libusb_get_string_descriptor_ascii,
            (libusb_device_handle * handle, uint8_t index, unsigned char *data, int length),
            (handle, index, data, length), NVS_USB_TRANSFER, "idx=%d", index, 0, true,
            (uint64_t)(length > 0 ? length : 0))
DEVICE_CALL(libusb_get_bos_descriptor,
            (libusb_device_handle * handle, struct libusb_bos_descriptor **bos), (handle, bos),
            NVS_USB_TRANSFER, NULL, 0, 0, false, 0)
