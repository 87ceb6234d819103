/* The kinds of device file the library traces, one row each: the const a
 * kind's file defines (struct nvs_device_kind, table.h), nvs_device_NAME in
 * NAME.c. init.c gives the list to the table at load. A device is the first
 * kind whose major numbers, else whose sysfs class, fit it. */
#include "device_calls.h"

#define KINDS(KIND)                                                                                \
    KIND(v4l2)   /* cameras: video4linux nodes */                                                  \
    KIND(serial) /* USB serial ttys, NVTXSHIM_DEVICES paths */                                     \
    KIND(hidraw) /* HID nodes */                                                                   \
    KIND(usbfs)  /* /dev/bus/usb/BBB/DDD driven by the program's own ioctls */                     \
    KIND(i2c)    /* I2C buses: /dev/i2c-N */

#define DECLARE(name) extern const struct nvs_device_kind nvs_device_##name;
KINDS(DECLARE)
#undef DECLARE

#define ROW(name) &nvs_device_##name,
const struct nvs_device_kind *const nvs_device_kinds[] = { KINDS(ROW) NULL };
#undef ROW
