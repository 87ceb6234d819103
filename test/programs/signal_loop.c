/* signal_loop: the emulated device's protocol, frame by frame, raising a signal
 * after the frames named on the command line, with a handler of its own for
 * that signal installed in main (after the shim has loaded).
 *
 *     signal_loop FRAMES SIGNAL AFTER_FRAME...
 *
 * Prints how many times its handler ran, so a test can see that a handler the
 * program installed keeps working behind the capture trigger's. */
#include <libusb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile sig_atomic_t handled;

static void on_signal(int number)
{
    (void)number;
    handled++;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: signal_loop FRAMES SIGNAL AFTER_FRAME...\n");
        return 2;
    }
    int frames = atoi(argv[1]), number = atoi(argv[2]);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_signal;
    sigaction(number, &action, NULL);

    libusb_context *context;
    if (libusb_init(&context) < 0)
        return 1;
    libusb_device_handle *handle = libusb_open_device_with_vid_pid(context, 0x1209, 0x0001);
    if (!handle)
        return 1;
    libusb_claim_interface(handle, 0);
    static unsigned char frame[64 * 48 * 3];
    int action_index = 0, errors = 0;
    for (int i = 0; i < frames; i++) {
        unsigned char command[8] = { 0xA5, (unsigned char)action_index, (unsigned char)i, 0, 0, 0, 0, 0x5A };
        unsigned char status[8];
        int moved;
        errors += libusb_control_transfer(handle, 0x40, 0x01, (uint16_t)i, (uint16_t)action_index,
                                          NULL, 0, 2000) < 0;
        errors += libusb_bulk_transfer(handle, 0x02, command, 8, &moved, 2000) < 0;
        errors += libusb_bulk_transfer(handle, 0x81, frame, sizeof frame, &moved, 2000) < 0;
        errors += libusb_interrupt_transfer(handle, 0x83, status, 8, &moved, 2000) < 0;
        action_index = status[2]; /* the device says which action it expects next */
        for (int k = 3; k < argc; k++)
            if (atoi(argv[k]) == i + 1)
                raise(number);
    }
    printf("frames=%d errors=%d handler ran %d times\n", frames, errors, (int)handled);
    libusb_release_interface(handle, 0);
    libusb_close(handle);
    libusb_exit(context);
    return errors ? 3 : 0;
}
