/* libemui2c.so: the chips on an emulated I2C bus, for an i2c-dev node.
 *
 * No kernel here has i2c-dev. umockdev (test/i2cdev/i2c-1.umockdev) gives
 * the node its sysfs and its device number (char 89:1, what the library tells
 * an I2C bus by), but answers none of i2c-dev's ioctls. Preloaded between the
 * program (and libnvtxshim) and umockdev's preload library, this answers them
 * on the node it is told of, as i2c-dev does over an adapter that speaks
 * plain I2C and SMBus (I2C_FUNC_I2C | I2C_FUNC_SMBUS_EMUL): I2C_FUNCS,
 * I2C_SLAVE and I2C_SLAVE_FORCE (the address for read, write and SMBus),
 * I2C_RDWR, I2C_SMBUS, and read() and write() to the chosen chip. Each chip is
 * 256 registers with a register pointer, as the kernel's i2c-stub models one:
 * a write's first byte sets the pointer, its other bytes are stored from
 * there, a read reads from there, the pointer moving on. A transfer to an
 * address where no chip answers fails with ENXIO, before any of its messages
 * moves (i2c-dev's adapters fail the whole transfer on a NACK). What was
 * moved goes to a log, the truth the tests compare the trace with:
 *
 *   EMUI2C_NODE=/dev/i2c-1          the node
 *   EMUI2C_CHIPS=48:1900a060,50:    the chips: address (hex), then its registers'
 *                                   first bytes (hex); the rest are 0
 *   EMUI2C_LOG=FILE                 one line a transfer: "rdwr 0x48 W1 R2",
 *                                   "smbus 0x48 R size=3 cmd=0x00",
 *                                   "read 0x48 2", "write 0x48 1", "nack 0x51" */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/i2c-dev.h>
#include <linux/i2c.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define CHIPS 8

static struct {
    unsigned address;
    unsigned char registers[256];
    unsigned char pointer;
} chips[CHIPS];
static int chip_count = -1;
static int node_fd = -1;
static unsigned chosen = 0x100;     /* I2C_SLAVE's address; 0x100: none yet */

static void load_chips(void)
{
    if (chip_count >= 0)
        return;
    chip_count = 0;
    const char *list = getenv("EMUI2C_CHIPS");
    while (list && *list && chip_count < CHIPS) {
        unsigned address, byte, length = 0;
        int used = 0;
        if (sscanf(list, "%x:%n", &address, &used) != 1 || !used)
            break;
        list += used;
        chips[chip_count].address = address;
        while (length < 256 && sscanf(list, "%2x", &byte) == 1) {
            chips[chip_count].registers[length++] = (unsigned char)byte;
            list += 2;
        }
        chip_count++;
        if (*list == ',')
            list++;
    }
}

static int chip_at(unsigned address)
{
    load_chips();
    for (int i = 0; i < chip_count; i++)
        if (chips[i].address == address)
            return i;
    return -1;
}

static void log_line(const char *format, ...)
{
    const char *path = getenv("EMUI2C_LOG");
    if (!path)
        return;
    int saved_errno = errno;
    FILE *log = fopen(path, "a");
    if (log) {
        va_list args;
        va_start(args, format);
        vfprintf(log, format, args);
        va_end(args);
        fputc('\n', log);
        fclose(log);
    }
    errno = saved_errno;
}

/* The chip at ADDRESS, or -1 with errno ENXIO (and the NACK logged). */
static int answering(unsigned address)
{
    int chip = chip_at(address);
    if (chip < 0) {
        log_line("nack 0x%02x", address);
        errno = ENXIO;
    }
    return chip;
}

static void chip_write(int chip, const unsigned char *bytes, size_t length)
{
    if (length == 0)
        return;
    chips[chip].pointer = bytes[0];
    for (size_t i = 1; i < length; i++)
        chips[chip].registers[chips[chip].pointer++] = bytes[i];
}

static void chip_read(int chip, unsigned char *bytes, size_t length)
{
    for (size_t i = 0; i < length; i++)
        bytes[i] = chips[chip].registers[chips[chip].pointer++];
}

static int rdwr(struct i2c_rdwr_ioctl_data *data)
{
    if (data->nmsgs > I2C_RDWR_IOCTL_MAX_MSGS) {
        errno = EINVAL;
        return -1;
    }
    for (unsigned i = 0; i < data->nmsgs; i++)
        if (answering(data->msgs[i].addr) < 0)
            return -1;
    char line[512];
    int length = snprintf(line, sizeof line, "rdwr");
    for (unsigned i = 0; i < data->nmsgs; i++) {
        struct i2c_msg *message = &data->msgs[i];
        int chip = chip_at(message->addr);
        bool in = message->flags & I2C_M_RD;
        if (in)
            chip_read(chip, message->buf, message->len);
        else
            chip_write(chip, message->buf, message->len);
        if (length < (int)sizeof line)
            length += snprintf(line + length, sizeof line - (size_t)length, " 0x%02x %c%u",
                               message->addr, in ? 'R' : 'W', message->len);
    }
    log_line("%s", line);
    return (int)data->nmsgs;
}

static int smbus(struct i2c_smbus_ioctl_data *command)
{
    if (chosen > 0x7f) {
        errno = ENXIO;
        return -1;
    }
    int chip = answering(chosen);
    if (chip < 0)
        return -1;
    bool in = command->read_write == I2C_SMBUS_READ;
    unsigned char bytes[I2C_SMBUS_BLOCK_MAX + 1] = { command->command };
    union i2c_smbus_data *data = command->data;
    switch (command->size) {
    case I2C_SMBUS_QUICK:
        break;
    case I2C_SMBUS_BYTE:
        if (in)
            chip_read(chip, &data->byte, 1);
        else
            chip_write(chip, bytes, 1);
        break;
    case I2C_SMBUS_BYTE_DATA:
    case I2C_SMBUS_WORD_DATA: {
        size_t length = command->size == I2C_SMBUS_BYTE_DATA ? 1 : 2;
        if (in) {
            chip_write(chip, bytes, 1);
            chip_read(chip, bytes + 1, length);
            if (length == 1)
                data->byte = bytes[1];
            else
                data->word = (uint16_t)(bytes[1] | bytes[2] << 8);   /* low byte first on the bus */
        } else {
            bytes[1] = length == 1 ? data->byte : (unsigned char)(data->word & 0xff);
            bytes[2] = (unsigned char)(data->word >> 8);
            chip_write(chip, bytes, 1 + length);
        }
        break;
    }
    case I2C_SMBUS_I2C_BLOCK_DATA: {
        size_t length = data->block[0] > I2C_SMBUS_BLOCK_MAX ? I2C_SMBUS_BLOCK_MAX : data->block[0];
        if (in) {
            chip_write(chip, bytes, 1);
            chip_read(chip, data->block + 1, length);
        } else {
            memcpy(bytes + 1, data->block + 1, length);
            chip_write(chip, bytes, 1 + length);
        }
        break;
    }
    default:
        errno = EOPNOTSUPP;
        return -1;
    }
    log_line("smbus 0x%02x %c size=%u cmd=0x%02x", chosen, in ? 'R' : 'W', command->size,
             command->command);
    return 0;
}

static int opened(int fd, const char *path)
{
    const char *node = getenv("EMUI2C_NODE");
    if (fd >= 0 && node && path && !strcmp(path, node)) {
        node_fd = fd;
        chosen = 0x100;
    }
    return fd;
}

EXPORT int open(const char *path, int flags, ...)
{
    static int (*real)(const char *, int, ...);
    if (!real)
        real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
    va_list args;
    va_start(args, flags);
    mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(args, mode_t) : 0;
    va_end(args);
    return opened(real(path, flags, mode), path);
}

EXPORT int open64(const char *path, int flags, ...)
{
    static int (*real)(const char *, int, ...);
    if (!real)
        real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open64");
    va_list args;
    va_start(args, flags);
    mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(args, mode_t) : 0;
    va_end(args);
    return opened(real(path, flags, mode), path);
}

EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
    static int (*real)(int, const char *, int, ...);
    if (!real)
        real = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, "openat");
    va_list args;
    va_start(args, flags);
    mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(args, mode_t) : 0;
    va_end(args);
    return opened(real(dirfd, path, flags, mode), path);
}

EXPORT int close(int fd)
{
    static int (*real)(int);
    if (!real)
        real = (int (*)(int))dlsym(RTLD_NEXT, "close");
    if (fd == node_fd)
        node_fd = -1;
    return real(fd);
}

EXPORT ssize_t read(int fd, void *buffer, size_t count)
{
    static ssize_t (*real)(int, void *, size_t);
    if (!real)
        real = (ssize_t (*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
    if (fd != node_fd || node_fd < 0)
        return real(fd, buffer, count);
    int chip = chosen <= 0x7f ? answering(chosen) : (errno = ENXIO, -1);
    if (chip < 0)
        return -1;
    chip_read(chip, buffer, count);
    log_line("read 0x%02x %zu", chosen, count);
    return (ssize_t)count;
}

EXPORT ssize_t write(int fd, const void *buffer, size_t count)
{
    static ssize_t (*real)(int, const void *, size_t);
    if (!real)
        real = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
    if (fd != node_fd || node_fd < 0)
        return real(fd, buffer, count);
    int chip = chosen <= 0x7f ? answering(chosen) : (errno = ENXIO, -1);
    if (chip < 0)
        return -1;
    chip_write(chip, buffer, count);
    log_line("write 0x%02x %zu", chosen, count);
    return (ssize_t)count;
}

EXPORT int ioctl(int fd, unsigned long request, ...)
{
    static int (*real)(int, unsigned long, ...);
    if (!real)
        real = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
    va_list args;
    va_start(args, request);
    void *argument = va_arg(args, void *);
    va_end(args);
    if (fd != node_fd || node_fd < 0)
        return real(fd, request, argument);
    switch (request) {
    case I2C_FUNCS:
        *(unsigned long *)argument = I2C_FUNC_I2C | I2C_FUNC_SMBUS_EMUL;
        return 0;
    case I2C_SLAVE:
    case I2C_SLAVE_FORCE:
        if ((uintptr_t)argument > 0x7f) {
            errno = EINVAL;
            return -1;
        }
        chosen = (unsigned)(uintptr_t)argument;
        return 0;
    case I2C_RDWR:
        return rdwr(argument);
    case I2C_SMBUS:
        return smbus(argument);
    case I2C_TENBIT:
    case I2C_PEC:
    case I2C_RETRIES:
    case I2C_TIMEOUT:
        return 0;
    default:
        errno = ENOTTY;
        return -1;
    }
}
