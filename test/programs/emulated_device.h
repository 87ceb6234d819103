/* What the test programs that talk to the emulated camera (build/emucam) share. */
#ifndef EMULATED_DEVICE_H
#define EMULATED_DEVICE_H

#include <libusb.h>

/* libusb initialised into *CONTEXT, device 1209:0001 opened, interface 0
 * claimed; NULL when any of it fails. */
static inline libusb_device_handle *open_emulated_device(libusb_context **context)
{
    if (libusb_init(context) < 0)
        return NULL;
    libusb_device_handle *handle = libusb_open_device_with_vid_pid(*context, 0x1209, 0x0001);
    if (handle)
        libusb_claim_interface(handle, 0);
    return handle;
}

#endif
