/* I2C buses (/dev/i2c-N, i2c-dev's major 89), a kind of device file
 * (nvs_device_i2c, at the end), for rigs whose sensors and actuators hang on
 * I2C: the transfers in domain i2c, each named with the chip's address and
 * its messages, payload the bytes on the bus after the address (the SMBus
 * command byte included):
 *   "I2C_RDWR /dev/i2c-1 0x48 W1 R2"                 a combined transfer
 *   "I2C_SMBUS /dev/i2c-1 0x48 R word_data cmd=0x00" an SMBus command
 *   "read /dev/i2c-1 0x48 2B"                        read() and write() (io.c)
 * The address of an SMBus command and of a read or write is the one I2C_SLAVE
 * (or I2C_SLAVE_FORCE) set on the open file, remembered in the slot, which
 * its duplicates share as they share the kernel's. A transfer is quick and
 * its messages lie in the program's memory, read only once the kernel
 * accepted them: its range is drawn when it returned, from when it began. One
 * that failed is named after the node and the address alone, payload 0, with
 * a red mark "I2C_RDWR /dev/i2c-1 failed: ENXIO" (no chip answered). */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/i2c-dev.h>
#include <linux/i2c.h>
#include <stdio.h>
#include <string.h>

#include "../emit.h"
#include "device_calls.h"

#ifndef I2C_RDWR_IOCTL_MAX_MSGS
#define I2C_RDWR_IOCTL_MAX_MSGS 42 /* older kernel headers: the limit i2c-dev has had since 2.6 */
#endif

/* Name keys: the request (top 2 bits of the 32) and its details; a transfer
 * whose details do not fit gets its name as text, unregistered. */
enum { KEY_RDWR = 1, KEY_SMBUS, KEY_FAILED };
#define KEY(request, details) (((uint32_t)(request) << 30) | (details))

/* The chip I2C_SLAVE chose, plus 1 (0: none yet). */
static unsigned address_of(const struct nvs_device *device)
{
    return atomic_load_explicit(&device->i2c_address, memory_order_relaxed);
}

/* " 0x48", or "" before I2C_SLAVE. */
static void describe_address(char *out, size_t size, unsigned address_plus_one)
{
    if (address_plus_one)
        snprintf(out, size, " 0x%02x", address_plus_one - 1);
    else
        out[0] = '\0';
}

/* read() and write() go to the chip I2C_SLAVE chose: "read /dev/i2c-1 0x48 2B".
 * i2c-dev moves at most 8192 bytes a call, so the count fits the key. */
static struct nvs_name i2c_io_name(const struct nvs_device *device, enum nvs_hook_id id,
                                   size_t count, bool vector)
{
    char address[16];
    unsigned chip = address_of(device) & 0x7ffu;
    describe_address(address, sizeof address, chip);
    if (vector)
        return nvs_device_name(device, id, chip << 20, "%s %s%s", nvs_hook_name(id), device->path,
                               address);
    return nvs_device_name(device, id, chip << 20 | (uint32_t)(count < 0xfffff ? count : 0xfffff),
                           "%s %s%s %zuB", nvs_hook_name(id), device->path, address, count);
}

/* ---- the transfers ------------------------------------------------------------------ */

/* A transfer's range as it returned: NAME under KEY (or as text where KEY is
 * 0); MOVED bytes, of which IN came from the chip. One that failed (RESULT <
 * 0) is named after WHAT alone, with a red mark. */
struct transfer {
    const char *what; /* "I2C_RDWR /dev/i2c-1 0x48": the failed one's name */
    char name[NVS_CALL_TEXT_MAX];
    uint32_t key, failed_key;
    uint64_t moved, in;
};

static void transfer_done(struct nvs_device *device, const struct transfer *transfer, int result,
                          int error, uint64_t began)
{
    struct nvs_attributes range = NVS_ATTRIBUTES_PAYLOAD(NVS_DOMAIN_I2C, 0, 0,
                                                         result >= 0 ? transfer->moved : 0);
    enum nvs_frame_marker marker = NVS_FRAME_OFF;
    if (result >= 0) {
        range.event.category = transfer->in ? NVS_TTY_READ : NVS_TTY_WRITE;
        if (transfer->key)
            nvs_attributes_name(
                &range,
                nvs_device_name(device, NVS_HOOK_ID(ioctl), transfer->key, "%s", transfer->name));
        else
            nvs_attributes_name(&range, (struct nvs_name){ NULL, transfer->name });
        /* A transfer that brought bytes in is the node's in marker; one that
         * only took bytes out, its out marker. */
        marker = transfer->in ? device->in_marker
            : transfer->moved ? device->out_marker
                              : NVS_FRAME_OFF;
    } else {
        range.event.category = NVS_TTY_CONTROL;
        nvs_attributes_name(&range,
                            nvs_device_name(device, NVS_HOOK_ID(ioctl), transfer->failed_key, "%s",
                                            transfer->what));
        if (!nvs_device_ordinary_failure(error)) /* a signal's EINTR is no failure of the bus */
            nvs_device_warn(device, transfer->what, error);
    }
    range.event.color = nvs_category_color(NVS_DOMAIN_I2C, range.event.category);
    nvs_call_drawn(NVS_HOOK_ID(ioctl), marker, -1, &range, began);
}

/* I2C_RDWR: "I2C_RDWR /dev/i2c-1 0x48 W1 R2", the address again where a
 * message goes to another chip. Registered when it is one or two messages of
 * under 256 bytes to one 7-bit address. */
static int rdwr(nvs_ioctl_fn real, struct nvs_device *device, int fd, unsigned long request,
                void *program_argument)
{
    uint64_t began = nvs_now_ns();
    int result = real(fd, request, program_argument);
    int saved_errno = errno;
    char what[NVS_CALL_TEXT_MAX];
    snprintf(what, sizeof what, "I2C_RDWR %s", device->path);
    struct transfer transfer = { .what = what, .failed_key = KEY(KEY_FAILED, 0) };
    if (result >= 0) {
        /* Accepted: the messages are the program's to read again (copied: they
         * may sit at any alignment). */
        struct i2c_rdwr_ioctl_data data;
        memcpy(&data, program_argument, sizeof data);
        int length = snprintf(transfer.name, sizeof transfer.name, "I2C_RDWR %s", device->path);
        bool fits = data.nmsgs >= 1 && data.nmsgs <= 2;
        uint32_t details = data.nmsgs == 2 ? 1u << 22 : 0;
        int last_address = -1;
        for (uint32_t i = 0; i < data.nmsgs && i < I2C_RDWR_IOCTL_MAX_MSGS; i++) {
            struct i2c_msg message;
            memcpy(&message, &data.msgs[i], sizeof message);
            bool in = message.flags & I2C_M_RD;
            transfer.moved += message.len;
            transfer.in += in ? message.len : 0;
            if (length > 0 && (size_t)length < sizeof transfer.name) {
                if (message.addr != last_address)
                    length += snprintf(transfer.name + length,
                                       sizeof transfer.name - (size_t)length, " 0x%02x",
                                       message.addr);
                if ((size_t)length < sizeof transfer.name)
                    length += snprintf(transfer.name + length,
                                       sizeof transfer.name - (size_t)length, " %c%u",
                                       in ? 'R' : 'W', message.len);
            }
            if (i == 0)
                details |= (uint32_t)(message.addr & 0x7f) << 23;
            if (message.len > 0xff || message.addr > 0x7f || (i && message.addr != last_address))
                fits = false;
            details |= ((in ? 1u << 8 : 0) | message.len) << (i ? 0 : 11);
            last_address = message.addr;
        }
        if (fits && (size_t)length < sizeof transfer.name)
            transfer.key = KEY(KEY_RDWR, details);
    }
    transfer_done(device, &transfer, result, saved_errno, began);
    errno = saved_errno;
    return result;
}

static const char *smbus_size_name(uint32_t size)
{
    switch (size) {
    case I2C_SMBUS_QUICK: return "quick";
    case I2C_SMBUS_BYTE: return "byte";
    case I2C_SMBUS_BYTE_DATA: return "byte_data";
    case I2C_SMBUS_WORD_DATA: return "word_data";
    case I2C_SMBUS_PROC_CALL: return "proc_call";
    case I2C_SMBUS_BLOCK_DATA: return "block_data";
    case I2C_SMBUS_I2C_BLOCK_BROKEN: return "i2c_block_broken";
    case I2C_SMBUS_BLOCK_PROC_CALL: return "block_proc_call";
    case I2C_SMBUS_I2C_BLOCK_DATA: return "i2c_block_data";
    default: return "size?";
    }
}

/* The bytes an SMBus command put on the bus after the address: its command
 * byte, its data (a block's count byte too; a block's length as the kernel
 * left it in block[0]). A quick command moves none. */
static uint64_t smbus_moved(const struct i2c_smbus_ioctl_data *command)
{
    uint8_t block_length = 0;
    if (command->data &&
        (command->size == I2C_SMBUS_BLOCK_DATA || command->size == I2C_SMBUS_I2C_BLOCK_BROKEN ||
         command->size == I2C_SMBUS_BLOCK_PROC_CALL || command->size == I2C_SMBUS_I2C_BLOCK_DATA))
        memcpy(&block_length, &command->data->block[0], 1);
    if (block_length > I2C_SMBUS_BLOCK_MAX)
        block_length = I2C_SMBUS_BLOCK_MAX;
    switch (command->size) {
    case I2C_SMBUS_QUICK: return 0;
    case I2C_SMBUS_BYTE: return 1;
    case I2C_SMBUS_BYTE_DATA: return 2;
    case I2C_SMBUS_WORD_DATA: return 3;
    case I2C_SMBUS_PROC_CALL: return 5;
    case I2C_SMBUS_BLOCK_DATA:
    case I2C_SMBUS_BLOCK_PROC_CALL: return 2u + block_length;
    default: return 1u + block_length;
    }
}

/* I2C_SMBUS: "I2C_SMBUS /dev/i2c-1 0x48 R word_data cmd=0x00". */
static int smbus(nvs_ioctl_fn real, struct nvs_device *device, int fd, unsigned long request,
                 void *program_argument)
{
    uint64_t began = nvs_now_ns();
    int result = real(fd, request, program_argument);
    int saved_errno = errno;
    unsigned chip = address_of(device) & 0x7ffu;
    char address[16], what[NVS_CALL_TEXT_MAX];
    describe_address(address, sizeof address, chip);
    snprintf(what, sizeof what, "I2C_SMBUS %s%s", device->path, address);
    struct transfer transfer = { .what = what, .failed_key = KEY(KEY_FAILED, 1u << 11 | chip) };
    if (result >= 0) {
        struct i2c_smbus_ioctl_data command;
        memcpy(&command, program_argument, sizeof command); /* accepted; at any alignment */
        bool in = command.read_write == I2C_SMBUS_READ;
        transfer.moved = smbus_moved(&command);
        /* What came back: a read's data, a process call's answer. */
        transfer.in = in || command.size == I2C_SMBUS_PROC_CALL ||
                command.size == I2C_SMBUS_BLOCK_PROC_CALL
            ? transfer.moved
            : 0;
        snprintf(transfer.name, sizeof transfer.name, "I2C_SMBUS %s%s %c %s cmd=0x%02x",
                 device->path, address, in ? 'R' : 'W', smbus_size_name(command.size),
                 command.command);
        if (chip < 0x100 && command.size < 16)
            transfer.key = KEY(KEY_SMBUS,
                               chip << 22 | (in ? 1u << 21 : 0) | command.size << 17 |
                                   (uint32_t)command.command << 9);
    }
    transfer_done(device, &transfer, result, saved_errno, began);
    errno = saved_errno;
    return result;
}

static int i2c_ioctl(nvs_ioctl_fn real, struct nvs_device *device, unsigned slot, int fd,
                     unsigned long request, void *argument)
{
    (void)slot;
    unsigned command = (unsigned)request;
    if (command == I2C_SLAVE || command == I2C_SLAVE_FORCE) {
        /* The address is the argument itself, no pointer: kept once the kernel took it. */
        int result = real(fd, request, argument);
        if (result == 0)
            atomic_store_explicit(&device->i2c_address,
                                  ((unsigned)(uintptr_t)argument & 0x3ffu) + 1,
                                  memory_order_relaxed);
        return result;
    }
    bool traced = argument && (command == I2C_RDWR || command == I2C_SMBUS);
    if (!traced || !nvs_call_enter(device->group))
        return real(fd, request, argument);
    int result = command == I2C_RDWR ? rdwr(real, device, fd, request, argument)
                                     : smbus(real, device, fd, request, argument);
    nvs_call_leave();
    return result;
}

static void i2c_opened(struct nvs_device *device)
{
    atomic_store(&device->i2c_address, 0);
}

const struct nvs_device_kind nvs_device_i2c = {
    .name = "i2c",
    .majors = { 89 },
    .sysfs_class = "/i2c-dev/",
    .domain = NVS_DOMAIN_I2C,
    .group = NVS_HOOKS_I2C,
    .in_marker = NVS_FRAME_I2C_IN,
    .out_marker = NVS_FRAME_I2C_OUT,
    .read_category = NVS_TTY_READ,
    .write_category = NVS_TTY_WRITE,
    .wait_category = NVS_TTY_WAIT,
    .warning_category = NVS_TTY_WARNING,
    .io_name = i2c_io_name,
    .ioctl = i2c_ioctl,
    .opened = i2c_opened,
};
