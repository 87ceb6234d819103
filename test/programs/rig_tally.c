/* rig_tally: a control loop that counts what it moves, to compare with a trace.
 *
 *     rig_tally usb FRAMES          the emulated camera's protocol (build/emucam), FRAMES times:
 *                                   a control request, the command (bulk OUT), the frame
 *                                   (bulk IN), the status (interrupt IN)
 *     rig_tally serial PATH LINES   LINES lines written to the serial port PATH, each
 *                                   answered by one line read back
 *
 * At the end, one line per kind of call: "NAME CALLS BYTES", NAME the range name's first
 * words as the library writes them (libusb_bulk_transfer ep=0x81 IN), BYTES what the calls
 * moved. Exit status 0 when every call succeeded. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libusb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "emulated_device.h"

struct tally {
    const char *name;
    long calls, bytes;
};

static void count(struct tally *tally, int bytes)
{
    tally->calls++;
    tally->bytes += bytes;
}

static void print(const struct tally *tallies, int number)
{
    for (int i = 0; i < number; i++)
        printf("%s %ld %ld\n", tallies[i].name, tallies[i].calls, tallies[i].bytes);
}

static int usb(int frames)
{
    struct tally tallies[] = {
        { "libusb_control_transfer", 0, 0 },
        { "libusb_bulk_transfer ep=0x02 OUT", 0, 0 },
        { "libusb_bulk_transfer ep=0x81 IN", 0, 0 },
        { "libusb_interrupt_transfer ep=0x83 IN", 0, 0 },
    };
    libusb_context *context;
    libusb_device_handle *handle = open_emulated_device(&context);
    if (!handle) {
        fprintf(stderr, "rig_tally: no emulated camera\n");
        return 1;
    }
    static unsigned char frame[64 * 48 * 3];
    int action = 0, errors = 0;
    for (int i = 0; i < frames; i++) {
        unsigned char command[8] = { 0xA5, (unsigned char)action, (unsigned char)i, 0, 0, 0, 0, 0x5A };
        unsigned char status[8] = { 0 };
        int moved = 0, result;
        result = libusb_control_transfer(handle, 0x40, 0x01, (uint16_t)i, (uint16_t)action, NULL, 0, 2000);
        errors += result < 0;
        count(&tallies[0], result < 0 ? 0 : result);
        errors += libusb_bulk_transfer(handle, 0x02, command, 8, &moved, 2000) < 0;
        count(&tallies[1], moved);
        moved = 0;
        errors += libusb_bulk_transfer(handle, 0x81, frame, sizeof frame, &moved, 2000) < 0;
        count(&tallies[2], moved);
        moved = 0;
        errors += libusb_interrupt_transfer(handle, 0x83, status, 8, &moved, 2000) < 0;
        count(&tallies[3], moved);
        action = status[2];     /* the device says which action it expects next */
    }
    libusb_release_interface(handle, 0);
    libusb_close(handle);
    libusb_exit(context);
    print(tallies, 4);
    return errors != 0;
}

static int serial(const char *path, int lines)
{
    struct tally tallies[] = { { "write", 0, 0 }, { "read", 0, 0 } };
    int fd = open(path, O_RDWR | O_NOCTTY);
    if (fd < 0) {
        fprintf(stderr, "rig_tally: %s: %s\n", path, strerror(errno));
        return 1;
    }
    struct termios settings;
    if (tcgetattr(fd, &settings) == 0) {
        cfmakeraw(&settings);
        tcsetattr(fd, TCSANOW, &settings);
    }
    int errors = 0;
    for (int i = 0; i < lines; i++) {
        char line[32];
        int length = snprintf(line, sizeof line, "line %d\n", i);
        ssize_t written = write(fd, line, (size_t)length);
        errors += written != length;
        count(&tallies[0], written < 0 ? 0 : (int)written);
        /* the answer, to its newline, however the pty splits it */
        for (;;) {
            char answer[64];
            ssize_t got = read(fd, answer, sizeof answer);
            if (got <= 0) {
                errors++;
                count(&tallies[1], 0);
                break;
            }
            count(&tallies[1], (int)got);
            if (answer[got - 1] == '\n')
                break;
        }
    }
    close(fd);
    print(tallies, 2);
    return errors != 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "usb"))
        return usb(atoi(argv[2]));
    if (argc == 4 && !strcmp(argv[1], "serial"))
        return serial(argv[2], atoi(argv[3]));
    fprintf(stderr, "usage: rig_tally usb FRAMES | rig_tally serial PATH LINES\n");
    return 2;
}
