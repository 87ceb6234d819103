/* Serial ports, a kind of device file: USB serial ttys (ttyACM, ttyUSB, or a
 * tty whose sysfs class sits under a USB device), and any path
 * NVTXSHIM_DEVICES names that no other kind claims (a pty in tests, a
 * /dev/spidev node). Their reads, writes, waits and tcdrain are drawn by
 * io.c in domain serial; their ioctls (termios) pass untraced. */
#include "table.h"

const struct nvs_device_kind nvs_device_serial = {
    .name = "serial",
    .majors = { 166, 188 }, /* ttyACM (USB CDC ACM), ttyUSB (USB serial converters) */
    .sysfs_class = "/tty/",
    .sysfs_also = "/usb",
    .listed = true,
    .domain = NVS_DOMAIN_SERIAL,
    .group = NVS_HOOKS_SERIAL,
    .in_marker = NVS_FRAME_SERIAL_IN,
    .out_marker = NVS_FRAME_SERIAL_OUT,
    .read_category = NVS_TTY_READ,
    .write_category = NVS_TTY_WRITE,
    .wait_category = NVS_TTY_WAIT,
    .drain_category = NVS_TTY_DRAIN,
    .warning_category = NVS_TTY_WARNING,
};
