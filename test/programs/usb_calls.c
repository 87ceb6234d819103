/* usb_calls: each libusb device management, descriptor and event call the
 * shim wraps, made once on the emulated device (1209:0001), in this order,
 * with its result printed on a line of its own:
 *
 *     libusb_open                                  (found with libusb_get_device_list)
 *     libusb_set_configuration 1
 *     libusb_claim_interface 0
 *     libusb_set_interface_alt_setting 0 alt=0
 *     libusb_clear_halt ep=0x81
 *     libusb_get_string_descriptor_ascii idx=1     (the manufacturer's string)
 *     libusb_get_bos_descriptor
 *     libusb_reset_device
 *     libusb_release_interface 0
 *     libusb_handle_events_locked                  (under libusb_lock_events, zero timeout)
 *     libusb_wait_for_event                        (under libusb_lock_event_waiters, zero timeout)
 *
 * Each line is "NAME: RESULT", then the error's name for a negative result,
 * then errno as the call left it (set to 4242 before each call):
 * "libusb_clear_halt ep=0x81: -9 LIBUSB_ERROR_PIPE errno=32". NAME is the range name
 * the shim's contract gives the call. The emulated device need not answer
 * every request (a call may fail): what is printed is what libusb returned,
 * the same with and without the shim. Exit status 0 when the device was
 * found and opened (whatever the other calls returned), 1 otherwise. */
#include <errno.h>
#include <libusb.h>
#include <stdio.h>
#include <string.h>

#define VENDOR 0x1209
#define PRODUCT 0x0001
#define ENDPOINT 0x81

static void said(const char *name, int result)
{
    int error = errno;
    if (result < 0)
        printf("%s: %d %s errno=%d\n", name, result, libusb_error_name(result), error);
    else
        printf("%s: %d errno=%d\n", name, result, error);
}

/* CALL's value, errno set to a value no call sets just before it */
#define FRESH(call) (errno = 4242, (call))

/* The emulated device, opened from the device list; NULL when it is not there. */
static libusb_device_handle *open_device(libusb_context *context)
{
    libusb_device **list = NULL;
    ssize_t count = libusb_get_device_list(context, &list);
    libusb_device_handle *handle = NULL;
    for (ssize_t i = 0; i < count; i++) {
        struct libusb_device_descriptor descriptor;
        if (libusb_get_device_descriptor(list[i], &descriptor) != 0 ||
            descriptor.idVendor != VENDOR || descriptor.idProduct != PRODUCT)
            continue;
        int result = FRESH(libusb_open(list[i], &handle));
        said("libusb_open", result);
        if (result != 0)
            handle = NULL;
        break;
    }
    if (count >= 0)
        libusb_free_device_list(list, 1);
    return handle;
}

int main(void)
{
    libusb_context *context = NULL;
    if (libusb_init(&context) < 0) {
        printf("usb_calls: libusb_init failed\n");
        return 1;
    }
    libusb_device_handle *handle = open_device(context);
    if (!handle) {
        printf("usb_calls: no device %04x:%04x\n", VENDOR, PRODUCT);
        libusb_exit(context);
        return 1;
    }

    said("libusb_set_configuration 1", FRESH(libusb_set_configuration(handle, 1)));
    said("libusb_claim_interface 0", FRESH(libusb_claim_interface(handle, 0)));
    said("libusb_set_interface_alt_setting 0 alt=0", FRESH(libusb_set_interface_alt_setting(handle, 0, 0)));
    said("libusb_clear_halt ep=0x81", FRESH(libusb_clear_halt(handle, ENDPOINT)));

    unsigned char text[64];
    memset(text, 0, sizeof text);
    int result = FRESH(libusb_get_string_descriptor_ascii(handle, 1, text, sizeof text));
    said("libusb_get_string_descriptor_ascii idx=1", result);
    if (result > 0)
        printf("    string 1: '%.*s'\n", result, (const char *)text);

    struct libusb_bos_descriptor *bos = NULL;
    result = FRESH(libusb_get_bos_descriptor(handle, &bos));
    said("libusb_get_bos_descriptor", result);
    if (result == 0 && bos) {
        printf("    capabilities: %u\n", bos->bNumDeviceCaps);
        libusb_free_bos_descriptor(bos);
    }

    said("libusb_reset_device", FRESH(libusb_reset_device(handle)));
    said("libusb_release_interface 0", FRESH(libusb_release_interface(handle, 0)));

    /* Event handling by hand: the events lock held, a poll that does not wait. */
    struct timeval none = { 0, 0 };
    libusb_lock_events(context);
    said("libusb_handle_events_locked", FRESH(libusb_handle_events_locked(context, &none)));
    libusb_unlock_events(context);
    /* Waiting for another thread's event handling to finish: nobody handles
     * events, so it times out at once (1). */
    libusb_lock_event_waiters(context);
    said("libusb_wait_for_event", FRESH(libusb_wait_for_event(context, &none)));
    libusb_unlock_event_waiters(context);

    libusb_close(handle);
    libusb_exit(context);
    return 0;
}
